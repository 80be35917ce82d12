use super::*;
use crate::source::{scan_host, XattrSelect};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

const NOW: u32 = 1_700_000_000;

fn opts() -> SourceOptions {
    SourceOptions {
        now: NOW,
        ..Default::default()
    }
}

fn set_mtime(p: &Path, secs: i64) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    let ts = [libc::timespec {
        tv_sec: secs,
        tv_nsec: 0,
    }; 2];
    // SAFETY: valid C string and a two-element timespec array.
    let rc = unsafe {
        libc::utimensat(
            libc::AT_FDCWD,
            c.as_ptr(),
            ts.as_ptr(),
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    assert_eq!(rc, 0);
}

fn mknod(p: &Path, mode: u32, major: u32, minor: u32) {
    let c = CString::new(p.as_os_str().as_bytes()).unwrap();
    // SAFETY: valid C string.
    assert_eq!(
        unsafe { libc::mknod(c.as_ptr(), mode, libc::makedev(major, minor)) },
        0
    );
    // Undo the umask.
    let perms = std::os::unix::fs::PermissionsExt::from_mode(mode & 0o7777);
    std::fs::set_permissions(p, perms).unwrap();
}

/// A small host tree: /dev (with null), /etc/passwd, /empty.
fn host() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let r = dir.path();
    std::fs::create_dir(r.join("dev")).unwrap();
    std::fs::create_dir(r.join("etc")).unwrap();
    std::fs::create_dir(r.join("empty")).unwrap();
    std::fs::write(r.join("etc/passwd"), b"root::0:0\n").unwrap();
    std::fs::write(r.join("dev/null"), b"").unwrap(); // a regular file standing in
    set_mtime(&r.join("etc/passwd"), 1000);
    dir
}

fn apply(
    r: &Path,
    table: &str,
    o: &SourceOptions,
) -> (SourceTree, Result<Vec<SourceWarning>, SourceError>) {
    let (mut t, _) = scan_host(r, o).unwrap();
    let res = apply_device_table(&mut t, table.as_bytes(), Path::new("table.txt"), r, o);
    (t, res)
}

fn get<'a>(t: &'a SourceTree, full: &str) -> &'a SourceEntry {
    &t.entries[t
        .find(full.as_bytes())
        .unwrap_or_else(|| panic!("no {full}"))]
}

fn names(t: &SourceTree, full: &str) -> Vec<String> {
    get(t, full)
        .children
        .iter()
        .map(|&c| String::from_utf8_lossy(&t.entries[c].name).into_owned())
        .collect()
}

// ---------------------------------------------------------------- parsing

#[test]
fn parse_full_line() {
    let l = parse_line(b"/dev/tty c 666 0 5 4 0 1 2 3");
    assert_eq!(l.converted, 10);
    assert_eq!(l.name, b"/dev/tty");
    assert_eq!(l.typ, b'c');
    assert_eq!(
        (l.mode, l.uid, l.gid, l.major, l.minor, l.start, l.inc, l.count),
        (0o666, 0, 5, 4, 0, 1, 2, 3)
    );
}

#[test]
fn parse_stops_at_first_failure_and_keeps_defaults() {
    // The classic "-" placeholder for count.
    let l = parse_line(b"/dev/mem c 640 0 0 1 1 0 0 -");
    assert_eq!(l.converted, 9);
    assert_eq!((l.major, l.minor, l.inc, l.count), (1, 1, 0, 0));
    // User/group names: everything from there on keeps its default.
    let l = parse_line(b"/dev/mtd c 660 root disk 90 0 0 2 8");
    assert_eq!(l.converted, 3);
    assert_eq!(
        (l.mode, l.uid, l.gid, l.major, l.minor, l.start, l.inc, l.count),
        (0o660, 0, 0, 0, 0, 0, 1, 0)
    );
    // "-" for the mode: default 0755.
    let l = parse_line(b"/etc d - 0 0");
    assert_eq!((l.converted, l.mode), (2, 0o755));
    // Only a name.
    assert_eq!(parse_line(b"/lonely").converted, 1);
    assert_eq!(parse_line(b"/x d").converted, 2);
    // The type is a single character; the rest of the word is the next field.
    let l = parse_line(b"/x cx 644");
    assert_eq!((l.converted, l.typ, l.mode), (2, b'c', 0o755));
    let l = parse_line(b"/x c644 1");
    assert_eq!((l.converted, l.mode, l.uid), (4, 0o644, 1));
}

