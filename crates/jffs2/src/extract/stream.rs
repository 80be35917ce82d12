//! Reading many files' data in order while decompressing ahead on all cores.
//!
//! The consumer (an extraction writer, or `--cat`) asks for the files one after the other,
//! in a fixed order, and receives each file's content as [`Chunk`]s in offset order, covering
//! `[0, size)` exactly: data, holes (fragment gaps, ZERO nodes, and decompressed data that is
//! all zeros) and unreadable ranges. Meanwhile rayon workers decompress the nodes of the
//! files that come next (every distinct node once, in first-use order), bounded by a byte
//! budget, so memory does not grow with file sizes and the output order never depends on the
//! number of threads.
//!
//! Each node is read as [`Fs::node_data`] reads it, the kernel's `jffs2_read_dnode`: node CRC,
//! data CRC, decompression to exactly `dsize` bytes, the kernel's allocation limit.

use std::collections::BTreeMap;
use std::io;
use std::sync::mpsc;
use std::sync::Arc;

use super::plan::FileData;
use crate::compress::COMPR_ZERO;
use crate::fs::{Fs, ReadError};

/// How far ahead the workers may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamOptions {
    /// Budget of decompressed bytes (node `dsize`s) decompressed ahead and not yet consumed
    /// (for an extraction: of the ranges handed out and not yet written). At least one job
    /// always runs, whatever its size.
    pub ahead_bytes: u64,
    /// Most jobs in flight.
    pub ahead_jobs: usize,
    /// Largest job, in node `dsize` bytes (jobs group consecutive nodes of one file).
    pub job_bytes: u64,
    /// Decompressed data kept for fragments still to come (a node that shows through in
    /// several places) beyond which it is dropped and decompressed again when needed.
    pub held_bytes: u64,
    /// Decompress on the calling thread only.
    pub sequential: bool,
}

impl Default for StreamOptions {
    fn default() -> Self {
        StreamOptions {
            ahead_bytes: 8 << 20,
            ahead_jobs: 4096,
            job_bytes: 256 << 10,
            held_bytes: 64 << 20,
            sequential: false,
        }
    }
}

/// Decompressed data shared between the workers and the consumer.
#[derive(Debug, Clone)]
pub struct Bytes {
    data: Arc<JobBuf>,
    start: usize,
    end: usize,
}

impl Bytes {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.data.v.get(self.start..self.end).unwrap_or(&[])
    }

    /// Number of bytes.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }
}

/// A job's buffer, given back to its [`Recycler`] when the last [`Bytes`] of it is dropped
/// (once its data is written).
#[derive(Debug)]
struct JobBuf {
    v: Vec<u8>,
    home: Option<Arc<Recycler>>,
}

impl Drop for JobBuf {
    fn drop(&mut self) {
        if let Some(home) = &self.home {
            home.give(std::mem::take(&mut self.v));
        }
    }
}

/// Job buffers given back, for the next jobs. Buffers of a job's size are above the
/// allocator's mapping threshold (`src/lib.rs`): each new one was mapped, zero-filled page by
/// page as it was written, and unmapped once written — 7 % of an extraction's CPU. Reused,
/// they cost none of that; the peak is unchanged (a buffer is kept only once free), and at
/// most [`RECYCLED_MAX`] are kept.
#[derive(Debug, Default)]
struct Recycler {
    free: std::sync::Mutex<Vec<Vec<u8>>>,
}

/// Most free buffers a [`Recycler`] keeps (each at most twice [`PREALLOC_MAX`]).
const RECYCLED_MAX: usize = 16;

impl Recycler {
    /// An empty buffer with room for `room` bytes.
    fn take(&self, room: usize) -> Vec<u8> {
        let v = self.free.lock().ok().and_then(|mut f| f.pop());
        match v {
            Some(mut v) => {
                v.reserve(room);
                v
            }
            None => Vec::with_capacity(room),
        }
    }

    fn give(&self, mut v: Vec<u8>) {
        if v.capacity() == 0 || v.capacity() as u64 > 2 * PREALLOC_MAX {
            return;
        }
        v.clear();
        if let Ok(mut f) = self.free.lock() {
            if f.len() < RECYCLED_MAX {
                f.push(v);
            }
        }
    }
}

