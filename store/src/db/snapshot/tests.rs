use super::*;
use crate::Options;
use crate::wal::WalSync;
use argus_model::Matcher;
use argus_model::lineprotocol::{Precision, parse};
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};

fn opts(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.wal_sync = WalSync::Always;
    o
}

fn write(db: &Db, body: &str) {
    let lines = parse(body).unwrap();
    let numbers: Vec<usize> = (1..=lines.len()).collect();
    db.write_lines(&lines, &numbers, Precision::Milliseconds, &[]).unwrap();
}

fn values(db: &Db, name: &str) -> Vec<(i64, f64)> {
    let s = db.select(&[Matcher::eq("__name__", name)], i64::MIN, i64::MAX).unwrap();
    s.into_iter().flat_map(|s| s.samples).map(|x| (x.t, x.v)).collect()
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> =
        fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn a_snapshot_opens_as_the_store_was_when_it_was_taken() {
    let d = tempfile::tempdir().unwrap();
    let now = crate::now_ms();
    let db = Db::open(opts(d.path())).unwrap();
    write(&db, &format!("m,host=a v=1 {}\nm,host=a v=2 {}", now - 2000, now - 1000));
    db.flush().unwrap();
    write(&db, &format!("m,host=a v=3 {now}\nev,host=a text=\"Xid 79\" {now}"));
    let s = db.snapshot(false, &[]).unwrap();
    // After the snapshot: not in it.
    write(&db, &format!("m,host=a v=4 {}", now + 1));

    assert_eq!(s.dir, d.path().join(SNAPSHOTS_DIR).join(&s.name));
    assert_eq!(names(&d.path().join(SNAPSHOTS_DIR)), vec![s.name.clone()], "no .tmp left beside it");
    let (stamp, random) = s.name.split_once('-').unwrap();
    assert!(stamp.len() == 16 && stamp.as_bytes()[8] == b'T' && stamp.ends_with('Z'), "{}", s.name);
    assert!(random.len() == 16 && random.chars().all(|c| c.is_ascii_hexdigit()), "{}", s.name);
    assert_eq!((s.blocks, s.wal_segments), (1, fs::read_dir(d.path().join("wal")).unwrap().count()));
    assert_eq!(names(&s.dir), vec!["blocks", "wal"], "no lock, no head chunk file");

    // Block files are the live ones (hard links); the open WAL segment is a copy.
    let block = names(&d.path().join("blocks")).pop().unwrap();
    for f in names(&d.path().join("blocks").join(&block)) {
        let live = fs::metadata(d.path().join("blocks").join(&block).join(&f)).unwrap();
        let snap = fs::metadata(s.dir.join("blocks").join(&block).join(&f)).unwrap();
        assert_eq!((live.ino(), live.dev()), (snap.ino(), snap.dev()), "{f} is linked");
    }
    let open = names(&d.path().join("wal")).pop().unwrap();
    let live = fs::metadata(d.path().join("wal").join(&open)).unwrap();
    let snap = fs::metadata(s.dir.join("wal").join(&open)).unwrap();
    assert_ne!(live.ino(), snap.ino(), "the open segment is copied");
    assert!(snap.len() < live.len(), "the write after the snapshot is not in the copy");

    // The live store is still open: the snapshot is a data directory of its own.
    let restored = Db::open(opts(&s.dir)).unwrap();
    assert_eq!(values(&restored, "m_v"), vec![(now - 2000, 1.0), (now - 1000, 2.0), (now, 3.0)]);
    let ev = restored.events(&[Matcher::eq("__name__", "ev_text")], now - 1, now + 1).unwrap();
    assert_eq!(ev.iter().map(|e| e.text.as_str()).collect::<Vec<_>>(), vec!["Xid 79"]);
    // Writing to the restored copy leaves the live store as it was.
    write(&restored, &format!("m,host=a v=9 {}", now + 2));
    restored.flush().unwrap();
    restored.close();
    assert_eq!(values(&db, "m_v").last(), Some(&(now + 1, 4.0)));
    db.flush().unwrap();
    assert_eq!(values(&db, "m_v").len(), 4);
    db.close();
}

#[test]
fn skip_head_takes_the_blocks_only() {
    let d = tempfile::tempdir().unwrap();
    let now = crate::now_ms();
    let db = Db::open(opts(d.path())).unwrap();
    write(&db, &format!("m,host=a v=1 {}", now - 1000));
    db.flush().unwrap();
    write(&db, &format!("m,host=a v=2 {now}"));
    let s = db.snapshot(true, &[]).unwrap();
    assert_eq!((s.blocks, s.wal_segments), (1, 0));
    assert_eq!(names(&s.dir), vec!["blocks"]);
    let restored = Db::open(opts(&s.dir)).unwrap();
    assert_eq!(values(&restored, "m_v"), vec![(now - 1000, 1.0)]);
    restored.close();
    db.close();
}

#[test]
fn parts_are_copied_into_the_snapshot_and_a_failing_one_leaves_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    let good = SnapshotPart {
        name: "alertd.db".into(),
        copy: Arc::new(|dir: &Path| fs::write(dir.join("alertd.db"), b"copy").map_err(|e| e.to_string())),
    };
    let s = db.snapshot(false, std::slice::from_ref(&good)).unwrap();
    assert_eq!(fs::read(s.dir.join("alertd.db")).unwrap(), b"copy");

    let bad = SnapshotPart { name: "alertd.db".into(), copy: Arc::new(|_: &Path| Err("disk on fire".to_string())) };
    let e = db.snapshot(false, &[good, bad]).unwrap_err();
    let msg = e.to_string();
    assert!(msg.starts_with("snapshot 20") && msg.ends_with(": copying alertd.db: disk on fire"), "{msg}");
    assert_eq!(names(&d.path().join(SNAPSHOTS_DIR)), vec![s.name], "the failed one is gone whole");
    db.close();
}

