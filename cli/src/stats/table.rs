//! The terminal table of `toolprune stats`, in the manner of `cargo` and
//! `gh`: upper-case headers, columns aligned (numbers to the right), no
//! borders, bold headers and total only on a colour terminal.

use super::{Figures, Report, CHARS_PER_TOKEN};

const BOLD: &str = "\x1b[1m";
const DIM: &str = "\x1b[2m";
const RESET: &str = "\x1b[0m";

const HEADERS: [&str; 12] =
    ["DAY", "AGENT", "TOOL", "SEEN", "TRIED", "PRUNED", "CHARS REMOVED", "~TOKENS", "OMITTED", "READ BACK", "SCORER", "OUTCOMES"];
/// Columns aligned to the right (numbers).
const RIGHT: [bool; 12] = [false, false, false, true, true, true, true, true, true, true, true, false];

/// `12.5%`; `-` when there is no share.
pub fn percent(share: Option<f64>) -> String {
    share.map_or_else(|| "-".to_string(), |s| format!("{:.1}%", s * 100.0))
}

/// `812 ms`, `3.4 s`; `-` when nothing was measured.
pub fn duration(ms: u64, measured: u64) -> String {
    match (measured, ms) {
        (0, _) => "-".to_string(),
        (_, ms) if ms < 1000 => format!("{ms} ms"),
        (_, ms) => format!("{:.1} s", ms as f64 / 1000.0),
    }
}

/// `ok 2, below_floor 1, skipped (repeated) 1`.
pub fn outcomes(f: &Figures) -> String {
    let mut parts: Vec<String> = Vec::new();
    // `ok` first, then the rest by name.
    let mut names: Vec<&String> = f.outcomes.keys().collect();
    names.sort_by_key(|n| (n.as_str() != "ok", n.as_str()));
    for name in names {
        let n = f.outcomes[name];
        if name == "skipped" && !f.skipped.is_empty() {
            for (gate, g) in &f.skipped {
                parts.push(format!("skipped ({gate}) {g}"));
            }
        } else {
            parts.push(format!("{name} {n}"));
        }
    }
    if parts.is_empty() { "-".to_string() } else { parts.join(", ") }
}

fn cells(day: &str, agent: &str, tool: &str, f: &Figures) -> [String; 12] {
    [
        day.to_string(),
        agent.to_string(),
        tool.to_string(),
        f.seen.to_string(),
        f.attempted.to_string(),
        f.pruned.to_string(),
        f.chars.removed.to_string(),
        f.tokens_removed.to_string(),
        f.omitted.calls.to_string(),
        percent(f.read_back_share),
        duration(f.scorer.ms, f.scorer.measured),
        outcomes(f),
    ]
}

