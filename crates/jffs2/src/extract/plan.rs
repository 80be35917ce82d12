//! What an extraction creates: the tree Linux shows, walked from the root in depth-first order
//! with every name checked, each directory once and each inode's data once.

use std::collections::{HashMap, HashSet};

use rayon::prelude::*;

use super::Refusal;
use crate::format::ROOT_INO;
use crate::fs::{DataNode, Frag, Fs, FsError, Inode, InodeKind, Xattr, PATH_MAX};
pub use crate::name::name_problem;

/// Metadata of an entry as `stat` shows it on a read-only mount.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Meta {
    /// Full `st_mode`.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Access time.
    pub atime: u32,
    /// Modification time.
    pub mtime: u32,
    /// Change time (cannot be restored on the host; listings show it).
    pub ctime: u32,
    /// Link count as Linux reports it.
    pub nlink: u32,
    /// Size as Linux reports it.
    pub size: u64,
}

impl Meta {
    fn of(inode: &Inode) -> Meta {
        Meta {
            mode: inode.mode,
            uid: inode.uid,
            gid: inode.gid,
            atime: inode.atime,
            mtime: inode.mtime,
            ctime: inode.ctime,
            nlink: inode.nlink,
            size: inode.size,
        }
    }
}

/// A regular file's data as the kernel reads it: its size and fragment tree (§6.3). Ranges
/// between fragments are holes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileData {
    /// Inode number.
    pub ino: u32,
    /// Size Linux reports.
    pub size: u64,
    /// The data nodes the fragments refer to.
    pub nodes: Vec<DataNode>,
    /// Fragments in offset order.
    pub frags: Vec<Frag>,
}

impl FileData {
    /// The data of a regular-file inode (empty for any other kind).
    pub fn of(inode: &Inode) -> FileData {
        FileData {
            ino: inode.ino,
            size: inode.size,
            nodes: inode.nodes.clone(),
            frags: inode.frags.clone(),
        }
    }

    fn take(inode: &mut Inode) -> FileData {
        FileData {
            ino: inode.ino,
            size: inode.size,
            nodes: std::mem::take(&mut inode.nodes),
            frags: std::mem::take(&mut inode.frags),
        }
    }
}

/// What an entry is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    /// A directory.
    Dir,
    /// A regular file (its first name). Boxed: the other kinds are a few bytes, and a tree of
    /// many names carries this enum in every entry.
    File(Box<FileData>),
    /// Another name of the non-directory inode first extracted as entry `first`.
    HardLink {
        /// Index of the first entry of the inode.
        first: usize,
    },
    /// A symbolic link; the target as `readlink` returns it (up to its first NUL, never
    /// empty).
    Symlink(Vec<u8>),
    /// A character device.
    Char(u32, u32),
    /// A block device.
    Block(u32, u32),
    /// A FIFO.
    Fifo,
    /// A socket.
    Socket,
}

/// One entry of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Name in its directory (empty for the root).
    pub name: crate::name::Name,
    /// Index of the parent entry (the root's parent is itself, 0).
    pub parent: usize,
    /// Depth: 0 for the root, 1 for its children, …
    pub depth: u32,
    /// Inode number.
    pub ino: u32,
    /// Metadata.
    pub meta: Meta,
    /// Extended attributes as `getxattr` returns them (on the first name of an inode only).
    pub xattrs: Vec<Xattr>,
    /// Type and content.
    pub kind: EntryKind,
}

/// The tree to extract: entries in depth-first order (a directory before its children, the
/// children of a directory by name), and what was refused on the way.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// Entries; `entries[0]` is the root.
    pub entries: Vec<Entry>,
    /// Names and inodes that are not extracted, and why.
    pub refused: Vec<Refusal>,
}

/// `dir/name`, or `name` for the root.
pub(crate) fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir.is_empty() || dir == b"." {
        name.to_vec()
    } else {
        let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
        p.extend_from_slice(dir);
        p.push(b'/');
        p.extend_from_slice(name);
        p
    }
}

impl Plan {
    /// Walks the tree from the root as a read-only mount shows it (see the module
    /// documentation of [`super`] for the rules). Inodes are read on all cores.
    ///
    /// Fails only when the root cannot be read (the mount would fail).
    pub fn build(fs: &Fs<'_>, with_xattrs: bool) -> Result<Plan, FsError> {
        let mut inodes = Inodes::read_all(fs);
        let mut root = inodes.take(1)?;
        if root.kind != InodeKind::Dir {
            return Err(FsError::NotADirectory(1));
        }
        let (mut walk, root_dents) = Walk::start(fs, with_xattrs, inodes, &mut root);
        walk.run(root_dents);
        Ok(walk.finish())
    }

    /// The path of entry `idx` relative to the root (empty for the root).
    pub fn path(&self, idx: usize) -> Vec<u8> {
        let mut names: Vec<&[u8]> = Vec::new();
        let mut i = idx;
        while i != 0 {
            let Some(e) = self.entries.get(i) else {
                break;
            };
            names.push(&e.name);
            i = e.parent;
        }
        let mut p = Vec::new();
        for n in names.iter().rev() {
            if !p.is_empty() {
                p.push(b'/');
            }
            p.extend_from_slice(n);
        }
        p
    }

