//! The judge's Jev codec: one request carrying every declared question over
//! the state `{"message": …}`, and a defensive reading of the answers.
//!
//! Wire shapes (public documentation and client code, not an official
//! schema; SPEC §5):
//!
//! ```text
//! request  {"model": "jev-1.13.0",                       # native route only
//!           "state": {"message": "<text>"},
//!           "questions": {
//!             "risky": {"type": "noul",   "instructions": ask, "criteria": {"true": …, "false": …}},
//!             "kind":  {"type": "choice", "instructions": ask, "criteria": {"research": "<description>", …}},
//!             "size":  {"type": "score",  "instructions": ask, "criteria": ["<level 0>", "<level 1>", …]}}}
//! response {"answers": {
//!             "risky": {"type": "noul", "noul": 0.03},
//!             "kind":  {"type": "choice", "choice": "research", "probabilities": {"research": 0.99, …}, "confidence": …},
//!             "size":  {"type": "score", "score": 1.89, "probabilities": {"0": 0.05, "1": 0.05, "2": 0.9}, …}},
//!           "usage": {"input_tokens": 534, …}}
//! ```
//! bare, or in the Cloudflare envelope `{"success": true, "result": {…}}`.
//!
//! Reading: every probability is rounded to 0.01 (Jev's resolution); a
//! choice's value is its most probable declared option (ties: the one Jev
//! named, else the first declared); a score's value is its most probable
//! level, 1-based (ties: the lower), and its mean is Jev's 0-based `score`
//! plus 1 (computed from the probabilities when `score` is outside the
//! levels). `confidence`, `legend` and `model` are never read.
//!
//! What is read must have the vendor's shape (the OpenAPI schema behind
//! TypeSafe's SDK, checked by `hosts/python/tests/test_jev_sdk.py`): `type`
//! is required and must be the question's; a choice needs `choice` (a
//! string) and `probabilities` (an object of numbers); a score needs `score`
//! (a number) and `probabilities` (an object of numbers keyed by integer
//! levels; levels outside the question are ignored). Anything else is no
//! answer: what the vendor's own client refuses never routes a message.

use serde_json::Value;

use super::expr::Answer;
use super::rules::{Kind, Question};

use crate::json::push_str as push_json_str;

/// The request body: questions in the file's order, options and levels too.
pub fn encode_request(model: Option<&str>, message: &str, questions: &[Question]) -> String {
    let mut out = String::with_capacity(message.len() + 256 * (questions.len() + 1));
    out.push('{');
    if let Some(model) = model {
        out.push_str("\"model\":");
        push_json_str(&mut out, model);
        out.push(',');
    }
    out.push_str("\"state\":{\"message\":");
    push_json_str(&mut out, message);
    out.push_str("},\"questions\":{");
    for (i, q) in questions.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        push_json_str(&mut out, &q.name);
        out.push_str(":{\"type\":");
        out.push_str(match q.kind {
            Kind::Choice { .. } => "\"choice\"",
            Kind::Noul { .. } => "\"noul\"",
            Kind::Score { .. } => "\"score\"",
        });
        out.push_str(",\"instructions\":");
        push_json_str(&mut out, &q.ask);
        out.push_str(",\"criteria\":");
        match &q.kind {
            Kind::Choice { options } => {
                out.push('{');
                for (j, (name, description)) in options.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_json_str(&mut out, name);
                    out.push(':');
                    push_json_str(&mut out, description);
                }
                out.push('}');
            }
            Kind::Noul { true_if, false_if } => {
                out.push_str("{\"true\":");
                push_json_str(&mut out, true_if);
                out.push_str(",\"false\":");
                push_json_str(&mut out, false_if);
                out.push('}');
            }
            Kind::Score { levels } => {
                out.push('[');
                for (j, level) in levels.iter().enumerate() {
                    if j > 0 {
                        out.push(',');
                    }
                    push_json_str(&mut out, level);
                }
                out.push(']');
            }
        }
        out.push('}');
    }
    out.push_str("}}");
    out
}

/// Every declared question answered, in the file's order.
#[derive(Clone, Debug, PartialEq)]
pub struct Decoded {
    pub answers: Vec<Answer>,
    pub input_tokens: u64,
}

/// Why an answer could not be used: the failure classes of the decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecodeError {
    /// Not JSON, a failed envelope, or no `answers` object.
    Undecodable,
    /// A declared question has no valid answer (missing, wrong type, a
    /// probability outside [0, 1], no probabilities).
    NoAnswer,
}

impl DecodeError {
    pub fn class(self) -> &'static str {
        match self {
            DecodeError::Undecodable => "undecodable",
            DecodeError::NoAnswer => "no-answer",
        }
    }
}

