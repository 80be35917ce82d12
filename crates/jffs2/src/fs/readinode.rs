//! Reading an inode: `readinode.c: jffs2_do_read_inode_internal` and `fs.c: jffs2_iget`
//! (`docs/spec/kernel-jffs2-spec.md` §6.1–§6.4).

use std::collections::BTreeMap;

use super::dirent::{c_name, Dirent, DirentList};
use super::refs::{hash08x, ref_offset};
use super::{kmsg, live, Fs, FsError, Problem, ReadError};
use crate::compress::COMPR_ZERO;
use crate::crc::crc32;
use crate::format::ROOT_INO;
use crate::format::{
    dt, pad4, DirentNode, InodeNode, COMPAT_MASK, DIRENT_SIZE, FEATURE_INCOMPAT, FEATURE_ROCOMPAT,
    FEATURE_RWCOMPAT_COPY, INODE_SIZE, MAGIC, MAX_NAME_LEN, NODETYPE_DIRENT, NODETYPE_INODE,
    NODE_ACCURATE,
};
use crate::scan::{KernelMsg, Level, NodeRef, RefState};
use rayon::prelude::*;

/// Data nodes from which an inode's CRC checks run in parallel.
const PAR_CHECKS: usize = 256;
/// `JFFS2_MIN_NODE_HEADER`: the first read of every node (§6.1), the size of a dirent header.
const MIN_NODE_HEADER: usize = crate::format::DIRENT_SIZE;

use crate::format::dev::{decode_dev, NEW_DEV_SIZE, OLD_DEV_SIZE};
use crate::format::hdr;
use crate::format::{S_IFBLK, S_IFCHR, S_IFDIR, S_IFIFO, S_IFLNK, S_IFMT, S_IFREG, S_IFSOCK};

/// The file type of an inode, from its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InodeKind {
    /// Directory.
    Dir,
    /// Regular file.
    File,
    /// Symbolic link.
    Symlink,
    /// FIFO.
    Fifo,
    /// Character device.
    Char,
    /// Block device.
    Block,
    /// Socket.
    Socket,
    /// Any other `S_IFMT` value (`Bogus i_mode`; Linux still shows the inode).
    Unknown,
}

impl InodeKind {
    /// The type of a Linux mode.
    pub fn of_mode(mode: u32) -> InodeKind {
        match mode & S_IFMT {
            S_IFDIR => InodeKind::Dir,
            S_IFREG => InodeKind::File,
            S_IFLNK => InodeKind::Symlink,
            S_IFIFO => InodeKind::Fifo,
            S_IFCHR => InodeKind::Char,
            S_IFBLK => InodeKind::Block,
            S_IFSOCK => InodeKind::Socket,
            _ => InodeKind::Unknown,
        }
    }

    /// The name the kernel harness listings use (`type`).
    pub fn listing_name(self) -> &'static str {
        match self {
            InodeKind::Dir => "dir",
            InodeKind::File => "file",
            InodeKind::Symlink => "symlink",
            InodeKind::Fifo => "fifo",
            InodeKind::Char => "char",
            InodeKind::Block => "block",
            InodeKind::Socket => "socket",
            InodeKind::Unknown => "unknown",
        }
    }
}

/// A data node of an inode (`struct jffs2_full_dnode` plus the header fields reading needs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataNode {
    /// Index in [`crate::scan::Scan::refs`].
    pub node: usize,
    /// Byte offset of the node in the image.
    pub offset: u32,
    /// Version.
    pub version: u32,
    /// File offset of the data.
    pub ofs: u32,
    /// Length of the file range it covers (`dsize`, or `csize` for the legacy ZERO node with
    /// the two swapped, §6.1).
    pub size: u32,
    /// Stored bytes.
    pub csize: u32,
    /// Compressor id.
    pub compr: u8,
    /// `usercompr` byte.
    pub usercompr: u8,
}

impl DataNode {
    /// End of the covered range (may exceed 4 GiB for a hostile node).
    pub fn end(&self) -> u64 {
        u64::from(self.ofs) + u64::from(self.size)
    }
}

/// One fragment of the file: `[start, end)` shows data of [`Inode::nodes`]`[node]` (the
/// byte at `start` is byte `start - node.ofs` of the node's data). Ranges between fragments
/// are holes and read as zeros (§6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frag {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// Index into [`Inode::nodes`].
    pub node: usize,
}

/// A failed inode read: the error, and the kernel messages printed before it.
#[derive(Debug, Clone)]
pub struct ReadFailure {
    /// Why the read failed.
    pub error: FsError,
    /// The messages Linux prints while reading the inode, up to and including the failure.
    pub log: Vec<KernelMsg>,
}

