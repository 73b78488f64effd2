//! One line of the log file as `toolprune stats` reads it (SPEC §12,
//! crate::logfile): the writer's time and fields, then the guest's line.
//!
//! ```text
//! 1767312000 session=3f2a9c0d1e4b5a69 id=P2 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok shape=text raw_chars=12202 kept_chars=6925 paragraphs=33 dropped=9 calls=3 jev_tokens=16515 ms=812 threshold=0.2 ratio=0.432 scorer=jev
//! 1767312004 session=3f2a9c0d1e4b5a69 tool omitted: agent=claude-code id=P2 from=3 to=7 chars=1204 outcome=ok
//! 1767312000 tool prune: agent=claude-code name=mcp__docs__fetch outcome=nothing_dropped …   (an older writer: the time only)
//! 1767312000 tool prune: agent=a name=t outcome=failed reason=guest_trap limit=fuel           (a host's failure line)
//! 1767312000 tool prune: agent=a name=t outcome=skipped gate=repeated paragraphs=- …          (the repeat gate)
//! ```
//!
//! A field the line does not carry is none; `-` (not measured, SPEC §12) is
//! none too, never 0. A line that does not have this form — no time, a
//! `tool prune:` line without its agent, name or outcome, a number that is
//! not one — is [`Corrupt`].

/// Why a line was not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Corrupt(pub &'static str);

/// One parsed line.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Unix seconds, from the writer.
    pub at: u64,
    /// The writer's `session=` tag (none from older writers, the proxy, the CLI).
    pub session: Option<String>,
    /// The writer's `id=` (the stored result of a `tool prune:` line).
    pub id: Option<String>,
    pub kind: Kind,
}

/// What the line says.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Prune(Prune),
    Omitted(Omitted),
    /// A line of another kind (`hook:`, `mcp:`, `judge:`, a kind of a later
    /// version): well formed, not counted.
    Other,
}

/// A `tool prune:` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prune {
    pub agent: String,
    pub tool: String,
    /// `ok`, `skipped`, `structured`, `no_basis`, … (SPEC §7), as written.
    pub outcome: String,
    /// For `skipped`: the gate (`repeated`).
    pub gate: Option<String>,
    pub raw_chars: Option<u64>,
    pub kept_chars: Option<u64>,
    pub paragraphs: Option<u64>,
    pub dropped: Option<u64>,
    pub calls: Option<u64>,
    pub jev_tokens: Option<u64>,
    /// The host scorer's time; none for the offline scorer and where no
    /// scorer answered.
    pub ms: Option<u64>,
}

/// A `tool omitted:` line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Omitted {
    pub agent: String,
    /// The id the model passed (`?` for one that is not an id, none on a
    /// failure line).
    pub id: Option<String>,
    pub from: Option<u64>,
    pub to: Option<u64>,
    /// Characters returned (0 unless `ok`).
    pub chars: u64,
    /// `ok`, `not_dropped`, `not_found`, `too_large`, `invalid`, `failed`.
    pub outcome: String,
}

fn is_word(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

/// The `key=value` pairs of a line's rest (values hold no spaces: the guest
/// writes labels with `_` for whitespace and `=`).
fn pairs(rest: &str) -> Result<Vec<(&str, &str)>, Corrupt> {
    rest.split(' ').filter(|t| !t.is_empty()).map(|t| t.split_once('=').ok_or(Corrupt("a field without `=`"))).collect()
}

fn get<'a>(pairs: &[(&'a str, &'a str)], key: &str) -> Option<&'a str> {
    pairs.iter().find(|(k, _)| *k == key).map(|(_, v)| *v)
}

/// A count: absent or `-` is none; anything else must be a number.
fn count(pairs: &[(&str, &str)], key: &str) -> Result<Option<u64>, Corrupt> {
    match get(pairs, key) {
        None | Some("-") => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| Corrupt("a count that is not a number")),
    }
}

