//! The build-system guides in `docs/integration/`, run.
//!
//! Every ```` ```sh ```` block of a guide is preceded by `<!-- test: ID -->` and is run here, as
//! the build system runs it: with `sh -e -c` (`bash` for OpenWrt, whose make uses bash), in a
//! work directory, with the build system's variables (`IMAGE_ROOTFS`, `TARGET_DIR`,
//! `JFFS2_OPTS`, …) in the environment, under `fakeroot` where the build system uses fakeroot
//! or pseudo, and with `PATH` starting with a directory of drop-in names:
//!
//! * ours: `mkfs.jffs2`, `sumtool`, `jffs2dump`, `jffs2reader`, `fsck.jffs2` and the
//!   `jffs2-*` names, symbolic links to the binaries under test;
//! * Debian's: `mkfs.jffs2`, `sumtool`, `jffs2dump`, `jffs2reader`, links to mtd-utils.
//!
//! `mkfs.jffs2` on both sides through a shim that runs the real one (`INPUT_TIMES`).
//!
//! `/usr/sbin` and `/sbin` are not in `PATH`, so nothing falls back to mtd-utils unnoticed.
//! A "parity" block runs twice, with our names and with Debian's, on the same source tree, in
//! two work directories; what each run created or changed must be the same: byte-identical
//! files (summarised images, which our sumtool lays out differently on purpose, must hold the
//! same nodes and check clean with a summary in every block), the same exit status, and the
//! same stdout and stderr (paths of the work directory masked; the warnings our tools add,
//! listed per block, removed — and required to be there). An "ours" block runs only with our
//! names (what the guides suggest beyond mtd-utils) and has its own check. Text files a guide
//! marks `<!-- test-file: PATH -->` are written into the work directory first.
//!
//! `every_guide_block_is_run` checks the bookkeeping: every sh block is annotated and run by a
//! session here, every block of a session exists, and each guide quotes the build system's
//! lines verbatim (`QUOTED`). Each block must also contain its build system's exact command
//! line (`Step::contains`).
//!
//! Both runs of a parity block see one fixed clock (libfaketime, `FIXED_CLOCK`): mkfs.jffs2
//! stamps the entries a device table creates with the current time. And both tools image the
//! same host mtimes: a tree a block makes itself gets the kernel's times, which Debian's
//! `mkfs.jffs2` is given as ours saw them (`INPUT_TIMES`).
//!
//! Needs root (the tree has a fifo, foreign owners and a setuid file), mtd-utils, fakeroot,
//! libfaketime and genimage (`scripts/install-test-deps.sh`); without one the test is skipped
//! loudly (tests/common/skip.rs), and fails under `CI=true`.

mod common;
#[path = "common/sumtool.rs"]
mod sumtool_common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{CString, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{mtd_tool, nodes, random, require_root, set_mtime, text, Endian, NODETYPE_SUMMARY};
use sumtool_common::payload_nodes;

// ---------------------------------------------------------------------------------------
// Guides
// ---------------------------------------------------------------------------------------

const GUIDES: &[&str] = &[
    "yocto.md",
    "buildroot.md",
    "openwrt.md",
    "genimage.md",
    "factory.md",
];

fn guide_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/integration")
}

/// A parsed guide: its runnable blocks by id, the files it asks to write, and the sh blocks
/// that carry no annotation (an error).
struct Guide {
    name: &'static str,
    text: String,
    blocks: BTreeMap<String, String>,
    files: Vec<(String, String)>,
    unannotated: Vec<String>,
}

fn parse_guide(name: &'static str) -> Guide {
    let path = guide_dir().join(name);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    let mut g = Guide {
        name,
        text: text.clone(),
        blocks: BTreeMap::new(),
        files: Vec::new(),
        unannotated: Vec::new(),
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    let mut prev = "";
    while i < lines.len() {
        let line = lines[i];
        if let Some(info) = line.strip_prefix("```") {
            let info = info.trim().to_string();
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && lines[end].trim_end() != "```" {
                end += 1;
            }
            assert!(
                end < lines.len(),
                "{name}: unterminated code block at line {i}"
            );
            let body: String = lines[start..end].iter().map(|l| format!("{l}\n")).collect();
            let note = prev.trim();
            if let Some(id) = note
                .strip_prefix("<!-- test:")
                .and_then(|r| r.strip_suffix("-->"))
            {
                assert_eq!(info, "sh", "{name}: block {} is not an sh block", id.trim());
                let old = g.blocks.insert(id.trim().to_string(), body);
                assert!(old.is_none(), "{name}: block id {} used twice", id.trim());
            } else if let Some(file) = note
                .strip_prefix("<!-- test-file:")
                .and_then(|r| r.strip_suffix("-->"))
            {
                g.files.push((file.trim().to_string(), body));
            } else if info == "sh" {
                g.unannotated
                    .push(format!("line {}: {}", i + 1, lines[start.min(end - 1)]));
            }
            i = end + 1;
            prev = "";
            continue;
        }
        if !line.trim().is_empty() {
            prev = line;
        }
        i += 1;
    }
    g
}

/// Lines each guide must quote verbatim from the build system it describes (its source, as
/// `docs/spec/ecosystem.md` §2 records them, or as the tool logs them).
const QUOTED: &[(&str, &str)] = &[
    (
        "yocto.md",
        r#"IMAGE_CMD:jffs2 = "mkfs.jffs2 --root=${IMAGE_ROOTFS} --faketime --output=${IMGDEPLOYDIR}/${IMAGE_NAME}.jffs2 ${EXTRA_IMAGECMD}""#,
    ),
    (
        "yocto.md",
        r#"EXTRA_IMAGECMD:jffs2 ?= "--pad ${JFFS2_ENDIANNESS} --eraseblock=${JFFS2_ERASEBLOCK} --no-cleanmarkers""#,
    ),
    ("yocto.md", r#"JFFS2_ERASEBLOCK ?= "0x40000""#),
    (
        "yocto.md",
        r#"CONVERSION_CMD:sum = "sumtool -i ${IMAGE_NAME}.${type} -o ${IMAGE_NAME}.${type}.sum ${JFFS2_SUM_EXTRA_ARGS}""#,
    ),
    ("yocto.md", r#"JFFS2_SUM_EXTRA_ARGS ?= """#),
    (
        "yocto.md",
        r#"do_image_jffs2[depends] += "mtd-utils-native:do_populate_sysroot""#,
    ),
    (
        "yocto.md",
        r#"JFFS2_RWFS_CMD = "mkfs.jffs2 --root=jffs2 --faketime --output=rwfs.jffs2""#,
    ),
    (
        "buildroot.md",
        "JFFS2_OPTS = -e $(BR2_TARGET_ROOTFS_JFFS2_EBSIZE) --with-xattr",
    ),
    (
        "buildroot.md",
        "SUMTOOL_OPTS = -e $(BR2_TARGET_ROOTFS_JFFS2_EBSIZE)",
    ),
    (
        "buildroot.md",
        "\t$(MKFS_JFFS2) $(JFFS2_OPTS) -d $(TARGET_DIR) -o $@.nosummary",
    ),
    (
        "buildroot.md",
        "\t$(SUMTOOL) $(SUMTOOL_OPTS) -i $@.nosummary -o $@",
    ),
    ("buildroot.md", "\t$(MKFS_JFFS2) $(JFFS2_OPTS) -d $(TARGET_DIR) -o $@"),
    ("buildroot.md", "MKFS_JFFS2 = $(HOST_DIR)/sbin/mkfs.jffs2"),
    ("buildroot.md", "SUMTOOL = $(HOST_DIR)/sbin/sumtool"),
    (
        "openwrt.md",
        "\t$(STAGING_DIR_HOST)/bin/mkfs.jffs2 \\\n\t\t$(2) \\\n\t\t-e $(patsubst %k,%KiB,$(1)) \\\n\t\t-o $@ -d $(call mkfs_target_dir,$(3)) \\\n\t\t-v 2>&1 1>/dev/null | awk '/^.+$$$$/'",
    ),
    (
        "openwrt.md",
        "\t$(call Image/mkfs/jffs2/sub-raw,$(1),--pad $(2),$(3))\n\t$(call add_jffs2_mark,$@)",
    ),
    ("openwrt.md", "\techo -ne '\\xde\\xad\\xc0\\xde' >> $(1)"),
    (
        "openwrt.md",
        "\t\t\t$(JFFS2OPTS) --no-cleanmarkers --pagesize=$(word 1,$(subst -, ,$(1))),$$(1))",
    ),
    ("openwrt.md", "  JFFS2OPTS += -X lzma --compression-mode=size"),
    ("openwrt.md", "  JFFS2OPTS += -x lzma"),
    (
        "genimage.md",
        r#"ret = systemp(image, "%s --eraseblock=%d -d %s -o %s %s","#,
    ),
    (
        "genimage.md",
        "cmd: \"mkfs.jffs2 --eraseblock=131072 -d '$WORK/tmp/root' -o '$WORK/images/test.jffs2' \"",
    ),
    ("genimage.md", "4c37f72de7a902286f0cfcbf13b4fde8  images/test.jffs2"),
];

// ---------------------------------------------------------------------------------------
// The source tree and the drop-in names
// ---------------------------------------------------------------------------------------

/// Every entry of the test tree gets this mtime (2011-11-11 00:00:00 UTC).
const TREE_MTIME: i64 = 1_320_969_600;

/// A small root file system: files of several sizes (compressible, incompressible, zeros,
/// empty), a symlink, hard links, a fifo, subdirectories (one empty), a setuid file, a file
/// owned by 1000:1000, a user xattr, names whose order depends on the locale and a name with
/// a space; every time fixed.
fn build_rootfs(root: &Path) {
    let dir = |p: &str| fs::create_dir_all(root.join(p)).unwrap();
    let file = |p: &str, data: &[u8], mode: u32| {
        let q = root.join(p);
        fs::write(&q, data).unwrap();
        fs::set_permissions(&q, fs::Permissions::from_mode(mode)).unwrap();
    };
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).unwrap();
    for d in [
        "bin",
        "sbin",
        "etc/init.d",
        "lib",
        "usr/bin",
        "usr/share/doc",
        "var/log",
        "var/run",
        "home/user",
        "boot",
    ] {
        dir(d);
    }
    file("bin/busybox", &random(1, 70_000), 0o755);
    std::os::unix::fs::symlink("busybox", root.join("bin/sh")).unwrap();
    fs::hard_link(root.join("bin/busybox"), root.join("usr/bin/[[")).unwrap();
    fs::hard_link(root.join("bin/busybox"), root.join("sbin/init")).unwrap();
    file("sbin/su", &text(2, 3000), 0o4755);
    file(
        "etc/passwd",
        b"root:x:0:0:root:/root:/bin/sh\nuser:x:1000:1000::/home/user:/bin/sh\n",
        0o644,
    );
    file("etc/motd", b"", 0o644);
    // Sorted before "init.d" in the C locale, after "passwd" in en_US.UTF-8.
    file("etc/Zeta.conf", b"zeta=1\n", 0o644);
    file("etc/init.d/rcS", b"#!/bin/sh\nmount -a\n", 0o755);
    file("lib/libc.so.6", &text(3, 300_000), 0o755);
    std::os::unix::fs::symlink("libc.so.6", root.join("lib/libc.so")).unwrap();
    // Big enough for a root file system of several 256 KiB erase blocks (Yocto's size).
    file("boot/vmlinux.gz", &random(6, 600_000), 0o644);
    file(
        "boot/autoexec.bat",
        b"/boot/vmlinux.gz root=/dev/mtdblock3\n",
        0o644,
    );
    file("usr/share/zeros", &vec![0u8; 20_000], 0o644);
    file("usr/share/doc/README", &text(4, 5000), 0o644);
    file(
        "usr/share/doc/with space.txt",
        b"a name with a space\n",
        0o644,
    );
    file("home/user/notes", &text(5, 1200), 0o600);
    let fifo = CString::new(root.join("var/run/initctl").as_os_str().as_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0, "mkfifo");
    for p in ["home/user", "home/user/notes"] {
        let c = CString::new(root.join(p).as_os_str().as_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::lchown(c.as_ptr(), 1000, 1000) }, 0, "lchown");
    }
    let motd = CString::new(root.join("etc/motd").as_os_str().as_bytes()).unwrap();
    let value = b"built by tests/integration.rs";
    // SAFETY: valid path, name and value buffers.
    let rc = unsafe {
        libc::lsetxattr(
            motd.as_ptr(),
            c"user.comment".as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            0,
        )
    };
    assert_eq!(
        rc, 0,
        "setxattr user.comment (does the file system of /tmp take user xattrs?)"
    );
    fn fix(p: &Path) {
        let m = fs::symlink_metadata(p).unwrap();
        if m.is_dir() {
            for e in fs::read_dir(p).unwrap() {
                fix(&e.unwrap().path());
            }
        }
        set_mtime(p, TREE_MTIME);
    }
    fix(root);
}

/// The drop-in directories: `ours` and `debian`, each holding the mtd-utils names.
struct Bins {
    ours: PathBuf,
    debian: PathBuf,
    /// Debian's, with a `mkfs.jffs2` that drops OpenWrt's `-x lzma` (Debian's mkfs.jffs2 has
    /// no LZMA compressor and refuses the name; without it the image is the one to equal).
    debian_openwrt: PathBuf,
}

/// Debian's mkfs.jffs2 without OpenWrt's `-x lzma`.
const DROP_X_LZMA: &str = r#"#!/bin/sh
# Debian's mkfs.jffs2 has no LZMA compressor and refuses its name: drop OpenWrt's "-x lzma".
n=$#
i=0
while [ "$i" -lt "$n" ]; do
	a=$1; shift; i=$((i + 1))
	if [ "$a" = "-x" ] && [ "$i" -lt "$n" ] && [ "$1" = "lzma" ]; then
		shift; i=$((i + 1)); continue
	fi
	case "$a" in -xlzma|--disable-compressor=lzma) continue ;; esac
	set -- "$@" "$a"
