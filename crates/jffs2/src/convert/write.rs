//! The writing side of a conversion: rounds of planned items made ready (one round ahead
//! of the one written) and laid out in the output, with the versions they take.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::thread::ScopedJoinHandle;

use rayon::prelude::*;

use super::{
    Batch, ConvertConfig, ConvertError, ConvertReport, Item, Planner, ProgressFn, Ready, Worker,
    INODE_REC, ROUND, ROUND_BYTES,
};
use crate::compress::{Compressed, COMPR_NONE, COMPR_ZERO};
use crate::format::{DirentNode, InodeNode, INODE_SIZE, MIN_DATA_LEN};
use crate::fs::{DataNode, Fs, NodeData};
use crate::layout::{record_for, BlockWriter};

/// A round and its items' ready forms.
type Prepared<'a> = (Vec<Item>, Vec<Ready<'a>>);

/// Plans on a thread of its own (`planner`, on `pool`) while the rounds it sends are made
/// ready and written to `writer`; the planning's part of the report is taken at the end.
/// `threads`: the pool's size, for the error if a thread cannot be started.
pub(super) fn write_rounds<W: Write>(
    planner: &Planner<'_, '_>,
    pool: &rayon::ThreadPool,
    writer: &mut Writer<'_, '_, W>,
    progress: Option<ProgressFn<'_>>,
    total: u64,
    threads: usize,
) -> Result<(), ConvertError> {
    let refused = |source: io::Error| ConvertError::Threads { threads, source };
    let worker = Worker {
        fs: planner.fs,
        cfg: planner.cfg,
    };
    let prepare = |round: Vec<Item>| -> (Vec<Item>, Vec<Ready>) {
        let ready = pool.install(|| round.par_iter().map(|it| worker.ready(it)).collect());
        (round, ready)
    };
    let (tx, rx) = std::sync::mpsc::sync_channel::<Batch>(16);
    std::thread::scope(|scope| -> Result<(), ConvertError> {
        // Inodes are read and their items planned (on the pool; xattrs in order) while
        // earlier ones are compressed and written: round k+1 is made ready while round k
        // is written.
        let planning = std::thread::Builder::new()
            .name("jffs2-convert-plan".into())
            .spawn_scoped(scope, move || planner.stream(pool, &tx))
            .map_err(refused)?;
        // Owned here: if writing fails, the receiver goes at the return and the planning
        // thread's next send fails, so the scope's join does not wait on it forever.
        let mut incoming = Incoming {
            rx,
            pending: VecDeque::new(),
            closed: false,
            versions: Vec::new(),
            inodes: 0,
        };
        // A round with work to do is made ready on a thread (and the pool) of its own;
        // one of nodes copied in the input's byte order only (nothing to compute) is
        // made ready as it is written, without the round trip.
        let start = |r: Vec<Item>| -> Result<_, ConvertError> {
            Ok(if r.iter().any(|it| worker.heavy(it)) {
                Ahead::Thread(
                    std::thread::Builder::new()
                        .name("jffs2-convert-round".into())
                        .spawn_scoped(scope, move || prepare(r))
                        .map_err(refused)?,
                )
            } else {
                Ahead::Inline(r)
            })
        };
        let mut ahead = incoming.next_round().map(start).transpose()?;
        while let Some(a) = ahead.take() {
            if let Some(p) = progress {
                p(incoming.inodes.min(total), total);
            }
            let (round, ready) = joined(a, &worker)?;
            ahead = incoming.next_round().map(start).transpose()?;
            writer.received(&mut incoming.versions);
            writer.write_round(&round, ready)?;
        }
        writer.planned(planning.join())
    })
}

/// The round `a` made ready: joined from its thread, or made ready here (nothing to
/// compute).
fn joined<'a>(
    a: Ahead<ScopedJoinHandle<'_, Prepared<'a>>>,
    worker: &Worker<'_, 'a>,
) -> Result<Prepared<'a>, ConvertError> {
    Ok(match a {
        Ahead::Thread(h) => match h.join() {
            Ok(v) => v,
            Err(_) => return Err(ConvertError::Internal("a compression thread failed".into())),
        },
        Ahead::Inline(r) => {
            let ready = r.iter().map(|it| worker.ready(it)).collect();
            (r, ready)
        }
    })
}

