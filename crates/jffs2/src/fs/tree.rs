//! The tree view: what `find . -exec stat …`, `md5sum`, `readlink` and `getfattr` show on a
//! read-only mount (the listings of `tests/kernel/harness.py`), plus the walk-time checks of
//! fsck: paths, directories reached twice, unreachable inodes and link counts.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::readinode::{Inode, InodeKind};
use super::{Fs, FsError, Md5, Problem, Xattr};
use crate::format::ROOT_INO;

/// `PATH_MAX`: a longer path cannot be `stat`ed, so the walk does not go deeper.
pub const PATH_MAX: usize = 4096;

/// What the walk computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeOptions {
    /// MD5 of every regular file (reads and decompresses all live data).
    pub content: bool,
    /// Extended attributes.
    pub xattrs: bool,
    /// Also read the inodes not reachable from the root, to report their problems.
    pub unreachable: bool,
}

impl Default for TreeOptions {
    fn default() -> Self {
        TreeOptions::listing()
    }
}

impl TreeOptions {
    /// Everything a kernel listing shows.
    pub fn listing() -> Self {
        TreeOptions {
            content: true,
            xattrs: true,
            unreachable: false,
        }
    }

    /// Everything fsck checks.
    pub fn check() -> Self {
        TreeOptions {
            content: true,
            xattrs: true,
            unreachable: true,
        }
    }

    /// Metadata only (fast).
    pub fn metadata() -> Self {
        TreeOptions {
            content: false,
            xattrs: false,
            unreachable: false,
        }
    }
}

/// One path of the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeEntry {
    /// Path relative to the root, `.` for the root.
    pub path: Vec<u8>,
    /// Inode number.
    pub ino: u32,
    /// Type.
    pub kind: InodeKind,
    /// Full mode.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size as `stat` shows it.
    pub size: u64,
    /// Link count as `stat` shows it.
    pub nlink: u32,
    /// Modification time.
    pub mtime: u32,
    /// Device numbers (character and block devices).
    pub rdev: Option<(u32, u32)>,
    /// Symlink target.
    pub target: Option<Vec<u8>>,
    /// MD5 of a regular file's content, or why it cannot be read (`None` when not asked).
    pub md5: Option<Result<[u8; 16], FsError>>,
    /// Extended attributes, by name.
    pub xattrs: Vec<Xattr>,
}

/// The tree as Linux shows it, with what the walk found.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    /// Entries sorted by path.
    pub entries: Vec<TreeEntry>,
    /// Problems found reading the inodes and walking the tree (paths attached).
    pub problems: Vec<Problem>,
}

/// One entry in the form of the kernel harness listings (`tests/kernel/harness.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingEntry {
    /// Path (`.` for the root), as bytes.
    pub path: Vec<u8>,
    /// `file`, `dir`, `symlink`, `fifo`, `char`, `block`, `socket`.
    pub kind: String,
    /// Permission bits with setuid/setgid/sticky, `%04o`.
    pub mode: String,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// Size.
    pub size: u64,
    /// Link count.
    pub nlink: u32,
    /// Modification time.
    pub mtime: u32,
    /// MD5 (regular files whose content could be read).
    pub md5: Option<String>,
    /// Symlink target.
    pub target: Option<Vec<u8>>,
    /// `major:minor`.
    pub rdev: Option<String>,
    /// All paths of a hard-linked non-directory, when there are several.
    pub links: Option<Vec<Vec<u8>>>,
    /// Name → hex value, or `ERROR` where `getxattr` fails.
    pub xattrs: BTreeMap<String, String>,
}

impl Tree {
    /// The entry of a path.
    pub fn get(&self, path: &[u8]) -> Option<&TreeEntry> {
        self.entries
            .binary_search_by(|e| e.path.as_slice().cmp(path))
            .ok()
            .map(|i| &self.entries[i])
    }

