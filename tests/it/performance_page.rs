//! docs/performance.md is generated from the benchmark records in bench/results/ by
//! bench/lib/performance.py; this fails when the committed page is not what the records give (a record
//! added or changed without regenerating the page, or the page edited by hand).

use std::process::Command;

#[test]
fn the_performance_page_is_what_the_benchmark_records_give() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .current_dir(root)
        .args(["bench/lib/performance.py", "--check"])
        .output()
        .unwrap_or_else(|e| panic!("cannot run python3 bench/lib/performance.py in {root}: {e}"));
    assert!(
        out.status.success(),
        "docs/performance.md is stale ({}); regenerate it with `python3 bench/lib/performance.py`:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
}
