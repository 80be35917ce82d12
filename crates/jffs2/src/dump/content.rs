//! `jffs2dump -c [-v]`: jffs2dump's own word-by-word walk and its exact text
//! (`docs/spec/mtd-utils-spec.md` §6.2; see the module documentation of [`crate::dump`] for why this is
//! not the mount scan, and for what happens where jffs2dump's behaviour is undefined).

use std::fmt;
use std::io::{self, Write};

use crate::crc::{crc32, crc32_update};
use crate::format::{
    hdr, SUM_DIRENT_NSIZE_AT, SUM_DIRENT_SIZE, SUM_INODE_SIZE, SUM_XATTR_SIZE, SUM_XREF_SIZE,
};
use crate::format::{
    pad4, DirentNode, Endian, InodeNode, NodeHeader, SumRecord, SummaryNode, XattrNode, XrefNode,
    DIRENT_SIZE, HEADER_SIZE, INODE_SIZE, MAGIC, NODETYPE_CLEANMARKER, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_PADDING, NODETYPE_SUMMARY, NODETYPE_XATTR, NODETYPE_XREF,
    NODE_ACCURATE, SUMMARY_MARKER_SIZE, SUMMARY_SIZE, XATTR_SIZE, XREF_SIZE,
};

/// Options of the content dump.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ContentOptions {
    /// Byte order of the image (`-b` / `-l`; jffs2dump's default is the host's).
    pub endian: Endian,
    /// `-v`: also cleanmarkers, padding and unknown nodes, summary records and the final
    /// "Empty space: …, dirty space: …" line.
    pub verbose: bool,
}

/// A point where jffs2dump's behaviour is undefined or never ends, and what was done
/// instead (module documentation of [`crate::dump`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Deviation {
    /// A node with a valid header whose `PAD(totlen)` is 0: jffs2dump prints it forever.
    /// Its lines were printed once, then the walk went on 4 bytes further.
    NoProgress {
        /// Offset of the node.
        offset: u64,
        /// Its totlen.
        totlen: u32,
    },
    /// A node whose fields, name or CRC range reach past the end of the image; the missing
    /// bytes were read as zeros.
    PastEnd {
        /// Offset of the node.
        offset: u64,
        /// The end of what was read (exclusive).
        end: u64,
    },
    /// A summary node with totlen < 32 (jffs2dump crashes on it): its summary CRC was taken
    /// over no bytes.
    ShortSummary {
        /// Offset of the node.
        offset: u64,
        /// Its totlen.
        totlen: u32,
    },
    /// A summary node claiming more records than fit in it (jffs2dump prints up to
    /// `sum_num` lines, that is up to 4 billion): only `shown` record lines were printed.
    SummaryRecordsCapped {
        /// Offset of the node.
        offset: u64,
        /// Records the node claims.
        sum_num: u32,
        /// Record lines printed.
        shown: u64,
    },
}

impl fmt::Display for Deviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Deviation::NoProgress { offset, totlen } => write!(
                f,
                "node at 0x{offset:08x} has a valid header but totlen 0x{totlen:08x}, which \
                 does not advance: jffs2dump would print it forever; shown once, then \
                 skipped like a bad word (4 bytes)"
            ),
            Deviation::PastEnd { offset, end } => write!(
                f,
                "node at 0x{offset:08x} reaches past the end of the image (to 0x{end:x}): \
                 the missing bytes were read as 0 (jffs2dump reads past its buffer there)"
            ),
            Deviation::ShortSummary { offset, totlen } => write!(
                f,
                "summary node at 0x{offset:08x} has totlen 0x{totlen:08x} < 32: its summary \
                 CRC was taken over no bytes (jffs2dump crashes here)"
            ),
            Deviation::SummaryRecordsCapped {
                offset,
                sum_num,
                shown,
            } => write!(
                f,
                "summary node at 0x{offset:08x} claims {sum_num} records but no more than \
                 {shown} fit in it: {shown} record lines shown"
            ),
        }
    }
}

/// What the dump found besides its text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ContentReport {
    /// jffs2dump's empty-space counter (a C `int`: it wraps like one).
    pub empty_space: i32,
    /// jffs2dump's dirty-space counter (a C `int`).
    pub dirty_space: i32,
    /// The first [`ContentReport::MAX_DEVIATIONS`] deviations, in image order.
    pub deviations: Vec<Deviation>,
    /// How many more deviations there were.
    pub deviations_omitted: u64,
}

