//! The demo's training jobs: one data-parallel pretraining job per replayed Helios pool.
//!
//! The Helios excerpt has no job records (the raw job log is not public in the artifact), only each
//! virtual cluster's running GPUs per minute; a job's pace follows them: it steps at
//! `running GPUs / GPUS_PER_STEP_RATE` steps a second, so a pool that loses GPUs trains slower. Every
//! other training series is derived plainly from the step: loss and evaluation loss falling as a power
//! of the step, a cosine learning rate over the run, a gradient norm settling with the loss, throughput
//! and MFU proportional to the pace, a checkpoint every [`CHECKPOINT_EVERY`] steps. Labels are the
//! collector's `train` source's: `job` and `rank`, each rank on its own host.

use super::counter::Counter;
use std::fmt::Write as _;

/// Steps a second per running GPU of the pool.
const STEP_RATE_PER_GPU: f64 = 1.0 / 128.0;
const RANKS: usize = 2;
const CHECKPOINT_EVERY: f64 = 500.0;
/// How long a checkpoint takes, in seconds.
const CHECKPOINT_SECONDS: f64 = 45.0;
const TOKENS_PER_STEP: f64 = 4.0 * 1024.0 * 1024.0;
const SAMPLES_PER_STEP: f64 = 1024.0;

pub struct Job {
    pub name: String,
    steps: Counter,
    /// Highest pace of the trace, for MFU.
    top_rate: f64,
    total: f64,
}

impl Job {
    /// The job of a pool whose running GPUs per minute are `running`.
    pub fn new(pool: &str, running: &[f64]) -> Job {
        let rate: Vec<f64> = running.iter().map(|g| g * STEP_RATE_PER_GPU).collect();
        let top_rate = rate.iter().copied().fold(0.0, f64::max);
        // A run lasts about twice the trace: the demo's history shows it half done.
        let period: f64 = rate.iter().sum::<f64>() * 60.0;
        let total = (2.0 * period / 1000.0).ceil().max(1.0) * 1000.0;
        Job { name: format!("{pool}-pretrain"), steps: Counter::new(rate), top_rate, total }
    }

    /// The job's series at `t`, its run started at `origin` (a new run after the last step).
    pub fn lines(&self, t: i64, origin: i64, out: &mut String) {
        let done = self.steps.since(origin, t);
        let step = (done % self.total).floor();
        let epoch = done / (self.total / 4.0);
        let rate = self.steps.rate(t);
        let eta = if rate > 0.0 { (self.total - step) / rate } else { f64::NAN };
        let x = step / self.total;
        let loss = 1.9 + 6.0 / (1.0 + step / 40.0).sqrt() + 0.02 * (step / 7.0).sin();
        let eval_loss = 1.95 + 6.0 / (1.0 + step / 40.0).sqrt();
        let lr = 3e-4 * 0.5 * (1.0 + (std::f64::consts::PI * x).cos());
        let grad_norm = 0.6 + 3.0 / (1.0 + step / 80.0).sqrt() + 0.05 * (step / 3.0).sin();
        let mfu = if self.top_rate > 0.0 { 0.45 * rate / self.top_rate } else { 0.0 };
        // The last checkpoint began when the step crossed a multiple of CHECKPOINT_EVERY.
        let since_checkpoint = if rate > 0.0 { (step % CHECKPOINT_EVERY) / rate } else { f64::INFINITY };
        let in_checkpoint = i32::from(step >= CHECKPOINT_EVERY && since_checkpoint < CHECKPOINT_SECONDS);
        let checkpoints = (step / CHECKPOINT_EVERY).floor();
        let since_progress = if rate > 0.0 { (done.fract() / rate).min(3600.0) } else { 3600.0 };
        let stalled = i32::from(rate <= 0.0);
        for rank in 0..RANKS {
            let labels = format!("cluster=demo,demo=true,host=demo-{}-{rank},job={},rank={rank}", self.name, self.name);
            let eta = if eta.is_finite() { format!(",eta_seconds={eta}") } else { String::new() };
            let _ = writeln!(
                out,
                "train,{labels} step={step},total_steps={},epoch={epoch},loss={loss},eval_loss={eval_loss},\
                 learning_rate={lr},grad_norm={grad_norm},steps_per_second={rate},samples_per_second={},\
                 tokens_per_second={},mfu_ratio={mfu},checkpoint_in_progress={in_checkpoint},\
                 checkpoint_duration_seconds={CHECKPOINT_SECONDS},checkpoints_total={checkpoints},stalled={stalled},\
                 seconds_since_progress={since_progress}{eta} {t}",
                self.total,
                rate * SAMPLES_PER_STEP / RANKS as f64,
                rate * TOKENS_PER_STEP / RANKS as f64,
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_steps_with_its_pools_gpus_and_its_loss_falls() {
        let job = Job::new("vcX", &[64.0; 10]);
        let at = |t: i64, field: &str| {
            let mut out = String::new();
            job.lines(t, 0, &mut out);
            let line = out.lines().next().unwrap();
            let i = line.find(&format!(",{field}=")).or_else(|| line.find(&format!(" {field}="))).unwrap();
            line[i + field.len() + 2..].split([',', ' ']).next().unwrap().parse::<f64>().unwrap()
        };
        // 64 GPUs: half a step a second, 300 steps in ten minutes.
        assert_eq!(at(600_000, "step"), 300.0);
        assert_eq!(at(600_000, "steps_per_second"), 0.5);
        assert!(at(600_000, "loss") < at(60_000, "loss"));
        assert!(at(600_000, "eta_seconds") > 0.0);
    }
}
