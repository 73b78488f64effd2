//! SPEC §4 steps 1–5: fenced blocks, blank lines, fixed paragraphs, merging.
//!
//! [`split`] cuts a text into [`Paragraph`]s: byte spans that tile the text
//! exactly (`p[0].start == 0`, `p[i].end == p[i + 1].start`,
//! `last.end == text.len()`), so joining them gives the input back byte for
//! byte. Every length is in characters (Unicode scalar values,
//! `str::chars().count()`) of the whole span, separators included.
//!
//! # Lines
//!
//! A line ends at `\n`, `\r\n` or a lone `\r` (CommonMark); the terminator
//! belongs to the line. Nothing else ends a line (U+2028, U+0085, form feed
//! are ordinary whitespace inside a line). A line is **blank** when its text
//! (terminator excluded) is empty or only `char::is_whitespace` characters.
//! A U+FEFF at the very start of the text is ignored when classifying the
//! first line (it still belongs to the first paragraph's bytes).
//!
//! # Step 1 — fences (CommonMark fenced code blocks)
//!
//! A line's *prefix* is stripped first: any run of spaces/tabs, block-quote
//! markers `>` and list markers (`-`, `+`, `*`, or 1–9 digits followed by
//! `.`/`)`, each followed by a space or tab), in any order and nesting, so
//! `  ```` `, `> > ```` `, `- ```` `, `  > 1. ~~~` all open fences. The number of
//! `>` markers stripped is the fence's quote *depth*. An **opening fence** is
//! then a run of ≥ 3 backticks or ≥ 3 tildes; for backticks the rest of the
//! line (the info string) may not contain a backtick — so inline code such as
//! ``` ```inline``` ``` is not a fence. Indentation is not limited (lists
//! nest).
//!
//! Every line after the opener is inside the fence (blank or not: blank lines
//! inside never split) until, and including, the **closing fence**: after
//! stripping `depth` quote markers and spaces/tabs, a run of the same
//! character at least as long as the opener followed only by whitespace.
//! If a non-blank line carries fewer than `depth` `>` markers, the block
//! quote — and so the fence, as in CommonMark — ended before that line, which
//! is then read afresh; blank lines without `>` inside a quoted fence are
//! decided by the next non-blank line: fence content if it still carries the
//! markers, separators if it does not. Fences in list items are not ended by
//! dedent (that needs a list parser; keeping more together is the safe side).
//! A fence that never closes runs to the end of the text.
//!
//! # Step 2 — blocks
//!
//! Walking the lines, a non-blank line (or any line inside a fence) that
//! follows one or more blank lines (outside fences) after some earlier
//! non-blank line starts a new block there. So blank lines are a trailing
//! separator belonging to the block before them, and blank lines at the very
//! start belong to the first block. A text of blank lines only is one block.
//!
//! # Steps 3–4 — fixed paragraphs and merging
//!
//! A block longer than `MAX_PARAGRAPH_CHARS` (6,000) is *fixed*. Then, left to
//! right with an accumulator `acc` (initially the first block), for each next
//! block `b`:
//!
//! * if `acc` is not fixed, `acc.chars < MIN_PARAGRAPH_CHARS` (120), `b` is
//!   not fixed and `acc.chars + b.chars <= 6000`, then `acc` absorbs `b` (the
//!   short paragraph merges into the next one) and is measured again, so a run
//!   of short blocks keeps accumulating until it reaches 120;
//! * otherwise `acc` is final (pushed) and `b` becomes the new `acc`.
//!
//! At the end `acc` is pushed. If that last paragraph is shorter than 120, has
//! a previous paragraph, that previous one is not fixed, and their sum is
//! `<= 6000`, it merges into the previous one (it has no next). No further
//! cascade is needed: the previous one is then ≥ 120 (a shorter one would
//! already have absorbed it, as the same sum test would have passed).
//!
//! A merged paragraph therefore never exceeds 6,000 and is never fixed; a
//! fixed paragraph is exactly one block. A paragraph shorter than 120 survives
//! only when its neighbour is fixed, the merge would pass 6,000, or it is the
//! whole text.
//!
//! # Step 5
//!
//! The paragraphs are numbered by their index in the returned `Vec`, from 0.
//!
//! Runs in O(n) time over the text and never panics: all slicing is at ASCII
//! bytes (`\r`, `\n`, `>`, markers) or at a leading BOM, which are always
//! char boundaries.

use crate::limits::{MAX_PARAGRAPH_CHARS, MIN_PARAGRAPH_CHARS};

/// One paragraph: a byte span of the text that, with its neighbours, tiles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    /// Byte offset where the paragraph starts (inclusive).
    pub start: usize,
    /// Byte offset where it ends (exclusive); the next paragraph starts here.
    pub end: usize,
    /// Characters (Unicode scalar values) in `start..end`.
    pub chars: usize,
    /// Longer than 6,000 characters: unscored and kept (SPEC §4.3).
    pub fixed: bool,
}

