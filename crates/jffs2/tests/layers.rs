//! The crate's layers go one way (`docs/ARCHITECTURE.md`, "Layers"): every `crate::X` a
//! top-level module names in its code must be a module of a lower layer, or an edge this
//! table allows by name. Comments, `#[cfg(test)]` items and test files (`tests.rs`, files
//! under a `tests/` directory) are not looked at: a test may drive several layers.
//!
//! A new edge that breaks the order fails here with the file that makes it; fix the code
//! (move the shared piece down) rather than the table, unless the edge is one the
//! architecture document accepts.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module may use any module of a lower layer.
const LAYERS: &[(&str, &[&str])] = &[
    // Leaf utilities: no knowledge of JFFS2 nodes.
    (
        "utilities",
        &[
            "crc", "compress", "text", "name", "input", "mapguard", "pipe", "prefetch", "progress",
            "code",
        ],
    ),
    // An image file mapped read-only, guarded against shrinking (over input and mapguard).
    ("mapped", &["mapped"]),
    // The on-flash format, described once.
    ("format", &["format"]),
    // Readers and writers of whole structures: the mount scan, the erase-block layout
    // writer, the host-tree reader.
    ("scan, layout, source", &["scan", "layout", "source"]),
    // The filesystem model.
    ("fs", &["fs"]),
    // The one way in: an image opened, recognised, padded as flashed, mounted.
    ("image", &["image"]),
    // The tools' modules.
    (
        "tools",
        &[
            "fsck", "extract", "dump", "convert", "sumtool", "mkfs", "mount",
        ],
    ),
    // Harnesses over everything.
    ("harness", &["fuzz", "testing"]),
];

/// Edges between modules of the same layer, each with its reason. Keep this short.
const ALLOWED_SIDEWAYS: &[(&str, &str)] = &[];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|(_, mods)| mods.contains(&module))
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Items re-exported at the crate root (`pub use image::{Image, ...};` in lib.rs), each
/// with the module it comes from: `crate::Image` is an edge to `image`.
fn root_reexports() -> BTreeMap<String, String> {
    let lib = std::fs::read_to_string(src_dir().join("lib.rs")).expect("read lib.rs");
    let mut map = BTreeMap::new();
    let code = strip(&lib);
    for stmt in code.split(';') {
        let Some(rest) = stmt.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, items)) = rest.split_once("::") else {
            continue;
        };
        let items = items.trim().trim_start_matches('{').trim_end_matches('}');
        for item in items.split(',') {
            let name = item.split_whitespace().last().unwrap_or("");
            if !name.is_empty() {
                map.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    map
}

/// Files of a top-level module, test files left out.
fn files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        if path.file_name().is_some_and(|n| n == "tests") {
            return;
        }
        let mut entries: Vec<PathBuf> = std::fs::read_dir(path)
            .expect("read src dir")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            files(&p, out);
        }
    } else if path.extension().is_some_and(|e| e == "rs")
        && path.file_name().is_some_and(|n| n != "tests.rs")
    {
        out.push(path.to_path_buf());
    }
}

/// The source with comments, string and char literals blanked out (kept as spaces, so that
/// what remains is code only).
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
                out.push(b' ');
            }
            b'r' if matches!(b.get(i + 1), Some(b'"' | b'#'))
                && !b[..i]
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') =>
            {
                let mut j = i + 1;
                let mut hashes = 0;
                while b.get(j) == Some(&b'#') {
                    hashes += 1;
                    j += 1;
                }
                if b.get(j) != Some(&b'"') {
                    out.push(b[i]);
                    i += 1;
                    continue;
                }
                j += 1;
                loop {
                    if j >= b.len() {
                        break;
                    }
                    if b[j] == b'"'
                        && b[j + 1..]
                            .iter()
                            .take(hashes)
                            .filter(|&&c| c == b'#')
                            .count()
                            == hashes
                    {
                        j += 1 + hashes;
                        break;
                    }
                    j += 1;
                }
                i = j;
                out.push(b' ');
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
                out.push(b' ');
            }
            b'\'' => {
                // A char literal ('x', '\n', '\u{..}') or a lifetime ('a).
                if b.get(i + 1) == Some(&b'\\') {
                    i += 2;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                    out.push(b' ');
                } else if let Some(end) = b[i + 1..].iter().take(5).position(|&c| c == b'\'') {
                    // 'x' including multi-byte UTF-8 characters.
                    if std::str::from_utf8(&b[i + 1..i + 1 + end])
                        .is_ok_and(|s| s.chars().count() == 1)
                    {
                        i += end + 2;
                        out.push(b' ');
                    } else {
                        out.push(b[i]);
                        i += 1;
                    }
                } else {
                    out.push(b[i]);
                    i += 1;
                }
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `code` without the items marked `#[cfg(test)]` (an item ends at its `;` or at the brace
/// that closes its body).
fn without_test_items(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let item = &rest[at..];
        let b = item.as_bytes();
        let mut depth = 0usize;
        let mut end = item.len();
        for (k, &c) in b.iter().enumerate() {
            match c {
                b'{' => depth += 1,
                b'}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    end = k + 1;
                    break;
                }
                _ => {}
            }
        }
        rest = &item[end..];
    }
    out.push_str(rest);
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The top-level modules `code` names through `crate::`: `crate::x` and `crate::{x, y::z}`.
fn referenced(code: &str) -> BTreeSet<String> {
    referenced_after(code, "crate::")
}

/// The first path segments `code` names after `prefix` (`crate::` or `super::`).
fn referenced_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find(prefix) {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + prefix.len()..];
        if before.is_some_and(|c| is_ident(c) || c == ':') {
            continue; // `$crate::`, a longer identifier, or `super::super::`
        }
        let after = rest.trim_start();
        if let Some(group) = after.strip_prefix('{') {
            // The first path segment of every item at depth 1.
            let mut depth = 1usize;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => items.push(std::mem::take(&mut item)),
                    c if depth == 1 => item.push(c),
                    _ => {}
                }
            }
            items.push(item);
            for it in items {
                let name: String = it
                    .trim_start()
                    .chars()
                    .take_while(|&c| is_ident(c))
                    .collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        } else {
            let name: String = after.chars().take_while(|&c| is_ident(c)).collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
    }
    found
}