done
exec MKFS "$@"
"#;

/// Host mtimes go into the image (docs/spec/mtd-utils-spec.md §3.3, §3.9), and a block that
/// makes the tree it images (OpenWrt's `Build/jffs2`: `mkdir`, `cp`, then mkfs.jffs2 without
/// `-f`) gets them from the kernel's clock, which no fixed clock reaches: our run and Debian's
/// would differ whenever they straddle a second. So each side's `mkfs.jffs2` is this shim:
/// ours (`record`) writes the mtimes of the tree it is about to image (its `-d`/`-r`/`--root`,
/// else `.`) to `$JFFS2_TEST_INPUTS/N.times` (N counts the block's invocations) and runs our
/// tool on the untouched tree; Debian's (`replay`) sets the same relative paths of its own
/// N-th tree to exactly those times (nothing to do when both image one tree, `$ROOTFS`), then
/// runs mtd-utils. Chosen over fixing every tree's times: both images still carry the real,
/// differing host times (an image that drops or alters them still differs), only the one
/// input the two runs cannot share — the clock at which the block made its files — is given
/// to the reference as our tool saw it, whatever the timing of the two runs.
const INPUT_TIMES: &str = r#"#!/bin/bash
# mkfs.jffs2 of tests/integration.rs: MODE the mtimes of the tree to image (INPUT_TIMES there).
if [ -n "$JFFS2_TEST_INPUTS" ]; then
	root=.
	take=
	for a in "$@"; do
		if [ -n "$take" ]; then
			[ "$take" = root ] && root=$a
			take=
			continue
		fi
		case "$a" in
		--) break ;;
		-d|-r|--root) take=root ;;
		--root=*) root=${a#--root=} ;;
		-d*|-r*) root=${a#-?} ;;
		-[secoDmxXyi]|--pagesize|--eraseblock|--cleanmarker|--output|--devtable|\
		--compression-mode|--disable-compressor|--enable-compressor|\
		--compressor-priority|--incremental) take=other ;;
		esac
	done
	d=$JFFS2_TEST_INPUTS
	abs=$(cd -- "$root" 2>/dev/null && pwd -P) || abs=
	if [ -n "$abs" ] && [ MODE = record ]; then
		n=1; while [ -e "$d/$n.root" ]; do n=$((n + 1)); done
		find "$abs" -printf '%T@ %P\0' >"$d/$n.times" 2>/dev/null
		printf '%s' "$abs" >"$d/$n.root"
	elif [ -n "$abs" ]; then
		n=1; while [ -e "$d/$n.replayed" ]; do n=$((n + 1)); done
		: >"$d/$n.replayed"
		if [ -f "$d/$n.root" ] && [ "$(cat "$d/$n.root")" != "$abs" ]; then
			while IFS= read -r -d '' rec; do
				touch -h -d "@${rec%% *}" -- "$abs/${rec#* }" 2>/dev/null
			done <"$d/$n.times"
		fi
	fi
fi
exec 'EXEC' "$@"
"#;

