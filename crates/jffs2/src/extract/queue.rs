//! File data read and written by rayon's workers while the extraction's own thread goes on
//! creating entries, and the finishing steps (metadata) that must wait for those writes.
//!
//! The extraction's thread opens and sizes each file, then hands its data out as ranges
//! ([`Queue::submit_range`]): a worker decompresses a range's nodes and writes them with
//! `pwritev`, so that file data never passes through the extraction's own thread (which
//! every file goes through, and which would bound an extraction on many cores). What must
//! follow a file's data — its owner, mode, xattrs and times (a write after `futimens` would
//! change the time) — and every other finishing step after it (symbolic links', devices',
//! directories') wait in order in [`Queue`] items, so that they run, and report, in the same
//! order whatever the thread count. The metadata of symbolic links, devices, FIFOs and
//! sockets is set on a worker too ([`Queue::submit_finish`]), its outcomes reported when its
//! item's turn comes. The workers wake the extraction's thread only when what it waits for
//! is there (room in the budget, a file written), not at every range. Memory stays bounded:
//! the decompressed bytes of ranges handed out and not yet written count against a budget
//! (the stream options' `ahead_bytes`), beyond which handing out waits.

use std::collections::VecDeque;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

use super::stream::Bytes;
use super::write::Outcome;
use crate::fs::ReadError;

/// A file being written: its descriptor, shared by its batches.
pub(super) struct Target {
    fd: OwnedFd,
    /// Batches handed out and not yet written (or failed).
    left: AtomicUsize,
    /// The first write error.
    error: Mutex<Option<io::Error>>,
    /// Not written whole because another file's write failed first (removed, unreported).
    aborted: AtomicBool,
    /// What its range jobs read.
    stats: Mutex<Stats>,
}

/// What the range jobs of a file read: bytes written, zeros left as holes, and the
/// unreadable bytes (the first offset and its error, and how many in all).
#[derive(Debug, Default)]
pub(super) struct Stats {
    pub data: u64,
    pub holes: u64,
    pub bad: Option<(u64, u64, ReadError)>,
}

impl Stats {
    /// Adds `o`'s counts (the jobs of a file finish in any order).
    fn add(&mut self, o: Stats) {
        self.data += o.data;
        self.holes += o.holes;
        if let Some((ofs, n, e)) = o.bad {
            self.add_bad(ofs, n, e);
        }
    }

    /// Counts `n` unreadable bytes at `ofs`: the error kept is the one at the lowest offset.
    pub(super) fn add_bad(&mut self, ofs: u64, n: u64, e: ReadError) {
        match &mut self.bad {
            Some((first, sum, err)) => {
                *sum += n;
                if ofs < *first {
                    *first = ofs;
                    *err = e;
                }
            }
            None => self.bad = Some((ofs, n, e)),
        }
    }
}

impl Target {
    pub(super) fn new(fd: OwnedFd) -> Arc<Target> {
        Arc::new(Target {
            fd,
            left: AtomicUsize::new(0),
            error: Mutex::new(None),
            aborted: AtomicBool::new(false),
            stats: Mutex::new(Stats::default()),
        })
    }

    pub(super) fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// The write error, if one of its batches failed.
    pub(super) fn take_error(&self) -> Option<io::Error> {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Whether it was left unwritten after another file's write failed.
    pub(super) fn aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }

    /// What its range jobs read.
    pub(super) fn take_stats(&self) -> Stats {
        std::mem::take(&mut *self.stats.lock().unwrap_or_else(PoisonError::into_inner))
    }

    fn failed(&self) -> bool {
        self.error
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
    }
}

/// What the extraction's thread waits for, if anything (told to the workers, so that they
/// wake it only when it can go on: each wake is a futex call and a context switch on the
/// thread every file goes through).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Waiting {
    Nothing,
    /// Until at most this many bytes are held.
    Room(u64),
    /// Until the count of batches left (of a [`Target`] or a [`Pending`]) at this address
    /// is zero.
    Done(usize),
}

