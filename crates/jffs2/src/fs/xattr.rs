//! Xattr datums and references (`xattr.c`, `acl.c`; `docs/spec/kernel-jffs2-spec.md` §9.4): the build
//! of the xattr subsystem at mount, and what `listxattr` / `getxattr` return for an inode,
//! with JFFS2 ACLs converted back to Linux's `posix_acl_xattr` format.

use std::collections::BTreeMap;
use std::fmt;

use super::readinode::{Inode, InodeKind};
use super::refs::{hash08x, mark_obsolete};
use super::{kmsg, live, Fs, InoBuild, Problem};
use crate::code::Code;
use crate::crc::crc32;
use crate::format::hdr;
use crate::format::{
    pad4, xprefix, Endian, XattrNode, XrefNode, MAGIC, NODETYPE_XATTR, NODETYPE_XREF, XATTR_SIZE,
    XREF_SIZE,
};
use crate::scan::{KernelMsg, Level, RefState, Scan};

/// `XREF_DELETE_MARKER`: bit 0 of `xseqno` marks a deleted xref.
const XREF_DELETE_MARKER: u32 = 1;

/// A finding of the xattr subsystem.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum XattrError {
    /// An xref node from a summary fails its node CRC when verified (`node CRC failed at
    /// %#08x, read=%#08x, calc=%#08x`): dropped.
    XrefCrc {
        /// Node offset.
        offset: u32,
        /// Stored CRC.
        stored: u32,
        /// Computed CRC.
        computed: u32,
    },
    /// An xref node from a summary is not an xref of 28 bytes (`inconsistent xref at …`).
    XrefInconsistent {
        /// Node offset.
        offset: u32,
        /// What was found.
        reason: String,
    },
    /// An xref whose datum or inode does not exist, or whose inode was deleted: dead.
    OrphanXref {
        /// Node offset.
        offset: u32,
        /// Inode.
        ino: u32,
        /// xattr id.
        xid: u32,
    },
    /// A datum no live xref uses.
    OrphanDatum {
        /// Node offset.
        offset: u32,
        /// xattr id.
        xid: u32,
    },
    /// A datum that fails its checks when loaded (node CRC, header consistency, data CRC):
    /// the kernel flags it INVALID and deletes the xrefs that use it.
    BadDatum {
        /// Node offset.
        offset: u32,
        /// xattr id.
        xid: u32,
        /// The kernel's message.
        reason: String,
    },
    /// Two xrefs of one inode with the same name: the one with the lower `xseqno` is dropped.
    DuplicateName {
        /// Node offset of the dropped xref.
        offset: u32,
        /// Inode.
        ino: u32,
        /// Full attribute name.
        name: Vec<u8>,
    },
    /// A POSIX ACL that Linux cannot convert (`getxattr` fails).
    BadAcl {
        /// Node offset of the datum.
        offset: u32,
        /// Inode.
        ino: u32,
        /// Why.
        reason: &'static str,
    },
}

impl XattrError {
    /// Stable code.
    pub fn code(&self) -> Code {
        match self {
            XattrError::XrefCrc { .. } => Code::XrefCrc,
            XattrError::XrefInconsistent { .. } => Code::XrefInconsistent,
            XattrError::OrphanXref { .. } => Code::OrphanXref,
            XattrError::OrphanDatum { .. } => Code::OrphanXattr,
            XattrError::BadDatum { .. } => Code::BadXattr,
            XattrError::DuplicateName { .. } => Code::DuplicateXattr,
            XattrError::BadAcl { .. } => Code::BadAcl,
        }
    }

    /// Node offset.
    pub fn offset(&self) -> Option<u32> {
        Some(match self {
            XattrError::XrefCrc { offset, .. }
            | XattrError::XrefInconsistent { offset, .. }
            | XattrError::OrphanXref { offset, .. }
            | XattrError::OrphanDatum { offset, .. }
            | XattrError::BadDatum { offset, .. }
            | XattrError::DuplicateName { offset, .. }
            | XattrError::BadAcl { offset, .. } => *offset,
        })
    }

    /// Inode, when known.
    pub fn ino(&self) -> Option<u32> {
        match self {
            XattrError::OrphanXref { ino, .. }
            | XattrError::DuplicateName { ino, .. }
            | XattrError::BadAcl { ino, .. } => Some(*ino),
            _ => None,
        }
    }
}

