//! `gpu_present`: which GPUs the node should have, and whether NVML answers for each. A GPU that falls
//! off the bus disappears from NVML's list, so its readings simply stop; this gauge turns the absence
//! into a 0 that an alert can match.
//!
//! Expected are the GPUs the PCI bus shows (NVIDIA display and 3D controllers under
//! `<sysfs>/bus/pci/devices`, NVSwitches and audio functions left out) and every GPU NVML has listed
//! since the collector started. A GPU is 1 when NVML lists it in this collection and 0 otherwise,
//! under the labels NVML last gave it, or only `pci_bus_id` for one NVML has never listed.
//! `[collector.gpu] expected_gpus` raises the expected count for GPUs no one can name (a board
//! missing from the bus since boot).

use super::GpuLabels;
use super::backend::Device;
use crate::batch::{Batch, Point};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const NVIDIA: u32 = 0x10de;
/// PCI classes (class and subclass) of GPUs: VGA-compatible and 3D controllers. NVSwitches are
/// bridges (0x0680), a GPU's HDMI audio function is 0x0403.
const GPU_CLASSES: [u32; 2] = [0x0300, 0x0302];

/// A PCI function: domain, bus, device, function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct PciAddress(u32, u32, u32, u32);

impl PciAddress {
    /// "0000:18:00.0" (sysfs) or "00000000:18:00.0" (NVML), in either case.
    pub fn parse(s: &str) -> Option<PciAddress> {
        let (domain, rest) = s.split_once(':')?;
        let (bus, rest) = rest.split_once(':')?;
        let (device, function) = rest.split_once('.')?;
        let hex = |x: &str| u32::from_str_radix(x, 16).ok();
        Some(PciAddress(hex(domain)?, hex(bus)?, hex(device)?, hex(function)?))
    }
}

impl std::fmt::Display for PciAddress {
    /// As sysfs and lspci write it: "0000:18:00.0".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:04x}:{:02x}:{:02x}.{:x}", self.0, self.1, self.2, self.3)
    }
}

/// The NVIDIA GPUs on the PCI bus, by address. A tree that cannot be read (no sysfs in a container)
/// shows none; a device whose files cannot be read is skipped.
pub fn scan(sysfs_root: &Path) -> Vec<PciAddress> {
    let Ok(entries) = std::fs::read_dir(sysfs_root.join("bus/pci/devices")) else { return Vec::new() };
    let hex = |dir: &Path, file: &str| {
        let text = std::fs::read_to_string(dir.join(file)).ok()?;
        let text = text.trim();
        u32::from_str_radix(text.strip_prefix("0x").unwrap_or(text), 16).ok()
    };
    let mut out: Vec<PciAddress> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let dir = e.path();
            let address = PciAddress::parse(e.file_name().to_str()?)?;
            let is_gpu = hex(&dir, "vendor")? == NVIDIA && GPU_CLASSES.contains(&(hex(&dir, "class")? >> 8));
            is_gpu.then_some(address)
        })
        .collect();
    out.sort();
    out
}

/// How a GPU is recognised from one collection to the next and matched with the bus.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Identity {
    Pci(PciAddress),
    /// A GPU whose PCI address NVML did not give.
    Uuid(String),
}

impl Identity {
    fn of(d: &Device) -> Identity {
        match PciAddress::parse(&d.pci_bus_id) {
            Some(a) => Identity::Pci(a),
            None if !d.uuid.is_empty() => Identity::Uuid(d.uuid.clone()),
            None => Identity::Uuid(format!("index {}", d.index)),
        }
    }
}

#[derive(Debug)]
pub struct Presence {
    /// `None`: no PCI bus is read, the expected GPUs are those NVML has listed.
    sysfs_root: Option<PathBuf>,
    expected_gpus: u32,
    /// Every GPU NVML has listed since the start, with the labels it had the last time.
    seen: BTreeMap<Identity, GpuLabels>,
}

impl Presence {
    pub fn new(sysfs_root: Option<&Path>, expected_gpus: Option<u32>) -> Presence {
        Presence {
            sysfs_root: sysfs_root.map(Path::to_path_buf),
            expected_gpus: expected_gpus.unwrap_or(0),
            seen: BTreeMap::new(),
        }
    }

    /// Writes `gpu_present` per expected GPU and the node's expected and found counts. `devices` is
    /// what NVML listed, `None` when the reading failed (every GPU then counts as not answering).
    pub fn points(&mut self, devices: Option<&[Device]>, now: i64, batch: &mut Batch) {
        let mut found = BTreeSet::new();
        for d in devices.unwrap_or_default() {
            let id = Identity::of(d);
            self.seen.insert(id.clone(), GpuLabels::of(d));
            found.insert(id);
        }
        let on_bus = self.sysfs_root.as_deref().map(scan).unwrap_or_default();
        let mut expected: BTreeMap<Identity, Option<&GpuLabels>> =
            on_bus.into_iter().map(|a| (Identity::Pci(a), None)).collect();
        for (id, labels) in &self.seen {
            expected.insert(id.clone(), Some(labels));
        }
        for (id, labels) in &expected {
            let p = match (labels, id) {
                (Some(l), _) => l.tag(Point::new("gpu", now)),
                (None, Identity::Pci(a)) => Point::new("gpu", now).tag("pci_bus_id", a.to_string()),
                (None, Identity::Uuid(u)) => Point::new("gpu", now).tag("uuid", u),
            };
            batch.push(p.field("present", if found.contains(id) { 1.0 } else { 0.0 }));
        }
        let expected_count = (expected.len() as u32).max(self.expected_gpus);
        batch.push(
            Point::new("gpu", now)
                .field("expected_count", f64::from(expected_count))
                .field("found_count", found.len() as f64),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::source::golden;

    #[test]
    fn scan_finds_nvidia_gpus_and_leaves_out_nvswitches_audio_and_other_vendors() {
        let check = |tree: &str, expected: expect_test::Expect| {
            let found: Vec<String> = scan(&golden::fixture(tree)).iter().map(ToString::to_string).collect();
            expected.assert_eq(&found.join(" "));
        };
        // An HGX node: eight 3D controllers; four NVSwitches, a NIC and a host bridge left out.
        check(
            "gpu/sys",
            expect_test::expect![
                "0000:18:00.0 0000:2a:00.0 0000:3a:00.0 0000:5d:00.0 0000:9a:00.0 0000:ab:00.0 0000:ba:00.0 0000:db:00.0"
            ],
        );
        // A workstation: the GeForce's VGA function; its HDMI audio and Intel's integrated GPU left out.
        check("gpu/sys-workstation", expect_test::expect!["0000:01:00.0"]);
        check("gpu/no-such-sys", expect_test::expect![""]);
    }

    #[test]
    fn pci_addresses_of_nvml_and_sysfs_are_the_same() {
        assert_eq!(PciAddress::parse("00000000:2A:00.0"), PciAddress::parse("0000:2a:00.0"));
        assert_eq!(PciAddress::parse("00000000:2A:00.0").map(|a| a.to_string()).as_deref(), Some("0000:2a:00.0"));
        assert_eq!(PciAddress::parse("0000:2a:00"), None);
        assert_eq!(PciAddress::parse("GPU-1"), None);
    }
}
