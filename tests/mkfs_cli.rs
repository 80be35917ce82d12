//! Command-line behaviour of `jffs2-mkfs` compared with mtd-utils' `mkfs.jffs2`
//! (`docs/spec/mtd-utils-spec.md` §3.1, §8): exit codes and
//! messages, the option quirks, output to stdout, atomic output, the `mkfs.jffs2` name, and
//! the additions mkfs.jffs2 does not have (`--summary`, `SOURCE_DATE_EPOCH`, 4-byte device
//! numbers, `--list-compressors`, extra warnings).
//!
//! Our binary is run through a symlink named `mkfs.jffs2` wherever messages are compared,
//! so that both tools print the same program name.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

/// Runs `tool` with `args`, then `-r root -o out` (when given).
fn mkfs(tool: Tool, args: &[&str], root: Option<&Path>, out: Option<&Path>) -> Output {
    let mut c = tool.command();
    c.args(args);
    if let Some(r) = root {
        c.arg("-r").arg(r);
    }
    if let Some(o) = out {
        c.arg("-o").arg(o);
    }
    run(c)
}

/// Both tools fail with `status` and the same stderr; ours leaves no output file.
fn same_failure(args: &[&str], status: i32) -> String {
    let t = tree(Kind::Single);
    let work = scratch();
    let (ref_out, our_out) = (work.path().join("ref.img"), work.path().join("our.img"));
    let r = mkfs(Tool::Ref, args, Some(t.path()), Some(&ref_out));
    let o = mkfs(Tool::OursAsMkfs, args, Some(t.path()), Some(&our_out));
    assert_eq!(r.status, status, "mkfs.jffs2 {args:?}: {}", r.stderr_text());
    assert_eq!(o.status, status, "ours {args:?}: {}", o.stderr_text());
    assert_eq!(
        o.stderr_text(),
        r.stderr_text(),
        "stderr of {args:?} (left: ours, right: mkfs.jffs2)"
    );
    assert!(!our_out.exists(), "{args:?}: we left an output file behind");
    o.stderr_text()
}

#[test]
fn bad_erase_sizes() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let e = same_failure(&["-e", "128K"], 255);
    assert_eq!(e, "mkfs.jffs2: error!: Unknown units in erasesize\n\n");
    same_failure(&["-e", "128KB"], 255);
    same_failure(&["-e", "128k"], 255);
    let e = same_failure(&["-e", "0"], 255);
    assert_eq!(e, "mkfs.jffs2: error!: Unrecognisable erase size\n\n");
    same_failure(&["--eraseblock=KiB"], 255);
}

#[test]
fn small_erase_size_is_raised_with_a_message() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Single);
    let work = scratch();
    for arg in ["4096", "0x1000", "4KiB", "1"] {
        let (a, b) = (work.path().join("a"), work.path().join("b"));
        let r = mkfs(Tool::Ref, &["-e", arg], Some(t.path()), Some(&a));
        let o = mkfs(Tool::OursAsMkfs, &["-e", arg], Some(t.path()), Some(&b));
        assert_eq!((r.status, o.status), (0, 0), "-e {arg}");
        assert_eq!(o.stderr_text(), r.stderr_text(), "-e {arg}");
        assert!(
            r.stderr_text().contains("Increasing to 8KiB minimum"),
            "-e {arg}"
        );
        assert_eq!(
            std::fs::read(&a).unwrap(),
            std::fs::read(&b).unwrap(),
            "-e {arg}"
        );
    }
}

#[test]
fn cleanmarker_size_checks() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let e = same_failure(&["-c", "8"], 255);
    assert_eq!(e, "mkfs.jffs2: error!: cleanmarker size must be >= 12\n");
    same_failure(&["-c", "11"], 255);
    // Checked against the erase size known when -c is parsed (§8 B-5).
    let e = same_failure(&["-c", "70000", "-e", "128KiB"], 255);
    assert_eq!(
        e,
        "mkfs.jffs2: error!: cleanmarker size must be < eraseblock size\n"
    );
    same_failure(&["-c", "65536"], 255);
    // ... so the other order works, and gives the same image.
    let t = tree(Kind::Small);
    let work = scratch();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    let args = ["-e", "128KiB", "-c", "70000"];
    let r = mkfs(Tool::Ref, &args, Some(t.path()), Some(&a));
    let o = mkfs(Tool::Ours, &args, Some(t.path()), Some(&b));
    assert_eq!((r.status, o.status), (0, 0), "{}", o.stderr_text());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

#[test]
fn options_given_twice() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let e = same_failure(&["-r", "/", "-d", "/"], 255);
    assert_eq!(
        e,
        "mkfs.jffs2: error!: root directory specified more than once\n"
    );
    let work = scratch();
    let o1 = work.path().join("one.img");
    let o1 = o1.to_str().unwrap();
    let e = same_failure(&["-o", o1], 255);
    assert_eq!(
        e,
        "mkfs.jffs2: error!: output filename specified more than once\n"
    );
    // The incremental image too.
    let t = tree(Kind::Single);
    let old = work.path().join("old.img");
    assert_eq!(mkfs(Tool::Ref, &[], Some(t.path()), Some(&old)).status, 0);
    let old = old.to_str().unwrap();
    let e = same_failure(&["-i", old, "-i", old], 255);
    assert_eq!(
        e,
        "mkfs.jffs2: error!: (incremental) filename specified more than once\n"
    );
}

