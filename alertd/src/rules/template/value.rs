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
            Value::Sample(_) | Value::Time(_) | Value::Root(_) => true,
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
            Value::Labels(m) => {
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
