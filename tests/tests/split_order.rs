//! SPEC §4: each splitting step and their order, seen through the
//! component's `paragraphs` export, its reports and the scoring request.

use serde_json::Value;
use toolprune::types::{Fate, Lang, UnitKind};
use toolprune_tests::*;

fn kinds(text: &str) -> Vec<UnitKind> {
    infos(text).iter().map(|p| p.kind).collect()
}

fn lengths(text: &str) -> Vec<usize> {
    spans(text).iter().map(|s| chars(s)).collect()
}

#[test]
fn paragraph_spans_tile_the_text_in_bytes_and_characters() {
    let text = format!("{}\r\n\r\nβ → ü {}\n\n{}", prose(0, 200), prose(1, 300), "末尾の段落です。".repeat(30));
    let infos = infos(&text);
    let (mut byte, mut ch) = (0, 0);
    for (i, p) in infos.iter().enumerate() {
        assert_eq!(p.index as usize, i, "numbered from 0 in order");
        assert_eq!((p.byte_start as usize, p.char_start as usize), (byte, ch));
        let slice = &text[p.byte_start as usize..p.byte_end as usize];
        assert_eq!((p.char_end - p.char_start) as usize, chars(slice));
        byte = p.byte_end as usize;
        ch = p.char_end as usize;
    }
    assert_eq!((byte, ch), (text.len(), chars(&text)));
    assert_eq!(spans(&text).concat(), text);
}

#[test]
fn a_fence_is_one_unit_across_blank_lines() {
    let fence = "```rust\nfn main() {\n\n    let client = UploadClient::new();\n\n\n    client.set_retry_limit(5);\n    client.upload(\"big.bin\");\n}\n```\n\n";
    let text = format!("{}\n\n{fence}{}\n\n{}\n", prose(0, 300), prose(1, 300), prose(2, 300));
    let spans = spans(&text);
    assert_eq!(spans.len(), 4);
    assert_eq!(spans[1], fence, "the fence and its blank lines are one paragraph");
}

#[test]
fn an_unclosed_fence_runs_to_the_end() {
    let tail = "~~~sh\nupload --retry-limit 3 big.bin\n\n\necho first attempt done\n\necho second attempt done\n\necho the fence never closes, so this line and all after it stay inside\n";
    let text = format!("{}\n\n{}\n\n{tail}", prose(0, 300), prose(1, 300));
    assert!(chars(tail) >= 120, "long enough not to merge");
    let spans = spans(&text);
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[2], tail);
}

#[test]
fn fences_in_list_items_and_block_quotes_are_fences() {
    let list = "- step one:\n\n  ```yaml\n  retries: 3\n\n  backoff: 2\n  ```\n\n";
    let quote = "> ```\n> first line of quoted code\n>\n> second line of quoted code\n> ```\n\n";
    let text = format!("{}\n\n{list}{}\n\n{quote}{}\n", prose(0, 300), prose(1, 300), prose(2, 300));
    let spans = spans(&text);
    let holding = |needle: &str| spans.iter().position(|s| s.contains(needle)).unwrap();
    assert_eq!(holding("retries: 3"), holding("backoff: 2"));
    assert_eq!(holding("first line of quoted"), holding("second line of quoted"));
}

#[test]
fn blank_lines_split_whatever_their_line_end() {
    let (a, b, c) = (prose(0, 200), prose(1, 200), prose(2, 200));
    for sep in ["\n\n", "\r\n\r\n", "\r\r", "\n   \n", "\n\t\n\n"] {
        let text = format!("{a}{sep}{b}{sep}{c}");
        assert_eq!(spans(&text), vec![format!("{a}{sep}"), format!("{b}{sep}"), c.clone()], "separator {sep:?}");
    }
}

#[test]
fn a_short_paragraph_before_a_fence_merges_into_it() {
    let fence = "```python\nclient = UploadClient(endpoint)\nclient.retry_limit = 5\n\nclient.upload(path, chunk_size=8 * 1024 * 1024)\n```\n\n";
    let text = format!("{}\n\nExample:\n\n{fence}{}\n", prose(0, 300), prose(1, 300));
    let spans = spans(&text);
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[1], format!("Example:\n\n{fence}"));
}