#[test]
fn other_bad_arguments() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    same_failure(&["-m", "bogus"], 255);
    same_failure(&["-x", "bogus"], 255);
    same_failure(&["-X", "LZO"], 255);
    same_failure(&["-y", "x:zlib"], 255);
    same_failure(&["-y", "-1:zlib"], 255);
    let e = same_failure(&["-y", "10:bogus"], 1);
    assert_eq!(e, "mkfs.jffs2: compressor bogus not found.\n");
    same_failure(&["-i", "/nonexistent/old.img"], 255);
    // A device table shorter than 10 bytes.
    let work = scratch();
    let short = work.path().join("short.txt");
    std::fs::write(&short, "/dev d\n").unwrap();
    same_failure(&["-D", short.to_str().unwrap()], 255);
    same_failure(&["-D", "/nonexistent/table.txt"], 255);
}

/// A bad `-o` fails before any work, as mkfs.jffs2's does while it reads its options
/// (§3.1): a directory or a missing parent is reported even when the root is missing too,
/// with the errno's text; as jffs2-mkfs the message names the path.
#[test]
fn bad_output_fails_before_the_work() {
    let work = scratch();
    let missing = work.path().join("no-such-root");
    let dir = work.path().join("outdir");
    std::fs::create_dir(&dir).unwrap();
    let nodir = work.path().join("no-such-dir/x.img");
    for (out, errno) in [
        (&dir, "error 21 (Is a directory)"),
        (&nodir, "error 2 (No such file or directory)"),
    ] {
        let o = mkfs(Tool::Ours, &[], Some(&missing), Some(out));
        assert_eq!(o.status, 255, "{}", o.stderr_text());
        assert_eq!(
            o.stderr_text(),
            format!(
                "jffs2-mkfs: error!: open output file {}\n            {errno}\n",
                out.display()
            )
        );
        if require_mtd_utils() {
            let r = mkfs(Tool::Ref, &[], Some(&missing), Some(out));
            let m = mkfs(Tool::OursAsMkfs, &[], Some(&missing), Some(out));
            assert_eq!((m.status, m.stderr_text()), (r.status, r.stderr_text()));
        }
    }
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "left a file in -o DIR"
    );
}

#[test]
fn missing_root_directory() {
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let missing = work.path().join("no-such-root");
    for tool in [Tool::Ref, Tool::Ours] {
        let out = work.path().join(format!("{tool:?}.img"));
        let o = mkfs(tool, &[], Some(&missing), Some(&out));
        assert_eq!(o.status, 255, "{tool:?}: {}", o.stderr_text());
        assert!(
            o.stderr_text().contains(missing.to_str().unwrap()),
            "{tool:?}: the message must name the root: {}",
            o.stderr_text()
        );
        if tool == Tool::Ours {
            assert!(!out.exists(), "an output file was left behind");
        }
    }
    // A root that is a file.
    let file = work.path().join("file");
    std::fs::write(&file, "x").unwrap();
    let out = work.path().join("ours2.img");
    let o = mkfs(Tool::Ours, &[], Some(&file), Some(&out));
    assert_ne!(o.status, 0);
    assert!(
        o.stderr_text().contains(file.to_str().unwrap()),
        "{}",
        o.stderr_text()
    );
    assert!(!out.exists());
}

/// A tree readable only by root, and an output directory anyone may write.
fn unreadable_setup(what: &str) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let work = scratch();
    let p = work.path();
    std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let root = p.join("tree");
    std::fs::create_dir_all(root.join("sub")).unwrap();
    std::fs::write(root.join("a"), "readable\n").unwrap();
    let secret = root.join("sub/secret");
    std::fs::write(&secret, "secret\n").unwrap();
    let out = p.join("out");
    std::fs::create_dir(&out).unwrap();
    use std::os::unix::fs::PermissionsExt;
    let mode = |m| std::fs::Permissions::from_mode(m);
    std::fs::set_permissions(&root, mode(0o755)).unwrap();
    std::fs::set_permissions(root.join("sub"), mode(0o755)).unwrap();
    std::fs::set_permissions(&out, mode(0o777)).unwrap();
    let culprit = match what {
        "file" => {
            std::fs::set_permissions(&secret, mode(0o000)).unwrap();
            secret
        }
        _ => {
            std::fs::set_permissions(root.join("sub"), mode(0o700)).unwrap();
            root.join("sub")
        }
    };
    (work, root, out, culprit)
}

/// Runs `tool` as user nobody (we run as root, which can read anything).
fn as_nobody(tool: Tool, args: &[&OsString]) -> Output {
    let mut c = Command::new("setpriv");
    c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(tool.program())
        .args(args)
        .env("LC_ALL", "C");
    run(c)
}

#[test]
fn unreadable_file_or_directory() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    for what in ["file", "dir"] {
        let (_work, root, out, culprit) = unreadable_setup(what);
        let img = out.join("img");
        let args: Vec<OsString> = vec![
            "-r".into(),
            root.clone().into(),
            "-o".into(),
            img.clone().into(),
        ];
        let refs: Vec<&OsString> = args.iter().collect();
        let r = as_nobody(Tool::Ref, &refs);
        assert_eq!(r.status, 255, "mkfs.jffs2 ({what}): {}", r.stderr_text());
        let _ = std::fs::remove_file(&img);
        // A previous image must survive a failed run.
        std::fs::write(&img, "previous image").unwrap();
        // Writable by nobody: a file they may not write is refused before any reading,
        // as mkfs.jffs2's open refuses it.
        std::fs::set_permissions(&img, std::os::unix::fs::PermissionsExt::from_mode(0o666))
            .unwrap();
        let o = as_nobody(Tool::OursAsMkfs, &refs);
        assert_eq!(o.status, 255, "ours ({what}): {}", o.stderr_text());
        let err = o.stderr_text();
        assert!(
            err.contains(culprit.to_str().unwrap()),
            "the message must name {}: {err}",
            culprit.display()
        );
        assert_eq!(err.lines().count(), 1, "one clear message: {err}");
        assert_eq!(
            std::fs::read(&img).unwrap(),
            b"previous image",
            "output was touched"
        );
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "temporary files left behind: {left:?}");
    }
}

