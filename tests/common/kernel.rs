//! Glue between Rust tests and the kernel harness (`tests/kernel/harness.py`): setup with the
//! shared loud skip (`skip.rs`: skipped on a laptop without qemu, an error under `CI=true`),
//! image specs, runs, mount times, the comparison of guest listings with the ones recorded
//! in `fixtures/kernel/`, and of `jffs2-mount`'s FUSE view of an image with Linux's listing. Included with `#[path]` by the kernel suites that need it, next to
//! `mod common;` (for `common::skip`).
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

pub fn harness_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kernel/harness.py")
}

pub fn loud(msg: &str) {
    let _ = writeln!(std::io::stderr(), "\n{msg}\n");
}

pub fn setup() -> &'static Result<(), String> {
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

use crate::common::skip;

/// True when qemu and the kernel are ready (`harness.py setup` succeeded, once per binary);
/// otherwise the test is skipped loudly (see `skip.rs`), or fails under `CI=true`.
pub fn kernel_available() -> bool {
    if skip::pretend_missing("qemu") {
        skip::skip("qemu and a Linux kernel (pretended missing)");
        return false;
    }
    match setup() {
        Ok(()) => true,
        Err(reason) => {
            skip::skip(&format!("qemu and a Linux kernel ({reason})"));
            false
        }
    }
}

