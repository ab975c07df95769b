//! The default rule set (config/rules/defaults.yml, built into `argus serve`): it parses, and each
//! alerting rule's expression selects the fault on a fixture and nothing on a healthy one, evaluated
//! by the real query engine over an embedded store.

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

/// Per alerting rule: a fixture where it fires (and a label its alert must carry), and a healthy one.
type Case = (&'static str, &'static [(i64, &'static str)], &'static str, &'static [(i64, &'static str)]);

const XID_79: &[(i64, &str)] = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,code=79 xid_errors_total=0"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,code=79 xid_errors_total=1"),
];
const XID_13: &[(i64, &str)] = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,code=13 xid_errors_total=0"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,code=13 xid_errors_total=4"),
];
const XID_999: &[(i64, &str)] = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,code=999 xid_errors_total=0"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,code=999 xid_errors_total=1"),
];
const XID_79_QUIET: &[(i64, &str)] = &[
    (120, "gpu,host=n1,gpu=0,uuid=GPU-a,code=79 xid_errors_total=1"),
    (60, "gpu,host=n1,gpu=0,uuid=GPU-a,code=79 xid_errors_total=1"),
];

const CASES: &[Case] = &[
    ("GpuXidHardware", XID_79, "xid=\"79\"", XID_13),
    ("GpuXidApplication", XID_13, "xid=\"13\"", XID_79),
    ("GpuXidOther", XID_999, "xid=\"999\"", XID_79_QUIET),
    (
        "NvSwitchSxidFatal",
        &[
            (120, "gpu,host=n1,nvswitch=0000:86:00.0,code=20034,severity=fatal nvswitch_sxid_errors_total=0"),
            (60, "gpu,host=n1,nvswitch=0000:86:00.0,code=20034,severity=fatal nvswitch_sxid_errors_total=1"),
        ],
        "sxid=\"20034\"",
        &[
            (120, "gpu,host=n1,nvswitch=0000:05:00.0,code=12028,severity=non_fatal nvswitch_sxid_errors_total=0"),
            (60, "gpu,host=n1,nvswitch=0000:05:00.0,code=12028,severity=non_fatal nvswitch_sxid_errors_total=3"),
        ],
    ),
    (
        "GpuEccUncorrectable",
        &[
            (120, "gpu,host=n1,gpu=1,uuid=GPU-b ecc_errors_uncorrected_total=0"),
            (60, "gpu,host=n1,gpu=1,uuid=GPU-b ecc_errors_uncorrected_total=2"),
        ],
        "uuid=\"GPU-b\"",
        &[
            (120, "gpu,host=n1,gpu=1,uuid=GPU-b ecc_errors_uncorrected_total=2"),
            (60, "gpu,host=n1,gpu=1,uuid=GPU-b ecc_errors_uncorrected_total=2"),
        ],
    ),
    (
        "GpuRowRemapFailed",
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c remapped_rows_failed=1")],
        "uuid=\"GPU-c\"",
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c remapped_rows_failed=0")],
    ),
    (
        "GpuRowRemapPending",
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c remapped_rows_pending=1")],
        "uuid=\"GPU-c\"",
        &[(30, "gpu,host=n1,gpu=2,uuid=GPU-c remapped_rows_pending=0")],
    ),
    (
        "GpuThermalThrottling",
        &[(30, "gpu,host=n1,gpu=3,uuid=GPU-d,reason=hw_thermal_slowdown throttle_reason=1")],
        "reason=\"hw_thermal_slowdown\"",
        &[
            (30, "gpu,host=n1,gpu=3,uuid=GPU-d,reason=gpu_idle throttle_reason=1"),
            (30, "gpu,host=n1,gpu=3,uuid=GPU-d,reason=hw_thermal_slowdown throttle_reason=0"),
        ],
    ),
    (
        "GpuNvlinkRecovering",
        &[
            (300, "gpu,host=n1,gpu=4,uuid=GPU-e,link=7 nvlink_recovery_errors_total=3"),
            (60, "gpu,host=n1,gpu=4,uuid=GPU-e,link=7 nvlink_recovery_errors_total=4"),
        ],
        "link=\"7\"",
        &[
            (300, "gpu,host=n1,gpu=4,uuid=GPU-e,link=7 nvlink_recovery_errors_total=3"),
            (60, "gpu,host=n1,gpu=4,uuid=GPU-e,link=7 nvlink_recovery_errors_total=3"),
        ],
    ),
    (
        "IbPortDown",
        &[
            (1800, "ib,host=n1,device=mlx5_0,port=1 port_active=1"),
            (60, "ib,host=n1,device=mlx5_0,port=1 port_active=0"),
        ],
        "device=\"mlx5_0\"",
        // A port never cabled stays quiet.
        &[
            (1800, "ib,host=n1,device=mlx5_1,port=1 port_active=0"),
            (60, "ib,host=n1,device=mlx5_1,port=1 port_active=0"),
        ],
    ),
    (
        "DiskAlmostFull",
        &[(60, "fs,host=n1,mountpoint=/data avail_bytes=2,size_bytes=100,readonly=0")],
        "mountpoint=\"/data\"",
        &[
            (60, "fs,host=n1,mountpoint=/data avail_bytes=50,size_bytes=100,readonly=0"),
            (60, "fs,host=n1,mountpoint=/iso avail_bytes=0,size_bytes=100,readonly=1"),
        ],
    ),
];

#[test]
fn every_default_alert_fires_on_its_fault_and_stays_quiet_when_healthy() {
    let groups = parse(DEFAULTS, "config/rules/defaults.yml").expect("the default rules parse");
    let rules: Vec<_> = groups
        .iter()
        .flat_map(|g| &g.rules)
        .filter_map(|r| match r {
            Rule::Alerting(a) => Some(a),
            _ => None,
        })
        .collect();
    let names: Vec<&str> = rules.iter().map(|r| r.name.as_str()).collect();
    let tested: Vec<&str> = CASES.iter().map(|c| c.0).collect();
    assert_eq!(names, tested, "every default alert has a case, in the file's order");
    for (rule, (name, firing, label, healthy)) in rules.iter().zip(CASES) {
        assert!(rule.labels.contains_key("severity"), "{name} has no severity");
        let got = selected(&rule.expr, firing);
        assert!(!got.is_empty() && got.iter().all(|l| l.contains(label)), "{name} on its fault: {got:?}");
        let quiet = selected(&rule.expr, healthy);
        assert!(quiet.is_empty(), "{name} on a healthy fixture: {quiet:?}");
    }
}
