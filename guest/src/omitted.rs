//! SPEC §10: `omitted` — the way back to dropped paragraphs, and the tool's
//! name, description and JSON schema in ja and en.

use crate::component::exports::toolprune::pruner::pruner::{
    Lang, OmittedOutcome, OmittedResult, StoredResult, ToolSpec,
};
use crate::limits::OMITTED_MAX_CHARS;
use crate::marker::thousands;
use crate::split::split;
use crate::wrapper::Classified;
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
fn index(v: Option<&Value>) -> Option<usize> {
    match v? {
        Value::Number(n) => n
            .as_u64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f < 1e15).map(|f| f as u64))
            .map(|n| n as usize),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
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
            "引数 {name} が不正です。{{\"id\": \"P2\", \"from\": 8, \"to\": 14}} の形で渡してください（id は省略の印に書かれた id、from と to は 0 始まりの段落番号で from ≤ to）。"
        ),
        Lang::En => format!(
            "The argument {name} is invalid. Pass {{\"id\": \"P2\", \"from\": 8, \"to\": 14}}: id as written in the omission marker, from and to as 0-based paragraph numbers with from ≤ to."
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

/// Answer one `omitted` call (SPEC §10). `store` holds this turn's stored
/// results. Returns only dropped paragraphs in `from..=to` (clamped to the
/// last paragraph), verbatim, at most 20,000 characters; otherwise a text for
/// the model saying what to do. Never fails.
pub fn omitted(arguments: &str, lang: Lang, agent: &str, store: &[StoredResult]) -> OmittedResult {
    let agent = if agent.is_empty() { "-" } else { agent };
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
    let Some(stored) = store.iter().find(|s| s.id == args.id) else {
        let text = match lang {
            Lang::Ja => format!("id={} の本文はこのターンには在りません。省略の印に書かれている id を渡してください。", args.id),
            Lang::En => format!("There is no text with id={} in this turn. Pass the id written in the omission marker.", args.id),
        };
        return OmittedResult { outcome: OmittedOutcome::NotFound, text, log_line: log(args.to, 0, "not_found") };
    };
    // A JSON array's record holds the raw JSON text: its units are the
    // elements, found again by the same deterministic classification.
    let (paragraphs, is_array) = match crate::wrapper::classify(&stored.text) {
        Classified::Array(a) => (a.units(&stored.text), true),
        _ => (split(&stored.text), false),
    };
    let last = paragraphs.len().saturating_sub(1);
    if args.from > last {
        let text = match lang {
            Lang::Ja => format!(
                "引数 from が不正です。id={} の段落番号は 0〜{} です。{{\"id\": \"{}\", \"from\": 0, \"to\": {}}} のように範囲内で渡してください。",
                args.id, last, args.id, last
            ),
            Lang::En => format!(
                "The argument from is invalid: id={} has paragraphs 0–{}. Pass a range inside it, e.g. {{\"id\": \"{}\", \"from\": 0, \"to\": {}}}.",
                args.id, last, args.id, last
            ),
        };
        return OmittedResult { outcome: OmittedOutcome::Invalid, text, log_line: log(args.to, 0, "invalid") };
    }
    let to = args.to.min(last);
    let picked: Vec<usize> = stored
        .dropped
        .iter()
        .map(|&i| i as usize)
        .filter(|&i| i >= args.from && i <= to && i < paragraphs.len())
        .collect();
    if picked.is_empty() {
        let text = match lang {
            Lang::Ja => "指定された範囲に省略された段落はありません。その範囲は本文に既に含まれています。".to_string(),
            Lang::En => "No paragraph in that range was omitted; that range is already in the text.".to_string(),
        };
        return OmittedResult { outcome: OmittedOutcome::NotDropped, text, log_line: log(to, 0, "not_dropped") };
    }
    let chars: usize = picked.iter().map(|&i| paragraphs[i].chars).sum();
    if chars > OMITTED_MAX_CHARS {
        // Suggest the widest range from `from` whose dropped paragraphs fit.
        let mut fit = 0;
        let mut suggest_to = picked[0];
        for &i in &picked {
            fit += paragraphs[i].chars;
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
    if is_array {
        let text = crate::array::omitted_text(&stored.text, &paragraphs, &picked);
        return OmittedResult { outcome: OmittedOutcome::Ok, text, log_line: log(to, chars, "ok") };
    }
    let mut text = String::with_capacity(picked.iter().map(|&i| paragraphs[i].end - paragraphs[i].start).sum());
    for &i in &picked {
        text.push_str(&stored.text[paragraphs[i].start..paragraphs[i].end]);
    }
    OmittedResult { outcome: OmittedOutcome::Ok, text, log_line: log(to, chars, "ok") }
}

/// The `omitted` tool as presented to the model, statically (SPEC §10).
pub fn tool_spec(lang: Lang) -> ToolSpec {
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
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": id},
            "from": {"type": "integer", "minimum": 0, "description": from},
            "to": {"type": "integer", "minimum": 0, "description": to},
        },
        "required": ["id", "from", "to"],
        "additionalProperties": false,
    });
    ToolSpec { name: TOOL_NAME.to_string(), description: description.to_string(), input_schema: schema.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ten paragraphs of 200 characters; 2, 3, 4 and 8 dropped.
    fn store() -> (Vec<StoredResult>, Vec<String>) {
        let paras: Vec<String> = (0..10).map(|i| format!("{i}{}", "z".repeat(197))).collect();
        let text = paras.join("\n\n");
        (vec![StoredResult { id: "P1".into(), text, dropped: vec![2, 3, 4, 8] }], paras)
    }

    #[test]
    fn returns_only_dropped_paragraphs_verbatim() {
        let (store, paras) = store();
        let r = omitted(r#"{"id":"P1","from":1,"to":8}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::Ok);
        let expected = format!("{}\n\n{}\n\n{}\n\n{}\n\n", paras[2], paras[3], paras[4], paras[8]);
        assert_eq!(r.text, expected);
        assert_eq!(r.log_line, "tool omitted: agent=a id=P1 from=1 to=8 chars=800 outcome=ok");
    }

    #[test]
    fn to_is_clamped_to_the_last_paragraph() {
        let (store, paras) = store();
        let r = omitted(r#"{"id":"P1","from":8,"to":999}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::Ok);
        assert_eq!(r.text, format!("{}\n\n", paras[8]));
        assert!(r.log_line.contains("to=9 "));
    }

    #[test]
    fn kept_range_is_not_dropped() {
        let (store, _) = store();
        let r = omitted(r#"{"id":"P1","from":5,"to":7}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::NotDropped);
        assert_eq!(r.text, "No paragraph in that range was omitted; that range is already in the text.");
        let r = omitted(r#"{"id":"P1","from":5,"to":7}"#, Lang::Ja, "a", &store);
        assert_eq!(r.text, "指定された範囲に省略された段落はありません。その範囲は本文に既に含まれています。");
    }

    #[test]
    fn unknown_id_is_not_found() {
        let (store, _) = store();
        let r = omitted(r#"{"id":"P2","from":0,"to":3}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::NotFound);
        assert_eq!(r.text, "There is no text with id=P2 in this turn. Pass the id written in the omission marker.");
        let r = omitted(r#"{"id":"P2","from":0,"to":3}"#, Lang::Ja, "a", &[]);
        assert_eq!(r.text, "id=P2 の本文はこのターンには在りません。省略の印に書かれている id を渡してください。");
    }

    #[test]
    fn over_20000_characters_is_too_large() {
        let paras: Vec<String> = (0..8).map(|i| format!("{i}{}", "w".repeat(4_997))).collect();
        let text = paras.join("\n\n");
        let store = vec![StoredResult { id: "P3".into(), text, dropped: (0..8).collect() }];
        let r = omitted(r#"{"id":"P3","from":0,"to":7}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::TooLarge);
        assert_eq!(r.text, "That range holds 39,998 characters, over the 20,000 limit. Narrow it (e.g. from=0, to=3).");
        let r = omitted(r#"{"id":"P3","from":0,"to":7}"#, Lang::Ja, "a", &store);
        assert_eq!(
            r.text,
            "指定された範囲は 39,998 字あり、上限の 20,000 字を超えています。範囲を狭めてください（例: from=0, to=3）。"
        );
    }

    #[test]
    fn bad_arguments_are_invalid_and_named() {
        let (store, _) = store();
        for (args, name) in [
            ("not json", "arguments"),
            ("[1,2]", "arguments"),
            (r#"{"from":1,"to":2}"#, "id"),
            (r#"{"id":"P1","from":-1,"to":2}"#, "from"),
            (r#"{"id":"P1","from":1.5,"to":2}"#, "from"),
            (r#"{"id":"P1","from":3,"to":2}"#, "to"),
        ] {
            let r = omitted(args, Lang::En, "a", &store);
            assert_eq!(r.outcome, OmittedOutcome::Invalid, "{args}");
            assert!(r.text.starts_with(&format!("The argument {name} is invalid.")), "{args}: {}", r.text);
        }
    }

    #[test]
    fn a_range_past_the_last_paragraph_is_invalid() {
        let (store, _) = store();
        let r = omitted(r#"{"id":"P1","from":50,"to":60}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::Invalid);
        assert!(r.text.starts_with("The argument from is invalid: id=P1 has paragraphs 0–9."), "{}", r.text);
    }

    #[test]
    fn model_written_ids_never_reach_the_log() {
        let (store, _) = store();
        let r = omitted(r#"{"id":"secret words here","from":1,"to":2}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::NotFound);
        assert_eq!(r.log_line, "tool omitted: agent=a id=? from=1 to=2 chars=0 outcome=not_found");
    }

    #[test]
    fn lenient_numbers_and_lowercase_id_are_accepted() {
        let (store, _) = store();
        let r = omitted(r#"{"id":"p1","from":"2","to":2.0}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::Ok);
    }

    #[test]
    fn tool_spec_schema_is_json_with_three_required_arguments() {
        for lang in [Lang::Ja, Lang::En] {
            let spec = tool_spec(lang);
            assert_eq!(spec.name, "omitted");
            let v: Value = serde_json::from_str(&spec.input_schema).unwrap();
            assert_eq!(v["required"], serde_json::json!(["id", "from", "to"]));
            assert_eq!(v["properties"]["from"]["type"], "integer");
        }
    }

    #[test]
    fn an_array_record_returns_its_dropped_elements_as_a_json_array() {
        let elements: Vec<String> = (0..6).map(|i| format!(r#"{{"id": {i}, "body": "{}"}}"#, "q".repeat(300))).collect();
        let text = format!("[\n  {}\n]\n", elements.join(",\n  "));
        let store = vec![StoredResult { id: "P1".into(), text, dropped: vec![0, 2, 3, 5] }];
        let r = omitted(r#"{"id":"P1","from":1,"to":3}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::Ok);
        assert_eq!(r.text, format!("[{},\n{}]", elements[2], elements[3]));
        let v: Vec<Value> = serde_json::from_str(&r.text).unwrap();
        assert_eq!(v[0]["id"], 2);
        let chars = 2 * elements[2].chars().count();
        assert_eq!(r.log_line, format!("tool omitted: agent=a id=P1 from=1 to=3 chars={chars} outcome=ok"));
        let r = omitted(r#"{"id":"P1","from":5,"to":99}"#, Lang::En, "a", &store);
        assert_eq!(r.text, format!("[{}]", elements[5]));
        assert!(r.log_line.contains(" to=5 "));
        let r = omitted(r#"{"id":"P1","from":4,"to":4}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::NotDropped);
        let r = omitted(r#"{"id":"P1","from":6,"to":9}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::Invalid);
    }

    #[test]
    fn an_array_range_over_20000_characters_is_too_large() {
        let elements: Vec<String> = (0..8).map(|i| format!(r#""{i}{}""#, "w".repeat(4_997))).collect();
        let text = format!("[{}]", elements.join(","));
        let store = vec![StoredResult { id: "P1".into(), text, dropped: (0..8).collect() }];
        let r = omitted(r#"{"id":"P1","from":0,"to":7}"#, Lang::En, "a", &store);
        assert_eq!(r.outcome, OmittedOutcome::TooLarge);
        assert_eq!(r.text, "That range holds 40,000 characters, over the 20,000 limit. Narrow it (e.g. from=0, to=3).");
    }
}
