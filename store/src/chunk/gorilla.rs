//! Gorilla (Pelkonen et al., VLDB 2015) as Prometheus' XOR chunk lays it out: the first
//! timestamp as a varint and the first delta as a uvarint, then delta-of-deltas in the
//! 0 / 14 / 17 / 20 / 64-bit buckets; values XORed with their predecessor, reusing the previous
//! leading/trailing-zero window when the new one fits inside it. docs/format/chunk.md has the
//! bit layout.

use super::ChunkError;
use super::bits::{BitReader, BitWriter};
use super::varint;

/// `(prefix, prefix bits, payload bits)` for the non-zero delta-of-delta buckets.
const DOD_BUCKETS: [(u64, u32, u32); 3] = [(0b10, 2, 14), (0b110, 3, 17), (0b1110, 4, 20)];

/// "No window yet": the first XOR must open one.
const NO_WINDOW: u32 = 0xff;

/// Appends the payload for `ts`/`vals` (same length) to `out`.
pub(crate) fn encode(ts: &[i64], vals: &[f64], out: &mut Vec<u8>) {
    let mut a = Appender::default();
    for (&t, &v) in ts.iter().zip(vals) {
        a.append(out, t, v);
    }
    a.finish(out);
}

/// A Gorilla payload written one sample at a time: the head's open chunks. The whole bytes go to the
/// caller's buffer as they fill; up to 7 bits wait here until the next sample or [`Appender::finish`].
#[derive(Default, Clone)]
pub(crate) struct Appender {
    n: u32,
    t_prev: i64,
    delta_prev: i64,
    xor: XorState,
    /// Bits not yet in the buffer, as [`BitWriter::pause`] returns them.
    pending: (u64, u32),
}

impl Appender {
    /// Samples appended so far.
    pub(crate) fn len(&self) -> u32 {
        self.n
    }

    /// The last timestamp appended (meaningless before the first).
    pub(crate) fn last_t(&self) -> i64 {
        self.t_prev
    }

    /// The last value appended (meaningless before the first).
    pub(crate) fn last_v(&self) -> f64 {
        f64::from_bits(self.xor.prev)
    }

    pub(crate) fn append(&mut self, out: &mut Vec<u8>, t: i64, v: f64) {
        let mut w = BitWriter::resume(out, self.pending);
        let v = v.to_bits();
        match self.n {
            0 => {
                varint::put_uvarint_with(varint::zigzag(t), |b| w.write_bits(u64::from(b), 8));
                w.write_bits(v, 64);
                self.xor.prev = v;
            }
            1 => {
                // Wrapping keeps even out-of-contract input (equal or decreasing times)
                // round-tripping, since the decoder wraps the same way.
                let delta = t.wrapping_sub(self.t_prev);
                varint::put_uvarint_with(delta as u64, |b| w.write_bits(u64::from(b), 8));
                self.xor.write(&mut w, v);
                self.delta_prev = delta;
            }
            _ => {
                let delta = t.wrapping_sub(self.t_prev);
                write_dod(&mut w, delta.wrapping_sub(self.delta_prev));
                self.xor.write(&mut w, v);
                self.delta_prev = delta;
            }
        }
        self.t_prev = t;
        self.n += 1;
        self.pending = w.pause();
    }

    /// Writes the pending bits, padded with zeros, after `out`: `out` then holds the whole payload.
    /// The appender is left as it was, so the same payload can be finished again later, longer.
    pub(crate) fn finish(&self, out: &mut Vec<u8>) {
        BitWriter::resume(out, self.pending).finish();
    }
}

/// Appends `n` samples decoded from `data` (exactly one payload) to `ts` and `vals`.
pub(crate) fn decode(data: &[u8], n: usize, ts: &mut Vec<i64>, vals: &mut Vec<f64>) -> Result<(), ChunkError> {
    // Every sample after the second costs at least two bits, so a corrupt count cannot make
    // us reserve more than the input could hold.
    let cap = n.min(data.len().saturating_mul(4).saturating_add(2));
    ts.reserve(cap);
    vals.reserve(cap);
    let mut r = BitReader::new(data);
    let mut xor = XorState::default();
    let (mut t, mut delta) = (0i64, 0i64);
    for i in 0..n {
        match i {
            0 => {
                t = varint::unzigzag(varint::uvarint_with(|| read_byte(&mut r))?);
                xor.prev = r.read_bits(64)?;
            }
            1 => {
                delta = varint::uvarint_with(|| read_byte(&mut r))? as i64;
                t = t.wrapping_add(delta);
                xor.read(&mut r)?;
            }
            _ => {
                delta = delta.wrapping_add(read_dod(&mut r)?);
                t = t.wrapping_add(delta);
                xor.read(&mut r)?;
            }
        }
        ts.push(t);
        vals.push(f64::from_bits(xor.prev));
    }
    if r.remaining_bits() >= 8 {
        return Err(ChunkError::Corrupt("trailing bytes after gorilla payload"));
    }
    Ok(())
}

