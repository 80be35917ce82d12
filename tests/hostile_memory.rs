//! Memory within the documented bound (`docs/SECURITY.md`: peak RSS ≤ 2 × image + 64 MiB) on
//! the shapes that cost the most per byte of image: 200 000 names for one inode (hard links,
//! 9.2 MiB), 100 000 nested directories (10.7 MiB), and 290 000 one-byte data nodes of one file
//! (19.9 MiB). Every tool runs as built (`/usr/bin/time -f %M`) and each run's peak resident
//! memory must stay within the bound. Exit codes are not the point here
//! (`tests/hostile_cli.rs` checks them), only that no run panics or dies.
//!
//! Peaks measured with `cargo build && cargo test --test hostile_memory -- --nocapture`
//! (debug builds, as CI runs them; MiB, bound in brackets):
//!
//! | shape | `--list` | sumtool | fsck | `--repair` | convert | `--extract` |
//! |---|---|---|---|---|---|---|
//! | hard links [82] | 57 | 50 | 59 | 67 | 68 | 74 |
//! | nested directories [85] | 54 | 50 | 78 | 78 | 75 | 71 |
//! | one-byte nodes [103] | 76 | 37 | 91 | 91 | 79 | 86 |
//!
//! (On ext4 `--extract` of the hard links has 135 000 of them refused, each named.)
//!
//! `HOSTILE_MEMORY_KEEP=DIR` only writes the images into DIR and runs nothing (to measure
//! other builds, e.g. `--release` ones, at larger sizes).
//!
//! Needs GNU time (`scripts/install-test-deps.sh`).

mod common;

use std::ffi::OsString;
use std::path::Path;

use jffs2::format::{dt, DirentNode, Endian, InodeNode};

const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const SUMTOOL: &str = env!("CARGO_BIN_EXE_jffs2-sumtool");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");

const E: Endian = Endian::Little;
const ES: usize = 0x10000;
const DIR: u32 = 0o040755;
const REG: u32 = 0o100644;
const MIB: u64 = 1 << 20;

/// An image written node after node; a node that would cross an erase block starts the next.
struct Img {
    data: Vec<u8>,
    node: Vec<u8>,
}

impl Img {
    fn new(capacity: usize) -> Img {
        Img {
            data: Vec::with_capacity(capacity),
            node: Vec::new(),
        }
    }

    fn put_node(&mut self) {
        let room = ES - self.data.len() % ES;
        if self.node.len() > room {
            self.data.resize(self.data.len() + room, 0xFF);
        }
        self.data.extend_from_slice(&self.node);
        while self.data.len() % 4 != 0 {
            self.data.push(0xFF);
        }
    }

    fn dirent(&mut self, pino: u32, version: u32, ino: u32, name: &[u8], dtype: u8) {
        self.node.clear();
        DirentNode {
            pino,
            version,
            ino,
            dtype,
            ..Default::default()
        }
        .encode(E, name, &mut self.node);
        self.put_node();
    }

    fn inode(&mut self, ino: u32, version: u32, mode: u32, offset: u32, data: &[u8], isize: u32) {
        self.node.clear();
        InodeNode {
            ino,
            version,
            mode,
            isize,
            offset,
            dsize: data.len() as u32,
            ..Default::default()
        }
        .encode(E, data, &mut self.node);
        self.put_node();
    }

    fn finish(mut self) -> Vec<u8> {
        let want = self.data.len().div_ceil(ES).max(5) * ES;
        self.data.resize(want, 0xFF);
        self.data
    }
}

/// `n` names in the root, every one a hard link to the same regular file (48 bytes a name).
fn hard_links(n: u32) -> Vec<u8> {
    let mut m = Img::new(n as usize * 48 + ES);
    m.inode(2, 1, REG, 0, b"x", 1);
    for i in 0..n {
        m.dirent(1, i + 1, 2, format!("l{i:07}").as_bytes(), dt::REG);
    }
    m.finish()
}

/// A chain of `n` nested directories, each named `d` (112 bytes a level).
fn nested(n: u32) -> Vec<u8> {
    let mut m = Img::new(n as usize * 112 + ES);
    for i in 0..n {
        let ino = i + 2;
        let parent = if i == 0 { 1 } else { ino - 1 };
        m.inode(ino, 1, DIR, 0, &[], 0);
        m.dirent(parent, 1, ino, b"d", dt::DIR);
    }
    m.finish()
}

