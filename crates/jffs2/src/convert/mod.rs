//! Offline garbage collection and re-layout: `jffs2-convert` and `jffs2-fsck --repair`.
//!
//! The input is read exactly as Linux would mount it (the [`crate::scan`] and
//! [`crate::fs`] models); the output holds only what Linux shows — every reachable inode
//! with its data, metadata, directory entries and extended attributes — and nothing dead:
//! no obsolete, superseded or deleted node, no deletion dirent, no orphan. It is written
//! through the one [`BlockWriter`] in any geometry (erase size, cleanmarkers, summaries,
//! byte order, page size, compression).
//!
//! # Policy (`kernel-jffs2-spec.md` §8.3, §8.5)
//!
//! * A live node is **copied** ("pristine", the same version) when nothing forbids it: a
//!   data node whose whole range is still visible, that does not cross a page boundary of
//!   the output (the kernel's GC would turn such a node into a hole, §8.3 "Hazard") — holes
//!   (ZERO nodes) excepted, as the kernel writes them across pages itself — that fits an
//!   output erase block, when no recompression is asked for. In the other byte order the
//!   copy is converted field by field ([`crate::dump::swap_node`]); the payload is kept.
//! * Anything else is **rewritten**: the visible ranges of a partly overwritten or
//!   truncated data node are decompressed, split at the output page size and compressed
//!   anew (in parallel, with the configured compressors), with versions above the inode's
//!   highest, carrying the inode's current attributes. Versions never go down (§8.3).
//! * A directory always gets a fresh inode node above every dirent version, so its times
//!   stay those Linux showed whatever the copied dirents' `mctime` (§6.4); rewritten dirents
//!   carry `mctime` 0. The faked root of an mkfs image (no node) stays without one; another
//!   faked directory (children but no node) gets a node, which silences the kernel's
//!   "no data nodes found" without changing what it shows.
//! * If the node with an inode's current metadata is not copied, a metadata node (no data)
//!   with those attributes is written last, with the highest version.
//! * Extended attributes are written anew from the datums Linux lists (new ids, one datum
//!   per distinct value, as mkfs.jffs2 does); POSIX ACL values are converted when the byte
//!   order changes.
//!
//! Inodes Linux cannot read, the entries naming them, and inodes no directory reaches are
//! left out and reported ([`Dropped`]). Output bytes never depend on the number of threads.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io::{self, Write};

use rayon::prelude::*;

use crate::compress::{Compressed, Compressors, COMPR_NONE, COMPR_ZERO};
use crate::dump::{swap_acl, swap_node};
use crate::format::{
    xprefix, DirentNode, Endian, InodeNode, NodeHeader, NodeKind, XattrNode, XrefNode,
    NODE_ACCURATE, XATTR_SIZE, XREF_SIZE,
};
use crate::fs::{DataNode, Fs, FsError, Inode, InodeKind, NodeData};
use crate::layout::{record_size, BlockWriter, EndPad, LayoutConfig};

#[cfg(test)]
mod tests;

/// What the output looks like.
#[derive(Debug, Clone)]
pub struct ConvertConfig {
    /// Byte order, erase size, cleanmarkers, summaries of the output.
    pub layout: LayoutConfig,
    /// Page size of the target (no rewritten data node crosses a multiple of it).
    pub page_size: u32,
    /// Decompress and compress every data node anew (a compression option was given),
    /// rather than copying payloads.
    pub recompress: bool,
    /// The compressors of rewritten data nodes.
    pub compressors: Compressors,
    /// End padding.
    pub pad: EndPad,
    /// Compression threads (0: one per core).
    pub threads: usize,
}

/// Something of the input the output does not hold, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// The inode concerned.
    pub ino: u32,
    /// Its path, when a directory names it.
    pub path: Option<Vec<u8>>,
    /// What was left out and why.
    pub what: String,
}

/// What a conversion did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConvertReport {
    /// Bytes of the output image.
    pub image_size: u64,
    /// Inodes written.
    pub inodes: u64,
    /// Directory entries written.
    pub dirents: u64,
    /// Nodes copied (pristine, possibly byte-swapped).
    pub copied: u64,
    /// Nodes written anew.
    pub rewritten: u64,
    /// xattr datums and references written.
    pub xattrs: u64,
    /// Bytes of the nodes written (headers and payloads, without padding).
    pub node_bytes: u64,
    /// What was left out.
    pub dropped: Vec<Dropped>,
    /// Nodes kept as they were because their data could not be decompressed (Linux fails
    /// reading that range too).
    pub kept_undecodable: u64,
}

