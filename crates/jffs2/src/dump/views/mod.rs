//! The views of `jffs2-dump` beyond jffs2dump's text: every node decoded with its CRC verdicts
//! and the kernel's verdict ([`walk`], [`NodeInfo`], for `--json`), each erase block's summary
//! ([`summaries`]), the per-block accounting ([`blocks`], [`svg_map`]) and what the image is
//! and how to rebuild it ([`info`]).
//!
//! The node walk is a linear one over the whole image, like jffs2dump's (erase blocks do not
//! stop it): 0xFF words are erased flash, a word with the magic and a valid header CRC (the
//! ACCURATE bit forced, as the kernel checks it) starts a node of `PAD(totlen)` bytes,
//! anything else is skipped a word at a time. What the *kernel* made of each node comes from
//! the mount scan ([`crate::scan`]) and the build ([`crate::fs::Fs::from_scan`]): [`KernelView`].

mod blocks;
mod info;
mod svg;

use std::collections::HashMap;

pub use blocks::{
    blocks, record_line, summaries, write_blocks, write_summaries, BlockState, BlockView,
    SummaryView,
};
pub use info::{info, write_info, CompressorCounts, ImageInfo, InfoOptions, MkfsCommand};
pub use svg::svg_map;

use crate::crc::crc32;
use crate::format::{
    accurate_crc, DirentNode, Endian, InodeNode, NodeHeader, SumRecord, SummaryNode, XattrNode,
    XrefNode, DIRENT_SIZE, HEADER_SIZE, INODE_SIZE, MAGIC, NODETYPE_CLEANMARKER, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_PADDING, NODETYPE_SUMMARY, NODETYPE_XATTR, NODETYPE_XREF,
    SUMMARY_SIZE, XATTR_SIZE, XREF_SIZE,
};
use crate::scan::{DirtCause, RefState, Scan, SummaryUse};

/// A stored CRC and the one computed over the bytes it covers (`None` when those bytes are
/// not all in the image).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Crc {
    /// As stored.
    pub stored: u32,
    /// As computed.
    pub computed: Option<u32>,
}

impl Crc {
    /// Whether they match.
    pub fn ok(&self) -> bool {
        self.computed == Some(self.stored)
    }
}

/// The type-specific part of a node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// An inode (data or metadata) node.
    Inode {
        /// The fixed fields.
        node: InodeNode,
        /// CRC of the first 60 bytes.
        node_crc: Crc,
        /// CRC of the `csize` stored bytes.
        data_crc: Crc,
    },
    /// A directory entry.
    Dirent {
        /// The fixed fields.
        node: DirentNode,
        /// The `nsize` name bytes (as far as they are in the image).
        name: Vec<u8>,
        /// CRC of the first 32 bytes.
        node_crc: Crc,
        /// CRC of the name.
        name_crc: Crc,
    },
    /// An xattr datum.
    Xattr {
        /// The fixed fields.
        node: XattrNode,
        /// Name (without its namespace prefix).
        name: Vec<u8>,
        /// Value.
        value: Vec<u8>,
        /// CRC of the first 28 bytes.
        node_crc: Crc,
        /// CRC of name, NUL and value.
        data_crc: Crc,
    },
    /// An xattr reference.
    Xref {
        /// The fields.
        node: XrefNode,
        /// CRC of the first 24 bytes.
        node_crc: Crc,
    },
    /// A cleanmarker.
    Cleanmarker,
    /// A padding node.
    Padding,
    /// An erase-block summary.
    Summary {
        /// The fixed fields.
        node: SummaryNode,
        /// CRC of the first 24 bytes.
        node_crc: Crc,
        /// CRC of everything after the 32-byte header.
        sum_crc: Crc,
        /// The records, or why they cannot be decoded.
        records: Result<Vec<SumRecord>, String>,
    },
    /// A node of another type.
    Other,
    /// A node too short (or too close to the end of the image) for its type's fixed part.
    Short,
}

/// One node found by the walk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Byte offset in the image.
    pub offset: u64,
    /// Node type as stored (ACCURATE bit included).
    pub nodetype: u16,
    /// `totlen`.
    pub totlen: u32,
    /// Header CRC (always valid: nodes are recognised by it).
    pub hdr_crc: Crc,
    /// The node runs past the end of the image.
    pub truncated: bool,
    /// Decoded fields.
    pub body: Body,
}

impl NodeInfo {
    /// The ACCURATE bit: clear on a node the kernel obsoleted on flash.
    pub fn accurate(&self) -> bool {
        self.nodetype & crate::format::NODE_ACCURATE != 0
    }

