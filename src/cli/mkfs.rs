//! `jffs2-mkfs` / `mkfs.jffs2`: the command line of mtd-utils' mkfs.jffs2, option for
//! option and quirk for quirk (`docs/spec/mtd-utils-spec.md` §3.1, `docs/spec/ecosystem.md` §2.6), plus a few
//! long options mkfs.jffs2 does not have.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use jffs2::compress::{Compressors, Mode};
use jffs2::format::Endian;
use jffs2::layout::EndPad;
use jffs2::mkfs::{self, MkfsConfig, MsgKind, Sink};
use jffs2::source::{self, SourceOptions, SourceWarningKind, XattrSelect};

use super::flags::mkfs::{
    FLAGS, OPT_LIST_COMPRESSORS, OPT_NO_PROGRESS, OPT_SUMMARY, OPT_THREADS, OPT_WITH_POSIX_ACL,
    OPT_WITH_SELINUX, OPT_WITH_XATTR,
};
use super::flags::{self, ALL};
use super::getopt::{text, Parsed};
use super::num::{erase_size, strtol, strtol_i32, EraseSizeError};
use super::output::{is_input_message, Output};
use super::{Noted, Progress, Tool};

pub use super::flags::mkfs::HELP;

/// Runs mkfs with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    match run(tool, args) {
        Ok(code) => code,
        Err(Fatal(code)) => code,
    }
}

/// An exit with this status; the message has already been printed.
struct Fatal(i32);

/// Prints `msg` as an error and gives the exit status mkfs.jffs2's `errmsg_die` gives.
/// The help text with its newline, naming the name it was run as (mkfs.jffs2's text,
/// byte for byte, as `mkfs.jffs2`).
fn help(tool: &Tool) -> String {
    let usage = format!("Usage: {}", tool.name);
    format!("{}\n", HELP.replacen("Usage: mkfs.jffs2", &usage, 1))
}

fn die(tool: &Tool, msg: &str) -> Fatal {
    tool.error(msg);
    Fatal(255)
}

/// The options, as they stand after the command line has been read in order.
struct Opts {
    root: Option<OsString>,
    output: Option<OsString>,
    devtable: Option<OsString>,
    incremental: Option<OsString>,
    endian: Endian,
    erase_size: u32,
    page_size: i64,
    page_size_given: bool,
    cleanmarker_size: u32,
    cleanmarkers: bool,
    pad: EndPad,
    scan: SourceOptions,
    compressors: Compressors,
    verbose: bool,
    summary: bool,
    threads: usize,
    progress: bool,
    /// The priority of the last `-y` whose number parsed: a later `-y` whose number does
    /// not parse keeps it (§3.1); -1 while there is none.
    compr_prior: i64,
}

fn host_page_size() -> i64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v < 0 {
        4096
    } else {
        v as i64
    }
}

/// What reading the command line came to: build an image, or exit now (`-h`, `-V`, ...).
enum Command {
    Build(Box<Opts>),
    Exit(i32),
}

fn run(tool: &Tool, args: &[OsString]) -> Result<i32, Fatal> {
    let mut o = match parse(tool, args)? {
        Command::Build(o) => *o,
        Command::Exit(code) => return Ok(code),
    };
    check(tool, &o)?;
    let to_stdout = o.output.is_none();
    if to_stdout && std::io::stdout().is_terminal() {
        // mkfs.jffs2 prints its usage as the error (§3.1); jffs2-mkfs says why.
        if tool.name == "mkfs.jffs2" {
            return Err(die(tool, HELP));
        }
        return Err(die(
            tool,
            "standard output is a terminal: the image is binary; give -o FILE or redirect \
             standard output to a file",
        ));
    }
    // The output is opened before any work, as mkfs.jffs2 opens it while reading its
    // options (§3.1): a bad `-o` fails at once, not after the tree was read. Until the
    // image is committed it is a temporary file beside OUT, removed on any failure.
    let output = open_output(tool, &o)?;
    let (root_given, root) = resolve_root(tool, &o)?;

    // Everything mkfs.jffs2 prints on stdout goes through this one buffered stream; its
    // first error is reported at the end.
    let mut listing = Noted::new(listing_stream(to_stdout));
    let first_ino = incremental_max_ino(tool, &o, &mut listing)?;
    let tree = scan_tree(tool, &mut o, &root_given, &root, &mut listing)?;
    let cfg = config(tool, &o, first_ino)?;
    let sink = CliSink {
        tool,
        listing,
        progress: if o.progress && !o.verbose {
            Progress::new("mkfs")
        } else {
            None
        },
    };
    build(tool, &o, &tree, &cfg, output, sink)
}

