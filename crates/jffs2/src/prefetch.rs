//! A cache hint for walks that jump from node to node.
//!
//! Walking an image node by node (the scan, reading an inode) waits on memory at every
//! node: the next header is rarely in the cache, and where it lies is known only once the
//! current one is read — unless a list of offsets is at hand, as it is when an inode's
//! nodes are read. Asking for a header a few nodes ahead overlaps those waits.
//!
//! The same for pages: [`PagesAhead`] maps the pages of a pass's memory on another thread,
//! a little ahead of the pass.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::Thread;

/// Asks the CPU to bring the cache line holding `b[at]` closer; nothing if `at` is out of
/// `b` or on other architectures. Never changes what the program computes.
#[inline(always)]
pub(crate) fn prefetch(b: &[u8], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if let Some(p) = b.get(at) {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: `_mm_prefetch` is a hint: it never faults and reads nothing into the
        // program, and the pointer is to an element of `b` (SSE is part of x86_64).
        unsafe { _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(p).cast()) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (b, at);
}

/// How far ahead of a pass [`PagesAhead`] maps pages. Well under jffs2-dump's trim limit
/// (12 MiB, `crate::mapped`): pages mapped ahead and dropped by a trim before they are read
/// are mapped twice.
const AHEAD: usize = 2 << 20;
/// How much one `madvise` call maps.
const CHUNK: usize = 256 << 10;
/// Below this much memory in all, no thread is started (its start costs more).
const MIN_TRACKED: usize = 8 << 20;

/// A region read (or written) front to back by one pass, whose pages a helper thread maps
/// ahead of it.
pub(crate) struct Track {
    start: usize,
    end: usize,
    write: bool,
    /// How far the pass is (bytes from `start`).
    pos: AtomicUsize,
    /// When the pass reaches this, the helper has work again and is woken.
    wake_at: AtomicUsize,
}

impl Track {
    /// The pages of `b`, to be read.
    pub(crate) fn read(b: &[u8]) -> Track {
        Self::over(b.as_ptr() as usize, b.len(), false)
    }

    /// The pages of `v`'s buffer (its capacity), to be written by pushes.
    pub(crate) fn write<T>(v: &Vec<T>) -> Track {
        Self::over(v.as_ptr() as usize, v.capacity() * size_of::<T>(), true)
    }

    fn over(start: usize, len: usize, write: bool) -> Track {
        Track {
            start,
            end: start.saturating_add(len),
            write,
            pos: AtomicUsize::new(0),
            wake_at: AtomicUsize::new(0),
        }
    }
}

/// A thread that maps the pages of a few regions a little ahead of the pass over them
/// (`madvise(MADV_POPULATE_READ / _WRITE)`), so that the pass does not take their page
/// faults itself: the scan is the one serial stage of an extraction, and a quarter of its
/// time was the kernel mapping the image's pages and the fresh pages of the refs it
/// pushes (`docs/BENCHMARKS.md`, session 16). Populating never changes what memory holds:
/// it only maps what the next access would have mapped, so the pass computes the same.
pub(crate) struct PagesAhead {
    tracks: Vec<Track>,
    stop: AtomicBool,
    helper: Thread,
}

impl PagesAhead {
    /// The pass over track `k` is at `pos` bytes from its start.
    #[inline]
    pub(crate) fn at(&self, k: usize, pos: usize) {
        if let Some(t) = self.tracks.get(k) {
            t.pos.store(pos, Ordering::SeqCst);
            if pos >= t.wake_at.load(Ordering::SeqCst) {
                self.helper.unpark();
            }
        }
    }

    /// The helper's loop: maps up to [`AHEAD`] past each pass, sleeps while there is
    /// nothing to map. Stops at the first `madvise` the kernel refuses (before Linux 5.14,
    /// or memory it cannot map): the pass then maps its pages itself, as without a helper.
    fn run(&self) {
        let mut done: Vec<usize> = vec![0; self.tracks.len()];
        while !self.stop.load(Ordering::SeqCst) {
            let mut mapped = false;
            for (t, d) in self.tracks.iter().zip(done.iter_mut()) {
                let len = t.end - t.start;
                let pos = t.pos.load(Ordering::SeqCst);
                *d = (*d).max(pos);
                let target = pos.saturating_add(AHEAD).min(len);
                while *d < target && !self.stop.load(Ordering::SeqCst) {
                    let n = CHUNK.min(len - *d);
                    if !populate(t.start + *d, n, t.write) {
                        return;
                    }
                    *d += n;
                    mapped = true;
                }
                let wake = if *d >= len {
                    usize::MAX
                } else {
                    d.saturating_sub(AHEAD / 2)
                };
                t.wake_at.store(wake, Ordering::SeqCst);
            }
            if !mapped {
                std::thread::park();
            }
        }
    }
}

/// Runs `f` with a [`PagesAhead`] over `tracks` on a thread of its own, or with none (a
/// single core, little memory, or no thread to be had).
pub(crate) fn with_pages_ahead<R>(
    tracks: Vec<Track>,
    f: impl FnOnce(Option<&PagesAhead>) -> R,
) -> R {
    let total: usize = tracks.iter().map(|t| t.end - t.start).sum();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if total < MIN_TRACKED || cores < 2 || !cfg!(target_os = "linux") {
        return f(None);
    }
    let ahead = std::sync::OnceLock::<PagesAhead>::new();
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name("jffs2-pages".into())
            .spawn_scoped(s, || loop {
                // Parked until its work is published (a wake may come early).
                if let Some(a) = ahead.get() {
                    break a.run();
                }
                std::thread::park();
            });
        let Ok(handle) = spawned else {
            return f(None);
        };
        let helper = handle.thread().clone();
        let a = ahead.get_or_init(|| PagesAhead {
            tracks,
            stop: AtomicBool::new(false),
            helper: helper.clone(),
        });
        helper.unpark();
        // Stopped however `f` ends (the scope waits for the helper).
        let _stop = Stop(a);
        f(Some(a))
    })
}

