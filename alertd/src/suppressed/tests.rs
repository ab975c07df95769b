use super::*;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

fn hold(fp: u64, integration: &str) -> Hold {
    Hold {
        fingerprint: Fingerprint(fp),
        labels: Labels::from_pairs([("alertname", format!("A{fp}"))]),
        route: HeldRoute {
            receiver: "team".into(),
            route: "{}".into(),
            group_key: "{}:{}".into(),
            integration: integration.into(),
            group: "{}:{}".into(),
        },
        reason: Reason::Delivery { error: "receiver answered http status 500".into(), attempts: 1, gave_up: false },
        until: None,
    }
}

fn kept(s: &Suppressed) -> Vec<String> {
    let all = s.query(&[], Timestamp(i64::MIN), Timestamp(i64::MAX));
    all.values()
        .flatten()
        .map(|r| format!("{}:{}", r.fingerprint.0, if r.is_open() { "open" } else { "ended" }))
        .collect()
}

#[test]
fn a_repeated_hold_updates_the_open_record_and_keeps_its_start() {
    let s = Suppressed::default();
    s.hold(Source::Delivery, hold(1, "team/webhook/0"), Timestamp(10));
    let mut again = hold(1, "team/webhook/0");
    again.until = Some(Timestamp(50));
    s.hold(Source::Delivery, again, Timestamp(20));
    let all = s.query(&[], Timestamp(i64::MIN), Timestamp(i64::MAX));
    let r = &all[&Fingerprint(1)];
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].since, r[0].until), (Timestamp(10), Some(Timestamp(50))));
    // Another integration is another record.
    s.hold(Source::Delivery, hold(1, "team/slack/0"), Timestamp(30));
    assert_eq!(s.len(), 2);
}

#[test]
fn the_cap_drops_the_oldest_ended_record_first_and_counts_it() {
    let s = Suppressed::with_capacity(3);
    let (records, dropped) = (Gauge::default(), Counter::default());
    s.count_into(records.clone(), dropped.clone());
    for fp in 1..=3 {
        s.hold(Source::Delivery, hold(fp, "team/webhook/0"), Timestamp(fp as i64));
    }
    // 2 ends before 1 does: 2 is the oldest ended.
    s.release(Fingerprint(2), Source::Delivery, Timestamp(10), |_| true);
    s.release(Fingerprint(1), Source::Delivery, Timestamp(20), |_| true);
    s.hold(Source::Delivery, hold(4, "team/webhook/0"), Timestamp(30));
    assert_eq!(kept(&s), ["1:ended", "3:open", "4:open"]);
    assert_eq!((records.get(), dropped.get()), (3, 1));
    // With no ended record left to drop, the oldest open one goes.
    s.hold(Source::Delivery, hold(5, "team/webhook/0"), Timestamp(40));
    s.hold(Source::Delivery, hold(6, "team/webhook/0"), Timestamp(50));
    assert_eq!(kept(&s), ["4:open", "5:open", "6:open"]);
    assert_eq!((records.get(), dropped.get()), (3, 3));
    // A dropped open record is forgotten: holding that alert again opens a new one.
    s.hold(Source::Delivery, hold(3, "team/webhook/0"), Timestamp(60));
    assert_eq!(kept(&s), ["3:open", "5:open", "6:open"]);
}

#[test]
fn query_selects_by_matchers_and_time() {
    let s = Suppressed::default();
    s.hold(Source::Delivery, hold(1, "team/webhook/0"), Timestamp(10));
    s.release(Fingerprint(1), Source::Delivery, Timestamp(20), |_| true);
    s.hold(Source::Delivery, hold(2, "team/webhook/0"), Timestamp(30));
    let sel = |v: &str| vec![vec![Matcher::eq("alertname", v)]];
    let fps = |m: BTreeMap<Fingerprint, Vec<Record>>| m.keys().map(|f| f.0).collect::<Vec<_>>();
    assert_eq!(fps(s.query(&sel("A1"), Timestamp(i64::MIN), Timestamp(i64::MAX))), [1]);
    assert_eq!(fps(s.query(&[], Timestamp(21), Timestamp(i64::MAX))), [2], "1 ended before the start");
    assert_eq!(fps(s.query(&[], Timestamp(0), Timestamp(25))), [1], "2 began after the end");
    let either = vec![vec![Matcher::eq("alertname", "A1")], vec![Matcher::eq("alertname", "A2")]];
    assert_eq!(fps(s.query(&either, Timestamp(i64::MIN), Timestamp(i64::MAX))), [1, 2]);
}
