//! No function is longer than [`MAX_LINES`] lines, so that a reviewer can hold each one in
//! mind, unless [`ALLOWED`] names it with a reason.
//!
//! The functions looked at are those of the library (`crates/jffs2/src`) and of the command
//! line tools (`src/`); test files (`tests.rs`, `testing.rs`, `fuzz.rs`, files under a
//! `tests/` directory) are left out. A function starts at a line that begins, after its
//! indentation, with `fn NAME` (optionally after `pub`, `pub(crate)`-style visibility, `const`
//! and `unsafe`) and that does not end with `;`; it ends at the first later line that is a
//! `}` at the same indentation, or on its own line when its body opens and closes there.
//! Its length counts both lines. Long signatures and bodies count alike: what a reader must
//! hold is the whole.
//!
//! The one reason an entry may give: the function mirrors one function of the kernel or of
//! mtd-utils step for step, for side-by-side reading (its doc comment says so).

use std::fs;
use std::path::{Path, PathBuf};

/// The longest a function may be, in lines, its signature and closing brace included.
const MAX_LINES: usize = 100;

/// Functions allowed to be longer: (file relative to the repository root, function name,
/// reason).
const ALLOWED: &[(&str, &str, &str)] = &[
    // Mirrors: kept whole for side-by-side reading with the function they follow.
    (
        "crates/jffs2/src/scan/block.rs",
        "scan_eraseblock",
        "mirrors the kernel's jffs2_scan_eraseblock (kernel-jffs2-spec §3.2)",
    ),
    (
        "crates/jffs2/src/scan/summary.rs",
        "process_records",
        "mirrors the kernel's jffs2_sum_process_sum_data (kernel-jffs2-spec §4.3.2)",
    ),
    (
        "crates/jffs2/src/dump/content.rs",
        "run",
        "mirrors the main loop of jffs2dump's do_dumpcontent (mtd-utils-spec §6.2)",
    ),
    (
        "crates/jffs2/src/dump/content.rs",
        "summary_records",
        "mirrors the summary record loop of jffs2dump's do_dumpcontent (mtd-utils-spec §6.2)",
    ),
];

/// The repository root (this crate lives in `crates/jffs2`).
fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Whether a file is test code, left out of the check.
fn is_test_file(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    matches!(name, "tests.rs" | "testing.rs" | "fuzz.rs") || rel.split('/').any(|c| c == "tests")
}

/// Every `.rs` file under `dir` (relative to the root, `/`-separated), test files excepted.
fn rust_files(root: &Path, dir: &str, out: &mut Vec<String>) {
    let path = root.join(dir);
    let mut entries: Vec<_> = fs::read_dir(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = format!("{dir}/{name}");
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            if name != "tests" {
                rust_files(root, &rel, out);
            }
        } else if name.ends_with(".rs") && !is_test_file(&rel) {
            out.push(rel);
        }
    }
}

/// Strips `word` and at least one whitespace character after it.
fn keyword<'a>(s: &'a str, word: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(word)?;
    let trimmed = rest.trim_start();
    (trimmed.len() < rest.len()).then_some(trimmed)
}

/// Strips a visibility: `pub` or `pub(word)`, then whitespace.
fn visibility(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("pub")?;
    let rest = match rest.strip_prefix('(') {
        Some(inner) => {
            let close = inner.find(')')?;
            let word = &inner[..close];
            if word.is_empty() || !word.bytes().all(|b| b.is_ascii_lowercase()) {
                return None;
            }
            &inner[close + 1..]
        }
        None => rest,
    };
    let trimmed = rest.trim_start();
    (trimmed.len() < rest.len()).then_some(trimmed)
}

/// When `line` starts a function definition: its indentation and name.
fn fn_start(line: &str) -> Option<(&str, &str)> {
    let body = line.trim_start();
    let indent = &line[..line.len() - body.len()];
    let mut s = body;
    if let Some(r) = visibility(s) {
        s = r;
    }
    if let Some(r) = keyword(s, "const") {
        s = r;
    }
    if let Some(r) = keyword(s, "unsafe") {
        s = r;
    }
    let s = keyword(s, "fn")?;
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    if end == 0 || line.trim_end().ends_with(';') {
        return None;
    }
    Some((indent, &s[..end]))
}

/// Whether a function's body opens and closes on its `fn` line (`fn f(&self) {}`): it is
/// one line long. (Measured by its closing brace's indentation alone, it would run on to
/// the next `}` at its indentation, past the functions after it, which would go unmeasured.)
fn one_line(line: &str) -> bool {
    let (open, close) = line.chars().fold((0, 0), |(o, c), ch| match ch {
        '{' => (o + 1, c),
        '}' => (o, c + 1),
        _ => (o, c),
    });
    open > 0 && open == close && line.trim_end().ends_with('}')
}

