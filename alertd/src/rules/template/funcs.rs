//! The functions a template can call: Go text/template's built-ins (`and`, `or` run in `exec`),
//! and for rule templates Prometheus' template functions (prometheus/template/template.go, 2.42),
//! for notification templates Alertmanager's (alertmanager/template/template.go, 0.25:
//! `toUpper`, `toLower`, `title`, `join`, `match`, `safeHtml`, `reReplaceAll`, `stringSlice`), with
//! their argument rules and error messages.

use super::QueryFn;
use super::fmt::{fmt_g, go_quote, sprintf};
use super::value::{Sample, Value};
use std::collections::BTreeMap;
use std::rc::Rc;

/// Which function set a template sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// Prometheus' alerting rule templates.
    Rules,
    /// Alertmanager's notification templates.
    Notify,
}

/// Go text/template's built-ins, in both dialects.
const BUILTINS: &[&str] = &[
    "and", "or", "not", "len", "index", "print", "printf", "println", "eq", "ne", "lt", "le", "gt", "ge", "html", "js",
    "urlquery",
];

/// Alertmanager 0.25's `DefaultFuncs`.
const ALERTMANAGER: &[&str] =
    &["toUpper", "toLower", "title", "join", "match", "safeHtml", "reReplaceAll", "stringSlice"];

const NAMES: &[&str] = &[
    // text/template
    "and",
    "or",
    "not",
    "len",
    "index",
    "print",
    "printf",
    "println",
    "eq",
    "ne",
    "lt",
    "le",
    "gt",
    "ge",
    "html",
    "js",
    "urlquery",
    // Prometheus
    "query",
    "first",
    "label",
    "value",
    "strvalue",
    "args",
    "reReplaceAll",
    "safeHtml",
    "match",
    "title",
    "toUpper",
    "toLower",
    "graphLink",
    "tableLink",
    "sortByLabel",
    "stripPort",
    "stripDomain",
    "humanize",
    "humanize1024",
    "humanizeDuration",
    "humanizePercentage",
    "humanizeTimestamp",
    "toTime",
    "pathPrefix",
    "externalURL",
    "parseDuration",
];

/// Whether a template of `dialect` may call `name`.
pub fn defined(dialect: Dialect, name: &str) -> bool {
    match dialect {
        Dialect::Rules => NAMES.contains(&name),
        Dialect::Notify => BUILTINS.contains(&name) || ALERTMANAGER.contains(&name),
    }
}

