//! The Linux mount scan, reproduced offline (`docs/spec/kernel-jffs2-spec.md` §3, §4, §7.1, §9.1–9.3,
//! §10, Appendix A). One scanner serves fsck, sumtool, dump and convert.
//!
//! This file holds the types the scan produces — the contract with the filesystem model in
//! [`crate::fs`], which consumes a [`Scan`] the way `build.c` and `readinode.c` consume the
//! kernel's in-memory node references — and the entry point [`scan()`]. The scan never panics
//! on input and never reads outside the image; memory is bounded by the number of nodes in
//! the image (plus a capped log and dirt list).
//!
//! Modules: `engine` (accounting, `jffs2_scan_medium`), `block` (`jffs2_scan_eraseblock`),
//! `summary` (the EBS path), [`nodelist`] (`jffs2_add_fd_to_list`, shared with readinode),
//! [`detect`](mod@detect) (endianness and erase-size autodetection), [`msg`] (kernel message wording).
//!
//! ## What is emulated
//!
//! The kernel configuration is Debian's Linux 6.1 on x86-64 over NOR-like flash without a
//! write buffer and without `mtd_point` (block2mtd, plain NOR): reads go through a
//! `PAGE_SIZE` (4096-byte) buffer, which decides when the kernel re-reads and therefore
//! [`BlockInfo::bytes_read`] and the 32-byte cleanmarker shortcut (§3.2 step D.5). NAND OOB
//! checks (§3.2 step A) are not emulated: an image has no OOB; `cleanmarker_size == 0`
//! behaves like UBI/DataFlash (an all-0xFF block is CLEANMARKER, i.e. free).
//!
//! ## Differences from the kernel's data structures (documented choices)
//!
//! * [`InodeCache::nodes`] is in **scan order**; the kernel prepends, so its `ic->nodes` is
//!   the reverse.
//!   Refs that lose the scan-time dirent de-duplication (§5.2) stay on their cache's
//!   `nodes` with [`RefState::Obsolete`], as they stay on the kernel's list while SCANNING.
//! * Dirty-space refs (`REF_OBSOLETE` refs the kernel links for dirt) are not in
//!   [`Scan::refs`]; dirt is in the block counters and in [`Scan::dirt`].
//! * [`Scan::xattr_datums`] has one entry per xattr node linked, in scan order. The kernel's
//!   datum for an xid is the entry with the highest version (the later one on a tie); the
//!   others are its older copies (`jffs2_setup_xattr_datum`, §9.1, §9.3).
//! * [`ScanDirent::pino`] is the number of the cache holding the dirent: the stored `pino`,
//!   except for `pino = 0`, whose phantom cache gets `++highest_ino` (§3.3).
//! * Bytes a node field would be read from beyond the end of the flash read as 0xFF; bytes
//!   past the kernel's 4096-byte buffer are taken from the image (the XIP view), where the
//!   kernel would see stale buffer contents (only crafted nodes whose fields disagree with
//!   their `totlen` can tell the difference).
//! * After a fatal condition the kernel stops; this scan records the [`MountFailure`], stops
//!   logging (so [`Scan::log`] is what the kernel printed), and carries on through the rest
//!   of the image so tools can still examine it (see [`Scan::failure`]).
//!
//! ## OpenWrt's end-of-filesystem marker
//!
//! OpenWrt appends the 4 bytes `de ad c0 de` to its JFFS2 images, at the start of the erase
//! block after the last one written, and patches its kernel (`532-jffs2_eofdetect.patch`)
//! to treat them as the end of the filesystem: when the first bytes of a block (read after
//! the summary attempt, as the block's first buffer) are the marker, the kernel prints
//! `jffs2_scan_eraseblock(): End of filesystem marker found at 0x%x`, files the block as
//! erased (`BLK_STATE_ALLFF`) and every later block too, without reading them; at the end of
//! the scan it erases them all ("erasing all blocks after the end marker"). Stock Linux
//! sees 4 bytes of dirt ("Magic bitmask 0x1985 not found") in a block otherwise erased, and
//! scans on. With [`ScanOptions::end_marker`] (the default) this scan does what OpenWrt's
//! kernel does and records where in [`Scan::end_marker`]. For an image as OpenWrt builds it
//! (nothing after the marker but erased flash) both kernels show the same files; only the
//! accounting of the marker's block and the log differ.

