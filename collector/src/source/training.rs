//! `training`: progress of training jobs, pushed by the jobs to a local endpoint (`POST /progress`,
//! JSON) or read from their logs (Hugging Face Trainer dict lines, tqdm / PyTorch Lightning bars,
//! `key=value` lines; `training/parse.rs`). Each report becomes a `train` point at once, labelled by
//! `job` and `rank`; on the source's interval the logs are read and every known job gets its stall
//! gauges (`train_stalled`: no step progress for `stall_after`).
//!
//! An async task (style.md: push sources are tasks feeding the same batches): the endpoint answers as
//! soon as the report is handed to the sinks' queues, so a job never waits on the store.

use super::tail::Tail;
use super::{Task, Ticker};
use crate::batch::{Batch, Point};
use crate::config::{TrainingLog, TrainingSettings};
use crate::emit::{Emit, now_ms};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::watch;

mod http;
pub mod parse;

pub use http::router;

/// What a job says about itself at one moment; every field optional.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Progress {
    /// The optimizer step (for Lightning's bar, the batch within the epoch).
    pub step: Option<f64>,
    pub total_steps: Option<f64>,
    pub epoch: Option<f64>,
    pub loss: Option<f64>,
    pub eval_loss: Option<f64>,
    pub grad_norm: Option<f64>,
    pub learning_rate: Option<f64>,
    pub samples_per_second: Option<f64>,
    pub steps_per_second: Option<f64>,
    pub tokens_per_second: Option<f64>,
    /// Model FLOPs utilization as a ratio (0.41, not 41).
    pub mfu: Option<f64>,
    pub eta_seconds: Option<f64>,
}

/// A push to the endpoint: who, when, and the progress or checkpoint it reports. The progress keys
/// are [`Progress`]'s, repeated because serde cannot refuse unknown keys next to `flatten`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Report {
    pub job: String,
    #[serde(default)]
    pub rank: Rank,
    /// Seconds since the Unix epoch; default the time it arrived.
    pub time: Option<f64>,
    /// "start" or "end" of a checkpoint save.
    pub checkpoint: Option<Checkpoint>,
    /// The job finished: its series stop (no stall is reported for it).
    #[serde(default)]
    pub done: bool,
    step: Option<f64>,
    total_steps: Option<f64>,
    epoch: Option<f64>,
    loss: Option<f64>,
    eval_loss: Option<f64>,
    grad_norm: Option<f64>,
    learning_rate: Option<f64>,
    samples_per_second: Option<f64>,
    steps_per_second: Option<f64>,
    tokens_per_second: Option<f64>,
    mfu: Option<f64>,
    eta_seconds: Option<f64>,
}

/// A rank as a number or a string.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Rank {
    Num(u64),
    Text(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Checkpoint {
    Start,
    End,
}

/// Every job heard from, by (job, rank): what progress and stall detection need.
#[derive(Debug, Default)]
pub struct Jobs {
    jobs: BTreeMap<(String, String), JobState>,
}

#[derive(Debug, Default)]
struct JobState {
    /// The last (epoch, step) seen, and when it last changed.
    position: (Option<f64>, Option<f64>),
    progressed_at: i64,
    heard_at: i64,
    /// The step and time of the last two distinct steps, for an ETA the job does not report.
    prev_step: Option<(f64, i64)>,
    checkpoint_started: Option<i64>,
    checkpoints: u64,
}

pub struct Training {
    interval: Duration,
    settings: TrainingSettings,
}

// === impl Report ===

impl Report {
    pub fn progress(&self) -> Progress {
        Progress {
            step: self.step,
            total_steps: self.total_steps,
            epoch: self.epoch,
            loss: self.loss,
            eval_loss: self.eval_loss,
            grad_norm: self.grad_norm,
            learning_rate: self.learning_rate,
            samples_per_second: self.samples_per_second,
            steps_per_second: self.steps_per_second,
            tokens_per_second: self.tokens_per_second,
            mfu: self.mfu,
            eta_seconds: self.eta_seconds,
        }
    }
}

// === impl Rank ===

impl Default for Rank {
    fn default() -> Rank {
        Rank::Num(0)
    }
}

impl std::fmt::Display for Rank {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rank::Num(n) => write!(f, "{n}"),
            Rank::Text(s) => f.write_str(s),
        }
    }
}

// === impl Progress ===

impl Progress {
    /// How many fields are set.
    pub(crate) fn known(&self) -> usize {
        self.fields(None).count()
    }

