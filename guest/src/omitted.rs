//! SPEC §10: `omitted` — the way back to dropped paragraphs, and the tool's
//! name, description and JSON schema in ja and en, in each SDK's shape.
//!
//! A stored result ([`StoredResult`]) holds, in `data`, the shape, the
//! unit count and the dropped units verbatim with their numbers
//! ([`encode_record`]: `{"shape":"text","units":28,"dropped":[[3,"…"],…]}`),
//! so answering never splits or classifies a text again: the answer depends
//! only on the record. Hosts store `data` as it is and never read it.

use crate::types::{Dialect, Lang, OmittedOutcome, OmittedResult, Shape, StoredResult};
use crate::limits::OMITTED_MAX_CHARS;
use crate::body::thousands;
use serde_json::Value;

/// The tool's name as presented to the model.
pub const TOOL_NAME: &str = "omitted";

/// Parsed arguments `{ id, from, to }` (0-based, inclusive).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Args {
    id: String,
    from: usize,
    to: usize,
}

/// A non-negative integer, also when a model wrote it as `"8"` or `8.0`.
/// Integers past `u64` (`99999999999999999999`, `1e20`) saturate, so a huge
/// `to` is clamped like any other (SPEC §10).
fn index(v: Option<&Value>) -> Option<usize> {
    let whole = |f: f64| (f.is_finite() && f.fract() == 0.0 && f >= 0.0).then(|| if f >= u64::MAX as f64 { u64::MAX } else { f as u64 });
    let n = match v? {
        Value::Number(n) => n.as_u64().or_else(|| n.as_f64().and_then(whole))?,
        Value::String(s) => {
            let t = s.trim();
            if !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit()) {
                t.parse::<u64>().unwrap_or(u64::MAX)
            } else {
                crate::number::parse(t).and_then(whole)?
            }
        }
        _ => return None,
    };
    Some(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Parse the model's JSON; `Err(name)` names the first bad argument.
fn parse(arguments: &str) -> Result<Args, &'static str> {
    let v: Value = serde_json::from_str(arguments).map_err(|_| "arguments")?;
    let obj = v.as_object().ok_or("arguments")?;
    let id = match obj.get("id") {
        // Ids are `P` and digits: ASCII case folding is enough (`p2` finds `P2`),
        // and leaves std's Unicode case tables out of the component.
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_ascii_uppercase(),
        _ => return Err("id"),
    };
    let from = index(obj.get("from")).ok_or("from")?;
    let to = index(obj.get("to")).ok_or("to")?;
    if to < from {
        return Err("to");
    }
    Ok(Args { id, from, to })
}

fn invalid_text(lang: Lang, name: &str) -> String {
    match lang {
        Lang::Ja => format!(
            "引数「{name}」が不正です。{{\"id\": \"P2\", \"from\": 8, \"to\": 14}} の形で渡してください（id は省略の印に書かれた id、from と to は 0 始まりの段落番号で from ≤ to）。"
        ),
        Lang::En => format!(
            "The argument \"{name}\" is invalid. Pass {{\"id\": \"P2\", \"from\": 8, \"to\": 14}}: id as written in the omission marker, from and to as 0-based paragraph numbers with from ≤ to."
        ),
    }
}

/// The id as written in the log: `P<digits>` only; anything else the model
/// wrote is `?`, so no model-written text reaches a log line (SPEC §12).
fn loggable_id(id: &str) -> &str {
    let digits = id.strip_prefix('P').unwrap_or("");
    if !digits.is_empty() && digits.len() <= 9 && digits.bytes().all(|b| b.is_ascii_digit()) {
        id
    } else {
        "?"
    }
}

/// What a stored result's `data` holds.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub shape: Shape,
    /// Paragraphs (or elements) the text was split into.
    pub units: u32,
    /// The dropped ones `(number, verbatim text)`, ascending.
    pub dropped: Vec<(u32, String)>,
}

fn shape_key(shape: Shape) -> &'static str {
    crate::log::shape_name(shape)
}