use crate::format::{Endian, NodeKind};

mod block;
pub mod detect;
pub(crate) mod engine;
pub mod msg;
pub mod nodelist;
mod summary;
#[cfg(test)]
mod tests;
pub mod trailing;

pub use detect::{detect, Detection};
pub use engine::{as_flashed, flashed_len, scan};
pub use trailing::{trailing_data, TrailingData};

/// Where the image came from, as the kernel sees it (`fs.c`, `wbuf.c`, §2 and §10.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Geometry {
    /// Byte order of the image.
    pub endian: Endian,
    /// Erase-block size (`c->sector_size`).
    pub erase_size: u32,
    /// The cleanmarker size the kernel expects (`c->cleanmarker_size`): 12 on plain NOR,
    /// 0 on NAND (OOB cleanmarkers) and UBI, max(16, writesize) on ECC NOR.
    pub cleanmarker_size: u32,
}

/// Kernel options that change the verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanOptions {
    /// Mounted read-only (ROCOMPAT nodes then do not fail the mount).
    pub read_only: bool,
    /// `CONFIG_JFFS2_SUMMARY` (Debian: yes).
    pub summary: bool,
    /// `CONFIG_JFFS2_FS_XATTR` (Debian: yes).
    pub xattr: bool,
    /// OpenWrt's end-of-filesystem marker (`de ad c0 de` at a block start) ends the scan, as
    /// OpenWrt's kernels do (module documentation). Default: yes.
    pub end_marker: bool,
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            read_only: true,
            summary: true,
            xattr: true,
            end_marker: true,
        }
    }
}

/// OpenWrt's end-of-filesystem marker: the bytes `de ad c0 de` at the start of an erase
/// block, whatever the byte order of the filesystem.
pub const END_MARKER: [u8; 4] = [0xde, 0xad, 0xc0, 0xde];

/// State of a node reference (`REF_UNCHECKED`, `REF_OBSOLETE`, `REF_PRISTINE`, `REF_NORMAL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefState {
    /// Linked but its CRCs not yet verified (inode nodes, summary records).
    Unchecked,
    /// Obsolete (superseded, or dropped as dirt).
    Obsolete,
    /// Valid and may be copied verbatim by GC.
    Pristine,
    /// Valid.
    Normal,
}

/// One node the scan linked (the kernel's `jffs2_raw_node_ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeRef {
    /// Absolute byte offset of the node in the image.
    pub offset: u32,
    /// Length the kernel accounts for it: PAD(totlen), or the cleanmarker size.
    pub len: u32,
    /// State.
    pub state: RefState,
    /// Node type (by class; the exact stored type can be re-read at `offset`).
    pub kind: NodeKind,
    /// Linked from a summary record rather than from a read of the node.
    pub from_summary: bool,
    /// The inode cache this ref belongs to (`next_in_ino`), if any.
    pub ino: Option<u32>,
}

/// A directory entry as the scan keeps it (`struct jffs2_full_dirent` on `scan_dents`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanDirent {
    /// Parent directory.
    pub pino: u32,
    /// Version.
    pub version: u32,
    /// Target inode (0 = deletion dirent).
    pub ino: u32,
    /// `DT_*` type.
    pub dtype: u8,
    /// Name (truncated at the first NUL, as the kernel does).
    pub name: crate::name::Name,
    /// Index of the node in [`Scan::refs`].
    pub node: usize,
}

/// An inode cache (`struct jffs2_inode_cache`), created by an inode node (its ino), a
/// dirent (its pino) or a summary record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InodeCache {
    /// Inode number.
    pub ino: u32,
    /// Indices into [`Scan::refs`] of every node linked to this inode, in scan order
    /// (inode nodes, and the dirent nodes *in* this directory).
    pub nodes: Vec<usize>,
    /// Dirents in this directory after scan-time de-duplication (§5.2); emptied by
    /// [`crate::fs::Fs::from_scan`], as the kernel frees them at the end of its build (§5.5).
    pub scan_dents: Vec<ScanDirent>,
    /// Link count during build (`pino_nlink`; 1 for ino 1 at creation).
    pub pino_nlink: u32,
}

