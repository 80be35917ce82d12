//! jffs2-sumtool on mtd-utils mkfs.jffs2 images, against mtd-utils' sumtool.
//!
//! For images in several geometries (erase sizes from 8 KiB to 256 KiB and a non-power-of-two
//! one, both byte orders, with and without cleanmarkers, a 16-byte cleanmarker, `-p` and
//! `--pad=SIZE`, xattrs), our output must:
//! * be read by the kernel's mount scan (the core's offline reproduction) through a summary in
//!   every block that holds nodes, with no kernel message;
//! * show, in Debian's `jffs2dump -c`, a summary in every such block listing its nodes, and no
//!   "Wrong" line;
//! * hold exactly the input's nodes (multiset of node bytes, by an independent walk);
//! * show the same filesystem (the core's model of Linux's build and readinode);
//! * take no more erase blocks than mtd-utils' sumtool's output, and no more bytes than its
//!   `-p` output (inputs padded with `--pad=SIZE` keep their size: sumtool drops the padded
//!   blocks, B-14).
//!
//! The sizes are printed (`--nocapture`) for the record.

mod common;
#[path = "common/sumtool.rs"]
mod sumtool_common;

use common::{
    as_we_show, big_endian, mkfs_jffs2, os_args, require_mtd_utils, run, scratch, tree, Kind,
};
use std::process::Command;
use sumtool_common::*;

struct Case {
    mkfs: &'static [&'static str],
    es: usize,
    kind: Kind,
}

const CASES: &[Case] = &[
    Case {
        mkfs: &["-l", "-e", "8KiB"],
        es: 8192,
        kind: Kind::Full,
    },
    Case {
        mkfs: &["-b", "-e", "16KiB"],
        es: 16384,
        kind: Kind::Full,
    },
    Case {
        mkfs: &["-l", "-e", "64KiB", "-n"],
        es: 65536,
        kind: Kind::Full,
    },
    Case {
        mkfs: &["-b", "-e", "128KiB", "-n"],
        es: 131072,
        kind: Kind::Full,
    },
    Case {
        mkfs: &["-l", "-e", "256KiB"],
        es: 262144,
        kind: Kind::Full,
    },
    Case {
        mkfs: &["-l", "-e", "8KiB", "-c", "16"],
        es: 8192,
        kind: Kind::Small,
    },
    Case {
        mkfs: &["-b", "-e", "16KiB", "-p"],
        es: 16384,
        kind: Kind::Small,
    },
    Case {
        mkfs: &["-l", "-e", "64KiB", "--pad=0x200000"],
        es: 65536,
        kind: Kind::Small,
    },
    Case {
        mkfs: &["-b", "-e", "32KiB", "-n", "--pad=500000"],
        es: 32768,
        kind: Kind::Small,
    },
    Case {
        mkfs: &["-l", "-e", "0x2100"],
        es: 0x2100,
        kind: Kind::Small,
    },
    Case {
        mkfs: &["-l", "-e", "16KiB", "--with-xattr"],
        es: 16384,
        kind: Kind::Full,
    },
    Case {
        mkfs: &["-b", "-e", "8KiB", "-n", "--with-xattr", "-x", "zlib"],
        es: 8192,
        kind: Kind::Small,
    },
];

