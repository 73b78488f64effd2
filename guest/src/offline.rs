//! A deterministic offline relevance scorer (SPEC §14: "a scorer that is not
//! Jev … may answer with scores directly"). No network, no model, no data
//! files: Okapi BM25 over the document's own paragraphs, mapped to [0, 1].
//!
//! **Tokens** ([`tokens`]): the text is case-folded (`to_lowercase`). Runs of
//! alphanumeric characters of space-separated scripts are words; a word joined
//! by `-` or `_` (`Last-Event-ID`, `model_validator`) yields its pieces *and*
//! the whole compound (`last-event-id`), so an identifier matches exactly and
//! its parts match loosely. A light plural fold maps `headers` → `header`,
//! `classes` → `class`, `libraries` → `library` (not `-ss`, `-us`, `-is`, nor
//! words under 4 letters; measured: without it recall at 0.2 falls 95 → 92 %;
//! `-ing`/`-ed` stemming measured no gain). English stop words and
//! question words ([`STOP_WORDS`]) are dropped. Runs of CJK characters (Han,
//! Hiragana, Katakana, Hangul) yield character bigrams (a lone character
//! yields itself), so `監視対象` matches `監視` and `対象` with no dictionary.
//! Everything else separates tokens.
//!
//! **Relevance** ([`score`]), for paragraphs `i` of one document:
//!
//! 1. Each paragraph's tokens are its own plus those of the headings it sits
//!    under (Markdown `#`, Setext / reStructuredText underlines; fenced code
//!    is skipped; a paragraph that opens a section has its own heading in its
//!    text and inherits only that heading's ancestors), so a paragraph inside
//!    "Security implications" matches "security". Inherited heading words
//!    count [`HEADING_WEIGHT`] (2) times, in term frequency and in length.
//!    A section runs from a paragraph holding a heading to the next one.
//! 2. Queries: the whole basis, and each of its sentences (a request with a
//!    second topic — "Also, …" — gets that topic ranked on its own). A query
//!    term weighs its number of occurrences in the basis.
//! 3. BM25 (`k1` = [`K1`] = 2.0, `b` = [`B`] = 0.5), IDF over the document's
//!    paragraphs, `idf = ln(1 + (N − n + 0.5) / (n + 0.5))`.
//! 4. `n_i = max over queries q of bm25_q(i) / max_j bm25_q(j)`: the share of
//!    the best paragraph's score, in [0, 1].
//! 5. `own_i = n_i ^ e` with `e = GAMMA · min(1, coverage / COVERAGE_REF)`
//!    ([`GAMMA`] = 4, [`COVERAGE_REF`] = 0.9), where `coverage` is the share
//!    of distinct basis terms found anywhere in the document. When the
//!    vocabulary is missing (a Japanese request on an English page), `e`
//!    falls toward 0 and every matching paragraph rises toward 1: what it
//!    cannot see, it does not rank.
//! 6. Context, in two passes. Inside its section (none when the document
//!    has no heading: a log, a JSON array's elements), `base_i = max over j of own_j · SECTION_DECAY^|i−j|`
//!    ([`SECTION_DECAY`] = 0.4; `j = i` gives `own_i`): the code block and
//!    the sentences after a relevant one, fading with distance, never
//!    across a heading. Then, across sections, `ctx_i = max(base_i,
//!    NEIGHBOUR_SHARE · max(base_{i−1}, base_{i+1}), BRIDGE_SHARE ·
//!    min(base_{i−1}, base_{i+1}))` ([`NEIGHBOUR_SHARE`] = 0.3,
//!    [`BRIDGE_SHARE`] = 0.5): the paragraph after a relevant heading, and
//!    one paragraph between two relevant ones.
//! 7. Calibration by relevance mass: with `m_j = ctx_j ^ MASS_EXPONENT`
//!    ([`MASS_EXPONENT`] = 0.6), `score_i = 1 − (Σ m_j over paragraphs with
//!    ctx_j > ctx_i) / Σ m_j`, and 0 when `ctx_i` = 0. The best paragraph
//!    scores 1, and threshold `t` keeps the best paragraphs until they hold
//!    `1 − t` of the document's relevance mass (ties together): 0.2 keeps
//!    80 % of it, on every document, however peaked or flat its BM25
//!    scores are. (Before, `t` cut the max-normalised score itself, and the
//!    lowest score of a paragraph holding a needed snippet ran from 0.10 to
//!    0.66 across the corpus' documents.)
//!
//! A paragraph that matches nothing and is out of every match's context
//! scores 0. An empty basis, or one made of stop words only, scores every
//! paragraph 0 (all below any threshold: the caller drops nothing). Every
//! loop runs in index order and sorts break ties by index, so the same text
//! and request give the same bits in every host (the component is the only
//! place this runs).
//!
//! **How the constants were chosen** (`guest/examples/offline_eval.rs`, a
//! dev-only harness that runs the real decision path natively: gates,
//! splitting, the 25 % floor, markers counted, exactly as `toolprune eval`):
//! a search over the knobs of [`Params`] on `../shared/corpus` and its
//! labels, for the best mean net reduction at threshold 0.2 with recall of
//! needed snippets ≥ 97.5 %, checked by leave-one-document-out
//! cross-validation (the RFC's CRLF and LF copies held out together). The
//! README's "Offline scorer" section has the numbers, what was tried, and
//! what did not help.

use std::collections::BTreeSet;

