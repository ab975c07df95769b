//! MSB-first bit stream, the layout of Prometheus' `bstream`.
//!
//! Our own rather than a crate: it is forty lines, it sits in the hottest loop of the Gorilla
//! codec, and owning it lets the reader return an error at the end of the input instead of
//! panicking or reading zeros.

use super::ChunkError;

pub(crate) struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    /// Pending bits in the low `len` positions; `len < 8` between calls.
    acc: u64,
    len: u32,
}

impl<'a> BitWriter<'a> {
    #[cfg(test)]
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        Self { out, acc: 0, len: 0 }
    }

    /// Goes on writing after `out` and the pending bits a previous writer left ([`BitWriter::pause`]).
    pub(crate) fn resume(out: &'a mut Vec<u8>, (acc, len): (u64, u32)) -> Self {
        Self { out, acc, len }
    }

    /// Stops without padding: the whole bytes are in `out`, the rest is returned for [`BitWriter::resume`].
    pub(crate) fn pause(self) -> (u64, u32) {
        (self.acc, self.len)
    }

    pub(crate) fn write_bit(&mut self, bit: bool) {
        self.write_bits(u64::from(bit), 1);
    }

    /// Writes the low `nbits` (≤ 64) of `v`.
    pub(crate) fn write_bits(&mut self, v: u64, nbits: u32) {
        // With fewer than 8 bits pending, 56 more still fit in the accumulator.
        if nbits > 56 {
            self.write_bits(v >> 32, nbits - 32);
            self.write_bits(v, 32);
            return;
        }
        if nbits == 0 {
            return;
        }
        self.acc = (self.acc << nbits) | (v & low_mask(nbits));
        self.len += nbits;
        while self.len >= 8 {
            self.len -= 8;
            self.out.push((self.acc >> self.len) as u8);
        }
        self.acc &= low_mask(self.len);
    }

    /// Pads the last byte with zero bits.
    pub(crate) fn finish(self) {
        if self.len > 0 {
            self.out.push((self.acc << (8 - self.len)) as u8);
        }
    }
}

pub(crate) struct BitReader<'a> {
    data: &'a [u8],
    /// Next byte of `data` to load into `acc`.
    pos: usize,
    /// Loaded bits in the low `len` positions (higher bits are stale).
    acc: u64,
    len: u32,
}

impl<'a> BitReader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data, pos: 0, acc: 0, len: 0 }
    }

    pub(crate) fn read_bit(&mut self) -> Result<bool, ChunkError> {
        Ok(self.read_bits(1)? == 1)
    }

    /// Reads `nbits` (≤ 64) bits as the low bits of the result.
    #[inline]
    pub(crate) fn read_bits(&mut self, nbits: u32) -> Result<u64, ChunkError> {
        if nbits > 56 {
            let hi = self.read_bits(nbits - 32)?;
            let lo = self.read_bits(32)?;
            return Ok((hi << 32) | lo);
        }
        if self.len < nbits {
            self.refill();
            if self.len < nbits {
                return Err(ChunkError::Truncated);
            }
        }
        self.len -= nbits;
        Ok((self.acc >> self.len) & low_mask(nbits))
    }

    /// Counts the leading one bits, up to `max`, consuming them and the terminating zero (if
    /// fewer than `max`): the unary prefixes of Gorilla's buckets.
    #[inline]
    pub(crate) fn read_unary(&mut self, max: u32) -> Result<u32, ChunkError> {
        let mut n = 0;
        while n < max && self.read_bit()? {
            n += 1;
        }
        Ok(n)
    }

    pub(crate) fn remaining_bits(&self) -> usize {
        self.len as usize + (self.data.len() - self.pos) * 8
    }

    fn refill(&mut self) {
        if let Some(chunk) = self.data.get(self.pos..self.pos + 8) {
            // Fast path: top up to at least 56 bits with one load.
            let take = (63 - self.len) / 8;
            if take == 0 {
                return;
            }
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let bytes = u64::from_be_bytes(word) >> (64 - 8 * take);
            self.acc = (self.acc << (8 * take)) | bytes;
            self.len += 8 * take;
            self.pos += take as usize;
            return;
        }
        while self.len <= 56 {
            let Some(&b) = self.data.get(self.pos) else {
                return;
            };
            self.acc = (self.acc << 8) | u64::from(b);
            self.len += 8;
            self.pos += 1;
        }
    }
}

fn low_mask(nbits: u32) -> u64 {
    if nbits >= 64 { u64::MAX } else { (1u64 << nbits) - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_msb_first_and_reads_back() {
        let fields: &[(u64, u32)] =
            &[(1, 1), (0, 1), (0b101, 3), (0x3fff, 14), (u64::MAX, 64), (0, 0), (0x1234_5678_9abc, 57), (7, 5)];
        let mut out = Vec::new();
        let mut w = BitWriter::new(&mut out);
        for &(v, n) in fields {
            w.write_bits(v, n);
        }
        w.finish();
        assert_eq!(&out[..2], &[0b1010_1111, 0b1111_1111]);
        let mut r = BitReader::new(&out);
        for &(v, n) in fields {
            assert_eq!(r.read_bits(n), Ok(v & low_mask(n)), "field ({v:#x}, {n})");
        }
        // 145 bits were written: 7 bits of padding remain, then the input ends.
        assert_eq!(r.read_bits(7), Ok(0));
        assert_eq!(r.read_bit(), Err(ChunkError::Truncated));
    }
}
