//! Byte parity with mtd-utils' mkfs.jffs2: for the same tree and the same arguments,
//! `jffs2-mkfs` must write the same bytes
//! (`docs/spec/mtd-utils-spec.md` §3).
//!
//! Every case builds one image with `/usr/sbin/mkfs.jffs2` (LC_ALL=C) and one with our
//! binary and compares them; `-v` cases also compare the listing (stdout) and the
//! statistics (stderr). A mismatch reports the first differing offset, a hex window and
//! the first differing lines of `jffs2dump -c -v` of both images, and keeps both images
//! under `target/tmp/mkfs-parity-failures/`.
//!
//! The full fixture tree is used for the main cases, the small one for the option matrix.

mod common;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// One parity case: extra arguments for both tools (`-r` and `-o` are added at the end).
struct Case {
    args: Vec<OsString>,
    /// Compare stdout (the `-v` listing, `-i` scan lines).
    stdout: bool,
    /// Compare stderr (statistics, messages); our extra `warning!:` lines are ignored.
    stderr: bool,
    /// Run both tools in this directory and pass `-r` as given (relative roots).
    cwd: Option<PathBuf>,
    /// The root argument, when not the tree itself.
    root: Option<OsString>,
}

fn case(args: &[&str]) -> Case {
    Case {
        args: os_args(args),
        stdout: false,
        stderr: false,
        cwd: None,
        root: None,
    }
}

fn verbose_case(args: &[&str]) -> Case {
    Case {
        stdout: true,
        stderr: true,
        ..case(args)
    }
}

fn describe(args: &[OsString]) -> String {
    let v: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    if v.is_empty() {
        "(defaults)".into()
    } else {
        v.join(" ")
    }
}

/// Drops our own `warning!:` lines (warnings mkfs.jffs2 never gives) so the rest
/// of stderr can be compared with mkfs.jffs2's.
fn without_our_warnings(s: &str) -> (String, Vec<String>) {
    let mut kept = String::new();
    let mut dropped = Vec::new();
    for l in s.split_inclusive('\n') {
        if l.starts_with("mkfs.jffs2: warning!: ") {
            dropped.push(l.trim_end().to_string());
        } else {
            kept.push_str(l);
        }
    }
    (kept, dropped)
}

/// Our messages about device-table lines name the table and line ("TABLE:N: "), which
/// mkfs.jffs2's do not; drop that location so the rest can be compared.
fn without_table_locations(s: &str, args: &[OsString]) -> String {
    let mut tables = Vec::new();
    for (i, a) in args.iter().enumerate() {
        let a = a.to_string_lossy();
        if a == "-D" || a == "--devtable" {
            if let Some(t) = args.get(i + 1) {
                tables.push(t.to_string_lossy().into_owned());
            }
        } else if let Some(t) = a.strip_prefix("--devtable=") {
            tables.push(t.to_string());
        }
    }
    let mut out = s.to_string();
    for t in tables {
        let needle = format!("{t}:");
        while let Some(at) = out.find(&needle) {
            let rest = &out[at + needle.len()..];
            let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
            if digits == 0 || !rest[digits..].starts_with(": ") {
                break;
            }
            out.replace_range(at..at + needle.len() + digits + 2, "");
        }
    }
    out
}

/// Whether `args` enable LZO (whose acceptance rule is "valid and ≤ 105%").
fn uses_lzo(args: &[OsString]) -> bool {
    args.windows(2).any(|w| w[0] == "-X" && w[1] == "lzo")
        || args.iter().any(|a| a == "--enable-compressor=lzo")
}

/// The issue's acceptance rule for LZO images that are not byte-identical.
fn lzo_verdict(reference: &Path, ours: &Path, big: bool) -> String {
    let a = std::fs::metadata(reference).map(|m| m.len()).unwrap_or(0);
    let b = std::fs::metadata(ours).map(|m| m.len()).unwrap_or(0);
    let dump = jffs2dump(ours, big);
    let bad: Vec<&str> = dump
        .lines()
        .filter(|l| l.starts_with("Wrong"))
        .take(3)
        .collect();
    let ratio = if a > 0 {
        b as f64 * 100.0 / a as f64
    } else {
        0.0
    };
    format!(
        "LZO acceptance rule (valid, <= 105% of mkfs.jffs2): size {b} vs {a} = {ratio:.1}% ({}), \
         jffs2dump CRC errors: {}",
        if ratio <= 105.0 { "within" } else { "EXCEEDED" },
        if bad.is_empty() {
            "none".to_string()
        } else {
            bad.join(" | ")
        }
    )
}

