//! The files Linux shows, served by inode number for a read-only mount (`jffs2-mount`): a
//! [`View`] over the filesystem model ([`Fs`]) answers what a FUSE front end asks —
//! attributes, lookups, directory listings, link targets, file data, extended attributes and
//! `statfs` — the way Linux answers them for the same image. No FUSE here: the front end
//! (`src/cli/mount.rs`) only translates.
//!
//! Inodes read are kept in a small cache; file data is decompressed on read, only the nodes a
//! read touches (on all cores when a read needs many), and kept in a cache bounded by
//! [`ViewOptions::cache_bytes`]. The model's node reading ([`Fs::node_data`]) applies the
//! kernel's checks and limits, so a corrupt node reads as `EIO`, as Linux's `read()` fails.

mod cache;
#[cfg(test)]
mod tests;

use std::sync::{Arc, Mutex, MutexGuard};

use rayon::prelude::*;

use crate::format::dt;
use crate::fs::{DataNode, Fs, FsError, Inode, InodeKind, NodeData, ReadError, PAGE_SIZE};
use crate::scan::nodelist::full_name_hash;
use cache::Lru;

/// The decompressed-data cache's default size.
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;
/// Memory the read-inode cache may hold (estimated from its vectors' lengths).
const INODE_CACHE_BYTES: usize = 16 << 20;
/// Memory the cache of directories' listing orders may hold (4 bytes an entry).
const ORDER_CACHE_BYTES: usize = 4 << 20;
/// Nodes a read must decompress from which it does so on all cores: a node holds at most a
/// page, and a read of fewer (the kernel's readahead asks for 128 KiB, 32 pages) is served
/// faster on its own thread, the kernel keeping several reads in flight on the serving
/// threads (waking the pool for a few pages cost more CPU than it saved).
const PAR_NODES: usize = 64;
/// `JFFS2_MAX_NAME_LEN`: the name length `statfs` reports.
pub const NAME_MAX: u32 = 254;

/// How a [`View`] serves the image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ViewOptions {
    /// Bytes of decompressed node data kept between reads (at least one node is kept).
    pub cache_bytes: usize,
}

impl Default for ViewOptions {
    fn default() -> Self {
        ViewOptions {
            cache_bytes: DEFAULT_CACHE_BYTES,
        }
    }
}

/// Why a request fails; [`ViewError::errno`] is what the system call returns.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// No entry of that name in the directory (`ENOENT`).
    #[error("no such entry")]
    NoEntry,
    /// The inode is not a directory (`ENOTDIR`).
    #[error("inode #{0} is not a directory")]
    NotADirectory(u32),
    /// The inode is a directory (`EISDIR`).
    #[error("inode #{0} is a directory")]
    IsADirectory(u32),
    /// The inode is not a symbolic link, or not a regular file for a read (`EINVAL`).
    #[error("inode #{0}: not supported on this type")]
    Invalid(u32),
    /// The inode cannot be read, or its data cannot (`EIO`, `ENOENT`, `ENAMETOOLONG` as Linux's
    /// `jffs2_iget` and `read()` fail).
    #[error(transparent)]
    Inode(#[from] FsError),
    /// No extended attribute of that name (`ENODATA`).
    #[error("no such attribute")]
    NoAttribute,
    /// The extended attribute is listed but cannot be read: the errno Linux returns, by name
    /// (`ENODATA`, `EINVAL`, `EOPNOTSUPP`).
    #[error("attribute cannot be read: {0}")]
    Attribute(&'static str),
}

impl ViewError {
    /// The errno the request fails with.
    pub fn errno(&self) -> i32 {
        match self {
            ViewError::NoEntry => libc::ENOENT,
            ViewError::NotADirectory(_) => libc::ENOTDIR,
            ViewError::IsADirectory(_) => libc::EISDIR,
            ViewError::Invalid(_) => libc::EINVAL,
            ViewError::Inode(FsError::NoSuchInode(_)) => libc::ENOENT,
            ViewError::Inode(FsError::SymlinkTooLong { .. }) => libc::ENAMETOOLONG,
            ViewError::Inode(FsError::NotADirectory(_)) => libc::ENOTDIR,
            ViewError::Inode(_) => libc::EIO,
            ViewError::NoAttribute => libc::ENODATA,
            ViewError::Attribute(name) => match *name {
                "EINVAL" => libc::EINVAL,
                "EOPNOTSUPP" => libc::EOPNOTSUPP,
                _ => libc::ENODATA,
            },
        }
    }
}

/// An inode's attributes as `stat` shows them on Linux.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Attr {
    /// Inode number (the image's; the root is 1).
    pub ino: u32,
    /// Type.
    pub kind: InodeKind,
    /// Full `st_mode` (type bits, setuid, setgid, sticky, permissions).
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// `st_size`.
    pub size: u64,
    /// `st_nlink` as Linux reports it (directories: 2 + subdirectories, the root one more).
    pub nlink: u32,
    /// Access time (seconds).
    pub atime: u32,
    /// Modification time (seconds).
    pub mtime: u32,
    /// Change time (seconds).
    pub ctime: u32,
    /// Device numbers `(major, minor)` of a character or block device.
    pub rdev: Option<(u32, u32)>,
    /// `st_blocks`: 512-byte units, `(size + 511) / 512` as `jffs2_iget` sets `i_blocks`.
    pub blocks: u64,
}

