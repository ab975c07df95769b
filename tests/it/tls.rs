//! `argus serve` over HTTPS with a certificate from a CA made at test time: a client trusting the CA
//! is answered, a plain-HTTP client and one without the CA are not.

use crate::support::server;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use server::{Server, now_ms};
use std::time::Duration;

/// A CA and a leaf for `localhost` and 127.0.0.1 it issued: (CA PEM, leaf PEM, leaf key PEM).
fn ca_and_leaf() -> (String, String, String) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "Argus test CA");
    let ca_cert = ca.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
    let leaf_cert = leaf.signed_by(&leaf_key, &issuer).unwrap();
    (ca_cert.pem(), leaf_cert.pem(), leaf_key.serialize_pem())
}

#[test]
fn https_answers_clients_that_trust_the_ca_only() {
    let (ca, cert, key) = ca_and_leaf();
    let dir = tempfile::tempdir().unwrap();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let toml = format!("[server]\ntls_cert = {cert_path:?}\ntls_key = {key_path:?}\n");
    let srv = Server::start_tls(&toml, &ca);
    assert!(srv.base().starts_with("https://localhost:"), "{}", srv.base());
    // The harness trusts the CA: writes and reads work as over HTTP.
    srv.assert_healthy_and_writable(&[]);
    assert!(srv.log().contains("https://"), "the log names the scheme:\n{}", srv.log());

    let plain = srv.base().replace("https://localhost", "http://127.0.0.1");
    let client = |ca: Option<&str>| {
        let mut b = reqwest::blocking::Client::builder().no_proxy().timeout(Duration::from_secs(5));
        if let Some(ca) = ca {
            b = b.tls_certs_merge([reqwest::Certificate::from_pem(ca.as_bytes()).unwrap()]);
        }
        b.build().unwrap()
    };
    let e = client(None).get(format!("{plain}/-/healthy")).send().expect_err("plain HTTP must not be answered");
    assert!(!e.is_status(), "{e:?}");
    let e = client(None).get(srv.url("/-/healthy")).send().expect_err("a client without the CA must refuse");
    let chain = format!("{:?}", anyhow_chain(&e));
    assert!(chain.contains("UnknownIssuer"), "{chain}");
    let r = client(Some(&ca)).get(srv.url(&format!("/api/v1/query?query=time()&time={}", now_ms() / 1000))).send();
    assert_eq!(r.expect("trusting client").status(), 200);
}

#[test]
fn a_bad_key_file_stops_startup_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, _) = ca_and_leaf();
    let (cert_path, key_path) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, cert).unwrap();
    std::fs::write(&key_path, "not a key").unwrap();
    let cfg = dir.path().join("argus.toml");
    std::fs::write(&cfg, format!("[server]\ntls_cert = {cert_path:?}\ntls_key = {key_path:?}\n")).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["serve", "--no-collector", "--listen", "127.0.0.1:0", "--config"])
        .arg(&cfg)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("server.tls_key {}: cannot read a PEM private key", key_path.display())), "{err}");
}

/// An error and its sources, one string each.
fn anyhow_chain(e: &dyn std::error::Error) -> Vec<String> {
    let mut out = vec![e.to_string()];
    let mut s = e.source();
    while let Some(x) = s {
        out.push(x.to_string());
        s = x.source();
    }
    out
}

/// Over TLS, the collector `argus serve` runs writes to `https://localhost` trusting `tls_cert`,
/// with its own token when writes need one.
#[test]
fn the_embedded_collector_writes_over_https() {
    let (ca, cert, key) = ca_and_leaf();
    let dir = tempfile::tempdir().unwrap();
    // The chain as usually deployed: the leaf, then the CA that issued it.
    let (cert_path, key_path) = (dir.path().join("fullchain.pem"), dir.path().join("key.pem"));
    std::fs::write(&cert_path, format!("{cert}{ca}")).unwrap();
    std::fs::write(&key_path, key).unwrap();
    let f = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("collector/tests/fixtures");
    let f = f.display();
    let config = dir.path().join("argus.toml");
    std::fs::write(
        &config,
        format!(
            r#"
[server]
tls_cert = {cert_path:?}
tls_key = {key_path:?}
[auth]
anonymous = ["read"]
[[auth.tokens]]
name = "ops"
scopes = ["admin"]
sha256 = "10a4c7c9fc5206d6f36dc6944a81bb6f4a3cb0e25014ae3b12e6c3e52712292a"
[collector]
interval = "200ms"
procfs_root = "{f}/node/proc"
sysfs_root = "{f}/infiniband/sys"
[collector.labels]
host = "tls-test"
[collector.gpu]
enabled = false
[collector.disk]
enabled = false
[collector.events]
enabled = false
"#
        ),
    )
    .unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let log = dir.path().join("serve.log");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_argus"))
        .args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let client = reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .tls_certs_merge([reqwest::Certificate::from_pem(ca.as_bytes()).unwrap()])
        .build()
        .unwrap();
    let url = format!("https://localhost:{port}/api/v1/query?query=host_load1%7Bhost%3D%22tls-test%22%7D");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let mut found = false;
    while !found && std::time::Instant::now() < deadline {
        if let Ok(r) = client.get(&url).send()
            && let Ok(v) = r.json::<serde_json::Value>()
        {
            found = v["data"]["result"].as_array().is_some_and(|a| a.len() == 1);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let log = std::fs::read_to_string(&log).unwrap();
    assert!(found, "no collected series over https; log:\n{log}");
}
