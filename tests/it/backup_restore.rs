//! Backups and upgrades as docs/operations.md describes them, on the real binary: a snapshot taken
//! while the server runs restores to a server that answers every query exactly as before; a data
//! directory written by v0.1.0 (tests/fixtures/datadir-v0.1.0/) opens with every sample it was given;
//! and only an admin may take a snapshot.

use crate::support::server;

use serde_json::{Value, json};
use server::{SeriesPoints, Server, THREE_TOKENS, enc, now_ms, secs};
use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

/// The store and alertd: no rules, analyzer or collector writing series of their own at the wall
/// clock, so that two reads of the same range are comparable.
const ROLES: [&str; 2] = ["--role", "store,alertd"];
const FIXTURE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/datadir-v0.1.0");

/// Copies a directory tree (files and directories only).
fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
        }
    }
}

/// The restore of docs/operations.md: the server stopped, its data directory emptied and filled with
/// `backup`, the server started again on it.
fn restore(srv: &mut Server, backup: &Path) {
    if srv.terminate().code() != Some(0) {
        panic!("argus did not stop cleanly:\n{}", srv.log());
    }
    for e in fs::read_dir(srv.data_dir()).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() { fs::remove_dir_all(&p) } else { fs::remove_file(&p) }.unwrap();
    }
    copy_dir(backup, srv.data_dir());
    srv.restart();
}

