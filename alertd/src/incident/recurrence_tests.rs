//! Recurring incidents through the whole engine, on explicit times: each problem a host has comes,
//! resolves a minute later, and comes again. The helpers also serve the tests of recurrences
//! across a restart on alertd.db (`db/tests.rs`).

use crate::alert::PostableAlert;
use crate::engine::Engine;
use crate::nflog::MemLog;
use crate::notify::{Notification, Recorder};
use crate::silence::MemSilences;
use crate::suppressed::{Reason, Timer};
use crate::time::Timestamp;
use std::sync::Arc;
use std::time::Duration;

pub(crate) const T0: Timestamp = Timestamp(1_600_000_000_000);

pub(crate) fn at(s: u64) -> Timestamp {
    T0 + Duration::from_secs(s)
}

/// With `backoff_step: 1` one page moves the backoff to two new alerts; an incident closes 10
/// minutes after its last alert resolves, and recurs within `recurrence_window` of closing. Pages
/// only: resolutions are not sent, as in the shipped configuration.
pub(crate) fn config(recurrence_window: &str, backoff_step: u32) -> crate::config::Config {
    let yaml = format!(
        "route: {{receiver: team, group_by: [cluster], group_wait: 30s, group_interval: 1m, repeat_interval: 4h}}\n\
         receivers: [{{name: team, webhook_configs: [{{url: 'http://localhost:5001/', send_resolved: false}}]}}]\n\
         argus:\n  correlation: {{labels: [host], window: 10m, burst_window: 2m, backoff_window: 2h, \
         backoff_step: {backoff_step}, update_interval: 5m, recurrence_window: {recurrence_window}}}\n"
    );
    crate::config::parse(&yaml, "test.yml").unwrap()
}

fn engine_with(recurrence_window: &str, backoff_step: u32) -> (Engine, Arc<Recorder>) {
    let cfg = config(recurrence_window, backoff_step);
    let rec = Arc::new(Recorder::default());
    let e = Engine::new(cfg, Arc::new(MemSilences::default()), Arc::new(MemLog::default()), rec.clone());
    (e, rec)
}

fn engine(recurrence_window: &str) -> (Engine, Arc<Recorder>) {
    engine_with(recurrence_window, 1)
}

/// An alert of host `h1` that begins at `start` seconds and resolves a minute later.
pub(crate) fn episode(name: &str, series: &str, severity: &str, start: u64) -> PostableAlert {
    let labels = [("alertname", name), ("host", "h1"), ("series", series), ("severity", severity)];
    PostableAlert {
        labels: labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        annotations: Default::default(),
        starts_at: Some(at(start)),
        ends_at: Some(at(start + 60)),
        generator_url: String::new(),
    }
}

/// Posts `alerts` at `start` and runs the engine for the next ten minutes.
pub(crate) fn run(e: &mut Engine, start: u64, alerts: Vec<PostableAlert>) {
    e.advance(at(start));
    e.post(at(start), alerts).unwrap();
    e.advance(at(start));
    for s in (start..start + 600).step_by(10) {
        e.advance(at(s));
    }
}

/// Each notification as `seconds incident [annotations of the recurrence]`.
pub(crate) fn pages(rec: &Recorder) -> Vec<String> {
    rec.take()
        .iter()
        .map(|n: &Notification| {
            let id = n.message.argus.as_ref().and_then(|x| x.incident.as_ref()).map_or(0, |i| i.id);
            let notes: Vec<String> = n
                .message
                .common_annotations
                .iter()
                .filter(|(k, _)| k.starts_with("argus_") && k.as_str() != "argus_recurring_since")
                .map(|(k, v)| format!("{}={v}", k.trim_start_matches("argus_")))
                .collect();
            format!("{} #{id} [{}]", (n.at.0 - T0.0) / 1000, notes.join(" "))
        })
        .collect()
}

