//! `jffs2-dump --find`: every JFFS2 filesystem in a file (a full-flash dump, a vendor's
//! update file, a carver's cut), delimited as `docs/spec/ecosystem.md` §9 describes.
//!
//! One linear pass over the whole file, in both byte orders at once: a word that starts a
//! node header (magic 0x1985, header CRC right, its length inside the file) is a node, and the
//! pass goes on after it (4-byte aligned from it); an erased word (0xFF) is skipped, foreign
//! data byte by byte (an image inside an update file may start at any offset). Nodes are grouped into filesystems, a new one started where the byte order
//! changes, after foreign data at least one erase block long, or where a clean mkfs.jffs2
//! image's layout starts again (an inode's first version seen twice). Memory is a set of
//! inode numbers per filesystem; the file is read once, front to back (give it a trimmed
//! mapping for a large one).

use std::collections::HashMap;

use crate::compress::COMPR_ZERO;
use crate::format::{
    pad4_64, DirentNode, Endian, InodeNode, NodeHeader, NODETYPE_CLEANMARKER, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_PADDING, ROOT_INO,
};
use crate::scan::trailing::node_header_at;
use crate::scan::{self, Detection};

/// Foreign bytes (neither nodes nor 0xFF) that end a filesystem (see
/// [`scan::trailing::FOREIGN_GAP`]).
pub const GAP: u64 = scan::trailing::FOREIGN_GAP;

/// Detection runs on this much of a large filesystem first, as [`crate::Image`] does.
const DETECT_PREFIX: usize = 16 << 20;

/// One JFFS2 filesystem found in a file.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Offset of its first node in the file.
    pub start: u64,
    /// Offset just past it: the end of its last erase block (0xFF padding included), or the
    /// first byte of foreign data or of the next filesystem, whichever comes first.
    pub end: u64,
    /// Offset just past its last node.
    pub data_end: u64,
    /// Its byte order.
    pub endian: Endian,
    /// The erase size detected on `start..end` (what the tools detect with that window).
    pub erase_size: u32,
    /// How sure the detection is of it.
    pub confidence: f32,
    /// Nodes (header CRC right), obsolete ones included.
    pub nodes: u64,
    /// Inodes with at least one inode node: files, directories, links, devices (the root,
    /// which mkfs.jffs2 writes no inode node for, is not counted).
    pub files: u64,
    /// Why it was written by the kernel rather than by mkfs.jffs2 (empty: a clean mkfs
    /// image), in the words of `jffs2-dump --info`'s note.
    pub kernel_signs: Vec<&'static str>,
}

impl Found {
    /// Whether the kernel has written to it (see [`Found::kernel_signs`]).
    pub fn kernel_written(&self) -> bool {
        !self.kernel_signs.is_empty()
    }
}

/// A filesystem being gathered.
struct Group {
    endian: Endian,
    start: u64,
    /// End of its last node.
    last_end: u64,
    /// Where its last node starts, where the one before it ends, and whether the last one
    /// is a cleanmarker (which goes with the next filesystem when that one restarts here).
    last_at: u64,
    prev_end: u64,
    last_cleanmarker: bool,
    /// Foreign bytes since `last_end`.
    foreign: u64,
    nodes: u64,
    /// Inode numbers, and whether a version-1 inode node of each was seen.
    inos: HashMap<u32, bool>,
    /// Whether mkfs.jffs2's first dirent (in the root, version 0) was seen.
    first_dirent: bool,
    /// The version mkfs.jffs2 would give the next dirent (one counter from 0, in write
    /// order).
    next_dirent: u32,
    signs: KernelSigns,
}

/// What mkfs.jffs2 never writes, so that the kernel has written to an image that has it
/// (`jffs2-dump --info`'s note, `--find`'s last column).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KernelSigns {
    /// Obsolete nodes (the ACCURATE bit cleared).
    pub obsolete: bool,
    /// Data nodes compressed as ZERO.
    pub zero_data: bool,
    /// An inode node of the root.
    pub root_inode: bool,
    /// Padding nodes.
    pub padding: bool,
    /// A dirent whose version is not the previous dirent's plus one (mkfs.jffs2 numbers them
    /// with one counter from 0 in write order; the kernel per directory, and garbage
    /// collection moves them). Only `--find` follows the order.
    pub dirent_order: bool,
}

