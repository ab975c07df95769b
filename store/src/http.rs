//! The store's HTTP endpoints: ingest (InfluxDB v1/v2 line protocol, Prometheus remote write), the
//! Prometheus query API as Grafana's Prometheus data source uses it, events, flush, health and self
//! metrics. docs/api.md lists them with their parameters and deviations from Prometheus.

// Handlers return an early `Response` as their error: it is what axum sends, and boxing it buys nothing.
#![allow(clippy::result_large_err)]

mod admin;
mod body;
mod envelope;
mod ingest;
pub(crate) mod json;
pub mod openapi;
mod params;
mod proxy;
mod query;
mod status;
mod status_tsdb;

pub use params::{MAX_FORM_BYTES, carries_form};
pub use proxy::{is_proxied, read_proxy_router};
pub use status::{AlertInfo, AlertingInfo, RuleGroupInfo, RuleInfo, RuleSource};
pub use status_tsdb::document as tsdb_status_document;

use crate::Db;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

/// Matchers of a selector such as `up{job="x"}` (as `match[]` takes them).
pub fn parse_selector_matchers(s: &str) -> Result<Vec<argus_model::Matcher>, String> {
    params::parse_selector(s)
}

/// A query result in the Prometheus API's JSON envelope.
pub fn query_result_json(v: &crate::query::Value) -> String {
    json::query_result(v)
}

/// Request limits, each answered with a clear 4xx when exceeded.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest request body as sent (compressed or not): 413 beyond.
    pub max_body_bytes: usize,
    /// Largest body after decompression: 413 beyond (stops gzip bombs).
    pub max_decoded_bytes: usize,
    /// Longest line-protocol line: 400 naming the line beyond.
    pub max_line_bytes: usize,
    /// Most labels one series may carry (the name included): 400 naming the series beyond.
    pub max_labels_per_series: usize,
    /// Most line-protocol lines in one request: 413 beyond.
    pub max_lines_per_request: usize,
    /// Most series in one remote-write request: 413 beyond.
    pub max_series_per_request: usize,
    /// Bytes of request bodies being decoded at once: 429 with Retry-After beyond.
    pub max_inflight_bytes: usize,
    /// Samples one query may hold (422 beyond) and its time limit (503 beyond).
    pub query: crate::query::QueryLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_body_bytes: 64 << 20,
            max_decoded_bytes: 256 << 20,
            max_line_bytes: 1 << 20,
            max_labels_per_series: 64,
            max_lines_per_request: 1_000_000,
            max_series_per_request: 1_000_000,
            max_inflight_bytes: 256 << 20,
            query: crate::query::QueryLimits::default(),
        }
    }
}

pub struct State {
    pub db: Arc<Db>,
    pub limits: Limits,
    pub registry: Registry,
    inflight: AtomicUsize,
    /// What snapshots copy besides the store ([`State::include_in_snapshots`]).
    snapshot_parts: parking_lot::Mutex<Vec<crate::SnapshotPart>>,
    /// What `/api/v1/rules` and `/api/v1/alerts` answer ([`State::serve_rules`]); none by default.
    rules: parking_lot::RwLock<Option<Arc<dyn RuleSource>>>,
}

impl State {
    pub fn new(db: Arc<Db>, limits: Limits, mut registry: Registry) -> Arc<State> {
        db.metrics().register(&mut registry);
        // Bodies being decoded count against the same memory as the head: at most an eighth of it.
        let mut limits = limits;
        limits.max_inflight_bytes = limits.max_inflight_bytes.min((db.options().memory_limit / 8) as usize);
        Arc::new(State {
            db,
            limits,
            registry,
            inflight: AtomicUsize::new(0),
            snapshot_parts: Default::default(),
            rules: Default::default(),
        })
    }

    /// Has every later snapshot (`POST /api/v1/admin/tsdb/snapshot`) copy `part` too: state of this
    /// process kept outside the store, such as alertd's database.
    pub fn include_in_snapshots(&self, part: crate::SnapshotPart) {
        self.snapshot_parts.lock().push(part);
    }

    fn snapshot_parts(&self) -> Vec<crate::SnapshotPart> {
        self.snapshot_parts.lock().clone()
    }

