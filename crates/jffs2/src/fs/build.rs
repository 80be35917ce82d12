//! `build.c: jffs2_build_filesystem` (`docs/spec/kernel-jffs2-spec.md` §5): link counting, removal of
//! unlinked inodes, directory hard links, then the xattr subsystem (§9.4).

use std::collections::BTreeMap;

use super::refs::{mark_obsolete, ref_offset};
use super::{kmsg, xattr, Fs, FsOptions, InoBuild, Problem, ScanRef};
use crate::format::dt;
use crate::scan::{Geometry, KernelMsg, Level, RefState, Scan};

/// `INOCACHE_HASHSIZE_MIN` / `_MAX` (§1.10).
const HASH_MIN: u32 = 128;
const HASH_MAX: u32 = 1024;

/// `fs.c: calculate_inocache_hashsize` (§1.10): twice the flash size in MiB, rounded down to a
/// multiple of 64, clamped to 128..1024.
pub(crate) fn inocache_hashsize(flash_size: u64) -> u32 {
    let mb = flash_size / 1024 / 1024;
    let h = (mb.saturating_mul(2) & !0x3f).min(u64::from(u32::MAX)) as u32;
    h.clamp(HASH_MIN, HASH_MAX)
}

/// The kernel's `for_each_inode` order: hash buckets `ino % hashsize` ascending, each chain by
/// ino ascending (§5.5). It decides which parent wins a directory hard link.
pub(crate) fn hash_order(inos: impl Iterator<Item = u32>, hashsize: u32) -> Vec<u32> {
    let mut v: Vec<u32> = inos.collect();
    v.sort_by_key(|&ino| (ino % hashsize, ino));
    v
}

impl<'a> Fs<'a> {
    /// Builds the model like `jffs2_build_filesystem` (§5) followed by
    /// `jffs2_build_xattr_subsystem` (§9.4):
    ///
    /// 1. pass 1 (§5.3): every non-deletion dirent gives its child one link; a dirent whose child
    ///    has no inode cache is obsoleted and disappears ([`Problem::DirentToMissingInode`]);
    ///    DT_DIR dirents flag the child as a directory, and a second link to such a child sets
    ///    `dir_hardlinks`;
    /// 2. pass 2 (§5.4): every inode with no links is removed: its nodes are obsoleted and its
    ///    children lose a link, recursively ([`Problem::OrphanInode`]). The root starts with one
    ///    link (set by the scan) and is never removed. Phantom inodes the scan created for
    ///    `ino = 0` nodes and `pino = 0` dirents (§3.3) have no links and go the same way,
    ///    taking back the link they gave;
    /// 3. §5.5: with `dir_hardlinks`, every directory's count is cleared, then each DT_DIR dirent
    ///    sets its child's `pino_nlink` to the parent; a second parent is logged
    ///    ([`Problem::DirHardLink`]) and the last one visited wins. Without it the same loop
    ///    silently replaces the count by the parent. The scan's `scan_dents` are emptied then,
    ///    as the kernel frees them there.
    ///
    /// The visiting order is the kernel's hash order for the flash size (the image length rounded
    /// down to whole erase blocks); within a directory, the order of the scan's `scan_dents`.
    ///
    /// The scan is the caller's (`&mut Scan`: changed by the build, then borrowed by the model)
    /// or given to the model (`Scan`: [`Fs::scan`] returns it, the build's obsoletions applied;
    /// what [`crate::Image::mount`] does, the usual way here).
    pub fn from_scan(image: &'a [u8], scan: impl Into<BuildScan<'a>>, opts: FsOptions) -> Fs<'a> {
        build_into(image, scan.into(), opts)
    }

    /// A model of no inodes, for reading the nodes of `image` (in `geometry`) as
    /// [`Fs::node_data`] does before the scan is done (fsck walks the flash beside its scan):
    /// the same checks and results, without the memory of the data CRCs that passed.
    pub(crate) fn for_node_reads(image: &'a [u8], geometry: Geometry, opts: FsOptions) -> Fs<'a> {
        build_into(image, Scan::empty(geometry).into(), opts)
    }
}

/// The scan a model is built from (see [`Fs::from_scan`]): either way it is changed by the
/// build, then kept by the model.
#[derive(Debug)]
pub enum BuildScan<'a> {
    /// The caller's scan, borrowed by the model.
    Borrowed(&'a mut Scan),
    /// A scan the model owns.
    Owned(Box<Scan>),
}

