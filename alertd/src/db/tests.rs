use super::*;
use crate::alert::PostableAlert;
use crate::engine::Engine;
use crate::notify::{Notifier, Recorder};
use crate::silence::{Silence, Silences};
use crate::time::Timestamp;
use argus_model::{Labels, Matcher};
use std::sync::Arc;
use std::time::Duration;

use crate::fixture;

const T0: Timestamp = Timestamp(1_600_000_000_000);

fn at(s: u64) -> Timestamp {
    T0 + Duration::from_secs(s)
}

fn alert(name: &str, host: &str) -> PostableAlert {
    PostableAlert {
        labels: [("alertname", name), ("host", host)].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        annotations: Default::default(),
        starts_at: None,
        ends_at: None,
        generator_url: String::new(),
    }
}

/// An engine over the database in `dir`, as a fresh process would build it.
fn engine(dir: &Path, notifier: Arc<dyn Notifier>) -> (Engine, Arc<DbSilences>) {
    let db = Arc::new(Db::open(dir).unwrap());
    let silences = Arc::new(DbSilences::load(db.clone()).unwrap());
    let nflog = Arc::new(DbLog::load(db.clone()).unwrap());
    let cfg = crate::config::parse(&fixture::config(&[]), "test.yml").unwrap();
    let notifier = Arc::new(HistoryNotifier { inner: notifier, db });
    (Engine::new(cfg, silences.clone(), nflog, notifier), silences)
}

/// Posts at `t` and runs the timers to `until`; returns the alert names notified.
fn run(e: &mut Engine, rec: &Recorder, t: Timestamp, alerts: Vec<PostableAlert>, until: Timestamp) -> Vec<String> {
    e.advance(t);
    e.post(t, alerts).unwrap();
    e.advance(until);
    rec.take()
        .iter()
        .map(|n| n.message.alerts.iter().map(|a| a.labels["alertname"].clone()).collect::<Vec<_>>().join(","))
        .collect()
}

#[test]
fn silence_survives_a_restart_and_still_mutes() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (_e, silences) = engine(dir.path(), Arc::new(Recorder::default()));
        silences
            .set(Silence {
                id: "s1".into(),
                matchers: vec![Matcher::eq("host", "h1")],
                starts_at: T0,
                ends_at: at(3600),
                updated_at: T0,
                created_by: "ops".into(),
                comment: "maintenance".into(),
                until_resolved: false,
            })
            .unwrap();
        // An expired one stays expired.
        silences
            .set(Silence {
                id: "s2".into(),
                matchers: vec![Matcher::eq("host", "h2")],
                starts_at: T0,
                ends_at: at(3600),
                updated_at: T0,
                created_by: "ops".into(),
                comment: String::new(),
                until_resolved: true,
            })
            .unwrap();
        assert!(silences.expire("s2", at(1)).unwrap());
        assert!(!silences.expire("nope", at(1)).unwrap());
    }
    let rec = Arc::new(Recorder::default());
    let (mut e, silences) = engine(dir.path(), rec.clone());
    let mut ids: Vec<_> = silences.list().into_iter().map(|s| (s.id, s.ends_at, s.comment, s.until_resolved)).collect();
    ids.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        ids,
        vec![("s1".into(), at(3600), "maintenance".into(), false), ("s2".into(), at(1), String::new(), true)]
    );
    let sent = run(&mut e, &rec, at(10), vec![alert("Muted", "h1"), alert("Loud", "h2")], at(60));
    assert_eq!(sent, vec!["Loud"]);
    // Expired silences are kept 120 hours, then forgotten, on disk too.
    silences.gc(at(1 + 120 * 3600 - 1), Duration::from_secs(120 * 3600));
    assert_eq!(silences.list().len(), 2);
    silences.gc(at(1 + 120 * 3600), Duration::from_secs(120 * 3600));
    assert_eq!(silences.list().iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["s1"]);
    drop(e);
    let (_, silences) = engine(dir.path(), rec.clone());
    assert_eq!(silences.list().iter().map(|s| s.id.as_str()).collect::<Vec<_>>(), ["s1"]);
}

