//! SPEC §9: the header and the markers that name what was dropped, in ja and en.

use crate::component::wit::types::Lang;

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
}
