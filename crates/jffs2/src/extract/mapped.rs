//! A read-only memory map of an image file, padded like [`crate::scan::as_flashed`], whose
//! resident pages can be dropped while it is in use.
//!
//! Every reader of the core takes the image as one `&[u8]`. Reading a 128 MB image into a
//! buffer costs 128 MB of memory (and a copy); mapping it costs nothing up front, but every
//! page touched stays in the process's resident set until it is unmapped — the scan touches
//! them all. [`ImageMap::release`] drops the resident pages (`madvise(MADV_DONTNEED)`: the
//! mapping is private and never written, so a later access simply maps the page again from
//! the page cache, with the same contents), and a [`Trimmer`] does so periodically on a
//! background thread while the scan, the build and an extraction run. Peak memory then no
//! longer grows with the image size.
//!
//! # Padding
//!
//! The kernel mounts whole erase blocks, at least five (§2); mkfs.jffs2 images end right after
//! their last node. [`ImageMap::open`] can map the file followed by 0xFF up to a given length:
//! the file's whole pages are mapped from the file, the last partial page and the padding live
//! in a small anonymous tail (never released, since releasing anonymous memory would zero it).
//!
//! # Caveat
//!
//! As with any memory map, the file must not be truncated or modified while it is mapped
//! (a truncation makes accesses fault with `SIGBUS`). Tools read images that nothing else is
//! writing; callers that cannot promise that should read the file into memory instead.

use std::fs::File;
use std::io;
use std::marker::PhantomData;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// A private, read-only mapping of an image file (see the module documentation).
pub struct ImageMap {
    /// Start of the mapping (dangling for an empty image).
    base: *mut u8,
    /// Length of the whole mapping (a multiple of the page size), 0 when nothing is mapped.
    map_len: usize,
    /// Bytes visible through [`ImageMap::bytes`]: the file, then the padding.
    len: usize,
    /// Length of the file.
    file_len: usize,
    /// Bytes at the start that are mapped from the file (whole pages); the rest is anonymous.
    file_part: usize,
}

// SAFETY: the mapping is read-only and owned by this value; sharing `&[u8]` views of it between
// threads is as safe as sharing any other immutable buffer. `release` only drops pages that
// the kernel maps again, unchanged, on the next access.
unsafe impl Send for ImageMap {}
// SAFETY: see above.
unsafe impl Sync for ImageMap {}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

