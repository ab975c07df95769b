//! Tokens and scopes on every API of `argus serve`: each refusal in the error shape of its API, with
//! `WWW-Authenticate` on a 401, health always open, and no start on the network without auth.

use crate::support::server;

use serde_json::{Value, json};
use server::{Server, THREE_TOKENS, now_ms, rfc3339};

const READER: &str = "Bearer reader-token";
const WRITER: &str = "Token writer-token";
const ADMIN: &str = "Bearer admin-token";

fn alerts() -> String {
    json!([{"labels": {"alertname": "GpuHot", "host": "gpu-1"}, "annotations": {}}]).to_string()
}

fn silence() -> String {
    let now = now_ms() / 1000;
    json!({
        "matchers": [{"name": "host", "value": "gpu-1", "isRegex": false, "isEqual": true}],
        "startsAt": rfc3339(now),
        "endsAt": rfc3339(now + 3600),
        "createdBy": "ops", "comment": "fan swap"
    })
    .to_string()
}

#[test]
fn every_api_checks_scopes_and_answers_in_its_own_shape() {
    let srv = Server::with_config(THREE_TOKENS);
    let json_ct = [("content-type", "application/json")];

    // Health is open; everything else needs a token.
    assert_eq!(srv.get("/-/healthy").status, 200);
    assert_eq!(srv.get("/-/ready").status, 200);

    // Prometheus API: the error envelope.
    let r = srv.get("/api/v1/query?query=1");
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(r.headers.get_all("www-authenticate").iter().count(), 2, "{:?}", r.headers);
    let j = r.json();
    assert_eq!((j["status"].as_str(), j["errorType"].as_str()), (Some("error"), Some("unauthorized")), "{j}");
    assert!(j["error"].as_str().unwrap().contains("needs a token with the read scope"), "{j}");
    let r = srv.get_with("/api/v1/query?query=1", &[("Authorization", WRITER)]);
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json()["error"], "token \"collectors\" lacks the read scope");
    assert!(r.header("www-authenticate").is_none());
    // Basic, as Grafana sends it: "grafana:reader-token".
    let basic = "Basic Z3JhZmFuYTpyZWFkZXItdG9rZW4=";
    for auth in [READER, basic, ADMIN] {
        let r = srv.get_with("/api/v1/query?query=1", &[("Authorization", auth)]);
        assert_eq!(r.status, 200, "{auth}: {}", r.body);
    }
    let r = srv.post(
        "/api/v1/query",
        &[("Authorization", READER), ("content-type", "application/x-www-form-urlencoded")],
        "query=1",
    );
    assert_eq!(r.status, 200, "a form-encoded query is a read: {}", r.body);

    // Ingest: InfluxDB's shape; a read token cannot write.
    let line = format!("scoped value=1 {}", now_ms());
    let v2 = "/api/v2/write?org=o&bucket=b&precision=ms";
    let r = srv.post(v2, &[("Authorization", READER)], line.clone());
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(r.json(), json!({"code": "forbidden", "message": "token \"grafana\" lacks the write scope"}));
    let r = srv.post(v2, &[("Authorization", WRITER)], line);
    assert_eq!(r.status, 204, "{}", r.body);

    // Alertmanager API: a JSON string. Intake is a write, silences need the silence scope.
    let r = srv.get("/api/v2/alerts");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(matches!(r.json(), Value::String(s) if s.contains("read scope")), "{}", r.body);
    let r = srv.post("/api/v2/alerts", &[json_ct[0], ("Authorization", READER)], alerts());
    assert_eq!((r.status, r.json()), (403, json!("token \"grafana\" lacks the write scope")));
    let r = srv.post("/api/v2/alerts", &[json_ct[0], ("Authorization", WRITER)], alerts());
    assert_eq!(r.status, 200, "{}", r.body);
    let r = srv.get_with("/api/v2/alerts", &[("Authorization", READER)]);
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.json()[0]["labels"]["alertname"], "GpuHot");
    let r = srv.post("/api/v2/silences", &[json_ct[0], ("Authorization", WRITER)], silence());
    assert_eq!((r.status, r.json()), (403, json!("token \"collectors\" lacks the silence scope")));
    let r = srv.post("/api/v2/silences", &[json_ct[0], ("Authorization", ADMIN)], silence());
    assert_eq!(r.status, 200, "{}", r.body);

    // Self metrics are a read; a wrong token is a 401, never a downgrade to anonymous.
    let r = srv.get("/metrics");
    assert_eq!(r.status, 401, "{}", r.body);
    assert!(r.header("content-type").is_some_and(|c| c.starts_with("text/plain")), "{:?}", r.headers);
    let r = srv.get_with("/metrics", &[("Authorization", "Bearer reader-tokeN")]);
    assert_eq!((r.status, r.body.as_str()), (401, "invalid token\n"));
    assert_eq!(srv.get_with("/metrics", &[("Authorization", READER)]).status, 200);
    // No answer and no log line carries a token or its digest.
    let log = srv.log();
    for secret in ["reader-token", "writer-token", "admin-token", "ba5005a40cf5212e"] {
        assert!(!log.contains(secret), "{secret} in the log:\n{log}");
    }
}

