//! `cargo run --release -p argus-alertd --example intake -- CONFIG STORM [BATCH]`: the cost of
//! `POST /api/v2/alerts` without HTTP, for profiling (`perf record -g` on it).
//!
//! Builds alertd as `argus serve` does (database, outbox, receivers, history), cuts the storm of
//! make_storm.py into batches of BATCH alerts (64 by default, Prometheus' batch size), rewrites
//! every alert's times as if its POST happened now (as bench/alertd_throughput.py does) and sends
//! the bodies through the API router on one thread. Prints alerts per second of the whole run.
//! Delivery workers are not started: notifications stay in the outbox.

use argus_alertd::api::{self, State};
use argus_alertd::clock::TokioClock;
use argus_alertd::db::{Db, DbLog, DbSilences, HistoryNotifier};
use argus_alertd::deliver::{self, Deliverer, RetryPolicy};
use argus_alertd::outbox::Outbox;
use argus_alertd::runner::Shared;
use argus_alertd::{Engine, Timestamp};
use axum::body::Body;
use axum::http::Request;
use serde_json::Value;
use std::io::BufRead;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tower::ServiceExt;

type Error = Box<dyn std::error::Error>;

fn main() -> Result<(), Error> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, storm, batch) = match args.as_slice() {
        [c, s] => (c, s, 64),
        [c, s, b] => (c, s, b.parse()?),
        _ => return Err("usage: intake CONFIG STORM [BATCH]".into()),
    };
    let now = Timestamp(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64);
    let bodies = bodies(storm, batch, now)?;
    let alerts: usize = bodies.iter().map(|(n, _)| n).sum();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(false).build()?;
    let dir = tempfile::tempdir()?;
    let elapsed = rt.block_on(async {
        let text = std::fs::read_to_string(config)?;
        let cfg = argus_alertd::config::parse(&text, config)?;
        let db = Arc::new(Db::open(dir.path())?);
        let silences = Arc::new(DbSilences::load(db.clone())?);
        let nflog = Arc::new(DbLog::load(db.clone())?);
        let outbox = Arc::new(Outbox::open(&dir.path().join(argus_alertd::db::FILE_NAME))?);
        let integrations = deliver::build_with_ledger(&cfg, db.clone())?;
        let deliverer = Deliverer::new(outbox, integrations, RetryPolicy::default());
        let notifier = Arc::new(HistoryNotifier { inner: Arc::new(deliverer.notifier()), db: db.clone() });
        let engine = Engine::new(cfg, silences.clone(), nflog, notifier);
        let state = State {
            engine: Shared::new(engine, TokioClock::starting_at(now)),
            silences,
            db,
            config_text: Arc::new(std::sync::RwLock::new(text)),
            reload: None,
            started: now,
            max_body_bytes: api::DEFAULT_MAX_BODY_BYTES,
            max_alerts_per_request: api::DEFAULT_MAX_ALERTS_PER_REQUEST,
            max_labels_per_alert: api::DEFAULT_MAX_LABELS_PER_ALERT,
            cluster: None,
        };
        let app = api::router(state);
        let start = Instant::now();
        for (_, b) in bodies {
            let req = Request::post("/api/v2/alerts").header("content-type", "application/json").body(Body::from(b))?;
            let res = app.clone().oneshot(req).await?;
            if !res.status().is_success() {
                return Err(format!("POST answered {}", res.status()).into());
            }
        }
        Ok::<Duration, Error>(start.elapsed())
    })?;
    let s = elapsed.as_secs_f64();
    eprintln!("{alerts} alerts in {s:.3} s: {:.0} alerts/s", alerts as f64 / s);
    Ok(())
}

/// The storm's alerts in stream order, cut into JSON bodies of `batch` alerts, times moved so that
/// each alert's POST happens at `now`.
fn bodies(path: &str, batch: usize, now: Timestamp) -> Result<Vec<(usize, Vec<u8>)>, Error> {
    let mut all = Vec::new();
    for line in std::io::BufReader::new(std::fs::File::open(path)?).lines() {
        let mut e: Value = serde_json::from_str(&line?)?;
        let at = Timestamp::parse_rfc3339(e["at"].as_str().ok_or("line without at")?)?;
        let shift = now.millis() - at.millis();
        let Some(alerts) = e.get_mut("alerts").and_then(Value::as_array_mut) else { continue };
        for a in alerts.iter_mut() {
            for k in ["startsAt", "endsAt"] {
                if let Some(t) = a.get(k).and_then(Value::as_str) {
                    let t = Timestamp::from_millis(Timestamp::parse_rfc3339(t)?.millis() + shift);
                    a[k] = serde_json::to_value(t)?;
                }
            }
            all.push(a.take());
        }
    }
    let mut out = Vec::new();
    for c in all.chunks(batch) {
        out.push((c.len(), serde_json::to_vec(c)?));
    }
    Ok(out)
}
