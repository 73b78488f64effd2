//! SPEC §7 and §9: which paragraphs drop, the assembled body, and the floor.

use crate::component::wit::types::Lang;
use crate::limits::MIN_REDUCTION;
use crate::marker;
use crate::split::Paragraph;

/// What the scores say, before any body is assembled (SPEC §7).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// At least one paragraph scored, and every scored one is below the threshold.
    AllDropped,
    /// No scored paragraph is below the threshold (also: nothing scored).
    NothingDropped,
    /// Some, not all, scored paragraphs are below the threshold: drop these.
    Drop(Vec<bool>),
}

/// Judge per-paragraph scores (`None` = kept: fixed, failed or missing).
pub fn verdict(scores: &[Option<f64>], threshold: f64) -> Verdict {
    let scored = scores.iter().filter(|s| s.is_some()).count();
    let below: Vec<bool> = scores.iter().map(|s| matches!(s, Some(p) if *p < threshold)).collect();
    let dropped = below.iter().filter(|b| **b).count();
    if dropped == 0 {
        Verdict::NothingDropped
    } else if dropped == scored {
        Verdict::AllDropped
    } else {
        Verdict::Drop(below)
    }
}

/// The line ending of `text`: that of its first line (`\r\n`, a lone `\r`,
/// or `\n`), `\n` when it has none.
pub fn newline_of(text: &str) -> &'static str {
    match text.find(['\n', '\r']) {
        Some(i) if text[i..].starts_with("\r\n") => "\r\n",
        Some(i) if text[i..].starts_with('\r') => "\r",
        _ => "\n",
    }
}

fn strip_line_end(s: &str) -> Option<&str> {
    s.strip_suffix("\r\n").or_else(|| s.strip_suffix('\n')).or_else(|| s.strip_suffix('\r'))
}

/// Whether `s` ends with a blank line (a line end, optional spaces/tabs, a line end).
fn ends_with_blank_line(s: &str) -> bool {
    match strip_line_end(s) {
        Some(rest) => strip_line_end(rest.trim_end_matches([' ', '\t'])).is_some(),
        None => false,
    }
}

/// The pruned body (SPEC §9): the header line, a blank line, then the
/// paragraphs in order — kept ones with their original bytes, each run of
/// dropped ones replaced by one marker line surrounded by blank lines. Line
/// ends follow the text (`\r\n` or `\n`). Returns the body and the totals.
pub fn assemble(text: &str, paragraphs: &[Paragraph], drop: &[bool], lang: Lang, id: &str) -> (String, marker::Totals) {
    let nl = newline_of(text);
    let totals = marker::Totals {
        paragraphs: paragraphs.len(),
        chars: paragraphs.iter().map(|p| p.chars).sum(),
        dropped_paragraphs: drop.iter().filter(|d| **d).count(),
        dropped_chars: paragraphs.iter().zip(drop).filter(|(_, d)| **d).map(|(p, _)| p.chars).sum(),
    };
    let mut out = String::with_capacity(text.len() + 512);
    // A leading byte-order mark stays the first thing of the body, whether
    // paragraph 0 is kept or not (cases `bom_kept`).
    let bom = if text.starts_with('\u{FEFF}') { '\u{FEFF}'.len_utf8() } else { 0 };
    out.push_str(&text[..bom]);
    out.push_str(&marker::header(lang, totals, id));
    out.push_str(nl);
    out.push_str(nl);
    let mut i = 0;
    while i < paragraphs.len() {
        if !drop[i] {
            out.push_str(&text[paragraphs[i].start.max(bom)..paragraphs[i].end]);
            i += 1;
            continue;
        }
        let mut last = i;
        while last + 1 < paragraphs.len() && drop[last + 1] {
            last += 1;
        }
        let chars = paragraphs[i..=last].iter().map(|p| p.chars).sum();
        if !ends_with_blank_line(&out) {
            if strip_line_end(&out).is_none() {
                out.push_str(nl);
            }
            out.push_str(nl);
        }
        out.push_str(&marker::run(lang, i, last, chars));
        if last + 1 < paragraphs.len() {
            out.push_str(nl);
            out.push_str(nl);
        } else if strip_line_end(text).is_some() {
            out.push_str(nl);
        }
        i = last + 1;
    }
    (out, totals)
}