/// The table and its notes; `color`: ANSI bold and dim (a terminal that
/// wants colour).
pub fn render(report: &Report, color: bool) -> String {
    let (bold, dim, reset) = if color { (BOLD, DIM, RESET) } else { ("", "", "") };
    let mut out = String::new();
    let store = report.log.store.as_deref().unwrap_or("-");
    if report.rows.is_empty() {
        let filtered = report.filters.since.is_some() || report.filters.agent.is_some() || report.filters.tool.is_some();
        out.push_str(if filtered { "No results match these filters" } else { "No results logged yet" });
        out.push_str(&format!(" (log: {store}/toolprune.log).\n"));
    } else {
        let mut rows: Vec<[String; 12]> = vec![HEADERS.map(str::to_string)];
        rows.extend(report.rows.iter().map(|r| cells(&r.day, &r.agent, &r.tool, &r.figures)));
        rows.push(cells("total", "", "", &report.total));
        let mut widths = [0usize; 12];
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let last = rows.len() - 1;
        for (i, row) in rows.iter().enumerate() {
            let mut text = String::new();
            for (c, cell) in row.iter().enumerate() {
                let pad = widths[c] - cell.chars().count();
                if c > 0 {
                    text.push_str("  ");
                }
                if c == 11 {
                    text.push_str(cell); // the last column: no trailing spaces
                } else if RIGHT[c] {
                    text.push_str(&" ".repeat(pad));
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    text.push_str(&" ".repeat(pad));
                }
            }
            let text = text.trim_end();
            if i == 0 || i == last {
                out.push_str(&format!("{bold}{text}{reset}\n"));
            } else {
                out.push_str(text);
                out.push('\n');
            }
        }
        out.push('\n');
        out.push_str(&format!(
            "{dim}~TOKENS = CHARS REMOVED / {CHARS_PER_TOKEN}: an estimate (the log holds counts, never text; docs/stats.md).\n\
             READ BACK = the characters `omitted` returned / CHARS REMOVED.{reset}\n"
        ));
    }
    if report.log.skipped > 0 {
        let s = if report.log.skipped == 1 { "" } else { "s" };
        out.push_str(&format!("{dim}{} corrupt or truncated line{s} skipped.{reset}\n", report.log.skipped));
    }
    for refused in &report.log.refused {
        out.push_str(&format!("{dim}not read: {refused}{reset}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::{report, time, Filters};
    use super::*;

    #[test]
    fn columns_align_numbers_to_the_right_and_there_is_no_colour_unless_asked() {
        let lines = vec![
            "1767312010 session=s1 id=P1 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok shape=text raw_chars=12202 kept_chars=6925 paragraphs=33 dropped=9 calls=3 jev_tokens=16515 ms=812 threshold=0.2 ratio=0.432 scorer=jev".to_string(),
            "1767312020 session=s1 tool omitted: agent=claude-code id=P1 from=3 to=7 chars=1204 outcome=ok".to_string(),
            "1767312030 tool prune: agent=gemini name=mcp_docs_fetch outcome=below_floor shape=text raw_chars=5000 kept_chars=5000 paragraphs=4 dropped=0 calls=1 jev_tokens=0 ms=- threshold=0.2 ratio=0.1 scorer=offline".to_string(),
        ];
        let r = report(&lines, 1, Filters::default(), &time::utc_day);
        let plain = render(&r, false);
        assert!(!plain.contains('\x1b'), "{plain}");
        let rows: Vec<&str> = plain.lines().take(4).collect();
        assert_eq!(
            rows,
            [
                "DAY         AGENT        TOOL              SEEN  TRIED  PRUNED  CHARS REMOVED  ~TOKENS  OMITTED  READ BACK  SCORER  OUTCOMES",
                "2026-01-02  claude-code  mcp__docs__fetch     1      1       1           5277     1319        1      22.8%  812 ms  ok 1",
                "2026-01-02  gemini       mcp_docs_fetch       1      1       0              0        0        0          -       -  below_floor 1",
                "total                                         2      2       1           5277     1319        1      22.8%  812 ms  ok 1, below_floor 1",
            ]
        );
        assert!(plain.contains("an estimate"));
        assert!(plain.contains("1 corrupt or truncated line skipped."));
        let colored = render(&r, true);
        assert!(colored.starts_with("\x1b[1mDAY"), "{colored}");
    }

    #[test]
    fn an_empty_log_says_so() {
        let mut r = report(&[], 0, Filters::default(), &time::utc_day);
        r.log.store = Some("/s".into());
        assert_eq!(render(&r, false), "No results logged yet (log: /s/toolprune.log).\n");
        r.filters.tool = Some("x".into());
        assert!(render(&r, false).starts_with("No results match these filters"));
    }

    #[test]
    fn outcomes_list_ok_first_and_skipped_with_its_gate() {
        let mut f = Figures::default();
        f.outcomes.insert("nothing_dropped".into(), 2);
        f.outcomes.insert("ok".into(), 3);
        f.outcomes.insert("skipped".into(), 1);
        f.skipped.insert("repeated".into(), 1);
        assert_eq!(outcomes(&f), "ok 3, nothing_dropped 2, skipped (repeated) 1");
        assert_eq!(outcomes(&Figures::default()), "-");
        assert_eq!(duration(0, 0), "-");
        assert_eq!(duration(3400, 2), "3.4 s");
        assert_eq!(percent(Some(0.2283)), "22.8%");
    }
}
