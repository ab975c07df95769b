//! Cluster traffic sealed with the shared secret: every gossip datagram is encrypted and
//! authenticated with AES-256-GCM under a key derived from `secret` (as memberlist's gossip
//! encryption does for Alertmanager), so a host without the secret can neither read the cluster's
//! silences nor inject state. Datagrams that do not open are dropped and counted.
//!
//! Gossip fills datagrams up to the UDP limit; sealing adds a nonce and a tag, so a message that
//! would no longer fit travels in parts (`PART`), reassembled on arrival. The format is in
//! docs/format/alertd-cluster.md.

use aes_gcm::aead::{Aead, AeadCore, KeyInit, OsRng, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use anyhow::Context;
use async_trait::async_trait;
use chitchat::transport::{Socket, Transport};
use chitchat::{ChitchatMessage, Deserializable, Serializable};
use prometheus_client::metrics::counter::Counter;
use sha2::{Digest, Sha256};
use std::collections::VecDeque;
use std::net::SocketAddr;

/// The largest UDP payload (IPv4).
const MAX_DATAGRAM: usize = 65_507;
/// A whole sealed message: `WHOLE, nonce, ciphertext`.
const WHOLE: u8 = 1;
/// One part of a sealed message: `PART, id (8), index, count, bytes`.
const PART: u8 = 2;
const PART_HEADER: usize = 1 + 8 + 1 + 1;
/// Messages being reassembled at once; the oldest is dropped beyond it (UDP may lose a part).
const MAX_PARTIAL: usize = 32;
/// Associated data: binds ciphertexts to this protocol and format version.
const AAD: &[u8] = b"argus-alertd-cluster/1";

/// What the transport counts, shared with the cluster's metrics.
#[derive(Clone, Default)]
pub struct Counters {
    pub sent: Counter,
    pub received: Counter,
    /// Datagrams dropped because they did not open with the secret, or did not decode.
    pub rejected: Counter,
}

/// UDP sealed with a key derived from the shared secret.
pub struct SealedUdp {
    cipher: Aes256Gcm,
    counters: Counters,
}

impl SealedUdp {
    pub fn new(secret: &str, counters: Counters) -> SealedUdp {
        let key = Sha256::digest(secret.as_bytes());
        SealedUdp { cipher: Aes256Gcm::new(&key), counters }
    }
}

#[async_trait]
impl Transport for SealedUdp {
    async fn open(&self, listen_addr: SocketAddr) -> anyhow::Result<Box<dyn Socket>> {
        let socket = tokio::net::UdpSocket::bind(listen_addr)
            .await
            .with_context(|| format!("alertd cluster: cannot listen on {listen_addr}/udp"))?;
        Ok(Box::new(SealedSocket {
            socket,
            cipher: self.cipher.clone(),
            counters: self.counters.clone(),
            buf: vec![0; MAX_DATAGRAM],
            partial: VecDeque::new(),
        }))
    }
}

struct Partial {
    from: SocketAddr,
    id: u64,
    parts: Vec<Option<Vec<u8>>>,
}

struct SealedSocket {
    socket: tokio::net::UdpSocket,
    cipher: Aes256Gcm,
    counters: Counters,
    buf: Vec<u8>,
    partial: VecDeque<Partial>,
}

/// Seals `plain` into the datagrams that carry it.
fn seal(cipher: &Aes256Gcm, plain: &[u8]) -> anyhow::Result<Vec<Vec<u8>>> {
    let nonce = Aes256Gcm::generate_nonce(&mut OsRng);
    let sealed = cipher
        .encrypt(&nonce, Payload { msg: plain, aad: AAD })
        .map_err(|_| anyhow::anyhow!("alertd cluster: sealing a message failed"))?;
    if 1 + nonce.len() + sealed.len() <= MAX_DATAGRAM {
        let mut d = Vec::with_capacity(1 + nonce.len() + sealed.len());
        d.push(WHOLE);
        d.extend_from_slice(&nonce);
        d.extend_from_slice(&sealed);
        return Ok(vec![d]);
    }
    let mut body = nonce.to_vec();
    body.extend_from_slice(&sealed);
    let chunk = MAX_DATAGRAM - PART_HEADER;
    let count = body.len().div_ceil(chunk);
    let id = fastrand::u64(..);
    Ok(body
        .chunks(chunk)
        .enumerate()
        .map(|(i, c)| {
            let mut d = Vec::with_capacity(PART_HEADER + c.len());
            d.push(PART);
            d.extend_from_slice(&id.to_be_bytes());
            d.push(i as u8);
            d.push(count as u8);
            d.extend_from_slice(c);
            d
        })
        .collect())
}

/// Opens a sealed body (`nonce, ciphertext`); None when it does not open with this key.
fn open(cipher: &Aes256Gcm, body: &[u8]) -> Option<Vec<u8>> {
    if body.len() < 12 {
        return None;
    }
    let (nonce, sealed) = body.split_at(12);
    cipher.decrypt(Nonce::from_slice(nonce), Payload { msg: sealed, aad: AAD }).ok()
}

impl SealedSocket {
    /// The sealed body a datagram completes, if any.
    fn take(&mut self, from: SocketAddr, d: &[u8]) -> Option<Vec<u8>> {
        match d.first() {
            Some(&WHOLE) => Some(d[1..].to_vec()),
            Some(&PART) if d.len() > PART_HEADER => {
                let id = u64::from_be_bytes(d[1..9].try_into().ok()?);
                let (index, count) = (d[9] as usize, d[10] as usize);
                if index >= count {
                    return None;
                }
                let at = match self.partial.iter().position(|p| p.from == from && p.id == id) {
                    Some(at) => at,
                    None => {
                        if self.partial.len() == MAX_PARTIAL {
                            self.partial.pop_front();
                        }
                        self.partial.push_back(Partial { from, id, parts: vec![None; count] });
                        self.partial.len() - 1
                    }
                };
                let p = &mut self.partial[at];
                if p.parts.len() != count {
                    return None;
                }
                p.parts[index] = Some(d[PART_HEADER..].to_vec());
                if p.parts.iter().any(Option::is_none) {
                    return None;
                }
                let p = self.partial.remove(at)?;
                Some(p.parts.into_iter().flatten().flatten().collect())
            }
            _ => None,
        }
    }
}

#[async_trait]
impl Socket for SealedSocket {
    async fn send(&mut self, to: SocketAddr, message: ChitchatMessage) -> anyhow::Result<()> {
        let mut plain = Vec::with_capacity(message.serialized_len());
        message.serialize(&mut plain);
        for d in seal(&self.cipher, &plain)? {
            match self.socket.send_to(&d, to).await {
                Ok(_) => {
                    self.counters.sent.inc();
                }
                // A peer that is gone, or a full buffer: gossip tries again next round.
                Err(error) => tracing::debug!(%to, %error, "Cluster message not sent"),
            }
        }
        Ok(())
    }

    async fn recv(&mut self) -> anyhow::Result<(SocketAddr, ChitchatMessage)> {
        loop {
            let (len, from) = match self.socket.recv_from(&mut self.buf).await {
                Ok(r) => r,
                Err(error) => {
                    // ICMP errors from a peer that went away surface here; they are not fatal.
                    tracing::debug!(%error, "Cluster receive error");
                    continue;
                }
            };
            let d = self.buf[..len].to_vec();
            let Some(body) = self.take(from, &d) else {
                if !matches!(d.first(), Some(&PART)) {
                    self.counters.rejected.inc();
                }
                continue;
            };
            let Some(plain) = open(&self.cipher, &body) else {
                self.counters.rejected.inc();
                tracing::debug!(%from, "Cluster message dropped: it does not open with this cluster's secret");
                continue;
            };
            match ChitchatMessage::deserialize(&mut plain.as_slice()) {
                Ok(m) => {
                    self.counters.received.inc();
                    return Ok((from, m));
                }
                Err(error) => {
                    self.counters.rejected.inc();
                    tracing::warn!(%from, %error, "Cluster message dropped: it does not decode");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(cipher: &Aes256Gcm) -> SealedSocket {
        let std = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        std.set_nonblocking(true).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let socket = rt.block_on(async { tokio::net::UdpSocket::from_std(std).unwrap() });
        SealedSocket {
            socket,
            cipher: cipher.clone(),
            counters: Counters::default(),
            buf: vec![],
            partial: VecDeque::new(),
        }
    }

    fn cipher(secret: &str) -> Aes256Gcm {
        Aes256Gcm::new(&Sha256::digest(secret.as_bytes()))
    }

    #[test]
    fn a_message_too_large_for_one_datagram_travels_in_parts() {
        let c = cipher("s3cret");
        let plain: Vec<u8> = (0..MAX_DATAGRAM).map(|i| (i % 251) as u8).collect();
        let ds = seal(&c, &plain).unwrap();
        assert_eq!(ds.len(), 2);
        assert!(ds.iter().all(|d| d.len() <= MAX_DATAGRAM && d[0] == PART));
        let mut s = socket(&c);
        let from: SocketAddr = "127.0.0.1:9".parse().unwrap();
        // Parts may arrive in any order; a stray part of another message does not disturb them.
        assert!(s.take(from, &ds[1]).is_none());
        let mut stray = ds[0].clone();
        stray[1] ^= 1;
        assert!(s.take(from, &stray).is_none());
        let body = s.take(from, &ds[0]).unwrap();
        assert_eq!(open(&c, &body).unwrap(), plain);
        assert_eq!(s.partial.len(), 1);
    }

    #[test]
    fn only_the_same_secret_opens_a_message() {
        let ds = seal(&cipher("s3cret"), b"hello").unwrap();
        assert_eq!(ds.len(), 1);
        let body = &ds[0][1..];
        assert_eq!(open(&cipher("s3cret"), body).unwrap(), b"hello");
        assert!(open(&cipher("other"), body).is_none());
        let mut tampered = body.to_vec();
        *tampered.last_mut().unwrap() ^= 1;
        assert!(open(&cipher("s3cret"), &tampered).is_none());
    }
}
