//! The installer's edits on a TOML settings file (Codex CLI's
//! `config.toml`), on `toml_edit`'s document so that comments, spacing and
//! the order of everything toolprune does not touch stay as written.
//!
//! The same [`Edit`]s as for JSONC files, on tables: `Member` adds a key to
//! the table at `path` (tables created on the way are implicit, so no empty
//! header appears; an object value becomes a `[path.key]` table, objects
//! inside it inline tables), `Replace` swaps a value, `Append` is not
//! offered (no TOML file needs it). Values are compared as JSON
//! ([`to_json`]): a TOML date-time is its text.

use serde_json::{Map, Value};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, TableLike};

use super::Edit;

/// A parsed TOML settings file.
pub struct TomlDoc {
    doc: DocumentMut,
    /// The text ended without a line end: so does [`TomlDoc::text`]
    /// (toml_edit ends every key-value line with one).
    unterminated: bool,
}

impl TomlDoc {
    /// Parses `text`. Errors: not TOML (the parser's one-line message).
    pub fn parse(text: &str) -> Result<TomlDoc, String> {
        let doc: DocumentMut = text.parse().map_err(|e: toml_edit::TomlError| e.message().to_string())?;
        Ok(TomlDoc { doc, unterminated: !text.is_empty() && !text.ends_with('\n') })
    }

    /// The document's text.
    pub fn text(&self) -> String {
        let text = self.doc.to_string();
        match text.strip_suffix('\n') {
            Some(stripped) if self.unterminated => stripped.to_string(),
            _ => text,
        }
    }

    /// Whether the document holds no key (comments and blank lines aside).
    pub fn is_empty(&self) -> bool {
        self.doc.as_table().is_empty()
    }

    /// The whole document as JSON.
    pub fn value(&self) -> Value {
        table_json(self.doc.as_table())
    }

    fn table(&self, path: &[String]) -> Option<&dyn TableLike> {
        let mut table: &dyn TableLike = self.doc.as_table();
        for key in path {
            table = table.get(key)?.as_table_like()?;
        }
        Some(table)
    }

    fn table_mut(&mut self, path: &[String]) -> Option<&mut dyn TableLike> {
        let mut table: &mut dyn TableLike = self.doc.as_table_mut();
        for key in path {
            table = table.get_mut(key)?.as_table_like_mut()?;
        }
        Some(table)
    }

    /// The table at `path`, creating missing ones as implicit tables (their
    /// paths go to `created`). Errors: a key on the path holds something else.
    fn table_or_create(&mut self, path: &[String], created: &mut Vec<Vec<String>>) -> Result<&mut dyn TableLike, String> {
        let mut table: &mut dyn TableLike = self.doc.as_table_mut();
        for (i, key) in path.iter().enumerate() {
            if table.get(key).is_none() {
                created.push(path[..=i].to_vec());
                let mut new = Table::new();
                new.set_implicit(true);
                table.insert(key, Item::Table(new));
            }
            table = table
                .get_mut(key)
                .and_then(Item::as_table_like_mut)
                .ok_or_else(|| format!("{} is not a table", path[..=i].join(".")))?;
        }
        Ok(table)
    }

    /// Whether the table at `path` is a standard one (`[header]` or the
    /// root), which can hold tables; an inline table holds only values.
    fn is_standard(&self, path: &[String]) -> bool {
        let Some((last, parents)) = path.split_last() else { return true };
        self.table(parents).and_then(|t| t.get(last)).is_some_and(Item::is_table)
    }

    /// The value at `path` + `key`, as JSON.
    fn get(&self, path: &[String], key: &str) -> Option<Value> {
        self.table(path)?.get(key).map(item_json)
    }

    /// Whether `edit` is present as written.
    pub fn present(&self, edit: &Edit) -> bool {
        match edit {
            Edit::Append { .. } => false,
            Edit::Member { path, key, value } | Edit::Replace { path, key, to: value, .. } => self.get(path, key).as_ref() == Some(value),
        }
    }

    /// Removes `edit` if present as written (a `Replace` gets its `from`
    /// back); whether it was.
    pub fn remove(&mut self, edit: &Edit) -> bool {
        if !self.present(edit) {
            return false;
        }
        match edit {
            Edit::Append { .. } => false,
            Edit::Member { path, key, .. } => self.table_mut(path).and_then(|t| t.remove(key)).is_some(),
            Edit::Replace { path, key, from, .. } => self.table_mut(path).and_then(|t| t.get_mut(key)).is_some_and(|item| {
                set(item, from);
                true
            }),
        }
    }

