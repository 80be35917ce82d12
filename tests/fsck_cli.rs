//! The jffs2-fsck command line: `--json` against the text output, `--compare` (factory
//! verification) passing and listing each difference, usage errors (exit 16), and the
//! `fsck.jffs2` name with fsck(8)'s generic options.

mod common;
#[path = "common/fsck_util.rs"]
mod fsck_util;

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use fsck_util::*;

/// `(severity, code, offset, ino, path)` of a text finding line.
type Key = (String, String, Option<u64>, Option<u64>, Option<String>);

fn text_findings(out: &str) -> Vec<Key> {
    out.lines()
        .filter(|l| l.starts_with("ERROR ") || l.starts_with("WARNING ") || l.starts_with("INFO "))
        .map(|l| {
            let (head, _) = l.split_once(": ").unwrap();
            let mut w = head.split(' ');
            let sev = w.next().unwrap().to_lowercase();
            let code = w.next().unwrap().to_string();
            let off = w.next().unwrap();
            let off = off
                .strip_prefix("0x")
                .map(|h| u64::from_str_radix(h, 16).unwrap());
            let rest: Vec<&str> = w.collect();
            let (ino, path) = match rest.as_slice() {
                ["ino", n, p @ ..] => (
                    Some(n.parse().unwrap()),
                    (!p.is_empty()).then(|| p.join(" ")),
                ),
                p => (None, (!p.is_empty()).then(|| p.join(" "))),
            };
            (sev, code, off, ino, path)
        })
        .collect()
}

