//! The flash walk: every erase block, node by node, every node on flash checked in full.
//!
//! Unlike the mount scan, which stops trusting a block at its summary and never looks at
//! obsolete nodes again, the walk reads everything: each 4-byte-aligned position is erased
//! flash (skipped), a node header with a valid magic and header CRC (the node is checked and
//! skipped by `PAD(totlen)`), or junk (merged into runs). Blocks are independent, so they are
//! walked in parallel; results come back in block order.

use std::sync::atomic::{AtomicU64, Ordering};

use rayon::prelude::*;

use super::ProgressFn;
use crate::compress::{
    COMPR_DYNRUBIN, COMPR_LZMA, COMPR_LZO, COMPR_NONE, COMPR_RTIME, COMPR_RUBINMIPS, COMPR_ZERO,
    COMPR_ZLIB,
};
use crate::crc::crc32;
use crate::format::{
    accurate_crc, pad4, DirentNode, Endian, InodeNode, XattrNode, XrefNode, DIRENT_SIZE,
    HEADER_SIZE, INODE_SIZE, MAGIC, MAGIC_SWAPPED, NODETYPE_CLEANMARKER, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_PADDING, NODETYPE_SUMMARY, NODETYPE_XATTR, NODETYPE_XREF,
    NODE_ACCURATE, OLD_MAGIC, XATTR_SIZE, XREF_SIZE,
};
use crate::format::{hdr, NodeHeader};
use crate::fs::{DataNode, Fs, ReadError};

/// What a node holds (fields read only when its node CRC passed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Body {
    /// An inode node.
    Inode {
        ino: u32,
        version: u32,
        isize: u32,
        /// File offset.
        ofs: u32,
        /// Range covered (`dsize`, or `csize` for the legacy swapped ZERO node).
        size: u32,
        compr: u8,
    },
    /// A directory entry.
    Dirent {
        pino: u32,
        version: u32,
        ino: u32,
        dtype: u8,
        name: Name,
    },
    /// An xattr datum.
    Xattr { xid: u32, version: u32 },
    /// An xattr reference.
    Xref { ino: u32, xid: u32, xseqno: u32 },
    /// A cleanmarker.
    Cleanmarker,
    /// A padding node.
    Padding,
    /// An erase-block summary.
    Summary,
    /// A node type Linux does not know (by its compatibility class).
    Unknown,
    /// The node CRC failed (or the node is too short to hold its fixed part): fields unknown.
    Unreadable,
}

/// A dirent's name where it lies in the walked image (a million entries are a million
/// nodes: their names are not copied).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Name {
    at: u32,
    len: u8,
}

impl Name {
    /// The name's bytes in `img`, the image the walk read.
    pub fn get(self, img: &[u8]) -> &[u8] {
        let at = self.at as usize;
        img.get(at..at + usize::from(self.len)).unwrap_or(&[])
    }
}

/// What is wrong with a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Fault {
    /// Node CRC.
    NodeCrc { stored: u32, computed: u32 },
    /// Name CRC.
    NameCrc { stored: u32, computed: u32 },
    /// A NUL byte in a dirent name.
    NulInName { at: usize },
    /// A dirent name no file system can hold: empty, `.`, `..`, or containing `/`
    /// (`extract::name_problem`). Linux lists it, but no path reaches it.
    BadName { why: &'static str },
    /// Data CRC.
    DataCrc { stored: u32, computed: u32 },
    /// `totlen` disagrees with the contents.
    Length(String),
    /// The data cannot be read (decompression, allocation, short uncompressed data).
    Data(ReadError),
}

/// One node on flash.
#[derive(Debug, Clone)]
pub(crate) struct WNode {
    pub offset: u32,
    /// Type as stored (the ACCURATE bit may be cleared).
    pub nodetype: u16,
    pub totlen: u32,
    /// ACCURATE bit set (not obsoleted on flash).
    pub accurate: bool,
    pub body: Body,
    /// Boxed: most nodes have none, and every node is kept until the end of the check.
    pub fault: Option<Box<Fault>>,
    /// Padding bytes (inside an xattr's totlen, or up to `PAD(totlen)`) that are not 0xFF.
    pub bad_padding: u32,
    /// The `data_crc` of an inode node without data, when it is not 0 (no CRC covers it).
    pub stray_data_crc: Option<u32>,
}