/// A piece of a file, in offset order.
#[derive(Debug, Clone)]
pub enum Chunk {
    /// Data at `offset`.
    Data {
        /// File offset.
        offset: u64,
        /// The bytes.
        bytes: Bytes,
    },
    /// `len` zero bytes at `offset`: a hole, a ZERO node, or data that is all zeros.
    Zeros {
        /// File offset.
        offset: u64,
        /// Length.
        len: u64,
    },
    /// `len` bytes at `offset` that cannot be read (the kernel's `read()` fails with -EIO
    /// there).
    Unreadable {
        /// File offset.
        offset: u64,
        /// Length.
        len: u64,
        /// Why.
        error: ReadError,
    },
}

/// What a worker made of one node.
#[derive(Debug, Clone)]
enum Out {
    Zeros,
    /// Exactly the node's `dsize` bytes (in a buffer the nodes of one job share).
    Data(Bytes),
    Error(ReadError),
}

/// Whether `b` is all zeros (word at a time).
fn all_zero(b: &[u8]) -> bool {
    let mut chunks = b.chunks_exact(64);
    for c in &mut chunks {
        let mut acc = 0u64;
        for w in c.chunks_exact(8) {
            let mut x = [0u8; 8];
            x.copy_from_slice(w);
            acc |= u64::from_ne_bytes(x);
        }
        if acc != 0 {
            return false;
        }
    }
    chunks.remainder().iter().all(|&x| x == 0)
}

/// The most nodes in one job: tiny nodes (a byte each) would otherwise make jobs, and the
/// bookkeeping of their results, of a quarter of a million nodes.
const JOB_NODES: usize = 512;

/// The most a job's buffer is given before its nodes are read.
const PREALLOC_MAX: u64 = 1 << 20;

/// Where a node's bytes lie in its job's buffer (`None`: a hole), or why it cannot be read.
type Span = Result<Option<(usize, usize)>, ReadError>;

/// Node `k` of `file` alone.
fn decode(fs: &Fs<'_>, file: &FileData, k: usize, home: &Arc<Recycler>) -> Out {
    decode_job(fs, file, vec![k], home)
        .pop()
        .map_or(Out::Zeros, |(_, out)| out)
}

/// Nodes `nodes` of `file`, decompressed into one buffer (one allocation, and one free by
/// the consumer, per job rather than per node: with a node of 4 KiB, per-node buffers
/// allocated by the workers and freed by the consumer kept the allocator's locks busy).
fn decode_job(fs: &Fs<'_>, file: &FileData, nodes: Vec<usize>, home: &Arc<Recycler>) -> JobResult {
    // Room for the sizes the nodes claim (a job's budget, or its one larger node), up to a
    // limit: a lying `dsize` must not allocate (the buffer grows as data actually comes).
    let room: u64 = nodes.iter().map(|&k| cost(file, k)).sum();
    let mut buf: Vec<u8> = home.take(room.min(PREALLOC_MAX) as usize);
    let mut spans: Vec<(usize, Span)> = Vec::new();
    for k in nodes {
        let Some(dn) = file.nodes.get(k) else {
            spans.push((k, Ok(None)));
            continue;
        };
        let at = buf.len();
        let span = match fs.node_data_append(dn, &mut buf) {
            // A ZERO node is never materialised; data that is all zeros is a hole too.
            Ok(Some(_)) => Ok(None),
            Ok(None) if all_zero(&buf[at..]) => {
                buf.truncate(at);
                Ok(None)
            }
            Ok(None) => Ok(Some((at, buf.len()))),
            Err(e) => Err(e),
        };
        spans.push((k, span));
    }
    let data = Arc::new(JobBuf {
        v: buf,
        home: Some(Arc::clone(home)),
    });
    spans
        .into_iter()
        .map(|(k, span)| {
            let out = match span {
                Ok(None) => Out::Zeros,
                Ok(Some((start, end))) => Out::Data(Bytes {
                    data: Arc::clone(&data),
                    start,
                    end,
                }),
                Err(e) => Out::Error(e),
            };
            (k, out)
        })
        .collect()
}

