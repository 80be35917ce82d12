//! `jffs2-mkfs --summary` gives the same bytes as `jffs2-mkfs`
//! followed by `jffs2-sumtool` with the same geometry — over erase sizes, byte orders,
//! cleanmarker options, `-p` / `--pad=SIZE`, xattrs, page sizes that make nodes too large for a
//! summary, and an empty tree.

mod common;
#[path = "common/sumtool.rs"]
mod sumtool_common;

use common::{big_endian, os_args, run, scratch, tree, Kind, Tool};
use sumtool_common::*;

fn mkfs(args: &[&str], root: &std::path::Path, out: &std::path::Path) {
    let mut c = Tool::Ours.command();
    c.args(args).arg("-r").arg(root).arg("-o").arg(out);
    let o = run(c);
    assert_eq!(o.status, 0, "jffs2-mkfs {args:?}: {}", o.stderr_text());
}

#[test]
fn mkfs_summary_equals_mkfs_then_sumtool() {
    if !(common::require_root()) {
        return;
    }
    let work = scratch();
    let small = tree(Kind::Small);
    let full = tree(Kind::Full);
    let empty = tree(Kind::Empty);
    let cases: &[(&[&str], &str, Kind)] = &[
        (&["-l", "-e", "8KiB"], "8KiB", Kind::Full),
        (&["-b", "-e", "16KiB"], "16KiB", Kind::Full),
        (&["-l", "-e", "64KiB", "-n"], "64KiB", Kind::Full),
        (&["-b", "-e", "128KiB"], "128KiB", Kind::Full),
        (&["-l", "-e", "256KiB", "-n"], "256KiB", Kind::Small),
        (&["-l", "-e", "8KiB", "-c", "16"], "8KiB", Kind::Small),
        (&["-l", "-e", "16KiB", "-p"], "16KiB", Kind::Small),
        (&["-b", "-e", "16KiB", "-n", "-p"], "16KiB", Kind::Small),
        (
            &["-l", "-e", "64KiB", "--pad=0x200000"],
            "64KiB",
            Kind::Small,
        ),
        (
            &["-l", "-e", "32KiB", "-n", "--pad=500000"],
            "32KiB",
            Kind::Small,
        ),
        // A pad size below the image size: only the current block (plain) / nothing.
        (&["-l", "-e", "8KiB", "--pad=10000"], "8KiB", Kind::Small),
        (&["-l", "-e", "0x2100"], "0x2100", Kind::Small),
        (&["-l", "-e", "16KiB", "--with-xattr"], "16KiB", Kind::Full),
        (&["-b", "-e", "8KiB", "-x", "zlib"], "8KiB", Kind::Small),
        // Pages as large as a block: nodes that leave no room for a summary.
        (&["-l", "-e", "8KiB", "-s", "8192"], "8KiB", Kind::Small),
        (
            &["-l", "-e", "8KiB", "-s", "16384", "-x", "zlib"],
            "8KiB",
            Kind::Small,
        ),
        (&["-l", "-e", "64KiB"], "64KiB", Kind::Empty),
        (
            &["-l", "-e", "64KiB", "--pad=0x50000"],
            "64KiB",
            Kind::Empty,
        ),
    ];
    for (args, es, kind) in cases {
        let root = match kind {
            Kind::Small => small.path(),
            Kind::Empty => empty.path(),
            _ => full.path(),
        };
        let big = big_endian(&os_args(args));
        let plain = work.path().join("plain.img");
        let one = work.path().join("one.img");
        let two = work.path().join("two.img");
        mkfs(args, root, &plain);
        let mut a = args.to_vec();
        a.push("--summary");
        mkfs(&a, root, &one);
        let st = ["-e", es, if big { "-b" } else { "-l" }];
        summarize(true, &plain, &two, &st);
        let x = std::fs::read(&one).unwrap();
        let y = std::fs::read(&two).unwrap();
        assert!(
            x == y,
            "{args:?}: jffs2-mkfs --summary ({} bytes) differs from jffs2-mkfs | jffs2-sumtool ({} bytes) at {:?}",
            x.len(),
            y.len(),
            common::first_difference(&x, &y)
        );
        // And it is a summarised image of the same nodes.
        let p = std::fs::read(&plain).unwrap();
        assert_eq!(payload_nodes(&p, big), payload_nodes(&x, big), "{args:?}");
    }
}
