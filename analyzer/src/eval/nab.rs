//! `argus eval nab`: the Numenta Anomaly Benchmark, scored with NAB's own method.
//!
//! Every file is streamed point by point through the runtime's univariate detector ([`crate::detect::univariate`])
//! with one parameter set for the whole corpus: the default ensemble, and each of its two families alone
//! (`baseline`, the band and its stages without resonance; `art`, the adaptive-resonance detector
//! [`crate::detect::art`] alone). The only thing fitted on the corpus is the score threshold of each
//! profile, found by NAB's threshold sweep ([`sweep::optimize`]). The headline is a two-fold split: files sorted by
//! path, every other file in one half; the threshold is fixed on one half and scored on the other, and the two
//! normalised test scores are averaged. The whole-corpus score (threshold fitted on all files) is reported beside it.

pub mod corpus;
pub mod reference;
pub mod sweep;

use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::detect::StreamDetector;
use crate::detect::art::Art;
use crate::detect::univariate::{Univariate, UnivariateParams};
use corpus::{Corpus, DataFile, Profile};
use sweep::{Point, WindowError};

/// A file's scorable points, its windows numbered over the set it is scored in.
#[derive(Debug, Clone)]
pub struct Scored {
    pub points: Vec<Point>,
    /// Windows with a point after probation: a missed one costs `fnWeight`.
    pub scorable_windows: usize,
    /// All labelled windows: a perfect detector earns `tpWeight` for each.
    pub windows: usize,
}

/// Gathers the points of several files into one set, renumbering their windows.
pub fn gather<'a>(files: impl IntoIterator<Item = (&'a DataFile, &'a [f64])>) -> Result<Scored, (String, WindowError)> {
    let mut all = Scored { points: Vec::new(), scorable_windows: 0, windows: 0 };
    for (file, scores) in files {
        let (points, scorable) = sweep::sweep_file(&file.timestamps, scores, &file.windows, all.windows)
            .map_err(|e| (file.path.clone(), e))?;
        all.points.extend(points);
        all.scorable_windows += scorable;
        all.windows += file.windows.len();
    }
    Ok(all)
}

impl Scored {
    /// NAB's normalisation: 0 for the null detector (every window missed), 100 for a perfect one.
    pub fn normalise(&self, raw: f64, profile: &Profile) -> f64 {
        let null = -(self.scorable_windows as f64) * profile.fn_weight;
        let perfect = self.windows as f64 * profile.tp_weight;
        100.0 * (raw - null) / (perfect - null)
    }
}

/// One profile's figures.
#[derive(Debug, Clone, Serialize)]
pub struct ProfileResult {
    pub profile: String,
    /// The half-split headline: mean of the two normalised test-half scores.
    pub split: f64,
    /// Test half A (even-indexed files) scored with the threshold fitted on half B, and the reverse.
    pub half_a: f64,
    pub half_b: f64,
    pub threshold_from_b: f64,
    pub threshold_from_a: f64,
    /// The whole corpus with the threshold fitted on the whole corpus.
    pub whole: f64,
    pub whole_raw: f64,
    pub threshold_whole: f64,
    /// Each half scored with the threshold fitted on itself: the training figures, by which a choice
    /// between detectors for the other half can be made without looking at it.
    pub train_a: f64,
    pub train_b: f64,
}

/// The result of `argus eval nab`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub detector: String,
    pub files: usize,
    pub points: usize,
    pub detect_seconds: f64,
    pub profiles: Vec<ProfileResult>,
}

/// `argus eval nab`: checks the scorer against windowedGaussian's published results when they are under
/// `root/results/`, then evaluates the runtime univariate detector with its default parameters.
pub fn run(root: &Path) -> Result<NabRun, NabError> {
    run_with(root, UnivariateParams::default())
}

/// [`run`] with other parameters than the runtime's defaults.
pub fn run_with(root: &Path, params: UnivariateParams) -> Result<NabRun, NabError> {
    let started = Instant::now();
    let corpus = Corpus::load(root)?;
    let check = if root.join("results/windowedGaussian").is_dir() {
        Some(reference::check(root, &corpus, "windowedGaussian")?)
    } else {
        None
    };
    let report = evaluate(&corpus, || Univariate::new(params.clone()))?;
    let baseline = UnivariateParams { art_weight: 0.0, ..params.clone() };
    let detectors = vec![
        (Family::Baseline, evaluate(&corpus, || Univariate::new(baseline.clone()))?),
        (Family::Art, evaluate(&corpus, || Art::new(params.art.clone()))?),
    ];
    Ok(NabRun { report, detectors, check, params, seconds: started.elapsed().as_secs_f64() })
}

