//! Reading an input completely, with a bound.
//!
//! A JFFS2 image can never exceed 4 GiB: every flash offset the format and the kernel keep is
//! 32 bits wide (the summary records' `offset u32`, absolute on the flash for xrefs,
//! `docs/spec/kernel-jffs2-spec.md` §1.7; the kernel's `uint32_t` node offsets). So an input longer
//! than [`MAX_IMAGE_LEN`] is refused rather than read until memory runs out (`/dev/zero`, an
//! endless pipe). Regular files are refused from their size; anything else (pipes, character
//! devices, block devices, MTD devices, standard input) is read up to the limit.
//!
//! Memory: a regular file costs its size (reserved once). Anything else is read in 1 MiB
//! pieces into a buffer whose capacity doubles, never beyond the limit: its address space
//! stays below twice what was read plus 1 MiB, its resident size about what was read.
//!
//! A failed allocation is an error, `ENOMEM` ("Cannot allocate memory"), not an abort.

use std::io::{self, Read};

/// Largest image: 4 GiB, the 32-bit flash offsets (see the module documentation).
pub const MAX_IMAGE_LEN: u64 = 1 << 32;

/// The error of an input longer than `limit` bytes.
fn too_large(limit: u64, what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("larger than {}: {what}", human(limit)),
    )
}

fn human(n: u64) -> String {
    if n >= 1 << 30 && n % (1 << 30) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n % (1 << 20) == 0 {
        format!("{} MiB", n >> 20)
    } else {
        format!("{n} bytes")
    }
}

/// `ENOMEM` as an I/O error (so that it prints "Cannot allocate memory" with its number).
pub fn out_of_memory() -> io::Error {
    io::Error::from_raw_os_error(libc::ENOMEM)
}

/// Reads an image from `file` to its end (see the module documentation): an error when it
/// is longer than [`MAX_IMAGE_LEN`] ("larger than 4 GiB: not a JFFS2 image").
pub fn read_image(file: &std::fs::File) -> io::Result<Vec<u8>> {
    read_limited(file, MAX_IMAGE_LEN, "not a JFFS2 image")
}

/// Opens `path` and reads it with [`read_image`].
pub fn read_image_path(path: &std::path::Path) -> io::Result<Vec<u8>> {
    read_image(&std::fs::File::open(path)?)
}

/// Reads `file` to its end, refusing more than `limit` bytes with "larger than LIMIT: what".
pub fn read_limited(file: &std::fs::File, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    let meta = file.metadata()?;
    let mut v = Vec::new();
    if meta.is_file() {
        if meta.len() > limit {
            return Err(too_large(limit, what));
        }
        let size = usize::try_from(meta.len()).map_err(|_| too_large(limit, what))?;
        v.try_reserve_exact(size.saturating_add(1))
            .map_err(|_| out_of_memory())?;
        // One byte past the size tells a file that grew while being read (and keeps the
        // buffer from growing); fewer bytes, one that shrank. Either is not one image.
        let mut r = file.take(meta.len().saturating_add(1));
        r.read_to_end(&mut v).map_err(|e| {
            if e.kind() == io::ErrorKind::OutOfMemory {
                out_of_memory()
            } else {
                e
            }
        })?;
        if v.len() != size {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "changed size while being read",
            ));
        }
        return Ok(v);
    }
    read_stream(file, limit, what)
}

/// The bounded read of something without a size (see the module documentation).
pub fn read_stream<R: Read>(mut r: R, limit: u64, what: &str) -> io::Result<Vec<u8>> {
    const PIECE: usize = 1 << 20;
    let mut piece = Vec::new();
    piece
        .try_reserve_exact(PIECE)
        .map_err(|_| out_of_memory())?;
    piece.resize(PIECE, 0);
    let mut v: Vec<u8> = Vec::new();
    loop {
        let n = match r.read(&mut piece) {
            Ok(0) => return Ok(v),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let total = v.len() as u64 + n as u64;
        if total > limit {
            return Err(too_large(limit, what));
        }
        let need = v.len() + n;
        if need > v.capacity() {
            // Doubling, never past the limit.
            let cap = limit.min(v.capacity() as u64 * 2).max(need as u64) as usize;
            v.try_reserve_exact(cap - v.len())
                .map_err(|_| out_of_memory())?;
        }
        v.extend_from_slice(piece.get(..n).unwrap_or_default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_is_read_up_to_the_limit() {
        let data: Vec<u8> = (0..5_000_000u32).map(|i| i as u8).collect();
        assert_eq!(read_stream(&data[..], 5_000_000, "x").unwrap(), data);
        let e = read_stream(&data[..], 4_999_999, "not a JFFS2 image").unwrap_err();
        assert_eq!(
            e.to_string(),
            "larger than 4999999 bytes: not a JFFS2 image"
        );
        // An endless stream ends with the error, memory bounded by the limit.
        let e = read_stream(io::repeat(0), 3 << 20, "not a JFFS2 image").unwrap_err();
        assert_eq!(e.to_string(), "larger than 3 MiB: not a JFFS2 image");
        assert_eq!(
            too_large(MAX_IMAGE_LEN, "not a JFFS2 image").to_string(),
            "larger than 4 GiB: not a JFFS2 image"
        );
    }

    #[test]
    fn a_regular_file_is_refused_from_its_size() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, b"0123456789").unwrap();
        let f = std::fs::File::open(&p).unwrap();
        assert_eq!(read_limited(&f, 10, "x").unwrap(), b"0123456789");
        let f = std::fs::File::open(&p).unwrap();
        assert!(read_limited(&f, 9, "x").is_err());
        // Sparse, beyond 4 GiB: refused without reading.
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(MAX_IMAGE_LEN + 1).unwrap();
        let e = read_image(&big).unwrap_err();
        assert_eq!(e.to_string(), "larger than 4 GiB: not a JFFS2 image");
        assert_eq!(out_of_memory().raw_os_error(), Some(libc::ENOMEM));
        // A file whose size is not what it reads (as a file that changes while read):
        // /proc files say 0 and read more.
        let f = std::fs::File::open("/proc/self/stat").unwrap();
        let e = read_limited(&f, 1 << 20, "x").unwrap_err();
        assert_eq!(e.to_string(), "changed size while being read");
    }
}
