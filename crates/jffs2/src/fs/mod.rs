//! The filesystem model: what Linux builds from a [`crate::scan::Scan`] at mount
//! (`build.c`, `docs/spec/kernel-jffs2-spec.md` §5) and what it reads for each inode (`readinode.c`,
//! `read.c`, §6), plus xattrs (§9.4).
//!
//! # Use
//!
//! ```
//! use jffs2::fs;
//! # let dir = tempfile::tempdir()?;
//! # std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
//! # std::fs::create_dir(dir.path().join("tmp"))?;
//! # let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
//! # let mut image = Vec::new();
//! # jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
//!
//! // `image`: mkfs.jffs2's image of a directory holding `motd` and `tmp/`.
//! let image = jffs2::Image::from_vec(image)?; // detected, padded as flashed
//! let fs = image.mount()?; // the mount scan, then jffs2_build_filesystem (§5, §9.4)
//!
//! let root = fs.read_inode(1)?; // jffs2_iget / jffs2_do_read_inode (§6)
//! assert_eq!(root.kind, fs::InodeKind::Dir);
//! let names: Vec<&[u8]> = root.dents.iter().map(|d| d.name.as_bytes()).collect();
//! assert_eq!(names, [&b"motd"[..], b"tmp"]);
//!
//! let motd = root.dents[0].ino;
//! assert_eq!(fs.read_data(motd, 0, 4096)?, b"Welcome\n"); // jffs2_read_inode_range (§6.5)
//! let tree = fs.tree(&fs::TreeOptions::default()); // what `find` + `stat` + `md5sum` show
//! assert_eq!(tree.entries.len(), 3);
//! assert!(fs.problems().is_empty()); // what fsck would report
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`crate::Image::mount`] is the way in (the detection, the padding as flashed, the scan and
//! the build, in one call; the model owns its scan). [`Fs::from_scan`], on a scan of the caller's,
//! mutates the scan the way the kernel mutates its node references during the build (and
//! empties its `scan_dents`, which the kernel frees there):
//! refs the build obsoletes get [`RefState::Obsolete`]. Everything after the build is lazy and
//! read-only, as in the kernel (an inode is read when it is looked up): [`Fs::read_inode`]
//! returns what `readinode.c` would obsolete in [`Inode::obsoleted`] instead of changing the
//! scan.
//!
//! # Robustness
//!
//! Nothing here panics on input or allocates in proportion to a claimed size: file sizes are
//! never materialised (holes and ZERO nodes are streamed, see [`Fs::read_with`]), a node is
//! decompressed only up to its `dsize`, and a `dsize` the kernel could not allocate
//! ([`FsOptions::kmalloc_max`]) is a read error, as it is on Linux. Directory cycles, deep
//! trees and paths longer than `PATH_MAX` are bounded in the tree walk ([`Fs::tree`]).
//!
//! # Where this differs from the kernel (documented choices)
//!
//! * Data-node pre-filter (§6.2): the result is the kernel's — valid nodes overlaid in version
//!   order, nodes failing their data CRC dropped — but the kernel's red-black-tree walk that
//!   decides which equal-version nodes "collide" is modelled as "overlapping ranges".
//! * `zlib` data whose `data_crc` is right but whose stream is corrupt: the kernel only logs
//!   `inflate returned %d` and shows whatever was produced; here it is a read error.
//!   Uncompressed nodes with `csize < dsize` (the kernel copies past its buffer) likewise.
//! * The order in which the build visits a directory's dirents (§5.5, which parent of a
//!   hard-linked directory wins) is the order of the scan's `scan_dents`; inode caches are
//!   visited in the kernel's hash order.
//! * Dirent name CRCs at readinode are checked as on NOR flash (every name is re-read, §6.1).
//! * The build sets [`RefState::Obsolete`] but leaves the blocks' space counters as the
//!   scan computed them.
//! * The tree walk lists a directory reached a second time but does not descend into it
//!   (the VFS's dentry aliasing is not modelled).

mod build;
mod dirent;
mod lookup;
mod md5;
mod read;
mod readinode;
mod refs;
mod tree;
mod xattr;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::fmt;

use crate::code::Code;
use crate::compress::ComprError;
use crate::format::ROOT_INO;
use crate::scan::{KernelMsg, Level, RefState, Scan};

pub use build::BuildScan;
pub use dirent::Dirent;
pub use lookup::{lookup, LookupError};
pub use md5::Md5;
pub use read::NodeData;
pub use readinode::{DataNode, Frag, Inode, InodeKind, ReadFailure};
pub use tree::{Tree, TreeEntry, TreeOptions, PATH_MAX};
pub use xattr::{RawXattr, Xattr, XattrError, XattrSummary};

/// `PAGE_SIZE` of the reference kernel (Debian amd64).
pub const PAGE_SIZE: u32 = 4096;

/// `KMALLOC_MAX_SIZE` of the reference kernel (6.1, amd64: `1 << (MAX_ORDER + PAGE_SHIFT - 1)`
/// = 4 MiB). `read.c: jffs2_read_dnode` allocates `dsize` bytes for every partial read of a
/// compressed node (a page is always a partial read of a node with `dsize > PAGE_SIZE`), so a
/// larger `dsize` fails with -ENOMEM and the read with -EIO.
pub const KMALLOC_MAX: u32 = 4 << 20;

/// How compressor ids 3 and 5 (rubin) are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RubinMode {
    /// No rubin decompressor, as in Debian's kernel (`# CONFIG_JFFS2_RUBIN is not set`): both
    /// ids give `compression type 0x0N not available` and -EIO (§1.9).
    #[default]
    Unavailable,
    /// A kernel built with `CONFIG_JFFS2_RUBIN`: since 2004 `compr_rubin.c` registers the
    /// fixed-model decoder under id 5 and the dynamic-model decoder under id 3 (swapped
    /// relative to the names).
    KernelSwapped,
    /// The ids' defined meaning (3 = fixed MIPS model, 5 = dynamic model), as 2.4 kernels and
    /// U-Boot read them.
    ByName,
}