impl<'a> From<&'a mut Scan> for BuildScan<'a> {
    fn from(scan: &'a mut Scan) -> Self {
        BuildScan::Borrowed(scan)
    }
}

impl From<Scan> for BuildScan<'_> {
    fn from(scan: Scan) -> Self {
        BuildScan::Owned(Box::new(scan))
    }
}

/// The build proper (see [`Fs::from_scan`]).
pub(super) fn build_into<'a>(image: &'a [u8], mut held: BuildScan<'a>, opts: FsOptions) -> Fs<'a> {
    let scan: &mut Scan = match &mut held {
        BuildScan::Borrowed(s) => s,
        BuildScan::Owned(s) => s,
    };
    let mut b = Builder::new(image, scan);
    // Pass 1 (§5.3).
    let dir_hardlinks = b.count_links();
    // Pass 2 and 2a (§5.4).
    b.remove_unlinked();
    // Directory hard links and parents (§5.5).
    b.set_parents(dir_hardlinks);
    let (inos, mut problems, mut log) = b.finish();

    // The xattr subsystem (§9.4).
    let (xattr, xproblems, xlog) = xattr::build(image, scan, &inos);
    problems.extend(xproblems);
    log.extend(xlog);

    let scan = match held {
        BuildScan::Borrowed(s) => ScanRef::Borrowed(s),
        BuildScan::Owned(s) => ScanRef::Owned(s),
    };
    let data_ok = super::refs::DataChecked::new(scan.refs.len());
    Fs {
        image,
        scan,
        opts,
        inos,
        xattr,
        problems,
        log,
        data_ok,
    }
}

/// The state of `jffs2_build_filesystem` (§5): the scan, the per-inode link counts, the
/// visiting order, and what the passes found.
struct Builder<'s> {
    scan: &'s mut Scan,
    /// Link counts and flags by ino.
    inos: BTreeMap<u32, InoBuild>,
    /// The kernel's hash order (§5.5).
    order: Vec<u32>,
    /// Refs to mark obsolete once the passes are done.
    obsolete: Vec<usize>,
    problems: Vec<Problem>,
    log: Vec<KernelMsg>,
}