/// Writes an executable script.
fn script(path: &Path, body: &str) {
    fs::write(path, body).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

fn make_bins(base: &Path) -> Bins {
    let ours = base.join("bin-ours");
    let debian = base.join("bin-debian");
    fs::create_dir_all(&ours).unwrap();
    fs::create_dir_all(&debian).unwrap();
    let link = |target: &Path, dir: &Path, name: &str| {
        std::os::unix::fs::symlink(target, dir.join(name)).unwrap();
    };
    let mkfs = Path::new(env!("CARGO_BIN_EXE_jffs2-mkfs"));
    let sumtool = Path::new(env!("CARGO_BIN_EXE_jffs2-sumtool"));
    let dump = Path::new(env!("CARGO_BIN_EXE_jffs2-dump"));
    let fsck = Path::new(env!("CARGO_BIN_EXE_jffs2-fsck"));
    let convert = Path::new(env!("CARGO_BIN_EXE_jffs2-convert"));
    for (name, target) in [
        ("sumtool", sumtool),
        ("jffs2dump", dump),
        ("jffs2reader", dump),
        ("fsck.jffs2", fsck),
        ("jffs2-mkfs", mkfs),
        ("jffs2-sumtool", sumtool),
        ("jffs2-dump", dump),
        ("jffs2-fsck", fsck),
        ("jffs2-convert", convert),
    ] {
        link(target, &ours, name);
    }
    let debian_openwrt = base.join("bin-debian-openwrt");
    fs::create_dir_all(&debian_openwrt).unwrap();
    for name in ["sumtool", "jffs2dump", "jffs2reader"] {
        link(&mtd_tool(name), &debian, name);
        link(&mtd_tool(name), &debian_openwrt, name);
    }
    // The real mkfs.jffs2 behind each shim (ours under that name, for its messages).
    let real = |dir: &Path| {
        let r = dir.join(".real");
        fs::create_dir_all(&r).unwrap();
        r.join("mkfs.jffs2")
    };
    let ours_real = real(&ours);
    std::os::unix::fs::symlink(mkfs, &ours_real).unwrap();
    let drop_lzma = real(&debian_openwrt);
    script(
        &drop_lzma,
        &DROP_X_LZMA.replace("MKFS", &mtd_tool("mkfs.jffs2").to_string_lossy()),
    );
    for (dir, mode, exec) in [
        (&ours, "record", ours_real),
        (&debian, "replay", mtd_tool("mkfs.jffs2")),
        (&debian_openwrt, "replay", drop_lzma),
    ] {
        script(
            &dir.join("mkfs.jffs2"),
            &INPUT_TIMES
                .replace("MODE", mode)
                .replace("EXEC", &exec.to_string_lossy()),
        );
    }
    Bins {
        ours,
        debian,
        debian_openwrt,
    }
}

// ---------------------------------------------------------------------------------------
// Sessions and steps
// ---------------------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Ours,
    Debian,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Run with both tool sets; compare (the default check, then `check` if any).
    Parity,
    /// Run with ours only; `check` decides.
    Ours,
}

/// What one block produced.
#[derive(Debug, Clone)]
struct Run {
    status: i32,
    stdout: String,
    stderr: String,
    seconds: f64,
}

/// One block's outcome, for checks.
struct Outcome<'a> {
    ours: &'a Run,
    ours_dir: &'a Path,
    debian_dir: &'a Path,
}

type Check = fn(&Outcome) -> Result<(), String>;

struct Step {
    id: &'static str,
    mode: Mode,
    /// Expected exit status (ours, Debian's).
    status: (i32, i32),
    /// Lines our tools add (substrings): removed from ours' stdout and stderr before the
    /// comparison, and each must have been there.
    ours_adds: &'static [&'static str],
    /// Replacements applied to ours' stdout and stderr before the comparison (each must
    /// occur): what our tools print differently on purpose.
    rewrites: &'static [(&'static str, &'static str)],
    /// Skip the default comparison of outputs and files (the check does its own).
    custom: bool,
    /// Exact command lines the block must contain.
    contains: &'static [&'static str],
    check: Option<Check>,
}

const fn step(id: &'static str, mode: Mode) -> Step {
    Step {
        id,
        mode,
        status: (0, 0),
        ours_adds: &[],
        rewrites: &[],
        custom: false,
        contains: &[],
        check: None,
    }
}

impl Step {
    const fn contains(mut self, c: &'static [&'static str]) -> Step {
        self.contains = c;
        self
    }
    const fn adds(mut self, a: &'static [&'static str]) -> Step {
        self.ours_adds = a;
        self
    }
    const fn rewrites(mut self, r: &'static [(&'static str, &'static str)]) -> Step {
        self.rewrites = r;
        self
    }
    const fn check(mut self, f: Check) -> Step {
        self.check = Some(f);
        self
    }
    const fn custom(mut self, ours: i32, debian: i32, f: Check) -> Step {
        self.custom = true;
        self.status = (ours, debian);
        self.check = Some(f);
        self
    }
}

struct Session {
    guide: &'static str,
    name: String,
    steps: Vec<Step>,
    /// Environment for both tool sets; `{ROOTFS}`, `{WORK}`, `{BIN}` are substituted.
    vars: Vec<(&'static str, String)>,
    /// Directories (below the work directory) made before the first block.
    mkdirs: &'static [&'static str],
    shell: &'static str,
    fakeroot: bool,
    lc_all: &'static str,
    /// Run Debian's mkfs.jffs2 through the wrapper that drops `-x lzma`.
    openwrt: bool,
}

impl Session {
    fn new(guide: &'static str, name: impl Into<String>, steps: Vec<Step>) -> Session {
        Session {
            guide,
            name: name.into(),
            steps,
            vars: Vec::new(),
            mkdirs: &[],
            shell: "sh",
            fakeroot: false,
            lc_all: "C",
            openwrt: false,
        }
    }
    fn var(mut self, k: &'static str, v: impl Into<String>) -> Session {
        self.vars.push((k, v.into()));
        self
    }
}

/// Everything a test needs: the tree, the drop-in directories, a scratch area.
struct Env {
    scratch: tempfile::TempDir,
    rootfs: PathBuf,
    bins: Bins,
}

/// What every guide test needs: root, mtd-utils, fakeroot and libfaketime (or a loud skip).
fn prerequisites() -> bool {
    require_root()
        && common::require_mtd_utils()
        && common::skip::program("fakeroot", "fakeroot")
        && common::skip::faketime()
}

fn env() -> Env {
    mtd_tool("sumtool");
    let mut scratch = tempfile::Builder::new()
        .prefix("jffs2-integration-")
        .tempdir()
        .unwrap();
    if std::env::var_os("JFFS2_INTEGRATION_KEEP").is_some() {
        // Keep the work directories and the blocks' logs (`logs/ID.Ours.stdout`, …).
        scratch.disable_cleanup(true);
        eprintln!("work directories kept in {}", scratch.path().display());
    }
    let rootfs = scratch.path().join("rootfs");
    fs::create_dir(&rootfs).unwrap();
    build_rootfs(&rootfs);
    let bins = make_bins(scratch.path());
    Env {
        scratch,
        rootfs,
        bins,
    }
}

/// The clock of both runs of a parity block (libfaketime's `FAKETIME`, UTC; frozen, without
/// `@`). mtd-utils' mkfs.jffs2 gives the entries a device table creates the current time
/// unless `-f` (docs/spec/mtd-utils-spec.md §3.4, "New entries get the current time"; §3.9),
/// and ours does the same: two runs a second apart differ in those bytes (OpenWrt's `-D`).
const FIXED_CLOCK: &str = "2024-02-29 12:34:56";

const BLOCK_TIMEOUT: Duration = Duration::from_secs(300);

/// Runs one block in `work` with the tool set's `PATH` (under `FIXED_CLOCK` if `fixed_clock`);
/// `inputs` is the block's directory of recorded input times (`INPUT_TIMES`).
#[allow(clippy::too_many_arguments)]
fn run_block(
    s: &Session,
    e: &Env,
    tool: Tool,
    work: &Path,
    logs: &Path,
    inputs: &Path,
    id: &str,
    body: &str,
    fixed_clock: bool,
) -> Run {
    let bin = match tool {
        Tool::Ours => &e.bins.ours,
        Tool::Debian if s.openwrt => &e.bins.debian_openwrt,
        Tool::Debian => &e.bins.debian,
    };
    let subst = |v: &str| {
        v.replace("{ROOTFS}", &e.rootfs.to_string_lossy())
            .replace("{WORK}", &work.to_string_lossy())
            .replace("{BIN}", &bin.to_string_lossy())
    };
    // The fixed clock through libfaketime's own wrapper: it gives the whole block one shared
    // clock and removes that shared state at the end (libfaketime preloaded by hand leaves a
    // /dev/shm/faketime_shm_PID and its semaphore behind for every process of the block).
    let mut argv: Vec<&OsStr> = Vec::new();
    if fixed_clock {
        argv.extend([
            OsStr::new("faketime"),
            OsStr::new("-f"),
            OsStr::new(FIXED_CLOCK),
        ]);
    }
    if s.fakeroot {
        argv.extend([OsStr::new("fakeroot"), OsStr::new("--")]);
    }
    argv.extend([
        OsStr::new(s.shell),
        OsStr::new("-e"),
        OsStr::new("-c"),
        OsStr::new(body),
    ]);
    let mut c = Command::new(argv[0]);
    c.args(&argv[1..]);
    c.env_clear()
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
        )
        .env("HOME", work)
        .env("LC_ALL", s.lc_all)
        .env("TZ", "UTC")
        .env("JFFS2_TEST_INPUTS", inputs)
        .current_dir(work)
        .stdin(Stdio::null());
    if s.fakeroot {
        c.env("FAKEROOTDONTTRYCHOWN", "1");
    }
    if fixed_clock {
        // fakeroot keeps the LD_PRELOAD faketime gives it. Only the wall clock is fixed: stat(2)
        // passes the host's mtimes through (NO_FAKE_STAT; faked, they would all read
        // FIXED_CLOCK and go untested), and the monotonic clocks stay real (timeouts).
        c.env("NO_FAKE_STAT", "1")
            .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    }
    for (k, v) in &s.vars {
        c.env(k, subst(v));
    }
    let out_path = logs.join(format!("{id}.{tool:?}.stdout"));
    let err_path = logs.join(format!("{id}.{tool:?}.stderr"));
    c.stdout(fs::File::create(&out_path).unwrap())
        .stderr(fs::File::create(&err_path).unwrap())
        .process_group(0);
    let t0 = Instant::now();
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", s.shell));
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if t0.elapsed() > BLOCK_TIMEOUT {
            // SAFETY: kill(2) on the process group this test started.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "{} / {tool:?}: block still running after {BLOCK_TIMEOUT:?}:\n{body}",
                s.name
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let seconds = t0.elapsed().as_secs_f64();
    let mask = |t: String| {
        t.replace(&*work.to_string_lossy(), "$WORK")
            .replace(&*e.rootfs.to_string_lossy(), "$ROOTFS")
            .replace(&*bin.to_string_lossy(), "$BIN")
    };
    Run {
        status: status.code().unwrap_or(-1),
        stdout: mask(String::from_utf8_lossy(&fs::read(&out_path).unwrap()).into_owned()),
        stderr: mask(String::from_utf8_lossy(&fs::read(&err_path).unwrap()).into_owned()),
        seconds,
    }
}

