//! JFFS2 filesystems inside larger files: `jffs2-dump --find`, and `--offset`/`--size` in
//! every reading tool (`jffs2-dump` views and `--extract`, `jffs2-fsck`, `jffs2-convert`,
//! `jffs2-mount`) giving what the same tool gives on the bytes cut out with dd; data after
//! the end of a filesystem reported as such (`docs/spec/ecosystem.md` §9); `--find
//! --extract=DIR` writing each filesystem into `DIR/fs_N` as its window extracts.
//!
//! The mount test needs /dev/fuse and fusermount3 (Debian package fuse3) and root: skipped
//! loudly without them, and fails under `CI=true`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::skip;
use serde_json::Value;

const MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");
const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");
const MOUNT: &str = env!("CARGO_BIN_EXE_jffs2-mount");

fn run(bin: &str, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run the tool")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// Pseudo-random bytes, never 0xFF (foreign from the first byte on).
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % 255) as u8
        })
        .collect()
}

/// A tree of `files` incompressible files of `size` bytes and a subdirectory, built into an
/// image with `args`.
fn image(dir: &Path, name: &str, files: usize, size: usize, args: &[&str]) -> PathBuf {
    let root = dir.join(format!("{name}.root"));
    std::fs::create_dir_all(root.join("sub")).unwrap();
    for i in 0..files {
        std::fs::write(root.join(format!("f{i}")), noise(i as u64 + 1, size)).unwrap();
    }
    std::fs::write(root.join("sub/hello"), b"hello\n").unwrap();
    std::os::unix::fs::symlink("../f0", root.join("sub/link")).unwrap();
    let out = dir.join(format!("{name}.img"));
    let mut a = vec!["-r", s(&root), "-o", s(&out), "-f"];
    a.extend_from_slice(args);
    let o = run(MKFS, &a);
    assert!(o.status.success(), "jffs2-mkfs: {}", stderr(&o));
    out
}

/// The firmware blob of the tests: where each part starts.
struct Blob {
    path: PathBuf,
    le: PathBuf,
    be: PathBuf,
    le_at: u64,
    be_at: u64,
    len: u64,
}

/// 1 MiB of noise, a little-endian mkfs image, 64 KiB of 0xFF, squashfs-like junk, a
/// big-endian image (128 KiB erase blocks), a noise tail.
fn blob(dir: &Path) -> Blob {
    let le = image(dir, "le", 4, 30_000, &[]);
    let be = image(dir, "be", 5, 60_000, &["-b", "-e", "128KiB"]);
    let mut b = noise(7, 1 << 20);
    let le_at = b.len() as u64;
    b.extend(std::fs::read(&le).unwrap());
    b.extend(std::iter::repeat_n(0xFF, 65536));
    b.extend_from_slice(b"hsqs");
    b.extend(noise(9, 40_000));
    let be_at = b.len() as u64;
    b.extend(std::fs::read(&be).unwrap());
    b.extend(noise(11, 20_000));
    let path = dir.join("blob.bin");
    std::fs::write(&path, &b).unwrap();
    Blob {
        path,
        le,
        be,
        le_at,
        be_at,
        len: b.len() as u64,
    }
}

/// `--find --json` on `path`: its filesystems.
fn find(path: &Path) -> Vec<Value> {
    let o = run(DUMP, &["--find", "--json", s(path)]);
    assert!(o.status.success(), "--find: {}", stderr(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).expect("one JSON document");
    doc["filesystems"].as_array().expect("filesystems").clone()
}

/// The bytes `start..end` of `path` cut out into `out`, as `dd` would.
fn cut(path: &Path, start: u64, end: u64, out: &Path) -> PathBuf {
    let b = std::fs::read(path).unwrap();
    std::fs::write(out, &b[start as usize..end as usize]).unwrap();
    out.to_path_buf()
}

/// Every entry under `root`: type and content (a symlink's target).
fn tree(root: &Path) -> BTreeMap<String, (String, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let v = if m.file_type().is_symlink() {
                (
                    "link".into(),
                    std::fs::read_link(&p)
                        .unwrap()
                        .into_os_string()
                        .into_encoded_bytes(),
                )
            } else if m.is_dir() {
                stack.push(p.clone());
                ("dir".into(), Vec::new())
            } else {
                ("file".into(), std::fs::read(&p).unwrap())
            };
            out.insert(rel, v);
        }
    }
    out
}

