//! Golden files for source tests: a batch's exposition text compared with
//! `collector/tests/golden/{name}.txt`. Run with `UPDATE_GOLDEN=1` to rewrite them after a deliberate change.

use crate::batch::Batch;
use std::path::PathBuf;

pub(crate) fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures").join(rel)
}

pub(crate) fn check(name: &str, batch: &Batch) {
    check_text(name, "txt", &batch.to_exposition());
}

pub(crate) fn check_text(name: &str, ext: &str, actual: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(format!("{name}.{ext}"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with UPDATE_GOLDEN=1 to create it", path.display()));
    if expected != actual {
        let diff: Vec<String> = expected
            .lines()
            .zip(actual.lines())
            .filter(|(e, a)| e != a)
            .take(10)
            .map(|(e, a)| format!("- {e}\n+ {a}"))
            .collect();
        panic!(
            "{} differs ({} expected lines, {} actual); first differences:\n{}\nrun with UPDATE_GOLDEN=1 if the change is deliberate",
            path.display(),
            expected.lines().count(),
            actual.lines().count(),
            diff.join("\n")
        );
    }
}
