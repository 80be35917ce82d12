//! `jffs2-fsck` / `fsck.jffs2`: checks a JFFS2 image (the checks are in `jffs2::fsck`; this
//! front end parses the command line and prints text or JSON).
//!
//! Exit codes as fsck(8): 0 consistent, 4 errors found (or `--compare` differences), 8
//! operational error (unreadable, empty, not JFFS2), 16 usage error.
//!
//! Invoked as `fsck.jffs2` (by fsck(8)), the generic fsck options are accepted: `-a`, `-p`,
//! `-y` (repair automatically / answer yes) and `-n` (no changes) are accepted and have no
//! effect, since the check never writes; `-f` (force) has none either, the check is always
//! complete; `-V` (fsck's own verbose flag) is ignored; `-C[fd]` (progress) shows the
//! progress bar when stderr is a terminal.

use std::ffi::OsString;
use std::fs::File;
use std::path::PathBuf;

use jffs2::format::Endian;
use jffs2::fsck::{self, CompareOptions, Finding, FsckError, Options, Report, Severity};
use jffs2::mapped::ImageMap;
use jffs2::source::XattrSelect;
use jffs2::ImageBytes;
use serde_json::{json, Value};

use super::flags;
use super::flags::fsck::{
    AS_FSCK, FLAGS, OPT_COMPARE, OPT_FAKETIME, OPT_IGNORE_MTIME, OPT_JSON, OPT_KERNEL_LOG,
    OPT_NO_PROGRESS, OPT_REPAIR, OPT_SQUASH, OPT_SQUASH_PERMS, OPT_SQUASH_UIDS, OPT_VERSION,
    OPT_WITH_POSIX_ACL, OPT_WITH_SELINUX, OPT_WITH_XATTR, PLAIN,
};
use super::getopt::{text, Parsed};
use super::num::{erase_size, EraseSizeError};
use super::output::{is_input_message, Output};
use super::{Progress, Tool};

/// Exit code: no errors.
pub const EXIT_OK: i32 = 0;
/// Exit code: errors found (left uncorrected).
pub const EXIT_ERRORS: i32 = 4;
/// Exit code: operational error.
pub const EXIT_OPERATIONAL: i32 = 8;
/// Exit code: usage error (the same for every tool with generated help).
pub use super::EXIT_USAGE;

/// The largest erase size accepted (what autodetection considers, too).
const MAX_ERASE: u32 = 16 << 20;

pub use super::flags::fsck::{help, help_as};

/// The options, as they stand after the command line has been read in order.
struct Args {
    erase: Option<u32>,
    endian: Option<Endian>,
    verbose: bool,
    json: bool,
    kernel_log: bool,
    compare: Option<PathBuf>,
    squash_uids: bool,
    squash_perms: bool,
    faketime: bool,
    xattr: Option<XattrSelect>,
    ignore_mtime: bool,
    progress: bool,
    image: Option<OsString>,
    repair: Option<PathBuf>,
    /// The `--with-*` selections so far (`xattr` once the command line is read).
    xattr_sel: XattrSelect,
    /// Whether any `--with-*` was given.
    xattr_given: bool,
    /// `--offset`, `--size`.
    window: flags::Window,
}

enum Parse {
    Run(Box<Args>),
    Exit(i32),
}

fn parse(tool: &Tool, argv: &[OsString], as_fsck: bool) -> Parse {
    let names = if as_fsck { AS_FSCK } else { PLAIN };
    let mut a = Args {
        erase: None,
        endian: None,
        verbose: false,
        json: false,
        kernel_log: false,
        compare: None,
        squash_uids: false,
        squash_perms: false,
        faketime: false,
        xattr: None,
        ignore_mtime: false,
        progress: true,
        image: None,
        repair: None,
        xattr_sel: XattrSelect::NONE,
        xattr_given: false,
        window: flags::Window::default(),
    };
    for p in flags::getopt(argv, FLAGS, names) {
        let applied = match p {
            Parsed::Error(m) => Err(tool.usage(&m)),
            Parsed::Operand(o) => {
                if a.image.is_some() {
                    Err(tool.usage("more than one image given"))
                } else {
                    a.image = Some(o);
                    Ok(())
                }
            }
            Parsed::Opt { id, arg } => a.apply(tool, id, arg.map(|s| text(&s)).unwrap_or_default()),
        };
        if let Err(code) = applied {
            return Parse::Exit(code);
        }
    }
    if a.xattr_given {
        a.xattr = Some(a.xattr_sel);
    }
    if a.image.is_none() {
        return Parse::Exit(tool.usage("no image given"));
    }
    if a.compare.is_none()
        && (a.squash_uids || a.squash_perms || a.faketime || a.xattr_given || a.ignore_mtime)
    {
        return Parse::Exit(
            tool.usage("--squash, --faketime, --with-* and --ignore-mtime need --compare"),
        );
    }
    Parse::Run(Box::new(a))
}

