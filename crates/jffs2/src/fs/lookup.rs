//! Path lookup in the model: a path resolved from the root the way a process chrooted into
//! the mount resolves it (the lookup of `jffs2-dump --cat` and [`crate::Image`]'s readers).

use std::collections::VecDeque;

use super::{Dirent, Fs, FsError, Inode, InodeKind};
use crate::format::ROOT_INO;
use crate::text::escape;

/// How many symbolic links a lookup follows (Linux's `MAXSYMLINKS`).
const MAX_SYMLINKS: u32 = 40;

/// Why a path cannot be resolved in the image.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LookupError {
    /// A component does not exist.
    #[error("{}: No such file or directory", escape(.0, false))]
    NotFound(Vec<u8>),
    /// A component that must be a directory is not one.
    #[error("{}: Not a directory", escape(.0, false))]
    NotADirectory(Vec<u8>),
    /// More than 40 symbolic links.
    #[error("{}: Too many levels of symbolic links", escape(.0, false))]
    Loop(Vec<u8>),
    /// An inode on the way cannot be read.
    #[error("{}: {}", escape(.0, false), .1)]
    Unreadable(Vec<u8>, FsError),
}

fn find<'d>(dents: &'d [Dirent], name: &[u8]) -> Option<&'d Dirent> {
    dents
        .binary_search_by(|d| d.name.as_bytes().cmp(name))
        .ok()
        .and_then(|i| dents.get(i))
        .or_else(|| dents.iter().find(|d| d.name == name))
}

/// Resolves `path` inside the image from its root, as a process chrooted into the mount
/// would: empty components and `.` are skipped, `..` goes up (not above the root), symbolic
/// links on the way are followed — absolute targets from the image's root — and the last
/// component too when `follow`. At most 40 links.
pub fn lookup(fs: &Fs<'_>, path: &[u8], follow: bool) -> Result<Inode, LookupError> {
    let unreadable = |p: &[u8], e| LookupError::Unreadable(p.to_vec(), e);
    let root = fs.read_inode(ROOT_INO).map_err(|e| unreadable(b"/", e))?;
    let mut stack: Vec<Inode> = vec![root];
    let mut queue: VecDeque<Vec<u8>> = path.split(|&b| b == b'/').map(<[u8]>::to_vec).collect();
    let mut links = 0u32;
    let mut last: Option<Inode> = None;
    while let Some(c) = queue.pop_front() {
        if c.is_empty() || c == b"." {
            continue;
        }
        if c == b".." {
            if stack.len() > 1 {
                stack.pop();
            }
            last = None;
            continue;
        }
        let dir = stack
            .last()
            .ok_or_else(|| LookupError::NotFound(path.to_vec()))?;
        if dir.kind != InodeKind::Dir {
            return Err(LookupError::NotADirectory(path.to_vec()));
        }
        let d = find(&dir.dents, &c).ok_or_else(|| LookupError::NotFound(path.to_vec()))?;
        let child = fs.read_inode(d.ino).map_err(|e| unreadable(path, e))?;
        let more = queue.iter().any(|c| !c.is_empty());
        if child.kind == InodeKind::Symlink && (more || follow) {
            links += 1;
            if links > MAX_SYMLINKS {
                return Err(LookupError::Loop(path.to_vec()));
            }
            let target = child.target.clone().unwrap_or_default();
            if target.first() == Some(&b'/') {
                stack.truncate(1);
            }
            for t in target.split(|&b| b == b'/').rev() {
                queue.push_front(t.to_vec());
            }
            last = None;
            continue;
        }
        if child.kind == InodeKind::Dir {
            stack.push(child);
            last = None;
        } else if more {
            return Err(LookupError::NotADirectory(path.to_vec()));
        } else {
            last = Some(child);
        }
    }
    match last {
        Some(i) => Ok(i),
        None => stack
            .pop()
            .ok_or_else(|| LookupError::NotFound(path.to_vec())),
    }
}