#[test]
fn parse_number_edge_cases() {
    // Octal digits stop at '8': the rest is the next field.
    let l = parse_line(b"/x f 6408");
    assert_eq!((l.converted, l.mode, l.uid), (4, 0o640, 8));
    // Trailing junk ends conversion.
    let l = parse_line(b"/x f 644abc 5");
    assert_eq!((l.converted, l.mode, l.uid), (3, 0o644, 0));
    // Signs: strtoul semantics (negation modulo 2^64), '+' accepted.
    let l = parse_line(b"/x c -1 -1 +5 -0 07 -2");
    assert_eq!(l.converted, 8);
    assert_eq!(l.mode, u64::MAX);
    assert_eq!(l.uid, u64::MAX);
    assert_eq!(l.gid, 5);
    assert_eq!(l.major, 0);
    assert_eq!(l.minor, 7);
    assert_eq!(l.start, 2u64.wrapping_neg());
    // Overflow saturates (also when negative).
    let l = parse_line(b"/x c 0 99999999999999999999999 -99999999999999999999999");
    assert_eq!((l.uid, l.gid), (u64::MAX, u64::MAX));
    // Signs without digits fail.
    assert_eq!(parse_line(b"/x c 644 - 5").converted, 3);
    assert_eq!(parse_line(b"/x c 644 +x").converted, 3);
    assert_eq!(parse_line(b"/x c 644 --1").converted, 3);
    // No hex for %lu: "0x10" reads 0, then "x10" fails.
    let l = parse_line(b"/x c 644 0x10 7");
    assert_eq!((l.converted, l.uid, l.gid), (4, 0, 0));
    // Any C white space separates fields.
    let l = parse_line(b"/x\tc\x0b644\x0c1\r2");
    assert_eq!((l.converted, l.mode, l.uid, l.gid), (5, 0o644, 1, 2));
}

#[test]
fn line_splitting_trimming_and_numbers() {
    let t = b"# comment\n\n   \n  /a d 755\r\n\t# indented comment\n/b d\0 junk after nul\n\x0c# formfeed is not trimmed in front\nlast f 644";
    let got: Vec<(usize, &[u8])> = table_lines(t).collect();
    assert_eq!(
        got,
        vec![
            (4, &b"/a d 755"[..]),
            (6, &b"/b d"[..]),
            (7, &b"\x0c# formfeed is not trimmed in front"[..]),
            (8, &b"last f 644"[..]),
        ]
    );
    assert_eq!(table_lines(b"\0/x d\n").count(), 0);
}

#[test]
fn dirname_and_basename_like_glibc() {
    let cases: &[(&[u8], &[u8])] = &[
        (b"/dev/null", b"/dev"),
        (b"/dev", b"/"),
        (b"/", b"/"),
        (b"/dev/", b"/"),
        (b"/dev//null", b"/dev"),
        (b"/a/b/c//", b"/a/b"),
        (b"//x", b"//"),
        (b"//", b"//"),
        (b"///x", b"/"),
        (b"///", b"/"),
        (b"x", b"."),
        (b"a/", b"."),
        (b"a/b", b"a"),
        (b"", b"."),
    ];
    for (input, want) in cases {
        assert_eq!(
            dirname(input),
            *want,
            "dirname({})",
            String::from_utf8_lossy(input)
        );
    }
    assert_eq!(basename(b"/dev/null"), b"null");
    assert_eq!(basename(b"/"), b"");
    assert_eq!(basename(b"/dev/"), b"");
    assert_eq!(basename(b"x"), b"x");
}

// ---------------------------------------------------------------- application

