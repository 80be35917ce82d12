//! The checks: mount scan, build, flash walk and model, combined into findings.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};

use rayon::prelude::*;

use super::walk::{self, BlockWalk, Body, Fault, Junk, JunkKind, WNode};
use super::Code;
use super::{
    compare, BlockCounts, BlockDetail, Finding, FsckError, GeometryInfo, MountCost, NodeCounts,
    Options, ProgressFn, Report, Severity, TreeCounts,
};
use crate::compress::{compr_name, COMPR_LZMA, COMPR_ZERO};
use crate::format::{
    COMPAT_MASK, FEATURE_INCOMPAT, FEATURE_ROCOMPAT, FEATURE_RWCOMPAT_COPY, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_XATTR, NODETYPE_XREF, NODE_ACCURATE,
};
use crate::fs::{
    self, Fs, FsError, FsOptions, Inode, InodeKind, Problem, ReadFailure, TreeOptions,
};
use crate::scan::{
    self, BlockClass, BlockList, KernelMsg, Level, MountFailure, RefState, ScanOptions, SummaryUse,
};

mod lost;
mod summary;

/// The kernel's `EMPTY_SCAN_SIZE`: a block whose first 256 bytes are erased is taken as empty.
const EMPTY_SCAN_SIZE: u32 = 256;

fn kib(v: u32) -> String {
    if v % 1024 == 0 {
        format!("{} KiB", v / 1024)
    } else {
        format!("{v:#x} bytes")
    }
}

/// Names and paths as JSON keeps them (the text output escapes them when shown).
fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The largest `PAGE_SIZE` of the architectures Linux runs JFFS2 on (arm64, powerpc64,
/// mips with 64 KiB pages): no JFFS2 writer of Linux makes a data node larger.
const LARGEST_PAGE: u32 = 64 * 1024;

/// How the model treats a node (by offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Shown by a live inode (data, metadata, a dirent).
    Used(u32),
    /// Read but superseded by newer nodes of a live inode.
    Superseded(u32),
}

/// What the checks after the model need of an inode read: its kernel messages, or why it
/// cannot be read.
type InodeRead = Result<Vec<KernelMsg>, Box<ReadFailure>>;

/// Inodes read at once before their records are reduced to [`InodeRead`].
const READ_CHUNK: usize = 2048;

/// Records how `inode` (read fine) treats its nodes: superseded, shown.
fn note_status(status: &mut HashMap<u32, Status>, refs: &[scan::NodeRef], ino: u32, inode: &Inode) {
    let sup: HashSet<u32> = inode
        .obsoleted
        .iter()
        .filter_map(|&i| refs.get(i).map(|r| r.offset))
        .collect();
    for o in &sup {
        status.insert(*o, Status::Superseded(ino));
    }
    for dn in &inode.nodes {
        if !sup.contains(&dn.offset) {
            status.insert(dn.offset, Status::Used(ino));
        }
    }
    if let Some(l) = inode.latest.and_then(|i| refs.get(i)) {
        status.insert(l.offset, Status::Used(ino));
    }
    for d in &inode.dents {
        status.insert(d.offset, Status::Used(ino));
    }
}

/// Everything the combination step needs.
struct Ctx<'f, 'a> {
    img: &'a [u8],
    image_len: u64,
    fs: &'f Fs<'a>,
    es: u32,
    walks: &'f [BlockWalk],
    inodes: &'f BTreeMap<u32, InodeRead>,
    /// Each inode's first path.
    first: &'f HashMap<u32, Vec<u8>>,
    /// The paths of inodes the tree lists but cannot read, when they have no other.
    unreadable_paths: HashMap<u32, String>,
    status: HashMap<u32, Status>,
    /// Offsets the model reported on (its findings win over the walk's).
    model_offsets: HashSet<u32>,
    findings: Vec<Finding>,
    /// Block offset of OpenWrt's end-of-filesystem marker.
    end_marker: Option<u32>,
}

/// OpenWrt's end-of-filesystem marker and what follows it in the image.
struct EndMarker {
    /// Offset of the marker (a block start).
    offset: u32,
    /// The first byte after the marker, within the image as given, that is not 0xFF.
    data_after: Option<u32>,
}

impl EndMarker {
    fn new(img: &[u8], offset: u32, image_len: u64) -> EndMarker {
        let from = offset as usize + scan::END_MARKER.len();
        let to = usize::try_from(image_len).map_or(img.len(), |l| l.min(img.len()));
        let data_after = img
            .get(from..to)
            .and_then(|t| t.iter().position(|&b| b != 0xFF))
            .map(|p| (from + p) as u32);
        EndMarker { offset, data_after }
    }

    /// The image as OpenWrt leaves it after the first mount: erased after the marker (the
    /// marker itself kept, so that the walk meets it where the scan did).
    fn blank(&self, img: &[u8]) -> Vec<u8> {
        erased_from(img, self.offset as usize + scan::END_MARKER.len())
    }

    fn finding(&self, es: u32) -> Finding {
        let o = self.offset;
        let after = match self.data_after {
            None => "nothing but erased flash follows it, so stock Linux (which sees 4 bytes of dirt) shows the same files".to_string(),
            Some(d) => format!(
                "the image holds data after it (from 0x{d:08x}), which OpenWrt erases unread and which is not checked; stock Linux would read it and may show other files"
            ),
        };
        Finding::new(
            Code::EndMarker,
            format!(
                "OpenWrt's end-of-filesystem marker (de ad c0 de) at the start of erase block {}: OpenWrt's kernel ends the filesystem here and erases this block and every later one at the first mount; {after}",
                o / es.max(1)
            ),
        )
        .at(o)
    }
}

/// A copy of `img` erased (0xFF) from byte `from` on: what fsck checks when the filesystem
/// ends there (OpenWrt's end marker, data after the end).
fn erased_from(img: &[u8], from: usize) -> Vec<u8> {
    let mut v = img.to_vec();
    let from = from.min(v.len());
    v[from..].fill(0xFF);
    v
}

/// The image as checked.
pub(crate) struct Flash<'a> {
    /// Padded as flashed.
    pub(crate) img: &'a [u8],
    /// Bytes as given.
    pub(crate) image_len: u64,
    /// Where the detection found nodes: the scan asks for their headers ahead of need (its
    /// reads of one node header after the other were half its time, waiting on memory).
    pub(crate) hints: &'a [u32],
}