/// Why a run of bytes is not a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum JunkKind {
    /// Magic right, header CRC wrong.
    HeaderCrc,
    /// Header valid but `totlen` below 12.
    ShortTotlen,
    /// A valid header whose node would run over the end of the block.
    Crosses { totlen: u32 },
    /// 0x1984.
    OldMagic,
    /// 0x8519 (the magic in the other byte order).
    Swapped,
    /// 0x0000 words.
    Zero,
    /// Anything else.
    BadMagic(u16),
}

/// Bytes that are neither a node nor erased flash.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Junk {
    pub offset: u32,
    pub len: u32,
    /// The reason of its first word.
    pub kind: JunkKind,
}

/// One erase block.
#[derive(Debug, Clone, Default)]
pub(crate) struct BlockWalk {
    pub offset: u32,
    pub nodes: Vec<WNode>,
    pub junk: Vec<Junk>,
    /// Offset of the last node or junk run (the end of the written space), if any.
    pub last_item: Option<u32>,
    /// Whether the block ends with a summary node.
    pub has_summary: bool,
    /// Data nodes decompressed, and the bytes they gave.
    pub data_checked: u64,
    pub data_bytes: u64,
    /// Dead data nodes (superseded, or of deleted inodes) left compressed once the block's
    /// decompression budget was spent, and the first of them.
    pub not_decompressed: u64,
    pub first_not_decompressed: Option<u32>,
}

/// Bytes of dead data (nodes no live inode shows) decompressed per byte of erase block.
/// Linux never reads such data (§6.2: a superseded node's data CRC is not even checked); fsck
/// checks it as long as the work stays proportional to the image: real data compresses
/// less than 16:1 in pages, a crafted node of 4 MiB of zeros about 7000:1.
pub(crate) const DEAD_DATA_PER_BYTE: u64 = 16;

fn all_ff(b: &[u8]) -> bool {
    b.iter().all(|&c| c == 0xFF)
}

/// Walks the blocks whose walk cannot depend on which nodes are live, before the inodes are
/// read: those whose data, every node counted as dead, stays within the budget (all of
/// them on an image without much dead data: 2 MiB of data per 128 KiB block). The others
/// are `None`, left to [`walk_rest`]: the work spent on them here is lost, at most the
/// budget's (so a block of dead data costs at most twice its budget).
///
/// `tail`: the last blocks' walks already made the same way ([`walk_tail`]), appended.
pub(crate) fn walk_ahead(
    img: &[u8],
    fs: &Fs<'_>,
    erase_size: u32,
    tail: Vec<Option<BlockWalk>>,
    progress: Option<ProgressFn<'_>>,
) -> Vec<Option<BlockWalk>> {
    let es = erase_size as usize;
    let nblocks = img.len() / es.max(1);
    let done = Done::new(img.len() as u64, progress);
    done.skip(tail.iter().filter(|w| w.is_some()).count() as u64 * es as u64);
    let mut walks: Vec<Option<BlockWalk>> = (0..nblocks.saturating_sub(tail.len()))
        .into_par_iter()
        // One output buffer per thread for the data decompressed only to be checked.
        .map_init(Vec::new, |buf, b| {
            let w = walk_block(img, (b * es) as u32, es as u32, fs, None, buf);
            w.map(|w| done.block(w, es))
        })
        .collect();
    walks.extend(tail);
    walks
}