#[test]
fn too_small_table_is_fatal() {
    let dir = host();
    let (_, res) = apply(dir.path(), "/a d 755", &opts());
    let e = res.unwrap_err();
    assert!(matches!(e, SourceError::DeviceTableTooSmall { .. }));
    assert_eq!(e.to_string(), "table.txt: not a proper device table file");

    let f = dir.path().join("small.txt");
    std::fs::write(&f, b"/a d 755\n").unwrap();
    let e = read_device_table(&f).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("{}: not a proper device table file", f.display())
    );
    std::fs::write(&f, b"/a d 755 0 0\n").unwrap();
    assert_eq!(read_device_table(&f).unwrap(), b"/a d 755 0 0\n");
    assert!(matches!(
        read_device_table(&dir.path().join("missing")),
        Err(SourceError::DeviceTableIo { .. })
    ));
}

#[test]
fn new_entries_are_appended_in_table_order_with_now() {
    let dir = host();
    let table = "\
# name type mode uid gid major minor start inc count
/dev/zz c 666 0 0 1 5 0 0 0
/dev/console c 600 0 5 5 1 0 0 -
/dev/aa b 640 0 6 8 0
/dev/fifo p 600 10 20
/newdir d 700 1 2
/newdir/inner d
";
    let (t, res) = apply(dir.path(), table, &opts());
    let w = res.unwrap();
    assert!(w.is_empty(), "{w:?}");
    // Host children (sorted) first, then table additions unsorted, in table order.
    assert_eq!(names(&t, "/dev"), ["null", "zz", "console", "aa", "fifo"]);
    assert_eq!(names(&t, "/"), ["dev", "empty", "etc", "newdir"]);
    assert_eq!(names(&t, "/newdir"), ["inner"]);

    let zz = get(&t, "/dev/zz");
    assert_eq!(zz.mode, libc::S_IFCHR | 0o666);
    assert_eq!((zz.rdev_major, zz.rdev_minor), (1, 5));
    assert_eq!((zz.mtime, zz.size, zz.nlink, zz.ino), (NOW, 0, 0, 0));
    assert_eq!(zz.host_path, dir.path().join("dev/zz"));
    assert_eq!(zz.parent, t.find(b"/dev"));
    let console = get(&t, "/dev/console");
    assert_eq!((console.uid, console.gid), (0, 5));
    assert_eq!((console.rdev_major, console.rdev_minor), (5, 1));
    let aa = get(&t, "/dev/aa");
    assert_eq!(aa.mode, libc::S_IFBLK | 0o640);
    assert_eq!((aa.rdev_major, aa.rdev_minor), (8, 0));
    let fifo = get(&t, "/dev/fifo");
    assert_eq!(
        (fifo.mode, fifo.uid, fifo.gid),
        (libc::S_IFIFO | 0o600, 10, 20)
    );
    let nd = get(&t, "/newdir");
    assert_eq!((nd.mode, nd.uid, nd.gid), (libc::S_IFDIR | 0o700, 1, 2));
    assert_eq!(get(&t, "/newdir/inner").mode, libc::S_IFDIR | 0o755);

    // faketime: 0 for table entries too.
    let o = SourceOptions {
        faketime: true,
        ..opts()
    };
    let (t, res) = apply(dir.path(), table, &o);
    res.unwrap();
    assert!(t.entries.iter().all(|e| e.mtime == 0));
}

#[test]
fn squash_does_not_apply_to_table_entries() {
    let dir = host();
    let o = SourceOptions {
        squash_uids: true,
        squash_perms: true,
        ..opts()
    };
    let table = "/dev/x c 4777 12 34 1 1\n/etc/passwd f 4666 56 78\n";
    let (t, res) = apply(dir.path(), table, &o);
    res.unwrap();
    let x = get(&t, "/dev/x");
    assert_eq!((x.mode, x.uid, x.gid), (libc::S_IFCHR | 0o4777, 12, 34));
    let p = get(&t, "/etc/passwd");
    assert_eq!((p.mode, p.uid, p.gid), (libc::S_IFREG | 0o4666, 56, 78));
    // Host entries stay squashed.
    assert_eq!(get(&t, "/etc").uid, 0);
}

