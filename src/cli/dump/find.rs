//! `jffs2-dump --find FILE`: every JFFS2 filesystem in a file ([`jffs2::dump::find`]), as a
//! table, or one JSON document with `--json`. With `--offset`/`--size` only that part of the
//! file is searched; offsets are always the file's.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use jffs2::dump::find::{find, Found};
use jffs2::extract::ImageMap;
use serde_json::{json, Value};

use super::views::{ViewArgs, TRIM_LIMIT, TRIM_PERIOD};
use super::{input_unchanged, io_text, stdout_failed, Exit, Tool};

/// Runs `--find` on `path`; exit status 0 (none found included: the table says so), 1 when
/// the file cannot be read.
pub(super) fn run(tool: &Tool, path: &Path, a: &ViewArgs) -> Result<i32, Exit> {
    let shown = path.display().to_string();
    let failed = |msg: String| {
        tool.error(&msg);
        if a.json {
            tool.json_error(&shown, 1);
        }
        Exit(1)
    };
    let window = a.window();
    let input = open_window(path, &shown, window).map_err(failed)?;
    let found = {
        let _t = input.trimmer(TRIM_LIMIT, TRIM_PERIOD);
        find(input.file_bytes())
    };
    input_unchanged(tool, &shown)?;
    let base = window.map_or(0, |w| w.offset);
    let stdout = io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let written = if a.json {
        write_json(&mut out, &shown, input.file_len(), base, &found)
    } else {
        write_table(&mut out, &shown, base, &found)
    };
    written
        .and_then(|()| out.flush())
        .map_err(|e| stdout_failed(tool, &e))?;
    Ok(0)
}

/// The window of the file at `path` mapped, or read when it cannot be mapped (a pipe); the
/// error as the message to print.
fn open_window(
    path: &Path,
    shown: &str,
    window: Option<jffs2::mapped::Window>,
) -> Result<ImageMap, String> {
    match ImageMap::open_in(path, window, None) {
        Ok(m) => Ok(m),
        Err(e) if e.kind() == io::ErrorKind::Unsupported => {
            let f = std::fs::File::open(path).map_err(|e| open_failed(shown, &e))?;
            ImageMap::load_in(&f, window).map_err(|e| open_failed(shown, &e))
        }
        Err(e) => Err(open_failed(shown, &e)),
    }
}

fn open_failed(shown: &str, e: &io::Error) -> String {
    format!("open input file {shown}: {}", io_text(e))
}

fn written_by(f: &Found) -> String {
    if f.kernel_written() {
        format!("kernel ({})", f.kernel_signs.join(", "))
    } else {
        "mkfs.jffs2 (clean)".to_string()
    }
}

fn write_table(out: &mut dyn Write, shown: &str, base: u64, found: &[Found]) -> io::Result<()> {
    if found.is_empty() {
        return writeln!(out, "{shown}: no JFFS2 filesystem found");
    }
    writeln!(
        out,
        "{:<4} {:<10} {:<10} {:>10} {:<6} {:>6} {:>8} {:>7}  written by",
        "#", "start", "end", "size", "endian", "erase", "nodes", "files"
    )?;
    for (i, f) in found.iter().enumerate() {
        writeln!(
            out,
            "{:<4} 0x{:08x} 0x{:08x} {:>10} {:<6} {:>6} {:>8} {:>7}  {}",
            i + 1,
            base + f.start,
            base + f.end,
            f.end - f.start,
            f.endian.name(),
            jffs2::text::erase_size_arg(f.erase_size),
            f.nodes,
            f.files,
            written_by(f)
        )?;
    }
    writeln!(
        out,
        "\nRead one in place: jffs2-dump --offset=START --size=SIZE --extract=DIR {shown}"
    )
}

fn found_json(base: u64, f: &Found) -> Value {
    json!({
        "start": base + f.start,
        "end": base + f.end,
        "size": f.end - f.start,
        "data_end": base + f.data_end,
        "endian": f.endian.name(),
        "erase_size": f.erase_size,
        "erase_size_confidence": crate::cli::f32_json(f.confidence),
        "nodes": f.nodes,
        "files": f.files,
        "clean_mkfs": !f.kernel_written(),
        "kernel_signs": f.kernel_signs,
    })
}