/// A conversion that could not be done.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    /// The root directory cannot be read: Linux would not mount the input.
    #[error("the root directory cannot be read ({0}): Linux would not mount this image")]
    RootUnreadable(FsError),
    /// The output could not be written.
    #[error("writing the image: {0}")]
    Write(#[from] io::Error),
    /// The output geometry cannot hold a node (erase size too small).
    #[error("{0}")]
    Geometry(String),
    /// A worker thread failed (a bug).
    #[error("internal error: {0}")]
    Internal(String),
}

/// The smallest erase size the output may have (the scan's own minimum).
const MIN_ERASE: u32 = 8192;
/// Work items compressed per parallel round.
const ROUND: usize = 512;

/// One unit of output, in write order.
enum Item {
    /// A node copied from the input (byte-swapped when the byte order changes).
    Copy { offset: u32, rec: u32 },
    /// A data node's visible ranges, rewritten.
    Data {
        tmpl: InodeNode,
        dn: DataNode,
        ranges: Vec<(u64, u64)>,
    },
    /// An inode node without data (or with a raw payload: symlink target).
    Meta { node: InodeNode, payload: Vec<u8> },
    /// A directory entry written anew.
    Dirent {
        pino: u32,
        ino: u32,
        dtype: u8,
        name: Vec<u8>,
    },
    /// An xattr datum.
    Datum {
        xid: u32,
        prefix: u8,
        name: Vec<u8>,
        value: Vec<u8>,
    },
    /// An xattr reference.
    Xref { ino: u32, xid: u32, xseqno: u32 },
}

/// An item made ready by a worker.
enum Ready {
    /// Finished node bytes and their summary record size.
    Node(Vec<u8>, u32),
    /// Pieces of rewritten data: template, then (file offset, compressed) in order.
    Pieces(InodeNode, Vec<(u32, Compressed)>),
    /// A node with a version still to assign (inode or dirent, by owner inode).
    Versioned(Item),
}

/// Converts the filesystem `fs` into `out`. See the module documentation.
pub fn convert<W: Write>(
    fs: &Fs,
    cfg: &ConvertConfig,
    out: W,
) -> Result<(W, ConvertReport), ConvertError> {
    let lc = cfg.layout;
    if lc.erase_size < MIN_ERASE || lc.erase_size % 4 != 0 {
        return Err(ConvertError::Geometry(format!(
            "erase size 0x{:x}: the output needs a multiple of 4 of at least 0x{MIN_ERASE:x}",
            lc.erase_size
        )));
    }
    if cfg.page_size < 512 || cfg.page_size > lc.erase_size / 2 {
        return Err(ConvertError::Geometry(format!(
            "page size {} must be at least 512 and at most half the erase size",
            cfg.page_size
        )));
    }
    let mut report = ConvertReport::default();
    let plan = Planner::new(fs, cfg).plan(&mut report)?;
    let threads = if cfg.threads == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        cfg.threads
    };
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("jffs2-convert-{i}"))
        .build()
        .map_err(|e| ConvertError::Internal(e.to_string()))?;

    let mut w = BlockWriter::new(out, lc);
    let mut versions: HashMap<u32, u32> = plan.next_version;
    let mut buf = Vec::new();
    let worker = Worker { fs, cfg };
    for round in plan.items.chunks(ROUND) {
        let ready: Vec<Ready> =
            pool.install(|| round.par_iter().map(|it| worker.ready(it)).collect());
        for (r, it) in ready.into_iter().zip(round) {
            match r {
                Ready::Node(bytes, rec) => {
                    match it {
                        Item::Copy { .. } => report.copied += 1,
                        Item::Data { .. } => {
                            report.copied += 1;
                            report.kept_undecodable += 1;
                        }
                        _ => report.rewritten += 1,
                    }
                    emit(&mut w, &bytes, rec, &mut report)?;
                }
                Ready::Pieces(tmpl, pieces) => {
                    for (ofs, c) in pieces {
                        let version = next(&mut versions, tmpl.ino);
                        let node = InodeNode {
                            version,
                            offset: ofs,
                            dsize: c.consumed as u32,
                            compr: c.compr,
                            ..tmpl.clone()
                        };
                        buf.clear();
                        node.encode(lc.endian, &c.data, &mut buf);
                        report.rewritten += 1;
                        emit(&mut w, &buf, 18, &mut report)?;
                    }
                }
                Ready::Versioned(item) => {
                    buf.clear();
                    let rec = match item {
                        Item::Meta { node, payload } => {
                            let version = next(&mut versions, node.ino);
                            InodeNode { version, ..node }.encode(lc.endian, &payload, &mut buf);
                            18
                        }
                        Item::Dirent {
                            pino,
                            ino,
                            dtype,
                            name,
                        } => {
                            let version = next(&mut versions, pino);
                            DirentNode {
                                pino,
                                version,
                                ino,
                                mctime: 0,
                                dtype,
                                ..Default::default()
                            }
                            .encode(lc.endian, &name, &mut buf);
                            record_size(NodeKind::Dirent, name.len())
                        }
                        _ => return Err(ConvertError::Internal("unversioned item".into())),
                    };
                    report.rewritten += 1;
                    emit(&mut w, &buf, rec, &mut report)?;
                }
            }
        }
    }
    let (out, size) = w.finish(cfg.pad)?;
    report.image_size = size;
    Ok((out, report))
}

