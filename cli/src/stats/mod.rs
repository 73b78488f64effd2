//! `toolprune stats`: what toolprune saved, from the counts-only log every
//! door writes (crate::logfile; SPEC §12). No text is read or stored for it.
//!
//! Per local day, agent and tool ([`Figures`]): results seen, attempted
//! and pruned, by outcome; characters removed and tokens removed (an
//! estimate: [`CHARS_PER_TOKEN`]); `omitted` calls and the share of the
//! removed characters the model read back; the scorer's time. A terminal
//! table ([`table`]), the stable JSON (`--json`, docs/stats.md) and a
//! self-contained HTML page (`--html FILE`, [`html`]) show one [`Report`].
//!
//! - **seen**: every `tool prune:` line, i.e. each result of a prunable
//!   tool past the cheap gates (SPEC §2: at least 4,000 characters;
//!   shorter results and other tools write no line), and each result the
//!   repeat gate let through (`skipped`, gate `repeated`).
//! - **attempted**: seen, less `skipped`, `structured` and `no_basis`
//!   (the gates that write a line): results the scorer was asked about.
//! - **pruned**: outcome `ok` with fewer characters kept than returned.
//! - **removed**: `raw_chars − kept_chars` of the pruned results, markers
//!   included: what the model did not read.
//! - **read back**: the characters `omitted` returned (outcome `ok`), each
//!   distinct call (session, id, range) once, counted on the row of the
//!   result it read from (the writer's `session=` and `id=`); a call whose
//!   result is not in the log (older lines, rotated away) is counted on
//!   the tool `-` of its own day.

pub mod html;
pub mod line;
pub mod table;
pub mod time;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;

use clap::Args;
use serde::Serialize;

use crate::store::Root;
use line::{Entry, Kind};

/// Characters per token of the estimate of tokens removed: the log holds
/// counts, never text, so no tokenizer can run on it. 4 is what the
/// corpus's prose pages measure with o200k_base (4.01 over ten pages);
/// a Japanese page or a log measures about 2, so the estimate is low for
/// them (docs/stats.md "Tokens").
pub const CHARS_PER_TOKEN: f64 = 4.0;

/// The version of the JSON's shape (docs/stats.md): keys are added, never
/// renamed or removed, without a new version.
pub const SCHEMA: u32 = 1;

/// `toolprune stats` arguments.
#[derive(Args, Debug, Default)]
pub struct StatsArgs {
    /// Only results since a local date (2026-05-01), `today`, or a duration
    /// back from now (90m, 24h, 7d, 2w).
    #[arg(long, value_name = "DATE|DURATION")]
    pub since: Option<String>,
    /// Only this agent (`claude-code`, `gemini`, `cursor`, `cli`, …);
    /// `mcp-proxy` also takes every `mcp-proxy:NAME`.
    #[arg(long, value_name = "AGENT")]
    pub agent: Option<String>,
    /// Only this tool, as the log names it (`mcp__docs__fetch`).
    #[arg(long, value_name = "TOOL")]
    pub tool: Option<String>,
    /// Print the report as JSON (docs/stats.md) instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as one self-contained HTML page to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

/// What the figures of one group add up.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    /// Results with a `tool prune:` line.
    pub seen: u64,
    /// Results the scorer was asked about.
    pub attempted: u64,
    /// Results pruned (`ok`, fewer characters kept).
    pub pruned: u64,
    /// Lines per outcome, as the log names them (absent: none).
    pub outcomes: BTreeMap<String, u64>,
    /// `skipped` lines per gate (`repeated`).
    pub skipped: BTreeMap<String, u64>,
    pub chars: Chars,
    /// `round(chars.removed / CHARS_PER_TOKEN)`: an estimate.
    pub tokens_removed: u64,
    pub omitted: OmittedFigures,
    /// `omitted.chars_read_back / chars.removed`; none when nothing was removed.
    pub read_back_share: Option<f64>,
    pub scorer: ScorerFigures,
}

/// Characters (Unicode scalar values, as the guest counts them).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Chars {
    /// Of the results seen (where the line has them).
    pub seen: u64,
    /// Of the results pruned, as returned by the tool.
    pub pruned: u64,
    /// Removed from them (markers counted): what the model did not read.
    pub removed: u64,
}

