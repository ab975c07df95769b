//! Slurm: a node with a GPU fault is drained with
//! `scontrol update NodeName=<node> State=DRAIN Reason="argus: <reason> (<alertname>)"`. Running jobs
//! finish; no new job starts on it until an operator resumes it.

pub use crate::receiver::{DEFAULT_SCONTROL, SlurmConfig};

use super::super::super::{BoxFuture, DeliverError};
use super::{Fault, Outcome, Target};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct Slurm {
    pub cfg: SlurmConfig,
}

/// `scontrol`'s arguments for a fault (each one argument: no shell is involved).
pub fn args(f: &Fault) -> Vec<String> {
    vec![
        "update".into(),
        format!("NodeName={}", f.node),
        "State=DRAIN".into(),
        format!("Reason=argus: {} ({})", f.reason, f.alertname),
    ]
}

impl Target for Slurm {
    fn name(&self) -> &'static str {
        "slurm"
    }

    fn describe(&self, f: &Fault) -> String {
        let mut out = self.cfg.scontrol.display().to_string();
        for a in args(f) {
            out.push(' ');
            match a.split_once('=') {
                Some((k, v)) if v.contains(' ') => out.push_str(&format!("{k}=\"{v}\"")),
                _ => out.push_str(&a),
            }
        }
        out
    }

    fn apply<'a>(&'a self, f: &'a Fault) -> BoxFuture<'a, Result<Outcome, DeliverError>> {
        let program = self.cfg.scontrol.clone();
        let timeout = self.cfg.timeout;
        let args = args(f);
        let node = f.node.clone();
        Box::pin(async move {
            // tokio's process support is not compiled in; a blocking thread waits for the child.
            let run = tokio::task::spawn_blocking(move || drain(&program, &args, &node, timeout));
            run.await.map_err(|e| DeliverError::Request(format!("scontrol: {e}")))?
        })
    }
}

/// Whether `scontrol -o show node` output says the node is drained or draining (`IDLE+DRAIN`,
/// `MIXED+DRAIN`, `DOWN+DRAIN`, `DRAINED`, `DRAINING`, …).
pub fn drained(show: &str) -> bool {
    show.split_whitespace()
        .filter_map(|w| w.strip_prefix("State="))
        .any(|state| state.split('+').any(|s| s.starts_with("DRAIN")))
}

/// Drains `node` unless it is drained already: a second `scontrol update … State=DRAIN` would succeed
/// and overwrite the reason, the operator's own among them.
fn drain(program: &PathBuf, args: &[String], node: &str, timeout: Duration) -> Result<Outcome, DeliverError> {
    let show = ["-o".to_string(), "show".into(), "node".into(), node.to_string()];
    let (status, stdout, stderr) = run(program, &show, timeout)?;
    if !status.success() {
        // `show node` says `Node … not found` on stdout, other failures on stderr.
        let said = if stderr.is_empty() { stdout.chars().take(256).collect() } else { stderr };
        return Err(failed(program, node, status, &said));
    }
    if drained(&stdout) {
        return Ok(Outcome::Already);
    }
    let (status, _, stderr) = run(program, args, timeout)?;
    if !status.success() {
        return Err(failed(program, node, status, &stderr));
    }
    Ok(Outcome::Applied)
}

/// A failed scontrol run, naming the node (scontrol's own messages, `slurm_update error: Invalid node
/// name specified`, do not always): a node slurmctld does not know is a refusal; anything else
/// (slurmctld unreachable) is retried.
fn failed(program: &Path, node: &str, status: ExitStatus, said: &str) -> DeliverError {
    let name = program.display();
    if said.contains("Invalid node name") || said.contains("not found") {
        DeliverError::Refused(format!("{name}: node {node}: {said}"))
    } else {
        DeliverError::Request(format!("{name} exited with {status} for node {node}: {said}"))
    }
}

/// Runs `program` with `args`, killing it past `timeout`: its exit status, stdout and stderr (trimmed;
/// stderr cut to 256 characters).
fn run(program: &PathBuf, args: &[String], timeout: Duration) -> Result<(ExitStatus, String, String), DeliverError> {
    let name = program.display();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| DeliverError::Request(format!("cannot run {name}: {e}")))?;
    // `show node` prints one line and `update` nothing: well under a pipe's buffer, so waiting before
    // reading cannot block the child.
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) if start.elapsed() >= timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(DeliverError::Timeout);
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(DeliverError::Request(format!("{name}: {e}"))),
        }
    };
    let stdout = read_all(child.stdout.take());
    let stderr = read_all(child.stderr.take());
    Ok((status, stdout.trim().to_string(), stderr.trim().chars().take(256).collect()))
}

/// Everything left in a child's pipe (none: empty).
fn read_all(pipe: Option<impl Read>) -> String {
    let mut text = String::new();
    if let Some(mut p) = pipe {
        let _ = p.read_to_string(&mut text);
    }
    text
}
