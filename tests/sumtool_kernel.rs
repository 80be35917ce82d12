//! jffs2-sumtool judged by the Linux kernel (the harness of `tests/kernel_harness.rs`, see
//! docs/TESTING.md): its outputs mount read-only under qemu with exactly the source tree, with
//! no jffs2 complaint (no "Summary node crc error", nothing at notice level or above but the
//! xattr subsystem's line), and mount no slower than mtd-utils sumtool's outputs of the same
//! images. The mount times (in the guest, the first mount and a remount) of the unsummarised
//! image, sumtool's output and ours are printed (`--nocapture`).
//!
//! Kernel-written images (`fixtures/kernel/`: dirty, power-cut, torn node) summarised by us must
//! show exactly the listing the kernel recorded for the originals.
//!
//! Like the kernel suite, never silently skipped: without qemu or the kernel the tests fail,
//! unless `JFFS2_SKIP_KERNEL=1` (outside CI).

mod common;
#[path = "common/sumtool.rs"]
mod sumtool_common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{mkfs_jffs2, random, run, text};
use sumtool_common::*;

// ------------------------------------------------------------------------------------------
// Harness glue (as in tests/kernel_harness.rs)

fn harness_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel/harness.py")
}

fn loud(msg: &str) {
    let _ = writeln!(std::io::stderr(), "\n{msg}\n");
}

fn setup() -> &'static Result<(), String> {
    static SETUP: OnceLock<Result<(), String>> = OnceLock::new();
    SETUP.get_or_init(|| {
        let out = Command::new("python3")
            .arg(harness_path())
            .arg("setup")
            .output()
            .map_err(|e| format!("cannot run python3: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "harness setup failed ({}): {} {}",
                out.status,
                String::from_utf8_lossy(&out.stdout).trim(),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    })
}

fn kernel_available() -> bool {
    let reason = match setup() {
        Ok(()) => return true,
        Err(r) => r,
    };
    let ci = std::env::var("CI")
        .map(|v| v == "true" || v == "1")
        .unwrap_or(false);
    let skip = std::env::var("JFFS2_SKIP_KERNEL")
        .map(|v| v == "1")
        .unwrap_or(false);
    let msg = format!(
        "************************************************************\n\
         KERNEL SUITE SKIPPED: {reason}\n\
         ************************************************************"
    );
    loud(&msg);
    if skip && !ci {
        return false;
    }
    panic!(
        "the kernel suite could not run ({reason}); {}",
        if ci {
            "CI=true: it must run in CI"
        } else {
            "set JFFS2_SKIP_KERNEL=1 to skip it explicitly"
        }
    );
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_path(p: &Path) -> String {
    json_str(p.to_str().expect("utf-8 path"))
}

/// One image for the harness (read-only, remounted once for a second mount time).
struct Image {
    id: String,
    path: PathBuf,
    erase: u32,
    partition: Option<u64>,
    expect_dir: Option<PathBuf>,
    ignore: Vec<&'static str>,
}

impl Image {
    fn to_json(&self) -> String {
        let mut f = vec![
            format!("\"id\": {}", json_str(&self.id)),
            format!("\"path\": {}", json_path(&self.path)),
            format!("\"erase_size\": {}", self.erase),
            "\"mode\": \"ro\"".to_string(),
            "\"remount\": true".to_string(),
        ];
        if let Some(p) = self.partition {
            f.push(format!("\"pad_to\": {p}"));
        }
        if let Some(d) = &self.expect_dir {
            f.push(format!("\"expect_dir\": {}", json_path(d)));
        }
        let ig: Vec<String> = self.ignore.iter().map(|s| json_str(s)).collect();
        f.push(format!("\"compare_ignore\": [{}]", ig.join(", ")));
        format!("{{{}}}", f.join(", "))
    }
}

/// Runs `harness.py <cmd>` on `images` (one boot for up to 16); returns its stdout and the
/// result file.
fn harness(work: &Path, cmd: &str, images: &[Image]) -> (String, PathBuf) {
    let spec = work.join(format!("{cmd}-spec.json"));
    let result = work.join(format!("{cmd}-result.json"));
    let body: Vec<String> = images.iter().map(Image::to_json).collect();
    fs::write(
        &spec,
        format!(
            "{{\"timeout\": 600, \"images\": [\n{}\n]}}\n",
            body.join(",\n")
        ),
    )
    .unwrap();
    let out = Command::new("python3")
        .arg(harness_path())
        .arg(cmd)
        .arg("--spec")
        .arg(&spec)
        .arg("--out")
        .arg(&result)
        .output()
        .expect("run harness");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let code = out.status.code().unwrap_or(-1);
    println!(
        "--- harness {cmd} (exit {code}) ---\n{text}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(code == 0 || code == 1, "harness error (exit {code})");
    (text, result)
}

/// Per image of a result file: (id, first mount seconds, remount seconds, bad messages).
fn mount_times(result: &Path) -> Vec<(String, f64, f64, usize)> {
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[2])
import harness
out = json.load(open(sys.argv[1]))
for r in out["results"]:
    rm = r.get("remount", {}).get("mount_seconds", -1)
    bad = len(harness.bad_messages(r.get("jffs2_messages", [])))
    print(f"TIME {r['id']} {r.get('mount_seconds', -1)} {rm} {bad}")
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(result)
        .arg(harness_path().parent().unwrap())
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() == 5 && f[0] == "TIME").then(|| {
                (
                    f[1].to_string(),
                    f[2].parse().unwrap_or(-1.0),
                    f[3].parse().unwrap_or(-1.0),
                    f[4].parse().unwrap_or(99),
                )
            })
        })
        .collect()
}