impl KernelSigns {
    /// The signs present, in words.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.dirent_order, "dirents out of mkfs.jffs2's order"),
            (self.obsolete, "obsolete nodes"),
            (self.zero_data, "ZERO data nodes"),
            (self.root_inode, "a root inode node"),
            (self.padding, "padding nodes"),
        ]
        .iter()
        .filter(|(b, _)| *b)
        .map(|(_, s)| *s)
        .collect()
    }
}

/// What a node tells the grouping.
enum Mark {
    /// An inode node of version 1 (mkfs.jffs2 writes one first for every inode).
    FirstVersion(u32),
    /// A dirent in the root of version 0: the first dirent mkfs.jffs2 writes.
    FirstDirent,
    /// Another dirent, of this version.
    Dirent(u32),
    /// A cleanmarker.
    Cleanmarker,
    Other,
}

fn mark(e: Endian, h: &NodeHeader, node: &[u8]) -> Mark {
    match h.accurate_type() {
        NODETYPE_INODE => match InodeNode::decode(node, e, 0) {
            Ok(n) if n.version == 1 => Mark::FirstVersion(n.ino),
            _ => Mark::Other,
        },
        NODETYPE_DIRENT => match DirentNode::decode(node, e, 0) {
            Ok(d) if d.pino == ROOT_INO && d.version == 0 => Mark::FirstDirent,
            Ok(d) => Mark::Dirent(d.version),
            _ => Mark::Other,
        },
        NODETYPE_CLEANMARKER => Mark::Cleanmarker,
        _ => Mark::Other,
    }
}

/// Why a node does not belong to the filesystem being gathered.
#[derive(PartialEq)]
enum Split {
    No,
    /// Another byte order, or foreign data before it.
    Apart,
    /// A clean image's layout starting again right here.
    Restart,
}

impl Group {
    fn new(endian: Endian, start: u64) -> Self {
        Group {
            endian,
            start,
            last_end: start,
            last_at: start,
            prev_end: start,
            last_cleanmarker: false,
            foreign: 0,
            nodes: 0,
            inos: HashMap::new(),
            first_dirent: false,
            next_dirent: 0,
            signs: KernelSigns::default(),
        }
    }

    /// Whether a node in byte order `e` marked `m` continues this filesystem.
    fn split(&self, e: Endian, m: &Mark) -> Split {
        if e != self.endian || self.foreign >= GAP {
            return Split::Apart;
        }
        // A clean image's layout starting again: only while nothing says the kernel wrote
        // it, as garbage collection copies nodes with their versions.
        let again = match m {
            Mark::FirstDirent => self.first_dirent,
            Mark::FirstVersion(ino) => self.inos.get(ino).copied().unwrap_or(false),
            _ => false,
        };
        if again && self.signs == KernelSigns::default() {
            Split::Restart
        } else {
            Split::No
        }
    }

    fn add(&mut self, e: Endian, h: &NodeHeader, node: &[u8], at: u64, m: &Mark) {
        self.nodes += 1;
        self.prev_end = self.last_end;
        self.last_at = at;
        self.last_end = at + pad4_64(h.totlen);
        self.foreign = 0;
        self.last_cleanmarker = matches!(m, Mark::Cleanmarker);
        self.signs.obsolete |= !h.is_accurate();
        self.signs.padding |= h.accurate_type() == NODETYPE_PADDING;
        self.first_dirent |= matches!(m, Mark::FirstDirent);
        let dirent = match m {
            Mark::FirstDirent => Some(0),
            Mark::Dirent(v) => Some(*v),
            _ => None,
        };
        if let Some(v) = dirent {
            self.signs.dirent_order |= v != self.next_dirent;
            self.next_dirent = v.wrapping_add(1);
        }
        if h.accurate_type() != NODETYPE_INODE {
            return;
        }
        let Ok(n) = InodeNode::decode(node, e, at) else {
            return;
        };
        self.signs.root_inode |= n.ino == ROOT_INO;
        self.signs.zero_data |= n.compr == COMPR_ZERO && n.dsize > 0;
        let first = self.inos.entry(n.ino).or_insert(false);
        *first |= n.version == 1;
    }

