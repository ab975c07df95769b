//! A walk over the top-level fields of an encoded `WriteRequest`, yielding each `TimeSeries` still encoded.
//!
//! Decoding the whole request with prost first would hold every series twice (prost's and ours) and lets
//! an empty `TimeSeries`, two bytes on the wire, cost about a hundred bytes of heap: a 32 MiB body could
//! take gigabytes. Walking the top level lets the caller decode, check and convert one series at a time.
//! Encoding: <https://protobuf.dev/programming-guides/encoding/>.

use super::RemoteWriteError;

/// `WriteRequest.timeseries`.
const TIMESERIES_TAG: u64 = 1;

const VARINT: u64 = 0;
const FIXED64: u64 = 1;
const LEN: u64 = 2;
const FIXED32: u64 = 5;

/// The encoded `TimeSeries` messages of a `WriteRequest`, in order. Other fields (metadata, and any
/// field a newer sender adds) are skipped. After the first error the iterator is exhausted.
pub(super) struct Series<'a> {
    rest: &'a [u8],
}

impl<'a> Series<'a> {
    pub(super) fn new(request: &'a [u8]) -> Self {
        Series { rest: request }
    }

    fn next_series(&mut self) -> Result<Option<&'a [u8]>, RemoteWriteError> {
        while !self.rest.is_empty() {
            let key = varint(&mut self.rest)?;
            let (tag, wire_type) = (key >> 3, key & 0b111);
            if tag == 0 {
                return Err(malformed("field number 0"));
            }
            let field = match wire_type {
                VARINT => varint(&mut self.rest).map(|_| &[][..])?,
                FIXED64 => take(&mut self.rest, 8)?,
                LEN => {
                    let len = varint(&mut self.rest)?;
                    let len = usize::try_from(len).map_err(|_| malformed("length overflows usize"))?;
                    take(&mut self.rest, len)?
                }
                FIXED32 => take(&mut self.rest, 4)?,
                // Groups (3, 4) are proto2-only and absent from prompb; 6 and 7 do not exist.
                other => {
                    return Err(malformed(&format!("unsupported wire type {other} for field {tag}")));
                }
            };
            if tag == TIMESERIES_TAG {
                if wire_type != LEN {
                    return Err(malformed(&format!("timeseries field has wire type {wire_type}, want {LEN}")));
                }
                return Ok(Some(field));
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for Series<'a> {
    type Item = Result<&'a [u8], RemoteWriteError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.next_series();
        if item.is_err() {
            self.rest = &[];
        }
        item.transpose()
    }
}

/// Reads a base-128 varint, at most 10 bytes, as protobuf allows.
fn varint(buf: &mut &[u8]) -> Result<u64, RemoteWriteError> {
    let mut value = 0u64;
    for i in 0..10 {
        let Some((&byte, rest)) = buf.split_first() else {
            return Err(malformed("truncated varint"));
        };
        *buf = rest;
        // The tenth byte holds only the 64th bit.
        if i == 9 && byte > 1 {
            return Err(malformed("varint overflows 64 bits"));
        }
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err(malformed("varint overflows 64 bits"))
}

fn take<'a>(buf: &mut &'a [u8], len: usize) -> Result<&'a [u8], RemoteWriteError> {
    if buf.len() < len {
        return Err(malformed(&format!("field of {len} bytes with {} left", buf.len())));
    }
    let (field, rest) = buf.split_at(len);
    *buf = rest;
    Ok(field)
}

fn malformed(reason: &str) -> RemoteWriteError {
    RemoteWriteError::Protobuf(format!("write request: {reason}"))
}
