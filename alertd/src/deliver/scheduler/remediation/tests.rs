//! Remediation: which alerts are faults, the Kubernetes requests against a local API server that
//! checks them as the real one would (method, path, content type, token, patch shape), the exact
//! `scontrol` command line (run through a stand-in script that records its arguments), dry runs, and
//! that a fault is acted on once.

use super::kubernetes::{Kubernetes, KubernetesConfig, NodeAction, PATCH_CONTENT_TYPE};
use super::slurm::{Slurm, SlurmConfig};
use super::*;
use crate::outbox::tests::notification;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use serde_json::{Value, json};
use std::time::Duration;

fn kv(pairs: &[(&str, &str)]) -> Kv {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Labels, the configured node label, and the fault reason and node expected.
type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a str>, Option<(&'a str, &'a str)>);

#[test]
fn faults_and_nodes() {
    let cases: &[Case] = &[
        // The default rules: every hardware Xid, by its code in `xid`.
        (&[("alertname", "GpuXidHardware"), ("xid", "79"), ("host", "gpu-7")], None, Some(("xid-79", "gpu-7"))),
        (&[("alertname", "GpuXidHardware"), ("xid", "95"), ("host", "gpu-7")], None, Some(("xid-95", "gpu-7"))),
        (&[("alertname", "GpuXidHardware"), ("xid", "119"), ("node", "n1")], None, Some(("xid-119", "n1"))),
        (&[("alertname", "GpuXidHardware"), ("host", "gpu-7")], None, None),
        (&[("alertname", "GpuXidHardware"), ("xid", "79; reboot"), ("host", "gpu-7")], None, None),
        // Application Xids are the job's, and unclassified ones nobody's yet: never remediated.
        (&[("alertname", "GpuXidApplication"), ("xid", "13"), ("host", "gpu-7")], None, None),
        (&[("alertname", "GpuXidOther"), ("xid", "999"), ("host", "gpu-7")], None, None),
        (&[("alertname", "GpuMissing"), ("host", "gpu-7")], None, Some(("gpu-missing", "gpu-7"))),
        (
            &[("alertname", "NvSwitchSxidFatal"), ("sxid", "20034"), ("host", "gpu-7")],
            None,
            Some(("sxid-20034", "gpu-7")),
        ),
        (&[("alertname", "NvSwitchSxidFatal"), ("host", "gpu-7")], None, None),
        // The older example rules' `GpuXid`, code 48 or 79 only.
        (&[("alertname", "GpuXid"), ("code", "79"), ("host", "gpu-7")], None, Some(("xid-79", "gpu-7"))),
        (&[("alertname", "GpuXid"), ("code", "48"), ("node", "n1"), ("host", "h")], None, Some(("xid-48", "n1"))),
        (&[("alertname", "GpuXid"), ("code", "13"), ("host", "gpu-7")], None, None),
        (&[("alertname", "GpuXid"), ("code", "95"), ("host", "gpu-7")], None, None),
        (
            &[("alertname", "GpuEccUncorrectable"), ("instance", "10.0.0.7:9400")],
            None,
            Some(("ecc-uncorrectable", "10.0.0.7")),
        ),
        (
            &[("alertname", "GpuRowRemapFailed"), ("kubernetes_node", "k8s-3")],
            Some("kubernetes_node"),
            Some(("row-remap-failure", "k8s-3")),
        ),
        (&[("alertname", "GpuRowRemapFailed"), ("host", "bad node; rm -rf")], None, None),
        (&[("alertname", "GpuHot"), ("host", "gpu-7")], None, None),
    ];
    for (labels, label, want) in cases {
        let l = kv(labels);
        let got = fault_reason(&l).and_then(|r| Some((r, node_of(&l, *label)?)));
        assert_eq!(got.as_ref().map(|(r, n)| (r.as_str(), n.as_str())), *want, "{labels:?}");
    }
}

