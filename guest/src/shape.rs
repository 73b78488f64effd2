//! SPEC §8 and §13: the shape of a result — text, a JSON wrapper whose
//! longest string is pruned in place, a JSON array pruned element by
//! element, or other JSON (`structured`, untouched).
//!
//! A result that parses as JSON is never split as text. It is pruned only
//! when it is a *wrapper*: a top-level object whose longest **direct** string
//! value holds at least 60 % of the raw characters and at least 4,000
//! characters, and whose place in the raw text is found unambiguously.
//!
//! The place is found by a span-aware scan of the top-level object, not by
//! searching for the value's canonical encoding, so servers that write raw
//! UTF-8 and servers that escape non-ASCII (`\u3042`, Python's default
//! `json.dumps`) both work. The scan:
//!
//! 1. skips whitespace, expects `{`;
//! 2. per member: reads the key's string literal (its span, then decodes it
//!    with serde_json), the `:`, then the value — a string literal is spanned
//!    and decoded; an object or array is skipped with a depth counter that
//!    steps over string literals and their escapes (iterative: no recursion,
//!    so deep nesting cannot overflow the stack); a scalar is skipped to the
//!    next delimiter;
//! 3. expects `,` or `}`, and nothing but whitespace after the final `}`.
//!
//! It gives up (→ [`Classified::Structured`]) on anything ambiguous: a key
//! that occurs twice (compared decoded, so `"a"` and `"\u0061"` collide), a
//! tie for the longest string, a direct string or key that does not decode
//! (a lone surrogate escape such as `\ud800`).
//!
//! Every pass is linear in the input — serde_json's validation (iterative for
//! `IgnoredAny`), one byte scan, one decode per direct string and key, one
//! character count — except the duplicate-key check, a sort of the decoded
//! keys (n log n in the number of keys).

use std::ops::Range;

use crate::json_scan::{skip_container, skip_scalar, skip_ws, string_literal};
use crate::limits::MAX_PARAGRAPH_CHARS;
use crate::split::Paragraph;
use crate::limits::{MIN_CHARS, WRAPPER_SHARE};

/// A JSON wrapper: the top-level object's longest direct string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wrapper {
    /// Byte span in the raw text of the string literal, quotes included.
    pub span: Range<usize>,
    /// The decoded string value.
    pub value: String,
}

/// How a result text is treated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    /// Not JSON: split as text.
    Text,
    /// A JSON wrapper: only its string is pruned.
    Wrapper(Wrapper),
    /// A JSON array (top level, or the dominant direct value of the top-level
    /// object): pruned element by element ([`JsonArray`], SPEC §13).
    Array(JsonArray),
    /// Any other JSON, or a wrapper whose place is ambiguous: untouched.
    Structured,
}

/// Decide whether `raw` is text, a wrapper, or other JSON (SPEC §8).
pub fn classify(raw: &str) -> Classified {
    // A leading byte-order mark is not JSON to serde_json, but a JSON body
    // behind one must not be split as text: classify what follows it and
    // keep spans relative to `raw`.
    // One BOM only: a second U+FEFF is content (and recursing once per BOM
    // would let a long run of them exhaust the guest's stack).
    if let Some(rest) = raw.strip_prefix('\u{FEFF}') {
        return match classify_body(rest) {
            Classified::Wrapper(w) => {
                let bom = raw.len() - rest.len();
                Classified::Wrapper(Wrapper { span: w.span.start + bom..w.span.end + bom, value: w.value })
            }
            Classified::Array(a) => Classified::Array(a.shifted(raw.len() - rest.len())),
            other => other,
        };
    }
    classify_body(raw)
}

/// [`classify`] of a text without its leading byte-order mark.
fn classify_body(raw: &str) -> Classified {
    // Validating into `IgnoredAny` is iterative in serde_json (no recursion
    // limit, no stack growth), so deeply nested JSON is still JSON here.
    if serde_json::from_str::<serde::de::IgnoredAny>(raw).is_err() {
        return Classified::Text;
    }
    match locate(raw) {
        Ok(Found::Wrapper(wrapper)) => Classified::Wrapper(wrapper),
        Ok(Found::Array(span)) => match elements(raw, span) {
            Some(a) => Classified::Array(a),
            None => Classified::Structured,
        },
        Err(_) => Classified::Structured,
    }
}

/// What the scan of the top level found.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Found {
    /// The longest direct string of the top-level object (SPEC §8).
    Wrapper(Wrapper),
    /// The byte span (brackets included) of a top-level array, or of the
    /// top-level object's largest direct value when it is an array holding at
    /// least `WRAPPER_SHARE` of the raw characters (SPEC §13).
    Array(Range<usize>),
}

