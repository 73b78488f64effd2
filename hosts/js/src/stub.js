// The stub scorer (the Rust host's `StubScorer`, same numbers): a
// deterministic word-overlap stand-in for tests. Not a relevance model.

const WORD = /[\p{Alphabetic}\p{N}]+/gu;

/** Distinct lowercased words of at least 4 characters. */
function words(text) {
  const out = new Set();
  for (const w of text.match(WORD) ?? []) {
    let n = 0;
    for (const _ of w) if (++n >= 4) break;
    if (n >= 4) out.add(w.toLowerCase());
  }
  return out;
}

/** The stub's score of one chunk against the basis's words, or undefined. */
function scoreWords(basis, chunk) {
  if (basis.size === 0) return undefined;
  const have = words(chunk);
  let shared = 0;
  for (const w of basis) if (have.has(w)) shared += 1;
  return Math.min(1, (2 * shared) / basis.size);
}

/**
 * **A stub, not a relevance model.** Scores a paragraph by the share of the
 * basis's words (≥ 4 characters, lowercased) it contains, doubled and capped
 * at 1; a basis without such words leaves everything unscored. Never fails.
 */
export function stubScorer() {
  const scoreSync = (request) => {
    const start = performance.now();
    const basis = words(request.basis);
    const answers = request.batches.map((batch) => ({
      tag: 'scores',
      val: batch.chunks.map((chunk) => scoreWords(basis, chunk)),
    }));
    return { answers: { tag: 'ok', val: answers }, elapsedMs: Math.floor(performance.now() - start) };
  };
  return Object.freeze({
    name: 'stub',
    scoreSync,
    async score(request) {
      return scoreSync(request);
    },
  });
}
