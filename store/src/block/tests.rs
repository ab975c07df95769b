use super::writer::BlockWriter;
use super::*;
use crate::chunk::Encoding;
use crate::head::SeriesSamples;
use argus_model::{Event, Labels, MatchOp, Matcher, Sample};

/// Series selected by the matchers with their samples in [mint, maxt], in index order: the block's
/// part of what `Db::select_map` reads.
fn select(b: &Block, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<SeriesSamples>, BlockError> {
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    for (id, _) in b.lookup(matchers, mint, maxt)? {
        let mut samples = Vec::new();
        b.read(id, mint, maxt, None, &mut scratch, &mut samples)?;
        if !samples.is_empty() {
            out.push((std::sync::Arc::new(b.labels(id)?), samples));
        }
    }
    Ok(out)
}

fn series(name: &str, host: &str, n: i64) -> (std::sync::Arc<Labels>, Vec<Sample>) {
    let l = std::sync::Arc::new(Labels::from_pairs([("__name__", name), ("host", host)]));
    (l, (0..n).map(|i| Sample::new(1_000 + i * 10_000, i as f64 * 0.5)).collect())
}

/// Block `id` in `dir` holding `m{host="a"}` with `n` samples and no events; its path.
fn one_series_block(dir: &std::path::Path, encoding: Encoding, id: u64, n: i64) -> std::path::PathBuf {
    write_block(dir, encoding, Lineage::fresh(id), vec![series("m", "a", n)], Vec::new()).unwrap().unwrap().0
}

#[test]
fn write_open_select_round_trip() {
    let d = tempfile::tempdir().unwrap();
    let ev = Event {
        labels: Labels::from_pairs([("__name__", "event_message"), ("host", "a")]),
        t: 5_000,
        text: "CUDA out of memory".into(),
    };
    let (path, meta) = write_block(
        d.path(),
        Encoding::Pco,
        Lineage { id: 7, seq: 7, level: 0, sources: Vec::new() },
        vec![series("gpu_util", "a", 5000), series("gpu_util", "b", 3), series("host_load", "a", 1)],
        vec![ev.clone()],
    )
    .unwrap()
    .unwrap();
    assert_eq!(path.file_name().unwrap(), "b-000000000007");
    assert_eq!((meta.series, meta.samples, meta.chunks, meta.events), (3, 5004, 4, 1), "5000 samples make two chunks");
    let b = Block::open(&path).unwrap();
    assert_eq!(b.meta, meta);
    let got = select(&b, &[Matcher::eq("__name__", "gpu_util")], 0, i64::MAX).unwrap();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].1.len(), 5000);
    assert_eq!(got[0].1[4999], Sample::new(1_000 + 4999 * 10_000, 2499.5));
    let part = select(&b, &[Matcher::new("host", MatchOp::RegexMatch, "a").unwrap()], 11_000, 21_000).unwrap();
    assert_eq!(part.len(), 1, "host_load's only sample is outside the range");
    assert_eq!(part[0].1, vec![Sample::new(11_000, 0.5), Sample::new(21_000, 1.0)]);
    assert_eq!(b.events(&[Matcher::eq("host", "a")], 0, 10_000).unwrap(), vec![ev]);
    assert!(b.events(&[Matcher::eq("host", "b")], 0, 10_000).unwrap().is_empty());
}

#[test]
fn corrupt_index_is_reported_not_panicking() {
    let d = tempfile::tempdir().unwrap();
    let path = one_series_block(d.path(), Encoding::Gorilla, 1, 10);
    let idx = path.join("index");
    let mut data = std::fs::read(&idx).unwrap();
    let n = data.len();
    data[n / 2] ^= 0x55;
    std::fs::write(&idx, data).unwrap();
    let e = Block::open(&path).err().unwrap().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
}

#[test]
fn flipped_chunk_byte_fails_its_checksum() {
    let d = tempfile::tempdir().unwrap();
    let path = one_series_block(d.path(), Encoding::Pco, 1, 100);
    let chunks = path.join("chunks");
    let mut data = std::fs::read(&chunks).unwrap();
    let n = data.len();
    data[n - 2] ^= 0x01;
    std::fs::write(&chunks, data).unwrap();
    let b = Block::open(&path).unwrap();
    let e = select(&b, &[Matcher::eq("__name__", "m")], 0, i64::MAX).unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
    let mut out = Vec::new();
    let e = b.read(0, i64::MIN, i64::MAX, None, &mut Scratch::default(), &mut out).unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
}

