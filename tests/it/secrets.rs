//! Secrets never leave the configuration: each receiver kind's URL and keys, the collector sink's token
//! and a remote store's credentials appear in none of the logs (the tracing output of `argus serve`
//! while deliveries fail), the error messages (of `serve` and of `check-config`, for a file that is
//! wrong right beside the secret), the API answers (`/api/v2/status`, `/api/v2/receivers`, the
//! notification history, `/metrics`) or `check-config`'s output.

use crate::support::server;

use server::Server;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A loopback HTTP server answering every request 500; it keeps each request's line and headers.
fn failing_receiver() -> (u16, Arc<Mutex<Vec<String>>>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = l.local_addr().expect("addr").port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let seen2 = seen.clone();
    std::thread::spawn(move || {
        for conn in l.incoming() {
            let Ok(mut conn) = conn else { continue };
            let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
            let mut r = BufReader::new(conn.try_clone().expect("clone"));
            let mut head = String::new();
            let mut len = 0usize;
            loop {
                let mut line = String::new();
                if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; len];
            let _ = r.read_exact(&mut body);
            seen2.lock().unwrap().push(head);
            let _ = conn
                .write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\nconnection: close\r\n\r\nbusy");
        }
    });
    (port, seen)
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("addr").port()
}

/// Every secret of the alertd file below, by the receiver kind it belongs to.
const ALERTD_SECRETS: &[(&str, &str)] = &[
    ("webhook", "tok-webhook-url"),
    ("webhook", "tok-webhook-hmac"),
    ("slack", "tok-slack-url"),
    ("dingtalk", "tok-dingtalk-url"),
    ("dingtalk", "tok-dingtalk-sign"),
    ("feishu", "tok-feishu-url"),
    ("feishu", "tok-feishu-sign"),
    ("wecom", "tok-wecom-url"),
    ("email", "tok-email-password"),
];

fn alertd_yaml(port: u16, smtp_port: u16) -> String {
    let base = format!("http://127.0.0.1:{port}");
    format!(
        r#"# a comment quoting tok-webhook-url
route:
  receiver: webhook
  group_wait: 0s
  group_interval: 1s
  # Each child matches the alert with matchers of its own (siblings with the same matchers would share
  # one aggregation group).
  routes:
    - {{receiver: webhook, continue: true, matchers: ['alertname="GpuHot"']}}
    - {{receiver: slack, continue: true, matchers: ['host="gpu-1"']}}
    - {{receiver: dingtalk, continue: true, matchers: ['alertname=~"Gpu.*"']}}
    - {{receiver: feishu, continue: true, matchers: ['host=~"gpu-.*"']}}
    - {{receiver: wecom, continue: true, matchers: ['alertname!="Other"']}}
    - {{receiver: email, continue: true, matchers: ['host!="other"']}}
receivers:
  - name: webhook
    webhook_configs:
      - url: {base}/hook/tok-webhook-url
        argus: {{hmac_secret: tok-webhook-hmac}}
  - name: slack
    slack_configs:
      - api_url: {base}/services/tok-slack-url
        channel: '#gpu'
  - name: dingtalk
    dingtalk_configs:
      - url: {base}/robot/send?access_token=tok-dingtalk-url
        secret: tok-dingtalk-sign
  - name: feishu
    feishu_configs:
      - url: {base}/open-apis/bot/v2/hook/tok-feishu-url
        secret: tok-feishu-sign
  - name: wecom
    wecom_configs:
      - url: {base}/cgi-bin/webhook/send?key=tok-wecom-url
  - name: email
    email_configs:
      - to: ops@example.com
        from: argus@example.com
        smarthost: 127.0.0.1:{smtp_port}
        require_tls: false
        auth_username: argus
        auth_password: tok-email-password
"#
    )
}

