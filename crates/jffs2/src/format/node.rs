//! Encode and decode of every JFFS2 node type (`docs/spec/mtd-utils-spec.md` §2.2–§2.8).
//!
//! Encoders append the node's *unpadded* bytes (`totlen` of them, except xattr nodes whose
//! totlen is already padded) to a buffer and compute every CRC over the bytes as stored.
//! Decoders take a slice that starts at the node and the node's absolute offset (for
//! errors); they check lengths but not CRCs — each node type has `*_crc_ok` helpers so a
//! caller can report exactly which CRC failed.

use super::{Endian, FormatError};
use super::{
    DIRENT_SIZE, HEADER_SIZE, INODE_SIZE, MAGIC, NODETYPE_CLEANMARKER, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_PADDING, NODETYPE_SUMMARY, NODETYPE_XATTR, NODETYPE_XREF,
    NODE_ACCURATE, SUMMARY_MARKER_SIZE, SUMMARY_SIZE, SUM_MAGIC, XATTR_SIZE, XREF_SIZE,
};
use super::{SUM_DIRENT_NSIZE_AT, SUM_DIRENT_SIZE, SUM_INODE_SIZE, SUM_XATTR_SIZE, SUM_XREF_SIZE};
use crate::crc::crc32;

fn need(b: &[u8], n: usize, what: &'static str, offset: u64) -> Result<(), FormatError> {
    if b.len() < n {
        Err(FormatError::Truncated {
            what,
            offset,
            need: n,
            have: b.len(),
        })
    } else {
        Ok(())
    }
}

// Lengths are checked by `need` before any field is read, so these cannot fail; they
// return 0 rather than panic if a caller ever breaks that rule.
fn r16(e: Endian, b: &[u8], at: usize) -> u16 {
    e.get_u16(b, at).unwrap_or(0)
}
fn r32(e: Endian, b: &[u8], at: usize) -> u32 {
    e.get_u32(b, at).unwrap_or(0)
}

/// Appends the 12-byte common header with its CRC.
fn put_header(e: Endian, out: &mut Vec<u8>, nodetype: u16, totlen: u32) {
    let start = out.len();
    e.put_u16(out, MAGIC);
    e.put_u16(out, nodetype);
    e.put_u32(out, totlen);
    let crc = crc32(&out[start..start + 8]);
    e.put_u32(out, crc);
}

/// The common 12-byte node header, `struct jffs2_unknown_node` (§2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeHeader {
    /// Magic (0x1985 on a valid node).
    pub magic: u16,
    /// Node type as stored (the ACCURATE bit may be cleared).
    pub nodetype: u16,
    /// Total length of the node.
    pub totlen: u32,
    /// Stored header CRC.
    pub hdr_crc: u32,
}

impl NodeHeader {
    /// Decodes the header at the start of `b`.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<Self, FormatError> {
        need(b, HEADER_SIZE, "node header", offset)?;
        Ok(NodeHeader {
            magic: r16(e, b, 0),
            nodetype: r16(e, b, 2),
            totlen: r32(e, b, 4),
            hdr_crc: r32(e, b, 8),
        })
    }

    /// Whether the ACCURATE bit is set (the node has not been obsoleted on flash).
    pub fn is_accurate(&self) -> bool {
        self.nodetype & NODE_ACCURATE != 0
    }

    /// The node type with the ACCURATE bit put back (what the CRC was computed over).
    pub fn accurate_type(&self) -> u16 {
        self.nodetype | NODE_ACCURATE
    }

    /// The header CRC the node should have: computed over magic, the type with the
    /// ACCURATE bit set (obsoleted nodes keep their original CRC; `docs/spec/mtd-utils-spec.md`
    /// §2.1, kernel `scan.c`), and totlen.
    pub fn computed_crc(&self, e: Endian) -> u32 {
        let mut b = [0u8; 8];
        b[0..2].copy_from_slice(&e.u16_bytes(self.magic));
        b[2..4].copy_from_slice(&e.u16_bytes(self.accurate_type()));
        b[4..8].copy_from_slice(&e.u32_bytes(self.totlen));
        crc32(&b)
    }

    /// Whether the stored header CRC is right.
    pub fn crc_ok(&self, e: Endian) -> bool {
        self.computed_crc(e) == self.hdr_crc
    }
}

/// A directory entry node, `struct jffs2_raw_dirent` (§2.3).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DirentNode {
    /// Parent directory inode.
    pub pino: u32,
    /// Version (mkfs: a global counter from 0).
    pub version: u32,
    /// Target inode; 0 means "unlinked".
    pub ino: u32,
    /// Modification/change time of the entry.
    pub mctime: u32,
    /// Name length as stored.
    pub nsize: u8,
    /// `DT_*` type of the target.
    pub dtype: u8,
    /// Stored node CRC (decode only; recomputed by encode).
    pub node_crc: u32,
    /// Stored name CRC (decode only; recomputed by encode).
    pub name_crc: u32,
}

