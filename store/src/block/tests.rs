use super::*;
use crate::chunk::Encoding;
use crate::head::SeriesSamples;
use argus_model::{Event, Labels, MatchOp, Matcher, Sample};

/// Series selected by the matchers with their samples in [mint, maxt], in index order: the block's
/// part of what `Db::select_map` reads.
fn select(b: &Block, matchers: &[Matcher], mint: i64, maxt: i64) -> Result<Vec<SeriesSamples>, BlockError> {
    let mut scratch = Scratch::default();
    let mut out = Vec::new();
    for (id, _) in b.lookup(matchers, mint, maxt) {
        let mut samples = Vec::new();
        b.read(id, mint, maxt, None, &mut scratch, &mut samples)?;
        if !samples.is_empty() {
            out.push((b.labels(id).clone(), samples));
        }
    }
    Ok(out)
}

fn series(name: &str, host: &str, n: i64) -> (std::sync::Arc<Labels>, Vec<Sample>) {
    let l = std::sync::Arc::new(Labels::from_pairs([("__name__", name), ("host", host)]));
    (l, (0..n).map(|i| Sample::new(1_000 + i * 10_000, i as f64 * 0.5)).collect())
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
    let (path, _) = write_block(
        d.path(),
        Encoding::Gorilla,
        Lineage { id: 1, seq: 1, level: 0, sources: Vec::new() },
        vec![series("m", "a", 10)],
        Vec::new(),
    )
    .unwrap()
    .unwrap();
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
    let lineage = Lineage { id: 1, seq: 1, level: 0, sources: Vec::new() };
    let (path, _) =
        write_block(d.path(), Encoding::Pco, lineage, vec![series("m", "a", 100)], Vec::new()).unwrap().unwrap();
    let chunks = path.join("chunks");
    let mut data = std::fs::read(&chunks).unwrap();
    let n = data.len();
    data[n - 2] ^= 0x01;
    std::fs::write(&chunks, data).unwrap();
    let b = Block::open(&path).unwrap();
    let e = select(&b, &[Matcher::eq("__name__", "m")], 0, i64::MAX).unwrap_err().to_string();
    assert!(e.contains("checksum mismatch"), "{e}");
    assert!(b.all_series().unwrap_err().to_string().contains("checksum mismatch"));
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
    expect_test::expect![
        "415247490100000004085f5f6e616d655f5f016104686f7374016d01020003020101d00f904e08119d64e2a06582d479"
    ]
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