/// Waits until the upkeep has cut the head into at least one block.
fn wait_for_block(srv: &Server) {
    let deadline = Instant::now() + Duration::from_secs(30);
    let blocks = srv.data_dir().join("blocks");
    while Instant::now() < deadline {
        let cut = fs::read_dir(&blocks).unwrap().any(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.starts_with("b-") && !name.ends_with(".tmp")
        });
        if cut {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no block was cut; log:\n{}", srv.log());
}

/// `name{a="x",b="y"}` of a series' labels.
fn series_text(labels: &BTreeMap<String, String>) -> String {
    let name = labels.get("__name__").cloned().unwrap_or_default();
    let rest: Vec<String> =
        labels.iter().filter(|(k, _)| *k != "__name__").map(|(k, v)| format!("{k}=\"{v}\"")).collect();
    format!("{name}{{{}}}", rest.join(","))
}

fn snapshot(srv: &Server, headers: &[(&str, &str)]) -> server::Reply {
    srv.post("/api/v1/admin/tsdb/snapshot", headers, "")
}

fn events(srv: &Server, selector: &str, start_ms: i64, end_ms: i64) -> Value {
    let path = format!("/api/v1/events?match[]={}&start={}&end={}", enc(selector), secs(start_ms), secs(end_ms));
    srv.get(&path).success_data()
}

/// Everything a client could read back: raw samples and range queries of every series, the series
/// list, events and silences.
#[derive(Debug, PartialEq)]
struct Answers {
    raw: Vec<SeriesPoints>,
    range: Vec<SeriesPoints>,
    rate: Vec<SeriesPoints>,
    series: Vec<BTreeMap<String, String>>,
    events: Value,
    silences: Value,
}

fn answers(srv: &Server, start: i64, end: i64) -> Answers {
    let mut silences = srv.get("/api/v2/silences").json();
    if let Some(list) = silences.as_array_mut() {
        list.sort_by_key(|s| s["id"].as_str().unwrap_or_default().to_string());
    }
    Answers {
        raw: srv.raw_samples("{__name__=~\".+\"}", end, &format!("{}ms", end - start + 1)),
        range: srv.query_range("{__name__=~\".+\"}", start, end, "15s"),
        rate: srv.query_range("rate(gpu_power_watts[5m])", start, end, "60s"),
        series: srv.series("{__name__=~\".+\"}"),
        events: events(srv, "{__name__=~\".+\"}", start, end),
        silences,
    }
}

#[test]
fn a_snapshot_restores_every_answer_as_it_was() {
    let mut srv = Server::start_with(None, &ROLES);
    let end = now_ms() / 1000 * 1000;
    let start = end - 5 * 3_600_000;
    // Five hours every 30 s, three series: the first four hours are cut into blocks, the last stays in
    // the head (and the WAL) when the snapshot is taken.
    let line = |i: i64| {
        let t = start + i * 30_000;
        let (a, b) = (i as f64 * 0.1 + 1.0 / 3.0, (i % 97) as f64 * 2.5);
        format!(
            "gpu,host=a,gpu=0 power_watts={a} {t}\ngpu,host=a,gpu=1 power_watts={b} {t}\nnode,host=a load1={} {t}",
            i % 7
        )
    };
    let head_from = 4 * 120;
    let body: Vec<String> = (0..head_from).map(line).collect();
    assert_eq!(srv.write_ms(&body.join("\n")).status, 204);
    wait_for_block(&srv);
    let body: Vec<String> = (head_from..=600).map(line).collect();
    let r = srv.write_ms(&format!("{}\njob,host=a message=\"NCCL timeout on rank 3\" {}", body.join("\n"), end - 1000));
    assert_eq!(r.status, 204, "{}", r.body);
    let silence = json!({
        "matchers": [{"name": "host", "value": "a", "isRegex": false, "isEqual": true}],
        "startsAt": "2026-01-01T00:00:00Z", "endsAt": "2099-01-01T00:00:00Z",
        "createdBy": "ops", "comment": "fan swap"
    });
    let r = srv.post("/api/v2/silences", &[("content-type", "application/json")], silence.to_string());
    assert_eq!(r.status, 200, "{}", r.body);

    let before = answers(&srv, start, end);
    assert_eq!(before.raw.len(), 3);
    assert!(before.raw.iter().all(|(_, pts)| pts.len() == 601), "every sample written is read: {:?}", before.raw);
    assert_eq!(before.silences.as_array().map(Vec::len), Some(1), "{}", before.silences);

    let r = snapshot(&srv, &[]);
    let name = r.success_data()["name"].as_str().expect("a name").to_string();
    let dir = srv.data_dir().join("snapshots").join(&name);
    assert!(dir.join("blocks").is_dir() && dir.join("wal").is_dir() && dir.join("alertd.db").is_file(), "{name}");
    // After the snapshot: gone once it is restored.
    assert_eq!(srv.write_ms(&format!("gpu,host=a,gpu=0 power_watts=1 {end}")).status, 204);
    assert_ne!(answers(&srv, start, end).raw, before.raw);

    // Copied away, as a backup is; then the data directory is lost and restored from it.
    let away = tempfile::tempdir().unwrap();
    copy_dir(&dir, away.path());
    restore(&mut srv, away.path());
    let after = answers(&srv, start, end);
    assert_eq!(after, before, "the restored server answers as it did at the snapshot");
    assert!(!srv.data_dir().join("snapshots").exists(), "the snapshot holds no snapshots");

    // `skip_head` takes the blocks alone: the last hour, only in the head, is not in it.
    let r = srv.post("/api/v1/admin/tsdb/snapshot?skip_head=true", &[], "");
    let name = r.success_data()["name"].as_str().expect("a name").to_string();
    let dir = srv.data_dir().join("snapshots").join(&name);
    assert!(!dir.join("wal").exists() && dir.join("alertd.db").is_file());
    let away = tempfile::tempdir().unwrap();
    copy_dir(&dir, away.path());
    let r = srv.post("/api/v1/admin/tsdb/snapshot?skip_head=maybe", &[], "");
    assert_eq!(r.status, 400, "{}", r.body);
    assert_eq!(
        r.json()["error"],
        "unable to parse boolean 'skip_head' argument: strconv.ParseBool: parsing \"maybe\": invalid syntax"
    );
    restore(&mut srv, away.path());
    let blocks_only = answers(&srv, start, end);
    let cut = blocks_only.raw.iter().map(|(_, pts)| pts.len()).collect::<Vec<_>>();
    assert_eq!(cut, vec![head_from as usize; 3], "the samples the upkeep had cut into blocks");
    assert_eq!(blocks_only.silences, before.silences);
}

/// A line of expected-samples.txt: `<series> <unix ms> <value>`.
fn expected_samples() -> BTreeMap<String, Vec<(i64, String)>> {
    let text = fs::read_to_string(format!("{FIXTURE}/expected-samples.txt")).unwrap();
    let mut out: BTreeMap<String, Vec<(i64, String)>> = BTreeMap::new();
    for l in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = l.rsplitn(3, ' ');
        let (v, t, series) = (f.next().unwrap(), f.next().unwrap(), f.next().unwrap());
        out.entry(series.to_string()).or_default().push((t.parse().unwrap(), v.to_string()));
    }
    out
}

