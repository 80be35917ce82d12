//! `jffs2-sumtool` / `sumtool`: the command line of mtd-utils' sumtool, option for option
//! (`docs/spec/mtd-utils-spec.md` §5.1), over the core summariser ([`jffs2::sumtool`]), which reads the
//! input as the kernel does, refuses a wrong erase size or byte order instead of wrecking the
//! image, and never loses or resurrects a node.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use jffs2::format::Endian;
use jffs2::mapped::ImageMap;
use jffs2::sumtool::{self, Cleanmarkers, SumtoolConfig, SumtoolError};
use jffs2::ImageBytes;

use super::flags::sumtool::{FLAGS, OPT_FORCE_ERASEBLOCK};
use super::flags::{self, ALL};
use super::getopt::{text, Parsed};
use super::num::{erase_size, strtol_i32, EraseSizeError};
use super::output::Output;
use super::{Noted, Tool};

pub use super::flags::sumtool::HELP;

/// An exit with this status; the message has already been printed.
struct Fatal(i32);

/// Runs sumtool with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    match run(tool, args) {
        Ok(code) => code,
        Err(Fatal(code)) => code,
    }
}

/// Prints `msg` as an error and gives the exit status sumtool's `errmsg_die` gives.
fn die(tool: &Tool, msg: &str) -> Fatal {
    tool.error(msg);
    Fatal(255)
}

/// sumtool's system-error messages ("open input file", "write") name no file; invoked as
/// `sumtool` they stay exactly so, as `jffs2-sumtool` they name it.
fn about(tool: &Tool, what: &str, path: &str) -> String {
    if tool.name == "sumtool" {
        what.to_string()
    } else {
        format!("{what} {path}")
    }
}

/// The options, as they stand after the command line has been read in order (`-i` and
/// `-o` are opened as they are read, as sumtool does).
struct Opts {
    cfg: SumtoolConfig,
    verbose: bool,
    input: Option<(File, OsString)>,
    output: Option<Output>,
    out_path: String,
    erase_given: bool,
    endian_given: bool,
    cleanmarker: Option<u32>,
    no_cleanmarkers: bool,
}

/// What reading the command line came to.
enum Command {
    /// Summarise: the options, the input file and its name, and the output.
    Run(Box<(Opts, File, OsString, Output)>),
    /// Exit now with this status (`-h`, `-V`).
    Exit(i32),
}

fn run(tool: &Tool, args: &[OsString]) -> Result<i32, Fatal> {
    let (mut o, infile, inpath, mut output) = match parse(tool, args)? {
        Command::Run(job) => *job,
        Command::Exit(code) => return Ok(code),
    };
    // The output's pages are reserved on another core while the input is mapped and
    // analysed: the output is about the input's size (its summaries add a few percent; the
    // surplus is given back). A regular file's size is known before it is mapped (mapping
    // it, populated, is a tenth of the run, with nothing else to do meanwhile); no more than
    // an image can hold is reserved before the input is known to be one.
    let estimate = |len: u64| len + (len >> 5);
    let known = infile
        .metadata()
        .ok()
        .filter(|m| m.is_file() && m.len() > 0 && m.len() <= u64::from(u32::MAX))
        .map(|m| m.len());
    if let Some(len) = known {
        output.preallocate(estimate(len));
    }
    // Not populated: the detection's walk brings the pages in on every core.
    let mut input = match ImageMap::load_on_demand(&infile) {
        Ok(i) => i,
        Err(e) => {
            tool.sys_error(&format!("read {}", text(&inpath)), &e);
            return Err(Fatal(255));
        }
    };
    drop(infile);
    if known.is_none() {
        output.preallocate(estimate(input.file_len() as u64));
    }
    let watch = input.watch();
    // The input shrank while mapped (rebuilt in place): what was read of it is not its
    // contents; nothing derived from it is written.
    let changed = || {
        watch.changed().then(|| {
            tool.error(&format!(
                "{}: changed (shrank) while being read",
                text(&inpath)
            ));
            Fatal(255)
        })
    };
    let mut analysis = analyse(tool, &mut o, &mut input, &inpath, &changed)?;
    let image = &input.buf()[..analysis.held_len];
    let warn = |a: &sumtool::Analysis| a.warnings.iter().for_each(|w| tool.warning(&w.to_string()));
    if o.verbose {
        warn(&analysis);
        output = listing(tool, image, &analysis, output)?;
    }
    // A write error (a full disk): sumtool's `sys_errmsg_die("write")`, naming the output as
    // jffs2-sumtool ("write OUT", then "error 28 (No space left on device)").
    // Without -v the nodes are checked as they are written (`write_piped_checking`), and the
    // analysis's warnings, complete only then, are printed after it (before any error).
    let result = output
        .direct_writer()
        .map_err(SumtoolError::Io)
        .and_then(|w| sumtool::write_piped_checking(image, &mut analysis, &o.cfg, w))
        .map(|(_, r)| r);
    if !o.verbose {
        warn(&analysis);
    }
    // Undoing the input's page tables is a serial few milliseconds in `munmap` at the end
    // otherwise; dropped on every core once the writing is done.
    input.release_on_pool();
    if let Some(f) = changed() {
        output.abandon();
        return Err(f);
    }
    let report = match result {
        Ok(r) => r,
        Err(SumtoolError::Io(e)) => {
            output.abandon();
            tool.sys_error(&about(tool, "write", &o.out_path), &e);
            return Err(Fatal(255));
        }
        Err(e) => {
            output.abandon();
            return Err(die(tool, &e.to_string()));
        }
    };
    if let Err(e) = output.commit() {
        tool.sys_error(&about(tool, "write", &o.out_path), &e);
        return Err(Fatal(255));
    }
    if o.verbose {
        statistics(&analysis, &report);
    }
    Ok(0)
}