/// Reads a 2xx body (bare or enveloped) against the declared questions.
pub fn decode_response(body: &str, questions: &[Question]) -> Result<Decoded, DecodeError> {
    let value: Value = serde_json::from_str(body).map_err(|_| DecodeError::Undecodable)?;
    let mut inner = &value;
    if let Some(obj) = value.as_object() {
        if obj.contains_key("success")
            || (obj.contains_key("result") && !obj.contains_key("answers"))
        {
            if obj.get("success").and_then(Value::as_bool) != Some(true) {
                return Err(DecodeError::Undecodable);
            }
            inner = obj
                .get("result")
                .filter(|r| r.is_object())
                .ok_or(DecodeError::Undecodable)?;
        }
    }
    let answers = inner
        .get("answers")
        .and_then(Value::as_object)
        .ok_or(DecodeError::Undecodable)?;
    let answers = questions
        .iter()
        .map(|q| {
            answers
                .get(&q.name)
                .and_then(|a| answer(q, a))
                .ok_or(DecodeError::NoAnswer)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let input_tokens = inner
        .get("usage")
        .and_then(|u| u.get("input_tokens"))
        .and_then(Value::as_u64)
        .unwrap_or(0);
    Ok(Decoded {
        answers,
        input_tokens,
    })
}

/// A probability in [0, 1], in hundredths.
fn hundredths(value: &Value) -> Option<u32> {
    let p = value.as_f64()?;
    // `as` saturates; the range check keeps it in 0..=100.
    (p.is_finite() && (0.0..=1.0).contains(&p)).then(|| (p * 100.0).round() as u32)
}

fn probability(h: u32) -> f64 {
    f64::from(h) / 100.0
}

fn answer(q: &Question, a: &Value) -> Option<Answer> {
    let expected = match q.kind {
        Kind::Choice { .. } => "choice",
        Kind::Noul { .. } => "noul",
        Kind::Score { .. } => "score",
    };
    if a.get("type")?.as_str() != Some(expected) {
        return None;
    }
    match &q.kind {
        Kind::Noul { .. } => Some(Answer::Noul {
            p: probability(hundredths(a.get("noul")?)?),
        }),
        Kind::Choice { options } => {
            let probs = a.get("probabilities")?.as_object()?;
            if !probs.values().all(Value::is_number) {
                return None;
            }
            let hs = options
                .iter()
                .map(|(name, _)| probs.get(name).map_or(Some(0), hundredths))
                .collect::<Option<Vec<u32>>>()?;
            let named = a.get("choice")?.as_str()?;
            let prefer = options.iter().position(|(name, _)| name == named);
            let (best, margin) = top_two(&hs, prefer)?;
            Some(Answer::Choice {
                option: options[best].0.clone(),
                p: probability(hs[best]),
                margin: probability(margin),
            })
        }
        Kind::Score { levels } => {
            let hs = level_probabilities(a.get("probabilities")?, levels)?;
            let score = a.get("score")?.as_f64()?;
            let (best, margin) = top_two(&hs, None)?;
            let total: u32 = hs.iter().sum();
            let n = levels.len() as f64;
            let mean0 = match score {
                s if s.is_finite() && (0.0..=n - 1.0).contains(&s) => s,
                _ => {
                    hs.iter()
                        .enumerate()
                        .map(|(k, &h)| k as f64 * f64::from(h))
                        .sum::<f64>()
                        / f64::from(total)
                }
            };
            let mean = ((mean0 * 100.0).round() + 100.0) / 100.0;
            Some(Answer::Score {
                level: u32::try_from(best + 1).ok()?,
                p: probability(hs[best]),
                margin: probability(margin),
                mean,
            })
        }
    }
}

/// The probability of each level from `{"0": p, …}` (Jev's form: keys are
/// the 0-based levels). A missing level counts 0; an integer key outside the
/// levels is ignored (its value must still be a number); any other key, an
/// array or a non-number is no answer.
fn level_probabilities(probs: &Value, levels: &[String]) -> Option<Vec<u32>> {
    let mut hs = vec![0u32; levels.len()];
    for (key, value) in probs.as_object()? {
        let level = key.parse::<i64>().ok()?;
        match usize::try_from(level).ok().filter(|&k| k < levels.len()) {
            Some(k) => hs[k] = hundredths(value)?,
            None if value.is_number() => {}
            None => return None,
        }
    }
    Some(hs)
}

/// The index of the highest value and its lead over the next one. Ties go
/// to `prefer` when it is among them, else to the first. None when all are 0.
fn top_two(hs: &[u32], prefer: Option<usize>) -> Option<(usize, u32)> {
    let max = *hs.iter().max()?;
    if max == 0 {
        return None;
    }
    let best = prefer
        .filter(|&i| hs.get(i) == Some(&max))
        .or_else(|| hs.iter().position(|&h| h == max))?;
    let second = hs
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != best)
        .map(|(_, &h)| h)
        .max()
        .unwrap_or(0);
    Some((best, max - second))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn questions() -> Vec<Question> {
        vec![
            Question {
                name: "risky".into(),
                ask: "`message` は取り消せない操作を依頼していますか。".into(),
                kind: Kind::Noul {
                    true_if: "T".into(),
                    false_if: "F".into(),
                },
            },
            Question {
                name: "kind".into(),
                ask: "kind?".into(),
                kind: Kind::Choice {
                    options: vec![
                        ("research".into(), "外部情報の調査・比較".into()),
                        ("implement".into(), "コードの変更・実装".into()),
                        ("other".into(), "other".into()),
                    ],
                },
            },
            Question {
                name: "size".into(),
                ask: "size?".into(),
                kind: Kind::Score {
                    levels: vec!["one".into(), "few".into(), "many".into()],
                },
            },
        ]
    }

    #[test]
    fn the_request_has_the_wire_shape_in_the_files_order() {
        let body = encode_request(Some("jev-1.13.0"), "delete \"prod\"\n", &questions());
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["model"], "jev-1.13.0");
        assert_eq!(
            v["state"],
            serde_json::json!({"message": "delete \"prod\"\n"})
        );
        assert_eq!(v["questions"]["risky"]["type"], "noul");
        assert_eq!(
            v["questions"]["risky"]["criteria"],
            serde_json::json!({"true": "T", "false": "F"})
        );
        assert_eq!(v["questions"]["kind"]["type"], "choice");
        assert_eq!(
            v["questions"]["kind"]["criteria"]["implement"],
            "コードの変更・実装"
        );
        assert_eq!(v["questions"]["size"]["type"], "score");
        assert_eq!(
            v["questions"]["size"]["criteria"],
            serde_json::json!(["one", "few", "many"])
        );
        assert_eq!(v["questions"]["kind"]["instructions"], "kind?");
        let (r, k, s) = (
            body.find("\"risky\"").unwrap(),
            body.find("\"kind\"").unwrap(),
            body.find("\"size\"").unwrap(),
        );
        assert!(r < k && k < s, "questions keep the file's order");
        assert!(body.find("\"research\"").unwrap() < body.find("\"implement\"").unwrap());
        assert!(
            encode_request(None, "m", &questions()).starts_with("{\"state\":"),
            "no model on Cloudflare"
        );
    }

    const SEED: &str = r#"{"answers":{
        "risky":{"type":"noul","noul":0.03},
        "kind":{"type":"choice","choice":"research","probabilities":{"research":0.99,"implement":0.01,"other":0.0},"confidence":0.97},
        "size":{"type":"score","score":1.89,"probabilities":{"0":0.02,"1":0.07,"2":0.91},"legend":{"0":"one"},"confidence":0.8}},
        "usage":{"input_tokens":534,"output_tokens":87}}"#;

    #[test]
    fn answers_decode_into_value_p_margin_and_mean() {
        let d = decode_response(SEED, &questions()).unwrap();
        assert_eq!(d.input_tokens, 534);
        assert_eq!(d.answers[0], Answer::Noul { p: 0.03 });
        assert_eq!(
            d.answers[1],
            Answer::Choice {
                option: "research".into(),
                p: 0.99,
                margin: 0.98
            }
        );
        assert_eq!(
            d.answers[2],
            Answer::Score {
                level: 3,
                p: 0.91,
                margin: 0.84,
                mean: 2.89
            }
        );
        let wrapped = format!(r#"{{"success":true,"result":{SEED},"errors":[],"messages":[]}}"#);
        assert_eq!(decode_response(&wrapped, &questions()).unwrap(), d);
    }

    #[test]
    fn probabilities_are_rounded_to_hundredths() {
        let body = r#"{"answers":{"risky":{"type":"noul","noul":0.6999999},
            "kind":{"type":"choice","choice":"research","probabilities":{"research":0.554,"implement":0.446}},
            "size":{"type":"score","score":-1,"probabilities":{"0":0.333,"1":0.333,"2":0.334}}}}"#;
        let d = decode_response(body, &questions()).unwrap();
        assert_eq!(d.answers[0], Answer::Noul { p: 0.7 });
        assert_eq!(
            d.answers[1],
            Answer::Choice {
                option: "research".into(),
                p: 0.55,
                margin: 0.1
            }
        );
        // Ties (0.33 × 3 once rounded) go to the lower level; the mean, with a
        // `score` outside the levels, is computed from the rounded probabilities.
        assert_eq!(
            d.answers[2],
            Answer::Score {
                level: 1,
                p: 0.33,
                margin: 0.0,
                mean: 2.0
            }
        );
    }

    #[test]
    fn a_choice_tie_goes_to_the_named_option() {
        let body = r#"{"answers":{"risky":{"type":"noul","noul":0},
            "kind":{"type":"choice","choice":"implement","probabilities":{"research":0.5,"implement":0.5}},
            "size":{"type":"score","score":1,"probabilities":{"1":1.0}}}}"#;
        let d = decode_response(body, &questions()).unwrap();
        assert_eq!(
            d.answers[1],
            Answer::Choice {
                option: "implement".into(),
                p: 0.5,
                margin: 0.0
            }
        );
        assert_eq!(
            d.answers[2],
            Answer::Score {
                level: 2,
                p: 1.0,
                margin: 1.0,
                mean: 2.0
            },
            "a missing level counts 0"
        );
    }

    #[test]
    fn integer_levels_outside_the_question_are_ignored() {
        let body = r#"{"answers":{"risky":{"type":"noul","noul":0},
            "kind":{"type":"choice","choice":"other","probabilities":{"research":0.2,"implement":0.1,"other":0.7}},
            "size":{"type":"score","score":2,"probabilities":{"+2":0.9,"-1":0.05,"7":3,"0":0.05}}}}"#;
        let d = decode_response(body, &questions()).unwrap();
        assert_eq!(
            d.answers[2],
            Answer::Score {
                level: 3,
                p: 0.9,
                margin: 0.85,
                mean: 3.0
            }
        );
    }

    #[test]
    fn an_answer_the_vendors_schema_refuses_is_no_answer() {
        let risky = r#""risky":{"type":"noul","noul":0.5}"#;
        let kind = r#""kind":{"type":"choice","choice":"research","probabilities":{"research":1}}"#;
        let size = r#""size":{"type":"score","score":2,"probabilities":{"2":1}}"#;
        let body = |r: &str, k: &str, s: &str| format!(r#"{{"answers":{{{r},{k},{s}}}}}"#);
        assert!(decode_response(&body(risky, kind, size), &questions()).is_ok());
        let mut cases = vec![r#"{"answers":{"kind":{},"size":{}}}"#.to_string()];
        for r in [
            r#""risky":{"type":"noul","noul":1.5}"#,
            r#""risky":{"type":"choice","noul":0.5}"#,
            r#""risky":{"noul":0.5}"#,
            r#""risky":{"type":null,"noul":0.5}"#,
        ] {
            cases.push(body(r, kind, size));
        }
        for k in [
            r#""kind":{"type":"choice","choice":"research"}"#,
            r#""kind":{"type":"choice","choice":"research","probabilities":{"research":"0.9"}}"#,
            r#""kind":{"type":"choice","choice":"nothing","probabilities":{"nothing":1}}"#,
            r#""kind":{"type":"choice","probabilities":{"research":1}}"#,
            r#""kind":{"type":"choice","choice":3,"probabilities":{"research":1}}"#,
            r#""kind":{"type":"choice","choice":"research","probabilities":{"research":1,"x":"y"}}"#,
            r#""kind":{"type":"choice","choice":"research","probabilities":[1,0,0]}"#,
            r#""kind":{"choice":"research","probabilities":{"research":1}}"#,
        ] {
            cases.push(body(risky, k, size));
        }
        for s in [
            r#""size":{"type":"score","score":2,"probabilities":[0,0,1]}"#,
            r#""size":{"type":"score","score":2,"probabilities":{"many":1}}"#,
            r#""size":{"type":"score","score":2,"probabilities":{"2.0":1}}"#,
            r#""size":{"type":"score","score":2,"probabilities":{"2":1,"7":"x"}}"#,
            r#""size":{"type":"score","score":2,"probabilities":{"0":0,"1":0}}"#,
            r#""size":{"type":"score","probabilities":{"2":1}}"#,
            r#""size":{"type":"score","score":"2","probabilities":{"2":1}}"#,
            r#""size":{"score":2,"probabilities":{"2":1}}"#,
        ] {
            cases.push(body(risky, kind, s));
        }
        for body in cases {
            assert_eq!(
                decode_response(&body, &questions()),
                Err(DecodeError::NoAnswer),
                "{body}"
            );
        }
    }

    #[test]
    fn an_unreadable_body_is_undecodable() {
        for body in [
            "<html>",
            r#"{"success":false,"errors":[{"code":7000}],"result":null}"#,
            r#"{"model":"jev"}"#,
            "[]",
        ] {
            assert_eq!(
                decode_response(body, &questions()),
                Err(DecodeError::Undecodable),
                "{body}"
            );
        }
    }
}
