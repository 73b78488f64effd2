//! `shared/cases/cases.json`: every case, every property, asserted through
//! the component. A property this file does not know fails the test, so a
//! new property cannot be skipped silently.

use std::cell::OnceCell;
use std::sync::Arc;

use serde_json::Value;
use toolprune::types::{Fate, UnitKind, Shape};
use toolprune::ScriptedScorer;
use toolprune_tests::*;

/// One case pruned once with a scorer that drops every odd paragraph.
struct Run {
    pruned: Pruned,
    lines: Vec<String>,
    scorer: Arc<ScriptedScorer>,
}

struct Subject {
    case: Case,
    text: String,
    run: OnceCell<Run>,
}

impl Subject {
    fn new(case: Case) -> Self {
        let text = case.text();
        Subject { case, text, run: OnceCell::new() }
    }

    fn run(&self) -> &Run {
        self.run.get_or_init(|| {
            // Every odd paragraph drops, whatever the count (text or a wrapper's string).
            let scorer = dropping_odd(10_000);
            let (mut turn, log) = turn(&self.case.request, scorer.clone());
            let pruned = prune(&mut turn, &self.text);
            Run { pruned, lines: prune_lines(&log), scorer }
        })
    }

    fn spans(&self) -> Vec<&str> {
        spans(&self.text)
    }
}

type Check = Result<(), String>;

