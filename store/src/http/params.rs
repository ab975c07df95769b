//! Parsing of query parameters as Prometheus spells them: times as RFC 3339 or Unix seconds,
//! durations as seconds or `1h30m`, repeated `match[]`, `limit`, and label names escaped as `U__…`;
//! from the query string and, for a form-encoded POST, from the body.

use super::envelope::err;
use argus_model::Matcher;
use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::{HeaderMap, Method, header};
use axum::response::Response;

/// Parameters from the URL and a form body, in order, repeated names kept.
pub struct Params(pub Vec<(String, String)>);

/// Reads the URL's parameters and, as Go's `Request.ParseForm` does for Prometheus, the body's when the
/// method carries one and it is declared `application/x-www-form-urlencoded`; other bodies are ignored.
impl<S: Send + Sync> FromRequest<S> for Params {
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Params, Response> {
        let query = req.uri().query().map(str::to_owned);
        let form = carries_form(req.method(), req.headers());
        let body = Bytes::from_request(req, state).await.map_err(|e| err(e.status(), "bad_data", e.body_text()))?;
        Ok(Params::parse(query.as_deref(), if form { &body } else { &[] }))
    }
}

/// The largest form body read outside the handlers' own extractor (a confined token's rewrite, the
/// read pass-through to a remote store): a query's form is a few KiB, Grafana's longest `match[]`
/// lists far below this.
pub const MAX_FORM_BYTES: usize = 4 << 20;

/// Whether a request's body holds parameters: a form-encoded POST, PUT or PATCH, as Go's
/// `Request.ParseForm` reads it for Prometheus.
pub fn carries_form(method: &Method, headers: &HeaderMap) -> bool {
    matches!(*method, Method::POST | Method::PUT | Method::PATCH) && is_form(headers)
}

fn is_form(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/x-www-form-urlencoded"))
}

impl Params {
    pub fn parse(query: Option<&str>, body: &[u8]) -> Params {
        let mut v: Vec<(String, String)> = Vec::new();
        for src in [query.unwrap_or("").as_bytes(), body] {
            v.extend(form_urlencoded::parse(src).map(|(k, v)| (k.into_owned(), v.into_owned())));
        }
        Params(v)
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    pub fn all(&self, name: &str) -> impl Iterator<Item = &str> {
        self.0.iter().filter(move |(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// A time in milliseconds: Unix seconds (fractions allowed) or RFC 3339.
pub fn parse_time(s: &str) -> Result<i64, String> {
    if let Ok(f) = s.parse::<f64>() {
        if !f.is_finite() {
            return Err(format!("cannot parse {s:?} to a valid timestamp"));
        }
        return Ok((f * 1000.0).round() as i64);
    }
    humantime::parse_rfc3339_weak(s)
        .ok()
        .and_then(|t| {
            let d = t.duration_since(std::time::UNIX_EPOCH).ok()?;
            Some(d.as_millis() as i64)
        })
        .ok_or_else(|| format!("cannot parse {s:?} to a valid timestamp"))
}

/// A duration in milliseconds: seconds (fractions allowed) or a Prometheus duration like `1m30s`.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    if let Ok(f) = s.parse::<f64>()
        && f.is_finite()
    {
        return Ok((f * 1000.0).round() as i64);
    }
    promql_parser::util::parse_duration(s)
        .map(|d| d.as_millis() as i64)
        .map_err(|_| format!("cannot parse {s:?} to a valid duration"))
}

/// `limit` as Prometheus 3 reads it: absent or 0 means no limit; negative or not a number is an error.
pub fn parse_limit(s: Option<&str>) -> Result<Option<usize>, String> {
    match s {
        None | Some("") => Ok(None),
        Some(s) => match s.parse::<i64>() {
            Ok(0) => Ok(None),
            Ok(n) if n > 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
            Ok(_) => Err("limit must be non-negative".into()),
            Err(_) => Err(format!("cannot parse {s:?} to a valid limit")),
        },
    }
}

/// A label name from a URL path: `U__`-escaped names (Prometheus' `model.UnescapeName`, which Grafana's
/// `escapeForUtf8Support` produces for names such as `gpu.id`) decoded, others as they are. `__` stands for
/// `_` and `_<hex>_` for a code point; a name that does not decode is taken literally, as Prometheus does.
pub fn unescape_label_name(name: &str) -> String {
    let Some(rest) = name.strip_prefix("U__") else { return name.to_string() };
    let mut out = String::with_capacity(rest.len());
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        if c != '_' {
            out.push(c);
            continue;
        }
        let mut hex = String::new();
        loop {
            match chars.next() {
                Some('_') if hex.is_empty() => {
                    out.push('_');
                    break;
                }
                Some('_') => match u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                    Some(decoded) => {
                        out.push(decoded);
                        break;
                    }
                    None => return name.to_string(),
                },
                Some(h) if h.is_ascii_hexdigit() && hex.len() < 8 => hex.push(h),
                _ => return name.to_string(),
            }
        }
    }
    out
}

/// Matchers of a selector string such as `up{job="x"}`, as used by `match[]`.
pub fn parse_selector(s: &str) -> Result<Vec<Matcher>, String> {
    match crate::query::parse_expr(s) {
        Ok(promql_parser::parser::Expr::VectorSelector(vs)) => crate::query::matchers_of(&vs),
        Ok(_) => Err(format!("invalid parameter \"match[]\": {s:?} is not a series selector")),
        Err(e) => Err(format!("invalid parameter \"match[]\": {}", crate::query::parse_error(s, &e))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_durations() {
        assert_eq!(parse_time("1700000000.5"), Ok(1_700_000_000_500));
        assert_eq!(parse_time("2023-11-14T22:13:20Z"), Ok(1_700_000_000_000));
        assert_eq!(parse_time("2023-11-14T22:13:20.250Z"), Ok(1_700_000_000_250));
        assert!(parse_time("yesterday").is_err());
        assert_eq!(parse_duration("15"), Ok(15_000));
        assert_eq!(parse_duration("1m30s"), Ok(90_000));
        assert!(parse_duration("fast").is_err());
    }

    #[test]
    fn limits() {
        assert_eq!(parse_limit(None), Ok(None));
        assert_eq!(parse_limit(Some("0")), Ok(None));
        assert_eq!(parse_limit(Some("40000")), Ok(Some(40_000)));
        assert_eq!(parse_limit(Some("-1")), Err("limit must be non-negative".into()));
        assert!(parse_limit(Some("many")).is_err());
    }

    #[test]
    fn escaped_label_names() {
        // The examples of Grafana's `escapeForUtf8Support` and Prometheus' `model.EscapeName`.
        assert_eq!(unescape_label_name("U__my_20_lovely__http_2e_status:sum"), "my lovely_http.status:sum");
        assert_eq!(unescape_label_name("U__label_20_with_20__1f631_"), "label with \u{1f631}");
        assert_eq!(unescape_label_name("U__gpu_2e_id"), "gpu.id");
        assert_eq!(unescape_label_name("job"), "job");
        assert_eq!(unescape_label_name("U__bad_zz_"), "U__bad_zz_");
        assert_eq!(unescape_label_name("U__open_2e"), "U__open_2e");
    }
}