    /// Each field from `self`, else from `other`.
    pub(crate) fn or(self, other: Progress) -> Progress {
        Progress {
            step: self.step.or(other.step),
            total_steps: self.total_steps.or(other.total_steps),
            epoch: self.epoch.or(other.epoch),
            loss: self.loss.or(other.loss),
            eval_loss: self.eval_loss.or(other.eval_loss),
            grad_norm: self.grad_norm.or(other.grad_norm),
            learning_rate: self.learning_rate.or(other.learning_rate),
            samples_per_second: self.samples_per_second.or(other.samples_per_second),
            steps_per_second: self.steps_per_second.or(other.steps_per_second),
            tokens_per_second: self.tokens_per_second.or(other.tokens_per_second),
            mfu: self.mfu.or(other.mfu),
            eta_seconds: self.eta_seconds.or(other.eta_seconds),
        }
    }

    fn fields(&self, eta: Option<f64>) -> impl Iterator<Item = (&'static str, f64)> {
        [
            ("step", self.step),
            ("total_steps", self.total_steps),
            ("epoch", self.epoch),
            ("loss", self.loss),
            ("eval_loss", self.eval_loss),
            ("grad_norm", self.grad_norm),
            ("learning_rate", self.learning_rate),
            ("samples_per_second", self.samples_per_second),
            ("steps_per_second", self.steps_per_second),
            ("tokens_per_second", self.tokens_per_second),
            ("mfu_ratio", self.mfu),
            ("eta_seconds", self.eta_seconds.or(eta)),
        ]
        .into_iter()
        .filter_map(|(k, v)| v.filter(|v| v.is_finite()).map(|v| (k, v)))
    }
}

// === impl Jobs ===

impl Jobs {
    /// Takes in one report at `now` (ms) and returns its point (none when it carries nothing).
    pub fn observe(&mut self, job: &str, rank: &str, r: &Progress, checkpoint: Option<Checkpoint>, now: i64) -> Point {
        let s = self
            .jobs
            .entry((job.to_string(), rank.to_string()))
            .or_insert_with(|| JobState { progressed_at: now, ..Default::default() });
        s.heard_at = now;
        let mut p = Point::new("train", now).tag("job", job).tag("rank", rank);
        let position = (r.epoch.or(s.position.0), r.step.or(s.position.1));
        if (r.step.is_some() || r.epoch.is_some()) && position != s.position {
            s.position = position;
            s.progressed_at = now;
        }
        // ETA from the step rate when the job reports its total but not its ETA.
        let mut eta = None;
        if let (Some(step), Some(total)) = (r.step, r.total_steps) {
            if let Some((prev, at)) = s.prev_step
                && step > prev
                && now > at
            {
                let rate = (step - prev) / ((now - at) as f64 / 1000.0);
                eta = Some(((total - step) / rate).max(0.0));
            }
            if s.prev_step.is_none_or(|(prev, _)| step != prev) {
                s.prev_step = Some((step, now));
            }
        }
        for (k, v) in r.fields(eta) {
            p = p.field(k, v);
        }
        match checkpoint {
            Some(Checkpoint::Start) => {
                s.checkpoint_started = Some(now);
                p = p.field("checkpoint_in_progress", 1.0);
            }
            Some(Checkpoint::End) => {
                s.checkpoints += 1;
                if let Some(started) = s.checkpoint_started.take() {
                    p = p.field("checkpoint_duration_seconds", (now - started) as f64 / 1000.0);
                }
                p = p.field("checkpoint_in_progress", 0.0).field("checkpoints_total", s.checkpoints as f64);
            }
            None => {}
        }
        p
    }

    /// Whether a checkpoint of this job is under way.
    pub fn in_checkpoint(&self, job: &str, rank: &str) -> bool {
        self.jobs.get(&(job.to_string(), rank.to_string())).is_some_and(|s| s.checkpoint_started.is_some())
    }

    pub fn forget(&mut self, job: &str, rank: &str) {
        self.jobs.remove(&(job.to_string(), rank.to_string()));
    }

    /// The stall gauges of every job, after forgetting those silent for `forget_after`.
    pub fn stall_points(&mut self, now: i64, stall_after: Duration, forget_after: Duration, batch: &mut Batch) {
        self.jobs.retain(|_, s| now - s.heard_at < forget_after.as_millis() as i64);
        for ((job, rank), s) in &self.jobs {
            let since = (now - s.progressed_at).max(0) as f64 / 1000.0;
            batch.push(
                Point::new("train", now)
                    .tag("job", job)
                    .tag("rank", rank)
                    .field("stalled", if since >= stall_after.as_secs_f64() { 1.0 } else { 0.0 })
                    .field("seconds_since_progress", since)
                    .field("checkpoints_total", s.checkpoints as f64),
            );
        }
    }
}

