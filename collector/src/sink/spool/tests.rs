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

/// A full disk that takes part of a record before refusing the rest: once space returns, the records
/// pushed after it are delivered, while running and after a restart. Needs to mount a small tmpfs
/// (root); otherwise it says why and passes without running.
#[test]
fn a_record_the_disk_took_in_part_does_not_hide_the_next_ones() {
    struct Unmount(PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
    for restart in [false, true] {
        let dir = tempfile::tempdir().unwrap();
        let mnt = dir.path().join("mnt");
        std::fs::create_dir_all(&mnt).unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(&mnt)
            .output()
            .map_err(|e| e.to_string())
            .and_then(|o| if o.status.success() { Ok(()) } else { Err(String::from_utf8_lossy(&o.stderr).into()) });
        if let Err(why) = mounted {
            eprintln!("skipped: cannot mount a tmpfs: {why}");
            return;
        }
        let _unmount = Unmount(mnt.clone());
        // 48 of the 64 KiB taken: the 32 KiB record gets part of the rest, then the disk is full.
        let filler = mnt.join("filler");
        std::fs::write(&filler, vec![0u8; 48 * 1024]).unwrap();
        let spool = mnt.join("spool");
        let (mut s, _) = Spool::open(&spool, 1 << 20, 1 << 20).unwrap();
        s.push(&rec(1, 1000)).unwrap();
        assert!(s.push(&rec(2, 32 * 1024)).is_err(), "the disk is full");
        std::fs::remove_file(&filler).unwrap();
        s.push(&rec(3, 1000)).unwrap();
        s.push(&rec(4, 1000)).unwrap();
        if restart {
            drop(s);
            let (mut s, lost) = Spool::open(&spool, 1 << 20, 1 << 20).unwrap();
            assert_eq!(lost, 0, "nothing torn is left in the file");
            assert_eq!(drain(&mut s), vec![1, 3, 4]);
        } else {
            assert_eq!(drain(&mut s), vec![1, 3, 4]);
        }
    }
}

#[test]
fn a_spool_in_use_is_refused_to_a_second_opener() {
    let dir = tempfile::tempdir().unwrap();
    let (s, _) = Spool::open(dir.path(), 1 << 20, 300).unwrap();
    let Err(e) = Spool::open(dir.path(), 1 << 20, 300) else { panic!("opened twice") };
    assert!(e.to_string().contains("in use by another process"), "{e}");
    drop(s);
    assert!(Spool::open(dir.path(), 1 << 20, 300).is_ok(), "free again once closed");
}

/// Acks fail (a full disk) while the bound drops the only segment: the new segment must not take the
/// number the stale ack points into, or a restart would skip its first records.
#[test]
fn a_new_segment_never_takes_the_number_a_stale_ack_points_into() {
    let dir = tempfile::tempdir().unwrap();
    {
        // Each record is 13 + 100 bytes; three fit under the bound of 400 with the segment header.
        let (mut s, _) = Spool::open(dir.path(), 400, 1 << 20).unwrap();
        for i in 1..=3 {
            s.push(&rec(i, 100)).unwrap();
        }
        for _ in 0..2 {
            s.front().unwrap();
            s.pop().unwrap();
        }
        // The ack says segment 1, past record 2. From now on no ack can be written.
        std::fs::create_dir(dir.path().join("ack.tmp")).unwrap();
        assert_eq!(s.push(&rec(4, 100)).unwrap(), 3, "the bound drops segment 1, record 3 with it");
        s.push(&rec(5, 100)).unwrap();
        s.push(&rec(6, 100)).unwrap();
        std::fs::remove_dir(dir.path().join("ack.tmp")).unwrap();
    }
    let (mut s, lost) = Spool::open(dir.path(), 400, 1 << 20).unwrap();
    assert_eq!(lost, 0);
    assert_eq!(drain(&mut s), vec![4, 5, 6]);
}
