//! The planning thread ([`Planner::stream`]): the inodes read, the tree Linux shows walked,
//! and the items planned, handed to the writing side in batches while earlier ones are
//! written.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::mpsc::{Receiver, SyncSender};

use rayon::prelude::*;

use super::{
    Batch, ConvertError, ConvertReport, Dropped, Item, Planner, Xattrs, AHEAD, BIG, CHUNK_NODES,
    PLAN_CHUNK,
};
use crate::format::{hdr, HEADER_SIZE, NODE_ACCURATE, ROOT_INO};
use crate::fs::{Dirent, Fs, FsError, Inode, InodeKind};
use crate::scan::ScanOptions;

/// A chunk of inodes read: each with what reading it gave, and its items when planned at
/// once.
type Got = Vec<(u32, Read, Option<Vec<Item>>)>;

/// A directory on the walk's stack: its number and the entries still to walk (reversed).
type Frame = (u32, Vec<Dirent>);

impl<'f, 'a> Planner<'f, 'a> {
    /// Plans every item, in write order, and hands them to `tx` in batches while they are
    /// written (the planning thread). Which inodes Linux shows, and which directory
    /// entries, is known only once every inode is read; writing starts long before:
    ///
    /// 1. the root and every inode a `DT_DIR` entry names are read first (on all cores);
    /// 2. the other inodes are read in inode order, a chunk at a time on all cores, and a
    ///    readable non-directory that a directory read in step 1 reaches is planned at
    ///    once (whatever else is read later, Linux shows it: more directories only reach
    ///    more);
    /// 3. with everything read, the tree is walked as Linux shows it (what cannot be read
    ///    and what no directory reaches is dropped and reported), and the rest — the
    ///    directories, with the entries they keep, and whatever step 2 could not place —
    ///    is planned in inode order.
    ///
    /// The output depends only on the image, never on timing or the number of threads.
    /// Returns the inodes, entries, xattrs and drops of the report.
    pub(super) fn stream(
        &self,
        pool: &rayon::ThreadPool,
        tx: &SyncSender<Batch>,
    ) -> Result<ConvertReport, ConvertError> {
        let fs = self.fs;
        // 1. The directories (as the entries name them).
        let (dirs, others): (Vec<u32>, Vec<u32>) = fs
            .live_inodes()
            .filter(|&i| i != 1)
            .partition(|&i| fs.named_as_dir(i));
        let reads = self.read_dirs(pool, &dirs)?;
        let mut s = Streaming {
            planner: self,
            pool,
            tx,
            reads,
            x: Xattrs::default(),
            report: ConvertReport::default(),
        };
        if !s.read_others(&others)? {
            return Ok(s.report);
        }
        let walk = s.walk();
        s.account(&walk)?;
        s.plan_rest(&walk);
        // Reports made while planning (data CRCs), before the tree was known, get their path.
        for d in s.report.dropped.iter_mut().filter(|d| d.path.is_none()) {
            if walk.named.contains_key(&d.ino) {
                d.path = Some(path_of(&walk.named, d.ino));
            }
        }
        Ok(s.report)
    }

    /// Step 1: reads the root (an error if Linux cannot) and the directories `dirs` (on
    /// all cores), so that what they reach is known before the other inodes are read.
    fn read_dirs(
        &self,
        pool: &rayon::ThreadPool,
        dirs: &[u32],
    ) -> Result<HashMap<u32, Read>, ConvertError> {
        let fs = self.fs;
        let root = fs
            .read_inode(ROOT_INO)
            .map_err(ConvertError::RootUnreadable)?;
        let mut reads: HashMap<u32, Read> = pool.install(|| {
            dirs.par_iter()
                .map(|&i| (i, Read::of(fs.read_inode(i))))
                .collect()
        });
        reads.insert(1, Read::of(Ok(root)));
        Ok(reads)
    }

    /// Reads inode `i` in step 2; a non-directory already known to be shown (`early`) is
    /// planned at once.
    fn read_plan(&self, i: u32, early: &HashSet<u32>) -> (u32, Read, Option<Vec<Item>>) {
        let none: BTreeMap<u32, Vec<Dirent>> = BTreeMap::new();
        match self.fs.read_inode(i) {
            Ok(inode) if inode.kind != InodeKind::Dir && early.contains(&i) => {
                let items = self.items(&inode, &none);
                (i, Read::Held(Box::new(inode)), Some(items))
            }
            r => (i, Read::of(r), None),
        }
    }