impl ContentReport {
    /// How many deviations are kept (a hostile image can have one every 4 bytes).
    pub const MAX_DEVIATIONS: usize = 64;

    fn deviate(&mut self, d: Deviation) {
        if self.deviations.len() < Self::MAX_DEVIATIONS {
            self.deviations.push(d);
        } else {
            self.deviations_omitted += 1;
        }
    }
}

/// Writes what `jffs2dump -c` (with `verbose`: `-c -v`) prints for `image` to `out`, byte
/// for byte, and returns the counters and deviations. Never fails on any input; errors are
/// those of `out`.
pub fn dump_content(
    image: &[u8],
    opts: &ContentOptions,
    out: &mut dyn Write,
) -> io::Result<ContentReport> {
    let mut w = Walk {
        view: View {
            img: image,
            e: opts.endian,
            patch: None,
        },
        verbose: opts.verbose,
        out,
        p: 0,
        report: ContentReport::default(),
        past_end_noted: u64::MAX,
    };
    w.run()?;
    Ok(w.report)
}

/// `%s` of a C string: up to the first NUL.
fn c_str(b: &[u8]) -> &[u8] {
    b.split(|&c| c == 0).next().unwrap_or(b)
}

/// The JFFS2 CRC `crc` continued over `n` zero bytes, in O(log n).
fn crc_zeros(crc: u32, n: u64) -> u32 {
    // JFFS2's CRC register is the plain reflected CRC-32 register without the inversions;
    // appending zeros multiplies it by x^(8n) mod P, which is what zlib's crc32_combine does
    // to its first argument (the second, a CRC of nothing, being 0).
    let mut h = crc32fast::Hasher::new_with_initial(crc);
    h.combine(&crc32fast::Hasher::new_with_initial_len(0, n));
    h.finalize()
}

/// The image as jffs2dump's buffer looks: zeros past the end, and the current node's type
/// with the ACCURATE bit set (jffs2dump sets it in its buffer before checking CRCs).
struct View<'a> {
    img: &'a [u8],
    e: Endian,
    /// Offset of the current node and its patched type bytes.
    patch: Option<(u64, [u8; 2])>,
}

impl View<'_> {
    fn len(&self) -> u64 {
        self.img.len() as u64
    }

    fn byte(&self, i: u64) -> u8 {
        if let Some((p, t)) = self.patch {
            if i >= p + 2 && i < p + 4 {
                return t[(i - p - 2) as usize];
            }
        }
        usize::try_from(i)
            .ok()
            .and_then(|i| self.img.get(i))
            .copied()
            .unwrap_or(0)
    }

    fn overlaps_patch(&self, at: u64, n: u64) -> bool {
        self.patch
            .is_some_and(|(p, _)| at < p + 4 && at.saturating_add(n) > p + 2)
    }

    fn read(&self, at: u64, buf: &mut [u8]) {
        let n = buf.len() as u64;
        if let Some(end) = at.checked_add(n) {
            if end <= self.len() && !self.overlaps_patch(at, n) {
                buf.copy_from_slice(&self.img[at as usize..end as usize]);
                return;
            }
        }
        for (k, slot) in buf.iter_mut().enumerate() {
            *slot = self.byte(at.saturating_add(k as u64));
        }
    }

    fn u16(&self, at: u64) -> u16 {
        let mut b = [0u8; 2];
        self.read(at, &mut b);
        self.e.get_u16(&b, 0).unwrap_or(0)
    }

    fn u32(&self, at: u64) -> u32 {
        let mut b = [0u8; 4];
        self.read(at, &mut b);
        self.e.get_u32(&b, 0).unwrap_or(0)
    }

    /// CRC of `len` bytes from `at`, as jffs2dump's `mtd_crc32(0, p + at, len)` sees them.
    fn crc(&self, at: u64, len: u64) -> u32 {
        let end = at.saturating_add(len);
        let real_end = end.min(self.len()).max(at);
        let mut c = 0u32;
        let mut s = at;
        if let Some((p, t)) = self.patch {
            let (a, b) = (p + 2, p + 4);
            if a < real_end && b > s {
                if s < a {
                    c = crc32_update(c, &self.img[s as usize..a as usize]);
                    s = a;
                }
                while s < b.min(real_end) {
                    c = crc32_update(c, &[t[(s - a) as usize]]);
                    s += 1;
                }
            }
        }
        if s < real_end {
            c = crc32_update(c, &self.img[s as usize..real_end as usize]);
        }
        let zeros = end - real_end;
        if zeros > 0 {
            c = crc_zeros(c, zeros);
        }
        c
    }
}