/// BM25 term-frequency saturation.
pub const K1: f64 = 2.0;
/// BM25 length normalisation.
pub const B: f64 = 0.5;
/// Each heading word above a paragraph counts this many times in its term
/// frequencies and length (field weighting of headings).
pub const HEADING_WEIGHT: f64 = 2.0;
/// Exponent of the max-normalised score when the document has the request's
/// vocabulary.
pub const GAMMA: f64 = 4.0;
/// Coverage at and above which the exponent is the full [`GAMMA`].
pub const COVERAGE_REF: f64 = 0.9;
/// Inside a section, a paragraph scores at least this factor to the power
/// of its distance times another paragraph's score.
pub const SECTION_DECAY: f64 = 0.4;
/// A paragraph scores at least this share of its better neighbour's score.
pub const NEIGHBOUR_SHARE: f64 = 0.3;
/// A paragraph scores at least this share of its weaker neighbour's score
/// (so one paragraph between two kept ones is kept).
pub const BRIDGE_SHARE: f64 = 0.5;
/// Exponent of the relevance mass in the calibration.
pub const MASS_EXPONENT: f64 = 0.6;
/// Below this [`evidence`] (share of the basis's terms found in the text)
/// the offline scorer abstains (SPEC §5). Chosen on `../shared/corpus` and
/// `../shared/cases` (docs/evaluation.md "Abstention").
pub const MIN_EVIDENCE: f64 = 0.3;

/// English stop words and question words: frequent, carry no topic. Sorted
/// (binary search).
pub const STOP_WORDS: &[&str] = &[
    "a", "about", "above", "after", "again", "against", "all", "also", "am", "an", "and", "any",
    "are", "as", "at", "be", "because", "been", "before", "being", "below", "between", "both",
    "but", "by", "can", "cannot", "could", "did", "do", "does", "doing", "don", "down", "during",
    "each", "else", "etc", "few", "for", "from", "further", "had", "has", "have", "having", "he",
    "her", "here", "hers", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its",
    "itself", "just", "let", "like", "ll", "me", "might", "more", "most", "must", "my", "no",
    "nor", "not", "now", "of", "off", "on", "once", "only", "or", "other", "our", "ours", "out",
    "over", "own", "re", "s", "same", "she", "should", "so", "some", "such", "t", "than", "that",
    "the", "their", "theirs", "them", "then", "there", "these", "they", "this", "those", "through",
    "to", "too", "under", "until", "up", "us", "ve", "very", "was", "we", "were", "what", "when",
    "where", "which", "while", "who", "whom", "why", "will", "with", "would", "you", "your",
    "yours",
];

/// The scorer's knobs; [`score`] uses [`Params::SHIPPED`] (the constants
/// above). Public so that the dev harness (`guest/examples/offline_eval.rs`)
/// can measure variants through the same code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Params {
    /// Each sentence of the basis is also its own query (step 2).
    pub sentences: bool,
    /// Paragraph tokens include the headings above them (step 1).
    pub headings: bool,
    /// A query term weighs its number of occurrences in the basis (step 2);
    /// else 1.
    pub query_counts: bool,
    pub k1: f64,
    pub b: f64,
    pub heading_weight: f64,
    pub gamma: f64,
    /// 0 disables the coverage factor (`e = gamma`).
    pub coverage_ref: f64,
    /// 0 disables the section context.
    pub section_decay: f64,
    pub neighbour_share: f64,
    pub bridge_share: f64,
    /// 0 disables the calibration (the context scores are the scores).
    pub mass_exponent: f64,
}

impl Params {
    /// The shipped scorer.
    pub const SHIPPED: Params = Params {
        sentences: true,
        headings: true,
        query_counts: true,
        k1: K1,
        b: B,
        heading_weight: HEADING_WEIGHT,
        gamma: GAMMA,
        coverage_ref: COVERAGE_REF,
        section_decay: SECTION_DECAY,
        neighbour_share: NEIGHBOUR_SHARE,
        bridge_share: BRIDGE_SHARE,
        mass_exponent: MASS_EXPONENT,
    };
}

fn is_stop(word: &str) -> bool {
    STOP_WORDS.binary_search(&word).is_ok()
}

/// Han, Hiragana, Katakana (full and half width), Hangul.
fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3005..=0x3007          // 々 〆 〇
        | 0x3040..=0x309F        // Hiragana
        | 0x30A0..=0x30FF        // Katakana (incl. ー)
        | 0x31F0..=0x31FF        // Katakana phonetic extensions
        | 0x3400..=0x4DBF        // Han extension A
        | 0x4E00..=0x9FFF        // Han
        | 0xF900..=0xFAFF        // Han compatibility
        | 0xFF66..=0xFF9F        // half-width Katakana
        | 0x1100..=0x11FF        // Hangul Jamo
        | 0x3130..=0x318F        // Hangul compatibility Jamo
        | 0xAC00..=0xD7AF        // Hangul syllables
        | 0x20000..=0x2FFFF      // Han extensions B–F
    )
}

/// The light plural fold: `headers` → `header`, `classes` → `class`,
/// `libraries` → `library`; not `-ss`, `-us`, `-is`, nor words under 4
/// letters, nor non-ASCII words.
fn fold_plural(word: &str) -> std::borrow::Cow<'_, str> {
    let n = word.len();
    if n < 4
        || !word.is_ascii()
        || word.ends_with("ss")
        || word.ends_with("us")
        || word.ends_with("is")
    {
        return word.into();
    }
    if word.ends_with("sses") {
        return word[..n - 2].into();
    }
    if n > 4 && word.ends_with("ies") {
        return format!("{}y", &word[..n - 3]).into();
    }
    word.strip_suffix('s').unwrap_or(word).into()
}

fn push_word(out: &mut Vec<String>, word: &str) {
    if !word.is_empty() && !is_stop(word) {
        out.push(fold_plural(word).into_owned());
    }
}

/// A word run (alphanumerics joined by `-`/`_`): its pieces, then the compound.
fn push_compound(out: &mut Vec<String>, run: &str) {
    let run = run.trim_matches(['-', '_']);
    let mut pieces = 0;
    for piece in run.split(['-', '_']).filter(|p| !p.is_empty()) {
        pieces += 1;
        push_word(out, piece);
    }
    if pieces > 1 {
        out.push(run.to_string());
    }
}

fn push_cjk(out: &mut Vec<String>, run: &[char]) {
    if run.len() == 1 {
        out.push(run[0].to_string());
    } else {
        out.extend(run.windows(2).map(|w| w.iter().collect::<String>()));
    }
}

