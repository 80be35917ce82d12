//! Images made by others (`fixtures/thirdparty/`: other tools' test fixtures and a Buildroot root
//! filesystem, listed with provenance and licence in its `MANIFEST.tsv`) extracted by
//! `jffs2-dump --extract` must show exactly what Linux shows when it mounts them: every entry's
//! type, mode, owners, size, link count, md5, link target, device number, hard-link group,
//! mtime and xattrs (the kernel harness of `tests/kernel_harness.rs`, one boot for all of them).
//! Linux on x86 reads only little-endian JFFS2, so a big-endian image is compared with Linux's
//! view of its little-endian conversion (`jffs2-convert -l`), as the kernel suite does.
//!
//! Each image is extracted twice, with the erase size the manifest records (the one Linux is
//! given) and without it (detected, as a user runs it): both must show what Linux shows.
//!
//! The manifest itself is checked without the kernel: every image in the directory is listed
//! (and every listed one is there), under a licence that allows shipping it with this
//! GPL-2.0-or-later project, in the byte order and erase size `jffs2-dump --info` detects.
//!
//! `JFFS2_THIRDPARTY_EXTERNAL=DIR` adds the images of `EXTERNAL.tsv` found in DIR (device dumps
//! that no licence lets us ship; `fixtures/thirdparty/README.md` says how to fetch them) to the
//! same boot and the same check. Files Linux cannot read there (LZMA, which Debian's kernel
//! lacks) are compared without their contents; in the shipped images there must be none.
//!
//! Like the kernel suite, never silently skipped: without qemu or the kernel (or root, needed to
//! restore owners and trusted xattrs) the test says SKIPPED loudly and returns
//! (tests/common/skip.rs); under `CI=true` it fails.

mod common;
#[path = "common/kernel.rs"]
mod kernel;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::skip;
use kernel::*;

const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");

/// Licences under which an image may be shipped beside this GPL-2.0-or-later project.
const REDISTRIBUTABLE: &[&str] = &[
    "GPL-2.0",
    "GPL-2.0-or-later",
    "GPL-3.0",
    "GPL-3.0-or-later",
    "MIT",
    "BSD-2-Clause",
    "BSD-3-Clause",
    "Apache-2.0",
    "CC0-1.0",
];

/// One line of `MANIFEST.tsv` (or of `EXTERNAL.tsv`).
struct Entry {
    file: String,
    path: PathBuf,
    erase: u32,
    big: bool,
    licence: String,
    /// `made_by` is "damaged": bytes cut or replaced by the image's authors.
    damaged: bool,
    external: bool,
}

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/thirdparty")
}

/// The images listed in `name` (`MANIFEST.tsv`, 6 fields a line, or `EXTERNAL.tsv`, 7), taken
/// from `images`.
fn read_list(name: &str, fields: usize, images: &Path) -> Vec<Entry> {
    let text = fs::read_to_string(dir().join(name)).expect(name);
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), fields, "{name} line with {} fields: {l}", f.len());
            assert!(
                f[2] == "little" || f[2] == "big",
                "byte order {:?} in: {l}",
                f[2]
            );
            Entry {
                file: f[0].to_string(),
                path: images.join(f[0]),
                erase: f[1].parse().expect("erase size"),
                big: f[2] == "big",
                licence: f[4].to_string(),
                damaged: f[3] == "damaged",
                external: fields == 7,
            }
        })
        .collect()
}

fn manifest() -> Vec<Entry> {
    read_list("MANIFEST.tsv", 6, &dir())
}

/// The images of `EXTERNAL.tsv` present in `$JFFS2_THIRDPARTY_EXTERNAL` (none without it).
fn external() -> Vec<Entry> {
    match std::env::var_os("JFFS2_THIRDPARTY_EXTERNAL") {
        Some(d) => read_list("EXTERNAL.tsv", 7, Path::new(&d))
            .into_iter()
            .filter(|e| e.path.is_file())
            .collect(),
        None => vec![],
    }
}

#[test]
fn manifest_lists_every_image_with_a_redistributable_licence() {
    let entries = manifest();
    assert!(entries.len() >= 5, "only {} images", entries.len());
    let mut on_disk: Vec<String> = fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".md") && !n.ends_with(".tsv"))
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = entries.iter().map(|e| e.file.clone()).collect();
    listed.sort();
    assert_eq!(
        on_disk, listed,
        "images in fixtures/thirdparty/ vs MANIFEST.tsv"
    );
    let mut total = 0;
    for e in &entries {
        assert!(
            REDISTRIBUTABLE.contains(&e.licence.as_str()),
            "{}: licence {:?} does not allow shipping it here",
            e.file,
            e.licence
        );
        let path = dir().join(&e.file);
        total += fs::metadata(&path).unwrap().len();
        let out = Command::new(DUMP)
            .arg("--info")
            .arg(&path)
            .output()
            .unwrap();
        let info = String::from_utf8_lossy(&out.stdout);
        let want = if e.big { "big endian" } else { "little endian" };
        assert!(
            out.status.success() && info.contains(&format!("byte order:       {want}")),
            "{}: manifest says {want}; jffs2-dump --info:\n{info}",
            e.file
        );
        let want = format!("({:#x} bytes; detected", e.erase);
        assert!(
            info.lines()
                .any(|l| l.starts_with("erase size:") && l.contains(&want)),
            "{}: manifest says erase size {}; jffs2-dump --info:\n{info}",
            e.file,
            e.erase
        );
    }
    assert!(total < 5 << 20, "fixtures/thirdparty/ holds {total} bytes");
    for e in read_list("EXTERNAL.tsv", 7, &dir()) {
        assert!(
            !e.path.exists() && !REDISTRIBUTABLE.contains(&e.licence.as_str()),
            "{}: listed as not redistributable ({}) but shipped, or with a licence that allows \
             shipping it (then it belongs in MANIFEST.tsv)",
            e.file,
            e.licence
        );
    }
}