#[test]
fn existing_entries_are_updated_in_place() {
    let dir = host();
    let r = dir.path();
    mknod(&r.join("dev/tty0"), libc::S_IFCHR | 0o600, 4, 0);
    let table = "\
/etc/passwd f 600 7 8
/dev/tty0 c 620 0 5 9 0
/dev/null c 666 0 0 1 3
/etc d 700 1 1 3 3
/empty f 644
";
    let (t, res) = apply(r, table, &opts());
    res.unwrap();
    let p = get(&t, "/etc/passwd");
    assert_eq!((p.mode, p.uid, p.gid), (libc::S_IFREG | 0o600, 7, 8));
    assert_eq!((p.mtime, p.size), (1000, 10)); // untouched
                                               // rdev only changes when both major and minor are non-zero (B-18).
    let tty = get(&t, "/dev/tty0");
    assert_eq!((tty.rdev_major, tty.rdev_minor), (4, 0));
    assert_eq!(tty.mode, libc::S_IFCHR | 0o620);
    // A type mismatch silently re-types the entry (a regular host file becomes a device).
    let null = get(&t, "/dev/null");
    assert_eq!(null.mode, libc::S_IFCHR | 0o666);
    assert_eq!((null.rdev_major, null.rdev_minor), (1, 3));
    // No new entries were created.
    assert_eq!(names(&t, "/dev"), ["null", "tty0"]);
    assert_eq!(names(&t, "/"), ["dev", "empty", "etc"]);
    let etc = get(&t, "/etc");
    assert_eq!(
        (etc.mode, etc.rdev_major, etc.rdev_minor),
        (libc::S_IFDIR | 0o700, 3, 3)
    );
    // "/empty" became a regular file: mkfs' lookup no longer descends into it.
    assert!(get(&t, "/empty").is_file());
}

#[test]
fn retyped_directory_hides_its_children_from_lookup() {
    let dir = host();
    let table = "/etc f 644\n/etc/passwd f 600 9 9\n";
    let (t, res) = apply(dir.path(), table, &opts());
    let w = res.unwrap();
    // /etc is no longer a directory, so "/etc/passwd" is not found and its parent "/etc"
    // is found by exact name: a new entry is hung below the re-typed entry... whose host
    // file exists, so it is created with the host's values.
    assert!(w.is_empty(), "{w:?}");
    let etc = t.find(b"/etc").unwrap();
    assert_eq!(t.entries[etc].children.len(), 2);
    let added = &t.entries[*t.entries[etc].children.last().unwrap()];
    assert_eq!(added.full_name, b"/etc/passwd");
    assert_eq!((added.uid, added.gid, added.size), (9, 9, 10));
}

#[test]
fn missing_parent_is_a_warning() {
    let dir = host();
    let table = "/nope/x c 666 0 0 1 1\n/nope/link l 777\n/dev/ok c 666 0 0 1 2\n";
    let (t, res) = apply(dir.path(), table, &opts());
    let w = res.unwrap();
    assert_eq!(w.len(), 2);
    assert_eq!(
        w[0].message,
        "skipping device_table entry '/nope/x': no parent directory!"
    );
    assert_eq!(w[0].location.as_deref(), Some("table.txt:1"));
    assert_eq!(w[0].kind, SourceWarningKind::Error);
    assert_eq!(
        w[0].to_string(),
        "table.txt:1: skipping device_table entry '/nope/x': no parent directory!"
    );
    // A new 'l' without a parent is only a warning too (the parent check comes first).
    assert_eq!(w[1].location.as_deref(), Some("table.txt:2"));
    assert!(t.find(b"/dev/ok").is_some());
    // No intermediate directories are created; relative names never find a parent.
    let (t, res) = apply(dir.path(), "/a/b/c d 755\ndev/x c 1 1 1 1 1\n", &opts());
    assert_eq!(res.unwrap().len(), 2);
    assert!(t.find(b"/a").is_none());
}

