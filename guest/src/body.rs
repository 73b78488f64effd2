//! SPEC §9 (and §8, §13): the pruned body — the header and the markers
//! that name what was dropped (ja and en), the text body (kept paragraphs
//! verbatim, one marker line per dropped run), a wrapper's string replaced in
//! place, a JSON array's dropped runs replaced by marker string elements —
//! and the JSON array text `omitted` returns for elements.

use crate::types::Lang;
use crate::shape::Wrapper;
use crate::split::Paragraph;

/// `n` with thousands separators: `9388` → `9,388`.
pub fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Totals of one pruned text, for the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Totals {
    pub paragraphs: usize,
    pub chars: usize,
    pub dropped_paragraphs: usize,
    pub dropped_chars: usize,
}

/// The header line (without line end): totals, the id, how to call `omitted`.
pub fn header(lang: Lang, t: Totals, id: &str) -> String {
    match lang {
        Lang::Ja => format!(
            "【関連度で段落を省略しています: 全 {} 段落・{} 字のうち {} 段落・{} 字を省略。省略した段落は `omitted` に id と段落番号を渡すと逐語で読めます。id={}】",
            thousands(t.paragraphs),
            thousands(t.chars),
            thousands(t.dropped_paragraphs),
            thousands(t.dropped_chars),
            id
        ),
        Lang::En => format!(
            "[Omitted by relevance: {} of {} paragraphs ({} of {} characters). Call `omitted` with the id and paragraph numbers to read them verbatim. id={}]",
            thousands(t.dropped_paragraphs),
            thousands(t.paragraphs),
            thousands(t.dropped_chars),
            thousands(t.chars),
            id
        ),
    }
}

/// The marker line (without line end) for a run of dropped paragraphs
/// `first..=last` holding `chars` characters.
pub fn run(lang: Lang, first: usize, last: usize, chars: usize) -> String {
    let count = last - first + 1;
    match lang {
        Lang::Ja if first == last => {
            format!("［… 段落 {}・1 段落・{} 字を省略 …］", first, thousands(chars))
        }
        Lang::Ja => format!(
            "［… 段落 {}〜{}・{} 段落・{} 字を省略 …］",
            first,
            last,
            thousands(count),
            thousands(chars)
        ),
        Lang::En => {
            let chars_word = if chars == 1 { "character" } else { "characters" };
            if first == last {
                format!("[… paragraph {} omitted: 1 paragraph, {} {} …]", first, thousands(chars), chars_word)
            } else {
                format!(
                    "[… paragraphs {}–{} omitted: {} paragraphs, {} {} …]",
                    first,
                    last,
                    thousands(count),
                    thousands(chars),
                    chars_word
                )
            }
        }
    }
}

/// The first marker of a pruned JSON array (SPEC §13): the header — totals
/// in elements, the id, how to call `omitted` — followed by `run`, the
/// marker of the first dropped run. Lives in one JSON string element.
pub fn element_header(lang: Lang, t: Totals, id: &str, run: &str) -> String {
    match lang {
        Lang::Ja => format!(
            "【関連度で要素を省略しています: 全 {} 要素・{} 字のうち {} 要素・{} 字を省略。省略した要素は `omitted` に id と要素番号（from, to）を渡すと逐語で読めます。id={}】{}",
            thousands(t.paragraphs),
            thousands(t.chars),
            thousands(t.dropped_paragraphs),
            thousands(t.dropped_chars),
            id,
            run
        ),
        Lang::En => format!(
            "[Omitted by relevance: {} of {} elements ({} of {} characters). Call `omitted` with the id and element numbers (from, to) to read them verbatim. id={}] {}",
            thousands(t.dropped_paragraphs),
            thousands(t.paragraphs),
            thousands(t.dropped_chars),
            thousands(t.chars),
            id,
            run
        ),
    }
}

