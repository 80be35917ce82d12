//! A read-only memory map of an image file, with room after it for the padding to whole
//! erase blocks ([`crate::scan::as_flashed`]), guarded against the file shrinking, whose
//! resident pages can be dropped while it is in use. [`Image::open_with`](crate::Image::open_with)
//! and the tools (jffs2-fsck, jffs2-convert, jffs2-sumtool, jffs2-dump) map their input
//! with it.
//!
//! Every reader of the core takes the image as one `&[u8]`. Reading a 128 MB image into a
//! buffer costs 128 MB of memory (and a copy); mapping it privately and read-only maps the
//! page-cache pages themselves (no copy, nothing up front), but every page touched stays in
//! the process's resident set until it is unmapped — the scan touches them all. So a map
//! either keeps its pages or drops them as they accumulate:
//!
//! * [`ImageMap::load`] (jffs2-convert, jffs2-sumtool) maps the file populated and keeps it:
//!   dropping and faulting the pages again doubled the wall time of a conversion that copies
//!   nodes.
//! * [`ImageMap::load_trimmed`] (jffs2-fsck) and [`ImageMap::trimmer`] (`Image`, jffs2-dump)
//!   have a [`Trimmer`] drop them, so that the input costs a bounded amount of memory rather
//!   than its size (`docs/SECURITY.md`'s bound): a few MiB for jffs2-dump, which reads the
//!   image about once; for jffs2-fsck, which reads it five times over, only once the process
//!   holds more than the image and 48 MiB (a model large next to its image), so that the
//!   passes do not fault the same pages in again. [`ImageMap::release`] drops the resident pages
//!   (`madvise(MADV_DONTNEED)`: the mapping is private and never written, so a later access
//!   simply maps the page again from the page cache, with the same contents), and a trimmer
//!   does so whenever the resident part has grown by a given amount, while the scan, the
//!   build, a check or an extraction run. Peak memory then no longer grows with the image
//!   size.
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
//! their last node. The file's whole pages are mapped from the file over an anonymous,
//! writable reservation; the last partial page and the padding live in that anonymous tail
//! (never released, since releasing anonymous memory would zero it). [`ImageMap::open`]
//! fills it with 0xFF up to a given length. [`ImageMap::load`] reserves spare room instead,
//! for when the erase size is not known yet: the largest erase size the detection considers
//! (16 MiB), 5 such blocks for tiny images. That room is only address space: pages are used
//! only where the padding is written, in place, through [`ImageMap::buf_mut`] (no remapping,
//! no copy of the image).
//!
//! What cannot be mapped (a pipe, a character device, an empty file) is read by
//! [`ImageMap::load`] into a buffer instead, up to the 4 GiB an image can hold
//! ([`crate::input`]), with 1 MiB of room after it.
//!
//! # Caveat
//!
//! As with any memory map, the file should not be truncated or modified while it is mapped.
//! A truncation no longer kills the process: the file part is registered with
//! [`crate::mapguard`], whose `SIGBUS` handler maps zero pages over what vanished; check
//! [`ImageMap::changed`] (or a [`Watch`] taken before lending the map out) when done reading
//! and discard the results if it says so.

use crate::mapguard::page_size;
use std::fs::{File, Metadata};
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

/// Resident pages of a [`ImageMap::load_trimmed`] input above which they are dropped, and
/// how often (in the process's CPU time) that is checked.
const TRIM_LIMIT: usize = 16 << 20;
/// What a process may hold beyond its mapped input before a trimmer drops the input's pages
/// ([`ImageMap::load_trimmed`], [`ImageMap::trimmer_keeping`]): jffs2-fsck reads the image
/// five times over (detection, scan, inode reads, tree walk,
/// flash walk), and dropping its pages between those passes made each fault them in again,
/// a tenth of its time on a 128 MiB image. The pages go only when the model is large next to
/// the image (many tiny nodes or entries), which keeps the peak within `docs/SECURITY.md`'s
/// bound of twice the image and 64 MiB.
pub const TRIM_KEEP: usize = 48 << 20;
const TRIM_PERIOD: Duration = Duration::from_millis(2);