fn next(versions: &mut HashMap<u32, u32>, ino: u32) -> u32 {
    let v = versions.entry(ino).or_insert(1);
    let out = *v;
    *v = v.saturating_add(1);
    out
}

fn emit<W: Write>(
    w: &mut BlockWriter<W>,
    node: &[u8],
    rec: u32,
    report: &mut ConvertReport,
) -> io::Result<()> {
    w.prepare(node.len() as u32, rec)?;
    w.write_node(node)?;
    report.node_bytes += node.len() as u64;
    Ok(())
}

/// The items to write, and each inode's first free version.
struct Plan {
    items: Vec<Item>,
    next_version: HashMap<u32, u32>,
}

struct Planner<'f, 'a> {
    fs: &'f Fs<'a>,
    cfg: &'f ConvertConfig,
    max_node: u32,
}

impl<'f, 'a> Planner<'f, 'a> {
    fn new(fs: &'f Fs<'a>, cfg: &'f ConvertConfig) -> Self {
        let lc = cfg.layout;
        // Room in an empty output block, less a summary's frame and one record.
        let mut max_node = lc.erase_size - lc.cleanmarker.unwrap_or(0);
        if lc.summary {
            max_node = max_node.saturating_sub(64);
        }
        Planner { fs, cfg, max_node }
    }

    fn plan(&self, report: &mut ConvertReport) -> Result<Plan, ConvertError> {
        // The inodes Linux shows: everything reachable from the root.
        let root = self
            .fs
            .read_inode(1)
            .map_err(ConvertError::RootUnreadable)?;
        let mut shown: BTreeMap<u32, Inode> = BTreeMap::new();
        let mut dents: BTreeMap<u32, Vec<crate::fs::Dirent>> = BTreeMap::new();
        let mut queue: VecDeque<(u32, Vec<u8>)> = VecDeque::new();
        queue.push_back((1, Vec::new()));
        shown.insert(1, root);
        while let Some((dir, path)) = queue.pop_front() {
            let Some(d) = shown.get(&dir) else { continue };
            if d.kind != InodeKind::Dir {
                continue;
            }
            let mut kept = Vec::new();
            for de in d.dents.clone() {
                let mut p = path.clone();
                p.push(b'/');
                p.extend_from_slice(&de.name);
                if shown.contains_key(&de.ino) {
                    kept.push(de);
                    continue;
                }
                match self.fs.read_inode(de.ino) {
                    Ok(i) => {
                        let is_dir = i.kind == InodeKind::Dir;
                        shown.insert(de.ino, i);
                        kept.push(de.clone());
                        if is_dir {
                            queue.push_back((de.ino, p));
                        }
                    }
                    Err(e) => report.dropped.push(Dropped {
                        ino: de.ino,
                        path: Some(p),
                        what: format!("the entry and its inode: Linux cannot read it ({e})"),
                    }),
                }
            }
            dents.insert(dir, kept);
        }
        for ino in self.fs.live_inodes() {
            if !shown.contains_key(&ino) && !report.dropped.iter().any(|d| d.ino == ino) {
                report.dropped.push(Dropped {
                    ino,
                    path: None,
                    what: "the inode: no directory reaches it (Linux never shows it)".into(),
                });
            }
        }

        let mut items = Vec::new();
        let mut next_version = HashMap::new();
        let mut datums: HashMap<(u8, Vec<u8>, Vec<u8>), u32> = HashMap::new();
        let mut xseqno = 0u32;
        for (&ino, inode) in &shown {
            report.inodes += 1;
            next_version.insert(ino, inode.highest_version.saturating_add(1));
            match inode.kind {
                InodeKind::Dir => self.plan_dir(inode, &dents, &mut items, report),
                InodeKind::File => self.plan_file(inode, &mut items),
                _ => self.plan_special(inode, &mut items),
            }
            self.plan_xattrs(inode, &mut items, &mut datums, &mut xseqno, report);
        }
        Ok(Plan {
            items,
            next_version,
        })
    }

