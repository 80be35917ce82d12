//! Installation: `scripts/install.sh` into temporary prefixes. The six binaries and
//! the mtd-utils names as relative links; refusal to replace a file that is not ours, `--force`,
//! `DESTDIR`, `--no-mtd-names`; `fsck -t jffs2 IMAGE` running our `fsck.jffs2`; every manual
//! page rendered by man(1) and groff without a warning, with every section and option; the
//! bash, zsh and fish completions loaded and completing.
//!
//! Needs bash, man-db, groff-base, zsh, fish and util-linux (`scripts/install-test-deps.sh`):
//! a test whose program (man, groff, zsh, fish, fsck) is missing is skipped loudly
//! (tests/common/skip.rs; a failure under `CI=true`); a missing bash fails the test.

#[path = "common/skip.rs"]
mod skip;

use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use jffs2_tools::cli::describe::{Personality, PERSONALITIES};

const BINARIES: [&str; 6] = [
    "jffs2-mkfs",
    "jffs2-sumtool",
    "jffs2-dump",
    "jffs2-fsck",
    "jffs2-convert",
    "jffs2-mount",
];

const REPO: &str = env!("CARGO_MANIFEST_DIR");

/// Where cargo put the binaries under test (`target/debug`, `target/release`).
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_jffs2-mkfs"))
        .parent()
        .expect("the binaries' directory")
        .to_path_buf()
}

/// The cargo profile of that directory.
fn profile() -> String {
    let dir = bin_dir();
    match dir.file_name().and_then(|n| n.to_str()) {
        Some("debug") | None => "dev".into(),
        Some(other) => other.into(),
    }
}

/// A fresh directory for one test. The first call removes earlier runs' (each holds copies
/// of the binaries).
fn scratch(name: &str) -> PathBuf {
    static CLEAN: std::sync::Once = std::sync::Once::new();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let ours = format!("-{}", std::process::id());
    CLEAN.call_once(|| {
        for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("install-") && !n.ends_with(&ours) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    });
    let d = tmp.join(format!("install-{name}{ours}"));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("mkdir scratch");
    d
}

/// The program `tool` from PATH or the sbin directories; fails naming the Debian package.
fn require(tool: &str, package: &str) -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
    for d in dirs {
        let p = d.join(tool);
        if p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        {
            return p;
        }
    }
    panic!(
        "{tool} not found: install the Debian package {package} (scripts/install-test-deps.sh \
         does)"
    );
}

fn run(mut c: Command) -> Output {
    let shown = format!("{c:?}");
    c.output()
        .unwrap_or_else(|e| panic!("cannot run {shown}: {e}"))
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Fails with the command's output unless it succeeded.
fn ok(what: &str, o: &Output) {
    assert!(
        o.status.success(),
        "{what}: {}\nstdout:\n{}\nstderr:\n{}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    );
}

fn install_script() -> Command {
    let bash = require("bash", "bash");
    let mut c = Command::new(bash);
    c.arg(Path::new(REPO).join("scripts/install.sh"));
    c.env_remove("DESTDIR");
    c
}

/// One installation shared by the tests, made the documented way: `scripts/install.sh
/// --prefix P` (cargo install, then the generator run with cargo), with the profile under
/// test so that nothing is compiled twice.
fn installed() -> &'static Path {
    static PREFIX: OnceLock<PathBuf> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let prefix = scratch("shared").join("prefix");
        let mut c = install_script();
        c.arg("--prefix")
            .arg(&prefix)
            .args(["--profile", &profile()]);
        if let Some(cargo) = std::env::var_os("CARGO") {
            c.env("CARGO", cargo);
        }
        ok("scripts/install.sh", &run(c));
        prefix
    })
}

/// The generator built by [`installed`].
fn generator() -> PathBuf {
    installed();
    let g = bin_dir().join("jffs2-gen");
    assert!(g.is_file(), "{} was not built", g.display());
    g
}