/// The writing side's state: the output being laid out, the versions given, the report.
pub(super) struct Writer<'f, 'a, W: Write> {
    fs: &'f Fs<'a>,
    cfg: &'f ConvertConfig,
    w: BlockWriter<W>,
    /// Each inode's first free version as planned (its items before any fresh version).
    first_version: HashMap<u32, u32>,
    /// Each inode's next free version.
    versions: HashMap<u32, u32>,
    /// Nodes being encoded.
    buf: Vec<u8>,
    report: ConvertReport,
}

impl<'f, 'a, W: Write> Writer<'f, 'a, W> {
    /// A writer laying out the conversion of `fs` with `w`.
    pub(super) fn new(fs: &'f Fs<'a>, cfg: &'f ConvertConfig, w: BlockWriter<W>) -> Self {
        Writer {
            fs,
            cfg,
            w,
            first_version: HashMap::new(),
            versions: HashMap::new(),
            buf: Vec::new(),
            report: ConvertReport::default(),
        }
    }

    /// Takes the first free versions received with the items (`received` left empty).
    fn received(&mut self, received: &mut Vec<(u32, u32)>) {
        for (ino, v) in received.drain(..) {
            self.first_version.insert(ino, v);
            self.versions.insert(ino, v);
        }
    }

    /// Writes a round in order; before a movable node that does not fit the block, later
    /// movable nodes of the round fill its room ([`Writer::fill`]).
    fn write_round(&mut self, round: &[Item], ready: Vec<Ready<'_>>) -> Result<(), ConvertError> {
        let mut units = units(round, ready);
        for i in 0..units.len() {
            let Some((r, it)) = units.get_mut(i).and_then(Option::take) else {
                continue;
            };
            if let Some((len, rec)) = movable(&r) {
                let (_, rest) = units.split_at_mut(i + 1);
                self.fill(rest, len, rec)?;
            }
            self.write_ready(r, it)?;
        }
        Ok(())
    }

