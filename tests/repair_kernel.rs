//! `jffs2-fsck --repair` and `jffs2-convert` judged by the Linux kernel on images that Linux
//! itself writes and then cannot mount (docs/FSCK.md, "Images Linux wrote and cannot mount"):
//! an `mkfs.jffs2 -n` image (no cleanmarkers) in 64 KiB blocks, written to by a read-write
//! mount and cleanly unmounted or cut by a power loss, makes the next mount BUG in
//! `jffs2_link_node_ref`. Both images are made here by the kernel (the harness of
//! `tests/kernel_harness.rs`, docs/TESTING.md), and one is kept as a fixture too
//! (`fixtures/kernel/unmountable/`). Each is checked (fsck predicts the failure), extracted
//! (the salvage view), repaired by both tools (exit 1, saying the input was unmountable), and
//! every repair, mounted read-only by Linux, must show exactly the tree that
//! `jffs2-dump --extract` wrote, with no jffs2 complaint. The unmounted image itself, mounted
//! last in the same boot, must still kill that kernel.
//!
//! Like the other kernel suites, never silently skipped: without qemu or the kernel the test
//! says SKIPPED loudly and returns (tests/common/skip.rs); under `CI=true` it fails.

mod common;
#[path = "common/kernel.rs"]
mod kernel;

use std::path::{Path, PathBuf};
use std::process::Command;

use kernel::*;

const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");
const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");

/// Files created, rewritten and deleted until mkfs.jffs2's last, partly written block is
/// full and the kernel closes it with a summary of its own (as
/// `tests/kernel/make-fixtures.py --unmountable` does; compressible data, so that the
/// garbage collector leaves that block alone).
const WORKLOAD: &str = r#"
i=0
while [ $i -lt 30 ]; do
  echo "record $i $(echo $i | md5sum)" > new.$((i % 5))
  dd if=/dev/zero bs=1k count=$(( (i % 4) * 3 + 1 )) 2>/dev/null > blob.$((i % 3))
  [ $((i % 4)) = 0 ] && rm -f new.$(((i + 2) % 5))
  i=$((i+1))
done
rm -f data/notes.txt
sync
"#;

const ERASE: u32 = 64 << 10;

/// A run: exit status, stdout, stderr.
fn run(bin: &str, args: &[&str]) -> (i32, String, String) {
    let o = Command::new(bin).args(args).output().expect("run a tool");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

fn p(path: &Path) -> &str {
    path.to_str().expect("utf-8 path")
}

/// Text of `n` bytes (compressible, different per seed).
fn text(seed: u32, n: usize) -> Vec<u8> {
    let mut v = Vec::with_capacity(n + 40);
    let mut k = seed;
    while v.len() < n {
        v.extend_from_slice(format!("line {k} of file {seed}: flash erase node\n").as_bytes());
        k = k.wrapping_mul(1_103_515_245).wrapping_add(12_345) % 100_000;
    }
    v.truncate(n);
    v
}

/// `n` incompressible bytes (a linear congruential generator's high bytes).
fn noise(seed: u32, n: usize) -> Vec<u8> {
    let mut x = u64::from(seed) | 1;
    (0..n)
        .map(|_| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 56) as u8
        })
        .collect()
}

/// The source tree: a few directories, text and incompressible files, a symlink. About 55 KiB
/// on flash: mkfs.jffs2's one block is left partly written, for the kernel to fill.
fn make_tree(root: &Path) {
    for (rel, data) in [
        ("bin/tool", noise(5, 9000)),
        ("data/blob", noise(6, 30_000)),
        ("etc/motd", b"welcome\n".to_vec()),
        ("etc/config", text(1, 3000)),
        ("data/notes.txt", text(2, 9000)),
        ("data/log", text(3, 40_000)),
        ("var/lib/state", text(4, 12_000)),
    ] {
        let path = root.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, data).unwrap();
    }
    std::os::unix::fs::symlink("../etc/config", root.join("data/config-link")).unwrap();
}

/// The workload as a power-cut writer: the same writes, forever, until the power goes.
fn writer() -> String {
    WORKLOAD
        .replace("while [ $i -lt 30 ]", "while true")
        .replace("rm -f data/notes.txt\nsync\n", "")
}

/// Linux writes the images, in one boot: mkfs -n, a read-write mount, the workload, then a
/// clean unmount (`written.img`) or a power cut in the middle of the writes (`cut.img`).
fn written_by_linux(w: &Path) -> [PathBuf; 2] {
    let tree = w.join("tree");
    make_tree(&tree);
    let start = w.join("start.img");
    let (code, _, err) = run(
        MKFS,
        &["-n", "-e", "64KiB", "-r", p(&tree), "-o", p(&start)],
    );
    assert_eq!(code, 0, "jffs2-mkfs: {err}");
    let (written, cut) = (w.join("written.img"), w.join("cut.img"));
    let common = format!(
        "\"path\": {}, \"erase_size\": {ERASE}, \"pad_to\": 1048576, \"mode\": \"rw\"",
        json_path(&start)
    );
    let spec = format!(
        "{{\"timeout\": 600, \"images\": [\n\
         {{\"id\": \"write\", {common}, \"workload\": {}, \"output\": {}}},\n\
         {{\"id\": \"cut\", {common}, \"power_cut\": {{\"writer\": {}, \"delay\": 2.0}}, \
         \"output\": {}}}]}}\n",
        json_str(WORKLOAD),
        json_path(&written),
        json_str(&writer()),
        json_path(&cut)
    );
    let (report, _) = harness_spec(w, "run", &spec);
    assert!(
        report.contains("RESULT write DONE mount=ok") && report.contains("RESULT cut POWER-CUT"),
        "the writing boot:\n{report}"
    );
    [written, cut]
}