fn extract(args: &[&str], image: &Path, out: &Path) -> Output {
    let mut a = vec!["--extract", s(out)];
    a.extend_from_slice(args);
    a.push(s(image));
    let o = run(DUMP, &a);
    assert!(o.status.success(), "--extract {args:?}: {}", stderr(&o));
    o
}

/// fsck's JSON without what names the input (the path, the window).
fn fsck_json(args: &[&str], image: &Path) -> Value {
    let mut a = vec!["--json", "--no-progress"];
    a.extend_from_slice(args);
    a.push(s(image));
    let o = run(FSCK, &a);
    let mut v: Value = serde_json::from_slice(&o.stdout).expect("fsck --json");
    let m = v.as_object_mut().unwrap();
    m.remove("image");
    m.remove("window");
    v
}

#[test]
fn find_lists_every_filesystem_of_a_blob() {
    let d = tempfile::tempdir().unwrap();
    let b = blob(d.path());
    let f = find(&b.path);
    assert_eq!(f.len(), 2, "{f:#?}");
    let le_len = std::fs::metadata(&b.le).unwrap().len();
    let be_len = std::fs::metadata(&b.be).unwrap().len();
    assert_eq!(f[0]["start"], b.le_at);
    // Its last erase block, 0xFF padding included, and no further.
    assert_eq!(f[0]["end"], b.le_at + le_len.next_multiple_of(65536));
    assert_eq!(f[0]["endian"], "little");
    assert_eq!(f[0]["erase_size"], 65536);
    assert_eq!(f[1]["start"], b.be_at);
    assert_eq!(
        f[1]["end"],
        b.be_at + be_len,
        "the noise tail is not part of it"
    );
    assert_eq!(f[1]["endian"], "big");
    assert_eq!(f[1]["erase_size"], 131072);
    for (x, files, img) in [(&f[0], 4, &b.le), (&f[1], 5, &b.be)] {
        // Files, the subdirectory, its file and its link.
        assert_eq!(x["files"], files + 3);
        assert_eq!(x["clean_mkfs"], true);
        let dump = run(DUMP, &["--json", s(img)]);
        let doc: Value = serde_json::from_slice(&dump.stdout).unwrap();
        assert_eq!(x["nodes"], doc["nodes"].as_array().unwrap().len());
    }
    let table = stdout(&run(DUMP, &["--find", s(&b.path)]));
    assert!(
        table.contains(&format!("0x{:08x}", b.be_at)) && table.contains("big"),
        "{table}"
    );
    // A window: searched there only; offsets are still the file's.
    let w = format!("--offset={}", b.be_at - 100);
    let o = run(DUMP, &["--find", "--json", &w, s(&b.path)]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(doc["filesystems"].as_array().unwrap().len(), 1);
    assert_eq!(doc["filesystems"][0]["start"], b.be_at);
}

#[test]
fn a_window_reads_as_the_bytes_cut_out() {
    let d = tempfile::tempdir().unwrap();
    let b = blob(d.path());
    for (i, x) in find(&b.path).iter().enumerate() {
        let (start, end) = (x["start"].as_u64().unwrap(), x["end"].as_u64().unwrap());
        let dd = cut(&b.path, start, end, &d.path().join(format!("dd{i}.img")));
        let off = format!("--offset=0x{start:x}");
        let size = format!("--size={}", end - start);
        let w = [off.as_str(), size.as_str()];
        for view in [
            &["--list"][..],
            &["--info"],
            &["--json"],
            &["--blocks"],
            &["-c"],
        ] {
            let mut a = w.to_vec();
            a.extend_from_slice(view);
            let windowed = run(DUMP, &[&a[..], &[s(&b.path)]].concat());
            let whole = run(DUMP, &[view, &[s(&dd)][..]].concat());
            let (mut got, want) = (stdout(&windowed), stdout(&whole));
            if view == ["--info"] {
                // The one line that says where the window is.
                let first = got.find('\n').unwrap() + 1;
                assert!(got[..first].starts_with("window:"), "{got}");
                got = got[first..].to_string();
            }
            if view == ["--json"] {
                let mut g: Value = serde_json::from_str(&got).unwrap();
                assert_eq!(g["window"]["offset"], start);
                g["window"] = Value::Null;
                assert_eq!(g, serde_json::from_str::<Value>(&want).unwrap());
                continue;
            }
            assert_eq!(got, want, "{view:?} on filesystem {i}");
        }
        let (x1, x2) = (
            d.path().join(format!("x{i}a")),
            d.path().join(format!("x{i}b")),
        );
        extract(&w, &b.path, &x1);
        extract(&[], &dd, &x2);
        assert_eq!(tree(&x1), tree(&x2));
        assert!(tree(&x1).contains_key("sub/hello"));
        assert_eq!(fsck_json(&w, &b.path), fsck_json(&[], &dd));
        let (c1, c2) = (
            d.path().join(format!("c{i}a")),
            d.path().join(format!("c{i}b")),
        );
        let mut a = vec!["-i", s(&b.path), "-o", s(&c1)];
        a.extend_from_slice(&w);
        assert!(run(CONVERT, &a).status.success());
        assert!(run(CONVERT, &["-i", s(&dd), "-o", s(&c2)]).status.success());
        assert_eq!(std::fs::read(&c1).unwrap(), std::fs::read(&c2).unwrap());
    }
}

#[test]
fn a_window_beyond_the_file_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let b = blob(d.path());
    let past = format!("--offset={}", b.len + 1);
    let long = [format!("--offset={}", b.be_at), format!("--size={}", b.len)];
    let want = format!("beyond the end of the file ({} bytes)", b.len);
    let cases: Vec<(&str, Vec<&str>)> = vec![
        (DUMP, vec!["--list", &past, s(&b.path)]),
        (DUMP, vec!["--list", &long[0], &long[1], s(&b.path)]),
        (DUMP, vec!["-c", &long[0], &long[1], s(&b.path)]),
        (DUMP, vec!["--find", &past, s(&b.path)]),
        (FSCK, vec![&long[0], &long[1], s(&b.path)]),
        (CONVERT, vec!["-i", s(&b.path), "-o", "/dev/null", &past]),
    ];
    for (bin, a) in cases {
        let o = run(bin, &a);
        assert!(!o.status.success(), "{bin} {a:?}");
        assert!(stderr(&o).contains(&want), "{bin} {a:?}: {}", stderr(&o));
    }
    let o = run(DUMP, &["--list", "--offset=12xyz", s(&b.path)]);
    assert!(!o.status.success() && stderr(&o).contains("invalid --offset '12xyz'"));
}

