//! The LZO compressor (`JFFS2_COMPR_LZO`, id 7), `docs/spec/mtd-utils-spec.md` §4.5.
//!
//! mkfs.jffs2 calls liblzo's `lzo1x_999_compress` (= compression level 8 of
//! `lzo1x_999_compress_level`: lazy 2, good 32, max_lazy 128, nice 2048, chain 2048, flags 1)
//! on the *whole* input and keeps the result only if it fits. The pure-Rust `lzo1x` crate's
//! `CompressLevel::new(12)` uses the same parameters; the byte-exact tests against
//! `mkfs.jffs2 -X lzo` images confirm that both produce identical streams.

use super::{ComprError, COMPR_LZO};

/// `lzo1x` crate level with liblzo's `lzo1x_999_compress` parameters.
const LZO1X_999_LEVEL: u8 = 12;

/// Compresses all of `src` with LZO1X-999; `None` if the result is longer than `dstlen`.
///
/// LZO never compresses partially (mkfs compresses into a scratch buffer and copies only if
/// it fits), so it is never chosen for a block-tail split. An output as long as the input
/// is still a success here (priority mode accepts it, §4.5).
///
/// mkfs.jffs2's scratch buffer is sized from the host page size before `-s` is parsed
/// (§8 B-17) and can overflow for larger pages; here the buffer always fits.
pub fn lzo_compress(src: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
    let out = lzo1x::compress(src, lzo1x::CompressLevel::new(LZO1X_999_LEVEL));
    if out.len() > dstlen {
        return None;
    }
    Some((out, src.len()))
}

/// Decompresses an LZO1X stream into exactly `dsize` bytes (`lzo1x_decompress_safe` and the
/// `dl != destlen` check of the kernel and of mkfs's `-t` check).
pub fn lzo_decompress(src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    // An LZO1X instruction of k input bytes yields fewer than 255·k output bytes (a long
    // match with zero-extended length); refuse absurd sizes before allocating them.
    if dsize > src.len().saturating_mul(256).saturating_add(1024) {
        return Err(ComprError::Truncated {
            compr: COMPR_LZO,
            len: src.len(),
        });
    }
    let mut out = vec![0u8; dsize];
    match lzo1x::decompress(src, &mut out) {
        Ok(()) => Ok(out),
        Err(lzo1x::DecompressError::OutputLength) => Err(ComprError::Corrupt {
            compr: COMPR_LZO,
            reason: format!("stream does not decompress to exactly dsize {dsize} bytes"),
        }),
        Err(lzo1x::DecompressError::InvalidInput) => Err(ComprError::Corrupt {
            compr: COMPR_LZO,
            reason: "invalid LZO1X stream".into(),
        }),
    }
}