/// Bytes a node occupies once decompressed (0 for a ZERO node, which is never materialised).
fn cost(file: &FileData, k: usize) -> u64 {
    file.nodes
        .get(k)
        .map(|n| {
            if n.compr == COMPR_ZERO {
                0
            } else {
                u64::from(n.size)
            }
        })
        .unwrap_or(0)
}

/// The distinct nodes of a file in the order its fragments first use them, and for each node
/// the index of the last fragment that uses it.
fn node_order(file: &FileData) -> (Vec<usize>, Vec<usize>) {
    let mut last = vec![usize::MAX; file.nodes.len()];
    let mut order = Vec::new();
    for (fi, f) in file.frags.iter().enumerate() {
        if let Some(l) = last.get_mut(f.node) {
            if *l == usize::MAX {
                order.push(f.node);
            }
            *l = fi;
        }
    }
    (order, last)
}

type JobResult = Vec<(usize, Out)>;

/// The producer's position: the next node to hand to a worker.
struct Cursor {
    file: usize,
    order: Vec<usize>,
    pos: usize,
}

/// Hands out files' contents in order; see the module documentation. Created by [`stream`].
pub struct Reader<'s, 'f, 'a> {
    fs: &'f Fs<'a>,
    files: &'f [&'f FileData],
    opts: StreamOptions,
    scope: Option<&'s rayon::Scope<'f>>,
    tx: mpsc::Sender<(u64, JobResult)>,
    rx: mpsc::Receiver<(u64, JobResult)>,
    cursor: Cursor,
    /// Jobs handed out: (seq, file, dsize total).
    issued: std::collections::VecDeque<(u64, usize, u64)>,
    next_seq: u64,
    ahead: u64,
    /// Results received out of order.
    parked: BTreeMap<u64, JobResult>,
    /// Next file the consumer may ask for.
    next_file: usize,
    /// The jobs' buffers, once written.
    buffers: Arc<Recycler>,
}

impl<'s, 'f, 'a> Reader<'s, 'f, 'a> {
    /// Starts decompression jobs until the budget is used.
    fn refill(&mut self) {
        let Some(scope) = self.scope else {
            return;
        };
        while self.issued.len() < self.opts.ahead_jobs
            && (self.issued.is_empty() || self.ahead < self.opts.ahead_bytes)
        {
            // Advance to a file with nodes left.
            while self.cursor.pos >= self.cursor.order.len() {
                self.cursor.file += 1;
                let Some(f) = self.files.get(self.cursor.file) else {
                    return;
                };
                self.cursor.order = node_order(f).0;
                self.cursor.pos = 0;
            }
            let fi = self.cursor.file;
            let file: &'f FileData = self.files[fi];
            let mut nodes = Vec::new();
            let mut bytes = 0u64;
            while let Some(&k) = self.cursor.order.get(self.cursor.pos) {
                let c = cost(file, k);
                if !nodes.is_empty()
                    && (bytes + c > self.opts.job_bytes || nodes.len() >= JOB_NODES)
                {
                    break;
                }
                nodes.push(k);
                bytes += c;
                self.cursor.pos += 1;
            }
            let seq = self.next_seq;
            self.next_seq += 1;
            self.issued.push_back((seq, fi, bytes));
            self.ahead += bytes;
            let tx = self.tx.clone();
            let fs = self.fs;
            let home = Arc::clone(&self.buffers);
            scope.spawn(move |_| {
                let out = decode_job(fs, file, nodes, &home);
                // The receiver is gone only when the consumer stopped early.
                let _ = tx.send((seq, out));
            });
        }
    }

    /// The next job's results (file index, node results), in issue order.
    fn next_job(&mut self) -> Option<(usize, JobResult)> {
        self.refill();
        let &(seq, fi, bytes) = self.issued.front()?;
        let res = loop {
            if let Some(r) = self.parked.remove(&seq) {
                break r;
            }
            match self.rx.recv() {
                Ok((s, r)) if s == seq => break r,
                Ok((s, r)) => {
                    self.parked.insert(s, r);
                }
                // Cannot happen while `self.tx` lives; treat as "nothing more".
                Err(_) => return None,
            }
        };
        self.issued.pop_front();
        self.ahead -= bytes;
        self.refill();
        Some((fi, res))
    }