pub fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\t' => o.push_str("\\t"),
            c if (c as u32) < 0x20 => o.push_str(&format!("\\u{:04x}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

pub fn json_path(p: &Path) -> String {
    json_str(p.to_str().expect("utf-8 path"))
}

/// One image for the harness (read-only, remounted once for a second mount time).
pub struct Image {
    pub id: String,
    pub path: PathBuf,
    pub erase: u32,
    pub partition: Option<u64>,
    pub expect_dir: Option<PathBuf>,
    pub ignore: Vec<&'static str>,
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
pub fn harness(work: &Path, cmd: &str, images: &[Image]) -> (String, PathBuf) {
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
pub fn mount_times(result: &Path) -> Vec<(String, f64, f64, usize)> {
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

pub fn ok(report: &str, id: &str) -> bool {
    report
        .lines()
        .any(|l| l.starts_with(&format!("RESULT {id} OK ")))
}

/// The kernel-written fixtures: (image, its JSON record, erase size), sorted by name.
pub fn kernel_fixtures() -> Vec<(PathBuf, PathBuf, u32)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut names: Vec<PathBuf> = fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let meta = p.with_extension("json");
            let text = fs::read_to_string(&meta).unwrap();
            let es: u32 = text
                .split("\"erase_size\":")
                .nth(1)
                .and_then(|r| r.trim_start().split(|c: char| !c.is_ascii_digit()).next())
                .and_then(|v| v.parse().ok())
                .expect("erase_size");
            (p, meta, es)
        })
        .collect()
}

/// Compares the guest listing of each image of `result` with the listing recorded in the
/// matching fixture record (`metas`, in the same order), exactly, and collects the jffs2
/// complaints. One line per image: `FIXTURE id mount_ok=… recorded_ok=… diffs=N bad=N
/// seconds=…`, then up to 20 `DIFF` and every `KMSG` line.
pub fn compare_with_recorded(result: &Path, metas: &[PathBuf]) -> String {
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
        .arg(result)
        .arg(harness_path().parent().unwrap())
        .args(metas)
        .output()
        .expect("python3");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Compares, in one result file, the guest listing of image `b` with that of image `a`
/// (exactly), and reports both images' jffs2 complaints. One line: `PAIR a b mount_a=…
/// mount_b=… diffs=N bad_a=N bad_b=N`, then up to 20 `DIFF` lines.
pub fn compare_two(result: &Path, a: usize, b: usize) -> String {
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[2])
import harness
out = json.load(open(sys.argv[1]))
ra, rb = out["results"][int(sys.argv[3])], out["results"][int(sys.argv[4])]
diffs = harness.compare(ra.get("listing") or [], rb.get("listing") or [], exact=True)
bad_a = harness.bad_messages(ra.get("jffs2_messages", []))
bad_b = harness.bad_messages(rb.get("jffs2_messages", []))
print(f"PAIR {ra['id']} {rb['id']} mount_a={ra.get('mount_ok')} mount_b={rb.get('mount_ok')} "
      f"entries={len(rb.get('listing') or [])} diffs={len(diffs)} bad_a={len(bad_a)} bad_b={len(bad_b)}")
for d in diffs[:20]:
    print(f"  DIFF {json.dumps(d)}")
for m in bad_a + bad_b:
    print(f"  KMSG <{m['level']}> {m['msg']}")
"#;
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(result)
        .arg(harness_path().parent().unwrap())
        .arg(a.to_string())
        .arg(b.to_string())
        .output()
        .expect("python3");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Asserts that every image of `result` mounted, and that Linux listed exactly what it recorded
/// for the matching fixture (`metas`, in order), with no jffs2 complaint. `what` names the
/// images in the failure message.
pub fn assert_shown_as_recorded(result: &Path, metas: &[PathBuf], what: &str) {
    let text = compare_with_recorded(result, metas);
    eprintln!("{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("FIXTURE")).collect();
    assert_eq!(lines.len(), metas.len(), "{text}");
    for l in lines {
        assert!(
            l.contains("mount_ok=True recorded_ok=True diffs=0 bad=0"),
            "{what} not shown as recorded: {l}\n{text}"
        );
    }
}

/// One directory to compare with what Linux showed: `dir` (a FUSE mount, say) is listed by the
/// harness's host listing (`harness.list_host`: lstat of every entry, md5 of every file, link
/// targets, xattrs, hard-link groups) and compared field for field (`harness.compare`,
/// `exact=True`) with the guest listing of the result whose id is `id` (after the remount when
/// `remount`).
pub struct HostView<'a> {
    pub label: String,
    pub id: &'a str,
    pub remount: bool,
    pub dir: &'a Path,
}

/// Compares each view with Linux's listing in `result`. One line per view: `VIEW label id
/// linux_entries=N host_entries=N diffs=N`, then up to 30 `DIFF` lines (expected: Linux,
/// actual: the directory).
pub fn compare_host_views(result: &Path, views: &[HostView]) -> String {
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[2])
import harness
out = json.load(open(sys.argv[1]))
by_id = {r["id"]: r for r in out["results"]}
args = sys.argv[3:]
for i in range(0, len(args), 4):
    label, rid, remount, d = args[i:i + 4]
    r = by_id.get(rid, {})
    linux = (r.get("remount") or {}).get("listing") if remount == "1" else r.get("listing")
    host = harness.list_host(d)
    diffs = harness.compare(linux or [], host, exact=True)
    print(f"VIEW {label} {rid} linux_entries={len(linux or [])} host_entries={len(host)} "
          f"diffs={len(diffs)}")
    for x in diffs[:30]:
        print(f"  DIFF {json.dumps(x, ensure_ascii=False)}")
"#;
    run_view_script(script, result, views)
}

// ------------------------------------------------------------------------------------------
// jffs2-mount: the FUSE view of the images Linux mounted

pub const MOUNT: &str = env!("CARGO_BIN_EXE_jffs2-mount");

/// Whether this process can FUSE-mount (/dev/fuse it can open, fusermount3); otherwise the
/// FUSE half of the tests is skipped loudly (`skip.rs`), or fails under `CI=true`. Called
/// before the boot, so a CI machine without FUSE fails at once.
pub fn fuse_available() -> bool {
    let ok = !skip::pretend_missing("fuse3")
        && skip::find_program("fusermount3", "fuse3").is_some()
        && fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/fuse")
            .is_ok();
    ok || {
        skip::skip("fuse3 (a /dev/fuse this user can open, and fusermount3) for jffs2-mount");
        false
    }
}

/// Whether something is mounted on `dir` (`/proc/self/mountinfo`).
pub fn is_mounted(dir: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = dir.as_os_str().as_bytes();
    info.lines()
        .any(|l| l.split(' ').nth(4).is_some_and(|m| m.as_bytes() == want))
}

/// A `jffs2-mount` of an image, unmounted when dropped, whether the test passed or not:
/// `jffs2-mount -u`, then `umount -l` (as root) or `fusermount3 -u -z` if still mounted.
pub struct FuseMount {
    pub dir: PathBuf,
}

impl FuseMount {
    /// `jffs2-mount -e ERASE IMAGE DIR`; the mount is ready when it returns.
    pub fn new(image: &Path, erase: u32, dir: &Path) -> FuseMount {
        fs::create_dir_all(dir).unwrap();
        let guard = FuseMount {
            dir: dir.to_path_buf(),
        };
        let out = Command::new(MOUNT)
            .arg("-e")
            .arg(erase.to_string())
            .arg(image)
            .arg(dir)
            .stdin(std::process::Stdio::null())
            .output()
            .expect("run jffs2-mount");
        assert!(
            out.status.success() && is_mounted(dir),
            "jffs2-mount {} {}: {}",
            image.display(),
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        guard
    }
}

impl Drop for FuseMount {
    fn drop(&mut self) {
        let _ = Command::new(MOUNT).arg("-u").arg(&self.dir).output();
        for _ in 0..4 {
            if !is_mounted(&self.dir) {
                return;
            }
            let mut c = if skip::is_root() {
                let mut c = Command::new("umount");
                c.arg("-l");
                c
            } else {
                let mut c = Command::new("fusermount3");
                c.arg("-u").arg("-z");
                c
            };
            let _ = c.arg(&self.dir).output();
        }
    }
}

/// One image to FUSE-mount, and the kernel's view to compare it with.
pub struct FuseCase<'a> {
    /// The image `jffs2-mount` mounts.
    pub image: &'a Path,
    pub erase: u32,
    /// The harness id of the result holding Linux's view.
    pub linux_id: &'a str,
    /// Linux's view after the remount (else the first mount's).
    pub remount: bool,
}

/// Mounts every case's image with `jffs2-mount` and asserts that the harness's host listing of
/// the mount equals, field for field, what Linux listed (`harness.compare` with `exact=True`:
/// type, mode, owners, size and link count of every entry including directories and the root,
/// md5, symlink target, device number, hard-link group, mtime, xattrs). Every mount is
/// undone when this returns or panics.
pub fn assert_fuse_shows_what_linux_showed(work: &Path, result: &Path, cases: &[FuseCase]) {
    let mut mounts = Vec::new();
    let mut views = Vec::new();
    for (n, c) in cases.iter().enumerate() {
        let dir = work.join(format!("fuse{n}"));
        mounts.push(FuseMount::new(c.image, c.erase, &dir));
        views.push((
            c.image.file_name().unwrap().to_string_lossy().into_owned(),
            dir,
        ));
    }
    let views: Vec<HostView> = views
        .iter()
        .zip(cases)
        .map(|((label, dir), c)| HostView {
            label: label.clone(),
            id: c.linux_id,
            remount: c.remount,
            dir,
        })
        .collect();
    let text = compare_host_views(result, &views);
    drop(mounts);
    println!("--- jffs2-mount against Linux ---\n{text}");
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("VIEW ")).collect();
    assert_eq!(lines.len(), cases.len(), "{text}");
    for l in lines {
        assert!(
            l.ends_with(" diffs=0") && !l.contains(" linux_entries=0 "),
            "jffs2-mount does not show what Linux showed: {l}\n{text}"
        );
    }
}

/// Runs `harness.py <cmd>` on `spec`, a whole spec in JSON written by the caller (read-write
/// images, workloads, outputs: what [`Image`] does not describe); returns its stdout and the
/// result file.
pub fn harness_spec(work: &Path, cmd: &str, spec: &str) -> (String, PathBuf) {
    let spec_path = work.join(format!("{cmd}-raw-spec.json"));
    let result = work.join(format!("{cmd}-raw-result.json"));
    fs::write(&spec_path, spec).unwrap();
    let out = Command::new("python3")
        .arg(harness_path())
        .arg(cmd)
        .arg("--spec")
        .arg(&spec_path)
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

// ------------------------------------------------------------------------------------------
// Extracted trees against Linux's view

/// Compares each extracted tree (`HostView::dir`, e.g. a `jffs2-dump --extract` output) with
/// Linux's listing of its image, as a host tree is compared (`harness.compare` without `exact`):
/// the root by type only, and directories' sizes and link counts not at all (the host
/// filesystem's own); every other field of every entry is (type, mode, owners, size, link
/// count, md5, symlink target, device number, hard-link group, mtime, xattrs). The contents
/// of files Linux could not read (md5 null: e.g. LZMA, which Debian's kernel lacks) are not
/// compared, and counted. One line per view: `EXTRACT label id linux_entries=N host_entries=N
/// unreadable=N differ=N diffs=N` (`differ`: the entries with at least one difference), then
/// up to 30 `DIFF` lines (expected: Linux).
pub fn compare_extractions(result: &Path, views: &[HostView]) -> String {
    let script = r#"
import json, sys
sys.path.insert(0, sys.argv[2])
import harness
out = json.load(open(sys.argv[1]))
by_id = {r["id"]: r for r in out["results"]}
args = sys.argv[3:]
for i in range(0, len(args), 4):
    label, rid, remount, d = args[i:i + 4]
    r = by_id.get(rid, {})
    linux = (r.get("remount") or {}).get("listing") if remount == "1" else r.get("listing")
    host = harness.list_host(d)
    unread = {e["path"] for e in linux or [] if e["type"] == "file" and e.get("md5") is None}
    diffs = [x for x in harness.compare(linux or [], host)
             if not (x["what"] == "md5" and x["path"] in unread)]
    print(f"EXTRACT {label} {rid} linux_entries={len(linux or [])} host_entries={len(host)} "
          f"unreadable={len(unread)} differ={len({x['path'] for x in diffs})} diffs={len(diffs)}")
    for x in diffs[:30]:
        print(f"  DIFF {json.dumps(x, ensure_ascii=False)}")
"#;
    run_view_script(script, result, views)
}

/// Runs a Python `script` over `views` (argv: the result file, the harness's directory, then
/// label, id, remount flag and directory of each view); its stdout and stderr.
fn run_view_script(script: &str, result: &Path, views: &[HostView]) -> String {
    let mut cmd = Command::new("python3");
    cmd.arg("-c")
        .arg(script)
        .arg(result)
        .arg(harness_path().parent().unwrap());
    for v in views {
        cmd.arg(&v.label)
            .arg(v.id)
            .arg(if v.remount { "1" } else { "0" })
            .arg(v.dir);
    }
    let out = cmd.output().expect("python3");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}
