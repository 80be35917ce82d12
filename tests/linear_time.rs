//! Time linear in the image size, shown without a clock: valgrind counts the
//! instructions each tool executes (deterministic for the same binary and input) on hostile
//! images of n, 2n and 4n units. With `I(k)` that count, the growth from 2n to 4n against the
//! growth from n to 2n is 2 for linear work (fixed costs cancel out) and 4 for quadratic work;
//! it must stay below 3.
//!
//! The tools run pinned to one CPU (`taskset -c 0`), so that their thread pools have one
//! thread and no idle worker spins while being counted.

#[path = "common/skip.rs"]
mod skip;

use std::path::Path;
use std::process::Command;

use jffs2::testing::Img;

const ES: usize = 8192;
const S_IFDIR: u32 = 0o040000;

/// An image written node after node (jffs2::testing::Img): 8 KiB blocks without cleanmarkers;
/// a node that would cross an erase block starts the next.
fn new_img() -> Img {
    Img::new().erase_size(ES as u32).cleanmarkers(None)
}

/// One file whose first 256 bytes are overwritten `n` times (every version overlaps every
/// other): the kernel's version resolution.
fn versions(n: u32) -> Vec<u8> {
    let mut m = new_img();
    m.dirent(1, 1, 2, 8, b"f");
    for v in 1..=n {
        m.data(2, v, 256, 0, &[(v % 251) as u8; 256]);
    }
    m.build()
}

/// One directory with `n` files.
fn wide(n: u32) -> Vec<u8> {
    let mut m = new_img();
    for i in 0..n {
        let ino = i + 2;
        m.dirent(1, i + 1, ino, 8, format!("file{i:06}").as_bytes());
        m.data(ino, 1, 1, 0, b"x");
    }
    m.build()
}

/// One name in the root rewritten `n` times, alternating between two inodes.
fn renamed(n: u32) -> Vec<u8> {
    let mut m = new_img();
    m.data(2, 1, 1, 0, b"a");
    m.data(3, 1, 1, 0, b"b");
    for v in 1..=n {
        m.dirent(1, v, 2 + v % 2, 8, b"name");
    }
    m.build()
}

/// A chain of `n` nested directories.
fn deep(n: u32) -> Vec<u8> {
    let mut m = new_img();
    for i in 0..n {
        let ino = i + 2;
        let parent = if i == 0 { 1 } else { ino - 1 };
        m.meta(ino, 1, S_IFDIR | 0o755, 0);
        m.dirent(parent, 1, ino, 4, b"d");
    }
    m.build()
}

/// `n` KiB of pseudo-random bytes with a node magic sprinkled in.
fn garbage(n: u32) -> Vec<u8> {
    let mut s = 0x2545_f491_4f6c_dd1du64;
    let mut v = Vec::with_capacity(n as usize * 1024);
    for i in 0..n as usize * 256 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let w = if i % 61 == 0 { 0xe002_1985 } else { s as u32 };
        v.extend_from_slice(&w.to_le_bytes());
    }
    v
}

/// Instructions valgrind counted for `cmd` (any exit status but a crash).
fn instructions(tool: &str, args: &[&str]) -> u64 {
    let out = Command::new("taskset")
        .args([
            "-c",
            "0",
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
        ])
        .arg(tool)
        .args(args)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run taskset/valgrind ({e}): run scripts/install-test-deps.sh")
        });
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("panicked") && out.status.code().is_some_and(|c| c != 101),
        "{tool} {args:?} crashed: {err}"
    );
    err.lines()
        .find_map(|l| {
            let l = l.split("I   refs:").nth(1)?;
            l.trim().replace(',', "").parse().ok()
        })
        .unwrap_or_else(|| panic!("no instruction count from valgrind: {err}"))
}

