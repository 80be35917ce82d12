//! `jffs2-convert`: offline garbage collection and re-layout of a JFFS2 image
//! ([`jffs2::convert`]). The output options are mkfs.jffs2's, with its grammar.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use jffs2::compress::{Compressors, Mode};
use jffs2::convert::{self, ConvertConfig, ConvertReport, Source};
use jffs2::format::Endian;
use jffs2::layout::{EndPad, LayoutConfig};
use jffs2::mapped::{ImageMap, Watch};

use super::flags::convert::{
    FLAGS, OPT_INPUT_ENDIAN, OPT_INPUT_ERASEBLOCK, OPT_INPUT_PAGESIZE, OPT_JSON, OPT_NO_PROGRESS,
    OPT_NO_SUMMARY, OPT_OOBSIZE, OPT_SUMMARY, OPT_THREADS,
};
use super::flags::{self, ALL};
use super::getopt::{text, Parsed};
use super::num::{erase_size, strtol, strtol_i32, EraseSizeError};
use super::output::Output;
use super::{Progress, Tool};

/// Exit status: converted, nothing left out.
const EXIT_OK: i32 = 0;
/// Converted; something Linux could not read, or never shows, was left out, or Linux would
/// not mount the input (reported).
const EXIT_DROPPED: i32 = 1;
/// The input cannot be converted (unreadable, not JFFS2, nothing of it readable) or the
/// output cannot be written.
const EXIT_OPERATIONAL: i32 = 8;
/// Usage error.
use super::EXIT_USAGE;

pub use super::flags::convert::help;

/// The options, as they stand after the command line has been read in order.
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
    /// The priority of the last `-y` whose number parsed (mkfs.jffs2's grammar: a later
    /// `-y` without a number keeps it); -1 while there is none.
    compr_prior: i64,
    /// `--offset`, `--size`: the part of the input file read.
    window: flags::Window,
}

/// Runs jffs2-convert with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    let a = match parse(tool, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    run(tool, &a)
}

/// Reads the command line in order (an error or `-h`/`-V` ends it with the status in
/// `Err`), then checks what the options need together.
fn parse(tool: &Tool, args: &[OsString]) -> Result<Args, i32> {
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
        compr_prior: -1,
        window: flags::Window::default(),
    };
    let mut operands = Vec::new();
    for p in flags::getopt(args, FLAGS, ALL) {
        match p {
            Parsed::Opt { id, arg } => a.apply(tool, id, arg)?,
            Parsed::Operand(w) => operands.push(w),
            Parsed::Error(msg) => return Err(tool.usage(&msg)),
        }
    }
    if let Some(w) = operands.first() {
        return Err(tool.usage(&format!("unexpected operand '{}'", text(w))));
    }
    if a.input.is_none() || a.output.is_none() {
        return Err(tool.usage("an input (-i) and an output (-o) are required"));
    }
    if a.no_cleanmarkers && a.cleanmarker.is_some() {
        return Err(tool.usage("-c and -n contradict each other"));
    }
    Ok(a)
}

