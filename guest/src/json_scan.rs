//! A span-aware scan of JSON text (SPEC §8, §13): the steps the shape
//! classifier and the array's element finder take over raw bytes, so spans
//! stay spans of the raw text and nothing is re-serialized. Iterative: no
//! recursion, so deep nesting cannot overflow the guest's stack. Only ASCII
//! bytes are matched, so every span ends on a character boundary.

use std::ops::Range;

/// The index of the first byte at or after `i` that is not JSON whitespace.
pub fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while let Some(b' ' | b'\t' | b'\n' | b'\r') = b.get(i) {
        i += 1;
    }
    i
}

/// The span, quotes included, of the string literal whose opening quote is
/// at `start`; `None` if there is no quote there or the literal is unclosed.
///
/// Only `"` and `\` matter, and both are ASCII, which never occurs inside a
/// multi-byte UTF-8 sequence: the span's ends are character boundaries.
pub fn string_literal(b: &[u8], start: usize) -> Option<Range<usize>> {
    if b.get(start) != Some(&b'"') {
        return None;
    }
    let mut i = start + 1;
    loop {
        match b.get(i)? {
            b'"' => return Some(start..i + 1),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// The index just past the object or array that opens at `start`, counting
/// depth iteratively and stepping over string literals (which may hold
/// brackets, quotes and escapes).
pub fn skip_container(b: &[u8], start: usize) -> Option<usize> {
    let mut depth: usize = 0;
    let mut i = start;
    while let Some(&byte) = b.get(i) {
        match byte {
            b'"' => {
                i = string_literal(b, i)?.end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(i + 1);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// The index just past the number, `true`, `false` or `null` at `start`.
pub fn skip_scalar(b: &[u8], mut i: usize) -> usize {
    while let Some(&byte) = b.get(i) {
        if matches!(byte, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
            break;
        }
        i += 1;
    }
    i
}
