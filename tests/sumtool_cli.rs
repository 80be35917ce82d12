//! jffs2-sumtool's command line against mtd-utils' sumtool (`docs/spec/mtd-utils-spec.md` §5.1): the
//! same options and grammar, the same messages and exit codes (run under the name `sumtool`,
//! through a symlink, so the program name in messages is the same), plus what differs on
//! purpose: geometry and byte-order refusals, atomic output.

mod common;
#[path = "common/sumtool.rs"]
mod sumtool_common;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use common::{mkfs_jffs2, require_mtd_utils, run, scratch, tree, Kind, Output};
use sumtool_common::*;

/// Our binary under the name `sumtool` (a symlink in Cargo's test scratch directory).
fn ours_as_sumtool() -> &'static Path {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("as-sumtool-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let link = dir.join("sumtool");
        std::os::unix::fs::symlink(OURS_SUMTOOL, &link).expect("symlink sumtool");
        link
    })
}

/// Runs ours (as `sumtool`) and mtd-utils' with `args`, both with argv[0] = "sumtool"
/// (glibc's getopt messages print argv[0] as given).
fn both<S: AsRef<OsStr>>(args: &[S]) -> (Output, Output) {
    use std::os::unix::process::CommandExt;
    let go = |prog: &Path| {
        let mut c = Command::new(prog);
        c.arg0("sumtool").env("LC_ALL", "C").args(args);
        run(c)
    };
    (go(ours_as_sumtool()), go(mtd_sumtool()))
}

fn image(work: &Path, name: &str, args: &[&str], kind: Kind) -> PathBuf {
    let t = tree(kind);
    let out = work.join(name);
    let mut c = Command::new(mkfs_jffs2());
    c.args(args).arg("-r").arg(t.path()).arg("-o").arg(&out);
    assert_eq!(run(c).status, 0);
    out
}

#[test]
fn usage_errors_match_sumtool() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let img8 = image(work.path(), "e8.img", &["-l", "-e", "8KiB"], Kind::Small);
    let i = img8.to_str().unwrap();
    let o = work.path().join("o.img");
    let o = o.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["-e", "128K"],
        vec!["-e", "128KB", "-i", i, "-o", o],
        vec!["-e", "0"],
        vec!["-e", "zz"],
        vec!["-c", "8"],
        vec!["-c", "70000"],
        vec!["-i", i, "-i", i],
        vec!["-i", "/nonexistent/in.img", "-o", o],
        vec!["--input=/nonexistent/in.img"],
        vec!["-o", o, "-o", o],
    ];
    for a in cases {
        let (x, y) = both(&a);
        assert_eq!(x.status, y.status, "{a:?}: exit status");
        assert_eq!(x.stderr_text(), y.stderr_text(), "{a:?}: stderr");
        assert_eq!(x.stdout_text(), y.stdout_text(), "{a:?}: stdout");
    }
}

#[test]
fn missing_files_help_and_version() {
    if !require_mtd_utils() {
        return;
    }
    // No -i/-o: help on stderr, then the error; 255.
    let (x, y) = both::<&str>(&[]);
    assert_eq!((x.status, y.status), (255, 255));
    let tail = "sumtool: error!: You must specify input and output files!\n\n";
    assert!(x.stderr_text().ends_with(tail), "{}", x.stderr_text());
    assert!(y.stderr_text().ends_with(tail));
    assert!(x
        .stderr_text()
        .starts_with("Usage: sumtool [OPTIONS] -i inputfile -o outputfile"));
    assert!(x.stdout.is_empty());
    // -h: sumtool's help (ours continues with what differs), exit 0.
    let (x, y) = both(&["-h"]);
    assert_eq!((x.status, y.status), (0, 0));
    let theirs_text = y.stdout_text();
    let body = theirs_text.trim_end();
    assert!(
        x.stdout_text().starts_with(body),
        "our help must start with sumtool's:\n{}",
        x.stdout_text()
    );
    assert!(x.stdout_text().contains("--force-eraseblock"));
    // Unknown option: glibc's message, help on stdout, exit 1.
    for bad in ["-k", "--nope"] {
        let (x, y) = both(&[bad]);
        assert_eq!((x.status, y.status), (1, 1), "{bad}");
        assert_eq!(x.stderr_text(), y.stderr_text(), "{bad}");
        assert!(x.stdout_text().starts_with(body), "{bad}");
    }
    // -V
    let x = run_prog(ours_as_sumtool(), &["-V"]);
    assert_eq!(x.status, 0);
    assert!(x.stdout_text().starts_with("sumtool (jffs2-tools) "));
    let x = ours(&["--version"]);
    assert!(x.stdout_text().starts_with("jffs2-sumtool (jffs2-tools) "));
}

