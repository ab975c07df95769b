//! The built-in status page at `/` and `/status`: incidents and firing alerts (with acknowledge and
//! silence), the firing alerts held back from notification and why, top anomalies, forecast against actual and capacity recommendations, read from Argus' own
//! APIs by a small hand-written script. Everything is embedded in the binary; nothing is fetched from
//! elsewhere (the Content-Security-Policy says so to the browser).
//!
//! The page itself holds no data, so it is open like the health checks; the APIs it calls keep their
//! scopes, and the page sends the API token the user types (kept in the browser's localStorage) as a
//! Bearer token.

use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

const INDEX: &str = include_str!("status/index.html");
const APP_JS: &str = include_str!("status/app.js");
const STYLE_CSS: &str = include_str!("status/style.css");

fn asset(body: &'static str, content_type: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'",
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        body,
    )
}

pub fn router() -> axum::Router {
    axum::Router::new()
        .route("/", get(index))
        .route("/status", get(status))
        .route("/status/app.js", get(app_js))
        .route("/status/style.css", get(style_css))
}

/// The status page and its assets, for `GET /api/openapi.json`.
#[derive(utoipa::OpenApi)]
#[openapi(
    paths(index, status, app_js, style_css),
    tags((name = "status page", description = "The built-in status page (docs/quickstart.md)"))
)]
pub struct StatusApi;

/// The status page.
#[utoipa::path(get, path = "/", tag = "status page", operation_id = "statusPageRoot",
    responses((status = 200, description = "The status page", body = String, content_type = "text/html; charset=utf-8")))]
async fn index() -> impl IntoResponse {
    asset(INDEX, "text/html; charset=utf-8")
}

/// The status page (the same as `/`).
#[utoipa::path(get, path = "/status", tag = "status page", operation_id = "statusPage",
    responses((status = 200, description = "The status page", body = String, content_type = "text/html; charset=utf-8")))]
async fn status() -> impl IntoResponse {
    asset(INDEX, "text/html; charset=utf-8")
}

/// The status page's script.
#[utoipa::path(get, path = "/status/app.js", tag = "status page", operation_id = "statusPageScript",
    responses((status = 200, description = "The page's script", body = String,
        content_type = "text/javascript; charset=utf-8")))]
async fn app_js() -> impl IntoResponse {
    asset(APP_JS, "text/javascript; charset=utf-8")
}

/// The status page's style sheet.
#[utoipa::path(get, path = "/status/style.css", tag = "status page", operation_id = "statusPageStyle",
    responses((status = 200, description = "The page's style sheet", body = String, content_type = "text/css; charset=utf-8")))]
async fn style_css() -> impl IntoResponse {
    asset(STYLE_CSS, "text/css; charset=utf-8")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_nothing_from_elsewhere() {
        for (name, text) in [("index.html", INDEX), ("app.js", APP_JS), ("style.css", STYLE_CSS)] {
            // SVG's namespace URI is an identifier, not a fetch.
            let text = text.replace("http://www.w3.org/2000/svg", "");
            for bad in ["http://", "https://", "//cdn", "@import"] {
                assert!(!text.contains(bad), "{name} mentions {bad}");
            }
        }
        assert!(INDEX.contains("/status/app.js") && INDEX.contains("/status/style.css"));
    }
}
