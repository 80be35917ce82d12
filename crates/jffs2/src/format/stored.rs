//! Writing decoded nodes back *as stored*: every field, the CRC fields included, exactly as
//! the structure holds it, with nothing recomputed and `totlen` not derived from anything.
//!
//! The encoders of [`super::node`] build valid nodes; these helpers are their counterpart for
//! code that must reproduce a node field for field in another byte order — where a wrong CRC
//! has to stay wrong and an odd `totlen` has to stay odd (`jffs2-dump -e`, see
//! [`crate::dump`]). Each `store` writes only the bytes of the fields its structure models,
//! at their on-flash offsets, over a buffer that already holds the node: bytes a structure
//! does not model (a dirent's two `unused` bytes, names, data) are left as they are.
//! Every `store` returns `None`, and writes nothing, when the buffer is shorter than the
//! fixed part.

use super::{
    DirentNode, Endian, InodeNode, NodeHeader, SummaryNode, XattrNode, XrefNode, DIRENT_SIZE,
    HEADER_SIZE, INODE_SIZE, SUMMARY_SIZE, XATTR_SIZE, XREF_SIZE,
};

/// Writes `v` at `at` (the caller has checked the length).
fn w16(e: Endian, b: &mut [u8], at: usize, v: u16) {
    b[at..at + 2].copy_from_slice(&e.u16_bytes(v));
}

/// Writes `v` at `at` (the caller has checked the length).
fn w32(e: Endian, b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&e.u32_bytes(v));
}

impl NodeHeader {
    /// Writes the 12-byte header as stored (magic, type, totlen, hdr_crc) into `b[..12]`.
    pub fn store(&self, e: Endian, b: &mut [u8]) -> Option<()> {
        if b.len() < HEADER_SIZE {
            return None;
        }
        w16(e, b, 0, self.magic);
        w16(e, b, 2, self.nodetype);
        w32(e, b, 4, self.totlen);
        w32(e, b, 8, self.hdr_crc);
        Some(())
    }
}

impl DirentNode {
    /// Writes bytes 12..40 of a dirent as stored (pino, version, ino, mctime, nsize, type,
    /// node_crc, name_crc); the two `unused` bytes (30, 31) are left untouched.
    pub fn store(&self, e: Endian, b: &mut [u8]) -> Option<()> {
        if b.len() < DIRENT_SIZE {
            return None;
        }
        w32(e, b, 12, self.pino);
        w32(e, b, 16, self.version);
        w32(e, b, 20, self.ino);
        w32(e, b, 24, self.mctime);
        b[28] = self.nsize;
        b[29] = self.dtype;
        w32(e, b, 32, self.node_crc);
        w32(e, b, 36, self.name_crc);
        Some(())
    }
}

impl InodeNode {
    /// Writes bytes 12..68 of an inode node as stored, `csize`, `data_crc` and `node_crc`
    /// included.
    pub fn store(&self, e: Endian, b: &mut [u8]) -> Option<()> {
        if b.len() < INODE_SIZE {
            return None;
        }
        w32(e, b, 12, self.ino);
        w32(e, b, 16, self.version);
        w32(e, b, 20, self.mode);
        w16(e, b, 24, self.uid);
        w16(e, b, 26, self.gid);
        w32(e, b, 28, self.isize);
        w32(e, b, 32, self.atime);
        w32(e, b, 36, self.mtime);
        w32(e, b, 40, self.ctime);
        w32(e, b, 44, self.offset);
        w32(e, b, 48, self.csize);
        w32(e, b, 52, self.dsize);
        b[56] = self.compr;
        b[57] = self.usercompr;
        w16(e, b, 58, self.flags);
        w32(e, b, 60, self.data_crc);
        w32(e, b, 64, self.node_crc);
        Some(())
    }
}

impl XattrNode {
    /// Writes bytes 12..32 of an xattr node as stored.
    pub fn store(&self, e: Endian, b: &mut [u8]) -> Option<()> {
        if b.len() < XATTR_SIZE {
            return None;
        }
        w32(e, b, 12, self.xid);
        w32(e, b, 16, self.version);
        b[20] = self.xprefix;
        b[21] = self.name_len;
        w16(e, b, 22, self.value_len);
        w32(e, b, 24, self.data_crc);
        w32(e, b, 28, self.node_crc);
        Some(())
    }
}