    /// Applies `edit` (absent by now), as the JSONC `apply` does:
    /// `Ok(Some(note))` for a key the user set to something else (left
    /// alone), `Err` when the file cannot take it.
    pub fn apply(&mut self, edit: &Edit, created: &mut Vec<Vec<String>>) -> Result<Option<String>, String> {
        match edit {
            Edit::Append { path, .. } => Err(format!("{}: a TOML file takes no appended entries", path.join("."))),
            Edit::Member { path, key, value } => {
                let nonempty = !self.is_empty();
                if self.table_or_create(path, created)?.get(key).is_some() {
                    let mut full = path.clone();
                    full.push(key.clone());
                    return Ok(Some(format!("{} is already set to something else; left as it is", full.join("."))));
                }
                // Inside an inline table (`mcp_servers = { … }`) only inline values fit.
                let standard = self.is_standard(path);
                let mut item = to_item(value, standard);
                if let Item::Table(t) = &mut item {
                    if nonempty {
                        t.decor_mut().set_prefix("\n");
                    }
                }
                self.table_mut(path).ok_or("the table is gone")?.insert(key, item);
                Ok(None)
            }
            Edit::Replace { path, key, from, to } => {
                let mut full = path.clone();
                full.push(key.clone());
                match self.get(path, key) {
                    Some(current) if &current == from => {
                        let item = self.table_mut(path).and_then(|t| t.get_mut(key)).ok_or("the table is gone")?;
                        set(item, to);
                        Ok(None)
                    }
                    Some(_) => Err(format!("{} changed since it was read; left as it is", full.join("."))),
                    None => Err(format!("{} is not configured", full.join("."))),
                }
            }
        }
    }

    /// Removes the tables toolprune created that are empty again, deepest first.
    pub fn remove_empty(&mut self, created: &[Vec<String>]) {
        let mut paths: Vec<&Vec<String>> = created.iter().filter(|p| !p.is_empty()).collect();
        paths.sort_by_key(|p| std::cmp::Reverse(p.len()));
        for path in paths {
            let (last, parents) = path.split_last().expect("not empty");
            let Some(parent) = self.table_mut(parents) else { continue };
            if parent.get(last).and_then(Item::as_table_like).is_some_and(|t| t.is_empty()) {
                parent.remove(last);
            }
        }
    }
}

/// Makes `item` hold `value`, in place: a table (or inline table) that is
/// to hold an object keeps its kind, its header and the keys whose values
/// stay, in their order; other keys are removed or added. Anything else is
/// replaced.
fn set(item: &mut Item, value: &Value) {
    match (item.as_table_like_mut(), value) {
        (Some(table), Value::Object(map)) => {
            let gone: Vec<String> = table.iter().map(|(k, _)| k.to_string()).filter(|k| !map.contains_key(k)).collect();
            for key in gone {
                table.remove(&key);
            }
            for (k, v) in map {
                if table.get(k).map(item_json).as_ref() != Some(v) {
                    match table.get_mut(k) {
                        Some(existing) => set(existing, v),
                        None => {
                            table.insert(k, Item::Value(to_value(v)));
                        }
                    }
                }
            }
        }
        _ => {
            let standard = item.is_table();
            *item = to_item(value, standard);
        }
    }
}

/// A JSON value as a TOML item: an object becomes a standard table when
/// `standard` (its own objects inline tables), else an inline table.
pub fn to_item(value: &Value, standard: bool) -> Item {
    match value {
        Value::Object(map) if standard => {
            let mut table = Table::new();
            for (k, v) in map {
                table.insert(k, Item::Value(to_value(v)));
            }
            Item::Table(table)
        }
        other => Item::Value(to_value(other)),
    }
}

fn to_value(value: &Value) -> toml_edit::Value {
    match value {
        // TOML has no null: an empty string is the nearest, and no edit of ours writes one.
        Value::Null => toml_edit::Value::from(""),
        Value::Bool(b) => toml_edit::Value::from(*b),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => toml_edit::Value::from(i),
            (None, Some(f)) => toml_edit::Value::from(f),
            _ => toml_edit::Value::from(n.to_string()),
        },
        Value::String(s) => toml_edit::Value::from(s.as_str()),
        Value::Array(items) => {
            let mut array = Array::new();
            for item in items {
                array.push(to_value(item));
            }
            toml_edit::Value::Array(array)
        }
        Value::Object(map) => {
            let mut table = InlineTable::new();
            for (k, v) in map {
                table.insert(k, to_value(v));
            }
            toml_edit::Value::InlineTable(table)
        }
    }
}

fn table_json(table: &dyn TableLike) -> Value {
    Value::Object(table.iter().map(|(k, v)| (k.to_string(), item_json(v))).collect::<Map<String, Value>>())
}