/// Why a JSON text is not a wrapper. Each leads to [`Classified::Structured`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GiveUp {
    /// The top level is an array or a scalar.
    NotAnObject,
    /// The scan met something it does not expect (input that is not JSON).
    Malformed,
    /// A key or a direct string value does not decode (a lone surrogate escape).
    Undecodable,
    /// A key occurs twice at the top level (compared decoded).
    DuplicateKey,
    /// The top-level object has no direct string value.
    NoDirectString,
    /// Two direct strings share the longest character count.
    TieForLongest,
    /// The longest direct string is under `MIN_CHARS` characters.
    TooShort,
    /// The longest direct string is under `WRAPPER_SHARE` of the raw characters.
    UnderShare,
}

/// The largest direct value (in raw characters) found so far.
struct Largest {
    chars: usize,
    span: Range<usize>,
    is_array: bool,
    tied: bool,
}

/// Keep the larger of `largest` and a new direct value; note a tie.
fn consider_value(largest: &mut Option<Largest>, raw: &str, span: Range<usize>, is_array: bool) {
    let chars = raw.get(span.clone()).map_or(0, |s| s.chars().count());
    match largest {
        Some(best) if chars < best.chars => {}
        Some(best) if chars == best.chars => best.tied = true,
        _ => *largest = Some(Largest { chars, span, is_array, tied: false }),
    }
}

/// The longest direct string found so far.
struct Longest {
    chars: usize,
    span: Range<usize>,
    value: String,
    tied: bool,
}

/// Find the wrapper's string in `raw` by scanning its top-level object.
///
/// `raw` is expected to be valid JSON (checked by [`classify`] first), but
/// the scan never indexes out of bounds and gives up on anything unexpected,
/// so it is safe — and tested — on arbitrary input.
fn locate(raw: &str) -> Result<Found, GiveUp> {
    let b = raw.as_bytes();
    let mut i = skip_ws(b, 0);
    if b.get(i) == Some(&b'[') {
        let end = skip_container(b, i).ok_or(GiveUp::Malformed)?;
        if skip_ws(b, end) != b.len() {
            return Err(GiveUp::Malformed);
        }
        return Ok(Found::Array(i..end));
    }
    if b.get(i) != Some(&b'{') {
        return Err(if i < b.len() {
            GiveUp::NotAnObject
        } else {
            GiveUp::Malformed
        });
    }
    i = skip_ws(b, i + 1);

    let mut keys: Vec<String> = Vec::new();
    let mut longest: Option<Longest> = None;
    let mut largest: Option<Largest> = None;

    if b.get(i) != Some(&b'}') {
        loop {
            let key_span = string_literal(b, i).ok_or(GiveUp::Malformed)?;
            keys.push(decode(raw, &key_span)?);
            i = skip_ws(b, key_span.end);
            if b.get(i) != Some(&b':') {
                return Err(GiveUp::Malformed);
            }
            i = skip_ws(b, i + 1);
            i = match b.get(i) {
                Some(b'"') => {
                    let span = string_literal(b, i).ok_or(GiveUp::Malformed)?;
                    let end = span.end;
                    consider_value(&mut largest, raw, span.clone(), false);
                    let value = decode(raw, &span)?;
                    consider(&mut longest, span, value);
                    end
                }
                Some(&open @ (b'{' | b'[')) => {
                    let end = skip_container(b, i).ok_or(GiveUp::Malformed)?;
                    consider_value(&mut largest, raw, i..end, open == b'[');
                    end
                }
                Some(_) => {
                    let end = skip_scalar(b, i);
                    consider_value(&mut largest, raw, i..end, false);
                    end
                }
                None => return Err(GiveUp::Malformed),
            };
            i = skip_ws(b, i);
            match b.get(i) {
                Some(b',') => i = skip_ws(b, i + 1),
                Some(b'}') => break,
                _ => return Err(GiveUp::Malformed),
            }
        }
    }
    // `b[i]` is the closing brace; only whitespace may follow it.
    if skip_ws(b, i + 1) != b.len() {
        return Err(GiveUp::Malformed);
    }
    // Sorting, not hashing: deterministic on every target (the wasm guest has
    // no random hash keys), so crafted keys cannot make this quadratic.
    keys.sort_unstable();
    if keys.windows(2).any(|pair| pair[0] == pair[1]) {
        return Err(GiveUp::DuplicateKey);
    }

    let raw_chars = raw.chars().count();
    let wrapper = wrapper_of(longest, raw_chars);
    if wrapper.is_err() {
        // A list with metadata beside it (`{"items": [...], "total": 120}`):
        // the array must be the one largest direct value, with the share.
        if let Some(l) = largest {
            if l.is_array && (l.chars as f64) >= WRAPPER_SHARE * raw_chars as f64 {
                return if l.tied { Err(GiveUp::TieForLongest) } else { Ok(Found::Array(l.span)) };
            }
        }
    }
    wrapper.map(Found::Wrapper)
}