    /// The attributes of `inode` in a node template (version set later).
    fn template(&self, inode: &Inode) -> InodeNode {
        InodeNode {
            ino: inode.ino,
            mode: inode.mode,
            uid: inode.uid as u16,
            gid: inode.gid as u16,
            isize: u32::try_from(inode.size).unwrap_or(u32::MAX),
            atime: inode.atime,
            mtime: inode.mtime,
            ctime: inode.ctime,
            ..Default::default()
        }
    }

    fn plan_dir(
        &self,
        inode: &Inode,
        dents: &BTreeMap<u32, Vec<crate::fs::Dirent>>,
        items: &mut Vec<Item>,
        report: &mut ConvertReport,
    ) {
        let kept = dents.get(&inode.ino).map(Vec::as_slice).unwrap_or(&[]);
        let newest_dent = kept.iter().map(|d| d.version).max().unwrap_or(0);
        let latest = inode.latest.and_then(|l| self.fs.scan().refs.get(l));
        match latest {
            // The directory's own node is newer than every entry kept: copied, its times
            // stay in force (§6.4).
            Some(r) if inode.version > newest_dent && self.copyable(r.offset).is_some() => items
                .push(Item::Copy {
                    offset: r.offset,
                    rec: 18,
                }),
            None if inode.faked && inode.ino == 1 => {}
            _ => items.push(Item::Meta {
                node: self.template(inode),
                payload: Vec::new(),
            }),
        }
        for de in kept {
            report.dirents += 1;
            if self.copyable(de.offset).is_some() {
                let rec = record_size(NodeKind::Dirent, de.name.len());
                items.push(Item::Copy {
                    offset: de.offset,
                    rec,
                });
            } else {
                items.push(Item::Dirent {
                    pino: inode.ino,
                    ino: de.ino,
                    dtype: de.dtype,
                    name: de.name.clone(),
                });
            }
        }
    }

    fn plan_file(&self, inode: &Inode, items: &mut Vec<Item>) {
        let page = u64::from(self.cfg.page_size);
        // The visible ranges of each node, in file order.
        let mut ranges: BTreeMap<usize, Vec<(u64, u64)>> = BTreeMap::new();
        for f in &inode.frags {
            let r = ranges.entry(f.node).or_default();
            match r.last_mut() {
                Some(last) if last.1 == f.start => last.1 = f.end,
                _ => r.push((f.start, f.end)),
            }
        }
        let mut order: Vec<(u64, usize)> = ranges.iter().map(|(&n, r)| (r[0].0, n)).collect();
        order.sort_unstable();
        let latest = inode.latest;
        let mut latest_copied = false;
        let first = items.len();
        let tmpl = self.template(inode);
        for (_, n) in order {
            let Some(dn) = inode.nodes.get(n) else {
                continue;
            };
            let r = &ranges[&n];
            let whole = r.len() == 1 && r[0] == (u64::from(dn.ofs), dn.end());
            let crosses = dn.size > 0 && u64::from(dn.ofs) / page != (dn.end() - 1) / page;
            let copy = whole
                && !self.cfg.recompress
                && (!crosses || dn.compr == COMPR_ZERO)
                && self.copyable(dn.offset).is_some();
            if copy {
                latest_copied |= latest == Some(dn.node);
                items.push(Item::Copy {
                    offset: dn.offset,
                    rec: 18,
                });
            } else {
                items.push(Item::Data {
                    tmpl: tmpl.clone(),
                    dn: dn.clone(),
                    ranges: r.clone(),
                });
            }
        }
        let rewrites = items[first..]
            .iter()
            .any(|it| matches!(it, Item::Data { .. }));
        if !latest_copied && !rewrites {
            // Nothing rewritten carries the current attributes: the metadata node, when it
            // is the latest, is copied; otherwise they go last in a new metadata node. (A
            // copied metadata node below rewritten data would no longer be the latest, and
            // Linux would drop it, §6.4.)
            let meta_latest = latest.is_some_and(|l| !inode.nodes.iter().any(|d| d.node == l));
            match latest.and_then(|l| self.fs.scan().refs.get(l)) {
                Some(r) if meta_latest && self.copyable(r.offset).is_some() => {
                    items.push(Item::Copy {
                        offset: r.offset,
                        rec: 18,
                    })
                }
                _ => items.push(Item::Meta {
                    node: tmpl,
                    payload: Vec::new(),
                }),
            }
        }
    }

