use super::*;
use crate::wal::WalSync;
use argus_model::lineprotocol::{Precision, parse};

fn opts(dir: &Path) -> Options {
    let mut o = Options::new(dir);
    o.wal_sync = WalSync::Always;
    o
}

fn write(db: &Db, body: &str) -> Result<WriteStats, WriteError> {
    let lines = parse(body).unwrap();
    let numbers: Vec<usize> = (1..=lines.len()).collect();
    db.write_lines(&lines, &numbers, Precision::Milliseconds, &[])
}

fn values(db: &Db, name: &str) -> Vec<(i64, f64)> {
    let s = db.select(&[Matcher::eq("__name__", name)], i64::MIN, i64::MAX).unwrap();
    s.into_iter().flat_map(|s| s.samples).map(|x| (x.t, x.v)).collect()
}

#[test]
fn writes_survive_restart_via_wal_and_via_blocks() {
    let d = tempfile::tempdir().unwrap();
    let now = now_ms();
    let body = format!(
        "gpu,host=a,gpu=0 util=50,mem=1i {now}\ngpu,host=a,gpu=0 util=60 {}\nevent,host=a message=\"Xid 79\" {now}",
        now + 1
    );
    {
        let db = Db::open(opts(d.path())).unwrap();
        let st = write(&db, &body).unwrap();
        assert_eq!((st.samples, st.events), (3, 1));
        db.close();
    }
    let db = Db::open(opts(d.path())).unwrap();
    assert_eq!(values(&db, "gpu_util"), vec![(now, 50.0), (now + 1, 60.0)], "replayed from the WAL");
    db.flush().unwrap();
    assert_eq!(values(&db, "gpu_util"), vec![(now, 50.0), (now + 1, 60.0)], "read from blocks");
    db.close();
    let db = Db::open(opts(d.path())).unwrap();
    assert_eq!(values(&db, "gpu_mem"), vec![(now, 1.0)]);
    let ev = db.events(&[Matcher::eq("__name__", "event_message")], now - 1, now + 1).unwrap();
    assert_eq!(ev.len(), 1);
    assert_eq!(ev[0].text, "Xid 79");
    let wal_files = fs::read_dir(d.path().join("wal")).unwrap().count();
    assert!(wal_files <= 2, "flush truncated the WAL ({wal_files} segments left)");
}

/// After a flush the WAL names each series again at its first use, which need not be the order of
/// their references: replay must take a lower reference named after a higher one.
#[test]
fn series_named_out_of_reference_order_replay_whole() {
    let d = tempfile::tempdir().unwrap();
    let now = now_ms();
    {
        let db = Db::open(opts(d.path())).unwrap();
        write(&db, &format!("m,host=a v=1 {now}\nm,host=b v=1 {now}")).unwrap();
        db.flush().unwrap();
        // b (reference 1) is named before a (reference 0) in the segment the flush left.
        write(&db, &format!("m,host=b v=2 {}\nm,host=a v=2 {}", now + 1, now + 1)).unwrap();
        db.close();
    }
    let db = Db::open(opts(d.path())).unwrap();
    let both = vec![(now, 1.0), (now + 1, 2.0)];
    for host in ["a", "b"] {
        let s = db.select(&[Matcher::eq("__name__", "m_v"), Matcher::eq("host", host)], i64::MIN, i64::MAX).unwrap();
        let got: Vec<(i64, f64)> = s.into_iter().flat_map(|s| s.samples).map(|x| (x.t, x.v)).collect();
        assert_eq!(got, both, "host {host}: the acknowledged sample at now + 1 is replayed");
    }
}

#[test]
fn out_of_order_rewrite_and_replace_across_blocks_and_head() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    let t = now_ms() - 3 * 3600 * 1000;
    write(&db, &format!("m v=1 {}\nm v=2 {}", t, t + 10)).unwrap();
    db.flush().unwrap();
    // Hours-old data after newer data: a replayed spool.
    write(&db, &format!("m v=1 {}\nm v=9 {}\nm v=0.5 {}", t, t + 10, t - 10)).unwrap();
    assert_eq!(values(&db, "m_v"), vec![(t - 10, 0.5), (t, 1.0), (t + 10, 9.0)], "head wins over the block");
    db.flush().unwrap();
    assert_eq!(values(&db, "m_v"), vec![(t - 10, 0.5), (t, 1.0), (t + 10, 9.0)], "newer block wins after compaction");
    assert_eq!(db.shared.blocks.read().len(), 1, "overlapping blocks were compacted");
}