/// A file-system entry of a work directory.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Entry {
    Dir,
    File(Vec<u8>),
    Link(PathBuf),
    Other(u32),
}

fn snapshot(dir: &Path) -> BTreeMap<String, Entry> {
    fn walk(base: &Path, p: &Path, out: &mut BTreeMap<String, Entry>) {
        for e in fs::read_dir(p).unwrap() {
            let e = e.unwrap();
            let path = e.path();
            let rel = path
                .strip_prefix(base)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            let m = fs::symlink_metadata(&path).unwrap();
            let entry = if m.file_type().is_symlink() {
                Entry::Link(fs::read_link(&path).unwrap())
            } else if m.is_dir() {
                walk(base, &path, out);
                Entry::Dir
            } else if m.is_file() {
                Entry::File(fs::read(&path).unwrap())
            } else {
                Entry::Other(m.mode())
            };
            out.insert(rel, entry);
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Paths created, changed or removed between two snapshots.
fn changed(before: &BTreeMap<String, Entry>, after: &BTreeMap<String, Entry>) -> BTreeSet<String> {
    let mut v = BTreeSet::new();
    for (k, e) in after {
        if before.get(k) != Some(e) {
            v.insert(k.clone());
        }
    }
    for k in before.keys() {
        if !after.contains_key(k) {
            v.insert(k.clone());
        }
    }
    v
}

/// The byte order of an image: the first node magic found.
fn image_is_big_endian(img: &[u8]) -> bool {
    let mut o = 0;
    while o + 4 <= img.len() {
        match &img[o..o + 2] {
            [0x85, 0x19] => return false,
            [0x19, 0x85] => return true,
            _ => o += 4,
        }
    }
    false
}

fn has_summary(img: &[u8]) -> bool {
    let big = image_is_big_endian(img);
    nodes(img, Endian { big })
        .iter()
        .any(|n| n.nodetype == NODETYPE_SUMMARY)
}

/// `jffs2-fsck --json` of an image (our binary, by its path).
fn fsck_json(img: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let o = Command::new(env!("CARGO_BIN_EXE_jffs2-fsck"))
        .args(extra)
        .arg("--json")
        .arg("--no-progress")
        .arg(img)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "jffs2-fsck --json {}: {e}: {}",
            img.display(),
            String::from_utf8_lossy(&o.stderr)
        )
    });
    (o.status.code().unwrap_or(-1), v)
}

/// Our summarised image `ours` against mtd-utils sumtool's `debian`: the same inode, dirent
/// and xattr nodes (byte for byte, by an independent walk), and ours checks clean with a
/// summary in every erase block that holds nodes.
fn same_summarised(ours: &Path, debian: &Path) -> Result<(), String> {
    let a = fs::read(ours).unwrap();
    let b = fs::read(debian).unwrap();
    let big = image_is_big_endian(&b);
    if payload_nodes(&a, big) != payload_nodes(&b, big) {
        return Err(format!(
            "{}: the summarised images hold different nodes ({} vs {} in mtd-utils')",
            ours.display(),
            payload_nodes(&a, big).len(),
            payload_nodes(&b, big).len()
        ));
    }
    let (code, v) = fsck_json(ours, &[]);
    let cov = &v["summary"]["summary_coverage"];
    if code != 0 || cov["blocks_with_summary"] != cov["blocks_with_nodes"] {
        return Err(format!(
            "{}: jffs2-fsck exit {code}, summary coverage {cov}: {}",
            ours.display(),
            v["findings"]
        ));
    }
    Ok(())
}

/// Removes the lines containing one of `adds` from `text`; the substrings not found.
fn strip_adds(text: &str, adds: &[&str]) -> (String, Vec<String>) {
    let mut seen = vec![false; adds.len()];
    let mut out = String::new();
    for l in text.split_inclusive('\n') {
        let mut hit = false;
        for (i, a) in adds.iter().enumerate() {
            if l.contains(a) {
                seen[i] = true;
                hit = true;
            }
        }
        if !hit {
            out.push_str(l);
        }
    }
    let missing = adds
        .iter()
        .zip(seen)
        .filter(|(_, s)| !s)
        .map(|(a, _)| a.to_string())
        .collect();
    (out, missing)
}

/// The default parity comparison of one block.
fn compare(
    st: &Step,
    ours: &Run,
    debian: &Run,
    ours_changes: &BTreeSet<String>,
    debian_changes: &BTreeSet<String>,
    ours_dir: &Path,
    debian_dir: &Path,
) -> Result<(), String> {
    let mut errs = Vec::new();
    if (ours.status, debian.status) != st.status {
        errs.push(format!(
            "exit status: ours {}, Debian's {} (expected {:?})",
            ours.status, debian.status, st.status
        ));
    }
    let (mut out, mut err) = (ours.stdout.clone(), ours.stderr.clone());
    for (from, to) in st.rewrites {
        if !out.contains(from) && !err.contains(from) {
            errs.push(format!("our output lacks the documented text {from:?}"));
        }
        out = out.replace(from, to);
        err = err.replace(from, to);
    }
    let (o_out, miss_out) = strip_adds(&out, st.ours_adds);
    let (o_err, miss_err) = strip_adds(&err, st.ours_adds);
    for m in miss_out.iter().filter(|m| miss_err.contains(m)) {
        errs.push(format!("our output lacks the documented line {m:?}"));
    }
    if o_out != debian.stdout {
        errs.push(
            common::text_difference("stdout", &debian.stdout, &o_out)
                .unwrap_or_else(|| "stdout differs".into()),
        );
    }
    if o_err != debian.stderr {
        errs.push(
            common::text_difference("stderr", &debian.stderr, &o_err)
                .unwrap_or_else(|| "stderr differs".into()),
        );
    }
    // What either run wrote must be the same on both sides (a file one tool rewrote with
    // the same bytes is unchanged for that side only).
    for p in ours_changes.union(debian_changes) {
        let (a, b) = (ours_dir.join(p), debian_dir.join(p));
        let (ma, mb) = (fs::symlink_metadata(&a).ok(), fs::symlink_metadata(&b).ok());
        match (ma, mb) {
            (Some(ma), Some(mb)) if ma.is_file() && mb.is_file() => {
                let (x, y) = (fs::read(&a).unwrap(), fs::read(&b).unwrap());
                if x == y {
                    continue;
                }
                if has_summary(&x) || has_summary(&y) {
                    if let Err(e) = same_summarised(&a, &b) {
                        errs.push(e);
                    }
                } else {
                    let big = image_is_big_endian(&y);
                    errs.push(format!(
                        "{p}: not the same bytes as mtd-utils'\n{}",
                        common::explain_difference(&b, &a, big).unwrap_or_default()
                    ));
                }
            }
            (Some(ma), Some(mb)) if ma.file_type() == mb.file_type() => {}
            (None, None) => {}
            (Some(_), None) => errs.push(format!("{p}: written by ours only")),
            (None, Some(_)) => errs.push(format!("{p}: written by mtd-utils only")),
            _ => errs.push(format!("{p}: not the same kind of entry")),
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs.join("\n"))
    }
}

/// Runs a session (all its blocks, both tool sets where asked); panics on the first failure.
fn run_session(e: &Env, s: &Session) {
    if let Err(msg) = try_session(e, s) {
        panic!("{} ({}): {msg}", s.name, s.guide);
    }
}