/// One file of `n` bytes written one byte a node (72 bytes a node).
fn one_byte_nodes(n: u32) -> Vec<u8> {
    let mut m = Img::new(n as usize * 72 + ES);
    m.dirent(1, 1, 2, b"f", dt::REG);
    for i in 0..n {
        m.inode(2, i + 1, REG, i, &[(i % 251) as u8], i + 1);
    }
    m.finish()
}

/// Peak resident memory of `bin args`, in bytes (`common::measured`).
fn peak(bin: &str, args: &[OsString]) -> u64 {
    let args: Vec<&std::ffi::OsStr> = args.iter().map(OsString::as_os_str).collect();
    common::measured(bin, &args, false).peak
}

/// The runs of [`check`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Fsck,
    Repair,
    Convert,
    List,
    Extract,
    Sumtool,
}

/// Runs `tools` on `image` and asserts that none peaks above 2 × its size + 64 MiB.
fn check(name: &str, image: Vec<u8>, tools: &[Tool]) {
    if let Some(keep) = std::env::var_os("HOSTILE_MEMORY_KEEP") {
        std::fs::write(Path::new(&keep).join(format!("{name}.img")), &image).unwrap();
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let path = work.path().join(format!("{name}.img"));
    std::fs::write(&path, &image).unwrap();
    let len = image.len() as u64;
    drop(image);
    let limit = 2 * len + 64 * MIB;
    let i = path.as_os_str().to_owned();
    let out = |what: &str| work.path().join(what).into_os_string();
    let s = OsString::from;
    let command = |t: Tool| -> (&str, Vec<OsString>) {
        match t {
            Tool::Fsck => (FSCK, vec![i.clone()]),
            Tool::Repair => (FSCK, vec![s("--repair"), out("repaired"), i.clone()]),
            Tool::Convert => (
                CONVERT,
                vec![
                    s("-i"),
                    i.clone(),
                    s("-o"),
                    out("converted"),
                    s("--no-progress"),
                ],
            ),
            Tool::List => (DUMP, vec![s("--list"), i.clone()]),
            Tool::Extract => (DUMP, vec![s("--extract"), out("extracted"), i.clone()]),
            Tool::Sumtool => (
                SUMTOOL,
                vec![
                    s("-e"),
                    OsString::from(format!("0x{ES:x}")),
                    s("-i"),
                    i.clone(),
                    s("-o"),
                    out("summed"),
                ],
            ),
        }
    };
    let mut over = Vec::new();
    for &t in tools {
        let (bin, args) = command(t);
        let p = peak(bin, &args);
        let what = format!("{t:?}");
        eprintln!(
            "{name} ({} MiB): {what}: peak {} MiB (bound {} MiB)",
            len / MIB,
            p / MIB,
            limit / MIB
        );
        if p > limit {
            over.push(format!("{what}: {} MiB > {} MiB", p / MIB, limit / MIB));
        }
        // Outputs are not kept: the disk is shared with the next run.
        for o in ["repaired", "converted", "summed"] {
            let _ = std::fs::remove_file(work.path().join(o));
        }
        let _ = std::fs::remove_dir_all(work.path().join("extracted"));
    }
    assert!(
        over.is_empty(),
        "{name}: peak memory above 2 x image + 64 MiB:\n{}",
        over.join("\n")
    );
}

#[test]
fn hard_links_list_and_sumtool() {
    check("links", hard_links(200_000), &[Tool::List, Tool::Sumtool]);
}

#[test]
fn nested_directories_list_extract_and_sumtool() {
    check(
        "nested",
        nested(100_000),
        &[Tool::List, Tool::Extract, Tool::Sumtool],
    );
}

#[test]
fn one_byte_data_nodes_list_and_sumtool() {
    check(
        "bytes",
        one_byte_nodes(290_000),
        &[Tool::List, Tool::Sumtool],
    );
}

#[test]
fn hard_links_other_tools() {
    check(
        "links",
        hard_links(200_000),
        &[Tool::Fsck, Tool::Repair, Tool::Convert, Tool::Extract],
    );
}

#[test]
fn nested_directories_other_tools() {
    check(
        "nested",
        nested(100_000),
        &[Tool::Fsck, Tool::Repair, Tool::Convert],
    );
}

#[test]
fn one_byte_data_nodes_other_tools() {
    check(
        "bytes",
        one_byte_nodes(290_000),
        &[Tool::Fsck, Tool::Repair, Tool::Convert, Tool::Extract],
    );
}