    /// The names from the root to entry `idx` (empty for the root).
    pub fn components(&self, idx: usize) -> Vec<&[u8]> {
        let mut names: Vec<&[u8]> = Vec::new();
        let mut i = idx;
        while i != 0 {
            let Some(e) = self.entries.get(i) else {
                break;
            };
            names.push(&e.name);
            i = e.parent;
        }
        names.reverse();
        names
    }

    /// The regular files in entry order, with their entry indices.
    pub fn files(&self) -> Vec<(usize, &FileData)> {
        self.entries
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.kind {
                EntryKind::File(f) => Some((i, &**f)),
                _ => None,
            })
            .collect()
    }
}

/// The children of a directory, reversed so that popping yields them in name order.
fn rev(mut v: Vec<crate::fs::Dirent>) -> Vec<crate::fs::Dirent> {
    v.reverse();
    v
}

/// Every inode read in advance on all cores, each held until the walk takes it.
struct Inodes<'a, 'f> {
    fs: &'a Fs<'f>,
    /// The inode numbers, sorted.
    inos: Vec<u32>,
    /// What reading each of `inos` gave (parallel to it), until taken.
    read: Vec<Option<Result<Inode, FsError>>>,
}

impl<'a, 'f> Inodes<'a, 'f> {
    /// Reads every live inode and the root on all cores.
    fn read_all(fs: &'a Fs<'f>) -> Self {
        let mut inos: Vec<u32> = fs.live_inodes().collect();
        if !inos.contains(&ROOT_INO) {
            inos.push(ROOT_INO);
        }
        // A sorted vector, not a hash map: every inode is held here until the walk takes it,
        // and a map's slack and its parallel collection would cost as much again.
        inos.sort_unstable();
        let read: Vec<Option<Result<Inode, FsError>>> = inos
            .par_iter()
            .map(|&ino| Some(fs.read_inode(ino)))
            .collect();
        Inodes { fs, inos, read }
    }

    /// Inode `ino` as read in advance, or read now when it was not (or was taken before).
    fn take(&mut self, ino: u32) -> Result<Inode, FsError> {
        self.inos
            .binary_search(&ino)
            .ok()
            .and_then(|i| self.read.get_mut(i))
            .and_then(Option::take)
            .unwrap_or_else(|| self.fs.read_inode(ino))
    }
}

/// The depth-first walk that builds a [`Plan`]: the plan so far and what it has met.
struct Walk<'a, 'f> {
    fs: &'a Fs<'f>,
    with_xattrs: bool,
    inodes: Inodes<'a, 'f>,
    plan: Plan,
    /// Length of each entry's path (parallel to `plan.entries`).
    lens: Vec<usize>,
    dirs_seen: HashMap<u32, usize>,
    first_name: HashMap<u32, usize>,
    unreadable: HashSet<u32>,
}

impl<'a, 'f> Walk<'a, 'f> {
    /// A walk whose plan holds the root entry; also returns the root's children.
    fn start(
        fs: &'a Fs<'f>,
        with_xattrs: bool,
        inodes: Inodes<'a, 'f>,
        root: &mut Inode,
    ) -> (Self, Vec<crate::fs::Dirent>) {
        let mut plan = Plan::default();
        let root_xattrs = if with_xattrs {
            fs.xattrs(root).0
        } else {
            Vec::new()
        };
        let root_dents = std::mem::take(&mut root.dents);
        plan.entries.push(Entry {
            name: crate::name::Name::default(),
            parent: 0,
            depth: 0,
            ino: ROOT_INO,
            meta: Meta::of(root),
            xattrs: root_xattrs,
            kind: EntryKind::Dir,
        });
        let walk = Walk {
            fs,
            with_xattrs,
            inodes,
            plan,
            lens: vec![0],
            dirs_seen: HashMap::from([(1, 0)]),
            first_name: HashMap::new(),
            unreadable: HashSet::new(),
        };
        (walk, root_dents)
    }

    /// Visits every name below the root, depth first, each directory's children by name.
    fn run(&mut self, root_dents: Vec<crate::fs::Dirent>) {
        // Depth-first: a stack of (directory entry, its remaining children, reversed).
        let mut stack: Vec<(usize, Vec<crate::fs::Dirent>)> = vec![(0, rev(root_dents))];
        while let Some((dir, children)) = stack.last_mut() {
            let dir = *dir;
            let Some(d) = children.pop() else {
                stack.pop();
                continue;
            };
            if let Some(sub) = self.child(dir, d) {
                stack.push(sub);
            }
        }
    }

    /// `dir/name`, built only for what is refused.
    fn child_path(&self, dir: usize, name: &[u8]) -> Vec<u8> {
        join(&self.plan.path(dir), name)
    }