/// The marker of a pruned JSON array (SPEC §13) for a run of dropped
/// elements `first..=last` holding `chars` characters.
pub fn element_run(lang: Lang, first: usize, last: usize, chars: usize) -> String {
    let count = last - first + 1;
    match lang {
        Lang::Ja if first == last => format!("［… 要素 {}・1 要素・{} 字を省略 …］", first, thousands(chars)),
        Lang::Ja => format!("［… 要素 {}〜{}・{} 要素・{} 字を省略 …］", first, last, thousands(count), thousands(chars)),
        Lang::En => {
            let chars_word = if chars == 1 { "character" } else { "characters" };
            if first == last {
                format!("[… element {} omitted: 1 element, {} {} …]", first, thousands(chars), chars_word)
            } else {
                format!(
                    "[… elements {}–{} omitted: {} elements, {} {} …]",
                    first,
                    last,
                    thousands(count),
                    thousands(chars),
                    chars_word
                )
            }
        }
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
pub fn text(text: &str, paragraphs: &[Paragraph], drop: &[bool], lang: Lang, id: &str) -> (String, Totals) {
    let nl = newline_of(text);
    let totals = Totals {
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
    out.push_str(&header(lang, totals, id));
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
        out.push_str(&run(lang, i, last, chars));
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

/// `raw` with the wrapper's string literal replaced by the JSON encoding of
/// `value`; every byte outside `wrapper.span` is unchanged.
///
/// A span that does not lie on character boundaries of `raw` (a wrapper
/// found in some other text) returns `raw` unchanged rather than panicking.
pub fn wrapper(raw: &str, wrapper: &Wrapper, value: &str) -> String {
    let (Some(before), Some(after)) = (raw.get(..wrapper.span.start), raw.get(wrapper.span.end..))
    else {
        return raw.to_owned();
    };
    if wrapper.span.start > wrapper.span.end {
        return raw.to_owned();
    }
    let mut out = String::with_capacity(before.len() + value.len() + 2 + after.len());
    out.push_str(before);
    crate::json::push_str(&mut out, value);
    out.push_str(after);
    out
}

/// The pruned body: `raw` with each run of dropped units replaced by one
/// marker string element; the first marker carries the header (totals, the
/// id, how to call `omitted`). `units` are [`crate::shape::JsonArray::units`] of `raw`.
pub fn array(raw: &str, units: &[Paragraph], drop: &[bool], lang: Lang, id: &str) -> String {
    let totals = Totals {
        paragraphs: units.len(),
        chars: units.iter().map(|u| u.chars).sum(),
        dropped_paragraphs: drop.iter().filter(|d| **d).count(),
        dropped_chars: units.iter().zip(drop).filter(|(_, d)| **d).map(|(u, _)| u.chars).sum(),
    };
    let mut out = String::with_capacity(raw.len());
    let mut cursor = 0;
    let mut first = true;
    let mut i = 0;
    while i < units.len() {
        if !drop.get(i).copied().unwrap_or(false) {
            i += 1;
            continue;
        }
        let mut last = i;
        while last + 1 < units.len() && drop.get(last + 1).copied().unwrap_or(false) {
            last += 1;
        }
        let chars = units[i..=last].iter().map(|u| u.chars).sum();
        let run = element_run(lang, i, last, chars);
        let text = if first { element_header(lang, totals, id, &run) } else { run };
        first = false;
        out.push_str(&raw[cursor..units[i].start]);
        crate::json::push_str(&mut out, &text);
        cursor = units[last].end;
        i = last + 1;
    }
    out.push_str(&raw[cursor..]);
    out
}

/// Dropped elements (their raw spans, in order) as one JSON array text:
/// `[<raw a>,\n<raw b>]` (what `omitted` returns for a JSON array).
pub fn elements(elements: &[&str]) -> String {
    let mut out = String::with_capacity(elements.iter().map(|e| e.len() + 2).sum::<usize>() + 2);
    out.push('[');
    for (k, e) in elements.iter().enumerate() {
        if k > 0 {
            out.push_str(",\n");
        }
        out.push_str(e);
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Totals = Totals { paragraphs: 48, chars: 9_388, dropped_paragraphs: 21, dropped_chars: 3_926 };

    #[test]
    fn thousands_separators() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_204), "1,204");
        assert_eq!(thousands(121_429), "121,429");
        assert_eq!(thousands(1_000_000), "1,000,000");
    }

    #[test]
    fn ja_markers_are_exactly_the_spec() {
        assert_eq!(
            header(Lang::Ja, T, "P2"),
            "【関連度で段落を省略しています: 全 48 段落・9,388 字のうち 21 段落・3,926 字を省略。省略した段落は `omitted` に id と段落番号を渡すと逐語で読めます。id=P2】"
        );
        assert_eq!(run(Lang::Ja, 8, 14, 1_204), "［… 段落 8〜14・7 段落・1,204 字を省略 …］");
        assert_eq!(run(Lang::Ja, 20, 20, 311), "［… 段落 20・1 段落・311 字を省略 …］");
    }

    #[test]
    fn en_markers_are_exactly_the_spec() {
        assert_eq!(
            header(Lang::En, T, "P2"),
            "[Omitted by relevance: 21 of 48 paragraphs (3,926 of 9,388 characters). Call `omitted` with the id and paragraph numbers to read them verbatim. id=P2]"
        );
        assert_eq!(run(Lang::En, 8, 14, 1_204), "[… paragraphs 8–14 omitted: 7 paragraphs, 1,204 characters …]");
        assert_eq!(run(Lang::En, 20, 20, 311), "[… paragraph 20 omitted: 1 paragraph, 311 characters …]");
    }

    #[test]
    fn element_markers_ja_and_en() {
        assert_eq!(element_run(Lang::Ja, 8, 14, 1_204), "［… 要素 8〜14・7 要素・1,204 字を省略 …］");
        assert_eq!(element_run(Lang::Ja, 20, 20, 311), "［… 要素 20・1 要素・311 字を省略 …］");
        assert_eq!(element_run(Lang::En, 8, 14, 1_204), "[… elements 8–14 omitted: 7 elements, 1,204 characters …]");
        assert_eq!(element_run(Lang::En, 20, 20, 1), "[… element 20 omitted: 1 element, 1 character …]");
        assert_eq!(
            element_header(Lang::En, T, "P2", "R"),
            "[Omitted by relevance: 21 of 48 elements (3,926 of 9,388 characters). Call `omitted` with the id and element numbers (from, to) to read them verbatim. id=P2] R"
        );
        assert_eq!(
            element_header(Lang::Ja, T, "P2", "R"),
            "【関連度で要素を省略しています: 全 48 要素・9,388 字のうち 21 要素・3,926 字を省略。省略した要素は `omitted` に id と要素番号（from, to）を渡すと逐語で読めます。id=P2】R"
        );
    }

    use crate::split::split;

    #[test]
    fn body_keeps_paragraphs_verbatim_and_marks_runs() {
        let paras: Vec<String> = (0..5).map(|i| format!("{}{}", i, "x".repeat(150))).collect();
        let text = paras.join("\n\n") + "\n";
        let p = split(&text);
        assert_eq!(p.len(), 5);
        let (body, totals) = super::text(&text, &p, &[false, true, true, false, true], Lang::En, "P1");
        assert_eq!(totals.dropped_paragraphs, 3);
        let expected = format!(
            "{}\n\n{}\n\n[… paragraphs 1–2 omitted: 2 paragraphs, 306 characters …]\n\n{}\n\n[… paragraph 4 omitted: 1 paragraph, 152 characters …]\n",
            header(Lang::En, totals, "P1"),
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
        let (body, _) = super::text(&text, &p, &[false, true, false], Lang::Ja, "P3");
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
        let (body, _) = super::text(&text, &p, &[false, true, false], Lang::En, "P1");
        assert!(!body.contains('\n'), "{body:?}");
    }

    #[test]
    fn byte_order_mark_stays_first_when_paragraph_0_drops() {
        let paras: Vec<String> = (0..3).map(|i| format!("{}{}", i, "u".repeat(150))).collect();
        let text = format!("\u{FEFF}{}", paras.join("\n\n"));
        let p = split(&text);
        for drop in [[true, false, false], [false, true, false]] {
            let (body, _) = super::text(&text, &p, &drop, Lang::En, "P1");
            assert!(body.starts_with("\u{FEFF}[Omitted by relevance"), "{drop:?}");
            assert_eq!(body.matches('\u{FEFF}').count(), 1);
        }
    }
}

#[cfg(test)]
mod array_tests {
    use super::*;
    use crate::shape::{classify, Classified, JsonArray};
    use serde_json::Value;

    macro_rules! shared {
        ($path:literal) => {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/", $path)
        };
    }

    fn read(path: &str) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn array(raw: &str) -> JsonArray {
        match classify(raw) {
            Classified::Array(a) => a,
            other => panic!("expected an array, got {other:?}"),
        }
    }

    fn post(i: usize) -> String {
        format!(r#"{{"id": {i}, "title": "post {i}", "body": "{}"}}"#, "words about things ".repeat(20))
    }

    fn posts(n: usize, sep: &str) -> String {
        format!("[{}]", (0..n).map(post).collect::<Vec<_>>().join(sep))
    }

    #[test]
    fn top_level_array_elements_are_exact_spans() {
        let raw = format!("  {}\n", posts(5, " ,\n  "));
        let a = array(&raw);
        assert_eq!(a.elements.len(), 5);
        for (i, e) in a.elements.iter().enumerate() {
            assert_eq!(&raw[e.clone()], post(i));
        }
        assert_eq!(&raw[a.span.clone()], raw.trim());
    }

    #[test]
    fn shared_arrays_are_found() {
        let raw = read(shared!("corpus/vue-docs-partners.json"));
        let a = array(&raw);
        assert_eq!(a.elements.len(), 7);
        let parsed: Vec<Value> = serde_json::from_str(&raw).unwrap();
        for (e, v) in a.elements.iter().zip(&parsed) {
            assert_eq!(&serde_json::from_str::<Value>(&raw[e.clone()]).unwrap(), v);
        }
        let raw = read(shared!("cases/top-level-array.json"));
        let n = serde_json::from_str::<Vec<Value>>(&raw).unwrap().len();
        assert_eq!(array(&raw).elements.len(), n);
    }

    #[test]
    fn wrapper_with_array_is_found_and_metadata_stays() {
        let list = posts(10, ",");
        let raw = format!(r#"{{"total": 120, "items": {list}, "next": "c2"}}"#);
        let a = array(&raw);
        assert_eq!(&raw[a.span.clone()], list);
        assert_eq!(a.elements.len(), 10);
    }

    #[test]
    fn ambiguous_arrays_are_structured() {
        // Arrays of arrays at the top.
        let inner = posts(3, ",");
        let raw = format!("[{inner}, {inner}, {inner}]");
        assert_eq!(classify(&raw), Classified::Structured);
        let raw = format!("[{}, [1]]", post(0));
        assert_eq!(classify(&raw), Classified::Structured);
        // Duplicate keys beside the list.
        let list = posts(10, ",");
        let raw = format!(r#"{{"items": {list}, "items": 1}}"#);
        assert_eq!(classify(&raw), Classified::Structured);
        // Under the share.
        let raw = format!(r#"{{"items": {list}, "notes": "{}"}}"#, "n".repeat(list.len()));
        assert_eq!(classify(&raw), Classified::Structured);
        // A single element.
        let raw = format!("[{}]", post(0));
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(classify("[]"), Classified::Structured);
    }

    #[test]
    fn strings_and_scalars_are_elements() {
        let raw = r#"["a,]\"[", 1.5e3 , null,true,{"k":[1,2]}]"#;
        let a = array(raw);
        let spans: Vec<&str> = a.elements.iter().map(|e| &raw[e.clone()]).collect();
        assert_eq!(spans, vec![r#""a,]\"[""#, "1.5e3", "null", "true", r#"{"k":[1,2]}"#]);
    }

    #[test]
    fn byte_order_mark_shifts_spans() {
        let raw = format!("\u{FEFF}{}", posts(3, ","));
        let a = array(&raw);
        assert_eq!(&raw[a.elements[0].clone()], post(0));
    }

    #[test]
    fn oversized_elements_are_fixed() {
        let big = format!(r#""{}""#, "x".repeat(6_001));
        let raw = format!("[{}, {big}]", post(0));
        let a = array(&raw);
        let u = a.units(&raw);
        assert!(!u[0].fixed && u[1].fixed);
        assert_eq!(u[1].chars, 6_003);
    }

    fn check(raw: &str, drop: &[bool], lang: Lang) -> String {
        let a = array(raw);
        let units = a.units(raw);
        let body = super::array(raw, &units, drop, lang, "P1");
        let before: Value = serde_json::from_str(raw).unwrap();
        let after: Value = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
        let (before, after) = (before.as_array().unwrap(), after.as_array().unwrap());
        // Kept elements in order, one string per run of dropped ones.
        let mut k = 0;
        let mut i = 0;
        while i < drop.len() {
            if drop[i] {
                assert!(after[k].is_string());
                while i < drop.len() && drop[i] {
                    i += 1;
                }
            } else {
                assert_eq!(after[k], before[i]);
                i += 1;
            }
            k += 1;
        }
        assert_eq!(k, after.len());
        body
    }

    #[test]
    fn runs_at_the_start_end_and_all_but_one_stay_valid_json() {
        let raw = format!("[\n  {}\n]\n", (0..5).map(post).collect::<Vec<_>>().join(",\n  "));
        for drop in [
            [true, false, false, false, false],
            [false, false, false, false, true],
            [true, true, true, true, false],
            [false, true, true, true, true],
            [true, true, false, true, true],
            [true, false, true, false, true],
            [true, true, true, true, true],
        ] {
            for lang in [Lang::En, Lang::Ja] {
                let body = check(&raw, &drop, lang);
                assert!(body.starts_with("[\n  ") && body.ends_with("\n]\n"), "{drop:?}");
            }
        }
    }

    #[test]
    fn markers_name_indices_count_and_characters() {
        let raw = posts(5, ", ");
        let a = array(&raw);
        let units = a.units(&raw);
        let c = units[0].chars;
        let body = super::array(&raw, &units, &[false, true, true, false, true], Lang::En, "P1");
        let v: Vec<Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v[1],
            format!(
                "[Omitted by relevance: 3 of 5 elements ({} of {} characters). Call `omitted` with the id and element numbers (from, to) to read them verbatim. id=P1] [… elements 1–2 omitted: 2 elements, {} characters …]",
                thousands(3 * c),
                thousands(5 * c),
                thousands(2 * c)
            )
        );
        assert_eq!(v[3], format!("[… element 4 omitted: 1 element, {c} characters …]"));
        let body = super::array(&raw, &units, &[false, true, true, false, true], Lang::Ja, "P2");
        let v: Vec<Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v[1],
            format!(
                "【関連度で要素を省略しています: 全 5 要素・{} 字のうち 3 要素・{} 字を省略。省略した要素は `omitted` に id と要素番号（from, to）を渡すと逐語で読めます。id=P2】［… 要素 1〜2・2 要素・{} 字を省略 …］",
                thousands(5 * c),
                thousands(3 * c),
                thousands(2 * c)
            )
        );
        assert_eq!(v[3], format!("［… 要素 4・1 要素・{c} 字を省略 …］"));
    }

    #[test]
    fn outside_the_array_is_byte_identical() {
        let list = posts(6, ",\n    ");
        let raw = format!("{{\n  \"total\": 120,\n  \"items\": {list},\n  \"next\": null\n}}\n");
        let a = array(&raw);
        let units = a.units(&raw);
        let body = super::array(&raw, &units, &[true, false, true, true, false, true], Lang::En, "P1");
        assert!(body.starts_with(&raw[..a.span.start + 1]));
        assert!(body.ends_with(&raw[a.span.end - 1..]));
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["total"], 120);
        assert_eq!(v["items"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn omitted_text_is_a_json_array_of_raw_spans() {
        let raw = posts(4, " , ");
        let a = array(&raw);
        let units = a.units(&raw);
        let text = super::elements(&[&raw[units[1].start..units[1].end], &raw[units[3].start..units[3].end]]);
        assert_eq!(text, format!("[{},\n{}]", post(1), post(3)));
        let v: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(v.len(), 2);
    }
}
