//! A TOML file as the config file (`settings`) and the judge's rules file
//! (`judge::rules`) read it: parsed by the `toml` crate (`DeTable::parse`: spanned,
//! in the file's key order, without serde's derive), with one-line messages
//! and 1-based line:column positions.
//!
//! The crate's own messages are kept, with two made plainer for people who
//! write a config or rules file without knowing TOML: an unquoted word
//! (`type = choice`) and a key written twice (named, as the crate does not).
//! Nesting is bounded by the crate (80 levels: "max recursion depth met");
//! parsing is linear in the text.

use core::ops::Range;

pub use toml::de::{DeString, DeTable, DeValue};
pub use toml::Spanned;

/// A key of a table and where it is written (quotes included).
pub type Key<'s> = Spanned<DeString<'s>>;

/// A value and where it is: its own text (quotes and brackets included),
/// or for a table opened by a header (`[a.b]`, `[[rules]]`), the header.
pub type Item<'s> = Spanned<DeValue<'s>>;

/// What the crate says to a bare word where a value goes (`type = choice`),
/// and to a missing value (`a = `).
pub const NOT_A_VALUE: &str =
    "expected a value: a \"string\" (text needs quotes), true or false, [an array] or {an inline table}";

/// A syntax error: one line (no file content but a key's name), at byte `at`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub at: usize,
    pub message: String,
}

/// Parses `src` (a whole document) into its root table. Errors: the first
/// syntax error TOML 1.1 finds (duplicate keys and tables, unclosed
/// strings, nesting over 80, …), as [`Error`].
pub fn parse(src: &str) -> Result<DeTable<'_>, Error> {
    match DeTable::parse(src) {
        Ok(root) => Ok(root.into_inner()),
        Err(e) => {
            let span = e.span().unwrap_or(0..0);
            Err(Error { at: span.start, message: message(src, e.message(), span) })
        }
    }
}

/// The crate's message on one line, two of them plainer.
fn message(src: &str, message: &str, span: Range<usize>) -> String {
    if message.starts_with("string values must be quoted") {
        return NOT_A_VALUE.to_string();
    }
    if message == "duplicate key" {
        if let Some(key) = src.get(span).filter(|k| !k.is_empty()) {
            return format!("the key `{key}` is defined twice");
        }
    }
    message.replace(['\r', '\n'], " ")
}

/// Where each line of a text starts, for [`Lines::position`]: one pass over
/// the text, then a binary search per position (a rules file with thousands
/// of errors stays linear; [`position`] scans the text each time).
pub struct Lines {
    starts: Vec<usize>,
}

impl Lines {
    /// The line starts of `src` (lines end at `\n`, as [`position`] counts them).
    pub fn new(src: &str) -> Lines {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', src.as_bytes()).map(|i| i + 1));
        Lines { starts }
    }

    /// [`position`] of byte `at` in `src` (the text given to [`Lines::new`]).
    pub fn position(&self, src: &str, at: usize) -> (u32, u32) {
        let mut at = at.min(src.len());
        while !src.is_char_boundary(at) {
            at -= 1;
        }
        let line = self.starts.partition_point(|&s| s <= at);
        let line_start = self.starts[line - 1];
        let column = src[line_start..at].chars().count() + 1;
        (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX))
    }
}

/// 1-based line and column (in characters) of byte `at` in `src`.
pub fn position(src: &str, at: usize) -> (u32, u32) {
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let column = src[line_start..at].chars().count() + 1;
    (u32::try_from(line).unwrap_or(u32::MAX), u32::try_from(column).unwrap_or(u32::MAX))
}