#[test]
fn mkfs_jffs2_images_summarized_like_sumtool_but_better() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let small = tree(Kind::Small);
    let full = tree(Kind::Full);
    let mut table = vec![format!(
        "{:<44} {:>10} {:>10} {:>10} {:>10}  blocks ours/sumtool",
        "mkfs.jffs2 options", "input", "ours", "sumtool", "sumtool -p"
    )];
    for c in CASES {
        let args = os_args(c.mkfs);
        let big = big_endian(&args);
        let what = c.mkfs.join(" ");
        let input = work.path().join("in.img");
        let root = match c.kind {
            Kind::Small => small.path(),
            _ => full.path(),
        };
        let mut m = Command::new(mkfs_jffs2());
        m.env("LC_ALL", "C")
            .args(&args)
            .arg("-r")
            .arg(root)
            .arg("-o")
            .arg(&input);
        let o = run(m);
        assert_eq!(o.status, 0, "mkfs.jffs2 {what}: {}", o.stderr_text());
        let img = std::fs::read(&input).unwrap();
        let no_cm = c.mkfs.contains(&"-n");
        let cm = if c.mkfs.contains(&"16") { 16 } else { 12 };

        // The sumtool options a user passes: the erase size, the byte order, -n.
        let es_arg = format!("{:#x}", c.es);
        let mut st: Vec<&str> = vec!["-e", &es_arg, if big { "-b" } else { "-l" }];
        if no_cm {
            st.push("-n");
        }
        let ours_out = work.path().join("ours.img");
        let o = summarize(true, &input, &ours_out, &st);
        let warnings: Vec<&str> = o
            .stderr_text()
            .lines()
            .filter(|l| !l.contains("cannot be told"))
            .map(|_| "")
            .collect();
        assert!(
            warnings.is_empty(),
            "{what}: unexpected messages: {}",
            o.stderr_text()
        );
        let out = std::fs::read(&ours_out).unwrap();

        // The kernel's view: every block with nodes through its summary, no message.
        let used = assert_kernel_summarized(&what, &out, c.es as u32, big, cm);
        assert!(used > 0, "{what}: no summarised block");
        // jffs2dump: one summary per block with nodes, listing them; nothing Wrong.
        let dv = assert_dump_summarized(&what, &ours_out, big, c.es);
        assert!(
            has_marker(
                &out,
                dv.nodes.keys().last().copied().unwrap_or(0),
                c.es,
                big
            ),
            "{what}: last block without summary"
        );
        // The same nodes, the same filesystem.
        assert_eq!(
            payload_nodes(&img, big),
            payload_nodes(&out, big),
            "{what}: node multiset differs"
        );
        let t_in = kernel_tree(&img, c.es as u32, big, cm);
        let t_out = kernel_tree(&out, c.es as u32, big, cm);
        assert!(t_in.len() > 10, "{what}: input tree too small");
        assert_eq!(t_in, t_out, "{what}: the filesystem differs");
        // Cleanmarkers as in the input (or none with -n).
        let first = nodetype_at(&out, 0, big);
        assert_eq!(first == CLEANMARKER, !no_cm, "{what}: cleanmarker at 0");

        // Sizes against mtd-utils' sumtool.
        let theirs_out = work.path().join("theirs.img");
        summarize(false, &input, &theirs_out, &st);
        let theirs_len = std::fs::metadata(&theirs_out).unwrap().len() as usize;
        let theirs_p = work.path().join("theirs-p.img");
        let mut stp = st.clone();
        stp.push("-p");
        summarize(false, &input, &theirs_p, &stp);
        let theirs_p_len = std::fs::metadata(&theirs_p).unwrap().len() as usize;
        let padded_input = c.mkfs.iter().any(|a| a.starts_with("--pad="));
        if padded_input {
            assert_eq!(out.len(), img.len(), "{what}: --pad size not kept");
        } else {
            assert!(
                blocks(out.len(), c.es) <= blocks(theirs_len, c.es),
                "{what}: {} blocks, sumtool {}",
                blocks(out.len(), c.es),
                blocks(theirs_len, c.es)
            );
            assert!(
                out.len() <= theirs_p_len,
                "{what}: {} bytes, sumtool -p {theirs_p_len}",
                out.len()
            );
        }
        table.push(format!(
            "{:<44} {:>10} {:>10} {:>10} {:>10}  {}/{}",
            what,
            img.len(),
            out.len(),
            theirs_len,
            theirs_p_len,
            blocks(out.len(), c.es),
            blocks(theirs_len, c.es)
        ));
    }
    eprintln!("\n{}\n", table.join("\n"));
}

/// `-v` prints sumtool's listing, line for line, for clean images with the right `-e`.
#[test]
fn verbose_listing_is_sumtools() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let t = tree(Kind::Small);
    for (mkfs, es) in [
        (&["-l", "-e", "8KiB"][..], "8KiB"),
        (&["-b", "-e", "16KiB", "-n"][..], "16KiB"),
        (&["-l", "-e", "64KiB", "-p"][..], "64KiB"),
    ] {
        let args = os_args(mkfs);
        let big = big_endian(&args);
        let input = work.path().join("in.img");
        let mut m = Command::new(mkfs_jffs2());
        m.args(&args).arg("-r").arg(t.path()).arg("-o").arg(&input);
        assert_eq!(run(m).status, 0);
        let st = ["-v", "-e", es, if big { "-b" } else { "-l" }];
        let a = summarize(true, &input, &work.path().join("a"), &st);
        let b = summarize(false, &input, &work.path().join("b"), &st);
        // Names with control characters or invalid UTF-8 are escaped in ours (deliberately).
        assert_eq!(
            a.stdout_text(),
            as_we_show(&b.stdout),
            "{mkfs:?}: -v listing"
        );
        assert!(a.stdout_text().contains("Load next block : 0 bytes read"));
    }
}
