//! The host scan must see what fakeroot fakes (`docs/spec/ecosystem.md` §4): ownership, device nodes
//! and xattrs recorded by fakeroot exist only in its daemon, and are visible only through the
//! libc functions it wraps (`lstat`, `llistxattr`, `lgetxattr`).
//!
//! The test re-executes this test binary under `fakeroot`, with an environment variable that
//! switches it into the child role; the child scans the tree and checks the faked values. The
//! parent then checks that the real files are *not* what the child saw, which proves the
//! values came through fakeroot. A missing `fakeroot` is a failure, not a skip.

use std::path::Path;
use std::process::Command;

use jffs2::source::{
    apply_device_table, scan_host, SourceEntry, SourceOptions, SourceTree, XattrSelect,
};

const CHILD_ENV: &str = "JFFS2_SOURCE_FAKEROOT_CHILD_DIR";
const TEST_NAME: &str = "scan_sees_fakeroot_metadata";
const CHILD_OK: &str = "FAKEROOT-CHILD-OK";

fn entry<'a>(t: &'a SourceTree, full: &str) -> &'a SourceEntry {
    let id = t
        .find(full.as_bytes())
        .unwrap_or_else(|| panic!("{full} missing from the scanned tree"));
    &t.entries[id]
}

/// Runs inside fakeroot.
fn child(dir: &Path) {
    let opts = SourceOptions {
        xattr: XattrSelect::ALL,
        now: 1,
        ..Default::default()
    };
    let (mut tree, warnings) = scan_host(dir, &opts).expect("scan under fakeroot");
    assert!(warnings.is_empty(), "{warnings:?}");

    let f = entry(&tree, "/f");
    assert_eq!((f.uid, f.gid), (1234, 5678), "faked chown not seen");
    assert!(f.is_file());
    assert_eq!(f.permissions(), 0o4755, "faked set-uid mode not seen");
    let names: Vec<(u8, &[u8], &[u8])> = f
        .xattrs
        .iter()
        .map(|x| (x.prefix, &x.name[..], &x.value[..]))
        .collect();
    assert!(
        names.contains(&(1, &b"fake"[..], &b"1"[..])),
        "faked xattr not seen: {names:?}"
    );
    assert!(
        names.iter().any(|&(p, n, _)| p == 2 && n == b"capability"),
        "faked security.capability not seen: {names:?}"
    );

    let link = entry(&tree, "/link");
    assert!(link.is_symlink());
    assert_eq!((link.uid, link.gid), (4321, 8765));

    let console = entry(&tree, "/d/console");
    assert!(console.is_char_device(), "faked mknod not seen");
    assert_eq!((console.rdev_major, console.rdev_minor), (5, 1));
    assert_eq!((console.uid, console.gid), (0, 5));
    let sda = entry(&tree, "/d/sda");
    assert!(sda.is_block_device());
    assert_eq!((sda.rdev_major, sda.rdev_minor), (8, 0));

    // The device table's host-type check goes through lstat too: d/tty0 is (faked) a char
    // device, so a range creating /d/tty0 must accept it and copy its mtime.
    let table = b"/d/tty c 666 0 5 4 0 0 1 2\n/d/x p 600 1 1\n";
    let w = apply_device_table(&mut tree, table, Path::new("t"), dir, &opts)
        .expect("device table under fakeroot");
    assert!(
        w.iter().all(|w| w.message.starts_with("llistxattr(")),
        "{w:?}"
    );
    let d = entry(&tree, "/d");
    let added: Vec<&SourceEntry> = d.children.iter().map(|&c| &tree.entries[c]).collect();
    let tty0 = added
        .iter()
        .rev()
        .find(|e| e.name == b"tty0")
        .expect("range entry tty0");
    assert!(tty0.nlink >= 1, "host identity of tty0 not copied");
    assert_ne!(tty0.mtime, 1);
    println!("{CHILD_OK}");
}

fn sh(script: &str, dir: &Path) {
    let st = Command::new("sh")
        .arg("-c")
        .arg(script)
        .env("D", dir)
        .status()
        .expect("sh");
    assert!(st.success(), "{script}");
}

#[test]
fn scan_sees_fakeroot_metadata() {
    if let Some(dir) = std::env::var_os(CHILD_ENV) {
        child(Path::new(&dir));
        return;
    }

    let fakeroot = Command::new("fakeroot").arg("-v").output();
    assert!(
        matches!(&fakeroot, Ok(o) if o.status.success()),
        "fakeroot is required for this test (Debian package `fakeroot`): {fakeroot:?}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sh(
        r#"mkdir "$D/d" && : > "$D/f" && ln -s f "$D/link" && chmod 0644 "$D/f""#,
        dir,
    );

    let exe = std::env::current_exe().unwrap();
    let script = r#"
        set -e
        chown 1234:5678 "$D/f"
        chmod 4755 "$D/f"
        chown -h 4321:8765 "$D/link"
        mknod "$D/d/console" c 5 1
        chown 0:5 "$D/d/console"
        mknod "$D/d/sda" b 8 0
        mknod "$D/d/tty0" c 4 0
        setfattr -n user.fake -v 1 "$D/f"
        setfattr -n security.capability -v 0sAQAAAgAgAAAAAAAAAAAAAAAAAAA= "$D/f"
        exec "$EXE" --exact "$TEST" --nocapture --test-threads=1
    "#;
    let out = Command::new("fakeroot")
        .arg("--")
        .arg("sh")
        .arg("-c")
        .arg(script)
        .env("D", dir)
        .env("EXE", &exe)
        .env("TEST", TEST_NAME)
        .env(CHILD_ENV, dir)
        // Keep fakeroot from also performing the chown for real (we are often real root).
        .env("FAKEROOTDONTTRYCHOWN", "1")
        .output()
        .expect("run fakeroot");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains(CHILD_OK),
        "child under fakeroot failed ({})\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );

    // Outside fakeroot the real files differ from what the child saw, so the child's values
    // can only have come through fakeroot's libc wrappers.
    let (tree, _) = scan_host(
        dir,
        &SourceOptions {
            xattr: XattrSelect::ALL,
            ..Default::default()
        },
    )
    .unwrap();
    let console = entry(&tree, "/d/console");
    assert!(
        console.is_file(),
        "fakeroot created a real device node; the test proves nothing"
    );
    let f = entry(&tree, "/f");
    assert!(
        f.xattrs.is_empty(),
        "xattrs were set for real: {:?}",
        f.xattrs
    );
}
