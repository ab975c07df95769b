//! Golden expansions: each expected string is what Prometheus 2.42 printed for the same template
//! (alerting rules evaluated by the Debian package's `prometheus`, read from `/api/v1/alerts`).

use super::*;
use expect_test::{Expect, expect};

fn data_labels() -> Labels {
    Labels::from_pairs([("__name__", "up"), ("instance", "node-1.example.com:9100"), ("job", "node")])
}

fn run(text: &str, value: f64) -> String {
    let labels = data_labels();
    let ext = Labels::from_pairs([("ext", "one")]);
    let data = Data { labels: &labels, value, external_labels: &ext, external_url: "http://example.com:9090/prom" };
    let mut query = |q: &str| -> Result<Vec<(Labels, f64)>, String> {
        match q {
            "vector(2)" => Ok(vec![(Labels::default(), 2.0)]),
            "up" => Ok(vec![
                (Labels::from_pairs([("__name__", "up"), ("instance", "b")]), 0.0),
                (Labels::from_pairs([("__name__", "up"), ("instance", "a")]), 1.0),
            ]),
            "none" => Ok(vec![]),
            q => Err(format!("no data for {q}")),
        }
    };
    match Template::parse(text) {
        Ok(t) => t.expand("__alert_A", &data, &mut query).unwrap_or_else(|e| format!("error: {e}")),
        Err(e) => format!("parse error: {e}"),
    }
}

fn check(text: &str, value: f64, expect: Expect) {
    expect.assert_eq(&run(text, value));
}

#[test]
fn values_and_labels() {
    check(
        "{{ $labels.job }}/{{ .Labels.instance }} {{ $value }} {{ .Value }}",
        93.5,
        expect!["node/node-1.example.com:9100 93.5 93.5"],
    );
    check("[{{ $labels.nope }}] [{{ index $labels \"nope\" }}] [{{ .ExternalLabels.foo }}]", 1.0, expect!["[] [] []"]);
    check("{{ $labels }}", 1.0, expect!["map[__name__:up instance:node-1.example.com:9100 job:node]"]);
    check(
        "{{ $externalLabels }} {{ $externalURL }} {{ externalURL }} {{ pathPrefix }}",
        1.0,
        expect!["map[ext:one] http://example.com:9090/prom http://example.com:9090/prom /prom"],
    );
    check("{{ $value }} {{ humanize $value }}", 1234567.5, expect!["1.2345675e+06 1.235M"]);
    check("{{ 1.0 }}|{{ 1e3 }}|{{ 07 }}|{{ len $labels }}|{{ 'a' }}|{{ 0x1F }}", 1.0, expect!["1|1000|7|3|97|31"]);
    check("{{- $labels.job -}} \n {{- \" x\" }}", 1.0, expect!["node x"]);
    check("a{{/* a comment */}}b {{- /* trimmed */ -}} c", 1.0, expect!["abc"]);
}

#[test]
fn prometheus_functions() {
    check(
        "{{ humanize 1234567 }} {{ humanize 0.0012345 }} {{ humanize 0 }} {{ humanize 999.95 }}",
        0.0,
        expect!["1.235M 1.234m 0 1000"],
    );
    check(
        "{{ humanizeDuration 90061 }} {{ humanizeDuration 0.0015 }} {{ humanizeDuration 59.5 }} {{ humanizeDuration 0 }}",
        0.0,
        expect!["1d 1h 1m 1s 1.5ms 59.5s 0s"],
    );
    check(
        "{{ humanize1024 1048576 }} {{ humanizePercentage 0.12345 }} {{ $value | humanizePercentage }}",
        0.5,
        expect!["1Mi 12.35% 50%"],
    );
    check(
        "{{ humanizeTimestamp 1435065584.128 }} | {{ toTime 1435065584 }}",
        0.0,
        expect!["2015-06-23 13:19:44.128 +0000 UTC | 2015-06-23 13:19:44 +0000 UTC"],
    );
    check(
        "{{ humanize \"2048\" }} {{ humanize \"x\" }}",
        0.0,
        expect![[
            r#"error: error executing template __alert_A: template: __alert_A:1:137: executing "__alert_A" at <humanize "x">: error calling humanize: strconv.ParseFloat: parsing "x": invalid syntax"#
        ]],
    );
    check(
        "{{ args 1 \"a\" }} {{ (args 1).arg1 }} {{ title \"hello wORld-x_y\" }}",
        0.0,
        expect!["map[arg0:1 arg1:a] <no value> Hello WORld-X_y"],
    );
    check(
        "{{ stripDomain \"foo.bar:80\" }} {{ stripDomain \"10.0.0.1:80\" }} {{ stripPort \"[::1]:80\" }} {{ stripPort \"host\" }}",
        0.0,
        expect!["foo:80 10.0.0.1:80 ::1 host"],
    );
    check(
        "{{ parseDuration \"1h30m\" }} {{ graphLink \"up == 0\" }} {{ tableLink \"a\" }}",
        0.0,
        expect!["5400 /graph?g0.expr=up+%3D%3D+0&g0.tab=0 /graph?g0.expr=a&g0.tab=1"],
    );
    check(
        "{{ reReplaceAll \"(.*):.*\" \"$1\" $labels.instance }} {{ match \"^node\" $labels.job }} {{ toUpper \"ab\" }}{{ toLower \"CD\" }}",
        0.0,
        expect!["node-1.example.com true ABcd"],
    );
}