    /// The nodes of inode `i` the scan found: what reading it costs.
    fn nodes(&self, i: &u32) -> usize {
        self.fs.scan().inodes.get(i).map_or(0, |c| c.nodes.len())
    }

    /// Reading work of the inodes `c`: nodes, and one per inode.
    fn work(&self, c: &[u32]) -> usize {
        c.iter().map(|i| self.nodes(i) + 1).sum::<usize>()
    }
}

/// The chunks step 2 reads, and the order it reads them in.
struct Chunks<'c> {
    /// Chunks of inodes, in write order.
    list: Vec<&'c [u32]>,
    /// The order chunks are read in.
    reading: Vec<usize>,
}

impl<'c> Chunks<'c> {
    /// Chunks of about the same work, taken in order: the large files (one chunk)
    /// halfway through the small files' nodes. The large chunk is read first, the others
    /// beside it, so that its writing overlaps the reading of the second half and the
    /// writing of the first half its reading.
    fn new(planner: &Planner<'_, '_>, small: &'c [u32], big: &'c [u32]) -> Self {
        let mut chunks: Vec<&[u32]> = Vec::new();
        let half = planner.work(small) / 2;
        let mut large_at = None;
        let (mut from, mut chunk, mut sum) = (0usize, 0usize, 0usize);
        for (k, i) in small.iter().enumerate() {
            chunk += planner.nodes(i) + 1;
            if k + 1 - from >= PLAN_CHUNK || chunk >= CHUNK_NODES || k + 1 == small.len() {
                chunks.push(&small[from..=k]);
                from = k + 1;
                sum += chunk;
                chunk = 0;
                if sum >= half && large_at.is_none() && !big.is_empty() {
                    large_at = Some(chunks.len());
                    chunks.push(big);
                }
            }
        }
        if large_at.is_none() && !big.is_empty() {
            large_at = Some(chunks.len());
            chunks.push(big);
        }
        // The order chunks are read in.
        let reading: Vec<usize> = large_at
            .into_iter()
            .chain((0..chunks.len()).filter(|&k| Some(k) != large_at))
            .collect();
        Chunks {
            list: chunks,
            reading,
        }
    }
}

/// The planning thread's state: what is read so far, the xattrs planned, the report.
struct Streaming<'s, 'f, 'a> {
    planner: &'s Planner<'f, 'a>,
    pool: &'s rayon::ThreadPool,
    tx: &'s SyncSender<Batch>,
    /// What reading each inode gave.
    reads: HashMap<u32, Read>,
    x: Xattrs,
    report: ConvertReport,
}