/// Split `text` into paragraphs (SPEC §4.1–§4.5). See the module doc for the
/// exact algorithm. Empty text gives no paragraph.
pub fn split(text: &str) -> Vec<Paragraph> {
    if text.is_empty() {
        return Vec::new();
    }
    merge(text, &blocks(text))
}

/// An open fenced code block.
#[derive(Debug, Clone, Copy)]
struct Fence {
    /// `b'`'` or `b'~'`.
    ch: u8,
    /// Length of the opening run (≥ 3).
    len: usize,
    /// Block-quote markers (`>`) before the opening run.
    depth: usize,
}

/// One line: `start..content_end` is its text; its terminator (`\n`, `\r\n`,
/// `\r` or nothing at the end of the text) follows.
struct Line {
    start: usize,
    content_end: usize,
}

/// The lines of `text`, terminators as in CommonMark. A text ending with a
/// terminator has no empty last line.
fn lines(text: &str) -> impl Iterator<Item = Line> + '_ {
    let bytes = text.as_bytes();
    let mut pos = 0;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        let i = memchr::memchr2(b'\n', b'\r', &bytes[pos..]).map_or(bytes.len(), |n| pos + n);
        let content_end = i;
        let end = if i >= bytes.len() {
            i
        } else if bytes[i] == b'\r' && i + 1 < bytes.len() && bytes[i + 1] == b'\n' {
            i + 2
        } else {
            i + 1
        };
        pos = end;
        Some(Line { start, content_end })
    })
}

/// `s` without leading spaces and tabs.
fn skip_indent(s: &str) -> &str {
    // Bytes, not `trim_start_matches([' ', '\t'])`: this runs on every line,
    // and the char-pattern searcher cost ≈ 3 % of a result's guest work.
    let n = s.bytes().take_while(|&b| b == b' ' || b == b'\t').count();
    &s[n..]
}

/// The rest of `s` after a list marker (`-`, `+`, `*`, or 1–9 digits then `.`
/// or `)`) that is followed by a space or tab; `None` if `s` has none.
fn after_list_marker(s: &str) -> Option<&str> {
    let b = s.as_bytes();
    let n = match b.first()? {
        b'-' | b'+' | b'*' => 1,
        b'0'..=b'9' => {
            let digits = b.iter().take_while(|c| c.is_ascii_digit()).count();
            if digits > 9 || !matches!(b.get(digits), Some(b'.' | b')')) {
                return None;
            }
            digits + 1
        }
        _ => return None,
    };
    match b.get(n) {
        Some(b' ' | b'\t') => Some(&s[n..]),
        _ => None,
    }
}

/// An opening fence on this line (outside any fence), if there is one.
fn opening_fence(content: &str) -> Option<Fence> {
    let mut s = content;
    let mut depth = 0;
    loop {
        s = skip_indent(s);
        if let Some(rest) = s.strip_prefix('>') {
            depth += 1;
            s = rest;
        } else if let Some(rest) = after_list_marker(s) {
            s = rest;
        } else {
            break;
        }
    }
    let ch = *s.as_bytes().first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = s.bytes().take_while(|&c| c == ch).count();
    if len < 3 {
        return None;
    }
    if ch == b'`' && s[len..].contains('`') {
        return None;
    }
    Some(Fence { ch, len, depth })
}

/// Strip up to `depth` block-quote markers (each possibly indented); the
/// number stripped and the rest.
fn strip_quotes(content: &str, depth: usize) -> (usize, &str) {
    let mut s = content;
    let mut n = 0;
    while n < depth {
        match skip_indent(s).strip_prefix('>') {
            Some(rest) => {
                s = rest;
                n += 1;
            }
            None => break,
        }
    }
    (n, s)
}

/// Is `rest` (the line after the fence's quote markers) a closing fence?
fn closes(rest: &str, fence: Fence) -> bool {
    let s = skip_indent(rest);
    let run = s.bytes().take_while(|&c| c == fence.ch).count();
    run >= fence.len && s[run..].chars().all(char::is_whitespace)
}