/// `omitted` calls counted on a group.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct OmittedFigures {
    /// Every `tool omitted:` line.
    pub calls: u64,
    /// Calls per outcome.
    pub outcomes: BTreeMap<String, u64>,
    /// Characters returned by distinct `ok` calls.
    pub chars_read_back: u64,
}

/// The scorer (SPEC §5, §12).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ScorerFigures {
    /// Results whose scorer time was measured (`ms=` a number: a host
    /// scorer such as Jev answered; the offline scorer's is not measured).
    pub measured: u64,
    /// Their scorer time, milliseconds.
    pub ms: u64,
    /// Scorer calls (batches) that succeeded.
    pub calls: u64,
    /// Jev's billed tokens.
    pub jev_tokens: u64,
}

/// One row: a local day, an agent, a tool.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    pub day: String,
    pub agent: String,
    pub tool: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// A group of rows by one key (`by_day`, `by_agent`, `by_tool`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Group {
    pub key: String,
    #[serde(flatten)]
    pub figures: Figures,
}

/// How the log was read.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LogFigures {
    /// The store root read.
    pub store: Option<String>,
    /// Files read.
    pub files: u64,
    /// Complete lines read.
    pub lines: u64,
    /// `tool prune:` and `tool omitted:` lines read.
    pub used: u64,
    /// Well-formed lines of other kinds (`hook:`, `mcp:`, `judge:`).
    pub other: u64,
    /// Corrupt or truncated lines, skipped.
    pub skipped: u64,
    /// Files refused (a link, another user's), with why.
    pub refused: Vec<String>,
}

/// How tokens were counted.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TokenMethod {
    /// Always true: the log has counts, not text (docs/stats.md "Tokens").
    pub estimate: bool,
    pub chars_per_token: f64,
}

/// The filters applied.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Filters {
    /// Unix seconds (inclusive); none: everything in the log.
    pub since: Option<u64>,
    pub agent: Option<String>,
    pub tool: Option<String>,
}

/// Everything `toolprune stats` shows (the JSON, field for field).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub schema: u32,
    pub filters: Filters,
    pub tokens: TokenMethod,
    pub log: LogFigures,
    pub total: Figures,
    /// By day, then agent, then tool.
    pub rows: Vec<Row>,
    pub by_day: Vec<Group>,
    pub by_agent: Vec<Group>,
    pub by_tool: Vec<Group>,
}

fn tokens(chars: u64) -> u64 {
    (chars as f64 / CHARS_PER_TOKEN).round() as u64
}

impl Figures {
    fn add_prune(&mut self, p: &line::Prune) {
        self.seen = self.seen.saturating_add(1);
        *self.outcomes.entry(p.outcome.clone()).or_default() += 1;
        if p.outcome == "skipped" {
            *self.skipped.entry(p.gate.clone().unwrap_or_else(|| "-".into())).or_default() += 1;
        }
        if !matches!(p.outcome.as_str(), "skipped" | "structured" | "no_basis") {
            self.attempted = self.attempted.saturating_add(1);
        }
        self.chars.seen = self.chars.seen.saturating_add(p.raw_chars.unwrap_or(0));
        if let (Some(raw), Some(kept)) = (p.raw_chars, p.kept_chars) {
            if p.outcome == "ok" && kept < raw {
                self.pruned = self.pruned.saturating_add(1);
                self.chars.pruned = self.chars.pruned.saturating_add(raw);
                self.chars.removed = self.chars.removed.saturating_add(raw - kept);
            }
        }
        if let Some(ms) = p.ms {
            self.scorer.measured = self.scorer.measured.saturating_add(1);
            self.scorer.ms = self.scorer.ms.saturating_add(ms);
        }
        self.scorer.calls = self.scorer.calls.saturating_add(p.calls.unwrap_or(0));
        self.scorer.jev_tokens = self.scorer.jev_tokens.saturating_add(p.jev_tokens.unwrap_or(0));
    }

    fn add_omitted(&mut self, o: &line::Omitted, distinct: bool) {
        self.omitted.calls = self.omitted.calls.saturating_add(1);
        *self.omitted.outcomes.entry(o.outcome.clone()).or_default() += 1;
        if o.outcome == "ok" && distinct {
            self.omitted.chars_read_back = self.omitted.chars_read_back.saturating_add(o.chars);
        }
    }

