//! The erase-block summary path (`docs/spec/kernel-jffs2-spec.md` §4; `scan.c` step B,
//! `summary.c: jffs2_sum_scan_sumnode`, `jffs2_sum_process_sum_data`, `sum_link_node_ref`).

use super::engine::{Bug, Engine, Jeb, REF_NORMAL};
use super::msg::jffs2_warning;
use super::{
    BlockClass, DirtCause, Level, MountFailure, ScanDirent, SummaryUse, XattrDatum, XattrRef,
};
use crate::crc::crc32;
use crate::format::{hdr, marker, sumrec, NodeHeader};
use crate::format::{
    pad4, Endian, NodeKind, SummaryNode, COMPAT_MASK, FEATURE_INCOMPAT, MAGIC, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_SUMMARY, NODETYPE_XATTR, NODETYPE_XREF, SUMMARY_MARKER_SIZE,
    SUMMARY_SIZE, SUM_MAGIC, XREF_SIZE,
};
use crate::format::{
    SUM_DIRENT_NSIZE_AT, SUM_DIRENT_SIZE, SUM_INODE_SIZE, SUM_XATTR_SIZE, SUM_XREF_SIZE,
};

/// Everything needed to undo a summary's effects on the scan (the kernel's fall-back after an
/// unsupported compatible record type frees the block's refs and resets its accounting).
struct Snapshot {
    refs: usize,
    xattr_datums: usize,
    xattr_refs: usize,
    dirt: usize,
    jeb: Jeb,
    /// Inode caches the summary linked refs to.
    touched: Vec<u32>,
    /// Dirents the summary added: (directory, name).
    names: Vec<(u32, Vec<u8>)>,
}

/// Why a summary was not used.
enum Outcome {
    Used(BlockClass),
    /// Fall back to the full scan of the block.
    FullScan(String),
}