impl Args {
    /// Applies one option; `Err` holds the exit status when it ends the run (a usage
    /// error, or `-h`/`-V` done).
    fn apply(&mut self, tool: &Tool, id: u32, arg: Option<OsString>) -> Result<(), i32> {
        let s = arg.as_deref().map(text).unwrap_or_default();
        match id {
            0x69 /* i */ => self.input = arg,
            0x6f /* o */ => self.output = arg,
            0x65 /* e */ => self.erase = Some(size_arg(tool, "--eraseblock", &s)?),
            0x73 /* s */ => {
                let v = strtol_i32(&s).unwrap_or(0);
                if !(512..=1 << 20).contains(&v) || v.count_ones() != 1 {
                    return Err(tool.usage(&format!(
                        "--pagesize: {s} is not a power of two between 512 and 1MiB"
                    )));
                }
                self.page_size = v as u32;
            }
            0x63 /* c */ => {
                let v = strtol_i32(&s).unwrap_or(0);
                if v < 12 || v % 4 != 0 {
                    return Err(tool.usage("cleanmarker size must be >= 12 and a multiple of 4"));
                }
                self.cleanmarker = Some(v as u32);
            }
            0x6e /* n */ => self.no_cleanmarkers = true,
            0x6c /* l */ => self.endian = Some(Endian::Little),
            0x62 /* b */ => self.endian = Some(Endian::Big),
            0x70 /* p */ => self.pad = pad_arg(tool, arg.is_some(), &s)?,
            OPT_SUMMARY => self.summary = Some(true),
            OPT_NO_SUMMARY => self.summary = Some(false),
            0x6d | 0x78 | 0x58 | 0x79 /* m x X y */ => self.apply_compression(tool, id, &s)?,
            OPT_INPUT_ERASEBLOCK => self.input_erase = Some(size_arg(tool, "--input-eraseblock", &s)?),
            OPT_INPUT_ENDIAN => {
                self.input_endian = Some(match s.as_str() {
                    "little" | "le" | "l" => Endian::Little,
                    "big" | "be" | "b" => Endian::Big,
                    _ => return Err(tool.usage(&format!("--input-endian: '{s}' is not little or big"))),
                })
            }
            OPT_OOBSIZE | OPT_INPUT_PAGESIZE => {
                let v = strtol_i32(&s).unwrap_or(0);
                if v <= 0 {
                    return Err(tool.usage(&format!("bad size '{s}'")));
                }
                if id == OPT_OOBSIZE {
                    self.oobsize = v as usize;
                } else {
                    self.input_pagesize = v as usize;
                }
            }
            0x76 /* v */ => self.verbose = true,
            OPT_JSON => self.json = true,
            OPT_THREADS => {
                let (v, rest) = strtol(&s);
                if !rest.is_empty() || !(1..=jffs2::mkfs::MAX_THREADS as i64).contains(&v) {
                    return Err(tool.usage(&format!(
                        "--threads: '{s}' is not between 1 and {}",
                        jffs2::mkfs::MAX_THREADS
                    )));
                }
                self.threads = v as usize;
            }
            OPT_NO_PROGRESS => self.progress = false,
            0x68 /* h */ => {
                return Err(tool.print(&help()).map_or(EXIT_OPERATIONAL, |()| EXIT_OK));
            }
            0x56 /* V */ => {
                let v = tool.version_line();
                return Err(tool.print(&v).map_or(EXIT_OPERATIONAL, |()| EXIT_OK));
            }
            _ => {
                if let Err(msg) = self.window.set(id, &s) {
                    return Err(tool.usage(&msg));
                }
            }
        }
        Ok(())
    }

    /// `-m`, `-x`, `-X`, `-y`: each asks for the data to be compressed anew.
    fn apply_compression(&mut self, tool: &Tool, id: u32, s: &str) -> Result<(), i32> {
        match id {
            0x6d /* m */ => match s.parse::<Mode>() {
                Ok(m) => self.compressors.set_mode(m),
                Err(_) => return Err(tool.usage(&format!("Unknown compression mode {s}"))),
            },
            0x78 | 0x58 /* x X */ => {
                if self.compressors.set_enabled(s, id == 0x58).is_err() {
                    return Err(tool.usage(&format!("Unknown compressor name {s}")));
                }
            }
            _ /* y */ => {
                let (v, rest) = strtol(s);
                if rest.len() != s.len() {
                    self.compr_prior = i64::from(v as i32);
                }
                let name = rest.strip_prefix(':').unwrap_or("");
                if self.compr_prior < 0
                    || self
                        .compressors
                        .set_priority(name, self.compr_prior as i32)
                        .is_err()
                {
                    return Err(tool.usage(&format!("Cannot parse {s}")));
                }
            }
        }
        self.recompress = true;
        Ok(())
    }
}

/// An erase size in mkfs.jffs2's grammar, for the option `what`.
fn size_arg(tool: &Tool, what: &str, s: &str) -> Result<u32, i32> {
    match erase_size(s) {
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
            Err(tool.usage(&format!("{what}: unrecognisable size '{s}'")))
        }
        Err(EraseSizeError::UnknownUnits) => {
            Err(tool.usage(&format!("{what}: unknown units in '{s}'")))
        }
        Err(EraseSizeError::OutOfRange) => {
            Err(tool.usage(&format!("{what}: '{s}' is out of range")))
        }
    }
}

