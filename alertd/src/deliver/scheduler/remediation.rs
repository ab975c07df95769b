//! Remediation of GPU faults (`scheduler_configs[].remediation`, off unless enabled, per target):
//! for a firing alert that is a GPU fault — a hardware-class Xid, uncorrectable ECC errors, a failed
//! row remap, a GPU missing from the bus, a fatal NVSwitch error — the node it names is taken out of
//! scheduling: a Kubernetes taint or node condition, a Slurm drain. It is an integration of its own
//! (`<receiver>/remediation/<i>`) so the route decides which alerts reach it and the outbox retries it
//! like a send. Each action on a fault is carried out once: a ledger (alertd's notification history)
//! keeps what was done, with its outcome, and a fault already handled is skipped even when its group is
//! notified again.

pub mod kubernetes;
pub mod slurm;

pub use crate::receiver::RemediationConfig;

use super::super::{BoxFuture, DeliverError, Integration};
use super::{Body, Kind, VERSION};
use crate::alert::Status;
use crate::notify::Notification;
use crate::time::Timestamp;
use crate::webhook::{Kv, MessageAlert};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

/// A GPU fault on a node, as the remediation message carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fault {
    pub node: String,
    /// `xid-<code>` (a hardware Xid), `ecc-uncorrectable`, `row-remap-failure`, `gpu-missing` or
    /// `sxid-<code>` (a fatal NVSwitch error).
    pub reason: String,
    pub alertname: String,
    pub fingerprint: String,
    #[serde(rename = "startsAt")]
    pub starts_at: Timestamp,
}

impl Fault {
    /// The fault's identity: the same alert firing since the same time is the same fault.
    fn key(&self, integration: &str, target: &str) -> String {
        let mut h = Sha256::new();
        let at = self.starts_at.millis().to_string();
        for part in [integration, target, &self.node, &self.reason, &self.fingerprint, &at] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        format!("remediation:{}", crate::deliver::sign::hex(&h.finalize()))
    }
}

/// `kind: remediation`: the faults to act on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    #[serde(rename = "dryRun")]
    pub dry_run: bool,
    pub faults: Vec<Fault>,
}

/// Which GPU fault an alert is, by the names and labels of the default rules (config/rules/defaults.yml):
/// `GpuXidHardware` (every hardware-class Xid, its code in `xid`), `GpuEccUncorrectable`,
/// `GpuRowRemapFailed`, `GpuMissing` and `NvSwitchSxidFatal` (its code in `sxid`). Application Xids
/// (`GpuXidApplication`) are the job's fault, not the node's, and `GpuXidOther` is not known to be
/// either: neither takes a node out. The older example rules' `GpuXid` with `code` 48 (double-bit ECC)
/// or 79 (fallen off the bus) is still one, so rule files written for it keep working.
///
/// A code that is not a number is no fault: it would end up in a taint value and a Slurm reason.
pub fn fault_reason(labels: &Kv) -> Option<String> {
    let label = |name: &str| labels.get(name).map(String::as_str);
    match label("alertname")? {
        "GpuXidHardware" => Some(format!("xid-{}", code(label("xid")?)?)),
        "GpuXid" => match label("code") {
            Some(c @ ("48" | "79")) => Some(format!("xid-{c}")),
            _ => None,
        },
        "GpuEccUncorrectable" => Some("ecc-uncorrectable".into()),
        "GpuRowRemapFailed" => Some("row-remap-failure".into()),
        "GpuMissing" => Some("gpu-missing".into()),
        "NvSwitchSxidFatal" => Some(format!("sxid-{}", code(label("sxid")?)?)),
        _ => None,
    }
}

/// An Xid or SXid code: up to six decimal digits (SXids run to five).
fn code(s: &str) -> Option<&str> {
    (!s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit())).then_some(s)
}

/// The node an alert names: `label` when configured, else `node`, `host`, or `instance` without its
/// port. None when it names none, or a name no scheduler could have (only `[A-Za-z0-9._-]`).
pub fn node_of(labels: &Kv, label: Option<&str>) -> Option<String> {
    let name = match label {
        Some(l) => labels.get(l).cloned(),
        None => labels.get("node").or_else(|| labels.get("host")).cloned().or_else(|| {
            let i = labels.get("instance")?;
            Some(i.rsplit_once(':').map_or(i.as_str(), |(h, _)| h).to_string())
        }),
    }?;
    let ok = !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    ok.then_some(name)
}

/// The faults among a notification's firing alerts.
pub fn faults(alerts: &[MessageAlert], node_label: Option<&str>) -> Vec<Fault> {
    let mut out = Vec::new();
    for a in alerts.iter().filter(|a| a.status == Status::Firing) {
        let Some(reason) = fault_reason(&a.labels) else { continue };
        let Some(node) = node_of(&a.labels, node_label) else {
            tracing::warn!(fingerprint = %a.fingerprint, %reason, "GPU fault names no node, not remediated");
            continue;
        };
        let alertname = a.labels.get("alertname").cloned().unwrap_or_default();
        out.push(Fault { node, reason, alertname, fingerprint: a.fingerprint.clone(), starts_at: a.starts_at });
    }
    out
}

/// What became of one action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Carried out.
    Applied,
    /// The target already had it (our taint or condition, a drained node).
    Already,
    /// `dry_run`: recorded, not carried out.
    DryRun,
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Applied => "remediated",
            Outcome::Already => "already_remediated",
            Outcome::DryRun => "dry_run",
            Outcome::Failed => "remediation_failed",
        }
    }
}

/// One action as recorded in the ledger.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Action {
    /// `kubernetes` or `slurm`.
    pub target: &'static str,
    pub fault: Fault,
    /// What was (or in a dry run would be) done: the request or command line.
    pub request: String,
    pub outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Where actions are recorded, and asked whether a fault was handled.