impl Streaming<'_, '_, '_> {
    /// Step 2: the other inodes; those already known to be shown are planned at once. The
    /// files of many nodes are the longest reads: they are read first (their data checks
    /// on all cores, the small files' chunks beside) and written halfway. False if the
    /// writing side stopped.
    fn read_others(&mut self, others: &[u32]) -> Result<bool, ConvertError> {
        let planner = self.planner;
        let early = reached_files(&self.reads);
        let all: usize = others.iter().map(|i| planner.nodes(i)).sum();
        let big_at = BIG.max(all / 8);
        let (big, small): (Vec<u32>, Vec<u32>) =
            others.iter().partition(|i| planner.nodes(i) >= big_at);
        let chunks = Chunks::new(planner, &small, &big);
        // In flight: AHEAD chunks past the one awaited, or as many nodes as the large
        // files hold (read while they are: the pool's other threads would wait).
        // Only when nodes are copied as they are: rounds to compress or byte-swap need the
        // pool themselves (a deep read-ahead makes them wait, and costs a tenth more CPU
        // time when recompressing, measured with LZO).
        let light = !planner.cfg.recompress
            && planner.fs.scan().geometry.endian == planner.cfg.layout.endian;
        let window = if light { planner.work(&big) } else { 0 };
        self.read_chunks(&chunks, &early, window)
    }

    /// Reads the chunks on the pool, as far ahead as `window` allows, and takes them in
    /// order as they are done. False if the writing side stopped.
    fn read_chunks(
        &mut self,
        chunks: &Chunks<'_>,
        early: &HashSet<u32>,
        window: usize,
    ) -> Result<bool, ConvertError> {
        let planner = self.planner;
        self.pool
            .in_place_scope(|ps| -> Result<bool, ConvertError> {
                let (rtx, rrx) = std::sync::mpsc::channel();
                let spawn = |k: usize| {
                    let rtx = rtx.clone();
                    let chunk = chunks.list[k];
                    ps.spawn(move |_| {
                        // A panic is answered (it would leave the receiver waiting).
                        let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            chunk
                                .par_iter()
                                .map(|&i| planner.read_plan(i, early))
                                .collect::<Vec<_>>()
                        }));
                        let _ = rtx.send((k, got.ok()));
                    });
                };
                let (mut next, mut inflight) = (0usize, 0usize);
                let mut started = vec![false; chunks.list.len()];
                let mut done: BTreeMap<usize, Got> = BTreeMap::new();
                for k in 0..chunks.list.len() {
                    // Always as far as the chunk awaited.
                    while let Some(&r) = chunks.reading.get(next) {
                        if started[k] && r >= k + AHEAD && inflight >= window {
                            break;
                        }
                        inflight += planner.work(chunks.list[r]);
                        spawn(r);
                        started[r] = true;
                        next += 1;
                    }
                    let got = awaited(&mut done, &rrx, k)?;
                    inflight = inflight.saturating_sub(planner.work(chunks.list[k]));
                    if !self.take(got) {
                        return Ok(false);
                    }
                }
                Ok(true)
            })
    }

    /// Takes a chunk read: the inodes planned at once go to the writing side in one batch,
    /// the others wait in `reads`. False if the writing side stopped.
    fn take(&mut self, got: Got) -> bool {
        let mut batch = Batch::default();
        for (ino, read, items) in got {
            match (read, items) {
                (Read::Held(inode), Some(items)) => {
                    self.planner
                        .add(&mut batch, &inode, items, &mut self.x, &mut self.report);
                    self.reads.insert(ino, Read::Sent(inode.kind));
                }
                (read, _) => {
                    self.reads.insert(ino, read);
                }
            }
        }
        // An error: the writing side stopped (on an error, which it reports).
        self.tx.send(batch).is_ok()
    }

    /// Step 3: the tree Linux shows, walked as the readers walk it (depth first, entries in
    /// directory order: `jffs2-dump --list`, `--extract`). A directory keeps one name,
    /// the first one reached: a further entry naming a directory already shown (a
    /// cycle back to an ancestor, the root included, or a second parent) is left out
    /// and reported, so that the output has a tree where the input had a graph.
    fn walk(&mut self) -> Walk {
        let fs = self.planner.fs;
        let mut t = Walk {
            shown: BTreeMap::new(),
            dents: BTreeMap::new(),
            named: HashMap::new(),
        };
        t.shown.insert(1, InodeKind::Dir);
        // A directory's entries are taken, not copied: it is descended once, and from here on
        // only the entries kept are planned (a million entries are a million names).
        let root = match self.reads.get_mut(&1) {
            Some(Read::Dir(d)) => children(&mut d.dents),
            Some(Read::Held(d)) if d.kind == InodeKind::Dir => children(&mut d.dents),
            _ => Vec::new(),
        };
        t.dents.insert(1, Vec::with_capacity(root.len()));
        let mut stack: Vec<Frame> = vec![(1, root)];
        while let Some((dir, rest)) = stack.last_mut() {
            let dir = *dir;
            let Some(de) = rest.pop() else {
                stack.pop();
                continue;
            };
            if rest.is_empty() {
                // Done with this directory once this entry is: its frame goes now, so that
                // a chain of 100 000 directories is not 100 000 frames.
                stack.pop();
            }
            if let Some(&kind) = t.shown.get(&de.ino) {
                t.again(dir, de, kind, &mut self.report);
                continue;
            }
            // Not a live inode if not read yet: read as Linux would look it up.
            let read = self
                .reads
                .entry(de.ino)
                .or_insert_with(|| Read::of(fs.read_inode(de.ino)));
            t.reach(dir, de, read, &mut stack, &mut self.report);
        }
        t
    }

    /// Reports what no directory reaches and what summaries hide, counts the inodes and
    /// entries shown, and checks that everything shown was read and everything sent is
    /// shown.
    fn account(&mut self, t: &Walk) -> Result<(), ConvertError> {
        let fs = self.planner.fs;
        let report = &mut self.report;
        for ino in fs.live_inodes() {
            if !t.shown.contains_key(&ino) && !report.dropped.iter().any(|d| d.ino == ino) {
                report.dropped.push(Dropped {
                    ino,
                    path: None,
                    what: "the inode: no directory reaches it (Linux never shows it)".into(),
                });
            }
        }
        // Data lost to a bad CRC leaves the inode shown: its hidden nodes are still told.
        let named: Vec<u32> = report
            .dropped
            .iter()
            .filter(|d| !d.what.starts_with(super::losses::DATA))
            .map(|d| d.ino)
            .collect();
        report
            .dropped
            .extend(hidden_by_summaries(fs, &t.shown, &named));
        for (&ino, &kind) in &t.shown {
            report.inodes += 1;
            if kind == InodeKind::Dir {
                report.dirents += t.dents.get(&ino).map_or(0, |d| d.len() as u64);
            }
            if !matches!(
                self.reads.get(&ino),
                Some(Read::Held(_) | Read::Dir(_) | Read::Sent(_))
            ) {
                return Err(ConvertError::Internal(format!("inode {ino} shown unread")));
            }
        }
        for (ino, r) in &self.reads {
            if matches!(r, Read::Sent(_)) && !t.shown.contains_key(ino) {
                return Err(ConvertError::Internal(format!(
                    "inode {ino} written but not shown"
                )));
            }
        }
        Ok(())
    }

    /// Plans the rest (the inodes shown and not sent yet) and sends it.
    fn plan_rest(&mut self, t: &Walk) {
        let (planner, pool, tx) = (self.planner, self.pool, self.tx);
        let reads = &mut self.reads;
        // The rest, in inode order, taken a chunk at a time: moving them all out at once
        // would hold every directory's inode twice (here and in the map's table, which does
        // not shrink), the peak of a conversion of many directories.
        let mut held = t.shown.keys().filter_map(|ino| match reads.remove(ino) {
            Some(Read::Held(i)) => Some(*i),
            Some(Read::Dir(d)) => Some(d.inode()),
            _ => None,
        });
        loop {
            let chunk: Vec<Inode> = held.by_ref().take(PLAN_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            let per: Vec<Vec<Item>> = pool.install(|| {
                chunk
                    .par_iter()
                    .map(|inode| planner.items(inode, &t.dents))
                    .collect()
            });
            let mut batch = Batch::default();
            for (inode, items) in chunk.iter().zip(per) {
                planner.add(&mut batch, inode, items, &mut self.x, &mut self.report);
            }
            if tx.send(batch).is_err() {
                break;
            }
        }
    }
}