/// A notification of one firing GPU fault on gpu-node-07 (and a resolved one, not acted on).
fn fault_notification(previous: i64) -> Notification {
    let mut n = notification(
        "{}:{host=\"gpu-node-07\"}",
        "sched/remediation/0",
        1_700_000_000_000 + previous,
        &[("a1", Status::Firing), ("b2", Status::Resolved)],
    );
    n.previous = Some(Timestamp::from_millis(previous));
    n.receiver = "sched".into();
    n.message.alerts[0].labels =
        kv(&[("alertname", "GpuXidHardware"), ("xid", "79"), ("class", "hardware"), ("host", "gpu-node-07")]);
    n.message.alerts[0].starts_at = Timestamp::from_millis(1_699_999_000_000);
    n.message.alerts[1].labels = kv(&[("alertname", "GpuEccUncorrectable"), ("host", "gpu-node-08")]);
    n
}

/// A request as the API server saw it.
#[derive(Debug, Clone)]
struct Req {
    method: Method,
    path: String,
    headers: HeaderMap,
    body: Value,
}

#[derive(Default)]
struct ApiServer {
    got: Mutex<Vec<Req>>,
    /// The node's taints, as the server keeps them.
    taints: Mutex<Value>,
}

async fn api(
    State(s): State<Arc<ApiServer>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> (StatusCode, String) {
    let body: Value =
        if body.is_empty() { Value::Null } else { serde_json::from_slice(&body).unwrap_or(json!("not json")) };
    s.got.lock().unwrap().push(Req {
        method: method.clone(),
        path: uri.path().into(),
        headers: headers.clone(),
        body: body.clone(),
    });
    if headers.get("authorization").map(|v| v.to_str().unwrap()) != Some("Bearer sa-token") {
        return (StatusCode::UNAUTHORIZED, json!({"kind": "Status", "message": "Unauthorized"}).to_string());
    }
    match (method, uri.path()) {
        (Method::GET, "/api/v1/nodes/gpu-node-07") => {
            let node = json!({"kind": "Node", "metadata": {"name": "gpu-node-07", "resourceVersion": "42"},
                "spec": {"taints": s.taints.lock().unwrap().clone()}});
            (StatusCode::OK, node.to_string())
        }
        (Method::PATCH, "/api/v1/nodes/gpu-node-07" | "/api/v1/nodes/gpu-node-07/status") => {
            if headers["content-type"] != PATCH_CONTENT_TYPE {
                return (StatusCode::UNSUPPORTED_MEDIA_TYPE, json!({"message": "bad patch type"}).to_string());
            }
            if let Some(t) = body.pointer("/spec/taints") {
                *s.taints.lock().unwrap() = t.clone();
            }
            (StatusCode::OK, json!({"kind": "Node"}).to_string())
        }
        _ => (StatusCode::NOT_FOUND, json!({"kind": "Status", "message": "nodes \"x\" not found"}).to_string()),
    }
}

struct Cluster {
    server: Arc<ApiServer>,
    url: String,
    dir: tempfile::TempDir,
}

async fn cluster(taints: Value) -> Cluster {
    let server = Arc::new(ApiServer { got: Mutex::default(), taints: Mutex::new(taints) });
    let app = axum::Router::new().fallback(api).with_state(server.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("token"), "sa-token\n").unwrap();
    Cluster { server, url, dir }
}

fn remediation(c: &Cluster, action: NodeAction, dry_run: bool, ledger: Arc<MemoryLedger>) -> Remediation {
    let k = KubernetesConfig {
        api_url: c.url.clone(),
        bearer_token_file: c.dir.path().join("token"),
        ca_file: None,
        action,
        timeout: Duration::from_secs(5),
    };
    Remediation {
        receiver: "sched".into(),
        integration: "sched/remediation/0".into(),
        dry_run,
        node_label: None,
        targets: vec![Box::new(Kubernetes::new(k).unwrap())],
        ledger,
    }
}

fn taint() -> NodeAction {
    NodeAction::Taint { key: "argus.io/gpu-fault".into(), effect: "NoSchedule".into() }
}

#[tokio::test]
async fn kubernetes_taints_the_node_once() {
    let c = cluster(json!([{"key": "gpu.example/maintenance", "effect": "NoSchedule"}])).await;
    let ledger = Arc::new(MemoryLedger::default());
    let r = remediation(&c, taint(), false, ledger.clone());
    let n = fault_notification(1);
    let body = r.render(&n).unwrap();
    r.send(&body, "k").await.unwrap();
    let got = c.server.got.lock().unwrap().clone();
    assert_eq!(
        got.iter().map(|g| (g.method.as_str(), g.path.as_str())).collect::<Vec<_>>(),
        [("GET", "/api/v1/nodes/gpu-node-07"), ("PATCH", "/api/v1/nodes/gpu-node-07")]
    );
    assert_eq!(got[1].headers["content-type"], PATCH_CONTENT_TYPE);
    assert_eq!(got[1].headers["authorization"], "Bearer sa-token", "the token file's newline is not sent");
    let patch = &got[1].body;
    assert_eq!(patch["metadata"], json!({"resourceVersion": "42"}), "the write is conditional on the read");
    let taints = patch["spec"]["taints"].as_array().unwrap();
    assert_eq!(taints[0], json!({"key": "gpu.example/maintenance", "effect": "NoSchedule"}), "other taints kept");
    let ours = &taints[1];
    assert_eq!(
        (&ours["key"], &ours["value"], &ours["effect"]),
        (&json!("argus.io/gpu-fault"), &json!("xid-79"), &json!("NoSchedule"))
    );
    assert!(Timestamp::parse_rfc3339(ours["timeAdded"].as_str().unwrap()).is_ok());
    let actions = ledger.actions();
    assert_eq!(actions.len(), 1, "the resolved ECC alert is not acted on");
    assert_eq!((actions[0].outcome, actions[0].fault.node.as_str()), ("remediated", "gpu-node-07"));
    assert_eq!(
        actions[0].request,
        format!("PATCH {}/api/v1/nodes/gpu-node-07 taint argus.io/gpu-fault=xid-79:NoSchedule", c.url)
    );

    // The group notified again (a repeat), and the same body sent again (a retry): nothing more.
    r.send(&r.render(&fault_notification(2)).unwrap(), "k2").await.unwrap();
    r.send(&body, "k").await.unwrap();
    assert_eq!(c.server.got.lock().unwrap().len(), 2);
    assert_eq!(ledger.actions().len(), 1);
}

#[tokio::test]
async fn kubernetes_leaves_a_tainted_node_and_reports_refusals() {
    let c = cluster(json!([{"key": "argus.io/gpu-fault", "value": "xid-48", "effect": "NoSchedule"}])).await;
    let ledger = Arc::new(MemoryLedger::default());
    let r = remediation(&c, taint(), false, ledger.clone());
    r.send(&r.render(&fault_notification(1)).unwrap(), "k").await.unwrap();
    assert_eq!(c.server.got.lock().unwrap().len(), 1, "read, no write");
    assert_eq!(ledger.actions()[0].outcome, "already_remediated");

    // A token the server refuses: a failure recorded, not retried (a 401 will not fix itself).
    std::fs::write(c.dir.path().join("token"), "wrong").unwrap();
    let mut n = fault_notification(2);
    n.message.alerts[0].starts_at = Timestamp::from_millis(1_699_999_500_000);
    let err = r.send(&r.render(&n).unwrap(), "k3").await.unwrap_err();
    assert!(!err.is_retryable(), "{err}");
    assert_eq!(err.to_string(), "receiver answered http status 401: Unauthorized");
    assert_eq!(ledger.actions()[1].outcome, "remediation_failed");
}

#[tokio::test]
async fn kubernetes_condition_is_a_strategic_merge_of_the_status() {
    let c = cluster(Value::Null).await;
    let r = remediation(&c, NodeAction::Condition, false, Arc::default());
    r.send(&r.render(&fault_notification(1)).unwrap(), "k").await.unwrap();
    let got = c.server.got.lock().unwrap().clone();
    assert_eq!(got.len(), 1);
    assert_eq!((got[0].method.as_str(), got[0].path.as_str()), ("PATCH", "/api/v1/nodes/gpu-node-07/status"));
    let cond = &got[0].body["status"]["conditions"][0];
    assert_eq!(
        (&cond["type"], &cond["status"], &cond["reason"]),
        (&json!("ArgusGPUFault"), &json!("True"), &json!("Xid79"))
    );
    assert!(cond["message"].as_str().unwrap().starts_with("argus: xid-79 (GpuXidHardware)"), "{cond}");
}

#[tokio::test]
async fn dry_run_records_and_does_nothing() {
    let c = cluster(Value::Null).await;
    let ledger = Arc::new(MemoryLedger::default());
    let r = remediation(&c, taint(), true, ledger.clone());
    let body = r.render(&fault_notification(1)).unwrap();
    let b: Body = serde_json::from_slice(&body).unwrap();
    assert_eq!((b.kind, b.remediation.as_ref().unwrap().dry_run), (Kind::Remediation, true));
    r.send(&body, "k").await.unwrap();
    r.send(&body, "k").await.unwrap();
    assert!(c.server.got.lock().unwrap().is_empty());
    let a = ledger.actions();
    assert_eq!(a.len(), 1);
    assert_eq!(a[0].outcome, "dry_run");
}

/// A stand-in `scontrol` like the real one (Slurm 22.05): `-o show node N` prints the node's line
/// (`drained-node` drained by an operator, `ghost` unknown); `update …` writes each argument on its own
/// line to `args`, or fails for `ghost`. alertd/tests/it/remediation_slurm.rs runs the real one.
fn fake_scontrol(dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join("scontrol");
    let script = format!(
        "#!/bin/sh
         if [ \"$1\" = -o ]; then
           case \"$4\" in
             ghost) echo \"Node $4 not found\" >&2; exit 1;;
             drained-node) echo \"NodeName=$4 Arch=x86_64 State=IDLE+DRAIN Reason=operator-maintenance\";;
             *) echo \"NodeName=$4 Arch=x86_64 State=IDLE ThreadsPerCore=1\";;
           esac
           exit 0
         fi
         printf '%s\\n' \"$@\" > {out}
         case \"$2\" in NodeName=ghost) echo 'slurm_update error: Invalid node name specified' >&2; exit 1;; esac
",
        out = dir.join("args").display()
    );
    std::fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[tokio::test]
