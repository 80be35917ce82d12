//! Every citation of the specification must point at a section that exists, and no file may
//! point outside the repository or at an issue tracker number.
//!
//! A citation is a spec file name, `docs/spec/NAME.md` anywhere in the repository (or bare
//! `NAME.md` inside `docs/spec/` itself, where it names a sibling file), followed by one or more
//! section marks `§N`, `§N.M`, ... on the same line, up to the next file name (a file name
//! that ends a line also takes the marks at the start of the next line). Inside
//! `docs/spec/` a section mark with no file name before it on its line refers to the file it is
//! written in. Each cited number must be the number of a heading of the cited file
//! (`## 4. Title`, `### 4.3 Title`, `#### 4.3.1 Title`). See `docs/spec/README.md`.

use std::fs;
use std::path::{Path, PathBuf};

/// The extensions whose files are scanned.
const EXTENSIONS: [&str; 4] = ["rs", "md", "sh", "py"];

/// Where the specification lives, relative to the repository root.
const SPEC_DIR: &str = "docs/spec";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Whether a directory (relative to the root, `/`-separated) is left out of the scan.
fn skipped_dir(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name == "target"
        || name == ".git"
        || rel == "fuzz/corpus"
        || rel == "fuzz/artifacts"
        || rel.starts_with("fuzz/corpus/")
        || rel.starts_with("fuzz/artifacts/")
}

/// This file: its self-test holds deliberately bad examples.
const THIS_FILE: &str = "tests/spec_citations.rs";

/// All scanned files as (path relative to the root, contents), this file excepted.
fn scanned_files() -> Vec<(String, String)> {
    let root = root();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let entry = entry.unwrap();
            let path = entry.path();
            let rel = rel_path(&root, &path);
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                if !skipped_dir(&rel) {
                    stack.push(path);
                }
            } else if kind.is_file() {
                let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
                if EXTENSIONS.contains(&ext) && rel != THIS_FILE {
                    if let Ok(text) = fs::read_to_string(&path) {
                        out.push((rel, text));
                    }
                }
            }
        }
    }
    out.sort();
    out
}

fn rel_path(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .unwrap()
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The section number a Markdown heading line carries (`### 4.3 Title` → `4.3`), if any.
fn heading_number(line: &str) -> Option<String> {
    let rest = line.strip_prefix('#')?.trim_start_matches('#');
    let rest = rest.strip_prefix(' ')?.trim_start();
    let number = section_number(rest)?;
    let after = &rest[number.len()..];
    // "4." and "4.3" and "4.3 " all end the number; "4x" does not.
    match after.chars().next() {
        None | Some(' ') | Some('.') | Some(':') => Some(number),
        _ => None,
    }
}

/// The longest prefix of `s` of the form `N(.M)*` (digits separated by single dots), without
/// a trailing dot.
fn section_number(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut end = 0;
    let mut i = 0;
    loop {
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start {
            break;
        }
        end = i;
        if i + 1 < b.len() && b[i] == b'.' && b[i + 1].is_ascii_digit() {
            i += 1;
        } else {
            break;
        }
    }
    (end > 0).then(|| s[..end].to_string())
}

/// The section numbers that headings of a spec file carry.
fn headings(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            if let Some(n) = heading_number(line) {
                out.push(n);
            }
        }
    }
    out
}

/// One cited section: the spec file name (`kernel-jffs2-spec.md`) and the number.
#[derive(Debug, PartialEq)]
struct Citation {
    file: String,
    section: String,
}

/// A spec file name starting at byte `i` of `line`: `docs/spec/NAME.md` anywhere, bare
/// `NAME.md` only when `bare_ok`. Returns the name and the byte just after it.
fn file_mention(line: &str, i: usize, bare_ok: bool) -> Option<(String, usize)> {
    let rest = &line[i..];
    let prefix = format!("{SPEC_DIR}/");
    let (name_start, full) = if rest.starts_with(&prefix) {
        (i + prefix.len(), true)
    } else if bare_ok {
        // A bare name must start a word.
        let prev = line[..i].chars().next_back();
        if prev.is_some_and(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '/') {
            return None;
        }
        (i, false)
    } else {
        return None;
    };
    let b = line.as_bytes();
    let mut j = name_start;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'-' || b[j] == b'_') {
        j += 1;
    }
    if j == name_start || !line[j..].starts_with(".md") {
        return None;
    }
    let name = format!("{}.md", &line[name_start..j]);
    let end = j + 3;
    // A bare name counts only when a section mark follows it, so that prose naming a file
    // ("see README.md") is not taken for a citation.
    if !full
        && !line[end..]
            .trim_start_matches(['`', ')', ']', ' '])
            .starts_with('§')
    {
        return None;
    }
    Some((name, end))
}