/// Every edge `(from, to)` of the crate, with the files that make it.
fn edges() -> BTreeMap<(String, String), BTreeSet<String>> {
    let src = src_dir();
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let reexports = root_reexports();
    let mut tops: Vec<PathBuf> = std::fs::read_dir(&src)
        .expect("read src")
        .map(|e| e.expect("dir entry").path())
        .collect();
    tops.sort();
    for top in tops {
        let module = top
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("module name")
            .to_string();
        if module == "lib" {
            continue;
        }
        let mut list = Vec::new();
        files(&top, &mut list);
        for f in list {
            let text = std::fs::read_to_string(&f).expect("read source");
            let code = without_test_items(&strip(&text));
            for to in referenced(&code) {
                let to = reexports.get(&to).cloned().unwrap_or(to);
                if to != module {
                    let rel = f.strip_prefix(&src).unwrap_or(&f).display().to_string();
                    edges.entry((module.clone(), to)).or_default().insert(rel);
                }
            }
        }
    }
    edges
}

#[test]
fn every_module_is_in_a_layer() {
    let mut missing = Vec::new();
    for e in std::fs::read_dir(src_dir()).expect("read src") {
        let p = e.expect("dir entry").path();
        let name = p
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("")
            .to_string();
        if name != "lib" && layer_of(&name).is_none() {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "modules missing from LAYERS: {missing:?}"
    );
}

#[test]
fn layers_go_one_way() {
    let mut bad = Vec::new();
    for ((from, to), files) in edges() {
        let (Some(lf), Some(lt)) = (layer_of(&from), layer_of(&to)) else {
            bad.push(format!("{from} -> {to}: not in LAYERS ({files:?})"));
            continue;
        };
        let sideways_ok = ALLOWED_SIDEWAYS.contains(&(from.as_str(), to.as_str()));
        if lt > lf || (lt == lf && !sideways_ok) {
            bad.push(format!(
                "{from} ({}) -> {to} ({}) in {files:?}",
                LAYERS[lf].0, LAYERS[lt].0
            ));
        }
    }
    assert!(
        bad.is_empty(),
        "edges against the layers:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_parser_sees_what_it_should() {
    let code = r#"
        use crate::format::{Endian, MAGIC};
        use crate::{fs, scan::{self, Scan}};
        // use crate::dump;
        /// [`crate::mkfs`]
        let s = "crate::sumtool";
        #[cfg(test)]
        mod tests { use crate::extract; }
        fn f<'a>(x: &'a u8) -> char { let _ = crate::text::escape; 'c' }
    "#;
    let found = referenced(&without_test_items(&strip(code)));
    let want: BTreeSet<String> = ["format", "fs", "scan", "text"]
        .into_iter()
        .map(String::from)
        .collect();
    assert_eq!(found, want);
}

#[test]
fn the_walk_finds_the_known_edges() {
    let e = edges();
    for (from, to) in [
        ("fs", "scan"),
        ("mkfs", "layout"),
        ("dump", "format"),
        ("format", "crc"),
    ] {
        assert!(
            e.contains_key(&(from.into(), to.into())),
            "{from} -> {to} not found"
        );
    }
    // Printed with --nocapture: the edge list the architecture document draws.
    for ((from, to), files) in &e {
        println!("{from} -> {to} ({} files)", files.len());
    }
}

/// Inside `fs`, the passes in one-way order (`docs/ARCHITECTURE.md`, "Layers"): a submodule
/// names through `super::` only submodules of a lower rank. `mod.rs` is the façade (the `Fs`
/// type, its errors and problems) that every pass extends; it is not ranked.
const FS_ORDER: &[&[&str]] = &[
    &["dirent", "md5", "refs"],
    &["readinode"],
    &["xattr"],
    &["build", "read", "tree", "lookup"],
];

#[test]
fn fs_passes_go_one_way() {
    let rank = |m: &str| FS_ORDER.iter().position(|r| r.contains(&m));
    let dir = src_dir().join("fs");
    let mut bad = Vec::new();
    let mut list = Vec::new();
    files(&dir, &mut list);
    for f in list {
        let Some(from) = f.file_stem().and_then(|s| s.to_str()) else {
            continue;
        };
        if from == "mod" || f.parent() != Some(dir.as_path()) {
            continue;
        }
        let Some(rf) = rank(from) else {
            bad.push(format!("fs/{from}.rs is not in FS_ORDER"));
            continue;
        };
        let text = std::fs::read_to_string(&f).expect("read source");
        let code = without_test_items(&strip(&text));
        for to in referenced_after(&code, "super::") {
            if let Some(rt) = rank(&to) {
                if rt >= rf {
                    bad.push(format!("fs/{from}.rs -> fs/{to}.rs"));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "fs edges against FS_ORDER:\n{}",
        bad.join("\n")
    );
}
