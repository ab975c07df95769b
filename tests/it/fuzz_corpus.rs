//! The fuzz smoke: every seed (fuzz/seeds/<target>/, named inputs made from fixtures, tests and the
//! inputs fuzzing found that reach code no other seed reaches) and every input that ever crashed a
//! target (fuzz/regressions/<target>/), replayed through the same functions the cargo-fuzz targets
//! call, as an ordinary test on stable Rust. Only committed files are replayed, never the corpus that
//! fuzzing grows (fuzz/corpus/, not in git; bench/fuzz.sh keeps its own outside the repository), so
//! the test is the same on every machine.

#[path = "../../fuzz/src/lib.rs"]
mod cases;

use std::path::Path;

fn replay(target: &str, f: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let seeds = replay_dir(&root.join("seeds").join(target), target, f);
    assert!(seeds > 0, "{target}: no seeds under fuzz/seeds/{target}");
    // A target without crashes so far has no regressions directory.
    replay_dir(&root.join("regressions").join(target), target, f);
}

/// Replays every file of `dir` (none when it does not exist), in name order; returns how many.
fn replay_dir(dir: &Path, target: &str, f: fn(&[u8])) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else { return 0 };
    let mut files: Vec<_> = entries.map(|e| e.expect("directory entry").path()).collect();
    files.sort();
    for file in &files {
        let data = std::fs::read(file).expect("input file");
        let r = std::panic::catch_unwind(|| f(&data));
        assert!(r.is_ok(), "{target}: {} panicked", file.display());
    }
    files.len()
}

#[test]
fn line_protocol() {
    replay("line_protocol", cases::line_protocol);
}

#[test]
fn remote_write() {
    replay("remote_write", cases::remote_write);
}

#[test]
fn promql() {
    replay("promql", cases::promql);
}

#[test]
fn alertd_config() {
    replay("alertd_config", cases::alertd_config);
}

#[test]
fn rule_file() {
    replay("rule_file", cases::rule_file);
}

#[test]
fn argus_toml() {
    replay("argus_toml", cases::argus_toml);
}

#[test]
fn alert_intake() {
    replay("alert_intake", cases::alert_intake);
}

#[test]
fn block_index() {
    replay("block_index", cases::block_index);
}
