//! The Python wheel (pyproject.toml): built from this repository by maturin, installed with
//! pip into a fresh virtual environment, its programs run from the environment's `bin/`.
//!
//! * the six binaries are native programs, and every other name (jefferson, mkfs.jffs2,
//!   sumtool, jffs2dump, jffs2reader, fsck.jffs2) is a `/bin/sh` script running
//!   `jffs2-exec-as`: no Python at run time;
//! * each name answers as itself (`--version` names it), `jefferson --help` is jefferson's,
//!   and an image made by the wheel's `mkfs.jffs2` extracts with its `jefferson`;
//! * the binaries load nothing but the C library, libgcc_s and zlib (the wheel is built
//!   without libdeflate: bundling it would make maturin put Python launchers in bin/).
//!
//! The wheel is built in the `dev` profile into `target/wheel-build` (kept between runs; a
//! release wheel takes several minutes more on two cores: docs/TESTING.md). maturin comes from
//! `$JFFS2_TEST_VENV/bin` (default `/opt/jffs2-test-venv`, scripts/install-test-deps.sh);
//! without it the test is skipped loudly (a failure under `CI=true`).

#[path = "common/skip.rs"]
mod skip;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use jffs2_tools::cli::describe::PERSONALITIES;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// The binaries the wheel installs.
const BINARIES: [&str; 6] = [
    "jffs2-mkfs",
    "jffs2-sumtool",
    "jffs2-dump",
    "jffs2-fsck",
    "jffs2-convert",
    "jffs2-mount",
];
/// The other names: those scripts/install.sh links (`cli::describe`).
fn names() -> Vec<&'static str> {
    PERSONALITIES
        .iter()
        .filter(|p| p.is_link())
        .map(|p| p.name)
        .collect()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn run(c: &mut Command) -> Output {
    let shown = format!("{c:?}");
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {shown}: {e}"))
}

fn ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {}\n{}\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

/// Builds the wheel into `out`; returns its path.
fn build_wheel(maturin: &Path, out: &Path) -> PathBuf {
    let o = run(Command::new(maturin)
        .args(["build", "--profile", "dev", "--out"])
        .arg(out)
        .env(
            "CARGO_TARGET_DIR",
            Path::new(REPO).join("target/wheel-build"),
        )
        .current_dir(REPO));
    ok(&o, "maturin build");
    let wheels: Vec<PathBuf> = std::fs::read_dir(out)
        .expect("wheel directory")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    assert_eq!(wheels.len(), 1, "{wheels:?}");
    wheels[0].clone()
}

#[test]
fn wheel_installs_every_name_into_a_fresh_venv() {
    let venv = std::env::var_os("JFFS2_TEST_VENV").unwrap_or("/opt/jffs2-test-venv".into());
    let maturin = Path::new(&venv).join("bin/maturin");
    if skip::pretend_missing("maturin") || !maturin.is_file() {
        skip::skip(&format!("maturin ({})", maturin.display()));
        return;
    }
    let scratch = tempfile::Builder::new()
        .prefix("wheel-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .expect("scratch");
    let wheel = build_wheel(&maturin, &scratch.path().join("dist"));
    let fresh = scratch.path().join("venv");
    ok(
        &run(Command::new("python3").args(["-m", "venv"]).arg(&fresh)),
        "python3 -m venv",
    );
    let o = run(Command::new(fresh.join("bin/pip"))
        .args(["install", "--no-index", "--disable-pip-version-check", "-q"])
        .arg(&wheel));
    ok(&o, "pip install");
    let bin = fresh.join("bin");

    for b in BINARIES {
        let head = std::fs::read(bin.join(b)).unwrap_or_else(|e| panic!("{b}: {e}"));
        assert!(head.starts_with(b"\x7fELF"), "{b} is a native program");
    }
    let names = names();
    assert_eq!(names.len(), 6, "{names:?}");
    for n in &names {
        let script = std::fs::read_to_string(bin.join(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
        assert!(script.starts_with("#!/bin/sh\n"), "{n}: {script}");
    }
    // Each answers as itself.
    for name in BINARIES.iter().chain(names.iter()) {
        let o = run(Command::new(bin.join(name))
            .arg("--version")
            .env("PATH", "/usr/bin:/bin"));
        ok(&o, name);
        let out = text(&o.stdout) + &text(&o.stderr);
        assert!(
            out.contains(&format!("{name} (jffs2-tools) ")),
            "{name}: {out}"
        );
    }
    // jffs2-exec-as runs only those names.
    let o = run(Command::new(bin.join("jffs2-exec-as")).args(["jffs2-mkfs", "--version"]));
    assert_eq!(o.status.code(), Some(127), "{}", text(&o.stderr));
    let o = run(Command::new(bin.join("jefferson")).arg("--help"));
    ok(&o, "jefferson --help");
    assert!(text(&o.stdout).starts_with("Usage: jefferson [OPTIONS] FILE"));
    let o = run(Command::new(bin.join("jffs2-mkfs")).arg("--version"));
    ok(&o, "jffs2-mkfs --version");

    round_trip(&bin, scratch.path());
    only_system_libraries(&bin);
}

/// An image made by the wheel's `mkfs.jffs2`, extracted by its `jefferson`.
fn round_trip(bin: &Path, dir: &Path) {
    let root = dir.join("root");
    std::fs::create_dir_all(root.join("etc")).expect("root");
    let data: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("etc/blob"), &data).expect("blob");
    let img = dir.join("fs.img");
    let o = run(Command::new(bin.join("mkfs.jffs2"))
        .arg("-r")
        .arg(&root)
        .arg("-o")
        .arg(&img));
    ok(&o, "mkfs.jffs2");
    let out = dir.join("out");
    let o = run(Command::new(bin.join("jefferson"))
        .arg("-d")
        .arg(&out)
        .arg(&img));
    ok(&o, "jefferson");
    assert_eq!(
        std::fs::read(out.join("etc/blob")).expect("extracted"),
        data
    );
}

/// ldd of each binary: libc, libgcc_s, the loader and zlib, nothing else.
fn only_system_libraries(bin: &Path) {
    if !skip::program("ldd", "libc-bin") {
        return;
    }
    for b in BINARIES {
        let o = run(Command::new("ldd").arg(bin.join(b)));
        ok(&o, "ldd");
        for line in text(&o.stdout).lines() {
            let lib = line.split_whitespace().next().unwrap_or_default();
            let resolved = line.split("=>").nth(1).unwrap_or_default();
            let system = [
                "linux-vdso",
                "libc.so",
                "libgcc_s",
                "ld-linux",
                "libz.so",
                "libm.so",
            ]
            .iter()
            .any(|s| lib.contains(s));
            assert!(system, "{b} needs {line}");
            assert!(!resolved.contains("not found"), "{b}: {line}");
        }
    }
}