impl Args {
    /// Applies one option; `Err` holds the exit status when it ends the run (a usage
    /// error, or `-h`/`--version` done).
    fn apply(&mut self, tool: &Tool, id: u32, arg: String) -> Result<(), i32> {
        match id {
            x if x == u32::from(b'e') => self.erase = Some(erase_arg(tool, &arg)?),
            x if x == u32::from(b'l') => self.endian = Some(Endian::Little),
            x if x == u32::from(b'b') => self.endian = Some(Endian::Big),
            x if x == u32::from(b'v') => self.verbose = true,
            x if x == u32::from(b'h') => {
                return Err(tool
                    .print(&help_as(&tool.name))
                    .map_or(EXIT_OPERATIONAL, |()| EXIT_OK));
            }
            // fsck(8) generic options: accepted, no effect (the check never writes).
            x if [b'a', b'p', b'n', b'y', b'f', b'V']
                .iter()
                .any(|&c| x == u32::from(c)) => {}
            x if x == u32::from(b'C') => self.progress = true,
            OPT_JSON => self.json = true,
            OPT_COMPARE => self.compare = Some(PathBuf::from(arg)),
            OPT_KERNEL_LOG => self.kernel_log = true,
            OPT_SQUASH => {
                self.squash_uids = true;
                self.squash_perms = true;
            }
            OPT_SQUASH_UIDS => self.squash_uids = true,
            OPT_SQUASH_PERMS => self.squash_perms = true,
            OPT_FAKETIME => self.faketime = true,
            OPT_WITH_XATTR => self.with_xattr(XattrSelect::ALL),
            OPT_WITH_SELINUX => self.with_xattr(XattrSelect::SECURITY),
            OPT_WITH_POSIX_ACL => self.with_xattr(XattrSelect::POSIX_ACL),
            OPT_IGNORE_MTIME => self.ignore_mtime = true,
            OPT_NO_PROGRESS => self.progress = false,
            OPT_REPAIR => self.repair = Some(PathBuf::from(arg)),
            OPT_VERSION => {
                let v = tool.version_line();
                return Err(tool.print(&v).map_or(EXIT_OPERATIONAL, |()| EXIT_OK));
            }
            id => match self.window.set(id, &arg) {
                Ok(true) => {}
                Ok(false) => return Err(tool.usage("unknown option")),
                Err(msg) => return Err(tool.usage(&msg)),
            },
        }
        Ok(())
    }

    /// `--with-*`.
    fn with_xattr(&mut self, sel: XattrSelect) {
        self.xattr_sel |= sel;
        self.xattr_given = true;
    }
}

/// `-e`: an erase size in mkfs.jffs2's grammar, at most [`MAX_ERASE`].
fn erase_arg(tool: &Tool, arg: &str) -> Result<u32, i32> {
    match erase_size(arg) {
        Ok((size, _)) if size > MAX_ERASE => Err(tool.usage(&format!(
            "erase size '{arg}' is larger than {} MiB",
            MAX_ERASE >> 20
        ))),
        Ok((size, raised)) => {
            if let Some(orig) = raised {
                tool.warning(&format!(
                    "Erase size 0x{orig:x} too small. Increasing to 8KiB minimum"
                ));
            }
            Ok(size)
        }
        Err(EraseSizeError::Unrecognisable) => {
            Err(tool.usage(&format!("unrecognisable erase size '{arg}'")))
        }
        Err(EraseSizeError::UnknownUnits) => {
            Err(tool.usage(&format!("unknown units in erasesize '{arg}' (KiB or MiB)")))
        }
        Err(EraseSizeError::OutOfRange) => Err(tool.usage(&format!(
            "erase size '{arg}' is larger than {} MiB",
            MAX_ERASE >> 20
        ))),
    }
}

