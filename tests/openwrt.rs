//! OpenWrt's JFFS2 build, unchanged, through the drop-in names: `include/image.mk`
//! runs
//!
//! ```text
//! mkfs.jffs2 --pad --big-endian|--little-endian --squash-uids -v [-X rtime|-x rtime]
//!     [-X zlib|-x zlib] [-X lzma --compression-mode=size | -x lzma]
//!     -D device_table.txt -e 64KiB -o OUT -d DIR
//! ```
//!
//! under fakeroot, then appends the end-of-filesystem marker `de ad c0 de`. Here: every
//! variant through a `mkfs.jffs2` symlink to jffs2-mkfs; without lzma, the image of Debian's
//! mkfs.jffs2 byte for byte; with lzma, nodes of compressor 8 that Python's own LZMA decoder
//! (`tests/openwrt_lzma.py`) turns back into the source files; then the marker: jffs2dump's
//! text as Debian's jffs2dump prints it, fsck's notes, the listing, sumtool and convert
//! keeping it, and `jffs2-convert -x lzma` making an image stock Linux reads. The kernel
//! test mounts the results with Debian's Linux (the harness of `tests/kernel_harness.rs`).

mod common;
#[path = "common/kernel.rs"]
mod kernel;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{
    explain_difference, jffs2dump_path, mkfs_jffs2, random, require_mtd_utils, require_root, run,
    scratch, set_mtime, text, Output, FIXED_MTIME, OURS,
};

const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const SUMTOOL: &str = env!("CARGO_BIN_EXE_jffs2-sumtool");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");
const MARKER: [u8; 4] = [0xde, 0xad, 0xc0, 0xde];
const ES: usize = 65536;

/// A device table in makedevs format, as OpenWrt's `include/device_table.txt` (`-` fields
/// stop mkfs.jffs2's parsing: defaults).
const DEVICE_TABLE: &str = "\
# <name>\t<type>\t<mode>\t<uid>\t<gid>\t<major>\t<minor>\t<start>\t<inc>\t<count>
/dev\t\td\t755\t0\t0\t-\t-\t-\t-\t-
/dev/console\tc\t600\t0\t0\t5\t1\t-\t-\t-
/dev/null\tc\t666\t0\t0\t1\t3\t0\t0\t-
/dev/mtdblock\tb\t640\t0\t0\t31\t0\t0\t1\t4
/tmp\t\td\t1777\t0\t0\t-\t-\t-\t-\t-
/etc/shadow\tf\t600\t0\t0\t-\t-\t-\t-\t-
";

/// A small OpenWrt-like root: configuration text, "binaries", a web page, a large log,
/// incompressible data, links; owners other than root (for --squash-uids).
fn build_root(root: &Path) {
    let w = |rel: &str, data: &[u8], mode: u32| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, data).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    w(
        "etc/config/network",
        b"config interface 'loopback'\n\toption device 'lo'\n\toption proto 'static'\n\
          \toption ipaddr '127.0.0.1'\n\nconfig interface 'lan'\n\toption device 'br-lan'\n\
          \toption proto 'static'\n\toption ipaddr '192.168.1.1'\n\toption netmask '255.255.255.0'\n",
        0o644,
    );
    w("etc/config/system", &text(90, 900), 0o644);
    w("etc/shadow", b"root:::0:99999:7:::\n", 0o600);
    w("etc/banner", &text(91, 3000), 0o644);
    w(
        "bin/busybox",
        &[text(92, 70_000), random(93, 9000)].concat(),
        0o755,
    );
    w("lib/libc.so", &text(94, 33_000), 0o755);
    w("www/index.html", &text(95, 12_345), 0o644);
    w("usr/share/log.txt", &text(96, 130_000), 0o644);
    w("usr/share/blob.bin", &random(97, 20_000), 0o644);
    w("etc/empty", b"", 0o644);
    std::os::unix::fs::symlink("../bin/busybox", root.join("bin/sh")).unwrap();
    std::fs::create_dir_all(root.join("sbin")).unwrap();
    std::os::unix::fs::symlink("../bin/busybox", root.join("sbin/init")).unwrap();
    std::fs::create_dir_all(root.join("overlay")).unwrap();
    let own = |rel: &str| {
        let p =
            std::ffi::CString::new(root.join(rel).into_os_string().into_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::lchown(p.as_ptr(), 1000, 1000) }, 0);
    };
    own("www/index.html");
    own("etc/config/system");
    fn fix(p: &Path) {
        if std::fs::symlink_metadata(p).unwrap().is_dir() {
            for e in std::fs::read_dir(p).unwrap() {
                fix(&e.unwrap().path());
            }
        }
        set_mtime(p, FIXED_MTIME);
    }
    fix(root);
}