/// Reads the command line in order, each option taking effect as it comes; then requires
/// `-i` and `-o`, warns of operands and settles the cleanmarkers.
fn parse(tool: &Tool, args: &[OsString]) -> Result<Command, Fatal> {
    let mut o = Opts {
        cfg: SumtoolConfig::new(),
        verbose: false,
        input: None,
        output: None,
        out_path: String::new(),
        erase_given: false,
        endian_given: false,
        cleanmarker: None,
        no_cleanmarkers: false,
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
                let _ = tool.print(&format!("{HELP}\n"));
                return Err(Fatal(1));
            }
        }
    }
    let (Some((infile, inpath)), Some(output)) = (o.input.take(), o.output.take()) else {
        eprint!("{HELP}");
        return Err(die(tool, "You must specify input and output files!\n"));
    };
    if !operands.is_empty() {
        let words: Vec<String> = operands.iter().map(|w| text(w)).collect();
        tool.warning(&format!(
            "ignoring operand(s) {} (as sumtool does)",
            words.join(" ")
        ));
    }
    o.cfg.cleanmarkers = if o.no_cleanmarkers {
        Cleanmarkers::Off
    } else if let Some(cm) = o.cleanmarker {
        Cleanmarkers::Size(cm)
    } else {
        Cleanmarkers::FromInput
    };
    Ok(Command::Run(Box::new((o, infile, inpath, output))))
}

impl Opts {
    /// Applies one option; `Some(status)` when it ends the run at once (`-h`, `-V`).
    fn apply(&mut self, tool: &Tool, id: u32, arg: Option<OsString>) -> Result<Option<i32>, Fatal> {
        let a = arg.as_deref().map(text).unwrap_or_default();
        match id {
            0x6f /* o */ => self.open_output(tool, arg.unwrap_or_default())?,
            0x69 /* i */ => self.open_input(tool, arg.unwrap_or_default())?,
            0x62 /* b */ => {
                self.cfg.endian = Endian::Big;
                self.endian_given = true;
            }
            0x6c /* l */ => {
                self.cfg.endian = Endian::Little;
                self.endian_given = true;
            }
            0x68 /* h */ => {
                tool.print(&format!("{HELP}\n")).map_err(|_| Fatal(255))?;
                return Ok(Some(0));
            }
            0x76 /* v */ => self.verbose = true,
            0x56 /* V */ => {
                let v = tool.version_line();
                tool.print(&v).map_err(|_| Fatal(255))?;
                return Ok(Some(0));
            }
            0x65 /* e */ => self.set_erase_size(tool, &a)?,
            0x6e /* n */ => self.no_cleanmarkers = true,
            0x63 /* c */ => {
                let v = i64::from(strtol_i32(&a).unwrap_or(0));
                if v < 12 {
                    return Err(die(tool, "cleanmarker size must be >= 12"));
                }
                // Checked against the erase size known *now*, as sumtool does.
                if v >= i64::from(self.cfg.erase_size) {
                    return Err(die(tool, "cleanmarker size must be < eraseblock size"));
                }
                self.cleanmarker = Some(v as u32);
            }
            0x70 /* p */ => self.cfg.pad = true,
            OPT_FORCE_ERASEBLOCK => self.cfg.force_erase_size = true,
            _ => {}
        }
        Ok(None)
    }

    /// `-o`: the output is created when the option is read.
    fn open_output(&mut self, tool: &Tool, path: OsString) -> Result<(), Fatal> {
        if self.output.is_some() {
            return Err(die(tool, "output filename specified more than once"));
        }
        self.out_path = text(&path);
        match Output::file(PathBuf::from(path)) {
            Ok(o) => {
                self.output = Some(o);
                Ok(())
            }
            Err(e) => {
                tool.sys_error(&about(tool, "open output file", &self.out_path), &e);
                Err(Fatal(255))
            }
        }
    }

    /// `-i`: the input is opened when the option is read.
    fn open_input(&mut self, tool: &Tool, path: OsString) -> Result<(), Fatal> {
        if self.input.is_some() {
            return Err(die(tool, "input filename specified more than once"));
        }
        match File::open(&path) {
            Ok(f) => {
                self.input = Some((f, path));
                Ok(())
            }
            Err(e) => {
                tool.sys_error(&about(tool, "open input file", &text(&path)), &e);
                Err(Fatal(255))
            }
        }
    }

