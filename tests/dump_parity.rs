//! Parity of `jffs2-dump` with Debian's jffs2dump (mtd-utils 2.1.5): the same stdout, byte
//! for byte, for `-c`, `-c -v` and no option, on mkfs.jffs2 images (both byte orders,
//! several erase sizes, `-n`, xattrs, lzo), sumtool images, the kernel-written images of
//! `fixtures/kernel` (also with obsoleted nodes) and corrupted images — and the endianness
//! conversion (`-e`): a round trip gives the original bytes back for every image, the
//! result equals `mkfs.jffs2` of the same tree in the other byte order (xattrs, ACLs and
//! device nodes included), and equals mtd-utils' own conversion where that one is right
//! (no xattrs, no device nodes). `docs/spec/mtd-utils-spec.md` §6.
//!
//! The tests run as root (the xattr trees set trusted.* attributes and make device nodes)
//! with mtd-utils; without them they are skipped loudly (tests/common/skip.rs), and fail
//! under `CI=true`.

mod common;
#[path = "common/dump.rs"]
mod dump_common;

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{scratch, Kind, Rng};
use dump_common::*;

/// A named image and its byte order.
struct Img {
    name: String,
    path: PathBuf,
    big: bool,
}

fn img(dir: &Path, name: &str, data: &[u8], big: bool) -> Img {
    Img {
        name: name.to_string(),
        path: put(dir, name, data),
        big,
    }
}

/// Compares Debian's and our stdout and exit status for `args` + the image, under both of
/// our names; returns the failures.
fn compare(i: &Img, args: &[&str]) -> Vec<String> {
    let mut all: Vec<OsString> = args.iter().map(OsString::from).collect();
    all.push(i.path.clone().into_os_string());
    let r = dump(Dump::Ref, &all);
    assert!(
        r.status.is_some(),
        "jffs2dump {args:?} {} was killed (signal {:?})",
        i.name,
        r.signal
    );
    let mut fails = Vec::new();
    for which in [Dump::Ours, Dump::OursAsRef] {
        let o = dump(which, &all);
        if o.status != r.status {
            fails.push(format!(
                "{} {args:?} ({which:?}): exit {:?}, jffs2dump {:?}",
                i.name, o.status, r.status
            ));
        }
        if let Some(d) = first_diff(
            &format!("{} {args:?} ({which:?})", i.name),
            &r.stdout_text(),
            &o.stdout_text(),
        ) {
            fails.push(d);
        }
        if o.stderr_text().contains("panicked") {
            fails.push(format!("{} {args:?}: panic: {}", i.name, o.stderr_text()));
        }
    }
    fails
}

/// The option sets every image is dumped with.
fn option_sets(i: &Img) -> Vec<Vec<&'static str>> {
    let e = if i.big { "-b" } else { "-l" };
    let mut v = vec![vec!["-c", e], vec!["-c", "-v", e], vec![e], vec!["-vc", e]];
    if !i.big {
        v.push(vec!["-c", "-v"]); // the host default
    }
    v
}

fn check_all(images: &[Img]) {
    let mut fails = Vec::new();
    for i in images {
        for o in option_sets(i) {
            fails.extend(compare(i, &o));
        }
    }
    assert!(
        fails.is_empty(),
        "{} differences:\n{}",
        fails.len(),
        fails.join("\n")
    );
}