struct Walk<'a, 'o> {
    view: View<'a>,
    verbose: bool,
    out: &'o mut dyn Write,
    p: u64,
    report: ContentReport,
    /// The node a [`Deviation::PastEnd`] was last recorded for (one per node).
    past_end_noted: u64,
}

impl Walk<'_, '_> {
    /// The walk over the image, word by word, printing each node.
    ///
    /// Kept whole, longer than the house limit, because it mirrors the main loop of
    /// jffs2dump's `do_dumpcontent` step for step (`docs/spec/mtd-utils-spec.md` §6.2): the
    /// erased-word runs, the magic and header-CRC tests, then one branch per node type, so
    /// that the two can be read side by side.
    fn run(&mut self) -> io::Result<()> {
        let len = self.view.len();
        let mut free_begin: Option<u64> = None;
        let mut bitch_bitmask = 0u32;
        while self.p < len {
            let p = self.p;
            self.view.patch = None;
            if free_begin.is_none() {
                free_begin = Some(p);
            }
            // Fast path over erased flash: whole 0xFFFFFFFF words.
            let run = self.view.img[p as usize..]
                .chunks_exact(4)
                .take_while(|w| *w == [0xFF; 4])
                .count() as u64;
            if run > 0 {
                self.p += 4 * run;
                let bytes = (4 * run) as i32;
                self.report.empty_space = self.report.empty_space.wrapping_add(bytes);
                continue;
            }
            let magic = self.view.u16(p);
            let ty = self.view.u16(p + hdr::NODETYPE as u64);
            if magic == 0xFFFF && ty == 0xFFFF {
                self.p += 4;
                self.report.empty_space = self.report.empty_space.wrapping_add(4);
                continue;
            }
            if let Some(b) = free_begin.take() {
                if b != p {
                    writeln!(self.out, "Empty space found from 0x{b:08x} to 0x{p:08x}")?;
                }
            }
            if magic != MAGIC {
                if bitch_bitmask == 0 {
                    writeln!(self.out, "Wrong bitmask  at  0x{p:08x}, 0x{magic:04x}")?;
                }
                bitch_bitmask = bitch_bitmask.saturating_add(1);
                self.bad_word();
                continue;
            }
            bitch_bitmask = 0;

            let obsolete = ty & NODE_ACCURATE == 0;
            let ty = ty | NODE_ACCURATE;
            self.view.patch = Some((p, self.view.e.u16_bytes(ty)));
            let mut hb = [0u8; HEADER_SIZE];
            self.view.read(p, &mut hb);
            let Ok(h) = NodeHeader::decode(&hb, self.view.e, p) else {
                self.bad_word();
                continue;
            };
            let crc = crc32(&hb[..8]);
            if crc != h.hdr_crc {
                writeln!(
                    self.out,
                    "Wrong hdr_crc  at  0x{p:08x}, 0x{:08x} instead of 0x{crc:08x}",
                    h.hdr_crc
                )?;
                self.bad_word();
                continue;
            }
            let prefix = if obsolete { "Obsolete" } else { "" };
            match ty {
                NODETYPE_INODE => self.inode(p, &h, prefix)?,
                NODETYPE_DIRENT => self.dirent(p, &h, prefix)?,
                NODETYPE_XATTR => self.xattr(p, &h, prefix)?,
                NODETYPE_XREF => self.xref(p, &h, prefix)?,
                NODETYPE_SUMMARY => self.summary(p, &h, prefix)?,
                NODETYPE_CLEANMARKER => {
                    if self.verbose {
                        writeln!(
                            self.out,
                            "{prefix:>8} Cleanmarker     at 0x{p:08x}, totlen 0x{:08x}",
                            h.totlen
                        )?;
                    }
                    self.skip(p, h.totlen, false);
                }
                NODETYPE_PADDING => {
                    if self.verbose {
                        writeln!(
                            self.out,
                            "{prefix:>8} Padding    node at 0x{p:08x}, totlen 0x{:08x}",
                            h.totlen
                        )?;
                    }
                    self.skip(p, h.totlen, false);
                }
                0xFFFF => {
                    self.p += 4;
                    self.report.empty_space = self.report.empty_space.wrapping_add(4);
                }
                _ => {
                    if self.verbose {
                        writeln!(
                            self.out,
                            "{prefix:>8} Unknown    node at 0x{p:08x}, totlen 0x{:08x}",
                            h.totlen
                        )?;
                    }
                    self.skip(p, h.totlen, true);
                }
            }
        }
        if self.verbose {
            writeln!(
                self.out,
                "Empty space: {}, dirty space: {}",
                self.report.empty_space, self.report.dirty_space
            )?;
        }
        Ok(())
    }