#[test]
fn bad_device_table_lines_name_the_line() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Single);
    let work = scratch();
    for (table, line, msg) in [
        (
            "# comment\n/dev d 755 0 0 - - - - -\n/dev/x z 666 0 0 1 1 - - -\n",
            3,
            "Unsupported file type 'z'",
        ),
        (
            "# comment\n\n/ d 755 0 0 - - - - -\n",
            3,
            "Device table entries require absolute paths",
        ),
        ("/new l 777 0 0 - - - - -\n", 1, "Unsupported file type 'l'"),
        (
            "/dev d 755 0 0\n/gone f 644 0 0 - - - - -\n",
            2,
            "does not exist!",
        ),
        (
            "/dev d 755 0 0\n/only.txt d 755 0 0\n/only.txt/x c 644 0 0 1 1\n",
            0,
            "",
        ),
    ] {
        let dt = work.path().join("table.txt");
        std::fs::write(&dt, table).unwrap();
        let dts = dt.to_str().unwrap();
        let (a, b) = (work.path().join("a.img"), work.path().join("b.img"));
        let r = mkfs(Tool::Ref, &["-f", "-D", dts], Some(t.path()), Some(&a));
        // A previous image must survive a failed run (the table is read after the scan).
        std::fs::write(&b, "previous image").unwrap();
        let o = mkfs(
            Tool::OursAsMkfs,
            &["-f", "-D", dts],
            Some(t.path()),
            Some(&b),
        );
        assert_eq!(o.status, r.status, "{table:?}: {}", o.stderr_text());
        if line == 0 {
            assert_eq!(o.status, 0);
            assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
            continue;
        }
        assert_eq!(o.status, 255);
        let err = o.stderr_text();
        assert!(
            r.stderr_text().contains(msg),
            "mkfs.jffs2: {}",
            r.stderr_text()
        );
        assert!(err.contains(msg), "{table:?}: {err}");
        assert!(
            err.contains(&format!("{dts}:{line}")),
            "the line number {line} must be named: {err}"
        );
        assert_eq!(
            std::fs::read(&b).unwrap(),
            b"previous image",
            "output was touched"
        );
    }
}

#[test]
fn list_compressors() {
    if !require_mtd_utils() {
        return;
    }
    let r = run_tool(Tool::Ref, &["-L"]);
    let o = run_tool(Tool::OursAsMkfs, &["-L"]);
    assert_eq!((r.status, o.status), (255, 255));
    assert_eq!(o.stderr_text(), r.stderr_text());
    assert_eq!(o.stdout_text(), r.stdout_text());
    assert!(r.stderr_text().contains("      zlib priority:60 enabled\n"));
    // --list-compressors is in mkfs.jffs2's help but not in its option table (§8 B-2);
    // ours has it, prints the list on stdout and exits 0.
    let r = run_tool(Tool::Ref, &["--list-compressors"]);
    assert_eq!(r.status, 1);
    let o = run_tool(Tool::Ours, &["--list-compressors"]);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    let list = run_tool(Tool::Ref, &["-L"]).stderr_text();
    // (errmsg_die adds a newline after the list.)
    let list = list.strip_prefix("mkfs.jffs2: error!: \n").unwrap();
    assert_eq!(o.stdout_text().trim_end(), list.trim_end());
    // -y changes the list.
    let r = run_tool(Tool::Ref, &["-y", "90:rtime", "-X", "lzo", "-L"]);
    let o = run_tool(Tool::OursAsMkfs, &["-y", "90:rtime", "-X", "lzo", "-L"]);
    assert_eq!(o.stderr_text(), r.stderr_text());
}

#[test]
fn help_version_and_unknown_options() {
    if !require_mtd_utils() {
        return;
    }
    let r = run_tool(Tool::Ref, &["-h"]);
    let o = run_tool(Tool::OursAsMkfs, &["-h"]);
    assert_eq!((r.status, o.status), (0, 0));
    // Ours is mkfs.jffs2's help with a section of additions at the end.
    let theirs = r.stdout_text();
    assert!(
        o.stdout_text().starts_with(theirs.trim_end()),
        "our help must start with mkfs.jffs2's:\n{}",
        text_difference("help", &theirs, &o.stdout_text()).unwrap_or_default()
    );
    let o2 = run_tool(Tool::Ours, &["--help"]);
    assert_eq!(o2.status, 0);

    for bad in ["-Z", "--bogus", "-?"] {
        let r = run_tool(Tool::Ref, &[bad]);
        let o = run_tool(Tool::OursAsMkfs, &[bad]);
        assert_eq!((r.status, o.status), (1, 1), "{bad}");
        assert!(
            o.stdout_text().starts_with("Usage: mkfs.jffs2"),
            "{bad}: help on stdout"
        );
        assert!(r.stdout_text().starts_with("Usage: mkfs.jffs2"), "{bad}");
    }

    let r = run_tool(Tool::Ref, &["-V"]);
    assert_eq!(r.status, 0);
    assert!(r.stdout_text().starts_with("mkfs.jffs2 (mtd-utils) "));
    let o = run_tool(Tool::OursAsMkfs, &["-V"]);
    assert_eq!(o.status, 0);
    assert!(
        o.stdout_text().starts_with("mkfs.jffs2 ("),
        "{}",
        o.stdout_text()
    );
    let o = run_tool(Tool::Ours, &["--version"]);
    assert_eq!(o.status, 0);
    assert!(
        o.stdout_text().starts_with("jffs2-mkfs ("),
        "{}",
        o.stdout_text()
    );
}

