//! `toolprune stats --html FILE`: the report as one self-contained page —
//! inline CSS and SVG, no script, and a Content-Security-Policy that lets
//! nothing load — with three charts: tokens removed per day, outcomes, and
//! the read-back share per tool. Every figure drawn carries its value in a
//! `data-*` attribute, the same number as in the JSON (tests read them
//! back in headless Chromium: tests/stats/).

use std::fmt::Write as _;

use super::table::percent;
use super::{Figures, Report, CHARS_PER_TOKEN};

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
:root { color-scheme: light dark; --fg: #1f2328; --muted: #59636e; --bg: #ffffff; --card: #f6f8fa; --bar: #2f81f7; --grid: #d1d9e0; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #9198a1; --bg: #0d1117; --card: #151b23; --bar: #4493f8; --grid: #3d444d; } }
body { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: var(--bg); margin: 2rem auto; max-width: 60rem; padding: 0 1rem; }
h1 { font-size: 1.6rem; margin: 0 0 .2rem; } h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; }
.muted { color: var(--muted); } .note { color: var(--muted); font-size: .85rem; }
.cards { display: grid; grid-template-columns: repeat(auto-fit, minmax(10rem, 1fr)); gap: .75rem; margin: 1.2rem 0; }
.card { background: var(--card); border-radius: 8px; padding: .8rem 1rem; }
.card .value { font-size: 1.5rem; font-weight: 600; font-variant-numeric: tabular-nums; }
svg { width: 100%; height: auto; font: 12px system-ui, sans-serif; }
svg text { fill: var(--fg); } svg .axis { stroke: var(--grid); } svg .bar { fill: var(--bar); }
table { border-collapse: collapse; font-variant-numeric: tabular-nums; margin-top: .5rem; }
th, td { padding: .2rem .7rem; text-align: right; border-bottom: 1px solid var(--grid); } th:first-child, td:first-child { text-align: left; }
details { margin-top: .3rem; }
"#;

/// The colour of an outcome's bar (SPEC §7): pruned green, passed grey,
/// failures red, skipped blue.
fn outcome_color(name: &str) -> &'static str {
    match name {
        "ok" => "#1a7f37",
        "timeout" | "failed" | "cancelled" => "#cf222e",
        "skipped" => "#8250df",
        "below_floor" | "all_dropped" => "#bf8700",
        _ => "#6e7781",
    }
}

/// A figure with a thin space as the thousands separator (display only).
fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push('\u{2009}');
        }
        out.push(c);
    }
    out
}

fn card(out: &mut String, figure: &str, value: &str, label: &str, title: &str) {
    let _ = write!(
        out,
        r#"<div class="card" data-figure="{figure}" data-value="{}"><div class="value">{}</div><div class="muted" title="{}">{}</div></div>"#,
        escape(value),
        escape(&display(figure, value)),
        escape(title),
        escape(label)
    );
}

fn display(figure: &str, value: &str) -> String {
    match (figure, value.parse::<u64>()) {
        ("read_back_share", _) => value.parse::<f64>().ok().map_or_else(|| "-".to_string(), |s| percent(Some(s))),
        (_, Ok(n)) => grouped(n),
        _ => value.to_string(),
    }
}

