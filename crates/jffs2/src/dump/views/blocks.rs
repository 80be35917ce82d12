//! Per erase block: the kernel's accounting and filing ([`blocks`], `--blocks`) and the
//! erase-block summary the block carries ([`summaries`], `--summary`).

use std::io::{self, Write};

use super::{decode, Body, NodeInfo};
use crate::format::{NodeHeader, NodeKind, SumRecord, SUM_MAGIC};
use crate::scan::{BlockClass, BlockList, Scan, SummaryUse};

/// A block's state as the views show it: the kernel's list, with erased and all-dirty blocks
/// told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum BlockState {
    /// A cleanmarker and nothing else (or, without cleanmarkers, erased): ready for writing.
    Free,
    /// All 0xFF without a cleanmarker: the kernel erases it before use.
    Erased,
    /// Valid nodes, at most 196 bytes unused.
    Clean,
    /// Valid nodes and some dirt.
    Dirty,
    /// Dirt of half the block or more.
    VeryDirty,
    /// The partly written block further writes would go to.
    Nextblock,
    /// No valid node: only dirt.
    AllDirty,
    /// A cleanmarker followed by dirt: erased again before use.
    ErasePending,
}

impl BlockState {
    /// Every state, in legend order.
    pub const ALL: [BlockState; 8] = [
        BlockState::Clean,
        BlockState::Dirty,
        BlockState::VeryDirty,
        BlockState::AllDirty,
        BlockState::Nextblock,
        BlockState::Free,
        BlockState::Erased,
        BlockState::ErasePending,
    ];

    /// A short name (`clean`, `dirty`, `very-dirty`, `nextblock`, `all-dirty`, `free`,
    /// `erased`, `erase-pending`).
    pub fn name(self) -> &'static str {
        match self {
            BlockState::Free => "free",
            BlockState::Erased => "erased",
            BlockState::Clean => "clean",
            BlockState::Dirty => "dirty",
            BlockState::VeryDirty => "very-dirty",
            BlockState::Nextblock => "nextblock",
            BlockState::AllDirty => "all-dirty",
            BlockState::ErasePending => "erase-pending",
        }
    }

    fn of(class: BlockClass, list: BlockList) -> BlockState {
        match (class, list) {
            (_, BlockList::Free) => BlockState::Free,
            (BlockClass::Empty, _) => BlockState::Erased,
            (BlockClass::AllDirty, _) => BlockState::AllDirty,
            (_, BlockList::ErasePending) => BlockState::ErasePending,
            (_, BlockList::Clean) => BlockState::Clean,
            (_, BlockList::Dirty) => BlockState::Dirty,
            (_, BlockList::VeryDirty) => BlockState::VeryDirty,
            (_, BlockList::Nextblock) => BlockState::Nextblock,
        }
    }
}

/// One erase block as the kernel accounts it after the mount scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockView {
    /// Index.
    pub index: u32,
    /// Offset in the image.
    pub offset: u32,
    /// Size.
    pub size: u32,
    /// State.
    pub state: BlockState,
    /// The scan's classification.
    pub class: BlockClass,
    /// The list the kernel filed it on.
    pub list: BlockList,
    /// Bytes of valid nodes (checked).
    pub used: u32,
    /// Bytes of valid nodes not yet checked (inode nodes, summary records).
    pub unchecked: u32,
    /// Bytes of dirt.
    pub dirty: u32,
    /// Bytes wasted.
    pub wasted: u32,
    /// Free (erased) bytes.
    pub free: u32,
    /// The block ends with a summary marker.
    pub summary_present: bool,
    /// How the kernel used the summary.
    pub summary: SummaryUse,
    /// The block's first node is a valid cleanmarker.
    pub cleanmarker: bool,
    /// Nodes linked in the block.
    pub nodes: usize,
}

/// The summary marker at the end of the block at `ofs` (`[offset][SUM_MAGIC]` in the last 8
/// bytes): the summary's offset in the block.
fn marker(scan: &Scan, image: &[u8], ofs: u32) -> Option<u32> {
    let es = scan.geometry.erase_size as usize;
    let end = (ofs as usize).checked_add(es)?;
    let e = scan.geometry.endian;
    if end < 8 || end > image.len() {
        return None;
    }
    (e.get_u32(image, end - 4) == Some(SUM_MAGIC)).then(|| e.get_u32(image, end - 8))?
}

