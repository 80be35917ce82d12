//! `jffs2-dump` / `jffs2dump`: the command line of mtd-utils' jffs2dump
//! (`docs/spec/mtd-utils-spec.md` §6.1): `[-b|-l] [-c] [-v] [-e FILE [-r]] [-d LEN -o LEN] [-h] [-V]
//! IMAGE`, with GNU getopt_long's grammar and jffs2dump's messages and exit codes; under the
//! `jffs2-dump` name also the views and file access of `views` (`--json`, `--summary`,
//! `--blocks`, `--map`, `--info`, `--list`, `--cat`, `--extract`), `--find` (with `--extract`:
//! every filesystem of the file into `DIR/fs_N`); invoked as `jffs2reader`,
//! that tool's command line ([`views::reader_main`]).
//!
//! The text on stdout is jffs2dump's (the core's [`jffs2::dump`]). Where we differ, it is on
//! purpose, and never on stdout:
//!
//! * `-e FILE` converts every node in place (jffs2dump drops xrefs, obsolete and unknown
//!   nodes and corrupts device numbers and ACLs); FILE is replaced atomically (jffs2dump
//!   opens it without `O_TRUNC`, leaving a stale tail); a FILE that cannot be created is an
//!   error with exit status 1 (jffs2dump says so and exits 0); the name is not cut at 255
//!   bytes.
//! * `-d/-o` on an image that is not a whole number of pages: an error (jffs2dump loops
//!   forever). Negative sizes are refused (jffs2dump declares a negative-size array).
//! * A node that would make jffs2dump loop forever is shown once, and a warning on stderr
//!   says what happened (the other deviations of [`jffs2::dump::Deviation`] too).
//! * Errors name the file.
//! * Invoked as `jffs2-dump`: a wrong number of operands exits 1 with a message (jffs2dump
//!   prints its help and exits **0**, kept under the `jffs2dump` name for scripts);
//!   `--recalccrc` takes no argument (jffs2dump declares it `required_argument`, so
//!   `--recalccrc -e out img` eats the `-e`; under the `jffs2dump` name it still does);
//!   `--big-endian` / `--little-endian` are accepted as well.

use std::ffi::OsString;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use jffs2::dump::{self, ContentOptions, SwapOptions, SwapReport};
use jffs2::extract::ImageMap;
use jffs2::format::Endian;

use super::flags;
pub use super::flags::dump::help;
use super::flags::dump::{
    DROP_IN, FLAGS, OPT_BLOCKS, OPT_CAT, OPT_DEVTABLE, OPT_ERASE, OPT_EXTRACT, OPT_FIND, OPT_FORCE,
    OPT_INFO, OPT_JSON, OPT_LIST, OPT_MAP, OPT_NO_OWNERS, OPT_NO_XATTRS, OPT_SUMMARY, OURS,
};
use super::getopt::{text, Parsed};
use super::output::Output;
use super::Tool;

mod find;
mod views;

pub use views::reader_main;

/// C `atoi`: leading white space, a sign, decimal digits; 0 without digits; the `long`
/// result truncated to `int`.
fn atoi(s: &str) -> i32 {
    let t = s.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i128 = 0;
    for c in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + i128::from(c - b'0')).min(i128::from(i64::MAX) + 1);
    }
    let v = if neg { -v } else { v };
    v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64 as i32
}

/// The text of an I/O error without Rust's " (os error N)".
fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    s.split(" (os error").next().unwrap_or(&s).to_string()
}

/// Runs the tool with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    match run(tool, args) {
        Ok(code) | Err(Exit(code)) => code,
    }
}

/// Exit with this status; any message has been printed.
struct Exit(i32);

/// The image `-c`/`-e` read.
enum Input {
    /// Mapped (see `jffs2::extract::ImageMap`).
    Mapped(ImageMap),
    /// Read into memory (to peel OOB bytes, or not mappable).
    Owned(Vec<u8>),
}

/// How a write to stdout failed.
fn stdout_failed(tool: &Tool, e: &io::Error) -> Exit {
    tool.stdout_failed(e);
    if e.kind() == io::ErrorKind::BrokenPipe {
        // A reader such as `head` went away: jffs2dump dies of SIGPIPE (status 141 in the
        // shell); end the same way, quietly.
        Exit(141)
    } else {
        Exit(1)
    }
}

/// Writes `text` to stdout, flushed.
fn print_out(tool: &Tool, text: &str) -> Result<(), Exit> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| stdout_failed(tool, &e))
}