fn ok(report: &str, id: &str) -> bool {
    report
        .lines()
        .any(|l| l.starts_with(&format!("RESULT {id} OK ")))
}

// ------------------------------------------------------------------------------------------
// Tests

/// The source tree: every kind of entry mkfs.jffs2 can represent exactly (files of page-edge
/// sizes, text and noise, deep directories, symlinks, a fifo, device nodes, hard links,
/// modes, owners, xattrs) and bulk content so that the mount scan takes measurable time:
/// 2000 small files, 150 files of text, 40 of noise.
fn source(root: &Path) {
    use std::os::unix::fs::{symlink, PermissionsExt};
    let put = |rel: &str, data: &[u8], mode: u32| {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, data).unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(mode)).unwrap();
    };
    fs::create_dir_all(root).unwrap();
    put("empty", b"", 0o644);
    put("one", b"x", 0o644);
    for (i, n) in [4095usize, 4096, 4097, 300_000].iter().enumerate() {
        put(&format!("text_{n}"), &text(i as u64, *n), 0o644);
    }
    put("noise_70000", &random(6, 70_000), 0o755);
    put("zeros_20000", &[0u8; 20_000], 0o600);
    put("a/b/c/d/e/deep.txt", b"deep\n", 0o644);
    put(&"n".repeat(254), b"long name\n", 0o644);
    put("odd/with space", b"1\n", 0o644);
    put("odd/\u{fc}n\u{ef}c\u{f6}d\u{e9}", b"2\n", 0o644);
    symlink("text_4096", root.join("link_rel")).unwrap();
    symlink("nowhere/at/all", root.join("dangling")).unwrap();
    symlink("t".repeat(200), root.join("long_link")).unwrap();
    fs::hard_link(root.join("noise_70000"), root.join("a/hard1")).unwrap();
    let fifo = std::ffi::CString::new(root.join("fifo").to_str().unwrap()).unwrap();
    // SAFETY: mkfifo/mknod/lchown on paths inside our temporary tree.
    unsafe {
        assert_eq!(libc::mkfifo(fifo.as_ptr(), 0o640), 0);
        let null = std::ffi::CString::new(root.join("null").to_str().unwrap()).unwrap();
        assert_eq!(
            libc::mknod(null.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)),
            0
        );
        let one = std::ffi::CString::new(root.join("one").to_str().unwrap()).unwrap();
        assert_eq!(libc::lchown(one.as_ptr(), 1000, 100), 0);
        let name = std::ffi::CString::new("user.colour").unwrap();
        let f = std::ffi::CString::new(root.join("text_4095").to_str().unwrap()).unwrap();
        assert_eq!(
            libc::lsetxattr(f.as_ptr(), name.as_ptr(), b"blue".as_ptr().cast(), 4, 0),
            0
        );
    }
    put("setuid", b"#!/bin/sh\n", 0o4755);
    fs::create_dir(root.join("sticky")).unwrap();
    fs::set_permissions(root.join("sticky"), fs::Permissions::from_mode(0o1777)).unwrap();
    for i in 0..2000u64 {
        put(
            &format!("bulk/small{i:04}"),
            format!("small file {i}\n").as_bytes(),
            0o644,
        );
    }
    for i in 0..150u64 {
        put(&format!("bulk/text{i:03}"), &text(1000 + i, 40_000), 0o644);
    }
    for i in 0..40u64 {
        put(
            &format!("bulk/noise{i:02}"),
            &random(2000 + i, 40_000),
            0o644,
        );
    }
    // Fixed times, children before their directory (the kernel shows a directory's time
    // from its newest dirent, which mkfs.jffs2 stamps with the child's time).
    fix_times(root);
}