/// An inode as Linux reads it (`jffs2_iget`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inode {
    /// Inode number.
    pub ino: u32,
    /// Type.
    pub kind: InodeKind,
    /// Full `st_mode`.
    pub mode: u32,
    /// Owner.
    pub uid: u32,
    /// Group.
    pub gid: u32,
    /// `i_size` as Linux reports it.
    pub size: u64,
    /// Access time.
    pub atime: u32,
    /// Modification time (for directories possibly the latest dirent's `mctime`, §6.4).
    pub mtime: u32,
    /// Change time.
    pub ctime: u32,
    /// `i_nlink` as Linux reports it (§5.6).
    pub nlink: u32,
    /// Version of the latest valid node (0 when faked).
    pub version: u32,
    /// Highest version of any node read (`f->highest_version`).
    pub highest_version: u32,
    /// The node the metadata comes from (index in the scan's refs), `None` when faked.
    pub latest: Option<usize>,
    /// No valid node: Linux fakes a directory (root, or an inode with children, §6.4).
    pub faked: bool,
    /// Device numbers `(major, minor)` of a character or block device.
    pub rdev: Option<(u32, u32)>,
    /// Symlink target.
    pub target: Option<Vec<u8>>,
    /// Directory entries with `ino != 0` after de-duplication, by name.
    pub dents: Vec<Dirent>,
    /// Data nodes the fragments refer to.
    pub nodes: Vec<DataNode>,
    /// The fragment tree (regular files: after truncation to the size).
    pub frags: Vec<Frag>,
    /// Refs readinode obsoletes (superseded or failing their checks); the kernel marks them
    /// obsolete in memory.
    pub obsoleted: Vec<usize>,
    /// What reading found (node checks, data CRCs, size clipping).
    pub problems: Vec<Problem>,
    /// What Linux logs reading it.
    pub log: Vec<KernelMsg>,
}

impl Inode {
    /// Permission bits with setuid/setgid/sticky (`S_IMODE`).
    pub fn perm(&self) -> u32 {
        self.mode & 0o7777
    }
}

/// A data-node candidate (`struct jffs2_tmp_dnode_info`).
#[derive(Debug, Clone)]
struct Tn {
    dn: DataNode,
    data_crc: u32,
    state: RefState,
}

#[derive(Default)]
struct Collect {
    fds: DirentList,
    any_fd: bool,
    mdata: Option<Tn>,
    tns: Vec<Tn>,
    highest_version: u32,
    mctime_ver: u32,
    latest_mctime: u32,
    obsoleted: Vec<usize>,
    problems: Vec<Problem>,
    log: Vec<KernelMsg>,
    valid: usize,
}

