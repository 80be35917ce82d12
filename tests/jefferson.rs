//! `jefferson`: `jffs2-dump` under the name of the Python extractor (`docs/spec/ecosystem.md`
//! §1.2.1, docs/integration/analysis.md).
//!
//! * the command lines the analysis tools run, unchanged: binwalk 3's `jefferson -f -d
//!   jffs2-root FILE`, unblob's `jefferson -v -f -d OUTDIR FILE` (OUTDIR made beforehand),
//!   FACT's `fakeroot jefferson -vfd DIR FILE` (DIR existing);
//! * jefferson's exit statuses and standard output where callers read them: an existing DIR
//!   without `-f` (255, its line on stdout), an empty FILE (255), usage errors (2), a file
//!   that is not JFFS2 (1), names refused in a merge (2), `--help` (0);
//! * the byte order found from the filesystem, not from the first two bytes of the file; data
//!   after the filesystem read as `--extract` reads it; as an ordinary user, devices in
//!   `DIR.devtable`;
//! * a hostile image: every refusal named, nothing written outside DIR, status 2;
//! * two filesystems in one file (little- then big-endian; two generations of one tree with
//!   the same inode numbers): `DIR/fs_1`, `DIR/fs_2`, each what `jffs2-dump --extract` reads
//!   through its `--offset`/`--size` window; one filesystem still into DIR itself;
//! * end to end: unblob (PyPI) and binwalk 3 (crates.io) run on a firmware blob (a header, an
//!   image, trailing bytes) with our `jefferson` first in `PATH`; what they extracted is the
//!   tree, both names of a hard link included (the Python jefferson keeps one).
//!
//! unblob is looked for in `$JFFS2_TEST_VENV/bin` (default `/opt/jffs2-test-venv`), binwalk in
//! `$JFFS2_TEST_TOOLS/bin` (default `/opt/jffs2-test-tools`), fakeroot in `PATH`; all three
//! are installed by scripts/install-test-deps.sh. A missing one skips its test loudly (a
//! failure under `CI=true`).

#[path = "common/extract.rs"]
mod extract_common;
#[path = "common/skip.rs"]
mod skip;

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A scratch directory holding a `jefferson` link to the `jffs2-dump` under test (`bin/`),
/// the tree the images are made of (`root/`) and whatever a test makes there.
struct Setup {
    dir: tempfile::TempDir,
}

impl Setup {
    fn new() -> Setup {
        let dir = tempfile::Builder::new()
            .prefix("jefferson-")
            .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
            .expect("scratch directory");
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).expect("bin/");
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_jffs2-dump"), bin.join("jefferson"))
            .expect("the jefferson link");
        let s = Setup { dir };
        s.tree();
        s
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn jefferson(&self) -> PathBuf {
        self.path().join("bin/jefferson")
    }

    /// `PATH` with our `bin/` first.
    fn path_env(&self) -> std::ffi::OsString {
        let mut dirs = vec![self.path().join("bin")];
        dirs.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        std::env::join_paths(dirs).expect("PATH")
    }

    /// A small firmware tree: a file, a hard link to it, a symbolic link, a subdirectory.
    fn tree(&self) {
        let root = self.path().join("root");
        std::fs::create_dir_all(root.join("etc")).expect("etc");
        std::fs::create_dir_all(root.join("bin")).expect("bin");
        std::fs::write(root.join("etc/config"), b"hostname=router\n").expect("config");
        std::fs::write(root.join("bin/app"), b"\x7fELF not really\n").expect("app");
        std::fs::hard_link(root.join("bin/app"), root.join("bin/app2")).expect("link");
        std::os::unix::fs::symlink("../etc/config", root.join("bin/cfg")).expect("symlink");
    }

    /// The tree as an image made by our mkfs (`-b`: big-endian), written to `name`.
    fn image(&self, name: &str, args: &[&str]) -> PathBuf {
        let out = self.path().join(name);
        let st = Command::new(env!("CARGO_BIN_EXE_jffs2-mkfs"))
            .arg("-r")
            .arg(self.path().join("root"))
            .args(args)
            .arg("-o")
            .arg(&out)
            .status()
            .expect("run jffs2-mkfs");
        assert!(st.success(), "jffs2-mkfs {args:?}");
        out
    }

