//! A bare HTTP/1.1 client for the tests that kill or starve the server: they need only the status and
//! body, and no client library should stand between them and a server that may die mid-request.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::time::Duration;

/// A loopback port free at the time of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").expect("bind :0").local_addr().expect("local addr").port()
}

/// One request on its own connection: the status and the body.
pub fn http(addr: &str, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut out = Vec::new();
    s.read_to_end(&mut out)?;
    let text = String::from_utf8_lossy(&out).to_string();
    let status = text
        .get(9..12)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad response {text:?}")))?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    // A large answer is sent in parts as it is written (chunked transfer encoding).
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        dechunk(body).ok_or_else(|| std::io::Error::other(format!("bad chunked body {body:?}")))?
    } else {
        body.to_string()
    };
    Ok((status, body))
}

/// The payload of a chunked body: `<hex size>\r\n<bytes>\r\n` parts up to a zero-size one.
fn dechunk(mut body: &str) -> Option<String> {
    let mut out = String::new();
    loop {
        let (size, rest) = body.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(out);
        }
        out.push_str(rest.get(..size)?);
        body = rest.get(size..)?.strip_prefix("\r\n")?;
    }
}

/// Reads one request from a webhook receiver's connection: its `Idempotency-Key` (empty without one)
/// and its body; None when the connection closed before a whole request arrived.
pub fn read_delivery(r: &mut impl std::io::BufRead) -> Option<(String, Vec<u8>)> {
    let (mut len, mut key) = (0usize, String::new());
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if let Some(v) = lower.strip_prefix("idempotency-key:") {
            key = v.trim().to_string();
        }
    }
    let mut body = vec![0; len];
    if len == 0 || r.read_exact(&mut body).is_err() {
        return None;
    }
    Some((key, body))
}