#[test]
fn retention_drops_old_samples_and_future_rejects_batch() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    o.retention = std::time::Duration::from_secs(3600);
    let db = Db::open(o).unwrap();
    let now = now_ms();
    let st = write(&db, &format!("m v=1 {}\nm v=2 {now}", now - 2 * 3600 * 1000)).unwrap();
    assert_eq!((st.samples, st.dropped_old), (1, 1));
    let e = write(&db, &format!("m v=3 {now}\nm v=4 {}", now + 11 * 60 * 1000)).unwrap_err();
    match e {
        WriteError::Invalid(errs) => {
            assert_eq!(errs.len(), 1);
            assert_eq!(errs[0].line, 2);
            assert!(errs[0].reason.contains("in the future"), "{}", errs[0].reason);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(values(&db, "m_v"), vec![(now, 2.0)], "nothing of the rejected batch is stored");
}

#[test]
fn label_apis_and_matchers() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    let now = now_ms();
    write(&db, &format!("gpu,host=a,gpu=0 util=1 {now}\ngpu,host=b,gpu=1 util=2 {now}\nhost,host=a load1=3 {now}"))
        .unwrap();
    assert_eq!(db.label_names(&[], i64::MIN, i64::MAX).unwrap(), vec!["__name__", "gpu", "host"]);
    let values = db.label_values("host", &[Matcher::eq("__name__", "gpu_util")], i64::MIN, i64::MAX).unwrap();
    assert_eq!(values, vec!["a", "b"]);
    let s = db.series(&[Matcher::eq("host", "a")], i64::MIN, i64::MAX).unwrap();
    assert_eq!(s.len(), 2);
    assert!(db.series(&[Matcher::eq("host", "a")], now + 1, now + 2).unwrap().is_empty(), "time range filters series");
}