/// The detector families of the runtime's univariate ensemble, each evaluated alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// The dynamic threshold's band with its likelihood, record, novelty and sustained stages.
    Baseline,
    /// The adaptive-resonance detector.
    Art,
}

impl Family {
    pub fn key(self) -> &'static str {
        match self {
            Family::Baseline => "baseline",
            Family::Art => "art",
        }
    }
}

/// Everything `argus eval nab` reports.
#[derive(Debug, Clone, Serialize)]
pub struct NabRun {
    pub report: Report,
    /// Each family of the ensemble alone, with the same parameters.
    pub detectors: Vec<(Family, Report)>,
    /// The scorer's reproduction of windowedGaussian, when its results were there.
    pub check: Option<Vec<reference::ProfileCheck>>,
    pub params: UnivariateParams,
    /// Load, check, detection and scoring, wall clock.
    pub seconds: f64,
}

impl NabRun {
    /// The figures as `--json` writes them: the half-split headline under NAB's short profile names
    /// (`standard`, `reward_low_FP`, `reward_low_FN`), the whole-corpus ones with `_whole`, then the details.
    pub fn json(&self) -> String {
        let mut v = serde_json::json!({
            "detector": self.report.detector,
            "files": self.report.files,
            "points": self.report.points,
            "detect_seconds": self.report.detect_seconds,
            "seconds": self.seconds,
            "profiles": self.report.profiles,
            "params": self.params,
            "scorer_check": self.check,
        });
        headline(&mut v, &self.report.profiles);
        for (family, report) in &self.detectors {
            let mut d = serde_json::json!({ "detect_seconds": report.detect_seconds, "profiles": report.profiles });
            headline(&mut d, &report.profiles);
            v["detectors"][family.key()] = d;
        }
        serde_json::to_string_pretty(&v).unwrap_or_default() + "\n"
    }

    /// A readable report.
    pub fn text(&self) -> String {
        let mut out = self.check_text();
        let r = &self.report;
        let _ = writeln!(
            out,
            "NAB: detector {}, {} files, {} points, streamed in {:.2} s ({:.2} s in all)",
            r.detector, r.files, r.points, r.detect_seconds, self.seconds
        );
        let _ = writeln!(
            out,
            "  {:20} {:>8} {:>8} {:>8} {:>8}   thresholds (whole, from A, from B)",
            "detector / profile", "split", "half A", "half B", "whole"
        );
        let families = self.detectors.iter().map(|(f, r)| (f.key(), r));
        for (name, report) in std::iter::once(("ensemble", r)).chain(families) {
            let _ = writeln!(out, "  {name}");
            for p in &report.profiles {
                let _ = writeln!(
                    out,
                    "    {:18} {:>8.2} {:>8.2} {:>8.2} {:>8.2}   {:.3}, {:.3}, {:.3}",
                    p.profile,
                    p.split,
                    p.half_a,
                    p.half_b,
                    p.whole,
                    p.threshold_whole,
                    p.threshold_from_a,
                    p.threshold_from_b
                );
            }
        }
        let _ = writeln!(
            out,
            "split = threshold fitted on one half (files sorted by path, every other file), scored on the other, averaged"
        );
        out
    }

    fn check_text(&self) -> String {
        let mut out = String::new();
        if let Some(check) = &self.check {
            let _ = writeln!(out, "Scorer check: windowedGaussian's published outputs, scored here");
            let _ = writeln!(
                out,
                "  {:20} {:>9} {:>12} {:>12} {:>10} {:>10}",
                "profile", "threshold", "raw", "NAB raw", "max diff", "score"
            );
            for c in check {
                let _ = writeln!(
                    out,
                    "  {:20} {:>9} {:>12.4} {:>12.4} {:>10.1e} {:>10.2}",
                    c.profile, c.threshold, c.raw, c.reference_raw, c.worst_diff, c.normalised
                );
            }
            let _ = writeln!(out);
        }
        out
    }
}

/// The half-split headline under NAB's short profile names, the whole-corpus figures with `_whole`.
fn headline(v: &mut serde_json::Value, profiles: &[ProfileResult]) {
    for p in profiles {
        let key = p.profile.trim_end_matches("_rate");
        v[key] = p.split.into();
        v[format!("{key}_whole")] = p.whole.into();
    }
}

/// `d`'s score at every point of `file`, fed point by point.
pub fn stream(file: &DataFile, d: &mut impl StreamDetector) -> Vec<f64> {
    file.timestamps.iter().zip(&file.values).map(|(&t, &v)| d.update(t, v).score).collect()
}

