//! A real Slurm controller for tests: Debian's slurmctld (packages slurmctld, slurm-client and munge,
//! installed by scripts/install-peers.sh) on loopback, with its own munged, munge key, slurm.conf, port
//! and state in a temp dir, as the test's own user. No slurmd runs: nodes never register, so jobs stay
//! pending, which is enough for `scontrol show job` and for draining nodes.
//!
//! Programs are run with `SLURM_CONF` set to the cluster's slurm.conf, never through the test
//! process's environment, so tests in one binary may each start a cluster.

use crate::{Missing, free_port, program};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How to install what [`Cluster::start`] needs.
pub const INSTALL: &str =
    "install the Debian packages slurmctld, slurm-client and munge (scripts/install-peers.sh installs them)";

/// munged and slurmctld, children of the test, with everything they write in a temp dir. Fields drop
/// in order: slurmctld, munged, then the directory.
pub struct Cluster {
    slurmctld: Slurmctld,
    _munged: Killed,
    conf: PathBuf,
    dir: tempfile::TempDir,
}

impl Cluster {
    /// A cluster of two GPU nodes, gpu-node-07 and gpu-node-08, in one partition `gpu` (the default).
    /// Fails with [`Missing`] when munged, slurmctld or scontrol is not installed; panics, with the
    /// daemons' logs, when they are installed but do not come up.
    pub fn start() -> Result<Cluster, Missing> {
        Cluster::start_with("")
    }

    /// As [`Cluster::start`], with `extra` appended to slurm.conf (more partitions, say).
    pub fn start_with(extra: &str) -> Result<Cluster, Missing> {
        let munged_program = program("munged", INSTALL)?;
        let slurmctld_program = program("slurmctld", INSTALL)?;
        program("scontrol", INSTALL)?;
        let dir = tempfile::tempdir().unwrap();
        // munged wants every directory above its socket searchable by all, and its key private.
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let d = dir.path();
        let mut key = vec![0u8; 1024];
        let mut urandom = std::fs::File::open("/dev/urandom").unwrap();
        std::io::Read::read_exact(&mut urandom, &mut key).unwrap();
        std::fs::write(d.join("munge.key"), key).unwrap();
        std::fs::set_permissions(d.join("munge.key"), std::fs::Permissions::from_mode(0o400)).unwrap();
        let socket = d.join("munge.sock");
        let (out, err) = output_to(&d.join("munged.out"));
        let mut munged = Killed(
            Command::new(munged_program)
                .arg("--foreground")
                .arg(format!("--key-file={}", d.join("munge.key").display()))
                .arg(format!("--socket={}", socket.display()))
                .arg(format!("--pid-file={}", d.join("munged.pid").display()))
                .arg(format!("--seed-file={}", d.join("munged.seed").display()))
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot run munged ({e}): {INSTALL}")),
        );
        let start = Instant::now();
        while !socket.exists() {
            if let Ok(Some(s)) = munged.0.try_wait() {
                panic!("munged exited with {s}\n{}", logs(d));
            }
            assert!(start.elapsed() < Duration::from_secs(15), "munged made no socket in 15 s\n{}", logs(d));
            std::thread::sleep(Duration::from_millis(20));
        }
        let user = Command::new("id").arg("-un").output().unwrap();
        let user = String::from_utf8(user.stdout).unwrap().trim().to_string();
        std::fs::create_dir(d.join("state")).unwrap();
        std::fs::create_dir(d.join("spool")).unwrap();
        let conf = d.join("slurm.conf");
        let mut errors = Vec::new();
        for _ in 0..3 {
            let port = free_port();
            std::fs::write(&conf, slurm_conf(d, &socket, &user, port) + extra).unwrap();
            let _ = std::fs::remove_file(d.join("slurmctld.log"));
            let (out, err) = output_to(&d.join("slurmctld.out"));
            let mut slurmctld = Slurmctld(
                Command::new(&slurmctld_program)
                    .arg("-D")
                    .arg("-f")
                    .arg(&conf)
                    .stdin(Stdio::null())
                    .stdout(out)
                    .stderr(err)
                    .spawn()
                    .unwrap_or_else(|e| panic!("cannot run slurmctld ({e}): {INSTALL}")),
            );
            match wait_ready(&mut slurmctld, d, &conf, port) {
                Ok(()) => return Ok(Cluster { slurmctld, _munged: munged, conf, dir }),
                Err(e) => errors.push(e),
            }
        }
        panic!("slurmctld did not come up (three ports tried):\n{}", errors.join("\n"));
    }

    /// The cluster's slurm.conf: `SLURM_CONF` for Slurm's commands.
    pub fn conf(&self) -> &Path {
        &self.conf
    }

