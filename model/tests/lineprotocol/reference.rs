//! Every example of InfluxDB v2's line protocol reference, parsed as the reference says it reads.
//! Source: https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/ (section in each comment).

use std::borrow::Cow;

use argus_model::lineprotocol::{FieldValue, Line, parse};

const REF: &str = "https://docs.influxdata.com/influxdb/v2/reference/syntax/line-protocol/";

fn point<'a>(
    measurement: &'a str,
    tags: &[(&'a str, &'a str)],
    fields: Vec<(&'a str, FieldValue<'a>)>,
    timestamp: Option<i64>,
) -> Line<'a> {
    Line {
        measurement: measurement.into(),
        tags: tags.iter().map(|&(k, v)| (k.into(), v.into())).collect(),
        fields: fields.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        timestamp,
    }
}

fn s(v: &str) -> FieldValue<'_> {
    FieldValue::Str(Cow::Borrowed(v))
}

/// The single field value of a one-field `myMeasurement fieldKey=...` example.
fn value(body: &str) -> FieldValue<'_> {
    let mut lines = parse(body).unwrap_or_else(|e| panic!("{body:?} from {REF}: {e:?}"));
    assert_eq!(lines.len(), 1, "{body:?}");
    let mut line = lines.remove(0);
    assert_eq!(line.measurement, "myMeasurement", "{body:?}");
    assert_eq!(line.fields.len(), 1, "{body:?}");
    let (key, value) = line.fields.remove(0);
    assert_eq!(key, "fieldKey", "{body:?}");
    value
}

#[test]
fn syntax() {
    // "Syntax" (the example under it).
    let body = r#"myMeasurement,tag1=value1,tag2=value2 fieldKey="fieldValue" 1556813561098000000"#;
    let want = point(
        "myMeasurement",
        &[("tag1", "value1"), ("tag2", "value2")],
        vec![("fieldKey", s("fieldValue"))],
        Some(1556813561098000000),
    );
    assert_eq!(parse(body), Ok(vec![want]));
}

#[test]
fn field_set() {
    // "Field set": always double quote string field values.
    let body = r#"measurementName fieldKey="field string value" 1556813561098000000"#;
    let want = point("measurementName", &[], vec![("fieldKey", s("field string value"))], Some(1556813561098000000));
    assert_eq!(parse(body), Ok(vec![want]));
    // "Field set": points must have at least one field.
    assert!(parse("myMeasurement,tag1=value1").is_err());
    assert!(parse("myMeasurement 1556813561098000000").is_err());
}

#[test]
fn tag_set() {
    // "Tag set": tag values cannot be empty; instead, omit the tag from the tag set.
    assert!(parse("myMeasurement,tag1= fieldKey=1").is_err());
    assert!(parse("myMeasurement,tag1 fieldKey=1").is_err());
}

#[test]
fn float() {
    // "Float field value examples".
    assert_eq!(value("myMeasurement fieldKey=1.0"), FieldValue::Float(1.0));
    assert_eq!(value("myMeasurement fieldKey=1"), FieldValue::Float(1.0));
    assert_eq!(value("myMeasurement fieldKey=-1.234456e+78"), FieldValue::Float(-1.234456e+78));
}

#[test]
fn integer() {
    // "Integer field value examples" and the minimum and maximum of the table above them.
    assert_eq!(value("myMeasurement fieldKey=1i"), FieldValue::Int(1));
    assert_eq!(value("myMeasurement fieldKey=12485903i"), FieldValue::Int(12485903));
    assert_eq!(value("myMeasurement fieldKey=-12485903i"), FieldValue::Int(-12485903));
    assert_eq!(value("myMeasurement fieldKey=-9223372036854775808i"), FieldValue::Int(i64::MIN));
    assert_eq!(value("myMeasurement fieldKey=9223372036854775807i"), FieldValue::Int(i64::MAX));
    assert!(parse("myMeasurement fieldKey=9223372036854775808i").is_err());
}

#[test]
fn uinteger() {
    // "UInteger field value examples" and the table above them.
    assert_eq!(value("myMeasurement fieldKey=1u"), FieldValue::UInt(1));
    assert_eq!(value("myMeasurement fieldKey=12485903u"), FieldValue::UInt(12485903));
    assert_eq!(value("myMeasurement fieldKey=0u"), FieldValue::UInt(0));
    assert_eq!(value("myMeasurement fieldKey=18446744073709551615u"), FieldValue::UInt(u64::MAX));
    assert!(parse("myMeasurement fieldKey=18446744073709551616u").is_err());
}

#[test]
fn string() {
    // "String example", comment line included.
    let body = "# String measurement name, field key, and field value\nmyMeasurement fieldKey=\"this is a string\"";
    assert_eq!(parse(body), Ok(vec![point("myMeasurement", &[], vec![("fieldKey", s("this is a string"))], None)]));
}

