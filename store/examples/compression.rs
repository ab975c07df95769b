//! Measures the chunk encodings on real-shaped data: bytes per point, encode and decode speed.
//!
//! cargo run --release -p argus-store --example compression -- \
//!     [--lp DIR]... [--alibaba DIR] [--sizes 120,360,720,2880] [--sweep] [--deflate]
//!
//! `--lp DIR`: line-protocol batch files from `shared/tools/gen_lp.py`; the series is
//! `{measurement}_{field}` plus tags. `--alibaba DIR`: the extracted CSVs of Alibaba's
//! cluster-trace-v2026-GenAI; one series per file, container and request type.
//! `--sweep` also compares pco configurations stream by stream; `--deflate` adds deflate on top
//! of each chunk as a reference.

use std::collections::BTreeMap;
use std::error::Error;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::time::Instant;

use argus_store::chunk::{self, Encoding};

type Series = BTreeMap<String, (Vec<i64>, Vec<f64>)>;
type Res<T> = Result<T, Box<dyn Error>>;

fn main() -> Res<()> {
    let mut args = std::env::args().skip(1);
    let (mut lp_dirs, mut alibaba, mut sizes) = (Vec::new(), None, vec![120, 360, 720, 2880]);
    let (mut sweep, mut deflate) = (false, false);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--lp" => lp_dirs.push(args.next().ok_or("--lp needs a directory")?),
            "--alibaba" => alibaba = Some(args.next().ok_or("--alibaba needs a directory")?),
            "--sizes" => {
                let list = args.next().ok_or("--sizes needs a list")?;
                sizes = list.split(',').map(str::parse).collect::<Result<_, _>>()?;
            }
            "--sweep" => sweep = true,
            "--deflate" => deflate = true,
            other => return Err(format!("unknown argument {other}").into()),
        }
    }
    let mut datasets = Vec::new();
    for dir in &lp_dirs {
        datasets.push((format!("lp:{dir}"), read_lp_dir(Path::new(dir))?));
    }
    if let Some(dir) = &alibaba {
        for (name, series) in read_alibaba(Path::new(dir))? {
            datasets.push((format!("alibaba:{name}"), series));
        }
    }
    for (name, series) in &datasets {
        let points: usize = series.values().map(|(t, _)| t.len()).sum();
        println!("\n## {name}: {} series, {points} points", series.len());
        println!(
            "| samples/chunk | mean | Gorilla B/pt | Pco B/pt | Pco/Gorilla | Pco chunks as Gorilla | \
             Gorilla enc Mpt/s | Pco enc Mpt/s | Gorilla dec Mpt/s | Pco dec Mpt/s |"
        );
        println!("|---|---|---|---|---|---|---|---|---|---|");
        for &size in &sizes {
            let g = measure(series, size, Encoding::Gorilla, deflate);
            let p = measure(series, size, Encoding::Pco, deflate);
            println!(
                "| {size} | {:.0} | {:.3} | {:.3} | {:.2} | {:.0} % | {:.1} | {:.1} | {:.1} | {:.1} |",
                g.points as f64 / g.chunks as f64,
                g.bytes_per_point(),
                p.bytes_per_point(),
                p.bytes as f64 / g.bytes as f64,
                100.0 * p.as_gorilla as f64 / p.chunks as f64,
                g.encode_rate(),
                p.encode_rate(),
                g.decode_rate(),
                p.decode_rate(),
            );
            if deflate {
                println!(
                    "| + deflate | | {:.3} | {:.3} | | | | | | |",
                    g.deflated as f64 / g.points as f64,
                    p.deflated as f64 / p.points as f64
                );
            }
        }
        if sweep {
            sweep_pco(series, 720);
        }
    }
    if let Some((_, series)) = datasets.first() {
        day_read(series)?;
    }
    Ok(())
}

struct Stats {
    points: usize,
    chunks: usize,
    /// Chunks written as Gorilla (by `Encoding::Pco`, where Gorilla was smaller).
    as_gorilla: usize,
    bytes: usize,
    deflated: usize,
    encode_s: f64,
    decode_s: f64,
}

impl Stats {
    fn bytes_per_point(&self) -> f64 {
        self.bytes as f64 / self.points as f64
    }
    fn encode_rate(&self) -> f64 {
        self.points as f64 / self.encode_s / 1e6
    }
    fn decode_rate(&self) -> f64 {
        self.points as f64 / self.decode_s / 1e6
    }
}

