use super::*;
use argus_model::{Event, Labels};

fn entry(r: u32, t: i64, v: f64) -> Vec<u8> {
    let mut p = Vec::new();
    let l = Labels::from_pairs([("__name__", "m"), ("i", &r.to_string())]);
    encode_series(&mut p, [(r, &l)].into_iter());
    encode_samples(
        &mut p,
        &[RefSample { r, t, v }, RefSample { r, t: t + 10, v: f64::from_bits(0x7ff0_0000_0000_0002) }],
    );
    encode_events(&mut p, &[Event { labels: l, t, text: "Xid 79: GPU has fallen off the bus".into() }]);
    p
}

fn replay(dir: &Path) -> (Vec<Vec<Record>>, ReplayReport) {
    let mut got = Vec::new();
    let (_, rep) = Wal::open(dir, 1 << 20, |r| got.push(r)).unwrap();
    (got, rep)
}

#[test]
fn entries_survive_reopen_in_order() {
    let d = tempfile::tempdir().unwrap();
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        for i in 0..5 {
            w.append(&entry(i, 1000 * i64::from(i), f64::from(i))).unwrap();
        }
        w.sync().unwrap();
    }
    let (got, rep) = replay(d.path());
    assert_eq!(got.len(), 5);
    assert!(rep.truncated.is_empty());
    let Record::Samples(s) = &got[3][1] else { panic!("{:?}", got[3]) };
    assert_eq!(s[0], RefSample { r: 3, t: 3000, v: 3.0 });
    assert_eq!(s[1].v.to_bits(), 0x7ff0_0000_0000_0002, "stale marker bits kept");
    let Record::Events(e) = &got[4][2] else { panic!() };
    assert_eq!(e[0].text, "Xid 79: GPU has fallen off the bus");
}

#[test]
fn torn_tail_is_truncated_and_reported() {
    let d = tempfile::tempdir().unwrap();
    let seg;
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        seg = w.path.clone();
        w.append(&entry(1, 1, 1.0)).unwrap();
        w.append(&entry(2, 2, 2.0)).unwrap();
        w.sync().unwrap();
    }
    let len = fs::metadata(&seg).unwrap().len();
    let f = OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len - 5).unwrap();
    let (got, rep) = replay(d.path());
    assert_eq!(got.len(), 1, "the torn second entry is gone whole");
    assert_eq!(rep.truncated.len(), 1);
    assert_eq!(rep.truncated[0].2, "torn entry");
    // Truncation is persistent: a second open finds a clean log.
    let (got, rep) = replay(d.path());
    assert_eq!((got.len(), rep.truncated.len()), (1, 0));
}

#[test]
fn flipped_byte_stops_replay_at_that_entry() {
    let d = tempfile::tempdir().unwrap();
    let seg;
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        seg = w.path.clone();
        for i in 0..3 {
            w.append(&entry(i, 1, 1.0)).unwrap();
        }
        w.sync().unwrap();
    }
    let mut data = fs::read(&seg).unwrap();
    let n = data.len();
    data[n - 3] ^= 0xff;
    fs::write(&seg, data).unwrap();
    let (got, rep) = replay(d.path());
    assert_eq!(got.len(), 2);
    assert_eq!(rep.truncated[0].2, "checksum mismatch");
}

/// A crash while a segment was being created leaves it shorter than its header. It never held an entry,
/// so recovery removes it and keeps the segments after it: entries acknowledged in the segment opened
/// after that recovery survive every later restart.
#[test]
fn a_segment_torn_at_creation_never_cuts_off_later_entries() {
    let d = tempfile::tempdir().unwrap();
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        w.append(&entry(1, 1, 1.0)).unwrap();
        w.sync().unwrap();
    }
    // The crash: segment 2 exists with part of its header.
    fs::write(d.path().join("00000002"), &MAGIC[..3]).unwrap();
    let (got, rep) = recover_then_write(d.path(), 2);
    assert_eq!(got, 1);
    assert_eq!(rep.truncated.len(), 1, "{:?}", rep.truncated);
    assert_eq!(rep.truncated[0].2, "bad segment header");
    assert!(!d.path().join("00000002").exists(), "the torn segment is removed, not left to trip on");
    // The entry acknowledged after the torn segment survives.
    assert_replays_cleanly(d.path(), 2);
}

/// Opens the WAL as a restart does, then appends and syncs one entry; how many entries were replayed,
/// and the report.
fn recover_then_write(dir: &Path, r: u32) -> (usize, ReplayReport) {
    let mut got = 0;
    let (mut w, rep) = Wal::open(dir, 1 << 20, |_| got += 1).unwrap();
    w.append(&entry(r, i64::from(r), 1.0)).unwrap();
    w.sync().unwrap();
    (got, rep)
}

/// Two restarts in a row replay `entries` entries and cut nothing.
fn assert_replays_cleanly(dir: &Path, entries: usize) {
    for _ in 0..2 {
        let (got, rep) = replay(dir);
        assert_eq!(got.len(), entries);
        assert!(rep.truncated.is_empty(), "{:?}", rep.truncated);
    }
}

