//! Surviving an input file that shrinks while it is mapped.
//!
//! The tools map their input image rather than read it (no copy, and memory that does not
//! grow with the image). If the file is truncated meanwhile (an image rebuilt in place while
//! someone inspects it), touching one of its vanished pages raises `SIGBUS`, which kills the
//! process mid-way: exit 135, temporary outputs left behind, nothing said about why.
//!
//! A [`MapGuard`] registers the file-backed part of a mapping. A process-wide `SIGBUS` handler
//! (installed once, on the first registration) looks the faulting address up among the
//! registered ranges: inside one, it maps anonymous zero pages over the rest of that range
//! (`mmap(MAP_FIXED | MAP_ANONYMOUS | MAP_PRIVATE)`), so the faulting access and every later
//! one complete, and it records the fault. The bytes read there are zeros, not the file's:
//! whoever registered the range must check [`MapGuard::faulted`] (or [`faulted_any`]) when it
//! has finished reading, before it trusts or publishes anything derived from the input, and
//! fail naming the input. A fault anywhere else is passed on to the action that was installed
//! before (Rust's own stack-overflow handler, or the default action: the process dies of
//! `SIGBUS` as it would have without us).
//!
//! A shrinking file does not always fault in user space: a `write(2)` *from* a vanished page
//! fails with `EFAULT` instead. [`shrank`] compares the file's current size with the mapped
//! one for that case.
//!
//! The registry is a fixed array of atomics, so the handler neither allocates nor locks
//! (it only makes the `mmap` system call, which takes no user-space lock in glibc).

use std::fs::File;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::SeqCst};
use std::sync::Once;

/// Number of mappings that can be guarded at the same time (a tool maps one or two inputs;
/// the rest is for tests running in parallel). A mapping beyond that is simply not guarded.
const SLOTS: usize = 32;

/// Per slot: the range `[START, END)` (0 when free), whether a fault was absorbed in it, and
/// whether the slot is claimed.
static START: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static END: [AtomicUsize; SLOTS] = [const { AtomicUsize::new(0) }; SLOTS];
static HIT: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
static CLAIMED: [AtomicBool; SLOTS] = [const { AtomicBool::new(false) }; SLOTS];
/// Handlers currently running (a slot is only reused once none may still look at it).
static IN_HANDLER: AtomicUsize = AtomicUsize::new(0);
/// A fault was absorbed in some guarded mapping since the process started.
static ANY: AtomicBool = AtomicBool::new(false);
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The action that was installed for `SIGBUS` before ours, written once before ours is
/// installed and only read afterwards.
struct Previous(std::cell::UnsafeCell<std::mem::MaybeUninit<libc::sigaction>>);
// SAFETY: written once inside `INSTALL.call_once`, before the handler that reads it is
// installed; never written again.
unsafe impl Sync for Previous {}
static PREVIOUS: Previous = Previous(std::cell::UnsafeCell::new(std::mem::MaybeUninit::zeroed()));

/// Registration of a mapping's file-backed range (see the module documentation); the range
/// is unregistered when the guard is dropped.
#[derive(Debug)]
pub struct MapGuard {
    slot: Option<usize>,
}

impl MapGuard {
    /// Guards `[start, start + len)`, the file-backed part of a mapping. Without a free slot
    /// (or a handler) the mapping is simply not guarded.
    ///
    /// # Safety
    ///
    /// The range must be a private mapping owned by the caller that stays mapped until the
    /// guard is dropped (drop the guard before unmapping it), and whose pages may be replaced
    /// by anonymous zero pages at any moment once the file behind them has shrunk.
    pub unsafe fn register(start: *const u8, len: usize) -> MapGuard {
        let start = start as usize;
        let Some(end) = start.checked_add(len) else {
            return MapGuard { slot: None };
        };
        if len == 0 || !install() {
            return MapGuard { slot: None };
        }
        let page = PAGE.load(SeqCst);
        let end = end.div_ceil(page) * page;
        for i in 0..SLOTS {
            if !CLAIMED[i].swap(true, SeqCst) {
                HIT[i].store(false, SeqCst);
                END[i].store(end, SeqCst);
                START[i].store(start, SeqCst);
                return MapGuard { slot: Some(i) };
            }
        }
        MapGuard { slot: None }
    }

