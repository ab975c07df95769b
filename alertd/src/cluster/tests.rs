//! Replicas gossiping through chitchat's in-process transport: real membership, failure detection
//! and anti-entropy, real engines on tokio time; only the network is simulated (so a partition is
//! a removed link).

use super::*;
use crate::alert::PostableAlert;
use crate::clock::TokioClock;
use crate::engine::Engine;
use crate::nflog::{MemLog, NotificationLog};
use crate::notify::Recorder;
use crate::silence::{MemSilences, Silence, Silences};
use argus_model::Matcher;
use chitchat::transport::ChannelTransport;

/// Long enough that gossip on a loaded CI machine beats each position's wait.
const PEER_TIMEOUT: Duration = Duration::from_secs(3);

struct Replica {
    cluster: Cluster,
    silences: Arc<ReplicatedSilences>,
    log: Arc<ReplicatedLog>,
    shared: Shared,
    rec: Arc<Recorder>,
    timers: tokio::task::JoinHandle<()>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        self.timers.abort();
    }
}

impl Replica {
    fn post(&self, alerts: Vec<PostableAlert>) {
        let now = self.shared.now();
        let mut e = self.shared.lock();
        e.advance(now);
        e.post(now, alerts).unwrap();
        e.advance(now);
        drop(e);
        self.shared.changed();
    }

    fn readiness(&self) -> Readiness {
        self.cluster.view().snapshot().readiness
    }
}

fn addr(i: usize) -> SocketAddr {
    SocketAddr::from(([127, 0, 0, 1], 11_000 + i as u16))
}

fn config() -> crate::Config {
    let yaml = "route: {receiver: team, group_by: [alertname], group_wait: 1s, group_interval: 1m}\n\
         receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/'}]}]\n\
         argus:\n  correlation: {labels: [host], window: 10m}\n";
    crate::config::parse(yaml, "test.yml").unwrap()
}

/// Replica `i` of `n`, its peers the others.
async fn replica(t: &ChannelTransport, i: usize, n: usize, settle: Duration) -> Replica {
    let out = Outgoing::default();
    let silences = Arc::new(ReplicatedSilences::new(Arc::new(MemSilences::default()), out.clone()));
    let log = Arc::new(ReplicatedLog::new(Arc::new(MemLog::default()), out.clone(), &format!("r{i}")));
    let rec = Arc::new(Recorder::default());
    let mut e = Engine::new(config(), silences.clone(), log.clone(), rec.clone());
    e.join_cluster();
    let shared = Shared::new(e, TokioClock::starting_at(Timestamp(now_millis())));
    let timers = tokio::spawn(crate::runner::run_shared(shared.clone()));
    let s = Settings {
        name: format!("r{i}"),
        cluster: "test".into(),
        listen: addr(i),
        advertise: addr(i),
        peers: (0..n).filter(|&j| j != i).map(|j| addr(j).to_string()).collect(),
        peer_timeout: PEER_TIMEOUT,
        settle_timeout: settle,
        gossip_interval: Duration::from_millis(50),
        secret: "not used by the in-process transport".into(),
    };
    let parts = Replicated { silences: silences.clone(), log: log.clone(), outgoing: out };
    let cluster = Cluster::start_on(&s, parts, shared.clone(), Metrics::default(), t).await.unwrap();
    Replica { cluster, silences, log, shared, rec, timers }
}

/// Three replicas of one cluster, each with the others as peers.
async fn three(t: &ChannelTransport) -> Vec<Replica> {
    let mut rs = Vec::new();
    for i in 0..3 {
        rs.push(replica(t, i, 3, PEER_TIMEOUT).await);
    }
    rs
}

async fn until(what: &str, limit: Duration, f: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    start.elapsed()
}

fn silence(id: &str) -> Silence {
    let now = Timestamp(now_millis());
    Silence {
        id: id.into(),
        matchers: vec![Matcher::eq("host", "node-1")],
        starts_at: now,
        ends_at: now + Duration::from_secs(3600),
        updated_at: now,
        created_by: "sre".into(),
        comment: "maintenance".into(),
        until_resolved: false,
    }
}

fn alert(name: &str, host: &str) -> PostableAlert {
    PostableAlert {
        labels: [("alertname", name), ("host", host)].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        annotations: Default::default(),
        starts_at: Some(Timestamp(now_millis())),
        ends_at: None,
        generator_url: String::new(),
    }
}

