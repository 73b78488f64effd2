//! SPEC §9: the exact header and run markers in ja and en, numbers with
//! thousands separators, ids `P1`, `P2`, … in the order results were pruned.

use toolprune::types::Lang;
use toolprune_tests::*;

/// 12 paragraphs of 1,100 characters; 1–3, 7 and 11 dropped.
fn expected_body(lang: Lang, text: &str, id: &str) -> String {
    let p = spans(text);
    let mut body = header(lang, 12, 13_200, 5, 5_500, id);
    body.push_str("\n\n");
    body.push_str(p[0]);
    body.push_str(&run_marker(lang, 1, 3, 3_300));
    body.push_str("\n\n");
    body.push_str(&p[4..7].concat());
    body.push_str(&run_marker(lang, 7, 7, 1_100));
    body.push_str("\n\n");
    body.push_str(&p[8..11].concat());
    body.push_str(&run_marker(lang, 11, 11, 1_100));
    body.push('\n');
    body
}

#[test]
fn spec_examples_render_as_written() {
    // The helpers reproduce SPEC §9's own lines, so the tests below compare
    // the component against the SPEC, not against itself.
    assert_eq!(
        header(Lang::Ja, 48, 9_388, 21, 3_926, "P2"),
        "【関連度で段落を省略しています: 全 48 段落・9,388 字のうち 21 段落・3,926 字を省略。省略した段落は `omitted` に id と段落番号を渡すと逐語で読めます。id=P2】"
    );
    assert_eq!(run_marker(Lang::Ja, 8, 14, 1_204), "［… 段落 8〜14・7 段落・1,204 字を省略 …］");
    assert_eq!(run_marker(Lang::Ja, 20, 20, 311), "［… 段落 20・1 段落・311 字を省略 …］");
    assert_eq!(
        header(Lang::En, 48, 9_388, 21, 3_926, "P2"),
        "[Omitted by relevance: 21 of 48 paragraphs (3,926 of 9,388 characters). Call `omitted` with the id and paragraph numbers to read them verbatim. id=P2]"
    );
    assert_eq!(run_marker(Lang::En, 8, 14, 1_204), "[… paragraphs 8–14 omitted: 7 paragraphs, 1,204 characters …]");
    assert_eq!(run_marker(Lang::En, 20, 20, 311), "[… paragraph 20 omitted: 1 paragraph, 311 characters …]");
}

#[test]
fn en_header_and_markers_are_exact() {
    let text = uniform(12, 1_100);
    let (mut turn, _log) = turn(REQUEST, dropping([1, 2, 3, 7, 11]));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    assert_eq!(p.body, expected_body(Lang::En, &text, "P1"));
}

#[test]
fn ja_header_and_markers_are_exact() {
    let text = uniform(12, 1_100);
    let mut o = options("アップロードの再試行回数を設定するにはどうすればよいですか？");
    o.lang = Lang::Ja;
    let (mut turn, _log) = turn_with(o, dropping([1, 2, 3, 7, 11]));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    assert_eq!(p.body, expected_body(Lang::Ja, &text, "P1"));
}

#[test]
fn crlf_text_gets_crlf_around_its_markers() {
    let text = uniform(12, 1_100).replace('\n', "\r\n");
    let (mut turn, _log) = turn(REQUEST, dropping([1, 2, 3, 7, 11]));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    let p_spans = spans(&text);
    let run = |a, b| {
        let c: usize = p_spans[a..=b].iter().map(|s| chars(s)).sum();
        run_marker(Lang::En, a, b, c)
    };
    let total = chars(&text);
    let dropped: usize = [1, 2, 3, 7, 11].iter().map(|&i| chars(p_spans[i])).sum();
    let expected = format!(
        "{}\r\n\r\n{}{}\r\n\r\n{}{}\r\n\r\n{}{}\r\n",
        header(Lang::En, 12, total, 5, dropped, "P1"),
        p_spans[0],
        run(1, 3),
        p_spans[4..7].concat(),
        run(7, 7),
        p_spans[8..11].concat(),
        run(11, 11)
    );
    assert_eq!(p.body, expected);
}

#[test]
fn large_counts_use_thousands_separators() {
    // 1,200 paragraphs of 130 characters; 0–1,099 dropped. Paragraph numbers
    // are `omitted` arguments and stay plain.
    let text = uniform(1_200, 130);
    let (mut turn, _log) = turn(REQUEST, dropping(0..1_100));
    let p = prune(&mut turn, &text);
    assert_eq!(outcome(&p), "ok");
    let mut lines = p.body.lines();
    assert_eq!(lines.next().unwrap(), header(Lang::En, 1_200, 156_000, 1_100, 143_000, "P1"));
    assert_eq!(lines.nth(1).unwrap(), run_marker(Lang::En, 0, 1_099, 143_000));
    assert!(p.body.contains("(143,000 of 156,000 characters)"));
    assert!(p.body.contains("[… paragraphs 0–1099 omitted: 1,100 paragraphs, 143,000 characters …]"));
}

#[test]
fn ids_follow_the_order_of_pruned_results_in_the_turn() {
    let text = uniform(12, 1_100);
    let (mut turn, _log) = turn(REQUEST, dropping([1, 2, 3, 7, 11]));
    let ok = |p: &toolprune_tests::Pruned| outcome(p) == "ok";
    let first = prune(&mut turn, &text);
    assert!(ok(&first) && first.body.starts_with(&header(Lang::En, 12, 13_200, 5, 5_500, "P1")));
    // A result that is not pruned takes no id.
    let unpruned = prune(&mut turn, &text_of(&[3_000, 150, 150, 150, 3_000, 3_000, 3_000, 150, 3_000]));
    assert_eq!(outcome(&unpruned), "below_floor");
    let second = prune(&mut turn, &text);
    assert_eq!(second.body, expected_body(Lang::En, &text, "P2"));
    let skipped = prune(&mut turn, "short");
    assert!(skipped.report.as_ref().unwrap().log_line.is_none());
    let third = prune(&mut turn, &text);
    assert_eq!(third.body, expected_body(Lang::En, &text, "P3"));
    assert_eq!(turn.stored().iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), vec!["P1", "P2", "P3"]);
}