#[test]
fn short_paragraphs_accumulate_left_to_right_until_120() {
    // Ten blocks of 32 characters: the accumulator reaches 128 after four.
    let shorts: Vec<String> = (0..10).map(|i| format!("{}\n\n", prose(i, 30))).collect();
    let long = prose(10, 300);
    let text = format!("{}{long}\n", shorts.concat());
    let spans = spans(&text);
    assert_eq!(spans.len(), 3);
    assert_eq!(spans[0], shorts[0..4].concat());
    assert_eq!(spans[1], shorts[4..8].concat());
    assert_eq!(spans[2], format!("{}{long}\n", shorts[8..10].concat()), "the rest joins the next long one");
}

#[test]
fn the_short_last_paragraph_merges_into_the_previous() {
    let text = format!("{}\n\n{}\n\nThanks for reading.\n", prose(0, 300), prose(1, 300));
    let spans = spans(&text);
    assert_eq!(spans.len(), 2);
    assert_eq!(spans[1], format!("{}\n\nThanks for reading.\n", prose(1, 300)));
}

#[test]
fn a_merge_that_would_pass_6000_leaves_the_short_paragraph_alone() {
    // 100 + 5,950 > 6,000: the short one cannot join the next.
    let text = text_of(&[100, 5_950, 300]);
    assert_eq!(lengths(&text), vec![100, 5_950, 300]);
    // The last one cannot join the previous either.
    let text = text_of(&[300, 5_950, 80]);
    assert_eq!(lengths(&text), vec![300, 5_950, 80]);
    // While exactly 6,000 is allowed.
    let text = text_of(&[300, 100, 5_900, 300]);
    assert_eq!(lengths(&text), vec![300, 6_000, 300]);
    assert_eq!(kinds(&text), vec![UnitKind::Scored; 3]);
}

#[test]
fn a_paragraph_over_6000_is_fixed_and_merges_with_nothing() {
    let text = text_of(&[50, 7_000, 60]);
    assert_eq!(lengths(&text), vec![50, 7_000, 60], "short neighbours of a fixed paragraph stay alone");
    assert_eq!(kinds(&text), vec![UnitKind::Scored, UnitKind::Fixed, UnitKind::Scored]);
    let text = text_of(&[300, 6_000, 6_001, 300]);
    assert_eq!(
        kinds(&text),
        vec![UnitKind::Scored, UnitKind::Scored, UnitKind::Fixed, UnitKind::Scored],
        "6,000 is scored, 6,001 is fixed"
    );
}

#[test]
fn a_fixed_paragraph_is_never_sent_and_always_kept() {
    let mut sizes = vec![400, 400, 6_500];
    sizes.extend([400; 12]);
    let text = text_of(&sizes);
    let fixed = spans(&text)[2].to_string();
    let scorer = dropping([0, 1, 3, 4, 5, 6, 7, 8, 9, 10]);
    let (mut turn, _log) = turn(REQUEST, scorer.clone());
    let pruned = prune(&mut turn, &text);
    assert_eq!(outcome(&pruned), "ok");
    let report = report(&pruned);
    assert_eq!(report.paragraphs[2].fate, Fate::Fixed);
    assert_eq!(report.paragraphs[2].score, None);
    assert!(pruned.body.contains(&fixed), "the fixed paragraph is in the body verbatim");
    for request in scorer.requests() {
        for batch in &request.batches {
            assert!(!batch.paragraphs.contains(&2));
            assert!(batch.chunks.iter().all(|c| chars(c) <= 6_000));
            assert!(!batch.jev_body.contains(&fixed[..200]));
        }
    }
}