    /// Symlinks, devices, FIFOs, sockets: the latest node, copied when it can be.
    fn plan_special(&self, inode: &Inode, items: &mut Vec<Item>) {
        let latest = inode.latest.and_then(|l| self.fs.scan().refs.get(l));
        if let Some(r) = latest {
            if self.copyable(r.offset).is_some() {
                items.push(Item::Copy {
                    offset: r.offset,
                    rec: 18,
                });
                return;
            }
        }
        let mut node = self.template(inode);
        let payload = match inode.kind {
            InodeKind::Symlink => inode.target.clone().unwrap_or_default(),
            InodeKind::Char | InodeKind::Block => {
                let (major, minor) = inode.rdev.unwrap_or((0, 0));
                encode_dev(self.cfg.layout.endian, major, minor)
            }
            _ => Vec::new(),
        };
        node.dsize = payload.len() as u32;
        node.compr = COMPR_NONE;
        if inode.kind == InodeKind::Symlink {
            node.isize = payload.len() as u32;
        }
        items.push(Item::Meta { node, payload });
    }

    fn plan_xattrs(
        &self,
        inode: &Inode,
        items: &mut Vec<Item>,
        datums: &mut HashMap<(u8, Vec<u8>, Vec<u8>), u32>,
        xseqno: &mut u32,
        report: &mut ConvertReport,
    ) {
        let from = self.fs.scan().geometry.endian;
        let to = self.cfg.layout.endian;
        for x in self.fs.raw_xattrs(inode) {
            let value =
                if from != to && matches!(x.xprefix, xprefix::ACL_ACCESS | xprefix::ACL_DEFAULT) {
                    swap_acl(&x.value, from)
                } else {
                    x.value
                };
            let key = (x.xprefix, x.name, value);
            let xid = match datums.get(&key) {
                Some(&xid) => xid,
                None => {
                    let xid = datums.len() as u32 + 1;
                    datums.insert(key.clone(), xid);
                    items.push(Item::Datum {
                        xid,
                        prefix: key.0,
                        name: key.1,
                        value: key.2,
                    });
                    report.xattrs += 1;
                    xid
                }
            };
            *xseqno = xseqno.saturating_add(2);
            items.push(Item::Xref {
                ino: inode.ino,
                xid,
                xseqno: *xseqno,
            });
            report.xattrs += 1;
        }
    }

    /// The header of the node at `offset` when it can be copied: whole in the image,
    /// ACCURATE, header CRC right, small enough for an output block.
    fn copyable(&self, offset: u32) -> Option<NodeHeader> {
        let img = self.fs.image();
        let e = self.fs.scan().geometry.endian;
        let b = img.get(offset as usize..)?;
        let h = NodeHeader::decode(b, e, u64::from(offset)).ok()?;
        let ok = h.crc_ok(e)
            && h.nodetype & NODE_ACCURATE != 0
            && h.totlen <= self.max_node
            && (h.totlen as usize) <= b.len();
        ok.then_some(h)
    }
}

