//! HTTP receivers behind a private CA: `global.http_config.tls_config.ca_file` makes delivery to an
//! HTTPS webhook succeed; without it the delivery fails naming the certificate problem.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

/// A CA (PEM) and a TLS server configuration for `localhost` with a certificate it issued.
fn ca_and_server() -> (String, Arc<rustls::ServerConfig>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "alertd test CA");
    let ca_pem = ca.self_signed(&ca_key).unwrap().pem();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().unwrap();
    let leaf = CertificateParams::new(vec!["localhost".into()]).unwrap().signed_by(&leaf_key, &issuer).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (ca_pem, Arc::new(cfg))
}

/// An HTTPS receiver on loopback answering every request 200; counts the requests it read.
async fn https_receiver(cfg: Arc<rustls::ServerConfig>) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let got = Arc::new(AtomicUsize::new(0));
    let (acceptor, seen) = (tokio_rustls::TlsAcceptor::from(cfg), got.clone());
    tokio::spawn(async move {
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            let (acceptor, seen) = (acceptor.clone(), seen.clone());
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else { return };
                // One request per connection: headers, then Content-Length bytes of body.
                let mut buf = Vec::new();
                let mut chunk = [0u8; 4096];
                loop {
                    let n = s.read(&mut chunk).await.unwrap_or(0);
                    if n == 0 {
                        return;
                    }
                    buf.extend_from_slice(&chunk[..n]);
                    let text = String::from_utf8_lossy(&buf).to_string();
                    if let Some(end) = text.find("\r\n\r\n") {
                        let len = text[..end]
                            .lines()
                            .find_map(|l| {
                                l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_string())
                            })
                            .and_then(|v| v.parse::<usize>().ok())
                            .unwrap_or(0);
                        if buf.len() >= end + 4 + len {
                            break;
                        }
                    }
                }
                seen.fetch_add(1, Ordering::SeqCst);
                let _ = s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").await;
                let _ = s.shutdown().await;
            });
        }
    });
    (port, got)
}

fn config(port: u16, ca_file: Option<&std::path::Path>) -> argus_alertd::Config {
    let global = match ca_file {
        Some(p) => format!("global:\n  http_config:\n    tls_config:\n      ca_file: {}\n", p.display()),
        None => String::new(),
    };
    let yaml = format!(
        "{global}route:\n  receiver: hook\nreceivers:\n  - name: hook\n    webhook_configs:\n      - url: https://localhost:{port}/alerts\n"
    );
    argus_alertd::config::parse(&yaml, "alertd.yml").unwrap()
}

#[tokio::test]
async fn a_webhook_behind_a_private_ca_needs_its_ca_file() {
    let (ca, server) = ca_and_server();
    let dir = tempfile::tempdir().unwrap();
    let ca_path = dir.path().join("ca.pem");
    std::fs::write(&ca_path, ca).unwrap();
    let (port, got) = https_receiver(server).await;

    let trusting = argus_alertd::deliver::build(&config(port, Some(&ca_path))).unwrap();
    let hook = &trusting["hook/webhook/0"];
    hook.send(b"{}", "key-1").await.expect("delivery with the CA");
    assert_eq!(got.load(Ordering::SeqCst), 1);

    let default = argus_alertd::deliver::build(&config(port, None)).unwrap();
    let e = default["hook/webhook/0"].send(b"{}", "key-2").await.expect_err("no CA, no delivery");
    let msg = e.to_string();
    assert!(msg.starts_with("cannot connect: ") && msg.contains("invalid peer certificate: UnknownIssuer"), "{msg}");
    assert!(!msg.contains("localhost:"), "the URL stays out of the error: {msg}");
    assert_eq!(got.load(Ordering::SeqCst), 1);
}

#[test]
fn ca_file_errors_name_the_key() {
    let missing = config(1, Some(std::path::Path::new("/nonexistent/ca.pem")));
    let e = argus_alertd::deliver::build(&missing).err().unwrap().to_string();
    assert!(e.contains("global.http_config.tls_config.ca_file /nonexistent/ca.pem: No such file"), "{e}");
    let e = argus_alertd::config::parse(
        "global:\n  http_config:\n    tls_config:\n      insecure_skip_verify: true\nroute:\n  receiver: r\nreceivers:\n  - name: r\n",
        "a.yml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("global.http_config.tls_config.insecure_skip_verify: not supported by alertd yet"), "{e}");
}
