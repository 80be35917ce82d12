//! The corruption corpus: single bit flips at every byte offset inside every node of small
//! images (mtd-utils `mkfs.jffs2` with xattrs, its `sumtool` version, a big-endian one) are
//! all caught — exit 4 with an error at the node's offset; truncated images exit 4; random
//! bytes and empty files exit 8.
//!
//! Every byte of a node is covered by a CRC except three kinds, which no writer leaves
//! other than erased or zero and which Linux ignores. They are reported as warnings (exit 0)
//! and counted apart:
//!
//! * the 0–3 padding bytes inside an xattr node's `totlen` (`padding-not-erased`);
//! * the `data_crc` field of an inode node without data (`stray-data-crc`);
//! * the ACCURATE bit of the node type: Linux clears it to obsolete a node, so no CRC may
//!   cover it. A cleared bit on a node nothing supersedes is an error (`lost-node`, or
//!   `cleanmarker-obsolete`) — except on a directory entry whose inode keeps another name
//!   (a hard link), where it is also what garbage collection leaves on NOR flash: a warning.

mod common;
#[path = "common/fsck_util.rs"]
mod fsck_util;

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use fsck_util::*;
use jffs2::format::Endian;
use jffs2::fsck::{check, Options, Severity};

struct Corpus {
    name: &'static str,
    image: Vec<u8>,
    big: bool,
    opts: Options,
}

fn corpus() -> (tempfile::TempDir, Vec<Corpus>) {
    let dir = common::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    small_tree(&src);
    let mut out = Vec::new();
    let le = dir.path().join("le.img");
    mkfs(&src, &le, &["-e", "0x2000", "-l", "--with-xattr"]);
    // sumtool writes no summary into the last, partly filled block: give it two blocks.
    let src2 = dir.path().join("src2");
    std::fs::create_dir(&src2).unwrap();
    small_tree(&src2);
    std::fs::write(src2.join("bin/blob"), common::random(9, 2600)).unwrap();
    let le2 = dir.path().join("le2.img");
    mkfs(&src2, &le2, &["-e", "0x2000", "-l", "--with-xattr"]);
    let sum = dir.path().join("sum.img");
    sumtool(&le2, &sum, &["-e", "0x2000", "-l", "-p"]);
    let be = dir.path().join("be.img");
    mkfs(&src, &be, &["-e", "0x2000", "-b", "-n"]);
    for (name, p, big) in [
        ("mkfs.jffs2 -l --with-xattr", &le, false),
        ("sumtool -l", &sum, false),
        ("mkfs.jffs2 -b -n", &be, true),
    ] {
        out.push(Corpus {
            name,
            image: std::fs::read(p).unwrap(),
            big,
            opts: Options {
                erase_size: Some(0x2000),
                endian: Some(if big { Endian::Big } else { Endian::Little }),
                compare: None,
                progress: None,
            },
        });
    }
    (dir, out)
}

/// What one flip gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outcome {
    /// Exit 4 with an error at the node's offset.
    Caught,
    /// Exit 4, but no error at the node's offset.
    WrongOffset,
    /// A warning at the node's offset, exit 0.
    Warned(&'static str),
    /// Nothing.
    Missed,
}

/// The warnings a flip of an uncovered byte may give.
const UNCOVERED: &[&str] = &["padding-not-erased", "stray-data-crc", "lost-node"];

fn judge(img: &[u8], opts: &Options, node: usize) -> Outcome {
    let r = match check(img, opts) {
        Ok(r) => r,
        Err(_) => return Outcome::Missed,
    };
    let at = Some(node as u32);
    let err_at = r
        .findings
        .iter()
        .any(|f| f.severity == Severity::Error && f.offset == at);
    if r.verdict().exit_code() == 4 {
        return if err_at {
            Outcome::Caught
        } else {
            Outcome::WrongOffset
        };
    }
    match r
        .findings
        .iter()
        .find(|f| f.severity == Severity::Warning && f.offset == at)
    {
        Some(f) => Outcome::Warned(f.code.as_str()),
        None => Outcome::Missed,
    }
}

/// Runs `f` over `0..n` on two threads.
fn par_for(n: usize, f: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                f(i);
            });
        }
    });
}