    /// The tree with device nodes from a device table (`/dev/null`, `/dev/ttyS0` owned by
    /// 5:20), made big-endian.
    fn image_with_devices(&self) -> PathBuf {
        let table = self.path().join("device_table.txt");
        std::fs::write(
            &table,
            "/dev d 755 0 0 - - - - -\n/dev/null c 666 0 0 1 3 0 0 -\n/dev/ttyS0 c 600 5 20 4 64 0 0 -\n",
        )
        .expect("device table");
        self.image("dev.img", &["-b", "-D", &table.to_string_lossy()])
    }

    /// A firmware blob: a 64-byte header, the image padded to its erase block, 4 KiB of
    /// trailing bytes.
    fn blob(&self) -> PathBuf {
        let img = self.image("fs.img", &["-b", "-e", "0x10000", "-p"]);
        let mut data = b"FWHDR0001 jffs2-tools test firmware".to_vec();
        data.resize(64, 0);
        data.extend(std::fs::read(img).expect("image"));
        data.extend(std::iter::repeat_n(b'T', 4096));
        let p = self.path().join("firmware.bin");
        std::fs::write(&p, data).expect("blob");
        p
    }

    /// Runs our jefferson with `args` in `cwd`.
    fn run<S: AsRef<OsStr>>(&self, cwd: &Path, args: &[S]) -> Output {
        Command::new(self.jefferson())
            .args(args)
            .current_dir(cwd)
            .output()
            .expect("run jefferson")
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Checks that `dir` holds the tree of [`Setup::tree`], the hard link as two names of one
/// inode (what the Python jefferson cannot do: it keeps one name).
fn assert_tree(dir: &Path) {
    let read = |p: &str| std::fs::read(dir.join(p)).unwrap_or_else(|e| panic!("{p}: {e}"));
    assert_eq!(read("etc/config"), b"hostname=router\n");
    assert_eq!(read("bin/app"), b"\x7fELF not really\n");
    assert_eq!(read("bin/app2"), b"\x7fELF not really\n");
    let (a, b) = (
        std::fs::metadata(dir.join("bin/app")).expect("app"),
        std::fs::metadata(dir.join("bin/app2")).expect("app2"),
    );
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 2), "one inode, two names");
    assert_eq!(
        std::fs::read_link(dir.join("bin/cfg")).expect("cfg"),
        Path::new("../etc/config")
    );
}

