//! Thin wrappers over the libc calls that fakeroot/pseudo intercept (`docs/spec/ecosystem.md` §4):
//! `lstat`, `llistxattr`, `lgetxattr`. Everything here goes through the dynamic libc symbol,
//! never through a raw system call.

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The parts of `struct stat` mkfs uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Stat {
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub rdev: u64,
    pub size: i64,
    pub mtime: i64,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
}

/// Converts a path to a C string; a path with an interior NUL cannot name a host file.
pub(crate) fn cpath(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains a NUL byte"))
}

/// `lstat(2)` through libc (wrapped by fakeroot/pseudo; `std::fs::symlink_metadata` is not).
pub(crate) fn lstat(path: &Path) -> io::Result<Stat> {
    let c = cpath(path)?;
    let mut st = MaybeUninit::<libc::stat>::zeroed();
    // SAFETY: `c` is a valid NUL-terminated string and `st` points to writable memory large
    // enough for a `struct stat`; lstat fully initialises it on success.
    let rc = unsafe { libc::lstat(c.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: lstat returned 0, so the structure is initialised (it was zeroed anyway).
    let st = unsafe { st.assume_init() };
    Ok(Stat {
        mode: st.st_mode,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev,
        size: st.st_size,
        mtime: st.st_mtime,
        dev: st.st_dev,
        ino: st.st_ino,
        nlink: st.st_nlink,
    })
}

/// glibc's `gnu_dev_major()`.
pub(crate) fn dev_major(dev: u64) -> u32 {
    (((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff)) as u32
}

/// glibc's `gnu_dev_minor()`.
pub(crate) fn dev_minor(dev: u64) -> u32 {
    ((dev & 0xff) | ((dev >> 12) & !0xff)) as u32
}

/// The text of `strerror(errno)` (the standard library's message without its
/// " (os error N)" suffix).
pub(crate) fn strerror(err: &io::Error) -> String {
    let s = err.to_string();
    match s.rfind(" (os error ") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Size of mkfs' xattr buffers (`XATTR_BUFFER_SIZE`, 64 KiB). It equals the kernel's limits
/// for a list and for a value, so reading with it loses nothing; we still retry with a larger
/// buffer on ERANGE in case some file system reports more.
const XATTR_BUFFER_SIZE: usize = 64 * 1024;

/// Calls `f(buf)` (an `l*xattr` style function returning a length or -1) with a 64 KiB buffer,
/// growing it on ERANGE, and returns the filled prefix.
fn xattr_call(
    mut f: impl FnMut(&mut [u8]) -> isize,
    mut query: impl FnMut() -> isize,
) -> io::Result<Vec<u8>> {
    let mut buf = vec![0u8; XATTR_BUFFER_SIZE];
    for _ in 0..8 {
        let n = f(&mut buf);
        if n >= 0 {
            buf.truncate(n as usize);
            return Ok(buf);
        }
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::ERANGE) {
            return Err(err);
        }
        let need = query();
        if need < 0 {
            return Err(io::Error::last_os_error());
        }
        let new_len = (need as usize).max(buf.len().saturating_mul(2));
        buf.resize(new_len, 0);
    }
    Err(io::Error::from_raw_os_error(libc::ERANGE))
}

/// `llistxattr(2)` through libc: the raw NUL-separated name list.
pub(crate) fn llistxattr(path: &CStr) -> io::Result<Vec<u8>> {
    xattr_call(
        // SAFETY: `path` is NUL-terminated and `buf` is a writable buffer of `buf.len()` bytes.
        |buf| unsafe { libc::llistxattr(path.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) },
        // SAFETY: a NULL buffer of size 0 only queries the needed size.
        || unsafe { libc::llistxattr(path.as_ptr(), std::ptr::null_mut(), 0) },
    )
}

/// `lgetxattr(2)` through libc.
pub(crate) fn lgetxattr(path: &CStr, name: &[u8]) -> io::Result<Vec<u8>> {
    let cname = CString::new(name).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "xattr name contains a NUL byte",
        )
    })?;
    xattr_call(
        // SAFETY: both strings are NUL-terminated; `buf` is writable for `buf.len()` bytes.
        |buf| unsafe {
            libc::lgetxattr(
                path.as_ptr(),
                cname.as_ptr(),
                buf.as_mut_ptr().cast(),
                buf.len(),
            )
        },
        // SAFETY: a NULL buffer of size 0 only queries the needed size.
        || unsafe { libc::lgetxattr(path.as_ptr(), cname.as_ptr(), std::ptr::null_mut(), 0) },
    )
}

/// Concatenates raw byte strings into a host path (mkfs builds its paths with `"%s/%s"`
/// and `"%s%s"`, and so do we, byte for byte).
pub(crate) fn path_from_bytes(bytes: &[u8]) -> std::path::PathBuf {
    std::path::PathBuf::from(OsStr::from_bytes(bytes))
}

/// Raw bytes for messages: as they are (mkfs prints them raw with `%s`) unless they are not
/// UTF-8 or hold control or bidirectional characters, which are escaped
/// ([`crate::text::escape_if_needed`]).
pub(crate) fn lossy(bytes: &[u8]) -> String {
    crate::text::escape_if_needed(bytes).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dev_numbers_match_glibc_encoding() {
        // makedev(major, minor) as glibc encodes it.
        fn makedev(ma: u32, mi: u32) -> u64 {
            let (ma, mi) = (ma as u64, mi as u64);
            ((ma & 0xfff) << 8) | ((ma & !0xfff) << 32) | (mi & 0xff) | ((mi & !0xff) << 12)
        }
        for &(ma, mi) in &[
            (0, 0),
            (1, 3),
            (8, 1),
            (300, 70000),
            (0xffff_ffff, 0xffff_ffff),
        ] {
            let d = makedev(ma, mi);
            assert_eq!((dev_major(d), dev_minor(d)), (ma, mi));
            assert_eq!(d, libc::makedev(ma, mi));
        }
    }

    #[test]
    fn strerror_strips_suffix() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(strerror(&e), "No such file or directory");
    }

    #[test]
    fn lstat_missing_is_an_error() {
        assert!(lstat(Path::new("/nonexistent/definitely/not")).is_err());
        assert!(lstat(Path::new("a\0b")).is_err());
    }
}