/// Fails (status 1) when a mapped input shrank while it was read (`jffs2::mapguard`: its
/// vanished pages read as zeros): nothing derived from it is committed or called a success.
fn input_unchanged(tool: &Tool, shown: &dyn std::fmt::Display) -> Result<(), Exit> {
    if jffs2::mapguard::faulted_any() {
        tool.error(&format!("{shown}: changed (shrank) while being read"));
        return Err(Exit(1));
    }
    Ok(())
}

/// A log writer that remembers whether it failed (to tell its errors from the image
/// output's).
struct Log<'a> {
    out: &'a mut dyn Write,
    failed: bool,
}

impl Write for Log<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf).inspect_err(|_| self.failed = true)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush().inspect_err(|_| self.failed = true)
    }
}

/// The options, as they stand after the command line has been read.
#[derive(Default)]
struct Opts {
    endian: Option<Endian>,
    content: bool,
    verbose: bool,
    convert: Option<OsString>,
    recalc: bool,
    datsize: i32,
    oobsize: i32,
    /// A usage error was reported (the help follows once the command line is read).
    error: bool,
    operands: Vec<OsString>,
    va: views::ViewArgs,
}

/// What reading the command line came to.
enum Command {
    /// Dump with these options.
    Run(Box<Opts>),
    /// Exit now with this status (`-h`, `-V`, ...).
    Exit(i32),
}

fn run(tool: &Tool, args: &[OsString]) -> Result<i32, Exit> {
    let drop_in = tool.name == "jffs2dump";
    let mut o = match parse(tool, args, drop_in)? {
        Command::Run(o) => *o,
        Command::Exit(code) => return Ok(code),
    };
    size_as_convert_target(tool, &o)?;
    let Some(image) = image_operand(tool, &o, drop_in)? else {
        return Ok(0);
    };
    let shown = image.display();
    let endian = o.endian.unwrap_or_else(Endian::host);

    let peel = o.datsize != 0 && o.oobsize != 0;
    if let (true, Some(dir)) = (o.va.find, o.va.extract.clone()) {
        match find::extract_all(tool, &image, &o.va, &dir)? {
            find::Multi::Done(code) => return Ok(code),
            find::Multi::Single => o.va.find = false,
        }
    }
    if o.va.find {
        return find::run(tool, &image, &o.va);
    }
    if o.va.any() && !o.content && o.convert.is_none() && !peel {
        let stdout = io::stdout();
        let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());
        let code = views::run(tool, &image, None, &o.va, &mut out);
        out.flush().map_err(|e| stdout_failed(tool, &e))?;
        input_unchanged(tool, &shown)?;
        return code;
    }
    let mut input = open_input(tool, &image, peel, o.va.window())?;

    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(1 << 16, stdout.lock());

    if let (true, Input::Owned(data)) = (peel, &mut input) {
        peel_oob(tool, &o, data, &mut out, &shown)?;
    }

    let trimmer = match &input {
        Input::Mapped(m) => Some(m.trimmer(views::TRIM_LIMIT, views::TRIM_PERIOD)),
        Input::Owned(_) => None,
    };
    let data: &[u8] = match &input {
        Input::Mapped(m) => m.bytes(),
        Input::Owned(v) => v,
    };
    if o.content {
        let opts = ContentOptions {
            endian,
            verbose: o.verbose,
        };
        dump_content(tool, data, &opts, &mut out, &shown)?;
    }
    if let Some(dest) = &o.convert {
        let opts = SwapOptions {
            from: endian,
            recalc_crc: o.recalc,
        };
        convert(tool, data, &opts, o.verbose, dest, &mut out, &shown)?;
    }
    drop(trimmer);
    if o.va.any() {
        out.flush().map_err(|e| stdout_failed(tool, &e))?;
        // A mapped image is mapped again (padded) by the views.
        let owned = match input {
            Input::Owned(v) => Some(v),
            Input::Mapped(_) => None,
        };
        let code = views::run(tool, &image, owned, &o.va, &mut out);
        out.flush().map_err(|e| stdout_failed(tool, &e))?;
        input_unchanged(tool, &shown)?;
        return code;
    }
    out.flush().map_err(|e| stdout_failed(tool, &e))?;
    input_unchanged(tool, &shown)?;
    Ok(0)
}