impl ImageMap {
    /// Maps the regular file at `path`, followed by 0xFF up to `pad_to` bytes when that is
    /// longer than the file. Fails with [`io::ErrorKind::Unsupported`] for anything that is not
    /// a regular file (a pipe, a character device): read those into memory instead.
    pub fn open(path: &Path, pad_to: Option<usize>) -> io::Result<ImageMap> {
        let file = File::open(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "not a regular file",
            ));
        }
        let file_len = usize::try_from(meta.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "image too large"))?;
        let len = pad_to.unwrap_or(0).max(file_len);
        if len == 0 {
            return Ok(ImageMap {
                base: std::ptr::NonNull::<u8>::dangling().as_ptr(),
                map_len: 0,
                len: 0,
                file_len: 0,
                file_part: 0,
            });
        }
        let page = page_size();
        let map_len = len.div_ceil(page) * page;
        let file_part = if len == file_len && file_len % page == 0 {
            file_len
        } else {
            file_len / page * page
        };
        // Reserve the whole range: anonymous, writable (the tail is filled below).
        // SAFETY: a fresh anonymous mapping; arguments are valid.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let map = ImageMap {
            base: base.cast(),
            map_len,
            len,
            file_len,
            file_part,
        };
        if file_part > 0 {
            // The file's whole pages, over the start of the reservation.
            // SAFETY: the target range lies inside our own reservation; MAP_FIXED replaces it.
            let p = unsafe {
                libc::mmap(
                    base,
                    file_part,
                    libc::PROT_READ,
                    libc::MAP_PRIVATE | libc::MAP_FIXED,
                    file.as_raw_fd(),
                    0,
                )
            };
            if p == libc::MAP_FAILED {
                return Err(io::Error::last_os_error());
            }
        }
        if map_len > file_part {
            // The tail: the file's last partial page, then 0xFF.
            // SAFETY: [file_part, map_len) is the anonymous, writable part of the reservation,
            // and nothing else refers to it yet.
            let tail = unsafe {
                std::slice::from_raw_parts_mut(map.base.add(file_part), map_len - file_part)
            };
            let from_file = file_len - file_part;
            file.read_exact_at(&mut tail[..from_file], file_part as u64)?;
            tail[from_file..].fill(0xFF);
            // SAFETY: the tail range is page-aligned and inside the mapping.
            unsafe {
                libc::mprotect(
                    map.base.add(file_part).cast(),
                    map_len - file_part,
                    libc::PROT_READ,
                );
            }
        }
        // The scan reads front to back; ask for generous read-ahead.
        if file_part > 0 {
            // SAFETY: advice on our own mapping.
            unsafe {
                libc::madvise(base, file_part, libc::MADV_WILLNEED);
            }
        }
        Ok(map)
    }

    /// The image: the file, then the padding.
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `base` points to `len` readable bytes for the life of `self` (or is a
        // dangling, well-aligned pointer with `len == 0`).
        unsafe { std::slice::from_raw_parts(self.base, self.len) }
    }

    /// The file part only (without the padding).
    pub fn file_bytes(&self) -> &[u8] {
        &self.bytes()[..self.file_len]
    }

    /// Length of the file.
    pub fn file_len(&self) -> usize {
        self.file_len
    }

    /// Drops the resident pages of the file part (they are mapped again on the next access).
    pub fn release(&self) {
        if self.file_part > 0 {
            // SAFETY: the range is our own private, read-only file mapping; MADV_DONTNEED on it
            // discards only the page-table entries, and later accesses re-read the file.
            unsafe {
                libc::madvise(self.base.cast(), self.file_part, libc::MADV_DONTNEED);
            }
        }
    }

    /// A background thread that calls [`ImageMap::release`] every `period` until dropped.
    pub fn trimmer(&self, period: Duration) -> Trimmer<'_> {
        let stop = Arc::new(AtomicBool::new(false));
        let handle = if self.file_part > 0 {
            let s = Arc::clone(&stop);
            let addr = self.base as usize;
            let len = self.file_part;
            std::thread::Builder::new()
                .name("jffs2-trim".into())
                .spawn(move || {
                    // Run as soon as woken, ahead of the readers (permitted for root only;
                    // otherwise the default priority stays).
                    // SAFETY: plain syscalls on this thread.
                    unsafe {
                        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
                        libc::setpriority(libc::PRIO_PROCESS, tid, -20);
                    }
                    while !s.load(Ordering::Relaxed) {
                        std::thread::park_timeout(period);
                        // SAFETY: as in `release`; the mapping outlives this thread, which
                        // `Trimmer` joins before the borrow of the map ends.
                        unsafe {
                            libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED);
                        }
                    }
                })
                .ok()
        } else {
            None
        };
        Trimmer {
            stop,
            handle,
            _map: PhantomData,
        }
    }
}

impl Drop for ImageMap {
    fn drop(&mut self) {
        if self.map_len > 0 {
            // SAFETY: unmapping the range this value mapped; no borrow of it outlives `self`.
            unsafe {
                libc::munmap(self.base.cast(), self.map_len);
            }
        }
    }
}

/// Releases an [`ImageMap`]'s pages periodically; stops (and joins its thread) when dropped.
pub struct Trimmer<'a> {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    _map: PhantomData<&'a ImageMap>,
}

impl Drop for Trimmer<'_> {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            h.thread().unpark();
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_and_pads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let m = ImageMap::open(&p, Some(20_000)).unwrap();
        assert_eq!(m.bytes().len(), 20_000);
        assert_eq!(&m.bytes()[..10_000], &data[..]);
        assert!(m.bytes()[10_000..].iter().all(|&b| b == 0xFF));
        m.release();
        assert_eq!(&m.bytes()[..10_000], &data[..], "pages come back unchanged");
        {
            let _t = m.trimmer(Duration::from_millis(1));
            for _ in 0..50 {
                assert_eq!(m.file_bytes(), &data[..]);
            }
        }
        let plain = ImageMap::open(&p, None).unwrap();
        assert_eq!(plain.bytes(), &data[..]);
        std::fs::write(&p, b"").unwrap();
        let empty = ImageMap::open(&p, Some(0)).unwrap();
        assert!(empty.bytes().is_empty());
        assert!(ImageMap::open(Path::new("/dev/null"), None).is_err());
    }
}