    /// Where the daemons keep their state and logs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What slurmctld and munged wrote, for a failure's message.
    pub fn logs(&self) -> String {
        logs(self.dir.path())
    }

    /// `program` (scontrol, sinfo, sbatch) against this cluster: its stdout and stderr.
    pub fn run(&self, program: &str, args: &[&str]) -> String {
        slurm(&self.conf, program, args)
    }

    pub fn scontrol(&self, args: &[&str]) -> String {
        self.run("scontrol", args)
    }

    /// A node's `State=` and `Reason=` (none when it has no reason), as `scontrol -o show node` prints.
    pub fn node(&self, name: &str) -> (String, Option<String>) {
        let line = self.scontrol(&["-o", "show", "node", name]);
        let state = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("State="))
            .unwrap_or_else(|| panic!("no State= in {line:?}"))
            .to_string();
        // Reason is the last field and has spaces.
        let reason = line.split_once(" Reason=").map(|(_, r)| r.trim_end().to_string());
        (state, reason)
    }

    /// Submits a held batch job (it never runs: no slurmd) with sbatch's `args` added (`-p debug`,
    /// `--uid=nobody`) and returns its id.
    pub fn submit_held(&self, args: &[&str]) -> String {
        let chdir = format!("--chdir={}", self.dir.path().display());
        let mut all =
            vec!["--hold", "--parsable", "--job-name=argus-test", "--output=/dev/null", &chdir, "--wrap=sleep 600"];
        all.extend_from_slice(args);
        let out = self.run("sbatch", &all);
        // `--parsable` prints `<id>` or `<id>;<cluster>`.
        let id = out.trim().split(';').next().unwrap_or_default();
        assert!(!id.is_empty() && id.chars().all(|c| c.is_ascii_digit()), "sbatch {all:?}: {out}\n{}", self.logs());
        id.to_string()
    }

    /// Stops slurmctld (munged stays): Slurm's commands then find no controller.
    pub fn stop(&mut self) {
        self.slurmctld.stop();
    }
}

/// A child process killed (SIGKILL) on drop: munged.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// slurmctld, stopped on drop.
struct Slurmctld(Child);

impl Slurmctld {
    /// SIGTERM (slurmctld stops its slurmscriptd and saves its state), SIGKILL after 10 s.
    fn stop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = Command::new("kill").args(["-TERM", &self.0.id().to_string()]).status();
            let start = Instant::now();
            while let Ok(None) = self.0.try_wait() {
                if start.elapsed() > Duration::from_secs(10) {
                    let _ = self.0.kill();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        let _ = self.0.wait();
    }
}

impl Drop for Slurmctld {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A child's stdout and stderr, both to one file.
fn output_to(path: &Path) -> (Stdio, Stdio) {
    let f = std::fs::File::create(path).unwrap();
    (Stdio::from(f.try_clone().unwrap()), Stdio::from(f))
}

fn logs(d: &Path) -> String {
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    format!(
        "--- slurmctld.log\n{}--- slurmctld's output\n{}--- munged's output\n{}",
        read("slurmctld.log"),
        read("slurmctld.out"),
        read("munged.out")
    )
}

fn slurm(conf: &Path, program: &str, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .env("SLURM_CONF", conf)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program} ({e}): {INSTALL}"));
    String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr)
}

/// Polls until slurmctld accepts connections on `port` and `scontrol ping` says it is up.
fn wait_ready(slurmctld: &mut Slurmctld, d: &Path, conf: &Path, port: u16) -> Result<(), String> {
    let start = Instant::now();
    let deadline = Duration::from_secs(30);
    loop {
        if let Ok(Some(s)) = slurmctld.0.try_wait() {
            return Err(format!("slurmctld exited with {s}\n{}", logs(d)));
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
            && slurm(conf, "scontrol", &["ping"]).contains("is UP")
        {
            return Ok(());
        }
        if start.elapsed() > deadline {
            return Err(format!("slurmctld not up after {deadline:?} on port {port}\n{}", logs(d)));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A one-host cluster: the controller on loopback, two GPU nodes that no slurmd serves.
fn slurm_conf(d: &Path, munge_socket: &Path, user: &str, port: u16) -> String {
    let d = d.display();
    let socket = munge_socket.display();
    format!(
        "ClusterName=argus-test
SlurmctldHost=localhost
SlurmctldPort={port}
SlurmdPort={slurmd_port}
SlurmUser={user}
SlurmdUser={user}
AuthType=auth/munge
AuthInfo=socket={socket}
CredType=cred/munge
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmctldDebug=info
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
MessageTimeout=2
NodeName=gpu-node-07 NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
NodeName=gpu-node-08 NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN
PartitionName=gpu Nodes=gpu-node-07,gpu-node-08 Default=YES MaxTime=INFINITE State=UP
",
        slurmd_port = free_port()
    )
}
