//! One HTTP POST and what its outcome means for retries; shared by every HTTP receiver.

use super::DeliverError;
use crate::receiver::{Authorization, HttpSettings, ProxySettings, SecretSource, TlsVersion};
use argus_model::Secret;
use base64::Engine;
use std::time::Duration;

/// A URL to post to. The URL is a secret: robot and webhook URLs carry access tokens.
#[derive(Debug, Clone)]
pub struct HttpTarget {
    pub client: reqwest::Client,
    /// Read at every request when it is a file (`url_file`).
    pub url: SecretSource,
    pub timeout: Duration,
    /// The `Authorization` header of `http_config`, its files read at every request.
    pub authorization: Option<Authorization>,
}

/// At most this much of an error response body is kept, for the log.
const ERROR_BODY: usize = 256;

impl HttpTarget {
    /// A target without authentication.
    pub fn new(client: reqwest::Client, url: Secret, timeout: Duration) -> HttpTarget {
        HttpTarget { client, url: SecretSource::Inline(url), timeout, authorization: None }
    }

    /// The URL, read from its file when it has one; a file that does not hold an http(s) URL is a
    /// configuration error, not retried.
    pub fn url(&self) -> Result<Secret, DeliverError> {
        let url = self.url.read().map_err(|e| DeliverError::Request(format!("url_file {e}")))?;
        if !(url.expose().starts_with("http://") || url.expose().starts_with("https://")) {
            return Err(DeliverError::Refused("url_file does not hold an http(s) URL".into()));
        }
        Ok(url)
    }

    /// Posts `body` to the target's URL; see [`HttpTarget::post`].
    pub async fn post_here(&self, key: &str, headers: &[(&str, String)], body: &[u8]) -> Result<Vec<u8>, DeliverError> {
        let url = self.url()?;
        self.post(url.expose(), key, headers, body).await
    }

    /// Posts the JSON `body` to `url` (the target's URL, or one derived from it, such as a signed
    /// one) with the `Idempotency-Key` header and `headers`; returns the body of a 2xx answer.
    pub async fn post(
        &self,
        url: &str,
        key: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Vec<u8>, DeliverError> {
        self.request(reqwest::Method::POST, url, key, headers, body).await
    }

    /// [`HttpTarget::post`] with another method (Opsgenie's updates are `PUT`s).
    pub async fn request(
        &self,
        method: reqwest::Method,
        url: &str,
        key: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Vec<u8>, DeliverError> {
        let mut req = self
            .client
            .request(method, url)
            .timeout(self.timeout)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header("Idempotency-Key", key)
            .body(body.to_vec());
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        // An integration that authenticates in its own way (Opsgenie's `GenieKey`) wins over http_config's.
        let own = headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("authorization"));
        if let Some(auth) = self.authorization.as_ref().filter(|_| !own) {
            let value = header(auth).map_err(DeliverError::Request)?;
            let mut value = reqwest::header::HeaderValue::from_str(value.expose())
                .map_err(|_| DeliverError::Refused("http_config credentials are not a valid header value".into()))?;
            value.set_sensitive(true);
            req = req.header(reqwest::header::AUTHORIZATION, value);
        }
        let resp = req.send().await.map_err(classify)?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let bytes = resp.bytes().await.map_err(classify)?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > ERROR_BODY {
            let cut = (0..=ERROR_BODY).rev().find(|&i| text.is_char_boundary(i)).unwrap_or(0);
            text.truncate(cut);
        }
        Err(DeliverError::Status { status: status.as_u16(), retry_after, body: text })
    }
}

/// reqwest's errors print the URL, which may hold a token: it is cut off before anything is kept.
pub(super) fn classify(e: reqwest::Error) -> DeliverError {
    let timeout = e.is_timeout();
    let connect = e.is_connect();
    let e = e.without_url();
    // The whole chain of causes: a TLS failure is only named at the bottom ("client error (Connect)",
    // then "invalid peer certificate: UnknownIssuer").
    let mut causes = Vec::new();
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if causes.last() != Some(&text) {
            causes.push(text);
        }
        cause = c.source();
    }
    let text = if causes.is_empty() { e.to_string() } else { causes.join(": ") };
    if timeout {
        DeliverError::Timeout
    } else if connect {
        DeliverError::Connect(text)
    } else {
        DeliverError::Request(text)
    }
}

