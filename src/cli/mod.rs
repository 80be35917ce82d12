//! What the binaries share: the mtd-utils option and number grammars, message formats,
//! atomic output, progress bars, and the `argv[0]` dispatch that lets `mkfs.jffs2` (and
//! later `sumtool`, `jffs2dump`, `jffs2reader`, `fsck.jffs2`, `jefferson`) symlinks act as
//! drop-ins.

pub mod convert;
pub mod describe;
pub mod dump;
pub mod flags;
pub mod fsck;
pub mod getopt;
pub mod jefferson;
pub mod mkfs;
pub mod mount;
pub mod num;
pub mod output;
pub mod sumtool;

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::Path;

use jffs2::mkfs::MsgKind;

/// The running tool: its name as messages show it.
pub struct Tool {
    /// "mkfs.jffs2" when invoked under the mtd-utils name, else "jffs2-mkfs", etc.
    pub name: String,
}

thread_local! {
    /// The last message [`Tool::error`] printed, for [`Tool::json_error`].
    static LAST_ERROR: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// The exit status of a usage error of the tools with generated help (fsck(8)'s 16).
pub const EXIT_USAGE: i32 = 16;

impl Tool {
    /// What `--version` prints: `NAME (jffs2-tools) VERSION`, under the name run as.
    pub fn version_line(&self) -> String {
        format!(
            "{} (jffs2-tools) {}\n",
            self.name,
            env!("CARGO_PKG_VERSION")
        )
    }

    /// A usage error of a tool with generated help (jffs2-fsck, jffs2-convert, jffs2-mount):
    /// the error, then where to read more; gives the usage exit status (16, fsck(8)'s).
    pub fn usage(&self, msg: &str) -> i32 {
        self.error(msg);
        eprintln!("Try '{} --help' for more information.", self.name);
        EXIT_USAGE
    }

    /// `"<prog>: error!: <msg>"` on stderr (mtd-utils' `errmsg`). Control and bidirectional
    /// characters a name may have brought into `msg` are escaped ([`jffs2::text::message`]).
    pub fn error(&self, msg: &str) {
        LAST_ERROR.with(|e| *e.borrow_mut() = Some(msg.to_string()));
        eprintln!("{}: error!: {}", self.name, jffs2::text::message(msg));
    }

    /// The `--json` document of a run that failed before its own document: the image, the
    /// last error reported (with its errno's text for a [`Tool::sys_error`]) and the exit
    /// status. Printed on standard output; a failure to print is ignored (the run fails
    /// with `code` either way).
    pub fn json_error(&self, image: &str, code: i32) {
        let error = LAST_ERROR.with(|e| e.borrow().clone()).unwrap_or_default();
        let doc = serde_json::json!({ "image": image, "error": error, "exit_code": code });
        let doc = serde_json::to_string_pretty(&doc).unwrap_or_default();
        let _ = self.print(&format!("{doc}\n"));
    }

    /// `"<prog>: warning!: <msg>"` on stderr (mtd-utils' `warnmsg`), escaped as
    /// [`Tool::error`].
    pub fn warning(&self, msg: &str) {
        eprintln!("{}: warning!: {}", self.name, jffs2::text::message(msg));
    }

    /// mtd-utils' `sys_errmsg`: the message, then `error N (text)` indented under it by
    /// `sizeof(PROGRAM_NAME) + 1` spaces, i.e. the name length + 2 (`include/common.h`).
    pub fn sys_error(&self, msg: &str, err: &std::io::Error) {
        self.error(msg);
        let code = match err.raw_os_error() {
            Some(code) => code,
            // std reports a failed allocation without an errno: it is ENOMEM.
            None if err.kind() == std::io::ErrorKind::OutOfMemory => libc::ENOMEM,
            // No errno at all (e.g. an input larger than an image can be): its own text
            // rather than "error 0 (Success)".
            None => {
                eprintln!("{:width$}{err}", "", width = self.name.len() + 2);
                return;
            }
        };
        let text = std::io::Error::from_raw_os_error(code).to_string();
        let text = text.split(" (os error").next().unwrap_or(&text).to_string();
        LAST_ERROR.with(|e| *e.borrow_mut() = Some(format!("{msg}: {text}")));
        eprintln!(
            "{:width$}error {code} ({text})",
            "",
            width = self.name.len() + 2
        );
    }

    /// Writes `text` to standard output and flushes it. A failure (a full disk, `/dev/full`)
    /// is reported on stderr as "writing to standard output: No space left on device";
    /// the caller exits with its tool's error status.
    pub fn print(&self, text: &str) -> Result<(), StdoutFailed> {
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())
            .and_then(|()| out.flush())
            .map_err(|e| self.stdout_failed(&e))
    }

    /// Reports a failed write to standard output, except a closed pipe: a reader such as
    /// `head` that stopped reading is no error worth a message (mtd-utils' tools die of
    /// SIGPIPE there, silently).
    pub fn stdout_failed(&self, e: &std::io::Error) -> StdoutFailed {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            self.error(&format!("writing to standard output: {}", errno_text(e)));
        }
        StdoutFailed
    }

    /// A builder message.
    pub fn message(&self, kind: MsgKind, msg: &str) {
        match kind {
            MsgKind::Error => self.error(msg),
            MsgKind::Warning => self.warning(msg),
        }
    }
}

/// `n` and the noun for it: `one` for 1, else `many` ("1 directory", "2 directories").
pub fn count(n: impl Into<u64>, one: &str, many: &str) -> String {
    let n = n.into();
    format!("{n} {}", if n == 1 { one } else { many })
}

/// An `f32` as a JSON number the way it reads: its shortest decimal form (0.3), not the
/// `f64` it widens to (0.30000001192092896).
pub fn f32_json(x: f32) -> f64 {
    format!("{x}").parse().unwrap_or(f64::from(x))
}

