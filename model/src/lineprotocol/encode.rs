//! The encoder: the inverse of `parse` for every line the format can express.

use std::fmt::Write;

use super::{FieldValue, Line};

/// Appends one line, without a trailing newline, escaping what each element requires. Floats are written
/// in the shortest form that parses back to the same bits (`-0`, `1e300`, `5e-324`).
///
/// Some lines have no spelling, and are written as if they had: a name or tag value that is empty or
/// ends in a backslash, holds a newline, or (for the measurement) starts with `#` or a tab; and
/// non-finite floats, written `NaN`/`inf`/`-inf`, which InfluxDB rejects.
pub fn encode(line: &Line<'_>, out: &mut String) {
    escape(out, &line.measurement, b", ");
    for (key, value) in &line.tags {
        out.push(',');
        escape(out, key, b",= ");
        out.push('=');
        escape(out, value, b",= ");
    }
    for (n, (key, value)) in line.fields.iter().enumerate() {
        out.push(if n == 0 { ' ' } else { ',' });
        escape(out, key, b",= ");
        out.push('=');
        field_value(out, value);
    }
    if let Some(ts) = line.timestamp {
        // Writing to a String cannot fail.
        let _ = write!(out, " {ts}");
    }
}

fn field_value(out: &mut String, value: &FieldValue<'_>) {
    // Writing to a String cannot fail.
    let _ = match value {
        FieldValue::Float(v) => float(out, *v),
        FieldValue::Int(v) => write!(out, "{v}i"),
        FieldValue::UInt(v) => write!(out, "{v}u"),
        FieldValue::Bool(v) => write!(out, "{v}"),
        FieldValue::Str(s) => {
            out.push('"');
            escape(out, s, b"\"\\");
            out.push('"');
            Ok(())
        }
    };
}

/// `{}` and `{:e}` both print the shortest digits that round-trip; `{}` never uses an exponent, so very
/// large or small magnitudes (up to 1e308 and 5e-324) would take hundreds of digits.
fn float(out: &mut String, v: f64) -> std::fmt::Result {
    let a = v.abs();
    if a != 0.0 && !(1e-5..1e16).contains(&a) { write!(out, "{v:e}") } else { write!(out, "{v}") }
}

/// Appends `s` with a backslash before every byte in `special` (all ASCII, so never inside a char).
fn escape(out: &mut String, s: &str, special: &[u8]) {
    let b = s.as_bytes();
    let mut copied = 0;
    for (i, c) in b.iter().enumerate() {
        if special.contains(c) {
            out.push_str(&s[copied..i]);
            out.push('\\');
            copied = i;
        }
    }
    out.push_str(&s[copied..]);
}