#[test]
fn anonymous_read_with_tokens_for_writes() {
    let srv = Server::with_config(&format!("[auth]\nanonymous = [\"read\"]\n{THREE_TOKENS}"));
    assert_eq!(srv.get("/api/v1/labels").status, 200);
    let r = srv.write_ms(&format!("anon value=1 {}", now_ms()));
    assert_eq!(r.status, 401, "{}", r.body);
    assert_eq!(
        r.json()["message"],
        "this endpoint needs a token with the write scope: send \"Authorization: Bearer <token>\""
    );
}

#[test]
fn refuses_the_network_without_tokens_or_explicit_anonymous_access() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["serve", "--listen", "0.0.0.0:0", "--no-collector", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("run argus");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("refusing to listen on 0.0.0.0:0 without authentication"), "{err}");
    assert!(err.contains("`[auth] anonymous = [\"read\"]`"), "{err}");
    assert!(!dir.path().join("wal").exists(), "nothing opened before the refusal");
}

/// `argus_http_auth_refusals_total` counts each refusal by its reason, read back by an admin.
#[test]
fn refusals_are_counted_by_reason() {
    let srv = Server::with_config(THREE_TOKENS);
    let count = |reason: &str| {
        let r = srv.get_with("/metrics", &[("Authorization", ADMIN)]);
        assert_eq!(r.status, 200, "{}", r.body);
        let prefix = format!("argus_http_auth_refusals_total{{reason=\"{reason}\"}} ");
        r.body.lines().find_map(|l| l.strip_prefix(&prefix)).map_or(0.0, |v| v.trim().parse().expect("value"))
    };
    assert_eq!((count("missing"), count("invalid"), count("scope")), (0.0, 0.0, 0.0));
    let lines = format!("m v=1 {}", now_ms());
    for _ in 0..3 {
        assert_eq!(srv.get("/api/v1/query?query=up").status, 401);
    }
    assert_eq!(srv.get_with("/api/v1/query?query=up", &[("Authorization", "Bearer not-a-token")]).status, 401);
    assert_eq!(srv.get_with("/api/v2/alerts", &[("Authorization", "Bogus scheme")]).status, 401);
    let r = srv.post("/api/v2/write?precision=ms", &[("Authorization", READER)], lines.clone());
    assert_eq!(r.status, 403, "{}", r.body);
    assert_eq!(srv.get_with("/api/v1/query?query=up", &[("Authorization", WRITER)]).status, 403);
    // Allowed and open requests are not counted.
    assert_eq!(srv.post("/api/v2/write?precision=ms", &[("Authorization", WRITER)], lines).status, 204);
    assert_eq!(srv.get("/-/healthy").status, 200);
    assert_eq!((count("missing"), count("invalid"), count("scope")), (3.0, 2.0, 2.0));
    let r = srv.get_with("/metrics", &[("Authorization", ADMIN)]);
    assert!(r.body.contains("# TYPE argus_http_auth_refusals counter"), "{}", r.body);
}