/// The work directory: the tree, the device table, the drop-in names.
struct Work {
    _dir: tempfile::TempDir,
    dir: PathBuf,
}

impl Work {
    fn new() -> Work {
        let d = scratch();
        let dir = d.path().to_path_buf();
        std::fs::create_dir(dir.join("root")).unwrap();
        build_root(&dir.join("root"));
        // The device nodes exist in fakeroot's view only, as in a build; the table then
        // updates them (entries it would create get time(NULL), which two runs may not share).
        let script = format!(
            "set -e; cd root; mkdir -p dev tmp
             mknod dev/console c 5 1; mknod dev/null c 1 3
             for i in 0 1 2 3; do mknod dev/mtdblock$i b 31 $i; done
             find . -exec touch -h -d @{FIXED_MTIME} {{}} +"
        );
        let mut c = Command::new("fakeroot");
        c.args(["-s", "state", "sh", "-c", &script])
            .current_dir(&dir);
        let o = run(c);
        assert_eq!(
            o.status,
            0,
            "fakeroot (apt-get install fakeroot): {}",
            o.stderr_text()
        );
        std::fs::write(dir.join("device_table.txt"), DEVICE_TABLE).unwrap();
        std::fs::create_dir(dir.join("bin")).unwrap();
        std::os::unix::fs::symlink(OURS, dir.join("bin/mkfs.jffs2")).unwrap();
        std::os::unix::fs::symlink(DUMP, dir.join("bin/jffs2dump")).unwrap();
        Work { _dir: d, dir }
    }

