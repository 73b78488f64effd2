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
//!    "Security implications" matches "security".
//! 2. Queries: the whole basis, and each of its sentences (a request with a
//!    second topic — "Also, …" — gets that topic ranked on its own).
//! 3. BM25 (`k1` = [`K1`], `b` = [`B`]), IDF over the document's paragraphs,
//!    `idf = ln(1 + (N − n + 0.5) / (n + 0.5))`, query terms distinct.
//! 4. `n_i = max over queries q of bm25_q(i) / max_j bm25_q(j)`: the share of
//!    the best paragraph's score, in [0, 1].
//! 5. `own_i = n_i ^ e` with `e = GAMMA · min(1, coverage / COVERAGE_REF)`,
//!    where `coverage` is the share of distinct basis terms found anywhere in
//!    the document. With the document speaking the request's vocabulary
//!    (`e` = 2) a paragraph must reach √t of the best one to pass threshold
//!    `t` (0.1 → 32 %, 0.2 → 45 %, 0.3 → 55 %, 0.5 → 71 %); when the
//!    vocabulary is missing (a Japanese request on an English page), `e`
//!    falls toward 0 and scores rise toward 1: what it cannot see, it keeps.
//! 6. Context: `base_i = max(own_i, SECTION_SHARE · sec_i)` where `sec_i` is
//!    the same score (steps 2–5) computed over sections (a heading to the next
//!    heading; none when the document has a single section) instead of
//!    paragraphs; then `score_i = max(base_i,
//!    NEIGHBOUR_SHARE · base_{i±1})` — the code block after a relevant
//!    sentence, the sentence after a relevant heading. Both shares are below
//!    0.5, so the strongest threshold keeps only paragraphs that match on
//!    their own.
//!
//! A paragraph that matches nothing scores 0. An empty basis, or one made of
//! stop words only, scores every paragraph 0 (all below any threshold: the
//! caller drops nothing). The measured table on `../shared/corpus` is the
//! ignored test `corpus_reduction_and_recall_per_threshold`.

use std::collections::BTreeSet;

/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation.
pub const B: f64 = 0.75;
/// Exponent of the max-normalised score when the document has the request's
/// vocabulary.
pub const GAMMA: f64 = 2.0;
/// Coverage at and above which the exponent is the full [`GAMMA`].
pub const COVERAGE_REF: f64 = 0.9;
/// A paragraph scores at least this share of its section's score.
pub const SECTION_SHARE: f64 = 0.4;
/// A paragraph scores at least this share of its neighbours' scores.
pub const NEIGHBOUR_SHARE: f64 = 0.4;

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

/// The scorer's knobs; [`score`] uses [`Params::SHIPPED`]. The measurement
/// test compares variants (ablation) with the same code.
#[derive(Debug, Clone, Copy)]
pub struct Params {
    /// Each sentence of the basis is also its own query (step 2).
    pub sentences: bool,
    /// Paragraph tokens include the headings above them (step 1).
    pub headings: bool,
    pub gamma: f64,
    /// 0 disables the coverage factor (`e = gamma`).
    pub coverage_ref: f64,
    pub section_share: f64,
    pub neighbour_share: f64,
}

