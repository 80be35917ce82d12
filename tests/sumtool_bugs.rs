//! Regression tests for mtd-utils sumtool's bugs (`docs/spec/mtd-utils-spec.md` §8 B-13, B-14):
//! each runs mtd-utils' sumtool on the image that shows the bug (to document it) and checks
//! that jffs2-sumtool handles the same image correctly.

mod common;
#[path = "common/sumtool.rs"]
mod sumtool_common;

use std::path::Path;
use std::process::Command;

use common::{mkfs_jffs2, random, require_mtd_utils, run, scratch, tree, Kind};
use sumtool_common::*;

fn mkfs(args: &[&str], root: &Path, out: &Path) -> Vec<u8> {
    let mut c = Command::new(mkfs_jffs2());
    c.env("LC_ALL", "C")
        .args(args)
        .arg("-r")
        .arg(root)
        .arg("-o")
        .arg(out);
    let o = run(c);
    assert_eq!(o.status, 0, "mkfs.jffs2 {args:?}: {}", o.stderr_text());
    std::fs::read(out).unwrap()
}

fn args_io<'a>(i: &'a Path, o: &'a Path, rest: &[&'a str]) -> Vec<&'a std::ffi::OsStr> {
    let mut v: Vec<&std::ffi::OsStr> =
        vec!["-i".as_ref(), i.as_os_str(), "-o".as_ref(), o.as_os_str()];
    v.extend(rest.iter().map(|s| std::ffi::OsStr::new(*s)));
    v
}

/// B-14: with a wrong (smaller) -e, sumtool reads the image in chunks that split nodes and
/// silently drops them. We refuse, naming the detected size; forced, we read the image in its
/// own geometry and re-block it without losing a node.
#[test]
fn b14_node_straddling_a_read_chunk() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let t = tree(Kind::Full);
    let input = work.path().join("in.img");
    let img = mkfs(&["-l", "-e", "64KiB"], t.path(), &input);
    let want = payload_nodes(&img, false);

    // mtd-utils: nodes lost (the spec verified a 4 KiB data node lost with -e 8KiB).
    let theirs = work.path().join("theirs.img");
    let o = theirs_run(&input, &theirs, &["-e", "8KiB", "-l"]);
    let lost =
        want.len() as i64 - payload_nodes(&std::fs::read(&theirs).unwrap(), false).len() as i64;
    eprintln!(
        "mtd-utils sumtool -e 8KiB on a 64 KiB image: {lost} node(s) lost; exit {}",
        o.status
    );

    // Ours: refused, nothing written, the message names the detected size.
    let ours_out = work.path().join("ours.img");
    let o = ours(&args_io(&input, &ours_out, &["-e", "8KiB", "-l"]));
    assert_eq!(o.status, 255);
    let err = o.stderr_text();
    assert!(
        err.contains("input was built with 64 KiB erase blocks")
            && err.contains("-e 0x10000")
            && err.contains("--force-eraseblock"),
        "{err}"
    );
    assert!(!ours_out.exists(), "nothing may be written on a refusal");

    // Forced: re-blocked into 8 KiB blocks, every node kept, a valid 8 KiB image.
    let o = ours(&args_io(
        &input,
        &ours_out,
        &["-e", "8KiB", "-l", "--force-eraseblock"],
    ));
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(
        o.stderr_text().contains("re-blocking"),
        "{}",
        o.stderr_text()
    );
    let out = std::fs::read(&ours_out).unwrap();
    assert_eq!(payload_nodes(&out, false), want);
    assert_kernel_summarized("forced 8KiB", &out, 8192, false, 12);
    assert_eq!(
        kernel_tree(&img, 65536, false, 12),
        kernel_tree(&out, 8192, false, 12)
    );
}

fn theirs_run(i: &Path, o: &Path, rest: &[&str]) -> common::Output {
    theirs(&args_io(i, o, rest))
}