/// Stops a [`PagesAhead`]'s helper when dropped.
struct Stop<'a>(&'a PagesAhead);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.stop.store(true, Ordering::SeqCst);
        self.0.helper.unpark();
    }
}

/// Maps the pages of `[at, at + len)` (whole pages around it) for reading or writing.
/// Whether the kernel did.
fn populate(at: usize, len: usize, write: bool) -> bool {
    #[cfg(target_os = "linux")]
    {
        // Read here, not through `mapguard::page_size`: utilities do not depend on one
        // another (the layers checked by tests/layers.rs).
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        let lo = at & !(page - 1);
        let hi = at.saturating_add(len).saturating_add(page - 1) & !(page - 1);
        let advice = if write {
            libc::MADV_POPULATE_WRITE
        } else {
            libc::MADV_POPULATE_READ
        };
        // SAFETY: MADV_POPULATE_* only maps pages (as a read or write fault would, without
        // reading or writing them): memory keeps its contents, whoever else uses it. A range
        // not mapped is refused with ENOMEM, nothing else.
        let r = unsafe { libc::madvise(lo as *mut libc::c_void, hi - lo, advice) };
        r == 0 || std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (at, len, write);
        false
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// Pages of `[p, p + len)` the kernel has mapped in (`mincore`).
    fn resident(p: usize, len: usize) -> usize {
        let page = 4096;
        let mut v = vec![0u8; len.div_ceil(page)];
        // SAFETY: `p` is page-aligned and the range is this test's own allocation; `v`
        // holds one byte per page.
        let r = unsafe { libc::mincore(p as *mut libc::c_void, len, v.as_mut_ptr()) };
        assert_eq!(r, 0, "mincore: {}", std::io::Error::last_os_error());
        v.iter().filter(|&&b| b & 1 != 0).count()
    }

    #[test]
    fn pages_are_mapped_ahead_of_the_pass_and_keep_their_contents() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        if cores < 2 {
            // As the integration tests' skips do: never silently under CI.
            let ci = std::env::var("CI").is_ok_and(|v| v == "true" || v == "1");
            assert!(!ci, "one core under CI: the helper thread cannot be tested");
            // The real stderr: libtest captures eprintln!, and a skip must be seen.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\nSKIPPED: needs two cores (CI=true makes this an error)"
            );
            return;
        }
        // Fresh anonymous pages (calloc'ed large: mapped only when touched).
        let mut v: Vec<u64> = Vec::with_capacity(4 << 20);
        let p = v.as_ptr() as usize;
        let aligned = (p + 4095) & !4095;
        let before = resident(aligned, AHEAD);
        with_pages_ahead(vec![Track::write(&v)], |a| {
            let a = a.expect("a helper on two cores for 32 MiB");
            a.at(0, 0);
            let t = std::time::Instant::now();
            while resident(aligned, AHEAD) < AHEAD / 4096 - 1 {
                assert!(
                    t.elapsed().as_secs() < 20,
                    "the helper never mapped the pages"
                );
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            // Not beyond how far ahead it maps.
            let far = aligned + 2 * AHEAD + CHUNK;
            assert_eq!(resident(far, CHUNK), 0, "mapped past {AHEAD} bytes ahead");
            for i in 0..1000u64 {
                v.push(i);
            }
            a.at(0, 8000);
        });
        assert!(
            before < AHEAD / 4096 / 2,
            "the buffer was mapped from the start"
        );
        assert!(v.iter().copied().eq(0..1000), "contents changed");
    }
}
