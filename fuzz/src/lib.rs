//! What each fuzz target does with its input, as plain functions: `fuzz_targets/*.rs` hand them
//! libFuzzer's bytes, and the main workspace's `tests/it/fuzz_corpus.rs` replays the committed seeds and
//! regressions through them as an ordinary test (no nightly). Each checks what must hold for any input:
//! no panic, and errors that say where.

use std::sync::OnceLock;
use std::time::Duration;

/// The InfluxDB line-protocol parser: any text parses or fails with errors naming input lines; what
/// parses converts to series (or is refused by name) without panicking.
pub fn line_protocol(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let lines_in = text.lines().count().max(1);
    match argus_model::lineprotocol::parse_numbered(text) {
        Ok(lines) => {
            assert!(lines.iter().all(|(n, _)| *n >= 1 && *n <= lines_in), "line number out of the input");
            let lines: Vec<_> = lines.into_iter().map(|(_, l)| l).collect();
            for p in [argus_model::lineprotocol::Precision::Nanoseconds, argus_model::lineprotocol::Precision::Seconds]
            {
                let _ = argus_model::lineprotocol::to_series(&lines, p, 1_700_000_000_000, &[("db", "fuzz")]);
            }
        }
        Err(errors) => {
            assert!(!errors.is_empty(), "a refusal names at least one error");
            assert!(errors.iter().all(|e| e.line >= 1 && e.line <= lines_in + 1), "error line out of the input");
        }
    }
}

/// The remote-write decoder: the bytes as a snappy body, and snappy-wrapped as a protobuf body, so
/// the protobuf decoding is reached too.
pub fn remote_write(data: &[u8]) {
    let _ = argus_store::remote_write::decode_with_limit(data, 1 << 20);
    if let Ok(body) = snap::raw::Encoder::new().compress_vec(data) {
        let _ = argus_store::remote_write::decode_with_limit(&body, 1 << 20);
    }
}

/// A small fixed store: three GPU series over the last ten minutes, with a gap and a stale marker.
fn store() -> &'static (argus_store::Db, i64) {
    static DB: OnceLock<(argus_store::Db, i64)> = OnceLock::new();
    DB.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("argus-fuzz-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut opts = argus_store::Options::new(&dir);
        opts.wal_sync = argus_store::WalSync::Never;
        let db = argus_store::Db::open(opts).expect("open the fuzz store");
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_millis() as i64;
        let t0 = now - 600_000;
        let mut body = String::new();
        for i in 0..40i64 {
            let t = t0 + i * 15_000;
            for (host, gpu) in [("n1", 0), ("n1", 1), ("n2", 0)] {
                if host == "n2" && (10..20).contains(&i) {
                    continue;
                }
                body.push_str(&format!(
                    "gpu,host={host},gpu={gpu} util={} ,temp_celsius={} {t}\n",
                    (i * 7 + gpu) % 101,
                    40 + i % 30
                ));
            }
        }
        let body = body.replace(" ,", ",");
        let lines = argus_model::lineprotocol::parse_numbered(&body).expect("fixture parses");
        let (nums, lines): (Vec<usize>, Vec<_>) = lines.into_iter().unzip();
        db.write_lines(&lines, &nums, argus_model::lineprotocol::Precision::Milliseconds, &[]).expect("fixture");
        // The store lives as long as the process (a static is never dropped), so its directory would
        // outlive it. Queries read the head in memory and nothing writes after the fixture, so the
        // directory goes now; the open WAL file stays valid until exit.
        let _ = std::fs::remove_dir_all(&dir);
        (db, now)
    })
}

/// The PromQL parser and evaluator: any text is a query that evaluates, or an error; instant and
/// range, under small limits so a heavy query is refused rather than slow.
pub fn promql(data: &[u8]) {
    let Ok(q) = std::str::from_utf8(data) else { return };
    if q.len() > 4096 {
        return;
    }
    if argus_store::query::check(q).is_err() {
        return;
    }
    let (db, now) = store();
    let limits =
        argus_store::query::QueryLimits { max_samples: 200_000, timeout: Duration::from_secs(2), ..Default::default() };
    let _ = argus_store::query::instant(db, q, *now, &limits);
    let _ = argus_store::query::range(db, q, now - 600_000, *now, 30_000, &limits);
}