    /// A guard that guards nothing (for inputs that are not mapped).
    pub fn none() -> MapGuard {
        MapGuard { slot: None }
    }

    /// Whether a fault was absorbed in this range: the file shrank while mapped and some of
    /// what was read from it is zeros rather than its contents.
    pub fn faulted(&self) -> bool {
        self.slot.is_some_and(|i| HIT[i].load(SeqCst))
    }

    /// Unregisters the range (done by `drop`; call it before unmapping when the guard lives
    /// in the same value as the mapping). Afterwards no handler touches the range.
    pub fn unregister(&mut self) {
        if let Some(i) = self.slot.take() {
            START[i].store(0, SeqCst);
            END[i].store(0, SeqCst);
            // A handler that matched the range before it was cleared may still be mapping
            // pages into it: wait for it, so that the range can be unmapped safely.
            while IN_HANDLER.load(SeqCst) > 0 {
                std::hint::spin_loop();
            }
            CLAIMED[i].store(false, SeqCst);
        }
    }
}

impl Drop for MapGuard {
    fn drop(&mut self) {
        self.unregister();
    }
}

/// Whether a fault was absorbed in any guarded mapping since the process started (for tools:
/// one check before they commit an output or report success, whichever mapping it was).
pub fn faulted_any() -> bool {
    ANY.load(SeqCst)
}

/// Whether `file` is now shorter than the `len` bytes that were mapped from it (a metadata
/// error counts as a change).
pub fn shrank(file: &File, len: u64) -> bool {
    file.metadata().map_or(true, |m| m.len() < len)
}

/// The system's page size (4096 if it cannot be had).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// Installs the handler once; whether it is installed.
fn install() -> bool {
    INSTALL.call_once(|| {
        PAGE.store(page_size(), SeqCst);
        // SAFETY: the previous action is read into its static first (nothing reads it before
        // our handler is installed just after); the new action is a valid SA_SIGINFO handler.
        // SA_ONSTACK: a thread's alternate stack (Rust sets one up) is used when it has one,
        // as the stack-overflow handler we may chain to expects.
        unsafe {
            let prev = (*PREVIOUS.0.get()).as_mut_ptr();
            if libc::sigaction(libc::SIGBUS, std::ptr::null(), prev) != 0 {
                return;
            }
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_sigbus
                as extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void)
                as usize;
            sa.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut sa.sa_mask);
            if libc::sigaction(libc::SIGBUS, &sa, std::ptr::null_mut()) == 0 {
                INSTALLED.store(true, SeqCst);
            }
        }
    });
    INSTALLED.load(SeqCst)
}

extern "C" fn on_sigbus(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: errno is thread-local; restored below so the interrupted code never sees it
    // change.
    let errno = unsafe { *libc::__errno_location() };
    IN_HANDLER.fetch_add(1, SeqCst);
    // SAFETY: the kernel passes a valid siginfo to an SA_SIGINFO handler.
    let addr = if info.is_null() {
        0
    } else {
        unsafe { (*info).si_addr() as usize }
    };
    let mut handled = false;
    if addr != 0 {
        for i in 0..SLOTS {
            let (start, end) = (START[i].load(SeqCst), END[i].load(SeqCst));
            if start != 0 && addr >= start && addr < end {
                let page = addr & !(PAGE.load(SeqCst) - 1);
                // SAFETY: [page, end) lies inside a registered range, which its owner keeps
                // mapped until it unregisters (and unregistering waits for this handler);
                // the owner agreed to have those pages replaced by zero pages. Writable, as
                // the owner may write there (padding after the file in a private mapping).
                let p = unsafe {
                    libc::mmap(
                        page as *mut libc::c_void,
                        end - page,
                        libc::PROT_READ | libc::PROT_WRITE,
                        libc::MAP_PRIVATE | libc::MAP_FIXED | libc::MAP_ANONYMOUS,
                        -1,
                        0,
                    )
                };
                if p != libc::MAP_FAILED {
                    HIT[i].store(true, SeqCst);
                    ANY.store(true, SeqCst);
                    handled = true;
                }
                break;
            }
        }
    }
    IN_HANDLER.fetch_sub(1, SeqCst);
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
    if !handled {
        chain(sig, info, ctx);
    }
}

