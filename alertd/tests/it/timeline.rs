//! Timeline tests in Alertmanager's acceptance style, on paused tokio time: alerts pushed at `t`,
//! notifications expected at exact offsets (Alertmanager's acceptance tests allow a window; paused
//! time makes the window a point).

use crate::support::fixture;
use crate::timeline_harness as harness;

use argus_alertd::silence::{Silence, Silences};
use argus_model::Matcher;
use expect_test::expect;
use harness::{T0, Timeline, alert, secs};

#[tokio::test(start_paused = true)]
async fn group_wait_collects_alerts_of_the_first_30s() {
    let got = Timeline::new(&fixture::config(&[]))
        .push(secs(0), vec![alert(&[("alertname", "A"), ("host", "h1")], None)])
        .push(secs(10), vec![alert(&[("alertname", "A"), ("host", "h2")], None)])
        .push(secs(10), vec![alert(&[("alertname", "B"), ("host", "h1")], None)])
        .run(secs(60))
        .await;
    expect![[r#"
        30s team Firing [A@h1 A@h2]
        40s team Firing [B@h1]"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn group_interval_batches_later_alerts() {
    let a1 = alert(&[("alertname", "A"), ("host", "h1")], None);
    let a2 = alert(&[("alertname", "A"), ("host", "h2")], None);
    let got = Timeline::new(&fixture::config(&[]))
        .push(secs(0), vec![a1.clone()])
        .push(secs(60), vec![a1.clone(), a2.clone()])
        .push(secs(120), vec![a1.clone(), a2.clone()])
        .push(secs(240), vec![a1, a2])
        .run(secs(400))
        .await;
    // The second alert waits for the group's next tick (30s + 5m), not its own group_wait.
    expect![[r#"
        30s team Firing [A@h1]
        5m30s team Firing [A@h1 A@h2]"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn repeat_interval_resends_unchanged_groups() {
    let a = alert(&[("alertname", "A")], None);
    let mut t = Timeline::new(&fixture::config(&[]));
    // Re-sent every minute, as Prometheus does, so it never times out.
    for m in 0..130 {
        t = t.push(secs(m * 60), vec![a.clone()]);
    }
    let got = t.run(secs(130 * 60)).await;
    // Flushes run every 5m from 30s; a repeat needs the last send to be more than 1h old.
    expect![[r#"
        30s team Firing [A]
        1h05m30s team Firing [A]"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn resolve_by_endsat_and_by_timeout() {
    let got = Timeline::new(&fixture::config(&[]))
        .push(secs(0), vec![alert(&[("alertname", "A")], None)])
        .push(secs(0), vec![alert(&[("alertname", "B")], None)])
        .push(secs(60), vec![alert(&[("alertname", "B")], Some(60))])
        .run(secs(900))
        .await;
    // B resolved explicitly at 1m; A times out 5m (resolve_timeout) after its last update.
    expect![[r#"
        30s team Firing [A]
        30s team Firing [B]
        5m30s team Resolved [A(resolved)]
        5m30s team Resolved [B(resolved)]"#]]
    .assert_eq(&got);
}

const INHIBIT: &str = r#"
route:
  receiver: team
  group_by: ['...']
  group_wait: 30s
  group_interval: 1m
receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/'}]}]
inhibit_rules:
  - source_matchers: ['severity="critical"']
    target_matchers: ['severity=~"warning|critical"']
    equal: [host]
"#;

#[tokio::test(start_paused = true)]
async fn inhibition_needs_a_firing_source_with_equal_labels() {
    let crit = alert(&[("alertname", "Down"), ("severity", "critical"), ("host", "h1")], Some(200));
    let got = Timeline::new(INHIBIT)
        .push(secs(0), vec![crit])
        .push(secs(0), vec![alert(&[("alertname", "Slow"), ("severity", "warning"), ("host", "h1")], None)])
        .push(secs(0), vec![alert(&[("alertname", "Slow"), ("severity", "warning"), ("host", "h2")], None)])
        .run(secs(400))
        .await;
    // The critical alert matches both sides of the rule and is not muted by itself. Slow@h1 is
    // muted until Down@h1 resolves at 200s, then notified at its group's next tick; both Slow
    // alerts time out (resolve_timeout 5m) and are sent resolved.
    expect![[r#"
        30s team Firing [Down@h1]
        30s team Firing [Slow@h2]
        3m30s team Resolved [Down@h1(resolved)]
        3m30s team Firing [Slow@h1]
        5m30s team Resolved [Slow@h1(resolved)]
        5m30s team Resolved [Slow@h2(resolved)]"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn silence_mutes_while_active() {
    let t = Timeline::new(INHIBIT);
    t.silences
        .set(Silence {
            id: "s1".into(),
            matchers: vec![Matcher::eq("host", "h1")],
            starts_at: T0,
            ends_at: T0 + secs(150),
            updated_at: T0,
            created_by: "test".into(),
            comment: "maintenance".into(),
            until_resolved: false,
        })
        .unwrap();
    let got = t
        .push(secs(0), vec![alert(&[("alertname", "Slow"), ("host", "h1")], None)])
        .push(secs(0), vec![alert(&[("alertname", "Slow"), ("host", "h2")], None)])
        .run(secs(300))
        .await;
    expect![[r#"
        30s team Firing [Slow@h2]
        2m30s team Firing [Slow@h1]"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn a_silence_until_resolved_kept_over_a_restart_waits_for_its_alerts() {
    // The silence was made before a restart, while Slow@h1 fired; the new process holds no alert yet.
    // Slow@h2 arrives first, then Slow@h1 comes back, resent by Prometheus, and resolves at 2m.
    let h1 = [("alertname", "Slow"), ("host", "h1")];
    let t = Timeline::new(INHIBIT);
    let mut s = Silence::until_resolved(vec![Matcher::eq("host", "h1")], "test".into(), String::new(), T0, secs(3600));
    s.id = "s1".into();
    t.silences.set(s).unwrap();
    let silences = t.silences.clone();
    let got = t
        .push(secs(0), vec![alert(&[("alertname", "Slow"), ("host", "h2")], None)])
        .push(secs(20), vec![alert(&h1, None)])
        .push(secs(120), vec![alert(&h1, Some(120))])
        .run(secs(300))
        .await;
    // Slow@h1 stays muted: the silence ends only when it resolves, not at Slow@h2's arrival.
    expect![[r#"
        30s team Firing [Slow@h2]"#]]
    .assert_eq(&got);
    assert_eq!(silences.list()[0].ends_at, T0 + secs(120));
}

const FLAP: &str = r#"
route:
  receiver: team
  group_by: [alertname]
  group_wait: 30s
  group_interval: 1m
receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/', send_resolved: false}]}]
argus:
  flap: {window: 10m, threshold: 3, settle: 10m}
"#;

#[tokio::test(start_paused = true)]
async fn flapping_alert_is_held_until_it_settles() {
    let mut t = Timeline::new(FLAP);
    // Fires at 0, 2m, 4m, 6m; resolves at 1m, 3m, 5m; then stays firing (re-sent each minute).
    for m in 0..7u64 {
        let labels = [("alertname", "Flappy")];
        t = t.push(secs(m * 60), vec![alert(&labels, if m % 2 == 1 { Some(m * 60) } else { None })]);
    }
    for m in 7..30u64 {
        t = t.push(secs(m * 60), vec![alert(&[("alertname", "Flappy")], None)]);
    }
    let got = t.run(secs(30 * 60)).await;
    // First firing notifies; the third change (2m) makes it flapping, so the refirings at 2m, 4m and
    // 6m notify no one; 10 minutes after its last change (6m) it has settled and is notified again.
    expect![[r#"
        30s team Firing [Flappy]
        16m30s team Firing [Flappy]"#]]
    .assert_eq(&got);
}

const CORRELATE: &str = r#"
route:
  receiver: team
  group_by: [cluster]
  group_wait: 30s
  group_interval: 1m
receivers: [{name: team, webhook_configs: [{url: 'http://localhost:5001/', send_resolved: false}]}]
argus:
  correlation: {labels: [host, job], window: 10m, burst_window: 3m, backoff_window: 1h, backoff_step: 1}
"#;

#[tokio::test(start_paused = true)]
async fn correlated_alerts_become_one_incident_with_a_cause() {
    let c = ("cluster", "c1");
    let got = Timeline::new(CORRELATE)
        .push(secs(0), vec![alert(&[c, ("alertname", "GpuUtilLow"), ("host", "h1"), ("job", "train-7")], None)])
        .push(secs(10), vec![alert(&[c, ("alertname", "NcclTimeout"), ("host", "h2"), ("job", "train-7")], None)])
        .push(secs(20), vec![alert(&[c, ("alertname", "GpuUtilLow"), ("host", "h9")], None)])
        .push(secs(80), vec![alert(&[c, ("alertname", "HostDown"), ("host", "h2")], None)])
        .push(secs(85), vec![alert(&[c, ("alertname", "XidError"), ("host", "h2")], None)])
        .run(secs(300))
        .await;
    // One incident for the job (h1, h2) and one for h9. HostDown joins through h2 and becomes the
    // cause; with backoff_step 1, the update after one notification needs two new alerts.
    expect![[r#"
        30s team Firing [GpuUtilLow@h1 NcclTimeout@h2] incident=1 cause=nccl_timeout
        50s team Firing [GpuUtilLow@h9] incident=2 cause=utilization_anomaly
        1m30s team Firing [HostDown@h2 XidError@h2 GpuUtilLow@h1 NcclTimeout@h2] incident=1 cause=node_down"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn a_notified_alert_that_begins_again_joins_a_burst_but_never_leads_one() {
    let a = [("alertname", "GpuUtilLow"), ("host", "h1")];
    let b = [("alertname", "EccErrors"), ("host", "h1")];
    // A is notified at 30s and resolves at 60s; at 120s it begins again together with B. With
    // backoff_step 1 the incident's update needs two new alerts: B, and A's new episode.
    let run = |with_b: bool| {
        let mut burst = vec![alert(&a, None)];
        if with_b {
            burst.push(alert(&b, None));
        }
        Timeline::new(CORRELATE)
            .push(secs(0), vec![alert(&a, None)])
            .push(secs(60), vec![alert(&a, Some(60))])
            .push(secs(120), burst)
            .run(secs(600))
    };
    expect![[r#"
        30s team Firing [GpuUtilLow@h1] incident=1 cause=utilization_anomaly
        2m30s team Firing [EccErrors@h1 GpuUtilLow@h1] incident=1 cause=gpu_fault"#]]
    .assert_eq(&run(true).await);
    // Alone, A's new episode is no news: A was in the incident's last notification.
    expect![[r#"
        30s team Firing [GpuUtilLow@h1] incident=1 cause=utilization_anomaly"#]]
    .assert_eq(&run(false).await);
}

#[tokio::test(start_paused = true)]
async fn a_new_incident_notifies_its_first_alert_whatever_its_places_backoff() {
    let h = ("host", "h1");
    // GpuUtilLow is notified at 30s and resolves at 60s; its incident closes 10 minutes later.
    // EccErrors, at 11m, opens a second incident on h1 and is notified at once, though h1's backoff
    // (one notification within backoff_window, backoff_step 1) asks two new alerts of an update;
    // XidError, an update of that incident after two notifications, needs three and is held.
    let got = Timeline::new(CORRELATE)
        .push(secs(0), vec![alert(&[h, ("alertname", "GpuUtilLow")], None)])
        .push(secs(60), vec![alert(&[h, ("alertname", "GpuUtilLow")], Some(60))])
        .push(secs(660), vec![alert(&[h, ("alertname", "EccErrors")], None)])
        .push(
            secs(780),
            vec![alert(&[h, ("alertname", "EccErrors")], None), alert(&[h, ("alertname", "XidError")], None)],
        )
        .run(secs(1200))
        .await;
    expect![[r#"
        30s team Firing [GpuUtilLow@h1] incident=1 cause=utilization_anomaly
        11m30s team Firing [EccErrors@h1] incident=2 cause=gpu_fault"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn an_incidents_first_notification_goes_out_however_long_ago_its_alert_began() {
    let c = ("cluster", "c1");
    // group_wait longer than burst_window: at the first flush the alert began 5m ago.
    let cfg = format!("global: {{resolve_timeout: 1h}}\n{}", CORRELATE.replace("group_wait: 30s", "group_wait: 5m"));
    let got = Timeline::new(&cfg)
        .push(secs(0), vec![alert(&[c, ("alertname", "HostDown"), ("host", "h1")], None)])
        .run(secs(600))
        .await;
    expect![[r#"
        5m00s team Firing [HostDown@h1] incident=1 cause=node_down"#]]
    .assert_eq(&got);
    // An alert that began long before it reached alertd (one that fired while alertd was down) is
    // flushed at once, as Alertmanager does, and notified.
    let mut old = alert(&[c, ("alertname", "HostDown"), ("host", "h1")], None);
    old.starts_at = Some(T0 - secs(600));
    let got = Timeline::new(CORRELATE).push(secs(0), vec![old]).run(secs(300)).await;
    expect![[r#"
        0s team Firing [HostDown@h1] incident=1 cause=node_down"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn an_update_within_update_interval_waits_and_batches_what_begins_meanwhile() {
    let cfg = format!(
        "global: {{resolve_timeout: 1h}}\n{}",
        CORRELATE.replace("backoff_step: 1}", "backoff_step: 1, update_interval: 5m}")
    );
    let h = ("host", "h1");
    let run = |cfg: String| {
        Timeline::new(&cfg)
            .push(secs(0), vec![alert(&[h, ("alertname", "GpuUtilLow")], None)])
            .push(
                secs(60),
                vec![alert(&[h, ("alertname", "EccErrors")], None), alert(&[h, ("alertname", "XidError")], None)],
            )
            .push(secs(180), vec![alert(&[h, ("alertname", "NcclTimeout")], None)])
            .run(secs(900))
    };
    // The burst of two at 60s meets the backoff (one notification: two new alerts needed) but comes
    // within 5m of the incident's first notification: it waits until 5m30s, though by then it began
    // longer than burst_window ago, and NcclTimeout, begun meanwhile, goes with it.
    expect![[r#"
        30s team Firing [GpuUtilLow@h1] incident=1 cause=utilization_anomaly
        5m30s team Firing [EccErrors@h1 GpuUtilLow@h1 NcclTimeout@h1 XidError@h1] incident=1 cause=gpu_fault"#]]
    .assert_eq(&run(cfg).await);
    // Without update_interval the burst goes out at the next flush, and NcclTimeout alone is held.
    expect![[r#"
        30s team Firing [GpuUtilLow@h1] incident=1 cause=utilization_anomaly
        1m30s team Firing [EccErrors@h1 GpuUtilLow@h1 XidError@h1] incident=1 cause=gpu_fault"#]]
    .assert_eq(&run(format!("global: {{resolve_timeout: 1h}}\n{CORRELATE}")).await);
}

const ESCALATE: &str = r#"
global: {resolve_timeout: 1h}
route:
  receiver: team
  group_by: [cluster]
  group_wait: 30s
  group_interval: 1m
  repeat_interval: 4h
receivers:
  - {name: team, webhook_configs: [{url: 'http://localhost:5001/', send_resolved: false}]}
  - {name: lead, webhook_configs: [{url: 'http://localhost:5002/', send_resolved: false}]}
argus:
  correlation: {labels: [host]}
  escalation:
    - {after: 10m, receiver: lead}
"#;

#[tokio::test(start_paused = true)]
async fn unacknowledged_critical_incident_escalates_once_and_ack_stops_it() {
    let crit = |host| alert(&[("alertname", "XidError"), ("host", host), ("severity", "critical")], None);
    let warn = alert(&[("alertname", "GpuUtilLow"), ("host", "h3"), ("severity", "warning")], None);
    let got = Timeline::new(ESCALATE)
        .push(secs(0), vec![crit("h1"), crit("h2"), warn])
        .ack(secs(120), 2)
        .run(secs(3600))
        .await;
    // h1 is never acknowledged: the lead hears of it 10 minutes after its first notification, once.
    // h2 is acknowledged at 2m; h3 is not critical.
    expect![[r#"
        30s team Firing [XidError@h1] incident=1 cause=gpu_fault
        30s team Firing [XidError@h2] incident=2 cause=gpu_fault
        30s team Firing [GpuUtilLow@h3] incident=3 cause=utilization_anomaly
        10m30s lead Firing [XidError@h1] incident=1 cause=gpu_fault escalated-after=600s"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn a_silenced_or_resolved_incident_does_not_escalate() {
    let crit = |host, ends| alert(&[("alertname", "XidError"), ("host", host), ("severity", "critical")], ends);
    let t = Timeline::new(ESCALATE);
    t.silences
        .set(Silence {
            id: "s1".into(),
            matchers: vec![Matcher::eq("host", "h2")],
            starts_at: T0 + secs(60),
            ends_at: T0 + secs(7200),
            updated_at: T0,
            created_by: "test".into(),
            comment: String::new(),
            until_resolved: false,
        })
        .unwrap();
    let got = t
        .push(secs(0), vec![crit("h1", None), crit("h2", None)])
        .push(secs(300), vec![crit("h1", Some(300))])
        .run(secs(3600))
        .await;
    // h1 resolved before its 10 minutes were up; h2 is silenced when its escalation comes due.
    expect![[r#"
        30s team Firing [XidError@h1] incident=1 cause=gpu_fault
        30s team Firing [XidError@h2] incident=2 cause=gpu_fault"#]]
    .assert_eq(&got);
}

const SIBLINGS: &str = r#"
route:
  receiver: default
  group_by: [alertname]
  group_wait: 30s
  group_interval: 5m
  routes:
    - matchers: ['severity="critical"']
      receiver: pager
      continue: true
    - matchers: ['severity="critical"']
      receiver: chat
      continue: true
      routes:
        - matchers: ['team="gpu"']
          receiver: gpu-team
    - matchers: ['severity="critical"']
      receiver: pager
receivers:
  - {name: default, webhook_configs: [{url: 'http://localhost:5001/'}]}
  - {name: pager, webhook_configs: [{url: 'http://localhost:5002/'}]}
  - {name: chat, webhook_configs: [{url: 'http://localhost:5003/'}]}
  - {name: gpu-team, webhook_configs: [{url: 'http://localhost:5004/'}]}
"#;

#[tokio::test(start_paused = true)]
async fn sibling_routes_with_the_same_matchers_each_notify_their_receiver() {
    let got = Timeline::new(SIBLINGS)
        .push(secs(0), vec![alert(&[("alertname", "GpuDown"), ("severity", "critical")], None)])
        .push(secs(10), vec![alert(&[("alertname", "XidError"), ("severity", "critical"), ("team", "gpu")], None)])
        .run(secs(60))
        .await;
    // Each route keeps its own aggregation group (Alertmanager keys groups by route). The third
    // sibling sends to `pager` again under the same group key, so the notification log dedups it.
    expect![[r#"
        30s chat Firing [GpuDown]
        30s pager Firing [GpuDown]
        40s gpu-team Firing [XidError]
        40s pager Firing [XidError]"#]]
    .assert_eq(&got);
}

#[tokio::test(start_paused = true)]
async fn silence_until_resolved_ends_when_its_alerts_resolve() {
    let h1 = [("alertname", "Slow"), ("host", "h1")];
    let t = Timeline::new(INHIBIT);
    let silences = t.silences.clone();
    let got = t
        .push(secs(0), vec![alert(&h1, None)])
        .push(secs(0), vec![alert(&[("alertname", "Slow"), ("host", "h2")], Some(200))])
        .silence_until_resolved(secs(10), vec![Matcher::eq("host", "h1")])
        .push(secs(60), vec![alert(&h1, None)])
        .push(secs(120), vec![alert(&h1, Some(120))])
        .push(secs(180), vec![alert(&h1, None)])
        .run(secs(400))
        .await;
    // Slow@h1 is silenced while it fires (30s, 1m30s); it resolves at 2m and the silence ends then,
    // so nothing about it goes out (its firing was never notified); it fires again at 3m and is
    // notified after its new group's wait.
    expect![[r#"
        30s team Firing [Slow@h2]
        3m30s team Firing [Slow@h1]
        3m30s team Resolved [Slow@h2(resolved)]"#]]
    .assert_eq(&got);
    let s = &silences.list()[0];
    assert!(s.until_resolved);
    assert_eq!((s.starts_at, s.ends_at), (T0 + secs(10), T0 + secs(120)));
}
