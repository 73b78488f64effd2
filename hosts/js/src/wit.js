// The WIT values jco gives, in the host's public shapes. Names are the
// guest's enum cases converted generically (kebab-case → snake_case, the
// SPEC's spelling); there is no list of them here.

/** `no-basis` → `no_basis`; undefined → null. */
export function snake(name) {
  return name === undefined || name === null ? null : String(name).replaceAll('-', '_');
}

/** `wall_time` → `wall-time` (a SPEC name back to the WIT case); undefined → undefined. */
export function kebab(name) {
  return name === undefined || name === null ? undefined : String(name).replaceAll('_', '-');
}

/**
 * The counts of the `tool prune:` line; `ms` null when nothing was
 * measured, `paragraphs` null when nothing was split; `work`: the guest's
 * work units for the result (SPEC §7; u64 as a Number).
 */
export function counts(c) {
  return {
    rawChars: c.rawChars,
    keptChars: c.keptChars,
    paragraphs: c.paragraphs ?? null,
    dropped: c.dropped,
    calls: c.calls,
    jevTokens: Number(c.jevTokens),
    ms: c.ms ?? null,
    work: Number(c.work),
  };
}

export function paragraphReport(p) {
  return { index: p.index, chars: p.chars, score: p.score ?? null, fate: snake(p.fate) };
}

export function batchFailure(f) {
  return { batch: f.batch, status: f.status ?? null, class: snake(f.class) };
}

/** `pruner.inspect`'s answer. */
export function inspection(i) {
  return {
    shape: snake(i.shape),
    wrapperSpan: i.wrapperSpan ? [i.wrapperSpan[0], i.wrapperSpan[1]] : null,
    units: i.units.map((u) => ({
      index: u.index,
      byteStart: u.byteStart,
      byteEnd: u.byteEnd,
      charStart: u.charStart,
      charEnd: u.charEnd,
      kind: snake(u.kind),
    })),
  };
}

/** `settings.config` with `jev` split into the endpoint (or null) and why not. */
export function config(c) {
  const jev = c.jev.tag === 'ok' ? c.jev.val : null;
  return {
    enabled: c.enabled,
    threshold: c.threshold,
    lang: c.lang,
    jev: jev && { route: jev.route, url: jev.url, model: jev.model ?? null, loopback: jev.loopback },
    jevError: c.jev.tag === 'err' ? c.jev.val : null,
    tokenVariable: c.tokenVariable,
    prunable: [...c.prunable],
    store: { maxRecords: c.store.maxRecords, maxChars: Number(c.store.maxChars), maxAgeS: Number(c.store.maxAgeS) },
    proxyBasis: c.proxyBasis,
  };
}

/** Where a decision keeps the guest's answer as jco gave it (for `report.route-json`), not enumerable by name. */
export const GUEST_DECISION = Symbol('toolprune.guest-decision');

/** The judge's decision. */
export function decision(d) {
  const v = d.verdict;
  const out = {
    verdict: v.tag,
    to: v.tag === 'routed' ? Array.from(v.val) : null,
    note: v.tag === 'returned' ? (v.val ?? null) : null,
    reason: v.tag === 'failed' ? snake(v.val) : null,
    rule: d.rule ?? null,
    answers: d.answers.map((a) => ({
      question: a.question,
      kind: a.kind,
      value: a.value ?? null,
      p: a.p,
      margin: a.margin ?? null,
      mean: a.mean ?? null,
    })),
    jevTokens: Number(d.jevTokens),
    logLine: d.logLine,
  };
  Object.defineProperty(out, GUEST_DECISION, { value: d, enumerable: false });
  return out;
}
