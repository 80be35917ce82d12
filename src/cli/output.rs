//! Atomic output: images are written to a temporary file beside the destination and
//! renamed over it only when complete, so an error never leaves a partial image.
//! The data is not `fsync`ed before the rename, as no mtd-utils tool (nor `cp`, `tar`,
//! `mksquashfs`) does: syncing a 128 MB image costs more than summarising it. After a power
//! cut the destination is the old file or the new one, or, on file systems without ext4's
//! replace-by-rename heuristic, possibly an incomplete new one; build systems that need
//! durability run `sync` once at the end.

use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::PathBuf;

use tempfile::NamedTempFile;

const BUF: usize = 1 << 20;

enum Dest {
    Temp {
        tmp: Option<BufWriter<NamedTempFile>>,
        path: PathBuf,
    },
    Direct(BufWriter<File>),
    Stdout(BufWriter<io::Stdout>),
}

/// An output being written.
pub struct Output {
    dest: Dest,
}

impl Output {
    /// Output to the file at `path`.
    pub fn file(path: PathBuf) -> io::Result<Output> {
        let special = std::fs::metadata(&path)
            .map(|m| {
                let t = m.file_type();
                t.is_block_device() || t.is_char_device() || t.is_fifo() || t.is_socket()
            })
            .unwrap_or(false);
        if special {
            let f = OpenOptions::new().write(true).open(&path)?;
            return Ok(Output {
                dest: Dest::Direct(BufWriter::with_capacity(BUF, f)),
            });
        }
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{name}."))
            .suffix(".tmp")
            .tempfile_in(&dir)?;
        Ok(Output {
            dest: Dest::Temp {
                tmp: Some(BufWriter::with_capacity(BUF, tmp)),
                path,
            },
        })
    }

    /// Output to standard output.
    pub fn stdout() -> io::Result<Output> {
        Ok(Output {
            dest: Dest::Stdout(BufWriter::with_capacity(BUF, io::stdout())),
        })
    }

    /// The writer to write the image to.
    pub fn writer(&mut self) -> &mut dyn Write {
        match &mut self.dest {
            Dest::Temp { tmp, .. } => match tmp {
                Some(w) => w,
                None => unreachable_writer(),
            },
            Dest::Direct(w) => w,
            Dest::Stdout(w) => w,
        }
    }

    /// Completes the output: flushes, and renames the temporary file into place with
    /// mode 0644 less the umask (what mkfs.jffs2's `open(..., 0644)` gives).
    pub fn commit(self) -> io::Result<()> {
        match self.dest {
            Dest::Temp { tmp, path } => {
                let Some(w) = tmp else { return Ok(()) };
                let tmp = w.into_inner().map_err(|e| e.into_error())?;
                let mode = 0o644 & !umask();
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(mode))?;
                tmp.persist(&path).map_err(|e| e.error)?;
                Ok(())
            }
            Dest::Direct(mut w) => w.flush(),
            Dest::Stdout(mut w) => w.flush(),
        }
    }

    /// Gives up: the temporary file is removed and the destination left untouched.
    pub fn abandon(self) {
        drop(self);
    }
}

fn unreachable_writer() -> &'static mut dyn Write {
    // A writer that is never used: `tmp` is only None after commit, which consumes self.
    Box::leak(Box::new(io::sink()))
}

fn umask() -> u32 {
    // SAFETY: umask only swaps the process's file creation mask; it is restored at once.
    unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m as u32
    }
}
