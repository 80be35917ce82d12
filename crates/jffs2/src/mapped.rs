//! A read-only memory map of an image file, padded like [`crate::scan::as_flashed`], whose
//! resident pages can be dropped while it is in use.
//!
//! Every reader of the core takes the image as one `&[u8]`. Reading a 128 MB image into a
//! buffer costs 128 MB of memory (and a copy); mapping it costs nothing up front, but every
//! page touched stays in the process's resident set until it is unmapped — the scan touches
//! them all. [`ImageMap::release`] drops the resident pages (`madvise(MADV_DONTNEED)`: the
//! mapping is private and never written, so a later access simply maps the page again from
//! the page cache, with the same contents), and a [`Trimmer`] does so whenever the resident
//! part has grown by a given amount, while the scan, the build and an extraction run. Peak
//! memory then no longer grows with the image size.
//!
//! The check must run while the image is being read, whatever else the machine is doing: a
//! background thread is scheduled late under CPU contention (and then the resident set has
//! grown by the whole image). So the trimmer is a POSIX CPU-time timer of the process
//! (`CLOCK_PROCESS_CPUTIME_ID`): every couple of milliseconds of the process's CPU time, its
//! signal interrupts the thread that is running — the one reading the image — whose handler
//! reads the file-backed resident size from `/proc/self/statm` and, only when it is over
//! the limit, drops the pages (`madvise` makes the kernel flush every thread's TLB, so it
//! is not done blindly). The handler only makes async-signal-safe system calls, preserves
//! `errno`, and is installed with `SA_RESTART`. One such timer can be active at a time; a
//! second trimmer (or a system without these facilities) falls back to a thread.
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
//! As with any memory map, the file should not be truncated or modified while it is mapped.
//! A truncation no longer kills the process: the file part is registered with
//! [`crate::mapguard`], whose `SIGBUS` handler maps zero pages over what vanished; check
//! [`ImageMap::changed`] when done reading and discard the results if it says so.

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

use crate::mapguard::MapGuard;

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
    /// The file part registered against `SIGBUS` (unregistered before the unmapping).
    guard: MapGuard,
    /// The file, to tell whether it shrank (`None` for an empty image).
    file: Option<File>,
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

/// Opens the image file at `path`: a regular file of at most 4 GiB. Returns it and its
/// length.
fn open_regular(path: &Path) -> io::Result<(File, usize)> {
    let file = File::open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "not a regular file",
        ));
    }
    if meta.len() > crate::input::MAX_IMAGE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "larger than 4 GiB: not a JFFS2 image",
        ));
    }
    let file_len = usize::try_from(meta.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "image too large"))?;
    Ok((file, file_len))
}

impl ImageMap {
    /// Maps the regular file at `path`, followed by 0xFF up to `pad_to` bytes when that is
    /// longer than the file. Fails with [`io::ErrorKind::Unsupported`] for anything that is not
    /// a regular file (a pipe, a character device): read those into memory instead.
    pub fn open(path: &Path, pad_to: Option<usize>) -> io::Result<ImageMap> {
        let (file, file_len) = open_regular(path)?;
        let len = pad_to.unwrap_or(0).max(file_len);
        if len == 0 {
            return Ok(ImageMap {
                base: std::ptr::NonNull::<u8>::dangling().as_ptr(),
                map_len: 0,
                len: 0,
                file_len: 0,
                file_part: 0,
                guard: MapGuard::none(),
                file: None,
            });
        }
        let mut map = ImageMap::reserve(len, file_len)?;
        if map.file_part > 0 {
            map.map_file_part(&file)?;
        }
        if map.map_len > map.file_part {
            map.fill_tail(&file)?;
        }
        map.file = Some(file);
        // The scan reads front to back; ask for generous read-ahead.
        if map.file_part > 0 {
            // SAFETY: advice on our own mapping.
            unsafe {
                libc::madvise(map.base.cast(), map.file_part, libc::MADV_WILLNEED);
            }
        }
        Ok(map)
    }

    /// Reserves the whole range for an image of `len` bytes whose file holds `file_len`
    /// (`len > 0`): anonymous and writable, nothing mapped from the file yet.
    fn reserve(len: usize, file_len: usize) -> io::Result<ImageMap> {
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
        Ok(ImageMap {
            base: base.cast(),
            map_len,
            len,
            file_len,
            file_part,
            guard: MapGuard::none(),
            file: None,
        })
    }

