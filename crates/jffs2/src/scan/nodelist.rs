//! Directory-entry lists as the kernel keeps them (`nodelist.c: jffs2_add_fd_to_list`,
//! `docs/spec/kernel-jffs2-spec.md` §5.2), shared by the mount scan (`scan_dents`) and by the
//! filesystem model at readinode time (§6.1).
//!
//! A list is ordered by `full_name_hash` of the (NUL-truncated) name; among equal hashes, by
//! insertion order. On an exact name match the entry with the lower version loses; on equal
//! versions the one added later wins ("the later one scanned wins ties"). The loser is
//! returned to the caller, which marks its node obsolete (the kernel's
//! `jffs2_mark_node_obsolete`).

use std::collections::BTreeMap;

use super::ScanDirent;

/// `GOLDEN_RATIO_64` of `include/linux/hash.h`.
const GOLDEN_RATIO_64: u64 = 0x61C8_8646_80B5_83EB;

/// The kernel's `full_name_hash(NULL, name, len)` as Linux 6.1 computes it on x86-64
/// (`fs/namei.c`, `CONFIG_DCACHE_WORD_ACCESS`, 64-bit `HASH_MIX` and `fold_hash`, salt 0).
///
/// The value decides the order of a directory's entries (`readdir` order, and the order in
/// which the build visits dirents, §5.5); it is architecture-dependent in the kernel, and
/// this is the x86-64 (little-endian, 64-bit word) variant the kernel fixtures were made on.
pub fn full_name_hash(name: &[u8]) -> u32 {
    let (mut x, mut y) = (0u64, 0u64);
    let mut words = name.chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let a = u64::from_le_bytes(b);
        // HASH_MIX(x, y, a)
        x ^= a;
        y ^= x;
        x = x.rotate_left(12);
        x = x.wrapping_add(y);
        y = y.rotate_left(45);
        y = y.wrapping_mul(9);
    }
    let rest = words.remainder();
    if !rest.is_empty() {
        // x ^= a & bytemask_from_count(len): the tail word, zero-padded.
        let mut b = [0u8; 8];
        b[..rest.len()].copy_from_slice(rest);
        x ^= u64::from_le_bytes(b);
    }
    // fold_hash(x, y)
    y ^= x.wrapping_mul(GOLDEN_RATIO_64);
    y = y.wrapping_mul(GOLDEN_RATIO_64);
    (y >> 32) as u32
}

/// What [`add_fd_to_list`] / [`DirentList::add`] did with a new dirent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FdAdd {
    /// No entry had this name: the new dirent was inserted.
    Inserted,
    /// An entry with the same name and a lower or equal version was replaced by the new one;
    /// the old entry is returned (the caller marks its node obsolete).
    Replaced(ScanDirent),
    /// An entry with the same name and a higher version exists: the new dirent was dropped
    /// and is returned (the caller marks its node obsolete).
    Dropped(ScanDirent),
}

/// `jffs2_add_fd_to_list` on a plain vector kept in the kernel's order (§5.2).
///
/// `list` must be in the order this function produces (sorted by [`full_name_hash`], ties by
/// insertion). Cost: a binary search plus a vector insert; for very large directories use
/// [`DirentList`], which keeps the same order in a tree.
pub fn add_fd_to_list(list: &mut Vec<ScanDirent>, new: ScanDirent) -> FdAdd {
    let h = full_name_hash(&new.name);
    // First index whose hash is greater than h: the kernel walks while nhash <= new.
    let upper = list.partition_point(|d| full_name_hash(&d.name) <= h);
    let lower = list[..upper].partition_point(|d| full_name_hash(&d.name) < h);
    if let Some(i) = (lower..upper).find(|&i| list[i].name == new.name) {
        if new.version < list[i].version {
            return FdAdd::Dropped(new);
        }
        let old = std::mem::replace(&mut list[i], new);
        return FdAdd::Replaced(old);
    }
    list.insert(upper, new);
    FdAdd::Inserted
}

/// Up to this many entries a list is a sorted vector; beyond, a tree. A tree's first node
/// alone costs several hundred bytes, and most directories hold a few entries.
const SMALL: usize = 16;

/// A directory's dirent list with the kernel's order and de-duplication (§5.2): a sorted
/// vector while small, a tree once large, so that a directory of millions of entries costs
/// `O(log n)` per insert and a million directories of one entry cost little memory each.
#[derive(Debug, Clone, Default)]
pub struct DirentList {
    /// Entries keyed by (nhash, insertion sequence); a replacement keeps the old key.
    map: Entries,
    seq: u64,
}

/// The two shapes of a [`DirentList`], with the same keys and order.
#[derive(Debug, Clone)]
enum Entries {
    Small(Vec<((u32, u64), ScanDirent)>),
    Large(BTreeMap<(u32, u64), ScanDirent>),
}

