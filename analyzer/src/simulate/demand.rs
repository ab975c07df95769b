//! Demand series for `argus simulate --demand`: reading, resampling to CES' 10-minute steps, and the split
//! into history (training and selection) and the test window the power policies are scored on.
//!
//! Two CSV layouts are read, told apart by their header: `timestamp,value` (nodes in use, or GPUs in use
//! when a GPUs-per-node count is given: each minute's GPUs become `ceil(gpus / gpus_per_node)` nodes) and
//! Helios' `time,active,total` (nodes in use and the fleet). Timestamps are `YYYY-MM-DD HH:MM:SS` (UTC),
//! RFC 3339, or Unix seconds or milliseconds.

use chrono::{DateTime, NaiveDateTime};
use std::path::Path;

/// CES' step: every series is max-resampled to 10 minutes.
pub const STEP_MS: i64 = 600_000;
/// Steps per day at [`STEP_MS`].
pub const DAY_STEPS: usize = 144;
/// The test window: the last 14 whole days.
pub const TEST_DAYS: usize = 14;

/// A demand series at [`STEP_MS`]: `demand[i]` and `total[i]` (nodes) hold for the step starting at
/// `start_ms + i * STEP_MS`.
#[derive(Debug, Clone, PartialEq)]
pub struct DemandSeries {
    pub start_ms: i64,
    pub demand: Vec<f64>,
    pub total: Vec<f64>,
}

/// How to read a series.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ReadOptions {
    /// `timestamp,value` holds GPUs in use, this many to a node.
    pub gpus_per_node: Option<u32>,
    /// The fleet size; default the `total` column, else the series' highest demand.
    pub total: Option<u64>,
}

/// Why a demand series could not be read.
#[derive(Debug, thiserror::Error)]
pub enum DemandError {
    #[error("{path}: {source}")]
    Io { path: String, source: std::io::Error },
    #[error("{path}: line {line}: {why}")]
    Parse { path: String, line: u64, why: String },
    #[error("{path}: header must be `timestamp,value` or `time,active,total`, got `{header}`")]
    Header { path: String, header: String },
    #[error("{path}: {why}")]
    Shape { path: String, why: String },
}

/// Reads and max-resamples a demand series. Steps with no point repeat the step before (CES' data has
/// none).
pub fn read(path: &Path, options: ReadOptions) -> Result<DemandSeries, DemandError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| DemandError::Io { path: name.clone(), source })?;
    parse(&text, &name, options)
}

/// [`read`] on the text of a file named `name` (for messages).
pub fn parse(text: &str, name: &str, options: ReadOptions) -> Result<DemandSeries, DemandError> {
    let mut lines = text.lines().enumerate();
    let header = lines.next().map(|(_, l)| l.trim()).unwrap_or_default();
    let cols: Vec<&str> = header.split(',').map(str::trim).collect();
    let helios = match cols.as_slice() {
        ["time", "active", "total"] => true,
        [_, "value"] => false,
        _ => return Err(DemandError::Header { path: name.into(), header: header.into() }),
    };
    let bad = |line: usize, why: String| DemandError::Parse { path: name.into(), line: line as u64 + 1, why };
    let mut points: Vec<(i64, f64, f64)> = Vec::new();
    for (n, line) in lines {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split(',').map(str::trim).collect();
        if f.len() != cols.len() {
            return Err(bad(n, format!("{} fields, the header has {}", f.len(), cols.len())));
        }
        let ts = timestamp_ms(f[0]).ok_or_else(|| bad(n, format!("bad timestamp `{}`", f[0])))?;
        let num = |s: &str| match s.parse::<f64>() {
            Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
            _ => Err(bad(n, format!("`{s}` is not a count"))),
        };
        let mut value = num(f[1])?;
        if let (false, Some(g)) = (helios, options.gpus_per_node) {
            value = (value / f64::from(g.max(1))).ceil();
        }
        let total = if helios { num(f[2])? } else { f64::NAN };
        points.push((ts, value, total));
    }
    let shape = |why: &str| DemandError::Shape { path: name.into(), why: why.into() };
    let first = points.iter().map(|p| p.0).min().ok_or_else(|| shape("no data rows"))?;
    let last = points.iter().map(|p| p.0).max().unwrap_or(first);
    let start_ms = first.div_euclid(STEP_MS) * STEP_MS;
    let steps = ((last.div_euclid(STEP_MS) * STEP_MS - start_ms) / STEP_MS) as usize + 1;
    let mut demand = vec![f64::NAN; steps];
    let mut total = vec![f64::NAN; steps];
    for &(ts, d, t) in &points {
        let i = ((ts.div_euclid(STEP_MS) * STEP_MS - start_ms) / STEP_MS) as usize;
        demand[i] = if demand[i].is_nan() { d } else { demand[i].max(d) };
        if !t.is_nan() {
            total[i] = if total[i].is_nan() { t } else { total[i].max(t) };
        }
    }
    fill_forward(&mut demand);
    let fleet = match options.total {
        Some(n) => Some(n as f64),
        None if helios => {
            fill_forward(&mut total);
            None
        }
        None => Some(demand.iter().copied().fold(0.0, f64::max)),
    };
    if let Some(n) = fleet {
        total.iter_mut().for_each(|t| *t = n);
    }
    Ok(DemandSeries { start_ms, demand, total })
}