    /// The type's name (`inode`, `dirent`, `xattr`, `xref`, `cleanmarker`, `padding`,
    /// `summary`, `unknown`).
    pub fn type_name(&self) -> &'static str {
        match self.nodetype | crate::format::NODE_ACCURATE {
            NODETYPE_INODE => "inode",
            NODETYPE_DIRENT => "dirent",
            NODETYPE_XATTR => "xattr",
            NODETYPE_XREF => "xref",
            NODETYPE_CLEANMARKER => "cleanmarker",
            NODETYPE_PADDING => "padding",
            NODETYPE_SUMMARY => "summary",
            _ => "unknown",
        }
    }

    /// Whether every CRC of the node is right.
    pub fn crcs_ok(&self) -> bool {
        match &self.body {
            Body::Inode {
                node_crc, data_crc, ..
            } => node_crc.ok() && data_crc.ok(),
            Body::Dirent {
                node_crc, name_crc, ..
            } => node_crc.ok() && name_crc.ok(),
            Body::Xattr {
                node_crc, data_crc, ..
            } => node_crc.ok() && data_crc.ok(),
            Body::Xref { node_crc, .. } => node_crc.ok(),
            Body::Summary {
                node_crc, sum_crc, ..
            } => node_crc.ok() && sum_crc.ok(),
            Body::Short => false,
            _ => true,
        }
    }
}

/// What lies between nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapKind {
    /// 0xFF words.
    Erased,
    /// Words that start no node.
    Junk,
    /// A node magic whose header CRC is wrong.
    BadHeader,
}

impl GapKind {
    /// `erased`, `junk`, `bad-header`.
    pub fn name(self) -> &'static str {
        match self {
            GapKind::Erased => "erased",
            GapKind::Junk => "junk",
            GapKind::BadHeader => "bad-header",
        }
    }
}

/// One step of [`walk`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A node.
    Node(Box<NodeInfo>),
    /// A run of bytes that are not nodes (adjacent words of one kind merged).
    Gap {
        /// Offset.
        offset: u64,
        /// Length in bytes.
        len: u64,
        /// What it is.
        kind: GapKind,
    },
}

/// The CRC of `image[from..from + len]`, or `None` when that is not all in the image.
fn crc_of(image: &[u8], from: usize, len: usize) -> Option<u32> {
    image.get(from..from.checked_add(len)?).map(crc32)
}

/// Decodes the node with a valid header at `ofs`.
fn decode(image: &[u8], ofs: usize, hdr: &NodeHeader, e: Endian) -> NodeInfo {
    let b = &image[ofs..];
    let totlen = hdr.totlen as usize;
    let truncated = ofs as u64 + u64::from(hdr.totlen) > image.len() as u64;
    let at = ofs as u64;
    let short = |need: usize| totlen < need || b.len() < need;
    let body = match hdr.nodetype | crate::format::NODE_ACCURATE {
        NODETYPE_INODE if !short(INODE_SIZE) => inode_body(b, e, at),
        NODETYPE_DIRENT if !short(DIRENT_SIZE) => dirent_body(b, e, at),
        NODETYPE_XATTR if !short(XATTR_SIZE) => xattr_body(b, e, at),
        NODETYPE_XREF if !short(XREF_SIZE) => match XrefNode::decode(b, e, at) {
            Ok(node) => Body::Xref {
                node_crc: Crc {
                    stored: node.node_crc,
                    computed: accurate_crc(b, XREF_SIZE - 4, e),
                },
                node,
            },
            Err(_) => Body::Short,
        },
        NODETYPE_CLEANMARKER => Body::Cleanmarker,
        NODETYPE_PADDING => Body::Padding,
        NODETYPE_SUMMARY if !short(SUMMARY_SIZE) => summary_body(b, e, at, totlen),
        NODETYPE_INODE | NODETYPE_DIRENT | NODETYPE_XATTR | NODETYPE_XREF | NODETYPE_SUMMARY => {
            Body::Short
        }
        _ => Body::Other,
    };
    NodeInfo {
        offset: at,
        nodetype: hdr.nodetype,
        totlen: hdr.totlen,
        hdr_crc: Crc {
            stored: hdr.hdr_crc,
            computed: Some(hdr.computed_crc(e)),
        },
        truncated,
        body,
    }
}

/// The body of the inode node at the start of `b` (image offset `at`).
fn inode_body(b: &[u8], e: Endian, at: u64) -> Body {
    let Ok(node) = InodeNode::decode(b, e, at) else {
        return Body::Short;
    };
    let node_crc = Crc {
        stored: node.node_crc,
        computed: accurate_crc(b, INODE_SIZE - 8, e),
    };
    let data_crc = Crc {
        stored: node.data_crc,
        computed: crc_of(b, INODE_SIZE, node.csize as usize),
    };
    Body::Inode {
        node,
        node_crc,
        data_crc,
    }
}