#[test]
fn queries() {
    check(
        "{{ with query \"vector(2)\" }}{{ . | first | value }}{{ end }}|{{ (query \"vector(2)\" | first).Labels }}|{{ first (query \"vector(2)\") }}",
        0.0,
        expect!["2|map[]|{map[] 2}"],
    );
    check(
        "{{ range query \"up\" | sortByLabel \"instance\" }}{{ .Labels.instance }}={{ .Value }} {{ end }}",
        0.0,
        expect!["a=1 b=0 "],
    );
    check("{{ range $i, $s := query \"up\" }}{{ $i }}:{{ label \"instance\" $s }} {{ end }}", 0.0, expect!["0:b 1:a "]);
    check("{{ range query \"none\" }}x{{ else }}empty{{ end }}", 0.0, expect!["empty"]);
    check(
        "{{ query \"none\" | first }}",
        0.0,
        expect![[
            r#"error: error executing template __alert_A: template: __alert_A:1:130: executing "__alert_A" at <first>: error calling first: first() called on vector with no elements"#
        ]],
    );
    check(
        "{{ query \"bad\" }}",
        0.0,
        expect![[
            r#"error: error executing template __alert_A: template: __alert_A:1:115: executing "__alert_A" at <query "bad">: error calling query: no data for bad"#
        ]],
    );
}

