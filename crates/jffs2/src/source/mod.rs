//! The host-tree source for mkfs: scanning a directory on the host into an in-memory tree,
//! applying a device table to it, and reading the extended attributes of its entries
//! (`docs/spec/mtd-utils-spec.md` §3.2–§3.4, §3.5.7).
//!
//! The tree produced here is exactly the tree mkfs.jffs2 builds before it writes anything:
//! same entries, same child order, same (squashed / device-table-overridden) metadata, same
//! timestamps. The image writer walks it in mkfs' write order (§3.5.2).
//!
//! # Fakeroot and pseudo
//!
//! Build systems run mkfs under an `LD_PRELOAD` fakeroot (fakeroot, pseudo) that fakes
//! ownership, modes and device nodes by wrapping libc functions (`docs/spec/ecosystem.md` §4). All
//! metadata is therefore obtained through libc's `lstat`, `llistxattr` and `lgetxattr`,
//! never through raw system calls nor `std::fs::symlink_metadata` (which uses `statx`, a
//! function older fakeroot versions and pseudo do not wrap; a raw system call bypasses all
//! of them). Directory listings (`opendir`/`readdir`) and `readlink` are not faked by those
//! tools, so the standard library is used for them. `tests/source_fakeroot.rs` checks this
//! under fakeroot.
//!
//! # Typical use
//!
//! A host directory and a device table (`mkfs.jffs2 -r ROOT -D TABLE -f -U`):
//!
//! ```
//! use jffs2::source::{apply_device_table, scan_host, SourceOptions};
//! use std::path::Path;
//!
//! let root = tempfile::tempdir()?;
//! for name in ["b", "a", "B", "_x"] {
//!     std::fs::write(root.path().join(name), name)?;
//! }
//! std::fs::create_dir(root.path().join("dev"))?;
//!
//! let opts = SourceOptions { faketime: true, squash_uids: true, ..SourceOptions::default() };
//! let (mut tree, warnings) = scan_host(root.path(), &opts)?;
//! assert!(warnings.is_empty());
//! // Children in strcmp order (mkfs.jffs2's), whatever the locale or the directory order.
//! let names: Vec<&[u8]> =
//!     tree.root().children.iter().map(|&id| tree.entries[id].name.as_slice()).collect();
//! assert_eq!(names, [&b"B"[..], b"_x", b"a", b"b", b"dev"]);
//!
//! // A device table adds /dev/console (crw------- 0:0 5,1); its time is 0 with `faketime`,
//! // `opts.now` otherwise. `-r` is passed exactly as given ("." when it was not given).
//! let table = b"/dev/console c 600 0 0 5 1 0 0 0\n";
//! let more = apply_device_table(&mut tree, table, Path::new("table.txt"), root.path(), &opts)?;
//! assert!(more.is_empty());
//! let console = &tree.entries[tree.find(b"/dev/console").unwrap()];
//! assert!(console.is_char_device());
//! assert_eq!((console.rdev_major, console.rdev_minor, console.mtime), (5, 1, 0));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod devtable;
mod scan;
mod sys;
mod xattr;

use std::fmt;
use std::path::PathBuf;

pub use devtable::{
    apply_device_table, read_device_table, MAX_RANGE_COUNT, MAX_TABLE_BYTES, MAX_TABLE_ENTRIES,
};
pub use scan::scan_host;
pub use xattr::acl_to_jffs2;

/// Which extended attributes mkfs copies into the image (`--with-xattr`, `--with-selinux`,
/// `--with-posix-acl`; `docs/spec/mtd-utils-spec.md` §3.1, §3.5.7). A small bit set keyed like
/// mkfs' `enable_xattr` mask (bit `1 << prefix`). Empty by default: no xattrs are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct XattrSelect(u32);