/// The `index` and `events` bytes of docs/format/block.md, pinned: a change here is a format change.
#[test]
fn golden_index_and_events_bytes() {
    let d = tempfile::tempdir().unwrap();
    let ev = Event { labels: Labels::from_pairs([("__name__", "e_msg")]), t: 1_000, text: "OOM".into() };
    let lineage = Lineage { id: 3, seq: 3, level: 0, sources: Vec::new() };
    let (path, _) =
        write_block(d.path(), Encoding::Gorilla, lineage, vec![series("m", "a", 2)], vec![ev]).unwrap().unwrap();
    let hex = |f: &str| std::fs::read(path.join(f)).unwrap().iter().map(|b| format!("{b:02x}")).collect::<String>();
    expect_test::expect!["4152474902000000085f5f6e616d655f5f016104686f7374016d0200100b0901d00f904e08119d64e2a01a00000000000000000000000000000010000000010000003200000000000000090000000100000036000000000000000000000000000000010000000b000000010000000100000008000000000000002a0000000000000001000000000000003a0000000000000002000000000000005a00000000000000020000000000000095333a41"]
    .assert_eq(&hex("index"));
    expect_test::expect!["41524745010000000101085f5f6e616d655f5f05655f6d7367d00f034f4f4d9be443cd"]
        .assert_eq(&hex("events"));
}

#[test]
fn a_read_gives_every_series_in_index_order_with_all_its_samples() {
    let d = tempfile::tempdir().unwrap();
    let all: Vec<_> = (0..300).map(|h| series("gpu_util", &format!("node-{h:03}"), 50 + h)).collect();
    let (path, _) = write_block(
        d.path(),
        Encoding::Pco,
        Lineage { id: 1, seq: 1, level: 0, sources: Vec::new() },
        all.clone(),
        vec![],
    )
    .unwrap()
    .unwrap();
    let b = Block::open(&path).unwrap();
    assert_eq!(select(&b, &[Matcher::eq("__name__", "gpu_util")], 0, i64::MAX).unwrap(), all);
}

/// Every matcher kind over a block's mapped postings selects what evaluating the matchers on each
/// series' labels selects, and the label tables list every name and value.
#[test]
fn mapped_postings_select_what_the_matchers_select() {
    let d = tempfile::tempdir().unwrap();
    let mut all = Vec::new();
    for h in 0..40 {
        for g in 0..8 {
            let mut pairs = vec![("__name__", if g % 3 == 0 { "gpu_temp" } else { "gpu_util" }.to_string())];
            pairs.push(("host", format!("node-{h:02}")));
            pairs.push(("gpu", g.to_string()));
            if h % 5 == 0 {
                pairs.push(("job", format!("train-{}", h % 3)));
            }
            let l = std::sync::Arc::new(Labels::from_pairs(pairs));
            all.push((l, vec![Sample::new(1_000 + h * 10, g as f64)]));
        }
    }
    let lineage = Lineage::fresh(1);
    let (path, _) = write_block(d.path(), Encoding::Gorilla, lineage, all.clone(), vec![]).unwrap().unwrap();
    let b = Block::open(&path).unwrap();
    use MatchOp::*;
    let cases: &[&[(&str, MatchOp, &str)]] = &[
        &[("__name__", Equal, "gpu_util")],
        &[("__name__", Equal, "gpu_util"), ("host", Equal, "node-07")],
        &[("__name__", Equal, "nope")],
        &[("host", RegexMatch, "node-0[1-3]"), ("gpu", NotEqual, "0")],
        &[("__name__", RegexMatch, "gpu_.*"), ("job", Equal, "")],
        &[("job", NotEqual, ""), ("job", RegexNoMatch, "train-1")],
        &[("__name__", Equal, "gpu_temp"), ("zone", Equal, "")],
        &[("zone", RegexMatch, ".+")],
        &[("gpu", RegexMatch, "1|7"), ("host", NotEqual, "node-39")],
    ];
    for ms in cases {
        let ms: Vec<Matcher> = ms.iter().map(|(n, o, v)| Matcher::new(*n, *o, *v).unwrap()).collect();
        let want: Vec<_> = all.iter().filter(|(l, _)| crate::matches(&ms, l)).cloned().collect();
        let mut want = want;
        want.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(select(&b, &ms, i64::MIN, i64::MAX).unwrap(), want, "{ms:?}");
    }
    assert_eq!(b.label_names().unwrap(), vec!["__name__", "gpu", "host", "job"]);
    assert_eq!(b.label_values("job").unwrap(), vec!["train-0", "train-1", "train-2"]);
    assert_eq!(b.label_values("gpu").unwrap().len(), 8);
    assert!(b.label_values("zone").unwrap().is_empty());
}

