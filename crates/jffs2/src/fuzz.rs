//! Entry points for fuzzing: one function per target of `fuzz/` (cargo-fuzz), also
//! run over the committed seed and regression corpora by `tests/fuzz_corpus.rs`, so that
//! every input that ever crashed stays a test.
//!
//! Each function takes arbitrary bytes and must never panic, hang, or allocate without
//! bound; where a property can be checked cheaply it is asserted (a failed assertion is a
//! crash the fuzzer reports):
//!
//! * [`nodes`]: every node decoder, in both byte orders; a node converted to the other byte
//!   order and back is unchanged.
//! * [`decompress`]: every decompressor on hostile data (the first byte chooses it, the next
//!   two the output size); and every compressor's output decompresses to its input.
//! * [`scan`]: geometry detection and the kernel's mount scan (with and without summaries);
//!   the per-block accounting adds up to the flash size.
//! * [`fs`]: the filesystem model: build, every inode read, the listing.
//! * [`dump`]: the `jffs2dump -c` / `-c -v` printer and the endian converter.
//! * [`extract`]: extraction into a fresh temporary directory; nothing is created outside it.
//! * [`sumtool`]: analysis and summarising.
//! * [`convert`]: conversion; when nothing is dropped the output shows the input's tree
//!   (link counts only when the input is consistent).
//!
//! Inputs larger than [`MAX_INPUT`] are cut there: the guarantees are about linear cost, and
//! a fuzzer learns nothing from megabytes of input.

use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::compress::{self, Compressors, Kind};
use crate::format::{DirentNode, Endian, InodeNode, NodeHeader, SummaryNode, XattrNode, XrefNode};
use crate::scan::{ScanOptions, SummaryUse};

/// The most bytes of an input the targets look at.
pub const MAX_INPUT: usize = 1 << 20;

fn cut(data: &[u8]) -> &[u8] {
    &data[..data.len().min(MAX_INPUT)]
}

/// Node decoding: every decoder at every 4-byte offset of the first 4 KiB, both byte orders;
/// a node swapped to the other byte order and back is the same bytes.
pub fn nodes(data: &[u8]) {
    let data = cut(data);
    for e in [Endian::Little, Endian::Big] {
        let mut p = 0usize;
        while p < data.len().min(4096) {
            let b = &data[p..];
            let o = p as u64;
            let _ = NodeHeader::decode(b, e, o).map(|h| (h.crc_ok(e), h.computed_crc(e)));
            let _ = InodeNode::decode(b, e, o);
            let _ = DirentNode::decode(b, e, o).map(|d| d.name(b).map(<[u8]>::len));
            let _ = XattrNode::decode(b, e, o);
            let _ = XrefNode::decode(b, e, o);
            let _ = SummaryNode::decode(b, e, o);
            if let Some(swapped) = crate::dump::swap_node(b, e) {
                let other = match e {
                    Endian::Little => Endian::Big,
                    Endian::Big => Endian::Little,
                };
                let back = crate::dump::swap_node(&swapped, other);
                assert_eq!(
                    back.as_deref(),
                    Some(&b[..swapped.len()]),
                    "swapping a node twice changed it (offset {p})"
                );
            }
            p += 4;
        }
    }
}

/// Decompressors on hostile data, and compressors' round trip.
///
/// Byte 0 chooses the compressor id (any value, unknown ones included), bytes 1–2 the output
/// size (at most 64 KiB, as a node's `dsize` can claim); the rest is the compressed data.
/// Then the input's first KiB is compressed with each compressor, and must
/// decompress to the bytes it says it consumed.
pub fn decompress(data: &[u8]) {
    let data = cut(data);
    if data.len() >= 3 {
        let compr = data[0] % 16;
        let dsize = usize::from(u16::from_le_bytes([data[1], data[2]])) + 1;
        if let Ok(out) = compress::decompress(compr, &data[3..], dsize) {
            assert_eq!(
                out.len(),
                dsize,
                "compressor {compr} returned the wrong size"
            );
        }
        // The kernel's swapped rubin ids as well.
        let _ = compress::decompress(compress::COMPR_DYNRUBIN, &data[3..], dsize);
        let _ = compress::decompress(compress::COMPR_RUBINMIPS, &data[3..], dsize);
    }
    // 1 KiB is enough to reach every path of the compressors (LZO's level 12 is slow).
    let page = &data[..data.len().min(1024)];
    if page.is_empty() {
        return;
    }
    for kind in Kind::ALL {
        let mut c = Compressors::mkfs_default();
        for k in Kind::ALL {
            let _ = c.set_enabled(k.name(), k == kind);
        }
        for room in [page.len(), page.len() / 2 + 1] {
            let z = c.compress(page, room);
            assert!(
                z.consumed > 0 && z.consumed <= page.len(),
                "{}",
                kind.name()
            );
            let back = compress::decompress(z.compr, &z.data, z.consumed)
                .unwrap_or_else(|e| panic!("{} output does not decompress: {e}", kind.name()));
            assert_eq!(back, &page[..z.consumed], "{} round trip", kind.name());
        }
    }
}

