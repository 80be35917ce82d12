//! The zlib compressor (`JFFS2_COMPR_ZLIB`, id 6), `docs/spec/mtd-utils-spec.md` §4.3 and
//! `docs/spec/kernel-jffs2-spec.md` §1.9.
//!
//! Byte-identical output needs the real zlib (flate2's `zlib` feature links the system libz
//! through libz-sys, the same library mkfs.jffs2 uses) *and* exactly the same sequence of
//! `deflate()` calls with the same `avail_in`/`avail_out`, because the partial flushes are
//! part of the stream. The stream object is reused per thread (`deflateReset` gives the
//! same state as a fresh `deflateInit`), so the output never depends on the thread.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

use super::{ComprError, COMPR_ZLIB};

/// Bytes kept back for the end of the stream (`STREAM_END_SPACE` in `compr_zlib.c`).
const STREAM_END_SPACE: usize = 12;

/// Compression level used by mkfs.jffs2 and the kernel (`deflateInit(&strm, 3)`).
const LEVEL: u32 = 3;

/// A thread's deflate stream (level 3, zlib header, window 15, memLevel 8) and the buffer it
/// deflates into: both live as long as the thread, so a page costs neither an allocation
/// of zeroed output nor a fresh stream, only the copy of what was produced.
struct Deflater {
    strm: Compress,
    scratch: Vec<u8>,
}

thread_local! {
    static DEFLATE: RefCell<Option<Deflater>> = const { RefCell::new(None) };
}

/// Compresses a prefix of `src` into at most `dstlen` bytes, exactly like
/// `jffs2_zlib_compress()` of mkfs.jffs2 (§4.3).
///
/// * fails if `dstlen <= 12`;
/// * while `total_out < dstlen - 12` and `total_in < src.len()`: `deflate(Z_PARTIAL_FLUSH)`
///   with `avail_out = dstlen - (total_out + 12)` and
///   `avail_in = min(src.len() - total_in, avail_out)`; anything but `Z_OK` fails;
/// * then `deflate(Z_FINISH)` with no input and the remaining room (`avail_out + 12`) must
///   return `Z_STREAM_END`;
/// * fails if `total_out >= total_in`.
///
/// Returns the stream and the number of input bytes it encodes (`total_in`, possibly less
/// than `src.len()` near an erase-block end).
pub fn zlib_compress(src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
    if dstlen <= STREAM_END_SPACE {
        return None;
    }
    let fresh = || Deflater {
        strm: Compress::new(Compression::new(LEVEL), true),
        scratch: Vec::new(),
    };
    DEFLATE
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut slot) => {
                let d = match slot.as_mut() {
                    Some(d) => {
                        d.strm.reset();
                        d
                    }
                    None => slot.insert(fresh()),
                };
                d.run(src, dstlen)
            }
            // Only on re-entrance; a fresh stream gives the same bytes.
            Err(_) => fresh().run(src, dstlen),
        })
        // Thread-local storage already torn down (thread exit): same bytes, fresh stream.
        .unwrap_or_else(|_| fresh().run(src, dstlen))
}

impl Deflater {
    /// The call sequence of `jffs2_zlib_compress()` on a freshly initialised stream; the
    /// stream is built in `scratch` (grown to `dstlen` once) and copied out at its length.
    fn run(&mut self, src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
        if self.scratch.len() < dstlen {
            self.scratch.resize(dstlen, 0);
        }
        let out = self.scratch.get_mut(..dstlen)?;
        let (produced, consumed) = run_deflate(&mut self.strm, src, out)?;
        Some((out.get(..produced)?.to_vec(), consumed))
    }
}

/// Deflates a prefix of `src` into `out` (its length is the `dstlen` of
/// [`zlib_compress`]) with mkfs.jffs2's calls; returns (bytes produced, bytes consumed).
fn run_deflate(strm: &mut Compress, src: &[u8], out: &mut [u8]) -> Option<(usize, usize)> {
    let dstlen = out.len();
    let limit = dstlen - STREAM_END_SPACE;
    loop {
        let (tin, tout) = (total_in(strm)?, total_out(strm)?);
        if tout >= limit || tin >= src.len() {
            break;
        }
        let avail_out = dstlen - (tout + STREAM_END_SPACE);
        let avail_in = (src.len() - tin).min(avail_out);
        let input = src.get(tin..tin + avail_in)?;
        let output = out.get_mut(tout..tout + avail_out)?;
        match strm.compress(input, output, FlushCompress::Partial) {
            Ok(Status::Ok) => {}
            _ => return None,
        }
    }
    // `avail_out += STREAM_END_SPACE`: what the last call left plus the 12 reserved bytes,
    // i.e. everything up to dstlen. (mkfs never calls this with empty input, where its
    // avail_out would be uninitialised.)
    let tout = total_out(strm)?;
    let output = out.get_mut(tout..)?;
    match strm.compress(&[], output, FlushCompress::Finish) {
        Ok(Status::StreamEnd) => {}
        _ => return None,
    }
    let (tin, tout) = (total_in(strm)?, total_out(strm)?);
    (tout < tin).then_some((tout, tin))
}