/// Options of the model: which kernel is emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FsOptions {
    /// Rubin decompressors (default: none, like the reference kernel).
    pub rubin: RubinMode,
    /// The largest `dsize` of a compressed node the kernel can read ([`KMALLOC_MAX`]).
    pub kmalloc_max: u32,
}

impl Default for FsOptions {
    fn default() -> Self {
        FsOptions {
            rubin: RubinMode::Unavailable,
            kmalloc_max: KMALLOC_MAX,
        }
    }
}

/// Why a node's data could not be read (`read.c: jffs2_read_dnode`, §6.5). Every variant
/// carries the node's byte offset in the image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The node runs past the end of the image (a short flash read: -EIO).
    #[error("node at 0x{offset:08x} runs past the end of the image")]
    OutOfImage {
        /// Node offset.
        offset: u32,
    },
    /// `node_crc` does not match (`Node CRC %08x != calculated CRC %08x for node at %08x`).
    #[error("node CRC 0x{stored:08x} != calculated 0x{computed:08x} for node at 0x{offset:08x}")]
    NodeCrc {
        /// Node offset.
        offset: u32,
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// `data_crc` does not match (`Data CRC %08x != calculated CRC %08x for node at %08x`).
    #[error("data CRC 0x{stored:08x} != calculated 0x{computed:08x} for node at 0x{offset:08x}")]
    DataCrc {
        /// Node offset.
        offset: u32,
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// The kernel cannot allocate the `dsize` buffer (`kmalloc(dsize)` fails: -ENOMEM).
    #[error("node at 0x{offset:08x} has dsize {dsize}, more than the kernel can allocate")]
    TooLarge {
        /// Node offset.
        offset: u32,
        /// The claimed dsize.
        dsize: u32,
    },
    /// An uncompressed node whose `csize` is smaller than its `dsize`: the kernel copies
    /// `dsize` bytes out of a `csize` buffer (reads past it), so what Linux shows is undefined.
    #[error("uncompressed node at 0x{offset:08x} stores {csize} bytes for a dsize of {dsize}")]
    ShortUncompressed {
        /// Node offset.
        offset: u32,
        /// Stored bytes.
        csize: u32,
        /// Claimed bytes.
        dsize: u32,
    },
    /// Decompression failed, or the compressor is not available (`compression type 0x%02x
    /// not available`); the kernel returns -EIO.
    #[error("node at 0x{offset:08x}: {error}")]
    Decompress {
        /// Node offset.
        offset: u32,
        /// What the decompressor said.
        error: ComprError,
    },
}

impl ReadError {
    /// The offset of the node the error is about.
    pub fn offset(&self) -> u32 {
        match self {
            ReadError::OutOfImage { offset }
            | ReadError::NodeCrc { offset, .. }
            | ReadError::DataCrc { offset, .. }
            | ReadError::TooLarge { offset, .. }
            | ReadError::ShortUncompressed { offset, .. }
            | ReadError::Decompress { offset, .. } => *offset,
        }
    }
}

/// Why an inode cannot be read (`jffs2_iget` fails: the name is listed by `readdir` but
/// `stat` and `open` fail).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    /// No inode cache for this number (`requested to read a nonexistent ino`: -ENOENT).
    #[error("inode #{0} does not exist")]
    NoSuchInode(u32),
    /// No valid data or metadata node and no children (`no data nodes found for ino #%u`: -EIO).
    #[error("no valid nodes for inode #{0}")]
    NoDataNodes(u32),
    /// A node the inode needs lies (partly) outside the image: a short read, -EIO.
    #[error("inode #{ino}: node at 0x{offset:08x} runs past the end of the image")]
    ShortRead {
        /// Inode.
        ino: u32,
        /// Node offset.
        offset: u32,
    },
    /// The latest node failed its CRC when re-read (`CRC failed for read_inode of inode %u at
    /// physical location 0x%x`: -EIO).
    #[error("CRC failed for read_inode of inode {ino} at physical location 0x{offset:x}")]
    LatestNodeCrc {
        /// Inode.
        ino: u32,
        /// Node offset.
        offset: u32,
    },
    /// A symlink target longer than 254 bytes (-ENAMETOOLONG).
    #[error("symlink inode #{ino} at 0x{offset:08x}: target of {len} bytes is too long")]
    SymlinkTooLong {
        /// Inode.
        ino: u32,
        /// Node offset.
        offset: u32,
        /// Target length (csize).
        len: u32,
    },
    /// A device or symlink whose latest node is a metadata node, or that has no fragment or
    /// more than one (`Argh. Special inode #%u …`: -EIO).
    #[error("special inode #{ino} with mode 0{mode:o}: {what}")]
    BadSpecial {
        /// Inode.
        ino: u32,
        /// Mode.
        mode: u32,
        /// Which of the kernel's three checks failed.
        what: &'static str,
    },
    /// A device node whose payload is not 2 or 4 bytes (`Device node has strange size %d`).
    #[error("device inode #{ino}: device node has strange size {size}")]
    DeviceSize {
        /// Inode.
        ino: u32,
        /// Payload size.
        size: u32,
    },
    /// Reading data failed (-EIO).
    #[error("inode #{ino}: {error}")]
    Read {
        /// Inode.
        ino: u32,
        /// The node-level error.
        error: ReadError,
    },
    /// The inode is not a directory.
    #[error("inode #{0} is not a directory")]
    NotADirectory(u32),
}