    /// Maps the file's whole pages over the start of the reservation, and guards them.
    fn map_file_part(&mut self, file: &File) -> io::Result<()> {
        let file_part = self.file_part;
        // SAFETY: the target range lies inside our own reservation; MAP_FIXED replaces it.
        let p = unsafe {
            libc::mmap(
                self.base.cast(),
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
        // SAFETY: the file part is our own private read-only mapping, unmapped only after
        // the guard is unregistered (`drop`); its readers accept zero pages there once
        // the file has shrunk, as they check `changed` afterwards.
        self.guard = unsafe { MapGuard::register(self.base, file_part) };
        Ok(())
    }

    /// Fills the tail after the file's whole pages: the file's last partial page, then
    /// 0xFF; then makes it read-only.
    fn fill_tail(&mut self, file: &File) -> io::Result<()> {
        let (file_part, map_len) = (self.file_part, self.map_len);
        // SAFETY: [file_part, map_len) is the anonymous, writable part of the reservation,
        // and nothing else refers to it yet.
        let tail = unsafe {
            std::slice::from_raw_parts_mut(self.base.add(file_part), map_len - file_part)
        };
        let from_file = self.file_len - file_part;
        file.read_exact_at(&mut tail[..from_file], file_part as u64)?;
        tail[from_file..].fill(0xFF);
        // SAFETY: the tail range is page-aligned and inside the mapping.
        unsafe {
            libc::mprotect(
                self.base.add(file_part).cast(),
                map_len - file_part,
                libc::PROT_READ,
            );
        }
        Ok(())
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

    /// Whether the file shrank while mapped (then some of what was read from it may be
    /// zeros rather than its contents: discard the results and say the input changed).
    pub fn changed(&self) -> bool {
        self.guard.faulted()
            || self
                .file
                .as_ref()
                .is_some_and(|f| crate::mapguard::shrank(f, self.file_len as u64))
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

    /// Keeps the map's resident pages below about `limit` bytes until the returned value is
    /// dropped: every `period` of the process's CPU time (see the module documentation; a
    /// thread waking every `period` as a fallback), the file-backed resident size is read
    /// and [`ImageMap::release`] called when it grew by `limit` since the trimmer started.
    pub fn trimmer(&self, limit: usize, period: Duration) -> Trimmer<'_> {
        // SAFETY: the file part is this map's private, read-only file mapping, never
        // written, and the returned value borrows the map, so it stops before the unmapping.
        unsafe { Trimmer::for_file_pages(self.base, self.file_part, limit, period) }
    }
}

impl<'a> Trimmer<'a> {
    /// A trimmer (see [`ImageMap::trimmer`]) for any private, read-only mapping of a file,
    /// such as the one a tool maps its input with; `len` bytes from `base` (a page boundary).
    ///
    /// # Safety
    ///
    /// `base..base + len` must be a private mapping of a file (`MAP_PRIVATE`) that nothing
    /// writes while the trimmer runs (a written page would be replaced by the file's
    /// contents), and must stay mapped until the returned value is dropped.
    pub unsafe fn for_file_pages(
        base: *mut u8,
        len: usize,
        limit: usize,
        period: Duration,
    ) -> Trimmer<'a> {
        let mut t = Trimmer {
            stop: Arc::new(AtomicBool::new(false)),
            handle: None,
            timer: None,
            _map: PhantomData,
        };
        if len == 0 {
            return t;
        }
        if let Some(timer) = cpu_timer::start(base as usize, len, limit, period) {
            t.timer = Some(timer);
            return t;
        }
        let s = Arc::clone(&t.stop);
        let addr = base as usize;
        t.handle = std::thread::Builder::new()
            .name("jffs2-trim".into())
            .spawn(move || {
                let statm = File::open("/proc/self/statm").ok();
                let fd = statm.as_ref().map_or(-1, AsRawFd::as_raw_fd);
                let base = cpu_timer::file_resident(fd).unwrap_or(0);
                while !s.load(Ordering::Relaxed) {
                    std::thread::park_timeout(period);
                    let over = cpu_timer::file_resident(fd)
                        .is_none_or(|now| now.saturating_sub(base) > limit);
                    if over {
                        // SAFETY: as in `release`; the mapping outlives this thread, which
                        // `Trimmer` joins before the borrow of the map ends.
                        unsafe {
                            libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED);
                        }
                    }
                }
            })
            .ok();
        t
    }
}

/// The CPU-time timer behind [`ImageMap::trimmer`] (see the module documentation).
mod cpu_timer {
    use std::sync::atomic::{AtomicBool, AtomicI32, AtomicUsize, Ordering::SeqCst};
    use std::sync::Once;
    use std::time::Duration;

