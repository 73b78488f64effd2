//! SPEC §4 steps 1–5: fenced blocks, blank lines, fixed paragraphs, merging.
//!
//! [`split`] cuts a text into [`Paragraph`]s: byte spans that tile the text
//! exactly (`p[0].start == 0`, `p[i].end == p[i + 1].start`,
//! `last.end == text.len()`), so joining them gives the input back byte for
//! byte. Every count is in characters (Unicode scalar values,
//! `str::chars().count()`): `chars` counts the whole span, separators
//! included; the limits of steps 3–4 use the *measured length* below.
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
//! SPEC §4 wins over CommonMark here: CommonMark's blank lines hold only
//! spaces and tabs, SPEC's any Unicode whitespace (a line of U+3000 in
//! Japanese text). This module uses SPEC's everywhere, also where CommonMark
//! asks "is the rest of the line blank?" in step 1.
//!
//! # Step 1 — fences, as CommonMark's block structure decides them
//!
//! Which lines belong to a fenced code block is decided line by line as in
//! CommonMark's parsing strategy (spec 0.31.2, appendix), keeping only what
//! decides fences: the open containers (block quotes, list items, outermost
//! first) and the open leaf of the innermost one (a paragraph, an indented
//! code block, a fence, or none). Columns count tabs to the next multiple of
//! 4; a tab may be used in part. Indentation is counted from where the
//! matched containers end. For each line:
//!
//! 1. **Containers go on.** Each open container in turn must continue: a
//!    block quote with `>` indented at most 3 columns (then one optional
//!    space or tab column); a list item with an indentation of at least its
//!    content column, or with a blank rest of line if the item already holds
//!    a block (an item begun on an empty marker line ends at a blank line).
//!    A blank rest of line therefore ends every block quote from there on.
//! 2. **An open fence** whose containers all went on takes the line: it is
//!    the **closing fence** when, indented at most 3 columns, it holds a run
//!    of the opener's character at least as long as the opener followed only
//!    by spaces and tabs, and fence content otherwise. An open indented code
//!    block likewise takes a line indented 4 or more columns, or blank.
//! 3. **New blocks** start where the matched containers end, first match
//!    wins: indentation of 4 or more columns is indented code — or, when a
//!    paragraph is open, its continuation — so such a line never opens nor
//!    closes a fence; `>` opens a block quote; 1–6 `#` then a space, tab or
//!    the end is an ATX heading; an **opening fence** is a run of ≥ 3
//!    backticks or ≥ 3 tildes, a backtick run's info string holding no
//!    backtick (so ``` ```inline``` ``` is no fence); `=`s or `-`s alone right
//!    under an open paragraph are a setext underline; three or more `*`, `-`
//!    or `_` alone (spaces and tabs between) are a thematic break; a list
//!    marker (`-`, `+`, `*`, or 1–9 digits then `.` or `)`, then a space, a
//!    tab or the end of the line) opens a list item whose content column is
//!    the marker's end plus the 1–4 columns of spaces after it (plus 1
//!    when there are 5 or more, or nothing follows); to interrupt a
//!    paragraph the item may not be empty and an ordered one must start
//!    at 1. After a block quote or a list item, new blocks may start again
//!    on the same line (`> - ```` ` is a fence in a list item in a block
//!    quote).
//! 4. **Closing.** A line that starts nothing while a paragraph is open and
//!    some container did not go on is a lazy continuation line: nothing
//!    closes. Otherwise the containers that did not go on close, with their
//!    leaf: **a fence ends with its block quote or list item**. The line is
//!    then read afresh (a quoted "closing" fence after a blank line opens a
//!    new fence). A fence that nothing ends runs to the end of the text.
//!
//! A line belongs to a fence when it opens, continues or closes one. Not
//! modelled, as SPEC §4 names only fences: HTML blocks (a fence line inside
//! raw HTML still counts). Dialects are read as CommonMark reads them: a
//! fence indented 4 or more columns past its list item's content (as MkDocs'
//! content tabs write it) is indented code, whose blank lines split.
//!
//! # Step 2 — blocks
//!
//! Walking the lines, a non-blank line (or any line inside a fence) that
//! follows one or more blank lines (outside fences) after some earlier
//! non-blank line starts a new block there. So blank lines are a trailing
//! separator belonging to the block before them, and blank lines at the very
//! start belong to the first block. A text of blank lines only is one block.
//!
//! # Steps 3–4 — measuring, fixed paragraphs and merging
//!
//! The **measured length** of a span is the number of characters of the span
//! without its leading and trailing whitespace (`char::is_whitespace`, and
//! the U+FEFF at the start of the text), a `\r\n` counting as one character.
//! So the trailing separator (the last line end and the blank lines after
//! it), the blank lines at the start of the text and the first line's
//! indentation never count, and a CRLF text measures as its LF twin; blank
//! lines *between* the blocks of a merged paragraph do count.
//!
//! A block measuring more than `MAX_PARAGRAPH_CHARS` (6,000) is *fixed*.
//! Then, left to right with an accumulator `acc` (initially the first
//! block), for each next block `b`:
//!
//! * if `acc` is not fixed, measures less than `MIN_PARAGRAPH_CHARS` (120),
//!   `b` is not fixed and `acc` joined with `b` measures `<= 6000`, then
//!   `acc` absorbs `b` (the short paragraph merges into the next one) and is
//!   measured again, so a run of short blocks keeps accumulating until it
//!   reaches 120;
//! * otherwise `acc` is final (pushed) and `b` becomes the new `acc`.
//!
//! At the end `acc` is pushed. If that last paragraph measures less than
//! 120, has a previous paragraph, that previous one is not fixed, and the two
//! joined measure `<= 6000`, it merges into the previous one (it has no
//! next). No further cascade is needed: the previous one then measures ≥ 120
//! (a shorter one would already have absorbed it, as the same test would
//! have passed).
//!
//! A merged paragraph therefore never measures more than 6,000 and is never
//! fixed; a fixed paragraph is exactly one block. A paragraph measuring less
//! than 120 survives only when its neighbour is fixed, the merge would pass
//! 6,000, or it is the whole text.
//!
//! # Step 5
//!
//! The paragraphs are numbered by their index in the returned `Vec`, from 0.
//! A paragraph without a visible character (only whitespace, control
//! characters and default-ignorable code points such as U+200B or U+FEFF)
//! is not [`Paragraph::scorable`] (nor is a fixed one): never batched nor
//! sent, kept, reported `unscored`.
//!
//! Runs in O(n) time over the text and never panics: all slicing is at ASCII
//! bytes (`\r`, `\n`, `>`, markers, spaces), at a leading BOM or after whole
//! whitespace characters, which are always char boundaries; each line costs
//! O(its length) plus the containers it closes, and a blank line skips the
//! run of list items up to the next block quote at once.

use crate::limits::{MAX_PARAGRAPH_CHARS, MIN_PARAGRAPH_CHARS};

