//! The default rule set (config/rules/defaults.yml, built into `argus serve`): it parses, and each
//! alerting rule's expression selects the fault on a fixture and nothing on a healthy one, evaluated
//! by the real query engine over an embedded store. A per-GPU alert keeps the GPU's `uuid` and
//! `serial`, which operators need to find the board.

use super::{Rule, parse};
use argus_model::lineprotocol::{Precision, parse as parse_lp};
use argus_store::query::{QueryLimits, Value, instant};
use argus_store::{Db, Options};

const DEFAULTS: &str = include_str!("../../../config/rules/defaults.yml");

/// The labels of what `expr` selects at `now`, over `points`: (seconds before `now`, a line-protocol
/// line without its timestamp).
fn selected(expr: &str, points: &[(i64, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = Db::open(Options::new(dir.path())).unwrap();
    let now = argus_store::now_ms() / 1000 * 1000;
    let body: Vec<String> = points.iter().map(|(ago, line)| format!("{line} {}", now - ago * 1000)).collect();
    let body = body.join("\n");
    let lines = parse_lp(&body).unwrap();
    let numbers: Vec<usize> = (1..=lines.len()).collect();
    db.write_lines(&lines, &numbers, Precision::Milliseconds, &[]).unwrap();
    match instant(&db, expr, now, &QueryLimits::default()).unwrap() {
        Value::Vector(rows) => rows.iter().map(|(l, _)| l.to_string()).collect(),
        other => panic!("{expr}: {other:?}"),
    }
}

type Points = &'static [(i64, &'static str)];

/// One fault of one alerting rule: where it fires and the labels every alert must carry, and a
/// healthy fixture where it must not.
struct Case {
    alert: &'static str,
    firing: Points,
    labels: &'static [&'static str],
    /// Each alert names its GPU by `uuid` and `serial`.
    per_gpu: bool,
    healthy: Points,
}

const fn gpu(alert: &'static str, firing: Points, labels: &'static [&'static str], healthy: Points) -> Case {
    Case { alert, firing, labels, per_gpu: true, healthy }
}

/// A case whose alerts name no GPU (an NVSwitch, a host, a port, a disk).
const fn other(alert: &'static str, firing: Points, labels: &'static [&'static str], healthy: Points) -> Case {
    Case { alert, firing, labels, per_gpu: false, healthy }
}

const XID_79: Points = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=79 xid_errors_total=0"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=79 xid_errors_total=1"),
];
const XID_13: Points = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=13 xid_errors_total=0"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=13 xid_errors_total=4"),
];
const XID_999: Points = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=999 xid_errors_total=0"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=999 xid_errors_total=1"),
];
const XID_79_QUIET: Points = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=79 xid_errors_total=1"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,serial=1650923000001,code=79 xid_errors_total=1"),
];