/// Every erase block of the scanned flash, in order.
pub fn blocks(scan: &Scan, image: &[u8]) -> Vec<BlockView> {
    scan.blocks
        .iter()
        .map(|b| {
            let refs = scan.refs.get(b.refs.clone()).unwrap_or(&[]);
            BlockView {
                index: b.index,
                offset: b.offset,
                size: scan.geometry.erase_size,
                state: BlockState::of(b.class, b.list),
                class: b.class,
                list: b.list,
                used: b.used,
                unchecked: b.unchecked,
                dirty: b.dirty,
                wasted: b.wasted,
                free: b.free,
                summary_present: marker(scan, image, b.offset).is_some(),
                summary: b.summary.clone(),
                cleanmarker: refs
                    .first()
                    .is_some_and(|r| r.kind == NodeKind::Cleanmarker && r.offset == b.offset),
                nodes: refs
                    .iter()
                    .filter(|r| r.kind != NodeKind::Cleanmarker)
                    .count(),
            }
        })
        .collect()
}

fn summary_use(s: &SummaryUse) -> String {
    match s {
        SummaryUse::None => "no".to_string(),
        SummaryUse::Used => "used".to_string(),
        SummaryUse::Rejected(why) => format!("rejected ({why})"),
    }
}

/// Writes the `--blocks` table: one line per block and a totals line.
pub fn write_blocks(blocks: &[BlockView], out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "{:>6} {:>10}  {:<13} {:>8} {:>9} {:>8} {:>7} {:>8}  {:<11} {:>5}  summary",
        "block",
        "offset",
        "state",
        "used",
        "unchecked",
        "dirty",
        "wasted",
        "free",
        "cleanmarker",
        "nodes"
    )?;
    let (mut u, mut c, mut d, mut w, mut f) = (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut counts = [0usize; 8];
    for b in blocks {
        writeln!(
            out,
            "{:>6} 0x{:08x}  {:<13} {:>8} {:>9} {:>8} {:>7} {:>8}  {:<11} {:>5}  {}",
            b.index,
            b.offset,
            b.state.name(),
            b.used,
            b.unchecked,
            b.dirty,
            b.wasted,
            b.free,
            if b.cleanmarker { "yes" } else { "no" },
            b.nodes,
            if b.summary_present {
                summary_use(&b.summary)
            } else {
                "none".into()
            }
        )?;
        u += u64::from(b.used);
        c += u64::from(b.unchecked);
        d += u64::from(b.dirty);
        w += u64::from(b.wasted);
        f += u64::from(b.free);
        if let Some(i) = BlockState::ALL.iter().position(|s| *s == b.state) {
            counts[i] += 1;
        }
    }
    writeln!(
        out,
        "{:>6} {:>10}  {:<13} {:>8} {:>9} {:>8} {:>7} {:>8}",
        "total",
        blocks.len(),
        "",
        u,
        c,
        d,
        w,
        f
    )?;
    let states: Vec<String> = BlockState::ALL
        .iter()
        .zip(counts)
        .filter(|(_, n)| *n > 0)
        .map(|(s, n)| format!("{n} {}", s.name()))
        .collect();
    writeln!(out, "blocks: {}", states.join(", "))
}

/// One block's summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SummaryView {
    /// Block index.
    pub block: u32,
    /// Block offset.
    pub block_offset: u32,
    /// The marker's offset of the summary in the block, if the block ends with a marker.
    pub marker: Option<u32>,
    /// The summary node the marker points to, decoded.
    pub node: Option<NodeInfo>,
    /// What is wrong with the marker or the node it points to.
    pub problem: Option<String>,
    /// How the kernel used it.
    pub used: SummaryUse,
}

