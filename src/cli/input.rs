//! Input images mapped rather than read: a private, read-only mapping of the file (the
//! page-cache pages themselves, no copy) with anonymous room after it for the padding to
//! whole erase blocks. Used by jffs2-sumtool, jffs2-convert and jffs2-fsck.
//!
//! The file part is registered with `jffs2::mapguard`: if the file shrinks while mapped,
//! reading its vanished pages yields zeros instead of killing the process with `SIGBUS`, and
//! [`Watch::changed`] says so; the tools check it before committing their output.
//!
//! The mapped file's pages count in the process's resident set once touched, and the tools
//! touch them all. [`Input::load_trimmed`] (jffs2-fsck) has a [`jffs2::extract::Trimmer`] drop
//! them again as they accumulate, so that the input costs a few MiB of memory rather than its
//! size (`docs/SECURITY.md`'s bound); [`Input::load`] (jffs2-convert, jffs2-sumtool) maps it
//! populated and keeps it: dropping and faulting the pages again doubled the wall time of a
//! conversion that copies nodes.

use std::fs::File;
use std::time::Duration;

use jffs2::extract::Trimmer;
use jffs2::mapguard::MapGuard;

/// Resident pages of the mapped input above which they are dropped, and how often (in the
/// process's CPU time) that is checked: the extraction's figures.
const TRIM_LIMIT: usize = 16 << 20;
const TRIM_PERIOD: Duration = Duration::from_millis(2);

/// Spare room after the input for the padding to whole erase blocks: the largest erase size
/// the detection considers (16 MiB), and 5 such blocks for tiny images. Only address space:
/// pages are used only where the padding is written.
const SPARE: usize = 5 * 16 * 1024 * 1024;

/// The input image with spare room after it: a private, copy-on-write mapping of the file
/// (no copy of its bytes) over an anonymous reservation, or, for what cannot be mapped (a
/// pipe, an empty file), a buffer it is read into.
pub struct Input {
    map: Option<(*mut u8, usize)>,
    /// Drops the mapped file's resident pages (stopped before the unmapping).
    trimmer: Option<Trimmer<'static>>,
    vec: Vec<u8>,
    /// Length of the input.
    pub len: usize,
    /// The file part's registration against SIGBUS.
    guard: MapGuard,
    /// The watch on the mapped file (see [`Input::watch`]).
    watch: Watch,
}

/// Tells whether a mapped input changed (shrank) while it was read; usable while the input
/// itself is borrowed.
#[derive(Default)]
pub struct Watch {
    /// The mapped file and its length when mapped (`None`: read into memory, nothing to
    /// watch).
    file: Option<(File, u64)>,
}

impl Watch {
    /// Whether the input file shrank while mapped: a fault in a vanished page was absorbed
    /// (`jffs2::mapguard`), or the file is now shorter than what was mapped (a `write(2)`
    /// from a vanished page fails with `EFAULT` rather than faulting).
    pub fn changed(&self) -> bool {
        match &self.file {
            Some((f, len)) => jffs2::mapguard::faulted_any() || jffs2::mapguard::shrank(f, *len),
            None => false,
        }
    }
}

impl Input {
    /// Maps `file` populated (a regular file), or reads it (anything else) up to the 4 GiB
    /// an image can hold (`jffs2::input`).
    pub fn load(file: &File) -> std::io::Result<Input> {
        Self::load_with(file, false)
    }

    /// [`Input::load`], the mapped file's resident pages dropped as they accumulate (not
    /// populated).
    pub fn load_trimmed(file: &File) -> std::io::Result<Input> {
        Self::load_with(file, true)
    }