/// The batches of the scoring request for `text`, as paragraph numbers.
fn batches_of(text: &str) -> Vec<Vec<u32>> {
    let scorer = dropping([]);
    let (mut turn, _log) = turn(REQUEST, scorer.clone());
    prune(&mut turn, text);
    let requests = scorer.requests();
    assert_eq!(requests.len(), 1, "one scorer call per result, carrying every batch");
    let spans = spans(text);
    for batch in &requests[0].batches {
        assert!(batch.paragraphs.len() <= 16);
        assert_eq!(batch.paragraphs.len(), batch.chunks.len());
        let total: usize = batch.chunks.iter().map(|c| chars(c)).sum();
        assert!(total <= 12_000, "batch of {total} characters");
        for (p, chunk) in batch.paragraphs.iter().zip(&batch.chunks) {
            assert_eq!(chunk, spans[*p as usize], "chunk {p} is its paragraph");
        }
        let body: Value = serde_json::from_str(&batch.jev_body).expect("the Jev body is JSON");
        let names: Vec<String> = body["state"]["chunks"].as_object().unwrap().keys().cloned().collect();
        let mut expected: Vec<String> = batch.paragraphs.iter().map(|p| format!("p{p}")).collect();
        expected.sort();
        let mut names = names;
        names.sort();
        assert_eq!(names, expected, "chunks are named by the 0-based paragraph number");
    }
    requests[0].batches.iter().map(|b| b.paragraphs.clone()).collect()
}

#[test]
fn a_batch_closes_at_16_paragraphs() {
    let batches = batches_of(&uniform(33, 200));
    assert_eq!(batches.iter().map(Vec::len).collect::<Vec<_>>(), vec![16, 16, 1]);
    assert_eq!(batches[1][0], 16);
    assert_eq!(batches_of(&uniform(16, 300)), vec![(0..16).collect::<Vec<u32>>()]);
}

#[test]
fn a_batch_closes_before_passing_12000_characters() {
    // 5,000 + 5,000 + 2,000 = 12,000 fits exactly.
    assert_eq!(batches_of(&text_of(&[5_000, 5_000, 2_000, 1_000])), vec![vec![0, 1, 2], vec![3]]);
    // One character more does not.
    assert_eq!(batches_of(&text_of(&[5_000, 5_000, 2_001, 1_000])), vec![vec![0, 1], vec![2, 3]]);
    assert_eq!(batches_of(&text_of(&[6_000, 6_000, 200])), vec![vec![0, 1], vec![2]]);
}

#[test]
fn fixed_paragraphs_are_skipped_by_batches_and_numbering_goes_on() {
    let text = text_of(&[300, 7_000, 300, 6_500, 300]);
    assert_eq!(batches_of(&text), vec![vec![0, 2, 4]]);
}

#[test]
fn the_same_text_gives_the_same_batches() {
    let text = text_of(&[300, 4_000, 800, 6_000, 150, 5_999, 2_222, 130, 900]);
    assert_eq!(batches_of(&text), batches_of(&text));
}

#[test]
fn numbering_is_0_based_in_markers_reports_log_and_requests() {
    let text = uniform(10, 500);
    let scorer = dropping([0, 1, 5, 9]);
    let (mut turn, log) = turn(REQUEST, scorer.clone());
    let pruned = prune(&mut turn, &text);
    assert_eq!(outcome(&pruned), "ok");
    let report = report(&pruned);
    assert_eq!(report.paragraphs.iter().map(|p| p.index).collect::<Vec<_>>(), (0..10).collect::<Vec<u32>>());
    assert_eq!(dropped_of(report), vec![0, 1, 5, 9]);
    assert_eq!(
        marker_lines(&pruned.body),
        vec![run_marker(Lang::En, 0, 1, 1_000), run_marker(Lang::En, 5, 5, 500), run_marker(Lang::En, 9, 9, 500)]
    );
    assert_eq!(field(&prune_line(&log), "paragraphs"), Some("10"));
    assert_eq!(scorer.requests()[0].batches[0].paragraphs[0], 0);
    assert_eq!(turn.stored()[0].dropped.iter().map(|u| u.index).collect::<Vec<_>>(), vec![0, 1, 5, 9]);
}
