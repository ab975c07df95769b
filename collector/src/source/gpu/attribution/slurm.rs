//! A Slurm job's user and partition, from the controller: `scontrol -o show job <id>`.
//!
//! The job id comes from the cgroup of the GPU's processes (`cgroup.rs`); the controller is asked in
//! the background, never by a collection: a collection reads the cache and queues the jobs it lacks,
//! so a job's first collection may carry `slurm_job` alone. Answers are kept for `cache_ttl` (a job
//! that is not found, or whose answer cannot be read, too), failures are retried after
//! [`FAILURE_RETRY`] while the last known answer is kept, and the cache holds at most [`MAX_JOBS`].

use crate::config::SlurmSettings;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Jobs cached at most; the least recently asked is dropped first.
pub const MAX_JOBS: usize = 4096;
/// Jobs waiting for `scontrol` at most; more wait for a later collection.
const QUEUE: usize = 64;
/// How soon a job whose lookup failed (controller down, timeout) is asked again, at most.
pub const FAILURE_RETRY: Duration = Duration::from_secs(30);

/// What the controller says of a job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    pub user: String,
    pub partition: String,
}

/// Why `scontrol` gave no answer.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{program}: cannot run: {source}")]
    Spawn { program: String, source: std::io::Error },
    #[error("{program} -o show job {job}: no answer within {after:?}")]
    Timeout { program: String, job: String, after: Duration },
    #[error("{program} -o show job {job}: {status}: {output}")]
    Failed { program: String, job: String, status: std::process::ExitStatus, output: String },
}

/// What the lookups did, for self metrics and tests.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlurmStatus {
    /// `scontrol` runs finished (answered, failed or timed out).
    pub lookups: u64,
    pub failures: u64,
    /// The last lookup's error; `None` once `scontrol` answers again.
    pub error: Option<String>,
    /// Jobs in the cache.
    pub cached: usize,
}

/// The cache, shared by collections (readers) and the lookup loop (writer).
#[derive(Debug, Default)]
pub(super) struct Jobs {
    entries: HashMap<String, Entry>,
    queued: HashSet<String>,
    status: SlurmStatus,
}

#[derive(Debug)]
struct Entry {
    /// `None`: not found, or unreadable.
    info: Option<JobInfo>,
    asked: Instant,
    /// How long after `asked` the entry is used without asking again.
    fresh_for: Duration,
}

/// The collections' side: cached answers, and a queue to the lookup loop.
pub(super) struct Handle {
    jobs: Arc<Mutex<Jobs>>,
    queue: mpsc::Sender<String>,
}

/// The lookup loop's side.
pub(super) struct Lookups {
    settings: SlurmSettings,
    timeout: Duration,
    jobs: Arc<Mutex<Jobs>>,
    queue: mpsc::Receiver<String>,
}

/// The two sides of one cache.
pub(super) fn new(settings: &SlurmSettings, timeout: Duration) -> (Handle, Lookups) {
    let jobs = Arc::new(Mutex::new(Jobs::default()));
    let (tx, rx) = mpsc::channel(QUEUE);
    (Handle { jobs: jobs.clone(), queue: tx }, Lookups { settings: settings.clone(), timeout, jobs, queue: rx })
}

