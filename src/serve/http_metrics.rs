//! Requests and their latency by route (`argus_http_requests_total`,
//! `argus_http_request_duration_seconds`), as Prometheus counts its own HTTP API: what a query
//! latency panel and an alert on refused queries (422 past `max_query_samples`, 503 past the
//! timeout) read.

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::sync::Arc;
use std::time::Instant;

/// Upper bounds of the latency buckets, in seconds: from a cached dashboard read to the default
/// two-minute query timeout.
const BUCKETS: [f64; 14] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Handler {
    /// The route as registered (`/api/v1/label/{name}/values`), so the label's values are bounded;
    /// `unmatched` for paths no route serves.
    handler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Outcome {
    handler: String,
    code: String,
}

#[derive(Clone)]
struct Buckets;

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        Histogram::new(BUCKETS)
    }
}

/// The counters the middleware [`track`] updates.
#[derive(Clone)]
pub struct HttpMetrics {
    requests: Family<Outcome, Counter>,
    duration: Family<Handler, Histogram, Buckets>,
}

impl HttpMetrics {
    pub fn new(registry: &mut Registry) -> Arc<HttpMetrics> {
        let m = HttpMetrics { requests: Family::default(), duration: Family::new_with_constructor(Buckets) };
        registry.register(
            "argus_http_requests",
            "HTTP requests answered, by route and status code",
            m.requests.clone(),
        );
        registry.register(
            "argus_http_request_duration_seconds",
            "Time to answer an HTTP request, by route, up to the response's headers",
            m.duration.clone(),
        );
        Arc::new(m)
    }

    fn observe(&self, handler: String, code: u16, seconds: f64) {
        self.duration.get_or_create(&Handler { handler: handler.clone() }).observe(seconds);
        self.requests.get_or_create(&Outcome { handler, code: code.to_string() }).inc();
    }
}

/// Counts each request under the route that served it, with its status code and latency.
pub async fn track(State(m): State<Arc<HttpMetrics>>, req: Request, next: Next) -> Response {
    let handler = req.extensions().get::<MatchedPath>().map_or("unmatched", |p| p.as_str()).to_string();
    let started = Instant::now();
    let response = next.run(req).await;
    m.observe(handler, response.status().as_u16(), started.elapsed().as_secs_f64());
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;

    #[tokio::test]
    async fn requests_are_counted_by_route_and_code() {
        let mut registry = Registry::default();
        let m = HttpMetrics::new(&mut registry);
        let app = axum::Router::new()
            .route("/api/v1/label/{name}/values", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(m, track));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        for path in ["/api/v1/label/job/values", "/api/v1/label/host/values", "/nowhere"] {
            let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            s.write_all(format!("GET {path} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").as_bytes())
                .await
                .unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
        }
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let mut lines: Vec<&str> = text.lines().filter(|l| l.starts_with("argus_http_requests_total")).collect();
        lines.sort();
        assert_eq!(
            lines,
            [
                r#"argus_http_requests_total{handler="/api/v1/label/{name}/values",code="200"} 2"#,
                r#"argus_http_requests_total{handler="unmatched",code="404"} 1"#,
            ]
        );
        assert!(
            text.contains(r#"argus_http_request_duration_seconds_count{handler="/api/v1/label/{name}/values"} 2"#),
            "{text}"
        );
    }
}