fn ensure(ok: bool, why: impl FnOnce() -> String) -> Check {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

/// Asserts one property of `cases.json` on one case.
fn check(s: &Subject, property: &str) -> Check {
    let (name, arg) = match property.split_once(':') {
        Some((n, a)) => (n, Some(a)),
        None => (property, None),
    };
    match (name, arg) {
        ("reassembly_exact", None) => reassembly_exact(s),
        ("unit_contains", Some(arg)) => unit_contains(s, arg),
        ("fence_units_balanced_or_last", None) => fence_units_balanced_or_last(s),
        ("same_units_as", Some(file)) => same_units_as(s, file),
        ("output_keeps_crlf", None) => output_keeps_crlf(s),
        ("units", Some(n)) => {
            let n: usize = n.parse().map_err(|_| format!("bad count {n}"))?;
            let got = s.spans().len();
            ensure(got == n, || format!("{got} paragraphs, expected {n}"))
        }
        ("units_at_least", Some(n)) => {
            let n: usize = n.parse().map_err(|_| format!("bad count {n}"))?;
            let got = s.spans().len();
            ensure(got >= n, || format!("{got} paragraphs, expected at least {n}"))
        }
        ("not_attempted_below_min_chars", None) => {
            ensure(chars(&s.text) < 4_000 && s.text.len() >= 4_000, || "the case must have < 4,000 characters in ≥ 4,000 bytes".into())?;
            let r = s.run();
            ensure(r.lines.is_empty(), || format!("a log line was written: {:?}", r.lines))?;
            ensure(r.scorer.calls() == 0, || "the scorer was called".into())?;
            ensure(r.pruned.body == s.text, || "the body is not the input".into())
        }
        ("attempted", None) => {
            let r = s.run();
            ensure(r.lines.len() == 1, || format!("expected one log line, got {:?}", r.lines))?;
            let raw = field(&r.lines[0], "raw_chars").unwrap_or("");
            ensure(raw == chars(&s.text).to_string(), || format!("raw_chars={raw}"))
        }
        ("chars_are_scalar_values", None) => chars_are_scalar_values(s),
        ("one_unscored_kept_unit", None) => one_unscored_kept_unit(s),
        ("no_scorer_call", None) => {
            let calls = s.run().scorer.calls();
            ensure(calls == 0, || format!("{calls} scorer calls"))
        }
        ("calls", Some(n)) => {
            let r = s.run();
            let logged = r.lines.first().and_then(|l| field(l, "calls")).unwrap_or("none");
            let counted = report(&r.pruned).counts.calls.to_string();
            ensure(logged == n && counted == n, || format!("calls: logged {logged}, counted {counted}, expected {n}"))
        }
        ("outcome", Some(x)) => {
            let got = outcome(&s.run().pruned);
            ensure(got == x, || format!("outcome {got}, expected {x}"))
        }
        ("body_equals_input", None) => ensure(s.run().pruned.body == s.text, || "the body is not the input".into()),
        ("heading_with_body", None) => heading_with_body(s),
        ("shape", Some("json_wrapper")) => {
            let r = s.run();
            ensure(report(&r.pruned).shape == Some(Shape::JsonWrapper), || format!("not a wrapper: {:?}", r.lines))?;
            ensure(r.lines.iter().all(|l| l.contains(" shape=json_wrapper ")), || format!("{:?}", r.lines))
        }
        ("shape", Some("json_wrapper_or_documented_structured")) => {
            let r = s.run();
            let shape = report(&r.pruned).shape;
            ensure(shape == Some(Shape::JsonWrapper) || outcome(&r.pruned) == "structured", || {
                format!("neither a wrapper nor structured: {:?}", r.lines)
            })
        }
        ("output_parses_as_json", None) => {
            let body = &s.run().pruned.body;
            serde_json::from_str::<Value>(body.trim_start_matches('\u{FEFF}')).map(|_| ()).map_err(|e| format!("{e}"))
        }
        ("bytes_outside_string_identical", None) => bytes_outside_string_identical(s),
        ("never_broken_json", None) => {
            let body = &s.run().pruned.body;
            ensure(serde_json::from_str::<Value>(body).is_ok(), || "the body is not JSON".into())
        }
        ("never_emptied", None) => never_emptied(s),
        ("treated_as_text", None) => {
            let r = s.run();
            ensure(serde_json::from_str::<Value>(&s.text).is_err(), || "the case is JSON".into())?;
            ensure(report(&r.pruned).shape == Some(Shape::Text), || format!("not split as text: {:?}", r.lines))?;
            ensure(outcome(&r.pruned) != "structured", || "structured".into())
        }
        ("bom_kept", None) => bom_kept(s),
        _ => Err(format!("unknown property {property:?}: write its check in tests/tests/cases.rs")),
    }
}

fn reassembly_exact(s: &Subject) -> Check {
    let infos = infos(&s.text);
    let mut at = 0;
    for p in &infos {
        ensure(p.byte_start as usize == at, || format!("paragraph {} starts at {} not {at}", p.index, p.byte_start))?;
        at = p.byte_end as usize;
    }
    ensure(at == s.text.len(), || "the paragraphs do not reach the end".into())?;
    ensure(s.spans().concat() == s.text, || "joined paragraphs differ from the input".into())
}

fn unit_contains(s: &Subject, arg: &str) -> Check {
    // `A|B`; A may itself hold `|` (a table row), B does not.
    let (a, b) = arg.rsplit_once('|').ok_or("unit_contains needs A|B")?;
    let at = s.text.find(a).ok_or_else(|| format!("{a:?} is not in the case"))?;
    ensure(s.text.contains(b), || format!("{b:?} is not in the case"))?;
    let infos = infos(&s.text);
    let p = infos.iter().find(|p| (p.byte_start as usize..p.byte_end as usize).contains(&at)).unwrap();
    let unit = &s.text[p.byte_start as usize..p.byte_end as usize];
    ensure(unit.contains(a) && unit.contains(b), || format!("{a:?} and {b:?} are in different paragraphs"))
}

/// The line with its prefix (indent, `>` and list markers) removed.
fn strip_prefix(line: &str) -> &str {
    let mut s = line;
    loop {
        let t = s.trim_start_matches([' ', '\t']);
        if let Some(rest) = t.strip_prefix('>') {
            s = rest;
        } else if let Some(rest) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")).or_else(|| t.strip_prefix("+ ")) {
            s = rest;
        } else {
            let digits = t.bytes().take_while(u8::is_ascii_digit).count();
            match t[digits..].strip_prefix(". ").or_else(|| t[digits..].strip_prefix(") ")) {
                Some(rest) if digits > 0 => s = rest,
                _ => return t,
            }
        }
    }
}

