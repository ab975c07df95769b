//! alertd's HTTP API: Alertmanager's API v2 (`/api/v2/…`, the shapes of Alertmanager 0.25's
//! api/v2/openapi.yaml, so Prometheus, vmalert and `amtool` work unchanged) and alertd's history
//! API (`/api/v1/incidents`, `/api/v1/notifications`), and the alerts held back from notification
//! (`/api/v1/suppressed`). The engine is shared with its timer loop
//! (`runner::Shared`): posts go through the engine's lock, reads see live alerts and groups.

mod alerts;
pub mod capacity;
mod history;
pub mod openapi;
mod reload;
mod silences;
pub mod suppressed;

use crate::db::Db;
use crate::runner::Shared;
use crate::silence::Silences;
use crate::time::Timestamp;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use utoipa::OpenApi as _;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The largest request body accepted by default.
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 << 20;
/// Alerts one `POST /api/v2/alerts` may carry by default (Prometheus sends at most 64 per batch by
/// default; vmalert and storms replayed in bulk send more).
pub const DEFAULT_MAX_ALERTS_PER_REQUEST: usize = 10_000;
/// Labels one alert may carry by default, the same as a series in the store.
pub const DEFAULT_MAX_LABELS_PER_ALERT: usize = 64;

/// What the handlers share.
#[derive(Clone)]
pub struct State {
    pub engine: Shared,
    pub silences: Arc<dyn Silences>,
    pub db: Arc<Db>,
    /// The configuration file's text, for `GET /api/v2/status`; a reload replaces it.
    pub config_text: Arc<std::sync::RwLock<String>>,
    /// Re-reads the configuration (`POST /-/reload`); None where nothing can be reloaded.
    pub reload: Option<Reload>,
    pub started: Timestamp,
    pub max_body_bytes: usize,
    pub max_alerts_per_request: usize,
    pub max_labels_per_alert: usize,
    /// The cluster this replica belongs to; None when alertd runs alone.
    pub cluster: Option<crate::cluster::View>,
}

/// Re-reads and applies the configuration, all or nothing: an error leaves the running one as it was.
pub type Reload = Arc<dyn Fn() -> Result<(), String> + Send + Sync>;

/// The routes of alertd's API, each documented by its handler's `#[utoipa::path]`.
fn routes() -> OpenApiRouter<State> {
    OpenApiRouter::with_openapi(openapi::AlertdApi::openapi())
        .routes(routes!(alerts::get_alerts, alerts::post_alerts))
        .routes(routes!(alerts::get_groups))
        .routes(routes!(alerts::get_status))
        .routes(routes!(alerts::get_receivers))
        .routes(routes!(silences::get_silences, silences::post_silence))
        .routes(routes!(silences::get_silence, silences::delete_silence))
        .routes(routes!(history::get_incidents))
        .routes(routes!(history::ack_incident))
        .routes(routes!(history::silence_incident))
        .routes(routes!(history::get_notifications))
        .routes(routes!(suppressed::get_suppressed))
        .routes(routes!(reload::post_reload))
}

/// The routes of alertd's API.
pub fn router(state: State) -> Router {
    let limit = state.max_body_bytes;
    let (router, _) = routes().split_for_parts();
    router.layer(DefaultBodyLimit::max(limit)).with_state(state)
}

/// alertd's part of `/api/openapi.json`: the operations of [`router`] and [`capacity::router`].
pub fn document() -> utoipa::openapi::OpenApi {
    routes().into_openapi().merge_from(capacity::routes().into_openapi())
}

/// An API v2 error. Alertmanager answers errors with a JSON string (`BadRequest` and
/// `InternalServerError` in its openapi.yaml), so alertd does too.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    /// Outside the label scope the caller's token is confined to: 403.
    #[error("{0}")]
    Forbidden(String),
    #[error("request body larger than {0} bytes")]
    TooLarge(usize),
    /// A request past a count limit (alerts per request): 413, naming the limit.
    #[error("{0}")]
    OverLimit(String),
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::TooLarge(_) | ApiError::OverLimit(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Reads a body rejection: too large, or unreadable.
    fn from_body(r: BytesRejection, limit: usize) -> ApiError {
        if r.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::TooLarge(limit)
        } else {
            ApiError::BadRequest(format!("reading the request body: {}", r.body_text()))
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "Alertmanager API request failed");
        } else {
            tracing::debug!(%status, error = %self, "Alertmanager API request refused");
        }
        (status, axum::Json(self.to_string())).into_response()
    }
}

impl From<crate::db::DbError> for ApiError {
    fn from(e: crate::db::DbError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl From<crate::silence::StoreError> for ApiError {
    fn from(e: crate::silence::StoreError) -> Self {
        ApiError::Internal(e.to_string())
    }
}

/// Query parameters in order, repeats kept (`filter` may be given several times).
pub(crate) type Params = Vec<(String, String)>;

/// A boolean parameter; `default` when absent.
fn flag(params: &Params, name: &str, default: bool) -> Result<bool, ApiError> {
    match params.iter().rev().find(|(k, _)| k == name) {
        None => Ok(default),
        Some((_, v)) => match v.as_str() {
            "true" | "1" => Ok(true),
            "false" | "0" => Ok(false),
            other => Err(ApiError::BadRequest(format!("parameter {name}: {other:?} is not true or false"))),
        },
    }
}

/// Every `filter` parameter as matchers.
fn filters(params: &Params) -> Result<Vec<argus_model::Matcher>, ApiError> {
    let mut out = Vec::new();
    for (_, v) in params.iter().filter(|(k, _)| k == "filter") {
        out.extend(crate::config::matchers::parse(v).map_err(|e| ApiError::BadRequest(format!("filter: {e}")))?);
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
