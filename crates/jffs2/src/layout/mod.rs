//! The erase-block writer: the one place that decides where nodes go on flash.
//!
//! It reproduces mkfs.jffs2's layout rules exactly (`docs/spec/mtd-utils-spec.md` §3.6): a cleanmarker
//! at the start of every block that receives a node, nodes never crossing a block boundary
//! (the tail of a block is raw 0xFF, never a padding node), 4-byte alignment with 0xFF, and
//! the end-of-image padding of `-p` / `--pad=SIZE` (§3.6.5).
//!
//! With summaries enabled it additionally reserves room at the end of every block for an
//! erase-block summary and writes one for every block that holds nodes, the way the kernel
//! does when it writes (`docs/spec/kernel-jffs2-spec.md` §4.5: the reservation is
//! `PAD(sum_size + record + 40)`). That mode is an extension: mkfs.jffs2 has no summaries.
//!
//! A block that cannot carry a summary — its first node would not leave room for one even in
//! an empty block, or a node has no summary record (an unknown RWCOMPAT_COPY type, which the
//! kernel cannot summarise either, `docs/spec/kernel-jffs2-spec.md` §4.5) — is written without one: it
//! is filled with the plain rules and closed with 0xFF, and the kernel scans it fully at
//! mount. mtd-utils' sumtool aborts ("out of memory") on the first case (`docs/spec/mtd-utils-spec.md`
//! §8 B-13).
//!
//! # Example
//!
//! A writer places each node with [`BlockWriter::prepare`] (cleanmarker at a block start;
//! a node that does not fit moves to the next block) and [`BlockWriter::write_node`]:
//!
//! ```
//! use jffs2::format::{DirentNode, Endian, InodeNode, MAGIC, NODETYPE_CLEANMARKER};
//! use jffs2::layout::{BlockWriter, EndPad, LayoutConfig};
//!
//! let e = Endian::Little;
//! let cfg = LayoutConfig { endian: e, erase_size: 8192, cleanmarker: Some(12), summary: false };
//! let mut w = BlockWriter::new(Vec::new(), cfg);
//!
//! let mut dirent = Vec::new();
//! DirentNode { pino: 1, version: 1, ino: 2, dtype: 8, ..Default::default() }
//!     .encode(e, b"a", &mut dirent); // 41 bytes
//! w.prepare(dirent.len() as u32, 0)?;
//! w.write_node(&dirent)?;
//! assert_eq!(w.offset(), 12 + 44); // the cleanmarker, then the node padded to 4 bytes
//!
//! let mut inode = Vec::new();
//! InodeNode { ino: 2, version: 1, mode: 0o100644, isize: 8100, dsize: 8100, ..Default::default() }
//!     .encode(e, &[0x55; 8100], &mut inode); // 8168 bytes: more than the 8136 left
//! w.prepare(inode.len() as u32, 0)?;
//! w.write_node(&inode)?;
//! assert_eq!(w.offset(), 8192 + 12 + 8168);
//!
//! let (image, size) = w.finish(EndPad::Block)?; // -p: 0xFF to the end of the block
//! assert_eq!((size, image.len()), (16384, 16384));
//! assert!(image[56..8192].iter().all(|&b| b == 0xFF)); // a block tail is raw 0xFF
//! // The second block starts with its cleanmarker.
//! assert_eq!(image[8192..8194], MAGIC.to_le_bytes());
//! assert_eq!(image[8194..8196], NODETYPE_CLEANMARKER.to_le_bytes());
//! # Ok::<(), std::io::Error>(())
//! ```

mod relayout;

use std::io::{self, Write};

pub use relayout::{RelayoutStats, Summarizer, SummarizingWriter};

use crate::format::{
    encode_cleanmarker, pad4, DirentNode, Endian, InodeNode, NodeHeader, NodeKind, SumRecord,
    SummaryNode, XattrNode, DIRENT_SIZE, SUMMARY_MARKER_SIZE, SUMMARY_SIZE,
};
use crate::format::{SUM_DIRENT_SIZE, SUM_INODE_SIZE, SUM_XATTR_SIZE, SUM_XREF_SIZE};

/// Most threads `threads` may ask for (mkfs and convert): far beyond any useful number of
/// cores, low enough that the system can start them (each has a stack of its own, and the
/// pages in flight grow with the count).
pub const MAX_THREADS: usize = 1024;

/// Geometry and options of the layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayoutConfig {
    /// Byte order of the image.
    pub endian: Endian,
    /// Erase-block size in bytes.
    pub erase_size: u32,
    /// Cleanmarker size, or `None` for no cleanmarkers (`-n`, NAND, UBI).
    pub cleanmarker: Option<u32>,
    /// Write an erase-block summary at the end of every block that holds nodes.
    pub summary: bool,
}

