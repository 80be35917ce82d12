//! The rtime compressor (`JFFS2_COMPR_RTIME`, id 2): a byte-oriented LZ77 variant
//! (`docs/spec/mtd-utils-spec.md` §4.4, `docs/spec/kernel-jffs2-spec.md` §1.9).
//!
//! The stream is a sequence of `(literal, run)` byte pairs. Encoder and decoder both keep
//! `positions[256]`, the position just after the last occurrence of every byte value
//! (initially 0). After a literal `v` has been emitted, `run` further bytes are copied from
//! `positions[v]` onwards (overlapping copies allowed, byte by byte).
//!
//! # Position width (§8 B-16)
//!
//! mkfs.jffs2 stores positions in a signed `short`, the kernel in an `unsigned short`. Both
//! only differ when a stored position ≥ 32768 is read back, which needs an input of more
//! than 32768 bytes (a page size > 32 KiB). In that case mkfs.jffs2 reads *before* its input
//! buffer (undefined behaviour, non-reproducible output). This implementation uses the
//! kernel's unsigned 16-bit positions (wrapping at 65536, never out of bounds), so its output
//! is identical to mkfs.jffs2 for every input of at most 32768 bytes and is always decoded
//! correctly by the kernel.

use super::{ComprError, COMPR_RTIME};

/// Compresses a prefix of `src` into at most `dstlen` bytes with rtime.
///
/// Returns the compressed bytes and the number of input bytes they encode, or `None` when
/// the output would not be smaller than the consumed input (the "we failed" case of
/// `compr_rtime.c`). The encoder stops when the input is exhausted or fewer than 2 output
/// bytes are left, so it may consume only part of `src` (block-tail splits, §3.6.3).
///
/// mkfs.jffs2 computes `dstlen - 2` in unsigned arithmetic, so for `dstlen < 2` it would
/// write past its buffer; such calls only happen there with a 1-byte input, which fails
/// anyway. Here `dstlen < 2` simply fails.
pub fn rtime_compress(src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
    if dstlen < 2 {
        return None;
    }
    let mut positions = [0u16; 256];
    let mut out = Vec::with_capacity(dstlen.min(src.len().saturating_mul(2)));
    let mut pos = 0usize;
    while pos < src.len() && out.len() + 2 <= dstlen {
        let value = src[pos];
        out.push(value);
        pos += 1;
        let mut back = usize::from(positions[usize::from(value)]);
        // Truncation to 16 bits is the kernel's `unsigned short` (see the module docs).
        positions[usize::from(value)] = pos as u16;
        let mut run = 0u8;
        while back < pos && pos < src.len() && src[pos] == src[back] && run < 255 {
            pos += 1;
            back += 1;
            run += 1;
        }
        out.push(run);
    }
    if out.len() >= pos {
        return None;
    }
    Some((out, pos))
}

/// Decompresses an rtime stream into exactly `dsize` bytes.
///
/// Like the kernel (since its 2024 fix) a run that would go past `dsize` is an error;
/// unlike the kernel, running out of input is detected too (the kernel does not bound-check
/// its input position). Memory use is bounded by `dsize` and by 128 output bytes per input
/// byte (the most a `(literal, run)` pair can produce).
pub fn rtime_decompress(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    if dsize.div_ceil(128) > src.len() {
        // Each pair of input bytes yields at most 1 + 255 output bytes.
        return Err(ComprError::Truncated {
            compr: COMPR_RTIME,
            len: src.len(),
        });
    }
    let mut positions = [0u16; 256];
    let mut out = Vec::with_capacity(dsize);
    let mut pairs = src.chunks_exact(2);
    while out.len() < dsize {
        let Some(&[value, repeat]) = pairs.next() else {
            return Err(ComprError::Truncated {
                compr: COMPR_RTIME,
                len: src.len(),
            });
        };
        out.push(value);
        let back = usize::from(positions[usize::from(value)]);
        positions[usize::from(value)] = out.len() as u16;
        let repeat = usize::from(repeat);
        if repeat == 0 {
            continue;
        }
        if out.len() + repeat > dsize {
            return Err(ComprError::Corrupt {
                compr: COMPR_RTIME,
                reason: format!(
                    "run of {repeat} bytes at output offset {} exceeds dsize {dsize}",
                    out.len()
                ),
            });
        }
        // `back` is a position recorded earlier, so it is below `out.len()` and every byte
        // read below has already been written (overlapping copies repeat the pattern).
        for i in back..back + repeat {
            let Some(&b) = out.get(i) else {
                return Err(ComprError::Corrupt {
                    compr: COMPR_RTIME,
                    reason: format!("back reference {i} beyond output"),
                });
            };
            out.push(b);
        }
    }
    Ok(out)
}