impl DirentNode {
    /// Appends the dirent with `name` (unpadded, `totlen = 40 + name.len()`).
    /// `nsize` is taken as `name.len() as u8`, as mkfs.jffs2 does (§2.3: no length check).
    pub fn encode(&self, e: Endian, name: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        let nsize = name.len() as u8;
        put_header(e, out, NODETYPE_DIRENT, (DIRENT_SIZE + name.len()) as u32);
        e.put_u32(out, self.pino);
        e.put_u32(out, self.version);
        e.put_u32(out, self.ino);
        e.put_u32(out, self.mctime);
        out.push(nsize);
        out.push(self.dtype);
        out.extend_from_slice(&[0, 0]);
        let node_crc = crc32(&out[start..start + 32]);
        e.put_u32(out, node_crc);
        e.put_u32(out, crc32(&name[..nsize as usize]));
        out.extend_from_slice(name);
    }

    /// Decodes the fixed part of a dirent at the start of `b`.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<Self, FormatError> {
        need(b, DIRENT_SIZE, "dirent node", offset)?;
        Ok(DirentNode {
            pino: r32(e, b, 12),
            version: r32(e, b, 16),
            ino: r32(e, b, 20),
            mctime: r32(e, b, 24),
            nsize: b[28],
            dtype: b[29],
            node_crc: r32(e, b, 32),
            name_crc: r32(e, b, 36),
        })
    }

    /// The name bytes of a dirent that starts at `b[0]`, if present.
    pub fn name<'a>(&self, b: &'a [u8]) -> Option<&'a [u8]> {
        b.get(DIRENT_SIZE..DIRENT_SIZE + self.nsize as usize)
    }

    /// Whether the node CRC (bytes 0..32) matches, with the ACCURATE bit put back.
    pub fn node_crc_ok(&self, b: &[u8], e: Endian) -> bool {
        accurate_crc(b, 32, e) == Some(self.node_crc)
    }

    /// Whether the name CRC matches.
    pub fn name_crc_ok(&self, b: &[u8]) -> bool {
        self.name(b).map(crc32) == Some(self.name_crc)
    }
}

/// CRC of `b[0..n]` computed as if the ACCURATE bit of the type field were set (the kernel
/// clears it to obsolete a node but leaves the CRCs as they were, §2.1); `None` when `b` is
/// shorter than `n`.
pub fn accurate_crc(b: &[u8], n: usize, e: Endian) -> Option<u32> {
    let s = b.get(..n)?;
    if n < 4 {
        return Some(crc32(s));
    }
    let mut head = [0u8; 4];
    head.copy_from_slice(&s[..4]);
    let t = r16(e, &head, 2) | NODE_ACCURATE;
    head[2..4].copy_from_slice(&e.u16_bytes(t));
    Some(crate::crc::crc32_update(crc32(&head), &s[4..]))
}

/// An inode node, `struct jffs2_raw_inode` (§2.4).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InodeNode {
    /// Inode number.
    pub ino: u32,
    /// Per-inode version.
    pub version: u32,
    /// Full Linux `st_mode`.
    pub mode: u32,
    /// Owner (16 bits on flash).
    pub uid: u16,
    /// Group (16 bits on flash).
    pub gid: u16,
    /// File size after this node.
    pub isize: u32,
    /// Access time.
    pub atime: u32,
    /// Modification time.
    pub mtime: u32,
    /// Change time.
    pub ctime: u32,
    /// File offset of this node's data.
    pub offset: u32,
    /// Stored (compressed) data length.
    pub csize: u32,
    /// Uncompressed data length.
    pub dsize: u32,
    /// Compressor id.
    pub compr: u8,
    /// Compressor requested by the user (always 0 from mkfs).
    pub usercompr: u8,
    /// Flags (`JFFS2_INO_FLAG_*`).
    pub flags: u16,
    /// Stored data CRC (decode only; recomputed by encode).
    pub data_crc: u32,
    /// Stored node CRC (decode only; recomputed by encode).
    pub node_crc: u32,
}

impl InodeNode {
    /// Appends the inode node followed by `data` (unpadded). `csize` is taken from
    /// `data.len()`; `data_crc = crc(data)` (0 for no data, as mkfs leaves it).
    pub fn encode(&self, e: Endian, data: &[u8], out: &mut Vec<u8>) {
        self.encode_with_crc(e, data, crc32(data), out);
    }

