//! Outputs under attack, on a full disk and interrupted: the five binaries, as built.
//!
//! * `-o` through a symbolic link: the kernel follows it (a non-root user's link to a file
//!   they may not write is refused, "Permission denied"; `fs.protected_symlinks` applies to
//!   root); the file it names is replaced with its mode and owner kept, the link kept.
//! * A dangling symbolic link as output on a full disk: complete or absent.
//! * An output that is the input (through a link, a hard link) is refused, naming both; the
//!   default `DIR.devtable` never replaces a file.
//! * SIGINT / SIGTERM while the output is written leave nothing beside it (unnamed
//!   `O_TMPFILE`, and the named fallback's signal handler).
//! * Help, version, listings and reports into `/dev/full`: a message and a documented
//!   status, never a panic.
//! * Output errors say what the kernel said ("Is a directory", "Permission denied").
//!
//! Root is needed (tmpfs, chown, mknod, setpriv); without it the tests say SKIPPED loudly on
//! stderr, and fail under `CI=true`.

mod common;

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{scratch, skip};

const MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");
const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const SUMTOOL: &str = env!("CARGO_BIN_EXE_jffs2-sumtool");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");

/// Whether the test can run: root, and `setpriv` when `need_setpriv`; otherwise skipped
/// loudly (a failure under CI=true), see `common::skip`. (`_what` names the test in the
/// calls; the skip line takes the test's name from its thread.)
fn can_run(_what: &str, need_setpriv: bool) -> bool {
    skip::root() && (!need_setpriv || skip::program("setpriv", "util-linux"))
}

struct Ran {
    code: i32,
    signal: Option<i32>,
    stdout: String,
    stderr: String,
}