/// One finding, for fsck (`Fs::problems`). Each carries what is known: node offsets, inode
/// numbers and (after a tree walk) paths.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Problem {
    /// A dirent names an inode that does not exist; the build obsoletes it and the name
    /// disappears (§5.3).
    DirentToMissingInode {
        /// Offset of the dirent node.
        offset: u32,
        /// Directory.
        parent: u32,
        /// Name.
        name: Vec<u8>,
        /// The missing inode.
        ino: u32,
    },
    /// An inode that no live dirent names: the build deletes it and its nodes become dirt
    /// (§5.4). Normal on an image the kernel has written to: a deleted file's nodes stay on
    /// flash until garbage collection (every dirty kernel fixture has some); suspicious only
    /// in a freshly built image.
    OrphanInode {
        /// Inode.
        ino: u32,
        /// Offset of its first node, if it has any.
        offset: Option<u32>,
        /// How many live nodes it had.
        nodes: usize,
    },
    /// A directory named by DT_DIR dirents from two directories (§5.5: the kernel logs
    /// `child dir "%s" (ino #%u) of dir ino #%u is also hard linked from dir ino #%u`).
    DirHardLink {
        /// Offset of the dirent of the later-visited parent.
        offset: u32,
        /// The directory.
        ino: u32,
        /// Its name in `parent`.
        name: Vec<u8>,
        /// The parent that wins (visited last).
        parent: u32,
        /// The earlier parent.
        other_parent: u32,
    },
    /// While walking from the root, a directory was reached a second time (a cycle or a
    /// directory with two parents); it is not descended again.
    DirReachedTwice {
        /// The directory.
        ino: u32,
        /// The second path.
        path: Vec<u8>,
        /// The first path.
        first_path: Vec<u8>,
    },
    /// An inode that survives the build (has links) but cannot be reached from the root
    /// (an unreachable directory cycle, or a child of one) (§5.4).
    Unreachable {
        /// Inode.
        ino: u32,
    },
    /// The link count Linux reports differs from the names found walking the tree.
    NlinkMismatch {
        /// Inode.
        ino: u32,
        /// A path of it.
        path: Vec<u8>,
        /// `i_nlink` as Linux reports it.
        nlink: u32,
        /// Names found in reachable directories.
        found: u32,
    },
    /// A regular file whose latest `isize` is beyond its data (`Truncating ino #%u to %d bytes
    /// failed because it only had %d bytes to start with!`): Linux shows the shorter size.
    SizeBeyondData {
        /// Inode.
        ino: u32,
        /// Path, when known.
        path: Option<Vec<u8>>,
        /// The claimed size.
        isize: u32,
        /// The size Linux shows.
        size: u32,
    },
    /// A data node whose `data_crc` fails; readinode drops it and older data shows through
    /// (§6.2). `superseded` when newer valid data covers it entirely (the kernel never even
    /// checks such a node).
    DataCrc {
        /// Inode.
        ino: u32,
        /// Node offset.
        offset: u32,
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
        /// Completely covered by newer valid data.
        superseded: bool,
    },
    /// A node readinode rejects before looking at its data: header CRC, magic, node CRC,
    /// `offset > isize`, `csize`/`totlen` or `nsize`/`totlen` mismatch, name CRC (§6.1).
    BadNode {
        /// Inode.
        ino: u32,
        /// Node offset.
        offset: u32,
        /// The kernel's message.
        reason: String,
    },
    /// Data of a live node cannot be read (decompression failure, unknown compressor, …).
    Unreadable {
        /// Inode.
        ino: u32,
        /// Path, when known.
        path: Option<Vec<u8>>,
        /// The error.
        error: ReadError,
    },
    /// An inode that a directory names but that cannot be read (`stat` fails).
    InodeUnreadable {
        /// Inode.
        ino: u32,
        /// Path, when known.
        path: Option<Vec<u8>>,
        /// The error.
        error: FsError,
    },
    /// A path of `PATH_MAX` bytes or more: Linux reaches what lies below by relative
    /// lookups, but no absolute path names it (`ENAMETOOLONG`); the tree walk checks that
    /// subtree without listing it.
    PathTooLong {
        /// Inode.
        ino: u32,
        /// The first [`PATH_MAX`] bytes of the path.
        path: Vec<u8>,
    },
    /// An xattr problem (§9.4): broken datum or xref, orphans, invalid ACL.
    Xattr(XattrError),
}

