//! Data-driven tests: one `check` per area, one line per case.

use std::borrow::Cow;

use expect_test::{Expect, expect};

use super::*;

/// Points as `measurement,tag=value field=value timestamp` with every name quoted, or errors as
/// `error line:column reason`; `;` separates points and errors.
fn render(body: &str) -> String {
    match parse(body) {
        Ok(lines) => lines.iter().map(render_line).collect::<Vec<_>>().join(" ; "),
        Err(errors) => {
            errors.iter().map(|e| format!("error {}:{} {}", e.line, e.column, e.reason)).collect::<Vec<_>>().join(" ; ")
        }
    }
}

fn render_line(l: &Line<'_>) -> String {
    let mut s = format!("{:?}", l.measurement);
    for (k, v) in &l.tags {
        s += &format!(",{k:?}={v:?}");
    }
    for (n, (k, v)) in l.fields.iter().enumerate() {
        let v = match v {
            FieldValue::Float(f) => format!("{f:?}"),
            FieldValue::Int(i) => format!("{i}i"),
            FieldValue::UInt(u) => format!("{u}u"),
            FieldValue::Bool(b) => format!("{b}"),
            FieldValue::Str(s) => format!("{s:?}"),
        };
        s += &format!("{}{k:?}={v}", if n == 0 { " " } else { "," });
    }
    if let Some(t) = l.timestamp {
        s += &format!(" {t}");
    }
    s
}

fn check(body: &str, expect: Expect) {
    expect.assert_eq(&render(body));
}

