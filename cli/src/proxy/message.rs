//! JSON-RPC lines as the proxy sees them: what a line is (request,
//! notification, response), and the few edits the proxy makes, as splices
//! into the original text so that every byte it does not change stays
//! exactly as the peer wrote it.
//!
//! Nothing here re-serializes a whole message: values are located with
//! borrowed [`RawValue`]s (their position in the line is their pointer
//! offset) and only the spans the proxy changes are replaced. A line that
//! does not parse the way the proxy expects is left alone (forwarded as it
//! is): the proxy never fails a message it did not need to understand.

use std::borrow::Cow;
use std::collections::HashSet;
use std::fmt;
use std::ops::Range;

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;

/// A request id, normalized (`1`, `"a"`): the key under which the proxy
/// waits for the answer to a request it forwarded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct IdKey(String);

impl IdKey {
    /// The id of a raw JSON value (a string or a number), normalized so that
    /// `1` and `1.0`-free echoes match; none for `null` and other kinds.
    pub fn of(raw: &RawValue) -> Option<IdKey> {
        match serde_json::from_str::<serde_json::Value>(raw.get()).ok()? {
            v @ (serde_json::Value::String(_) | serde_json::Value::Number(_)) => Some(IdKey(v.to_string())),
            _ => None,
        }
    }
}

impl fmt::Display for IdKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

/// One JSON-RPC line, classified. Anything else (a batch, a line that is not
/// a JSON object, duplicate keys) is [`Line::Other`] and is forwarded as is.
#[derive(Debug)]
pub enum Line<'a> {
    /// A request: `method` and an `id`.
    Request { id: IdKey, raw_id: &'a RawValue, method: Cow<'a, str>, params: Option<&'a RawValue> },
    /// A notification: `method`, no `id`.
    Notification { method: Cow<'a, str>, params: Option<&'a RawValue> },
    /// A response: `result` or `error`, and the id it answers.
    Response { id: Option<IdKey>, result: Option<&'a RawValue>, error: bool },
    Other,
}

/// Classifies one line (its line end, if any, is whitespace to JSON).
pub fn classify(line: &str) -> Line<'_> {
    let trimmed = line.trim_start();
    if !trimmed.starts_with('{') {
        return Line::Other;
    }
    let Ok(env) = serde_json::from_str::<Envelope<'_>>(line) else {
        return Line::Other;
    };
    match (env.method, env.id) {
        (Some(method), Some(raw_id)) => match IdKey::of(raw_id) {
            Some(id) => Line::Request { id, raw_id, method, params: env.params },
            None => Line::Other,
        },
        (Some(method), None) => Line::Notification { method, params: env.params },
        (None, id) if env.result.is_some() || env.error.is_some() => {
            Line::Response { id: id.and_then(IdKey::of), result: env.result, error: env.error.is_some() }
        }
        _ => Line::Other,
    }
}

/// The byte range of `part` (borrowed from `line`) within `line`.
pub fn span(line: &str, part: &str) -> Range<usize> {
    let start = part.as_ptr() as usize - line.as_ptr() as usize;
    debug_assert!(start + part.len() <= line.len());
    start..start + part.len()
}

/// Applies insertions and replacements (`range` replaced by `text`; an
/// empty range inserts). Ranges must not overlap.
pub fn splice(line: &str, mut edits: Vec<(Range<usize>, String)>) -> String {
    edits.sort_by_key(|(r, _)| r.start);
    let mut out = String::with_capacity(line.len() + edits.iter().map(|(_, t)| t.len()).sum::<usize>());
    let mut at = 0;
    for (range, text) in edits {
        out.push_str(&line[at..range.start]);
        out.push_str(&text);
        at = range.end;
    }
    out.push_str(&line[at..]);
    out
}

/// The members of a JSON object in their order, values raw. Keys are
/// decoded (a key with escapes is owned). Errors on anything but an object.
pub fn object_members(raw: &RawValue) -> Result<Vec<(Cow<'_, str>, &RawValue)>, serde_json::Error> {
    struct Members;
    impl<'de> Visitor<'de> for Members {
        type Value = Vec<(Cow<'de, str>, &'de RawValue)>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                let value: &'de RawValue = map.next_value()?;
                out.push((key, value));
            }
            Ok(out)
        }
    }
    let mut de = serde_json::Deserializer::from_str(raw.get());
    let members = (&mut de).deserialize_map(Members)?;
    de.end()?;
    // Rebase the borrowed values onto `raw` (they borrow `raw.get()`, which lives as long as `raw`).
    Ok(members)
}

