//! The push endpoint: `POST /progress` with one JSON report or an array of them.
//!
//! ```json
//! {"job": "llama-70b", "rank": 3, "step": 1200, "epoch": 0.4, "loss": 2.31, "learning_rate": 3e-4,
//!  "tokens_per_second": 51234, "mfu": 0.41, "eta_seconds": 5400}
//! {"job": "llama-70b", "rank": 3, "checkpoint": "start"}
//! ```
//!
//! Answers 204 once the points are queued for the sinks, 400 naming what is wrong, 401 without the
//! token `collector.training.token` (or `token_file`) sets, 503 when the collector is stopping.

use super::{Jobs, Report};
use crate::batch::Batch;
use crate::emit::{Emit, now_ms};
use argus_model::Secret;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};

/// How far ahead of this clock a report's `time` may be (the store's default `max_future` is 10 minutes).
const MAX_AHEAD_MS: i64 = 5 * 60 * 1000;

#[derive(Clone)]
struct Ctx {
    jobs: Arc<Mutex<Jobs>>,
    emit: Emit,
    token: Option<Arc<Secret>>,
}

/// The endpoint's routes over the shared job table and the agent's `Emit`; with `token`, a push without
/// `Authorization: Bearer <token>` is refused.
pub fn router(jobs: Arc<Mutex<Jobs>>, emit: Emit, token: Option<Secret>) -> axum::Router {
    let token = token.map(Arc::new);
    axum::Router::new().route("/progress", axum::routing::post(progress)).with_state(Ctx { jobs, emit, token })
}

/// Whether `headers` carry `Authorization: Bearer <want>`, compared in time that does not depend on
/// where the two differ.
fn authorized(headers: &HeaderMap, want: &Secret) -> bool {
    let given = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).unwrap_or("");
    let given = match given.split_once(' ') {
        Some((scheme, t)) if scheme.eq_ignore_ascii_case("bearer") => t.trim().as_bytes(),
        _ => return false,
    };
    let want = want.expose().as_bytes();
    given.len() == want.len() && given.iter().zip(want).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
}

/// One object or an array of them.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Body {
    One(Box<Report>),
    Many(Vec<Report>),
}

async fn progress(State(ctx): State<Ctx>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    if let Some(want) = &ctx.token
        && !authorized(&headers, want)
    {
        let reason = "this endpoint needs the collector's training token: send \"Authorization: Bearer <token>\"\n";
        return (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], reason).into_response();
    }
    let reports = match parse(&body) {
        Ok(r) => r,
        Err(reason) => return (StatusCode::BAD_REQUEST, format!("{reason}\n")).into_response(),
    };
    let now = now_ms();
    // A time in milliseconds read as seconds lands far in the future, and the store refuses the whole
    // batch it rides in (other sources' samples with it): refuse it here instead.
    if let Some(r) = reports.iter().find(|r| r.time.is_some_and(|t| t * 1000.0 > (now + MAX_AHEAD_MS) as f64)) {
        let reason = format!(
            "progress body: job {}: time {} is in the future (seconds since the epoch)\n",
            r.job,
            r.time.unwrap_or(0.0)
        );
        return (StatusCode::BAD_REQUEST, reason).into_response();
    }
    let mut batch = Batch::new();
    {
        let mut jobs = ctx.jobs.lock().unwrap_or_else(|p| p.into_inner());
        for r in &reports {
            let rank = r.rank.to_string();
            let t = r.time.map_or(now, |s| (s * 1000.0).round() as i64);
            batch.push(jobs.observe(&r.job, &rank, &r.progress(), r.checkpoint, t));
            if r.done {
                jobs.forget(&r.job, &rank);
            }
        }
    }
    if ctx.emit.send(batch).await {
        StatusCode::NO_CONTENT.into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "collector is stopping\n").into_response()
    }
}

/// The reports in a body, or why it is refused (serde's reason for the first bad report).
fn parse(body: &[u8]) -> Result<Vec<Report>, String> {
    let reports = match serde_json::from_slice::<Body>(body) {
        Ok(Body::One(r)) => vec![*r],
        Ok(Body::Many(v)) => v,
        // The untagged enum hides serde's reason; parse again as the shape it looks like to get it.
        Err(_) => {
            let err = if body.trim_ascii_start().starts_with(b"[") {
                serde_json::from_slice::<Vec<Report>>(body).err()
            } else {
                serde_json::from_slice::<Report>(body).err()
            };
            return Err(format!("progress body: {}", err.map_or("not a report".into(), |e| e.to_string())));
        }
    };
    if let Some(r) = reports.iter().find(|r| r.job.is_empty()) {
        return Err(format!("progress body: empty job (rank {})", r.rank));
    }
    Ok(reports)
}