fn try_session(e: &Env, s: &Session) -> Result<(), String> {
    let guide = parse_guide(s.guide);
    let safe: String = s
        .name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let base = e.scratch.path().join(safe);
    let dirs = [
        (Tool::Ours, base.join("ours")),
        (Tool::Debian, base.join("debian")),
    ];
    let logs = base.join("logs");
    fs::create_dir_all(&logs).unwrap();
    let parity = s.steps.iter().any(|st| st.mode == Mode::Parity);
    for (tool, d) in &dirs {
        if *tool == Tool::Debian && !parity {
            continue;
        }
        fs::create_dir_all(d).unwrap();
        for m in s.mkdirs {
            fs::create_dir_all(d.join(m)).unwrap();
        }
        for (name, body) in &guide.files {
            let p = d.join(name);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, body).unwrap();
        }
    }
    let (ours_dir, debian_dir) = (&dirs[0].1, &dirs[1].1);
    for st in &s.steps {
        let body = guide
            .blocks
            .get(st.id)
            .unwrap_or_else(|| panic!("{}: no block <!-- test: {} -->", s.guide, st.id));
        for c in st.contains {
            assert!(
                body.contains(c),
                "{}: block {} must contain the build system's command line\n  {c}\nbut is:\n{body}",
                s.guide,
                st.id
            );
        }
        let before_o = snapshot(ours_dir);
        let parity = st.mode == Mode::Parity;
        let inputs = logs.join(format!("{}.inputs", st.id));
        let _ = fs::remove_dir_all(&inputs);
        fs::create_dir(&inputs).unwrap();
        let ours = run_block(
            s,
            e,
            Tool::Ours,
            ours_dir,
            &logs,
            &inputs,
            st.id,
            body,
            parity,
        );
        let ours_changes = changed(&before_o, &snapshot(ours_dir));
        let mut debian = None;
        let mut debian_changes = BTreeSet::new();
        if parity {
            let before_d = snapshot(debian_dir);
            debian = Some(run_block(
                s,
                e,
                Tool::Debian,
                debian_dir,
                &logs,
                &inputs,
                st.id,
                body,
                true,
            ));
            debian_changes = changed(&before_d, &snapshot(debian_dir));
        }
        eprintln!(
            "  {:<34} {:<28} ours exit {:>3} {:>6.2} s{}",
            s.name,
            st.id,
            ours.status,
            ours.seconds,
            debian
                .as_ref()
                .map(|d| format!("   mtd-utils exit {:>3} {:>6.2} s", d.status, d.seconds))
                .unwrap_or_default()
        );
        let fail = |msg: String| -> Result<(), String> {
            Err(format!(
                "block {}:\n{body}\n{msg}\n--- ours: exit {}\nstdout:\n{}\nstderr:\n{}{}",
                st.id,
                ours.status,
                ours.stdout,
                ours.stderr,
                debian
                    .as_ref()
                    .map(|d| format!(
                        "--- mtd-utils: exit {}\nstdout:\n{}\nstderr:\n{}",
                        d.status, d.stdout, d.stderr
                    ))
                    .unwrap_or_default()
            ))
        };
        match (&st.mode, &debian) {
            (Mode::Parity, Some(d)) if !st.custom => {
                if let Err(m) = compare(
                    st,
                    &ours,
                    d,
                    &ours_changes,
                    &debian_changes,
                    ours_dir,
                    debian_dir,
                ) {
                    return fail(m);
                }
            }
            _ => {
                let want = st.status.0;
                if ours.status != want {
                    return fail(format!("ours: exit {} (expected {want})", ours.status));
                }
                if let Some(d) = &debian {
                    if d.status != st.status.1 {
                        return fail(format!(
                            "mtd-utils: exit {} (expected {})",
                            d.status, st.status.1
                        ));
                    }
                }
            }
        }
        if let Some(f) = st.check {
            let o = Outcome {
                ours: &ours,
                ours_dir,
                debian_dir,
            };
            if let Err(m) = f(&o) {
                return fail(m);
            }
        }
    }
    Ok(())
}

fn ensure(cond: bool, msg: impl FnOnce() -> String) -> Result<(), String> {
    if cond {
        Ok(())
    } else {
        Err(msg())
    }
}

fn read(p: impl AsRef<Path>) -> Vec<u8> {
    fs::read(p.as_ref()).unwrap_or_else(|e| panic!("read {}: {e}", p.as_ref().display()))
}

// ---------------------------------------------------------------------------------------
// Yocto / OpenEmbedded
// ---------------------------------------------------------------------------------------

const YOCTO_IMAGE: &str = "core-image-minimal-qemuarm";

fn yocto_vars(s: Session) -> Session {
    let mut s = s
        .var("IMAGE_ROOTFS", "{ROOTFS}")
        .var("IMGDEPLOYDIR", "{WORK}")
        .var("DEPLOY_DIR_IMAGE", "{WORK}")
        .var("IMAGE_NAME", YOCTO_IMAGE)
        // bitbake exports SOURCE_DATE_EPOCH; with --faketime (or a tree older than it) it
        // changes nothing, so the bytes stay mtd-utils'.
        .var("SOURCE_DATE_EPOCH", "1600000000");
    s.fakeroot = true; // stand-in for pseudo
    s.lc_all = "en_US.UTF-8"; // bitbake.conf: LC_ALL = "en_US.UTF-8"
    s
}

fn yocto_sum_default(o: &Outcome) -> Result<(), String> {
    let sum = format!("{YOCTO_IMAGE}.jffs2.sum");
    // Ours: the erase size the image was built with, detected, and a warning saying so.
    ensure(
        o.ours.stderr.starts_with("sumtool: warning!: ")
            && o.ours.stderr.contains(
                "was built with 256 KiB erase blocks; -e was not given (sumtool's default is 64 KiB): using 256 KiB",
            ),
        || format!("our sumtool's warning: {}", o.ours.stderr),
    )?;
    let input = read(o.ours_dir.join(format!("{YOCTO_IMAGE}.jffs2")));
    let ours = read(o.ours_dir.join(&sum));
    ensure(
        payload_nodes(&ours, false) == payload_nodes(&input, false),
        || "our sumtool lost nodes".into(),
    )?;
    let (code, v) = fsck_json(&o.ours_dir.join(&sum), &["-e", "0x40000"]);
    let cov = &v["summary"]["summary_coverage"];
    ensure(
        code == 0 && cov["blocks_with_summary"] == cov["blocks_with_nodes"],
        || format!("our summarised image: jffs2-fsck exit {code}, summary coverage {cov}"),
    )?;
    // mtd-utils' sumtool wrote an image, without the nodes that cross 64 KiB boundaries.
    let input = read(o.debian_dir.join(format!("{YOCTO_IMAGE}.jffs2")));
    let out = read(o.debian_dir.join(&sum));
    ensure(
        payload_nodes(&out, false) != payload_nodes(&input, false),
        || {
            "mtd-utils' sumtool kept every node (the tree no longer has a node across 64 KiB?)"
                .into()
        },
    )
}

fn yocto_mtd_utils_damage(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours.stdout.contains("DIFF ")
            && o.ours
                .stdout
                .contains(": content: image differs from byte ")
            && o.ours.stdout.contains("jffs2-fsck: exit 4"),
        || "jffs2-fsck --compare should list lost content and exit 4".into(),
    )?;
    // The guide shows this run's output: the first text block after the step's sh block.
    let guide = fs::read_to_string(guide_dir().join("yocto.md")).expect("yocto.md");
    let after = &guide[guide
        .find("<!-- test: yocto-sum-default-mtd-utils -->")
        .expect("the step's marker")..];
    let shown = after
        .split("```text\n")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .unwrap_or_default();
    ensure(shown == o.ours.stdout, || {
        format!(
            "yocto.md shows another output than the run's:\n{}",
            o.ours.stdout
        )
    })
}

fn yocto_summary_one_step(o: &Outcome) -> Result<(), String> {
    let one = read(o.ours_dir.join(format!("{YOCTO_IMAGE}.jffs2")));
    let two = read(o.ours_dir.join(format!("{YOCTO_IMAGE}.jffs2.sum")));
    ensure(one == two, || {
        "mkfs.jffs2 --summary is not mkfs.jffs2 + sumtool -e 0x40000, byte for byte".into()
    })
}

fn verified_clean(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours.stdout.contains("consistent (exit 0)") && o.ours.stdout.contains(" 0 differences"),
        || "jffs2-fsck --compare did not report a clean, identical image".into(),
    )
}