impl XattrSelect {
    /// No xattrs (the default).
    pub const NONE: Self = Self(0);
    /// `user.*` attributes.
    pub const USER: Self = Self(1 << SourceXattr::PREFIX_USER);
    /// `security.*` attributes (`--with-selinux`: all of them, not only `security.selinux`).
    pub const SECURITY: Self = Self(1 << SourceXattr::PREFIX_SECURITY);
    /// `system.posix_acl_access` and `system.posix_acl_default` (`--with-posix-acl`).
    pub const POSIX_ACL: Self =
        Self((1 << SourceXattr::PREFIX_ACL_ACCESS) | (1 << SourceXattr::PREFIX_ACL_DEFAULT));
    /// `trusted.*` attributes.
    pub const TRUSTED: Self = Self(1 << SourceXattr::PREFIX_TRUSTED);
    /// Everything mkfs supports (`--with-xattr`).
    pub const ALL: Self =
        Self(Self::USER.0 | Self::SECURITY.0 | Self::POSIX_ACL.0 | Self::TRUSTED.0);

    /// The raw mask (bit `1 << prefix` for each selected JFFS2 xattr prefix).
    pub const fn bits(self) -> u32 {
        self.0
    }

    /// Builds a selection from a raw mask, dropping bits that name no known prefix.
    pub const fn from_bits_truncate(bits: u32) -> Self {
        Self(bits & Self::ALL.0)
    }

    /// True if nothing is selected.
    pub const fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// True if every attribute class in `other` is selected.
    pub const fn contains(self, other: Self) -> bool {
        self.0 & other.0 == other.0
    }

    /// True if xattrs with the given JFFS2 prefix number (1..=5) are selected.
    pub const fn selects_prefix(self, prefix: u8) -> bool {
        prefix < 32 && self.0 & (1 << prefix) != 0
    }
}

