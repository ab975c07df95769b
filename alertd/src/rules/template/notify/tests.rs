//! Notification templates over Alertmanager's data: each expected string is what Alertmanager
//! 0.25's text/template gives for the same text and data (worked out from Go's rules; the
//! side-by-side test against the real Alertmanager checks the whole path).

use super::*;
use expect_test::{Expect, expect};
use std::collections::BTreeMap;

fn kv(pairs: &[(&str, &str)]) -> Rc<BTreeMap<String, String>> {
    Rc::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
}

fn alert(status: &str, labels: &[(&str, &str)], summary: &str) -> Rc<AlertData> {
    Rc::new(AlertData {
        status: status.into(),
        labels: kv(labels),
        annotations: kv(&[("summary", summary)]),
        // 2023-04-05T06:07:08Z
        starts_at: 1_680_674_828_000,
        ends_at: -62_135_596_800_000,
        generator_url: "http://prom/graph".into(),
        fingerprint: "abc".into(),
    })
}

fn data() -> Rc<NotifyData> {
    Rc::new(NotifyData {
        receiver: "team\\.x".into(),
        status: "firing".into(),
        alerts: Rc::new(vec![
            alert("firing", &[("alertname", "GpuHot"), ("instance", "n1"), ("zone", "a")], "n1 is hot"),
            alert("resolved", &[("alertname", "GpuHot"), ("instance", "n2"), ("zone", "a")], "n2 was hot"),
            alert("firing", &[("alertname", "GpuHot"), ("instance", "n3"), ("zone", "a")], "n3 is hot"),
        ]),
        group_labels: kv(&[("alertname", "GpuHot")]),
        common_labels: kv(&[("alertname", "GpuHot"), ("zone", "a")]),
        common_annotations: kv(&[]),
        external_url: "http://am:9093".into(),
    })
}

fn run_with(files: &[(&str, &str)], text: &str) -> String {
    let mut lib = crate::receiver::notification::defaults().clone();
    for (f, t) in files {
        if let Err(e) = lib.add_file(f, t) {
            return format!("file error: {e}");
        }
    }
    match lib.parse_text(text) {
        Ok(t) => t.execute(&data()).unwrap_or_else(|e| format!("error: {e}")),
        Err(e) => format!("parse error: {e}"),
    }
}

fn check(text: &str, expect: Expect) {
    expect.assert_eq(&run_with(&[], text));
}