#[test]
fn concurrent_writers_share_commits_and_lose_nothing() {
    let d = tempfile::tempdir().unwrap();
    let db = Arc::new(Db::open(opts(d.path())).unwrap());
    let now = now_ms();
    let handles: Vec<_> = (0..4)
        .map(|w| {
            let db = db.clone();
            std::thread::spawn(move || {
                for b in 0..50 {
                    let body: String =
                        (0..20).map(|i| format!("m,w={w},i={i} v={b} {}\n", now - 100_000 + b)).collect();
                    write(&db, &body).unwrap();
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let s = db.select(&[Matcher::eq("__name__", "m_v")], i64::MIN, i64::MAX).unwrap();
    assert_eq!(s.len(), 80);
    assert!(s.iter().all(|s| s.samples.len() == 50));
    assert!(db.metrics().wal_fsyncs.get() <= 200 + 1);
}

#[test]
fn a_second_open_of_the_same_directory_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    let e = Db::open(opts(d.path())).err().unwrap();
    assert!(matches!(e, DbError::Locked(_)), "{e}");
    db.close();
    Db::open(opts(d.path())).unwrap();
}

#[test]
fn merge_joins_disjoint_lists_and_lets_the_latest_win_on_overlap() {
    let s = |v: &[(i64, f64)]| v.iter().map(|(t, v)| Sample::new(*t, *v)).collect::<Vec<_>>();
    // Disjoint, listed newest block first: joined in time order.
    assert_eq!(
        merge_samples(vec![s(&[(30, 3.0), (40, 4.0)]), vec![], s(&[(10, 1.0), (20, 2.0)])]),
        s(&[(10, 1.0), (20, 2.0), (30, 3.0), (40, 4.0)])
    );
    // Overlapping: the later list wins at equal timestamps.
    assert_eq!(
        merge_samples(vec![s(&[(10, 1.0), (20, 2.0)]), s(&[(20, 9.0), (25, 5.0)])]),
        s(&[(10, 1.0), (20, 9.0), (25, 5.0)])
    );
}

#[test]
fn large_reads_split_among_threads_merge_every_source_in_label_order() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    let now = now_ms();
    let t0 = now - 600_000;
    // 300 series × 20 samples into a block, then rewrites of two timestamps and later samples in the head.
    let lines = |from: i64, to: i64, v: i64| -> String {
        (0..300)
            .flat_map(|h| (from..to).map(move |k| format!("m,host=h{h:03} v={} {}\n", v + k, t0 + k * 1000)))
            .collect()
    };
    write(&db, &lines(0, 20, 0)).unwrap();
    db.flush().unwrap();
    write(&db, &lines(18, 25, 1000)).unwrap();
    let got = db.select(&[Matcher::eq("__name__", "m_v")], t0 + 5_000, t0 + 22_000).unwrap();
    assert_eq!(got.len(), 300);
    assert!(got.windows(2).all(|w| w[0].labels < w[1].labels), "sorted by labels");
    for s in &got {
        let want: Vec<(i64, f64)> =
            (5..=22).map(|k| (t0 + k * 1000, if k < 18 { k as f64 } else { 1000.0 + k as f64 })).collect();
        assert_eq!(s.samples.iter().map(|x| (x.t, x.v)).collect::<Vec<_>>(), want, "{}", s.labels);
    }
    // The caller's function keeps what it returns, and its first error ends the read.
    let kept: Vec<usize> = db
        .select_map(&[Matcher::eq("__name__", "m_v")], i64::MIN, i64::MAX, |l, s| {
            Ok::<_, DbError>(l.get("host").is_some_and(|h| h.ends_with('7')).then_some(s.len()))
        })
        .unwrap();
    assert_eq!(kept, vec![25; 30]);
    let e = db
        .select_map(&[Matcher::eq("__name__", "m_v")], i64::MIN, i64::MAX, |_, _| Err::<Option<()>, _>(DbError::Closed))
        .unwrap_err();
    assert!(matches!(e, DbError::Closed));
}

#[test]
fn series_limits_refuse_the_batch_naming_the_metric() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    o.max_series = 6;
    o.max_series_per_metric = 3;
    let db = Db::open(o).unwrap();
    let now = now_ms();
    write(&db, &format!("req,id=1 v=1 {now}\nreq,id=2 v=1 {now}\ngpu,dev=0 util=1 {now}")).unwrap();
    // Two more series of req_v make four: over the per-metric limit; the gpu line goes too.
    let e = write(&db, &format!("gpu,dev=1 util=1 {now}\nreq,id=3 v=1 {now}\nreq,id=4 v=1 {now}")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "series limit max_series_per_metric = 3 reached: metric \"req_v\" has 2 live series and this batch adds 2; \
         nothing stored"
    );
    assert_eq!(values(&db, "gpu_util").len(), 1, "nothing of the refused batch is stored");
    // Samples of existing series always pass; the third series of req_v is still allowed.
    write(&db, &format!("req,id=1 v=2 {}\nreq,id=3 v=1 {now}", now + 1)).unwrap();
    let e = write(&db, &format!("gpu,dev=1 util=1 {now}\ngpu,dev=2 util=1 {now}\nfan rpm=1 {now}")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "series limit max_series = 6 reached: 4 live series and this batch adds 3 (metric \"gpu_util\" among them); \
         nothing stored"
    );
    let mut registry = prometheus_client::registry::Registry::default();
    db.metrics().register(&mut registry);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains("argus_store_batches_rejected_total{reason=\"cardinality\"} 2"), "{text}");
}

#[test]
fn a_new_series_with_many_samples_counts_once_against_the_series_limits() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    o.max_series = 2;
    o.max_series_per_metric = 2;
    let db = Db::open(o).unwrap();
    let now = now_ms();
    let lines: Vec<String> =
        (0..5).map(|k| format!("req,id=1 v={k} {}", now + k)).chain([format!("req,id=2 v=1 {now}")]).collect();
    write(&db, &lines.join("\n")).unwrap();
    assert_eq!(values(&db, "req_v").len(), 6);
}