impl Fs<'_> {
    /// Reads an inode as `jffs2_iget` does (§6): its nodes in list order (newest linked
    /// first), the checks of §6.1, the version pre-filter and fragment tree of §6.2–§6.3 with
    /// the fallback to older data when a newer node fails its data CRC, and the metadata of
    /// the latest valid node with the type-specific rules of §6.4. The root (ino 1) is faked
    /// as a 0755 directory owned by 0:0 with times 0 when it has no node.
    ///
    /// ```
    /// use jffs2::fs::{FsError, InodeKind};
    /// # let dir = tempfile::tempdir()?;
    /// # std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
    /// # let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
    /// # let mut image = Vec::new();
    /// # jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
    /// # let image = jffs2::Image::from_vec(image)?;
    /// # let fs = image.mount()?;
    /// // `fs`: the model of an image holding `/motd` (inode 2, "Welcome\n").
    /// let root = fs.read_inode(1)?;
    /// let motd = fs.read_inode(root.dents[0].ino)?;
    /// assert_eq!((motd.kind, motd.size), (InodeKind::File, 8));
    /// assert_eq!(fs.read_inode(99), Err(FsError::NoSuchInode(99)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_inode(&self, ino: u32) -> Result<Inode, FsError> {
        self.read_inode_logged(ino).map_err(|f| f.error)
    }

    /// [`Fs::read_inode`], keeping on failure the kernel messages the read printed before
    /// it gave up (what `--kernel-log` shows for an inode that cannot be read).
    pub fn read_inode_logged(&self, ino: u32) -> Result<Inode, ReadFailure> {
        let ic = self.scan.inodes.get(&ino);
        if ic.is_none() && ino != ROOT_INO {
            return Err(ReadFailure {
                error: FsError::NoSuchInode(ino),
                log: Vec::new(),
            });
        }
        let mut c = Collect::default();
        if let Some(ic) = ic {
            // Headers a few nodes ahead are asked for while this one is read.
            const AHEAD: usize = 8;
            let order = ic.nodes.iter().rev();
            for (k, &idx) in order.enumerate() {
                if let Some(a) = ic.nodes.len().checked_sub(k + 1 + AHEAD) {
                    if let Some(ahead) = ic.nodes.get(a).and_then(|&i| self.scan.refs.get(i)) {
                        crate::prefetch::prefetch(self.image, ahead.offset as usize);
                    }
                }
                let Some(r) = self.scan.refs.get(idx) else {
                    continue;
                };
                if !live(r.state) {
                    continue;
                }
                c.valid += 1;
                if let Err(error) = self.collect_node(ino, idx, r, &mut c) {
                    return Err(ReadFailure { error, log: c.log });
                }
            }
        }
        if c.valid == 0 && ino != ROOT_INO {
            c.log.push(kmsg(
                Level::Warning,
                "jffs2_get_inode_nodes",
                None,
                format!("Eep. No valid nodes for ino #{ino}."),
            ));
        }
        self.finish_inode(ino, c)
    }

    /// Reads the directory entries of a directory (`readdir`: entries with `ino != 0`), by
    /// name.
    ///
    /// ```
    /// use jffs2::fs::FsError;
    /// # let dir = tempfile::tempdir()?;
    /// # std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
    /// # let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
    /// # let mut image = Vec::new();
    /// # jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
    /// # let image = jffs2::Image::from_vec(image)?;
    /// # let fs = image.mount()?;
    /// // `fs`: the model of an image holding `/motd` (inode 2, "Welcome\n").
    /// let names: Vec<Vec<u8>> = fs.list_dir(1)?.into_iter().map(|d| d.name.to_vec()).collect();
    /// assert_eq!(names, [b"motd".to_vec()]);
    /// assert_eq!(fs.list_dir(2), Err(FsError::NotADirectory(2)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn list_dir(&self, ino: u32) -> Result<Vec<Dirent>, FsError> {
        let inode = self.read_inode(ino)?;
        if inode.kind != InodeKind::Dir {
            return Err(FsError::NotADirectory(ino));
        }
        Ok(inode.dents)
    }

    /// `jffs2_get_inode_nodes` for one ref (§6.1).
    fn collect_node(
        &self,
        ino: u32,
        idx: usize,
        r: &NodeRef,
        c: &mut Collect,
    ) -> Result<(), FsError> {
        let e = self.scan.geometry.endian;
        let off = r.offset;
        let short = FsError::ShortRead { ino, offset: off };
        let b = self.image.get(off as usize..).ok_or(short.clone())?;
        if b.len() < MIN_NODE_HEADER {
            return Err(short);
        }
        let magic = e.get_u16(b, hdr::MAGIC).unwrap_or(0);
        let nodetype = e.get_u16(b, hdr::NODETYPE).unwrap_or(0);
        let totlen = e.get_u32(b, hdr::TOTLEN).unwrap_or(0);
        let hdr_crc = e.get_u32(b, hdr::HDR_CRC).unwrap_or(0);
        // "No need to mask in the valid bit; it shouldn't be invalid": the CRC as stored.
        if crc32(&b[..hdr::HDR_CRC]) != hdr_crc {
            let text = format!(
                "Node header CRC failed at {}. {{{magic:04x},{nodetype:04x},{totlen:08x},{hdr_crc:08x}}}",
                hash08x(off)
            );
            self.reject(
                ino,
                idx,
                off,
                Level::Notice,
                "jffs2_get_inode_nodes",
                text,
                c,
            );
            return Ok(());
        }
        if magic != MAGIC {
            let text = format!(
                "Wrong magic bitmask 0x{magic:04x} in node header at {}.",
                hash08x(off)
            );
            self.reject(
                ino,
                idx,
                off,
                Level::Notice,
                "jffs2_get_inode_nodes",
                text,
                c,
            );
            return Ok(());
        }
        match nodetype {
            NODETYPE_DIRENT => self.read_direntry(ino, idx, r, b, totlen, c),
            NODETYPE_INODE => self.read_dnode(ino, idx, r, b, totlen, c),
            _ => {
                self.read_unknown(ino, idx, r, nodetype, totlen, hdr_crc, c);
                Ok(())
            }
        }
    }

    /// Records a node readinode obsoletes because it fails a check.
    #[allow(clippy::too_many_arguments)]
    fn reject(
        &self,
        ino: u32,
        idx: usize,
        off: u32,
        level: Level,
        func: &str,
        text: String,
        c: &mut Collect,
    ) {
        c.obsoleted.push(idx);
        c.problems.push(Problem::BadNode {
            ino,
            offset: off,
            reason: text.clone(),
        });
        c.log.push(kmsg(level, func, Some(off), text));
    }

    /// `read_direntry` (§6.1).
    fn read_direntry(
        &self,
        ino: u32,
        idx: usize,
        r: &NodeRef,
        b: &[u8],
        totlen: u32,
        c: &mut Collect,
    ) -> Result<(), FsError> {
        let e = self.scan.geometry.endian;
        let off = r.offset;
        let rd = DirentNode::decode(b, e, u64::from(off))
            .map_err(|_| FsError::ShortRead { ino, offset: off })?;
        let crc = crc32(&b[..32]);
        if crc != rd.node_crc {
            let text = format!(
                "header CRC failed on dirent node at {}: read {}, calculated {}",
                hash08x(off),
                hash08x(rd.node_crc),
                hash08x(crc)
            );
            self.reject(ino, idx, off, Level::Notice, "read_direntry", text, c);
            return Ok(());
        }
        if r.state == RefState::Unchecked
            && pad4(u32::from(rd.nsize) + DIRENT_SIZE as u32) != pad4(totlen)
        {
            let text = format!(
                "illegal nsize in node at {}: nsize {:#02x}, totlen {:#04x}",
                hash08x(off),
                rd.nsize,
                totlen
            );
            self.reject(ino, idx, off, Level::Err, "read_direntry", text, c);
            return Ok(());
        }
        c.highest_version = c.highest_version.max(rd.version);
        // The mctime of the latest dirent with a non-zero mctime (§6.1).
        if rd.version > c.mctime_ver && rd.mctime != 0 {
            c.mctime_ver = rd.version;
            c.latest_mctime = rd.mctime;
        }
        let name = rd.name(b).ok_or(FsError::ShortRead { ino, offset: off })?;
        // On NOR the first read is 40 bytes, so the whole name is re-read and, with
        // CONFIG_JFFS2_SUMMARY, its CRC checked over all nsize bytes (§6.1).
        if !name.is_empty() {
            let ncrc = crc32(name);
            if ncrc != rd.name_crc {
                // The kernel prints the node CRC in the "read" slot.
                let text = format!(
                    "name CRC failed on dirent node at{}: read {},calculated {}",
                    hash08x(off),
                    hash08x(rd.node_crc),
                    hash08x(ncrc)
                );
                self.reject(ino, idx, off, Level::Notice, "read_direntry", text, c);
                return Ok(());
            }
        }
        c.any_fd = true;
        // The name stays in the image: `name` starts DIRENT_SIZE bytes into the node, and
        // `nsize` (a byte) bounds its length.
        let len = c_name(name).len().min(usize::from(u8::MAX)) as u8;
        let at = off.saturating_add(DIRENT_SIZE as u32);
        c.fds.add(at, len, rd.ino, rd.dtype, rd.version, idx, off);
        Ok(())
    }

    /// `read_dnode` (§6.1) and the metadata part of `jffs2_add_tn_to_tree` (§6.2).
    fn read_dnode(
        &self,
        ino: u32,
        idx: usize,
        r: &NodeRef,
        b: &[u8],
        totlen: u32,
        c: &mut Collect,
    ) -> Result<(), FsError> {
        let e = self.scan.geometry.endian;
        let off = r.offset;
        let ri = InodeNode::decode(b, e, u64::from(off))
            .map_err(|_| FsError::ShortRead { ino, offset: off })?;
        let crc = crc32(&b[..INODE_SIZE - 8]);
        if crc != ri.node_crc {
            let text = format!(
                "node CRC failed on dnode at {}: read {}, calculated {}",
                hash08x(off),
                hash08x(ri.node_crc),
                hash08x(crc)
            );
            self.reject(ino, idx, off, Level::Notice, "read_dnode", text, c);
            return Ok(());
        }
        if r.state == RefState::Unchecked
            && (ri.offset > ri.isize
                || pad4(ri.csize.wrapping_add(INODE_SIZE as u32)) != pad4(totlen))
        {
            let text = format!("inode node header CRC is corrupted at {}", hash08x(off));
            self.reject(ino, idx, off, Level::Warning, "read_dnode", text, c);
            return Ok(());
        }
        c.highest_version = c.highest_version.max(ri.version);
        // The legacy hole node with csize and dsize swapped (§6.1).
        let size = if ri.compr == COMPR_ZERO && ri.dsize == 0 && ri.csize != 0 {
            ri.csize
        } else {
            ri.dsize
        };
        let tn = Tn {
            dn: DataNode {
                node: idx,
                offset: off,
                version: ri.version,
                ofs: ri.offset,
                size,
                csize: ri.csize,
                compr: ri.compr,
                usercompr: ri.usercompr,
            },
            data_crc: ri.data_crc,
            state: r.state,
        };
        if size == 0 {
            // Only the highest-version metadata node is kept; ties keep the one met first
            // (the later-scanned) (§6.2).
            match &c.mdata {
                Some(m) if m.dn.version >= tn.dn.version => c.obsoleted.push(idx),
                Some(m) => {
                    c.obsoleted.push(m.dn.node);
                    c.mdata = Some(tn);
                }
                None => c.mdata = Some(tn),
            }
        } else {
            c.tns.push(tn);
        }
        Ok(())
    }

    /// `read_unknown` (§6.1).
    #[allow(clippy::too_many_arguments)]
    fn read_unknown(
        &self,
        ino: u32,
        idx: usize,
        r: &NodeRef,
        nodetype: u16,
        totlen: u32,
        hdr_crc: u32,
        c: &mut Collect,
    ) {
        let off = r.offset;
        if r.state == RefState::Unchecked {
            c.log.push(kmsg(
                Level::Err,
                "read_unknown",
                Some(off),
                format!("REF_UNCHECKED but unknown node at {}", hash08x(off)),
            ));
            let text = format!(
                "Node is {{{MAGIC:04x},{nodetype:04x},{totlen:08x},{hdr_crc:08x}}}. Please report this error."
            );
            self.reject(ino, idx, off, Level::Err, "read_unknown", text, c);
            return;
        }
        let t = nodetype | NODE_ACCURATE;
        let (level, what, obsolete) = match t & COMPAT_MASK {
            // The kernel hits BUG() here; offline it is a finding.
            FEATURE_INCOMPAT => (Level::Err, "INCOMPAT", true),
            FEATURE_ROCOMPAT => (Level::Err, "ROCOMPAT", false),
            FEATURE_RWCOMPAT_COPY => (Level::Notice, "RWCOMPAT_COPY", false),
            _ => (Level::Notice, "RWCOMPAT_DELETE", true),
        };
        let text = format!("unknown {what} nodetype {t:#04X} at {}", hash08x(off));
        if obsolete {
            self.reject(ino, idx, off, level, "read_unknown", text, c);
        } else {
            c.problems.push(Problem::BadNode {
                ino,
                offset: off,
                reason: text.clone(),
            });
            c.log.push(kmsg(level, "read_unknown", Some(off), text));
        }
    }

    /// The data CRC check of an unchecked node (`check_tn_node` → `check_node_data`, §6.2):
    /// `Ok(())` if good, `Err((stored, computed))` if not. Nodes already checked and nodes
    /// without data pass.
    fn check_tn(&self, tn: &Tn) -> Result<(), (u32, u32)> {
        if tn.state != RefState::Unchecked || tn.dn.csize == 0 || self.data_crc_known(&tn.dn) {
            return Ok(());
        }
        let start = tn.dn.offset as usize + INODE_SIZE;
        let data = start
            .checked_add(tn.dn.csize as usize)
            .and_then(|end| self.image.get(start..end));
        match data {
            Some(d) => {
                let crc = crc32(d);
                if crc == tn.data_crc {
                    self.data_crc_passed(&tn.dn);
                    Ok(())
                } else {
                    Err((tn.data_crc, crc))
                }
            }
            // A short read: the kernel gets an error and does not use the node.
            None => Err((tn.data_crc, 0)),
        }
    }

    /// Pre-filter, fragment tree and metadata (§6.2–§6.4), then `jffs2_iget`: the rest of
    /// `jffs2_do_read_inode_internal` once `jffs2_get_inode_nodes` has collected the nodes.
    fn finish_inode(&self, ino: u32, mut c: Collect) -> Result<Inode, ReadFailure> {
        let (good, bad) = self.check_data(std::mem::take(&mut c.tns));
        let tree = FragTree::build(&good, c.mdata.as_ref(), &mut c.obsoleted);
        tree.report_bad(ino, bad, &mut c);
        tree.obsolete_unused(&mut c.obsoleted);
        let metadata = surviving_metadata(c.mdata.as_ref(), tree.latest, &mut c.obsoleted);

        let pino_nlink = self.inos.get(&ino).map_or(1, |b| b.pino_nlink);
        let (dents, had_fds) = self.settle_dirents(&mut c);
        let latest = tree.latest;
        let settled = Settled {
            tree,
            metadata,
            mctime_ver: c.mctime_ver,
            latest_mctime: c.latest_mctime,
        };
        let mut inode = Inode::unread(ino, dents, c);

        let Some((_, latest_idx, _)) = latest else {
            return fake_inode(ino, inode, had_fds);
        };
        if let Err(error) = self.read_metadata(&mut inode, latest_idx, settled) {
            return Err(ReadFailure {
                error,
                log: inode.log,
            });
        }
        inode.nlink = if inode.kind == InodeKind::Dir {
            dir_nlink(ino, &inode.dents)
        } else {
            pino_nlink
        };
        Ok(inode)
    }

    /// The data CRC checks of the candidates (`check_tn_node`, §6.2): the good nodes, and
    /// the bad ones with their stored and computed CRCs, each in collection order.
    fn check_data(&self, tns: Vec<Tn>) -> (Vec<Tn>, Vec<(Tn, u32, u32)>) {
        // Data CRCs (§6.2, §6.3): a bad node is dropped and older data shows through.
        let mut good: Vec<Tn> = Vec::with_capacity(tns.len());
        let mut bad: Vec<(Tn, u32, u32)> = Vec::new();
        // The checks are independent: a large file's run on all cores (same results, in
        // the same order).
        let checks: Vec<Result<(), (u32, u32)>> = if tns.len() >= PAR_CHECKS {
            tns.par_iter().map(|tn| self.check_tn(tn)).collect()
        } else {
            tns.iter().map(|tn| self.check_tn(tn)).collect()
        };
        for (tn, check) in tns.into_iter().zip(checks) {
            match check {
                Ok(()) => good.push(tn),
                Err((stored, computed)) => bad.push((tn, stored, computed)),
            }
        }
        (good, bad)
    }

    /// The dirents after the kernel's de-duplication (§5.2), those with `ino != 0`, and
    /// whether any survived it (an inode without nodes but with children is faked, §6.4).
    fn settle_dirents(&self, c: &mut Collect) -> (Vec<Dirent>, bool) {
        let mut all_fds = std::mem::take(&mut c.fds).settle(self.image, &mut c.obsoleted);
        let had_fds = c.any_fd && !all_fds.is_empty();
        all_fds.retain(|d| d.ino != 0);
        (all_fds, had_fds)
    }

    /// The latest node gives the inode its metadata (the `jffs2_flash_read` of
    /// `latest_node` and the `switch` on its mode in `jffs2_do_read_inode_internal`, §6.4).
    fn read_metadata(
        &self,
        inode: &mut Inode,
        latest_idx: usize,
        s: Settled,
    ) -> Result<(), FsError> {
        let ino = inode.ino;
        let ln = self.reread_latest(ino, latest_idx, &mut inode.log)?;
        inode.latest = Some(latest_idx);
        inode.version = ln.node.version;
        inode.mode = ln.node.mode;
        inode.kind = InodeKind::of_mode(ln.node.mode);
        inode.uid = u32::from(ln.node.uid);
        inode.gid = u32::from(ln.node.gid);
        inode.atime = ln.node.atime;
        inode.mtime = ln.node.mtime;
        inode.ctime = ln.node.ctime;
        let mut isize = ln.node.isize;

        let frags = s.tree.frags();

        match ln.node.mode & S_IFMT {
            S_IFDIR => {
                if s.mctime_ver > ln.node.version {
                    inode.mtime = s.latest_mctime;
                    inode.ctime = s.latest_mctime;
                }
            }
            S_IFREG => isize = regular_file(inode, frags, s.tree.nodes, isize),
            S_IFLNK | S_IFBLK | S_IFCHR => {
                if ln.node.mode & S_IFMT == S_IFLNK {
                    // Old-symlink hack (§6.4).
                    if isize == 0 {
                        isize = ln.node.dsize;
                    }
                    inode.target = Some(ln.symlink_target(ino)?);
                }
                self.special_node(inode, ln.node.mode, &frags, s)?;
            }
            S_IFSOCK | S_IFIFO => {}
            _ => {
                inode.log.push(kmsg(
                    Level::Warning,
                    "",
                    None,
                    format!(
                        "jffs2_iget(): Bogus i_mode {:o} for ino {ino}",
                        ln.node.mode
                    ),
                ));
            }
        }
        inode.size = u64::from(isize);
        Ok(())
    }

    /// Re-reads the latest node's header and checks its CRC again (§6.4); a failure is
    /// logged.
    fn reread_latest(
        &self,
        ino: u32,
        latest_idx: usize,
        log: &mut Vec<KernelMsg>,
    ) -> Result<LatestNode<'_>, FsError> {
        // Re-read the latest node's header and check its CRC again (§6.4).
        let loff = ref_offset(&self.scan, latest_idx);
        let lb = self
            .image
            .get(loff as usize..)
            .filter(|b| b.len() >= INODE_SIZE)
            .ok_or(FsError::ShortRead { ino, offset: loff })?;
        let ln = InodeNode::decode(lb, self.scan.geometry.endian, u64::from(loff))
            .map_err(|_| FsError::ShortRead { ino, offset: loff })?;
        if crc32(&lb[..INODE_SIZE - 8]) != ln.node_crc {
            log.push(kmsg(
                Level::Err,
                "jffs2_do_read_inode_internal",
                Some(loff),
                format!("CRC failed for read_inode of inode {ino} at physical location 0x{loff:x}"),
            ));
            return Err(FsError::LatestNodeCrc { ino, offset: loff });
        }
        Ok(LatestNode {
            off: loff,
            bytes: lb,
            node: ln,
        })
    }

    /// The single data node of a symlink or device, kept as the metadata node, and a
    /// device's numbers from it (§6.4).
    fn special_node(
        &self,
        inode: &mut Inode,
        mode: u32,
        frags: &[Frag],
        s: Settled,
    ) -> Result<(), FsError> {
        let ino = inode.ino;
        // One data node, kept as the metadata node (§6.4).
        // The kernel prints the mode in octal for two of these and in hex for the
        // third (§6.4).
        let mut bad = |what: &'static str, shown: String| {
            inode.log.push(kmsg(
                Level::Err,
                "jffs2_do_read_inode_internal",
                None,
                format!("Argh. Special inode #{ino} with mode {shown} {what}"),
            ));
            FsError::BadSpecial { ino, mode, what }
        };
        if s.metadata.is_some() {
            return Err(bad("had metadata node", format!("0{mode:o}")));
        }
        let Some(first) = frags.first() else {
            return Err(bad("has no fragments", format!("0{mode:o}")));
        };
        // A hole before the first fragment is a fragment of its own.
        if frags.len() > 1 || first.start != 0 {
            return Err(bad("had more than one node", format!("0x{mode:x}")));
        }
        let dn = s.tree.nodes[first.node].clone();
        if mode & S_IFMT != S_IFLNK {
            if dn.size as usize != OLD_DEV_SIZE && dn.size as usize != NEW_DEV_SIZE {
                inode.log.push(kmsg(
                    Level::Notice,
                    "",
                    Some(dn.offset),
                    format!("Device node has strange size {}", dn.size as i32),
                ));
                return Err(FsError::DeviceSize { ino, size: dn.size });
            }
            let data = self
                .node_bytes(&dn)
                .map_err(|error| FsError::Read { ino, error })?;
            inode.rdev = Some(decode_dev(&data, self.scan.geometry.endian));
        }
        inode.nodes = vec![dn];
        Ok(())
    }

    /// The whole data of a small node (device numbers), through [`Fs::node_data`].
    fn node_bytes(&self, dn: &DataNode) -> Result<Vec<u8>, ReadError> {
        Ok(self.node_data(dn)?.into_vec(dn.size))
    }
}

