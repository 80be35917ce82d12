//! Repairs of hostile trees and what convert keeps: directory cycles, directories with two
//! parents, a directory naming itself, the root naming itself — `jffs2-fsck --repair` must
//! write an image that checks clean and `jffs2-convert` must name what it leaves out.

mod common;

#[path = "common/fsck_util.rs"]
mod fsck_util;

use std::path::Path;

use fsck_util::*;
use jffs2::format::{dt, pad4, DirentNode, Endian, InodeNode};

const LE: Endian = Endian::Little;
const ES: u32 = 65536;
const S_IFDIR: u32 = 0o040000;
const S_IFREG: u32 = 0o100000;

/// /a/b with a file each, and b naming a again: a cycle reachable from the root.
fn cycle() -> Vec<u8> {
    let mut i = common::img();
    i.dir(1, 2, b"a", 1)
        .dir(2, 3, b"b", 1)
        .file(2, 10, b"in-a", 2, b"file in a\n")
        .file(3, 11, b"in-b", 2, b"file in b\n")
        .dirent(3, 3, 2, dt::DIR, b"back");
    i.build()
}

/// One directory named from two parents.
fn dir_hard_link() -> Vec<u8> {
    let mut i = common::img();
    i.dir(1, 2, b"p1", 1)
        .dir(1, 3, b"p2", 2)
        .dir(2, 4, b"d", 1)
        .file(4, 10, b"f", 1, b"in d\n")
        .dirent(3, 1, 4, dt::DIR, b"d-again");
    i.build()
}

/// A directory naming itself.
fn self_dir() -> Vec<u8> {
    let mut i = common::img();
    i.dir(1, 6, b"self", 2)
        .file(6, 10, b"f", 1, b"in self\n")
        .dirent(6, 2, 6, dt::DIR, b"me");
    i.build()
}

/// An entry of the root naming the root.
fn root_self_link() -> Vec<u8> {
    let mut i = common::img();
    i.dir(1, 2, b"d", 1)
        .file(1, 10, b"f", 2, b"in root\n")
        .dirent(1, 3, 1, dt::DIR, b"up");
    i.build()
}

const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");

fn tool(bin: &str, args: &[&str]) -> common::Output {
    let mut c = std::process::Command::new(bin);
    c.args(args)
        .env("LC_ALL", "C")
        .stdin(std::process::Stdio::null());
    common::run(c)
}