fn total_in(s: &Compress) -> Option<usize> {
    usize::try_from(s.total_in()).ok()
}

fn total_out(s: &Compress) -> Option<usize> {
    usize::try_from(s.total_out()).ok()
}

/// First output allocation when inflating; the buffer grows (up to `dsize`) as needed.
const INFLATE_INITIAL: usize = 64 * 1024;

/// Decompresses a JFFS2 zlib node into exactly `dsize` bytes, the way the kernel reads it
/// (`compr_zlib.c: jffs2_zlib_decompress`): the 2-byte zlib header must be valid (method 8,
/// no preset dictionary, header % 31 == 0, more than 2 bytes of input); it is skipped and
/// the rest is inflated as raw deflate with the header's window size, so the Adler-32
/// trailer is ignored (it may even be missing).
///
/// Stricter than the kernel, which only logs inflate errors and then uses whatever was
/// produced: corrupt data, a stream that is cut short, that produces fewer than `dsize`
/// bytes, or that does not end within `dsize` bytes is an error here. A header window size
/// over 32 KiB (which the kernel's `inflateInit2` rejects) is an error; the 256-byte window
/// (CINFO 0) is inflated with a 512-byte window, which accepts the same valid streams.
pub fn zlib_decompress(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    let mut out = Vec::new();
    zlib_decompress_append(src, dsize, &mut out)?;
    Ok(out)
}

/// [`zlib_decompress`] appending to `out` (left as it was on an error): the same bytes and
/// the same errors, without an allocation per node when `out` has room (a buffer reused by a
/// check that only needs to know whether each node reads, or shared by consecutive nodes).
pub(crate) fn zlib_decompress_append(
    src: &[u8],
    dsize: usize,
    out: &mut Vec<u8>,
) -> Result<(), ComprError> {
    let window_bits = zlib_header(src)?;
    let input = &src[2..];
    // The fast path: libdeflate, for the 32 KiB window every writer uses, when it yields
    // exactly dsize bytes. On valid deflate data both inflaters give the same bytes; every
    // other case (a smaller window, whose "distance too far back" only zlib enforces; a
    // stream that is corrupt, short or too long) takes the zlib path, which decides what
    // the error is — so results never depend on whether libdeflate is linked
    // (`compress::tests::libdeflate_agrees_with_zlib`).
    // The output is allocated whole, so only for sizes a node can have (a lying dsize of
    // gigabytes goes to zlib, which grows its buffer only as data comes; deflate expands at
    // most 1032:1).
    #[cfg(libdeflate)]
    if window_bits == 15
        && dsize <= FAST_MAX
        && dsize <= input.len().saturating_mul(1032)
        && fast::inflate_exact(input, dsize, out)
    {
        return Ok(());
    }
    super::append(out, inflate_zlib(input, window_bits, dsize, src.len())?);
    Ok(())
}

/// The largest node output the libdeflate path allocates at once.
#[cfg(libdeflate)]
const FAST_MAX: usize = 1 << 20;

/// [`zlib_decompress`] with zlib alone: the reference the libdeflate path is tested against.
pub fn zlib_decompress_reference(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    let window_bits = zlib_header(src)?;
    inflate_zlib(&src[2..], window_bits, dsize, src.len())
}

/// Checks the 2-byte zlib header as the kernel does; returns the window size (log2).
fn zlib_header(src: &[u8]) -> Result<u8, ComprError> {
    let corrupt = |reason: String| ComprError::Corrupt {
        compr: COMPR_ZLIB,
        reason,
    };
    let (b0, b1) = match src {
        [b0, b1, _, ..] => (*b0, *b1),
        _ => {
            return Err(ComprError::Truncated {
                compr: COMPR_ZLIB,
                len: src.len(),
            })
        }
    };
    let header_ok =
        b1 & 0x20 == 0 && b0 & 0x0f == 8 && (u16::from(b0) << 8 | u16::from(b1)) % 31 == 0;
    if !header_ok {
        return Err(corrupt(format!("no valid zlib header ({b0:02x} {b1:02x})")));
    }
    let window_bits = (b0 >> 4) + 8;
    if window_bits > 15 {
        return Err(corrupt(format!(
            "zlib window size 2^{window_bits} too large"
        )));
    }
    Ok(window_bits)
}

/// Inflates raw deflate `input` with zlib and a 2^`window_bits` window into exactly `dsize`
/// bytes.
fn inflate_zlib(
    input: &[u8],
    window_bits: u8,
    dsize: usize,
    src_len: usize,
) -> Result<Vec<u8>, ComprError> {
    // One inflate state per thread and window size, reset between nodes: allocating and
    // initialising a fresh state for every 4 KiB node cost about a third of the inflate
    // time (flate2's reset keeps the window size it was created with).
    let bits = window_bits.max(9);
    INFLATERS.with(|cell| {
        let mut slots = cell.borrow_mut();
        let slot = &mut slots[usize::from(bits - 9)];
        let inflate = match slot {
            Some(d) => {
                d.reset(false);
                d
            }
            None => slot.insert(Decompress::new_with_window_bits(false, bits)),
        };
        inflate_into(inflate, input, dsize, src_len)
    })
}