/// Runs one case; `Err` carries a full explanation.
fn run_case(tree: &Path, c: &Case) -> Result<(), String> {
    let work = scratch();
    let root = c
        .root
        .clone()
        .unwrap_or_else(|| tree.as_os_str().to_os_string());
    let mut results = Vec::new();
    for (tool, img) in [(Tool::Ref, "ref.img"), (Tool::OursAsMkfs, "our.img")] {
        let img = work.path().join(img);
        let mut cmd = tool.command();
        cmd.args(&c.args).arg("-r").arg(&root).arg("-o").arg(&img);
        if let Some(d) = &c.cwd {
            cmd.current_dir(d);
        }
        results.push((run(cmd), img));
    }
    let (r, ref_img) = &results[0];
    let (o, our_img) = &results[1];
    let mut problems = String::new();
    if r.status != o.status {
        let _ = writeln!(
            problems,
            "exit status: mkfs.jffs2 {} vs ours {}\n  mkfs.jffs2 stderr: {}\n  our stderr: {}",
            r.status,
            o.status,
            r.stderr_text().trim_end(),
            o.stderr_text().trim_end()
        );
    }
    let big = big_endian(&c.args);
    if r.status == 0 && o.status == 0 {
        if let Some(diff) = explain_difference(ref_img, our_img, big) {
            problems.push_str(&diff);
            if uses_lzo(&c.args) {
                let _ = writeln!(problems, "  {}", lzo_verdict(ref_img, our_img, big));
            }
        }
    }
    if c.stdout {
        // Names with control characters or invalid UTF-8 are escaped in ours (deliberately).
        if let Some(d) = text_difference("stdout", &as_we_show(&r.stdout), &o.stdout_text()) {
            problems.push_str(&d);
        }
    }
    if c.stderr {
        let (ours, _extra) = without_our_warnings(&o.stderr_text());
        let ours = without_table_locations(&ours, &c.args);
        if let Some(d) = text_difference("stderr", &as_we_show(&r.stderr), &ours) {
            problems.push_str(&d);
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        let kept = keep_failure(
            &describe(&c.args),
            &[
                ("ref.img", ref_img.as_path()),
                ("our.img", our_img.as_path()),
            ],
        );
        let _ = writeln!(problems, "  images kept in {}", kept.display());
        Err(problems)
    }
}

/// Runs all cases on `tree`, then fails listing every failing case.
fn check_all(label: &str, tree: &Path, cases: &[Case]) {
    let mut failures = Vec::new();
    for c in cases {
        if let Err(e) = run_case(tree, c) {
            failures.push(format!("[{label}] {}\n{e}", describe(&c.args)));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} parity cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

fn cases(list: &[&[&str]]) -> Vec<Case> {
    list.iter().map(|a| case(a)).collect()
}

// ---------------------------------------------------------------------------------------
// The full tree
// ---------------------------------------------------------------------------------------

#[test]
fn full_tree_main_cases() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Full);
    check_all(
        "full",
        t.path(),
        &cases(&[
            &[],
            &["-f"],
            &["-l", "-e", "8KiB"],
            &["-b", "-e", "8KiB", "-f"],
            &["-b", "-e", "128KiB", "-n"],
            &["-l", "-e", "16", "-c", "16"],
            &["-l", "-e", "0x2100", "-s", "8192"],
            &["-b", "-e", "256KiB", "-p"],
            &["-l", "-q"],
            &["-b", "-U", "-f"],
            &["-l", "-P"],
            &["-l", "-s", "2048", "-e", "8KiB"],
        ]),
    );
}

#[test]
fn full_tree_verbose_listing() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Full);
    check_all(
        "full -v",
        t.path(),
        &[
            verbose_case(&["-v", "-l"]),
            verbose_case(&["-v", "-b", "-e", "8KiB", "-f", "-q"]),
            verbose_case(&["-v", "-l", "-m", "size", "-e", "16KiB"]),
            verbose_case(&["-v", "-l", "--with-xattr"]),
        ],
    );
}

