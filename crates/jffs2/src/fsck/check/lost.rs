//! Lost nodes: obsolete nodes with valid CRCs that nothing supersedes.

use std::collections::{HashMap, HashSet};

use super::super::{Code, Finding, Severity};
use super::Ctx;
use crate::fs::{Fs, Inode};
use crate::fsck::walk::{BlockWalk, Body, Name, WNode};

impl Ctx<'_, '_> {
    /// Obsolete nodes with valid CRCs that nothing supersedes: a cleared ACCURATE bit (no CRC
    /// covers it) on a node Linux still needs.
    pub(super) fn lost_nodes(&mut self) {
        // Only a node marked obsolete whose CRCs pass can be lost: with none (an image as
        // mkfs writes it), the maps below, an entry per inode and per name, are not built.
        let candidates = self
            .walks
            .iter()
            .any(|w| w.nodes.iter().any(|n| !n.accurate && n.fault.is_none()));
        if !candidates {
            return;
        }
        let mut lost = Lost {
            cx: self,
            valid: Valid::gather(self.walks, self.img),
            reread: None,
            warn: Vec::new(),
        };
        let mut out = Vec::new();
        for w in self.walks {
            for n in w.nodes.iter().filter(|n| !n.accurate && n.fault.is_none()) {
                if let Some((ino, msg)) = lost.check(n) {
                    let path = ino.and_then(|i| self.path_of(i));
                    out.push(
                        Finding::new(Code::LostNode, msg)
                            .at(n.offset)
                            .ino(ino)
                            .path(path),
                    );
                }
            }
        }
        let warn = lost.warn;
        self.findings.extend(out);
        self.findings.extend(warn);
    }
}

/// Whether an inode exists and is not removed.
fn live(fs: &Fs<'_>, ino: u32) -> bool {
    fs.exists(ino) && !fs.removed(ino)
}

/// Valid nodes by inode / directory entry name / xattr: what could replace an obsolete node.
struct Valid<'a> {
    /// ino -> (version, isize)
    inodes: HashMap<u32, Vec<(u32, u32)>>,
    /// (pino, name) -> max version
    names: HashMap<(u32, &'a [u8]), u32>,
    /// xid -> max version
    xattr_v: HashMap<u32, u32>,
    /// (ino, xid) -> max xseqno
    xrefs: HashMap<(u32, u32), u32>,
    live_xref_xids: HashSet<u32>,
    live_xattr: HashSet<u32>,
    accurate_ino: HashSet<u32>,
    /// Inodes named by the newest entry of their name.
    named: HashSet<u32>,
}

