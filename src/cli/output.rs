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
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use tempfile::NamedTempFile;

const BUF: usize = 1 << 20;

/// A buffered writer whose `write` system calls run on a thread of their own: the kernel's
/// copy of each buffer (on tmpfs, as costly as producing the bytes) overlaps the work that
/// produces the next one. At most three buffers of `BUF` (1 MiB) exist.
pub struct Behind<W: Write + Send + 'static> {
    buf: Vec<u8>,
    written: u64,
    tx: Option<SyncSender<Vec<u8>>>,
    spare: Receiver<Vec<u8>>,
    thread: Option<JoinHandle<io::Result<W>>>,
    /// Set by [`Behind::direct`]: the inner writer, written on the caller's thread.
    direct: Option<W>,
}

impl<W: Write + Send + 'static> Behind<W> {
    /// Starts the writing thread for `inner`.
    pub fn new(mut inner: W) -> io::Result<Behind<W>> {
        let (tx, rx) = sync_channel::<Vec<u8>>(1);
        let (give_back, spare) = sync_channel::<Vec<u8>>(2);
        let thread =
            std::thread::Builder::new()
                .name("writer".into())
                .spawn(move || -> io::Result<W> {
                    for mut b in rx {
                        inner.write_all(&b)?;
                        b.clear();
                        let _ = give_back.try_send(b);
                    }
                    inner.flush()?;
                    Ok(inner)
                })?;
        Ok(Behind {
            buf: Vec::with_capacity(BUF),
            written: 0,
            tx: Some(tx),
            spare,
            thread: Some(thread),
            direct: None,
        })
    }

    /// From now on, writes go straight to the inner writer on the caller's thread (what was
    /// buffered is written first): for a caller that runs the writes on a thread of its own
    /// and passes large slices, which the buffer would only copy once more.
    pub fn direct(&mut self) -> io::Result<()> {
        if self.direct.is_none() {
            self.ship()?;
            self.direct = Some(self.join()?);
        }
        Ok(())
    }

    /// Hands the full buffer to the thread; its error, if it stopped on one.
    fn ship(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BUF));
        let full = std::mem::replace(&mut self.buf, next);
        let sent = self.tx.as_ref().map(|tx| tx.send(full));
        match sent {
            Some(Ok(())) => Ok(()),
            // The thread stopped: on a write error, which joining returns.
            _ => match self.join() {
                Err(e) => Err(e),
                Ok(_) => Err(io::Error::other("the writing thread stopped")),
            },
        }
    }

    fn join(&mut self) -> io::Result<W> {
        self.tx = None;
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the writing thread panicked")),
            None => Err(io::Error::other("the output was already closed")),
        }
    }

    /// Writes what is buffered, waits for the thread, and returns the inner writer (or the
    /// first error any write met).
    pub fn finish(mut self) -> io::Result<W> {
        if let Some(mut w) = self.direct.take() {
            w.flush()?;
            return Ok(w);
        }
        self.ship()?;
        self.join()
    }
}

impl<W: Write + Send + 'static> Write for Behind<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.write_all(b)?;
        Ok(b.len())
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match &mut self.direct {
            Some(w) => {
                let n = w.write_vectored(bufs)?;
                self.written += n as u64;
                Ok(n)
            }
            None => {
                let b = bufs
                    .iter()
                    .find(|b| !b.is_empty())
                    .map_or(&[][..], |b| &**b);
                self.write(b)
            }
        }
    }

    fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
        self.written += b.len() as u64;
        if let Some(w) = &mut self.direct {
            return w.write_all(b);
        }
        while !b.is_empty() {
            let n = (BUF - self.buf.len().min(BUF)).min(b.len());
            self.buf.extend_from_slice(&b[..n]);
            b = &b[n..];
            if self.buf.len() >= BUF {
                self.ship()?;
            }
        }
        Ok(())
    }

    /// Hands what is buffered to the thread (the bytes reach the file before
    /// [`Behind::finish`] returns).
    fn flush(&mut self) -> io::Result<()> {
        match &mut self.direct {
            Some(w) => w.flush(),
            None => self.ship(),
        }
    }
}

