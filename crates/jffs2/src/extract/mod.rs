//! Files as Linux shows them: extraction into a host directory ([`extract()`]), listings
//! ([`list`]), path lookup and file contents ([`lookup`], [`stream`]), on top of the
//! filesystem model ([`crate::fs`]), which decides *what* Linux shows: latest versions,
//! deletions, renames, hard links, truncation, holes.
//!
//! # What an extraction creates
//!
//! [`Plan::build`] walks the tree from the root the way `find` walks a read-only mount, and
//! [`extract()`] recreates it below a directory:
//!
//! * directories, regular files (holes and all-zero data left as sparse regions: the file is
//!   sized first and only non-zero data is written), symbolic links (created, never followed),
//!   hard links (as hard links: every further name of an inode is `link(2)`ed to its first),
//!   FIFOs and sockets;
//! * character and block devices with `mknod(2)` when permitted (as root); otherwise they are
//!   listed in a device table in `mkfs.jffs2 -D` syntax written beside the directory
//!   ([`ExtractOptions::devtable`]);
//! * owners when [`ExtractOptions::owners`] (default: when running as root), permission bits
//!   (setuid, setgid and sticky included), access and modification times (a directory's after
//!   its children are written), extended attributes and POSIX ACLs where the host permits
//!   (otherwise skipped and counted in [`ExtractReport::xattrs_skipped`]);
//! * only on what it creates: a directory that was already there (merged into, or the
//!   destination itself) keeps its owner, mode, xattrs and times (the times put back after
//!   its subtree), so an image cannot choose who owns a host directory.
//!
//! # Safety against hostile images
//!
//! * A name that cannot be one file name on a host — empty, `.`, `..`, containing `/` or NUL,
//!   longer than 255 bytes — is refused ([`Refusal::BadName`]); for a directory, with
//!   everything below it.
//! * Everything is created relative to an open directory descriptor of its parent, which was
//!   itself opened with `O_NOFOLLOW | O_DIRECTORY` from the one above it, starting at the
//!   destination: a symbolic link is never followed, whatever the image names it, so nothing is
//!   ever written outside the destination. Files are created with `O_CREAT | O_EXCL |
//!   O_NOFOLLOW` and nothing that exists is replaced.
//! * A directory reached a second time (a cycle, or a directory with two parents) is created
//!   once, at its first path in walk order; further paths are refused
//!   ([`Refusal::DirReachedTwice`]).
//! * Sizes are never trusted for allocation: file data streams node by node (at most a few
//!   tens of MiB decompressed ahead, see [`StreamOptions`]), holes and ZERO nodes are never
//!   materialised, and a node's `dsize` is bounded by the kernel's own limit.
//! * Nodes that cannot be read (CRC errors, corrupt compressed data, lying `csize`/`dsize`)
//!   leave a hole where the kernel's `read()` would fail, and are reported
//!   ([`Refusal::Data`]).
//!
//! Every refusal is in [`ExtractReport::refused`]; callers should exit non-zero when it is not
//! empty.

mod list;
mod plan;
mod queue;
mod stream;
mod write;

#[cfg(test)]
mod tests;

use std::fmt;
use std::path::PathBuf;

pub use crate::fs::{lookup, LookupError};
pub use crate::mapped::{ImageMap, Trimmer};
pub use crate::text::format_time;
pub use list::{
    cat, escape, format_mode, list, reader_list, ListOptions, ReaderListError, ReaderListOptions,
    Unreadable,
};
pub use plan::{name_problem, Entry, EntryKind, FileData, Meta, Plan};
pub use stream::{stream, Bytes, Chunk, Reader, StreamOptions};
pub use write::{extract, ExtractError, ExtractOptions, ExtractReport, XattrSkip};

use crate::fs::{FsError, ReadError};

