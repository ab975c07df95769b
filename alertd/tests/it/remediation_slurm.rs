//! Slurm remediation against a real controller: Debian's slurmctld 22.05 (packages slurmctld,
//! slurm-client and munge, installed by scripts/install-peers.sh) on loopback, with its own munged,
//! munge key, slurm.conf, port and state in a temp dir (`argus_testkit::slurm::Cluster`). No slurmd
//! runs: a node that never registered is drained all the same. alertd's remediation integration, built
//! from its YAML as `argus serve` builds it, runs `scontrol` from PATH with `SLURM_CONF` in its
//! environment, as an operator whose slurm.conf is not in /etc/slurm would run alertd; `scontrol show
//! node` and `sinfo` then show what slurmctld made of it. Skipped, saying why, where Slurm is not
//! installed (a failure under CI).

use argus_alertd::deliver::scheduler::remediation::MemoryLedger;
use argus_alertd::deliver::{self, Integration};
use argus_alertd::notify::Notification;
use argus_alertd::webhook::Message;
use argus_testkit::slurm::{Cluster, INSTALL};
use std::sync::Arc;
use std::time::Instant;

/// A notification to `sched` of a firing `GpuXidHardware` Xid 79 on `node` since `starts_at`, and a resolved
/// ECC fault on gpu-node-08 (not acted on).
fn notification(node: &str, starts_at: &str, at: i64) -> Notification {
    let message = serde_json::json!({
        "receiver": "sched", "status": "firing",
        "alerts": [
            {"status": "firing", "labels": {"alertname": "GpuXidHardware", "xid": "79", "class": "hardware", "host": node},
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
    let up = argus_testkit::program("sinfo", INSTALL).and_then(|_| Cluster::start());
    let mut cluster = match up {
        Ok(c) => c,
        Err(missing) => return argus_testkit::missing_peer(&missing),
    };
    let version = cluster.scontrol(&["--version"]);
    eprintln!("{} up in {:?}", version.trim(), started.elapsed());
    // alertd finds scontrol in PATH and scontrol finds slurm.conf through SLURM_CONF, which it takes
    // from alertd's environment.
    // SAFETY: no other thread of this process exists yet that could read the environment (the only
    // test in this binary; the runtime is built below).
    unsafe { std::env::set_var("SLURM_CONF", cluster.conf()) };
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
    send(&rem, &fault).unwrap_or_else(|e| panic!("drain failed: {e}\n{}", cluster.logs()));
    let (state, reason) = cluster.node("gpu-node-07");
    // No slurmd ever answered for the node: its base state stays UNKNOWN (DOWN once slurmctld gives up
    // on it), with the DRAIN flag; `sinfo` calls it drained.
    assert!(state.split('+').skip(1).any(|f| f == "DRAIN"), "gpu-node-07 is not draining: State={state}");
    let reason = reason.unwrap_or_else(|| panic!("gpu-node-07 has no Reason: State={state}"));
    // slurmctld appends who set the reason and when: `[root@2026-12-01T01:00:04]`.
    assert!(reason.starts_with("argus: xid-79 (GpuXidHardware) ["), "Reason={reason}");
    eprintln!("gpu-node-07: State={state} Reason={reason}");
    let sinfo = cluster.run("sinfo", &["--noheader", "--Node", "--format=%N|%T|%E"]);
    // A `*` after the state once slurmctld found the node not responding (no slurmd): left out.
    let rows: Vec<String> = sinfo.lines().map(|r| r.trim_end().replace("*|", "|")).collect();
    assert_eq!(rows, ["gpu-node-07|drained|argus: xid-79 (GpuXidHardware)", "gpu-node-08|unknown|none"], "{sinfo}");
    assert_eq!(cluster.node("gpu-node-08"), ("UNKNOWN".to_string(), None), "the other node is untouched");
    let log = std::fs::read_to_string(cluster.dir().join("slurmctld.log")).unwrap();
    assert!(log.contains("update_node: node gpu-node-07 reason set to: argus: xid-79 (GpuXidHardware)"), "{log}");
    let actions = ledger.actions();
    assert_eq!(actions.len(), 1, "the resolved ECC fault is not acted on: {actions:?}");
    assert_eq!((actions[0].target, actions[0].outcome), ("slurm", "remediated"));
    assert_eq!(
        actions[0].request,
        "scontrol update NodeName=gpu-node-07 State=DRAIN Reason=\"argus: xid-79 (GpuXidHardware)\""
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
    cluster.stop();
    let down = notification("gpu-node-08", "2026-11-30T06:00:00Z", 1_764_482_400_000);
    let err = send(&rem, &down).unwrap_err();
    assert!(err.is_retryable(), "{err}");
    let e = err.to_string();
    assert!(e.contains("for node gpu-node-08") && e.contains("Unable to contact slurm controller"), "{e}");
    eprintln!("done in {:?}", started.elapsed());
}