impl Waiting {
    /// Whether the waiter can go on once a batch counted by `counter` is done, `bytes`
    /// being held and `left` batches of that count not yet done.
    fn wakes(self, bytes: u64, counter: &AtomicUsize, left: usize) -> bool {
        match self {
            Waiting::Nothing => false,
            Waiting::Room(at) => bytes <= at,
            Waiting::Done(c) => left == 0 && c == address(counter),
        }
    }
}

/// The budget's state, under the lock.
struct Held {
    /// Bytes (of `budget`) held by batches not yet written.
    bytes: u64,
    waiting: Waiting,
}

/// A finishing step run on a worker: what it did, once done.
pub(super) struct Pending {
    /// 1 until done.
    left: AtomicUsize,
    out: Mutex<Vec<Outcome>>,
}

impl Pending {
    /// A step already done, with these outcomes.
    pub(super) fn done(out: Vec<Outcome>) -> Arc<Pending> {
        Arc::new(Pending {
            left: AtomicUsize::new(0),
            out: Mutex::new(out),
        })
    }

    /// Its outcomes (once done).
    pub(super) fn take(&self) -> Vec<Outcome> {
        std::mem::take(&mut *self.out.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// The address of a count of batches left, as [`Waiting::Done`] names it.
fn address(counter: &AtomicUsize) -> usize {
    std::ptr::from_ref(counter) as usize
}

/// What the workers and the extraction's thread share.
struct Shared {
    held: Mutex<Held>,
    /// Most decompressed bytes of ranges handed out and not yet written (at least one range
    /// is always out, whatever its size).
    budget: u64,
    /// Signalled when a batch is done and the extraction's thread can go on.
    done: Condvar,
    /// A batch failed: the extraction stops handing out.
    failed: AtomicBool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits on `done` until `ready` holds, telling the workers what it waits for.
    fn wait<'g>(
        &self,
        mut g: MutexGuard<'g, Held>,
        waiting: Waiting,
        ready: impl Fn(&Held) -> bool,
    ) -> MutexGuard<'g, Held> {
        while !ready(&g) {
            g.waiting = waiting;
            g = self.done.wait(g).unwrap_or_else(PoisonError::into_inner);
        }
        g.waiting = Waiting::Nothing;
        g
    }

    /// A batch counted by `counter` holding `cost` bytes is done: wakes the extraction's
    /// thread if it waits for that.
    fn batch_done(&self, counter: &AtomicUsize, cost: u64) {
        let mut g = self.lock();
        // Under the lock, so that a waiter that saw the count before cannot miss the wake.
        let left = counter.fetch_sub(1, Ordering::AcqRel) - 1;
        g.bytes = g.bytes.saturating_sub(cost);
        let wake = g.waiting.wakes(g.bytes, counter, left);
        drop(g);
        if wake {
            self.done.notify_all();
        }
    }
}

/// A finishing step waiting for the writes handed out before it.
pub(super) enum Work {
    /// A regular file: its metadata once its data is written (or its removal if a write
    /// failed).
    File {
        target: Arc<Target>,
        /// Its name in its parent (for the removal).
        name: CString,
    },
    /// A symbolic link, device, FIFO or socket just created: its metadata, set on a worker
    /// (see `Writer::finish_at`).
    At { pending: Arc<Pending> },
    /// A directory whose subtree is done.
    Dir {
        existed: Option<[libc::timespec; 2]>,
        fd: io::Result<OwnedFd>,
    },
}

/// A finishing step of plan entry `entry`.
pub(super) struct Item {
    pub entry: usize,
    pub work: Work,
}

/// Batches handed out and the finishing steps waiting for them, in plan order.
pub(super) struct Queue {
    shared: Arc<Shared>,
    items: VecDeque<Item>,
    /// Most items waiting (each holds a descriptor).
    pub max_items: usize,
    /// Write on the calling thread (the stream's sequential mode).
    inline: bool,
}

impl Queue {
    pub(super) fn new(inline: bool, budget: u64, max_items: usize) -> Queue {
        Queue {
            shared: Arc::new(Shared {
                held: Mutex::new(Held {
                    bytes: 0,
                    waiting: Waiting::Nothing,
                }),
                budget,
                done: Condvar::new(),
                failed: AtomicBool::new(false),
            }),
            items: VecDeque::new(),
            max_items: max_items.max(1),
            inline,
        }
    }

