//! A small TOML reader for the judge's rules files and the config file
//! (README "Configuration"), with byte spans on every key and value.
//!
//! Why not the `toml` crate: its parser and table layer add 83 KB to the
//! component (measured for `toml` 1.2 with `default-features = false,
//! features = ["std", "parse"]`, wasm32, the guest profile; `toml_parser`
//! alone, before any table building, adds 38 KB); this reader is about
//! 19 KB of wasm.
//!
//! It reads TOML 1.1 as a rules file uses it: comments; bare, quoted and
//! dotted keys; `[tables]` and `[[arrays of tables]]`; basic, literal and
//! multi-line strings with every escape; booleans; arrays and inline tables
//! (over several lines, trailing commas). A rules file holds no numbers
//! (thresholds live inside `when` strings), so [`parse`] refuses numbers,
//! dates and times with a message that says so; [`parse_with_numbers`] (the
//! config file) reads decimal integers and floats (`256`, `0.2`, `1_000`,
//! `-1`, `2e3`), still not dates, times, `inf`/`nan` or hex. Both refuse
//! duplicate keys and tables defined twice.
//! Tables keep their keys in the file's order. Nesting is limited to
//! [`MAX_DEPTH`]; the reader never panics.

use core::ops::Range;

/// Arrays and inline tables nested deeper than this are refused.
pub const MAX_DEPTH: usize = 32;

/// A value and where it is: for a table opened by a header, the header's
/// last key; for anything else, the value's own text.
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub span: Range<usize>,
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    String(String),
    Boolean(bool),
    /// A decimal integer or float (only from [`parse_with_numbers`]).
    Number(f64),
    /// `of_tables`: made by `[[header]]`s.
    Array {
        items: Vec<Item>,
        of_tables: bool,
    },
    Table(Table),
}

impl Value {
    /// What the value is, for messages (`a string`, `a table`, …).
    pub fn kind(&self) -> &'static str {
        match self {
            Value::String(_) => "a string",
            Value::Boolean(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::Array {
                of_tables: true, ..
            } => "an array of tables",
            Value::Array { .. } => "an array",
            Value::Table(_) => "a table",
        }
    }
}

/// One key of a table, in the file's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    pub key: String,
    pub key_span: Range<usize>,
    pub item: Item,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    Root,
    /// Named on the way to a header (`a` of `[a.b]`), not yet defined.
    Implicit,
    Header,
    Dotted,
    Inline,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub entries: Vec<Entry>,
    origin: Origin,
}

impl Table {
    fn new(origin: Origin) -> Self {
        Table {
            entries: Vec::new(),
            origin,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|e| e.key == key)
    }

    fn position(&self, key: &str) -> Option<usize> {
        self.entries.iter().position(|e| e.key == key)
    }
}

/// A syntax error at byte `at` of the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub at: usize,
    pub message: String,
}

fn err<T>(at: usize, message: impl Into<String>) -> Result<T, Error> {
    Err(Error {
        at,
        message: message.into(),
    })
}

type Key = Vec<(String, Range<usize>)>;

const NOT_A_VALUE: &str =
    "expected a value: a \"string\" (text needs quotes), true or false, [an array] or {an inline table}";

fn dotted(key: &[(String, Range<usize>)]) -> String {
    let names: Vec<&str> = key.iter().map(|(k, _)| k.as_str()).collect();
    names.join(".")
}

/// Reads a whole rules document into its root table (no numbers).
pub fn parse(src: &str) -> Result<Table, Error> {
    read(src, false)
}

/// Reads a whole config document into its root table, numbers included.
pub fn parse_with_numbers(src: &str) -> Result<Table, Error> {
    read(src, true)
}

