//! mkfs.jffs2's write order, decided before anything is written
//! (`docs/spec/mtd-utils-spec.md` §3.5.1, §3.5.2).
//!
//! For a directory: its own xattrs, then each child in list order (dirent + inode nodes +
//! xattrs, or only a dirent for a hard link), then a recursion into each child directory
//! that has children. Inode numbers are handed out in that order (root = 1); a hard link
//! is an entry whose (st_dev, st_ino) was already seen — directories included.

use std::collections::HashMap;

use crate::format::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};
use crate::source::{EntryId, SourceTree};

use super::MAX_FILE_SIZE;

/// One step of the write order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Start of a directory's recursion: listing line and the directory's xattrs.
    DirStart { dir: EntryId, ino: u32 },
    /// A child directory without children: only its listing line.
    DirEmpty { dir: EntryId },
    /// A second name of an inode already written: a dirent only.
    Hardlink { e: EntryId, ino: u32, pino: u32 },
    /// Directory, fifo or socket: dirent + one inode node without data.
    Pipe { e: EntryId, ino: u32, pino: u32 },
    /// Character or block device: dirent + inode node with the device number.
    Special { e: EntryId, ino: u32, pino: u32 },
    /// Symlink: dirent + inode node with the target.
    Symlink { e: EntryId, ino: u32, pino: u32 },
    /// Regular file: dirent + data nodes (its pages come from the reader thread).
    Regular { e: EntryId, ino: u32, pino: u32 },
    /// Regular file of 4 GiB or more: skipped with a message, no dirent.
    TooLarge { e: EntryId },
    /// An entry of a type mkfs.jffs2 cannot store (message only).
    Unknown { e: EntryId },
}

/// The whole write order.
pub(super) struct Plan {
    pub steps: Vec<Step>,
    /// Entries whose data the reader thread reads, in write order.
    pub files: Vec<EntryId>,
    /// The highest inode number handed out.
    pub last_ino: u32,
}

struct Planner<'a> {
    tree: &'a SourceTree,
    steps: Vec<Step>,
    files: Vec<EntryId>,
    ino: u32,
    inos: Vec<u32>,
    seen: HashMap<(u64, u64), EntryId>,
}

/// Plans the write order of `tree`; `first_ino` is the highest inode number already in use
/// (`-i`), or 0.
pub(super) fn make(tree: &SourceTree, first_ino: u32) -> Plan {
    let mut p = Planner {
        tree,
        steps: Vec::new(),
        files: Vec::new(),
        // create_target_filesystem: `if (ino == 0) ino = 1`; the root is always 1.
        ino: first_ino.max(1),
        inos: vec![0; tree.entries.len()],
        seen: HashMap::new(),
    };
    if !tree.entries.is_empty() {
        p.inos[0] = 1;
        p.dir(0);
    }
    Plan {
        steps: p.steps,
        files: p.files,
        last_ino: p.ino,
    }
}

impl Planner<'_> {
    fn dir(&mut self, dir: EntryId) {
        let tree = self.tree;
        let pino = self.inos[dir];
        self.steps.push(Step::DirStart { dir, ino: pino });
        for &e in &tree.entries[dir].children {
            let en = &tree.entries[e];
            // `st_nlink >= 1 && find_hardlink(e)`: the first entry seen with this
            // (dev, ino) is remembered; a later one reuses its inode number — unless that
            // number is 0 (the first was a skipped >4 GiB file), then it is written anew.
            if en.nlink >= 1 {
                match self.seen.get(&(en.dev, en.ino)) {
                    Some(&first) if self.inos[first] != 0 => {
                        let ino = self.inos[first];
                        self.inos[e] = ino;
                        self.steps.push(Step::Hardlink { e, ino, pino });
                        continue;
                    }
                    Some(_) => {}
                    None => {
                        self.seen.insert((en.dev, en.ino), e);
                    }
                }
            }
            let kind = en.mode & S_IFMT;
            if kind == S_IFREG && en.size >= MAX_FILE_SIZE {
                self.steps.push(Step::TooLarge { e });
                continue;
            }
            let step = match kind {
                S_IFDIR | S_IFSOCK | S_IFIFO => Step::Pipe { e, ino: 0, pino },
                S_IFCHR | S_IFBLK => Step::Special { e, ino: 0, pino },
                S_IFLNK => Step::Symlink { e, ino: 0, pino },
                S_IFREG => Step::Regular { e, ino: 0, pino },
                _ => {
                    self.steps.push(Step::Unknown { e });
                    continue;
                }
            };
            self.ino += 1;
            let ino = self.ino;
            self.inos[e] = ino;
            self.steps.push(match step {
                Step::Pipe { .. } => Step::Pipe { e, ino, pino },
                Step::Special { .. } => Step::Special { e, ino, pino },
                Step::Symlink { .. } => Step::Symlink { e, ino, pino },
                _ => {
                    self.files.push(e);
                    Step::Regular { e, ino, pino }
                }
            });
        }
        for &e in &tree.entries[dir].children {
            let en = &tree.entries[e];
            if en.mode & S_IFMT == S_IFDIR {
                if en.children.is_empty() {
                    self.steps.push(Step::DirEmpty { dir: e });
                } else {
                    self.dir(e);
                }
            }
        }
    }
}