    /// Runs `job` (reading a range of `target`'s data and writing it, see
    /// `write::write_range`) on the pool once the budget allows `cost` more bytes, or here
    /// (sequential mode, or no `scope`). After a write failed, a job not yet started writes
    /// nothing and marks its file aborted.
    pub(super) fn submit_range<'s, F>(
        &mut self,
        scope: Option<&rayon::Scope<'s>>,
        target: &Arc<Target>,
        cost: u64,
        job: F,
    ) where
        F: FnOnce(RawFd) -> io::Result<Stats> + Send + 's,
    {
        let scope = scope.filter(|_| !self.inline);
        let Some(scope) = scope else {
            run_range(&self.shared, target, job);
            return;
        };
        self.reserve(cost);
        target.left.fetch_add(1, Ordering::AcqRel);
        let shared = Arc::clone(&self.shared);
        let target = Arc::clone(target);
        scope.spawn(move |_| {
            run_range(&shared, &target, job);
            shared.batch_done(&target.left, cost);
        });
    }

    /// Runs finishing step `job` on the pool, or here (sequential mode, or no `scope`). It
    /// holds nothing of the budget.
    pub(super) fn submit_finish<'s, F>(
        &mut self,
        scope: Option<&rayon::Scope<'s>>,
        job: F,
    ) -> Arc<Pending>
    where
        F: FnOnce() -> Vec<Outcome> + Send + 's,
    {
        let Some(scope) = scope.filter(|_| !self.inline) else {
            return Pending::done(job());
        };
        let pending = Arc::new(Pending {
            left: AtomicUsize::new(1),
            out: Mutex::new(Vec::new()),
        });
        let shared = Arc::clone(&self.shared);
        let p = Arc::clone(&pending);
        scope.spawn(move |_| {
            let out = job();
            *p.out.lock().unwrap_or_else(PoisonError::into_inner) = out;
            shared.batch_done(&p.left, 0);
        });
        pending
    }

    /// Waits until `cost` more bytes fit in the budget (or nothing is held), and holds them.
    /// Once it has to wait, it waits for half the budget (or `cost`, if more) to be free, so
    /// that it wakes once per several ranges rather than once per range.
    fn reserve(&self, cost: u64) {
        let budget = self.shared.budget;
        let mut g = self.shared.lock();
        if g.bytes > 0 && g.bytes + cost > budget {
            let at = budget.saturating_sub(cost.max(budget / 2));
            g = self.shared.wait(g, Waiting::Room(at), |h| h.bytes <= at);
        }
        g.bytes += cost;
    }

    /// Whether a write has failed (the extraction should stop handing out).
    pub(super) fn failed(&self) -> bool {
        self.shared.failed.load(Ordering::Acquire)
    }

    pub(super) fn push(&mut self, item: Item) {
        self.items.push_back(item);
    }

    pub(super) fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether a file item of entry `entry` is waiting.
    pub(super) fn holds_file(&self, entry: usize) -> bool {
        self.items
            .iter()
            .any(|it| it.entry == entry && matches!(it.work, Work::File { .. }))
    }

    /// The first item, once the work it waits for is done: waiting for it if `wait`, else
    /// `None` while it is not.
    pub(super) fn next(&mut self, wait: bool) -> Option<Item> {
        let front = self.items.front()?;
        let counter = match &front.work {
            Work::File { target, .. } => Some(&target.left),
            Work::At { pending } => Some(&pending.left),
            Work::Dir { .. } => None,
        };
        if let Some(c) = counter.filter(|c| c.load(Ordering::Acquire) > 0) {
            if !wait {
                return None;
            }
            self.wait_for(c);
        }
        self.items.pop_front()
    }

    /// Waits until the batches counted by `counter` are done.
    fn wait_for(&self, counter: &AtomicUsize) {
        let g = self.shared.lock();
        let w = Waiting::Done(address(counter));
        drop(
            self.shared
                .wait(g, w, |_| counter.load(Ordering::Acquire) == 0),
        );
    }
}