/// Reads the command line in order; a usage error is reported as it comes and the help
/// printed once the whole line is read.
fn parse(tool: &Tool, args: &[OsString], drop_in: bool) -> Result<Command, Exit> {
    let names = if drop_in { DROP_IN } else { OURS };
    let mut o = Opts::default();
    for p in flags::getopt(args, FLAGS, names) {
        match p {
            Parsed::Opt { id, arg } => {
                if let Some(code) = o.apply(tool, id, arg)? {
                    return Ok(Command::Exit(code));
                }
            }
            Parsed::Operand(w) => o.operands.push(w),
            Parsed::Error(msg) => {
                eprintln!("{}: {msg}", tool.name);
                o.error = true;
            }
        }
    }
    o.va.verbose = o.verbose;
    if o.error {
        print_out(tool, &help(&tool.name))?;
        return Err(Exit(1));
    }
    Ok(Command::Run(Box::new(o)))
}

impl Opts {
    /// Applies one option; `Some(status)` when it ends the run at once (`-h`, `-V`).
    fn apply(&mut self, tool: &Tool, id: u32, arg: Option<OsString>) -> Result<Option<i32>, Exit> {
        let a = arg.as_deref().map(text).unwrap_or_default();
        match u8::try_from(id).unwrap_or(0) {
            b'h' => {
                print_out(tool, &help(&tool.name))?;
                return Ok(Some(0));
            }
            b'V' => {
                let v = tool.version_line();
                print_out(tool, &v)?;
                return Ok(Some(0));
            }
            b'v' => self.verbose = true,
            b'b' => {
                self.endian = Some(Endian::Big);
                self.va.endian = self.endian;
            }
            b'l' => {
                self.endian = Some(Endian::Little);
                self.va.endian = self.endian;
            }
            b'c' => self.content = true,
            b'd' => self.datsize = atoi(&a),
            b'o' => self.oobsize = atoi(&a),
            b'e' => self.convert = arg,
            b'r' => self.recalc = true,
            _ => apply_view(&mut self.va, tool, id, arg, &a)?,
        }
        Ok(None)
    }
}

/// Applies one of the views' options (`jffs2-dump` only).
fn apply_view(
    va: &mut views::ViewArgs,
    tool: &Tool,
    id: u32,
    arg: Option<OsString>,
    a: &str,
) -> Result<(), Exit> {
    match id {
        OPT_JSON => va.json = true,
        OPT_SUMMARY => va.summary = true,
        OPT_BLOCKS => va.blocks = true,
        OPT_MAP => va.map = arg.map(PathBuf::from),
        OPT_INFO => va.info = true,
        OPT_LIST => va.list = true,
        OPT_CAT => va.cat = arg,
        OPT_EXTRACT => va.extract = arg.map(PathBuf::from),
        OPT_FORCE => va.force = true,
        OPT_NO_XATTRS => va.no_xattrs = true,
        OPT_NO_OWNERS => va.no_owners = true,
        OPT_DEVTABLE => va.devtable = arg.map(PathBuf::from),
        OPT_FIND => va.find = true,
        OPT_ERASE => {
            // mkfs.jffs2's grammar, without its 8 KiB minimum (4 KiB sectors
            // exist on SPI NOR).
            let es = match super::num::erase_size(a) {
                Ok((_, Some(raw))) => u32::try_from(raw).unwrap_or(0),
                Ok((es, None)) => es,
                Err(_) => 0,
            };
            if es < 128 || es % 4 != 0 {
                tool.error(&format!(
                    "--erase-size {a}: not an erase size (a multiple of 4 of at least 128 bytes; KiB and MiB suffixes)"
                ));
                return Err(Exit(1));
            }
            va.erase_size = Some(es);
        }
        _ => match va.window.set(id, a) {
            Ok(_) => {}
            Err(msg) => {
                tool.error(&msg);
                return Err(Exit(1));
            }
        },
    }
    Ok(())
}

/// `-e` is jffs2dump's `--endianconvert FNAME`, while every other tool reads `-e` as the
/// erase size: with a view asked for and an FNAME such as `128KiB`, `0x20000` or `65536`,
/// the user meant the erase size, and converting into a file of that name would be a
/// silent surprise. Refused (jffs2dump itself has no views: its `-e` is untouched).
fn size_as_convert_target(tool: &Tool, o: &Opts) -> Result<(), Exit> {
    let Some(name) = o.convert.as_deref().and_then(|n| n.to_str()) else {
        return Ok(());
    };
    if !o.va.any() || !looks_like_size(name) {
        return Ok(());
    }
    tool.error(&format!(
        "-e {name}: -e is --endianconvert=FNAME (jffs2dump's meaning), and {name} looks like \
         an erase size: give it as --erase-size={name} (or --endianconvert=./{name} to \
         write a file of that name)"
    ));
    Err(Exit(1))
}

