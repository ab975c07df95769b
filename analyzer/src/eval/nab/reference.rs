//! Checking the scorer against a published NAB detector: its per-file anomaly scores
//! (`results/<detector>/<dir>/<detector>_<file>.csv`) scored here must give NAB's own per-file scores
//! (`results/<detector>/<detector>_<profile>_scores.csv`) and its normalised totals.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde::Serialize;

use super::corpus::{Corpus, CorpusError, read_series};
use super::{NabError, gather};

/// One profile's reproduction.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileCheck {
    pub profile: String,
    pub threshold: f64,
    /// Sum of our per-file raw scores, and NAB's `Totals` row.
    pub raw: f64,
    pub reference_raw: f64,
    /// The file whose score differs most from NAB's, and by how much.
    pub worst_file: String,
    pub worst_diff: f64,
    pub normalised: f64,
}

/// Scores `detector`'s published outputs under `root/results/` and compares with NAB's per-file scores.
pub fn check(root: &Path, corpus: &Corpus, detector: &str) -> Result<Vec<ProfileCheck>, NabError> {
    let dir = root.join("results").join(detector);
    let mut scores = Vec::with_capacity(corpus.files.len());
    for f in &corpus.files {
        let (sub, name) = f.path.rsplit_once('/').unwrap_or(("", &f.path));
        let path = dir.join(sub).join(format!("{detector}_{name}"));
        let (ts, s) = read_series(&path, 2)?;
        if ts != f.timestamps {
            return Err(CorpusError::Labels { path, message: format!("timestamps differ from data/{}", f.path) }.into());
        }
        scores.push(s);
    }
    let mut out = Vec::new();
    for p in &corpus.profiles {
        let path = dir.join(format!("{detector}_{}_scores.csv", p.name));
        let reference = read_reference(&path)?;
        let (mut raw, mut worst_file, mut worst_diff, mut threshold) = (0.0, String::new(), 0.0f64, f64::NAN);
        for (f, s) in corpus.files.iter().zip(&scores) {
            let Some(&(t, expected)) = reference.get(&f.path) else {
                return Err(CorpusError::Labels { path, message: format!("no row for {}", f.path) }.into());
            };
            threshold = t;
            let one = gather([(f, s.as_slice())])?;
            let got = super::sweep::score_at(&one.points, one.windows, t, p).0;
            raw += got;
            if (got - expected).abs() >= worst_diff {
                worst_diff = (got - expected).abs();
                worst_file = f.path.clone();
            }
        }
        let whole = gather(corpus.files.iter().zip(scores.iter().map(Vec::as_slice)))?;
        out.push(ProfileCheck {
            profile: p.name.clone(),
            threshold,
            raw,
            reference_raw: reference.get("Totals").map_or(f64::NAN, |r| r.1),
            worst_file,
            worst_diff,
            normalised: whole.normalise(raw, p),
        });
    }
    Ok(out)
}

/// `File → (Threshold, Score)` from NAB's per-file score table (the `Totals` row under its own name).
fn read_reference(path: &Path) -> Result<BTreeMap<String, (f64, f64)>, CorpusError> {
    let text = fs::read_to_string(path).map_err(|source| CorpusError::Io { path: path.to_path_buf(), source })?;
    let mut rows = BTreeMap::new();
    for (i, line) in text.lines().enumerate().skip(1) {
        let cols: Vec<&str> = line.split(',').collect();
        let bad = |what: &str| CorpusError::Csv { path: path.to_path_buf(), line: i + 1, message: what.to_string() };
        if cols.len() < 5 {
            return Err(bad("expected Detector,Profile,File,Threshold,Score,..."));
        }
        let key = if cols[0] == "Totals" { "Totals" } else { cols[2] };
        let threshold = cols[3].parse().unwrap_or(f64::NAN);
        let score = cols[4].parse().map_err(|_| bad("bad Score"))?;
        rows.insert(key.to_string(), (threshold, score));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn check_at(root: &Path) -> Vec<ProfileCheck> {
        let corpus = Corpus::load(root).unwrap();
        check(root, &corpus, "windowedGaussian").unwrap()
    }

    /// Three files of windowedGaussian's published outputs: each file's score matches NAB's to rounding.
    #[test]
    fn windowed_gaussian_excerpt_matches_nab_per_file() {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/nab");
        let checks = check_at(&root);
        assert_eq!(checks.len(), 3);
        for c in &checks {
            assert_eq!(c.threshold, 1.0);
            assert!(c.worst_diff < 1e-6, "{c:?}");
        }
        // Sum of NAB's three per-file standard scores: -1.79598133079 - 4.19089678552 + 2.50266326119.
        assert!((checks[0].raw - -3.48421485512).abs() < 1e-6, "{:?}", checks[0]);
    }

    /// The whole corpus: `NAB_DATA=/path/to/nab cargo test -p argus-analyzer -- --ignored windowed_gaussian`.
    #[test]
    #[ignore = "needs the NAB corpus in NAB_DATA"]
    fn windowed_gaussian_reproduces_the_scoreboard() {
        let root = PathBuf::from(std::env::var("NAB_DATA").expect("NAB_DATA"));
        let checks = check_at(&root);
        let published = [39.65, 20.87, 47.41];
        for (c, p) in checks.iter().zip(published) {
            assert!(c.worst_diff < 1e-6 && (c.raw - c.reference_raw).abs() < 1e-5, "{c:?}");
            assert!((c.normalised - p).abs() < 0.005, "{c:?}");
        }
    }
}