/// SPEC §4.1–§4.2: the blocks (byte spans tiling the text) before merging.
fn blocks(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut cur_start = 0;
    let mut seen_content = false;
    let mut after_blank = false;
    let mut fence: Option<Fence> = None;
    // Blank lines without `>` seen inside a quoted fence, not yet decided.
    let mut quote_gap = false;

    for line in lines(text) {
        let mut content = &text[line.start..line.content_end];
        if line.start == 0 {
            content = content.strip_prefix('\u{FEFF}').unwrap_or(content);
        }

        let blank = content.chars().all(char::is_whitespace);

        // Inside a fence: the line is part of the block whatever it holds,
        // unless the block quote holding the fence ended before it.
        let mut in_fence = false;
        if let Some(f) = fence {
            let (n, rest) = strip_quotes(content, f.depth);
            if n >= f.depth {
                in_fence = true;
                quote_gap = false;
                if closes(rest, f) {
                    fence = None;
                }
            } else if blank {
                // Unquoted blank line in a quoted fence: the next non-blank
                // line tells whether the quote (and fence) goes on.
                quote_gap = true;
                continue;
            } else {
                // The quote ended: so did the fence, and the blank lines just
                // before this line were separators after all.
                fence = None;
                after_blank |= quote_gap;
                quote_gap = false;
            }
        }

        let blank = blank && !in_fence;
        if blank {
            after_blank = true;
            continue;
        }
        if !in_fence {
            fence = opening_fence(content);
        }
        if seen_content && after_blank {
            out.push((cur_start, line.start));
            cur_start = line.start;
        }
        seen_content = true;
        after_blank = false;
    }
    out.push((cur_start, text.len()));
    out
}

/// SPEC §4.3–§4.4: fix the long blocks, merge the short ones.
fn merge(text: &str, blocks: &[(usize, usize)]) -> Vec<Paragraph> {
    let mut out: Vec<Paragraph> = Vec::with_capacity(blocks.len());
    let mut acc: Option<Paragraph> = None;
    for &(start, end) in blocks {
        let chars = text[start..end].chars().count();
        let b = Paragraph {
            start,
            end,
            chars,
            fixed: chars > MAX_PARAGRAPH_CHARS,
        };
        acc = Some(match acc.take() {
            None => b,
            Some(a) if can_merge(&a, &b) => joined(&a, &b),
            Some(a) => {
                out.push(a);
                b
            }
        });
    }
    out.extend(acc);

    // The last paragraph has no next: a short one merges into the previous.
    if out.len() >= 2 {
        let last = &out[out.len() - 1];
        let prev = &out[out.len() - 2];
        if can_merge(last, prev) {
            let m = joined(prev, last);
            out.pop();
            out.pop();
            out.push(m);
        }
    }
    out
}

/// May `short` merge into its neighbour `other`? Only a short, unfixed
/// paragraph, into an unfixed neighbour, and never past 6,000 characters.
fn can_merge(short: &Paragraph, other: &Paragraph) -> bool {
    !short.fixed
        && short.chars < MIN_PARAGRAPH_CHARS
        && !other.fixed
        && short.chars + other.chars <= MAX_PARAGRAPH_CHARS
}