/// The chunk `k` read: chunks done are received (and kept in `done`) until it is one.
fn awaited(
    done: &mut BTreeMap<usize, Got>,
    rrx: &Receiver<(usize, Option<Got>)>,
    k: usize,
) -> Result<Got, ConvertError> {
    loop {
        if let Some(g) = done.remove(&k) {
            return Ok(g);
        }
        let failed = || ConvertError::Internal("a reading task failed".into());
        let (j, g) = rrx.recv().map_err(|_| failed())?;
        done.insert(j, g.ok_or_else(failed)?);
    }
}

/// A directory's entries, taken (not copied) and reversed, so that popping them walks them
/// in directory order.
fn children(d: &mut Vec<Dirent>) -> Vec<Dirent> {
    let mut v = std::mem::take(d);
    v.reverse();
    v
}

/// The tree Linux shows, as the walk of step 3 finds it.
struct Walk {
    /// The inodes shown, and their kinds.
    shown: BTreeMap<u32, InodeKind>,
    /// The entries each directory keeps.
    dents: BTreeMap<u32, Vec<Dirent>>,
    /// Where each shown inode was first reached (parent, name): paths are built only for
    /// what is reported (building every entry's would cost its depth each).
    named: HashMap<u32, (u32, crate::name::Name)>,
}

impl Walk {
    /// The path of the entry `name` of directory `dir`, for a report.
    fn path(&self, dir: u32, name: &[u8]) -> Vec<u8> {
        let mut p = path_of(&self.named, dir);
        p.push(b'/');
        p.extend_from_slice(name);
        p
    }

