//! The summary pass as a stream: nodes in, summarised erase blocks out.
//!
//! [`Summarizer`] is what `jffs2-sumtool` does with the nodes it carries over, and
//! [`SummarizingWriter`] is what `jffs2-mkfs --summary` writes through: the plain layout
//! decides every node exactly as `jffs2-mkfs` without `--summary` would (including the data
//! nodes split at block tails), and each node is then re-laid by the same [`Summarizer`].
//! That is why `jffs2-mkfs --summary` gives the same bytes as `jffs2-mkfs` followed by
//! `jffs2-sumtool` with the same geometry (the same bytes, `tests/sumtool_identity.rs`): one writer, one order, one
//! end-padding rule.

use std::io::{self, Write};

use crate::format::Endian;
use crate::layout::{record_for, BlockWriter, EndPad, LayoutConfig};

/// What a [`Summarizer`] wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RelayoutStats {
    /// Size of the output in bytes.
    pub size: u64,
    /// Nodes written.
    pub nodes: u64,
    /// Erase blocks closed with a summary.
    pub summarized_blocks: u64,
    /// Erase blocks that hold nodes but no summary: a node too large to leave room for one,
    /// or a node type no summary can list (the kernel scans these blocks fully).
    pub unsummarized_blocks: u64,
}

/// Lays complete nodes into erase blocks that each end with a summary, with the one
/// [`BlockWriter`] in summary mode: a node goes into the current block when it and the
/// summary grown by its record still fit (`PAD(totlen) + PAD(sum_size + record + 40)`, the
/// kernel's own reservation, `docs/spec/kernel-jffs2-spec.md` §4.5), otherwise the block is closed with
/// its summary and the node starts the next one. Node bytes are copied verbatim.
pub struct Summarizer<W: Write> {
    w: BlockWriter<W>,
    endian: Endian,
    erase_size: u32,
    /// Room for a node in an empty block (after the cleanmarker).
    first_room: u64,
    nodes: u64,
}

impl<W: Write> Summarizer<W> {
    /// A summarizer writing to `out` with blocks of `erase_size` bytes (a multiple of 4)
    /// and a cleanmarker of the given size at the start of every block, or none.
    pub fn new(out: W, endian: Endian, erase_size: u32, cleanmarker: Option<u32>) -> Self {
        let cm = cleanmarker.map_or(0, crate::format::pad4_64);
        Summarizer {
            w: BlockWriter::new(
                out,
                LayoutConfig {
                    endian,
                    erase_size,
                    cleanmarker,
                    summary: true,
                },
            ),
            endian,
            erase_size,
            first_room: u64::from(erase_size).saturating_sub(cm),
            nodes: 0,
        }
    }

    /// Whether a node of `totlen` bytes fits into an erase block at all (after the
    /// cleanmarker). A node that fits but leaves no room for a summary goes into a block
    /// without one.
    pub fn fits(&self, totlen: u32) -> bool {
        crate::format::pad4_64(totlen) <= self.first_room
    }

    /// Appends one complete node (exactly its `totlen` bytes). A node that does not
    /// [`fit`](Self::fits) is refused with `InvalidInput`.
    pub fn push(&mut self, node: &[u8]) -> io::Result<()> {
        let totlen = u32::try_from(node.len()).unwrap_or(u32::MAX);
        if !self.fits(totlen) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "a node of {totlen} bytes does not fit into an erase block of {} bytes",
                    self.erase_size
                ),
            ));
        }
        let rec = record_for(node, self.endian, 0).map_or(0, |r| r.size() as u32);
        self.w.prepare(totlen, rec)?;
        self.w.write_node(node)?;
        self.nodes += 1;
        Ok(())
    }

    /// Closes the last block (with its summary), then pads the output with whole blocks of
    /// cleanmarker + 0xFF (or, without cleanmarkers, with 0xFF) up to at least `min_len`
    /// bytes — the size of the input, so that padded empty blocks are kept
    /// (`docs/spec/mtd-utils-spec.md` §8 B-14) — exactly as `jffs2-mkfs --pad=min_len` ends an image.
    pub fn finish(self, min_len: u64) -> io::Result<(W, RelayoutStats)> {
        let nodes = self.nodes;
        let pad = EndPad::Size(i64::try_from(min_len).unwrap_or(i64::MAX));
        let mut w = self.w;
        // Close the last block first so that the counts include it.
        w.close_block()?;
        let (summarized_blocks, unsummarized_blocks) = w.summary_counts();
        let (out, size) = w.finish(pad)?;
        Ok((
            out,
            RelayoutStats {
                size,
                nodes,
                summarized_blocks,
                unsummarized_blocks,
            },
        ))
    }
}

/// The writer of `jffs2-mkfs --summary`: the plain layout ([`BlockWriter`] without
/// summaries, written nowhere) decides every node — where data pages are split, how much
/// room a block tail gives — and every node it places is re-laid by a [`Summarizer`]. The
/// result is byte for byte `jffs2-mkfs` followed by `jffs2-sumtool` (see the module
/// documentation). The methods mirror [`BlockWriter`]'s.
pub struct SummarizingWriter<W: Write> {
    plain: BlockWriter<io::Sink>,
    sum: Summarizer<W>,
}

impl<W: Write> SummarizingWriter<W> {
    /// A writer with the geometry of `cfg` (its `summary` flag is ignored).
    pub fn new(out: W, cfg: LayoutConfig) -> Self {
        SummarizingWriter {
            plain: BlockWriter::new(
                io::sink(),
                LayoutConfig {
                    summary: false,
                    ..cfg
                },
            ),
            sum: Summarizer::new(out, cfg.endian, cfg.erase_size, cfg.cleanmarker),
        }
    }

    /// [`BlockWriter::prepare`] of the plain layout.
    pub fn prepare(&mut self, req: u32, _rec_size: u32) -> io::Result<()> {
        self.plain.prepare(req, 0)
    }

    /// [`BlockWriter::room`] of the plain layout.
    pub fn room(&self, _rec_size: u32) -> u32 {
        self.plain.room(0)
    }

    /// Places the node in the plain layout and writes it into the summarised output.
    pub fn write_node(&mut self, node: &[u8]) -> io::Result<()> {
        self.plain.write_node(node)?;
        self.sum.push(node)
    }

    /// Ends the plain layout with `pad`, then the summarised output at (at least) the
    /// plain image's size. Returns the output and the summarised image's size.
    pub fn finish(self, pad: EndPad) -> io::Result<(W, u64)> {
        let (_, plain_len) = self.plain.finish(pad)?;
        let (out, stats) = self.sum.finish(plain_len)?;
        Ok((out, stats.size))
    }
}