/// One paragraph: a byte span of the text that, with its neighbours, tiles it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paragraph {
    /// Byte offset where the paragraph starts (inclusive).
    pub start: usize,
    /// Byte offset where it ends (exclusive); the next paragraph starts here.
    pub end: usize,
    /// Characters (Unicode scalar values) in `start..end`, separators
    /// included: what the paragraph weighs in the text (markers, counts,
    /// batches, `omitted`).
    pub chars: usize,
    /// Measures more than 6,000 characters: unscored and kept (SPEC §4.3).
    pub fixed: bool,
    /// The length SPEC §4.3–§4.4's limits measure (characters without the
    /// surrounding whitespace, `\r\n` as one; see the module doc).
    pub measured: usize,
    /// Holds at least one visible character: not whitespace, not a control
    /// character, not a default-ignorable code point (U+200B, U+FEFF, …).
    pub visible: bool,
}

impl Paragraph {
    /// Is the paragraph scored (batched and sent, SPEC §4.6)? Not when it is
    /// fixed (SPEC §4.3), nor when it has no visible character: then it is
    /// kept and reported unscored, and no scorer call is paid for it.
    pub fn scorable(&self) -> bool {
        !self.fixed && self.visible
    }
}

/// What is sent to the scorer for a paragraph `span` (its bytes in the
/// text): the span without the blank lines before its first visible line and
/// without its trailing whitespace (the separator). What a scorer reads is
/// what the limits measured; the separator still travels with the paragraph
/// in the body and in `omitted` answers.
pub fn content(span: &str) -> &str {
    let mut start = 0;
    for line in span.split_inclusive(['\n', '\r']) {
        if line.chars().all(char::is_whitespace) {
            start += line.len();
        } else {
            break;
        }
    }
    span[start..].trim_end()
}

/// Split `text` into paragraphs (SPEC §4.1–§4.5). See the module doc for the
/// exact algorithm. Empty text gives no paragraph.
pub fn split(text: &str) -> Vec<Paragraph> {
    if text.is_empty() {
        return Vec::new();
    }
    merge(text, &blocks(text))
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

/// The lines of `text` without their terminators, which are CommonMark's
/// (`\n`, `\r\n` and a lone `\r`, SPEC §4.2), for every rule that reads
/// lines (`str::lines` does not end a line at a lone `\r`).
pub fn line_texts(text: &str) -> impl Iterator<Item = &str> + '_ {
    lines(text).map(move |l| &text[l.start..l.content_end])
}

// ----- Step 1: CommonMark's block structure, as far as fences need it -----

/// An open fenced code block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Fence {
    /// `b'`'` or `b'~'`.
    ch: u8,
    /// Length of the opening run (≥ 3).
    len: usize,
}

/// An open container block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Container {
    Quote,
    /// A list item: `indent` columns (past the containers before it) reach
    /// its content; `holds` once it holds a block.
    Item {
        indent: usize,
        holds: bool,
    },
}

/// The open leaf block of the innermost container.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Leaf {
    #[default]
    Nothing,
    Paragraph,
    IndentedCode,
    Fence(Fence),
}

/// A place in a line: byte `pos` and column `col`. When the byte at `pos` is
/// a tab already partly used, `col` lies inside it (its width left is
/// `4 - col % 4`).
#[derive(Debug, Clone, Copy, Default)]
struct Cursor {
    pos: usize,
    col: usize,
}

/// The first byte at or after `c` that is not a space or tab.
fn next_nonspace(b: &[u8], mut c: Cursor) -> Cursor {
    while let Some(&x) = b.get(c.pos) {
        match x {
            b' ' => c.col += 1,
            b'\t' => c.col += 4 - c.col % 4,
            _ => break,
        }
        c.pos += 1;
    }
    c
}

/// Use `n` columns of spaces and tabs from `c` (a tab may be used in part);
/// stops early at anything else.
fn advance(b: &[u8], mut c: Cursor, mut n: usize) -> Cursor {
    while n > 0 {
        match b.get(c.pos) {
            Some(b' ') => {
                c.pos += 1;
                c.col += 1;
                n -= 1;
            }
            Some(b'\t') => {
                let w = 4 - c.col % 4;
                if w <= n {
                    c.pos += 1;
                    c.col += w;
                    n -= w;
                } else {
                    c.col += n;
                    n = 0;
                }
            }
            _ => break,
        }
    }
    c
}

/// Past a `>` at `c`: its column and one optional space or tab column.
fn after_quote_marker(b: &[u8], c: Cursor) -> Cursor {
    let c = Cursor {
        pos: c.pos + 1,
        col: c.col + 1,
    };
    if matches!(b.get(c.pos), Some(b' ' | b'\t')) {
        advance(b, c, 1)
    } else {
        c
    }
}

/// `s` is a run of ≥ 3 backticks or tildes; a backtick run's info string
/// holds no backtick.
fn opening_fence(s: &[u8]) -> Option<Fence> {
    let ch = *s.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = s.iter().take_while(|&&c| c == ch).count();
    if len < 3 || (ch == b'`' && s[len..].contains(&b'`')) {
        return None;
    }
    Some(Fence { ch, len })
}

/// `s` closes `fence`: a run of its character at least as long as the
/// opener, then only spaces and tabs.
fn closes(s: &[u8], fence: Fence) -> bool {
    let run = s.iter().take_while(|&&c| c == fence.ch).count();
    run >= fence.len && s[run..].iter().all(|&c| c == b' ' || c == b'\t')
}

/// 1–6 `#` then a space, a tab or the end.
fn atx_heading(s: &[u8]) -> bool {
    let n = s.iter().take_while(|&&c| c == b'#').count();
    (1..=6).contains(&n) && matches!(s.get(n), None | Some(b' ' | b'\t'))
}

/// A run of `=` or of `-`, then only spaces and tabs.
fn setext_underline(s: &[u8]) -> bool {
    let Some(&ch) = s.first().filter(|&&c| c == b'=' || c == b'-') else {
        return false;
    };
    let run = s.iter().take_while(|&&c| c == ch).count();
    s[run..].iter().all(|&c| c == b' ' || c == b'\t')
}

/// For each thematic-break character (`*`, `-`, `_`), where the line's tail
/// made only of it, spaces and tabs begins: found once per line, so that
/// asking again after each list marker stays linear.
struct BreakTails([usize; 3]);

impl BreakTails {
    fn new(b: &[u8]) -> BreakTails {
        let tail = |ch: u8| {
            b.iter()
                .rposition(|&c| c != ch && c != b' ' && c != b'\t')
                .map_or(0, |i| i + 1)
        };
        BreakTails([tail(b'*'), tail(b'-'), tail(b'_')])
    }

    /// `b[pos..]` is a thematic break: three or more of one of `*`, `-`,
    /// `_`, with only spaces and tabs besides.
    fn at(&self, b: &[u8], pos: usize) -> bool {
        let Some(&ch) = b.get(pos) else { return false };
        let tail = match ch {
            b'*' => self.0[0],
            b'-' => self.0[1],
            b'_' => self.0[2],
            _ => return false,
        };
        pos >= tail && b[pos..].iter().filter(|&&c| c == ch).take(3).count() == 3
    }
}