/// [`walk_ahead`]'s walks of the last blocks of `img`, from the last one down, until `stop`
/// says so (asked before each block): the walk a core can make while another scans (the
/// scan runs on one thread), in ascending block order. `fs` may be a model of nothing
/// ([`Fs::for_node_reads`]): a walk without liveness reads nodes alone.
pub(crate) fn walk_tail(
    img: &[u8],
    fs: &Fs<'_>,
    erase_size: u32,
    stop: impl Fn() -> bool,
) -> Vec<Option<BlockWalk>> {
    let es = erase_size as usize;
    let nblocks = img.len() / es.max(1);
    let done = Done::new(0, None);
    let mut buf = Vec::new();
    let mut walks = Vec::new();
    for b in (0..nblocks).rev() {
        if stop() {
            break;
        }
        let w = walk_block(img, (b * es) as u32, es as u32, fs, None, &mut buf);
        walks.push(w.map(|w| done.block(w, es)));
    }
    walks.reverse();
    walks
}

/// Completes `ahead` ([`walk_ahead`]'s walks of the blocks of `img`, a whole number of
/// `erase_size` blocks), walking the blocks it left knowing `live`: the offsets of the data
/// nodes live inodes show, sorted; they are always decompressed.
/// Other data nodes are decompressed within a budget of [`DEAD_DATA_PER_BYTE`] bytes per
/// byte of their erase block (blocks are independent, so what is checked never depends on
/// the threads); beyond it only their CRCs are checked, and they are counted.
pub(crate) fn walk_rest(
    img: &[u8],
    fs: &Fs<'_>,
    erase_size: u32,
    live: &[u32],
    ahead: Vec<Option<BlockWalk>>,
    progress: Option<ProgressFn<'_>>,
) -> Vec<BlockWalk> {
    let es = erase_size as usize;
    let done = Done::new(img.len() as u64, progress);
    done.skip(ahead.iter().filter(|w| w.is_some()).count() as u64 * es as u64);
    ahead
        .into_par_iter()
        .enumerate()
        .map_init(Vec::new, |buf, (b, w)| {
            if let Some(w) = w {
                return w;
            }
            let start = b * es;
            // The block's part of `live` (a few dozen offsets, looked up by bisection: a
            // hash set of every live node was 2 % of the time, in cache misses).
            let end = u32::try_from(start + es).unwrap_or(u32::MAX);
            let lo = live.partition_point(|&o| (o as usize) < start);
            let hi = live.partition_point(|&o| o < end);
            let live = live.get(lo..hi).unwrap_or(&[]);
            let w = walk_block(img, start as u32, es as u32, fs, Some(live), buf);
            // Knowing what is live, a block is always walked to its end.
            done.block(w.unwrap_or_default(), es)
        })
        .collect()
}

/// The walk's progress: bytes of blocks walked.
struct Done<'p> {
    total: u64,
    done: AtomicU64,
    progress: Option<ProgressFn<'p>>,
}

