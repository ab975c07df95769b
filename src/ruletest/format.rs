//! Values written as promtool writes them in its failure reports (Go's formatting), so that a
//! report from Argus reads like one from promtool.

/// A label set as Prometheus' `Labels.String()`: `{a="x", b="y"}`, values quoted as Go's `%q`.
pub fn labels<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let inner: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={}", quote(v))).collect();
    format!("{{{}}}", inner.join(", "))
}

/// A string as Go's `strconv.Quote`, as rule templates quote it.
pub use argus_alertd::rules::template::go_quote as quote;

/// A float as Go's `strconv.FormatFloat(v, 'E', -1, 64)`: `1E+00`, `6.1E+01`, `-2.5E-03`.
pub fn float_e(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "+Inf".into() } else { "-Inf".into() };
    }
    let s = format!("{v:E}");
    let Some((mantissa, exp)) = s.split_once('E') else { return s };
    let (sign, digits) = exp.strip_prefix('-').map_or(("+", exp), |d| ("-", d));
    format!("{mantissa}E{sign}{digits:0>2}")
}

/// Milliseconds as Go's `time.Duration.String()`: `0s`, `1m0s`, `1h0m0s`, `1.5s`.
pub fn go_duration(ms: i64) -> String {
    if ms == 0 {
        return "0s".into();
    }
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    if ms < 1000 {
        return format!("{sign}{ms}ms");
    }
    let (h, m, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    let secs = if frac == 0 {
        format!("{s}s")
    } else {
        let f = format!("{frac:03}");
        format!("{s}.{}s", f.trim_end_matches('0'))
    };
    match (h, m) {
        (0, 0) => format!("{sign}{secs}"),
        (0, m) => format!("{sign}{m}m{secs}"),
        (h, m) => format!("{sign}{h}h{m}m{secs}"),
    }
}

/// Every line of `lines` after the first indented by `indent` (promtool's `indentLines`).
pub fn indent_lines(lines: &str, indent: &str) -> String {
    lines.split('\n').collect::<Vec<_>>().join(&format!("\n{indent}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn go_formatting() {
        let floats: Vec<String> = [1.0, 0.0, 61.0, -0.0025, 1e21, f64::NAN, f64::NEG_INFINITY].map(float_e).to_vec();
        expect![[r#"["1E+00", "0E+00", "6.1E+01", "-2.5E-03", "1E+21", "NaN", "-Inf"]"#]]
            .assert_eq(&format!("{floats:?}"));
        let durations: Vec<String> = [0, 1500, 60_000, 3_600_000, 86_400_000, 250].map(go_duration).to_vec();
        expect![[r#"["0s", "1.5s", "1m0s", "1h0m0s", "24h0m0s", "250ms"]"#]].assert_eq(&format!("{durations:?}"));
        expect![[r#"{alertname="A", msg="say \"hi\"\n"}"#]]
            .assert_eq(&labels([("alertname", "A"), ("msg", "say \"hi\"\n")]));
        expect![[r#"
            [
                0:
                ]"#]]
        .assert_eq(&indent_lines("[\n0:\n]", "    "));
    }
}
