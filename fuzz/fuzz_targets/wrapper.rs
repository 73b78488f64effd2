//! A wrapper's replaced output parses as JSON, decodes to the new value, and
//! differs from the input only inside the replaced string; no panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use toolprune_guest::body::wrapper as replace;
use toolprune_guest::shape::{classify, Classified};

fuzz_target!(|raw: &str| {
    let Classified::Wrapper(w) = classify(raw) else { return };
    // A leading byte-order mark is allowed before the JSON (it stays in the body).
    let json = |s: &str| serde_json::from_str::<serde_json::Value>(s.strip_prefix('\u{FEFF}').unwrap_or(s)).is_ok();
    assert!(json(raw), "a wrapper is JSON");
    let new_value: String = w.value.chars().rev().take(1000).collect();
    let out = replace(raw, &w, &new_value);
    let encoded = serde_json::to_string(&new_value).unwrap();
    assert_eq!(&out.as_bytes()[..w.span.start], &raw.as_bytes()[..w.span.start]);
    assert_eq!(&out.as_bytes()[w.span.start + encoded.len()..], &raw.as_bytes()[w.span.end..]);
    assert!(json(&out), "the output parses");
});