#[test]
fn full_tree_xattr_modes() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Full);
    check_all(
        "full xattr",
        t.path(),
        &cases(&[
            &["-l", "--with-xattr"],
            &["-b", "--with-xattr", "-e", "8KiB"],
            &["-l", "--with-selinux", "-e", "16KiB"],
            &["-b", "--with-posix-acl"],
            &[
                "-l",
                "--with-selinux",
                "--with-posix-acl",
                "-e",
                "8KiB",
                "-n",
            ],
            &["-l", "--with-xattr", "-q", "-f"],
        ]),
    );
}

#[test]
fn full_tree_compression_modes() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Full);
    check_all(
        "full compr",
        t.path(),
        &cases(&[
            &["-l", "-m", "none"],
            &["-l", "-m", "size"],
            &["-b", "-x", "zlib", "-e", "8KiB"],
            &["-l", "-X", "lzo"],
            &["-l", "-m", "favourlzo", "-X", "lzo", "-e", "8KiB"],
            &["-l", "-t"],
        ]),
    );
}

// ---------------------------------------------------------------------------------------
// The option matrix, on the small tree
// ---------------------------------------------------------------------------------------

#[test]
fn matrix_endian_and_erase_size() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let erase: &[&[&str]] = &[
        &["-e", "8KiB"],
        &["-e", "4096"], // below 8 KiB: raised, with a message on stderr
        &["-e", "8"],
        &["-e", "0x2100"], // not a power of two
        &["-e", "16"],
        &["-e", "16KiB"],
        &["-e", "64"],
        &["-e", "0x10000"],
        &["-e", "128KiB"],
        &["-e", "131072"],
        &["--eraseblock=256KiB"],
        &["-e1MiB"],
    ];
    let mut list = Vec::new();
    for endian in ["-l", "-b"] {
        for e in erase {
            let mut a = vec![endian];
            a.extend_from_slice(e);
            let mut c = case(&a);
            c.stderr = true; // "Erase size 0x1000 too small. Increasing to 8KiB minimum"
            list.push(c);
        }
    }
    check_all("small endian/erase", t.path(), &list);
}

#[test]
fn matrix_page_and_cleanmarker() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    check_all(
        "small page/cleanmarker",
        t.path(),
        &cases(&[
            &["-l", "-s", "4096", "-e", "8KiB"],
            &["-b", "-s", "8192", "-e", "8KiB"],
            &["-l", "-s", "8192", "-e", "64KiB"],
            &["-l", "-s", "2048", "-e", "16KiB"],
            &["-b", "--pagesize=0x1000", "-e", "8KiB"],
            &["-l", "-s", "16384", "-e", "8KiB"],
            &["-l", "-s", "1000", "-e", "8KiB"],
            &["-l", "-c", "16", "-e", "8KiB"],
            &["-b", "-c", "13", "-e", "8KiB"],
            &["-l", "-c", "100", "-e", "8KiB"],
            &["-l", "--cleanmarker=12", "-e", "16KiB"],
            &["-l", "-c", "16", "-n", "-e", "8KiB"],
            &["-b", "-n", "-e", "8KiB"],
            &["-l", "--no-cleanmarkers", "-e", "0x2100"],
            &["-l", "-e", "128KiB", "-c", "70000"],
            &["-b", "-c", "13", "-e", "0x2100", "-p"],
        ]),
    );
}