/// The check of the filesystem in `flash`. Data after the end of the filesystem (the next
/// partition, a carver's tail; `docs/spec/ecosystem.md` §9) is no part of it: checked as
/// erased, and noted once.
pub(crate) fn run(
    flash: Flash<'_>,
    info: GeometryInfo,
    all_ff: bool,
    opts: &Options,
    progress: Option<ProgressFn<'_>>,
) -> Result<Report, FsckError> {
    let Flash {
        img,
        image_len,
        hints,
    } = flash;
    let given = usize::try_from(image_len).map_or(img, |l| &img[..l.min(img.len())]);
    let mount_scan = |img: &[u8]| {
        scan::engine::scan_hinted(img, &info.geometry, &ScanOptions::default(), hints, false)
    };
    // The scan runs on one thread: meanwhile another walks the flash from its last block
    // down, as the walk beside the inode reads would (`walk::walk_tail`), until the scan is
    // done. Data after the end: after the detection's last node when it can tell, else by a
    // pass of its own beside the scan.
    let bare = Fs::for_node_reads(img, info.geometry, FsOptions::default());
    let scanned_flag = AtomicBool::new(false);
    let ((trailing, scanned), tail) = rayon::join(
        || {
            let both = rayon::join(
                || scan::trailing::trailing_data_after(given, info.geometry.endian, hints),
                || mount_scan(img),
            );
            scanned_flag.store(true, Ordering::Relaxed);
            both
        },
        || {
            walk::walk_tail(img, &bare, info.geometry.erase_size, || {
                scanned_flag.load(Ordering::Relaxed)
            })
        },
    );
    let Some(t) = trailing else {
        let scanned = Scanned {
            scan: scanned,
            tail,
        };
        return run_filesystem(img, scanned, image_len, info, all_ff, opts, progress);
    };
    drop(scanned);
    // The flash checked is not the one walked.
    drop(tail);
    let cut = erased_from(img, t.offset as usize);
    let scanned = Scanned {
        scan: mount_scan(&cut),
        tail: Vec::new(),
    };
    let mut report = run_filesystem(&cut, scanned, image_len, info, all_ff, opts, progress)?;
    report.findings.push(
        Finding::new(
            Code::DataAfterEnd,
            format!("{t}: not part of the filesystem (the next partition, padding or a carver's tail?); checked as erased"),
        )
        .at(t.offset),
    );
    sort_findings(&mut report.findings);
    Ok(report)
}

/// The mount scan of an image, and the walks of its last blocks made beside it
/// ([`walk::walk_tail`]).
struct Scanned {
    scan: scan::Scan,
    tail: Vec<Option<BlockWalk>>,
}

/// [`run`] on the filesystem alone, `scanned` being `img`'s.
fn run_filesystem(
    img: &[u8],
    scanned: Scanned,
    image_len: u64,
    info: GeometryInfo,
    all_ff: bool,
    opts: &Options,
    progress: Option<ProgressFn<'_>>,
) -> Result<Report, FsckError> {
    let Scanned { mut scan, mut tail } = scanned;
    let geom = info.geometry;
    // OpenWrt's end-of-filesystem marker: OpenWrt's kernel erases its block and every later
    // one at the first mount, so what lies there is checked as erased (and summed up in one
    // finding about the marker).
    let end_marker = scan.end_marker.map(|m| EndMarker::new(img, m, image_len));
    let blanked: Option<Vec<u8>> = end_marker.as_ref().map(|m| m.blank(img));
    if blanked.is_some() {
        // The flash checked is not the one walked.
        tail.clear();
    }
    let img: &[u8] = blanked.as_deref().unwrap_or(img);
    let facts = ScanFacts::of(&scan);
    let es = geom.erase_size;

    let fs = fs::Fs::from_scan(img, &mut scan, FsOptions::default());
    let p = passes(img, &fs, &facts, es, opts, tail, progress);

    let mut cx = Ctx {
        img,
        image_len,
        fs: &fs,
        es,
        walks: &p.walks,
        inodes: &p.inodes,
        first: &p.first,
        unreadable_paths: unreadable_paths(&p.tree, &p.first),
        status: p.status,
        model_offsets: HashSet::new(),
        findings: Vec::new(),
        end_marker: end_marker.as_ref().map(|m| m.offset),
    };
    let seen = Seen {
        info: &info,
        all_ff,
        end_marker: end_marker.as_ref(),
        tree: &p.tree,
        failure: facts.failure.as_ref(),
        sblocks: &facts.sblocks,
    };
    cx.all_findings(&seen);

    // Kernel log: scan, build and root read, then reading every inode as a listing does.
    // A mount that fails in the scan stops there; one whose root cannot be read lists nothing.
    let mut kernel_log: Vec<KernelMsg> = facts.log;
    if facts.failure.is_none() {
        mount_log(&mut kernel_log, &fs, &p.inodes, &p.first, &p.tree);
    }
    let findings = cx.sorted_findings(&kernel_log);

    let mount_ok = facts.failure.is_none() && matches!(p.inodes.get(&1), Some(Ok(_)));
    let differences = opts
        .compare
        .as_ref()
        .map(|c| compare::compare(&fs, &p.tree, c))
        .transpose()?;
    let compare_hint = match (&differences, &opts.compare) {
        (Some(d), Some(c)) => compare::hint(d, c),
        _ => None,
    };

    Ok(Report {
        image_len,
        flash_len: img.len() as u64,
        geometry: info,
        findings,
        space: facts.totals,
        blocks: block_counts(&facts.sblocks),
        summary_blocks: summary_blocks(&facts.sblocks),
        node_blocks: p.walks.iter().filter(|w| has_nodes(w)).count() as u32,
        mount_cost: MountCost {
            with_summaries: facts.totals.bytes_read,
            full_scan: p.full_scan,
        },
        mount_ok,
        read_only: facts.forced_ro,
        kernel_log,
        block_details: block_details(&facts.sblocks, &p.walks),
        tree: p.tree_counts,
        nodes: node_counts(&p.walks),
        differences,
        compare_hint,
    })
}

/// What fsck's passes over the model and the flash give the findings.
struct Passes {
    inodes: BTreeMap<u32, InodeRead>,
    status: HashMap<u32, Status>,
    full_scan: u64,
    tree: fs::Tree,
    first: HashMap<u32, Vec<u8>>,
    tree_counts: TreeCounts,
    walks: Vec<BlockWalk>,
}

/// Reads the inodes, walks the tree and walks the flash of `img`, whose model is `fs`.
fn passes(
    img: &[u8],
    fs: &Fs<'_>,
    facts: &ScanFacts,
    es: u32,
    opts: &Options,
    tail: Vec<Option<BlockWalk>>,
    progress: Option<ProgressFn<'_>>,
) -> Passes {
    let geom = fs.scan().geometry;
    // The walk must tell the data nodes Linux shows (always decompressed) from dead ones
    // (decompressed within a budget), which takes reading the inodes; but a block whose data
    // stays within the budget even counted all dead is walked alike either way: those blocks
    // (all of them, short of much dead data) are walked beside the inode reads and the tree
    // walk, so that no core waits for the reads.
    let (((inodes, status), live, full_scan, (tree, first, tree_counts)), ahead) = rayon::join(
        || {
            let ((inodes, status, known), full_scan) = rayon::join(
                || read_inodes(fs),
                || full_scan_cost(img, &geom, facts.any_summary, facts.totals.bytes_read),
            );
            let live = live_offsets(&status);
            let tree = walk_tree(fs, opts.compare.is_some(), known);
            ((inodes, status), live, full_scan, tree)
        },
        || walk::walk_ahead(img, fs, es, tail, progress),
    );
    let walks = walk::walk_rest(img, fs, es, &live, ahead, progress);
    Passes {
        inodes,
        status,
        full_scan,
        tree,
        first,
        tree_counts,
        walks,
    }
}

