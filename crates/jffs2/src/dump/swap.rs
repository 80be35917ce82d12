//! `jffs2-dump -e FILE [-r]`: the image in the other byte order, node for node, at the same
//! offsets (`docs/spec/mtd-utils-spec.md` §6.3 describes what jffs2dump does instead, §8 B-15).
//!
//! # Rules
//!
//! The walk is the kernel scan's resynchronising walk (`docs/spec/kernel-jffs2-spec.md` §3.2) without
//! erase blocks: at every 4-byte step, erased words (0xFFFFFFFF) are copied; a word without
//! the node magic, or with the magic but a wrong header CRC, is copied **unchanged** and the
//! walk moves 4 bytes on (the kernel counts it as dirt either way; mtd-utils swaps its two
//! halves). A header whose CRC is right (with the ACCURATE bit put back) starts a node, which
//! is converted as a whole and skipped by `max(PAD(totlen), 12)` bytes:
//!
//! * the header always, the ACCURATE bit as it was (obsolete nodes stay obsolete);
//! * the fixed part of every known type — inode, dirent, xattr, xref, summary — when it lies
//!   inside both `totlen` and the image (otherwise only the header: a truncated node);
//!   cleanmarkers, padding and unknown types have only the header converted and their body
//!   copied, since nothing in it is known to be a number;
//! * payloads that hold numbers: the 2- or 4-byte device number of a character or block
//!   device inode (stored uncompressed, `csize == dsize`), POSIX ACL xattr values
//!   (`system.posix_acl_*`: version, then tag / perm / id entries), the records and the
//!   marker of a summary node. Everything else (file data, names, symlink targets, other
//!   xattr values, padding bytes) is copied as it is.
//!
//! CRCs: a CRC that was right in the input is recomputed over the converted bytes, so it is
//! right in the output; a CRC that was wrong keeps its value (so it stays wrong, and a
//! converted-back image is the original byte for byte). With `recalc_crc` (`-r`), as in
//! mtd-utils, the data CRC of inodes and xattrs and the name CRC of dirents are recomputed
//! whatever they were; header, node and summary CRCs are never "repaired" (a summary with a
//! bad CRC makes the kernel scan the block, which is the safe outcome).
//!
//! The output therefore has the input's length, and converting twice gives the input back,
//! unless the image holds, outside any valid node, bytes that form a valid node header in the
//! other byte order (a 2^-32 coincidence for noise).

use std::io::{self, Write};

use crate::format::swap::{other, Converter};
use crate::format::{Endian, NodeHeader, SwapReport, HEADER_SIZE, MAGIC};

/// Options of the conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwapOptions {
    /// Byte order of the input (`-b` / `-l`); the output has the other one.
    pub from: Endian,
    /// `-r`: recompute data and name CRCs even where they were wrong.
    pub recalc_crc: bool,
}