#[test]
fn matrix_padding() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    check_all(
        "small pad",
        t.path(),
        &cases(&[
            &["-l", "-p"],
            &["-l", "--pad"],
            &["-b", "-p", "-e", "8KiB"],
            &["-l", "-p0x40000"],
            &["-l", "-p0x40000", "-n"],
            &["-l", "--pad=0x40000", "-e", "8KiB"],
            &["-b", "--pad=300000", "-e", "16KiB"],
            &["-l", "--pad=300000", "-n", "-e", "16KiB"],
            &["-l", "--pad=100000"],
            &["-l", "--pad=1000"],       // smaller than the image
            &["-l", "--pad=1000", "-n"], // smaller than the image, no cleanmarkers
            &["-l", "--pad=4MiB"],       // strtol: 4
            &["-l", "-p", "-n", "-e", "8KiB"],
            &["-l", "--pad=0x100000", "-e", "0x2100", "-c", "13"],
            &["-l", "-p", "0x40000"], // the size is an ignored operand
            &["-l", "-p010000"],      // octal
        ]),
    );
}

#[test]
fn matrix_squash_and_time() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    check_all(
        "small squash/time",
        t.path(),
        &cases(&[
            &["-l"],
            &["-l", "-f"],
            &["-l", "-q"],
            &["-l", "-U"],
            &["-l", "-P"],
            &["-b", "-U", "-P", "-f"],
            &["-b", "--squash", "--faketime"],
            &["-l", "--squash-uids", "--squash-perms"],
        ]),
    );
}

#[test]
fn matrix_compression() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    check_all(
        "small compr",
        t.path(),
        &cases(&[
            &["-l", "-m", "none"],
            &["-l", "-m", "priority"],
            &["-b", "-m", "size", "-e", "8KiB"],
            &["-l", "--compression-mode=size"],
            &["-l", "-m", "favourlzo", "-X", "lzo"],
            &["-l", "-m", "favourlzo"], // lzo disabled: like size
            &["-b", "-m", "size", "-X", "lzo", "-e", "8KiB"],
            &["-l", "-x", "zlib"],
            &["-l", "-x", "zlib", "-e", "8KiB", "-s", "8192"],
            &["-l", "-x", "rtime"],
            &["-l", "-x", "zlib", "-x", "rtime"],
            &["-l", "-X", "lzo"],
            &["-b", "-X", "lzo", "-e", "8KiB"],
            &["-l", "-X", "lzo", "-x", "zlib"],
            &["-l", "-y", "90:rtime"],
            &["-l", "-y", "10:zlib", "-e", "8KiB"],
            &["-l", "-y", "90:lzo", "-X", "lzo"],
            &["-l", "-y", "70:lzo"], // still disabled
            &["-l", "-X", "lzo", "-y", "50:lzo", "-m", "size"],
            &[
                "-l",
                "--disable-compressor=zlib",
                "--compressor-priority=55:rtime",
            ],
            &["-l", "-t"],
            &["-b", "-t", "-X", "lzo", "-e", "8KiB"],
            &["-l", "-t", "-x", "zlib"],
        ]),
    );
}

#[test]
fn matrix_xattr_modes() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let mut list = Vec::new();
    for endian in ["-l", "-b"] {
        for x in [
            &["--with-xattr"][..],
            &["--with-selinux"],
            &["--with-posix-acl"],
            &["--with-xattr", "--with-posix-acl"],
        ] {
            for e in ["8KiB", "64KiB"] {
                let mut a = vec![endian, "-e", e];
                a.extend_from_slice(x);
                list.push(case(&a));
            }
        }
    }
    list.push(case(&[
        "-l",
        "--with-xattr",
        "-e",
        "8KiB",
        "-n",
        "-c",
        "16",
        "-s",
        "8192",
    ]));
    check_all("small xattr", t.path(), &list);
}