/// What the tree walk reads of the non-directories the inode reads kept ([`KNOWN_BYTES`]).
type Known = HashMap<u32, Inode>;

/// At most this much of the inode reads' non-directories is kept for the tree walk (their
/// metadata and problems, without their nodes and fragments); the walk reads the others
/// again.
const KNOWN_BYTES: usize = 4 << 20;

/// Reads every live inode (and the root) for what the later checks need of it: whether it
/// reads, its kernel messages, and how it treats its nodes.
///
/// Each inode is read in chunks of a few thousand and kept only as what the later checks
/// need (whether it reads, and its kernel messages): a whole `Inode` for each of 100 000
/// directories is tens of MiB, and the tree walk reads them again anyway. Of regular files,
/// symbolic links and devices the tree walk needs only what a listing shows: that much is
/// kept for it, up to [`KNOWN_BYTES`] (reading them again was 2 % of fsck's CPU on
/// `/usr/bin`'s image, docs/BENCHMARKS.md).
fn read_inodes(fs: &Fs<'_>) -> (BTreeMap<u32, InodeRead>, HashMap<u32, Status>, Known) {
    let refs = &fs.scan().refs;
    let mut inos: Vec<u32> = fs.live_inodes().collect();
    if !inos.contains(&1) {
        inos.push(1);
    }
    inos.sort_unstable();
    inos.dedup();
    let mut inodes: BTreeMap<u32, InodeRead> = BTreeMap::new();
    let mut status: HashMap<u32, Status> = HashMap::new();
    let mut known = Known::new();
    let mut known_bytes = 0usize;
    for chunk in inos.chunks(READ_CHUNK) {
        let read: Vec<Result<Inode, ReadFailure>> =
            chunk.par_iter().map(|&i| fs.read_inode_logged(i)).collect();
        for (&ino, r) in chunk.iter().zip(read) {
            let kept = match r {
                Ok(mut inode) => {
                    note_status(&mut status, refs, ino, &inode);
                    let log = std::mem::take(&mut inode.log);
                    if inode.kind != InodeKind::Dir && known_bytes < KNOWN_BYTES {
                        let listed = listed_part(inode);
                        known_bytes += listed_bytes(&listed);
                        known.insert(ino, listed);
                    }
                    Ok(log)
                }
                Err(f) => Err(Box::new(f)),
            };
            inodes.insert(ino, kept);
        }
    }
    (inodes, status, known)
}

/// What a listing shows of a non-directory inode: its nodes and fragments dropped.
fn listed_part(inode: Inode) -> Inode {
    Inode {
        nodes: Vec::new(),
        frags: Vec::new(),
        obsoleted: Vec::new(),
        log: Vec::new(),
        ..inode
    }
}

/// The memory a [`listed_part`] holds, about.
fn listed_bytes(inode: &Inode) -> usize {
    std::mem::size_of::<Inode>()
        + inode.target.as_ref().map_or(0, Vec::len)
        + inode.problems.len() * std::mem::size_of::<Problem>()
}

/// Bytes a mount without summaries reads (`bytes_read`, this scan's, when no summary was
/// used): the cost the summaries save.
fn full_scan_cost(img: &[u8], geom: &scan::Geometry, any_summary: bool, bytes_read: u64) -> u64 {
    if any_summary {
        let o = ScanOptions {
            summary: false,
            ..ScanOptions::default()
        };
        scan::scan(img, geom, &o).totals().bytes_read
    } else {
        bytes_read
    }
}

/// What the report needs of the scan, taken before the build consumes its lists.
struct ScanFacts {
    log: Vec<KernelMsg>,
    failure: Option<MountFailure>,
    forced_ro: bool,
    totals: scan::SpaceTotals,
    any_summary: bool,
    sblocks: Vec<scan::BlockInfo>,
}

impl ScanFacts {
    /// Copies the facts out of `scan`.
    fn of(scan: &scan::Scan) -> ScanFacts {
        ScanFacts {
            log: scan.log.clone(),
            failure: scan.failure.clone(),
            forced_ro: scan.forced_read_only,
            totals: scan.totals(),
            any_summary: scan.blocks.iter().any(|b| b.summary == SummaryUse::Used),
            sblocks: scan.blocks.clone(),
        }
    }
}

/// Offsets of the nodes a live inode shows (the data nodes Linux decompresses), sorted.
fn live_offsets(status: &HashMap<u32, Status>) -> Vec<u32> {
    let mut live: Vec<u32> = status
        .iter()
        .filter(|(_, s)| matches!(s, Status::Used(_)))
        .map(|(&o, _)| o)
        .collect();
    live.sort_unstable();
    live
}

/// Walks the directory tree for each inode's first path and the counts; the entries
/// themselves only when `keep` (for --compare). The non-directories in `known` are taken
/// from there rather than read again.
fn walk_tree(
    fs: &Fs<'_>,
    keep: bool,
    known: Known,
) -> (fs::Tree, HashMap<u32, Vec<u8>>, TreeCounts) {
    // The tree's entries are not kept (a million names are a million entries), only
    // what is needed of them: each inode's first path in path order and the counts;
    // all of them only for --compare.
    let mut first: HashMap<u32, Vec<u8>> = HashMap::new();
    let mut counts = TreeCounts::default();
    let mut kept: Vec<fs::TreeEntry> = Vec::new();
    // Content is not asked for: the walk needs no fragments.
    let read = |ino: u32| match known.get(&ino) {
        Some(i) => Ok(i.clone()),
        None => fs.read_inode(ino),
    };
    let problems = fs.walk_tree_reading(
        &TreeOptions {
            content: false,
            xattrs: true,
            unreachable: true,
        },
        &read,
        &mut |e: fs::TreeEntry| {
            match e.kind {
                InodeKind::Dir => counts.dirs += 1,
                InodeKind::File => {
                    counts.files += 1;
                    counts.bytes += e.size;
                }
                InodeKind::Symlink => counts.symlinks += 1,
                _ => counts.special += 1,
            }
            match first.get_mut(&e.ino) {
                Some(p) if *p <= e.path => {}
                Some(p) => p.clone_from(&e.path),
                None => {
                    first.insert(e.ino, e.path.clone());
                }
            }
            if keep {
                kept.push(e);
            }
        },
    );
    kept.sort_by(|a, b| a.path.cmp(&b.path));
    let tree = fs::Tree {
        entries: kept,
        problems,
    };
    (tree, first, counts)
}

/// The paths of inodes listed by their directory but unreadable, when they have no other.
fn unreadable_paths(tree: &fs::Tree, first: &HashMap<u32, Vec<u8>>) -> HashMap<u32, String> {
    // Paths: the first one, in path order (`first`, made text when a finding names it).
    // Inodes listed by their directory but unreadable have a path too.
    let mut unreadable_paths: HashMap<u32, String> = HashMap::new();
    for p in &tree.problems {
        if let (Some(i), Some(path)) = (p.ino(), p.path()) {
            if matches!(p, Problem::InodeUnreadable { .. }) && !first.contains_key(&i) {
                unreadable_paths.entry(i).or_insert_with(|| lossy(path));
            }
        }
    }
    unreadable_paths
}

