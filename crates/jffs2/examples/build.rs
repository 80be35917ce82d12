//! Builds a JFFS2 image of a directory, in code: what `jffs2-mkfs -r DIR -o OUT -e SIZE -l -s
//! 4096` does, without its command line.
//!
//! ```text
//! cargo run -p jffs2 --example build -- DIR OUT [--eraseblock SIZE]
//! ```
//!
//! SIZE is in bytes (`131072`, `0x20000`) or with a `KiB` / `MiB` suffix (`128KiB`); the
//! default is 64 KiB. The image is little endian with 4 KiB pages, cleanmarkers and
//! mkfs.jffs2's compressors (zlib, rtime): the bytes `mkfs.jffs2 -l -s 4096 -e SIZE` writes
//! for the same directory. It is written to a temporary file beside OUT and renamed over it
//! only when complete, so OUT is never left half-written. Exit status: 0, 1 on error (the
//! message names the file), 64 for a usage error.
//!
//! The library at work: [`jffs2::source::scan_host`] reads the tree's metadata,
//! [`jffs2::mkfs::build`] reads the files and writes the image.

use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use jffs2::format::Endian;
use jffs2::mkfs::{self, MkfsConfig, MsgKind, Sink};
use jffs2::source::{self, SourceOptions};

/// The command line.
#[derive(Debug, PartialEq, Eq)]
struct Args {
    dir: PathBuf,
    out: PathBuf,
    erase_size: u32,
}

const USAGE: &str = "usage: build DIR OUT [--eraseblock SIZE]";

/// `131072`, `0x20000`, `128KiB`, `1MiB`.
fn parse_size(s: &str) -> Option<u32> {
    let (num, unit) = if let Some(n) = s.strip_suffix("KiB") {
        (n, 1024)
    } else if let Some(n) = s.strip_suffix("MiB") {
        (n, 1024 * 1024)
    } else {
        (s, 1)
    };
    let n = match num.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => num.parse().ok()?,
    };
    n.checked_mul(unit)
}

fn parse_args(args: &[String]) -> Result<Args, String> {
    let mut operands = Vec::new();
    let mut erase_size = 64 * 1024;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--eraseblock" | "-e" => {
                let v = it.next().ok_or(USAGE)?;
                erase_size = parse_size(v)
                    .filter(|&s| s >= 8192 && s % 4 == 0)
                    .ok_or_else(|| format!("bad erase-block size '{v}' (at least 8KiB)"))?;
            }
            _ => operands.push(PathBuf::from(a)),
        }
    }
    let [dir, out] = <[PathBuf; 2]>::try_from(operands).map_err(|_| USAGE.to_string())?;
    Ok(Args {
        dir,
        out,
        erase_size,
    })
}

/// Passes the builder's non-fatal messages on (the caller prints them).
#[derive(Default)]
struct Messages(Vec<String>);

impl Sink for Messages {
    fn message(&mut self, kind: MsgKind, text: &str) {
        let kind = match kind {
            MsgKind::Error => "error",
            MsgKind::Warning => "warning",
        };
        self.0.push(format!("{kind}: {text}"));
    }
}

/// What was built.
#[derive(Debug)]
struct Built {
    /// Bytes written.
    size: u64,
    /// Warnings of the tree scan and the builder.
    messages: Vec<String>,
}

