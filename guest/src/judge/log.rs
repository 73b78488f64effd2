//! The `judge:` log line: the answers, the rule, the verdict. Names from the
//! rules file and numbers only, never the message.
//!
//! ```text
//! judge: kind=research/0.99/0.98 rule=5 routed to=agent_3
//! judge: risky=0.03 kind=research/0.99/0.98 size=3/0.91/0.84 size.mean=2.89 rule=otherwise returned
//! judge: rule=- failed reason=http-5xx
//! ```
//!
//! A choice or score answer is `value/p/margin`: the chosen option (or
//! level, 1-based), its probability, and its lead over the second; a score
//! adds `NAME.mean=` (the expected level, 1-based); a noul answer is its
//! probability. Probabilities have two decimals, as Jev answers them.

use super::expr::Answer;
use crate::number::fixed;
use super::Verdict;

/// One answer as `name=…` (`kind=research/0.99/0.98`).
pub fn answer(name: &str, answer: &Answer) -> String {
    match answer {
        Answer::Choice { option, p, margin } => format!("{name}={option}/{}/{}", fixed(*p, 2), fixed(*margin, 2)),
        Answer::Noul { p } => format!("{name}={}", fixed(*p, 2)),
        Answer::Score {
            level,
            p,
            margin,
            mean,
        } => format!("{name}={level}/{}/{} {name}.mean={}", fixed(*p, 2), fixed(*margin, 2), fixed(*mean, 2)),
    }
}

/// The whole line. `rule` is 1-based, none for `[otherwise]`.
pub fn line(answers: &[(&str, &Answer)], rule: Option<u32>, verdict: &Verdict) -> String {
    let mut out = String::from("judge:");
    if let Verdict::Failed(reason) = verdict {
        out.push_str(" rule=- failed reason=");
        out.push_str(reason);
        return out;
    }
    for (name, a) in answers {
        out.push(' ');
        out.push_str(&answer(name, a));
    }
    match rule {
        Some(n) => out.push_str(&format!(" rule={n}")),
        None => out.push_str(" rule=otherwise"),
    }
    match verdict {
        Verdict::Routed(to) => {
            out.push_str(" routed to=");
            out.push_str(&super::expr::join(to, ","));
        }
        Verdict::Returned(_) => out.push_str(" returned"),
        Verdict::Failed(_) => {}
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_seeds_line() {
        let kind = Answer::Choice {
            option: "research".into(),
            p: 0.99,
            margin: 0.98,
        };
        let line = line(
            &[("kind", &kind)],
            Some(5),
            &Verdict::Routed(vec!["agent_3".into()]),
        );
        assert_eq!(
            line,
            "judge: kind=research/0.99/0.98 rule=5 routed to=agent_3"
        );
    }

    #[test]
    fn every_kind_of_answer_and_verdict() {
        let risky = Answer::Noul { p: 0.03 };
        let size = Answer::Score {
            level: 3,
            p: 0.91,
            margin: 0.84,
            mean: 2.89,
        };
        let answers = [("risky", &risky), ("size", &size)];
        assert_eq!(
            line(&answers, None, &Verdict::Returned(Some("note".into()))),
            "judge: risky=0.03 size=3/0.91/0.84 size.mean=2.89 rule=otherwise returned"
        );
        assert_eq!(
            line(
                &answers,
                Some(2),
                &Verdict::Routed(vec!["a".into(), "b".into()])
            ),
            "judge: risky=0.03 size=3/0.91/0.84 size.mean=2.89 rule=2 routed to=a,b"
        );
        assert_eq!(
            line(&[], None, &Verdict::Failed("http-5xx")),
            "judge: rule=- failed reason=http-5xx"
        );
    }
}
