//! The records inside a WAL entry. An entry is a sequence of `[type u8][len uvarint][body]` records.

use crate::bytes::{DecodeError, Reader, put_str, put_uvarint, put_varint};
use argus_model::{Event, Labels};

const SERIES: u8 = 1;
const SAMPLES: u8 = 2;
const EVENTS: u8 = 3;

/// A sample addressed by the head's series reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RefSample {
    pub r: u32,
    pub t: i64,
    pub v: f64,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    Series(Vec<(u32, Labels)>),
    Samples(Vec<RefSample>),
    Events(Vec<Event>),
}

fn framed(out: &mut Vec<u8>, kind: u8, body: impl FnOnce(&mut Vec<u8>)) {
    out.push(kind);
    let mut b = Vec::new();
    body(&mut b);
    put_uvarint(out, b.len() as u64);
    out.extend_from_slice(&b);
}

fn put_labels(b: &mut Vec<u8>, labels: &Labels) {
    put_uvarint(b, labels.len() as u64);
    for l in labels {
        put_str(b, &l.name);
        put_str(b, &l.value);
    }
}

pub fn encode_series<'a>(out: &mut Vec<u8>, series: impl ExactSizeIterator<Item = (u32, &'a Labels)>) {
    framed(out, SERIES, |b| {
        put_uvarint(b, series.len() as u64);
        for (r, labels) in series {
            put_uvarint(b, u64::from(r));
            put_labels(b, labels);
        }
    });
}

/// Timestamps are delta-encoded against the previous sample of the record: batches hold one or a few
/// timestamps, so most deltas take one byte.
pub fn encode_samples(out: &mut Vec<u8>, samples: &[RefSample]) {
    framed(out, SAMPLES, |b| {
        b.reserve(samples.len() * 12);
        put_uvarint(b, samples.len() as u64);
        let mut prev = 0i64;
        for s in samples {
            put_uvarint(b, u64::from(s.r));
            put_varint(b, s.t.wrapping_sub(prev));
            prev = s.t;
            b.extend_from_slice(&s.v.to_bits().to_le_bytes());
        }
    });
}

pub fn encode_events(out: &mut Vec<u8>, events: &[Event]) {
    framed(out, EVENTS, |b| {
        put_uvarint(b, events.len() as u64);
        for e in events {
            put_labels(b, &e.labels);
            put_varint(b, e.t);
            put_str(b, &e.text);
        }
    });
}

fn read_labels(r: &mut Reader<'_>) -> Result<Labels, DecodeError> {
    let n = r.uvarint()? as usize;
    let mut pairs = Vec::with_capacity(n.min(1024));
    for _ in 0..n {
        pairs.push((r.str()?, r.str()?));
    }
    Ok(Labels::from_pairs(pairs))
}

pub fn decode_entry(payload: &[u8]) -> Result<Vec<Record>, DecodeError> {
    let mut out = Vec::new();
    let mut r = Reader::new(payload);
    while !r.is_empty() {
        let kind = r.u8()?;
        let len = r.uvarint()? as usize;
        let mut b = Reader::new(r.bytes(len)?);
        let n = b.uvarint()? as usize;
        // Counts are untrusted until the bytes behind them are read: cap the pre-allocation.
        let cap = n.min(len);
        out.push(match kind {
            SERIES => {
                let mut v = Vec::with_capacity(cap);
                for _ in 0..n {
                    let id = u32::try_from(b.uvarint()?)
                        .map_err(|_| DecodeError { what: "series ref over u32", offset: b.pos() })?;
                    v.push((id, read_labels(&mut b)?));
                }
                Record::Series(v)
            }
            SAMPLES => {
                let mut v = Vec::with_capacity(cap);
                let mut t = 0i64;
                for _ in 0..n {
                    let id = u32::try_from(b.uvarint()?)
                        .map_err(|_| DecodeError { what: "series ref over u32", offset: b.pos() })?;
                    t = t.wrapping_add(b.varint()?);
                    let v64 = f64::from_bits(b.u64_le()?);
                    v.push(RefSample { r: id, t, v: v64 });
                }
                Record::Samples(v)
            }
            EVENTS => {
                let mut v = Vec::with_capacity(cap);
                for _ in 0..n {
                    let labels = read_labels(&mut b)?;
                    let t = b.varint()?;
                    let text = b.str()?.to_string();
                    v.push(Event { labels, t, text });
                }
                Record::Events(v)
            }
            _ => return Err(DecodeError { what: "unknown record type", offset: r.pos() }),
        });
    }
    Ok(out)
}
