//! What an interrupted run must not leave behind: names registered here (a directory
//! descriptor and a file name in it) are unlinked when SIGINT, SIGTERM or SIGHUP arrives,
//! before the process dies of that signal as it would have.
//!
//! The handler may run at any point on any thread, so it only reads a fixed table allocated
//! before `main` (no allocation, no lock) and calls async-signal-safe functions (`unlinkat`,
//! `raise`). Only what cannot be unnamed is registered: a named temporary file (file systems
//! without `O_TMPFILE`), the short-lived name an unnamed one is linked under before its
//! rename, and a file created through a dangling symbolic link.

use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};
use std::sync::Once;

/// A file name's longest length on Linux (`NAME_MAX`), and its NUL.
const NAME: usize = 256;
/// How many names may be registered at once (a tool has at most a few outputs open).
const SLOTS: usize = 16;

const FREE: u8 = 0;
const WRITING: u8 = 1;
const READY: u8 = 2;

struct Slot {
    state: AtomicU8,
    dir: AtomicI32,
    name: UnsafeCell<[u8; NAME]>,
}

// SAFETY: `name` is written only by the thread that moved `state` from FREE to WRITING, and
// read (by the handler) only in state READY, set with Release after the write.
unsafe impl Sync for Slot {}

#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Slot = Slot {
    state: AtomicU8::new(FREE),
    dir: AtomicI32::new(-1),
    name: UnsafeCell::new([0; NAME]),
};

static TABLE: [Slot; SLOTS] = [EMPTY; SLOTS];
static INSTALL: Once = Once::new();

/// A registered name; [`unregister`] frees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered(usize);

/// Registers `name` in the directory `dir` (which must stay open until [`unregister`]) for
/// removal on SIGINT, SIGTERM or SIGHUP. `None` when the name is too long or the table full:
/// best effort, the run goes on.
pub fn register(dir: RawFd, name: &CStr) -> Option<Registered> {
    let bytes = name.to_bytes_with_nul();
    if bytes.len() > NAME {
        return None;
    }
    INSTALL.call_once(install);
    for (i, slot) in TABLE.iter().enumerate() {
        if slot
            .state
            .compare_exchange(FREE, WRITING, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            // SAFETY: this thread owns the slot (state WRITING) until it stores READY.
            unsafe {
                let buf = &mut *slot.name.get();
                buf[..bytes.len()].copy_from_slice(bytes);
            }
            slot.dir.store(dir, Ordering::Relaxed);
            slot.state.store(READY, Ordering::Release);
            return Some(Registered(i));
        }
    }
    None
}

/// Frees a registration (the name is no longer ours to remove).
pub fn unregister(r: Registered) {
    if let Some(slot) = TABLE.get(r.0) {
        slot.state.store(FREE, Ordering::Release);
    }
}

extern "C" fn on_signal(sig: libc::c_int) {
    for slot in &TABLE {
        if slot.state.load(Ordering::Acquire) == READY {
            let dir = slot.dir.load(Ordering::Relaxed);
            // SAFETY: a READY slot holds a NUL-terminated name; unlinkat is async-signal-safe.
            unsafe {
                libc::unlinkat(dir, slot.name.get().cast::<libc::c_char>(), 0);
            }
        }
    }
    // SA_RESETHAND restored the default action; the signal is blocked until this handler
    // returns, and then ends the process as it would have without the handler.
    // SAFETY: raise is async-signal-safe.
    unsafe {
        libc::raise(sig);
    }
}

/// Installs the handler for the signals that still have their default action (a signal
/// ignored by `nohup` or the parent stays ignored).
fn install() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction with valid pointers; the handler only does async-signal-safe
        // work (see `on_signal`).
        unsafe {
            let mut old: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, std::ptr::null(), &mut old) != 0
                || old.sa_sigaction != libc::SIG_DFL
            {
                continue;
            }
            let mut new: libc::sigaction = std::mem::zeroed();
            new.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            new.sa_flags = libc::SA_RESETHAND | libc::SA_RESTART;
            libc::sigemptyset(&mut new.sa_mask);
            libc::sigaction(sig, &new, std::ptr::null_mut());
        }
    }
}
