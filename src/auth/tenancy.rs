//! Tokens confined to a share of the series (`[[auth.tokens]] matchers = ['cluster="a"']`).
//!
//! A confined token reaches only the endpoints [`SCOPED`] names; every other one answers 403, so an
//! endpoint added later is closed to such tokens until someone decides how to confine it. On the
//! endpoints that read series, the request is rewritten before any handler (or remote store) sees it,
//! as prom-label-proxy rewrites it: the scope's matchers are added to every selector of `query` and of
//! each `match[]`, in the URL and in a form-encoded body alike. Writes, alerts and silences are
//! checked by their handlers, which find the scope in the request's extensions
//! (`Extension<Arc<LabelScope>>`).

use super::{Auth, api_error};
use argus_store::http::{MAX_FORM_BYTES, carries_form};
use argus_store_api::LabelScope;
use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

/// How an endpoint serves a confined token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confine {
    /// Holds nothing of any team (build information, the always-empty metadata, alertd's cluster
    /// status and receiver names).
    Shared,
    /// PromQL in `query`: every selector gets the scope's matchers.
    Query,
    /// Series selectors in `match[]`: each gets the scope's matchers; without one, the scope itself
    /// is the selector.
    Match,
    /// The handler confines: writes and alerts outside the scope are refused, lists are filtered,
    /// silences carry the scope's matchers.
    Handler,
}

/// The endpoints a confined token may call, and how each is confined; the first row whose method
/// and path match decides (`*` is one path segment). docs/auth.md prints this table and a test holds
/// the two together.
pub const SCOPED: &[(Option<Method>, &str, Confine)] = &[
    (None, "/api/v1/query", Confine::Query),
    (None, "/api/v1/query_range", Confine::Query),
    (None, "/api/v1/query_exemplars", Confine::Query),
    (None, "/api/v1/series", Confine::Match),
    (None, "/api/v1/labels", Confine::Match),
    (None, "/api/v1/label/*/values", Confine::Match),
    (None, "/api/v1/events", Confine::Match),
    (None, "/api/v1/status/tsdb", Confine::Match),
    (Some(Method::GET), "/api/v1/suppressed", Confine::Match),
    (None, "/api/v1/status/buildinfo", Confine::Shared),
    // Argus keeps no metric metadata: the answer is always empty, and Grafana asks for it.
    (None, "/api/v1/metadata", Confine::Shared),
    (None, "/api/v2/write", Confine::Handler),
    (None, "/write", Confine::Handler),
    (None, "/api/v1/write", Confine::Handler),
    (None, "/api/v2/alerts", Confine::Handler),
    (Some(Method::GET), "/api/v2/alerts/groups", Confine::Handler),
    (None, "/api/v2/silences", Confine::Handler),
    (None, "/api/v2/silence/*", Confine::Handler),
    (None, "/api/v1/alerts", Confine::Handler),
    (None, "/api/v1/rules", Confine::Handler),
    (Some(Method::GET), "/api/v2/status", Confine::Shared),
    (Some(Method::GET), "/api/v2/receivers", Confine::Shared),
];

/// How `method path` serves a confined token; `None`: it does not.
pub fn confinement(method: &Method, path: &str) -> Option<Confine> {
    SCOPED
        .iter()
        .find(|(m, p, _)| m.as_ref().is_none_or(|m| m == method) && super::path_matches(p, path))
        .map(|(_, _, c)| *c)
}

/// Passes `req` on confined to `scope`, or answers why it cannot be.
pub async fn confine(auth: &Auth, token: &str, scope: &Arc<LabelScope>, req: Request, next: Next) -> Response {
    let path = req.uri().path().to_string();
    let Some(how) = confinement(req.method(), &path) else {
        auth.refused("labels");
        return api_error(
            StatusCode::FORBIDDEN,
            &path,
            "forbidden",
            format!(
                "token {token:?} is confined to the series {scope}, and {} {path} cannot be confined: it is \
                 refused to such tokens (docs/auth.md, \"Tenancy\")",
                req.method()
            ),
        );
    };
    let mut req = match how {
        Confine::Shared | Confine::Handler => req,
        Confine::Query | Confine::Match => match rewrite(scope, req, how).await {
            Ok(r) => r,
            Err((status, msg)) => return api_error(status, &path, "bad_data", msg),
        },
    };
    req.extensions_mut().insert(scope.clone());
    next.run(req).await
}

/// `req` with `query` or every `match[]` restricted to `scope`, in its URL and its form body.
async fn rewrite(scope: &LabelScope, req: Request, how: Confine) -> Result<Request, (StatusCode, String)> {
    let (mut parts, body) = req.into_parts();
    let form = carries_form(&parts.method, &parts.headers);
    let (body, form) = if form {
        let bytes = axum::body::to_bytes(body, MAX_FORM_BYTES).await.map_err(|e| {
            (StatusCode::PAYLOAD_TOO_LARGE, format!("form body unreadable or over {MAX_FORM_BYTES} bytes: {e}"))
        })?;
        (Body::empty(), Some(restrict_pairs(scope, &bytes, how)?))
    } else {
        // Any other body is not read for parameters, so it passes untouched.
        (body, None)
    };
    let mut query = restrict_pairs(scope, parts.uri.query().unwrap_or("").as_bytes(), how)?;
    // A lookup with no `match[]` anywhere is answered for the scope itself.
    let has_match = |pairs: &str| form_urlencoded::parse(pairs.as_bytes()).any(|(k, _)| k == "match[]");
    if how == Confine::Match && !has_match(&query) && !form.as_deref().is_some_and(has_match) {
        let extra = form_urlencoded::Serializer::new(String::new()).append_pair("match[]", &scope.selector()).finish();
        query = if query.is_empty() { extra } else { format!("{query}&{extra}") };
    }
    let path = parts.uri.path();
    let uri = if query.is_empty() { path.to_string() } else { format!("{path}?{query}") };
    parts.uri = uri.parse::<Uri>().map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid request URI: {e}")))?;
    let body = match form {
        Some(f) => {
            parts.headers.remove(header::TRANSFER_ENCODING);
            parts.headers.insert(header::CONTENT_LENGTH, HeaderValue::from(f.len()));
            Body::from(f)
        }
        None => body,
    };
    Ok(Request::from_parts(parts, body))
}

/// `pairs` (URL-encoded) with each `query` (for [`Confine::Query`]) or `match[]` (for
/// [`Confine::Match`]) restricted to `scope`; other parameters as they were.
fn restrict_pairs(scope: &LabelScope, pairs: &[u8], how: Confine) -> Result<String, (StatusCode, String)> {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in form_urlencoded::parse(pairs) {
        let restricted = match (how, k.as_ref()) {
            (Confine::Query, "query") => scope.restrict_query(&v),
            (Confine::Match, "match[]") => scope.restrict_selector(&v),
            _ => Ok(v.into_owned()),
        }
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid parameter {k:?}: {e}")))?;
        out.append_pair(&k, &restricted);
    }
    Ok(out.finish())
}