impl Problem {
    /// A stable machine-readable code.
    pub fn code(&self) -> Code {
        match self {
            Problem::DirentToMissingInode { .. } => Code::DirentToMissingInode,
            Problem::OrphanInode { .. } => Code::OrphanInode,
            Problem::DirHardLink { .. } => Code::DirectoryHardLink,
            Problem::DirReachedTwice { .. } => Code::DirectoryReachedTwice,
            Problem::Unreachable { .. } => Code::UnreachableInode,
            Problem::NlinkMismatch { .. } => Code::NlinkMismatch,
            Problem::SizeBeyondData { .. } => Code::SizeBeyondData,
            Problem::DataCrc { .. } => Code::DataCrc,
            Problem::BadNode { .. } => Code::BadNode,
            Problem::Unreadable { .. } => Code::UnreadableData,
            Problem::InodeUnreadable { .. } => Code::UnreadableInode,
            Problem::PathTooLong { .. } => Code::PathTooLong,
            Problem::Xattr(e) => e.code(),
        }
    }

    /// The node offset the problem is about, if any.
    pub fn offset(&self) -> Option<u32> {
        match self {
            Problem::DirentToMissingInode { offset, .. }
            | Problem::DirHardLink { offset, .. }
            | Problem::DataCrc { offset, .. }
            | Problem::BadNode { offset, .. } => Some(*offset),
            Problem::OrphanInode { offset, .. } => *offset,
            Problem::Unreadable { error, .. } => Some(error.offset()),
            Problem::InodeUnreadable { error, .. } => match error {
                FsError::ShortRead { offset, .. }
                | FsError::LatestNodeCrc { offset, .. }
                | FsError::SymlinkTooLong { offset, .. } => Some(*offset),
                FsError::Read { error, .. } => Some(error.offset()),
                _ => None,
            },
            Problem::Xattr(e) => e.offset(),
            _ => None,
        }
    }