pub trait Ledger: Send + Sync {
    /// Whether `key` was recorded with one of `outcomes`.
    fn done(&self, integration: &str, key: &str, outcomes: &[&str]) -> bool;
    fn record(&self, at: Timestamp, receiver: &str, integration: &str, key: &str, action: &Action);
}

/// A ledger in memory (replay, tests, and when no database is at hand): forgotten at a restart.
#[derive(Default)]
pub struct MemoryLedger(Mutex<Vec<(String, String, Action)>>);

impl MemoryLedger {
    pub fn actions(&self) -> Vec<Action> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(_, _, a)| a.clone()).collect()
    }
}

impl Ledger for MemoryLedger {
    fn done(&self, integration: &str, key: &str, outcomes: &[&str]) -> bool {
        let l = self.0.lock().unwrap_or_else(|e| e.into_inner());
        l.iter().any(|(i, k, a)| i == integration && k == key && outcomes.contains(&a.outcome))
    }

    fn record(&self, _at: Timestamp, _receiver: &str, integration: &str, key: &str, action: &Action) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).push((integration.into(), key.into(), action.clone()));
    }
}

/// A target that takes a node out of scheduling.
pub trait Target: Send + Sync {
    fn name(&self) -> &'static str;
    /// The request or command line that `apply` makes, for the ledger and dry runs.
    fn describe(&self, f: &Fault) -> String;
    fn apply<'a>(&'a self, f: &'a Fault) -> BoxFuture<'a, Result<Outcome, DeliverError>>;
}

/// The remediation integration of `receiver`'s scheduler `index`.
pub fn build(
    receiver: &str,
    index: usize,
    cfg: &RemediationConfig,
    ledger: Arc<dyn Ledger>,
) -> Result<Remediation, DeliverError> {
    let mut targets: Vec<Box<dyn Target>> = Vec::new();
    if let Some(k) = &cfg.kubernetes {
        targets.push(Box::new(kubernetes::Kubernetes::new(k.clone())?));
    }
    if let Some(s) = &cfg.slurm {
        targets.push(Box::new(slurm::Slurm { cfg: s.clone() }));
    }
    Ok(Remediation {
        receiver: receiver.to_string(),
        integration: crate::deliver::recipient(receiver, "remediation", index),
        dry_run: cfg.dry_run,
        node_label: cfg.node_label.clone(),
        targets,
        ledger,
    })
}

/// The remediation integration of one scheduler receiver.
pub struct Remediation {
    pub receiver: String,
    /// Its notification-log name, `<receiver>/remediation/<i>`.
    pub integration: String,
    pub dry_run: bool,
    pub node_label: Option<String>,
    pub targets: Vec<Box<dyn Target>>,
    pub ledger: Arc<dyn Ledger>,
}

impl Integration for Remediation {
    fn render(&self, n: &Notification) -> Result<Vec<u8>, DeliverError> {
        let body = Body {
            version: VERSION.into(),
            kind: Kind::Remediation,
            idempotency_key: crate::outbox::idempotency_key(n),
            receiver: n.receiver.clone(),
            at: n.at,
            event: None,
            capacity: None,
            remediation: Some(Request {
                dry_run: self.dry_run,
                faults: faults(&n.message.alerts, self.node_label.as_deref()),
            }),
        };
        serde_json::to_vec(&body).map_err(|e| DeliverError::Render(e.to_string()))
    }

    /// Carries out each fault's actions not yet done; the first failure is returned (after the other
    /// actions ran) so the outbox retries, and the retry skips what succeeded.
    fn send<'a>(&'a self, body: &'a [u8], _key: &'a str) -> BoxFuture<'a, Result<(), DeliverError>> {
        Box::pin(async move {
            let body: Body = serde_json::from_slice(body).map_err(|e| DeliverError::Render(e.to_string()))?;
            let Some(req) = body.remediation else { return Ok(()) };
            let mut first_error = None;
            let mut seen = BTreeSet::new();
            for f in &req.faults {
                for t in &self.targets {
                    let key = f.key(&self.integration, t.name());
                    // One notification may name the same fault twice (a batch); act once.
                    if !seen.insert(key.clone()) {
                        continue;
                    }
                    let done: &[&str] = if req.dry_run {
                        &["dry_run", "remediated", "already_remediated"]
                    } else {
                        &["remediated", "already_remediated"]
                    };
                    if self.ledger.done(&self.integration, &key, done) {
                        continue;
                    }
                    let request = t.describe(f);
                    let (outcome, error) = match req.dry_run {
                        true => (Outcome::DryRun, None),
                        false => match t.apply(f).await {
                            Ok(o) => (o, None),
                            Err(e) => (Outcome::Failed, Some(e)),
                        },
                    };
                    let action = Action {
                        target: t.name(),
                        fault: f.clone(),
                        request,
                        outcome: outcome.as_str(),
                        error: error.as_ref().map(|e| e.to_string()),
                    };
                    let node = &f.node;
                    match &error {
                        None => {
                            tracing::warn!(receiver = %self.receiver, target = t.name(), %node, reason = %f.reason, outcome = outcome.as_str(), "GPU fault remediation")
                        }
                        Some(e) => {
                            tracing::error!(receiver = %self.receiver, target = t.name(), %node, reason = %f.reason, error = %e, "GPU fault remediation failed")
                        }
                    }
                    self.ledger.record(
                        Timestamp::from_millis(super::super::now_millis()),
                        &self.receiver,
                        &self.integration,
                        &key,
                        &action,
                    );
                    if let Some(e) = error {
                        first_error.get_or_insert(e);
                    }
                }
            }
            first_error.map_or(Ok(()), Err)
        })
    }
}

#[cfg(test)]
mod tests;