    static ACTIVE: AtomicBool = AtomicBool::new(false);
    static CLAIMED: AtomicBool = AtomicBool::new(false);
    static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
    static ADDR: AtomicUsize = AtomicUsize::new(0);
    static LEN: AtomicUsize = AtomicUsize::new(0);
    static LIMIT: AtomicUsize = AtomicUsize::new(0);
    static BASE: AtomicUsize = AtomicUsize::new(0);
    static STATM: AtomicI32 = AtomicI32::new(-1);
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    static INSTALL: Once = Once::new();
    static INSTALLED: AtomicBool = AtomicBool::new(false);

    /// The signal: a real-time one nothing else in the process uses.
    fn signal() -> libc::c_int {
        libc::SIGRTMIN() + 7
    }

    /// File-backed resident bytes of the process from `/proc/self/statm` (its third
    /// field), read through `fd` with `pread`: async-signal-safe, no allocation.
    pub(super) fn file_resident(fd: libc::c_int) -> Option<usize> {
        if fd < 0 {
            return None;
        }
        let mut buf = [0u8; 128];
        // SAFETY: a valid buffer of that length.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        let n = usize::try_from(n).ok()?;
        let mut fields = buf.get(..n)?.split(|&b| b == b' ');
        let shared = fields.nth(2)?;
        let mut pages = 0usize;
        for &c in shared.iter().take_while(|c| c.is_ascii_digit()) {
            pages = pages.checked_mul(10)?.checked_add(usize::from(c - b'0'))?;
        }
        Some(pages.saturating_mul(PAGE.load(SeqCst)))
    }

    extern "C" fn handler(_sig: libc::c_int) {
        // SAFETY: errno is thread-local; restored below so the interrupted code never sees
        // a change.
        let errno = unsafe { *libc::__errno_location() };
        IN_HANDLER.fetch_add(1, SeqCst);
        if ACTIVE.load(SeqCst) {
            let over = match file_resident(STATM.load(SeqCst)) {
                Some(now) => now.saturating_sub(BASE.load(SeqCst)) > LIMIT.load(SeqCst),
                None => true,
            };
            if over {
                // SAFETY: while ACTIVE, [ADDR, ADDR+LEN) is the trimmer's private read-only
                // file mapping (stop() clears ACTIVE and waits for running handlers before
                // the mapping can go away).
                unsafe {
                    libc::madvise(
                        ADDR.load(SeqCst) as *mut libc::c_void,
                        LEN.load(SeqCst),
                        libc::MADV_DONTNEED,
                    );
                }
            }
        }
        IN_HANDLER.fetch_sub(1, SeqCst);
        // SAFETY: as above.
        unsafe { *libc::__errno_location() = errno };
    }