/// `data` for a stored result: the shape, the unit count and the dropped
/// units, as JSON written with the guest's escaper.
pub fn encode_record(shape: Shape, units: u32, dropped: &[(u32, &str)]) -> String {
    let size: usize = dropped.iter().map(|(_, t)| t.len() + 16).sum::<usize>() + 48;
    let mut out = String::with_capacity(size);
    out.push_str("{\"shape\":\"");
    out.push_str(shape_key(shape));
    out.push_str("\",\"units\":");
    out.push_str(&units.to_string());
    out.push_str(",\"dropped\":[");
    for (k, (index, text)) in dropped.iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        out.push('[');
        out.push_str(&index.to_string());
        out.push(',');
        crate::json::push_str(&mut out, text);
        out.push(']');
    }
    out.push_str("]}");
    out
}

/// [`encode_record`] read back; `None` for anything else (a record from
/// another version or a damaged store: then `not_found`, never a wrong text).
pub fn decode_record(data: &str) -> Option<Record> {
    let v: Value = serde_json::from_str(data).ok()?;
    let shape = match v.get("shape")?.as_str()? {
        "text" => Shape::Text,
        "json_wrapper" => Shape::JsonWrapper,
        "json_array" => Shape::JsonArray,
        _ => return None,
    };
    let units = u32::try_from(v.get("units")?.as_u64()?).ok()?;
    let mut dropped = Vec::new();
    for d in v.get("dropped")?.as_array()? {
        let pair = d.as_array()?;
        let [index, text] = pair.as_slice() else { return None };
        let index = u32::try_from(index.as_u64()?).ok()?;
        if index >= units || dropped.last().is_some_and(|(last, _): &(u32, String)| *last >= index) {
            return None;
        }
        dropped.push((index, text.as_str()?.to_string()));
    }
    Some(Record { shape, units, dropped })
}

/// The id the model's arguments ask for (upper-cased `P…`), to look up in
/// the store; `None` when the arguments are invalid ([`answer`] says why).
pub fn requested_id(arguments: &str) -> Option<String> {
    parse(arguments).ok().map(|a| a.id)
}

/// Answer one `omitted` call (SPEC §10) from `found`, the stored result
/// with the requested id (`None`: `not_found`). Returns only dropped
/// paragraphs in `from..=to` (clamped to the last paragraph), verbatim, at
/// most 20,000 characters; otherwise a text for the model saying what to
/// do. Never fails.
pub fn answer(arguments: &str, lang: Lang, agent: &str, found: Option<&StoredResult>) -> OmittedResult {
    let agent = crate::log::label(agent);
    let args = match parse(arguments) {
        Ok(a) => a,
        Err(name) => {
            return OmittedResult {
                outcome: OmittedOutcome::Invalid,
                text: invalid_text(lang, name),
                log_line: format!("tool omitted: agent={agent} id=- from=- to=- chars=0 outcome=invalid"),
            }
        }
    };
    let log = |to: usize, chars: usize, outcome: &str| {
        format!(
            "tool omitted: agent={agent} id={} from={} to={to} chars={chars} outcome={outcome}",
            loggable_id(&args.id),
            args.from
        )
    };
    let Some(stored) = found.filter(|s| s.id == args.id).and_then(|s| decode_record(&s.data)) else {
        let text = match lang {
            Lang::Ja => format!(
                "id={} の本文はここには在りません（期限切れの可能性があります）。省略の印に書かれている id を渡すか、ツールをもう一度呼んでください。",
                args.id
            ),
            Lang::En => format!(
                "There is no text with id={} here (it may have expired). Pass the id written in the omission marker, or call the tool again.",
                args.id
            ),
        };
        return OmittedResult { outcome: OmittedOutcome::NotFound, text, log_line: log(args.to, 0, "not_found") };
    };
    let last = (stored.units as usize).saturating_sub(1);
    if args.from > last {
        let text = match lang {
            Lang::Ja => format!(
                "引数「from」が不正です。id={} の段落番号は 0〜{} です。{{\"id\": \"{}\", \"from\": 0, \"to\": {}}} のように範囲内で渡してください。",
                args.id, last, args.id, last
            ),
            Lang::En => format!(
                "The argument \"from\" is invalid: id={} has paragraphs 0–{}. Pass a range inside it, e.g. {{\"id\": \"{}\", \"from\": 0, \"to\": {}}}.",
                args.id, last, args.id, last
            ),
        };
        return OmittedResult { outcome: OmittedOutcome::Invalid, text, log_line: log(args.to, 0, "invalid") };
    }
    let to = args.to.min(last);
    let picked: Vec<(usize, &str)> = stored
        .dropped
        .iter()
        .map(|(index, text)| (*index as usize, text.as_str()))
        .filter(|&(i, _)| i >= args.from && i <= to)
        .collect();
    if picked.is_empty() {
        let text = match lang {
            Lang::Ja => "指定された範囲に省略された段落はありません。その範囲は本文に既に含まれています。".to_string(),
            Lang::En => "No paragraph in that range was omitted; that range is already in the text.".to_string(),
        };
        return OmittedResult { outcome: OmittedOutcome::NotDropped, text, log_line: log(to, 0, "not_dropped") };
    }
    let sizes: Vec<usize> = picked.iter().map(|(_, t)| t.chars().count()).collect();
    let chars: usize = sizes.iter().sum();
    if chars > OMITTED_MAX_CHARS {
        // Suggest the widest range from `from` whose dropped paragraphs fit.
        let mut fit = 0;
        let mut suggest_to = picked[0].0;
        for (&(i, _), &n) in picked.iter().zip(&sizes) {
            fit += n;
            if fit > OMITTED_MAX_CHARS {
                break;
            }
            suggest_to = i;
        }
        let text = match lang {
            Lang::Ja => format!(
                "指定された範囲は {} 字あり、上限の {} 字を超えています。範囲を狭めてください（例: from={}, to={}）。",
                thousands(chars),
                thousands(OMITTED_MAX_CHARS),
                args.from,
                suggest_to
            ),
            Lang::En => format!(
                "That range holds {} characters, over the {} limit. Narrow it (e.g. from={}, to={}).",
                thousands(chars),
                thousands(OMITTED_MAX_CHARS),
                args.from,
                suggest_to
            ),
        };
        return OmittedResult { outcome: OmittedOutcome::TooLarge, text, log_line: log(to, chars, "too_large") };
    }
    let pieces: Vec<&str> = picked.iter().map(|(_, t)| *t).collect();
    let text = match stored.shape {
        Shape::JsonArray => crate::body::elements(&pieces),
        Shape::Text | Shape::JsonWrapper => pieces.concat(),
    };
    OmittedResult { outcome: OmittedOutcome::Ok, text, log_line: log(to, chars, "ok") }
}

