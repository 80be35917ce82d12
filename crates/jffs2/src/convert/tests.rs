//! Unit tests of the conversion on hand-made dirty images: what Linux shows is kept, nothing
//! dead is written, in every output geometry.

use super::*;
use crate::compress::COMPR_ZLIB;
use crate::format::{dt, XattrNode, XrefNode};
use crate::fs::{Tree, TreeOptions};
use crate::scan::Geometry;
use crate::testing::{Img, XorShift};
use crate::{Image, ImageOptions};

const LE: Endian = Endian::Little;
const BE: Endian = Endian::Big;
const ES: u32 = 16384;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;
const S_IFLNK: u32 = 0o120000;
const S_IFCHR: u32 = 0o020000;

/// An image built node by node (version numbers as a kernel would have left them): dirents
/// with `mctime = 1000 + version`, at least 6 blocks.
fn new_img(e: Endian) -> Img {
    Img::new().endian(e).min_blocks(6).dirent_mctime(1000)
}

/// The inodes of these histories.
trait History {
    /// A directory's inode (mode 0755, times 500).
    fn dir_inode(&mut self, ino: u32, version: u32) -> &mut Self;
    /// A data node of a 0640 file owned by 7:8; compressed with zlib when `zlib`.
    fn file_data(
        &mut self,
        ino: u32,
        version: u32,
        isize: u32,
        ofs: u32,
        data: &[u8],
        zlib: bool,
    ) -> &mut Self;
}

impl History for Img {
    fn dir_inode(&mut self, ino: u32, version: u32) -> &mut Self {
        self.inode(
            InodeNode {
                ino,
                version,
                mode: S_IFDIR | 0o755,
                mtime: 500,
                ctime: 500,
                ..Default::default()
            },
            &[],
        )
    }

    fn file_data(
        &mut self,
        ino: u32,
        version: u32,
        isize: u32,
        ofs: u32,
        data: &[u8],
        zlib: bool,
    ) -> &mut Self {
        self.compressed(
            InodeNode {
                ino,
                version,
                mode: S_IFREG | 0o640,
                uid: 7,
                gid: 8,
                isize,
                mtime: 600 + version,
                ctime: 600 + version,
                offset: ofs,
                compr: if zlib { COMPR_ZLIB } else { COMPR_NONE },
                ..Default::default()
            },
            data,
        )
    }
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(seed) ^ (i >> 7) as u8)
        .collect()
}

/// A kernel-like dirty history: overwrites, a truncation, a rename, a deletion, a chmod,
/// a hard link, a symlink, a device, xattrs.
fn dirty(e: Endian) -> Vec<u8> {
    let mut i = new_img(e);
    i.dir_inode(2, 1).dirent(1, 1, 2, dt::DIR, b"etc");
    // /etc/conf: written in two pages, then its middle overwritten, then chmod-ed.
    i.file_data(3, 1, 8192, 0, &pattern(4096, 3), true)
        .file_data(3, 2, 8192, 4096, &pattern(4096, 5), true)
        .file_data(3, 3, 8192, 1000, &pattern(2000, 7), false);
    i.inode(
        InodeNode {
            ino: 3,
            version: 4,
            mode: S_IFREG | 0o600,
            uid: 7,
            gid: 8,
            isize: 8192,
            mtime: 700,
            ctime: 701,
            ..Default::default()
        },
        &[],
    );
    i.dirent(2, 2, 3, dt::REG, b"conf");
    // /etc/old renamed to /etc/new (new dirent, deletion dirent of the old name).
    i.file_data(4, 1, 10, 0, b"0123456789", false)
        .dirent(2, 3, 4, dt::REG, b"old")
        .dirent(2, 4, 4, dt::REG, b"new")
        .dirent(2, 5, 0, dt::UNKNOWN, b"old");
    // /gone: created, then deleted.
    i.file_data(5, 1, 4, 0, b"gone", false)
        .dirent(1, 2, 5, dt::REG, b"gone")
        .dirent(1, 3, 0, dt::UNKNOWN, b"gone");
    // /log: 3 pages, truncated to 5000 bytes.
    i.file_data(6, 1, 12288, 0, &pattern(12288, 11), true);
    i.inode(
        InodeNode {
            ino: 6,
            version: 2,
            mode: S_IFREG | 0o644,
            isize: 5000,
            mtime: 800,
            ctime: 800,
            ..Default::default()
        },
        &[],
    );
    i.dirent(1, 4, 6, dt::REG, b"log");
    // A hard link /etc/link to conf.
    i.dirent(2, 6, 3, dt::REG, b"link");
    // A symlink and a device.
    i.inode(
        InodeNode {
            ino: 7,
            version: 1,
            mode: S_IFLNK | 0o777,
            isize: 8,
            dsize: 8,
            ..Default::default()
        },
        b"etc/conf",
    )
    .dirent(1, 5, 7, dt::LNK, b"sl");
    let dev = e.u16_bytes((4 << 8) | 64).to_vec();
    i.inode(
        InodeNode {
            ino: 8,
            version: 1,
            mode: S_IFCHR | 0o620,
            isize: 2,
            dsize: 2,
            ..Default::default()
        },
        &dev,
    )
    .dirent(1, 6, 8, dt::CHR, b"tty");
    // A sparse file: data at 0 and at 20000, a hole between (ZERO node from a truncate-up).
    i.file_data(9, 1, 100, 0, &pattern(100, 13), false);
    i.inode(
        InodeNode {
            ino: 9,
            version: 2,
            mode: S_IFREG | 0o644,
            isize: 20000,
            offset: 100,
            dsize: 19900,
            compr: COMPR_ZERO,
            ..Default::default()
        },
        &[],
    );
    i.file_data(9, 3, 20100, 20000, &pattern(100, 17), false)
        .dirent(1, 7, 9, dt::REG, b"sparse");
    // xattrs on /etc/conf: a user one and an old version of it replaced.
    let mut b = Vec::new();
    XattrNode {
        xid: 1,
        version: 1,
        xprefix: xprefix::USER,
        ..Default::default()
    }
    .encode(e, b"color", b"blue", &mut b);
    i.nodes.push(b);
    let mut b = Vec::new();
    XrefNode {
        ino: 3,
        xid: 1,
        xseqno: 2,
        ..Default::default()
    }
    .encode(e, &mut b);
    i.nodes.push(b);
    i.build()
}

