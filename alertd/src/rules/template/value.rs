//! The values a template works with, as Go's text/template sees Prometheus' data: the label maps
//! (`map[string]string`), the alert's value (`float64`), query results (`[]*sample`), and what the
//! functions return. Printing follows Go's `fmt` (`%v`) and text/template's rule that a missing
//! value prints as `<no value>`.

use super::fmt::format_value;
use std::collections::BTreeMap;
use std::rc::Rc;

/// One sample of a `query` result: Prometheus' template `sample` struct.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub labels: Rc<BTreeMap<String, String>>,
    pub value: f64,
}

/// The data a rule template runs on (`.`): Prometheus' `AlertTemplateData`.
#[derive(Debug, Clone, PartialEq)]
pub struct Root {
    pub labels: Rc<BTreeMap<String, String>>,
    pub external_labels: Rc<BTreeMap<String, String>>,
    pub external_url: String,
    pub value: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Go's invalid value or nil interface: a missing `args` entry, `nil`.
    Nil,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    /// `map[string]string`: label sets.
    Labels(Rc<BTreeMap<String, String>>),
    /// `map[string]interface{}`: what `args` returns.
    Map(Rc<BTreeMap<String, Value>>),
    Sample(Rc<Sample>),
    Samples(Rc<Vec<Rc<Sample>>>),
    /// A `*time.Time` (from `toTime`), in Unix milliseconds, UTC.
    Time(i64),
    Root(Rc<Root>),
    // Alertmanager's notification data (template.Data and what hangs off it).
    /// `*template.Data`, a notification template's dot.
    Data(Rc<NotifyData>),
    /// `template.Alerts` (with the `Firing`/`Resolved` methods) when `.1`, else `[]template.Alert`.
    Alerts(Rc<Vec<Rc<AlertData>>>, bool),
    Alert(Rc<AlertData>),
    /// `template.KV`: a label set with the `SortedPairs`, `Names`, `Values` and `Remove` methods.
    Kv(Rc<BTreeMap<String, String>>),
    /// `template.Pairs`, sorted as `SortedPairs` sorts them.
    Pairs(Rc<Vec<(String, String)>>),
    Pair(Rc<(String, String)>),
    /// `[]string`.
    Strings(Rc<Vec<String>>),
}

/// Alertmanager's `template.Data`: what notification templates run on.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NotifyData {
    pub receiver: String,
    pub status: String,
    pub alerts: Rc<Vec<Rc<AlertData>>>,
    pub group_labels: Rc<BTreeMap<String, String>>,
    pub common_labels: Rc<BTreeMap<String, String>>,
    pub common_annotations: Rc<BTreeMap<String, String>>,
    pub external_url: String,
}

/// Alertmanager's `template.Alert`; times in Unix milliseconds, UTC.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AlertData {
    pub status: String,
    pub labels: Rc<BTreeMap<String, String>>,
    pub annotations: Rc<BTreeMap<String, String>>,
    pub starts_at: i64,
    pub ends_at: i64,
    pub generator_url: String,
    pub fingerprint: String,
}

/// `KV.SortedPairs`: `alertname` first, then the other names in order.
pub fn sorted_pairs(kv: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let first = kv.get_key_value("alertname").map(|(k, v)| (k.clone(), v.clone()));
    first.into_iter().chain(kv.iter().filter(|(k, _)| *k != "alertname").map(|(k, v)| (k.clone(), v.clone()))).collect()
}