/// Drops the resident pages of `[addr, addr + len)`: `madvise(MADV_DONTNEED)`, which on a
/// private file mapping never written discards only the page-table entries (later accesses
/// read the file again). Async-signal-safe (the trimmer's timer calls it from its handler).
///
/// # Safety
///
/// The range must lie in a private mapping of a file that nothing has written.
unsafe fn drop_pages(addr: usize, len: usize) {
    // SAFETY: the caller's.
    unsafe {
        libc::madvise(addr as *mut libc::c_void, len, libc::MADV_DONTNEED);
    }
}

/// Spare room after a [`ImageMap::load`] input for the padding to whole erase blocks (see
/// the module documentation).
const SPARE: usize = 5 * 16 * 1024 * 1024;

/// Room after an input read into a buffer (see the module documentation).
const READ_SPARE: usize = 1 << 20;

/// A private, read-only mapping of an image file, or an input read into memory (see the
/// module documentation).
pub struct ImageMap {
    /// Start of the mapping (dangling when nothing is mapped).
    base: *mut u8,
    /// Bytes at the start of the mapping before the window ([`Window`]): the window's offset
    /// in its page. `len`, `file_len` and `file_part` count them too; the views skip them.
    skip: usize,
    /// Length of the whole mapping (a multiple of the page size), 0 when nothing is mapped.
    map_len: usize,
    /// End of what [`ImageMap::bytes`] shows, from `base`: the file, then the padding.
    len: usize,
    /// End of the file's part (the window's end), from `base`.
    file_len: usize,
    /// Offset in the file of `base`'s byte (a page boundary): the window's start less
    /// `skip`.
    file_off: u64,
    /// Bytes at the start that are mapped from the file (whole pages); the rest is anonymous.
    file_part: usize,
    /// An input read rather than mapped ([`ImageMap::load`]), with its room as capacity;
    /// empty when mapped.
    read: Vec<u8>,
    /// Drops the file part's resident pages ([`ImageMap::load_trimmed`]); stopped before the
    /// unmapping.
    trimmer: Option<Trimmer<'static>>,
    /// The file part registered against `SIGBUS` (unregistered before the unmapping).
    guard: MapGuard,
    /// The mapped file, to tell whether it shrank (nothing when not mapped).
    watch: Watch,
}

// SAFETY: the mapping is read-only and owned by this value; sharing `&[u8]` views of it between
// threads is as safe as sharing any other immutable buffer. `release` and the trimmer only
// drop pages that the kernel maps again, unchanged, on the next access.
unsafe impl Send for ImageMap {}
// SAFETY: see above.
unsafe impl Sync for ImageMap {}

/// Tells whether a mapped input changed (shrank) while it was read; usable while the map
/// itself is borrowed (see [`ImageMap::watch`]).
#[derive(Default)]
pub struct Watch {
    /// The mapped file and its length when mapped (`None`: read into memory, nothing to
    /// watch).
    file: Option<(File, u64)>,
}

impl Watch {
    /// Whether the file is now shorter than what was mapped (a `write(2)` from a vanished
    /// page fails with `EFAULT` rather than faulting).
    fn shrank(&self) -> bool {
        self.file
            .as_ref()
            .is_some_and(|(f, len)| crate::mapguard::shrank(f, *len))
    }

    /// Whether the input file shrank while mapped: a fault in a vanished page was absorbed
    /// in any guarded mapping of the process ([`crate::mapguard::faulted_any`]: for a tool,
    /// which maps one input), or the file is now shorter than what was mapped.
    pub fn changed(&self) -> bool {
        self.file.is_some() && (crate::mapguard::faulted_any() || self.shrank())
    }
}

/// The length of an image file: `None` for anything but a regular file, an error for one
/// larger than 4 GiB.
fn regular_len(meta: &Metadata) -> io::Result<Option<usize>> {
    if !meta.is_file() {
        return Ok(None);
    }
    if meta.len() > crate::input::MAX_IMAGE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "larger than 4 GiB: not a JFFS2 image",
        ));
    }
    usize::try_from(meta.len())
        .map(Some)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "image too large"))
}

/// How the pages of the file part are brought in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pages {
    /// Read ahead (`MADV_WILLNEED`): a scan reads front to back.
    ReadAhead,
    /// Mapped populated (`MAP_POPULATE`), to be kept.
    Populate,
    /// Faulted in as read and dropped again by a trimmer (not populated: the trimmer
    /// measures the resident pages' growth from the mapping on).
    Trim,
}