fn geometry(e: Endian, es: u32, cm: u32) -> Geometry {
    Geometry {
        endian: e,
        erase_size: es,
        cleanmarker_size: cm,
    }
}

/// `img` opened in the geometry `g`, whatever the detection makes of it. The cleanmarker size
/// is detected: checked to be `g`'s, so that the image is read as it was laid out.
fn opened<'a>(img: &'a [u8], g: &Geometry) -> Image<'a> {
    let opts = ImageOptions {
        erase_size: Some(g.erase_size),
        endian: Some(g.endian),
        insist: true,
        ..Default::default()
    };
    let image = Image::from_bytes_with(img, &opts).unwrap();
    assert_eq!(
        image.geometry(),
        *g,
        "the image is read in another geometry"
    );
    image
}

/// The tree Linux shows (paths, types, modes, owners, sizes, links, times, targets,
/// devices, contents, xattrs), without inode numbers.
fn shown(img: &[u8], g: &Geometry) -> (Tree, crate::scan::SpaceTotals) {
    let image = opened(img, g);
    let (fs, _) = image.salvage();
    // The build obsoletes refs only: the scan's space accounting is the mount scan's.
    (fs.tree(&TreeOptions::listing()), fs.scan().totals())
}

fn cfg(e: Endian, es: u32, cm: Option<u32>, summary: bool) -> ConvertConfig {
    ConvertConfig {
        layout: LayoutConfig {
            endian: e,
            erase_size: es,
            cleanmarker: cm,
            summary,
        },
        page_size: 4096,
        recompress: false,
        compressors: Compressors::default(),
        pad: EndPad::Block,
        threads: 2,
        progress: None,
    }
}

fn run(img: &[u8], g: &Geometry, c: &ConvertConfig) -> (Vec<u8>, ConvertReport) {
    let image = opened(img, g);
    let (fs, _) = image.salvage();
    let (mut out, report) = convert(&fs, c, Vec::new()).expect("converts");
    // Five blocks at least, as a partition would have.
    let es = c.layout.erase_size as usize;
    if out.len() < 5 * es {
        out.resize(5 * es, 0xFF);
    }
    (out, report)
}

fn assert_same_bytes(a: &[u8], b: &[u8]) {
    assert_eq!(a.len(), b.len(), "lengths");
    if let Some(at) = a.iter().zip(b).position(|(x, y)| x != y) {
        panic!("images differ first at 0x{at:08x}");
    }
}

fn same_tree(a: &Tree, b: &Tree) {
    assert_eq!(a.entries.len(), b.entries.len());
    for (x, y) in a.entries.iter().zip(&b.entries) {
        assert_eq!(x, y);
    }
}

