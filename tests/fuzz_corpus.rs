//! The fuzz smoke: every input of the committed corpus (fuzz/corpus/<target>/), and the crashes
//! fuzzing once found (fuzz/regressions/<target>/, when any), replayed through the same functions the
//! cargo-fuzz targets call, as an ordinary test on stable Rust. bench/fuzz.sh runs the real fuzzing.

#[path = "../fuzz/src/lib.rs"]
mod cases;

use std::path::Path;

fn replay(target: &str, f: fn(&[u8])) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut n = 0;
    for dir in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(root.join(dir).join(target)) else { continue };
        let mut files: Vec<_> = entries.map(|e| e.expect("corpus entry").path()).collect();
        files.sort();
        for file in files {
            let data = std::fs::read(&file).expect("corpus file");
            let r = std::panic::catch_unwind(|| f(&data));
            assert!(r.is_ok(), "{target}: {} panicked", file.display());
            n += 1;
        }
    }
    assert!(n > 0, "{target}: no corpus under fuzz/corpus/{target}");
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
