//! A Prometheus-compatible remote store: VictoriaMetrics (single-node or cluster), Prometheus, Mimir,
//! Thanos. Writes go by Prometheus remote write or, to VictoriaMetrics, by line protocol; reads go
//! through the Prometheus HTTP API.
//!
//! A raw select is the instant query of a range selector, `{matchers}[<end-start+1>ms]` at `end`: every
//! engine answers it with the stored samples in `(end-range, end]`, which is `[start, end]`. It works the
//! same on every flavour, where VictoriaMetrics' `/api/v1/export` would be one more code path. Samples
//! are filtered to `[start, end]` again, since Prometheus 2 includes the window's left edge.

mod api;
mod proxy;

pub use proxy::{Answer, PROXIED, ReadProxy};

use super::client::{self, Call};
use super::{BackendError, BoxFuture, PrometheusOptions, QueryValue, StoreBackend, WriteProtocol, lineproto};
use crate::Series;
use crate::remote_write::{self, WriteSeries};
use argus_model::Matcher;
use argus_model::shard::Shard;
use flate2::Compression;
use flate2::write::GzEncoder;
use reqwest::Url;
use reqwest::header::{CONTENT_ENCODING, CONTENT_TYPE};
use std::io::Write;

/// A Prometheus-compatible remote backend.
pub struct Prometheus {
    opts: PrometheusOptions,
    http: reqwest::Client,
}

impl Prometheus {
    /// Builds the client (reads the CA file); sends nothing.
    pub fn new(opts: PrometheusOptions) -> Result<Prometheus, BackendError> {
        let http = client::build(&opts.http)?;
        Ok(Prometheus { opts, http })
    }

    fn post(&self, url: &Url) -> reqwest::RequestBuilder {
        self.request(reqwest::Method::POST, url)
    }

    /// A request with the store's credentials and tenant header.
    fn request(&self, method: reqwest::Method, url: &Url) -> reqwest::RequestBuilder {
        let mut req = client::with_auth(self.http.request(method, url.clone()), &self.opts.http.auth);
        if let Some((name, value)) = &self.opts.tenant_header {
            req = req.header(*name, value);
        }
        req
    }

    /// POSTs a form to a query endpoint (POST, so long queries fit) and decodes the answer.
    async fn query(&self, url: &Url, form: &[(&str, &str)], keep: api::Keep<'_>) -> Result<QueryValue, BackendError> {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
        let req = self.post(url).header(CONTENT_TYPE, "application/x-www-form-urlencoded").body(body);
        let resp = client::send(url, req).await?;
        let body = client::body(url, Call::Query, resp).await?;
        api::decode(&body, keep).map_err(|reason| BackendError::Decode { url: client::strip(url), reason })
    }

    async fn range(
        &self,
        query: &str,
        start: i64,
        end: i64,
        step: i64,
        keep: api::Keep<'_>,
        shard: Option<(Shard, &[String])>,
    ) -> Result<QueryValue, BackendError> {
        let (start, end, step) = (api::secs(start), api::secs(end), api::secs(step));
        let mut form = vec![("query", query), ("start", &start), ("end", &end), ("step", &step)];
        // Another Argus' store role answers only the shard's series (the parameters are Argus'
        // extension; other engines ignore parameters they do not know), which saves sending and
        // reading the other shards' series; `keep` filters again, whichever engine answered.
        let (shard_text, by_text);
        if let Some((shard, by)) = shard.filter(|(s, _)| s.count() > 1) {
            (shard_text, by_text) = (shard.to_string(), by.join(","));
            form.extend([("argus_shard", shard_text.as_str()), ("argus_shard_by", by_text.as_str())]);
        }
        let mut v = self.query(&self.opts.range_url, &form, keep).await?;
        // Prometheus sorts matrices by labels; not every engine does.
        if let QueryValue::Matrix(m) = &mut v {
            m.sort_by(|a, b| a.labels.cmp(&b.labels));
        }
        Ok(v)
    }