#[test]
fn notification_log_survives_a_restart_and_still_dedups() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    {
        let (mut e, _) = engine(dir.path(), rec.clone());
        assert_eq!(run(&mut e, &rec, at(0), vec![alert("A", "h1")], at(60)), vec!["A"]);
    }
    // A new process gets the same alert again: its group flushes after group_wait, but the log says
    // the receiver was told within repeat_interval, so nothing is sent.
    let (mut e, _) = engine(dir.path(), rec.clone());
    assert_eq!(run(&mut e, &rec, at(120), vec![alert("A", "h1")], at(400)), Vec::<String>::new());
    // Without the log it would have been sent: a fresh directory does send it.
    let fresh = tempfile::tempdir().unwrap();
    let (mut e, _) = engine(fresh.path(), rec.clone());
    assert_eq!(run(&mut e, &rec, at(120), vec![alert("A", "h1")], at(400)), vec!["A"]);
}

#[test]
fn notifications_are_recorded_and_queryable() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let (mut e, _) = engine(dir.path(), rec.clone());
    run(&mut e, &rec, at(0), vec![alert("A", "h1")], at(60));
    run(&mut e, &rec, at(61), vec![alert("B", "h1")], at(200));
    let db = Db::open(dir.path()).unwrap();
    let all = db.notifications(Range { start: T0, end: at(1000), limit: 10 }, None).unwrap();
    let got: Vec<_> = all.iter().map(|n| (n.at, n.receiver.as_str(), n.status.as_str(), n.alerts)).collect();
    assert_eq!(got, vec![(at(91), "team", "firing", 1), (at(30), "team", "firing", 1)]);
    assert_eq!(all[1].payload["groupKey"], all[1].group_key.as_str());
    let one = db.notifications(Range { start: T0, end: at(1000), limit: 1 }, Some("team")).unwrap();
    assert_eq!(one.len(), 1);
    assert!(db.notifications(Range { start: at(100), end: at(1000), limit: 10 }, None).unwrap().is_empty());
    assert!(db.notifications(Range { start: T0, end: at(1000), limit: 10 }, Some("other")).unwrap().is_empty());
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    drop(Db::open(dir.path()).unwrap());
    let conn = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
    conn.pragma_update(None, "user_version", 99).unwrap();
    drop(conn);
    let err = Db::open(dir.path()).err().unwrap().to_string();
    assert!(err.contains("schema version 99 is newer"), "{err}");
}

#[test]
fn alert_history_keeps_one_row_per_start_and_follows_updates() {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(dir.path()).unwrap();
    let rt = Duration::from_secs(300);
    let mut a = alert("A", "h1").into_alert(at(0), rt).unwrap();
    db.record_alerts(std::slice::from_ref(&a)).unwrap();
    a.ends_at = at(60);
    a.updated_at = at(60);
    db.record_alerts(std::slice::from_ref(&a)).unwrap();
    let again = alert("A", "h1").into_alert(at(600), rt).unwrap();
    db.record_alerts(&[again]).unwrap();
    let conn = db.conn();
    let mut st = conn.prepare("SELECT starts_at, ends_at, labels FROM alert_history ORDER BY starts_at").unwrap();
    let rows: Vec<(i64, i64, String)> =
        st.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap().collect::<Result<_, _>>().unwrap();
    let labels = r#"{"alertname":"A","host":"h1"}"#.to_string();
    assert_eq!(rows, vec![(at(0).0, at(60).0, labels.clone()), (at(600).0, at(900).0, labels)]);
}

