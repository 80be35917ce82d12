//! Extraction metadata and terminal-safe text against hostile images and hostile trees:
//!
//! * `jffs2-dump --force --extract` into an existing tree never hands an existing directory
//!   (the destination included) the image's owner, mode, times or xattrs; only what it
//!   creates gets them, and nothing is chown/chmod-ed through a symbolic link that was there;
//! * the device table beside DIR is never written through a second hard link.
//!
//! * names holding ESC sequences, CR, TAB, newline, U+202E and an invalid UTF-8 byte never
//!   reach the terminal raw: `jffs2-mkfs` warnings and `-v`, `jffs2-dump --list`, `--info`,
//!   extraction refusals, `jffs2reader`, `jffs2-fsck` findings and `jffs2-sumtool -v` escape
//!   them; `jffs2dump -c` stays byte for byte mtd-utils' (raw), `--json` keeps the real
//!   characters, and ordinary names in the `-v` listing stay mkfs.jffs2's.
//!
//! The metadata test needs root (chown); without it, it says SKIPPED loudly (fails under
//! `CI=true`). The text tests need Debian's mtd-utils.

mod common;
#[path = "common/dump.rs"]
mod dump_common;
#[path = "common/extract.rs"]
mod extract_common;

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use common::scratch;
use extract_common::{dump, ours_as_reader, run_prog, xattrs, Craft};
use jffs2::format::{dt, Endian, InodeNode};

/// An inode node with owner and times.
fn inode(ino: u32, mode: u32, uid: u16, gid: u16, mtime: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    InodeNode {
        ino,
        version: 1,
        mode,
        uid,
        gid,
        isize: data.len() as u32,
        atime: mtime,
        mtime,
        ctime: mtime,
        dsize: data.len() as u32,
        ..Default::default()
    }
    .encode(Endian::Little, data, &mut v);
    v
}

/// (uid, gid, mode & 07777, mtime) of `p`, not following a link.
fn meta(p: &Path) -> (u32, u32, u32, i64) {
    let m = std::fs::symlink_metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    (m.uid(), m.gid(), m.mode() & 0o7777, m.mtime())
}

fn set_mtime(p: &Path, secs: u64) {
    let t = std::fs::FileTimes::new()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs));
    std::fs::File::open(p).unwrap().set_times(t).unwrap();
}

/// A hostile root: `07777` owned by 4242:4242 with a `user.` xattr; `etc/` (01777, 4242),
/// `etc/new/` (02775, 4343:4343), `etc/passwd` (04755, 4242), `etc/link` (a file, 04777),
/// `sub/` (01777, 4242) with `sub/planted` (04777, 4242), and a new top-level `fresh/`.
fn hostile_root_image() -> Vec<u8> {
    let mut c = Craft::new(Endian::Little, 16384);
    c.raw(inode(1, 0o047777, 4242, 4242, 1000, &[]))
        .xattr(1, 1, 1, b"hostile", b"yes")
        .dirent(1, 2, 2, dt::DIR, b"etc")
        .raw(inode(2, 0o041777, 4242, 4242, 1000, &[]))
        .dirent(2, 3, 3, dt::DIR, b"new")
        .raw(inode(3, 0o042775, 4343, 4343, 2000, &[]))
        .dirent(2, 4, 4, dt::REG, b"passwd")
        .raw(inode(
            4,
            0o104755,
            4242,
            4242,
            1000,
            b"root::0:0::/:/bin/sh\n",
        ))
        .dirent(2, 5, 5, dt::REG, b"link")
        .raw(inode(5, 0o104777, 4242, 4242, 1000, b"x"))
        .dirent(1, 6, 6, dt::DIR, b"sub")
        .raw(inode(6, 0o041777, 4242, 4242, 1000, &[]))
        .dirent(6, 7, 7, dt::REG, b"planted")
        .raw(inode(7, 0o104777, 4242, 4242, 1000, b"y"))
        .dirent(1, 8, 8, dt::DIR, b"fresh")
        .raw(inode(8, 0o041777, 4242, 4242, 3000, &[]));
    c.build()
}

