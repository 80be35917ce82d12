//! `jffs2-convert`: offline garbage collection and re-layout of a JFFS2 image
//! ([`jffs2::convert`]). The output options are mkfs.jffs2's, with its grammar.

use std::ffi::OsString;
use std::path::PathBuf;

use jffs2::compress::{Compressors, Mode};
use jffs2::convert::{self, ConvertConfig, ConvertReport, Source};
use jffs2::format::Endian;
use jffs2::layout::{EndPad, LayoutConfig};

use super::flags::convert::{
    FLAGS, OPT_INPUT_ENDIAN, OPT_INPUT_ERASEBLOCK, OPT_INPUT_PAGESIZE, OPT_JSON, OPT_NO_PROGRESS,
    OPT_NO_SUMMARY, OPT_OOBSIZE, OPT_SUMMARY, OPT_THREADS,
};
use super::flags::{self, ALL};
use super::getopt::{text, Parsed};
use super::input::{Input, Watch};
use super::num::{erase_size, strtol, strtol_i32, EraseSizeError};
use super::output::Output;
use super::{Progress, Tool};

/// Exit status: converted, nothing left out.
const EXIT_OK: i32 = 0;
/// Converted; something Linux could not read, or never shows, was left out (reported).
const EXIT_DROPPED: i32 = 1;
/// The input cannot be converted (unreadable, not JFFS2, not mountable) or the output
/// cannot be written.
const EXIT_OPERATIONAL: i32 = 8;
/// Usage error.
const EXIT_USAGE: i32 = 16;

pub use super::flags::convert::help;

struct Args {
    input: Option<OsString>,
    output: Option<OsString>,
    erase: Option<u32>,
    page_size: u32,
    cleanmarker: Option<u32>,
    no_cleanmarkers: bool,
    endian: Option<Endian>,
    pad: EndPad,
    summary: Option<bool>,
    compressors: Compressors,
    recompress: bool,
    input_erase: Option<u32>,
    input_endian: Option<Endian>,
    oobsize: usize,
    input_pagesize: usize,
    verbose: bool,
    json: bool,
    threads: usize,
    progress: bool,
}

/// Runs jffs2-convert with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    let a = match parse(tool, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    run(tool, &a)
}