    /// A word that starts no node: 4 bytes further, 4 bytes of dirt.
    fn bad_word(&mut self) {
        self.p += 4;
        self.report.dirty_space = self.report.dirty_space.wrapping_add(4);
    }

    /// `p += PAD(totlen)` (and the dirty count with it) — or, where that would not move,
    /// the bad-word step instead of jffs2dump's endless loop.
    fn skip(&mut self, p: u64, totlen: u32, dirty: bool) {
        let pad = pad4(totlen);
        if pad == 0 {
            self.report
                .deviate(Deviation::NoProgress { offset: p, totlen });
            self.p = p + 4;
            self.report.dirty_space = self.report.dirty_space.wrapping_add(4);
            return;
        }
        self.p = p + u64::from(pad);
        if dirty {
            self.report.dirty_space = self.report.dirty_space.wrapping_add(pad as i32);
        }
    }

    /// Notes a read of node `p` up to `end` that passes the end of the image.
    fn note_end(&mut self, p: u64, end: u64) {
        if end > self.view.len() && self.past_end_noted != p {
            self.past_end_noted = p;
            self.report.deviate(Deviation::PastEnd { offset: p, end });
        }
    }

    /// Reads `n` bytes of node `p` from `at`.
    fn read(&mut self, p: u64, at: u64, buf: &mut [u8]) {
        self.note_end(p, at.saturating_add(buf.len() as u64));
        self.view.read(at, buf);
    }

    /// `mtd_crc32(0, at, len)` for node `p`.
    fn crc(&mut self, p: u64, at: u64, len: u64) -> u32 {
        self.note_end(p, at.saturating_add(len));
        self.view.crc(at, len)
    }

    /// Reports a CRC mismatch as jffs2dump does and skips the node as dirty; `false` when
    /// the CRC is right.
    fn crc_wrong(
        &mut self,
        p: u64,
        h: &NodeHeader,
        what: &str,
        stored: u32,
        computed: u32,
    ) -> io::Result<bool> {
        if stored == computed {
            return Ok(false);
        }
        writeln!(
            self.out,
            "Wrong {what} at  0x{p:08x}, 0x{stored:08x} instead of 0x{computed:08x}"
        )?;
        self.skip(p, h.totlen, true);
        Ok(true)
    }

    fn inode(&mut self, p: u64, h: &NodeHeader, prefix: &str) -> io::Result<()> {
        let mut b = [0u8; INODE_SIZE];
        self.read(p, p, &mut b);
        let n = InodeNode::decode(&b, self.view.e, p).unwrap_or_default();
        writeln!(
            self.out,
            "{prefix:>8} Inode      node at 0x{p:08x}, totlen 0x{:08x}, #ino  {:5}, version {:5}, \
             isize {:8}, csize {:8}, dsize {:8}, offset {:8}",
            h.totlen,
            n.ino as i32,
            n.version as i32,
            n.isize as i32,
            n.csize as i32,
            n.dsize as i32,
            n.offset as i32
        )?;
        let crc = self.crc(p, p, INODE_SIZE as u64 - 8);
        if self.crc_wrong(p, h, "node_crc", n.node_crc, crc)? {
            return Ok(());
        }
        let crc = self.crc(p, p + INODE_SIZE as u64, u64::from(n.csize));
        if self.crc_wrong(p, h, "data_crc", n.data_crc, crc)? {
            return Ok(());
        }
        self.skip(p, h.totlen, false);
        Ok(())
    }