#[test]
fn program_name_follows_argv0() {
    let o = run_tool(Tool::Ours, &["-e", "0"]);
    assert_eq!(o.status, 255);
    assert!(
        o.stderr_text().starts_with("jffs2-mkfs: error!: "),
        "{}",
        o.stderr_text()
    );
    let o = run_tool(Tool::OursAsMkfs, &["-e", "0"]);
    assert_eq!(o.status, 255);
    assert!(
        o.stderr_text().starts_with("mkfs.jffs2: error!: "),
        "{}",
        o.stderr_text()
    );
    // Through a symlink in a directory on PATH, as an installed drop-in would be.
    let dir = ours_as_mkfs().parent().unwrap();
    let mut c = Command::new("mkfs.jffs2");
    c.env("PATH", dir).args(["-c", "1"]);
    let o = run(c);
    assert_eq!(o.status, 255);
    assert_eq!(
        o.stderr_text(),
        "mkfs.jffs2: error!: cleanmarker size must be >= 12\n"
    );
}

#[test]
fn pad_with_a_space_pads_to_the_block_end_only() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let work = scratch();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    let args = ["-l", "-p", "0x40000"];
    let r = mkfs(Tool::Ref, &args, Some(t.path()), Some(&a));
    let o = mkfs(Tool::OursAsMkfs, &args, Some(t.path()), Some(&b));
    assert_eq!((r.status, o.status), (0, 0));
    let (ia, ib) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_eq!(ia, ib);
    assert_eq!(ib.len() % 65536, 0);
    assert!(
        ib.len() < 0x40000,
        "padded to the block end, not to 0x40000"
    );
    // We say that the operand was ignored.
    assert!(o.stderr_text().contains("0x40000"), "{}", o.stderr_text());
}

#[test]
fn lzma_names() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let work = scratch();
    let (a, b) = (work.path().join("a"), work.path().join("b"));
    // -x lzma (OpenWrt recipes): silently the same image as mkfs.jffs2 without it (the
    // complete OpenWrt command lines are in tests/openwrt.rs).
    let o = mkfs(
        Tool::OursAsMkfs,
        &["-l", "-x", "lzma"],
        Some(t.path()),
        Some(&b),
    );
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(!o.stderr_text().contains("lzma"), "{}", o.stderr_text());
    let r = mkfs(Tool::Ref, &["-l"], Some(t.path()), Some(&a));
    assert_eq!(r.status, 0);
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    // -X lzma works; -L then lists OpenWrt's table.
    let o = run_tool(Tool::OursAsMkfs, &["-X", "lzma", "-L"]);
    assert_eq!(o.status, 255);
    assert_eq!(
        o.stderr_text(),
        "mkfs.jffs2: error!: \n       lzo priority:90 disabled\n      zlib priority:80 enabled\n      lzma priority:70 enabled\n     rtime priority:50 enabled\n\n"
    );
    // -y PRIO:lzma too (lzma enabled, as in OpenWrt's mkfs.jffs2).
    let o = run_tool(Tool::OursAsMkfs, &["-y", "95:lzma", "-L"]);
    assert!(
        o.stderr_text()
            .starts_with("mkfs.jffs2: error!: \n      lzma priority:95 enabled\n"),
        "{}",
        o.stderr_text()
    );
    // -t decompresses and compares every LZMA result: no error.
    let o = mkfs(
        Tool::OursAsMkfs,
        &["-l", "-X", "lzma", "-m", "size", "-t", "-v"],
        Some(t.path()),
        Some(&b),
    );
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(o.stderr_text().contains("Compression errors: 0\n"));
    assert!(!o.stderr_text().contains("lzma (prio:70) + compr: 0 blocks"));
    // "lzari" (a name of 2007 OpenWrt trees) is still unknown, in mkfs.jffs2's words.
    std::fs::remove_file(&b).unwrap();
    let o = mkfs(
        Tool::OursAsMkfs,
        &["-l", "-X", "lzari"],
        Some(t.path()),
        Some(&b),
    );
    assert_eq!(o.status, 255);
    assert!(
        o.stderr_text().contains("Unknown compressor name lzari"),
        "{}",
        o.stderr_text()
    );
    assert!(!b.exists());
}