/// The image Linux mounts for `e`: the image itself, or its little-endian conversion.
fn linux_image(e: &Entry, work: &Path) -> PathBuf {
    let src = e.path.clone();
    if !e.big {
        return src;
    }
    let le = work.join(format!("{}.le", e.file));
    let out = Command::new(CONVERT)
        .arg("-i")
        .arg(&src)
        .arg(format!("--input-eraseblock={}", e.erase))
        .arg("-o")
        .arg(&le)
        .arg("-l")
        .output()
        .unwrap();
    // A damaged image's unreadable nodes are left out and reported (exit 1), as Linux drops
    // them: the conversion shows Linux what it would show of the original.
    assert!(
        out.status.success() || (e.damaged && out.status.code() == Some(1) && le.is_file()),
        "jffs2-convert -l {}: {}",
        e.file,
        String::from_utf8_lossy(&out.stderr)
    );
    le
}

/// `jffs2-dump [--erase-size=E] --extract=DIR IMAGE`: with the erase size Linux was given,
/// or (`given` false) with the one jffs2-dump detects, as a user who does not know it runs it.
fn extract(e: &Entry, out_dir: &Path, given: bool) {
    let mut cmd = Command::new(DUMP);
    if given {
        cmd.arg(format!("--erase-size={}", e.erase));
    }
    let out = cmd
        .arg(format!("--extract={}", out_dir.display()))
        .arg(&e.path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "jffs2-dump --extract {}: {}",
        e.file,
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Compares each extraction with Linux's listing; returns the `EXTRACT` lines and the report.
fn compare(result: &Path, entries: &[Entry], dirs: &[PathBuf]) -> (Vec<String>, String) {
    let views: Vec<HostView> = entries
        .iter()
        .zip(dirs)
        .map(|(e, d)| HostView {
            label: e.file.clone(),
            id: &e.file,
            remount: false,
            dir: d,
        })
        .collect();
    let text = compare_extractions(result, &views);
    let lines = text
        .lines()
        .filter(|l| l.starts_with("EXTRACT "))
        .map(str::to_string)
        .collect();
    (lines, text)
}

#[test]
fn extraction_shows_what_linux_shows() {
    if !skip::root() || !kernel_available() {
        return;
    }
    let mut entries = manifest();
    entries.extend(external());
    let work = tempfile::tempdir().unwrap();
    let images: Vec<Image> = entries
        .iter()
        .map(|e| Image {
            id: e.file.clone(),
            path: linux_image(e, work.path()),
            erase: e.erase,
            partition: None,
            expect_dir: None,
            ignore: vec![],
        })
        .collect();
    let (report, result) = harness(work.path(), "run", &images);
    for e in &entries {
        assert!(
            report.contains(&format!("RESULT {} DONE mount=ok ", e.file)),
            "Linux did not mount {}:\n{report}",
            e.file
        );
    }
    let mut dirs = vec![];
    for (given, how) in [(true, "given"), (false, "detected")] {
        dirs = entries
            .iter()
            .map(|e| {
                let d = work.path().join(format!("x-{how}-{}", e.file));
                extract(e, &d, given);
                d
            })
            .collect();
        let (lines, text) = compare(&result, &entries, &dirs);
        println!("--- jffs2-dump --extract (erase size {how}) against Linux ---\n{text}");
        assert_eq!(lines.len(), entries.len(), "{text}");
        for (l, e) in lines.iter().zip(&entries) {
            assert!(
                l.ends_with(" differ=0 diffs=0") && !l.contains(" linux_entries=0 "),
                "jffs2-dump --extract (erase size {how}) does not show what Linux showed: {l}\n{text}"
            );
            assert!(
                e.external || l.contains(" unreadable=0 "),
                "Linux could not read files of a shipped image: {l}\n{text}"
            );
        }
    }
    // The control: the same comparison must see changed contents.
    let file = find_file(&dirs[0]).expect("a regular file in the extraction");
    fs::write(&file, b"not what the image holds").unwrap();
    let (lines, text) = compare(&result, &entries, &dirs);
    assert!(
        lines[0].contains(" differ=1 ") && text.contains("\"what\": \"md5\""),
        "an altered extraction was not reported:\n{text}"
    );
}

/// The first regular file under `d` (depth first).
fn find_file(d: &Path) -> Option<PathBuf> {
    let mut names: Vec<PathBuf> = fs::read_dir(d)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    names.sort();
    names.iter().find_map(|p| {
        let m = fs::symlink_metadata(p).ok()?;
        if m.is_file() {
            Some(p.clone())
        } else if m.is_dir() {
            find_file(p)
        } else {
            None
        }
    })
}