impl<'a> Valid<'a> {
    /// Gathers the valid nodes of every block, then the inodes their newest entries name.
    fn gather(walks: &[BlockWalk], img: &'a [u8]) -> Valid<'a> {
        let mut v = Valid {
            inodes: HashMap::new(),
            names: HashMap::new(),
            xattr_v: HashMap::new(),
            xrefs: HashMap::new(),
            live_xref_xids: HashSet::new(),
            live_xattr: HashSet::new(),
            accurate_ino: HashSet::new(),
            named: HashSet::new(),
        };
        for w in walks {
            for n in w.nodes.iter().filter(|n| n.fault.is_none()) {
                v.note(n, img);
            }
        }
        // Inodes named by the newest entry of their name.
        for w in walks {
            for n in w.nodes.iter().filter(|n| n.fault.is_none() && n.accurate) {
                if let Body::Dirent {
                    pino,
                    version,
                    ino,
                    name,
                    ..
                } = &n.body
                {
                    if *ino != 0 && v.names.get(&(*pino, name.get(img))) == Some(version) {
                        v.named.insert(*ino);
                    }
                }
            }
        }
        v
    }

    /// Records one valid node.
    fn note(&mut self, n: &WNode, img: &'a [u8]) {
        match &n.body {
            Body::Inode {
                ino,
                version,
                isize,
                ..
            } => {
                self.inodes
                    .entry(*ino)
                    .or_default()
                    .push((*version, *isize));
                if n.accurate {
                    self.accurate_ino.insert(*ino);
                }
            }
            Body::Dirent {
                pino,
                version,
                name,
                ..
            } => {
                let v = self.names.entry((*pino, name.get(img))).or_insert(0);
                *v = (*v).max(*version);
            }
            Body::Xattr { xid, version } => {
                let v = self.xattr_v.entry(*xid).or_insert(0);
                *v = (*v).max(*version);
                if n.accurate {
                    self.live_xattr.insert(*xid);
                }
            }
            Body::Xref { ino, xid, xseqno } => {
                let v = self.xrefs.entry((*ino, *xid)).or_insert(0);
                *v = (*v).max(*xseqno);
                if n.accurate && xseqno & 1 == 0 {
                    self.live_xref_xids.insert(*xid);
                }
            }
            _ => {}
        }
    }
}

/// The search for lost nodes: the valid nodes, the last inode read again, and the warnings
/// gathered on the way.
struct Lost<'c, 'f, 'a> {
    cx: &'c Ctx<'f, 'a>,
    valid: Valid<'a>,
    /// The last inode read again for its fragments (the model keeps none).
    reread: Option<(u32, Option<Inode>)>,
    warn: Vec<Finding>,
}

