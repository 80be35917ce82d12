//! jffs2-convert from the command line: kernel-written dirty and power-cut images, erase
//! size, byte order, compression and summary changes, raw NAND dumps, JSON, errors and exit
//! codes. What Linux would show is read back with the core crate's model (the same reader
//! `tests/fsck_images.rs` checks against the kernel's recorded listings);
//! `tests/convert_kernel.rs` has the kernel itself mount the outputs.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use jffs2::compress::{COMPR_LZO, COMPR_ZERO, COMPR_ZLIB};
use jffs2::convert::Source;
use jffs2::fs::{Tree, TreeEntry, TreeOptions};

const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");

struct Out {
    status: i32,
    stdout: String,
    stderr: String,
}

fn convert(args: &[&str]) -> Out {
    let o = Command::new(CONVERT)
        .args(args)
        .output()
        .expect("run jffs2-convert");
    Out {
        status: o.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// What Linux would show of an image, and how it reads: (tree, geometry, dirty bytes,
/// superseded nodes found by reading every inode, kernel log).
struct Shown {
    tree: Tree,
    geometry: jffs2::scan::Geometry,
    dirty: u64,
    used: u64,
    superseded: usize,
    log: Vec<String>,
    compressors: Vec<u8>,
}

fn shown(image: &Path) -> Shown {
    shown_as(image, None)
}

/// [`shown`] with a given erase size (an image of a few nodes does not show its own).
fn shown_as(image: &Path, erase_size: Option<u32>) -> Shown {
    let bytes = std::fs::read(image).expect("read image");
    let src = Source::new(bytes, erase_size, None).expect("a JFFS2 image");
    let fs = src.mount().expect("mountable");
    // The build changes the state of refs only: the accounting and the log are the scan's.
    let t = fs.scan().totals();
    let log: Vec<String> = fs.scan().log.iter().map(|m| m.text.clone()).collect();
    let mut superseded = 0;
    let mut compressors = Vec::new();
    for ino in fs.live_inodes() {
        if let Ok(i) = fs.read_inode(ino) {
            superseded += i.obsoleted.len();
            compressors.extend(i.nodes.iter().map(|d| d.compr));
        }
    }
    compressors.sort_unstable();
    compressors.dedup();
    Shown {
        tree: fs.tree(&TreeOptions::listing()),
        geometry: src.geometry,
        dirty: t.dirty,
        used: t.used + t.dirty + t.wasted + t.unchecked,
        superseded,
        log,
        compressors,
    }
}

fn same_tree(what: &str, a: &Tree, b: &Tree) {
    let key = |e: &TreeEntry| String::from_utf8_lossy(&e.path).into_owned();
    let names_a: Vec<String> = a.entries.iter().map(key).collect();
    let names_b: Vec<String> = b.entries.iter().map(key).collect();
    assert_eq!(names_a, names_b, "{what}: paths");
    for (x, y) in a.entries.iter().zip(&b.entries) {
        assert_eq!(x, y, "{what}: {}", key(x));
    }
}

fn fixtures() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    v.sort();
    assert!(v.len() >= 9, "kernel fixtures missing");
    v
}

/// A clean mkfs image of the shipped tree, in a given erase size.
fn mkfs_image(dir: &Path, es: &str, extra: &[&str]) -> PathBuf {
    let out = dir.join(format!("rootfs-{es}.img"));
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/rootfs");
    let o = Command::new(env!("CARGO_BIN_EXE_jffs2-mkfs"))
        .args(["-r", p(&root), "-e", es, "-o", p(&out)])
        .args(extra)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    out
}

#[test]
fn kernel_dirty_and_power_cut_images_keep_their_tree_and_lose_their_dirt() {
    let dir = common::scratch();
    for img in fixtures() {
        let name = img.file_stem().unwrap().to_string_lossy().into_owned();
        let before = shown(&img);
        for (tag, args) in [
            ("same", vec![]),
            ("summary", vec!["--summary"]),
            ("128k", vec!["-e", "128KiB", "--summary"]),
            ("8k-nocm", vec!["-e", "8KiB", "-n", "--no-summary"]),
        ] {
            let out = dir.path().join(format!("{name}-{tag}.img"));
            let mut a = vec!["-i", p(&img), "-o", p(&out), "--json"];
            a.extend(args.iter().copied());
            let r = convert(&a);
            // The torn node's data fails its CRC: the bytes Linux reads as zeros are named.
            let want = i32::from(name.contains("torn"));
            assert_eq!(r.status, want, "{name} {tag}: {}", r.stderr);
            let j: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON report");
            let data_lost = j["dropped"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d["what"].as_str().is_some_and(|w| w.starts_with("data: ")));
            assert_eq!(data_lost, want == 1, "{name} {tag}: {}", j["dropped"]);
            let es = j["output"]["erase_size"].as_u64().map(|v| v as u32);
            let node_bytes = j["output"]["node_bytes"].as_u64().unwrap();
            let after = shown_as(&out, es);
            same_tree(&format!("{name} {tag}"), &before.tree, &after.tree);
            assert_eq!(after.dirty, 0, "{name} {tag}: dirty bytes");
            assert_eq!(after.superseded, 0, "{name} {tag}: superseded nodes");
            // The nodes written take less room than the input's used space (live and dead
            // nodes); without summaries, closed blocks and all, so does the whole output.
            assert!(
                node_bytes < before.used,
                "{name} {tag}: {node_bytes} bytes of nodes, the input used {}",
                before.used
            );
            if !args.contains(&"--summary") {
                assert!(
                    after.used <= before.used,
                    "{name} {tag}: used {} above the input's {}",
                    after.used,
                    before.used
                );
            }
            assert!(
                after.log.iter().all(|l| l.contains("xattr")),
                "{name} {tag}: kernel messages {:?}",
                after.log
            );
            if tag == "128k" {
                assert_eq!(after.geometry.erase_size, 128 * 1024);
            }
        }
    }
}

#[test]
fn every_block_is_summarised_when_asked() {
    let dir = common::scratch();
    let img = fixtures().into_iter().next().unwrap();
    let out = dir.path().join("sum.img");
    let r = convert(&["-i", p(&img), "-o", p(&out), "--summary"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let bytes = std::fs::read(&out).unwrap();
    let src = Source::new(bytes, None, None).unwrap();
    let scan = src.scan().unwrap();
    let with_nodes: Vec<_> = scan.blocks.iter().filter(|b| b.used > 0).collect();
    assert!(!with_nodes.is_empty());
    for b in with_nodes {
        assert_eq!(
            b.summary,
            jffs2::scan::SummaryUse::Used,
            "block at 0x{:08x}",
            b.offset
        );
    }
}

#[test]
fn a_16k_image_moves_to_128k_and_the_byte_order_goes_there_and_back() {
    let dir = common::scratch();
    let small = mkfs_image(dir.path(), "16KiB", &["-l"]);
    let before = shown(&small);
    assert_eq!(before.geometry.erase_size, 16384);
    let big = dir.path().join("128k.img");
    let r = convert(&["-i", p(&small), "-o", p(&big), "-e", "128KiB"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let after = shown_as(&big, Some(131072));
    assert_eq!(after.geometry.erase_size, 131072);
    same_tree("16k -> 128k", &before.tree, &after.tree);

    let be = dir.path().join("be.img");
    let r = convert(&[
        "-i",
        p(&big),
        "-o",
        p(&be),
        "-b",
        "--input-eraseblock=128KiB",
    ]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let shown_be = shown_as(&be, Some(131072));
    assert_eq!(shown_be.geometry.endian, jffs2::format::Endian::Big);
    same_tree("LE -> BE", &before.tree, &shown_be.tree);
    let le = dir.path().join("le.img");
    let r = convert(&[
        "-i",
        p(&be),
        "-o",
        p(&le),
        "-l",
        "--input-eraseblock=128KiB",
    ]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    same_tree("BE -> LE", &before.tree, &shown_as(&le, Some(131072)).tree);
    // Back in the first layout, the clean image is the very same bytes.
    let again = dir.path().join("again.img");
    let r = convert(&["-i", p(&le), "-o", p(&again), "--input-eraseblock=128KiB"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(
        std::fs::read(&le).unwrap() == std::fs::read(&again).unwrap(),
        "a clean image converted to its own layout changed"
    );
}

#[test]
fn zlib_to_lzo_and_back_keeps_every_byte() {
    let dir = common::scratch();
    let zimg = mkfs_image(dir.path(), "64KiB", &["-l", "-n"]);
    let before = shown(&zimg);
    assert!(before.compressors.contains(&COMPR_ZLIB));
    let limg = dir.path().join("lzo.img");
    let r = convert(&["-i", p(&zimg), "-o", p(&limg), "-X", "lzo", "-x", "zlib"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let lz = shown(&limg);
    same_tree("zlib -> lzo", &before.tree, &lz.tree);
    assert!(lz.compressors.contains(&COMPR_LZO), "{:?}", lz.compressors);
    assert!(
        !lz.compressors.contains(&COMPR_ZLIB),
        "{:?}",
        lz.compressors
    );
    let back = dir.path().join("back.img");
    let r = convert(&["-i", p(&limg), "-o", p(&back), "-m", "priority"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    let z = shown(&back);
    same_tree("lzo -> zlib", &before.tree, &z.tree);
    assert!(
        z.compressors
            .iter()
            .all(|c| matches!(*c, COMPR_ZLIB | COMPR_ZERO | 0 | 2)),
        "{:?}",
        z.compressors
    );
}

#[test]
fn a_raw_nand_dump_with_oob_converts() {
    let dir = common::scratch();
    let img = mkfs_image(dir.path(), "128KiB", &["-l", "-n", "-p"]);
    let data = std::fs::read(&img).unwrap();
    let mut raw = Vec::new();
    for page in data.chunks(2048) {
        raw.extend_from_slice(page);
        raw.extend_from_slice(&[0xA5; 64]);
    }
    let dump = dir.path().join("nand.bin");
    std::fs::write(&dump, &raw).unwrap();
    let out = dir.path().join("from-nand.img");
    let r = convert(&["-i", p(&dump), "-o", p(&out), "--oobsize=64"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    same_tree("nand dump", &shown(&img).tree, &shown(&out).tree);
}

#[test]
fn json_report_and_the_input_is_never_modified() {
    let dir = common::scratch();
    let img = fixtures().into_iter().next().unwrap();
    let copy = dir.path().join("in.img");
    std::fs::copy(&img, &copy).unwrap();
    let before = std::fs::read(&copy).unwrap();
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&copy), "-o", p(&out), "--json", "--summary"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(&copy).unwrap(), before, "input modified");
    let j: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(j["output"]["summary"], true);
    assert_eq!(
        j["output"]["bytes"].as_u64(),
        Some(std::fs::metadata(&out).unwrap().len())
    );
    assert!(j["inodes"].as_u64().unwrap() > 0);
    assert!(j["dropped"].as_array().unwrap().is_empty());
    // The same file as input and output: the input is read whole first, then replaced.
    let r = convert(&["-i", p(&copy), "-o", p(&copy)]);
    assert_eq!(r.status, 0, "{}", r.stderr);
}

#[test]
fn errors_name_the_file_and_use_fsck_style_codes() {
    let dir = common::scratch();
    let r = convert(&["--help"]);
    assert_eq!(r.status, 0);
    assert!(r.stdout.contains("--input-eraseblock") && r.stdout.contains("Exit status"));
    let r = convert(&["-o", "/dev/null"]);
    assert_eq!(r.status, 16, "{}", r.stderr);
    let r = convert(&["-i", "a", "-o", "b", "--bogus"]);
    assert_eq!(r.status, 16, "{}", r.stderr);
    let junk = dir.path().join("junk.bin");
    std::fs::write(&junk, vec![0x5Au8; 100_000]).unwrap();
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&junk), "-o", p(&out)]);
    assert_eq!(r.status, 8, "{}", r.stderr);
    assert!(
        r.stderr.contains("junk.bin") && r.stderr.contains("not a JFFS2 image"),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "an output was left behind");
    let missing = dir.path().join("missing.img");
    let r = convert(&["-i", p(&missing), "-o", p(&out)]);
    assert_eq!(r.status, 8);
    assert!(r.stderr.contains("missing.img"), "{}", r.stderr);
    let img = fixtures().into_iter().next().unwrap();
    // As mkfs.jffs2: a too small erase size is raised to 8 KiB, with a warning.
    let r = convert(&["-i", p(&img), "-o", p(&out), "-e", "4KiB"]);
    assert_eq!(r.status, 0, "{}", r.stderr);
    assert!(r.stderr.contains("Increasing to 8KiB"), "{}", r.stderr);
    std::fs::remove_file(&out).unwrap();
    let r = convert(&["-i", p(&img), "-o", p(&out), "-e", "10001"]);
    assert_eq!(r.status, 8, "{}", r.stderr);
    assert!(!out.exists());
}

#[test]
fn what_linux_cannot_read_is_left_out_and_named() {
    use jffs2::format::{dt, DirentNode, Endian, InodeNode};
    use jffs2::layout::{BlockWriter, EndPad, LayoutConfig};
    let e = Endian::Little;
    let mut nodes = Vec::new();
    let mut b = Vec::new();
    DirentNode {
        pino: 1,
        version: 1,
        ino: 2,
        dtype: dt::REG,
        ..Default::default()
    }
    .encode(e, b"fine", &mut b);
    nodes.push(b.clone());
    b.clear();
    InodeNode {
        ino: 2,
        version: 1,
        mode: 0o100644,
        isize: 3,
        dsize: 3,
        ..Default::default()
    }
    .encode(e, b"abc", &mut b);
    nodes.push(b.clone());
    // A character device with two data nodes: Linux cannot read it (-EIO).
    for (version, ofs) in [(1, 0), (2, 2)] {
        b.clear();
        InodeNode {
            ino: 3,
            version,
            mode: 0o020600,
            isize: 4,
            offset: ofs,
            dsize: 2,
            ..Default::default()
        }
        .encode(e, &[1, 2], &mut b);
        nodes.push(b.clone());
    }
    b.clear();
    DirentNode {
        pino: 1,
        version: 2,
        ino: 3,
        dtype: dt::CHR,
        ..Default::default()
    }
    .encode(e, b"broken", &mut b);
    nodes.push(b.clone());
    let mut w = BlockWriter::new(
        Vec::new(),
        LayoutConfig {
            endian: e,
            erase_size: 16384,
            cleanmarker: Some(12),
            summary: false,
        },
    );
    for n in &nodes {
        w.prepare(n.len() as u32, 0).unwrap();
        w.write_node(n).unwrap();
    }
    let (mut img, _) = w.finish(EndPad::Block).unwrap();
    img.resize(5 * 16384, 0xFF);
    let dir = common::scratch();
    let input = dir.path().join("bad.img");
    std::fs::write(&input, &img).unwrap();
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&input), "-o", p(&out)]);
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("/broken") && r.stderr.contains("#3"),
        "{}",
        r.stderr
    );
    let after = shown(&out);
    let names: Vec<String> = after
        .tree
        .entries
        .iter()
        .map(|e| String::from_utf8_lossy(&e.path).into_owned())
        .collect();
    assert_eq!(names, [".", "fine"]);
}

/// The content of every regular file of `fs`, by path.
fn contents(fs: &jffs2::fs::Fs) -> Vec<(String, Vec<u8>)> {
    let tree = fs.tree(&TreeOptions::listing());
    tree.entries
        .iter()
        .filter(|e| e.kind == jffs2::fs::InodeKind::File)
        .map(|e| {
            let mut path = b"/".to_vec();
            path.extend_from_slice(&e.path);
            let data = fs.read_file(&path).expect("readable");
            (String::from_utf8_lossy(&e.path).into_owned(), data)
        })
        .collect()
}

#[test]
fn data_with_a_bad_crc_is_named_with_what_reads_as_zeros() {
    let dir = common::scratch();
    let torn =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel/powercut-torn-node-16k.img");
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&torn), "-o", p(&out)]);
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("inode #19 /var/log/messages")
            && r.stderr.contains("data node at 0x0000be84")
            && r.stderr.contains("bytes 12288-12868 read as zeros"),
        "{}",
        r.stderr
    );
    // The output reads as Linux reads the input: zeros there.
    let before = jffs2::Image::open(&torn).unwrap();
    let after = jffs2::Image::open(&out).unwrap();
    let (a, b) = (before.mount().unwrap(), after.mount().unwrap());
    assert_eq!(contents(&a), contents(&b));
    let messages = b.read_file(b"/var/log/messages").unwrap();
    assert!(messages[12288..12869].iter().all(|&x| x == 0));
}

#[test]
fn data_with_a_bad_crc_over_older_data_is_named() {
    use jffs2::format::{dt, DirentNode, Endian, InodeNode};
    use jffs2::layout::{BlockWriter, EndPad, LayoutConfig};
    let e = Endian::Little;
    let mut nodes = Vec::new();
    let mut b = Vec::new();
    DirentNode {
        pino: 1,
        version: 1,
        ino: 2,
        dtype: dt::REG,
        ..Default::default()
    }
    .encode(e, b"f", &mut b);
    nodes.push(b.clone());
    for (version, fill) in [(1, b'A'), (2, b'B')] {
        b.clear();
        InodeNode {
            ino: 2,
            version,
            mode: 0o100644,
            isize: 100,
            offset: 0,
            dsize: 100,
            ..Default::default()
        }
        .encode(e, &[fill; 100], &mut b);
        nodes.push(b.clone());
    }
    // The newer node's data CRC fails: Linux shows the older data under it.
    let last = nodes.last_mut().unwrap();
    last[60] ^= 1;
    let mut w = BlockWriter::new(
        Vec::new(),
        LayoutConfig {
            endian: e,
            erase_size: 16384,
            cleanmarker: Some(12),
            summary: false,
        },
    );
    for n in &nodes {
        w.prepare(n.len() as u32, 0).unwrap();
        w.write_node(n).unwrap();
    }
    let (mut img, _) = w.finish(EndPad::Block).unwrap();
    img.resize(5 * 16384, 0xFF);
    let dir = common::scratch();
    let input = dir.path().join("crc.img");
    std::fs::write(&input, &img).unwrap();
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&input), "-o", p(&out), "--json"]);
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("inode #2 /f")
            && r.stderr.contains("bytes 0-99 of the file")
            && r.stderr.contains("bytes 0-99 show older data"),
        "{}",
        r.stderr
    );
    let j: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert_eq!(j["dropped"][0]["path"], "/f", "{j}");
    let fs = Source::new(std::fs::read(&out).unwrap(), None, None).unwrap();
    let fs = fs.mount().unwrap();
    assert_eq!(fs.read_data(2, 0, 200).unwrap(), [b'A'; 100]);
}