#[test]
fn the_data() {
    check(
        "{{ .Receiver }} {{ .Status }} {{ .ExternalURL }} {{ len .Alerts }}",
        expect![[r#"team\.x firing http://am:9093 3"#]],
    );
    check("{{ .Alerts.Firing | len }}/{{ .Alerts.Resolved | len }}", expect!["2/1"]);
    check(
        "{{ range .Alerts.Firing }}{{ .Labels.instance }}:{{ .Annotations.summary }};{{ end }}",
        expect!["n1:n1 is hot;n3:n3 is hot;"],
    );
    check(
        "{{ range .Alerts }}{{ .Status }} {{ .Fingerprint }} {{ .GeneratorURL }}|{{ end }}",
        expect!["firing abc http://prom/graph|resolved abc http://prom/graph|firing abc http://prom/graph|"],
    );
    check(
        "{{ (index .Alerts 0).StartsAt }}|{{ (index .Alerts 0).StartsAt.Format \"2006-01-02 15:04\" }}|{{ (index .Alerts 0).StartsAt.Unix }}",
        expect!["2023-04-05 06:07:08 +0000 UTC|2023-04-05 06:07|1680674828"],
    );
    check(
        "[{{ .CommonLabels.nope }}] {{ .CommonLabels.zone }} {{ .CommonLabels }}",
        expect!["[] a map[alertname:GpuHot zone:a]"],
    );
    check(
        "{{ .Nope }}",
        expect![[
            r#"error: template: :1:3: executing "" at <.Nope>: can't evaluate field Nope in type *template.Data"#
        ]],
    );
}

#[test]
fn kv_methods() {
    check(
        "{{ range .CommonLabels.SortedPairs }}{{ .Name }}={{ .Value }} {{ end }}",
        expect!["alertname=GpuHot zone=a "],
    );
    // alertname first, the rest in order.
    check(
        "{{ (index .Alerts 0).Labels.Names }} {{ (index .Alerts 0).Labels.Values }}",
        expect!["[alertname instance zone] [GpuHot n1 a]"],
    );
    check("{{ .CommonLabels.SortedPairs.Values | join \",\" }}", expect!["GpuHot,a"]);
    check("{{ with .CommonLabels.Remove .GroupLabels.Names }}{{ .Values | join \" \" }}{{ end }}", expect!["a"]);
    check("{{ .CommonLabels.Remove (stringSlice \"zone\") }}", expect!["map[alertname:GpuHot]"]);
    check(
        "{{ .CommonLabels.Remove }}",
        expect![[
            r#"error: template: :1:3: executing "" at <.CommonLabels.Remove>: wrong number of args for Remove: want 1 got 0"#
        ]],
    );
}

#[test]
fn alertmanager_functions() {
    check(
        "{{ toUpper \"firing\" }} {{ toLower \"ABC\" }} {{ title \"hELLO wORLD node_exporter\" }}",
        expect!["FIRING abc Hello World Node_exporter"],
    );
    check("{{ join \"-\" (stringSlice \"a\" \"b\" \"c\") }}", expect!["a-b-c"]);
    check("{{ match \"^n[0-9]$\" \"n1\" }} {{ match \"x\" \"n1\" }}", expect!["true false"]);
    check("{{ reReplaceAll \"(n)([0-9])\" \"$2$1\" \"n1 n2\" }} {{ safeHtml \"<b>\" }}", expect!["1n 2n <b>"]);
    check(
        "{{ .ExternalURL | urlquery }} {{ html \"<a>\" }} {{ printf \"%05.1f\" 3.14159 }}",
        expect!["http%3A%2F%2Fam%3A9093 &lt;a&gt; 003.1"],
    );
    // Prometheus' functions are not Alertmanager's.
    check("{{ humanize 1 }}", expect![[r#"parse error: template: :1:4: function "humanize" not defined"#]]);
}

#[test]
fn define_template_and_block() {
    let file = "{{ define \"my.title\" }}[{{ .Status | toUpper }}] {{ .GroupLabels.alertname }}{{ end }}\n\
                {{ define \"my.list\" }}{{ range . }}- {{ .Labels.instance }}\n{{ end }}{{ end }}";
    let run = |text| run_with(&[("/etc/am/my.tmpl", file)], text);
    assert_eq!(run("{{ template \"my.title\" . }}"), "[FIRING] GpuHot");
    assert_eq!(run("{{ template \"my.list\" .Alerts.Firing }}"), "- n1\n- n3\n");
    // A block defines its body and runs it; a define in the text overrides it.
    assert_eq!(run("{{ block \"b\" . }}<{{ .Status }}>{{ end }}"), "<firing>");
    assert_eq!(run("{{ define \"b\" }}mine{{ end }}{{ block \"b\" . }}<{{ .Status }}>{{ end }}"), "<firing>");
    assert_eq!(run("{{ define \"x\" }}X{{ $ | len }}{{ end }}{{ template \"x\" .Alerts }}"), "X3");
    assert_eq!(run("{{ template \"my.tmpl\" }}"), "\n");
    assert_eq!(run("a {{- template \"my.title\" . -}} \n b"), "a[FIRING] GpuHotb");
    // A later file replaces a name, but an empty definition never hides one.
    let over = "{{ define \"my.title\" }}other{{ end }}{{ define \"my.list\" }} {{ end }}";
    let run2 = |text| run_with(&[("a.tmpl", file), ("b.tmpl", over)], text);
    assert_eq!(run2("{{ template \"my.title\" . }}|{{ template \"my.list\" .Alerts.Firing }}"), "other|- n1\n- n3\n");
}

#[test]
fn alertmanagers_default_templates() {
    check("{{ template \"__subject\" . }}", expect!["[FIRING:2] GpuHot (a)"]);
    check("{{ template \"slack.default.title\" . }}", expect!["[FIRING:2] GpuHot (a)"]);
    check(
        "{{ template \"slack.default.fallback\" . }}",
        expect![[r#"[FIRING:2] GpuHot (a) | http://am:9093/#/alerts?receiver=team%5C.x"#]],
    );
    check("{{ template \"pagerduty.default.client\" . }}", expect!["Alertmanager"]);
    check(
        "{{ template \"opsgenie.default.description\" . }}",
        expect![[r#"

Alerts Firing:
Labels:
 - alertname = GpuHot
 - instance = n1
 - zone = a
Annotations:
 - summary = n1 is hot
Source: http://prom/graph
Labels:
 - alertname = GpuHot
 - instance = n3
 - zone = a
Annotations:
 - summary = n3 is hot
Source: http://prom/graph

Alerts Resolved:
Labels:
 - alertname = GpuHot
 - instance = n2
 - zone = a
Annotations:
 - summary = n2 was hot
Source: http://prom/graph
"#]],
    );
    check("{{ template \"email.default.subject\" . }}", expect!["[FIRING:2] GpuHot (a)"]);
    let html = run_with(&[], "{{ template \"email.default.html\" . }}");
    assert!(html.contains("<title>[FIRING:2] GpuHot (a)</title>"), "{html}");
}

#[test]
fn errors_name_the_file_and_position() {
    check("{{ template \"nope\" . }}", expect![[r#"parse error: template: :1:1: no such template "nope""#]]);
    check("ok\n  {{ if .Status }}", expect!["parse error: template: :2:19: unexpected EOF in if"]);
    check(
        "{{ if .Status }}{{ define \"x\" }}{{ end }}{{ end }}",
        expect!["parse error: template: :1:17: unexpected <define> in command"],
    );
    expect!["file error: template: /t/a.tmpl:2:4: function \"nope\" not defined"]
        .assert_eq(&run_with(&[("/t/a.tmpl", "{{ define \"a\" }}\n{{ nope }}{{ end }}")], ""));
    // A failure inside a named template names the template and its file.
    expect![[
        r#"error: template: b.tmpl:1:21: executing "b" at <.Nope>: can't evaluate field Nope in type *template.Data"#
    ]]
    .assert_eq(&run_with(&[("b.tmpl", "{{ define \"b\" }}x {{ .Nope }}{{ end }}")], "{{ template \"b\" . }}"));
    let mut lib = Library::default();
    lib.add_file("c.tmpl", "{{ define \"c\" }}\n {{ template \"d\" . }}{{ end }}").unwrap();
    expect![[r#"template: c.tmpl:2:2: no such template "d""#]].assert_eq(&lib.check().unwrap_err().to_string());
    check(
        "{{ define \"loop\" }}{{ template \"loop\" . }}{{ end }}{{ template \"loop\" . }}",
        expect![[
            r#"error: template: :1:19: executing "loop" at <{{template "loop" .}}>: exceeded maximum template depth (100)"#
        ]],
    );
}

#[test]
fn html_output_escapes_what_actions_print() {
    let mut d = (*data()).clone();
    d.common_annotations = kv(&[("summary", "<b>a+b & \"c\"</b>")]);
    let d = Rc::new(d);
    let lib = crate::receiver::notification::defaults();
    let t = lib
        .parse_text("<p>{{ .CommonAnnotations.summary }}</p>{{ safeHtml .CommonAnnotations.summary }}|{{ html \"<\" }}")
        .unwrap();
    assert_eq!(
        t.execute_html(&d).unwrap(),
        "<p>&lt;b&gt;a&#43;b &amp; &#34;c&#34;&lt;/b&gt;</p><b>a+b & \"c\"</b>|&lt;"
    );
    assert_eq!(t.execute(&d).unwrap(), "<p><b>a+b & \"c\"</b></p><b>a+b & \"c\"</b>|&lt;");
    // Named templates' actions are escaped too; their text is HTML as written.
    let t = lib.parse_text("{{ template \"email.default.html\" . }}").unwrap();
    let html = t.execute_html(&d).unwrap();
    assert!(html.contains("<a href=\"http://am:9093/#/alerts?receiver=team%5C.x\""), "{html}");
}
