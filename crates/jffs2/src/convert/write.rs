//! The writing side of a conversion: rounds of planned items made ready (one round ahead
//! of the one written) and laid out in the output, with the versions they take.

use std::borrow::Cow;
use std::collections::{HashMap, VecDeque};
use std::io::{self, Write};
use std::thread::ScopedJoinHandle;

use rayon::prelude::*;

use super::{
    emit, fill, movable, next, write_chunk, Ahead, Batch, Chunk, ConvertConfig, ConvertError,
    ConvertReport, Incoming, Item, Planner, ProgressFn, Ready, Worker, INODE_REC, SPLIT_MIN,
};
use crate::format::{DirentNode, InodeNode};
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
    /// movable nodes of the round fill its room ([`fill`]).
    fn write_round(&mut self, round: &[Item], ready: Vec<Ready<'_>>) -> Result<(), ConvertError> {
        let mut ready: Vec<Option<Ready>> = ready.into_iter().map(Some).collect();
        for i in 0..ready.len() {
            let (Some(r), Some(it)) = (ready[i].take(), round.get(i)) else {
                continue;
            };
            if let Some((len, rec)) = movable(&r) {
                let (_, rest) = ready.split_at_mut(i + 1);
                fill(
                    &mut self.w,
                    rest,
                    &round[i + 1..],
                    len,
                    rec,
                    &mut self.report,
                )?;
            }
            self.write_ready(r, it)?;
        }
        Ok(())
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