/// `jffs2-dump --list` of `img`, one vector of fields per line.
fn listing(img: &Path) -> Vec<Vec<String>> {
    let o = tool(
        DUMP,
        &["--erase-size=64KiB", "-l", "--list", img.to_str().unwrap()],
    );
    assert_eq!(o.status, 0, "--list {}: {}", img.display(), o.stderr_text());
    o.stdout_text()
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The listing of the input without the entries at `dropped` (paths as listed), their
/// parent directories one link fewer (Linux counts a directory's `DT_DIR` entries).
fn without(mut list: Vec<Vec<String>>, dropped: &[&str]) -> Vec<Vec<String>> {
    for d in dropped {
        let n = list.len();
        list.retain(|l| l.get(8).map(String::as_str) != Some(d));
        assert_eq!(list.len(), n - 1, "{d} listed once in the input");
        let parent = match d.rfind('/') {
            Some(k) => &d[..k],
            None => ".",
        };
        let l = list
            .iter_mut()
            .find(|l| l.get(8).map(String::as_str) == Some(parent))
            .unwrap_or_else(|| panic!("parent {parent} of {d} listed"));
        let links: u32 = l[2].parse().unwrap();
        l[2] = (links - 1).to_string();
    }
    list
}

/// Repairs and converts `img`: both leave out exactly the entries `dropped` (paths as
/// listed), name them and exit 1; the repaired image checks clean and lists what the input
/// listed without them.
fn repaired(name: &str, img: &[u8], dropped: &[&str]) {
    let dir = common::scratch();
    let inp = dir.path().join(format!("{name}.img"));
    let out = dir.path().join(format!("{name}.repaired"));
    let conv = dir.path().join(format!("{name}.converted"));
    std::fs::write(&inp, img).unwrap();
    let (i, o, c) = (
        inp.to_str().unwrap(),
        out.to_str().unwrap(),
        conv.to_str().unwrap(),
    );
    let before = fsck(&["-e", "64KiB", "-l", i]);
    assert_eq!(before.status, 4, "{name}: the input has errors");

    let r = fsck(&["-e", "64KiB", "-l", &format!("--repair={o}"), i]);
    let err = r.stderr_text();
    assert_eq!(r.status, 1, "{name}: --repair: {err}");
    for d in dropped {
        assert!(
            err.lines()
                .any(|l| l.contains("left out") && l.contains(&format!(" /{d})"))),
            "{name}: --repair names /{d}: {err}"
        );
    }
    let after = fsck(&["-e", "64KiB", "-l", o]);
    assert_eq!(
        after.status,
        0,
        "{name}: the repaired image checks clean: {}{}",
        after.stdout_text(),
        after.stderr_text()
    );
    assert_eq!(listing(&out), without(listing(&inp), dropped), "{name}");

    let cv = tool(
        CONVERT,
        &[
            "--no-progress",
            "--input-eraseblock=64KiB",
            "--input-endian=little",
            "-i",
            i,
            "-o",
            c,
        ],
    );
    let err = cv.stderr_text();
    assert_eq!(cv.status, 1, "{name}: jffs2-convert: {err}");
    for d in dropped {
        assert!(
            err.lines()
                .any(|l| l.contains("left out") && l.contains(&format!(" /{d})"))),
            "{name}: jffs2-convert names /{d}: {err}"
        );
    }
    assert_eq!(
        listing(&conv),
        listing(&out),
        "{name}: convert and repair agree"
    );
}

#[test]
fn repair_breaks_a_cycle_back_to_an_ancestor() {
    repaired("cycle", &cycle(), &["a/b/back"]);
}

#[test]
fn repair_keeps_one_name_of_a_directory_with_two_parents() {
    repaired("dir-hard-link", &dir_hard_link(), &["p2/d-again"]);
}

#[test]
fn repair_drops_a_directory_naming_itself() {
    repaired("self-dir", &self_dir(), &["self/me"]);
}

#[test]
fn repair_drops_the_root_naming_itself() {
    repaired("root-self-link", &root_self_link(), &["up"]);
}

/// 1500 nested directories (paths of 27 000 bytes) with a file at the bottom.
fn deep() -> Vec<u8> {
    let mut i = common::img();
    for d in 0..1500u32 {
        i.dir(
            if d == 0 { 1 } else { d + 1 },
            d + 2,
            b"deeper-and-deeper",
            d + 1,
        );
    }
    i.file(1501, 5000, b"bottom", 1, b"at the bottom\n");
    i.build()
}

#[test]
fn a_deep_tree_is_not_a_cycle() {
    let dir = common::scratch();
    let inp = dir.path().join("deep.img");
    std::fs::write(&inp, deep()).unwrap();
    let i = inp.to_str().unwrap();
    let o = fsck(&["-e", "64KiB", "-l", i]);
    let text = o.stdout_text();
    assert_eq!(o.status, 0, "consistent: {text}{}", o.stderr_text());
    assert!(
        !text.contains("unreachable") && !text.contains("a directory cycle"),
        "{text}"
    );
    let notes: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("path-too-long"))
        .collect();
    assert_eq!(notes.len(), 1, "one note for the subtree: {text}");
    assert!(notes[0].starts_with("INFO "), "{text}");

    // Converted whole: nothing is left out, and the copy checks clean.
    let out = dir.path().join("deep.converted");
    let cv = tool(
        CONVERT,
        &[
            "--no-progress",
            "--input-eraseblock=64KiB",
            "--input-endian=little",
            "-i",
            i,
            "-o",
            out.to_str().unwrap(),
        ],
    );
    assert_eq!(cv.status, 0, "{}", cv.stderr_text());
    let again = fsck(&["-e", "64KiB", "-l", out.to_str().unwrap()]);
    assert_eq!(again.status, 0, "{}", again.stdout_text());
}