/// Vertical bars: tokens removed per day.
fn days_chart(out: &mut String, report: &Report) {
    let days = &report.by_day;
    let (width, height, left, bottom, top) = (720.0_f64, 240.0_f64, 56.0, 40.0, 16.0);
    let max = days.iter().map(|d| d.figures.tokens_removed).max().unwrap_or(0).max(1) as f64;
    let slot = (width - left - 8.0) / days.len().max(1) as f64;
    let bar = (slot * 0.7).min(48.0);
    let _ = write!(out, r#"<svg id="chart-days" viewBox="0 0 {width} {height}" role="img" aria-label="Tokens removed per day">"#);
    let _ = write!(out, r#"<line class="axis" x1="{left}" y1="{}" x2="{}" y2="{}"/>"#, height - bottom, width - 8.0, height - bottom);
    let _ = write!(out, r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#, left - 6.0, top + 4.0, grouped(max as u64));
    let _ = write!(out, r#"<text x="{}" y="{}" text-anchor="end">0</text>"#, left - 6.0, height - bottom + 4.0);
    // At most ~12 day labels under the axis.
    let every = days.len().div_ceil(12).max(1);
    for (i, d) in days.iter().enumerate() {
        let tokens = d.figures.tokens_removed;
        let h = (height - bottom - top) * tokens as f64 / max;
        let x = left + slot * i as f64 + (slot - bar) / 2.0;
        let y = height - bottom - h;
        let _ = write!(
            out,
            r#"<rect class="bar" data-day="{day}" data-tokens="{tokens}" data-chars="{chars}" x="{x:.1}" y="{y:.1}" width="{bar:.1}" height="{h:.1}"><title>{day}: ~{tokens} tokens ({chars} characters) removed</title></rect>"#,
            day = escape(&d.key),
            chars = d.figures.chars.removed,
        );
        if i % every == 0 {
            let _ = write!(out, r#"<text x="{:.1}" y="{}" text-anchor="middle">{}</text>"#, x + bar / 2.0, height - bottom + 16.0, escape(&d.key));
        }
    }
    out.push_str("</svg>");
}

/// Horizontal bars, one per item: (key, value, label, data attributes, colour).
fn hbars(out: &mut String, id: &str, label: &str, items: &[(String, f64, String, String, &str)]) {
    let (width, row, left) = (720.0_f64, 26.0_f64, 200.0_f64);
    let height = row * items.len().max(1) as f64 + 8.0;
    let max = items.iter().map(|i| i.1).fold(0.0, f64::max).max(f64::MIN_POSITIVE);
    let _ = write!(out, r#"<svg id="{id}" viewBox="0 0 {width} {height}" role="img" aria-label="{}">"#, escape(label));
    for (i, (key, value, text, data, color)) in items.iter().enumerate() {
        let y = 4.0 + row * i as f64;
        // Room for the longest value text to the bar's right.
        let w = (width - left - 240.0) * value / max;
        let _ = write!(
            out,
            r#"<g {data}><text x="{:.1}" y="{:.1}" text-anchor="end">{}</text><rect x="{left}" y="{:.1}" width="{w:.1}" height="{:.1}" fill="{color}"><title>{}: {}</title></rect><text x="{:.1}" y="{:.1}">{}</text></g>"#,
            left - 8.0,
            y + row * 0.62,
            escape(key),
            y + 3.0,
            row - 8.0,
            escape(key),
            escape(text),
            left + w + 6.0,
            y + row * 0.62,
            escape(text),
        );
    }
    if items.is_empty() {
        let _ = write!(out, r#"<text x="{left}" y="18">none</text>"#);
    }
    out.push_str("</svg>");
}

fn figures_table(out: &mut String, key: &str, groups: &[(String, &Figures)]) {
    let _ = write!(
        out,
        "<details><summary>Figures</summary><table><thead><tr><th>{}</th><th>seen</th><th>pruned</th><th>characters removed</th><th>~tokens</th><th>omitted calls</th><th>read back</th></tr></thead><tbody>",
        escape(key)
    );
    for (name, f) in groups {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(name),
            f.seen,
            f.pruned,
            f.chars.removed,
            f.tokens_removed,
            f.omitted.calls,
            percent(f.read_back_share)
        );
    }
    out.push_str("</tbody></table></details>");
}

/// The page.
pub fn render(report: &Report) -> String {
    let t = &report.total;
    let mut out = String::new();
    out.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    // Nothing may load: no network, no script, no external anything.
    out.push_str("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">");
    out.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><title>What toolprune saved</title><style>");
    out.push_str(STYLE);
    out.push_str("</style></head><body>\n<h1>What toolprune saved</h1>");
    let period = match (report.by_day.first(), report.by_day.last()) {
        (Some(a), Some(b)) if a.key == b.key => a.key.clone(),
        (Some(a), Some(b)) => format!("{} – {}", a.key, b.key),
        _ => "no results yet".to_string(),
    };
    let mut filters = Vec::new();
    if let Some(a) = &report.filters.agent {
        filters.push(format!("agent {a}"));
    }
    if let Some(tool) = &report.filters.tool {
        filters.push(format!("tool {tool}"));
    }
    let _ = write!(
        out,
        r#"<p class="muted" id="period" data-since="{}">{}{} · log {}</p>"#,
        report.filters.since.map(|s| s.to_string()).unwrap_or_default(),
        escape(&period),
        escape(&filters.iter().map(|f| format!(" · {f}")).collect::<String>()),
        escape(report.log.store.as_deref().unwrap_or("-"))
    );
    out.push_str(r#"<div class="cards" id="totals">"#);
    card(&mut out, "tokens_removed", &t.tokens_removed.to_string(), "tokens removed (estimate)", &format!("characters removed / {CHARS_PER_TOKEN}"));
    card(&mut out, "chars_removed", &t.chars.removed.to_string(), "characters removed", "raw − kept characters of the pruned results, markers counted");
    card(&mut out, "pruned", &t.pruned.to_string(), &format!("results pruned of {} seen", t.seen), "outcome ok with fewer characters kept");
    card(
        &mut out,
        "read_back_share",
        &t.read_back_share.map(|s| format!("{s}")).unwrap_or_else(|| "-".into()),
        &format!("read back by omitted ({} calls)", t.omitted.calls),
        "characters omitted returned / characters removed",
    );
    out.push_str("</div>");

    out.push_str("<h2>Tokens removed per day</h2>");
    days_chart(&mut out, report);
    figures_table(&mut out, "day", &report.by_day.iter().map(|g| (g.key.clone(), &g.figures)).collect::<Vec<_>>());

    out.push_str("<h2>Outcomes</h2>");
    // `ok` first, then the others by name.
    let mut ordered: Vec<(&String, &u64)> = t.outcomes.iter().collect();
    ordered.sort_by_key(|(name, _)| (name.as_str() != "ok", name.as_str()));
    let outcomes: Vec<(String, f64, String, String, &str)> = ordered
        .into_iter()
        .map(|(name, n)| (name.clone(), *n as f64, n.to_string(), format!(r#"data-outcome="{}" data-count="{n}""#, escape(name)), outcome_color(name)))
        .collect();
    hbars(&mut out, "chart-outcomes", "Results by outcome", &outcomes);

    out.push_str("<h2>Read back per tool</h2><p class=\"note\">The share of the removed characters that the model asked back with <code>omitted</code>: the honest measure of wrong drops. A high share means the threshold is too high for that tool.</p>");
    let tools: Vec<(String, f64, String, String, &str)> = report
        .by_tool
        .iter()
        .filter(|g| g.figures.chars.removed > 0 || g.figures.omitted.calls > 0)
        .map(|g| {
            let f = &g.figures;
            let share = f.read_back_share.unwrap_or(0.0);
            let text = format!("{} of {} characters ({})", f.omitted.chars_read_back, f.chars.removed, percent(f.read_back_share));
            let data = format!(
                r#"data-tool="{}" data-share="{}" data-read-back="{}" data-removed="{}""#,
                escape(&g.key),
                f.read_back_share.map(|s| s.to_string()).unwrap_or_default(),
                f.omitted.chars_read_back,
                f.chars.removed
            );
            let label = if g.key == "-" { "(result not in the log)".to_string() } else { g.key.clone() };
            (label, share, text, data, "#2f81f7")
        })
        .collect();
    hbars(&mut out, "chart-read-back", "Read-back share per tool", &tools);
    figures_table(&mut out, "tool", &report.by_tool.iter().map(|g| (g.key.clone(), &g.figures)).collect::<Vec<_>>());

    let _ = write!(
        out,
        r#"<p class="note">Tokens are an estimate: characters removed / {CHARS_PER_TOKEN}. The log holds counts, never text, so no tokenizer runs on it (docs/stats.md). Results shorter than 4,000 characters and tools that are not prunable write no line and are not counted. {} lines read, {} skipped as corrupt or truncated.</p>"#,
        report.log.lines, report.log.skipped
    );
    out.push_str("\n</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::super::{report, time, Filters};
    use super::*;

    #[test]
    fn labels_are_escaped_and_nothing_external_is_referenced() {
        let lines = vec![
            r#"1767312010 id=P1 tool prune: agent=<b>a</b> name=x"><script>alert(1)</script> outcome=ok raw_chars=9000 kept_chars=3000 paragraphs=9 dropped=4 calls=1 jev_tokens=0 ms=- threshold=0.2 ratio=0.6 scorer=offline"#.to_string(),
        ];
        let page = render(&report(&lines, 0, Filters::default(), &time::utc_day));
        assert!(!page.contains("<script"), "{page}");
        assert!(page.contains("x&quot;&gt;&lt;script&gt;"));
        for external in ["http://", "https://", "src=", "href=", "@import", "url("] {
            assert!(!page.contains(external), "{external} in the page");
        }
        assert!(page.contains("default-src 'none'"));
        assert!(page.contains(r#"data-figure="tokens_removed" data-value="1500""#));
        assert!(page.contains(r#"data-day="2026-01-02" data-tokens="1500" data-chars="6000""#));
    }

    #[test]
    fn an_empty_report_is_still_a_page() {
        let page = render(&report(&[], 0, Filters::default(), &time::utc_day));
        assert!(page.starts_with("<!DOCTYPE html>") && page.ends_with("</html>\n"));
        assert!(page.contains("no results yet"));
    }

    #[test]
    fn thousands_are_grouped_for_display_only() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1234567), "1\u{2009}234\u{2009}567");
        assert_eq!(grouped(999), "999");
    }
}