fn blocks(db: &Db) -> usize {
    db.shared.blocks.read().len()
}

/// Writes new series of one sample each, 200 a batch, until the head holds more than `bytes`.
fn write_series_until(db: &Db, bytes: usize) {
    let t = now_ms() - 60_000;
    let mut i = 0;
    while db.head_bytes() <= bytes {
        let body: String = (i..i + 200).map(|n| format!("wide,host=h{n},gpu=0 v=1 {t}\n")).collect();
        write(db, &body).unwrap();
        i += 200;
    }
}

#[test]
fn an_early_flush_happens_only_when_data_not_series_fill_the_head() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    o.memory_limit = 8 << 20;
    let share = o.head_budget();
    let db = Db::open(o).unwrap();
    // Many series, one sample each: past half the head's share, but almost all of it labels.
    write_series_until(&db, share / 2);
    db.maintain().unwrap();
    assert_eq!(blocks(&db), 0, "a flush would free nothing but samples it hardly holds");
    assert!(!db.shared.early_flush_due(&db.shared.head.read()));
    // Data past a quarter of the share: a storm of log events (sealed samples live in the chunk file,
    // so samples hardly fill the head any more; events and open chunks do). A flush gives it back.
    let t = now_ms() - 3600 * 1000;
    let mut step = 0;
    while db.head_bytes() - db.shared.head.read().label_bytes() < share / 4 {
        let body: String = (0..200)
            .map(|k| {
                format!(
                    "xid,gpu={} message=\"NVRM: Xid 79, GPU has fallen off the bus ({step}/{k})\" {}\n",
                    k % 20,
                    t + step * 200 + k
                )
            })
            .collect();
        write(&db, &body).map_err(|e| e.to_string().chars().take(300).collect::<String>()).unwrap();
        step += 1;
    }
    db.maintain().unwrap();
    // One block per aligned block range the events span (an hour ago and a minute ago may straddle one).
    assert!(blocks(&db) >= 1, "the events were cut into blocks");
    assert!(db.head_bytes() < share / 2, "{} bytes left in the head", db.head_bytes());
}

#[test]
fn a_head_of_series_is_flushed_before_its_share_refuses_writes() {
    let d = tempfile::tempdir().unwrap();
    let mut o = opts(d.path());
    o.memory_limit = 8 << 20;
    // The series budget out of the way: only the head's own share is at stake here.
    o.series_budget_ratio = 10.0;
    let share = o.head_budget();
    let db = Db::open(o).unwrap();
    write_series_until(&db, share / 10 * 9);
    let h = db.shared.head.read();
    assert!(h.bytes() - h.label_bytes() < share / 4, "mostly series");
    drop(h);
    db.maintain().unwrap();
    assert!(blocks(&db) >= 1, "cut before writes are refused");
}

/// Compaction merges blocks a series at a time: series present in some blocks only, in all, and
/// overlapping in time all come out whole, in label order, with the newest block's value at a shared
/// timestamp.
#[test]
fn compaction_merges_many_series_across_blocks() {
    let d = tempfile::tempdir().unwrap();
    let db = Db::open(opts(d.path())).unwrap();
    let t0 = now_ms() - 5 * 3600 * 1000;
    let mut want: std::collections::BTreeMap<String, std::collections::BTreeMap<i64, f64>> = Default::default();
    for round in 0..4i64 {
        let mut body = String::new();
        for h in 0..30i64 {
            // Each round writes a different part of the hosts, overlapping the previous round's.
            if (h + round) % 3 == 0 {
                continue;
            }
            for k in 0..5 {
                let t = t0 + k * 1000 + (round % 2) * 2000;
                let v = (round * 100 + h) as f64;
                body.push_str(&format!("cm,host=h{h:02} v={v} {t}\n"));
                want.entry(format!("h{h:02}")).or_default().insert(t, v);
            }
        }
        write(&db, &body).unwrap();
        db.flush().unwrap();
    }
    assert_eq!(db.shared.blocks.read().len(), 1, "overlapping blocks were compacted into one");
    let got = db.select(&[Matcher::eq("__name__", "cm_v")], i64::MIN, i64::MAX).unwrap();
    let got: std::collections::BTreeMap<String, std::collections::BTreeMap<i64, f64>> = got
        .into_iter()
        .map(|s| (s.labels.get("host").unwrap().to_string(), s.samples.iter().map(|x| (x.t, x.v)).collect()))
        .collect();
    assert_eq!(got, want);
    db.close();
    let db = Db::open(opts(d.path())).unwrap();
    assert_eq!(db.select(&[Matcher::eq("__name__", "cm_v")], i64::MIN, i64::MAX).unwrap().len(), 30);
    assert_eq!(db.label_values("host", &[], i64::MIN, i64::MAX).unwrap().len(), 30);
}