/// What the findings are made from besides [`Ctx`]: the image's facts, the tree's problems,
/// the mount's failure and the scan's blocks.
struct Seen<'s> {
    info: &'s GeometryInfo,
    all_ff: bool,
    end_marker: Option<&'s EndMarker>,
    tree: &'s fs::Tree,
    failure: Option<&'s MountFailure>,
    sblocks: &'s [scan::BlockInfo],
}

impl Ctx<'_, '_> {
    /// Every finding but the kernel messages': image, model, mount, then flash walk.
    fn all_findings(&mut self, seen: &Seen<'_>) {
        // Image-level facts.
        image_findings(self, seen.info, seen.all_ff, self.img.len() as u64);
        if let Some(m) = seen.end_marker {
            self.findings.push(m.finding(self.es));
        }

        // The model's problems.
        let mut problems: Vec<Problem> = self.fs.build_problems().to_vec();
        problems.extend(seen.tree.problems.iter().cloned());
        for p in &problems {
            self.model_problem(p);
        }

        // The mount's fatal conditions.
        if let Some(f) = seen.failure {
            self.failure(f);
        }
        self.root_unreadable(&problems);

        // The flash walk.
        for (b, w) in self.walks.iter().enumerate() {
            let info = seen.sblocks.get(b);
            self.block(w, info);
        }
        self.lost_nodes();
        self.truncation();
        erase_size_finding(self, seen.info);
        self.lzma_nodes();
        self.dead_data_budget();
        self.large_data_nodes();
    }

    /// Adds the kernel messages no finding explains, then orders and de-duplicates all
    /// findings.
    fn sorted_findings(&mut self, kernel_log: &[KernelMsg]) -> Vec<Finding> {
        self.kernel_messages(kernel_log);
        // Order and de-duplicate.
        let mut findings = std::mem::take(&mut self.findings);
        sort_findings(&mut findings);
        findings
    }

    /// A root directory that cannot be read fails the mount: said unless a model problem
    /// already says so.
    fn root_unreadable(&mut self, problems: &[Problem]) {
        let root_error = match self.inodes.get(&1) {
            Some(Ok(_)) => None,
            Some(Err(f)) => Some(f.error.clone()),
            None => Some(FsError::NoSuchInode(1)),
        };
        if let Some(e) = &root_error {
            if !problems
                .iter()
                .any(|p| matches!(p, Problem::InodeUnreadable { ino: 1, .. }))
            {
                self.findings.push(Finding::new(
                    Code::MountFailure,
                    format!("the root directory cannot be read ({e}): the mount fails"),
                ));
            }
        }
    }
}

/// Adds to `kernel_log` what a mount that passed the scan logs: the build, the root read,
/// then reading every inode as a listing does.
fn mount_log(
    kernel_log: &mut Vec<KernelMsg>,
    fs: &Fs<'_>,
    inodes: &BTreeMap<u32, InodeRead>,
    first: &HashMap<u32, Vec<u8>>,
    tree: &fs::Tree,
) {
    // `Fs::mount_log`, with the root as already read.
    kernel_log.extend(fs.kernel_log().iter().cloned());
    match inodes.get(&1) {
        Some(Ok(root)) => kernel_log.extend(root.iter().cloned()),
        Some(Err(f)) => kernel_log.extend(f.log.iter().cloned()),
        None => {}
    }
    if !matches!(inodes.get(&1), Some(Ok(_))) {
        return;
    }
    // The listing meets entries in path order (an inode first at its first path);
    // an entry whose inode cannot be read is met too (readdir shows it, stat fails).
    let mut met: Vec<(&[u8], u32)> = first.iter().map(|(&i, p)| (&p[..], i)).collect();
    met.sort_by(|a, b| a.0.cmp(b.0).then(a.1.cmp(&b.1)));
    for p in &tree.problems {
        if let Problem::InodeUnreadable {
            ino,
            path: Some(path),
            ..
        } = p
        {
            met.push((&path[..], *ino));
        }
    }
    met.sort_by(|a, b| a.0.cmp(b.0));
    let mut seen: HashSet<u32> = HashSet::from([1]);
    for (_, ino) in met {
        if seen.insert(ino) {
            match inodes.get(&ino) {
                Some(Ok(log)) => kernel_log.extend(log.iter().cloned()),
                // A listing meets the inode and fails to read it: what was printed
                // up to the failure is in the log all the same.
                Some(Err(f)) => kernel_log.extend(f.log.iter().cloned()),
                None => {}
            }
        }
    }
}

/// Summary numbers: the blocks by class.
fn block_counts(sblocks: &[scan::BlockInfo]) -> BlockCounts {
    let mut blocks = BlockCounts {
        total: sblocks.len() as u32,
        ..BlockCounts::default()
    };
    for b in sblocks {
        match b.class {
            BlockClass::Empty => blocks.empty += 1,
            BlockClass::Cleanmarker => blocks.cleanmarker += 1,
            BlockClass::Clean => blocks.clean += 1,
            BlockClass::PartDirty => blocks.partly_dirty += 1,
            BlockClass::AllDirty => blocks.all_dirty += 1,
        }
    }
    blocks
}

/// How many blocks Linux mounts from their summary.
fn summary_blocks(sblocks: &[scan::BlockInfo]) -> u32 {
    sblocks
        .iter()
        .filter(|b| b.summary == SummaryUse::Used)
        .count() as u32
}

/// Whether a block holds nodes other than cleanmarkers and padding.
fn has_nodes(w: &BlockWalk) -> bool {
    w.nodes
        .iter()
        .any(|n| !matches!(n.body, Body::Cleanmarker | Body::Padding))
}

/// Each block's scan counters and walk counts, for the report.
fn block_details(sblocks: &[scan::BlockInfo], walks: &[BlockWalk]) -> Vec<BlockDetail> {
    sblocks
        .iter()
        .zip(walks.iter())
        .map(|(b, w)| BlockDetail {
            index: b.index,
            offset: b.offset,
            class: b.class,
            list: b.list,
            used: b.used,
            unchecked: b.unchecked,
            dirty: b.dirty,
            wasted: b.wasted,
            free: b.free,
            summary: match &b.summary {
                SummaryUse::None => "none".to_string(),
                SummaryUse::Used => "used".to_string(),
                SummaryUse::Rejected(why) => format!("rejected: {why}"),
            },
            bytes_read: b.bytes_read,
            nodes: w.nodes.len() as u32,
            obsolete: w.nodes.iter().filter(|n| !n.accurate).count() as u32,
        })
        .collect()
}

/// The walk's node counts, summed over the blocks.
fn node_counts(walks: &[BlockWalk]) -> NodeCounts {
    let mut nodes = NodeCounts::default();
    for w in walks {
        nodes.nodes += w.nodes.len() as u64;
        nodes.obsolete += w.nodes.iter().filter(|n| !n.accurate).count() as u64;
        nodes.data_checked += w.data_checked;
        nodes.data_bytes += w.data_bytes;
    }
    nodes
}