    /// [`InodeNode::encode`] with `data_crc` (which must be `crc(data)`) computed by the
    /// caller: a writer that compresses on other threads has them compute it too.
    pub fn encode_with_crc(&self, e: Endian, data: &[u8], data_crc: u32, out: &mut Vec<u8>) {
        let start = out.len();
        let csize = data.len() as u32;
        put_header(e, out, NODETYPE_INODE, INODE_SIZE as u32 + csize);
        e.put_u32(out, self.ino);
        e.put_u32(out, self.version);
        e.put_u32(out, self.mode);
        e.put_u16(out, self.uid);
        e.put_u16(out, self.gid);
        e.put_u32(out, self.isize);
        e.put_u32(out, self.atime);
        e.put_u32(out, self.mtime);
        e.put_u32(out, self.ctime);
        e.put_u32(out, self.offset);
        e.put_u32(out, csize);
        e.put_u32(out, self.dsize);
        out.push(self.compr);
        out.push(self.usercompr);
        e.put_u16(out, self.flags);
        e.put_u32(out, data_crc);
        let node_crc = crc32(&out[start..start + 60]);
        e.put_u32(out, node_crc);
        out.extend_from_slice(data);
    }

    /// Decodes the 68-byte inode header at the start of `b`.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<Self, FormatError> {
        need(b, INODE_SIZE, "inode node", offset)?;
        Ok(InodeNode {
            ino: r32(e, b, 12),
            version: r32(e, b, 16),
            mode: r32(e, b, 20),
            uid: r16(e, b, 24),
            gid: r16(e, b, 26),
            isize: r32(e, b, 28),
            atime: r32(e, b, 32),
            mtime: r32(e, b, 36),
            ctime: r32(e, b, 40),
            offset: r32(e, b, 44),
            csize: r32(e, b, 48),
            dsize: r32(e, b, 52),
            compr: b[56],
            usercompr: b[57],
            flags: r16(e, b, 58),
            data_crc: r32(e, b, 60),
            node_crc: r32(e, b, 64),
        })
    }

    /// The stored data of an inode node that starts at `b[0]`, if present.
    pub fn data<'a>(&self, b: &'a [u8]) -> Option<&'a [u8]> {
        b.get(INODE_SIZE..INODE_SIZE.checked_add(self.csize as usize)?)
    }

    /// Whether the node CRC (bytes 0..60) matches, with the ACCURATE bit put back.
    pub fn node_crc_ok(&self, b: &[u8], e: Endian) -> bool {
        accurate_crc(b, 60, e) == Some(self.node_crc)
    }

    /// Whether the data CRC matches.
    pub fn data_crc_ok(&self, b: &[u8]) -> bool {
        self.data(b).map(crc32) == Some(self.data_crc)
    }
}

/// An xattr datum node, `struct jffs2_raw_xattr` (§2.5).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct XattrNode {
    /// xattr id.
    pub xid: u32,
    /// Version.
    pub version: u32,
    /// Name prefix id (see [`super::xprefix`]).
    pub xprefix: u8,
    /// Name length (without prefix).
    pub name_len: u8,
    /// Value length.
    pub value_len: u16,
    /// Stored data CRC (decode only).
    pub data_crc: u32,
    /// Stored node CRC (decode only).
    pub node_crc: u32,
}

impl XattrNode {
    /// Appends the xattr node: header, `name`, NUL, `value`, with
    /// `totlen = PAD(32 + name_len + 1 + value_len)` (xattr totlen is the *padded* length,
    /// §1.2). The 0xFF padding itself is left to the caller like for every node.
    pub fn encode(&self, e: Endian, name: &[u8], value: &[u8], out: &mut Vec<u8>) {
        let start = out.len();
        let raw = XATTR_SIZE + name.len() + 1 + value.len();
        put_header(e, out, NODETYPE_XATTR, super::pad4(raw as u32));
        e.put_u32(out, self.xid);
        e.put_u32(out, self.version);
        out.push(self.xprefix);
        out.push(name.len() as u8);
        e.put_u16(out, value.len() as u16);
        let data_crc = crate::crc::crc32_update(crate::crc::crc32_update(crc32(name), &[0]), value);
        e.put_u32(out, data_crc);
        let node_crc = crc32(&out[start..start + 28]);
        e.put_u32(out, node_crc);
        out.extend_from_slice(name);
        out.push(0);
        out.extend_from_slice(value);
    }