/// Calls `name` (never `and`/`or`) with its evaluated arguments. Errors read as Go's.
pub fn call(
    dialect: Dialect,
    name: &str,
    args: Vec<Value>,
    query: &mut dyn QueryFn,
    external_url: &str,
) -> Result<Value, String> {
    let calling = |e: String| format!("error calling {name}: {e}");
    let want = |n: usize| -> Result<(), String> {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!("wrong number of args for {name}: want {n} got {}", args.len()))
        }
    };
    Ok(match name {
        "not" => {
            want(1)?;
            Value::Bool(!args[0].truth())
        }
        "title" if dialect == Dialect::Notify => {
            want(1)?;
            Value::Str(cases_title(&string(&args[0])?))
        }
        "join" => {
            want(2)?;
            let sep = string(&args[0])?;
            match &args[1] {
                Value::Strings(v) => Value::Str(v.join(&sep)),
                Value::Nil => Value::Str(String::new()),
                v => return Err(format!("wrong type for value; expected []string; got {}", v.type_name())),
            }
        }
        "stringSlice" => {
            let strings = args.iter().map(string).collect::<Result<Vec<_>, _>>()?;
            Value::Strings(Rc::new(strings))
        }
        "len" => {
            want(1)?;
            Value::Int(match &args[0] {
                Value::Str(s) => s.len(),
                Value::Labels(m) => m.len(),
                Value::Map(m) => m.len(),
                Value::Samples(s) => s.len(),
                Value::Kv(m) => m.len(),
                Value::Alerts(a, _) => a.len(),
                Value::Pairs(p) => p.len(),
                Value::Strings(s) => s.len(),
                v => return Err(calling(format!("len of type {}", v.type_name()))),
            } as i64)
        }
        "index" => index(&args).map_err(calling)?,
        "print" => Value::Str(sprint(&args)),
        "println" => {
            let parts: Vec<String> = args.iter().map(Value::go_string).collect();
            Value::Str(format!("{}\n", parts.join(" ")))
        }
        "printf" => {
            if args.is_empty() {
                return Err("wrong number of args for printf: want at least 1 got 0".into());
            }
            let format = string(&args[0])?;
            Value::Str(sprintf(&format, &args[1..]))
        }
        "eq" | "ne" => {
            if args.len() < 2 {
                return Err(calling("missing argument for comparison".into()));
            }
            let mut any = false;
            for b in &args[1..] {
                if equal(&args[0], b).map_err(calling)? {
                    any = true;
                    break;
                }
            }
            if name == "ne" {
                want(2)?;
            }
            Value::Bool(if name == "eq" { any } else { !any })
        }
        "lt" | "le" | "gt" | "ge" => {
            want(2)?;
            let ord = less(&args[0], &args[1]).map_err(calling)?;
            let eq = equal(&args[0], &args[1]).map_err(calling)?;
            Value::Bool(match name {
                "lt" => ord,
                "le" => ord || eq,
                "gt" => !ord && !eq,
                _ => !ord,
            })
        }
        "html" => Value::Str(html_escape(&eval_args(&args))),
        "js" => Value::Str(js_escape(&eval_args(&args))),
        "urlquery" => Value::Str(query_escape(&eval_args(&args))),
        "query" => {
            want(1)?;
            let q = string(&args[0])?;
            let rows = query.query(&q).map_err(calling)?;
            let samples = rows
                .into_iter()
                .map(|(l, v)| {
                    let labels: BTreeMap<String, String> =
                        l.iter().map(|l| (l.name.clone(), l.value.clone())).collect();
                    Rc::new(Sample { labels: Rc::new(labels), value: v })
                })
                .collect();
            Value::Samples(Rc::new(samples))
        }
        "first" => {
            want(1)?;
            match samples(&args[0])?.first() {
                Some(s) => Value::Sample(s.clone()),
                None => return Err(calling("first() called on vector with no elements".into())),
            }
        }
        "label" => {
            want(2)?;
            let l = string(&args[0])?;
            Value::Str(sample(&args[1])?.labels.get(&l).cloned().unwrap_or_default())
        }
        "value" => {
            want(1)?;
            Value::Float(sample(&args[0])?.value)
        }
        "strvalue" => {
            want(1)?;
            Value::Str(sample(&args[0])?.labels.get("__value__").cloned().unwrap_or_default())
        }
        "args" => {
            let m = args.into_iter().enumerate().map(|(i, a)| (format!("arg{i}"), a)).collect();
            Value::Map(Rc::new(m))
        }
        "reReplaceAll" => {
            want(3)?;
            let (pattern, repl, text) = (string(&args[0])?, string(&args[1])?, string(&args[2])?);
            // Go panics on a bad pattern (`regexp.MustCompile`); the template fails with it.
            let re =
                regex::Regex::new(&pattern).map_err(|e| format!("regexp: Compile({}): {e}", go_quote(&pattern)))?;
            Value::Str(re.replace_all(&text, repl.as_str()).into_owned())
        }
        "match" => {
            want(2)?;
            let (pattern, text) = (string(&args[0])?, string(&args[1])?);
            let re = regex::Regex::new(&pattern).map_err(|e| calling(format!("error parsing regexp: {e}")))?;
            Value::Bool(re.is_match(&text))
        }
        "safeHtml" | "toUpper" | "toLower" | "title" | "graphLink" | "tableLink" | "stripPort" | "stripDomain" => {
            want(1)?;
            let s = string(&args[0])?;
            Value::Str(match name {
                "safeHtml" => s,
                "toUpper" => s.to_uppercase(),
                "toLower" => s.to_lowercase(),
                "title" => title(&s),
                "graphLink" => format!("/graph?g0.expr={}&g0.tab=0", query_escape(&s)),
                "tableLink" => format!("/graph?g0.expr={}&g0.tab=1", query_escape(&s)),
                "stripPort" => split_host_port(&s).map_or(s.clone(), |(h, _)| h),
                _ => strip_domain(&s),
            })
        }
        "sortByLabel" => {
            want(2)?;
            let l = string(&args[0])?;
            let mut v: Vec<Rc<Sample>> = samples(&args[1])?.to_vec();
            v.sort_by(|a, b| a.labels.get(&l).cmp(&b.labels.get(&l)));
            Value::Samples(Rc::new(v))
        }
        "humanize" | "humanize1024" | "humanizeDuration" | "humanizePercentage" | "humanizeTimestamp" | "toTime" => {
            want(1)?;
            let v = to_float(&args[0]).map_err(calling)?;
            match name {
                "humanize" => Value::Str(humanize(v)),
                "humanize1024" => Value::Str(humanize1024(v)),
                "humanizeDuration" => Value::Str(humanize_duration(v)),
                "humanizePercentage" => Value::Str(format!("{}%", fmt_g(v * 100.0, Some(4), false))),
                "humanizeTimestamp" if !v.is_finite() => Value::Str(fmt_g(v, Some(4), false)),
                "humanizeTimestamp" => Value::Str(Value::Time(to_time(v).map_err(calling)?).go_string()),
                _ => Value::Time(to_time(v).map_err(calling)?),
            }
        }
        "pathPrefix" | "externalURL" => {
            want(0)?;
            let url = external_url.to_string();
            Value::Str(if name == "externalURL" { url } else { url_path(&url) })
        }
        "parseDuration" => {
            want(1)?;
            let s = string(&args[0])?;
            let d = crate::config::duration::parse(&s).map_err(calling)?;
            Value::Float(d.as_secs_f64())
        }
        _ => return Err(format!("function {name:?} not defined")),
    })
}

