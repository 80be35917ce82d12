//! `jffs2-exec-as NAME [ARG]...`: runs the jffs2-tools binary that answers to NAME (`jefferson`,
//! `mkfs.jffs2`, ...: the names `src/cli/describe.rs` lists as links), from this program's
//! directory, with NAME as its `argv[0]`, which the binaries dispatch on (`src/cli/mod.rs`,
//! `invoked_as`).
//!
//! For the Python wheel only (built with the `wheel-names` feature, pyproject.toml): a wheel
//! cannot carry links, and a Cargo program cannot be called `mkfs.jffs2`, so each of those
//! names is a two-line `/bin/sh` script in `wheel/scripts/` that runs this. No Python at run
//! time, and no copy of a binary per name.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::process::Command;

use jffs2_tools::cli::describe::personality;

/// The status of a program that cannot be run (the shell's).
const CANNOT_RUN: i32 = 127;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let name = args.next().unwrap_or_default();
    std::process::exit(exec_as(&name, args.collect()));
}

/// Replaces this process by the binary of `name` run as `name` with `args`; returns only
/// on failure.
fn exec_as(name: &OsString, args: Vec<OsString>) -> i32 {
    // The names installed as links (scripts/install.sh), each with its binary.
    let found = name.to_str().and_then(personality).filter(|p| p.is_link());
    let Some(binary) = found.map(|p| p.binary) else {
        eprintln!(
            "jffs2-exec-as: {}: not a name of jffs2-tools (usage: jffs2-exec-as NAME [ARG]...)",
            name.to_string_lossy()
        );
        return CANNOT_RUN;
    };
    let target = match std::env::current_exe() {
        Ok(me) => me.with_file_name(binary),
        Err(e) => {
            eprintln!("jffs2-exec-as: where this program is: {e}");
            return CANNOT_RUN;
        }
    };
    let e = Command::new(&target).arg0(name).args(args).exec();
    eprintln!("jffs2-exec-as: {}: {e}", target.display());
    CANNOT_RUN
}