/// alertd's YAML: parses and validates or fails naming the file; a valid one masks without panic and
/// shows none of its secrets.
pub fn alertd_config(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match argus_alertd::config::parse(text, "fuzz.yml") {
        Ok(_) => {
            let _ = argus_alertd::config::mask::masked(text);
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.yml"), "error without its file: {e}"),
    }
}

/// Prometheus rule files as alertd reads them.
pub fn rule_file(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = argus_alertd::rules::parse(text, "rules.yml") {
        assert!(e.to_string().starts_with("rules.yml"), "error without its file: {e}");
    }
}

/// `argus.toml`'s sections that live in the library crates: `[collector]` (parsed and validated) and
/// the remote store backends' `[store.remote]` and `[store.influxdb2]`.
pub fn argus_toml(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match argus_collector::config::Config::parse(text, "fuzz.toml") {
        Ok(c) => {
            let _ = c.validate("fuzz.toml");
        }
        Err(e) => assert!(e.to_string().contains("fuzz.toml"), "error without its file: {e}"),
    }
    if let Ok(spec) = toml::from_str::<argus_store::backend::RemoteSpec>(text) {
        let _ = spec.validate();
    }
    if let Ok(spec) = toml::from_str::<argus_store::backend::InfluxSpec>(text) {
        let _ = spec.validate();
    }
}

/// The alert intake (`POST /api/v2/alerts`): a JSON array of alerts, each decoded and completed as
/// the API does, or refused.
pub fn alert_intake(data: &[u8]) {
    let Ok(items) = serde_json::from_slice::<Vec<serde_json::Value>>(data) else { return };
    for v in items.into_iter().take(1000) {
        if let Ok(a) = serde_json::from_value::<argus_alertd::PostableAlert>(v)
            && let Ok(alert) = a.into_alert(argus_alertd::Timestamp(1_700_000_000_000), Duration::from_secs(300))
        {
            let _ = alert.fingerprint();
        }
    }
}

/// A block's index file: the input is its body (between header and CRC), given a valid header and
/// CRC so the decoding is reached. An even first byte makes a version 2 index (read in place), an odd
/// one a version 1 index (rewritten as version 2 at open). Opening fails with an error naming the
/// file, or the block answers matchers, labels, label tables and reads with values or errors, never
/// a panic.
pub fn block_index(data: &[u8]) {
    use argus_model::{MatchOp, Matcher};
    static DIR: OnceLock<std::path::PathBuf> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("argus-fuzz-block-{}", std::process::id())).join("b-000000000001");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("fuzz block directory");
        let meta = r#"{"version":1,"id":1,"seq":1,"min_time":0,"max_time":100000,"series":1,"samples":1,
            "chunks":1,"events":0,"level":0,"sources":[]}"#;
        std::fs::write(dir.join("meta.json"), meta).expect("meta.json");
        std::fs::write(dir.join("chunks"), b"ARGC\x01\0\0\0").expect("chunks");
        dir
    });
    let version = if data.first().is_some_and(|b| b % 2 == 1) { 1 } else { 2 };
    let mut file = vec![b'A', b'R', b'G', b'I', version, 0, 0, 0];
    file.extend_from_slice(data);
    file.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    std::fs::write(dir.join("index"), &file).expect("write index");
    let block = match argus_store::block::Block::open(dir) {
        Ok(b) => b,
        Err(e) => {
            assert!(e.to_string().contains("b-000000000001"), "an open error names the block: {e}");
            return;
        }
    };
    let matchers = [
        vec![Matcher::eq("__name__", "m")],
        vec![Matcher::new("host", MatchOp::RegexMatch, "a|b").expect("regex")],
        vec![Matcher::new("__name__", MatchOp::NotEqual, "").expect("matcher"), Matcher::eq("job", "")],
    ];
    let mut scratch = argus_store::block::Scratch::default();
    for ms in &matchers {
        let Ok(found) = block.lookup(ms, i64::MIN, i64::MAX) else { continue };
        for (id, _) in found.into_iter().take(64) {
            let _ = block.labels(id);
            let mut out = Vec::new();
            let _ = block.read(id, i64::MIN, i64::MAX, None, &mut scratch, &mut out);
        }
    }
    let _ = block.label_names();
    let _ = block.label_values("host");
    for id in 0..block.series_count().min(64) {
        let _ = block.labels(id);
    }
}