/// Runs the tool with `argv` (without the program name); returns the exit code.
pub fn main(tool: &Tool, argv: &[OsString], as_fsck: bool) -> i32 {
    let a = match parse(tool, argv, as_fsck) {
        Parse::Run(a) => a,
        Parse::Exit(c) => return c,
    };
    let Some(image_path) = a.image.clone() else {
        return EXIT_USAGE;
    };
    let shown = image_path.to_string_lossy().into_owned();
    // --json prints one document whatever happens: the error's when the check cannot run.
    let failed = |code: i32| {
        if a.json {
            tool.json_error(&shown, code);
        }
        code
    };
    let mut repair_out = match open_repair(tool, &a, &image_path) {
        Ok(o) => o,
        Err(code) => return failed(code),
    };
    // Mapped, not read: its pages are dropped as the check goes (`jffs2::mapped`).
    let window = a.window.window();
    let mapped = File::open(&image_path).and_then(|f| ImageMap::load_trimmed_in(&f, window));
    let mut image = match mapped {
        Ok(v) => v,
        Err(err) => {
            tool.sys_error(&format!("cannot read {shown}"), &err);
            return failed(EXIT_OPERATIONAL);
        }
    };
    let report = match check(tool, &a, &mut image, &shown, &mut repair_out) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut code = report.verdict().exit_code();
    if let (Some(out), Some(output)) = (&a.repair, repair_out) {
        // The check's model is gone, but glibc keeps much of what its threads freed: give
        // it back before the conversion builds its own.
        #[cfg(target_env = "gnu")]
        // SAFETY: malloc_trim only returns free memory to the system.
        unsafe {
            libc::malloc_trim(0);
        }
        match repair(tool, &mut image, &shown, out, output, &report) {
            Ok(dropped) => {
                if code != EXIT_OK || dropped {
                    code = EXIT_CORRECTED;
                }
            }
            Err(msg) => {
                tool.error(&format!("--repair: {msg}"));
                code = EXIT_OPERATIONAL;
            }
        }
    }
    let out = if a.json {
        let mut doc = to_json(&shown, &report, a.verbose);
        // The status the run exits with (--repair's included).
        doc["exit_code"] = json!(code);
        // Offsets in the findings count from the window's start.
        doc["window"] =
            json!(window.map(|w| json!({"offset": w.offset, "size": image.file_len()})));
        let mut s = serde_json::to_string_pretty(&doc).unwrap_or_default();
        s.push('\n');
        s
    } else if a.kernel_log {
        kernel_log_text(&report)
    } else {
        let label = match window {
            Some(w) => format!(
                "{shown} at 0x{:08x} ({} bytes; offsets count from there)",
                w.offset,
                image.file_len()
            ),
            None => shown.clone(),
        };
        text_report(tool, &label, &report, a.verbose)
    };
    if tool.print(&out).is_err() {
        return EXIT_OPERATIONAL;
    }
    image.release_on_pool();
    code
}

/// `--repair`'s output, opened first: IMAGE is never written, so an OUT that is IMAGE
/// (through a link, a hard link) is refused before anything is done.
fn open_repair(tool: &Tool, a: &Args, image_path: &OsString) -> Result<Option<Output>, i32> {
    let Some(out) = &a.repair else {
        return Ok(None);
    };
    match Output::file(out.clone()) {
        Ok(o) if o.is_same_file(std::path::Path::new(image_path)) => {
            o.abandon();
            let msg = is_input_message(out, std::path::Path::new(image_path));
            tool.error(&format!("--repair: {msg}"));
            Err(EXIT_USAGE)
        }
        Ok(o) => Ok(Some(o)),
        Err(e) => {
            let why = super::errno_text(&e);
            tool.error(&format!("--repair: {}: {why}", out.display()));
            Err(EXIT_OPERATIONAL)
        }
    }
}