fn parse(tool: &Tool, args: &[OsString]) -> Result<Args, i32> {
    let usage = |msg: &str| -> i32 {
        tool.error(msg);
        eprintln!("Try '{} --help' for more information.", tool.name);
        EXIT_USAGE
    };
    let mut a = Args {
        input: None,
        output: None,
        erase: None,
        page_size: 4096,
        cleanmarker: None,
        no_cleanmarkers: false,
        endian: None,
        pad: EndPad::Block,
        summary: None,
        compressors: Compressors::mkfs_default(),
        recompress: false,
        input_erase: None,
        input_endian: None,
        oobsize: 0,
        input_pagesize: 2048,
        verbose: false,
        json: false,
        threads: 0,
        progress: true,
    };
    let mut compr_prior = -1i64;
    let mut operands = Vec::new();
    for p in flags::getopt(args, FLAGS, ALL) {
        let (id, arg) = match p {
            Parsed::Opt { id, arg } => (id, arg),
            Parsed::Operand(w) => {
                operands.push(w);
                continue;
            }
            Parsed::Error(msg) => return Err(usage(&msg)),
        };
        let s = arg.as_deref().map(text).unwrap_or_default();
        let size = |what: &str| -> Result<u32, i32> {
            match erase_size(&s) {
                Ok((v, raised)) => {
                    if let Some(orig) = raised {
                        tool.warning(&format!(
                            "{what}: erase size 0x{:x} too small. Increasing to 8KiB minimum",
                            orig as u32
                        ));
                    }
                    Ok(v)
                }
                Err(EraseSizeError::Unrecognisable) => {
                    Err(usage(&format!("{what}: unrecognisable size '{s}'")))
                }
                Err(EraseSizeError::UnknownUnits) => {
                    Err(usage(&format!("{what}: unknown units in '{s}'")))
                }
                Err(EraseSizeError::OutOfRange) => {
                    Err(usage(&format!("{what}: '{s}' is out of range")))
                }
            }
        };
        match id {
            0x69 /* i */ => a.input = arg,
            0x6f /* o */ => a.output = arg,
            0x65 /* e */ => a.erase = Some(size("--eraseblock")?),
            0x73 /* s */ => {
                let v = strtol_i32(&s).unwrap_or(0);
                if !(512..=1 << 20).contains(&v) || v.count_ones() != 1 {
                    return Err(usage(&format!(
                        "--pagesize: {s} is not a power of two between 512 and 1MiB"
                    )));
                }
                a.page_size = v as u32;
            }
            0x63 /* c */ => {
                let v = strtol_i32(&s).unwrap_or(0);
                if v < 12 || v % 4 != 0 {
                    return Err(usage("cleanmarker size must be >= 12 and a multiple of 4"));
                }
                a.cleanmarker = Some(v as u32);
            }
            0x6e /* n */ => a.no_cleanmarkers = true,
            0x6c /* l */ => a.endian = Some(Endian::Little),
            0x62 /* b */ => a.endian = Some(Endian::Big),
            0x70 /* p */ => {
                a.pad = match arg {
                    None => EndPad::Block,
                    // Up to the 4 GiB an image can hold; never wrapped.
                    Some(_) => match super::num::size_up_to(&s, jffs2::input::MAX_IMAGE_LEN) {
                        Some(-1) => EndPad::Block,
                        Some(v) => EndPad::Size(v),
                        None => {
                            return Err(usage(&format!(
                                "--pad: bad size '{s}' (at most 4GiB; KiB, MiB, GiB suffixes)"
                            )))
                        }
                    },
                }
            }
            OPT_SUMMARY => a.summary = Some(true),
            OPT_NO_SUMMARY => a.summary = Some(false),
            0x6d /* m */ => match s.parse::<Mode>() {
                Ok(m) => {
                    a.compressors.set_mode(m);
                    a.recompress = true;
                }
                Err(_) => return Err(usage(&format!("Unknown compression mode {s}"))),
            },
            0x78 | 0x58 /* x X */ => {
                if a.compressors.set_enabled(&s, id == 0x58).is_err() {
                    return Err(usage(&format!("Unknown compressor name {s}")));
                }
                a.recompress = true;
            }
            0x79 /* y */ => {
                let (v, rest) = strtol(&s);
                if rest.len() != s.len() {
                    compr_prior = i64::from(v as i32);
                }
                let name = rest.strip_prefix(':').unwrap_or("");
                if compr_prior < 0 || a.compressors.set_priority(name, compr_prior as i32).is_err()
                {
                    return Err(usage(&format!("Cannot parse {s}")));
                }
                a.recompress = true;
            }
            OPT_INPUT_ERASEBLOCK => a.input_erase = Some(size("--input-eraseblock")?),
            OPT_INPUT_ENDIAN => {
                a.input_endian = Some(match s.as_str() {
                    "little" | "le" | "l" => Endian::Little,
                    "big" | "be" | "b" => Endian::Big,
                    _ => return Err(usage(&format!("--input-endian: '{s}' is not little or big"))),
                })
            }
            OPT_OOBSIZE | OPT_INPUT_PAGESIZE => {
                let v = strtol_i32(&s).unwrap_or(0);
                if v <= 0 {
                    return Err(usage(&format!("bad size '{s}'")));
                }
                if id == OPT_OOBSIZE {
                    a.oobsize = v as usize;
                } else {
                    a.input_pagesize = v as usize;
                }
            }
            0x76 /* v */ => a.verbose = true,
            OPT_JSON => a.json = true,
            OPT_THREADS => {
                let (v, rest) = strtol(&s);
                if !rest.is_empty() || !(1..=jffs2::mkfs::MAX_THREADS as i64).contains(&v) {
                    return Err(usage(&format!(
                        "--threads: '{s}' is not between 1 and {}",
                        jffs2::mkfs::MAX_THREADS
                    )));
                }
                a.threads = v as usize;
            }
            OPT_NO_PROGRESS => a.progress = false,
            0x68 /* h */ => {
                return Err(tool.print(&help()).map_or(EXIT_OPERATIONAL, |()| EXIT_OK));
            }
            0x56 /* V */ => {
                let v = format!("{} (jffs2-tools) {}\n", tool.name, env!("CARGO_PKG_VERSION"));
                return Err(tool.print(&v).map_or(EXIT_OPERATIONAL, |()| EXIT_OK));
            }
            _ => {}
        }
    }
    if let Some(w) = operands.first() {
        return Err(usage(&format!("unexpected operand '{}'", text(w))));
    }
    if a.input.is_none() || a.output.is_none() {
        return Err(usage("an input (-i) and an output (-o) are required"));
    }
    if a.no_cleanmarkers && a.cleanmarker.is_some() {
        return Err(usage("-c and -n contradict each other"));
    }
    Ok(a)
}