/// Standard output could not be written (already reported).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StdoutFailed;

/// A writer that keeps going after an error and remembers the first one: for listings
/// written along the way, whose loss is reported once at the end.
pub struct Noted<W: Write> {
    /// Where the text goes.
    pub inner: W,
    /// The first error met.
    pub error: Option<std::io::Error>,
}

impl<W: Write> Noted<W> {
    /// Wraps `inner`.
    pub fn new(inner: W) -> Noted<W> {
        Noted { inner, error: None }
    }
}

impl<W: Write> Write for Noted<W> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        if self.error.is_none() {
            if let Err(e) = self.inner.write_all(b) {
                self.error = Some(e);
            }
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if self.error.is_none() {
            if let Err(e) = self.inner.flush() {
                self.error = Some(e);
            }
        }
        Ok(())
    }
}

/// The text of an I/O error without Rust's " (os error N)" and what follows it (the
/// temporary file's path, which is gone once the error is reported).
pub fn errno_text(e: &std::io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// The base name of `argv[0]`.
pub fn invoked_as(argv0: Option<&OsString>) -> String {
    argv0
        .and_then(|a| Path::new(a).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Entry point of `jffs2-mkfs`: `mkfs.jffs2` when invoked under that name.
pub fn mkfs_main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    let name = if invoked_as(args.first()) == "mkfs.jffs2" {
        "mkfs.jffs2"
    } else {
        "jffs2-mkfs"
    };
    let tool = Tool { name: name.into() };
    mkfs::main(&tool, args.get(1..).unwrap_or(&[]))
}

/// Entry point of `jffs2-dump`: `jffs2dump` when invoked under that name, `jffs2reader`
/// under that one, `jefferson` (the Python extractor's command line) under that one.
pub fn dump_main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    name_pool("jffs2-dump");
    if invoked_as(args.first()) == "jefferson" {
        let tool = Tool {
            name: "jefferson".into(),
        };
        return jefferson::main(&tool, args.get(1..).unwrap_or(&[]));
    }
    if invoked_as(args.first()) == "jffs2reader" {
        let tool = Tool {
            name: "jffs2reader".into(),
        };
        return dump::reader_main(&tool, args.get(1..).unwrap_or(&[]));
    }
    let name = if invoked_as(args.first()) == "jffs2dump" {
        "jffs2dump"
    } else {
        "jffs2-dump"
    };
    let tool = Tool { name: name.into() };
    dump::main(&tool, args.get(1..).unwrap_or(&[]))
}

/// Entry point of `jffs2-sumtool`: `sumtool` when invoked under that name.
pub fn sumtool_main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    let name = if invoked_as(args.first()) == "sumtool" {
        "sumtool"
    } else {
        "jffs2-sumtool"
    };
    let tool = Tool { name: name.into() };
    sumtool::main(&tool, args.get(1..).unwrap_or(&[]))
}

/// Names the threads of rayon's global pool, which the check, the build and the extraction
/// run on, `PREFIX-N`: per-thread CPU figures (bench/threads.sh) tell them from the main
/// thread by name. The pool is otherwise rayon's default (`RAYON_NUM_THREADS` or one
/// thread per core); building it can only fail if it exists already.
fn name_pool(prefix: &'static str) {
    let _ = rayon::ThreadPoolBuilder::new()
        .thread_name(move |i| format!("{prefix}-{i}"))
        .build_global();
}

/// Entry point of `jffs2-convert`.
pub fn convert_main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    let tool = Tool {
        name: "jffs2-convert".into(),
    };
    convert::main(&tool, args.get(1..).unwrap_or(&[]))
}

/// Entry point of `jffs2-mount` (also run by mount(8) through mount.fuse3).
pub fn mount_main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    let tool = Tool {
        name: "jffs2-mount".into(),
    };
    mount::main(&tool, args.get(1..).unwrap_or(&[]))
}

/// Entry point of `jffs2-fsck`: `fsck.jffs2` (accepting fsck(8)'s generic options) when
/// invoked under that name.
pub fn fsck_main() -> i32 {
    let args: Vec<OsString> = std::env::args_os().collect();
    let as_fsck = invoked_as(args.first()) == "fsck.jffs2";
    let name = if as_fsck { "fsck.jffs2" } else { "jffs2-fsck" };
    let tool = Tool { name: name.into() };
    name_pool("jffs2-fsck");
    fsck::main(&tool, args.get(1..).unwrap_or(&[]), as_fsck)
}

/// A progress bar on stderr, only when stderr is a terminal.
pub struct Progress {
    bar: indicatif::ProgressBar,
}

impl Progress {
    /// A bar, or `None` when stderr is not a terminal.
    pub fn new(what: &str) -> Option<Progress> {
        if !std::io::stderr().is_terminal() {
            return None;
        }
        let bar = indicatif::ProgressBar::new(0);
        let style = indicatif::ProgressStyle::with_template(
            "{prefix} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} ({bytes_per_sec}, {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(what.to_string());
        Some(Progress { bar })
    }

    /// Sets position and length.
    pub fn set(&self, done: u64, total: u64) {
        self.bar.set_length(total);
        self.bar.set_position(done);
    }

    /// The library's progress callback, moving this bar.
    pub fn callback(&self) -> jffs2::Progress {
        let bar = self.bar.clone();
        jffs2::Progress::new(move |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
    }

    /// Runs `f` with the bar hidden (for messages).
    pub fn suspend<F: FnOnce()>(&self, f: F) {
        self.bar.suspend(f);
    }

    /// Removes the bar.
    pub fn finish(self) {
        self.bar.finish_and_clear();
    }
}