/// An xattr datum seen by the scan (§9.1, §9.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XattrDatum {
    /// xattr id.
    pub xid: u32,
    /// Version.
    pub version: u32,
    /// Index of the node in [`Scan::refs`].
    pub node: usize,
}

/// An xattr reference seen by the scan (§9.2, §9.3). From a summary record only the
/// offset is known until the node is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XattrRef {
    /// Inode, when known.
    pub ino: Option<u32>,
    /// xattr id, when known.
    pub xid: Option<u32>,
    /// Sequence number, when known.
    pub xseqno: Option<u32>,
    /// Index of the node in [`Scan::refs`].
    pub node: usize,
}

/// How the kernel files an erase block after scanning it (§3.4, §3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockClass {
    /// Nothing but 0xFF (erased): goes to the erase-pending or free list.
    Empty,
    /// Only a valid cleanmarker.
    Cleanmarker,
    /// Valid nodes, at most 196 bytes unused.
    Clean,
    /// Valid nodes and dirt or free space.
    PartDirty,
    /// No valid node.
    AllDirty,
}

impl BlockClass {
    /// The class's name in listings and JSON (`partly-dirty`, `all-dirty`, …).
    pub fn name(self) -> &'static str {
        match self {
            BlockClass::Empty => "empty",
            BlockClass::Cleanmarker => "cleanmarker",
            BlockClass::Clean => "clean",
            BlockClass::PartDirty => "partly-dirty",
            BlockClass::AllDirty => "all-dirty",
        }
    }
}

/// How a block's summary was used (§4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryUse {
    /// No summary marker in the block, or summaries disabled.
    None,
    /// The summary was valid and the block was not read further.
    Used,
    /// A summary marker was found but rejected; the block was fully scanned.
    Rejected(String),
}

/// Per-block result and space accounting (`struct jffs2_eraseblock`, §7.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockInfo {
    /// Block index.
    pub index: u32,
    /// Absolute offset of the block.
    pub offset: u32,
    /// Classification.
    pub class: BlockClass,
    /// Bytes of valid, checked nodes.
    pub used: u32,
    /// Bytes of linked, not yet checked nodes.
    pub unchecked: u32,
    /// Bytes of dirt.
    pub dirty: u32,
    /// Bytes of wasted space.
    pub wasted: u32,
    /// Bytes still free (erased) at the block's end.
    pub free: u32,
    /// The summary path.
    pub summary: SummaryUse,
    /// Bytes the kernel reads from this block at mount (the whole block on a full scan,
    /// or the summary on the summary path).
    ///
    /// Counted as the kernel's reads: the 8-byte summary marker (when summaries are
    /// enabled), then on the summary path the rest of the summary, else the first
    /// `EMPTY_SCAN_SIZE` (256) bytes and every `PAGE_SIZE` re-read of the full scan — so an
    /// empty block costs 256 (+8) bytes and re-reads overlap as they do in the kernel.
    pub bytes_read: u32,
    /// *(added)* The list `jffs2_scan_medium` filed the block on (§3.1).
    pub list: BlockList,
    /// *(added)* `free_size` as `jffs2_scan_eraseblock` left it, before filing: the erased
    /// tail of a full scan (0 on the summary path). [`BlockInfo::free`] is the value after
    /// filing: a block filed dirty has its free tail turned into dirt (`file_dirty`).
    pub free_at_scan: u32,
    /// *(added)* Indices into [`Scan::refs`] of the nodes linked in this block.
    pub refs: std::ops::Range<usize>,
}