    /// Decodes the fixed part of an xattr node at the start of `b`.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<Self, FormatError> {
        need(b, XATTR_SIZE, "xattr node", offset)?;
        Ok(XattrNode {
            xid: r32(e, b, 12),
            version: r32(e, b, 16),
            xprefix: b[20],
            name_len: b[21],
            value_len: r16(e, b, 22),
            data_crc: r32(e, b, 24),
            node_crc: r32(e, b, 28),
        })
    }

    /// Name and value of an xattr node that starts at `b[0]`, if present.
    pub fn name_value<'a>(&self, b: &'a [u8]) -> Option<(&'a [u8], &'a [u8])> {
        let n = self.name_len as usize;
        let name = b.get(XATTR_SIZE..XATTR_SIZE + n)?;
        let v0 = XATTR_SIZE + n + 1;
        let value = b.get(v0..v0 + self.value_len as usize)?;
        Some((name, value))
    }

    /// Whether the node CRC (bytes 0..28) matches.
    pub fn node_crc_ok(&self, b: &[u8], e: Endian) -> bool {
        accurate_crc(b, 28, e) == Some(self.node_crc)
    }

    /// Whether the data CRC (name, NUL, value) matches.
    pub fn data_crc_ok(&self, b: &[u8]) -> bool {
        let n = self.name_len as usize + 1 + self.value_len as usize;
        b.get(XATTR_SIZE..XATTR_SIZE + n).map(crc32) == Some(self.data_crc)
    }
}

/// An xattr reference node, `struct jffs2_raw_xref` (§2.6).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct XrefNode {
    /// Inode the xattr belongs to.
    pub ino: u32,
    /// xattr id.
    pub xid: u32,
    /// Sequence number (odd = deleted).
    pub xseqno: u32,
    /// Stored node CRC (decode only).
    pub node_crc: u32,
}

impl XrefNode {
    /// Appends the 28-byte xref node.
    pub fn encode(&self, e: Endian, out: &mut Vec<u8>) {
        let start = out.len();
        put_header(e, out, NODETYPE_XREF, XREF_SIZE as u32);
        e.put_u32(out, self.ino);
        e.put_u32(out, self.xid);
        e.put_u32(out, self.xseqno);
        let node_crc = crc32(&out[start..start + 24]);
        e.put_u32(out, node_crc);
    }

    /// Decodes an xref node at the start of `b`.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<Self, FormatError> {
        need(b, XREF_SIZE, "xref node", offset)?;
        Ok(XrefNode {
            ino: r32(e, b, 12),
            xid: r32(e, b, 16),
            xseqno: r32(e, b, 20),
            node_crc: r32(e, b, 24),
        })
    }

    /// Whether the node CRC (bytes 0..24) matches.
    pub fn node_crc_ok(&self, b: &[u8], e: Endian) -> bool {
        accurate_crc(b, 24, e) == Some(self.node_crc)
    }
}

/// Appends a cleanmarker of `size` bytes: a bare header with `totlen = size`, then
/// `size - 12` bytes of 0xFF (§2.7). Alignment padding is left to the caller.
pub fn encode_cleanmarker(e: Endian, size: u32, out: &mut Vec<u8>) {
    put_header(e, out, NODETYPE_CLEANMARKER, size);
    let extra = (size as usize).saturating_sub(HEADER_SIZE);
    out.resize(out.len() + extra, 0xFF);
}

/// Appends a padding node of `totlen` bytes (kernel style: header, then 0xFF).
/// mkfs.jffs2 and sumtool never write these (§2.10); the kernel and `jffs2-convert` do.
pub fn encode_padding(e: Endian, totlen: u32, out: &mut Vec<u8>) {
    put_header(e, out, NODETYPE_PADDING, totlen);
    let extra = (totlen as usize).saturating_sub(HEADER_SIZE);
    out.resize(out.len() + extra, 0xFF);
}

/// One record of an erase-block summary (`summary.h`, §2.8). Offsets are relative to the
/// start of the erase block; `totlen` is the node's unpadded totlen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SumRecord {
    /// An inode node.
    Inode {
        /// Node type as stored on flash.
        nodetype: u16,
        /// Inode number.
        inode: u32,
        /// Version.
        version: u32,
        /// Offset in the block.
        offset: u32,
        /// Node totlen.
        totlen: u32,
    },
    /// A dirent node.
    Dirent {
        /// Node type as stored on flash.
        nodetype: u16,
        /// Node totlen.
        totlen: u32,
        /// Offset in the block.
        offset: u32,
        /// Parent inode.
        pino: u32,
        /// Version.
        version: u32,
        /// Target inode.
        ino: u32,
        /// `DT_*` type.
        dtype: u8,
        /// Name (`nsize` bytes).
        name: Vec<u8>,
    },
    /// An xattr datum node.
    Xattr {
        /// Node type as stored on flash.
        nodetype: u16,
        /// xattr id.
        xid: u32,
        /// Version.
        version: u32,
        /// Offset in the block.
        offset: u32,
        /// Node totlen.
        totlen: u32,
    },
    /// An xref node.
    Xref {
        /// Node type as stored on flash.
        nodetype: u16,
        /// Offset in the block.
        offset: u32,
    },
}