#[test]
fn a_recurrence_within_the_backoff_is_held_and_folded_into_the_next_page() {
    let (mut e, rec) = engine("1h");
    run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    assert_eq!(pages(&rec), ["30 #1 []"]);
    // Closed at 11m; back at 20m with one alert where the backoff asks for two: held.
    run(&mut e, 1200, vec![episode("DiskFull", "sda", "warning", 1200)]);
    assert_eq!(pages(&rec), Vec::<String>::new());
    let held = e.suppressed().query(&[], at(1230), at(1230));
    let reasons: Vec<&Reason> = held.values().flatten().map(|r| &r.reason).collect();
    assert!(
        reasons.iter().any(|r| matches!(r, Reason::Grouped { timer: Timer::Backoff, incident: Some(2), .. })),
        "the held recurrence is in the ledger with its incident: {reasons:?}"
    );
    // Back again at 40m on two disks: a burst that meets the backoff. The page says it is the third
    // occurrence, of the second, which was held.
    run(&mut e, 2400, vec![episode("DiskFull", "sda", "warning", 2400), episode("DiskFull", "sdb", "warning", 2400)]);
    assert_eq!(pages(&rec), ["2430 #3 [occurrence=3 recurrence_of=2 recurrences_held=1]"]);
}

#[test]
fn a_recurrence_pages_at_once_when_critical_or_of_a_new_alertname() {
    let (mut e, rec) = engine("1h");
    run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    assert_eq!(pages(&rec), ["30 #1 []"]);
    run(&mut e, 1200, vec![episode("DiskFull", "sda", "critical", 1200)]);
    assert_eq!(pages(&rec), ["1230 #2 [occurrence=2 recurrence_of=1]"], "critical pages, linked");
    // Its first alertname never seen at the place: a new incident of its own, paged.
    run(&mut e, 2400, vec![episode("GpuXid", "gpu0", "warning", 2400)]);
    assert_eq!(pages(&rec), ["2430 #3 []"]);
    // DiskFull again, with a new alertname beside it: the third DiskFull occurrence (the GpuXid
    // incident between is another problem), and the new alertname pages.
    run(&mut e, 3600, vec![episode("DiskFull", "sda", "warning", 3600), episode("EccErrors", "gpu0", "warning", 3600)]);
    assert_eq!(pages(&rec), ["3630 #4 [occurrence=3 recurrence_of=2]"]);
}

#[test]
fn a_recurrence_pages_at_once_outside_the_window_or_after_the_backoff_window() {
    let (mut e, rec) = engine("1h");
    run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    // Closed at 11m; at 1h20m, more than the recurrence window later: a new incident.
    run(&mut e, 4800, vec![episode("DiskFull", "sda", "warning", 4800)]);
    assert_eq!(pages(&rec), ["30 #1 []", "4830 #2 []"]);

    // A longer recurrence window links it, but its origin's last page is older than the backoff
    // window (2h): the first recurrence of a problem paged long ago pages.
    let (mut e, rec) = engine("3h");
    run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    run(&mut e, 7500, vec![episode("DiskFull", "sda", "warning", 7500)]);
    assert_eq!(pages(&rec), ["30 #1 []", "7530 #2 [occurrence=2 recurrence_of=1]"]);
}

#[test]
fn without_a_recurrence_window_every_incident_pages() {
    let (mut e, rec) = engine("0s");
    run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    run(&mut e, 1200, vec![episode("DiskFull", "sda", "warning", 1200)]);
    assert_eq!(pages(&rec), ["30 #1 []", "1230 #2 []"]);
}

#[test]
fn an_alert_notified_before_rides_along_and_a_new_series_leads() {
    // One page: the backoff asks for one new alert (`backoff_step: 2`), as for an update.
    let (mut e, rec) = engine_with("1h", 2);
    run(&mut e, 0, vec![episode("DiskFull", "sda", "warning", 0)]);
    assert_eq!(pages(&rec), ["30 #1 []"]);
    // The disk that was paged fills again: it rides, and leads no page.
    run(&mut e, 1200, vec![episode("DiskFull", "sda", "warning", 1200)]);
    assert_eq!(pages(&rec), Vec::<String>::new());
    // Another disk of the host fills: a new alert leads, the page says one occurrence was held.
    run(&mut e, 2400, vec![episode("DiskFull", "sdb", "warning", 2400)]);
    assert_eq!(pages(&rec), ["2430 #3 [occurrence=3 recurrence_of=2 recurrences_held=1]"]);
}