    async fn write_series(&self, series: Vec<WriteSeries>) -> Result<(), BackendError> {
        if series.iter().all(|s| s.samples.is_empty()) {
            return Ok(());
        }
        let url = &self.opts.write_url;
        let req = match self.opts.write {
            WriteProtocol::RemoteWrite => {
                let body = remote_write::encode(&series).map_err(|e| BackendError::InvalidWrite(e.to_string()))?;
                self.post(url)
                    .header(CONTENT_TYPE, "application/x-protobuf")
                    .header(CONTENT_ENCODING, "snappy")
                    .header("X-Prometheus-Remote-Write-Version", "0.1.0")
                    .body(body)
            }
            WriteProtocol::LineProtocol => {
                let lines = lineproto::encode(&series)?;
                let mut gz = GzEncoder::new(Vec::with_capacity(lines.len() / 4), Compression::fast());
                let body = gz
                    .write_all(lines.as_bytes())
                    .and_then(|()| gz.finish())
                    .map_err(|e| BackendError::Internal(format!("gzip: {e}")))?;
                let mut url = url.clone();
                url.query_pairs_mut().append_pair("precision", "ms");
                self.post(&url)
                    .header(CONTENT_TYPE, "text/plain; charset=utf-8")
                    .header(CONTENT_ENCODING, "gzip")
                    .body(body)
            }
        };
        let resp = client::send(url, req).await?;
        client::body(url, Call::Write, resp).await.map(drop)
    }

    async fn select_series(&self, matchers: &[Matcher], start: i64, end: i64) -> Result<Vec<Series>, BackendError> {
        if end < start {
            return Ok(Vec::new());
        }
        let query = format!("{}[{}ms]", api::selector(matchers)?, end.saturating_sub(start).saturating_add(1));
        let time = api::secs(end);
        match self.query(&self.opts.query_url, &[("query", &query), ("time", &time)], None).await? {
            QueryValue::Matrix(mut series) => {
                for s in &mut series {
                    s.samples.retain(|x| x.t >= start && x.t <= end);
                }
                series.retain(|s| !s.samples.is_empty());
                series.sort_by(|a, b| a.labels.cmp(&b.labels));
                Ok(series)
            }
            other => Err(BackendError::Decode {
                url: client::strip(&self.opts.query_url),
                reason: format!("a range selector answered {}, not a matrix", api::kind(&other)),
            }),
        }
    }
}

impl StoreBackend for Prometheus {
    fn name(&self) -> &'static str {
        self.opts.flavour.name()
    }

    fn describe(&self) -> String {
        let o = &self.opts;
        let write = match o.write {
            WriteProtocol::RemoteWrite => "remote write",
            WriteProtocol::LineProtocol => "line protocol",
        };
        let tenant = o.tenant_header.as_ref().map(|(h, v)| format!(", {h}: {v}")).unwrap_or_default();
        format!("{}: {write} to {}, queries at {}{tenant}", o.flavour.name(), o.write_url, o.query_url)
    }

    fn write(&self, series: Vec<WriteSeries>) -> BoxFuture<'_, Result<(), BackendError>> {
        Box::pin(self.write_series(series))
    }

    fn select<'a>(
        &'a self,
        matchers: &'a [Matcher],
        start: i64,
        end: i64,
    ) -> BoxFuture<'a, Result<Vec<Series>, BackendError>> {
        Box::pin(self.select_series(matchers, start, end))
    }

    fn query_instant<'a>(&'a self, query: &'a str, t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(
            async move { self.query(&self.opts.query_url, &[("query", query), ("time", &api::secs(t))], None).await },
        )
    }

    fn query_range<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(self.range(query, start, end, step, None, None))
    }

    /// Builds only the shard's series from the answer: the other shards' are read past, so a shard's
    /// decoding work falls with its share.
    fn query_range_shard<'a>(
        &'a self,
        query: &'a str,
        start: i64,
        end: i64,
        step: i64,
        shard: Shard,
        by: &'a [String],
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(async move {
            let keep = |m: &api::Pairs| shard.owns_by(by, |name| m.get(name));
            self.range(query, start, end, step, Some(&keep), Some((shard, by))).await
        })
    }
}