fn lock(jobs: &Mutex<Jobs>) -> std::sync::MutexGuard<'_, Jobs> {
    // Every write is a whole insert or remove: a panic elsewhere leaves nothing half-done.
    jobs.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A job id as Slurm writes it in cgroup paths: digits only (anything else is never passed to
/// `scontrol`).
fn is_job_id(job: &str) -> bool {
    !job.is_empty() && job.len() <= 20 && job.bytes().all(|b| b.is_ascii_digit())
}

// === impl Handle ===

impl Handle {
    /// The cached user and partition of `job`, queueing a lookup when there is none or it is stale.
    /// Never waits for `scontrol`.
    pub(super) fn info(&self, job: &str) -> Option<JobInfo> {
        if !is_job_id(job) {
            return None;
        }
        let mut jobs = lock(&self.jobs);
        let (info, fresh) = match jobs.entries.get(job) {
            Some(e) => (e.info.clone(), e.asked.elapsed() < e.fresh_for),
            None => (None, false),
        };
        if !fresh && !jobs.queued.contains(job) && self.queue.try_send(job.to_string()).is_ok() {
            jobs.queued.insert(job.to_string());
        }
        info
    }

    pub(super) fn status(&self) -> SlurmStatus {
        let jobs = lock(&self.jobs);
        SlurmStatus { cached: jobs.entries.len(), ..jobs.status.clone() }
    }
}

// === impl Lookups ===

impl Lookups {
    /// Answers queued jobs one at a time until every [`Handle`] is gone.
    pub(super) async fn run(mut self) {
        let mut failing = false;
        while let Some(job) = self.queue.recv().await {
            let result = self.ask(&job).await;
            match &result {
                Ok(_) if failing => {
                    failing = false;
                    tracing::info!(scontrol = %self.settings.scontrol.display(), "scontrol answering again");
                }
                Err(error) if !failing => {
                    failing = true;
                    tracing::warn!(
                        %error,
                        "Slurm job lookup failed; GPU series of its jobs carry slurm_job without user and partition"
                    );
                }
                _ => {}
            }
            self.record(job, result);
        }
    }

    pub(super) fn record(&self, job: String, result: Result<Option<JobInfo>, Error>) {
        let mut jobs = lock(&self.jobs);
        jobs.queued.remove(&job);
        jobs.status.lookups += 1;
        match &result {
            Ok(_) => jobs.status.error = None,
            Err(e) => {
                jobs.status.failures += 1;
                jobs.status.error = Some(e.to_string());
            }
        }
        let entry = match result {
            Ok(info) => Entry { info, asked: Instant::now(), fresh_for: self.settings.cache_ttl },
            Err(_) => Entry {
                // What was known before stays until the controller answers.
                info: jobs.entries.get(&job).and_then(|e| e.info.clone()),
                asked: Instant::now(),
                fresh_for: FAILURE_RETRY.min(self.settings.cache_ttl),
            },
        };
        if !jobs.entries.contains_key(&job) && jobs.entries.len() >= MAX_JOBS {
            let oldest = jobs.entries.iter().min_by_key(|(_, e)| e.asked).map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                jobs.entries.remove(&k);
            }
        }
        jobs.entries.insert(job, entry);
    }

    /// `scontrol -o show job <job>`: the job's user and partition; `None` when the controller does not
    /// know the job (finished long ago) or its answer cannot be read unambiguously.
    async fn ask(&self, job: &str) -> Result<Option<JobInfo>, Error> {
        let program = self.settings.scontrol.display().to_string();
        let mut cmd = tokio::process::Command::new(&self.settings.scontrol);
        cmd.args(["-o", "show", "job", job]).stdin(std::process::Stdio::null()).kill_on_drop(true);
        if let Some(conf) = &self.settings.slurm_conf {
            cmd.env("SLURM_CONF", conf);
        }
        let out = match tokio::time::timeout(self.timeout, cmd.output()).await {
            Err(_) => return Err(Error::Timeout { program, job: job.to_string(), after: self.timeout }),
            Ok(Err(source)) => return Err(Error::Spawn { program, source }),
            Ok(Ok(out)) => out,
        };
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if !out.status.success() {
            if stderr.contains("Invalid job id") || stdout.contains("Invalid job id") {
                return Ok(None);
            }
            let output = format!("{} {}", stdout.trim(), stderr.trim()).trim().to_string();
            return Err(Error::Failed { program, job: job.to_string(), status: out.status, output });
        }
        match parse(&stdout, job) {
            Ok(info) => Ok(Some(info)),
            Err(reason) => {
                tracing::warn!(job, %reason, "Slurm job's user and partition left out");
                Ok(None)
            }
        }
    }
}

