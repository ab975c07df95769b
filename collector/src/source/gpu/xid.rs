//! Xid (GPU) and SXid (NVSwitch) errors as series: a counter per GPU or NVSwitch and code that counts
//! every occurrence, and one event per series and collection carrying the first occurrence's text and,
//! for a burst, a `count` label. An Xid storm (thousands of Xid 13 or 31 a second from one faulting
//! job) is thus one event per collection, not thousands, while the counter misses none.

use super::backend::{Device, XidEvent};
use super::kmsg::{self, SxidEvent};
use crate::batch::{Batch, Point};
use std::collections::BTreeMap;

/// The GPUs of the last device reading that succeeded: an Xid names its GPU by index (NVML) or PCI
/// address (kernel log), and keeps its `gpu`, `uuid` and `serial` labels while NVML fails. Each GPU
/// also keeps the workload it served at that reading and at the one before, so an Xid is put on the
/// job that was running when it was logged: a job an Xid kills has often exited by the next reading.
#[derive(Debug, Default)]
pub struct Known {
    gpus: Vec<KnownGpu>,
}

/// Workload labels (`namespace`, `pod`, `container`, `slurm_*`), as attribution gives them.
pub type Work = Vec<(&'static str, String)>;

#[derive(Debug)]
struct KnownGpu {
    index: u32,
    uuid: String,
    serial: Option<String>,
    bus: Option<(u32, u32, u32)>,
    /// The workload at this reading, and at the one before.
    work: Work,
    recent: Work,
}

impl Known {
    /// The GPUs of `devices`, `work` the workload of each by UUID (none for a GPU not in it); `before`
    /// the previous reading's, whose workloads become the recent ones.
    pub fn new(devices: &[Device], mut work: BTreeMap<String, Work>, before: &Known) -> Known {
        let gpus = devices
            .iter()
            .map(|d| KnownGpu {
                index: d.index,
                uuid: d.uuid.clone(),
                serial: d.serial.clone(),
                bus: kmsg::bus_key(&d.pci_bus_id),
                work: work.remove(&d.uuid).unwrap_or_default(),
                recent: before.gpus.iter().find(|g| g.uuid == d.uuid).map(|g| g.work.clone()).unwrap_or_default(),
            })
            .collect();
        Known { gpus }
    }

    /// The serial number of the GPU with `uuid`, from the last reading.
    pub fn serial(&self, uuid: &str) -> Option<&str> {
        self.gpus.iter().find(|g| g.uuid == uuid)?.serial.as_deref()
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

    /// Whether `work` still runs on the GPU with `uuid` (at this reading or the one before).
    fn serves(&self, uuid: &str, work: &Work) -> bool {
        self.gpus.iter().any(|g| g.uuid == uuid && (g.work == *work || g.recent == *work))
    }
}

/// Counts since the collector started.
#[derive(Debug, Default)]
pub struct Counters {
    xids: BTreeMap<XidKey, u64>,
    sxids: BTreeMap<SxidKey, u64>,
}

impl Counters {
    /// Counts `events`, writes one event per GPU and code, and every Xid counter. With `attributed`, an
    /// Xid also carries the workload its GPU served when it was logged (the last reading's, or the one
    /// before where the last found none), so an application fault reaches the job's owner; a job's
    /// counters end once the job no longer runs on the GPU.
    pub fn xid_points(&mut self, events: Vec<XidEvent>, known: &Known, attributed: bool, now: i64, batch: &mut Batch) {
        let keyed = events.into_iter().map(|e| {
            let gpu = known.find(&e);
            let work = match gpu {
                Some(g) if attributed => {
                    if g.work.is_empty() {
                        g.recent.clone()
                    } else {
                        g.work.clone()
                    }
                }
                _ => Work::new(),
            };
            let key = XidKey {
                gpu: gpu.map(|g| g.index).or(e.gpu).map(|i| i.to_string()).unwrap_or_default(),
                uuid: gpu.map(|g| g.uuid.clone()).unwrap_or_default(),
                serial: gpu.and_then(|g| g.serial.clone()).unwrap_or_default(),
                pci_bus_id: if gpu.is_none() { e.pci_bus_id.clone().unwrap_or_default() } else { String::new() },
                code: e.code,
                work,
            };
            (key, e.message)
        });
        write(&mut self.xids, keyed, now, batch);
        // Written once more above, their last sample: then a finished job's series end.
        self.xids.retain(|k, _| k.work.is_empty() || known.serves(&k.uuid, &k.work));
    }

    /// Counts SXid errors, writes one event per NVSwitch, code and severity, and every SXid counter.
    pub fn sxid_points(&mut self, events: Vec<SxidEvent>, now: i64, batch: &mut Batch) {
        let keyed = events.into_iter().map(|e| {
            let key =
                SxidKey { nvswitch: e.nvswitch, code: e.code, severity: e.severity.map_or("", kmsg::Severity::label) };
            (key, e.message)
        });
        write(&mut self.sxids, keyed, now, batch);
    }
}

/// The series of one error counter, and of its events.
trait ErrorSeries: Clone + Ord {
    /// The counter's field and the event's (text) field of the `gpu` measurement.
    const COUNTER: &'static str;
    const EVENT: &'static str;
    fn tags(&self, p: Point) -> Point;
    /// Logs a burst of `n` errors, `message` the first one's text.
    fn log(&self, n: u64, message: &str);
}

/// Counts the errors of one collection into `counts`, writes one event per series with the first
/// occurrence's text (and `count` for a burst), then every counter of `counts`.
fn write<K: ErrorSeries>(
    counts: &mut BTreeMap<K, u64>,
    events: impl Iterator<Item = (K, String)>,
    now: i64,
    batch: &mut Batch,
) {
    for (key, (message, n)) in bursts(events) {
        let count = counts.entry(key.clone()).or_insert(0);
        if *count == 0 {
            // A counter's first sample is its start, so `increase()` over a window that holds only it
            // sees nothing; a zero just before makes the first error count.
            batch.push(key.tags(Point::new("gpu", now - 1)).field(K::COUNTER, 0.0));
        }
        *count += n;
        key.log(n, &message);
        batch.push(key.tags(Point::new("gpu", now)).tag("count", burst_label(n)).text(K::EVENT, message));
    }
    for (key, count) in counts.iter() {
        batch.push(key.tags(Point::new("gpu", now)).field(K::COUNTER, *count as f64));
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
    serial: String,
    pci_bus_id: String,
    code: u64,
    work: Work,
}

impl ErrorSeries for XidKey {
    const COUNTER: &'static str = "xid_errors_total";
    const EVENT: &'static str = "xid";

    fn tags(&self, p: Point) -> Point {
        let mut p = p
            .tag("gpu", &self.gpu)
            .tag("uuid", &self.uuid)
            .tag("serial", &self.serial)
            .tag("pci_bus_id", &self.pci_bus_id)
            .tag("code", self.code.to_string());
        for (k, v) in &self.work {
            p = p.tag(k, v);
        }
        p
    }

    fn log(&self, n: u64, message: &str) {
        tracing::warn!(gpu = %self.gpu, code = self.code, count = n, %message, "GPU Xid error");
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

impl ErrorSeries for SxidKey {
    const COUNTER: &'static str = "nvswitch_sxid_errors_total";
    const EVENT: &'static str = "nvswitch_sxid";

    fn tags(&self, p: Point) -> Point {
        p.tag("nvswitch", &self.nvswitch).tag("code", self.code.to_string()).tag("severity", self.severity)
    }

    fn log(&self, n: u64, message: &str) {
        tracing::warn!(nvswitch = %self.nvswitch, code = self.code, severity = self.severity, count = n, %message, "NVSwitch SXid error");
    }
}