/// Sorts findings: image-level ones (no offset, no inode) first in the order made, then by
/// offset, then the rest by inode; drops exact repeats of a code at an offset.
fn sort_findings(f: &mut Vec<Finding>) {
    let key = |x: &Finding| match (x.offset, x.ino) {
        (None, None) => (0u8, 0u64, 0u32),
        (Some(o), _) => (1, u64::from(o), x.ino.unwrap_or(0)),
        (None, Some(i)) => (2, u64::from(i), 0),
    };
    f.sort_by_key(key);
    let mut seen: HashSet<(Code, Option<u32>, Option<u32>, String)> = HashSet::new();
    f.retain(|x| {
        let k = (
            x.code,
            x.offset,
            x.ino,
            if x.offset.is_none() {
                x.message.clone()
            } else {
                String::new()
            },
        );
        seen.insert(k)
    });
}

fn image_findings(cx: &mut Ctx<'_, '_>, info: &GeometryInfo, all_ff: bool, flash_len: u64) {
    let det = &info.detection;
    let g = info.geometry;
    if all_ff {
        cx.findings.push(Finding::new(
            Code::EmptyFilesystem,
            "the image is erased flash (all 0xFF): Linux mounts it as an empty filesystem"
                .to_string(),
        ));
    }
    if info.endian_given && det.confidence > 0.0 && det.geometry.endian != g.endian {
        cx.findings.push(Finding::new(
            Code::EndianMismatch,
            format!(
                "checked as {} endian as asked, but the image is {} endian: Linux on a {}-endian machine sees no valid node",
                g.endian.name(),
                det.geometry.endian.name(),
                g.endian.name()
            ),
        ));
    }
    if !info.erase_size_given && !all_ff && det.confidence < 0.5 {
        cx.findings.push(Finding::new(
            Code::EraseSizeUncertain,
            format!(
                "nothing in the image tells its erase size for sure; checked with {} (give -e to be sure)",
                kib(g.erase_size)
            ),
        ));
    }
    if flash_len != cx.image_len {
        cx.findings.push(Finding::new(
            Code::ImagePadded,
            format!(
                "the image is {} bytes, not {} whole erase blocks: checked as flashed into a {}-byte partition, the rest erased (0xFF)",
                cx.image_len,
                if flash_len / u64::from(cx.es.max(1)) == 5 && cx.image_len <= 4 * u64::from(cx.es) {
                    "at least 5"
                } else {
                    "a number of"
                },
                flash_len
            ),
        ));
    }
}

/// A given erase size that the image contradicts (nodes crossing its block ends, cleanmarkers
/// or summaries away from them) while autodetection found one that fits: named.
fn erase_size_finding(cx: &mut Ctx<'_, '_>, info: &GeometryInfo) {
    let det = &info.detection;
    let g = info.geometry;
    if !info.erase_size_given
        || det.geometry.endian != g.endian
        || det.confidence < 0.5
        || det.geometry.erase_size == g.erase_size
    {
        return;
    }
    let trouble = cx
        .findings
        .iter()
        .filter(|f| {
            matches!(
                f.code,
                Code::NodeCrossesBlock | Code::CleanmarkerMisplaced | Code::SummaryInvalid
            )
        })
        .count();
    let crossing = cx.findings.iter().any(|f| f.code == Code::NodeCrossesBlock);
    // One stray cleanmarker or summary is not a wrong geometry; a wrong one shows in every
    // block.
    if trouble < 2 && !crossing {
        return;
    }
    cx.findings.push(Finding::new(
        Code::EraseSizeMismatch,
        format!(
            "the image was made for {} erase blocks, not {} (-e): on a flash with {} blocks Linux {} ({trouble} findings below); rebuild it with -e {}",
            kib(det.geometry.erase_size),
            kib(g.erase_size),
            kib(g.erase_size),
            if g.erase_size > det.geometry.erase_size {
                "finds cleanmarkers and summaries in the wrong places, scans every block in full and mounts slowly"
            } else {
                "finds nodes running over block ends and loses them"
            },
            kib(det.geometry.erase_size)
        ),
    ));
}

impl Ctx<'_, '_> {
    fn path_of(&self, ino: u32) -> Option<String> {
        match self.first.get(&ino) {
            Some(p) => Some(lossy(p)),
            None => self.unreadable_paths.get(&ino).cloned(),
        }
    }

    fn block_index(&self, offset: u32) -> usize {
        (offset / self.es.max(1)) as usize
    }

    /// Whether the item at `offset` (a damaged node or a junk run) is the last thing written in
    /// a block without a summary: an interrupted write.
    fn torn(&self, offset: u32) -> bool {
        self.walks
            .get(self.block_index(offset))
            .is_some_and(|w| !w.has_summary && w.last_item == Some(offset))
    }

    /// Whether the image file ends strictly inside `[offset, offset + len)`.
    fn truncated(&self, offset: u32, len: u32) -> bool {
        let end = u64::from(offset) + u64::from(len);
        u64::from(offset) < self.image_len && self.image_len < end
    }

    /// The sentence added to a damaged item at the end of the written space.
    fn torn_note(&self, offset: u32, len: u32) -> Option<(Code, String)> {
        if self.truncated(offset, len) {
            return Some((
                Code::TruncatedImage,
                format!(
                    "; the image file ends inside it (at 0x{:08x}): the image is truncated",
                    self.image_len
                ),
            ));
        }
        if self.torn(offset) {
            return Some((
                Code::TornNode,
                "; it is the last thing written in its erase block and looks like an interrupted write (power cut)"
                    .to_string(),
            ));
        }
        None
    }

    fn model_problem(&mut self, p: &Problem) {
        let code = p.code();
        let mut sev = match p {
            Problem::DataCrc {
                superseded: true, ..
            } => Severity::Warning,
            _ => code.severity(),
        };
        let mut code = code;
        let mut message = p.to_string();
        let offset = p.offset();
        if let (Some(o), Problem::DataCrc { .. } | Problem::BadNode { .. }) = (offset, p) {
            let len = self.node_len(o);
            if let Some((c, note)) = self.torn_note(o, len) {
                code = c;
                sev = Severity::Error;
                message.push_str(&note);
            }
        }
        if let Some(o) = offset {
            if matches!(
                p,
                Problem::DataCrc { .. }
                    | Problem::BadNode { .. }
                    | Problem::Unreadable { .. }
                    | Problem::InodeUnreadable { .. }
            ) {
                self.model_offsets.insert(o);
            }
        }
        let ino = p.ino();
        let path = p
            .path()
            .map(lossy)
            .or_else(|| ino.and_then(|i| self.path_of(i)));
        let mut f = Finding::new(code, message)
            .with_severity(sev)
            .ino(ino)
            .path(path);
        f.offset = offset;
        self.findings.push(f);
    }

    /// `totlen` of the node at `offset` per the walk (4 if unknown).
    fn node_len(&self, offset: u32) -> u32 {
        self.walks
            .get(self.block_index(offset))
            .and_then(|w| w.nodes.iter().find(|n| n.offset == offset))
            .map_or(4, |n| n.totlen)
    }