/// The `name` of a `tools/call` request's params, and its raw `arguments`.
pub struct CallParams<'a> {
    pub name: Cow<'a, str>,
    pub arguments: Option<&'a RawValue>,
    pub meta: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct CallParamsWire<'a> {
    #[serde(borrow)]
    name: Cow<'a, str>,
    #[serde(borrow, default)]
    arguments: Option<&'a RawValue>,
    #[serde(borrow, default, rename = "_meta")]
    meta: Option<&'a RawValue>,
}

/// Reads a `tools/call` request's params; none when they are not the expected shape.
pub fn call_params(params: Option<&RawValue>) -> Option<CallParams<'_>> {
    let wire: CallParamsWire<'_> = serde_json::from_str(params?.get()).ok()?;
    Some(CallParams { name: wire.name, arguments: wire.arguments, meta: wire.meta })
}

/// Whether a request's `_meta` names a protocol version without `initialize`
/// (2026-07-28 and later), whose results carry `resultType`.
pub fn meta_is_modern(meta: Option<&RawValue>) -> bool {
    #[derive(Deserialize)]
    struct Meta<'a> {
        #[serde(borrow, default, rename = "io.modelcontextprotocol/protocolVersion")]
        version: Option<Cow<'a, str>>,
    }
    let Some(meta) = meta else { return false };
    let Ok(Meta { version: Some(version) }) = serde_json::from_str::<Meta<'_>>(meta.get()) else {
        return false;
    };
    serde_json::from_value::<rmcp::model::ProtocolVersion>(serde_json::Value::String(version.into_owned()))
        .map(|v| !v.has_initialize())
        .unwrap_or(false)
}

/// `line` (a `tools/call` request) with the argument `name` removed from
/// `params.arguments`; none when the arguments do not hold it. The
/// arguments object is rewritten member by member (values byte for byte);
/// the rest of the line is untouched. Also returns the removed value when
/// it is a string.
pub fn strip_argument(line: &str, arguments: &RawValue, name: &str) -> Option<(String, Option<String>)> {
    let members = object_members(arguments).ok()?;
    let position = members.iter().position(|(k, _)| k == name)?;
    let value = serde_json::from_str::<String>(members[position].1.get()).ok();
    let mut rebuilt = String::from("{");
    for (i, (key, raw)) in members.iter().enumerate().filter(|(i, _)| *i != position) {
        if rebuilt.len() > 1 {
            rebuilt.push(',');
        }
        let _ = i;
        rebuilt.push_str(&serde_json::to_string(key.as_ref()).ok()?);
        rebuilt.push(':');
        rebuilt.push_str(raw.get());
    }
    rebuilt.push('}');
    Some((splice(line, vec![(span(line, arguments.get()), rebuilt)]), value))
}

/// One tool of a `tools/list` page.
pub struct ListedTool<'a> {
    pub name: Cow<'a, str>,
    /// The whole tool object, raw.
    pub raw: &'a RawValue,
    pub input_schema: Option<&'a RawValue>,
}

/// A `tools/list` result page.
pub struct ToolsPage<'a> {
    /// The `tools` array, raw.
    pub tools_raw: &'a RawValue,
    pub tools: Vec<ListedTool<'a>>,
    /// The page says more follow.
    pub has_next: bool,
}

/// Reads a `tools/list` result; none when it is not the expected shape.
pub fn tools_page(result: &RawValue) -> Option<ToolsPage<'_>> {
    #[derive(Deserialize)]
    struct Page<'a> {
        #[serde(borrow)]
        tools: &'a RawValue,
        #[serde(borrow, default, rename = "nextCursor")]
        next_cursor: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Head<'a> {
        #[serde(borrow)]
        name: Cow<'a, str>,
        #[serde(borrow, default, rename = "inputSchema")]
        input_schema: Option<&'a RawValue>,
    }
    let page: Page<'_> = serde_json::from_str(result.get()).ok()?;
    let items: Vec<&RawValue> = serde_json::from_str(page.tools.get()).ok()?;
    let mut tools = Vec::with_capacity(items.len());
    for raw in items {
        let head: Head<'_> = serde_json::from_str(raw.get()).ok()?;
        tools.push(ListedTool { name: head.name, raw, input_schema: head.input_schema });
    }
    let has_next = page.next_cursor.is_some_and(|c| c.get() != "null");
    Some(ToolsPage { tools_raw: page.tools, tools, has_next })
}

