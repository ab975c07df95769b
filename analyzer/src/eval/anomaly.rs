//! `argus eval anomaly`: trains the multivariate detector on one CSV, streams another through it point by
//! point (as the runtime does), and scores the result against the test file's labels.
//!
//! CSV: a header `timestamp,<metric>,…`, then one row per step; the test file has a final `label`
//! column (0 or 1). The training file's metrics must be the test file's, in the same order.

use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::metrics;
use crate::detect::iforest::{IForestParams, IsolationForest};
use crate::detect::multivariate::{MultivariateModel, MultivariateParams, TrainError};

/// A multivariate CSV, loaded.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    /// Metric column names (without `timestamp` and `label`).
    pub metrics: Vec<String>,
    /// Row-major values, `metrics.len()` per row.
    pub values: Vec<f64>,
    /// Labels, when the file has a `label` column.
    pub labels: Option<Vec<bool>>,
}

impl Table {
    pub fn rows(&self) -> usize {
        self.values.len() / self.metrics.len().max(1)
    }
}

/// Why an evaluation could not run.
#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}:{line}: {what}")]
    Csv { path: String, line: u64, what: String },
    #[error("{test}: metrics differ from {train}'s ({what})")]
    Mismatch { train: String, test: String, what: String },
    #[error("{path}: needs a label column")]
    NoLabels { path: String },
    #[error("training failed: {0}")]
    Train(#[from] TrainError),
}

/// Reads a CSV in the format above. `labelled` says whether a final `label` column is required.
pub fn read_csv(path: &Path, labelled: bool) -> Result<Table, EvalError> {
    let shown = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|source| EvalError::Io { path: shown.clone(), source })?;
    let csv_err = |line: u64, what: String| EvalError::Csv { path: shown.clone(), line, what };
    let mut reader = csv::ReaderBuilder::new().has_headers(true).flexible(true).from_reader(file);
    let header = reader.headers().map_err(|e| csv_err(1, e.to_string()))?.clone();
    if header.get(0).map(str::trim) != Some("timestamp") {
        return Err(csv_err(1, format!("first column must be `timestamp`, found `{}`", header.get(0).unwrap_or(""))));
    }
    let has_label = header.iter().next_back().map(str::trim) == Some("label");
    if labelled && !has_label {
        return Err(EvalError::NoLabels { path: shown });
    }
    let end = header.len() - usize::from(has_label);
    let metrics: Vec<String> = header.iter().take(end).skip(1).map(|h| h.trim().to_string()).collect();
    if metrics.is_empty() {
        return Err(csv_err(1, "no metric columns".into()));
    }
    let mut values = Vec::new();
    let mut labels = has_label.then(Vec::new);
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => {
                let line = e.position().map_or(0, |p| p.line());
                return Err(csv_err(line, e.to_string()));
            }
        }
        let line = record.position().map_or(0, |p| p.line());
        if record.len() != header.len() {
            return Err(csv_err(line, format!("{} fields, the header has {}", record.len(), header.len())));
        }
        for (i, field) in record.iter().enumerate().take(end).skip(1) {
            let v: f64 = field.trim().parse().map_err(|_| {
                csv_err(
                    line,
                    format!("column {} (`{}`): `{field}` is not a number", i + 1, header.get(i).unwrap_or("")),
                )
            })?;
            if !v.is_finite() {
                return Err(csv_err(line, format!("column {} (`{}`): `{field}` is not finite", i + 1, &header[i])));
            }
            values.push(v);
        }
        if let Some(labels) = &mut labels {
            let label = match record.get(end).map(str::trim) {
                Some("0") => false,
                Some("1") => true,
                other => {
                    return Err(csv_err(
                        line,
                        format!("column {} (`label`): `{}` is not 0 or 1", end + 1, other.unwrap_or("")),
                    ));
                }
            };
            labels.push(label);
        }
    }
    Ok(Table { metrics, values, labels })
}

/// Which detector to evaluate.
#[derive(Debug, Clone, PartialEq)]
pub enum Detector {
    /// The analyzer's multivariate detector, as the runtime runs it.
    Multivariate(MultivariateParams),
    /// A bare isolation forest on the raw metrics (for comparison with other implementations); its own
    /// threshold is the classic 0.5.
    PlainForest(IForestParams),
}

/// The figures `argus eval anomaly` reports (and writes with `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub auc_pr: f64,
    pub auc_roc: f64,
    pub best_f1: f64,
    pub f1_at_threshold: f64,
    pub pa_f1: f64,
    pub fit_seconds: f64,
    pub score_seconds: f64,
}

impl Report {
    /// The figures as one JSON object, keys as in the struct.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Per-point scores of a detector trained on `train` and run over `test`, with the time each took.
pub struct Scored {
    /// Scores, above `threshold` meaning anomalous.
    pub scores: Vec<f64>,
    pub threshold: f64,
    pub fit_seconds: f64,
    pub score_seconds: f64,
}

/// Trains on `train`, scores `test` point by point.
pub fn score(detector: &Detector, train: &Table, test: &Table) -> Result<Scored, EvalError> {
    match detector {
        Detector::Multivariate(params) => {
            let started = Instant::now();
            let model = MultivariateModel::train(params, train.metrics.clone(), &train.values)?;
            let fit_seconds = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let mut scorer = model.scorer();
            let scores = test.values.chunks_exact(test.metrics.len()).map(|row| scorer.score(row).score).collect();
            Ok(Scored { scores, threshold: 1.0, fit_seconds, score_seconds: started.elapsed().as_secs_f64() })
        }
        Detector::PlainForest(params) => {
            let started = Instant::now();
            let forest = IsolationForest::fit(params, &train.values, train.metrics.len())
                .map_err(|e| EvalError::Train(e.into()))?;
            let fit_seconds = started.elapsed().as_secs_f64();
            let started = Instant::now();
            let scores = forest.score_batch(&test.values);
            Ok(Scored { scores, threshold: 0.5, fit_seconds, score_seconds: started.elapsed().as_secs_f64() })
        }
    }
}

/// Runs the whole evaluation on two files.
pub fn run(detector: &Detector, train_path: &Path, test_path: &Path) -> Result<Report, EvalError> {
    let train = read_csv(train_path, false)?;
    let test = read_csv(test_path, true)?;
    if train.metrics != test.metrics {
        let what = match train.metrics.iter().zip(&test.metrics).position(|(a, b)| a != b) {
            Some(i) => format!("column {}: `{}` in training, `{}` in test", i + 2, train.metrics[i], test.metrics[i]),
            None => format!("{} metrics in training, {} in test", train.metrics.len(), test.metrics.len()),
        };
        return Err(EvalError::Mismatch {
            train: train_path.display().to_string(),
            test: test_path.display().to_string(),
            what,
        });
    }
    let labels = test.labels.as_deref().unwrap_or_default();
    let scored = score(detector, &train, &test)?;
    Ok(report(&scored, labels))
}

/// The figures for `scored` against `labels`.
pub fn report(scored: &Scored, labels: &[bool]) -> Report {
    let flags: Vec<bool> = scored.scores.iter().map(|s| *s > scored.threshold).collect();
    Report {
        auc_pr: metrics::average_precision(&scored.scores, labels),
        auc_roc: metrics::roc_auc(&scored.scores, labels),
        best_f1: metrics::best_f1(&scored.scores, labels),
        f1_at_threshold: metrics::f1(&flags, labels),
        pa_f1: metrics::point_adjusted_f1(&flags, labels),
        fit_seconds: scored.fit_seconds,
        score_seconds: scored.score_seconds,
    }
}

#[cfg(test)]
mod tests;