#[test]
fn a_version_1_database_gains_silences_until_resolved() {
    let dir = tempfile::tempdir().unwrap();
    {
        let conn = rusqlite::Connection::open(dir.path().join(FILE_NAME)).unwrap();
        conn.execute_batch(
            "CREATE TABLE silences (id TEXT PRIMARY KEY, matchers TEXT NOT NULL, starts_at INTEGER NOT NULL,
                 ends_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, created_by TEXT NOT NULL, comment TEXT NOT NULL);
             INSERT INTO silences VALUES ('old', '[{\"name\":\"host\",\"value\":\"h1\",\"isRegex\":false}]',
                 1, 2, 1, 'ops', 'kept');
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let silences = DbSilences::load(db.clone()).unwrap();
    let old = &silences.list()[0];
    assert_eq!((old.id.as_str(), old.comment.as_str(), old.until_resolved), ("old", "kept", false));
    let mut new = old.clone();
    new.id = "new".into();
    new.until_resolved = true;
    silences.set(new).unwrap();
    drop(silences);
    drop(db);
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let again = DbSilences::load(db).unwrap().list();
    assert_eq!(
        again.iter().map(|s| (s.id.as_str(), s.until_resolved)).collect::<Vec<_>>(),
        [("new", true), ("old", false)]
    );
}

#[test]
fn a_log_written_before_groups_were_kept_per_route_still_dedups() {
    // Before, sibling routes with the same matchers shared one group, and only the first one's
    // receiver was notified and logged, under the route key. That row, as such a version left it:
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Db::open(dir.path()).unwrap();
        db.conn()
            .execute(
                "INSERT INTO nflog (group_key, recipient, firing, resolved, timestamp) VALUES (?1, ?2, ?3, '[]', ?4)",
                rusqlite::params![
                    r#"{}/{host="h1"}:{alertname="A"}"#,
                    "team/webhook/0",
                    format!(
                        "[\"{}\"]",
                        crate::alert::fingerprint(&Labels::from_pairs([("alertname", "A"), ("host", "h1")]))
                    ),
                    at(30).0
                ],
            )
            .unwrap();
    }
    let config = fixture::config(&[
        "{matchers: ['host=\"h1\"'], receiver: team, continue: true}",
        "{matchers: ['host=\"h1\"'], receiver: pager}",
    ]);
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let nflog = Arc::new(DbLog::load(db.clone()).unwrap());
    let silences = Arc::new(DbSilences::load(db).unwrap());
    let rec = Arc::new(Recorder::default());
    let mut e = Engine::new(crate::config::parse(&config, "t.yml").unwrap(), silences, nflog, rec.clone());
    e.post(at(120), vec![alert("A", "h1")]).unwrap();
    e.advance(at(400));
    // The first sibling's group has the key the row was written under: `team` is not told again;
    // the second sibling's receiver, never told, now is.
    assert_eq!(rec.take().iter().map(|n| n.receiver.clone()).collect::<Vec<_>>(), ["pager"]);
}

#[test]
fn history_older_than_the_retention_is_pruned() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let cfg = format!("{}argus:\n  correlation: {{labels: [host]}}\n  history_retention: 1h\n", fixture::config(&[]));
    let cfg = crate::config::parse(&cfg, "test.yml").unwrap();
    let rec = Arc::new(Recorder::default());
    let notifier = Arc::new(HistoryNotifier { inner: rec.clone(), db: db.clone() });
    let silences = Arc::new(DbSilences::load(db.clone()).unwrap());
    let mut e = Engine::new(cfg, silences, Arc::new(DbLog::load(db.clone()).unwrap()), notifier);
    db.record_alerts(&[alert("A", "h1").into_alert(at(0), Duration::from_secs(300)).unwrap()]).unwrap();
    assert_eq!(run(&mut e, &rec, at(0), vec![alert("A", "h1")], at(60)), vec!["A"]);
    let count = |table: &str| -> i64 {
        db.conn().query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap()
    };
    assert_eq!((count("notifications"), count("incidents"), count("alert_history")), (1, 1, 1));
    // Two hours on, the engine's housekeeping drops what is older than an hour; B's rows are new.
    db.record_alerts(&[alert("B", "h2").into_alert(at(7200), Duration::from_secs(300)).unwrap()]).unwrap();
    // (A's resolution goes out first, at 330 s, and is as old as its firing.)
    assert_eq!(run(&mut e, &rec, at(7200), vec![alert("B", "h2")], at(7300)), vec!["A", "B"]);
    assert_eq!((count("notifications"), count("incidents"), count("alert_history")), (1, 1, 1));
    let kept = db.notifications(Range { start: T0, end: at(8000), limit: 10 }, None).unwrap();
    assert_eq!(kept[0].at, at(7230));
    assert!(
        crate::config::parse(&format!("{}argus:\n  history_retention: 0s\n", fixture::config(&[])), "a.yml").is_err()
    );
}

