//! Three `argus serve --role alertd` processes as one alertd cluster on loopback (docs/alerting.md,
//! "High availability"): a silence made on one mutes on the others, an alert posted to all three
//! is notified once, a replica killed with SIGKILL leaves the next one to notify (once, to a webhook
//! that counts by `Idempotency-Key`), and a restarted replica answers ready only after it merged.

use crate::support::raw_http;
use crate::support::server;

use serde_json::{Value, json};
use server::{Server, free_port, now_ms};
use std::io::{BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Webhook deliveries accepted: `Idempotency-Key` and the alert names notified firing.
type Got = Arc<Mutex<Vec<(String, Vec<String>)>>>;

/// The webhook receiver. While `down` is set it answers 503 and records the attempt in `refused`.
struct Webhook {
    port: u16,
    got: Got,
    refused: Got,
    down: Arc<std::sync::atomic::AtomicBool>,
}

fn receiver() -> Webhook {
    use std::sync::atomic::Ordering;
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let (got, refused): (Got, Got) = (Arc::default(), Arc::default());
    let down = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (got2, refused2, down2) = (got.clone(), refused.clone(), down.clone());
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut r = BufReader::new(conn.try_clone().unwrap());
            let Some((key, body)) = raw_http::read_delivery(&mut r) else { continue };
            let v: Value = serde_json::from_slice(&body).unwrap_or_default();
            let names = v["alerts"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|a| a["status"] == "firing")
                .map(|a| a["labels"]["alertname"].as_str().unwrap_or("?").to_string())
                .collect();
            if down2.load(Ordering::SeqCst) {
                refused2.lock().unwrap().push((key, names));
                let _ = conn
                    .write_all(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
                continue;
            }
            got2.lock().unwrap().push((key, names));
            let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        }
    });
    Webhook { port, got, refused, down }
}

struct Cluster {
    replicas: Vec<Server>,
    _dir: tempfile::TempDir,
}

fn cluster(webhook: u16) -> Cluster {
    let dir = tempfile::tempdir().unwrap();
    let yml = dir.path().join("alertd.yml");
    std::fs::write(
        &yml,
        format!(
            "route: {{receiver: team, group_by: [alertname], group_wait: 1s, group_interval: 10s, repeat_interval: 4h}}\n\
             receivers: [{{name: team, webhook_configs: [{{url: 'http://127.0.0.1:{webhook}/'}}]}}]\n\
             argus:\n  correlation: {{labels: [host], window: 10m}}\n"
        ),
    )
    .unwrap();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let replicas = (0..3)
        .map(|i| {
            let peers: Vec<String> =
                (0..3).filter(|&j| j != i).map(|j| format!("\"127.0.0.1:{}\"", ports[j])).collect();
            let toml = format!(
                "[alertd]\nconfig_file = {yml:?}\n\n[alertd.cluster]\nlisten = \"127.0.0.1:{}\"\npeers = [{}]\n\
                 name = \"r{i}\"\npeer_timeout = \"3s\"\nsettle_timeout = \"20s\"\nsecret = \"a shared secret for the test cluster\"\n",
                ports[i],
                peers.join(", ")
            );
            Server::start_with(Some(&toml), &["--role", "alertd"])
        })
        .collect();
    Cluster { replicas, _dir: dir }
}

fn until(what: &str, limit: Duration, mut f: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        std::thread::sleep(Duration::from_millis(25));
    }
    start.elapsed()
}

fn ready(s: &Server) -> Option<String> {
    let r = s.get("/-/ready");
    (r.status == 200).then_some(r.body)
}

/// Senders stamp `startsAt`, as Prometheus does: replicas number the incident from it alike.
fn alert(name: &str, host: &str) -> Value {
    json!([{"labels": {"alertname": name, "host": host}, "startsAt": rfc3339(now_ms() / 1000)}])
}

fn rfc3339(secs: i64) -> String {
    argus_alertd::Timestamp(secs * 1000).to_string()
}

fn post_to(replicas: &[&Server], body: &Value) {
    for s in replicas {
        let r = s.post("/api/v2/alerts", &[("content-type", "application/json")], body.to_string());
        assert_eq!(r.status, 200, "{}", r.body);
    }
}

