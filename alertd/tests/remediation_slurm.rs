//! Slurm remediation against a real controller: Debian's slurmctld 22.05 (packages slurmctld,
//! slurm-client and munge, installed by scripts/install-peers.sh) on loopback, with its own munged,
//! munge key, slurm.conf, port and state in a temp dir. No slurmd runs: a node that never registered
//! is drained all the same. alertd's remediation integration, built from its YAML as `argus serve`
//! builds it, runs `scontrol` from PATH with `SLURM_CONF` in its environment, as an operator whose
//! slurm.conf is not in /etc/slurm would run alertd; `scontrol show node` and `sinfo` then show
//! what slurmctld made of it.

use argus_alertd::deliver::scheduler::remediation::MemoryLedger;
use argus_alertd::deliver::{self, Integration};
use argus_alertd::notify::Notification;
use argus_alertd::webhook::Message;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const INSTALL: &str =
    "install the Debian packages slurmctld, slurm-client and munge (scripts/install-peers.sh installs them)";

/// `name` in PATH, or in /usr/sbin (daemons, often not in a user's PATH).
fn program(name: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} not found in PATH or /usr/sbin: {INSTALL}"))
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A child's stdout and stderr, both to one file.
fn output_to(path: &Path) -> (Stdio, Stdio) {
    let f = std::fs::File::create(path).unwrap();
    (Stdio::from(f.try_clone().unwrap()), Stdio::from(f))
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

/// munged and slurmctld, children of the test, with everything they write in `dir`. Fields drop in
/// order: slurmctld, munged, then the directory.
struct Cluster {
    slurmctld: Slurmctld,
    _munged: Killed,
    conf: PathBuf,
    dir: tempfile::TempDir,
}

/// What slurmctld and munged wrote, for a failure's message.
fn logs(d: &Path) -> String {
    let read = |f: &str| std::fs::read_to_string(d.join(f)).unwrap_or_default();
    format!(
        "--- slurmctld.log\n{}--- slurmctld's output\n{}--- munged's output\n{}",
        read("slurmctld.log"),
        read("slurmctld.out"),
        read("munged.out")
    )
}

/// `program` (scontrol, sinfo) against the controller of `conf`: stdout and stderr.
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

impl Cluster {
    /// Starts munged, then slurmctld on a free port (another one if that port was taken meanwhile),
    /// and waits until `scontrol ping` finds the controller up.
    fn start() -> Cluster {
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
            Command::new(program("munged"))
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
            std::fs::write(&conf, slurm_conf(d, &socket, &user, port)).unwrap();
            let _ = std::fs::remove_file(d.join("slurmctld.log"));
            let (out, err) = output_to(&d.join("slurmctld.out"));
            let mut slurmctld = Slurmctld(
                Command::new(program("slurmctld"))
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
                Ok(()) => return Cluster { slurmctld, _munged: munged, conf, dir },
                Err(e) => errors.push(e),
            }
        }
        panic!("slurmctld did not come up (three ports tried):\n{}", errors.join("\n"));
    }

    fn scontrol(&self, args: &[&str]) -> String {
        slurm(&self.conf, "scontrol", args)
    }

    /// A node's `State=` and `Reason=` (none when it has no reason), as `scontrol -o show node` prints.
    fn node(&self, name: &str) -> (String, Option<String>) {
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

/// A notification to `sched` of a firing `GpuXid` code 79 on `node` since `starts_at`, and a resolved
/// ECC fault on gpu-node-08 (not acted on).
fn notification(node: &str, starts_at: &str, at: i64) -> Notification {
    let message = serde_json::json!({
        "receiver": "sched", "status": "firing",
        "alerts": [
            {"status": "firing", "labels": {"alertname": "GpuXid", "code": "79", "host": node},
             "annotations": {}, "startsAt": starts_at, "endsAt": "0001-01-01T00:00:00Z",
             "generatorURL": "", "fingerprint": format!("xid-{node}")},
            {"status": "resolved", "labels": {"alertname": "GpuEccUncorrectable", "host": "gpu-node-08"},
             "annotations": {}, "startsAt": "2026-11-30T03:00:00Z", "endsAt": "2026-11-30T03:30:00Z",
             "generatorURL": "", "fingerprint": "ecc-gpu-node-08"}
        ],
        "groupLabels": {"host": node}, "commonLabels": {}, "commonAnnotations": {}, "externalURL": "",
        "version": "4", "groupKey": format!("{{}}:{{host=\"{node}\"}}"), "truncatedAlerts": 0
    });
    let message: Message = serde_json::from_value(message).unwrap();
    Notification {
        at: argus_alertd::Timestamp::from_millis(at),
        previous: None,
        receiver: "sched".into(),
        integration: "sched/remediation/0".into(),
        message,
    }
}

const ALERTD: &str = "route: {receiver: sched}
receivers:
  - name: sched
    scheduler_configs:
      - url: 'http://127.0.0.1:9/'
        remediation: {enabled: true, slurm: {timeout: 30s}}
";

/// The only test in this binary: it sets the process's environment before any other thread runs.
#[test]
fn a_real_slurmctld_drains_the_faulty_node_and_refuses_an_unknown_one() {
    let started = Instant::now();
    // scontrol (alertd runs it) and sinfo: slurm-client.
    program("scontrol");
    program("sinfo");
    let mut cluster = Cluster::start();
    let version = cluster.scontrol(&["--version"]);
    eprintln!("{} up in {:?}", version.trim(), started.elapsed());
    // alertd finds scontrol in PATH and scontrol finds slurm.conf through SLURM_CONF, which it takes
    // from alertd's environment.
    // SAFETY: no other thread of this process exists yet that could read the environment (the only
    // test in this binary; the runtime is built below).
    unsafe { std::env::set_var("SLURM_CONF", &cluster.conf) };
    assert_eq!(cluster.node("gpu-node-07"), ("UNKNOWN".to_string(), None));

    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let cfg = argus_alertd::config::parse(ALERTD, "alertd.yml").unwrap();
    let ledger = Arc::new(MemoryLedger::default());
    let integrations = deliver::build_with_ledger(&cfg, ledger.clone()).unwrap();
    let rem = integrations["sched/remediation/0"].clone();
    let send = |rem: &Arc<dyn Integration>, n: &Notification| {
        let body = rem.render(n).unwrap();
        let key = argus_alertd::outbox::idempotency_key(n);
        rt.block_on(rem.send(&body, &key))
    };

    let fault = notification("gpu-node-07", "2026-11-30T04:00:00Z", 1_764_475_300_000);
    send(&rem, &fault).unwrap_or_else(|e| panic!("drain failed: {e}\n{}", logs(cluster.dir.path())));
    let (state, reason) = cluster.node("gpu-node-07");
    // No slurmd ever answered for the node: its base state stays UNKNOWN (DOWN once slurmctld gives up
    // on it), with the DRAIN flag; `sinfo` calls it drained.
    assert!(state.split('+').skip(1).any(|f| f == "DRAIN"), "gpu-node-07 is not draining: State={state}");
    let reason = reason.unwrap_or_else(|| panic!("gpu-node-07 has no Reason: State={state}"));
    // slurmctld appends who set the reason and when: `[root@2026-12-01T01:00:04]`.
    assert!(reason.starts_with("argus: xid-79 (GpuXid) ["), "Reason={reason}");
    eprintln!("gpu-node-07: State={state} Reason={reason}");
    let sinfo = slurm(&cluster.conf, "sinfo", &["--noheader", "--Node", "--format=%N|%T|%E"]);
    // A `*` after the state once slurmctld found the node not responding (no slurmd): left out.
    let rows: Vec<String> = sinfo.lines().map(|r| r.trim_end().replace("*|", "|")).collect();
    assert_eq!(rows, ["gpu-node-07|drained|argus: xid-79 (GpuXid)", "gpu-node-08|unknown|none"], "{sinfo}");
    assert_eq!(cluster.node("gpu-node-08"), ("UNKNOWN".to_string(), None), "the other node is untouched");
    let log = std::fs::read_to_string(cluster.dir.path().join("slurmctld.log")).unwrap();
    assert!(log.contains("update_node: node gpu-node-07 reason set to: argus: xid-79 (GpuXid)"), "{log}");
    let actions = ledger.actions();
    assert_eq!(actions.len(), 1, "the resolved ECC fault is not acted on: {actions:?}");
    assert_eq!((actions[0].target, actions[0].outcome), ("slurm", "remediated"));
    assert_eq!(
        actions[0].request,
        "scontrol update NodeName=gpu-node-07 State=DRAIN Reason=\"argus: xid-79 (GpuXid)\""
    );

    // Notified again: the ledger has it, scontrol does not run (the reason keeps its first time).
    send(&rem, &notification("gpu-node-07", "2026-11-30T04:00:00Z", 1_764_475_600_000)).unwrap();
    assert_eq!(ledger.actions().len(), 1);
    assert_eq!(cluster.node("gpu-node-07").1.as_ref(), Some(&reason));

    // A node slurmctld does not know: a refusal (not retried) naming the node and quoting scontrol.
    let ghost = notification("gpu-node-99", "2026-11-30T05:00:00Z", 1_764_478_800_000);
    let err = send(&rem, &ghost).unwrap_err();
    assert!(!err.is_retryable(), "{err}");
    // alertd reads the node's state first: `scontrol -o show node` answers `Node … not found` (stdout).
    assert_eq!(err.to_string(), "receiver refused the message: scontrol: node gpu-node-99: Node gpu-node-99 not found");
    let actions = ledger.actions();
    assert_eq!((actions[1].fault.node.as_str(), actions[1].outcome), ("gpu-node-99", "remediation_failed"));
    assert_eq!(actions[1].error.as_deref(), Some(err.to_string().as_str()));
    assert_eq!(cluster.node("gpu-node-08"), ("UNKNOWN".to_string(), None), "the other node is untouched");

    // A node an operator drained: alertd leaves it, and its reason, alone.
    cluster.scontrol(&["update", "NodeName=gpu-node-08", "State=DRAIN", "Reason=operator: maintenance"]);
    let (_, before) = cluster.node("gpu-node-08");
    let before = before.expect("the operator's reason");
    assert!(before.starts_with("operator: maintenance"), "Reason={before}");
    send(&rem, &notification("gpu-node-08", "2026-11-30T05:30:00Z", 1_764_480_600_000)).unwrap();
    let last = ledger.actions().last().cloned().unwrap();
    assert_eq!((last.fault.node.as_str(), last.outcome), ("gpu-node-08", "already_remediated"));
    assert_eq!(cluster.node("gpu-node-08").1, Some(before), "the operator's reason is kept");

    // slurmctld down: a failure that the outbox retries, naming the node.
    cluster.slurmctld.stop();
    let down = notification("gpu-node-08", "2026-11-30T06:00:00Z", 1_764_482_400_000);
    let err = send(&rem, &down).unwrap_err();
    assert!(err.is_retryable(), "{err}");
    let e = err.to_string();
    assert!(e.contains("for node gpu-node-08") && e.contains("Unable to contact slurm controller"), "{e}");
    eprintln!("done in {:?}", started.elapsed());
}