    fn add(&mut self, other: &Figures) {
        self.seen = self.seen.saturating_add(other.seen);
        self.attempted = self.attempted.saturating_add(other.attempted);
        self.pruned = self.pruned.saturating_add(other.pruned);
        for (k, v) in &other.outcomes {
            *self.outcomes.entry(k.clone()).or_default() += v;
        }
        for (k, v) in &other.skipped {
            *self.skipped.entry(k.clone()).or_default() += v;
        }
        self.chars.seen = self.chars.seen.saturating_add(other.chars.seen);
        self.chars.pruned = self.chars.pruned.saturating_add(other.chars.pruned);
        self.chars.removed = self.chars.removed.saturating_add(other.chars.removed);
        self.omitted.calls = self.omitted.calls.saturating_add(other.omitted.calls);
        for (k, v) in &other.omitted.outcomes {
            *self.omitted.outcomes.entry(k.clone()).or_default() += v;
        }
        self.omitted.chars_read_back = self.omitted.chars_read_back.saturating_add(other.omitted.chars_read_back);
        self.scorer.measured = self.scorer.measured.saturating_add(other.scorer.measured);
        self.scorer.ms = self.scorer.ms.saturating_add(other.scorer.ms);
        self.scorer.calls = self.scorer.calls.saturating_add(other.scorer.calls);
        self.scorer.jev_tokens = self.scorer.jev_tokens.saturating_add(other.scorer.jev_tokens);
    }

    /// The derived figures (tokens, share) from the counted ones.
    fn finish(mut self) -> Self {
        self.tokens_removed = tokens(self.chars.removed);
        self.read_back_share = (self.chars.removed > 0).then(|| self.omitted.chars_read_back as f64 / self.chars.removed as f64);
        self
    }
}

impl Filters {
    fn keeps(&self, at: u64, agent: &str, tool: &str) -> bool {
        self.since.is_none_or(|s| at >= s)
            && self.agent.as_deref().is_none_or(|a| agent == a || agent.strip_prefix(a).is_some_and(|r| r.starts_with(':')))
            && self.tool.as_deref().is_none_or(|t| tool == t)
    }
}

type Key = (String, String, String);

/// One `omitted` call as read once: agent, session, id, from, to.
type Call = (String, String, String, Option<u64>, Option<u64>);

/// The report of `lines` (the log's complete lines, oldest first; `broken`
/// lines the reader could not take) under `filters`; `day` names the
/// calendar day of a unix time ([`time::day`]: local).
pub fn report(lines: &[String], broken: u64, filters: Filters, day: &dyn Fn(u64) -> String) -> Report {
    let mut log = LogFigures { lines: lines.len() as u64, skipped: broken, ..LogFigures::default() };
    let mut entries: Vec<Entry> = Vec::with_capacity(lines.len());
    for text in lines {
        match line::parse(text) {
            Ok(e) if matches!(e.kind, Kind::Other) => log.other += 1,
            Ok(e) => {
                log.used += 1;
                entries.push(e);
            }
            Err(_) => log.skipped += 1,
        }
    }
    // Where each stored result was pruned: (agent, session, id) → its row and time.
    let mut results: HashMap<(String, String, String), (Key, u64)> = HashMap::new();
    for e in &entries {
        if let (Kind::Prune(p), Some(id)) = (&e.kind, &e.id) {
            let session = e.session.clone().unwrap_or_default();
            results.insert((p.agent.clone(), session, id.clone()), ((day(e.at), p.agent.clone(), p.tool.clone()), e.at));
        }
    }
    let mut rows: BTreeMap<Key, Figures> = BTreeMap::new();
    let mut read: HashSet<Call> = HashSet::new();
    for e in &entries {
        match &e.kind {
            Kind::Prune(p) => {
                if filters.keeps(e.at, &p.agent, &p.tool) {
                    rows.entry((day(e.at), p.agent.clone(), p.tool.clone())).or_default().add_prune(p);
                }
            }
            Kind::Omitted(o) => {
                let session = e.session.clone().unwrap_or_default();
                let of = o.id.as_ref().and_then(|id| results.get(&(o.agent.clone(), session.clone(), id.clone())));
                let (key, at) = match of {
                    Some((key, at)) => (key.clone(), *at),
                    None => ((day(e.at), o.agent.clone(), "-".to_string()), e.at),
                };
                if filters.keeps(at, &key.1, &key.2) {
                    let distinct = read.insert((o.agent.clone(), session, o.id.clone().unwrap_or_default(), o.from, o.to));
                    rows.entry(key).or_default().add_omitted(o, distinct);
                }
            }
            Kind::Other => {}
        }
    }
    let mut total = Figures::default();
    let (mut by_day, mut by_agent, mut by_tool) = (BTreeMap::<String, Figures>::new(), BTreeMap::new(), BTreeMap::new());
    for ((day, agent, tool), f) in &rows {
        total.add(f);
        by_day.entry(day.clone()).or_default().add(f);
        by_agent.entry(agent.clone()).or_insert_with(Figures::default).add(f);
        by_tool.entry(tool.clone()).or_insert_with(Figures::default).add(f);
    }
    let groups = |m: BTreeMap<String, Figures>| m.into_iter().map(|(key, f)| Group { key, figures: f.finish() }).collect();
    Report {
        schema: SCHEMA,
        filters,
        tokens: TokenMethod { estimate: true, chars_per_token: CHARS_PER_TOKEN },
        log,
        total: total.finish(),
        rows: rows.into_iter().map(|((day, agent, tool), f)| Row { day, agent, tool, figures: f.finish() }).collect(),
        by_day: groups(by_day),
        by_agent: groups(by_agent),
        by_tool: groups(by_tool),
    }
}

