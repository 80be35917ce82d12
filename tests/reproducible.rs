//! Reproducible images: the claims of the README's "Reproducible images", each shown.
//!
//! The bytes `jffs2-mkfs` writes depend on the source tree, the command line and
//! `SOURCE_DATE_EPOCH` only — not on the number of threads, the locale, the order in which
//! the host file system lists a directory, or the time of the run (with `-f` or
//! `SOURCE_DATE_EPOCH`) — and equal mtd-utils' `mkfs.jffs2` run the same way wherever
//! mkfs.jffs2 is deterministic itself. Without root, mtd-utils or the `en_US.UTF-8` locale
//! (`scripts/install-test-deps.sh` generates it) a test is skipped loudly (tests/common/skip.rs),
//! and fails under `CI=true`; a machine without a file system whose directory order follows
//! creation fails the test with the reason.

mod common;

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Runs `tool` with `args` then `-o OUT` in the clean environment of [`Tool::command`] plus
/// `env`; returns the image. Fails on a non-zero exit.
fn image(tool: Tool, args: &[&OsStr], env: &[(&str, &str)], out: &Path) -> Vec<u8> {
    let mut c = tool.command();
    for (k, v) in env {
        c.env(k, v);
    }
    c.args(args).arg("-o").arg(out);
    let o = run(c);
    assert_eq!(
        o.status,
        0,
        "{tool:?} {args:?} {env:?}: {}",
        o.stderr_text()
    );
    std::fs::read(out).unwrap()
}

