//! SPEC §10: `omitted`, the way back — dropped paragraphs verbatim later in
//! the same turn, the texts for every other outcome in en and ja, the log
//! line, and the tool's spec.

use serde_json::Value;
use toolprune::types::{Dialect, Lang, OmittedResult};
use toolprune_tests::*;

/// 12 paragraphs of 500 characters; 2, 3, 4 and 8 dropped, stored as P1.
fn pruned_turn(lang: Lang) -> (TestTurn, std::sync::Arc<toolprune::CapturedLog>, String) {
    let text = uniform(12, 500);
    let mut o = options(REQUEST);
    o.lang = lang;
    let (mut turn, log) = turn_with(o, dropping([2, 3, 4, 8]));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    (turn, log, text)
}

fn call(turn: &TestTurn, args: &str) -> OmittedResult {
    turn.omitted(args).expect("the guest answers `omitted`")
}

fn name(r: &OmittedResult) -> String {
    wit_name(&r.outcome)
}

#[test]
fn a_later_call_returns_the_dropped_paragraphs_verbatim() {
    let (mut turn, log, text) = pruned_turn(Lang::En);
    // Round 2 of the same turn: another tool result pruned in between.
    let other = uniform(12, 600);
    let p2 = prune(&mut turn, &other);
    assert_eq!(outcome(&p2), "ok");
    let p = spans(&text);
    let r = call(&mut turn, r#"{"id":"P1","from":1,"to":8}"#);
    assert_eq!(name(&r), "ok");
    assert_eq!(r.text, [p[2], p[3], p[4], p[8]].concat(), "only dropped paragraphs, kept ones skipped");
    let expected_line = "tool omitted: agent=agent id=P1 from=1 to=8 chars=2000 outcome=ok";
    assert_eq!(r.log_line, expected_line);
    assert_eq!(log.lines().last().unwrap(), expected_line);
    // And the second result's dropped paragraphs under P2.
    let r = call(&mut turn, r#"{"id":"P2","from":8,"to":8}"#);
    assert_eq!(r.text, spans(&other)[8]);
}

#[test]
fn to_is_clamped_to_the_last_paragraph() {
    let (mut turn, _log, text) = pruned_turn(Lang::En);
    let r = call(&mut turn, r#"{"id":"P1","from":8,"to":500}"#);
    assert_eq!(name(&r), "ok");
    assert_eq!(r.text, spans(&text)[8]);
    assert!(r.log_line.contains(" to=11 "), "{}", r.log_line);
}

#[test]
fn a_range_of_kept_paragraphs_is_not_dropped() {
    for (lang, text) in [
        (Lang::En, "No paragraph in that range was omitted; that range is already in the text."),
        (Lang::Ja, "指定された範囲に省略された段落はありません。その範囲は本文に既に含まれています。"),
    ] {
        let (mut turn, _log, _) = pruned_turn(lang);
        let r = call(&mut turn, r#"{"id":"P1","from":5,"to":7}"#);
        assert_eq!(name(&r), "not_dropped");
        assert_eq!(r.text, text);
        assert!(r.log_line.ends_with(" chars=0 outcome=not_dropped"), "{}", r.log_line);
    }
}

#[test]
fn an_unknown_id_is_not_found() {
    for (lang, text) in [
        (Lang::En, "There is no text with id=P2 here (it may have expired). Pass the id written in the omission marker, or call the tool again."),
        (Lang::Ja, "id=P2 の本文はここには在りません（期限切れの可能性があります）。省略の印に書かれている id を渡すか、ツールをもう一度呼んでください。"),
    ] {
        let (mut turn, _log, _) = pruned_turn(lang);
        let r = call(&mut turn, r#"{"id":"P2","from":0,"to":3}"#);
        assert_eq!(name(&r), "not_found");
        assert_eq!(r.text, text);
        assert!(r.log_line.ends_with("outcome=not_found"), "{}", r.log_line);
    }
}

/// Ids are the conversation's: another conversation does not see them.
#[test]
fn another_conversation_has_no_stored_text() {
    let (_old, _log, _) = pruned_turn(Lang::En);
    let (mut fresh, _log) = turn(REQUEST, dropping([]));
    let r = call(&mut fresh, r#"{"id":"P1","from":0,"to":3}"#);
    assert_eq!(name(&r), "not_found");
}

#[test]
fn more_than_20000_characters_is_too_large() {
    // 12 paragraphs of 5,000 characters, 0–6 dropped: 35,000 characters.
    let text = uniform(12, 5_000);
    for (lang, prefix, suffix) in [
        (Lang::En, "That range holds 35,000 characters, over the 20,000 limit. Narrow it (e.g. from=", ")."),
        (Lang::Ja, "指定された範囲は 35,000 字あり、上限の 20,000 字を超えています。範囲を狭めてください（例: from=", "）。"),
    ] {
        let mut o = options(REQUEST);
        o.lang = lang;
        let (mut turn, _log) = turn_with(o, dropping(0..7));
        assert_eq!(outcome(&prune(&mut turn, &text)), "ok");
        let r = call(&mut turn, r#"{"id":"P1","from":0,"to":11}"#);
        assert_eq!(name(&r), "too_large");
        assert!(r.text.starts_with(prefix) && r.text.ends_with(suffix), "{}", r.text);
        assert!(r.log_line.ends_with(" chars=35000 outcome=too_large"), "{}", r.log_line);
        // The suggested range is one that works.
        let range = &r.text[prefix.len()..r.text.len() - suffix.len()];
        let (from, to) = range.split_once(", to=").unwrap();
        let again = call(&mut turn, &format!(r#"{{"id":"P1","from":{from},"to":{to}}}"#));
        assert_eq!(name(&again), "ok", "suggestion {range}");
        assert!(chars(&again.text) <= 20_000);
    }
    // 20,000 exactly is allowed.
    let (mut turn, _log) = turn(REQUEST, dropping(0..7));
    prune(&mut turn, &text);
    let r = call(&mut turn, r#"{"id":"P1","from":0,"to":3}"#);
    assert_eq!(name(&r), "ok");
    assert_eq!(chars(&r.text), 20_000);
}

#[test]
fn bad_arguments_are_invalid_and_named() {
    for lang in [Lang::En, Lang::Ja] {
        let (mut turn, _log, _) = pruned_turn(lang);
        for (args, bad) in [
            ("not json", "arguments"),
            ("[1, 2]", "arguments"),
            (r#"{"from":1,"to":2}"#, "id"),
            (r#"{"id":"P1","from":-1,"to":2}"#, "from"),
            (r#"{"id":"P1","from":1.5,"to":2}"#, "from"),
            (r#"{"id":"P1","from":1}"#, "to"),
            (r#"{"id":"P1","from":3,"to":2}"#, "to"),
        ] {
            let r = call(&mut turn, args);
            assert_eq!(name(&r), "invalid", "{args}");
            assert!(r.text.contains(bad), "{args}: names {bad}: {}", r.text);
            assert!(r.text.contains(r#"{"id": "P2", "from": 8, "to": 14}"#), "{args}: shows the expected form");
            assert!(r.log_line.starts_with("tool omitted: agent=agent ") && r.log_line.ends_with("outcome=invalid"));
        }
    }
}

#[test]
fn the_omitted_log_line_carries_counts_never_text() {
    let (mut turn, log, text) = pruned_turn(Lang::En);
    call(&mut turn, r#"{"id":"P1","from":0,"to":11}"#);
    for line in log.lines().iter().filter(|l| l.starts_with("tool omitted:")) {
        for span in spans(&text) {
            assert!(!line.contains(&span[..40]), "{line}");
        }
    }
}

#[test]
fn the_tool_spec_is_an_object_with_a_json_schema_object_in_every_dialect() {
    for lang in [Lang::En, Lang::Ja] {
        let (turn, _log) = turn_with(
            {
                let mut o = options(REQUEST);
                o.lang = lang;
                o
            },
            dropping([]),
        );
        let plain = turn.conversation.omitted_tool(Dialect::Plain, None).unwrap();
        assert_eq!(plain, pruner().omitted_tool(Dialect::Plain, lang).unwrap(), "the conversation's language");
        assert_eq!(plain["name"], "omitted");
        let description = plain["description"].as_str().expect("a description");
        let kana = description.chars().any(|c| ('\u{3040}'..='\u{30ff}').contains(&c));
        assert_eq!(kana, lang == Lang::Ja, "the description is in the turn's language");
        let schema = &plain["parameters"];
        assert!(schema.is_object(), "the schema is an object, not a string: {schema}");
        assert_eq!(schema["type"], "object");
        let props = schema["properties"].as_object().expect("properties");
        assert_eq!(props.keys().collect::<Vec<_>>(), vec!["from", "id", "to"]);
        assert_eq!(schema["properties"]["id"]["type"], "string");
        assert_eq!(schema["properties"]["from"]["type"], "integer");
        assert_eq!(schema["properties"]["to"]["type"], "integer");
        let mut required: Vec<&str> = schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        required.sort();
        assert_eq!(required, vec!["from", "id", "to"]);
        // The SDK shapes carry the same name, description and schema object.
        let openai = turn.conversation.omitted_tool(Dialect::Openai, None).unwrap();
        assert_eq!(openai["type"], "function");
        assert_eq!(openai["function"], plain);
        let anthropic = turn.conversation.omitted_tool(Dialect::Anthropic, None).unwrap();
        assert_eq!((&anthropic["name"], &anthropic["description"], &anthropic["input_schema"]), (&plain["name"], &plain["description"], schema));
        let mcp = turn.conversation.omitted_tool(Dialect::Mcp, None).unwrap();
        assert_eq!((&mcp["name"], &mcp["description"], &mcp["inputSchema"]), (&plain["name"], &plain["description"], schema));
    }
}

/// A range that starts past the last paragraph does not exist: `invalid`
/// naming `from`, not `not_dropped` ("that range is already in the text"
/// would be false).
#[test]
fn a_range_past_the_last_paragraph_is_invalid_not_already_in_the_text() {
    let (mut turn, _log, _) = pruned_turn(Lang::En);
    let r = call(&mut turn, r#"{"id":"P1","from":50,"to":60}"#);
    assert_eq!(name(&r), "invalid", "{}", r.text);
    assert!(r.text.contains("from"), "{}", r.text);
}
