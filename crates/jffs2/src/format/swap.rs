//! One node in the other byte order (`docs/spec/kernel-jffs2-spec.md` §1): the field-by-field
//! conversion shared by `jffs2-dump -e` (`dump::swap_endian`, whole images) and
//! `jffs2-convert` (`convert`, nodes copied pristine into an image of the other byte order).
//! The rules are documented on `dump::swap_endian`.

use super::acl::convert_acl;
use super::dev::{NEW_DEV_SIZE, OLD_DEV_SIZE};
use super::{
    accurate_crc, xprefix, DirentNode, Endian, InodeNode, NodeHeader, NodeKind, SumRecord,
    SummaryNode, XattrNode, XrefNode, INODE_SIZE, SUMMARY_MARKER_SIZE, SUMMARY_SIZE, XATTR_SIZE,
};
use super::{S_IFBLK, S_IFCHR, S_IFMT};
use crate::compress::COMPR_NONE;
use crate::crc::crc32;

/// What the conversion met.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SwapReport {
    /// Nodes converted (valid headers), obsolete ones included.
    pub nodes: u64,
    /// Of these, obsolete nodes (kept, and kept obsolete; jffs2dump drops them).
    pub obsolete: u64,
    /// Of these, xref nodes (jffs2dump drops them).
    pub xrefs: u64,
    /// Of these, nodes of unknown type: header converted, body copied (jffs2dump drops them).
    pub unknown: u64,
    /// Of these, nodes of a known type whose fixed part does not fit in their totlen or in
    /// the image: header converted, rest copied.
    pub truncated: u64,
    /// Device numbers converted (jffs2dump copies them, corrupting them).
    pub device_numbers: u64,
    /// POSIX ACL values converted (jffs2dump copies them, corrupting them).
    pub acl_values: u64,
    /// CRCs (node, data, name or summary) that were wrong in the input and were kept wrong.
    pub bad_crcs_kept: u64,
    /// Words outside any node copied unchanged (no magic, or a wrong header CRC).
    pub junk_words: u64,
}

/// One whole, valid node in the other byte order, with every CRC recomputed: what a
/// rewriter copies "pristine" into an image of the other byte order. `None` unless `src`
/// is exactly one node (`totlen == src.len()`) whose header CRC is right and whose known
/// fixed part converts without a CRC that was already wrong.
pub fn swap_node(src: &[u8], from: Endian) -> Option<Vec<u8>> {
    let h = NodeHeader::decode(src, from, 0).ok()?;
    if !h.crc_ok(from) || h.totlen as usize != src.len() {
        return None;
    }
    let mut c = Converter {
        from,
        to: other(from),
        recalc: false,
        report: SwapReport::default(),
    };
    let mut b = src.to_vec();
    c.node(&h, src, &mut b, 0);
    (c.report.truncated == 0 && c.report.bad_crcs_kept == 0).then_some(b)
}

pub(crate) fn other(e: Endian) -> Endian {
    match e {
        Endian::Little => Endian::Big,
        Endian::Big => Endian::Little,
    }
}

/// The converter of one node; `dump::swap_endian` drives it over a whole image.
pub(crate) struct Converter {
    pub(crate) from: Endian,
    pub(crate) to: Endian,
    pub(crate) recalc: bool,
    pub(crate) report: SwapReport,
}

impl Converter {
    /// Converts the node `src` (its bytes within totlen and the image) into `b`, which
    /// holds a copy of `src`.
    pub(crate) fn node(&mut self, h: &NodeHeader, src: &[u8], b: &mut [u8], off: u64) {
        self.report.nodes += 1;
        if !h.is_accurate() {
            self.report.obsolete += 1;
        }
        let th = NodeHeader {
            hdr_crc: h.computed_crc(self.to),
            ..*h
        };
        if th.store(self.to, b).is_none() {
            return;
        }
        let done = match NodeKind::of(h.nodetype) {
            NodeKind::Inode => self.inode(src, b, off),
            NodeKind::Dirent => self.dirent(src, b, off),
            NodeKind::Xattr => self.xattr(src, b, off),
            NodeKind::Xref => {
                self.report.xrefs += 1;
                self.xref(src, b, off)
            }
            NodeKind::Summary => self.summary(h, src, b, off),
            NodeKind::Cleanmarker | NodeKind::Padding => Some(()),
            NodeKind::Other => {
                self.report.unknown += 1;
                Some(())
            }
        };
        if done.is_none() {
            self.report.truncated += 1;
        }
    }

    /// The node CRC of `b[..n]` in the output, if it was right in the input; else `stored`.
    fn node_crc(&mut self, ok: bool, b: &[u8], n: usize, stored: u32) -> u32 {
        if ok {
            if let Some(c) = accurate_crc(b, n, self.to) {
                return c;
            }
        }
        self.report.bad_crcs_kept += 1;
        stored
    }