    fn dirent(&mut self, p: u64, h: &NodeHeader, prefix: &str) -> io::Result<()> {
        let mut b = [0u8; DIRENT_SIZE];
        self.read(p, p, &mut b);
        let d = DirentNode::decode(&b, self.view.e, p).unwrap_or_default();
        let mut name = vec![0u8; usize::from(d.nsize)];
        self.read(p, p + DIRENT_SIZE as u64, &mut name);
        write!(
            self.out,
            "{prefix:>8} Dirent     node at 0x{p:08x}, totlen 0x{:08x}, #pino {:5}, version {:5}, \
             #ino  {:8}, nsize {:8}, name ",
            h.totlen, d.pino as i32, d.version as i32, d.ino as i32, d.nsize
        )?;
        self.out.write_all(c_str(&name))?;
        self.out.write_all(b"\n")?;
        let crc = self.crc(p, p, DIRENT_SIZE as u64 - 8);
        if self.crc_wrong(p, h, "node_crc", d.node_crc, crc)? {
            return Ok(());
        }
        let crc = crc32(&name);
        if self.crc_wrong(p, h, "name_crc", d.name_crc, crc)? {
            return Ok(());
        }
        self.skip(p, h.totlen, false);
        Ok(())
    }

    fn xattr(&mut self, p: u64, h: &NodeHeader, prefix: &str) -> io::Result<()> {
        let mut b = [0u8; XATTR_SIZE];
        self.read(p, p, &mut b);
        let x = XattrNode::decode(&b, self.view.e, p).unwrap_or_default();
        let mut name = vec![0u8; usize::from(x.name_len)];
        self.read(p, p + XATTR_SIZE as u64, &mut name);
        write!(
            self.out,
            "{prefix:>8} Xattr      node at 0x{p:08x}, totlen 0x{:08x}, xid   {:5}, version {:5}, \
             name_len   {:3}, name ",
            h.totlen, x.xid as i32, x.version as i32, x.name_len
        )?;
        self.out.write_all(c_str(&name))?;
        self.out.write_all(b"\n")?;
        let crc = self.crc(p, p, XATTR_SIZE as u64 - 4);
        if self.crc_wrong(p, h, "node_crc", x.node_crc, crc)? {
            return Ok(());
        }
        let len = u64::from(x.name_len) + u64::from(x.value_len) + 1;
        let crc = self.crc(p, p + XATTR_SIZE as u64, len);
        if self.crc_wrong(p, h, "data_crc", x.data_crc, crc)? {
            return Ok(());
        }
        self.skip(p, h.totlen, false);
        Ok(())
    }

    fn xref(&mut self, p: u64, h: &NodeHeader, prefix: &str) -> io::Result<()> {
        let mut b = [0u8; XREF_SIZE];
        self.read(p, p, &mut b);
        let r = XrefNode::decode(&b, self.view.e, p).unwrap_or_default();
        writeln!(
            self.out,
            "{prefix:>8} Xref       node at 0x{p:08x}, totlen 0x{:08x}, xid   {:5}, xseqno  {:5}, \
             #ino  {:8}",
            h.totlen, r.xid as i32, r.xseqno as i32, r.ino as i32
        )?;
        // jffs2dump checks no CRC of an xref.
        self.skip(p, h.totlen, false);
        Ok(())
    }

    fn summary(&mut self, p: u64, h: &NodeHeader, prefix: &str) -> io::Result<()> {
        let mut b = [0u8; SUMMARY_SIZE];
        self.read(p, p, &mut b);
        let s = SummaryNode::decode(&b, self.view.e, p).unwrap_or_default();
        writeln!(
            self.out,
            "{prefix:>8} Inode Sum  node at 0x{p:08x}, totlen 0x{:08x}, sum_num  {:5}, \
             cleanmarker size {:5}",
            h.totlen, s.sum_num as i32, s.cln_mkr as i32
        )?;
        let crc = self.crc(p, p, SUMMARY_SIZE as u64 - 8);
        if self.crc_wrong(p, h, "node_crc", s.node_crc, crc)? {
            return Ok(());
        }
        let sum_len = match u64::from(h.totlen).checked_sub(SUMMARY_SIZE as u64) {
            Some(n) => n,
            None => {
                self.report.deviate(Deviation::ShortSummary {
                    offset: p,
                    totlen: h.totlen,
                });
                0
            }
        };
        let crc = self.crc(p, p + SUMMARY_SIZE as u64, sum_len);
        if self.crc_wrong(p, h, "data_crc", s.sum_crc, crc)? {
            return Ok(());
        }
        if self.verbose {
            self.summary_records(p, h, &s)?;
        }
        self.skip(p, h.totlen, false);
        Ok(())
    }