/// Checks the image (with a progress bar for a large one); an error is reported (in JSON
/// too with `--json`) and its exit status returned.
fn check(
    tool: &Tool,
    a: &Args,
    image: &mut ImageMap,
    shown: &str,
    repair_out: &mut Option<Output>,
) -> Result<Report, i32> {
    let mut opts = Options {
        erase_size: a.erase,
        endian: a.endian,
        compare: a.compare.as_ref().map(|dir| CompareOptions {
            dir: dir.clone(),
            squash_uids: a.squash_uids,
            squash_perms: a.squash_perms,
            faketime: a.faketime,
            xattr: a.xattr,
            ignore_mtime: a.ignore_mtime,
        }),
        progress: None,
    };
    let bar = if a.progress && image.file_len() >= 32 << 20 {
        Progress::new("checking")
    } else {
        None
    };
    opts.progress = bar.as_ref().map(Progress::callback);
    let len = image.file_len();
    let watch = image.watch();
    let result = fsck::check(ImageBytes::InPlace(image.buf_mut(), len), &opts);
    if let Some(b) = bar {
        b.finish();
    }
    // A mapped image that shrank meanwhile read as zeros where it vanished (`jffs2::mapguard`):
    // no verdict on what is no longer there.
    if watch.changed() {
        if let Some(o) = repair_out.take() {
            o.abandon();
        }
        tool.error(&format!("{shown}: changed (shrank) while being read"));
        if a.json {
            tool.json_error(shown, EXIT_OPERATIONAL);
        }
        return Err(EXIT_OPERATIONAL);
    }
    result.map_err(|err| {
        let msg = match &err {
            FsckError::Compare(e) => format!("--compare: {e}"),
            e => format!("{shown}: {e}"),
        };
        tool.error(&msg);
        if a.json {
            tool.json_error(shown, EXIT_OPERATIONAL);
        }
        EXIT_OPERATIONAL
    })
}

/// fsck(8): "filesystem errors corrected".
const EXIT_CORRECTED: i32 = 1;

/// `--repair=OUT`: the image Linux would have shown, in the input's own layout, through the
/// conversion of `jffs2-convert` (`jffs2::convert`). Returns whether anything was left out
/// (or Linux would not mount IMAGE at all).
fn repair(
    tool: &Tool,
    image: &mut ImageMap,
    image_shown: &str,
    out: &std::path::Path,
    mut output: Output,
    report: &Report,
) -> Result<bool, String> {
    use jffs2::convert::{self, ConvertConfig, Source};
    use jffs2::layout::{EndPad, LayoutConfig};
    let len = image.file_len();
    let input_len = len as u64;
    let watch = image.watch();
    let g = report.geometry.geometry;
    let src = Source::in_place(image.buf_mut(), len, Some(g.erase_size), Some(g.endian))
        .map_err(|e| e.to_string())?;
    // IMAGE that Linux would not mount is repaired from what can be read of it (as
    // `jffs2-dump --extract` reads it), and said; the check has reported why already.
    let fs = src.salvage().map_err(|e| e.to_string())?;
    if let Some(f) = &fs.scan().failure {
        tool.warning(&format!(
            "--repair: Linux would not mount {image_shown} ({f}): {} holds what can be read of it",
            out.display()
        ));
    }
    let had = convert::input_layout(fs.scan());
    let es = u64::from(g.erase_size);
    let cfg = ConvertConfig {
        layout: LayoutConfig {
            endian: g.endian,
            erase_size: g.erase_size,
            cleanmarker: had.cleanmarker,
            summary: had.summary,
        },
        page_size: 4096,
        recompress: false,
        compressors: jffs2::compress::Compressors::mkfs_default(),
        // A whole-partition dump stays a whole partition.
        pad: if input_len % es == 0 {
            EndPad::Size(input_len as i64)
        } else {
            EndPad::Block
        },
        threads: 0,
        progress: None,
    };
    let result = output
        .direct_writer()
        .map_err(convert::ConvertError::Write)
        .and_then(|w| convert::convert(&fs, &cfg, w));
    let (_, r) = match result {
        Ok(x) => x,
        // A write error (a full disk) names the output; the temporary file is removed.
        Err(convert::ConvertError::Write(e)) => {
            output.abandon();
            let why = super::errno_text(&e);
            return Err(format!("{}: writing the image: {why}", out.display()));
        }
        Err(e) => {
            output.abandon();
            return Err(e.to_string());
        }
    };
    if watch.changed() {
        output.abandon();
        return Err(format!(
            "{}: changed (shrank) while being read",
            image_shown
        ));
    }
    output
        .commit()
        .map_err(|e| format!("{}: {}", out.display(), super::errno_text(&e)))?;
    for d in &r.dropped {
        let path = d.path.as_deref().map_or_else(String::new, |p| {
            format!(" {}", jffs2::text::escape_if_needed(p))
        });
        tool.warning(&format!(
            "--repair left out (inode #{}{path}): {}",
            d.ino, d.what
        ));
    }
    eprintln!(
        "{}: repaired image written to {}: {} inodes, {} nodes copied, {} written anew, {} left out",
        tool.name,
        out.display(),
        r.inodes,
        r.copied,
        r.rewritten,
        r.dropped.len()
    );
    Ok(!r.dropped.is_empty() || r.unmountable.is_some())
}