    /// Gives its last node, a cleanmarker, to the filesystem that restarts after it.
    fn hand_over_cleanmarker(&mut self) -> Option<u64> {
        if !self.last_cleanmarker || self.nodes < 2 {
            return None;
        }
        self.nodes -= 1;
        self.last_end = self.prev_end;
        Some(self.last_at)
    }
}

/// The pass of [`find`]: groups with the offset their windows may reach.
struct Pass<'a> {
    file: &'a [u8],
    done: Vec<(u64, Group)>,
    cur: Option<Group>,
}

impl Pass<'_> {
    /// The node `h` at `at`: added to the current filesystem or the start of another one.
    fn node(&mut self, e: Endian, h: &NodeHeader, at: u64) -> u64 {
        let node = &self.file[at as usize..][..h.totlen as usize];
        let m = mark(e, h, node);
        let split = self.cur.as_ref().map_or(Split::No, |g| g.split(e, &m));
        if split != Split::No {
            if let Some(mut g) = self.cur.take() {
                let moved = (split == Split::Restart)
                    .then(|| g.hand_over_cleanmarker())
                    .flatten();
                let limit = moved.unwrap_or(at);
                self.done.push(close(self.file, g, limit));
                if let Some(cm) = moved {
                    self.restart_with_cleanmarker(e, cm);
                }
            }
        }
        let g = self.cur.get_or_insert_with(|| Group::new(e, at));
        g.add(e, h, node, at, &m);
        // A last node whose length is not a multiple of 4 ends the file.
        g.last_end = g.last_end.min(self.file.len() as u64);
        g.last_end
    }

    /// A new filesystem that starts with the cleanmarker at `at`.
    fn restart_with_cleanmarker(&mut self, e: Endian, at: u64) {
        let mut g = Group::new(e, at);
        if let Some((_, h)) = node_header_at(&self.file[at as usize..]) {
            g.add(e, &h, &[], at, &Mark::Cleanmarker);
        }
        self.cur = Some(g);
    }
}

/// Every JFFS2 filesystem in `file`, in file order (see the module documentation).
pub fn find(file: &[u8]) -> Vec<Found> {
    let mut pass = Pass {
        file,
        done: Vec::new(),
        cur: None,
    };
    let mut p = 0usize;
    while p + 4 <= file.len() {
        if let Some((e, h)) = node_header_at(&file[p..]) {
            let next = pass.node(e, &h, p as u64);
            p = usize::try_from(next).unwrap_or(file.len());
            continue;
        }
        // Erased words are skipped whole; foreign data byte by byte, as an image cut from
        // an update file need not start on a 4-byte boundary of it.
        if file[p..p + 4] == [0xFF; 4] {
            p += 4;
        } else {
            if let Some(g) = pass.cur.as_mut() {
                g.foreign += 1;
            }
            p += 1;
        }
    }
    if let Some(g) = pass.cur.take() {
        pass.done.push(close(file, g, file.len() as u64));
    }
    pass.done
        .into_iter()
        .map(|(reach, g)| found(file, g, reach))
        .collect()
}

/// A finished group and the most its window may reach: `limit` (the next filesystem's
/// start, or the end of the file), cut at the first foreign byte after its last node.
fn close(file: &[u8], g: Group, limit: u64) -> (u64, Group) {
    let from = g.last_end.min(limit) as usize;
    let erased = file
        .get(from..limit as usize)
        .map_or(0, |t| t.iter().take_while(|&&b| b == 0xFF).count());
    (from as u64 + erased as u64, g)
}

/// What a group is: its erase size detected on its window, which ends at the end of its
/// last erase block (no further than `reach`).
fn found(file: &[u8], g: Group, reach: u64) -> Found {
    let span = |es: u32| {
        let len = (g.last_end - g.start).next_multiple_of(u64::from(es.max(1)));
        (g.start + len).min(reach)
    };
    // The erase size that decides the end: detected with the 0xFF after the last node (an
    // image padded to whole blocks tells its erase size by its length) when its last block
    // ends within that 0xFF, else on the nodes alone. The one reported is detected on the
    // window itself, as the tools detect it with that window.
    let padded = detect(&file[g.start as usize..reach as usize])
        .geometry
        .erase_size;
    let end =
        if (g.start + (g.last_end - g.start).next_multiple_of(u64::from(padded.max(1)))) <= reach {
            span(padded)
        } else {
            span(
                detect(&file[g.start as usize..g.last_end as usize])
                    .geometry
                    .erase_size,
            )
        };
    let d = detect(&file[g.start as usize..end as usize]);
    Found {
        start: g.start,
        end,
        data_end: g.last_end,
        endian: g.endian,
        erase_size: d.geometry.erase_size,
        confidence: d.confidence,
        nodes: g.nodes,
        files: g.inos.keys().filter(|&&i| i != ROOT_INO).count() as u64,
        kernel_signs: g.signs.names(),
    }
}