/// A number as the tools' size options take it: decimal or 0x hex, with or without a
/// K/M unit (`65536`, `0x20000`, `128KiB`, `128k`, `1MiB`).
fn looks_like_size(s: &str) -> bool {
    let (digits, rest) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => hex.split_at(
            hex.find(|c: char| !c.is_ascii_hexdigit())
                .unwrap_or(hex.len()),
        ),
        None => s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len())),
    };
    !digits.is_empty() && ["", "k", "K", "KiB", "KB", "kB", "m", "M", "MiB", "MB"].contains(&rest)
}

/// The one IMAGE operand; `None` (exit 0) for jffs2dump's help on a wrong count.
fn image_operand(tool: &Tool, o: &Opts, drop_in: bool) -> Result<Option<PathBuf>, Exit> {
    match o.operands.as_slice() {
        [one] => Ok(Some(PathBuf::from(one))),
        _ if drop_in => {
            print_out(tool, &help(&tool.name))?;
            Ok(None)
        }
        _ => {
            tool.error(&format!(
                "exactly one INPUTFILE is needed, {} given",
                o.operands.len()
            ));
            print_out(tool, &help(&tool.name))?;
            Err(Exit(1))
        }
    }
}

/// Opens the image for `-c`/`-e`: mapped, with its resident pages dropped as the walk goes
/// (memory does not grow with the image); read into memory when the OOB bytes must be
/// peeled out (`peel`), or when the input cannot be mapped (a pipe, a character device).
/// Only the `window` of the file when given (of the raw file, before any peeling).
fn open_input(
    tool: &Tool,
    image: &Path,
    peel: bool,
    window: Option<jffs2::mapped::Window>,
) -> Result<Input, Exit> {
    let open_error = |e: &io::Error| {
        tool.error(&format!(
            "open input file {}: {}",
            image.display(),
            io_text(e)
        ));
        Exit(1)
    };
    let read = || -> io::Result<Input> {
        let mut v = jffs2::input::read_image_path(image)?;
        if let Some(w) = window {
            w.cut(&mut v)?;
        }
        Ok(Input::Owned(v))
    };
    Ok(if peel {
        read().map_err(|e| open_error(&e))?
    } else {
        match ImageMap::open_in(image, window, None) {
            Ok(m) => Input::Mapped(m),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                read().map_err(|e| open_error(&e))?
            }
            Err(e) => return Err(open_error(&e)),
        }
    })
}

/// `-d`/`-o`: peels the OOB bytes out of `data` in place.
fn peel_oob(
    tool: &Tool,
    o: &Opts,
    data: &mut Vec<u8>,
    out: &mut dyn Write,
    shown: &dyn std::fmt::Display,
) -> Result<(), Exit> {
    writeln!(out, "Peeling data out of combined data/oob image")
        .map_err(|e| stdout_failed(tool, &e))?;
    let (datsize, oobsize) = (o.datsize, o.oobsize);
    let peeled = match (usize::try_from(datsize), usize::try_from(oobsize)) {
        (Ok(d), Ok(o)) => dump::peel_oob(data, d, o).map_err(|e| e.to_string()),
        _ => Err(format!(
            "the data and OOB sizes must be positive (got {datsize} and {oobsize})"
        )),
    };
    if let Err(msg) = peeled {
        out.flush().map_err(|e| stdout_failed(tool, &e))?;
        tool.error(&format!("{shown}: {msg}"));
        return Err(Exit(1));
    }
    Ok(())
}

/// The byte order of `data` when it is not `read_as`: node headers (magic 0x1985, header
/// CRC right; `docs/spec/mtd-utils-spec.md` §2.2) at 4-byte offsets of the first 4 MiB are
/// found in the other byte order and none in `read_as`. jffs2dump's `-c` reads the host's
/// order unless told, and reports every node of the other one as "Wrong bitmask".
fn other_byte_order(data: &[u8], read_as: Endian) -> Option<Endian> {
    let other = if read_as == Endian::Big {
        Endian::Little
    } else {
        Endian::Big
    };
    let head = &data[..data.len().min(4 << 20)];
    let found = |e: Endian| {
        (0..head.len().saturating_sub(11))
            .step_by(4)
            .filter_map(|at| jffs2::format::NodeHeader::decode(&head[at..], e, at as u64).ok())
            .any(|h| h.magic == jffs2::format::MAGIC && h.crc_ok(e))
    };
    (!found(read_as) && found(other)).then_some(other)
}