/// An image of `blocks` erase blocks packed with versions of one file's first 4 MiB, each
/// node 4 MiB of zeros (the kernel's allocation limit) compressed with `compr`, all but the
/// newest superseded: 64 blocks make the 4 MiB image of 5 800 LZMA nodes that once took
/// fsck a minute.
fn bomb(compr: u8, blocks: usize) -> Vec<u8> {
    let zeros = vec![0u8; 4 << 20];
    let packed = match compr {
        jffs2::compress::COMPR_LZMA => jffs2::compress::lzma_compress(&zeros, 8 << 20),
        _ => {
            // zlib's best level: about 4 KiB for the 4 MiB.
            use std::io::Write;
            let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
            z.write_all(&zeros).unwrap();
            Some((z.finish().unwrap(), zeros.len()))
        }
    }
    .unwrap();
    assert_eq!(packed.1, 4 << 20);
    let mut i = common::img();
    i.dirent(1, 1, 2, dt::REG, b"bomb");
    let per = pad4(68 + packed.0.len() as u32) as usize;
    let count = blocks * ((ES as usize - 12) / per) - 1;
    for v in 0..count as u32 {
        i.inode(
            InodeNode {
                ino: 2,
                version: v + 1,
                mode: S_IFREG | 0o644,
                isize: 4 << 20,
                dsize: 4 << 20,
                csize: packed.0.len() as u32,
                compr,
                ..Default::default()
            },
            &packed.0,
        );
    }
    let mut img = i.build();
    img.resize(blocks.max(5) * ES as usize, 0xFF);
    img
}

/// fsck's work on superseded data is bounded by the image, not by what its nodes claim:
/// counted in bytes decompressed (no clock). Linux never reads superseded data; fsck
/// decompresses it within a budget and names the rest in a note.
#[test]
fn superseded_decompression_bombs_are_bounded() {
    for (name, compr) in [
        ("lzma", jffs2::compress::COMPR_LZMA),
        ("zlib", jffs2::compress::COMPR_ZLIB),
    ] {
        let img = bomb(compr, 8);
        // With JFFS2_TEST_KEEP=1, the 4 MiB image of this shape is kept for timing the
        // binaries on it (docs/SECURITY.md, decompression work bounded).
        if std::env::var_os("JFFS2_TEST_KEEP").is_some_and(|v| v == "1") {
            let work = common::scratch();
            let path = work.path().join(format!("{name}-bombs.img"));
            std::fs::write(path, bomb(compr, 64)).unwrap();
        }
        let opts = jffs2::fsck::Options {
            erase_size: Some(ES),
            endian: Some(LE),
            compare: None,
            progress: None,
        };
        let r = jffs2::fsck::check(&img, &opts).unwrap();
        let bound = (4u64 << 20) + 16 * img.len() as u64;
        assert!(
            r.nodes.data_bytes <= bound,
            "{name}: {} bytes decompressed for a {}-byte image",
            r.nodes.data_bytes,
            img.len()
        );
        // The live node is verified; the others are named, not silently skipped.
        assert!(r.nodes.data_checked >= 1, "{name}");
        let note = r
            .findings
            .iter()
            .find(|f| f.code == "decompression-budget")
            .unwrap_or_else(|| panic!("{name}: {:?}", r.findings));
        assert!(note.message.contains("superseded"), "{}", note.message);
        // 4 MiB nodes: more than any page Linux writes a node of, which is said.
        assert!(
            r.findings
                .iter()
                .any(|f| f.code == "large-data-node" && f.message.contains("4194304 bytes")),
            "{name}: {:?}",
            r.findings
        );
        assert_eq!(r.verdict().exit_code(), 0, "{name}: {:?}", r.findings);
    }
}

