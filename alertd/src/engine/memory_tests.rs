//! The engine's memory (`crate::memory`), shared by replicas so that they hold, escalate and
//! acknowledge alike. Its helpers also serve the test of a lone alertd's restart on its database
//! (`db/tests.rs`), which lives with the database so that the engine's tests need nothing from it.

use super::*;
use crate::memory::Memory;
use crate::nflog::MemLog;
use crate::notify::Recorder;
use crate::silence::MemSilences;
use std::sync::Mutex;

pub(crate) const T0: Timestamp = Timestamp(1_600_000_000_000);

pub(crate) fn at(s: u64) -> Timestamp {
    T0 + Duration::from_secs(s)
}

/// Correlation by host, and an escalation of critical incidents to `lead` 15 minutes after their
/// first notification; alerts stay firing for an hour without a resend.
pub(crate) fn escalating() -> Config {
    let yaml = "global: {resolve_timeout: 1h}\n\
         route: {receiver: team, group_by: [cluster], group_wait: 30s}\n\
         receivers:\n  - {name: team, webhook_configs: [{url: 'http://localhost:5001/'}]}\n\
         \x20 - {name: lead, webhook_configs: [{url: 'http://localhost:5002/'}]}\n\
         argus:\n  correlation: {labels: [host], window: 10m}\n  escalation: [{after: 15m, receiver: lead}]\n";
    crate::config::parse(yaml, "test.yml").unwrap()
}