    /// The inode the problem is about, if any.
    pub fn ino(&self) -> Option<u32> {
        match self {
            Problem::DirentToMissingInode { parent, .. } => Some(*parent),
            Problem::OrphanInode { ino, .. }
            | Problem::DirHardLink { ino, .. }
            | Problem::DirReachedTwice { ino, .. }
            | Problem::Unreachable { ino }
            | Problem::NlinkMismatch { ino, .. }
            | Problem::SizeBeyondData { ino, .. }
            | Problem::DataCrc { ino, .. }
            | Problem::BadNode { ino, .. }
            | Problem::Unreadable { ino, .. }
            | Problem::InodeUnreadable { ino, .. }
            | Problem::PathTooLong { ino, .. } => Some(*ino),
            Problem::Xattr(e) => e.ino(),
        }
    }

    /// The path the problem is about, when known.
    pub fn path(&self) -> Option<&[u8]> {
        match self {
            Problem::DirReachedTwice { path, .. }
            | Problem::NlinkMismatch { path, .. }
            | Problem::PathTooLong { path, .. } => Some(path),
            Problem::SizeBeyondData { path, .. }
            | Problem::Unreadable { path, .. }
            | Problem::InodeUnreadable { path, .. } => path.as_deref(),
            _ => None,
        }
    }
}