    fn p(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// OpenWrt's mkfs.jffs2 command line with `opts`, under fakeroot, by `prog`.
    fn mkfs(&self, prog: &Path, endian: &str, opts: &[&str], out: &str) -> Output {
        let mut c = Command::new("fakeroot");
        c.args(["-i", "state", "--"])
            .arg(prog)
            .args(["--pad", endian, "--squash-uids", "-v"])
            .args(opts)
            .arg("-D")
            .arg(self.p("device_table.txt"))
            .args(["-e", "64KiB", "-o"])
            .arg(self.p(out))
            .arg("-d")
            .arg(self.p("root"))
            .current_dir(&self.dir)
            .env("LC_ALL", "C")
            .env_remove("SOURCE_DATE_EPOCH")
            .stdin(Stdio::null());
        let o = run(c);
        assert_eq!(
            o.status,
            0,
            "{} {opts:?} (fakeroot: apt-get install fakeroot): {}",
            prog.display(),
            o.stderr_text()
        );
        o
    }

    /// Ours, through the `mkfs.jffs2` name.
    fn ours(&self, endian: &str, opts: &[&str], out: &str) -> Output {
        self.mkfs(&self.p("bin/mkfs.jffs2"), endian, opts, out)
    }

    /// `cp A B && echo -ne '\xde\xad\xc0\xde' >> B`.
    fn with_marker(&self, from: &str, to: &str) -> u64 {
        let mut v = std::fs::read(self.p(from)).unwrap();
        let at = v.len() as u64;
        v.extend_from_slice(&MARKER);
        std::fs::write(self.p(to), v).unwrap();
        at
    }
}

fn tool(prog: &str, args: &[&Path]) -> Output {
    let mut c = Command::new(prog);
    c.args(args).env("LC_ALL", "C").stdin(Stdio::null());
    run(c)
}

fn cmd(prog: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Output {
    let mut c = Command::new(prog);
    c.args(args).env("LC_ALL", "C").stdin(Stdio::null());
    run(c)
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// `jffs2-dump --list` (the files Linux shows).
fn list(img: &Path) -> String {
    let o = cmd(DUMP, &["--erase-size=64KiB", "--list", s(img)]);
    assert_eq!(o.status, 0, "--list {}: {}", img.display(), o.stderr_text());
    o.stdout_text()
}

/// The LZMA nodes of `img` checked by Python's decoder against the source tree; returns
/// their number.
fn python_lzma(img: &Path, big: bool, root: &Path) -> usize {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/openwrt_lzma.py");
    let o = cmd(
        "python3",
        &[
            s(&script),
            s(img),
            if big { "big" } else { "little" },
            s(root),
        ],
    );
    assert_eq!(
        o.status,
        0,
        "python3 openwrt_lzma.py {}: {}{}",
        img.display(),
        o.stdout_text(),
        o.stderr_text()
    );
    o.stdout_text()
        .trim()
        .strip_prefix("lzma nodes: ")
        .and_then(|r| r.strip_suffix(" verified"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", o.stdout_text()))
}

/// Every regular file of `tree` has the same bytes under `extracted`.
fn same_files(tree: &Path, extracted: &Path) -> usize {
    let mut n = 0;
    for e in std::fs::read_dir(tree).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let q = extracted.join(e.file_name());
        let t = e.file_type().unwrap();
        if t.is_dir() {
            n += same_files(&p, &q);
        } else if t.is_file() && std::fs::symlink_metadata(&q).is_ok_and(|m| !m.is_file()) {
            // A device node in fakeroot's view (a plain file on the host), extracted as
            // the device it is: never read it.
        } else if t.is_file() {
            assert_eq!(
                std::fs::read(&p).unwrap(),
                std::fs::read(&q).unwrap_or_default(),
                "{}",
                q.display()
            );
            n += 1;
        }
    }
    n
}

#[test]
fn openwrt_command_lines() {
    if !require_root() || !require_mtd_utils() {
        return;
    }
    let w = Work::new();
    let big = "--big-endian";
    // Without lzma enabled: Debian's mkfs.jffs2 without the lzma option, byte for byte; the
    // -v listing too. The statistics name lzma at OpenWrt's priorities, as OpenWrt's do.
    let plain: [(&[&str], &[&str]); 3] = [
        (
            &["-X", "rtime", "-X", "zlib", "-x", "lzma"],
            &["-X", "rtime", "-X", "zlib"],
        ),
        (
            &["-X", "rtime", "-x", "zlib", "-x", "lzma"],
            &["-X", "rtime", "-x", "zlib"],
        ),
        (
            &["-x", "rtime", "-X", "zlib", "-x", "lzma"],
            &["-x", "rtime", "-X", "zlib"],
        ),
    ];
    for (k, (ours, theirs)) in plain.iter().enumerate() {
        let (a, b) = (format!("ref{k}.img"), format!("our{k}.img"));
        let r = w.mkfs(mkfs_jffs2(), big, theirs, &a);
        let o = w.ours(big, ours, &b);
        if let Some(d) = explain_difference(&w.p(&a), &w.p(&b), true) {
            panic!("{ours:?}: {d}");
        }
        assert_eq!(o.stdout_text(), r.stdout_text(), "{ours:?}: -v listing");
        assert!(
            o.stderr_text().contains("      zlib (prio:80) ")
                && o.stderr_text()
                    .contains("      lzma (prio:70) - compr: 0 blocks (0/0)"),
            "{}",
            o.stderr_text()
        );
        assert_eq!(std::fs::read(w.p(&b)).unwrap().len() % ES, 0, "--pad");
    }
    let reference = list(&w.p("our0.img"));
    assert!(reference.contains("dev/console"), "{reference}");

    // -X lzma --compression-mode=size: LZMA nodes, each decoded by Python to the source
    // bytes; the same files as without lzma.
    let lz: [(&str, &[&str]); 3] = [
        (
            big,
            &[
                "-X",
                "rtime",
                "-X",
                "zlib",
                "-X",
                "lzma",
                "--compression-mode=size",
            ],
        ),
        (
            big,
            &[
                "-x",
                "rtime",
                "-x",
                "zlib",
                "-X",
                "lzma",
                "--compression-mode=size",
            ],
        ),
        (
            "--little-endian",
            &[
                "-X",
                "rtime",
                "-X",
                "zlib",
                "-X",
                "lzma",
                "--compression-mode=size",
            ],
        ),
    ];
    let extracted = w.p("extracted");
    for (k, (endian, opts)) in lz.iter().enumerate() {
        let name = format!("lzma{k}.img");
        let o = w.ours(endian, opts, &name);
        let img = w.p(&name);
        let n = python_lzma(&img, *endian == big, &w.p("root"));
        assert!(n > 20, "{opts:?}: {n} lzma nodes");
        assert!(o
            .stderr_text()
            .contains(&format!("      lzma (prio:70) + compr: {n} blocks")));
        assert_eq!(list(&img), reference, "{opts:?}");
        let _ = std::fs::remove_dir_all(&extracted);
        let x = cmd(
            DUMP,
            &["--erase-size=64KiB", "--extract", s(&extracted), s(&img)],
        );
        assert_eq!(x.status, 0, "{}", x.stderr_text());
        assert!(same_files(&w.p("root"), &extracted) >= 10);
        // fsck verifies them and says what they are.
        let f = tool(FSCK, &[&img]);
        assert_eq!(f.status, 0, "{}", f.stdout_text());
        assert!(
            f.stdout_text().contains("INFO lzma-compression -: "),
            "{}",
            f.stdout_text()
        );
    }
    // The lzma-only image decodes with nothing but lzma (and none for the random data).
    let info = cmd(DUMP, &["--info", s(&w.p("lzma1.img"))]).stdout_text();
    assert!(info.contains("compressors:      lzma "), "{info}");
    assert!(!info.contains("zlib") && !info.contains("rtime"), "{info}");
}

#[test]
fn end_of_filesystem_marker() {
    if !require_root() || !require_mtd_utils() {
        return;
    }
    let w = Work::new();
    let big = "--big-endian";
    w.ours(
        big,
        &[
            "-X",
            "rtime",
            "-X",
            "zlib",
            "-X",
            "lzma",
            "--compression-mode=size",
        ],
        "lzma.img",
    );
    w.ours(
        big,
        &["-X", "rtime", "-X", "zlib", "-x", "lzma"],
        "zlib.img",
    );
    let reference = list(&w.p("zlib.img"));
    for base in ["lzma", "zlib"] {
        let marked = format!("{base}.marked.img");
        let at = w.with_marker(&format!("{base}.img"), &marked);
        let img = w.p(&marked);
        assert_eq!(at % ES as u64, 0);

        // jffs2dump -c under the mtd-utils name: Debian's text, byte for byte.
        for args in [&["-c", "-b"][..], &["-c", "-v", "-b"]] {
            let mut a: Vec<&str> = args.to_vec();
            a.push(s(&img));
            let r = cmd(jffs2dump_path(), &a);
            let o = cmd(w.p("bin/jffs2dump"), &a);
            assert_eq!(
                (o.status, o.stdout_text()),
                (r.status, r.stdout_text()),
                "{a:?}"
            );
            assert_eq!(o.stderr_text(), r.stderr_text(), "{a:?}");
            assert!(r.stdout_text().contains(&format!("at  0x{at:08x}, 0xdead")));
        }

        // The files are those before the marker.
        assert_eq!(list(&img), reference, "{base}");
        let j = cmd(DUMP, &["--erase-size=64KiB", "--json", s(&img)]);
        let v: serde_json::Value = serde_json::from_str(&j.stdout_text()).unwrap();
        assert_eq!(v["end_marker"], at);
        assert!(v["gaps"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["offset"] == at && g["kind"] == "end-marker" && g["length"] == 4));

        // fsck: consistent, the marker an informational finding at its offset.
        let f = tool(FSCK, &[&img]);
        assert_eq!(f.status, 0, "{}", f.stdout_text());
        let out = f.stdout_text();
        assert!(
            out.contains(&format!(
                "INFO end-marker 0x{at:08x}: OpenWrt's end-of-filesystem marker"
            )),
            "{out}"
        );
        assert!(
            !out.contains("garbage") && !out.contains("WARNING"),
            "{out}"
        );
        assert_eq!(out.contains("lzma-compression"), base == "lzma", "{out}");
        let k = cmd(FSCK, &["--kernel-log", s(&img)]).stdout_text();
        assert!(
            k.starts_with(&format!(
                "jffs2_scan_eraseblock(): End of filesystem marker found at 0x{at:x}\n"
            )),
            "{k}"
        );

        // sumtool keeps the marker, at the block after its output.
        let sum = w.p(&format!("{base}.sum.img"));
        let o = cmd(
            SUMTOOL,
            &["-i", s(&img), "-o", s(&sum), "-e", "64KiB", "-b"],
        );
        assert_eq!(o.status, 0, "{}", o.stderr_text());
        let out = std::fs::read(&sum).unwrap();
        assert_eq!(out.len() % ES, 4);
        assert_eq!(out[out.len() - 4..], MARKER);
        assert_eq!(list(&sum), reference);
        assert_eq!(tool(FSCK, &[&sum]).status, 0);
    }

    // convert -x lzma: an image without lzma (stock Linux reads it), the same files, the
    // marker kept; -X lzma -m size makes lzma nodes of a zlib image.
    let conv = w.p("converted.img");
    let o = cmd(
        CONVERT,
        &[
            "-i",
            s(&w.p("lzma.marked.img")),
            "-o",
            s(&conv),
            "-x",
            "lzma",
        ],
    );
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert_eq!(python_lzma(&conv, true, &w.p("root")), 0);
    assert_eq!(list(&conv), reference);
    let out = std::fs::read(&conv).unwrap();
    assert_eq!((out.len() % ES, &out[out.len() - 4..]), (4, &MARKER[..]));
    let back = w.p("back.img");
    let o = cmd(
        CONVERT,
        &[
            "-i",
            s(&w.p("zlib.marked.img")),
            "-o",
            s(&back),
            "-X",
            "lzma",
            "-m",
            "size",
        ],
    );
    assert_eq!(o.status, 0, "{}", o.stderr_text());
    assert!(python_lzma(&back, true, &w.p("root")) > 20);
    assert_eq!(list(&back), reference);
}

/// Debian's Linux (no LZMA, no end marker) mounts what OpenWrt's build appends the marker to,
/// and the sumtool and `convert -x lzma` outputs of marked images, showing the files of
/// Debian's mkfs.jffs2 image; an LZMA image mounts but its LZMA files cannot be read.
#[test]
fn stock_linux_reads_the_conversions() {
    if !kernel::kernel_available() {
        return;
    }
    if !require_root() || !require_mtd_utils() {
        return;
    }
    let w = Work::new();
    let le = "--little-endian";
    w.mkfs(mkfs_jffs2(), le, &["-X", "rtime", "-X", "zlib"], "ref.img");
    w.ours(
        le,
        &["-X", "rtime", "-X", "zlib", "-X", "lzma", "-m", "size"],
        "lzma.img",
    );
    w.with_marker("ref.img", "ref.marked.img");
    w.with_marker("lzma.img", "lzma.marked.img");
    let sum = w.p("ref.sum.img");
    assert_eq!(
        cmd(
            SUMTOOL,
            &[
                "-i",
                s(&w.p("ref.marked.img")),
                "-o",
                s(&sum),
                "-e",
                "64KiB",
                "-l"
            ]
        )
        .status,
        0
    );
    let conv = w.p("lzma.zlib.img");
    assert_eq!(
        cmd(
            CONVERT,
            &[
                "-i",
                s(&w.p("lzma.marked.img")),
                "-o",
                s(&conv),
                "-x",
                "lzma"
            ]
        )
        .status,
        0
    );
    let image = |id: &str, path: PathBuf| kernel::Image {
        id: id.into(),
        path,
        erase: ES as u32,
        partition: Some(1 << 20),
        expect_dir: None,
        ignore: vec![],
    };
    let images = [
        image("debian", w.p("ref.img")),
        image("debian+marker", w.p("ref.marked.img")),
        image("sumtool", sum),
        image("convert -x lzma", conv),
        image("lzma+marker", w.p("lzma.marked.img")),
    ];
    let (_, result) = kernel::harness(&w.dir, "run", &images);
    for b in 1..4 {
        let text = kernel::compare_two(&result, 0, b);
        eprintln!("{text}");
        assert!(
            text.contains("mount_a=True mount_b=True") && text.contains(" diffs=0 bad_a=0"),
            "{text}"
        );
        // The only complaint: the marker, 4 bytes of dirt to stock Linux.
        for l in text.lines().filter(|l| l.contains("KMSG")) {
            assert!(
                l.contains("Magic bitmask 0x1985 not found at 0x")
                    && l.ends_with(": 0xadde instead"),
                "{text}"
            );
        }
    }
    let text = kernel::compare_two(&result, 0, 4);
    eprintln!("{text}");
    assert!(text.contains("mount_b=True"), "{text}");
    assert!(
        text.contains("compression type 0x08 not available"),
        "{text}"
    );
}