#[test]
fn device_tables() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let std_table = fixture("devtable_standard.txt");
    let upd = fixture("devtable_update.txt");
    let new = fixture("devtable_new.txt");
    let (s, u, n) = (
        std_table.to_str().unwrap(),
        upd.to_str().unwrap(),
        new.to_str().unwrap(),
    );
    let mut list = cases(&[
        // Entries the table creates get time(NULL) unless -f (§3.4).
        &["-l", "-f", "-D", s],
        &["-b", "-f", "-D", s, "-e", "8KiB"],
        &["-l", "-f", "--devtable", s, "-q"],
        // Updates only: no new entries, so reproducible without -f.
        &["-l", "-D", u],
        &["-b", "-D", u, "-q", "-e", "8KiB"],
        &["-l", "-D", u, "-U", "-P"],
        &["-l", "-f", "-D", n],
        &["-l", "-f", "-D", n, "-q", "-e", "8KiB"],
        // Only the last -D is used.
        &["-l", "-f", "-D", s, "-D", n],
    ]);
    // -v: the listing shows table entries too; "skipping ... no parent directory!" on stderr.
    list.push(verbose_case(&["-v", "-l", "-f", "-D", n]));
    // A relative -r: mkfs.jffs2 looks the table's names up relative to the root *after*
    // chdir()ing into it (§3.4, B-18).
    let parent = t.path().parent().unwrap().to_path_buf();
    let rel = t.path().file_name().unwrap().to_os_string();
    for args in [&["-l", "-f", "-D", s][..], &["-l", "-f", "-D", n]] {
        let mut c = case(args);
        c.cwd = Some(parent.clone());
        c.root = Some(rel.clone());
        c.stderr = true;
        list.push(c);
    }
    check_all("small devtable", t.path(), &list);
}

#[test]
fn incremental_images() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let old_tree = tree(Kind::Small);
    let t = tree(Kind::Full);
    let work = scratch();
    let mut list = Vec::new();
    for (name, args) in [
        ("old_le.img", &["-l", "-e", "64KiB"][..]),
        ("old_le8.img", &["-l", "-e", "8KiB", "-n"]),
        ("old_be.img", &["-b", "-e", "64KiB", "-p"]),
    ] {
        let img = work.path().join(name);
        let mut cmd = Tool::Ref.command();
        cmd.args(args)
            .arg("-r")
            .arg(old_tree.path())
            .arg("-o")
            .arg(&img);
        let o = run(cmd);
        assert_eq!(o.status, 0, "mkfs.jffs2 {args:?}: {}", o.stderr_text());
    }
    let p = |n: &str| work.path().join(n).to_str().unwrap().to_string();
    let (le, le8, be) = (p("old_le.img"), p("old_le8.img"), p("old_be.img"));
    list.extend(cases(&[
        &["-l", "-i", &le],
        &["-l", "-e", "8KiB", "-i", &le8],
        &["-b", "-p", "-i", &be],
        &["-l", "--incremental", &le, "-e", "16KiB"],
        // The wrong byte order: nothing matches the magic ("Wrong bitmask" on stdout).
        &["-b", "-i", &le],
    ]));
    // -v prints every scanned node to stdout.
    list.push(verbose_case(&["-v", "-l", "-i", &le]));
    list.push(verbose_case(&["-v", "-b", "-i", &le]));
    check_all("incremental", t.path(), &list);
}

#[test]
fn empty_and_single_file_trees() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let empty = tree(Kind::Empty);
    check_all(
        "empty",
        empty.path(),
        &cases(&[
            &[],
            &["-l", "-p"],
            &["-l", "--pad=100000"],
            &["-b", "--pad=100000", "-n"],
            &["-l", "--pad=0x4000", "-e", "8KiB", "-c", "16"],
            &["-l", "-v"],
        ]),
    );
    let single = tree(Kind::Single);
    let mut list = cases(&[
        &[],
        &["-l", "-p"],
        &["-b", "-e", "8KiB", "-p"],
        &["-l", "--pad=0x20000", "-e", "8KiB"],
        &["-l", "-s", "0"],
        &["-l", "-s", "4KiB"], // 4-byte pages (the classic confusion, §8 B-4)
        &["-l", "-m", "none", "-e", "8KiB"],
        &["-l", "-x", "zlib"],
        &["-l", "-X", "lzo"],
    ]);
    list.push(verbose_case(&["-v", "-l", "-e", "8KiB"]));
    check_all("single", single.path(), &list);
}