/// `-p`, with its optional argument (`given`) `s`.
fn pad_arg(tool: &Tool, given: bool, s: &str) -> Result<EndPad, i32> {
    if !given {
        return Ok(EndPad::Block);
    }
    // Up to the 4 GiB an image can hold; never wrapped.
    match super::num::size_up_to(s, jffs2::input::MAX_IMAGE_LEN) {
        Some(-1) => Ok(EndPad::Block),
        Some(v) => Ok(EndPad::Size(v)),
        None => Err(tool.usage(&format!(
            "--pad: bad size '{s}' (at most 4GiB; KiB, MiB, GiB suffixes)"
        ))),
    }
}

/// The input's name and whether it changed while mapped: what the error messages need.
struct InputState<'a> {
    tool: &'a Tool,
    path: PathBuf,
    /// Whether the input changed while mapped (see `Watch`), set once it is mapped.
    watch: std::cell::OnceCell<Watch>,
}

impl InputState<'_> {
    /// Reports an operational error.
    fn fail(&self, msg: &str) -> i32 {
        self.tool.error(msg);
        EXIT_OPERATIONAL
    }

    fn changed(&self) -> bool {
        self.watch.get().is_some_and(Watch::changed)
    }

    /// Reports that the input shrank while it was read.
    fn shrank(&self) -> i32 {
        self.fail(&format!(
            "{}: changed (shrank) while being read",
            self.path.display()
        ))
    }

    /// Reports an error about the input (or, if it changed while read, that instead).
    fn named(&self, e: &dyn std::fmt::Display) -> i32 {
        if self.changed() {
            return self.shrank();
        }
        self.fail(&format!("{}: {e}", self.path.display()))
    }
}

fn run(tool: &Tool, a: &Args) -> i32 {
    let (Some(input), Some(output)) = (&a.input, &a.output) else {
        return EXIT_USAGE;
    };
    let st = InputState {
        tool,
        path: PathBuf::from(input),
        watch: std::cell::OnceCell::new(),
    };
    let shown = PathBuf::from(output);
    let mut out = match open_output(&st, &shown) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let mut mapped: Option<ImageMap> = None;
    let src = match load_source(&st, a, &mut mapped) {
        Ok(s) => s,
        Err(code) => return code,
    };
    // What Linux would not mount is converted all the same, from what can be read of it
    // (as `jffs2-dump --extract` reads it), and said: a device whose partition no longer
    // mounts is when a clean image is needed most.
    let fs = match src.salvage() {
        Ok(fs) => fs,
        Err(e) => return st.named(&e),
    };
    if let Some(f) = &fs.scan().failure {
        tool.warning(&format!(
            "{}: Linux would not mount the input ({f}): converting what can be read of it",
            st.path.display()
        ));
    }
    let had = convert::input_layout(fs.scan());
    let mut cfg = match config(&st, a, &src, &had) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let bar = if a.progress && !a.json {
        Progress::new("jffs2-convert")
    } else {
        None
    };
    cfg.progress = bar.as_ref().map(Progress::callback);
    let result = out
        .direct_writer()
        .map_err(convert::ConvertError::Write)
        .and_then(|w| convert::convert(&fs, &cfg, w));
    if let Some(b) = bar {
        b.finish();
    }
    let result = result.map(|(_, r)| r);
    // The input shrank while mapped (rebuilt in place): what was read of it is not its
    // contents, so nothing derived from it is kept (checked before any other error: a write
    // from a vanished page fails with EFAULT).
    if st.changed() {
        out.abandon();
        return st.shrank();
    }
    let report = match result {
        Ok(r) => r,
        // A write error (a full disk) names the output; the temporary file is removed.
        Err(convert::ConvertError::Write(e)) => {
            out.abandon();
            let why = super::errno_text(&e);
            return st.fail(&format!("{}: writing the image: {why}", shown.display()));
        }
        Err(e) => {
            out.abandon();
            return st.fail(&e.to_string());
        }
    };
    if let Err(e) = out.commit() {
        return st.fail(&format!("{}: {}", shown.display(), super::errno_text(&e)));
    }
    report_result(tool, a, &report, &cfg, src.input_len, had.used)
}

/// Opens the output (a temporary file until complete; removed on any error) before the
/// input is read, so that its space is reserved on another core meanwhile. The input's
/// size is the estimate: a conversion writes at most about what the input holds.
fn open_output(st: &InputState, shown: &Path) -> Result<Output, i32> {
    let mut out = match Output::file(shown.to_path_buf()) {
        Ok(o) => o,
        Err(e) => return Err(st.fail(&format!("{}: {}", shown.display(), super::errno_text(&e)))),
    };
    if let Ok(m) = std::fs::metadata(&st.path) {
        if m.is_file() {
            out.preallocate(m.len());
        }
    }
    Ok(out)
}

