//! The push endpoint: `POST /progress` with one JSON report or an array of them.
//!
//! ```json
//! {"job": "llama-70b", "rank": 3, "step": 1200, "epoch": 0.4, "loss": 2.31, "learning_rate": 3e-4,
//!  "tokens_per_second": 51234, "mfu": 0.41, "eta_seconds": 5400}
//! {"job": "llama-70b", "rank": 3, "checkpoint": "start"}
//! ```
//!
//! Answers 204 once the points are queued for the sinks, 400 naming what is wrong, 503 when the
//! collector is stopping.

use super::{Jobs, Report};
use crate::batch::Batch;
use crate::emit::{Emit, now_ms};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::{Arc, Mutex};

/// How far ahead of this clock a report's `time` may be (the store's default `max_future` is 10 minutes).
const MAX_AHEAD_MS: i64 = 5 * 60 * 1000;

#[derive(Clone)]
struct Ctx {
    jobs: Arc<Mutex<Jobs>>,
    emit: Emit,
}

/// The endpoint's routes over the shared job table and the agent's `Emit`.
pub fn router(jobs: Arc<Mutex<Jobs>>, emit: Emit) -> axum::Router {
    axum::Router::new().route("/progress", axum::routing::post(progress)).with_state(Ctx { jobs, emit })
}

/// One object or an array of them.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Body {
    One(Box<Report>),
    Many(Vec<Report>),
}

async fn progress(State(ctx): State<Ctx>, body: axum::body::Bytes) -> Response {
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
