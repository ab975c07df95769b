//! Storm control: when a receiver's rate limit has held several notifications, they go out as one
//! message instead of being dropped. The batch is a webhook v4 message whose alerts are those of
//! every held message (an alert in several keeps its latest state) and whose `argus.batched` says
//! how many messages it stands for.

use crate::alert::Status;
use crate::webhook::{Extras, Kv, Message};
use std::collections::BTreeMap;

/// Merges `messages`, oldest first, into one. None when there are none.
pub fn merge(messages: Vec<Message>) -> Option<Message> {
    let count = messages.len() as u32;
    let mut iter = messages.into_iter();
    let mut out = iter.next()?;
    let mut group_keys = vec![out.group_key.clone()];
    let mut order: Vec<String> = out.alerts.iter().map(|a| a.fingerprint.clone()).collect();
    let mut alerts: BTreeMap<String, _> = out.alerts.drain(..).map(|a| (a.fingerprint.clone(), a)).collect();
    let mut incident = out.argus.as_ref().and_then(|e| e.incident.clone());
    let mut flapping = out.argus.as_ref().map(|e| e.flapping.clone()).unwrap_or_default();
    let mut escalation = out.argus.as_ref().and_then(|e| e.escalation.clone());
    for m in iter {
        if !group_keys.contains(&m.group_key) {
            group_keys.push(m.group_key.clone());
        }
        out.group_labels.retain(|k, v| m.group_labels.get(k) == Some(v));
        out.truncated_alerts += m.truncated_alerts;
        if let Some(e) = m.argus {
            incident = e.incident.or(incident);
            flapping.extend(e.flapping);
            escalation = e.escalation.or(escalation);
        }
        for a in m.alerts {
            if !alerts.contains_key(&a.fingerprint) {
                order.push(a.fingerprint.clone());
            }
            alerts.insert(a.fingerprint.clone(), a);
        }
    }
    out.alerts = order.iter().filter_map(|fp| alerts.remove(fp)).collect();
    out.status = if out.alerts.iter().any(|a| a.status == Status::Firing) { Status::Firing } else { Status::Resolved };
    out.common_labels = common(out.alerts.iter().map(|a| &a.labels));
    out.common_annotations = common(out.alerts.iter().map(|a| &a.annotations));
    out.group_key = group_keys.join("\n");
    out.argus = Some(Extras { incident, flapping, batched: count, escalation });
    Some(out)
}

fn common<'a>(mut sets: impl Iterator<Item = &'a Kv>) -> Kv {
    let Some(first) = sets.next() else { return Kv::new() };
    let mut out = first.clone();
    for s in sets {
        out.retain(|k, v| s.get(k) == Some(v));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outbox::tests::notification;
    use expect_test::expect;

    #[test]
    fn merges_alerts_keeping_the_latest_state() {
        let mut a = notification("g1", "t/webhook/0", 1_000, &[("01", Status::Firing), ("02", Status::Firing)]).message;
        a.group_labels.insert("host".into(), "n1".into());
        let mut b =
            notification("g2", "t/webhook/0", 2_000, &[("02", Status::Resolved), ("03", Status::Firing)]).message;
        b.group_labels.insert("host".into(), "n2".into());
        b.truncated_alerts = 2;
        let m = merge(vec![a, b]).unwrap();
        let alerts: Vec<String> = m.alerts.iter().map(|a| format!("{}={:?}", a.fingerprint, a.status)).collect();
        expect![[r#"01=Firing 02=Resolved 03=Firing"#]].assert_eq(&alerts.join(" "));
        assert_eq!(m.status, Status::Firing);
        assert_eq!(m.group_key, "g1\ng2");
        assert!(m.group_labels.is_empty(), "host differs");
        assert_eq!(m.truncated_alerts, 2);
        assert_eq!(m.argus.unwrap().batched, 2);
        assert_eq!(merge(Vec::new()), None);
    }
}