/// Something an extraction did not create, and why. Paths are relative to the destination
/// (and to the image's root).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refusal {
    /// A directory entry whose name cannot be a host file name.
    BadName {
        /// The directory holding it.
        dir: Vec<u8>,
        /// The name.
        name: Vec<u8>,
        /// The inode it names.
        ino: u32,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A directory reached again (a cycle or a second parent): created only at its first path.
    DirReachedTwice {
        /// The path not created.
        path: Vec<u8>,
        /// Where it was created.
        first_path: Vec<u8>,
        /// The directory's inode.
        ino: u32,
    },
    /// A path of `PATH_MAX` bytes or more (Linux cannot `stat` it).
    PathTooLong {
        /// The first `PATH_MAX` bytes.
        path: Vec<u8>,
        /// The inode.
        ino: u32,
    },
    /// An inode a directory names that cannot be read (`stat` fails on Linux).
    Unreadable {
        /// The path.
        path: Vec<u8>,
        /// The inode.
        ino: u32,
        /// Why.
        error: FsError,
        /// The same inode was already refused under another name.
        again: bool,
    },
    /// An inode whose mode has no file type Linux knows.
    UnknownType {
        /// The path.
        path: Vec<u8>,
        /// The inode.
        ino: u32,
        /// Its mode.
        mode: u32,
    },
    /// A symbolic link that cannot be created.
    BadSymlink {
        /// The path.
        path: Vec<u8>,
        /// The inode.
        ino: u32,
        /// Why.
        reason: &'static str,
    },
    /// Something already exists at the path (only with a non-empty destination).
    Exists {
        /// The path.
        path: Vec<u8>,
    },
    /// The host refused to create it.
    Create {
        /// The path.
        path: Vec<u8>,
        /// The operation (`mkdir`, `open`, `symlink`, `link`, `mknod`).
        op: &'static str,
        /// The host's error.
        error: String,
    },
    /// Parts of a regular file's data cannot be read; they are left as holes.
    Data {
        /// The path.
        path: Vec<u8>,
        /// Offset of the first unreadable byte.
        offset: u64,
        /// Unreadable bytes in the file.
        bytes: u64,
        /// The first error.
        error: ReadError,
    },
    /// A further name of an inode whose first name was not created.
    LinkTargetMissing {
        /// The path.
        path: Vec<u8>,
        /// The first name.
        first_path: Vec<u8>,
    },
    /// A device that could not be created and cannot be written to the device table
    /// (its path contains white space or control characters).
    NotInDeviceTable {
        /// The path.
        path: Vec<u8>,
    },
}

/// A path as text: `/`-separated, invalid UTF-8 and control characters escaped.
fn show(p: &[u8]) -> String {
    if p.is_empty() {
        ".".to_string()
    } else {
        escape(p, false)
    }
}

impl Refusal {
    /// The path the refusal is about.
    pub fn path(&self) -> Vec<u8> {
        match self {
            Refusal::BadName { dir, name, .. } => plan::join(dir, name),
            Refusal::DirReachedTwice { path, .. }
            | Refusal::PathTooLong { path, .. }
            | Refusal::Unreadable { path, .. }
            | Refusal::UnknownType { path, .. }
            | Refusal::BadSymlink { path, .. }
            | Refusal::Exists { path }
            | Refusal::Create { path, .. }
            | Refusal::Data { path, .. }
            | Refusal::LinkTargetMissing { path, .. }
            | Refusal::NotInDeviceTable { path } => path.clone(),
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::BadName {
                dir,
                name,
                ino,
                reason,
            } => write!(
                f,
                "{}: entry \"{}\" (inode #{ino}) refused: {reason}",
                show(dir),
                escape(name, true)
            ),
            Refusal::DirReachedTwice {
                path,
                first_path,
                ino,
            } => write!(
                f,
                "{}: directory #{ino} was already extracted as {} (a cycle or a second parent); not extracted again",
                show(path),
                show(first_path)
            ),
            Refusal::PathTooLong { path, ino } => write!(
                f,
                "{}…: path of inode #{ino} is longer than PATH_MAX; not extracted",
                show(&path[..path.len().min(80)])
            ),
            Refusal::Unreadable {
                path, ino, error, ..
            } => write!(f, "{}: inode #{ino} cannot be read: {error}", show(path)),
            Refusal::UnknownType { path, ino, mode } => write!(
                f,
                "{}: inode #{ino} has mode 0{mode:o}, which is no file type; not extracted",
                show(path)
            ),
            Refusal::BadSymlink { path, ino, reason } => write!(
                f,
                "{}: symbolic link #{ino} not created: {reason}",
                show(path)
            ),
            Refusal::Exists { path } => write!(
                f,
                "{}: already exists in the destination; left alone",
                show(path)
            ),
            Refusal::Create { path, op, error } => {
                write!(f, "{}: {op} failed: {error}", show(path))
            }
            Refusal::Data {
                path,
                offset,
                bytes,
                error,
            } => write!(
                f,
                "{}: {bytes} bytes from offset {offset} cannot be read ({error}); left as a hole",
                show(path)
            ),
            Refusal::LinkTargetMissing { path, first_path } => write!(
                f,
                "{}: hard link not created: its first name {} was not created",
                show(path),
                show(first_path)
            ),
            Refusal::NotInDeviceTable { path } => write!(
                f,
                "{}: device not created and its name cannot be written to a device table",
                show(path)
            ),
        }
    }
}

/// Where the device table for a destination goes by default: beside it, `DIR.devtable`.
pub fn default_devtable(dir: &std::path::Path) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let mut b = dir.as_os_str().as_bytes().to_vec();
    // A trailing slash would put it inside the directory.
    while b.len() > 1 && b.ends_with(b"/") {
        b.pop();
    }
    b.extend_from_slice(b".devtable");
    PathBuf::from(std::ffi::OsStr::from_bytes(&b))
}