#[test]
fn data_after_the_end_is_reported_as_such() {
    let d = tempfile::tempdir().unwrap();
    let b = blob(d.path());
    // The big-endian image and the noise after it, to the end of the file.
    let w = format!("--offset={}", b.be_at);
    let be_len = std::fs::metadata(&b.be).unwrap().len();
    let o = run(FSCK, &["--json", "--no-progress", &w, s(&b.path)]);
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{doc:#}");
    assert_eq!(doc["verdict"], fsck_json(&[], &b.be)["verdict"]);
    let notes: Vec<&Value> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["code"] == "data-after-end")
        .collect();
    assert_eq!(notes.len(), 1, "{doc:#}");
    assert_eq!(notes[0]["severity"], "info");
    let text = format!(
        "data after the end of the filesystem at 0x{be_len:08x} ({} bytes)",
        b.len - b.be_at - be_len
    );
    assert!(
        notes[0]["message"].as_str().unwrap().contains(&text),
        "{notes:?}"
    );
    let info = stdout(&run(DUMP, &["--info", &w, s(&b.path)]));
    assert!(info.contains(&text), "{info}");
    let (x1, x2) = (d.path().join("tail"), d.path().join("alone"));
    let o = extract(&[&w], &b.path, &x1);
    assert!(stderr(&o).contains(&text), "{}", stderr(&o));
    extract(&[], &b.be, &x2);
    assert_eq!(tree(&x1), tree(&x2));
    // The image alone has none.
    let alone = fsck_json(&[], &b.be);
    assert!(!alone.to_string().contains("data-after-end"));
}