/// GPU 3 of n1 gone; the host's count says one short as well (one alert, for the GPU).
const GPU_LOST: Points = &[
    (60, "gpu,host=n1,gpu=2,uuid=GPU-c,serial=1650923000003,pci_bus_id=00000000:1A:00.0 present=1"),
    (60, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004,pci_bus_id=00000000:1B:00.0 present=0"),
    (60, "gpu,host=n1 found_count=7,expected_count=8"),
];
/// n2 is configured for 8 GPUs and finds 7, none of which it knew before.
const GPU_SHORT: Points = &[
    (60, "gpu,host=n2,gpu=0,uuid=GPU-e,serial=1650923000005,pci_bus_id=00000000:18:00.0 present=1"),
    (60, "gpu,host=n2 found_count=7,expected_count=8"),
];
const GPUS_ALL_THERE: Points = &[
    (60, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004,pci_bus_id=00000000:1B:00.0 present=1"),
    (60, "gpu,host=n1 found_count=8,expected_count=8"),
];

/// Generation 3 of 5 while busy: by utilization, then by PCIe traffic alone.
const PCIE_SLOW_BUSY: Points = &[
    (60, "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 pcie_link_generation=3,pcie_link_generation_max=5"),
    (60, "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 utilization_ratio=0.9"),
];
const PCIE_SLOW_COPYING: Points = &[
    (60, "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 pcie_link_generation=3,pcie_link_generation_max=5"),
    (
        60,
        "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 utilization_ratio=0.1,pcie_transmit_bytes_per_second=2e9,pcie_receive_bytes_per_second=1e8",
    ),
];
/// An idle GPU down to generation 1 (power saving), and a busy one at its maximum.
const PCIE_IDLE_OR_FULL: Points = &[
    (60, "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 pcie_link_generation=1,pcie_link_generation_max=5"),
    (
        60,
        "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 utilization_ratio=0.02,pcie_transmit_bytes_per_second=1e6,pcie_receive_bytes_per_second=1e6",
    ),
    (60, "gpu,host=n1,gpu=6,uuid=GPU-g,serial=1650923000007 pcie_link_generation=5,pcie_link_generation_max=5"),
    (60, "gpu,host=n1,gpu=6,uuid=GPU-g,serial=1650923000007 utilization_ratio=0.95"),
];

const CASES: &[Case] = &[
    gpu("GpuXidHardware", XID_79, &["xid=\"79\""], XID_13),
    gpu("GpuXidApplication", XID_13, &["xid=\"13\""], XID_79),
    gpu("GpuXidOther", XID_999, &["xid=\"999\""], XID_79_QUIET),
    other(
        "NvSwitchSxidFatal",
        &[
            (120, "gpu,host=n1,nvswitch=0000:86:00.0,code=20034,severity=fatal nvswitch_sxid_errors_total=0"),
            (60, "gpu,host=n1,nvswitch=0000:86:00.0,code=20034,severity=fatal nvswitch_sxid_errors_total=1"),
        ],
        &["sxid=\"20034\""],
        &[
            (120, "gpu,host=n1,nvswitch=0000:05:00.0,code=12028,severity=non_fatal nvswitch_sxid_errors_total=0"),
            (60, "gpu,host=n1,nvswitch=0000:05:00.0,code=12028,severity=non_fatal nvswitch_sxid_errors_total=3"),
        ],
    ),
    gpu("GpuMissing", GPU_LOST, &["uuid=\"GPU-d\"", "pci_bus_id=\"00000000:1B:00.0\""], GPUS_ALL_THERE),
    other("GpuMissing", GPU_SHORT, &["host=\"n2\""], GPUS_ALL_THERE),
    gpu(
        "GpuEccUncorrectable",
        &[
            (120, "gpu,host=n1,gpu=1,uuid=GPU-b,serial=1650923000002 ecc_errors_uncorrected_total=0"),
            (60, "gpu,host=n1,gpu=1,uuid=GPU-b,serial=1650923000002 ecc_errors_uncorrected_total=2"),
        ],
        &["uuid=\"GPU-b\""],
        &[
            (120, "gpu,host=n1,gpu=1,uuid=GPU-b,serial=1650923000002 ecc_errors_uncorrected_total=2"),
            (60, "gpu,host=n1,gpu=1,uuid=GPU-b,serial=1650923000002 ecc_errors_uncorrected_total=2"),
        ],
    ),
    gpu(
        "GpuRowRemapFailed",
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c,serial=1650923000003 remapped_rows_failed=1")],
        &["uuid=\"GPU-c\""],
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c,serial=1650923000003 remapped_rows_failed=0")],
    ),
    gpu(
        "GpuRowRemapPending",
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c,serial=1650923000003 remapped_rows_pending=1")],
        &["uuid=\"GPU-c\""],
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c,serial=1650923000003 remapped_rows_pending=0")],
    ),
    gpu(
        "GpuPcieLinkWidthDegraded",
        &[(60, "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 pcie_link_width=8,pcie_link_width_max=16")],
        &["uuid=\"GPU-f\""],
        &[(60, "gpu,host=n1,gpu=5,uuid=GPU-f,serial=1650923000006 pcie_link_width=16,pcie_link_width_max=16")],
    ),
    gpu("GpuPcieLinkGenerationDegraded", PCIE_SLOW_BUSY, &["uuid=\"GPU-f\""], PCIE_IDLE_OR_FULL),
    gpu("GpuPcieLinkGenerationDegraded", PCIE_SLOW_COPYING, &["uuid=\"GPU-f\""], PCIE_IDLE_OR_FULL),
    gpu(
        "GpuThermalThrottling",
        &[(30, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004,reason=hw_thermal_slowdown throttle_reason=1")],
        &["reason=\"hw_thermal_slowdown\""],
        &[
            (30, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004,reason=gpu_idle throttle_reason=1"),
            (30, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004,reason=hw_thermal_slowdown throttle_reason=0"),
        ],
    ),
    gpu(
        "GpuThermalThrottling",
        &[
            (240, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004 thermal_violation_seconds_total=100"),
            (60, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004 thermal_violation_seconds_total=280"),
        ],
        &["uuid=\"GPU-d\""],
        &[
            (240, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004 thermal_violation_seconds_total=100"),
            (60, "gpu,host=n1,gpu=3,uuid=GPU-d,serial=1650923000004 thermal_violation_seconds_total=101"),
        ],
    ),
    gpu(
        "GpuPowerThrottling",
        &[
            (30, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,reason=sw_power_cap throttle_reason=1"),
            (30, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,reason=hw_thermal_slowdown throttle_reason=0"),
        ],
        &["reason=\"sw_power_cap\""],
        &[
            (30, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,reason=sw_power_cap throttle_reason=0"),
            (30, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,reason=hw_power_brake_slowdown throttle_reason=0"),
            (30, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,reason=hw_thermal_slowdown throttle_reason=1"),
        ],
    ),
    gpu(
        "GpuPowerThrottling",
        &[
            (240, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005 power_violation_seconds_total=0"),
            (60, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005 power_violation_seconds_total=170"),
        ],
        &["uuid=\"GPU-e\""],
        &[
            (240, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005 power_violation_seconds_total=0"),
            (60, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005 power_violation_seconds_total=20"),
        ],
    ),
    gpu(
        "GpuNvlinkRecovering",
        &[
            (300, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=7 nvlink_recovery_errors_total=3"),
            (60, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=7 nvlink_recovery_errors_total=4"),
        ],
        &["link=\"7\""],
        &[
            (300, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=7 nvlink_recovery_errors_total=3"),
            (60, "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=7 nvlink_recovery_errors_total=3"),
        ],
    ),
    gpu(
        "GpuNvlinkErrors",
        &[
            (
                240,
                "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=2 nvlink_crc_errors_total=10,nvlink_replay_errors_total=5",
            ),
            (
                60,
                "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=2 nvlink_crc_errors_total=400,nvlink_replay_errors_total=6",
            ),
        ],
        &["link=\"2\"", "errors=\"crc\""],
        // A few errors in four minutes: corrected, not a failing link.
        &[
            (
                240,
                "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=2 nvlink_crc_errors_total=10,nvlink_replay_errors_total=5",
            ),
            (
                60,
                "gpu,host=n1,gpu=4,uuid=GPU-e,serial=1650923000005,link=2 nvlink_crc_errors_total=13,nvlink_replay_errors_total=8",
            ),
        ],
    ),
    other(
        "IbPortDown",
        &[
            (1800, "ib,host=n1,device=mlx5_0,port=1 port_active=1"),
            (60, "ib,host=n1,device=mlx5_0,port=1 port_active=0"),
        ],
        &["device=\"mlx5_0\""],
        // A port never cabled stays quiet.
        &[
            (1800, "ib,host=n1,device=mlx5_1,port=1 port_active=0"),
            (60, "ib,host=n1,device=mlx5_1,port=1 port_active=0"),
        ],
    ),
    other(
        "IbPortFlapping",
        &[
            (600, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
            (540, "ib,host=n1,device=mlx5_2,port=1 port_active=0"),
            (480, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
            (300, "ib,host=n1,device=mlx5_2,port=1 port_active=0"),
            (240, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
            (60, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
        ],
        &["device=\"mlx5_2\""],
        // Down once and back: IbPortDown's business while it lasted, not a flap.
        &[
            (600, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
            (540, "ib,host=n1,device=mlx5_2,port=1 port_active=0"),
            (480, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
            (60, "ib,host=n1,device=mlx5_2,port=1 port_active=1"),
        ],
    ),
    other(
        "DiskAlmostFull",
        &[(60, "fs,host=n1,mountpoint=/data avail_bytes=2,size_bytes=100,readonly=0")],
        &["mountpoint=\"/data\""],
        &[
            (60, "fs,host=n1,mountpoint=/data avail_bytes=50,size_bytes=100,readonly=0"),
            (60, "fs,host=n1,mountpoint=/iso avail_bytes=0,size_bytes=100,readonly=1"),
        ],
    ),
    // 36,000 operations in three minutes taking 7,200 s: 200 ms each.
    other(
        "DiskLatencyHigh",
        &[
            (
                240,
                "disk,host=n1,device=nvme0n1 reads_completed_total=0,writes_completed_total=0,read_time_seconds_total=0,write_time_seconds_total=0",
            ),
            (
                60,
                "disk,host=n1,device=nvme0n1 reads_completed_total=30000,writes_completed_total=6000,read_time_seconds_total=6000,write_time_seconds_total=1200",
            ),
        ],
        &["device=\"nvme0n1\""],
        // 1 ms an operation when busy; and an almost idle disk whose 3 operations took a second each.
        &[
            (
                240,
                "disk,host=n1,device=nvme0n1 reads_completed_total=0,writes_completed_total=0,read_time_seconds_total=0,write_time_seconds_total=0",
            ),
            (
                60,
                "disk,host=n1,device=nvme0n1 reads_completed_total=30000,writes_completed_total=6000,read_time_seconds_total=30,write_time_seconds_total=6",
            ),
            (
                240,
                "disk,host=n1,device=sda reads_completed_total=0,writes_completed_total=0,read_time_seconds_total=0,write_time_seconds_total=0",
            ),
            (
                60,
                "disk,host=n1,device=sda reads_completed_total=2,writes_completed_total=1,read_time_seconds_total=2,write_time_seconds_total=1",
            ),
        ],
    ),
];

#[test]
fn every_default_alert_fires_on_its_fault_and_stays_quiet_when_healthy() {
    let groups = parse(DEFAULTS, "config/rules/defaults.yml").expect("the default rules parse");
    let alerting = |g: &super::RuleGroup| -> Vec<super::AlertingRule> {
        g.rules
            .iter()
            .filter_map(|r| match r {
                Rule::Alerting(a) => Some(a.clone()),
                _ => None,
            })
            .collect()
    };
    let rules: Vec<_> = groups.iter().flat_map(alerting).collect();
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    let mut tested: Vec<&str> = CASES.iter().map(|c| c.alert).collect();
    tested.dedup();
    assert_eq!(names, tested, "every default alert has a case, in the file's order");
    for c in CASES {
        let rule = rules.iter().find(|r| r.name == c.alert).unwrap();
        assert!(rule.labels.contains_key("severity"), "{} has no severity", c.alert);
        let got = selected(&rule.expr, c.firing);
        assert!(!got.is_empty(), "{} on its fault selects nothing", c.alert);
        for row in &got {
            for label in c.labels {
                assert!(row.contains(label), "{} on its fault: {label} missing from {row}", c.alert);
            }
            if c.per_gpu {
                assert!(row.contains("uuid=\"GPU-") && row.contains("serial=\"1650923"), "{}: {row}", c.alert);
            }
        }
        let quiet = selected(&rule.expr, c.healthy);
        assert!(quiet.is_empty(), "{} on a healthy fixture: {quiet:?}", c.alert);
    }
}

/// Every alert of the GPU group but the NVSwitch's has a case where it names its GPU.
#[test]
fn every_gpu_alert_names_its_gpu() {
    let groups = parse(DEFAULTS, "config/rules/defaults.yml").unwrap();
    let gpu = groups.iter().find(|g| g.name == "argus-default-gpu").expect("the GPU group");
    for r in &gpu.rules {
        let Rule::Alerting(a) = r else { continue };
        if a.name == "NvSwitchSxidFatal" {
            continue;
        }
        assert!(CASES.iter().any(|c| c.alert == a.name && c.per_gpu), "{} has no per-GPU case", a.name);
    }
}