/// Streams every file through a fresh detector from `make` and scores the result.
pub fn evaluate<D: StreamDetector>(corpus: &Corpus, mut make: impl FnMut() -> D) -> Result<Report, NabError> {
    let started = Instant::now();
    let mut name = String::new();
    let scores: Vec<Vec<f64>> = corpus
        .files
        .iter()
        .map(|f| {
            let mut d = make();
            name = d.name().to_string();
            stream(f, &mut d)
        })
        .collect();
    let detect_seconds = started.elapsed().as_secs_f64();
    let profiles = score_corpus(corpus, &scores)?;
    Ok(Report {
        detector: name,
        files: corpus.files.len(),
        points: corpus.files.iter().map(|f| f.values.len()).sum(),
        detect_seconds,
        profiles,
    })
}

#[derive(Debug, thiserror::Error)]
pub enum NabError {
    #[error(transparent)]
    Corpus(#[from] corpus::CorpusError),
    #[error("{0}: {1}")]
    Windows(String, WindowError),
}

impl From<(String, WindowError)> for NabError {
    fn from((path, e): (String, WindowError)) -> Self {
        NabError::Windows(path, e)
    }
}

/// Scores per-file anomaly scores (one vector per corpus file) under every profile: whole corpus and half split.
pub fn score_corpus(corpus: &Corpus, scores: &[Vec<f64>]) -> Result<Vec<ProfileResult>, NabError> {
    let pairs: Vec<(&DataFile, &[f64])> = corpus.files.iter().zip(scores.iter().map(Vec::as_slice)).collect();
    let whole = gather(pairs.iter().copied())?;
    let half_a = gather(pairs.iter().step_by(2).copied())?;
    let half_b = gather(pairs.iter().skip(1).step_by(2).copied())?;
    Ok(corpus
        .profiles
        .iter()
        .map(|p| {
            let (threshold_whole, whole_raw) = sweep::optimize(&whole.points, whole.windows, p);
            let (threshold_from_a, fit_a) = sweep::optimize(&half_a.points, half_a.windows, p);
            let (threshold_from_b, fit_b) = sweep::optimize(&half_b.points, half_b.windows, p);
            let test_a = half_a.normalise(sweep::score_at(&half_a.points, half_a.windows, threshold_from_b, p).0, p);
            let test_b = half_b.normalise(sweep::score_at(&half_b.points, half_b.windows, threshold_from_a, p).0, p);
            ProfileResult {
                profile: p.name.clone(),
                split: (test_a + test_b) / 2.0,
                half_a: test_a,
                half_b: test_b,
                threshold_from_b,
                threshold_from_a,
                whole: whole.normalise(whole_raw, p),
                whole_raw,
                threshold_whole,
                train_a: half_a.normalise(fit_a, p),
                train_b: half_b.normalise(fit_b, p),
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Corpus {
        let file = |path: &str, windows: Vec<(i64, i64)>| DataFile {
            path: path.into(),
            timestamps: (0..200).collect(),
            values: vec![0.0; 200],
            windows,
        };
        Corpus {
            files: vec![
                file("a/1.csv", vec![(50, 59), (120, 139)]),
                file("a/2.csv", vec![(100, 119)]),
                file("b/1.csv", vec![]),
                file("b/2.csv", vec![(60, 80)]),
            ],
            profiles: corpus::PROFILE_NAMES
                .iter()
                .zip([(1.0, 0.11, 1.0), (1.0, 0.22, 1.0), (1.0, 0.11, 2.0)])
                .map(|(n, (tp, fp, fn_))| Profile { name: n.to_string(), tp_weight: tp, fp_weight: fp, fn_weight: fn_ })
                .collect(),
        }
    }

    fn scores_where(c: &Corpus, hit: impl Fn(&DataFile, i64) -> bool) -> Vec<Vec<f64>> {
        c.files.iter().map(|f| f.timestamps.iter().map(|&t| if hit(f, t) { 1.0 } else { 0.0 }).collect()).collect()
    }

    #[test]
    fn null_detector_scores_zero_and_perfect_scores_hundred() {
        let c = corpus();
        let null = score_corpus(&c, &scores_where(&c, |_, _| false)).unwrap();
        let perfect = score_corpus(&c, &scores_where(&c, |f, t| f.windows.iter().any(|w| w.0 == t))).unwrap();
        for (n, p) in null.iter().zip(&perfect) {
            assert_eq!((n.whole, n.split), (0.0, 0.0), "{}", n.profile);
            assert!((p.whole - 100.0).abs() < 1e-9 && (p.split - 100.0).abs() < 1e-9, "{p:?}");
        }
    }

    /// The command's path on the committed excerpt: the scorer check runs, the detector is scored, and the JSON
    /// carries the keys the issue names.
    #[test]
    fn run_on_the_excerpt() {
        let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("testdata/nab");
        let run = run(&root).unwrap();
        assert_eq!((run.report.files, run.report.points), (3, 2500 + 4730 + 1538));
        assert_eq!(run.check.as_ref().map(Vec::len), Some(3));
        let json: serde_json::Value = serde_json::from_str(&run.json()).unwrap();
        for key in ["standard", "reward_low_FP", "reward_low_FN", "standard_whole"] {
            assert!(json[key].as_f64().is_some_and(|v| v.is_finite() && v <= 100.0), "{key}: {}", json[key]);
            for family in ["art", "baseline"] {
                let v = &json["detectors"][family][key];
                assert!(v.as_f64().is_some_and(|v| v.is_finite() && v <= 100.0), "detectors.{family}.{key}: {v}");
            }
        }
        // The headline is the ensemble's, and each family's figures are its own evaluation.
        assert_eq!(json["standard"], serde_json::json!(run.report.profiles[0].split));
        let families: Vec<&str> = run.detectors.iter().map(|(f, _)| f.key()).collect();
        assert_eq!(families, ["baseline", "art"]);
        for (family, report) in &run.detectors {
            assert_eq!(json["detectors"][family.key()]["standard_whole"], serde_json::json!(report.profiles[0].whole));
        }
        assert_eq!(run.detectors[1].1.detector, "art");
        assert!(run.text().contains("windowedGaussian"));
    }

    /// `argus eval nab`'s figures without the binary: `NAB_DATA=/path/to/nab [NAB_JSON=out.json] cargo test -p
    /// argus-analyzer --lib -- --ignored --nocapture run_on_the_corpus`.
    #[test]
    #[ignore = "needs the NAB corpus in NAB_DATA"]
    fn run_on_the_corpus() {
        let root = std::path::PathBuf::from(std::env::var("NAB_DATA").expect("NAB_DATA"));
        let run = run(&root).unwrap();
        print!("{}", run.text());
        if let Ok(path) = std::env::var("NAB_JSON") {
            std::fs::write(path, run.json()).unwrap();
        }
    }

    /// Choosing how the families combine: `NAB_DATA=/path/to/nab [NAB_PARAMS=json] cargo test -p
    /// argus-analyzer --lib -- --ignored --nocapture families_combined`. Streams each family once, then prints,
    /// for each resonance weight, the standard profile's training figures (each half with its own threshold),
    /// by which the weight is chosen, beside the test figures. The runtime combines them by
    /// [`crate::detect::ensemble`], as here.
    #[test]
    #[ignore = "needs the NAB corpus in NAB_DATA"]
    fn families_combined() {
        let root = std::path::PathBuf::from(std::env::var("NAB_DATA").expect("NAB_DATA"));
        let params: UnivariateParams =
            std::env::var("NAB_PARAMS").map_or_else(|_| Default::default(), |j| serde_json::from_str(&j).unwrap());
        let corpus = Corpus::load(&root).unwrap();
        let started = Instant::now();
        let baseline = UnivariateParams { art_weight: 0.0, ..params.clone() };
        let base: Vec<Vec<f64>> =
            corpus.files.iter().map(|f| stream(f, &mut Univariate::new(baseline.clone()))).collect();
        let base_s = started.elapsed().as_secs_f64();
        let art: Vec<Vec<f64>> = corpus.files.iter().map(|f| stream(f, &mut Art::new(params.art.clone()))).collect();
        println!("streamed: baseline {base_s:.2} s, art {:.2} s", started.elapsed().as_secs_f64() - base_s);
        let print = |name: &str, scores: &[Vec<f64>]| {
            let p = &score_corpus(&corpus, scores).unwrap()[0];
            println!(
                "{name:12} train A {:6.2} B {:6.2} | split {:6.2} (A {:6.2} B {:6.2}) whole {:6.2}",
                p.train_a, p.train_b, p.split, p.half_a, p.half_b, p.whole
            );
        };
        print("baseline", &base);
        print("art", &art);
        // The runtime's combination (direction `both`, fixed alert level): the ensemble of the two.
        for w in [0.5, 0.75, 1.0, 1.25, 1.5] {
            let combined: Vec<Vec<f64>> = base
                .iter()
                .zip(&art)
                .map(|(b, a)| b.iter().zip(a).map(|(&b, &a)| crate::detect::ensemble(&[b, w * a])).collect())
                .collect();
            print(&format!("ensemble w={w}"), &combined);
        }
    }

    #[test]
    fn detecting_everything_scores_below_zero() {
        let c = corpus();
        let all = scores_where(&c, |_, _| true);
        let whole = gather(c.files.iter().zip(all.iter().map(Vec::as_slice))).unwrap();
        let raw = sweep::score_at(&whole.points, whole.windows, 0.5, &c.profiles[0]).0;
        assert!(whole.normalise(raw, &c.profiles[0]) < 0.0);
    }
}