    fn inode(&mut self, src: &[u8], b: &mut [u8], off: u64) -> Option<()> {
        let (from, to) = (self.from, self.to);
        let n = InodeNode::decode(src, from, off).ok()?;
        let node_ok = n.node_crc_ok(src, from);
        let data_ok = n.data_crc_ok(src);
        let data = INODE_SIZE..INODE_SIZE.saturating_add(n.csize as usize);
        let mut t = n.clone();
        let is_dev = matches!(n.mode & S_IFMT, S_IFCHR | S_IFBLK)
            && n.compr == COMPR_NONE
            && n.csize == n.dsize
            && matches!(n.csize as usize, OLD_DEV_SIZE | NEW_DEV_SIZE);
        let mut data_changed = false;
        if is_dev {
            // The payload is whole in `src` exactly when it is in `b` (a copy of it).
            let swapped = match (b.get_mut(data.clone()), n.csize) {
                (Some(d), 2) => from
                    .get_u16(src, INODE_SIZE)
                    .map(|v| d.copy_from_slice(&to.u16_bytes(v))),
                (Some(d), _) => from
                    .get_u32(src, INODE_SIZE)
                    .map(|v| d.copy_from_slice(&to.u32_bytes(v))),
                (None, _) => None,
            };
            if swapped.is_some() {
                data_changed = true;
                self.report.device_numbers += 1;
            }
        }
        let new_data_crc = b.get(data).map(crc32);
        match new_data_crc {
            Some(c) if self.recalc || (data_ok && data_changed) => t.data_crc = c,
            _ if !data_ok => self.report.bad_crcs_kept += 1,
            _ => {}
        }
        t.store(to, b)?;
        t.node_crc = self.node_crc(node_ok, b, INODE_SIZE - 8, n.node_crc);
        t.store(to, b)
    }

    fn dirent(&mut self, src: &[u8], b: &mut [u8], off: u64) -> Option<()> {
        let (from, to) = (self.from, self.to);
        let d = DirentNode::decode(src, from, off).ok()?;
        let node_ok = d.node_crc_ok(src, from);
        let mut t = d.clone();
        match d.name(src) {
            Some(name) if self.recalc => t.name_crc = crc32(name),
            _ if !d.name_crc_ok(src) => self.report.bad_crcs_kept += 1,
            _ => {}
        }
        t.store(to, b)?;
        t.node_crc = self.node_crc(node_ok, b, 32, d.node_crc);
        t.store(to, b)
    }

    fn xattr(&mut self, src: &[u8], b: &mut [u8], off: u64) -> Option<()> {
        let (from, to) = (self.from, self.to);
        let x = XattrNode::decode(src, from, off).ok()?;
        let node_ok = x.node_crc_ok(src, from);
        let data_ok = x.data_crc_ok(src);
        let name_len = usize::from(x.name_len);
        let data = XATTR_SIZE..XATTR_SIZE + name_len + 1 + usize::from(x.value_len);
        let mut t = x.clone();
        let mut data_changed = false;
        if matches!(x.xprefix, xprefix::ACL_ACCESS | xprefix::ACL_DEFAULT) {
            let v = XATTR_SIZE + name_len + 1..data.end;
            if let (Some(sv), Some(dv)) = (src.get(v.clone()), b.get_mut(v)) {
                convert_acl(sv, dv, from, to);
                data_changed = true;
                self.report.acl_values += 1;
            }
        }
        match b.get(data).map(crc32) {
            Some(c) if self.recalc || (data_ok && data_changed) => t.data_crc = c,
            _ if !data_ok => self.report.bad_crcs_kept += 1,
            _ => {}
        }
        t.store(to, b)?;
        t.node_crc = self.node_crc(node_ok, b, XATTR_SIZE - 4, x.node_crc);
        t.store(to, b)
    }

    fn xref(&mut self, src: &[u8], b: &mut [u8], off: u64) -> Option<()> {
        let r = XrefNode::decode(src, self.from, off).ok()?;
        let node_ok = r.node_crc_ok(src, self.from);
        let mut t = r.clone();
        t.store(self.to, b)?;
        t.node_crc = self.node_crc(node_ok, b, 24, r.node_crc);
        t.store(self.to, b)
    }

    fn summary(&mut self, h: &NodeHeader, src: &[u8], b: &mut [u8], off: u64) -> Option<()> {
        let (from, to) = (self.from, self.to);
        let s = SummaryNode::decode(src, from, off).ok()?;
        let node_ok = s.node_crc_ok(src, from);
        let sum_ok = s.sum_crc_ok(src, h.totlen);
        let totlen = h.totlen as usize;
        // A whole node has its marker in its last 8 bytes; records end there.
        let marker = (totlen == src.len() && totlen >= SUMMARY_SIZE + SUMMARY_MARKER_SIZE)
            .then(|| totlen - SUMMARY_MARKER_SIZE);
        let rec_end = marker.unwrap_or(src.len());
        let mut at = SUMMARY_SIZE;
        let mut rec = Vec::new();
        for _ in 0..s.sum_num {
            let Some(r) = src.get(at..rec_end) else { break };
            if r.is_empty() {
                break;
            }
            match SumRecord::decode(r, from, off + at as u64) {
                Ok((record, n)) => {
                    rec.clear();
                    record.encode(to, &mut rec);
                    match b.get_mut(at..at + n) {
                        Some(d) if rec.len() == n => d.copy_from_slice(&rec),
                        _ => break,
                    }
                    at += n;
                }
                Err(_) => {
                    // Unknown or cut short: its type is converted all the same, so that
                    // the output stops at the same record when read back.
                    if let (Some(t), Some(d)) = (from.get_u16(r, 0), b.get_mut(at..at + 2)) {
                        d.copy_from_slice(&to.u16_bytes(t));
                    }
                    break;
                }
            }
        }
        if let Some(m) = marker {
            for at in [m, m + 4] {
                if let (Some(v), Some(d)) = (from.get_u32(src, at), b.get_mut(at..at + 4)) {
                    d.copy_from_slice(&to.u32_bytes(v));
                }
            }
        }
        let mut t = s.clone();
        match b.get(SUMMARY_SIZE..totlen) {
            Some(rest) if sum_ok => t.sum_crc = crc32(rest),
            _ => self.report.bad_crcs_kept += 1,
        }
        t.store(to, b)?;
        t.node_crc = self.node_crc(node_ok, b, 24, s.node_crc);
        t.store(to, b)
    }
}