impl Value {
    /// Go's name of the value's type, as its error messages print it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Nil => "<nil>",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float64",
            Value::Str(_) => "string",
            Value::Labels(_) => "map[string]string",
            Value::Map(_) => "map[string]interface {}",
            Value::Sample(_) => "*template.sample",
            Value::Samples(_) => "template.queryResult",
            Value::Time(_) => "*time.Time",
            Value::Root(_) => {
                "struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }"
            }
            Value::Data(_) => "*template.Data",
            Value::Alerts(_, true) => "template.Alerts",
            Value::Alerts(_, false) => "[]template.Alert",
            Value::Alert(_) => "template.Alert",
            Value::Kv(_) => "template.KV",
            Value::Pairs(_) => "template.Pairs",
            Value::Pair(_) => "template.Pair",
            Value::Strings(_) => "[]string",
        }
    }

    /// text/template's truth: false, 0, nil and empty strings, maps and slices are false.
    pub fn truth(&self) -> bool {
        match self {
            Value::Nil => false,
            Value::Bool(b) => *b,
            Value::Int(i) => *i != 0,
            Value::Float(f) => *f != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Labels(m) => !m.is_empty(),
            Value::Map(m) => !m.is_empty(),
            Value::Samples(s) => !s.is_empty(),
            Value::Kv(m) => !m.is_empty(),
            Value::Alerts(a, _) => !a.is_empty(),
            Value::Pairs(p) => !p.is_empty(),
            Value::Strings(s) => !s.is_empty(),
            Value::Sample(_) | Value::Time(_) | Value::Root(_) | Value::Data(_) | Value::Alert(_) | Value::Pair(_) => {
                true
            }
        }
    }

    /// What an action `{{ x }}` writes: `fmt.Fprint` of the value, `<no value>` for nil, and a
    /// pointer to a struct printed as the struct.
    pub fn print_action(&self) -> String {
        match self {
            Value::Nil => "<no value>".into(),
            Value::Sample(s) => sample_struct(s),
            v => v.go_string(),
        }
    }

    /// `fmt.Sprint` of the value (Go's `%v`).
    pub fn go_string(&self) -> String {
        match self {
            Value::Nil => "<nil>".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => format_value(*f),
            Value::Str(s) => s.clone(),
            Value::Labels(m) | Value::Kv(m) => {
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("map[{}]", parts.join(" "))
            }
            Value::Map(m) => {
                let parts: Vec<String> = m.iter().map(|(k, v)| format!("{k}:{}", v.go_string())).collect();
                format!("map[{}]", parts.join(" "))
            }
            Value::Sample(s) => format!("&{}", sample_struct(s)),
            // Go prints the pointers' addresses, which mean nothing outside the process: Argus
            // prints each sample instead.
            Value::Samples(v) => {
                let parts: Vec<String> = v.iter().map(|s| format!("&{}", sample_struct(s))).collect();
                format!("[{}]", parts.join(" "))
            }
            Value::Time(ms) => go_time(*ms),
            Value::Root(r) => format!(
                "{{{} {} {} {}}}",
                Value::Labels(r.labels.clone()).go_string(),
                Value::Labels(r.external_labels.clone()).go_string(),
                r.external_url,
                format_value(r.value)
            ),
            Value::Data(d) => format!(
                "{{{} {} {} {} {} {} {}}}",
                d.receiver,
                d.status,
                Value::Alerts(d.alerts.clone(), true).go_string(),
                Value::Kv(d.group_labels.clone()).go_string(),
                Value::Kv(d.common_labels.clone()).go_string(),
                Value::Kv(d.common_annotations.clone()).go_string(),
                d.external_url
            ),
            Value::Alerts(v, _) => {
                let parts: Vec<String> = v.iter().map(|a| Value::Alert(a.clone()).go_string()).collect();
                format!("[{}]", parts.join(" "))
            }
            Value::Alert(a) => format!(
                "{{{} {} {} {} {} {} {}}}",
                a.status,
                Value::Kv(a.labels.clone()).go_string(),
                Value::Kv(a.annotations.clone()).go_string(),
                go_time(a.starts_at),
                go_time(a.ends_at),
                a.generator_url,
                a.fingerprint
            ),
            Value::Pairs(p) => {
                let parts: Vec<String> = p.iter().map(|(n, v)| format!("{{{n} {v}}}")).collect();
                format!("[{}]", parts.join(" "))
            }
            Value::Pair(p) => format!("{{{} {}}}", p.0, p.1),
            Value::Strings(s) => format!("[{}]", s.join(" ")),
        }
    }
}

fn sample_struct(s: &Sample) -> String {
    format!("{{{} {}}}", Value::Labels(s.labels.clone()).go_string(), format_value(s.value))
}

/// Go's `time.Time.String()` of a UTC time: `2006-01-02 15:04:05.999999999 +0000 UTC`.
pub fn go_time(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let frac = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = crate::time::civil_from_days(days);
    let mut out = format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}", rem / 3600, rem / 60 % 60, rem % 60);
    if frac != 0 {
        let f = format!("{frac:03}");
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
    out.push_str(" +0000 UTC");
    out
}
