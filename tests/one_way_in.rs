//! Opening an image is coded once: `jffs2::Image` (`crates/jffs2/src/image.rs`) pads the
//! image as flashed, scans it as the mount does and builds the model. A Rust file that does
//! all three by hand — the padding (`scan::as_flashed` or `scan::flashed_len`), the mount scan
//! and the build of the model — re-codes that sequence, and with it the steps that are easy to
//! forget (refusing what is not JFFS2, stopping where Linux refuses the mount). This test
//! fails on any such file but `image.rs` and the allow-list below, each with its reason; see
//! `docs/LIBRARY.md` for the lower-level entry points that stay public and when to use them.

use std::fs;
use std::path::{Path, PathBuf};

/// Files that may hold the whole sequence, relative to the repository root, and why.
const ALLOWED: &[(&str, &str)] = &[(
    "crates/jffs2/src/image.rs",
    "the one place the sequence is coded",
)];

// The words looked for, split so that this file does not contain them.
const PAD: [&str; 2] = [concat!("as_", "flashed("), concat!("flashed_", "len(")];
const SCAN: [&str; 2] = [concat!("sc", "an("), concat!("scan_", "hinted(")];
const BUILD: &str = concat!("from_", "scan(");

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The places `needle` starts a word in `text`: not after a letter, digit, `_` or `.` (so
/// neither a method nor the tail of a longer name: `image.scan()`, `kernel_scan(`,
/// `mkfs::build`).
fn words<'t>(text: &'t str, needle: &'t str) -> impl Iterator<Item = usize> + 't {
    text.match_indices(needle).map(|(at, _)| at).filter(|&at| {
        let before = text[..at].chars().next_back();
        !before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.')
    })
}

/// Whether `text` calls a scan function (`scan(`, `scan::scan(`, `scan_hinted(`).
fn calls_scan(text: &str) -> bool {
    SCAN.iter()
        .any(|needle| words(text, needle).next().is_some())
}

/// Whether `text` builds the model: `Fs::from_scan(` (however `Fs` is named).
fn builds_model(text: &str) -> bool {
    words(text, BUILD).next().is_some()
}

/// Whether `text` holds the whole sequence: padding, scan and build.
fn recodes_opening(text: &str) -> bool {
    PAD.iter().any(|p| text.contains(p)) && calls_scan(text) && builds_model(text)
}

/// The repository's Rust files (build output and fuzzing corpora left out), relative to the
/// root with `/` separators.
fn rust_files() -> Vec<(String, String)> {
    let root = root();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = rel_path(&root, &path);
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if entry.file_type().unwrap().is_dir() {
                let skipped = name == "target"
                    || name.starts_with('.')
                    || rel.starts_with("fuzz/corpus")
                    || rel.starts_with("fuzz/artifacts");
                if !skipped {
                    stack.push(path);
                }
            } else if name.ends_with(".rs") {
                if let Ok(text) = fs::read_to_string(&path) {
                    out.push((rel, text));
                }
            }
        }
    }
    out.sort();
    out
}

fn rel_path(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

#[test]
fn the_opening_sequence_is_coded_once() {
    let files = rust_files();
    assert!(
        files
            .iter()
            .any(|(rel, _)| rel == "crates/jffs2/src/image.rs"),
        "the walk did not find the library"
    );
    let offenders: Vec<&str> = files
        .iter()
        .filter(|(rel, text)| {
            recodes_opening(text) && !ALLOWED.iter().any(|(allowed, _)| allowed == rel)
        })
        .map(|(rel, _)| rel.as_str())
        .collect();
    assert!(
        offenders.is_empty(),
        "these files pad, scan and build an image by hand; open it with jffs2::Image \
         (docs/LIBRARY.md), or allow-list the file here with the reason: {offenders:#?}"
    );
}

/// An allow-listed file that no longer holds the sequence leaves the list.
#[test]
fn the_allow_list_is_current() {
    let files = rust_files();
    for (allowed, why) in ALLOWED {
        assert!(!why.is_empty(), "{allowed}: no reason given");
        let text = files
            .iter()
            .find(|(rel, _)| rel == allowed)
            .map(|(_, text)| text)
            .unwrap_or_else(|| panic!("{allowed}: allow-listed but not found"));
        assert!(
            recodes_opening(text),
            "{allowed}: allow-listed but no longer re-codes the opening: remove it from the list"
        );
    }
}

#[test]
fn the_matcher_sees_the_sequence_and_only_it() {
    let pad = PAD[0];
    let flashed_len = PAD[1];
    let scan = SCAN[0];
    let by_path = format!(
        "let f = jffs2::scan::{pad}&img, es);\n\
         let mut s = jffs2::scan::{scan}&f, &g, &o);\n\
         let fs = jffs2::fs::Fs::{BUILD}&f, &mut s, o);"
    );
    assert!(recodes_opening(&by_path));
    let imported = format!(
        "use crate::fs::Fs;\n\
         let f = {flashed_len}n, es);\n\
         let s = {scan}&img, &g, &o);\n\
         let fs = Fs::{BUILD}&img, s, o);"
    );
    assert!(recodes_opening(&imported));
    // A method named scan, another function ending in scan, a scan without the build.
    let method = format!("let f = {pad}&img, es);\nimage.{scan});\nFs::{BUILD}&f, s, o)");
    assert!(!recodes_opening(&method));
    let other = format!("let f = {pad}&img, es);\nkernel_{scan}&f);\nFs::{BUILD}&f, s, o);");
    assert!(!recodes_opening(&other));
    let mkfs =
        format!("let f = {pad}&img, es);\n{scan}&f);\nmkfs::build(&t);\nuse mkfs::{{build}};");
    assert!(!recodes_opening(&mkfs));
    let scan_only = format!("let f = {pad}&img, es);\nlet s = {scan}&f, &g, &o);");
    assert!(!recodes_opening(&scan_only));
}