impl fmt::Display for XattrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            XattrError::XrefCrc {
                offset,
                stored,
                computed,
            } => write!(
                f,
                "xattr reference at 0x{offset:08x}: node CRC 0x{stored:08x}, calculated 0x{computed:08x}; dropped"
            ),
            XattrError::XrefInconsistent { offset, reason } => {
                write!(f, "xattr reference at 0x{offset:08x} is inconsistent ({reason}); dropped")
            }
            XattrError::OrphanXref { offset, ino, xid } => write!(
                f,
                "xattr reference at 0x{offset:08x} links inode #{ino} to xattr {xid}, one of which does not exist"
            ),
            XattrError::OrphanDatum { offset, xid } => {
                write!(f, "xattr {xid} at 0x{offset:08x} is used by no inode")
            }
            XattrError::BadDatum {
                offset,
                xid,
                reason,
            } => write!(
                f,
                "xattr {xid} at 0x{offset:08x} is invalid ({reason}); Linux drops it from its inodes"
            ),
            XattrError::DuplicateName { offset, ino, name } => write!(
                f,
                "inode #{ino} has attribute {} twice; the reference at 0x{offset:08x} is dropped",
                crate::text::escape_if_needed(name)
            ),
            XattrError::BadAcl {
                offset,
                ino,
                reason,
            } => write!(
                f,
                "inode #{ino}: POSIX ACL at 0x{offset:08x} cannot be read ({reason})"
            ),
        }
    }
}

/// One extended attribute as `listxattr` names it and `getxattr` returns it. A value that
/// `getxattr` cannot return holds the errno name (`ENODATA`, `EINVAL`, `EOPNOTSUPP`, `EIO`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Xattr {
    /// Full name (`user.…`, `security.…`, `trusted.…`, `system.posix_acl_access`, …).
    pub name: Vec<u8>,
    /// Value (ACLs in the `posix_acl_xattr` format), or the errno of `getxattr`.
    pub value: Result<Vec<u8>, &'static str>,
}

/// An extended attribute as stored on flash (see [`Fs::raw_xattrs`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawXattr {
    /// JFFS2 prefix number (`xprefix`).
    pub xprefix: u8,
    /// Name without the prefix, as stored.
    pub name: Vec<u8>,
    /// Value as stored (POSIX ACLs in the JFFS2 format).
    pub value: Vec<u8>,
}

/// Counts of the build's notice line (§9.4).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct XattrSummary {
    /// Datums.
    pub xdatum: u32,
    /// Datums with an unchecked node (from a summary).
    pub unchecked: u32,
    /// Datums no xref uses.
    pub xdatum_orphan: u32,
    /// Xrefs after merging.
    pub xref: u32,
    /// Deleted xrefs.
    pub dead: u32,
    /// Xrefs to a missing datum or inode.
    pub xref_orphan: u32,
}

#[derive(Debug, Clone)]
struct Datum {
    version: u32,
    node: usize,
    older: Vec<usize>,
}

#[derive(Debug, Clone, Copy)]
struct Bound {
    xid: u32,
    xseqno: u32,
    node: usize,
}

/// The xattr state after the build.
#[derive(Debug, Clone, Default)]
pub(crate) struct XattrIndex {
    datums: BTreeMap<u32, Datum>,
    per_ino: BTreeMap<u32, Vec<Bound>>,
    summary: XattrSummary,
}

fn read_xref(image: &[u8], e: Endian, off: u32) -> Result<XrefNode, XattrError> {
    let b = image
        .get(off as usize..)
        .filter(|b| b.len() >= XREF_SIZE)
        .ok_or(XattrError::XrefInconsistent {
            offset: off,
            reason: "past the end of the image".to_string(),
        })?;
    let rr = XrefNode::decode(b, e, u64::from(off)).map_err(|_| XattrError::XrefInconsistent {
        offset: off,
        reason: "truncated".to_string(),
    })?;
    let computed = crc32(&b[..XREF_SIZE - 4]);
    if computed != rr.node_crc {
        return Err(XattrError::XrefCrc {
            offset: off,
            stored: rr.node_crc,
            computed,
        });
    }
    let magic = e.get_u16(b, hdr::MAGIC).unwrap_or(0);
    let nodetype = e.get_u16(b, hdr::NODETYPE).unwrap_or(0);
    let totlen = e.get_u32(b, hdr::TOTLEN).unwrap_or(0);
    if magic != MAGIC || nodetype != NODETYPE_XREF || totlen != XREF_SIZE as u32 {
        return Err(XattrError::XrefInconsistent {
            offset: off,
            reason: format!(
                "magic={:#04x}/{MAGIC:#04x}, nodetype={:#04x}/{NODETYPE_XREF:#04x}, totlen={totlen}/{XREF_SIZE}",
                magic, nodetype
            ),
        });
    }
    Ok(rr)
}

