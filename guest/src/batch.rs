//! SPEC §4.6: batches — scorable paragraphs in order, at most 16 paragraphs
//! and 12,000 characters each; the same paragraphs always give the same batches.

use crate::limits::{BATCH_CHARS, BATCH_PARAGRAPHS};
use crate::split::Paragraph;

/// Paragraph numbers per batch, in order. Fixed paragraphs (SPEC §4.3) are
/// never in a batch. A batch is closed before adding a paragraph would pass
/// either limit, so no batch is empty and none exceeds 16 / 12,000 characters
/// (a scorable paragraph has at most 6,000).
pub fn batches(paragraphs: &[Paragraph]) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut current: Vec<usize> = Vec::new();
    let mut chars = 0usize;
    for (index, p) in paragraphs.iter().enumerate() {
        if p.fixed {
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
                let p = Paragraph { start, end: start + n, chars: n, fixed: n > 6_000 };
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
    fn same_paragraphs_same_batches() {
        let p = paras(&[300, 4_000, 800, 6_000, 120, 5_999, 2_222]);
        assert_eq!(batches(&p), batches(&p.clone()));
    }
}