/// What a value is, for messages: `a string`, `a number`, `an array of
/// tables` (a non-empty array of tables only), …
pub fn kind(value: &DeValue<'_>) -> &'static str {
    match value {
        DeValue::String(_) => "a string",
        DeValue::Boolean(_) => "a boolean",
        DeValue::Integer(_) | DeValue::Float(_) => "a number",
        DeValue::Datetime(_) => "a date or time",
        DeValue::Array(items) if !items.is_empty() && items.iter().all(|i| i.get_ref().is_table()) => {
            "an array of tables"
        }
        DeValue::Array(_) => "an array",
        DeValue::Table(_) => "a table",
    }
}

/// The earliest value in the file (by its span's start) that `pick`
/// chooses, among every value of `table` and of the tables and arrays in it.
pub fn first<'t, 's>(table: &'t DeTable<'s>, pick: &dyn Fn(&Item<'s>) -> bool) -> Option<&'t Item<'s>> {
    fn visit<'t, 's>(item: &'t Item<'s>, pick: &dyn Fn(&Item<'s>) -> bool, best: &mut Option<&'t Item<'s>>) {
        if pick(item) && best.is_none_or(|b| item.span().start < b.span().start) {
            *best = Some(item);
        }
        match item.get_ref() {
            DeValue::Table(t) => t.values().for_each(|v| visit(v, pick, best)),
            DeValue::Array(a) => a.iter().for_each(|v| visit(v, pick, best)),
            _ => {}
        }
    }
    let mut best = None;
    table.values().for_each(|v| visit(v, pick, &mut best));
    best
}

/// The decimal number written at `item` in `src` (`256`, `0.2`, `1_000`,
/// `-1`, `+2e3`), read by [`crate::number::parse`]; none for anything else:
/// strings, booleans, hexadecimal, octal and binary integers, `inf`,
/// `nan`, dates and times.
pub fn decimal(src: &str, item: &Item<'_>) -> Option<f64> {
    match item.get_ref() {
        DeValue::Integer(i) if i.radix() == 10 => {}
        DeValue::Float(_) => {}
        _ => return None,
    }
    let text = src.get(item.span())?;
    if text.contains(['i', 'n']) {
        return None;
    }
    crate::number::parse(&text.replace(['_', '+'], ""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_index_gives_the_scans_positions() {
        let src = "a = 1\r\n[t]\n\nkey = \"日本語\" # x\nlast";
        let lines = Lines::new(src);
        for at in 0..=src.len() + 3 {
            assert_eq!(lines.position(src, at), position(src, at), "byte {at}");
        }
    }
    use proptest::prelude::*;

    fn get<'t, 's>(table: &'t DeTable<'s>, path: &str) -> &'t DeValue<'s> {
        let mut value = None;
        let mut table = table;
        for key in path.split('/') {
            let v = table.get(key).unwrap_or_else(|| panic!("no {key}")).get_ref();
            if let DeValue::Table(t) = v {
                table = t;
            }
            value = Some(v);
        }
        value.unwrap()
    }

    fn s<'v>(v: &'v DeValue<'_>) -> &'v str {
        v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
    }

    fn error(src: &str) -> String {
        parse(src).expect_err(src).message
    }

    #[test]
    fn reads_tables_arrays_of_tables_and_keeps_the_files_order() {
        let doc = parse(
            "# rules\n[questions.kind]\ntype = \"choice\"\noptions = { b = \"B\", a = 'A' }\n\n[[rules]]\nwhen = \"x\"\nto = [\"one\",\n  \"two\", # c\n]\n[[rules]]\nwhen = 'y'\n",
        )
        .unwrap();
        assert_eq!(s(get(&doc, "questions/kind/type")), "choice");
        let DeValue::Table(options) = get(&doc, "questions/kind/options") else { panic!() };
        let keys: Vec<&str> = options.keys().map(|k| k.get_ref().as_ref()).collect();
        assert_eq!(keys, ["b", "a"], "file order, not sorted");
        let rules = get(&doc, "rules");
        assert_eq!(kind(rules), "an array of tables");
        let DeValue::Array(items) = rules else { panic!() };
        assert_eq!(items.len(), 2);
        let DeValue::Table(second) = items[1].get_ref() else { panic!() };
        assert_eq!(s(second["when"].get_ref()), "y");
        let DeValue::Table(first) = items[0].get_ref() else { panic!() };
        assert_eq!(first["to"].get_ref().as_array().unwrap().len(), 2);
    }

    #[test]
    fn spans_point_at_the_value_and_a_header_at_its_header() {
        let src = "a = \"xyz\"\n[t]\nb = true\n[[r]]\n";
        let doc = parse(src).unwrap();
        assert_eq!(&src[doc["a"].span()], "\"xyz\"");
        let (key, t) = doc.get_key_value("t").unwrap();
        assert_eq!(&src[key.span()], "t");
        assert_eq!(&src[t.span()], "[t]");
        assert_eq!(get(&doc, "t/b").as_bool(), Some(true));
        assert_eq!(&src[doc["r"].get_ref().as_array().unwrap()[0].span()], "[[r]]");
    }

    #[test]
    fn strings_decode_every_escape_and_form() {
        let doc = parse(concat!(
            "a = \"t\\tq\\\"b\\\\u\\u00e9U\\U0001F980x\\x41e\\e\"\n",
            "b = 'C:\\path'\n",
            "c = \"\"\"\nline one\nline \\\n    two\"\"\"\n",
            "d = '''\nraw \\n ''two'''''\n",
            "e = \"日本語\"\n",
        ))
        .unwrap();
        assert_eq!(s(get(&doc, "a")), "t\tq\"b\\uéU🦀xAe\u{1b}");
        assert_eq!(s(get(&doc, "b")), "C:\\path");
        assert_eq!(s(get(&doc, "c")), "line one\nline two");
        assert_eq!(s(get(&doc, "d")), "raw \\n ''two''");
        assert_eq!(s(get(&doc, "e")), "日本語");
    }

    #[test]
    fn dotted_keys_make_tables() {
        let doc = parse("a.b = 'x'\na.c = 'y'\n\"q k\".x = 'z'\n").unwrap();
        assert_eq!(s(get(&doc, "a/c")), "y");
        assert_eq!(s(get(&doc, "q k/x")), "z");
    }

    #[test]
    fn decimal_numbers_are_read_and_no_other_kind() {
        let src = "a = 256\nb = 0.2\nc = 1_000\nd = -1\ne = +2e3\nf = 1e15\ng = 0x10\nh = 0o7\ni = 0b1\nj = inf\nk = -nan\nl = 1979-05-27\nm = \"5\"\nn = true\n";
        let doc = parse(src).unwrap();
        let read: Vec<Option<f64>> = doc.values().map(|v| decimal(src, v)).collect();
        let expected = [Some(256.0), Some(0.2), Some(1000.0), Some(-1.0), Some(2000.0), Some(1e15), None, None, None, None, None, None, None, None];
        assert_eq!(read, expected);
    }

    #[test]
    fn first_finds_the_earliest_value_in_the_file_at_any_depth() {
        let src = "[b]\nx = 'a'\ny = [true, 2]\n[a]\nz = 3\n[b.c]\nw = 4\n";
        let doc = parse(src).unwrap();
        let number = |v: &Item<'_>| matches!(v.get_ref(), DeValue::Integer(_));
        assert_eq!(&src[first(&doc, &number).unwrap().span()], "2");
        assert!(first(&doc, &|v: &Item<'_>| v.get_ref().is_datetime()).is_none());
    }

    #[test]
    fn refuses_what_toml_refuses_in_one_line() {
        for (src, needle) in [
            ("a = true\na = false\n", "the key `a` is defined twice"),
            ("[t]\n[t]\n", "the key `t` is defined twice"),
            ("[t]\n[[t]]\n", "defined twice"),
            ("[[t]]\n[t]\n", "defined twice"),
            ("t = true\n[t.x]\n", "cannot extend value of type boolean"),
            ("t = {a = true}\n[t]\n", "defined twice"),
            ("t = {a = true}\n[t.b]\n", "inline table"),
            ("a = research\n", "needs quotes"),
            ("a = truex\n", "invalid boolean"),
            ("a = \"open\n", "invalid basic string"),
            ("a = \"\\q\"\n", "missing escaped value"),
            ("a = true b = false\n", "expected newline"),
            ("a\n", "expected `=`"),
            ("a = ['x' 'y']\n", "expected `,`"),
            ("[t\n", "expected `]`"),
            ("a = \n", "expected a value"),
            ("a = \"x\"\r", "carriage return"),
            ("# \u{1} comment\n", "comment"),
        ] {
            let e = error(src);
            assert!(e.contains(needle), "{src:?}: {e}");
            assert!(!e.contains('\n'), "{src:?}: {e}");
        }
        let deep = format!("a = {}{}\n", "[".repeat(100), "]".repeat(100));
        assert!(error(&deep).contains("max recursion depth"));
        let deep = format!("a{} = 1\n", ".a".repeat(100));
        assert!(error(&deep).contains("recursion limit"));
    }

    #[test]
    fn error_positions_are_bytes_of_the_text() {
        let src = "ok = true\nbad = ?\n";
        let e = parse(src).unwrap_err();
        assert_eq!(e.at, 16);
        assert_eq!(position(src, e.at), (2, 7));
        assert_eq!(position("é\né🦀x", 9), (2, 3), "columns count characters");
        assert_eq!(position("é\né🦀x", 8), (2, 2), "inside a character: its start");
        assert_eq!(position("ab", 99), (1, 3));
    }

    #[test]
    fn parsing_is_linear_in_the_number_of_keys() {
        // The hand-written reader looked every key up in a list: 10,000 keys
        // took 0.6 s in the component and 20,000 ran out of fuel (issue 27 §7).
        let n = 40_000;
        let keys: String = (0..n).map(|i| format!("k{i} = true\n")).collect();
        let tables: String = (0..n).map(|i| format!("[t{i}]\nx = 'y'\n")).collect();
        let t0 = std::time::Instant::now();
        let src = format!("{keys}{tables}{}", "[[r]]\n".repeat(n));
        let root = parse(&src).unwrap();
        assert_eq!(root.len(), 2 * n + 1);
        assert_eq!(root["r"].get_ref().as_array().unwrap().len(), n);
        // Generous for an unoptimized build on a busy machine; quadratic takes minutes.
        assert!(t0.elapsed().as_secs() < 20, "{:?}", t0.elapsed());
    }

    proptest! {
        #[test]
        fn never_panics_and_errors_are_one_line(src in ".{0,200}") {
            if let Err(e) = parse(&src) {
                prop_assert!(!e.message.contains('\n') && e.at <= src.len());
            }
        }

        #[test]
        fn never_panics_on_toml_like_text(src in r#"[\[\]{}=,."'\\a-c0-9 \n#_+\-:etruf]{0,120}"#) {
            if let Err(e) = parse(&src) {
                prop_assert!(!e.message.contains('\n') && e.at <= src.len());
            }
        }
    }
}