impl Default for LayoutConfig {
    /// mkfs.jffs2's defaults: the host's byte order, 64 KiB erase blocks, 12-byte cleanmarkers,
    /// no summaries.
    fn default() -> Self {
        LayoutConfig {
            endian: Endian::host(),
            erase_size: 64 * 1024,
            cleanmarker: Some(12),
            summary: false,
        }
    }
}

/// How the image ends (`docs/spec/mtd-utils-spec.md` §3.6.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EndPad {
    /// The image ends right after the last node (4-byte aligned).
    #[default]
    None,
    /// `-p`: 0xFF up to the end of the current erase block.
    Block,
    /// `--pad=SIZE`: the value as mkfs.jffs2's `strtol` gave it (may be 0 or negative,
    /// which mkfs treats in its own ways, reproduced in [`BlockWriter::finish`]).
    Size(i64),
}

/// Size of the summary frame: header plus marker (`JFFS2_SUMMARY_FRAME_SIZE`).
const SUMMARY_FRAME: u32 = (SUMMARY_SIZE + SUMMARY_MARKER_SIZE) as u32;

/// A block of 0xFF used for every fill, so fills are written in large pieces.
static FF: [u8; 65536] = [0xFF; 65536];

/// Writes nodes into erase blocks. See the module documentation.
pub struct BlockWriter<W: Write> {
    out: W,
    cfg: LayoutConfig,
    ofs: u64,
    cleanmarker: Vec<u8>,
    records: Vec<SumRecord>,
    records_size: u32,
    /// The current block gets no summary (see the module documentation).
    nosum: bool,
    /// Blocks closed with a summary / without one although summaries are on.
    summarized: u64,
    unsummarized: u64,
    scratch: Vec<u8>,
}

impl<W: Write> BlockWriter<W> {
    /// A writer that starts at offset 0 of `out`.
    pub fn new(out: W, cfg: LayoutConfig) -> Self {
        let mut cleanmarker = Vec::new();
        if let Some(size) = cfg.cleanmarker {
            encode_cleanmarker(cfg.endian, size, &mut cleanmarker);
        }
        BlockWriter {
            out,
            cfg,
            ofs: 0,
            cleanmarker,
            records: Vec::new(),
            records_size: 0,
            nosum: false,
            summarized: 0,
            unsummarized: 0,
            scratch: Vec::new(),
        }
    }

    /// The layout configuration.
    pub fn config(&self) -> &LayoutConfig {
        &self.cfg
    }

    /// Bytes written so far.
    pub fn offset(&self) -> u64 {
        self.ofs
    }

    /// In summary mode: blocks closed so far with a summary, and blocks that held nodes but
    /// could not carry one (see the module documentation).
    pub fn summary_counts(&self) -> (u64, u64) {
        (self.summarized, self.unsummarized)
    }

    fn in_block(&self) -> u32 {
        (self.ofs % u64::from(self.cfg.erase_size)) as u32
    }

    fn write_raw(&mut self, b: &[u8]) -> io::Result<()> {
        self.out.write_all(b)?;
        self.ofs += b.len() as u64;
        Ok(())
    }

    fn fill(&mut self, mut n: u64) -> io::Result<()> {
        while n > 0 {
            let k = n.min(FF.len() as u64) as usize;
            self.write_raw(&FF[..k])?;
            n -= k as u64;
        }
        Ok(())
    }

    fn padword(&mut self) -> io::Result<()> {
        let r = self.ofs % 4;
        if r != 0 {
            self.fill(4 - r)?;
        }
        Ok(())
    }

    /// The summary reservation a node with a record of `rec_size` bytes needs after it.
    fn reserve(&self, rec_size: u32) -> u32 {
        if self.cfg.summary && !self.nosum {
            pad4(self.records_size + rec_size + SUMMARY_FRAME)
        } else {
            0
        }
    }

