//! What the integration tests share: a server under test, raw HTTP, peers on loopback. Not every
//! module uses every helper.
#![allow(dead_code)]

pub mod peers;
pub mod raw_http;
pub mod server;