/// libdeflate's whole-buffer inflater (system `libdeflate`, MIT), one per thread.
#[cfg(libdeflate)]
mod fast {
    use std::ffi::{c_int, c_void};

    #[repr(C)]
    struct Decompressor {
        _opaque: [u8; 0],
    }

    #[link(name = "deflate")]
    extern "C" {
        fn libdeflate_alloc_decompressor() -> *mut Decompressor;
        fn libdeflate_free_decompressor(d: *mut Decompressor);
        fn libdeflate_deflate_decompress(
            d: *mut Decompressor,
            input: *const c_void,
            in_nbytes: usize,
            out: *mut c_void,
            out_nbytes_avail: usize,
            actual_out_nbytes_ret: *mut usize,
        ) -> c_int;
    }

    /// `LIBDEFLATE_SUCCESS`.
    const SUCCESS: c_int = 0;

    struct Handle(*mut Decompressor);

    impl Drop for Handle {
        fn drop(&mut self) {
            if !self.0.is_null() {
                // SAFETY: the pointer came from libdeflate_alloc_decompressor and is freed once.
                unsafe { libdeflate_free_decompressor(self.0) }
            }
        }
    }

    thread_local! {
        // SAFETY: allocation has no preconditions; a null result is checked before use.
        static DECOMPRESSOR: Handle = Handle(unsafe { libdeflate_alloc_decompressor() });
    }

    /// Inflates raw deflate data that must produce exactly `dsize` bytes, appended to `out`
    /// (input after the final block is ignored, as zlib does); whether it did (`out` is left
    /// as it was when not).
    pub(super) fn inflate_exact(input: &[u8], dsize: usize, out: &mut Vec<u8>) -> bool {
        DECOMPRESSOR.with(|h| {
            let at = out.len();
            if h.0.is_null() || out.try_reserve_exact(dsize).is_err() {
                return false;
            }
            // SAFETY: `input` is valid for `input.len()` bytes and `out` has room for `dsize`
            // bytes after its `at`; with a null `actual_out_nbytes_ret` libdeflate succeeds
            // only after writing exactly `dsize` bytes, so they are initialised when the
            // length is set. The decompressor is used by this thread only.
            unsafe {
                let r = libdeflate_deflate_decompress(
                    h.0,
                    input.as_ptr().cast(),
                    input.len(),
                    out.as_mut_ptr().add(at).cast(),
                    dsize,
                    std::ptr::null_mut(),
                );
                if r != SUCCESS {
                    return false;
                }
                out.set_len(at + dsize);
            }
            true
        })
    }
}

thread_local! {
    /// Raw-inflate states for window sizes 2^9 .. 2^15.
    static INFLATERS: std::cell::RefCell<[Option<Decompress>; 7]> =
        const { std::cell::RefCell::new([None, None, None, None, None, None, None]) };
}

/// Inflates `input` (raw deflate) into exactly `dsize` bytes.
fn inflate_into(
    inflate: &mut Decompress,
    input: &[u8],
    dsize: usize,
    src_len: usize,
) -> Result<Vec<u8>, ComprError> {
    let corrupt = |reason: String| ComprError::Corrupt {
        compr: COMPR_ZLIB,
        reason,
    };
    let mut out = vec![0u8; dsize.min(INFLATE_INITIAL)];
    loop {
        let tin = usize::try_from(inflate.total_in()).map_err(|_| corrupt("too large".into()))?;
        let tout = usize::try_from(inflate.total_out()).map_err(|_| corrupt("too large".into()))?;
        let (Some(inp), Some(outp)) = (input.get(tin..), out.get_mut(tout..)) else {
            return Err(corrupt("inflate position out of range".into()));
        };
        let status = inflate
            .decompress(inp, outp, FlushDecompress::None)
            .map_err(|e| corrupt(format!("inflate failed: {e}")))?;
        let consumed =
            usize::try_from(inflate.total_in()).map_err(|_| corrupt("too large".into()))?;
        let produced =
            usize::try_from(inflate.total_out()).map_err(|_| corrupt("too large".into()))?;
        if status == Status::StreamEnd {
            if produced != dsize {
                return Err(ComprError::LengthMismatch {
                    compr: COMPR_ZLIB,
                    expected: dsize,
                    actual: produced,
                });
            }
            out.truncate(produced);
            return Ok(out);
        }
        if produced == out.len() {
            if out.len() >= dsize {
                return Err(corrupt(format!(
                    "deflate stream does not end within dsize {dsize} bytes"
                )));
            }
            let grown = out.len().saturating_mul(2).clamp(1, dsize);
            out.resize(grown, 0);
            continue;
        }
        if consumed >= input.len() || (consumed == tin && produced == tout) {
            return Err(ComprError::Truncated {
                compr: COMPR_ZLIB,
                len: src_len,
            });
        }
    }
}