    fn failure(&mut self, f: &MountFailure) {
        let finding = match f {
            MountFailure::Incompat { offset, nodetype } => Finding::new(
                Code::IncompatNode,
                format!(
                    "node type 0x{nodetype:04x} is marked INCOMPAT and Linux does not know it: the mount is refused"
                ),
            )
            .at(*offset),
            MountFailure::RoCompat { offset, nodetype } => Finding::new(
                Code::RocompatNode,
                format!(
                    "node type 0x{nodetype:04x} is marked ROCOMPAT: a read-write mount is refused"
                ),
            )
            .with_severity(Severity::Error)
            .at(*offset),
            MountFailure::TooFewBlocks(n) => Finding::new(
                Code::MountFailure,
                format!("only {n} erase blocks: Linux needs at least 5"),
            ),
            MountFailure::Other(why) => Finding::new(
                Code::MountFailure,
                format!("the mount fails: {why}"),
            ),
        };
        self.findings.push(finding);
    }

    /// Findings of one block of the walk.
    fn block(&mut self, w: &BlockWalk, info: Option<&scan::BlockInfo>) {
        let start = w.offset;
        if self.end_marker.is_some_and(|m| start >= m) {
            // The marker's block and those after it: erased by OpenWrt at mount, blanked
            // here; the marker has its own finding.
            return;
        }
        let list = info.map(|i| i.list);
        let class = info.map(|i| i.class);
        let free_block = list == Some(BlockList::Free);
        let empty_block = class == Some(BlockClass::Empty);

        if free_block {
            // Linux writes here without erasing: anything but a leading cleanmarker is in the way.
            let first = w
                .nodes
                .iter()
                .filter(|n| !(n.offset == start && n.body == Body::Cleanmarker))
                .map(|n| n.offset)
                .chain(w.junk.iter().map(|j| j.offset))
                .min();
            if let Some(o) = first {
                self.findings.push(
                    Finding::new(
                        Code::NonErasedFreeSpace,
                        format!(
                            "the erase block at 0x{start:08x} looks free to Linux (it reads only its first bytes), but it is not erased from 0x{o:08x} on: Linux will write over these bytes without erasing them and corrupt what it writes"
                        ),
                    )
                    .at(o),
                );
            }
            return;
        }
        if empty_block {
            let live = w
                .nodes
                .iter()
                .find(|n| n.accurate && !matches!(n.body, Body::Padding));
            if let Some(n) = live {
                self.findings.push(
                    Finding::new(
                        Code::DataInErasedBlock,
                        format!(
                            "the erase block at 0x{start:08x} starts with {EMPTY_SCAN_SIZE} erased bytes, so Linux takes it for empty and erases it, but it holds nodes from 0x{:08x} on: they are lost",
                            n.offset
                        ),
                    )
                    .at(n.offset),
                );
            } else if let Some(o) = w
                .nodes
                .iter()
                .map(|n| n.offset)
                .chain(w.junk.iter().map(|j| j.offset))
                .min()
            {
                self.findings.push(
                    Finding::new(
                        Code::NonErasedFreeSpace,
                        format!(
                            "the erase block at 0x{start:08x} reads as erased at its start but is not erased from 0x{o:08x} on; Linux erases it before use"
                        ),
                    )
                    .with_severity(Severity::Info)
                    .at(o),
                );
            }
            return;
        }

        for j in &w.junk {
            self.junk(j);
        }
        for n in &w.nodes {
            self.node(w, n);
        }
        self.summary(w, info);
    }

    fn junk(&mut self, j: &Junk) {
        let (code, what) = match j.kind {
            JunkKind::Crosses { totlen } => {
                let end = (u64::from(j.offset / self.es) + 1) * u64::from(self.es);
                let f = Finding::new(
                    Code::NodeCrossesBlock,
                    format!(
                        "node of {totlen} bytes would run over the end of the erase block at 0x{end:08x}: Linux skips it as dirty space (was the image made for another erase size?)"
                    ),
                )
                .at(j.offset);
                self.findings.push(f);
                return;
            }
            JunkKind::HeaderCrc => (
                Code::HeaderCrc,
                "node header CRC fails: Linux skips it, and the node is lost".to_string(),
            ),
            JunkKind::ShortTotlen => (
                Code::HeaderCrc,
                "node header claims fewer than 12 bytes: Linux skips it".to_string(),
            ),
            JunkKind::OldMagic => (
                Code::Garbage,
                "old JFFS1 magic 0x1984: Linux refuses such nodes".to_string(),
            ),
            JunkKind::Swapped => (
                Code::Garbage,
                "magic in the other byte order (0x8519): is this image of the other endianness?"
                    .to_string(),
            ),
            JunkKind::Zero => (
                Code::Garbage,
                "zero words where a node should be".to_string(),
            ),
            JunkKind::BadMagic(m) => (
                Code::Garbage,
                format!("magic 0x{m:04x} instead of 0x1985: neither a node nor erased flash"),
            ),
        };
        let mut msg = format!("{what} ({} bytes of dirty space)", j.len);
        let mut code = code;
        if let Some((c, note)) = self.torn_note(j.offset, j.len) {
            code = c;
            msg.push_str(&note);
        }
        self.findings.push(Finding::new(code, msg).at(j.offset));
    }

    /// Findings of one node: stray bytes it carries, its place and kind, then its fault.
    fn node(&mut self, w: &BlockWalk, n: &WNode) {
        let o = n.offset;
        let start = w.offset;
        self.node_stray_bytes(n);
        match n.body {
            Body::Cleanmarker => {
                self.cleanmarker(n, start);
                return;
            }
            Body::Summary => {
                if o + n.totlen != start + self.es {
                    self.findings.push(
                        Finding::new(
                            Code::SummaryInvalid,
                            format!(
                                "summary node of {} bytes does not end at the end of its erase block (0x{:08x}): Linux cannot find it (made for another erase size?)",
                                n.totlen,
                                start + self.es
                            ),
                        )
                        .at(o),
                    );
                }
                return;
            }
            Body::Unknown if n.accurate => {
                self.unknown_node(n);
                return;
            }
            _ => {}
        }
        let Some(fault) = n.fault.as_deref() else {
            return;
        };
        if n.accurate && self.model_offsets.contains(&o) {
            // The model reported it with the inode and the kernel's verdict.
            return;
        }
        let (code, what) = self.fault_text(n, fault);
        let ino = match &n.body {
            Body::Inode { ino, .. } => Some(*ino),
            Body::Dirent { pino, .. } => Some(*pino),
            Body::Xref { ino, .. } => Some(*ino),
            _ => None,
        };
        let (mut sev, why) = self.fault_severity(n);
        let mut code = code;
        let mut msg = format!("{what}{why}");
        if n.accurate || self.truncated(o, n.totlen) {
            if let Some((c, note)) = self.torn_note(o, n.totlen) {
                code = c;
                sev = Severity::Error;
                msg.push_str(&note);
            }
        }
        let path = ino.and_then(|i| self.path_of(i));
        self.findings.push(
            Finding::new(code, msg)
                .with_severity(sev)
                .at(o)
                .ino(ino)
                .path(path),
        );
    }