impl Attr {
    fn of(inode: &Inode) -> Attr {
        Attr {
            ino: inode.ino,
            kind: inode.kind,
            mode: inode.mode,
            uid: inode.uid,
            gid: inode.gid,
            size: inode.size,
            nlink: inode.nlink,
            atime: inode.atime,
            mtime: inode.mtime,
            ctime: inode.ctime,
            rdev: inode.rdev,
            blocks: inode.size.div_ceil(512),
        }
    }
}

/// One directory entry as `readdir` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// `d_ino`.
    pub ino: u32,
    /// `d_type` (`DT_*`, as the entry's node records it).
    pub dtype: u8,
    /// The name.
    pub name: Vec<u8>,
}

/// `statfs` as Linux's `jffs2_statfs` computes it (`docs/spec/kernel-jffs2-spec.md` §7.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatFs {
    /// `f_bsize` (and `f_frsize`): the page size.
    pub bsize: u32,
    /// `f_blocks`: the flash size in pages.
    pub blocks: u64,
    /// `f_bfree`: dirty plus free space less the write reserve, in pages, 0 if negative.
    pub bfree: u64,
    /// `f_bavail`: the same as `bfree`.
    pub bavail: u64,
    /// `f_files`: 0 (JFFS2 does not count inodes).
    pub files: u64,
    /// `f_ffree`: 0.
    pub ffree: u64,
    /// `f_namelen`: 254.
    pub namelen: u32,
}

/// A read-only view of a mounted image, by inode number; `Sync`, so one view serves many
/// threads.
pub struct View<'a> {
    fs: Fs<'a>,
    inodes: Mutex<Lru<u32, Inode>>,
    data: Mutex<Lru<usize, Vec<u8>>>,
    /// Directories' listing orders ([`View::listing_order`]), by inode number.
    orders: Mutex<Lru<u32, Vec<u32>>>,
}

/// A cache lock, taken even if a thread panicked holding it (the caches stay consistent:
/// every change is complete before the lock is released).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Estimated memory of a read inode, for the inode cache's budget.
fn inode_weight(i: &Inode) -> usize {
    use std::mem::size_of;
    size_of::<Inode>()
        + i.nodes.len() * size_of::<DataNode>()
        + i.frags.len() * size_of::<crate::fs::Frag>()
        + i.dents.len() * size_of::<crate::fs::Dirent>()
        + i.obsoleted.len() * size_of::<usize>()
        + i.problems.len() * size_of::<crate::fs::Problem>()
        + i.log.iter().map(|m| m.text.len() + 32).sum::<usize>()
        + i.target.as_ref().map_or(0, Vec::len)
}

