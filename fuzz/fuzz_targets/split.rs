//! Paragraphs tile the input and reassemble to it byte for byte; counts are characters.
#![no_main]
use libfuzzer_sys::fuzz_target;
use toolprune_guest::split::split;

fuzz_target!(|text: &str| {
    let ps = split(text);
    let mut joined = String::with_capacity(text.len());
    let mut at = 0;
    for p in &ps {
        assert_eq!(p.start, at, "paragraphs tile the text");
        assert!(p.start < p.end);
        let t = &text[p.start..p.end];
        assert_eq!(p.chars, t.chars().count());
        joined.push_str(t);
        at = p.end;
    }
    assert_eq!(joined, text, "reassembles byte for byte");
});