    /// With `-v`, one line per summary record, then the summary marker's line.
    ///
    /// Kept whole, longer than the house limit, because it mirrors the record loop of the
    /// summary case of jffs2dump's `do_dumpcontent` step for step (`docs/spec/mtd-utils-spec.md`
    /// §6.2): one branch per record type, so that the two can be read side by side.
    fn summary_records(&mut self, p: u64, h: &NodeHeader, s: &SummaryNode) -> io::Result<()> {
        let e = self.view.e;
        let in_image = u64::from(h.totlen).min(self.view.len() - p);
        let cap = in_image / 6;
        let count = u64::from(s.sum_num).min(cap);
        if u64::from(s.sum_num) > cap {
            self.report.deviate(Deviation::SummaryRecordsCapped {
                offset: p,
                sum_num: s.sum_num,
                shown: cap,
            });
        }
        let mut sp = p + SUMMARY_SIZE as u64;
        let mut rec = [0u8; SUM_DIRENT_SIZE + u8::MAX as usize];
        for _ in 0..count {
            let t = self.view.u16(sp);
            let size = match t {
                NODETYPE_INODE => SUM_INODE_SIZE,
                NODETYPE_XATTR => SUM_XATTR_SIZE,
                NODETYPE_XREF => SUM_XREF_SIZE,
                NODETYPE_DIRENT => {
                    SUM_DIRENT_SIZE + usize::from(self.view.byte(sp + SUM_DIRENT_NSIZE_AT as u64))
                }
                _ => 0,
            };
            let rec = &mut rec[..size];
            self.read(p, sp, rec);
            let decoded = if size == 0 {
                None
            } else {
                SumRecord::decode(rec, e, sp).ok()
            };
            match decoded {
                Some((
                    SumRecord::Inode {
                        inode,
                        version,
                        offset,
                        totlen,
                        ..
                    },
                    n,
                )) => {
                    writeln!(
                        self.out,
                        "{:14} #ino  {:5},  version {:5}, offset 0x{offset:08x}, totlen 0x{totlen:08x}",
                        "", inode as i32, version as i32
                    )?;
                    sp += n as u64;
                }
                Some((
                    SumRecord::Dirent {
                        totlen,
                        offset,
                        pino,
                        version,
                        ino,
                        name,
                        ..
                    },
                    n,
                )) => {
                    write!(
                        self.out,
                        "{:14} dirent offset 0x{offset:08x}, totlen 0x{totlen:08x}, #pino  {:5},  \
                         version {:5}, #ino  {:8}, nsize {:8}, name ",
                        "",
                        pino as i32,
                        version as i32,
                        ino as i32,
                        name.len()
                    )?;
                    self.out.write_all(c_str(&name))?;
                    self.out.write_all(b" \n")?;
                    sp += n as u64;
                }
                Some((
                    SumRecord::Xattr {
                        xid,
                        version,
                        offset,
                        totlen,
                        ..
                    },
                    n,
                )) => {
                    writeln!(
                        self.out,
                        "{:14} Xattr  offset 0x{offset:08x}, totlen 0x{totlen:08x}, version {:5}, \
                         #xid {:8}",
                        "", version as i32, xid as i32
                    )?;
                    sp += n as u64;
                }
                Some((SumRecord::Xref { offset, .. }, n)) => {
                    writeln!(self.out, "{:14} Xref   offset 0x{offset:08x}", "")?;
                    sp += n as u64;
                }
                // An unknown record does not advance jffs2dump's record pointer.
                None => writeln!(self.out, "Unknown summary node!")?,
            }
        }
        let (m_off, m_magic) =
            match (p + u64::from(h.totlen)).checked_sub(SUMMARY_MARKER_SIZE as u64) {
                Some(at) => {
                    self.note_end(p, at + SUMMARY_MARKER_SIZE as u64);
                    (self.view.u32(at), self.view.u32(at + 4))
                }
                None => (0, 0),
            };
        writeln!(
            self.out,
            "{:14} Sum Node Offset  0x{m_off:08x}, Magic 0x{m_magic:08x}, Padded size 0x{:08x}",
            "", s.padded
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::encode_cleanmarker;

    fn dump(img: &[u8], e: Endian, verbose: bool) -> (String, ContentReport) {
        let mut out = Vec::new();
        let r = dump_content(img, &ContentOptions { endian: e, verbose }, &mut out).unwrap();
        (String::from_utf8_lossy(&out).into_owned(), r)
    }

    #[test]
    fn zero_extension_equals_real_zeros() {
        for n in [0u64, 1, 3, 4, 100, 4096, 70_000] {
            let mut v = b"jffs2".to_vec();
            v.resize(5 + n as usize, 0);
            assert_eq!(crc_zeros(crc32(b"jffs2"), n), crc32(&v), "n = {n}");
        }
    }

    /// The worked example of docs/spec/mtd-utils-spec.md §2.9, as jffs2dump prints it.
    #[test]
    fn worked_example() {
        let e = Endian::Little;
        let mut img = Vec::new();
        encode_cleanmarker(e, 12, &mut img);
        DirentNode {
            pino: 1,
            ino: 2,
            dtype: 8,
            ..Default::default()
        }
        .encode(e, b"a.txt", &mut img);
        img.resize(pad4(img.len() as u32) as usize, 0xFF);
        InodeNode {
            ino: 2,
            version: 1,
            mode: 0o100644,
            isize: 6,
            dsize: 6,
            ..Default::default()
        }
        .encode(e, b"hello\n", &mut img);
        img.resize(pad4(img.len() as u32) as usize, 0xFF);
        img.extend_from_slice(&[0xFF; 8]);
        img.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0, 0, 0, 0]);
        let (text, r) = dump(&img, e, true);
        assert_eq!(
            text,
            "         Cleanmarker     at 0x00000000, totlen 0x0000000c\n\
             \x20        Dirent     node at 0x0000000c, totlen 0x0000002d, #pino     1, version     0, #ino         2, nsize        5, name a.txt\n\
             \x20        Inode      node at 0x0000003c, totlen 0x0000004a, #ino      2, version     1, isize        6, csize        6, dsize        6, offset        0\n\
             Empty space found from 0x00000088 to 0x00000090\n\
             Wrong bitmask  at  0x00000090, 0x3412\n\
             Empty space: 8, dirty space: 8\n"
        );
        assert!(r.deviations.is_empty());
    }

