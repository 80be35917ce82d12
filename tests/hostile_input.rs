//! Hostile inputs at the command line: an image that shrinks while a tool has it mapped
//! (rebuilt in place), inputs without an end (`/dev/zero`), too little memory, malformed
//! device tables and numbers that do not fit.
//!
//! Every run must end with a status the tool's `--help` documents and a message naming the
//! input — never death by a signal (`SIGBUS`: 135) or an abort — and leave no temporary file.

mod common;

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::scratch;

const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const SUMTOOL: &str = env!("CARGO_BIN_EXE_jffs2-sumtool");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");
const MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");

/// An uncompressed image of `files` files of 16 KiB of random bytes, padded to whole 64 KiB
/// erase blocks (so its length is a multiple of the page size).
fn image(dir: &Path, files: usize) -> PathBuf {
    let tree = dir.join("tree");
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(&tree).unwrap();
    for i in 0..files {
        std::fs::write(
            tree.join(format!("f{i:05}")),
            common::random(i as u64 + 1, 16384),
        )
        .unwrap();
    }
    let img = dir.join("image.jffs2");
    let o = Command::new(MKFS)
        .arg("-r")
        .arg(&tree)
        .arg("-o")
        .arg(&img)
        .args(["-e", "64KiB", "-p", "-m", "none"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::remove_dir_all(&tree).unwrap();
    img
}

/// Whether `pid` has `path` mapped.
fn has_mapped(pid: u32, path: &Path) -> bool {
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap_or_default();
    let p = path.to_string_lossy();
    maps.lines().any(|l| l.ends_with(&*p))
}

/// Runs `tool args` on an image, truncates the image to 64 KiB as soon as the tool has it
/// mapped, and checks the outcome: the documented status `code`, "changed (shrank) while
/// being read" naming the image, and nothing left in the output directory. When the tool was
/// done before the truncation could matter (it exited 0), it is tried again on an image
/// twice as large; never catching it is a failure.
fn truncated_while_mapped(tool: &str, args: &[&str], code: i32) {
    let work = scratch();
    let dir = std::fs::canonicalize(work.path()).unwrap();
    let outdir = dir.join("out");
    let mut files = 1000;
    for _attempt in 0..5 {
        let img = image(&dir, files);
        let _ = std::fs::remove_dir_all(&outdir);
        std::fs::create_dir(&outdir).unwrap();
        let argv: Vec<OsString> = args
            .iter()
            .map(|a| match *a {
                "IMG" => img.clone().into_os_string(),
                "OUT" => outdir.join("out.img").into_os_string(),
                "DIR" => outdir.join("x").into_os_string(),
                a => a.into(),
            })
            .collect();
        let mut child = Command::new(tool)
            .args(&argv)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut truncated = false;
        loop {
            if child.try_wait().unwrap().is_some() {
                break;
            }
            if has_mapped(child.id(), &img) {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&img)
                    .unwrap()
                    .set_len(64 << 10)
                    .unwrap();
                truncated = true;
                break;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let o = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
        if !truncated || o.status.code() == Some(0) {
            // Done before the truncation mattered: a larger image gives a longer window.
            files *= 2;
            continue;
        }
        assert_eq!(
            o.status.code(),
            Some(code),
            "{tool} {args:?}: {:?} (a signal if None)\n{stderr}",
            o.status
        );
        assert!(
            stderr.contains(&format!(
                "{}: changed (shrank) while being read",
                img.display()
            )),
            "{tool} {args:?}: {stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(&outdir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n != "x")
            .collect();
        assert!(left.is_empty(), "{tool} {args:?} left {left:?}");
        return;
    }
    panic!("{tool} {args:?}: never caught with the image mapped, up to {files} files");
}

#[test]
fn convert_input_truncated_while_mapped() {
    truncated_while_mapped(CONVERT, &["-i", "IMG", "-o", "OUT"], 8);
}

#[test]
fn sumtool_input_truncated_while_mapped() {
    truncated_while_mapped(SUMTOOL, &["-i", "IMG", "-o", "OUT", "-e", "64KiB"], 255);
}

#[test]
fn dump_list_input_truncated_while_mapped() {
    truncated_while_mapped(DUMP, &["--list", "IMG"], 1);
}

#[test]
fn dump_content_and_endian_conversion_input_truncated_while_mapped() {
    truncated_while_mapped(DUMP, &["-c", "-e", "OUT", "IMG"], 1);
}

#[test]
fn dump_extract_input_truncated_while_mapped() {
    truncated_while_mapped(DUMP, &["--extract", "DIR", "IMG"], 1);
}