/// The tokenizer: case folding, words (with `-`/`_` compounds), plural fold,
/// stop words dropped, CJK character bigrams. See the module documentation.
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk: Vec<char> = Vec::new();
    for c in text.chars().flat_map(char::to_lowercase) {
        if is_cjk(c) {
            if !word.is_empty() {
                push_compound(&mut out, &word);
                word.clear();
            }
            cjk.push(c);
            continue;
        }
        if !cjk.is_empty() {
            push_cjk(&mut out, &cjk);
            cjk.clear();
        }
        if c.is_alphanumeric() || ((c == '-' || c == '_') && !word.is_empty()) {
            word.push(c);
        } else if !word.is_empty() {
            push_compound(&mut out, &word);
            word.clear();
        }
    }
    if !word.is_empty() {
        push_compound(&mut out, &word);
    }
    if !cjk.is_empty() {
        push_cjk(&mut out, &cjk);
    }
    out
}

/// The sentences of the basis: split after `?`, `!`, `？`, `！`, `。`, a line
/// break, and a `.` followed by whitespace or the end.
fn sentences(basis: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut it = basis.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        let end = match c {
            '?' | '!' | '？' | '！' | '。' | '\n' => true,
            '.' => it.peek().is_none_or(|(_, n)| n.is_whitespace()),
            _ => false,
        };
        if end {
            let j = i + c.len_utf8();
            out.push(&basis[start..j]);
            start = j;
        }
    }
    if start < basis.len() {
        out.push(&basis[start..]);
    }
    out
}

/// A text read once against the basis terms: how many tokens it has, how
/// many of them are CJK bigrams, and the basis terms among them, in order
/// (indices into the sorted, distinct terms). Everything the scorer needs
/// of a token after [`tokens`]: each is tokenized and looked up once.
#[derive(Default)]
struct Read {
    len: usize,
    cjk: usize,
    hits: Vec<usize>,
}

impl Read {
    fn add(&mut self, terms: &[String], t: &str) {
        self.len += 1;
        if is_cjk_token(t) {
            self.cjk += 1;
        }
        if let Ok(k) = terms.binary_search_by(|x| x.as_str().cmp(t)) {
            self.hits.push(k);
        }
    }

    fn of<'a>(terms: &[String], tokens: impl IntoIterator<Item = &'a str>) -> Read {
        let mut r = Read::default();
        for t in tokens {
            r.add(terms, t);
        }
        r
    }
}

/// A document for BM25: its own text and its context (headings), read.
type Doc = (Read, Read);

/// BM25 contribution of each query term to each document: `[doc][term]`.
/// `terms` is sorted and distinct; heading tokens count `heading_weight`
/// times. IDF over the documents: `ln(1 + (N − n + 0.5) / (n + 0.5))`.
fn bm25_matrix(terms: &[String], docs: &[Doc], p: &Params) -> Vec<Vec<f64>> {
    let n = docs.len();
    let nt = terms.len();
    let mut tf = vec![vec![0f64; nt]; n];
    let mut df = vec![0u32; nt];
    let mut lens = vec![0.0f64; n];
    for (d, (own, ctx)) in docs.iter().enumerate() {
        for &k in &own.hits {
            tf[d][k] += 1.0;
        }
        for &k in &ctx.hits {
            tf[d][k] += p.heading_weight;
        }
        for k in 0..nt {
            if tf[d][k] > 0.0 {
                df[k] += 1;
            }
        }
        lens[d] = own.len as f64 + p.heading_weight * ctx.len as f64;
    }
    let nf = n as f64;
    let avg = (lens.iter().sum::<f64>() / nf.max(1.0)).max(1.0);
    let idf: Vec<f64> = df
        .iter()
        .map(|&d| (1.0 + (nf - d as f64 + 0.5) / (d as f64 + 0.5)).ln())
        .collect();
    (0..n)
        .map(|d| {
            (0..nt)
                .map(|k| {
                    let f = tf[d][k];
                    if f == 0.0 {
                        return 0.0;
                    }
                    idf[k] * f * (p.k1 + 1.0) / (f + p.k1 * (1.0 - p.b + p.b * lens[d] / avg))
                })
                .collect()
        })
        .collect()
}

/// For each query (term index, weight): each document's weighted BM25
/// divided by the best document's; a document's result is its best query.
/// In [0, 1].
fn best_normalised(matrix: &[Vec<f64>], queries: &[Vec<(usize, f64)>]) -> Vec<f64> {
    let mut out = vec![0.0_f64; matrix.len()];
    for q in queries {
        let raw: Vec<f64> = matrix
            .iter()
            .map(|row| q.iter().map(|&(k, w)| w * row[k]).sum::<f64>())
            .collect();
        let max = raw.iter().copied().fold(0.0_f64, f64::max);
        if !(max > 0.0 && max.is_finite()) {
            continue;
        }
        for (o, r) in out.iter_mut().zip(&raw) {
            *o = o.max(r / max);
        }
    }
    out
}

/// Step 7: `1 − (Σ m_j over paragraphs scoring strictly more) / Σ m_j` with
/// `m_j = s_j ^ exponent`; a paragraph scoring 0 stays 0. The best
/// paragraph scores 1; a threshold `t` keeps the best paragraphs until they
/// hold `1 − t` of the mass (ties together).
fn calibrate(scores: &[f64], exponent: f64) -> Vec<f64> {
    let mass: Vec<f64> = scores.iter().map(|s| s.max(0.0).powf(exponent)).collect();
    let total: f64 = mass.iter().sum();
    if !(total > 0.0 && total.is_finite()) {
        return scores.to_vec();
    }
    let n = scores.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut out = vec![0.0; n];
    let mut above = 0.0;
    let mut k = 0;
    while k < n {
        let mut j = k;
        while j < n && scores[order[j]] == scores[order[k]] {
            j += 1;
        }
        for &i in &order[k..j] {
            out[i] = if scores[i] > 0.0 { 1.0 - above / total } else { 0.0 };
        }
        for &i in &order[k..j] {
            above += mass[i];
        }
        k = j;
    }
    out
}

