//! SPEC §5: the Jev codec — the frozen question, the request body, and
//! decoding of a bare answer or the Cloudflare envelope. The host only POSTs
//! the body and hands back the response text; it never reads Jev JSON.

use serde_json::Value;

use crate::json;

/// The question's instructions; `{chunk}` is replaced by the chunk name
/// (`p3`). Measured wording: a protocol constant (SPEC §5), frozen by a test.
pub const INSTRUCTIONS: &str = "`chunks.{chunk}` の文章は、`request` の依頼に答えるために必要な情報を含むか。";
/// The `true` criterion (SPEC §5).
pub const CRITERIA_TRUE: &str = "依頼に答える材料 (事実・数値・主張・手順・限界) が含まれる";
/// The `false` criterion (SPEC §5).
pub const CRITERIA_FALSE: &str = "ナビゲーション・広告・定型文・著者欄・無関係な話題など、依頼に答える材料を含まない";

/// The chunk (and question) name of paragraph `index`: `p{index}`, with the
/// paragraph's number in the whole text (SPEC §4.5), so names are unique.
pub fn chunk_name(index: usize) -> String {
    format!("p{index}")
}

/// The request body of one batch (SPEC §5 wire shape). `model` is included
/// only when given (native TypeSafe route; Cloudflare takes it from the URL).
/// `chunks` are `(paragraph number, text)` in batch order; keys keep that order.
///
/// Strings are escaped by [`json::push_str`] straight into one buffer; the
/// per-question parts (instructions, criteria) are escaped once per body, not
/// once per paragraph (the encoding is part of every result's guest work,
/// issue 6).
pub fn encode_request(model: Option<&str>, basis: &str, chunks: &[(usize, &str)]) -> String {
    let size: usize = chunks.iter().map(|(_, t)| t.len() + 400).sum::<usize>() + basis.len() + 64;
    let mut out = String::with_capacity(size);
    out.push('{');
    if let Some(model) = model {
        out.push_str("\"model\":");
        json::push_str(&mut out, model);
        out.push(',');
    }
    out.push_str("\"state\":{\"request\":");
    json::push_str(&mut out, basis);
    out.push_str(",\"chunks\":{");
    for (i, (index, text)) in chunks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        json::push_str(&mut out, &chunk_name(*index));
        out.push(':');
        json::push_str(&mut out, text);
    }
    out.push_str("}},\"questions\":{");
    // The escaped instructions, cut where the chunk name goes (`{chunk}` and a
    // chunk name `p3` read the same escaped as raw).
    let instructions = json::string(INSTRUCTIONS);
    let pieces: Vec<&str> = instructions.split("{chunk}").collect();
    let mut criteria = String::from(",\"criteria\":{\"true\":");
    json::push_str(&mut criteria, CRITERIA_TRUE);
    criteria.push_str(",\"false\":");
    json::push_str(&mut criteria, CRITERIA_FALSE);
    criteria.push_str("}}");
    for (i, (index, _)) in chunks.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let name = chunk_name(*index);
        json::push_str(&mut out, &name);
        out.push_str(":{\"type\":\"noul\",\"instructions\":");
        for (k, piece) in pieces.iter().enumerate() {
            if k > 0 {
                out.push_str(&name);
            }
            out.push_str(piece);
        }
        out.push_str(&criteria);
    }
    out.push_str("}}");
    out
}

/// A decoded Jev answer for one batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    /// One score per requested paragraph, in request order; `None` when the
    /// answer is missing, has no `type` or another type than `noul`, when
    /// `noul` is not a number, or outside [0, 1] (kept, SPEC §5).
    pub scores: Vec<Option<f64>>,
    /// `usage.input_tokens`, 0 when absent.
    pub input_tokens: u64,
    /// The answer's `model` (the version the service ran), when it names one.
    pub model: Option<String>,
}

/// Why a response body could not be decoded at all (the batch fails; SPEC §11).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    /// Not JSON.
    NotJson,
    /// A Cloudflare envelope with `success` not `true`, or without `result`.
    EnvelopeFailed,
    /// No `answers` object.
    NoAnswers,
}

