//! `parse(encode(line)) == line` for every line the format can express.

use argus_model::lineprotocol::{FieldValue, Line, encode, parse};
use proptest::prelude::*;

/// Characters for names: letters, every character the format treats specially, other ASCII controls
/// and Unicode, and anything else now and then. Never a newline: no escape lets one into a name.
fn name_char() -> impl Strategy<Value = char> {
    let special =
        vec![' ', ',', '=', '"', '\'', '\\', '#', '\t', '\r', '_', '\0', '\u{7f}', 'é', '温', '🚀', '\u{200b}'];
    prop_oneof![
        4 => prop::char::range('a', 'z'),
        2 => prop::sample::select(special),
        1 => any::<char>().prop_map(|c| if c == '\n' { 'n' } else { c }),
    ]
}

/// A tag key, tag value or field key. Non-empty (the format has no empty names or tag values) and not
/// ending in a backslash: that backslash would escape the separator after it, and `\\` is no escape in
/// names, so the format cannot spell it.
fn key() -> impl Strategy<Value = String> {
    prop::collection::vec(name_char(), 1..10).prop_map(|chars| {
        let mut s: String = chars.into_iter().collect();
        if s.ends_with('\\') {
            s.push('x');
        }
        s
    })
}

/// A measurement: a key that also does not start with `#` (the line would be a comment) or a tab
/// (leading blanks are skipped; a leading space is escaped, so it survives).
fn measurement() -> impl Strategy<Value = String> {
    key().prop_map(|s| if s.starts_with(['#', '\t']) { format!("m{s}") } else { s })
}

fn float() -> impl Strategy<Value = f64> {
    let edges = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.1,
        f64::MIN_POSITIVE,
        -f64::MIN_POSITIVE,
        5e-324,
        -5e-324,
        f64::MAX,
        f64::MIN,
        1e-300,
        1e300,
        1e16,
        1e-5,
        9007199254740993.0,
    ];
    prop_oneof![
        prop::sample::select(edges),
        // Every bit pattern, so every exponent; the format has no spelling for NaN and infinities.
        any::<u64>().prop_map(f64::from_bits).prop_map(|f| if f.is_finite() { f } else { 0.0 }),
        any::<i32>().prop_map(|i| f64::from(i) / 100.0),
    ]
}

fn string_value() -> impl Strategy<Value = String> {
    let special = vec!['"', '\\', '\n', '\r', ' ', ',', '=', '#', 'é', '🚀'];
    let c = prop_oneof![3 => prop::char::range('a', 'z'), 2 => prop::sample::select(special), 1 => any::<char>()];
    prop::collection::vec(c, 0..16).prop_map(|v| v.into_iter().collect())
}

fn value() -> impl Strategy<Value = FieldValue<'static>> {
    prop_oneof![
        float().prop_map(FieldValue::Float),
        prop_oneof![Just(i64::MIN), Just(i64::MAX), Just(0), any::<i64>()].prop_map(FieldValue::Int),
        prop_oneof![Just(u64::MAX), Just(0), any::<u64>()].prop_map(FieldValue::UInt),
        any::<bool>().prop_map(FieldValue::Bool),
        string_value().prop_map(|s| FieldValue::Str(s.into())),
    ]
}

fn line() -> impl Strategy<Value = Line<'static>> {
    (
        measurement(),
        prop::collection::vec((key(), key()), 0..4),
        prop::collection::vec((key(), value()), 1..5),
        prop::option::of(prop_oneof![Just(i64::MIN), Just(i64::MAX), any::<i64>()]),
    )
        .prop_map(|(measurement, tags, fields, timestamp)| Line {
            measurement: measurement.into(),
            tags: tags.into_iter().map(|(k, v)| (k.into(), v.into())).collect(),
            fields: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
            timestamp,
        })
}

/// A line's content with floats as bits, so that -0.0 differs from 0.0.
#[derive(Debug, PartialEq)]
enum Value {
    Float(u64),
    Int(i64),
    UInt(u64),
    Bool(bool),
    Str(String),
}

type Canonical = (String, Vec<(String, String)>, Vec<(String, Value)>, Option<i64>);

fn canonical(l: &Line<'_>) -> Canonical {
    let fields = l.fields.iter().map(|(k, v)| {
        let v = match v {
            FieldValue::Float(f) => Value::Float(f.to_bits()),
            FieldValue::Int(i) => Value::Int(*i),
            FieldValue::UInt(u) => Value::UInt(*u),
            FieldValue::Bool(b) => Value::Bool(*b),
            FieldValue::Str(s) => Value::Str(s.to_string()),
        };
        (k.to_string(), v)
    });
    let tags = l.tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    (l.measurement.to_string(), tags, fields.collect(), l.timestamp)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn one_line(line in line()) {
        let mut out = String::new();
        encode(&line, &mut out);
        let parsed = parse(&out).map_err(|e| TestCaseError::fail(format!("{out:?}: {e:?}")))?;
        prop_assert_eq!(parsed.len(), 1, "{:?}", out);
        prop_assert_eq!(canonical(&parsed[0]), canonical(&line), "{:?}", out);
    }

    /// Decimals as written by telemetry agents take a fast path; it must agree with std's correctly
    /// rounded parser to the bit.
    #[test]
    fn decimals_parse_like_std(neg in any::<bool>(), int in "[0-9]{0,10}", frac in prop::option::of("[0-9]{0,10}")) {
        let s = format!("{}{int}{}", if neg { "-" } else { "" }, frac.map(|f| format!(".{f}")).unwrap_or_default());
        let body = format!("m f={s}");
        match (parse(&body), s.parse::<f64>()) {
            (Ok(lines), Ok(want)) => {
                let FieldValue::Float(got) = lines[0].fields[0].1 else { return Err(TestCaseError::fail("not a float")) };
                prop_assert_eq!(got.to_bits(), want.to_bits(), "{}", s);
            }
            (Err(_), Err(_)) => {}
            (got, want) => prop_assert!(false, "{s:?}: parsed {got:?}, std {want:?}"),
        }
    }

    #[test]
    fn many_lines(lines in prop::collection::vec(line(), 1..6), crlf in any::<bool>()) {
        let mut out = String::new();
        for line in &lines {
            encode(line, &mut out);
            out.push_str(if crlf { "\r\n" } else { "\n" });
        }
        let parsed = parse(&out).map_err(|e| TestCaseError::fail(format!("{out:?}: {e:?}")))?;
        let want: Vec<_> = lines.iter().map(canonical).collect();
        let got: Vec<_> = parsed.iter().map(canonical).collect();
        prop_assert_eq!(got, want, "{:?}", out);
    }
}