impl<'p> Done<'p> {
    fn new(total: u64, progress: Option<ProgressFn<'p>>) -> Done<'p> {
        Done {
            total,
            done: AtomicU64::new(0),
            progress,
        }
    }

    /// Counts `bytes` as walked already.
    fn skip(&self, bytes: u64) {
        self.done.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Counts a block walked, and readies its walk to be kept until the end.
    fn block(&self, mut w: BlockWalk, es: usize) -> BlockWalk {
        // Every block's list is kept until the end: without the slack of its growth.
        w.nodes.shrink_to_fit();
        if let Some(p) = self.progress {
            let d = self.done.fetch_add(es as u64, Ordering::Relaxed) + es as u64;
            p(d, self.total);
        }
        w
    }
}

/// Walks one erase block, item by item, from `start` to `start + es`; `live` as for
/// [`walk_rest`], `None` when not known yet: then every data node counts as dead, and the walk
/// gives up (`None`) where one would overrun the budget.
fn walk_block(
    img: &[u8],
    start: u32,
    es: u32,
    fs: &Fs<'_>,
    live: Option<&[u32]>,
    buf: &mut Vec<u8>,
) -> Option<BlockWalk> {
    let mut bw = BlockWalker {
        img,
        buf,
        end: start + es,
        e: fs.scan().geometry.endian,
        fs,
        budget: Budget {
            live,
            left: u64::from(es).saturating_mul(DEAD_DATA_PER_BYTE),
            overrun: false,
        },
        w: BlockWalk {
            offset: start,
            ..BlockWalk::default()
        },
    };
    let mut p = start;
    while p < bw.end {
        match bw.step(p) {
            _ if bw.budget.overrun => return None,
            Some(next) => p = next,
            None => break,
        }
    }
    Some(bw.w)
}

/// One block being walked: where it ends, how to read it, and what was found so far.
struct BlockWalker<'a, 'f> {
    img: &'a [u8],
    /// Where data is decompressed to be checked (reused from node to node).
    buf: &'a mut Vec<u8>,
    end: u32,
    e: Endian,
    fs: &'a Fs<'f>,
    budget: Budget<'a>,
    w: BlockWalk,
}

impl BlockWalker<'_, '_> {
    /// Reads what lies at `p` (erased flash, a node, or junk) and returns where the next item
    /// may start, or `None` when the block is done.
    fn step(&mut self, p: u32) -> Option<u32> {
        let img = self.img;
        let rest = &img[p as usize..self.end as usize];
        if rest.len() >= 4 && all_ff(&rest[..4]) {
            return Some(p + erased_len(rest));
        }
        if rest.len() < HEADER_SIZE {
            // Fewer than 12 bytes left: not 0xFF (checked above for the first word).
            let kind = JunkKind::BadMagic(self.e.get_u16(rest, hdr::MAGIC).unwrap_or(0));
            self.w.add_junk(p, rest.len() as u32, kind);
            return None;
        }
        match self.header(rest, p) {
            Ok((nodetype, totlen)) => Some(p + self.node(rest, p, nodetype, totlen)),
            Err(kind) => {
                self.w.add_junk(p, 4, kind);
                Some(p + 4)
            }
        }
    }

    /// The node type and `totlen` of a valid header at `p` whose node lies within the block,
    /// or why its first word is junk.
    fn header(&self, rest: &[u8], p: u32) -> Result<(u16, u32), JunkKind> {
        let e = self.e;
        let magic = e.get_u16(rest, hdr::MAGIC).unwrap_or(0);
        let nodetype = e.get_u16(rest, hdr::NODETYPE).unwrap_or(0);
        let totlen = e.get_u32(rest, hdr::TOTLEN).unwrap_or(0);
        let hdr_crc = e.get_u32(rest, hdr::HDR_CRC).unwrap_or(0);
        if magic != MAGIC {
            return Err(match magic {
                OLD_MAGIC => JunkKind::OldMagic,
                MAGIC_SWAPPED => JunkKind::Swapped,
                0 => JunkKind::Zero,
                m => JunkKind::BadMagic(m),
            });
        }
        let h = NodeHeader {
            magic,
            nodetype,
            totlen,
            hdr_crc,
        };
        if !h.crc_ok(e) {
            return Err(JunkKind::HeaderCrc);
        }
        if totlen < HEADER_SIZE as u32 {
            return Err(JunkKind::ShortTotlen);
        }
        if u64::from(p) + u64::from(totlen) > u64::from(self.end) {
            return Err(JunkKind::Crosses { totlen });
        }
        Ok((nodetype, totlen))
    }

    /// Checks and records the node at `p` (header already valid), returning the bytes it
    /// takes up to `PAD(totlen)`.
    fn node(&mut self, rest: &[u8], p: u32, nodetype: u16, totlen: u32) -> u32 {
        let node = &rest[..totlen as usize];
        let padded = pad4(totlen).min(self.end - p).max(totlen);
        let ctx = NodeCtx {
            b: node,
            offset: p,
            e: self.e,
            fs: self.fs,
        };
        let mut wn = ctx.check(nodetype, &mut self.w, &mut self.budget, self.buf);
        let tail = &rest[totlen as usize..padded as usize];
        wn.bad_padding += tail.iter().filter(|&&c| c != 0xFF).count() as u32;
        if wn.body == Body::Summary && p + totlen == self.end {
            self.w.has_summary = true;
        }
        self.w.last_item = Some(p);
        self.w.nodes.push(wn);
        padded
    }
}

/// The length of the erased flash (0xFF words) `rest` starts with (its first word is).
fn erased_len(rest: &[u8]) -> u32 {
    // Skip erased flash, 32 bytes at a time where possible.
    let mut q = 4usize;
    while q + 32 <= rest.len() && all_ff(&rest[q..q + 32]) {
        q += 32;
    }
    while q + 4 <= rest.len() && all_ff(&rest[q..q + 4]) {
        q += 4;
    }
    q as u32
}

impl BlockWalk {
    /// Records `len` junk bytes at `at`, extending the previous run when it is of the same
    /// kind and ends there.
    fn add_junk(&mut self, at: u32, len: u32, kind: JunkKind) {
        if let Some(last) = self.junk.last_mut() {
            // Runs of one kind are one finding; a valid header claiming a bad length is
            // never folded into the garbage before it (its offset and claim would vanish
            // from the report: a 4 GiB totlen right after junk read as mere "garbage").
            let same = std::mem::discriminant(&last.kind) == std::mem::discriminant(&kind)
                && !matches!(kind, JunkKind::Crosses { .. } | JunkKind::ShortTotlen);
            if same && last.offset + last.len == at && self.last_item == Some(last.offset) {
                last.len += len;
                return;
            }
        }
        self.junk.push(Junk {
            offset: at,
            len,
            kind,
        });
        self.last_item = Some(at);
    }
}

/// What a block may still decompress of data no live inode shows.
struct Budget<'l> {
    /// The block's live data nodes' offsets, sorted; `None` when not known yet.
    live: Option<&'l [u32]>,
    left: u64,
    /// Whether a node, not known to be live, would have overrun the budget.
    overrun: bool,
}

/// One node whose header is valid and that lies within its block: its bytes (`totlen` of
/// them), where it lies, and how to read its data.
struct NodeCtx<'a, 'f> {
    b: &'a [u8],
    offset: u32,
    e: Endian,
    fs: &'a Fs<'f>,
}

impl NodeCtx<'_, '_> {
    /// Checks the node, by its type.
    fn check(
        &self,
        nodetype: u16,
        w: &mut BlockWalk,
        budget: &mut Budget<'_>,
        buf: &mut Vec<u8>,
    ) -> WNode {
        let mut n = WNode {
            offset: self.offset,
            nodetype,
            totlen: self.totlen(),
            accurate: nodetype & NODE_ACCURATE != 0,
            body: Body::Unknown,
            fault: None,
            bad_padding: 0,
            stray_data_crc: None,
        };
        match nodetype | NODE_ACCURATE {
            NODETYPE_INODE => self.inode(&mut n, w, budget, buf),
            NODETYPE_DIRENT => self.dirent(&mut n),
            NODETYPE_XATTR => self.xattr(&mut n),
            NODETYPE_XREF => self.xref(&mut n),
            NODETYPE_CLEANMARKER => n.body = Body::Cleanmarker,
            NODETYPE_PADDING => n.body = Body::Padding,
            NODETYPE_SUMMARY => n.body = Body::Summary,
            _ => n.body = Body::Unknown,
        }
        n
    }