/// Yocto's `sum.jffs2` runs `sumtool -i X -o Y` without -e on 256 KiB images: sumtool
/// assumes 64 KiB and wrecks the image. Ours uses the erase size the input was built with
/// (detected with confidence), says so, and writes what `-e 0x40000` writes; a given `-e`
/// that disagrees stays an error that says what to pass.
#[test]
fn yocto_default_erase_size_on_a_256k_image() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let t = tree(Kind::Full);
    let input = work.path().join("in.img");
    let img = mkfs(&["-l", "-e", "256KiB", "-n"], t.path(), &input);
    let out = work.path().join("out.img");
    let o = ours(&args_io(&input, &out, &[]));
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    let err = o.stderr_text();
    assert!(
        err.starts_with("jffs2-sumtool: warning!: ")
            && err.contains("was built with 256 KiB erase blocks; -e was not given (sumtool's default is 64 KiB): using 256 KiB"),
        "{err}"
    );
    let defaulted = std::fs::read(&out).unwrap();
    assert_eq!(payload_nodes(&defaulted, false), payload_nodes(&img, false));
    // With -e it writes the same bytes, without the warning.
    let explicit_out = work.path().join("explicit.img");
    let o = ours(&args_io(&input, &explicit_out, &["-e", "0x40000"]));
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(!o.stderr_text().contains("warning"), "{}", o.stderr_text());
    let s = std::fs::read(&explicit_out).unwrap();
    assert!(
        s == defaulted,
        "-e 0x40000 and the detected erase size differ"
    );
    // A given -e that disagrees: an error naming what to pass, the output untouched.
    std::fs::write(&out, b"previous contents").unwrap();
    let o = ours(&args_io(&input, &out, &["-e", "64KiB"]));
    assert_eq!(o.status, 255);
    let err = o.stderr_text();
    assert!(
        err.starts_with("jffs2-sumtool: error!: input was built with 256 KiB erase blocks (detected with ")
            && err.contains(" confidence); -e 64 KiB would re-block it: pass -e 0x40000, or --force-eraseblock to proceed"),
        "{err}"
    );
    assert!(!err.contains("-e defaults to 64KiB"), "{err}");
    assert_eq!(
        std::fs::read(&out).unwrap(),
        b"previous contents",
        "output untouched"
    );
    // mtd-utils: the 64 KiB layout of a 256 KiB image is read by the kernel as a broken one.
    let theirs_out = work.path().join("theirs.img");
    theirs_run(&input, &theirs_out, &[]);
    let th = std::fs::read(&theirs_out).unwrap();
    let scan = kernel_scan(&th, 262144, false, 12);
    eprintln!(
        "mtd-utils sumtool without -e on a 256 KiB image: {} kernel messages when mounted",
        scan.log.len()
    );
}

/// B-14: erase blocks that were only padding (mkfs.jffs2 --pad) vanish in sumtool's output.
/// Ours keeps the input's size: whole blocks of cleanmarker + 0xFF (or 0xFF with -n).
#[test]
fn b14_padded_empty_blocks_are_kept() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let t = tree(Kind::Small);
    for (args, es) in [
        (&["-l", "-e", "64KiB", "--pad=0x100000"][..], 65536usize),
        (&["-b", "-e", "16KiB", "-n", "--pad=300000"][..], 16384),
    ] {
        let big = args[0] == "-b";
        let input = work.path().join("in.img");
        let img = mkfs(args, t.path(), &input);
        let es_s = format!("{es:#x}");
        let st = ["-e", es_s.as_str(), if big { "-b" } else { "-l" }];
        let theirs_out = work.path().join("theirs.img");
        theirs_run(&input, &theirs_out, &st);
        let th = std::fs::metadata(&theirs_out).unwrap().len() as usize;
        assert!(th < img.len(), "sumtool keeps the padding now? {th}");
        let ours_out = work.path().join("ours.img");
        summarize(true, &input, &ours_out, &st);
        let out = std::fs::read(&ours_out).unwrap();
        assert_eq!(out.len(), img.len(), "{args:?}");
        // The trailing blocks are what mkfs.jffs2 wrote there.
        let used = blocks(nodes_end(&out, big), es);
        for b in used..out.len() / es {
            let blk = &out[b * es..(b + 1) * es];
            let orig = &img[b * es..(b + 1) * es];
            assert_eq!(blk, orig, "{args:?}: padding block {b}");
        }
    }
}

/// End of the last summary node (the data part of an image).
fn nodes_end(img: &[u8], big: bool) -> usize {
    common::nodes(img, common::Endian { big })
        .iter()
        .filter(|n| n.nodetype == SUMMARY)
        .map(|n| n.offset + n.totlen as usize)
        .max()
        .unwrap_or(0)
}