/// The body of the dirent node at the start of `b` (image offset `at`).
fn dirent_body(b: &[u8], e: Endian, at: u64) -> Body {
    let Ok(node) = DirentNode::decode(b, e, at) else {
        return Body::Short;
    };
    let n = usize::from(node.nsize);
    let end = (DIRENT_SIZE + n).min(b.len());
    let name = b[DIRENT_SIZE..end].to_vec();
    Body::Dirent {
        node_crc: Crc {
            stored: node.node_crc,
            computed: accurate_crc(b, DIRENT_SIZE - 8, e),
        },
        name_crc: Crc {
            stored: node.name_crc,
            computed: crc_of(b, DIRENT_SIZE, n),
        },
        node,
        name,
    }
}

/// The body of the xattr node at the start of `b` (image offset `at`).
fn xattr_body(b: &[u8], e: Endian, at: u64) -> Body {
    let Ok(node) = XattrNode::decode(b, e, at) else {
        return Body::Short;
    };
    let n = usize::from(node.name_len);
    let v = usize::from(node.value_len);
    let name = b.get(XATTR_SIZE..XATTR_SIZE + n).unwrap_or(&[]).to_vec();
    let v0 = XATTR_SIZE + n + 1;
    let value = b.get(v0..v0 + v).unwrap_or(&[]).to_vec();
    Body::Xattr {
        node_crc: Crc {
            stored: node.node_crc,
            computed: accurate_crc(b, XATTR_SIZE - 4, e),
        },
        data_crc: Crc {
            stored: node.data_crc,
            computed: crc_of(b, XATTR_SIZE, n + 1 + v),
        },
        node,
        name,
        value,
    }
}

/// The body of the summary node of `totlen` bytes at the start of `b` (image offset `at`).
fn summary_body(b: &[u8], e: Endian, at: u64, totlen: usize) -> Body {
    let Ok(node) = SummaryNode::decode(b, e, at) else {
        return Body::Short;
    };
    let region = &b[..totlen.min(b.len())];
    let records = node.records(region, e, at).map_err(|err| err.to_string());
    Body::Summary {
        node_crc: Crc {
            stored: node.node_crc,
            computed: accurate_crc(b, 24, e),
        },
        sum_crc: Crc {
            stored: node.sum_crc,
            computed: totlen
                .checked_sub(SUMMARY_SIZE)
                .and_then(|n| crc_of(b, SUMMARY_SIZE, n)),
        },
        records,
        node,
    }
}

/// The linear walk over `image` in byte order `e` (see the module documentation): nodes and
/// the gaps between them, in offset order, covering the image (up to its last whole word).
pub fn walk(image: &[u8], e: Endian) -> Walk<'_> {
    Walk {
        image,
        e,
        p: 0,
        gap: None,
        queued: None,
    }
}

/// The iterator of [`walk`].
pub struct Walk<'a> {
    image: &'a [u8],
    e: Endian,
    p: usize,
    gap: Option<(u64, u64, GapKind)>,
    queued: Option<Item>,
}

impl Walk<'_> {
    /// Adds `len` bytes of `kind` at the current position to the pending gap; returns the
    /// previous gap when it cannot be extended.
    fn extend(&mut self, kind: GapKind, len: usize) -> Option<Item> {
        let at = self.p as u64;
        self.p += len;
        match &mut self.gap {
            Some((o, l, k)) if *k == kind && *o + *l == at => {
                *l += len as u64;
                None
            }
            _ => self
                .gap
                .replace((at, len as u64, kind))
                .map(|(offset, len, kind)| Item::Gap { offset, len, kind }),
        }
    }
}