impl Default for Entries {
    fn default() -> Self {
        Entries::Small(Vec::new())
    }
}

impl Entries {
    fn len(&self) -> usize {
        match self {
            Entries::Small(v) => v.len(),
            Entries::Large(m) => m.len(),
        }
    }

    /// The key of the entry named `name` (whose hash is `h`), if any.
    fn find(&self, h: u32, name: &[u8]) -> Option<(u32, u64)> {
        match self {
            Entries::Small(v) => {
                let lo = v.partition_point(|(k, _)| k.0 < h);
                v.get(lo..)?
                    .iter()
                    .take_while(|(k, _)| k.0 == h)
                    .find(|(_, d)| d.name == name)
                    .map(|(k, _)| *k)
            }
            Entries::Large(m) => m
                .range((h, 0)..=(h, u64::MAX))
                .find(|(_, d)| d.name == name)
                .map(|(k, _)| *k),
        }
    }

    fn get_mut(&mut self, key: (u32, u64)) -> Option<&mut ScanDirent> {
        match self {
            Entries::Small(v) => v
                .binary_search_by(|(k, _)| k.cmp(&key))
                .ok()
                .and_then(|i| v.get_mut(i))
                .map(|(_, d)| d),
            Entries::Large(m) => m.get_mut(&key),
        }
    }

    fn remove(&mut self, key: (u32, u64)) -> Option<ScanDirent> {
        match self {
            Entries::Small(v) => v
                .binary_search_by(|(k, _)| k.cmp(&key))
                .ok()
                .map(|i| v.remove(i).1),
            Entries::Large(m) => m.remove(&key),
        }
    }

    /// Inserts a key greater than every key of its hash (the sequence only grows).
    fn insert(&mut self, key: (u32, u64), d: ScanDirent) {
        match self {
            Entries::Small(v) if v.len() < SMALL => {
                // Most directories hold one entry: room for one, not the usual four.
                if v.is_empty() {
                    v.reserve_exact(1);
                }
                let at = v.partition_point(|(k, _)| *k < key);
                v.insert(at, (key, d));
            }
            Entries::Small(v) => {
                let mut m: BTreeMap<(u32, u64), ScanDirent> =
                    std::mem::take(v).into_iter().collect();
                m.insert(key, d);
                *self = Entries::Large(m);
            }
            Entries::Large(m) => {
                m.insert(key, d);
            }
        }
    }

    fn iter(&self) -> Box<dyn Iterator<Item = &ScanDirent> + '_> {
        match self {
            Entries::Small(v) => Box::new(v.iter().map(|(_, d)| d)),
            Entries::Large(m) => Box::new(m.values()),
        }
    }
}

