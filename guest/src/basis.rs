//! SPEC §3: the basis — the first 2,000 characters of the turn's request.

use crate::limits::{BASIS_CHARS, MIN_BASIS_CHARS};

/// The first 2,000 characters (Unicode scalar values) of `request`, as a
/// sub-slice (no copy). This is exactly what is sent as `state.request`.
pub fn basis(request: &str) -> &str {
    match request.char_indices().nth(BASIS_CHARS) {
        Some((byte, _)) => &request[..byte],
        None => request,
    }
}

/// Whether the basis is long enough to prune against: at least 20 characters
/// after trimming whitespace (SPEC §3; "ok", "continue" are not).
pub fn is_enough(basis: &str) -> bool {
    basis.trim().chars().count() >= MIN_BASIS_CHARS
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn basis_is_the_first_2000_characters_not_bytes() {
        let request = "あ".repeat(2_500);
        let b = basis(&request);
        assert_eq!(b.chars().count(), 2_000);
        assert!(request.starts_with(b));
    }

    #[test]
    fn short_request_is_its_own_basis() {
        assert_eq!(basis("How do I resume?"), "How do I resume?");
    }

    #[test]
    fn basis_under_20_trimmed_characters_is_not_enough() {
        assert!(!is_enough("  ok  "));
        assert!(!is_enough(&format!("  {}  ", "x".repeat(19))));
        assert!(is_enough(&"x".repeat(20)));
        assert!(is_enough("アップロードの再試行回数を設定するにはどうすればよいですか"));
    }
}