    /// The node's `totlen` (its bytes are exactly that many).
    fn totlen(&self) -> u32 {
        self.b.len() as u32
    }

    /// The fault of a node too short to hold the `need` bytes of its fixed part.
    fn short(&self, what: &str, need: usize) -> Fault {
        let totlen = self.totlen();
        Fault::Length(format!(
            "totlen {totlen} is shorter than the {need} bytes of {what}"
        ))
    }

    /// An inode node: its fields, lengths and data (decompressed within the budget).
    fn inode(&self, n: &mut WNode, w: &mut BlockWalk, budget: &mut Budget<'_>, buf: &mut Vec<u8>) {
        n.body = Body::Unreadable;
        let Some((ri, size)) = self.inode_fields(n) else {
            return;
        };
        if !n.accurate {
            // Obsolete: the kernel never reads it again; the data CRC is checked, the data
            // is not decompressed.
            if ri.csize > 0 && ri.compr != COMPR_ZERO {
                self.data_crc(n, &ri);
            }
            return;
        }
        if size == 0 && ri.csize == 0 {
            return;
        }
        if ri.compr == COMPR_NONE {
            self.stored_data(n, w, &ri, size);
            return;
        }
        if self.over_budget(n, w, budget, &ri, size) {
            return;
        }
        self.decompress(n, w, &ri, size, buf);
    }