    /// Closes the current block: writes its summary (summary mode, if it holds records)
    /// or 0xFF up to the block end (mkfs.jffs2's `padblock()`).
    fn pad_block(&mut self) -> io::Result<()> {
        let in_block = self.in_block();
        let nosum = std::mem::replace(&mut self.nosum, false);
        if in_block == 0 {
            return Ok(());
        }
        if self.cfg.summary && !self.records.is_empty() && !nosum {
            self.padword()?;
            let at = self.in_block();
            let node = SummaryNode {
                cln_mkr: self.cfg.cleanmarker.unwrap_or(0),
                ..Default::default()
            };
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let fits = node
                .encode(
                    self.cfg.endian,
                    &self.records,
                    at,
                    self.cfg.erase_size,
                    &mut buf,
                )
                .is_some();
            self.records.clear();
            self.records_size = 0;
            if fits {
                self.write_raw(&buf)?;
                self.summarized += 1;
            }
            self.scratch = buf;
            if !fits {
                // Cannot happen: every node reserved room for its record. Fall back to
                // an unsummarised block (the kernel scans such a block fully).
                self.unsummarized += 1;
                let rest = u64::from(self.cfg.erase_size - self.in_block());
                self.fill(rest)?;
            }
            return Ok(());
        }
        if nosum {
            self.unsummarized += 1;
        }
        self.records.clear();
        self.records_size = 0;
        let rest = u64::from(self.cfg.erase_size - in_block);
        self.fill(rest)
    }

    fn cleanmarker_if_block_start(&mut self) -> io::Result<()> {
        if self.cfg.cleanmarker.is_some() && self.in_block() == 0 {
            let cm = std::mem::take(&mut self.cleanmarker);
            let r = self.write_raw(&cm);
            self.cleanmarker = cm;
            r?;
            self.padword()?;
        }
        Ok(())
    }

    /// mkfs.jffs2's `pad_block_if_less_than(req)` (§3.6.2): cleanmarker at a block start;
    /// if `req` bytes do not fit in the rest of the block, close it and start the next one
    /// (with its cleanmarker). `rec_size` is the size of the summary record the node will
    /// add (ignored unless summaries are on; 0 for a node no summary can list, which then
    /// goes to a block without a summary, as does a node too large to leave room for one).
    pub fn prepare(&mut self, req: u32, rec_size: u32) -> io::Result<()> {
        self.cleanmarker_if_block_start()?;
        if self.cfg.summary && rec_size == 0 && !self.nosum && !self.records.is_empty() {
            // An unlisted node in a summarised block would be invisible to the kernel.
            self.pad_block()?;
            self.cleanmarker_if_block_start()?;
        }
        self.decide_nosum(req, rec_size);
        if u64::from(self.in_block()) + self.need(req, rec_size) > u64::from(self.cfg.erase_size) {
            self.pad_block()?;
        }
        self.cleanmarker_if_block_start()?;
        self.decide_nosum(req, rec_size);
        Ok(())
    }

    /// Summary mode, in a block that holds no node yet: it gets no summary if this node
    /// has no record or would not leave room for one.
    fn decide_nosum(&mut self, req: u32, rec_size: u32) {
        if self.cfg.summary
            && !self.nosum
            && self.records.is_empty()
            && (rec_size == 0
                || u64::from(self.in_block()) + self.need(req, rec_size)
                    > u64::from(self.cfg.erase_size))
        {
            self.nosum = true;
        }
    }

    /// Bytes `prepare` wants free in the block for a node of `req` bytes.
    fn need(&self, req: u32, rec_size: u32) -> u64 {
        if self.cfg.summary {
            u64::from(pad4(req)) + u64::from(self.reserve(rec_size))
        } else {
            u64::from(req)
        }
    }

    /// Bytes a node (header included) may take in the current block, after the summary
    /// reservation for a record of `rec_size` bytes. mkfs.jffs2 computes a data node's
    /// room as `erase_size - (ofs % erase_size) - 68` (§3.6.3); this is that plus 68.
    pub fn room(&self, rec_size: u32) -> u32 {
        (self.cfg.erase_size - self.in_block()).saturating_sub(self.reserve(rec_size))
    }

    /// Writes one complete node (its unpadded bytes) at the current offset, then 0xFF up to
    /// the next 4-byte boundary. In summary mode the node's record is collected.
    pub fn write_node(&mut self, node: &[u8]) -> io::Result<()> {
        if self.cfg.summary && !self.nosum {
            let at = self.in_block();
            if let Some(r) = record_for(node, self.cfg.endian, at) {
                self.records_size += r.size() as u32;
                self.records.push(r);
            }
        }
        self.write_raw(node)?;
        self.padword()
    }

    /// In summary mode, closes the current block if it holds nodes: with its summary, or
    /// with 0xFF when it cannot carry one. Nothing otherwise (and nothing in plain mode,
    /// where a block ends only when a node does not fit or at the end padding).
    pub fn close_block(&mut self) -> io::Result<()> {
        if self.cfg.summary && (!self.records.is_empty() || self.nosum) {
            self.pad_block()?;
        }
        Ok(())
    }

