//! Email delivered to a real SMTP server: aiosmtpd (Debian python3-aiosmtpd, installed by
//! scripts/install-peers.sh) on loopback, whose debugging handler prints every message it receives.

use argus_alertd::deliver;
use argus_alertd::notify::Notification;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The Python that has aiosmtpd: Debian's, when a pyenv one comes first on PATH.
fn python() -> &'static str {
    if std::path::Path::new("/usr/bin/python3").exists() { "/usr/bin/python3" } else { "python3" }
}

struct Smtpd(Child);

impl Drop for Smtpd {
    fn drop(&mut self) {
        let _ = self.0.kill();
    }
}

/// A real SMTP server on a free port, or `None` (the test reported skipped, or failing under `CI`)
/// where aiosmtpd is not installed.
fn start_smtpd() -> Option<(Smtpd, u16)> {
    let has_aiosmtpd = Command::new(python()).args(["-c", "import aiosmtpd"]).status().is_ok_and(|s| s.success());
    if !has_aiosmtpd {
        argus_testkit::missing_peer(&argus_testkit::Missing(
            "python3 -m aiosmtpd: install python3-aiosmtpd (scripts/install-peers.sh)".into(),
        ));
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(python())
        .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}")])
        .env("PYTHONUNBUFFERED", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m aiosmtpd: install python3-aiosmtpd (scripts/install-peers.sh)");
    let start = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(start.elapsed() < Duration::from_secs(15), "aiosmtpd did not start on port {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some((Smtpd(child), port))
}

#[tokio::test]
async fn email_reaches_a_real_smtp_server_with_text_and_html_parts() {
    let Some((mut smtpd, port)) = start_smtpd() else { return };
    let yaml = format!(
        "route: {{receiver: mail}}\nreceivers:\n  - name: mail\n    email_configs:\n      - {{to: 'oncall@example.com, gpu@example.com', from: 'alertd@example.com', smarthost: '127.0.0.1:{port}', require_tls: false, hello: alertd.test, argus: {{language: zh}}}}\n"
    );
    let cfg = argus_alertd::config::parse(&yaml, "alertd.yml").unwrap();
    let integrations = deliver::build(&cfg).unwrap();
    let email = &integrations["mail/email/0"];

    let message: argus_alertd::webhook::Message = serde_json::from_str(
        r#"{"receiver":"mail","status":"firing","alerts":[{"status":"firing","labels":{"alertname":"GpuXidError","host":"gpu-node-07"},"annotations":{"summary":"Xid 79 on GPU 3"},"startsAt":"2026-11-30T04:00:00Z","endsAt":"0001-01-01T00:00:00Z","generatorURL":"","fingerprint":"a1"}],"groupLabels":{"host":"gpu-node-07"},"commonLabels":{"alertname":"GpuXidError","host":"gpu-node-07"},"commonAnnotations":{},"externalURL":"","version":"4","groupKey":"{}:{host=\"gpu-node-07\"}","truncatedAlerts":0}"#,
    )
    .unwrap();
    let n = Notification {
        at: argus_alertd::Timestamp::from_millis(1_700_000_000_000),
        previous: None,
        receiver: "mail".into(),
        integration: "mail/email/0".into(),
        message,
    };
    let key = argus_alertd::outbox::idempotency_key(&n);
    let body = email.render(&n).unwrap();
    email.send(&body, &key).await.unwrap_or_else(|e| panic!("send: {e}"));

    // The debugging handler prints the message once accepted, ending with an END MESSAGE line.
    let mut stdout = std::io::BufReader::new(smtpd.0.stdout.take().unwrap());
    let reader = std::thread::spawn(move || {
        let mut out = String::new();
        while !out.contains("END MESSAGE") {
            if stdout.read_line(&mut out).unwrap_or(0) == 0 {
                break;
            }
        }
        out
    });
    let start = Instant::now();
    while !reader.is_finished() && start.elapsed() < Duration::from_secs(15) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let _ = smtpd.0.kill();
    let out = reader.join().unwrap();
    assert!(out.contains("From: alertd@example.com"), "{out}");
    assert!(out.contains("To: oncall@example.com, gpu@example.com"), "{out}");
    assert!(out.contains(&format!("Message-ID: <{key}@alertd>")), "{out}");
    assert!(out.contains("Content-Type: multipart/alternative"), "{out}");
    assert!(out.contains("Content-Type: text/plain; charset=utf-8"), "{out}");
    assert!(out.contains("Content-Type: text/html; charset=utf-8"), "{out}");
    assert!(out.contains("Subject: =?utf-8?"), "the Chinese subject is encoded: {out}");
    assert!(out.contains("GpuXidError"), "{out}");
}

#[tokio::test]
async fn a_closed_smtp_port_is_a_retryable_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let yaml = format!(
        "route: {{receiver: mail}}\nreceivers:\n  - name: mail\n    email_configs:\n      - {{to: a@example.com, from: b@example.com, smarthost: '127.0.0.1:{port}', require_tls: false, auth_username: u, auth_password: SMTPPASSWORD}}\n"
    );
    let cfg = argus_alertd::config::parse(&yaml, "alertd.yml").unwrap();
    assert!(!format!("{cfg:?}").contains("SMTPPASSWORD"));
    let integrations = deliver::build(&cfg).unwrap();
    let body = br#"{"subject":"s","text":"t","html":"<p>t</p>"}"#;
    let e = integrations["mail/email/0"].send(body, "k").await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(!e.to_string().contains("SMTPPASSWORD"), "{e}");
}