fn man_page(prefix: &Path, p: &Personality) -> PathBuf {
    prefix
        .join("share/man")
        .join(format!("man{}", p.section))
        .join(format!("{}.{}", p.name, p.section))
}

fn completion(prefix: &Path, shell: &str, name: &str) -> PathBuf {
    let share = prefix.join("share");
    match shell {
        "bash" => share.join("bash-completion/completions").join(name),
        "zsh" => share.join("zsh/site-functions").join(format!("_{name}")),
        _ => share
            .join("fish/vendor_completions.d")
            .join(format!("{name}.fish")),
    }
}

/// Every long option name of `p`, as the user types it.
fn longs(p: &Personality) -> Vec<String> {
    p.long().iter().map(|o| format!("--{}", o.name)).collect()
}

#[test]
fn installs_six_binaries_and_the_mtd_utils_names() {
    let prefix = installed();
    let bin = prefix.join("bin");
    for b in BINARIES {
        let m = std::fs::symlink_metadata(bin.join(b)).expect(b);
        assert!(m.is_file() && m.permissions().mode() & 0o111 != 0, "{b}");
    }
    let mut entries: Vec<String> = std::fs::read_dir(&bin)
        .expect("bin/")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    entries.sort();
    assert_eq!(
        entries,
        [
            "fsck.jffs2",
            "jefferson",
            "jffs2-convert",
            "jffs2-dump",
            "jffs2-fsck",
            "jffs2-mkfs",
            "jffs2-mount",
            "jffs2-sumtool",
            "jffs2dump",
            "jffs2reader",
            "mkfs.jffs2",
            "sumtool"
        ],
        "only the binaries and the links (no jffs2-gen, no cargo metadata)"
    );
    assert!(!prefix.join(".crates.toml").exists());
    for p in PERSONALITIES {
        if p.is_link() {
            let target = std::fs::read_link(bin.join(p.name)).expect(p.name);
            assert_eq!(target, Path::new(p.binary), "{} is a relative link", p.name);
        }
        // Each name runs as itself.
        let o = run({
            let mut c = Command::new(bin.join(p.name));
            c.arg(if p.name == "jffs2-fsck" || p.name == "fsck.jffs2" {
                "--version"
            } else {
                "-V"
            });
            c
        });
        ok(p.name, &o);
        let version = format!("{} (jffs2-tools) {}", p.name, env!("CARGO_PKG_VERSION"));
        assert!(text(&o.stdout).starts_with(&version), "{}", text(&o.stdout));
        assert!(man_page(prefix, p).is_file(), "{}", p.name);
        for shell in ["bash", "zsh", "fish"] {
            assert!(
                completion(prefix, shell, p.name).is_file(),
                "{shell} {}",
                p.name
            );
        }
    }
}