    /// An entry naming an inode already shown (of `kind`): kept for a file (a hard link),
    /// left out and reported for a directory.
    fn again(&mut self, dir: u32, de: Dirent, kind: InodeKind, report: &mut ConvertReport) {
        if kind == InodeKind::Dir {
            let first = path_of(&self.named, de.ino);
            let first = if first.is_empty() {
                b"/".to_vec()
            } else {
                first
            };
            report.dropped.push(Dropped {
                ino: de.ino,
                path: Some(self.path(dir, &de.name)),
                what: format!(
                    "the entry: a further name of directory #{} (shown at {}); a \
                     directory has one parent, and readers show it once",
                    de.ino,
                    String::from_utf8_lossy(&first)
                ),
            });
        } else {
            self.dents.entry(dir).or_default().push(de);
        }
    }

    /// An entry of `dir` naming an inode not shown yet (`read`): shown with it when Linux
    /// reads it (a directory's entries walked next), else left out and reported.
    fn reach(
        &mut self,
        dir: u32,
        de: Dirent,
        read: &mut Read,
        stack: &mut Vec<Frame>,
        report: &mut ConvertReport,
    ) {
        match read {
            Read::Held(i) => {
                self.shown.insert(de.ino, i.kind);
                self.named.insert(de.ino, (dir, de.name.clone()));
                if i.kind == InodeKind::Dir {
                    self.descend(de.ino, children(&mut i.dents), stack);
                }
                self.dents.entry(dir).or_default().push(de);
            }
            Read::Dir(i) => {
                self.shown.insert(de.ino, InodeKind::Dir);
                self.named.insert(de.ino, (dir, de.name.clone()));
                self.descend(de.ino, children(&mut i.dents), stack);
                self.dents.entry(dir).or_default().push(de);
            }
            Read::Sent(kind) => {
                self.shown.insert(de.ino, *kind);
                self.named.insert(de.ino, (dir, de.name.clone()));
                self.dents.entry(dir).or_default().push(de);
            }
            Read::Failed(e) => {
                let what = format!("the entry and its inode: Linux cannot read it ({e})");
                report.dropped.push(Dropped {
                    ino: de.ino,
                    path: Some(self.path(dir, &de.name)),
                    what,
                });
            }
        }
    }

    /// Directory `ino`, just shown, is walked next: its entries `kids` go on the stack.
    fn descend(&mut self, ino: u32, kids: Vec<Dirent>, stack: &mut Vec<Frame>) {
        // Room for all at once: no doubling (both buffers alive) as it fills.
        self.dents.entry(ino).or_default().reserve_exact(kids.len());
        stack.push((ino, kids));
    }
}

/// What reading an inode gave, for the walk of the tree Linux shows. Boxed: the map holds
/// one for every inode, most of them sent or failed, and an `Inode` is hundreds of bytes.
enum Read {
    /// Read; its items are still to plan.
    Held(Box<Inode>),
    /// A directory read; its items are still to plan.
    Dir(Box<DirInode>),
    /// Read, reached by a directory, its items sent already (never a directory).
    Sent(InodeKind),
    /// Linux cannot read it.
    Failed(Box<FsError>),
}

impl Read {
    fn of(r: Result<Inode, FsError>) -> Read {
        match r {
            Ok(i) if i.kind == InodeKind::Dir => Read::Dir(Box::new(DirInode::of(i))),
            Ok(i) => Read::Held(Box::new(i)),
            Err(e) => Read::Failed(Box::new(e)),
        }
    }
}

/// A directory's inode while the tree is walked: what planning it reads (its attributes and
/// entries), without the lists it never reads (data nodes, fragments, obsoleted refs,
/// problems, log) — under half an [`Inode`], held for every directory of the image.
struct DirInode {
    ino: u32,
    mode: u32,
    uid: u32,
    gid: u32,
    atime: u32,
    mtime: u32,
    ctime: u32,
    nlink: u32,
    version: u32,
    highest_version: u32,
    faked: bool,
    size: u64,
    latest: Option<usize>,
    dents: Vec<crate::fs::Dirent>,
}

impl DirInode {
    fn of(i: Inode) -> DirInode {
        DirInode {
            ino: i.ino,
            mode: i.mode,
            uid: i.uid,
            gid: i.gid,
            atime: i.atime,
            mtime: i.mtime,
            ctime: i.ctime,
            nlink: i.nlink,
            version: i.version,
            highest_version: i.highest_version,
            faked: i.faked,
            size: i.size,
            latest: i.latest,
            dents: i.dents,
        }
    }