/// The edit that adds property `name` (schema `schema`, JSON text) to a
/// tool's `inputSchema.properties`; none when the schema is not an object,
/// already has that property, or its `properties` is not an object.
pub fn add_property_edit(line: &str, input_schema: &RawValue, name: &str, schema: &str) -> Option<(Range<usize>, String)> {
    let members = object_members(input_schema).ok()?;
    let member = format!("{}:{schema}", serde_json::to_string(name).ok()?);
    match members.iter().find(|(k, _)| k == "properties") {
        Some((_, properties)) => {
            let inner = object_members(properties).ok()?;
            if inner.iter().any(|(k, _)| k == name) {
                return None;
            }
            let at = span(line, properties.get()).start + 1;
            let text = if inner.is_empty() { member } else { format!("{member},") };
            Some((at..at, text))
        }
        None => {
            let at = span(line, input_schema.get()).start + 1;
            let text = format!("\"properties\":{{{member}}}{}", if members.is_empty() { "" } else { "," });
            Some((at..at, text))
        }
    }
}

/// Whether a tool's `inputSchema` declares property `name` itself.
pub fn schema_has_property(input_schema: Option<&RawValue>, name: &str) -> bool {
    let Some(schema) = input_schema else { return false };
    let Ok(members) = object_members(schema) else { return false };
    members
        .iter()
        .find(|(k, _)| k == "properties")
        .and_then(|(_, p)| object_members(p).ok())
        .is_some_and(|inner| inner.iter().any(|(k, _)| k == name))
}

/// The edit that appends `tool` (a JSON object text) to the `tools` array.
pub fn append_tool_edit(line: &str, page: &ToolsPage<'_>, tool: &str) -> (Range<usize>, String) {
    let range = span(line, page.tools_raw.get());
    let close = range.end - 1; // the `]`
    let text = if page.tools.is_empty() { tool.to_string() } else { format!(",{tool}") };
    (close..close, text)
}

/// Whether the names of a page collide with `name` (an upstream tool of that name).
pub fn names(page: &ToolsPage<'_>) -> HashSet<String> {
    page.tools.iter().map(|t| t.name.to_string()).collect()
}

/// The text of a successful `tools/call` result, as one tool result: the
/// text blocks' texts (joined with a blank line when there are several).
pub struct CallText<'a> {
    /// The `content` array, raw.
    pub content_raw: &'a RawValue,
    /// Every content block, raw, in order.
    pub blocks: Vec<&'a RawValue>,
    /// Indices (into `blocks`) of the text blocks, and each one's raw `text` value.
    pub texts: Vec<(usize, &'a RawValue)>,
    /// The texts joined: what is pruned.
    pub text: String,
}

/// The separator between the texts of several text blocks pruned as one result.
pub const BLOCK_SEPARATOR: &str = "\n\n";

/// Reads the text of a `tools/call` result for pruning; none when it is an
/// error (`isError: true`), has no text block, or is not the expected shape.
pub fn call_text(result: &RawValue) -> Option<CallText<'_>> {
    #[derive(Deserialize)]
    struct Wire<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
        #[serde(default, rename = "isError")]
        is_error: Option<serde_json::Value>,
    }
    #[derive(Deserialize)]
    struct Block<'a> {
        #[serde(borrow, rename = "type")]
        kind: Cow<'a, str>,
        #[serde(borrow, default)]
        text: Option<&'a RawValue>,
    }
    let wire: Wire<'_> = serde_json::from_str(result.get()).ok()?;
    if !matches!(wire.is_error, None | Some(serde_json::Value::Bool(false)) | Some(serde_json::Value::Null)) {
        return None;
    }
    let content_raw = wire.content?;
    let blocks: Vec<&RawValue> = serde_json::from_str(content_raw.get()).ok()?;
    let mut texts = Vec::new();
    let mut joined: Vec<String> = Vec::new();
    for (i, raw) in blocks.iter().enumerate() {
        let Ok(block) = serde_json::from_str::<Block<'_>>(raw.get()) else { continue };
        if block.kind != "text" {
            continue;
        }
        let text_raw = block.text?;
        let text: String = serde_json::from_str(text_raw.get()).ok()?;
        // `text_raw` borrows from `raw.get()`, which borrows from `result`.
        texts.push((i, text_raw));
        joined.push(text);
    }
    if texts.is_empty() {
        return None;
    }
    Some(CallText { content_raw, blocks, texts, text: joined.join(BLOCK_SEPARATOR) })
}