/// The fragment tree of an inode's good data nodes (§6.3), and its latest valid node.
struct FragTree {
    /// The fragments: start → (end, index into `nodes`).
    map: BTreeMap<u64, (u64, usize)>,
    /// The data nodes applied, in the order applied.
    nodes: Vec<DataNode>,
    /// `(version, ref, is the metadata node)` of the latest valid node.
    latest: Option<(u32, usize, bool)>,
}

impl FragTree {
    /// Lays the good nodes over each other by version (`jffs2_build_inode_fragtree`,
    /// §6.2–§6.3), obsoleting an equal-version node that overlaps one already laid.
    fn build(good: &[Tn], mdata: Option<&Tn>, obsoleted: &mut Vec<usize>) -> FragTree {
        // Apply in ascending version order; among equal versions (a pristine GC copy beside
        // its original) the first met that overlaps wins and the other is dropped (§6.2).
        // Modelled for overlapping nodes only: Linux (`jffs2_add_tn_to_tree`) compares a
        // node with the neighbours its version-tree search path meets, overlapping or not,
        // so two equal versions side by side can lose one of them there — a layout the
        // kernel's own writers never produce and ours never write (`crate::convert`).
        let mut order: Vec<usize> = (0..good.len()).collect();
        order.sort_by_key(|&i| good[i].dn.version);
        let mut map: BTreeMap<u64, (u64, usize)> = BTreeMap::new();
        let mut nodes: Vec<DataNode> = Vec::new();
        let mut latest: Option<(u32, usize, bool)> = mdata.map(|m| (m.dn.version, m.dn.node, true));
        let mut i = 0;
        while i < order.len() {
            let v = good[order[i]].dn.version;
            let mut j = i;
            let mut same: BTreeMap<u64, u64> = BTreeMap::new();
            while j < order.len() && good[order[j]].dn.version == v {
                let tn = &good[order[j]];
                let (s, en) = (u64::from(tn.dn.ofs), tn.dn.end());
                let clash = same.range(..en).next_back().is_some_and(|(_, &e)| e > s);
                if clash {
                    obsoleted.push(tn.dn.node);
                } else {
                    same.insert(s, en);
                    let id = nodes.len();
                    nodes.push(tn.dn.clone());
                    overlay(&mut map, s, en, id);
                    if latest.is_none_or(|(lv, _, _)| tn.dn.version > lv) {
                        latest = Some((tn.dn.version, tn.dn.node, false));
                    }
                }
                j += 1;
            }
            i = j;
        }
        FragTree { map, nodes, latest }
    }