/// Reads the log of the store root the environment names (without
/// creating it) and makes the report. Errors: the root is not a private
/// directory of this user.
pub fn from_store(env: &dyn Fn(&str) -> Option<String>, filters: Filters) -> Result<Report, String> {
    let dir = Root::default_dir(env).ok_or("no HOME, XDG_RUNTIME_DIR or TOOLPRUNE_STORE_DIR: no store to read")?;
    let root = Root::existing(&dir).map_err(|e| format!("the store: {e}"))?;
    let text = match &root {
        Some(root) => crate::logfile::read(root.path()),
        None => crate::logfile::LogText::default(),
    };
    let mut report = report(&text.lines, text.broken as u64, filters, &time::day);
    report.log.store = Some(dir.display().to_string());
    report.log.files = root.map_or(0, |r| crate::logfile::files(r.path()).len() as u64);
    report.log.refused = text.refused;
    Ok(report)
}

/// `toolprune stats`: the table (or JSON) on stdout, the HTML page to
/// `--html FILE`. Errors: a bad `--since` (usage), the store, the file.
pub fn run(args: &StatsArgs, env: &dyn Fn(&str) -> Option<String>, color: bool) -> Result<String, StatsError> {
    let since = args.since.as_deref().map(|s| time::since(s, time::now())).transpose().map_err(StatsError::Usage)?;
    let filters = Filters { since, agent: args.agent.clone(), tool: args.tool.clone() };
    let report = from_store(env, filters).map_err(StatsError::Failed)?;
    if let Some(path) = &args.html {
        std::fs::write(path, html::render(&report)).map_err(|e| StatsError::Failed(format!("cannot write {}: {e}", path.display())))?;
    }
    if args.json {
        let mut out = serde_json::to_string_pretty(&report).map_err(|e| StatsError::Failed(e.to_string()))?;
        out.push('\n');
        Ok(out)
    } else {
        Ok(table::render(&report, color))
    }
}