/// Erase blocks written by hand: each a cleanmarker, then its nodes; block 0 ends with a
/// valid summary that lists none of them (`sum_num` 0). Block 0 holds the directory `d`
/// and its files `d/f0` .. `d/f4` (12 KiB each), block 1 the file `visible`.
fn empty_summary() -> Vec<u8> {
    let node = |n: InodeNode, data: &[u8]| {
        let mut b = Vec::new();
        n.encode(LE, data, &mut b);
        b
    };
    let dirent = |pino: u32, version: u32, ino: u32, dtype: u8, name: &[u8]| {
        let mut b = Vec::new();
        DirentNode {
            pino,
            version,
            ino,
            dtype,
            ..Default::default()
        }
        .encode(LE, name, &mut b);
        b
    };
    let file = |ino: u32, seed: u64, len: usize| -> Vec<Vec<u8>> {
        let data = common::random(seed, len);
        data.chunks(4096)
            .enumerate()
            .map(|(k, c)| {
                node(
                    InodeNode {
                        ino,
                        version: k as u32 + 1,
                        mode: S_IFREG | 0o644,
                        isize: len as u32,
                        offset: (k * 4096) as u32,
                        dsize: c.len() as u32,
                        csize: c.len() as u32,
                        ..Default::default()
                    },
                    c,
                )
            })
            .collect()
    };
    let mut hidden = vec![
        node(
            InodeNode {
                ino: 2,
                version: 1,
                mode: S_IFDIR | 0o755,
                ..Default::default()
            },
            &[],
        ),
        dirent(1, 1, 2, dt::DIR, b"d"),
    ];
    for k in 0..5u32 {
        hidden.extend(file(10 + k, u64::from(k), 12 << 10));
        hidden.push(dirent(
            2,
            k + 1,
            10 + k,
            dt::REG,
            format!("f{k}").as_bytes(),
        ));
    }
    let mut visible = file(20, 99, 5000);
    visible.push(dirent(1, 2, 20, dt::REG, b"visible"));

    let es = ES as usize;
    let mut img = vec![0xFFu8; 5 * es];
    let mut cm = Vec::new();
    jffs2::format::encode_cleanmarker(LE, 12, &mut cm);
    for b in 0..5 {
        img[b * es..b * es + 12].copy_from_slice(&cm);
    }
    let mut lay = |block: usize, nodes: &[Vec<u8>]| -> usize {
        let mut at = block * es + 12;
        for n in nodes {
            img[at..at + n.len()].copy_from_slice(n);
            at += pad4(n.len() as u32) as usize;
        }
        at
    };
    let end = lay(0, &hidden);
    lay(1, &visible);
    let mut s = Vec::new();
    jffs2::format::SummaryNode {
        cln_mkr: 12,
        ..Default::default()
    }
    .encode(LE, &[], end as u32, ES, &mut s)
    .expect("the summary fits");
    img[end..es].copy_from_slice(&s);
    img
}