#[test]
fn every_bit_flip_inside_a_node_is_caught() {
    if !common::require_root() || !common::require_mtd_utils() {
        return;
    }
    let (_dir, corpus) = corpus();
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for c in &corpus {
        let base = check(&c.image, &c.opts).expect("checkable");
        assert_eq!(
            base.verdict().exit_code(),
            0,
            "{}: the unaltered image: {:#?}",
            c.name,
            base.findings
        );
        let nodes = node_list(&c.image, c.big);
        if c.name.starts_with("sumtool") {
            assert!(nodes.iter().any(|n| n.2 == 0x2006), "no summary node");
            assert!(base.summary_blocks > 0);
        }
        // (node offset, byte offset, bit)
        let mut cases: Vec<(usize, usize, u8)> = Vec::new();
        // One flip per byte, the bit rotating with the offset (every bit position is hit in
        // every field), plus every bit of each node's 12-byte header.
        for &(off, totlen, _) in &nodes {
            for i in 0..totlen {
                if i < 12 {
                    for bit in 0..8u8 {
                        cases.push((off, off + i, bit));
                    }
                } else {
                    cases.push((off, off + i, ((off / 4 + i) % 8) as u8));
                }
            }
        }
        let results = Mutex::new(Vec::with_capacity(cases.len()));
        let started = std::time::Instant::now();
        par_for(cases.len(), |k| {
            let (node, at, bit) = cases[k];
            let mut img = c.image.clone();
            img[at] ^= 1 << bit;
            let o = judge(&img, &c.opts, node);
            results.lock().unwrap().push((node, at, bit, o));
        });
        let results = results.into_inner().unwrap();
        eprintln!(
            "{}: {} checks in {:?}",
            c.name,
            results.len(),
            started.elapsed()
        );
        let caught = results.iter().filter(|r| r.3 == Outcome::Caught).count();
        let warned = results
            .iter()
            .filter(|r| matches!(r.3, Outcome::Warned(c) if UNCOVERED.contains(&c)))
            .count();
        report.push(format!(
            "{}: {} nodes, {} bytes, {} flips: {} caught (exit 4, error at the node's offset), {} uncovered bytes warned",
            c.name,
            nodes.len(),
            nodes.iter().map(|n| n.1).sum::<usize>(),
            results.len(),
            caught,
            warned
        ));
        for (node, at, bit, o) in &results {
            let ok = match o {
                Outcome::Caught => true,
                Outcome::Warned(code) => UNCOVERED.contains(code),
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{}: node 0x{node:08x}, byte 0x{at:08x} bit {bit}: {o:?}",
                    c.name
                ));
            }
        }
    }
    eprintln!("{}", report.join("\n"));
    assert!(
        failures.is_empty(),
        "{} flips not caught:\n{}",
        failures.len(),
        failures[..failures.len().min(50)].join("\n")
    );
}

#[test]
fn truncated_images_exit_4() {
    if !common::require_root() || !common::require_mtd_utils() {
        return;
    }
    let (_dir, corpus) = corpus();
    for c in &corpus {
        let nodes = node_list(&c.image, c.big);
        // Cut inside nodes: the header, the middle, the last byte, at several nodes.
        let mut cuts = Vec::new();
        for (k, &(off, totlen, _)) in nodes.iter().enumerate().step_by(3) {
            if k == 0 {
                continue;
            }
            cuts.push(off + 6);
            cuts.push(off + totlen / 2);
            cuts.push(off + totlen - 1);
        }
        let dir = common::scratch();
        for cut in cuts {
            let p = dir.path().join("cut.img");
            std::fs::write(&p, &c.image[..cut]).unwrap();
            let e = if c.big { "-b" } else { "-l" };
            let o = fsck(&["-e", "0x2000", e, p.to_str().unwrap()]);
            assert_eq!(
                o.status,
                4,
                "{}: cut at 0x{cut:x}: {}",
                c.name,
                o.stdout_text()
            );
            assert!(
                o.stdout_text().contains("truncated-image"),
                "{}: cut at 0x{cut:x}: {}",
                c.name,
                o.stdout_text()
            );
        }
    }
}

#[test]
fn random_bytes_and_empty_files_exit_8() {
    let dir = common::scratch();
    let empty = dir.path().join("empty.img");
    std::fs::write(&empty, b"").unwrap();
    let o = fsck(&[empty.to_str().unwrap()]);
    assert_eq!(o.status, 8, "{}", o.stderr_text());
    assert!(o.stderr_text().contains("empty"), "{}", o.stderr_text());
    for (seed, len) in [(1u64, 1usize), (2, 4096), (3, 1 << 20), (4, 77_777)] {
        let p = dir.path().join("random.img");
        std::fs::write(&p, common::random(seed, len)).unwrap();
        let o = fsck(&[p.to_str().unwrap()]);
        assert_eq!(o.status, 8, "{len} random bytes: {}", o.stdout_text());
        assert!(
            o.stderr_text().contains("not a JFFS2 image"),
            "{}",
            o.stderr_text()
        );
        let o = fsck(&["-e", "64", "-l", p.to_str().unwrap()]);
        assert_eq!(
            o.status,
            8,
            "{len} random bytes with -e: {}",
            o.stdout_text()
        );
    }
    // Unreadable: a directory, a missing file.
    assert_eq!(fsck(&[dir.path().to_str().unwrap()]).status, 8);
    assert_eq!(fsck(&[dir.path().join("nope").to_str().unwrap()]).status, 8);
    // All 0xFF: a valid empty filesystem.
    let ff = dir.path().join("ff.img");
    std::fs::write(&ff, vec![0xFFu8; 1 << 20]).unwrap();
    let o = fsck(&[ff.to_str().unwrap()]);
    assert_eq!(o.status, 0, "{}", o.stdout_text());
    let _ = Path::new("");
}
