//! Directory entry lists with the kernel's de-duplication (`nodelist.c: jffs2_add_fd_to_list`,
//! `docs/spec/kernel-jffs2-spec.md` §5.2).
//!
//! The kernel keeps a directory's entries sorted by name hash and compares names with
//! `strcmp` (so a name is what precedes its first NUL). On an exact name match the entry with
//! the lower version loses; on equal versions the entry added *later* wins. Deletion dirents
//! (`ino == 0`) take part like any other and hide older entries of the same name.
//!
//! This list is ordered by name instead of by `full_name_hash`; the order is only visible in
//! `readdir` order and in which parent wins a directory hard link (§5.5), see
//! [`super::build`].

/// One directory entry as readinode keeps it (`struct jffs2_full_dirent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dirent {
    /// Name (up to the first NUL, as the kernel compares and lists it).
    pub name: crate::name::Name,
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

/// A directory's entries as readinode collects them, de-duplicated when complete
/// ([`DirentList::settle`]). Each candidate is a small fixed-size record whose name stays in
/// the image (an offset and a length), so that a directory of a million entries costs
/// tens of bytes per entry while it is read, not a tree node and two name copies.
#[derive(Debug, Clone, Default)]
pub(crate) struct DirentList {
    fds: Vec<Fd>,
}

/// One candidate entry; `name_at..name_at + name_len` is its name (up to the first NUL) in
/// the image.
#[derive(Debug, Clone, Copy)]
struct Fd {
    name_at: u32,
    name_len: u8,
    dtype: u8,
    ino: u32,
    version: u32,
    offset: u32,
    node: usize,
}

/// The name as the kernel compares it: up to the first NUL.
pub(crate) fn c_name(name: &[u8]) -> &[u8] {
    match name.iter().position(|&b| b == 0) {
        Some(n) => &name[..n],
        None => name,
    }
}

impl DirentList {
    /// Adds a candidate whose name (already cut at its first NUL, at most 255 bytes) is
    /// `image[name_at..name_at + name_len]`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn add(
        &mut self,
        name_at: u32,
        name_len: u8,
        ino: u32,
        dtype: u8,
        version: u32,
        node: usize,
        offset: u32,
    ) {
        self.fds.push(Fd {
            name_at,
            name_len,
            dtype,
            ino,
            version,
            offset,
            node,
        });
    }

    /// The kernel's de-duplication (§5.2) of every candidate added, in name order, deletion
    /// dirents included; the node of every entry that lost is pushed onto `lost`. For each
    /// name the entry with the highest version wins, and on equal versions the one added
    /// later: what adding them one by one gives, each clash settled as it comes (the lower
    /// version loses; on a tie the older entry).
    pub(crate) fn settle(self, image: &[u8], lost: &mut Vec<usize>) -> Vec<Dirent> {
        let name = |f: &Fd| -> &[u8] {
            let at = f.name_at as usize;
            image.get(at..at + usize::from(f.name_len)).unwrap_or(&[])
        };
        // Within a name, in the order added (the index breaks ties: no stable sort needed).
        let mut order: Vec<u32> = (0..self.fds.len() as u32).collect();
        let fd = |i: u32| &self.fds[i as usize];
        order.sort_unstable_by(|&a, &b| name(fd(a)).cmp(name(fd(b))).then(a.cmp(&b)));
        let mut out = Vec::with_capacity(order.len());
        let mut k = 0;
        while k < order.len() {
            let first = name(fd(order[k]));
            let mut end = k + 1;
            while end < order.len() && name(fd(order[end])) == first {
                end += 1;
            }
            let group = &order[k..end];
            // The last of the highest version.
            let mut win = group[0];
            for &i in &group[1..] {
                if fd(i).version >= fd(win).version {
                    win = i;
                }
            }
            for &i in group {
                if i != win {
                    lost.push(fd(i).node);
                }
            }
            let w = fd(win);
            out.push(Dirent {
                name: first.into(),
                ino: w.ino,
                dtype: w.dtype,
                version: w.version,
                node: w.node,
                offset: w.offset,
            });
            k = end;
        }
        // Kept as long as the inode: without room for the entries that lost.
        out.shrink_to_fit();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Entries added one by one, each name appended to `image`.
    #[derive(Default)]
    struct Case {
        image: Vec<u8>,
        list: DirentList,
    }

    impl Case {
        fn add(&mut self, name: &[u8], ino: u32, version: u32, node: usize) {
            let at = self.image.len() as u32;
            let name = c_name(name);
            self.image.extend_from_slice(name);
            self.list
                .add(at, name.len() as u8, ino, 8, version, node, node as u32);
        }

        fn settle(self) -> (Vec<Dirent>, Vec<usize>) {
            let mut lost = Vec::new();
            let v = self.list.settle(&self.image, &mut lost);
            lost.sort_unstable();
            (v, lost)
        }
    }

    #[test]
    fn higher_version_wins_and_ties_go_to_the_later() {
        let mut c = Case::default();
        c.add(b"a", 5, 3, 0);
        c.add(b"a", 6, 2, 1); // older: loses
        c.add(b"a", 7, 3, 2); // equal version: the later wins
        c.add(b"a", 0, 9, 3); // a deletion dirent hides the others
        let (v, lost) = c.settle();
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].ino, v[0].node, &v[0].name[..]), (0, 3, &b"a"[..]));
        assert_eq!(lost, [0, 1, 2]);

        let mut c = Case::default();
        c.add(b"b", 5, 3, 0);
        c.add(b"a", 6, 7, 1);
        c.add(b"b", 7, 3, 2);
        c.add(b"b", 8, 1, 3);
        let (v, lost) = c.settle();
        let got: Vec<(&[u8], u32)> = v.iter().map(|d| (&d.name[..], d.ino)).collect();
        assert_eq!(
            got,
            [(&b"a"[..], 6), (&b"b"[..], 7)],
            "by name, later tie wins"
        );
        assert_eq!(lost, [0, 3]);
    }

    #[test]
    fn names_compare_up_to_nul() {
        let mut c = Case::default();
        c.add(b"ab\0x", 5, 1, 0);
        c.add(b"ab", 6, 2, 1);
        let (v, lost) = c.settle();
        assert_eq!((v.len(), v[0].ino, lost), (1, 6, vec![0]));
    }
}