#[test]
fn an_image_linux_cannot_mount_is_converted_and_said() {
    let dir = common::scratch();
    let bad = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kernel/unmountable/summary-bug-64k.img");
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&bad), "-o", p(&out), "--json"]);
    assert_eq!(r.status, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("Linux would not mount the input (kernel BUG: ")
            && r.stderr.contains("converting what can be read of it"),
        "{}",
        r.stderr
    );
    let j: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON");
    assert!(
        j["unmountable"]
            .as_str()
            .is_some_and(|u| u.contains("kernel BUG")),
        "{j}"
    );
    // The output mounts, with everything the salvage view of the input reads.
    let salvage = jffs2::Image::open(&bad).unwrap();
    let (before, refused) = salvage.salvage();
    assert!(refused.is_some());
    let after = shown(&out);
    same_tree(
        "unmountable",
        &before.tree(&TreeOptions::listing()),
        &after.tree,
    );
    assert!(
        after.log.iter().all(|l| l.contains("xattr")),
        "{:?}",
        after.log
    );
    let converted = jffs2::Image::open(&out).unwrap();
    assert_eq!(contents(&before), contents(&converted.mount().unwrap()));
    // jffs2-dump's warning gives the reason as text.
    let o = Command::new(env!("CARGO_BIN_EXE_jffs2-dump"))
        .args(["--list", p(&bad)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("Linux would refuse to mount this image: kernel BUG: ")
            && !err.contains("Other("),
        "{err}"
    );
}

#[test]
fn an_image_nothing_can_be_read_of_is_still_refused() {
    // One INCOMPAT node of a type Linux does not know, and nothing else.
    let mut img = Vec::new();
    img.extend_from_slice(&0x1985u16.to_le_bytes());
    img.extend_from_slice(&0xE0FFu16.to_le_bytes());
    img.extend_from_slice(&12u32.to_le_bytes());
    let c = jffs2::crc::crc32(&img);
    img.extend_from_slice(&c.to_le_bytes());
    img.resize(5 * 16384, 0xFF);
    let dir = common::scratch();
    let input = dir.path().join("incompat.img");
    std::fs::write(&input, &img).unwrap();
    let out = dir.path().join("out.img");
    let r = convert(&["-i", p(&input), "-o", p(&out)]);
    assert_eq!(r.status, 8, "{}", r.stderr);
    assert!(
        r.stderr.contains("Linux would not mount the input")
            && r.stderr.contains("nothing of the filesystem can be read"),
        "{}",
        r.stderr
    );
    assert!(!out.exists());
}
