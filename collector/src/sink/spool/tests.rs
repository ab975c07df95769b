use super::*;

fn rec(i: u32, size: usize) -> Record {
    let mut body = i.to_le_bytes().to_vec();
    body.resize(size.max(4), 0xab);
    Record { kind: Kind::RemoteWrite, values: i, body }
}

fn id(r: &Record) -> u32 {
    u32::from_le_bytes([r.body[0], r.body[1], r.body[2], r.body[3]])
}

/// Pops everything, returning the record ids in order.
fn drain(s: &mut Spool) -> Vec<u32> {
    let mut out = Vec::new();
    while let Some(r) = s.front().unwrap() {
        out.push(id(&r));
        s.pop().unwrap();
    }
    out
}

#[test]
fn records_come_back_in_order_across_segments() {
    let dir = tempfile::tempdir().unwrap();
    let (mut s, lost) = Spool::open(dir.path(), 1 << 20, 300).unwrap();
    assert_eq!(lost, 0);
    for i in 0..20 {
        assert_eq!(s.push(&rec(i, 100)).unwrap(), 0);
    }
    assert!(s.segments.len() > 5, "segments roll at segment_bytes");
    assert_eq!(s.len(), 20);
    assert_eq!(drain(&mut s), (0..20).collect::<Vec<_>>());
    assert!(s.is_empty());
    let files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| e.as_ref().unwrap().path().extension().is_some_and(|x| x == "seg"))
        .count();
    assert_eq!(files, 1, "delivered segments are deleted; the open one stays");
}

#[test]
fn the_bound_drops_the_oldest_segments_and_counts_their_values() {
    let dir = tempfile::tempdir().unwrap();
    // Each record is 13 + 100 bytes; a segment holds two (8 + 2 × 113 = 234 ≤ 250).
    let (mut s, _) = Spool::open(dir.path(), 1000, 250).unwrap();
    let mut dropped = 0;
    for i in 1..=20 {
        dropped += s.push(&rec(i, 100)).unwrap();
        assert!(s.bytes() <= 1000, "{} bytes after record {i}", s.bytes());
    }
    let left = drain(&mut s);
    assert_eq!(left.first().copied(), Some(13), "oldest went first: {left:?}");
    assert_eq!(left, (13..=20).collect::<Vec<_>>());
    assert_eq!(dropped, (1..=12).sum::<u32>() as u64, "values of the dropped records are counted");
    // A record larger than the whole bound is refused and counted, the spool untouched.
    assert_eq!(s.push(&rec(99, 2000)).unwrap(), 99);
}

#[test]
fn survives_restart_with_acknowledged_position() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut s, _) = Spool::open(dir.path(), 1 << 20, 400).unwrap();
        for i in 0..10 {
            s.push(&rec(i, 100)).unwrap();
        }
        for _ in 0..4 {
            s.front().unwrap();
            s.pop().unwrap();
        }
    }
    let (mut s, lost) = Spool::open(dir.path(), 1 << 20, 400).unwrap();
    assert_eq!(lost, 0);
    assert_eq!(s.len(), 6);
    s.push(&rec(10, 100)).unwrap();
    assert_eq!(drain(&mut s), (4..=10).collect::<Vec<_>>());
    drop(s);
    let (mut s, _) = Spool::open(dir.path(), 1 << 20, 400).unwrap();
    assert!(s.front().unwrap().is_none(), "nothing comes back after everything was popped");
}

#[test]
fn a_torn_tail_is_cut_and_counted() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (mut s, _) = Spool::open(dir.path(), 1 << 20, 1 << 20).unwrap();
        for i in 1..=3 {
            s.push(&rec(i, 100)).unwrap();
        }
    }
    let seg = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "seg"))
        .unwrap();
    let len = std::fs::metadata(&seg).unwrap().len();
    let f = OpenOptions::new().write(true).open(&seg).unwrap();
    f.set_len(len - 10).unwrap();
    let (mut s, lost) = Spool::open(dir.path(), 1 << 20, 1 << 20).unwrap();
    assert_eq!(lost, 3, "the torn record's values");
    assert_eq!(drain(&mut s), vec![1, 2]);
}