fn words(args: &[&'static str]) -> Vec<&'static OsStr> {
    args.iter().map(|a| OsStr::new(*a)).collect()
}

/// The same bytes, or the first difference explained.
fn assert_same(what: &str, a: &[u8], b: &[u8]) {
    if a != b {
        let at = first_difference(a, b).unwrap_or(0);
        panic!(
            "{what}: the images differ (lengths {} and {}), first at byte {at:#x}",
            a.len(),
            b.len()
        );
    }
}

/// Paths and modification times of an image, as Linux shows them.
fn mtimes(img: &[u8]) -> BTreeMap<String, u32> {
    let image = jffs2::Image::from_bytes(img).expect("a JFFS2 image");
    let fs = image.mount().expect("Linux mounts it");
    let tree = fs.tree(&jffs2::fs::TreeOptions::metadata());
    assert!(tree.problems.is_empty(), "{:?}", tree.problems);
    tree.entries
        .iter()
        .map(|e| (String::from_utf8_lossy(&e.path).into_owned(), e.mtime))
        .collect()
}

/// `--threads` changes nothing: 1, 2 and 7 compressor threads give the same bytes, and the
/// bytes of mkfs.jffs2 (which has one thread). Small erase blocks put many pages on block
/// tails, where the speculative compression of the workers is redone by the writer. The
/// same for `--summary` and for `jffs2-convert --threads`.
#[test]
fn thread_count_does_not_change_the_bytes() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let t = tree(Kind::Small);
    // More data: many pages, so many erase-block tails.
    std::fs::write(t.path().join("text_600k"), text(7, 600_000)).unwrap();
    std::fs::write(t.path().join("random_200k"), random(8, 200_000)).unwrap();
    let work = scratch();
    let root = t.path().as_os_str();
    let base = [
        words(&["-l", "-s", "4096", "-e", "16KiB", "-r"]),
        vec![root],
    ]
    .concat();
    let reference = image(Tool::Ref, &base, &[], &work.path().join("ref.img"));
    assert!(
        reference.len() > 20 * 16384,
        "{} bytes: too few erase blocks",
        reference.len()
    );
    let mut summarised = Vec::new();
    for threads in ["--threads=1", "--threads=2", "--threads=7"] {
        let args = [base.clone(), words(&[threads])].concat();
        let ours = image(Tool::Ours, &args, &[], &work.path().join("ours.img"));
        assert_same(
            &format!("jffs2-mkfs {threads} vs mkfs.jffs2"),
            &reference,
            &ours,
        );
        let args = [args, words(&["--summary"])].concat();
        summarised.push(image(Tool::Ours, &args, &[], &work.path().join("sum.img")));
    }
    assert_same("--summary, 1 vs 2 threads", &summarised[0], &summarised[1]);
    assert_same("--summary, 1 vs 7 threads", &summarised[0], &summarised[2]);

    let input = work.path().join("ref.img");
    let mut converted = Vec::new();
    for threads in ["1", "2", "7"] {
        let out = work.path().join(format!("conv{threads}.img"));
        let o = run({
            let mut c = Command::new(env!("CARGO_BIN_EXE_jffs2-convert"));
            c.arg("-i").arg(&input).arg("-o").arg(&out);
            c.args([
                "-e",
                "32KiB",
                "-X",
                "lzo",
                "-m",
                "size",
                "--summary",
                "--threads",
                threads,
            ]);
            c
        });
        assert_eq!(o.status, 0, "jffs2-convert: {}", o.stderr_text());
        converted.push(std::fs::read(&out).unwrap());
    }
    assert_same(
        "jffs2-convert, 1 vs 2 threads",
        &converted[0],
        &converted[1],
    );
    assert_same(
        "jffs2-convert, 1 vs 7 threads",
        &converted[0],
        &converted[2],
    );
}

/// Names whose order differs between strcmp (mkfs.jffs2 never calls setlocale, so its
/// `alphasort` compares bytes) and en_US collation.
const NAMES: [&str; 7] = ["B", "a", "_x", "Z1", "e", "\u{e9}", "f"];

/// The locale changes nothing: LC_ALL=C, C.UTF-8 and en_US.UTF-8 give the same bytes, for
/// jffs2-mkfs and for mkfs.jffs2, and they are equal.
#[test]
fn locale_does_not_change_the_bytes() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let locales = String::from_utf8(Command::new("locale").arg("-a").output().unwrap().stdout)
        .unwrap()
        .to_lowercase();
    if !locales.lines().any(|l| l == "en_us.utf8") || common::skip::pretend_missing("locale") {
        common::skip::skip("the en_US.UTF-8 locale (locales, localedef)");
        return;
    }
    // The locales are really different: sort(1) orders the names differently under them.
    let sorted = |locale: &str| {
        let mut c = Command::new("sort");
        c.env("LC_ALL", locale)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(NAMES.join("\n").as_bytes())
            .unwrap();
        String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
    };
    let c_order = sorted("C");
    let us_order = sorted("en_US.UTF-8");
    assert_eq!(c_order, "B\nZ1\n_x\na\ne\nf\n\u{e9}\n");
    assert_ne!(
        c_order, us_order,
        "en_US.UTF-8 collates like C: the test would prove nothing"
    );

    let work = scratch();
    let root = work.path().join("root");
    std::fs::create_dir(&root).unwrap();
    for dir in [root.clone(), root.join("sub")] {
        if !dir.exists() {
            std::fs::create_dir(&dir).unwrap();
        }
        for (i, n) in NAMES.iter().enumerate() {
            std::fs::write(dir.join(n), format!("{n} {i}\n").repeat(i + 1)).unwrap();
            std::fs::set_permissions(dir.join(n), std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }
    let args = [
        words(&["-l", "-s", "4096", "-f", "-r"]),
        vec![root.as_os_str()],
    ]
    .concat();
    let out = work.path().join("img");
    let reference = image(Tool::Ref, &args, &[("LC_ALL", "C")], &out);
    for locale in ["C", "C.UTF-8", "en_US.UTF-8"] {
        let env = [("LC_ALL", locale), ("LANG", locale)];
        let theirs = image(Tool::Ref, &args, &env, &out);
        assert_same(
            &format!("mkfs.jffs2, LC_ALL=C vs {locale}"),
            &reference,
            &theirs,
        );
        let ours = image(Tool::Ours, &args, &env, &out);
        assert_same(
            &format!("jffs2-mkfs LC_ALL={locale} vs mkfs.jffs2"),
            &reference,
            &ours,
        );
    }
    // The root's entries were written in strcmp order.
    let written: Vec<String> = nodes(&reference, Endian { big: false })
        .iter()
        .filter(|n| n.nodetype == NODETYPE_DIRENT)
        .map(|n| dirent_info(n, Endian { big: false }))
        .filter(|d| d.pino == 1 && d.name != b"sub")
        .map(|d| name_text(&d.name) + "\n")
        .collect();
    assert_eq!(written.concat(), c_order);
}

/// A directory on a file system whose listing order follows the order entries were created
/// in (tmpfs: ext4 lists by name hash, the same for two copies).
fn creation_ordered_dir() -> tempfile::TempDir {
    let candidates: Vec<PathBuf> = std::env::var_os("JFFS2_TMPFS")
        .map(PathBuf::from)
        .into_iter()
        .chain([PathBuf::from("/dev/shm"), std::env::temp_dir()])
        .collect();
    for base in &candidates {
        let Ok(d) = tempfile::Builder::new()
            .prefix("jffs2-order-")
            .tempdir_in(base)
        else {
            continue;
        };
        for n in ["p", "q", "r", "s"] {
            std::fs::write(d.path().join(n), b"").unwrap();
        }
        let listed: Vec<_> = std::fs::read_dir(d.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        let created_reversed: Vec<_> = ["p", "q", "r", "s"].iter().rev().map(OsStr::new).collect();
        let created: Vec<_> = ["p", "q", "r", "s"].iter().map(OsStr::new).collect();
        if listed == created || listed == created_reversed {
            for n in ["p", "q", "r", "s"] {
                std::fs::remove_file(d.path().join(n)).unwrap();
            }
            return d;
        }
    }
    panic!(
        "no directory among {candidates:?} lists entries in creation order (a tmpfs); \
         set JFFS2_TMPFS to a tmpfs directory"
    );
}

/// Builds the same tree at `root`, creating the entries in the given order.
fn build_in_order(root: &Path, names: &[String]) {
    std::fs::create_dir(root).unwrap();
    std::fs::create_dir(root.join("d")).unwrap();
    for n in names {
        let p = root.join(n);
        std::fs::write(&p, format!("{n}\n").repeat(40)).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    }
    // A hard link: the host inode numbers of the two copies differ.
    std::fs::hard_link(root.join("f00"), root.join("d/link")).unwrap();
    for p in std::fs::read_dir(root).unwrap().map(|e| e.unwrap().path()) {
        set_mtime(&p, FIXED_MTIME);
    }
    set_mtime(&root.join("d"), FIXED_MTIME);
    set_mtime(root, FIXED_MTIME);
}

/// The host directory order changes nothing: the same tree created in two orders — listed
/// by the host in two different orders, with different inode numbers — gives the same
/// bytes, equal to mkfs.jffs2's.
#[test]
fn host_directory_order_does_not_change_the_bytes() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let work = creation_ordered_dir();
    let names: Vec<String> = (0..40).map(|i| format!("f{:02}", (i * 17) % 40)).collect();
    let reversed: Vec<String> = names.iter().rev().cloned().collect();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    build_in_order(&a, &names);
    build_in_order(&b, &reversed);
    let listing = |d: &Path| -> Vec<_> {
        std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect()
    };
    assert_ne!(
        listing(&a),
        listing(&b),
        "the two copies list in the same order"
    );

    let out = work.path().join("img");
    fn args(root: &Path) -> Vec<&OsStr> {
        [words(&["-b", "-s", "4096", "-r"]), vec![root.as_os_str()]].concat()
    }
    let reference = image(Tool::Ref, &args(&a), &[], &out);
    let theirs_b = image(Tool::Ref, &args(&b), &[], &out);
    assert_same("mkfs.jffs2, copy a vs copy b", &reference, &theirs_b);
    for root in [&a, &b] {
        let ours = image(Tool::Ours, &args(root), &[], &out);
        assert_same(
            &format!("jffs2-mkfs of {}", root.display()),
            &reference,
            &ours,
        );
    }
}

/// The time of the run: device-table entries without a host file get the wall clock (as in
/// mkfs.jffs2), so two runs a second apart differ — unless `-f` (every time 0) or
/// `SOURCE_DATE_EPOCH` (times clamped to it: the clock always is later) is given.
#[test]
fn the_time_of_the_run_matters_only_without_f_or_source_date_epoch() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let work = scratch();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let table = fixtures.join("device_table.txt");
    let root = fixtures.join("rootfs");
    let args = |extra: &[&'static str]| {
        [
            words(&["-l", "-s", "4096", "-e", "64KiB"]),
            words(extra),
            vec![
                OsStr::new("-r"),
                root.as_os_str(),
                OsStr::new("-D"),
                table.as_os_str(),
            ],
        ]
        .concat()
    };
    let out = work.path().join("img");
    let epoch = [("SOURCE_DATE_EPOCH", "1500000000")];
    let twice = |tool: Tool, extra: &[&'static str], env: &[(&str, &str)]| {
        let first = image(tool, &args(extra), env, &out);
        std::thread::sleep(std::time::Duration::from_millis(1100));
        (first, image(tool, &args(extra), env, &out))
    };

    let (a, b) = twice(Tool::Ours, &[], &[]);
    assert_ne!(
        a, b,
        "device-table entries should carry the time of the run"
    );
    let (a, b) = twice(Tool::Ref, &[], &[]);
    assert_ne!(
        a, b,
        "mkfs.jffs2 gives device-table entries the time of the run"
    );

    let (ours_f, again) = twice(Tool::Ours, &["-f"], &[]);
    assert_same("-f, two runs", &ours_f, &again);
    let theirs_f = image(Tool::Ref, &args(&["-f"]), &[], &out);
    assert_same("-f, jffs2-mkfs vs mkfs.jffs2", &theirs_f, &ours_f);
    assert!(
        mtimes(&ours_f).values().all(|&t| t == 0),
        "-f: every time 0"
    );

    let (sde, again) = twice(Tool::Ours, &[], &epoch);
    assert_same("SOURCE_DATE_EPOCH, two runs", &sde, &again);
    let times = mtimes(&sde);
    for dev in ["dev/console", "dev/null", "dev/tty0", "dev/mtdblock2"] {
        assert_eq!(times[dev], 1_500_000_000, "{dev}: the clock, clamped");
    }
    assert!(times.values().all(|&t| t <= 1_500_000_000));
    // With -f as well: all 0, as with -f alone.
    let both = image(Tool::Ours, &args(&["-f"]), &epoch, &out);
    assert_same("-f with SOURCE_DATE_EPOCH vs -f", &ours_f, &both);
}

const BIG: Endian = Endian { big: true };

/// `SOURCE_DATE_EPOCH` clamps: a time later than it becomes it (inode atime, mtime, ctime and
/// dirent mctime), an earlier time is kept; an epoch later than every time changes no byte
/// (the image is then mkfs.jffs2's); an empty value is no value; a malformed one is an error.
#[test]
fn source_date_epoch_clamps_later_times() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let work = scratch();
    let root = work.path().join("root");
    std::fs::create_dir_all(root.join("dir")).unwrap();
    for (name, t) in [
        ("old", 1_000_000_000),
        ("new", 2_000_000_000),
        ("dir/x", 1_400_000_000),
    ] {
        std::fs::write(root.join(name), name).unwrap();
        set_mtime(&root.join(name), t);
    }
    set_mtime(&root.join("dir"), 1_700_000_000);
    let args = [words(&["-b", "-s", "4096", "-r"]), vec![root.as_os_str()]].concat();
    let out = work.path().join("img");

    let plain = image(Tool::Ours, &args, &[], &out);
    let clamped = image(
        Tool::Ours,
        &args,
        &[("SOURCE_DATE_EPOCH", "1500000000")],
        &out,
    );
    let got = mtimes(&clamped);
    assert_eq!(got["old"], 1_000_000_000);
    assert_eq!(got["new"], 1_500_000_000);
    assert_eq!(got["dir/x"], 1_400_000_000);
    // Linux shows a directory's time as that of its latest entry (dir/x); its inode node
    // is clamped like the file `new`: two inode nodes carry exactly the epoch.
    assert_eq!(got["dir"], 1_400_000_000);
    let at_epoch = nodes(&clamped, BIG)
        .iter()
        .filter(|n| n.nodetype == NODETYPE_INODE)
        .filter(|n| inode_info(n, BIG).mtime == 1_500_000_000)
        .count();
    assert_eq!(at_epoch, 2);
    // Every time field of every node, through the node walker of the tests.
    for n in nodes(&clamped, BIG) {
        if n.nodetype == NODETYPE_INODE {
            let i = inode_info(&n, BIG);
            assert!(
                i.atime <= 1_500_000_000 && i.mtime <= 1_500_000_000 && i.ctime <= 1_500_000_000
            );
        } else if n.nodetype == NODETYPE_DIRENT {
            assert!(dirent_info(&n, BIG).mctime <= 1_500_000_000);
        }
    }

    let later = image(
        Tool::Ours,
        &args,
        &[("SOURCE_DATE_EPOCH", "2000000000")],
        &out,
    );
    assert_same("an epoch later than every time", &plain, &later);
    let theirs = image(Tool::Ref, &args, &[], &out);
    assert_same("jffs2-mkfs vs mkfs.jffs2", &theirs, &plain);
    let empty = image(Tool::Ours, &args, &[("SOURCE_DATE_EPOCH", "")], &out);
    assert_same("an empty SOURCE_DATE_EPOCH", &plain, &empty);

    let mut c = Tool::Ours.command();
    c.env("SOURCE_DATE_EPOCH", "yesterday")
        .args(&args)
        .arg("-o")
        .arg(&out);
    let o = run(c);
    assert_eq!(o.status, 255);
    assert!(
        o.stderr_text()
            .contains("SOURCE_DATE_EPOCH is not a number"),
        "{}",
        o.stderr_text()
    );
}

