//! `events`: log files and the kernel log watched for the errors that stop training jobs — CUDA
//! out-of-memory and other CUDA errors, NCCL errors and timeouts, ECC errors, network links going
//! down — written as a counter per kind and log (`event_errors_total`) and as an event per matched
//! line carrying its text (`event_message`). Xid lines are the `gpu` source's and are skipped here.
//!
//! The logs are polled on the source's interval (`source::tail`), not streamed: a polled tail keeps
//! the one failure-and-deadline model of every other source, and a 10 s delay is nothing next to an
//! OOM's consequences. One matching line is one count: a traceback that repeats the error on two
//! lines counts twice.

use super::tail::Tail;
use super::{Source, SourceError};
use crate::batch::{Batch, Point};
use crate::config::EventsSettings;
use regex::Regex;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::LazyLock;

/// Longest event text kept; longer lines are cut (log lines with whole tensors in them exist).
const MAX_TEXT: usize = 2048;

/// The kinds, in the order tried: the first that matches a line wins, so a CUDA OOM is not also a
/// CUDA error, and an NCCL timeout not also an NCCL error.
static KINDS: LazyLock<Vec<(&'static str, Regex)>> = LazyLock::new(|| {
    [
        ("cuda_oom", r"(?i)CUDA out of memory|CUDA error: out of memory|cudaErrorMemoryAllocation|CUBLAS_STATUS_ALLOC_FAILED"),
        (
            "cuda_error",
            r"CUDA error: |CUDA_ERROR_[A-Z_]+|cudaError[A-Z]\w+|CUBLAS_STATUS_[A-Z_]+|CUDNN_STATUS_[A-Z_]+|illegal memory access was encountered",
        ),
        (
            "nccl_timeout",
            r"(?i)Watchdog caught collective operation timeout|NCCL[^\n]*timed? ?out|ProcessGroupNCCL[^\n]*timeout",
        ),
        (
            "nccl_error",
            r"NCCL WARN|NCCL ERROR|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ncclRemoteError|ncclInvalidUsage|NCCL error",
        ),
        ("ecc", r"(?i)EDAC [^:]+: \d+ (CE|UE) |uncorrectable ECC|ECC error|double[- ]bit ECC"),
        ("link_down", r"(?i)NIC Link is Down|\bLink is Down\b|\blink down\b|state changed to DOWN|\bLink Down\b"),
    ]
    .into_iter()
    // The patterns are constants, checked by the tests below.
    .map(|(k, p)| (k, Regex::new(p).expect("valid regex")))
    .collect()
});

struct Log {
    /// The `log` label: `kernel`, or the file's path.
    label: String,
    path: PathBuf,
    tail: Option<Tail>,
}

pub struct Events {
    logs: Vec<Log>,
    counts: BTreeMap<(String, &'static str), u64>,
}

impl Events {
    /// Opens every log at its end. A file that does not exist yet is opened, from its start, when it
    /// appears; an unreadable kernel log is left out, once, with a log line.
    pub fn new(settings: &EventsSettings) -> Events {
        let mut logs = Vec::new();
        if let Some(k) = &settings.kernel_log {
            match Tail::open(k, true) {
                Ok(t) => logs.push(Log { label: "kernel".into(), path: k.clone(), tail: Some(t) }),
                Err(error) => {
                    tracing::info!(path = %k.display(), %error, "Kernel log not readable; events come from log files only")
                }
            }
        }
        for f in &settings.files {
            logs.push(Log { label: f.display().to_string(), path: f.clone(), tail: Tail::open(f, true).ok() });
        }
        let mut counts = BTreeMap::new();
        // Every kind of every log starts at zero, so the first error of a kind is an increase.
        for log in &logs {
            for (kind, _) in KINDS.iter() {
                counts.insert((log.label.clone(), *kind), 0);
            }
        }
        Events { logs, counts }
    }
}

impl Source for Events {
    fn name(&self) -> &'static str {
        "events"
    }

    fn collect(&mut self, now: i64, batch: &mut Batch) -> Result<(), SourceError> {
        let mut first_error = None;
        for log in &mut self.logs {
            if log.tail.is_none() {
                match Tail::open(&log.path, false) {
                    Ok(t) => log.tail = Some(t),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(e) => {
                        first_error.get_or_insert(SourceError::io(&log.path, e));
                        continue;
                    }
                }
            }
            let Some(tail) = &mut log.tail else { continue };
            for line in tail.lines() {
                let Some(kind) = classify(&line) else { continue };
                *self.counts.entry((log.label.clone(), kind)).or_insert(0) += 1;
                let mut text = line.trim().to_string();
                if text.len() > MAX_TEXT {
                    let cut = (0..=MAX_TEXT).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
                    text.truncate(cut);
                }
                batch.push(Point::new("event", now).tag("kind", kind).tag("log", &log.label).text("message", text));
            }
        }
        for ((log, kind), n) in &self.counts {
            batch.push(Point::new("event", now).tag("kind", *kind).tag("log", log).field("errors_total", *n as f64));
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The kind of error a log line reports, if any.
pub fn classify(line: &str) -> Option<&'static str> {
    if line.contains("NVRM: Xid") {
        return None;
    }
    KINDS.iter().find(|(_, re)| re.is_match(line)).map(|(k, _)| *k)
}

#[cfg(test)]
mod tests;