#[test]
fn boolean() {
    // "Boolean field value examples".
    assert_eq!(value("myMeasurement fieldKey=true"), FieldValue::Bool(true));
    assert_eq!(value("myMeasurement fieldKey=false"), FieldValue::Bool(false));
    assert_eq!(value("myMeasurement fieldKey=t"), FieldValue::Bool(true));
    assert_eq!(value("myMeasurement fieldKey=f"), FieldValue::Bool(false));
    assert_eq!(value("myMeasurement fieldKey=TRUE"), FieldValue::Bool(true));
    assert_eq!(value("myMeasurement fieldKey=FALSE"), FieldValue::Bool(false));
    // "Boolean": the table of accepted syntax.
    for spelling in ["t", "T", "true", "True", "TRUE"] {
        assert_eq!(value(&format!("myMeasurement fieldKey={spelling}")), FieldValue::Bool(true));
    }
    for spelling in ["f", "F", "false", "False", "FALSE"] {
        assert_eq!(value(&format!("myMeasurement fieldKey={spelling}")), FieldValue::Bool(false));
    }
    // "Do not quote boolean field values. Quoted field values are interpreted as strings."
    assert_eq!(value(r#"myMeasurement fieldKey="true""#), s("true"));
}

#[test]
fn unix_timestamp() {
    // "Unix timestamp example".
    let body = r#"myMeasurementName fieldKey="fieldValue" 1556813561098000000"#;
    let want = point("myMeasurementName", &[], vec![("fieldKey", s("fieldValue"))], Some(1556813561098000000));
    assert_eq!(parse(body), Ok(vec![want]));
    // The minimum and maximum of the table. (They are InfluxDB's storage bounds in nanoseconds; we keep
    // the whole i64 range and let the precision conversion decide.)
    for ts in [-9223372036854775806, 9223372036854775806] {
        let body = format!("m f=1 {ts}");
        assert_eq!(parse(&body).unwrap()[0].timestamp, Some(ts));
    }
}

#[test]
fn quotes() {
    // "Quotes": double and single quotes in names, tag keys, tag values and field keys are part of them.
    let body = r#""m",'t'="v" 'f'=1,"g"=2"#;
    let want = point(
        r#""m""#,
        &[("'t'", r#""v""#)],
        vec![("'f'", FieldValue::Float(1.0)), (r#""g""#, FieldValue::Float(2.0))],
        None,
    );
    assert_eq!(parse(body), Ok(vec![want]));
    // Field values: double quotes for strings only, single quotes never; timestamps never quoted.
    assert!(parse("myMeasurement fieldKey='string'").is_err());
    assert!(parse(r#"myMeasurement fieldKey=1 "1556813561098000000""#).is_err());
}

#[test]
fn special_characters() {
    // "Examples of special characters in line protocol", each with the comment that introduces it.
    // Measurement name with spaces
    let body = r#"my\ Measurement fieldKey="string value""#;
    assert_eq!(parse(body), Ok(vec![point("my Measurement", &[], vec![("fieldKey", s("string value"))], None)]));
    // Double quotes in a string field value
    let body = r#"myMeasurement fieldKey="\"string\" within a string""#;
    assert_eq!(value(body), s(r#""string" within a string"#));
    // Tag keys and values with spaces
    let body = r"myMeasurement,tag\ Key1=tag\ Value1,tag\ Key2=tag\ Value2 fieldKey=100";
    let tags = [("tag Key1", "tag Value1"), ("tag Key2", "tag Value2")];
    assert_eq!(
        parse(body),
        Ok(vec![point("myMeasurement", &tags, vec![("fieldKey", FieldValue::Float(100.0))], None)])
    );
    // Emojis
    let body = r#"myMeasurement,tagKey=🍭 fieldKey="Launch 🚀" 1556813561098000000"#;
    let want =
        point("myMeasurement", &[("tagKey", "🍭")], vec![("fieldKey", s("Launch 🚀"))], Some(1556813561098000000));
    assert_eq!(parse(body), Ok(vec![want]));
    // The escape table: commas and spaces in measurements; commas, equals signs and spaces in tag keys,
    // tag values and field keys. An equals sign needs no escape in a measurement.
    let body = r"a\,b\ c=d,k\,\=\ 1=v\,\=\ 2 f\,\=\ 3=1";
    let want = point("a,b c=d", &[("k,= 1", "v,= 2")], vec![("f,= 3", FieldValue::Float(1.0))], None);
    assert_eq!(parse(body), Ok(vec![want]));
}

#[test]
fn escaping_backslashes() {
    // "Escaping backslashes": the table, in a string field value, where both `\"` and `\\` are escapes.
    let table =
        [(r"\", r"\"), (r"\\", r"\"), (r"\\\", r"\\"), (r"\\\\", r"\\"), (r"\\\\\", r"\\\"), (r"\\\\\\", r"\\\")];
    for (written, read) in table {
        let body = format!(r#"myMeasurement fieldKey="a{written}b""#);
        assert_eq!(value(&body), s(&format!("a{read}b")), "{body}");
    }
    // In names and tag values a backslash escapes only the characters of the escape table (as in
    // InfluxDB's own parser and the formal grammar of github.com/influxdata/line-protocol), so `\\` stays.
    let lines = parse(r"m\\x,k=a\\b f=1").unwrap();
    assert_eq!((&*lines[0].measurement, &*lines[0].tags[0].1), (r"m\\x", r"a\\b"));
}

#[test]
fn comments() {
    // "Comments".
    let body = "# This is a comment\nmyMeasurement fieldKey=\"string value\" 1556813561098000000";
    let want = point("myMeasurement", &[], vec![("fieldKey", s("string value"))], Some(1556813561098000000));
    assert_eq!(parse(body), Ok(vec![want]));
}

#[test]
fn whitespace() {
    // "Whitespace": the first unescaped space ends the measurement and tag set, the second the field set.
    let body = r"m,t=a\ b f=1,g=2 3";
    let want = point("m", &[("t", "a b")], vec![("f", FieldValue::Float(1.0)), ("g", FieldValue::Float(2.0))], Some(3));
    assert_eq!(parse(body), Ok(vec![want]));
    assert!(parse("m f=1 g=2").is_err());
}

#[test]
fn duplicate_points() {
    // "Duplicate points": the union of field sets, later conflicts winning, is the store's business; the
    // parser keeps every field, in order.
    let lines = parse("m f=1,f=2\nm f=3").unwrap();
    assert_eq!(lines[0].fields.len(), 2);
    assert_eq!(lines[1].fields[0].1, FieldValue::Float(3.0));
}