fn has(r: &Replica, id: &str, expired: bool) -> bool {
    let now = Timestamp(now_millis());
    r.silences.list().iter().any(|s| s.id == id && s.active_at(now) != expired)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silence_made_on_one_replica_reaches_the_others_and_so_does_its_expiry() {
    let t = ChannelTransport::default();
    let rs = three(&t).await;
    rs[0].silences.set(silence("s1")).unwrap();
    let took =
        until("the silence on every replica", Duration::from_secs(5), || rs.iter().all(|r| has(r, "s1", false))).await;
    assert!(took < Duration::from_secs(1), "took {took:?}");
    rs[2].silences.expire("s1", Timestamp(now_millis())).unwrap();
    until("the expiry on every replica", Duration::from_secs(5), || rs.iter().all(|r| has(r, "s1", true))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_starting_replica_is_ready_only_once_it_merged_its_peers_state() {
    let t = ChannelTransport::default();
    let (a, b) = (replica(&t, 0, 3, PEER_TIMEOUT).await, replica(&t, 1, 3, PEER_TIMEOUT).await);
    for i in 0..300 {
        a.silences.set(silence(&format!("a{i}"))).unwrap();
        b.log.log(
            &format!("group-{i}"),
            "team/webhook/0",
            crate::nflog::Entry {
                firing: [crate::Fingerprint(i)].into(),
                resolved: Default::default(),
                timestamp: Timestamp(now_millis()),
            },
        );
        // Delivered: the outbox confirms it.
        b.log.confirm(&format!("group-{i}"), "team/webhook/0");
    }
    until("a and b hold each other's state", Duration::from_secs(10), || {
        a.log.entries().len() == 300 && b.silences.list().len() == 300
    })
    .await;
    let c = replica(&t, 2, 3, Duration::from_secs(60)).await;
    assert_eq!(c.readiness(), Readiness::Settling);
    until("c is ready", Duration::from_secs(20), || c.readiness().is_ready()).await;
    // Ready means merged: everything the peers held is here.
    assert_eq!(c.readiness(), Readiness::Merged { peers: 2 });
    assert_eq!((c.silences.list().len(), c.log.entries().len()), (300, 300));
    let status = c.cluster.view().snapshot();
    assert_eq!(status.peers.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(), ["r0", "r1"]);
    assert_eq!(status.position, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_reaches_no_peer_is_ready_after_the_settle_timeout() {
    let t = ChannelTransport::default();
    let lone = replica(&t, 0, 3, Duration::from_secs(1)).await;
    assert_eq!(lone.readiness(), Readiness::Settling);
    until("ready by timeout", Duration::from_secs(5), || lone.readiness().is_ready()).await;
    assert_eq!(lone.readiness(), Readiness::TimedOut { peers: 0 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_notification_per_group_and_the_next_replica_takes_over_when_the_first_dies() {
    let t = ChannelTransport::default();
    let mut rs = three(&t).await;
    until("positions by name", Duration::from_secs(10), || {
        rs.iter().enumerate().all(|(i, r)| r.shared.lock().peer_wait() == PEER_TIMEOUT * i as u32)
    })
    .await;
    let first = alert("GpuXid", "node-1");
    for r in &rs {
        r.post(vec![first.clone()]);
    }
    // group_wait 1s, then each replica's wait: 0, 3s, 6s.
    tokio::time::sleep(Duration::from_secs(9)).await;
    let sent: Vec<usize> = rs.iter().map(|r| r.rec.take().len()).collect();
    assert_eq!(sent, [1, 0, 0], "one notification, from the first replica");

    // The first replica dies; the second moves up and notifies the next group once.
    drop(rs.remove(0));
    until("r1 moves up", Duration::from_secs(20), || rs[0].shared.lock().peer_wait().is_zero()).await;
    let second = alert("GpuEcc", "node-2");
    for r in &rs {
        r.post(vec![second.clone()]);
    }
    tokio::time::sleep(Duration::from_secs(6)).await;
    let sent: Vec<usize> = rs.iter().map(|r| r.rec.take().len()).collect();
    assert_eq!(sent, [1, 0], "one notification, from the replica that moved up");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partition_heals_by_itself_and_the_logs_merge() {
    let t = ChannelTransport::default();
    let rs = three(&t).await;
    until("three members", Duration::from_secs(10), || rs.iter().all(|r| r.cluster.view().snapshot().peers.len() == 2))
        .await;
    for j in [1, 2] {
        t.remove_link(addr(0), addr(j)).await;
    }
    until("r0 alone", Duration::from_secs(30), || rs[0].cluster.view().snapshot().peers.is_empty()).await;
    // Each side notifies on its own (at least once beats silence) and logs it.
    let entry = |ts: i64| crate::nflog::Entry {
        firing: [crate::Fingerprint(1)].into(),
        resolved: Default::default(),
        timestamp: Timestamp(ts),
    };
    let later = now_millis() + 1;
    rs[0].log.log("g", "team/webhook/0", entry(later - 1));
    rs[1].log.log("g", "team/webhook/0", entry(later));
    rs[0].log.confirm("g", "team/webhook/0");
    rs[1].log.confirm("g", "team/webhook/0");
    rs[0].silences.set(silence("minority")).unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!has(&rs[1], "minority", false), "nothing crosses the partition");
    for j in [1, 2] {
        t.add_link(addr(0), addr(j)).await;
    }
    until("the mesh re-forms", Duration::from_secs(30), || {
        rs.iter().all(|r| r.cluster.view().snapshot().peers.len() == 2)
    })
    .await;
    until("the logs merge", Duration::from_secs(10), || {
        rs.iter().all(|r| r.log.get("g", "team/webhook/0") == Some(entry(later)) && has(r, "minority", false))
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_entry_of_a_group_of_thousands_of_alerts_reaches_the_peers_whole() {
    // The largest UDP payload, as on the wire: a value over it could never be gossiped.
    let t = ChannelTransport::with_mtu(65_507);
    let (a, b) = (replica(&t, 0, 2, PEER_TIMEOUT).await, replica(&t, 1, 2, PEER_TIMEOUT).await);
    let big = crate::nflog::Entry {
        firing: (0..16_000).map(crate::Fingerprint).collect(),
        resolved: (16_000..16_500).map(crate::Fingerprint).collect(),
        timestamp: Timestamp(now_millis()),
    };
    a.log.log("fleet-wide", "team/webhook/0", big.clone());
    a.log.confirm("fleet-wide", "team/webhook/0");
    until("the entry on b", Duration::from_secs(10), || {
        b.log.get("fleet-wide", "team/webhook/0").as_ref() == Some(&big)
    })
    .await;
    // A smaller later entry replaces it, and its extra parts are deleted.
    let small = crate::nflog::Entry {
        firing: (0..10).map(crate::Fingerprint).collect(),
        resolved: Default::default(),
        timestamp: Timestamp(now_millis() + 1),
    };
    a.log.log("fleet-wide", "team/webhook/0", small.clone());
    a.log.confirm("fleet-wide", "team/webhook/0");
    until("the smaller entry on b", Duration::from_secs(10), || {
        b.log.get("fleet-wide", "team/webhook/0").as_ref() == Some(&small)
    })
    .await;
}

// === replicas of a cluster, simulated: two engines, their notification logs merged by hand ===

/// Two replicas receive the same alerts (at slightly different times); the first notifies at once and
/// publishes its log entry as pending; the second waits its position (`peer_wait`) and, the first
/// being alive, holds back: one notification. When the first dies with a notification undelivered,
/// the second notifies after its wait, under the same group key and idempotency key.
#[test]
fn replicas_notify_once_by_position_and_the_next_takes_over_with_the_same_key() {
    use crate::cluster::state::{Item, Outgoing, ReplicatedLog};
    use crate::engine::tests::{at, correlated, host_alert};
    let replica = |name: &str, wait: u64| {
        let rec = Arc::new(Recorder::default());
        let out = Outgoing::default();
        let log = Arc::new(ReplicatedLog::new(Arc::new(MemLog::default()), out.clone(), name));
        let mut e = Engine::new(correlated("10m"), Arc::new(MemSilences::default()), log.clone(), rec.clone());
        e.join_cluster();
        e.set_peer_wait(Duration::from_secs(wait));
        (e, rec, log, out)
    };
    // What gossip does: each replica's published entries merged into the other's log.
    let gossip = |from: &Outgoing, to: &ReplicatedLog| {
        for item in from.take() {
            if let Item::Log { group_key, recipient, entry, pending } = item {
                to.merge(&group_key, &recipient, entry, pending);
            }
        }
    };
    let (mut a, rec_a, log_a, out_a) = replica("a", 0);
    let (mut b, rec_b, log_b, out_b) = replica("b", 15);
    log_b.set_live(["a".to_string()]);
    let mut alert = host_alert("h1");
    alert.starts_at = Some(at(0));
    a.post(at(0), vec![alert.clone()]).unwrap();
    b.post(at(1), vec![alert.clone()]).unwrap();
    a.advance(at(30));
    let first = rec_a.take();
    assert_eq!(first.len(), 1);
    // a's entry reaches b while a is still delivering it (pending).
    gossip(&out_a, &log_b);
    b.advance(at(60));
    assert!(rec_b.take().is_empty(), "the second replica held back for the first's pending notification");
    log_a.confirm(&first[0].message.group_key, &first[0].integration);
    gossip(&out_a, &log_b);
    gossip(&out_b, &log_a);

    // A second host's alert: a notifies, then dies before delivering it.
    let mut second = host_alert("h2");
    second.starts_at = Some(at(100));
    a.post(at(100), vec![second.clone()]).unwrap();
    b.post(at(100), vec![second]).unwrap();
    a.advance(at(130));
    let owed = rec_a.take();
    assert_eq!(owed.len(), 1);
    gossip(&out_a, &log_b);
    log_b.set_live(Vec::new());
    b.advance(at(130));
    assert!(rec_b.take().is_empty(), "still waiting its position");
    b.advance(at(145));
    let sent = rec_b.take();
    assert_eq!(sent.len(), 1, "the second replica took over");
    assert_eq!(crate::outbox::idempotency_key(&owed[0]), crate::outbox::idempotency_key(&sent[0]));
    assert_eq!(owed[0].message.group_key, sent[0].message.group_key);
}