impl DirentList {
    /// An empty list.
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.map.len() == 0
    }

    /// `jffs2_add_fd_to_list`: inserts `new`, or settles a name clash by version.
    pub fn add(&mut self, new: ScanDirent) -> FdAdd {
        let h = full_name_hash(&new.name);
        if let Some(k) = self.map.find(h, &new.name) {
            if let Some(slot) = self.map.get_mut(k) {
                if new.version < slot.version {
                    return FdAdd::Dropped(new);
                }
                let old = std::mem::replace(slot, new);
                return FdAdd::Replaced(old);
            }
        }
        self.map.insert((h, self.seq), new);
        self.seq += 1;
        FdAdd::Inserted
    }

    /// The entries in list order.
    pub fn iter(&self) -> impl Iterator<Item = &ScanDirent> {
        self.map.iter()
    }

    /// Keeps only the entries for which `keep` is true.
    pub fn retain(&mut self, mut keep: impl FnMut(&ScanDirent) -> bool) {
        match &mut self.map {
            Entries::Small(v) => v.retain(|(_, d)| keep(d)),
            Entries::Large(m) => m.retain(|_, d| keep(d)),
        }
    }

    /// The entry named `name`, if any.
    pub fn get(&self, name: &[u8]) -> Option<&ScanDirent> {
        let k = self.map.find(full_name_hash(name), name)?;
        match &self.map {
            Entries::Small(v) => v
                .binary_search_by(|(x, _)| x.cmp(&k))
                .ok()
                .and_then(|i| v.get(i))
                .map(|(_, d)| d),
            Entries::Large(m) => m.get(&k),
        }
    }

    /// Removes the entry named `name` when `pred` holds for it; returns it.
    pub fn remove_if(
        &mut self,
        name: &[u8],
        pred: impl FnOnce(&ScanDirent) -> bool,
    ) -> Option<ScanDirent> {
        let key = self.map.find(full_name_hash(name), name)?;
        if self.map.get_mut(key).is_some_and(|d| pred(d)) {
            self.map.remove(key)
        } else {
            None
        }
    }

    /// The entries in list order.
    pub fn into_vec(self) -> Vec<ScanDirent> {
        match self.map {
            // A new vector of the exact size: collecting in place would keep the keyed
            // entries' larger allocation for the whole life of the scan.
            Entries::Small(v) => {
                let mut out = Vec::with_capacity(v.len());
                out.extend(v.into_iter().map(|(_, d)| d));
                out
            }
            Entries::Large(m) => {
                let mut out = Vec::with_capacity(m.len());
                out.extend(m.into_values());
                out
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fd(name: &[u8], version: u32, node: usize) -> ScanDirent {
        ScanDirent {
            pino: 1,
            version,
            ino: 2,
            dtype: 8,
            name: name.into(),
            node,
        }
    }

    /// Values computed with the C formula of fs/namei.c (64-bit, salt 0).
    #[test]
    fn name_hash_vectors() {
        // Empty name: fold_hash(0, 0) = 0.
        assert_eq!(full_name_hash(b""), 0);
        // As in the kernel, a trailing NUL does not change the hash (names never hold one).
        assert_eq!(full_name_hash(b"a"), full_name_hash(b"a\0"));
        assert_ne!(full_name_hash(b"abcdefgh"), full_name_hash(b"abcdefgi"));
        // Reference: one word "a" -> x = 0x61, y = 0.
        let x: u64 = 0x61;
        let y = x
            .wrapping_mul(GOLDEN_RATIO_64)
            .wrapping_mul(GOLDEN_RATIO_64);
        assert_eq!(full_name_hash(b"a"), (y >> 32) as u32);
        // Computed by a C transcription of the kernel formula (one, two, three words).
        for (name, h) in [
            (&b"a"[..], 0x98d5_1a30),
            (b"bin", 0xd391_3105),
            (b"etc", 0x6ecf_5a2e),
            (b"hello.txt", 0xc884_f044),
            (b"abcdefgh", 0x53b6_e476),
            (b"abcdefghi", 0x32b2_cf89),
            (b"a_rather_long_file_name.conf", 0x66e2_0556),
        ] {
            assert_eq!(full_name_hash(name), h, "{}", String::from_utf8_lossy(name));
        }
    }

    /// Small lists (a vector) and large ones (a tree) agree with the plain vector, through
    /// the switch from one to the other.
    #[test]
    fn small_and_large_lists_agree() {
        for names in [3u32, SMALL as u32, SMALL as u32 + 1, 40] {
            let mut v = Vec::new();
            let mut t = DirentList::new();
            for i in 0..200usize {
                let name = format!("n{}", (i as u32 * 7) % names);
                let a = add_fd_to_list(&mut v, fd(name.as_bytes(), (i % 5) as u32, i));
                assert_eq!(a, t.add(fd(name.as_bytes(), (i % 5) as u32, i)));
                let want = v.iter().find(|d| d.name == name.as_bytes()).map(|d| d.node);
                assert_eq!(t.get(name.as_bytes()).map(|d| d.node), want);
            }
            assert_eq!(t.len(), v.len());
            let removed = t.remove_if(b"n1", |_| true).map(|d| d.node);
            let at = v.iter().position(|d| d.name == b"n1");
            assert_eq!(removed, at.map(|i| v.remove(i).node));
            assert_eq!(v, t.into_vec());
        }
    }

    #[test]
    fn dedupe_by_version_later_wins_ties() {
        let mut l = DirentList::new();
        assert_eq!(l.add(fd(b"x", 5, 0)), FdAdd::Inserted);
        assert_eq!(l.add(fd(b"x", 3, 1)), FdAdd::Dropped(fd(b"x", 3, 1)));
        assert_eq!(l.add(fd(b"x", 5, 2)), FdAdd::Replaced(fd(b"x", 5, 0)));
        assert_eq!(l.add(fd(b"x", 9, 3)), FdAdd::Replaced(fd(b"x", 5, 2)));
        assert_eq!(l.len(), 1);
        assert_eq!(l.iter().next().map(|d| d.node), Some(3));
    }

    #[test]
    fn vec_and_tree_agree() {
        let mut v = Vec::new();
        let mut t = DirentList::new();
        let mut seed = 12345u32;
        for i in 0..2000usize {
            seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let name = format!("n{}", (seed >> 8) % 300);
            let ver = (seed >> 20) % 7;
            let a = add_fd_to_list(&mut v, fd(name.as_bytes(), ver, i));
            let b = t.add(fd(name.as_bytes(), ver, i));
            assert_eq!(a, b);
        }
        assert_eq!(v, t.clone().into_vec());
        assert_eq!(v.iter().collect::<Vec<_>>(), t.iter().collect::<Vec<_>>());
        // Sorted by hash.
        let hs: Vec<u32> = v.iter().map(|d| full_name_hash(&d.name)).collect();
        assert!(hs.windows(2).all(|w| w[0] <= w[1]));
    }
}