    /// Bytes of a node no CRC covers that JFFS2 writers leave blank: its padding, the data CRC
    /// of an inode node without data.
    fn node_stray_bytes(&mut self, n: &WNode) {
        let o = n.offset;
        if n.bad_padding > 0 {
            self.findings.push(
                Finding::new(
                    Code::PaddingNotErased,
                    format!(
                        "{} padding bytes of this node are not 0xFF: no CRC covers them and Linux ignores them, but JFFS2 writers leave them erased (altered image or failing flash?)",
                        n.bad_padding
                    ),
                )
                .at(o),
            );
        }
        if let Some(crc) = n.stray_data_crc {
            self.findings.push(
                Finding::new(
                    Code::StrayDataCrc,
                    format!(
                        "inode node without data has data CRC 0x{crc:08x}: writers store 0, no CRC covers the field and Linux ignores it (altered image or failing flash?)"
                    ),
                )
                .at(o),
            );
        }
    }

    /// A cleanmarker Linux ignores: obsolete, away from its block's start, or of another size.
    fn cleanmarker(&mut self, n: &WNode, start: u32) {
        let o = n.offset;
        let cm = self.fs.scan().geometry.cleanmarker_size;
        if !n.accurate {
            self.findings.push(
                Finding::new(
                    Code::CleanmarkerObsolete,
                    "cleanmarker with its ACCURATE bit cleared: Linux never obsoletes cleanmarkers (a flipped bit?)"
                        .to_string(),
                )
                .at(o),
            );
        } else if o != start {
            self.findings.push(
                Finding::new(
                    Code::CleanmarkerMisplaced,
                    format!(
                        "cleanmarker not at the start of its erase block (0x{start:08x}): Linux ignores it (wrong erase size?)"
                    ),
                )
                .at(o),
            );
        } else if n.totlen != cm {
            self.findings.push(
                Finding::new(
                    Code::CleanmarkerSize,
                    format!(
                        "cleanmarker of {} bytes where Linux expects {cm}: it is ignored and the block counts as dirty",
                        n.totlen
                    ),
                )
                .at(o),
            );
        }
    }

    /// A valid node of a type Linux does not know: what its compatibility bits make of it.
    fn unknown_node(&mut self, n: &WNode) {
        let t = n.nodetype | NODE_ACCURATE;
        let (code, what) = match t & COMPAT_MASK {
            FEATURE_INCOMPAT => (Code::IncompatNode, "INCOMPAT: Linux refuses to mount"),
            FEATURE_ROCOMPAT => (
                Code::RocompatNode,
                "ROCOMPAT: Linux mounts the filesystem read-only only",
            ),
            FEATURE_RWCOMPAT_COPY => (Code::UnknownNode, "RWCOMPAT_COPY: Linux keeps it as it is"),
            _ => (
                Code::UnknownNode,
                "RWCOMPAT_DELETE: Linux treats it as dirty space",
            ),
        };
        self.findings.push(
            Finding::new(
                code,
                format!("node type 0x{:04x} unknown to Linux, {what}", n.nodetype),
            )
            .at(n.offset),
        );
    }

    /// The code and description of a node's fault, named after the node's kind.
    fn fault_text(&self, n: &WNode, fault: &Fault) -> (Code, String) {
        let kind = match n.nodetype | NODE_ACCURATE {
            NODETYPE_INODE => "inode node",
            NODETYPE_DIRENT => "dirent",
            NODETYPE_XATTR => "xattr node",
            NODETYPE_XREF => "xattr reference",
            _ => "node",
        };
        match fault {
            Fault::NodeCrc { stored, computed } => (
                Code::NodeCrc,
                format!("{kind}: node CRC 0x{stored:08x}, calculated 0x{computed:08x}"),
            ),
            Fault::NameCrc { stored, computed } => (
                Code::NameCrc,
                format!("{kind}: name CRC 0x{stored:08x}, calculated 0x{computed:08x}"),
            ),
            Fault::NulInName { at } => (
                Code::NameCrc,
                format!("{kind}: the name has a NUL byte at {at}; Linux truncates it there"),
            ),
            // Linux's scan checks only the CRCs: it lists such an entry, but no path can
            // reach it (e2fsck's "illegal characters" / "zero-length name" / "'.' in the
            // wrong place"); it was crafted or corrupted, never written by Linux.
            Fault::BadName { why } => {
                let name = match &n.body {
                    Body::Dirent { name, .. } => crate::text::escape(name.get(self.img), true),
                    _ => String::new(),
                };
                (
                    Code::BadName,
                    format!(
                        "{kind}: the name \"{name}\" cannot be a file name ({why}): Linux lists it, but no path reaches it"
                    ),
                )
            }
            Fault::DataCrc { stored, computed } => (
                Code::DataCrc,
                format!("{kind}: data CRC 0x{stored:08x}, calculated 0x{computed:08x}"),
            ),
            Fault::Length(why) => (Code::BadLength, format!("{kind}: {why}")),
            Fault::Data(err) => {
                let compr = match n.body {
                    Body::Inode { compr, .. } => compr,
                    _ => 0,
                };
                if walk::unavailable_compressor(err) {
                    (
                        Code::UnknownCompressor,
                        format!(
                            "{kind}: compressor {} ({compr}) is not available in Linux{}",
                            compr_name(compr),
                            walk::compressor_hint(compr)
                        ),
                    )
                } else {
                    (Code::UnreadableData, format!("{kind}: {err}"))
                }
            }
        }
    }

    /// How much a damaged node matters, by whether Linux still reads it, and why.
    fn fault_severity(&self, n: &WNode) -> (Severity, &'static str) {
        let body_ino = match &n.body {
            Body::Inode { ino, .. } => Some(*ino),
            _ => None,
        };
        if !n.accurate {
            (
                Severity::Info,
                "; the node is obsolete on flash and Linux never reads it again",
            )
        } else {
            match self.status.get(&n.offset) {
                Some(Status::Used(_)) => (Severity::Error, ""),
                Some(Status::Superseded(_)) => (
                    Severity::Warning,
                    "; newer nodes supersede it, Linux ignores it",
                ),
                None => {
                    let deleted = body_ino.is_some_and(|i| !self.fs.exists(i));
                    if deleted {
                        (
                            Severity::Info,
                            "; it belongs to a deleted inode whose nodes are still on flash",
                        )
                    } else {
                        (Severity::Error, "")
                    }
                }
            }
        }
    }

    /// A node the image file ends inside, even when what is missing happened to be padding
    /// (the damaged ones already carry `truncated-image`).
    fn truncation(&mut self) {
        if self.image_len >= self.img.len() as u64 {
            return;
        }
        let Some(w) = self.walks.get(self.block_index(self.image_len as u32)) else {
            return;
        };
        let cut = w
            .nodes
            .iter()
            .find(|n| self.truncated(n.offset, n.totlen))
            .map(|n| (n.offset, n.totlen));
        if let Some((o, len)) = cut {
            if !self
                .findings
                .iter()
                .any(|f| f.code == Code::TruncatedImage && f.offset == Some(o))
            {
                self.findings.push(
                    Finding::new(
                        Code::TruncatedImage,
                        format!(
                            "node of {len} bytes: the image file ends inside it (at 0x{:08x}): the image is truncated",
                            self.image_len
                        ),
                    )
                    .at(o),
                );
            }
        }
    }