/// Where `jffs2_scan_medium` put a block (§3.1). The counters of [`BlockInfo`] are those after
/// this filing: `file_dirty` turned free space into dirt and wasted into dirt for blocks filed
/// `Dirty`/`VeryDirty`, and the nextblock's dirt became wasted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockList {
    /// `free_list`: a cleanmarker-only (or, without cleanmarkers, erased) block.
    Free,
    /// `clean_list`.
    Clean,
    /// `dirty_list`.
    Dirty,
    /// `very_dirty_list` (dirt ≥ half a block).
    VeryDirty,
    /// `erase_pending_list`: erased (ALLFF), all-dirty, or cleanmarker-with-dirt blocks.
    ErasePending,
    /// `c->nextblock`: the partly written block further writes go to.
    Nextblock,
}

impl BlockList {
    /// The list's name in listings and JSON (`very-dirty`, `erase-pending`, …).
    pub fn name(self) -> &'static str {
        match self {
            BlockList::Free => "free",
            BlockList::Clean => "clean",
            BlockList::Dirty => "dirty",
            BlockList::VeryDirty => "very-dirty",
            BlockList::ErasePending => "erase-pending",
            BlockList::Nextblock => "nextblock",
        }
    }
}

/// Why the scan accounted a range as dirty (`jffs2_scan_dirty_space`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DirtCause {
    /// 0xFF words that did not run to the end of the block (§3.2 C and D.5).
    Erased,
    /// A 0x0000 word (`JFFS2_DIRTY_BITMASK`, §3.2 D.7).
    ZeroWord,
    /// A word that is not a node header: wrong, old (0x1984) or byte-swapped magic (§3.2 D.6–9).
    BadMagic,
    /// A header whose `hdr_crc` does not match (§3.2 D.10).
    HeaderCrc,
    /// A node that would run over the end of the erase block (§3.2 D.11).
    CrossesBlockEnd,
    /// An offset scanned twice (`totlen` 0, §3.2 D.2).
    AlreadySeen,
    /// Fewer than 12 bytes left at the end of the block (§3.2 D.3).
    BlockTail,
    /// A node with the ACCURATE bit cleared (§3.2 D.12).
    Obsolete,
    /// An inode, dirent, xattr or xref node whose node CRC failed (§3.3, §9.1–9.2).
    NodeCrc,
    /// A dirent whose name CRC failed (§3.3).
    NameCrc,
    /// An xattr or xref node whose `totlen` disagrees with its contents (§9.1–9.2).
    Length,
    /// A padding node (§3.3).
    Padding,
    /// A cleanmarker of the wrong size (§3.3).
    CleanmarkerSize,
    /// A cleanmarker that is not the first node of its block (§3.3).
    CleanmarkerNotFirst,
    /// An unknown node the kernel deletes (RWCOMPAT_DELETE, a summary node met in a full
    /// scan, or ROCOMPAT on a read-only mount; §3.3).
    Unknown,
    /// An INCOMPAT node (fatal; scanned past for diagnostics).
    Incompat,
    /// Space a valid summary does not describe (§4.3 gaps).
    SummaryGap,
    /// A summary `cln_mkr` that does not match the cleanmarker size (§4.3).
    SummaryCleanmarker,
    /// Adjacent dirt of several causes merged (only once [`Scan::dirt`] is very long).
    Mixed,
}

impl DirtCause {
    /// The cause's name in listings and JSON (`obsolete`, `node-crc`, …).
    pub fn name(self) -> &'static str {
        match self {
            DirtCause::Erased => "erased-not-at-end",
            DirtCause::ZeroWord => "zero-word",
            DirtCause::BadMagic => "bad-magic",
            DirtCause::HeaderCrc => "header-crc",
            DirtCause::CrossesBlockEnd => "crosses-block-end",
            DirtCause::AlreadySeen => "already-seen",
            DirtCause::BlockTail => "block-tail",
            DirtCause::Obsolete => "obsolete",
            DirtCause::NodeCrc => "node-crc",
            DirtCause::NameCrc => "name-crc",
            DirtCause::Length => "length",
            DirtCause::Padding => "padding",
            DirtCause::CleanmarkerSize => "cleanmarker-size",
            DirtCause::CleanmarkerNotFirst => "cleanmarker-not-first",
            DirtCause::Unknown => "unknown-node",
            DirtCause::Incompat => "incompat-node",
            DirtCause::SummaryGap => "summary-gap",
            DirtCause::SummaryCleanmarker => "summary-cleanmarker",
            DirtCause::Mixed => "mixed",
        }
    }
}