/// Parses one line (without its `\n`).
pub fn parse(line: &str) -> Result<Entry, Corrupt> {
    let (time, mut rest) = line.split_once(' ').ok_or(Corrupt("no time"))?;
    if time.is_empty() || !time.bytes().all(|b| b.is_ascii_digit()) {
        return Err(Corrupt("no time"));
    }
    let at = time.parse().map_err(|_| Corrupt("no time"))?;
    let (mut session, mut id) = (None, None);
    // The writer's fields: `key=value` tokens before the line's kind.
    while let Some((token, after)) = rest.split_once(' ') {
        let Some((key, value)) = token.split_once('=') else { break };
        match key {
            "session" => session = Some(value.to_string()),
            "id" => id = Some(value.to_string()),
            _ if is_word(key) => {}
            _ => return Err(Corrupt("a writer field that is not a word")),
        }
        rest = after;
    }
    let kind = if let Some(fields) = rest.strip_prefix("tool prune: ") {
        Kind::Prune(prune(&pairs(fields)?)?)
    } else if let Some(fields) = rest.strip_prefix("tool omitted: ") {
        Kind::Omitted(omitted(&pairs(fields)?)?)
    } else {
        // `hook: …`, `mcp: …`, `judge: …`, `tool other: …`: a kind word and a colon.
        let head = rest.strip_prefix("tool ").unwrap_or(rest);
        match head.split_once(':') {
            Some((word, _)) if is_word(word) => Kind::Other,
            _ => return Err(Corrupt("not a log line")),
        }
    };
    Ok(Entry { at, session, id, kind })
}

fn prune(p: &[(&str, &str)]) -> Result<Prune, Corrupt> {
    let required = |key| get(p, key).filter(|v| !v.is_empty()).ok_or(Corrupt("a `tool prune:` line without agent, name or outcome"));
    let outcome = required("outcome")?;
    if !is_word(outcome) {
        return Err(Corrupt("an outcome that is not a word"));
    }
    let line = Prune {
        agent: required("agent")?.to_string(),
        tool: required("name")?.to_string(),
        outcome: outcome.to_string(),
        gate: get(p, "gate").map(str::to_string),
        raw_chars: count(p, "raw_chars")?,
        kept_chars: count(p, "kept_chars")?,
        paragraphs: count(p, "paragraphs")?,
        dropped: count(p, "dropped")?,
        calls: count(p, "calls")?,
        jev_tokens: count(p, "jev_tokens")?,
        ms: count(p, "ms")?,
    };
    if line.outcome == "ok" && (line.raw_chars.is_none() || line.kept_chars.is_none()) {
        return Err(Corrupt("an `ok` line without its characters"));
    }
    if line.kept_chars > line.raw_chars && line.raw_chars.is_some() {
        return Err(Corrupt("more characters kept than there were"));
    }
    Ok(line)
}

