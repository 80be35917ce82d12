//! The JFFS2 on-flash format: constants, the endianness of an image, and encode/decode of
//! every node type (`docs/spec/mtd-utils-spec.md` §2, `docs/spec/kernel-jffs2-spec.md` §1).
//!
//! Encoding writes the exact bytes mkfs.jffs2 writes (unpadded; the caller pads to 4 bytes
//! with 0xFF, see [`pad4`]). Decoding works on a byte slice and never panics: every
//! failure is a [`FormatError`] carrying the byte offset it was found at.
//!
//! # Example
//!
//! A directory entry and an inode node with its data, encoded as mkfs.jffs2 writes them,
//! then decoded and checked:
//!
//! ```
//! use jffs2::format::{
//!     DirentNode, Endian, InodeNode, NodeHeader, NodeKind, DIRENT_SIZE, INODE_SIZE, MAGIC,
//! };
//!
//! let e = Endian::Big;
//! let mut buf = Vec::new();
//! let dirent = DirentNode { pino: 1, version: 1, ino: 2, dtype: 8, ..Default::default() };
//! dirent.encode(e, b"motd", &mut buf);
//! assert_eq!(buf.len(), DIRENT_SIZE + 4);
//!
//! let header = NodeHeader::decode(&buf, e, 0)?;
//! assert_eq!((header.magic, header.totlen), (MAGIC, 44));
//! assert!(header.crc_ok(e) && header.is_accurate());
//! assert_eq!(NodeKind::of(header.nodetype), NodeKind::Dirent);
//! let d = DirentNode::decode(&buf, e, 0)?;
//! assert_eq!((d.pino, d.ino, d.name(&buf)), (1, 2, Some(&b"motd"[..])));
//! assert!(d.node_crc_ok(&buf, e) && d.name_crc_ok(&buf));
//!
//! let data = b"Welcome\n";
//! let inode = InodeNode {
//!     ino: 2, version: 1, mode: 0o100644, isize: 8, dsize: 8, ..Default::default()
//! };
//! let mut node = Vec::new();
//! inode.encode(e, data, &mut node); // uncompressed (compr 0): csize = dsize
//! let i = InodeNode::decode(&node, e, 0x1000)?;
//! assert_eq!((i.csize, i.data(&node)), (8, Some(&data[..])));
//! assert!(i.node_crc_ok(&node, e) && i.data_crc_ok(&node));
//!
//! // Every decode error names the offset it was given.
//! let err = InodeNode::decode(&node[..40], e, 0x1000).unwrap_err();
//! assert_eq!(err.to_string(), "truncated inode node at 0x00001000: need 68 bytes, 40 available");
//! # Ok::<(), jffs2::format::FormatError>(())
//! ```

pub mod acl;
pub mod dev;
mod endian;
mod node;
mod stored;
pub mod swap;

pub use endian::Endian;
pub use node::*;
pub use swap::{swap_node, SwapReport};

/// Node magic (`JFFS2_MAGIC_BITMASK`).
pub const MAGIC: u16 = 0x1985;
/// Magic written by very old JFFS2 versions (`JFFS2_OLD_MAGIC_BITMASK`).
pub const OLD_MAGIC: u16 = 0x1984;
/// The magic as it reads in the wrong endianness (`KSAMTIB_CIGAM_2SFFJ`).
pub const MAGIC_SWAPPED: u16 = 0x8519;
/// Summary marker magic (`JFFS2_SUM_MAGIC`).
pub const SUM_MAGIC: u32 = 0x0285_1885;
/// The longest name the kernel accepts (`JFFS2_MAX_NAME_LEN`).
pub const MAX_NAME_LEN: usize = 254;
/// Minimum data a writer wants room for after an inode header (`JFFS2_MIN_DATA_LEN`).
pub const MIN_DATA_LEN: u32 = 128;

/// Node type: directory entry.
pub const NODETYPE_DIRENT: u16 = 0xE001;
/// Node type: inode (metadata and data).
pub const NODETYPE_INODE: u16 = 0xE002;
/// Node type: cleanmarker.
pub const NODETYPE_CLEANMARKER: u16 = 0x2003;
/// Node type: padding.
pub const NODETYPE_PADDING: u16 = 0x2004;
/// Node type: erase-block summary.
pub const NODETYPE_SUMMARY: u16 = 0x2006;
/// Node type: xattr datum.
pub const NODETYPE_XATTR: u16 = 0xE008;
/// Node type: xattr reference.
pub const NODETYPE_XREF: u16 = 0xE009;