fn string(v: &Value) -> Result<String, String> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        Value::Nil => Err("invalid value; expected string".into()),
        v => Err(format!("wrong type for value; expected string; got {}", v.type_name())),
    }
}

fn sample(v: &Value) -> Result<&Rc<Sample>, String> {
    match v {
        Value::Sample(s) => Ok(s),
        Value::Nil => Err("invalid value; expected *template.sample".into()),
        v => Err(format!("wrong type for value; expected *template.sample; got {}", v.type_name())),
    }
}

fn samples(v: &Value) -> Result<&[Rc<Sample>], String> {
    match v {
        Value::Samples(s) => Ok(s),
        Value::Nil => Err("invalid value; expected template.queryResult".into()),
        v => Err(format!("wrong type for value; expected template.queryResult; got {}", v.type_name())),
    }
}

/// Prometheus' `convertToFloat`: a float64, a string that parses as one, or an integer.
fn to_float(v: &Value) -> Result<f64, String> {
    match v {
        Value::Float(f) => Ok(*f),
        Value::Int(i) => Ok(*i as f64),
        Value::Str(s) => s.parse().map_err(|_| format!("strconv.ParseFloat: parsing {}: invalid syntax", go_quote(s))),
        v => Err(format!("can't convert {} to float", v.type_name())),
    }
}

/// Seconds to Unix milliseconds, as Prometheus' `model.TimeFromUnixNano` truncates them.
fn to_time(v: f64) -> Result<i64, String> {
    if !v.is_finite() {
        return Err("value is NaN or Inf".into());
    }
    let ns = v * 1e9;
    if ns >= i64::MAX as f64 || ns < i64::MIN as f64 {
        return Err(format!(
            "{} cannot be represented as a nanoseconds timestamp since it overflows int64",
            super::fmt::format_value(v)
        ));
    }
    Ok(ns as i64 / 1_000_000)
}

fn humanize(mut v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return fmt_g(v, Some(4), false);
    }
    let mut prefix = "";
    if v.abs() >= 1.0 {
        for p in ["k", "M", "G", "T", "P", "E", "Z", "Y"] {
            if v.abs() < 1000.0 {
                break;
            }
            prefix = p;
            v /= 1000.0;
        }
    } else {
        for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
            if v.abs() >= 1.0 {
                break;
            }
            prefix = p;
            v *= 1000.0;
        }
    }
    format!("{}{prefix}", fmt_g(v, Some(4), false))
}

fn humanize1024(mut v: f64) -> String {
    if v.abs() <= 1.0 || !v.is_finite() {
        return fmt_g(v, Some(4), false);
    }
    let mut prefix = "";
    for p in ["ki", "Mi", "Gi", "Ti", "Pi", "Ei", "Zi", "Yi"] {
        if v.abs() < 1024.0 {
            break;
        }
        prefix = p;
        v /= 1024.0;
    }
    format!("{}{prefix}", fmt_g(v, Some(4), false))
}