fn write_json(
    out: &mut dyn Write,
    shown: &str,
    len: usize,
    base: u64,
    found: &[Found],
) -> io::Result<()> {
    let doc = json!({
        "format": "jffs2-dump-find-json/1",
        "file": shown,
        "searched": {"offset": base, "size": len},
        "filesystems": found.iter().map(|f| found_json(base, f)).collect::<Vec<_>>(),
        "exit_code": 0,
    });
    serde_json::to_writer_pretty(&mut *out, &doc).map_err(io::Error::other)?;
    writeln!(out)
}

/// What `--find --extract DIR` came to.
pub(super) enum Multi {
    /// Every filesystem found was extracted: the worst status.
    Done(i32),
    /// Under the `jefferson` name, fewer than two filesystems: the whole file is extracted
    /// into DIR itself, as before (`docs/spec/ecosystem.md` §1.2.1).
    Single,
}

/// `--find --extract DIR`: every filesystem [`find`] delimits extracted into `DIR/fs_N` (N as
/// in the `--find` table), each read in place through its window (`--offset`/`--size`), as
/// Linux shows it on its own. Under the `jefferson` name a file holding fewer than two is
/// left to the plain `--extract` ([`Multi::Single`]): jefferson ≤0.3's `fs_N` layout only
/// where there is more than one, 0.4's DIR itself otherwise (`docs/spec/ecosystem.md`
/// §1.2.1).
pub(super) fn extract_all(
    tool: &Tool,
    path: &Path,
    a: &ViewArgs,
    dir: &Path,
) -> Result<Multi, Exit> {
    if a.json {
        tool.error(
            "--find --extract writes files, one directory a filesystem: --json is not for it",
        );
        return Err(Exit(1));
    }
    let shown = path.display().to_string();
    let window = a.window();
    let found = {
        let input = open_window(path, &shown, window).map_err(|msg| {
            tool.error(&msg);
            Exit(1)
        })?;
        let _t = input.trimmer(TRIM_LIMIT, TRIM_PERIOD);
        find(input.file_bytes())
    };
    input_unchanged(tool, &shown)?;
    if tool.name == "jefferson" && found.len() < 2 {
        return Ok(Multi::Single);
    }
    if found.is_empty() {
        tool.error(&format!("{shown}: no JFFS2 filesystem found"));
        return Err(Exit(1));
    }
    prepare_dir(tool, dir, a.force)?;
    let base = window.map_or(0, |w| w.offset);
    let mut worst = 0;
    for (i, f) in found.iter().enumerate() {
        let sub = dir.join(format!("fs_{}", i + 1));
        if a.verbose {
            eprintln!(
                "{}: {}: 0x{:08x}..0x{:08x} ({} endian) into {}",
                tool.name,
                shown,
                base + f.start,
                base + f.end,
                f.endian.name(),
                sub.display()
            );
        }
        let mut one = a.clone();
        one.find = false;
        one.extract = Some(sub);
        one.window = crate::cli::flags::Window {
            offset: Some(base + f.start),
            size: Some(f.end - f.start),
        };
        // Each filesystem is extracted whatever became of the ones before it.
        let code = match super::views::run(tool, path, None, &one, &mut io::stdout()) {
            Ok(c) | Err(Exit(c)) => c,
        };
        worst = worst.max(code);
    }
    Ok(Multi::Done(worst))
}

/// DIR for `--find --extract`: made (one level) when missing; an existing one must be a
/// directory, and empty unless `--force`, as for `--extract`.
fn prepare_dir(tool: &Tool, dir: &Path, force: bool) -> Result<(), Exit> {
    let shown = dir.display();
    let failed = |what: &str, e: &io::Error| {
        tool.error(&format!("{what} {shown}: {}", io_text(e)));
        Exit(1)
    };
    match std::fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            tool.error(&format!("{shown}: exists and is not a directory"));
            Err(Exit(1))
        }
        Ok(_) => {
            let mut entries = std::fs::read_dir(dir).map_err(|e| failed("read", &e))?;
            if !force && entries.next().is_some() {
                tool.error(&format!(
                    "{shown}: the destination is not empty (--force merges into it, never replacing anything)"
                ));
                return Err(Exit(1));
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            std::fs::create_dir(dir).map_err(|e| failed("mkdir", &e))
        }
        Err(e) => Err(failed("stat", &e)),
    }
}
