//! The rules file (seed 003 §5): typed questions, ordered rules, `[otherwise]`;
//! read with [`crate::toml`] and validated with a message per problem, each
//! with its line and column.
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
use crate::toml::{self, Entry, Item, Table, Value};

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
        errors: Vec::new(),
    };
    if src.len() > MAX_BYTES {
        v.error(
            0,
            format!("the rules file is larger than {} KiB", MAX_BYTES / 1024),
        );
        return Err(v.errors);
    }
    let root = match toml::parse(src) {
        Ok(root) => root,
        Err(e) => {
            v.error(e.at, format!("TOML: {}", e.message));
            return Err(v.errors);
        }
    };
    let rules = v.rules_file(&root);
    // In the file's order (a few errors: insertion sort keeps the component small).
    for i in 1..v.errors.len() {
        let mut j = i;
        while j > 0
            && (v.errors[j - 1].line, v.errors[j - 1].column)
                > (v.errors[j].line, v.errors[j].column)
        {
            v.errors.swap(j - 1, j);
            j -= 1;
        }
    }
    match rules {
        Some(rules) if v.errors.is_empty() => Ok(rules),
        _ => Err(v.errors),
    }
}

/// 1-based line and column (characters) of byte `at` in `src`.
pub fn position(src: &str, at: usize) -> (u32, u32) {
    let mut at = at.min(src.len());
    while !src.is_char_boundary(at) {
        at -= 1;
    }
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |n| n + 1);
    let column = src[line_start..at].chars().count() + 1;
    (
        u32::try_from(line).unwrap_or(u32::MAX),
        u32::try_from(column).unwrap_or(u32::MAX),
    )
}

struct Validator<'s> {
    src: &'s str,
    errors: Vec<LoadError>,
}

const QUESTION_KEYS: [&str; 6] = ["type", "ask", "options", "true_if", "false_if", "levels"];

