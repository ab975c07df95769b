//! The Prometheus read API of a remote store, passed through: what `argus serve` answers at
//! `/api/v1/query`, `query_range`, `series`, `labels` and `label/*/values` while the data lives in
//! VictoriaMetrics, Prometheus, Mimir or Thanos. The request goes on as it came (its query string
//! and form body), with the backend's credentials and tenant header, to the first of the store's
//! URLs that answers without a server error (the failover URLs in order); the answer comes back as
//! the store gave it.
//!
//! Because requests pass through Argus' authentication first, a token confined to a label scope
//! reaches the remote store only with its matchers added to every selector (docs/auth.md).

use super::super::client;
use super::super::{BackendError, PrometheusOptions};
use super::Prometheus;
use bytes::Bytes;
use reqwest::header::{CONTENT_TYPE, HeaderValue};
use reqwest::{Method, StatusCode, Url};

/// The read endpoints passed through, relative to `…/api/v1/`.
pub const PROXIED: &[&str] = &["query", "query_range", "series", "labels", "label/*/values"];

/// A read-API pass-through to one remote store and its failover URLs.
pub struct ReadProxy {
    members: Vec<Prometheus>,
}

/// A remote store's answer: status, content type and body as it sent them.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub content_type: Option<HeaderValue>,
    pub body: Bytes,
}

impl ReadProxy {
    /// Builds the clients (reads the CA files); sends nothing.
    pub fn new(opts: &PrometheusOptions) -> Result<ReadProxy, BackendError> {
        let mut members = Vec::with_capacity(1 + opts.failover.len());
        let mut main = opts.clone();
        let failover = std::mem::take(&mut main.failover);
        members.push(Prometheus::new(main)?);
        for f in failover {
            members.push(Prometheus::new(f)?);
        }
        Ok(ReadProxy { members })
    }

    /// Forwards `method …/api/v1/{endpoint}?{query}` with `form` (a form body) to the store.
    /// `endpoint` is the path after `/api/v1/`, as received (still percent-encoded). A store that
    /// cannot be reached, or answers 5xx, gives way to the next URL; the last one's answer or error
    /// is returned.
    pub async fn forward(
        &self,
        method: &Method,
        endpoint: &str,
        query: Option<&str>,
        form: Option<Bytes>,
    ) -> Result<Answer, BackendError> {
        let mut last = None;
        for m in &self.members {
            let url = endpoint_url(&m.opts.query_url, endpoint, query)?;
            let mut req = m.request(method.clone(), &url);
            if let Some(f) = &form {
                req = req.header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(f.clone());
            }
            let answer = match client::send(&url, req).await {
                Ok(resp) => {
                    let status = resp.status();
                    let content_type = resp.headers().get(CONTENT_TYPE).cloned();
                    match resp.bytes().await {
                        Ok(body) => Ok(Answer { status, content_type, body }),
                        Err(e) => {
                            Err(BackendError::Unreachable { url: client::strip(&url), reason: client::chain(&e) })
                        }
                    }
                }
                Err(e) => Err(e),
            };
            let give_way = match &answer {
                Ok(a) => a.status.is_server_error(),
                Err(_) => true,
            };
            if !give_way {
                return answer;
            }
            last = Some(answer);
        }
        last.unwrap_or_else(|| Err(BackendError::Internal("no remote store configured".into())))
    }
}

/// `…/api/v1/{endpoint}?{query}` beside the store's query URL (`…/api/v1/query`), whatever prefix
/// its flavour puts before `/api/v1` (`/select/0/prometheus`, `/prometheus`).
fn endpoint_url(query_url: &Url, endpoint: &str, query: Option<&str>) -> Result<Url, BackendError> {
    let mut url = query_url.join(endpoint).map_err(|e| {
        BackendError::Internal(format!("{endpoint}: not a path under {}: {e}", client::strip(query_url)))
    })?;
    url.set_query(query.filter(|q| !q.is_empty()));
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_sit_beside_the_query_url_under_any_prefix() {
        let base = |u: &str| Url::parse(u).unwrap();
        let url = |q: &str, e: &str, query| endpoint_url(&base(q), e, query).unwrap().to_string();
        assert_eq!(
            url("http://vm:8428/api/v1/query", "series", Some("match[]=up")),
            "http://vm:8428/api/v1/series?match[]=up"
        );
        assert_eq!(
            url("http://vmselect:8481/select/7/prometheus/api/v1/query", "label/job/values", None),
            "http://vmselect:8481/select/7/prometheus/api/v1/label/job/values"
        );
        assert_eq!(
            url("https://mimir/prometheus/api/v1/query", "query_range", Some("")),
            "https://mimir/prometheus/api/v1/query_range"
        );
    }
}