#[test]
fn two_generations_in_one_partition_dump() {
    let d = tempfile::tempdir().unwrap();
    // The older generation padded to 256 KiB, the newer right after it; then another pair
    // back to back, unpadded.
    let old = image(d.path(), "old", 2, 20_000, &["-p", "262144"]);
    let new = image(d.path(), "new", 3, 20_000, &[]);
    let mut b = std::fs::read(&old).unwrap();
    let second = b.len() as u64;
    b.extend(std::fs::read(&new).unwrap());
    let third = b.len() as u64;
    b.extend(std::fs::read(&new).unwrap());
    let dump = d.path().join("part.bin");
    std::fs::write(&dump, &b).unwrap();
    let f = find(&dump);
    assert_eq!(f.len(), 3, "{f:#?}");
    let starts: Vec<u64> = f.iter().map(|x| x["start"].as_u64().unwrap()).collect();
    assert_eq!(starts, [0, second, third]);
    assert_eq!(f[0]["end"], second);
    assert_eq!(f[1]["end"], third);
    for (i, (x, img)) in f.iter().zip([&old, &new, &new]).enumerate() {
        let off = format!("--offset={}", x["start"]);
        let size = format!(
            "--size={}",
            x["end"].as_u64().unwrap() - x["start"].as_u64().unwrap()
        );
        let (x1, x2) = (
            d.path().join(format!("g{i}a")),
            d.path().join(format!("g{i}b")),
        );
        extract(&[&off, &size], &dump, &x1);
        extract(&[], img, &x2);
        assert_eq!(tree(&x1), tree(&x2), "generation {i}");
    }
}

/// Images the kernel wrote (garbage collection, power cuts, torn nodes): each one filesystem,
/// whole, kernel-written, in place inside noise too.
#[test]
fn kernel_written_images_are_found_whole() {
    let d = tempfile::tempdir().unwrap();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/kernel");
    let mut seen = 0;
    for e in std::fs::read_dir(&dir).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "img") {
            continue;
        }
        seen += 1;
        let img = std::fs::read(&p).unwrap();
        let mut b = noise(5, 10_001);
        b.extend_from_slice(&img);
        b.extend(noise(6, 9000));
        let blob = d.path().join("k.bin");
        std::fs::write(&blob, &b).unwrap();
        let f = find(&blob);
        assert_eq!(f.len(), 1, "{p:?}: {f:#?}");
        assert_eq!(f[0]["start"], 10_001, "{p:?}");
        assert_eq!(f[0]["end"], 10_001 + img.len() as u64, "{p:?}");
        assert_eq!(f[0]["clean_mkfs"], false, "{p:?}");
        let alone = find(&p);
        assert_eq!(
            (alone[0]["nodes"].clone(), alone[0]["files"].clone()),
            (f[0]["nodes"].clone(), f[0]["files"].clone())
        );
    }
    assert!(seen >= 5, "the kernel fixtures are missing");
}

/// With `--oobsize` (a raw NAND dump) the window is on the raw file: the OOB bytes are
/// removed from the window's bytes.
#[test]
fn the_window_of_a_nand_dump_is_on_the_raw_file() {
    let d = tempfile::tempdir().unwrap();
    let img = image(d.path(), "nand", 3, 10_000, &["-n"]);
    let mut data = std::fs::read(&img).unwrap();
    data.resize(data.len().next_multiple_of(2048), 0xFF);
    let mut raw = noise(3, 5000);
    let at = raw.len();
    for page in data.chunks(2048) {
        raw.extend_from_slice(page);
        raw.extend(std::iter::repeat_n(0xA5, 64));
    }
    let raw_len = raw.len() - at;
    raw.extend(noise(4, 3000));
    let dump = d.path().join("nand.raw");
    std::fs::write(&dump, &raw).unwrap();
    let padded = d.path().join("padded.img");
    std::fs::write(&padded, &data).unwrap();
    let (c1, c2) = (d.path().join("c1"), d.path().join("c2"));
    let (off, size) = (format!("--offset={at}"), format!("--size={raw_len}"));
    let o = run(
        CONVERT,
        &["-i", s(&dump), "-o", s(&c1), "--oobsize=64", &off, &size],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(run(CONVERT, &["-i", s(&padded), "-o", s(&c2)])
        .status
        .success());
    assert_eq!(std::fs::read(&c1).unwrap(), std::fs::read(&c2).unwrap());
    let a = ["-d", "2048", "-o", "64", "--list", &off, &size, s(&dump)];
    let listed = stdout(&run(DUMP, &a));
    // jffs2dump's line about the peeling, then the listing.
    let listed = listed
        .strip_prefix("Peeling data out of combined data/oob image\n")
        .unwrap_or_else(|| panic!("{listed}"));
    assert_eq!(listed, stdout(&run(DUMP, &["--list", s(&padded)])));
    assert!(listed.contains("hello"), "{listed}");
}

/// Whether something is mounted on `dir`.
fn is_mounted(dir: &Path) -> bool {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let d = dir.display().to_string();
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(d.as_str()))
}