    /// Decodes an inode node and checks its node CRC and lengths, setting its body; the node
    /// and the range it covers when its data may be checked.
    fn inode_fields(&self, n: &mut WNode) -> Option<(InodeNode, u32)> {
        let (b, e, offset, totlen) = (self.b, self.e, self.offset, self.totlen());
        let Ok(ri) = InodeNode::decode(b, e, u64::from(offset)) else {
            n.fault = Some(Box::new(self.short("an inode node", INODE_SIZE)));
            return None;
        };
        let computed = accurate_crc(b, INODE_SIZE - 8, e).unwrap_or(0);
        if computed != ri.node_crc {
            n.fault = Some(Box::new(Fault::NodeCrc {
                stored: ri.node_crc,
                computed,
            }));
            return None;
        }
        let size = if ri.compr == COMPR_ZERO && ri.dsize == 0 && ri.csize != 0 {
            ri.csize
        } else {
            ri.dsize
        };
        n.body = Body::Inode {
            ino: ri.ino,
            version: ri.version,
            isize: ri.isize,
            ofs: ri.offset,
            size,
            compr: ri.compr,
        };
        if pad4(ri.csize.wrapping_add(INODE_SIZE as u32)) != pad4(totlen)
            || u64::from(ri.csize) + INODE_SIZE as u64 > u64::from(totlen)
        {
            n.fault = Some(Box::new(Fault::Length(format!(
                "csize {} does not fit totlen {totlen} (68 + csize expected)",
                ri.csize
            ))));
            return None;
        }
        if ri.csize == 0 && ri.data_crc != 0 {
            n.stray_data_crc = Some(ri.data_crc);
        }
        if ri.offset > ri.isize {
            n.fault = Some(Box::new(Fault::Length(format!(
                "data offset {} lies beyond the inode size {}",
                ri.offset, ri.isize
            ))));
            return None;
        }
        Some((ri, size))
    }

    /// Checks the data CRC of an inode node's stored data (`csize` known to fit); whether it
    /// passed.
    fn data_crc(&self, n: &mut WNode, ri: &InodeNode) -> bool {
        let data = &self.b[INODE_SIZE..INODE_SIZE + ri.csize as usize];
        let computed = crc32(data);
        if computed != ri.data_crc {
            n.fault = Some(Box::new(Fault::DataCrc {
                stored: ri.data_crc,
                computed,
            }));
            return false;
        }
        true
    }

    /// Uncompressed data: its CRC, and whether it holds the `dsize` bytes it claims.
    fn stored_data(&self, n: &mut WNode, w: &mut BlockWalk, ri: &InodeNode, size: u32) {
        // What `node_data` does for stored data, without copying it out.
        if !self.data_crc(n, ri) {
            return;
        }
        if ri.dsize > ri.csize {
            n.fault = Some(Box::new(Fault::Data(ReadError::ShortUncompressed {
                offset: self.offset,
                csize: ri.csize,
                dsize: ri.dsize,
            })));
        } else {
            w.data_checked += 1;
            w.data_bytes += u64::from(size);
        }
    }