/// An acknowledgement that reaches this alertd as engine memory (made on a peer) marks the
/// incident's history row, unless the row has one already: the first one stands.
#[test]
fn an_acknowledgement_remembered_from_a_peer_marks_the_history() {
    use crate::memory::{Acknowledgement, IncidentMemory, Memory, MemorySink};
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let yaml = "route: {receiver: team, group_by: [cluster], group_wait: 30s}\n\
         receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/'}]}]\n\
         argus:\n  correlation: {labels: [host]}\n";
    let cfg = crate::config::parse(yaml, "test.yml").unwrap();
    let notifier = Arc::new(HistoryNotifier { inner: rec.clone(), db: db.clone() });
    let mut e = Engine::new(
        cfg,
        Arc::new(DbSilences::load(db.clone()).unwrap()),
        Arc::new(DbLog::load(db.clone()).unwrap()),
        notifier,
    );
    run(&mut e, &rec, at(0), vec![alert("HostDown", "h1")], at(60));
    let row = db.incidents(Range { start: T0, end: at(1000), limit: 10 }).unwrap().remove(0);
    assert_eq!(row.acknowledged, None);
    let remembered = |by: &str, t: u64| {
        Memory::Incident(Box::new(IncidentMemory {
            v: 1,
            route_group: "g".into(),
            id: row.engine_id as u64,
            origin: "host=h1".into(),
            opened_at: T0.0,
            topology: vec![("host".into(), "h1".into())],
            until: at(600).0,
            notified: None,
            ack: Some(Acknowledgement { at: at(t).0, by: by.into(), comment: "on it".into() }),
            escalated: vec![],
            expires_at: at(1200).0,
            names: vec![],
            alerts_notified: vec![],
            paged: false,
            recurrence: None,
        }))
    };
    let kept = DbMemory::new(db.clone());
    kept.remember(&remembered("oncall", 100));
    kept.remember(&remembered("later", 200));
    let acked = db.incident(row.id).unwrap().unwrap().acknowledged.unwrap();
    assert_eq!((acked.at, acked.by.as_str(), acked.comment.as_str()), (at(100), "oncall", "on it"));
}

// === the engine's memory across a restart (crate::memory) ===

use crate::engine::memory_tests::{self as mem, escalating, host_alert};

/// A lone alertd on its database, as `src/alertd.rs` starts one: its memory comes back first.
fn start_lone(dir: &std::path::Path, rec: Arc<Recorder>, now: Timestamp) -> Engine {
    let db = Arc::new(Db::open(dir).unwrap());
    let log = Arc::new(DbLog::load(db.clone()).unwrap());
    let kept = Arc::new(DbMemory::new(db.clone()));
    let mut e = Engine::new(escalating(), Arc::new(crate::silence::MemSilences::default()), log, rec);
    e.number_incidents_after(db.last_incident_number().unwrap());
    e.remember_with(kept.clone());
    for m in kept.load(now).unwrap() {
        e.merge_memory(&m, now);
    }
    e
}

/// Before the engine's memory was kept, a restarted alertd opened a new incident for alerts that
/// were still firing (a second page under a new number) and forgot escalation timers and
/// acknowledgements.
#[test]
fn a_restarted_lone_alertd_keeps_its_incidents_escalation_timers_and_acknowledgements() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let mut e = start_lone(dir.path(), rec.clone(), at(0));
    e.post(at(0), vec![host_alert("h1"), host_alert("h2")]).unwrap();
    e.advance(at(30));
    let first = rec.take();
    assert_eq!(first.len(), 2, "one incident per host");
    let incident = |host: &str| {
        let n = first.iter().find(|n| n.message.common_labels.get("host").map(String::as_str) == Some(host)).unwrap();
        n.message.argus.as_ref().unwrap().incident.clone().unwrap()
    };
    let (h1, h2) = (incident("h1"), incident("h2"));
    assert!(e.acknowledge(h2.id, h2.opened_at, mem::ack("sre")));
    drop(e);

    // The restart: Prometheus resends the firing alerts.
    let rec = Arc::new(Recorder::default());
    let mut e = start_lone(dir.path(), rec.clone(), at(100));
    e.post(at(100), vec![host_alert("h1"), host_alert("h2")]).unwrap();
    e.advance(at(200));
    assert_eq!(mem::sent(&rec), [], "the same incidents, already notified");
    e.advance(at(1000));
    assert_eq!(
        mem::sent(&rec),
        [(930, "lead".to_string(), h1.id)],
        "h1 escalates on its first clock; h2 was acknowledged"
    );
}

