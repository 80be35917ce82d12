//! The LZMA compressor of OpenWrt (`JFFS2_COMPR_LZMA`, id 8): OpenWrt's mtd-utils patch
//! `tools/mtd-utils/patches/130-lzma_jffs2.patch` and its kernel patch
//! `target/linux/generic/pending-*/530-jffs2_make_lzma_available.patch` (`compr_lzma.c`).
//!
//! What the patches define, and what is reproduced here:
//!
//! * The payload is a **raw LZMA1 stream**: no `.lzma` header, no properties byte, no size,
//!   and **no end-of-payload marker** (`LzmaEnc_MemEncode(..., writeEndMark = 0, ...)`); the
//!   node's `dsize` is the only record of the uncompressed length.
//! * Properties `lc = 0`, `lp = 0`, `pb = 0`, dictionary `0x2000` bytes; the encoder runs the
//!   LZMA SDK at level 9 (normal mode, binary-tree match finder with 4-byte hashing) with
//!   273 fast bytes (`nice_len`).
//! * The whole input is compressed; the compressor fails when the result does not fit the
//!   room given (`SZ_ERROR_OUTPUT_EOF`), so it never compresses partially (never chosen for
//!   a block-tail split that needs less than the whole page) and an output as long as the
//!   room is still a success, as with LZO.
//! * The kernel (and mkfs's `-t` check) decodes with `LzmaDecode(..., LZMA_FINISH_ANY)` into
//!   exactly `dsize` bytes and fails unless the stream ends cleanly there: a stream that ends
//!   (end marker) or runs out of input early, or that has not finished at `dsize` (an end
//!   marker after the data, or range-coder state left over), is an error; bytes after the
//!   end of the stream are ignored.
//!
//! The encoder here is **liblzma**'s (xz-utils, linked through `liblzma-sys`, which builds
//! its own pinned copy unless the system has liblzma 5.8 or newer) with exactly those
//! settings (`LZMA_FILTER_LZMA1EXT` without `LZMA_LZMA1EXT_ALLOW_EOPM`, so no end marker).
//! liblzma's optimiser is not the LZMA SDK's, so a node's bytes may differ from what
//! OpenWrt's `mkfs.jffs2 -X lzma` writes for the same data (and so may the image layout,
//! which depends on node sizes); every stream decodes identically with either decoder. The
//! decoder is liblzma's too, told the uncompressed size (`dsize`) and forbidding the end
//! marker: it accepts the streams OpenWrt's kernel accepts.

use std::ptr;

use liblzma_sys as sys;

use super::{ComprError, COMPR_LZMA};

/// `LZMA_FILTER_LZMA1EXT` (liblzma ≥ 5.4): LZMA1 whose encoder may omit the end marker
/// and whose decoder is told the uncompressed size.
const FILTER_LZMA1EXT: sys::lzma_vli = 0x4000_0000_0000_0002;
/// The dictionary of OpenWrt's patch (`LZMA_BEST_DICT(0x2000)`).
pub const LZMA_DICT_SIZE: u32 = 0x2000;
/// `LZMA_BEST_FB` of OpenWrt's patch: the encoder's fast bytes (liblzma's `nice_len`).
pub const LZMA_NICE_LEN: u32 = 273;
/// `LZMA_BEST_LEVEL` of OpenWrt's patch (the LZMA SDK's level 9).
const LZMA_LEVEL: u32 = 9;
/// The decoder's first output buffer; it doubles as the stream produces more (up to `dsize`).
const FIRST_OUT: usize = 16 << 10;

/// An `lzma_stream` that is always ended (`lzma_end`) when dropped.
struct Stream(sys::lzma_stream);

impl Stream {
    fn new() -> Stream {
        // SAFETY: `lzma_stream` is a plain C struct of pointers and integers; all zeroes is
        // `LZMA_STREAM_INIT`, the documented initial state.
        Stream(unsafe { std::mem::zeroed() })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: `lzma_end` accepts a stream in its initial state or one set up by an
        // encoder or decoder initialiser, and frees what the latter allocated.
        unsafe { sys::lzma_end(&mut self.0) }
    }
}

/// The options of OpenWrt's patch: `lc = lp = pb = 0`, dictionary 0x2000, level 9 with
/// 273 fast bytes (normal mode, BT4, automatic depth), no end marker. `size` is the
/// uncompressed size the decoder is told (`LZMA_VLI_UNKNOWN` for the encoder, which
/// ignores it).
fn options(size: u64) -> sys::lzma_options_lzma {
    // SAFETY: a plain C struct; zeroes are valid for every field (null pointers, 0 sizes),
    // and every field liblzma reads is set below.
    let mut o: sys::lzma_options_lzma = unsafe { std::mem::zeroed() };
    // SAFETY: `o` is a valid, writable options struct; the preset fills it in.
    let _ = unsafe { sys::lzma_lzma_preset(&mut o, LZMA_LEVEL) };
    o.dict_size = LZMA_DICT_SIZE;
    o.preset_dict = ptr::null();
    o.preset_dict_size = 0;
    o.lc = 0;
    o.lp = 0;
    o.pb = 0;
    o.mode = sys::LZMA_MODE_NORMAL;
    o.nice_len = LZMA_NICE_LEN;
    o.mf = sys::LZMA_MF_BT4;
    o.depth = 0;
    o.ext_flags = 0;
    o.ext_size_low = size as u32;
    o.ext_size_high = (size >> 32) as u32;
    o
}

