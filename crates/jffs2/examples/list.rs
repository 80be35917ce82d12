//! Lists the files of a JFFS2 image as Linux would show them mounted, one line per entry
//! (mode, owner, size, path), like `ls -lR`:
//!
//! ```text
//! cargo run -p jffs2 --example list -- IMAGE
//! ```
//!
//! The library at work: [`jffs2::Image::open`] reads the image, finds its byte order and
//! erase size and pads it as flashed, [`jffs2::Image::mount`] reads it as the kernel's mount
//! does and builds the filesystem model, whose [`jffs2::fs::Fs::tree`] is what `find` and
//! `stat` would show. Exit status: 0, 1 when the image cannot be read or is not JFFS2 (the message names
//! the image), 2 when some entries cannot be read (each is named on stderr), 64 for a usage
//! error.

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;

use jffs2::extract::{escape, format_mode};
use jffs2::fs::{InodeKind, TreeOptions};
use jffs2::{Image, ImageError};

/// How a listing went.
#[derive(Debug, Default, PartialEq, Eq)]
struct Listed {
    /// Entries listed.
    entries: usize,
    /// Problems found while reading the inodes (entries missing from the listing, bad data).
    problems: Vec<String>,
}

/// Lists `image` to `out`. Errors name the image.
fn run(image: &Path, out: &mut dyn Write) -> Result<Listed, String> {
    let name = image.display();
    let opened = Image::open(image).map_err(|e| match e {
        // These name the image themselves.
        ImageError::Io { .. } | ImageError::Directory(_) => e.to_string(),
        e => format!("{name}: {e}"),
    })?;
    let fs = opened
        .mount()
        .map_err(|e| format!("{name}: Linux would not mount this image: {}", e.0))?;
    let tree = fs.tree(&TreeOptions::metadata());

    let write_err = |e: io::Error| format!("writing the listing of {name}: {e}");
    for e in &tree.entries {
        let size = match (e.kind, e.rdev) {
            (InodeKind::Char | InodeKind::Block, Some((major, minor))) => {
                format!("{major:>4}, {minor:>4}")
            }
            _ => e.size.to_string(),
        };
        let target = match &e.target {
            Some(t) => format!(" -> {}", escape(t, false)),
            None => String::new(),
        };
        writeln!(
            out,
            "{} {:>5} {:>5} {:>10} {}{}",
            format_mode(e.mode),
            e.uid,
            e.gid,
            size,
            escape(&e.path, false),
            target
        )
        .map_err(write_err)?;
    }
    out.flush().map_err(write_err)?;
    Ok(Listed {
        entries: tree.entries.len(),
        problems: tree
            .problems
            .iter()
            .map(|p| format!("{name}: {p}"))
            .collect(),
    })
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [image] = args.as_slice() else {
        eprintln!("usage: list IMAGE");
        return ExitCode::from(64);
    };
    match run(Path::new(image), &mut io::stdout().lock()) {
        Ok(listed) if listed.problems.is_empty() => ExitCode::SUCCESS,
        Ok(listed) => {
            for p in &listed.problems {
                eprintln!("list: {p}");
            }
            ExitCode::from(2)
        }
        Err(message) => {
            eprintln!("list: {message}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::process::Command;

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
    }

    /// mtd-utils' mkfs.jffs2 (`/usr/sbin`, `/sbin`, then `PATH`); never skipped:
    /// `scripts/install-test-deps.sh` installs it.
    fn mkfs_jffs2() -> PathBuf {
        let path = std::env::var_os("PATH").unwrap_or_default();
        ["/usr/sbin", "/sbin"]
            .iter()
            .map(PathBuf::from)
            .chain(std::env::split_paths(&path))
            .map(|d| d.join("mkfs.jffs2"))
            .find(|p| p.is_file())
            .expect("mkfs.jffs2 not found: run scripts/install-test-deps.sh (mtd-utils)")
    }

    /// Every path below `dir`, relative, sorted.
    fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let e = e.unwrap();
            let name = format!("{prefix}{}", e.file_name().to_str().unwrap());
            if e.file_type().unwrap().is_dir() {
                walk(&e.path(), &format!("{name}/"), out);
            }
            out.push(name);
        }
        out.sort();
    }

    #[test]
    fn lists_every_file_of_an_image_made_by_mkfs_jffs2() {
        let tmp = tempfile::tempdir().unwrap();
        let image = tmp.path().join("rootfs.jffs2");
        let status = Command::new(mkfs_jffs2())
            .arg("-r")
            .arg(fixtures().join("rootfs"))
            .arg("-D")
            .arg(fixtures().join("device_table.txt"))
            .args(["-e", "0x20000", "-b", "-n", "-o"])
            .arg(&image)
            .status()
            .unwrap();
        assert!(status.success(), "mkfs.jffs2 failed");

        let mut out = Vec::new();
        let listed = run(&image, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert_eq!(listed.problems, Vec::<String>::new());
        assert_eq!(listed.entries, text.lines().count());
        let listed_paths: Vec<&str> = text
            .lines()
            .map(|l| l.split(" -> ").next().unwrap())
            .map(|l| l.rsplit(' ').next().unwrap())
            .collect();

        let mut files = Vec::new();
        walk(&fixtures().join("rootfs"), "", &mut files);
        for f in &files {
            assert!(
                listed_paths.contains(&f.as_str()),
                "{f} missing from:\n{text}"
            );
        }
        // The device table's entries, with their device numbers.
        let console = text.lines().find(|l| l.ends_with(" dev/console")).unwrap();
        assert!(console.starts_with("crw------- "), "{console}");
        assert!(console.contains("   5,    1 "), "{console}");
        for dev in ["dev/tty0", "dev/tty3", "dev/mtdblock2", "dev/null"] {
            assert!(listed_paths.contains(&dev), "{dev} missing from:\n{text}");
        }
        let link = text.lines().find(|l| l.contains(" bin/sh")).unwrap();
        assert!(link.starts_with('l') && link.contains(" -> "), "{link}");
    }

    #[test]
    fn errors_name_the_image() {
        let tmp = tempfile::tempdir().unwrap();
        let missing = tmp.path().join("missing.img");
        let e = run(&missing, &mut Vec::new()).unwrap_err();
        assert!(e.starts_with(&format!("{}: ", missing.display())), "{e}");

        let junk = tmp.path().join("junk.img");
        std::fs::write(&junk, b"this is not a flash image").unwrap();
        let e = run(&junk, &mut Vec::new()).unwrap_err();
        assert!(
            e.starts_with(&format!("{}: not a JFFS2 image", junk.display())),
            "{e}"
        );
    }
}