/// Cuts each series into chunks of `size` samples (the last one shorter), encodes and decodes
/// them all; checks the round trip, so a bench run is also a test.
fn measure(series: &Series, size: usize, enc: Encoding, deflate: bool) -> Stats {
    let mut s = Stats { points: 0, chunks: 0, as_gorilla: 0, bytes: 0, deflated: 0, encode_s: 0.0, decode_s: 0.0 };
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let start = Instant::now();
    for (ts, vals) in series.values() {
        for (t, v) in ts.chunks(size).zip(vals.chunks(size)) {
            let mut out = Vec::new();
            chunk::encode(enc, t, v, &mut out);
            chunks.push(out);
        }
    }
    s.encode_s = start.elapsed().as_secs_f64();
    s.chunks = chunks.len();
    s.bytes = chunks.iter().map(Vec::len).sum();
    s.as_gorilla = chunks.iter().filter(|c| chunk::encoding_of(c) == Ok(Encoding::Gorilla)).count();
    if deflate {
        s.deflated = chunks.iter().map(|c| deflated_len(c)).sum();
    }
    let (mut ts, mut vals) = (Vec::with_capacity(size), Vec::with_capacity(size));
    // Decode twice and keep the faster pass: the first warms caches and the allocator.
    s.decode_s = f64::MAX;
    for _ in 0..2 {
        let start = Instant::now();
        let mut points = 0;
        for c in &chunks {
            ts.clear();
            vals.clear();
            points += chunk::decode_into(c, &mut ts, &mut vals).unwrap_or(0);
        }
        s.decode_s = s.decode_s.min(start.elapsed().as_secs_f64());
        s.points = points;
    }
    let original: usize = series.values().map(|(t, _)| t.len()).sum();
    assert_eq!(s.points, original, "{enc:?} lost points");
    let mut i = 0;
    for (t, v) in series.values() {
        for (t, v) in t.chunks(size).zip(v.chunks(size)) {
            let (dt, dv) = chunk::decode(&chunks[i]).unwrap_or_default();
            assert!(dt == t && dv.iter().zip(v).all(|(a, b)| a.to_bits() == b.to_bits()));
            i += 1;
        }
    }
    s
}

fn deflated_len(data: &[u8]) -> usize {
    let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    let _ = e.write_all(data);
    e.finish().map(|v| v.len()).unwrap_or(usize::MAX)
}

/// The read the store must serve in < 1 ms: 24 h of one series at 10 s, 12 chunks of 720.
fn day_read(series: &Series) -> Res<()> {
    let (name, (ts, vals)) = series.iter().max_by_key(|(_, (t, _))| t.len()).ok_or("no series")?;
    let n = ts.len();
    let step = ts.last().copied().unwrap_or(0) - ts[0] + 10_000;
    let day_ts: Vec<i64> = (0..8640).map(|i| ts[i % n] + (i / n) as i64 * step).collect();
    let day_vals: Vec<f64> = (0..8640).map(|i| vals[i % n]).collect();
    println!("\n## 24 h read of one series (8,640 points from {name}, tiled), 12 chunks of 720");
    for enc in [Encoding::Gorilla, Encoding::Pco] {
        let chunks: Vec<Vec<u8>> = day_ts
            .chunks(720)
            .zip(day_vals.chunks(720))
            .map(|(t, v)| {
                let mut out = Vec::new();
                chunk::encode(enc, t, v, &mut out);
                out
            })
            .collect();
        let mut times = Vec::new();
        for _ in 0..201 {
            let (mut t, mut v) = (Vec::new(), Vec::new());
            let start = Instant::now();
            for c in &chunks {
                chunk::decode_into(c, &mut t, &mut v)?;
            }
            times.push(start.elapsed().as_secs_f64() * 1e6);
        }
        times.sort_by(f64::total_cmp);
        let bytes: usize = chunks.iter().map(Vec::len).sum();
        println!("{enc:?}: {bytes} B, decode median {:.0} µs, p99 {:.0} µs", times[100], times[198]);
    }
    Ok(())
}

/// Pco configurations stream by stream, to justify the one `chunk.rs` uses.
fn sweep_pco(series: &Series, size: usize) {
    use pco::{ChunkConfig, DeltaSpec, ModeSpec, PagingSpec};
    let mut out = Vec::new();
    let mut ts_size = |cfg: &ChunkConfig| -> usize {
        series.values().flat_map(|(t, _)| t.chunks(size)).map(|c| wrapped_len(c, cfg, &mut out)).sum()
    };
    let points: usize = series.values().map(|(t, _)| t.len()).sum();
    let base = ChunkConfig::default().with_paging_spec(PagingSpec::EqualPagesUpTo(1 << 20));
    println!(
        "\npco sweep at {size} samples/chunk (bytes/point of each stream alone, no headers; \
         the chunk format stores grid timestamps without pco):"
    );
    for (name, delta) in [
        ("auto", DeltaSpec::Auto),
        ("noop", DeltaSpec::NoOp),
        ("consecutive(1)", DeltaSpec::TryConsecutive(1)),
        ("consecutive(2)", DeltaSpec::TryConsecutive(2)),
        ("lookback", DeltaSpec::TryLookback),
    ] {
        let cfg = base.clone().with_delta_spec(delta);
        println!("  timestamps delta {name:<15} {:.4}", ts_size(&cfg) as f64 / points as f64);
    }
    let mut out = Vec::new();
    let mut val_size = |cfg: &ChunkConfig| -> usize {
        series.values().flat_map(|(_, v)| v.chunks(size)).map(|c| wrapped_len(c, cfg, &mut out)).sum()
    };
    for level in [0, 4, 8, 12] {
        for (mname, mode) in [("auto", ModeSpec::Auto), ("classic", ModeSpec::Classic)] {
            for (dname, delta) in [
                ("auto", DeltaSpec::Auto),
                ("noop", DeltaSpec::NoOp),
                ("consecutive(1)", DeltaSpec::TryConsecutive(1)),
                ("lookback", DeltaSpec::TryLookback),
            ] {
                let cfg =
                    base.clone().with_compression_level(level).with_mode_spec(mode.clone()).with_delta_spec(delta);
                let start = Instant::now();
                let bytes = val_size(&cfg);
                println!(
                    "  values level {level:>2} mode {mname:<7} delta {dname:<15} {:.4} ({:.1} Mpt/s)",
                    bytes as f64 / points as f64,
                    points as f64 / start.elapsed().as_secs_f64() / 1e6
                );
            }
        }
    }
}