fn read(src: &str, numbers: bool) -> Result<Table, Error> {
    let mut p = Reader { src, pos: 0, numbers };
    let mut root = Table::new(Origin::Root);
    // The path of the table that key/values go to; arrays of tables resolve
    // to their last element.
    let mut current: Vec<String> = Vec::new();
    loop {
        p.skip_blank()?;
        let Some(c) = p.peek() else { break };
        if c == b'[' {
            let array = p.src.as_bytes().get(p.pos + 1) == Some(&b'[');
            p.pos += if array { 2 } else { 1 };
            p.skip_spaces();
            let key = p.key()?;
            p.skip_spaces();
            let close = if array { "]]" } else { "]" };
            if !p.src[p.pos..].starts_with(close) {
                return err(
                    p.pos,
                    format!("expected `{close}` to close the table header"),
                );
            }
            p.pos += close.len();
            p.end_of_line()?;
            open_header(&mut root, &key, array)?;
            current = key.into_iter().map(|(k, _)| k).collect();
        } else {
            let key = p.key()?;
            p.skip_spaces();
            if p.peek() != Some(b'=') {
                return err(
                    p.pos,
                    format!("expected `=` after the key `{}`", dotted(&key)),
                );
            }
            p.pos += 1;
            p.skip_spaces();
            let item = p.value(0)?;
            p.end_of_line()?;
            let Some(table) = descend(&mut root, &current) else {
                return err(item.span.start, "internal: lost the current table");
            };
            insert(table, &key, item)?;
        }
    }
    Ok(root)
}

/// The table at `path`, through the last element of arrays of tables.
fn descend<'t>(mut table: &'t mut Table, path: &[String]) -> Option<&'t mut Table> {
    for key in path {
        let entry = table.entries.iter_mut().find(|e| e.key == *key)?;
        table = match &mut entry.item.value {
            Value::Table(t) => t,
            Value::Array {
                items,
                of_tables: true,
            } => match &mut items.last_mut()?.value {
                Value::Table(t) => t,
                _ => return None,
            },
            _ => return None,
        };
    }
    Some(table)
}

fn open_header(root: &mut Table, key: &Key, array: bool) -> Result<(), Error> {
    let mut table = root;
    for (i, (name, span)) in key.iter().enumerate() {
        let last = i + 1 == key.len();
        let path = || dotted(&key[..=i]);
        let Some(at) = table.position(name) else {
            let item = if last && array {
                let element = Item {
                    span: span.clone(),
                    value: Value::Table(Table::new(Origin::Header)),
                };
                Value::Array {
                    items: vec![element],
                    of_tables: true,
                }
            } else {
                Value::Table(Table::new(if last {
                    Origin::Header
                } else {
                    Origin::Implicit
                }))
            };
            table.entries.push(Entry {
                key: name.clone(),
                key_span: span.clone(),
                item: Item {
                    span: span.clone(),
                    value: item,
                },
            });
            if last {
                return Ok(());
            }
            let Some(Value::Table(t)) = table.entries.last_mut().map(|e| &mut e.item.value) else {
                return err(span.start, "internal: lost a new table");
            };
            table = t;
            continue;
        };
        let entry = &mut table.entries[at];
        table = match &mut entry.item.value {
            Value::Table(t) => {
                if t.origin == Origin::Inline {
                    return err(
                        span.start,
                        format!("`{}` is an inline table and cannot be extended", path()),
                    );
                }
                if last {
                    if array {
                        return err(
                            span.start,
                            format!("`{}` is a table, not an array of tables", path()),
                        );
                    }
                    if t.origin != Origin::Implicit {
                        return err(
                            span.start,
                            format!("the table `{}` is defined twice", path()),
                        );
                    }
                    t.origin = Origin::Header;
                    entry.item.span = span.clone();
                    return Ok(());
                }
                t
            }
            Value::Array {
                items,
                of_tables: true,
            } => {
                if last {
                    if !array {
                        return err(
                            span.start,
                            format!("`{}` is an array of tables: write `[[{}]]`", path(), path()),
                        );
                    }
                    items.push(Item {
                        span: span.clone(),
                        value: Value::Table(Table::new(Origin::Header)),
                    });
                    return Ok(());
                }
                match items.last_mut().map(|i| &mut i.value) {
                    Some(Value::Table(t)) => t,
                    _ => return err(span.start, "internal: an array of tables without a table"),
                }
            }
            other => {
                return err(
                    span.start,
                    format!("`{}` is already {}, not a table", path(), other.kind()),
                );
            }
        };
    }
    Ok(())
}

