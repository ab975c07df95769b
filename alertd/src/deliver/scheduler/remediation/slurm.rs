//! Slurm: a node with a GPU fault is drained with
//! `scontrol update NodeName=<node> State=DRAIN Reason="argus: <reason> (<alertname>)"`. Running jobs
//! finish; no new job starts on it until an operator resumes it.

use super::super::super::{BoxFuture, DeliverError};
use super::{Fault, Outcome, Target};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub const DEFAULT_SCONTROL: &str = "scontrol";

#[derive(Debug, Clone, PartialEq)]
pub struct SlurmConfig {
    /// The `scontrol` program: a path, or a name looked up in `PATH`.
    pub scontrol: PathBuf,
    pub timeout: Duration,
}

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
            let run = tokio::task::spawn_blocking(move || run(&program, &args, &node, timeout));
            run.await.map_err(|e| DeliverError::Request(format!("scontrol: {e}")))?
        })
    }
}

/// Runs scontrol for `node`, killing it past `timeout`. A node slurmctld does not know is a refusal;
/// other failures (slurmctld unreachable) are retried. Errors name the node: scontrol's own message
/// (`slurm_update error: Invalid node name specified`) does not.
fn run(program: &PathBuf, args: &[String], node: &str, timeout: Duration) -> Result<Outcome, DeliverError> {
    let name = program.display();
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| DeliverError::Request(format!("cannot run {name}: {e}")))?;
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
    let mut stderr = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut stderr);
    }
    let stderr = stderr.trim().chars().take(256).collect::<String>();
    match status.success() {
        true => Ok(Outcome::Applied),
        false if stderr.contains("Invalid node name") => {
            Err(DeliverError::Refused(format!("{name}: node {node}: {stderr}")))
        }
        false => Err(DeliverError::Request(format!("{name} exited with {status} for node {node}: {stderr}"))),
    }
}
