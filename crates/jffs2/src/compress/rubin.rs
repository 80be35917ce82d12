//! The rubin compressors (`JFFS2_COMPR_RUBINMIPS`, id 3, and `JFFS2_COMPR_DYNRUBIN`, id 5):
//! a binary arithmetic coder over the 8 bits of every byte, from the kernel's
//! `fs/jffs2/compr_rubin.c` description.
//!
//! Every byte is coded as 8 binary decisions, least significant bit first; decision `i` has
//! the fixed probability model `(A, B) = (divider − bits[i], bits[i])`. The coder keeps a
//! 16-bit interval `[q, q + p)`; before each decision it renormalises (shifting one bit out
//! per doubling of `p`) while `q ≥ 2^15` or `p + q ≤ 2^15`, then splits `p` at
//! `i0 = clamp(A·p / (A+B), 1, p−1)`. The encoder finally flushes the 16 bits of `q`; the
//! decoder starts by reading 16 bits. Bits are stored MSB first.
//!
//! * RUBINMIPS: fixed model, divider 1043, bits {277, 249, 290, 267, 229, 341, 212, 241}.
//! * DYNRUBIN: the first 8 bytes of the node data are `bits[0..8]` (computed from the
//!   byte histogram), divider 256; the arithmetic-coded stream follows.
//!
//! Neither mkfs.jffs2 nor today's kernel ever *writes* rubin data (the kernel registers
//! them decompress-only); old kernels (2.4) could write DYNRUBIN. Note that the kernel's
//! compressor table since 2004 registers the fixed-model decoder under id 5 and the dynamic
//! one under id 3 (the ids are swapped relative to their names and to what 2.4 kernels and
//! U-Boot do). [`super::decompress`] follows the ids' defined meaning (3 = fixed model,
//! 5 = dynamic model with header); both decoders are public for callers that need the
//! kernel's swapped view.

use super::{ComprError, COMPR_DYNRUBIN, COMPR_RUBINMIPS};

/// Register width of the arithmetic coder.
const REG_SIZE: u32 = 16;
/// `UPPER_BIT_RUBIN`.
const UPPER: u64 = 1 << (REG_SIZE - 1);
/// `LOWER_BITS_RUBIN`.
const LOWER: u64 = UPPER - 1;
/// Divider of the RUBINMIPS model (`BIT_DIVIDER_MIPS`).
const DIVIDER_MIPS: u64 = 1043;
/// Bit model of RUBINMIPS (`bits_mips`).
const BITS_MIPS: [u64; 8] = [277, 249, 290, 267, 229, 341, 212, 241];
/// Divider of the DYNRUBIN model.
const DIVIDER_DYN: u64 = 256;
/// Output bits the encoder keeps back for its final flush (`reserve` of `init_pushpull`).
const RESERVE_BITS: usize = 32;

/// The split point of the interval for a decision with model `(a, b)`.
fn split(a: u64, b: u64, p: u64) -> u64 {
    // a + b is the divider (1043 or 256), never 0. p ≥ 2 here (see `renormalise`), so the
    // clamp yields 1 ≤ i0 ≤ p − 1.
    let i0 = (a * p) / (a + b);
    i0.max(1).min(p.saturating_sub(1))
}

/// Whether the interval must be renormalised before the next decision.
fn needs_renorm(p: u64, q: u64) -> bool {
    q >= UPPER || p + q <= UPPER
}

/// Bit-level encoder state (`struct rubin_state` + `struct pushpull` of the encoder).
#[derive(Clone, Copy)]
struct EncState {
    p: u64,
    q: u64,
    /// Bits written so far.
    ofs: usize,
}

struct Encoder {
    st: EncState,
    buf: Vec<u8>,
    /// Capacity in bits.
    buflen: usize,
}

impl Encoder {
    fn new(dst_bytes: usize) -> Self {
        Encoder {
            st: EncState {
                p: 2 * UPPER,
                q: 0,
                ofs: 0,
            },
            buf: vec![0; dst_bytes],
            buflen: dst_bytes * 8,
        }
    }