#[test]
fn image_to_stdout() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let work = scratch();
    let file = work.path().join("file.img");
    let o = mkfs(Tool::Ours, &["-l"], Some(t.path()), Some(&file));
    assert_eq!(o.status, 0);
    let image = std::fs::read(&file).unwrap();
    let o = mkfs(Tool::Ours, &["-l"], Some(t.path()), None);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(
        o.stdout == image,
        "the image on stdout differs from the -o image"
    );
    let r = mkfs(Tool::Ref, &["-l"], Some(t.path()), None);
    assert_eq!(r.status, 0);
    assert!(
        r.stdout == image,
        "mkfs.jffs2's image on stdout differs from ours"
    );
    // -v with the image on stdout: mkfs.jffs2 corrupts or loses it (§8 B-1); we move the
    // listing to stderr.
    let o = mkfs(Tool::OursAsMkfs, &["-l", "-v"], Some(t.path()), None);
    assert_eq!(o.status, 0);
    assert!(o.stdout == image, "-v corrupted the image on stdout");
    let err = o.stderr_text();
    assert!(err.starts_with("/\n"), "listing on stderr: {err}");
    assert!(err.contains("\tf 0644 "), "{err}");
    assert!(err.contains("Compression mode: priority"), "{err}");
    // Listing and statistics equal mkfs.jffs2's stdout and stderr (with -o).
    let r = mkfs(
        Tool::Ref,
        &["-l", "-v"],
        Some(t.path()),
        Some(&work.path().join("r.img")),
    );
    let messages = |s: &str| -> String {
        s.split_inclusive('\n')
            .filter(|l| {
                !l.starts_with("mkfs.jffs2: error!:") && !l.starts_with("mkfs.jffs2: warning!:")
            })
            .collect()
    };
    // Names with control characters or invalid UTF-8 are escaped in ours (deliberately).
    let expected = as_we_show(&r.stdout) + &messages(&as_we_show(&r.stderr));
    if let Some(d) = text_difference("-v listing on stderr", &expected, &messages(&err)) {
        panic!("{d}");
    }
}

#[test]
fn output_is_replaced_atomically() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let work = scratch();
    let out = work.path().join("out.img");
    // Success replaces the old file.
    std::fs::write(&out, "old").unwrap();
    let o = mkfs(Tool::Ours, &["-l"], Some(t.path()), Some(&out));
    assert_eq!(o.status, 0);
    let a = work.path().join("a.img");
    assert_eq!(mkfs(Tool::Ref, &["-l"], Some(t.path()), Some(&a)).status, 0);
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&a).unwrap());
    std::fs::remove_file(&a).unwrap();
    // A fatal error after the scan (the device table is applied after it) leaves the old
    // image untouched and no temporary file behind.
    let dt = work.path().join("bad-table.txt");
    std::fs::write(&dt, "/dev d 755 0 0 - - - - -\n/dev/x q 666 0 0 1 1\n").unwrap();
    let before = std::fs::read(&out).unwrap();
    let o = mkfs(
        Tool::Ours,
        &["-l", "-D", dt.to_str().unwrap()],
        Some(t.path()),
        Some(&out),
    );
    assert_eq!(o.status, 255);
    assert_eq!(
        std::fs::read(&out).unwrap(),
        before,
        "the old image was modified"
    );
    let names: BTreeSet<String> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        ["bad-table.txt", "out.img"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
        "temporary files left behind"
    );
    // The output file keeps mkfs.jffs2's 0644 mode (umask permitting).
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&out).unwrap().permissions().mode() & 0o777;
    let r = work.path().join("r.img");
    assert_eq!(mkfs(Tool::Ref, &["-l"], Some(t.path()), Some(&r)).status, 0);
    let ref_mode = std::fs::metadata(&r).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, ref_mode, "output file mode");
}

/// Dirents and inode nodes of an image.
fn entries(image: &[u8], big: bool) -> (Vec<DirentInfo>, Vec<InodeInfo>) {
    let e = Endian { big };
    let mut d = Vec::new();
    let mut i = Vec::new();
    for n in nodes(image, e) {
        match n.nodetype {
            NODETYPE_DIRENT => d.push(dirent_info(&n, e)),
            NODETYPE_INODE => i.push(inode_info(&n, e)),
            _ => {}
        }
    }
    (d, i)
}

