//! The regular files' pages on their way to the layout: read and compressed on the pool, in
//! write order, a bounded number of batches ahead of the thread that lays them out.
//!
//! Each batch is one job that opens its file, reads its pages and compresses each as if it
//! fits whole (the speculation the layout checks, see the module documentation). There is
//! no reader thread: on a machine with few cores every extra thread is a hand-off and a
//! context switch per batch, and reads are a small part of the work.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, Mutex};

use crate::compress::{Compressed, Compressors, COMPR_NONE};
use crate::crc::crc32;

use super::MkfsError;

/// Pages per job: one job (one pool task, one channel, one wake-up of the layout thread)
/// per 256 KiB rather than per page keeps the hand-offs off the profile (per-page jobs cost
/// ~12% of the CPU time in scheduler wake-ups on a 2-core machine, 64 KiB jobs ~3%).
const BATCH_BYTES: usize = 256 * 1024;

/// Consecutive pages of one file and each page's speculative compression.
pub(super) struct Batch {
    /// The pages' bytes, back to back; every page but a file's last is `page_size` long.
    pub data: Vec<u8>,
    /// Per page, in order: its compression as if the whole page fits.
    pub pages: Vec<Spec>,
}

/// One page of a [`Batch`] and its speculative compression.
pub(super) struct Spec {
    /// The page's length.
    pub len: usize,
    /// The compressor's result with the whole page as room.
    pub c: Compressed,
    /// The CRC of the bytes that node would store (its `data_crc`).
    pub crc: u32,
}

/// What a job found besides the pages.
struct Loaded {
    batch: Batch,
    /// The file's last job only: whether a byte lies past the listed size.
    grew: bool,
}

/// One queued job: the file it reads (its place in the write order), how much it asked for.
struct Job {
    file: usize,
    want: u64,
    last: bool,
    rx: Receiver<io::Result<Loaded>>,
}

/// The files of a build, fed to the pool in write order.
pub(super) struct Feed<'p> {
    files: Vec<(PathBuf, u64)>,
    page_size: usize,
    pool: &'p rayon::ThreadPool,
    compressors: Arc<Compressors>,
    depth: usize,
    /// Read buffers of laid-out batches, for the next jobs: initialised once, never zeroed
    /// again (at most one per job in flight, and one being laid out).
    spare: Arc<Mutex<Vec<Vec<u8>>>>,
    queue: VecDeque<Job>,
    /// The next file to queue and the bytes of it already queued.
    next: (usize, u64),
    /// The file being laid out: its index, bytes read, whether it changed, whether done.
    cur: Current,
}

#[derive(Default)]
struct Current {
    file: usize,
    read: u64,
    changed: bool,
    ended: bool,
}

impl<'p> Feed<'p> {
    /// A feed of `files` (host path, listed size) in write order; at most `depth` jobs are
    /// in flight.
    pub fn new(
        files: Vec<(PathBuf, u64)>,
        page_size: usize,
        pool: &'p rayon::ThreadPool,
        compressors: Arc<Compressors>,
        depth: usize,
    ) -> Self {
        Feed {
            files,
            page_size,
            pool,
            compressors,
            depth: depth.max(1),
            spare: Arc::default(),
            queue: VecDeque::new(),
            next: (0, 0),
            cur: Current::default(),
        }
    }

    /// The next batch of the current file, or `None` at its end (then [`Feed::end_file`]).
    pub fn next_batch(&mut self) -> Result<Option<Batch>, MkfsError> {
        if self.cur.ended {
            return Ok(None);
        }
        self.fill();
        let Some(job) = self.queue.pop_front() else {
            return Err(MkfsError::Internal("no more files to read".into()));
        };
        if job.file != self.cur.file {
            return Err(MkfsError::Internal("files read out of order".into()));
        }
        let read = job
            .rx
            .recv()
            .map_err(|_| MkfsError::Internal("compressor thread failed".into()))?
            .map_err(|source| MkfsError::Read {
                path: self.files[job.file].0.clone(),
                source,
            })?;
        let n = read.batch.data.len() as u64;
        self.cur.read += n;
        if n < job.want {
            // The end came before the listed size: the file shrank, and is read no further
            // (mkfs.jffs2 stops at its first short read); its queued jobs are dropped.
            self.cur.changed = true;
            self.cur.ended = true;
            while self.queue.front().is_some_and(|j| j.file == job.file) {
                self.queue.pop_front();
            }
        } else if job.last {
            // The listed size is read: mkfs.jffs2 would read once more (and get 0); a byte
            // there means the file grew.
            self.cur.changed = read.grew;
            self.cur.ended = true;
        }
        Ok(Some(read.batch))
    }

