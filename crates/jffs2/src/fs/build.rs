//! `build.c: jffs2_build_filesystem` (`docs/spec/kernel-jffs2-spec.md` §5): link counting, removal of
//! unlinked inodes, directory hard links, then the xattr subsystem (§9.4).

use std::collections::BTreeMap;

use super::refs::{mark_obsolete, ref_offset};
use super::{kmsg, xattr, Fs, FsOptions, InoBuild, Problem, ScanRef};
use crate::format::dt;
use crate::scan::{Level, RefState, Scan};

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
pub fn build_with<'a>(image: &'a [u8], scan: &'a mut Scan, opts: FsOptions) -> Fs<'a> {
    build_into(image, ScanMut::Borrowed(scan), opts)
}

/// The scan during the build: the caller's ([`build_with`]) or the model's own
/// ([`super::build_owned`]); either way mutated by the build, then kept by the model.
pub(super) enum ScanMut<'a> {
    Borrowed(&'a mut Scan),
    Owned(Box<Scan>),
}

/// The build proper (see [`build_with`]).
pub(super) fn build_into<'a>(image: &'a [u8], mut held: ScanMut<'a>, opts: FsOptions) -> Fs<'a> {
    let scan: &mut Scan = match &mut held {
        ScanMut::Borrowed(s) => s,
        ScanMut::Owned(s) => s,
    };
    let mut problems = Vec::new();
    let mut log = Vec::new();
    let mut obsolete: Vec<usize> = Vec::new();

    let es = u64::from(scan.geometry.erase_size.max(1));
    let flash_size = (image.len() as u64 / es) * es;
    let order = hash_order(scan.inodes.keys().copied(), inocache_hashsize(flash_size));

    let mut inos: BTreeMap<u32, InoBuild> = scan
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

    // Pass 1 (§5.3).
    let mut dir_hardlinks = false;
    for ino in &order {
        let Some(ic) = scan.inodes.get(ino) else {
            continue;
        };
        for fd in &ic.scan_dents {
            if fd.ino == 0 {
                continue;
            }
            match inos.get_mut(&fd.ino) {
                None => {
                    obsolete.push(fd.node);
                    problems.push(Problem::DirentToMissingInode {
                        offset: ref_offset(scan, fd.node),
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

    // Pass 2 and 2a (§5.4).
    let mut dead: Vec<u32> = Vec::new();
    for ino in &order {
        if inos
            .get(ino)
            .is_some_and(|b| b.pino_nlink == 0 && !b.removed)
        {
            remove(
                scan,
                &mut inos,
                *ino,
                &mut dead,
                &mut obsolete,
                &mut problems,
            );
        }
    }
    while let Some(ino) = dead.pop() {
        if inos.get(&ino).is_some_and(|b| !b.removed) {
            remove(
                scan,
                &mut inos,
                ino,
                &mut dead,
                &mut obsolete,
                &mut problems,
            );
        }
    }

    // Directory hard links and parents (§5.5).
    if dir_hardlinks {
        for b in inos.values_mut() {
            if b.is_dir {
                b.pino_nlink = 0;
            }
        }
    }
    for ino in &order {
        if inos.get(ino).is_none_or(|b| b.removed) {
            continue;
        }
        let Some(ic) = scan.inodes.get(ino) else {
            continue;
        };
        for fd in &ic.scan_dents {
            if fd.dtype != dt::DIR || fd.ino == 0 {
                continue;
            }
            let Some(child) = inos.get_mut(&fd.ino) else {
                continue; // obsoleted in pass 1
            };
            if dir_hardlinks && child.pino_nlink != 0 {
                let offset = ref_offset(scan, fd.node);
                log.push(kmsg(
                    Level::Err,
                    "jffs2_build_filesystem",
                    Some(offset),
                    format!(
                        "child dir \"{}\" (ino #{}) of dir ino #{} is also hard linked from dir ino #{}",
                        crate::text::escape_if_needed(&fd.name),
                        fd.ino,
                        ino,
                        child.pino_nlink
                    ),
                ));
                problems.push(Problem::DirHardLink {
                    offset,
                    ino: fd.ino,
                    name: fd.name.to_vec(),
                    parent: *ino,
                    other_parent: child.pino_nlink,
                });
            }
            child.pino_nlink = *ino;
        }
    }

    for idx in obsolete {
        mark_obsolete(scan, idx);
    }
    // The kernel frees `scan_dents` in that last loop (§5.5): nothing reads them after the
    // build (readinode reads the dirent nodes), and a directory of a million entries would
    // hold them for the whole run.
    for ic in scan.inodes.values_mut() {
        ic.scan_dents = Vec::new();
    }

    // The xattr subsystem (§9.4).
    let (xattr, xproblems, xlog) = xattr::build(image, scan, &inos);
    problems.extend(xproblems);
    log.extend(xlog);

    let scan = match held {
        ScanMut::Borrowed(s) => ScanRef::Borrowed(s),
        ScanMut::Owned(s) => ScanRef::Owned(s),
    };
    Fs {
        image,
        scan,
        opts,
        inos,
        xattr,
        problems,
        log,
    }
}

/// `jffs2_build_remove_unlinked_inode` (§5.4).
fn remove(
    scan: &Scan,
    inos: &mut BTreeMap<u32, InoBuild>,
    ino: u32,
    dead: &mut Vec<u32>,
    obsolete: &mut Vec<usize>,
    problems: &mut Vec<Problem>,
) {
    if let Some(b) = inos.get_mut(&ino) {
        b.removed = true;
    }
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
    problems.push(Problem::OrphanInode {
        ino,
        offset: live.first().map(|&i| ref_offset(scan, i)),
        nodes: live.len(),
    });
    obsolete.extend(ic.nodes.iter().copied());
    for fd in &ic.scan_dents {
        if fd.ino == 0 {
            continue; // deletion dirent
        }
        if let Some(child) = inos.get_mut(&fd.ino) {
            child.pino_nlink = child.pino_nlink.saturating_sub(1);
            if child.pino_nlink == 0 {
                dead.push(fd.ino);
            }
        }
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