    /// OpenWrt's LZMA data nodes, in one note: they were decompressed and verified, and are
    /// readable by OpenWrt kernels only.
    fn lzma_nodes(&mut self) {
        let mut first = None;
        let (mut count, mut bytes) = (0u64, 0u64);
        for w in self.walks {
            for n in &w.nodes {
                if let Body::Inode {
                    compr: COMPR_LZMA,
                    size,
                    ..
                } = n.body
                {
                    if n.accurate {
                        first = first.or(Some(n.offset));
                        count += 1;
                        bytes += u64::from(size);
                    }
                }
            }
        }
        if let Some(o) = first {
            self.findings.push(
                Finding::new(
                    Code::LzmaCompression,
                    format!(
                        "{count} data nodes ({bytes} bytes of data) are compressed with LZMA (compressor 8, OpenWrt's JFFS2 patch), the first at 0x{o:08x}: they were checked like the others and OpenWrt kernels read them, but Linux without OpenWrt's patch (Debian's, mainline) cannot read these files (compression type 0x08 not available); jffs2-convert -x lzma rewrites them with zlib"
                    ),
                ),
            );
        }
    }

    /// Dead data nodes left compressed once their block's decompression budget was spent,
    /// in one note: never a silent skip.
    fn dead_data_budget(&mut self) {
        let count: u64 = self.walks.iter().map(|w| w.not_decompressed).sum();
        let first = self.walks.iter().find_map(|w| w.first_not_decompressed);
        if let Some(o) = first {
            self.findings.push(
                Finding::new(
                    Code::DecompressionBudget,
                    format!(
                        "decompression budget exhausted at 0x{o:08x}: {count} superseded or deleted data nodes not decompressed (their node and data CRCs are checked; Linux never reads them); each erase block decompresses at most {}x its size of such data",
                        walk::DEAD_DATA_PER_BYTE
                    ),
                )
                .at(o),
            );
        }
    }

    /// Data nodes covering more than the largest page Linux uses, in one note: Linux writes
    /// at most a page per node (docs/spec/kernel-jffs2-spec.md §8.3, §11: `jffs2_write_inode_range`) and
    /// reads one whole into a buffer of its size; mkfs.jffs2 `-s` takes any page size. Holes
    /// (ZERO nodes) excepted: Linux writes those across pages itself.
    fn large_data_nodes(&mut self) {
        let mut first = None;
        let (mut count, mut largest) = (0u64, 0u32);
        for w in self.walks {
            for n in &w.nodes {
                if let Body::Inode { size, compr, .. } = n.body {
                    if n.accurate && compr != COMPR_ZERO && size > LARGEST_PAGE {
                        first = first.or(Some(n.offset));
                        count += 1;
                        largest = largest.max(size);
                    }
                }
            }
        }
        if let Some(o) = first {
            self.findings.push(
                Finding::new(
                    Code::LargeDataNode,
                    format!(
                        "{count} data nodes cover more than {} KiB each (the largest page Linux uses), the first at 0x{o:08x}, the largest {largest} bytes: Linux writes at most a page per node and reads each whole into a buffer of its size (up to its 4 MiB allocation limit); made by mkfs.jffs2 -s with a large page size, or crafted",
                        LARGEST_PAGE / 1024
                    ),
                )
                .at(o),
            );
        }
    }

    /// Kernel messages no finding explains become findings of their own.
    fn kernel_messages(&mut self, log: &[KernelMsg]) {
        let blocks: HashSet<usize> = self
            .findings
            .iter()
            .filter_map(|f| f.offset)
            .map(|o| self.block_index(o))
            .collect();
        let any_error = self.findings.iter().any(|f| f.severity == Severity::Error);
        let any_warn = self
            .findings
            .iter()
            .any(|f| f.severity >= Severity::Warning);
        let mut add = Vec::new();
        for m in log {
            let sev = match m.level {
                Level::Err => Severity::Error,
                Level::Warning => Severity::Warning,
                _ => continue,
            };
            let covered = match m.offset {
                Some(o) => blocks.contains(&self.block_index(o)),
                None => match sev {
                    Severity::Error => any_error,
                    _ => any_warn,
                },
            };
            if !covered {
                let mut f = Finding::new(Code::KernelMessage, format!("Linux logs: {}", m.text))
                    .with_severity(sev);
                f.offset = m.offset;
                add.push(f);
            }
        }
        self.findings.extend(add);
    }
}

#[allow(dead_code)]
fn is_live(state: RefState) -> bool {
    state != RefState::Obsolete
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::Img;

    /// The tree walk given what the inode reads kept of the non-directories (`read_inodes`)
    /// finds what it finds reading them again: entries, first paths, counts and problems, with
    /// a hard link, a symbolic link, an xattr and a file whose data fails its CRC.
    #[test]
    fn the_tree_walk_from_the_kept_inodes_equals_reading_them_again() {
        let mut i = Img::new();
        i.dir(1, 2, b"etc", 1)
            .file(2, 3, b"motd", 1, b"hello, flash\n");
        i.dirent(2, 2, 3, crate::format::dt::REG, b"motd-again");
        i.inode(
            crate::format::InodeNode {
                ino: 9,
                version: 1,
                mode: 0o120777,
                isize: 6,
                dsize: 6,
                ..Default::default()
            },
            b"target",
        );
        i.dirent(1, 4, 9, crate::format::dt::LNK, b"link");
        i.xattr(1, 1, 1, b"comment", b"kept").xref(3, 1, 1);
        i.meta(8, 2, 0o100644, 100);
        i.data(8, 1, 100, 0, &[7u8; 4096])
            .dirent(1, 5, 8, crate::format::dt::REG, b"clipped");
        let mut img = i.build();
        // The clipped file's data fails its CRC: a problem its read records.
        let at = img
            .windows(64)
            .position(|w| w.iter().all(|&b| b == 7))
            .expect("the data");
        img[at + 10] ^= 1;
        let opened = crate::Image::from_bytes(&img).expect("image");
        let fs = opened.mount().expect("mounts");
        let (_, _, known) = read_inodes(&fs);
        assert_eq!(known.len(), 3, "the three non-directories");
        let shown = |(tree, first, counts): (fs::Tree, HashMap<u32, Vec<u8>>, TreeCounts)| {
            let first: BTreeMap<u32, Vec<u8>> = first.into_iter().collect();
            format!("{tree:?} {first:?} {counts:?}")
        };
        let kept = shown(walk_tree(&fs, true, known));
        assert_eq!(kept, shown(walk_tree(&fs, true, Known::new())));
        assert!(
            kept.contains("kind: Symlink") && kept.contains("DataCrc { ino: 8"),
            "{kept}"
        );
    }
}