fn fence_units_balanced_or_last(s: &Subject) -> Check {
    let spans = s.spans();
    for (i, unit) in spans.iter().enumerate() {
        let mut open: Option<(char, usize)> = None;
        for line in unit.lines() {
            let l = strip_prefix(line);
            let ch = match l.chars().next() {
                Some(c @ ('`' | '~')) => c,
                _ => continue,
            };
            let run = l.chars().take_while(|&c| c == ch).count();
            match open {
                None if run >= 3 && !(ch == '`' && l[run..].contains('`')) => open = Some((ch, run)),
                Some((c, n)) if c == ch && run >= n && l[run..].trim().is_empty() => open = None,
                _ => {}
            }
        }
        ensure(open.is_none() || i + 1 == spans.len(), || format!("paragraph {i} leaves a fence open"))?;
    }
    Ok(())
}

fn same_units_as(s: &Subject, file: &str) -> Check {
    let other = read_shared(&format!("cases/{file}"));
    let ours: Vec<usize> = s.spans().iter().map(|p| chars(&p.replace('\r', ""))).collect();
    let theirs: Vec<usize> = spans(&other).iter().map(|p| chars(&p.replace('\r', ""))).collect();
    ensure(ours == theirs, || format!("paragraph lengths {ours:?} vs {file} {theirs:?}"))
}

fn output_keeps_crlf(s: &Subject) -> Check {
    let r = s.run();
    ensure(outcome(&r.pruned) == "ok", || format!("not pruned: {:?}", r.lines))?;
    let body = &r.pruned.body;
    ensure(!body.replace("\r\n", "").contains('\n'), || "a bare \\n in the pruned body".into())?;
    let kept = kept_text(&s.text, report(&r.pruned));
    ensure(strip_markers(body) == kept, || "kept paragraphs are not verbatim".into())
}

fn chars_are_scalar_values(s: &Subject) -> Check {
    let n = chars(&s.text);
    ensure(n == s.case.chars, || format!("{n} characters, cases.json says {}", s.case.chars))?;
    let r = report(&s.run().pruned);
    ensure(r.counts.raw_chars as usize == n, || format!("raw_chars {} vs {n}", r.counts.raw_chars))?;
    for p in infos(&s.text) {
        let slice = &s.text[p.byte_start as usize..p.byte_end as usize];
        ensure((p.char_end - p.char_start) as usize == chars(slice), || format!("paragraph {} miscounted", p.index))?;
    }
    let reported: u32 = r.paragraphs.iter().map(|p| p.chars).sum();
    ensure(reported as usize == n, || format!("paragraph chars sum to {reported}, not {n}"))
}

fn one_unscored_kept_unit(s: &Subject) -> Check {
    let infos = infos(&s.text);
    let fixed: Vec<_> = infos.iter().filter(|p| p.kind == UnitKind::Fixed).collect();
    ensure(fixed.len() == 1, || format!("{} fixed paragraphs", fixed.len()))?;
    let unit = &s.text[fixed[0].byte_start as usize..fixed[0].byte_end as usize];
    ensure(chars(unit) > 6_000, || "the fixed paragraph is not over 6,000".into())?;
    let r = s.run();
    ensure(report(&r.pruned).paragraphs[fixed[0].index as usize].fate == Fate::Fixed, || "not reported fixed".into())?;
    ensure(r.pruned.body.contains(unit), || "the fixed paragraph is not kept".into())?;
    for req in r.scorer.requests() {
        for b in &req.batches {
            ensure(!b.paragraphs.contains(&fixed[0].index), || "the fixed paragraph was batched".into())?;
            ensure(!b.jev_body.contains(&unit[..200]), || "the fixed paragraph was sent".into())?;
        }
    }
    Ok(())
}