    /// Takes back a laid-out batch: its read buffer goes to the next job; the rest is
    /// dropped on the pool, where it was allocated, rather than on the layout thread.
    pub fn recycle(&self, batch: Batch) {
        let Batch { data, pages } = batch;
        if let Ok(mut spare) = self.spare.lock() {
            spare.push(data);
        }
        self.pool.spawn(move || drop(pages));
    }

    /// Ends the current file: `Some(bytes read)` when that differs from its listed size.
    pub fn end_file(&mut self) -> Option<u64> {
        let done = std::mem::take(&mut self.cur);
        self.cur.file = done.file + 1;
        done.changed.then_some(done.read)
    }

    /// Queues jobs until `depth` are in flight or every file is queued.
    fn fill(&mut self) {
        while self.queue.len() < self.depth {
            let (file, queued) = self.next;
            let Some((path, size)) = self.files.get(file) else {
                return;
            };
            // mkfs.jffs2 read()s page_size bytes at a time until read() returns 0
            // (§3.6.3); a page size of 0 therefore reads nothing at all (§8 B-4). No more
            // than the size the file was listed with is read (its inode's isize): a file
            // that grows meanwhile has its first `size` bytes stored, one that shrinks what
            // could be read; either is reported.
            let batch = match BATCH_BYTES.checked_div(self.page_size) {
                Some(pages) => (pages.max(1) * self.page_size) as u64,
                None => 0,
            };
            let want = batch.min(size.saturating_sub(queued));
            let last = batch == 0 || queued + want >= *size;
            let probe = (last && batch > 0).then_some(*size);
            let rx = self.spawn(path.clone(), queued, want, probe);
            self.queue.push_back(Job {
                file,
                want,
                last,
                rx,
            });
            self.next = if last {
                (file + 1, 0)
            } else {
                (file, queued + want)
            };
        }
    }

    /// One job on the pool: read `want` bytes of `path` at `offset` (and, for the file's
    /// last job, probe for a byte at `probe`), then compress every page.
    fn spawn(
        &self,
        path: PathBuf,
        offset: u64,
        want: u64,
        probe: Option<u64>,
    ) -> Receiver<io::Result<Loaded>> {
        let (tx, rx) = sync_channel(1);
        let c = Arc::clone(&self.compressors);
        let page_size = self.page_size;
        let spare = Arc::clone(&self.spare);
        self.pool.spawn(move || {
            let buf = spare
                .lock()
                .ok()
                .and_then(|mut s| s.pop())
                .unwrap_or_default();
            let read = read_at(buf, &path, offset, want, probe).map(|(data, grew)| {
                let pages = data
                    .chunks(page_size.max(1))
                    .map(|page| {
                        let c = c.compress(page, page.len());
                        let stored = if c.compr == COMPR_NONE { page } else { &c.data };
                        let crc = crc32(stored);
                        Spec {
                            len: page.len(),
                            c,
                            crc,
                        }
                    })
                    .collect();
                Loaded {
                    batch: Batch { data, pages },
                    grew,
                }
            });
            let _ = tx.send(read);
        });
        rx
    }
}

/// Reads up to `want` bytes of `path` from `offset` into `buf` (fewer only at the end of
/// the file), and whether a byte lies at `probe`.
fn read_at(
    mut buf: Vec<u8>,
    path: &PathBuf,
    offset: u64,
    want: u64,
    probe: Option<u64>,
) -> io::Result<(Vec<u8>, bool)> {
    let f = File::open(path)?;
    // Only what a recycled buffer lacks is zeroed.
    buf.resize(usize::try_from(want).map_err(io::Error::other)?, 0);
    let mut got = 0;
    while got < buf.len() {
        match f.read_at(&mut buf[got..], offset + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    buf.truncate(got);
    let grew = match probe {
        Some(at) if got as u64 == want => {
            let mut byte = [0u8; 1];
            matches!(f.read_at(&mut byte, at), Ok(1))
        }
        _ => false,
    };
    Ok((buf, grew))
}