    /// The listing in the kernel harness's form (hard-link groups from inode numbers).
    pub fn listing(&self) -> Vec<ListingEntry> {
        let mut groups: HashMap<u32, Vec<Vec<u8>>> = HashMap::new();
        for e in &self.entries {
            if e.kind != InodeKind::Dir {
                groups.entry(e.ino).or_default().push(e.path.clone());
            }
        }
        self.entries
            .iter()
            .map(|e| {
                let links = if e.kind == InodeKind::Dir {
                    None
                } else {
                    groups.get(&e.ino).filter(|g| g.len() > 1).map(|g| {
                        let mut g = g.clone();
                        g.sort();
                        g
                    })
                };
                ListingEntry {
                    path: e.path.clone(),
                    kind: e.kind.listing_name().to_string(),
                    mode: format!("{:04o}", e.mode & 0o7777),
                    uid: e.uid,
                    gid: e.gid,
                    size: e.size,
                    nlink: e.nlink,
                    mtime: e.mtime,
                    md5: match &e.md5 {
                        Some(Ok(d)) => Some(Md5::hex(d)),
                        _ => None,
                    },
                    target: e.target.clone(),
                    rdev: e.rdev.map(|(ma, mi)| format!("{ma}:{mi}")),
                    links,
                    xattrs: e
                        .xattrs
                        .iter()
                        .map(|x| {
                            (
                                String::from_utf8_lossy(&x.name).into_owned(),
                                match &x.value {
                                    Ok(v) => v.iter().map(|b| format!("{b:02x}")).collect(),
                                    Err(_) => "ERROR".to_string(),
                                },
                            )
                        })
                        .collect(),
                }
            })
            .collect()
    }
}

/// Attaches a path to a problem that can carry one.
fn with_path(p: Problem, path: &[u8]) -> Problem {
    match p {
        Problem::SizeBeyondData {
            ino,
            isize,
            size,
            path: None,
        } => Problem::SizeBeyondData {
            ino,
            path: Some(path.to_vec()),
            isize,
            size,
        },
        other => other,
    }
}

fn rev(mut v: Vec<super::Dirent>) -> Vec<super::Dirent> {
    v.reverse();
    v
}

fn join(dir: &[u8], name: &[u8]) -> Vec<u8> {
    if dir == b"." {
        name.to_vec()
    } else {
        let mut p = Vec::with_capacity(dir.len() + 1 + name.len());
        p.extend_from_slice(dir);
        p.push(b'/');
        p.extend_from_slice(name);
        p
    }
}

/// Where the walk first reached a directory: its parent and its name there, and whether that
/// was below `PATH_MAX` (then its path is `…/name`).
struct Reached {
    parent: u32,
    deep: bool,
    name: crate::name::Name,
}

/// The path at which the walk first reached directory `ino`, as it was listed.
fn first_path(dirs: &HashMap<u32, Reached>, ino: u32) -> Vec<u8> {
    // Up to the root or the first step below PATH_MAX; each parent was reached before its
    // child, so the chain ends.
    let mut names: Vec<&[u8]> = Vec::new();
    let mut at = ino;
    let mut path = b".".to_vec();
    while at != 1 {
        let Some(r) = dirs.get(&at) else {
            break;
        };
        if r.deep {
            path = "…/".as_bytes().to_vec();
            path.extend_from_slice(&r.name);
            break;
        }
        names.push(&r.name);
        at = r.parent;
    }
    for name in names.iter().rev() {
        path = join(&path, name);
    }
    path
}

struct Walk<'f, 'a, 'o> {
    fs: &'f Fs<'a>,
    opts: TreeOptions,
    /// Reads an inode ([`Fs::read_inode`], or what a caller remembers of it).
    read: &'o dyn Fn(u32) -> Result<Inode, FsError>,
    /// Takes each entry as it is met.
    on_entry: &'o mut dyn FnMut(TreeEntry),
    problems: Vec<Problem>,
    /// Inodes whose read problems were recorded.
    reported: HashSet<u32>,
    /// Inodes reached.
    seen: HashSet<u32>,
    /// Inodes whose xattr problems were recorded.
    xreported: HashSet<u32>,
    md5s: HashMap<u32, Result<[u8; 16], FsError>>,
    /// Per non-directory inode: names found, first path, `nlink` shown.
    names: HashMap<u32, (u32, Vec<u8>, u32)>,
}

/// A directory on the walk's stack.
struct Frame {
    /// Its inode.
    ino: u32,
    /// Its path.
    path: Vec<u8>,
    /// Whether that path reached [`PATH_MAX`].
    deep: bool,
    /// Its remaining entries, reversed.
    rest: Vec<super::Dirent>,
}

/// The path of the entry `name` of the directory at `dpath`: below [`PATH_MAX`] (`deep`),
/// `…/name` (a full path would cost its depth for each).
fn child_path(dpath: &[u8], deep: bool, name: &[u8]) -> Vec<u8> {
    if deep {
        let mut p = "…/".as_bytes().to_vec();
        p.extend_from_slice(name);
        p
    } else {
        join(dpath, name)
    }
}

