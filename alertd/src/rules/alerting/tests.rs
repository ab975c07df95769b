use super::*;
use expect_test::{Expect, expect};
use std::collections::BTreeMap;

const MIN: i64 = 60_000;

fn rule(hold_min: u64, keep_min: u64) -> AlertingState {
    let mut s = AlertingState::new(AlertingRule {
        name: "Hot".into(),
        expr: "temp > 80".into(),
        forecast: None,
        hold: Duration::from_secs(hold_min * 60),
        keep_firing_for: Duration::from_secs(keep_min * 60),
        labels: BTreeMap::from([("severity".into(), "page".into())]),
        annotations: BTreeMap::from([("summary".into(), "{{ $labels.host }} at {{ $value }}".into())]),
    });
    s.restored = true;
    s
}

fn hot(v: f64) -> Vec<(Labels, f64)> {
    vec![(Labels::from_pairs([("__name__", "temp"), ("host", "n1")]), v)]
}

/// One line per alert: state, activeAt / firedAt / resolvedAt in minutes.
fn states(s: &AlertingState) -> String {
    let m = |t: Option<Timestamp>| t.map_or("-".to_string(), |t| (t.0 / MIN).to_string());
    s.alerts()
        .iter()
        .map(|a| {
            let ann = a.annotations.get("summary").unwrap_or("");
            let (st, act, fired, res) = (a.state.as_str(), m(Some(a.active_at)), m(a.fired_at), m(a.resolved_at));
            format!("{} {st} active={act} fired={fired} resolved={res} {ann:?}", a.labels)
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Evaluates at each minute with the given result (None: no samples), printing states after each.
fn timeline(s: &mut AlertingState, steps: &[(i64, Option<f64>)], expect: Expect) {
    let mut out = String::new();
    for (min, v) in steps {
        let result = v.map(hot).unwrap_or_default();
        s.eval(Timestamp(min * MIN), &result).unwrap();
        out.push_str(&format!("t={min}: {}\n", states(s)));
    }
    expect.assert_eq(&out);
}

#[test]
fn pending_then_firing_then_resolved() {
    let mut s = rule(2, 0);
    timeline(
        &mut s,
        &[(0, Some(90.0)), (1, Some(91.0)), (2, Some(92.0)), (3, None), (19, None)],
        expect![[r#"
            t=0: {alertname="Hot", host="n1", severity="page"} pending active=0 fired=- resolved=- "n1 at 90"
            t=1: {alertname="Hot", host="n1", severity="page"} pending active=0 fired=- resolved=- "n1 at 91"
            t=2: {alertname="Hot", host="n1", severity="page"} firing active=0 fired=2 resolved=- "n1 at 92"
            t=3: {alertname="Hot", host="n1", severity="page"} inactive active=0 fired=2 resolved=3 "n1 at 92"
            t=19: 
        "#]],
    );
}

#[test]
fn pending_alert_that_disappears_is_dropped() {
    let mut s = rule(5, 0);
    timeline(
        &mut s,
        &[(0, Some(90.0)), (1, None), (2, Some(90.0))],
        expect![[r#"
            t=0: {alertname="Hot", host="n1", severity="page"} pending active=0 fired=- resolved=- "n1 at 90"
            t=1: 
            t=2: {alertname="Hot", host="n1", severity="page"} pending active=2 fired=- resolved=- "n1 at 90"
        "#]],
    );
}

#[test]
fn keep_firing_for_holds_a_firing_alert() {
    let mut s = rule(0, 2);
    timeline(
        &mut s,
        &[(0, Some(90.0)), (1, None), (2, None), (3, None)],
        expect![[r#"
            t=0: {alertname="Hot", host="n1", severity="page"} firing active=0 fired=0 resolved=- "n1 at 90"
            t=1: {alertname="Hot", host="n1", severity="page"} firing active=0 fired=0 resolved=- "n1 at 90"
            t=2: {alertname="Hot", host="n1", severity="page"} firing active=0 fired=0 resolved=- "n1 at 90"
            t=3: {alertname="Hot", host="n1", severity="page"} inactive active=0 fired=0 resolved=3 "n1 at 90"
        "#]],
    );
}

#[test]
fn alerts_series_and_sending() {
    let mut s = rule(1, 0);
    let series = s.eval(Timestamp(0), &hot(90.0)).unwrap();
    expect![[r#"[(Labels([Label { name: "__name__", value: "ALERTS" }, Label { name: "alertname", value: "Hot" }, Label { name: "alertstate", value: "pending" }, Label { name: "host", value: "n1" }, Label { name: "severity", value: "page" }]), 1.0), (Labels([Label { name: "__name__", value: "ALERTS_FOR_STATE" }, Label { name: "alertname", value: "Hot" }, Label { name: "host", value: "n1" }, Label { name: "severity", value: "page" }]), 0.0)]"#]]
        .assert_eq(&format!("{series:?}"));
    let (resend, interval) = (Duration::from_secs(60), Duration::from_secs(15));
    assert!(s.to_send(Timestamp(0), resend, interval).is_empty(), "pending alerts are not sent");
    let series = s.eval(Timestamp(MIN), &hot(91.0)).unwrap();
    assert_eq!(series[0].0.get("alertstate"), Some("firing"));
    let sent = s.to_send(Timestamp(MIN), resend, interval);
    expect![[r#"[PostableAlert { labels: {"alertname": "Hot", "host": "n1", "severity": "page"}, annotations: {"summary": "n1 at 91"}, starts_at: Some(Timestamp(60000)), ends_at: Some(Timestamp(300000)), generator_url: "" }]"#]]
        .assert_eq(&format!("{sent:?}"));
    assert!(s.to_send(Timestamp(MIN + 30_000), resend, interval).is_empty(), "resent only after the delay");
    assert_eq!(s.to_send(Timestamp(2 * MIN + 1), resend, interval).len(), 1);
    s.eval(Timestamp(3 * MIN), &[]).unwrap();
    let sent = s.to_send(Timestamp(3 * MIN), resend, interval);
    assert_eq!(sent[0].ends_at, Some(Timestamp(3 * MIN)), "resolved is sent at once, ending at the resolve time");
    assert!(s.eval(Timestamp(4 * MIN), &[]).unwrap().is_empty(), "no ALERTS for inactive alerts");
}

#[test]
fn nothing_written_before_restore() {
    let mut s = rule(1, 0);
    s.restored = false;
    assert!(s.eval(Timestamp(0), &hot(90.0)).unwrap().is_empty());
}

#[test]
fn restore_for_state() {
    let labels = Labels::from_pairs([("alertname", "Hot"), ("host", "n1"), ("severity", "page")]);
    let grace = Duration::from_secs(10 * 60);
    // for: 30m; pending since t=0, down at t=10m, back at t=20m: the 10m outage is not counted.
    let mut s = rule(30, 0);
    s.restored = false;
    s.eval(Timestamp(20 * MIN), &hot(90.0)).unwrap();
    s.restore(Timestamp(20 * MIN), &[(labels.clone(), 10 * MIN, 0.0)], grace);
    assert_eq!(s.alerts()[0].active_at, Timestamp(10 * MIN));
    s.eval(Timestamp(39 * MIN), &hot(90.0)).unwrap();
    assert_eq!(s.alerts()[0].state, State::Pending);
    s.eval(Timestamp(40 * MIN), &hot(90.0)).unwrap();
    assert_eq!(s.alerts()[0].state, State::Firing);
    // Less than the grace period left: it fires no sooner than grace after the restart.
    let mut s = rule(30, 0);
    s.restored = false;
    s.eval(Timestamp(60 * MIN), &hot(90.0)).unwrap();
    s.restore(Timestamp(60 * MIN), &[(labels.clone(), 25 * MIN, 0.0)], grace);
    assert_eq!(s.alerts()[0].active_at, Timestamp(40 * MIN));
    // Already pending for `for` before going down: fires at the next evaluation.
    let mut s = rule(30, 0);
    s.restored = false;
    s.eval(Timestamp(60 * MIN), &hot(90.0)).unwrap();
    s.restore(Timestamp(60 * MIN), &[(labels, 35 * MIN, 0.0)], grace);
    assert_eq!(s.alerts()[0].active_at, Timestamp(0));
    s.eval(Timestamp(61 * MIN), &hot(90.0)).unwrap();
    assert_eq!(s.alerts()[0].state, State::Firing);
}