/// Not a test: writes the fixture trees to `$JFFS2_FIXTURE_OUT/{empty,single,small,full,big_devices}`
/// for debugging a failing case by hand
/// (`JFFS2_FIXTURE_OUT=/tmp/fx cargo test --test mkfs_parity -- --ignored write_fixture_trees`).
#[test]
#[ignore]
fn write_fixture_trees() {
    let out = std::env::var_os("JFFS2_FIXTURE_OUT").expect("set JFFS2_FIXTURE_OUT to a directory");
    let out = PathBuf::from(out);
    for (name, kind) in [
        ("empty", Kind::Empty),
        ("single", Kind::Single),
        ("small", Kind::Small),
        ("full", Kind::Full),
        ("big_devices", Kind::BigDevices),
    ] {
        let dir = out.join(name);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).expect("remove the old tree");
        }
        std::fs::create_dir_all(&dir).expect("mkdir");
        build_tree(kind, &dir);
        eprintln!("wrote {}", dir.display());
    }
}

/// The reference images really contain what the fixture and the options are meant to
/// exercise, so that a parity pass means something (a fixture that silently lost its
/// xattrs or devices would still "pass").
#[test]
fn fixture_covers_what_it_claims() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Full);
    let work = scratch();
    let image = |args: &[&str]| -> Vec<u8> {
        let out = work.path().join("ref.img");
        let mut c = Tool::Ref.command();
        c.args(args).arg("-r").arg(t.path()).arg("-o").arg(&out);
        let o = run(c);
        assert_eq!(o.status, 0, "mkfs.jffs2 {args:?}: {}", o.stderr_text());
        std::fs::read(&out).unwrap()
    };
    let e = Endian { big: false };
    let img = image(&["-l"]);
    let all = nodes(&img, e);
    let dirents: Vec<DirentInfo> = all
        .iter()
        .filter(|n| n.nodetype == NODETYPE_DIRENT)
        .map(|n| dirent_info(n, e))
        .collect();
    let inodes: Vec<InodeInfo> = all
        .iter()
        .filter(|n| n.nodetype == NODETYPE_INODE)
        .map(|n| inode_info(n, e))
        .collect();
    let named =
        |name: &[u8]| -> Vec<&DirentInfo> { dirents.iter().filter(|d| d.name == name).collect() };
    let ino_of = |name: &[u8]| {
        named(name)
            .first()
            .unwrap_or_else(|| panic!("{}", name_text(name)))
            .ino
    };
    let first_inode = |ino: u32| inodes.iter().find(|i| i.ino == ino).unwrap();
    assert!(dirents.len() > 1600, "{} dirents", dirents.len());
    // 1500 entries in one directory.
    let many = ino_of(b"many");
    assert_eq!(dirents.iter().filter(|d| d.pino == many).count(), 1500);
    // 30 levels.
    assert_eq!(named(b"d29").len(), 1);
    // Hard links: one inode, dirents in two directories; the first copy in write order owns it.
    let a = ino_of(b"hard_a");
    assert_eq!(ino_of(b"hard_b"), a);
    assert_eq!(ino_of(b"hard_c"), a);
    assert_ne!(named(b"hard_c")[0].pino, named(b"hard_a")[0].pino);
    assert_eq!(ino_of(b"later_copy"), ino_of(b"first_copy"));
    // Symlinks: the long one is truncated to 254 bytes, isize keeps 306.
    let l = first_inode(ino_of(b"sym_long"));
    assert_eq!((l.isize, l.csize), (306, 254));
    assert_eq!(first_inode(ino_of(b"sym_dangling")).data, b"does/not/exist");
    // Types.
    for (name, dt) in [
        (&b"fifo"[..], 1u8),
        (b"null", 2),
        (b"sda", 6),
        (b"sock", 12),
        (b"sym_rel", 10),
        (b"empty_dir", 4),
        (b"empty", 8),
    ] {
        assert_eq!(named(name)[0].dtype, dt, "{}", name_text(name));
    }
    assert_eq!(first_inode(ino_of(b"null")).data, [3, 1]); // je16((1 << 8) | 3), LE
                                                           // Modes and owners.
    assert_eq!(first_inode(ino_of(b"setuid")).mode & 0o7777, 0o4755);
    assert_eq!(first_inode(ino_of(b"sticky")).mode & 0o7777, 0o1777);
    assert_eq!(
        first_inode(ino_of(b"u70000")).uid,
        (70_000u32 & 0xffff) as u16
    );
    // The sparse file, the page edges.
    assert_eq!(first_inode(ino_of(b"sparse")).isize, 600_000);
    assert_eq!(first_inode(ino_of(b"text_12289")).isize, 12289);
    // Names: dirent versions follow C-locale byte order, which differs from a
    // case-insensitive (locale-like) order.
    let names = ino_of(b"names");
    let mut in_dir: Vec<&DirentInfo> = dirents.iter().filter(|d| d.pino == names).collect();
    in_dir.sort_by_key(|d| d.version);
    let order: Vec<Vec<u8>> = in_dir.iter().map(|d| d.name.clone()).collect();
    let mut bytewise = order.clone();
    bytewise.sort();
    assert_eq!(order, bytewise, "write order is byte order");
    let mut folded = order.clone();
    folded.sort_by_key(|n| n.to_ascii_lowercase());
    assert_ne!(
        order, folded,
        "the fixture must tell byte order from a locale order"
    );
    assert!(order.iter().any(|n| n.len() == 255));
    assert!(order.iter().any(|n| std::str::from_utf8(n).is_err()));
    assert!(order
        .iter()
        .any(|n| n.iter().any(|&b| b >= 0x80) && std::str::from_utf8(n).is_ok()));
    // Compressors per option.
    let comprs = |img: &[u8]| -> BTreeSet<u8> {
        nodes(img, e)
            .iter()
            .filter(|n| n.nodetype == NODETYPE_INODE && e.u32(&n.bytes, 48) > 0)
            .map(|n| n.bytes[56])
            .collect()
    };
    assert_eq!(
        comprs(&img),
        [0, 6].into(),
        "default: zlib, and raw for random data"
    );
    assert_eq!(
        comprs(&image(&["-l", "-x", "zlib"])),
        [0, 2].into(),
        "rtime"
    );
    assert!(comprs(&image(&["-l", "-X", "lzo"])).contains(&7), "lzo");
    assert_eq!(comprs(&image(&["-l", "-m", "none"])), [0].into());
    assert_eq!(comprs(&image(&["-l", "-m", "size"])), [0, 2, 6].into());
    // xattrs: prefixes per option (1 user, 2 security, 3/4 ACL access/default, 5 trusted),
    // datum dedup, and the duplicate xrefs of directories.
    let xattrs = |img: &[u8]| -> (BTreeSet<u8>, usize, Vec<(u32, u32)>) {
        let n = nodes(img, e);
        let prefixes = n
            .iter()
            .filter(|n| n.nodetype == NODETYPE_XATTR)
            .map(|n| n.bytes[20])
            .collect();
        let datums = n.iter().filter(|n| n.nodetype == NODETYPE_XATTR).count();
        let xrefs = n
            .iter()
            .filter(|n| n.nodetype == NODETYPE_XREF)
            .map(|n| (e.u32(&n.bytes, 12), e.u32(&n.bytes, 16)))
            .collect();
        (prefixes, datums, xrefs)
    };
    let (p, datums, xrefs) = xattrs(&image(&["-l", "--with-xattr"]));
    assert_eq!(p, [1, 2, 3, 4, 5].into());
    assert!(
        xrefs.len() > datums + 5,
        "shared datums: {datums} datums, {} xrefs",
        xrefs.len()
    );
    let xdir = ino_of(b"xdir");
    assert!(
        xrefs.iter().filter(|x| x.0 == xdir).count() == 2,
        "xdir (one xattr, has children) gets its xref twice: {xrefs:?}"
    );
    assert!(xrefs.iter().any(|x| x.0 == 1), "the root's xattrs");
    assert_eq!(xattrs(&image(&["-l", "--with-selinux"])).0, [2].into());
    assert_eq!(xattrs(&image(&["-l", "--with-posix-acl"])).0, [3, 4].into());
    assert!(xattrs(&image(&["-l"])).0.is_empty());
}