// === recurring incidents across a restart (crate::incident::recurrence) ===

use crate::incident::recurrence_tests::{self as rt, episode};
use crate::suppressed::{Reason, Timer};

/// A lone alertd with recurrences kept for `recurrence_window`, on the database in `dir`, started at
/// `now` as `src/alertd.rs` starts one: incident numbers after the history's, then its memory.
fn start_recurring(dir: &std::path::Path, recurrence_window: &str, rec: Arc<Recorder>, now: Timestamp) -> Engine {
    let db = Arc::new(Db::open(dir).unwrap());
    let log = Arc::new(DbLog::load(db.clone()).unwrap());
    let kept = Arc::new(DbMemory::new(db.clone()));
    let notifier = Arc::new(HistoryNotifier { inner: rec, db: db.clone() });
    let cfg = rt::config(recurrence_window, 1);
    let mut e = Engine::new(cfg, Arc::new(crate::silence::MemSilences::default()), log, notifier);
    e.number_incidents_after(db.last_incident_number().unwrap());
    e.remember_with(kept.clone());
    for m in kept.load(now).unwrap() {
        e.merge_memory(&m, now);
    }
    e
}

/// The incidents alertd.db remembers at `now`: (number, occurrence, recurs, held) of each.
fn remembered(dir: &std::path::Path, now: Timestamp) -> Vec<(u64, u32, u64, u32)> {
    use crate::memory::Memory;
    let kept = DbMemory::new(Arc::new(Db::open(dir).unwrap()));
    let mut out: Vec<_> = kept
        .load(now)
        .unwrap()
        .into_iter()
        .filter_map(|m| match m {
            Memory::Incident(i) => Some(match i.recurrence {
                Some(r) => (i.id, r.occurrence, r.of, r.held),
                None => (i.id, 1, 0, 0),
            }),
            _ => None,
        })
        .collect();
    out.sort_unstable();
    out
}

/// Before closed incidents were remembered, a restarted alertd took the next occurrence of a
/// problem for a new incident: it paged at once, and the occurrence count started over. The
/// timeline is `a_recurrence_within_the_backoff_is_held_and_folded_into_the_next_page`'s, with a
/// restart before each occurrence.
#[test]
fn a_recurrence_after_a_restart_is_linked_and_held_by_the_backoff() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let mut e = start_recurring(dir.path(), "1h", rec.clone(), rt::at(0));
    rt::run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    assert_eq!(rt::pages(&rec), ["30 #1 []"]);
    drop(e);
    // Closed at 11m, and remembered for the recurrence window after.
    assert_eq!(remembered(dir.path(), rt::at(1200)), [(1, 1, 0, 0)]);
    assert_eq!(remembered(dir.path(), rt::at(660 + 3600)), []);

    // Back at 20m, after a restart: the second occurrence, with one alert where the backoff of the
    // first page asks for two, is held.
    let mut e = start_recurring(dir.path(), "1h", rec.clone(), rt::at(1200));
    rt::run(&mut e, 1200, vec![episode("DiskFull", "sda", "warning", 1200)]);
    assert_eq!(rt::pages(&rec), Vec::<String>::new());
    let held = e.suppressed().query(&[], rt::at(1230), rt::at(1230));
    let reasons: Vec<&Reason> = held.values().flatten().map(|r| &r.reason).collect();
    assert!(
        reasons.iter().any(|r| matches!(r, Reason::Grouped { timer: Timer::Backoff, incident: Some(2), .. })),
        "held by the backoff: {reasons:?}"
    );
    drop(e);
    assert_eq!(remembered(dir.path(), rt::at(1800)), [(1, 1, 0, 0), (2, 2, 1, 0)], "#2 recurs #1");

    // Back at 40m on two disks, after another restart: the third occurrence, of the second (held),
    // under a number of its own although the held one was never in the history.
    let mut e = start_recurring(dir.path(), "1h", rec.clone(), rt::at(2400));
    rt::run(
        &mut e,
        2400,
        vec![episode("DiskFull", "sda", "warning", 2400), episode("DiskFull", "sdb", "warning", 2400)],
    );
    assert_eq!(rt::pages(&rec), ["2430 #3 [occurrence=3 recurrence_of=2 recurrences_held=1]"]);
}