impl<W: Write + Send + 'static> Drop for Behind<W> {
    fn drop(&mut self) {
        if self.thread.is_some() {
            let _ = self.join();
        }
    }
}

enum Dest {
    Temp {
        /// Writes to the temporary file through a `File` of its own: `NamedTempFile`'s
        /// writes wrap errors with its path and lose the errno ("error 0 (Success)" for a
        /// full disk).
        w: Behind<File>,
        tmp: NamedTempFile,
        path: PathBuf,
        /// A thread reserving the file's space ahead of the writes.
        prealloc: Option<JoinHandle<()>>,
    },
    Direct(Behind<File>),
    Stdout(BufWriter<io::Stdout>),
}

/// An output being written.
pub struct Output {
    dest: Dest,
}

impl Output {
    /// Output to the file at `path`. A symbolic link is written through, as mkfs.jffs2's
    /// `open(path, O_TRUNC)` does: the temporary file is made beside the file it names and
    /// renamed over that file, the link kept. Devices, pipes, sockets, `/dev/stdout`-style
    /// links into `/proc` or `/dev`, and dangling links are written directly.
    pub fn file(path: PathBuf) -> io::Result<Output> {
        let direct = |path: &PathBuf| -> io::Result<Output> {
            let f = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .open(path)?;
            Ok(Output {
                dest: Dest::Direct(Behind::new(f)?),
            })
        };
        let special = std::fs::metadata(&path)
            .map(|m| {
                let t = m.file_type();
                t.is_block_device() || t.is_char_device() || t.is_fifo() || t.is_socket()
            })
            .unwrap_or(false);
        if special {
            return direct(&path);
        }
        let is_link = std::fs::symlink_metadata(&path)
            .map(|m| m.file_type().is_symlink())
            .unwrap_or(false);
        let path = if is_link {
            if path.starts_with("/dev") || path.starts_with("/proc") {
                return direct(&path);
            }
            match std::fs::canonicalize(&path) {
                Ok(real) if !real.starts_with("/proc") && !real.starts_with("/dev") => real,
                _ => return direct(&path),
            }
        } else {
            path
        };
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
                w: Behind::new(tmp.as_file().try_clone()?)?,
                tmp,
                path,
                prealloc: None,
            },
        })
    }

    /// Output to standard output.
    pub fn stdout() -> io::Result<Output> {
        Ok(Output {
            dest: Dest::Stdout(BufWriter::with_capacity(BUF, io::stdout())),
        })
    }

    /// Reserves `len` bytes for the output on a thread of its own, while the caller is still
    /// reading its input (an estimate: what the output does not use is given back at
    /// [`Output::commit`]). Allocating the file's pages ahead, beside the work, takes that
    /// cost off the writes (on tmpfs, about half of writing). Best effort: file systems
    /// without `fallocate` just skip it.
    pub fn preallocate(&mut self, len: u64) {
        use std::os::fd::AsRawFd;
        let Dest::Temp { tmp, prealloc, .. } = &mut self.dest else {
            return;
        };
        let (Ok(len), Ok(dup)) = (libc::off_t::try_from(len), tmp.as_file().try_clone()) else {
            return;
        };
        let t = std::thread::spawn(move || {
            // SAFETY: fallocate on a file descriptor this thread owns (`dup`); its result
            // does not matter (the writes allocate whatever it did not).
            unsafe {
                libc::fallocate(dup.as_raw_fd(), 0, 0, len);
            }
        });
        *prealloc = Some(t);
    }

    /// The writer to write the image to.
    pub fn writer(&mut self) -> &mut dyn Write {
        match &mut self.dest {
            Dest::Temp { w, .. } => w,
            Dest::Direct(w) => w,
            Dest::Stdout(w) => w,
        }
    }

    /// The writer for a producer that runs its writes on a thread of its own (a
    /// conversion): no buffer of ours between it and the file. Not to be mixed with
    /// [`Output::writer`] afterwards.
    pub fn direct_writer(&mut self) -> io::Result<&mut (dyn Write + Send)> {
        match &mut self.dest {
            Dest::Temp { w, .. } | Dest::Direct(w) => {
                w.direct()?;
                Ok(w)
            }
            Dest::Stdout(w) => Ok(w),
        }
    }

    /// Completes the output: flushes, and renames the temporary file into place with
    /// mode 0644 less the umask (what mkfs.jffs2's `open(..., 0644)` gives).
    pub fn commit(self) -> io::Result<()> {
        match self.dest {
            Dest::Temp {
                w,
                tmp,
                path,
                prealloc,
            } => {
                let written = w.written;
                let reserved = prealloc.map(JoinHandle::join).is_some();
                drop(w.finish()?);
                if reserved {
                    // Gives back what the estimate reserved beyond the output.
                    tmp.as_file().set_len(written)?;
                }
                let mode = 0o644 & !umask();
                tmp.as_file()
                    .set_permissions(std::fs::Permissions::from_mode(mode))?;
                tmp.persist(&path).map_err(|e| e.error)?;
                Ok(())
            }
            Dest::Direct(w) => w.finish().map(drop),
            Dest::Stdout(mut w) => w.flush(),
        }
    }

    /// Gives up: the temporary file is removed and the destination left untouched.
    pub fn abandon(self) {
        drop(self);
    }
}