impl Iterator for Walk<'_> {
    type Item = Item;

    fn next(&mut self) -> Option<Item> {
        if let Some(q) = self.queued.take() {
            return Some(q);
        }
        let image = self.image;
        loop {
            let p = self.p;
            if p + 4 > image.len() {
                return self
                    .gap
                    .take()
                    .map(|(offset, len, kind)| Item::Gap { offset, len, kind });
            }
            let flushed = if image[p..p + 4] == [0xFF; 4] {
                let mut q = p + 4;
                while q + 4 <= image.len() && image[q..q + 4] == [0xFF; 4] {
                    q += 4;
                }
                self.extend(GapKind::Erased, q - p)
            } else if self.e.get_u16(image, p) == Some(MAGIC) && p + HEADER_SIZE <= image.len() {
                match NodeHeader::decode(&image[p..], self.e, p as u64) {
                    Ok(h) if h.crc_ok(self.e) && h.totlen as usize >= HEADER_SIZE => {
                        let node = Item::Node(Box::new(decode(image, p, &h, self.e)));
                        // totlen >= 12, so this advances (pad4 on u32 would wrap to 0 near 4 GiB).
                        let adv = (u64::from(h.totlen) + 3) & !3;
                        self.p = p.saturating_add(usize::try_from(adv).unwrap_or(usize::MAX));
                        return Some(match self.gap.take() {
                            Some((offset, len, kind)) => {
                                self.queued = Some(node);
                                Item::Gap { offset, len, kind }
                            }
                            None => node,
                        });
                    }
                    Ok(_) => self.extend(GapKind::BadHeader, 4),
                    Err(_) => self.extend(GapKind::Junk, 4),
                }
            } else {
                self.extend(GapKind::Junk, 4)
            };
            if flushed.is_some() {
                return flushed;
            }
        }
    }
}

/// What the kernel made of a node, from the mount scan and the build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeVerdict {
    /// Linked by the scan; the state after the build.
    Linked {
        /// The ref's state.
        state: RefState,
        /// Linked from a summary record rather than read.
        from_summary: bool,
    },
    /// Accounted as dirt, and why.
    Dirt(DirtCause),
    /// In a block whose summary the kernel used: never read.
    NotRead,
    /// Beyond the flash the kernel mounts (the image's last partial block).
    OutsideFlash,
    /// In the erase block of OpenWrt's end-of-filesystem marker or after it: OpenWrt's
    /// kernel erases it unread ([`Scan::end_marker`]).
    AfterEndMarker,
    /// Not linked, not dirt (free space, or a node the scan skipped over).
    Other,
}

impl NodeVerdict {
    /// A short name: `unchecked`, `pristine`, `normal`, `obsolete`, `dirt`, `not-read`,
    /// `outside-flash`, `after-end-marker`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            NodeVerdict::Linked { state, .. } => match state {
                RefState::Unchecked => "unchecked",
                RefState::Obsolete => "obsolete",
                RefState::Pristine => "pristine",
                RefState::Normal => "normal",
            },
            NodeVerdict::Dirt(_) => "dirt",
            NodeVerdict::NotRead => "not-read",
            NodeVerdict::OutsideFlash => "outside-flash",
            NodeVerdict::AfterEndMarker => "after-end-marker",
            NodeVerdict::Other => "other",
        }
    }
}

/// The name of a dirt cause, for listings (`obsolete`, `node-crc`, …).
pub fn dirt_name(c: DirtCause) -> &'static str {
    c.name()
}

/// Looks up the kernel's verdict on nodes by offset.
pub struct KernelView<'a> {
    scan: &'a Scan,
    by_offset: HashMap<u32, usize>,
}

impl<'a> KernelView<'a> {
    /// Indexes a scan (after [`crate::fs::Fs::from_scan`], so that the build's obsoletions show).
    pub fn new(scan: &'a Scan) -> Self {
        let by_offset = scan
            .refs
            .iter()
            .enumerate()
            .map(|(i, r)| (r.offset, i))
            .collect();
        KernelView { scan, by_offset }
    }

    /// The verdict on the node at `offset`.
    pub fn verdict(&self, offset: u64) -> NodeVerdict {
        let Ok(o) = u32::try_from(offset) else {
            return NodeVerdict::OutsideFlash;
        };
        if o >= self.scan.flash_size {
            return NodeVerdict::OutsideFlash;
        }
        if self.scan.end_marker.is_some_and(|m| o >= m) {
            return NodeVerdict::AfterEndMarker;
        }
        if let Some(r) = self.by_offset.get(&o).and_then(|&i| self.scan.refs.get(i)) {
            return NodeVerdict::Linked {
                state: r.state,
                from_summary: r.from_summary,
            };
        }
        let d = &self.scan.dirt;
        let i = d.partition_point(|x| x.offset <= o);
        if let Some(x) = i.checked_sub(1).and_then(|i| d.get(i)) {
            if o < x.offset.saturating_add(x.len) {
                return NodeVerdict::Dirt(x.cause);
            }
        }
        if let Some(b) = self.scan.block_of(o).and_then(|b| self.scan.blocks.get(b)) {
            if b.summary == SummaryUse::Used {
                return NodeVerdict::NotRead;
            }
        }
        NodeVerdict::Other
    }
}

#[cfg(test)]
mod tests;