fn fix_times(dir: &Path) {
    for e in fs::read_dir(dir).unwrap().flatten() {
        if e.file_type().unwrap().is_dir() {
            fix_times(&e.path());
        } else {
            common::set_mtime(&e.path(), common::FIXED_MTIME);
        }
    }
    common::set_mtime(dir, common::FIXED_MTIME);
}

#[test]
fn summarized_images_mount_with_the_source_content_and_fast() {
    if !kernel_available() {
        return;
    }
    let work = tempfile::Builder::new()
        .prefix("jffs2-kernel-sumtool-")
        .tempdir()
        .unwrap();
    common::require_root();
    let tree_dir = work.path().join("tree");
    source(&tree_dir);
    const MB: u64 = 1 << 20;
    // (name, erase size, mkfs.jffs2 options, xattrs compared)
    let geometries: &[(&str, u32, &[&str], bool)] = &[
        ("e16k_nocm", 16 << 10, &["-n"], false),
        ("e64k", 64 << 10, &[], false),
        ("e128k_xattr", 128 << 10, &["--with-xattr"], true),
        ("e256k_nocm", 256 << 10, &["-n"], false),
    ];
    let mut images = Vec::new();
    for (name, es, extra, xattr) in geometries {
        let plain = work.path().join(format!("{name}.plain"));
        let mut c = Command::new(mkfs_jffs2());
        c.env("LC_ALL", "C")
            .args(["-l", "-e", &es.to_string()])
            .args(*extra)
            .arg("-r")
            .arg(&tree_dir)
            .arg("-o")
            .arg(&plain);
        let o = run(c);
        assert_eq!(o.status, 0, "mkfs.jffs2: {}", o.stderr_text());
        let es_s = es.to_string();
        let mut st = vec!["-e", es_s.as_str(), "-l"];
        if extra.contains(&"-n") {
            st.push("-n");
        }
        let theirs_p = work.path().join(format!("{name}.sumtool"));
        summarize(false, &plain, &theirs_p, &st);
        let ours_p = work.path().join(format!("{name}.ours"));
        summarize(true, &plain, &ours_p, &st);
        // Each summarised image twice, in alternating order, each mounted twice (mount and
        // remount): guest timings under emulation are noisy, the best of four is compared.
        for (kind, p) in [
            ("ours1", &ours_p),
            ("sumtool1", &theirs_p),
            ("plain", &plain),
            ("sumtool2", &theirs_p),
            ("ours2", &ours_p),
        ] {
            images.push(Image {
                id: format!("{name}_{kind}"),
                path: p.clone(),
                erase: *es,
                partition: Some(16 * MB),
                expect_dir: Some(tree_dir.clone()),
                ignore: if *xattr { vec![] } else { vec!["xattrs"] },
            });
        }
    }
    let (report, result) = harness(work.path(), "check", &images);
    let times = mount_times(&result);
    let time = |id: &str| {
        times
            .iter()
            .find(|t| t.0 == id)
            .unwrap_or_else(|| panic!("no time for {id}"))
            .clone()
    };
    let mut table = vec![format!(
        "{:<12} {:>28} {:>34} {:>34}",
        "geometry",
        "unsummarised: best (mounts)",
        "sumtool: best (mounts)",
        "jffs2-sumtool: best (mounts)"
    )];
    let mut slower = Vec::new();
    for (name, ..) in geometries {
        let samples = |kinds: &[&str]| -> Vec<f64> {
            let mut v = Vec::new();
            for k in kinds {
                let id = format!("{name}_{k}");
                assert!(ok(&report, &id), "{id}: {report}");
                let t = time(&id);
                assert_eq!(t.3, 0, "{id}: kernel complaints");
                v.extend([t.1, t.2].into_iter().filter(|x| *x >= 0.0));
            }
            v
        };
        let p = samples(&["plain"]);
        let s = samples(&["sumtool1", "sumtool2"]);
        let o = samples(&["ours1", "ours2"]);
        let best = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let list = |v: &[f64]| {
            v.iter()
                .map(|x| format!("{x:.2}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        table.push(format!(
            "{:<12} {:>6.2} ({:>19}) {:>6.2} ({:>25}) {:>6.2} ({:>25})",
            name,
            best(&p),
            list(&p),
            best(&s),
            list(&s),
            best(&o),
            list(&o)
        ));
        // No worse than sumtool's output, within the guest timer's resolution (0.01 s)
        // and emulation noise.
        if best(&o) > best(&s) + 0.03 {
            slower.push(format!(
                "{name}: ours {:.2} s, sumtool {:.2} s",
                best(&o),
                best(&s)
            ));
        }
    }
    eprintln!(
        "\nmount times in the guest, seconds:\n{}\n",
        table.join("\n")
    );
    assert!(
        slower.is_empty(),
        "slower than sumtool's output: {slower:?}"
    );
}

#[test]
fn kernel_written_images_summarized_mount_as_recorded() {
    if !kernel_available() {
        return;
    }
    let work = tempfile::Builder::new()
        .prefix("jffs2-kernel-sumtool-fx-")
        .tempdir()
        .unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut images = Vec::new();
    let mut metas = Vec::new();
    let mut names: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    names.sort();
    for p in names {
        let meta = p.with_extension("json");
        let text = fs::read_to_string(&meta).unwrap();
        let es: u32 = text
            .split("\"erase_size\":")
            .nth(1)
            .and_then(|r| r.trim_start().split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|v| v.parse().ok())
            .expect("erase_size");
        let name = p.file_stem().unwrap().to_string_lossy().into_owned();
        let out = work.path().join(format!("{name}.img"));
        let es_s = es.to_string();
        summarize(true, &p, &out, &["-e", &es_s, "-l"]);
        images.push(Image {
            id: name,
            path: out,
            erase: es,
            partition: None,
            expect_dir: None,
            ignore: vec![],
        });
        metas.push(meta);
    }
    assert!(images.len() >= 5);
    let (_, result) = harness(work.path(), "run", &images);
    // The listing of each summarised image against the one recorded for the original.
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[2])
import harness
out = json.load(open(sys.argv[1]))
for r, meta in zip(out["results"], sys.argv[3:]):
    m = json.load(open(meta))
    diffs = harness.compare(m["listing"] or [], r.get("listing") or [], exact=True)
    bad = harness.bad_messages(r.get("jffs2_messages", []))
    print(f"FIXTURE {r['id']} mount_ok={r.get('mount_ok')} recorded_ok={m['mount']['mount_ok']} "
          f"diffs={len(diffs)} bad={len(bad)} seconds={r.get('mount_seconds')}")
    for d in diffs[:20]:
        print(f"  DIFF {json.dumps(d)}")
    for b in bad:
        print(f"  KMSG <{b['level']}> {b['msg']}")
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(&result)
        .arg(harness_path().parent().unwrap())
        .args(&metas)
        .output()
        .expect("python3");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("FIXTURE")).collect();
    assert_eq!(lines.len(), images.len(), "{text}");
    for l in lines {
        assert!(
            l.contains("mount_ok=True recorded_ok=True diffs=0 bad=0"),
            "summarised fixture not shown as recorded: {l}\n{text}"
        );
    }
}
