//! Xid (GPU) and SXid (NVSwitch) errors as series: a counter per GPU or NVSwitch and code that counts
//! every occurrence, and one event per series and collection carrying the first occurrence's text and,
//! for a burst, a `count` label. An Xid storm (thousands of Xid 13 or 31 a second from one faulting
//! job) is thus one event per collection, not thousands, while the counter misses none.

use super::backend::{Device, XidEvent};
use super::kmsg::{self, SxidEvent};
use crate::batch::{Batch, Point};
use std::collections::BTreeMap;

/// The GPUs of the last device reading that succeeded: an Xid names its GPU by index (NVML) or PCI
/// address (kernel log), and keeps its `gpu` and `uuid` labels while NVML fails.
#[derive(Debug, Default)]
pub struct Known {
    gpus: Vec<KnownGpu>,
}

#[derive(Debug)]
struct KnownGpu {
    index: u32,
    uuid: String,
    bus: Option<(u32, u32, u32)>,
}

impl Known {
    pub fn new(devices: &[Device]) -> Known {
        let gpus = devices
            .iter()
            .map(|d| KnownGpu { index: d.index, uuid: d.uuid.clone(), bus: kmsg::bus_key(&d.pci_bus_id) })
            .collect();
        Known { gpus }
    }

    fn find(&self, e: &XidEvent) -> Option<&KnownGpu> {
        match (e.gpu, &e.pci_bus_id) {
            (Some(i), _) => self.gpus.iter().find(|g| g.index == i),
            (None, Some(bus)) => {
                let bus = kmsg::bus_key(bus)?;
                self.gpus.iter().find(|g| g.bus == Some(bus))
            }
            (None, None) => None,
        }
    }
}

/// Counts since the collector started.
#[derive(Debug, Default)]
pub struct Counters {
    xids: BTreeMap<XidKey, u64>,
    sxids: BTreeMap<SxidKey, u64>,
}

impl Counters {
    /// Counts `events`, writes one event per GPU and code, and every Xid counter.
    pub fn xid_points(&mut self, events: Vec<XidEvent>, known: &Known, now: i64, batch: &mut Batch) {
        let keyed = events.into_iter().map(|e| {
            let gpu = known.find(&e);
            let key = XidKey {
                gpu: gpu.map(|g| g.index).or(e.gpu).map(|i| i.to_string()).unwrap_or_default(),
                uuid: gpu.map(|g| g.uuid.clone()).unwrap_or_default(),
                pci_bus_id: if gpu.is_none() { e.pci_bus_id.clone().unwrap_or_default() } else { String::new() },
                code: e.code,
            };
            (key, e.message)
        });
        for (key, (message, n)) in bursts(keyed) {
            let count = self.xids.entry(key.clone()).or_insert(0);
            if *count == 0 {
                // A counter's first sample is its start, so `increase()` over a window that holds only it
                // sees nothing; a zero just before makes the first Xid count.
                batch.push(key.tags(Point::new("gpu", now - 1)).field("xid_errors_total", 0.0));
            }
            *count += n;
            tracing::warn!(gpu = %key.gpu, code = key.code, count = n, %message, "GPU Xid error");
            batch.push(key.tags(Point::new("gpu", now)).tag("count", burst_label(n)).text("xid", message));
        }
        for (key, count) in &self.xids {
            batch.push(key.tags(Point::new("gpu", now)).field("xid_errors_total", *count as f64));
        }
    }

    /// Counts SXid errors, writes one event per NVSwitch, code and severity, and every SXid counter.
    pub fn sxid_points(&mut self, events: Vec<SxidEvent>, now: i64, batch: &mut Batch) {
        let keyed = events.into_iter().map(|e| {
            let key =
                SxidKey { nvswitch: e.nvswitch, code: e.code, severity: e.severity.map_or("", kmsg::Severity::label) };
            (key, e.message)
        });
        for (key, (message, n)) in bursts(keyed) {
            let count = self.sxids.entry(key.clone()).or_insert(0);
            if *count == 0 {
                batch.push(key.tags(Point::new("gpu", now - 1)).field("nvswitch_sxid_errors_total", 0.0));
            }
            *count += n;
            tracing::warn!(nvswitch = %key.nvswitch, code = key.code, severity = key.severity, count = n, %message, "NVSwitch SXid error");
            batch.push(key.tags(Point::new("gpu", now)).tag("count", burst_label(n)).text("nvswitch_sxid", message));
        }
        for (key, count) in &self.sxids {
            batch.push(key.tags(Point::new("gpu", now)).field("nvswitch_sxid_errors_total", *count as f64));
        }
    }
}

/// The events of one collection by series: the first one's text and how many there were.
fn bursts<K: Ord>(events: impl Iterator<Item = (K, String)>) -> BTreeMap<K, (String, u64)> {
    let mut out: BTreeMap<K, (String, u64)> = BTreeMap::new();
    for (key, message) in events {
        out.entry(key).or_insert((message, 0)).1 += 1;
    }
    out
}

/// The `count` label: absent (empty) for a single occurrence, so a lone error's event has its counter's
/// labels.
fn burst_label(n: u64) -> String {
    if n > 1 { n.to_string() } else { String::new() }
}

/// The series of one Xid counter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct XidKey {
    gpu: String,
    uuid: String,
    pci_bus_id: String,
    code: u64,
}

impl XidKey {
    fn tags(&self, p: Point) -> Point {
        p.tag("gpu", &self.gpu)
            .tag("uuid", &self.uuid)
            .tag("pci_bus_id", &self.pci_bus_id)
            .tag("code", self.code.to_string())
    }
}

/// The series of one SXid counter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct SxidKey {
    nvswitch: String,
    code: u64,
    /// `fatal`, `non_fatal`, or empty (absent) when the line names none.
    severity: &'static str,
}

impl SxidKey {
    fn tags(&self, p: Point) -> Point {
        p.tag("nvswitch", &self.nvswitch).tag("code", self.code.to_string()).tag("severity", self.severity)
    }
}