fn insert(table: &mut Table, key: &Key, item: Item) -> Result<(), Error> {
    let mut table = table;
    let Some(((name, span), parents)) = key.split_last() else {
        return err(item.span.start, "internal: an empty key");
    };
    for (i, (part, part_span)) in parents.iter().enumerate() {
        let at = match table.position(part) {
            Some(at) => at,
            None => {
                table.entries.push(Entry {
                    key: part.clone(),
                    key_span: part_span.clone(),
                    item: Item {
                        span: part_span.clone(),
                        value: Value::Table(Table::new(Origin::Dotted)),
                    },
                });
                table.entries.len() - 1
            }
        };
        let value = &mut table.entries[at].item.value;
        if !matches!(value, Value::Table(t) if t.origin == Origin::Dotted) {
            return err(
                part_span.start,
                format!("`{}` is already {}", dotted(&key[..=i]), value.kind()),
            );
        }
        let Value::Table(t) = value else {
            return err(part_span.start, "internal: lost a dotted table");
        };
        table = t;
    }
    if table.position(name).is_some() {
        return err(
            span.start,
            format!("the key `{}` is defined twice", dotted(key)),
        );
    }
    table.entries.push(Entry {
        key: name.clone(),
        key_span: span.clone(),
        item,
    });
    Ok(())
}

struct Reader<'a> {
    src: &'a str,
    pos: usize,
    /// Decimal numbers are values (the config file), not an error (rules files).
    numbers: bool,
}