/// The kernel log in `dmesg` form.
pub fn kernel_log_text(r: &Report) -> String {
    let mut s = String::new();
    for m in &r.kernel_log {
        // The one KERN_CRIT printk of the scan, and OpenWrt's plain printk of its end
        // marker, have no "jffs2: " prefix.
        if m.text.starts_with("Dirty space 0x")
            || m.text.starts_with("jffs2_scan_eraseblock(): End")
        {
            s.push_str(&m.text);
        } else {
            s.push_str("jffs2: ");
            s.push_str(&m.text);
        }
        s.push('\n');
    }
    s
}

fn pct(part: u64, whole: u64) -> String {
    jffs2::text::percent(part, whole)
}

fn size(v: u64) -> String {
    if v >= 10 << 20 {
        format!("{:.1} MiB", v as f64 / f64::from(1u32 << 20))
    } else if v >= 10 << 10 {
        format!("{:.1} KiB", v as f64 / 1024.0)
    } else {
        format!("{v} bytes")
    }
}

fn kib(v: u32) -> String {
    if v % 1024 == 0 {
        format!("{} KiB", v / 1024)
    } else {
        format!("{v:#x} bytes")
    }
}

fn geometry_line(r: &Report) -> String {
    let g = &r.geometry;
    let how = |given: bool| if given { "given" } else { "detected" };
    format!(
        "{} endian ({}), erase size {} ({}{}), {}",
        g.geometry.endian.name(),
        how(g.endian_given),
        kib(g.geometry.erase_size),
        how(g.erase_size_given),
        if g.erase_size_given {
            String::new()
        } else {
            format!(", confidence {:.2}", g.detection.confidence)
        },
        if g.geometry.cleanmarker_size == 0 {
            "no cleanmarkers".to_string()
        } else {
            format!("{}-byte cleanmarkers", g.geometry.cleanmarker_size)
        }
    )
}

/// The text report: with `verbose` the detection and the erase blocks first, then the
/// findings and differences, the verdict line and the statistics.
fn text_report(tool: &Tool, image: &str, r: &Report, verbose: bool) -> String {
    let mut s = String::new();
    if verbose {
        s.push_str(&detail_text(r));
    }
    for f in &r.findings {
        s.push_str(&f.to_string());
        s.push('\n');
    }
    if let Some(d) = &r.differences {
        for x in d {
            s.push_str(&format!("DIFF {x}\n"));
        }
    }
    if let Some(h) = &r.compare_hint {
        s.push_str(&format!("hint: {h}\n"));
    }
    s.push_str(&verdict_line(tool, image, r));
    s.push_str(&statistics_text(r));
    s
}

