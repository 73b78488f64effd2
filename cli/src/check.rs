//! `toolprune jev check`: one two-paragraph request through the normal path
//! (a conversation, the guest encoding the body and decoding the answer),
//! then what happened, or a diagnosis.
//!
//! The report names the endpoint the guest resolved (route, URL, the model
//! requested on native routes), every HTTP attempt (status, latency), what
//! the guest decoded (calls, jev_tokens, scores) and the model the service
//! said it ran (`pruned.served-model`).

use std::sync::{Arc, Mutex};

use toolprune::types::{wit_name, Outcome};
use toolprune::{Attempt, CancelToken, CapturedLog, ConversationOptions, JevScorer, Pruner, Scoring, ToolResult};

/// The request of the check.
const REQUEST: &str =
    "When does the first Harbour Street ferry leave on Sundays, and how much is a return ticket?";

/// Two paragraphs: one answers [`REQUEST`], one does not. Each is long enough
/// (repeated sentences) for the whole text to pass the 4,000-character gate
/// and short enough to share one batch.
fn text() -> String {
    let ferry = [
        "On Sundays the first Harbour Street ferry leaves the north pier at 07:40 and then every forty minutes until 21:00.",
        "A return ticket costs 6.80 for adults and 3.40 for children; it is valid on the day of issue only.",
        "Tickets are sold at the pier kiosk and on board, and the Sunday timetable also applies on public holidays.",
    ]
    .join(" ");
    let bakery = [
        "The old bakery on Mill Lane was built in 1891 from red brick fired in the valley kilns.",
        "Its oven, restored by volunteers, is lit twice a year for the village fair and the winter market.",
        "The building now houses a small museum of farming tools and a collection of hand-painted signs.",
    ]
    .join(" ");
    let paragraph = |s: &str| [s; 7].join(" ");
    format!("{}\n\n{}\n", paragraph(&ferry), paragraph(&bakery))
}

/// What a check found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Diagnosis {
    /// Jev answered and the guest decoded the answer.
    Ok,
    /// The configuration cannot send (no token, no account id, bad URL):
    /// the guest's (or the token check's) message.
    Config(String),
    /// 401 or 403: the token was refused.
    Unauthorized(u16),
    /// 402: out of credit.
    OutOfCredit,
    /// 404: wrong route, account id or base URL.
    NotFound,
    /// 429 (after the retry).
    RateLimited,
    /// 5xx (after the retry).
    ServerError(u16),
    /// Any other non-2xx status.
    Http(u16),
    /// No HTTP status: refused, DNS, TLS, reset, timed out.
    Unreachable(String),
    /// A 2xx answer the guest could not decode as Jev.
    Undecodable,
    /// No answer within the deadline.
    Timeout,
    /// Cancelled (Ctrl-C).
    Cancelled,
    /// The component failed (trap, limit).
    Guest(String),
}

/// The result of [`check`]. [`render`](Self::render) gives the CLI's text.
#[derive(Clone, Debug)]
pub struct CheckReport {
    /// `cloudflare`, `typesafe` or `vercel`, when the configuration resolved.
    pub route: Option<String>,
    /// The URL, when the configuration was complete. Carries no secret.
    pub url: Option<String>,
    /// The model named in the body (native routes), none on Cloudflare.
    pub model: Option<String>,
    /// Every HTTP attempt (statuses, latencies).
    pub attempts: Vec<Attempt>,
    /// The guest's outcome, when it ran.
    pub outcome: Option<Outcome>,
    /// Calls that answered and tokens, as the guest decoded them.
    pub calls: u32,
    pub jev_tokens: u64,
    /// The two paragraphs' scores (none = not scored).
    pub scores: Vec<Option<f64>>,
    /// The model the answer named (`pruned.served-model`), if any.
    pub served_model: Option<String>,
    pub diagnosis: Diagnosis,
}

impl CheckReport {
    /// Jev answered and the answer decoded.
    pub fn is_ok(&self) -> bool {
        self.diagnosis == Diagnosis::Ok
    }

    /// The last HTTP status, if any.
    pub fn status(&self) -> Option<u16> {
        self.attempts.last().and_then(|a| a.status)
    }

    /// The CLI's text: a few lines, no secret, no body.
    pub fn render(&self) -> String {
        let mut out = format!("jev check: route={}", self.route.as_deref().unwrap_or("-"));
        if let Some(url) = &self.url {
            out.push_str(&format!(" url={url}"));
        }
        match &self.model {
            Some(model) => out.push_str(&format!(" model={model} (requested)")),
            None if self.url.is_some() => out.push_str(" model=(named by the URL)"),
            None => {}
        }
        out.push('\n');
        for (i, a) in self.attempts.iter().enumerate() {
            let what = match (a.status, &a.error) {
                (Some(status), _) => format!("HTTP {status}"),
                (None, Some(error)) => error.clone(),
                (None, None) => "no answer".to_string(),
            };
            out.push_str(&format!("attempt {}: {what} in {} ms\n", i + 1, a.ms));
        }
        if let Some(outcome) = &self.outcome {
            let scores: Vec<String> = self
                .scores
                .iter()
                .enumerate()
                .map(|(i, s)| match s {
                    Some(s) => format!("p{i}={s:.2}"),
                    None => format!("p{i}=none"),
                })
                .collect();
            out.push_str(&format!(
                "guest: outcome={} calls={} jev_tokens={} scores {}\n",
                wit_name(outcome),
                self.calls,
                self.jev_tokens,
                scores.join(" ")
            ));
            match &self.served_model {
                Some(model) => out.push_str(&format!("served model: {model}\n")),
                None if self.calls > 0 => out.push_str("served model: the answer named none\n"),
                None => {}
            }
        }
        out.push_str(&self.diagnosis_line());
        out.push('\n');
        out
    }

