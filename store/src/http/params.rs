//! Parsing of query parameters as Prometheus spells them: times as RFC 3339 or Unix seconds,
//! durations as seconds or `1h30m`, repeated `match[]`; from the query string and, for POST, from
//! a form-encoded body.

use argus_model::Matcher;

/// Parameters from the URL and a form body, in order, repeated names kept.
pub struct Params(pub Vec<(String, String)>);

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

/// Matchers of a selector string such as `up{job="x"}`, as used by `match[]`.
pub fn parse_selector(s: &str) -> Result<Vec<Matcher>, String> {
    match promql_parser::parser::parse(s) {
        Ok(promql_parser::parser::Expr::VectorSelector(vs)) => crate::query::matchers_of(&vs),
        Ok(_) => Err(format!("invalid parameter \"match[]\": {s:?} is not a series selector")),
        Err(e) => Err(format!("invalid parameter \"match[]\": {e}")),
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
}