/// Reads the command line in order, each option taking effect as it comes (as in
/// mkfs.jffs2, some are checked or acted on at once); then warns of operands.
fn parse(tool: &Tool, args: &[OsString]) -> Result<Command, Fatal> {
    let mut o = Opts {
        root: None,
        output: None,
        devtable: None,
        incremental: None,
        endian: Endian::host(),
        erase_size: 65536,
        page_size: host_page_size(),
        page_size_given: false,
        cleanmarker_size: 12,
        cleanmarkers: true,
        pad: EndPad::None,
        scan: SourceOptions::default(),
        compressors: Compressors::mkfs_default(),
        verbose: false,
        summary: false,
        threads: 0,
        progress: true,
        compr_prior: -1,
    };
    let mut operands = Vec::new();
    for p in flags::getopt(args, FLAGS, ALL) {
        match p {
            Parsed::Opt { id, arg } => {
                if let Some(code) = o.apply(tool, id, arg)? {
                    return Ok(Command::Exit(code));
                }
            }
            Parsed::Operand(w) => operands.push(w),
            Parsed::Error(msg) => {
                eprintln!("{}: {msg}", tool.name);
                let _ = tool.print(&help(tool));
                return Err(Fatal(1));
            }
        }
    }
    if !operands.is_empty() {
        // mkfs.jffs2 ignores operands silently; say so, since `-p 0x100000` or
        // `--pad 0x100000` put the size here.
        let words: Vec<String> = operands.iter().map(|w| text(w)).collect();
        tool.warning(&format!(
            "ignoring operand(s) {} (as mkfs.jffs2 does); did you mean --pad=SIZE?",
            words.join(" ")
        ));
    }
    Ok(Command::Build(Box::new(o)))
}

impl Opts {
    /// Applies one option; `Some(status)` when it ends the run at once (`-h`, `-V`, ...).
    fn apply(&mut self, tool: &Tool, id: u32, arg: Option<OsString>) -> Result<Option<i32>, Fatal> {
        let a = arg.as_deref().map(text).unwrap_or_default();
        match id {
            0x44 /* D */ => self.set_devtable(tool, arg.unwrap_or_default(), &a)?,
            0x72 | 0x64 /* r d */ => {
                if self.root.is_some() {
                    return Err(die(tool, "root directory specified more than once"));
                }
                self.root = arg;
            }
            0x73 /* s */ => {
                // A value beyond mkfs.jffs2's int would wrap there; refused here.
                self.page_size = match strtol_i32(&a) {
                    Some(v) => i64::from(v),
                    None => return Err(die(tool, &format!("Page size '{a}' is out of range"))),
                };
                self.page_size_given = true;
            }
            0x6f /* o */ => {
                if self.output.is_some() {
                    return Err(die(tool, "output filename specified more than once"));
                }
                self.output = arg;
            }
            0x71 /* q */ => {
                self.scan.squash_uids = true;
                self.scan.squash_perms = true;
            }
            0x55 /* U */ => self.scan.squash_uids = true,
            0x50 /* P */ => self.scan.squash_perms = true,
            0x66 /* f */ => self.scan.faketime = true,
            0x68 /* h */ => {
                tool.print(&help(tool)).map_err(|_| Fatal(255))?;
                return Ok(Some(0));
            }
            0x3f /* ? */ => {
                let _ = tool.print(&help(tool));
                return Err(Fatal(1));
            }
            0x76 /* v */ => self.verbose = true,
            0x56 /* V */ => {
                let v = tool.version_line();
                tool.print(&v).map_err(|_| Fatal(255))?;
                return Ok(Some(0));
            }
            0x65 /* e */ => self.set_erase_size(tool, &a)?,
            0x6c /* l */ => self.endian = Endian::Little,
            0x62 /* b */ => self.endian = Endian::Big,
            0x70 /* p */ => self.set_pad(tool, arg.is_some(), &a)?,
            0x6e /* n */ => self.cleanmarkers = false,
            0x63 /* c */ => self.set_cleanmarker_size(tool, &a)?,
            0x6d /* m */ => match a.parse::<Mode>() {
                Ok(m) => self.compressors.set_mode(m),
                Err(_) => return Err(die(tool, &format!("Unknown compression mode {a}"))),
            },
            0x78 | 0x58 /* x X */ => {
                let enable = id == 0x58;
                // "lzma" (OpenWrt's) switches to OpenWrt's compressor table
                // (`jffs2::compress` module documentation).
                if self.compressors.set_enabled(&a, enable).is_err() {
                    return Err(die(tool, &format!("Unknown compressor name {a}")));
                }
            }
            0x4c /* L */ => {
                return Err(die(tool, &format!("\n{}", self.compressors.list_text())));
            }
            OPT_LIST_COMPRESSORS => {
                tool.print(&self.compressors.list_text())
                    .map_err(|_| Fatal(255))?;
                return Ok(Some(0));
            }
            0x74 /* t */ => self.compressors.set_test(true),
            0x79 /* y */ => self.set_priority(tool, &a)?,
            0x69 /* i */ => self.set_incremental(tool, arg)?,
            OPT_WITH_XATTR => self.scan.xattr |= XattrSelect::ALL,
            OPT_WITH_SELINUX => self.scan.xattr |= XattrSelect::SECURITY,
            OPT_WITH_POSIX_ACL => self.scan.xattr |= XattrSelect::POSIX_ACL,
            OPT_SUMMARY => self.summary = true,
            OPT_THREADS => self.set_threads(tool, &a)?,
            OPT_NO_PROGRESS => self.progress = false,
            _ => {}
        }
        Ok(None)
    }