/// The summary of every block (a block without a marker has `marker: None`).
pub fn summaries(scan: &Scan, image: &[u8]) -> Vec<SummaryView> {
    let e = scan.geometry.endian;
    let es = scan.geometry.erase_size;
    scan.blocks
        .iter()
        .map(|b| {
            let m = marker(scan, image, b.offset);
            let mut node = None;
            let mut problem = None;
            if let Some(o) = m {
                let at = b.offset as usize + o as usize;
                if o >= es {
                    problem = Some(format!("the marker's offset 0x{o:x} is outside the block"));
                } else {
                    match image.get(at..).map(|s| NodeHeader::decode(s, e, at as u64)) {
                        Some(Ok(h)) if h.crc_ok(e) => {
                            let n = decode(image, at, &h, e);
                            if !matches!(n.body, Body::Summary { .. }) {
                                problem = Some(format!(
                                    "the marker points to a {} node, not a summary",
                                    n.type_name()
                                ));
                            }
                            node = Some(n);
                        }
                        _ => {
                            problem = Some(format!(
                                "no valid node header at 0x{at:08x}, where the marker points"
                            ))
                        }
                    }
                }
            }
            SummaryView {
                block: b.index,
                block_offset: b.offset,
                marker: m,
                node,
                problem,
                used: b.summary.clone(),
            }
        })
        .collect()
}

fn verdict(ok: bool) -> &'static str {
    if ok {
        "ok"
    } else {
        "BAD"
    }
}

/// One summary record as a line.
pub fn record_line(r: &SumRecord, block_offset: u32) -> String {
    match r {
        SumRecord::Inode {
            nodetype,
            inode,
            version,
            offset,
            totlen,
        } => format!(
            "inode   0x{:08x} type 0x{nodetype:04x} ino {inode} version {version} totlen {totlen}",
            u64::from(block_offset) + u64::from(*offset)
        ),
        SumRecord::Dirent {
            nodetype,
            totlen,
            offset,
            pino,
            version,
            ino,
            dtype,
            name,
        } => format!(
            "dirent  0x{:08x} type 0x{nodetype:04x} pino {pino} version {version} ino {ino} dtype {dtype} totlen {totlen} name \"{}\"",
            u64::from(block_offset) + u64::from(*offset),
            crate::text::escape(name, true)
        ),
        SumRecord::Xattr {
            nodetype,
            xid,
            version,
            offset,
            totlen,
        } => format!(
            "xattr   0x{:08x} type 0x{nodetype:04x} xid {xid} version {version} totlen {totlen}",
            u64::from(block_offset) + u64::from(*offset)
        ),
        SumRecord::Xref { nodetype, offset } => format!(
            "xref    0x{:08x} type 0x{nodetype:04x}",
            u64::from(block_offset) + u64::from(*offset)
        ),
    }
}

/// Writes the `--summary` view: for each block its summary (header, CRC verdicts, how the
/// kernel used it, one line per record, offsets absolute), or "no summary".
pub fn write_summaries(views: &[SummaryView], out: &mut dyn Write) -> io::Result<()> {
    let mut with = 0usize;
    for v in views {
        let Some(m) = v.marker else {
            writeln!(
                out,
                "block {} at 0x{:08x}: no summary",
                v.block, v.block_offset
            )?;
            continue;
        };
        with += 1;
        let at = u64::from(v.block_offset) + u64::from(m);
        write!(
            out,
            "block {} at 0x{:08x}: summary at 0x{at:08x}",
            v.block, v.block_offset
        )?;
        match &v.node {
            Some(NodeInfo {
                totlen,
                body:
                    Body::Summary {
                        node,
                        node_crc,
                        sum_crc,
                        records,
                    },
                ..
            }) => {
                writeln!(
                    out,
                    ", totlen {totlen}, {} records, cleanmarker {}, padded {}; node CRC {}, summary CRC {}; kernel: {}",
                    node.sum_num,
                    node.cln_mkr,
                    node.padded,
                    verdict(node_crc.ok()),
                    verdict(sum_crc.ok()),
                    summary_use(&v.used)
                )?;
                match records {
                    Ok(rs) => {
                        for r in rs {
                            writeln!(out, "    {}", record_line(r, v.block_offset))?;
                        }
                    }
                    Err(e) => writeln!(out, "    records cannot be decoded: {e}")?,
                }
            }
            _ => writeln!(
                out,
                ": {}; kernel: {}",
                v.problem.as_deref().unwrap_or("not a summary node"),
                summary_use(&v.used)
            )?,
        }
    }
    writeln!(out, "{with} of {} blocks carry a summary", views.len())
}