/// `-v`: the detection's evidence and the table of erase blocks.
fn detail_text(r: &Report) -> String {
    let mut s = String::new();
    s.push_str("detection:\n");
    for e in &r.geometry.detection.evidence {
        s.push_str(&format!("  {e}\n"));
    }
    s.push_str("erase blocks:\n");
    s.push_str("  index  offset      class         list           used    unchecked  dirty   wasted  free    read    nodes (obsolete)  summary\n");
    for b in &r.block_details {
        s.push_str(&format!(
            "  {:<6} 0x{:08x}  {:<13} {:<14} {:<7} {:<10} {:<7} {:<7} {:<7} {:<7} {:>5} ({})  {}\n",
            b.index,
            b.offset,
            b.class.name(),
            b.list.name(),
            b.used,
            b.unchecked,
            b.dirty,
            b.wasted,
            b.free,
            b.bytes_read,
            b.nodes,
            b.obsolete,
            b.summary
        ));
    }
    s
}

/// The line with the verdict, its exit status and the counts.
fn verdict_line(tool: &Tool, image: &str, r: &Report) -> String {
    let (e, w, i) = (
        r.count(Severity::Error),
        r.count(Severity::Warning),
        r.count(Severity::Info),
    );
    let v = r.verdict();
    let plural =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    format!(
        "{}: {image}: {} (exit {}): {}, {}, {}{}\n",
        tool.name,
        v.name(),
        v.exit_code(),
        plural(e, "error", "errors"),
        plural(w, "warning", "warnings"),
        plural(i, "note", "notes"),
        r.differences
            .as_ref()
            .map(|d| format!(", {}", plural(d.len(), "difference", "differences")))
            .unwrap_or_default()
    )
}

/// The statistics, one `  key: value` line each.
fn statistics_text(r: &Report) -> String {
    let rows = [
        ("geometry:", geometry_line(r)),
        (
            "image:",
            format!(
                "{} bytes, checked as {} ({} erase blocks)",
                r.image_len, r.flash_len, r.blocks.total
            ),
        ),
        ("tree:", tree_line(r)),
        ("nodes:", nodes_line(r)),
        ("space:", space_line(r)),
        ("blocks:", blocks_line(r)),
        (
            "summaries:",
            format!(
                "{} of {} blocks with nodes ({})",
                r.summary_blocks,
                r.node_blocks,
                pct(u64::from(r.summary_blocks), u64::from(r.node_blocks))
            ),
        ),
        (
            "mount cost:",
            format!(
                "Linux reads {} at mount; {} if every block were scanned in full",
                size(r.mount_cost.with_summaries),
                size(r.mount_cost.full_scan)
            ),
        ),
        ("mount:", mount_line(r).to_string()),
    ];
    rows.iter()
        .map(|(k, v)| format!("  {k:<12}{v}\n"))
        .collect()
}

fn tree_line(r: &Report) -> String {
    let t = &r.tree;
    format!(
        "{}, {} ({}), {}, {}",
        super::count(t.dirs, "directory", "directories"),
        super::count(t.files, "file", "files"),
        size(t.bytes),
        super::count(t.symlinks, "symlink", "symlinks"),
        super::count(t.special, "device/fifo/socket", "devices/fifos/sockets")
    )
}

fn nodes_line(r: &Report) -> String {
    let n = &r.nodes;
    format!(
        "{} on flash ({} obsolete); {} data nodes decompressed and verified ({})",
        n.nodes,
        n.obsolete,
        n.data_checked,
        size(n.data_bytes)
    )
}

fn space_line(r: &Report) -> String {
    let sp = &r.space;
    let sh = sp.shares(r.flash_len);
    format!(
        "used {} ({}), unchecked {}, dirty {} ({}), wasted {}, free {} ({})",
        size(sp.used),
        sh.used,
        size(sp.unchecked),
        size(sp.dirty),
        sh.dirty,
        size(sp.wasted),
        size(sp.free),
        sh.free
    )
}

fn blocks_line(r: &Report) -> String {
    let b = &r.blocks;
    format!(
        "{} clean, {} partly dirty, {} all dirty, {} free (cleanmarker), {} erased",
        b.clean, b.partly_dirty, b.all_dirty, b.cleanmarker, b.empty
    )
}

