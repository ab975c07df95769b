//! `http_config` at work: the `Authorization` header, files read at every request, and a proxy,
//! against an HTTP receiver on loopback.

use super::super::tests::receiver;
use crate::config::parse;
use crate::deliver::build;

/// An alertd.yml with one webhook receiver `hook` whose entry is `entry` (YAML flow).
fn config(entry: &str) -> crate::Config {
    let src = format!("route: {{receiver: hook}}\nreceivers:\n  - name: hook\n    webhook_configs:\n      - {entry}\n");
    parse(&src, "/etc/argus/alertd.yml").unwrap()
}

#[tokio::test]
async fn credentials_files_are_read_at_every_request() {
    let (r, url) = receiver(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "first\n").unwrap();
    let cfg = config(&format!("{{url: '{url}', http_config: {{bearer_token_file: '{}'}}}}", token.display()));
    let hook = build(&cfg).unwrap().remove("hook/webhook/0").unwrap();
    hook.send(b"{}", "k1").await.unwrap();
    // A rotated token (a Kubernetes projected secret) is used without a reload.
    std::fs::write(&token, "second").unwrap();
    hook.send(b"{}", "k2").await.unwrap();
    let seen: Vec<String> = r.got().iter().map(|g| g.headers["authorization"].to_str().unwrap().to_string()).collect();
    assert_eq!(seen, ["Bearer first", "Bearer second"]);

    // A file gone at send time fails that attempt (retried), naming the file, never a secret.
    std::fs::remove_file(&token).unwrap();
    let e = hook.send(b"{}", "k3").await.unwrap_err();
    assert!(e.is_retryable(), "{e}");
    assert!(e.to_string().contains(&token.display().to_string()), "{e}");
    // And a file missing when the receivers are built is an error then.
    let e = build(&cfg).err().unwrap().to_string();
    assert!(e.contains("receivers \"hook\" webhook_configs[0].http_config: http_config credentials: "), "{e}");
}

#[tokio::test]
async fn basic_auth_global_settings_and_their_replacement() {
    let (r, url) = receiver(vec![]).await;
    let global = format!(
        "global:\n  http_config: {{basic_auth: {{username: alertd, password: pa55}}}}\nroute: {{receiver: hook}}\nreceivers:\n  - name: hook\n    webhook_configs:\n      - {{url: '{url}'}}\n      - {{url: '{url}', http_config: {{authorization: {{type: Token, credentials: t0k}}}}}}\n      - {{url: '{url}', http_config: {{follow_redirects: false}}}}\n"
    );
    let integrations = build(&parse(&global, "alertd.yml").unwrap()).unwrap();
    for i in 0..3 {
        integrations[&format!("hook/webhook/{i}")].send(b"{}", "k").await.unwrap();
    }
    let seen: Vec<Option<String>> =
        r.got().iter().map(|g| g.headers.get("authorization").map(|v| v.to_str().unwrap().to_string())).collect();
    // base64("alertd:pa55"); a receiver's own http_config replaces the global one, as Alertmanager's.
    assert_eq!(seen, [Some("Basic YWxlcnRkOnBhNTU=".to_string()), Some("Token t0k".to_string()), None]);
}

#[tokio::test]
async fn a_url_file_is_read_at_every_request() {
    let (r, url) = receiver(vec![]).await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hook.url");
    std::fs::write(&file, format!("{url}\n")).unwrap();
    let cfg = config(&format!("{{url_file: '{}'}}", file.display()));
    let hook = build(&cfg).unwrap().remove("hook/webhook/0").unwrap();
    hook.send(b"{}", "k1").await.unwrap();
    assert_eq!(r.got().len(), 1);
    assert_eq!(r.got()[0].query, "token=s3cr3t-token");
    std::fs::write(&file, "not a url").unwrap();
    let e = hook.send(b"{}", "k2").await.unwrap_err();
    assert!(!e.is_retryable(), "a file that holds no URL is not retried: {e}");
    assert_eq!(e.to_string(), "receiver refused the message: url_file does not hold an http(s) URL");
}

#[tokio::test]
async fn a_proxy_url_carries_every_request() {
    // The loopback receiver plays the proxy: a request for another host reaches it in absolute form.
    let (proxy, proxy_url) = receiver(vec![]).await;
    let proxy_root = proxy_url.split("/hook").next().unwrap().to_string();
    let cfg = config(&format!(
        "{{url: 'http://hook.invalid:8080/alerts', http_config: {{proxy_url: '{proxy_root}', no_proxy: 'localhost'}}}}"
    ));
    let hook = build(&cfg).unwrap().remove("hook/webhook/0").unwrap();
    hook.send(b"{\"a\":1}", "k1").await.unwrap();
    let got = proxy.got();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].headers["host"], "hook.invalid:8080");
    assert_eq!(got[0].body, b"{\"a\":1}");
}