    /// Streams file `index` (which must be the next one: files are read in order; skipping
    /// one is allowed) into `sink`, in offset order, covering `[0, size)`.
    pub fn read_file(
        &mut self,
        index: usize,
        mut sink: impl FnMut(Chunk) -> io::Result<()>,
    ) -> io::Result<()> {
        if index < self.next_file {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "files must be read in order",
            ));
        }
        // Drop the results of skipped files.
        while self.issued.front().is_some_and(|&(_, fi, _)| fi < index) {
            let _ = self.next_job();
        }
        self.next_file = index + 1;
        let Some(&file) = self.files.get(index) else {
            return Ok(());
        };
        let mut held = Held::new(file);
        let held_budget = self.opts.held_bytes;
        walk(
            file,
            0,
            0,
            file.size,
            |k, fi| {
                self.make_available(index, file, &mut held, k);
                let out = held.get(k).cloned().unwrap_or(Out::Zeros);
                held.used(k, fi, held_budget);
                out
            },
            &mut sink,
        )?;
        // Receive whatever of this file is still in flight (nodes only used by fragments
        // past the size).
        while self.issued.front().is_some_and(|&(_, fi, _)| fi == index) {
            let _ = self.next_job();
        }
        Ok(())
    }

    /// Makes node `k` of file `index` available in `held`: received from the workers, or
    /// decompressed here (sequential mode, or dropped for the held budget).
    fn make_available(&mut self, index: usize, file: &FileData, held: &mut Held, k: usize) {
        if held.get(k).is_some() {
            return;
        }
        let seen = held.received.get(k).copied().unwrap_or(true);
        if !seen && self.scope.is_some() {
            // It is the next node of this file in first-use order: receive results
            // until it arrives.
            while !held.received.get(k).copied().unwrap_or(true) {
                let Some((jfi, res)) = self.next_job() else {
                    break;
                };
                if jfi != index {
                    continue;
                }
                for (n, out) in res {
                    held.insert(file, n, out);
                }
            }
        }
        if held.get(k).is_none() {
            // Sequential mode, or dropped for the held budget: decompress here.
            held.insert(file, k, decode(self.fs, file, k, &self.buffers));
        }
    }
}

/// The decompressed nodes of the file being read, kept for its fragments still to come.
struct Held {
    /// Node results by node index, with their cost (indexed, not hashed: this is the
    /// extraction's own thread, which every file goes through).
    nodes: Vec<Option<(Out, u64)>>,
    /// The indices of `nodes` that hold something.
    full: Vec<usize>,
    /// The sum of the costs in `nodes`.
    bytes: u64,
    /// Whether each node's result has been received (or decompressed here).
    received: Vec<bool>,
    /// For each node, the index of the last fragment that uses it.
    last: Vec<usize>,
}

impl Held {
    /// Nothing held yet of `file`.
    fn new(file: &FileData) -> Held {
        let (_, last) = node_order(file);
        Held {
            nodes: vec![None; file.nodes.len()],
            full: Vec::new(),
            bytes: 0,
            received: vec![false; file.nodes.len()],
            last,
        }
    }

    /// Node `k`'s result, if held.
    fn get(&self, k: usize) -> Option<&Out> {
        self.nodes.get(k)?.as_ref().map(|(o, _)| o)
    }

    /// Holds node `n`'s result, marking it received.
    fn insert(&mut self, file: &FileData, n: usize, out: Out) {
        if let Some(r) = self.received.get_mut(n) {
            *r = true;
        }
        // Held data keeps its whole job's buffer: charged as such, so that what the
        // budget keeps is bounded however the nodes share buffers.
        let c = match &out {
            Out::Data(b) => cost(file, n).max(b.data.v.len() as u64),
            _ => cost(file, n),
        };
        // A node the file does not have is never asked for (it reads as a hole).
        let Some(slot) = self.nodes.get_mut(n) else {
            return;
        };
        match slot.replace((out, c)) {
            Some((_, old)) => self.bytes -= old,
            None => self.full.push(n),
        }
        self.bytes += c;
    }