/// `-c`: jffs2dump's listing on stdout, then the warnings about where it differs.
fn dump_content(
    tool: &Tool,
    data: &[u8],
    opts: &ContentOptions,
    out: &mut dyn Write,
    shown: &dyn std::fmt::Display,
) -> Result<(), Exit> {
    let report = dump::dump_content(data, opts, out).map_err(|e| stdout_failed(tool, &e))?;
    out.flush().map_err(|e| stdout_failed(tool, &e))?;
    if let Some(e) = other_byte_order(data, opts.endian) {
        let flag = if e == Endian::Big { "-b" } else { "-l" };
        tool.warning(&format!("{shown}: {}-endian image: add {flag}", e.name()));
    }
    for d in &report.deviations {
        tool.warning(&format!("{shown}: {d}"));
    }
    if report.deviations_omitted > 0 {
        tool.warning(&format!(
            "{shown}: {} more such places not listed",
            report.deviations_omitted
        ));
    }
    Ok(())
}

/// `-e DEST`: converts the image's byte order into DEST, replaced only when all went well;
/// the log goes to `out`.
fn convert(
    tool: &Tool,
    data: &[u8],
    opts: &SwapOptions,
    verbose: bool,
    dest: &OsString,
    out: &mut dyn Write,
    shown: &dyn std::fmt::Display,
) -> Result<(), Exit> {
    let dest = PathBuf::from(dest);
    let mut output = match Output::file(dest.clone()) {
        Ok(o) => o,
        Err(e) => {
            out.flush().map_err(|e| stdout_failed(tool, &e))?;
            tool.error(&format!(
                "Cannot open / create file: {}: {}",
                dest.display(),
                io_text(&e)
            ));
            return Err(Exit(1));
        }
    };
    let mut log = Log { out, failed: false };
    let result = dump::swap_endian(data, opts, output.writer(), &mut log);
    let log_failed = log.failed;
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            output.abandon();
            if log_failed {
                return Err(stdout_failed(tool, &e));
            }
            tool.error(&format!("write {}: {}", dest.display(), io_text(&e)));
            return Err(Exit(1));
        }
    };
    out.flush().map_err(|e| {
        // The image is complete; only the log was lost.
        stdout_failed(tool, &e)
    })?;
    if let Err(e) = input_unchanged(tool, shown) {
        output.abandon();
        return Err(e);
    }
    if let Err(e) = output.commit() {
        tool.error(&format!("write {}: {}", dest.display(), io_text(&e)));
        return Err(Exit(1));
    }
    if verbose {
        eprintln!("{}", convert_summary(&report, &dest.display().to_string()));
    }
    Ok(())
}

/// One stderr line about a conversion (`-v`), naming what jffs2dump would have got wrong.
fn convert_summary(r: &SwapReport, dest: &str) -> String {
    let mut s = format!("converted {} nodes into {dest}", r.nodes);
    let parts: Vec<String> = [
        (r.xrefs, "xref"),
        (r.obsolete, "obsolete"),
        (r.unknown, "of unknown type (header only)"),
        (r.truncated, "truncated (header only)"),
        (r.device_numbers, "device numbers"),
        (r.acl_values, "POSIX ACLs"),
        (r.bad_crcs_kept, "wrong CRCs kept wrong"),
        (r.junk_words, "words outside nodes copied"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !parts.is_empty() {
        s.push_str(": ");
        s.push_str(&parts.join(", "));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atoi_like_c() {
        assert_eq!(atoi("512"), 512);
        assert_eq!(atoi("  16x"), 16);
        assert_eq!(atoi("0x10"), 0);
        assert_eq!(atoi("-4"), -4);
        assert_eq!(atoi("+7"), 7);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atoi(""), 0);
        assert_eq!(atoi("99999999999999999999"), -1);
    }

    #[test]
    fn help_is_jffs2dumps_under_its_name() {
        let h = help("jffs2dump");
        assert!(h.starts_with("Usage: jffs2dump [OPTION]... INPUTFILE\nDump the contents"));
        assert!(h.ends_with(" -v, --verbose                verbose output\n"));
        assert!(help("jffs2-dump").contains("jffs2-tools differences"));
    }
}