    /// Before a node of `need` bytes that does not fit the current block: fills the
    /// block's room with later movable nodes of the round (the largest that fits, again and
    /// again) for as long as the room is more than the kernel would count as wasted. The
    /// kernel does not care where a node lies, only about versions: copies keep theirs, and
    /// a rewritten chunk takes its fresh version when written, still above every node of
    /// the input it supersedes and below its inode's closing metadata node, which comes
    /// later. Without this, the room would be left as dirt or filled by splitting a data
    /// node (compressed again on the writing thread). `rest`: the round's units after the
    /// current one (`None` once written).
    fn fill(
        &mut self,
        rest: &mut [Option<(Ready<'_>, &Item)>],
        need: usize,
        rec: u32,
    ) -> Result<(), ConvertError> {
        loop {
            let room = self.w.room(rec) as usize;
            if need <= room || room < SPLIT_MIN {
                return Ok(());
            }
            let mut best: Option<(usize, usize)> = None;
            for (j, u) in rest.iter().enumerate() {
                if let Some((len, rec_j)) = u.as_ref().and_then(|(r, _)| movable(r)) {
                    if len <= self.w.room(rec_j) as usize && best.is_none_or(|(_, l)| len > l) {
                        best = Some((j, len));
                    }
                }
            }
            let taken = best
                .and_then(|(j, _)| rest.get_mut(j))
                .and_then(Option::take);
            let Some((r, it)) = taken else {
                return Ok(());
            };
            self.write_ready(r, it)?;
        }
    }

    /// Writes one item's ready form `r` (`it`: the item, for the report).
    fn write_ready(&mut self, r: Ready<'_>, it: &Item) -> Result<(), ConvertError> {
        match r {
            Ready::Node(bytes, rec) => {
                match it {
                    Item::Copy { .. } => self.report.copied += 1,
                    Item::Data { .. } => {
                        self.report.copied += 1;
                        self.report.kept_undecodable += 1;
                    }
                    _ => self.report.rewritten += 1,
                }
                emit(&mut self.w, &bytes, rec, &mut self.report)?;
            }
            Ready::DataCopy(bytes, dn, tmpl) => self.data_copy(&bytes, &dn, &tmpl)?,
            Ready::Pieces(tmpl, chunks) => {
                for chunk in &chunks {
                    self.chunk(&tmpl, chunk)?;
                }
            }
            Ready::LastMeta(copy, node) => self.last_meta(copy, node)?,
            Ready::Versioned(item) => self.versioned(item)?,
        }
        Ok(())
    }

    /// A copied data node: written as it is if it fits the block (or the room is too small
    /// to split into), else rewritten to fill the block.
    fn data_copy(
        &mut self,
        bytes: &[u8],
        dn: &DataNode,
        tmpl: &InodeNode,
    ) -> Result<(), ConvertError> {
        let room = self.w.room(INODE_REC) as usize;
        if bytes.len() <= room || room < SPLIT_MIN {
            self.report.copied += 1;
            emit(&mut self.w, bytes, INODE_REC, &mut self.report)?;
            return Ok(());
        }
        // It would leave a block tail Linux counts as dirt: rewritten instead,
        // its data filling the block, with fresh versions and the inode's
        // current attributes. (Not pieces of its own version: Linux compares
        // a node with its neighbours in the version tree even when they do not
        // overlap, and drops one of two equal versions — the kernel test of
        // tests/convert_kernel.rs lost data that way.)
        let data = match self.fs.node_data(dn) {
            Ok(NodeData::Bytes(b)) => Some(b),
            Ok(NodeData::Zeros(_)) => None,
            Err(_) => {
                self.report.copied += 1;
                self.report.kept_undecodable += 1;
                emit(&mut self.w, bytes, INODE_REC, &mut self.report)?;
                return Ok(());
            }
        };
        let chunk = Chunk {
            ofs: dn.ofs,
            len: dn.size,
            data,
            spec: None,
            spec_crc: 0,
        };
        self.chunk(tmpl, &chunk)
    }

    /// Writes a chunk of rewritten data, its nodes with fresh versions.
    fn chunk(&mut self, tmpl: &InodeNode, chunk: &Chunk) -> Result<(), ConvertError> {
        let versions = &mut self.versions;
        let mut fresh = |ino: u32| next(versions, ino);
        write_chunk(
            &mut self.w,
            self.cfg,
            tmpl,
            chunk,
            &mut fresh,
            &mut self.buf,
            &mut self.report,
        )
    }

    /// The closing metadata node: its copy if nothing of the inode got a fresh version,
    /// else `node` with the next version.
    fn last_meta(
        &mut self,
        copy: Option<Cow<'_, [u8]>>,
        node: InodeNode,
    ) -> Result<(), ConvertError> {
        let untouched = self.versions.get(&node.ino) == self.first_version.get(&node.ino);
        match copy {
            Some(bytes) if untouched => {
                self.report.copied += 1;
                emit(&mut self.w, &bytes, INODE_REC, &mut self.report)?;
            }
            _ => {
                let version = next(&mut self.versions, node.ino);
                self.buf.clear();
                InodeNode { version, ..node }.encode(self.cfg.layout.endian, &[], &mut self.buf);
                self.report.rewritten += 1;
                emit(&mut self.w, &self.buf, INODE_REC, &mut self.report)?;
            }
        }
        Ok(())
    }

    /// An inode or dirent node written anew, with its owner's next version.
    fn versioned(&mut self, item: Item) -> Result<(), ConvertError> {
        let endian = self.cfg.layout.endian;
        let buf = &mut self.buf;
        buf.clear();
        let rec = match item {
            Item::Meta { node, payload } => {
                let version = next(&mut self.versions, node.ino);
                InodeNode { version, ..*node }.encode(endian, &payload, buf);
                INODE_REC
            }
            Item::Dirent {
                pino,
                ino,
                dtype,
                name,
            } => {
                let version = next(&mut self.versions, pino);
                DirentNode {
                    pino,
                    version,
                    ino,
                    mctime: 0,
                    dtype,
                    ..Default::default()
                }
                .encode(endian, &name, buf);
                record_for(buf, endian, 0).map_or(0, |r| r.size() as u32)
            }
            _ => return Err(ConvertError::Internal("unversioned item".into())),
        };
        self.report.rewritten += 1;
        emit(&mut self.w, &self.buf, rec, &mut self.report)?;
        Ok(())
    }

    /// Takes the planning thread's part of the report (inodes, entries, xattrs, drops),
    /// or its error.
    fn planned(
        &mut self,
        joined: std::thread::Result<Result<ConvertReport, ConvertError>>,
    ) -> Result<(), ConvertError> {
        match joined {
            Ok(Ok(r)) => {
                self.report.dropped = r.dropped;
                self.report.inodes = r.inodes;
                self.report.dirents = r.dirents;
                self.report.xattrs += r.xattrs;
            }
            Ok(Err(e)) => return Err(e),
            Err(_) => return Err(ConvertError::Internal("the planning thread failed".into())),
        }
        Ok(())
    }

    /// Closes the output with its end padding, then OpenWrt's end marker if the input
    /// ended with one (at the start of the erase block after the padded output): the
    /// output and the report.
    pub(super) fn finish(self) -> Result<(W, ConvertReport), ConvertError> {
        let Writer {
            fs, cfg, w, report, ..
        } = self;
        let mut report = report;
        let lc = cfg.layout;
        let (mut out, mut size) = w.finish(cfg.pad)?;
        if fs.scan().end_marker.is_some() {
            let es = u64::from(lc.erase_size);
            let at = size.div_ceil(es) * es;
            let ff = vec![0xFFu8; (at - size) as usize];
            out.write_all(&ff)?;
            out.write_all(&crate::scan::END_MARKER)?;
            size = at + crate::scan::END_MARKER.len() as u64;
        }
        report.image_size = size;
        Ok((out, report))
    }
}

/// The next round, being made ready.
enum Ahead<T> {
    /// On a thread: its items and their ready forms.
    Thread(T),
    /// Nothing to compute: made ready when written.
    Inline(Vec<Item>),
}

/// The writing side's end of the planning: items received, not yet in a round.
struct Incoming {
    rx: std::sync::mpsc::Receiver<Batch>,
    pending: VecDeque<Item>,
    /// No more will come.
    closed: bool,
    /// First free versions received, for the writer's tables.
    versions: Vec<(u32, u32)>,
    /// Inodes received.
    inodes: u64,
}

impl Incoming {
    /// The next round, receiving planned items until one is complete.
    fn next_round(&mut self) -> Option<Vec<Item>> {
        loop {
            if let Some(n) = round_len(&self.pending, self.closed) {
                return Some(self.pending.drain(..n).collect());
            }
            if self.closed {
                return None;
            }
            match self.rx.recv() {
                Ok(b) => {
                    self.versions.extend(b.versions);
                    self.pending.extend(b.items);
                    self.inodes += b.inodes;
                }
                Err(_) => self.closed = true,
            }
        }
    }
}

/// How many of the `pending` items make the next round: at most [`ROUND`] items and about
/// [`ROUND_BYTES`] of data to decode; `None` while more items may come and neither limit is
/// reached (`closed`: no more will come).
fn round_len(pending: &VecDeque<Item>, closed: bool) -> Option<usize> {
    let mut bytes = 0u64;
    for (i, it) in pending.iter().enumerate() {
        bytes += match it {
            // Decompressed, split into pages, each compressed again.
            Item::Data { dn, .. } => u64::from(dn.size.min(crate::fs::KMALLOC_MAX)) * 3,
            Item::Meta { payload, .. } => payload.len() as u64,
            Item::Datum { value, .. } => value.len() as u64,
            // Borrowed from the image (a split at a block end is done by the writer, one
            // node at a time).
            _ => 0,
        };
        if i + 1 >= ROUND || bytes >= ROUND_BYTES {
            return Some(i + 1);
        }
    }
    (closed && !pending.is_empty()).then_some(pending.len())
}

/// The round's ready forms as units of output, each with its item: rewritten data one
/// unit per chunk, so that each chunk can fill a block tail on its own.
fn units<'r, 'a>(round: &'r [Item], ready: Vec<Ready<'a>>) -> Vec<Option<(Ready<'a>, &'r Item)>> {
    let mut out = Vec::with_capacity(ready.len());
    for (r, it) in ready.into_iter().zip(round) {
        match r {
            Ready::Pieces(tmpl, chunks) if chunks.len() > 1 => out.extend(
                chunks
                    .into_iter()
                    .map(|c| Some((Ready::Pieces(tmpl.clone(), vec![c]), it))),
            ),
            r => out.push(Some((r, it))),
        }
    }
    out
}

/// Size and summary record size of a finished node whose place in the output is free: a
/// copy that keeps its version (or a new xattr node), or one chunk of rewritten data
/// compressed whole on the pool (or a hole), which takes a fresh version when written.
fn movable(r: &Ready) -> Option<(usize, u32)> {
    match r {
        Ready::Node(b, rec) => Some((b.len(), *rec)),
        Ready::DataCopy(b, ..) => Some((b.len(), INODE_REC)),
        Ready::Pieces(_, chunks) => match chunks.as_slice() {
            [c] => match (&c.data, &c.spec) {
                (None, _) => Some((INODE_SIZE, INODE_REC)),
                (Some(_), Some(s)) if s.consumed == c.len as usize => {
                    Some((INODE_SIZE + s.data.len(), INODE_REC))
                }
                _ => None,
            },
            _ => None,
        },
        _ => None,
    }
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
    if node.is_empty() {
        return Ok(());
    }
    w.prepare(node.len() as u32, rec)?;
    w.write_node(node)?;
    report.node_bytes += node.len() as u64;
    Ok(())
}

/// Room below which a block is closed rather than a data node split into it: the kernel
/// counts a tail of up to 196 bytes (`ISDIRTY`, §1.10) as wasted, a larger one as dirt.
const SPLIT_MIN: usize = INODE_SIZE + MIN_DATA_LEN as usize;

/// Block tails smaller than this (less the node header) are filled with uncompressed data
/// when a data node is split there.
const RAW_TAIL: usize = 1024;

/// A range of file data to write as one or more data nodes.
pub(super) struct Chunk {
    /// File offset.
    pub(super) ofs: u32,
    /// Length.
    pub(super) len: u32,
    /// The bytes; `None` for a hole (ZERO nodes).
    pub(super) data: Option<Vec<u8>>,
    /// The whole chunk compressed in advance (used when it fits).
    pub(super) spec: Option<Compressed>,
    /// The data CRC of `spec`'s bytes, computed with it.
    pub(super) spec_crc: u32,
}

/// Writes a chunk: its compression made on the pool, whole, if it fits the block's room;
/// otherwise (nothing else of the round fitted the room) as mkfs.jffs2 writes a page
/// (§3.6.3 of the mtd-utils notes): a node as large as the room allows, the rest in the
/// next block. `version` gives each node's version (fresh ones, or the copied node's own).
fn write_chunk<W: Write>(
    w: &mut BlockWriter<W>,
    cfg: &ConvertConfig,
    tmpl: &InodeNode,
    chunk: &Chunk,
    version: &mut dyn FnMut(u32) -> u32,
    buf: &mut Vec<u8>,
    report: &mut ConvertReport,
) -> Result<(), ConvertError> {
    let e = cfg.layout.endian;
    let Some(data) = &chunk.data else {
        // A hole: one ZERO node, no payload.
        w.prepare(INODE_SIZE as u32, INODE_REC)?;
        let node = InodeNode {
            version: version(tmpl.ino),
            offset: chunk.ofs,
            dsize: chunk.len,
            compr: COMPR_ZERO,
            ..tmpl.clone()
        };
        buf.clear();
        node.encode(e, &[], buf);
        report.rewritten += 1;
        return emit(w, buf, INODE_REC, report).map_err(ConvertError::from);
    };
    let len = data.len();
    let mut pos = 0usize;
    let mut spec = chunk.spec.as_ref();
    while pos < len {
        w.prepare(SPLIT_MIN as u32, INODE_REC)?;
        let room = (w.room(INODE_REC) as usize).saturating_sub(INODE_SIZE);
        let space = room.min(len - pos);
        let fresh;
        let mut crc = None;
        let c = match spec.take() {
            // Compressed on the pool: written whole wherever it fits, even where the page
            // uncompressed would not.
            Some(s) if pos == 0 && s.consumed == len && s.data.len() <= room => {
                crc = Some(chunk.spec_crc);
                s
            }
            // A small block tail is filled with data as it is: compressing "as much as fits"
            // takes zlib many partial flushes (mtd-utils' method, §4.2) on the thread that
            // lays the output out, for a few hundred bytes; the rest of the page is
            // compressed in the next block as usual.
            _ if space < len - pos && space < RAW_TAIL => {
                fresh = Compressed {
                    compr: COMPR_NONE,
                    consumed: space,
                    data: data[pos..pos + space].to_vec(),
                    stats: Default::default(),
                };
                &fresh
            }
            _ => {
                fresh = cfg.compressors.compress(&data[pos..], space);
                &fresh
            }
        };
        if c.consumed == 0 {
            return Err(ConvertError::Internal("compressor consumed nothing".into()));
        }
        let node = InodeNode {
            version: version(tmpl.ino),
            offset: chunk.ofs + pos as u32,
            dsize: c.consumed as u32,
            compr: c.compr,
            ..tmpl.clone()
        };
        buf.clear();
        match crc {
            Some(crc) => node.encode_with_crc(e, &c.data, crc, buf),
            None => node.encode(e, &c.data, buf),
        }
        report.rewritten += 1;
        emit(w, buf, INODE_REC, report)?;
        pos += c.consumed;
    }
    Ok(())
}