fn show(name: &[u8]) -> String {
    crate::text::escape_if_needed(name).into_owned()
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::DirentToMissingInode {
                parent, name, ino, ..
            } => write!(
                f,
                "entry \"{}\" of directory #{parent} names inode #{ino}, which does not exist; Linux drops the entry",
                show(name)
            ),
            Problem::OrphanInode { ino, nodes, .. } => write!(
                f,
                "inode #{ino} ({nodes} nodes) has no directory entry; Linux deletes it at mount"
            ),
            Problem::DirHardLink {
                ino,
                name,
                parent,
                other_parent,
                ..
            } => write!(
                f,
                "directory #{ino} (\"{}\") has two parents, #{other_parent} and #{parent}; Linux keeps #{parent}",
                show(name)
            ),
            Problem::DirReachedTwice {
                ino,
                path,
                first_path,
            } => write!(
                f,
                "directory #{ino} is reached again at {} (first at {}): a cycle or a directory hard link",
                show(path),
                show(first_path)
            ),
            Problem::Unreachable { ino } => write!(
                f,
                "inode #{ino} has links but cannot be reached from the root (a directory cycle)"
            ),
            Problem::NlinkMismatch {
                ino,
                path,
                nlink,
                found,
            } => write!(
                f,
                "{} (inode #{ino}): Linux reports {nlink} links, {found} names found",
                show(path)
            ),
            Problem::SizeBeyondData {
                ino,
                path,
                isize,
                size,
            } => write!(
                f,
                "{}inode #{ino} claims {isize} bytes but its data ends at {size}; Linux shows {size}",
                path.as_ref().map(|p| format!("{}: ", show(p))).unwrap_or_default()
            ),
            Problem::DataCrc {
                ino,
                offset,
                stored,
                computed,
                superseded,
            } => write!(
                f,
                "wrong data CRC in data node at 0x{offset:08x} of inode #{ino}: read 0x{stored:08x}, calculated 0x{computed:08x}{}",
                if *superseded {
                    " (superseded by newer data)"
                } else {
                    "; older data shows through"
                }
            ),
            Problem::BadNode { ino, offset, reason } => {
                write!(f, "node at 0x{offset:08x} of inode #{ino} rejected: {reason}")
            }
            Problem::Unreadable { ino, path, error } => write!(
                f,
                "{}inode #{ino}: data cannot be read: {error}",
                path.as_ref().map(|p| format!("{}: ", show(p))).unwrap_or_default()
            ),
            Problem::InodeUnreadable { ino, path, error } => write!(
                f,
                "{}inode #{ino} cannot be read: {error}",
                path.as_ref().map(|p| format!("{}: ", show(p))).unwrap_or_default()
            ),
            Problem::PathTooLong { ino, path } => write!(
                f,
                "path of inode #{ino} reaches PATH_MAX ({}…): Linux reaches it and what lies \
                 below through relative lookups, but no absolute path names them (not a cycle)",
                show(&path[..path.len().min(64)])
            ),
            Problem::Xattr(e) => write!(f, "{e}"),
        }
    }
}

/// Build state of one inode cache (`pino_nlink`, `INO_FLAGS_IS_DIR`, removal; §5.3–5.5).
#[derive(Debug, Clone, Default)]
struct InoBuild {
    /// After the build: the parent ino for inodes named by DT_DIR dirents, the link count for
    /// the others (§5.1).
    pino_nlink: u32,
    /// Named by a DT_DIR dirent (`INO_FLAGS_IS_DIR`).
    is_dir: bool,
    /// Removed in pass 2 (§5.4).
    removed: bool,
}

/// The filesystem as Linux sees it after mounting (`jffs2_build_filesystem`), with lazy
/// inode reading. Built by [`Fs::from_scan`] ([`crate::Image::mount`] calls it).
pub struct Fs<'a> {
    image: &'a [u8],
    scan: ScanRef<'a>,
    opts: FsOptions,
    inos: BTreeMap<u32, InoBuild>,
    xattr: xattr::XattrIndex,
    problems: Vec<Problem>,
    log: Vec<KernelMsg>,
    /// The data nodes whose data CRC has passed, by ref index.
    data_ok: refs::DataChecked,
}

/// The scan a model reads: borrowed from the caller, or owned by the model (what
/// [`crate::Image::mount`] returns, so that a mounted image is one
/// value that cannot be separated from its scan).
enum ScanRef<'a> {
    Borrowed(&'a Scan),
    Owned(Box<Scan>),
}

impl std::ops::Deref for ScanRef<'_> {
    type Target = Scan;

    fn deref(&self) -> &Scan {
        match self {
            ScanRef::Borrowed(s) => s,
            ScanRef::Owned(s) => s,
        }
    }
}