/// Detection and the mount scan, with and without summaries; the accounting adds up.
pub fn scan(data: &[u8]) {
    let data = cut(data);
    for summary in [true, false] {
        // Insisting: the scanner sees every input, JFFS2 or not.
        let opts = crate::ImageOptions {
            insist: true,
            scan: ScanOptions {
                summary,
                ..ScanOptions::default()
            },
            ..Default::default()
        };
        let Ok(image) = crate::Image::from_bytes_with(data, &opts) else {
            continue;
        };
        let s = image.scan();
        if s.failure.is_none() {
            let t = s.totals();
            let sum = t.used + t.dirty + t.wasted + t.unchecked + t.free;
            let es = u64::from(image.geometry().erase_size);
            let flash = (image.flash().len() as u64 / es) * es;
            assert_eq!(
                sum, flash,
                "block accounting does not add up to the flash size"
            );
        }
        if !summary {
            assert!(
                s.blocks.iter().all(|b| b.summary != SummaryUse::Used),
                "a summary was used with summaries off"
            );
        }
    }
}

/// The input as an image ([`crate::Image`]), when it is one; mounted by the targets.
fn image(data: &[u8]) -> Option<crate::Image<'_>> {
    crate::Image::from_bytes(cut(data)).ok()
}

/// The filesystem model: build, read every live inode, list the tree.
pub fn fs(data: &[u8]) {
    let Some(image) = image(data) else { return };
    let Ok(fs) = image.mount() else { return };
    let inos: Vec<u32> = fs.live_inodes().collect();
    for ino in inos {
        if let Ok(inode) = fs.read_inode(ino) {
            for n in &inode.nodes {
                let _ = fs.node_data(n);
            }
        }
    }
    let _ = crate::extract::list(
        &fs,
        &mut io::sink(),
        &crate::extract::ListOptions { xattrs: true },
    );
}

/// The `jffs2dump -c` printer (plain and verbose, both byte orders) and the endian
/// converter.
pub fn dump(data: &[u8]) {
    let data = cut(data);
    for endian in [Endian::Little, Endian::Big] {
        for verbose in [false, true] {
            let opts = crate::dump::ContentOptions { endian, verbose };
            let _ = crate::dump::dump_content(data, &opts, &mut io::sink());
        }
    }
    for (from, recalc_crc) in [(Endian::Little, false), (Endian::Big, true)] {
        let opts = crate::dump::SwapOptions { from, recalc_crc };
        let _ = crate::dump::swap_endian(data, &opts, &mut io::sink(), &mut io::sink());
    }
}

static SERIAL: AtomicU64 = AtomicU64::new(0);

/// A directory of its own under the system's temporary directory, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Option<Scratch> {
        let n = SERIAL.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("jffs2-fuzz-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir(&p).ok()?;
        Some(Scratch(p))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Every path under `dir`, without following symlinks.
fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        let is_dir = e.file_type().map(|t| t.is_dir()).unwrap_or(false);
        out.push(p.clone());
        if is_dir {
            walk(&p, out);
        }
    }
}

/// Extraction into a fresh directory `root/dest`: afterwards `root` holds `dest` and its
/// device table, nothing else, and nothing under `dest` is a path that leaves it.
pub fn extract(data: &[u8]) {
    let Some(image) = image(data) else { return };
    let Ok(fs) = image.mount() else { return };
    let Ok(plan) = crate::extract::Plan::build(&fs, true) else {
        return;
    };
    let Some(root) = Scratch::new() else { return };
    let dest = root.0.join("dest");
    let table = root.0.join("dest.devtable");
    let opts = crate::extract::ExtractOptions {
        owners: false,
        xattrs: false,
        devices: false,
        allow_non_empty: false,
        devtable: Some(table.clone()),
        stream: crate::extract::StreamOptions::default(),
    };
    let _ = crate::extract::extract(&fs, &plan, &dest, &opts);
    let mut top = Vec::new();
    if let Ok(rd) = std::fs::read_dir(&root.0) {
        top.extend(rd.flatten().map(|e| e.path()));
    }
    for p in &top {
        assert!(
            *p == dest || *p == table,
            "extraction created {} outside its destination",
            p.display()
        );
    }
    let mut all = Vec::new();
    walk(&dest, &mut all);
    for p in all {
        assert!(
            p.starts_with(&dest),
            "{} is outside the destination",
            p.display()
        );
    }
}