pub(crate) fn host_alert(host: &str) -> PostableAlert {
    PostableAlert {
        labels: [("alertname", "HostDown"), ("host", host), ("severity", "critical")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: Default::default(),
        starts_at: Some(at(0)),
        ends_at: None,
        generator_url: String::new(),
    }
}

/// (seconds since T0, receiver, incident number) of each notification.
pub(crate) fn sent(rec: &Recorder) -> Vec<(i64, String, u64)> {
    rec.take()
        .iter()
        .map(|n| {
            let id = n.message.argus.as_ref().and_then(|a| a.incident.as_ref()).map_or(0, |i| i.id);
            ((n.at.0 - T0.0) / 1000, n.receiver.clone(), id)
        })
        .collect()
}

pub(crate) fn ack(by: &str) -> crate::memory::Acknowledgement {
    crate::memory::Acknowledgement { at: at(40).0, by: by.into(), comment: "looking".into() }
}

/// A sink that collects what an engine remembers, as the cluster's outgoing queue does.
#[derive(Default)]
struct Collect(Mutex<Vec<Memory>>);

impl crate::memory::MemorySink for Collect {
    fn remember(&self, m: &Memory) {
        self.0.lock().unwrap().push(m.clone());
    }

    fn gc(&self, _now: Timestamp) {}
}

struct Replica {
    engine: Engine,
    rec: Arc<Recorder>,
    out: Arc<Collect>,
}

/// Two replicas sharing one notification log (gossip of the log is tested with the cluster), each
/// remembering into its own queue; the second waits 15 s.
fn pair() -> (Replica, Replica) {
    let log = Arc::new(MemLog::default());
    let replica = |wait: u64| {
        let (rec, out) = (Arc::new(Recorder::default()), Arc::new(Collect::default()));
        let mut engine = Engine::new(escalating(), Arc::new(MemSilences::default()), log.clone(), rec.clone());
        engine.join_cluster();
        engine.set_peer_wait(Duration::from_secs(wait));
        engine.remember_with(out.clone());
        Replica { engine, rec, out }
    };
    (replica(0), replica(15))
}

/// A pair given one critical alert, after the first replica notified its incident (returned).
fn notified_pair() -> (Replica, Replica, crate::notify::Notification) {
    let (mut a, mut b) = pair();
    for r in [&mut a, &mut b] {
        r.engine.post(at(0), vec![host_alert("h1")]).unwrap();
    }
    a.engine.advance(at(30));
    let mut first = a.rec.take();
    assert_eq!(first.len(), 1);
    (a, b, first.remove(0))
}

/// What gossip does with one replica's memory.
fn gossip(from: &Replica, to: &mut Replica, now: Timestamp) {
    let items = std::mem::take(&mut *from.out.0.lock().unwrap());
    for m in items {
        to.engine.merge_memory(&m, now);
    }
}

#[test]
fn replicas_escalate_once_and_the_next_escalates_when_the_first_is_gone() {
    let (mut a, mut b, first) = notified_pair();
    let id = first.message.argus.unwrap().incident.unwrap().id;
    gossip(&a, &mut b, at(31));
    b.engine.advance(at(60));
    assert_eq!(sent(&b.rec), [], "a notified");
    a.engine.advance(at(930));
    assert_eq!(sent(&a.rec), [(930, "lead".to_string(), id)]);
    gossip(&a, &mut b, at(931));
    b.engine.advance(at(2000));
    assert_eq!(sent(&b.rec), [], "b learnt that a escalated");

    // Again, and a dies after its first notification: b escalates after its position wait, though
    // it never notified the incident itself.
    let (a, mut b, _) = notified_pair();
    gossip(&a, &mut b, at(31));
    drop(a);
    b.engine.advance(at(2000));
    assert_eq!(sent(&b.rec), [(945, "lead".to_string(), id)]);
}

#[test]
fn an_acknowledgement_on_one_replica_stops_the_escalation_on_the_other() {
    let (mut a, mut b, first) = notified_pair();
    let inc = first.message.argus.unwrap().incident.unwrap();
    gossip(&a, &mut b, at(31));
    // Acknowledged on b (whose history has its own opening time), a learns it.
    assert!(b.engine.acknowledge(inc.id, at(1), ack("oncall")));
    let told = b.out.0.lock().unwrap().clone();
    let who = told.iter().find_map(|m| match m {
        Memory::Incident(i) => i.ack.as_ref().map(|a| a.by.clone()),
        _ => None,
    });
    assert_eq!(who.as_deref(), Some("oncall"), "who acknowledged travels with it");
    gossip(&b, &mut a, at(40));
    a.engine.advance(at(2000));
    b.engine.advance(at(2000));
    assert_eq!((sent(&a.rec), sent(&b.rec)), (vec![], vec![]));
}

/// A replica that restarts learns the backoff of the incidents its peers notified: it holds an
/// update they hold, instead of notifying it as if the incident had been quiet.
#[test]
fn a_restarted_replica_learns_the_backoff_and_the_incident_from_its_peer() {
    let (mut a, _) = pair();
    a.engine.post(at(0), vec![host_alert("h1")]).unwrap();
    a.engine.advance(at(30));
    let id = sent(&a.rec)[0].2;
    let items = a.out.0.lock().unwrap().clone();
    assert!(items.iter().any(|m| matches!(m, Memory::Backoff(b) if b.sent == [at(30).0])), "{items:?}");
    // A fresh replica merges a's memory before any alert arrives, then gets a later alert of the
    // same host first: it joins a's incident, under a's number, instead of opening its own.
    let (_, mut c) = pair();
    gossip(&a, &mut c, at(40));
    let mut later = host_alert("h1");
    later.labels.insert("alertname".into(), "GpuXid".into());
    later.starts_at = Some(at(35));
    c.engine.post(at(41), vec![later.clone()]).unwrap();
    c.engine.advance(at(200));
    let got = sent(&c.rec);
    assert!(got.iter().all(|n| n.2 == id), "{got:?} should be incident {id}");

    // The alert arrives before the peer's memory: held until the merge, it joins the same incident.
    let (_, mut d) = pair();
    d.engine.hold_intake();
    d.engine.post(at(41), vec![later]).unwrap();
    assert_eq!(d.engine.alerts().count(), 0, "held");
    for m in &items {
        d.engine.merge_memory(m, at(42));
    }
    assert_eq!(d.engine.release_intake(at(42)), 1);
    d.engine.advance(at(200));
    let got = sent(&d.rec);
    assert!(!got.is_empty() && got.iter().all(|n| n.2 == id), "{got:?} should be incident {id}");
}

/// An incident whose alerts keep firing is remembered again as their ends move on, so that a
/// replica restarting long after its last notification still finds it open.
#[test]
fn a_long_running_incident_is_remembered_with_its_alerts_later_ends() {
    let (mut a, _) = pair();
    a.engine.post(at(0), vec![host_alert("h1")]).unwrap();
    a.engine.advance(at(30));
    let until = |r: &Replica| {
        r.out.0.lock().unwrap().iter().rev().find_map(|m| match m {
            Memory::Incident(i) => Some(i.until),
            _ => None,
        })
    };
    let first = until(&a).unwrap();
    // Resent every minute with endsAt four minutes ahead, as Prometheus does, for an hour.
    for min in 1..60 {
        let mut again = host_alert("h1");
        again.ends_at = Some(at(min * 60 + 240));
        a.engine.post(at(min * 60), vec![again]).unwrap();
        a.engine.advance(at(min * 60));
    }
    let last = until(&a).unwrap();
    assert!(last >= at(59 * 60 + 240 - 150).0, "remembered until {last}, first {first}");
    let (_, mut c) = pair();
    gossip(&a, &mut c, at(3600));
    let mut next = host_alert("h1");
    next.labels.insert("alertname".into(), "GpuXid".into());
    next.starts_at = Some(at(3600));
    c.engine.post(at(3600), vec![next]).unwrap();
    c.engine.advance(at(3700));
    let id = a.rec.take()[0].message.argus.clone().unwrap().incident.unwrap().id;
    let got = sent(&c.rec);
    assert!(!got.is_empty() && got.iter().all(|n| n.2 == id), "{got:?} should be incident {id}");
}