impl Params {
    pub const SHIPPED: Params = Params {
        sentences: true,
        headings: true,
        gamma: GAMMA,
        coverage_ref: COVERAGE_REF,
        section_share: SECTION_SHARE,
        neighbour_share: NEIGHBOUR_SHARE,
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

/// A document for BM25: its own tokens and its context (heading) tokens.
type Doc = (Vec<String>, Vec<String>);

/// BM25 contribution of each query term to each document: `[doc][term]`.
/// `terms` is sorted and distinct.
fn bm25_matrix(terms: &[String], docs: &[Doc]) -> Vec<Vec<f64>> {
    let n = docs.len();
    let nt = terms.len();
    let mut tf = vec![vec![0u32; nt]; n];
    let mut df = vec![0u32; nt];
    let mut lens = vec![0.0f64; n];
    for (d, (own, ctx)) in docs.iter().enumerate() {
        for t in own.iter().chain(ctx) {
            if let Ok(k) = terms.binary_search(t) {
                tf[d][k] += 1;
            }
        }
        for k in 0..nt {
            if tf[d][k] > 0 {
                df[k] += 1;
            }
        }
        lens[d] = (own.len() + ctx.len()) as f64;
    }
    let nf = n as f64;
    let avg = (lens.iter().sum::<f64>() / nf.max(1.0)).max(1.0);
    (0..n)
        .map(|d| {
            (0..nt)
                .map(|k| {
                    if tf[d][k] == 0 {
                        return 0.0;
                    }
                    let f = tf[d][k] as f64;
                    let dk = df[k] as f64;
                    let idf = (1.0 + (nf - dk + 0.5) / (dk + 0.5)).ln();
                    idf * f * (K1 + 1.0) / (f + K1 * (1.0 - B + B * lens[d] / avg))
                })
                .collect()
        })
        .collect()
}

/// For each query (term indices): each document's BM25 divided by the best
/// document's; a document's result is its best query. In [0, 1].
fn best_normalised(matrix: &[Vec<f64>], queries: &[Vec<usize>]) -> Vec<f64> {
    let mut out = vec![0.0_f64; matrix.len()];
    for q in queries {
        let raw: Vec<f64> = matrix
            .iter()
            .map(|row| q.iter().map(|&k| row[k]).sum::<f64>())
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

/// Heading state carried from paragraph to paragraph: the open fence, the
/// underline characters seen (their order gives their level), the heading
/// path as (level, title, number of the paragraph that holds the heading).
#[derive(Default)]
struct Outline {
    fence: Option<(char, usize)>,
    underlines: Vec<char>,
    path: Vec<(usize, String, usize)>,
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
        for line in text.lines() {
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
        self.path.push((level, title.to_string(), self.paragraph));
    }

    /// After [`read`](Self::read): the tokens of the headings the paragraph
    /// just read sits under, without its own (they are in its text). A
    /// paragraph that opens a new section does not inherit the previous one.
    fn context_tokens(&self) -> Vec<String> {
        self.path
            .iter()
            .filter(|(_, _, p)| *p < self.paragraph)
            .flat_map(|(_, t, _)| tokens(t))
            .collect()
    }
}

/// Scores with explicit knobs (see the module documentation for the steps).
pub fn score_with(basis: &str, paragraphs: &[&str], p: Params) -> Vec<f64> {
    let n = paragraphs.len();
    let terms: Vec<String> = tokens(basis)
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    if n == 0 || terms.is_empty() {
        return vec![0.0; n];
    }
    // Step 2: the whole basis, then each sentence with terms of its own.
    let mut queries: Vec<Vec<usize>> = vec![(0..terms.len()).collect()];
    if p.sentences {
        for s in sentences(basis) {
            let set: BTreeSet<String> = tokens(s).into_iter().collect();
            let q: Vec<usize> = (0..terms.len())
                .filter(|&k| set.contains(&terms[k]))
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
    for (i, t) in paragraphs.iter().enumerate() {
        if outline.read(t) && i > 0 {
            sections += 1;
        }
        let ctx = if p.headings {
            outline.context_tokens()
        } else {
            Vec::new()
        };
        section[i] = sections;
        docs.push((tokens(t), ctx));
    }
    // Step 5: the exponent from the coverage of the basis terms.
    let mut seen = vec![false; terms.len()];
    for t in docs.iter().flat_map(|d| &d.0) {
        if let Ok(k) = terms.binary_search(t) {
            seen[k] = true;
        }
    }
    let coverage = seen.iter().filter(|s| **s).count() as f64 / terms.len() as f64;
    let e = if p.coverage_ref > 0.0 {
        p.gamma * (coverage / p.coverage_ref).min(1.0)
    } else {
        p.gamma
    };
    let shape = |s: f64| {
        if s > 0.0 && s.is_finite() {
            s.min(1.0).powf(e)
        } else {
            0.0
        }
    };

    // Steps 3–5 per paragraph.
    let mut out: Vec<f64> = best_normalised(&bm25_matrix(&terms, &docs), &queries)
        .into_iter()
        .map(shape)
        .collect();
    // Step 6: sections (own tokens of their paragraphs + the headings above);
    // a document with a single section has no section context.
    if p.section_share > 0.0 && sections > 0 {
        let mut sdocs: Vec<Doc> = vec![(Vec::new(), Vec::new()); sections + 1];
        for (i, d) in docs.iter().enumerate() {
            if i == 0 || section[i] != section[i - 1] {
                sdocs[section[i]].1 = d.1.clone();
            }
            sdocs[section[i]].0.extend(d.0.iter().cloned());
        }
        let sec = best_normalised(&bm25_matrix(&terms, &sdocs), &queries);
        for i in 0..n {
            out[i] = out[i].max(p.section_share * shape(sec[section[i]]));
        }
    }
    // Step 6: neighbours.
    if p.neighbour_share > 0.0 {
        let base = out.clone();
        for i in 0..n {
            let prev = if i > 0 { base[i - 1] } else { 0.0 };
            let next = if i + 1 < n { base[i + 1] } else { 0.0 };
            out[i] = out[i].max(p.neighbour_share * prev.max(next));
        }
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

/// Scores in [0, 1] per paragraph, in order, against the basis.
pub fn score(basis: &str, paragraphs: &[&str]) -> Vec<f64> {
    score_with(basis, paragraphs, Params::SHIPPED)
}


/// Number of features per paragraph ([`features`]).
pub const NF: usize = 14;
/// The features' names, in order.
pub const FEATURE_NAMES: [&str; NF] = [
    "legacy", "rel", "cov_own", "cov_ctx", "cov_head", "sec_rel", "sec_cov", "nb_rel", "nb_cov", "rank", "code",
    "loglen", "doc_cov", "sec_rank",
];

/// Share of `q`'s IDF mass whose terms occur (`present[k]`).
fn coverage(q: &[usize], idf: &[f64], present: impl Fn(usize) -> bool) -> f64 {
    let total: f64 = q.iter().map(|&k| idf[k]).sum();
    if total <= 0.0 {
        return 0.0;
    }
    q.iter().filter(|&&k| present(k)).map(|&k| idf[k]).sum::<f64>() / total
}

/// Share of the characters in items strictly better than each item.
fn rank_share(values: &[f64], chars: &[usize]) -> Vec<f64> {
    let total: f64 = chars.iter().sum::<usize>().max(1) as f64;
    let mut order: Vec<usize> = (0..values.len()).collect();
    order.sort_by(|&a, &b| values[b].total_cmp(&values[a]).then(a.cmp(&b)));
    let mut out = vec![0.0; values.len()];
    let mut above = 0usize;
    let mut k = 0;
    while k < order.len() {
        let mut j = k;
        while j < order.len() && values[order[j]] == values[order[k]] {
            j += 1;
        }
        for &i in &order[k..j] {
            out[i] = above as f64 / total;
        }
        for &i in &order[k..j] {
            above += chars[i];
        }
        k = j;
    }
    out
}

fn fence_share(text: &str) -> f64 {
    let mut fence: Option<(char, usize)> = None;
    let (mut inside, mut lines) = (0usize, 0usize);
    for line in text.lines() {
        lines += 1;
        let t = line.trim_start();
        let first = t.chars().next().unwrap_or(' ');
        if first == '`' || first == '~' {
            let run = t.chars().take_while(|&c| c == first).count();
            if run >= 3 {
                inside += 1;
                fence = match fence {
                    None => Some((first, run)),
                    Some((c, n)) if c == first && run >= n => None,
                    f => f,
                };
                continue;
            }
        }
        if fence.is_some() {
            inside += 1;
        }
    }
    if lines == 0 {
        0.0
    } else {
        inside as f64 / lines as f64
    }
}

/// The section number of each paragraph (a heading opens the next).
pub fn sections_of(paragraphs: &[&str]) -> Vec<usize> {
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

/// Per paragraph, the [`NF`] features named in [`FEATURE_NAMES`].
pub fn features(basis: &str, paragraphs: &[&str]) -> Vec<[f64; NF]> {
    let n = paragraphs.len();
    let terms: Vec<String> = tokens(basis).into_iter().collect::<BTreeSet<_>>().into_iter().collect();
    if n == 0 || terms.is_empty() {
        return vec![[0.0; NF]; n];
    }
    let nt = terms.len();
    let legacy = score(basis, paragraphs);
    let mut queries: Vec<Vec<usize>> = vec![(0..nt).collect()];
    for s in sentences(basis) {
        let set: BTreeSet<String> = tokens(s).into_iter().collect();
        let q: Vec<usize> = (0..nt).filter(|&k| set.contains(&terms[k])).collect();
        if !q.is_empty() && !queries.contains(&q) {
            queries.push(q);
        }
    }
    let mut outline = Outline::default();
    let mut section = vec![0usize; n];
    let mut docs: Vec<Doc> = Vec::with_capacity(n);
    let mut head: Vec<Vec<bool>> = Vec::with_capacity(n);
    let mut sections = 0usize;
    for (i, t) in paragraphs.iter().enumerate() {
        if outline.read(t) && i > 0 {
            sections += 1;
        }
        section[i] = sections;
        let ctx = outline.context_tokens();
        let mut h = vec![false; nt];
        for t in outline.path.iter().flat_map(|(_, t, _)| tokens(t)) {
            if let Ok(k) = terms.binary_search(&t) {
                h[k] = true;
            }
        }
        head.push(h);
        docs.push((tokens(t), ctx));
    }
    let chars: Vec<usize> = paragraphs.iter().map(|p| p.chars().count()).collect();
    // Presence and document frequency (own tokens + heading context).
    let mut own = vec![vec![false; nt]; n];
    let mut ctx = vec![vec![false; nt]; n];
    let mut df = vec![0usize; nt];
    for (i, (o, c)) in docs.iter().enumerate() {
        for t in o {
            if let Ok(k) = terms.binary_search(t) {
                own[i][k] = true;
            }
        }
        for t in c {
            if let Ok(k) = terms.binary_search(t) {
                ctx[i][k] = true;
            }
        }
        for k in 0..nt {
            if own[i][k] || ctx[i][k] {
                df[k] += 1;
            }
        }
    }
    let nf = n as f64;
    let idf: Vec<f64> = df.iter().map(|&d| (1.0 + (nf - d as f64 + 0.5) / (d as f64 + 0.5)).ln()).collect();
    let best = |f: &dyn Fn(&[usize]) -> f64| queries.iter().map(|q| f(q)).fold(0.0_f64, f64::max);
    let rel = best_normalised(&bm25_matrix(&terms, &docs), &queries);
    let cov_own: Vec<f64> = (0..n).map(|i| best(&|q| coverage(q, &idf, |k| own[i][k]))).collect();
    let cov_ctx: Vec<f64> = (0..n).map(|i| best(&|q| coverage(q, &idf, |k| own[i][k] || ctx[i][k]))).collect();
    let cov_head: Vec<f64> = (0..n).map(|i| best(&|q| coverage(q, &idf, |k| head[i][k]))).collect();
    // Sections.
    let ns = sections + 1;
    let mut sdocs: Vec<Doc> = vec![(Vec::new(), Vec::new()); ns];
    let mut schars = vec![0usize; ns];
    let mut spresent = vec![vec![false; nt]; ns];
    for (i, d) in docs.iter().enumerate() {
        let s = section[i];
        if i == 0 || section[i] != section[i - 1] {
            sdocs[s].1 = d.1.clone();
        }
        sdocs[s].0.extend(d.0.iter().cloned());
        schars[s] += chars[i];
        for k in 0..nt {
            spresent[s][k] |= own[i][k] || ctx[i][k];
        }
    }
    let srel = if ns > 1 { best_normalised(&bm25_matrix(&terms, &sdocs), &queries) } else { vec![0.0; ns] };
    let scov: Vec<f64> = (0..ns).map(|s| best(&|q| coverage(q, &idf, |k| spresent[s][k]))).collect();
    let srank = rank_share(&srel, &schars);
    let rank = rank_share(&rel, &chars);
    let mut seen = vec![false; nt];
    for i in 0..n {
        for k in 0..nt {
            seen[k] |= own[i][k];
        }
    }
    let doc_cov = seen.iter().filter(|s| **s).count() as f64 / nt as f64;
    (0..n)
        .map(|i| {
            let nb = |v: &[f64]| {
                let p = if i > 0 { v[i - 1] } else { 0.0 };
                let x = if i + 1 < n { v[i + 1] } else { 0.0 };
                p.max(x)
            };
            [
                legacy[i],
                rel[i],
                cov_own[i],
                cov_ctx[i],
                cov_head[i],
                srel[section[i]],
                scov[section[i]],
                nb(&rel),
                nb(&cov_ctx),
                rank[i],
                fence_share(paragraphs[i]),
                (chars[i].max(1) as f64).ln() / 6000f64.ln(),
                doc_cov,
                srank[section[i]],
            ]
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<String> {
        tokens(s)
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
        let path: Vec<&str> = o.path.iter().map(|(_, t, _)| t.as_str()).collect();
        assert_eq!(path, ["Security implications", "Providers"]);
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
    fn a_paragraph_that_matches_nothing_scores_zero() {
        let s = score(
            "Last-Event-ID resume",
            &[
                "Navigation: home, about, contact.",
                "Sponsors and partners.",
                "Resume with the Last-Event-ID header.",
                "Footer text.",
                "More footer.",
            ],
        );
        assert_eq!(s[0], 0.0);
        assert_eq!(s[4], 0.0);
        assert_eq!(s[2], 1.0);
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
            "omega omega omega omega",
            "lambda",
            "alpha omega beta gamma delta epsilon zeta eta theta iota kappa",
            "mu",
            "nu",
        ];
        // Every basis term is in the document: full exponent.
        let full = score("omega", &paras);
        // One basis term of ten is: the exponent falls, partial scores rise.
        let sparse = score("omega one two three four five six seven eight nine", &paras);
        assert_eq!(full[0], 1.0);
        assert_eq!(sparse[0], 1.0);
        assert!(full[2] > 0.0 && sparse[2] > full[2], "{full:?} {sparse:?}");
        // Matching nothing still scores 0, away from a match.
        assert_eq!(full[4], 0.0);
        assert_eq!(sparse[4], 0.0);
    }

    #[test]
    fn neighbours_of_a_relevant_paragraph_keep_part_of_its_score() {
        let s = score("omega", &["alpha", "beta", "omega", "gamma", "delta"]);
        assert_eq!(s, [0.0, NEIGHBOUR_SHARE, 1.0, NEIGHBOUR_SHARE, 0.0]);
    }

    #[test]
    fn paragraphs_under_a_matching_heading_keep_part_of_its_score() {
        let paras = [
            "# Install\n\nRun the installer.",
            "It takes a minute.",
            "Then restart the shell.",
            "# Security implications\n\nPlugins run code.",
            "Mirrors can be compromised.",
            "Pin hashes.",
            "# License\n\nMIT.",
            "Copyright the authors.",
        ];
        let s = score("What are the security implications?", &paras);
        // Paragraph 5 shares no word with the basis but sits in the section.
        assert!(s[5] >= SECTION_SHARE, "{s:?}");
        assert!(s[1] < crate::limits::DEFAULT_THRESHOLD, "{s:?}");
        // The next section does not inherit the heading: paragraph 6 is kept
        // only as the neighbour of paragraph 5, paragraph 7 not at all.
        assert_eq!(s[6], NEIGHBOUR_SHARE * s[5], "{s:?}");
        assert!(s[7] < crate::limits::DEFAULT_THRESHOLD, "{s:?}");
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
