//! Tests of the mount scan and the autodetection.
//!
//! `rules`: one test per kernel rule on crafted nodes; `summary`: the EBS path;
//! `images`: kernel-written fixtures and mkfs.jffs2/sumtool images; `detect`: geometry
//! detection; `robust`: random and mutated images.

mod conformance;
mod detect;
mod images;
mod robust;
mod rules;
mod summary;

use super::{scan, Geometry, Scan, ScanOptions};
use crate::crc::crc32;
use crate::format::{
    encode_cleanmarker, pad4, DirentNode, Endian, InodeNode, XattrNode, XrefNode, MAGIC,
};
use crate::testing::Img;

/// Flash written by hand: the shared test image with no laid-out nodes, only bytes put at
/// absolute offsets ([`Img::put`]) over erased blocks.
pub(super) type Flash = Img;

/// An erased flash of `blocks` blocks (no nodes, no cleanmarkers: the tests place them).
pub(super) fn erased(e: Endian, es: u32, blocks: u32) -> Flash {
    Img::new()
        .endian(e)
        .erase_size(es)
        .cleanmarkers(None)
        .min_blocks(blocks)
}

/// The mount scan of a hand-written flash.
pub(super) trait Scanned {
    /// The geometry of the flash with cleanmarker size `cm`.
    fn geom(&self, cm: u32) -> Geometry;
    /// Scans read-only with summaries and xattrs (Debian's kernel), cleanmarker size 12.
    fn scan(&self) -> Scan;
    /// Scans with cleanmarker size `cm` and `opts`.
    fn scan_with(&self, cm: u32, opts: ScanOptions) -> Scan;
}

impl Scanned for Flash {
    fn geom(&self, cm: u32) -> Geometry {
        Geometry {
            endian: self.e,
            erase_size: self.es,
            cleanmarker_size: cm,
        }
    }

    fn scan(&self) -> Scan {
        scan(&self.build(), &self.geom(12), &ScanOptions::default())
    }

    fn scan_with(&self, cm: u32, opts: ScanOptions) -> Scan {
        scan(&self.build(), &self.geom(cm), &opts)
    }
}

pub(super) fn cleanmarker(e: Endian) -> Vec<u8> {
    let mut v = Vec::new();
    encode_cleanmarker(e, 12, &mut v);
    v
}

/// An inode node with `data` stored uncompressed, padded to 4 bytes with 0xFF.
pub(super) fn inode(e: Endian, ino: u32, version: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    InodeNode {
        ino,
        version,
        mode: 0o100644,
        isize: data.len() as u32,
        dsize: data.len() as u32,
        ..Default::default()
    }
    .encode(e, data, &mut v);
    pad(v)
}

pub(super) fn dirent(e: Endian, pino: u32, ino: u32, version: u32, name: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    DirentNode {
        pino,
        version,
        ino,
        dtype: if ino == 0 { 0 } else { 8 },
        ..Default::default()
    }
    .encode(e, name, &mut v);
    pad(v)
}

pub(super) fn xattr(e: Endian, xid: u32, version: u32, name: &[u8], value: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    XattrNode {
        xid,
        version,
        xprefix: 1,
        ..Default::default()
    }
    .encode(e, name, value, &mut v);
    pad(v)
}

pub(super) fn xref(e: Endian, ino: u32, xid: u32, xseqno: u32) -> Vec<u8> {
    let mut v = Vec::new();
    XrefNode {
        ino,
        xid,
        xseqno,
        ..Default::default()
    }
    .encode(e, &mut v);
    v
}

/// A node of any type: a header with a valid CRC, then `totlen - 12` zero bytes.
pub(super) fn raw_node(e: Endian, nodetype: u16, totlen: u32) -> Vec<u8> {
    let mut v = header(e, nodetype, totlen);
    v.resize(totlen.max(12) as usize, 0);
    pad(v)
}

/// A 12-byte header with a valid CRC (ACCURATE bit forced into the CRC).
pub(super) fn header(e: Endian, nodetype: u16, totlen: u32) -> Vec<u8> {
    let mut v = Vec::new();
    e.put_u16(&mut v, MAGIC);
    e.put_u16(&mut v, nodetype | 0x2000);
    e.put_u32(&mut v, totlen);
    let crc = crc32(&v);
    v[2..4].copy_from_slice(&e.u16_bytes(nodetype));
    e.put_u32(&mut v, crc);
    v
}

/// Recomputes the header CRC and a node CRC over `node[..crc_at]` stored at `crc_at`.
pub(super) fn refresh(e: Endian, node: &mut [u8], crc_at: usize) {
    let h = crc32(&node[..8]);
    node[8..12].copy_from_slice(&e.u32_bytes(h));
    let c = crc32(&node[..crc_at]);
    node[crc_at..crc_at + 4].copy_from_slice(&e.u32_bytes(c));
}

pub(super) fn pad(mut v: Vec<u8>) -> Vec<u8> {
    v.resize(pad4(v.len() as u32) as usize, 0xFF);
    v
}

pub(super) fn texts(s: &Scan) -> Vec<String> {
    s.log.iter().map(|m| m.text.clone()).collect()
}