/// A segment in the middle of the log whose header is corrupt cuts off the segments after it (a hole
/// would reorder history), once: it is removed, so entries written after that recovery survive.
#[test]
fn a_corrupt_segment_cuts_off_what_follows_it_once() {
    let d = tempfile::tempdir().unwrap();
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        w.append(&entry(1, 1, 1.0)).unwrap();
        w.cut().unwrap();
        w.append(&entry(2, 2, 2.0)).unwrap();
        w.cut().unwrap();
        w.append(&entry(3, 3, 3.0)).unwrap();
        w.sync().unwrap();
    }
    let seg2 = d.path().join("00000002");
    let mut data = fs::read(&seg2).unwrap();
    data[0] ^= 0xff;
    fs::write(&seg2, data).unwrap();
    let (got, rep) = recover_then_write(d.path(), 4);
    assert_eq!(got, 1, "segment 1 only: 2 is unreadable and 3 would come after a hole");
    assert_eq!(rep.truncated.len(), 2, "{:?}", rep.truncated);
    // Segment 1 and the entry written after the recovery.
    assert_replays_cleanly(d.path(), 2);
}

/// Replays the WAL in `dir`, which must need no cut, and returns the first sample's reference of each
/// entry (the tests' entries each name one).
fn replayed_firsts(dir: &Path) -> Vec<u32> {
    let (got, rep) = replay(dir);
    assert!(rep.truncated.is_empty(), "{:?}", rep.truncated);
    got.iter()
        .map(|rs| match &rs[1] {
            Record::Samples(s) => s[0].r,
            other => panic!("{other:?}"),
        })
        .collect()
}

/// An fsync that fails after the entries reached the file: the group is refused, and the rollback
/// takes it out of the file, so it does not come back at the next start.
#[test]
fn a_group_whose_fsync_fails_is_rolled_back_out_of_the_file() {
    let d = tempfile::tempdir().unwrap();
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        w.append(&entry(0, 0, 0.0)).unwrap();
        w.sync().unwrap();
        w.append(&entry(1, 1, 1.0)).unwrap();
        w.fail_next_fsync = true;
        assert!(w.sync().is_err());
        w.rollback().unwrap();
        w.append(&entry(2, 2, 2.0)).unwrap();
        w.sync().unwrap();
    }
    let firsts = replayed_firsts(d.path());
    assert_eq!(firsts, [0, 2], "the refused entry 1 is gone");
}

#[test]
fn cut_and_remove_before() {
    let d = tempfile::tempdir().unwrap();
    let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
    w.append(&entry(1, 1, 1.0)).unwrap();
    let next = w.cut().unwrap();
    w.append(&entry(2, 2, 2.0)).unwrap();
    w.sync().unwrap();
    assert_eq!(w.remove_before(next).unwrap(), 1);
    drop(w);
    let (got, _) = replay(d.path());
    assert_eq!(got.len(), 1);
}

/// The entry bytes of docs/format/wal.md, pinned: a change here is a format change and needs a new
/// segment version.
#[test]
fn golden_entry_bytes() {
    let l = Labels::from_pairs([("__name__", "gpu_power_watts"), ("gpu", "0")]);
    let mut p = Vec::new();
    encode_series(&mut p, [(7, &l)].into_iter());
    encode_samples(
        &mut p,
        &[RefSample { r: 7, t: 1_700_000_000_000, v: 412.5 }, RefSample { r: 7, t: 1_700_000_010_000, v: 0.0 }],
    );
    encode_events(&mut p, &[Event { labels: l, t: 1_700_000_000_000, text: "Xid 79".into() }]);
    let hex: String = p.iter().map(|b| format!("{b:02x}")).collect();
    expect_test::expect!["0122010702085f5f6e616d655f5f0f6770755f706f7765725f7761747473036770750130021c020780a0abfef9620000000000c8794007a09c010000000000000000032e0102085f5f6e616d655f5f0f6770755f706f7765725f776174747303677075013080a0abfef96206586964203739"].assert_eq(&hex);
    assert_eq!(decode_entry(&p).unwrap().len(), 3);
}

#[test]
fn rollback_forgets_unflushed_entries_in_buffer_and_file() {
    let d = tempfile::tempdir().unwrap();
    {
        let (mut w, _) = Wal::open(d.path(), 1 << 20, |_| {}).unwrap();
        w.append(&entry(0, 0, 0.0)).unwrap();
        w.sync().unwrap();
        // A refused group: one entry still buffered, and one larger than the buffer, so it reached the
        // file before the failure.
        w.append(&entry(1, 1000, 1.0)).unwrap();
        let big = vec![7u8; 2 << 20];
        w.append(&big).unwrap();
        w.rollback().unwrap();
        w.append(&entry(2, 2000, 2.0)).unwrap();
        w.sync().unwrap();
    }
    let firsts = replayed_firsts(d.path());
    assert_eq!(firsts, [0, 2], "the rolled-back entries are gone, the later one kept");
}