/// A list marker at `nn` (the first non-space after `cur`): the item's
/// content indentation counted from `cur`, and where its content starts.
/// `end` is where the line's blank rest starts; `interrupting` when the
/// marker would interrupt an open paragraph.
fn list_item(
    b: &[u8],
    end: usize,
    cur: Cursor,
    nn: Cursor,
    interrupting: bool,
) -> Option<(usize, Cursor)> {
    let s = &b[nn.pos..];
    let (width, starts_at_one) = match *s.first()? {
        b'-' | b'+' | b'*' => (1, true),
        b'0'..=b'9' => {
            let digits = s.iter().take(10).take_while(|c| c.is_ascii_digit()).count();
            if digits > 9 || !matches!(s.get(digits), Some(b'.' | b')')) {
                return None;
            }
            let one = s[..digits].iter().rev().skip(1).all(|&c| c == b'0') && s[digits - 1] == b'1';
            (digits + 1, one)
        }
        _ => return None,
    };
    if !matches!(s.get(width), None | Some(b' ' | b'\t')) {
        return None;
    }
    let marker_end = Cursor {
        pos: nn.pos + width,
        col: nn.col + width,
    };
    let empty = marker_end.pos >= end;
    if interrupting && (empty || !starts_at_one) {
        return None;
    }
    let mut c = marker_end;
    while c.col - marker_end.col < 5 && matches!(b.get(c.pos), Some(b' ' | b'\t')) {
        c = advance(b, c, 1);
    }
    let spaces = c.col - marker_end.col;
    let (padding, content) = if spaces >= 5 || c.pos >= end {
        let one = if matches!(b.get(marker_end.pos), Some(b' ' | b'\t')) {
            advance(b, marker_end, 1)
        } else {
            marker_end
        };
        (width + 1, one)
    } else {
        (width + spaces, c)
    };
    Some((nn.col - cur.col + padding, content))
}

/// The open blocks while reading the lines (CommonMark's document tree,
/// reduced to its open path).
#[derive(Default)]
struct Structure {
    /// Open containers, outermost first.
    stack: Vec<Container>,
    /// Positions in `stack` of its block quotes, ascending.
    quotes: Vec<usize>,
    /// The open leaf of the innermost container.
    leaf: Leaf,
    /// Fences opened so far (which fence a line belongs to).
    fences: usize,
}

impl Structure {
    /// Close the containers from `keep` on.
    fn close(&mut self, keep: usize) {
        if keep < self.stack.len() {
            self.stack.truncate(keep);
            self.leaf = Leaf::Nothing;
            while self.quotes.last().is_some_and(|&q| q >= keep) {
                self.quotes.pop();
            }
        }
    }

    /// The innermost container now holds a block.
    fn holds(&mut self) {
        if let Some(Container::Item { holds, .. }) = self.stack.last_mut() {
            *holds = true;
        }
    }

    fn open(&mut self, c: Container) {
        self.holds();
        if c == Container::Quote {
            self.quotes.push(self.stack.len());
        }
        self.stack.push(c);
        self.leaf = Leaf::Nothing;
    }

    /// Read one line (terminator excluded): does it belong to a fenced code
    /// block (opening, content or closing fence)? Steps 1–4 of the module doc.
    /// `end` is where the line's blank rest begins (0 for a blank line).
    fn line(&mut self, content: &str, end: usize) -> bool {
        let b = content.as_bytes();
        let mut cur = Cursor::default();
        let mut nn = next_nonspace(b, cur);

        // 1. Containers go on.
        let open = self.stack.len();
        let mut matched = 0;
        let mut quotes_matched = 0;
        while matched < open {
            if nn.pos >= end {
                // Blank rest: items holding a block go on, the next block
                // quote does not.
                matched = self.quotes.get(quotes_matched).copied().unwrap_or(open);
                if matched == open
                    && matches!(
                        self.stack.last(),
                        Some(Container::Item { holds: false, .. })
                    )
                {
                    matched -= 1;
                }
                break;
            }
            match self.stack[matched] {
                Container::Quote if nn.col - cur.col <= 3 && b[nn.pos] == b'>' => {
                    cur = after_quote_marker(b, nn);
                    nn = next_nonspace(b, cur);
                    quotes_matched += 1;
                }
                Container::Item { indent, .. } if nn.col - cur.col >= indent => {
                    cur = advance(b, cur, indent)
                }
                _ => break,
            }
            matched += 1;
        }
        let all_matched = matched == open;

        // 2. The open leaf takes the line.
        let mut paragraph_goes_on = false;
        if all_matched {
            match self.leaf {
                Leaf::Fence(f) => {
                    if nn.pos < end && nn.col - cur.col <= 3 && closes(&b[nn.pos..], f) {
                        self.leaf = Leaf::Nothing;
                    }
                    return true;
                }
                Leaf::IndentedCode if nn.pos >= end || nn.col - cur.col >= 4 => return false,
                Leaf::Paragraph => paragraph_goes_on = nn.pos < end,
                _ => {}
            }
        }

        // 3. New blocks.
        let mut tails = None;
        let mut started = false;
        while nn.pos < end {
            let s = &b[nn.pos..];
            let interrupting = paragraph_goes_on && !started;
            if nn.col - cur.col >= 4 {
                if !started && self.leaf == Leaf::Paragraph {
                    break; // continuation text, lazy or not
                }
                self.close(matched);
                self.holds();
                self.leaf = Leaf::IndentedCode;
                return false;
            }
            if s[0] == b'>' {
                self.close(matched);
                self.open(Container::Quote);
                started = true;
                cur = after_quote_marker(b, nn);
                nn = next_nonspace(b, cur);
                matched = self.stack.len();
                continue;
            }
            if let Some(f) = opening_fence(s) {
                self.close(matched);
                self.holds();
                self.leaf = Leaf::Fence(f);
                self.fences += 1;
                return true;
            }
            let thematic = matches!(s[0], b'*' | b'-' | b'_')
                && tails
                    .get_or_insert_with(|| BreakTails::new(b))
                    .at(b, nn.pos);
            if atx_heading(s) || (interrupting && setext_underline(s)) || thematic {
                self.close(matched);
                self.holds();
                self.leaf = Leaf::Nothing;
                return false;
            }
            if let Some((indent, content)) = list_item(b, end, cur, nn, interrupting) {
                self.close(matched);
                self.open(Container::Item {
                    indent,
                    holds: false,
                });
                started = true;
                cur = content;
                nn = next_nonspace(b, cur);
                matched = self.stack.len();
                continue;
            }
            break;
        }

        // 4. Closing, and the paragraph.
        let blank = nn.pos >= end;
        if !started && !all_matched && !blank && self.leaf == Leaf::Paragraph {
            return false; // lazy continuation: everything stays open
        }
        self.close(matched);
        if blank {
            self.leaf = Leaf::Nothing;
        } else if !paragraph_goes_on || started {
            self.holds();
            self.leaf = Leaf::Paragraph;
        }
        false
    }
}

// ----- Step 2 -----