    /// Adds name `d` of directory entry `dir` to the plan, or refuses it. Returns the new
    /// entry and its children (reversed) when it is a directory to descend into.
    fn child(
        &mut self,
        dir: usize,
        d: crate::fs::Dirent,
    ) -> Option<(usize, Vec<crate::fs::Dirent>)> {
        let len = self.admit(dir, &d)?;
        let depth = self.plan.entries[dir].depth + 1;
        let parent = dir;

        // A further name of an inode already extracted.
        if let Some(&first) = self.first_name.get(&d.ino) {
            let meta = self.plan.entries[first].meta.clone();
            self.plan.entries.push(Entry {
                name: d.name,
                parent,
                depth,
                ino: d.ino,
                meta,
                xattrs: Vec::new(),
                kind: EntryKind::HardLink { first },
            });
            self.lens.push(len);
            return None;
        }
        if let Some(&first) = self.dirs_seen.get(&d.ino) {
            let first_path = self.plan.path(first);
            self.plan.refused.push(Refusal::DirReachedTwice {
                path: self.child_path(dir, &d.name),
                first_path,
                ino: d.ino,
            });
            return None;
        }
        let mut inode = self.read(dir, &d)?;
        let xattrs = if self.with_xattrs {
            self.fs.xattrs(&inode).0
        } else {
            Vec::new()
        };
        let meta = Meta::of(&inode);
        let kind = self.kind(dir, &d, &mut inode)?;
        let is_dir = kind == EntryKind::Dir;
        let dents = std::mem::take(&mut inode.dents);
        let idx = self.plan.entries.len();
        self.plan.entries.push(Entry {
            name: d.name,
            parent,
            depth,
            ino: d.ino,
            meta,
            xattrs,
            kind,
        });
        self.lens.push(len);
        if is_dir {
            self.dirs_seen.insert(d.ino, idx);
            Some((idx, rev(dents)))
        } else {
            self.first_name.insert(d.ino, idx);
            None
        }
    }

    /// Checks name `d` of entry `dir` and the length of its path; returns the length, or
    /// `None` once refused.
    fn admit(&mut self, dir: usize, d: &crate::fs::Dirent) -> Option<usize> {
        // Paths are built only for what is refused: building every entry's would cost
        // its depth each, quadratic in a deep chain (tests/linear_time.rs).
        if let Some(reason) = name_problem(&d.name) {
            self.plan.refused.push(Refusal::BadName {
                dir: self.plan.path(dir),
                name: d.name.to_vec(),
                ino: d.ino,
                reason,
            });
            return None;
        }
        let dir_len = self.lens.get(dir).copied().unwrap_or(0);
        let len = if dir_len == 0 {
            d.name.len()
        } else {
            dir_len + 1 + d.name.len()
        };
        if len >= PATH_MAX {
            let mut p = self.child_path(dir, &d.name);
            p.truncate(PATH_MAX);
            self.plan.refused.push(Refusal::PathTooLong {
                path: p,
                ino: d.ino,
            });
            return None;
        }
        Some(len)
    }

    /// The inode `d` names, or `None` once refused as unreadable (each time it is named).
    fn read(&mut self, dir: usize, d: &crate::fs::Dirent) -> Option<Inode> {
        match self.inodes.take(d.ino) {
            Ok(i) => Some(i),
            Err(error) => {
                let first = self.unreadable.insert(d.ino);
                self.plan.refused.push(Refusal::Unreadable {
                    path: self.child_path(dir, &d.name),
                    ino: d.ino,
                    error,
                    again: !first,
                });
                None
            }
        }
    }

    /// What the entry for `inode` (named `d` in `dir`) is, or `None` once refused (an empty
    /// symlink target, an unknown type).
    fn kind(&mut self, dir: usize, d: &crate::fs::Dirent, inode: &mut Inode) -> Option<EntryKind> {
        let kind = match inode.kind {
            InodeKind::Dir => EntryKind::Dir,
            InodeKind::File => EntryKind::File(Box::new(FileData::take(inode))),
            InodeKind::Symlink => {
                let t = inode.target.clone().unwrap_or_default();
                let t = match t.iter().position(|&b| b == 0) {
                    Some(n) => t[..n].to_vec(),
                    None => t,
                };
                if t.is_empty() {
                    self.plan.refused.push(Refusal::BadSymlink {
                        path: self.child_path(dir, &d.name),
                        ino: d.ino,
                        reason: "the target is empty",
                    });
                    return None;
                }
                EntryKind::Symlink(t)
            }
            InodeKind::Char | InodeKind::Block => {
                let (ma, mi) = inode.rdev.unwrap_or((0, 0));
                if inode.kind == InodeKind::Char {
                    EntryKind::Char(ma, mi)
                } else {
                    EntryKind::Block(ma, mi)
                }
            }
            InodeKind::Fifo => EntryKind::Fifo,
            InodeKind::Socket => EntryKind::Socket,
            InodeKind::Unknown => {
                self.plan.refused.push(Refusal::UnknownType {
                    path: self.child_path(dir, &d.name),
                    ino: d.ino,
                    mode: inode.mode,
                });
                return None;
            }
        };
        Some(kind)
    }

    /// The finished plan.
    fn finish(mut self) -> Plan {
        // The plan is kept while everything is written: without the slack of its growth
        // (up to as much again on a tree of many names).
        self.plan.entries.shrink_to_fit();
        self.plan.refused.shrink_to_fit();
        self.plan
    }
}