fn run(tool: &Tool, a: &Args) -> i32 {
    let fail = |msg: &str| -> i32 {
        tool.error(msg);
        EXIT_OPERATIONAL
    };
    let (Some(input), Some(output)) = (&a.input, &a.output) else {
        return EXIT_USAGE;
    };
    let in_path = PathBuf::from(input);
    // Whether the input changed while mapped (see `Watch`), set once it is mapped.
    let watch: std::cell::OnceCell<Watch> = std::cell::OnceCell::new();
    let input_changed = || watch.get().is_some_and(Watch::changed);
    let shrank = || {
        fail(&format!(
            "{}: changed (shrank) while being read",
            in_path.display()
        ))
    };
    let named = |e: &dyn std::fmt::Display| {
        if input_changed() {
            return shrank();
        }
        fail(&format!("{}: {e}", in_path.display()))
    };
    // The output (a temporary file until complete; removed on any error) is opened first,
    // so that its space is reserved on another core while the input is read. The input's
    // size is the estimate: a conversion writes at most about what the input holds.
    let shown = PathBuf::from(output);
    let mut out = match Output::file(shown.clone()) {
        Ok(o) => o,
        Err(e) => return fail(&format!("{}: {}", shown.display(), super::errno_text(&e))),
    };
    if let Ok(m) = std::fs::metadata(&in_path) {
        if m.is_file() {
            out.preallocate(m.len());
        }
    }
    // The input is mapped (no copy of its bytes; it is never written), unless OOB bytes
    // must be peeled out of it first.
    let mut mapped: Option<Input> = None;
    let src = if a.oobsize > 0 {
        let mut raw = match jffs2::input::read_image_path(&in_path) {
            Ok(b) => b,
            Err(e) => return named(&super::errno_text(&e)),
        };
        if let Err(e) = jffs2::dump::peel_oob(&mut raw, a.input_pagesize, a.oobsize) {
            return named(&e);
        }
        Source::new(raw, a.input_erase, a.input_endian)
    } else {
        let file = match std::fs::File::open(&in_path) {
            Ok(f) => f,
            Err(e) => return named(&super::errno_text(&e)),
        };
        let input = match Input::load(&file) {
            Ok(i) => mapped.insert(i),
            Err(e) => return named(&super::errno_text(&e)),
        };
        let _ = watch.set(input.watch());
        let len = input.len;
        Source::in_place(input.buf_mut(), len, a.input_erase, a.input_endian)
    };
    let src = match src {
        Ok(s) => s,
        Err(e) => return named(&e),
    };
    let fs = match src.mount() {
        Ok(fs) => fs,
        Err(e) => return named(&e),
    };
    let had = convert::input_layout(fs.scan());
    let g = src.geometry;
    let erase = a.erase.unwrap_or(g.erase_size);
    if erase < 8192 || erase % 4 != 0 {
        return fail(&format!(
            "erase size 0x{erase:x}: a JFFS2 erase block is a multiple of 4 of at least 8KiB"
        ));
    }
    let cleanmarker = if a.no_cleanmarkers {
        None
    } else {
        a.cleanmarker.or(had.cleanmarker)
    };
    if cleanmarker.is_some_and(|c| c >= erase) {
        return fail("cleanmarker size must be < eraseblock size");
    }
    let cfg = ConvertConfig {
        layout: LayoutConfig {
            endian: a.endian.unwrap_or(g.endian),
            erase_size: erase,
            cleanmarker,
            summary: a.summary.unwrap_or(had.summary),
        },
        page_size: a.page_size,
        recompress: a.recompress,
        compressors: a.compressors.clone(),
        pad: a.pad,
        threads: a.threads,
    };
    let bar = if a.progress && !a.json {
        Progress::new("jffs2-convert")
    } else {
        None
    };
    let set = |d: u64, t: u64| {
        if let Some(b) = &bar {
            b.set(d, t);
        }
    };
    let result = out
        .direct_writer()
        .map_err(convert::ConvertError::Write)
        .and_then(|w| convert::convert_with_progress(&fs, &cfg, w, Some(&set)));
    if let Some(b) = bar {
        b.finish();
    }
    let result = result.map(|(_, r)| r);
    // The input shrank while mapped (rebuilt in place): what was read of it is not its
    // contents, so nothing derived from it is kept (checked before any other error: a write
    // from a vanished page fails with EFAULT).
    if input_changed() {
        out.abandon();
        return shrank();
    }
    let report = match result {
        Ok(r) => r,
        // A write error (a full disk) names the output; the temporary file is removed.
        Err(convert::ConvertError::Write(e)) => {
            out.abandon();
            let why = super::errno_text(&e);
            return fail(&format!("{}: writing the image: {why}", shown.display()));
        }
        Err(e) => {
            out.abandon();
            return fail(&e.to_string());
        }
    };
    if let Err(e) = out.commit() {
        return fail(&format!("{}: {}", shown.display(), super::errno_text(&e)));
    }
    for d in &report.dropped {
        let path = d.path.as_deref().map_or_else(String::new, |p| {
            format!(" {}", jffs2::text::escape_if_needed(p))
        });
        tool.warning(&format!("left out (inode #{}{path}): {}", d.ino, d.what));
    }
    if a.json {
        let doc = format!("{}\n", json(&report, &cfg, src.input_len, had.used));
        if tool.print(&doc).is_err() {
            return EXIT_OPERATIONAL;
        }
    } else if a.verbose {
        eprintln!("{}", summary(&report, &cfg, src.input_len, had.used));
    }
    if report.dropped.is_empty() {
        EXIT_OK
    } else {
        EXIT_DROPPED
    }
}