/// mkfs.jffs2 images of several trees in both byte orders, with sumtool variants.
fn mkfs_images(dir: &Path) -> Vec<Img> {
    let rootfs = rootfs();
    let plain = plain_tree(false);
    let xattrs = plain_tree(true);
    let small = common::tree(Kind::Small);
    let mut v = Vec::new();
    let cases: Vec<(&str, &Path, Vec<&str>)> = vec![
        ("rootfs-8k", &rootfs, vec!["-e", "8KiB"]),
        ("rootfs-16k", &rootfs, vec!["-e", "16KiB"]),
        ("rootfs-64k-pad", &rootfs, vec!["-e", "64KiB", "-p"]),
        ("plain-16k", plain.path(), vec!["-e", "16KiB"]),
        ("plain-128k", plain.path(), vec!["-e", "128KiB"]),
        ("plain-32k-n", plain.path(), vec!["-e", "32KiB", "-n"]),
        (
            "plain-16k-c16",
            plain.path(),
            vec!["-e", "16KiB", "-c", "16"],
        ),
        (
            "plain-16k-lzo",
            plain.path(),
            vec!["-e", "16KiB", "-X", "lzo"],
        ),
        (
            "plain-16k-none",
            plain.path(),
            vec!["-e", "16KiB", "-m", "none"],
        ),
        (
            "userxattr-16k",
            xattrs.path(),
            vec!["-e", "16KiB", "--with-xattr"],
        ),
        (
            "small-64k-xattr",
            small.path(),
            vec!["-e", "64KiB", "--with-xattr"],
        ),
        (
            "small-16k-n-xattr",
            small.path(),
            vec!["-e", "16KiB", "-n", "--with-xattr"],
        ),
    ];
    for (name, root, args) in &cases {
        for big in [false, true] {
            let mut a = args.clone();
            a.push(if big { "-b" } else { "-l" });
            let data = mkfs(root, &a);
            let tag = if big { "be" } else { "le" };
            v.push(img(dir, &format!("{name}.{tag}"), &data, big));
            // sumtool needs the mkfs erase size; -p keeps the blocks whole.
            let es = args[1];
            let mut s = vec!["-e", es, if big { "-b" } else { "-l" }];
            if args.contains(&"-n") {
                s.push("-n");
            }
            if name.ends_with("16k") || name.contains("xattr") || name.ends_with("-n") {
                let summed = sumtool(&data, &s);
                v.push(img(dir, &format!("{name}.sum.{tag}"), &summed, big));
            }
        }
    }
    v
}

#[test]
fn mkfs_and_sumtool_images_dump_like_jffs2dump() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    if !common::require_root() {
        return;
    }
    let images = mkfs_images(dir.path());
    assert!(images.len() > 30);
    check_all(&images);
    // The matrix covers every node type and every summary record type.
    let mut all = String::new();
    for i in &images {
        let e = if i.big { "-b" } else { "-l" };
        let r = dump(
            Dump::Ours,
            &[OsStr::new("-cv"), OsStr::new(e), i.path.as_os_str()],
        );
        all.push_str(&r.stdout_text());
    }
    for what in [
        " Inode      node at",
        " Dirent     node at",
        " Xattr      node at",
        " Xref       node at",
        " Inode Sum  node at",
        " Cleanmarker     at",
        " #ino ",
        " dirent offset ",
        " Xattr  offset ",
        " Xref   offset ",
        " Sum Node Offset ",
        "Empty space found from",
    ] {
        assert!(all.contains(what), "no {what:?} line in any dump");
    }
}

/// The kernel's images, as they are and with some nodes obsoleted (the fixtures hold none:
/// the kernel did not mark nodes obsolete on that flash).
fn kernel_variants(dir: &Path) -> Vec<Img> {
    let mut v = Vec::new();
    for p in kernel_images() {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        v.push(Img {
            name: name.clone(),
            path: p.clone(),
            big: false,
        });
        let obs = obsolete_some(&p, false, 5);
        v.push(img(dir, &format!("{name}.obsolete"), &obs, false));
    }
    v
}

#[test]
fn kernel_images_dump_like_jffs2dump() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let images = kernel_variants(dir.path());
    check_all(&images);
    // The obsoleted variants do show obsolete nodes.
    let r = dump(Dump::Ours, &[OsStr::new("-c"), images[1].path.as_os_str()]);
    assert!(r.stdout_text().contains("Obsolete Inode      node at"));
}