#[test]
fn source_date_epoch_clamps_timestamps() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let work = scratch();
    let plain = work.path().join("plain.img");
    let r = mkfs(Tool::Ref, &["-l"], Some(t.path()), Some(&plain));
    assert_eq!(r.status, 0);
    let plain = std::fs::read(&plain).unwrap();
    let run_sde = |epoch: &str, extra: &[&str], out: &Path| {
        let mut c = Tool::Ours.command();
        c.env("SOURCE_DATE_EPOCH", epoch)
            .arg("-l")
            .args(extra)
            .arg("-r")
            .arg(t.path())
            .arg("-o")
            .arg(out);
        run(c)
    };
    // Later than every mtime: no change at all.
    let later = work.path().join("later.img");
    let o = run_sde("2000000000", &[], &later);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(
        std::fs::read(&later).unwrap() == plain,
        "SOURCE_DATE_EPOCH changed bytes it should not"
    );
    // Between the fixture's times: the later ones are clamped, the others kept.
    let epoch = FIXED_MTIME as u32 + 1;
    let clamped = work.path().join("clamped.img");
    let o = run_sde(&epoch.to_string(), &[], &clamped);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    let (d0, i0) = entries(&plain, false);
    let (d1, i1) = entries(&std::fs::read(&clamped).unwrap(), false);
    assert_eq!(d0.len(), d1.len());
    assert_eq!(i0.len(), i1.len());
    let mut changed = 0;
    for (a, b) in i0.iter().zip(&i1) {
        assert_eq!((a.ino, a.version), (b.ino, b.version));
        for (x, y) in [(a.atime, b.atime), (a.mtime, b.mtime), (a.ctime, b.ctime)] {
            assert_eq!(y, x.min(epoch), "ino {}", a.ino);
        }
        changed += usize::from(a.mtime > epoch);
    }
    for (a, b) in d0.iter().zip(&d1) {
        assert_eq!(a.name, b.name);
        assert_eq!(
            b.mctime,
            a.mctime.min(epoch),
            "dirent {}",
            name_text(&a.name)
        );
    }
    assert!(
        changed >= 3,
        "the fixture has entries newer than FIXED_MTIME + 1"
    );
    // Device-table entries get time(NULL) in mkfs.jffs2; clamped they are reproducible.
    let table = fixture("devtable_new.txt");
    let (x, y) = (work.path().join("x.img"), work.path().join("y.img"));
    let o = run_sde("1000", &["-D", table.to_str().unwrap()], &x);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(
        run_sde("1000", &["-D", table.to_str().unwrap()], &y).status,
        0
    );
    let xi = std::fs::read(&x).unwrap();
    assert!(xi == std::fs::read(&y).unwrap(), "not reproducible");
    let (d, i) = entries(&xi, false);
    assert!(
        d.iter().all(|d| d.mctime <= 1000) && i.iter().all(|i| i.mtime <= 1000 && i.ctime <= 1000)
    );
    // Nonsense is refused.
    let o = run_sde("yesterday", &[], &work.path().join("z.img"));
    assert_ne!(o.status, 0);
    assert!(
        o.stderr_text().contains("SOURCE_DATE_EPOCH"),
        "{}",
        o.stderr_text()
    );
}

/// What a jffs2dump line says about the file system (independent of the layout): dirents
/// as (pino, ino, version, name), and per inode the sum of dsize and the isize.
#[derive(Debug, Default, PartialEq)]
struct Content {
    dirents: BTreeSet<(u32, u32, u32, String)>,
    inodes: BTreeMap<u32, (u64, u32)>,
    xattrs: usize,
    xrefs: usize,
}

fn field(line: &str, key: &str) -> u32 {
    let rest = &line[line.find(key).unwrap_or_else(|| panic!("{key} in {line}")) + key.len()..];
    let v = rest
        .trim_start()
        .split(|c: char| c == ',' || c.is_whitespace())
        .next()
        .unwrap();
    v.parse().unwrap_or_else(|_| panic!("{key} in {line}"))
}

fn content(dump: &str) -> Content {
    let mut c = Content::default();
    for l in dump.lines() {
        let l = l.trim_start();
        if l.starts_with("Dirent") {
            let name = l.split(", name ").nth(1).unwrap_or("").to_string();
            c.dirents.insert((
                field(l, "#pino"),
                field(l, "#ino "),
                field(l, "version"),
                name,
            ));
        } else if l.starts_with("Inode ") && !l.starts_with("Inode Sum") {
            let e = c.inodes.entry(field(l, "#ino ")).or_default();
            e.0 += u64::from(field(l, "dsize"));
            e.1 = field(l, "isize");
        } else if l.starts_with("Xattr      node at") {
            c.xattrs += 1;
        } else if l.starts_with("Xref       node at") {
            c.xrefs += 1;
        }
    }
    c
}

#[test]
fn summary_images() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Small);
    let work = scratch();
    for (args, ebs) in [
        (&["-l", "-e", "8KiB"][..], 8192usize),
        (&["-b", "-e", "16KiB", "--with-xattr"], 16384),
        (&["-l", "-e", "64KiB", "-n"], 65536),
        (&["-l", "-e", "8KiB", "-c", "16", "-s", "8192"], 8192),
        (&["-b", "-e", "0x2100", "-x", "zlib"], 0x2100),
    ] {
        let big = args[0] == "-b";
        let (plain, sum) = (work.path().join("plain.img"), work.path().join("sum.img"));
        let o = mkfs(Tool::Ours, args, Some(t.path()), Some(&plain));
        assert_eq!(o.status, 0, "{args:?}: {}", o.stderr_text());
        let mut a = args.to_vec();
        a.push("--summary");
        let o = mkfs(Tool::Ours, &a, Some(t.path()), Some(&sum));
        assert_eq!(o.status, 0, "{a:?}: {}", o.stderr_text());
        let img = std::fs::read(&sum).unwrap();
        assert_eq!(img.len() % ebs, 0, "{a:?}: not whole erase blocks");
        let dump = jffs2dump(&sum, big);
        let bad: Vec<&str> = dump.lines().filter(|l| l.contains("Wrong")).collect();
        assert!(bad.is_empty(), "{a:?}: jffs2dump -c reports {bad:?}");
        // One summary per erase block, inside it, with one record per node of the block.
        let mut blocks = BTreeSet::new();
        let mut nodes_in = BTreeMap::<usize, u32>::new();
        let offset = |l: &str| {
            usize::from_str_radix(l.split("node at 0x").nth(1).unwrap().get(..8).unwrap(), 16)
                .unwrap()
        };
        let mut records = BTreeMap::new();
        for l in dump.lines().map(str::trim_start) {
            if l.starts_with("Inode Sum  node at") {
                let b = offset(l) / ebs;
                assert!(blocks.insert(b), "{a:?}: two summaries in block {b}");
                records.insert(b, field(l, "sum_num"));
            } else if [
                "Inode      node",
                "Dirent     node",
                "Xattr      node",
                "Xref       node",
            ]
            .iter()
            .any(|p| l.starts_with(p))
            {
                *nodes_in.entry(offset(l) / ebs).or_default() += 1;
            }
        }
        let nblocks = img.len() / ebs;
        assert_eq!(
            blocks,
            (0..nblocks).collect(),
            "{a:?}: blocks without a summary"
        );
        assert_eq!(
            records, nodes_in,
            "{a:?}: summary records vs nodes per block"
        );
        // Same file system as the plain image.
        let plain_dump = jffs2dump(&plain, big);
        let (cp, cs) = (content(&plain_dump), content(&dump));
        assert!(!cp.dirents.is_empty());
        assert_eq!(cp, cs, "{a:?}: the summary image holds different files");
        // The kernel's summary parser also wants the marker at the very end of each block.
        let e = Endian { big };
        for b in 0..nblocks {
            let end = (b + 1) * ebs;
            assert_eq!(
                e.u32(&img, end - 4),
                0x0285_1885,
                "{a:?}: block {b} has no summary marker"
            );
        }
    }
}

