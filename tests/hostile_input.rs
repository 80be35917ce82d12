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

use common::{scratch, skip};

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

#[test]
fn fsck_input_truncated_while_mapped() {
    truncated_while_mapped(FSCK, &["IMG"], 8);
}

#[test]
fn fsck_repair_input_truncated_while_mapped() {
    truncated_while_mapped(FSCK, &["--repair", "OUT", "IMG"], 8);
}

struct Ran {
    code: Option<i32>,
    stderr: String,
}

fn run_in(dir: &Path, prefix: &[&str], tool: &str, args: &[&str]) -> Ran {
    let mut cmd = if let Some((first, rest)) = prefix.split_first() {
        let mut c = Command::new(first);
        c.args(rest).arg(tool);
        c
    } else {
        Command::new(tool)
    };
    let o = cmd
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .output()
        .unwrap();
    Ran {
        code: o.status.code(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Each tool that reads an image (and `mkfs -i`): its command line with `IN` as the input
/// and the status it documents for errors.
fn readers(input: &str) -> Vec<(&'static str, Vec<String>, i32)> {
    let i = input.to_string();
    vec![
        (FSCK, vec![i.clone()], 8),
        (DUMP, vec!["--list".into(), i.clone()], 1),
        (DUMP, vec!["-c".into(), i.clone()], 1),
        (
            CONVERT,
            vec!["-i".into(), i.clone(), "-o".into(), "out.img".into()],
            8,
        ),
        (
            SUMTOOL,
            vec!["-i".into(), i.clone(), "-o".into(), "out.img".into()],
            255,
        ),
        (
            MKFS,
            vec![
                "-r".into(),
                "root".into(),
                "-o".into(),
                "out.img".into(),
                "-i".into(),
                i,
            ],
            255,
        ),
    ]
}

/// No temporary file (`.NAME.*.tmp`) and no output in `dir`.
fn nothing_left(dir: &Path, what: &str) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "root" && n != "big.img" && n != "table.txt")
        .collect();
    assert!(left.is_empty(), "{what} left {left:?}");
}

/// An image can never exceed 4 GiB (32-bit flash offsets): a larger regular file is refused
/// at once, from its size, by every tool — it used to be read whole (or mapped and scanned).
#[test]
fn inputs_larger_than_4_gib_are_refused() {
    let work = scratch();
    let dir = work.path();
    std::fs::create_dir(dir.join("root")).unwrap();
    let big = std::fs::File::create(dir.join("big.img")).unwrap();
    big.set_len(5 << 30).unwrap();
    for (tool, args, code) in readers("big.img") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run_in(dir, &[], tool, &args);
        assert_eq!(r.code, Some(code), "{tool} {args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("larger than 4 GiB: not a JFFS2 image"),
            "{tool} {args:?}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("big.img"),
            "{tool} {args:?}: {}",
            r.stderr
        );
        nothing_left(dir, tool);
    }
}

/// An input without an end (`/dev/zero`) is read only up to what memory allows: the
/// allocation failure is "Cannot allocate memory" naming the input — never "error 0
/// (Success)", an abort or the OOM killer. (Without a limit it stops at 4 GiB: the unit
/// tests of `jffs2::input` check that bound with a small one.)
#[test]
fn endless_inputs_under_a_memory_limit_say_enomem() {
    if !skip::program("prlimit", "util-linux") {
        return;
    }
    let work = scratch();
    let dir = work.path();
    std::fs::create_dir(dir.join("root")).unwrap();
    for (tool, args, code) in readers("/dev/zero") {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run_in(dir, &["/usr/bin/prlimit", "--as=1073741824"], tool, &args);
        assert_eq!(r.code, Some(code), "{tool} {args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("Cannot allocate memory") && r.stderr.contains("/dev/zero"),
            "{tool} {args:?}: {}",
            r.stderr
        );
        assert!(!r.stderr.contains("error 0 (Success)"), "{}", r.stderr);
        nothing_left(dir, tool);
    }
}

