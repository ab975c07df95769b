//! Notification templates side by side with the real Alertmanager 0.25 (Debian package
//! prometheus-alertmanager): one configuration, whose Slack receiver's fields name templates from
//! two files (Alertmanager's documented `myorg.tmpl`, tests/fixtures/alertmanager-templates, and
//! one that uses the data and every function Alertmanager 0.25 has), loaded by both. Alertmanager
//! posts its Slack message to a listener on loopback; alertd renders its message for the same
//! alerts; the rendered `title`, `text`, `pretext`, `fallback`, `color`, `channel` and `username`
//! must be equal.

use argus_alertd::Timestamp;
use argus_alertd::alert::Alert;
use argus_alertd::notify::Notification;
use argus_alertd::webhook::{Input, message};
use argus_model::Labels;
use serde_json::{Value, json};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

struct Daemon(Child);

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Uses the data (`.Alerts.Firing`/`.Resolved`, `SortedPairs`, `Remove`, `Names`, times and their
/// `Format`), the functions of Alertmanager 0.25, `block`, white-space trimming and a default
/// template.
const GPU_TMPL: &str = r#"{{ define "gpu.title" }}[{{ .Status | toUpper }}{{ if eq .Status "firing" }}:{{ .Alerts.Firing | len }}{{ end }}] {{ .CommonLabels.alertname }} {{ title .CommonLabels.severity }} {{ title "gpu-node xid_error DOWN" }}{{ end }}

{{ define "gpu.text" }}{{ range .Alerts.Firing }}*{{ .Labels.alertname }}* on {{ .Labels.instance }}: {{ .Annotations.summary }} (since {{ .StartsAt.Format "2006-01-02 15:04:05 MST" }}, {{ .StartsAt }}, {{ .EndsAt }})
{{ end }}{{ range .Alerts.Resolved -}}
resolved: {{ .Labels.instance }} at {{ .EndsAt.Format "Jan _2 15:04" }} {{ .Fingerprint }} {{ .GeneratorURL }}
{{ end -}}
{{ range .CommonLabels.SortedPairs }}{{ .Name }}={{ .Value }} {{ end }}
{{ with .CommonLabels.Remove .GroupLabels.Names }}{{ .Names | join "," }}: {{ .Values | join "," }}{{ end }}
{{ if match "^gpu-[0-9]+$" (index .Alerts 0).Labels.instance }}matched{{ end }} {{ reReplaceAll "gpu-(\\d+)" "node $1" (index .Alerts 0).Labels.instance }} {{ join "|" (stringSlice "a" "b") }} {{ printf "%d alerts, %q" (len .Alerts) .Receiver }} {{ safeHtml "<b>" }} {{ toLower "ABC" }} {{ .ExternalURL }}
{{ block "gpu.footer" . }}{{ len .CommonAnnotations }} common annotations{{ end }}
{{ template "__text_alert_list" .Alerts.Firing }}{{ end }}
"#;

const RECEIVER: &str = r#"route:
  receiver: gpu.team
  group_by: [alertname, app]
  group_wait: 1s
  group_interval: 1m
receivers:
  - name: gpu.team
    slack_configs:
      - api_url: http://127.0.0.1:PORT/slack
        channel: '#gpu-{{ .GroupLabels.app }}'
        username: '{{ template "slack.default.username" . }}'
        send_resolved: true
        title: '{{ template "gpu.title" . }}'
        text: '{{ template "gpu.text" . }}'
        pretext: '{{ template "slack.myorg.text" . }}'
        fallback: '{{ template "slack.default.fallback" . }}'
        color: '{{ if eq .Status "firing" }}danger{{ else }}good{{ end }}'
templates:
  - 'templates/*.tmpl'
"#;

const EXTERNAL_URL: &str = "http://am.example:9093";

/// One alert fed to both: its own labels, its summary, its start and (resolved) end.
type Fed = (Vec<(&'static str, &'static str)>, &'static str, Timestamp, Option<Timestamp>);

/// The alerts both are fed: two firing and one resolved, in one group (`alertname`, `app`).
fn alerts(now: Timestamp) -> Vec<Fed> {
    let min = Duration::from_secs(60);
    vec![
        (vec![("instance", "gpu-1"), ("severity", "critical")], "Xid 79 on GPU 3", now - 10 * min, None),
        (vec![("instance", "gpu-2"), ("severity", "critical")], "Xid 48 on GPU 0", now - 7 * min, Some(now - 2 * min)),
        (vec![("instance", "gpu-3"), ("severity", "critical")], "ECC errors", now - 5 * min, None),
    ]
}

fn labels(own: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut l: Vec<(String, String)> =
        [("alertname", "GpuXidError"), ("app", "train"), ("job", "gpu"), ("zone", "eu-1")]
            .iter()
            .chain(own)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
    l.sort();
    l
}

/// A loopback listener that keeps the bodies posted to it.
async fn slack_listener() -> (u16, Arc<Mutex<Vec<Value>>>) {
    let got = Arc::new(Mutex::new(Vec::new()));
    let keep = got.clone();
    let app = axum::Router::new().route(
        "/slack",
        axum::routing::post(move |body: String| {
            let keep = keep.clone();
            async move {
                keep.lock().unwrap().push(serde_json::from_str::<Value>(&body).unwrap_or(Value::String(body)));
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move { axum::serve(listener, app).await });
    (port, got)
}

#[tokio::test(flavor = "multi_thread")]
async fn slack_fields_render_as_alertmanager_renders_them() {
    let am =
        match argus_testkit::program("prometheus-alertmanager", "install the Debian package prometheus-alertmanager") {
            Ok(p) => p,
            Err(missing) => return argus_testkit::missing_peer(&missing),
        };
    let dir = tempfile::tempdir().unwrap();
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/alertmanager-templates");
    std::fs::create_dir(dir.path().join("templates")).unwrap();
    std::fs::copy(fixtures.join("myorg.tmpl"), dir.path().join("templates/myorg.tmpl")).unwrap();
    std::fs::write(dir.path().join("templates/gpu.tmpl"), GPU_TMPL).unwrap();
    let (slack_port, got) = slack_listener().await;
    let yaml = RECEIVER.replace("PORT", &slack_port.to_string());
    std::fs::write(dir.path().join("am.yml"), &yaml).unwrap();

    // Alertmanager, alone (no cluster), on loopback.
    let port = argus_testkit::free_port();
    let _am = Daemon(
        Command::new(am)
            .arg(format!("--config.file={}", dir.path().join("am.yml").display()))
            .arg(format!("--storage.path={}", dir.path().join("data").display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg(format!("--web.external-url={EXTERNAL_URL}"))
            .arg("--cluster.listen-address=")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let http = reqwest::Client::new();
    let base = format!("http://127.0.0.1:{port}");
    let start = Instant::now();
    while !http.get(format!("{base}/-/ready")).send().await.is_ok_and(|r| r.status().is_success()) {
        assert!(start.elapsed() < Duration::from_secs(20), "alertmanager did not start on port {port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let now = Timestamp::from_millis(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64 * 1000,
    );
    let posted: Vec<Value> = alerts(now)
        .iter()
        .map(|(own, summary, starts, ends)| {
            let labels: serde_json::Map<String, Value> = labels(own).into_iter().map(|(k, v)| (k, json!(v))).collect();
            let mut a = json!({
                "labels": labels,
                "annotations": {"summary": summary},
                "startsAt": starts.to_string(),
                "generatorURL": "http://prometheus.example/graph?g0.expr=x",
            });
            if let Some(e) = ends {
                a["endsAt"] = json!(e.to_string());
            }
            a
        })
        .collect();
    let r = http.post(format!("{base}/api/v2/alerts")).json(&posted).send().await.unwrap();
    assert!(r.status().is_success(), "{:?}", r.text().await);
    let start = Instant::now();
    let from_am = loop {
        if let Some(b) = got.lock().unwrap().first().cloned() {
            break b;
        }
        assert!(start.elapsed() < Duration::from_secs(30), "alertmanager sent nothing to the slack listener");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };

    // alertd: the same configuration and files, the same alerts.
    let alertd_yaml = format!("{yaml}argus:\n  external_url: {EXTERNAL_URL}\n");
    let path = dir.path().join("alertd.yml");
    let cfg = argus_alertd::config::parse(&alertd_yaml, &path.display().to_string()).unwrap();
    let integrations = argus_alertd::deliver::build(&cfg).unwrap();
    let slack = &integrations["gpu.team/slack/0"];
    let alerts: Vec<Alert> = alerts(now)
        .iter()
        .map(|(own, summary, starts, ends)| Alert {
            labels: Labels::from_pairs(labels(own)),
            annotations: Labels::from_pairs([("summary", *summary)]),
            starts_at: *starts,
            ends_at: ends.unwrap_or(now + Duration::from_secs(300)),
            generator_url: "http://prometheus.example/graph?g0.expr=x".into(),
            updated_at: now,
            timeout: ends.is_none(),
        })
        .collect();
    let group_labels = Labels::from_pairs([("alertname", "GpuXidError"), ("app", "train")]);
    let m = message(Input {
        receiver: "gpu.team",
        group_key: "{}:{alertname=\"GpuXidError\", app=\"train\"}",
        group_labels: &group_labels,
        external_url: EXTERNAL_URL,
        alerts: &alerts,
        max_alerts: 0,
        now,
        extras: None,
    });
    let n = Notification {
        at: now,
        previous: None,
        receiver: "gpu.team".into(),
        integration: "gpu.team/slack/0".into(),
        message: m,
    };
    let from_alertd: Value = serde_json::from_slice(&slack.render(&n).unwrap()).unwrap();

    let field = |v: &Value, k: &str| v["attachments"][0][k].as_str().map(str::to_string);
    for k in ["title", "text", "pretext", "fallback", "color"] {
        let (a, b) = (field(&from_am, k), field(&from_alertd, k));
        assert!(a.as_deref().is_some_and(|s| !s.is_empty()), "alertmanager sent no {k}: {from_am}");
        assert_eq!(b, a, "{k} differs");
    }
    for k in ["channel", "username"] {
        assert_eq!(from_alertd[k], from_am[k], "{k} differs");
    }
    assert_eq!(from_alertd["channel"], "#gpu-train");
    // What the templates show, so that equal output is not equally empty.
    let text = field(&from_alertd, "text").unwrap();
    assert!(text.contains("*GpuXidError* on gpu-3: ECC errors"), "{text}");
    assert!(text.contains("resolved: gpu-2"), "{text}");
    assert_eq!(field(&from_alertd, "pretext").unwrap(), "https://internal.myorg.net/wiki/alerts/train/GpuXidError");
    assert_eq!(field(&from_alertd, "title").unwrap(), "[FIRING:2] GpuXidError Critical Gpu-Node Xid_error Down");
}
