//! Go's `encoding/binary` varints, byte for byte, so our chunk headers and Gorilla payloads read
//! like Prometheus' (`PutUvarint`: LEB128; `PutVarint`: zigzag, then LEB128).

use super::ChunkError;

/// Longest encoding of a u64: ten 7-bit groups.
const MAX_LEN: usize = 10;

// The byte-aligned writers are the store's own, shared with the WAL and block formats.
pub(crate) use crate::bytes::{put_uvarint, put_varint};

/// Emits the bytes of `x` one by one, so the Gorilla bit stream can embed varints unaligned.
pub(crate) fn put_uvarint_with(mut x: u64, mut push: impl FnMut(u8)) {
    while x >= 0x80 {
        push((x as u8) | 0x80);
        x >>= 7;
    }
    push(x as u8);
}

pub(crate) fn zigzag(x: i64) -> u64 {
    ((x << 1) ^ (x >> 63)) as u64
}

pub(crate) fn unzigzag(u: u64) -> i64 {
    ((u >> 1) as i64) ^ -((u & 1) as i64)
}

/// Reads one uvarint from the front of `data`; returns it and the bytes it took.
/// Rejects encodings longer than ten bytes or overflowing 64 bits, as Go does.
pub(crate) fn uvarint(data: &[u8]) -> Result<(u64, usize), ChunkError> {
    let mut bytes = data.iter();
    let x = uvarint_with(|| bytes.next().copied().ok_or(ChunkError::Truncated))?;
    Ok((x, data.len() - bytes.len()))
}

/// Reads one uvarint from bytes supplied by `next`.
pub(crate) fn uvarint_with(mut next: impl FnMut() -> Result<u8, ChunkError>) -> Result<u64, ChunkError> {
    let mut x = 0u64;
    for i in 0..MAX_LEN {
        let b = next()?;
        if i == MAX_LEN - 1 && b > 1 {
            return Err(ChunkError::Corrupt("varint overflows 64 bits"));
        }
        x |= u64::from(b & 0x7f) << (7 * i);
        if b < 0x80 {
            return Ok(x);
        }
    }
    // Unreachable: the tenth byte either ends the varint or fails the overflow check.
    Err(ChunkError::Corrupt("varint overflows 64 bits"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_go_encoding_and_round_trips() {
        // Expected bytes are Go's binary.AppendUvarint / AppendVarint output.
        let cases: &[(i64, &[u8])] = &[
            (0, &[0x00]),
            (-1, &[0x01]),
            (1, &[0x02]),
            (-64, &[0x7f]),
            (64, &[0x80, 0x01]),
            (1_700_000_000_000, &[0x80, 0xa0, 0xab, 0xfe, 0xf9, 0x62]),
            (i64::MAX, &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
            (i64::MIN, &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
        ];
        for &(x, want) in cases {
            let mut out = Vec::new();
            put_varint(&mut out, x);
            assert_eq!(out, want, "varint({x})");
            let (u, n) = uvarint(&out).expect("valid varint");
            assert_eq!((unzigzag(u), n), (x, want.len()), "read back {x}");
        }
    }

    #[test]
    fn rejects_bad_input() {
        let cases: &[(&[u8], ChunkError)] = &[
            (&[], ChunkError::Truncated),
            (&[0x80, 0x80], ChunkError::Truncated),
            (&[0xff; 10], ChunkError::Corrupt("varint overflows 64 bits")),
            (
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                ChunkError::Corrupt("varint overflows 64 bits"),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(uvarint(input).err().as_ref(), Some(want), "{input:02x?}");
        }
    }
}