#[test]
fn after_a_restart_an_incident_beyond_the_recurrence_window_is_new() {
    let dir = tempfile::tempdir().unwrap();
    let rec = Arc::new(Recorder::default());
    let mut e = start_recurring(dir.path(), "1h", rec.clone(), rt::at(0));
    rt::run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    drop(e);
    // Closed at 11m; at 1h20m, more than the recurrence window later.
    let mut e = start_recurring(dir.path(), "1h", rec.clone(), rt::at(4800));
    rt::run(&mut e, 4800, vec![episode("DiskFull", "sda", "warning", 4800)]);
    assert_eq!(rt::pages(&rec), ["30 #1 []", "4830 #2 []"]);
    // Without recurrences, a closed incident is not kept at all.
    let dir = tempfile::tempdir().unwrap();
    let mut e = start_recurring(dir.path(), "0s", rec.clone(), rt::at(0));
    rt::run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    drop(e);
    assert_eq!(remembered(dir.path(), rt::at(660)), []);
    let mut e = start_recurring(dir.path(), "0s", rec.clone(), rt::at(1200));
    rt::run(&mut e, 1200, vec![episode("DiskFull", "sda", "warning", 1200)]);
    assert_eq!(rt::pages(&rec), ["30 #1 []", "1230 #2 []"]);
}

/// alertd.db as the v0.1.0 release left it (tests/fixtures/datadir-v0.1.0/) opens with its silence,
/// and an incident as that release remembered it (format version 1, before incidents carried their
/// recurrence; the fixture was made with none open) is read and held again.
#[test]
fn the_v0_1_0_database_opens_and_reads_its_incident_memory() {
    use crate::memory::Memory;
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/datadir-v0.1.0/data/alertd.db");
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(fixture, dir.path().join(FILE_NAME)).unwrap();
    let db = Arc::new(Db::open(dir.path()).unwrap());
    let silences = DbSilences::load(db.clone()).unwrap();
    assert_eq!(
        silences.list().iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        ["87b6f906-a724-40b4-95f3-2cedeb56ffa3"]
    );
    DbLog::load(db.clone()).unwrap();
    let kept = DbMemory::new(db.clone());
    assert_eq!(kept.load(T0).unwrap(), []);
    let v1 = r#"{"v":1,"route_group":"g","id":7,"origin":"host=h1","opened_at":1600000000000,"topology":[["host","h1"]],"until":1600000600000,"notified":["k",1600000030000],"expires_at":1600001200000}"#;
    db.conn()
        .execute(
            "INSERT INTO memory (key, value, expires_at) VALUES (?1, ?2, ?3)",
            rusqlite::params!["i/g\u{1f}7", v1, at(1200).0],
        )
        .unwrap();
    let items = kept.load(at(100)).unwrap();
    let Some(Memory::Incident(i)) = items.first() else { panic!("{items:?}") };
    assert_eq!((i.id, i.until, i.recurrence.is_none(), i.names.is_empty()), (7, at(600).0, true, true));
    // Held again, and remembered in the current format.
    let log = Arc::new(DbLog::load(db.clone()).unwrap());
    let mut e = Engine::new(rt::config("1h", 1), Arc::new(silences), log, Arc::new(Recorder::default()));
    e.remember_with(Arc::new(DbMemory::new(db.clone())));
    assert!(e.merge_memory(&items[0], at(100)));
    assert!(!e.merge_memory(&items[0], at(100)), "nothing new the second time");
    let again: String = db.conn().query_row("SELECT value FROM memory", [], |r| r.get(0)).unwrap();
    assert!(again.starts_with(r#"{"v":2,"#) && again.contains(r#""paged":true"#), "{again}");
}
