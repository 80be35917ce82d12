//! Helpers of the sumtool tests (`tests/sumtool_*.rs`), next to `common/mod.rs`: running our
//! `jffs2-sumtool` and mtd-utils' `sumtool`, and judging a summarised image three ways —
//! the core mount scan (the kernel's view, offline), Debian's `jffs2dump -c`, and an
//! independent node walk (`common::nodes`) for the node multiset.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use jffs2::format::Endian as CoreEndian;
use jffs2::fs::{TreeEntry, TreeOptions};
use jffs2::scan::{BlockClass, Scan, SummaryUse};
use jffs2::{Image, ImageOptions};

use crate::common::{
    jffs2dump, mtd_tool, nodes, run, Endian, Output, NODETYPE_CLEANMARKER, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_SUMMARY, NODETYPE_XATTR, NODETYPE_XREF,
};

/// Our binary.
pub const OURS_SUMTOOL: &str = env!("CARGO_BIN_EXE_jffs2-sumtool");
/// Our mkfs.
pub const OURS_MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");

/// mtd-utils' sumtool.
pub fn mtd_sumtool() -> &'static Path {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| mtd_tool("sumtool"))
}

/// Runs `prog` with `args` in the C locale.
pub fn run_prog<S: AsRef<OsStr>>(prog: &Path, args: &[S]) -> Output {
    let mut c = Command::new(prog);
    c.env("LC_ALL", "C").args(args);
    run(c)
}

/// Runs our jffs2-sumtool.
pub fn ours<S: AsRef<OsStr>>(args: &[S]) -> Output {
    run_prog(Path::new(OURS_SUMTOOL), args)
}

/// Runs mtd-utils' sumtool.
pub fn theirs<S: AsRef<OsStr>>(args: &[S]) -> Output {
    run_prog(mtd_sumtool(), args)
}

/// `ours` or `theirs` on `input` -> `output` with `args`; panics unless it succeeds.
pub fn summarize(ours_: bool, input: &Path, output: &Path, args: &[&str]) -> Output {
    let mut a: Vec<&OsStr> = vec![
        OsStr::new("-i"),
        input.as_os_str(),
        OsStr::new("-o"),
        output.as_os_str(),
    ];
    a.extend(args.iter().map(OsStr::new));
    let o = if ours_ { ours(&a) } else { theirs(&a) };
    assert_eq!(
        o.status,
        0,
        "{} {a:?} failed: {}",
        if ours_ { "jffs2-sumtool" } else { "sumtool" },
        o.stderr_text()
    );
    o
}

/// The byte order of the core crate.
pub fn core_endian(big: bool) -> CoreEndian {
    if big {
        CoreEndian::Big
    } else {
        CoreEndian::Little
    }
}

/// `img` opened in the geometry given (byte order, erase size, and the cleanmarker size the
/// kernel expects, which detection alone may not give), padded into whole blocks (at least 5).
fn opened(img: &[u8], es: u32, big: bool, cm: u32) -> Image<'_> {
    let opts = ImageOptions {
        erase_size: Some(es),
        endian: Some(core_endian(big)),
        cleanmarker_size: Some(cm),
        insist: true,
        ..Default::default()
    };
    Image::from_bytes_with(img, &opts).expect("an image opened with its geometry given")
}

/// The kernel's mount scan of `img` (flashed into whole blocks, at least 5).
pub fn kernel_scan(img: &[u8], es: u32, big: bool, cm: u32) -> Scan {
    opened(img, es, big, cm).scan()
}

/// Asserts that the kernel reads every block holding nodes through its summary, and logs
/// nothing. Returns the number of blocks read through a summary.
pub fn assert_kernel_summarized(what: &str, img: &[u8], es: u32, big: bool, cm: u32) -> usize {
    let s = kernel_scan(img, es, big, cm);
    assert!(s.failure.is_none(), "{what}: mount failure {:?}", s.failure);
    assert!(s.log.is_empty(), "{what}: kernel messages {:#?}", s.log);
    let mut used = 0;
    for b in &s.blocks {
        match b.class {
            BlockClass::Empty | BlockClass::Cleanmarker => {}
            _ => {
                assert_eq!(
                    b.summary,
                    SummaryUse::Used,
                    "{what}: block at {:#x} is not read through a summary",
                    b.offset
                );
                used += 1;
            }
        }
    }
    used
}