    /// The inode again, as planning reads it.
    fn inode(self) -> Inode {
        Inode {
            ino: self.ino,
            kind: InodeKind::Dir,
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
            size: self.size,
            atime: self.atime,
            mtime: self.mtime,
            ctime: self.ctime,
            nlink: self.nlink,
            version: self.version,
            highest_version: self.highest_version,
            latest: self.latest,
            faked: self.faked,
            rdev: None,
            target: None,
            dents: self.dents,
            nodes: Vec::new(),
            frags: Vec::new(),
            obsoleted: Vec::new(),
            problems: Vec::new(),
            log: Vec::new(),
        }
    }
}

/// What valid nodes on flash hold that Linux never sees because an erase-block summary it
/// trusts does not list them (docs/spec/kernel-jffs2-spec.md §4.3, §4.4: unlisted nodes are dirt, even
/// a whole block's under a summary of 0 records). The output keeps what Linux shows, so
/// these are left out, and said: every inode a full scan of the image (summaries ignored)
/// shows and Linux does not, by its path there; and every inode Linux shows with nodes so
/// hidden. Only when some used summary hides a valid inode, dirent or xattr node: the full
/// scan and build cost is paid by such images alone. `named`: inodes already reported.
fn hidden_by_summaries(
    fs: &Fs<'_>,
    shown: &BTreeMap<u32, InodeKind>,
    named: &[u32],
) -> Vec<Dropped> {
    use crate::format::NodeKind;
    use crate::scan::{RefState, SummaryUse};
    let scan = fs.scan();
    let es = scan.geometry.erase_size.max(1);
    let summarised: std::collections::HashSet<u32> = scan
        .blocks
        .iter()
        .enumerate()
        .filter(|(_, b)| b.summary == SummaryUse::Used)
        .map(|(i, _)| i as u32)
        .collect();
    if summarised.is_empty() || !gap_holds_node(fs, &summarised) {
        return Vec::new();
    }
    let seen: std::collections::HashSet<u32> = scan
        .refs
        .iter()
        .filter(|r| summarised.contains(&(r.offset / es)))
        .map(|r| r.offset)
        .collect();
    let opts = ScanOptions {
        read_only: true,
        summary: false,
        ..ScanOptions::default()
    };
    let mut full = crate::scan::scan(fs.image(), &scan.geometry, &opts);
    // Hidden: valid on flash (linked by the full scan, not obsolete), in a block whose
    // summary Linux used, and not linked by that summary. By inode, the first block.
    let mut hidden: BTreeMap<u32, (u32, u32)> = BTreeMap::new();
    for r in &full.refs {
        if summarised.contains(&(r.offset / es))
            && !seen.contains(&r.offset)
            && r.state != RefState::Obsolete
            && matches!(r.kind, NodeKind::Inode | NodeKind::Dirent | NodeKind::Xattr)
        {
            let e = hidden
                .entry(r.ino.unwrap_or(0))
                .or_insert((r.offset - r.offset % es, 0));
            e.1 += 1;
        }
    }
    if hidden.is_empty() {
        return Vec::new();
    }
    let first_block = hidden.values().map(|&(b, _)| b).min().unwrap_or(0);
    let blocks = hidden
        .values()
        .map(|&(b, _)| b)
        .collect::<std::collections::BTreeSet<u32>>()
        .len();
    let full_fs = crate::fs::Fs::from_scan(fs.image(), &mut full, Default::default());
    let tree = full_fs.tree(&crate::fs::TreeOptions::metadata());
    let mut out = Vec::new();
    let mut done: std::collections::HashSet<u32> = named.iter().copied().collect();
    for e in &tree.entries {
        if shown.contains_key(&e.ino) || !done.insert(e.ino) {
            continue;
        }
        let mut path = b"/".to_vec();
        path.extend_from_slice(&e.path);
        out.push(Dropped {
            ino: e.ino,
            path: Some(path),
            what: format!(
                "the inode, valid on flash: Linux never sees it, erase-block summaries it \
                 trusts do not list its nodes or names ({blocks} block(s), the first at \
                 0x{first_block:08x})"
            ),
        });
    }
    for (&ino, &(block, n)) in &hidden {
        if shown.contains_key(&ino) && done.insert(ino) {
            out.push(Dropped {
                ino,
                path: None,
                what: format!(
                    "{n} of its nodes, valid on flash: the summary of the erase block at \
                     0x{block:08x} does not list them, so Linux never sees them (the output \
                     holds the inode as Linux shows it)"
                ),
            });
        }
    }
    out
}