#[test]
fn fatal_errors_carry_the_line_number() {
    let dir = host();
    let cases = [
        (
            "# c\n/ d 755 0 0\n",
            2,
            "Device table entries require absolute paths".to_string(),
        ),
        (
            "/dev/x c 1 1 1 1 1\n\n/dev/y s 755\n",
            3,
            "Unsupported file type 's'".to_string(),
        ),
        (
            "/dev/newlink l 777 0 0\n",
            1,
            "Unsupported file type 'l'".to_string(),
        ),
        (
            "/etc/missing f 644 0 0\n",
            1,
            format!("{}/etc/missing: does not exist!", dir.path().display()),
        ),
        (
            "/dev/null2 c 644 0 0 1 1\n/dev/null-x d 700\n",
            0,
            String::new(),
        ),
    ];
    for (table, line, msg) in cases {
        let (_, res) = apply(dir.path(), table, &opts());
        if line == 0 {
            res.unwrap();
            continue;
        }
        let e = res.unwrap_err();
        match &e {
            SourceError::DeviceTable {
                table: tn,
                line: l,
                message,
            } => {
                assert_eq!(tn, Path::new("table.txt"));
                assert_eq!(*l, line, "{table}");
                assert_eq!(message, &msg);
            }
            other => panic!("unexpected {other:?}"),
        }
        assert_eq!(e.to_string(), format!("table.txt:{line}: {msg}"));
    }
}

#[test]
fn host_type_must_match_for_new_entries() {
    // Reach the "new entry whose host path exists" case through a name mkfs' lookup does not
    // find: "/dev//null" (double slash) is not found, its dirname "/dev" is.
    let dir = host();
    let (_, res) = apply(dir.path(), "/dev//null c 666 0 0 1 3\n", &opts());
    let e = res.unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "table.txt:1: {}/dev//null: file type does not match specified type!",
            dir.path().display()
        )
    );
    // With a matching type the host's mtime, size and identity are taken.
    let (t, res) = apply(dir.path(), "/etc//passwd f 600 3 4\n", &opts());
    res.unwrap();
    let etc = t.find(b"/etc").unwrap();
    let e = &t.entries[*t.entries[etc].children.last().unwrap()];
    assert_eq!(e.full_name, b"/etc//passwd");
    assert_eq!(e.name, b"passwd");
    assert_eq!((e.mtime, e.size, e.uid, e.gid), (1000, 10, 3, 4));
    let host = get(&t, "/etc/passwd");
    assert_eq!((e.dev, e.ino, e.nlink), (host.dev, host.ino, host.nlink));
}