impl SumRecord {
    /// Encoded size of the record.
    pub fn size(&self) -> usize {
        match self {
            SumRecord::Inode { .. } => SUM_INODE_SIZE,
            SumRecord::Xattr { .. } => SUM_XATTR_SIZE,
            SumRecord::Dirent { name, .. } => SUM_DIRENT_SIZE + name.len(),
            SumRecord::Xref { .. } => SUM_XREF_SIZE,
        }
    }

    /// Appends the packed record.
    pub fn encode(&self, e: Endian, out: &mut Vec<u8>) {
        match self {
            SumRecord::Inode {
                nodetype,
                inode,
                version,
                offset,
                totlen,
            } => {
                e.put_u16(out, *nodetype);
                e.put_u32(out, *inode);
                e.put_u32(out, *version);
                e.put_u32(out, *offset);
                e.put_u32(out, *totlen);
            }
            SumRecord::Dirent {
                nodetype,
                totlen,
                offset,
                pino,
                version,
                ino,
                dtype,
                name,
            } => {
                e.put_u16(out, *nodetype);
                e.put_u32(out, *totlen);
                e.put_u32(out, *offset);
                e.put_u32(out, *pino);
                e.put_u32(out, *version);
                e.put_u32(out, *ino);
                out.push(name.len() as u8);
                out.push(*dtype);
                out.extend_from_slice(name);
            }
            SumRecord::Xattr {
                nodetype,
                xid,
                version,
                offset,
                totlen,
            } => {
                e.put_u16(out, *nodetype);
                e.put_u32(out, *xid);
                e.put_u32(out, *version);
                e.put_u32(out, *offset);
                e.put_u32(out, *totlen);
            }
            SumRecord::Xref { nodetype, offset } => {
                e.put_u16(out, *nodetype);
                e.put_u32(out, *offset);
            }
        }
    }

    /// Decodes one record at the start of `b`; returns it and its size. `offset` is the
    /// record's absolute offset, for errors. Unknown record types are an error.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<(Self, usize), FormatError> {
        need(b, 2, "summary record", offset)?;
        let nodetype = r16(e, b, 0);
        match nodetype | NODE_ACCURATE {
            NODETYPE_INODE => {
                need(b, SUM_INODE_SIZE, "summary inode record", offset)?;
                Ok((
                    SumRecord::Inode {
                        nodetype,
                        inode: r32(e, b, 2),
                        version: r32(e, b, 6),
                        offset: r32(e, b, 10),
                        totlen: r32(e, b, 14),
                    },
                    SUM_INODE_SIZE,
                ))
            }
            NODETYPE_DIRENT => {
                need(b, SUM_DIRENT_SIZE, "summary dirent record", offset)?;
                let nsize = b[SUM_DIRENT_NSIZE_AT] as usize;
                need(b, SUM_DIRENT_SIZE + nsize, "summary dirent record", offset)?;
                Ok((
                    SumRecord::Dirent {
                        nodetype,
                        totlen: r32(e, b, 2),
                        offset: r32(e, b, 6),
                        pino: r32(e, b, 10),
                        version: r32(e, b, 14),
                        ino: r32(e, b, 18),
                        dtype: b[23],
                        name: b[SUM_DIRENT_SIZE..SUM_DIRENT_SIZE + nsize].to_vec(),
                    },
                    SUM_DIRENT_SIZE + nsize,
                ))
            }
            NODETYPE_XATTR => {
                need(b, SUM_XATTR_SIZE, "summary xattr record", offset)?;
                Ok((
                    SumRecord::Xattr {
                        nodetype,
                        xid: r32(e, b, 2),
                        version: r32(e, b, 6),
                        offset: r32(e, b, 10),
                        totlen: r32(e, b, 14),
                    },
                    SUM_XATTR_SIZE,
                ))
            }
            NODETYPE_XREF => {
                need(b, SUM_XREF_SIZE, "summary xref record", offset)?;
                Ok((
                    SumRecord::Xref {
                        nodetype,
                        offset: r32(e, b, 2),
                    },
                    SUM_XREF_SIZE,
                ))
            }
            _ => Err(FormatError::WrongType {
                offset,
                found: nodetype,
                expected: NODETYPE_INODE,
            }),
        }
    }
}