/// Without `-s`, `-l` or `-b`, the page size is the host's (`sysconf(_SC_PAGESIZE)`) and the
/// byte order the host's — mkfs.jffs2's defaults, so an image built on another kind of host
/// differs. Both given explicitly, the bytes are the same on any host.
#[test]
fn defaults_are_the_hosts_page_size_and_byte_order() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let t = tree(Kind::Single);
    let work = scratch();
    let out = work.path().join("img");
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.to_string();
    let order = if cfg!(target_endian = "big") {
        "-b"
    } else {
        "-l"
    };
    let root = [OsStr::new("-r"), t.path().as_os_str()];
    let defaults = image(Tool::Ours, &root, &[], &out);
    let explicit_args = [
        vec![OsStr::new("-s"), OsStr::new(&page), OsStr::new(order)],
        root.to_vec(),
    ];
    let explicit = image(Tool::Ours, &explicit_args.concat(), &[], &out);
    assert_same("defaults vs the host's values given", &defaults, &explicit);
    let theirs = image(Tool::Ref, &root, &[], &out);
    assert_same("defaults: jffs2-mkfs vs mkfs.jffs2", &theirs, &defaults);
    let other = if order == "-l" { "-b" } else { "-l" };
    let swapped = [root.to_vec(), vec![OsStr::new(other)]].concat();
    assert_ne!(image(Tool::Ours, &swapped, &[], &out), defaults);
}