/// B-14: sumtool writes no summary for the last block unless it is nearly full, and none at
/// all for an image of one block. Ours summarises every block that holds nodes.
#[test]
fn b14_last_block_and_single_block_images_are_summarized() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    for (kind, args, es) in [
        (Kind::Small, &["-l", "-e", "16KiB"][..], 16384usize),
        (Kind::Single, &["-l", "-e", "64KiB"][..], 65536),
        (Kind::Single, &["-b", "-e", "64KiB", "-n"][..], 65536),
    ] {
        let big = args[0] == "-b";
        let t = tree(kind);
        let input = work.path().join("in.img");
        let img = mkfs(args, t.path(), &input);
        let es_s = format!("{es:#x}");
        let mut st = vec!["-e", es_s.as_str(), if big { "-b" } else { "-l" }];
        if args.contains(&"-n") {
            st.push("-n");
        }
        let theirs_out = work.path().join("theirs.img");
        theirs_run(&input, &theirs_out, &st);
        let th = std::fs::read(&theirs_out).unwrap();
        let th_last = blocks(th.len(), es) - 1;
        let ours_out = work.path().join("ours.img");
        summarize(true, &input, &ours_out, &st);
        let out = std::fs::read(&ours_out).unwrap();
        let n = out.len() / es;
        assert!(n >= 1);
        for b in 0..n {
            assert!(has_marker(&out, b, es, big), "{args:?}: block {b} of {n}");
        }
        let summarized = assert_kernel_summarized("last block", &out, es as u32, big, 12);
        assert_eq!(summarized, n);
        eprintln!(
            "{kind:?} {args:?}: input {} bytes; sumtool {} bytes, last block summarised: {}; ours {} blocks, all summarised",
            img.len(),
            th.len(),
            has_marker(&th, th_last, es, big),
            n
        );
        if kind == Kind::Single {
            assert_eq!(n, 1);
            assert!(
                !has_marker(&th, 0, es, big),
                "sumtool summarises single blocks now?"
            );
        }
    }
}

/// B-13: sumtool counts each node's size twice when deciding whether it fits, wasting space.
/// Ours packs tightly: a block is closed only when its next node, with the summary grown by
/// that node's record, really does not fit (the kernel's own reservation).
#[test]
fn b13_no_double_counted_sizes() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let t = tree(Kind::Full);
    let input = work.path().join("in.img");
    let es = 8192usize;
    mkfs(&["-l", "-e", "8KiB"], t.path(), &input);
    let ours_out = work.path().join("ours.img");
    summarize(true, &input, &ours_out, &["-e", "8KiB"]);
    let theirs_out = work.path().join("theirs.img");
    theirs_run(&input, &theirs_out, &["-e", "8KiB"]);
    let out = std::fs::read(&ours_out).unwrap();
    let th = std::fs::metadata(&theirs_out).unwrap().len() as usize;
    assert!(blocks(out.len(), es) < blocks(th, es));
    // Tightness, by an independent walk: for every block but the last, the first node of
    // the next block would not have fitted before the summary.
    let e = common::Endian { big: false };
    let all = common::nodes(&out, e);
    let rec = |n: &common::RawNode| -> usize {
        match n.nodetype {
            0xE002 | 0xE008 => 18,
            0xE001 => 24 + n.bytes[28] as usize,
            0xE009 => 6,
            _ => 0,
        }
    };
    let pad4 = |x: usize| (x + 3) & !3;
    let nblocks = out.len() / es;
    let mut checked = 0;
    for b in 0..nblocks - 1 {
        let inb: Vec<&common::RawNode> = all
            .iter()
            .filter(|n| n.offset / es == b && rec(n) > 0)
            .collect();
        let Some(sum) = all
            .iter()
            .find(|n| n.offset / es == b && n.nodetype == SUMMARY)
        else {
            continue;
        };
        let Some(next) = all.iter().find(|n| n.offset / es == b + 1 && rec(n) > 0) else {
            continue;
        };
        let used = sum.offset - b * es;
        let records: usize = inb.iter().map(|n| rec(n)).sum();
        let need = pad4(next.totlen as usize) + pad4(records + rec(next) + 40);
        assert!(
            used + need > es,
            "block {b}: the next node ({} bytes) would have fitted (used {used}, records {records})",
            next.totlen
        );
        checked += 1;
    }
    assert!(checked > 10);
}

/// B-13: one node nearly filling a block (small blocks, large pages of incompressible data)
/// makes sumtool abort with "out of memory" and an empty output. Ours writes such a node into a
/// block without a summary (the kernel scans that block fully) and keeps every node.
#[test]
fn b13_node_nearly_filling_a_block() {
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let root = work.path().join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("random"), random(5, 100_000)).unwrap();
    std::fs::write(root.join("small"), b"small file\n").unwrap();
    let input = work.path().join("in.img");
    let img = mkfs(&["-l", "-e", "8KiB", "-s", "16384"], &root, &input);
    let theirs_out = work.path().join("theirs.img");
    let o = theirs_run(&input, &theirs_out, &["-e", "8KiB"]);
    eprintln!(
        "mtd-utils sumtool: exit {}, {:?}, output {} bytes",
        o.status,
        o.stderr_text().trim(),
        std::fs::metadata(&theirs_out).map(|m| m.len()).unwrap_or(0)
    );
    let ours_out = work.path().join("ours.img");
    let o = summarize(true, &input, &ours_out, &["-e", "8KiB", "-v"]);
    let out = std::fs::read(&ours_out).unwrap();
    assert_eq!(payload_nodes(&out, false), payload_nodes(&img, false));
    assert!(o.stderr_text().contains("without"), "{}", o.stderr_text());
    let s = kernel_scan(&out, 8192, false, 12);
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(
        kernel_tree(&img, 8192, false, 12),
        kernel_tree(&out, 8192, false, 12)
    );
}