    /// `pushbit()`: fails when the (non-reserved) space is used up. For buffers smaller
    /// than the reserve the kernel's unsigned arithmetic would never fail (and overflow the
    /// buffer); here such a buffer simply has no room.
    fn push(&mut self, bit: bool, use_reserved: bool) -> bool {
        let limit = if use_reserved {
            self.buflen
        } else {
            self.buflen.saturating_sub(RESERVE_BITS)
        };
        if self.st.ofs >= limit {
            return false;
        }
        let mask = 1u8 << (7 - (self.st.ofs & 7));
        if let Some(byte) = self.buf.get_mut(self.st.ofs >> 3) {
            if bit {
                *byte |= mask;
            } else {
                *byte &= !mask;
            }
        }
        self.st.ofs += 1;
        true
    }

    fn encode(&mut self, a: u64, b: u64, symbol: bool) -> bool {
        while needs_renorm(self.st.p, self.st.q) {
            if !self.push(self.st.q & UPPER != 0, false) {
                return false;
            }
            self.st.q = (self.st.q & LOWER) << 1;
            self.st.p <<= 1;
        }
        let i0 = split(a, b, self.st.p);
        if symbol {
            self.st.p -= i0;
            self.st.q += i0;
        } else {
            self.st.p = i0;
        }
        true
    }

    /// `out_byte()`: all 8 decisions or none (the coder state is restored on failure; like
    /// the kernel, bits already stored into the buffer beyond the restored position stay).
    fn out_byte(&mut self, divider: u64, bits: &[u64; 8], byte: u8) -> bool {
        let saved = self.st;
        for (i, &bit) in bits.iter().enumerate() {
            if !self.encode(divider - bit, bit, (byte >> i) & 1 != 0) {
                self.st = saved;
                return false;
            }
        }
        true
    }

    /// `end_rubin()`: flush the 16 bits of `q` into the reserved space.
    fn finish(&mut self) {
        for _ in 0..REG_SIZE {
            self.push(self.st.q & UPPER != 0, true);
            self.st.q = (self.st.q & LOWER) << 1;
        }
    }
}

/// `rubin_do_compress()`: codes as many whole bytes as fit into `dst_bytes`.
fn rubin_encode(
    divider: u64,
    bits: &[u64; 8],
    src: &[u8],
    dst_bytes: usize,
) -> Option<(Vec<u8>, usize)> {
    let mut enc = Encoder::new(dst_bytes);
    let mut pos = 0;
    while pos < src.len() && enc.out_byte(divider, bits, src[pos]) {
        pos += 1;
    }
    enc.finish();
    let outpos = enc.st.ofs.div_ceil(8);
    if outpos >= pos {
        return None;
    }
    enc.buf.truncate(outpos);
    Some((enc.buf, pos))
}

/// Compresses a prefix of `src` into at most `dstlen` bytes with the RUBINMIPS model.
///
/// Provided for completeness and tests: no mtd-utils or kernel version writes RUBINMIPS
/// (the kernel's `jffs2_rubinmips_compress` is under `#if 0`).
pub fn rubinmips_compress(src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
    rubin_encode(DIVIDER_MIPS, &BITS_MIPS, src, dstlen)
}

/// Compresses a prefix of `src` into at most `dstlen` bytes with DYNRUBIN, like the
/// kernel's `jffs2_dynrubin_compress` (8-byte model header, then the coded stream).
///
/// Provided for completeness and tests: mkfs.jffs2 has no rubin compressor and the kernel
/// registers it disabled. The model reproduces the kernel's quirks: the byte histogram
/// uses 8-bit counters (wrapping), and each `bits[i]` is clamped to 1..=255.
pub fn dynrubin_compress(src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
    if dstlen <= 12 || src.is_empty() {
        return None;
    }
    let mut histo = [0u8; 256];
    for &b in src {
        histo[usize::from(b)] = histo[usize::from(b)].wrapping_add(1);
    }
    let mut bits = [0u64; 8];
    for (value, &count) in histo.iter().enumerate() {
        for (i, bit) in bits.iter_mut().enumerate() {
            if value & (1 << i) != 0 {
                *bit += u64::from(count);
            }
        }
    }
    let srclen = src.len() as u64;
    let mut header = [0u8; 8];
    for (bit, h) in bits.iter_mut().zip(header.iter_mut()) {
        *bit = ((*bit * 256) / srclen).clamp(1, 255);
        *h = *bit as u8;
    }
    let (coded, consumed) = rubin_encode(DIVIDER_DYN, &bits, src, dstlen - 8)?;
    let total = coded.len() + 8;
    if consumed <= total {
        return None;
    }
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&header);
    out.extend_from_slice(&coded);
    Some((out, consumed))
}