impl Lost<'_, '_, '_> {
    /// Whether obsolete node `n` is lost: the inode to name and the message if so.
    fn check(&mut self, n: &WNode) -> Option<(Option<u32>, String)> {
        let fs = self.cx.fs;
        let v = &self.valid;
        match &n.body {
            Body::Inode {
                ino,
                version,
                ofs,
                size,
                ..
            } => self.inode(*ino, *version, *ofs, *size),
            Body::Dirent {
                pino,
                version,
                ino,
                name,
                ..
            } => self.dirent(n, *pino, *version, *ino, *name),
            Body::Xattr { xid, version } => {
                let newest = v.xattr_v.get(xid).copied().unwrap_or(0);
                (newest <= *version && !v.live_xattr.contains(xid) && v.live_xref_xids.contains(xid))
                    .then(|| {
                        (
                            None,
                            format!(
                                "xattr {xid} (version {version}) is marked obsolete, but inodes still refer to it and nothing replaces it (a flipped ACCURATE bit?)"
                            ),
                        )
                    })
            }
            Body::Xref { ino, xid, xseqno } => {
                let newest = v.xrefs.get(&(*ino, *xid)).copied().unwrap_or(0);
                (newest <= *xseqno
                    && xseqno & 1 == 0
                    && live(fs, *ino)
                    && v.live_xattr.contains(xid))
                .then(|| {
                    (
                        Some(*ino),
                        format!(
                            "xattr reference of inode #{ino} to xattr {xid} is marked obsolete, but nothing replaces or deletes it: the attribute is lost (a flipped ACCURATE bit?)"
                        ),
                    )
                })
            }
            _ => None,
        }
    }

    /// An obsolete inode node is lost when no newer node covers its range, or when its inode
    /// is gone but still named.
    fn inode(
        &mut self,
        ino: u32,
        version: u32,
        ofs: u32,
        size: u32,
    ) -> Option<(Option<u32>, String)> {
        if !live(self.cx.fs, ino) {
            // No inode left, but an entry still names it: its only node is gone.
            return (self.valid.named.contains(&ino) && !self.valid.accurate_ino.contains(&ino))
                .then(|| {
                    (
                        Some(ino),
                        format!(
                            "inode node (version {version}) is marked obsolete, but nothing replaces it and directory entries still name inode #{ino}: the inode is lost (a flipped ACCURATE bit?)"
                        ),
                    )
                });
        }
        let covered = self.covered(ino, version, ofs, size);
        (!covered).then(|| {
            (
                Some(ino),
                format!(
                    "inode node (version {version}, {size} bytes at file offset {ofs}) is marked obsolete, but no newer node replaces it: its data is lost (a flipped ACCURATE bit?)"
                ),
            )
        })
    }

    /// Whether newer nodes of live inode `ino` cover the range of an obsolete data node.
    fn covered(&mut self, ino: u32, version: u32, ofs: u32, size: u32) -> bool {
        let newer: Vec<(u32, u32)> = self
            .valid
            .inodes
            .get(&ino)
            .map(|v| {
                v.iter()
                    .filter(|(ver, _)| *ver > version)
                    .copied()
                    .collect()
            })
            .unwrap_or_default();
        if newer.is_empty() {
            false
        } else if size == 0 {
            true
        } else {
            let trunc = newer.iter().map(|(_, s)| *s).min().unwrap_or(0);
            let end = (u64::from(ofs) + u64::from(size)).min(u64::from(trunc));
            match self.cx.inodes.get(&ino) {
                Some(Ok(_)) => {
                    // Read again: the model keeps no inode whole (a
                    // file's lost nodes come in a row, one read each).
                    if self.reread.as_ref().map(|(i, _)| *i) != Some(ino) {
                        self.reread = Some((ino, self.cx.fs.read_inode(ino).ok()));
                    }
                    match self.reread.as_ref().and_then(|(_, r)| r.as_ref()) {
                        Some(inode) => covered_by_newer(inode, u64::from(ofs), end, version),
                        None => true,
                    }
                }
                _ => true,
            }
        }
    }

    /// An obsolete entry is lost when nothing replaces or deletes it and its inode has no
    /// other name; with another name, a warning.
    fn dirent(
        &mut self,
        n: &WNode,
        pino: u32,
        version: u32,
        ino: u32,
        name: Name,
    ) -> Option<(Option<u32>, String)> {
        let cx = self.cx;
        let (fs, img) = (cx.fs, cx.img);
        let newest = self
            .valid
            .names
            .get(&(pino, name.get(img)))
            .copied()
            .unwrap_or(0);
        if newest > version || ino == 0 || !live(fs, pino) {
            None
        } else if !live(fs, ino) && self.valid.accurate_ino.contains(&ino) {
            Some((
                Some(pino),
                format!(
                    "entry \"{}\" for inode #{ino} is marked obsolete, but nothing replaces or deletes it and the inode has no other name: it is lost (a flipped ACCURATE bit?)",
                    crate::text::escape_if_needed(name.get(img))
                ),
            ))
        } else if live(fs, ino) {
            // The inode keeps another name. Normal on NOR flash after garbage
            // collection dropped the deletion entry; suspicious in a fresh image.
            self.warn.push(
                Finding::new(
                    Code::LostNode,
                    format!(
                        "entry \"{}\" for inode #{ino} is marked obsolete and nothing replaces or deletes it; the inode keeps another name (normal after garbage collection on NOR flash, a lost name in a fresh image)",
                        crate::text::escape_if_needed(name.get(img))
                    ),
                )
                .with_severity(Severity::Warning)
                .at(n.offset)
                .ino(Some(pino))
                .path(cx.path_of(pino)),
            );
            None
        } else {
            None
        }
    }
}

/// Whether `[s, e)` of an inode shows nodes newer than `version` throughout.
fn covered_by_newer(inode: &Inode, s: u64, e: u64, version: u32) -> bool {
    if s >= e {
        return true;
    }
    let mut pos = s;
    let first = inode.frags.partition_point(|f| f.end <= s);
    for f in &inode.frags[first..] {
        if f.start > pos {
            return false;
        }
        let v = inode.nodes.get(f.node).map_or(0, |d| d.version);
        if v <= version {
            return false;
        }
        pos = f.end;
        if pos >= e {
            return true;
        }
    }
    // Beyond the last fragment: a hole (zeros) — covered only if the file ends before it.
    pos >= e || inode.size <= pos
}