impl<'s> Builder<'s> {
    /// Starts from the scan's counts, visiting in the hash order of the flash size (the
    /// image length rounded down to whole erase blocks).
    fn new(image: &[u8], scan: &'s mut Scan) -> Builder<'s> {
        let es = u64::from(scan.geometry.erase_size.max(1));
        let flash_size = (image.len() as u64 / es) * es;
        let order = hash_order(scan.inodes.keys().copied(), inocache_hashsize(flash_size));

        let inos: BTreeMap<u32, InoBuild> = scan
            .inodes
            .iter()
            .map(|(&ino, ic)| {
                (
                    ino,
                    InoBuild {
                        pino_nlink: ic.pino_nlink,
                        ..InoBuild::default()
                    },
                )
            })
            .collect();
        Builder {
            scan,
            inos,
            order,
            obsolete: Vec::new(),
            problems: Vec::new(),
            log: Vec::new(),
        }
    }

    /// Pass 1 (§5.3): every non-deletion dirent links its child, or is obsoleted if the
    /// child has no inode. Returns whether a directory has a second link (`dir_hardlinks`).
    fn count_links(&mut self) -> bool {
        let mut dir_hardlinks = false;
        for ino in &self.order {
            let Some(ic) = self.scan.inodes.get(ino) else {
                continue;
            };
            for fd in &ic.scan_dents {
                if fd.ino == 0 {
                    continue;
                }
                match self.inos.get_mut(&fd.ino) {
                    None => {
                        self.obsolete.push(fd.node);
                        self.problems.push(Problem::DirentToMissingInode {
                            offset: ref_offset(self.scan, fd.node),
                            parent: *ino,
                            name: fd.name.to_vec(),
                            ino: fd.ino,
                        });
                    }
                    Some(child) => {
                        child.pino_nlink = child.pino_nlink.saturating_add(1);
                        if fd.dtype == dt::DIR {
                            child.is_dir = true;
                            if child.pino_nlink > 1 {
                                dir_hardlinks = true;
                            }
                        }
                    }
                }
            }
        }
        dir_hardlinks
    }

    /// Pass 2 and 2a (§5.4): removes every inode left without links, then, recursively,
    /// the children that lose their last link with it.
    fn remove_unlinked(&mut self) {
        let mut dead: Vec<u32> = Vec::new();
        for k in 0..self.order.len() {
            let ino = self.order[k];
            if self
                .inos
                .get(&ino)
                .is_some_and(|b| b.pino_nlink == 0 && !b.removed)
            {
                self.remove(ino, &mut dead);
            }
        }
        while let Some(ino) = dead.pop() {
            if self.inos.get(&ino).is_some_and(|b| !b.removed) {
                self.remove(ino, &mut dead);
            }
        }
    }

    /// `jffs2_build_remove_unlinked_inode` (§5.4).
    fn remove(&mut self, ino: u32, dead: &mut Vec<u32>) {
        if let Some(b) = self.inos.get_mut(&ino) {
            b.removed = true;
        }
        let scan: &Scan = self.scan;
        let Some(ic) = scan.inodes.get(&ino) else {
            return;
        };
        let live: Vec<usize> = ic
            .nodes
            .iter()
            .copied()
            .filter(|&i| {
                scan.refs
                    .get(i)
                    .is_some_and(|r| r.state != RefState::Obsolete)
            })
            .collect();
        self.problems.push(Problem::OrphanInode {
            ino,
            offset: live.first().map(|&i| ref_offset(scan, i)),
            nodes: live.len(),
        });
        self.obsolete.extend(ic.nodes.iter().copied());
        for fd in &ic.scan_dents {
            if fd.ino == 0 {
                continue; // deletion dirent
            }
            if let Some(child) = self.inos.get_mut(&fd.ino) {
                child.pino_nlink = child.pino_nlink.saturating_sub(1);
                if child.pino_nlink == 0 {
                    dead.push(fd.ino);
                }
            }
        }
    }

    /// §5.5: every directory's count becomes its parent's ino; with `dir_hardlinks` the
    /// counts are cleared first and a second parent is reported.
    fn set_parents(&mut self, dir_hardlinks: bool) {
        if dir_hardlinks {
            for b in self.inos.values_mut() {
                if b.is_dir {
                    b.pino_nlink = 0;
                }
            }
        }
        for ino in &self.order {
            if self.inos.get(ino).is_none_or(|b| b.removed) {
                continue;
            }
            let Some(ic) = self.scan.inodes.get(ino) else {
                continue;
            };
            for fd in &ic.scan_dents {
                if fd.dtype != dt::DIR || fd.ino == 0 {
                    continue;
                }
                let Some(child) = self.inos.get_mut(&fd.ino) else {
                    continue; // obsoleted in pass 1
                };
                if dir_hardlinks && child.pino_nlink != 0 {
                    let other_parent = child.pino_nlink;
                    let offset = ref_offset(self.scan, fd.node);
                    self.log.push(kmsg(
                        Level::Err,
                        "jffs2_build_filesystem",
                        Some(offset),
                        format!(
                            "child dir \"{}\" (ino #{}) of dir ino #{} is also hard linked from dir ino #{}",
                            crate::text::escape_if_needed(&fd.name),
                            fd.ino,
                            ino,
                            other_parent
                        ),
                    ));
                    self.problems.push(Problem::DirHardLink {
                        offset,
                        ino: fd.ino,
                        name: fd.name.to_vec(),
                        parent: *ino,
                        other_parent,
                    });
                }
                child.pino_nlink = *ino;
            }
        }
    }

    /// Marks the collected refs obsolete and frees the scan's dirents; returns the counts
    /// and what the passes found.
    fn finish(self) -> (BTreeMap<u32, InoBuild>, Vec<Problem>, Vec<KernelMsg>) {
        for idx in self.obsolete {
            mark_obsolete(self.scan, idx);
        }
        // The kernel frees `scan_dents` in that last loop (§5.5): nothing reads them after the
        // build (readinode reads the dirent nodes), and a directory of a million entries would
        // hold them for the whole run.
        for ic in self.scan.inodes.values_mut() {
            ic.scan_dents = Vec::new();
        }
        (self.inos, self.problems, self.log)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashsize_follows_flash_size() {
        assert_eq!(inocache_hashsize(1 << 20), 128);
        assert_eq!(inocache_hashsize(128 << 20), 256);
        assert_eq!(inocache_hashsize(100 << 20), 192);
        assert_eq!(inocache_hashsize(4 << 30), 1024);
    }

    #[test]
    fn order_is_bucket_then_ino() {
        let o = hash_order([1u32, 129, 2, 128, 3].into_iter(), 128);
        assert_eq!(o, vec![128, 1, 129, 2, 3]);
    }
}