/// A valid summary listing no record hides its block from Linux (docs/spec/kernel-jffs2-spec.md §4.3,
/// §4.4: the records are trusted, unlisted nodes are dirt). The readers show what Linux
/// shows; convert and --repair keep that, and name the files valid on flash they leave out.
#[test]
fn files_hidden_by_an_empty_summary_are_named() {
    let dir = common::scratch();
    let inp = dir.path().join("empty-summary.img");
    std::fs::write(&inp, empty_summary()).unwrap();
    let i = inp.to_str().unwrap();
    let names =
        |l: &[Vec<String>]| -> Vec<String> { l.iter().filter_map(|f| f.get(8).cloned()).collect() };
    assert_eq!(names(&listing(&inp)), [".", "visible"], "what Linux shows");
    let f = fsck(&["-e", "64KiB", "-l", i]);
    assert_eq!(f.status, 4, "{}", f.stdout_text());
    assert!(
        f.stdout_text().contains("summary-mismatch"),
        "{}",
        f.stdout_text()
    );

    let hidden = ["/d", "/d/f0", "/d/f1", "/d/f2", "/d/f3", "/d/f4"];
    let out = dir.path().join("converted.img");
    let o = out.to_str().unwrap();
    let cv = tool(
        CONVERT,
        &[
            "--no-progress",
            "--input-eraseblock=64KiB",
            "--input-endian=little",
            "-i",
            i,
            "-o",
            o,
        ],
    );
    let err = cv.stderr_text();
    assert_eq!(cv.status, 1, "{err}");
    assert!(!err.contains(" 0 left out"), "{err}");
    for h in hidden {
        assert!(
            err.lines()
                .any(|l| l.contains("left out") && l.contains(&format!(" {h})"))),
            "jffs2-convert names {h}: {err}"
        );
    }
    assert_eq!(names(&listing(&out)), [".", "visible"]);

    let rep = dir.path().join("repaired.img");
    let r = fsck(&[
        "-e",
        "64KiB",
        "-l",
        &format!("--repair={}", rep.display()),
        i,
    ]);
    let err = r.stderr_text();
    assert_eq!(r.status, 1, "{err}");
    for h in hidden {
        assert!(
            err.lines()
                .any(|l| l.contains("left out") && l.contains(&format!(" {h})"))),
            "--repair names {h}: {err}"
        );
    }
    assert_eq!(
        fsck(&["-e", "64KiB", "-l", rep.to_str().unwrap()]).status,
        0
    );
}

/// `--repair` of an image Linux cannot mount (it wrote it itself: the kernel fixture whose
/// summary makes the mount BUG): OUT holds what the salvage view reads, the run says that
/// Linux would not mount IMAGE, and exits 1 (errors corrected), in the JSON document too.
#[test]
fn repair_of_an_image_linux_cannot_mount_says_so_and_exits_1() {
    let dir = common::scratch();
    let img = kernel_fixtures().join("unmountable/summary-bug-64k.img");
    let out = dir.path().join("repaired.img");
    let (i, o) = (img.to_str().unwrap(), out.to_str().unwrap());
    let r = fsck(&[&format!("--repair={o}"), "--json", i]);
    let err = r.stderr_text();
    assert_eq!(r.status, 1, "{err}");
    assert!(
        err.contains(&format!(
            "--repair: Linux would not mount {i} (kernel BUG: "
        )) && err.contains(&format!("{o} holds what can be read of it")),
        "{err}"
    );
    let j = json_of(&r);
    assert_eq!(j["exit_code"], 1, "{j}");
    assert!(
        j["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["code"] == "mount-failure"),
        "{j}"
    );
    let after = fsck(&[o]);
    assert_eq!(after.status, 0, "{}", after.stdout_text());
    // Every file the salvage view lists, as it lists it.
    let list = |p: &str| {
        let o = tool(DUMP, &["--list", p]);
        assert_eq!(o.status, 0, "{}", o.stderr_text());
        o.stdout_text()
    };
    assert_eq!(list(i), list(o));
}

/// `--repair` names each range of a file that reads as zeros because its data node fails
/// its data CRC (Linux drops the node, §6.2 of the kernel spec): the torn-node fixture.
#[test]
fn repair_names_what_reads_as_zeros_after_a_bad_data_crc() {
    let dir = common::scratch();
    let img = kernel_fixtures().join("powercut-torn-node-16k.img");
    let out = dir.path().join("repaired.img");
    let r = fsck(&[
        &format!("--repair={}", out.to_str().unwrap()),
        img.to_str().unwrap(),
    ]);
    let err = r.stderr_text();
    assert_eq!(r.status, 1, "{err}");
    assert!(
        err.contains(
            "--repair left out (inode #19 /var/log/messages): data: the data node at 0x0000be84"
        ) && err.contains("bytes 12288-12868 read as zeros"),
        "{err}"
    );
    assert!(err.contains(", 1 left out"), "{err}");
}