/// SPEC §4.1–§4.2: the blocks (byte spans tiling the text) before merging.
fn blocks(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut cur_start = 0;
    let mut seen_content = false;
    let mut after_blank = false;
    // Blank lines read as a fence's content: whether they were is only
    // known at the next visible line (issue 27 §3).
    let mut blank_in_fence: Option<usize> = None;
    let mut structure = Structure::default();

    for line in lines(text) {
        let mut content = &text[line.start..line.content_end];
        if line.start == 0 {
            content = content.strip_prefix('\u{FEFF}').unwrap_or(content);
        }
        // Where the blank rest of the line begins: 0 when the line is blank.
        let end = content_len(content);
        let in_fence = structure.line(content, end);
        if end == 0 {
            if in_fence {
                blank_in_fence = blank_in_fence.or(Some(structure.fences));
            } else {
                after_blank = true;
            }
            continue;
        }
        // A fence ends with its closing line (part of it) or with its
        // container: a list item ends at a line dedented after blank
        // lines, and so did the fence, before those blank lines. They
        // separate, as CommonMark reads them.
        if blank_in_fence.is_some_and(|fence| !in_fence || structure.fences != fence) {
            after_blank = true;
        }
        blank_in_fence = None;
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

// ----- Steps 3–5 -----

/// A block, or blocks merged, with what merging needs to measure it again.
#[derive(Debug, Clone, Copy)]
struct Piece {
    start: usize,
    end: usize,
    /// Characters in `start..end`.
    chars: usize,
    /// The measured length (module doc); 0 exactly when all is whitespace.
    measured: usize,
    /// Measured length of the whitespace before the first visible part (all
    /// of the piece when `measured` is 0) and after the last one (then 0).
    lead: usize,
    trail: usize,
    visible: bool,
}

impl Piece {
    fn new(text: &str, start: usize, end: usize) -> Piece {
        let span = &text[start..end];
        let bom = if start == 0 && span.starts_with('\u{FEFF}') {
            '\u{FEFF}'.len_utf8()
        } else {
            0
        };
        let body_start = bom + blank_prefix(&span[bom..]);
        let body_end = body_start + content_len(&span[body_start..]);
        let body = &span[body_start..body_end];
        // No `\r\n` straddles these cuts: the body starts and ends with a
        // character that is not whitespace.
        let (lead, body_len, trail) = (
            count(&span[..body_start]),
            count(body),
            count(&span[body_end..]),
        );
        Piece {
            start,
            end,
            chars: lead.0 + body_len.0 + trail.0,
            measured: body_len.0 - body_len.1,
            lead: lead.0 - lead.1,
            trail: trail.0 - trail.1,
            visible: body.chars().any(is_visible),
        }
    }

    fn fixed(&self) -> bool {
        self.measured > MAX_PARAGRAPH_CHARS
    }

    /// This piece and the one right after it, as one.
    fn join(&self, b: &Piece) -> Piece {
        let (measured, lead, trail) = match (self.measured, b.measured) {
            (0, 0) => (0, self.lead + b.lead, 0),
            (0, _) => (b.measured, self.lead + b.lead, b.trail),
            (_, 0) => (self.measured, self.lead, self.trail + b.lead),
            _ => (
                self.measured + self.trail + b.lead + b.measured,
                self.lead,
                b.trail,
            ),
        };
        Piece {
            start: self.start,
            end: b.end,
            chars: self.chars + b.chars,
            measured,
            lead,
            trail,
            visible: self.visible || b.visible,
        }
    }

    fn paragraph(&self) -> Paragraph {
        Paragraph {
            start: self.start,
            end: self.end,
            chars: self.chars,
            fixed: self.fixed(),
            measured: self.measured,
            visible: self.visible,
        }
    }
}

/// `s.trim_start()` cut off this many bytes (`char::is_whitespace`), read
/// ASCII byte by byte: a separator can be megabytes of blank lines.
fn blank_prefix(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c.is_ascii() {
            if !is_ascii_whitespace(c) {
                break;
            }
            i += 1;
        } else {
            match s[i..].chars().next() {
                Some(ch) if ch.is_whitespace() => i += ch.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// `s.trim_end().len()`, read as [`blank_prefix`] reads.
fn content_len(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = b.len();
    while i > 0 {
        let c = b[i - 1];
        if c.is_ascii() {
            if !is_ascii_whitespace(c) {
                break;
            }
            i -= 1;
        } else {
            match s[..i].chars().next_back() {
                Some(ch) if ch.is_whitespace() => i -= ch.len_utf8(),
                _ => break,
            }
        }
    }
    i
}

/// The ASCII characters for which `char::is_whitespace` holds: tab, line
/// feed, vertical tab, form feed, carriage return, space.
fn is_ascii_whitespace(c: u8) -> bool {
    c == b' ' || (b'\t'..=b'\r').contains(&c)
}

/// Characters in `s`, and the `\r\n` pairs among them.
fn count(s: &str) -> (usize, usize) {
    let b = s.as_bytes();
    let mut crlf = 0;
    if let Some(first) = memchr::memchr(b'\r', b) {
        // A plain loop from the first `\r`: a text of many line ends would
        // make one search per `\r`.
        for i in first..b.len().saturating_sub(1) {
            crlf += usize::from(b[i] == b'\r' && b[i + 1] == b'\n');
        }
    }
    (s.chars().count(), crlf)
}

/// Not whitespace, not a control character, not a default-ignorable code
/// point (Unicode `Default_Ignorable_Code_Point`: soft hyphen, zero-width
/// spaces and joiners, bidi controls, variation selectors, BOM, tags, …).
fn is_visible(c: char) -> bool {
    !(c.is_whitespace()
        || c.is_control()
        || matches!(c as u32,
            0x00AD | 0x034F | 0x061C | 0x115F..=0x1160 | 0x17B4..=0x17B5 | 0x180B..=0x180F
            | 0x200B..=0x200F | 0x202A..=0x202E | 0x2060..=0x206F | 0x3164 | 0xFE00..=0xFE0F
            | 0xFEFF | 0xFFA0 | 0xFFF0..=0xFFF8 | 0x1BCA0..=0x1BCA3 | 0x1D173..=0x1D17A
            | 0xE0000..=0xE0FFF))
}

/// SPEC §4.3–§4.4: fix the long blocks, merge the short ones.
fn merge(text: &str, blocks: &[(usize, usize)]) -> Vec<Paragraph> {
    let mut out: Vec<Piece> = Vec::with_capacity(blocks.len());
    let mut acc: Option<Piece> = None;
    for &(start, end) in blocks {
        let b = Piece::new(text, start, end);
        acc = Some(match acc.take() {
            None => b,
            Some(a) => match merged(&a, &b, &a) {
                Some(m) => m,
                None => {
                    out.push(a);
                    b
                }
            },
        });
    }
    out.extend(acc);

    // The last paragraph has no next: a short one merges into the previous.
    if out.len() >= 2 {
        let last = out[out.len() - 1];
        let prev = out[out.len() - 2];
        if let Some(m) = merged(&prev, &last, &last) {
            out.pop();
            out.pop();
            out.push(m);
        }
    }
    out.iter().map(Piece::paragraph).collect()
}

/// `a` joined with the piece `b` right after it, if `short` (one of them)
/// may merge into the other: only a short, unfixed paragraph, into an
/// unfixed neighbour, and never past 6,000 characters measured.
fn merged(a: &Piece, b: &Piece, short: &Piece) -> Option<Piece> {
    if a.fixed() || b.fixed() || short.measured >= MIN_PARAGRAPH_CHARS {
        return None;
    }
    let m = a.join(b);
    (m.measured <= MAX_PARAGRAPH_CHARS).then_some(m)
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

    /// A paragraph measuring exactly `n` characters, then "\n\n" (which
    /// the measure leaves out).
    fn para(n: usize, c: char) -> String {
        let mut s: String = std::iter::repeat_n(c, n).collect();
        s.push_str("\n\n");
        s
    }

    /// The measured lengths of the paragraphs.
    fn measures(text: &str) -> Vec<usize> {
        split(text).iter().map(|p| p.measured).collect()
    }

    /// The measured length of `text[start..end]`, written apart from the
    /// module's: trimmed of whitespace (and the text's leading BOM), with
    /// `\r` not counted where `\n` follows.
    fn measured(text: &str, start: usize, end: usize) -> usize {
        let mut s = &text[start..end];
        if start == 0 {
            s = s.strip_prefix('\u{FEFF}').unwrap_or(s);
        }
        let s = s.trim();
        s.chars().count() - s.matches("\r\n").count()
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
            assert_eq!(p.measured, measured(text, p.start, p.end), "{p:?}");
            assert!(p.measured <= p.chars);
            assert_eq!(p.fixed, p.measured > MAX);
            assert_eq!(p.visible, t.chars().any(is_visible), "{p:?}");
            assert_eq!(p.scorable(), !p.fixed && p.visible);
            joined.push_str(t);
        }
        assert_eq!(joined, text);
        // A short paragraph survives only where the merge rule forbids it.
        for i in 0..ps.len() {
            if ps[i].measured >= MIN || ps.len() == 1 {
                continue;
            }
            let j = if i + 1 < ps.len() { i + 1 } else { i - 1 };
            let n = &ps[j];
            let both = measured(text, ps[i.min(j)].start, ps[i.max(j)].end);
            assert!(
                n.fixed || both > MAX,
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
        // (opening line, indentation of the item's content): the fence's
        // lines are indented to the item's content column.
        for (open, ind) in [
            ("  ```yaml", "  "),     // in the item above
            ("- ```", "  "),         // on the marker's line
            ("1. ~~~", "   "),       // ordered
            ("   - ```", "     "),   // in a nested item (content column 5)
            ("\t- * ```", "\t    "), // nested markers after a tab (column 8)
        ] {
            let run = &open[open.find(['`', '~']).unwrap()..][..3];
            let text =
                format!("- {body}\n\n{open}\n{ind}{body}\n\n{ind}{body}\n{ind}{run}\n\n{body}");
            assert_eq!(split(&text).len(), 3, "{open:?}");
        }
        // Six spaces under "- " are four past the item's content column:
        // indented code, no fence, so its blank lines split.
        let text = format!("- {body}\n\n      ```\n  {body}\n\n  {body}\n      ```\n\n{body}");
        assert_eq!(split(&text).len(), 4);
    }

    #[test]
    fn fence_in_block_quote_is_a_fence() {
        let body = "x".repeat(130);
        // (opening line, prefix of its quoted lines): quoted blank lines
        // (">") inside do not split; the unquoted blank line after the quote
        // paragraph before it does.
        for (open, q) in [
            ("> ```", "> "),
            ("> > ```", "> > "),
            ("  >```", "  > "),
            ("> - ~~~", ">   "), // in a list item in the quote
        ] {
            let run = &open[open.find(['`', '~']).unwrap()..][..3];
            let qb = q.trim_end();
            let text =
                format!("> {body}\n\n{open}\n{q}{body}\n{qb}\n{qb}\n{q}{body}\n{q}{run}\n\n{body}");
            let t = texts(&text);
            assert_eq!(t.len(), 3, "{open:?}: {t:#?}");
            assert!(t[1].starts_with(open) && t[1].ends_with(&format!("{q}{run}\n\n")));
        }
    }

    #[test]
    fn block_quote_fence_ends_when_the_quote_ends() {
        let body = "x".repeat(130);
        // CommonMark: a line without the quote's '>' (here a blank one) ends
        // the quote and its fence.
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
        assert!(ps[0].fixed && ps[0].measured == MAX + 1 && ps[0].chars == MAX + 3);
        assert!(!ps[1].fixed && ps[1].measured == MAX);
    }

    #[test]
    fn paragraph_of_120_does_not_merge() {
        let text = format!("{}{}", para(MIN, 'a'), para(MIN, 'b'));
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn short_paragraph_merges_into_next() {
        let text = format!("{}{}{}", para(200, 'a'), para(MIN - 1, 'b'), para(200, 'c'));
        // The separator between the two merged blocks is inside: it counts.
        assert_eq!(measures(&text), vec![200, MIN - 1 + 2 + 200]);
    }

    #[test]
    fn run_of_short_paragraphs_accumulates() {
        // 5 × 30 characters, 2 between them: 30 → 62 → 94 → 126 (stops),
        // then the fifth merges into the next.
        let text: String = (0..5).map(|_| para(30, 's')).collect::<String>() + &para(200, 'a');
        assert_eq!(measures(&text), vec![126, 232]);
        // Alone at the end, the fifth merges into the previous.
        let text: String = (0..5).map(|_| para(30, 's')).collect();
        assert_eq!(measures(&text), vec![158]);
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
        assert_eq!(measures(&text), vec![200, 205]);
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
                fixed: false,
                measured: 2,
                visible: true
            }]
        );
    }

    #[test]
    fn merge_that_would_pass_6000_stays_alone() {
        // short + next > 6000: stays alone (and is not pushed backwards).
        let text = format!("{}{}{}", para(200, 'a'), para(100, 's'), para(5_950, 'b'));
        assert_eq!(measures(&text), vec![200, 100, 5_950]);
        // last short + previous > 6000: stays alone.
        let text = format!("{}{}", para(5_950, 'b'), para(100, 's'));
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn merge_reaching_exactly_6000_is_allowed() {
        // 100 + 2 (the separator between them) + 5,898.
        let text = format!("{}{}", para(100, 's'), para(5_898, 'b'));
        let ps = split(&text);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].measured, MAX);
        assert!(!ps[0].fixed);
    }

    #[test]
    fn accumulated_run_stops_before_passing_6000() {
        // 100 then 5_899: 100 + 2 + 5_899 = 6_001 would pass → stays alone.
        let text = format!("{}{}{}", para(100, 's'), para(5_899, 'b'), para(300, 'c'));
        assert_eq!(measures(&text), vec![100, 5_899, 300]);
    }

    #[test]
    fn fixed_paragraph_never_merges() {
        // Short before fixed: alone. Short after fixed, last: alone.
        let text = format!("{}{}{}", para(50, 's'), para(7_000, 'f'), para(50, 't'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| (p.measured, p.fixed)).collect::<Vec<_>>(),
            vec![(50, false), (7_000, true), (50, false)]
        );
        // Short after fixed, not last: merges forward, never backward.
        let text = format!("{}{}{}", para(7_000, 'f'), para(50, 's'), para(200, 'a'));
        let ps = split(&text);
        assert_eq!(
            ps.iter().map(|p| (p.measured, p.fixed)).collect::<Vec<_>>(),
            vec![(7_000, true), (252, false)]
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

    // ----- Issue 15: splitting that agrees with CommonMark and with itself -----

    /// Paragraph lengths with `\r` ignored: a CRLF text and its LF twin
    /// must give the same shape (the shared cases' `same_units_as`).
    fn shape(t: &str) -> Vec<usize> {
        split(t)
            .iter()
            .map(|p| t[p.start..p.end].chars().filter(|&c| c != '\r').count())
            .collect()
    }

    #[test]
    fn separator_does_not_count_toward_the_120_character_merge_limit() {
        // 118 characters of text are short, whatever blank lines follow.
        let short = "s".repeat(118);
        let long = "l".repeat(300);
        for sep in ["\n\n", "\r\n\r\n", "\n \n", "\n\n\n\n", "\r\r"] {
            let text = format!("{long}{sep}{short}{sep}{long}{sep}{long}");
            let t = texts(&text);
            assert_eq!(t.len(), 3, "{sep:?}: {:?}", shape(&text));
            assert_eq!(t[1], format!("{short}{sep}{long}{sep}"), "{sep:?}");
        }
    }

    #[test]
    fn crlf_twin_splits_like_its_lf_text_near_the_120_character_limit() {
        // The issue's case: a 117-character paragraph split 14 vs 15 ways.
        let long = "l".repeat(300);
        let one_line = "a".repeat(117);
        // Three lines, 117 characters with their two inner line ends.
        let three_lines = format!("{}\n{}\n{}", "a".repeat(39), "b".repeat(38), "c".repeat(38));
        for p in [one_line, three_lines] {
            let lf = format!("{long}\n\n{p}\n\n{long}\n\n{p}\n\n{long}\n");
            let crlf = lf.replace('\n', "\r\n");
            assert_eq!(shape(&lf), shape(&crlf));
            assert_eq!(split(&lf).len(), 3, "the 117-character paragraphs merge");
        }
    }

    #[test]
    fn separator_does_not_count_toward_the_6000_character_fixed_limit() {
        let next = "n".repeat(300);
        for sep in ["\n\n", "\r\n\r\n", "\n        \n"] {
            for (n, fixed) in [(5_999, false), (MAX, false), (MAX + 1, true)] {
                let text = format!("{}{sep}{next}", "a".repeat(n));
                let ps = split(&text);
                assert_eq!(ps.len(), 2, "{n} {sep:?}");
                assert_eq!(ps[0].fixed, fixed, "{n} {sep:?}");
            }
        }
    }

    #[test]
    fn heading_merges_into_its_body_across_a_separator_line_of_spaces() {
        let body = "b".repeat(300);
        let spaces = " ".repeat(150);
        let text = format!("## Retries\n{spaces}\n{body}\n\n## Timeouts\n\t\t\n\n{body}\n");
        assert_eq!(
            texts(&text),
            vec![
                format!("## Retries\n{spaces}\n{body}\n\n"),
                format!("## Timeouts\n\t\t\n\n{body}\n")
            ]
        );
    }

    #[test]
    fn fence_in_a_list_item_ends_with_the_item() {
        let body = "x".repeat(130);
        // The fence never closes; the dedented line ends the item, so the
        // fence (CommonMark), and the blank lines after it split again.
        let text = format!(
            "- step one:\n\n  ```sh\n  {body}\n\n  {body}\nAfter the list {body}\n\n{body}\n\n{body}"
        );
        let t = texts(&text);
        assert_eq!(t.len(), 3, "{t:#?}");
        assert!(t[0].starts_with("- step one:") && t[0].contains("After the list"));
        assert_eq!(t[1], format!("{body}\n\n"));
        // Nested: a line back at the outer item's indentation ends the inner
        // item and its fence, not the outer item.
        let text = format!(
            "- outer {body}\n  - inner\n\n    ~~~\n    {body}\n\n    {body}\n  back in the outer item\n\n  {body}\n\n{body}"
        );
        let t = texts(&text);
        assert_eq!(t.len(), 4, "{t:#?}");
        assert!(t[1].starts_with("    ~~~") && t[1].ends_with("back in the outer item\n\n"));
        assert_eq!(t[2], format!("  {body}\n\n"));
        // An item's fence does not end at a blank line, nor at a line indented
        // to the item's content.
        let text = format!("1. step\n\n   ```\n   {body}\n\n   {body}\n   ```\n\n{body}");
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn top_level_line_indented_four_spaces_neither_opens_nor_closes_a_fence() {
        let body = "x".repeat(130);
        // A ```md block that shows an indented ```sh example: the indented
        // lines are code inside it, the md fence closes at its own ```.
        let text = format!(
            "```md\nExample:\n\n    ```sh\n    run {body}\n    ```\n\nend of example\n```\n\n{body}\n\n{body}"
        );
        let t = texts(&text);
        assert_eq!(t.len(), 3, "{t:#?}");
        assert!(t[0].ends_with("end of example\n```\n\n"));
        // Indented code opening no fence: its blank lines split.
        let text = format!("    ```\n    {body}\n\n    {body}\n\n{body}");
        assert_eq!(split(&text).len(), 3);
        // A tab is four columns too.
        let text = format!("\t~~~\n\t{body}\n\n\t{body}\n\n{body}");
        assert_eq!(split(&text).len(), 3);
    }

    #[test]
    fn blank_line_in_a_block_quote_ends_the_quoted_fence() {
        let body = "x".repeat(130);
        // CommonMark: the blank line ends the block quote and its fence, even
        // when the next line is quoted again.
        let text = format!("> ```\n> {body}\n\n> {body}\n\n{body}");
        assert_eq!(
            texts(&text),
            vec![
                format!("> ```\n> {body}\n\n"),
                format!("> {body}\n\n"),
                body.clone()
            ]
        );
        // The quoted "closing" fence after the blank line opens a new fence,
        // which ends with its own block quote at the next blank line.
        let text = format!("> ~~~\n> {body}\n\n> {body}\n> ~~~\n\n{body}\n\n{body}");
        assert_eq!(split(&text).len(), 4);
        // A quoted blank line (">") does not end the quote: one fence.
        let text = format!("> ```\n> {body}\n>\n> {body}\n> ```\n\n{body}");
        assert_eq!(split(&text).len(), 2);
    }

    #[test]
    fn unicode_whitespace_line_is_blank_inside_a_list_item_fence() {
        // SPEC §4.2 over CommonMark: a line of U+3000 is blank, so, like an
        // empty line, it does not end the list item holding the fence.
        let body = "x".repeat(130);
        for blank in ["\u{3000}", "\u{a0}\u{a0}", "\u{c}"] {
            let text = format!("- step\n\n  ```\n  {body}\n{blank}\n  {body}\n  ```\n\n{body}");
            let t = texts(&text);
            assert_eq!(t.len(), 2, "{blank:?}: {t:#?}");
            assert!(t[0].ends_with("  ```\n\n"));
        }
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
        // One megabyte is enough to catch a quadratic cost here: deeply
        // nested list items, then blank lines and indented lines that go
        // through all of them; a thematic break's tail asked again after
        // each list marker.
        let m = 1024 * 1024;
        let inputs = inputs.into_iter().chain([
            format!("{}\n{}", "- * ".repeat(m / 8), "\n".repeat(m / 2)),
            format!(
                "{}\n{}",
                "1. ".repeat(1_000),
                format!("{}x\n", " ".repeat(3_000)).repeat(m / 3_002)
            ),
            format!("{}\n{}", "> - ".repeat(m / 8), "\n> \n".repeat(m / 8)),
            format!("{}x", "* ".repeat(m / 2)),
            format!("{}x", "- \t".repeat(m / 3)),
        ]);
        let t0 = std::time::Instant::now();
        for t in inputs {
            check_invariants(&t);
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

    // ----- CommonMark as referee (pulldown-cmark) -----
    //
    // SPEC §4.1: fences follow CommonMark. Over generated documents of
    // fences, block quotes, list items and paragraphs, the block boundaries
    // of step 2 must be exactly those that the referee's fenced code blocks
    // imply: a boundary at every non-blank line that follows blank lines,
    // except blank lines inside a referee fence. So no boundary falls inside
    // a fence, and there is one wherever a fence ends before blank lines.
    //
    // Where SPEC §4 says otherwise, nothing is generated, and unit tests
    // above hold the SPEC's side:
    // * a line of Unicode whitespace (U+3000, U+00A0, form feed…) is blank
    //   for SPEC and text for CommonMark (which would, say, end a list item
    //   and its fence there): `whitespace_only_lines_split_including_unicode_whitespace`,
    //   `unicode_whitespace_line_is_blank_inside_a_list_item_fence`;
    // * a U+FEFF at the start is not content: `bom_is_not_content_when_classifying_the_first_line`;
    // * HTML blocks are not modelled (SPEC §4 names fences only): no `<` is
    //   generated.
    // Indented code is no exception: it is not a fence, so its blank lines
    // split, and the referee's indented code blocks are not counted.
    //
    // The referee needs the `commonmark-referee` feature (guest/Cargo.toml
    // says why): `cargo test -p toolprune-guest --features commonmark-referee`.

    /// The referee's fenced code blocks in `text`: byte ranges from the
    /// opening run to the end of the closing fence's line, or of the last
    /// non-blank line the block holds when its container or the text ends
    /// first (blank lines inside it included, trailing ones not).
    #[cfg(feature = "commonmark-referee")]
    fn referee_fences(text: &str) -> Vec<(usize, usize)> {
        use pulldown_cmark::{CodeBlockKind, Event, Parser, Tag};
        // pulldown-cmark ends lines at `\n` and `\r\n` only; CommonMark (and
        // SPEC §4.2) at a lone `\r` too. A lone `\r` is read as `\n`: the same
        // offsets, the same document.
        let lf: String = text
            .char_indices()
            .map(|(i, c)| {
                if c == '\r' && !text[i + 1..].starts_with('\n') {
                    '\n'
                } else {
                    c
                }
            })
            .collect();
        Parser::new(&lf)
            .into_offset_iter()
            .filter_map(|(event, range)| match event {
                Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(_))) => {
                    // A block whose container ended at a blank line holds
                    // that line in its range; CommonMark ends the block
                    // before it (issue 27 §3): trailing blank lines are not
                    // the block's.
                    let mut end = range.start;
                    let mut at = range.start;
                    for line in lf[range.start..range.end].split_inclusive('\n') {
                        at += line.len();
                        if !line.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
                            end = at;
                        }
                    }
                    Some((range.start, end.max(range.start + 1)))
                }
                _ => None,
            })
            .collect()
    }

    /// Step 2's boundaries (starts of blocks after the first) when fences
    /// are `fences`.
    #[cfg(feature = "commonmark-referee")]
    fn boundaries_given(text: &str, fences: &[(usize, usize)]) -> Vec<usize> {
        let mut out = Vec::new();
        let (mut seen, mut after_blank) = (false, false);
        for line in lines(text) {
            let blank = text[line.start..line.content_end]
                .trim_matches([' ', '\t'])
                .is_empty();
            let in_fence = fences
                .iter()
                .any(|&(s, e)| s < line.start && line.start < e);
            if blank && !in_fence {
                after_blank = true;
                continue;
            }
            if seen && after_blank {
                out.push(line.start);
            }
            seen = true;
            after_blank = false;
        }
        out
    }

    #[cfg(feature = "commonmark-referee")]
    fn check_against_referee(text: &str) -> Result<(), TestCaseError> {
        let fences = referee_fences(text);
        let ours: Vec<usize> = blocks(text).iter().skip(1).map(|b| b.0).collect();
        prop_assert_eq!(
            ours,
            boundaries_given(text, &fences),
            "fences {:?} in {:?}",
            fences,
            text
        );
        Ok(())
    }

    /// A line's container prefix: quotes, list markers, continuation
    /// indentation, nesting; "" most often.
    #[cfg(feature = "commonmark-referee")]
    fn prefix() -> impl Strategy<Value = &'static str> {
        prop_oneof![
            8 => Just(""),
            1 => prop::sample::select(vec![
                "> ", ">", "> > ", ">>", " > ", "- ", "* ", "+ ", "1. ", "2) ", "10. ", "-\t", "  ", "   ",
                "    ", "     ", "\t", "  - ", "- - ", "> - ", "- > ", "1. > ", "   > ", ">   ", "  > ",
            ]),
        ]
    }

    /// What follows the prefix: fence runs (backtick or tilde, 2–5 long,
    /// with or without info strings, some invalid), text, markers, blank.
    #[cfg(feature = "commonmark-referee")]
    fn body() -> impl Strategy<Value = String> {
        let fence = (
            prop::bool::ANY,
            2usize..=5,
            prop::sample::select(vec!["", "rust", " sh x", "`tick`", " ~~", "md"]),
        )
            .prop_map(|(tilde, n, info)| {
                format!("{}{info}", if tilde { "~" } else { "`" }.repeat(n))
            });
        prop_oneof![
            4 => fence,
            3 => prop::sample::select(vec![
                "alpha beta", "gamma delta epsilon", "text `code` text", "# Heading", "---", "***", "===",
                "- item", "1. one", "2. two", "* star", "> quoted", "- ", "-", "1.",
            ]).prop_map(str::to_owned),
            3 => Just(String::new()),
        ]
    }

    /// A line soup: prefixes, indentation 0–6 and bodies at random.
    #[cfg(feature = "commonmark-referee")]
    fn soup() -> impl Strategy<Value = String> {
        let line = (
            prefix(),
            prop_oneof![6 => 0usize..=3, 1 => 4usize..=6],
            prop::bool::weighted(0.05),
            body(),
            prop::sample::select(vec!["\n", "\n", "\n", "\n", "\n", "\n", "\r\n", "\r"]),
        )
            .prop_map(|(p, n, tab, b, eol)| {
                format!(
                    "{p}{}{}{b}{eol}",
                    " ".repeat(n),
                    if tab { "\t" } else { "" }
                )
            });
        prop::collection::vec(line, 1..30).prop_map(|v| v.concat())
    }

    /// One container's lines: a marker line, then continuation lines —
    /// indented to the content, dedented, lazy or blank at random.
    #[cfg(feature = "commonmark-referee")]
    fn segment() -> impl Strategy<Value = String> {
        // (first line's prefix, continuation prefix)
        let container = prop::sample::select(vec![
            ("", ""),
            ("> ", "> "),
            ("> > ", "> > "),
            ("- ", "  "),
            ("* ", "  "),
            ("1. ", "   "),
            ("10) ", "    "),
            ("  - ", "    "),
            ("- > ", "  > "),
            ("> - ", ">   "),
            ("- ", "   "),
            ("1. - ", "     "),
            ("-  ", "   "),
        ]);
        let fenced = (
            prop::bool::ANY,
            3usize..=4,
            0usize..=6,
            0usize..4,
            prop::bool::ANY,
            0usize..=6,
            2usize..=5,
        )
            .prop_map(|(tilde, n, ind, content, closed, close_ind, close_n)| {
                let ch = if tilde { "~" } else { "`" };
                let mut v = vec![format!("{}{}info", " ".repeat(ind), ch.repeat(n))];
                for i in 0..content {
                    v.push(if i % 2 == 1 {
                        String::new()
                    } else {
                        format!("{}code {i}", " ".repeat(ind))
                    });
                }
                if closed {
                    v.push(format!("{}{}", " ".repeat(close_ind), ch.repeat(close_n)));
                }
                v
            });
        let text = prop::collection::vec(
            prop::sample::select(vec!["word word", "", "more words", "    indented"]),
            1..4,
        )
        .prop_map(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>());
        let inner = prop_oneof![2 => fenced, 1 => text];
        (
            container,
            inner,
            prop::collection::vec(0u8..10, 8),
            0usize..3,
        )
            .prop_map(|((first, cont), body, how, blanks)| {
                let mut out = String::new();
                for (i, l) in body.iter().enumerate() {
                    let p = match (i, how[i % how.len()]) {
                        (0, _) => first,
                        (_, 0) => "", // dedented or lazy
                        (_, 1) => &first[..first.len().min(1)],
                        _ => cont,
                    };
                    let p = if l.is_empty() && how[i % how.len()] < 5 {
                        p.trim_end()
                    } else {
                        p
                    };
                    out.push_str(p);
                    out.push_str(l);
                    out.push('\n');
                }
                out.push_str(&"\n".repeat(blanks));
                out
            })
    }

    /// A list item (or a quoted one) holding a fence, its code with blank
    /// lines, then blank lines and text dedented out of the item (issue 27
    /// §3: CommonMark ends the item, and the fence, at the dedent).
    #[cfg(feature = "commonmark-referee")]
    fn list_fence_then_dedent() -> impl Strategy<Value = String> {
        let item = prop::sample::select(vec![
            ("- ", "  ", ""),
            ("* ", "  ", ""),
            ("1. ", "   ", ""),
            ("10) ", "    ", ""),
            ("  - ", "    ", ""),
            ("- - ", "    ", ""),
            ("> - ", ">   ", "> "),
            ("- ", "  ", "  "),
        ]);
        (
            item,
            (prop::bool::ANY, 3usize..=4, prop::sample::select(vec!["", "rust", " sh"])),
            prop::collection::vec(prop::sample::select(vec!["code", "", "  nested code", " "]), 0..4),
            prop::collection::vec(prop::sample::select(vec!["", " ", "\t"]), 1..3),
            prop::collection::vec(prop::sample::select(vec!["dedented paragraph", " one space", "- next item", "plain", "```"]), 1..3),
            prop::bool::ANY,
        )
            .prop_map(|((first, cont, outer), (tilde, n, info), code, blanks, after, closed)| {
                let fence = if tilde { "~" } else { "`" }.repeat(n);
                let mut out = format!("{first}{fence}{info}\n");
                for l in code {
                    out.push_str(&format!("{}{l}\n", if l.is_empty() { cont.trim_end() } else { cont }));
                }
                if closed {
                    out.push_str(&format!("{cont}{fence}\n"));
                }
                for b in blanks {
                    out.push_str(&format!("{b}\n"));
                }
                for l in after {
                    out.push_str(&format!("{outer}{l}\n"));
                }
                out
            })
    }

    #[cfg(feature = "commonmark-referee")]
    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn fence_boundaries_match_the_commonmark_referee_after_a_list_items_fence(text in list_fence_then_dedent()) {
            check_against_referee(&text)?;
        }

        #[test]
        fn fence_boundaries_match_the_commonmark_referee_on_line_soups(text in soup()) {
            check_against_referee(&text)?;
        }

        #[test]
        fn fence_boundaries_match_the_commonmark_referee_on_documents(
            segments in prop::collection::vec(segment(), 1..8),
        ) {
            check_against_referee(&segments.concat())?;
        }
    }

    #[test]
    fn a_paragraph_dedented_after_a_list_items_fence_and_a_blank_line_is_its_own_unit() {
        // CommonMark ends the item, and the fence in it, at the blank line
        // (issue 27 §3; proptest seed cc 3f593821… in proptest-regressions/split.txt).
        let starts = |t: &str| blocks(t).iter().map(|b| b.0).collect::<Vec<_>>();
        assert_eq!(starts("- ```\n  code\n\ndedented paragraph\n"), [0, 14]);
        assert_eq!(starts("1. ```\n   code\n\n\ndedented paragraph\n"), [0, 17]);
        assert_eq!(starts("- ```\r\n  code\r\n\r\ndedented paragraph\r\n"), [0, 17]);
        assert_eq!(starts("- ```\n\n```\n"), [0, 7], "a new fence after the item");
        // The item goes on (indented): the blank line stays the fence's.
        assert_eq!(starts("- ```\n  code\n\n  more code\n  ```\n"), [0]);
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
    fn the_separator_and_leading_blank_lines_are_not_sent() {
        assert_eq!(content("\n \n# Title\nbody  \n\n\n"), "# Title\nbody");
        assert_eq!(content("    indented code\n\n"), "    indented code");
        assert_eq!(content("a\r\n\r\n"), "a");
        assert_eq!(content(" \n\t\n"), "");
        // A short paragraph with a huge separator is sent short.
        let text = format!("{}\n{}\n\nnext {}", "x".repeat(200), " ".repeat(10_000), "y".repeat(200));
        let ps = split(&text);
        assert_eq!(content(&text[ps[0].start..ps[0].end]), "x".repeat(200));
    }

    proptest! {
        #[test]
        fn what_is_sent_is_never_longer_than_what_was_measured(text in "[a-z \n\r\t>`~-]{0,400}") {
            for p in split(&text) {
                // Past its first line's indentation, what is sent is what was
                // measured (a line end `\r\n` measures one character).
                let sent = content(&text[p.start..p.end]).trim_start();
                let measure = sent.chars().count() - sent.matches("\r\n").count();
                prop_assert!(measure <= p.measured, "sent {:?} measured {}", sent, p.measured);
            }
        }
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