    /// Spends the budget on dead compressed data; once it is spent, checks the CRCs only and
    /// counts the node. Whether the node is done (not to be decompressed).
    fn over_budget(
        &self,
        n: &mut WNode,
        w: &mut BlockWalk,
        budget: &mut Budget<'_>,
        ri: &InodeNode,
        size: u32,
    ) -> bool {
        // Dead data beyond the block's budget: the CRCs only (the node CRC passed above).
        // ZERO nodes and unavailable compressors cost nothing, and a `dsize` Linux cannot
        // allocate is refused before any work: those go through `node_data` as usual.
        let costly = matches!(
            ri.compr,
            COMPR_RTIME | COMPR_RUBINMIPS | COMPR_DYNRUBIN | COMPR_ZLIB | COMPR_LZO | COMPR_LZMA
        ) && size <= self.fs.options().kmalloc_max;
        let Some(live) = budget.live else {
            // Liveness not known yet: every node spends the budget; one that overruns it
            // leaves the block to the walk that knows.
            if costly && u64::from(size) > budget.left {
                budget.overrun = true;
                return true;
            }
            budget.left -= if costly { u64::from(size) } else { 0 };
            return false;
        };
        if !costly || live.binary_search(&self.offset).is_ok() {
            return false;
        }
        if u64::from(size) <= budget.left {
            budget.left -= u64::from(size);
            return false;
        }
        if self.data_crc(n, ri) {
            w.not_decompressed += 1;
            w.first_not_decompressed.get_or_insert(self.offset);
        }
        true
    }

    /// Reads the node's data as Linux would (`node_data`, into `buf`), recording what fails.
    fn decompress(
        &self,
        n: &mut WNode,
        w: &mut BlockWalk,
        ri: &InodeNode,
        size: u32,
        buf: &mut Vec<u8>,
    ) {
        let dn = DataNode {
            node: usize::MAX,
            offset: self.offset,
            version: ri.version,
            ofs: ri.offset,
            size,
            csize: ri.csize,
            compr: ri.compr,
            usercompr: ri.usercompr,
        };
        match self.fs.check_node_data(&dn, buf) {
            // The data is exactly `size` bytes (zeros are not materialised).
            Ok(()) => {
                w.data_checked += 1;
                w.data_bytes += u64::from(size);
            }
            Err(ReadError::NodeCrc {
                stored, computed, ..
            }) => n.fault = Some(Box::new(Fault::NodeCrc { stored, computed })),
            Err(ReadError::DataCrc {
                stored, computed, ..
            }) => n.fault = Some(Box::new(Fault::DataCrc { stored, computed })),
            Err(err) => n.fault = Some(Box::new(Fault::Data(err))),
        }
    }

    /// A dirent node: its fields, lengths, name CRC and name.
    fn dirent(&self, n: &mut WNode) {
        let (b, e, offset, totlen) = (self.b, self.e, self.offset, self.totlen());
        n.body = Body::Unreadable;
        let Ok(rd) = DirentNode::decode(b, e, u64::from(offset)) else {
            n.fault = Some(Box::new(self.short("a dirent node", DIRENT_SIZE)));
            return;
        };
        let computed = accurate_crc(b, DIRENT_SIZE - 8, e).unwrap_or(0);
        if computed != rd.node_crc {
            n.fault = Some(Box::new(Fault::NodeCrc {
                stored: rd.node_crc,
                computed,
            }));
            return;
        }
        let name = b
            .get(DIRENT_SIZE..DIRENT_SIZE + usize::from(rd.nsize))
            .unwrap_or(&[]);
        n.body = Body::Dirent {
            pino: rd.pino,
            version: rd.version,
            ino: rd.ino,
            dtype: rd.dtype,
            // `name` is empty when it does not fit, else it starts DIRENT_SIZE bytes in.
            name: Name {
                at: offset.saturating_add(DIRENT_SIZE as u32),
                len: name.len() as u8,
            },
        };
        if pad4(u32::from(rd.nsize) + DIRENT_SIZE as u32) != pad4(totlen)
            || DIRENT_SIZE + usize::from(rd.nsize) > b.len()
        {
            n.fault = Some(Box::new(Fault::Length(format!(
                "name length {} does not fit totlen {totlen} (40 + nsize expected)",
                rd.nsize
            ))));
            return;
        }
        let computed = crc32(name);
        if computed != rd.name_crc {
            n.fault = Some(Box::new(Fault::NameCrc {
                stored: rd.name_crc,
                computed,
            }));
            return;
        }
        if let Some(at) = name.iter().position(|&c| c == 0) {
            n.fault = Some(Box::new(Fault::NulInName { at }));
        } else if let Some(why) = crate::name::name_problem(name) {
            n.fault = Some(Box::new(Fault::BadName { why }));
        }
    }