impl<'a> Fs<'a> {
    /// The image.
    pub fn image(&self) -> &'a [u8] {
        self.image
    }

    /// The scan, with the build's obsoletions applied.
    pub fn scan(&self) -> &Scan {
        &self.scan
    }

    /// The options.
    pub fn options(&self) -> FsOptions {
        self.opts
    }

    /// Problems found by the build (dirents to missing inodes, orphans, directory hard links,
    /// xattr verdicts). [`Fs::problems`] adds everything a full read finds.
    pub fn build_problems(&self) -> &[Problem] {
        &self.problems
    }

    /// Messages the build would print (Appendix A wording), e.g. the xattr summary notice and
    /// directory hard-link errors.
    pub fn kernel_log(&self) -> &[KernelMsg] {
        &self.log
    }

    /// What Linux prints at mount after the scan: the build's messages, then those of reading
    /// the root inode (`jffs2_iget(sb, 1)`; if that fails the mount fails). Reading other
    /// inodes (a listing) prints more: see [`Inode::log`].
    pub fn mount_log(&self) -> Vec<KernelMsg> {
        let mut v = self.log.clone();
        match self.read_inode_logged(1) {
            Ok(root) => v.extend(root.log),
            Err(failed) => v.extend(failed.log),
        }
        v
    }

    /// Whether an inode cache exists for `ino` and survived the build.
    pub fn exists(&self, ino: u32) -> bool {
        self.inos.get(&ino).is_some_and(|b| !b.removed) || ino == ROOT_INO
    }

    /// Inode numbers of every inode cache that survived the build.
    pub fn live_inodes(&self) -> impl Iterator<Item = u32> + '_ {
        self.inos
            .iter()
            .filter(|(_, b)| !b.removed)
            .map(|(ino, _)| *ino)
    }

    /// Whether a directory entry of type `DT_DIR` names `ino` (the build's
    /// `INO_FLAGS_IS_DIR`, §5.1): what the inode is expected to be before it is read.
    pub fn named_as_dir(&self, ino: u32) -> bool {
        self.inos.get(&ino).is_some_and(|b| b.is_dir)
    }

    /// `pino_nlink` after the build (§5.1): the parent for directories, the link count for
    /// everything else. `None` if the inode cache does not exist.
    pub fn pino_nlink(&self, ino: u32) -> Option<u32> {
        self.inos.get(&ino).map(|b| b.pino_nlink)
    }

    /// Whether the build removed this inode (§5.4).
    pub fn removed(&self, ino: u32) -> bool {
        self.inos.get(&ino).is_some_and(|b| b.removed)
    }

    /// Everything fsck reports about the model: the build's problems, then those of reading
    /// every surviving inode (node checks, data CRCs, every live data node decompressed,
    /// sizes, xattrs) and of walking the tree from the root (paths, cycles, unreachable
    /// inodes, link counts).
    pub fn problems(&self) -> Vec<Problem> {
        let mut out = self.problems.clone();
        out.extend(self.tree(&TreeOptions::check()).problems);
        out
    }
}

/// A kernel message with the `JFFS2_ERROR/WARNING/NOTICE` decoration (`debug.h`):
/// `<level>: (<pid>) <function>: <text>`; the pid is not known offline and is written as the
/// literal `<pid>`, as the scan's messages do (`scan::msg`). An empty `func` gives a plain
/// `pr_*` message (no decoration).
fn kmsg(level: Level, func: &str, offset: Option<u32>, text: String) -> KernelMsg {
    let l = match level {
        Level::Err => "error",
        Level::Warning => "warning",
        Level::Notice => "notice",
        Level::Info => "info",
    };
    let text = if func.is_empty() {
        text
    } else {
        format!("{l}: (<pid>) {func}: {text}")
    };
    KernelMsg {
        level,
        offset,
        text,
    }
}

/// Whether a ref is still live.
fn live(state: RefState) -> bool {
    state != RefState::Obsolete
}