/// A dirty range found by the scan (*added*). Adjacent ranges of the same cause are merged.
/// The free tail that `file_dirty` turns into dirt is not listed (it is accounting, not
/// content).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dirt {
    /// Absolute offset.
    pub offset: u32,
    /// Length in bytes.
    pub len: u32,
    /// Why.
    pub cause: DirtCause,
}

/// Kernel log level of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// `pr_err`.
    Err,
    /// `pr_warn` / `JFFS2_WARNING`.
    Warning,
    /// `pr_notice`.
    Notice,
    /// `pr_info`.
    Info,
}

impl Level {
    /// The level's name in listings and JSON (`err`, `warning`, `notice`, `info`).
    pub fn name(self) -> &'static str {
        match self {
            Level::Err => "err",
            Level::Warning => "warning",
            Level::Notice => "notice",
            Level::Info => "info",
        }
    }
}

/// One message Linux would print, in its wording (Appendix A).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelMsg {
    /// Level.
    pub level: Level,
    /// The offset the message is about, if any.
    pub offset: Option<u32>,
    /// The text, as `dmesg` shows it after the `jffs2: ` prefix.
    pub text: String,
}

/// Why the kernel would refuse to mount.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MountFailure {
    /// An INCOMPAT node (mount: -EINVAL reported as -EIO).
    Incompat {
        /// Offset of the node.
        offset: u32,
        /// Its type.
        nodetype: u16,
    },
    /// A ROCOMPAT node on a read-write mount.
    RoCompat {
        /// Offset of the node.
        offset: u32,
        /// Its type.
        nodetype: u16,
    },
    /// Fewer than 5 erase blocks.
    TooFewBlocks(u32),
    /// Any other fatal condition, with the kernel's message.
    Other(String),
}

impl std::fmt::Display for MountFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MountFailure::Incompat { offset, nodetype } => write!(
                f,
                "node type 0x{nodetype:04x} at 0x{offset:08x} is INCOMPAT and unknown to Linux"
            ),
            MountFailure::RoCompat { offset, nodetype } => write!(
                f,
                "node type 0x{nodetype:04x} at 0x{offset:08x} is ROCOMPAT: read-only mounts only"
            ),
            MountFailure::TooFewBlocks(n) => write!(f, "too few erase blocks ({n}; 5 needed)"),
            MountFailure::Other(why) => f.write_str(why),
        }
    }
}

/// Everything the scan found.
#[derive(Debug, Clone)]
pub struct Scan {
    /// The geometry scanned with.
    pub geometry: Geometry,
    /// Every node ref, in scan order (block ascending, then offset or record order).
    pub refs: Vec<NodeRef>,
    /// Inode caches by inode number.
    pub inodes: std::collections::BTreeMap<u32, InodeCache>,
    /// xattr datums.
    pub xattr_datums: Vec<XattrDatum>,
    /// xattr references.
    pub xattr_refs: Vec<XattrRef>,
    /// Per-block results.
    pub blocks: Vec<BlockInfo>,
    /// Messages Linux would print, in order.
    pub log: Vec<KernelMsg>,
    /// Set when the mount would fail at this stage: the first fatal condition met. The
    /// kernel stops there; this scan stops logging and continues through the image for the
    /// tools' sake (an INCOMPAT/ROCOMPAT node is then skipped as dirt, a summary that
    /// aborts the mount or would crash the kernel is replaced by a full scan of its block,
    /// and a block whose accounting hits a kernel BUG is closed as it stands).
    pub failure: Option<MountFailure>,
    /// Highest inode number seen.
    pub highest_ino: u32,
    /// *(added)* The flash size the kernel uses: the image truncated to whole erase blocks
    /// (§2), capped below 4 GiB (the kernel's `flash_size` is 32-bit).
    pub flash_size: u32,
    /// *(added)* Dirty ranges and why (see [`Dirt`]).
    pub dirt: Vec<Dirt>,
    /// *(added)* A ROCOMPAT node set `JFFS2_SB_FLAG_RO`: the filesystem can only be mounted
    /// read-only.
    pub forced_read_only: bool,
    /// *(added)* The scan's contribution to the kernel's `pseudo_random` (§3.1), which
    /// rotates the block lists after the build; the kernel adds it to a module-lifetime
    /// accumulator, so only this part is reproducible.
    pub pseudo_random: u32,
    /// *(added)* Highest xattr id seen (`c->highest_xid`).
    pub highest_xid: u32,
    /// *(added)* Highest xref sequence number seen, delete bit cleared (`c->highest_xseqno`).
    pub highest_xseqno: u32,
    /// *(added)* Messages not stored because the log reached its cap (100 000 entries).
    pub log_dropped: u64,
    /// *(added)* Offset of the erase block that starts with OpenWrt's end-of-filesystem
    /// marker, when [`ScanOptions::end_marker`] found one: that block and every later one are
    /// [`BlockClass::Empty`] (erased at mount by OpenWrt's kernel) and were not scanned.
    pub end_marker: Option<u32>,
}