impl Validator<'_> {
    fn error(&mut self, at: usize, message: impl Into<String>) {
        let (line, column) = position(self.src, at);
        self.errors.push(LoadError {
            line,
            column,
            message: message.into(),
        });
    }

    fn rules_file(&mut self, root: &Table) -> Option<Rules> {
        for entry in &root.entries {
            if !["questions", "rules", "otherwise"].contains(&entry.key.as_str()) {
                self.error(
                    entry.key_span.start,
                    format!("unknown key `{}`: a rules file has `[questions.NAME]`, `[[rules]]` and `[otherwise]`", entry.key),
                );
            }
        }
        let questions = self.questions(root);
        // Without valid questions, `when`s are checked for syntax only.
        let rules = self.rules(root, questions.as_deref());
        let otherwise = match root.get("otherwise") {
            None => {
                self.error(
                    self.src.len(),
                    "no `[otherwise]`: say what happens when no rule matches (`do = \"return\"` or `to = [...]`)",
                );
                None
            }
            Some(entry) => match &entry.item.value {
                Value::Table(table) => {
                    self.action("`[otherwise]`", &entry.item, table, &["do", "to", "note"])
                }
                other => {
                    self.error(
                        entry.key_span.start,
                        format!(
                            "`otherwise` must be a table `[otherwise]`, not {}",
                            other.kind()
                        ),
                    );
                    None
                }
            },
        };
        if let Some(entry) = root.get("otherwise") {
            if let Value::Table(table) = &entry.item.value {
                if let Some(when) = table.get("when") {
                    self.error(
                        when.key_span.start,
                        "`[otherwise]` has no `when`: it applies when no rule matched",
                    );
                }
            }
        }
        Some(Rules {
            questions: questions?,
            rules: rules?,
            otherwise: otherwise?,
        })
    }

    fn questions(&mut self, root: &Table) -> Option<Vec<Question>> {
        let Some(entry) = root.get("questions") else {
            self.error(0, "no questions: declare at least one `[questions.NAME]` with `type`, `ask` and its answers");
            return None;
        };
        let Value::Table(table) = &entry.item.value else {
            self.error(
                entry.key_span.start,
                "`questions` must hold tables: `[questions.NAME]`",
            );
            return None;
        };
        if table.entries.is_empty() {
            self.error(
                entry.key_span.start,
                "no questions: declare at least one `[questions.NAME]`",
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for entry in &table.entries {
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

    fn question(&mut self, entry: &Entry) -> Option<Question> {
        let name = entry.key.as_str();
        let at = entry.key_span.start;
        let named = self.name_ok("a question", name, at);
        let Value::Table(table) = &entry.item.value else {
            self.error(
                at,
                format!("question `{name}` must be a table `[questions.{name}]`"),
            );
            return None;
        };
        let kind = match table.get("type").map(|e| &e.item) {
            None => {
                self.error(
                    at,
                    format!("question `{name}` has no `type` (\"choice\", \"noul\" or \"score\")"),
                );
                return None;
            }
            Some(Item {
                value: Value::String(kind),
                ..
            }) if ["choice", "noul", "score"].contains(&kind.as_str()) => kind.as_str(),
            Some(item) => {
                self.error(
                    item.span.start,
                    format!("question `{name}`: `type` must be \"choice\", \"noul\" or \"score\""),
                );
                return None;
            }
        };
        let allowed: &[&str] = match kind {
            "choice" => &["type", "ask", "options"],
            "noul" => &["type", "ask", "true_if", "false_if"],
            _ => &["type", "ask", "levels"],
        };
        for e in &table.entries {
            if !allowed.contains(&e.key.as_str()) {
                let hint = if QUESTION_KEYS.contains(&e.key.as_str()) {
                    " for this type"
                } else {
                    ""
                };
                self.error(
                    e.key_span.start,
                    format!(
                        "question `{name}`: unknown key `{}`{hint} (a {kind} question has {})",
                        e.key,
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
    fn text(&mut self, table: &Table, key: &str, what: &str, at: usize) -> Option<String> {
        match table.get(key) {
            None => {
                self.error(at, format!("{what} has no `{key}`"));
                None
            }
            Some(Entry {
                item:
                    Item {
                        value: Value::String(s),
                        span,
                    },
                ..
            }) => {
                if s.trim().is_empty() {
                    self.error(span.start, format!("{what}: `{key}` is empty"));
                    None
                } else {
                    Some(s.clone())
                }
            }
            Some(e) => {
                self.error(
                    e.item.span.start,
                    format!(
                        "{what}: `{key}` must be a string, not {}",
                        e.item.value.kind()
                    ),
                );
                None
            }
        }
    }

    fn options(&mut self, name: &str, table: &Table, at: usize) -> Option<Vec<(String, String)>> {
        let Some(entry) = table.get("options") else {
            self.error(
                at,
                format!("question `{name}` has no `options = {{ name = \"description\", … }}`"),
            );
            return None;
        };
        let Value::Table(options) = &entry.item.value else {
            self.error(
                entry.item.span.start,
                format!("question `{name}`: `options` must be a table of name = \"description\", not {}", entry.item.value.kind()),
            );
            return None;
        };
        let n = options.entries.len();
        if !(MIN_OPTIONS..=MAX_OPTIONS).contains(&n) {
            self.error(
                entry.item.span.start,
                format!("question `{name}` has {n} option(s); a choice has {MIN_OPTIONS} to {MAX_OPTIONS}"),
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for option in &options.entries {
            ok &= self.name_ok("an option", &option.key, option.key_span.start);
            match &option.item.value {
                Value::String(d) if !d.trim().is_empty() => {
                    out.push((option.key.clone(), d.clone()))
                }
                Value::String(_) => {
                    self.error(
                        option.item.span.start,
                        format!(
                            "question `{name}`: option `{}` has an empty description",
                            option.key
                        ),
                    );
                    ok = false;
                }
                other => {
                    self.error(
                        option.item.span.start,
                        format!(
                            "question `{name}`: option `{}` must be described by a string, not {}",
                            option.key,
                            other.kind()
                        ),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(out)
    }

    fn levels(&mut self, name: &str, table: &Table, at: usize) -> Option<Vec<String>> {
        let Some(entry) = table.get("levels") else {
            self.error(
                at,
                format!("question `{name}` has no `levels = [\"lowest\", …, \"highest\"]`"),
            );
            return None;
        };
        let Value::Array { items, .. } = &entry.item.value else {
            self.error(
                entry.item.span.start,
                format!("question `{name}`: `levels` must be an array of strings"),
            );
            return None;
        };
        if !(MIN_LEVELS..=MAX_LEVELS).contains(&items.len()) {
            self.error(
                entry.item.span.start,
                format!(
                    "question `{name}` has {} level(s); Jev takes {MIN_LEVELS} to {MAX_LEVELS}",
                    items.len()
                ),
            );
            return None;
        }
        let mut out = Vec::new();
        for item in items {
            match &item.value {
                Value::String(s) if !s.trim().is_empty() => out.push(s.clone()),
                _ => {
                    self.error(
                        item.span.start,
                        format!("question `{name}`: each level is a non-empty string"),
                    );
                    return None;
                }
            }
        }
        Some(out)
    }

    fn rules(&mut self, root: &Table, questions: Option<&[Question]>) -> Option<Vec<Rule>> {
        let Some(entry) = root.get("rules") else {
            self.error(
                self.src.len(),
                "no rules: add at least one `[[rules]]` with `when` and `to` or `do`",
            );
            return None;
        };
        let Value::Array { items, .. } = &entry.item.value else {
            self.error(
                entry.key_span.start,
                "rules are written as `[[rules]]` tables, in order",
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                entry.item.span.start,
                "no rules: add at least one `[[rules]]`",
            );
            return None;
        }
        let mut out = Vec::new();
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            let what = format!("rule {}", i + 1);
            let Value::Table(table) = &item.value else {
                self.error(
                    item.span.start,
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
        item: &Item,
        table: &Table,
        questions: Option<&[Question]>,
    ) -> Option<Expr> {
        let Some(entry) = table.get("when") else {
            self.error(
                item.span.start,
                format!("{what} has no `when = \"<condition>\"`"),
            );
            return None;
        };
        let Value::String(src) = &entry.item.value else {
            self.error(
                entry.item.span.start,
                format!(
                    "{what}: `when` must be a string, not {}",
                    entry.item.value.kind()
                ),
            );
            return None;
        };
        let span = entry.item.span.clone();
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
        item: &Item,
        table: &Table,
        allowed: &[&str],
    ) -> Option<Action> {
        for e in &table.entries {
            if !allowed.contains(&e.key.as_str()) && e.key != "when" {
                self.error(
                    e.key_span.start,
                    format!(
                        "{what}: unknown key `{}` (expected {})",
                        e.key,
                        join(allowed, ", ")
                    ),
                );
            }
        }
        let to = table.get("to");
        let act = table.get("do");
        let note = table.get("note");
        match (to, act) {
            (Some(to), Some(act)) => {
                let at = to.key_span.start.max(act.key_span.start);
                self.error(at, format!("{what} has both `to` and `do`: a rule either routes (`to = [...]`) or returns (`do = \"return\"`)"));
                None
            }
            (None, None) => {
                self.error(
                    item.span.start,
                    format!("{what} says neither `to = [\"target\", …]` nor `do = \"return\"`"),
                );
                None
            }
            (Some(to), None) => {
                if let Some(note) = note {
                    self.error(
                        note.key_span.start,
                        format!("{what}: `note` goes with `do = \"return\"`, not with `to`"),
                    );
                }
                self.targets(what, to).map(Action::Route)
            }
            (None, Some(act)) => {
                let ok = match &act.item.value {
                    Value::String(s) if s == "return" => true,
                    _ => {
                        self.error(act.item.span.start, format!("{what}: `do` can only be \"return\" (to route, write `to = [...]`)"));
                        false
                    }
                };
                let note = match note.map(|n| &n.item) {
                    None => Some(None),
                    Some(Item {
                        value: Value::String(s),
                        ..
                    }) => Some(Some(s.clone())),
                    Some(other) => {
                        self.error(
                            other.span.start,
                            format!(
                                "{what}: `note` must be a string, not {}",
                                other.value.kind()
                            ),
                        );
                        None
                    }
                };
                if !ok {
                    return None;
                }
                note.map(Action::Return)
            }
        }
    }

    fn targets(&mut self, what: &str, to: &Entry) -> Option<Vec<String>> {
        let Value::Array { items, .. } = &to.item.value else {
            let hint = match &to.item.value {
                Value::String(s) => format!(" (write `to = [\"{s}\"]`)"),
                _ => String::new(),
            };
            self.error(
                to.item.span.start,
                format!("{what}: `to` must be a list of targets{hint}"),
            );
            return None;
        };
        if items.is_empty() {
            self.error(
                to.item.span.start,
                format!("{what}: `to` is empty; name at least one target"),
            );
            return None;
        }
        let mut out: Vec<String> = Vec::new();
        let mut ok = true;
        for item in items {
            match &item.value {
                Value::String(s)
                    if s.trim().is_empty() || s.chars().any(|c| c.is_whitespace() || c == ',') =>
                {
                    self.error(
                        item.span.start,
                        format!("{what}: a target is a name without spaces or commas"),
                    );
                    ok = false;
                }
                Value::String(s) if out.contains(s) => {
                    self.error(
                        item.span.start,
                        format!("{what}: `{s}` is named twice in `to`"),
                    );
                    ok = false;
                }
                Value::String(s) => out.push(s.clone()),
                other => {
                    self.error(
                        item.span.start,
                        format!("{what}: a target is a string, not {}", other.kind()),
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