    /// Obsoletes and records the nodes that failed their data CRC; only those newer valid
    /// data does not cover entirely are logged (`check_node_data`, §6.2).
    fn report_bad(&self, ino: u32, bad: Vec<(Tn, u32, u32)>, c: &mut Collect) {
        // Which bad nodes newer valid data covers entirely (the kernel never checks those).
        for (tn, stored, computed) in bad {
            let superseded = covered_by_newer(&self.map, &self.nodes, &tn.dn);
            if !superseded {
                // check_node_data prints the node's offset (confirmed by the torn-node
                // kernel fixture).
                c.log.push(kmsg(
                    Level::Notice,
                    "check_node_data",
                    Some(tn.dn.offset),
                    format!(
                        "wrong data CRC in data node at 0x{:08x}: read {}, calculated {}.",
                        tn.dn.offset,
                        hash08x(stored),
                        hash08x(computed)
                    ),
                ));
            }
            c.obsoleted.push(tn.dn.node);
            c.problems.push(Problem::DataCrc {
                ino,
                offset: tn.dn.offset,
                stored,
                computed,
                superseded,
            });
        }
    }

    /// Obsoletes the nodes none of whose fragments are left (§6.3).
    fn obsolete_unused(&self, obsoleted: &mut Vec<usize>) {
        // Nodes whose fragments were all overwritten are obsoleted (§6.3).
        let mut used = vec![false; self.nodes.len()];
        for &(_, id) in self.map.values() {
            used[id] = true;
        }
        for (id, u) in used.iter().enumerate() {
            if !u {
                obsoleted.push(self.nodes[id].node);
            }
        }
    }