/// Corruptions of one image: bit flips in node headers and bodies, random bytes, runs of
/// garbage words.
fn corrupt(base: &[u8], nodes: &[(u64, String)], rng: &mut Rng, big: bool) -> (String, Vec<u8>) {
    let mut d = base.to_vec();
    let len = d.len() as u64;
    let pick_node = |rng: &mut Rng| nodes[rng.below(nodes.len() as u64) as usize].0;
    let kind = rng.below(7);
    let what = match kind {
        0 => {
            // A flip in a node header (magic, type, totlen or hdr_crc).
            let at = (pick_node(rng) + rng.below(12)).min(len - 1);
            d[at as usize] ^= 1 << rng.below(8);
            format!("header flip at {at:#x}")
        }
        1 => {
            // A flip in a node's fixed part.
            let at = (pick_node(rng) + 12 + rng.below(56)).min(len - 1);
            d[at as usize] ^= 1 << rng.below(8);
            format!("body flip at {at:#x}")
        }
        2 => {
            // Flips anywhere (data included).
            let n = 1 + rng.below(6);
            for _ in 0..n {
                let at = rng.below(len) as usize;
                d[at] ^= 1 << rng.below(8);
            }
            format!("{n} flips")
        }
        3 => {
            // Garbage words.
            let at = (rng.below(len) & !3) as usize;
            let n = (4 * (1 + rng.below(64)) as usize).min(d.len() - at);
            for b in &mut d[at..at + n] {
                *b = rng.below(256) as u8;
            }
            format!("{n} garbage bytes at {at:#x}")
        }
        4 => {
            // A node header made valid again around a corrupt totlen: jffs2dump then
            // trusts the totlen (but never one that makes it loop).
            let at = pick_node(rng) as usize;
            if at + 12 <= d.len() {
                let ty = if big {
                    u16::from_be_bytes([d[at + 2], d[at + 3]])
                } else {
                    u16::from_le_bytes([d[at + 2], d[at + 3]])
                };
                let totlen = [4u32, 8, 12, 16, 40, 44, 68, 0x1000, 0x10001][rng.below(9) as usize];
                put_header(&mut d, at, big, ty, totlen);
            }
            format!("totlen rewritten at {at:#x}")
        }
        5 => {
            // Obsolete a node, as the kernel does on NOR flash.
            let at = pick_node(rng) as usize;
            d[at + if big { 2 } else { 3 }] &= !0x20;
            format!("type bit at {at:#x}")
        }
        _ => {
            let at = rng.below(len) as usize;
            d[at] = rng.below(256) as u8;
            format!("byte at {at:#x}")
        }
    };
    (what, d)
}

