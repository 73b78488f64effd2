//! The rules file (seed 003 §5): typed questions, ordered rules, `[otherwise]`;
//! read with [`crate::toml_file`] (the `toml` crate) and validated with a
//! message per problem, each with its line and column. A rules file holds no
//! numbers: thresholds live inside `when` strings.
//!
//! ```toml
//! [questions.kind]
//! type = "choice"
//! ask  = "What is the main kind of work `message` asks for?"
//! options = { research = "…", implement = "…", other = "…" }
//!
//! [[rules]]
//! when = "kind == research and kind.margin >= 0.2"
//! to   = ["agent_3"]
//!
//! [otherwise]
//! do = "return"
//! ```

use core::ops::Range;

use super::expr::{self, join, Expr, Shape};
use crate::toml_file::{self, kind, DeTable as Table, DeValue as Value, Item, Key};

/// Score questions have 2 to 10 levels (Jev refuses 11 with a 400).
pub const MIN_LEVELS: usize = 2;
pub const MAX_LEVELS: usize = 10;
/// Choice questions have 2 to 255 options (the API's limit).
pub const MIN_OPTIONS: usize = 2;
pub const MAX_OPTIONS: usize = 255;
/// A rules file is at most this many bytes.
pub const MAX_BYTES: usize = 256 * 1024;

#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    /// `(name, description)` in the file's order.
    Choice {
        options: Vec<(String, String)>,
    },
    Noul {
        true_if: String,
        false_if: String,
    },
    /// Level descriptions, lowest first (level 1 is the first).
    Score {
        levels: Vec<String>,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Question {
    pub name: String,
    pub ask: String,
    pub kind: Kind,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// `to = [...]`: hand over (one target) or fan out and gather (several).
    Route(Vec<String>),
    /// `do = "return"`, with the optional `note`.
    Return(Option<String>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub when: Expr,
    pub action: Action,
}

/// A loaded, valid rules file.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    /// In the file's order.
    pub questions: Vec<Question>,
    /// In the file's order: rule `n` (1-based) is `rules[n - 1]`.
    pub rules: Vec<Rule>,
    pub otherwise: Action,
}

impl Rules {
    pub fn question(&self, name: &str) -> Option<&Question> {
        self.questions.iter().find(|q| q.name == name)
    }
}

/// One problem of a rules file: 1-based line and column (in characters).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadError {
    pub line: u32,
    pub column: u32,
    pub message: String,
}

impl core::fmt::Display for LoadError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}:{}: {}", self.line, self.column, self.message)
    }
}

/// Loads and validates a rules file; on failure, every problem found, in
/// the order of the file.
pub fn load(src: &str) -> Result<Rules, Vec<LoadError>> {
    let mut v = Validator {
        src,
        lines: toml_file::Lines::new(src),
        errors: Vec::new(),
    };
    if src.len() > MAX_BYTES {
        v.error(
            0,
            format!("the rules file is larger than {} KiB", MAX_BYTES / 1024),
        );
        return Err(v.errors);
    }
    let root = match toml_file::parse(src) {
        Ok(root) => root,
        Err(e) => {
            v.error(e.at, format!("TOML: {}", e.message));
            return Err(v.errors);
        }
    };
    // One message for the first number (or date, `inf`, `nan`), as for a
    // syntax error: thresholds go inside `when`.
    let number = |v: &Item<'_>| matches!(v.get_ref(), Value::Integer(_) | Value::Float(_) | Value::Datetime(_));
    if let Some(n) = toml_file::first(&root, &number) {
        let text = src.get(n.span()).unwrap_or("");
        let message = if text.contains(['i', 'n']) {
            toml_file::NOT_A_VALUE
        } else {
            "a rules file holds no numbers: thresholds go inside `when`, as in when = \"risky >= 0.7\""
        };
        v.error(n.span().start, format!("TOML: {message}"));
        return Err(v.errors);
    }
    let rules = v.rules_file(&root);
    // In the file's order (stable: errors at one place keep the order they were found in).
    v.errors.sort_by_key(|e| (e.line, e.column));
    match rules {
        Some(rules) if v.errors.is_empty() => Ok(rules),
        _ => Err(v.errors),
    }
}