/// The input: mapped into `mapped` (no copy of its bytes; it is never written), unless OOB
/// bytes must be peeled out of it first.
fn load_source<'m>(
    st: &InputState,
    a: &Args,
    mapped: &'m mut Option<ImageMap>,
) -> Result<Source<'m>, i32> {
    let src = if a.oobsize > 0 {
        // The window is on the raw file, OOB bytes included.
        let read = jffs2::input::read_image_path(&st.path).and_then(|mut b| {
            if let Some(w) = a.window.window() {
                w.cut(&mut b)?;
            }
            Ok(b)
        });
        let mut raw = match read {
            Ok(b) => b,
            Err(e) => return Err(st.named(&super::errno_text(&e))),
        };
        if let Err(e) = jffs2::dump::peel_oob(&mut raw, a.input_pagesize, a.oobsize) {
            return Err(st.named(&e));
        }
        Source::new(raw, a.input_erase, a.input_endian)
    } else {
        let file = match std::fs::File::open(&st.path) {
            Ok(f) => f,
            Err(e) => return Err(st.named(&super::errno_text(&e))),
        };
        let input = match ImageMap::load_in(&file, a.window.window()) {
            Ok(i) => mapped.insert(i),
            Err(e) => return Err(st.named(&super::errno_text(&e))),
        };
        let _ = st.watch.set(input.watch());
        let len = input.file_len();
        Source::in_place(input.buf_mut(), len, a.input_erase, a.input_endian)
    };
    src.map_err(|e| st.named(&e))
}

/// The output's layout: the options, else what the input was built with.
fn config(
    st: &InputState,
    a: &Args,
    src: &Source,
    had: &convert::InputLayout,
) -> Result<ConvertConfig, i32> {
    let g = src.geometry;
    let erase = a.erase.unwrap_or(g.erase_size);
    if erase < 8192 || erase % 4 != 0 {
        return Err(st.fail(&format!(
            "erase size 0x{erase:x}: a JFFS2 erase block is a multiple of 4 of at least 8KiB"
        )));
    }
    let cleanmarker = if a.no_cleanmarkers {
        None
    } else {
        a.cleanmarker.or(had.cleanmarker)
    };
    if cleanmarker.is_some_and(|c| c >= erase) {
        return Err(st.fail("cleanmarker size must be < eraseblock size"));
    }
    Ok(ConvertConfig {
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
        progress: None,
    })
}

/// After a committed conversion: what was left out, the report (`--json`, `-v`) and the
/// exit status.
fn report_result(
    tool: &Tool,
    a: &Args,
    report: &ConvertReport,
    cfg: &ConvertConfig,
    input_len: u64,
    used: u64,
) -> i32 {
    for d in &report.dropped {
        let path = d.path.as_deref().map_or_else(String::new, |p| {
            format!(" {}", jffs2::text::escape_if_needed(p))
        });
        tool.warning(&format!("left out (inode #{}{path}): {}", d.ino, d.what));
    }
    if a.json {
        let window = a.window.window().map(|w| w.offset);
        let doc = format!("{}\n", json(report, cfg, (input_len, window), used));
        if tool.print(&doc).is_err() {
            return EXIT_OPERATIONAL;
        }
    } else if a.verbose {
        eprintln!("{}", summary(report, cfg, input_len, used));
    }
    if report.dropped.is_empty() && report.unmountable.is_none() {
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
         blocks of {} KiB, {}, cleanmarkers {}, summaries {}; output {} bytes (input {input_len}{})",
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
        r.image_size,
        if r.unmountable.is_some() {
            ", which Linux would not mount"
        } else {
            ""
        }
    )
}

/// The `--json` document; `input` is the input's length and where it starts in its file
/// when a window was given (`--offset`).
fn json(
    r: &ConvertReport,
    cfg: &ConvertConfig,
    (input_len, window): (u64, Option<u64>),
    used: u64,
) -> String {
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
        "input": {
            "bytes": input_len,
            "used": used,
            "window": window.map(|o| serde_json::json!({"offset": o, "size": input_len})),
        },
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
        "unmountable": r.unmountable,
    })
    .to_string()
}