impl DemandSeries {
    /// The first step of the test window: the last [`TEST_DAYS`] whole UTC days (a trailing partial day is
    /// left out, as CES leaves out Philly's 15 December). `None` when the series has no more than 14 whole
    /// days plus one day of history.
    pub fn test_window(&self) -> Option<std::ops::Range<usize>> {
        let end_ms = self.start_ms + self.demand.len() as i64 * STEP_MS;
        let last_midnight = end_ms.div_euclid(86_400_000) * 86_400_000;
        let test_start = last_midnight - (TEST_DAYS as i64) * 86_400_000;
        if test_start - self.start_ms < DAY_STEPS as i64 * STEP_MS {
            return None;
        }
        let from = ((test_start - self.start_ms) / STEP_MS) as usize;
        let to = ((last_midnight - self.start_ms) / STEP_MS) as usize;
        Some(from..to)
    }
}

fn fill_forward(x: &mut [f64]) {
    let first = x.iter().copied().find(|v| !v.is_nan()).unwrap_or(0.0);
    let mut last = first;
    for v in x.iter_mut() {
        if v.is_nan() {
            *v = last;
        } else {
            last = *v;
        }
    }
}

/// Unix milliseconds of `YYYY-MM-DD HH:MM:SS` (UTC), RFC 3339, or Unix seconds (below 1e11) or ms.
pub fn timestamp_ms(s: &str) -> Option<i64> {
    if let Ok(n) = s.parse::<i64>() {
        return Some(if n.abs() < 100_000_000_000 { n * 1000 } else { n });
    }
    if let Ok(t) = NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S") {
        return Some(t.and_utc().timestamp_millis());
    }
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series(text: &str, options: ReadOptions) -> DemandSeries {
        parse(text, "t.csv", options).unwrap()
    }

    #[test]
    fn max_resamples_and_converts_gpus() {
        let s = "timestamp,value\n2020-05-01 00:00:00,9\n2020-05-01 00:05:00,17\n2020-05-01 00:10:00,8\n\
                 2020-05-01 00:30:00,1\n";
        let nodes = series(s, ReadOptions::default());
        assert_eq!(nodes.demand, vec![17.0, 8.0, 8.0, 1.0]);
        assert_eq!(nodes.total, vec![17.0; 4]);
        let gpus = series(s, ReadOptions { gpus_per_node: Some(8), total: Some(5) });
        assert_eq!(gpus.demand, vec![3.0, 1.0, 1.0, 1.0]);
        assert_eq!(gpus.total, vec![5.0; 4]);
        let helios =
            series("time,active,total\n1970-01-01 00:00:00,3,10\n1970-01-01 00:10:00,4,12\n", ReadOptions::default());
        assert_eq!((helios.start_ms, helios.demand, helios.total), (0, vec![3.0, 4.0], vec![10.0, 12.0]));
    }

    #[test]
    fn errors_name_file_and_line() {
        let e = parse("timestamp,value\n2020-05-01 00:00:00,x\n", "a.csv", ReadOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "a.csv: line 2: `x` is not a count");
        let e = parse("a,b,c\n", "a.csv", ReadOptions::default()).unwrap_err();
        assert_eq!(e.to_string(), "a.csv: header must be `timestamp,value` or `time,active,total`, got `a,b,c`");
    }

    #[test]
    fn test_window_is_the_last_fourteen_whole_days() {
        // 20 days and 3 hours from midnight: the trailing 3 hours are left out, the test is days 6..20.
        let n = 20 * DAY_STEPS + 18;
        let s = DemandSeries { start_ms: 0, demand: vec![1.0; n], total: vec![1.0; n] };
        assert_eq!(s.test_window(), Some(6 * DAY_STEPS..20 * DAY_STEPS));
        let short = DemandSeries { start_ms: 0, demand: vec![1.0; 15 * DAY_STEPS - 1], total: vec![1.0; 1] };
        assert_eq!(short.test_window(), None);
    }
}