/// 24 hours written an hour a block, then reopened with `max_disk_size` at half of what they take:
/// the oldest blocks go, the data directory fits, and every sample newer than the dropped hours is
/// still there (nothing acknowledged and younger than what was dropped is lost).
#[test]
fn max_disk_size_deletes_the_oldest_blocks_and_keeps_the_newest_data() {
    const HOUR: i64 = 3_600_000;
    let d = tempfile::tempdir().unwrap();
    let now = now_ms() / 10_000 * 10_000;
    let start = now - 24 * HOUR;
    let mut o = opts(d.path());
    o.compact_ranges_ms = Vec::new();
    let total = {
        let db = Db::open(o.clone()).unwrap();
        for h in 0..24 {
            let mut body = String::new();
            for t in (start + h * HOUR..start + (h + 1) * HOUR).step_by(10_000) {
                for s in 0..20 {
                    body.push_str(&format!("gpu,host=n{s} util={} {t}\n", (t / 10_000 + s) % 97));
                }
            }
            write(&db, &body).unwrap();
            db.flush().unwrap();
        }
        db.maintain().unwrap();
        let total = db.metrics().disk_bytes.get() as u64;
        db.close();
        total
    };
    o.max_disk_size = Some(total / 2);
    let db = Db::open(o).unwrap();
    db.maintain().unwrap();
    let m = db.metrics();
    assert!(m.disk_bytes.get() as u64 <= total / 2, "{} bytes over the bound {}", m.disk_bytes.get(), total / 2);
    assert!(m.blocks_deleted_size.get() > 0, "no block deleted");
    // The blocks kept hold the newest data, each whole.
    let kept_from = db.shared.blocks.read().iter().map(|b| b.meta.min_time).min().unwrap();
    assert!(kept_from > start + 6 * HOUR && kept_from < start + 18 * HOUR, "kept from {}", kept_from - start);
    for s in 0..20 {
        let got: Vec<i64> = db
            .select(&[Matcher::eq("__name__", "gpu_util"), Matcher::eq("host", format!("n{s}"))], i64::MIN, i64::MAX)
            .unwrap()
            .into_iter()
            .flat_map(|s| s.samples)
            .map(|x| x.t)
            .collect();
        let want: Vec<i64> = (kept_from..start + 24 * HOUR).step_by(10_000).collect();
        assert!(
            got == want,
            "n{s}: {} samples from {:?}, want {} from {kept_from}",
            got.len(),
            got.first(),
            want.len()
        );
    }
    assert_eq!(m.max_disk_bytes.get() as u64, total / 2);
}