impl XrefNode {
    /// Writes bytes 12..28 of an xref node as stored.
    pub fn store(&self, e: Endian, b: &mut [u8]) -> Option<()> {
        if b.len() < XREF_SIZE {
            return None;
        }
        w32(e, b, 12, self.ino);
        w32(e, b, 16, self.xid);
        w32(e, b, 20, self.xseqno);
        w32(e, b, 24, self.node_crc);
        Some(())
    }
}

impl SummaryNode {
    /// Writes bytes 12..32 of a summary node as stored (`sum_num` included; the records
    /// and the marker are not touched).
    pub fn store(&self, e: Endian, b: &mut [u8]) -> Option<()> {
        if b.len() < SUMMARY_SIZE {
            return None;
        }
        w32(e, b, 12, self.sum_num);
        w32(e, b, 16, self.cln_mkr);
        w32(e, b, 20, self.padded);
        w32(e, b, 24, self.sum_crc);
        w32(e, b, 28, self.node_crc);
        Some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decoding a node and storing it again in the same byte order gives the same bytes;
    /// in the other byte order, decoding gives the same fields.
    #[test]
    fn store_is_the_inverse_of_decode() {
        for e in [Endian::Little, Endian::Big] {
            let other = match e {
                Endian::Little => Endian::Big,
                Endian::Big => Endian::Little,
            };
            let mut b = Vec::new();
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
                usercompr: 1,
                flags: 0x0203,
                ..Default::default()
            };
            i.encode(e, b"abcdef", &mut b);
            let h = NodeHeader::decode(&b, e, 0).unwrap();
            let d = InodeNode::decode(&b, e, 0).unwrap();
            let mut same = b.clone();
            h.store(e, &mut same).unwrap();
            d.store(e, &mut same).unwrap();
            assert_eq!(same, b);
            let mut swapped = b.clone();
            h.store(other, &mut swapped).unwrap();
            d.store(other, &mut swapped).unwrap();
            assert_eq!(NodeHeader::decode(&swapped, other, 0).unwrap(), h);
            assert_eq!(InodeNode::decode(&swapped, other, 0).unwrap(), d);

            let mut b = Vec::new();
            DirentNode {
                pino: 1,
                version: 7,
                ino: 9,
                mctime: 77,
                dtype: 4,
                ..Default::default()
            }
            .encode(e, b"dir", &mut b);
            b[30] = 0xAB; // an unused byte is kept
            let d = DirentNode::decode(&b, e, 0).unwrap();
            let mut s = b.clone();
            d.store(other, &mut s).unwrap();
            assert_eq!(s[30], 0xAB);
            assert_eq!(DirentNode::decode(&s, other, 0).unwrap(), d);

            let mut b = Vec::new();
            XattrNode {
                xid: 3,
                version: 1,
                xprefix: 1,
                ..Default::default()
            }
            .encode(e, b"n", b"v", &mut b);
            let x = XattrNode::decode(&b, e, 0).unwrap();
            let mut s = b.clone();
            x.store(other, &mut s).unwrap();
            assert_eq!(XattrNode::decode(&s, other, 0).unwrap(), x);

            let mut b = Vec::new();
            XrefNode {
                ino: 2,
                xid: 3,
                xseqno: 4,
                ..Default::default()
            }
            .encode(e, &mut b);
            let r = XrefNode::decode(&b, e, 0).unwrap();
            let mut s = b.clone();
            r.store(other, &mut s).unwrap();
            assert_eq!(XrefNode::decode(&s, other, 0).unwrap(), r);

            let sn = SummaryNode {
                sum_num: 3,
                cln_mkr: 12,
                padded: 8,
                sum_crc: 0x1234_5678,
                node_crc: 0x9abc_def0,
            };
            let mut s = vec![0u8; 32];
            sn.store(other, &mut s).unwrap();
            assert_eq!(SummaryNode::decode(&s, other, 0).unwrap(), sn);

            assert!(InodeNode::default().store(e, &mut [0u8; 67]).is_none());
            assert!(NodeHeader::decode(&[0u8; 12], e, 0)
                .unwrap()
                .store(e, &mut [0u8; 11])
                .is_none());
        }
    }
}
