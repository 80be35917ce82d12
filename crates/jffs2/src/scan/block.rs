//! `jffs2_scan_eraseblock` (`docs/spec/kernel-jffs2-spec.md` §3.2) and the per-type handlers of the
//! full scan (§3.3, §9.1, §9.2).

use super::engine::{
    Bug, Engine, DEFAULT_EMPTY_SCAN_SIZE, PAGE_SIZE, REF_NORMAL, REF_PRISTINE, REF_UNCHECKED,
};
use super::msg::{hash08x, jffs2_warning};
use super::{BlockClass, DirtCause, Level, MountFailure, ScanDirent, XattrDatum, XattrRef};
use crate::crc::crc32;
use crate::format::{
    pad4, DirentNode, InodeNode, NodeHeader, NodeKind, XattrNode, XrefNode, COMPAT_MASK,
    DIRENT_SIZE, FEATURE_INCOMPAT, FEATURE_ROCOMPAT, FEATURE_RWCOMPAT_COPY, HEADER_SIZE,
    INODE_SIZE, MAGIC, MAGIC_SWAPPED, NODETYPE_CLEANMARKER, NODETYPE_DIRENT, NODETYPE_INODE,
    NODETYPE_PADDING, NODETYPE_XATTR, NODETYPE_XREF, NODE_ACCURATE, OLD_MAGIC, XATTR_SIZE,
    XREF_SIZE,
};

/// `JFFS2_DIRTY_BITMASK`.
const DIRTY_MAGIC: u16 = 0x0000;
/// How many "Magic bitmask not found" / "invalid CRC" notices per block (`noisy_printk`).
const NOISE: u32 = 10;

/// The kernel's scan buffer: which flash range it holds (for re-read decisions and the
/// cleanmarker shortcut; the data itself is read from the image).
struct Buf {
    ofs: u32,
    len: u32,
}