#[test]
fn big_device_numbers_use_four_bytes() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::BigDevices);
    let work = scratch();
    for big in [false, true] {
        let out = work.path().join("dev.img");
        let o = mkfs(
            Tool::Ours,
            &[if big { "-b" } else { "-l" }],
            Some(t.path()),
            Some(&out),
        );
        assert_eq!(o.status, 0, "{}", o.stderr_text());
        let img = std::fs::read(&out).unwrap();
        let (dirents, inodes) = entries(&img, big);
        let e = Endian { big };
        let by_name: BTreeMap<String, u32> = dirents
            .iter()
            .map(|d| (name_text(&d.name), d.ino))
            .collect();
        let node = |name: &str| {
            let ino = by_name[name];
            inodes.iter().find(|i| i.ino == ino).unwrap().clone()
        };
        let new_encode =
            |major: u32, minor: u32| (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12);
        for (name, major, minor) in [
            ("c300_70000", 300, 70000),
            ("b8_300", 8, 300),
            ("c4095_1048575", 4095, 1_048_575),
        ] {
            let i = node(name);
            assert_eq!((i.csize, i.dsize), (4, 4), "{name}: 4-byte device number");
            assert_eq!(e.u32(&i.data, 0), new_encode(major, minor), "{name}");
        }
        for (name, major, minor) in [("c1_3", 1u16, 3u16), ("c255_255", 255, 255)] {
            let i = node(name);
            assert_eq!((i.csize, i.dsize), (2, 2), "{name}: old 8:8 encoding");
            assert_eq!(e.u16(&i.data, 0), (major << 8) | minor, "{name}");
        }
        // Also through a device table.
        let dt = work.path().join("t.txt");
        std::fs::write(
            &dt,
            "/big c 600 0 0 259 65536 - - -\n/small c 600 0 0 4 64 - - -\n",
        )
        .unwrap();
        let o = mkfs(
            Tool::Ours,
            &["-f", "-l", "-D", dt.to_str().unwrap()],
            Some(t.path()),
            Some(&out),
        );
        assert_eq!(o.status, 0, "{}", o.stderr_text());
        let (dirents, inodes) = entries(&std::fs::read(&out).unwrap(), false);
        let ino = dirents.iter().find(|d| d.name == b"big").unwrap().ino;
        let i = inodes.iter().find(|i| i.ino == ino).unwrap();
        assert_eq!(i.dsize, 4);
        assert_eq!(
            Endian { big: false }.u32(&i.data, 0),
            new_encode(259, 65536)
        );
    }
}

#[test]
fn warnings_mkfs_jffs2_never_gives() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let t = tree(Kind::Full);
    let work = scratch();
    let out = work.path().join("o.img");
    let o = mkfs(
        Tool::OursAsMkfs,
        &["-l", "-s", "2048", "--pad=1000"],
        Some(t.path()),
        Some(&out),
    );
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    let err = o.stderr_text();
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("mkfs.jffs2: warning!: "))
        .collect();
    let has = |what: &str| warnings.iter().any(|w| w.contains(what));
    assert!(has("2048"), "page size below 4096: {warnings:#?}");
    assert!(has("255"), "name over 254 bytes: {warnings:#?}");
    assert!(has("70000"), "uid over 65535: {warnings:#?}");
    assert!(has("1000"), "image larger than --pad=1000: {warnings:#?}");
    // ... and none for ordinary options.
    let s = tree(Kind::Single);
    for args in [&["-s", "4096"][..], &["-s", "8192"], &["-e", "8KiB", "-p"]] {
        let o = mkfs(Tool::Ours, args, Some(s.path()), Some(&out));
        assert_eq!(o.status, 0);
        assert_eq!(o.stderr_text(), "", "{args:?}");
    }
    let o = mkfs(Tool::Ours, &["-s", "4KiB"], Some(s.path()), Some(&out));
    assert!(
        o.stderr_text().contains("warning!:"),
        "-s 4KiB = 4-byte pages: {}",
        o.stderr_text()
    );
}