/// Nothing dead: no obsolete or superseded node, no deletion dirent, and every node of the
/// output is one the fs reads as live.
fn assert_clean(img: &[u8], g: &Geometry) {
    let image = opened(img, g);
    let (fs, _) = image.salvage();
    // The build obsoletes refs only: the accounting and the log are the mount scan's.
    let s = fs.scan();
    assert_eq!(s.totals().dirty, 0, "dirty space");
    assert!(
        s.log.is_empty() || s.log.iter().all(|m| m.text.contains("xattr")),
        "{:?}",
        s.log
    );
    for ino in fs.live_inodes() {
        let i = fs.read_inode(ino).expect("readable");
        assert!(
            i.obsoleted.is_empty(),
            "ino {ino}: superseded nodes {:?}",
            i.obsoleted
        );
        assert!(i.problems.is_empty(), "ino {ino}: {:?}", i.problems);
    }
    assert!(fs.build_problems().is_empty(), "{:?}", fs.build_problems());
}

#[test]
fn dirty_image_keeps_what_linux_shows_and_drops_the_rest() {
    let img = dirty(LE);
    let g = geometry(LE, ES, 12);
    let (before, before_space) = shown(&img, &g);
    assert!(before.problems.is_empty(), "{:?}", before.problems);
    let names: Vec<String> = before
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    assert_eq!(
        names,
        [".", "etc", "etc/conf", "etc/link", "etc/new", "log", "sl", "sparse", "tty"]
    );
    let (out, report) = run(&img, &g, &cfg(LE, ES, Some(12), false));
    let (after, after_space) = shown(&out, &g);
    same_tree(&before, &after);
    assert_clean(&out, &g);
    assert!(report.dropped.is_empty(), "{:?}", report.dropped);
    assert!(report.copied > 0 && report.rewritten > 0, "{report:?}");
    assert!(
        after_space.used < before_space.used,
        "{after_space:?} vs {before_space:?}"
    );
    // The truncated and overwritten files were rewritten within their pages.
    assert_eq!(report.kept_undecodable, 0);
}

#[test]
fn every_geometry_byte_order_and_summary() {
    let img = dirty(LE);
    let g = geometry(LE, ES, 12);
    let (before, _) = shown(&img, &g);
    for (e, es, cm, summary) in [
        (BE, 65536, Some(12), false),
        (LE, 131072, None, true),
        (BE, 8192, None, true),
        (LE, 16384, Some(16), false),
    ] {
        let (out, _) = run(&img, &g, &cfg(e, es, cm, summary));
        let g2 = geometry(e, es, cm.unwrap_or(0));
        let (after, _) = shown(&out, &g2);
        same_tree(&before, &after);
        assert_clean(&out, &g2);
        if summary {
            let s = opened(&out, &g2).scan();
            let with_nodes = s.blocks.iter().filter(|b| b.used > 0).count();
            let summarised = s
                .blocks
                .iter()
                .filter(|b| b.summary == crate::scan::SummaryUse::Used)
                .count();
            assert_eq!(with_nodes, summarised, "{e:?} {es}");
        }
    }
}

#[test]
fn there_and_back_again_in_the_other_byte_order() {
    let img = dirty(BE);
    let g = geometry(BE, ES, 12);
    let (before, _) = shown(&img, &g);
    let (le, _) = run(&img, &g, &cfg(LE, ES, Some(12), false));
    let gl = geometry(LE, ES, 12);
    let (back, _) = run(&le, &gl, &cfg(BE, ES, Some(12), false));
    let (after, _) = shown(&back, &g);
    same_tree(&before, &after);
    // A clean image converted to its own geometry is byte for byte the same.
    let (again, _) = run(&back, &g, &cfg(BE, ES, Some(12), false));
    assert_same_bytes(&back, &again);
}

#[test]
fn recompression_keeps_every_byte() {
    let img = dirty(LE);
    let g = geometry(LE, ES, 12);
    let (before, _) = shown(&img, &g);
    let mut c = cfg(LE, ES, Some(12), false);
    c.recompress = true;
    c.compressors.set_mode(crate::compress::Mode::None);
    let (out, _) = run(&img, &g, &c);
    let (after, _) = shown(&out, &g);
    same_tree(&before, &after);
    let image = opened(&out, &g);
    let (fs, _) = image.salvage();
    for ino in fs.live_inodes() {
        let i = fs.read_inode(ino).expect("readable");
        for dn in &i.nodes {
            assert!(
                matches!(dn.compr, COMPR_NONE | COMPR_ZERO),
                "ino {ino}: {dn:?}"
            );
        }
    }
}