#[test]
fn yocto_guide() {
    if !prerequisites() {
        return;
    }
    let e = env();
    let yocto = yocto_vars(Session::new(
        "yocto.md",
        "yocto",
        vec![
            step("yocto-image", Mode::Parity).contains(&[
                "mkfs.jffs2 --root=${IMAGE_ROOTFS} --faketime --output=${IMGDEPLOYDIR}/${IMAGE_NAME}.jffs2 --pad -l --eraseblock=0x40000 --no-cleanmarkers",
            ]),
            step("yocto-sum-default", Mode::Parity)
                .contains(&["sumtool -i ${IMAGE_NAME}.jffs2 -o ${IMAGE_NAME}.jffs2.sum\n"])
                .custom(0, 0, yocto_sum_default),
            step("yocto-sum-default-mtd-utils", Mode::Ours)
                .contains(&["jffs2-fsck --compare=${IMAGE_ROOTFS} --faketime"])
                .check(yocto_mtd_utils_damage),
            step("yocto-sum-fixed", Mode::Parity).contains(&[
                "sumtool -i ${IMAGE_NAME}.jffs2 -o ${IMAGE_NAME}.jffs2.sum --eraseblock=0x40000 -l --no-cleanmarkers",
            ]),
            step("yocto-summary", Mode::Ours)
                .contains(&[
                    "mkfs.jffs2 --root=${IMAGE_ROOTFS} --faketime --output=${IMGDEPLOYDIR}/${IMAGE_NAME}.jffs2 --pad -l --eraseblock=0x40000 --no-cleanmarkers --summary",
                ])
                .check(yocto_summary_one_step),
            step("yocto-verify", Mode::Ours).check(verified_clean),
        ],
    ));
    run_session(&e, &yocto);

    const PAGE_WARNING: &str = "is below 4096: -s is the memory page size of the target";
    let mut layers = yocto_vars(Session::new(
        "yocto.md",
        "oe-layers",
        vec![
            step("openbmc-rwfs", Mode::Parity)
                .contains(&["mkfs.jffs2 --root=jffs2 --faketime --output=rwfs.jffs2\n"]),
            step("openbmc-rwfs-cypress", Mode::Parity).contains(&[
                "mkfs.jffs2 --root=jffs2 --faketime --output=rwfs.jffs2 -c 16 -e 262144 --pad=${RWFS_SIZE} --squash-uids",
            ]),
            step("dreambox-boot", Mode::Parity).contains(&[
                "mkfs.jffs2 --root=${IMAGE_ROOTFS}/boot --faketime --disable-compressor=lzo --compression-mode=size --output=${DEPLOY_DIR_IMAGE}/${IMAGE_NAME}.boot.jffs2 ${EXTRA_IMAGECMD_COMPAT}",
            ]),
            step("digi-sum", Mode::Parity).contains(&[
                "mkfs.jffs2 -n -e ${peb_it} -d ${IMAGE_ROOTFS} -o ${DEPLOY_DIR_IMAGE}/${IMAGE_NAME}.${peb_it}.rootfs.jffs2",
                "sumtool -e ${peb_it} -i ${DEPLOY_DIR_IMAGE}/${IMAGE_NAME}.${peb_it}.rootfs.jffs2 -o ${DEPLOY_DIR_IMAGE}/${IMAGE_NAME}.${peb_it}.rootfs.sum.jffs2",
            ]),
            step("openmoko", Mode::Parity)
                .contains(&[
                    "mkfs.jffs2 --eraseblock=0x20000 --pagesize=0x800 --no-cleanmarkers --little-endian --pad -o rootfs.jffs2 -d ./rootfs",
                    "sumtool --eraseblock=0x20000 --no-cleanmarkers --littleendian --pad -i rootfs.jffs2 -o srootfs.jffs2",
                ])
                .adds(&[PAGE_WARNING]),
            step("agl", Mode::Parity)
                .contains(&[
                    "mkfs.jffs2 -e 262144 -n -s 2048 -r ${IMAGE_ROOTFS} -o img -l -v",
                    "sumtool -e 262144 -n -p -i img -o img.summed",
                ])
                .adds(&[PAGE_WARNING]),
        ],
    ))
    .var("RWFS_SIZE", "0x100000")
    .var("EXTRA_IMAGECMD_COMPAT", "--eraseblock=0x20000 -n -l")
    .var("FLASH_PEB", "131072,262144");
    layers.fakeroot = true;
    run_session(&e, &layers);
}

// ---------------------------------------------------------------------------------------
// Buildroot
// ---------------------------------------------------------------------------------------

/// A Buildroot configuration of `fs/jffs2/Config.in`.
struct BrConfig {
    name: &'static str,
    ebsize: &'static str,
    nocleanmarker: bool,
    /// `BR2_TARGET_ROOTFS_JFFS2_PADSIZE` when `BR2_TARGET_ROOTFS_JFFS2_PAD=y`.
    pad: Option<&'static str>,
    big_endian: bool,
    /// `BR2_TARGET_ROOTFS_JFFS2_CUSTOM_PAGESIZE` when the custom page size is on.
    pagesize: Option<&'static str>,
}

impl BrConfig {
    /// `JFFS2_OPTS` and `SUMTOOL_OPTS` as `fs/jffs2/jffs2.mk` assembles them.
    fn opts(&self) -> (String, String) {
        let mut m = vec![format!("-e {}", self.ebsize), "--with-xattr".into()];
        let mut s = vec![format!("-e {}", self.ebsize)];
        if let Some(p) = self.pad {
            m.push(if p == "0x0" {
                "-p".into()
            } else {
                format!("--pad={p}")
            });
            s.push("-p".into());
        }
        let endian = if self.big_endian { "-b" } else { "-l" };
        m.push(endian.into());
        s.push(endian.into());
        if let Some(ps) = self.pagesize {
            m.push(format!("-s {ps}"));
        }
        if self.nocleanmarker {
            m.push("-n".into());
            s.push("-n".into());
        }
        (m.join(" "), s.join(" "))
    }
}

const BR_CONFIGS: &[BrConfig] = &[
    BrConfig {
        name: "DATAFLASH_1056",
        ebsize: "0x2100",
        nocleanmarker: true,
        pad: None,
        big_endian: false,
        pagesize: None,
    },
    BrConfig {
        name: "DATAFLASH_528",
        ebsize: "0x1080",
        nocleanmarker: true,
        pad: None,
        big_endian: false,
        pagesize: None,
    },
    BrConfig {
        name: "NANDFLASH_16K",
        ebsize: "0x4000",
        nocleanmarker: true,
        pad: Some("0x0"),
        big_endian: true,
        pagesize: None,
    },
    BrConfig {
        name: "NANDFLASH_128K",
        ebsize: "0x20000",
        nocleanmarker: true,
        pad: None,
        big_endian: false,
        pagesize: Some("0x1000"),
    },
    BrConfig {
        name: "FLASH_128",
        ebsize: "0x20000",
        nocleanmarker: false,
        pad: Some("0x100000"),
        big_endian: false,
        pagesize: None,
    },
    BrConfig {
        name: "FLASH_64",
        ebsize: "0x10000",
        nocleanmarker: false,
        pad: None,
        big_endian: true,
        pagesize: None,
    },
    BrConfig {
        name: "CUSTOM_0x40000",
        ebsize: "0x40000",
        nocleanmarker: false,
        pad: Some("0x0"),
        big_endian: false,
        pagesize: Some("0x1000"),
    },
];

fn br_vars(s: Session, jffs2_opts: &str, sumtool_opts: &str) -> Session {
    let mut s = s
        .var("TARGET_DIR", "{ROOTFS}")
        .var("BINARIES_DIR", "{WORK}/images")
        .var("MKFS_JFFS2", "{BIN}/mkfs.jffs2")
        .var("SUMTOOL", "{BIN}/sumtool")
        .var("JFFS2_OPTS", jffs2_opts)
        .var("SUMTOOL_OPTS", sumtool_opts);
    s.mkdirs = &["images"];
    s.fakeroot = true; // FAKEROOTDONTTRYCHOWN=1 fakeroot -- (fs/common.mk)
    s
}

fn br_one_step(o: &Outcome) -> Result<(), String> {
    let one = read(o.ours_dir.join("images/rootfs.onestep.jffs2"));
    let two = read(o.ours_dir.join("images/rootfs.jffs2"));
    ensure(one == two, || {
        "mkfs.jffs2 --summary is not mkfs.jffs2 + sumtool with SUMTOOL_OPTS, byte for byte".into()
    })
}

fn br_dataflash(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours.stdout.contains("ERROR erase-size-mismatch")
            && o.ours
                .stdout
                .contains("the image was made for 8 KiB erase blocks, not 0x2100 bytes")
            && o.ours.stdout.contains("jffs2-fsck: exit 4"),
        || "jffs2-fsck -e 0x2100 should name the 8 KiB layout and exit 4".into(),
    )
}