/// Net reduction (SPEC §7): `(raw − body) / raw`, markers included.
pub fn ratio(raw_chars: usize, body_chars: usize) -> f64 {
    if raw_chars == 0 {
        return 0.0;
    }
    (raw_chars as f64 - body_chars as f64) / raw_chars as f64
}

/// Whether a net reduction clears the 25 % floor (SPEC §7).
pub fn clears_floor(ratio: f64) -> bool {
    ratio >= MIN_REDUCTION
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::split::split;

    #[test]
    fn below_threshold_drops_and_equal_keeps() {
        assert_eq!(verdict(&[Some(0.19), Some(0.2), None], 0.2), Verdict::Drop(vec![true, false, false]));
    }

    #[test]
    fn all_scored_below_is_all_dropped_even_with_unscored_paragraphs() {
        assert_eq!(verdict(&[Some(0.1), None, Some(0.0)], 0.2), Verdict::AllDropped);
    }

    #[test]
    fn nothing_below_or_nothing_scored_is_nothing_dropped() {
        assert_eq!(verdict(&[Some(0.9), Some(0.2)], 0.2), Verdict::NothingDropped);
        assert_eq!(verdict(&[None, None], 0.2), Verdict::NothingDropped);
    }

    #[test]
    fn body_keeps_paragraphs_verbatim_and_marks_runs() {
        let paras: Vec<String> = (0..5).map(|i| format!("{}{}", i, "x".repeat(150))).collect();
        let text = paras.join("\n\n") + "\n";
        let p = split(&text);
        assert_eq!(p.len(), 5);
        let (body, totals) = assemble(&text, &p, &[false, true, true, false, true], Lang::En, "P1");
        assert_eq!(totals.dropped_paragraphs, 3);
        let expected = format!(
            "{}\n\n{}\n\n[… paragraphs 1–2 omitted: 2 paragraphs, 306 characters …]\n\n{}\n\n[… paragraph 4 omitted: 1 paragraph, 152 characters …]\n",
            marker::header(Lang::En, totals, "P1"),
            paras[0],
            paras[3]
        );
        assert_eq!(body, expected);
    }

    #[test]
    fn crlf_text_gets_crlf_markers() {
        let paras: Vec<String> = (0..3).map(|i| format!("{}{}", i, "y".repeat(150))).collect();
        let text = paras.join("\r\n\r\n");
        let p = split(&text);
        let (body, _) = assemble(&text, &p, &[false, true, false], Lang::Ja, "P3");
        assert!(body.contains(&format!("{}\r\n\r\n［… 段落 1・1 段落・", paras[0])));
        assert!(body.ends_with(&format!("字を省略 …］\r\n\r\n{}", paras[2])));
        assert!(!body.replace("\r\n", "").contains('\n'));
    }

    #[test]
    fn lone_cr_text_gets_lone_cr_markers() {
        let paras: Vec<String> = (0..3).map(|i| format!("{}{}", i, "v".repeat(150))).collect();
        let text = paras.join("\r\r");
        let p = split(&text);
        assert_eq!(p.len(), 3);
        let (body, _) = assemble(&text, &p, &[false, true, false], Lang::En, "P1");
        assert!(!body.contains('\n'), "{body:?}");
    }

    #[test]
    fn byte_order_mark_stays_first_when_paragraph_0_drops() {
        let paras: Vec<String> = (0..3).map(|i| format!("{}{}", i, "u".repeat(150))).collect();
        let text = format!("\u{FEFF}{}", paras.join("\n\n"));
        let p = split(&text);
        for drop in [[true, false, false], [false, true, false]] {
            let (body, _) = assemble(&text, &p, &drop, Lang::En, "P1");
            assert!(body.starts_with("\u{FEFF}[Omitted by relevance"), "{drop:?}");
            assert_eq!(body.matches('\u{FEFF}').count(), 1);
        }
    }

    #[test]
    fn ratio_counts_markers() {
        assert_eq!(ratio(1000, 750), 0.25);
        assert!(clears_floor(0.25));
        assert!(!clears_floor(0.2499));
    }
}
