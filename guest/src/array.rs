//! SPEC §13 (issue 7): JSON arrays, pruned element by element, still valid JSON.
//!
//! Applies to a top-level array, and to the top-level object's largest direct
//! value when it is an array holding at least 60 % of the raw characters (a
//! list with metadata beside it, `{"items": [...], "total": 120}`); the
//! top level is found by [`crate::wrapper::classify`], which gives up
//! (→ `structured`) on duplicate keys and on a tie for the largest value.
//!
//! - **Units** are the array's elements, each its exact byte span of the raw
//!   text (found with the wrapper's span-aware scanner, never re-serialized);
//!   no merging; an element over 6,000 characters is fixed (unscored, kept).
//!   Batches as SPEC §4.6. The chunk sent for an element is its raw JSON text.
//! - Gives up (`None` → `structured`) when an element is itself an array
//!   (arrays of arrays: which level is the list is ambiguous) or when the
//!   array has fewer than 2 elements (nothing to choose between).
//! - **Output** ([`assemble`]): the raw text with each run of dropped
//!   elements — the elements and the separators between them — replaced in
//!   place by one JSON string element, the marker. The separator before the
//!   run and after it stay, so the commas stay valid wherever the run is
//!   (first, last, all but one). Kept elements and everything outside the
//!   array keep their bytes. The first marker also carries the header.
//! - **`omitted`** ([`omitted_text`]) returns the dropped elements asked for
//!   as a JSON array text of their raw spans.

use std::ops::Range;

use crate::component::wit::types::Lang;
use crate::limits::MAX_PARAGRAPH_CHARS;
use crate::marker;
use crate::split::Paragraph;
use crate::wrapper::{skip_container, skip_scalar, skip_ws, string_literal};

/// A JSON array located in a raw text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonArray {
    /// Byte span of the array in the raw text, brackets included.
    pub span: Range<usize>,
    /// Byte span of each element (the value only: no whitespace, no comma).
    pub elements: Vec<Range<usize>>,
}

impl JsonArray {
    /// The same array in a text with `by` more bytes in front (a byte-order mark).
    pub(crate) fn shifted(self, by: usize) -> JsonArray {
        JsonArray {
            span: self.span.start + by..self.span.end + by,
            elements: self.elements.into_iter().map(|e| e.start + by..e.end + by).collect(),
        }
    }

    /// The units of pruning: one per element, spans in `raw`, numbered from 0.
    pub fn units(&self, raw: &str) -> Vec<Paragraph> {
        self.elements
            .iter()
            .map(|e| {
                let chars = raw.get(e.clone()).map_or(0, |s| s.chars().count());
                // An element is a JSON value: no surrounding whitespace, and
                // a visible character (a quote, bracket, digit or letter).
                Paragraph {
                    start: e.start,
                    end: e.end,
                    chars,
                    fixed: chars > MAX_PARAGRAPH_CHARS,
                    measured: chars,
                    visible: true,
                }
            })
            .collect()
    }
}

/// The elements of the array whose brackets span `span` in `raw` (valid JSON).
/// `None` (→ `structured`) on an element that is an array, on fewer than 2
/// elements, or on anything the scan does not expect.
pub(crate) fn elements(raw: &str, span: Range<usize>) -> Option<JsonArray> {
    let b = raw.as_bytes();
    if b.get(span.start) != Some(&b'[') {
        return None;
    }
    let mut i = skip_ws(b, span.start + 1);
    let mut elements = Vec::new();
    if b.get(i) != Some(&b']') {
        loop {
            let end = match b.get(i)? {
                b'"' => string_literal(b, i)?.end,
                b'{' => skip_container(b, i)?,
                b'[' => return None,
                _ => skip_scalar(b, i),
            };
            if end == i {
                return None;
            }
            elements.push(i..end);
            i = skip_ws(b, end);
            match b.get(i)? {
                b',' => i = skip_ws(b, i + 1),
                b']' => break,
                _ => return None,
            }
        }
    }
    if i + 1 != span.end || elements.len() < 2 {
        return None;
    }
    Some(JsonArray { span, elements })
}

/// The pruned body: `raw` with each run of dropped units replaced by one
/// marker string element; the first marker carries the header (totals, the
/// id, how to call `omitted`). `units` are [`JsonArray::units`] of `raw`.
pub fn assemble(raw: &str, units: &[Paragraph], drop: &[bool], lang: Lang, id: &str) -> String {
    let totals = marker::Totals {
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
        let run = marker::element_run(lang, i, last, chars);
        let text = if first { marker::element_header(lang, totals, id, &run) } else { run };
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
pub fn omitted_text(elements: &[&str]) -> String {
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
    use crate::wrapper::{classify, Classified};
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
        let body = assemble(raw, &units, drop, lang, "P1");
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
        let body = assemble(&raw, &units, &[false, true, true, false, true], Lang::En, "P1");
        let v: Vec<Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v[1],
            format!(
                "[Omitted by relevance: 3 of 5 elements ({} of {} characters). Call `omitted` with the id and element numbers (from, to) to read them verbatim. id=P1] [… elements 1–2 omitted: 2 elements, {} characters …]",
                marker::thousands(3 * c),
                marker::thousands(5 * c),
                marker::thousands(2 * c)
            )
        );
        assert_eq!(v[3], format!("[… element 4 omitted: 1 element, {c} characters …]"));
        let body = assemble(&raw, &units, &[false, true, true, false, true], Lang::Ja, "P2");
        let v: Vec<Value> = serde_json::from_str(&body).unwrap();
        assert_eq!(
            v[1],
            format!(
                "【関連度で要素を省略しています: 全 5 要素・{} 字のうち 3 要素・{} 字を省略。省略した要素は `omitted` に id と要素番号（from, to）を渡すと逐語で読めます。id=P2】［… 要素 1〜2・2 要素・{} 字を省略 …］",
                marker::thousands(5 * c),
                marker::thousands(3 * c),
                marker::thousands(2 * c)
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
        let body = assemble(&raw, &units, &[true, false, true, true, false, true], Lang::En, "P1");
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
        let text = omitted_text(&[&raw[units[1].start..units[1].end], &raw[units[3].start..units[3].end]]);
        assert_eq!(text, format!("[{},\n{}]", post(1), post(3)));
        let v: Vec<Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(v.len(), 2);
    }
}