/// jffs2-fsck predicts the kernel's failure exactly: the mount fails on a summary.
fn assert_predicted(img: &Path) {
    let (code, out, _) = run(FSCK, &[p(img)]);
    assert_eq!(code, 4, "{out}");
    assert!(
        out.contains("ERROR mount-failure -: the mount fails: kernel BUG: ")
            && out.contains("ERROR summary-invalid ")
            && out.contains("Linux refuses to mount it"),
        "{}: not the failure expected:\n{out}",
        img.display()
    );
}

/// Extracts `img` (the salvage view, with a warning), repairs it with both tools (each saying
/// why Linux refuses it, `why`), and returns the images Linux is to mount, each with the
/// extracted tree it must show.
fn repaired(w: &Path, id: &str, img: &Path, why: &str) -> Vec<Image> {
    let x = w.join(format!("{id}.extracted"));
    let (code, _, err) = run(DUMP, &[&format!("--extract={}", p(&x)), p(img)]);
    assert_eq!(code, 0, "{id}: jffs2-dump --extract: {err}");
    assert!(
        err.contains(&format!("Linux would refuse to mount this image: {why}")),
        "{id}: {err}"
    );
    let rep = w.join(format!("{id}.repair.img"));
    let (code, _, err) = run(FSCK, &[&format!("--repair={}", p(&rep)), p(img)]);
    assert_eq!(code, 1, "{id}: jffs2-fsck --repair: {err}");
    assert!(
        err.contains("Linux would not mount") && err.contains("holds what can be read of it"),
        "{id}: {err}"
    );
    let conv = w.join(format!("{id}.convert.img"));
    let (code, _, err) = run(CONVERT, &["-i", p(img), "-o", p(&conv)]);
    assert_eq!(code, 1, "{id}: jffs2-convert: {err}");
    assert!(
        err.contains(&format!("Linux would not mount the input ({why}")),
        "{id}: {err}"
    );
    // And the repairs check clean.
    for out in [&rep, &conv] {
        let (code, text, _) = run(FSCK, &[p(out)]);
        assert_eq!(code, 0, "{}: {text}", out.display());
    }
    [("repair", rep), ("convert", conv)]
        .into_iter()
        .map(|(how, path)| Image {
            id: format!("{id}.{how}"),
            path,
            erase: ERASE,
            partition: None,
            expect_dir: Some(x.clone()),
            ignore: vec![],
        })
        .collect()
}

/// Another image Linux refuses with its data readable: an mkfs.jffs2 image of the tree (with
/// cleanmarkers) followed by one node of an INCOMPAT type Linux does not know (the mount
/// fails with -EIO, no BUG).
fn with_incompat_node(w: &Path) -> PathBuf {
    let img = w.join("incompat.img");
    let (code, _, err) = run(
        MKFS,
        &["-e", "64KiB", "-r", p(&w.join("tree")), "-o", p(&img)],
    );
    assert_eq!(code, 0, "jffs2-mkfs: {err}");
    let mut bytes = std::fs::read(&img).unwrap();
    bytes.resize(bytes.len().next_multiple_of(4), 0xFF);
    let mut node = Vec::new();
    node.extend_from_slice(&0x1985u16.to_le_bytes());
    node.extend_from_slice(&0xE0FFu16.to_le_bytes());
    node.extend_from_slice(&12u32.to_le_bytes());
    let crc = jffs2::crc::crc32(&node);
    node.extend_from_slice(&crc.to_le_bytes());
    bytes.extend_from_slice(&node);
    std::fs::write(&img, bytes).unwrap();
    let (code, out, _) = run(FSCK, &[p(&img)]);
    assert!(
        code == 4 && out.contains("ERROR incompat-node ") && out.contains("Linux refuses"),
        "{out}"
    );
    img
}

#[test]
fn images_linux_writes_and_cannot_mount_are_repaired_and_mount() {
    if !kernel_available() {
        return;
    }
    let work = tempfile::Builder::new()
        .prefix("jffs2-repair-kernel-")
        .tempdir()
        .unwrap();
    let w = work.path();
    let [written, cut] = written_by_linux(w);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/kernel/unmountable/summary-bug-64k.img");
    let mut images = Vec::new();
    for (id, img) in [("written", &written), ("cut", &cut), ("fixture", &fixture)] {
        assert_predicted(img);
        images.extend(repaired(w, id, img, "kernel BUG: "));
    }
    let incompat = with_incompat_node(w);
    images.extend(repaired(w, "incompat", &incompat, "node type 0xe0ff at 0x"));
    let ids: Vec<String> = images.iter().map(|i| i.id.clone()).collect();
    // Linux refuses the INCOMPAT image (an error, no BUG), and the damaged image, last in the
    // boot, still kills it.
    images.push(Image {
        id: "refused".into(),
        path: incompat,
        erase: ERASE,
        partition: None,
        expect_dir: None,
        ignore: vec![],
    });
    images.push(Image {
        id: "damaged".into(),
        path: written.clone(),
        erase: ERASE,
        partition: None,
        expect_dir: None,
        ignore: vec![],
    });
    let (report, _) = harness(w, "check", &images);
    for id in &ids {
        assert!(ok(&report, id), "{id} as Linux shows it:\n{report}");
    }
    assert!(
        report.contains("RESULT refused FAIL mount=FAILED"),
        "the INCOMPAT image mounted:\n{report}"
    );
    assert!(
        report.contains("RESULT damaged ")
            && !report.contains("RESULT damaged OK")
            && report.contains("jffs2_link_node_ref"),
        "the damaged image mounted:\n{report}"
    );
}