/// The `Authorization` header's value, its files read now.
pub fn header(a: &Authorization) -> Result<Secret, String> {
    match a {
        Authorization::Scheme { scheme, credentials } => {
            let c = credentials.read().map_err(|e| format!("http_config credentials: {e}"))?;
            Ok(Secret::new(format!("{scheme} {}", c.expose())))
        }
        Authorization::Basic { username, password } => {
            let user = username.read().map_err(|e| format!("http_config basic_auth username: {e}"))?;
            let pass = match password {
                Some(p) => p.read().map_err(|e| format!("http_config basic_auth password: {e}"))?,
                None => Secret::new(""),
            };
            let pair = format!("{}:{}", user.expose(), pass.expose());
            Ok(Secret::new(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))))
        }
    }
}

/// An HTTP client for `s`: the system's CAs and `s`'s, its client certificate, TLS versions, proxy
/// and redirects. Errors name the setting (`s.field`) and the file.
pub fn client(s: &HttpSettings) -> Result<reqwest::Client, DeliverError> {
    let field = &s.field;
    let bad = |key: &str, e: &dyn std::fmt::Display| DeliverError::Request(format!("{field}.{key} {e}"));
    let mut b = reqwest::Client::builder();
    let t = &s.tls;
    if let Some(ca) = &t.ca {
        let pem = ca.read_bytes().map_err(|e| bad("tls_config.ca_file", &e))?;
        let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad("tls_config.ca_file", &e))?;
        if certs.is_empty() {
            return Err(bad("tls_config.ca_file", &format!("{}: no PEM certificate in it", ca.describe())));
        }
        b = b.tls_certs_merge(certs);
    }
    if let Some((cert, key)) = &t.client {
        let mut pem = cert.read_bytes().map_err(|e| bad("tls_config.cert_file", &e))?;
        pem.push(b'\n');
        pem.extend(key.read_bytes().map_err(|e| bad("tls_config.key_file", &e))?);
        let id =
            reqwest::Identity::from_pem(&pem).map_err(|e| bad("tls_config.cert_file", &format!("and key: {e}")))?;
        b = b.identity(id);
    }
    if t.insecure_skip_verify {
        b = b.tls_danger_accept_invalid_certs(true);
    }
    let version = |v: TlsVersion| match v {
        TlsVersion::Tls10 => reqwest::tls::Version::TLS_1_0,
        TlsVersion::Tls11 => reqwest::tls::Version::TLS_1_1,
        TlsVersion::Tls12 => reqwest::tls::Version::TLS_1_2,
        TlsVersion::Tls13 => reqwest::tls::Version::TLS_1_3,
    };
    if let Some(v) = t.min_version {
        b = b.tls_version_min(version(v));
    }
    if let Some(v) = t.max_version {
        b = b.tls_version_max(version(v));
    }
    if let ProxySettings::Url { url, no_proxy } = &s.proxy {
        let proxy = reqwest::Proxy::all(url.expose()).map_err(|_| bad("proxy_url", &"is not a proxy URL"))?;
        b = b.proxy(proxy.no_proxy(no_proxy.as_deref().and_then(reqwest::NoProxy::from_string)));
    }
    if !s.follow_redirects {
        b = b.redirect(reqwest::redirect::Policy::none());
    }
    // Checked here, at load, so a missing file is reported then rather than at the first page.
    if let Some(a) = &s.authorization {
        header(a).map_err(|e| DeliverError::Request(format!("{field}: {e}")))?;
    }
    b.build().map_err(|e| DeliverError::Request(format!("{field}: {e}")))
}

#[cfg(test)]
mod tests;