/// A TOML item as JSON (tables and inline tables are objects, arrays of
/// tables arrays of objects, date-times their text).
pub fn item_json(item: &Item) -> Value {
    match item {
        Item::None => Value::Null,
        Item::Value(v) => value_json(v),
        Item::Table(t) => table_json(t),
        Item::ArrayOfTables(a) => Value::Array(a.iter().map(|t| table_json(t)).collect()),
    }
}

fn value_json(value: &toml_edit::Value) -> Value {
    match value {
        toml_edit::Value::String(s) => Value::String(s.value().clone()),
        toml_edit::Value::Integer(i) => Value::from(*i.value()),
        toml_edit::Value::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Value::Null, Value::Number),
        toml_edit::Value::Boolean(b) => Value::Bool(*b.value()),
        toml_edit::Value::Datetime(d) => Value::String(d.value().to_string()),
        toml_edit::Value::Array(a) => Value::Array(a.iter().map(value_json).collect()),
        toml_edit::Value::InlineTable(t) => table_json(t),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const CONFIG: &str = "# my Codex settings\nmodel = \"gpt-5\"   # the model\n\n[mcp_servers.docs]\ncommand = \"uvx\"\nargs = [\"mcp-server-fetch\"]\n\n[projects.\"/home/me/x\"]\ntrust_level = \"trusted\"\n";

    fn path(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn members_go_in_and_come_out_leaving_the_original_bytes() {
        let server = Edit::Member { path: path(&["mcp_servers"]), key: "toolprune".into(), value: json!({"command": "/bin/toolprune", "args": ["mcp"]}) };
        let trust = Edit::Member {
            path: path(&["hooks", "state"]),
            key: "/home/me/.codex/hooks.json:post_tool_use:0:0".into(),
            value: json!({"trusted_hash": "sha256:00"}),
        };
        for original in [CONFIG, "", "# only a comment\n", "a = 1"] {
            let mut doc = TomlDoc::parse(original).unwrap();
            let mut created = Vec::new();
            for edit in [&server, &trust] {
                assert_eq!(doc.apply(edit, &mut created).unwrap(), None);
                assert!(doc.present(edit));
            }
            let text = doc.text();
            let reparsed = TomlDoc::parse(&text).unwrap();
            assert!(reparsed.present(&server) && reparsed.present(&trust), "{text}");
            assert!(text.contains("[hooks.state.\"/home/me/.codex/hooks.json:post_tool_use:0:0\"]"), "{text}");
            assert!(!text.contains("[hooks]\n") && !text.contains("[hooks.state]\n"), "implicit parents: {text}");
            let mut doc = reparsed;
            assert!(doc.remove(&trust) && doc.remove(&server));
            doc.remove_empty(&created);
            assert_eq!(doc.text(), original, "{original:?}");
        }
    }

    #[test]
    fn a_key_the_user_set_is_left_alone_and_a_replace_goes_back() {
        let mut doc = TomlDoc::parse(CONFIG).unwrap();
        let mine = Edit::Member { path: path(&["mcp_servers"]), key: "docs".into(), value: json!({"command": "x"}) };
        assert!(doc.apply(&mine, &mut Vec::new()).unwrap().unwrap().contains("already set"));
        let from = json!({"command": "uvx", "args": ["mcp-server-fetch"]});
        let wrap = Edit::Replace { path: path(&["mcp_servers"]), key: "docs".into(), from: from.clone(), to: json!({"command": "/bin/toolprune", "args": ["mcp-proxy", "--name", "docs", "--", "uvx", "mcp-server-fetch"]}) };
        assert_eq!(doc.apply(&wrap, &mut Vec::new()).unwrap(), None);
        assert!(doc.text().contains("[mcp_servers.docs]\ncommand = \"/bin/toolprune\""), "{}", doc.text());
        assert!(doc.remove(&wrap));
        assert_eq!(doc.value(), TomlDoc::parse(CONFIG).unwrap().value());
        assert_eq!(doc.text(), CONFIG);
        let bad = TomlDoc::parse("mcp_servers = 3\n").unwrap().apply(&mine, &mut Vec::new());
        assert!(bad.unwrap_err().contains("mcp_servers is not a table"));
    }

    #[test]
    fn an_inline_table_takes_an_inline_entry() {
        let mut doc = TomlDoc::parse("mcp_servers = { docs = { command = \"uvx\" } }\n").unwrap();
        let server = Edit::Member { path: path(&["mcp_servers"]), key: "toolprune".into(), value: json!({"command": "t", "args": ["mcp"]}) };
        assert_eq!(doc.apply(&server, &mut Vec::new()).unwrap(), None);
        let doc = TomlDoc::parse(&doc.text()).unwrap();
        assert!(doc.present(&server), "{}", doc.text());
    }
}