/// Heading state carried from paragraph to paragraph: the open fence, the
/// underline characters seen (their order gives their level), the heading
/// path as (level, the title's [`tokens`], number of the paragraph that
/// holds the heading).
#[derive(Default)]
struct Outline {
    fence: Option<(char, usize)>,
    underlines: Vec<char>,
    path: Vec<(usize, Vec<String>, usize)>,
    paragraph: usize,
}

impl Outline {
    /// Read one paragraph: whether it holds a heading; updates the path.
    /// Headings are ATX (`#`…, level = count) or a text line underlined with
    /// one of `=-~^*+#` (Setext, reStructuredText; level = order of first
    /// appearance of the character). Fenced code (``` or ~~~) is skipped.
    fn read(&mut self, text: &str) -> bool {
        self.paragraph += 1;
        let mut found = false;
        let mut prev: &str = "";
        // CommonMark's line ends: a lone `\r` ends a line too, so a CR-only
        // text has the headings of its LF twin.
        for line in crate::split::line_texts(text) {
            let t = line.trim_start();
            let indent = line.len() - t.len();
            let first = t.chars().next().unwrap_or(' ');
            if indent <= 3 && (first == '`' || first == '~') {
                let run = t.chars().take_while(|&c| c == first).count();
                if run >= 3 {
                    match self.fence {
                        None => self.fence = Some((first, run)),
                        Some((c, n)) if c == first && run >= n && t[run..].trim().is_empty() => {
                            self.fence = None
                        }
                        _ => {}
                    }
                    prev = "";
                    continue;
                }
            }
            if self.fence.is_some() {
                continue;
            }
            if indent <= 3 && first == '#' {
                let hashes = t.chars().take_while(|&c| c == '#').count();
                if hashes <= 6 && t[hashes..].starts_with([' ', '\t']) {
                    self.push(
                        hashes,
                        t[hashes..].trim_matches(|c: char| c == '#' || c.is_whitespace()),
                    );
                    found = true;
                    prev = "";
                    continue;
                }
            }
            let u = t.trim_end();
            let title = prev.trim();
            if indent == 0
                && u.len() >= 3
                && "=-~^*+#".contains(first)
                && u.chars().all(|c| c == first)
                && title.chars().any(char::is_alphanumeric)
            {
                let level = match self.underlines.iter().position(|&c| c == first) {
                    Some(k) => k + 1,
                    None => {
                        self.underlines.push(first);
                        self.underlines.len()
                    }
                };
                self.push(level, title);
                found = true;
            }
            prev = line;
        }
        found
    }

    fn push(&mut self, level: usize, title: &str) {
        while self.path.last().is_some_and(|(l, _, _)| *l >= level) {
            self.path.pop();
        }
        self.path.push((level, tokens(title), self.paragraph));
    }

    /// After [`read`](Self::read): the tokens of the headings the paragraph
    /// just read sits under, without its own (they are in its text). A
    /// paragraph that opens a new section does not inherit the previous one.
    fn context_tokens(&self) -> impl Iterator<Item = &str> {
        self.path
            .iter()
            .filter(|(_, _, p)| *p < self.paragraph)
            .flat_map(|(_, t, _)| t.iter().map(String::as_str))
    }
}

fn is_cjk_token(t: &str) -> bool {
    t.chars().next().is_some_and(is_cjk)
}

/// The two statistics [`evidence`] multiplies, in [0, 1]: `coverage`, the
/// share of the basis's distinct terms ([`tokens`]: words, compounds, CJK
/// character bigrams; stop words dropped) that occur anywhere in the
/// paragraphs; and `reach`, the share of the paragraphs' tokens written in a
/// script the basis has terms in (CJK bigrams, or words), i.e. how much of
/// the text the basis could match at all. Both 0 for a basis without terms.
pub fn evidence_parts(basis: &str, paragraphs: &[&str]) -> (f64, f64) {
    let terms = terms_of(&tokens(basis));
    let read = read_all(&terms, paragraphs);
    evidence_of(&terms, &read)
}

/// The basis's terms: its tokens, sorted and distinct.
fn terms_of(basis_tokens: &[String]) -> Vec<String> {
    basis_tokens.iter().cloned().collect::<BTreeSet<_>>().into_iter().collect()
}

/// Every paragraph tokenized and [`Read`] against `terms`, once.
fn read_all(terms: &[String], paragraphs: &[&str]) -> Vec<Read> {
    paragraphs.iter().map(|p| Read::of(terms, tokens(p).iter().map(String::as_str))).collect()
}

/// [`evidence_parts`] of paragraphs already [`Read`] against `terms`.
fn evidence_of(terms: &[String], paragraphs: &[Read]) -> (f64, f64) {
    if terms.is_empty() {
        return (0.0, 0.0);
    }
    let (basis_cjk, basis_words) = (terms.iter().any(|t| is_cjk_token(t)), terms.iter().any(|t| !is_cjk_token(t)));
    let mut seen = vec![false; terms.len()];
    let (mut all, mut reachable) = (0usize, 0usize);
    for p in paragraphs {
        all += p.len;
        if basis_cjk {
            reachable += p.cjk;
        }
        if basis_words {
            reachable += p.len - p.cjk;
        }
        for &k in &p.hits {
            seen[k] = true;
        }
    }
    let reach = if all == 0 { 0.0 } else { reachable as f64 / all as f64 };
    (seen.iter().filter(|s| **s).count() as f64 / terms.len() as f64, reach)
}

/// The evidence the offline scorer has for `basis` in this document (SPEC
/// §5): `coverage × reach` ([`evidence_parts`]), in [0, 1]. Low when the
/// text shares few of the request's terms (a Japanese request on an English
/// page) or when most of the text is in a script the request has no terms
/// in (an English request on a Japanese page, matched only in its code).
pub fn evidence(basis: &str, paragraphs: &[&str]) -> f64 {
    product(evidence_parts(basis, paragraphs))
}

/// The evidence from its parts: `coverage × reach`.
fn product((coverage, reach): (f64, f64)) -> f64 {
    coverage * reach
}