    /// `-D`: the device table must exist and be long enough when the option is read.
    fn set_devtable(&mut self, tool: &Tool, path: OsString, a: &str) -> Result<(), Fatal> {
        match std::fs::metadata(&path) {
            Err(e) => {
                tool.sys_error(&text(&path), &e);
                Err(Fatal(255))
            }
            Ok(m) if m.len() < 10 => {
                Err(die(tool, &format!("{a}: not a proper device table file")))
            }
            Ok(_) => {
                self.devtable = Some(path);
                Ok(())
            }
        }
    }

    /// `-e`.
    fn set_erase_size(&mut self, tool: &Tool, a: &str) -> Result<(), Fatal> {
        match erase_size(a) {
            Ok((size, raised)) => {
                if let Some(orig) = raised {
                    eprintln!(
                        "Erase size 0x{:x} too small. Increasing to 8KiB minimum",
                        orig as u32
                    );
                }
                self.erase_size = size;
                Ok(())
            }
            Err(EraseSizeError::Unrecognisable) => Err(die(tool, "Unrecognisable erase size\n")),
            Err(EraseSizeError::UnknownUnits) => Err(die(tool, "Unknown units in erasesize\n")),
            // mkfs.jffs2 wraps it (4096MiB becomes 8 KiB); refused here.
            Err(EraseSizeError::OutOfRange) => {
                Err(die(tool, &format!("Erase size '{a}' is out of range\n")))
            }
        }
    }

    /// `-p`, with its optional argument (`given`) `a`.
    fn set_pad(&mut self, tool: &Tool, given: bool, a: &str) -> Result<(), Fatal> {
        self.pad = if !given {
            EndPad::Block
        } else {
            // mkfs.jffs2 keeps strtol's value in an int; -1 means "no size".
            match strtol_i32(a) {
                Some(-1) => EndPad::Block,
                Some(v) => EndPad::Size(i64::from(v)),
                // Beyond mkfs.jffs2's int it would wrap; refused here.
                None => return Err(die(tool, &format!("Pad size '{a}' is out of range"))),
            }
        };
        Ok(())
    }