fn check(shape: &str, make: fn(u32) -> Vec<u8>, n: u32) {
    let dir = tempfile::tempdir().unwrap();
    let mut imgs = Vec::new();
    for k in [1, 2, 4] {
        let p = dir.path().join(format!("{shape}-{k}.img"));
        std::fs::write(&p, make(n * k)).unwrap();
        imgs.push(p);
    }
    type Args = fn(&Path, &Path) -> Vec<String>;
    let size = |p: &Path| std::fs::metadata(p).map_or(0, |m| m.len());
    let runs: [(&str, &str, Args); 6] = [
        ("jffs2-fsck", env!("CARGO_BIN_EXE_jffs2-fsck"), |i, _| {
            vec![
                "-e".into(),
                "8KiB".into(),
                "-l".into(),
                i.to_string_lossy().into(),
            ]
        }),
        (
            "jffs2-dump --list",
            env!("CARGO_BIN_EXE_jffs2-dump"),
            |i, _| {
                vec![
                    "--erase-size=8KiB".into(),
                    "-l".into(),
                    "--list".into(),
                    i.to_string_lossy().into(),
                ]
            },
        ),
        ("jffs2-dump -c", env!("CARGO_BIN_EXE_jffs2-dump"), |i, _| {
            vec!["-c".into(), i.to_string_lossy().into()]
        }),
        (
            "jffs2-dump --extract",
            env!("CARGO_BIN_EXE_jffs2-dump"),
            |i, o| {
                vec![
                    "--erase-size=8KiB".into(),
                    "-l".into(),
                    format!("--extract={}", o.display()),
                    i.to_string_lossy().into(),
                ]
            },
        ),
        (
            "jffs2-sumtool",
            env!("CARGO_BIN_EXE_jffs2-sumtool"),
            |i, o| {
                vec![
                    "-i".into(),
                    i.to_string_lossy().into(),
                    "-o".into(),
                    o.to_string_lossy().into(),
                    "-e".into(),
                    "8KiB".into(),
                    "-l".into(),
                ]
            },
        ),
        (
            "jffs2-convert",
            env!("CARGO_BIN_EXE_jffs2-convert"),
            |i, o| {
                vec![
                    "--no-progress".into(),
                    "--input-eraseblock=8KiB".into(),
                    "--input-endian=little".into(),
                    "-i".into(),
                    i.to_string_lossy().into(),
                    "-o".into(),
                    o.to_string_lossy().into(),
                ]
            },
        ),
    ];
    let mut report = Vec::new();
    for (name, bin, args) in runs {
        let mut counts = Vec::new();
        for (k, img) in imgs.iter().enumerate() {
            let out = dir.path().join(format!("out-{k}"));
            let _ = std::fs::remove_dir_all(&out);
            let _ = std::fs::remove_file(&out);
            let a = args(img, &out);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            counts.push(instructions(bin, &a));
        }
        let (i1, i2, i4) = (counts[0] as f64, counts[1] as f64, counts[2] as f64);
        let growth = (i4 - i2) / (i2 - i1).max(1.0);
        report.push(format!(
            "{shape} n={n}: {name}: {} / {} / {} instructions, growth ratio {growth:.2}",
            counts[0], counts[1], counts[2]
        ));
        assert!(
            i4 > i2 && i2 > i1,
            "{name} on {shape}: the work does not grow with the image ({counts:?}): the input is not what the test means"
        );
        assert!(
            growth < 3.0,
            "{name} on {shape}: superlinear work, growth ratio {growth:.2} ({counts:?}) for images of {} / {} / {} bytes",
            size(&imgs[0]),
            size(&imgs[1]),
            size(&imgs[2])
        );
    }
    eprintln!("{}", report.join("\n"));
}

#[test]
fn thousands_of_versions_of_one_range() {
    if !(skip::program("valgrind", "valgrind") && skip::program("taskset", "util-linux")) {
        return;
    }
    check("versions", versions, 150);
}

#[test]
fn one_huge_directory() {
    if !(skip::program("valgrind", "valgrind") && skip::program("taskset", "util-linux")) {
        return;
    }
    check("wide", wide, 300);
}

#[test]
fn one_name_rewritten_thousands_of_times() {
    if !(skip::program("valgrind", "valgrind") && skip::program("taskset", "util-linux")) {
        return;
    }
    check("renamed", renamed, 700);
}

#[test]
fn deep_directory_chains() {
    if !(skip::program("valgrind", "valgrind") && skip::program("taskset", "util-linux")) {
        return;
    }
    check("deep", deep, 350);
}

#[test]
fn random_garbage() {
    if !(skip::program("valgrind", "valgrind") && skip::program("taskset", "util-linux")) {
        return;
    }
    check("garbage", garbage, 48);
}