// === impl Training ===

impl Training {
    pub fn new(interval: Duration, settings: TrainingSettings) -> Training {
        Training { interval, settings }
    }
}

impl Task for Training {
    fn name(&self) -> &'static str {
        "training"
    }

    fn run(self: Box<Self>, emit: Emit, stop: watch::Receiver<bool>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(run(*self, emit, stop))
    }
}

async fn run(t: Training, emit: Emit, stop: watch::Receiver<bool>) {
    let jobs = Arc::new(Mutex::new(Jobs::default()));
    let mut listen_error = None;
    if let Some(addr) = t.settings.listen {
        match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                let app = router(jobs.clone(), emit.clone(), t.settings.token.clone());
                let mut stop = stop.clone();
                tokio::spawn(async move {
                    let shutdown = async move {
                        let _ = stop.changed().await;
                    };
                    if let Err(error) = axum::serve(l, app).with_graceful_shutdown(shutdown).await {
                        tracing::error!(%error, "Training endpoint stopped");
                    }
                });
                tracing::info!(listen = %addr, "Training progress endpoint: POST /progress");
            }
            Err(error) => {
                tracing::error!(listen = %addr, %error, "Cannot open the training endpoint; logs are still read");
                listen_error = Some(error);
            }
        }
    }
    let mut logs = LogSet::new(&t.settings.logs);
    let mut ticker = Ticker::new(t.interval, stop);
    while ticker.next().await {
        let started = Instant::now();
        let now = now_ms();
        let mut batch = Batch::new();
        let read_ok = {
            // The lock is held only for in-memory work; the reads are of what the log grew since the last tick.
            let mut jobs = jobs.lock().unwrap_or_else(|p| p.into_inner());
            let ok = logs.read(&mut jobs, now, &mut batch);
            jobs.stall_points(now, t.settings.stall_after, t.settings.forget_after, &mut batch);
            ok
        };
        emit.report("training", now, started.elapsed(), read_ok && listen_error.is_none(), &mut batch);
        if !emit.send(batch).await {
            return;
        }
    }
}

/// The trainer logs followed, each with its labels.
pub struct LogSet {
    logs: Vec<(TrainingLog, Option<Tail>)>,
}

impl LogSet {
    /// Opens every log at its end; one that does not exist yet is read from its start once it appears.
    pub fn new(logs: &[TrainingLog]) -> LogSet {
        LogSet {
            logs: logs.iter().map(|l| (l.clone(), Tail::open(&l.path, true).ok().map(Tail::cr_ends_line))).collect(),
        }
    }

    /// Reads what every log grew and turns its progress lines into points; false when a log that
    /// exists could not be opened. Of several bar drawings in a row only the last is kept; the points of
    /// one log in one round are stamped a millisecond apart, in order, so none overwrites another.
    pub fn read(&mut self, jobs: &mut Jobs, now: i64, batch: &mut Batch) -> bool {
        let mut ok = true;
        for (log, tail) in &mut self.logs {
            if tail.is_none() {
                match Tail::open(&log.path, false) {
                    Ok(t) => *tail = Some(t.cr_ends_line()),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                    Err(error) => {
                        tracing::warn!(path = %log.path.display(), %error, "Cannot open trainer log");
                        ok = false;
                        continue;
                    }
                }
            }
            let Some(tail) = tail else { continue };
            let mut lines: Vec<parse::Line> = Vec::new();
            for l in tail.lines().iter().filter_map(|l| parse::line(l)) {
                if matches!((&l, lines.last()), (parse::Line::Bar(_), Some(parse::Line::Bar(_)))) {
                    lines.pop();
                }
                lines.push(l);
            }
            let n = lines.len() as i64;
            for (i, l) in lines.into_iter().enumerate() {
                let t = now - (n - 1 - i as i64);
                let (p, checkpoint) = match l {
                    parse::Line::CheckpointStart => (Progress::default(), Some(Checkpoint::Start)),
                    // The trainer logs no checkpoint end: its next progress line is after it.
                    parse::Line::Progress(p) | parse::Line::Bar(p) => {
                        (p, jobs.in_checkpoint(&log.job, &log.rank).then_some(Checkpoint::End))
                    }
                };
                batch.push(jobs.observe(&log.job, &log.rank, &p, checkpoint, t));
            }
        }
        ok
    }
}

#[cfg(test)]
mod tests;
