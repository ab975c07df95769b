//! Reading the NAB corpus as NAB lays it out: `data/<dir>/<file>.csv` (`timestamp,value`),
//! `labels/combined_windows.json` (anomaly windows per file) and `config/profiles.json` (cost matrices).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A NAB scoring profile: the weights of a true positive, a false positive and a missed window.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// NAB's name: `standard`, `reward_low_FP_rate`, `reward_low_FN_rate`.
    pub name: String,
    pub tp_weight: f64,
    pub fp_weight: f64,
    pub fn_weight: f64,
}

/// One data file: its path relative to `data/` (the key of the labels) and its points.
#[derive(Debug, Clone)]
pub struct DataFile {
    pub path: String,
    pub timestamps: Vec<i64>,
    pub values: Vec<f64>,
    /// Anomaly windows as (first, last) timestamps, inclusive, in milliseconds.
    pub windows: Vec<(i64, i64)>,
}

/// The corpus: every labelled data file, sorted by path, and the profiles.
#[derive(Debug, Clone)]
pub struct Corpus {
    pub files: Vec<DataFile>,
    pub profiles: Vec<Profile>,
}

#[derive(Debug, thiserror::Error)]
pub enum CorpusError {
    #[error("{path}: {source}")]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{path}: {source}")]
    Json { path: PathBuf, source: serde_json::Error },
    #[error("{path}:{line}: {message}")]
    Csv { path: PathBuf, line: usize, message: String },
    #[error("{path}: {message}")]
    Labels { path: PathBuf, message: String },
}

impl Corpus {
    /// Loads the corpus under `root` (the NAB repository's layout).
    pub fn load(root: &Path) -> Result<Self, CorpusError> {
        let profiles = read_profiles(&root.join("config/profiles.json"))?;
        let labels_path = root.join("labels/combined_windows.json");
        let labels: BTreeMap<String, Vec<(String, String)>> = read_json(&labels_path)?;
        let mut files = Vec::with_capacity(labels.len());
        for (rel, windows) in &labels {
            let path = root.join("data").join(rel);
            let (timestamps, values) = read_series(&path, 1)?;
            let windows = windows
                .iter()
                .map(|(a, b)| {
                    let parse = |s: &str| {
                        parse_timestamp(s).ok_or_else(|| CorpusError::Labels {
                            path: labels_path.clone(),
                            message: format!("{rel}: bad window timestamp {s:?}"),
                        })
                    };
                    Ok((parse(a)?, parse(b)?))
                })
                .collect::<Result<Vec<_>, CorpusError>>()?;
            files.push(DataFile { path: rel.clone(), timestamps, values, windows });
        }
        Ok(Corpus { files, profiles })
    }
}

/// Reads NAB's profiles in a fixed order (standard, low FP, low FN) so reports line up.
pub fn read_profiles(path: &Path) -> Result<Vec<Profile>, CorpusError> {
    #[derive(Deserialize)]
    struct Entry {
        #[serde(rename = "CostMatrix")]
        cost: Cost,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Cost {
        tp_weight: f64,
        fp_weight: f64,
        fn_weight: f64,
    }
    let raw: BTreeMap<String, Entry> = read_json(path)?;
    let mut profiles = Vec::new();
    for name in PROFILE_NAMES {
        let e = raw.get(name).ok_or_else(|| CorpusError::Labels {
            path: path.to_path_buf(),
            message: format!("profile {name:?} missing"),
        })?;
        profiles.push(Profile {
            name: name.to_string(),
            tp_weight: e.cost.tp_weight,
            fp_weight: e.cost.fp_weight,
            fn_weight: e.cost.fn_weight,
        });
    }
    Ok(profiles)
}

/// NAB's profile names, in report order.
pub const PROFILE_NAMES: [&str; 3] = ["standard", "reward_low_FP_rate", "reward_low_FN_rate"];

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, CorpusError> {
    let text = fs::read_to_string(path).map_err(|source| CorpusError::Io { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|source| CorpusError::Json { path: path.to_path_buf(), source })
}

/// Reads a NAB CSV with a header: the first column a timestamp, `column` a number. Timestamps are kept in file order:
/// a few NAB files repeat or step back over an hour (daylight saving), and NAB scores them as they are.
pub fn read_series(path: &Path, column: usize) -> Result<(Vec<i64>, Vec<f64>), CorpusError> {
    let text = fs::read_to_string(path).map_err(|source| CorpusError::Io { path: path.to_path_buf(), source })?;
    let err = |line: usize, message: String| CorpusError::Csv { path: path.to_path_buf(), line, message };
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    for (i, line) in text.lines().enumerate().skip(1) {
        if line.trim().is_empty() {
            continue;
        }
        let mut fields = line.split(',');
        let t = fields.next().unwrap_or_default();
        let t = parse_timestamp(t).ok_or_else(|| err(i + 1, format!("bad timestamp {t:?}")))?;
        let v = fields.nth(column - 1).ok_or_else(|| err(i + 1, format!("no column {column}")))?;
        let v: f64 = v.trim().parse().map_err(|_| err(i + 1, format!("bad number {v:?}")))?;
        ts.push(t);
        vs.push(v);
    }
    Ok((ts, vs))
}

/// `YYYY-MM-DD HH:MM:SS[.ffffff]` (UTC) to milliseconds since the epoch.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    let fmt = if s.contains('.') { "%Y-%m-%d %H:%M:%S%.f" } else { "%Y-%m-%d %H:%M:%S" };
    chrono::NaiveDateTime::parse_from_str(s, fmt).ok().map(|t| t.and_utc().timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_with_and_without_fraction() {
        assert_eq!(parse_timestamp("1970-01-01 00:00:01"), Some(1000));
        assert_eq!(parse_timestamp("1970-01-01 00:00:01.000000"), Some(1000));
        assert_eq!(parse_timestamp("1970-01-01T00:00:01"), None);
    }
}
