//! `jefferson`: `jffs2-dump` invoked under the name of the Python extractor that binwalk,
//! unblob and FACT run (`docs/spec/ecosystem.md` §1.2.1). Its command line
//! (`[-d|--dest DIR] [-f|--force] [-v|-vv|-vvv] [-h|--help] FILE`) and the exit statuses those
//! tools read are jefferson's (`-V`/`--version` is ours); the extraction is
//! `jffs2-dump --find --extract`'s, run by the same code: the command line is translated and
//! handed to [`super::dump::main`]. A FILE holding several filesystems gives `DIR/fs_1`,
//! `DIR/fs_2`, ... (jefferson 0.3's layout; 0.4 merges them into one garbled tree), one
//! filesystem the files in DIR itself, as before.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::flags::{self, jefferson::FLAGS, ALL};
use super::getopt::Parsed;
use super::Tool;

/// A usage error: jefferson's (click's) status 2.
const EXIT_USAGE: i32 = 2;
/// An existing DIR without `-f`, or an empty FILE: jefferson's `return -1`, i.e. 255
/// (`docs/spec/ecosystem.md` §1.2.1).
const EXIT_REFUSED: i32 = 255;
/// What jefferson prints on standard output for an existing DIR without `-f`.
const DEST_EXISTS: &str = "Destination path already exists!\n";

/// The command line, read.
#[derive(Debug, Default)]
struct Args {
    dest: Option<OsString>,
    force: bool,
    verbose: bool,
    help: bool,
    version: bool,
    operands: Vec<OsString>,
    errors: Vec<String>,
}

/// Reads `args` (without the program name) with jefferson's options.
fn parse(args: &[OsString]) -> Args {
    let mut a = Args::default();
    for p in flags::getopt(args, FLAGS, ALL) {
        match p {
            Parsed::Opt { id, arg } => match u8::try_from(id).unwrap_or(0) {
                b'd' => a.dest = arg,
                b'f' => a.force = true,
                b'v' => a.verbose = true,
                b'h' => a.help = true,
                b'V' => a.version = true,
                _ => {}
            },
            Parsed::Operand(w) => a.operands.push(w),
            Parsed::Error(msg) => a.errors.push(msg),
        }
    }
    a
}

/// A usage error: the message, where to read more, status 2.
fn usage(tool: &Tool, msg: &str) -> i32 {
    tool.error(msg);
    eprintln!("Try '{} --help' for more information.", tool.name);
    EXIT_USAGE
}

/// Runs `jefferson` with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    let a = parse(args);
    // --help wins over everything else on the line, as click's eager --help does.
    if a.help {
        return match tool.print(&flags::jefferson::help()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    if a.version {
        return match tool.print(&tool.version_line()) {
            Ok(()) => 0,
            Err(_) => 1,
        };
    }
    if let Some(msg) = a.errors.first() {
        return usage(tool, msg);
    }
    let file = match &a.operands[..] {
        [f] => PathBuf::from(f),
        [] => return usage(tool, "missing operand FILE"),
        [_, extra, ..] => {
            return usage(
                tool,
                &format!("extra operand '{}'", extra.to_string_lossy()),
            )
        }
    };
    let dest = a
        .dest
        .map_or_else(|| PathBuf::from("jffs2-root"), PathBuf::from);
    if let Some(code) = check(tool, &file, &dest, a.force) {
        return code;
    }
    // Several filesystems in FILE: each into DEST/fs_N (jefferson 0.3's layout); one: DEST
    // itself (`docs/spec/ecosystem.md` §1.2.1).
    let mut dump_args: Vec<OsString> =
        vec!["--find".into(), "--extract".into(), dest.into_os_string()];
    if a.force {
        dump_args.push("--force".into());
    }
    if a.verbose {
        dump_args.push("--verbose".into());
    }
    dump_args.push("--".into());
    dump_args.push(file.into_os_string());
    super::dump::main(tool, &dump_args)
}

/// What jefferson checks before extracting (`docs/spec/ecosystem.md` §1.2.1): FILE a file
/// that exists (else a usage error), DIR not an existing non-directory (usage error), DIR
/// not existing unless `-f` (255, its line on stdout), FILE not empty (255). `None`: go on.
fn check(tool: &Tool, file: &Path, dest: &Path, force: bool) -> Option<i32> {
    let shown = file.display();
    // A block device or FIFO reports length 0 and is read as it is: only a regular file is
    // empty.
    let empty = match std::fs::metadata(file) {
        Ok(m) if m.is_dir() => return Some(usage(tool, &format!("{shown}: is a directory"))),
        Ok(m) => m.is_file() && m.len() == 0,
        Err(e) => return Some(usage(tool, &format!("{shown}: {}", super::errno_text(&e)))),
    };
    // Links followed, as by jefferson's existence test: a dangling link is "not there"
    // and the extraction's mkdir then fails on it.
    match std::fs::metadata(dest) {
        Ok(m) if !m.is_dir() => {
            return Some(usage(
                tool,
                &format!("{}: exists and is not a directory", dest.display()),
            ))
        }
        Ok(_) if !force => {
            tool.error(&format!(
                "{}: exists (-f extracts into it, replacing nothing)",
                dest.display()
            ));
            return Some(match tool.print(DEST_EXISTS) {
                Ok(()) => EXIT_REFUSED,
                Err(_) => 1,
            });
        }
        _ => {}
    }
    if empty {
        tool.error(&format!("{shown}: empty file, nothing to extract"));
        return Some(EXIT_REFUSED);
    }
    None
}