/// What the build found: problems, and the kernel's messages.
#[derive(Default)]
struct Findings {
    problems: Vec<Problem>,
    log: Vec<KernelMsg>,
}

/// `jffs2_build_xattr_subsystem` (§9.4): the current datums, then the kernel's three
/// phases.
pub(crate) fn build(
    image: &[u8],
    scan: &mut Scan,
    inos: &BTreeMap<u32, InoBuild>,
) -> (XattrIndex, Vec<Problem>, Vec<KernelMsg>) {
    let mut f = Findings::default();
    let mut idx = XattrIndex {
        datums: current_datums(scan),
        ..XattrIndex::default()
    };
    let merged = merge_xrefs(image, scan, &mut f);
    let refcnt = bind_xrefs(&merged, scan, inos, &mut idx, &mut f);
    check_datums(scan, &refcnt, &mut idx, &mut f);
    let s = idx.summary;
    f.log.push(kmsg(
        Level::Notice,
        "jffs2_build_xattr_subsystem",
        None,
        format!(
            "complete building xattr subsystem, {} of xdatum ({} unchecked, {} orphan) and {} of xref ({} dead, {} orphan) found.",
            s.xdatum, s.unchecked, s.xdatum_orphan, s.xref, s.dead, s.xref_orphan
        ),
    ));
    (idx, f.problems, f.log)
}

/// The state of the scan's ref `i`, if there is one.
fn ref_state(scan: &Scan, i: usize) -> Option<RefState> {
    scan.refs.get(i).map(|r| r.state)
}

/// Datums: the highest version is the current node; equal versions go to the later
/// scanned; the others are older copies (§9.1, §9.3).
fn current_datums(scan: &Scan) -> BTreeMap<u32, Datum> {
    let mut datums: BTreeMap<u32, Datum> = BTreeMap::new();
    for xd in &scan.xattr_datums {
        if !ref_state(scan, xd.node).is_some_and(live) {
            continue;
        }
        match datums.get_mut(&xd.xid) {
            None => {
                datums.insert(
                    xd.xid,
                    Datum {
                        version: xd.version,
                        node: xd.node,
                        older: Vec::new(),
                    },
                );
            }
            Some(d) if d.version > xd.version => d.older.push(xd.node),
            Some(d) => {
                d.older.push(d.node);
                d.node = xd.node;
                d.version = xd.version;
            }
        }
    }
    datums
}

/// Phase 1: verify xrefs read from summaries, merge duplicates by (ino, xid), largest
/// xseqno first. The kernel's temporary list is in reverse scan order. Xrefs that fail
/// verification are marked obsolete.
fn merge_xrefs(image: &[u8], scan: &mut Scan, f: &mut Findings) -> BTreeMap<(u32, u32), Bound> {
    let e = scan.geometry.endian;
    let mut merged: BTreeMap<(u32, u32), Bound> = BTreeMap::new();
    let mut drop: Vec<usize> = Vec::new();
    for xr in scan.xattr_refs.iter().rev() {
        let Some(st) = ref_state(scan, xr.node) else {
            continue;
        };
        if !live(st) {
            continue;
        }
        let off = scan.refs[xr.node].offset;
        let (ino, xid, xseqno) = match (st, xr.ino, xr.xid, xr.xseqno) {
            (RefState::Pristine, Some(i), Some(x), Some(s)) => (i, x, s),
            _ => match read_xref(image, e, off) {
                Ok(rr) => (rr.ino, rr.xid, rr.xseqno),
                Err(err) => {
                    let text = xref_error_text(&err, off);
                    f.log
                        .push(kmsg(Level::Err, "verify_xattr_ref", Some(off), text));
                    f.problems.push(Problem::Xattr(err));
                    drop.push(xr.node);
                    continue;
                }
            },
        };
        let b = Bound {
            xid,
            xseqno,
            node: xr.node,
        };
        match merged.get_mut(&(ino, xid)) {
            Some(t) if xseqno > t.xseqno => *t = b,
            Some(_) => {}
            None => {
                merged.insert((ino, xid), b);
            }
        }
    }
    for i in drop {
        mark_obsolete(scan, i);
    }
    merged
}

