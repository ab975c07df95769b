//! HTTP receivers behind a private CA: `global.http_config.tls_config.ca_file` makes delivery to an
//! HTTPS webhook succeed; without it the delivery fails naming the certificate problem. A receiver
//! that requires mutual TLS takes the client certificate of the webhook's own `http_config`.

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls;

/// A test CA: its PEM and what issues certificates with it.
fn ca() -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let ca_key = KeyPair::generate().unwrap();
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "alertd test CA");
    let cert = ca.self_signed(&ca_key).unwrap();
    (cert, Issuer::new(ca, ca_key))
}

/// A certificate for `name` issued by `issuer`, and its key.
fn leaf(issuer: &Issuer<'static, KeyPair>, name: &str) -> (rcgen::Certificate, KeyPair) {
    let key = KeyPair::generate().unwrap();
    let cert = CertificateParams::new(vec![name.into()]).unwrap().signed_by(&key, issuer).unwrap();
    (cert, key)
}

/// A CA (PEM) and a TLS server configuration for `localhost` with a certificate it issued; with
/// `client_ca`, the server requires a client certificate issued by that CA.
fn server(client_ca: Option<&rustls::pki_types::CertificateDer<'static>>) -> (String, Arc<rustls::ServerConfig>) {
    let (ca_cert, issuer) = ca();
    let (leaf_cert, leaf_key) = leaf(&issuer, "localhost");
    let leaf_der = leaf_cert.der().clone();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(leaf_key.serialize_der().into());
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder =
        rustls::ServerConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions().unwrap();
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(der) => {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(der.clone()).unwrap();
            let verifier =
                rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider).build().unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    (ca_cert.pem(), Arc::new(builder.with_single_cert(vec![leaf_der], key).unwrap()))
}

fn ca_and_server() -> (String, Arc<rustls::ServerConfig>) {
    server(None)
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
        "global:\n  http_config:\n    tls_config:\n      server_name: x\nroute:\n  receiver: r\nreceivers:\n  - name: r\n",
        "a.yml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("global.http_config.tls_config.server_name: not supported by alertd yet"), "{e}");
}

#[tokio::test]
async fn mutual_tls_takes_the_receivers_client_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (client_ca, client_issuer) = ca();
    let (cert, key) = leaf(&client_issuer, "alertd");
    std::fs::write(dir.path().join("client.pem"), cert.pem()).unwrap();
    std::fs::write(dir.path().join("client.key"), key.serialize_pem()).unwrap();
    let (server_ca, cfg) = server(Some(client_ca.der()));
    std::fs::write(dir.path().join("ca.pem"), server_ca).unwrap();
    let (port, got) = https_receiver(cfg).await;

    let hook = |http: &str| {
        let yaml = format!(
            "route:\n  receiver: hook\nreceivers:\n  - name: hook\n    webhook_configs:\n      - url: https://localhost:{port}/alerts\n        http_config: {http}\n"
        );
        let cfg = argus_alertd::config::parse(&yaml, &dir.path().join("alertd.yml").display().to_string()).unwrap();
        argus_alertd::deliver::build(&cfg).unwrap().remove("hook/webhook/0").unwrap()
    };
    // Paths relative to the configuration file's directory.
    let with_cert =
        hook("{tls_config: {ca_file: ca.pem, cert_file: client.pem, key_file: client.key, min_version: TLS12}}");
    with_cert.send(b"{}", "key-1").await.expect("delivery with the client certificate");
    assert_eq!(got.load(Ordering::SeqCst), 1);

    let without = hook("{tls_config: {ca_file: ca.pem}}");
    let e = without.send(b"{}", "key-2").await.expect_err("no client certificate, no delivery");
    assert!(e.is_retryable(), "{e}");
    assert_eq!(got.load(Ordering::SeqCst), 1);

    // insecure_skip_verify trusts any server certificate (and still presents the client's).
    let skip = hook("{tls_config: {insecure_skip_verify: true, cert_file: client.pem, key_file: client.key}}");
    skip.send(b"{}", "key-3").await.expect("delivery without verifying the server");
    assert_eq!(got.load(Ordering::SeqCst), 2);
}
