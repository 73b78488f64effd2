//! The shared test vectors (`tests/vectors/vectors.json`) are what the
//! component gives today: regenerate them in memory and compare with the
//! committed file, so a change of the guest or of the cases that was not
//! followed by `cargo run -p toolprune --example make_vectors` fails.

#[path = "../examples/make_vectors.rs"]
mod make_vectors;

#[test]
fn committed_vectors_equal_a_fresh_generation() {
    let path = make_vectors::vectors_path();
    let committed = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let fresh = make_vectors::generate();
    if committed != fresh {
        let line = committed
            .lines()
            .zip(fresh.lines())
            .position(|(a, b)| a != b)
            .map_or_else(|| "the lengths".to_string(), |i| format!("line {}", i + 1));
        panic!(
            "{} is stale (first difference at {line}): run `cargo run -p toolprune --example make_vectors` and commit the result",
            path.display()
        );
    }
}

#[test]
fn vectors_stay_small_and_cover_every_outcome() {
    let committed = std::fs::read_to_string(make_vectors::vectors_path()).expect("vectors.json");
    assert!(committed.len() < 2_000_000, "vectors.json is {} bytes; keep it under 2 MB", committed.len());
    let v: serde_json::Value = serde_json::from_str(&committed).expect("vectors.json parses");
    let cases = v.as_array().expect("a list of cases");
    for outcome in ["ok", "structured", "no_basis", "all_dropped", "nothing_dropped", "below_floor", "timeout", "failed", "cancelled"] {
        assert!(cases.iter().any(|c| c["expect"]["outcome"] == outcome), "no vector with outcome {outcome}");
    }
    for outcome in ["ok", "not_dropped", "not_found", "too_large", "invalid"] {
        assert!(
            cases.iter().any(|c| c["omitted"].as_array().unwrap().iter().any(|o| o["expect"]["outcome"] == outcome)),
            "no omitted answer {outcome}"
        );
    }
    assert!(cases.iter().any(|c| c["expect"]["shape"] == "json_wrapper" && c["expect"]["outcome"] == "ok"));
    assert!(cases.iter().any(|c| c["expect"]["shape"] == "json_array" && c["expect"]["outcome"] == "ok"));
    for lang in ["ja", "en"] {
        assert!(cases.iter().any(|c| c["lang"] == lang && c["expect"]["outcome"] == "ok"), "no ok vector in {lang}");
    }
}
