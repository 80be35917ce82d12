//! Directory entry lists with the kernel's de-duplication (`nodelist.c: jffs2_add_fd_to_list`,
//! `kernel-jffs2-spec.md` §5.2).
//!
//! The kernel keeps a directory's entries sorted by name hash and compares names with
//! `strcmp` (so a name is what precedes its first NUL). On an exact name match the entry with
//! the lower version loses; on equal versions the entry added *later* wins. Deletion dirents
//! (`ino == 0`) take part like any other and hide older entries of the same name.
//!
//! This list is ordered by name instead of by `full_name_hash`; the order is only visible in
//! `readdir` order and in which parent wins a directory hard link (§5.5), see
//! [`super::build`].

use std::collections::BTreeMap;

/// One directory entry as readinode keeps it (`struct jffs2_full_dirent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirent {
    /// Name (up to the first NUL, as the kernel compares and lists it).
    pub name: Vec<u8>,
    /// Target inode; 0 for a deletion dirent.
    pub ino: u32,
    /// `DT_*` type byte.
    pub dtype: u8,
    /// Version (in the directory's version space).
    pub version: u32,
    /// Index of the node in [`crate::scan::Scan::refs`].
    pub node: usize,
    /// Byte offset of the node.
    pub offset: u32,
}

/// A de-duplicated directory list.
#[derive(Debug, Clone, Default)]
pub(crate) struct DirentList {
    map: BTreeMap<Vec<u8>, Dirent>,
}

/// The name as the kernel compares it: up to the first NUL.
pub(crate) fn c_name(name: &[u8]) -> &[u8] {
    match name.iter().position(|&b| b == 0) {
        Some(n) => &name[..n],
        None => name,
    }
}

impl DirentList {
    /// Adds an entry (§5.2). Returns the node index of the entry that lost, if any: the new
    /// one when its version is lower than the existing entry's, otherwise the old one.
    pub(crate) fn add(&mut self, d: Dirent) -> Option<usize> {
        let key = c_name(&d.name).to_vec();
        match self.map.get_mut(&key) {
            Some(old) => {
                if d.version < old.version {
                    Some(d.node)
                } else {
                    let lost = old.node;
                    *old = d;
                    Some(lost)
                }
            }
            None => {
                self.map.insert(key, d);
                None
            }
        }
    }

    /// All entries, deletion dirents included, in name order.
    pub(crate) fn into_vec(self) -> Vec<Dirent> {
        self.map.into_values().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(name: &[u8], ino: u32, version: u32, node: usize) -> Dirent {
        Dirent {
            name: name.to_vec(),
            ino,
            dtype: 8,
            version,
            node,
            offset: 0,
        }
    }

    #[test]
    fn higher_version_wins_and_ties_go_to_the_later() {
        let mut l = DirentList::default();
        assert_eq!(l.add(d(b"a", 5, 3, 0)), None);
        assert_eq!(l.add(d(b"a", 6, 2, 1)), Some(1), "older new entry loses");
        assert_eq!(
            l.add(d(b"a", 7, 3, 2)),
            Some(0),
            "equal version: later wins"
        );
        assert_eq!(l.add(d(b"a", 0, 9, 3)), Some(2), "deletion dirent hides");
        let v = l.into_vec();
        assert_eq!(v.len(), 1);
        assert_eq!(v[0].ino, 0);
    }

    #[test]
    fn names_compare_up_to_nul() {
        let mut l = DirentList::default();
        l.add(d(b"ab\0x", 5, 1, 0));
        assert_eq!(l.add(d(b"ab", 6, 2, 1)), Some(0));
    }
}
