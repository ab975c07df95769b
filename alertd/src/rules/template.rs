//! The template subset of rule labels and annotations: literal text with `{{ $labels.NAME }}` (or
//! `{{ .Labels.NAME }}`) and `{{ $value }}` (or `{{ .Value }}`) actions. Anything else inside `{{ }}`
//! is refused when the rule file is loaded, so evaluation never meets a template it cannot expand.

use argus_model::Labels;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TemplateError {
    #[error("unsupported template action {0:?}")]
    Unsupported(String),
    #[error("unclosed template action in {0:?}")]
    Unclosed(String),
}

enum Action<'a> {
    Label(&'a str),
    Value,
}

/// Checks that `text` uses only the supported actions.
pub fn check(text: &str) -> Result<(), TemplateError> {
    walk(text, |_| {}, |_| {})
}

/// `text` with its actions replaced: a missing label expands to nothing (as Go's templates print a
/// missing map key of `map[string]string`), the value as Go's `%v` prints a float64.
pub fn expand(text: &str, labels: &Labels, value: f64) -> Result<String, TemplateError> {
    let out = std::cell::RefCell::new(String::with_capacity(text.len()));
    walk(
        text,
        |lit| out.borrow_mut().push_str(lit),
        |a| match a {
            Action::Label(n) => out.borrow_mut().push_str(labels.get(n).unwrap_or("")),
            Action::Value => out.borrow_mut().push_str(&format_value(value)),
        },
    )?;
    Ok(out.into_inner())
}

fn walk<'a>(
    text: &'a str,
    mut literal: impl FnMut(&'a str),
    mut action: impl FnMut(Action<'a>),
) -> Result<(), TemplateError> {
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        literal(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}").ok_or_else(|| TemplateError::Unclosed(text.to_string()))?;
        let inner = after[..close].trim_start_matches('-').trim_end_matches('-').trim();
        let a = if inner == "$value" || inner == ".Value" {
            Action::Value
        } else if let Some(n) = inner.strip_prefix("$labels.").or_else(|| inner.strip_prefix(".Labels.")) {
            if !crate::alert::valid_label_name(n) {
                return Err(TemplateError::Unsupported(format!("{{{{{}}}}}", &after[..close])));
            }
            Action::Label(n)
        } else {
            return Err(TemplateError::Unsupported(format!("{{{{{}}}}}", &after[..close])));
        };
        action(a);
        rest = &after[close + 2..];
    }
    literal(rest);
    Ok(())
}

/// A float as Go's `%v` prints it: shortest digits, exponent form below 1e-4 or from 1e21.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let a = v.abs();
    if a == 0.0 || (1e-4..1e21).contains(&a) {
        return format!("{v}");
    }
    // Rust writes `1e21` / `1.5e-5`; Go writes `1e+21` / `1.5e-05`.
    let s = format!("{v:e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::{Expect, expect};

    fn check(text: &str, expect: Expect) {
        let labels = Labels::from_pairs([("host", "n1"), ("gpu", "0")]);
        let got = match expand(text, &labels, 93.5) {
            Ok(s) => s,
            Err(e) => format!("error: {e}"),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn templates() {
        check("plain", expect![[r#"plain"#]]);
        check("{{ $labels.host }} gpu {{$labels.gpu}} at {{ $value }}%", expect![[r#"n1 gpu 0 at 93.5%"#]]);
        check("{{ .Labels.host }}/{{ .Value }}", expect![[r#"n1/93.5"#]]);
        check("[{{ $labels.missing }}]", expect![[r#"[]"#]]);
        check("{{- $labels.host -}}", expect![[r#"n1"#]]);
        check("{{ humanize $value }}", expect![[r#"error: unsupported template action "{{ humanize $value }}""#]]);
        check("{{ $labels.host", expect![[r#"error: unclosed template action in "{{ $labels.host""#]]);
    }

    #[test]
    fn values_print_as_go_does() {
        let got: Vec<String> = [1.0, 0.25, 1e21, 1.5e-5, -3.0, f64::NAN, f64::INFINITY].map(format_value).to_vec();
        expect![[r#"["1", "0.25", "1e+21", "1.5e-05", "-3", "NaN", "+Inf"]"#]].assert_eq(&format!("{got:?}"));
    }
}
