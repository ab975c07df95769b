//! The read API passed through to a remote store ([`ReadProxy`]): `argus serve` without the
//! embedded store still answers Grafana, the status page and confined tokens at the Prometheus
//! paths, from the store that holds the data.

use super::envelope::err;
use super::params::{MAX_FORM_BYTES, carries_form};
use crate::backend::ReadProxy;
use crate::backend::prometheus::PROXIED;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use std::sync::Arc;

/// The read endpoints under `/api/v1/` ([`PROXIED`]), GET and form POST, each passed to `proxy`.
pub fn read_proxy_router(proxy: Arc<ReadProxy>) -> Router {
    Router::new()
        .route("/api/v1/query", get(forward).post(forward))
        .route("/api/v1/query_range", get(forward).post(forward))
        .route("/api/v1/series", get(forward).post(forward))
        .route("/api/v1/labels", get(forward).post(forward))
        .route("/api/v1/label/{name}/values", get(forward).post(forward))
        .with_state(proxy)
}

/// Whether `path` is one of the passed-through endpoints (`/api/v1/label/job/values` is).
pub fn is_proxied(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/api/v1/") else { return false };
    PROXIED.iter().any(|p| match p.split_once('*') {
        Some((head, tail)) => rest.len() > head.len() + tail.len() && rest.starts_with(head) && rest.ends_with(tail),
        None => rest == *p,
    })
}

async fn forward(State(proxy): State<Arc<ReadProxy>>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let Some(endpoint) = parts.uri.path().strip_prefix("/api/v1/").map(str::to_string) else {
        return err(StatusCode::NOT_FOUND, "not_found", format!("{} is not a read endpoint", parts.uri.path()));
    };
    let form = if carries_form(&parts.method, &parts.headers) {
        match axum::body::to_bytes(body, MAX_FORM_BYTES).await {
            Ok(b) => Some(b),
            Err(e) => return err(StatusCode::PAYLOAD_TOO_LARGE, "bad_data", format!("form body: {e}")),
        }
    } else {
        None::<Bytes>
    };
    match proxy.forward(&parts.method, &endpoint, parts.uri.query(), form).await {
        Ok(a) => {
            let mut r = (a.status, a.body).into_response();
            if let Some(ct) = a.content_type {
                r.headers_mut().insert(header::CONTENT_TYPE, ct);
            }
            r
        }
        Err(e) => err(StatusCode::SERVICE_UNAVAILABLE, "unavailable", format!("the remote store: {e}")),
    }
}
