use super::*;
use crate::nflog::MemLog;
use crate::notify::Recorder;
use crate::silence::MemSilences;

use crate::fixture;

const T0: Timestamp = Timestamp(1_600_000_000_000);

pub(crate) fn at(s: u64) -> Timestamp {
    T0 + Duration::from_secs(s)
}

/// The shared fixture with a child route that sends paging alerts to `team` too, then `extra`.
fn config(extra: &[&str]) -> Config {
    let mut routes = vec!["{matchers: ['severity=\"page\"'], receiver: team, continue: true}"];
    routes.extend(extra);
    crate::config::parse(&fixture::config(&routes), "test.yml").unwrap()
}

fn alert(name: &str) -> PostableAlert {
    PostableAlert {
        labels: [("alertname", name), ("severity", "page")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        annotations: Default::default(),
        starts_at: None,
        ends_at: None,
        generator_url: String::new(),
    }
}

fn sent(rec: &Recorder) -> Vec<String> {
    rec.take().iter().map(|n| format!("{} {}", (n.at.0 - T0.0) / 1000, n.receiver)).collect()
}

#[test]
fn reload_keeps_the_state_of_groups_whose_routes_remain() {
    let rec = Arc::new(Recorder::default());
    let mut e = Engine::new(config(&[]), Arc::new(MemSilences::default()), Arc::new(MemLog::default()), rec.clone());
    e.post(at(0), vec![alert("A")]).unwrap();
    e.advance(at(60));
    assert_eq!(sent(&rec), ["30 team"]);

    // A new route to `pager`: its group is new and, its alert being older than group_wait, flushes
    // at once; the route to `team` remains, and its notification log holds back a second message.
    let rec2 = Arc::new(Recorder::default());
    let extra = "{matchers: ['severity=\"page\"'], receiver: pager}";
    e.reload(config(&[extra]), rec2.clone(), at(100));
    e.advance(at(100));
    assert_eq!(sent(&rec2), ["100 pager"]);
    assert!(rec.take().is_empty());
    // Both groups go on from their flush at 100s: the alert times out (resolve_timeout 5m) and each
    // sends it resolved, `team` too, its firing notification being in the kept log.
    e.advance(at(400));
    let mut got = sent(&rec2);
    got.sort();
    assert_eq!(got, ["400 pager", "400 team"]);
}

#[test]
fn housekeeping_prunes_finished_outbox_entries_after_the_retention() {
    use crate::deliver::{self, Deliverer, RetryPolicy};
    use crate::outbox::{Outbox, State};
    let dir = tempfile::tempdir().unwrap();
    let outbox = Arc::new(Outbox::open(&dir.path().join("alertd.db")).unwrap());
    let cfg = config(&[]);
    let deliverer = Deliverer::new(outbox.clone(), deliver::build(&cfg).unwrap(), RetryPolicy::default());
    let notifier = Arc::new(deliverer.notifier());
    let mut e = Engine::new(cfg, Arc::new(MemSilences::default()), Arc::new(MemLog::default()), notifier);
    e.post(at(0), vec![alert("A"), alert("B")]).unwrap();
    e.advance(at(30));
    let first = outbox.next("team/webhook/0").unwrap().unwrap();
    outbox.finish(first.id, State::Delivered, None, at(40).millis()).unwrap();
    assert_eq!((outbox.count(State::Delivered).unwrap(), outbox.count(State::Pending).unwrap()), (1, 1));

    let retention = NFLOG_RETENTION.as_secs();
    e.advance(at(40 + retention - GC_EVERY.as_secs()));
    assert_eq!(outbox.count(State::Delivered).unwrap(), 1, "kept within the retention");
    let pending = outbox.count(State::Pending).unwrap();
    assert!(pending >= 1);
    e.advance(at(40 + retention + 1));
    assert_eq!(outbox.count(State::Delivered).unwrap(), 0, "pruned after it");
    assert_eq!(outbox.count(State::Pending).unwrap(), pending, "pending entries stay, however old");
}

pub(crate) fn correlated(window: &str) -> Config {
    let yaml = format!(
        "route: {{receiver: team, group_by: [cluster], group_wait: 30s}}\n\
         receivers: [{{name: team, webhook_configs: [{{url: 'http://localhost:5001/'}}]}}]\n\
         argus:\n  correlation: {{labels: [host], window: {window}}}\n"
    );
    crate::config::parse(&yaml, "test.yml").unwrap()
}

pub(crate) fn host_alert(host: &str) -> PostableAlert {
    let mut a = alert("HostDown");
    a.labels.insert("host".into(), host.into());
    a
}

fn incident_ids(rec: &Recorder) -> Vec<u64> {
    rec.take().iter().filter_map(|n| n.message.argus.as_ref()?.incident.as_ref().map(|i| i.id)).collect()
}

/// Incident numbers are in group keys, which the notification log and the outbox keep across
/// restarts: a number given again would be deduplicated against, or keyed like, an earlier incident.
#[test]
fn incidents_are_numbered_after_earlier_processes_and_replaced_correlators() {
    let rec = Arc::new(Recorder::default());
    let mut e =
        Engine::new(correlated("10m"), Arc::new(MemSilences::default()), Arc::new(MemLog::default()), rec.clone());
    e.number_incidents_after(41);
    e.post(at(0), vec![host_alert("h1")]).unwrap();
    e.advance(at(60));
    assert_eq!(incident_ids(&rec), [42]);
    // A reload that changes the correlation replaces the correlator; the numbering goes on.
    e.reload(correlated("20m"), rec.clone(), at(100));
    e.post(at(100), vec![host_alert("h2")]).unwrap();
    e.advance(at(200));
    let ids = incident_ids(&rec);
    assert!(ids.iter().all(|&i| i > 42), "{ids:?}");
}

/// An update that met its incident's backoff and waits out `update_interval` is sent when that ends,
/// though a reload came in between (its alerts began longer than `burst_window` ago by then).
#[test]
fn reload_keeps_an_update_waiting_for_update_interval() {
    let yaml = "global: {resolve_timeout: 1h}\n\
        route: {receiver: team, group_by: [cluster], group_wait: 30s, group_interval: 1m}\n\
        receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/'}]}]\n\
        argus:\n  correlation: {labels: [host], burst_window: 3m, backoff_step: 1, update_interval: 5m}\n";
    let cfg = || crate::config::parse(yaml, "test.yml").unwrap();
    let rec = Arc::new(Recorder::default());
    let mut e = Engine::new(cfg(), Arc::new(MemSilences::default()), Arc::new(MemLog::default()), rec.clone());
    let all = [
        host_alert("h1"),
        {
            let mut a = host_alert("h1");
            a.labels.insert("alertname".into(), "EccErrors".into());
            a
        },
        {
            let mut a = host_alert("h1");
            a.labels.insert("alertname".into(), "XidError".into());
            a
        },
    ];
    e.post(at(0), vec![all[0].clone()]).unwrap();
    e.advance(at(60));
    assert_eq!(sent(&rec), ["30 team"]);
    // Two new alerts at 60s meet the backoff (two needed after one notification) and wait until 5m30s.
    e.post(at(60), all.to_vec()).unwrap();
    e.advance(at(240));
    assert!(rec.take().is_empty(), "the update waits for update_interval");
    e.reload(cfg(), rec.clone(), at(250));
    e.advance(at(600));
    let got = rec.take();
    assert_eq!(got.len(), 1, "{:?}", got.iter().map(|n| n.at).collect::<Vec<_>>());
    assert!(got[0].at >= at(330) && got[0].message.alerts.len() == 3, "{:?}", got[0].at);
}

/// Incident numbers come from the incident's first alert, so replicas that receive it at different
/// times number it alike; alone, alertd numbers incidents in sequence as before.
#[test]
fn replicas_number_an_incident_alike() {
    let ids = |arrival: u64, clustered: bool| {
        let rec = Arc::new(Recorder::default());
        let mut e =
            Engine::new(correlated("10m"), Arc::new(MemSilences::default()), Arc::new(MemLog::default()), rec.clone());
        if clustered {
            e.join_cluster();
        }
        let mut a = host_alert("h1");
        a.starts_at = Some(at(0));
        e.post(at(arrival), vec![a]).unwrap();
        e.advance(at(arrival + 60));
        incident_ids(&rec)
    };
    assert_eq!(ids(0, true), ids(3, true));
    assert_ne!(ids(0, true), [1]);
    assert_eq!(ids(0, false), [1]);
}

/// A replica that restarts gets the firing alerts again in one batch, in any order: the incident it
/// opens is numbered by the alert that began first, as its peers numbered it.
#[test]
fn a_restarted_replica_numbers_the_incident_by_its_first_alert() {
    let first_seen = |order: &[&str]| {
        let rec = Arc::new(Recorder::default());
        let mut e =
            Engine::new(correlated("10m"), Arc::new(MemSilences::default()), Arc::new(MemLog::default()), rec.clone());
        e.join_cluster();
        let batch: Vec<PostableAlert> = order
            .iter()
            .map(|name| {
                let mut a = host_alert("h1");
                a.labels.insert("alertname".into(), name.to_string());
                a.starts_at = Some(at(if *name == "Early" { 0 } else { 50 }));
                a
            })
            .collect();
        e.post(at(100), batch).unwrap();
        e.advance(at(200));
        incident_ids(&rec)
    };
    let ids = first_seen(&["Late", "Early"]);
    assert_eq!(ids, first_seen(&["Early", "Late"]));
    assert_eq!(ids[0], crate::incident::content_id(fingerprint_of("Early"), at(0)));
}

fn fingerprint_of(name: &str) -> crate::alert::Fingerprint {
    let mut a = host_alert("h1");
    a.labels.insert("alertname".into(), name.to_string());
    a.into_alert(at(0), Duration::from_secs(300)).unwrap().fingerprint()
}
