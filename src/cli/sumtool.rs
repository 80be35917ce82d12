//! `jffs2-sumtool` / `sumtool`: the command line of mtd-utils' sumtool, option for option
//! (`docs/spec/mtd-utils-spec.md` §5.1), over the core summariser ([`jffs2::sumtool`]), which reads the
//! input as the kernel does, refuses a wrong erase size or byte order instead of wrecking the
//! image, and never loses or resurrects a node.

use std::ffi::OsString;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use jffs2::format::Endian;
use jffs2::sumtool::{self, Cleanmarkers, SumtoolConfig, SumtoolError};

use super::flags::sumtool::{FLAGS, OPT_FORCE_ERASEBLOCK};
use super::flags::{self, ALL};
use super::getopt::{text, Parsed};
use super::input::Input;
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

fn run(tool: &Tool, args: &[OsString]) -> Result<i32, Fatal> {
    let die = |msg: &str| -> Fatal {
        tool.error(msg);
        Fatal(255)
    };
    // sumtool's system-error messages ("open input file", "write") name no file; invoked as
    // `sumtool` they stay exactly so, as `jffs2-sumtool` they name it.
    let about = |what: &str, path: &str| -> String {
        if tool.name == "sumtool" {
            what.to_string()
        } else {
            format!("{what} {path}")
        }
    };
    let mut cfg = SumtoolConfig::new();
    let mut verbose = false;
    let mut input: Option<(File, OsString)> = None;
    let mut output: Option<Output> = None;
    let mut out_path = String::new();
    let mut erase_given = false;
    let mut endian_given = false;
    let mut cleanmarker: Option<u32> = None;
    let mut no_cleanmarkers = false;
    let mut operands = Vec::new();
    for p in flags::getopt(args, FLAGS, ALL) {
        let (id, arg) = match p {
            Parsed::Opt { id, arg } => (id, arg),
            Parsed::Operand(w) => {
                operands.push(w);
                continue;
            }
            Parsed::Error(msg) => {
                eprintln!("{}: {msg}", tool.name);
                let _ = tool.print(&format!("{HELP}\n"));
                return Err(Fatal(1));
            }
        };
        let a = arg.as_deref().map(text).unwrap_or_default();
        match id {
            0x6f /* o */ => {
                if output.is_some() {
                    return Err(die("output filename specified more than once"));
                }
                let path = arg.unwrap_or_default();
                out_path = text(&path);
                match Output::file(PathBuf::from(path)) {
                    Ok(o) => output = Some(o),
                    Err(e) => {
                        tool.sys_error(&about("open output file", &out_path), &e);
                        return Err(Fatal(255));
                    }
                }
            }
            0x69 /* i */ => {
                if input.is_some() {
                    return Err(die("input filename specified more than once"));
                }
                let path = arg.unwrap_or_default();
                match File::open(&path) {
                    Ok(f) => input = Some((f, path)),
                    Err(e) => {
                        tool.sys_error(&about("open input file", &text(&path)), &e);
                        return Err(Fatal(255));
                    }
                }
            }
            0x62 /* b */ => {
                cfg.endian = Endian::Big;
                endian_given = true;
            }
            0x6c /* l */ => {
                cfg.endian = Endian::Little;
                endian_given = true;
            }
            0x68 /* h */ => {
                tool.print(&format!("{HELP}\n")).map_err(|_| Fatal(255))?;
                return Ok(0);
            }
            0x76 /* v */ => verbose = true,
            0x56 /* V */ => {
                let v = format!("{} (jffs2-tools) {}\n", tool.name, env!("CARGO_PKG_VERSION"));
                tool.print(&v).map_err(|_| Fatal(255))?;
                return Ok(0);
            }
            0x65 /* e */ => match erase_size(&a) {
                Ok((size, raised)) => {
                    if let Some(orig) = raised {
                        // sumtool's format ends in "\n" and warnmsg adds another.
                        tool.warning(&format!(
                            "Erase size 0x{:x} too small. Increasing to 8KiB minimum\n",
                            orig as u32
                        ));
                    }
                    cfg.erase_size = size;
                    erase_given = true;
                }
                Err(EraseSizeError::Unrecognisable) => {
                    return Err(die("Unrecognisable erase size\n"))
                }
                Err(EraseSizeError::UnknownUnits) => {
                    return Err(die("Unknown units in erasesize\n"))
                }
                // sumtool wraps it (4096MiB becomes 8 KiB); refused here.
                Err(EraseSizeError::OutOfRange) => {
                    return Err(die(&format!("Erase size '{a}' is out of range\n")))
                }
            },
            0x6e /* n */ => no_cleanmarkers = true,
            0x63 /* c */ => {
                let v = i64::from(strtol_i32(&a).unwrap_or(0));
                if v < 12 {
                    return Err(die("cleanmarker size must be >= 12"));
                }
                // Checked against the erase size known *now*, as sumtool does.
                if v >= i64::from(cfg.erase_size) {
                    return Err(die("cleanmarker size must be < eraseblock size"));
                }
                cleanmarker = Some(v as u32);
            }
            0x70 /* p */ => cfg.pad = true,
            OPT_FORCE_ERASEBLOCK => cfg.force_erase_size = true,
            _ => {}
        }
    }
    let (Some((infile, inpath)), Some(mut output)) = (input, output) else {
        eprint!("{HELP}");
        return Err(die("You must specify input and output files!\n"));
    };
    if !operands.is_empty() {
        let words: Vec<String> = operands.iter().map(|w| text(w)).collect();
        tool.warning(&format!(
            "ignoring operand(s) {} (as sumtool does)",
            words.join(" ")
        ));
    }
    cfg.cleanmarkers = if no_cleanmarkers {
        Cleanmarkers::Off
    } else if let Some(cm) = cleanmarker {
        Cleanmarkers::Size(cm)
    } else {
        Cleanmarkers::FromInput
    };

    let mut input = match Input::load(&infile) {
        Ok(i) => i,
        Err(e) => {
            tool.sys_error(&format!("read {}", text(&inpath)), &e);
            return Err(Fatal(255));
        }
    };
    drop(infile);
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
    let len = input.len;
    // Without -e (or -b/-l), sumtool assumes 64 KiB (or the host's byte order): for an input
    // built otherwise, mtd-utils' sumtool writes an image that loses nodes (Yocto's
    // `jffs2.sum` step passes no -e, `docs/spec/ecosystem.md` §2.1). What the input was built with,
    // when the detection is sure of it, is used instead, with a warning; a value given on
    // the command line is never overridden (that stays an error).
    // Each fallback sets its `*_given`, so it happens once: at most three analyses.
    let (analysis, padded) = loop {
        match sumtool::analyse_in_place(input.buf_mut(), len, &cfg) {
            Ok(a) => break a,
            Err(SumtoolError::EraseSizeMismatch {
                detected,
                requested,
                confidence,
            }) if !erase_given && confidence >= 0.5 => {
                tool.warning(&format!(
                    "{} was built with {} erase blocks; -e was not given (sumtool's default is \
                     {}): using {}",
                    text(&inpath),
                    sumtool::size_text(detected),
                    sumtool::size_text(requested),
                    sumtool::size_text(detected)
                ));
                cfg.erase_size = detected;
                erase_given = true;
            }
            Err(SumtoolError::EndianMismatch {
                detected,
                requested,
                ..
            }) if !endian_given => {
                tool.warning(&format!(
                    "{} is {}-endian; neither -b nor -l was given (sumtool's default is the \
                     host's, {}-endian): using {}-endian",
                    text(&inpath),
                    detected.name(),
                    requested.name(),
                    detected.name()
                ));
                cfg.endian = detected;
                endian_given = true;
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
                if geometry && !erase_given {
                    msg.push_str(" (-e defaults to 64KiB)");
                }
                return Err(die(&msg));
            }
        }
    };
    let image = &input.buf()[..padded];
    for w in &analysis.warnings {
        tool.warning(&w.to_string());
    }
    if verbose {
        let stdout = std::io::stdout();
        let mut out = Noted::new(BufWriter::new(stdout.lock()));
        sumtool::listing(image, &analysis, &mut |l| {
            let _ = writeln!(out, "{l}");
        });
        let _ = out.flush();
        // The listing asked for is lost: no image either.
        if let Some(e) = &out.error {
            output.abandon();
            tool.stdout_failed(e);
            return Err(Fatal(255));
        }
    }
    // A write error (a full disk): sumtool's `sys_errmsg_die("write")`, naming the output as
    // jffs2-sumtool ("write OUT", then "error 28 (No space left on device)").
    let result = sumtool::write(image, &analysis, &cfg, output.writer()).map(|(_, r)| r);
    if let Some(f) = changed() {
        output.abandon();
        return Err(f);
    }
    let report = match result {
        Ok(r) => r,
        Err(SumtoolError::Io(e)) => {
            output.abandon();
            tool.sys_error(&about("write", &out_path), &e);
            return Err(Fatal(255));
        }
        Err(e) => {
            output.abandon();
            return Err(die(&e.to_string()));
        }
    };
    if let Err(e) = output.commit() {
        tool.sys_error(&about("write", &out_path), &e);
        return Err(Fatal(255));
    }
    if verbose {
        // On stderr: stdout stays sumtool's listing.
        let s = report.stats;
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
    Ok(0)
}
