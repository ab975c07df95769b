//! InfluxDB 2 as a backend (cargo feature `influxdb2`): line-protocol writes through the `influxdb2`
//! crate, raw selects as Flux queries. InfluxDB 2 has no PromQL: PromQL calls answer
//! [`BackendError::PromqlUnavailable`].
//!
//! Names: a series `gpu_power_watts` is written as measurement `gpu_power`, field `watts`
//! ([`super::split_name`]), and a row of measurement `m`, field `f` reads back as `m_f`, as our ingest
//! and VictoriaMetrics name line-protocol fields. Labels are tags.
//!
//! Flux reads are experimental until they have met a real InfluxDB 2 (none is installable here; they
//! are tested against the documentation's annotated-CSV examples and recorded replies). They are sent
//! with our own HTTP client and parsed by [`annotated`]: the crate's query API hides the reply's text
//! and panics on malformed values, and a remote reply must never bring the process down.
//!
//! The `influxdb2` crate brings its own older reqwest/hyper stack; it is named only in this file.

mod annotated;
mod flux;

use super::client::{self, Call};
use super::{BackendError, BoxFuture, Influxdb2Options, QueryValue, StoreBackend, lineproto};
use crate::matches;
use crate::remote_write::WriteSeries;
use crate::{Series, backend::HttpOptions};
use ::influxdb2::api::write::TimestampPrecision;
use ::influxdb2::{ClientBuilder, RequestError};
use argus_model::Matcher;
use reqwest::Url;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};

/// An InfluxDB 2 backend.
pub struct Influxdb2 {
    opts: Influxdb2Options,
    /// Writes: the `influxdb2` crate's client.
    writer: ::influxdb2::Client,
    /// Flux reads: our client, so the reply's text reaches [`annotated::parse`].
    http: reqwest::Client,
    query_url: Url,
    /// For messages: where the crate's client writes.
    write_url: Url,
}

impl Influxdb2 {
    /// Builds both clients (reads the CA file); sends nothing.
    pub fn new(opts: Influxdb2Options) -> Result<Influxdb2, BackendError> {
        let mut builder = reqwest011::Client::builder().timeout(opts.timeout);
        if let Some(path) = &opts.ca_file {
            let pem =
                std::fs::read(path).map_err(|e| BackendError::Config(format!("ca_file {}: {e}", path.display())))?;
            let certs = reqwest011::Certificate::from_pem_bundle(&pem)
                .map_err(|e| BackendError::Config(format!("ca_file {}: {}", path.display(), client::chain(&e))))?;
            for cert in certs {
                builder = builder.add_root_certificate(cert);
            }
        }
        // `with_builder` panics on a URL it cannot parse; `opts.url` is already a parsed `Url` of the
        // same `url` crate, so its text parses again.
        let writer = ClientBuilder::with_builder(builder, opts.url.as_str(), &opts.org, opts.token.expose())
            .build()
            .map_err(|e| BackendError::Config(format!("influxdb2 client: {}", client::chain(&e))))?;
        let http =
            client::build(&HttpOptions { timeout: opts.timeout, ca_file: opts.ca_file.clone(), ..Default::default() })?;
        let mut query_url = opts.url.join("api/v2/query").map_err(|e| BackendError::Config(format!("url: {e}")))?;
        query_url.query_pairs_mut().append_pair("org", &opts.org);
        let write_url = opts.url.join("api/v2/write").map_err(|e| BackendError::Config(format!("url: {e}")))?;
        Ok(Influxdb2 { opts, writer, http, query_url, write_url })
    }

    async fn write_series(&self, series: Vec<WriteSeries>) -> Result<(), BackendError> {
        if series.iter().all(|s| s.samples.is_empty()) {
            return Ok(());
        }
        let lines = lineproto::encode(&series)?;
        let url = client::strip(&self.write_url);
        let write = self.writer.write_line_protocol_with_precision(
            &self.opts.org,
            &self.opts.bucket,
            lines,
            TimestampPrecision::Milliseconds,
        );
        // The crate's client has the same timeout; this one also bounds what it does around the request.
        match tokio::time::timeout(self.opts.timeout, write).await {
            Err(_) => Err(BackendError::Unreachable { url, reason: "timed out".into() }),
            Ok(Ok(())) => Ok(()),
            Ok(Err(RequestError::Http { status, text })) => {
                Err(client::refused(&self.write_url, Call::Write, status.as_u16(), &text))
            }
            Ok(Err(RequestError::ReqwestProcessing { source })) => {
                Err(BackendError::Unreachable { url, reason: client::chain(&source.without_url()) })
            }
            Ok(Err(e)) => Err(BackendError::Internal(format!("influxdb2 write: {e}"))),
        }
    }

    async fn select_series(&self, matchers: &[Matcher], start: i64, end: i64) -> Result<Vec<Series>, BackendError> {
        if end < start {
            return Ok(Vec::new());
        }
        let body = serde_json::json!({
            "query": flux::select(&self.opts.bucket, matchers, start, end),
            "type": "flux",
            "dialect": { "header": true, "annotations": ["datatype", "group", "default"], "delimiter": "," },
        });
        let url = &self.query_url;
        let req = self
            .http
            .post(url.clone())
            .header(AUTHORIZATION, format!("Token {}", self.opts.token.expose()))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/csv")
            .body(body.to_string());
        let resp = client::send(url, req).await?;
        let body = client::body(url, Call::Query, resp).await?;
        let text = std::str::from_utf8(&body)
            .map_err(|e| BackendError::Decode { url: client::strip(url), reason: format!("not UTF-8: {e}") })?;
        let mut series = annotated::parse(text).map_err(|reason| {
            if reason.starts_with("influxdb:") {
                BackendError::BadQuery(reason)
            } else {
                BackendError::Decode { url: client::strip(url), reason }
            }
        })?;
        // Flux and PromQL regexes are both RE2, but ours decide, as on every other backend.
        series.retain(|s| matches(matchers, &s.labels));
        for s in &mut series {
            s.samples.retain(|x| x.t >= start && x.t <= end);
        }
        series.retain(|s| !s.samples.is_empty());
        Ok(series)
    }
}

impl StoreBackend for Influxdb2 {
    fn name(&self) -> &'static str {
        "influxdb2"
    }

    fn describe(&self) -> String {
        format!("influxdb2: org {:?}, bucket {:?} at {}", self.opts.org, self.opts.bucket, self.opts.url)
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

    fn query_instant<'a>(&'a self, _query: &'a str, _t: i64) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(async { Err(BackendError::PromqlUnavailable { backend: "influxdb2" }) })
    }

    fn query_range<'a>(
        &'a self,
        _query: &'a str,
        _start: i64,
        _end: i64,
        _step: i64,
    ) -> BoxFuture<'a, Result<QueryValue, BackendError>> {
        Box::pin(async { Err(BackendError::PromqlUnavailable { backend: "influxdb2" }) })
    }
}