fn umask() -> u32 {
    // SAFETY: umask only swaps the process's file creation mask; it is restored at once.
    unsafe {
        let m = libc::umask(0o022);
        libc::umask(m);
        m as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Writes `data` in uneven pieces through an output reserved for `estimate` bytes.
    fn write_with_estimate(path: PathBuf, data: &[u8], estimate: Option<u64>) {
        let mut out = Output::file(path).expect("output");
        if let Some(e) = estimate {
            out.preallocate(e);
        }
        let w = out.writer();
        for piece in data.chunks(4093) {
            w.write_all(piece).expect("write");
        }
        out.commit().expect("commit");
    }

    #[test]
    fn preallocated_output_equals_the_bytes_at_any_estimate() {
        let dir = tempfile::tempdir().expect("tempdir");
        let data = bytes(3 << 20);
        for estimate in [
            None,
            Some(0),
            Some(1),
            Some(1 << 20),
            Some(3 << 20),
            Some(8 << 20),
        ] {
            let p = dir.path().join("out.img");
            write_with_estimate(p.clone(), &data, estimate);
            let got = std::fs::read(&p).expect("read");
            assert!(got == data, "estimate {estimate:?}: output differs");
            let left: Vec<_> = std::fs::read_dir(dir.path())
                .expect("dir")
                .filter_map(Result::ok)
                .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
                .collect();
            assert!(left.is_empty(), "temporary file left behind");
        }
    }

    #[test]
    fn abandoned_preallocated_output_leaves_nothing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("out.img");
        let mut out = Output::file(p.clone()).expect("output");
        out.preallocate(1 << 20);
        out.writer().write_all(&bytes(5000)).expect("write");
        out.abandon();
        assert!(std::fs::read_dir(dir.path()).expect("dir").next().is_none());
    }

    #[test]
    fn a_symlink_is_written_through_and_kept() {
        let dir = tempfile::tempdir().expect("tempdir");
        let real_dir = dir.path().join("real");
        std::fs::create_dir(&real_dir).expect("mkdir");
        let target = real_dir.join("image.bin");
        std::fs::write(&target, b"old").expect("write");
        let link = dir.path().join("link.bin");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        let data = bytes(10000);
        write_with_estimate(link.clone(), &data, Some(10000));
        assert!(std::fs::symlink_metadata(&link)
            .expect("link")
            .file_type()
            .is_symlink());
        assert!(std::fs::read(&target).expect("target") == data);
        // A dangling link: the file it names is created, as open(O_CREAT) would.
        let dangling = dir.path().join("dangling.bin");
        let missing = real_dir.join("new.bin");
        std::os::unix::fs::symlink(&missing, &dangling).expect("symlink");
        write_with_estimate(dangling.clone(), &data, None);
        assert!(std::fs::read(&missing).expect("created") == data);
        assert!(std::fs::symlink_metadata(&dangling)
            .expect("link")
            .file_type()
            .is_symlink());
    }
}