fn summary(r: &ConvertReport, cfg: &ConvertConfig, input_len: u64, used: u64) -> String {
    let l = &cfg.layout;
    format!(
        "{} inodes, {} directory entries, {} xattr nodes: {} nodes copied, {} written anew \
         ({} kept undecodable), {} left out; {} bytes of nodes (input used {used}) in {} erase \
         blocks of {} KiB, {}, cleanmarkers {}, summaries {}; output {} bytes (input {input_len})",
        r.inodes,
        r.dirents,
        r.xattrs,
        r.copied,
        r.rewritten,
        r.kept_undecodable,
        r.dropped.len(),
        r.node_bytes,
        r.image_size.div_ceil(u64::from(l.erase_size)),
        l.erase_size / 1024,
        l.endian.name(),
        l.cleanmarker
            .map_or_else(|| "none".to_string(), |c| format!("{c} bytes")),
        if l.summary { "yes" } else { "no" },
        r.image_size
    )
}

fn json(r: &ConvertReport, cfg: &ConvertConfig, input_len: u64, used: u64) -> String {
    let l = &cfg.layout;
    let dropped: Vec<serde_json::Value> = r
        .dropped
        .iter()
        .map(|d| {
            serde_json::json!({
                "ino": d.ino,
                "path": d.path.as_deref().map(|p| String::from_utf8_lossy(p).into_owned()),
                "what": d.what,
            })
        })
        .collect();
    serde_json::json!({
        "input": {"bytes": input_len, "used": used},
        "output": {
            "bytes": r.image_size,
            "node_bytes": r.node_bytes,
            "erase_size": l.erase_size,
            "endian": l.endian.name(),
            "cleanmarker": l.cleanmarker,
            "summary": l.summary,
            "page_size": cfg.page_size,
        },
        "inodes": r.inodes,
        "dirents": r.dirents,
        "xattr_nodes": r.xattrs,
        "copied": r.copied,
        "rewritten": r.rewritten,
        "kept_undecodable": r.kept_undecodable,
        "dropped": dropped,
    })
    .to_string()
}