#[test]
fn mount_a_window() {
    let fuse = std::path::Path::new("/dev/fuse").exists()
        && skip::find_program("fusermount3", "fuse3").is_some();
    if !fuse {
        skip::skip("fuse3 (/dev/fuse and fusermount3)");
        return;
    }
    if !skip::root() {
        return;
    }
    let d = tempfile::tempdir().unwrap();
    let b = blob(d.path());
    let f = find(&b.path);
    let (start, end) = (
        f[1]["start"].as_u64().unwrap(),
        f[1]["end"].as_u64().unwrap(),
    );
    let mnt = d.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let off = format!("--offset={start}");
    let size = format!("--size={}", end - start);
    let mut child = Command::new(MOUNT)
        .args(["-f", &off, &size, s(&b.path), s(&mnt)])
        .spawn()
        .expect("spawn jffs2-mount");
    let t = Instant::now();
    while !is_mounted(&mnt) && t.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let mounted = is_mounted(&mnt).then(|| tree(&mnt));
    let c = std::ffi::CString::new(s(&mnt)).unwrap();
    // SAFETY: a valid NUL-terminated path.
    unsafe { libc::umount2(c.as_ptr(), libc::MNT_DETACH) };
    let _ = child.wait();
    let x = d.path().join("x");
    extract(&[], &b.be, &x);
    assert_eq!(mounted.expect("mounted within 20 s"), tree(&x));
}

/// `--find --extract DIR`: every filesystem of the blob (little- then big-endian, noise
/// around them) into `DIR/fs_N`, N as in the `--find` table, each what `--extract` reads in
/// its window; DIR holds nothing else. `--json` is refused with it, and so is a non-empty DIR
/// without `--force`.
#[test]
fn find_extract_writes_every_filesystem() {
    let d = tempfile::tempdir().unwrap();
    let b = blob(d.path());
    let out = d.path().join("all");
    let o = run(DUMP, &["--find", "--extract", s(&out), s(&b.path)]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let mut names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["fs_1", "fs_2"]);
    for (i, (x, img)) in find(&b.path).iter().zip([&b.le, &b.be]).enumerate() {
        let (start, end) = (x["start"].as_u64().unwrap(), x["end"].as_u64().unwrap());
        let (off, size) = (
            format!("--offset={start}"),
            format!("--size={}", end - start),
        );
        let one = d.path().join(format!("w{i}"));
        extract(&[&off, &size], &b.path, &one);
        let whole = d.path().join(format!("i{i}"));
        extract(&[], img, &whole);
        let got = tree(&out.join(format!("fs_{}", i + 1)));
        assert_eq!(got, tree(&one), "fs_{}", i + 1);
        assert_eq!(got, tree(&whole), "fs_{}", i + 1);
    }
    assert_eq!(b.le_at, find(&b.path)[0]["start"].as_u64().unwrap());

    let o = run(DUMP, &["--find", "--extract", s(&out), s(&b.path)]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("not empty"), "{}", stderr(&o));
    let o = run(
        DUMP,
        &["--find", "--extract", s(&out), "--force", s(&b.path)],
    );
    assert_eq!(
        o.status.code(),
        Some(2),
        "names that exist are refused: {}",
        stderr(&o)
    );
    let fresh = d.path().join("json");
    let o = run(
        DUMP,
        &["--find", "--json", "--extract", s(&fresh), s(&b.path)],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(!fresh.exists());
}