/// `a` and the paragraph right after it, as one.
fn joined(a: &Paragraph, b: &Paragraph) -> Paragraph {
    let chars = a.chars + b.chars;
    Paragraph {
        start: a.start,
        end: b.end,
        chars,
        fixed: chars > MAX_PARAGRAPH_CHARS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MAX: usize = MAX_PARAGRAPH_CHARS;
    const MIN: usize = MIN_PARAGRAPH_CHARS;

    /// The texts of the paragraphs.
    fn texts(text: &str) -> Vec<&str> {
        split(text).iter().map(|p| &text[p.start..p.end]).collect()
    }

    /// A paragraph of exactly `n` characters (≥ 2), ending with "\n\n".
    fn para(n: usize, c: char) -> String {
        assert!(n >= 2);
        let mut s: String = std::iter::repeat_n(c, n - 2).collect();
        s.push_str("\n\n");
        s
    }

    /// Every structural invariant of `split`, for any text.
    fn check_invariants(text: &str) {
        let ps = split(text);
        if text.is_empty() {
            assert!(ps.is_empty());
            return;
        }
        assert!(!ps.is_empty());
        assert_eq!(ps[0].start, 0);
        assert_eq!(ps.last().unwrap().end, text.len());
        for w in ps.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        let mut joined = String::new();
        for p in &ps {
            assert!(p.start < p.end, "empty paragraph {p:?}");
            let t = &text[p.start..p.end];
            assert_eq!(p.chars, t.chars().count());
            assert_eq!(p.fixed, p.chars > MAX);
            joined.push_str(t);
        }
        assert_eq!(joined, text);
        // A short paragraph survives only where the merge rule forbids it.
        for i in 0..ps.len() {
            if ps[i].chars >= MIN || ps.len() == 1 {
                continue;
            }
            let j = if i + 1 < ps.len() { i + 1 } else { i - 1 };
            let n = &ps[j];
            assert!(
                n.fixed || ps[i].chars + n.chars > MAX,
                "short paragraph {i} could have merged: {ps:?}"
            );
        }
    }

    // ----- Step 2: blank lines, tiling, line ends -----

    #[test]
    fn empty_text_gives_no_paragraphs() {
        assert!(split("").is_empty());
    }

    #[test]
    fn spans_tile_the_text() {
        let text = format!(
            "{}{}\n\n\n{}",
            para(200, 'a'),
            para(300, 'b'),
            "c".repeat(150)
        );
        let ps = split(&text);
        assert_eq!(ps.len(), 3);
        check_invariants(&text);
        assert_eq!(
            ps.iter().map(|p| p.chars).sum::<usize>(),
            text.chars().count()
        );
    }

    #[test]
    fn blank_lines_belong_to_the_end_of_the_preceding_paragraph() {
        let a = "a".repeat(130);
        let b = "b".repeat(130);
        let text = format!("{a}\n\n \n\t\n{b}\n\n");
        assert_eq!(
            texts(&text),
            vec![format!("{a}\n\n \n\t\n"), format!("{b}\n\n")]
        );
    }

    #[test]
    fn leading_blank_lines_belong_to_the_first_paragraph() {
        let a = "a".repeat(130);
        let b = "b".repeat(130);
        let text = format!("\n \n{a}\n\n{b}");
        assert_eq!(texts(&text), vec![format!("\n \n{a}\n\n"), b]);
    }

    #[test]
    fn text_of_blank_lines_only_is_one_paragraph() {
        assert_eq!(texts("\n\n  \r\n\t"), vec!["\n\n  \r\n\t"]);
    }

    #[test]
    fn lines_split_without_a_blank_line_stay_together() {
        let text = format!("{}\n{}\n", "a".repeat(130), "b".repeat(130));
        assert_eq!(split(&text).len(), 1);
    }

    #[test]
    fn whitespace_only_lines_split_including_unicode_whitespace() {
        for sep in [
            " ", "\t", " \t ", "\u{3000}", "\u{a0}", "\u{2028}", "\u{85}", "\u{c}", "\u{b}",
        ] {
            let a = "a".repeat(130);
            let b = "b".repeat(130);
            let text = format!("{a}\n{sep}\n{b}");
            assert_eq!(
                texts(&text),
                vec![format!("{a}\n{sep}\n"), b.clone()],
                "sep {sep:?}"
            );
        }
    }

    #[test]
    fn unicode_line_separator_does_not_end_a_line() {
        // "a\u{2028}\u{2028}b" is one line, not a blank line between two.
        let text = format!("{}\u{2028}\u{2028}{}", "a".repeat(130), "b".repeat(130));
        assert_eq!(split(&text).len(), 1);
    }

    #[test]
    fn crlf_and_lone_cr_end_lines() {
        let a = "a".repeat(130);
        let b = "b".repeat(130);
        let c = "c".repeat(130);
        let d = "d".repeat(130);
        let text = format!("{a}\r\n\r\n{b}\r\r{c}\r\n \r{d}");
        assert_eq!(
            texts(&text),
            vec![
                format!("{a}\r\n\r\n"),
                format!("{b}\r\r"),
                format!("{c}\r\n \r"),
                d
            ]
        );
        // "\n\r" is two line ends: an empty line between.
        let text = format!("{a}\n\r{b}");
        assert_eq!(split(&text).len(), 2);
        // One "\r\n" alone is a single line end: no blank line.
        let text = format!("{a}\r\n{b}");
        assert_eq!(split(&text).len(), 1);
    }

    #[test]
    fn crlf_text_splits_like_its_lf_twin() {
        let lf = format!(
            "# T\n\n{}\n\n```\nx\n\ny\n```\n\n{}\n",
            "a".repeat(200),
            "b".repeat(50)
        );
        let crlf = lf.replace('\n', "\r\n");
        let cr = lf.replace('\n', "\r");
        let shape = |t: &str| -> Vec<usize> {
            split(t)
                .iter()
                .map(|p| t[p.start..p.end].chars().filter(|&c| c != '\r').count())
                .collect()
        };
        assert_eq!(shape(&lf), shape(&crlf));
        assert_eq!(split(&lf).len(), split(&cr).len());
    }

    #[test]
    fn bom_stays_in_the_first_paragraph() {
        let text = format!("\u{FEFF}{}\n\n{}", "a".repeat(130), "b".repeat(130));
        let t = texts(&text);
        assert_eq!(t.len(), 2);
        assert!(t[0].starts_with('\u{FEFF}'));
    }

    #[test]
    fn bom_is_not_content_when_classifying_the_first_line() {
        // BOM then blank lines: those blank lines are leading blank lines.
        let text = format!("\u{FEFF}\n\n{}\n\n{}", "a".repeat(130), "b".repeat(130));
        let t = texts(&text);
        assert_eq!(t.len(), 2);
        assert_eq!(t[0], format!("\u{FEFF}\n\n{}\n\n", "a".repeat(130)));
        // BOM then a fence: the fence opens.
        let text = format!(
            "\u{FEFF}```\n{}\n\n{}\n```\n",
            "a".repeat(130),
            "b".repeat(130)
        );
        assert_eq!(split(&text).len(), 1);
    }

    #[test]
    fn chars_are_scalar_values_not_bytes() {
        // 59 × "あ" (3 bytes) + "\n\n" = 61 chars, 179 bytes: short by chars.
        let short = format!("{}\n\n", "あ".repeat(59));
        let long = format!("{}\n\n", "😀".repeat(128));
        let family = "👩\u{200d}👩\u{200d}👧\u{200d}👦"; // 7 scalar values
        let text = format!("{short}{long}{family}");
        let ps = split(&text);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].chars, 61 + 130 + 7);
        check_invariants(&text);
    }

    // ----- Step 1: fences -----

    #[test]
    fn fence_with_blank_lines_is_one_unit() {
        let body = "x".repeat(130);
        let text = format!("```rust\n{body}\n\n\n{body}\n```\n\n{}", "a".repeat(130));
        assert_eq!(
            texts(&text),
            vec![
                format!("```rust\n{body}\n\n\n{body}\n```\n\n"),
                "a".repeat(130)
            ]
        );
    }

    #[test]
    fn tilde_fence_with_blank_lines_is_one_unit() {
        let body = "x".repeat(130);
        let text = format!("~~~sh\n{body}\n\n{body}\n~~~\n\n{}", "a".repeat(130));
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn unclosed_fence_runs_to_the_end() {
        let body = "x".repeat(130);
        let text = format!(
            "{}\n\n```python\n{body}\n\n\n{body}\n\n{body}",
            "a".repeat(130)
        );
        let t = texts(&text);
        assert_eq!(t.len(), 2);
        assert!(t[1].starts_with("```python") && t[1].ends_with(&body));
    }

    #[test]
    fn closing_fence_must_be_the_same_char_and_at_least_as_long() {
        let body = "x".repeat(130);
        // ``` inside ```` does not close it; ~~~ does not close ```.
        let text = format!("````md\n```\n{body}\n\n```\n~~~~\n\n{body}\n`````\n\n{body}");
        let t = texts(&text);
        assert_eq!(t.len(), 2, "{t:#?}");
        assert!(t[0].ends_with("`````\n\n"));
    }

    #[test]
    fn closing_fence_takes_only_whitespace_after_it() {
        let body = "x".repeat(130);
        // "``` x" is content, not a closing fence; "```  \t" closes.
        let text = format!("```\n{body}\n``` x\n\n{body}\n```  \t\n\n{body}");
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn two_backticks_are_not_a_fence() {
        let body = "x".repeat(130);
        let text = format!("``\n{body}\n\n{body}");
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn inline_backticks_are_not_a_fence() {
        let body = "x".repeat(130);
        // Mid-line, and at line start with a backtick in the info string.
        let text = format!(
            "See ```inline``` here {body}\n\n```inline``` at start {body}\n\n{body}\n\n{body}"
        );
        assert_eq!(split(&text).len(), 4);
    }

    #[test]
    fn tilde_info_string_may_contain_backticks() {
        let body = "x".repeat(130);
        let text = format!("~~~ `odd` info\n{body}\n\n{body}\n~~~\n\n{body}");
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn fence_in_list_item_is_a_fence() {
        let body = "x".repeat(130);
        for (open, close) in [
            ("  ```yaml", "  ```"),
            ("      ```", "      ```"), // nested list, deep indent
            ("- ```", "  ```"),         // fence on the marker's line
            ("1. ~~~", "   ~~~"),
            ("\t- * ```", "\t    ```"), // nested markers
        ] {
            let text = format!("- {body}\n\n{open}\n  {body}\n\n  {body}\n{close}\n\n{body}");
            assert_eq!(split(&text).len(), 3, "{open:?}");
        }
    }

    #[test]
    fn fence_in_block_quote_is_a_fence() {
        let body = "x".repeat(130);
        for (q, open, close) in [
            ("> ", "> ```", "```"),
            ("> > ", "> > ```", "```"),
            ("  > ", "  >```", "```"),
            ("> ", "> - ~~~", "~~~"),
        ] {
            // The blank line inside the quoted fence (without '>') does not
            // split: quote paragraph, fence, last paragraph.
            let text =
                format!("{q}{body}\n\n{open}\n{q}{body}\n\n\n{q}{body}\n{q}{close}\n\n{body}");
            let t = texts(&text);
            assert_eq!(t.len(), 3, "{open:?}: {t:#?}");
            assert!(t[1].starts_with(open) && t[1].ends_with(&format!("{q}{close}\n\n")));
        }
    }

    #[test]
    fn block_quote_fence_ends_when_the_quote_ends() {
        let body = "x".repeat(130);
        // CommonMark: a non-blank line with fewer '>' ends the quote and its
        // fence; the blank lines before it were separators.
        let text = format!("> ```\n> {body}\n\n{body}\n\n{body}");
        assert_eq!(
            texts(&text),
            vec![
                format!("> ```\n> {body}\n\n"),
                format!("{body}\n\n"),
                body.clone()
            ]
        );
        // No blank line before it: same paragraph, then the blank splits.
        let text = format!("> > ```\n> > {body}\n> {body}\n\n{body}");
        assert_eq!(split(&text).len(), 2);
        // Inside a top-level fence, '>' is just code.
        let text = format!("```\n> {body}\n\n{body}\n```\n\n{body}");
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn fence_without_blank_line_around_stays_with_its_text() {
        let text = format!(
            "{}\n```\ncode\n\ncode\n```\n{}",
            "a".repeat(130),
            "b".repeat(130)
        );
        assert_eq!(split(&text).len(), 1);
    }

    // ----- Steps 3–4: fixed paragraphs and merging -----

    #[test]
    fn paragraph_longer_than_6000_is_fixed() {
        let text = format!("{}{}", para(MAX + 1, 'a'), para(MAX, 'b'));
        let ps = split(&text);
        assert_eq!(ps.len(), 2);
        assert!(ps[0].fixed && ps[0].chars == MAX + 1);
        assert!(!ps[1].fixed && ps[1].chars == MAX);
    }

    #[test]
    fn paragraph_of_120_does_not_merge() {
        let text = format!("{}{}", para(MIN, 'a'), para(MIN, 'b'));
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn short_paragraph_merges_into_next() {
        let text = format!("{}{}{}", para(200, 'a'), para(MIN - 1, 'b'), para(200, 'c'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| p.chars).collect::<Vec<_>>(),
            vec![200, MIN - 1 + 200]
        );
    }

    #[test]
    fn run_of_short_paragraphs_accumulates() {
        // 5 × 30 chars: 30 → 60 → 90 → 120 (stops) → then 30 alone at the end
        // merges into the previous.
        let text: String = (0..5).map(|_| para(30, 's')).collect::<String>() + &para(200, 'a');
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| p.chars).collect::<Vec<_>>(),
            vec![120, 230]
        );
        let text: String = (0..5).map(|_| para(30, 's')).collect();
        let ps = split(&text);
        assert_eq!(ps.iter().map(|p| p.chars).collect::<Vec<_>>(), vec![150]);
    }

    #[test]
    fn heading_merges_with_its_body() {
        let body = "b".repeat(200);
        let text = format!("## Retries\n\n{body}\n\n## Timeouts\n\n{body}\n");
        assert_eq!(
            texts(&text),
            vec![
                format!("## Retries\n\n{body}\n\n"),
                format!("## Timeouts\n\n{body}\n")
            ]
        );
    }

    #[test]
    fn short_paragraph_before_fence_merges_into_the_fence() {
        let code = "x".repeat(130);
        let text = format!(
            "{}Example:\n\n```\n{code}\n\n{code}\n```\n\n{}",
            para(200, 'a'),
            para(200, 'c')
        );
        let t = texts(&text);
        assert_eq!(t.len(), 3);
        assert!(t[1].starts_with("Example:\n\n```\n") && t[1].ends_with("```\n\n"));
    }

    #[test]
    fn short_last_paragraph_merges_into_previous() {
        let text = format!("{}{}{}", para(200, 'a'), para(200, 'b'), "end");
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| p.chars).collect::<Vec<_>>(),
            vec![200, 203]
        );
    }

    #[test]
    fn short_text_is_one_short_paragraph() {
        let ps = split("hi");
        assert_eq!(
            ps,
            vec![Paragraph {
                start: 0,
                end: 2,
                chars: 2,
                fixed: false
            }]
        );
    }

    #[test]
    fn merge_that_would_pass_6000_stays_alone() {
        // short + next > 6000: stays alone (and is not pushed backwards).
        let text = format!("{}{}{}", para(200, 'a'), para(100, 's'), para(5_950, 'b'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| p.chars).collect::<Vec<_>>(),
            vec![200, 100, 5_950]
        );
        // last short + previous > 6000: stays alone.
        let text = format!("{}{}", para(5_950, 'b'), para(100, 's'));
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn merge_reaching_exactly_6000_is_allowed() {
        let text = format!("{}{}", para(100, 's'), para(5_900, 'b'));
        let ps = split(&text);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].chars, MAX);
        assert!(!ps[0].fixed);
    }

    #[test]
    fn accumulated_run_stops_before_passing_6000() {
        // 100 + 100 merge (200 ≥ 120 stops): no accumulation issue; but
        // 100 then 5_901: 6_001 would pass → stays alone.
        let text = format!("{}{}{}", para(100, 's'), para(5_901, 'b'), para(300, 'c'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| p.chars).collect::<Vec<_>>(),
            vec![100, 5_901, 300]
        );
    }

    #[test]
    fn fixed_paragraph_never_merges() {
        // Short before fixed: alone. Short after fixed, last: alone.
        let text = format!("{}{}{}", para(50, 's'), para(7_000, 'f'), para(50, 't'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| (p.chars, p.fixed)).collect::<Vec<_>>(),
            vec![(50, false), (7_000, true), (50, false)]
        );
        // Short after fixed, not last: merges forward, never backward.
        let text = format!("{}{}{}", para(7_000, 'f'), para(50, 's'), para(200, 'a'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| (p.chars, p.fixed)).collect::<Vec<_>>(),
            vec![(7_000, true), (250, false)]
        );
        // Two fixed in a row stay two.
        let text = format!("{}{}", para(7_000, 'f'), para(6_001, 'g'));
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn huge_fence_is_one_fixed_paragraph() {
        let code: String = (0..200)
            .map(|_| format!("{}\n\n", "x".repeat(40)))
            .collect();
        let text = format!("{}```\n{code}```\n\n{}", para(200, 'a'), para(200, 'b'));
        let ps = split(&text);
        assert_eq!(ps.len(), 3);
        assert!(ps[1].fixed && !ps[0].fixed && !ps[2].fixed);
    }

    // ----- Robustness -----

    #[test]
    fn never_panics_on_odd_inputs() {
        for t in [
            "\r",
            "\n",
            "\r\n",
            "\r\r\n\n",
            "```",
            "~~~",
            "> ```",
            ">",
            "- ",
            "1.",
            "1234567890. ```",
            "\u{FEFF}",
            "\u{FEFF}\r",
            "```\r```",
            "> > > ```\n>",
            "😀\r😀",
            "\0\n\0",
            "*\t```\n",
        ] {
            check_invariants(t);
        }
    }

    #[test]
    fn ten_megabytes_split_in_linear_time() {
        let n = 10 * 1024 * 1024;
        let inputs = [
            "ab\n\n".repeat(n / 4),
            "```\n\n".repeat(n / 5),
            format!("> ```\n{}", "> x\n".repeat(n / 4)),
            ">".repeat(n),
            format!("{}\n\n", "あ".repeat(n / 3)),
            "\r".repeat(n),
            format!("```\n{}", " ".repeat(n)),
        ];
        let t0 = std::time::Instant::now();
        for t in &inputs {
            check_invariants(t);
        }
        // Generous even for an unoptimized build; quadratic would take hours.
        assert!(t0.elapsed().as_secs() < 120, "{:?}", t0.elapsed());
    }

    // ----- Property tests -----

    fn fragment() -> impl Strategy<Value = &'static str> {
        prop::sample::select(vec![
            "```",
            "~~~",
            "````",
            "`",
            "\n",
            "\r\n",
            "\r",
            " ",
            "\t",
            "> ",
            ">",
            "- ",
            "1. ",
            "a",
            "あ",
            "😀",
            "\u{FEFF}",
            "\u{3000}",
            "\u{2028}",
            "\u{85}",
            "word word ",
        ])
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2_000))]

        #[test]
        fn spans_tile_and_chars_are_counted_for_any_string(s in any::<String>()) {
            check_invariants(&s);
        }

        #[test]
        fn spans_tile_for_markdown_like_fragments(parts in prop::collection::vec(fragment(), 0..200)) {
            check_invariants(&parts.concat());
        }

        #[test]
        fn merging_rules_hold_for_long_texts(
            sizes in prop::collection::vec((1usize..400, 0usize..4), 1..60),
            big in prop::collection::vec(0usize..8_000, 0..3),
        ) {
            let mut text = String::new();
            for (n, blanks) in sizes {
                text.push_str(&"w".repeat(n));
                text.push_str(&"\n".repeat(blanks + 1));
            }
            for n in big {
                text.push_str(&"L".repeat(n));
                text.push_str("\n\n");
            }
            check_invariants(&text);
        }

        #[test]
        fn fence_block_is_never_split(
            before in prop::collection::vec(0usize..300, 0..5),
            inner in prop::collection::vec((0usize..80, 0usize..3), 0..20),
            after in prop::collection::vec(0usize..300, 0..5),
            tilde in any::<bool>(),
            crlf in any::<bool>(),
        ) {
            let nl = if crlf { "\r\n" } else { "\n" };
            let fence = if tilde { "~~~" } else { "```" };
            let mut text = String::new();
            for n in before { text.push_str(&"b".repeat(n)); text.push_str(nl); text.push_str(nl); }
            let f_start = text.len();
            text.push_str(fence); text.push_str("info"); text.push_str(nl);
            for (n, blanks) in inner {
                text.push_str(&"c".repeat(n)); text.push_str(&nl.repeat(blanks + 1));
            }
            text.push_str(fence);
            let f_end = text.len();
            text.push_str(nl); text.push_str(nl);
            for n in after { text.push_str(&"a".repeat(n)); text.push_str(nl); text.push_str(nl); }
            check_invariants(&text);
            let ps = split(&text);
            prop_assert!(ps.iter().any(|p| p.start <= f_start && f_end <= p.end));
        }
    }

    // ----- The shared edge cases (../../shared/cases) -----

    const CASES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/cases/");

    /// Count lines that look like fence lines (naive, independent of the
    /// splitter): every paragraph but the last must hold an even number.
    fn fence_lines(t: &str) -> usize {
        t.lines()
            .filter(|l| {
                let l = l.trim_start();
                l.starts_with("```") || l.starts_with("~~~")
            })
            .count()
    }

    fn check_case(file: &str, props: &[String]) -> Vec<String> {
        let mut checked = Vec::new();
        let path = format!("{CASES}{file}");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let ps = split(&text);
        let units: Vec<&str> = ps.iter().map(|p| &text[p.start..p.end]).collect();
        for prop in props {
            let (name, arg) = prop.split_once(':').unwrap_or((prop.as_str(), ""));
            match name {
                "reassembly_exact" => {
                    check_invariants(&text);
                    assert_eq!(units.concat(), text, "{file}: {prop}");
                }
                "unit_contains" => {
                    // "A|B": the separator is the last '|' (A may hold '|').
                    let (a, b) = arg.rsplit_once('|').expect("A|B");
                    assert!(
                        units.iter().any(|u| u.contains(a) && u.contains(b)),
                        "{file}: {a:?} and {b:?} not in one paragraph"
                    );
                }
                "fence_units_balanced_or_last" => {
                    for (i, u) in units.iter().enumerate() {
                        if i + 1 < units.len() {
                            assert_eq!(fence_lines(u) % 2, 0, "{file}: paragraph {i} unbalanced");
                        }
                    }
                }
                "same_units_as" => {
                    let other = std::fs::read_to_string(format!("{CASES}{arg}")).unwrap();
                    let shape = |t: &str| -> Vec<usize> {
                        split(t)
                            .iter()
                            .map(|p| t[p.start..p.end].chars().filter(|&c| c != '\r').count())
                            .collect()
                    };
                    assert_eq!(shape(&text), shape(&other), "{file}: {prop}");
                }
                "units" => {
                    assert_eq!(ps.len(), arg.parse::<usize>().unwrap(), "{file}: {prop}");
                }
                "units_at_least" => {
                    assert!(
                        ps.len() >= arg.parse::<usize>().unwrap(),
                        "{file}: {prop}: {}",
                        ps.len()
                    );
                }
                "heading_with_body" => {
                    let mut headings = 0;
                    for u in &units {
                        if u.trim_start().starts_with('#') {
                            headings += 1;
                            let body = u
                                .lines()
                                .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
                            assert!(body.count() > 0, "{file}: heading alone: {u:?}");
                        }
                    }
                    assert!(headings > 0, "{file}: no heading found");
                }
                "bom_kept" => {
                    assert!(text.starts_with('\u{FEFF}'));
                    assert!(units[0].starts_with('\u{FEFF}'), "{file}: BOM lost");
                }
                "chars_are_scalar_values" => {
                    for p in &ps {
                        assert_eq!(p.chars, text[p.start..p.end].chars().count());
                    }
                    assert_eq!(
                        ps.iter().map(|p| p.chars).sum::<usize>(),
                        text.chars().count()
                    );
                }
                "one_unscored_kept_unit" => {
                    assert_eq!(ps.iter().filter(|p| p.fixed).count(), 1, "{file}: {prop}");
                }
                // Not about splitting: gates, scoring, JSON, output.
                _ => continue,
            }
            checked.push(prop.clone());
        }
        checked
    }

    #[test]
    fn shared_cases_split_properties_hold() {
        let index = std::fs::read_to_string(format!("{CASES}cases.json")).expect("cases.json");
        let cases: serde_json::Value = serde_json::from_str(&index).expect("cases.json parses");
        let mut checked = 0;
        for case in cases.as_array().expect("array") {
            let file = case["file"].as_str().expect("file");
            let props: Vec<String> = case["expect"]
                .as_array()
                .expect("expect")
                .iter()
                .map(|v| v.as_str().expect("string").to_owned())
                .collect();
            if let Some(n) = case["chars"].as_u64() {
                let text = std::fs::read_to_string(format!("{CASES}{file}")).unwrap();
                assert_eq!(text.chars().count() as u64, n, "{file}: chars");
            }
            checked += check_case(file, &props).len();
        }
        assert!(checked >= 20, "only {checked} properties checked");
    }
}