impl std::ops::BitOr for XattrSelect {
    type Output = Self;
    fn bitor(self, rhs: Self) -> Self {
        Self(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for XattrSelect {
    fn bitor_assign(&mut self, rhs: Self) {
        self.0 |= rhs.0;
    }
}

/// Options that influence the scan and the device table (`docs/spec/mtd-utils-spec.md` §3.1).
#[derive(Clone, Debug, Default)]
pub struct SourceOptions {
    /// `-U`/`-q`: uid = gid = 0 for host-scanned entries (never for device-table entries).
    pub squash_uids: bool,
    /// `-P`/`-q`: clear S_IWGRP, S_IWOTH, S_ISUID and S_ISGID of host-scanned non-symlinks.
    pub squash_perms: bool,
    /// `-f`: every timestamp is 0 (device-table-created entries included).
    pub faketime: bool,
    /// Which xattrs to read (`--with-xattr` and friends).
    pub xattr: XattrSelect,
    /// `-v`: also report the xattr problems mkfs prints only in verbose mode.
    pub verbose: bool,
    /// `time(NULL)`, the timestamp of device-table-created entries whose host path does not
    /// exist. Injected so that callers and tests are deterministic.
    pub now: u32,
}

/// Index of an entry in [`SourceTree::entries`].
pub type EntryId = usize;

/// The metadata tree mkfs builds from the host directory and the device table.
#[derive(Clone, Debug, Default)]
pub struct SourceTree {
    /// All entries; `entries[0]` is the root (full name "/"). Other entries appear in scan
    /// order (depth first), device-table additions after all host entries.
    pub entries: Vec<SourceEntry>,
}

impl SourceTree {
    /// Id of the root entry.
    pub const ROOT: EntryId = 0;

    /// The root entry. Panics only on a `SourceTree` that was not built by this module and is empty.
    pub fn root(&self) -> &SourceEntry {
        &self.entries[Self::ROOT]
    }

    /// Looks an entry up by its full name with mkfs' own lookup (`find_filesystem_entry`,
    /// `docs/spec/mtd-utils-spec.md` §3.4): it descends only through entries whose mode is a
    /// directory and stops at the first child whose full name is a path prefix. This is what
    /// the device table uses; it is exposed for callers that want identical semantics.
    pub fn find(&self, full_name: &[u8]) -> Option<EntryId> {
        devtable::find_filesystem_entry(self, Self::ROOT, full_name)
    }
}

/// One file-system object: a host file or directory, or an entry created by the device table.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceEntry {
    /// Last path component as bytes ("" for the root). For device-table entries this is
    /// GNU `basename()` of the table name (everything after the last '/').
    pub name: Vec<u8>,
    /// Full target path: "/", "/etc", "/etc/passwd".
    pub full_name: Vec<u8>,
    /// Absolute path on the host, used to read file data and xattrs. For device-table
    /// entries this is where mkfs looks (see [`apply_device_table`]); it need not exist.
    pub host_path: PathBuf,
    /// Full `st_mode` including the S_IFMT type bits, after squash / device table.
    pub mode: u32,
    /// Owner after squash / device table; not truncated to 16 bits (the writer does that).
    pub uid: u32,
    /// Group after squash / device table; not truncated to 16 bits.
    pub gid: u32,
    /// Device major number (character and block devices; 0 otherwise).
    pub rdev_major: u32,
    /// Device minor number.
    pub rdev_minor: u32,
    /// `st_size` for regular files, `strlen(readlink())` for symlinks, 0 otherwise.
    pub size: u64,
    /// Host `st_mtime` truncated to 32 bits, `now` for device-table entries without a host
    /// file, 0 with faketime. mkfs uses it for atime, ctime, mtime and the dirent mctime.
    pub mtime: u32,
    /// `st_dev` of the host object (hard-link detection); 0 if there is none.
    pub dev: u64,
    /// `st_ino` of the host object; 0 if there is none.
    pub ino: u64,
    /// `st_nlink` of the host object; 0 for device-table entries without a host object,
    /// which therefore never match as hard links.
    pub nlink: u64,
    /// Target of a symlink (raw bytes).
    pub link_target: Option<Vec<u8>>,
    /// Children in mkfs order: host entries in C-locale byte order, then device-table
    /// additions in table order. Normally only directories have children; a device-table
    /// line can re-type a directory or hang an entry below a non-directory exactly as mkfs
    /// does, so writers must test [`SourceEntry::is_dir`] before descending, like mkfs.
    pub children: Vec<EntryId>,
    /// Parent entry (`None` for the root).
    pub parent: Option<EntryId>,
    /// Selected extended attributes in `llistxattr` order.
    pub xattrs: Vec<SourceXattr>,
}

impl SourceEntry {
    /// The S_IFMT type bits of [`SourceEntry::mode`].
    pub fn file_type_bits(&self) -> u32 {
        self.mode & libc::S_IFMT
    }
    /// Permission bits (mode without the type bits), as mkfs' `-v` listing prints them.
    pub fn permissions(&self) -> u32 {
        self.mode & !libc::S_IFMT
    }
    /// Directory?
    pub fn is_dir(&self) -> bool {
        self.file_type_bits() == libc::S_IFDIR
    }
    /// Regular file?
    pub fn is_file(&self) -> bool {
        self.file_type_bits() == libc::S_IFREG
    }
    /// Symbolic link?
    pub fn is_symlink(&self) -> bool {
        self.file_type_bits() == libc::S_IFLNK
    }
    /// Character device?
    pub fn is_char_device(&self) -> bool {
        self.file_type_bits() == libc::S_IFCHR
    }
    /// Block device?
    pub fn is_block_device(&self) -> bool {
        self.file_type_bits() == libc::S_IFBLK
    }
    /// FIFO?
    pub fn is_fifo(&self) -> bool {
        self.file_type_bits() == libc::S_IFIFO
    }
    /// Socket?
    pub fn is_socket(&self) -> bool {
        self.file_type_bits() == libc::S_IFSOCK
    }
}

/// One extended attribute as read from the host.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SourceXattr {
    /// JFFS2 prefix number: 1 user, 2 security, 3 ACL access, 4 ACL default, 5 trusted.
    pub prefix: u8,
    /// Name without the prefix ("" for the two POSIX ACLs).
    pub name: Vec<u8>,
    /// Raw host value. POSIX ACLs are still in the Linux xattr format; the writer converts
    /// them with [`acl_to_jffs2`].
    pub value: Vec<u8>,
}

impl SourceXattr {
    /// `JFFS2_XPREFIX_USER` ("user.").
    pub const PREFIX_USER: u8 = crate::format::xprefix::USER;
    /// `JFFS2_XPREFIX_SECURITY` ("security.").
    pub const PREFIX_SECURITY: u8 = crate::format::xprefix::SECURITY;
    /// `JFFS2_XPREFIX_ACL_ACCESS` ("system.posix_acl_access").
    pub const PREFIX_ACL_ACCESS: u8 = crate::format::xprefix::ACL_ACCESS;
    /// `JFFS2_XPREFIX_ACL_DEFAULT` ("system.posix_acl_default").
    pub const PREFIX_ACL_DEFAULT: u8 = crate::format::xprefix::ACL_DEFAULT;
    /// `JFFS2_XPREFIX_TRUSTED` ("trusted.").
    pub const PREFIX_TRUSTED: u8 = crate::format::xprefix::TRUSTED;