    /// The fragments in file order.
    fn frags(&self) -> Vec<Frag> {
        self.map
            .iter()
            .map(|(&s, &(e, id))| Frag {
                start: s,
                end: e,
                node: id,
            })
            .collect()
    }
}

/// What the data stage (§6.2–§6.3) leaves for reading the latest node (§6.4).
struct Settled {
    /// The fragment tree.
    tree: FragTree,
    /// The metadata node, if it is the latest.
    metadata: Option<DataNode>,
    /// Version of the latest dirent with a non-zero mctime (§6.1).
    mctime_ver: u32,
    /// Its mctime.
    latest_mctime: u32,
}

/// The latest valid node, re-read (§6.4).
struct LatestNode<'i> {
    /// Its offset in the image.
    off: u32,
    /// The image from that offset on.
    bytes: &'i [u8],
    /// Its header.
    node: InodeNode,
}

impl LatestNode<'_> {
    /// The symlink target the node stores, at most `MAX_NAME_LEN` bytes (§6.4).
    fn symlink_target(&self, ino: u32) -> Result<Vec<u8>, FsError> {
        let (loff, csize) = (self.off, self.node.csize);
        if csize as usize > MAX_NAME_LEN {
            return Err(FsError::SymlinkTooLong {
                ino,
                offset: loff,
                len: csize,
            });
        }
        let t = self
            .bytes
            .get(INODE_SIZE..INODE_SIZE + csize as usize)
            .ok_or(FsError::ShortRead { ino, offset: loff })?;
        Ok(t.to_vec())
    }
}