/// What the model reads when the host could not answer (the guest trapped):
/// the call failed, nothing was lost, try again.
pub fn unavailable(lang: Lang) -> String {
    match lang {
        Lang::Ja => "省略した本文を読み出せませんでした（内部エラー）。もう一度 `omitted` を呼ぶか、ツールをもう一度呼んでください。".to_string(),
        Lang::En => "The omitted text could not be read (an internal error). Call `omitted` again, or call the tool again.".to_string(),
    }
}

/// The `omitted` tool as presented to the model, statically (SPEC §10): a
/// JSON object text in the SDK's shape (`dialect`). Written with the guest's
/// own JSON string escaper: serializing a `serde_json::Value` would link
/// float formatting into the component for no number.
pub fn tool(lang: Lang, dialect: Dialect) -> String {
    let (description, id, from, to) = match lang {
        Lang::Ja => (
            "関連度による圧縮でツール結果から省略した段落（JSON 配列では要素）を、逐語で読みます。省略の印に書かれた id と、0 始まりの段落番号（要素番号）の範囲（from〜to、両端を含む）を渡してください。範囲のうち省略した段落だけを返します（1 回 20,000 字まで）。",
            "省略の印に書かれた id（例: P2）",
            "範囲の最初の段落番号（0 始まり）",
            "範囲の最後の段落番号（0 始まり、両端を含む）",
        ),
        Lang::En => (
            "Read, verbatim, paragraphs (or JSON array elements) that relevance pruning omitted from a tool result. Pass the id written in the omission marker and a range of 0-based paragraph (or element) numbers (from–to, inclusive). Returns only the omitted paragraphs in that range (at most 20,000 characters per call).",
            "The id written in the omission marker (e.g. P2)",
            "First paragraph number of the range (0-based)",
            "Last paragraph number of the range (0-based, inclusive)",
        ),
    };
    let q = crate::json::string;
    // `mcp-hooked`: toolprune's own MCP server behind agent hooks. The hook
    // adds `session` (which conversation's store to read) and, for Gemini
    // CLI's tail call, `body`; the model is told to leave both out. They are
    // declared because Gemini CLI validates a tail call's arguments against
    // the schema (and `additionalProperties` is false).
    let hooked = match (dialect, lang) {
        (Dialect::McpHooked, Lang::Ja) => "toolprune のフックが設定します。省略してください。",
        (Dialect::McpHooked, Lang::En) => "Filled in by toolprune's hook; leave it out.",
        _ => "",
    };
    let extra = if hooked.is_empty() {
        String::new()
    } else {
        format!(
            ",\"session\":{{\"type\":\"string\",\"description\":{}}},\"body\":{{\"type\":\"boolean\",\"description\":{}}}",
            q(hooked),
            q(hooked)
        )
    };
    let schema = format!(
        "{{\"type\":\"object\",\"properties\":{{\"id\":{{\"type\":\"string\",\"description\":{}}},\"from\":{{\"type\":\"integer\",\"minimum\":0,\"description\":{}}},\"to\":{{\"type\":\"integer\",\"minimum\":0,\"description\":{}}}{extra}}},\"required\":[\"id\",\"from\",\"to\"],\"additionalProperties\":false}}",
        q(id),
        q(from),
        q(to)
    );
    let head = format!("\"name\":{},\"description\":{}", q(TOOL_NAME), q(description));
    match dialect {
        Dialect::Plain => format!("{{{head},\"parameters\":{schema}}}"),
        Dialect::Openai => format!("{{\"type\":\"function\",\"function\":{{{head},\"parameters\":{schema}}}}}"),
        Dialect::Anthropic => format!("{{{head},\"input_schema\":{schema}}}"),
        Dialect::Mcp | Dialect::McpHooked => format!("{{{head},\"inputSchema\":{schema}}}"),
    }
}