#[test]
fn ranges() {
    let dir = host();
    let r = dir.path();
    // tty1 exists on the host as a char device: identity and mtime are taken from it.
    mknod(&r.join("dev/tty1"), libc::S_IFCHR | 0o600, 4, 1);
    set_mtime(&r.join("dev/tty1"), 4242);
    let table = "\
/dev/tty c 666 0 5 4 0 0 1 3
/dev/mtd c 660 0 6 90 0 0 2 4
/dev/hda b 640 0 0 3 1 1 1 3
/dev/null c 666 0 0 1 3 7 1 2
/dev/zero c 666 0 0 1 5 0 0 1
/dev/none c 666 0 0 1 5 0 1 0
";
    let (t, res) = apply(r, table, &opts());
    res.unwrap();
    assert_eq!(
        names(&t, "/dev"),
        [
            "null", "tty1", // host
            "tty0", "tty1", "tty2", // range (tty1 again: ranges never update)
            "mtd0", "mtd1", "mtd2", "mtd3", "hda1", "hda2", "hda3", "null7", "null8", "zero0",
            "none" // count 0: a plain device
        ]
    );
    let dev = t.find(b"/dev").unwrap();
    let kids: Vec<&SourceEntry> = t.entries[dev]
        .children
        .iter()
        .map(|&c| &t.entries[c])
        .collect();
    let minors: Vec<(u32, u32)> = kids[2..]
        .iter()
        .map(|e| (e.rdev_major, e.rdev_minor))
        .collect();
    assert_eq!(
        minors,
        [
            (4, 0),
            (4, 1),
            (4, 2),
            (90, 0),
            (90, 2),
            (90, 4),
            (90, 6),
            (3, 1),
            (3, 2),
            (3, 3),
            (1, 3),
            (1, 4),
            (1, 5),
            (1, 5)
        ]
    );
    assert!(kids[2..5]
        .iter()
        .all(|e| e.mode == libc::S_IFCHR | 0o666 && e.gid == 5));
    assert_eq!(kids[9].name, b"hda1");
    assert_eq!(kids[9].mode, libc::S_IFBLK | 0o640);
    // The range's tty1 shares the host tty1's identity (mkfs copies the lstat values).
    let host_tty1 = kids[1];
    let range_tty1 = kids[3];
    assert_eq!(range_tty1.full_name, b"/dev/tty1");
    assert_eq!(
        (range_tty1.dev, range_tty1.ino),
        (host_tty1.dev, host_tty1.ino)
    );
    assert_eq!(range_tty1.mtime, 4242);
    assert_eq!(kids[2].mtime, NOW);
    assert_eq!(kids[2].nlink, 0);
    // mkfs builds range host paths as "%s/%s%lu".
    let mut want = r.as_os_str().as_bytes().to_vec();
    want.extend_from_slice(b"//dev/tty0");
    assert_eq!(kids[2].host_path.as_os_str().as_bytes(), &want[..]);
}

#[test]
fn range_arithmetic_wraps_and_is_bounded() {
    let dir = host();
    // start + count wraps to below start: no iteration at all (unsigned long loop).
    let (t, res) = apply(dir.path(), "/dev/w c 666 0 0 1 1 -1 1 1\n", &opts());
    res.unwrap();
    assert_eq!(names(&t, "/dev"), ["null"]);
    // minor + k*inc wraps and is truncated to 32 bits like makedev().
    let (t, res) = apply(dir.path(), "/dev/v c 666 0 0 1 -1 0 1 2\n", &opts());
    res.unwrap();
    let v0 = get(&t, "/dev/v0");
    let v1 = get(&t, "/dev/v1");
    assert_eq!((v0.rdev_minor, v1.rdev_minor), (u32::MAX, 0));
    // uid/gid/mode are truncated to 32 bits when stored.
    let (t, res) = apply(dir.path(), "/dev/u c 644 -1 4294967297 1 1\n", &opts());
    res.unwrap();
    let u = get(&t, "/dev/u");
    assert_eq!((u.uid, u.gid), (u32::MAX, 1));
    // Absurd counts fail with a location instead of exhausting memory.
    let (_, res) = apply(dir.path(), "/dev/huge c 666 0 0 1 1 0 1 -1\n", &opts());
    let e = res.unwrap_err();
    assert!(
        e.to_string().starts_with("table.txt:1: device range of "),
        "{e}"
    );
}

#[test]
fn lines_with_fewer_than_two_fields_are_ignored() {
    let dir = host();
    let (t, res) = apply(dir.path(), "/dev/lonely\n/dev/ok p\n", &opts());
    assert!(res.unwrap().is_empty());
    assert!(t.find(b"/dev/lonely").is_none());
    assert!(get(&t, "/dev/ok").is_fifo());
    let o = SourceOptions {
        verbose: true,
        ..opts()
    };
    let (_, res) = apply(dir.path(), "/dev/lonely\n/dev/ok p\n", &o);
    let w = res.unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0].kind, SourceWarningKind::Notice);
    assert_eq!(w[0].location.as_deref(), Some("table.txt:1"));
}