    /// Arms the timer for `[addr, addr + len)`; `None` when another trimmer holds it or the
    /// system refuses.
    pub(super) fn start(
        addr: usize,
        len: usize,
        limit: usize,
        period: Duration,
    ) -> Option<libc::timer_t> {
        if CLAIMED.swap(true, SeqCst) {
            return None;
        }
        INSTALL.call_once(|| {
            // SAFETY: installing a handler for a signal only this module uses.
            unsafe {
                let mut sa: libc::sigaction = std::mem::zeroed();
                sa.sa_sigaction = handler as extern "C" fn(libc::c_int) as usize;
                sa.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut sa.sa_mask);
                if libc::sigaction(signal(), &sa, std::ptr::null_mut()) == 0 {
                    INSTALLED.store(true, SeqCst);
                }
            }
        });
        let fd = {
            // SAFETY: a valid NUL-terminated path.
            unsafe {
                libc::open(
                    c"/proc/self/statm".as_ptr(),
                    libc::O_RDONLY | libc::O_CLOEXEC,
                )
            }
        };
        if !INSTALLED.load(SeqCst) || fd < 0 {
            if fd >= 0 {
                // SAFETY: our descriptor.
                unsafe { libc::close(fd) };
            }
            CLAIMED.store(false, SeqCst);
            return None;
        }
        PAGE.store(super::page_size(), SeqCst);
        STATM.store(fd, SeqCst);
        BASE.store(file_resident(fd).unwrap_or(0), SeqCst);
        ADDR.store(addr, SeqCst);
        LEN.store(len, SeqCst);
        LIMIT.store(limit, SeqCst);
        ACTIVE.store(true, SeqCst);
        // SAFETY: zeroed is a valid sigevent; the fields set are those SIGEV_SIGNAL reads.
        let mut sev: libc::sigevent = unsafe { std::mem::zeroed() };
        sev.sigev_notify = libc::SIGEV_SIGNAL;
        sev.sigev_signo = signal();
        // SAFETY: zeroed is a valid timer_t slot.
        let mut timer: libc::timer_t = unsafe { std::mem::zeroed() };
        let ts = libc::timespec {
            tv_sec: period.as_secs() as libc::time_t,
            tv_nsec: libc::c_long::from(period.subsec_nanos().max(1_000)),
        };
        let spec = libc::itimerspec {
            it_interval: ts,
            it_value: ts,
        };
        // SAFETY: valid pointers; the timer is deleted in stop().
        let ok = unsafe {
            libc::timer_create(libc::CLOCK_PROCESS_CPUTIME_ID, &mut sev, &mut timer) == 0
                && (libc::timer_settime(timer, 0, &spec, std::ptr::null_mut()) == 0 || {
                    libc::timer_delete(timer);
                    false
                })
        };
        if !ok {
            stop_state();
            return None;
        }
        Some(timer)
    }

    fn stop_state() {
        ACTIVE.store(false, SeqCst);
        // A handler that saw ACTIVE may still be running on another thread.
        while IN_HANDLER.load(SeqCst) > 0 {
            std::hint::spin_loop();
        }
        let fd = STATM.swap(-1, SeqCst);
        if fd >= 0 {
            // SAFETY: our descriptor; no handler uses it any more.
            unsafe { libc::close(fd) };
        }
        CLAIMED.store(false, SeqCst);
    }

    /// Disarms the timer; when this returns no handler touches the mapping any more (a
    /// signal still pending finds the trimmer inactive).
    pub(super) fn stop(timer: libc::timer_t) {
        // SAFETY: a timer start() created.
        unsafe { libc::timer_delete(timer) };
        stop_state();
    }
}

impl Drop for ImageMap {
    fn drop(&mut self) {
        self.guard.unregister();
        if self.map_len > 0 {
            // SAFETY: unmapping the range this value mapped; no borrow of it outlives `self`.
            unsafe {
                libc::munmap(self.base.cast(), self.map_len);
            }
        }
    }
}

/// Keeps an [`ImageMap`]'s resident pages bounded; stops (and joins its thread, or disarms
/// its timer) when dropped.
pub struct Trimmer<'a> {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    timer: Option<libc::timer_t>,
    _map: PhantomData<&'a ImageMap>,
}

impl Drop for Trimmer<'_> {
    fn drop(&mut self) {
        if let Some(t) = self.timer.take() {
            cpu_timer::stop(t);
        }
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
            let _t = m.trimmer(0, Duration::from_millis(1));
            // A second one at the same time falls back to a thread.
            let _u = m.trimmer(0, Duration::from_millis(1));
            for _ in 0..2000 {
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

    /// A file truncated while mapped: reading it does not crash, and the map says it changed.
    #[test]
    fn a_truncated_file_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, vec![7u8; 1 << 20]).unwrap();
        let m = ImageMap::open(&p, Some(2 << 20)).unwrap();
        assert!(!m.changed());
        std::fs::OpenOptions::new()
            .write(true)
            .open(&p)
            .unwrap()
            .set_len(4096)
            .unwrap();
        let sum: u64 = m.file_bytes().iter().map(|&b| u64::from(b)).sum();
        assert!(sum < 7 << 20, "the vanished part reads as zeros");
        assert!(m.changed());
        drop(m);
        let big = std::fs::File::create(dir.path().join("big")).unwrap();
        big.set_len(crate::input::MAX_IMAGE_LEN + 1).unwrap();
        let e = ImageMap::open(&dir.path().join("big"), None).err().unwrap();
        assert_eq!(e.to_string(), "larger than 4 GiB: not a JFFS2 image");
    }
}