/// The kernel's message for an xref at `off` that fails verification.
fn xref_error_text(err: &XattrError, off: u32) -> String {
    match err {
        XattrError::XrefCrc {
            stored, computed, ..
        } => format!(
            "node CRC failed at {}, read={}, calc={}",
            hash08x(off),
            hash08x(*stored),
            hash08x(*computed)
        ),
        XattrError::XrefInconsistent { reason, .. } => {
            format!("inconsistent xref at {}, {reason}", hash08x(off))
        }
        _ => String::new(),
    }
}

/// Phase 2: bind live xrefs to their datum and inode; dead and orphan ones are dropped.
/// Returns the references per datum.
fn bind_xrefs(
    merged: &BTreeMap<(u32, u32), Bound>,
    scan: &Scan,
    inos: &BTreeMap<u32, InoBuild>,
    idx: &mut XattrIndex,
    f: &mut Findings,
) -> BTreeMap<u32, u32> {
    let mut refcnt: BTreeMap<u32, u32> = BTreeMap::new();
    for (&(ino, xid), b) in merged {
        idx.summary.xref += 1;
        if b.xseqno & XREF_DELETE_MARKER != 0 {
            idx.summary.dead += 1;
            continue;
        }
        let linked = inos.get(&ino).is_some_and(|i| i.pino_nlink != 0);
        if !idx.datums.contains_key(&xid) || !linked {
            idx.summary.xref_orphan += 1;
            f.problems.push(Problem::Xattr(XattrError::OrphanXref {
                offset: scan.refs.get(b.node).map_or(0, |r| r.offset),
                ino,
                xid,
            }));
            continue;
        }
        *refcnt.entry(xid).or_default() += 1;
        idx.per_ino.entry(ino).or_default().push(*b);
    }
    refcnt
}

/// Phase 3: orphan and unchecked datums (`refcnt`: references per datum).
fn check_datums(scan: &Scan, refcnt: &BTreeMap<u32, u32>, idx: &mut XattrIndex, f: &mut Findings) {
    for (&xid, d) in &idx.datums {
        idx.summary.xdatum += 1;
        if refcnt.get(&xid).copied().unwrap_or(0) == 0 {
            idx.summary.xdatum_orphan += 1;
            f.problems.push(Problem::Xattr(XattrError::OrphanDatum {
                offset: scan.refs.get(d.node).map_or(0, |r| r.offset),
                xid,
            }));
            continue;
        }
        let unchecked = std::iter::once(d.node)
            .chain(d.older.iter().copied())
            .any(|n| ref_state(scan, n) == Some(RefState::Unchecked));
        if unchecked {
            idx.summary.unchecked += 1;
        }
    }
}

/// A datum loaded as `load_xattr_datum` loads it.
struct Loaded {
    xprefix: u8,
    name: Vec<u8>,
    value: Vec<u8>,
    offset: u32,
}

