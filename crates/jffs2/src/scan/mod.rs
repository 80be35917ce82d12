//! The Linux mount scan, reproduced offline (`kernel-jffs2-spec.md` §3, §4, §7.1, §9.1–9.3,
//! §10, Appendix A). One scanner serves fsck, sumtool, dump and convert.
//!
//! This file holds the types the scan produces — the contract with the filesystem model in
//! [`crate::fs`], which consumes a [`Scan`] the way `build.c` and `readinode.c` consume the
//! kernel's in-memory node references. The scan never panics on input and never reads
//! outside the image; memory is bounded by the number of nodes in the image.

use crate::format::{Endian, NodeKind};

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
}

impl Default for ScanOptions {
    fn default() -> Self {
        ScanOptions {
            read_only: true,
            summary: true,
            xattr: true,
        }
    }
}

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
    pub name: Vec<u8>,
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
    /// Dirents in this directory after scan-time de-duplication (§5.2).
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
    pub bytes_read: u32,
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
    /// Set when the mount would fail at this stage.
    pub failure: Option<MountFailure>,
    /// Highest inode number seen.
    pub highest_ino: u32,
}