    /// `-c`.
    fn set_cleanmarker_size(&mut self, tool: &Tool, a: &str) -> Result<(), Fatal> {
        // A value beyond an int (which would wrap) is as wrong as a small one.
        let v = strtol_i32(a).unwrap_or(0);
        if v < 12 {
            return Err(die(tool, "cleanmarker size must be >= 12"));
        }
        // Checked against the erase size known *now* (§8 B-5).
        if v as i64 >= i64::from(self.erase_size) {
            return Err(die(tool, "cleanmarker size must be < eraseblock size"));
        }
        self.cleanmarker_size = v as u32;
        Ok(())
    }

    /// `-y PRIORITY:NAME`.
    fn set_priority(&mut self, tool: &Tool, a: &str) -> Result<(), Fatal> {
        let (v, rest) = strtol(a);
        let parsed_number = rest.len() != a.len();
        if parsed_number {
            self.compr_prior = i64::from(v as i32);
        }
        if self.compr_prior >= 0 {
            let name = rest.strip_prefix(':').unwrap_or("");
            let name = name.split_whitespace().next().unwrap_or("");
            if self
                .compressors
                .set_priority(name, self.compr_prior as i32)
                .is_err()
            {
                eprintln!("{}: compressor {name} not found.", tool.name);
                return Err(Fatal(1));
            }
            Ok(())
        } else {
            Err(die(tool, &format!("Cannot parse {a}")))
        }
    }

    /// `-i`: the old image must open when the option is read.
    fn set_incremental(&mut self, tool: &Tool, arg: Option<OsString>) -> Result<(), Fatal> {
        if self.incremental.is_some() {
            return Err(die(tool, "(incremental) filename specified more than once"));
        }
        if let Err(e) = std::fs::File::open(arg.as_deref().unwrap_or_default()) {
            tool.sys_error("cannot open (incremental) file", &e);
            return Err(Fatal(255));
        }
        self.incremental = arg;
        Ok(())
    }

    /// `--threads`.
    fn set_threads(&mut self, tool: &Tool, a: &str) -> Result<(), Fatal> {
        match a.parse::<usize>() {
            Ok(n) if (1..=mkfs::MAX_THREADS).contains(&n) => {
                self.threads = n;
                Ok(())
            }
            _ => Err(die(
                tool,
                &format!(
                    "--threads: '{a}' is not between 1 and {}",
                    mkfs::MAX_THREADS
                ),
            )),
        }
    }
}

/// The checks mkfs.jffs2 makes once the command line is read, and this tool's warnings
/// about page and summary sizes.
fn check(tool: &Tool, o: &Opts) -> Result<(), Fatal> {
    if !o.page_size_given && o.page_size != 4096 {
        tool.error(&format!(
            "Page size for this system is by default {}",
            o.page_size
        ));
        tool.error("Use the --pagesize=SIZE option if this is not what you want");
    }
    if o.page_size < 0 {
        return Err(die(tool, &format!("invalid page size {}", o.page_size)));
    }
    if o.page_size_given {
        let ps = o.page_size as u64;
        if ps == 0 {
            tool.warning("page size 0: every regular file is stored empty (as mkfs.jffs2 does)");
        } else if ps < 4096 || !ps.is_power_of_two() {
            // What is wrong with it: the kernel's page is a power of two, 4096 or more
            // (§3.6.4).
            let what = match (ps.is_power_of_two(), ps < 4096) {
                (true, _) => "is below 4096",
                (false, true) => "is not a power of two, and is below 4096",
                (false, false) => "is not a power of two",
            };
            tool.warning(&format!(
                "page size {ps} {what}: -s is the memory page size of the target (usually \
                 4096), not the flash page size"
            ));
        }
    }
    if o.summary && o.erase_size % 4 != 0 {
        return Err(die(
            tool,
            "--summary needs an erase size that is a multiple of 4",
        ));
    }
    Ok(())
}

/// The root as given (default `.`) and as resolved: mkfs.jffs2 lstat()s and chdir()s into
/// it, then uses getcwd() (§3.2).
fn resolve_root(tool: &Tool, o: &Opts) -> Result<(OsString, PathBuf), Fatal> {
    let root_given = o.root.clone().unwrap_or_else(|| OsString::from("."));
    let root = match std::fs::canonicalize(&root_given) {
        Ok(p) => p,
        Err(e) => {
            tool.sys_error(&text(&root_given), &e);
            return Err(Fatal(255));
        }
    };
    if !root.is_dir() {
        tool.sys_error(
            &text(&root_given),
            &std::io::Error::from_raw_os_error(libc::ENOTDIR),
        );
        return Err(Fatal(255));
    }
    Ok((root_given, root))
}