impl<'a> View<'a> {
    /// A view of the model `fs` (from [`crate::Image::mount`] or [`crate::Image::salvage`]).
    ///
    /// ```
    /// use jffs2::mount::{View, ViewOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
    /// # let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
    /// # let mut image = Vec::new();
    /// # jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
    /// # let image = jffs2::Image::from_vec(image)?;
    /// // `image`: an image holding `/motd` ("Welcome\n").
    /// let (fs, refused) = image.salvage(); // `refused`: why Linux would not mount it
    /// assert!(refused.is_none());
    /// let view = View::new(fs, &ViewOptions::default());
    /// let motd = view.lookup(1, b"motd")?; // inode numbers are the image's; the root is 1
    /// assert_eq!((motd.size, motd.nlink), (8, 1));
    /// assert_eq!(view.read(motd.ino, 3, 100)?, b"come\n");
    /// assert_eq!(view.lookup(1, b"nope").unwrap_err().errno(), libc::ENOENT);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new(fs: Fs<'a>, opts: &ViewOptions) -> View<'a> {
        View {
            fs,
            inodes: Mutex::new(Lru::new(INODE_CACHE_BYTES)),
            data: Mutex::new(Lru::new(opts.cache_bytes)),
            orders: Mutex::new(Lru::new(ORDER_CACHE_BYTES)),
        }
    }

    /// The model served.
    pub fn fs(&self) -> &Fs<'a> {
        &self.fs
    }

    /// Inode `ino` as `jffs2_iget` reads it (cached).
    pub fn inode(&self, ino: u32) -> Result<Arc<Inode>, ViewError> {
        if let Some(i) = lock(&self.inodes).get(&ino) {
            return Ok(i);
        }
        let inode = Arc::new(self.fs.read_inode(ino)?);
        let w = inode_weight(&inode);
        lock(&self.inodes).insert(ino, Arc::clone(&inode), w);
        Ok(inode)
    }

    /// The attributes of inode `ino` (`getattr`).
    pub fn attr(&self, ino: u32) -> Result<Attr, ViewError> {
        Ok(Attr::of(&*self.inode(ino)?))
    }

    /// The entry `name` of directory `parent` and its attributes (`lookup`). An entry whose
    /// inode cannot be read fails as Linux's lookup does (`jffs2_iget`'s error).
    pub fn lookup(&self, parent: u32, name: &[u8]) -> Result<Attr, ViewError> {
        let dir = self.inode(parent)?;
        if dir.kind != InodeKind::Dir {
            return Err(ViewError::NotADirectory(parent));
        }
        // The model keeps a directory's entries sorted by name.
        let at = dir
            .dents
            .binary_search_by(|d| (*d.name).cmp(name))
            .map_err(|_| ViewError::NoEntry)?;
        let ino = dir.dents.get(at).ok_or(ViewError::NoEntry)?.ino;
        self.attr(ino)
    }

    /// The entries of directory `ino` as `readdir` returns them: `.` and `..` first (the
    /// kernel's `dir_emit_dots`), then the live entries in Linux's order: by the x86-64
    /// kernel's `full_name_hash` of the name, entries of equal hash the later-written first
    /// (`docs/spec/kernel-jffs2-spec.md` §5.2).
    pub fn readdir(&self, ino: u32) -> Result<Vec<DirEntry>, ViewError> {
        let mut out = Vec::new();
        self.readdir_with(ino, 0, |ino, dtype, name| {
            out.push(DirEntry {
                ino,
                dtype,
                name: name.to_vec(),
            });
            false
        })?;
        Ok(out)
    }

    /// [`View::readdir`] without copying: `emit(ino, d_type, name)` is called for each entry
    /// from position `skip` on (`.` is 0, `..` is 1), until it returns `true` (a full reply
    /// buffer).
    pub fn readdir_with(
        &self,
        ino: u32,
        skip: usize,
        mut emit: impl FnMut(u32, u8, &[u8]) -> bool,
    ) -> Result<(), ViewError> {
        let dir = self.inode(ino)?;
        if dir.kind != InodeKind::Dir {
            return Err(ViewError::NotADirectory(ino));
        }
        let order = self.listing_order(ino, &dir);
        let dots = [(ino, &b"."[..]), (self.parent(ino), &b".."[..])];
        let dots = dots.iter().map(|&(i, n)| (i, dt::DIR, n));
        let rest = order
            .iter()
            .filter_map(|&k| dir.dents.get(k as usize))
            .map(|d| (d.ino, d.dtype, &*d.name));
        for (i, t, n) in dots.chain(rest).skip(skip) {
            if emit(i, t, n) {
                break;
            }
        }
        Ok(())
    }

    /// The order in which Linux's `jffs2_readdir` lists the entries of directory `ino`
    /// (`dir`), as indexes into `dir.dents` (which the model keeps by name): the order of the
    /// directory's in-memory list. That list is sorted by `full_name_hash` of the name,
    /// an entry of equal hash going after those already there (`jffs2_add_fd_to_list`,
    /// `docs/spec/kernel-jffs2-spec.md` §5.2), and readinode adds the entries visiting the
    /// inode's refs newest-linked first, the reverse of scan order (§5.1, §6.1). So: by
    /// hash, then the later-scanned node first. (The scan has already obsoleted the losers
    /// of a name, §5.2, so each name comes from one node.) The hash is the x86-64 kernel's
    /// ([`crate::scan::nodelist::full_name_hash`]); Linux on another architecture may
    /// hash, and so list, differently.
    fn listing_order(&self, ino: u32, dir: &Inode) -> Arc<Vec<u32>> {
        if let Some(o) = lock(&self.orders).get(&ino) {
            return o;
        }
        let mut keyed: Vec<(u32, std::cmp::Reverse<usize>, u32)> = dir
            .dents
            .iter()
            .zip(0u32..)
            .map(|(d, k)| (full_name_hash(&d.name), std::cmp::Reverse(d.node), k))
            .collect();
        keyed.sort_unstable();
        let order: Arc<Vec<u32>> = Arc::new(keyed.into_iter().map(|(_, _, k)| k).collect());
        lock(&self.orders).insert(ino, Arc::clone(&order), 4 * order.len());
        order
    }

    /// The parent of a directory: the build's `pino_nlink` for directories (§5.6), the root
    /// its own parent.
    fn parent(&self, ino: u32) -> u32 {
        match self.fs.pino_nlink(ino) {
            Some(p) if ino != crate::format::ROOT_INO && p != 0 && self.fs.named_as_dir(ino) => p,
            _ => crate::format::ROOT_INO,
        }
    }

    /// The target of symbolic link `ino` (`readlink`).
    pub fn readlink(&self, ino: u32) -> Result<Vec<u8>, ViewError> {
        let inode = self.inode(ino)?;
        match (&inode.kind, &inode.target) {
            (InodeKind::Symlink, Some(t)) => Ok(t.clone()),
            _ => Err(ViewError::Invalid(ino)),
        }
    }

    /// The listing of `listxattr(2)`: every name Linux lists, each followed by a NUL.
    pub fn listxattr(&self, ino: u32) -> Result<Vec<u8>, ViewError> {
        let inode = self.inode(ino)?;
        let (xattrs, _) = self.fs.xattrs(&inode);
        let mut out = Vec::new();
        for x in xattrs {
            out.extend_from_slice(&x.name);
            out.push(0);
        }
        Ok(out)
    }

    /// The value of extended attribute `name` (`getxattr(2)`): user.*, trusted.*,
    /// security.*, and POSIX ACLs as `system.posix_acl_access` / `system.posix_acl_default`
    /// in the host's `posix_acl_xattr` format.
    pub fn getxattr(&self, ino: u32, name: &[u8]) -> Result<Vec<u8>, ViewError> {
        let inode = self.inode(ino)?;
        let (xattrs, _) = self.fs.xattrs(&inode);
        let x = xattrs
            .into_iter()
            .find(|x| x.name == name)
            .ok_or(ViewError::NoAttribute)?;
        x.value.map_err(ViewError::Attribute)
    }

    /// `statfs` as `jffs2_statfs` computes it from the space counters after the mount
    /// (`docs/spec/kernel-jffs2-spec.md` §7.3): the write reserve is
    /// `resv_blocks_write` erase blocks.
    pub fn statfs(&self) -> StatFs {
        let scan = self.fs.scan();
        let t = scan.totals();
        let es = u64::from(scan.geometry.erase_size.max(1));
        let flash = u64::from(scan.flash_size);
        let nr_blocks = flash / es;
        // jffs2_calc_trigger_levels: resv_blocks_deletion (2) plus the blocks needed for
        // flash_size / 50 + nr_blocks * 100 bytes, rounded up.
        let resv_write = 2 + (flash / 50 + nr_blocks * 100).div_ceil(es);
        let avail = (t.dirty + t.free).saturating_sub(es * resv_write);
        let page = u64::from(PAGE_SIZE);
        StatFs {
            bsize: PAGE_SIZE,
            blocks: flash / page,
            bfree: avail / page,
            bavail: avail / page,
            files: 0,
            ffree: 0,
            namelen: NAME_MAX,
        }
    }
}