    /// True for the two POSIX ACL prefixes, whose value needs [`acl_to_jffs2`].
    pub fn is_posix_acl(&self) -> bool {
        self.prefix == Self::PREFIX_ACL_ACCESS || self.prefix == Self::PREFIX_ACL_DEFAULT
    }
}

/// How mtd-utils reports a [`SourceWarning`] (so a drop-in front end can print it the same way).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SourceWarningKind {
    /// mkfs prints it with `errmsg()`: stderr `"mkfs.jffs2: error!: <message>"`, and goes on.
    Error,
    /// mkfs prints it only with `-v`, to stdout as `"<message>\n"` (xattr read problems).
    Verbose,
    /// mkfs says nothing here; an addition of jffs2-tools (e.g. an ignored table line).
    Notice,
}

/// A non-fatal problem found while scanning or applying the device table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceWarning {
    /// The message, in mtd-utils' wording where mkfs has one
    /// (e.g. "skipping device_table entry '/x/y': no parent directory!").
    pub message: String,
    /// "table:line" for device-table warnings (not part of mtd-utils' wording).
    pub location: Option<String>,
    /// How mkfs reports it.
    pub kind: SourceWarningKind,
}

impl SourceWarning {
    pub(crate) fn error(message: String) -> Self {
        Self {
            message,
            location: None,
            kind: SourceWarningKind::Error,
        }
    }
    pub(crate) fn verbose(message: String) -> Self {
        Self {
            message,
            location: None,
            kind: SourceWarningKind::Verbose,
        }
    }
}

impl fmt::Display for SourceWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.location {
            Some(loc) => write!(f, "{loc}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Fatal errors of the scan, the device table and the ACL conversion.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    /// The root directory is missing, not a directory or not accessible (mkfs: `chdir` failed).
    #[error("{}: {source}", crate::text::path(path))]
    Root {
        /// The root as given.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `lstat` of a host path failed.
    #[error("{}: {source}", crate::text::path(path))]
    Lstat {
        /// The host path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A directory could not be listed (mkfs: "opening directory %s").
    #[error("opening directory {}: {source}", crate::text::path(path))]
    ReadDir {
        /// The host directory.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// `readlink` of a host symlink failed.
    #[error("{}: {source}", crate::text::path(path))]
    ReadLink {
        /// The host path.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The device table file could not be read.
    #[error("{}: {source}", crate::text::path(path))]
    DeviceTableIo {
        /// The table file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The device table is shorter than 10 bytes (mkfs' sanity check, §3.1 `-D`).
    #[error("{}: not a proper device table file", crate::text::path(path))]
    DeviceTableTooSmall {
        /// The table file.
        path: PathBuf,
    },
    /// A fatal device-table line; `message` is in mtd-utils' wording, the location is added.
    #[error("{}:{line}: {message}", crate::text::path(table))]
    DeviceTable {
        /// The table file.
        table: PathBuf,
        /// 1-based line number.
        line: usize,
        /// mtd-utils' message, e.g. "Unsupported file type 'x'".
        message: String,
    },
    /// A POSIX ACL entry with an unknown tag (mkfs prints this and exits 1).
    #[error("{tag:04x} : Unknown XATTR entry tag.")]
    AclUnknownTag {
        /// The tag.
        tag: u16,
    },
    /// A POSIX ACL value too short for even the header (mkfs prints this and exits 1).
    #[error(
        "Length of JFFS2 ACL expression({jffs2_len}) is longer than general one({value_len})."
    )]
    AclTooShort {
        /// Length of the converted value.
        jffs2_len: usize,
        /// Length of the host value.
        value_len: usize,
    },
    /// A POSIX ACL value whose length is not 4 + 8·n (mkfs would read past the value).
    #[error(
        "malformed POSIX ACL xattr value: {len} bytes is not a 4-byte header plus 8-byte entries"
    )]
    AclMalformed {
        /// Length of the host value.
        len: usize,
    },
}