async fn slurm_drains_with_the_exact_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let scontrol = fake_scontrol(dir.path());
    let ledger = Arc::new(MemoryLedger::default());
    let r = Remediation {
        receiver: "sched".into(),
        integration: "sched/remediation/0".into(),
        dry_run: false,
        node_label: None,
        targets: vec![Box::new(Slurm {
            cfg: SlurmConfig { scontrol: scontrol.clone(), timeout: Duration::from_secs(5) },
        })],
        ledger: ledger.clone(),
    };
    r.send(&r.render(&fault_notification(1)).unwrap(), "k").await.unwrap();
    let args = std::fs::read_to_string(dir.path().join("args")).unwrap();
    assert_eq!(args, "update\nNodeName=gpu-node-07\nState=DRAIN\nReason=argus: xid-79 (GpuXidHardware)\n");
    let a = ledger.actions();
    assert_eq!(a[0].outcome, "remediated");
    assert_eq!(
        a[0].request,
        format!(
            "{} update NodeName=gpu-node-07 State=DRAIN Reason=\"argus: xid-79 (GpuXidHardware)\"",
            scontrol.display()
        )
    );

    let mut n = fault_notification(2);
    n.message.alerts[0].labels.insert("host".into(), "ghost".into());
    let err = r.send(&r.render(&n).unwrap(), "k2").await.unwrap_err();
    assert!(!err.is_retryable(), "an unknown node is a refusal: {err}");
    assert_eq!(
        err.to_string(),
        format!("receiver refused the message: {}: node ghost: Node ghost not found", scontrol.display())
    );

    // A node an operator drained keeps its reason: nothing runs, the outcome says so.
    std::fs::remove_file(dir.path().join("args")).unwrap();
    let mut n = fault_notification(3);
    n.message.alerts[0].labels.insert("host".into(), "drained-node".into());
    r.send(&r.render(&n).unwrap(), "k3").await.unwrap();
    assert!(!dir.path().join("args").exists(), "scontrol update ran on a drained node");
    assert_eq!(ledger.actions().last().unwrap().outcome, "already_remediated");
}