    /// Has `/api/v1/rules` and `/api/v1/alerts` answer the rule groups of `rules`: the rules role
    /// running in this process.
    pub fn serve_rules(&self, rules: Arc<dyn RuleSource>) {
        *self.rules.write() = Some(rules);
    }

    fn rule_groups(&self) -> Vec<RuleGroupInfo> {
        let rules = self.rules.read().clone();
        rules.map(|r| r.rule_groups()).unwrap_or_default()
    }
}

/// The store's routes, ready to be served by the one listener of `argus serve`. It owns the fallbacks:
/// unknown paths answer 404 and known paths with another method 405, in the error shape of the API the
/// path belongs to (`envelope.rs`). Every read endpoint takes GET and form-encoded POST, a superset of
/// Prometheus (which takes only GET on some), so a client configured for POST never needs a retry.
pub fn router(state: Arc<State>) -> Router {
    let body_limit = state.limits.max_body_bytes;
    Router::new()
        .route("/api/v2/write", post(ingest::write_v2))
        .route("/write", post(ingest::write_v1))
        .route("/api/v1/write", post(ingest::remote_write))
        .route("/internal/force_flush", post(ingest::force_flush).get(ingest::force_flush))
        .route("/api/v1/admin/tsdb/snapshot", post(admin::snapshot).put(admin::snapshot))
        .route("/api/v1/events", get(query::events).post(query::events))
        .route("/api/v1/query", get(query::instant).post(query::instant))
        .route("/api/v1/query_range", get(query::range).post(query::range))
        .route("/api/v1/series", get(query::series).post(query::series))
        .route("/api/v1/labels", get(query::labels).post(query::labels))
        .route("/api/v1/label/{name}/values", get(query::label_values).post(query::label_values))
        .route("/api/v1/metadata", get(status::metadata).post(status::metadata))
        .route("/api/v1/query_exemplars", get(status::query_exemplars).post(status::query_exemplars))
        .route("/api/v1/status/buildinfo", get(status::buildinfo).post(status::buildinfo))
        .route("/api/v1/status/tsdb", get(status_tsdb::tsdb).post(status_tsdb::tsdb))
        .route("/api/v1/rules", get(status::rules).post(status::rules))
        .route("/api/v1/alerts", get(status::alerts).post(status::alerts))
        .route("/metrics", get(metrics))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
        .fallback(envelope::not_found)
        .method_not_allowed_fallback(envelope::method_not_allowed)
        .layer(DefaultBodyLimit::max(body_limit))
        .with_state(state)
}

/// Health and self metrics only: what `argus serve` answers while the data lives in a remote store.
pub fn health_router(registry: Arc<Registry>) -> Router {
    Router::new()
        .route("/metrics", get(move || std::future::ready(encode_metrics(&registry))))
        .route("/-/healthy", get(healthy))
        .route("/-/ready", get(ready))
}

/// Liveness: the process answers.
#[utoipa::path(get, path = "/-/healthy", tag = openapi::OPS_TAG,
    responses((status = 200, description = "Always", body = String, content_type = "text/plain; charset=utf-8")))]
async fn healthy() -> &'static str {
    "Argus is Healthy.\n"
}

/// Readiness: the store is open and every API is served.
#[utoipa::path(get, path = "/-/ready", tag = openapi::OPS_TAG,
    responses((status = 200, description = "Always, once listening", body = String, content_type = "text/plain; charset=utf-8")))]
async fn ready() -> &'static str {
    "Argus is Ready.\n"
}

/// Argus' own metrics (docs/metrics.md) in the OpenMetrics text format.
#[utoipa::path(get, path = "/metrics", tag = openapi::OPS_TAG,
    responses(
        (status = 200, description = "The metrics", body = String,
            content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8"),
        (status = 500, description = "Encoding failed", body = String, content_type = "text/plain; charset=utf-8"),
    ))]
async fn metrics(axum::extract::State(state): axum::extract::State<Arc<State>>) -> Response {
    encode_metrics(&state.registry)
}

fn encode_metrics(registry: &Registry) -> Response {
    let mut out = String::new();
    if let Err(e) = prometheus_client::encoding::text::encode(&mut out, registry) {
        return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response();
    }
    let ct = HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8");
    ([(header::CONTENT_TYPE, ct)], out).into_response()
}