/// The offline scorer as the guest runs it: [`score_with`] the shipped
/// knobs, or none — it **abstains** — when its [`evidence`] is below
/// [`MIN_EVIDENCE`] (SPEC §5: a lexical scorer that shares almost no terms
/// with the text knows nothing, and its ranking is noise; every paragraph is
/// then unscored, and the outcome is `nothing_dropped`).
pub fn score_or_abstain(basis: &str, paragraphs: &[&str]) -> Option<Vec<f64>> {
    // Each paragraph is tokenized once, for the evidence and the scores.
    let basis_tokens = tokens(basis);
    let terms = terms_of(&basis_tokens);
    let read = read_all(&terms, paragraphs);
    (product(evidence_of(&terms, &read)) >= MIN_EVIDENCE).then(|| score_read(basis, &basis_tokens, &terms, paragraphs, read, Params::SHIPPED))
}

/// Scores with explicit knobs (see the module documentation for the steps).
pub fn score_with(basis: &str, paragraphs: &[&str], p: Params) -> Vec<f64> {
    let basis_tokens = tokens(basis);
    let terms = terms_of(&basis_tokens);
    let read = read_all(&terms, paragraphs);
    score_read(basis, &basis_tokens, &terms, paragraphs, read, p)
}

/// [`score_with`] of paragraphs already [`Read`] against `terms` (the
/// basis's, from `basis_tokens`).
fn score_read(basis: &str, basis_tokens: &[String], terms: &[String], paragraphs: &[&str], read: Vec<Read>, p: Params) -> Vec<f64> {
    let n = paragraphs.len();
    if n == 0 || terms.is_empty() {
        return vec![0.0; n];
    }
    // Step 2: term weights (occurrences in the basis, or 1); the whole
    // basis, then each sentence with terms of its own.
    let mut weight = vec![if p.query_counts { 0.0 } else { 1.0 }; terms.len()];
    if p.query_counts {
        for t in basis_tokens {
            if let Ok(k) = terms.binary_search(t) {
                weight[k] += 1.0;
            }
        }
    }
    let mut queries: Vec<Vec<(usize, f64)>> =
        vec![(0..terms.len()).map(|k| (k, weight[k])).collect()];
    if p.sentences {
        for s in sentences(basis) {
            let set: BTreeSet<String> = tokens(s).into_iter().collect();
            let q: Vec<(usize, f64)> = (0..terms.len())
                .filter(|&k| set.contains(&terms[k]))
                .map(|k| (k, weight[k]))
                .collect();
            if !q.is_empty() && !queries.contains(&q) {
                queries.push(q);
            }
        }
    }
    // Step 1: paragraph tokens, heading context, sections.
    let mut outline = Outline::default();
    let mut section = vec![0usize; n];
    let mut docs: Vec<Doc> = Vec::with_capacity(n);
    let mut sections = 0usize;
    for ((i, t), own) in paragraphs.iter().enumerate().zip(read) {
        if outline.read(t) && i > 0 {
            sections += 1;
        }
        let ctx = if p.headings {
            Read::of(terms, outline.context_tokens())
        } else {
            Read::default()
        };
        section[i] = sections;
        docs.push((own, ctx));
    }
    // Step 5: the exponent from the coverage of the basis terms.
    let mut seen = vec![false; terms.len()];
    for d in &docs {
        for &k in &d.0.hits {
            seen[k] = true;
        }
    }
    let coverage = seen.iter().filter(|s| **s).count() as f64 / terms.len() as f64;
    let e = if p.coverage_ref > 0.0 {
        p.gamma * (coverage / p.coverage_ref).min(1.0)
    } else {
        p.gamma
    };
    // Steps 3–5 per paragraph.
    let shape = |s: f64| {
        if s > 0.0 && s.is_finite() {
            s.min(1.0).powf(e)
        } else {
            0.0
        }
    };
    let own: Vec<f64> = best_normalised(&bm25_matrix(&terms, &docs, &p), &queries)
        .into_iter()
        .map(shape)
        .collect();
    let mut out = context(&own, &section, &p);
    // Step 7: calibration by relevance mass.
    if p.mass_exponent > 0.0 {
        out = calibrate(&out, p.mass_exponent);
    }
    out.into_iter()
        .map(|s| {
            if s.is_finite() {
                s.clamp(0.0, 1.0) + 0.0
            } else {
                0.0
            }
        })
        .collect()
}

/// Step 6: context. Inside a section (none when the document has no
/// heading), the best of the others' scores decayed by distance; then the
/// neighbours, across sections: a share of the better one, and a larger
/// share of the weaker one (a paragraph between two kept ones).
fn context(own: &[f64], section: &[usize], p: &Params) -> Vec<f64> {
    let n = own.len();
    let mut base = own.to_vec();
    if p.section_decay > 0.0 && section.last().is_some_and(|&s| s > 0) {
        for i in 0..n {
            let mut f = 1.0;
            for j in (0..i).rev().take_while(|&j| section[j] == section[i]) {
                f *= p.section_decay;
                if f <= base[i] {
                    break; // own ≤ 1: no farther paragraph can do better
                }
                base[i] = base[i].max(f * own[j]);
            }
            let mut f = 1.0;
            for j in (i + 1..n).take_while(|&j| section[j] == section[i]) {
                f *= p.section_decay;
                if f <= base[i] {
                    break;
                }
                base[i] = base[i].max(f * own[j]);
            }
        }
    }
    let mut out = base.clone();
    for i in 0..n {
        let prev = if i > 0 { base[i - 1] } else { 0.0 };
        let next = if i + 1 < n { base[i + 1] } else { 0.0 };
        out[i] = out[i]
            .max(p.neighbour_share * prev.max(next))
            .max(p.bridge_share * prev.min(next));
    }
    out
}

/// The section number of each paragraph, as step 1 counts them (a
/// paragraph holding a heading opens the next section); for measurement.
pub fn section_numbers(paragraphs: &[&str]) -> Vec<usize> {
    let mut outline = Outline::default();
    let mut sections = 0;
    paragraphs
        .iter()
        .enumerate()
        .map(|(i, t)| {
            if outline.read(t) && i > 0 {
                sections += 1;
            }
            sections
        })
        .collect()
}