/// The fixed part of an erase-block summary node, `struct jffs2_raw_summary` (§2.8).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SummaryNode {
    /// Number of records.
    pub sum_num: u32,
    /// Cleanmarker size in this block (0 for none).
    pub cln_mkr: u32,
    /// Bytes of padding nodes in the block (the kernel fills this; sumtool writes 0).
    pub padded: u32,
    /// Stored CRC of everything after the 32-byte header (decode only).
    pub sum_crc: u32,
    /// Stored CRC of bytes 0..24 (decode only).
    pub node_crc: u32,
}

impl SummaryNode {
    /// Appends a complete summary node for a block of `block_size` bytes, placed at
    /// `offset_in_block`: header, records, 0xFF fill, and the 8-byte marker (this node's
    /// offset, then [`SUM_MAGIC`]) in the last 8 bytes of the block. `totlen` runs to
    /// the end of the block. Returns `None` if the records do not fit.
    pub fn encode(
        &self,
        e: Endian,
        records: &[SumRecord],
        offset_in_block: u32,
        block_size: u32,
        out: &mut Vec<u8>,
    ) -> Option<()> {
        let totlen = block_size.checked_sub(offset_in_block)?;
        let rec_len: usize = records.iter().map(SumRecord::size).sum();
        if (totlen as usize) < SUMMARY_SIZE + rec_len + SUMMARY_MARKER_SIZE {
            return None;
        }
        let start = out.len();
        put_header(e, out, NODETYPE_SUMMARY, totlen);
        e.put_u32(out, records.len() as u32);
        e.put_u32(out, self.cln_mkr);
        e.put_u32(out, self.padded);
        let sum_crc_at = out.len();
        e.put_u32(out, 0); // sum_crc, patched below
        let node_crc = crc32(&out[start..start + 24]);
        e.put_u32(out, node_crc);
        for r in records {
            r.encode(e, out);
        }
        let fill_to = start + totlen as usize - SUMMARY_MARKER_SIZE;
        out.resize(fill_to, 0xFF);
        e.put_u32(out, offset_in_block);
        e.put_u32(out, SUM_MAGIC);
        let sum_crc = crc32(&out[start + SUMMARY_SIZE..]);
        out[sum_crc_at..sum_crc_at + 4].copy_from_slice(&e.u32_bytes(sum_crc));
        Some(())
    }

    /// Decodes the fixed part of a summary node at the start of `b`.
    pub fn decode(b: &[u8], e: Endian, offset: u64) -> Result<Self, FormatError> {
        need(b, SUMMARY_SIZE, "summary node", offset)?;
        Ok(SummaryNode {
            sum_num: r32(e, b, 12),
            cln_mkr: r32(e, b, 16),
            padded: r32(e, b, 20),
            sum_crc: r32(e, b, 24),
            node_crc: r32(e, b, 28),
        })
    }

    /// Whether the node CRC (bytes 0..24) matches.
    pub fn node_crc_ok(&self, b: &[u8], e: Endian) -> bool {
        accurate_crc(b, 24, e) == Some(self.node_crc)
    }

    /// Whether the summary CRC over `b[32..totlen]` matches.
    pub fn sum_crc_ok(&self, b: &[u8], totlen: u32) -> bool {
        b.get(SUMMARY_SIZE..totlen as usize).map(crc32) == Some(self.sum_crc)
    }

    /// Decodes the `sum_num` records that follow the header of a summary node starting at
    /// `b[0]`; `offset` is the node's absolute offset.
    pub fn records(&self, b: &[u8], e: Endian, offset: u64) -> Result<Vec<SumRecord>, FormatError> {
        let mut at = SUMMARY_SIZE;
        // Each record takes at least 6 bytes: never trust sum_num for the allocation.
        let mut v = Vec::with_capacity((self.sum_num as usize).min(b.len() / 6));
        for _ in 0..self.sum_num {
            let rest = b.get(at..).unwrap_or(&[]);
            let (r, n) = SumRecord::decode(rest, e, offset + at as u64)?;
            v.push(r);
            at += n;
        }
        Ok(v)
    }
}

/// A node type whose decoder this module has, or [`NodeKind::Other`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeKind {
    /// 0xE001.
    Dirent,
    /// 0xE002.
    Inode,
    /// 0x2003.
    Cleanmarker,
    /// 0x2004.
    Padding,
    /// 0x2006.
    Summary,
    /// 0xE008.
    Xattr,
    /// 0xE009.
    Xref,
    /// Anything else (handled by its compatibility class).
    Other,
}