fn run(args: &[&std::ffi::OsStr]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_argus")).args(args).output().expect("run argus");
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

fn check_config(file: &Path) -> String {
    run(&["check-config".as_ref(), file.as_os_str()])
}

fn assert_hidden(secrets: &[(&str, &str)], place: &str, text: &str) {
    for (kind, s) in secrets {
        assert!(!text.contains(s), "the {kind} secret {s:?} shows in {place}:\n{text}");
    }
}

#[test]
fn receiver_and_sink_secrets_show_nowhere() {
    let (port, seen) = failing_receiver();
    let dir = tempfile::tempdir().expect("scratch dir");
    let alertd = dir.path().join("alertd.yml");
    std::fs::write(&alertd, alertd_yaml(port, closed_port())).expect("write alertd config");
    let toml = format!(
        "[alertd]\nconfig_file = {:?}\n\n[collector]\ndata_dir = {:?}\ninterval = \"1s\"\n\n[[collector.sink]]\n\
         url = \"http://127.0.0.1:{port}/api/v1/write\"\ntoken = \"tok-collector-sink\"\nflush_interval = \"200ms\"\n\
         min_backoff = \"100ms\"\nmax_backoff = \"200ms\"\n",
        alertd.display().to_string(),
        dir.path().join("collector").display().to_string()
    );
    let argus_toml = dir.path().join("argus.toml");
    std::fs::write(&argus_toml, &toml).expect("write argus.toml");
    let mut secrets = ALERTD_SECRETS.to_vec();
    secrets.push(("collector sink", "tok-collector-sink"));

    // The secrets do reach where they belong: each receiver's URL and the sink's Authorization header
    // (the collector's sink by `argus collect`, the same code `serve` runs it with).
    let collect_log = dir.path().join("collect.log");
    let mut collector = Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["collect", "--config"])
        .arg(&argus_toml)
        .env("RUST_LOG", "debug")
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&collect_log).expect("collect log"))
        .spawn()
        .expect("argus collect");
    let s = Server::start_with(Some(&toml), &[]);
    let r = s.post(
        "/api/v2/alerts",
        &[("content-type", "application/json")],
        r#"[{"labels": {"alertname": "GpuHot", "host": "gpu-1"}, "annotations": {}}]"#,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    let deadline = Instant::now() + Duration::from_secs(30);
    let wanted = ["tok-webhook-url", "tok-slack-url", "tok-dingtalk-url", "tok-feishu-url", "tok-wecom-url"];
    loop {
        let heads = seen.lock().unwrap().join("\n");
        let log = s.log();
        let delivered = wanted.iter().all(|w| heads.contains(w));
        let sink = heads.contains("authorization: Bearer tok-collector-sink")
            || heads.contains("Authorization: Bearer tok-collector-sink");
        let email_failed = log.lines().any(|l| l.contains("Notification failed") && l.contains("email"));
        if delivered && sink && email_failed {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not every receiver was tried (delivered {delivered}, sink {sink}, email {email_failed}):\n{heads}\n{}",
            log.lines().filter(|l| !l.contains("webhook/webhook")).collect::<Vec<_>>().join("\n")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = collector.kill();
    let _ = collector.wait();
    let log = s.log();
    assert!(log.contains("Notification failed"), "{log}");
    assert_hidden(&secrets, "the log", &log);
    let log = std::fs::read_to_string(&collect_log).expect("collect log");
    assert!(log.contains("500"), "the sink's failures are logged: {log}");
    assert_hidden(&secrets, "the collector's log", &log);
    for path in ["/api/v2/status", "/api/v2/receivers", "/api/v1/notifications", "/metrics"] {
        let r = s.get(path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        assert_hidden(&secrets, path, &r.body);
    }
    let status = s.get("/api/v2/status").json();
    let shown = status["config"]["original"].as_str().expect("config text").to_string();
    assert_eq!(shown.matches("<secret>").count(), 9, "{shown}");
    let receivers = s.get("/api/v2/receivers").body;
    for kind in ["webhook", "slack", "dingtalk", "feishu", "wecom", "email"] {
        assert!(receivers.contains(&format!("\"{kind}\"")), "{receivers}");
    }
    drop(s);

    // check-config of the valid files says ok and nothing more.
    for f in [&alertd, &argus_toml] {
        let out = check_config(f);
        assert!(out.trim_end().ends_with(": ok"), "{out}");
        assert_hidden(&secrets, "check-config", &out);
    }

    // A mistake beside each secret: the error names the place, never the value.
    let valid = alertd_yaml(port, 25);
    let breakages: &[(&str, &str, &str)] = &[
        ("url: http://127.0.0.1", "url: ftp://127.0.0.1", "webhook_configs[0].url"),
        ("api_url: http://", "api_url: gopher://", "slack_configs[0].api_url"),
        ("url: http://127.0.0.1:", "url: 127.0.0.1:", "url"),
        ("wecom_configs:\n      - url:", "wecom_configs:\n      - secret: tok-wecom-url\n        url:", "secret"),
        ("        auth_username: argus\n", "", "auth_username"),
        ("hmac_secret: tok-webhook-hmac}", "hmac_secret: tok-webhook-hmac, bogus: 1}", "bogus"),
    ];
    for (from, to, named) in breakages {
        assert!(valid.contains(from), "{from}");
        let bad = dir.path().join("bad.yml");
        std::fs::write(&bad, valid.replacen(from, to, 1)).expect("write");
        let out = check_config(&bad);
        assert!(out.contains("bad.yml:") && out.contains(named), "{from} → {to}: {out}");
        assert_hidden(&secrets, "a check-config error", &out);
        let toml = format!("[alertd]\nconfig_file = {:?}\n", bad.display().to_string());
        let bad_toml = dir.path().join("bad.toml");
        std::fs::write(&bad_toml, toml).expect("write");
        let out = run(&[
            "serve".as_ref(),
            "--no-collector".as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--config".as_ref(),
            bad_toml.as_os_str(),
            "--data-dir".as_ref(),
            dir.path().join("data").as_os_str(),
        ]);
        assert!(out.contains("bad.yml:"), "{out}");
        assert_hidden(&secrets, "serve's error", &out);
    }
    // The sink's token beside a mistake in its section.
    let bad = dir.path().join("bad-sink.toml");
    std::fs::write(
        &bad,
        format!("[[collector.sink]]\nurl = \"ftp://127.0.0.1:{port}/api/v1/write\"\ntoken = \"tok-collector-sink\"\n"),
    )
    .expect("write");
    let out = check_config(&bad);
    assert!(out.contains("url"), "{out}");
    assert_hidden(&secrets, "a check-config error", &out);
}

#[test]
fn remote_store_credentials_show_nowhere() {
    let (port, _) = failing_receiver();
    let secrets = [("store bearer_token", "tok-store-bearer"), ("store basic_auth password", "tok-store-password")];
    let bearer = format!(
        "[store]\nbackend = \"prometheus\"\n\n[store.remote]\nflavour = \"prometheus\"\nurl = \"http://127.0.0.1:{port}\"\n\
         bearer_token = \"tok-store-bearer\"\n"
    );
    let basic = format!(
        "[store]\nbackend = \"prometheus\"\n\n[store.remote]\nflavour = \"victoriametrics\"\nurl = \"http://127.0.0.1:{port}\"\n\
         basic_auth = {{ username = \"argus\", password = \"tok-store-password\" }}\n"
    );
    let dir = tempfile::tempdir().expect("scratch dir");
    for (name, toml) in [("bearer", &bearer), ("basic", &basic)] {
        let s = Server::start_with(Some(toml), &[]);
        assert_eq!(s.get("/-/healthy").status, 200);
        let r = s.get("/metrics");
        assert_hidden(&secrets, "/metrics", &r.body);
        let log = s.log();
        assert!(log.contains("remote store"), "{log}");
        assert_hidden(&secrets, &format!("the log ({name})"), &log);
        drop(s);
        let f = dir.path().join(format!("{name}.toml"));
        std::fs::write(&f, toml).expect("write");
        let out = check_config(&f);
        assert!(out.trim_end().ends_with(": ok"), "{out}");
        assert_hidden(&secrets, "check-config", &out);
    }
    // Mistakes beside the credentials: in the URL, and both kinds at once.
    let breakages = [
        bearer.replace("url = \"http://", "url = \"http://argus:tok-store-password@"),
        bearer.replace(
            "bearer_token = ",
            "basic_auth = { username = \"a\", password = \"tok-store-password\" }\nbearer_token = ",
        ),
        basic.replace("username = \"argus\", ", ""),
    ];
    for bad in breakages {
        let f = dir.path().join("bad.toml");
        std::fs::write(&f, &bad).expect("write");
        let out = check_config(&f);
        assert!(out.contains("bad.toml:"), "{bad}\n{out}");
        assert_hidden(&secrets, "a check-config error", &out);
        let out = run(&[
            "serve".as_ref(),
            "--listen".as_ref(),
            "127.0.0.1:0".as_ref(),
            "--config".as_ref(),
            f.as_os_str(),
            "--data-dir".as_ref(),
            dir.path().join("data").as_os_str(),
        ]);
        assert!(out.contains("bad.toml:"), "{out}");
        assert_hidden(&secrets, "serve's error", &out);
    }
}