/// The name of the argument an MCP proxy adds to prunable tools in its
/// `argument` basis mode (SPEC §15).
pub const REQUEST_ARGUMENT: &str = "user_request";

/// The optional argument an MCP proxy adds to the schema of each prunable
/// tool when the basis is `argument` (SPEC §15): `{"name", "schema"}` as JSON
/// text. The model restates the user's request there (a weaker basis than the
/// user's own words, SPEC §3); the proxy strips it before the call goes on.
pub fn request_argument(lang: Lang) -> String {
    let description = match lang {
        Lang::Ja => "ユーザーの最新の依頼を、ユーザー自身の言葉のまま写してください（要約しない）。長い結果から依頼に関係する部分を残すためだけに使い、ツールには渡しません。",
        Lang::En => "The user's latest request, copied in the user's own words (not summarised). Used only to keep the parts of a long result that matter to it; it is not passed to the tool.",
    };
    let q = crate::json::string;
    format!("{{\"name\":{},\"schema\":{{\"type\":\"string\",\"description\":{}}}}}", q(REQUEST_ARGUMENT), q(description))
}

#[cfg(test)]
mod tests {
    use super::*;
    /// A stored result as the guest makes it.
    fn stored(id: &str, shape: Shape, units: u32, dropped: &[(u32, String)]) -> StoredResult {
        let pairs: Vec<(u32, &str)> = dropped.iter().map(|(i, t)| (*i, t.as_str())).collect();
        let chars = dropped.iter().map(|(_, t)| t.chars().count() as u64).sum();
        StoredResult { id: id.into(), chars, call: None, data: encode_record(shape, units, &pairs) }
    }

    /// Ten paragraphs of 200 characters; 2, 3, 4 and 8 dropped.
    fn record() -> (StoredResult, Vec<String>) {
        let paras: Vec<String> = (0..10).map(|i| format!("{i}{}\n\n", "z".repeat(197))).collect();
        let dropped: Vec<(u32, String)> = [2usize, 3, 4, 8].iter().map(|&i| (i as u32, paras[i].clone())).collect();
        (stored("P1", Shape::Text, 10, &dropped), paras)
    }

    #[test]
    fn a_record_reads_back_what_was_written() {
        let dropped = vec![(1u32, "a \"quoted\"\n\u{1}\u{FEFF}日本".to_string()), (4, String::new())];
        let pairs: Vec<(u32, &str)> = dropped.iter().map(|(i, t)| (*i, t.as_str())).collect();
        let data = encode_record(Shape::JsonArray, 5, &pairs);
        assert_eq!(decode_record(&data), Some(Record { shape: Shape::JsonArray, units: 5, dropped }));
    }

