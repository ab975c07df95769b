//! `POST /api/v1/scheduler/capacity`: capacity plans handed over by an analyzer in another process
//! (one in the same process hands them over directly), queued in the outbox for every scheduler
//! receiver that takes capacity plans.

use super::ApiError;
use super::history::{Success, V1Error, ok};
use super::openapi::{HistoryErrors, SCHEDULER_TAG};
use crate::deliver::OutboxNotifier;
use crate::deliver::scheduler::capacity::CapacityPlan;
use argus_store_api::openapi::PromError;
use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::{Json, Router};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The request body: the plans whose recommended capacity changed.
#[derive(Debug, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CapacityPush {
    pub plans: Vec<CapacityPlan>,
}

#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct Queued {
    /// Messages newly queued (a plan handed over again is not queued again).
    pub queued: usize,
}

/// The route, documented by its handler's `#[utoipa::path]`.
pub(super) fn routes() -> OpenApiRouter<(Arc<OutboxNotifier>, usize)> {
    OpenApiRouter::new().routes(routes!(post_capacity))
}

/// The route, sending through `notifier`'s outbox.
pub fn router(notifier: Arc<OutboxNotifier>, max_body_bytes: usize) -> Router {
    let (router, _) = routes().split_for_parts();
    router.layer(axum::extract::DefaultBodyLimit::max(max_body_bytes)).with_state((notifier, max_body_bytes))
}

/// Queues capacity plans for the scheduler receivers that take them.
#[utoipa::path(post, path = "/api/v1/scheduler/capacity", tag = SCHEDULER_TAG,
    request_body(content = CapacityPush, description = "Plans as `GET /api/v1/capacity` shows them; fields beyond `pool`, `timestamp_ms` and `recommended` (`explanation` among them, absent from earlier analyzers) pass through to the scheduler as they are"),
    responses((status = 200, description = "The plans are queued", body = Success<Queued>),
        (status = 413, description = "A body larger than `alertd.max_body_bytes` (`bad_data`)", body = PromError),
        HistoryErrors))]
pub async fn post_capacity(
    State((notifier, limit)): State<(Arc<OutboxNotifier>, usize)>,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Success<Queued>>, V1Error> {
    let body = body.map_err(|r| ApiError::from_body(r, limit))?;
    let push: CapacityPush =
        serde_json::from_slice(&body).map_err(|e| ApiError::BadRequest(format!("capacity plans: {e}")))?;
    if let Some(p) = push.plans.iter().find(|p| p.pool.is_empty()) {
        return Err(ApiError::BadRequest(format!("capacity plan at {}: empty pool", p.timestamp_ms)).into());
    }
    let queued = notifier.push_capacity(&push.plans).map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok(ok(Queued { queued }))
}
