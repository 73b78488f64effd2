//! The word-overlap stub scorer: a stand-in for tests and demos, not a
//! relevance model. Hosts answer a `scoring-request` with it through the
//! `stub-scores` export, so every host's stub gives the same scores.
//!
//! A word is a run of alphanumeric characters of at least 4 characters,
//! lower-cased. A chunk's score is `min(1, 2 × shared / basis words)` over
//! the basis's distinct words; none when the basis has no word.

use std::collections::BTreeSet;

use crate::types::{BatchAnswer, ScoringRequest, ScoringResponse};

fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| w.chars().nth(3).is_some()).map(str::to_lowercase).collect()
}

fn score(basis: &BTreeSet<String>, chunk: &str) -> Option<f64> {
    if basis.is_empty() {
        return None;
    }
    let chunk = words(chunk);
    let shared = basis.iter().filter(|w| chunk.contains(*w)).count();
    Some((2.0 * shared as f64 / basis.len() as f64).min(1.0))
}

/// One `scores` answer per batch; `elapsed-ms` 0 (the host puts its own measure).
pub fn scores(request: &ScoringRequest) -> ScoringResponse {
    let basis = words(&request.basis);
    let answers = request
        .batches
        .iter()
        .map(|b| BatchAnswer::Scores(b.chunks.iter().map(|c| score(&basis, c)).collect()))
        .collect();
    ScoringResponse { answers: Ok(answers), elapsed_ms: 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stub_scores_the_share_of_basis_words_doubled_and_capped() {
        // Basis words of ≥ 4 characters: resume, broken, stream (3).
        let basis = words("How to resume a broken SSE stream?");
        assert_eq!(score(&basis, "Nothing related."), Some(0.0));
        assert_eq!(score(&basis, "A STREAM can break."), Some(2.0 / 3.0));
        assert_eq!(score(&basis, "resume the broken stream"), Some(1.0));
        assert_eq!(score(&words("a b c"), "anything"), None);
    }
}