/// `-o /dev/stdout` (a link into /proc) and `-o LINK` write through the link, as
/// mkfs.jffs2's `open(O_TRUNC)` does: the bytes equal mkfs.jffs2's, and no link is replaced
/// by a file (an atomic rename over `/dev/stdout` would replace the system's link).
#[test]
fn output_through_links_and_dev_stdout() {
    if !(common::require_mtd_utils()) {
        return;
    }
    if !(common::require_root()) {
        return;
    }
    let t = tree(Kind::Single);
    let work = scratch();
    let reference = work.path().join("ref.img");
    let r = mkfs(Tool::Ref, &[], Some(t.path()), Some(&reference));
    assert_eq!(r.status, 0, "{}", r.stderr_text());
    let want = std::fs::read(&reference).expect("reference image");
    for tool in [Tool::Ours, Tool::OursAsMkfs] {
        let redirected = work.path().join("stdout.img");
        let script = "exec \"$0\" -r \"$1\" -o /dev/stdout > \"$2\"";
        let st = Command::new("sh")
            .arg("-c")
            .arg(script)
            .arg(tool.program())
            .arg(t.path())
            .arg(&redirected)
            .status()
            .expect("sh");
        assert!(st.success());
        assert!(
            std::fs::read(&redirected).expect("image") == want,
            "{tool:?}: -o /dev/stdout > FILE"
        );
        let piped = Command::new("sh")
            .arg("-c")
            .arg("\"$0\" -r \"$1\" -o /dev/stdout | cat")
            .arg(tool.program())
            .arg(t.path())
            .output()
            .expect("sh");
        assert!(piped.stdout == want, "{tool:?}: -o /dev/stdout | cat");
        assert!(
            std::fs::symlink_metadata("/dev/stdout").map_or(true, |m| m.file_type().is_symlink()),
            "/dev/stdout was replaced"
        );
        let real_dir = work.path().join("real");
        std::fs::create_dir_all(&real_dir).expect("mkdir");
        let target = real_dir.join("image.jffs2");
        std::fs::write(&target, b"old").expect("write");
        let link = work.path().join("link.jffs2");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let o = mkfs(tool, &[], Some(t.path()), Some(&link));
        assert_eq!(o.status, 0, "{}", o.stderr_text());
        assert!(std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink());
        assert!(
            std::fs::read(&target).expect("target") == want,
            "{tool:?}: -o LINK"
        );
    }
}

/// `--help` names the name the tool was run as: `jffs2-mkfs`, or mkfs.jffs2's text byte
/// for byte as `mkfs.jffs2`.
#[test]
fn help_names_the_name_it_was_run_as() {
    let o = run_tool(Tool::Ours, &["--help"]);
    assert_eq!(o.status, 0);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.starts_with("Usage: jffs2-mkfs [OPTIONS]\n"), "{text}");
    assert!(!text.contains("Usage: mkfs.jffs2"), "{text}");
    let o = run_tool(Tool::OursAsMkfs, &["--help"]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.starts_with("Usage: mkfs.jffs2 [OPTIONS]\n"), "{text}");
    if require_mtd_utils() {
        let r = run_tool(Tool::Ref, &["--help"]);
        let theirs = String::from_utf8_lossy(&r.stdout).into_owned();
        assert!(
            text.starts_with(theirs.trim_end()),
            "mkfs.jffs2's text is no longer a prefix"
        );
    }
}

/// Without `-o`, to a terminal: jffs2-mkfs says why it refuses (mkfs.jffs2 prints its
/// usage as the error, kept under that name, §3.1).
#[test]
fn image_to_a_terminal_says_why() {
    use std::os::fd::FromRawFd;
    let t = tree(Kind::Single);
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty writes two descriptors we then own.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors are ours, each owned once.
    let (_master, slave) = unsafe {
        (
            std::os::fd::OwnedFd::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    };
    for tool in [Tool::Ours, Tool::OursAsMkfs] {
        let mut c = tool.command();
        c.arg("-r").arg(t.path());
        c.stdout(std::process::Stdio::from(slave.try_clone().unwrap()));
        c.stderr(std::process::Stdio::piped());
        let o = c.output().unwrap();
        let e = String::from_utf8_lossy(&o.stderr).into_owned();
        assert_eq!(o.status.code(), Some(255), "{e}");
        match tool {
            Tool::Ours => assert_eq!(
                e,
                "jffs2-mkfs: error!: standard output is a terminal: the image is binary; \
                 give -o FILE or redirect standard output to a file\n"
            ),
            _ => assert!(
                e.starts_with("mkfs.jffs2: error!: Usage: mkfs.jffs2 [OPTIONS]\n"),
                "{e}"
            ),
        }
    }
}

/// `-s` below 4096 or not a power of two is warned about, saying which of the two it is
/// (2048 is a power of two: it is too small).
#[test]
fn page_size_warning_says_what_is_wrong() {
    let t = tree(Kind::Single);
    let work = scratch();
    let out = work.path().join("o.img");
    for (s, what) in [
        ("2048", "page size 2048 is below 4096: "),
        (
            "3000",
            "page size 3000 is not a power of two, and is below 4096: ",
        ),
        ("6000", "page size 6000 is not a power of two: "),
    ] {
        let o = mkfs(Tool::Ours, &["-s", s], Some(t.path()), Some(&out));
        assert_eq!(o.status, 0, "{}", o.stderr_text());
        assert!(
            o.stderr_text().contains(what),
            "-s {s}: {}",
            o.stderr_text()
        );
    }
    let o = mkfs(Tool::Ours, &["-s", "8192"], Some(t.path()), Some(&out));
    assert!(
        !o.stderr_text().contains("page size"),
        "{}",
        o.stderr_text()
    );
}
