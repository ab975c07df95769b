//! `GET /api/openapi.json`: the OpenAPI 3.1 document of every endpoint `argus serve` answers. Each
//! crate documents its own handlers (`argus_store::http::openapi`, `argus_alertd::api::openapi`,
//! `argus_analyzer::runtime::api::document`); this module merges the parts that are being served and
//! adds what the listener itself does to every request: the scope `auth::required` asks for (401 and
//! 403) and the concurrency limit (503).
//!
//! Adding an endpoint: annotate its handler with `#[utoipa::path]` and name it in its crate's
//! `paths(...)` (for a handler in src/, in `ServeApi`'s below; a router merged only in some
//! configurations gets a flag in `Parts`); in alertd, register it with `routes!` in `api::routes`,
//! which documents what it routes. `tests.rs` fails when a route (a `.route` call) in src/, store/
//! or analyzer/ is missing from the document.

use crate::auth;
use axum::http::Method;
use axum::response::IntoResponse;
use std::sync::Arc;
use utoipa::openapi::path::{HttpMethod, Operation};
use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, Response, ResponseBuilder};
use utoipa::{OpenApi as _, PartialSchema};

/// Which routers `argus serve` merged: the document lists those only.
#[derive(Debug, Clone, Copy)]
pub struct Parts {
    /// The store role: ingest and the Prometheus query API.
    pub store: bool,
    /// The read API passed through to a remote store (without the store role).
    pub read_proxy: bool,
    pub alertd: bool,
    pub analyzer: bool,
    /// `argus serve --demo`.
    pub demo: bool,
}

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Argus",
        description = "Monitoring and intelligent alerting for GPU clusters: the Prometheus query API, \
            InfluxDB and remote-write ingest, Alertmanager's API v2, incidents and anomaly scores, on one \
            listener. docs/api.md and docs/auth.md describe them; unknown paths answer 404 and a known path \
            with another method 405 (with `Allow`), in the error shape of the API the path belongs to.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(openapi_json),
    tags((name = "argus", description = "This document")),
)]
struct ServeApi;

/// The document of the routers in `parts`, with the listener's authentication and limits.
pub fn document(parts: Parts) -> OpenApi {
    let mut doc = ServeApi::openapi();
    doc.info.version = env!("CARGO_PKG_VERSION").into();
    if parts.store {
        doc.merge(argus_store::http::openapi::document());
        doc.merge(argus_store::http::tsdb_status_document());
    } else if parts.read_proxy {
        let mut reads = argus_store::http::openapi::document();
        reads.paths.paths.retain(|path, _| argus_store::http::is_proxied(path));
        doc.merge(reads);
    }
    doc.merge(crate::status::StatusApi::openapi());
    if parts.demo {
        doc.merge(crate::demo::DemoApi::openapi());
    }
    if parts.alertd {
        doc.merge(argus_alertd::api::openapi::document());
    }
    if parts.analyzer {
        doc.merge(argus_analyzer::runtime::api::document());
    }
    listener_rules(&mut doc);
    doc
}

/// The route serving the document, built once.
pub fn router(parts: Parts) -> axum::Router {
    let json: Arc<str> = match document(parts).to_json() {
        Ok(j) => j.into(),
        // Serialising a document made of plain values cannot fail; if it ever did, say so on the route.
        Err(e) => format!("{{\"error\": {:?}}}", e.to_string()).into(),
    };
    axum::Router::new().route(
        "/api/openapi.json",
        axum::routing::get(move || {
            let json = json.clone();
            async move { openapi_json(json) }
        }),
    )
}

/// This document.
#[utoipa::path(get, path = "/api/openapi.json", tag = "argus",
    responses((status = 200, description = "The OpenAPI 3.1 document of the endpoints being served",
        body = Object, content_type = "application/json")))]
fn openapi_json(json: Arc<str>) -> axum::response::Response {
    ([(axum::http::header::CONTENT_TYPE, "application/json")], json.to_string()).into_response()
}

const BEARER: &str = "bearer";
const BASIC: &str = "basic";

/// Adds to every operation what `auth::guard` and the concurrency limit can answer, in the error shape
/// `auth::api_error` gives its path; makes operation ids unique where one handler serves two methods.
fn listener_rules(doc: &mut OpenApi) {
    let components = doc.components.get_or_insert_with(Default::default);
    components.security_schemes.insert(
        BEARER.into(),
        SecurityScheme::Http(
            Http::builder()
                .scheme(HttpAuthScheme::Bearer)
                .description(Some(
                    "An API token (`argus token new`): `Authorization: Bearer <token>`, or `Token <token>`",
                ))
                .build(),
        ),
    );
    components.security_schemes.insert(
        BASIC.into(),
        SecurityScheme::Http(
            Http::builder().scheme(HttpAuthScheme::Basic).description(Some("The token as the password")).build(),
        ),
    );
    for (path, item) in doc.paths.paths.iter_mut() {
        let ops = [
            (HttpMethod::Get, Method::GET, &mut item.get),
            (HttpMethod::Post, Method::POST, &mut item.post),
            (HttpMethod::Delete, Method::DELETE, &mut item.delete),
            (HttpMethod::Put, Method::PUT, &mut item.put),
            (HttpMethod::Patch, Method::PATCH, &mut item.patch),
        ];
        let mut ids = Vec::new();
        for (_, method, op) in ops {
            let Some(op) = op else { continue };
            if let Some(id) = &mut op.operation_id {
                if ids.contains(id) {
                    *id = format!("{id}_{}", method.as_str().to_lowercase());
                }
                ids.push(id.clone());
            }
            secure(path, &method, op);
        }
    }
}

fn secure(path: &str, method: &Method, op: &mut Operation) {
    let Some(scope) = auth::required(method, path) else {
        op.security = Some(vec![SecurityRequirement::default()]);
        return;
    };
    let scope = scope.name();
    op.security = Some(vec![SecurityRequirement::new(BEARER, [scope]), SecurityRequirement::new(BASIC, [scope])]);
    let responses = &mut op.responses.responses;
    let mut add = |code: &str, what: String| {
        responses.entry(code.into()).or_insert_with(|| RefOr::T(error_response(path, what)));
    };
    add("401", format!("No token, or one that matches none; this endpoint needs the `{scope}` scope"));
    add("403", format!("The token lacks the `{scope}` scope"));
    add("503", "Too many concurrent requests (`server.max_concurrent_requests`); retry after `Retry-After`".into());
}

/// An error in the shape `auth::api_error` answers on `path`.
fn error_response(path: &str, description: String) -> Response {
    let (content_type, schema): (&str, RefOr<utoipa::openapi::schema::Schema>) =
        if matches!(path, "/write" | "/api/v2/write" | "/api/v1/write") {
            ("application/json", Ref::from_schema_name("InfluxError").into())
        } else if path.starts_with("/api/v1/") {
            ("application/json", Ref::from_schema_name("PromError").into())
        } else if path.starts_with("/api/v2/") {
            ("application/json", String::schema())
        } else {
            ("text/plain; charset=utf-8", String::schema())
        };
    ResponseBuilder::new()
        .description(description)
        .content(content_type, ContentBuilder::new().schema(Some(schema)).build())
        .build()
}

#[cfg(test)]
mod tests;