    /// After fragment `fi` (of node `k`) is emitted: drops node `k` if no later fragment uses
    /// it, and everything when over `budget` bytes.
    fn used(&mut self, k: usize, fi: usize, budget: u64) {
        if self.last.get(k) == Some(&fi) {
            if let Some((_, c)) = self.nodes.get_mut(k).and_then(Option::take) {
                self.bytes -= c;
            }
        }
        // Over budget: drop what is held (it is decompressed again if needed).
        if self.bytes > budget {
            for n in self.full.drain(..) {
                if let Some(slot) = self.nodes.get_mut(n) {
                    *slot = None;
                }
            }
            self.bytes = 0;
        }
    }
}

/// The chunk for file range `[pos, stop)` of a fragment of a node at file offset `dn_ofs`
/// whose decompressed result is `out`.
fn fragment_chunk(out: Out, dn_ofs: u64, pos: u64, stop: u64) -> Chunk {
    match out {
        Out::Zeros => Chunk::Zeros {
            offset: pos,
            len: stop - pos,
        },
        Out::Error(error) => Chunk::Unreadable {
            offset: pos,
            len: stop - pos,
            error,
        },
        Out::Data(d) => {
            let rel = |x: u64| {
                x.checked_sub(dn_ofs)
                    .and_then(|v| usize::try_from(v).ok())
                    .unwrap_or(usize::MAX)
            };
            let (a, b) = (rel(pos), rel(stop));
            if b <= d.len() && a <= b {
                Chunk::Data {
                    offset: pos,
                    bytes: Bytes {
                        data: d.data,
                        start: d.start + a,
                        end: d.start + b,
                    },
                }
            } else {
                // Cannot happen: a node's fragments lie within its dsize.
                Chunk::Zeros {
                    offset: pos,
                    len: stop - pos,
                }
            }
        }
    }
}

/// Emits `file`'s range `[lo, hi)` into `sink` as chunks in offset order, from fragment
/// `first` (the first that ends past `lo`): gaps as zeros, each fragment `fi` from its node
/// `k`'s result (`get(k, fi)`), zeros up to `hi`. A whole file is the range
/// `[0, size)` from fragment 0; a job of an extraction, a range that starts and ends at
/// fragment boundaries (see [`ranges`]).
fn walk<S>(
    file: &FileData,
    first: usize,
    lo: u64,
    hi: u64,
    mut get: impl FnMut(usize, usize) -> Out,
    sink: &mut S,
) -> io::Result<()>
where
    S: FnMut(Chunk) -> io::Result<()>,
{
    let mut pos = lo;
    for (fi, f) in file.frags.iter().enumerate().skip(first) {
        if pos >= hi {
            break;
        }
        if f.start > pos {
            let z = f.start.min(hi) - pos;
            sink(Chunk::Zeros {
                offset: pos,
                len: z,
            })?;
            pos += z;
            if pos >= hi {
                break;
            }
        }
        let stop = f.end.min(hi);
        if stop <= pos {
            continue;
        }
        let k = f.node;
        let out = get(k, fi);
        let dn_ofs = file.nodes.get(k).map(|n| u64::from(n.ofs)).unwrap_or(0);
        sink(fragment_chunk(out, dn_ofs, pos, stop))?;
        pos = stop;
    }
    if pos < hi {
        sink(Chunk::Zeros {
            offset: pos,
            len: hi - pos,
        })?;
    }
    Ok(())
}

/// A part of a file read on its own: its range `[lo, hi)`, from fragment `first` to (not
/// including) `end`, whose nodes decompress to about `cost` bytes. `cost` adds each
/// fragment's node, so a node that shows through in several fragments counts more than once:
/// as a memory budget it errs on the safe side (read_range decompresses such a node once).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Range {
    pub first: usize,
    pub end: usize,
    pub lo: u64,
    pub hi: u64,
    pub cost: u64,
}