#[test]
fn output_does_not_depend_on_threads_and_pages_are_respected() {
    let img = dirty(LE);
    let g = geometry(LE, ES, 12);
    let mut c = cfg(LE, ES, Some(12), false);
    c.recompress = true;
    c.page_size = 1024;
    c.threads = 1;
    let (a, _) = run(&img, &g, &c);
    c.threads = 2;
    let (b, _) = run(&img, &g, &c);
    assert_same_bytes(&a, &b);
    let image = opened(&a, &g);
    let (fs, _) = image.salvage();
    for ino in fs.live_inodes() {
        let i = fs.read_inode(ino).expect("readable");
        for dn in i
            .nodes
            .iter()
            .filter(|d| d.compr != COMPR_ZERO && d.size > 0)
        {
            assert_eq!(u64::from(dn.ofs) / 1024, (dn.end() - 1) / 1024, "{dn:?}");
        }
    }
}

#[test]
fn unreadable_inodes_are_dropped_and_reported() {
    let mut i = new_img(LE);
    i.dir_inode(2, 1).dirent(1, 1, 2, dt::DIR, b"d");
    // A device with two data nodes: Linux cannot read it.
    for (version, ofs) in [(1, 0), (2, 2)] {
        i.inode(
            InodeNode {
                ino: 3,
                version,
                mode: S_IFCHR | 0o600,
                isize: 4,
                offset: ofs,
                dsize: 2,
                ..Default::default()
            },
            &[1, 2],
        );
    }
    i.dirent(2, 2, 3, dt::CHR, b"bad");
    let img = i.build();
    let g = geometry(LE, ES, 12);
    let (out, report) = run(&img, &g, &cfg(LE, ES, Some(12), false));
    assert_eq!(report.dropped.len(), 1, "{:?}", report.dropped);
    assert_eq!(report.dropped[0].ino, 3);
    assert_eq!(report.dropped[0].path.as_deref(), Some(&b"/d/bad"[..]));
    let (after, _) = shown(&out, &g);
    let names: Vec<&[u8]> = after.entries.iter().map(|e| &e.path[..]).collect();
    assert_eq!(names, [&b"."[..], b"d"]);
    assert_clean(&out, &g);
}

#[test]
fn a_too_small_erase_size_is_an_error() {
    let img = dirty(LE);
    let g = geometry(LE, ES, 12);
    let image = opened(&img, &g);
    let (fs, _) = image.salvage();
    let mut c = cfg(LE, ES, Some(12), false);
    c.layout.erase_size = 4096;
    assert!(matches!(
        convert(&fs, &c, Vec::new()),
        Err(ConvertError::Geometry(_))
    ));
}

/// An image for the streaming of the planning: two files large enough to be read apart
/// (1100 and 1030 nodes), hundreds of small files (a dozen chunks), a hard link, a directory
/// its entry calls a regular file (found to be a directory only once read: what only it
/// reaches is placed at the end), and a regular file its entry calls a directory.
fn streamed(e: Endian) -> Vec<u8> {
    let mut i = new_img(e);
    i.dir_inode(2, 1).dirent(1, 1, 2, dt::DIR, b"d");
    let big = |i: &mut Img, ino: u32, n: u32| {
        for k in 0..n {
            i.file_data(
                ino,
                k + 1,
                n * 64,
                k * 64,
                &pattern(64, (ino + k) as u8),
                false,
            );
        }
    };
    big(&mut i, 3, 1100);
    i.dirent(1, 2, 3, dt::REG, b"big");
    big(&mut i, 40, 1030);
    i.dirent(2, 2, 40, dt::REG, b"big2");
    for ino in 4..700u32 {
        if ino == 40 {
            continue;
        }
        if ino % 3 == 0 {
            i.file_data(ino, 1, 200, 0, &[ino as u8; 200], true);
        } else {
            i.file_data(ino, 1, 16, 0, &pattern(16, ino as u8), false);
        }
        i.dirent(2, ino, ino, dt::REG, format!("f{ino}").as_bytes());
    }
    i.dirent(1, 3, 5, dt::REG, b"link");
    // A directory named as a regular file, and what only it reaches.
    i.dir_inode(801, 1).dirent(2, 900, 801, dt::REG, b"sneaky");
    i.file_data(802, 1, 5, 0, b"inner", false)
        .dirent(801, 1, 802, dt::REG, b"inner");
    // A regular file named as a directory.
    i.file_data(803, 1, 4, 0, b"file", false)
        .dirent(1, 4, 803, dt::DIR, b"notadir");
    i.build()
}