struct Validator<'s> {
    src: &'s str,
    /// Where `src`'s lines start: every error's position in O(log lines).
    lines: toml_file::Lines,
    errors: Vec<LoadError>,
}

const QUESTION_KEYS: [&str; 6] = ["type", "ask", "options", "true_if", "false_if", "levels"];

/// A key and its value, as a table holds them.
type Entry<'t, 's> = (&'t Key<'s>, &'t Item<'s>);

fn name<'t>(key: &'t Key<'_>) -> &'t str {
    key.get_ref().as_ref()
}

impl Validator<'_> {
    fn error(&mut self, at: usize, message: impl Into<String>) {
        let (line, column) = self.lines.position(self.src, at);
        self.errors.push(LoadError {
            line,
            column,
            message: message.into(),
        });
    }

    fn rules_file(&mut self, root: &Table<'_>) -> Option<Rules> {
        for (key, _) in root {
            if !["questions", "rules", "otherwise"].contains(&name(key)) {
                self.error(
                    key.span().start,
                    format!("unknown key `{}`: a rules file has `[questions.NAME]`, `[[rules]]` and `[otherwise]`", name(key)),
                );
            }
        }
        let questions = self.questions(root);
        // Without valid questions, `when`s are checked for syntax only.
        let rules = self.rules(root, questions.as_deref());
        let otherwise = match root.get_key_value("otherwise") {
            None => {
                self.error(
                    self.src.len(),
                    "no `[otherwise]`: say what happens when no rule matches (`do = \"return\"` or `to = [...]`)",
                );
                None
            }
            Some((key, item)) => match item.get_ref() {
                Value::Table(table) => {
                    self.action("`[otherwise]`", item, table, &["do", "to", "note"])
                }
                other => {
                    self.error(
                        key.span().start,
                        format!(
                            "`otherwise` must be a table `[otherwise]`, not {}",
                            kind(other)
                        ),
                    );
                    None
                }
            },
        };
        if let Some(Value::Table(table)) = root.get("otherwise").map(|i| i.get_ref()) {
            if let Some((when, _)) = table.get_key_value("when") {
                self.error(
                    when.span().start,
                    "`[otherwise]` has no `when`: it applies when no rule matched",
                );
            }
        }
        Some(Rules {
            questions: questions?,
            rules: rules?,
            otherwise: otherwise?,
        })
    }

    fn questions(&mut self, root: &Table<'_>) -> Option<Vec<Question>> {
        let Some((key, item)) = root.get_key_value("questions") else {
            self.error(0, "no questions: declare at least one `[questions.NAME]` with `type`, `ask` and its answers");
            return None;
        };
        let Value::Table(table) = item.get_ref() else {
            self.error(
                key.span().start,
                "`questions` must hold tables: `[questions.NAME]`",
            );
            return None;
        };
        if table.is_empty() {
            self.error(
                key.span().start,
                "no questions: declare at least one `[questions.NAME]`",
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for entry in table {
            match self.question(entry) {
                Some(q) => out.push(q),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn name_ok(&mut self, what: &str, name: &str, at: usize) -> bool {
        if expr::KEYWORDS.contains(&name) {
            self.error(
                at,
                format!("`{name}` is a keyword of the rules and cannot name {what}"),
            );
            false
        } else if !expr::is_name(name) {
            self.error(
                at,
                format!("`{name}` cannot name {what}: use letters, digits, `_` and `-`, starting with a letter or `_`"),
            );
            false
        } else {
            true
        }
    }

    fn question(&mut self, (key, item): Entry<'_, '_>) -> Option<Question> {
        let name = name(key);
        let at = key.span().start;
        let named = self.name_ok("a question", name, at);
        let Value::Table(table) = item.get_ref() else {
            self.error(
                at,
                format!("question `{name}` must be a table `[questions.{name}]`"),
            );
            return None;
        };
        let kind = match table.get("type") {
            None => {
                self.error(
                    at,
                    format!("question `{name}` has no `type` (\"choice\", \"noul\" or \"score\")"),
                );
                return None;
            }
            Some(item) => match item.get_ref().as_str() {
                Some(kind) if ["choice", "noul", "score"].contains(&kind) => kind,
                _ => {
                    self.error(
                        item.span().start,
                        format!("question `{name}`: `type` must be \"choice\", \"noul\" or \"score\""),
                    );
                    return None;
                }
            },
        };
        let allowed: &[&str] = match kind {
            "choice" => &["type", "ask", "options"],
            "noul" => &["type", "ask", "true_if", "false_if"],
            _ => &["type", "ask", "levels"],
        };
        for (k, _) in table {
            let k_name = self::name(k);
            if !allowed.contains(&k_name) {
                let hint = if QUESTION_KEYS.contains(&k_name) {
                    " for this type"
                } else {
                    ""
                };
                self.error(
                    k.span().start,
                    format!(
                        "question `{name}`: unknown key `{k_name}`{hint} (a {kind} question has {})",
                        join(allowed, ", ")
                    ),
                );
            }
        }
        let ask = self.text(table, "ask", &format!("question `{name}`"), at);
        let kind = match kind {
            "choice" => self
                .options(name, table, at)
                .map(|options| Kind::Choice { options }),
            "noul" => {
                let what = format!("question `{name}`");
                let true_if = self.text(table, "true_if", &what, at);
                let false_if = self.text(table, "false_if", &what, at);
                Some(Kind::Noul {
                    true_if: true_if?,
                    false_if: false_if?,
                })
            }
            _ => self
                .levels(name, table, at)
                .map(|levels| Kind::Score { levels }),
        };
        if !named {
            return None;
        }
        Some(Question {
            name: name.to_string(),
            ask: ask?,
            kind: kind?,
        })
    }

    /// A required, non-empty string.
    fn text(&mut self, table: &Table<'_>, key: &str, what: &str, at: usize) -> Option<String> {
        let Some(item) = table.get(key) else {
            self.error(at, format!("{what} has no `{key}`"));
            return None;
        };
        match item.get_ref() {
            Value::String(s) if s.trim().is_empty() => {
                self.error(item.span().start, format!("{what}: `{key}` is empty"));
                None
            }
            Value::String(s) => Some(s.to_string()),
            other => {
                self.error(
                    item.span().start,
                    format!("{what}: `{key}` must be a string, not {}", kind(other)),
                );
                None
            }
        }
    }

    fn options(&mut self, name: &str, table: &Table<'_>, at: usize) -> Option<Vec<(String, String)>> {
        let Some(item) = table.get("options") else {
            self.error(
                at,
                format!("question `{name}` has no `options = {{ name = \"description\", … }}`"),
            );
            return None;
        };
        let Value::Table(options) = item.get_ref() else {
            self.error(
                item.span().start,
                format!("question `{name}`: `options` must be a table of name = \"description\", not {}", kind(item.get_ref())),
            );
            return None;
        };
        let n = options.len();
        if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&n) {
            self.error(
                item.span().start,
                format!("question `{name}` has {n} option(s); a choice has {MIN_OPTIONS} to {MAX_OPTIONS}"),
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (key, option) in options {
            let option_name = self::name(key);
            ok &= self.name_ok("an option", option_name, key.span().start);
            match option.get_ref() {
                Value::String(d) if !d.trim().is_empty() => {
                    out.push((option_name.to_string(), d.to_string()))
                }
                Value::String(_) => {
                    self.error(
                        option.span().start,
                        format!("question `{name}`: option `{option_name}` has an empty description"),
                    );
                    ok = false;
                }
                other => {
                    self.error(
                        option.span().start,
                        format!(
                            "question `{name}`: option `{option_name}` must be described by a string, not {}",
                            kind(other)
                        ),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn levels(&mut self, name: &str, table: &Table<'_>, at: usize) -> Option<Vec<String>> {
        let Some(item) = table.get("levels") else {
            self.error(
                at,
                format!("question `{name}` has no `levels = [\"lowest\", …, \"highest\"]`"),
            );
            return None;
        };
        let Value::Array(items) = item.get_ref() else {
            self.error(
                item.span().start,
                format!("question `{name}`: `levels` must be an array of strings"),
            );
            return None;
        };
        if !(MIN_LEVELS..=MAX_LEVELS).contains(&items.len()) {
            self.error(
                item.span().start,
                format!(
                    "question `{name}` has {} level(s); Jev takes {MIN_LEVELS} to {MAX_LEVELS}",
                    items.len()
                ),
            );
            return None;
        }
        let mut out = Vec::new();
        for level in items.iter() {
            match level.get_ref() {
                Value::String(s) if !s.trim().is_empty() => out.push(s.to_string()),
                _ => {
                    self.error(
                        level.span().start,
                        format!("question `{name}`: each level is a non-empty string"),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    fn rules(&mut self, root: &Table<'_>, questions: Option<&[Question]>) -> Option<Vec<Rule>> {
        let Some((key, item)) = root.get_key_value("rules") else {
            self.error(
                self.src.len(),
                "no rules: add at least one `[[rules]]` with `when` and `to` or `do`",
            );
            return None;
        };
        let Value::Array(items) = item.get_ref() else {
            self.error(
                key.span().start,
                "rules are written as `[[rules]]` tables, in order",
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                item.span().start,
                "no rules: add at least one `[[rules]]`",
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let what = format!("rule {}", i + 1);
            let Value::Table(table) = item.get_ref() else {
                self.error(
                    item.span().start,
                    format!("{what}: rules are written as `[[rules]]` tables"),
                );
                ok = false;
                continue;
            };
            let when = self.when(&what, item, table, questions);
            let action = self.action(&what, item, table, &["when", "do", "to", "note"]);
            match (when, action) {
                (Some(when), Some(action)) => out.push(Rule { when, action }),
                _ => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn when(
        &mut self,
        what: &str,
        item: &Item<'_>,
        table: &Table<'_>,
        questions: Option<&[Question]>,
    ) -> Option<Expr> {
        let Some(when) = table.get("when") else {
            self.error(
                item.span().start,
                format!("{what} has no `when = \"<condition>\"`"),
            );
            return None;
        };
        let Value::String(src) = when.get_ref() else {
            self.error(
                when.span().start,
                format!(
                    "{what}: `when` must be a string, not {}",
                    kind(when.get_ref())
                ),
            );
            return None;
        };
        let span = when.span();
        let parsed = match expr::parse(src) {
            Ok(e) => e,
            Err(e) => {
                self.error(
                    self.in_string(&span, src, e.at),
                    format!("{what}: {}", e.message),
                );
                return None;
            }
        };
        let questions = questions?;
        let options: Vec<Vec<String>> = questions.iter().map(option_names).collect();
        let shapes: Vec<(&str, Shape<'_>)> = questions
            .iter()
            .zip(&options)
            .map(|(q, names)| (q.name.as_str(), shape(q, names)))
            .collect();
        let names: Vec<&str> = questions.iter().map(|q| q.name.as_str()).collect();
        let shape_of = |name: &str| shapes.iter().find(|(n, _)| *n == name).map(|&(_, s)| s);
        let errors = expr::check(&parsed, &shape_of, &names);
        if errors.is_empty() {
            return Some(parsed);
        }
        for e in errors {
            self.error(
                self.in_string(&span, src, e.at),
                format!("{what}: {}", e.message),
            );
        }
        None
    }

    /// The byte in the file of byte `at` of a string value: exact when the
    /// string is written on one line without escapes, else the string's start.
    fn in_string(&self, span: &Range<usize>, decoded: &str, at: usize) -> usize {
        let raw = self.src.get(span.clone()).unwrap_or("");
        let body = raw.get(1..raw.len().saturating_sub(1)).unwrap_or("");
        if raw.len() >= 2
            && !raw.starts_with("\"\"\"")
            && !raw.starts_with("'''")
            && body == decoded
        {
            span.start + 1 + at
        } else {
            span.start
        }
    }

    /// `to = [...]` or `do = "return"` (+ `note`), and no other key than `allowed`.
    fn action(
        &mut self,
        what: &str,
        item: &Item<'_>,
        table: &Table<'_>,
        allowed: &[&str],
    ) -> Option<Action> {
        for (key, _) in table {
            if !allowed.contains(&name(key)) && name(key) != "when" {
                self.error(
                    key.span().start,
                    format!(
                        "{what}: unknown key `{}` (expected {})",
                        name(key),
                        join(allowed, ", ")
                    ),
                );
            }
        }
        let to = table.get_key_value("to");
        let act = table.get_key_value("do");
        let note = table.get_key_value("note");
        match (to, act) {
            (Some((to, _)), Some((act, _))) => {
                let at = to.span().start.max(act.span().start);
                self.error(at, format!("{what} has both `to` and `do`: a rule either routes (`to = [...]`) or returns (`do = \"return\"`)"));
                None
            }
            (None, None) => {
                self.error(
                    item.span().start,
                    format!("{what} says neither `to = [\"target\", …]` nor `do = \"return\"`"),
                );
                None
            }
            (Some((_, to)), None) => {
                if let Some((note, _)) = note {
                    self.error(
                        note.span().start,
                        format!("{what}: `note` goes with `do = \"return\"`, not with `to`"),
                    );
                }
                self.targets(what, to).map(Action::Route)
            }
            (None, Some((_, act))) => {
                let ok = match act.get_ref().as_str() {
                    Some("return") => true,
                    _ => {
                        self.error(act.span().start, format!("{what}: `do` can only be \"return\" (to route, write `to = [...]`)"));
                        false
                    }
                };
                let note = match note.map(|(_, n)| n) {
                    None => Some(None),
                    Some(n) => match n.get_ref() {
                        Value::String(s) => Some(Some(s.to_string())),
                        other => {
                            self.error(
                                n.span().start,
                                format!("{what}: `note` must be a string, not {}", kind(other)),
                            );
                            None
                        }
                    },
                };
                if !ok {
                    return None;
                }
                note.map(Action::Return)
            }
        }
    }

    fn targets(&mut self, what: &str, to: &Item<'_>) -> Option<Vec<String>> {
        let Value::Array(items) = to.get_ref() else {
            let hint = match to.get_ref() {
                Value::String(s) => format!(" (write `to = [\"{s}\"]`)"),
                _ => String::new(),
            };
            self.error(
                to.span().start,
                format!("{what}: `to` must be a list of targets{hint}"),
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                to.span().start,
                format!("{what}: `to` is empty; name at least one target"),
            );
            return None;
        }
        let mut out: Vec<String> = Vec::new();
        let mut ok = true;
        for item in items.iter() {
            match item.get_ref() {
                Value::String(s)
                    if s.trim().is_empty() || s.chars().any(|c| c.is_whitespace() || c == ',') =>
                {
                    self.error(
                        item.span().start,
                        format!("{what}: a target is a name without spaces or commas"),
                    );
                    ok = false;
                }
                Value::String(s) if out.iter().any(|o| o == s) => {
                    self.error(
                        item.span().start,
                        format!("{what}: `{s}` is named twice in `to`"),
                    );
                    ok = false;
                }
                Value::String(s) => out.push(s.to_string()),
                other => {
                    self.error(
                        item.span().start,
                        format!("{what}: a target is a string, not {}", kind(other)),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }
}

fn option_names(q: &Question) -> Vec<String> {
    match &q.kind {
        Kind::Choice { options } => options.iter().map(|(name, _)| name.clone()).collect(),
        _ => Vec::new(),
    }
}

fn shape<'a>(q: &Question, options: &'a [String]) -> Shape<'a> {
    match &q.kind {
        Kind::Choice { .. } => Shape::Choice(options),
        Kind::Noul { .. } => Shape::Noul,
        Kind::Score { levels } => Shape::Score(levels.len()),
    }
}