/// Bit-level decoder (`init_decode`, `decode`, `in_byte`). Reading past the end of the
/// input is an error (the kernel reads past its buffer; a valid stream never does, since
/// the decoder pulls exactly the bits the encoder pushed).
struct Decoder<'a> {
    src: &'a [u8],
    ofs: usize,
    p: u64,
    q: u64,
    rec_q: u64,
    compr: u8,
}

impl<'a> Decoder<'a> {
    fn new(src: &'a [u8], compr: u8) -> Result<Self, ComprError> {
        let mut d = Decoder {
            src,
            ofs: 0,
            p: 2 * UPPER,
            q: 0,
            rec_q: 0,
            compr,
        };
        for _ in 0..REG_SIZE {
            d.rec_q = d.rec_q * 2 + d.pull()?;
        }
        Ok(d)
    }

    fn pull(&mut self) -> Result<u64, ComprError> {
        let Some(&byte) = self.src.get(self.ofs >> 3) else {
            return Err(ComprError::Truncated {
                compr: self.compr,
                len: self.src.len(),
            });
        };
        let bit = (byte >> (7 - (self.ofs & 7))) & 1;
        self.ofs += 1;
        Ok(u64::from(bit))
    }

    fn decode(&mut self, a: u64, b: u64) -> Result<bool, ComprError> {
        // Invariants (both in the encoder and here): q + p ≤ 2^16 and, after
        // renormalisation, q < 2^15 < p + q, hence p ≥ 2; the loop runs at most 17 times.
        while needs_renorm(self.p, self.q) {
            self.q = (self.q & LOWER) << 1;
            self.p <<= 1;
            self.rec_q = ((self.rec_q & LOWER) << 1) + self.pull()?;
        }
        let i0 = split(a, b, self.p);
        let symbol = self.rec_q >= self.q + i0;
        if symbol {
            self.q += i0;
            self.p -= i0;
        } else {
            self.p = i0;
        }
        Ok(symbol)
    }

    fn in_byte(&mut self, divider: u64, bits: &[u64; 8]) -> Result<u8, ComprError> {
        let mut result = 0u8;
        for (i, &bit) in bits.iter().enumerate() {
            if self.decode(divider - bit, bit)? {
                result |= 1 << i;
            }
        }
        Ok(result)
    }
}

/// `rubin_do_decompress()` into exactly `dsize` bytes.
fn rubin_decode(
    divider: u64,
    bits: &[u64; 8],
    src: &[u8],
    dsize: usize,
    compr: u8,
) -> Result<Vec<u8>, ComprError> {
    let mut dec = Decoder::new(src, compr)?;
    let mut out = Vec::with_capacity(dsize.min(1 << 20));
    while out.len() < dsize {
        out.push(dec.in_byte(divider, bits)?);
    }
    Ok(out)
}

/// Decompresses RUBINMIPS data (fixed model) into exactly `dsize` bytes.
pub fn rubinmips_decompress(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    rubin_decode(DIVIDER_MIPS, &BITS_MIPS, src, dsize, COMPR_RUBINMIPS)
}

/// Decompresses DYNRUBIN data (8-byte model header, then the coded stream) into exactly
/// `dsize` bytes.
pub fn dynrubin_decompress(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    let Some((header, rest)) = src.split_first_chunk::<8>() else {
        return Err(ComprError::Truncated {
            compr: COMPR_DYNRUBIN,
            len: src.len(),
        });
    };
    let bits = header.map(u64::from);
    rubin_decode(DIVIDER_DYN, &bits, rest, dsize, COMPR_DYNRUBIN)
}