/// The wrapper, if the longest direct string qualifies (SPEC §8).
fn wrapper_of(longest: Option<Longest>, raw_chars: usize) -> Result<Wrapper, GiveUp> {
    let longest = longest.ok_or(GiveUp::NoDirectString)?;
    if longest.tied {
        return Err(GiveUp::TieForLongest);
    }
    if longest.chars < MIN_CHARS {
        return Err(GiveUp::TooShort);
    }
    if (longest.chars as f64) < WRAPPER_SHARE * raw_chars as f64 {
        return Err(GiveUp::UnderShare);
    }
    Ok(Wrapper {
        span: longest.span,
        value: longest.value,
    })
}

/// Keep the longer of `longest` and a new direct string; note a tie.
fn consider(longest: &mut Option<Longest>, span: Range<usize>, value: String) {
    let chars = value.chars().count();
    match longest {
        Some(best) if chars < best.chars => {}
        Some(best) if chars == best.chars => best.tied = true,
        _ => {
            *longest = Some(Longest {
                chars,
                span,
                value,
                tied: false,
            })
        }
    }
}

/// Decode the string literal at `span` (quotes included).
fn decode(raw: &str, span: &Range<usize>) -> Result<String, GiveUp> {
    let literal = raw.get(span.clone()).ok_or(GiveUp::Malformed)?;
    // Through `Value`, not `from_str::<String>`: a typed decode links serde's
    // "invalid type: floating point …" message, and with it std's float
    // formatting (≈ 17 KB of the component, issue 6).
    match serde_json::from_str::<serde_json::Value>(literal) {
        Ok(serde_json::Value::String(s)) => Ok(s),
        _ => Err(GiveUp::Undecodable),
    }
}

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