impl Engine<'_> {
    /// Step B of `jffs2_scan_eraseblock` (§4.1): reads the marker, and when a summary is
    /// there, trusts it. `Some(class)` when the summary was used; `None` = full scan.
    pub(super) fn try_summary(&mut self, b: usize) -> Option<BlockClass> {
        let sector = self.sector;
        let jofs = self.jebs[b].offset;
        let end = jofs + sector;
        // Without a write buffer only the last 8 bytes are read.
        self.jebs[b].bytes_read += SUMMARY_MARKER_SIZE as u32;
        let marker = self.bytes::<SUMMARY_MARKER_SIZE>(end - SUMMARY_MARKER_SIZE as u32);
        let e = self.e;
        if e.get_u32(&marker, marker::MAGIC) != Some(SUM_MAGIC) {
            return None;
        }
        let sm_offset = e.get_u32(&marker, marker::OFFSET).unwrap_or(0);
        let sumlen = sector.wrapping_sub(sm_offset);
        if sumlen > sector {
            // "sm->offset maybe wrong but MAGIC maybe right": straight to the full scan.
            self.jebs[b].summary = SummaryUse::Rejected(format!(
                "marker offset 0x{sm_offset:x} lies beyond the erase block"
            ));
            return None;
        }
        // The rest of the summary is read.
        let more = sumlen.saturating_sub(SUMMARY_MARKER_SIZE as u32);
        self.jebs[b].bytes_read = self.jebs[b].bytes_read.saturating_add(more);

        let mut snap = self.snapshot(b);
        match self.sum_scan_sumnode(b, sumlen, &mut snap) {
            Ok(Outcome::Used(class)) => {
                self.jebs[b].summary = SummaryUse::Used;
                Some(class)
            }
            Ok(Outcome::FullScan(why)) => {
                self.rollback(b, snap);
                self.jebs[b].summary = SummaryUse::Rejected(why);
                None
            }
            Err(Bug) => {
                // The kernel oopses here; the block gets a full scan for the tools' sake.
                self.rollback(b, snap);
                self.jebs[b].summary = SummaryUse::Rejected(
                    "the summary's offsets break the kernel's accounting (kernel BUG)".into(),
                );
                None
            }
        }
    }

    fn snapshot(&self, b: usize) -> Snapshot {
        Snapshot {
            refs: self.refs.len(),
            xattr_datums: self.xattr_datums.len(),
            xattr_refs: self.xattr_refs.len(),
            dirt: self.dirt.len(),
            jeb: self.jebs[b].clone(),
            touched: Vec::new(),
            names: Vec::new(),
        }
    }

    /// Undoes the block's refs, dirt and accounting (`jffs2_free_jeb_node_refs` and the
    /// counter reset of `jffs2_sum_process_sum_data`). Inode caches created stay, as do
    /// `highest_ino`, `pseudo_random` and datum versions (the kernel keeps them too).
    fn rollback(&mut self, b: usize, snap: Snapshot) {
        let n = snap.refs;
        for ino in &snap.touched {
            if let Some(c) = self.caches.get_mut(*ino) {
                while c.nodes.last().is_some_and(|&i| i >= n) {
                    c.nodes.pop();
                }
            }
        }
        for (dir, name) in &snap.names {
            if let Some(c) = self.caches.get_mut(*dir) {
                c.dents.remove_if(name, |d| d.node >= n);
            }
        }
        self.refs.truncate(n);
        self.ref_block.truncate(n);
        self.xattr_datums.truncate(snap.xattr_datums);
        self.xattr_refs.truncate(snap.xattr_refs);
        self.dirt.truncate(snap.dirt);
        let keep_read = self.jebs[b].bytes_read;
        self.jebs[b] = snap.jeb;
        self.jebs[b].bytes_read = keep_read;
    }

    /// `sum_link_node_ref`: a gap before the record's (aligned) offset becomes dirt, then the
    /// ref is linked at `block + ofs` — the offset's low bits become the ref state (§4.4).
    fn sum_link(
        &mut self,
        b: usize,
        ofs: u32,
        len: u32,
        kind: NodeKind,
        ino: Option<u32>,
    ) -> Result<usize, Bug> {
        let wp = self.sector.wrapping_sub(self.jebs[b].free);
        let aligned = ofs & !3;
        if aligned > wp {
            self.dirty(b, aligned - wp, Some(DirtCause::SummaryGap))?;
        }
        let raw = self.jebs[b].offset.wrapping_add(ofs);
        self.link(b, raw, len, kind, ino, true)
    }

    fn crc_err(&mut self, b: usize, why: String) -> Outcome {
        let t = jffs2_warning(
            "jffs2_sum_scan_sumnode",
            "Summary node crc error, skipping summary information.",
        );
        let at = self.jebs[b].offset;
        self.msg(Level::Warning, Some(at), t);
        Outcome::FullScan(why)
    }

    /// `jffs2_sum_scan_sumnode` (§4.2–§4.3).
    fn sum_scan_sumnode(
        &mut self,
        b: usize,
        sumlen: u32,
        snap: &mut Snapshot,
    ) -> Result<Outcome, Bug> {
        let e = self.e;
        let sector = self.sector;
        let jofs = self.jebs[b].offset;
        let rel = sector - sumlen;
        if (sumlen as usize) < SUMMARY_SIZE {
            // Too short to hold a summary header; the kernel would read garbage and fail its
            // CRC checks (§4.1).
            return Ok(self.crc_err(
                b,
                format!("summary of {sumlen} bytes is shorter than its header"),
            ));
        }
        let s = self.bytes_vec(jofs + rel, sumlen as usize);
        // 1. hdr_crc over the constants {0x1985, 0x2006, totlen as stored}.
        let totlen = e.get_u32(&s, hdr::TOTLEN).unwrap_or(0);
        let h = NodeHeader {
            magic: MAGIC,
            nodetype: NODETYPE_SUMMARY,
            totlen,
            hdr_crc: e.get_u32(&s, hdr::HDR_CRC).unwrap_or(0),
        };
        if !h.crc_ok(e) {
            return Ok(self.crc_err(b, "summary header CRC mismatch".into()));
        }
        // 2. totlen == sumlen.
        if totlen != sumlen {
            return Ok(self.crc_err(
                b,
                format!("summary totlen 0x{totlen:x} != 0x{sumlen:x} to the block end (wrong erase size?)"),
            ));
        }
        // 3. node_crc over the first 24 bytes (as stored).
        let Ok(sum) = SummaryNode::decode(&s, e, u64::from(jofs + rel)) else {
            return Ok(self.crc_err(b, "summary truncated".into()));
        };
        if crc32(&s[..24]) != sum.node_crc {
            return Ok(self.crc_err(b, "summary node CRC mismatch".into()));
        }
        // 4. sum_crc over the records, padding and marker.
        if crc32(&s[SUMMARY_SIZE..]) != sum.sum_crc {
            return Ok(self.crc_err(b, "summary data CRC mismatch".into()));
        }

        // The cleanmarker the summary vouches for (§4.3.1); the flash is not checked.
        if sum.cln_mkr != 0 {
            if sum.cln_mkr != self.cm || self.jebs[b].nrefs > 0 {
                self.dirty(b, pad4(sum.cln_mkr), Some(DirtCause::SummaryCleanmarker))?;
            } else {
                let cm = sum.cln_mkr;
                self.link(b, jofs | REF_NORMAL, cm, NodeKind::Cleanmarker, None, true)?;
            }
        }

        // The records (§4.3.2).
        if let Some(out) = self.process_records(b, &s, &sum, snap)? {
            return Ok(out);
        }

        // The summary node itself, REF_NORMAL, to the block end (§4.3.4).
        self.sum_link(b, rel | REF_NORMAL, sumlen, NodeKind::Summary, None)?;
        let free = self.jebs[b].free;
        if free != 0 {
            let t = jffs2_warning(
                "jffs2_sum_scan_sumnode",
                &format!("Free size 0x{free:x} bytes in eraseblock @0x{jofs:08x} with summary?"),
            );
            self.msg(Level::Warning, Some(jofs), t);
            let j = &mut self.jebs[b];
            j.wasted = j.wasted.wrapping_add(free);
            j.free = 0;
        }
        Ok(Outcome::Used(self.classify(b)))
    }

    /// `jffs2_sum_process_sum_data`: `Ok(None)` when every record was processed,
    /// `Ok(Some(FullScan))` to fall back (an unsupported compatible record type, or a record
    /// that aborts the mount, after which the tools still want the block scanned).
    ///
    /// Kept whole, longer than the house limit, because it mirrors the kernel's
    /// `jffs2_sum_process_sum_data` step for step: one loop over the records, one branch per
    /// record type in the kernel's order (`docs/spec/kernel-jffs2-spec.md` §4.3.2, §9.3), so
    /// that the two can be read side by side.
    fn process_records(
        &mut self,
        b: usize,
        s: &[u8],
        sum: &SummaryNode,
        snap: &mut Snapshot,
    ) -> Result<Option<Outcome>, Bug> {
        let e: Endian = self.e;
        let jofs = self.jebs[b].offset;
        let len = s.len();
        let mut p = SUMMARY_SIZE;
        for i in 0..sum.sum_num {
            let Some(t) = e.get_u16(s, p) else {
                return Ok(Some(self.past_end(b, i, p)));
            };
            // Record sizes (`JFFS2_SUMMARY_*_SIZE`); an unknown type is only read for its type.
            let need = match t {
                NODETYPE_INODE => SUM_INODE_SIZE,
                NODETYPE_XATTR => SUM_XATTR_SIZE,
                NODETYPE_DIRENT => {
                    SUM_DIRENT_SIZE
                        + usize::from(s.get(p + SUM_DIRENT_NSIZE_AT).copied().unwrap_or(0))
                }
                NODETYPE_XREF => SUM_XREF_SIZE,
                _ => 2,
            };
            let known = matches!(t, NODETYPE_INODE | NODETYPE_DIRENT)
                || (self.opts.xattr && matches!(t, NODETYPE_XATTR | NODETYPE_XREF));
            if known && p + need > len {
                return Ok(Some(self.past_end(b, i, p)));
            }
            let u32_at = |k: usize| e.get_u32(s, p + k).unwrap_or(0);
            match t {
                NODETYPE_INODE => {
                    let (inode, version, offset, totlen) = (
                        u32_at(sumrec::ID),
                        u32_at(sumrec::VERSION),
                        u32_at(sumrec::OFFSET),
                        u32_at(sumrec::TOTLEN),
                    );
                    let ino = self.make_ino_cache(inode);
                    snap.touched.push(ino);
                    self.sum_link(b, offset, pad4(totlen), NodeKind::Inode, Some(ino))?;
                    self.pseudo_random = self.pseudo_random.wrapping_add(version);
                }
                NODETYPE_DIRENT => {
                    let (totlen, offset, pino, version, ino) = (
                        u32_at(sumrec::DIRENT_TOTLEN),
                        u32_at(sumrec::DIRENT_OFFSET),
                        u32_at(sumrec::DIRENT_PINO),
                        u32_at(sumrec::DIRENT_VERSION),
                        u32_at(sumrec::DIRENT_INO),
                    );
                    let dtype = s[p + sumrec::DIRENT_TYPE];
                    let name = &s[p + SUM_DIRENT_SIZE..p + need];
                    let checked = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                    let at = jofs.wrapping_add(offset);
                    if checked == 0 {
                        self.msg(
                            Level::Err,
                            Some(at),
                            format!(
                                "Dirent at {at:08x} has zero at start of name. Aborting mount."
                            ),
                        );
                        // -EIO: the mount fails.
                        self.fail(MountFailure::Other(format!(
                            "Dirent at {at:08x} has zero at start of name. Aborting mount."
                        )));
                        return Ok(Some(Outcome::FullScan(format!(
                            "record {i}: dirent at 0x{at:08x} has a zero at the start of its name (the mount aborts)"
                        ))));
                    }
                    if checked < name.len() {
                        self.msg(
                            Level::Err,
                            Some(at),
                            format!("Dirent at {at:08x} has zeroes in name. Truncating to {checked} chars"),
                        );
                    }
                    let dir = self.make_ino_cache(pino);
                    snap.touched.push(dir);
                    snap.names.push((dir, name[..checked].to_vec()));
                    let idx =
                        self.sum_link(b, offset, pad4(totlen), NodeKind::Dirent, Some(dir))?;
                    self.add_dirent(
                        dir,
                        ScanDirent {
                            pino: dir,
                            version,
                            ino,
                            dtype,
                            name: name[..checked].into(),
                            node: idx,
                        },
                    );
                    self.pseudo_random = self.pseudo_random.wrapping_add(version);
                }
                NODETYPE_XATTR if self.opts.xattr => {
                    let (xid, version, offset, totlen) = (
                        u32_at(sumrec::ID),
                        u32_at(sumrec::VERSION),
                        u32_at(sumrec::OFFSET),
                        u32_at(sumrec::TOTLEN),
                    );
                    let current = self.setup_xattr_datum(xid, version);
                    let idx = self.sum_link(b, offset, pad4(totlen), NodeKind::Xattr, None)?;
                    if current <= version {
                        self.xd_version.insert(xid, version);
                    }
                    self.xattr_datums.push(XattrDatum {
                        xid,
                        version,
                        node: idx,
                    });
                    self.pseudo_random = self.pseudo_random.wrapping_add(xid);
                }
                NODETYPE_XREF if self.opts.xattr => {
                    let offset = u32_at(sumrec::XREF_OFFSET);
                    let idx = self.sum_link(b, offset, XREF_SIZE as u32, NodeKind::Xref, None)?;
                    self.xattr_refs.push(XattrRef {
                        ino: None,
                        xid: None,
                        xseqno: None,
                        node: idx,
                    });
                    // pseudo_random += ref->flash_offset (offset with the state bits).
                    self.pseudo_random = self.pseudo_random.wrapping_add(jofs.wrapping_add(offset));
                }
                _ => {
                    let w = jffs2_warning(
                        "jffs2_sum_process_sum_data",
                        &format!("Unsupported node type {t:x} found in summary! Exiting..."),
                    );
                    self.msg(Level::Warning, Some(jofs), w);
                    if t & COMPAT_MASK == FEATURE_INCOMPAT {
                        // -EIO: the mount fails.
                        self.fail(MountFailure::Other(format!(
                            "Unsupported node type {t:x} found in summary (INCOMPAT): mount fails with -EIO"
                        )));
                        return Ok(Some(Outcome::FullScan(format!(
                            "record {i}: unsupported INCOMPAT record type 0x{t:04x} (the mount fails)"
                        ))));
                    }
                    if i > 0 {
                        // The kernel frees the refs the earlier records linked
                        // (`jffs2_free_jeb_node_refs`) but leaves them on the inode caches'
                        // node lists and on `scan_dents`: the full scan that follows re-adds
                        // the same dirents and marks the freed refs obsolete. Linux 6.1 under
                        // qemu crashes here (tests/conformance.rs); only a record of an
                        // unsupported compatible type that comes first falls back cleanly.
                        self.fail(MountFailure::Other(format!(
                            "kernel use-after-free: the summary of the block at 0x{jofs:08x} is abandoned at record {i} (unsupported type 0x{t:04x}) after {i} records were linked; the kernel frees their refs but keeps them on its inode and directory lists (the mount crashes)"
                        )));
                    }
                    return Ok(Some(Outcome::FullScan(format!(
                        "record {i}: unsupported record type 0x{t:04x}"
                    ))));
                }
            }
            p += need;
        }
        Ok(None)
    }

    /// A record that runs past the end of the erase block: the kernel would parse memory
    /// beyond its buffer. Treated as fatal (the outcome is undefined).
    fn past_end(&mut self, b: usize, i: u32, p: usize) -> Outcome {
        let jofs = self.jebs[b].offset;
        let why = format!(
            "summary record {i} (at byte {p} of the summary) runs past the end of the erase block at 0x{jofs:08x}: the kernel would read beyond its buffer"
        );
        self.fail(MountFailure::Other(why.clone()));
        Outcome::FullScan(why)
    }
}