#[test]
fn three_replicas_share_silences_notify_once_and_survive_a_kill() {
    let hook = receiver();
    let got = hook.got.clone();
    let mut c = cluster(hook.port);
    for s in &c.replicas {
        until("every replica ready", Duration::from_secs(30), || ready(s).is_some());
        let status = s.get("/api/v2/status").json();
        assert_eq!(status["cluster"]["status"], "ready", "{status}");
    }
    until("each sees two peers", Duration::from_secs(10), || {
        c.replicas
            .iter()
            .all(|s| s.get("/api/v2/status").json()["cluster"]["peers"].as_array().map_or(0, Vec::len) == 2)
    });

    // A silence made on one replica mutes on the others within a second.
    let now = now_ms() / 1000;
    let silence = json!({
        "matchers": [{"name": "host", "value": "node-9", "isRegex": false, "isEqual": true}],
        "startsAt": rfc3339(now), "endsAt": rfc3339(now + 3600), "createdBy": "sre", "comment": "maintenance"
    });
    let r = c.replicas[0].post("/api/v2/silences", &[("content-type", "application/json")], silence.to_string());
    assert_eq!(r.status, 200, "{}", r.body);
    let id = r.json()["silenceID"].as_str().unwrap().to_string();
    let took = until("the silence on the other replicas", Duration::from_secs(5), || {
        c.replicas[1..].iter().all(|s| s.get(&format!("/api/v2/silence/{id}")).status == 200)
    });
    assert!(took < Duration::from_secs(1), "took {took:?}");
    let all = all_of(&c);
    post_to(&all, &alert("Muted", "node-9"));

    // An alert posted to all three is notified once: by r0; r1 and r2 find it in the shared log.
    post_to(&all, &alert("GpuXid", "node-1"));
    std::thread::sleep(Duration::from_secs(9));
    let first = got.lock().unwrap().clone();
    assert_eq!(first.iter().map(|(_, n)| n.join(",")).collect::<Vec<_>>(), ["GpuXid"], "{first:?}");

    // r0 dies with SIGKILL; the next alert is notified once, by r1 after its position's wait.
    c.replicas[0].kill9();
    post_to(&[&c.replicas[1], &c.replicas[2]], &alert("GpuEcc", "node-2"));
    until("the takeover notification", Duration::from_secs(30), || got.lock().unwrap().len() == 2);
    std::thread::sleep(Duration::from_secs(7));
    let all_got = got.lock().unwrap().clone();
    assert_eq!(all_got.len(), 2, "{all_got:?}");
    assert_eq!(all_got[1].1, ["GpuEcc"]);
    let keys: std::collections::BTreeSet<&str> = all_got.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.len(), 2, "one key per notification: {all_got:?}");

    // r0 comes back on its data directory: ready only once it merged, holding the silence.
    c.replicas[0].restart();
    until("r0 ready again", Duration::from_secs(30), || ready(&c.replicas[0]).is_some());
    let said = ready(&c.replicas[0]).unwrap();
    assert!(said.contains("merged the state of 2 peer(s)"), "{said}");
    assert_eq!(c.replicas[0].get(&format!("/api/v2/silence/{id}")).status, 200);
    // It holds what the others sent while it was down: nothing is sent again.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(got.lock().unwrap().len(), 2);
    let metrics = c.replicas[1].get("/metrics").body;
    assert!(metrics.contains("argus_alertd_cluster_members 3"), "{metrics}");

    // The receiver is down: r0 keeps retrying and the others hold back for its pending notification.
    // r0 dies before it delivers; r1 sends it at its group's next flush, under r0's key.
    hook.down.store(true, std::sync::atomic::Ordering::SeqCst);
    post_to(&all_of(&c), &alert("GpuNvlink", "node-3"));
    until("r0 tried and failed", Duration::from_secs(20), || !hook.refused.lock().unwrap().is_empty());
    std::thread::sleep(Duration::from_secs(5));
    let refused = hook.refused.lock().unwrap().clone();
    let keys: std::collections::BTreeSet<&str> = refused.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys.len(), 1, "only r0 tried, under one key: {refused:?}");
    c.replicas[0].kill9();
    hook.down.store(false, std::sync::atomic::Ordering::SeqCst);
    until("r1 takes the notification over", Duration::from_secs(60), || got.lock().unwrap().len() == 3);
    std::thread::sleep(Duration::from_secs(7));
    let all_got = got.lock().unwrap().clone();
    assert_eq!(all_got.len(), 3, "{all_got:?}");
    assert_eq!(all_got[2].1, ["GpuNvlink"]);
    assert_eq!(all_got[2].0, refused[0].0, "the replica that took over used the first one's key");
}

fn all_of(c: &Cluster) -> Vec<&Server> {
    c.replicas.iter().collect()
}