fn omitted(p: &[(&str, &str)]) -> Result<Omitted, Corrupt> {
    let agent = get(p, "agent").filter(|v| !v.is_empty()).ok_or(Corrupt("a `tool omitted:` line without agent"))?;
    let outcome = get(p, "outcome").filter(|v| is_word(v)).ok_or(Corrupt("a `tool omitted:` line without outcome"))?;
    Ok(Omitted {
        agent: agent.to_string(),
        id: get(p, "id").filter(|v| *v != "-").map(str::to_string),
        from: count(p, "from")?,
        to: count(p, "to")?,
        chars: count(p, "chars")?.unwrap_or(0),
        outcome: outcome.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prune_of(line: &str) -> Prune {
        match parse(line).unwrap().kind {
            Kind::Prune(p) => p,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_line_of_this_writer_carries_its_session_and_the_stored_id() {
        let e = parse("1767312000 session=3f2a9c0d1e4b5a69 id=P2 tool prune: agent=claude-code name=mcp__docs__fetch outcome=ok shape=text raw_chars=12202 kept_chars=6925 paragraphs=33 dropped=9 calls=3 jev_tokens=16515 ms=812 threshold=0.2 ratio=0.432 scorer=jev").unwrap();
        assert_eq!((e.at, e.session.as_deref(), e.id.as_deref()), (1767312000, Some("3f2a9c0d1e4b5a69"), Some("P2")));
        let Kind::Prune(p) = e.kind else { panic!() };
        assert_eq!((p.agent.as_str(), p.tool.as_str(), p.outcome.as_str()), ("claude-code", "mcp__docs__fetch", "ok"));
        assert_eq!((p.raw_chars, p.kept_chars, p.dropped, p.calls, p.jev_tokens, p.ms), (Some(12202), Some(6925), Some(9), Some(3), Some(16515), Some(812)));
    }

    #[test]
    fn lines_of_older_writers_still_read() {
        // Today's FileLog: the time, then the guest's line (conformance expected/ lines).
        let e = parse("1767312000 tool prune: agent=claude-code name=mcp__docs__fetch outcome=nothing_dropped shape=text raw_chars=5000 kept_chars=5000 paragraphs=3 dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=offline").unwrap();
        assert_eq!((e.session, e.id), (None, None));
        let Kind::Prune(p) = e.kind else { panic!() };
        assert_eq!((p.ms, p.raw_chars), (None, Some(5000)), "`-` is not measured, never 0");
        let e = parse("1767312004 tool omitted: agent=claude-code id=P1 from=1 to=8 chars=800 outcome=ok").unwrap();
        assert_eq!(e.kind, Kind::Omitted(Omitted { agent: "claude-code".into(), id: Some("P1".into()), from: Some(1), to: Some(8), chars: 800, outcome: "ok".into() }));
        assert_eq!(parse("1767312004 hook: agent=gemini event=AfterTool answer=replace ms=31").unwrap().kind, Kind::Other);
        assert_eq!(parse("1767312004 mcp: body outcome=ok chars=100").unwrap().kind, Kind::Other);
    }

    #[test]
    fn failure_skipped_and_structured_lines_read_with_their_dashes() {
        let p = prune_of("1 tool prune: agent=a name=t outcome=failed reason=guest_trap limit=fuel");
        assert_eq!((p.outcome.as_str(), p.raw_chars), ("failed", None));
        let p = prune_of("1 tool prune: agent=a name=t outcome=skipped gate=repeated raw_chars=9000 kept_chars=9000 paragraphs=- dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=offline");
        assert_eq!((p.gate.as_deref(), p.paragraphs), (Some("repeated"), None));
        let p = prune_of("1 tool prune: agent=a name=t outcome=structured raw_chars=9000 kept_chars=9000 paragraphs=- dropped=0 calls=0 jev_tokens=0 ms=- threshold=0.2 ratio=- scorer=offline");
        assert_eq!(p.paragraphs, None);
        let o = parse("1 tool omitted: agent=- outcome=failed reason=guest_trap").unwrap();
        assert!(matches!(o.kind, Kind::Omitted(Omitted { ref outcome, id: None, chars: 0, .. }) if outcome == "failed"));
    }

    #[test]
    fn malformed_and_truncated_lines_are_corrupt() {
        for line in [
            "",
            "tool prune: agent=a name=t outcome=ok",
            "17x tool prune: agent=a name=t outcome=ok",
            "1 tool prune: agent=a name=t",
            "1 tool prune: agent=a outcome=ok raw_chars=1 kept_chars=1",
            "1 tool prune: agent=a name=t outcome=ok raw_chars=12",
            "1 tool prune: agent=a name=t outcome=ok raw_chars=12 kept_chars=x",
            "1 tool prune: agent=a name=t outcome=ok raw_chars=12 kept_chars=20",
            "1 tool prune: agent=a name=t outcome=OK! raw_chars=12 kept_chars=2",
            "1 tool prune: agent=a name=t outcome=ok raw_chars=12 kept_ch",
            "1 tool omitted: agent=a id=P1 from=1 to=2 chars=abc outcome=ok",
            "1 tool omitted: id=P1 outcome=ok",
            "1 garbage without a kind",
            "1 Se=ssion tool prune: agent=a name=t outcome=ok",
        ] {
            assert!(parse(line).is_err(), "{line:?}");
        }
    }
}