fn humanize_duration(mut v: f64) -> String {
    if !v.is_finite() {
        return fmt_g(v, Some(4), false);
    }
    if v == 0.0 {
        return format!("{}s", fmt_g(v, Some(4), false));
    }
    if v.abs() >= 1.0 {
        let sign = if v < 0.0 { "-" } else { "" };
        v = v.abs();
        let whole = v as i64;
        let (seconds, minutes, hours, days) = (whole % 60, whole / 60 % 60, whole / 3600 % 24, whole / 86_400);
        return if days != 0 {
            format!("{sign}{days}d {hours}h {minutes}m {seconds}s")
        } else if hours != 0 {
            format!("{sign}{hours}h {minutes}m {seconds}s")
        } else if minutes != 0 {
            format!("{sign}{minutes}m {seconds}s")
        } else {
            format!("{sign}{}s", fmt_g(v, Some(4), false))
        };
    }
    let mut prefix = "";
    for p in ["m", "u", "n", "p", "f", "a", "z", "y"] {
        if v.abs() >= 1.0 {
            break;
        }
        prefix = p;
        v *= 1000.0;
    }
    format!("{}{prefix}s", fmt_g(v, Some(4), false))
}

/// `index item key…`: a map's entry (its zero value when missing) or a result's sample.
fn index(args: &[Value]) -> Result<Value, String> {
    let Some((first, keys)) = args.split_first() else {
        return Err("wrong number of args for index: want at least 1 got 0".into());
    };
    let mut v = first.clone();
    for k in keys {
        v = match (&v, k) {
            (Value::Labels(m) | Value::Kv(m), Value::Str(k)) => Value::Str(m.get(k).cloned().unwrap_or_default()),
            (Value::Strings(s), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.get(i)) {
                Some(x) => Value::Str(x.clone()),
                None => return Err(format!("index out of range: {i}")),
            },
            (Value::Alerts(s, _), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.get(i)) {
                Some(x) => Value::Alert(x.clone()),
                None => return Err(format!("index out of range: {i}")),
            },
            (Value::Pairs(s), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.get(i)) {
                Some(x) => Value::Pair(Rc::new(x.clone())),
                None => return Err(format!("index out of range: {i}")),
            },
            (Value::Map(m), Value::Str(k)) => m.get(k).cloned().unwrap_or(Value::Nil),
            (Value::Samples(s), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.get(i)) {
                Some(x) => Value::Sample(x.clone()),
                None => return Err(format!("index out of range: {i}")),
            },
            (Value::Str(s), Value::Int(i)) => match usize::try_from(*i).ok().and_then(|i| s.as_bytes().get(i)) {
                Some(b) => Value::Int(i64::from(*b)),
                None => return Err(format!("index out of range: {i}")),
            },
            (Value::Nil, _) => return Err("index of untyped nil".into()),
            (Value::Labels(_) | Value::Map(_), k) => {
                return Err(format!("value has type {}; should be string", k.type_name()));
            }
            (Value::Samples(_) | Value::Str(_), k) => {
                return Err(format!("cannot index slice/array with type {}", k.type_name()));
            }
            (v, _) => return Err(format!("can't index item of type {}", v.type_name())),
        };
    }
    Ok(v)
}

/// Go's `fmt.Sprint`: a space between operands when neither is a string.
fn sprint(args: &[Value]) -> String {
    let mut out = String::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 && !matches!(a, Value::Str(_)) && !matches!(args[i - 1], Value::Str(_)) {
            out.push(' ');
        }
        out.push_str(&a.go_string());
    }
    out
}

/// text/template's `evalArgs`: one string argument as is, anything else through `fmt.Sprint`.
fn eval_args(args: &[Value]) -> String {
    match args {
        [Value::Str(s)] => s.clone(),
        _ => sprint(args),
    }
}

#[derive(PartialEq)]
enum Kind {
    Bool,
    Int,
    Float,
    Str,
}

fn kind(v: &Value) -> Option<Kind> {
    match v {
        Value::Bool(_) => Some(Kind::Bool),
        Value::Int(_) => Some(Kind::Int),
        Value::Float(_) => Some(Kind::Float),
        Value::Str(_) => Some(Kind::Str),
        _ => None,
    }
}