impl NodeKind {
    /// Classifies a node type, ignoring the ACCURATE bit.
    pub fn of(nodetype: u16) -> NodeKind {
        match nodetype | NODE_ACCURATE {
            NODETYPE_DIRENT => NodeKind::Dirent,
            NODETYPE_INODE => NodeKind::Inode,
            NODETYPE_CLEANMARKER => NodeKind::Cleanmarker,
            NODETYPE_PADDING => NodeKind::Padding,
            NODETYPE_SUMMARY => NodeKind::Summary,
            NODETYPE_XATTR => NodeKind::Xattr,
            NODETYPE_XREF => NodeKind::Xref,
            _ => NodeKind::Other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(s: &str) -> Vec<u8> {
        s.split_whitespace()
            .map(|h| u8::from_str_radix(h, 16).unwrap())
            .collect()
    }

    /// The worked example of `docs/spec/mtd-utils-spec.md` §2.9 (mkfs.jffs2 -f -l, one file "a.txt").
    #[test]
    fn spec_worked_example() {
        let e = Endian::Little;
        let mut out = Vec::new();
        encode_cleanmarker(e, 12, &mut out);
        let d = DirentNode {
            pino: 1,
            version: 0,
            ino: 2,
            mctime: 0,
            dtype: 8,
            ..Default::default()
        };
        d.encode(e, b"a.txt", &mut out);
        out.resize(super::super::pad4(out.len() as u32) as usize, 0xFF);
        let i = InodeNode {
            ino: 2,
            version: 1,
            mode: 0o100644,
            isize: 6,
            dsize: 6,
            ..Default::default()
        };
        i.encode(e, b"hello\n", &mut out);
        out.resize(super::super::pad4(out.len() as u32) as usize, 0xFF);
        let expect = hex("85 19 03 20 0c 00 00 00 b1 b0 1e e4
             85 19 01 e0 2d 00 00 00 3a 31 4d 58
             01 00 00 00 00 00 00 00 02 00 00 00 00 00 00 00
             05 08 00 00 53 04 91 b0 a7 00 c9 07
             61 2e 74 78 74 ff ff ff
             85 19 02 e0 4a 00 00 00 2e 8c 28 78
             02 00 00 00 01 00 00 00 a4 81 00 00 00 00 00 00
             06 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00
             00 00 00 00 06 00 00 00 06 00 00 00 00 00 00 00
             83 91 f8 87 4c 6b d9 11
             68 65 6c 6c 6f 0a ff ff");
        assert_eq!(out, expect);
    }

    #[test]
    fn round_trips_both_endians() {
        for e in [Endian::Little, Endian::Big] {
            let d = DirentNode {
                pino: 7,
                version: 3,
                ino: 9,
                mctime: 1234,
                nsize: 4,
                dtype: 4,
                ..Default::default()
            };
            let mut b = Vec::new();
            d.encode(e, b"name", &mut b);
            let h = NodeHeader::decode(&b, e, 0).unwrap();
            assert_eq!(h.magic, MAGIC);
            assert_eq!(h.totlen, 44);
            assert!(h.crc_ok(e));
            let back = DirentNode::decode(&b, e, 0).unwrap();
            assert_eq!(back.name(&b), Some(&b"name"[..]));
            assert!(back.node_crc_ok(&b, e) && back.name_crc_ok(&b));
            assert_eq!(
                (back.pino, back.version, back.ino, back.mctime),
                (7, 3, 9, 1234)
            );

            let i = InodeNode {
                ino: 5,
                version: 2,
                mode: 0o100600,
                uid: 1000,
                gid: 100,
                isize: 10,
                atime: 1,
                mtime: 2,
                ctime: 3,
                offset: 4,
                dsize: 6,
                compr: 6,
                ..Default::default()
            };
            let mut b = Vec::new();
            i.encode(e, b"abcdef", &mut b);
            let back = InodeNode::decode(&b, e, 0).unwrap();
            assert!(back.node_crc_ok(&b, e) && back.data_crc_ok(&b));
            assert_eq!(back.csize, 6);
            assert_eq!(back.data(&b), Some(&b"abcdef"[..]));
            assert_eq!(
                InodeNode {
                    csize: 6,
                    data_crc: back.data_crc,
                    node_crc: back.node_crc,
                    ..i
                },
                back
            );

            let x = XattrNode {
                xid: 1,
                version: 1,
                xprefix: 1,
                ..Default::default()
            };
            let mut b = Vec::new();
            x.encode(e, b"foo", b"bar!", &mut b);
            let h = NodeHeader::decode(&b, e, 0).unwrap();
            assert_eq!(h.totlen, 40);
            let back = XattrNode::decode(&b, e, 0).unwrap();
            assert!(back.node_crc_ok(&b, e) && back.data_crc_ok(&b));
            assert_eq!(back.name_value(&b), Some((&b"foo"[..], &b"bar!"[..])));

            let r = XrefNode {
                ino: 3,
                xid: 1,
                xseqno: 2,
                ..Default::default()
            };
            let mut b = Vec::new();
            r.encode(e, &mut b);
            let back = XrefNode::decode(&b, e, 0).unwrap();
            assert!(back.node_crc_ok(&b, e));
            assert_eq!((back.ino, back.xid, back.xseqno), (3, 1, 2));
        }
    }

    #[test]
    fn cleanmarker_vectors() {
        let mut b = Vec::new();
        encode_cleanmarker(Endian::Big, 12, &mut b);
        assert_eq!(b, hex("19 85 20 03 00 00 00 0c f0 60 dc 98"));
        let mut b = Vec::new();
        encode_cleanmarker(Endian::Little, 16, &mut b);
        assert_eq!(b.len(), 16);
        assert_eq!(&b[12..], &[0xFF; 4]);
    }

    #[test]
    fn obsolete_node_crc_is_checked_with_accurate_bit() {
        for e in [Endian::Little, Endian::Big] {
            let mut b = Vec::new();
            XrefNode::default().encode(e, &mut b);
            // Obsolete it: clear the ACCURATE bit in place.
            let t = e.get_u16(&b, 2).unwrap() & !NODE_ACCURATE;
            b[2..4].copy_from_slice(&e.u16_bytes(t));
            let h = NodeHeader::decode(&b, e, 0).unwrap();
            assert!(!h.is_accurate());
            assert!(h.crc_ok(e));
            assert!(XrefNode::decode(&b, e, 0).unwrap().node_crc_ok(&b, e));
        }
    }

    #[test]
    fn summary_round_trip() {
        for e in [Endian::Little, Endian::Big] {
            let recs = vec![
                SumRecord::Inode {
                    nodetype: NODETYPE_INODE,
                    inode: 2,
                    version: 1,
                    offset: 12,
                    totlen: 74,
                },
                SumRecord::Dirent {
                    nodetype: NODETYPE_DIRENT,
                    totlen: 45,
                    offset: 88,
                    pino: 1,
                    version: 0,
                    ino: 2,
                    dtype: 8,
                    name: b"a.txt".to_vec(),
                },
                SumRecord::Xattr {
                    nodetype: NODETYPE_XATTR,
                    xid: 1,
                    version: 1,
                    offset: 140,
                    totlen: 40,
                },
                SumRecord::Xref {
                    nodetype: NODETYPE_XREF,
                    offset: 180,
                },
            ];
            let s = SummaryNode {
                cln_mkr: 12,
                ..Default::default()
            };
            let mut b = Vec::new();
            s.encode(e, &recs, 208, 8192, &mut b).unwrap();
            assert_eq!(b.len(), 8192 - 208);
            let h = NodeHeader::decode(&b, e, 208).unwrap();
            assert!(h.crc_ok(e));
            let back = SummaryNode::decode(&b, e, 208).unwrap();
            assert!(back.node_crc_ok(&b, e));
            assert!(back.sum_crc_ok(&b, h.totlen));
            assert_eq!(back.sum_num, 4);
            assert_eq!(back.records(&b, e, 208).unwrap(), recs);
            let n = b.len();
            assert_eq!(e.get_u32(&b, n - 8), Some(208));
            assert_eq!(e.get_u32(&b, n - 4), Some(SUM_MAGIC));
        }
    }

    #[test]
    fn decoders_reject_short_input_without_panicking() {
        let e = Endian::Little;
        for n in 0..80 {
            let b = vec![0x85u8; n];
            let _ = NodeHeader::decode(&b, e, 0);
            let _ = DirentNode::decode(&b, e, 0).map(|d| (d.name(&b), d.name_crc_ok(&b)));
            let _ = InodeNode::decode(&b, e, 0).map(|i| (i.data(&b), i.data_crc_ok(&b)));
            let _ = XattrNode::decode(&b, e, 0).map(|x| (x.name_value(&b), x.data_crc_ok(&b)));
            let _ = XrefNode::decode(&b, e, 0);
            let _ = SummaryNode::decode(&b, e, 0).map(|s| s.records(&b, e, 0));
            let _ = SumRecord::decode(&b, e, 0);
        }
        assert!(matches!(
            InodeNode::decode(&[0; 10], e, 0x40),
            Err(FormatError::Truncated { offset: 0x40, .. })
        ));
    }
}