/// Decompressed node data shared with the cache (`None`: zeros).
type Shared = Option<Arc<Vec<u8>>>;

/// Where a read of `[offset, end)` needs node data: the part of the output each fragment
/// fills.
struct Piece {
    /// Index into the inode's `nodes`.
    node: usize,
    /// Start in the file.
    start: u64,
    /// End in the file.
    end: u64,
}

impl View<'_> {
    /// Up to `len` bytes at `offset` of regular file `ino` (`read`): holes and ZERO nodes read
    /// as zeros, other nodes are decompressed (only those the range touches, on all cores when
    /// many are not cached). A node that cannot be read fails the read with `EIO`, as
    /// Linux's `read()` fails on the page that holds it. The result is allocated whole: up to
    /// `len` bytes (FUSE asks for at most a few hundred KiB at a time).
    pub fn read(&self, ino: u32, offset: u64, len: usize) -> Result<Vec<u8>, ViewError> {
        let inode = self.inode(ino)?;
        match inode.kind {
            InodeKind::File => {}
            InodeKind::Dir => return Err(ViewError::IsADirectory(ino)),
            _ => return Err(ViewError::Invalid(ino)),
        }
        let end = offset.saturating_add(len as u64).min(inode.size);
        if offset >= end {
            return Ok(Vec::new());
        }
        let pieces = pieces(&inode, offset, end);
        let data = self.node_data(&inode, &pieces)?;
        let mut out = vec![0u8; (end - offset) as usize];
        for (p, d) in pieces.iter().zip(&data) {
            let (Some(d), Some(dn)) = (d, inode.nodes.get(p.node)) else {
                continue; // zeros
            };
            // A fragment lies within its node; a range that does not is left as zeros.
            let ofs = u64::from(dn.ofs);
            let (Some(a), Some(b)) = (p.start.checked_sub(ofs), p.end.checked_sub(ofs)) else {
                continue;
            };
            let (a, b, o) = (a as usize, b as usize, (p.start - offset) as usize);
            if let (Some(src), Some(dst)) = (d.get(a..b), out.get_mut(o..o + (b - a))) {
                dst.copy_from_slice(src);
            }
        }
        Ok(out)
    }

    /// The data of each piece's node (`None`: zeros), from the cache or decompressed.
    fn node_data(&self, inode: &Inode, pieces: &[Piece]) -> Result<Vec<Shared>, ViewError> {
        let mut have: Vec<Shared> = {
            let mut cache = lock(&self.data);
            pieces
                .iter()
                .map(|p| inode.nodes.get(p.node).and_then(|dn| cache.get(&dn.node)))
                .collect()
        };
        // The nodes to read, each once, in file order.
        let mut missing: Vec<usize> = pieces
            .iter()
            .zip(&have)
            .filter(|(_, h)| h.is_none())
            .map(|(p, _)| p.node)
            .collect();
        missing.dedup();
        let read = |&n: &usize| -> Result<(usize, Shared), ReadError> {
            let Some(dn) = inode.nodes.get(n) else {
                return Ok((n, None));
            };
            Ok(match self.fs.node_data(dn)? {
                NodeData::Zeros(_) => (n, None),
                NodeData::Bytes(b) => (n, Some(Arc::new(b))),
            })
        };
        let got: Vec<_> = if missing.len() >= PAR_NODES {
            missing.par_iter().map(read).collect()
        } else {
            missing.iter().map(read).collect()
        };
        let ino = inode.ino;
        let mut fresh = std::collections::HashMap::new();
        {
            let mut cache = lock(&self.data);
            for r in got {
                let (n, d) = r.map_err(|error| FsError::Read { ino, error })?;
                if let (Some(d), Some(dn)) = (&d, inode.nodes.get(n)) {
                    cache.insert(dn.node, Arc::clone(d), d.len().max(1));
                }
                fresh.insert(n, d);
            }
        }
        for (p, h) in pieces.iter().zip(have.iter_mut()) {
            if h.is_none() {
                *h = fresh.get(&p.node).cloned().flatten();
            }
        }
        Ok(have)
    }
}

/// The fragments of `inode` within `[offset, end)`, clipped to it (holes are not pieces).
fn pieces(inode: &Inode, offset: u64, end: u64) -> Vec<Piece> {
    let first = inode.frags.partition_point(|f| f.end <= offset);
    inode.frags[first..]
        .iter()
        .take_while(|f| f.start < end)
        .map(|f| Piece {
            node: f.node,
            start: f.start.max(offset),
            end: f.end.min(end),
        })
        .filter(|p| p.start < p.end)
        .collect()
}