/// Size of one wrapped pco chunk (meta and page) for `nums`.
fn wrapped_len<T: pco::data_types::Number>(nums: &[T], cfg: &pco::ChunkConfig, out: &mut Vec<u8>) -> usize {
    out.clear();
    let fc = pco::wrapped::FileCompressor::default();
    let Ok(mut cc) = fc.chunk_compressor(nums, cfg) else {
        return 0;
    };
    if cc.write_meta(&mut *out).is_err() || cc.write_page(0, &mut *out).is_err() {
        return 0;
    }
    out.len()
}

/// Minimal line-protocol reader for gen_lp.py output: no escapes, no quoted strings.
fn read_lp_dir(dir: &Path) -> Res<Series> {
    let mut series = Series::new();
    let mut files: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    files.sort_by_key(|e| e.file_name());
    for entry in files {
        let text = fs::read_to_string(entry.path())?;
        for line in text.lines().filter(|l| !l.is_empty() && !l.starts_with('#')) {
            let mut parts = line.split(' ');
            let (Some(key), Some(fields), Some(ts)) = (parts.next(), parts.next(), parts.next()) else {
                return Err(format!("bad line: {line}").into());
            };
            let ts_ms = ts.parse::<i64>()? / 1_000_000;
            let (measurement, tags) = key.split_once(',').unwrap_or((key, ""));
            for field in fields.split(',') {
                let (name, raw) = field.split_once('=').ok_or("field without =")?;
                let value = match raw.strip_suffix('i') {
                    Some(int) => int.parse::<i64>()? as f64,
                    None => raw.parse::<f64>()?,
                };
                let s = series.entry(format!("{measurement}_{name},{tags}")).or_default();
                s.0.push(ts_ms);
                s.1.push(value);
            }
        }
    }
    Ok(series)
}

/// The monitoring CSVs of GenTD26: columns timestamp_anon (s), value, container_ip and, in
/// qps.csv, request_type, in varying order. Returns all of them together and each file alone.
fn read_alibaba(dir: &Path) -> Res<Vec<(String, Series)>> {
    let mut all = Series::new();
    let mut per_file = Vec::new();
    let mut files: Vec<_> = fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    files.sort_by_key(|e| e.file_name());
    for entry in files {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".csv") || name.starts_with("._") {
            continue;
        }
        let text = fs::read_to_string(entry.path())?;
        let mut lines = text.lines();
        let header: Vec<&str> = lines.next().unwrap_or("").split(',').collect();
        let col = |n: &str| header.iter().position(|h| *h == n);
        let (Some(tc), Some(vc)) = (col("timestamp_anon"), col("value")) else {
            continue;
        };
        let (ic, rc) = (col("container_ip"), col("request_type"));
        let mut rows: BTreeMap<String, Vec<(i64, f64)>> = BTreeMap::new();
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            let (Some(t), Some(v)) = (f.get(tc), f.get(vc)) else {
                continue;
            };
            let (Ok(t), Ok(v)) = (t.parse::<f64>(), v.parse::<f64>()) else {
                continue;
            };
            let pick = |c: Option<usize>| c.and_then(|c| f.get(c)).copied().unwrap_or("");
            let key = format!("{},{},{}", name.trim_end_matches(".csv"), pick(ic), pick(rc));
            rows.entry(key).or_default().push(((t * 1000.0).round() as i64, v));
        }
        let mut series = Series::new();
        for (key, mut pts) in rows {
            // Several rows may share a timestamp: keep the last, as a TSDB would.
            pts.sort_by_key(|p| p.0);
            let mut s: (Vec<i64>, Vec<f64>) = (Vec::new(), Vec::new());
            for (t, v) in pts {
                if s.0.last() == Some(&t) {
                    s.1.pop();
                    s.0.pop();
                }
                s.0.push(t);
                s.1.push(v);
            }
            series.insert(key, s);
        }
        all.extend(series.clone());
        per_file.push((name.trim_end_matches(".csv").to_string(), series));
    }
    let mut out = vec![("all".to_string(), all)];
    out.extend(per_file);
    Ok(out)
}