#[test]
fn matrix_odd_geometries() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    check_all(
        "small odd",
        t.path(),
        &cases(&[
            &["-l", "-e", "8193"], // not a multiple of 4
            &["-l", "-e", "8195", "-c", "13"],
            &["-b", "-e", "0x2001", "-n"],
            &["-l", "-e", "8193", "--pad=100000"],
            &["-l", "-e", "8195", "--pad=50001", "-n"],
            &["-l", "-e", "8193", "-p"],
            &["-l", "-s", "3000"],
            &["-l", "-s", "100", "-e", "8KiB"],
            &["-l", "-s", "32768", "-e", "8KiB"],
            &["-l", "-s", "5000", "-e", "0x2100", "-m", "size"],
            &["-l", "-c", "4000", "-e", "8KiB"],
            &["-b", "-c", "7000", "-e", "8KiB"],
            &["-b", "-s", "16384", "-e", "16KiB", "-x", "zlib"],
            &["-l", "-e", "3MiB", "-p"],
        ]),
    );
}

/// Build systems run mkfs.jffs2 under fakeroot: ownership, modes and device nodes exist
/// only in fakeroot's faked view. Both tools, run in the same saved fakeroot session as
/// an unprivileged user, must see the same tree and write the same bytes.
#[test]
fn under_fakeroot() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let dir = work.path();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let nobody = |args: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(args)
            .current_dir(dir)
            .env("LC_ALL", "C")
            .env_remove("SOURCE_DATE_EPOCH");
        run(c)
    };
    let script = "set -e
        mkdir t t/dev t/bin
        echo hello > t/bin/tool; chown 4321:765 t/bin/tool; chmod 4755 t/bin/tool
        ln t/bin/tool t/bin/hard
        mknod t/dev/console c 5 1; chown 0:5 t/dev/console; chmod 600 t/dev/console
        mknod t/dev/sda b 8 0
        mkfifo t/dev/initctl
        ln -s ../bin/tool t/dev/sym; chown -h 77:88 t/dev/sym
        seq 1 3000 > t/bin/data; chown 1000:1000 t/bin t/bin/data
        find t -exec touch -h -d @1600000000 {} +";
    let o = nobody(&["fakeroot", "-s", "state", "sh", "-c", script]);
    assert_eq!(
        o.status,
        0,
        "fakeroot (apt-get install fakeroot): {}",
        o.stderr_text()
    );
    let mut failures = Vec::new();
    for args in [
        &["-l"][..],
        &["-b", "-e", "8KiB"],
        &["-l", "-U"],
        &["-l", "-v"],
    ] {
        let mut imgs = Vec::new();
        let mut outs = Vec::new();
        for (tool, img) in [(Tool::Ref, "ref.img"), (Tool::OursAsMkfs, "our.img")] {
            let prog = tool.program();
            let mut a: Vec<&str> = vec!["fakeroot", "-i", "state", prog.to_str().unwrap()];
            a.extend_from_slice(args);
            a.extend_from_slice(&["-r", "t", "-o", img]);
            let o = nobody(&a);
            assert_eq!(o.status, 0, "{tool:?} {args:?}: {}", o.stderr_text());
            imgs.push(dir.join(img));
            outs.push(o);
        }
        if let Some(d) = explain_difference(&imgs[0], &imgs[1], big_endian(&os_args(args))) {
            failures.push(format!("{args:?}: {d}"));
        }
        if let Some(d) = text_difference("stdout", &outs[0].stdout_text(), &outs[1].stdout_text()) {
            failures.push(format!("{args:?}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The faked view really was used: a device and a foreign owner exist only there.
    let img = std::fs::read(dir.join("ref.img")).unwrap();
    let e = Endian { big: false };
    let inodes: Vec<InodeInfo> = nodes(&img, e)
        .iter()
        .filter(|n| n.nodetype == NODETYPE_INODE)
        .map(|n| inode_info(n, e))
        .collect();
    assert!(
        inodes.iter().any(|i| i.mode & 0o170000 == 0o020000),
        "no char device seen"
    );
    assert!(inodes
        .iter()
        .any(|i| i.uid == 4321 && i.mode & 0o7777 == 0o4755));
}