#[cfg(test)]
mod tests {
    #[test]
    fn json_behind_a_byte_order_mark_is_still_json() {
        let value = "x".repeat(5_000);
        let raw = format!("\u{FEFF}{{\"content\": \"{value}\", \"n\": 1}}");
        match super::classify(&raw) {
            super::Classified::Wrapper(w) => {
                assert_eq!(w.value, value);
                assert_eq!(&raw[w.span.clone()], format!("\"{value}\""));
                let out = crate::body::wrapper(&raw, &w, "y");
                assert_eq!(out, "\u{FEFF}{\"content\": \"y\", \"n\": 1}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(super::classify("\u{FEFF}[1]"), super::Classified::Structured);
        match super::classify("\u{FEFF}[1, 2]") {
            super::Classified::Array(a) => assert_eq!(a.elements, vec![4..5, 7..8]),
            other => panic!("{other:?}"),
        }
        assert_eq!(super::classify("\u{FEFF}# title"), super::Classified::Text);
    }

    #[test]
    fn only_one_byte_order_mark_is_skipped() {
        // Found by fuzz/ (target `wrapper`): a second U+FEFF is content, so
        // what follows is not JSON; a long run of them must not recurse.
        let json = format!("{{\"content\": \"{}\"}}", "x".repeat(5_000));
        assert_eq!(super::classify(&format!("\u{FEFF}\u{FEFF}{json}")), super::Classified::Text);
        let many = format!("{}{json}", "\u{FEFF}".repeat(50_000));
        assert_eq!(super::classify(&many), super::Classified::Text);
    }

    use super::*;
    use proptest::prelude::*;
    use serde_json::Value;

    macro_rules! shared {
        ($path:literal) => {
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/", $path)
        };
    }

    fn read(path: &str) -> String {
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    fn wrapper(raw: &str) -> Wrapper {
        match classify(raw) {
            Classified::Wrapper(w) => w,
            other => panic!(
                "expected a wrapper, got {other:?} ({:?})",
                locate(raw).err()
            ),
        }
    }

    /// Checks every claim about a wrapper found in a file holding `{"content": …}`.
    fn assert_content_wrapper(raw: &str) -> Wrapper {
        let w = wrapper(raw);
        let parsed: Value = serde_json::from_str(raw).unwrap();
        assert_eq!(parsed["content"].as_str(), Some(w.value.as_str()));
        let literal = &raw[w.span.clone()];
        assert!(literal.starts_with('"') && literal.ends_with('"'));
        assert_eq!(serde_json::from_str::<String>(literal).unwrap(), w.value);
        assert!(raw[..w.span.start].trim_end().ends_with("\"content\":"));
        w
    }

    fn long_text(chars: usize) -> String {
        "retry limit. ".chars().cycle().take(chars).collect()
    }

    // ---- the shared cases and corpus ----

    #[test]
    fn ascii_escaped_wrapper_is_found() {
        let raw = read(shared!("cases/wrapper-ascii-escaped.json"));
        assert!(
            raw.is_ascii(),
            "the server escaped every non-ASCII character"
        );
        let w = assert_content_wrapper(&raw);
        assert!(!w.value.is_ascii());
        // The seed's "canonical encoding occurs once" search finds nothing here.
        assert!(!raw.contains(&serde_json::to_string(&w.value).unwrap()));
    }

    #[test]
    fn raw_utf8_wrapper_is_found() {
        let raw = read(shared!("cases/wrapper-raw-utf8.json"));
        let w = assert_content_wrapper(&raw);
        assert!(!w.value.is_ascii());
    }

    #[test]
    fn corpus_pydantic_wrapper_is_found() {
        let raw = read(shared!("corpus/pydantic-validators.wrapper.json"));
        let w = assert_content_wrapper(&raw);
        assert_eq!(w.value.chars().count(), 30_385);
    }

    #[test]
    fn top_level_array_is_an_array() {
        for path in [
            shared!("cases/top-level-array.json"),
            shared!("corpus/vue-docs-partners.json"),
        ] {
            let raw = read(path);
            assert!(matches!(classify(&raw), Classified::Array(_)), "{path}");
            assert!(matches!(locate(&raw), Ok(Found::Array(_))), "{path}");
        }
    }

    #[test]
    fn object_without_a_dominant_direct_string_is_structured() {
        let pr = read(shared!("corpus/danger-js-fixture-github_pr.json"));
        assert_eq!(classify(&pr), Classified::Structured);
        assert_eq!(locate(&pr).err(), Some(GiveUp::TooShort));
        let schema = read(shared!("corpus/mcp-schema-2025-03-26.json"));
        assert_eq!(classify(&schema), Classified::Structured);
        assert_eq!(locate(&schema).err(), Some(GiveUp::TooShort));
    }

    #[test]
    fn brace_prose_is_text() {
        let raw = read(shared!("cases/brace-prose.md"));
        assert!(raw.starts_with('{'));
        assert_eq!(classify(&raw), Classified::Text);
    }

    #[test]
    fn replace_keeps_bytes_outside_the_string() {
        for path in [
            shared!("cases/wrapper-ascii-escaped.json"),
            shared!("cases/wrapper-raw-utf8.json"),
            shared!("corpus/pydantic-validators.wrapper.json"),
        ] {
            let raw = read(path);
            let w = wrapper(&raw);
            let pruned = "kept \"paragraph\" \\ \u{3042}\n\n[… omitted P2 …]\n";
            let out = crate::body::wrapper(&raw, &w, pruned);
            let encoded = serde_json::to_string(pruned).unwrap();
            assert_eq!(
                out.as_bytes()[..w.span.start],
                raw.as_bytes()[..w.span.start],
                "{path}"
            );
            assert_eq!(
                out.as_bytes()[w.span.start + encoded.len()..],
                raw.as_bytes()[w.span.end..],
                "{path}"
            );
            let before: Value = serde_json::from_str(&raw).unwrap();
            let after: Value = serde_json::from_str(&out).unwrap();
            assert_eq!(after["content"], pruned, "{path}");
            assert_eq!(after["path"], before["path"], "{path}");
            assert_eq!(after["size"], before["size"], "{path}");
            assert_eq!(raw.ends_with('\n'), out.ends_with('\n'), "{path}");
        }
    }

    // ---- the rules, on small hand-made inputs ----

    #[test]
    fn text_is_text() {
        for raw in [
            "",
            "   ",
            "plain words",
            "{ this is not json }",
            "{\"a\": 1",
            "[1, 2",
        ] {
            assert_eq!(classify(raw), Classified::Text, "{raw:?}");
        }
    }

    #[test]
    fn scalars_are_structured() {
        let long = serde_json::to_string(&long_text(10_000)).unwrap();
        for raw in ["1", "null", "true", " \"short\" ", long.as_str()] {
            assert_eq!(classify(raw), Classified::Structured, "{raw:.20}");
        }
    }

    #[test]
    fn empty_object_is_structured() {
        assert_eq!(classify(" { } \n"), Classified::Structured);
        assert_eq!(locate("{}").err(), Some(GiveUp::NoDirectString));
        assert_eq!(
            locate(r#"{"a": 1, "b": [], "c": {}}"#).err(),
            Some(GiveUp::NoDirectString)
        );
    }

    #[test]
    fn minimal_wrapper_is_found() {
        let value = long_text(5_000);
        let raw = format!("{{\"content\":{}}}", serde_json::to_string(&value).unwrap());
        assert_eq!(
            wrapper(&raw),
            Wrapper {
                span: 11..raw.len() - 1,
                value
            }
        );
    }

    #[test]
    fn duplicate_keys_give_structured() {
        let value = serde_json::to_string(&long_text(9_000)).unwrap();
        let raw = format!(r#"{{"content": {value}, "id": 1, "content": "x"}}"#);
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(locate(&raw).err(), Some(GiveUp::DuplicateKey));
    }

    #[test]
    fn duplicate_keys_are_compared_decoded() {
        let value = serde_json::to_string(&long_text(9_000)).unwrap();
        let raw = format!(r#"{{"content": {value}, "\u0063ontent": "x"}}"#);
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(locate(&raw).err(), Some(GiveUp::DuplicateKey));
    }

    #[test]
    fn duplicate_keys_in_nested_objects_do_not_matter() {
        let value = serde_json::to_string(&long_text(9_000)).unwrap();
        let raw = format!(r#"{{"meta": {{"a": 1, "a": 2}}, "content": {value}}}"#);
        assert_eq!(wrapper(&raw).value, long_text(9_000));
    }

    #[test]
    fn tie_for_longest_gives_structured() {
        // Two strings of equal character count (one escaped, one raw UTF-8).
        // With a 60 % share a tie can never pass anyway; the rule stands on
        // its own so a lower share could never pick one side silently.
        let a = "\u{3042}".repeat(4_000);
        let b = serde_json::to_string(&a).unwrap();
        let raw = format!(r#"{{"a": {b}, "b": "{}"}}"#, "\\u3042".repeat(4_000));
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(locate(&raw).err(), Some(GiveUp::TieForLongest));
    }

    #[test]
    fn shorter_string_after_the_longest_does_not_tie() {
        let value = long_text(9_000);
        let raw = format!(
            r#"{{"a": "{}", "content": {}, "b": "{}"}}"#,
            "x".repeat(20),
            serde_json::to_string(&value).unwrap(),
            "y".repeat(20)
        );
        assert_eq!(wrapper(&raw).value, value);
    }

    #[test]
    fn string_under_60_percent_is_structured() {
        let value = serde_json::to_string(&long_text(6_000)).unwrap();
        let other: Vec<u32> = (0..1_200).collect(); // ~5,000 characters of numbers
        let raw = format!(
            r#"{{"content": {value}, "ids": {}}}"#,
            serde_json::to_string(&other).unwrap()
        );
        assert!(6_000.0 < 0.6 * raw.chars().count() as f64);
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(locate(&raw).err(), Some(GiveUp::UnderShare));
    }

    #[test]
    fn string_at_exactly_60_percent_is_a_wrapper() {
        // {"c":"…6,000…","p":"…"} padded so that raw is exactly 10,000 characters.
        let value = long_text(6_000);
        let frame = r#"{"c":"","p":""}"#.len();
        let pad = "p".repeat(10_000 - 6_000 - frame);
        let raw = format!(r#"{{"c":"{value}","p":"{pad}"}}"#);
        assert_eq!(raw.chars().count(), 10_000);
        assert_eq!(wrapper(&raw).value, value);
        let raw = format!(r#"{{"c":"{value}","p":"{pad}p"}}"#);
        assert_eq!(locate(&raw).err(), Some(GiveUp::UnderShare));
    }

    #[test]
    fn string_under_4000_characters_is_structured() {
        let raw = format!(r#"{{"content": "{}"}}"#, long_text(3_999));
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(locate(&raw).err(), Some(GiveUp::TooShort));
        let raw = format!(r#"{{"content": "{}"}}"#, long_text(4_000));
        assert_eq!(wrapper(&raw).value, long_text(4_000));
    }

    #[test]
    fn shares_count_characters_not_bytes() {
        // 4,500 CJK characters are 13,500 bytes raw, 27,000 characters escaped.
        let value = "\u{3042}".repeat(4_500);
        let raw_utf8 = format!(
            r#"{{"content": "{value}", "note": "{}"}}"#,
            "n".repeat(2_000)
        );
        assert_eq!(wrapper(&raw_utf8).value, value);
        let escaped = format!(r#"{{"content": "{}"}}"#, "\\u3042".repeat(4_500));
        assert_eq!(locate(&escaped).err(), Some(GiveUp::UnderShare));
        // An escaped surrogate pair is one character.
        let emoji = format!(r#"{{"content": "{}"}}"#, "\\ud83e\\udd80".repeat(4_000));
        assert_eq!(locate(&emoji).err(), Some(GiveUp::UnderShare));
        let emoji = format!(r#"{{"content": "{}"}}"#, "\u{1f980}".repeat(4_000));
        assert_eq!(wrapper(&emoji).value.chars().count(), 4_000);
    }

    #[test]
    fn nested_strings_are_not_searched() {
        let value = serde_json::to_string(&long_text(9_000)).unwrap();
        let raw = format!(r#"{{"id": 7, "data": {{"content": {value}}}}}"#);
        assert_eq!(classify(&raw), Classified::Structured);
        assert_eq!(locate(&raw).err(), Some(GiveUp::NoDirectString));
        // A direct array holding the share is a list (SPEC §13), not a wrapper.
        let raw = format!(r#"{{"id": "7", "data": [{value}]}}"#);
        assert!(matches!(locate(&raw), Ok(Found::Array(_))));
        let raw = format!(r#"{{"id": "7", "data": [{value}], "more": [{value}]}}"#);
        assert_eq!(locate(&raw).err(), Some(GiveUp::TooShort));
    }

    #[test]
    fn brackets_and_quotes_inside_nested_strings_are_skipped() {
        let value = long_text(9_000);
        let raw = format!(
            r#"{{"meta": {{"s": "}}]\"{{[\\", "t": ["]", {{"u": "\\\""}}]}}, "content": {}, "n": -1.5e3, "z": null}}"#,
            serde_json::to_string(&value).unwrap()
        );
        assert_eq!(wrapper(&raw).value, value);
    }

    #[test]
    fn invalid_surrogate_escape_gives_structured() {
        let text = long_text(9_000);
        for bad in ["\\ud800", "\\udc00", "\\ud800\\u0041"] {
            let raw = format!(r#"{{"content": "{text}{bad}"}}"#);
            assert_eq!(classify(&raw), Classified::Structured, "{bad}");
            assert_eq!(locate(&raw).err(), Some(GiveUp::Undecodable), "{bad}");
            let raw = format!(r#"{{"content": "{text}", "{bad}": 1}}"#);
            assert_eq!(locate(&raw).err(), Some(GiveUp::Undecodable), "{bad}");
        }
    }

    #[test]
    fn deep_nesting_is_skipped_without_recursion() {
        let value = long_text(900_000);
        let encoded = serde_json::to_string(&value).unwrap();
        for deep in [
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
            format!("{}1{}", "[{\"a\":".repeat(60), "}]".repeat(60)),
        ] {
            let raw = format!(r#"{{"deep": {deep}, "content": {encoded}}}"#);
            let Classified::Wrapper(w) = classify(&raw) else {
                panic!("not a wrapper: {:?}", locate(&raw).err())
            };
            assert!(w.value == value && raw[w.span.clone()] == encoded);
        }
    }

    #[test]
    fn ten_megabyte_wrapper_is_found() {
        let value: String = "a\u{3042}\"\\\n\u{1f980}"
            .chars()
            .cycle()
            .take(4_200_000)
            .collect();
        let encoded = serde_json::to_string(&value).unwrap();
        let raw =
            format!("{{\n  \"path\": \"big.md\",\n  \"content\": {encoded},\n  \"size\": 1\n}}\n");
        assert!(raw.len() > 9_000_000);
        let w = wrapper(&raw);
        assert_eq!(w.value, value);
        let out = crate::body::wrapper(&raw, &w, "short");
        assert_eq!(
            out,
            "{\n  \"path\": \"big.md\",\n  \"content\": \"short\",\n  \"size\": 1\n}\n"
        );
    }

    #[test]
    fn many_top_level_keys_are_linear() {
        let value = serde_json::to_string(&long_text(3_000_000)).unwrap();
        let keys: String = (0..100_000).map(|i| format!("\"k{i}\":{i},")).collect();
        let raw = format!("{{{keys}\"content\":{value}}}");
        assert_eq!(wrapper(&raw).value.len(), 3_000_000);
    }

    #[test]
    fn replace_keeps_spacing_key_order_and_trailing_newline() {
        let value = long_text(5_000);
        let raw = format!(
            "\r\n {{ \"z\" :\t[1, {{\"y\": 2}}] ,\n\"content\"  :  {} , \"a\":true }}  \n\n",
            serde_json::to_string(&value).unwrap()
        );
        let w = wrapper(&raw);
        let out = crate::body::wrapper(&raw, &w, "pruned\u{2028}\u{0}");
        assert_eq!(out, "\r\n { \"z\" :\t[1, {\"y\": 2}] ,\n\"content\"  :  \"pruned\u{2028}\\u0000\" , \"a\":true }  \n\n");
    }

    #[test]
    fn replace_with_a_foreign_span_returns_raw_unchanged() {
        let raw = "\u{3042}\u{3042}";
        let w = Wrapper {
            span: 1..4,
            value: String::new(),
        };
        assert_eq!(crate::body::wrapper(raw, &w, "x"), raw);
        let w = Wrapper {
            span: 3..100,
            value: String::new(),
        };
        assert_eq!(crate::body::wrapper(raw, &w, "x"), raw);
        #[allow(clippy::reversed_empty_ranges)]
        let w = Wrapper {
            span: 6..3,
            value: String::new(),
        };
        assert_eq!(crate::body::wrapper(raw, &w, "x"), raw);
    }

    // ---- properties ----

    /// Python's `json.dumps` default: ASCII only, `\uXXXX` and surrogate pairs.
    fn encode_ascii(s: &str, upper_hex: bool) -> String {
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\u{8}' => out.push_str("\\b"),
                '\u{c}' => out.push_str("\\f"),
                ' '..='~' => out.push(c),
                _ => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        if upper_hex {
                            out.push_str(&format!("\\u{unit:04X}"));
                        } else {
                            out.push_str(&format!("\\u{unit:04x}"));
                        }
                    }
                }
            }
        }
        out.push('"');
        out
    }

    fn encode(s: &str, ascii: bool, upper_hex: bool) -> String {
        if ascii {
            encode_ascii(s, upper_hex)
        } else {
            serde_json::to_string(s).unwrap()
        }
    }

    fn any_text_char() -> impl Strategy<Value = char> {
        prop_oneof![
            40 => proptest::char::range('a', 'z'),
            8 => Just(' '),
            1 => prop::sample::select(vec!['"', '\\', '/', '\n', '\r', '\t', '\u{0}', '\u{8}', '\u{1f}', '\u{7f}', '{', '}', '[', ']', ':', ',']),
            1 => prop::sample::select(vec!['\u{3042}', '\u{e9}', '\u{2028}', '\u{feff}', '\u{1f980}', '\u{1f600}', '\u{1f44d}', '\u{1f3fd}', '\u{10ffff}']),
            1 => any::<char>(),
        ]
    }

    fn short_text() -> impl Strategy<Value = String> {
        prop::collection::vec(any_text_char(), 0..12).prop_map(|v| v.into_iter().collect())
    }

    fn json_ws() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec![" ", "\t", "\n", "\r\n", "  "]),
            0..3,
        )
        .prop_map(|v| v.concat())
    }

    fn other_value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            (-1e9f64..1e9).prop_map(Value::from),
            short_text().prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::vec((short_text(), inner), 0..4)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    #[derive(Debug, Clone)]
    struct Member {
        key: String,
        ws: [String; 4],
        /// `None` is the wrapper's long string.
        value: Option<Value>,
        pretty: bool,
    }

    #[derive(Debug, Clone)]
    struct Generated {
        raw: String,
        key: String,
        value: String,
        span: Range<usize>,
    }

    fn member(value: Option<Value>) -> impl Strategy<Value = Member> {
        (
            short_text(),
            json_ws(),
            json_ws(),
            json_ws(),
            json_ws(),
            any::<bool>(),
        )
            .prop_map(move |(key, a, b, c, d, pretty)| Member {
                key,
                ws: [a, b, c, d],
                value: value.clone(),
                pretty,
            })
    }

    fn generated_wrapper() -> impl Strategy<Value = Generated> {
        let long = prop::collection::vec(any_text_char(), 4_000..4_400)
            .prop_map(|v| v.into_iter().collect::<String>());
        let others = prop::collection::vec(other_value().prop_flat_map(|v| member(Some(v))), 0..5);
        (
            long,
            member(None),
            others,
            any::<prop::sample::Index>(),
            any::<bool>(),
            any::<bool>(),
            json_ws(),
            json_ws(),
        )
            .prop_map(
                |(long, main, mut members, at, ascii, upper_hex, lead, trail)| {
                    let at = at.index(members.len() + 1);
                    members.insert(at, main);
                    let mut raw = format!("{lead}{{");
                    let (mut key, mut span) = (String::new(), 0..0);
                    for (i, m) in members.iter().enumerate() {
                        if i > 0 {
                            raw.push(',');
                        }
                        // "#<i>" after the last '#' keeps every key distinct.
                        let k = format!("{}#{i}", m.key);
                        raw.push_str(&m.ws[0]);
                        raw.push_str(&encode(&k, ascii, upper_hex));
                        raw.push_str(&m.ws[1]);
                        raw.push(':');
                        raw.push_str(&m.ws[2]);
                        match &m.value {
                            None => {
                                let start = raw.len();
                                raw.push_str(&encode(&long, ascii, upper_hex));
                                span = start..raw.len();
                                key = k;
                            }
                            Some(Value::String(s)) => raw.push_str(&encode(s, ascii, upper_hex)),
                            Some(v) if m.pretty => {
                                raw.push_str(&serde_json::to_string_pretty(v).unwrap())
                            }
                            Some(v) => raw.push_str(&serde_json::to_string(v).unwrap()),
                        }
                        raw.push_str(&m.ws[3]);
                    }
                    raw.push('}');
                    raw.push_str(&trail);
                    Generated {
                        raw,
                        key,
                        value: long,
                        span,
                    }
                },
            )
    }

    fn json_ish() -> impl Strategy<Value = String> {
        let token = prop::sample::select(vec![
            "{",
            "}",
            "[",
            "]",
            "\"",
            "\\",
            ":",
            ",",
            " ",
            "\n",
            "\"k\"",
            "\"content\":",
            "\"v\"",
            "1",
            "-0.5e3",
            "true",
            "null",
            "\\u00e9",
            "\\ud800",
            "\\udc00",
            "\\ud83d\\ude00",
            "\\\"",
            "\u{e9}",
            "\u{1f980}",
            "\u{0}",
            "\"\\",
        ]);
        prop::collection::vec(token, 0..300).prop_map(|v| v.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn classify_never_panics_on_arbitrary_strings(s in any::<String>()) {
            let _ = classify(&s);
            let _ = locate(&s);
        }

        #[test]
        fn classify_never_panics_on_json_ish_fragments(s in json_ish(), long in 0usize..2) {
            let _ = classify(&s);
            let _ = locate(&s);
            // The same fragments after a long string, so the share rules are reached.
            let s = format!("{{\"content\": \"{}\"{s}", long_text(4_000 + long * 4_000));
            let _ = classify(&s);
            let _ = locate(&s);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        #[test]
        fn classify_never_panics_on_mutated_wrappers(g in generated_wrapper(), cut in any::<prop::sample::Index>(), insert in json_ish()) {
            let mut at = cut.index(g.raw.len() + 1);
            while !g.raw.is_char_boundary(at) {
                at -= 1;
            }
            let mutated = format!("{}{insert}{}", &g.raw[..at], &g.raw[at..]);
            let _ = classify(&mutated);
            let _ = locate(&mutated);
            let _ = classify(&g.raw[..at]);
            let _ = locate(&g.raw[..at]);
        }

        #[test]
        fn generated_wrapper_is_found_exactly(g in generated_wrapper()) {
            prop_assert!(serde_json::from_str::<Value>(&g.raw).is_ok());
            let chars = g.value.chars().count();
            let is_wrapper = chars >= MIN_CHARS && chars as f64 >= WRAPPER_SHARE * g.raw.chars().count() as f64;
            let expected = if is_wrapper {
                Classified::Wrapper(Wrapper { span: g.span.clone(), value: g.value.clone() })
            } else {
                Classified::Structured
            };
            prop_assert_eq!(classify(&g.raw), expected);
        }

        #[test]
        fn replace_parses_keeps_outside_bytes_and_decodes_to_the_new_value(
            g in generated_wrapper(),
            v2 in prop::collection::vec(any_text_char(), 0..300).prop_map(|v| v.into_iter().collect::<String>()),
        ) {
            let Classified::Wrapper(w) = classify(&g.raw) else {
                return Ok(()); // under the share: covered by the property above
            };
            let out = crate::body::wrapper(&g.raw, &w, &v2);
            let encoded = serde_json::to_string(&v2).unwrap();
            prop_assert_eq!(&out.as_bytes()[..w.span.start], &g.raw.as_bytes()[..w.span.start]);
            prop_assert_eq!(&out.as_bytes()[w.span.start + encoded.len()..], &g.raw.as_bytes()[w.span.end..]);
            let parsed: Value = serde_json::from_str(&out).unwrap();
            prop_assert_eq!(parsed[&g.key].as_str(), Some(v2.as_str()));
        }
    }
}