#[test]
#[rustfmt::skip]
fn escapes() {
    check(r"m\,1\ x f=1", expect![[r#""m,1 x" "f"=1.0"#]]);
    check(r"a=b f=1", expect![[r#""a=b" "f"=1.0"#]]);
    check(r"m\=1 f=1", expect![[r#""m\\=1" "f"=1.0"#]]);
    check(r"m\x f=1", expect![[r#""m\\x" "f"=1.0"#]]);
    // A name cannot end in a backslash: `\\ ` is a literal backslash and an escaped space.
    check(r"m\\ f=1", expect!["error 1:8 missing fields"]);
    check(r"m,t=a\ f=1", expect!["error 1:9 unescaped '=' in tag value"]);
    check(r"m\\\ x f=1", expect![[r#""m\\\\ x" "f"=1.0"#]]);
    check(r"m\\,t=1 f=1", expect![[r#""m\\,t=1" "f"=1.0"#]]);
    check(r"m,t\ k\,\==v\ 1\,\= f=1", expect![[r#""m","t k,="="v 1,=" "f"=1.0"#]]);
    check(r"m,k=v\x f=1", expect![[r#""m","k"="v\\x" "f"=1.0"#]]);
    check(r"m f\ 1\,\==1", expect![[r#""m" "f 1,="=1.0"#]]);
    check(r#"m f="a\"b\\c\d\\\"""#, expect![[r#""m" "f"="a\"b\\c\\d\\\"""#]]);
    check(r#"m f="a,b c=d""#, expect![[r#""m" "f"="a,b c=d""#]]);
    check(r#"m f="""#, expect![[r#""m" "f"="""#]]);
    check("m f=\"line 1\nline 2\",g=1i 5\nn f=2", expect![[r#""m" "f"="line 1\nline 2","g"=1i 5 ; "n" "f"=2.0"#]]);
    check("m f=\"cr\r\nlf\"", expect![[r#""m" "f"="cr\r\nlf""#]]);
    check(r#"m,quote="q" "f"="v""#, expect![[r#""m","quote"="\"q\"" "\"f\""="v""#]]);
    check("wärme,ort=köln 温度=1,emoji=\"🚀\"", expect![[r#""wärme","ort"="köln" "温度"=1.0,"emoji"="🚀""#]]);
    check("\u{1F36D},\u{1F36D}=\u{1F36D} \u{1F36D}=1", expect![[r#""🍭","🍭"="🍭" "🍭"=1.0"#]]);
    check("m\t1,t=a\tb f\tg=1", expect![[r#""m\t1","t"="a\tb" "f\tg"=1.0"#]]);
}

#[test]
#[rustfmt::skip]
fn field_types() {
    check("m f=1,f=1.0,f=-1.5e-10,f=1E+5,f=.5,f=-.5,f=1.,f=0,f=-0,f=007", expect![[r#""m" "f"=1.0,"f"=1.0,"f"=-1.5e-10,"f"=100000.0,"f"=0.5,"f"=-0.5,"f"=1.0,"f"=0.0,"f"=-0.0,"f"=7.0"#]]);
    check("m f=1.7976931348623157e308,f=5e-324,f=2.2250738585072014e-308", expect![[r#""m" "f"=1.7976931348623157e308,"f"=5e-324,"f"=2.2250738585072014e-308"#]]);
    check("m f=0.1,f=123456789.123456789,f=1e-400", expect![[r#""m" "f"=0.1,"f"=123456789.12345679,"f"=0.0"#]]);
    check("m i=0i,i=-0i,i=42i,i=9223372036854775807i,i=-9223372036854775808i", expect![[r#""m" "i"=0i,"i"=0i,"i"=42i,"i"=9223372036854775807i,"i"=-9223372036854775808i"#]]);
    check("m u=0u,u=42u,u=18446744073709551615u", expect![[r#""m" "u"=0u,"u"=42u,"u"=18446744073709551615u"#]]);
    check("m b=t,b=T,b=true,b=True,b=TRUE,b=f,b=F,b=false,b=False,b=FALSE", expect![[r#""m" "b"=true,"b"=true,"b"=true,"b"=true,"b"=true,"b"=false,"b"=false,"b"=false,"b"=false,"b"=false"#]]);
    check(r#"m s="t",s="1i",s="""#, expect![[r#""m" "s"="t","s"="1i","s"="""#]]);
    check("m f=1,f=2i,f=\"x\"", expect![[r#""m" "f"=1.0,"f"=2i,"f"="x""#]]);
}

#[test]
#[rustfmt::skip]
fn timestamps_and_layout() {
    check("m f=1 1556813561098000000", expect![[r#""m" "f"=1.0 1556813561098000000"#]]);
    check("m f=1 -1", expect![[r#""m" "f"=1.0 -1"#]]);
    check("m f=1 0", expect![[r#""m" "f"=1.0 0"#]]);
    check("m f=1 9223372036854775807", expect![[r#""m" "f"=1.0 9223372036854775807"#]]);
    check("m f=1 -9223372036854775808", expect![[r#""m" "f"=1.0 -9223372036854775808"#]]);
    check("m f=1   7   ", expect![[r#""m" "f"=1.0 7"#]]);
    check("m f=1 ", expect![[r#""m" "f"=1.0"#]]);
    check("m   f=1", expect![[r#""m" "f"=1.0"#]]);
    check("m,t=1    f=1", expect![[r#""m","t"="1" "f"=1.0"#]]);
    check("m f=1 1\r\nm f=2 2\r\n", expect![[r#""m" "f"=1.0 1 ; "m" "f"=2.0 2"#]]);
    check("m f=1\r", expect![[r#""m" "f"=1.0"#]]);
    check("", expect![[""]]);
    check("\n\n  \n\t\n\r\n", expect![[""]]);
    check("# comment\n  # indented comment\nm f=1\n#m f=2\n", expect![[r#""m" "f"=1.0"#]]);
    check("  \tm f=1", expect![[r#""m" "f"=1.0"#]]);
    check("a f=1\nb f=2\n\nc f=3", expect![[r#""a" "f"=1.0 ; "b" "f"=2.0 ; "c" "f"=3.0"#]]);
}

#[test]
#[rustfmt::skip]
fn errors() {
    check("m", expect!["error 1:2 missing fields"]);
    check("m ", expect!["error 1:3 missing fields"]);
    check("m,t=1", expect!["error 1:6 missing fields"]);
    check(",t=1 f=1", expect!["error 1:1 missing measurement"]);
    check("m, f=1", expect!["error 1:3 tag key is empty"]);
    check("m,=v f=1", expect!["error 1:3 tag key is empty"]);
    check("m,t f=1", expect!["error 1:4 expected '=' after tag key"]);
    check("m,t= f=1", expect!["error 1:5 tag value is missing"]);
    check("m,t=a=b f=1", expect!["error 1:6 unescaped '=' in tag value"]);
    check("m,t=a, f=1", expect!["error 1:7 tag key is empty"]);
    check("m =1", expect!["error 1:3 field key is empty"]);
    check("m f", expect!["error 1:4 expected '=' after field key"]);
    check("m f=", expect!["error 1:5 missing field value"]);
    check("m f= 1", expect!["error 1:5 missing field value"]);
    check("m f=,g=1", expect!["error 1:5 missing field value"]);
    check("m f=1,", expect!["error 1:7 field key is empty"]);
    check("m f=1,,g=2", expect!["error 1:7 field key is empty"]);
    check("m f=1.2.3", expect![[r#"error 1:5 invalid float "1.2.3""#]]);
    check("m f=1e", expect![[r#"error 1:5 invalid float "1e""#]]);
    check("m f=+1", expect![[r#"error 1:5 invalid field value "+1""#]]);
    check("m f=-", expect![[r#"error 1:5 invalid float "-""#]]);
    check("m f=.", expect![[r#"error 1:5 invalid float ".""#]]);
    check("m f=1e400", expect!["error 1:5 float out of range"]);
    check("m f=inf", expect![[r#"error 1:5 invalid field value "inf""#]]);
    check("m f=NaN", expect![[r#"error 1:5 invalid field value "NaN""#]]);
    check("m f=-inf", expect![[r#"error 1:5 invalid float "-inf""#]]);
    check("m f=0x10", expect![[r#"error 1:5 invalid float "0x10""#]]);
    check("m f=9223372036854775808i", expect!["error 1:5 integer out of range"]);
    check("m f=-9223372036854775809i", expect!["error 1:5 integer out of range"]);
    check("m f=1.5i", expect![[r#"error 1:5 invalid integer "1.5i""#]]);
    check("m f=-1u", expect![[r#"error 1:5 invalid unsigned integer "-1u""#]]);
    check("m f=18446744073709551616u", expect!["error 1:5 unsigned integer out of range"]);
    check("m f=tru", expect![[r#"error 1:5 invalid boolean "tru""#]]);
    check("m f=yes", expect![[r#"error 1:5 invalid field value "yes""#]]);
    check(r#"m f="abc"#, expect!["error 1:5 unterminated quoted string"]);
    check(r#"m f="a"b"#, expect!["error 1:8 unexpected character 'b' after field value"]);
    check(r#"m f='a'"#, expect![[r#"error 1:5 invalid field value "'a'""#]]);
    check("m f=1 12a", expect![[r#"error 1:7 invalid timestamp "12a""#]]);
    check("m f=1 1.5", expect![[r#"error 1:7 invalid timestamp "1.5""#]]);
    check("m f=1 99999999999999999999", expect!["error 1:7 timestamp out of range"]);
    check("m f=1 1 2", expect!["error 1:9 unexpected text after timestamp"]);
    check("m f=1\rx", expect![[r#"error 1:6 unexpected character '\r' after field value"#]]);
}

#[test]
#[rustfmt::skip]
fn errors_name_every_bad_line() {
    check("ok f=1\nbad\nok f=2\n  m f=x\nm,t f=1", expect![[r#"error 2:4 missing fields ; error 4:7 invalid field value "x" ; error 5:4 expected '=' after tag key"#]]);
    check("é,ü=ö f=oops", expect![[r#"error 1:9 invalid field value "oops""#]]);
    // A point spanning lines is reported by its first line; later lines keep their own numbers.
    check("m s=\"a\nb\",f=x\nbad", expect![[r#"error 1:13 invalid field value "x" ; error 3:4 missing fields"#]]);
    // A stray quote does not swallow the rest of the body.
    check("m s=\"oops\nbad\nm f=1", expect!["error 1:5 unterminated quoted string ; error 2:4 missing fields"]);
}

#[test]
fn unescaped_names_are_borrowed() {
    let body = r#"m,k=v f=1,s="x" 1"#;
    let lines = parse(body).unwrap();
    let l = &lines[0];
    assert!(matches!(l.measurement, Cow::Borrowed(_)));
    assert!(matches!((&l.tags[0].0, &l.tags[0].1), (Cow::Borrowed(_), Cow::Borrowed(_))));
    assert!(matches!(l.fields[0].0, Cow::Borrowed(_)));
    assert!(matches!(l.fields[1].1, FieldValue::Str(Cow::Borrowed(_))));
    // A backslash that escapes nothing needs no copy either.
    let lines = parse(r"m\x,k=a\b f=1").unwrap();
    assert!(matches!(lines[0].measurement, Cow::Borrowed(_)));
    assert!(matches!(lines[0].tags[0].1, Cow::Borrowed(_)));
}

#[test]
fn parse_each_lends_every_good_point() {
    let mut seen = Vec::new();
    let n = parse_each("a,t=1 f=1 1\nb g=2i,h=3i\nc,u=2,v=3 s=\"x\"", |l| seen.push(render_line(l)));
    assert_eq!(n, Ok(3));
    assert_eq!(seen, [r#""a","t"="1" "f"=1.0 1"#, r#""b" "g"=2i,"h"=3i"#, r#""c","u"="2","v"="3" "s"="x""#]);

    seen.clear();
    let errors = parse_each("a f=1\nbad\nc f=3", |l| seen.push(render_line(l))).unwrap_err();
    assert_eq!(seen, [r#""a" "f"=1.0"#, r#""c" "f"=3.0"#]);
    assert_eq!(errors.len(), 1);
}

fn check_precision(input: &str, expect: Expect) {
    let out = [Precision::parse_v1(input), Precision::parse_v2(input)].map(|p| match p {
        Ok(p) => format!("{p:?}"),
        Err(e) => e,
    });
    expect.assert_eq(&format!("v1: {} | v2: {}", out[0], out[1]));
}

#[test]
#[rustfmt::skip]
fn precision_names() {
    check_precision("n", expect![[r#"v1: Nanoseconds | v2: invalid precision "n", want one of ns, us, ms, s"#]]);
    check_precision("ns", expect!["v1: Nanoseconds | v2: Nanoseconds"]);
    check_precision("u", expect![[r#"v1: Microseconds | v2: invalid precision "u", want one of ns, us, ms, s"#]]);
    check_precision("us", expect!["v1: Microseconds | v2: Microseconds"]);
    check_precision("ms", expect!["v1: Milliseconds | v2: Milliseconds"]);
    check_precision("s", expect!["v1: Seconds | v2: Seconds"]);
    check_precision("m", expect![[r#"v1: Minutes | v2: invalid precision "m", want one of ns, us, ms, s"#]]);
    check_precision("h", expect![[r#"v1: Hours | v2: invalid precision "h", want one of ns, us, ms, s"#]]);
    check_precision("NS", expect![[r#"v1: invalid precision "NS", want one of n, ns, u, us, ms, s, m, h | v2: invalid precision "NS", want one of ns, us, ms, s"#]]);
}

fn check_millis(p: Precision, ts: i64, expect: Expect) {
    let ms = p.to_millis(ts);
    let back = ms.map(|ms| p.from_millis(ms));
    expect.assert_eq(&format!("{ms:?} -> {back:?}"));
}

#[test]
#[rustfmt::skip]
fn precision_conversion() {
    check_millis(Precision::Nanoseconds, 1_700_000_000_123_456_789, expect!["Some(1700000000123) -> Some(1700000000123000000)"]);
    check_millis(Precision::Nanoseconds, -1, expect!["Some(-1) -> Some(-1000000)"]);
    check_millis(Precision::Nanoseconds, -1_000_000, expect!["Some(-1) -> Some(-1000000)"]);
    check_millis(Precision::Nanoseconds, -1_000_001, expect!["Some(-2) -> Some(-2000000)"]);
    check_millis(Precision::Nanoseconds, i64::MIN, expect!["Some(-9223372036855) -> Some(-9223372036854775808)"]);
    check_millis(Precision::Microseconds, 1_700_000_000_123_456, expect!["Some(1700000000123) -> Some(1700000000123000)"]);
    check_millis(Precision::Microseconds, -1, expect!["Some(-1) -> Some(-1000)"]);
    check_millis(Precision::Milliseconds, i64::MAX, expect!["Some(9223372036854775807) -> Some(9223372036854775807)"]);
    check_millis(Precision::Seconds, 1_700_000_000, expect!["Some(1700000000000) -> Some(1700000000)"]);
    check_millis(Precision::Seconds, -1, expect!["Some(-1000) -> Some(-1)"]);
    check_millis(Precision::Seconds, i64::MAX / 1000 + 1, expect!["None -> None"]);
    check_millis(Precision::Minutes, 28_333_333, expect!["Some(1699999980000) -> Some(28333333)"]);
    check_millis(Precision::Minutes, i64::MIN / 60_000 - 1, expect!["None -> None"]);
    check_millis(Precision::Hours, 472_222, expect!["Some(1699999200000) -> Some(472222)"]);
    check_millis(Precision::Hours, i64::MAX / 3_600_000 + 1, expect!["None -> None"]);
    assert_eq!(Precision::Seconds.from_millis(-1), -1, "rounds toward negative infinity");
    assert_eq!(Precision::Nanoseconds.from_millis(i64::MAX), i64::MAX, "saturates");
}

/// Parses, re-encodes, and shows the encoding.
fn check_encode(body: &str, expect: Expect) {
    let mut out = String::new();
    for line in parse(body).unwrap() {
        if !out.is_empty() {
            out.push('\n');
        }
        encode(&line, &mut out);
    }
    expect.assert_eq(&out);
}

#[test]
#[rustfmt::skip]
fn encoding() {
    check_encode(r"m\,1\ x,t\ k\,\==v\ 1\,\= f\ 1\,\==1", expect![[r#"m\,1\ x,t\ k\,\==v\ 1\,\= f\ 1\,\==1"#]]);
    check_encode(r"a=b\x\\y f=1", expect![[r#"a=b\x\\y f=1"#]]);
    check_encode(r#"m s="a\"b\\c\d",s2="x\ny""#, expect![[r#"m s="a\"b\\c\\d",s2="x\\ny""#]]);
    check_encode("m f=1.0,f=-0,f=0.1,f=1e15,f=1e16,f=1.5e300,f=5e-324,f=0.00001,f=0.000001 7", expect!["m f=1,f=-0,f=0.1,f=1000000000000000,f=1e16,f=1.5e300,f=5e-324,f=0.00001,f=1e-6 7"]);
    check_encode("m f=-1.7976931348623157e308,f=123456.789e3", expect!["m f=-1.7976931348623157e308,f=123456789"]);
    check_encode("m i=-9223372036854775808i,u=18446744073709551615u,b=T,b=false", expect!["m i=-9223372036854775808i,u=18446744073709551615u,b=true,b=false"]);
}

#[test]
fn encoding_keeps_raw_newlines_in_strings() {
    let body = "m s=\"two\nlines\r\n\",n=1i 5";
    let lines = parse(body).unwrap();
    let mut out = String::new();
    encode(&lines[0], &mut out);
    assert_eq!(out, body);
}

#[test]
fn encoding_non_finite_floats() {
    let mut out = String::new();
    let line = Line {
        measurement: "m".into(),
        tags: vec![],
        fields: vec![("a".into(), FieldValue::Float(f64::NAN)), ("b".into(), FieldValue::Float(f64::NEG_INFINITY))],
        timestamp: None,
    };
    encode(&line, &mut out);
    expect!["m a=NaN,b=-inf"].assert_eq(&out);
    // ... which the parser refuses, as InfluxDB does.
    assert!(parse(&out).is_err());
}

fn check_series(body: &str, precision: Precision, extra: &[(&str, &str)], expect: Expect) {
    let lines = parse(body).unwrap();
    let out = match to_series(&lines, precision, 1_000, extra) {
        Ok(c) => {
            let samples = c.samples.iter().map(|(l, s)| format!("{l} {} @{}", s.v, s.t));
            let events = c.events.iter().map(|e| format!("{} {:?} @{}", e.labels, e.text, e.t));
            samples.chain(events).collect::<Vec<_>>().join(" ; ")
        }
        Err(e) => format!("error: {e}"),
    };
    expect.assert_eq(&out);
}

#[test]
#[rustfmt::skip]
fn series() {
    let ns = Precision::Nanoseconds;
    check_series("gpu,host=a util=43.5,mem=7i,ok=true,n=3u 1700000000123456789", ns, &[], expect![[r#"gpu_util{host="a"} 43.5 @1700000000123 ; gpu_mem{host="a"} 7 @1700000000123 ; gpu_ok{host="a"} 1 @1700000000123 ; gpu_n{host="a"} 3 @1700000000123"#]]);
    check_series("gpu,host=a xid=\"Xid 79: fallen off the bus\"", ns, &[], expect![[r#"gpu_xid{host="a"} "Xid 79: fallen off the bus" @1000"#]]);
    check_series("m,db=tag,host=a f=1", ns, &[("db", "arg"), ("zone", "z")], expect![[r#"m_f{db="arg", host="a", zone="z"} 1 @1000"#]]);
    check_series("m,__name__=x f=1", ns, &[], expect!["m_f{} 1 @1000"]);
    check_series("m f=1 -1", ns, &[], expect!["m_f{} 1 @-1"]);
    check_series("m f=1 2\nm f=1 9223372036854775807", Precision::Seconds, &[], expect!["error: point 1: timestamp 9223372036854775807 in Seconds does not fit in milliseconds"]);
}

#[test]
fn series_names() {
    let name = |m: &str, f: &str| {
        let mut out = String::from("prefix:");
        series_name(m, f, &mut out);
        out
    };
    assert_eq!(name("gpu", "util"), "prefix:gpu_util");
    assert_eq!(name("", "util"), "prefix:util");
    assert_eq!(field_as_f64(&FieldValue::Bool(false)), Some(0.0));
    assert_eq!(field_as_f64(&FieldValue::UInt(u64::MAX)), Some(18446744073709551615.0));
    assert_eq!(field_as_f64(&FieldValue::Str("1".into())), None);
}