    /// `-e`.
    fn set_erase_size(&mut self, tool: &Tool, a: &str) -> Result<(), Fatal> {
        match erase_size(a) {
            Ok((size, raised)) => {
                if let Some(orig) = raised {
                    // sumtool's format ends in "\n" and warnmsg adds another.
                    tool.warning(&format!(
                        "Erase size 0x{:x} too small. Increasing to 8KiB minimum\n",
                        orig as u32
                    ));
                }
                self.cfg.erase_size = size;
                self.erase_given = true;
                Ok(())
            }
            Err(EraseSizeError::Unrecognisable) => Err(die(tool, "Unrecognisable erase size\n")),
            Err(EraseSizeError::UnknownUnits) => Err(die(tool, "Unknown units in erasesize\n")),
            // sumtool wraps it (4096MiB becomes 8 KiB); refused here.
            Err(EraseSizeError::OutOfRange) => {
                Err(die(tool, &format!("Erase size '{a}' is out of range\n")))
            }
        }
    }
}

/// Analyses the input, falling back to the geometry it was built with where the command
/// line left it unsaid.
fn analyse(
    tool: &Tool,
    o: &mut Opts,
    input: &mut ImageMap,
    inpath: &OsString,
    changed: &dyn Fn() -> Option<Fatal>,
) -> Result<sumtool::Analysis, Fatal> {
    let len = input.file_len();
    // Without -e (or -b/-l), sumtool assumes 64 KiB (or the host's byte order): for an input
    // built otherwise, mtd-utils' sumtool writes an image that loses nodes (Yocto's
    // `jffs2.sum` step passes no -e, `docs/spec/ecosystem.md` §2.1). What the input was built with,
    // when the detection is sure of it, is used instead, with a warning; a value given on
    // the command line is never overridden (that stays an error).
    // Each fallback sets its `*_given`, so it happens once: at most three analyses.
    loop {
        let image = ImageBytes::InPlace(input.buf_mut(), len);
        let analysed = if o.verbose {
            sumtool::analyse(image, &o.cfg)
        } else {
            sumtool::analyse_unchecked(image, &o.cfg)
        };
        match analysed {
            Ok(a) => return Ok(a),
            Err(SumtoolError::EraseSizeMismatch {
                detected,
                requested,
                confidence,
            }) if !o.erase_given && confidence >= 0.5 => {
                tool.warning(&format!(
                    "{} was built with {} erase blocks; -e was not given (sumtool's default is \
                     {}): using {}",
                    text(inpath),
                    sumtool::size_text(detected),
                    sumtool::size_text(requested),
                    sumtool::size_text(detected)
                ));
                o.cfg.erase_size = detected;
                o.erase_given = true;
            }
            Err(SumtoolError::EndianMismatch {
                detected,
                requested,
                ..
            }) if !o.endian_given => {
                tool.warning(&format!(
                    "{} is {}-endian; neither -b nor -l was given (sumtool's default is the \
                     host's, {}-endian): using {}-endian",
                    text(inpath),
                    detected.name(),
                    requested.name(),
                    detected.name()
                ));
                o.cfg.endian = detected;
                o.endian_given = true;
            }
            Err(e) => {
                if let Some(f) = changed() {
                    return Err(f);
                }
                let mut msg = e.to_string();
                let geometry = matches!(
                    e,
                    SumtoolError::EraseSizeMismatch { .. } | SumtoolError::NodesCrossBlocks { .. }
                );
                if geometry && !o.erase_given {
                    msg.push_str(" (-e defaults to 64KiB)");
                }
                return Err(die(tool, &msg));
            }
        }
    }
}

/// `-v`: sumtool's listing on stdout; when it is lost, no image either (the output is
/// abandoned before the error is printed).
fn listing(
    tool: &Tool,
    image: &[u8],
    analysis: &sumtool::Analysis,
    output: Output,
) -> Result<Output, Fatal> {
    let stdout = std::io::stdout();
    let mut out = Noted::new(BufWriter::new(stdout.lock()));
    sumtool::listing(image, analysis, &mut |l| {
        let _ = writeln!(out, "{l}");
    });
    let _ = out.flush();
    if let Some(e) = &out.error {
        output.abandon();
        tool.stdout_failed(e);
        return Err(Fatal(255));
    }
    Ok(output)
}

/// `-v`'s statistics, on stderr: stdout stays sumtool's listing.
fn statistics(analysis: &sumtool::Analysis, report: &sumtool::SumtoolReport) {
    let s = &report.stats;
    eprintln!(
        "{} nodes ({} bytes) carried over into {} erase blocks of {}: {} with a summary, {} \
         without (a node leaves no room for one); {} node(s) dropped; cleanmarkers: {}; \
         output {} bytes (input {})",
        s.nodes,
        analysis.kept_bytes(),
        s.size.div_ceil(u64::from(report.erase_size)),
        sumtool::size_text(report.erase_size),
        s.summarized_blocks,
        s.unsummarized_blocks,
        analysis.rejected.len(),
        report
            .cleanmarker
            .map_or("none".to_string(), |c| format!("{c} bytes")),
        s.size,
        analysis.input_len
    );
}