#[test]
fn relative_root_quirk() {
    // mkfs chdir()s into the root and then looks at rootdir + name, so a relative -r points
    // below the root itself (B-18). Emulated by resolving against the root.
    let outer = tempfile::tempdir().unwrap();
    let r = outer.path().join("rootfs");
    std::fs::create_dir_all(r.join("dev")).unwrap();
    std::fs::write(r.join("dev/data"), b"12345").unwrap();
    let (mut t, _) = scan_host(&r, &opts()).unwrap();
    let table = b"/dev/data2 f 644 0 0\n";
    // As given: relative "rootfs" -> looks for <root>/rootfs/dev/data2: does not exist.
    let e = apply_device_table(&mut t, table, Path::new("t"), Path::new("rootfs"), &opts())
        .unwrap_err();
    assert_eq!(e.to_string(), "t:1: rootfs/dev/data2: does not exist!");
    // Make it exist where mkfs would look.
    std::fs::create_dir_all(r.join("rootfs/dev")).unwrap();
    std::fs::write(r.join("rootfs/dev/data2"), b"abc").unwrap();
    set_mtime(&r.join("rootfs/dev/data2"), 77);
    let (mut t, _) = scan_host(&r, &opts()).unwrap();
    apply_device_table(&mut t, table, Path::new("t"), Path::new("rootfs"), &opts()).unwrap();
    let e = get(&t, "/dev/data2");
    assert_eq!((e.size, e.mtime), (3, 77));
    assert_eq!(e.host_path, t.root().host_path.join("rootfs/dev/data2"));

    // An absolute -r (or the default ".") finds the real file.
    let (mut t, _) = scan_host(&r, &opts()).unwrap();
    let table = b"/dev/data3 p 600 0 0\n/dev/data f 600 0 0\n";
    apply_device_table(&mut t, table, Path::new("t"), &r, &opts()).unwrap();
    assert_eq!(get(&t, "/dev/data3").mtime, NOW);
    let (mut t, _) = scan_host(&r, &opts()).unwrap();
    apply_device_table(&mut t, table, Path::new("t"), Path::new("."), &opts()).unwrap();
    assert_eq!(
        get(&t, "/dev/data3").host_path,
        t.root().host_path.join("./dev/data3")
    );
}

#[test]
fn xattrs_of_new_entries_come_from_their_host_path() {
    let dir = host();
    let r = dir.path();
    mknod(&r.join("dev/ttyS0"), libc::S_IFCHR | 0o600, 4, 64);
    let st = Command::new("setfattr")
        // user.* is not allowed on device nodes; trusted.* is (we are root).
        .args(["-n", "trusted.cap", "-v", "yes"])
        .arg(r.join("dev/ttyS0"))
        .status()
        .unwrap();
    assert!(st.success());
    let o = SourceOptions {
        xattr: XattrSelect::ALL,
        verbose: true,
        ..opts()
    };
    let (t, res) = apply(r, "/dev/ttyS c 600 0 0 4 64 0 1 2\n", &o);
    let w = res.unwrap();
    let s0 = get(&t, "/dev/ttyS0");
    assert_eq!(s0.xattrs.len(), 1); // host entry
    let dev = t.find(b"/dev").unwrap();
    let kids: Vec<&SourceEntry> = t.entries[dev]
        .children
        .iter()
        .map(|&c| &t.entries[c])
        .collect();
    let added0 = kids.iter().rev().find(|e| e.name == b"ttyS0").unwrap();
    assert_eq!(added0.xattrs, s0.xattrs);
    let added1 = kids.iter().find(|e| e.name == b"ttyS1").unwrap();
    assert!(added1.xattrs.is_empty());
    // ttyS1 does not exist on the host: mkfs' llistxattr fails, reported only with -v.
    assert_eq!(w.len(), 1, "{w:?}");
    assert!(w[0].message.starts_with("llistxattr('"));
    assert!(w[0]
        .message
        .ends_with("//dev/ttyS1') = 2 : No such file or directory"));
}

