//! `jffs2-gen [--out DIR] [--no-mtd-names]`: writes the manual pages and shell completions
//! of every jffs2-tools command into DIR (default `target/dist`): `DIR/man/man{1,8}/` and
//! `DIR/completions/{bash,zsh,fish}/`. `SOURCE_DATE_EPOCH` sets the date on the pages (today by default).

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "Usage: jffs2-gen [--out DIR] [--no-mtd-names]
Writes DIR/man/man{1,8}/*.{1,8} and DIR/completions/{bash,zsh,fish}/* for jffs2-mkfs,
jffs2-sumtool, jffs2-dump, jffs2-fsck, jffs2-convert, jffs2-mount and (unless --no-mtd-names) the
mtd-utils names mkfs.jffs2, sumtool, jffs2dump, jffs2reader and fsck.jffs2, and jefferson.
  --out DIR        output directory (default: target/dist)
  --no-mtd-names   only the jffs2-* names
SOURCE_DATE_EPOCH, when set, is the date on the pages (today otherwise).
";

fn main() -> ExitCode {
    let mut out = PathBuf::from("target/dist");
    let mut opts = jffs2_gen::Options::default();
    let mut args = std::env::args_os().skip(1);
    while let Some(a) = args.next() {
        match a.to_str() {
            Some("--out") => match args.next() {
                Some(d) => out = PathBuf::from(d),
                None => {
                    eprint!("jffs2-gen: --out needs a directory\n{USAGE}");
                    return ExitCode::from(2);
                }
            },
            Some("--no-mtd-names") => opts.mtd_names = false,
            Some("-h" | "--help") => {
                print!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            _ => {
                eprint!(
                    "jffs2-gen: unknown argument {}\n{USAGE}",
                    a.to_string_lossy()
                );
                return ExitCode::from(2);
            }
        }
    }
    if let Some(v) = std::env::var_os("SOURCE_DATE_EPOCH") {
        match v.to_str().and_then(|s| s.trim().parse::<u64>().ok()) {
            Some(t) => opts.date = Some(jffs2_gen::date_of(t)),
            None => {
                eprintln!("jffs2-gen: SOURCE_DATE_EPOCH is not a number");
                return ExitCode::from(2);
            }
        }
    }
    match jffs2_gen::generate(&out, &opts) {
        Ok(files) => {
            eprintln!("jffs2-gen: {} files in {}", files.len(), out.display());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("jffs2-gen: {}: {e}", out.display());
            ExitCode::FAILURE
        }
    }
}