/// Writes `image` converted to the other byte order to `out` (same length; see the module
/// documentation for the rules) and, to `log`, the lines jffs2dump prints for the same
/// conditions during its conversion: `Wrong bitmask …` for every non-empty word without the
/// magic, `Wrong hdr_crc …` for a magic with a bad header CRC. Errors are those of the
/// writers.
///
/// ```
/// use jffs2::dump::{swap_endian, SwapOptions};
/// use jffs2::format::Endian;
/// use jffs2::mkfs::{build, MkfsConfig, NullSink};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
/// let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
/// let mut little = Vec::new();
/// let cfg = MkfsConfig { endian: Endian::Little, ..MkfsConfig::default() };
/// build(&tree, &cfg, &mut little, &mut NullSink)?;
///
/// let (mut big, mut log) = (Vec::new(), Vec::new());
/// let opts = SwapOptions { from: Endian::Little, recalc_crc: false };
/// let report = swap_endian(&little, &opts, &mut big, &mut log)?;
/// assert_eq!(big.len(), little.len()); // node for node, at the same offsets
/// assert_eq!((report.nodes, report.bad_crcs_kept), (3, 0)); // cleanmarker, dirent, inode
/// assert!(log.is_empty());
/// assert_eq!(jffs2::scan::detect(&big).geometry.endian, Endian::Big);
///
/// // mkfs.jffs2 -b gives the same bytes; and converting back gives the original.
/// let mut built_big = Vec::new();
/// build(&tree, &MkfsConfig { endian: Endian::Big, ..cfg }, &mut built_big, &mut NullSink)?;
/// assert_eq!(big, built_big);
/// let mut back = Vec::new();
/// let opts = SwapOptions { from: Endian::Big, recalc_crc: false };
/// swap_endian(&big, &opts, &mut back, &mut std::io::sink())?;
/// assert_eq!(back, little);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn swap_endian(
    image: &[u8],
    opts: &SwapOptions,
    out: &mut dyn Write,
    log: &mut dyn Write,
) -> io::Result<SwapReport> {
    let from = opts.from;
    let to = other(from);
    let mut c = Converter {
        from,
        to,
        recalc: opts.recalc_crc,
        report: SwapReport::default(),
    };
    let len = image.len();
    let mut p = 0usize;
    let mut buf = Vec::new();
    while p < len {
        let Some(word) = image.get(p..p + 4) else {
            out.write_all(&image[p..])?;
            break;
        };
        if word == [0xFF; 4] {
            let mut q = p + 4;
            while image.get(q..q + 4).is_some_and(|w| w == [0xFF; 4]) {
                q += 4;
            }
            out.write_all(&image[p..q])?;
            p = q;
            continue;
        }
        let magic = from.get_u16(image, p).unwrap_or(0);
        if magic != MAGIC {
            writeln!(log, "Wrong bitmask  at  0x{p:08x}, 0x{magic:04x}")?;
            c.report.junk_words += 1;
            out.write_all(word)?;
            p += 4;
            continue;
        }
        let h = match NodeHeader::decode(&image[p..], from, p as u64) {
            Ok(h) if h.crc_ok(from) => h,
            Ok(h) => {
                writeln!(
                    log,
                    "Wrong hdr_crc  at  0x{p:08x}, 0x{:08x} instead of 0x{:08x}",
                    h.hdr_crc,
                    h.computed_crc(from)
                )?;
                c.report.junk_words += 1;
                out.write_all(word)?;
                p += 4;
                continue;
            }
            // Fewer than 12 bytes left: not a node.
            Err(_) => {
                c.report.junk_words += 1;
                out.write_all(word)?;
                p += 4;
                continue;
            }
        };
        let node_len = (h.totlen as usize).max(HEADER_SIZE);
        let step = (u64::from(h.totlen) + 3) & !3;
        let step = usize::try_from(step).unwrap_or(usize::MAX).max(HEADER_SIZE);
        let node_end = p.saturating_add(node_len).min(len);
        let region_end = p.saturating_add(step).min(len);
        let src = &image[p..node_end];
        buf.clear();
        buf.extend_from_slice(src);
        c.node(&h, src, &mut buf, p as u64);
        out.write_all(&buf)?;
        out.write_all(&image[node_end..region_end])?;
        p = region_end;
    }
    Ok(c.report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crc::crc32;
    use crate::format::{encode_cleanmarker, encode_padding, pad4, NODETYPE_INODE, NODE_ACCURATE};
    use crate::format::{
        xprefix, DirentNode, InodeNode, SumRecord, SummaryNode, XattrNode, XrefNode,
    };

    fn convert(img: &[u8], from: Endian, recalc: bool) -> (Vec<u8>, SwapReport, String) {
        let mut out = Vec::new();
        let mut log = Vec::new();
        let r = swap_endian(
            img,
            &SwapOptions {
                from,
                recalc_crc: recalc,
            },
            &mut out,
            &mut log,
        )
        .unwrap();
        assert_eq!(out.len(), img.len());
        (out, r, String::from_utf8(log).unwrap())
    }

    fn pad(v: &mut Vec<u8>) {
        v.resize(pad4(v.len() as u32) as usize, 0xFF);
    }

    /// Every node type, built in both byte orders: the conversion of one is the other.
    fn image(e: Endian) -> Vec<u8> {
        let mut v = Vec::new();
        encode_cleanmarker(e, 12, &mut v);
        inode_nodes(e, &mut v);
        xattr_nodes(e, &mut v);
        encode_padding(e, 20, &mut v);
        // An unknown RWCOMPAT_COPY node: header and opaque body.
        let at = v.len();
        encode_padding(e, 16, &mut v);
        v[at + 2..at + 4].copy_from_slice(&e.u16_bytes(0x6007));
        let crc = crc32(&v[at..at + 8]);
        v[at + 8..at + 12].copy_from_slice(&e.u32_bytes(crc));
        summary(e, &mut v);
        v
    }

    /// A dirent, then the inodes of a character device, a block device and a file.
    fn inode_nodes(e: Endian, v: &mut Vec<u8>) {
        DirentNode {
            pino: 1,
            version: 3,
            ino: 2,
            mctime: 99,
            dtype: 2,
            ..Default::default()
        }
        .encode(e, b"tty", v);
        pad(v);
        InodeNode {
            ino: 2,
            version: 1,
            mode: 0o020620,
            dsize: 2,
            ..Default::default()
        }
        .encode(e, &e.u16_bytes(0x0440), v);
        pad(v);
        InodeNode {
            ino: 3,
            version: 1,
            mode: 0o060660,
            dsize: 4,
            ..Default::default()
        }
        .encode(e, &e.u32_bytes(0x0010_0345), v);
        pad(v);
        InodeNode {
            ino: 4,
            version: 1,
            mode: 0o100644,
            isize: 5,
            dsize: 5,
            ..Default::default()
        }
        .encode(e, b"\x01\x02\x03\x04\x05", v);
        pad(v);
    }

    /// An ACL datum, a user datum and an xref.
    fn xattr_nodes(e: Endian, v: &mut Vec<u8>) {
        let mut acl = e.u32_bytes(1).to_vec();
        for (tag, perm, id) in [
            (1u16, 6u16, None),
            (2, 6, Some(1000u32)),
            (4, 4, None),
            (0x10, 6, None),
            (0x20, 4, None),
        ] {
            acl.extend_from_slice(&e.u16_bytes(tag));
            acl.extend_from_slice(&e.u16_bytes(perm));
            if let Some(id) = id {
                acl.extend_from_slice(&e.u32_bytes(id));
            }
        }
        XattrNode {
            xid: 1,
            version: 1,
            xprefix: xprefix::ACL_ACCESS,
            ..Default::default()
        }
        .encode(e, b"", &acl, v);
        pad(v);
        XattrNode {
            xid: 2,
            version: 1,
            xprefix: xprefix::USER,
            ..Default::default()
        }
        .encode(e, b"k", b"\x00\x01value", v);
        pad(v);
        XrefNode {
            ino: 4,
            xid: 1,
            xseqno: 2,
            ..Default::default()
        }
        .encode(e, v);
    }

    /// A summary to the end of a 2 KiB "block".
    fn summary(e: Endian, v: &mut Vec<u8>) {
        let recs = vec![
            SumRecord::Dirent {
                nodetype: crate::format::NODETYPE_DIRENT,
                totlen: 43,
                offset: 12,
                pino: 1,
                version: 3,
                ino: 2,
                dtype: 2,
                name: b"tty".to_vec(),
            },
            SumRecord::Inode {
                nodetype: NODETYPE_INODE,
                inode: 2,
                version: 1,
                offset: 56,
                totlen: 70,
            },
            SumRecord::Xattr {
                nodetype: crate::format::NODETYPE_XATTR,
                xid: 1,
                version: 1,
                offset: 300,
                totlen: 76,
            },
            SumRecord::Xref {
                nodetype: crate::format::NODETYPE_XREF,
                offset: 400,
            },
        ];
        let off = v.len() as u32;
        SummaryNode {
            cln_mkr: 12,
            padded: 20,
            ..Default::default()
        }
        .encode(e, &recs, off, 2048, v)
        .unwrap();
    }

    #[test]
    fn every_node_type_converts_to_its_other_endian_twin() {
        let le = image(Endian::Little);
        let be = image(Endian::Big);
        let (out, r, log) = convert(&le, Endian::Little, false);
        assert_eq!(out, be);
        assert_eq!(log, "");
        assert_eq!(
            (r.xrefs, r.unknown, r.device_numbers, r.acl_values),
            (1, 1, 2, 1)
        );
        assert_eq!(r.bad_crcs_kept, 0);
        let (back, _, _) = convert(&be, Endian::Big, false);
        assert_eq!(back, le);
    }

    #[test]
    fn obsolete_and_corrupt_nodes_round_trip() {
        let mut le = image(Endian::Little);
        let e = Endian::Little;
        // Obsolete the first dirent, corrupt the regular file's data, truncate the end.
        let t = e.get_u16(&le, 14).unwrap() & !NODE_ACCURATE;
        le[14..16].copy_from_slice(&e.u16_bytes(t));
        let file_inode = le
            .windows(4)
            .position(|w| w == b"\x01\x02\x03\x04")
            .unwrap();
        le[file_inode] ^= 0x40;
        le.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0x85, 0x19]);
        let (be, r, log) = convert(&le, Endian::Little, false);
        assert_eq!(r.obsolete, 1);
        assert_eq!(r.bad_crcs_kept, 1);
        assert!(log.contains("Wrong bitmask  at  0x"), "{log}");
        let (back, _, _) = convert(&be, Endian::Big, false);
        assert_eq!(back, le);
        // -r makes the data CRC right in the output.
        let (be_r, _, _) = convert(&le, Endian::Little, true);
        let (_, r2, _) = convert(&be_r, Endian::Big, false);
        assert_eq!(r2.bad_crcs_kept, 0);
    }

    #[test]
    fn hostile_headers_always_advance() {
        let e = Endian::Little;
        for totlen in [0u32, 1, 4, 11, 12, 13, 0xFFFF_FFFC, 0xFFFF_FFFF] {
            for ty in [
                NODETYPE_INODE,
                crate::format::NODETYPE_SUMMARY,
                0x2003,
                0xE008,
            ] {
                let mut v = Vec::new();
                encode_padding(e, 12, &mut v);
                v[2..4].copy_from_slice(&e.u16_bytes(ty));
                v[4..8].copy_from_slice(&e.u32_bytes(totlen));
                let crc = crc32(&v[..8]);
                v[8..12].copy_from_slice(&e.u32_bytes(crc));
                v.extend_from_slice(&[0u8; 40]);
                let (out, _, _) = convert(&v, e, false);
                let (back, _, _) = convert(&out, Endian::Big, false);
                assert_eq!(back, v, "totlen {totlen:#x} type {ty:#x}");
            }
        }
    }
}
