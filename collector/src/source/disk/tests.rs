use super::statvfs::RecordedStatfs;
use super::*;
use crate::config::Config;
use crate::source::golden;

fn settings() -> DiskSettings {
    Config::default().validate("-").unwrap().disk.unwrap().settings
}

#[test]
fn golden_disk() {
    let recorded = std::fs::read_to_string(golden::fixture("node/statvfs.json")).unwrap();
    let statfs = RecordedStatfs(serde_json::from_str(&recorded).unwrap());
    let mut d = Disk::with_statfs(&golden::fixture("node/proc"), settings(), Box::new(statfs));
    let mut first = Batch::new();
    d.collect(1_000, &mut first).unwrap();
    golden::check("disk", &first);

    // Two seconds later: utilization appears. The later tree has no mounts file, which fails the
    // filesystem half alone.
    d.set_root(&golden::fixture("node-later/proc"));
    let mut second = Batch::new();
    assert!(d.collect(3_000, &mut second).is_err());
    let util: Vec<String> =
        second.to_exposition().lines().filter(|l| l.starts_with("disk_utilization_ratio")).map(String::from).collect();
    assert!(!util.is_empty() && second.points.iter().all(|p| p.measurement == "disk"), "{util:?}");
}

#[test]
fn excluded_devices_and_filesystems_are_left_out() {
    let recorded = std::fs::read_to_string(golden::fixture("node/statvfs.json")).unwrap();
    let statfs = RecordedStatfs(serde_json::from_str(&recorded).unwrap());
    let mut d = Disk::with_statfs(&golden::fixture("node/proc"), settings(), Box::new(statfs));
    let mut b = Batch::new();
    d.collect(1_000, &mut b).unwrap();
    let text = b.to_exposition();
    assert!(text.contains(r#"device="vda""#), "{text}");
    for absent in [r#"device="loop0""#, r#"fstype="proc""#, r#"mountpoint="/sys/fs/cgroup/cpu""#, r#"fstype="tmpfs""#] {
        assert!(!text.contains(absent), "{absent} in\n{text}");
    }
}