#[test]
fn force_merge_leaves_existing_directories_and_links_alone() {
    if !common::skip::root() {
        return;
    }
    let work = scratch();
    let img = dump_common::put(work.path(), "hostile.img", &hostile_root_image());
    // What the extraction must not touch: a directory `sub` stands for, a file `etc/link`
    // stands for, and a file of the destination's own.
    let outside = work.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o700)).unwrap();
    let target = work.path().join("target");
    std::fs::write(&target, b"secret").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dest = work.path().join("dest");
    std::fs::create_dir(&dest).unwrap();
    std::fs::create_dir(dest.join("etc")).unwrap();
    std::fs::write(dest.join("etc/passwd"), b"mine\n").unwrap();
    std::os::unix::fs::symlink(&target, dest.join("etc/link")).unwrap();
    std::os::unix::fs::symlink(&outside, dest.join("sub")).unwrap();
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(dest.join("etc"), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(
        dest.join("etc/passwd"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    set_mtime(&dest.join("etc"), 1_500_000_000);
    set_mtime(&dest, 1_500_000_001);
    set_mtime(&outside, 1_500_000_002);
    let before: Vec<_> = [
        dest.clone(),
        dest.join("etc"),
        dest.join("etc/passwd"),
        outside.clone(),
        target.clone(),
    ]
    .iter()
    .map(|p| (p.clone(), meta(p)))
    .collect();

    let o = dump(&[
        OsStr::new("--force"),
        OsStr::new("--extract"),
        dest.as_os_str(),
        img.as_os_str(),
    ]);
    assert!(!o.stderr.contains("panicked"), "{}", o.stderr);
    // etc/passwd, etc/link and sub exist: refused, left alone.
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    for p in ["etc/passwd", "etc/link", "sub"] {
        assert!(
            o.stderr.contains(&format!("{p}: ")),
            "{p} not reported: {}",
            o.stderr
        );
    }
    for (p, m) in &before {
        assert_eq!(
            &meta(p),
            m,
            "{} changed (uid, gid, mode, mtime)",
            p.display()
        );
    }
    assert_eq!(std::fs::read(dest.join("etc/passwd")).unwrap(), b"mine\n");
    assert_eq!(std::fs::read(&target).unwrap(), b"secret");
    assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
    assert!(
        !xattrs(&dest).contains_key("user.hostile"),
        "the image's xattr was set on the existing destination"
    );
    // What the extraction created is the image's, setuid and setgid bits included.
    assert_eq!(meta(&dest.join("etc/new")), (4343, 4343, 0o2775, 2000));
    assert_eq!(meta(&dest.join("fresh")), (4242, 4242, 0o1777, 3000));

    // Without --force, an existing empty destination keeps its own metadata too.
    let empty = work.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    std::fs::set_permissions(&empty, std::fs::Permissions::from_mode(0o750)).unwrap();
    set_mtime(&empty, 1_500_000_003);
    let m = meta(&empty);
    let o = dump(&[OsStr::new("--extract"), empty.as_os_str(), img.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(meta(&empty), m);
    // A destination the extraction creates gets the image root's metadata (its mtime is its
    // newest entry's, as the kernel shows it).
    let made = work.path().join("made");
    let o = dump(&[OsStr::new("--extract"), made.as_os_str(), img.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_eq!(meta(&made), (4242, 4242, 0o7777, 1_600_000_000));
    assert_eq!(meta(&made.join("etc/passwd")), (4242, 4242, 0o4755, 1000));
}

/// A device table named with `--devtable=FILE` replaces an existing file's content but is
/// never written through a second hard link (the file someone planted there could be another
/// user's); the default `DIR.devtable`, a name the user did not give, never replaces anything.
#[test]
fn device_table_is_not_written_through_a_hard_link() {
    if !common::skip::root() {
        return;
    }
    let work = scratch();
    std::fs::set_permissions(work.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::CHR, b"null")
        .inode(2, 1, 0o020666, 2, 0, 2, 0, &[3, 1]);
    let img = dump_common::put(work.path(), "dev.img", &c.build());
    std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o644)).unwrap();
    let victim = work.path().join("victim");
    std::fs::write(&victim, b"victim\n").unwrap();
    std::os::unix::fs::chown(&victim, Some(65534), Some(65534)).unwrap();
    std::fs::hard_link(&victim, work.path().join("out.devtable")).unwrap();
    let dest = work.path().join("out");
    let table = work.path().join("out.devtable");
    let o = run_prog(
        Path::new("/usr/bin/setpriv"),
        &[
            OsStr::new("--reuid=65534"),
            OsStr::new("--regid=65534"),
            OsStr::new("--clear-groups"),
            OsStr::new(extract_common::OURS),
            OsStr::new("--devtable"),
            table.as_os_str(),
            OsStr::new("--extract"),
            dest.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.code, Some(1), "{}", o.stderr);
    assert!(o.stderr.contains("hard links"), "{}", o.stderr);
    assert_eq!(std::fs::read(&victim).unwrap(), b"victim\n");
    // A lone regular file named with --devtable is replaced; the default name is refused.
    std::fs::remove_file(&table).unwrap();
    std::fs::write(&table, b"old").unwrap();
    std::os::unix::fs::chown(&table, Some(65534), Some(65534)).unwrap();
    for (named, code) in [(false, 1), (true, 0)] {
        let _ = std::fs::remove_dir_all(&dest);
        let mut args = vec![
            OsStr::new("--reuid=65534"),
            OsStr::new("--regid=65534"),
            OsStr::new("--clear-groups"),
            OsStr::new(extract_common::OURS),
        ];
        if named {
            args.extend([OsStr::new("--devtable"), table.as_os_str()]);
        }
        args.extend([OsStr::new("--extract"), dest.as_os_str(), img.as_os_str()]);
        let o = run_prog(Path::new("/usr/bin/setpriv"), &args);
        assert_eq!(o.code, Some(code), "named {named}: {}", o.stderr);
        let t = std::fs::read_to_string(&table).unwrap();
        if named {
            assert!(t.contains("/null c 666 0 0 1 3 0 0 -"), "{t}");
        } else {
            assert_eq!(t, "old");
            assert!(o.stderr.contains("--devtable=FILE"), "{}", o.stderr);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Terminal-safe text
// ---------------------------------------------------------------------------------------

/// Names that must never reach a terminal as they are.
const HOSTILE_NAMES: &[&[u8]] = &[
    b"esc\x1b[31mred",
    b"cr\rname",
    b"tab\tname",
    b"nl\nname",
    "rlo\u{202e}txt.exe".as_bytes(),
    b"bad\xffbyte",
    "c1\u{9b}31m".as_bytes(),
];

/// Ordinary names: printed exactly as mtd-utils prints them.
const ORDINARY_NAMES: &[&[u8]] = &[b"back\\slash", "caf\u{e9}".as_bytes(), b"plain name"];

/// Fails when `out` holds a raw control character (other than newline, and tab where
/// `tabs` allows it), DEL, a C1 control, a bidirectional control or invalid UTF-8.
fn assert_terminal_safe(what: &str, out: &[u8], tabs: bool) {
    let text = match std::str::from_utf8(out) {
        Ok(t) => t,
        Err(e) => panic!(
            "{what}: invalid UTF-8 at byte {}: {:?}",
            e.valid_up_to(),
            String::from_utf8_lossy(out)
        ),
    };
    for (n, line) in text.lines().enumerate() {
        let bad = line.chars().find(|&c| {
            (c.is_control() && !(tabs && c == '\t'))
                || matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        });
        assert!(
            bad.is_none(),
            "{what}: raw {bad:?} on line {}: {line:?}",
            n + 1
        );
    }
    for name in HOSTILE_NAMES {
        assert!(
            !out.windows(name.len()).any(|w| w == *name),
            "{what}: the raw name {:?} is in the output",
            String::from_utf8_lossy(name)
        );
    }
}

/// A host tree with the hostile and ordinary names (files, a directory, a symlink target).
fn hostile_tree() -> tempfile::TempDir {
    use std::os::unix::ffi::OsStrExt;
    let t = scratch();
    let root = t.path();
    let p = |n: &[u8]| root.join(OsStr::from_bytes(n));
    for (i, n) in HOSTILE_NAMES.iter().chain(ORDINARY_NAMES).enumerate() {
        std::fs::write(p(n), format!("file {i}\n")).unwrap();
    }
    std::fs::create_dir(p(b"dir\x1b]0;title\x07")).unwrap();
    std::fs::write(p(b"dir\x1b]0;title\x07").join("inner\x1b[2J"), b"x").unwrap();
    std::os::unix::fs::symlink(OsStr::from_bytes(b"tgt\x1b[31m\xe2\x80\xae"), p(b"link")).unwrap();
    t
}

/// The `-v` listing of `mkfs` (stdout) and its messages (stderr).
fn mkfs_verbose(program: &Path, root: &Path, out: &Path, extra: &[&str]) -> (Vec<u8>, Vec<u8>) {
    let o = std::process::Command::new(program)
        .env("LC_ALL", "C")
        .arg("-v")
        .args(extra)
        .arg("-r")
        .arg(root)
        .arg("-o")
        .arg(out)
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "{}: {}",
        program.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    (o.stdout, o.stderr)
}

#[test]
fn mkfs_listing_and_messages_escape_hostile_names() {
    if !common::skip::mtd_utils() {
        return;
    }
    let tree = hostile_tree();
    let work = scratch();
    // As root, an owner beyond 16 bits makes mkfs warn with the path.
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if root {
        let p = tree.path().join("esc\x1b[31mred");
        std::os::unix::fs::lchown(&p, Some(70_000), Some(70_000)).unwrap();
    }
    let ours = work.path().join("ours.img");
    let (listing, messages) = mkfs_verbose(Path::new(common::OURS), tree.path(), &ours, &[]);
    // The listing's lines start with a tab (mkfs.jffs2's format).
    assert_terminal_safe("jffs2-mkfs -v", &listing, true);
    assert_terminal_safe("jffs2-mkfs messages", &messages, false);
    let listing = String::from_utf8(listing).unwrap();
    for shown in [
        "esc\\x1b[31mred",
        "cr\\rname",
        "tab\\tname",
        "nl\\nname",
        "rlo\\xe2\\x80\\xaetxt.exe",
        "bad\\xffbyte",
        "c1\\xc2\\x9b31m",
        "link -> tgt\\x1b[31m\\xe2\\x80\\xae",
    ] {
        assert!(listing.contains(shown), "{shown} not in\n{listing}");
    }
    if root {
        let m = String::from_utf8_lossy(&messages);
        assert!(
            m.contains("esc\\x1b[31mred: uid:gid 70000:70000 truncated"),
            "{m}"
        );
    }
    // Ordinary names: the very lines of mkfs.jffs2's listing; the image is the same.
    let reference = work.path().join("ref.img");
    let (ref_listing, _) = mkfs_verbose(common::mkfs_jffs2(), tree.path(), &reference, &[]);
    let ref_listing = String::from_utf8_lossy(&ref_listing).into_owned();
    for name in ["back\\slash", "caf\u{e9}", "plain name"] {
        let line = |l: &str| {
            l.lines()
                .find(|x| x.ends_with(&format!(" {name}")))
                .map(str::to_owned)
        };
        let want = line(&ref_listing).unwrap_or_else(|| panic!("{name} in\n{ref_listing}"));
        assert_eq!(line(&listing), Some(want), "{name}");
    }
    assert_eq!(
        std::fs::read(&ours).unwrap(),
        std::fs::read(&reference).unwrap(),
        "the image differs from mkfs.jffs2's"
    );
}

#[test]
fn image_names_are_escaped_in_every_listing_and_kept_by_c_and_json() {
    if !common::skip::mtd_utils() {
        return;
    }
    let tree = hostile_tree();
    let work = scratch();
    let img = work.path().join("names.img");
    let o = std::process::Command::new(common::mkfs_jffs2())
        .arg("-r")
        .arg(tree.path())
        .arg("-o")
        .arg(&img)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s = OsStr::new;

    for args in [
        vec![s("--list")],
        vec![s("--list"), s("-v")],
        vec![s("--info")],
    ] {
        let mut a = args.clone();
        a.push(img.as_os_str());
        let o = dump(&a);
        assert_eq!(o.code, Some(0), "{args:?}: {}", o.stderr);
        assert_terminal_safe(&format!("jffs2-dump {args:?}"), &o.stdout, false);
        assert_terminal_safe(
            &format!("jffs2-dump {args:?} (stderr)"),
            o.stderr.as_bytes(),
            false,
        );
        if args == [s("--list")] {
            let t = o.text();
            assert!(t.contains("rlo\\xe2\\x80\\xaetxt.exe"), "{t}");
            assert!(t.contains("esc\\x1b[31mred"), "{t}");
        }
    }
    // jffs2reader's listing.
    let o = run_prog(ours_as_reader(), &[img.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    assert_terminal_safe("jffs2reader", &o.stdout, false);

    // A name no host can hold, with an escape sequence in it: refused by the extraction and
    // reported by fsck, escaped both times.
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::REG, b"a/\x1b[31m\xe2\x80\xae")
        .file(2, b"x\n")
        .dirent(1, 2, 3, dt::REG, b"ok\x1b[2J")
        .file(3, b"y\n")
        .xattr(3, 1, 1, b"x\x1b[31m", "v\u{202e}".as_bytes());
    let bad = dump_common::put(work.path(), "bad.img", &c.build());
    let o = dump(&[s("--list"), s("-v"), bad.as_os_str()]);
    assert_terminal_safe("jffs2-dump --list -v (xattrs)", &o.stdout, false);
    assert!(o.text().contains("user.x\\x1b[31m"), "{}", o.text());
    let dest = work.path().join("dest");
    let o = dump(&[s("--extract"), dest.as_os_str(), bad.as_os_str()]);
    assert_eq!(o.code, Some(2), "{}", o.stderr);
    assert!(o.stderr.contains("refused"), "{}", o.stderr);
    assert_terminal_safe("jffs2-dump --extract", o.stderr.as_bytes(), false);
    let o = run_prog(
        Path::new(env!("CARGO_BIN_EXE_jffs2-fsck")),
        &[bad.as_os_str()],
    );
    assert!(o.stdout.len() + o.stderr.len() > 0);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("\\x1b[31m"),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    assert_terminal_safe("jffs2-fsck", &o.stdout, false);
    assert_terminal_safe("jffs2-fsck (stderr)", o.stderr.as_bytes(), false);

    // sumtool's -v listing names every dirent.
    let out = work.path().join("sum.img");
    let o = run_prog(
        Path::new(env!("CARGO_BIN_EXE_jffs2-sumtool")),
        &[s("-v"), s("-i"), img.as_os_str(), s("-o"), out.as_os_str()],
    );
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let all = [o.stdout.clone(), o.stderr.clone().into_bytes()].concat();
    assert!(
        String::from_utf8_lossy(&all).contains("esc\\x1b[31mred"),
        "{}",
        String::from_utf8_lossy(&all)
    );
    assert_terminal_safe("jffs2-sumtool -v", &all, false);

    // -c: mtd-utils' text byte for byte, names raw, under both of our names.
    let reference = run_prog(common::jffs2dump_path(), &[s("-c"), img.as_os_str()]);
    assert!(
        reference.stdout.windows(4).any(|w| w == b"\x1b[31"),
        "mtd-utils' jffs2dump -c printed no raw name"
    );
    for program in [
        dump_common::ours_as_jffs2dump(),
        Path::new(extract_common::OURS),
    ] {
        let o = run_prog(program, &[s("-c"), img.as_os_str()]);
        assert!(
            o.stdout == reference.stdout,
            "{}: -c differs from mtd-utils' jffs2dump",
            program.display()
        );
        assert_eq!(o.code, reference.code);
    }

    // JSON keeps the real characters (escaped the JSON way), and the bytes of names that
    // are not UTF-8.
    let o = dump(&[s("--json"), img.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let t = o.text();
    assert!(t.contains("esc\\u001b[31mred"), "JSON");
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    let names: Vec<String> = v["nodes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|n| n["fields"]["name"].as_str().map(str::to_owned))
        .collect();
    assert!(names.iter().any(|n| n == "rlo\u{202e}txt.exe"), "{names:?}");
    assert!(names.iter().any(|n| n == "cr\rname"), "{names:?}");
    assert!(
        t.contains(&format!("\"{}\"", "626164ff62797465")),
        "bad\\xffbyte's hex"
    );
}