    /// An xattr datum: its fields, lengths, data CRC and padding.
    fn xattr(&self, n: &mut WNode) {
        let (b, e, offset, totlen) = (self.b, self.e, self.offset, self.totlen());
        n.body = Body::Unreadable;
        let Ok(rx) = XattrNode::decode(b, e, u64::from(offset)) else {
            n.fault = Some(Box::new(self.short("an xattr node", XATTR_SIZE)));
            return;
        };
        let computed = accurate_crc(b, XATTR_SIZE - 4, e).unwrap_or(0);
        if computed != rx.node_crc {
            n.fault = Some(Box::new(Fault::NodeCrc {
                stored: rx.node_crc,
                computed,
            }));
            return;
        }
        n.body = Body::Xattr {
            xid: rx.xid,
            version: rx.version,
        };
        let raw = XATTR_SIZE as u32 + u32::from(rx.name_len) + 1 + u32::from(rx.value_len);
        if pad4(raw) != totlen {
            n.fault = Some(Box::new(Fault::Length(format!(
                "name and value lengths ({} + {}) do not fit totlen {totlen}",
                rx.name_len, rx.value_len
            ))));
            return;
        }
        let data = &b[XATTR_SIZE..raw as usize];
        let computed = crc32(data);
        if computed != rx.data_crc {
            n.fault = Some(Box::new(Fault::DataCrc {
                stored: rx.data_crc,
                computed,
            }));
            return;
        }
        n.bad_padding += b[raw as usize..].iter().filter(|&&c| c != 0xFF).count() as u32;
    }

    /// An xattr reference: its fields and length.
    fn xref(&self, n: &mut WNode) {
        let (b, e, offset, totlen) = (self.b, self.e, self.offset, self.totlen());
        n.body = Body::Unreadable;
        let Ok(rr) = XrefNode::decode(b, e, u64::from(offset)) else {
            n.fault = Some(Box::new(self.short("an xref node", XREF_SIZE)));
            return;
        };
        let computed = accurate_crc(b, XREF_SIZE - 4, e).unwrap_or(0);
        if computed != rr.node_crc {
            n.fault = Some(Box::new(Fault::NodeCrc {
                stored: rr.node_crc,
                computed,
            }));
            return;
        }
        n.body = Body::Xref {
            ino: rr.ino,
            xid: rr.xid,
            xseqno: rr.xseqno,
        };
        if totlen != XREF_SIZE as u32 {
            n.fault = Some(Box::new(Fault::Length(format!(
                "an xref node is {XREF_SIZE} bytes, totlen is {totlen}"
            ))));
        }
    }
}

/// Whether a compressor id is one Linux 6.1 (Debian) cannot read at all.
pub(crate) fn unavailable_compressor(err: &ReadError) -> bool {
    use crate::compress::ComprError;
    matches!(
        err,
        ReadError::Decompress {
            error: ComprError::UnsupportedCompressor(_),
            ..
        }
    )
}

/// Names the compressors of [`unavailable_compressor`] errors.
pub(crate) fn compressor_hint(compr: u8) -> &'static str {
    match compr {
        COMPR_RUBINMIPS | COMPR_DYNRUBIN => {
            " (rubin: Debian's kernel is built without CONFIG_JFFS2_RUBIN)"
        }
        COMPR_LZMA => " (lzma exists only in OpenWrt-patched kernels)",
        _ => "",
    }
}