fn ran(o: std::process::Output) -> Ran {
    Ran {
        code: o.status.code().unwrap_or(-1),
        signal: o.status.signal(),
        stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs `bin args` (as user nobody when `nobody`).
fn exec(bin: &str, args: &[&OsStr], nobody: bool) -> Ran {
    let mut c = if nobody {
        let mut c = Command::new("/usr/bin/setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", bin]);
        c
    } else {
        Command::new(bin)
    };
    c.args(args).env("LC_ALL", "C").stdin(Stdio::null());
    let r = ran(c.output().unwrap_or_else(|e| panic!("run {bin}: {e}")));
    assert!(
        r.code != 101 && !r.stderr.contains("panicked") && r.signal.is_none(),
        "{bin} {args:?}: crashed: {}",
        r.stderr
    );
    r
}

fn s(x: &str) -> &OsStr {
    OsStr::new(x)
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// A small source tree and its image (built by our mkfs), in `dir`.
fn tree_and_image(dir: &Path) -> (PathBuf, PathBuf) {
    let src = dir.join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    std::fs::write(src.join("a.txt"), common::text(1, 20_000)).unwrap();
    std::fs::write(src.join("d/b.bin"), common::random(2, 30_000)).unwrap();
    let img = dir.join("in.img");
    let r = exec(
        MKFS,
        &[
            s("-r"),
            src.as_os_str(),
            s("-o"),
            img.as_os_str(),
            s("--no-progress"),
        ],
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    (src, img)
}

/// Every tool that writes an image to a named output: (name, arguments with `OUT`
/// standing for the output, its exit status for an output it cannot open).
fn writers<'a>(src: &'a Path, img: &'a Path) -> Vec<(&'static str, Vec<&'a OsStr>, i32)> {
    vec![
        (
            MKFS,
            vec![
                s("-r"),
                src.as_os_str(),
                s("-o"),
                s("OUT"),
                s("--no-progress"),
            ],
            255,
        ),
        (
            SUMTOOL,
            vec![s("-i"), img.as_os_str(), s("-o"), s("OUT")],
            255,
        ),
        (
            CONVERT,
            vec![
                s("-i"),
                img.as_os_str(),
                s("-o"),
                s("OUT"),
                s("--no-progress"),
            ],
            8,
        ),
        (DUMP, vec![s("-e"), s("OUT"), img.as_os_str()], 1),
        (
            FSCK,
            vec![s("--repair"), s("OUT"), s("--no-progress"), img.as_os_str()],
            8,
        ),
    ]
}

fn with_out<'a>(args: &[&'a OsStr], out: &'a Path) -> Vec<&'a OsStr> {
    args.iter()
        .map(|a| if *a == "OUT" { out.as_os_str() } else { *a })
        .collect()
}

fn chmod(p: &Path, mode: u32) {
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn lchown(p: &Path, uid: u32, gid: u32) {
    std::os::unix::fs::lchown(p, Some(uid), Some(gid)).unwrap();
}

/// Root writing through a link: the file it names is replaced, complete, with its mode and
/// owner; the link stays; a hard link to the old file keeps the old bytes.
#[test]
fn a_link_as_output_replaces_what_it_names_keeping_mode_and_owner() {
    if !can_run("a_link_as_output_replaces_what_it_names", false) {
        return;
    }
    let work = scratch();
    let (src, img) = tree_and_image(work.path());
    let real = work.path().join("real");
    std::fs::create_dir(&real).unwrap();
    let target = real.join("target.img");
    let other = work.path().join("other-link.img");
    let link = work.path().join("link.img");
    std::os::unix::fs::symlink(&target, &link).unwrap();
    for (bin, args, _) in writers(&src, &img) {
        let _ = std::fs::remove_file(&other);
        std::fs::write(&target, b"old bytes\n").unwrap();
        chmod(&target, 0o600);
        lchown(&target, 4242, 4343);
        std::fs::hard_link(&target, &other).unwrap();
        let r = exec(bin, &with_out(&args, &link), false);
        assert!(r.code <= 1, "{bin}: {}", r.stderr);
        let m = std::fs::metadata(&target).unwrap();
        assert!(m.len() > 1000, "{bin}: not written");
        assert_eq!(m.mode() & 0o7777, 0o600, "{bin}: mode not kept");
        assert_eq!((m.uid(), m.gid()), (4242, 4343), "{bin}: owner not kept");
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
        assert_eq!(std::fs::read(&other).unwrap(), b"old bytes\n", "{bin}");
        assert_eq!(names_in(&real), ["target.img"], "{bin}: left something");
    }
}

/// A non-root user's link to a file they may not write: refused by the kernel ("Permission
/// denied", naming the output), the file untouched, nothing left beside it.
#[test]
fn a_users_link_to_a_file_they_may_not_write_is_refused() {
    if !can_run("a_users_link_to_a_file_they_may_not_write_is_refused", true) {
        return;
    }
    let work = scratch();
    chmod(work.path(), 0o755);
    let (src, img) = tree_and_image(work.path());
    chmod(&img, 0o644);
    // A shared directory the user may write to, holding a root-owned file.
    let shared = work.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o777);
    let victim = shared.join("victim.conf");
    let link = shared.join("out.img");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lchown(&link, 65534, 65534);
    for (bin, args, code) in writers(&src, &img) {
        std::fs::write(&victim, b"root's file\n").unwrap();
        chmod(&victim, 0o644);
        let r = exec(bin, &with_out(&args, &link), true);
        assert_eq!(r.code, code, "{bin}: {}", r.stderr);
        assert!(
            r.stderr.contains("Permission denied") && r.stderr.contains("out.img"),
            "{bin}: {}",
            r.stderr
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"root's file\n", "{bin}");
        assert_eq!(std::fs::metadata(&victim).unwrap().uid(), 0, "{bin}");
        assert_eq!(names_in(&shared), ["out.img", "victim.conf"], "{bin}");
    }
}

/// In a sticky world-writable directory, root does not follow another user's link
/// (`fs.protected_symlinks`, the kernel's check, applies because the kernel follows it).
#[test]
fn root_does_not_follow_a_users_link_in_a_sticky_directory() {
    if !can_run(
        "root_does_not_follow_a_users_link_in_a_sticky_directory",
        false,
    ) {
        return;
    }
    // The kernel's check is what is tested: where the machine has it off (some containers
    // boot with the sysctl at 0), root turns it on for the test and back off afterwards.
    let Some(_protected) = ProtectedSymlinks::on() else {
        skip::skip("fs.protected_symlinks = 1 (it is 0 on this machine and cannot be set)");
        return;
    };
    let work = scratch();
    let (src, img) = tree_and_image(work.path());
    let tmp = work.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    chmod(&tmp, 0o1777);
    let victim = work.path().join("shadow");
    let link = tmp.join("build.img");
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    lchown(&link, 65534, 65534);
    for (bin, args, code) in writers(&src, &img) {
        std::fs::write(&victim, b"secret\n").unwrap();
        let r = exec(bin, &with_out(&args, &link), false);
        assert_eq!(r.code, code, "{bin}: {}", r.stderr);
        assert!(
            r.stderr.contains("Permission denied"),
            "{bin}: {}",
            r.stderr
        );
        assert_eq!(std::fs::read(&victim).unwrap(), b"secret\n", "{bin}");
    }
}

/// `fs.protected_symlinks` switched on for as long as it lives, and put back as it was.
struct ProtectedSymlinks {
    was: Option<String>,
}

impl ProtectedSymlinks {
    const PATH: &'static str = "/proc/sys/fs/protected_symlinks";

    fn on() -> Option<ProtectedSymlinks> {
        let was = std::fs::read_to_string(Self::PATH).ok()?;
        if was.trim() != "0" {
            return Some(ProtectedSymlinks { was: None });
        }
        std::fs::write(Self::PATH, "1\n").ok()?;
        Some(ProtectedSymlinks { was: Some(was) })
    }
}

impl Drop for ProtectedSymlinks {
    fn drop(&mut self) {
        if let Some(was) = &self.was {
            let _ = std::fs::write(Self::PATH, was);
        }
    }
}

/// A 1 MiB tmpfs, unmounted on drop.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Option<Tmpfs> {
        let dir = scratch();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            skip::skip("a tmpfs mount (root)");
            return None;
        }
        Some(Tmpfs { dir })
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// A dangling link as output, on a full disk: what it names is not left truncated (it is
/// created, then removed again), the link left as it was.
#[test]
fn a_dangling_link_on_a_full_disk_leaves_nothing() {
    if !can_run("a_dangling_link_on_a_full_disk_leaves_nothing", false) {
        return;
    }
    let work = scratch();
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    for k in 0..20u64 {
        std::fs::write(src.join(format!("f{k}")), common::random(k, 128 << 10)).unwrap();
    }
    let img = work.path().join("in.img");
    let r = exec(
        MKFS,
        &[
            s("-r"),
            src.as_os_str(),
            s("-o"),
            img.as_os_str(),
            s("--no-progress"),
        ],
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let Some(full) = Tmpfs::mount() else {
        return;
    };
    let link = work.path().join("out.img");
    std::os::unix::fs::symlink(full.dir.path().join("image.bin"), &link).unwrap();
    for (bin, args, code) in writers(&src, &img) {
        let r = exec(bin, &with_out(&args, &link), false);
        assert_eq!(r.code, code, "{bin}: {}", r.stderr);
        assert!(
            r.stderr.contains("No space left on device"),
            "{bin}: {}",
            r.stderr
        );
        assert!(
            names_in(full.dir.path()).is_empty(),
            "{bin}: left {:?}",
            names_in(full.dir.path())
        );
        assert!(std::fs::symlink_metadata(&link).unwrap().is_symlink());
    }
}

/// An output that is the input, by the same name, through a link or a hard link: refused
/// with a message naming both, the input untouched. sumtool, convert and dump -e replace
/// their input atomically on purpose (documented), so they are not among them.
#[test]
fn outputs_that_are_the_input_are_refused() {
    if !can_run("outputs_that_are_the_input_are_refused", false) {
        return;
    }
    let work = scratch();
    let (src, img) = tree_and_image(work.path());
    let before = std::fs::read(&img).unwrap();
    let link = work.path().join("link.img");
    std::os::unix::fs::symlink(&img, &link).unwrap();
    let hard = work.path().join("hard.img");
    std::fs::hard_link(&img, &hard).unwrap();
    let dest = work.path().join("x");
    for same in [&img, &link, &hard] {
        let cases: Vec<(&str, Vec<&OsStr>, i32)> = vec![
            (
                MKFS,
                vec![
                    s("-r"),
                    src.as_os_str(),
                    s("-i"),
                    img.as_os_str(),
                    s("-o"),
                    same.as_os_str(),
                ],
                255,
            ),
            (
                FSCK,
                vec![img.as_os_str(), s("--repair"), same.as_os_str()],
                16,
            ),
            (DUMP, vec![s("--map"), same.as_os_str(), img.as_os_str()], 1),
            (
                DUMP,
                vec![
                    s("--extract"),
                    dest.as_os_str(),
                    s("--devtable"),
                    same.as_os_str(),
                    img.as_os_str(),
                ],
                1,
            ),
        ];
        for (bin, args, code) in cases {
            let _ = std::fs::remove_dir_all(&dest);
            let r = exec(bin, &args, false);
            assert_eq!(r.code, code, "{bin} {args:?}: {}", r.stderr);
            let named_both = r.stderr.contains(&*same.to_string_lossy())
                && r.stderr.contains(&*img.to_string_lossy());
            assert!(
                named_both && r.stderr.contains("is the input"),
                "{bin}: {}",
                r.stderr
            );
            assert!(
                std::fs::read(&img).unwrap() == before,
                "{bin} {args:?}: input changed"
            );
        }
    }
    // In place, atomically, by design: sumtool -i X -o X still works.
    let copy = work.path().join("copy.img");
    std::fs::copy(&img, &copy).unwrap();
    let r = exec(
        SUMTOOL,
        &[s("-i"), copy.as_os_str(), s("-o"), copy.as_os_str()],
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// The device table an unprivileged extraction writes by default, `DIR.devtable`, never
/// replaces an existing file: refused, telling how to name it.
#[test]
fn the_default_device_table_never_replaces_a_file() {
    if !can_run("the_default_device_table_never_replaces_a_file", true) {
        return;
    }
    let work = scratch();
    chmod(work.path(), 0o777);
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let dev = std::ffi::CString::new(src.join("null").as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod of a character device (1, 3) at a valid path.
    let rc = unsafe { libc::mknod(dev.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    assert_eq!(rc, 0, "mknod");
    let img = work.path().join("dev.img");
    let r = exec(
        MKFS,
        &[s("-r"), src.as_os_str(), s("-o"), img.as_os_str()],
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    chmod(&img, 0o644);
    let dest = work.path().join("out");
    let table = work.path().join("out.devtable");
    std::fs::write(&table, b"precious\n").unwrap();
    chmod(&table, 0o666);
    let r = exec(
        DUMP,
        &[s("--extract"), dest.as_os_str(), img.as_os_str()],
        true,
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("out.devtable") && r.stderr.contains("--devtable"),
        "{}",
        r.stderr
    );
    assert_eq!(std::fs::read(&table).unwrap(), b"precious\n");
    // Named explicitly, it is written.
    let named = work.path().join("named.devtable");
    let dest2 = work.path().join("out2");
    let r = exec(
        DUMP,
        &[
            s("--extract"),
            dest2.as_os_str(),
            s("--devtable"),
            named.as_os_str(),
            img.as_os_str(),
        ],
        true,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(std::fs::read_to_string(&named)
        .unwrap()
        .contains("/null c "));
}

/// Whether `pid` has a file open in `dir` (named, or unnamed: "/dir/#123 (deleted)").
fn has_file_open_in(pid: u32, dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    // An unnamed O_TMPFILE file shows as "DIR/#12345 (deleted)".
    rd.flatten().any(|e| {
        std::fs::read_link(e.path())
            .is_ok_and(|t| t.parent() == Some(dir) && t.to_string_lossy().ends_with(" (deleted)"))
    })
}

/// A command whose child has the default action for SIGINT and SIGTERM, whatever the test
/// runner inherited (a background job ignores SIGINT).
fn command(bin: &str) -> Command {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(bin);
    // SAFETY: signal() is async-signal-safe, as pre_exec requires.
    unsafe {
        c.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
            Ok(())
        });
    }
    c
}

/// Waits until `cond` holds (or the child ends): no fixed sleep decides the outcome.
fn wait_for(child: &mut std::process::Child, cond: impl Fn() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if cond() {
            return true;
        }
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    false
}

/// SIGINT and SIGTERM while the output is being written: the process dies of the signal and
/// the directory holds what it held before (an older output untouched), with the unnamed
/// temporary file and with the named fallback (`JFFS2_TOOLS_NO_TMPFILE`).
#[test]
fn interrupted_runs_leave_nothing_behind() {
    if !can_run("interrupted_runs_leave_nothing_behind", false) {
        return;
    }
    let work = scratch();
    let (_src, img) = tree_and_image(work.path());
    let outs = work.path().join("outs");
    std::fs::create_dir(&outs).unwrap();
    let fifo = work.path().join("input.fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo at a valid path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    let out = outs.join("out.img");
    let image = std::fs::read(&img).unwrap();
    // The tools open their output, then read their input: from a FIFO the test holds open
    // without writing all of it, so the run waits there, its temporary file open.
    let blocked: Vec<(&str, Vec<&OsStr>)> = vec![
        (
            CONVERT,
            vec![
                s("-i"),
                fifo.as_os_str(),
                s("-o"),
                out.as_os_str(),
                s("--no-progress"),
            ],
        ),
        (
            SUMTOOL,
            vec![s("-o"), out.as_os_str(), s("-i"), fifo.as_os_str()],
        ),
        (
            FSCK,
            vec![
                s("--repair"),
                out.as_os_str(),
                s("--no-progress"),
                fifo.as_os_str(),
            ],
        ),
    ];
    for named in [false, true] {
        for old in [false, true] {
            for sig in [libc::SIGINT, libc::SIGTERM] {
                for (bin, args) in &blocked {
                    let _ = std::fs::remove_file(&out);
                    if old {
                        std::fs::write(&out, b"older output\n").unwrap();
                    }
                    let before = names_in(&outs);
                    let mut cmd = command(bin);
                    cmd.args(args).stdout(Stdio::null()).stderr(Stdio::null());
                    if named {
                        cmd.env("JFFS2_TOOLS_NO_TMPFILE", "1");
                    }
                    let mut child = cmd.spawn().unwrap();
                    // Opening the write end waits for the child to open the read end.
                    let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
                    std::io::Write::write_all(&mut w, &image[..4096]).unwrap();
                    let pid = child.id();
                    let open = wait_for(&mut child, || {
                        if named {
                            names_in(&outs).iter().any(|n| n.ends_with(".tmp"))
                        } else {
                            has_file_open_in(pid, &outs)
                        }
                    });
                    if !open {
                        let _ = child.kill();
                        let _ = child.wait();
                        panic!("{bin} {args:?} named={named}: no temporary file seen");
                    }
                    // SAFETY: kill of our own child.
                    unsafe { libc::kill(pid as libc::pid_t, sig) };
                    let st = child.wait().unwrap();
                    drop(w);
                    assert_eq!(st.signal(), Some(sig), "{bin} {args:?}: {st:?}");
                    assert_eq!(
                        names_in(&outs),
                        before,
                        "{bin} {args:?} named={named} signal {sig}: left something"
                    );
                    if old {
                        assert_eq!(std::fs::read(&out).unwrap(), b"older output\n");
                    }
                }
            }
        }
    }
}

/// jffs2-mkfs interrupted while it writes (a tree large enough to take a while: the input
/// is doubled until the signal arrives before the end, never a vacuous pass).
#[test]
fn an_interrupted_mkfs_leaves_nothing_behind() {
    if !can_run("an_interrupted_mkfs_leaves_nothing_behind", false) {
        return;
    }
    let work = scratch();
    let src = work.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let outs = work.path().join("outs");
    std::fs::create_dir(&outs).unwrap();
    let out = outs.join("out.img");
    let mut files = 0u64;
    let mut todo = vec![false, true];
    for round in 0..6 {
        // 4, 8, 16 ... 128 MiB of incompressible data.
        while files < 16 << round {
            std::fs::write(
                src.join(format!("f{files}")),
                common::random(files, 256 << 10),
            )
            .unwrap();
            files += 1;
        }
        let mut left = Vec::new();
        for named in todo {
            let mut cmd = command(MKFS);
            cmd.args([s("-r"), src.as_os_str(), s("-o"), out.as_os_str()])
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if named {
                cmd.env("JFFS2_TOOLS_NO_TMPFILE", "1");
            }
            let mut child = cmd.spawn().unwrap();
            let pid = child.id();
            let open = wait_for(&mut child, || {
                if named {
                    names_in(&outs).iter().any(|n| n.ends_with(".tmp"))
                } else {
                    has_file_open_in(pid, &outs)
                }
            });
            // SAFETY: kill of our own child (not yet waited for, so its pid is still ours).
            unsafe { libc::kill(pid as libc::pid_t, libc::SIGTERM) };
            let st = child.wait().unwrap();
            let names = names_in(&outs);
            if !open || st.signal() != Some(libc::SIGTERM) || names == ["out.img"] {
                // Finished before the signal: again with a larger tree.
                let _ = std::fs::remove_file(&out);
                left.push(named);
                continue;
            }
            assert!(names.is_empty(), "named={named}: left {names:?}");
        }
        if left.is_empty() {
            return;
        }
        todo = left;
    }
    panic!("jffs2-mkfs always finished before the signal, even on 128 MiB");
}

/// Standard output on a full device: help, version, listings and reports say so and exit
/// with a status their help documents; never a panic (exit 101) or a silent failure.
#[test]
fn writing_to_a_full_standard_output_is_an_error_with_a_message() {
    let work = scratch();
    let (src, img) = tree_and_image(work.path());
    let links = work.path().join("names");
    std::fs::create_dir(&links).unwrap();
    for (name, bin) in [
        ("mkfs.jffs2", MKFS),
        ("sumtool", SUMTOOL),
        ("jffs2dump", DUMP),
        ("fsck.jffs2", FSCK),
    ] {
        std::os::unix::fs::symlink(bin, links.join(name)).unwrap();
    }
    let mkfs_as = links.join("mkfs.jffs2");
    let sumtool_as = links.join("sumtool");
    let dump_as = links.join("jffs2dump");
    let fsck_as = links.join("fsck.jffs2");
    let out = work.path().join("out.img");
    let (m, su, d, f) = (
        mkfs_as.to_str().unwrap(),
        sumtool_as.to_str().unwrap(),
        dump_as.to_str().unwrap(),
        fsck_as.to_str().unwrap(),
    );
    let cases: Vec<(&str, Vec<&OsStr>, i32)> = vec![
        (MKFS, vec![s("--help")], 255),
        (MKFS, vec![s("--version")], 255),
        (MKFS, vec![s("--list-compressors")], 255),
        (m, vec![s("--help")], 255),
        (
            MKFS,
            vec![s("-v"), s("-r"), src.as_os_str(), s("-o"), out.as_os_str()],
            255,
        ),
        (SUMTOOL, vec![s("--help")], 255),
        (SUMTOOL, vec![s("--version")], 255),
        (su, vec![s("--help")], 255),
        (
            SUMTOOL,
            vec![s("-v"), s("-i"), img.as_os_str(), s("-o"), out.as_os_str()],
            255,
        ),
        (CONVERT, vec![s("--help")], 8),
        (CONVERT, vec![s("--version")], 8),
        (
            CONVERT,
            vec![
                s("--json"),
                s("-i"),
                img.as_os_str(),
                s("-o"),
                out.as_os_str(),
            ],
            8,
        ),
        (DUMP, vec![s("--help")], 1),
        (DUMP, vec![s("--version")], 1),
        (d, vec![s("--help")], 1),
        (DUMP, vec![s("-c"), img.as_os_str()], 1),
        (FSCK, vec![s("--help")], 8),
        (FSCK, vec![s("--version")], 8),
        (f, vec![s("--help")], 8),
        (FSCK, vec![img.as_os_str()], 8),
        (FSCK, vec![s("--json"), img.as_os_str()], 8),
    ];
    for (bin, args, code) in cases {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let o = Command::new(bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(full)
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let r = ran(o);
        assert_eq!(r.code, code, "{bin} {args:?}: {}", r.stderr);
        assert!(
            r.stderr
                .contains("writing to standard output: No space left on device")
                && !r.stderr.contains("panicked"),
            "{bin} {args:?}: {}",
            r.stderr
        );
    }
    assert!(ran(Command::new(MKFS).arg("--help").output().unwrap())
        .stdout
        .contains("Usage"));
}

/// The errno of a failed output reaches the message: "Is a directory" for a directory (or
/// `name/`), "No such file or directory" for a missing directory, "Permission denied" for a
/// directory the user may not write to, "Read-only file system" (never "error 0 (Success)"
/// or "Not a directory").
#[test]
fn output_errors_say_what_the_kernel_said() {
    if !can_run("output_errors_say_what_the_kernel_said", true) {
        return;
    }
    let work = scratch();
    chmod(work.path(), 0o755);
    let (src, img) = tree_and_image(work.path());
    chmod(&img, 0o644);
    let dir = work.path().join("adir");
    std::fs::create_dir(&dir).unwrap();
    let locked = work.path().join("locked");
    std::fs::create_dir(&locked).unwrap();
    let mut slash = dir.as_os_str().to_owned();
    slash.push("/");
    let mut new_slash = work.path().join("new").into_os_string();
    new_slash.push("/");
    let cases: Vec<(PathBuf, &str, bool)> = vec![
        (dir.clone(), "Is a directory", false),
        (PathBuf::from(slash), "Is a directory", false),
        (PathBuf::from(new_slash), "Is a directory", false),
        (
            work.path().join("missing/out.img"),
            "No such file or directory",
            false,
        ),
        (locked.join("out.img"), "Permission denied", true),
    ];
    for (out, says, nobody) in &cases {
        for (bin, args, code) in writers(&src, &img) {
            let r = exec(bin, &with_out(&args, out), *nobody);
            assert_eq!(r.code, code, "{bin} {}: {}", out.display(), r.stderr);
            assert!(
                r.stderr.contains(says)
                    && r.stderr.contains(&*out.to_string_lossy())
                    && !r.stderr.contains("error 0 (Success)"),
                "{bin} {}: want {says:?}: {}",
                out.display(),
                r.stderr
            );
        }
    }
    assert!(names_in(&locked).is_empty() && names_in(&dir).is_empty());
}

/// `-o /dev/stdout` into a pipe still streams the image (a link into /proc the kernel
/// follows to a pipe: written directly), byte for byte what `-o FILE` writes.
#[test]
fn dev_stdout_into_a_pipe_still_streams() {
    let work = scratch();
    let (src, img) = tree_and_image(work.path());
    let o = Command::new(MKFS)
        .args([s("-r"), src.as_os_str(), s("-o"), s("/dev/stdout")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        o.stdout == std::fs::read(&img).unwrap(),
        "not the same image"
    );
    let o = Command::new(SUMTOOL)
        .args([s("-i"), img.as_os_str(), s("-o"), s("/dev/stdout")])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.len() >= std::fs::metadata(&img).unwrap().len() as usize);
}

/// Standard output closed by its reader (`| head` that has seen enough): quiet, no panic,
/// a non-zero status.
#[test]
fn a_closed_standard_output_is_quiet() {
    use std::os::fd::{FromRawFd, OwnedFd};
    let work = scratch();
    let (_src, img) = tree_and_image(work.path());
    let cases: Vec<(&str, Vec<&OsStr>)> = vec![
        (MKFS, vec![s("--help")]),
        (MKFS, vec![s("--version")]),
        (SUMTOOL, vec![s("--help")]),
        (CONVERT, vec![s("--help")]),
        (DUMP, vec![s("--help")]),
        (DUMP, vec![s("-c"), img.as_os_str()]),
        (FSCK, vec![s("--help")]),
        (FSCK, vec![s("--json"), img.as_os_str()]),
    ];
    for (bin, args) in cases {
        let mut fds = [0; 2];
        // SAFETY: pipe2 fills two descriptors, which are then owned here.
        assert_eq!(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }, 0);
        // SAFETY: fresh descriptors from pipe2, each owned once.
        let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // The reader is gone before anything is written.
        drop(r);
        let o = Command::new(bin)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::from(w))
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !o.status.success() && o.status.code() != Some(101) && err.is_empty(),
            "{bin} {args:?}: {:?} {err}",
            o.status
        );
    }
}
