//! Autodetection of the byte order and erase-block size of an image.
//!
//! The evidence, strongest first:
//!
//! * **Byte order**: node headers whose magic and header CRC are valid in one byte order
//!   (walking the image node to node, skipping 0xFF runs, as the kernel's resync does).
//! * **Summary markers**: a summary node at `s` with `totlen` `T` ends at a block end, and
//!   its marker (last 8 bytes of the block) holds its offset in the block `o`: the erase size
//!   is `o + T` (`docs/spec/kernel-jffs2-spec.md` §1.7).
//! * **Nodes never cross an erase-block boundary** (mkfs and the kernel both refuse, §10.3,
//!   `docs/spec/mtd-utils-spec.md` §3.6): a candidate size that some node crosses is too small. Every
//!   block that holds data starts with a node (a cleanmarker, or with `-n` the first node),
//!   so a candidate boundary in the middle of data with no node starting there is wrong.
//! * **Cleanmarkers** sit only at block starts; with cleanmarkers in use, the true size is the
//!   one whose block starts carry them (a half-size candidate has a 0xFF "block start"
//!   between every two cleanmarkers).
//! * **0xFF before boundaries**: mkfs pads a block's tail with 0xFF, so data often resumes
//!   right after an 0xFF run exactly at a block start.
//!
//! Candidates are the powers of two from 8 KiB to 1 MiB, plus sizes the evidence itself
//! proposes (a summary's `o + T`, the GCD of cleanmarker offsets, the GCD of the offsets where
//! data resumes after 0xFF), which covers non-powers such as 0x2100. The smallest candidate
//! consistent with every node is chosen (larger multiples are consistent too, but their
//! boundaries are a subset of the true ones). When none is (a damaged image: bytes cut out
//! or inserted shift the blocks after them), the one with the most block starts holding a
//! node before its layout first breaks.

use super::Geometry;
use crate::format::{hdr, NodeHeader, HEADER_SIZE};
use crate::format::{pad4, Endian, MAGIC, NODETYPE_CLEANMARKER, NODETYPE_SUMMARY, SUM_MAGIC};

/// The outcome of [`detect`].
#[derive(Debug, Clone, PartialEq)]
pub struct Detection {
    /// The geometry to scan with.
    pub geometry: Geometry,
    /// How sure of the whole geometry, which is how sure of the erase size: 0 = not a
    /// JFFS2 image (or nothing to go on), 1 = certain.
    pub confidence: f32,
    /// How sure of the byte order alone: the share of node bytes whose header CRCs match in
    /// the chosen byte order (1 when none match in the other), 0 with no node at all. A
    /// header CRC matching in the wrong byte order is a 1 in 2^32 chance per header.
    pub endian_confidence: f32,
    /// One sentence per piece of evidence, for `-v`.
    pub evidence: Vec<String>,
}

/// Erase size assumed when the image gives no clue (mkfs.jffs2's default).
const DEFAULT_ERASE: u32 = 64 * 1024;
/// Smallest and largest sizes considered.
const MIN_ERASE: u32 = 4 * 1024;
const MAX_ERASE: u32 = 16 * 1024 * 1024;

/// A node found by the walk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Node {
    pub(super) ofs: u32,
    pub(super) totlen: u32,
    pub(super) nodetype: u16,
}

/// What a node-to-node walk in one byte order found.
#[derive(Debug, Default)]
pub(super) struct Walk {
    pub(super) nodes: Vec<Node>,
    pub(super) node_bytes: u64,
    ff_bytes: u64,
}

fn is_ff(b: &[u8]) -> bool {
    b.iter().all(|&c| c == 0xFF)
}

/// The first 4-aligned offset `q >= p` in `region` (the image up to where the search
/// stops) with `q + 12 <= len` (the image's length) whose word starts with the magic bytes
/// `finder` looks for. `memmem` (SIMD) does the searching: in the wrong byte
/// order, where nothing is a node, this is a pass over the whole image at memory speed.
fn next_magic(
    region: &[u8],
    len: usize,
    mut p: usize,
    finder: &memchr::memmem::Finder<'_>,
) -> Option<usize> {
    // Most often the next node follows the last one: a search costs far more than a look.
    if p % 4 == 0 && p + 12 <= len && region.get(p..p + 2) == Some(finder.needle()) {
        return Some(p);
    }
    while p < region.len() && p + 12 <= len {
        let q = p + finder.find(region.get(p..)?)?;
        if q % 4 == 0 {
            return (q + 12 <= len).then_some(q);
        }
        p = q + 1;
    }
    None
}

/// Bytes of the 4-aligned 0xFF words in `img[a..b]` (`a` aligned).
fn ff_words(img: &[u8], a: usize, b: usize) -> u64 {
    img.get(a..b.min(img.len())).map_or(0, |g| {
        g.chunks_exact(4).filter(|c| is_ff(c)).count() as u64 * 4
    })
}