#[test]
fn erase_size_grammar_and_option_order() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let img8 = image(work.path(), "e8.img", &["-l", "-e", "8KiB"], Kind::Small);
    let img128 = image(work.path(), "e128.img", &["-l", "-e", "128KiB"], Kind::Full);
    let out = work.path().join("o.img");
    let io = |i: &Path, rest: &[&str]| -> Vec<String> {
        let mut v = vec![
            "-i".to_string(),
            i.to_str().unwrap().to_string(),
            "-o".to_string(),
            out.to_str().unwrap().to_string(),
        ];
        v.extend(rest.iter().map(|s| s.to_string()));
        v
    };
    // Below 8 KiB: sumtool's warning (with its extra empty line), then 8 KiB.
    for e in ["4096", "4", "0x1000"] {
        let (x, y) = both(&io(&img8, &["-e", e]));
        assert_eq!((x.status, y.status), (0, 0), "{e}: {}", x.stderr_text());
        assert_eq!(x.stderr_text(), y.stderr_text(), "-e {e}");
    }
    // Every spelling of 128 KiB.
    for e in ["128", "128KiB", "0x20000", "131072", "0.125MiB_no"] {
        let x = run_prog(ours_as_sumtool(), &io(&img128, &["-e", e]));
        if e.ends_with("_no") {
            assert_eq!(x.status, 255);
            continue;
        }
        assert_eq!(x.status, 0, "-e {e}: {}", x.stderr_text());
    }
    // -c is checked against the erase size given so far.
    let x = run_prog(
        ours_as_sumtool(),
        &io(&img128, &["-e", "128KiB", "-c", "70000"]),
    );
    assert_eq!(x.status, 0, "{}", x.stderr_text());
    let x = run_prog(
        ours_as_sumtool(),
        &io(&img128, &["-c", "70000", "-e", "128KiB"]),
    );
    assert_eq!(x.status, 255);
    assert_eq!(
        x.stderr_text(),
        "sumtool: error!: cleanmarker size must be < eraseblock size\n"
    );
    // Long options, abbreviated as glibc allows.
    let x = run_prog(
        ours_as_sumtool(),
        &io(
            &img128,
            &[
                "--erase=128KiB",
                "--little",
                "--no-clean",
                "--pad",
                "--verb",
            ],
        ),
    );
    assert_eq!(x.status, 0, "{}", x.stderr_text());
    assert!(x.stdout_text().contains("Load next block"));
    let o = std::fs::read(&out).unwrap();
    assert_ne!(nodetype_at(&o, 0, false), CLEANMARKER, "--no-cleanmarkers");
    let x = run_prog(
        ours_as_sumtool(),
        &io(&img128, &["-e128KiB", "--cleanmarker=16"]),
    );
    assert_eq!(x.status, 0, "{}", x.stderr_text());
    let o = std::fs::read(&out).unwrap();
    assert_eq!(nodetype_at(&o, 0, false), CLEANMARKER);
    assert_eq!(common::Endian { big: false }.u32(&o, 4), 16);
}