/// The metadata node survives only if it is the latest (§6.4); otherwise it is obsoleted.
fn surviving_metadata(
    mdata: Option<&Tn>,
    latest: Option<(u32, usize, bool)>,
    obsoleted: &mut Vec<usize>,
) -> Option<DataNode> {
    match (mdata, latest) {
        (Some(m), Some((_, n, true))) if n == m.dn.node => Some(m.dn.clone()),
        (Some(m), _) => {
            obsoleted.push(m.dn.node);
            None
        }
        _ => None,
    }
}

impl Inode {
    /// The inode before its latest node is read: a 0755 directory owned by 0:0 with times 0
    /// (what a faked inode shows, §6.4), holding the dirents and what collecting found.
    fn unread(ino: u32, dents: Vec<Dirent>, c: Collect) -> Inode {
        Inode {
            ino,
            kind: InodeKind::Dir,
            mode: S_IFDIR | 0o755,
            uid: 0,
            gid: 0,
            size: 0,
            atime: 0,
            mtime: 0,
            ctime: 0,
            nlink: 0,
            version: 0,
            highest_version: c.highest_version,
            latest: None,
            faked: false,
            rdev: None,
            target: None,
            dents,
            nodes: Vec::new(),
            frags: Vec::new(),
            obsoleted: c.obsoleted,
            problems: c.problems,
            log: c.log,
        }
    }
}

/// No valid data or metadata node (§6.4): the root, or an inode with children, is faked as a
/// directory; any other inode fails with [`FsError::NoDataNodes`].
fn fake_inode(ino: u32, mut inode: Inode, had_fds: bool) -> Result<Inode, ReadFailure> {
    if ino != ROOT_INO {
        inode.log.push(kmsg(
            Level::Warning,
            "jffs2_do_read_inode_internal",
            None,
            format!("no data nodes found for ino #{ino}"),
        ));
        if !had_fds {
            return Err(ReadFailure {
                error: FsError::NoDataNodes(ino),
                log: inode.log,
            });
        }
        inode.log.push(kmsg(
            Level::Notice,
            "jffs2_do_read_inode_internal",
            None,
            "but it has children so we fake some modes for it".to_string(),
        ));
    }
    inode.faked = true;
    inode.nlink = dir_nlink(ino, &inode.dents);
    Ok(inode)
}