/// The 2- or 4-byte device payload Linux writes (`jffs2_encode_dev`, §1.4).
fn encode_dev(e: Endian, major: u32, minor: u32) -> Vec<u8> {
    if major < 256 && minor < 256 {
        e.u16_bytes(((major << 8) | minor) as u16).to_vec()
    } else {
        let v = (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12);
        e.u32_bytes(v).to_vec()
    }
}

struct Worker<'f, 'a> {
    fs: &'f Fs<'a>,
    cfg: &'f ConvertConfig,
}

impl Worker<'_, '_> {
    fn ready(&self, it: &Item) -> Ready {
        let to = self.cfg.layout.endian;
        match it {
            Item::Copy { offset, rec } => Ready::Node(self.copy(*offset), *rec),
            Item::Data { tmpl, dn, ranges } => self.data(tmpl, dn, ranges),
            Item::Meta { node, payload } => Ready::Versioned(Item::Meta {
                node: node.clone(),
                payload: payload.clone(),
            }),
            Item::Dirent {
                pino,
                ino,
                dtype,
                name,
            } => Ready::Versioned(Item::Dirent {
                pino: *pino,
                ino: *ino,
                dtype: *dtype,
                name: name.clone(),
            }),
            Item::Datum {
                xid,
                prefix,
                name,
                value,
            } => {
                let mut b = Vec::with_capacity(XATTR_SIZE + name.len() + 1 + value.len());
                XattrNode {
                    xid: *xid,
                    version: 1,
                    xprefix: *prefix,
                    ..Default::default()
                }
                .encode(to, name, value, &mut b);
                Ready::Node(b, record_size(NodeKind::Xattr, 0))
            }
            Item::Xref { ino, xid, xseqno } => {
                let mut b = Vec::with_capacity(XREF_SIZE);
                XrefNode {
                    ino: *ino,
                    xid: *xid,
                    xseqno: *xseqno,
                    ..Default::default()
                }
                .encode(to, &mut b);
                Ready::Node(b, record_size(NodeKind::Xref, 0))
            }
        }
    }

    /// The node at `offset`, in the output byte order (the planner checked it is whole).
    fn copy(&self, offset: u32) -> Vec<u8> {
        let img = self.fs.image();
        let from = self.fs.scan().geometry.endian;
        let to = self.cfg.layout.endian;
        let b = &img[offset as usize..];
        let totlen = from.get_u32(b, 4).unwrap_or(0) as usize;
        let node = &b[..totlen.min(b.len())];
        if from == to {
            node.to_vec()
        } else {
            swap_node(node, from).unwrap_or_else(|| node.to_vec())
        }
    }

    /// The visible ranges of a data node, split at page boundaries and compressed.
    fn data(&self, tmpl: &InodeNode, dn: &DataNode, ranges: &[(u64, u64)]) -> Ready {
        let page = u64::from(self.cfg.page_size);
        let mut pieces = Vec::new();
        if dn.compr == COMPR_ZERO {
            // A hole stays a hole: one ZERO node per visible range.
            for &(s, e) in ranges {
                pieces.push((
                    s as u32,
                    Compressed {
                        compr: COMPR_ZERO,
                        consumed: (e - s) as usize,
                        data: Vec::new(),
                        stats: Default::default(),
                    },
                ));
            }
            return Ready::Pieces(tmpl.clone(), pieces);
        }
        let data = match self.fs.node_data(dn) {
            Ok(NodeData::Bytes(b)) => b,
            Ok(NodeData::Zeros(n)) => vec![0; n as usize],
            // Linux cannot read this node's data either: keep it as it is.
            Err(_) => return Ready::Node(self.copy(dn.offset), 18),
        };
        for &(s, e) in ranges {
            let mut at = s;
            while at < e {
                let end = ((at / page + 1) * page).min(e);
                let lo = (at - u64::from(dn.ofs)) as usize;
                let hi = (end - u64::from(dn.ofs)) as usize;
                let Some(chunk) = data.get(lo..hi) else { break };
                let mut pos = 0;
                while pos < chunk.len() {
                    let c = self
                        .cfg
                        .compressors
                        .compress(&chunk[pos..], chunk.len() - pos);
                    if c.consumed == 0 {
                        break;
                    }
                    let consumed = c.consumed;
                    pieces.push(((at as usize + pos) as u32, c));
                    pos += consumed;
                }
                at = end;
            }
        }
        Ready::Pieces(tmpl.clone(), pieces)
    }
}