fn is_bare(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'-'
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.src.as_bytes().get(self.pos).copied()
    }

    fn rest(&self) -> &str {
        &self.src[self.pos..]
    }

    fn skip_spaces(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    fn comment(&mut self) -> Result<(), Error> {
        if self.peek() == Some(b'#') {
            let end = self
                .rest()
                .find('\n')
                .map_or(self.src.len(), |n| self.pos + n);
            let end =
                if end > self.pos && self.src.as_bytes().get(end.wrapping_sub(1)) == Some(&b'\r') {
                    end - 1
                } else {
                    end
                };
            if let Some(bad) = self.src[self.pos..end].find(|c: char| c.is_control() && c != '\t') {
                return err(
                    self.pos + bad,
                    "control characters are not allowed in a comment",
                );
            }
            self.pos = end;
        }
        Ok(())
    }

    /// A newline (`\n` or `\r\n`) at the position, consumed.
    fn newline(&mut self) -> Result<bool, Error> {
        match self.peek() {
            Some(b'\n') => {
                self.pos += 1;
                Ok(true)
            }
            Some(b'\r') if self.src.as_bytes().get(self.pos + 1) == Some(&b'\n') => {
                self.pos += 2;
                Ok(true)
            }
            Some(b'\r') => err(self.pos, "a carriage return must be followed by a newline"),
            _ => Ok(false),
        }
    }

    /// Spaces, comments and newlines.
    fn skip_blank(&mut self) -> Result<(), Error> {
        loop {
            self.skip_spaces();
            self.comment()?;
            if !self.newline()? {
                return Ok(());
            }
        }
    }

    fn end_of_line(&mut self) -> Result<(), Error> {
        self.skip_spaces();
        self.comment()?;
        if self.peek().is_none() || self.newline()? {
            Ok(())
        } else {
            err(
                self.pos,
                "expected the end of the line (one key or table header per line)",
            )
        }
    }

    fn key(&mut self) -> Result<Key, Error> {
        let mut parts = Vec::new();
        loop {
            let start = self.pos;
            let name = match self.peek() {
                Some(b'"') => {
                    if self.rest().starts_with("\"\"\"") {
                        return err(start, "a key cannot be a multi-line string");
                    }
                    self.basic_string()?
                }
                Some(b'\'') => {
                    if self.rest().starts_with("'''") {
                        return err(start, "a key cannot be a multi-line string");
                    }
                    self.literal_string()?
                }
                Some(c) if is_bare(c) => {
                    while self.peek().is_some_and(is_bare) {
                        self.pos += 1;
                    }
                    self.src[start..self.pos].to_string()
                }
                _ => {
                    return err(
                        start,
                        "expected a key (letters, digits, `_`, `-`, or a quoted name)",
                    )
                }
            };
            parts.push((name, start..self.pos));
            self.skip_spaces();
            if self.peek() == Some(b'.') {
                self.pos += 1;
                self.skip_spaces();
            } else {
                return Ok(parts);
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Item, Error> {
        let start = self.pos;
        let value = match self.peek() {
            Some(b'"') if self.rest().starts_with("\"\"\"") => Value::String(self.multiline_basic()?),
            Some(b'"') => Value::String(self.basic_string()?),
            Some(b'\'') if self.rest().starts_with("'''") => Value::String(self.multiline_literal()?),
            Some(b'\'') => Value::String(self.literal_string()?),
            Some(b'[') => self.array(depth)?,
            Some(b'{') => self.inline_table(depth)?,
            Some(b't' | b'f') if self.word("true") || self.word("false") => {
                let value = self.rest().starts_with('t');
                self.pos += if value { 4 } else { 5 };
                Value::Boolean(value)
            }
            Some(c) if (c.is_ascii_digit() || c == b'+' || c == b'-') && self.numbers => self.number()?,
            Some(c) if c.is_ascii_digit() || c == b'+' || c == b'-' => {
                return err(start, "a rules file holds no numbers: thresholds go inside `when`, as in when = \"risky >= 0.7\"")
            }
            None => return err(start, "expected a value after `=`"),
            _ => return err(start, NOT_A_VALUE),
        };
        Ok(Item {
            span: start..self.pos,
            value,
        })
    }

    /// A decimal integer or float: `[+-]digits[.digits][(e|E)[+-]digits]`
    /// with `_` between digits. Dates, times, `inf`, `nan` and prefixed
    /// (hex, octal, binary) integers are refused.
    fn number(&mut self) -> Result<Value, Error> {
        let start = self.pos;
        let bytes = self.src.as_bytes();
        let mut end = start;
        while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || matches!(bytes[end], b'+' | b'-' | b'.' | b'_' | b':')) {
            end += 1;
        }
        let text = &self.src[start..end];
        let digits_ok = |part: &str| {
            !part.is_empty()
                && !part.starts_with('_')
                && !part.ends_with('_')
                && !part.contains("__")
                && part.bytes().all(|b| b.is_ascii_digit() || b == b'_')
        };
        let unsigned = text.strip_prefix(['+', '-']).unwrap_or(text);
        let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
            Some(i) => (&unsigned[..i], Some(&unsigned[i + 1..])),
            None => (unsigned, None),
        };
        let (int, frac) = match mantissa.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (mantissa, None),
        };
        let valid = digits_ok(int)
            && (int == "0" || !int.starts_with('0'))
            && frac.is_none_or(digits_ok)
            && exponent.is_none_or(|e| digits_ok(e.strip_prefix(['+', '-']).unwrap_or(e)));
        let value = valid.then(|| crate::number::parse(&text.replace('_', "").replace("+", ""))).flatten();
        match value {
            Some(v) => {
                self.pos = end;
                Ok(Value::Number(v))
            }
            None => err(start, format!("`{text}` is not a decimal number (write 0.2 or 256; dates, times, hex and inf are not read)")),
        }
    }

    /// `w` at the position, not followed by a key character.
    fn word(&self, w: &str) -> bool {
        self.rest().starts_with(w)
            && !self
                .src
                .as_bytes()
                .get(self.pos + w.len())
                .copied()
                .is_some_and(is_bare)
    }

    fn array(&mut self, depth: usize) -> Result<Value, Error> {
        if depth >= MAX_DEPTH {
            return err(
                self.pos,
                format!("arrays and inline tables are nested deeper than {MAX_DEPTH}"),
            );
        }
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_blank()?;
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(Value::Array {
                    items,
                    of_tables: false,
                });
            }
            items.push(self.value(depth + 1)?);
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b']') => {
                    self.pos += 1;
                    return Ok(Value::Array {
                        items,
                        of_tables: false,
                    });
                }
                _ => return err(self.pos, "expected `,` or `]` in the array"),
            }
        }
    }

    fn inline_table(&mut self, depth: usize) -> Result<Value, Error> {
        if depth >= MAX_DEPTH {
            return err(
                self.pos,
                format!("arrays and inline tables are nested deeper than {MAX_DEPTH}"),
            );
        }
        self.pos += 1;
        let mut table = Table::new(Origin::Dotted);
        loop {
            self.skip_blank()?;
            if self.peek() == Some(b'}') {
                self.pos += 1;
                break;
            }
            let key = self.key()?;
            self.skip_spaces();
            if self.peek() != Some(b'=') {
                return err(
                    self.pos,
                    format!("expected `=` after the key `{}`", dotted(&key)),
                );
            }
            self.pos += 1;
            self.skip_spaces();
            let item = self.value(depth + 1)?;
            insert(&mut table, &key, item)?;
            self.skip_blank()?;
            match self.peek() {
                Some(b',') => self.pos += 1,
                Some(b'}') => {
                    self.pos += 1;
                    break;
                }
                _ => return err(self.pos, "expected `,` or `}` in the inline table"),
            }
        }
        seal(&mut table);
        Ok(Value::Table(table))
    }

    /// A `"basic string"` at the position.
    fn basic_string(&mut self) -> Result<String, Error> {
        let open = self.pos;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let Some(c) = self.rest().chars().next() else {
                return err(open, "this string is never closed");
            };
            match c {
                '"' => {
                    self.pos += 1;
                    return Ok(out);
                }
                '\\' => self.escape(&mut out)?,
                '\n' | '\r' => {
                    return err(
                        open,
                        "this string is never closed on its line (use \"\"\" for several lines)",
                    )
                }
                c if c.is_control() && c != '\t' => {
                    return err(self.pos, "control characters must be escaped in a string")
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// A `'literal string'` at the position.
    fn literal_string(&mut self) -> Result<String, Error> {
        let open = self.pos;
        self.pos += 1;
        let Some(len) = self.rest().find(['\'', '\n', '\r']) else {
            return err(open, "this string is never closed");
        };
        if self.rest().as_bytes()[len] != b'\'' {
            return err(
                open,
                "this string is never closed on its line (use ''' for several lines)",
            );
        }
        let text = &self.src[self.pos..self.pos + len];
        if let Some(bad) = text.find(|c: char| c.is_control() && c != '\t') {
            return err(
                self.pos + bad,
                "control characters are not allowed in a literal string",
            );
        }
        self.pos += len + 1;
        Ok(text.to_string())
    }

    /// Past an opening `"""` or `'''`: skip one newline right after it.
    fn open_multiline(&mut self) -> Result<(), Error> {
        self.pos += 3;
        self.newline()?;
        Ok(())
    }

    /// At a run of the quote `q`: closes the string when it is 3 to 5 long
    /// (the extra ones belong to the string).
    fn close_multiline(&mut self, q: char, out: &mut String) -> Result<bool, Error> {
        let run = self.rest().bytes().take_while(|&b| b == q as u8).count();
        if run < 3 {
            for _ in 0..run {
                out.push(q);
            }
            self.pos += run;
            return Ok(false);
        }
        if run > 5 {
            return err(self.pos, format!("too many `{q}` in a row"));
        }
        for _ in 3..run {
            out.push(q);
        }
        self.pos += run;
        Ok(true)
    }

    fn multiline_basic(&mut self) -> Result<String, Error> {
        let open = self.pos;
        self.open_multiline()?;
        let mut out = String::new();
        loop {
            let Some(c) = self.rest().chars().next() else {
                return err(open, "this string is never closed");
            };
            match c {
                '"' => {
                    if self.close_multiline('"', &mut out)? {
                        return Ok(out);
                    }
                }
                '\\' => {
                    // A backslash at the end of a line trims the line break and
                    // the whitespace that follows.
                    let after = &self.rest()[1..];
                    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
                    let next = &after[spaces..];
                    if next.starts_with('\n') || next.starts_with("\r\n") {
                        self.pos += 1 + spaces;
                        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n'))
                            || self.rest().starts_with("\r\n")
                        {
                            self.pos += 1;
                        }
                    } else {
                        self.escape(&mut out)?;
                    }
                }
                '\r' if self.rest().starts_with("\r\n") => {
                    out.push('\n');
                    self.pos += 2;
                }
                c if c.is_control() && c != '\t' && c != '\n' => {
                    return err(self.pos, "control characters must be escaped in a string")
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    fn multiline_literal(&mut self) -> Result<String, Error> {
        let open = self.pos;
        self.open_multiline()?;
        let mut out = String::new();
        loop {
            let Some(c) = self.rest().chars().next() else {
                return err(open, "this string is never closed");
            };
            match c {
                '\'' => {
                    if self.close_multiline('\'', &mut out)? {
                        return Ok(out);
                    }
                }
                '\r' if self.rest().starts_with("\r\n") => {
                    out.push('\n');
                    self.pos += 2;
                }
                c if c.is_control() && c != '\t' && c != '\n' => {
                    return err(
                        self.pos,
                        "control characters are not allowed in a literal string",
                    )
                }
                c => {
                    out.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
    }

    /// At a backslash: one escape sequence, decoded into `out`.
    fn escape(&mut self, out: &mut String) -> Result<(), Error> {
        let at = self.pos;
        let Some(c) = self.src[at + 1..].chars().next() else {
            return err(at, "a backslash at the end of the text");
        };
        self.pos += 1 + c.len_utf8();
        let simple = match c {
            'b' => Some('\u{8}'),
            't' => Some('\t'),
            'n' => Some('\n'),
            'f' => Some('\u{c}'),
            'r' => Some('\r'),
            'e' => Some('\u{1b}'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            _ => None,
        };
        if let Some(s) = simple {
            out.push(s);
            return Ok(());
        }
        let digits = match c {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => return err(at, format!("`\\{c}` is not an escape (\\b \\t \\n \\f \\r \\e \\\" \\\\ \\xHH \\uHHHH \\UHHHHHHHH)")),
        };
        let hex = self
            .src
            .get(self.pos..self.pos + digits)
            .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
        let Some(ch) = hex
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .and_then(char::from_u32)
        else {
            return err(
                at,
                format!("`\\{c}` needs {digits} hex digits of a Unicode scalar value"),
            );
        };
        self.pos += digits;
        out.push(ch);
        Ok(())
    }
}

/// Closes an inline table and the dotted tables inside it for good.
fn seal(table: &mut Table) {
    table.origin = Origin::Inline;
    for entry in &mut table.entries {
        if let Value::Table(t) = &mut entry.item.value {
            if t.origin == Origin::Dotted {
                seal(t);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn get<'t>(table: &'t Table, path: &str) -> &'t Value {
        let mut value = None;
        let mut table = table;
        for key in path.split('/') {
            let v = &table
                .get(key)
                .unwrap_or_else(|| panic!("no {key}"))
                .item
                .value;
            if let Value::Table(t) = v {
                table = t;
            }
            value = Some(v);
        }
        value.unwrap()
    }

    fn s(v: &Value) -> &str {
        match v {
            Value::String(s) => s,
            other => panic!("not a string: {other:?}"),
        }
    }

    #[test]
    fn reads_tables_arrays_of_tables_and_keeps_the_files_order() {
        let doc = parse(
            "# rules\n[questions.kind]\ntype = \"choice\"\noptions = { b = \"B\", a = 'A' }\n\n[[rules]]\nwhen = \"x\"\nto = [\"one\",\n  \"two\", # c\n]\n[[rules]]\nwhen = 'y'\n",
        )
        .unwrap();
        assert_eq!(s(get(&doc, "questions/kind/type")), "choice");
        let Value::Table(options) = get(&doc, "questions/kind/options") else {
            panic!()
        };
        let keys: Vec<_> = options.entries.iter().map(|e| e.key.as_str()).collect();
        assert_eq!(keys, ["b", "a"], "file order, not sorted");
        let Value::Array {
            items,
            of_tables: true,
        } = get(&doc, "rules")
        else {
            panic!()
        };
        assert_eq!(items.len(), 2);
        let Value::Table(second) = &items[1].value else {
            panic!()
        };
        assert_eq!(s(&second.get("when").unwrap().item.value), "y");
        let Value::Table(first) = &items[0].value else {
            panic!()
        };
        let Value::Array { items: to, .. } = &first.get("to").unwrap().item.value else {
            panic!()
        };
        assert_eq!(to.len(), 2);
    }

    #[test]
    fn spans_point_at_the_value() {
        let src = "a = \"xyz\"\n[t]\nb = true\n";
        let doc = parse(src).unwrap();
        let a = &doc.get("a").unwrap().item;
        assert_eq!(&src[a.span.clone()], "\"xyz\"");
        let t = doc.get("t").unwrap();
        assert_eq!(&src[t.item.span.clone()], "t");
        assert_eq!(get(&doc, "t/b"), &Value::Boolean(true));
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
    fn booleans_and_no_numbers() {
        let doc = parse("f = true\ng = false\n").unwrap();
        assert_eq!(get(&doc, "f"), &Value::Boolean(true));
        assert_eq!(get(&doc, "g"), &Value::Boolean(false));
        for src in [
            "a = 1\n",
            "a = 0.7\n",
            "a = -3\n",
            "a = +1\n",
            "a = 1979-05-27\n",
        ] {
            assert!(error(src).contains("no numbers"), "{src}");
        }
        assert!(error("a = inf\n").contains("needs quotes"));
        assert!(error("a = truex\n").contains("needs quotes"));
    }

    #[test]
    fn dotted_keys_make_tables() {
        let doc = parse("a.b = 'x'\na.c = 'y'\n\"q k\".x = 'z'\n").unwrap();
        assert_eq!(s(get(&doc, "a/c")), "y");
        assert_eq!(s(get(&doc, "q k/x")), "z");
    }

    fn error(src: &str) -> String {
        parse(src).expect_err(src).message
    }

    #[test]
    fn refuses_what_toml_refuses() {
        assert!(error("a = true\na = false\n").contains("defined twice"));
        assert!(error("[t]\n[t]\n").contains("defined twice"));
        assert!(error("[t]\n[[t]]\n").contains("not an array of tables"));
        assert!(error("[[t]]\n[t]\n").contains("array of tables"));
        assert!(error("t = true\n[t.x]\n").contains("already a boolean"));
        assert!(error("t = {a = true}\n[t]\n").contains("inline table"));
        assert!(error("a = research\n").contains("needs quotes"));
        assert!(error("t = {a = true}\n[t.b]\n").contains("inline table"));
        assert!(error("a = \"open\n").contains("never closed"));
        assert!(error("a = \"\\q\"\n").contains("not an escape"));
        assert!(error("a = true b = false\n").contains("end of the line"));
        assert!(error("a\n").contains("expected `=`"));
        assert!(error("a = ['x' 'y']\n").contains("`,` or `]`"));
        assert!(error("[t\n").contains("`]`"));
        assert!(error("a = \n").contains("expected a value"));
        assert!(error(&format!("a = {}{}\n", "[".repeat(40), "]".repeat(40))).contains("nested"));
    }

    #[test]
    fn error_positions_are_bytes_of_the_text() {
        let e = parse("ok = true\nbad = ?\n").unwrap_err();
        assert_eq!(e.at, 16);
    }

    proptest! {
        #[test]
        fn never_panics_on_any_text(src in ".{0,200}") {
            let _ = parse(&src);
        }

        #[test]
        fn never_panics_on_toml_like_text(src in r#"[\[\]{}=,."'\\a-c0-9 \n#_+\-:etruf]{0,120}"#) {
            let _ = parse(&src);
        }
    }
}