/// `line` with the result's text blocks replaced by one text block holding
/// `body` (in the first text block's place, its other members kept); every
/// other block (images, resources, links) stays where it was, byte for
/// byte. `structuredContent`, `_meta` and the rest of the line are untouched.
pub fn replace_text(line: &str, call: &CallText<'_>, body: &str) -> Option<String> {
    let encoded = serde_json::to_string(body).ok()?;
    let first = call.texts.first()?.0;
    let mut rebuilt = String::from("[");
    let mut n = 0;
    for (i, block) in call.blocks.iter().enumerate() {
        let is_text = call.texts.iter().any(|(j, _)| *j == i);
        if is_text && i != first {
            continue;
        }
        if n > 0 {
            rebuilt.push(',');
        }
        n += 1;
        if i == first {
            let text_raw = call.texts[0].1;
            let inner = span(block.get(), text_raw.get());
            rebuilt.push_str(&splice(block.get(), vec![(inner, encoded.clone())]));
        } else {
            rebuilt.push_str(block.get());
        }
    }
    rebuilt.push(']');
    Some(splice(line, vec![(span(line, call.content_raw.get()), rebuilt)]))
}

/// A JSON-RPC response line with `result` (a JSON text) for the raw id,
/// its line end (`\n`) included: the proxy's own lines are written as they
/// are, like the peers' (`super::write_lines`).
pub fn response_line(raw_id: &str, result: &str) -> String {
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw_id},\"result\":{result}}}\n")
}

/// A JSON-RPC error response line for the raw id, its line end included.
pub fn error_line(raw_id: &str, code: i32, message: &str) -> String {
    let message = serde_json::to_string(message).unwrap_or_else(|_| "\"error\"".to_string());
    format!("{{\"jsonrpc\":\"2.0\",\"id\":{raw_id},\"error\":{{\"code\":{code},\"message\":{message}}}}}\n")
}

/// The id of a client's `notifications/cancelled`.
pub fn cancelled_request(params: Option<&RawValue>) -> Option<IdKey> {
    #[derive(Deserialize)]
    struct Wire<'a> {
        #[serde(borrow, rename = "requestId")]
        request_id: &'a RawValue,
    }
    let wire: Wire<'_> = serde_json::from_str(params?.get()).ok()?;
    IdKey::of(wire.request_id)
}