/// Passes a fault outside our mappings to the action installed before ours.
fn chain(sig: libc::c_int, info: *mut libc::siginfo_t, ctx: *mut libc::c_void) {
    // SAFETY: PREVIOUS was written before this handler was installed and is never written
    // again.
    let prev = unsafe { (*PREVIOUS.0.get()).assume_init_ref() };
    let h = prev.sa_sigaction;
    if h == libc::SIG_DFL || h == libc::SIG_IGN {
        // The default action: restore it and raise the signal again. It is blocked while
        // this handler runs, so it is delivered (and kills) as soon as the handler returns;
        // a fault would in any case repeat on return.
        // SAFETY: async-signal-safe calls with valid arguments.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = libc::SIG_DFL;
            libc::sigemptyset(&mut sa.sa_mask);
            libc::sigaction(sig, &sa, std::ptr::null_mut());
            libc::raise(sig);
        }
    } else if prev.sa_flags & libc::SA_SIGINFO != 0 {
        // SAFETY: the previous handler was installed with SA_SIGINFO, so it has this type.
        let f: extern "C" fn(libc::c_int, *mut libc::siginfo_t, *mut libc::c_void) =
            unsafe { std::mem::transmute(h) };
        f(sig, info, ctx);
    } else {
        // SAFETY: a plain handler.
        let f: extern "C" fn(libc::c_int) = unsafe { std::mem::transmute(h) };
        f(sig);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsRawFd;

    /// A file is mapped, guarded, truncated; reading its vanished pages neither crashes nor
    /// returns its old bytes, and the guard reports the fault.
    #[test]
    fn truncated_mapping_reads_zeros_and_is_reported() {
        let page = PAGE.load(SeqCst).max(4096);
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, vec![0xA5u8; 8 * page]).unwrap();
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&p)
            .unwrap();
        let len = 8 * page;
        // SAFETY: a fresh private read-only mapping of the file, unmapped below.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                f.as_raw_fd(),
                0,
            )
        };
        assert_ne!(base, libc::MAP_FAILED);
        // SAFETY: the mapping stays until after the guard is dropped.
        let mut guard = unsafe { MapGuard::register(base.cast(), len) };
        assert!(guard.slot.is_some());
        // SAFETY: reading our mapping.
        let bytes = unsafe { std::slice::from_raw_parts(base as *const u8, len) };
        assert_eq!(bytes[5 * page], 0xA5);
        assert!(!guard.faulted());
        assert!(!shrank(&f, len as u64));
        f.set_len(2 * page as u64).unwrap();
        // Volatile reads: the vanished pages must really be touched.
        // SAFETY: in-bounds reads of the mapping.
        let first = unsafe { std::ptr::read_volatile(base.cast::<u8>().add(page)) };
        let gone = unsafe { std::ptr::read_volatile(base.cast::<u8>().add(5 * page + 7)) };
        let last = unsafe { std::ptr::read_volatile(base.cast::<u8>().add(len - 1)) };
        assert_eq!(first, 0xA5, "the pages still in the file are read");
        assert_eq!((gone, last), (0, 0), "the vanished pages read as zeros");
        assert!(guard.faulted());
        assert!(faulted_any());
        assert!(shrank(&f, len as u64));
        guard.unregister();
        assert!(!guard.faulted());
        // SAFETY: our mapping, no longer guarded.
        unsafe { libc::munmap(base, len) };
    }

    #[test]
    fn a_range_is_unregistered_on_drop() {
        let v = vec![0u8; 4096];
        let i = {
            // SAFETY: never faults (heap memory); only the registry is tested.
            let g = unsafe { MapGuard::register(v.as_ptr(), v.len()) };
            let i = g.slot.unwrap();
            assert_eq!(START[i].load(SeqCst), v.as_ptr() as usize);
            i
        };
        assert_ne!(START[i].load(SeqCst), v.as_ptr() as usize);
        assert!(!MapGuard::none().faulted());
    }
}