/// `-i`: the old image's highest inode number (0 without `-i`).
fn incremental_max_ino(tool: &Tool, o: &Opts, listing: &mut dyn Write) -> Result<u32, Fatal> {
    let Some(inc) = &o.incremental else {
        return Ok(0);
    };
    let bytes = match jffs2::input::read_image_path(inc.as_ref()) {
        Ok(b) => b,
        Err(e) => {
            // (It opened at the option; reading it failed: named.)
            tool.sys_error(&format!("cannot read (incremental) file {}", text(inc)), &e);
            return Err(Fatal(255));
        }
    };
    let r = mkfs::incremental_max_ino(&bytes, o.endian, o.erase_size, o.verbose);
    for l in &r.stdout {
        let _ = writeln!(listing, "{l}");
    }
    Ok(r.max_ino)
}

/// Scans the root directory, then applies the device table (`-D`) to the tree.
fn scan_tree(
    tool: &Tool,
    o: &mut Opts,
    root_given: &OsString,
    root: &Path,
    listing: &mut dyn Write,
) -> Result<source::SourceTree, Fatal> {
    o.scan.verbose = o.verbose;
    o.scan.now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as u32);
    let (mut tree, warnings) = match source::scan_host(root, &o.scan) {
        Ok(t) => t,
        Err(e) => return Err(die(tool, &e.to_string())),
    };
    report_warnings(tool, &warnings, listing);
    if let Some(dt) = &o.devtable {
        let table = match std::fs::File::open(dt).and_then(|f| {
            jffs2::input::read_limited(&f, source::MAX_TABLE_BYTES, "not a device table")
        }) {
            Ok(t) => t,
            Err(e) => {
                tool.sys_error(&text(dt), &e);
                return Err(Fatal(255));
            }
        };
        match source::apply_device_table(
            &mut tree,
            &table,
            Path::new(dt),
            Path::new(root_given),
            &o.scan,
        ) {
            Ok(w) => report_warnings(tool, &w, listing),
            Err(e) => return Err(die(tool, &e.to_string())),
        }
    }
    Ok(tree)
}

/// The library's configuration: the options, `SOURCE_DATE_EPOCH` and `-i`'s inode number.
fn config(tool: &Tool, o: &Opts, first_ino: u32) -> Result<MkfsConfig, Fatal> {
    let clamp_time = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.trim().is_empty() => match v.trim().parse::<u64>() {
            Ok(t) => Some(t.min(u64::from(u32::MAX)) as u32),
            Err(_) => {
                return Err(die(
                    tool,
                    &format!("SOURCE_DATE_EPOCH is not a number: '{v}'"),
                ))
            }
        },
        _ => None,
    };
    Ok(MkfsConfig {
        endian: o.endian,
        erase_size: o.erase_size,
        page_size: o.page_size as u32,
        cleanmarker: o.cleanmarkers.then_some(o.cleanmarker_size),
        pad: o.pad,
        compressors: o.compressors.clone(),
        summary: o.summary,
        clamp_time,
        first_ino,
        verbose: o.verbose,
        threads: o.threads,
    })
}

/// Opens the output (a temporary file beside `-o`, or stdout), refusing `-i`'s image.
fn open_output(tool: &Tool, o: &Opts) -> Result<Output, Fatal> {
    let output = match &o.output {
        Some(p) => Output::file(PathBuf::from(p)),
        None => Output::stdout(),
    };
    let output = match output {
        Ok(out) => out,
        Err(e) => {
            // mkfs.jffs2's words; as jffs2-mkfs, the file named.
            let msg = match &o.output {
                Some(p) if tool.name != "mkfs.jffs2" => format!("open output file {}", text(p)),
                _ => "open output file".to_string(),
            };
            tool.sys_error(&msg, &e);
            return Err(Fatal(255));
        }
    };
    // -i names the image this one is appended to: writing over it would destroy it.
    if let (Some(inc), Some(p)) = (&o.incremental, &o.output) {
        if output.is_same_file(Path::new(inc)) {
            output.abandon();
            return Err(die(tool, &is_input_message(Path::new(p), Path::new(inc))));
        }
    }
    Ok(output)
}