    /// Finishes the image: closes the last block in summary mode, then applies the end
    /// padding exactly as mkfs.jffs2 does (§3.6.5). Returns the output and its size.
    pub fn finish(mut self, pad: EndPad) -> io::Result<(W, u64)> {
        self.close_block()?;
        match pad {
            EndPad::None => {}
            EndPad::Block => self.pad_block()?,
            EndPad::Size(size) => {
                if size != 0 && self.cfg.cleanmarker.is_some() {
                    // padblock(); then whole blocks of cleanmarker + 0xFF while short.
                    self.pad_block()?;
                    while (self.ofs as i64) < size {
                        let cm = std::mem::take(&mut self.cleanmarker);
                        let r = self.write_raw(&cm);
                        self.cleanmarker = cm;
                        r?;
                        self.pad_block()?;
                    }
                } else if (self.ofs as i64) < size {
                    let n = size as u64 - self.ofs;
                    self.fill(n)?;
                }
            }
        }
        self.out.flush()?;
        Ok((self.out, self.ofs))
    }
}

/// The summary record describing `node`, placed at `offset_in_block`; `None` for nodes
/// that summaries do not list (cleanmarkers, padding, unknown types, a dirent whose name is
/// empty or starts with NUL). A writer must give such a node a block without a summary
/// (`rec_size` 0 in [`BlockWriter::prepare`]).
pub fn record_for(node: &[u8], e: Endian, offset_in_block: u32) -> Option<SumRecord> {
    let h = NodeHeader::decode(node, e, 0).ok()?;
    match NodeKind::of(h.nodetype) {
        NodeKind::Inode => {
            let i = InodeNode::decode(node, e, 0).ok()?;
            Some(SumRecord::Inode {
                nodetype: h.nodetype,
                inode: i.ino,
                version: i.version,
                offset: offset_in_block,
                totlen: h.totlen,
            })
        }
        NodeKind::Dirent => {
            let d = DirentNode::decode(node, e, 0).ok()?;
            let name = node.get(DIRENT_SIZE..DIRENT_SIZE + d.nsize as usize)?;
            // A summary record whose name is empty or starts with NUL aborts the mount
            // (`docs/spec/kernel-jffs2-spec.md` §4.3); the full scan of a block accepts the node (it
            // truncates the name). Such a node goes to a block without a summary.
            if name.first().is_none_or(|&c| c == 0) {
                return None;
            }
            Some(SumRecord::Dirent {
                nodetype: h.nodetype,
                totlen: h.totlen,
                offset: offset_in_block,
                pino: d.pino,
                version: d.version,
                ino: d.ino,
                dtype: d.dtype,
                name: name.to_vec(),
            })
        }
        NodeKind::Xattr => {
            let x = XattrNode::decode(node, e, 0).ok()?;
            Some(SumRecord::Xattr {
                nodetype: h.nodetype,
                xid: x.xid,
                version: x.version,
                offset: offset_in_block,
                totlen: h.totlen,
            })
        }
        NodeKind::Xref => Some(SumRecord::Xref {
            nodetype: h.nodetype,
            offset: offset_in_block,
        }),
        _ => None,
    }
}