#[test]
fn geometry_and_byte_order_refusals() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let img = image(work.path(), "e16.img", &["-b", "-e", "16KiB"], Kind::Full);
    let out = work.path().join("out.img");
    let run_o = |rest: &[&str]| {
        let mut a = vec!["-i", img.to_str().unwrap(), "-o", out.to_str().unwrap()];
        a.extend_from_slice(rest);
        run_prog(ours_as_sumtool(), &a)
    };
    // Little endian asked for a big-endian image.
    let x = run_o(&["-e", "16KiB", "-l"]);
    assert_eq!(x.status, 255);
    assert!(
        x.stderr_text()
            .starts_with("sumtool: error!: input is big-endian (")
            && x.stderr_text()
                .contains("sumtool does not convert byte order: pass -b"),
        "{}",
        x.stderr_text()
    );
    // A given -e that is not the image's.
    let x = run_o(&["-b", "-e", "64KiB"]);
    assert_eq!(x.status, 255);
    assert!(
        x.stderr_text()
            .contains("input was built with 16 KiB erase blocks")
            && x.stderr_text()
                .contains("pass -e 0x4000, or --force-eraseblock to proceed"),
        "{}",
        x.stderr_text()
    );
    assert!(!out.exists());
    // No temporary file is left behind.
    let leftovers: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    // Right: works.
    let x = run_o(&["-b", "-e", "16KiB"]);
    assert_eq!(x.status, 0, "{}", x.stderr_text());
    assert!(x.stderr_text().is_empty(), "{}", x.stderr_text());
}

#[test]
fn same_file_in_and_out_and_operands() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let img = image(work.path(), "img", &["-l", "-e", "8KiB"], Kind::Small);
    let sep = work.path().join("sep.img");
    summarize(true, &img, &sep, &["-e", "8KiB"]);
    // In place: the input is read completely before the output replaces it.
    summarize(true, &img, &img, &["-e", "8KiB"]);
    assert_eq!(std::fs::read(&img).unwrap(), std::fs::read(&sep).unwrap());
    // Operands are ignored (as getopt leaves them), with a warning.
    let x = ours(&[
        OsStr::new("-i"),
        sep.as_os_str(),
        OsStr::new("-o"),
        work.path().join("x").as_os_str(),
        OsStr::new("-e"),
        OsStr::new("8KiB"),
        OsStr::new("stray"),
    ]);
    assert_eq!(x.status, 0);
    assert!(x.stderr_text().contains("ignoring operand(s) stray"));
}

/// Without -e and -b/-l, sumtool's defaults (64 KiB, the host's byte order) are replaced by
/// what the input was built with, each with a warning (mtd-utils' sumtool would lose nodes;
/// Yocto's `jffs2.sum` step passes neither): the output equals the one made with the right
/// options given.
#[test]
fn detected_geometry_replaces_defaults_not_given() {
    if !(common::require_root()) {
        return;
    }
    if !require_mtd_utils() {
        return;
    }
    let work = scratch();
    let img = image(work.path(), "e16.img", &["-b", "-e", "16KiB"], Kind::Full);
    let run_o = |out: &Path, rest: &[&str]| {
        let mut a = vec!["-i", img.to_str().unwrap(), "-o", out.to_str().unwrap()];
        a.extend_from_slice(rest);
        run_prog(ours_as_sumtool(), &a)
    };
    let defaulted = work.path().join("defaulted.img");
    let x = run_o(&defaulted, &[]);
    assert_eq!(x.status, 0, "{}", x.stderr_text());
    let err = x.stderr_text();
    let warnings: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("sumtool: warning!: "))
        .collect();
    assert!(
        warnings
            .iter()
            .any(|l| l.contains("is big-endian; neither -b nor -l was given")
                && l.ends_with("using big-endian")),
        "{err}"
    );
    assert!(
        warnings.iter().any(
            |l| l.contains("was built with 16 KiB erase blocks; -e was not given")
                && l.ends_with("using 16 KiB")
        ),
        "{err}"
    );
    let given = work.path().join("given.img");
    let x = run_o(&given, &["-b", "-e", "16KiB"]);
    assert_eq!(x.status, 0, "{}", x.stderr_text());
    assert!(
        std::fs::read(&defaulted).unwrap() == std::fs::read(&given).unwrap(),
        "the detected geometry and the given one write different images"
    );
}