/// A block written by an older release (a version 1 index, loaded whole) is rewritten as version 2
/// when opened, and reads the same.
#[test]
fn a_version_1_index_is_rewritten_at_open() {
    let d = tempfile::tempdir().unwrap();
    let path = one_series_block(d.path(), Encoding::Gorilla, 3, 2);
    // The golden version 1 index of this very block (its chunks file is unchanged between versions).
    let v1 = "415247490100000004085f5f6e616d655f5f016104686f7374016d01020003020101d00f904e08119d64e2a06582d479";
    let bytes: Vec<u8> = (0..v1.len()).step_by(2).map(|i| u8::from_str_radix(&v1[i..i + 2], 16).unwrap()).collect();
    std::fs::write(path.join("index"), bytes).unwrap();
    let b = Block::open(&path).unwrap();
    assert_eq!(select(&b, &[Matcher::eq("host", "a")], 0, i64::MAX).unwrap(), vec![series("m", "a", 2)]);
    assert_eq!(std::fs::read(path.join("index")).unwrap()[4], 2, "rewritten as version 2");
    assert!(!path.join("index.v2.tmp").exists());
    drop(b);
    let b = Block::open(&path).unwrap();
    assert_eq!(select(&b, &[Matcher::eq("host", "a")], 0, i64::MAX).unwrap(), vec![series("m", "a", 2)]);
}

/// A table of contents pointing past the index (with a CRC made to match) is refused at open, and a
/// series record pointing nowhere gives an error on read, never a panic.
#[test]
fn a_damaged_table_of_contents_or_record_is_an_error() {
    let d = tempfile::tempdir().unwrap();
    let path = one_series_block(d.path(), Encoding::Gorilla, 1, 3);
    let idx = path.join("index");
    let good = std::fs::read(&idx).unwrap();
    let rewrite = |f: &dyn Fn(&mut Vec<u8>)| {
        let mut data = good.clone();
        f(&mut data);
        let n = data.len();
        let crc = crc32fast::hash(&data[FILE_HEADER_LEN..n - 4]);
        data[n - 4..].copy_from_slice(&crc.to_le_bytes());
        std::fs::write(&idx, data).unwrap();
    };
    // The series table's offset (second toc entry) far past the end.
    rewrite(&|data| {
        let at = data.len() - 4 - INDEX_TOC_LEN + 8;
        data[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    });
    let e = Block::open(&path).err().unwrap().to_string();
    assert!(e.contains("table of contents"), "{e}");
    // The one series' record offset past the end of the index.
    rewrite(&|data| {
        let toc = data.len() - 4 - INDEX_TOC_LEN;
        let table = u64::from_le_bytes(data[toc + 8..toc + 16].try_into().unwrap()) as usize;
        data[table..table + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    });
    let b = Block::open(&path).unwrap();
    let e = select(&b, &[Matcher::eq("host", "a")], 0, i64::MAX).unwrap_err().to_string();
    assert!(e.contains("corrupt block file") && e.contains("index"), "{e}");
}

/// A writer dropped before it finishes (an error on the way) leaves no directory behind.
#[test]
fn an_unfinished_writer_removes_its_directory() {
    let d = tempfile::tempdir().unwrap();
    let mut w = BlockWriter::new(d.path(), Encoding::Pco, Lineage::fresh(5)).unwrap();
    let (l, s) = series("m", "a", 100);
    w.add_series(l, &s).unwrap();
    assert!(d.path().join("b-000000000005.tmp/chunks").exists());
    drop(w);
    assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
}