/// Walks `img` like the kernel's resync: a header with a valid magic and header CRC
/// (ACCURATE bit forced) is a node and is skipped by `PAD(totlen)`; anything else advances
/// 4 bytes (0xFF runs, which hold no magic, included: stepping over them word by word finds
/// the same nodes). `ff_bytes` is left to [`count_ff`], for the byte order that wins.
pub(super) fn walk(img: &[u8], e: Endian) -> Walk {
    let mut w = Walk::default();
    walk_range(img, e, 0, img.len(), &mut w);
    w
}

/// Images at least this large are walked in parts at once by [`walk_split`].
const SPLIT_MIN: usize = 4 << 20;

/// How many threads the detection uses for an image of `len` bytes: as many as rayon's pool
/// has (one per core, or `RAYON_NUM_THREADS`: a run limited to one thread stays on one),
/// each with at least [`SPLIT_MIN`] / 2 bytes to walk. The pool itself is not asked: that
/// would build it, before a tool names its threads.
fn detect_threads(len: usize) -> usize {
    if len < SPLIT_MIN {
        return 1;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let limit = std::env::var("RAYON_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or(cores);
    limit.clamp(1, (len / (SPLIT_MIN / 2)).max(1))
}

/// [`walk`], `img` cut in as many parts as there are cores, walked at once: the first page
/// read of a mapped image is most of a walk's cost. Each part's walk starts at its start,
/// where the walk of the parts before may be inside a node; from the first position the walk
/// so far reaches that the part's walk also stood on (any 4-aligned position not strictly
/// inside one of its nodes: the walk only ever steps 4 bytes or over a node), the two walks
/// are the same, so the walk so far continues on its own only up to there. The nodes are
/// those of [`walk`].
pub(super) fn walk_split(img: &[u8], e: Endian) -> Walk {
    let n = detect_threads(img.len());
    if n < 2 {
        return walk(img, e);
    }
    let starts: Vec<usize> = (1..n).map(|k| img.len() / n * k / 4 * 4).collect();
    walk_parts(img, e, &starts)
}

/// [`walk_split`] with the parts starting at 0 and at `starts` (4-aligned, ascending).
pub(super) fn walk_parts(img: &[u8], e: Endian, starts: &[usize]) -> Walk {
    let bounds: Vec<(usize, usize)> = std::iter::once(0)
        .chain(starts.iter().copied())
        .zip(starts.iter().copied().chain(std::iter::once(img.len())))
        .collect();
    let mut parts = par_map("jffs2-detect", bounds.len(), |k| {
        let (from, to) = bounds[k];
        let mut w = Walk::default();
        walk_range(img, e, from, to, &mut w);
        w
    })
    .into_iter();
    let mut w = parts.next().unwrap_or_default();
    for (part, &start) in parts.zip(starts) {
        join_part(img, e, &mut w, part, start);
    }
    w
}

/// Continues `w` (the walk of everything before `start`) with `part`, the walk from `start`
/// on: see [`walk_split`].
fn join_part(img: &[u8], e: Endian, w: &mut Walk, part: Walk, start: usize) {
    loop {
        // Where the walk so far stands: past its last node, and at the part's start at least.
        let at = w.nodes.last().map_or(start, |n| {
            (n.ofs as usize + pad4(n.totlen) as usize).max(start)
        });
        // The part's node `at` lies strictly inside, if any: the walk so far goes on alone to
        // its end (and past whatever it finds itself there).
        let i = part.nodes.partition_point(|n| (n.ofs as usize) < at);
        let inside = i
            .checked_sub(1)
            .and_then(|j| part.nodes.get(j))
            .map(|n| n.ofs as usize + pad4(n.totlen) as usize)
            .filter(|&end| end > at);
        match inside {
            Some(end) => {
                let before = w.nodes.len();
                walk_range(img, e, at, end.min(img.len()), w);
                if w.nodes.len() == before {
                    // Nothing found up to `end`: the walk so far now stands at `end`, which
                    // the part's walk reached too.
                    let rest = part.nodes.partition_point(|n| (n.ofs as usize) < end);
                    splice(w, &part.nodes[rest..]);
                    return;
                }
            }
            None => {
                splice(w, &part.nodes[i..]);
                return;
            }
        }
    }
}

/// `f(0)`, …, `f(n - 1)`, each on a thread of its own (named `name`) while this one waits;
/// those no thread could be had for run here. The detection runs before the tools set up
/// their thread pools: rayon's global pool is not used here.
fn par_map<R: Send>(name: &str, n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    if n < 2 {
        return (0..n).map(f).collect();
    }
    let f = &f;
    std::thread::scope(|s| {
        let spawned: Vec<_> = (0..n)
            .map(|k| {
                std::thread::Builder::new()
                    .name(format!("{name}-{k}"))
                    .spawn_scoped(s, move || f(k))
            })
            .collect();
        spawned
            .into_iter()
            .enumerate()
            .map(|(k, h)| match h.map(|h| h.join()) {
                Ok(Ok(r)) => r,
                Ok(Err(panic)) => std::panic::resume_unwind(panic),
                Err(_) => f(k),
            })
            .collect()
    })
}

/// Runs `a` on a thread of its own (named `name`) and `b` on this one, or both here when no
/// thread can be had (a tool run under a thread limit works as before, one after the other).
/// The detection runs before the tools set up their thread pools: rayon's global pool is not
/// used here.
pub(crate) fn join2<RA: Send, RB>(
    name: &str,
    a: impl FnOnce() -> RA + Send,
    b: impl FnOnce() -> RB,
) -> (RA, RB) {
    let a = std::sync::Mutex::new(Some(a));
    let take = || a.lock().ok().and_then(|mut g| g.take());
    std::thread::scope(|s| {
        let spawned = std::thread::Builder::new()
            .name(name.into())
            .spawn_scoped(s, || take().map(|f| f()));
        let rb = b();
        let ra = match spawned.map(|h| h.join()) {
            Ok(Ok(Some(ra))) => Some(ra),
            Ok(Err(panic)) => std::panic::resume_unwind(panic),
            _ => None,
        };
        match ra.or_else(|| take().map(|f| f())) {
            Some(ra) => (ra, rb),
            // `a` ran on neither thread: cannot happen (it is taken once, and run by
            // whoever took it); run nothing twice.
            None => unreachable!("join2: the first closure was lost"),
        }
    })
}

/// Appends `nodes` (found after what `w` holds) to `w`.
fn splice(w: &mut Walk, nodes: &[Node]) {
    w.node_bytes += nodes.iter().map(|n| u64::from(n.totlen)).sum::<u64>();
    w.nodes.extend_from_slice(nodes);
}

/// [`walk`] for the nodes that start in `img[from..to]` (a node may end beyond `to`), from
/// `from` or from the end of the last node `w` holds, whichever is further; found nodes are
/// added to `w`.
fn walk_range(img: &[u8], e: Endian, from: usize, to: usize, w: &mut Walk) {
    let m = e.u16_bytes(MAGIC);
    let finder = memchr::memmem::Finder::new(&m);
    let mut p = from;
    if let Some(last) = w.nodes.last() {
        p = p.max(last.ofs as usize + pad4(last.totlen) as usize);
    }
    let region = &img[..to.min(img.len())];
    while let Some(q) = next_magic(region, img.len(), p, &finder) {
        p = q;
        let nodetype = e.get_u16(img, p + hdr::NODETYPE).unwrap_or(0);
        let totlen = e.get_u32(img, p + hdr::TOTLEN).unwrap_or(0);
        let hdr_crc = e.get_u32(img, p + hdr::HDR_CRC).unwrap_or(0);
        let h = NodeHeader {
            magic: MAGIC,
            nodetype,
            totlen,
            hdr_crc,
        };
        if h.crc_ok(e)
            && totlen >= HEADER_SIZE as u32
            && (p as u64 + u64::from(totlen)) <= img.len() as u64
        {
            w.nodes.push(Node {
                ofs: p as u32,
                totlen,
                nodetype,
            });
            w.node_bytes += u64::from(totlen);
            p += pad4(totlen) as usize;
            continue;
        }
        p += 4;
    }
}

/// Both byte orders' walks. The one likelier to be right (more node bytes in the first
/// MiB) walks the whole image; the other only where the first found no node: a node of one
/// byte order cannot lie inside a node of the other (short of a header CRC matching by
/// chance), so this finds the nodes the other's own walk of the whole image finds, without
/// a second pass over the image at memory speed.
pub(super) fn walks(img: &[u8]) -> (Walk, Walk) {
    const PROBE: usize = 1 << 20;
    let probe = &img[..img.len().min(PROBE)];
    let (le, be) = (walk(probe, Endian::Little), walk(probe, Endian::Big));
    let (first, second) = if le.node_bytes >= be.node_bytes {
        (Endian::Little, Endian::Big)
    } else {
        (Endian::Big, Endian::Little)
    };
    let main = walk_split(img, first);
    let mut other = Walk::default();
    let mut at = 0usize;
    for n in &main.nodes {
        let ofs = n.ofs as usize;
        if ofs > at {
            walk_range(img, second, at, ofs, &mut other);
        }
        at = at.max(ofs + pad4(n.totlen) as usize);
    }
    if at < img.len() {
        walk_range(img, second, at, img.len(), &mut other);
    }
    match first {
        Endian::Little => (main, other),
        Endian::Big => (other, main),
    }
}

/// Erased bytes (aligned 0xFF words) outside the nodes `w` found.
fn count_ff(img: &[u8], w: &mut Walk) {
    let mut at = 0usize;
    let mut ff = 0u64;
    for n in &w.nodes {
        let ofs = n.ofs as usize;
        if ofs > at {
            ff += ff_words(img, at, ofs);
        }
        at = at.max(ofs + pad4(n.totlen) as usize);
    }
    ff += ff_words(img, at, img.len());
    w.ff_bytes = ff;
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// How a candidate erase size fares.
#[derive(Debug, Clone, Default)]
struct Fit {
    erase: u32,
    /// Nodes crossing a boundary.
    crossing: usize,
    /// Boundaries inside data with no node starting there.
    bad: usize,
    /// Boundaries with a cleanmarker / another node / erased flash.
    at_cm: usize,
    at_node: usize,
    at_ff: usize,
    /// Cleanmarkers not at a boundary.
    cm_off: usize,
    /// Summaries not ending at a boundary.
    sum_off: usize,
    /// A cleanmarker at offset 0 (counted in `at_cm`, not in the support).
    cm_at_zero: bool,
    /// Boundaries after the first one preceded by 0xFF (block tail padding).
    ff_tail: usize,
    /// The longest stretch of the image laid out in blocks of this size ([`longest_run`]).
    run: Run,
}

/// A stretch of an image laid out in blocks of one size: consecutive block starts holding a
/// node, with no node across a boundary, no boundary inside data and no cleanmarker or summary
/// out of place between them.
#[derive(Debug, Clone, Copy, Default)]
struct Run {
    /// Block starts holding a node, the stretch's first one (its anchor) not counted.
    starts: usize,
    /// Offsets of the anchor and of the last block start.
    from: u64,
    to: u64,
}

impl Fit {
    fn consistent(&self) -> bool {
        self.crossing == 0 && self.bad == 0 && self.cm_off == 0 && self.sum_off == 0
    }
    /// Boundaries (other than offset 0) where a block visibly starts.
    fn support(&self) -> usize {
        self.at_cm + self.at_node - usize::from(self.cm_at_zero)
    }
    fn cm_frac(&self) -> f64 {
        let d = self.at_cm + self.at_ff;
        if d == 0 {
            0.0
        } else {
            self.at_cm as f64 / d as f64
        }
    }
    fn badness(&self) -> usize {
        self.crossing + self.bad + self.cm_off + self.sum_off
    }
}

fn evaluate(img: &[u8], nodes: &[Node], erase: u32, e: Endian) -> Fit {
    let mut f = Fit {
        erase,
        run: longest_run(img, nodes, erase),
        ..Default::default()
    };
    let es = u64::from(erase);
    for n in nodes {
        let a = u64::from(n.ofs);
        let z = a + u64::from(n.totlen) - 1;
        if a / es != z / es {
            f.crossing += 1;
        }
        let t = n.nodetype;
        if t == NODETYPE_CLEANMARKER && a % es != 0 {
            f.cm_off += 1;
        }
        if t == NODETYPE_SUMMARY && (z + 1) % es != 0 {
            f.sum_off += 1;
        }
    }
    let data_end = nodes
        .last()
        .map(|n| u64::from(n.ofs) + u64::from(n.totlen))
        .unwrap_or(0);
    let mut b = 0u64;
    let mut ni = 0usize;
    while b < img.len() as u64 {
        while ni < nodes.len() && u64::from(nodes[ni].ofs) < b {
            ni += 1;
        }
        let starts = ni < nodes.len() && u64::from(nodes[ni].ofs) == b;
        let bi = b as usize;
        if starts {
            if nodes[ni].nodetype == NODETYPE_CLEANMARKER {
                // Offset 0 counts for the cleanmarker ratio, not for the support.
                f.at_cm += 1;
                f.cm_at_zero |= b == 0;
            } else if b > 0 {
                f.at_node += 1;
            }
        } else {
            let win = (erase as usize).min(256).min(img.len() - bi);
            if is_ff(&img[bi..bi + win]) {
                f.at_ff += 1;
            } else if b < data_end {
                f.bad += 1;
            }
        }
        if b > 0 && bi >= 4 {
            let before = &img[bi - 4..bi];
            if is_ff(before) || e.get_u32(img, bi - 4) == Some(SUM_MAGIC) {
                f.ff_tail += 1;
            }
        }
        b += es;
    }
    f
}

/// The longest run of `erase`-byte blocks in `img` (see [`Run`]), the first starting at
/// offset 0. Bytes cut out of or inserted into an image shift the blocks after them, so after
/// a break the count starts again at the next node that can only be a block start: a
/// cleanmarker, or a node right after erased bytes (mkfs.jffs2 pads a block's tail with 0xFF
/// and starts the next block with its first node, `docs/spec/mtd-utils-spec.md` §3.6.2; a
/// summary, after the 0xFF before its block's end, is not one).
fn longest_run(img: &[u8], nodes: &[Node], erase: u32) -> Run {
    let es = u64::from(erase);
    // The next boundary of the current run; None between a break and the next anchor.
    let mut next: Option<u64> = Some(es);
    let (mut cur, mut best) = (Run::default(), Run::default());
    let mut end = 0u64;
    let mut keep = |r: &Run| {
        if r.starts > best.starts {
            best = *r;
        }
    };
    for n in nodes {
        let (a, z) = (u64::from(n.ofs), u64::from(n.ofs) + u64::from(n.totlen));
        // Boundaries between the previous node and this one must fall on erased bytes.
        while let Some(b) = next.filter(|&b| b < a) {
            let win = &img[b as usize..(b + 256).min(a) as usize];
            if b >= end && !is_ff(win) {
                keep(&cur);
                next = None;
            } else {
                next = Some(b + es);
            }
        }
        let after_ff = a >= end + 4 && is_ff(&img[a as usize - 4..a as usize]);
        let anchor =
            n.nodetype == NODETYPE_CLEANMARKER || (n.nodetype != NODETYPE_SUMMARY && after_ff);
        end = a + u64::from(pad4(n.totlen));
        if next == Some(a) {
            cur.starts += 1;
            cur.to = a;
            next = Some(a + es);
        } else if anchor {
            if next.is_some() {
                keep(&cur); // a block start off this run's boundaries: a shift
            }
            cur = Run {
                starts: 0,
                from: a,
                to: a,
            };
            next = Some(a + es);
        }
        let Some(b) = next else { continue };
        let sum_off = n.nodetype == NODETYPE_SUMMARY && z != b;
        if b < z || sum_off {
            keep(&cur); // a node across a boundary, or a summary not at its block's end
            next = None;
        }
    }
    if next.is_some() {
        keep(&cur);
    }
    best
}

fn kib(v: u32) -> String {
    if v % 1024 == 0 {
        format!("{} KiB", v / 1024)
    } else {
        format!("{v:#x} bytes")
    }
}

fn unknown(evidence: Vec<String>, confidence: f32) -> Detection {
    Detection {
        geometry: Geometry {
            endian: Endian::Little,
            erase_size: DEFAULT_ERASE,
            cleanmarker_size: 12,
        },
        confidence,
        endian_confidence: 0.0,
        evidence,
    }
}

/// Detects the byte order, erase-block size and cleanmarker size of a JFFS2 image.
///
/// * An empty file or data with no valid JFFS2 node: confidence 0, the evidence says why.
/// * An all-0xFF image: a valid empty filesystem whose geometry cannot be told; little
///   endian, 64 KiB, 12-byte cleanmarkers with confidence 0.1.
/// * `cleanmarker_size` is the size of the cleanmarkers found (12 from mkfs.jffs2), or 0 for
///   an image without any (`mkfs.jffs2 -n`, NAND-style): a NOR kernel expects 12 but, with
///   none present, nothing complains.
///
/// Linear in the image size; never panics.
///
/// ```
/// use jffs2::format::Endian;
/// use jffs2::scan::detect;
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
/// let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
/// let cfg = jffs2::mkfs::MkfsConfig {
///     endian: Endian::Big,
///     erase_size: 128 * 1024,
///     pad: jffs2::layout::EndPad::Size(640 * 1024), // cleanmarkers in all 5 blocks
///     ..Default::default()
/// };
/// let mut image = Vec::new();
/// jffs2::mkfs::build(&tree, &cfg, &mut image, &mut jffs2::mkfs::NullSink)?;
///
/// let d = detect(&image);
/// let g = d.geometry;
/// assert_eq!((g.endian, g.erase_size, g.cleanmarker_size), (Endian::Big, 128 * 1024, 12));
/// assert!(d.confidence > 0.5);
///
/// let junk = detect(b"certainly not JFFS2");
/// assert_eq!(junk.confidence, 0.0);
/// assert!(junk.evidence.last().unwrap().contains("not a JFFS2 image"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn detect(image: &[u8]) -> Detection {
    detect_into(image, &mut Vec::new())
}

/// [`detect`], with the offsets of the nodes its walk found in the byte order it chose (a
/// scan's prefetch hints: [`crate::scan::engine::scan_hinted`]).
pub(crate) fn detect_with_nodes(image: &[u8]) -> (Detection, Vec<u32>) {
    let mut nodes = Vec::new();
    let d = detect_into(image, &mut nodes);
    (d, nodes)
}

fn detect_into(image: &[u8], nodes: &mut Vec<u32>) -> Detection {
    let mut ev = Vec::new();
    // Offsets are 32-bit in JFFS2; look at the first 4 GiB at most.
    let img = &image[..image.len().min(u32::MAX as usize - 3)];
    if let Some(d) = blank(img, &mut ev) {
        return d;
    }
    let (e, w, endian_conf) = byte_order(img, &mut ev);
    nodes.extend(w.nodes.iter().map(|n| n.ofs));
    if w.nodes.is_empty() {
        ev.push("no JFFS2 node header (magic 0x1985 with a valid header CRC) in either byte order: not a JFFS2 image".to_string());
        return unknown(ev, 0.0);
    }
    ev.push(format!("byte order: {} endian", e.name()));
    let coverage = coverage(img, &w, &mut ev);

    // Cleanmarkers.
    let cms: Vec<&Node> = w
        .nodes
        .iter()
        .filter(|n| n.nodetype == NODETYPE_CLEANMARKER)
        .collect();
    let cm_size = cleanmarker_size(&cms);

    // Candidates.
    let sum_sizes = summary_sizes(img, &w.nodes, e);
    let cands = candidates(img, &w.nodes, &cms, &sum_sizes);
    // Candidates are independent; each touches a page at every boundary of its size, which
    // on a mapped image is the first read of much of it: spread over the cores, every n-th.
    let n = detect_threads(img.len()).min(cands.len().max(1));
    let shares = par_map("jffs2-detect", n, |k| -> Vec<Fit> {
        cands
            .iter()
            .skip(k)
            .step_by(n)
            .map(|&c| evaluate(img, &w.nodes, c, e))
            .collect()
    });
    let mut shares: Vec<_> = shares.into_iter().map(|v| v.into_iter()).collect();
    let fits: Vec<Fit> = (0..cands.len())
        .filter_map(|i| shares.get_mut(i % n).and_then(|s| s.next()))
        .collect();
    let data_end = w
        .nodes
        .last()
        .map(|n| u64::from(n.ofs) + u64::from(n.totlen))
        .unwrap_or(0);
    let choice = Choice {
        fits: &fits,
        sum_sizes: &sum_sizes,
        cleanmarkers: cms.len(),
        data_end,
        image_len: img.len() as u64,
    };
    let (chosen, mut conf) = choice.choose(&mut ev);

    cleanmarker_evidence(cms.len(), cm_size, &mut ev);
    conf *= endian_conf;
    if coverage < 0.5 {
        ev.push("most of the image is neither JFFS2 nodes nor erased flash".to_string());
        conf *= coverage;
    }
    let erase = if chosen.erase == 0 {
        DEFAULT_ERASE
    } else {
        chosen.erase
    };
    Detection {
        geometry: Geometry {
            endian: e,
            erase_size: erase,
            cleanmarker_size: cm_size,
        },
        confidence: conf.clamp(0.0, 1.0) as f32,
        endian_confidence: endian_conf as f32,
        evidence: ev,
    }
}

/// The detection of an image with nothing to read: empty, or all erased flash.
fn blank(img: &[u8], ev: &mut Vec<String>) -> Option<Detection> {
    if img.is_empty() {
        ev.push("the image is empty (0 bytes): not a JFFS2 image".to_string());
        return Some(unknown(std::mem::take(ev), 0.0));
    }
    if is_ff(img) {
        ev.push(format!(
            "all {} bytes are 0xFF: erased flash, which the kernel mounts as an empty filesystem",
            img.len()
        ));
        ev.push(
            "nothing tells the byte order or the erase size; assuming little endian, 64 KiB"
                .to_string(),
        );
        return Some(unknown(std::mem::take(ev), 0.1));
    }
    None
}

/// Byte order: the one whose walk finds more node bytes (little endian on a tie), that walk
/// (with its erased bytes counted), and the byte order's share of the confidence.
fn byte_order(img: &[u8], ev: &mut Vec<String>) -> (Endian, Walk, f64) {
    // The two walks are independent: one per core.
    let (le, be) = walks(img);
    ev.push(format!(
        "{} node headers with valid CRCs read little-endian, {} big-endian",
        le.nodes.len(),
        be.nodes.len()
    ));
    let (e, mut w, other) = if le.node_bytes >= be.node_bytes {
        (Endian::Little, le, be)
    } else {
        (Endian::Big, be, le)
    };
    count_ff(img, &mut w);
    let endian_conf = w.node_bytes as f64 / (w.node_bytes + other.node_bytes).max(1) as f64;
    (e, w, endian_conf)
}

/// The share of the image that is valid nodes or erased flash, said in `ev` when not all.
fn coverage(img: &[u8], w: &Walk, ev: &mut Vec<String>) -> f64 {
    let coverage = (w.node_bytes + w.ff_bytes) as f64 / img.len() as f64;
    if coverage < 0.999 {
        ev.push(format!(
            "{:.1}% of the image is valid nodes or erased flash",
            coverage * 100.0
        ));
    }
    coverage
}

/// Says in `ev` how many cleanmarkers there are and their size.
fn cleanmarker_evidence(count: usize, cm_size: u32, ev: &mut Vec<String>) {
    if count == 0 {
        ev.push(
            "no cleanmarkers (made with -n, NAND-style): cleanmarker size 0; a NOR kernel expects 12-byte cleanmarkers but does not complain when there are none"
                .to_string(),
        );
    } else {
        ev.push(format!("{count} cleanmarkers of {cm_size} bytes"));
    }
}

/// The most common cleanmarker length (the first seen on a tie), 0 when there is none.
fn cleanmarker_size(cms: &[&Node]) -> u32 {
    let mut counts: Vec<(u32, usize)> = Vec::new();
    for n in cms {
        match counts.iter_mut().find(|(t, _)| *t == n.totlen) {
            Some(c) => c.1 += 1,
            None => counts.push((n.totlen, 1)),
        }
    }
    counts.sort_by_key(|c| std::cmp::Reverse(c.1));
    counts.first().map(|c| c.0).unwrap_or(0)
}

/// The erase sizes summary nodes give directly: a summary ends with its offset in the block
/// and the summary magic, so offset + length is the block size. Sorted, each once.
fn summary_sizes(img: &[u8], nodes: &[Node], e: Endian) -> Vec<u32> {
    let mut sum_sizes: Vec<u32> = Vec::new();
    for n in nodes.iter().filter(|n| n.nodetype == NODETYPE_SUMMARY) {
        let end = n.ofs as usize + n.totlen as usize;
        if end < 8 || end > img.len() {
            continue;
        }
        if e.get_u32(img, end - 4) != Some(SUM_MAGIC) {
            continue;
        }
        let o = e.get_u32(img, end - 8).unwrap_or(u32::MAX);
        let Some(es) = o.checked_add(n.totlen) else {
            continue;
        };
        if o <= n.ofs && es != 0 && (n.ofs - o) % es == 0 {
            sum_sizes.push(es);
        }
    }
    sum_sizes.sort_unstable();
    sum_sizes.dedup();
    sum_sizes
}

/// The erase sizes worth evaluating: the powers of two from 8 KiB to 1 MiB, the summaries'
/// sizes, and the GCDs of the cleanmarkers' offsets and of the offsets of nodes after 0xFF.
/// Sorted, each once, in range and 4-aligned.
fn candidates(img: &[u8], nodes: &[Node], cms: &[&Node], sum_sizes: &[u32]) -> Vec<u32> {
    let mut cands: Vec<u32> = (13..=20).map(|k| 1u32 << k).collect();
    cands.extend(sum_sizes.iter().copied());
    let cm_gcd = cms
        .iter()
        .map(|n| u64::from(n.ofs))
        .filter(|&o| o > 0)
        .fold(0u64, gcd);
    if cm_gcd > 0 {
        cands.push(cm_gcd.min(u64::from(u32::MAX)) as u32);
    }
    let ff_gcd = nodes
        .iter()
        .filter(|n| {
            let o = n.ofs as usize;
            o >= 4 && is_ff(&img[o - 4..o])
        })
        .map(|n| u64::from(n.ofs))
        .fold(0u64, gcd);
    if ff_gcd > 0 {
        cands.push(ff_gcd.min(u64::from(u32::MAX)) as u32);
    }
    cands.retain(|&c| (MIN_ERASE..=MAX_ERASE).contains(&c) && c % 4 == 0);
    cands.sort_unstable();
    cands.dedup();
    cands
}

/// What the erase size is chosen from: every candidate's fit and the evidence beside it.
struct Choice<'a> {
    /// One fit per candidate, by increasing erase size.
    fits: &'a [Fit],
    /// The sizes summary markers give (see [`summary_sizes`]).
    sum_sizes: &'a [u32],
    /// Cleanmarkers found.
    cleanmarkers: usize,
    /// End of the last node.
    data_end: u64,
    /// The image's length.
    image_len: u64,
}

impl Choice<'_> {
    /// The chosen fit and its confidence (before the byte order's and coverage's share),
    /// adding the reasons to `ev`.
    fn choose(&self, ev: &mut Vec<String>) -> (Fit, f64) {
        let consistent: Vec<&Fit> = self.fits.iter().filter(|f| f.consistent()).collect();
        let Some(first) = consistent.first() else {
            ev.push("no erase size fits every node".to_string());
            return self.least_bad(ev);
        };
        let support = consistent.iter().map(|f| f.support()).max().unwrap_or(0);
        if self.damaged(support) {
            ev.push(format!(
                "the sizes that fit every node see at most {support} block starts holding a node: they fit by chance"
            ));
            return self.least_bad(ev);
        }
        // With cleanmarkers in use, prefer the size whose block starts carry them.
        let mut pick: &Fit = first;
        if self.cleanmarkers >= 1 {
            let best = consistent
                .iter()
                .map(|f| f.cm_frac())
                .fold(0.0f64, f64::max);
            if let Some(f) = consistent.iter().find(|f| f.cm_frac() >= best - 0.1) {
                pick = f;
            }
        }
        let (pick, mut conf) = self.support(pick.clone(), ev);
        self.explain_smaller(&pick, ev);
        if self.sum_sizes.contains(&pick.erase) {
            ev.push(format!(
                "summary markers give the erase size {} directly",
                kib(pick.erase)
            ));
            conf = conf.max(0.97);
        } else if !self.sum_sizes.is_empty() {
            ev.push(format!(
                "summary markers suggest {}, which does not fit every node",
                self.sum_sizes
                    .iter()
                    .map(|&s| kib(s))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            conf *= 0.7;
        }
        (pick, conf)
    }

    /// Whether a size that does not fit every node still lays out more consecutive blocks
    /// (at least 2) than `support`, the most block starts any size that fits sees: bytes cut
    /// out or inserted, after which a larger size fits by chance (its few boundaries missing
    /// the shifted nodes).
    fn damaged(&self, support: usize) -> bool {
        self.fits
            .iter()
            .any(|f| !f.consistent() && f.run.starts >= 2 && f.run.starts > support)
    }

    /// How well the image supports the consistent `pick`: when nothing inside it tells, the
    /// default size (if it fits) at low confidence; else confidence from the block starts.
    fn support(&self, mut pick: Fit, ev: &mut Vec<String>) -> (Fit, f64) {
        if pick.support() == 0 && self.sum_sizes.is_empty() && self.padded_block(&pick) {
            ev.push(format!(
                "the image ends at a {0} block end and every smaller size that fits would start \
                 an erased block without a cleanmarker, which mkfs.jffs2 --pad writes at every \
                 block start: erase size {0} (a larger one padded to {1} bytes cannot be ruled out)",
                kib(pick.erase),
                self.image_len
            ));
            return (pick, 0.6);
        }
        if pick.support() == 0 && self.sum_sizes.is_empty() {
            // Nothing inside the image tells: every size from here up fits.
            let lower = pick.erase;
            if lower < DEFAULT_ERASE {
                if let Some(f) = self.fits.iter().find(|f| f.erase == DEFAULT_ERASE) {
                    pick = f.clone();
                }
            }
            ev.push(format!(
                "all data lies within {} bytes: any erase size of at least {} fits; assuming {}",
                self.data_end,
                kib(lower),
                kib(pick.erase)
            ));
            return (pick, 0.3);
        }
        let conf = 0.55 + 0.4 * (pick.support() as f64 / 8.0).min(1.0);
        ev.push(format!(
            "erase size {}: no node crosses a block boundary; {} block starts hold a cleanmarker, {} another node, {} are erased",
            kib(pick.erase),
            pick.at_cm,
            pick.at_node,
            pick.at_ff
        ));
        if pick.ff_tail > 0 {
            ev.push(format!(
                "{} block ends are padded with 0xFF or end with a summary marker",
                pick.ff_tail
            ));
        }
        (pick, conf)
    }

    /// Whether `pick` is told by a padded image's cleanmarkers alone: the image is whole
    /// blocks of `pick`, each starting with a cleanmarker, and some smaller size that fits
    /// every node has an erased block start without one.
    fn padded_block(&self, pick: &Fit) -> bool {
        self.cleanmarkers >= 1
            && pick.erase > 0
            && self.image_len % u64::from(pick.erase) == 0
            && pick.at_ff == 0
            && pick.at_cm as u64 == self.image_len / u64::from(pick.erase)
            && self
                .fits
                .iter()
                .any(|f| f.erase < pick.erase && f.consistent() && f.at_ff > 0)
    }

    /// Why the next smaller candidate than `pick` was rejected.
    fn explain_smaller(&self, pick: &Fit, ev: &mut Vec<String>) {
        let Some(smaller) = self.fits.iter().rev().find(|f| f.erase < pick.erase) else {
            return;
        };
        if !smaller.consistent() {
            ev.push(format!(
                "{} is too small: {} nodes would cross its boundaries, {} of its boundaries fall inside data",
                kib(smaller.erase),
                smaller.crossing,
                smaller.bad
            ));
        } else if self.cleanmarkers >= 2 {
            ev.push(format!(
                "{} fits the nodes but only {:.0}% of its erased block starts hold a cleanmarker (vs {:.0}%)",
                kib(smaller.erase),
                smaller.cm_frac() * 100.0,
                pick.cm_frac() * 100.0
            ));
        }
    }

    /// A damaged image (nothing fits every node, or a size that does is seen at fewer block
    /// starts than another lays out in one stretch): the size with the longest run of blocks
    /// ([`longest_run`]), at low confidence.
    ///
    /// Bytes cut out of or inserted into an image shift every block after them, so their
    /// cleanmarkers and first nodes leave the true size's boundaries. On either side of the
    /// damage the image is still laid out in blocks of the true size: a cleanmarker or node at
    /// every block start, no node across a boundary (`docs/spec/mtd-utils-spec.md` §3.6.2).
    /// A smaller size breaks there at once (a boundary inside data), a larger one at the
    /// first cleanmarker off its boundaries, or sees half the block starts. Counting breaks
    /// instead would favour the largest size, which has the fewest boundaries to break; Linux,
    /// given that size, would keep nodes across the true size's boundaries that it drops when
    /// given the true one (`docs/spec/kernel-jffs2-spec.md` §3.2 rule 11, §10.5). With no
    /// run at all, the fewest breaks (then the smallest size).
    fn least_bad(&self, ev: &mut Vec<String>) -> (Fit, f64) {
        let best = self
            .fits
            .iter()
            .min_by_key(|f| (std::cmp::Reverse(f.run.starts), f.badness(), f.erase))
            .cloned()
            .unwrap_or_default();
        ev.push(format!(
            "least bad: {} ({} nodes cross its boundaries, {} boundaries fall inside data)",
            kib(best.erase.max(MIN_ERASE)),
            best.crossing,
            best.bad
        ));
        if best.run.starts == 0 {
            return (best, 0.15);
        }
        ev.push(format!(
            "{} consecutive block starts of {} hold a node, from {:#010x} to {:#010x}, more than any other size lays out (bytes cut out or inserted shift the blocks after them)",
            best.run.starts,
            kib(best.erase),
            best.run.from,
            best.run.to
        ));
        // Still low: the image contradicts every size, so the caller is told to give it.
        let conf = 0.15 + 0.25 * (best.run.starts as f64 / 8.0).min(1.0);
        (best, conf)
    }
}