/// Decode a 2xx body, bare (`{"answers":…}`) or in the Cloudflare envelope
/// (`{"success":true,"result":{…}}`), for the paragraphs `indices` (request order).
pub fn decode_response(body: &str, indices: &[usize]) -> Result<Decoded, DecodeError> {
    let value: Value = serde_json::from_str(body).map_err(|_| DecodeError::NotJson)?;
    let mut inner = &value;
    if let Some(obj) = value.as_object() {
        if obj.contains_key("success") || (obj.contains_key("result") && !obj.contains_key("answers")) {
            if obj.get("success").and_then(Value::as_bool) != Some(true) {
                return Err(DecodeError::EnvelopeFailed);
            }
            inner = obj.get("result").filter(|r| r.is_object()).ok_or(DecodeError::EnvelopeFailed)?;
        }
    }
    let answers = inner.get("answers").and_then(Value::as_object).ok_or(DecodeError::NoAnswers)?;
    let scores = indices
        .iter()
        .map(|&index| {
            let answer = answers.get(&chunk_name(index))?;
            // `type` is the answer's discriminator in the vendor's schema: an
            // answer without it is not a noul answer (TypeSafe's SDK refuses it).
            if answer.get("type")?.as_str() != Some("noul") {
                return None;
            }
            let p = answer.get("noul")?.as_f64()?;
            (p.is_finite() && (0.0..=1.0).contains(&p)).then_some(p)
        })
        .collect();
    let input_tokens = inner
        .get("usage")
        .and_then(|u| u.get("input_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    // The served model, for `jev check`: a short printable name only.
    let model = inner
        .get("model")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|m| !m.is_empty() && m.chars().count() <= 100 && m.chars().all(|c| c.is_ascii_graphic()))
        .map(str::to_string);
    Ok(Decoded { scores, input_tokens, model })
}

/// Inclusive status ranges a host may retry once (SPEC §11): 429 and 5xx.
/// Never 402 (out of credit) nor any other 4xx.
pub const RETRY_ON: [(u16, u16); 2] = [(429, 429), (500, 599)];

/// How every host must run the scorer's requests (SPEC §4.6, §11), for
/// pruning and the judge alike: the numbers live here, not in the hosts.
/// Retries are decided per answer by `settings::retry_delay` (which uses [`RETRY_ON`]).
pub fn transport_policy() -> crate::types::TransportPolicy {
    use crate::limits;
    crate::types::TransportPolicy { max_in_flight: limits::MAX_IN_FLIGHT, deadline_ms: limits::DEADLINE_MS }
}

/// The WIT enum of a failure class named by [`failure_class`] (or
/// `undecodable`, `no-answer`, `timeout`, `cancelled`).
pub fn class_of(name: &str) -> crate::types::FailureClass {
    use crate::types::FailureClass as C;
    match name {
        "http-4xx" => C::Http4xx,
        "http-5xx" => C::Http5xx,
        "rate-limited" => C::RateLimited,
        "out-of-credit" => C::OutOfCredit,
        "network" => C::Network,
        "undecodable" => C::Undecodable,
        "timeout" => C::Timeout,
        "cancelled" => C::Cancelled,
        "no-answer" => C::NoAnswer,
        _ => C::HttpOther,
    }
}

/// The class of a failed batch, for diagnosis (never the body).
pub fn failure_class(status: Option<u16>) -> &'static str {
    match status {
        None => "network",
        Some(402) => "out-of-credit",
        Some(429) => "rate-limited",
        Some(s) if (500..=599).contains(&s) => "http-5xx",
        Some(s) if (400..=499).contains(&s) => "http-4xx",
        Some(_) => "http-other",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The body built the plain way (serde_json for every string, the
    /// instructions escaped per question): `encode_request` must write the
    /// same bytes.
    fn reference(model: Option<&str>, basis: &str, chunks: &[(usize, &str)]) -> String {
        let j = |s: &str| serde_json::to_string(s).unwrap();
        let mut out = String::from("{");
        if let Some(m) = model {
            out += &format!("\"model\":{},", j(m));
        }
        out += &format!("\"state\":{{\"request\":{},\"chunks\":{{", j(basis));
        let parts: Vec<String> = chunks.iter().map(|(i, t)| format!("{}:{}", j(&chunk_name(*i)), j(t))).collect();
        out += &parts.join(",");
        out += "}},\"questions\":{";
        let questions: Vec<String> = chunks
            .iter()
            .map(|(i, _)| {
                let name = chunk_name(*i);
                format!(
                    "{}:{{\"type\":\"noul\",\"instructions\":{},\"criteria\":{{\"true\":{},\"false\":{}}}}}",
                    j(&name),
                    j(&INSTRUCTIONS.replace("{chunk}", &name)),
                    j(CRITERIA_TRUE),
                    j(CRITERIA_FALSE)
                )
            })
            .collect();
        out += &questions.join(",");
        out += "}}";
        out
    }

    proptest! {
        #[test]
        fn encode_request_writes_the_reference_bytes(
            model in proptest::option::of("[a-z0-9@/._-]{1,20}"),
            basis in any::<String>(),
            texts in proptest::collection::vec(any::<String>(), 1..5),
            first in 0usize..1000,
        ) {
            let chunks: Vec<(usize, &str)> = texts.iter().enumerate().map(|(k, t)| (first + k, t.as_str())).collect();
            prop_assert_eq!(encode_request(model.as_deref(), &basis, &chunks), reference(model.as_deref(), &basis, &chunks));
        }
    }

    #[test]
    fn question_text_is_frozen() {
        // One sentence more or less moved scores by 0.36 (SPEC §5): a change
        // here needs a new measurement, not just a new expected string.
        assert_eq!(
            INSTRUCTIONS.replace("{chunk}", "p3"),
            "`chunks.p3` の文章は、`request` の依頼に答えるために必要な情報を含むか。"
        );
        assert_eq!(CRITERIA_TRUE, "依頼に答える材料 (事実・数値・主張・手順・限界) が含まれる");
        assert_eq!(
            CRITERIA_FALSE,
            "ナビゲーション・広告・定型文・著者欄・無関係な話題など、依頼に答える材料を含まない"
        );
    }

    #[test]
    fn request_body_has_the_wire_shape() {
        let body = encode_request(Some("jev-1.13.0"), "How?\n\"q\"", &[(3, "alpha"), (4, "β \"x\"")]);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["model"], "jev-1.13.0");
        assert_eq!(v["state"]["request"], "How?\n\"q\"");
        assert_eq!(v["state"]["chunks"]["p3"], "alpha");
        assert_eq!(v["state"]["chunks"]["p4"], "β \"x\"");
        assert_eq!(v["questions"]["p4"]["type"], "noul");
        assert_eq!(
            v["questions"]["p4"]["instructions"],
            "`chunks.p4` の文章は、`request` の依頼に答えるために必要な情報を含むか。"
        );
        assert_eq!(v["questions"]["p3"]["criteria"]["true"], CRITERIA_TRUE);
        assert_eq!(v["questions"]["p3"]["criteria"]["false"], CRITERIA_FALSE);
        assert_eq!(v["questions"].as_object().unwrap().len(), 2);
        assert!(body.find("\"p3\"").unwrap() < body.find("\"p4\"").unwrap(), "keys keep batch order");
    }

    #[test]
    fn cloudflare_request_has_no_model() {
        let body = encode_request(None, "basis", &[(0, "x")]);
        let v: Value = serde_json::from_str(&body).unwrap();
        assert!(v.get("model").is_none());
    }

    #[test]
    fn bare_and_enveloped_answers_decode_alike() {
        let bare = r#"{"model":"jev-1.13.0","answers":{"p0":{"type":"noul","noul":0.12},"p1":{"type":"noul","noul":0.9}},"usage":{"input_tokens":1834,"output_tokens":0}}"#;
        let wrapped = format!(r#"{{"success":true,"result":{bare},"errors":[],"messages":[]}}"#);
        let expect = Decoded { scores: vec![Some(0.12), Some(0.9)], input_tokens: 1834, model: Some("jev-1.13.0".into()) };
        assert_eq!(decode_response(bare, &[0, 1]).unwrap(), expect);
        assert_eq!(decode_response(&wrapped, &[0, 1]).unwrap(), expect);
    }

    #[test]
    fn invalid_answers_are_none() {
        let body = r#"{"answers":{"p0":{"type":"noul","noul":1.5},"p1":{"type":"noul","noul":"0.3"},"p2":{"type":"choice","noul":0.2},
            "p4":{"type":"noul","noul":-0.01},"p5":{"type":"noul","noul":1},"p6":{"noul":0.5},"p7":{"type":null,"noul":0.5},"p8":0.5}}"#;
        let d = decode_response(body, &[0, 1, 2, 3, 4, 5, 6, 7, 8]).unwrap();
        assert_eq!(d.scores, vec![None, None, None, None, None, Some(1.0), None, None, None]);
        assert_eq!(d.input_tokens, 0);
        assert_eq!(d.model, None);
    }

    #[test]
    fn scores_of_up_to_15_significant_digits_are_read_exactly() {
        // serde_json's default number parser (no `float_roundtrip`) is exact
        // here; at 16–17 digits it may be 1 ULP off (0.19999999999999998 → 0.2).
        let body = r#"{"answers":{"p0":{"type":"noul","noul":0.199999999999999},"p1":{"type":"noul","noul":0.999999999999999},
            "p2":{"type":"noul","noul":0.945270695553922},"p3":{"type":"noul","noul":5e-324}}}"#;
        let d = decode_response(body, &[0, 1, 2, 3]).unwrap();
        assert_eq!(d.scores, vec![Some(0.199999999999999), Some(0.999999999999999), Some(0.945270695553922), Some(5e-324)]);
    }

    #[test]
    fn undecodable_bodies_fail_the_batch() {
        assert_eq!(decode_response("<html>", &[0]), Err(DecodeError::NotJson));
        assert_eq!(
            decode_response(r#"{"success":false,"errors":[{"code":7000}],"result":null}"#, &[0]),
            Err(DecodeError::EnvelopeFailed)
        );
        assert_eq!(decode_response(r#"{"model":"jev"}"#, &[0]), Err(DecodeError::NoAnswers));
    }

    #[test]
    fn retry_only_on_429_and_5xx() {
        let retry = |s: u16| RETRY_ON.iter().any(|&(a, b)| (a..=b).contains(&s));
        assert!(retry(429) && retry(500) && retry(529) && retry(599));
        assert!(!retry(402) && !retry(401) && !retry(422) && !retry(408) && !retry(413));
        assert_eq!(failure_class(Some(402)), "out-of-credit");
        assert_eq!(failure_class(None), "network");
    }
}