/// A regular file's fragments cut at its size (`jffs2_truncate_fragtree`, §6.4); a size
/// beyond the data is clipped, logged and recorded. Returns the size Linux shows.
fn regular_file(inode: &mut Inode, frags: Vec<Frag>, nodes: Vec<DataNode>, isize: u32) -> u32 {
    let ino = inode.ino;
    let (frags, new_size) = truncate(frags, isize);
    let mut size = isize;
    if new_size != isize {
        inode.log.push(kmsg(
            Level::Warning,
            "jffs2_do_read_inode_internal",
            None,
            format!(
                "Truncating ino #{ino} to {} bytes failed because it only had {} bytes to start with!",
                isize as i32, new_size as i32
            ),
        ));
        inode.problems.push(Problem::SizeBeyondData {
            ino,
            path: None,
            isize,
            size: new_size,
        });
        size = new_size;
    }
    inode.frags = frags;
    inode.nodes = nodes;
    size
}

/// `jffs2_iget` for a directory (§5.6): 2, plus one per DT_DIR entry, plus one more for the
/// root ("Root dir gets i_nlink 3 for some reason").
fn dir_nlink(ino: u32, dents: &[Dirent]) -> u32 {
    let subdirs = dents
        .iter()
        .filter(|d| d.dtype == dt::DIR && d.ino != 0)
        .count() as u32;
    2u32.saturating_add(subdirs)
        .saturating_add(u32::from(ino == ROOT_INO))
}

/// Lays `[s, e)` of node `id` over the fragments, trimming or splitting what it covers
/// (`jffs2_add_frag_to_fragtree`).
fn overlay(map: &mut BTreeMap<u64, (u64, usize)>, s: u64, e: u64, id: usize) {
    let hit: Vec<(u64, u64, usize)> = map
        .range(..e)
        .rev()
        .take_while(|(_, &(fe, _))| fe > s)
        .map(|(&fs, &(fe, fid))| (fs, fe, fid))
        .collect();
    for (fs, fe, fid) in hit {
        map.remove(&fs);
        if fs < s {
            map.insert(fs, (s, fid));
        }
        if fe > e {
            map.insert(e, (fe, fid));
        }
    }
    map.insert(s, (e, id));
}

/// Whether every byte of `dn`'s range shows a node of a higher version.
fn covered_by_newer(map: &BTreeMap<u64, (u64, usize)>, nodes: &[DataNode], dn: &DataNode) -> bool {
    let (s, e) = (u64::from(dn.ofs), dn.end());
    let mut pos = s;
    let start = map.range(..=s).next_back().map_or(s, |(&fs, _)| fs.min(s));
    for (&fs, &(fe, id)) in map.range(start..e) {
        if fe <= pos {
            continue;
        }
        if fs > pos || nodes[id].version <= dn.version {
            return false;
        }
        pos = fe;
        if pos >= e {
            return true;
        }
    }
    pos >= e
}

/// `jffs2_truncate_fragtree` (§6.4): drops what lies at or beyond `size` and returns the size
/// Linux shows: `size`, or the end of the last fragment if the data ends before it.
fn truncate(mut frags: Vec<Frag>, size: u32) -> (Vec<Frag>, u32) {
    let size64 = u64::from(size);
    frags.retain(|f| f.start < size64);
    if let Some(last) = frags.last_mut() {
        last.end = last.end.min(size64);
    }
    if size == 0 {
        return (frags, 0);
    }
    match frags.last() {
        None => (frags, 0),
        Some(l) if l.end < size64 => {
            let end = l.end as u32;
            (frags, end)
        }
        Some(_) => (frags, size),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_hash_format() {
        assert_eq!(hash08x(0xb87b1ed), "0xb87b1ed");
        assert_eq!(hash08x(0x82a401e0), "0x82a401e0");
        assert_eq!(hash08x(0x12), "0x000012");
        assert_eq!(hash08x(0), "0x000000");
    }

    #[test]
    fn overlay_splits_and_trims() {
        let mut m = BTreeMap::new();
        overlay(&mut m, 0, 100, 0);
        overlay(&mut m, 10, 20, 1);
        overlay(&mut m, 90, 150, 2);
        let v: Vec<_> = m.iter().map(|(&s, &(e, id))| (s, e, id)).collect();
        assert_eq!(v, vec![(0, 10, 0), (10, 20, 1), (20, 90, 0), (90, 150, 2)]);
        overlay(&mut m, 0, 200, 3);
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn truncate_rules() {
        let f = |s, e| Frag {
            start: s,
            end: e,
            node: 0,
        };
        assert_eq!(truncate(vec![f(0, 100)], 50).1, 50);
        assert_eq!(truncate(vec![f(0, 100)], 150).1, 100);
        assert_eq!(truncate(vec![], 150).1, 0);
        assert_eq!(truncate(vec![f(0, 100)], 0).1, 0);
        let (v, s) = truncate(vec![f(0, 10), f(20, 30)], 25);
        assert_eq!((v.len(), v[1].end, s), (2, 25, 25));
    }
}