#[test]
fn find_filesystem_entry_semantics() {
    let dir = host();
    let r = dir.path();
    std::fs::create_dir_all(r.join("a/x")).unwrap();
    std::fs::create_dir_all(r.join("a.b/y")).unwrap();
    std::fs::write(r.join("a.b/y/f"), b"").unwrap();
    let (t, _) = scan_host(r, &opts()).unwrap();
    assert_eq!(t.find(b"/"), Some(0));
    assert!(t.find(b"/a.b/y/f").is_some());
    assert!(t.find(b"/a/x").is_some());
    // "/a/x" has no children: looking below it stops there.
    assert!(t.find(b"/a/x/z").is_none());
    assert!(t.find(b"/a/zz").is_none());
    assert!(t.find(b"/etc/").is_none());
    assert!(t.find(b"etc").is_none());
    assert!(t.find(b"").is_none());
}

#[test]
fn malformed_fields_are_located_errors() {
    let dir = host();
    let cases = [
        // A device without its numbers would silently be 0,0.
        (
            "/dev/x c 666\n",
            "'/dev/x': a device needs its major and minor numbers",
        ),
        (
            "/dev/x b 660 0 0 8 -\n",
            "'/dev/x': a device needs its major and minor numbers",
        ),
        (
            "/dev/x c\n",
            "'/dev/x': a device needs its major and minor numbers",
        ),
        // A mode that is no octal number would silently be 0755.
        (
            "/dev/x c 99999999999 0 0 1 1\n",
            "mode '99999999999' is not an octal number (nor '-')",
        ),
        // Beyond the permission bits it would change the type.
        (
            "/dev/x c 77777777777 0 0 1 1\n",
            "'/dev/x': mode 77777777777 is more than the permission bits (07777)",
        ),
        // Names instead of numbers would silently be root.
        (
            "/dev/x c 660 root disk 90 0\n",
            "uid 'root' is not a decimal number (nor '-')",
        ),
        (
            "/x f 644abc 5\n",
            "uid 'abc' is not a decimal number (nor '-')",
        ),
    ];
    for (table, msg) in cases {
        let table = format!("# header\n{table}");
        let (_, res) = apply(dir.path(), &table, &opts());
        let e = res.unwrap_err();
        assert_eq!(e.to_string(), format!("table.txt:2: {msg}"), "{table}");
    }
    // What real tables write stays accepted: '-' placeholders, trailing fields left out.
    let ok = "/d1 d 755 0 0 - - - - -\n/d2 d 1777\n/d3 d\n/dev/c c 600 0 0 5 1 - - -\n\
              /dev/t c 666 0 0 4 0 0 1 2\n/dev/p p 600 0 0\n";
    let (t, res) = apply(dir.path(), ok, &opts());
    assert!(res.unwrap().is_empty());
    assert_eq!(get(&t, "/d3").mode, libc::S_IFDIR | 0o755);
    assert_eq!(
        (get(&t, "/dev/c").rdev_major, get(&t, "/dev/c").rdev_minor),
        (5, 1)
    );
    assert!(t.find(b"/dev/t1").is_some());
}

#[test]
fn the_whole_table_is_bounded() {
    let dir = host();
    let o = opts();
    // Each range fits; together they do not. The line that crosses the bound is named.
    let table = "/dev/a c 666 0 0 1 0 0 1 6\n/dev/b d 755 0 0\n/dev/c c 666 0 0 1 0 0 1 4\n";
    let (mut t, _) = scan_host(dir.path(), &o).unwrap();
    let e =
        apply_limited(&mut t, table.as_bytes(), Path::new("t"), dir.path(), &o, 10).unwrap_err();
    assert_eq!(
        e.to_string(),
        "t:3: the device table creates more than 10 entries (ranges expanded)"
    );
    let (mut t, _) = scan_host(dir.path(), &o).unwrap();
    apply_limited(&mut t, table.as_bytes(), Path::new("t"), dir.path(), &o, 11).unwrap();
    // The real bound: three ranges of 4 Mi entries (3 GB with mkfs.jffs2) fail at once.
    let table = "/dev/a c 666 0 0 1 0 0 1 4194304\n".repeat(3);
    let (_, res) = apply(dir.path(), &table, &o);
    assert!(res
        .unwrap_err()
        .to_string()
        .starts_with("table.txt:1: device range of 4194304"));
    assert_eq!(MAX_TABLE_ENTRIES, 1 << 20);
}