/// Whether a request's params carry a `cursor` (a later page of a list).
pub fn has_cursor(params: Option<&RawValue>) -> bool {
    #[derive(Deserialize)]
    struct Wire {
        #[serde(default)]
        cursor: Option<serde_json::Value>,
    }
    params
        .and_then(|p| serde_json::from_str::<Wire>(p.get()).ok())
        .is_some_and(|w| w.cursor.is_some_and(|c| !c.is_null()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result_of(line: &str) -> &RawValue {
        match classify(line) {
            Line::Response { result: Some(r), .. } => r,
            other => panic!("not a response: {other:?}"),
        }
    }

    #[test]
    fn lines_are_classified_by_method_and_id() {
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#), Line::Request { ref method, .. } if method == "tools/list"));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","method":"notifications/x","params":{}}"#), Line::Notification { .. }));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#), Line::Response { id: Some(_), error: false, .. }));
        assert!(matches!(classify(r#"{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"m"}}"#), Line::Response { id: None, error: true, .. }));
        for other in ["[{\"id\":1}]", "nonsense", "{\"id\":1,\"id\":2,\"method\":\"x\"}", "{}", ""] {
            assert!(matches!(classify(other), Line::Other), "{other}");
        }
    }

    #[test]
    fn ids_match_whatever_spacing_the_peer_used() {
        let a = RawValue::from_string("1".into()).unwrap();
        let b = RawValue::from_string(" 1".trim().into()).unwrap();
        assert_eq!(IdKey::of(&a), IdKey::of(&b));
        let s = RawValue::from_string("\"1\"".into()).unwrap();
        assert_ne!(IdKey::of(&a), IdKey::of(&s), "a string id is not a number id");
    }

    #[test]
    fn a_tool_is_appended_and_everything_else_keeps_its_bytes() {
        let line = r#"{"jsonrpc": "2.0", "id": 7, "result": {"tools": [ {"name": "fetch", "x-unknown": [1.50, 2e3]} ], "_meta": {"k": 1}}}"#;
        let page = tools_page(result_of(line)).unwrap();
        assert_eq!(page.tools.len(), 1);
        let out = splice(line, vec![append_tool_edit(line, &page, r#"{"name":"omitted"}"#)]);
        assert_eq!(out, r#"{"jsonrpc": "2.0", "id": 7, "result": {"tools": [ {"name": "fetch", "x-unknown": [1.50, 2e3]} ,{"name":"omitted"}], "_meta": {"k": 1}}}"#);
        let empty = r#"{"id":1,"result":{"tools":[]}}"#;
        let page = tools_page(result_of(empty)).unwrap();
        assert_eq!(splice(empty, vec![append_tool_edit(empty, &page, "{}")]), r#"{"id":1,"result":{"tools":[{}]}}"#);
    }

    #[test]
    fn the_request_argument_goes_into_the_schema_properties() {
        let line = r#"{"id":1,"result":{"tools":[{"name":"a","inputSchema":{"type":"object","properties":{"url":{"type":"string"}}}},{"name":"b","inputSchema":{"type":"object"}},{"name":"c","inputSchema":{"properties":{}}},{"name":"d","inputSchema":{"properties":{"user_request":{}}}}]}}"#;
        let page = tools_page(result_of(line)).unwrap();
        let s = r#"{"type":"string"}"#;
        let edits: Vec<_> = page.tools.iter().filter_map(|t| add_property_edit(line, t.input_schema?, "user_request", s)).collect();
        assert_eq!(edits.len(), 3, "d declares it already");
        let out: serde_json::Value = serde_json::from_str(&splice(line, edits)).unwrap();
        for i in 0..3 {
            assert_eq!(out["result"]["tools"][i]["inputSchema"]["properties"]["user_request"]["type"], "string");
        }
        assert_eq!(out["result"]["tools"][0]["inputSchema"]["properties"]["url"]["type"], "string");
        assert_eq!(out["result"]["tools"][1]["inputSchema"]["type"], "object");
        assert!(schema_has_property(page.tools[3].input_schema, "user_request"));
        assert!(!schema_has_property(page.tools[0].input_schema, "user_request"));
    }

    #[test]
    fn stripping_the_argument_keeps_the_other_arguments_and_the_rest_of_the_line() {
        let line = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"http://x/\u00e9","user_request":"how do I \"resume\"?","max_length":5000},"_meta":{"progressToken":9}}}"#;
        let Line::Request { params, .. } = classify(line) else { panic!() };
        let call = call_params(params).unwrap();
        let (out, value) = strip_argument(line, call.arguments.unwrap(), "user_request").unwrap();
        assert_eq!(value.as_deref(), Some("how do I \"resume\"?"));
        assert_eq!(out, r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"fetch","arguments":{"url":"http://x/\u00e9","max_length":5000},"_meta":{"progressToken":9}}}"#);
        assert!(strip_argument(&out, call_params(match classify(&out) { Line::Request { params, .. } => params, _ => None }).unwrap().arguments.unwrap(), "user_request").is_none());
    }

    #[test]
    fn several_text_blocks_are_one_text_and_other_blocks_stay_in_place() {
        let line = r#"{"id":1,"result":{"content":[{"type":"text","text":"a\nb","annotations":{"x":1}},{"type":"image","data":"AAAA","mimeType":"image/png"},{"type":"text","text":"c"}],"structuredContent":{"k":"a\nb"},"isError":false}}"#;
        let call = call_text(result_of(line)).unwrap();
        assert_eq!(call.text, "a\nb\n\nc");
        let out = replace_text(line, &call, "PRUNED").unwrap();
        assert_eq!(out, r#"{"id":1,"result":{"content":[{"type":"text","text":"PRUNED","annotations":{"x":1}},{"type":"image","data":"AAAA","mimeType":"image/png"}],"structuredContent":{"k":"a\nb"},"isError":false}}"#);
    }

    #[test]
    fn errors_and_results_without_text_are_not_pruned() {
        assert!(call_text(result_of(r#"{"id":1,"result":{"content":[{"type":"text","text":"x"}],"isError":true}}"#)).is_none());
        assert!(call_text(result_of(r#"{"id":1,"result":{"content":[{"type":"image","data":"A","mimeType":"image/png"}]}}"#)).is_none());
        assert!(call_text(result_of(r#"{"id":1,"result":{"resultType":"input_required","inputRequests":{}}}"#)).is_none());
    }

    #[test]
    fn the_protocol_generation_is_read_from_meta() {
        let modern = RawValue::from_string(r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#.into()).unwrap();
        let legacy = RawValue::from_string(r#"{"io.modelcontextprotocol/protocolVersion":"2025-11-25"}"#.into()).unwrap();
        assert!(meta_is_modern(Some(&modern)));
        assert!(!meta_is_modern(Some(&legacy)));
        assert!(!meta_is_modern(None));
    }

    #[test]
    fn cancellation_names_the_request_and_cursors_mark_later_pages() {
        let p = RawValue::from_string(r#"{"requestId":"r-9","reason":"user"}"#.into()).unwrap();
        assert_eq!(cancelled_request(Some(&p)).unwrap().to_string(), "\"r-9\"");
        let c = RawValue::from_string(r#"{"cursor":"abc"}"#.into()).unwrap();
        assert!(has_cursor(Some(&c)));
        assert!(!has_cursor(None));
    }
}