/// sumtool's analysis and output, in the detected geometry: when Linux mounts the input, it
/// mounts the output.
pub fn sumtool(data: &[u8]) {
    let data = cut(data);
    // Insisting: sumtool is given every input, JFFS2 or not.
    let opts = crate::ImageOptions {
        insist: true,
        ..Default::default()
    };
    let Ok(image) = crate::Image::from_bytes_with(data, &opts) else {
        return;
    };
    let d = image.detection();
    let mut cfg = crate::sumtool::SumtoolConfig::new();
    cfg.endian = d.geometry.endian;
    cfg.erase_size = d.geometry.erase_size;
    let input_mounts = image.scan().failure.is_none();
    if let Ok((out, _, _)) = crate::sumtool::summarize(data, &cfg, Vec::new()) {
        let img = crate::scan::as_flashed(&out, cfg.erase_size);
        let s = crate::scan::scan(&img, &d.geometry, &ScanOptions::default());
        if let Some(f) = &s.failure {
            assert!(
                !input_mounts,
                "Linux mounts the input but not sumtool's output: {f}"
            );
        }
    }
}

/// Conversion; when nothing was dropped, the output lists exactly as the input.
pub fn convert(data: &[u8]) {
    let data = cut(data);
    let Ok(src) = crate::convert::Source::new(data.to_vec(), None, None) else {
        return;
    };
    let Ok(fs) = src.mount() else { return };
    let had = crate::convert::input_layout(fs.scan());
    let g = src.geometry;
    let cfg = crate::convert::ConvertConfig {
        layout: crate::layout::LayoutConfig {
            endian: g.endian,
            erase_size: g.erase_size.max(8192),
            cleanmarker: had.cleanmarker.filter(|&c| c < g.erase_size.max(8192)),
            summary: true,
        },
        page_size: 4096,
        recompress: false,
        compressors: Compressors::mkfs_default(),
        pad: crate::layout::EndPad::None,
        threads: 1,
        progress: None,
    };
    let Ok((out, report)) = crate::convert::convert(&fs, &cfg, Vec::new()) else {
        return;
    };
    if !report.dropped.is_empty() || report.kept_undecodable > 0 {
        return;
    }
    let mut before = Vec::new();
    let _ = crate::extract::list(
        &fs,
        &mut before,
        &crate::extract::ListOptions { xattrs: true },
    );
    // Read in the byte order and erase size it was written in; the cleanmarker size, which
    // no option gives, is detected (the one written, 0 without): it changes the block
    // accounting only, neither the mount verdict nor the tree compared.
    let opts = crate::ImageOptions {
        endian: Some(cfg.layout.endian),
        erase_size: Some(cfg.layout.erase_size),
        insist: true,
        ..Default::default()
    };
    let converted = crate::Image::from_vec_with(out, &opts).expect("the converted image opens");
    let fs2 = match converted.mount() {
        Ok(fs) => fs,
        Err(e) => panic!("the converted image does not mount: {:?}", Some(e.0)),
    };
    let mut after = Vec::new();
    let _ = crate::extract::list(
        &fs2,
        &mut after,
        &crate::extract::ListOptions { xattrs: true },
    );
    // The link count Linux shows counts every entry the mount scan met, even one it then
    // rejects when reading the directory (a bad name CRC): no consistent image can show
    // that. Link counts are compared when fsck finds the input consistent; the rest always.
    let (before, after) = (
        String::from_utf8_lossy(&before).into_owned(),
        String::from_utf8_lossy(&after).into_owned(),
    );
    let fsck = crate::fsck::Options {
        erase_size: Some(g.erase_size),
        endian: Some(g.endian),
        compare: None,
        progress: None,
    };
    let consistent =
        crate::fsck::check(data, &fsck).is_ok_and(|r| r.count(crate::fsck::Severity::Error) == 0);
    if consistent {
        assert_eq!(before, after, "the converted image shows another tree");
    } else {
        assert_eq!(
            without_nlink(&before),
            without_nlink(&after),
            "the converted image shows another tree (link counts aside)"
        );
    }
}

/// A listing without its third column (the link count).
fn without_nlink(listing: &str) -> String {
    let mut out = String::with_capacity(listing.len());
    for line in listing.lines() {
        // Columns: inode, mode, links, ... (the first three hold no spaces).
        let mut rest = line;
        let mut kept = String::new();
        for _ in 0..2 {
            let t = rest.trim_start();
            let end = t.find(' ').unwrap_or(t.len());
            kept.push_str(&t[..end]);
            kept.push(' ');
            rest = &t[end..];
        }
        let t = rest.trim_start();
        let end = t.find(' ').unwrap_or(t.len());
        kept.push_str(&t[end..]);
        out.push_str(&kept);
        out.push('\n');
    }
    out
}

/// A fuzz target's entry point.
pub type Target = fn(&[u8]);

/// The targets by name, for the corpus tests and tools.
pub const TARGETS: &[(&str, Target)] = &[
    ("nodes", nodes),
    ("decompress", decompress),
    ("scan", scan),
    ("fs", fs),
    ("dump", dump),
    ("extract", extract),
    ("sumtool", sumtool),
    ("convert", convert),
];