#[test]
fn streamed_planning_keeps_the_tree_whatever_the_threads() {
    let img = streamed(LE);
    let g = geometry(LE, ES, 12);
    let (before, _) = shown(&img, &g);
    assert!(before
        .entries
        .iter()
        .any(|e| e.path.ends_with(b"sneaky/inner")));
    let mut outs = Vec::new();
    for threads in [1, 2, 3] {
        let mut c = cfg(LE, ES, Some(12), false);
        c.threads = threads;
        let (out, report) = run(&img, &g, &c);
        assert!(report.dropped.is_empty(), "{:?}", report.dropped);
        let (after, _) = shown(&out, &g);
        same_tree(&before, &after);
        assert_clean(&out, &g);
        outs.push(out);
    }
    assert_same_bytes(&outs[0], &outs[1]);
    assert_same_bytes(&outs[0], &outs[2]);
    // Recompressed (no deep read-ahead; the large chunk is past the first few).
    let mut c = cfg(LE, ES, Some(12), false);
    c.recompress = true;
    let mut again = Vec::new();
    for threads in [1, 2] {
        c.threads = threads;
        let (out, _) = run(&img, &g, &c);
        same_tree(&before, &shown(&out, &g).0);
        again.push(out);
    }
    assert_same_bytes(&again[0], &again[1]);
}

/// An image Linux wrote and cannot mount (a summary whose cleanmarker the block does not
/// have: the kernel BUGs, `docs/spec/kernel-jffs2-spec.md` §4.3): refused by
/// [`Source::mount`], converted from [`Source::salvage`] with the reason in the report, and
/// the output mounts with the salvage's tree.
#[test]
fn an_unmountable_image_converts_from_its_salvage() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/kernel/unmountable/summary-bug-64k.img"
    );
    let src = Source::new(std::fs::read(path).expect("the fixture"), None, None).unwrap();
    assert!(matches!(src.mount(), Err(ConvertError::Unmountable(_))));
    let fs = src.salvage().expect("readable");
    let c = cfg(LE, 65536, Some(12), true);
    let (out, report) = convert(&fs, &c, Vec::new()).expect("converts");
    assert!(report.dropped.is_empty(), "{:?}", report.dropped);
    let why = report.unmountable.expect("said");
    assert!(why.starts_with("kernel BUG: "), "{why}");
    let again = Source::new(out, None, None).unwrap();
    let after = again.mount().expect("Linux mounts the output");
    same_tree(
        &fs.tree(&TreeOptions::listing()),
        &after.tree(&TreeOptions::listing()),
    );
}

/// Files of pages that compress well and pages that do not, rewritten with zlib into small
/// blocks: pages are written whole wherever their compressed node fits and fill block tails
/// out of order, with versions that keep every page and the files' attributes; no block
/// tail is left dirty, and hardly a page is split.
#[test]
fn rewritten_pages_fill_block_tails_and_keep_their_versions() {
    let mut i = new_img(LE);
    i.dir_inode(2, 1);
    let mut rng = XorShift::new(0x1234_5678);
    let mut noise = |n: usize| rng.bytes(n);
    let (files, pages) = (8u32, 5u32);
    for f in 0..files {
        let ino = 3 + f;
        i.dirent(1, 2 + f, ino, dt::REG, format!("f{f}").as_bytes());
        for p in 0..pages {
            let data = if (f + p) % 3 == 0 {
                noise(4096)
            } else {
                pattern(4096, (f * 7 + p) as u8 | 1)
            };
            i.file_data(ino, 1 + p, pages * 4096, p * 4096, &data, false);
        }
        // A partial overwrite, so that the inode's highest version is not its last page's.
        i.file_data(ino, pages + 1, pages * 4096, 4096 + 100, &noise(300), false);
    }
    let img = i.build();
    let g = geometry(LE, ES, 12);
    let (before, _) = shown(&img, &g);
    let mut c = cfg(LE, ES, Some(12), false);
    c.recompress = true;
    c.threads = 1;
    let (out, _) = run(&img, &g, &c);
    c.threads = 2;
    let (again, _) = run(&img, &g, &c);
    assert_same_bytes(&out, &again);
    let (after, _) = shown(&out, &g);
    same_tree(&before, &after);
    assert_clean(&out, &g);
    let image = opened(&out, &g);
    let (fs, _) = image.salvage();
    let mut split = 0;
    for ino in fs.live_inodes() {
        let i = fs.read_inode(ino).expect("readable");
        // The overwritten page 1 is rewritten in three ranges anyway.
        split += i
            .nodes
            .iter()
            .filter(|d| d.size > 0 && d.size < 4096 && d.ofs / 4096 != 1)
            .count();
    }
    // Each split page makes two nodes; the blocks, not the pages, bound how many there are.
    let blocks = out.len() / ES as usize;
    assert!(split <= blocks, "{split} split pieces in {blocks} blocks");
}