/// `file` cut at fragment boundaries into ranges of about `job_bytes` decompressed bytes (and
/// at most [`JOB_NODES`] fragments), covering `[0, size)`: at least one, even for an empty
/// file.
pub(crate) fn ranges(file: &FileData, job_bytes: u64) -> Vec<Range> {
    let mut out = Vec::new();
    let mut cur = Range {
        first: 0,
        end: 0,
        lo: 0,
        hi: file.size,
        cost: 0,
    };
    for (fi, f) in file.frags.iter().enumerate() {
        if f.start >= file.size {
            break;
        }
        let c = cost(file, f.node);
        if fi > cur.first && (cur.cost + c > job_bytes || fi - cur.first >= JOB_NODES) {
            // Fragments are disjoint and in order: nothing of `cur` lies past `f.start`.
            let cut = f.start.max(cur.lo);
            out.push(Range {
                end: fi,
                hi: cut,
                ..cur
            });
            cur = Range {
                first: fi,
                end: fi,
                lo: cut,
                hi: file.size,
                cost: 0,
            };
        }
        cur.cost += c;
        cur.end = fi + 1;
    }
    out.push(cur);
    out
}

/// Buffers for [`read_range`]'s decompression, shared by the jobs of one extraction.
#[derive(Debug, Clone, Default)]
pub(crate) struct Buffers(Arc<Recycler>);

/// Emits range `r` of `file` into `sink` (what [`Reader::read_file`] emits for those bytes),
/// decompressing its nodes here, each once, into one buffer.
pub(crate) fn read_range(
    fs: &Fs<'_>,
    file: &FileData,
    r: Range,
    buffers: &Buffers,
    mut sink: impl FnMut(Chunk) -> io::Result<()>,
) -> io::Result<()> {
    let mut nodes: Vec<usize> = file
        .frags
        .get(r.first..r.end)
        .unwrap_or(&[])
        .iter()
        .filter(|f| f.start < r.hi && f.end > r.lo)
        .map(|f| f.node)
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    let mut res = decode_job(fs, file, nodes, &buffers.0);
    res.sort_unstable_by_key(|(k, _)| *k);
    let get = |k: usize, _| {
        res.binary_search_by_key(&k, |(n, _)| *n)
            .ok()
            .and_then(|i| res.get(i))
            .map_or(Out::Zeros, |(_, o)| o.clone())
    };
    walk(file, r.first, r.lo, r.hi, get, &mut sink)
}

fn reader<'s, 'f, 'a>(
    fs: &'f Fs<'a>,
    files: &'f [&'f FileData],
    opts: StreamOptions,
    scope: Option<&'s rayon::Scope<'f>>,
) -> Reader<'s, 'f, 'a> {
    let (tx, rx) = mpsc::channel();
    Reader {
        fs,
        files,
        opts,
        scope,
        tx,
        rx,
        cursor: Cursor {
            file: 0,
            order: files.first().map(|f| node_order(f).0).unwrap_or_default(),
            pos: 0,
        },
        issued: std::collections::VecDeque::new(),
        next_seq: 0,
        ahead: 0,
        parked: BTreeMap::new(),
        next_file: 0,
        buffers: Arc::default(),
    }
}

/// Runs `consume` with a [`Reader`] over `files`, decompressing ahead on rayon's pool (or on
/// the calling thread with [`StreamOptions::sequential`]). The calling thread is not a pool
/// worker: it consumes while the workers decompress. Returns what `consume` returns, after
/// every started job has finished.
pub fn stream<'f, 'a, R>(
    fs: &'f Fs<'a>,
    files: &'f [&'f FileData],
    opts: StreamOptions,
    consume: impl FnOnce(&mut Reader<'_, 'f, 'a>) -> R,
) -> R
where
    'a: 'f,
{
    if opts.sequential {
        let mut r = reader(fs, files, opts, None);
        return consume(&mut r);
    }
    rayon::in_place_scope(|s| {
        let mut r = reader(fs, files, opts, Some(s));
        consume(&mut r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_check() {
        assert!(all_zero(&[]));
        assert!(all_zero(&[0; 4096]));
        let mut v = vec![0u8; 4097];
        v[4096] = 1;
        assert!(!all_zero(&v));
        v[4096] = 0;
        v[7] = 1;
        assert!(!all_zero(&v));
    }
}