impl Fs<'_> {
    /// The counts of the build's xattr notice.
    pub fn xattr_summary(&self) -> XattrSummary {
        self.xattr.summary
    }

    /// `do_verify_xattr_datum` (for a datum whose node came from a summary) and
    /// `do_load_xattr_datum` (§9.4).
    fn load_datum(&self, xid: u32) -> Result<Loaded, XattrError> {
        let e = self.scan.geometry.endian;
        let d = self
            .xattr
            .datums
            .get(&xid)
            .ok_or(XattrError::OrphanDatum { offset: 0, xid })?;
        let r = self
            .scan
            .refs
            .get(d.node)
            .ok_or(XattrError::OrphanDatum { offset: 0, xid })?;
        let off = r.offset;
        let bad = |reason: String| XattrError::BadDatum {
            offset: off,
            xid,
            reason,
        };
        let b = self
            .image
            .get(off as usize..)
            .filter(|b| b.len() >= XATTR_SIZE)
            .ok_or_else(|| bad("past the end of the image".to_string()))?;
        let rx =
            XattrNode::decode(b, e, u64::from(off)).map_err(|_| bad("truncated".to_string()))?;
        if r.state != RefState::Pristine {
            let computed = crc32(&b[..XATTR_SIZE - 4]);
            if computed != rx.node_crc {
                // The kernel prints the header CRC in the "read" slot.
                return Err(bad(format!(
                    "node CRC failed at {}, read={}, calc={}",
                    hash08x(off),
                    hash08x(e.get_u32(b, hdr::HDR_CRC).unwrap_or(0)),
                    hash08x(computed)
                )));
            }
            let magic = e.get_u16(b, hdr::MAGIC).unwrap_or(0);
            let nodetype = e.get_u16(b, hdr::NODETYPE).unwrap_or(0);
            let totlen = e.get_u32(b, hdr::TOTLEN).unwrap_or(0);
            let want =
                pad4(XATTR_SIZE as u32 + u32::from(rx.name_len) + 1 + u32::from(rx.value_len));
            if magic != MAGIC
                || nodetype != NODETYPE_XATTR
                || totlen != want
                || rx.xid != xid
                || rx.version != d.version
            {
                return Err(bad(format!(
                    "inconsistent xdatum at {}, magic={:#04x}/{MAGIC:#04x}, nodetype={:#04x}/{NODETYPE_XATTR:#04x}, totlen={totlen}/{want}, xid={}/{xid}, version={}/{}",
                    hash08x(off),
                    magic,
                    nodetype,
                    rx.xid,
                    rx.version,
                    d.version
                )));
            }
        }
        let nl = rx.name_len as usize;
        let len = nl + 1 + rx.value_len as usize;
        let mut data = b
            .get(XATTR_SIZE..XATTR_SIZE + len)
            .ok_or_else(|| bad("past the end of the image".to_string()))?
            .to_vec();
        // The separator is forced to NUL before the CRC is computed.
        data[nl] = 0;
        let computed = crc32(&data);
        if computed != rx.data_crc {
            return Err(bad(format!(
                "node CRC failed (JFFS2_NODETYPE_XATTR) at {}, read: 0x{:08x} calculated: 0x{computed:08x}",
                hash08x(off),
                rx.data_crc
            )));
        }
        let value = data.split_off(nl + 1);
        data.truncate(nl);
        Ok(Loaded {
            xprefix: rx.xprefix,
            name: data,
            value,
            offset: off,
        })
    }

    /// The extended attributes of an inode as `listxattr` + `getxattr` show them (§9.4):
    /// bound xrefs whose datum loads (invalid ones are dropped), duplicates by name resolved
    /// by the larger `xseqno` (`check_xattr_ref_inode`), unknown prefixes not listed, POSIX
    /// ACLs converted. Problems found are returned beside.
    pub fn xattrs(&self, inode: &Inode) -> (Vec<Xattr>, Vec<Problem>) {
        let mut problems = Vec::new();
        let selected = self.selected_xattrs(inode, &mut problems);
        let mut out = Vec::new();
        for l in &selected {
            let (prefix, acl): (&[u8], bool) = match l.xprefix {
                xprefix::USER => (b"user.", false),
                xprefix::SECURITY => (b"security.", false),
                xprefix::ACL_ACCESS => (b"system.posix_acl_access", true),
                xprefix::ACL_DEFAULT => (b"system.posix_acl_default", true),
                xprefix::TRUSTED => (b"trusted.", false),
                _ => continue, // no handler: not listed
            };
            let mut name = prefix.to_vec();
            name.extend_from_slice(super::dirent::c_name(&l.name));
            let value = if acl {
                if !l.name.is_empty() || inode.kind == InodeKind::Symlink {
                    Err("EOPNOTSUPP")
                } else {
                    match acl_to_xattr(&l.value, self.scan.geometry.endian) {
                        Ok(v) => Ok(v),
                        Err(reason) => {
                            problems.push(Problem::Xattr(XattrError::BadAcl {
                                offset: l.offset,
                                ino: inode.ino,
                                reason,
                            }));
                            Err(if reason == "empty" {
                                "ENODATA"
                            } else {
                                "EINVAL"
                            })
                        }
                    }
                }
            } else if l.xprefix == xprefix::USER
                && !matches!(inode.kind, InodeKind::File | InodeKind::Dir)
            {
                // xattr_permission: user.* on anything but files and directories reads as
                // "no such attribute".
                Err("ENODATA")
            } else {
                Ok(l.value.clone())
            };
            out.push(Xattr { name, value });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        (out, problems)
    }

    /// The extended attributes of an inode as stored: the datums [`Fs::xattrs`] lists (bound,
    /// loadable, duplicates resolved, a known prefix), with their JFFS2 prefix number, name
    /// and value as on flash (POSIX ACLs in the JFFS2 format of the image's byte order). What
    /// a rewriter copies to keep exactly what Linux shows.
    pub fn raw_xattrs(&self, inode: &Inode) -> Vec<RawXattr> {
        let mut problems = Vec::new();
        self.selected_xattrs(inode, &mut problems)
            .into_iter()
            .filter(|l| {
                matches!(
                    l.xprefix,
                    xprefix::USER
                        | xprefix::SECURITY
                        | xprefix::ACL_ACCESS
                        | xprefix::ACL_DEFAULT
                        | xprefix::TRUSTED
                )
            })
            .map(|l| RawXattr {
                xprefix: l.xprefix,
                name: l.name,
                value: l.value,
            })
            .collect()
    }

    /// The loadable datums bound to an inode, duplicates by name resolved by the larger
    /// xseqno (`check_xattr_ref_inode`), in xid order of the winners.
    fn selected_xattrs(&self, inode: &Inode, problems: &mut Vec<Problem>) -> Vec<Loaded> {
        let Some(bound) = self.xattr.per_ino.get(&inode.ino) else {
            return Vec::new();
        };
        let mut loaded: Vec<(Bound, Loaded)> = Vec::new();
        for b in bound {
            match self.load_datum(b.xid) {
                Ok(l) => loaded.push((*b, l)),
                Err(e) => problems.push(Problem::Xattr(e)),
            }
        }
        // Duplicate names: the larger xseqno stays.
        let mut keep: BTreeMap<(u8, Vec<u8>), usize> = BTreeMap::new();
        for (i, (b, l)) in loaded.iter().enumerate() {
            let key = (l.xprefix, super::dirent::c_name(&l.name).to_vec());
            match keep.get(&key).copied() {
                None => {
                    keep.insert(key, i);
                }
                Some(j) => {
                    let (loser, winner) = if loaded[j].0.xseqno > b.xseqno {
                        (i, j)
                    } else {
                        (j, i)
                    };
                    keep.insert(key, winner);
                    problems.push(Problem::Xattr(XattrError::DuplicateName {
                        offset: self
                            .scan
                            .refs
                            .get(loaded[loser].0.node)
                            .map_or(0, |r| r.offset),
                        ino: inode.ino,
                        name: loaded[loser].1.name.clone(),
                    }));
                }
            }
        }
        let mut winners: Vec<usize> = keep.into_values().collect();
        winners.sort_unstable();
        let mut slots: Vec<Option<Loaded>> = loaded.into_iter().map(|(_, l)| Some(l)).collect();
        winners
            .into_iter()
            .filter_map(|i| slots.get_mut(i).and_then(Option::take))
            .collect()
    }
}