/// Why `toolprune stats` stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum StatsError {
    /// Bad arguments (exit 2).
    Usage(String),
    /// The store or a file (exit 1).
    Failed(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: u64 = 1_767_312_000; // 2026-01-02 00:00 UTC

    #[allow(clippy::too_many_arguments)]
    fn ok(at: u64, session: &str, id: &str, agent: &str, tool: &str, raw: u64, kept: u64, ms: &str) -> String {
        format!("{at} session={session} id={id} tool prune: agent={agent} name={tool} outcome=ok shape=text raw_chars={raw} kept_chars={kept} paragraphs=30 dropped=9 calls=3 jev_tokens=100 ms={ms} threshold=0.2 ratio=0.4 scorer=jev")
    }

    fn back(at: u64, session: &str, agent: &str, id: &str, from: u64, to: u64, chars: u64) -> String {
        format!("{at} session={session} tool omitted: agent={agent} id={id} from={from} to={to} chars={chars} outcome=ok")
    }

    fn lines() -> Vec<String> {
        vec![
            ok(DAY + 10, "s1", "P1", "claude-code", "mcp__docs__fetch", 10_000, 6_000, "800"),
            back(DAY + 20, "s1", "claude-code", "P1", 3, 5, 1_000),
            back(DAY + 21, "s1", "claude-code", "P1", 3, 5, 1_000), // the same call again: read once
            format!("{} session=s1 tool omitted: agent=claude-code id=P9 from=0 to=1 chars=0 outcome=not_found", DAY + 22),
            format!("{} tool prune: agent=claude-code name=mcp__docs__fetch outcome=nothing_dropped shape=text raw_chars=5000 kept_chars=5000 paragraphs=3 dropped=0 calls=1 jev_tokens=10 ms=200 threshold=0.2 ratio=- scorer=jev", DAY + 30),
            format!("{} tool prune: agent=claude-code name=mcp__docs__fetch outcome=skipped gate=repeated raw_chars=10000 kept_chars=10000 paragraphs=- dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=jev", DAY + 40),
            format!("{} tool prune: agent=claude-code name=WebFetch outcome=no_basis shape=text raw_chars=4100 kept_chars=4100 paragraphs=5 dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=jev", DAY + 50),
            format!("{} hook: agent=claude-code event=PostToolUse answer=replace ms=30", DAY + 51),
            "garbage".to_string(),
            // The next day, another agent; the same id in another session is another result.
            ok(DAY + 86_400 + 5, "s2", "P1", "gemini", "mcp_docs_fetch", 20_000, 4_000, "-"),
            back(DAY + 86_400 + 9, "s2", "gemini", "P1", 0, 2, 8_000),
            // A read-back of a result the log no longer holds.
            back(DAY + 86_400 + 12, "s3", "gemini", "P4", 0, 2, 500),
        ]
    }

    fn report(lines: &[String], broken: u64, filters: Filters) -> Report {
        super::report(lines, broken, filters, &time::utc_day)
    }

    #[test]
    fn figures_per_day_agent_and_tool_add_up_from_the_lines() {
        let r = report(&lines(), 1, Filters::default());
        assert_eq!((r.log.lines, r.log.used, r.log.other, r.log.skipped), (12, 10, 1, 2));
        let keys: Vec<(&str, &str, &str)> = r.rows.iter().map(|r| (r.day.as_str(), r.agent.as_str(), r.tool.as_str())).collect();
        assert_eq!(
            keys,
            [
                ("2026-01-02", "claude-code", "-"),
                ("2026-01-02", "claude-code", "WebFetch"),
                ("2026-01-02", "claude-code", "mcp__docs__fetch"),
                ("2026-01-03", "gemini", "-"),
                ("2026-01-03", "gemini", "mcp_docs_fetch"),
            ]
        );
        let fetch = &r.rows[2].figures;
        assert_eq!((fetch.seen, fetch.attempted, fetch.pruned), (3, 2, 1));
        assert_eq!(fetch.outcomes, BTreeMap::from([("nothing_dropped".into(), 1), ("ok".into(), 1), ("skipped".into(), 1)]));
        assert_eq!(fetch.skipped, BTreeMap::from([("repeated".into(), 1)]));
        assert_eq!(fetch.chars, Chars { seen: 25_000, pruned: 10_000, removed: 4_000 });
        assert_eq!(fetch.tokens_removed, 1_000);
        assert_eq!(fetch.omitted.calls, 2);
        assert_eq!(fetch.omitted.chars_read_back, 1_000, "the same call twice reads its characters once");
        assert_eq!(fetch.read_back_share, Some(0.25));
        assert_eq!(fetch.scorer, ScorerFigures { measured: 2, ms: 1_000, calls: 4, jev_tokens: 110 });
        assert_eq!(r.rows[1].figures.attempted, 0, "no_basis is a gate");
        assert_eq!(r.rows[1].figures.read_back_share, None);
        let not_found = &r.rows[0].figures;
        assert_eq!((not_found.seen, not_found.omitted.calls, not_found.omitted.outcomes.get("not_found")), (0, 1, Some(&1)));
        let unknown = &r.rows[3].figures;
        assert_eq!((unknown.seen, unknown.omitted.calls, unknown.omitted.chars_read_back), (0, 1, 500));
        let gemini = &r.rows[4].figures;
        assert_eq!((gemini.chars.removed, gemini.omitted.chars_read_back, gemini.scorer.measured), (16_000, 8_000, 0));
        assert_eq!(r.total.chars.removed, 20_000);
        assert_eq!(r.total.tokens_removed, 5_000);
        assert_eq!(r.total.omitted.chars_read_back, 9_500);
        assert_eq!(r.total.pruned, 2);
        assert_eq!(r.by_day.iter().map(|g| (g.key.as_str(), g.figures.tokens_removed)).collect::<Vec<_>>(), [("2026-01-02", 1_000), ("2026-01-03", 4_000)]);
        assert_eq!(r.by_tool.iter().map(|g| g.key.as_str()).collect::<Vec<_>>(), ["-", "WebFetch", "mcp__docs__fetch", "mcp_docs_fetch"]);
    }

    #[test]
    fn filters_keep_a_read_back_with_the_result_it_read_from() {
        let since = Filters { since: Some(DAY + 86_400), ..Filters::default() };
        let r = report(&lines(), 0, since);
        assert!(r.rows.iter().all(|r| r.day == "2026-01-03"));
        assert_eq!(r.total.omitted.calls, 2);
        let r = report(&lines(), 0, Filters { agent: Some("claude-code".into()), tool: Some("mcp__docs__fetch".into()), ..Filters::default() });
        assert_eq!(r.rows.len(), 1);
        assert_eq!(r.total.omitted.chars_read_back, 1_000);
        // A result pruned before `since` takes its later read-back with it.
        let r = report(&lines()[..2], 0, Filters { since: Some(DAY + 15), ..Filters::default() });
        assert!(r.rows.is_empty(), "{:?}", r.rows);
        let proxies = vec![ok(DAY, "-", "P7", "mcp-proxy:docs", "fetch", 9_000, 3_000, "-")];
        let r = report(&proxies, 0, Filters { agent: Some("mcp-proxy".into()), ..Filters::default() });
        assert_eq!(r.total.pruned, 1, "`mcp-proxy` takes every mcp-proxy:NAME");
        let r = report(&proxies, 0, Filters { agent: Some("mcp".into()), ..Filters::default() });
        assert_eq!(r.total.seen, 0);
    }

    /// A tester's log: counts at `u64::MAX` (no writer can write them, but a
    /// log file is anyone's to damage) saturate; they never panic (debug) or
    /// wrap (release).
    #[test]
    fn huge_counts_saturate_instead_of_overflowing() {
        let max = u64::MAX;
        let huge = vec![
            ok(DAY + 1, "s1", "P1", "claude-code", "mcp__a__fetch", max, 0, &max.to_string()),
            ok(DAY + 2, "s1", "P2", "claude-code", "mcp__a__fetch", max, 0, &max.to_string()),
            back(DAY + 3, "s1", "claude-code", "P1", 0, 1, max),
            back(DAY + 4, "s1", "claude-code", "P2", 0, 1, max),
        ];
        let r = report(&huge, 0, Filters::default());
        assert_eq!((r.total.chars.seen, r.total.chars.removed, r.total.scorer.ms), (max, max, max));
        assert_eq!(r.total.omitted.chars_read_back, max);
        assert!(serde_json::to_string(&r).is_ok());
    }

    #[test]
    fn an_empty_log_is_an_empty_report_not_an_error() {
        let r = report(&[], 0, Filters::default());
        assert!(r.rows.is_empty());
        assert_eq!(r.total, Figures::default());
    }

    #[test]
    fn the_json_keys_are_the_documented_ones() {
        let json = serde_json::to_value(report(&lines(), 0, Filters::default())).unwrap();
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/stats.md")).unwrap();
        let mut keys = Vec::new();
        fn walk(prefix: &str, v: &serde_json::Value, out: &mut Vec<String>) {
            match v {
                serde_json::Value::Object(m) => {
                    for (k, v) in m {
                        let path = if prefix.is_empty() { k.clone() } else { format!("{prefix}.{k}") };
                        // Outcome and gate maps are keyed by the log's words.
                        if !matches!(k.as_str(), "outcomes" | "skipped") || !v.is_object() {
                            walk(&path, v, out);
                        }
                        out.push(path);
                    }
                }
                serde_json::Value::Array(a) => {
                    if let Some(first) = a.first() {
                        walk(&format!("{prefix}[]"), first, out);
                    }
                }
                _ => {}
            }
        }
        walk("", &json, &mut keys);
        // A figure is documented once, without its group (`total.`, `rows[].`, …).
        for key in keys {
            let figure = key.split_once('.').map(|(_, rest)| rest.to_string()).unwrap_or_default();
            assert!(
                doc.contains(&format!("`{key}`")) || (!figure.is_empty() && doc.contains(&format!("`{figure}`"))),
                "docs/stats.md does not document `{key}`"
            );
        }
    }
}