impl Walk<'_, '_, '_> {
    /// Visits the entry `d` of the directory `parent`: checks and hands on its inode,
    /// counts its name; returns the frame to descend into when it is a directory not
    /// reached before (`dirs`: directories reached, by inode, with where they were first).
    fn visit(
        &mut self,
        d: &super::Dirent,
        parent: &Frame,
        dirs: &mut HashMap<u32, Reached>,
    ) -> Option<Frame> {
        let (dpath, deep) = (&parent.path, parent.deep);
        // Below PATH_MAX the walk goes on: Linux reaches those inodes (lookups relative
        // to an open directory have no length limit), only absolute paths fail. They
        // are checked but not listed.
        let path = child_path(dpath, deep, &d.name);
        let deeper = deep || path.len() >= PATH_MAX;
        if deeper && !deep {
            let mut p = path.clone();
            p.truncate(PATH_MAX);
            self.problems.push(Problem::PathTooLong {
                ino: d.ino,
                path: p,
            });
        }
        let child = match (self.read)(d.ino) {
            Ok(c) => c,
            Err(error) => {
                if self.reported.insert(d.ino) {
                    self.problems.push(Problem::InodeUnreadable {
                        ino: d.ino,
                        path: Some(path),
                        error,
                    });
                }
                return None;
            }
        };
        if child.kind != InodeKind::Dir {
            let n = self
                .names
                .entry(d.ino)
                .or_insert((0, path.clone(), child.nlink));
            n.0 += 1;
        }
        let e = self.entry(&child, path.clone());
        if !deeper {
            (self.on_entry)(e);
        }
        if child.kind != InodeKind::Dir {
            return None;
        }
        if d.ino == 1 || dirs.contains_key(&d.ino) {
            self.problems.push(Problem::DirReachedTwice {
                ino: d.ino,
                path,
                first_path: first_path(dirs, d.ino),
            });
            None
        } else {
            dirs.insert(
                d.ino,
                Reached {
                    parent: parent.ino,
                    deep,
                    name: d.name.clone(),
                },
            );
            Some(Frame {
                ino: d.ino,
                path,
                deep: deeper,
                rest: rev(child.dents),
            })
        }
    }

    /// Link counts of non-directories against the names found.
    fn check_link_counts(&mut self) {
        let mut counted: Vec<(u32, u32, Vec<u8>, u32)> = self
            .names
            .iter()
            .map(|(&ino, (n, p, nlink))| (ino, *n, p.clone(), *nlink))
            .collect();
        counted.sort();
        for (ino, found, path, nlink) in counted {
            if nlink != found {
                self.problems.push(Problem::NlinkMismatch {
                    ino,
                    path,
                    nlink,
                    found,
                });
            }
        }
    }

    /// Inodes with links that the walk never reached, read for their problems when
    /// [`TreeOptions::unreachable`] asks.
    fn check_unreached(&mut self) {
        let fs = self.fs;
        let unreached: Vec<u32> = fs
            .live_inodes()
            .filter(|i| !self.seen.contains(i) && !self.reported.contains(i))
            .collect();
        for ino in unreached {
            self.problems.push(Problem::Unreachable { ino });
            if !self.opts.unreachable {
                continue;
            }
            match (self.read)(ino) {
                Ok(inode) => {
                    self.problems.extend(inode.problems.iter().cloned());
                    if self.opts.content && inode.kind == InodeKind::File {
                        if let Err(FsError::Read { ino, error }) = fs.md5(&inode) {
                            self.problems.push(Problem::Unreadable {
                                ino,
                                path: None,
                                error,
                            });
                        }
                    }
                }
                Err(error) => self.problems.push(Problem::InodeUnreadable {
                    ino,
                    path: None,
                    error,
                }),
            }
        }
    }

    fn entry(&mut self, inode: &Inode, path: Vec<u8>) -> TreeEntry {
        self.seen.insert(inode.ino);
        if self.reported.insert(inode.ino) {
            for p in &inode.problems {
                self.problems.push(with_path(p.clone(), &path));
            }
        }
        let md5 = if self.opts.content && inode.kind == InodeKind::File {
            let r = match self.md5s.get(&inode.ino) {
                Some(r) => r.clone(),
                None => {
                    let r = self.fs.md5(inode);
                    if let Err(FsError::Read { ino, error }) = &r {
                        self.problems.push(Problem::Unreadable {
                            ino: *ino,
                            path: Some(path.clone()),
                            error: error.clone(),
                        });
                    }
                    self.md5s.insert(inode.ino, r.clone());
                    r
                }
            };
            Some(r)
        } else {
            None
        };
        let xattrs = if self.opts.xattrs {
            let (x, probs) = self.fs.xattrs(inode);
            if self.xreported.insert(inode.ino) {
                self.problems.extend(probs);
            }
            x
        } else {
            Vec::new()
        };
        TreeEntry {
            path,
            ino: inode.ino,
            kind: inode.kind,
            mode: inode.mode,
            uid: inode.uid,
            gid: inode.gid,
            size: inode.size,
            nlink: inode.nlink,
            mtime: inode.mtime,
            rdev: inode.rdev,
            target: inode.target.clone(),
            md5,
            xattrs,
        }
    }
}