    fn load_with(file: &File, trim: bool) -> std::io::Result<Input> {
        let meta = file.metadata()?;
        let size = meta.len();
        if meta.is_file() && size > jffs2::input::MAX_IMAGE_LEN {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "larger than 4 GiB: not a JFFS2 image",
            ));
        }
        if meta.is_file() && size > 0 && size <= (isize::MAX as u64) / 2 {
            if let Some(mut m) = Self::map(file, size as usize, trim) {
                m.watch.file = file.try_clone().ok().map(|f| (f, size));
                return Ok(m);
            }
        }
        let mut vec = jffs2::input::read_image(file)?;
        // Room for the padding to whole erase blocks, as the mapping has.
        vec.try_reserve(1 << 20)
            .map_err(|_| jffs2::input::out_of_memory())?;
        let len = vec.len();
        Ok(Input {
            map: None,
            trimmer: None,
            vec,
            len,
            watch: Watch::default(),
            guard: MapGuard::none(),
        })
    }

    /// Whether the input changed while it was read (see [`Watch::changed`]).
    pub fn watch(&self) -> Watch {
        Watch {
            file: self
                .watch
                .file
                .as_ref()
                .and_then(|(f, len)| Some((f.try_clone().ok()?, *len))),
        }
    }

    fn map(file: &File, len: usize, trim: bool) -> Option<Input> {
        use std::os::fd::AsRawFd;
        let total = len.checked_add(SPARE)?;
        // SAFETY: a fresh anonymous private mapping; the file is then mapped privately at its
        // start with MAP_FIXED, replacing part of that reservation. Both stay valid until
        // `drop` unmaps `total` bytes. The mapping is private, so writes (the padding) never
        // reach the file. If the file shrinks while mapped, reading its vanished pages raises
        // SIGBUS, which `jffs2::mapguard` absorbs (registered below). The trimmer covers only
        // the read-only whole pages of the file (the padding goes after the file, into the
        // writable last page and the anonymous room) and `drop` stops it before unmapping.
        unsafe {
            let base = libc::mmap(
                std::ptr::null_mut(),
                total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            );
            if base == libc::MAP_FAILED {
                return None;
            }
            // Read-only: the page-cache pages are mapped, never copied. Populated unless
            // trimmed (the trimmer measures the resident pages' growth from here).
            let populate = if trim { 0 } else { libc::MAP_POPULATE };
            let f = libc::mmap(
                base,
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_FIXED | populate,
                file.as_raw_fd(),
                0,
            );
            if f == libc::MAP_FAILED {
                libc::munmap(base, total);
                return None;
            }
            // The file's last page is made writable for the padding that starts inside it
            // (copy-on-write: one page is copied, the file is never written).
            let page = libc::sysconf(libc::_SC_PAGESIZE).max(4096) as usize;
            let last = (len / page) * page;
            if last < len
                && libc::mprotect(
                    (base as *mut u8).add(last) as *mut libc::c_void,
                    page,
                    libc::PROT_READ | libc::PROT_WRITE,
                ) != 0
            {
                libc::munmap(base, total);
                return None;
            }
            // The file's pages, registered against SIGBUS: the mapping stays until `drop`,
            // which unregisters first; the tools check `changed` before trusting what they
            // read, so zero pages in place of vanished ones are acceptable.
            let guard = MapGuard::register(base as *const u8, len);
            // Only the whole pages before the writable last one: those are never written.
            let trimmer = trim
                .then(|| Trimmer::for_file_pages(base as *mut u8, last, TRIM_LIMIT, TRIM_PERIOD));
            Some(Input {
                map: Some((base as *mut u8, total)),
                trimmer,
                vec: Vec::new(),
                len,
                watch: Watch::default(),
                guard,
            })
        }
    }

    /// The input and the spare room after it.
    pub fn buf(&self) -> &[u8] {
        match self.map {
            // SAFETY: the mapping is `total` bytes long and lives as long as `self`.
            Some((p, total)) => unsafe { std::slice::from_raw_parts(p, total) },
            None => &self.vec,
        }
    }

    /// Mutable view of [`Input::buf`] (for the padding).
    pub fn buf_mut(&mut self) -> &mut [u8] {
        match self.map {
            // SAFETY: as in `buf`; `&mut self` makes the view unique.
            Some((p, total)) => unsafe { std::slice::from_raw_parts_mut(p, total) },
            None => {
                // The read buffer: its spare capacity becomes 0xFF room.
                let cap = self.vec.capacity();
                self.vec.resize(cap, 0xFF);
                &mut self.vec
            }
        }
    }
}

impl Drop for Input {
    fn drop(&mut self) {
        // The trimmer stops before its pages go.
        drop(self.trimmer.take());
        self.guard.unregister();
        if let Some((p, total)) = self.map.take() {
            // SAFETY: unmaps exactly the reservation made in `map`.
            unsafe {
                libc::munmap(p as *mut libc::c_void, total);
            }
        }
    }
}
