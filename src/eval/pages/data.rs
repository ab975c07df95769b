//! The long normal telemetry `argus eval pages` replays, read from the shared data folder
//! (../shared/data/README.md says what is where), each series named as the collector would name it so
//! the runtime's default rules watch it:
//!
//! - `genai`: Alibaba's GenAI serving trace, each pod's GPU duty cycle as `gpu_utilization_ratio`
//!   (percent / 100); pods in order of their id, eight to a `host` (GPUs 0–7), the last host short.
//! - `helios`: SenseTime's Helios Earth cluster, each virtual cluster's `gpu_utilization` (a pool's
//!   share of busy GPUs) as `gpu_utilization_ratio` with the VC as `host`.
//! - `smd`: the Server Machine Dataset's training halves, every metric of every machine as
//!   `host_cpu_busy_ratio{host=machine, series="mN"}` (scaled server metrics, watched as a host series).
//!
//! Alibaba's v2023 GPU trace lists pods and nodes, not telemetry over time, so it has no series here.

use anyhow::{Context, Result, bail};
use argus_model::{Labels, Sample};
use std::collections::BTreeMap;
use std::path::Path;

/// One series: its labels (with `__name__`), samples in time order on the set's step, and its group
/// (a host's GPUs) where it has one.
#[derive(Debug, Clone)]
pub struct Input {
    pub labels: Labels,
    pub samples: Vec<Sample>,
    pub group: Option<usize>,
}

/// One data set: series on one step (ms).
#[derive(Debug, Clone)]
pub struct DataSet {
    pub name: &'static str,
    pub step: i64,
    pub series: Vec<Input>,
}

impl DataSet {
    /// Moves every sample by `by` ms.
    pub fn shift(&mut self, by: i64) {
        for s in &mut self.series {
            for p in &mut s.samples {
                p.t += by;
            }
        }
    }

    /// Keeps the first `days` days of every series (from the set's first sample).
    pub fn truncate_days(&mut self, days: f64) {
        let Some(first) = self.series.iter().filter_map(|s| s.samples.first()).map(|p| p.t).min() else { return };
        let end = first + (days * super::faults::DAY as f64) as i64;
        for s in &mut self.series {
            s.samples.retain(|p| p.t < end);
        }
        self.series.retain(|s| !s.samples.is_empty());
    }

    pub fn first(&self) -> Option<i64> {
        self.series.iter().filter_map(|s| s.samples.first()).map(|p| p.t).min()
    }

    pub fn last(&self) -> Option<i64> {
        self.series.iter().filter_map(|s| s.samples.last()).map(|p| p.t).max()
    }
}

/// The data sets, in the order they run.
pub const NAMES: [&str; 3] = ["genai", "helios", "smd"];

/// Loads data set `name` from `dir`, or `None` when its files are not there.
pub fn load(dir: &Path, name: &str) -> Result<Option<DataSet>> {
    match name {
        "genai" => genai(dir),
        "helios" => helios(dir),
        "smd" => smd(dir),
        other => bail!("unknown data set {other:?} (known: {})", NAMES.join(", ")),
    }
}

const STEP: i64 = 60_000;

fn labels(metric: &str, pairs: &[(&str, &str)]) -> Labels {
    let mut l = Labels::from_pairs(pairs.iter().map(|(n, v)| (n.to_string(), v.to_string())));
    l.set(argus_model::METRIC_NAME, metric);
    l
}

fn genai(dir: &Path) -> Result<Option<DataSet>> {
    let base = dir.join("alibaba/cluster-trace-v2026-GenAI");
    let path = match (base.join("pod_gpu_duty_cycle_anon.csv"), base.join("pod_gpu_duty_cycle_anon.tar.gz")) {
        (csv, _) if csv.exists() => csv,
        (_, tgz) if tgz.exists() => tgz,
        _ => return Ok(None),
    };
    let mut pods: BTreeMap<String, BTreeMap<i64, f64>> = BTreeMap::new();
    for (pod, values) in argus_collector::source::replay::series(&path).map_err(anyhow::Error::msg)? {
        // The trace's steps are about a minute: each sample goes to its nearest minute.
        let minutes =
            values.into_iter().map(|(t, v)| (((t * 1000) as f64 / STEP as f64).round() as i64 * STEP, v / 100.0));
        pods.entry(pod).or_default().extend(minutes);
    }
    let series = pods
        .into_iter()
        .enumerate()
        .map(|(i, (pod, values))| {
            let (host, gpu) = (format!("genai-{:02}", i / 8), (i % 8).to_string());
            Input {
                labels: labels(
                    "gpu_utilization_ratio",
                    &[("cluster", "genai"), ("host", &host), ("gpu", &gpu), ("pod", &pod)],
                ),
                samples: values.into_iter().map(|(t, v)| Sample { t, v }).collect(),
                group: Some(i / 8),
            }
        })
        .collect();
    Ok(Some(DataSet { name: "genai", step: STEP, series }))
}