#[test]
fn buildroot_guide() {
    if !prerequisites() {
        return;
    }
    let e = env();
    // The defaults (parallel flash, 128 KiB, little endian, no padding, no summary).
    let defaults = br_vars(
        Session::new(
            "buildroot.md",
            "buildroot-defaults",
            vec![step("buildroot-defaults", Mode::Parity).contains(&[
                "$MKFS_JFFS2 -e 0x20000 --with-xattr -l -d $TARGET_DIR -o $BINARIES_DIR/rootfs.jffs2",
            ])],
        ),
        "",
        "",
    );
    run_session(&e, &defaults);
    for c in BR_CONFIGS {
        let (m, s) = c.opts();
        let mut steps = vec![
            step("buildroot-plain", Mode::Parity)
                .contains(&["$MKFS_JFFS2 $JFFS2_OPTS -d $TARGET_DIR -o $BINARIES_DIR/rootfs.jffs2"]),
            step("buildroot-summary", Mode::Parity).contains(&[
                "$MKFS_JFFS2 $JFFS2_OPTS -d $TARGET_DIR -o $BINARIES_DIR/rootfs.jffs2.nosummary",
                "$SUMTOOL $SUMTOOL_OPTS -i $BINARIES_DIR/rootfs.jffs2.nosummary -o $BINARIES_DIR/rootfs.jffs2",
                "rm $BINARIES_DIR/rootfs.jffs2.nosummary",
            ]),
            step("buildroot-summary-one-step", Mode::Ours)
                .contains(&["$MKFS_JFFS2 $JFFS2_OPTS --summary -d $TARGET_DIR -o $BINARIES_DIR/rootfs.onestep.jffs2"])
                .check(br_one_step),
            step("buildroot-verify", Mode::Ours).check(verified_clean),
        ];
        if c.ebsize == "0x1080" {
            // (Both tools print mkfs.jffs2's "Erase size 0x1080 too small" warning: the
            // comparison requires it equal.)
            steps.push(step("buildroot-dataflash-528", Mode::Ours).check(br_dataflash));
        }
        let session = br_vars(
            Session::new("buildroot.md", format!("buildroot-{}", c.name), steps),
            &m,
            &s,
        );
        run_session(&e, &session);
    }
}

// ---------------------------------------------------------------------------------------
// genimage and PTXdist
// ---------------------------------------------------------------------------------------

const GENIMAGE_MD5: &str = "4c37f72de7a902286f0cfcbf13b4fde8";

fn genimage_md5(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours
            .stdout
            .contains(&format!("{GENIMAGE_MD5}  images/test.jffs2")),
        || format!("not genimage's recorded test/jffs2.md5 ({GENIMAGE_MD5})"),
    )?;
    ensure(
        o.ours.stderr.contains(
            "cmd: \"mkfs.jffs2 --eraseblock=131072 -d '$WORK/tmp/root' -o '$WORK/images/test.jffs2' \"",
        ),
        || "genimage did not log the command line the guide quotes".into(),
    )
}

fn genimage_empty_in_cwd(o: &Outcome) -> Result<(), String> {
    let img = o.ours_dir.join("images/empty.jffs2");
    let listing = Command::new(env!("CARGO_BIN_EXE_jffs2-dump"))
        .arg("--list")
        .arg("--erase-size=131072")
        .arg(&img)
        .output()
        .unwrap();
    let l = String::from_utf8_lossy(&listing.stdout);
    // Not empty: genimage's working directory (its configuration, the root, …).
    ensure(
        l.contains(" genimage-empty.cfg") && l.contains(" root/foo/1/one"),
        || format!("the `empty = true` image should hold genimage's working directory:\n{l}"),
    )
}

#[test]
fn genimage_guide() {
    if !prerequisites() {
        return;
    }
    if !common::skip::program("genimage", "genimage") {
        return;
    }
    let e = env();
    let s = Session::new(
        "genimage.md",
        "genimage",
        vec![
            step("genimage-rootfs", Mode::Parity),
            step("genimage-run", Mode::Parity)
                .contains(&["genimage --loglevel=3 --rootpath=root --tmppath=tmp --inputpath=input --outputpath=images --config genimage.cfg"])
                .check(genimage_md5),
            step("genimage-command", Mode::Parity)
                .contains(&["mkfs.jffs2 --eraseblock=131072 -d 'root' -o 'test.jffs2' "]),
            step("genimage-empty", Mode::Parity)
                .contains(&["mkfs.jffs2 --eraseblock=131072  -o '../empty.jffs2' -l -n"]),
            step("genimage-empty-in-cwd", Mode::Ours).check(genimage_empty_in_cwd),
        ],
    );
    run_session(&e, &s);
    let mut ptx = Session::new(
        "genimage.md",
        "ptxdist",
        vec![
            step("ptxdist-rule", Mode::Parity).contains(&[
                "mkfs.jffs2 -d ${WORK_DIR} --eraseblock=${PTXCONF_IMAGE_JFFS2_BLOCKSIZE} ${PTXCONF_IMAGE_JFFS2_EXTRA_ARGS} -o root.jffs2",
                "sumtool -i root.jffs2 --eraseblock=${PTXCONF_IMAGE_JFFS2_BLOCKSIZE} ${PTXCONF_IMAGE_JFFS2_SUM_EXTRA_ARGS} -o root.sum.jffs2",
            ]),
            step("ptxdist-fork", Mode::Parity)
                .contains(&["mkfs.jffs2 -d ${WORK_DIR} --eraseblock=128 --pad=0x01F80000 -b -o root.jffs2"]),
        ],
    )
    .var("WORK_DIR", "{ROOTFS}")
    .var("PTXCONF_IMAGE_JFFS2_BLOCKSIZE", "0x10000")
    .var("PTXCONF_IMAGE_JFFS2_EXTRA_ARGS", "-b -n")
    .var("PTXCONF_IMAGE_JFFS2_SUM_EXTRA_ARGS", "-b -n");
    ptx.fakeroot = true;
    run_session(&e, &ptx);
}

// ---------------------------------------------------------------------------------------
// Factory verification
// ---------------------------------------------------------------------------------------

fn factory_json(o: &Outcome) -> Result<(), String> {
    ensure(o.ours.stdout.contains("PASS rootfs.jffs2"), || {
        "the JSON gate did not pass".into()
    })
}

fn factory_corrupt(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours.stdout.contains("ERROR ") && o.ours.stdout.contains("jffs2-fsck: exit 4"),
        || "a corrupted copy should be reported with exit 4".into(),
    )
}

fn factory_changed(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours.stdout.contains("DIFF etc/motd: ")
            && o.ours.stdout.contains("DIFF etc/new-file: missing")
            && o.ours.stdout.contains("jffs2-fsck: exit 4"),
        || "the changed tree should be listed with exit 4".into(),
    )
}

#[test]
fn factory_guide() {
    if !require_root()
        || !common::require_mtd_utils()
        || !common::skip::program("fakeroot", "fakeroot")
    {
        return;
    }
    let e = env();
    let s = Session::new(
        "factory.md",
        "factory",
        vec![
            step("factory-build", Mode::Ours),
            step("factory-compare", Mode::Ours)
                .contains(&["jffs2-fsck --compare=\"$ROOTFS\" --with-xattr rootfs.jffs2"])
                .check(verified_clean),
            step("factory-json", Mode::Ours).check(factory_json),
            step("factory-readback", Mode::Ours).check(verified_clean),
            step("factory-corrupt", Mode::Ours).check(factory_corrupt),
            step("factory-changed-tree", Mode::Ours).check(factory_changed),
        ],
    )
    .var("ROOTFS", "{ROOTFS}");
    run_session(&e, &s);
}

// ---------------------------------------------------------------------------------------
// OpenWrt
// ---------------------------------------------------------------------------------------

/// With `lzma` named (`-x lzma`), our `-v` statistics are those of OpenWrt's patched
/// mkfs.jffs2 (its priorities, an lzma line); mtd-utils' own table otherwise.
const OPENWRT_TABLE: &[(&str, &str)] = &[
    (" lzo (prio:90) ", " lzo (prio:80) "),
    (" zlib (prio:80) ", " zlib (prio:60) "),
    (
        "      lzma (prio:70) - compr: 0 blocks (0/0)  decompr: 0 blocks \n",
        "",
    ),
];

const OPENWRT_IDS: &[&str] = &[
    "openwrt-sub-raw",
    "openwrt-sub",
    "openwrt-nand",
    "openwrt-build-jffs2",
    "openwrt-zyxel",
    "openwrt-end-marker",
    "openwrt-sde",
    "openwrt-lzma",
];

fn openwrt_end_marker(o: &Outcome) -> Result<(), String> {
    ensure(
        o.ours.stdout.contains("INFO end-marker 0x")
            && o.ours
                .stdout
                .contains("OpenWrt's end-of-filesystem marker (de ad c0 de)")
            && o.ours.stdout.contains("consistent (exit 0)"),
        || "jffs2-fsck should note the end marker and find the image consistent".into(),
    )?;
    ensure(o.ours.stdout.contains(" dev/console"), || {
        "the listing should show the device table's /dev/console".into()
    })
}