#[test]
fn control_flow() {
    check("{{ if gt $value 80.0 }}hot{{ else if gt $value 50.0 }}warm{{ else }}cold{{ end }}", 93.0, expect!["hot"]);
    check("{{ if gt $value 80.0 }}hot{{ else if gt $value 50.0 }}warm{{ else }}cold{{ end }}", 60.0, expect!["warm"]);
    check("{{ if gt $value 80.0 }}hot{{ else if gt $value 50.0 }}warm{{ else }}cold{{ end }}", 6.0, expect!["cold"]);
    check(
        "{{ gt $value 5 }}",
        6.0,
        expect![[
            r#"error: error executing template __alert_A: template: __alert_A:1:115: executing "__alert_A" at <gt $value 5>: error calling gt: incompatible types for comparison"#
        ]],
    );
    check(
        "{{ with $labels.job }}job={{ . }}{{ end }}{{ with $labels.nope }}x{{ else }} none{{ end }}",
        0.0,
        expect!["job=node none"],
    );
    check(
        "{{ range $k, $v := $labels }}{{ if eq $k \"__name__\" }}{{ continue }}{{ end }}{{ $k }}={{ $v }};{{ end }}",
        0.0,
        expect!["instance=node-1.example.com:9100;job=node;"],
    );
    check("{{ $x := 1 }}{{ if true }}{{ $x = 2 }}{{ end }}{{ $x }}", 0.0, expect!["2"]);
    check(
        "{{ and 1 0 2 }} {{ or 0 \"\" \"z\" }} {{ not 0 }} {{ and $labels.job (eq $labels.job \"node\") }}",
        0.0,
        expect!["0 z true true"],
    );
    check(
        "{{ eq $labels.job \"a\" \"node\" }} {{ ne 1 2 }} {{ le 2 2 }} {{ lt \"a\" \"b\" }} {{ ge 1.5 2.5 }}",
        0.0,
        expect!["true true true true false"],
    );
    check(
        "{{ print 1 2 \"a\" 3 }}|{{ println \"x\" 1 }}|{{ html \"<a&'>\" }}|{{ urlquery \"a b/c\" }}|{{ js \"a'b\" }}",
        0.0,
        expect![[r#"1 2a3|x 1
|&lt;a&amp;&#39;&gt;|a+b%2Fc|a\'b"#]],
    );
}

#[test]
fn printf_as_go() {
    check(
        r#"{{ printf "%.2f|%5.1f|%d|%s|%v|%q|%x|%e|%g" $value 3.14159 42 "s" 1e21 "q\n" 255 1234.5678 0.00001234 }}"#,
        1234567.5,
        expect![[r#"1234567.50|  3.1|42|s|1e+21|"q\n"|ff|1.234568e+03|1.234e-05"#]],
    );
    check(r#"{{ printf "%.0f %0.0f %.4g %.4g" $value $value $value 100000.0 }}"#, 2.5, expect!["2 2 2.5 1e+05"]);
    check(
        r#"{{ printf "%d %s %f" 1.5 2 "x" }}|{{ printf "%d" }}|{{ printf "%d" 1 2 }}"#,
        0.0,
        expect!["%!d(float64=1.5) %!s(int=2) %!f(string=x)|%!d(MISSING)|1%!(EXTRA int=2)"],
    );
    check(
        r#"{{ printf "%-5s|%05d|%+.1f|%8.3e|%%" "ab" 42 3.0 123456.0 }}"#,
        0.0,
        expect!["ab   |00042|+3.0|1.235e+05|%"],
    );
    check(
        r#"{{ printf "%v %v %v %v %v" 100000.0 1000000.0 0.0001 0.00001 -0.5 }}"#,
        0.0,
        expect!["100000 1e+06 0.0001 1e-05 -0.5"],
    );
}

#[test]
fn parse_errors() {
    check("{{ humanise $value }}", 0.0, expect![[r#"parse error: template: 1:4: function "humanise" not defined"#]]);
    check("{{ $nope }}", 0.0, expect![[r#"parse error: template: 1:4: undefined variable "$nope""#]]);
    check("a\n{{ if $value }}x", 0.0, expect!["parse error: template: 2:17: unexpected EOF in if"]);
    check("{{ end }}", 0.0, expect!["parse error: template: 1:1: unexpected {{end}}"]);
    check("{{ $labels.job", 0.0, expect!["parse error: template: 1:1: unclosed action"]);
    check(
        "{{ template \"x\" }}",
        0.0,
        expect!["parse error: template: 1:1: {{template}} is not supported in rule templates"],
    );
    check("{{ $value | 3 }}", 0.0, expect!["parse error: template: 1:13: non executable command in pipeline stage 2"]);
    check("{{ break }}", 0.0, expect!["parse error: template: 1:1: {{break}} outside {{range}}"]);
    check(
        "{{ .Foo }}",
        0.0,
        expect![[
            r#"error: error executing template __alert_A: template: __alert_A:1:115: executing "__alert_A" at <.Foo>: can't evaluate field Foo in type struct { Labels map[string]string; ExternalLabels map[string]string; ExternalURL string; Value interface {} }"#
        ]],
    );
}

#[test]
fn values_print_as_go_does() {
    let got: Vec<String> = [1.0, 0.25, 1e21, 1.5e-5, -3.0, 1234567.5, 100000.0, 1e6, 0.0001, f64::NAN, f64::INFINITY]
        .map(format_value)
        .to_vec();
    expect![[
        r#"["1", "0.25", "1e+21", "1.5e-05", "-3", "1.2345675e+06", "100000", "1e+06", "0.0001", "NaN", "+Inf"]"#
    ]]
    .assert_eq(&format!("{got:?}"));
}

#[test]
fn finds_query_calls() {
    let uses = |t: &str| Template::parse(t).unwrap().uses_query();
    assert!(uses("{{ with (query \"up\") }}{{ end }}"));
    assert!(uses("{{ if true }}{{ range query \"up\" }}{{ end }}{{ end }}"));
    assert!(!uses("{{ $labels.query }} query"));
}
