//! Input images mapped rather than read: a private, read-only mapping of the file (the
//! page-cache pages themselves, no copy) with anonymous room after it for the padding to
//! whole erase blocks. Used by jffs2-sumtool, jffs2-convert and `jffs2-fsck --repair`.
//!
//! The mapped file's pages count in the process's resident set once touched, and the tools
//! touch them all. [`Input::load_trimmed`] (jffs2-fsck) has a [`jffs2::extract::Trimmer`] drop
//! them again as they accumulate, so that the input costs a few MiB of memory rather than its
//! size (`docs/SECURITY.md`'s bound); [`Input::load`] (jffs2-convert, jffs2-sumtool) maps it
//! populated and keeps it: dropping and faulting the pages again doubled the wall time of a
//! conversion that copies nodes.

use std::fs::File;
use std::io::Read;
use std::time::Duration;

use jffs2::extract::Trimmer;

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
}

impl Input {
    /// The input, mapped populated when it is a regular file.
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
        if meta.is_file() && size > 0 && size <= (isize::MAX as u64) / 2 {
            if let Some(m) = Self::map(file, size as usize, trim) {
                return Ok(m);
            }
        }
        let mut vec = Vec::with_capacity((size as usize).saturating_add(1 << 20));
        let mut f = file;
        f.read_to_end(&mut vec)?;
        let len = vec.len();
        Ok(Input {
            map: None,
            trimmer: None,
            vec,
            len,
        })
    }

    fn map(file: &File, len: usize, trim: bool) -> Option<Input> {
        use std::os::fd::AsRawFd;
        let total = len.checked_add(SPARE)?;
        // SAFETY: a fresh anonymous private mapping; the file is then mapped privately at its
        // start with MAP_FIXED, replacing part of that reservation. Both stay valid until
        // `drop` unmaps `total` bytes. The mapping is private, so writes (the padding) never
        // reach the file. If the file shrank while mapped, reading its vanished pages would
        // raise SIGBUS: the input is a file the user named, not shared with a writer. The
        // trimmer covers only the read-only whole pages of the file (the padding goes after
        // the file, into the writable last page and the anonymous room) and `drop` stops it
        // before unmapping.
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
            // Only the whole pages before the writable last one: those are never written.
            let trimmer = trim
                .then(|| Trimmer::for_file_pages(base as *mut u8, last, TRIM_LIMIT, TRIM_PERIOD));
            Some(Input {
                map: Some((base as *mut u8, total)),
                trimmer,
                vec: Vec::new(),
                len,
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
        if let Some((p, total)) = self.map.take() {
            // SAFETY: unmaps exactly the reservation made in `map`.
            unsafe {
                libc::munmap(p as *mut libc::c_void, total);
            }
        }
    }
}