#[test]
fn drained_reads_every_drain_state() {
    use super::slurm::drained;
    for s in ["IDLE+DRAIN", "MIXED+DRAIN", "DOWN+DRAIN", "DRAINED", "DRAINING", "UNKNOWN+DRAIN+NOT_RESPONDING"] {
        assert!(drained(&format!("NodeName=n1 Arch=x86_64 State={s} Reason=x")), "{s}");
    }
    for s in ["IDLE", "MIXED", "DOWN+NOT_RESPONDING", "ALLOCATED"] {
        assert!(!drained(&format!("NodeName=n1 State={s} Reason=DRAIN")), "{s}");
    }
}

#[test]
fn remediation_is_configured_per_target_and_off_by_default() {
    let yaml = |rem: &str| {
        format!(
            "route: {{receiver: s}}\nreceivers:\n  - name: s\n    scheduler_configs:\n      - url: 'http://s/'\n        remediation: {rem}\n"
        )
    };
    let parse = |rem: &str| crate::config::parse(&yaml(rem), "/etc/argus/alertd.yml");
    let c = parse("{kubernetes: {}, slurm: {}}").unwrap();
    assert_eq!(c.receivers["s"].scheduler[0].remediation, None, "not enabled: off");
    assert_eq!(crate::deliver::build(&c).unwrap().len(), 1);
    let c = parse("{enabled: true, dry_run: true, kubernetes: {}, slurm: {scontrol: bin/scontrol}}").unwrap();
    let r = c.receivers["s"].scheduler[0].remediation.clone().unwrap();
    let k = r.kubernetes.unwrap();
    assert_eq!(
        (k.api_url.as_str(), k.bearer_token_file.to_str().unwrap()),
        ("https://kubernetes.default.svc", "/var/run/secrets/kubernetes.io/serviceaccount/token")
    );
    assert_eq!(k.action, taint());
    assert_eq!(r.slurm.unwrap().scontrol.to_str().unwrap(), "/etc/argus/bin/scontrol");
    assert!(r.dry_run);
    let kinds: Vec<_> = c.receivers["s"].integrations().iter().map(|i| i.kind).collect();
    assert_eq!(kinds, ["scheduler", "remediation"]);
    for (rem, err) in [
        (
            "{enabled: true}",
            "/etc/argus/alertd.yml:6: receivers[0].scheduler_configs[0].remediation.enabled: remediation names no target: add kubernetes or slurm",
        ),
        (
            "{enabled: true, kubernetes: {action: cordon}}",
            "/etc/argus/alertd.yml:6: receivers[0].scheduler_configs[0].remediation.kubernetes.action: \"cordon\" is not taint or condition",
        ),
        (
            "{enabled: true, kubernetes: {taint_effect: Drain}}",
            "/etc/argus/alertd.yml:6: receivers[0].scheduler_configs[0].remediation.kubernetes.taint_effect: \"Drain\" is not NoSchedule, PreferNoSchedule or NoExecute",
        ),
        (
            "{enabled: true, slurm: {partition: gpu}}",
            "/etc/argus/alertd.yml:6: receivers[0].scheduler_configs[0].remediation.slurm: unknown field `partition`, expected `scontrol` or `timeout`",
        ),
    ] {
        assert_eq!(parse(rem).unwrap_err().to_string(), err);
    }
}