/// The detection on `window`, on its first 16 MiB when that is conclusive (as
/// [`crate::ImageOptions::quick_detect`] does).
fn detect(window: &[u8]) -> Detection {
    if window.len() > 2 * DETECT_PREFIX {
        let d = scan::detect(&window[..DETECT_PREFIX]);
        if d.confidence >= 0.9 {
            return d;
        }
    }
    scan::detect(window)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small image of `n` files in byte order `e`, as mkfs.jffs2 writes it.
    fn image(e: Endian, n: usize) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..n {
            std::fs::write(dir.path().join(format!("f{i}")), vec![i as u8; 3000]).unwrap();
        }
        let so = crate::source::SourceOptions {
            faketime: true,
            ..Default::default()
        };
        let (tree, _) = crate::source::scan_host(dir.path(), &so).unwrap();
        let opts = crate::mkfs::MkfsConfig {
            endian: e,
            ..Default::default()
        };
        let mut out = Vec::new();
        crate::mkfs::build(&tree, &opts, &mut out, &mut crate::mkfs::NullSink).unwrap();
        out
    }

    fn noise(n: usize, seed: u32) -> Vec<u8> {
        let mut x = crate::testing::XorShift::new(seed | 1);
        // Never 0xFF, so that the noise is foreign from its first byte.
        (0..n).map(|_| (x.next_u32() % 255) as u8).collect()
    }

    #[test]
    fn finds_both_byte_orders_between_foreign_data() {
        let le = image(Endian::Little, 3);
        let be = image(Endian::Big, 5);
        // An odd offset: images in update files need not be 4-byte aligned.
        let mut blob = noise(100_001, 7);
        let s1 = blob.len() as u64;
        blob.extend_from_slice(&le);
        blob.extend(std::iter::repeat_n(0xFF, 65536));
        blob.extend(noise(20_000, 9));
        let s2 = blob.len() as u64;
        blob.extend_from_slice(&be);
        blob.extend(noise(5000, 11));
        let f = find(&blob);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!(
            (f[0].start, f[0].endian, f[0].files),
            (s1, Endian::Little, 3)
        );
        assert_eq!(f[0].end, s1 + (le.len() as u64).next_multiple_of(65536));
        assert_eq!((f[1].start, f[1].endian, f[1].files), (s2, Endian::Big, 5));
        assert_eq!(f[1].end, s2 + be.len() as u64);
        assert!(!f[0].kernel_written() && !f[1].kernel_written());
        assert_eq!(f[0].erase_size, 65536);
    }

    #[test]
    fn two_generations_back_to_back() {
        let a = image(Endian::Little, 2);
        let b = image(Endian::Little, 4);
        let mut blob = a.clone();
        blob.extend_from_slice(&b);
        let f = find(&blob);
        assert_eq!(f.len(), 2, "{f:?}");
        assert_eq!((f[0].start, f[0].end), (0, a.len() as u64));
        assert_eq!((f[1].start, f[1].files), (a.len() as u64, 4));
        assert!(find(&noise(50_000, 3)).is_empty());
    }

    /// Hostile input: a last node whose length is not a multiple of 4, nodes of both byte
    /// orders mixed, lengths at the end of the file.
    #[test]
    fn never_reads_past_the_file() {
        for e in [Endian::Little, Endian::Big] {
            let mut v = Vec::new();
            crate::format::encode_padding(e, 13, &mut v);
            v.truncate(13);
            let f = find(&v);
            assert_eq!((f.len(), f[0].end), (1, 13));
            let mut w = image(Endian::Little, 1);
            w.extend(image(Endian::Big, 1));
            w.extend_from_slice(&v);
            for n in 0..w.len().min(400) {
                let _ = find(&w[..w.len() - n]);
                let _ = find(&w[n..]);
            }
        }
    }
}
