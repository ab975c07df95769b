//! `replay`: recorded GPU telemetry played back as live `gpu` metrics, for machines without GPUs (CI,
//! demos). It reads Alibaba's GenAI serving trace (per-pod GPU duty cycle and memory used, one step
//! about a minute): the pods with the most samples (then the busiest) become GPUs 0…n-1, and each
//! collection emits the next step, wrapping around at the end. Every series carries
//! `source="replay"` and a `replay-` uuid, so it is never taken for real hardware.
//!
//! A polled source: the trace is loaded once when built; a trace that cannot be read makes the source
//! unavailable (reported once), as a missing NVIDIA library does for `gpu`.

use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::ReplaySettings;
use flate2::read::GzDecoder;
use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::path::Path;

/// One replayed GPU: its pod in the trace and a value per step (`None` where the pod has no sample:
/// the last value is held).
struct Track {
    pod: String,
    util: Vec<Option<f64>>,
    memory: Vec<Option<f64>>,
}

pub struct Replay {
    loaded: Result<Vec<Track>, String>,
    steps: usize,
    next: usize,
    last: Vec<(Option<f64>, Option<f64>)>,
}

impl Replay {
    /// Loads the trace files named in the settings.
    pub fn load(s: &ReplaySettings) -> Replay {
        let loaded = load(s);
        let steps = loaded.as_ref().map_or(0, |t| t.first().map_or(0, |t| t.util.len()));
        let gpus = loaded.as_ref().map_or(0, |t| t.len());
        Replay { loaded, steps, next: 0, last: vec![(None, None); gpus] }
    }
}

impl Source for Replay {
    fn name(&self) -> &'static str {
        "replay"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let tracks = self.loaded.as_ref().map_err(|e| SourceError::Unavailable(e.clone()))?;
        let step = self.next;
        self.next = (self.next + 1) % self.steps.max(1);
        for (i, t) in tracks.iter().enumerate() {
            let last = &mut self.last[i];
            last.0 = t.util.get(step).copied().flatten().or(last.0);
            last.1 = t.memory.get(step).copied().flatten().or(last.1);
            batch.push(
                Point::new("gpu", now)
                    .tag("gpu", i.to_string())
                    .tag("uuid", format!("replay-{}", &t.pod[..t.pod.len().min(12)]))
                    .tag("model", "replay")
                    .tag("source", "replay")
                    .field_opt("utilization_ratio", last.0.map(|v| v / 100.0))
                    .field_opt("memory_used_bytes", last.1),
            );
        }
        Ok(())
    }
}

fn load(s: &ReplaySettings) -> Result<Vec<Track>, String> {
    let util = series(&s.duty_cycle)?;
    let memory = match &s.memory_used {
        Some(p) => series(p)?,
        None => HashMap::new(),
    };
    // One step per distinct timestamp of the duty-cycle file.
    let mut times: Vec<i64> = util.values().flat_map(|m| m.keys().copied()).collect();
    times.sort_unstable();
    times.dedup();
    if times.is_empty() {
        return Err(format!("{}: no samples", s.duty_cycle.display()));
    }
    let mut pods: Vec<(&String, &BTreeMap<i64, f64>)> = util.iter().collect();
    let mean = |m: &BTreeMap<i64, f64>| m.values().sum::<f64>() / m.len().max(1) as f64;
    pods.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(mean(b.1).total_cmp(&mean(a.1))).then(a.0.cmp(b.0)));
    Ok(pods
        .into_iter()
        .take(s.gpus)
        .map(|(pod, u)| {
            let m = memory.get(pod);
            Track {
                pod: pod.clone(),
                util: times.iter().map(|t| u.get(t).copied()).collect(),
                memory: times.iter().map(|t| m.and_then(|m| m.get(t).copied())).collect(),
            }
        })
        .collect())
}