/// mtd-utils' sumtool "resurrects" obsolete nodes (it sets the ACCURATE bit in its buffer).
/// On kernel-written images (obsolete nodes, superseded nodes, power cuts), ours carries over
/// no obsolete node and the kernel's view of the filesystem is unchanged.
#[test]
fn kernel_written_images_keep_their_filesystem() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let work = scratch();
    let mut n = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "img") {
            continue;
        }
        let meta: String = std::fs::read_to_string(p.with_extension("json")).unwrap();
        let es: u32 = meta
            .split("\"erase_size\":")
            .nth(1)
            .and_then(|r| r.trim_start().split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|v| v.parse().ok())
            .expect("erase_size in the json");
        let img = std::fs::read(&p).unwrap();
        let out_path = work.path().join("out.img");
        let es_s = es.to_string();
        let o = ours(&args_io(&p, &out_path, &["-e", &es_s, "-l"]));
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        assert_eq!(o.status, 0, "{name}: {}", o.stderr_text());
        let out = std::fs::read(&out_path).unwrap();
        assert_eq!(
            obsolete_nodes(&out, false),
            0,
            "{name}: obsolete node carried over"
        );
        assert!(
            out.len() >= img.len(),
            "{name}: output smaller than the partition"
        );
        assert_kernel_summarized(&name, &out, es, false, 12);
        assert_eq!(
            kernel_tree(&img, es, false, 12),
            kernel_tree(&out, es, false, 12),
            "{name}: the filesystem differs"
        );
        eprintln!(
            "{name}: {} obsolete nodes in, 0 out; warnings: {}",
            obsolete_nodes(&img, false),
            o.stderr_text().trim()
        );
        n += 1;
    }
    assert!(n >= 5);
}

/// mtd-utils' sumtool sets the ACCURATE bit of every node it copies, so a node the kernel had
/// obsoleted on flash comes back. Here the live dirent of a file is obsoleted (as NOR flash
/// does: the type's ACCURATE bit cleared, CRCs unchanged): the kernel no longer shows the file;
/// after mtd-utils' sumtool it shows it again, after ours it does not.
#[test]
fn obsolete_nodes_are_not_resurrected() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let t = tree(Kind::Small);
    let input = work.path().join("in.img");
    let mut img = mkfs(&["-l", "-e", "16KiB"], t.path(), &input);
    let e = common::Endian { big: false };
    let victim = common::nodes(&img, e)
        .into_iter()
        .find(|n| n.nodetype == 0xE001 && common::dirent_info(n, e).pino == 1)
        .expect("a dirent in the root");
    let name = common::name_text(&common::dirent_info(&victim, e).name);
    let path = name.clone();
    assert!(
        kernel_tree(&img, 16384, false, 12)
            .iter()
            .any(|e| e.path == path.as_bytes()),
        "{name} is in the kernel's view before"
    );
    let t16 = 0xE001u16 & !0x2000;
    img[victim.offset + 2..victim.offset + 4].copy_from_slice(&t16.to_le_bytes());
    std::fs::write(&input, &img).unwrap();
    let before = kernel_tree(&img, 16384, false, 12);
    assert!(
        before.iter().all(|e| e.path != path.as_bytes()),
        "{name} should be gone from the kernel's view"
    );

    let ours_out = work.path().join("ours.img");
    summarize(true, &input, &ours_out, &["-e", "16KiB"]);
    let out = std::fs::read(&ours_out).unwrap();
    assert_eq!(kernel_tree(&out, 16384, false, 12), before);
    assert_eq!(obsolete_nodes(&out, false), 0);

    let theirs_out = work.path().join("theirs.img");
    theirs_run(&input, &theirs_out, &["-e", "16KiB"]);
    let th = std::fs::read(&theirs_out).unwrap();
    let after = kernel_tree(&th, 16384, false, 12);
    let back = after.iter().any(|e| e.path == path.as_bytes());
    eprintln!(
        "mtd-utils sumtool: {name} {} after summarising",
        if back { "is back" } else { "stays deleted" }
    );
}