/// The fixture's samples as the server reads them back, by series.
fn fixture_samples(srv: &Server) -> BTreeMap<String, Vec<(i64, String)>> {
    // 2026-11-30T00:00:00Z to four hours later: the fixture's range.
    let (start, end) = (1_795_996_800_000i64, 1_795_996_800_000 + 4 * 3_600_000);
    let raw = srv.raw_samples("{__name__=~\".+\"}", end, &format!("{}ms", end - start + 1));
    raw.into_iter().map(|(labels, pts)| (series_text(&labels), pts)).collect()
}

#[test]
fn a_v0_1_0_data_directory_opens_with_every_sample() {
    // The fixture is dated 2026-11-30: a retention of a century keeps it whatever the date.
    let mut srv = Server::start_with(None, &[ROLES[0], ROLES[1], "--retention", "100y"]);
    restore(&mut srv, &Path::new(FIXTURE).join("data"));
    let want = expected_samples();
    assert_eq!(want.values().map(Vec::len).sum::<usize>(), 960, "the fixture's list");
    assert_eq!(fixture_samples(&srv), want, "0 samples missing, none changed");

    let text = fs::read_to_string(format!("{FIXTURE}/expected-events.txt")).unwrap();
    let mut want_events: Vec<String> = text.lines().filter(|l| !l.starts_with('#')).map(str::to_string).collect();
    want_events.sort();
    let got = events(&srv, "{__name__=~\".+\"}", 1_795_996_800_000, 1_795_996_800_000 + 4 * 3_600_000);
    let mut got_events = Vec::new();
    for s in got.as_array().unwrap() {
        let labels: BTreeMap<String, String> = serde_json::from_value(s["metric"].clone()).unwrap();
        for e in s["events"].as_array().unwrap() {
            let t = (e[0].as_f64().unwrap() * 1000.0).round() as i64;
            got_events.push(format!("{} {t} {}", series_text(&labels), e[1].as_str().unwrap()));
        }
    }
    got_events.sort();
    assert_eq!(got_events, want_events);

    let silences = srv.get("/api/v2/silences").json();
    let s = silences.as_array().unwrap().iter().find(|s| s["comment"] == "v0.1.0 upgrade fixture");
    let s = s.unwrap_or_else(|| panic!("the fixture's silence: {silences}"));
    assert_eq!(
        (s["id"].as_str(), s["createdBy"].as_str()),
        (Some("87b6f906-a724-40b4-95f3-2cedeb56ffa3"), Some("fixture"))
    );
    assert_eq!(s["status"]["state"], "active", "{s}");
    assert_eq!(s["matchers"], json!([{"name": "host", "value": "gpu-node-1", "isRegex": false, "isEqual": true}]));

    // The upgraded directory takes writes, and after a clean stop (the WAL's hour flushed into blocks by
    // this release) and a start, still holds every sample.
    srv.assert_healthy_and_writable(&[]);
    assert_eq!(srv.terminate().code(), Some(0), "{}", srv.log());
    srv.restart();
    assert_eq!(fixture_samples(&srv), want, "after this release flushed it");
}

#[test]
fn only_an_admin_takes_a_snapshot() {
    let srv = Server::start_with(Some(THREE_TOKENS), &ROLES);
    let r = snapshot(&srv, &[]);
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.json()["errorType"], "unauthorized");
    for (token, name) in [("Bearer reader-token", "grafana"), ("Bearer writer-token", "collectors")] {
        let r = snapshot(&srv, &[("Authorization", token)]);
        assert_eq!(r.status, 403, "{}", r.body);
        assert_eq!(
            r.json(),
            json!({"status": "error", "errorType": "forbidden", "error": format!("token \"{name}\" lacks the admin scope")})
        );
    }
    assert!(!srv.data_dir().join("snapshots").exists(), "nothing taken for a refused request");
    // A form-encoded POST, as Prometheus clients send it.
    let form = [("Authorization", "Bearer admin-token"), ("content-type", "application/x-www-form-urlencoded")];
    let r = srv.post("/api/v1/admin/tsdb/snapshot", &form, "skip_head=false");
    let name = r.success_data()["name"].as_str().expect("a name").to_string();
    assert!(srv.data_dir().join("snapshots").join(&name).join("alertd.db").is_file(), "{name}");
    let r = srv.send(reqwest::Method::GET, "/api/v1/admin/tsdb/snapshot");
    assert_eq!(r.status, 401, "a GET needs a token before it is told its method is wrong: {}", r.body);
}
