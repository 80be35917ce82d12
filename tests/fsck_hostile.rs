//! Hostile images: directory cycles, 4 GiB sparse claims, lying `csize`/`dsize`,
//! decompression bombs, thousands of versions of one node, unknown compressors, deep
//! nesting. Each must be checked in seconds (20 s is only a hang guard), without a panic,
//! with bounded memory, and reported.

mod common;

#[path = "common/fsck_util.rs"]
mod fsck_util;

use std::time::{Duration, Instant};

use fsck_util::*;
use jffs2::compress::{zlib_compress, COMPR_COPY, COMPR_RUBINMIPS, COMPR_ZERO, COMPR_ZLIB};
use jffs2::format::{dt, Endian, InodeNode};
use jffs2::fsck::{check, Options, Report, Severity};

const LE: Endian = Endian::Little;
const ES: u32 = 65536;
const S_IFREG: u32 = 0o100000;
const HANG_GUARD: Duration = Duration::from_secs(20);

fn opts() -> Options {
    Options {
        erase_size: Some(ES),
        endian: Some(LE),
        compare: None,
        progress: None,
    }
}

/// Checks `img` within the hang guard; returns the report.
fn timed(what: &str, img: &[u8]) -> Report {
    let t = Instant::now();
    let r = check(img, &opts()).unwrap_or_else(|e| panic!("{what}: {e}"));
    let el = t.elapsed();
    eprintln!("{what}: {el:?}, {} findings", r.findings.len());
    assert!(el < HANG_GUARD, "{what}: took {el:?}");
    r
}

fn codes(r: &Report) -> Vec<&'static str> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .map(|f| f.code.as_str())
        .collect()
}

#[test]
fn directory_cycles() {
    let mut i = common::img();
    // /a/b, and b names a: a cycle reachable from the root.
    i.dir(1, 2, b"a", 1)
        .dir(2, 3, b"b", 1)
        .dirent(3, 2, 2, dt::DIR, b"back-to-a");
    // 4 and 5 name each other, unreachable from the root.
    i.dir(5, 4, b"x", 1).dir(4, 5, b"y", 3);
    // A directory that names itself.
    i.dir(1, 6, b"self", 2).dirent(6, 2, 6, dt::DIR, b"me");
    let r = timed("directory cycles", &i.build());
    let c = codes(&r);
    assert_eq!(r.verdict().exit_code(), 4);
    assert!(
        c.iter()
            .any(|c| *c == "directory-hard-link" || *c == "directory-reached-twice"),
        "{c:?}"
    );
}

#[test]
fn sparse_4gib_claims() {
    let mut i = common::img();
    // A 4 GiB - 1 file: a hole, then one page at the very end.
    i.inode_parts(
        2,
        1,
        0o100644,
        u32::MAX,
        u32::MAX - 4096,
        4096,
        COMPR_ZERO,
        &[],
    );
    // A ZERO node claiming 4 GiB of zeros.
    i.inode_parts(3, 1, 0o100644, u32::MAX, 0, u32::MAX, COMPR_ZERO, &[]);
    // The legacy ZERO node with csize and dsize swapped.
    let mut legacy = Vec::new();
    InodeNode {
        ino: 4,
        version: 1,
        mode: S_IFREG | 0o644,
        isize: 0x8000_0000,
        dsize: 0,
        compr: COMPR_ZERO,
        ..Default::default()
    }
    .encode(LE, &[], &mut legacy);
    i.raw(legacy);
    i.dirent(1, 1, 2, dt::REG, b"end-page")
        .dirent(1, 2, 3, dt::REG, b"zeros")
        .dirent(1, 3, 4, dt::REG, b"legacy");
    let r = timed("4 GiB sparse files", &i.build());
    assert_eq!(r.tree.files, 3);
    assert!(r.tree.bytes >= u64::from(u32::MAX));
}

#[test]
fn lying_csize_and_dsize() {
    let mut i = common::img();
    // dsize far beyond what the kernel can allocate, tiny zlib input.
    let (z, _) = zlib_compress(&[7u8; 4096], 4096).unwrap();
    i.inode_parts(2, 1, 0o100644, 64 << 20, 0, 64 << 20, COMPR_ZLIB, &z);
    // Uncompressed node claiming more than it stores.
    i.inode_parts(3, 1, 0o100644, 1 << 20, 0, 1 << 20, 0, b"only a few bytes");
    // zlib data that ends before dsize.
    i.inode_parts(4, 1, 0o100644, 8192, 0, 8192, COMPR_ZLIB, &z);
    // csize larger than the node (node CRC valid): patch csize after encoding.
    let mut n = Vec::new();
    InodeNode {
        ino: 5,
        version: 1,
        mode: S_IFREG | 0o644,
        isize: 100,
        dsize: 100,
        ..Default::default()
    }
    .encode(LE, &[1u8; 100], &mut n);
    n[48..52].copy_from_slice(&0x00ff_ffffu32.to_le_bytes());
    let crc = jffs2::crc::crc32(&n[..60]);
    n[64..68].copy_from_slice(&crc.to_le_bytes());
    i.raw(n);
    for (k, name) in [
        (2, b"huge" as &[u8]),
        (3, b"short"),
        (4, b"early-end"),
        (5, b"csize"),
    ] {
        i.dirent(1, k, k, dt::REG, name);
    }
    let r = timed("lying sizes", &i.build());
    let c = codes(&r);
    assert!(c.contains(&"unreadable-data"), "{c:?}");
    assert!(
        c.contains(&"bad-length") || c.contains(&"bad-node"),
        "{c:?}"
    );
}

