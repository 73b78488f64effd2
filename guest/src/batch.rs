//! SPEC §4.6: batches — scorable paragraphs in order, at most 16 paragraphs
//! and 12,000 characters each; the same paragraphs always give the same batches.

use crate::limits::{BATCH_CHARS, BATCH_PARAGRAPHS};
use crate::split::Paragraph;

/// Paragraph numbers per batch, in order. Only [`Paragraph::scorable`] ones
/// are batched: never a fixed one (SPEC §4.3), nor one without a visible
/// character (kept and reported unscored, no call paid for it). A batch is
/// closed before adding a paragraph would pass either limit, counted in
/// `chars` (the whole span, as sent), so no batch is empty and none exceeds
/// 16 paragraphs or 12,000 characters — unless one paragraph alone does
/// (measured ≤ 6,000, its separator lines may make its span longer).
pub fn batches(paragraphs: &[Paragraph]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut chars = 0usize;
    for (index, p) in paragraphs.iter().enumerate() {
        if !p.scorable() {
            continue;
        }
        if !current.is_empty() && (current.len() == BATCH_PARAGRAPHS || chars + p.chars > BATCH_CHARS) {
            out.push(std::mem::take(&mut current));
            chars = 0;
        }
        current.push(index);
        chars += p.chars;
    }
    if !current.is_empty() {
        out.push(current);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paras(sizes: &[usize]) -> Vec<Paragraph> {
        let mut start = 0;
        sizes
            .iter()
            .map(|&n| {
                let p = Paragraph { start, end: start + n, chars: n, fixed: n > 6_000, measured: n, visible: true };
                start += n;
                p
            })
            .collect()
    }

    #[test]
    fn batch_closes_at_16_paragraphs() {
        let b = batches(&paras(&[200; 33]));
        assert_eq!(b.iter().map(Vec::len).collect::<Vec<_>>(), vec![16, 16, 1]);
        assert_eq!(b[1][0], 16);
    }

    #[test]
    fn batch_closes_before_passing_12000_characters() {
        // 5,000 + 5,000 = 10,000; + 2,000 = 12,000 fits exactly; + 1 would pass.
        let b = batches(&paras(&[5_000, 5_000, 2_000, 1]));
        assert_eq!(b, vec![vec![0, 1, 2], vec![3]]);
        let b = batches(&paras(&[6_000, 6_000, 1]));
        assert_eq!(b, vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn fixed_paragraphs_are_never_batched() {
        let b = batches(&paras(&[500, 7_000, 500]));
        assert_eq!(b, vec![vec![0, 2]]);
        assert!(batches(&paras(&[7_000, 9_000])).is_empty());
    }

    #[test]
    fn paragraph_without_a_visible_character_is_never_batched() {
        use crate::split::split;
        // 6,000 spaces, blank lines of ideographic spaces: one paragraph
        // each, with nothing to score.
        for text in [" ".repeat(6_000), "\u{3000}\n\n".repeat(2_000), "\t\r\n".repeat(1_500)] {
            let ps = split(&text);
            assert_eq!(ps.len(), 1);
            assert!(batches(&ps).is_empty(), "{:?}", &text[..6]);
        }
        // Zero-width characters between two fixed paragraphs cannot merge:
        // kept, not sent.
        let text = format!("{}\n\n{}\n\n{}", "a".repeat(7_000), "\u{200B}\u{FEFF}\u{2060}".repeat(30), "b".repeat(7_000));
        let ps = split(&text);
        assert_eq!(ps.len(), 3);
        assert!(batches(&ps).is_empty());
        // One visible character is enough to be scored.
        let text = format!("{}\n\n{}.\n\n{}", "a".repeat(7_000), "\u{200B}".repeat(30), "b".repeat(7_000));
        assert_eq!(batches(&split(&text)), vec![vec![1]]);
    }

    #[test]
    fn same_paragraphs_same_batches() {
        let p = paras(&[300, 4_000, 800, 6_000, 120, 5_999, 2_222]);
        assert_eq!(batches(&p), batches(&p.clone()));
    }
}