impl Fs<'_> {
    /// Walks the tree from the root as `find` does on a read-only mount: every entry a
    /// directory lists (`ino != 0`) whose inode can be read (an unreadable one is listed by
    /// `readdir` but `stat` fails: [`Problem::InodeUnreadable`], no entry). A directory
    /// reached a second time (a cycle or a hard-linked directory) is listed but not
    /// descended again (the walk is the readers': depth first, entries in directory order).
    /// Below a path of [`PATH_MAX`] bytes the walk goes on (Linux reaches those inodes by
    /// relative lookups) but lists nothing: one [`Problem::PathTooLong`] names the
    /// subtree, its inodes are checked and reached. If the root cannot
    /// be read the mount fails: no entries and one problem.
    pub fn tree(&self, opts: &TreeOptions) -> Tree {
        let mut entries = Vec::new();
        let problems = self.walk_tree(opts, &mut |e| entries.push(e));
        entries.sort_by(|a: &TreeEntry, b: &TreeEntry| a.path.cmp(&b.path));
        Tree { entries, problems }
    }

    /// The walk of [`Fs::tree`], handing each entry to `on_entry` as it is met (in walk
    /// order) instead of keeping them all; returns the problems.
    pub(crate) fn walk_tree(
        &self,
        opts: &TreeOptions,
        on_entry: &mut dyn FnMut(TreeEntry),
    ) -> Vec<Problem> {
        self.walk_tree_reading(opts, &|ino| self.read_inode(ino), on_entry)
    }

    /// [`Fs::walk_tree`] with the inodes read by `read`, which must give what
    /// [`Fs::read_inode`] gives: a caller that has read the inodes already (fsck) hands
    /// back what it kept of them. Of a regular file the walk uses the metadata, the
    /// problems and, with [`TreeOptions::content`] only, the fragments.
    pub(crate) fn walk_tree_reading(
        &self,
        opts: &TreeOptions,
        read: &dyn Fn(u32) -> Result<Inode, FsError>,
        on_entry: &mut dyn FnMut(TreeEntry),
    ) -> Vec<Problem> {
        let mut w = Walk {
            fs: self,
            opts: *opts,
            read,
            on_entry,
            problems: Vec::new(),
            reported: HashSet::new(),
            seen: HashSet::new(),
            xreported: HashSet::new(),
            md5s: HashMap::new(),
            names: HashMap::new(),
        };
        let mut root = match read(ROOT_INO) {
            Ok(r) => r,
            Err(error) => {
                w.problems.push(Problem::InodeUnreadable {
                    ino: ROOT_INO,
                    path: Some(b".".to_vec()),
                    error,
                });
                return w.problems;
            }
        };
        let e = w.entry(&root, b".".to_vec());
        (w.on_entry)(e);
        // Where each directory was first reached; its path is rebuilt from these only when
        // it is reached again (a full path for each would cost its depth each).
        let mut dirs: HashMap<u32, Reached> = HashMap::new();
        // Depth first, each directory's entries in order: the readers' walk (`jffs2-dump
        // --list`, `--extract`), so that a directory reached twice is first reached where
        // they show it.
        let mut stack: Vec<Frame> = vec![Frame {
            ino: 1,
            path: b".".to_vec(),
            deep: false,
            rest: Vec::new(),
        }];
        if root.kind == InodeKind::Dir {
            // Taken, not copied: two copies of a huge root are not kept.
            stack[0].rest = rev(std::mem::take(&mut root.dents));
        }
        drop(root);
        while let Some(top) = stack.last_mut() {
            let Some(d) = top.rest.pop() else {
                stack.pop();
                continue;
            };
            let next = if top.rest.is_empty() {
                // Its last entry: the frame goes now, so that a chain of 100 000
                // directories is not 100 000 frames.
                let Some(top) = stack.pop() else {
                    break;
                };
                w.visit(&d, &top, &mut dirs)
            } else {
                w.visit(&d, top, &mut dirs)
            };
            if let Some(frame) = next {
                stack.push(frame);
            }
        }
        w.check_link_counts();
        w.check_unreached();
        w.problems
    }
}