/// Writes the image, commits the output, and reports: the pad warning, the statistics,
/// and last the listing.
fn build(
    tool: &Tool,
    o: &Opts,
    tree: &source::SourceTree,
    cfg: &MkfsConfig,
    mut output: Output,
    mut sink: CliSink,
) -> Result<i32, Fatal> {
    let result = mkfs::build(tree, cfg, output.writer(), &mut sink);
    if let Some(p) = sink.progress.take() {
        p.finish();
    }
    // The listing is flushed when `sink` is dropped at the end, after the statistics:
    // mkfs.jffs2's block-buffered stdout puts it there in a combined log (§3.8).
    // A write error (a full disk): mkfs.jffs2's `sys_errmsg_die("write")` and the errno
    // text; as jffs2-mkfs it names the output ("write OUT", then "error 28 (No space left
    // on device)"). The temporary file is removed; OUT is left as it was.
    let write_msg = match &o.output {
        _ if tool.name == "mkfs.jffs2" => "write".to_string(),
        Some(p) => format!("write {}", text(p)),
        None => "write (standard output)".to_string(),
    };
    let report = match result {
        Ok(r) => r,
        Err(mkfs::MkfsError::Write(e)) => {
            output.abandon();
            tool.sys_error(&write_msg, &e);
            return Err(Fatal(255));
        }
        Err(e) => {
            output.abandon();
            return Err(die(tool, &e.to_string()));
        }
    };
    if let Err(e) = output.commit() {
        tool.sys_error(&write_msg, &e);
        return Err(Fatal(255));
    }
    if let EndPad::Size(size) = cfg.pad {
        if size > 0 && report.image_size > size as u64 {
            tool.warning(&format!(
                "the image is {} bytes, more than --pad={size}: it will not fit a partition of that size",
                report.image_size
            ));
        }
    }
    if o.verbose {
        // The report starts with mkfs.jffs2's "\n\n" itself (§3.8).
        eprint!("{}", report.stats.report(&cfg.compressors));
    }
    // With -v the report already ends with the error count; without it mkfs.jffs2
    // prints the count only when -t found errors (§3.8).
    if !o.verbose && report.stats.errors() > 0 {
        eprint!("{}", report.stats.errors_line());
    }
    // The listing, flushed last (see above); its loss is an error when it was asked for on
    // standard output (with the image there, it goes to stderr).
    sink.listing.flush().ok();
    if let (Some(e), false) = (&sink.listing.error, o.output.is_none()) {
        tool.stdout_failed(e);
        return Err(Fatal(255));
    }
    Ok(0)
}

/// Where the `-v` listing goes: stdout as in mkfs.jffs2 — except when the image itself
/// goes to stdout, where mkfs.jffs2 would corrupt it (§8 B-1): then stderr.
fn listing_stream(image_to_stdout: bool) -> Box<dyn Write> {
    if image_to_stdout {
        Box::new(std::io::stderr())
    } else if std::io::stdout().is_terminal() {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::io::BufWriter::new(std::io::stdout()))
    }
}

fn report_warnings(tool: &Tool, warnings: &[source::SourceWarning], listing: &mut dyn Write) {
    for w in warnings {
        match w.kind {
            SourceWarningKind::Error => tool.error(&w.to_string()),
            SourceWarningKind::Verbose => {
                let _ = writeln!(listing, "{w}");
            }
            SourceWarningKind::Notice => tool.warning(&w.to_string()),
        }
    }
}

struct CliSink<'a> {
    tool: &'a Tool,
    listing: Noted<Box<dyn Write>>,
    progress: Option<Progress>,
}

impl Sink for CliSink<'_> {
    fn listing(&mut self, line: &str) {
        let _ = writeln!(self.listing, "{line}");
    }
    fn message(&mut self, kind: MsgKind, text: &str) {
        if let Some(p) = &self.progress {
            p.suspend(|| self.tool.message(kind, text));
        } else {
            self.tool.message(kind, text);
        }
    }
    fn progress(&mut self, done: u64, total: u64) {
        if let Some(p) = &self.progress {
            p.set(done, total);
        }
    }
}