fn heading_with_body(s: &Subject) -> Check {
    let mut headings = 0;
    for (i, unit) in s.spans().iter().enumerate() {
        let lines: Vec<&str> = unit.lines().filter(|l| !l.trim().is_empty()).collect();
        for (k, line) in lines.iter().enumerate() {
            if line.starts_with('#') {
                headings += 1;
                ensure(k + 1 < lines.len(), || format!("heading {line:?} ends paragraph {i} without its body"))?;
            }
        }
    }
    ensure(headings > 0, || "no heading in the case".into())
}

fn bytes_outside_string_identical(s: &Subject) -> Check {
    let r = s.run();
    if outcome(&r.pruned) == "structured" {
        return ensure(r.pruned.body == s.text, || "structured but changed".into());
    }
    ensure(outcome(&r.pruned) == "ok", || format!("expected a pruned wrapper: {:?}", r.lines))?;
    let span = string_value_span(&s.text, &longest_string_key(&s.text));
    replaced_string(&s.text, &r.pruned.body, span).map(|_| ())
}

fn never_emptied(s: &Subject) -> Check {
    let body = &s.run().pruned.body;
    if *body == s.text {
        return Ok(());
    }
    let before: Value = serde_json::from_str(&s.text).map_err(|e| e.to_string())?;
    let after: Value = serde_json::from_str(body).map_err(|e| e.to_string())?;
    match (before.as_array(), after.as_array()) {
        (Some(b), Some(a)) => ensure(!a.is_empty() && a.len() <= b.len(), || "array emptied".into()),
        _ => Err("the JSON changed shape".into()),
    }
}

fn bom_kept(s: &Subject) -> Check {
    ensure(s.text.starts_with('\u{FEFF}'), || "the case has no BOM".into())?;
    ensure(s.spans()[0].starts_with('\u{FEFF}'), || "paragraph 0 lost the BOM".into())?;
    let r = s.run();
    // Paragraph 0 is kept (only odd ones drop): it follows the header verbatim.
    ensure(outcome(&r.pruned) == "ok", || format!("not pruned: {:?}", r.lines))?;
    ensure(r.pruned.body.matches('\u{FEFF}').count() == 1, || "the BOM did not survive pruning".into())?;
    // Unpruned, the body starts with it.
    let (mut turn, _log) = turn(&s.case.request, dropping([]));
    let p = prune(&mut turn, &s.text);
    ensure(p.body.starts_with('\u{FEFF}'), || "an unpruned body lost its BOM".into())
}

#[test]
fn every_case_has_every_property() {
    let mut failures = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let subject = Subject::new(case);
        for property in &subject.case.expect {
            checked += 1;
            if let Err(why) = check(&subject, property) {
                failures.push(format!("{} / {property}: {why}", subject.case.file));
            }
        }
    }
    assert!(checked >= 40, "only {checked} properties checked");
    assert!(failures.is_empty(), "{} of {checked} properties fail:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn an_unknown_property_fails() {
    let subject = Subject::new(cases().remove(0));
    let err = check(&subject, "made_up_property").unwrap_err();
    assert!(err.contains("unknown property"), "{err}");
    assert!(check(&subject, "shape:something_new").is_err());
}

/// `bom_kept` — "a leading U+FEFF survives" — also when paragraph 0, which
/// holds the BOM's bytes, is dropped: the BOM stays the body's first
/// character, before the header (the kind of fault, not the one file).
#[test]
fn bom_survives_when_paragraph_0_is_dropped() {
    let case = case("bom.md");
    let text = case.text();
    let (mut turn, _log) = turn(&case.request, dropping((0..200).filter(|i| i % 2 == 0)));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    assert_eq!(dropped_of(report(&p))[0], 0);
    assert!(p.body.starts_with('\u{FEFF}'), "the leading BOM was dropped with paragraph 0");
    assert_eq!(p.body.matches('\u{FEFF}').count(), 1);
}