/// The filesystem the kernel shows for `img` (the core's model of Linux's build and
/// readinode), with content and xattrs; built even where Linux would refuse the mount.
pub fn kernel_tree(img: &[u8], es: u32, big: bool, cm: u32) -> Vec<TreeEntry> {
    let image = opened(img, es, big, cm);
    let (fs, _) = image.salvage();
    fs.tree(&TreeOptions::listing()).entries
}

/// The multiset of inode, dirent, xattr and xref nodes (whole `totlen` bytes) that are not
/// marked obsolete, by an independent word walk.
pub fn payload_nodes(img: &[u8], big: bool) -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = nodes(img, Endian { big })
        .into_iter()
        .filter(|n| {
            [
                NODETYPE_INODE,
                NODETYPE_DIRENT,
                NODETYPE_XATTR,
                NODETYPE_XREF,
            ]
            .contains(&n.nodetype)
        })
        .map(|n| n.bytes)
        .collect();
    v.sort();
    v
}

/// Nodes with the ACCURATE bit cleared (obsolete on flash), by the same walk.
pub fn obsolete_nodes(img: &[u8], big: bool) -> usize {
    nodes(img, Endian { big })
        .iter()
        .filter(|n| n.nodetype & 0x2000 == 0 && n.nodetype != 0xFFFF)
        .count()
}

/// What Debian's `jffs2dump -c -v` says about a summarised image of `es`-byte blocks:
/// `Wrong` lines, summary nodes per block, node lines per block.
pub struct DumpView {
    pub wrong: Vec<String>,
    /// Block -> records of its summary.
    pub summaries: BTreeMap<usize, u32>,
    /// Block -> inode/dirent/xattr/xref nodes in it.
    pub nodes: BTreeMap<usize, u32>,
}

fn field(line: &str, key: &str) -> u32 {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
    rest.trim_start()
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{key} in {line}"))
}

pub fn dump_view(path: &Path, big: bool, es: usize) -> DumpView {
    let text = jffs2dump(path, big);
    let offset = |l: &str| {
        usize::from_str_radix(l.split("node at 0x").nth(1).unwrap().get(..8).unwrap(), 16).unwrap()
    };
    let mut v = DumpView {
        wrong: Vec::new(),
        summaries: BTreeMap::new(),
        nodes: BTreeMap::new(),
    };
    for l in text.lines() {
        let t = l.trim_start();
        if t.contains("Wrong") {
            v.wrong.push(l.to_string());
        } else if t.starts_with("Inode Sum  node at") {
            let b = offset(t) / es;
            assert!(
                v.summaries.insert(b, field(t, "sum_num")).is_none(),
                "two summaries in block {b}"
            );
        } else if [
            "Inode      node",
            "Dirent     node",
            "Xattr      node",
            "Xref       node",
        ]
        .iter()
        .any(|p| t.starts_with(p))
        {
            *v.nodes.entry(offset(t) / es).or_default() += 1;
        }
    }
    v
}

/// Asserts what `jffs2dump -c` shows of a summarised image: no "Wrong" line, and a summary
/// in every block that holds nodes, with one record per node of the block (blocks whose
/// node does not leave room for a summary are allowed when `allow_unsummarized`).
pub fn assert_dump_summarized(what: &str, path: &Path, big: bool, es: usize) -> DumpView {
    let v = dump_view(path, big, es);
    assert!(
        v.wrong.is_empty(),
        "{what}: jffs2dump reports {:?}",
        v.wrong
    );
    for (b, n) in &v.nodes {
        assert_eq!(
            v.summaries.get(b),
            Some(n),
            "{what}: block {b} holds {n} nodes but its summary lists {:?}",
            v.summaries.get(b)
        );
    }
    v
}

/// Erase blocks an image occupies.
pub fn blocks(len: usize, es: usize) -> usize {
    len.div_ceil(es)
}

/// The header type at `ofs` (for layout checks).
pub fn nodetype_at(img: &[u8], ofs: usize, big: bool) -> u16 {
    Endian { big }.u16(img, ofs + 2)
}

/// True when the last 8 bytes of block `b` hold a summary marker.
pub fn has_marker(img: &[u8], b: usize, es: usize, big: bool) -> bool {
    let end = (b + 1) * es;
    end <= img.len() && Endian { big }.u32(img, end - 4) == 0x0285_1885
}

pub const CLEANMARKER: u16 = NODETYPE_CLEANMARKER;
pub const SUMMARY: u16 = NODETYPE_SUMMARY;