/// Size of the summary record a node of this type and name length adds.
pub fn record_size(kind: NodeKind, name_len: usize) -> u32 {
    match kind {
        NodeKind::Inode => SUM_INODE_SIZE as u32,
        NodeKind::Xattr => SUM_XATTR_SIZE as u32,
        NodeKind::Dirent => SUM_DIRENT_SIZE as u32 + name_len as u32,
        NodeKind::Xref => SUM_XREF_SIZE as u32,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{NODETYPE_CLEANMARKER, NODETYPE_SUMMARY, SUM_MAGIC};

    fn cfg(cm: Option<u32>, summary: bool) -> LayoutConfig {
        LayoutConfig {
            endian: Endian::Little,
            erase_size: 8192,
            cleanmarker: cm,
            summary,
        }
    }

    fn dirent(name: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        DirentNode {
            pino: 1,
            ino: 2,
            dtype: 8,
            ..Default::default()
        }
        .encode(Endian::Little, name, &mut v);
        v
    }

    #[test]
    fn cleanmarker_at_each_block_and_no_crossing() {
        let mut w = BlockWriter::new(Vec::new(), cfg(Some(12), false));
        let node = dirent(&[b'x'; 200]); // 240 bytes
        for _ in 0..60 {
            w.prepare(node.len() as u32, 0).unwrap();
            w.write_node(&node).unwrap();
        }
        let (img, len) = w.finish(EndPad::None).unwrap();
        assert_eq!(img.len() as u64, len);
        // 12 + 34*240 = 8172 fits in block 0; node 35 goes to block 1.
        assert_eq!(&img[0..4], &[0x85, 0x19, 0x03, 0x20]);
        assert_eq!(&img[8192..8196], &[0x85, 0x19, 0x03, 0x20]);
        assert!(img[12 + 34 * 240..8192].iter().all(|&b| b == 0xFF));
        assert_eq!(len, 8192 + 12 + 26 * 240);
    }

    #[test]
    fn unaligned_cleanmarker_is_padded() {
        let mut w = BlockWriter::new(Vec::new(), cfg(Some(13), false));
        let node = dirent(b"a");
        w.prepare(node.len() as u32, 0).unwrap();
        w.write_node(&node).unwrap();
        let (img, _) = w.finish(EndPad::None).unwrap();
        assert_eq!(&img[4..8], &13u32.to_le_bytes());
        assert_eq!(&img[12..16], &[0xFF; 4]);
        assert_eq!(&img[16..18], &[0x85, 0x19]);
    }

    #[test]
    fn end_padding_modes() {
        let node = dirent(b"a"); // 41 bytes -> 44
        let run = |cm, pad| {
            let mut w = BlockWriter::new(Vec::new(), cfg(cm, false));
            w.prepare(41, 0).unwrap();
            w.write_node(&node).unwrap();
            w.finish(pad).unwrap().0
        };
        assert_eq!(run(Some(12), EndPad::None).len(), 56);
        assert_eq!(run(Some(12), EndPad::Block).len(), 8192);
        // --pad=SIZE with cleanmarkers rounds up to whole blocks, each with a cleanmarker.
        let img = run(Some(12), EndPad::Size(20000));
        assert_eq!(img.len(), 24576);
        for b in [8192, 16384] {
            assert_eq!(
                u16::from_le_bytes([img[b + 2], img[b + 3]]),
                NODETYPE_CLEANMARKER
            );
        }
        // Without cleanmarkers: exactly SIZE bytes.
        assert_eq!(run(None, EndPad::Size(20000)).len(), 20000);
        // SIZE below the current size: only the current block (with cleanmarkers) / nothing.
        assert_eq!(run(Some(12), EndPad::Size(10)).len(), 8192);
        assert_eq!(run(None, EndPad::Size(10)).len(), 44);
        assert_eq!(run(Some(12), EndPad::Size(0)).len(), 56);
    }

    #[test]
    fn empty_image_pads() {
        let w = BlockWriter::new(Vec::new(), cfg(Some(12), false));
        assert_eq!(w.finish(EndPad::Block).unwrap().0.len(), 0);
        let w = BlockWriter::new(Vec::new(), cfg(Some(12), false));
        let img = w.finish(EndPad::Size(100)).unwrap().0;
        assert_eq!(img.len(), 8192);
        assert_eq!(&img[0..4], &[0x85, 0x19, 0x03, 0x20]);
    }

    #[test]
    fn summary_mode_closes_every_block_with_a_valid_summary() {
        let e = Endian::Little;
        let mut w = BlockWriter::new(Vec::new(), cfg(Some(12), true));
        let node = dirent(&[b'y'; 100]);
        let rec = record_size(NodeKind::Dirent, 100);
        for _ in 0..100 {
            w.prepare(node.len() as u32, rec).unwrap();
            w.write_node(&node).unwrap();
        }
        let (img, len) = w.finish(EndPad::None).unwrap();
        assert_eq!(len % 8192, 0, "summary mode ends on a block boundary");
        let mut total = 0;
        for blk in img.chunks(8192) {
            let n = blk.len();
            assert_eq!(e.get_u32(blk, n - 4), Some(SUM_MAGIC));
            let at = e.get_u32(blk, n - 8).unwrap() as usize;
            let s = &blk[at..];
            let h = NodeHeader::decode(s, e, 0).unwrap();
            assert_eq!(h.nodetype, NODETYPE_SUMMARY);
            assert!(h.crc_ok(e));
            assert_eq!(h.totlen as usize, n - at);
            let sn = SummaryNode::decode(s, e, 0).unwrap();
            assert!(sn.node_crc_ok(s, e) && sn.sum_crc_ok(s, h.totlen));
            assert_eq!(sn.cln_mkr, 12);
            let recs = sn.records(s, e, 0).unwrap();
            for r in &recs {
                let SumRecord::Dirent { offset, .. } = r else {
                    panic!("unexpected record")
                };
                let o = *offset as usize;
                assert!(o + 140 <= at, "node must end before the summary");
                let d = DirentNode::decode(&blk[o..], e, 0).unwrap();
                assert!(d.node_crc_ok(&blk[o..], e));
            }
            total += recs.len();
        }
        assert_eq!(total, 100);
    }
}