/// Builds the image the command line asks for. Errors name the file concerned.
fn run(args: &Args) -> Result<Built, String> {
    let (tree, warnings) =
        source::scan_host(&args.dir, &SourceOptions::default()).map_err(|e| e.to_string())?;
    let cfg = MkfsConfig {
        endian: Endian::Little,
        erase_size: args.erase_size,
        page_size: 4096,
        ..MkfsConfig::default()
    };

    // Atomically: a temporary file in OUT's directory, renamed over OUT when complete.
    let out_name = args.out.display();
    let parent = match args.out.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let tmp = tempfile::NamedTempFile::new_in(parent).map_err(|e| format!("{out_name}: {e}"))?;
    let mut sink = Messages(warnings.iter().map(|w| format!("warning: {w}")).collect());
    let report = mkfs::build(&tree, &cfg, BufWriter::new(tmp.as_file()), &mut sink)
        .map_err(|e| format!("{out_name}: {e}"))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| format!("{out_name}: {e}"))?;
    tmp.persist(&args.out)
        .map_err(|e| format!("{out_name}: {}", e.error))?;
    Ok(Built {
        size: report.image_size,
        messages: sink.0,
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("build: {e}");
            return ExitCode::from(64);
        }
    };
    match run(&args) {
        Ok(built) => {
            for m in &built.messages {
                eprintln!("build: {m}");
            }
            let _ = writeln!(
                std::io::stderr(),
                "build: {} bytes written to {}",
                built.size,
                args.out.display()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("build: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jffs2::fs::{InodeKind, TreeOptions};
    use std::process::Command;

    fn rootfs() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/rootfs")
    }

    /// Every path below `dir`, relative, with the content of regular files.
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<(String, Option<Vec<u8>>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{prefix}{}", e.file_name().to_str().unwrap());
            let t = e.file_type().unwrap();
            if t.is_dir() {
                walk(&e.path(), &format!("{name}/"), out);
            }
            out.push((name, t.is_file().then(|| std::fs::read(e.path()).unwrap())));
        }
    }

    #[test]
    fn the_image_holds_the_directory() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("rootfs.jffs2");
        let root = rootfs();
        let args = [
            root.to_str().unwrap(),
            out.to_str().unwrap(),
            "--eraseblock",
            "16KiB",
        ];
        let args = parse_args(&args.map(String::from)).unwrap();
        assert_eq!(args.erase_size, 16384);
        let built = run(&args).unwrap();
        assert_eq!(built.messages, Vec::<String>::new());

        let image = jffs2::Image::open(&out).unwrap();
        assert_eq!(image.file_len() as u64, built.size);
        let g = image.geometry();
        assert_eq!((g.erase_size, g.endian), (16384, Endian::Little));
        let fs = image.mount().unwrap();
        let tree = fs.tree(&TreeOptions::metadata());
        assert!(tree.problems.is_empty(), "{:?}", tree.problems);

        let mut want = Vec::new();
        walk(&rootfs(), "", &mut want);
        want.sort();
        let got: Vec<String> = tree.entries[1..]
            .iter()
            .map(|e| String::from_utf8(e.path.clone()).unwrap())
            .collect();
        let want_paths: Vec<String> = want.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(got, want_paths);
        for (path, content) in &want {
            let e = tree.get(path.as_bytes()).unwrap();
            if let Some(content) = content {
                assert_eq!(e.kind, InodeKind::File, "{path}");
                let data = fs.read_data(e.ino, 0, content.len() + 1).unwrap();
                assert_eq!(&data, content, "{path}");
            }
        }
    }

    /// The bytes are mkfs.jffs2's for the same options.
    #[test]
    fn equals_mkfs_jffs2() {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mkfs_jffs2 = ["/usr/sbin", "/sbin"]
            .iter()
            .map(PathBuf::from)
            .chain(std::env::split_paths(&path))
            .map(|d| d.join("mkfs.jffs2"))
            .find(|p| p.is_file())
            .expect("mkfs.jffs2 not found: run scripts/install-test-deps.sh (mtd-utils)");
        let tmp = tempfile::tempdir().unwrap();
        let ours = tmp.path().join("ours.jffs2");
        let theirs = tmp.path().join("theirs.jffs2");
        run(&Args {
            dir: rootfs(),
            out: ours.clone(),
            erase_size: 0x20000,
        })
        .unwrap();
        let status = Command::new(mkfs_jffs2)
            .arg("-r")
            .arg(rootfs())
            .args(["-e", "0x20000", "-l", "-s", "4096", "-o"])
            .arg(&theirs)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(std::fs::read(&ours).unwrap() == std::fs::read(&theirs).unwrap());
    }

    #[test]
    fn errors_are_named_and_out_is_untouched() {
        let tmp = tempfile::tempdir().unwrap();
        let out = tmp.path().join("out.img");
        std::fs::write(&out, b"previous").unwrap();
        let e = run(&Args {
            dir: tmp.path().join("missing"),
            out: out.clone(),
            erase_size: 65536,
        })
        .unwrap_err();
        assert!(e.contains("missing"), "{e}");
        assert_eq!(std::fs::read(&out).unwrap(), b"previous");
        assert_eq!(
            parse_args(&["only-one".to_string()]),
            Err(USAGE.to_string())
        );
        assert!(parse_args(&["a", "b", "--eraseblock", "12"].map(String::from)).is_err());
        assert_eq!(parse_size("0x20000"), Some(131072));
        assert_eq!(parse_size("1MiB"), Some(1 << 20));
    }
}