fn read_byte(r: &mut BitReader<'_>) -> Result<u8, ChunkError> {
    Ok(r.read_bits(8)? as u8)
}

fn write_dod(w: &mut BitWriter<'_>, dod: i64) {
    if dod == 0 {
        w.write_bit(false);
        return;
    }
    for (prefix, prefix_bits, bits) in DOD_BUCKETS {
        // Prometheus' bitRange: the range is shifted by one so that +2^(bits-1) fits.
        let half = 1i64 << (bits - 1);
        if -(half - 1) <= dod && dod <= half {
            w.write_bits(prefix, prefix_bits);
            w.write_bits(dod as u64, bits);
            return;
        }
    }
    w.write_bits(0b1111, 4);
    w.write_bits(dod as u64, 64);
}

fn read_dod(r: &mut BitReader<'_>) -> Result<i64, ChunkError> {
    let bits = match r.read_unary(4)? {
        0 => return Ok(0),
        1 => 14,
        2 => 17,
        3 => 20,
        _ => return Ok(r.read_bits(64)? as i64),
    };
    let raw = r.read_bits(bits)?;
    // Sign-extend the way Prometheus does, mirroring the shifted range of `write_dod`.
    let half = 1u64 << (bits - 1);
    Ok(if raw > half { raw as i64 - (1i64 << bits) } else { raw as i64 })
}

/// The value column's state: the previous value's bits and the current meaningful-bit window.
#[derive(Clone)]
struct XorState {
    prev: u64,
    leading: u32,
    trailing: u32,
}

impl Default for XorState {
    fn default() -> Self {
        Self { prev: 0, leading: NO_WINDOW, trailing: 0 }
    }
}

impl XorState {
    fn write(&mut self, w: &mut BitWriter<'_>, v: u64) {
        let delta = v ^ self.prev;
        self.prev = v;
        if delta == 0 {
            w.write_bit(false);
            return;
        }
        w.write_bit(true);
        // Five bits hold the leading count, so it is clamped to 31.
        let leading = delta.leading_zeros().min(31);
        let trailing = delta.trailing_zeros();
        if self.leading != NO_WINDOW && leading >= self.leading && trailing >= self.trailing {
            w.write_bit(false);
            w.write_bits(delta >> self.trailing, 64 - self.leading - self.trailing);
            return;
        }
        self.leading = leading;
        self.trailing = trailing;
        let sigbits = 64 - leading - trailing;
        w.write_bit(true);
        w.write_bits(u64::from(leading), 5);
        // 64 significant bits are written as 0: six bits cannot hold 64, and 0 never occurs.
        w.write_bits(u64::from(sigbits), 6);
        w.write_bits(delta >> trailing, sigbits);
    }

    fn read(&mut self, r: &mut BitReader<'_>) -> Result<(), ChunkError> {
        if !r.read_bit()? {
            return Ok(());
        }
        if r.read_bit()? {
            let leading = r.read_bits(5)? as u32;
            let sigbits = match r.read_bits(6)? as u32 {
                0 => 64,
                n => n,
            };
            if leading + sigbits > 64 {
                return Err(ChunkError::Corrupt("gorilla xor window exceeds 64 bits"));
            }
            self.leading = leading;
            self.trailing = 64 - leading - sigbits;
        } else if self.leading == NO_WINDOW {
            return Err(ChunkError::Corrupt("gorilla xor reuses a window before any was set"));
        }
        let sigbits = 64 - self.leading - self.trailing;
        self.prev ^= r.read_bits(sigbits)? << self.trailing;
        Ok(())
    }
}