#[test]
fn corrupted_images_dump_like_jffs2dump() {
    if !(common::require_mtd_utils()) {
        return;
    }
    if !common::require_root() {
        return;
    }
    let dir = scratch();
    let plain = plain_tree(true);
    let mut bases: Vec<(String, Vec<u8>, bool)> = Vec::new();
    for big in [false, true] {
        let e = if big { "-b" } else { "-l" };
        let a = mkfs(plain.path(), &["-e", "16KiB", "--with-xattr", e]);
        bases.push((format!("plain.{e}"), sumtool(&a, &["-e", "16KiB", e]), big));
        bases.push((format!("plain.nosum.{e}"), a, big));
    }
    for k in ["dirty-summary-64k.img", "powercut-gc-16k.img"] {
        let p = kernel_images()
            .into_iter()
            .find(|p| p.ends_with(k))
            .unwrap();
        bases.push((k.to_string(), std::fs::read(p).unwrap(), false));
    }
    let mut rng = Rng::new(6);
    let mut fails = Vec::new();
    let mut n = 0;
    for (name, base, big) in &bases {
        let base_path = put(dir.path(), "base", base);
        let nodes = node_offsets(&base_path, *big);
        for k in 0..60 {
            let (what, data) = corrupt(base, &nodes, &mut rng, *big);
            let i = img(dir.path(), &format!("{name}.{k}"), &data, *big);
            let e = if *big { "-b" } else { "-l" };
            for opts in [vec!["-c", e], vec!["-c", "-v", e]] {
                n += 1;
                for f in compare(&i, &opts) {
                    fails.push(format!("[{what}] {f}"));
                }
            }
            if !fails.is_empty() {
                let keep = common::keep_failure(&format!("dump-{}", i.name), &[("image", &i.path)]);
                fails.push(format!("(kept in {keep:?})"));
                break;
            }
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
    assert!(n >= 700);
}

/// Truncated images: the same text, except the computed value of a CRC whose range runs
/// past the end, which jffs2dump takes from beyond its buffer. The images are large (glibc
/// then maps jffs2dump's buffer fresh, zeros after the end) and cut where at least 512
/// zero bytes follow in that mapping, so node fields past the end read as zeros there too.
#[test]
fn truncated_images_dump_like_jffs2dump() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let mut rng = Rng::new(7);
    let mut fails = Vec::new();
    let mut masked = 0;
    for p in kernel_images() {
        let data = std::fs::read(&p).unwrap();
        for _ in 0..6 {
            let mut cut;
            loop {
                cut = 200_000 + rng.below(data.len() as u64 - 200_000) as usize;
                // malloc's 16-byte header puts image offset x at page offset (x+16)%4096.
                if (cut + 16) % 4096 < 4096 - 512 {
                    break;
                }
            }
            let name = format!("{}.cut{cut}", p.file_name().unwrap().to_string_lossy());
            let i = img(dir.path(), &name, &data[..cut], false);
            for opts in [["-c", "-l"], ["-c", "-v"]] {
                let mut args: Vec<OsString> = opts.iter().map(OsString::from).collect();
                args.push(i.path.clone().into_os_string());
                let r = dump(Dump::Ref, &args);
                assert_eq!(r.status, Some(0), "jffs2dump crashed on {name}");
                let o = dump(Dump::Ours, &args);
                let offs = past_end_offsets(&o.stderr_text());
                masked += offs.len();
                if let Some(d) = first_diff(
                    &format!("{name} {opts:?}"),
                    &mask_crc_values(&r.stdout_text(), &offs),
                    &mask_crc_values(&o.stdout_text(), &offs),
                ) {
                    fails.push(d);
                }
            }
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
    assert!(masked > 0, "no cut fell inside a node");
}

/// Nodes with a valid header and `PAD(totlen)` 0: jffs2dump prints them forever (or
/// nothing, forever). Ours prints what jffs2dump prints up to there, the node once, then
/// goes on.
#[test]
fn nodes_that_make_jffs2dump_loop() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let mut fails = Vec::new();
    for big in [false, true] {
        let e = if big { "-b" } else { "-l" };
        let base = mkfs(&rootfs(), &["-e", "16KiB", e]);
        let base_path = put(dir.path(), "base", &base);
        let nodes = node_offsets(&base_path, big);
        let x = nodes
            .iter()
            .filter(|(_, k)| k == "Inode")
            .nth(3)
            .expect("an inode")
            .0;
        for ty in [
            0xE002u16, 0xE001, 0xE008, 0xE009, 0x2003, 0x2004, 0x2006, 0xE00A, 0xC002,
        ] {
            for totlen in [0u32, 0xFFFF_FFFF] {
                let mut d = base.clone();
                put_header(&mut d, x as usize, big, ty, totlen);
                let name = format!("loop-{e}-{ty:04x}-{totlen:x}");
                let path = put(dir.path(), &name, &d);
                for verbose in [false, true] {
                    let mut args: Vec<&OsStr> = vec![OsStr::new("-c"), OsStr::new(e)];
                    if verbose {
                        args.push(OsStr::new("-v"));
                    }
                    args.push(path.as_os_str());
                    // Line-buffered, so that what it printed before looping is not lost.
                    let mut c = Command::new("stdbuf");
                    c.arg("-oL").arg(reference()).args(&args);
                    let r = run_limited(c, Duration::from_secs(2), 1 << 20);
                    let o = dump(Dump::Ours, &args);
                    let case = format!("{name} -v={verbose}");
                    if r.finished() {
                        fails.push(format!("{case}: jffs2dump did not loop"));
                        continue;
                    }
                    if o.status != Some(0) || !o.stderr_text().contains("does not advance") {
                        fails.push(format!("{case}: ours: {:?} {}", o.status, o.stderr_text()));
                        continue;
                    }
                    // Ours = P + G + rest, where the rest starts with the first line about
                    // x+4; jffs2dump = P + G + G + G …
                    let ours = o.stdout_text();
                    let marker = format!("0x{:08x}", x + 4);
                    let cut = ours
                        .split_inclusive('\n')
                        .take_while(|l| !l.contains(&marker))
                        .map(str::len)
                        .sum::<usize>();
                    let pg = &ours[..cut];
                    let theirs = r.stdout_text();
                    if !theirs.starts_with(pg) {
                        fails.push(first_diff(&case, &theirs, &ours).unwrap_or_default());
                        continue;
                    }
                    let g_first = pg.split_inclusive('\n').find(|l| {
                        l.contains(&format!("at 0x{x:08x}"))
                            || l.contains(&format!("at  0x{x:08x}"))
                    });
                    let rest = &theirs[pg.len()..];
                    match g_first {
                        Some(g) => {
                            // jffs2dump sets the ACCURATE bit in its buffer: an obsolete
                            // node shows as obsolete the first time only.
                            let g = g.replace("Obsolete", "        ");
                            if !rest.starts_with(&g) && !g.starts_with(rest) {
                                fails.push(format!("{case}: jffs2dump does not repeat {g:?}"));
                            }
                        }
                        None if !rest.is_empty() => {
                            fails.push(format!("{case}: jffs2dump printed {rest:?} while looping"))
                        }
                        None => {}
                    }
                }
            }
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

// ---------------------------------------------------------------------------------------
// Endianness conversion
// ---------------------------------------------------------------------------------------

/// Our conversion of `input` (byte order `big`) with `extra` options.
fn ours_convert(input: &Path, big: bool, extra: &[&str]) -> Vec<u8> {
    let dir = scratch();
    let out = dir.path().join("converted");
    let mut args: Vec<OsString> = vec![if big { "-b" } else { "-l" }.into()];
    args.extend(extra.iter().map(OsString::from));
    args.push("-e".into());
    args.push(out.clone().into_os_string());
    args.push(input.as_os_str().to_owned());
    let r = dump(Dump::Ours, &args);
    assert_eq!(r.status, Some(0), "{args:?}: {}", r.stderr_text());
    std::fs::read(&out).expect("read converted image")
}

/// mtd-utils' conversion.
fn ref_convert(input: &Path, big: bool, extra: &[&str]) -> Vec<u8> {
    let dir = scratch();
    let out = dir.path().join("converted");
    let mut args: Vec<OsString> = vec![if big { "-b" } else { "-l" }.into()];
    args.extend(extra.iter().map(OsString::from));
    args.push("-e".into());
    args.push(out.clone().into_os_string());
    args.push(input.as_os_str().to_owned());
    let r = dump(Dump::Ref, &args);
    assert_eq!(r.status, Some(0));
    std::fs::read(&out).expect("read converted image")
}

fn same_bytes(what: &str, want: &[u8], got: &[u8]) -> Option<String> {
    let at = common::first_difference(want, got)?;
    Some(format!(
        "{what}: {} vs {} bytes, first difference at {at:#x}",
        want.len(),
        got.len()
    ))
}

/// The conversion of an mkfs.jffs2 (or sumtool) image is the same tool's image in the other
/// byte order — with xattrs, xrefs, POSIX ACLs, device nodes and summaries.
#[test]
fn conversion_equals_mkfs_of_the_other_byte_order() {
    if !(common::require_mtd_utils()) {
        return;
    }
    if !common::require_root() {
        return;
    }
    let small = common::tree(Kind::Small);
    let xattrs = plain_tree(true);
    let rootfs = rootfs();
    let devtable = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/device_table.txt");
    let dt = devtable.to_str().unwrap();
    let cases: Vec<(&str, &Path, Vec<&str>, bool)> = vec![
        (
            "small-xattr",
            small.path(),
            vec!["-e", "16KiB", "--with-xattr"],
            true,
        ),
        (
            "small-64k",
            small.path(),
            vec!["-e", "64KiB", "--with-xattr", "-n"],
            false,
        ),
        (
            "userxattr",
            xattrs.path(),
            vec!["-e", "8KiB", "--with-xattr"],
            true,
        ),
        (
            "rootfs-dev",
            &rootfs,
            vec!["-e", "16KiB", "-D", dt, "-f"],
            true,
        ),
        (
            "rootfs-lzo",
            &rootfs,
            vec!["-e", "32KiB", "-X", "lzo", "-p"],
            false,
        ),
    ];
    let dir = scratch();
    let mut fails = Vec::new();
    for (name, root, args, summed) in &cases {
        let mut le_args = args.clone();
        le_args.push("-l");
        let mut be_args = args.clone();
        be_args.push("-b");
        let mut le = mkfs(root, &le_args);
        let mut be = mkfs(root, &be_args);
        let mut pairs = vec![(name.to_string(), le.clone(), be.clone())];
        if *summed {
            let es = args[1];
            le = sumtool(&le, &["-e", es, "-l"]);
            be = sumtool(&be, &["-e", es, "-b"]);
            pairs.push((format!("{name}.sum"), le, be));
        }
        for (n, le, be) in pairs {
            let lp = put(dir.path(), &format!("{n}.le"), &le);
            let bp = put(dir.path(), &format!("{n}.be"), &be);
            fails.extend(same_bytes(
                &format!("{n} LE->BE"),
                &be,
                &ours_convert(&lp, false, &[]),
            ));
            fails.extend(same_bytes(
                &format!("{n} BE->LE"),
                &le,
                &ours_convert(&bp, true, &[]),
            ));
            fails.extend(same_bytes(
                &format!("{n} LE->BE -r"),
                &be,
                &ours_convert(&lp, false, &["-r"]),
            ));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// Where mtd-utils' conversion is right — no xattrs, no device nodes, nothing obsolete —
/// ours gives the same bytes, in both directions, with and without -r, summaries included.
#[test]
fn conversion_equals_mtd_utils_where_it_is_right() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let plain = plain_tree(false);
    let rootfs = rootfs();
    let dir = scratch();
    let mut fails = Vec::new();
    let mut n = 0;
    for (name, root) in [("plain", plain.path()), ("rootfs", rootfs.as_path())] {
        for es in ["8KiB", "16KiB", "128KiB"] {
            for big in [false, true] {
                let e = if big { "-b" } else { "-l" };
                let image = mkfs(root, &["-e", es, e]);
                let summed = sumtool(&image, &["-e", es, e]);
                for (tag, data) in [("", image), (".sum", summed)] {
                    let p = put(dir.path(), &format!("{name}-{es}{tag}.{e}"), &data);
                    for extra in [&[][..], &["-r"][..]] {
                        n += 1;
                        let want = ref_convert(&p, big, extra);
                        let got = ours_convert(&p, big, extra);
                        fails.extend(same_bytes(&format!("{p:?} {extra:?}"), &want, &got));
                    }
                }
            }
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
    assert_eq!(n, 48);
}

/// What we keep and mtd-utils does not: it drops xref nodes (and shifts all that follows),
/// and writes device numbers in the wrong byte order.
#[test]
fn mtd_utils_conversion_loses_xrefs_and_device_numbers() {
    if !(common::require_mtd_utils()) {
        return;
    }
    if !common::require_root() {
        return;
    }
    let small = common::tree(Kind::Small);
    let dir = scratch();
    let le = mkfs(small.path(), &["-e", "16KiB", "--with-xattr", "-l"]);
    let be = mkfs(small.path(), &["-e", "16KiB", "--with-xattr", "-b"]);
    let lp = put(dir.path(), "le", &le);
    let theirs = ref_convert(&lp, false, &[]);
    let ours = ours_convert(&lp, false, &[]);
    assert!(theirs.len() < le.len(), "mtd-utils kept the xrefs?");
    assert_eq!(ours.len(), le.len());
    assert_eq!(ours, be);
    // Without xattrs, only the device numbers (and their data CRCs) differ.
    let le = mkfs(small.path(), &["-e", "16KiB", "-l"]);
    let be = mkfs(small.path(), &["-e", "16KiB", "-b"]);
    let lp = put(dir.path(), "le2", &le);
    let theirs = ref_convert(&lp, false, &[]);
    assert_eq!(theirs.len(), be.len());
    assert_ne!(theirs, be, "mtd-utils converted device numbers right?");
    assert_eq!(ours_convert(&lp, false, &[]), be);
}

/// LE → BE → LE gives the original bytes for every image: kernel-written ones (dirty, power
/// cut, torn node, summaries), with obsolete nodes, with xattrs, summarized, corrupted.
#[test]
fn round_trip_gives_the_original_bytes() {
    if !(common::require_mtd_utils()) {
        return;
    }
    if !common::require_root() {
        return;
    }
    let dir = scratch();
    let mut images: Vec<(String, PathBuf, bool)> = Vec::new();
    for i in kernel_variants(dir.path()) {
        images.push((i.name, i.path, false));
    }
    let small = common::tree(Kind::Small);
    for big in [false, true] {
        let e = if big { "-b" } else { "-l" };
        let a = mkfs(small.path(), &["-e", "16KiB", "--with-xattr", e]);
        let s = sumtool(&a, &["-e", "16KiB", e]);
        let p = put(dir.path(), &format!("small{e}"), &a);
        let obs = obsolete_some(&p, big, 3);
        images.push((format!("small{e}"), p, big));
        images.push((
            format!("small.sum{e}"),
            put(dir.path(), &format!("small.sum{e}"), &s),
            big,
        ));
        images.push((
            format!("small.obs{e}"),
            put(dir.path(), &format!("small.obs{e}"), &obs),
            big,
        ));
    }
    // Corrupted images too: wrong CRCs stay wrong, junk stays junk.
    let mut rng = Rng::new(9);
    let kernel = kernel_images();
    for k in 0..40 {
        let p = &kernel[k % kernel.len()];
        let base = std::fs::read(p).unwrap();
        let nodes = node_offsets(p, false);
        let (_, d) = corrupt(&base, &nodes, &mut rng, false);
        let name = format!("corrupt{k}");
        images.push((name.clone(), put(dir.path(), &name, &d), false));
    }
    let mut fails = Vec::new();
    for (name, path, big) in &images {
        let orig = std::fs::read(path).unwrap();
        let there = ours_convert(path, *big, &[]);
        assert_eq!(there.len(), orig.len(), "{name}: length changed");
        let tp = put(dir.path(), "there", &there);
        let back = ours_convert(&tp, !*big, &[]);
        fails.extend(same_bytes(&format!("{name} round trip"), &orig, &back));
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// Debian's jffs2dump reads the converted image (with the other byte order) exactly as it
/// reads the original: the same nodes, fields, obsolete marks, summary records and
/// counters.
#[test]
fn converted_images_read_the_same_to_jffs2dump() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let mut fails = Vec::new();
    for i in kernel_variants(dir.path()) {
        let there = ours_convert(&i.path, false, &[]);
        let tp = put(dir.path(), "there", &there);
        let a = dump(
            Dump::Ref,
            &[
                OsStr::new("-c"),
                OsStr::new("-v"),
                OsStr::new("-l"),
                i.path.as_os_str(),
            ],
        );
        let b = dump(
            Dump::Ref,
            &[
                OsStr::new("-c"),
                OsStr::new("-v"),
                OsStr::new("-b"),
                tp.as_os_str(),
            ],
        );
        // A wrong CRC keeps its stored value; the value computed over swapped fields differs.
        let strip = |s: String| -> String {
            s.split_inclusive('\n')
                .map(|l| match l.find(" instead of ") {
                    Some(k) if l.starts_with("Wrong ") => format!("{}\n", &l[..k]),
                    _ => l.to_string(),
                })
                .collect()
        };
        if let Some(d) = first_diff(&i.name, &strip(a.stdout_text()), &strip(b.stdout_text())) {
            fails.push(d);
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// `-r` recomputes data and name CRCs as mtd-utils does; node CRCs that were wrong stay
/// wrong in ours (mtd-utils recomputes every node CRC, hiding the corruption).
#[test]
fn recalc_crc_like_mtd_utils() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    for big in [false, true] {
        let e = if big { "-b" } else { "-l" };
        let base = mkfs(&rootfs(), &["-e", "16KiB", e]);
        let base_path = put(dir.path(), "base", &base);
        let nodes = node_offsets(&base_path, big);
        // Inodes with data: those followed by more than a bare 68-byte header.
        let with_data: Vec<usize> = nodes
            .windows(2)
            .filter(|w| w[0].1 == "Inode" && w[1].0 - w[0].0 > 72)
            .map(|w| w[0].0 as usize)
            .collect();
        let inode = |k: usize| with_data[k];
        let dirent = nodes.iter().find(|(_, t)| t == "Dirent").unwrap().0 as usize;
        // Data and name corruption: the same bytes as mtd-utils, with and without -r.
        let mut d = base.clone();
        d[inode(4) + 68] ^= 0x10;
        d[dirent + 40] ^= 0x01;
        let p = put(dir.path(), "data", &d);
        for extra in [&[][..], &["-r"][..]] {
            let want = ref_convert(&p, big, extra);
            let got = ours_convert(&p, big, extra);
            if let Some(d) = same_bytes(&format!("{e} {extra:?}"), &want, &got) {
                let keep = common::keep_failure("recalc", &[("image", &p)]);
                panic!("{d} (kept in {keep:?})");
            }
        }
        let fixed = put(dir.path(), "fixed", &ours_convert(&p, big, &["-r"]));
        let r = dump(
            Dump::Ref,
            &[
                OsStr::new("-c"),
                OsStr::new(if big { "-l" } else { "-b" }),
                fixed.as_os_str(),
            ],
        );
        assert!(!r.stdout_text().contains("Wrong"), "{}", r.stdout_text());
        // A corrupt node CRC: mtd-utils makes it right, we keep it wrong.
        let mut d = base.clone();
        let x = inode(2);
        d[x + 36] ^= 0x01; // mtime
        let p = put(dir.path(), "node", &d);
        let theirs = ref_convert(&p, big, &["-r"]);
        let ours = ours_convert(&p, big, &["-r"]);
        assert_eq!(common::first_difference(&theirs, &ours), Some(x + 64));
        let op = put(dir.path(), "ours", &ours);
        let r = dump(
            Dump::Ref,
            &[
                OsStr::new("-c"),
                OsStr::new(if big { "-l" } else { "-b" }),
                op.as_os_str(),
            ],
        );
        assert!(
            r.stdout_text()
                .contains(&format!("Wrong node_crc at  0x{x:08x}")),
            "{}",
            r.stdout_text()
        );
    }
}
