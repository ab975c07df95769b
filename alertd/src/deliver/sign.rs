//! The signing primitives receivers share: HMAC-SHA256, hex and base64.

use base64::Engine;
use hmac::{Hmac, Mac};
use sha2::Sha256;

pub fn hmac_sha256(key: &[u8], msg: &[u8]) -> Vec<u8> {
    // HMAC takes keys of any length, so `new_from_slice` cannot fail here.
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(key) else { return Vec::new() };
    mac.update(msg);
    mac.finalize().into_bytes().to_vec()
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn base64(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(b)
}