#[test]
fn decompression_bombs() {
    // 4 MiB of zeros per node, the most Linux allocates; 48 of them; and one just over.
    let (bomb, used) = zlib_compress(&vec![0u8; 4 << 20], 8 << 20).unwrap();
    assert_eq!(used, 4 << 20);
    assert!(bomb.len() < 32768, "{}", bomb.len());
    let mut i = common::img();
    for v in 0..48u32 {
        i.inode_parts(2, v + 1, 0o100644, 4 << 20, 0, 4 << 20, COMPR_ZLIB, &bomb);
    }
    i.inode_parts(
        3,
        1,
        0o100644,
        (4 << 20) + 1,
        0,
        (4 << 20) + 1,
        COMPR_ZLIB,
        &bomb,
    );
    i.dirent(1, 1, 2, dt::REG, b"bomb")
        .dirent(1, 2, 3, dt::REG, b"too-big");
    let img = i.build();
    let img_len = img.len() as u64;
    let r = timed("decompression bombs", &img);
    // The 4 MiB nodes are valid; the one over the kernel's limit is unreadable.
    assert!(codes(&r).contains(&"unreadable-data"), "{:?}", r.findings);
    // The newest 4 MiB node is live: decompressed and verified. The 47 it supersedes
    // (188 MiB of zeros Linux never reads) are past the decompression budget of dead data:
    // CRC-checked and counted in a note, not inflated.
    assert!(r.nodes.data_checked >= 1);
    assert!(
        r.nodes.data_bytes <= (4 << 20) + 16 * img_len,
        "{}",
        r.nodes.data_bytes
    );
    let note = r
        .findings
        .iter()
        .find(|f| f.code == "decompression-budget")
        .unwrap_or_else(|| panic!("{:?}", r.findings));
    assert!(note.message.contains(": 47 superseded"), "{}", note.message);
}

#[test]
fn thousands_of_versions_of_one_node() {
    let mut i = common::img();
    for v in 0..5000u32 {
        let data = v.to_le_bytes().repeat(16);
        i.inode_parts(2, v / 2 + 1, 0o100644, 64, 0, 64, 0, &data);
    }
    i.dirent(1, 1, 2, dt::REG, b"churn");
    let r = timed("5000 versions", &i.build());
    assert_eq!(r.tree.files, 1);
}

#[test]
fn unknown_compressors() {
    let mut i = common::img();
    for (k, compr) in [
        (2u32, COMPR_COPY),
        // A vendor's "LZMA without size" (jefferson's 0x15); OpenWrt's LZMA (8) is read.
        (3, 0x15),
        (4, 0xFF),
        (5, COMPR_RUBINMIPS),
        (6, 5),
    ] {
        i.inode_parts(k, 1, 0o100644, 4096, 0, 4096, compr, &[0x5a; 200]);
        i.dirent(1, k, k, dt::REG, format!("c{compr}").as_bytes());
    }
    let r = timed("unknown compressors", &i.build());
    let n = r
        .findings
        .iter()
        .filter(|f| f.code == "unknown-compressor" && f.severity == Severity::Error)
        .count();
    assert_eq!(n, 5, "{:#?}", r.findings);
}

#[test]
fn deep_nesting_and_the_cli() {
    let mut i = common::img();
    for d in 0..1500u32 {
        i.dir(
            if d == 0 { 1 } else { d + 1 },
            d + 2,
            b"deeper-and-deeper",
            d + 1,
        );
    }
    let img = i.build();
    let r = timed("1500 nested directories", &img);
    assert!(r.findings.iter().any(|f| f.code == "path-too-long"));
    // The CLI on the same image, within the guard.
    let dir = common::scratch();
    let p = dir.path().join("deep.img");
    std::fs::write(&p, &img).unwrap();
    let t = Instant::now();
    let o = fsck(&["--json", p.to_str().unwrap()]);
    assert!(t.elapsed() < HANG_GUARD);
    assert!(o.status == 0 || o.status == 4, "{}", o.stderr_text());
    json_of(&o);
}