/// The citations of one line, and the spec file named at its very end without a section
/// mark after it (a citation wrapped onto the next line). `own` is the spec file the line
/// belongs to, if it is one: then section marks before any file name on the line cite it.
/// `carried` is the file the previous line ended with, which the marks at the start of this
/// line cite.
fn line_citations(
    line: &str,
    own: Option<&str>,
    carried: Option<&str>,
) -> (Vec<Citation>, Option<String>) {
    let mut out = Vec::new();
    let mut current: Option<String> = carried.or(own).map(str::to_string);
    // The last file name seen and where it ended, while no mark has followed it.
    let mut dangling: Option<(String, usize)> = None;
    let mut i = 0;
    while i < line.len() {
        if !line.is_char_boundary(i) {
            i += 1;
            continue;
        }
        if let Some((name, end)) = file_mention(line, i, own.is_some()) {
            current = Some(name.clone());
            dangling = Some((name, end));
            i = end;
            continue;
        }
        let rest = &line[i..];
        if let Some(after) = rest.strip_prefix('§') {
            if let (Some(file), Some(n)) = (&current, section_number(after)) {
                dangling = None;
                out.push(Citation {
                    file: file.clone(),
                    section: n.clone(),
                });
                i += '§'.len_utf8() + n.len();
                // A range written without a second mark: "§9.1–9.2", "§5.3-5.5".
                for dash in ['–', '-'] {
                    if let Some(tail) = line[i..].strip_prefix(dash) {
                        if let Some(m) = section_number(tail) {
                            if m.contains('.') || !n.contains('.') {
                                out.push(Citation {
                                    file: file.clone(),
                                    section: m.clone(),
                                });
                                i += dash.len_utf8() + m.len();
                            }
                        }
                    }
                }
                continue;
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    let wrapped = dangling
        .filter(|(_, end)| {
            line[*end..]
                .chars()
                .all(|c| matches!(c, '`' | '(' | ')' | ',' | ';' | ' '))
        })
        .map(|(name, _)| name);
    (out, wrapped)
}

/// Problems with the citations in `files`, as `path:line: message`.
fn citation_problems(files: &[(String, String)], spec: &[(String, Vec<String>)]) -> Vec<String> {
    let mut problems = Vec::new();
    for (path, text) in files {
        let own = path
            .strip_prefix(&format!("{SPEC_DIR}/"))
            .filter(|name| !name.contains('/') && name.ends_with(".md"));
        let mut in_fence = false;
        let mut carried: Option<String> = None;
        for (n, line) in text.lines().enumerate() {
            if own.is_some() && line.trim_start().starts_with("```") {
                in_fence = !in_fence;
            }
            if in_fence {
                continue;
            }
            let (citations, wrapped) = line_citations(line, own, carried.as_deref());
            carried = wrapped;
            for c in citations {
                match spec.iter().find(|(name, _)| *name == c.file) {
                    None => problems.push(format!(
                        "{path}:{}: cites {SPEC_DIR}/{}, which does not exist",
                        n + 1,
                        c.file
                    )),
                    Some((_, heads)) if !heads.contains(&c.section) => problems.push(format!(
                        "{path}:{}: cites {} §{}, which has no such section heading",
                        n + 1,
                        c.file,
                        c.section
                    )),
                    Some(_) => {}
                }
            }
        }
    }
    problems
}

/// The spec files and their heading numbers.
fn spec_files() -> Vec<(String, Vec<String>)> {
    let dir = root().join(SPEC_DIR);
    let mut out = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) == Some("md") {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            out.push((name, headings(&fs::read_to_string(&path).unwrap())));
        }
    }
    out
}

/// Whether `line` names an issue-tracker number: the word "issue" or "issues", optionally
/// "show", then a number, `#number` or `§number`.
fn names_issue_number(line: &str) -> bool {
    let lower = line.to_ascii_lowercase();
    let mut from = 0;
    while let Some(pos) = lower[from..].find("issue") {
        let start = from + pos;
        from = start + 5;
        if lower[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            continue;
        }
        let mut rest = &lower[start + 5..];
        rest = rest.strip_prefix('s').unwrap_or(rest);
        let spaced = rest.trim_start();
        if spaced.len() == rest.len() {
            continue;
        }
        let mut rest = spaced;
        if let Some(r) = rest.strip_prefix("show") {
            let r2 = r.trim_start();
            if r2.len() == r.len() {
                continue;
            }
            rest = r2;
        }
        let rest = rest
            .strip_prefix('#')
            .or_else(|| rest.strip_prefix('§'))
            .unwrap_or(rest);
        if rest.starts_with(|c: char| c.is_ascii_digit()) {
            return true;
        }
    }
    false
}

/// The text markers of references to files outside the repository.
fn outside_markers() -> [String; 2] {
    // Built from pieces so that this file does not match itself.
    [
        format!("..{}shared", '/'),
        format!("shared{}reference", '/'),
    ]
}

fn reference_problems(files: &[(String, String)]) -> Vec<String> {
    let markers = outside_markers();
    let mut problems = Vec::new();
    for (path, text) in files {
        for (n, line) in text.lines().enumerate() {
            for m in &markers {
                if line.contains(m.as_str()) {
                    problems.push(format!(
                        "{path}:{}: refers outside the repository ({m})",
                        n + 1
                    ));
                }
            }
            if names_issue_number(line) {
                problems.push(format!("{path}:{}: names an issue number", n + 1));
            }
        }
    }
    problems
}

#[test]
fn every_spec_citation_names_an_existing_section() {
    let files = scanned_files();
    let spec = spec_files();
    assert!(
        spec.iter()
            .any(|(name, heads)| name == "kernel-jffs2-spec.md" && !heads.is_empty()),
        "no headings found in {SPEC_DIR}"
    );
    let cited = files
        .iter()
        .map(|(path, text)| {
            let own = path.strip_prefix(&format!("{SPEC_DIR}/"));
            text.lines()
                .map(|l| line_citations(l, own, None).0.len())
                .sum::<usize>()
        })
        .sum::<usize>();
    assert!(
        cited > 100,
        "only {cited} citations found: is the scan broken?"
    );
    let problems = citation_problems(&files, &spec);
    assert!(
        problems.is_empty(),
        "bad citations:\n{}",
        problems.join("\n")
    );
}

#[test]
fn no_file_refers_outside_the_repository_or_to_issue_numbers() {
    let problems = reference_problems(&scanned_files());
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checks_catch_what_they_should() {
    let spec = vec![(
        "kernel-jffs2-spec.md".to_string(),
        headings(
            "# T\n## 4. Summary\n### 4.3 Trust\n#### 4.3.1 Marker\n```\n## 9. In a fence\n```\n",
        ),
    )];
    assert_eq!(spec[0].1, ["4", "4.3", "4.3.1"]);
    let file = |text: &str| vec![("src/x.rs".to_string(), text.to_string())];
    let ok = "// `docs/spec/kernel-jffs2-spec.md` §4.3, §4.3.1 and §4 (§4.3–4.3.1).";
    assert!(citation_problems(&file(ok), &spec).is_empty());
    let bad = "// (`docs/spec/kernel-jffs2-spec.md` §4.3, §4.7)";
    let found = citation_problems(&file(bad), &spec);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("src/x.rs:1:") && found[0].contains("§4.7"));
    let range = "// docs/spec/kernel-jffs2-spec.md §4.3–4.4";
    assert_eq!(citation_problems(&file(range), &spec).len(), 1);
    let missing = "// docs/spec/nowhere.md §1";
    assert!(citation_problems(&file(missing), &spec)[0].contains("does not exist"));
    // A file name ending a line carries over to the marks at the start of the next one.
    let wrapped = "// see `docs/spec/kernel-jffs2-spec.md`\n// §4.3.1 and §4.9, then §7\n// §8";
    let found = citation_problems(&file(wrapped), &spec);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("src/x.rs:2:") && found[0].contains("§4.9"));
    assert!(found[1].contains("§7"));
    // Section marks with no file before them are not checked outside docs/spec.
    assert!(citation_problems(&file("// §99.9"), &spec).is_empty());
    // Inside docs/spec a bare mark cites the file itself; a sibling named bare counts.
    let own = vec![(
        "docs/spec/kernel-jffs2-spec.md".to_string(),
        "see §4.3.1 and §5; mtd-utils-spec.md §2".to_string(),
    )];
    let found = citation_problems(&own, &spec);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("§5") && found[1].contains("mtd-utils-spec.md"));

    for yes in ["see issues show 2", "Issue #12", "issue 16", "(issue §7)"] {
        assert!(names_issue_number(yes), "{yes}");
    }
    for no in [
        "tissue 3",
        "no issue here",
        "issues/27",
        "unblob#488",
        "an issue: 3",
    ] {
        assert!(!names_issue_number(no), "{no}");
    }
    let marker = format!("see ..{}shared/notes", '/');
    assert_eq!(reference_problems(&file(&marker)).len(), 1);
}