    #[test]
    fn totlen_zero_does_not_hang() {
        for e in [Endian::Little, Endian::Big] {
            // A cleanmarker header with totlen 0 and a valid CRC, then an inode-type one.
            let mut img = Vec::new();
            encode_cleanmarker(e, 0, &mut img);
            let mut hdr = Vec::new();
            encode_cleanmarker(e, 0, &mut hdr);
            hdr[2..4].copy_from_slice(&e.u16_bytes(NODETYPE_INODE));
            let crc = crc32(&hdr[..8]);
            hdr[8..12].copy_from_slice(&e.u32_bytes(crc));
            img.extend_from_slice(&hdr);
            let (text, r) = dump(&img, e, true);
            assert!(text.contains("Cleanmarker     at 0x00000000, totlen 0x00000000"));
            assert_eq!(text.matches("Inode      node at 0x0000000c").count(), 1);
            assert!(matches!(
                r.deviations[0],
                Deviation::NoProgress {
                    offset: 0,
                    totlen: 0
                }
            ));
        }
    }

    #[test]
    fn never_panics_on_noise() {
        let mut seed = 0x1234_5678_9abc_def0u64;
        for round in 0..300 {
            let len: usize = (round * 37) % 700;
            let mut img: Vec<u8> = (0..len)
                .map(|_| {
                    seed ^= seed << 13;
                    seed ^= seed >> 7;
                    seed ^= seed << 17;
                    (seed >> 24) as u8
                })
                .collect();
            // Sprinkle valid-looking headers with random totlens.
            for at in (0..len.saturating_sub(12)).step_by(48) {
                let e = Endian::Little;
                let ty = [
                    NODETYPE_SUMMARY,
                    NODETYPE_INODE,
                    NODETYPE_DIRENT,
                    NODETYPE_XATTR,
                ][at % 4];
                img[at..at + 2].copy_from_slice(&e.u16_bytes(MAGIC));
                img[at + 2..at + 4].copy_from_slice(&e.u16_bytes(ty));
                let crc = crc32(&img[at..at + 8]);
                img[at + 8..at + 12].copy_from_slice(&e.u32_bytes(crc));
            }
            for v in [false, true] {
                let _ = dump(&img, Endian::Little, v);
                let _ = dump(&img, Endian::Big, v);
            }
        }
    }
}