fn helios(dir: &Path) -> Result<Option<DataSet>> {
    let base = dir.join("helios/earth_vcs");
    let Ok(entries) = std::fs::read_dir(&base) else { return Ok(None) };
    let mut files: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| is_csv(p)).collect();
    files.sort();
    let mut series = Vec::new();
    for path in files {
        let vc = path.file_stem().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        let samples = columns(&path, "time", &["gpu_utilization"])?.remove(0).1;
        series.push(Input {
            labels: labels("gpu_utilization_ratio", &[("cluster", "helios"), ("host", &vc)]),
            samples,
            group: None,
        });
    }
    Ok((!series.is_empty()).then_some(DataSet { name: "helios", step: STEP, series }))
}

fn smd(dir: &Path) -> Result<Option<DataSet>> {
    let base = dir.join("smd");
    let Ok(entries) = std::fs::read_dir(&base) else { return Ok(None) };
    let mut machines: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).filter(|p| p.is_dir()).collect();
    machines.sort();
    let mut series = Vec::new();
    for m in machines {
        let train = m.join("train.csv");
        if !train.exists() {
            continue;
        }
        let host = m.file_name().and_then(|s| s.to_str()).unwrap_or_default().to_string();
        for (metric, samples) in columns(&train, "timestamp", &[])? {
            series.push(Input {
                labels: labels("host_cpu_busy_ratio", &[("cluster", "smd"), ("host", &host), ("series", &metric)]),
                samples,
                group: None,
            });
        }
    }
    Ok((!series.is_empty()).then_some(DataSet { name: "smd", step: STEP, series }))
}

fn is_csv(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "csv")
}

/// The named value columns of a CSV (every column but the time and a `label` when `names` is empty),
/// keyed by a time column of Unix seconds or `YYYY-MM-DD HH:MM:SS` (UTC). Empty cells are gaps.
fn columns(path: &Path, time: &str, names: &[&str]) -> Result<Vec<(String, Vec<Sample>)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let tcol =
        header.iter().position(|h| *h == time).with_context(|| format!("{}: no {time} column", path.display()))?;
    let wanted: Vec<(usize, &str)> = match names {
        [] => header.iter().copied().enumerate().filter(|&(i, h)| i != tcol && h != "label").collect(),
        names => names
            .iter()
            .map(|n| {
                let i = header.iter().position(|h| h == n);
                i.map(|i| (i, *n)).with_context(|| format!("{}: no {n} column", path.display()))
            })
            .collect::<Result<_>>()?,
    };
    let mut out: Vec<(String, Vec<Sample>)> = wanted.iter().map(|(_, n)| (n.to_string(), Vec::new())).collect();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let at = || format!("{} line {}", path.display(), n + 2);
        let raw = f.get(tcol).map(|s| s.trim()).unwrap_or_default();
        let t = match raw.parse::<f64>() {
            Ok(secs) => (secs * 1000.0).round() as i64,
            Err(_) => argus_analyzer::eval::nab::corpus::parse_timestamp(raw)
                .with_context(|| format!("{}: bad time {raw:?}", at()))?,
        };
        for (k, (i, _)) in wanted.iter().enumerate() {
            let cell = f.get(*i).map(|s| s.trim()).unwrap_or_default();
            if cell.is_empty() {
                continue;
            }
            let v: f64 = cell.parse().with_context(|| format!("{}: bad number {cell:?}", at()))?;
            out[k].1.push(Sample { t, v });
        }
    }
    for (_, s) in &mut out {
        s.sort_by_key(|p| p.t);
        s.dedup_by_key(|p| p.t);
    }
    Ok(out)
}