fn json_findings(j: &serde_json::Value) -> Vec<Key> {
    j["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["severity"].as_str().unwrap().to_string(),
                f["code"].as_str().unwrap().to_string(),
                f["offset"].as_u64(),
                f["ino"].as_u64(),
                f["path"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn json_matches_the_text_findings() {
    let dir = common::scratch();
    let mut images = vec![kernel_fixtures().join("powercut-torn-node-16k.img")];
    images.push(kernel_fixtures().join("dirty-gc-16k.img"));
    // A damaged copy: a data CRC, a header CRC and garbage.
    let mut b = std::fs::read(kernel_fixtures().join("dirty-workload-16k.img")).unwrap();
    let nodes = node_list(&b, false);
    for k in [5usize, 17, 40] {
        let (off, len, _) = nodes[k];
        b[off + len - 1] ^= 0x10;
    }
    b[nodes[60].0 + 5] ^= 1;
    let p = dir.path().join("damaged.img");
    std::fs::write(&p, &b).unwrap();
    images.push(p);
    for img in images {
        let t = fsck(&[img.to_str().unwrap()]);
        let j = fsck(&["--json", img.to_str().unwrap()]);
        assert_eq!(t.status, j.status);
        let doc = json_of(&j);
        assert_eq!(doc["exit_code"].as_i64(), Some(i64::from(t.status)));
        assert_eq!(
            text_findings(&t.stdout_text()),
            json_findings(&doc),
            "{img:?}"
        );
        let counts = &doc["summary"]["counts"];
        let errors = json_findings(&doc)
            .iter()
            .filter(|k| k.0 == "error")
            .count() as u64;
        assert_eq!(counts["error"].as_u64(), Some(errors));
        for k in [
            "space",
            "blocks",
            "summary_coverage",
            "mount_cost",
            "geometry",
        ] {
            assert!(doc["summary"][k].is_object(), "{k}");
        }
    }
    // -v adds the evidence and the blocks.
    let j = json_of(&fsck(&[
        "--json",
        "-v",
        kernel_fixtures().join("dirty-gc-16k.img").to_str().unwrap(),
    ]));
    assert!(j["blocks"].as_array().unwrap().len() == 32);
    assert!(!j["detection_evidence"].as_array().unwrap().is_empty());
}

fn diffs(o: &common::Output) -> Vec<String> {
    o.stdout_text()
        .lines()
        .filter_map(|l| l.strip_prefix("DIFF "))
        .map(str::to_string)
        .collect()
}

#[test]
fn compare_passes_then_lists_each_difference() {
    if !(common::require_root()) {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let dir = common::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    small_tree(&src);
    let img = dir.path().join("img");
    mkfs(&src, &img, &["-e", "0x4000", "--with-xattr"]);
    let i = img.to_str().unwrap();
    let s = src.to_str().unwrap();
    let o = fsck(&["--compare", s, i]);
    assert_eq!(o.status, 0, "{}", o.stdout_text());
    assert!(diffs(&o).is_empty());

    // How the image was made: -q (squash) and -f (faketime) must be said.
    let sq = dir.path().join("sq.img");
    mkfs(&src, &sq, &["-e", "0x4000", "-q", "-f"]);
    let o = fsck(&["--compare", s, sq.to_str().unwrap()]);
    assert_eq!(o.status, 4);
    assert!(diffs(&o).iter().any(|d| d.contains(": mtime: ")));
    let o = fsck(&[
        "--compare",
        s,
        "--squash",
        "--faketime",
        "--ignore-mtime",
        sq.to_str().unwrap(),
    ]);
    assert_eq!(o.status, 0, "{}", o.stdout_text());
    let o = fsck(&[
        "--compare",
        s,
        "--squash",
        "--faketime",
        sq.to_str().unwrap(),
    ]);
    assert_eq!(o.status, 0, "{}", o.stdout_text());

    // Alter the tree: each change is one difference.
    std::fs::set_permissions(src.join("etc/motd"), std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut net = std::fs::read(src.join("etc/conf.d/net")).unwrap();
    net[1234] ^= 0x20;
    std::fs::write(src.join("etc/conf.d/net"), &net).unwrap();
    common::set_mtime(&src.join("etc/conf.d/net"), common::FIXED_MTIME);
    std::fs::write(src.join("etc/new-file"), b"new\n").unwrap();
    std::fs::remove_file(src.join("etc/empty")).unwrap();
    std::fs::remove_file(src.join("bin/motd-link")).unwrap();
    std::os::unix::fs::symlink("/elsewhere", src.join("bin/motd-link")).unwrap();
    let o = fsck(&["--compare", s, i]);
    assert_eq!(o.status, 4, "{}", o.stdout_text());
    let d = diffs(&o);
    let has = |p: &str, what: &str| d.iter().any(|l| l.starts_with(&format!("{p}: {what}: ")));
    assert!(has("etc/motd", "mode"), "{d:#?}");
    assert!(has("etc/conf.d/net", "content"), "{d:#?}");
    assert!(
        d.iter().any(|l| l.contains("differs from byte 1234")),
        "{d:#?}"
    );
    assert!(has("etc/new-file", "missing"), "{d:#?}");
    assert!(has("etc/empty", "unexpected"), "{d:#?}");
    assert!(has("bin/motd-link", "target"), "{d:#?}");
    // JSON lists the same.
    let j = json_of(&fsck(&["--json", "--compare", s, i]));
    assert_eq!(j["differences"].as_array().unwrap().len(), d.len());
    assert_eq!(j["exit_code"], 4);
    // A directory that cannot be read is an operational error.
    let o = fsck(&["--compare", dir.path().join("none").to_str().unwrap(), i]);
    assert_eq!(o.status, 8);
}

#[test]
fn usage_errors_exit_16() {
    let img = kernel_fixtures().join("dirty-gc-16k.img");
    let i = img.to_str().unwrap();
    for args in [
        &[][..],
        &["--frobnicate", i],
        &["-e", "12QiB", i],
        &["-e", "0", i],
        &["-e", "32MiB", i],
        &[i, i],
        &["-a", i],
        &["--squash", i],
    ] {
        let o = fsck(args);
        assert_eq!(o.status, 16, "{args:?}: {}", o.stderr_text());
        assert!(!o.stderr_text().is_empty());
    }
    let o = fsck(&["--help"]);
    assert_eq!(o.status, 0);
    assert!(o.stdout_text().contains("Usage: jffs2-fsck"));
    assert_eq!(fsck(&["-e", "16KiB", "-l", i]).status, 0);
}

#[test]
fn fsck_jffs2_accepts_fsck8_options() {
    let dir = common::scratch();
    let img = kernel_fixtures().join("dirty-gc-16k.img");
    let i = img.to_str().unwrap();
    for args in [
        &["-a", i][..],
        &["-p", i],
        &["-n", i],
        &["-y", "-f", i],
        &["-V", "-C0", i],
        &["-C", i],
    ] {
        let o = fsck_as("fsck.jffs2", dir.path(), args);
        assert_eq!(
            o.status,
            0,
            "{args:?}: {}{}",
            o.stdout_text(),
            o.stderr_text()
        );
        assert!(
            o.stdout_text().contains("fsck.jffs2: "),
            "{}",
            o.stdout_text()
        );
    }
    let torn = kernel_fixtures().join("powercut-torn-node-16k.img");
    let o = fsck_as("fsck.jffs2", dir.path(), &["-p", torn.to_str().unwrap()]);
    assert_eq!(o.status, 4);
    let _ = Path::new("");
}

/// `--repair=OUT` writes the image Linux would have shown, in the input's own layout and
/// without dead nodes: the repaired image checks clean, lists exactly as the input does, and
/// the input is untouched; exit 1 when the input had errors (corrected), 0 when it had none.
#[test]
fn repair_writes_what_linux_would_show() {
    let dump = env!("CARGO_BIN_EXE_jffs2-dump");
    let list = |img: &Path| {
        let o = std::process::Command::new(dump)
            .arg("--list")
            .arg(img)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let dir = common::scratch();
    let mut names: Vec<_> = std::fs::read_dir(kernel_fixtures())
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    names.sort();
    for img in names {
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        let before = std::fs::read(&img).unwrap();
        let plain = fsck(&[img.to_str().unwrap()]).status;
        let out = dir.path().join(format!("{name}.repaired"));
        let repair = format!("--repair={}", out.display());
        let o = fsck(&[repair.as_str(), img.to_str().unwrap()]);
        let want = if plain == 0 { 0 } else { 1 };
        assert_eq!(o.status, want, "{name}: {}", o.stderr_text());
        assert!(o.stderr_text().contains("repaired image written"), "{name}");
        assert_eq!(
            std::fs::read(&img).unwrap(),
            before,
            "{name}: input modified"
        );
        let j: serde_json::Value =
            serde_json::from_slice(&fsck(&["--json", out.to_str().unwrap()]).stdout).unwrap();
        assert_eq!(j["exit_code"], 0, "{name}: {j}");
        assert_eq!(j["summary"]["space"]["dirty"], 0, "{name}");
        assert_eq!(list(&img), list(&out), "{name}: listing changed");
        // A whole partition stays a whole partition.
        assert_eq!(
            std::fs::metadata(&out).unwrap().len(),
            before.len() as u64,
            "{name}"
        );
    }
    let o = fsck(&["--repair=/nonexistent-dir/x.img", "/dev/null"]);
    assert_eq!(o.status, 8, "{}", o.stderr_text());
}

/// `--help` names the name the tool was run as: `jffs2-fsck`, or `fsck.jffs2`.
#[test]
fn help_names_the_name_it_was_run_as() {
    let o = fsck(&["--help"]);
    assert_eq!(o.status, 0);
    assert!(o
        .stdout_text()
        .starts_with("Usage: jffs2-fsck [OPTIONS] IMAGE\n"));
    let dir = common::scratch();
    let o = fsck_as("fsck.jffs2", dir.path(), &["--help"]);
    assert_eq!(o.status, 0);
    let text = o.stdout_text();
    assert!(
        text.starts_with("Usage: fsck.jffs2 [OPTIONS] IMAGE\n"),
        "{text}"
    );
    assert!(!text.contains("jffs2-fsck"), "{text}");
}

/// An input that is not JFFS2 is said to be so once, with why.
#[test]
fn not_jffs2_is_said_once() {
    let dir = common::scratch();
    let junk = dir.path().join("junk.img");
    std::fs::write(&junk, b"certainly not JFFS2").unwrap();
    let o = fsck(&[&junk]);
    assert_eq!(o.status, 8, "{}", o.stderr_text());
    let e = o.stderr_text();
    assert_eq!(e.matches("not a JFFS2 image").count(), 1, "{e}");
    assert!(e.contains("no JFFS2 node header"), "{e}");
}

/// Counts take the singular for one: "1 directory, 1 file", not "1 directories".
#[test]
fn one_of_a_kind_is_singular() {
    let dir = common::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("only"), b"one file\n").unwrap();
    let img = dir.path().join("one.img");
    ours_mkfs(&src, &img, &["-e", "16KiB", "-l"]);
    let o = fsck(&[&img]);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    let text = o.stdout_text();
    assert!(text.contains("1 directory, 1 file ("), "{text}");
    assert!(
        text.contains("0 symlinks, 0 devices/fifos/sockets"),
        "{text}"
    );
    assert!(
        !text.contains("1 directories") && !text.contains("1 files"),
        "{text}"
    );
}

/// An image made with `-f -q` compared without `--faketime --squash`: every difference is a
/// time of 0 or an owner 0 or `-P`'s cleared bits, and fsck says which options are missing.
/// Times show their UTC date, printable xattr values their text, and a content difference
/// its offset as a JSON number.
#[test]
fn compare_names_the_missing_mkfs_options() {
    if !(common::require_root()) {
        return;
    }
    let dir = common::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    small_tree(&src);
    std::os::unix::fs::lchown(src.join("etc/motd"), Some(1000), Some(1000)).unwrap();
    std::fs::set_permissions(src.join("bin/tool"), std::fs::Permissions::from_mode(0o775)).unwrap();
    let img = dir.path().join("img");
    ours_mkfs(&src, &img, &["-e", "16KiB", "-f", "-q", "--with-xattr"]);
    let (s, i) = (src.to_str().unwrap(), img.to_str().unwrap());
    let hint = |o: &common::Output| {
        o.stdout_text()
            .lines()
            .find_map(|l| l.strip_prefix("hint: ").map(str::to_string))
    };
    let o = fsck(&["--compare", s, i]);
    assert_eq!(o.status, 4);
    let h = hint(&o).expect("a hint");
    assert!(
        h.contains("-f -q") && h.ends_with("add --faketime --squash"),
        "{h}"
    );
    let d = diffs(&o);
    assert!(
        d.iter()
            .any(|l| l.contains(": mtime: image 0 (1970-01-01 00:00:00 UTC), directory ")),
        "{d:#?}"
    );
    let o = fsck(&["--compare", s, "--faketime", i]);
    assert!(
        hint(&o).unwrap().ends_with("add --squash"),
        "{}",
        o.stdout_text()
    );
    let o = fsck(&["--compare", s, "--squash", i]);
    assert!(
        hint(&o).unwrap().ends_with("add --faketime"),
        "{}",
        o.stdout_text()
    );
    let j = json_of(&fsck(&["--json", "--compare", s, "--squash", i]));
    assert!(j["compare_hint"]
        .as_str()
        .unwrap()
        .ends_with("add --faketime"));
    let o = fsck(&["--compare", s, "--squash", "--faketime", i]);
    assert_eq!(o.status, 0, "{}", o.stdout_text());
    assert_eq!(hint(&o), None);

    // Other differences: no hint; xattr values as text, the content's offset a number.
    let mut net = std::fs::read(src.join("etc/conf.d/net")).unwrap();
    net[1234] ^= 0x20;
    std::fs::write(src.join("etc/conf.d/net"), &net).unwrap();
    let m = std::ffi::CString::new(src.join("etc/motd").as_os_str().as_encoded_bytes()).unwrap();
    let k = std::ffi::CString::new("user.comment").unwrap();
    // SAFETY: valid C strings and buffer.
    unsafe { libc::lsetxattr(m.as_ptr(), k.as_ptr(), b"world".as_ptr().cast(), 5, 0) };
    let o = fsck(&["--compare", s, "--with-xattr", i]);
    assert_eq!(hint(&o), None, "{}", o.stdout_text());
    let d = diffs(&o);
    assert!(
        d.iter().any(|l| {
            l
            == "etc/motd: xattr: image {user.comment=\"hello\"}, directory {user.comment=\"world\"}"
        }),
        "{d:#?}"
    );
    assert!(!o.stdout_text().contains("host file"), "{d:#?}");
    assert!(
        d.iter()
            .any(|l| l.starts_with("etc/conf.d/net: content: image differs from byte 1234 (")),
        "{d:#?}"
    );
    let j = json_of(&fsck(&["--json", "--compare", s, "--with-xattr", i]));
    let content = j["differences"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["what"] == "content")
        .unwrap();
    assert_eq!(content["offset"], 1234);
}

/// `--json` prints one JSON document whatever happens, with the exit status inside: a
/// missing path, a directory, a file that is not JFFS2, a --repair output that cannot be
/// written.
#[test]
fn json_always_prints_one_document() {
    let dir = common::scratch();
    let junk = dir.path().join("junk");
    std::fs::write(&junk, b"certainly not JFFS2").unwrap();
    let img = kernel_fixtures().join("dirty-gc-16k.img");
    let missing = dir.path().join("missing");
    let bad_out = dir.path().join("none/out.img");
    let cases: [Vec<&Path>; 4] = [
        vec![&missing],
        vec![dir.path()],
        vec![&junk],
        vec![Path::new("--repair"), &bad_out, &img],
    ];
    for case in cases {
        let mut args = vec![std::ffi::OsStr::new("--json")];
        args.extend(case.iter().map(|p| p.as_os_str()));
        let o = fsck(&args);
        assert_eq!(o.status, 8, "{case:?}");
        let j: serde_json::Value = serde_json::from_str(&o.stdout_text())
            .unwrap_or_else(|e| panic!("{case:?}: {e}: {:?}", o.stdout_text()));
        assert_eq!(j["exit_code"], 8, "{case:?}");
        assert!(!j["error"].as_str().unwrap().is_empty(), "{case:?}");
    }
    let j = json_of(&fsck(&["--json", img.to_str().unwrap()]));
    assert!(j["exit_code"].is_i64());
}

/// `detection_confidence` in the JSON report is the f32 the detection computed, printed as
/// it reads (`0.3`), not widened to a double's digits (`0.30000001192092896`).
#[test]
fn json_confidence_is_the_f32_as_it_reads() {
    let dir = common::scratch();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("a"), b"hi\n").unwrap();
    let img = dir.path().join("small.img");
    ours_mkfs(&src, &img, &["-e", "16KiB", "-l"]);
    let o = fsck(&[OsStr::new("--json"), img.as_os_str()]);
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    let text = o.stdout_text();
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
    let c = v["summary"]["geometry"]["detection_confidence"]
        .as_f64()
        .expect("a number");
    let raw = text
        .split("\"detection_confidence\":")
        .nth(1)
        .and_then(|t| t.split([',', '}', '\n']).next())
        .expect("the field");
    assert_eq!(raw.trim(), format!("{}", c as f32), "{raw}");
    assert!(raw.trim().len() <= 8, "{raw}");
}