    #[test]
    fn a_damaged_record_is_not_found_never_another_text() {
        let (r, _) = record();
        for data in ["", "{}", "[1]", r#"{"shape":"text","units":3,"dropped":[[5,"x"]]}"#, r#"{"shape":"text","units":9,"dropped":[[2,"x"],[1,"y"]]}"#, r#"{"shape":"prose","units":1,"dropped":[]}"#] {
            let bad = StoredResult { data: data.to_string(), ..r.clone() };
            assert_eq!(ask(r#"{"id":"P1","from":0,"to":9}"#, Lang::En, &bad).outcome, OmittedOutcome::NotFound, "{data}");
        }
    }

    fn ask(args: &str, lang: Lang, r: &StoredResult) -> OmittedResult {
        let id = requested_id(args);
        answer(args, lang, "a", id.filter(|i| *i == r.id).map(|_| r))
    }

    #[test]
    fn returns_only_dropped_paragraphs_verbatim() {
        let (r, paras) = record();
        let a = ask(r#"{"id":"P1","from":1,"to":8}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::Ok);
        assert_eq!(a.text, format!("{}{}{}{}", paras[2], paras[3], paras[4], paras[8]));
        assert_eq!(a.log_line, "tool omitted: agent=a id=P1 from=1 to=8 chars=800 outcome=ok");
    }

    #[test]
    fn to_is_clamped_to_the_last_paragraph() {
        let (r, paras) = record();
        let a = ask(r#"{"id":"P1","from":8,"to":999}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::Ok);
        assert_eq!(a.text, paras[8]);
        assert!(a.log_line.contains("to=9 "));
    }

    #[test]
    fn a_to_past_every_integer_type_is_clamped_too() {
        let (r, paras) = record();
        for to in ["99999999999999999999", "1e20", "\"99999999999999999999\"", "1000000000000"] {
            let a = ask(&format!(r#"{{"id":"P1","from":8,"to":{to}}}"#), Lang::En, &r);
            assert_eq!(a.outcome, OmittedOutcome::Ok, "{to}");
            assert_eq!(a.text, paras[8], "{to}");
        }
    }

    #[test]
    fn the_range_edges_are_inclusive() {
        let (r, paras) = record();
        let a = ask(r#"{"id":"P1","from":4,"to":4}"#, Lang::En, &r);
        assert_eq!(a.text, paras[4]);
        let a = ask(r#"{"id":"P1","from":2,"to":2}"#, Lang::En, &r);
        assert_eq!(a.text, paras[2]);
        let a = ask(r#"{"id":"P1","from":9,"to":9}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::NotDropped);
        let a = ask(r#"{"id":"P1","from":10,"to":10}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::Invalid);
    }

    #[test]
    fn kept_range_is_not_dropped() {
        let (r, _) = record();
        let a = ask(r#"{"id":"P1","from":5,"to":7}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::NotDropped);
        assert_eq!(a.text, "No paragraph in that range was omitted; that range is already in the text.");
        let a = ask(r#"{"id":"P1","from":5,"to":7}"#, Lang::Ja, &r);
        assert_eq!(a.text, "指定された範囲に省略された段落はありません。その範囲は本文に既に含まれています。");
    }

    #[test]
    fn an_unknown_or_evicted_id_is_not_found_and_says_to_call_the_tool_again() {
        let a = answer(r#"{"id":"P2","from":0,"to":3}"#, Lang::En, "a", None);
        assert_eq!(a.outcome, OmittedOutcome::NotFound);
        assert_eq!(a.text, "There is no text with id=P2 here (it may have expired). Pass the id written in the omission marker, or call the tool again.");
        let a = answer(r#"{"id":"P2","from":0,"to":3}"#, Lang::Ja, "a", None);
        assert!(a.text.contains("ツールをもう一度呼んでください"), "{}", a.text);
    }

    #[test]
    fn a_record_of_another_id_is_never_answered_from() {
        let (r, _) = record();
        let a = answer(r#"{"id":"P2","from":0,"to":9}"#, Lang::En, "a", Some(&r));
        assert_eq!(a.outcome, OmittedOutcome::NotFound);
    }

    #[test]
    fn exactly_20000_characters_is_allowed_one_more_is_too_large() {
        let unit = |i: u32, n: usize| (i, "w".repeat(n));
        let r = stored("P3", Shape::Text, 2, &[unit(0, 10_000), unit(1, 10_000)]);
        assert_eq!(ask(r#"{"id":"P3","from":0,"to":1}"#, Lang::En, &r).outcome, OmittedOutcome::Ok);
        let r = stored("P3", Shape::Text, 2, &[unit(0, 10_000), unit(1, 10_001)]);
        assert_eq!(ask(r#"{"id":"P3","from":0,"to":1}"#, Lang::En, &r).outcome, OmittedOutcome::TooLarge);
    }

    #[test]
    fn over_20000_characters_is_too_large() {
        let dropped: Vec<(u32, String)> = (0..8).map(|i| (i, format!("{i}{}\n\n", "w".repeat(4_997)))).collect();
        let r = stored("P3", Shape::Text, 8, &dropped);
        let a = ask(r#"{"id":"P3","from":0,"to":7}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::TooLarge);
        assert_eq!(a.text, "That range holds 40,000 characters, over the 20,000 limit. Narrow it (e.g. from=0, to=3).");
        let a = ask(r#"{"id":"P3","from":0,"to":7}"#, Lang::Ja, &r);
        assert_eq!(a.text, "指定された範囲は 40,000 字あり、上限の 20,000 字を超えています。範囲を狭めてください（例: from=0, to=3）。");
    }

    #[test]
    fn bad_arguments_are_invalid_and_named() {
        let (r, _) = record();
        for (args, name) in [
            ("not json", "arguments"),
            ("[1,2]", "arguments"),
            (r#"{"from":1,"to":2}"#, "id"),
            (r#"{"id":"P1","from":-1,"to":2}"#, "from"),
            (r#"{"id":"P1","from":1.5,"to":2}"#, "from"),
            (r#"{"id":"P1","from":3,"to":2}"#, "to"),
        ] {
            assert_eq!(requested_id(args), None, "{args}");
            let a = ask(args, Lang::En, &r);
            assert_eq!(a.outcome, OmittedOutcome::Invalid, "{args}");
            assert!(a.text.starts_with(&format!("The argument \"{name}\" is invalid.")), "{args}: {}", a.text);
        }
    }

    #[test]
    fn a_range_past_the_last_paragraph_is_invalid() {
        let (r, _) = record();
        let a = ask(r#"{"id":"P1","from":50,"to":60}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::Invalid);
        assert!(a.text.starts_with("The argument \"from\" is invalid: id=P1 has paragraphs 0–9."), "{}", a.text);
    }

    #[test]
    fn model_written_ids_and_agent_labels_never_break_the_log() {
        let a = answer(r#"{"id":"secret words here","from":1,"to":2}"#, Lang::En, "my agent", None);
        assert_eq!(a.outcome, OmittedOutcome::NotFound);
        assert_eq!(a.log_line, "tool omitted: agent=my_agent id=? from=1 to=2 chars=0 outcome=not_found");
    }

    #[test]
    fn lenient_numbers_and_lowercase_id_are_accepted() {
        let (r, _) = record();
        assert_eq!(requested_id(r#"{"id":" p1 ","from":"2","to":2.0}"#).as_deref(), Some("P1"));
        assert_eq!(ask(r#"{"id":"p1","from":"2","to":2.0}"#, Lang::En, &r).outcome, OmittedOutcome::Ok);
    }

    #[test]
    fn the_request_argument_is_an_optional_string_property_in_both_languages() {
        for lang in [Lang::Ja, Lang::En] {
            let arg: Value = serde_json::from_str(&request_argument(lang)).unwrap();
            assert_eq!(arg["name"], REQUEST_ARGUMENT);
            assert_eq!(arg["schema"]["type"], "string");
            assert!(arg["schema"]["description"].as_str().unwrap().chars().count() > 40);
            assert_eq!(arg.as_object().unwrap().len(), 2);
        }
    }

    #[test]
    fn every_dialect_is_a_json_object_with_the_same_schema() {
        for lang in [Lang::Ja, Lang::En] {
            let plain: Value = serde_json::from_str(&tool(lang, Dialect::Plain)).unwrap();
            let schema = &plain["parameters"];
            assert_eq!(schema["required"], serde_json::json!(["id", "from", "to"]));
            assert_eq!(schema["properties"]["from"]["type"], "integer");
            let openai: Value = serde_json::from_str(&tool(lang, Dialect::Openai)).unwrap();
            assert_eq!(openai["type"], "function");
            assert_eq!(openai["function"]["name"], "omitted");
            assert_eq!(&openai["function"]["parameters"], schema);
            let anthropic: Value = serde_json::from_str(&tool(lang, Dialect::Anthropic)).unwrap();
            assert_eq!(&anthropic["input_schema"], schema);
            let mcp: Value = serde_json::from_str(&tool(lang, Dialect::Mcp)).unwrap();
            assert_eq!(&mcp["inputSchema"], schema);
            assert_eq!(mcp["description"], plain["description"]);
        }
    }

    #[test]
    fn the_hooked_mcp_dialect_adds_optional_session_and_body_for_the_hook() {
        for lang in [Lang::Ja, Lang::En] {
            let mcp: Value = serde_json::from_str(&tool(lang, Dialect::Mcp)).unwrap();
            let hooked: Value = serde_json::from_str(&tool(lang, Dialect::McpHooked)).unwrap();
            assert_eq!(hooked["name"], "omitted");
            assert_eq!(hooked["description"], mcp["description"]);
            let (schema, plain) = (&hooked["inputSchema"], &mcp["inputSchema"]);
            assert_eq!(schema["required"], serde_json::json!(["id", "from", "to"]), "session and body stay optional");
            assert_eq!(schema["additionalProperties"], false);
            assert_eq!(schema["properties"]["session"]["type"], "string");
            assert_eq!(schema["properties"]["body"]["type"], "boolean");
            for key in ["id", "from", "to"] {
                assert_eq!(schema["properties"][key], plain["properties"][key]);
            }
            assert!(plain["properties"].get("session").is_none(), "the plain MCP dialect is unchanged");
        }
        let en: Value = serde_json::from_str(&tool(Lang::En, Dialect::McpHooked)).unwrap();
        assert_eq!(en["inputSchema"]["properties"]["session"]["description"], "Filled in by toolprune's hook; leave it out.");
    }

    #[test]
    fn the_hook_arguments_do_not_change_the_answer() {
        let (r, paras) = record();
        let args = r#"{"id":"P1","from":1,"to":8,"session":"claude-code:abc:00ff","body":true}"#;
        assert_eq!(requested_id(args).as_deref(), Some("P1"));
        let a = ask(args, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::Ok);
        assert_eq!(a.text, format!("{}{}{}{}", paras[2], paras[3], paras[4], paras[8]));
        assert_eq!(a.log_line, "tool omitted: agent=a id=P1 from=1 to=8 chars=800 outcome=ok", "no session in the log");
    }

    #[test]
    fn an_array_record_returns_its_dropped_elements_as_a_json_array() {
        let elements: Vec<String> = (0..6).map(|i| format!(r#"{{"id": {i}, "body": "{}"}}"#, "q".repeat(300))).collect();
        let dropped: Vec<(u32, String)> = [0usize, 2, 3, 5].iter().map(|&i| (i as u32, elements[i].clone())).collect();
        let r = stored("P1", Shape::JsonArray, 6, &dropped);
        let a = ask(r#"{"id":"P1","from":1,"to":3}"#, Lang::En, &r);
        assert_eq!(a.outcome, OmittedOutcome::Ok);
        assert_eq!(a.text, format!("[{},\n{}]", elements[2], elements[3]));
        let v: Vec<Value> = serde_json::from_str(&a.text).unwrap();
        assert_eq!(v[0]["id"], 2);
        let chars = 2 * elements[2].chars().count();
        assert_eq!(a.log_line, format!("tool omitted: agent=a id=P1 from=1 to=3 chars={chars} outcome=ok"));
        let a = ask(r#"{"id":"P1","from":5,"to":99}"#, Lang::En, &r);
        assert_eq!(a.text, format!("[{}]", elements[5]));
        assert!(a.log_line.contains(" to=5 "));
        assert_eq!(ask(r#"{"id":"P1","from":4,"to":4}"#, Lang::En, &r).outcome, OmittedOutcome::NotDropped);
        assert_eq!(ask(r#"{"id":"P1","from":6,"to":9}"#, Lang::En, &r).outcome, OmittedOutcome::Invalid);
    }
}