fn equal(a: &Value, b: &Value) -> Result<bool, String> {
    match (kind(a), kind(b)) {
        (Some(x), Some(y)) if x == y => Ok(a == b),
        (Some(_), Some(_)) => Err("incompatible types for comparison".into()),
        _ if matches!(a, Value::Nil) || matches!(b, Value::Nil) => {
            Ok(matches!(a, Value::Nil) == matches!(b, Value::Nil))
        }
        (Some(_), None) | (None, Some(_)) => Err("incompatible types for comparison".into()),
        (None, None) => Err(format!("non-comparable type {}: {}", b.go_string(), b.type_name())),
    }
}

fn less(a: &Value, b: &Value) -> Result<bool, String> {
    match (a, b) {
        (Value::Int(x), Value::Int(y)) => Ok(x < y),
        (Value::Float(x), Value::Float(y)) => Ok(x < y),
        (Value::Str(x), Value::Str(y)) => Ok(x < y),
        _ if kind(a).is_none_or(|k| k == Kind::Bool) || kind(b).is_none_or(|k| k == Kind::Bool) => {
            Err("invalid type for comparison".into())
        }
        _ => Err("incompatible types for comparison".into()),
    }
}

/// `cases.Title(language.AmericanEnglish)`, Alertmanager's `title`: each word's first letter in
/// upper case and the rest in lower case. Words are runs of letters, digits, `_` and apostrophes,
/// also joined across a `.` or `:` between letters (Unicode's word boundaries, as far as label
/// values need them).
fn cases_title(s: &str) -> String {
    let cs: Vec<char> = s.chars().collect();
    let word = |c: char| c.is_alphanumeric() || c == '_' || c == '\'' || c == '\u{2019}';
    let mut out = String::with_capacity(s.len());
    let mut in_word = false;
    for (i, &c) in cs.iter().enumerate() {
        let joiner = matches!(c, '.' | ':')
            && i > 0
            && cs[i - 1].is_alphabetic()
            && cs.get(i + 1).is_some_and(|n| n.is_alphabetic());
        if word(c) {
            if in_word {
                out.extend(c.to_lowercase());
            } else {
                out.extend(c.to_uppercase());
            }
            in_word = true;
        } else {
            out.push(c);
            in_word = joiner && in_word;
        }
    }
    out
}

/// Go's `strings.Title`: the first letter of each word in upper case; words are separated by
/// white space and ASCII punctuation other than `_`.
fn title(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_sep = true;
    for c in s.chars() {
        if prev_sep {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
        prev_sep = if c.is_ascii() { !(c.is_ascii_alphanumeric() || c == '_') } else { c.is_whitespace() };
    }
    out
}

/// Go's `net.SplitHostPort`, or `None` where it fails.
fn split_host_port(s: &str) -> Option<(String, String)> {
    if let Some(rest) = s.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = after.strip_prefix(':')?;
        return (!port.contains(':')).then(|| (host.to_string(), port.to_string()));
    }
    let (host, port) = s.rsplit_once(':')?;
    (!host.contains(':') && !host.contains('[') && !host.contains(']')).then(|| (host.to_string(), port.to_string()))
}

/// Prometheus' `stripDomain`: the first label of a host name, the port kept; IPs unchanged.
fn strip_domain(s: &str) -> String {
    let (host, port) = split_host_port(s).unwrap_or_else(|| (s.to_string(), String::new()));
    if host.parse::<std::net::IpAddr>().is_ok() {
        return s.to_string();
    }
    let host = host.split('.').next().unwrap_or("").to_string();
    if port.is_empty() {
        host
    } else if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// The path of a URL (`http://host:9090/prom` → `/prom`), as Go's `url.URL.Path`.
fn url_path(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let path = rest.find('/').map_or("", |i| &rest[i..]);
    path.split(['?', '#']).next().unwrap_or("").to_string()
}

/// Go's `url.QueryEscape`.
pub fn query_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            b' ' => out.push('+'),
            b => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// html/template's escaper of text in HTML: Go's `htmlEscaper`, which also escapes `+`.
pub fn html_text_escape(s: &str) -> String {
    html_escape(s).replace('+', "&#43;")
}

/// Go's `template.HTMLEscapeString`.
fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("&#34;"),
            '\'' => out.push_str("&#39;"),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\0' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// Go's `template.JSEscapeString`.
fn js_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '"' => out.push_str("\\\""),
            '<' => out.push_str("\\u003C"),
            '>' => out.push_str("\\u003E"),
            '&' => out.push_str("\\u0026"),
            '=' => out.push_str("\\u003D"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}