fn mount_line(r: &Report) -> &'static str {
    if !r.mount_ok {
        "Linux refuses to mount it"
    } else if r.read_only {
        "Linux mounts it read-only only"
    } else {
        "Linux mounts it"
    }
}

fn finding_json(f: &Finding) -> Value {
    json!({
        "severity": f.severity.lower(),
        "code": f.code.as_str(),
        "offset": f.offset,
        "ino": f.ino,
        "path": f.path,
        "message": f.message,
    })
}

/// One `--compare` difference; a content difference's offset as a number.
fn difference_json(x: &jffs2::fsck::Difference) -> Value {
    let mut d = json!({"path": x.path, "what": x.what, "image": x.image, "dir": x.dir});
    if let Some(o) = x.offset {
        d["offset"] = json!(o);
    }
    d
}

/// The `--json` document.
fn to_json(image: &str, r: &Report, verbose: bool) -> Value {
    let g = &r.geometry;
    let mut doc = json!({
        "image": image,
        "verdict": r.verdict().name(),
        "exit_code": r.verdict().exit_code(),
        "findings": r.findings.iter().map(finding_json).collect::<Vec<_>>(),
        "summary": {
            "counts": {
                "error": r.count(Severity::Error),
                "warning": r.count(Severity::Warning),
                "info": r.count(Severity::Info),
            },
            "geometry": {
                "endian": g.geometry.endian.name(),
                "erase_size": g.geometry.erase_size,
                "cleanmarker_size": g.geometry.cleanmarker_size,
                "endian_given": g.endian_given,
                "erase_size_given": g.erase_size_given,
                "detection_confidence": super::f32_json(g.detection.confidence),
            },
            "image_size": r.image_len,
            "checked_size": r.flash_len,
            "space": {
                "used": r.space.used,
                "unchecked": r.space.unchecked,
                "dirty": r.space.dirty,
                "wasted": r.space.wasted,
                "free": r.space.free,
            },
            "blocks": {
                "total": r.blocks.total,
                "clean": r.blocks.clean,
                "partly_dirty": r.blocks.partly_dirty,
                "all_dirty": r.blocks.all_dirty,
                "cleanmarker": r.blocks.cleanmarker,
                "empty": r.blocks.empty,
            },
            "summary_coverage": {
                "blocks_with_summary": r.summary_blocks,
                "blocks_with_nodes": r.node_blocks,
            },
            "mount_cost": {
                "bytes_read_with_summaries": r.mount_cost.with_summaries,
                "bytes_read_full_scan": r.mount_cost.full_scan,
            },
            "mount_ok": r.mount_ok,
            "read_only": r.read_only,
            "tree": {
                "dirs": r.tree.dirs,
                "files": r.tree.files,
                "symlinks": r.tree.symlinks,
                "special": r.tree.special,
                "file_bytes": r.tree.bytes,
            },
            "nodes": {
                "on_flash": r.nodes.nodes,
                "obsolete": r.nodes.obsolete,
                "data_checked": r.nodes.data_checked,
                "data_bytes": r.nodes.data_bytes,
            },
        },
        "kernel_log": r.kernel_log.iter().map(|m| json!({
            "level": m.level.name(),
            "offset": m.offset,
            "text": m.text,
        })).collect::<Vec<_>>(),
    });
    if let Some(d) = &r.differences {
        doc["differences"] = Value::Array(d.iter().map(difference_json).collect());
        doc["compare_hint"] = json!(r.compare_hint);
    }
    if verbose {
        doc["detection_evidence"] = json!(g.detection.evidence);
        doc["blocks"] = Value::Array(
            r.block_details
                .iter()
                .map(|b| {
                    json!({
                        "index": b.index, "offset": b.offset, "class": b.class.name(),
                        "list": b.list.name(), "used": b.used, "unchecked": b.unchecked,
                        "dirty": b.dirty, "wasted": b.wasted, "free": b.free,
                        "summary": b.summary, "bytes_read": b.bytes_read, "nodes": b.nodes,
                        "obsolete": b.obsolete,
                    })
                })
                .collect(),
        );
    }
    doc
}