/// The user and partition of `job` in `scontrol -o show job` output: `UserId=<name>(<uid>)` and
/// `Partition=<name>` of the record `JobId=<job>`.
///
/// The job's name and several other fields are free text that its owner chooses and that may hold
/// spaces, newlines and `key=value` look-alikes. So a record is every token from one `JobId=` to the
/// next, exactly one record must be `job`'s, and it must hold exactly one `UserId=` and one
/// `Partition=`: a look-alike makes the answer unreadable rather than wrong. (An array's first job
/// id lists every task, each its own record.)
pub fn parse(output: &str, job: &str) -> Result<JobInfo, String> {
    let mut records: Vec<Vec<&str>> = Vec::new();
    for token in output.split_whitespace() {
        match records.last_mut() {
            Some(r) if !token.starts_with("JobId=") => r.push(token),
            _ => records.push(vec![token]),
        }
    }
    let id = format!("JobId={job}");
    let mut ours = records.iter().filter(|r| r.first() == Some(&id.as_str()));
    let (Some(record), None) = (ours.next(), ours.next()) else {
        return Err(format!("not exactly one record {id} in the answer"));
    };
    let only = |key: &str| {
        let mut values = record.iter().filter_map(|t| t.strip_prefix(key));
        match (values.next(), values.next()) {
            (Some(v), None) if !v.is_empty() => Ok(v),
            (None, _) => Err(format!("no {key} in the record of job {job}")),
            _ => Err(format!("{key} appears more than once in the record of job {job} (free text look-alike)")),
        }
    };
    let user = only("UserId=")?;
    // `name(uid)`; a uid without a name where the controller's host cannot resolve it.
    let user = match user.rsplit_once('(') {
        Some((name, _)) if !name.is_empty() && name != "(null)" => name,
        Some((_, uid)) => uid.trim_end_matches(')'),
        None => user,
    };
    let partition = only("Partition=")?;
    Ok(JobInfo { user: user.to_string(), partition: partition.to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(output: &str, job: &str, expected: Expect) {
        expected.assert_eq(&format!("{:?}", parse(output, job)));
    }

    const RUNNING: &str = "JobId=4242 JobName=llama UserId=alice(1000) GroupId=ml(1000) MCS_label=N/A Priority=1 \
        Nice=0 Account=ml QOS=normal JobState=RUNNING Reason=None Partition=gpu AllocNode:Sid=login1:77 \
        WorkDir=/home/alice Command=/home/alice/train.sh \n";

    #[test]
    fn user_and_partition_from_scontrol_output() {
        check(RUNNING, "4242", expect![[r#"Ok(JobInfo { user: "alice", partition: "gpu" })"#]]);
        check(
            &RUNNING.replace("alice(1000)", "(null)(1000)"),
            "4242",
            expect![[r#"Ok(JobInfo { user: "1000", partition: "gpu" })"#]],
        );
        // An array's first id lists every task; each task is its own record.
        check(
            "JobId=77 ArrayJobId=77 ArrayTaskId=2-9 JobName=sweep UserId=bob(1001) Partition=debug\n\
             JobId=78 ArrayJobId=77 ArrayTaskId=1 JobName=sweep UserId=bob(1001) Partition=gpu\n",
            "78",
            expect![[r#"Ok(JobInfo { user: "bob", partition: "gpu" })"#]],
        );
        check(RUNNING, "4243", expect![[r#"Err("not exactly one record JobId=4243 in the answer")"#]]);
        check("", "4242", expect![[r#"Err("not exactly one record JobId=4242 in the answer")"#]]);
        check(
            &RUNNING.replace(" Partition=gpu", ""),
            "4242",
            expect![[r#"Err("no Partition= in the record of job 4242")"#]],
        );
    }

    #[test]
    fn a_job_name_imitating_fields_makes_the_answer_unreadable_not_wrong() {
        // Names with spaces and newlines are printed as they are, even with -o.
        for name in ["x UserId=root(0)", "x\n   UserId=root(0)\n   Partition=admin", "x Partition=admin"] {
            let out = RUNNING.replace("JobName=llama", &format!("JobName={name}"));
            let err = parse(&out, "4242").unwrap_err();
            assert!(err.contains("appears more than once"), "{name:?}: {err}");
        }
        // A look-alike record of the same job.
        let out = RUNNING.replace("JobName=llama", "JobName=x JobId=4242 UserId=root(0) Partition=admin");
        assert_eq!(parse(&out, "4242").unwrap_err(), "not exactly one record JobId=4242 in the answer");
        // A look-alike record of another job takes the genuine fields out of this job's record.
        let out = RUNNING.replace("JobName=llama", "JobName=x JobId=1");
        assert_eq!(parse(&out, "4242").unwrap_err(), "no UserId= in the record of job 4242");
        let out = RUNNING.replace("WorkDir=/home/alice", "WorkDir=/home/alice UserId=root(0)");
        assert!(parse(&out, "4242").is_err());
    }

    #[test]
    fn job_ids_passed_to_scontrol_are_digits() {
        let ids: Vec<bool> =
            ["4242", "", "-h", "12a", "1 2", "123456789012345678901"].iter().map(|j| is_job_id(j)).collect();
        assert_eq!(ids, [true, false, false, false, false, false]);
    }

    /// A controller that does not answer: `scontrol` hangs (here a script that sleeps) and is killed
    /// at the timeout.
    #[tokio::test(flavor = "current_thread")]
    async fn a_hanging_scontrol_times_out() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("scontrol");
        std::fs::write(&script, "#!/bin/sh\nexec sleep 30\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        let settings =
            SlurmSettings { scontrol: script.clone(), slurm_conf: None, cache_ttl: Duration::from_secs(300) };
        let (_handle, lookups) = new(&settings, Duration::from_millis(200));
        let start = Instant::now();
        let err = lookups.ask("7").await.unwrap_err();
        assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
        assert_eq!(err.to_string(), format!("{} -o show job 7: no answer within 200ms", script.display()));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn the_cache_is_bounded_and_keeps_known_answers_through_failures() {
        let settings = SlurmSettings {
            scontrol: "/nonexistent/scontrol".into(),
            slurm_conf: None,
            cache_ttl: Duration::from_secs(300),
        };
        let (handle, mut lookups) = new(&settings, Duration::from_secs(1));
        // A collection queues an unknown job once, however often it asks.
        assert_eq!(handle.info("7"), None);
        assert_eq!(handle.info("7"), None);
        assert_eq!(handle.info("not-a-job"), None);
        assert_eq!(lookups.queue.try_recv().ok().as_deref(), Some("7"));
        assert!(lookups.queue.try_recv().is_err());
        let alice = JobInfo { user: "alice".into(), partition: "gpu".into() };
        lookups.record("7".into(), Ok(Some(alice.clone())));
        assert_eq!(handle.info("7"), Some(alice.clone()));
        assert!(lookups.queue.try_recv().is_err(), "a fresh answer is not asked again");

        // The program cannot run: an error naming it, and the known answer is kept.
        let err = lookups.ask("7").await.unwrap_err();
        assert!(err.to_string().starts_with("/nonexistent/scontrol: cannot run: "), "{err}");
        lookups.record("7".into(), Err(err));
        assert_eq!(handle.info("7"), Some(alice));

        lookups.jobs.lock().unwrap().entries.clear();
        for j in 0..MAX_JOBS + 10 {
            lookups.record(j.to_string(), Ok(None));
        }
        let jobs = lookups.jobs.lock().unwrap();
        assert_eq!(jobs.entries.len(), MAX_JOBS);
        assert!(jobs.entries.contains_key(&(MAX_JOBS + 9).to_string()), "the newest is kept");
    }
}