impl Engine<'_> {
    /// `N` bytes at absolute `ofs`, 0xFF past the end of the flash.
    pub(super) fn bytes<const N: usize>(&self, ofs: u32) -> [u8; N] {
        // Whole, a copy of a constant length (a few moves); near the end, a copy of a
        // variable one (a call to memcpy: 1.5 % of an extraction when it was every read).
        let start = ofs as usize;
        if let Some(whole) = self.img.get(start..start.saturating_add(N)) {
            let mut out = [0u8; N];
            out.copy_from_slice(whole);
            return out;
        }
        let mut out = [0xFFu8; N];
        if let Some(src) = self.img.get(start..) {
            let n = src.len().min(N);
            out[..n].copy_from_slice(&src[..n]);
        }
        out
    }

    /// `n` bytes at absolute `ofs`, 0xFF past the end of the flash.
    pub(super) fn bytes_vec(&self, ofs: u32, n: usize) -> Vec<u8> {
        let mut out = vec![0xFFu8; n];
        if let Some(src) = self.img.get(ofs as usize..) {
            let k = src.len().min(n);
            out[..k].copy_from_slice(&src[..k]);
        }
        out
    }

    /// Asks for the header of the node a few hints past `ofs` (see `scan_hinted`).
    fn hint(&mut self, ofs: u32) {
        const AHEAD: usize = 8;
        while self.hints.get(self.hint_at).is_some_and(|&h| h <= ofs) {
            self.hint_at += 1;
        }
        if let Some(&h) = self.hints.get(self.hint_at + AHEAD) {
            crate::prefetch::prefetch(self.img, h as usize);
        }
    }

    fn word_ff(&self, ofs: u32) -> bool {
        self.bytes::<4>(ofs) == [0xFF; 4]
    }

    /// Offset of the first word in `[from, to)` that is not 0xFFFFFFFF.
    fn first_non_ff(&self, from: u32, to: u32) -> Option<u32> {
        let s = self.img.get(from as usize..to as usize)?;
        let mut i = 0usize;
        while i + 32 <= s.len() {
            let mut acc = u64::MAX;
            for k in 0..4 {
                let mut w = [0u8; 8];
                w.copy_from_slice(&s[i + 8 * k..i + 8 * k + 8]);
                acc &= u64::from_ne_bytes(w);
            }
            if acc != u64::MAX {
                break;
            }
            i += 32;
        }
        while i + 4 <= s.len() {
            if s[i..i + 4] != [0xFF; 4] {
                return Some(from + i as u32);
            }
            i += 4;
        }
        None
    }

    /// Counts a flash read into the block's `bytes_read`.
    fn read(&mut self, b: usize, len: u32) {
        let j = &mut self.jebs[b];
        j.bytes_read = j.bytes_read.saturating_add(len);
    }

    /// `noisy_printk`: at most [`NOISE`] such notices per block.
    fn noisy(&mut self, noise: &mut u32, ofs: u32, text: String) {
        if *noise > 0 {
            self.msg(Level::Notice, Some(ofs), text);
            *noise -= 1;
            if *noise == 0 {
                self.msg(
                    Level::Notice,
                    None,
                    "Further such events for this erase block will not be printed".to_string(),
                );
            }
        }
    }

    /// Re-fills the scan buffer at `ofs` when `need` bytes from `ofs` are not in it (the
    /// kernel's `buf_ofs + buf_len < ofs + need` tests).
    fn ensure(&mut self, b: usize, buf: &mut Buf, ofs: u32, need: u32, end: u32) {
        if u64::from(buf.ofs) + u64::from(buf.len) < u64::from(ofs) + u64::from(need) {
            buf.len = PAGE_SIZE.min(end - ofs);
            buf.ofs = ofs;
            let l = buf.len;
            self.read(b, l);
        }
    }

    /// `jffs2_scan_eraseblock` (§3.2): the summary attempt, the empty-block test, then the
    /// node-by-node scan and the classification.
    ///
    /// Kept whole, longer than the house limit, because it mirrors the kernel's
    /// `jffs2_scan_eraseblock` step for step (`docs/spec/kernel-jffs2-spec.md` §3.2, §3.4), so
    /// that the two can be read side by side; its per-type branches are the helpers of §3.3.
    pub(super) fn scan_eraseblock(&mut self, b: usize) -> Result<BlockClass, Bug> {
        let sector = self.sector;
        let jofs = self.jebs[b].offset;
        let end = jofs + sector;

        // Step B: the summary (§4).
        if self.opts.summary {
            if let Some(class) = self.try_summary(b) {
                return Ok(class);
            }
        }

        // Step C: empty-block detection over EMPTY_SCAN_SIZE bytes.
        let ess = sector.min(DEFAULT_EMPTY_SCAN_SIZE);
        let mut buf = Buf {
            ofs: jofs,
            len: ess,
        };
        self.read(b, ess);
        // OpenWrt's end-of-filesystem marker (`532-jffs2_eofdetect.patch`), tested on the
        // first buffer: this block and every later one are erased at mount.
        if self.opts.end_marker && self.bytes::<4>(jofs) == super::END_MARKER {
            self.msg(
                Level::Warning,
                Some(jofs),
                format!("jffs2_scan_eraseblock(): End of filesystem marker found at 0x{jofs:x}"),
            );
            self.end_marker = Some(jofs);
            return Ok(BlockClass::Empty);
        }
        let lead = match self.first_non_ff(jofs, jofs + ess) {
            None => {
                // Nothing but 0xFF in the first 256 bytes: empty, without looking further.
                return Ok(if self.cm == 0 {
                    BlockClass::Cleanmarker
                } else {
                    BlockClass::Empty
                });
            }
            Some(q) => q - jofs,
        };
        // Leading 0xFF words become dirt (debug: "Free space at %08x ends at %08x").
        self.dirty(b, lead, Some(DirtCause::Erased))?;

        // Step D: the main loop.
        let mut ofs = jofs + lead;
        let mut noise = NOISE;
        let mut prevofs: Option<u32> = None;
        'scan_more: while ofs < end {
            // D.1 alignment.
            if ofs & 3 != 0 {
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    format!("Eep. ofs 0x{ofs:08x} not word-aligned!"),
                );
                ofs = pad4(ofs);
                continue;
            }
            // D.2 no progress.
            if prevofs == Some(ofs) {
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    format!("ofs 0x{ofs:08x} has already been seen. Skipping"),
                );
                self.dirty(b, 4, Some(DirtCause::AlreadySeen))?;
                ofs += 4;
                continue;
            }
            prevofs = Some(ofs);
            self.hint(ofs);
            // D.3 fewer than 12 bytes left: dirty the rest (debug message only).
            if end - ofs < HEADER_SIZE as u32 {
                self.dirty(b, end - ofs, Some(DirtCause::BlockTail))?;
                break;
            }
            // D.4 buffer the header.
            self.ensure(b, &mut buf, ofs, HEADER_SIZE as u32, end);

            // D.5 erased flash.
            if self.word_ff(ofs) {
                let empty_start = ofs;
                ofs += 4;
                // First only up to buffer offset EMPTY_SCAN_SIZE/8 = 32.
                let mut scan_end = (ess / 8).min(buf.len);
                loop {
                    let inbuf = ofs - buf.ofs;
                    if inbuf < scan_end {
                        let limit = buf.ofs + scan_end;
                        if let Some(q) = self.first_non_ff(ofs, limit) {
                            self.msg(
                                Level::Warning,
                                Some(empty_start),
                                format!("Empty flash at 0x{empty_start:08x} ends at 0x{q:08x}"),
                            );
                            self.dirty(b, q - empty_start, Some(DirtCause::Erased))?;
                            ofs = q;
                            continue 'scan_more;
                        }
                        ofs = limit;
                    }
                    // The cleanmarker shortcut: a lone valid cleanmarker followed by 0xFF up to
                    // byte 31 of the first buffer makes the block free, unread beyond.
                    let j = &self.jebs[b];
                    if buf.ofs == jofs
                        && j.used == pad4(self.cm)
                        && self.cm != 0
                        && j.dirty == 0
                        && j.nrefs == 1
                    {
                        return Ok(BlockClass::Cleanmarker);
                    }
                    // Read on through the rest of the block.
                    buf.len = PAGE_SIZE.min(end - ofs);
                    if buf.len == 0 {
                        // Runs to the end of the block: free space, not dirt.
                        break 'scan_more;
                    }
                    scan_end = buf.len;
                    buf.ofs = ofs;
                    let l = buf.len;
                    self.read(b, l);
                }
            }

            let hb = self.bytes::<12>(ofs);
            let Ok(hdr) = NodeHeader::decode(&hb, self.e, u64::from(ofs)) else {
                break;
            };
            if self.hints.is_empty() {
                // No hints: at least the next node's header, while this one is read.
                let next = (ofs as usize).saturating_add(pad4(hdr.totlen) as usize);
                crate::prefetch::prefetch(self.img, next);
            }
            // D.6 byte-swapped magic, only at the block start.
            if ofs == jofs && hdr.magic == MAGIC_SWAPPED {
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    format!(
                        "Magic bitmask is backwards at offset 0x{ofs:08x}. Wrong endian filesystem?"
                    ),
                );
                self.dirty(b, 4, Some(DirtCause::BadMagic))?;
                ofs += 4;
                continue;
            }
            // D.7 0x0000 word (debug: "Dirty bitmask at 0x%08x").
            if hdr.magic == DIRTY_MAGIC {
                self.dirty(b, 4, Some(DirtCause::ZeroWord))?;
                ofs += 4;
                continue;
            }
            // D.8 old magic.
            if hdr.magic == OLD_MAGIC {
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    format!("Old JFFS2 bitmask found at 0x{ofs:08x}"),
                );
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    "You cannot use older JFFS2 filesystems with newer kernels".to_string(),
                );
                self.dirty(b, 4, Some(DirtCause::BadMagic))?;
                ofs += 4;
                continue;
            }
            // D.9 not a node.
            if hdr.magic != MAGIC {
                self.noisy(
                    &mut noise,
                    ofs,
                    format!(
                        "jffs2_scan_eraseblock(): Magic bitmask 0x1985 not found at 0x{ofs:08x}: 0x{:04x} instead",
                        hdr.magic
                    ),
                );
                self.dirty(b, 4, Some(DirtCause::BadMagic))?;
                ofs += 4;
                continue;
            }
            // D.10 header CRC with the ACCURATE bit forced.
            let calc = hdr.computed_crc(self.e);
            if calc != hdr.hdr_crc {
                self.noisy(
                    &mut noise,
                    ofs,
                    format!(
                        "jffs2_scan_eraseblock(): Node at 0x{ofs:08x} {{0x{:04x}, 0x{:04x}, 0x{:08x}) has invalid CRC 0x{:08x} (calculated 0x{calc:08x})",
                        hdr.magic, hdr.nodetype, hdr.totlen, hdr.hdr_crc
                    ),
                );
                self.dirty(b, 4, Some(DirtCause::HeaderCrc))?;
                ofs += 4;
                continue;
            }
            let totlen = hdr.totlen;
            // D.11 crossing the block end (checked before the obsolete bit).
            if u64::from(ofs) + u64::from(totlen) > u64::from(end) {
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    format!(
                        "Node at 0x{ofs:08x} with length 0x{totlen:08x} would run over the end of the erase block"
                    ),
                );
                self.msg(
                    Level::Warning,
                    Some(ofs),
                    "Perhaps the file system was created with the wrong erase size?".to_string(),
                );
                self.dirty(b, 4, Some(DirtCause::CrossesBlockEnd))?;
                ofs += 4;
                continue;
            }
            // ofs + totlen <= end, and end is 4-aligned: PAD(totlen) cannot overflow.
            let padded = pad4(totlen);
            // D.12 obsolete.
            if hdr.nodetype & NODE_ACCURATE == 0 {
                self.dirty(b, padded, Some(DirtCause::Obsolete))?;
                ofs += padded;
                continue;
            }
            // D.13 dispatch on the exact type (§3.3).
            match hdr.nodetype {
                NODETYPE_INODE => {
                    self.ensure(b, &mut buf, ofs, INODE_SIZE as u32, end);
                    self.scan_inode(b, ofs, totlen)?;
                }
                NODETYPE_DIRENT => {
                    self.ensure(b, &mut buf, ofs, totlen, end);
                    self.scan_dirent(b, ofs, totlen)?;
                }
                NODETYPE_XATTR if self.opts.xattr => {
                    self.ensure(b, &mut buf, ofs, totlen, end);
                    self.scan_xattr(b, ofs, totlen)?;
                }
                NODETYPE_XREF if self.opts.xattr => {
                    self.ensure(b, &mut buf, ofs, totlen, end);
                    self.scan_xref(b, ofs, totlen)?;
                }
                NODETYPE_CLEANMARKER => {
                    if totlen != self.cm {
                        self.msg(
                            Level::Notice,
                            Some(ofs),
                            format!(
                                "CLEANMARKER node found at 0x{ofs:08x} has totlen 0x{totlen:x} != normal 0x{:x}",
                                self.cm
                            ),
                        );
                        self.dirty(b, HEADER_SIZE as u32, Some(DirtCause::CleanmarkerSize))?;
                        ofs += HEADER_SIZE as u32;
                    } else if self.jebs[b].nrefs > 0 {
                        self.msg(
                            Level::Notice,
                            Some(ofs),
                            format!(
                                "CLEANMARKER node found at 0x{ofs:08x}, not first node in block (0x{jofs:08x})"
                            ),
                        );
                        self.dirty(b, HEADER_SIZE as u32, Some(DirtCause::CleanmarkerNotFirst))?;
                        ofs += HEADER_SIZE as u32;
                    } else {
                        let cm = self.cm;
                        self.link(b, ofs | REF_NORMAL, cm, NodeKind::Cleanmarker, None, false)?;
                        ofs = ofs.wrapping_add(pad4(cm));
                        if ofs < jofs {
                            break;
                        }
                    }
                    continue;
                }
                NODETYPE_PADDING => {
                    self.dirty(b, padded, Some(DirtCause::Padding))?;
                }
                t => match t & COMPAT_MASK {
                    FEATURE_ROCOMPAT => {
                        self.msg(
                            Level::Notice,
                            Some(ofs),
                            format!(
                                "Read-only compatible feature node (0x{t:04x}) found at offset 0x{ofs:08x}"
                            ),
                        );
                        self.forced_ro = true;
                        if !self.opts.read_only {
                            // -EROFS: the mount fails. Scanned past for diagnostics.
                            self.fail(MountFailure::RoCompat {
                                offset: ofs,
                                nodetype: t,
                            });
                        }
                        self.dirty(b, padded, Some(DirtCause::Unknown))?;
                    }
                    FEATURE_INCOMPAT => {
                        self.msg(
                            Level::Notice,
                            Some(ofs),
                            format!(
                                "Incompatible feature node (0x{t:04x}) found at offset 0x{ofs:08x}"
                            ),
                        );
                        // -EINVAL: the mount fails. Scanned past for diagnostics.
                        self.fail(MountFailure::Incompat {
                            offset: ofs,
                            nodetype: t,
                        });
                        self.dirty(b, padded, Some(DirtCause::Incompat))?;
                    }
                    FEATURE_RWCOMPAT_COPY => {
                        // Kept, copied verbatim by GC; no inode (debug message only).
                        self.link(b, ofs | REF_PRISTINE, padded, NodeKind::Other, None, false)?;
                    }
                    _ => {
                        // RWCOMPAT_DELETE, including a summary node met in a full scan.
                        self.dirty(b, padded, Some(DirtCause::Unknown))?;
                    }
                },
            }
            ofs += padded;
        }

        // §3.4: wasted (from obsoletions during this block's scan) moves to dirty.
        let j = &mut self.jebs[b];
        j.dirty = j.dirty.wrapping_add(j.wasted);
        j.wasted = 0;
        Ok(self.classify(b))
    }

    /// `jffs2_scan_inode_node` (§3.3): node CRC only; linked REF_UNCHECKED.
    fn scan_inode(&mut self, b: usize, ofs: u32, totlen: u32) -> Result<(), Bug> {
        let raw = self.bytes::<{ INODE_SIZE }>(ofs);
        let Ok(ri) = InodeNode::decode(&raw, self.e, u64::from(ofs)) else {
            return Ok(());
        };
        let calc = crc32(&raw[..INODE_SIZE - 8]);
        if calc != ri.node_crc {
            self.msg(
                Level::Notice,
                Some(ofs),
                format!(
                    "jffs2_scan_inode_node(): CRC failed on node at 0x{ofs:08x}: Read 0x{:08x}, calculated 0x{calc:08x}",
                    ri.node_crc
                ),
            );
            // "We believe totlen because the CRC on the node _header_ was OK".
            return self.dirty(b, pad4(totlen), Some(DirtCause::NodeCrc));
        }
        let ino = self.make_ino_cache(ri.ino);
        self.link(
            b,
            ofs | REF_UNCHECKED,
            pad4(totlen),
            NodeKind::Inode,
            Some(ino),
            false,
        )?;
        self.pseudo_random = self.pseudo_random.wrapping_add(ri.version);
        Ok(())
    }

    /// `jffs2_scan_dirent_node` (§3.3): node CRC, NUL truncation, name CRC over the truncated
    /// name; linked PRISTINE (NORMAL for a deletion dirent) and de-duplicated (§5.2).
    fn scan_dirent(&mut self, b: usize, ofs: u32, totlen: u32) -> Result<(), Bug> {
        let fixed = self.bytes::<{ DIRENT_SIZE }>(ofs);
        let Ok(rd) = DirentNode::decode(&fixed, self.e, u64::from(ofs)) else {
            return Ok(());
        };
        let calc = crc32(&fixed[..DIRENT_SIZE - 8]);
        if calc != rd.node_crc {
            self.msg(
                Level::Notice,
                Some(ofs),
                format!(
                    "jffs2_scan_dirent_node(): Node CRC failed on node at 0x{ofs:08x}: Read 0x{:08x}, calculated 0x{calc:08x}",
                    rd.node_crc
                ),
            );
            return self.dirty(b, pad4(totlen), Some(DirtCause::NodeCrc));
        }
        self.pseudo_random = self.pseudo_random.wrapping_add(rd.version);
        let name = self.bytes_vec(
            ofs.saturating_add(DIRENT_SIZE as u32),
            usize::from(rd.nsize),
        );
        let checked = name.iter().position(|&c| c == 0).unwrap_or(name.len());
        if checked < name.len() {
            self.msg(
                Level::Err,
                Some(ofs),
                format!("Dirent at {ofs:08x} has zeroes in name. Truncating to {checked} chars"),
            );
        }
        let name_calc = crc32(&name[..checked]);
        if name_calc != rd.name_crc {
            self.msg(
                Level::Notice,
                Some(ofs),
                format!(
                    "jffs2_scan_dirent_node(): Name CRC failed on node at 0x{ofs:08x}: Read 0x{:08x}, calculated 0x{name_calc:08x}",
                    rd.name_crc
                ),
            );
            return self.dirty(b, pad4(totlen), Some(DirtCause::NameCrc));
        }
        let dir = self.make_ino_cache(rd.pino);
        let state = if rd.ino != 0 {
            REF_PRISTINE
        } else {
            REF_NORMAL
        };
        let idx = self.link(
            b,
            ofs | state,
            pad4(totlen),
            NodeKind::Dirent,
            Some(dir),
            false,
        )?;
        let name = crate::name::Name::new(&name[..checked]);
        self.add_dirent(
            dir,
            ScanDirent {
                pino: dir,
                version: rd.version,
                ino: rd.ino,
                dtype: rd.dtype,
                name,
                node: idx,
            },
        );
        Ok(())
    }

    /// `jffs2_scan_xattr_node` (§9.1): node CRC, length check, datum setup; REF_PRISTINE.
    fn scan_xattr(&mut self, b: usize, ofs: u32, totlen: u32) -> Result<(), Bug> {
        const F: &str = "jffs2_scan_xattr_node";
        let raw = self.bytes::<{ XATTR_SIZE }>(ofs);
        let Ok(rx) = XattrNode::decode(&raw, self.e, u64::from(ofs)) else {
            return Ok(());
        };
        let calc = crc32(&raw[..XATTR_SIZE - 4]);
        if calc != rx.node_crc {
            let t = jffs2_warning(
                F,
                &format!(
                    "node CRC failed at {}, read={}, calc={}",
                    hash08x(ofs),
                    hash08x(rx.node_crc),
                    hash08x(calc)
                ),
            );
            self.msg(Level::Warning, Some(ofs), t);
            // Dirt of the *unpadded* totlen (§9.1 hazard).
            return self.dirty(b, totlen, Some(DirtCause::NodeCrc));
        }
        let want = pad4(XATTR_SIZE as u32 + u32::from(rx.name_len) + 1 + u32::from(rx.value_len));
        if want != totlen {
            let t = jffs2_warning(
                F,
                &format!(
                    "node length mismatch at {}, read={totlen}, calc={want}",
                    hash08x(ofs)
                ),
            );
            self.msg(Level::Warning, Some(ofs), t);
            return self.dirty(b, totlen, Some(DirtCause::Length));
        }
        let current = self.setup_xattr_datum(rx.xid, rx.version);
        let idx = self.link(b, ofs | REF_PRISTINE, want, NodeKind::Xattr, None, false)?;
        if current <= rx.version {
            self.xd_version.insert(rx.xid, rx.version);
        }
        self.xattr_datums.push(XattrDatum {
            xid: rx.xid,
            version: rx.version,
            node: idx,
        });
        Ok(())
    }

    /// `jffs2_scan_xref_node` (§9.2): node CRC, `totlen == 28`; REF_PRISTINE.
    fn scan_xref(&mut self, b: usize, ofs: u32, totlen: u32) -> Result<(), Bug> {
        const F: &str = "jffs2_scan_xref_node";
        let raw = self.bytes::<{ XREF_SIZE }>(ofs);
        let Ok(rr) = XrefNode::decode(&raw, self.e, u64::from(ofs)) else {
            return Ok(());
        };
        let calc = crc32(&raw[..XREF_SIZE - 4]);
        if calc != rr.node_crc {
            let t = jffs2_warning(
                F,
                &format!(
                    "node CRC failed at {}, read={}, calc={}",
                    hash08x(ofs),
                    hash08x(rr.node_crc),
                    hash08x(calc)
                ),
            );
            self.msg(Level::Warning, Some(ofs), t);
            return self.dirty(b, pad4(totlen), Some(DirtCause::NodeCrc));
        }
        if totlen != XREF_SIZE as u32 {
            let t = jffs2_warning(
                F,
                &format!(
                    "node length mismatch at {}, read={totlen}, calc={}",
                    hash08x(ofs),
                    XREF_SIZE
                ),
            );
            self.msg(Level::Warning, Some(ofs), t);
            return self.dirty(b, totlen, Some(DirtCause::Length));
        }
        if rr.xseqno > self.highest_xseqno {
            self.highest_xseqno = rr.xseqno & !1;
        }
        let idx = self.link(
            b,
            ofs | REF_PRISTINE,
            XREF_SIZE as u32,
            NodeKind::Xref,
            None,
            false,
        )?;
        self.xattr_refs.push(XattrRef {
            ino: Some(rr.ino),
            xid: Some(rr.xid),
            xseqno: Some(rr.xseqno),
            node: idx,
        });
        Ok(())
    }
}