fn openwrt_sde(o: &Outcome) -> Result<(), String> {
    ensure(o.ours.stdout.contains("reproducible"), || {
        "two builds a second apart should be the same bytes under SOURCE_DATE_EPOCH".into()
    })?;
    ensure(
        o.ours.stdout.contains("2023-11-14 22:13:20 dev/console"),
        || "the device table's entries should carry SOURCE_DATE_EPOCH".into(),
    )
}

/// Extracts `img` with our jffs2-dump into `dir`; the snapshot of what it wrote.
fn extracted(img: &Path, dir: &Path) -> BTreeMap<String, Entry> {
    let o = Command::new(env!("CARGO_BIN_EXE_jffs2-dump"))
        .arg("--extract")
        .arg(dir)
        .arg(img)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "jffs2-dump --extract {}: {}",
        img.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    snapshot(dir)
}

fn openwrt_lzma(o: &Outcome) -> Result<(), String> {
    let lzma = o.ours_dir.join("build/root.jffs2-128k-lzma");
    let zlib = o.ours_dir.join("build/root.jffs2-128k");
    let img = read(&lzma);
    let lzma_nodes = nodes(&img, Endian { big: false })
        .iter()
        .filter(|n| n.nodetype == common::NODETYPE_INODE)
        .filter(|n| common::inode_info(n, Endian { big: false }).compr == 0x08)
        .count();
    ensure(lzma_nodes > 0, || {
        "no node is LZMA-compressed (compressor 8)".into()
    })?;
    let a = extracted(&lzma, &o.ours_dir.join("x-lzma"));
    let b = extracted(&zlib, &o.ours_dir.join("x-zlib"));
    ensure(a == b, || {
        let ka: BTreeSet<_> = a.keys().collect();
        let kb: BTreeSet<_> = b.keys().collect();
        format!(
            "the LZMA image does not hold the zlib image's files: only in LZMA {:?}, only in zlib {:?}, differing {:?}",
            ka.difference(&kb).collect::<Vec<_>>(),
            kb.difference(&ka).collect::<Vec<_>>(),
            ka.intersection(&kb).filter(|k| a[**k] != b[**k]).collect::<Vec<_>>()
        )
    })?;
    ensure(
        o.ours.stdout.contains("INFO lzma-compression ")
            && o.ours.stdout.contains("INFO end-marker ")
            && o.ours.stdout.contains("consistent (exit 0)"),
        || "jffs2-fsck should note the LZMA nodes and the end marker, exit 0".into(),
    )
}

fn openwrt_session(name: &str, jffs2opts: &str, steps: Vec<Step>) -> Session {
    let mut s = Session::new("openwrt.md", name, steps)
        .var("TARGET_DIR", "{ROOTFS}")
        .var("INCLUDE_DIR", "{WORK}/include")
        .var("KDIR", "{WORK}/build")
        .var("KDIR_TMP", "{WORK}/build/tmp")
        .var("DEVICE_NAME", "example_device")
        .var("JFFS2OPTS", jffs2opts);
    s.mkdirs = &["build/tmp"];
    s.shell = "bash"; // OpenWrt's rules.mk: SHELL:=/usr/bin/env bash (echo -ne)

    // Build/jffs2 (openwrt-build-jffs2) images files it has just copied, without -f: their
    // mtimes are the kernel's, which Debian's run is given as ours saw them (INPUT_TIMES).
    // (The -D entries' time is FIXED_CLOCK.)
    s.openwrt = true;
    s
}

#[test]
fn openwrt_guide() {
    if !prerequisites() {
        return;
    }
    let e = env();
    const PAGE_WARNING: &str = "is below 4096: -s is the memory page size of the target";
    let sub_raw = || {
        step("openwrt-sub-raw", Mode::Parity)
            .contains(&["mkfs.jffs2 $JFFS2OPTS -e 64KiB -o $KDIR/root.jffs2-64k-raw -d $TARGET_DIR -v 2>&1 1>/dev/null | awk '/^.+$/'"])
            .rewrites(OPENWRT_TABLE)
    };
    let sub = || {
        step("openwrt-sub", Mode::Parity)
            .contains(&[
                "mkfs.jffs2 --pad $JFFS2OPTS -e 128KiB -o $KDIR/root.jffs2-128k -d $TARGET_DIR -v 2>&1 1>/dev/null | awk '/^.+$/'",
                "echo -ne '\\xde\\xad\\xc0\\xde' >> $KDIR/root.jffs2-128k",
            ])
            .rewrites(OPENWRT_TABLE)
    };
    let nand = || {
        step("openwrt-nand", Mode::Parity)
            .contains(&[
                "mkfs.jffs2 --pad $JFFS2OPTS --no-cleanmarkers --pagesize=2048 -e 128KiB -o $KDIR/root.jffs2-nand-2048-128k -d $TARGET_DIR -v 2>&1 1>/dev/null | awk '/^.+$/'",
            ])
            .rewrites(OPENWRT_TABLE)
            .adds(&[PAGE_WARNING])
    };
    let le = openwrt_session(
        "openwrt-le-zlib",
        "--little-endian --squash-uids -v -X zlib -x rtime -x lzma -D {WORK}/include/device_table.txt",
        vec![
            sub_raw(),
            sub(),
            nand(),
            step("openwrt-build-jffs2", Mode::Parity).contains(&[
                "mkfs.jffs2 --pad --little-endian --squash-uids -v -e 64KiB -o kernel.bin.new -d $KDIR_TMP/$DEVICE_NAME/jffs2 2>&1 1>/dev/null | awk '/^.+$/'",
            ]),
            step("openwrt-zyxel", Mode::Parity)
                .contains(&[
                    "mkfs.jffs2 --big-endian --squash-uids -v -e 128KiB -q -f -n -x lzma -x rtime -o kernel.jffs2 -d $KDIR_TMP/zyxelnbg6716/image",
                ])
                .rewrites(OPENWRT_TABLE),
            step("openwrt-end-marker", Mode::Ours).check(openwrt_end_marker),
            step("openwrt-sde", Mode::Ours).check(openwrt_sde),
            step("openwrt-lzma", Mode::Ours)
                .contains(&["-X lzma --compression-mode=size -x rtime -x zlib"])
                .check(openwrt_lzma),
        ],
    );
    run_session(&e, &le);
    let be = openwrt_session(
        "openwrt-be-rtime-zlib",
        "--big-endian --squash-uids -v -X rtime -X zlib -x lzma -D {WORK}/include/device_table.txt",
        vec![sub_raw(), sub(), nand()],
    );
    run_session(&e, &be);
}

// ---------------------------------------------------------------------------------------
// Bookkeeping
// ---------------------------------------------------------------------------------------

/// The block ids the sessions above run, per guide (kept in step with the tests by
/// `every_guide_block_is_run`, which fails on an id run nowhere).
const RUN_IDS: &[(&str, &[&str])] = &[
    (
        "yocto.md",
        &[
            "yocto-image",
            "yocto-sum-default",
            "yocto-sum-default-mtd-utils",
            "yocto-sum-fixed",
            "yocto-summary",
            "yocto-verify",
            "openbmc-rwfs",
            "openbmc-rwfs-cypress",
            "dreambox-boot",
            "digi-sum",
            "openmoko",
            "agl",
        ],
    ),
    (
        "buildroot.md",
        &[
            "buildroot-defaults",
            "buildroot-plain",
            "buildroot-summary",
            "buildroot-summary-one-step",
            "buildroot-verify",
            "buildroot-dataflash-528",
        ],
    ),
    (
        "genimage.md",
        &[
            "genimage-rootfs",
            "genimage-run",
            "genimage-command",
            "genimage-empty",
            "genimage-empty-in-cwd",
            "ptxdist-rule",
            "ptxdist-fork",
        ],
    ),
    (
        "factory.md",
        &[
            "factory-build",
            "factory-compare",
            "factory-json",
            "factory-readback",
            "factory-corrupt",
            "factory-changed-tree",
        ],
    ),
    ("openwrt.md", OPENWRT_IDS),
];

#[test]
fn every_guide_block_is_run() {
    let mut errs = Vec::new();
    for name in GUIDES {
        let g = parse_guide(name);
        for u in &g.unannotated {
            errs.push(format!("{name}: sh block without <!-- test: ID -->: {u}"));
        }
        let run: BTreeSet<&str> = RUN_IDS
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, ids)| ids.iter().copied())
            .collect();
        for id in g.blocks.keys() {
            if !run.contains(id.as_str()) {
                errs.push(format!("{name}: block {id} is run by no test"));
            }
        }
        for id in &run {
            if !g.blocks.contains_key(*id) {
                errs.push(format!("{name}: no block {id}"));
            }
        }
        for (guide, line) in QUOTED {
            if guide == name && !g.text.contains(line) {
                errs.push(format!("{name}: does not quote {line:?}"));
            }
        }
        if g.name != *name {
            unreachable!();
        }
    }
    let index = fs::read_to_string(guide_dir().join("README.md")).unwrap();
    for name in GUIDES {
        if !index.contains(&format!("]({name})")) {
            errs.push(format!("README.md does not link {name}"));
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}