/// Numbers that do not fit are refused, never wrapped (`-e 4096MiB` used to become 8 KiB,
/// `--pad=5GiB` to pad nothing, `--threads=4294967297` to be 1 thread).
#[test]
fn numbers_that_do_not_fit_are_refused() {
    let work = scratch();
    let dir = work.path();
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f"), b"hello\n").unwrap();
    let img = dir.join("in.img");
    let o = Command::new(MKFS)
        .arg("-r")
        .arg(&root)
        .arg("-o")
        .arg(&img)
        .output()
        .unwrap();
    assert!(o.status.success());
    let img = img.to_str().unwrap();
    let out = "out.img";
    let cases: Vec<(&str, Vec<&str>, i32, &str)> = vec![
        (
            MKFS,
            vec!["-r", "root", "-o", out, "-e", "4096MiB"],
            255,
            "Erase size '4096MiB' is out of range",
        ),
        (
            MKFS,
            vec!["-r", "root", "-o", out, "-e", "0x100002000"],
            255,
            "Erase size '0x100002000' is out of range",
        ),
        (
            MKFS,
            vec!["-r", "root", "-o", out, "-s", "4294967808"],
            255,
            "Page size '4294967808' is out of range",
        ),
        (
            MKFS,
            vec!["-r", "root", "-o", out, "-p4294967296"],
            255,
            "Pad size '4294967296' is out of range",
        ),
        (
            MKFS,
            vec!["-r", "root", "-o", out, "-c", "4294967308"],
            255,
            "cleanmarker size must be >= 12",
        ),
        (
            MKFS,
            vec!["-r", "root", "-o", out, "--threads=100000"],
            255,
            "--threads: '100000' is not between 1 and 1024",
        ),
        (
            SUMTOOL,
            vec!["-i", img, "-o", out, "-e", "4096MiB"],
            255,
            "Erase size '4096MiB' is out of range",
        ),
        (
            FSCK,
            vec!["-e", "4096MiB", img],
            16,
            "erase size '4096MiB' is larger than",
        ),
        (
            CONVERT,
            vec!["-i", img, "-o", out, "-e", "4096MiB"],
            16,
            "--eraseblock: '4096MiB' is out of range",
        ),
        (
            CONVERT,
            vec!["-i", img, "-o", out, "--pad=5GiB"],
            16,
            "--pad: bad size '5GiB'",
        ),
        (
            CONVERT,
            vec!["-i", img, "-o", out, "--pad=4294967297"],
            16,
            "--pad: bad size '4294967297'",
        ),
        (
            CONVERT,
            vec!["-i", img, "-o", out, "--threads=4294967297"],
            16,
            "--threads: '4294967297' is not between 1 and 1024",
        ),
        (
            CONVERT,
            vec!["-i", img, "-o", out, "--threads=100000"],
            16,
            "--threads: '100000' is not between 1 and 1024",
        ),
    ];
    for (tool, args, code, msg) in cases {
        let r = run_in(dir, &[], tool, &args);
        assert_eq!(r.code, Some(code), "{tool} {args:?}: {}", r.stderr);
        assert!(r.stderr.contains(msg), "{tool} {args:?}: {}", r.stderr);
        assert!(!dir.join(out).exists(), "{tool} {args:?} wrote {out}");
    }
    // What fits still works: a 4 GiB-sized pad is accepted by the grammar (not run here),
    // KiB suffixes pad as asked.
    let r = run_in(dir, &[], CONVERT, &["-i", img, "-o", out, "--pad=256KiB"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert_eq!(std::fs::metadata(dir.join(out)).unwrap().len(), 256 << 10);
}

/// A thread the system refuses is an error naming the count (and no temporary file), not
/// "internal error" or an abort. Needs root (to run as nobody under RLIMIT_NPROC).
#[test]
fn refused_threads_are_an_error() {
    if !skip::root()
        || !skip::program("prlimit", "util-linux")
        || !skip::program("setpriv", "util-linux")
    {
        return;
    }
    let work = scratch();
    let dir = work.path();
    let root = dir.join("root");
    std::fs::create_dir(&root).unwrap();
    std::fs::write(root.join("f"), common::random(7, 300_000)).unwrap();
    let img = dir.join("in.img");
    let o = Command::new(MKFS)
        .arg("-r")
        .arg(&root)
        .arg("-o")
        .arg(&img)
        .output()
        .unwrap();
    assert!(o.status.success());
    let out = dir.join("o");
    std::fs::create_dir(&out).unwrap();
    for p in [dir, &root, &out] {
        std::fs::set_permissions(p, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    }
    std::fs::set_permissions(&img, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    let nobody = [
        "/usr/bin/prlimit",
        "--nproc=4",
        "/usr/bin/setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let (r_s, i_s) = (root.to_str().unwrap(), img.to_str().unwrap());
    let o_s = out.join("out.img");
    let o_s = o_s.to_str().unwrap();
    for (tool, args, code) in [
        (MKFS, vec!["-r", r_s, "-o", o_s, "--threads=64"], 255),
        (CONVERT, vec!["-i", i_s, "-o", o_s, "--threads=64"], 8),
    ] {
        let r = run_in(dir, &nobody, tool, &args);
        assert_eq!(r.code, Some(code), "{tool} {args:?}: {}", r.stderr);
        assert!(
            !r.stderr.contains("internal error") && !r.stderr.contains("panicked"),
            "{tool} {args:?}: {}",
            r.stderr
        );
        assert!(
            r.stderr.contains("Resource temporarily unavailable"),
            "{tool} {args:?}: {}",
            r.stderr
        );
        let left: Vec<_> = std::fs::read_dir(&out).unwrap().collect();
        assert!(left.is_empty(), "{tool} left {left:?}");
    }
}

/// Device tables: what mkfs.jffs2 silently gets wrong is a `file:line` error, and the
/// entries a table may create are bounded (3 × 4 Mi entries in 99 bytes reached 3 GB).
#[test]
fn device_table_errors_are_located() {
    let work = scratch();
    let dir = work.path();
    std::fs::create_dir_all(dir.join("root/dev")).unwrap();
    let cases = [
        ("/dev/x c 666\n", "table.txt:2: '/dev/x': a device needs its major and minor numbers"),
        ("/dev/x c 99999999999 0 0 1 3\n", "table.txt:2: mode '99999999999' is not an octal number (nor '-')"),
        ("/dev/x c 660 root disk 1 3\n", "table.txt:2: uid 'root' is not a decimal number (nor '-')"),
        ("/dev/tty c 666 0 0 4 0 0 1 4194304\n/dev/tty c 666 0 0 4 0 0 1 4194304\n/dev/tty c 666 0 0 4 0 0 1 4194304\n",
            "table.txt:2: device range of 4194304 entries for '/dev/tty' exceeds the limit of 1048576"),
        ("/dev/a c 666 0 0 4 0 0 1 600000\n/dev/b c 666 0 0 4 0 0 1 600000\n",
            "table.txt:3: the device table creates more than 1048576 entries (ranges expanded)"),
    ];
    for (lines, msg) in cases {
        std::fs::write(dir.join("table.txt"), format!("# test\n{lines}")).unwrap();
        let r = run_in(
            dir,
            &[],
            MKFS,
            &["-r", "root", "-o", "out.img", "-D", "table.txt"],
        );
        assert_eq!(r.code, Some(255), "{lines}: {}", r.stderr);
        assert!(r.stderr.contains(msg), "{lines}: {}", r.stderr);
        nothing_left(dir, lines);
    }
    // A table larger than any real one is not read whole.
    let t = std::fs::File::create(dir.join("table.txt")).unwrap();
    t.set_len(100 << 20).unwrap();
    let r = run_in(
        dir,
        &[],
        MKFS,
        &["-r", "root", "-o", "out.img", "-D", "table.txt"],
    );
    assert_eq!(r.code, Some(255), "{}", r.stderr);
    assert!(
        r.stderr.contains("larger than 64 MiB: not a device table"),
        "{}",
        r.stderr
    );
    nothing_left(dir, "a huge table");
}