/// Runs a range job of `target` (see [`Queue::submit_range`]) and records what it did.
fn run_range<F>(shared: &Shared, target: &Target, job: F)
where
    F: FnOnce(RawFd) -> io::Result<Stats>,
{
    if shared.failed.load(Ordering::Acquire) {
        if !target.failed() {
            target.aborted.store(true, Ordering::Release);
        }
        return;
    }
    match job(target.raw()) {
        Ok(st) => target
            .stats
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(st),
        Err(e) => fail(shared, target, e),
    }
}

/// Records a failed write of `target`.
fn fail(shared: &Shared, target: &Target, e: io::Error) {
    let mut err = target.error.lock().unwrap_or_else(PoisonError::into_inner);
    if err.is_none() {
        *err = Some(e);
    }
    shared.failed.store(true, Ordering::Release);
}

/// Writes `pieces`, one after the other from file offset `start`, with `pwritev`.
pub(super) fn write_at(fd: RawFd, start: u64, pieces: &[Bytes]) -> io::Result<()> {
    let mut iov: Vec<libc::iovec> = pieces
        .iter()
        .map(|b| libc::iovec {
            iov_base: b.as_slice().as_ptr() as *mut libc::c_void,
            iov_len: b.len(),
        })
        .collect();
    let mut off = start;
    let mut i = 0usize;
    while i < iov.len() {
        let cnt = libc::c_int::try_from(iov.len() - i).unwrap_or(libc::c_int::MAX);
        let at =
            libc::off_t::try_from(off).map_err(|_| io::Error::from_raw_os_error(libc::EFBIG))?;
        // SAFETY: the iovecs point into `pieces`, alive for the call.
        let n = unsafe { libc::pwritev(fd, iov[i..].as_ptr(), cnt, at) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(io::Error::from(io::ErrorKind::WriteZero));
        }
        let mut n = n as usize;
        off += n as u64;
        while n > 0 && i < iov.len() {
            if n >= iov[i].iov_len {
                n -= iov[i].iov_len;
                i += 1;
            } else {
                // SAFETY: advancing within the same buffer.
                iov[i].iov_base = unsafe { iov[i].iov_base.cast::<u8>().add(n) }.cast();
                iov[i].iov_len -= n;
                n = 0;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target() -> Arc<Target> {
        let fd = std::fs::File::open("/dev/null").map(OwnedFd::from);
        Target::new(fd.expect("/dev/null opens"))
    }

    #[test]
    fn a_waiter_is_woken_only_when_it_can_go_on() {
        let (a, b) = (target(), target());
        let fa = Waiting::Done(address(&a.left));
        assert!(!Waiting::Nothing.wakes(0, &a.left, 0));
        // Waiting for room: not while more than the low mark is held.
        assert!(!Waiting::Room(4 << 20).wakes((4 << 20) + 1, &a.left, 3));
        assert!(Waiting::Room(4 << 20).wakes(4 << 20, &a.left, 3));
        // Waiting for a file: not for another file's batch, nor before its last one.
        assert!(!fa.wakes(0, &b.left, 0));
        assert!(!fa.wakes(0, &a.left, 1));
        assert!(fa.wakes(8 << 20, &a.left, 0));
    }

    #[test]
    fn reserving_past_the_budget_waits_for_half_of_it() {
        let q = Queue::new(false, 8, 4);
        q.reserve(6);
        let shared = Arc::clone(&q.shared);
        let t = target();
        t.left.fetch_add(3, Ordering::AcqRel);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(|| {
                q.reserve(3);
                let _ = tx.send(q.shared.lock().bytes);
            });
            // 6 of 8 held: 3 more must wait until at most 4 (8 - max(3, 8 / 2)) are held.
            while shared.lock().waiting == Waiting::Nothing {
                std::thread::yield_now();
            }
            shared.lock().bytes = 7;
            shared.batch_done(&t.left, 2);
            // A waiter that went on would have sent by then (it cannot send when it did not).
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert!(rx.try_recv().is_err(), "woken with 5 of 8 held");
            shared.batch_done(&t.left, 1);
            assert_eq!(rx.recv().ok(), Some(7));
        });
    }
}