#[test]
fn binwalk_command_line() {
    let s = Setup::new();
    let img = s.image("fs.img", &["-b"]);
    let work = s.path().join("work");
    std::fs::create_dir(&work).expect("work");
    let o = s.run(
        &work,
        &[
            OsStr::new("-f"),
            "-d".as_ref(),
            "jffs2-root".as_ref(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "stdout: {}", text(&o.stdout));
    assert_tree(&work.join("jffs2-root"));
}

#[test]
fn unblob_command_line() {
    let s = Setup::new();
    let img = s.image("fs.img", &["-l", "-e", "0x20000"]);
    let out = s.path().join("64-1000.jffs2_new_extract");
    std::fs::create_dir(&out).expect("unblob makes OUTDIR first");
    let o = s.run(
        s.path(),
        &[
            OsStr::new("-v"),
            "-f".as_ref(),
            "-d".as_ref(),
            out.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty(), "stdout: {}", text(&o.stdout));
    // -v: what was detected and extracted, on stderr.
    let err = text(&o.stderr);
    assert!(
        err.contains("jefferson: detection: byte order: little endian"),
        "{err}"
    );
    assert!(err.contains("jefferson: extracted "), "{err}");
    assert_tree(&out);
}

/// FACT's line under fakeroot: the devices and owners made in fakeroot's record.
#[test]
fn fact_command_line_under_fakeroot() {
    if !skip::program("fakeroot", "fakeroot") {
        return;
    }
    let s = Setup::new();
    let img = s.image_with_devices();
    let dir = s.path().join("tmp_dir");
    std::fs::create_dir(&dir).expect("FACT's temporary directory exists");
    // What fakeroot shows inside the same session.
    let script = r#"jefferson -vfd "$1" "$2" && stat -c '%F %t:%T %u:%g %a' "$1/dev/ttyS0""#;
    let o = Command::new("fakeroot")
        .args(["sh", "-c", script, "sh"])
        .args([dir.as_os_str(), img.as_os_str()])
        .env("PATH", s.path_env())
        .output()
        .expect("run fakeroot");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "character special file 4:40 5:20 600\n");
    assert!(text(&o.stderr).contains("2 devices"), "{}", text(&o.stderr));
    assert_tree(&dir);
}

/// As an ordinary user nothing fails for want of root: the devices go to DIR.devtable with
/// their owners, and the owners not set are counted.
#[test]
fn unprivileged_devices_and_owners_are_recorded() {
    if !skip::root() || !skip::program("setpriv", "util-linux") {
        return;
    }
    let s = Setup::new();
    let img = s.image_with_devices();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(s.path(), std::fs::Permissions::from_mode(0o777)).expect("chmod");
    std::fs::set_permissions(&img, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(s.jefferson())
        .args([OsStr::new("-d"), "out".as_ref(), img.as_os_str()])
        .current_dir(s.path())
        .output()
        .expect("run setpriv");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let table = std::fs::read_to_string(s.path().join("out.devtable")).expect("out.devtable");
    assert!(
        table.contains("/dev/ttyS0 c 600 5 20 4 64 0 0 -"),
        "{table}"
    );
    assert!(table.contains("/dev/null c 666 0 0 1 3 0 0 -"), "{table}");
    let err = text(&o.stderr);
    assert!(err.contains("device nodes could not be created"), "{err}");
    assert!(err.contains("notice: owners of "), "{err}");
    assert_tree(&s.path().join("out"));
}

#[test]
fn existing_dest_without_force_is_refused_as_jefferson_does() {
    let s = Setup::new();
    let img = s.image("fs.img", &[]);
    let dest = s.path().join("dest");
    std::fs::create_dir(&dest).expect("dest");
    std::fs::write(dest.join("keep"), b"mine").expect("keep");
    let o = s.run(
        s.path(),
        &[OsStr::new("-d"), dest.as_os_str(), img.as_os_str()],
    );
    assert_eq!(o.status.code(), Some(255), "{}", text(&o.stderr));
    assert_eq!(text(&o.stdout), "Destination path already exists!\n");
    assert!(
        text(&o.stderr).contains("dest: exists"),
        "{}",
        text(&o.stderr)
    );
    let names: Vec<_> = std::fs::read_dir(&dest).expect("dest").flatten().collect();
    assert_eq!(names.len(), 1, "nothing extracted");
    // Even an empty one: jefferson tests existence, not emptiness.
    let empty = s.path().join("empty-dest");
    std::fs::create_dir(&empty).expect("empty dest");
    let o = s.run(
        s.path(),
        &[OsStr::new("-d"), empty.as_os_str(), img.as_os_str()],
    );
    assert_eq!(o.status.code(), Some(255));
    // The default DIR, ./jffs2-root, the same.
    std::fs::create_dir(s.path().join("jffs2-root")).expect("jffs2-root");
    let o = s.run(s.path(), &[img.as_os_str()]);
    assert_eq!(o.status.code(), Some(255));
}

#[test]
fn default_dest_is_jffs2_root_in_the_current_directory() {
    let s = Setup::new();
    let img = s.image("fs.img", &[]);
    let o = s.run(s.path(), &[img.as_os_str()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        o.stdout.is_empty() && o.stderr.is_empty(),
        "{}",
        text(&o.stderr)
    );
    assert_tree(&s.path().join("jffs2-root"));
}

#[test]
fn force_merges_and_refuses_what_exists() {
    let s = Setup::new();
    let img = s.image("fs.img", &[]);
    let dest = s.path().join("dest");
    std::fs::create_dir(&dest).expect("dest");
    std::fs::write(dest.join("keep"), b"mine").expect("keep");
    let o = s.run(
        s.path(),
        &[
            OsStr::new("-f"),
            "--dest".as_ref(),
            dest.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_tree(&dest);
    assert_eq!(std::fs::read(dest.join("keep")).expect("keep"), b"mine");
    // Again into the same tree: nothing is replaced; every existing name is refused (2).
    let o = s.run(
        s.path(),
        &[
            OsStr::new("--force"),
            "-d".as_ref(),
            dest.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("jefferson: refused: bin/app: already exists"));
    assert!(o.stdout.is_empty());
    assert_tree(&dest);
}

#[test]
fn empty_file_exits_255() {
    let s = Setup::new();
    let empty = s.path().join("empty.bin");
    std::fs::write(&empty, b"").expect("empty");
    let o = s.run(
        s.path(),
        &[
            OsStr::new("-f"),
            "-d".as_ref(),
            "out".as_ref(),
            empty.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(255), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("empty file"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn not_jffs2_exits_1() {
    let s = Setup::new();
    let junk = s.path().join("junk.bin");
    std::fs::write(&junk, vec![0x5au8; 70_000]).expect("junk");
    let o = s.run(
        s.path(),
        &[
            OsStr::new("-f"),
            "-d".as_ref(),
            "out".as_ref(),
            junk.as_os_str(),
        ],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    assert!(o.stdout.is_empty());
    assert!(
        text(&o.stderr).contains("not a JFFS2 image"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn usage_errors_exit_2() {
    let s = Setup::new();
    let img = s.image("fs.img", &[]);
    let file = s.path().join("a-file");
    std::fs::write(&file, b"x").expect("file");
    let cases: Vec<(Vec<&OsStr>, &str)> = vec![
        (vec![], "missing operand FILE"),
        (
            vec!["-x".as_ref(), img.as_os_str()],
            "invalid option -- 'x'",
        ),
        (
            vec!["--bogus".as_ref(), img.as_os_str()],
            "unrecognized option '--bogus'",
        ),
        (vec![img.as_os_str(), img.as_os_str()], "extra operand"),
        (vec!["-d".as_ref()], "requires an argument"),
        (
            vec!["no-such-file".as_ref()],
            "no-such-file: No such file or directory",
        ),
        (vec![s.path().as_os_str()], "is a directory"),
        (
            vec!["-d".as_ref(), file.as_os_str(), img.as_os_str()],
            "exists and is not a directory",
        ),
    ];
    for (args, want) in cases {
        let o = s.run(s.path(), &args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(err.contains("Try 'jefferson --help'"), "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?}");
    }
    // A parent that does not exist: only one level is made (status 1, as jefferson's).
    let o = s.run(
        s.path(),
        &[OsStr::new("-d"), "no/such".as_ref(), img.as_os_str()],
    );
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
}

#[test]
fn help_on_stdout() {
    let s = Setup::new();
    for h in ["--help", "-h"] {
        let o = s.run(s.path(), &[h, "--bogus"]);
        assert_eq!(o.status.code(), Some(0), "{h}");
        let out = text(&o.stdout);
        assert!(
            out.starts_with("Usage: jefferson [OPTIONS] FILE\n"),
            "{out}"
        );
        for opt in [
            "-d, --dest=DIRECTORY",
            "-f, --force",
            "-v, --verbose",
            "-h, --help",
        ] {
            assert!(out.contains(opt), "{opt}: {out}");
        }
        assert!(o.stderr.is_empty());
    }
    // Ours (jefferson has no --version): which jefferson this is.
    let o = s.run(s.path(), &["--version"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(text(&o.stdout).starts_with("jefferson (jffs2-tools) "));
}

#[test]
fn options_after_the_file_and_grouped() {
    let s = Setup::new();
    let img = s.image("fs.img", &[]);
    std::fs::create_dir(s.path().join("d1")).expect("d1");
    let o = s.run(
        s.path(),
        &[img.as_os_str(), "-vvvfd".as_ref(), "d1".as_ref()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_tree(&s.path().join("d1"));
    let o = s.run(s.path(), &[img.as_os_str(), "--dest=d2".as_ref()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_tree(&s.path().join("d2"));
}

/// The Python jefferson takes the byte order from the first two bytes of the file and reads
/// anything else as big-endian: a little-endian image that starts with an erased block comes
/// out empty. Ours finds it from the nodes.
#[test]
fn byte_order_from_the_filesystem_not_the_first_bytes() {
    let s = Setup::new();
    let img = s.image("fs.img", &["-l", "-e", "0x10000", "-p"]);
    let mut data = vec![0xffu8; 0x10000];
    data.extend(std::fs::read(&img).expect("image"));
    let erased_first = s.path().join("erased-first.img");
    std::fs::write(&erased_first, data).expect("write");
    let o = s.run(
        s.path(),
        &[OsStr::new("-d"), "out".as_ref(), erased_first.as_os_str()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_tree(&s.path().join("out"));
}

/// Runs an analysis tool (`program ARGS BLOB`) in the scratch directory with our jefferson
/// first in `PATH`; it must succeed. Returns its stdout.
fn analysis_tool(s: &Setup, program: &Path, args: &[&OsStr]) -> String {
    let o = Command::new(program)
        .args(args)
        .arg(s.blob())
        .env("PATH", s.path_env())
        .current_dir(s.path())
        .output()
        .expect("run the analysis tool");
    assert!(
        o.status.success(),
        "{}: {}\n{}",
        program.display(),
        text(&o.stdout),
        text(&o.stderr)
    );
    text(&o.stdout)
}

/// unblob from PyPI (`$JFFS2_TEST_VENV/bin/unblob`) on the blob, with our jefferson first in
/// `PATH`: its JFFS2 chunk is extracted by ours.
#[test]
fn unblob_end_to_end() {
    let venv = std::env::var_os("JFFS2_TEST_VENV").unwrap_or("/opt/jffs2-test-venv".into());
    let unblob = Path::new(&venv).join("bin/unblob");
    if skip::pretend_missing("unblob") || !unblob.is_file() {
        skip::skip(&format!("unblob ({})", unblob.display()));
        return;
    }
    let s = Setup::new();
    let out = s.path().join("unblob-out");
    // unblob writes unblob.log into the current directory.
    analysis_tool(&s, &unblob, &["-e".as_ref(), out.as_os_str()]);
    let chunk = out.join("firmware.bin_extract/64-65600.jffs2_new_extract");
    assert_tree(&chunk);
}

/// binwalk 3 from crates.io (`$JFFS2_TEST_TOOLS/bin/binwalk`) on the blob, with our jefferson
/// first in `PATH`.
#[test]
fn binwalk_end_to_end() {
    let tools = std::env::var_os("JFFS2_TEST_TOOLS").unwrap_or("/opt/jffs2-test-tools".into());
    let binwalk = Path::new(&tools).join("bin/binwalk");
    if skip::pretend_missing("binwalk") || !binwalk.is_file() {
        skip::skip(&format!("binwalk 3 ({})", binwalk.display()));
        return;
    }
    let s = Setup::new();
    let out = s.path().join("binwalk-out");
    // binwalk 3.1.0's main loop ends when its queue is empty and no pool thread is active,
    // counting a thread as active only once it has taken the job: on a loaded machine the
    // loop can end before the worker wakes ("Analyzed 0 files", exit 0, nothing extracted).
    // On one CPU under SCHED_FIFO (root) the worker, woken by the job, runs while the main
    // thread sleeps its 1 ms and takes the job before the loop checks again.
    let root = unsafe { libc::geteuid() } == 0;
    let mut args: Vec<&OsStr> = Vec::new();
    let program = if root {
        args.extend(["-f", "1", "taskset", "-c", "0"].map(OsStr::new));
        args.push(binwalk.as_os_str());
        Path::new("chrt")
    } else {
        &binwalk
    };
    args.extend([OsStr::new("-e"), OsStr::new("-C"), out.as_os_str()]);
    let stdout = analysis_tool(&s, program, &args);
    assert!(stdout.contains("JFFS2 filesystem, big endian"), "{stdout}");
    assert_tree(&out.join("firmware.bin.extracted/40/jffs2-root"));
}

/// A file with data after the filesystem (a carved chunk with trailing bytes): read as
/// `jffs2-dump --extract` reads it, with the same status and the same files.
#[test]
fn trailing_data_is_read_as_extract_reads_it() {
    let s = Setup::new();
    let img = s.image("fs.img", &["-b", "-e", "0x10000", "-p"]);
    let mut data = std::fs::read(&img).expect("image");
    data.extend(std::iter::repeat_n(b'T', 4096));
    let trailing = s.path().join("trailing.bin");
    std::fs::write(&trailing, data).expect("write");
    let ours = s.run(
        s.path(),
        &[OsStr::new("-d"), "a".as_ref(), trailing.as_os_str()],
    );
    let dump = Command::new(env!("CARGO_BIN_EXE_jffs2-dump"))
        .args([OsStr::new("--extract"), "b".as_ref(), trailing.as_os_str()])
        .current_dir(s.path())
        .output()
        .expect("run jffs2-dump");
    assert_eq!(
        ours.status.code(),
        dump.status.code(),
        "{}",
        text(&ours.stderr)
    );
    assert_eq!(ours.status.code(), Some(0), "{}", text(&ours.stderr));
    assert_eq!(
        text(&ours.stderr).replace("jefferson: ", ""),
        text(&dump.stderr)
            .replace("jffs2-dump: ", "")
            .replace(" b;", " a;"),
    );
    assert_tree(&s.path().join("a"));
}

/// A hostile image (a name with `/`, `..`, a symbolic link out of DIR with a file "through"
/// it): nothing is written outside DIR, each refusal is named, the status is 2 (which binwalk
/// accepts and unblob reports), and the rest is extracted.
#[test]
fn hostile_names_are_refused_and_nothing_leaves_dest() {
    use extract_common::Craft;
    use jffs2::format::{dt, Endian};
    let s = Setup::new();
    let mut c = Craft::new(Endian::Big, 16384);
    c.dir(1)
        .dirent(1, 2, 2, dt::REG, b"../escaped")
        .file(2, b"out of DIR\n")
        .dirent(1, 3, 3, dt::LNK, b"up")
        .symlink(3, b"..")
        .dirent(3, 5, 5, dt::REG, b"through")
        .file(5, b"through the link\n")
        .dirent(1, 4, 4, dt::REG, b"ok")
        .file(4, b"fine\n");
    let img = s.path().join("hostile.img");
    std::fs::write(&img, c.build()).expect("image");
    let work = s.path().join("work");
    std::fs::create_dir(&work).expect("work");
    let o = s.run(
        &work,
        &[
            OsStr::new("-f"),
            "-d".as_ref(),
            "jffs2-root".as_ref(),
            img.as_os_str(),
        ],
    );
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("jefferson: refused: "), "{err}");
    assert!(
        err.contains("escaped\" (inode #2) refused: name contains '/'"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    let root = work.join("jffs2-root");
    assert_eq!(std::fs::read(root.join("ok")).expect("ok"), b"fine\n");
    assert_eq!(
        std::fs::read_link(root.join("up")).expect("up"),
        Path::new("..")
    );
    for outside in ["escaped", "through"] {
        assert!(!work.join(outside).exists() && !s.path().join(outside).exists());
    }
}

/// Every entry of an extracted tree but its host inode numbers.
fn tree_of(dir: &Path) -> Vec<String> {
    extract_common::snapshot(dir)
        .into_iter()
        .map(|(k, mut e)| {
            e.ino = 0;
            format!("{} {e:?}", String::from_utf8_lossy(&k))
        })
        .collect()
}

/// `jffs2-dump --extract DIR --offset START --size SIZE FILE` into `s.path()/name`.
fn dump_window(s: &Setup, file: &Path, start: u64, size: u64, name: &str) -> PathBuf {
    let dest = s.path().join(name);
    let o = Command::new(env!("CARGO_BIN_EXE_jffs2-dump"))
        .arg("--extract")
        .arg(&dest)
        .arg(format!("--offset={start}"))
        .arg(format!("--size={size}"))
        .arg(file)
        .output()
        .expect("run jffs2-dump");
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    dest
}

/// Two filesystems back to back (`first` then `second`, each padded to 64 KiB blocks):
/// jefferson writes `DIR/fs_1` and `DIR/fs_2` (jefferson 0.3's layout; 0.4 merges them into
/// one garbled tree, `docs/spec/ecosystem.md` §1.2.1), each what `--extract` reads in its
/// window, and nothing else in DIR.
fn two_in_one(s: &Setup, first: &Path, second: &Path) -> (PathBuf, Vec<String>, Vec<String>) {
    let a = std::fs::read(first).expect("first");
    let b = std::fs::read(second).expect("second");
    let both = s.path().join("both.bin");
    std::fs::write(&both, [&a[..], &b[..]].concat()).expect("write");
    let o = s.run(
        s.path(),
        &[OsStr::new("-d"), "out".as_ref(), both.as_os_str()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = s.path().join("out");
    assert_eq!(extract_common::names_in(&out), ["fs_1", "fs_2"]);
    let (al, bl) = (a.len() as u64, b.len() as u64);
    let one = dump_window(s, &both, 0, al, "one");
    let two = dump_window(s, &both, al, bl, "two");
    assert_eq!(tree_of(&out.join("fs_1")), tree_of(&one));
    assert_eq!(tree_of(&out.join("fs_2")), tree_of(&two));
    (out, tree_of(&one), tree_of(&two))
}

#[test]
fn little_and_big_endian_filesystems_each_into_fs_n() {
    let s = Setup::new();
    let le = s.image("le.img", &["-l", "-e", "0x10000", "-p"]);
    std::fs::write(s.path().join("root/etc/extra"), b"only in the second\n").expect("extra");
    let be = s.image("be.img", &["-b", "-e", "0x10000", "-p"]);
    let (out, _, _) = two_in_one(&s, &le, &be);
    assert_tree(&out.join("fs_1"));
    assert_tree(&out.join("fs_2"));
    assert!(!out.join("fs_1/etc/extra").exists());
    assert_eq!(
        std::fs::read(out.join("fs_2/etc/extra")).expect("extra"),
        b"only in the second\n"
    );
}

#[test]
fn two_generations_with_the_same_inode_numbers_are_not_merged() {
    let s = Setup::new();
    let old = s.image("old.img", &["-l", "-e", "0x10000", "-p"]);
    // The second generation: the same names (the same inode numbers), one file shorter, one
    // added before the others in the walk.
    std::fs::write(s.path().join("root/etc/config"), b"h=r\n").expect("config");
    std::fs::write(s.path().join("root/bin/aaa"), b"new\n").expect("aaa");
    let new = s.image("new.img", &["-l", "-e", "0x10000", "-p"]);
    let (out, one, two) = two_in_one(&s, &old, &new);
    assert_ne!(one, two);
    assert_tree(&out.join("fs_1"));
    assert_eq!(
        std::fs::read(out.join("fs_1/etc/config")).expect("old config"),
        b"hostname=router\n"
    );
    assert_eq!(
        std::fs::read(out.join("fs_2/etc/config")).expect("new config"),
        b"h=r\n"
    );
    assert_eq!(
        std::fs::read(out.join("fs_2/bin/aaa")).expect("aaa"),
        b"new\n"
    );
    assert!(!out.join("fs_1/bin/aaa").exists());
}

#[test]
fn one_filesystem_still_goes_into_dir_itself() {
    let s = Setup::new();
    let img = s.image("fs.img", &["-l", "-e", "0x10000", "-p"]);
    let o = s.run(
        s.path(),
        &[OsStr::new("-d"), "out".as_ref(), img.as_os_str()],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert_tree(&s.path().join("out"));
    assert!(!s.path().join("out/fs_1").exists());
}