/// A trace CSV (`value`, `timestamp_anon`, `container_ip` in any column order), plain or as the trace
/// ships it (a gzipped tar holding the one CSV): value by time (seconds) by pod. Also read by
/// `argus eval pages`.
pub fn series(path: &Path) -> Result<HashMap<String, BTreeMap<i64, f64>>, String> {
    let what = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let raw = std::fs::read(path).map_err(|e| what(&e))?;
    let text = if raw.starts_with(&[0x1f, 0x8b]) {
        let mut tar = Vec::new();
        GzDecoder::new(&raw[..]).read_to_end(&mut tar).map_err(|e| what(&e))?;
        String::from_utf8_lossy(first_member(&tar).ok_or_else(|| what(&"not a tar archive with a file in it"))?)
            .into_owned()
    } else {
        String::from_utf8_lossy(&raw).into_owned()
    };
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap_or("").split(',').map(str::trim).collect();
    let col = |name: &str| header.iter().position(|h| *h == name).ok_or_else(|| what(&format!("no {name} column")));
    let (v, t, pod) = (col("value")?, col("timestamp_anon")?, col("container_ip")?);
    let mut out: HashMap<String, BTreeMap<i64, f64>> = HashMap::new();
    for (n, line) in lines.enumerate() {
        let f: Vec<&str> = line.split(',').collect();
        let parsed = (f.get(v).and_then(|s| s.parse::<f64>().ok()), f.get(t).and_then(|s| s.parse::<f64>().ok()));
        let (Some(value), Some(time), Some(p)) = (parsed.0, parsed.1, f.get(pod)) else {
            return Err(what(&format!("line {}: not value, time and pod", n + 2)));
        };
        out.entry(p.to_string()).or_default().insert(time as i64, value);
    }
    Ok(out)
}

/// The contents of the first regular file in a tar archive. Ustar headers are 512-byte blocks with the
/// size in octal at offset 124 and the type at 156; pax and GNU long-name records before the file are
/// skipped like any other member.
fn first_member(tar: &[u8]) -> Option<&[u8]> {
    let mut at = 0;
    while at + 512 <= tar.len() {
        let h = &tar[at..at + 512];
        if h.iter().all(|&b| b == 0) {
            return None;
        }
        let size_field = std::str::from_utf8(&h[124..136]).ok()?;
        let size = usize::from_str_radix(size_field.trim_matches(|c: char| c == '\0' || c == ' '), 8).ok()?;
        let body = at + 512;
        if matches!(h[156], b'0' | 0) {
            return tar.get(body..body + size);
        }
        at = body + size.div_ceil(512) * 512;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::golden;

    fn settings(duty: &str, gpus: usize) -> ReplaySettings {
        ReplaySettings {
            duty_cycle: golden::fixture(duty),
            memory_used: Some(golden::fixture("replay/pod_gpu_memory_used_bytes_anon.csv")),
            gpus,
        }
    }

    #[test]
    fn golden_replayed_steps_wrap_around() {
        let mut r = Replay::load(&settings("replay/pod_gpu_duty_cycle_anon.csv", 3));
        let mut b = Batch::new();
        // Seven collections of a six-step excerpt: the seventh is the first again.
        for i in 0..7 {
            r.collect(1_000 * (i + 1), &mut b).unwrap();
        }
        let by_time: Vec<String> =
            b.points.iter().map(|p| format!("{} gpu={} {} {:?}", p.t, p.tags[0].1, p.tags[1].1, p.fields)).collect();
        golden::check_text("replay", "txt", &(by_time.join("\n") + "\n"));
        assert_eq!(b.points[0].fields, b.points[18].fields, "step 7 is step 1");
        assert!(b.points.iter().all(|p| p.tags.contains(&("source".into(), "replay".into()))));
    }

    #[test]
    fn the_trace_archive_reads_as_its_csv() {
        let mut a = Replay::load(&settings("replay/pod_gpu_duty_cycle_anon.tar.gz", 4));
        let mut b = Replay::load(&settings("replay/pod_gpu_duty_cycle_anon.csv", 4));
        let (mut x, mut y) = (Batch::new(), Batch::new());
        a.collect(1, &mut x).unwrap();
        b.collect(1, &mut y).unwrap();
        assert_eq!(x, y);
        assert_eq!(x.len(), 4);
    }

    #[test]
    fn a_missing_trace_makes_the_source_unavailable() {
        let mut r = Replay::load(&settings("replay/nope.csv", 8));
        let e = r.collect(1, &mut Batch::new()).unwrap_err();
        assert!(matches!(e, SourceError::Unavailable(_)), "{e}");
        assert!(e.to_string().contains("nope.csv"), "{e}");
    }
}