/// The ACCURATE bit; the kernel clears it on flash to obsolete a node.
pub const NODE_ACCURATE: u16 = 0x2000;
/// Mask of the compatibility class bits of a node type.
pub const COMPAT_MASK: u16 = 0xC000;
/// Unknown node of this class: refuse to mount.
pub const FEATURE_INCOMPAT: u16 = 0xC000;
/// Unknown node of this class: mount read-only.
pub const FEATURE_ROCOMPAT: u16 = 0x8000;
/// Unknown node of this class: keep it (copy on GC).
pub const FEATURE_RWCOMPAT_COPY: u16 = 0x4000;
/// Unknown node of this class: treat as dirty space.
pub const FEATURE_RWCOMPAT_DELETE: u16 = 0x0000;

/// Size of the common node header.
pub const HEADER_SIZE: usize = 12;
/// Size of `struct jffs2_raw_dirent` without the name.
pub const DIRENT_SIZE: usize = 40;
/// Size of `struct jffs2_raw_inode` without the data.
pub const INODE_SIZE: usize = 68;
/// Size of `struct jffs2_raw_xattr` without name and value.
pub const XATTR_SIZE: usize = 32;
/// Size of `struct jffs2_raw_xref`.
pub const XREF_SIZE: usize = 28;
/// Size of `struct jffs2_raw_summary` without records.
pub const SUMMARY_SIZE: usize = 32;
/// Size of the summary marker at the end of an erase block (offset + magic).
pub const SUMMARY_MARKER_SIZE: usize = 8;
/// Size of a summary record of an inode node (`JFFS2_SUMMARY_INODE_SIZE`).
pub const SUM_INODE_SIZE: usize = 18;
/// Size of a summary record of a dirent without its name (`JFFS2_SUMMARY_DIRENT_SIZE(0)`).
pub const SUM_DIRENT_SIZE: usize = 24;
/// Offset of the name length (`nsize`, one byte) in a summary dirent record.
pub const SUM_DIRENT_NSIZE_AT: usize = 22;
/// Size of a summary record of an xattr node (`JFFS2_SUMMARY_XATTR_SIZE`).
pub const SUM_XATTR_SIZE: usize = 18;
/// Size of a summary record of an xref node (`JFFS2_SUMMARY_XREF_SIZE`).
pub const SUM_XREF_SIZE: usize = 6;
/// The root directory's inode number; it has no inode node of its own.
pub const ROOT_INO: u32 = 1;
/// Default (and on plain NOR the only accepted) cleanmarker size.
pub const CLEANMARKER_SIZE: u32 = 12;

/// Byte offsets of the common node header's fields (`docs/spec/kernel-jffs2-spec.md` §1.2), for
/// readers that look at one field of a header without decoding it whole ([`NodeHeader`]
/// decodes all of them).
pub mod hdr {
    /// `magic` (u16).
    pub const MAGIC: usize = 0;
    /// `nodetype` (u16).
    pub const NODETYPE: usize = 2;
    /// `totlen` (u32).
    pub const TOTLEN: usize = 4;
    /// `hdr_crc` (u32), the CRC of the 8 bytes before it.
    pub const HDR_CRC: usize = 8;
}

/// Byte offsets in the summary marker, the last [`SUMMARY_MARKER_SIZE`]
/// bytes of a summarised erase block (`docs/spec/kernel-jffs2-spec.md` §1.7).
pub mod marker {
    /// The summary node's offset in its block (u32).
    pub const OFFSET: usize = 0;
    /// [`SUM_MAGIC`](super::SUM_MAGIC) (u32).
    pub const MAGIC: usize = 4;
}