impl Scan {
    /// The scan of nothing in `geometry`: no blocks, refs or inodes (what a model for reading
    /// single nodes is built from, [`crate::fs::Fs::for_node_reads`]).
    pub(crate) fn empty(geometry: Geometry) -> Scan {
        Scan {
            geometry,
            refs: Vec::new(),
            inodes: std::collections::BTreeMap::new(),
            xattr_datums: Vec::new(),
            xattr_refs: Vec::new(),
            blocks: Vec::new(),
            log: Vec::new(),
            failure: None,
            highest_ino: 0,
            flash_size: 0,
            dirt: Vec::new(),
            forced_read_only: false,
            pseudo_random: 0,
            highest_xid: 0,
            highest_xseqno: 0,
            log_dropped: 0,
            end_marker: None,
        }
    }
}

/// Global space counters (`c->used_size` etc., §7.1), the sums over [`Scan::blocks`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpaceTotals {
    /// Used (checked or pristine) bytes.
    pub used: u64,
    /// Unchecked bytes.
    pub unchecked: u64,
    /// Dirty bytes.
    pub dirty: u64,
    /// Wasted bytes.
    pub wasted: u64,
    /// Free bytes.
    pub free: u64,
    /// Bytes the kernel read at mount.
    pub bytes_read: u64,
}

/// The space counters as shares of the flash, printed (`12.5%`): the one computation behind
/// `jffs2-fsck`'s `space:` line and the block map's totals, so both give the same figures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpaceShares {
    /// Checked (or pristine) node bytes: unchecked bytes are not counted here, as the kernel's
    /// `used_size` does not count them until they are checked (§7.1).
    pub used: String,
    /// Node bytes not yet checked.
    pub unchecked: String,
    /// Dirty bytes.
    pub dirty: String,
    /// Wasted bytes.
    pub wasted: String,
    /// Free bytes.
    pub free: String,
}

impl SpaceTotals {
    /// Each counter as a share of a flash of `flash_len` bytes.
    pub fn shares(&self, flash_len: u64) -> SpaceShares {
        let p = |v: u64| crate::text::percent(v, flash_len);
        SpaceShares {
            used: p(self.used),
            unchecked: p(self.unchecked),
            dirty: p(self.dirty),
            wasted: p(self.wasted),
            free: p(self.free),
        }
    }
}

impl Scan {
    /// The global counters after the scan (sums of the per-block counters).
    pub fn totals(&self) -> SpaceTotals {
        let mut t = SpaceTotals::default();
        for b in &self.blocks {
            t.used += u64::from(b.used);
            t.unchecked += u64::from(b.unchecked);
            t.dirty += u64::from(b.dirty);
            t.wasted += u64::from(b.wasted);
            t.free += u64::from(b.free);
            t.bytes_read += u64::from(b.bytes_read);
        }
        t
    }

    /// Index into [`Scan::blocks`] of the block holding absolute offset `offset`.
    pub fn block_of(&self, offset: u32) -> Option<usize> {
        let es = self.geometry.erase_size;
        if es == 0 || offset >= self.flash_size {
            return None;
        }
        let i = (offset / es) as usize;
        (i < self.blocks.len()).then_some(i)
    }
}
