use super::*;
use crate::alert::Status;
use crate::time::Timestamp;
use crate::webhook::{Message, MessageAlert};
use std::collections::BTreeMap;

pub(crate) fn notification(group: &str, integration: &str, at_ms: i64, alerts: &[(&str, Status)]) -> Notification {
    let alerts = alerts
        .iter()
        .map(|(fp, status)| MessageAlert {
            status: *status,
            labels: BTreeMap::from([("alertname".to_string(), format!("A{fp}"))]),
            annotations: BTreeMap::new(),
            starts_at: Timestamp::from_millis(at_ms - 60_000),
            ends_at: Timestamp::ZERO,
            generator_url: String::new(),
            fingerprint: fp.to_string(),
        })
        .collect();
    Notification {
        at: Timestamp::from_millis(at_ms),
        // Successive notifications of a group follow distinct log entries.
        previous: Some(Timestamp::from_millis(at_ms - 1)),
        receiver: "team".into(),
        integration: integration.into(),
        message: Message {
            receiver: "team".into(),
            status: Status::Firing,
            alerts,
            group_labels: BTreeMap::new(),
            common_labels: BTreeMap::new(),
            common_annotations: BTreeMap::new(),
            external_url: String::new(),
            version: "4".into(),
            group_key: group.into(),
            truncated_alerts: 0,
            argus: None,
        },
    }
}

#[test]
fn key_is_stable_and_tells_notifications_apart() {
    use Status::*;
    let base = notification("{}:{host=\"a\"}", "team/webhook/0", 1_000, &[("01", Firing), ("02", Firing)]);
    let key = idempotency_key(&base);
    assert_eq!(key.len(), 64);
    // Alert order does not matter; everything the key is made of does.
    let same = notification("{}:{host=\"a\"}", "team/webhook/0", 1_000, &[("02", Firing), ("01", Firing)]);
    assert_eq!(idempotency_key(&same), key);
    let differ = [
        notification("{}:{host=\"b\"}", "team/webhook/0", 1_000, &[("01", Firing), ("02", Firing)]),
        notification("{}:{host=\"a\"}", "team/webhook/1", 1_000, &[("01", Firing), ("02", Firing)]),
        notification("{}:{host=\"a\"}", "team/webhook/0", 1_001, &[("01", Firing), ("02", Firing)]),
        notification("{}:{host=\"a\"}", "team/webhook/0", 1_000, &[("01", Firing), ("02", Resolved)]),
        notification("{}:{host=\"a\"}", "team/webhook/0", 1_000, &[("01", Firing)]),
    ];
    for n in &differ {
        assert_ne!(idempotency_key(n), key, "{n:?}");
    }
    // A flush repeated after a crash (a later `at`, the log not yet written) is the same notification.
    let mut again = base.clone();
    again.at = Timestamp::from_millis(5_000);
    assert_eq!(idempotency_key(&again), key);
    again.previous = None;
    assert_ne!(idempotency_key(&again), key);
}

#[test]
fn entries_survive_a_reopen_and_keys_are_unique() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("alertd.db");
    let o = Outbox::open(&path).unwrap();
    assert!(o.enqueue("k1", "team", "team/webhook/0", b"one", "{}", 10).unwrap());
    assert!(o.enqueue("k2", "team", "team/webhook/0", b"two", "{}", 11).unwrap());
    assert!(!o.enqueue("k1", "team", "team/webhook/0", b"changed", "{}", 12).unwrap(), "a repeat is not queued twice");
    let first = o.next("team/webhook/0").unwrap().unwrap();
    assert_eq!((first.key.as_str(), first.body.as_slice()), ("k1", b"one".as_slice()));
    o.retry_at(first.id, 500, "receiver answered http status 503: ").unwrap();
    drop(o);

    let o = Outbox::open(&path).unwrap();
    let again = o.next("team/webhook/0").unwrap().unwrap();
    assert_eq!((again.key.as_str(), again.attempts, again.next_attempt_at), ("k1", 1, 500));
    o.finish(again.id, State::Delivered, None, 600).unwrap();
    assert_eq!(o.next("team/webhook/0").unwrap().unwrap().key, "k2");
    assert_eq!(o.next("other/webhook/0").unwrap(), None);
    assert_eq!((o.count(State::Pending).unwrap(), o.count(State::Delivered).unwrap()), (1, 1));
    assert_eq!(o.gc(601).unwrap(), 1);
    assert_eq!(o.state("k1").unwrap(), None);
    assert_eq!(o.state("k2").unwrap(), Some(("pending".into(), None, 0)));
}