/// The one-filter chain (LZMA1 with `opts`, then the terminator) liblzma's raw coders take;
/// it points at `opts`, which must outlive the coder's setup.
fn filter_chain(opts: &mut sys::lzma_options_lzma) -> [sys::lzma_filter; 2] {
    [
        sys::lzma_filter {
            id: FILTER_LZMA1EXT,
            options: (opts as *mut sys::lzma_options_lzma).cast(),
        },
        sys::lzma_filter {
            id: sys::LZMA_VLI_UNKNOWN,
            options: ptr::null_mut(),
        },
    ]
}

/// Compresses all of `src` as OpenWrt's `jffs2_lzma_compress` does (raw LZMA1 with the
/// patch's properties, no end marker); `None` if the result is longer than `dstlen` (or
/// liblzma fails). Returns the stream and the bytes consumed (always all of `src`).
pub fn lzma_compress(src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
    let mut opts = options(u64::MAX);
    let filters = filter_chain(&mut opts);
    let mut s = Stream::new();
    // SAFETY: `s` is in its initial state; `filters` is terminated by LZMA_VLI_UNKNOWN and
    // its options outlive the call (liblzma copies what it needs).
    if unsafe { sys::lzma_raw_encoder(&mut s.0, filters.as_ptr()) } != sys::LZMA_OK {
        return None;
    }
    // One byte more than the room: filling it means the stream does not fit.
    let mut out = vec![0u8; dstlen.saturating_add(1)];
    s.0.next_in = src.as_ptr();
    s.0.avail_in = src.len();
    s.0.next_out = out.as_mut_ptr();
    s.0.avail_out = out.len();
    loop {
        // SAFETY: next_in/avail_in describe `src` and next_out/avail_out the unwritten
        // rest of `out`, both alive and unaliased for the whole loop.
        let ret = unsafe { sys::lzma_code(&mut s.0, sys::LZMA_FINISH) };
        if ret == sys::LZMA_STREAM_END {
            break;
        }
        if ret != sys::LZMA_OK || s.0.avail_out == 0 {
            // An error, or the stream is longer than `dstlen`.
            return None;
        }
    }
    let n = usize::try_from(s.0.total_out).ok()?;
    if n > dstlen {
        return None;
    }
    out.truncate(n);
    Some((out, src.len()))
}

/// Decodes a raw LZMA stream of OpenWrt's JFFS2 compressor into exactly `dsize` bytes,
/// accepting what OpenWrt's kernel accepts (see the module documentation): the stream must
/// produce `dsize` bytes and end cleanly there, without an end marker; input left after it is
/// ignored.
///
/// Bounded: never writes more than `dsize` bytes, allocates only as the stream produces
/// output (in doubling steps, never beyond `dsize`) plus liblzma's fixed state for an
/// 8 KiB dictionary, and stops when the input is exhausted.
pub fn lzma_decompress(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    let corrupt = |reason: &str| ComprError::Corrupt {
        compr: COMPR_LZMA,
        reason: reason.to_string(),
    };
    let mut opts = options(dsize as u64);
    let filters = filter_chain(&mut opts);
    let mut s = Stream::new();
    // SAFETY: as in `lzma_compress`.
    if unsafe { sys::lzma_raw_decoder(&mut s.0, filters.as_ptr()) } != sys::LZMA_OK {
        return Err(corrupt("liblzma cannot set up the decoder"));
    }
    // Output grows as the stream produces it: a few bytes of hostile input claiming a large
    // dsize cost no more than what they decode to.
    let mut out = vec![0u8; dsize.min(FIRST_OUT)];
    s.0.next_in = src.as_ptr();
    s.0.avail_in = src.len();
    let mut stalls = 0u32;
    loop {
        let done = usize::try_from(s.0.total_out).map_or(out.len(), |d| d.min(out.len()));
        if done == out.len() && out.len() < dsize {
            let grown = out.len().saturating_mul(2).clamp(FIRST_OUT, dsize);
            out.resize(grown, 0);
        }
        let rest = &mut out[done..];
        s.0.next_out = rest.as_mut_ptr();
        s.0.avail_out = rest.len();
        let before = (s.0.total_in, s.0.total_out);
        // SAFETY: next_in/avail_in describe the unread rest of `src` (liblzma advances
        // them); next_out/avail_out describe the unwritten rest of `out`, which is not
        // touched again before they are set anew.
        let ret = unsafe { sys::lzma_code(&mut s.0, sys::LZMA_FINISH) };
        if (s.0.total_in, s.0.total_out) == before {
            stalls += 1;
        } else {
            stalls = 0;
        }
        match ret {
            sys::LZMA_STREAM_END => break,
            sys::LZMA_OK | sys::LZMA_BUF_ERROR => {
                if s.0.avail_in == 0 && s.0.avail_out != 0 {
                    return Err(ComprError::Truncated {
                        compr: COMPR_LZMA,
                        len: src.len(),
                    });
                }
                if stalls > 2 || (s.0.avail_out == 0 && out.len() >= dsize && stalls > 0) {
                    return Err(corrupt("the stream does not end at dsize"));
                }
            }
            sys::LZMA_DATA_ERROR => return Err(corrupt(
                "invalid LZMA data, an end marker, or a stream that does not end cleanly at dsize",
            )),
            sys::LZMA_MEM_ERROR => return Err(corrupt("liblzma is out of memory")),
            _ => return Err(corrupt("liblzma refuses the stream")),
        }
    }
    let n = usize::try_from(s.0.total_out).unwrap_or(usize::MAX);
    if n != dsize {
        return Err(ComprError::LengthMismatch {
            compr: COMPR_LZMA,
            expected: dsize,
            actual: n,
        });
    }
    out.truncate(n);
    Ok(out)
}