/// A part of a file that holds one filesystem (a partition of a full-flash dump, an image
/// inside a vendor's update file): `size` bytes from `offset`, or all from `offset` to the
/// end of the file. The tools read it as if it had been cut out of the file (offsets in
/// their reports count from its start).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    /// Where it starts in the file.
    pub offset: u64,
    /// Its length (`None`: to the end of the file).
    pub size: Option<u64>,
}

impl Window {
    /// The window's start and length in a file of `file_len` bytes; an error naming the file
    /// size when it does not lie inside the file.
    pub fn resolve(&self, file_len: u64) -> io::Result<(u64, u64)> {
        let end = match self.size {
            Some(n) => self.offset.checked_add(n),
            None => Some(file_len),
        };
        match end {
            Some(end) if self.offset <= file_len && end <= file_len && self.offset <= end => {
                Ok((self.offset, end - self.offset))
            }
            _ => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "the window at 0x{:08x}{} is beyond the end of the file ({file_len} bytes)",
                    self.offset,
                    self.size
                        .map(|n| format!(" of {n} bytes"))
                        .unwrap_or_default()
                ),
            )),
        }
    }

    /// The window of an input read into memory: `v` cut to it (the NAND dumps of `--oobsize`
    /// are windowed raw, before their OOB bytes are removed).
    pub fn cut(&self, v: &mut Vec<u8>) -> io::Result<()> {
        let (off, len) = self.resolve(v.len() as u64)?;
        // Both fit in usize: they lie inside `v`.
        let (off, len) = (off as usize, len as usize);
        v.truncate(off + len);
        v.drain(..off);
        Ok(())
    }
}

/// The window's start and length in `file`, and the file's whole length, for a regular file
/// (`None` for anything else); an error for a window beyond the file or longer than 4 GiB.
fn regular_window(meta: &Metadata, window: Option<Window>) -> io::Result<Option<(u64, usize)>> {
    let Some(w) = window else {
        return Ok(regular_len(meta)?.map(|n| (0, n)));
    };
    if !meta.is_file() {
        return Ok(None);
    }
    let (off, len) = w.resolve(meta.len())?;
    if len > crate::input::MAX_IMAGE_LEN {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "larger than 4 GiB: not a JFFS2 image",
        ));
    }
    let len = usize::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "image too large"))?;
    Ok(Some((off, len)))
}

impl ImageMap {
    /// Maps the regular file at `path`, followed by 0xFF up to `pad_to` bytes when that is
    /// longer than the file. Fails with [`io::ErrorKind::Unsupported`] for anything that is not
    /// a regular file (a pipe, a character device): read those into memory instead.
    pub fn open(path: &Path, pad_to: Option<usize>) -> io::Result<ImageMap> {
        Self::open_in(path, None, pad_to)
    }