/// Scores in [0, 1] per paragraph, in order, against the basis, whatever
/// the evidence (the ranking alone; the guest runs [`score_or_abstain`]).
pub fn score(basis: &str, paragraphs: &[&str]) -> Vec<f64> {
    score_with(basis, paragraphs, Params::SHIPPED)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        tokens(s)
    }

    #[test]
    fn without_evidence_the_scorer_abstains_in_both_directions_and_on_a_mixed_page() {
        let en = ["How does a client resume a dropped stream with the Last-Event-ID header after a disconnection?", "The server may replay the missed events on the resumed stream."];
        let ja = ["クライアントは切断後にストリームを再開するとき、最後のイベントIDを送ります。", "サーバーは再開されたストリームで失われたイベントを再送できます。"];
        // Same language: evidence, scores.
        assert!(score_or_abstain("How does a client resume a dropped stream?", &en).is_some());
        assert!(score_or_abstain("ストリームの再開はどうしますか？", &ja).is_some());
        // A Japanese request on an English page, an English one on a Japanese page: none.
        assert!(evidence("ストリームの再開はどうしますか？", &en) < MIN_EVIDENCE);
        assert_eq!(score_or_abstain("ストリームの再開はどうしますか？", &en), None);
        assert_eq!(score_or_abstain("How does a client resume a dropped stream?", &ja), None);
        // An English request that matches only the identifiers of a Japanese page: none.
        let code = ["`Last-Event-ID` ヘッダーでクライアントはストリームを再開し、サーバーは失われたイベントを再送します。"];
        assert!(evidence_parts("resume with Last-Event-ID", &code).0 > 0.3);
        assert_eq!(score_or_abstain("resume with Last-Event-ID", &code), None);
        // A mixed page whose English half holds the request's words: scores.
        let mixed = [ja[0], en[0], en[1], en[0], en[1], en[0], en[1]];
        assert!(score_or_abstain("How does a client resume a dropped stream after a disconnection?", &mixed).is_some());
        // No terms at all (stop words): no evidence.
        assert_eq!(score_or_abstain("what is the", &en), None);
    }

    #[test]
    fn a_cr_only_text_scores_as_its_lf_twin() {
        let lf = "# Streams\nResuming a stream after a disconnection uses the Last-Event-ID header.\n\n## Other\nNothing about that here: colours, fonts and the weather.\n\nThe server replays the events the client missed.";
        let paragraphs_lf: Vec<&str> = lf.split("\n\n").collect();
        let cr = lf.replace('\n', "\r");
        let paragraphs_cr: Vec<&str> = cr.split("\r\r").collect();
        let basis = "How does a client resume a stream after a disconnection?";
        assert_eq!(section_numbers(&paragraphs_cr), section_numbers(&paragraphs_lf));
        assert_eq!(score(basis, &paragraphs_cr), score(basis, &paragraphs_lf));
    }

    #[test]
    fn stop_words_are_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn english_is_case_folded_split_at_punctuation_and_stripped_of_stop_words() {
        assert_eq!(
            toks("How do I resume the SSE Stream?"),
            ["resume", "sse", "stream"]
        );
        assert_eq!(
            toks("Why can't I index a String, (really)!"),
            ["index", "string", "really"]
        );
        assert_eq!(
            toks("The headers; the classes, libraries and status."),
            ["header", "class", "library", "status"]
        );
    }

    #[test]
    fn identifiers_keep_their_pieces_and_the_whole() {
        assert_eq!(
            toks("Last-Event-ID"),
            ["last", "event", "id", "last-event-id"]
        );
        assert_eq!(
            toks("model_validator(mode='after')"),
            ["model", "validator", "model_validator", "mode"]
        );
        assert_eq!(toks("--check-cfg"), ["check", "cfg", "check-cfg"]);
        assert_eq!(toks("a .nvmrc file"), ["nvmrc", "file"]);
    }

    #[test]
    fn japanese_runs_become_character_bigrams() {
        assert_eq!(toks("監視対象"), ["監視", "視対", "対象"]);
        assert_eq!(
            toks("ウォッチャー"),
            ["ウォ", "ォッ", "ッチ", "チャ", "ャー"]
        );
        assert_eq!(toks("値"), ["値"]);
        // CJK punctuation separates runs.
        assert_eq!(toks("停止、再開"), ["停止", "再開"]);
    }

    #[test]
    fn mixed_text_splits_between_scripts() {
        assert_eq!(
            toks("MCPのStreamable HTTPトランスポート"),
            [
                "mcp",
                "の",
                "streamable",
                "http",
                "トラ",
                "ラン",
                "ンス",
                "スポ",
                "ポー",
                "ート"
            ]
        );
        assert_eq!(
            toks("`watchEffect` は同期的"),
            ["watcheffect", "は同", "同期", "期的"]
        );
        assert_eq!(toks("한국어 문서"), ["한국", "국어", "문서"]);
    }

    #[test]
    fn basis_sentences_split_at_question_marks_and_full_stops() {
        assert_eq!(
            sentences("How do I resume? Also, when is v2.0 used. ああ。いい"),
            [
                "How do I resume?",
                " Also, when is v2.0 used.",
                " ああ。",
                "いい"
            ]
        );
    }

    #[test]
    fn outline_finds_atx_setext_and_rst_headings_outside_fences() {
        let mut o = Outline::default();
        assert!(o.read("## Streamable HTTP\n\ntext"));
        assert!(!o.read("```sh\n# not a heading\n```"));
        assert!(o.read("Security implications\n=====================\n"));
        assert!(o.read("Providers\n---------\n"));
        let path: Vec<&[String]> = o.path.iter().map(|(_, t, _)| t.as_slice()).collect();
        assert_eq!(path, [&toks("Security implications")[..], &toks("Providers")[..]]);
        assert_eq!(toks("Security implications"), ["security", "implication"]);
    }

    fn assert_unit_interval(scores: &[f64], n: usize) {
        assert_eq!(scores.len(), n);
        for s in scores {
            assert!(s.is_finite() && (0.0..=1.0).contains(s), "{s}");
        }
    }

    #[test]
    fn scores_are_finite_and_in_the_unit_interval_for_degenerate_inputs() {
        assert!(score("resume the stream", &[]).is_empty());
        assert_eq!(score("", &["a", "b"]), [0.0, 0.0]);
        assert_eq!(score("the and of", &["the stream", "of"]), [0.0, 0.0]);
        assert_eq!(score("resume the stream", &["", ""]), [0.0, 0.0]);
        assert_unit_interval(&score("resume the stream", &["resume a stream"]), 1);
        assert_unit_interval(&score("resume", &["resume", "", "resume resume"]), 3);
        assert_unit_interval(&score("???", &["!!!", "。。。"]), 2);
        assert_unit_interval(&score("監視", &["監視", "監"]), 2);
    }

    #[test]
    fn a_single_matching_paragraph_scores_one() {
        assert_eq!(
            score("resume the stream", &["How to resume a stream."]),
            [1.0]
        );
    }

    #[test]
    fn a_paragraph_that_matches_nothing_away_from_a_match_scores_zero() {
        let s = score(
            "Last-Event-ID resume",
            &[
                "# Navigation\n\nhome, about, contact.",
                "# Sponsors\n\nand partners.",
                "# Resuming\n\nResume with the Last-Event-ID header.",
                "# Footer\n\ntext.",
                "# Colophon\n\nMore footer.",
            ],
        );
        assert_eq!(s[0], 0.0);
        assert_eq!(s[4], 0.0);
        assert_eq!(s[2], 1.0);
        // Without headings there is no section context (a log, a JSON
        // array's elements): only the neighbours of the match score.
        let flat = score(
            "Last-Event-ID resume",
            &["home, about, contact.", "Sponsors and partners.", "Resume with the Last-Event-ID header.", "Footer text.", "More footer."],
        );
        assert_eq!(flat[2], 1.0);
        assert_eq!((flat[0], flat[4]), (0.0, 0.0), "{flat:?}");
        assert!(flat[1] > 0.0 && flat[3] > 0.0, "{flat:?}");
    }

    #[test]
    fn identical_input_gives_identical_bits() {
        let paras = [
            "## Resumability\n\nServers MAY attach an id.",
            "Clients SHOULD send Last-Event-ID.",
            "監視対象のソース",
            "unrelated",
        ];
        let a: Vec<u64> = score("How does a client resume with Last-Event-ID? 監視", &paras)
            .iter()
            .map(|s| s.to_bits())
            .collect();
        for _ in 0..5 {
            let b: Vec<u64> = score("How does a client resume with Last-Event-ID? 監視", &paras)
                .iter()
                .map(|s| s.to_bits())
                .collect();
            assert_eq!(a, b);
        }
    }

    #[test]
    fn a_paragraph_with_the_requests_rare_terms_outranks_boilerplate() {
        let boiler = "This documentation is maintained by the community. Please read the contributing guide, \
                      check the license, and follow the code of conduct of the project.";
        let paras = [
            boiler,
            "## Installation\n\nInstall the package with your package manager and configure the client.",
            boiler,
            "If the connection drops, the client resumes the SSE stream by sending a GET with the \
             Last-Event-ID header; the server replays missed messages.",
            boiler,
            "## License\n\nMIT. Copyright the authors.",
        ];
        let s = score(
            "How does the client resume a dropped SSE stream with Last-Event-ID?",
            &paras,
        );
        assert_eq!(s[3], 1.0);
        for (i, v) in s.iter().enumerate() {
            if i != 3 {
                assert!(*v < s[3], "paragraph {i}: {v} vs {}", s[3]);
            }
        }
        assert!(
            s[0] < crate::limits::DEFAULT_THRESHOLD && s[5] < crate::limits::DEFAULT_THRESHOLD,
            "{s:?}"
        );
    }

    #[test]
    fn a_japanese_request_matches_japanese_paragraphs() {
        let paras = [
            "ウォッチャーを停止するには、返されたハンドル関数を使用します。",
            "副作用のクリーンアップ: 古いリクエストをキャンセルするには onWatcherCleanup を使います。",
            "パートナー企業の一覧とスポンサーについてはこちら。",
        ];
        let s = score(
            "監視対象が変わったときに古いリクエストをキャンセルするには？",
            &paras,
        );
        assert_eq!(s[1], 1.0);
        assert!(s[2] < s[1] && s[0] < s[1], "{s:?}");
    }

    #[test]
    fn the_second_topic_of_a_request_is_ranked_on_its_own() {
        // Without sentence queries the long first topic would dominate.
        let paras = [
            "The client resumes the stream: reconnect, send Last-Event-ID, the server replays events and messages.",
            "Unrelated: installation, upgrades and licensing.",
            "The MCP-Protocol-Version header is sent on every request.",
        ];
        let s = score("How does the client resume the stream and replay events and messages? Also, when is the protocol version header sent?", &paras);
        assert!(s[2] >= 0.5, "{s:?}");
    }

    #[test]
    fn a_document_without_the_requests_vocabulary_is_scored_leniently() {
        let paras = [
            "# Alef\n\nomega omega omega omega",
            "# Bet\n\nlambda",
            "# Gimel\n\nalpha omega beta gamma delta epsilon zeta eta theta iota kappa",
            "# Dalet\n\nmu",
            "# Vav\n\nnu",
        ];
        // Every basis term is in the document: full exponent.
        let full = raw("omega", &paras, true);
        // One basis term of ten is: the exponent falls, partial scores rise.
        let sparse = raw("omega one two three four five six seven eight nine", &paras, true);
        assert_eq!(full[0], 1.0);
        assert_eq!(sparse[0], 1.0);
        assert!(full[2] > 0.0 && sparse[2] > full[2], "{full:?} {sparse:?}");
        // Matching nothing still scores 0, away from a match.
        assert_eq!(full[4], 0.0);
        assert_eq!(sparse[4], 0.0);
        // Calibrated, the sparse request keeps at least what the full one keeps.
        let t = crate::limits::DEFAULT_THRESHOLD;
        let kept = |s: &[f64]| s.iter().filter(|v| **v >= t).count();
        assert!(kept(&score("omega one two three four five six seven eight nine", &paras)) >= kept(&score("omega", &paras)));
    }

    /// The context scores before calibration (steps 1–6).
    fn raw(basis: &str, paras: &[&str], headings: bool) -> Vec<f64> {
        score_with(basis, paras, Params { mass_exponent: 0.0, headings, ..Params::SHIPPED })
    }

    #[test]
    fn neighbours_across_sections_keep_a_share_of_the_better_one() {
        let s = raw("omega", &["# Intro\n\nalpha", "# Main\n\nomega", "# Other\n\ngamma", "delta"], true);
        assert_eq!(s, [NEIGHBOUR_SHARE, 1.0, NEIGHBOUR_SHARE, 0.0]);
    }

    #[test]
    fn a_paragraph_between_two_relevant_ones_keeps_the_bridge_share() {
        let s = raw("omega", &["# One\n\nomega", "# Two\n\nbeta", "# Three\n\nomega"], true);
        assert_eq!(s, [1.0, BRIDGE_SHARE, 1.0]);
    }

    #[test]
    fn inside_a_section_relevance_decays_with_distance_and_stops_at_the_next_heading() {
        let paras = [
            "# Security implications\n\nPlugins run code.",
            "Mirrors can be compromised.",
            "Pin hashes.",
            "# License\n\nMIT.",
            "Copyright the authors.",
        ];
        // Without heading words in the paragraphs' tokens, only the section
        // context reaches paragraphs 1 and 2.
        let s = raw("What are the security implications?", &paras, false);
        let d2 = SECTION_DECAY * SECTION_DECAY;
        assert_eq!(s, [1.0, SECTION_DECAY, d2, NEIGHBOUR_SHARE * d2, 0.0]);
        // With them (the shipped scorer), paragraphs 1 and 2 match through
        // the heading above them, and the next section does not inherit it.
        let s = score("What are the security implications?", &paras);
        assert!(s[1] >= crate::limits::DEFAULT_THRESHOLD && s[2] >= crate::limits::DEFAULT_THRESHOLD, "{s:?}");
        assert!(s[3] < crate::limits::DEFAULT_THRESHOLD && s[4] < crate::limits::DEFAULT_THRESHOLD, "{s:?}");
    }

    #[test]
    fn calibration_scores_one_minus_the_mass_of_better_paragraphs() {
        let c = calibrate(&[1.0, 0.5, 0.5, 0.0, 0.25], 1.0);
        let total = 2.25;
        assert_eq!(c, [1.0, 1.0 - 1.0 / total, 1.0 - 1.0 / total, 0.0, 1.0 - 2.0 / total]);
        // The exponent flattens the mass: more paragraphs share the top.
        let flat = calibrate(&[1.0, 0.5, 0.25], 0.5);
        let m = [1.0, 0.5f64.sqrt(), 0.5];
        let total: f64 = m.iter().sum();
        assert_eq!(flat, [1.0, 1.0 - 1.0 / total, 1.0 - (1.0 + m[1]) / total]);
        // Nothing to calibrate: unchanged.
        assert_eq!(calibrate(&[0.0, 0.0], 0.6), [0.0, 0.0]);
        assert!(calibrate(&[], 0.6).is_empty());
    }

    #[test]
    fn a_threshold_keeps_the_best_paragraphs_until_they_hold_its_complement_of_the_mass() {
        let scores = [0.9, 0.05, 0.6, 0.3, 0.1, 0.0, 0.45];
        for t in crate::limits::THRESHOLDS {
            let c = calibrate(&scores, MASS_EXPONENT);
            let mass: Vec<f64> = scores.iter().map(|s: &f64| s.powf(MASS_EXPONENT)).collect();
            let total: f64 = mass.iter().sum();
            for i in 0..scores.len() {
                let above: f64 = (0..scores.len()).filter(|&j| scores[j] > scores[i]).map(|j| mass[j]).sum();
                let kept = c[i] >= t;
                assert_eq!(kept, scores[i] > 0.0 && above / total <= 1.0 - t, "t={t} i={i}: {c:?}");
            }
        }
    }

    mod prop {
        use super::super::*;
        use proptest::prelude::*;

        proptest! {
            #[test]
            fn score_never_panics_and_stays_in_the_unit_interval(
                basis in "\\PC{0,80}",
                paras in proptest::collection::vec("(\\PC|\n){0,200}", 0..12),
            ) {
                let refs: Vec<&str> = paras.iter().map(String::as_str).collect();
                let s = score(&basis, &refs);
                prop_assert_eq!(s.len(), refs.len());
                for v in &s {
                    prop_assert!(v.is_finite() && (0.0..=1.0).contains(v));
                }
                let again = score(&basis, &refs);
                prop_assert_eq!(s.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), again.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
            }

            #[test]
            fn score_handles_structured_markdown_and_cjk(
                words in proptest::collection::vec(prop_oneof![
                    Just("# Title\n".to_string()), Just("```\n".to_string()), Just("===\n".to_string()),
                    Just("stream".to_string()), Just("監視".to_string()), Just("Last-Event-ID".to_string()),
                    Just("\n\n".to_string()), Just(" ".to_string()), Just("-_-".to_string()),
                ], 0..60),
                cut in 0usize..60,
            ) {
                let text = words.concat();
                let paras: Vec<&str> = text.split("\n\n").collect();
                let basis = words[..cut.min(words.len())].concat();
                let s = score(&basis, &paras);
                prop_assert_eq!(s.len(), paras.len());
                for v in &s {
                    prop_assert!(v.is_finite() && (0.0..=1.0).contains(v));
                }
            }
        }
    }
}