#[test]
fn refuses_a_foreign_file_unless_forced_and_stages_under_destdir() {
    let gen = generator();
    let dir = scratch("refuse");
    let prefix = dir.join("prefix");
    let bin = prefix.join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir");
    let foreign = b"#!/bin/sh\necho mtd-utils sumtool\n";
    std::fs::write(bin.join("sumtool"), foreign).expect("write");
    let with = |extra: &[&str]| {
        let mut c = install_script();
        c.arg("--prefix")
            .arg(&prefix)
            .arg("--binaries")
            .arg(bin_dir())
            .arg("--generator")
            .arg(&gen)
            .args(extra);
        run(c)
    };

    let o = with(&[]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let err = text(&o.stderr);
    assert!(
        err.contains("sumtool exists and is not a symbolic link") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(bin.join("sumtool")).expect("read"), foreign);
    assert!(
        !bin.join("jffs2-mkfs").exists(),
        "nothing installed before the refusal"
    );

    ok("--force", &with(&["--force"]));
    assert_eq!(
        std::fs::read_link(bin.join("sumtool")).expect("link"),
        Path::new("jffs2-sumtool")
    );
    for b in BINARIES {
        assert_eq!(
            std::fs::read(bin.join(b)).expect(b),
            std::fs::read(bin_dir().join(b)).expect(b),
            "{b} copied from --binaries"
        );
    }
    // Again: our own links are replaced without --force.
    ok("second install", &with(&[]));

    // A package build: DESTDIR, no mtd-utils names.
    let stage = dir.join("stage");
    let mut c = install_script();
    c.env("DESTDIR", &stage)
        .args(["--prefix", "/usr", "--no-mtd-names", "--binaries"])
        .arg(bin_dir())
        .arg("--generator")
        .arg(&gen);
    ok("DESTDIR install", &run(c));
    let usr = stage.join("usr");
    for b in BINARIES {
        assert!(usr.join("bin").join(b).is_file(), "{b}");
    }
    for p in PERSONALITIES {
        assert_eq!(
            man_page(&usr, p).exists(),
            !p.is_link(),
            "{}: pages for the jffs2-* names only",
            p.name
        );
        assert_eq!(
            usr.join("bin").join(p.name).exists(),
            !p.is_link(),
            "{}",
            p.name
        );
        assert_eq!(
            completion(&usr, "bash", p.name).exists(),
            !p.is_link(),
            "{}",
            p.name
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--binaries` with cargo's output directory and no `--generator`: cargo is asked once, to
/// build the generator alone, in that target directory and with that profile (so what the
/// binaries were built from is reused, not compiled again); the report names only paths that
/// exist once the script is done (not the generator's scratch directory).
#[test]
fn binaries_build_only_the_generator_where_they_were_built() {
    // The shared installation built everything the generator needs in this target directory.
    installed();
    let dir = scratch("binaries");
    let log = dir.join("cargo.log");
    let wrapper = dir.join("cargo");
    let real = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nprintf '%s\\n' \"$*\" >> '{}'\nexec '{}' \"$@\"\n",
            log.display(),
            Path::new(&real).display()
        ),
    )
    .expect("write the cargo wrapper");
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let prefix = dir.join("prefix");
    let mut c = install_script();
    c.arg("--prefix")
        .arg(&prefix)
        .arg("--binaries")
        .arg(bin_dir())
        .env("CARGO", &wrapper);
    let o = run(c);
    ok("install.sh --binaries", &o);

    let calls = std::fs::read_to_string(&log).expect("cargo was run");
    let target = bin_dir()
        .parent()
        .expect("the target directory")
        .canonicalize()
        .expect("canonical target directory");
    let want = format!(
        "build --quiet --locked -p jffs2-gen --profile {} --target-dir {}",
        profile(),
        target.display()
    );
    assert_eq!(
        calls.lines().collect::<Vec<_>>(),
        [want.as_str()],
        "{calls}"
    );

    let report = format!("{}{}", text(&o.stdout), text(&o.stderr));
    let mut root = None;
    for line in report.lines() {
        if let Some(r) = line.strip_prefix("installed into ") {
            root = Some(PathBuf::from(r.trim_end_matches(':')));
        } else if let (Some(r), Some(rel)) = (&root, line.trim().strip_suffix('/')) {
            assert!(r.join(rel).is_dir(), "{line}: no such directory\n{report}");
        }
        for w in line.split_whitespace().filter(|w| w.starts_with('/')) {
            let p = w.trim_end_matches([':', ',', '.']);
            assert!(Path::new(p).exists(), "{p} named but absent:\n{report}");
        }
    }
    assert_eq!(root.as_deref(), Some(prefix.as_path()), "{report}");
    assert!(report.contains("share/man/man1/"), "{report}");
    for p in PERSONALITIES {
        assert!(man_page(&prefix, p).is_file(), "{}", p.name);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fsck_t_jffs2_runs_our_fsck_jffs2() {
    if !(skip::program("fsck", "util-linux")) {
        return;
    }
    let fsck = require("fsck", "util-linux");
    for d in ["/sbin", "/sbin/fs.d", "/sbin/fs", "/etc/fs", "/etc"] {
        assert!(
            !Path::new(d).join("fsck.jffs2").exists(),
            "{d}/fsck.jffs2 exists: fsck(8) would run it before the one in PATH"
        );
    }
    let bin = installed().join("bin");
    let dir = scratch("fsck");
    let image = dir.join("rootfs.jffs2");
    let mut c = Command::new(bin.join("mkfs.jffs2"));
    c.arg("-r")
        .arg(Path::new(REPO).join("fixtures/rootfs"))
        .args(["-e", "16KiB", "-o"])
        .arg(&image);
    ok("mkfs.jffs2", &run(c));
    let path: OsString = std::env::join_paths([
        bin.clone(),
        PathBuf::from("/usr/sbin"),
        PathBuf::from("/usr/bin"),
        PathBuf::from("/sbin"),
        PathBuf::from("/bin"),
    ])
    .expect("PATH");
    // fsck(8) takes an operand as a device only when it is an absolute path.
    let fsck_t = |img: &Path, extra: &[&str]| {
        let mut c = Command::new(&fsck);
        c.env("PATH", &path)
            .env("LC_ALL", "C")
            .args(extra)
            .args(["-t", "jffs2"])
            .arg(img);
        run(c)
    };
    let o = fsck_t(&image, &[]);
    ok("fsck -t jffs2 (clean image)", &o);
    let out = text(&o.stdout);
    assert!(
        out.contains(&format!("fsck.jffs2: {}: consistent", image.display())),
        "{out}"
    );

    let mut bytes = std::fs::read(&image).expect("read image");
    assert!(bytes.len() > 2048);
    bytes[1024..1088].fill(0);
    let bad = dir.join("corrupt.jffs2");
    std::fs::write(&bad, bytes).expect("write");
    for extra in [&[][..], &["-a"][..], &["-n"][..]] {
        let o = fsck_t(&bad, extra);
        assert_eq!(
            o.status.code(),
            Some(4),
            "fsck {extra:?} -t jffs2 (corrupt image):\n{}{}",
            text(&o.stdout),
            text(&o.stderr)
        );
        assert!(
            text(&o.stdout).contains("errors found"),
            "{}",
            text(&o.stdout)
        );
    }
}

/// man(1)'s output with `-` for the minus and hyphen glyphs and no hyphenation breaks.
fn plain(s: &str) -> String {
    s.replace(['\u{2212}', '\u{2010}'], "-")
}

#[test]
fn man_pages_render_without_warnings() {
    if !(skip::program("man", "man-db") && skip::program("groff", "groff-base")) {
        return;
    }
    let man = require("man", "man-db");
    let groff = require("groff", "groff-base");
    let prefix = installed();
    for p in PERSONALITIES {
        let page = man_page(prefix, p);
        let mut c = Command::new(&groff);
        c.args(["-man", "-ww", "-z", "-Tutf8"]).arg(&page);
        let o = run(c);
        ok("groff", &o);
        assert!(
            o.stderr.is_empty(),
            "{}: groff warnings:\n{}",
            p.name,
            text(&o.stderr)
        );

        let render = |args: &[&dyn AsRef<std::ffi::OsStr>]| {
            let mut c = Command::new(&man);
            c.env("MANPAGER", "cat")
                .env("PAGER", "cat")
                .env("MANWIDTH", "80")
                .env("LC_ALL", "C.UTF-8")
                .env_remove("MANPATH");
            for a in args {
                c.arg(a);
            }
            run(c)
        };
        let o = render(&[&"--warnings", &"-l", &page]);
        ok("man -l", &o);
        assert!(
            o.stderr.is_empty(),
            "{}: man warnings:\n{}",
            p.name,
            text(&o.stderr)
        );
        let out = plain(&text(&o.stdout));
        for heading in [
            "NAME",
            "SYNOPSIS",
            "DESCRIPTION",
            "OPTIONS",
            "EXIT STATUS",
            "COMPATIBILITY",
            "SEE ALSO",
        ] {
            assert!(
                out.lines().any(|l| l == heading),
                "{}: no {heading} section:\n{out}",
                p.name
            );
        }
        assert!(
            out.contains(&format!("{} - ", p.name)),
            "{}: NAME line:\n{out}",
            p.name
        );
        for long in longs(p) {
            assert!(out.contains(&long), "{}: {long} missing:\n{out}", p.name);
        }
        // Found by name: in PREFIX/share/man, and through PATH as `man jffs2-mkfs` finds it
        // (man-db searches BINDIR/../share/man for every BINDIR in PATH).
        let o = render(&[&"-M", &prefix.join("share/man"), &p.name]);
        ok(&format!("man -M ... {}", p.name), &o);
        assert!(
            plain(&text(&o.stdout)).contains(&format!("{} - ", p.name)),
            "{}",
            p.name
        );
        let mut c = Command::new(&man);
        c.env_remove("MANPATH")
            .env(
                "PATH",
                std::env::join_paths([
                    prefix.join("bin"),
                    PathBuf::from("/usr/bin"),
                    PathBuf::from("/bin"),
                ])
                .expect("PATH"),
            )
            .args(["-w", p.name]);
        let o = run(c);
        ok(&format!("man -w {}", p.name), &o);
        assert_eq!(
            PathBuf::from(text(&o.stdout).trim()),
            page,
            "man {} finds the installed page through PATH",
            p.name
        );
    }
}

/// What the bash completion of `name` offers for `words` (the last one being completed).
fn bash_complete(file: &Path, name: &str, words: &[&str], cwd: &Path) -> Vec<String> {
    // compopt changes the options of a completion in progress; there is none here.
    let script = r#"
compopt() { :; }
source "$1" || exit 3
spec=$(complete -p "$2") || exit 4
fn=${spec#*-F }; fn=${fn%% *}
shift 2
COMP_WORDS=("$@")
COMP_CWORD=$(( $# - 1 ))
COMP_LINE="$*"
COMP_POINT=${#COMP_LINE}
prev=""
[ $COMP_CWORD -gt 0 ] && prev=${COMP_WORDS[COMP_CWORD-1]}
"$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "$prev"
printf '%s\n' "${COMPREPLY[@]}"
"#;
    let mut c = Command::new(require("bash", "bash"));
    c.current_dir(cwd)
        .args(["--norc", "--noprofile", "-c", script, "bash"])
        .arg(file)
        .arg(name)
        .args(words);
    let o = run(c);
    ok(&format!("bash completion of {words:?}"), &o);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    text(&o.stdout).lines().map(str::to_string).collect()
}

#[test]
fn bash_completions_complete() {
    let prefix = installed();
    let cwd = scratch("bash");
    for p in PERSONALITIES {
        let file = completion(prefix, "bash", p.name);
        let offered = bash_complete(&file, p.name, &[p.name, "--"], &cwd);
        for long in longs(p) {
            assert!(
                offered.contains(&long),
                "{}: {long} not offered: {offered:?}",
                p.name
            );
        }
    }
    for name in ["jffs2-mkfs", "mkfs.jffs2"] {
        let file = completion(prefix, "bash", name);
        assert_eq!(
            bash_complete(&file, name, &[name, "--erase"], &cwd),
            ["--eraseblock"]
        );
        let mut compressors = bash_complete(&file, name, &[name, "-x", ""], &cwd);
        compressors.sort();
        assert!(
            ["lzo", "rtime", "zlib"]
                .iter()
                .all(|c| compressors.iter().any(|x| x == c)),
            "{compressors:?}"
        );
        assert_eq!(
            bash_complete(&file, name, &[name, "-m", "fa"], &cwd),
            ["favourlzo"]
        );
    }
    let file = completion(prefix, "bash", "jffs2-convert");
    assert_eq!(
        bash_complete(
            &file,
            "jffs2-convert",
            &["jffs2-convert", "--input-endian", "b"],
            &cwd
        ),
        ["big"]
    );
}

#[test]
fn zsh_completions_load() {
    if !(skip::program("zsh", "zsh")) {
        return;
    }
    let zsh = require("zsh", "zsh");
    let prefix = installed();
    let dir = prefix.join("share/zsh/site-functions");
    for p in PERSONALITIES {
        let mut c = Command::new(&zsh);
        c.arg("-n").arg(completion(prefix, "zsh", p.name));
        ok(&format!("zsh -n _{}", p.name), &run(c));
    }
    // compinit finds every function in fpath and registers it for its command.
    let names: Vec<&str> = PERSONALITIES.iter().map(|p| p.name).collect();
    let script = r#"
fpath=("$1" $fpath)
shift
autoload -Uz compinit && compinit -u -D || exit 3
for n in "$@"; do print -r -- "$n=${_comps[$n]}"; done
"#;
    let mut c = Command::new(&zsh);
    c.env("HOME", scratch("zsh"))
        .args(["-f", "-c", script, "zsh"])
        .arg(&dir)
        .args(&names);
    let o = run(c);
    ok("zsh compinit", &o);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    let expected: Vec<String> = names.iter().map(|n| format!("{n}=_{n}")).collect();
    assert_eq!(
        text(&o.stdout).lines().collect::<Vec<_>>(),
        expected,
        "every command has its completion function"
    );
    // Sourced directly (not autoloaded), each file registers itself with compdef.
    for p in PERSONALITIES {
        let mut c = Command::new(&zsh);
        c.env("HOME", scratch("zsh"))
            .args([
                "-f",
                "-c",
                r#"autoload -Uz compinit && compinit -u -D && source "$1" && print -r -- ${_comps[$2]}"#,
                "zsh",
            ])
            .arg(completion(prefix, "zsh", p.name))
            .arg(p.name);
        let o = run(c);
        ok(&format!("zsh source _{}", p.name), &o);
        assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
        assert_eq!(text(&o.stdout).trim(), format!("_{}", p.name));
    }
}

/// What fish offers for `line`, with the completions found in `dir` (autoloaded) or
/// sourced from `file`.
fn fish_complete(setup: &str, line: &str) -> Vec<String> {
    let fish = require("fish", "fish");
    let mut c = Command::new(fish);
    // fish autoloads the completions of commands it finds in PATH only.
    let bin = installed().join("bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    let path = std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path)))
        .expect("PATH");
    c.env("PATH", path)
        .env("HOME", scratch("fish"))
        .env("XDG_CONFIG_HOME", scratch("fish-config"))
        .env("XDG_DATA_HOME", scratch("fish-data"))
        .args(["--no-config", "-c"])
        .arg(format!("{setup}; complete -C'{line}'"));
    let o = run(c);
    ok(&format!("fish complete -C'{line}'"), &o);
    assert!(o.stderr.is_empty(), "{}", text(&o.stderr));
    text(&o.stdout)
        .lines()
        .map(|l| l.split('\t').next().unwrap_or_default().to_string())
        .collect()
}

#[test]
fn fish_completions_complete() {
    if !(skip::program("fish", "fish")) {
        return;
    }
    let prefix = installed();
    let file = completion(prefix, "fish", "jffs2-mkfs");
    let source = format!("source '{}'", file.display());
    assert_eq!(
        fish_complete(&source, "jffs2-mkfs --erase"),
        ["--eraseblock"]
    );
    let mut compressors = fish_complete(&source, "jffs2-mkfs -x ");
    compressors.sort();
    assert!(
        ["lzo", "rtime", "zlib"]
            .iter()
            .all(|c| compressors.iter().any(|x| x == c)),
        "{compressors:?}"
    );
    // Autoloaded from the installed directory, as fish does with vendor_completions.d.
    let dir = prefix.join("share/fish/vendor_completions.d");
    let autoload = format!("set -p fish_complete_path '{}'", dir.display());
    for p in PERSONALITIES {
        let offered = fish_complete(&autoload, &format!("{} --", p.name));
        for long in longs(p) {
            assert!(
                offered.contains(&long),
                "{}: {long} not offered: {offered:?}",
                p.name
            );
        }
    }
}