// The ACL layout and its conversions are described once, in format (`docs/spec/kernel-jffs2-spec.md` §1.8).
use crate::format::acl;

/// `jffs2_acl_from_medium` then `posix_acl_to_xattr` ([`acl::to_xattr`]), with the reason as
/// the text [`XattrError::BadAcl`] carries. `Err("empty")` when the ACL has no entries
/// (`getxattr` then fails with ENODATA), other errors are EINVAL.
pub fn acl_to_xattr(v: &[u8], e: Endian) -> Result<Vec<u8>, &'static str> {
    acl::to_xattr(v, e).map_err(|err| err.reason())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::acl::{ACL_GROUP_OBJ, ACL_MASK, ACL_OTHER, ACL_USER, ACL_USER_OBJ};

    #[test]
    fn acl_conversion() {
        let e = Endian::Big;
        let mut v = Vec::new();
        v.extend_from_slice(&1u32.to_be_bytes());
        for (tag, perm) in [(ACL_USER_OBJ, 6u16), (ACL_GROUP_OBJ, 4)] {
            v.extend_from_slice(&tag.to_be_bytes());
            v.extend_from_slice(&perm.to_be_bytes());
        }
        v.extend_from_slice(&ACL_MASK.to_be_bytes());
        v.extend_from_slice(&4u16.to_be_bytes());
        v.extend_from_slice(&ACL_OTHER.to_be_bytes());
        v.extend_from_slice(&4u16.to_be_bytes());
        v.extend_from_slice(&ACL_USER.to_be_bytes());
        v.extend_from_slice(&7u16.to_be_bytes());
        v.extend_from_slice(&1000u32.to_be_bytes());
        let x = acl_to_xattr(&v, e).unwrap();
        assert_eq!(x.len(), 4 + 5 * 8);
        assert_eq!(&x[..4], &[2, 0, 0, 0]);
        assert_eq!(&x[4..12], &[1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(&x[36..44], &[2, 0, 7, 0, 0xe8, 3, 0, 0]);
        assert_eq!(acl_to_xattr(&1u32.to_be_bytes(), e), Err("empty"));
        assert!(acl_to_xattr(&2u32.to_be_bytes(), e).is_err());
        assert!(acl_to_xattr(&[0, 0, 0, 1, 0, 0x40, 0, 0], e).is_err());
    }
}