/// A function longer than [`MAX_LINES`].
struct Long {
    file: String,
    line: usize,
    name: String,
    lines: usize,
}

/// The functions of `text` longer than [`MAX_LINES`]: each runs from its `fn` line to the
/// first later line that is `}` at the same indentation (or to the end of the file).
fn long_functions(file: &str, text: &str) -> Vec<Long> {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if let Some((indent, name)) = fn_start(lines[i]) {
            if one_line(lines[i]) {
                i += 1;
                continue;
            }
            let closes = |l: &str| {
                l.strip_prefix(indent)
                    .and_then(|r| r.strip_prefix('}'))
                    .is_some_and(|r| r.trim().is_empty())
            };
            let j = (i + 1..lines.len())
                .find(|&j| closes(lines[j]))
                .unwrap_or(lines.len());
            let n = j - i + 1;
            if n > MAX_LINES {
                out.push(Long {
                    file: file.to_string(),
                    line: i + 1,
                    name: name.to_string(),
                    lines: n,
                });
            }
            i = j;
        }
        i += 1;
    }
    out
}

#[test]
fn functions_fit_in_mind() {
    let root = repo_root();
    let mut files = Vec::new();
    rust_files(&root, "crates/jffs2/src", &mut files);
    rust_files(&root, "src", &mut files);
    assert!(files.len() > 20, "too few files found: {files:?}");
    let mut long = Vec::new();
    for f in &files {
        let bytes = fs::read(root.join(f)).unwrap();
        long.extend(long_functions(f, &String::from_utf8_lossy(&bytes)));
    }
    let allowed = |l: &Long| ALLOWED.iter().any(|(f, n, _)| *f == l.file && *n == l.name);
    let errors: Vec<String> = long
        .iter()
        .filter(|l| !allowed(l))
        .map(|l| {
            format!(
                "{}:{}: fn {} is {} lines (at most {MAX_LINES}); split it into named steps, \
                 or, if it mirrors one kernel or mtd-utils function, say so in its doc \
                 comment and add it to ALLOWED",
                l.file, l.line, l.name, l.lines
            )
        })
        .collect();
    assert!(errors.is_empty(), "{}", errors.join("\n"));
}

#[test]
fn allow_list_is_current() {
    let root = repo_root();
    let stale: Vec<String> = ALLOWED
        .iter()
        .filter(|(f, n, _)| {
            let text = fs::read(root.join(f))
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .unwrap_or_default();
            !long_functions(f, &text).iter().any(|l| l.name == *n)
        })
        .map(|(f, n, _)| format!("{f}: fn {n} is no longer over {MAX_LINES} lines (or gone): remove its ALLOWED entry"))
        .collect();
    assert!(stale.is_empty(), "{}", stale.join("\n"));
}

#[test]
fn measurement() {
    let body = |n: usize| "    x;\n".repeat(n);
    // A function of exactly MAX_LINES lines passes; one more fails.
    let ok = format!("fn a() {{\n{}}}\n", body(MAX_LINES - 2));
    assert!(long_functions("f", &ok).is_empty());
    let text = format!(
        "impl X {{\n    pub(crate) const unsafe fn b() {{\n{}    }}\n}}\n",
        body(MAX_LINES - 1)
    );
    let l = long_functions("f", &text);
    assert_eq!(l.len(), 1);
    assert_eq!(
        (l[0].line, l[0].name.as_str(), l[0].lines),
        (2, "b", MAX_LINES + 1)
    );
    // A declaration without a body is not a function to measure, nor is `pubfn`.
    assert!(fn_start("    fn c(&self);").is_none());
    assert!(fn_start("pubfn d() {").is_none());
    assert_eq!(fn_start("pub fn e<T>() {"), Some(("", "e")));
    // A one-line function is one line long: the function after it is measured.
    let after = format!(
        "    fn g(&self) {{}}\n    fn h() {{\n{}    }}\n",
        body(MAX_LINES)
    );
    let l = long_functions("f", &after);
    assert_eq!((l.len(), l[0].name.as_str()), (1, "h"));
    // A nested `}` at a deeper indentation does not end the function.
    let nested = format!("fn f() {{\n    {{\n    }}\n{}}}\n", body(MAX_LINES));
    assert_eq!(long_functions("f", &nested)[0].lines, MAX_LINES + 4);
}