/// Whether the space that a used summary leaves undescribed (its gaps, dirt to Linux) holds
/// the header of a valid inode, dirent or xattr node, not marked obsolete: the cheap test
/// before [`hidden_by_summaries`] scans the whole image. Gaps are normally a block's padding.
fn gap_holds_node(fs: &Fs<'_>, summarised: &std::collections::HashSet<u32>) -> bool {
    use crate::format::{NodeKind, MAGIC};
    use crate::scan::DirtCause;
    let scan = fs.scan();
    let e = scan.geometry.endian;
    let es = scan.geometry.erase_size.max(1);
    let img = fs.image();
    scan.dirt.iter().any(|d| {
        if !matches!(d.cause, DirtCause::SummaryGap | DirtCause::Mixed)
            || !summarised.contains(&(d.offset / es))
        {
            return false;
        }
        let end = (d.offset as usize)
            .saturating_add(d.len as usize)
            .min(img.len());
        let mut p = (d.offset as usize + 3) & !3;
        while p + HEADER_SIZE <= end {
            let h = &img[p..p + HEADER_SIZE];
            if e.get_u16(h, hdr::MAGIC) == Some(MAGIC) {
                let nodetype = e.get_u16(h, hdr::NODETYPE).unwrap_or(0);
                let stored = e.get_u32(h, hdr::HDR_CRC).unwrap_or(0);
                if nodetype & NODE_ACCURATE != 0
                    && crate::crc::crc32(&h[..hdr::HDR_CRC]) == stored
                    && matches!(
                        NodeKind::of(nodetype),
                        NodeKind::Inode | NodeKind::Dirent | NodeKind::Xattr
                    )
                {
                    return true;
                }
            }
            p += 4;
        }
        false
    })
}

/// The path (`/a/b`) at which the walk first reached `ino`, from the parents recorded in
/// `named`; the root is the empty path. Bounded by [`crate::fs::PATH_MAX`]: a longer path
/// keeps its last bytes after `…`, and a loop in `named` (never built) cannot hang it.
fn path_of(named: &HashMap<u32, (u32, crate::name::Name)>, mut ino: u32) -> Vec<u8> {
    let mut parts: Vec<&[u8]> = Vec::new();
    let mut len = 0usize;
    let mut cut = false;
    while let Some((parent, name)) = named.get(&ino) {
        if len >= crate::fs::PATH_MAX {
            cut = true;
            break;
        }
        len += name.len() + 1;
        parts.push(name);
        ino = *parent;
    }
    let mut p = Vec::with_capacity(len + 4);
    if cut {
        p.extend_from_slice("…".as_bytes());
    }
    for n in parts.iter().rev() {
        p.push(b'/');
        p.extend_from_slice(n);
    }
    p
}

/// The inodes that the directories in `reads` reach from the root and that are not read
/// yet (expected not to be directories: no `DT_DIR` entry names them).
fn reached_files(reads: &HashMap<u32, Read>) -> std::collections::HashSet<u32> {
    let mut seen = std::collections::HashSet::from([1u32]);
    let mut queue = VecDeque::from([1u32]);
    let mut files = std::collections::HashSet::new();
    while let Some(d) = queue.pop_front() {
        let entries = match reads.get(&d) {
            Some(Read::Dir(i)) => &i.dents,
            Some(Read::Held(i)) if i.kind == InodeKind::Dir => &i.dents,
            _ => continue,
        };
        for de in entries {
            let is_dir = match reads.get(&de.ino) {
                Some(Read::Dir(_)) => true,
                Some(Read::Held(c)) => c.kind == InodeKind::Dir,
                _ => false,
            };
            match reads.get(&de.ino) {
                _ if is_dir => {
                    if seen.insert(de.ino) {
                        queue.push_back(de.ino);
                    }
                }
                Some(_) => {}
                None => {
                    files.insert(de.ino);
                }
            }
        }
    }
    files
}