/// Under a `max_disk_size` smaller than what the WAL would hold over a block range, the upkeep cuts
/// the head into blocks once the WAL and head pass a sixteenth of it, so the bound holds through the
/// writes and keeps blocks of the newest data instead of deleting each one as it is written.
#[test]
fn max_disk_size_flushes_the_head_before_the_wal_outgrows_it() {
    const HOUR: i64 = 3_600_000;
    let d = tempfile::tempdir().unwrap();
    let now = now_ms() / 10_000 * 10_000;
    let start = now - 24 * HOUR;
    let mut o = opts(d.path());
    let max = 120_000;
    o.max_disk_size = Some(max);
    let db = Db::open(o).unwrap();
    let mut written = 0;
    for step in 0..24 * 12 {
        let mut body = String::new();
        for t in (start + step * 300_000..start + (step + 1) * 300_000).step_by(10_000) {
            for s in 0..20 {
                body.push_str(&format!("gpu,host=n{s} util={} {t}\n", (t / 10_000 * 7 + s) % 97));
            }
        }
        write(&db, &body).unwrap();
        written += 1;
        db.maintain().unwrap();
        let live = flush::live_bytes(&db.shared).unwrap();
        assert!(
            live <= max / super::LIVE_REFUSE_PART,
            "after {written} writes the WAL and head hold {live} bytes of a {max} bound"
        );
        let disk = db.metrics().disk_bytes.get() as u64;
        assert!(disk <= max, "after {written} writes the directory holds {disk} bytes of a {max} bound");
    }
    let m = db.metrics();
    assert!(m.blocks_deleted_size.get() > 0, "the bound never deleted a block");
    assert!(m.compactions.get() > 0, "nothing was compacted");
    // Blocks being written beside the WAL they come from, or beside the blocks they merge, kept the bound.
    let peak = m.disk_peak_bytes.get() as u64;
    assert!(peak <= max, "the directory held {peak} bytes at once, over the {max} bound");
    // The newest data is all there, from the oldest block kept on.
    let kept_from = db.shared.blocks.read().iter().map(|b| b.meta.min_time).min().unwrap();
    assert!(kept_from < now - 2 * HOUR, "only {} ms kept", now - kept_from);
    let got = db
        .select(&[Matcher::eq("__name__", "gpu_util"), Matcher::eq("host", "n3")], kept_from, i64::MAX)
        .unwrap()
        .into_iter()
        .flat_map(|s| s.samples)
        .count();
    assert_eq!(got as i64, (now - kept_from) / 10_000);
}

/// When the WAL and the head alone pass `max_disk_size` (blocks could not be written, or the bound is
/// tiny), deleting blocks cannot help, and none is deleted.
#[test]
fn a_wal_alone_over_max_disk_size_deletes_no_block() {
    let d = tempfile::tempdir().unwrap();
    let now = now_ms() / 10_000 * 10_000;
    let mut o = opts(d.path());
    o.compact_ranges_ms = Vec::new();
    {
        let db = Db::open(o.clone()).unwrap();
        write(&db, &format!("gpu,host=a util=1 {}\n", now - 7_200_000)).unwrap();
        db.flush().unwrap();
        let mut body = String::new();
        for t in (now - 3_600_000..now).step_by(10_000) {
            for s in 0..50 {
                body.push_str(&format!("gpu,host=n{s} util={} {t}\n", t % 89));
            }
        }
        write(&db, &body).unwrap();
        db.close();
    }
    let wal: u64 = std::fs::read_dir(d.path().join("wal")).unwrap().map(|e| e.unwrap().metadata().unwrap().len()).sum();
    o.max_disk_size = Some(wal / 2);
    let db = Db::open(o).unwrap();
    let before = blocks(&db);
    flush::apply_retention(&db.shared, now_ms()).unwrap();
    assert_eq!(blocks(&db), before, "a block was deleted though it could not bring the WAL under the bound");
    assert_eq!(db.metrics().blocks_deleted_size.get(), 0);
}

/// Writes that outrun the upkeep under `max_disk_size` are refused (503) once the WAL holds over an eighth
/// of the bound, and let in again once a flush has cut it into blocks.
#[test]
fn writes_wait_while_the_wal_holds_over_an_eighth_of_max_disk_size() {
    let d = tempfile::tempdir().unwrap();
    let now = now_ms() / 10_000 * 10_000;
    let mut o = opts(d.path());
    o.max_disk_size = Some(100_000);
    let db = Db::open(o).unwrap();
    assert!(!db.over_disk());
    let mut body = String::new();
    for t in (now - 6 * 3_600_000..now).step_by(10_000) {
        for s in 0..20 {
            body.push_str(&format!("gpu,host=n{s} util={} {t}\n", (t / 10_000 * 7 + s) % 97));
        }
    }
    write(&db, &body).unwrap();
    assert!(db.over_disk(), "{} bytes of WAL and head", flush::live_bytes(&db.shared).unwrap());
    db.maintain().unwrap();
    assert!(!db.over_disk(), "still {} bytes after the flush", flush::live_bytes(&db.shared).unwrap());
}