#[test]
fn an_interrupted_snapshot_is_removed_at_open() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join(SNAPSHOTS_DIR);
    fs::create_dir_all(root.join("20261207T120000Z-0123456789abcdef.tmp/blocks")).unwrap();
    fs::create_dir_all(root.join("20261207T110000Z-0123456789abcdef/blocks")).unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    assert_eq!(names(&root), vec!["20261207T110000Z-0123456789abcdef"]);
    db.close();
}

/// Snapshots taken while writes, flushes and compactions run each hold every write acknowledged before
/// they began, and nothing torn: the samples of each are a gapless prefix of what was written.
#[test]
fn snapshots_under_writes_and_flushes_are_whole() {
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(opts(d.path())).unwrap());
    let start = crate::now_ms() - 3_600_000;
    let acked = Arc::new(AtomicI64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (db, acked, stop) = (db.clone(), acked.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut i = 0i64;
            while !stop.load(Ordering::Relaxed) {
                write(&db, &format!("seq,host=a v={i} {}\nseq,host=b v={i} {}", start + i, start + i));
                i += 1;
                acked.store(i, Ordering::SeqCst);
            }
        })
    };
    let flusher = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                db.flush().unwrap();
                std::thread::sleep(std::time::Duration::from_millis(3));
            }
        })
    };
    let mut taken = Vec::new();
    for _ in 0..8 {
        std::thread::sleep(std::time::Duration::from_millis(20));
        let before = acked.load(Ordering::SeqCst);
        let s = db.snapshot(false, &[]).unwrap();
        taken.push((before, s));
    }
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    flusher.join().unwrap();
    assert!(taken.last().unwrap().0 > 0, "the writer wrote");
    for (before, s) in taken {
        let restored = Db::open(opts(&s.dir)).unwrap();
        let got = restored.select(&[Matcher::eq("__name__", "seq_v")], i64::MIN, i64::MAX).unwrap();
        assert_eq!(got.len(), 2, "{}", s.name);
        for series in got {
            let n = series.samples.len() as i64;
            assert!(n >= before, "{}: {n} samples, {before} acknowledged before it", s.name);
            for (i, x) in series.samples.iter().enumerate() {
                assert_eq!((x.t, x.v), (start + i as i64, i as f64), "{}: sample {i}", s.name);
            }
        }
        restored.close();
    }
}