    /// [`ImageMap::open`] of the `window` of the file (the whole file for `None`): the
    /// mapping shows the window as if it were the file, padded after its end.
    pub fn open_in(
        path: &Path,
        window: Option<Window>,
        pad_to: Option<usize>,
    ) -> io::Result<ImageMap> {
        let file = File::open(path)?;
        let (off, file_len) = regular_window(&file.metadata()?, window)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::Unsupported, "not a regular file"))?;
        let len = pad_to.unwrap_or(0).max(file_len);
        if len == 0 {
            return Ok(ImageMap::unmapped(Vec::new()));
        }
        let mut map = ImageMap::map(&file, (off, file_len), len, 0, Pages::ReadAhead)?;
        map.watch.file = Some((file, off + file_len as u64));
        Ok(map)
    }

    /// Maps `file` populated (a regular file) with spare room after it for the padding (see
    /// the module documentation), or reads it (anything else, an empty file, or a file that
    /// cannot be mapped) up to the 4 GiB an image can hold ([`crate::input`]). The pages
    /// are kept.
    pub fn load(file: &File) -> io::Result<ImageMap> {
        Self::load_with(file, None, Pages::Populate)
    }

    /// [`ImageMap::load`] without populating the mapping: each page comes in when it is
    /// first read (read ahead, `MADV_WILLNEED`), on the thread that reads it. For a reader
    /// whose first pass over the image runs on every core (jffs2-sumtool's detection), where
    /// populating is serial work before anything else can start (7 % of jffs2-sumtool's
    /// samples, docs/BENCHMARKS.md).
    pub fn load_on_demand(file: &File) -> io::Result<ImageMap> {
        Self::load_with(file, None, Pages::ReadAhead)
    }

    /// [`ImageMap::load`] of the `window` of the file (see [`ImageMap::open_in`]).
    pub fn load_in(file: &File, window: Option<Window>) -> io::Result<ImageMap> {
        Self::load_with(file, window, Pages::Populate)
    }

    /// [`ImageMap::load`], the mapped file's resident pages dropped as they accumulate while
    /// the process holds more than the file and a few tens of MiB (not populated).
    pub fn load_trimmed(file: &File) -> io::Result<ImageMap> {
        Self::load_with(file, None, Pages::Trim)
    }

    /// [`ImageMap::load_trimmed`] of the `window` of the file (see [`ImageMap::open_in`]).
    pub fn load_trimmed_in(file: &File, window: Option<Window>) -> io::Result<ImageMap> {
        Self::load_with(file, window, Pages::Trim)
    }

    fn load_with(file: &File, window: Option<Window>, pages: Pages) -> io::Result<ImageMap> {
        if let Some((off, size)) = regular_window(&file.metadata()?, window)?.filter(|w| w.1 > 0) {
            if let Ok(mut map) = ImageMap::map(file, (off, size), size, SPARE, pages) {
                map.watch.file = file.try_clone().ok().map(|f| (f, off + size as u64));
                if pages == Pages::Trim {
                    let keep = map.keep_limit(TRIM_KEEP);
                    // SAFETY: the file part is this map's private, read-only file mapping,
                    // never written; `drop` stops the trimmer before the unmapping.
                    map.trimmer = Some(unsafe {
                        Trimmer::for_file_pages(
                            map.base,
                            map.file_part,
                            (TRIM_LIMIT, keep),
                            TRIM_PERIOD,
                        )
                    });
                }
                return Ok(map);
            }
        }
        let mut read = crate::input::read_image(file)?;
        if let Some(w) = window {
            w.cut(&mut read)?;
        }
        read.try_reserve(READ_SPARE)
            .map_err(|_| crate::input::out_of_memory())?;
        Ok(ImageMap::unmapped(read))
    }

    /// An input read into memory (or an empty one): nothing mapped, nothing to watch.
    fn unmapped(read: Vec<u8>) -> ImageMap {
        ImageMap {
            base: std::ptr::NonNull::<u8>::dangling().as_ptr(),
            skip: 0,
            file_off: 0,
            map_len: 0,
            len: read.len(),
            file_len: read.len(),
            file_part: 0,
            read,
            trimmer: None,
            guard: MapGuard::none(),
            watch: Watch::default(),
        }
    }

    /// Maps the window of `file` (`(offset, length)`, `length > 0`) followed by 0xFF up to
    /// `len` bytes (`len > 0`), then `room` bytes of address space.
    fn map(
        file: &File,
        (off, file_len): (u64, usize),
        len: usize,
        room: usize,
        pages: Pages,
    ) -> io::Result<ImageMap> {
        // mmap maps from a page boundary: the bytes before the window in its first page are
        // mapped too, and skipped by the views.
        let skip = (off % page_size() as u64) as usize;
        let mut map = ImageMap::reserve(skip + len, skip + file_len, room)?;
        map.skip = skip;
        map.file_off = off - skip as u64;
        if map.file_part > 0 {
            map.map_file_part(file, pages == Pages::Populate)?;
        }
        map.fill_tail(file)?;
        if map.file_part > 0 && pages == Pages::ReadAhead {
            // SAFETY: advice on our own mapping.
            unsafe {
                libc::madvise(map.base.cast(), map.file_part, libc::MADV_WILLNEED);
            }
        }
        Ok(map)
    }

    /// Reserves the whole range for an image of `len` bytes whose file holds `file_len`,
    /// then `room` bytes: anonymous and writable, nothing mapped from the file yet, only
    /// address space (`MAP_NORESERVE`) until written.
    fn reserve(len: usize, file_len: usize, room: usize) -> io::Result<ImageMap> {
        let page = page_size();
        let too_large = || io::Error::new(io::ErrorKind::InvalidInput, "image too large");
        let map_len = len
            .checked_add(room)
            .and_then(|n| n.checked_next_multiple_of(page))
            .ok_or_else(too_large)?;
        // SAFETY: a fresh anonymous mapping; arguments are valid.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let mut map = ImageMap::unmapped(Vec::new());
        map.base = base.cast();
        map.map_len = map_len;
        map.len = len;
        map.file_len = file_len;
        map.file_part = file_len / page * page;
        Ok(map)
    }

    /// Maps the file's whole pages over the start of the reservation (read-only: the
    /// page-cache pages are mapped, never copied; populated when `populate`), and guards
    /// them.
    fn map_file_part(&mut self, file: &File, populate: bool) -> io::Result<()> {
        let file_part = self.file_part;
        let populate = if populate { libc::MAP_POPULATE } else { 0 };
        // SAFETY: the target range lies inside our own reservation; MAP_FIXED replaces it.
        let p = unsafe {
            libc::mmap(
                self.base.cast(),
                file_part,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_FIXED | populate,
                file.as_raw_fd(),
                libc::off_t::try_from(self.file_off).map_err(|_| {
                    io::Error::new(io::ErrorKind::InvalidInput, "window offset too large")
                })?,
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

    /// Fills the tail after the file's whole pages up to the page holding the end of
    /// `len`: the file's last partial page, then 0xFF. The room after it is left untouched.
    /// A file that shrank meanwhile leaves zeros where it vanished, as the guarded part
    /// would read ([`ImageMap::changed`] says so).
    fn fill_tail(&mut self, file: &File) -> io::Result<()> {
        let end = self.len.next_multiple_of(page_size()).min(self.map_len);
        let file_part = self.file_part;
        if end <= file_part {
            return Ok(());
        }
        // SAFETY: [file_part, end) is in the anonymous, writable part of the reservation,
        // and nothing else refers to it yet.
        let tail =
            unsafe { std::slice::from_raw_parts_mut(self.base.add(file_part), end - file_part) };
        let (from_file, padding) = tail.split_at_mut(self.file_len - file_part);
        let mut done = 0;
        while done < from_file.len() {
            match file.read_at(
                &mut from_file[done..],
                self.file_off + (file_part + done) as u64,
            ) {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        padding.fill(0xFF);
        Ok(())
    }

    /// The image: the file (or its window), then the padding given to [`ImageMap::open`].
    pub fn bytes(&self) -> &[u8] {
        if self.map_len == 0 {
            return self.read.get(..self.len).unwrap_or_default();
        }
        // SAFETY: `base` points to `map_len >= len >= skip` readable bytes for the life of
        // `self`.
        unsafe { std::slice::from_raw_parts(self.base.add(self.skip), self.len - self.skip) }
    }

    /// The file part only (without the padding).
    pub fn file_bytes(&self) -> &[u8] {
        self.bytes().get(..self.file_len()).unwrap_or_default()
    }

    /// Length of the file (or of its window).
    pub fn file_len(&self) -> usize {
        self.file_len - self.skip
    }

    /// The image and the room after it (see the module documentation).
    pub fn buf(&self) -> &[u8] {
        if self.map_len == 0 {
            return &self.read;
        }
        // SAFETY: the mapping is `map_len >= skip` bytes long and lives as long as `self`.
        unsafe { std::slice::from_raw_parts(self.base.add(self.skip), self.map_len - self.skip) }
    }

    /// Mutable view of [`ImageMap::buf`], for the padding after the file (as
    /// [`crate::ImageBytes::InPlace`] writes it); the file's own bytes are never written
    /// (those mapped from the file are read-only). A buffer read into memory has its room
    /// filled with 0xFF first.
    pub fn buf_mut(&mut self) -> &mut [u8] {
        if self.map_len == 0 {
            let cap = self.read.capacity();
            self.read.resize(cap, 0xFF);
            return &mut self.read;
        }
        // SAFETY: as in `buf`; `&mut self` makes the view unique (the trimmer and the
        // `SIGBUS` guard only replace pages of the read-only file part by equal ones, or by
        // zeros once the file shrank, which `changed` then says).
        unsafe {
            std::slice::from_raw_parts_mut(self.base.add(self.skip), self.map_len - self.skip)
        }
    }

    /// Whether the file shrank while mapped (then some of what was read from it may be
    /// zeros rather than its contents: discard the results and say the input changed).
    pub fn changed(&self) -> bool {
        self.guard.faulted() || self.watch.shrank()
    }

    /// A [`Watch`] on the mapped file, to tell whether it changed while the map is lent out
    /// (`buf_mut`).
    pub fn watch(&self) -> Watch {
        Watch {
            file: self
                .watch
                .file
                .as_ref()
                .and_then(|(f, len)| Some((f.try_clone().ok()?, *len))),
        }
    }

    /// Drops the resident pages of the file part (they are mapped again on the next access).
    pub fn release(&self) {
        if self.file_part > 0 {
            // SAFETY: the range is our own private, read-only file mapping.
            unsafe { drop_pages(self.base as usize, self.file_part) }
        }
    }

    /// The process's resident size above which a trimmer may drop pages when it may keep
    /// `keep` bytes besides the mapped file (`keep` 0: no floor).
    fn keep_limit(&self, keep: usize) -> usize {
        match keep {
            0 => 0,
            k => self.file_part.saturating_add(k),
        }
    }

    /// [`ImageMap::release`], the file part cut in pieces dropped on rayon's pool at once:
    /// undoing the page tables of a large mapped image is a serial few milliseconds in
    /// `munmap` otherwise (8 ms for 128 MiB), at the very end of a run, when the pool is idle.
    pub fn release_on_pool(&self) {
        use rayon::prelude::*;
        const PIECE: usize = 8 << 20;
        let base = self.base as usize;
        let len = self.file_part;
        (0..len.div_ceil(PIECE)).into_par_iter().for_each(|i| {
            let n = PIECE.min(len - i * PIECE);
            // SAFETY: a piece of our own private, read-only file mapping (its start a multiple
            // of the page size from the mapping's start).
            unsafe { drop_pages(base + i * PIECE, n) }
        });
    }

    /// Keeps the map's resident pages below about `limit` bytes until the returned value is
    /// dropped: every `period` of the process's CPU time (see the module documentation; a
    /// thread waking every `period` as a fallback), the file-backed resident size is read
    /// and [`ImageMap::release`] called when it grew by `limit` since the trimmer started.
    pub fn trimmer(&self, limit: usize, period: Duration) -> Trimmer<'_> {
        self.trimmer_keeping(limit, 0, period)
    }

    /// [`ImageMap::trimmer`], dropping the pages only while the whole process holds more
    /// than the mapped file and `keep` bytes (a reader that goes over the image several
    /// times, like `load_trimmed`'s with [`TRIM_KEEP`]); `keep` 0: whenever they grew.
    pub fn trimmer_keeping(&self, limit: usize, keep: usize, period: Duration) -> Trimmer<'_> {
        let keep = self.keep_limit(keep);
        // SAFETY: the file part is this map's private, read-only file mapping, never
        // written, and the returned value borrows the map, so it stops before the unmapping.
        unsafe { Trimmer::for_file_pages(self.base, self.file_part, (limit, keep), period) }
    }
}

impl<'a> Trimmer<'a> {
    /// A trimmer (see [`ImageMap::trimmer`]) for a private, read-only mapping of a file;
    /// `len` bytes from `base` (a page boundary). `(limit, keep)`: the pages are dropped when
    /// the file-backed resident size grew by more than `limit` and the process's resident
    /// size is above `keep`.
    ///
    /// # Safety
    ///
    /// `base..base + len` must be a private mapping of a file (`MAP_PRIVATE`) that nothing
    /// writes while the trimmer runs (a written page would be replaced by the file's
    /// contents), and must stay mapped until the returned value is dropped.
    unsafe fn for_file_pages(
        base: *mut u8,
        len: usize,
        (limit, keep): (usize, usize),
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
        if let Some(timer) = cpu_timer::start(base as usize, len, (limit, keep), period) {
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
                let base = cpu_timer::resident(fd).map_or(0, |r| r.1);
                while !s.load(Ordering::Relaxed) {
                    std::thread::park_timeout(period);
                    if cpu_timer::over(fd, base, limit, keep) {
                        // SAFETY: as in `release`; the mapping outlives this thread, which
                        // `Trimmer` joins before the borrow of the map ends.
                        unsafe { drop_pages(addr, len) }
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
    static KEEP: AtomicUsize = AtomicUsize::new(0);
    static BASE: AtomicUsize = AtomicUsize::new(0);
    static STATM: AtomicI32 = AtomicI32::new(-1);
    static PAGE: AtomicUsize = AtomicUsize::new(4096);
    static INSTALL: Once = Once::new();
    static INSTALLED: AtomicBool = AtomicBool::new(false);

    /// The signal: a real-time one nothing else in the process uses.
    fn signal() -> libc::c_int {
        libc::SIGRTMIN() + 7
    }

    /// Resident bytes of the process, all and file-backed, from `/proc/self/statm` (its
    /// second and third fields), read through `fd` with `pread`: async-signal-safe, no
    /// allocation.
    pub(super) fn resident(fd: libc::c_int) -> Option<(usize, usize)> {
        if fd < 0 {
            return None;
        }
        let mut buf = [0u8; 128];
        // SAFETY: a valid buffer of that length.
        let n = unsafe { libc::pread(fd, buf.as_mut_ptr().cast(), buf.len(), 0) };
        let n = usize::try_from(n).ok()?;
        let mut fields = buf.get(..n)?.split(|&b| b == b' ').skip(1);
        let bytes = |field: &[u8]| -> Option<usize> {
            let mut pages = 0usize;
            for &c in field.iter().take_while(|c| c.is_ascii_digit()) {
                pages = pages.checked_mul(10)?.checked_add(usize::from(c - b'0'))?;
            }
            Some(pages.saturating_mul(PAGE.load(SeqCst)))
        };
        Some((bytes(fields.next()?)?, bytes(fields.next()?)?))
    }

    /// Whether the pages are to be dropped: the file-backed resident size grew by more than
    /// `limit` from `base`, and the whole is above `keep` (or `/proc` cannot tell).
    pub(super) fn over(fd: libc::c_int, base: usize, limit: usize, keep: usize) -> bool {
        resident(fd).is_none_or(|(all, file)| file.saturating_sub(base) > limit && all > keep)
    }

    extern "C" fn handler(_sig: libc::c_int) {
        // SAFETY: errno is thread-local; restored below so the interrupted code never sees
        // a change.
        let errno = unsafe { *libc::__errno_location() };
        IN_HANDLER.fetch_add(1, SeqCst);
        if ACTIVE.load(SeqCst) {
            let (base, limit) = (BASE.load(SeqCst), LIMIT.load(SeqCst));
            if over(STATM.load(SeqCst), base, limit, KEEP.load(SeqCst)) {
                // SAFETY: while ACTIVE, [ADDR, ADDR+LEN) is the trimmer's private read-only
                // file mapping (stop() clears ACTIVE and waits for running handlers before
                // the mapping can go away).
                unsafe { super::drop_pages(ADDR.load(SeqCst), LEN.load(SeqCst)) }
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
        (limit, keep): (usize, usize),
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
        BASE.store(resident(fd).map_or(0, |r| r.1), SeqCst);
        ADDR.store(addr, SeqCst);
        LEN.store(len, SeqCst);
        LIMIT.store(limit, SeqCst);
        KEEP.store(keep, SeqCst);
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
        // The trimmer stops before its pages go.
        drop(self.trimmer.take());
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
        m.release_on_pool();
        assert_eq!(
            &m.bytes()[..10_000],
            &data[..],
            "and after the pool dropped them"
        );
        assert!(
            m.bytes()[10_000..].iter().all(|&b| b == 0xFF),
            "padding kept"
        );
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

    /// Pages dropped in pieces on the pool (the last one short) read back as the file, and
    /// the padding after it stays.
    #[test]
    fn pages_dropped_on_the_pool_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        let len = (17 << 20) + 4099;
        let data: Vec<u8> = (0..len as u32).map(|i| (i % 253) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        let m = ImageMap::open(&p, Some(len + 5000)).unwrap();
        assert_eq!(m.file_bytes(), &data[..]);
        m.release_on_pool();
        assert_eq!(m.file_bytes(), &data[..]);
        assert!(m.bytes()[len..].iter().all(|&b| b == 0xFF));
    }

    /// The trimmer's rule: pages go when the file-backed part grew by more than the limit
    /// and the whole process is above what it may keep (fsck keeps its image resident
    /// unless its model is large next to it).
    #[test]
    fn pages_go_only_above_the_limit_and_what_may_be_kept() {
        let statm = File::open("/proc/self/statm").unwrap();
        let fd = statm.as_raw_fd();
        let (all, file) = cpu_timer::resident(fd).unwrap();
        assert!(all >= file && file > 0, "{all} {file}");
        assert!(cpu_timer::over(fd, 0, 0, 0));
        assert!(
            !cpu_timer::over(fd, 0, 0, all + (64 << 20)),
            "below what may be kept"
        );
        assert!(
            !cpu_timer::over(fd, 0, file + (64 << 20), 0),
            "grew less than the limit"
        );
        assert!(
            !cpu_timer::over(fd, file + (64 << 20), 0, 0),
            "shrank from the base"
        );
        assert!(
            cpu_timer::over(-1, 0, usize::MAX, usize::MAX),
            "unknown: dropped"
        );
    }

    /// `load`: the file mapped with room after it, padded in place; what cannot be mapped
    /// read into a buffer whose room is 0xFF.
    #[test]
    fn loads_with_room_or_reads() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        for trimmed in [false, true] {
            let f = File::open(&p).unwrap();
            let mut m = if trimmed {
                ImageMap::load_trimmed(&f).unwrap()
            } else {
                ImageMap::load(&f).unwrap()
            };
            assert_eq!(m.file_len(), data.len());
            assert_eq!(m.bytes(), &data[..]);
            assert!(m.buf().len() >= data.len() + SPARE);
            let watch = m.watch();
            let buf = m.buf_mut();
            buf[data.len()..data.len() + (1 << 20)].fill(0xFF);
            assert!(!m.changed());
            assert_eq!(m.buf()[..data.len()], data[..]);
            // (`Watch::changed` also counts faults of the other tests' mappings.)
            std::fs::File::options()
                .write(true)
                .open(&p)
                .unwrap()
                .set_len(9_000)
                .unwrap();
            assert!(watch.changed() && m.changed());
            std::fs::write(&p, &data).unwrap();
        }
        std::fs::write(&p, b"").unwrap();
        let mut empty = ImageMap::load(&File::open(&p).unwrap()).unwrap();
        assert!(empty.bytes().is_empty() && !empty.watch().changed());
        assert!(empty.buf_mut().len() >= READ_SPARE);
        assert!(empty.buf().iter().all(|&b| b == 0xFF));
        let null = ImageMap::load(&File::open("/dev/null").unwrap()).unwrap();
        assert!(null.bytes().is_empty());
        let big = File::create(dir.path().join("big")).unwrap();
        big.set_len(crate::input::MAX_IMAGE_LEN + 1).unwrap();
        let e = ImageMap::load(&big).err().unwrap();
        assert_eq!(e.to_string(), "larger than 4 GiB: not a JFFS2 image");
    }

    /// A window: the part shown as if it were the file (an offset in the middle of a page
    /// included), padded after it rather than followed by the rest of the file; a window
    /// beyond the file refused with the file's size.
    #[test]
    fn maps_a_window() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&p, &data).unwrap();
        for (off, size) in [
            (0u64, Some(5000u64)),
            (5000, Some(20_000)),
            (8192, None),
            (12_345, Some(0)),
        ] {
            let window = Window { offset: off, size };
            let w = Some(window);
            let end = size.map_or(data.len(), |n| (off + n) as usize);
            let want = &data[off as usize..end];
            let m = ImageMap::open_in(&p, w, Some(want.len() + 9000)).unwrap();
            assert_eq!(m.file_bytes(), want);
            assert_eq!(m.file_len(), want.len());
            assert!(m.bytes()[want.len()..].iter().all(|&b| b == 0xFF));
            for trimmed in [false, true] {
                let f = File::open(&p).unwrap();
                let mut m = if trimmed {
                    ImageMap::load_trimmed_in(&f, w).unwrap()
                } else {
                    ImageMap::load_in(&f, w).unwrap()
                };
                assert_eq!(m.bytes(), want);
                let n = want.len();
                m.buf_mut()[n..n + 4096].fill(0xFF);
                assert_eq!(&m.buf()[..n], want);
            }
            let mut v = data.clone();
            window.cut(&mut v).unwrap();
            assert_eq!(v, want);
        }
        let beyond = Window {
            offset: 99_000,
            size: Some(2000),
        };
        let e = ImageMap::open_in(&p, Some(beyond), None).err().unwrap();
        assert_eq!(
            e.to_string(),
            "the window at 0x000182b8 of 2000 bytes is beyond the end of the file (100000 bytes)"
        );
        let past = Window {
            offset: 200_000,
            size: None,
        };
        assert!(ImageMap::load_in(&File::open(&p).unwrap(), Some(past)).is_err());
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