/// Byte offsets of the fields of summary records (`struct jffs2_sum_*_flash`,
/// `docs/spec/kernel-jffs2-spec.md` §1.7), for readers that walk records in place
/// ([`SumRecord`] decodes them whole). Every record starts with its 16-bit node type.
pub mod sumrec {
    /// Inode and xattr records: the inode number (xid for an xattr).
    pub const ID: usize = 2;
    /// Inode and xattr records: `version`.
    pub const VERSION: usize = 6;
    /// Inode and xattr records: `offset` of the node in its block.
    pub const OFFSET: usize = 10;
    /// Inode and xattr records: `totlen`.
    pub const TOTLEN: usize = 14;
    /// Dirent record: `totlen`.
    pub const DIRENT_TOTLEN: usize = 2;
    /// Dirent record: `offset`.
    pub const DIRENT_OFFSET: usize = 6;
    /// Dirent record: `pino`.
    pub const DIRENT_PINO: usize = 10;
    /// Dirent record: `version`.
    pub const DIRENT_VERSION: usize = 14;
    /// Dirent record: `ino`.
    pub const DIRENT_INO: usize = 18;
    /// Dirent record: `type` (one byte; `nsize` is the byte before it).
    pub const DIRENT_TYPE: usize = 23;
    /// Xref record: `offset`.
    pub const XREF_OFFSET: usize = 2;
}

/// xattr name prefix ids (`jffs2.h` `JFFS2_XPREFIX_*`).
pub mod xprefix {
    /// `user.`
    pub const USER: u8 = 1;
    /// `security.`
    pub const SECURITY: u8 = 2;
    /// `system.posix_acl_access`
    pub const ACL_ACCESS: u8 = 3;
    /// `system.posix_acl_default`
    pub const ACL_DEFAULT: u8 = 4;
    /// `trusted.`
    pub const TRUSTED: u8 = 5;
}

/// Directory entry types as stored in a dirent (`DT_*` = `(st_mode & S_IFMT) >> 12`).
pub mod dt {
    /// Unknown.
    pub const UNKNOWN: u8 = 0;
    /// FIFO.
    pub const FIFO: u8 = 1;
    /// Character device.
    pub const CHR: u8 = 2;
    /// Directory.
    pub const DIR: u8 = 4;
    /// Block device.
    pub const BLK: u8 = 6;
    /// Regular file.
    pub const REG: u8 = 8;
    /// Symbolic link.
    pub const LNK: u8 = 10;
    /// Socket.
    pub const SOCK: u8 = 12;
}

/// The file-type bits of a Linux `st_mode` (`S_IFMT`); the inode's `mode` field holds them.
pub const S_IFMT: u32 = 0o170000;
/// File type: socket.
pub const S_IFSOCK: u32 = 0o140000;
/// File type: symbolic link.
pub const S_IFLNK: u32 = 0o120000;
/// File type: regular file.
pub const S_IFREG: u32 = 0o100000;
/// File type: block device.
pub const S_IFBLK: u32 = 0o060000;
/// File type: directory.
pub const S_IFDIR: u32 = 0o040000;
/// File type: character device.
pub const S_IFCHR: u32 = 0o020000;
/// File type: FIFO.
pub const S_IFIFO: u32 = 0o010000;

/// `PAD(x)`: rounds up to the next multiple of 4.
#[inline]
pub const fn pad4(x: u32) -> u32 {
    x.wrapping_add(3) & !3
}

/// `PAD(x)` without overflow (a crafted `totlen` may be near `u32::MAX`).
#[inline]
pub const fn pad4_64(x: u32) -> u64 {
    ((x as u64) + 3) & !3
}

/// The dirent type of a Linux `st_mode`.
#[inline]
pub const fn mode_to_dt(mode: u32) -> u8 {
    ((mode & S_IFMT) >> 12) as u8
}

/// An error found while decoding on-flash data; every variant carries the byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The bytes end before the structure does.
    #[error("truncated {what} at 0x{offset:08x}: need {need} bytes, {have} available")]
    Truncated {
        /// What was being decoded.
        what: &'static str,
        /// Byte offset of the structure.
        offset: u64,
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// The magic is not 0x1985.
    #[error("wrong magic at 0x{offset:08x}: 0x{found:04x}")]
    BadMagic {
        /// Byte offset.
        offset: u64,
        /// The value found.
        found: u16,
    },
    /// A node's type is not the one the decoder was asked for.
    #[error("node at 0x{offset:08x} has type 0x{found:04x}, expected 0x{expected:04x}")]
    WrongType {
        /// Byte offset.
        offset: u64,
        /// Type found.
        found: u16,
        /// Type expected.
        expected: u16,
    },
    /// `totlen` is impossible for this node type.
    #[error("node at 0x{offset:08x} has impossible totlen 0x{totlen:08x}")]
    BadTotlen {
        /// Byte offset.
        offset: u64,
        /// The stored totlen.
        totlen: u32,
    },
}