    fn diagnosis_line(&self) -> String {
        match &self.diagnosis {
            Diagnosis::Ok => format!(
                "ok: Jev answered (HTTP {}, {} ms) and the answer decoded",
                self.status().unwrap_or(200),
                self.attempts.last().map_or(0, |a| a.ms)
            ),
            Diagnosis::Config(problem) => format!("not configured: {problem}"),
            Diagnosis::Unauthorized(status) => format!(
                "HTTP {status}: the token was refused; check the token variable (Cloudflare: an API token with Workers AI permission on this account)"
            ),
            Diagnosis::OutOfCredit => {
                "HTTP 402: out of credit; add credit to the account (never retried)".to_string()
            }
            Diagnosis::NotFound => "HTTP 404: no such endpoint; check the route, the account id and the base URL".to_string(),
            Diagnosis::RateLimited => "HTTP 429: rate limited, also after one retry; try again later".to_string(),
            Diagnosis::ServerError(status) => format!("HTTP {status}: server error, also after one retry; try again later"),
            Diagnosis::Http(status) => format!("HTTP {status}: the request was refused"),
            Diagnosis::Unreachable(why) => format!("unreachable: {why}; check the network, a proxy (HTTPS_PROXY) or the base URL"),
            Diagnosis::Undecodable => "the endpoint answered 2xx, but not with a Jev answer the guest can decode; is the base URL a Jev endpoint?".to_string(),
            Diagnosis::Timeout => "timeout: no answer within the deadline".to_string(),
            Diagnosis::Cancelled => "cancelled".to_string(),
            Diagnosis::Guest(why) => format!("the component failed: {why}"),
        }
    }
}

/// Sends one two-paragraph request with this process's Jev configuration
/// (`env`: the environment) through a conversation and says what happened.
/// `cancel` stops it (Ctrl-C). Never panics.
pub fn check(pruner: &Pruner, env: &dyn Fn(&str) -> Option<String>, cancel: CancelToken) -> CheckReport {
    let mut report = CheckReport {
        route: None,
        url: None,
        model: None,
        attempts: Vec::new(),
        outcome: None,
        calls: 0,
        jev_tokens: 0,
        scores: Vec::new(),
        served_model: None,
        diagnosis: Diagnosis::Ok,
    };
    if let Ok(config) = pruner.configuration(env) {
        if let Ok(endpoint) = &config.jev {
            report.route = Some(endpoint.route.clone());
            report.url = Some(endpoint.url.clone());
            report.model = endpoint.model.clone();
        }
    }
    let (jev, model) = match JevScorer::from_env(pruner, env) {
        Ok(found) => found,
        Err(problem) => {
            report.diagnosis = Diagnosis::Config(problem);
            return report;
        }
    };
    let trace = Arc::new(Mutex::new(Vec::new()));
    let conversation = pruner.conversation(ConversationOptions {
        enabled: true,
        agent: "jev-check".to_string(),
        scoring: Some(Scoring::host(jev.with_trace(trace.clone()))),
        jev_model: model,
        log: Arc::new(CapturedLog::new()),
        ..ConversationOptions::default()
    });
    let conversation = match conversation {
        Ok(conversation) => conversation,
        Err(e) => {
            report.diagnosis = Diagnosis::Guest(e.to_string());
            return report;
        }
    };
    let turn = conversation.turn_with_cancel(REQUEST, cancel);
    let pruned = turn.on_tool_result(ToolResult { report: true, ..ToolResult::prunable("jev-check", text()) });
    report.attempts = trace.lock().unwrap_or_else(|e| e.into_inner()).clone();
    if let Some(failure) = &pruned.failure {
        report.diagnosis = Diagnosis::Guest(failure.to_string());
        return report;
    }
    report.outcome = Some(pruned.outcome);
    if let Some(counts) = &pruned.counts {
        report.calls = counts.calls;
        report.jev_tokens = counts.jev_tokens;
    }
    report.scores = pruned.paragraphs.iter().map(|p| p.score).collect();
    report.served_model = pruned.served_model.clone();
    let last = report.attempts.last();
    report.diagnosis = match (pruned.outcome, last) {
        (Outcome::Cancelled, _) => Diagnosis::Cancelled,
        (Outcome::Timeout, _) => Diagnosis::Timeout,
        (outcome, None) => Diagnosis::Guest(format!("no request was made (outcome {})", wit_name(&outcome))),
        (_, Some(Attempt { status: None, error, .. })) => {
            Diagnosis::Unreachable(error.clone().unwrap_or_else(|| "no answer".to_string()))
        }
        (_, Some(Attempt { status: Some(status), .. })) => match *status {
            200..=299 if report.calls >= 1 => Diagnosis::Ok,
            200..=299 => Diagnosis::Undecodable,
            401 | 403 => Diagnosis::Unauthorized(*status),
            402 => Diagnosis::OutOfCredit,
            404 => Diagnosis::NotFound,
            429 => Diagnosis::RateLimited,
            500..=599 => Diagnosis::ServerError(*status),
            other => Diagnosis::Http(other),
        },
    };
    report
}
