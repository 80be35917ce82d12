//! The writing side of a tool that copies nodes from its input (jffs2-convert,
//! jffs2-sumtool): the output's `write` system calls run on a thread of their own, and the
//! bytes of nodes copied from the input are not copied in user space at all — the thread
//! writes them straight from the input image.
//!
//! A pristine conversion or a summarised image is a copy of most of the input: copying each
//! node into a buffer and the buffer into the file cost twice the copy `cp` does (on tmpfs,
//! the kernel's copy is as costly as everything else the tool does). Here a write of bytes that lie in
//! the image is kept as a reference to them ("kept"); a kept slice that continues the
//! previous one (the next node of the input, or padding equal to the input's) makes it
//! longer, so that an input laid out like the output is written with a few large calls.
//! Other bytes (rewritten nodes, cleanmarkers, summaries, padding) are gathered in
//! buffers. The bytes written, and their order, are exactly those given.
//!
//! Padding after a kept node is taken as the image's next bytes without looking at them
//! (that look is a cache miss per node on the thread that lays the output out); the writing
//! thread checks them just before it writes them, and writes the given bytes instead where
//! they differ.
//!
//! Memory stays bounded: a batch holds at most [`BATCH_OWNED`] bytes of its own and
//! [`BATCH_PIECES`] pieces, and at most two batches wait for the thread.

use std::io::{self, IoSlice, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::{Scope, ScopedJoinHandle};

/// Bytes of the image at least this long are kept rather than copied (a reference costs
/// an entry in a `writev`; copying a few bytes is cheaper).
const KEEP_MIN: usize = 256;
/// Owned bytes gathered per buffer.
const BUF: usize = 1 << 20;
/// A batch is handed to the thread once it owns this many bytes, ...
const BATCH_OWNED: usize = 2 * BUF;
/// ... refers to this many bytes of the image, ...
const BATCH_KEPT: usize = 8 << 20;
/// ... or holds this many pieces.
const BATCH_PIECES: usize = 1024;
/// Padding after a kept slice is taken as the image's next bytes (checked by the writing
/// thread) up to this length.
const CONTINUE_MAX: usize = 8;

/// Bytes written as the image's own, to be checked before they are: the kept piece `piece`
/// of the batch must hold `bytes` at `pos`.
struct Check {
    piece: usize,
    pos: usize,
    len: usize,
    bytes: [u8; CONTINUE_MAX],
}

/// A batch of pieces and the checks of its kept bytes.
struct Batch<'a> {
    pieces: Vec<Piece<'a>>,
    checks: Vec<Check>,
}

/// A run of output bytes.
enum Piece<'a> {
    /// Bytes of the image, written from where they are.
    Kept(&'a [u8]),
    /// Bytes of the pipe's own.
    Owned(Vec<u8>),
}

impl Piece<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Piece::Kept(b) => b,
            Piece::Owned(v) => v,
        }
    }
}

/// A [`Write`] whose bytes reach `W` on a scoped thread, in order; slices of `image`
/// are passed by reference. [`Pipe::finish`] returns `W` once every byte is written.
pub(crate) struct Pipe<'scope, 'a, W: Write + Send> {
    image: &'a [u8],
    pieces: Vec<Piece<'a>>,
    checks: Vec<Check>,
    buf: Vec<u8>,
    owned: usize,
    kept: usize,
    tx: Option<SyncSender<Batch<'a>>>,
    spare: Receiver<Vec<u8>>,
    thread: Option<ScopedJoinHandle<'scope, io::Result<W>>>,
}

impl<'scope, 'a: 'scope, W: Write + Send + 'scope> Pipe<'scope, 'a, W> {
    /// Starts the writing thread, named `name`, for `out` in `scope`; writes of bytes of
    /// `image` are kept.
    pub(crate) fn start<'env>(
        scope: &'scope Scope<'scope, 'env>,
        name: &str,
        image: &'a [u8],
        mut out: W,
    ) -> io::Result<Pipe<'scope, 'a, W>> {
        let (tx, rx) = sync_channel::<Batch<'a>>(2);
        let (give_back, spare) = sync_channel::<Vec<u8>>(4);
        // A thread the system refuses is an error, not a panic.
        let thread = std::thread::Builder::new().name(name.into()).spawn_scoped(
            scope,
            move || -> io::Result<W> {
                for batch in rx {
                    write_batch(&mut out, &batch)?;
                    for p in batch.pieces {
                        if let Piece::Owned(mut v) = p {
                            if v.capacity() >= BUF {
                                v.clear();
                                let _ = give_back.try_send(v);
                            }
                        }
                    }
                }
                out.flush()?;
                Ok(out)
            },
        )?;
        Ok(Pipe {
            image,
            pieces: Vec::new(),
            checks: Vec::new(),
            buf: Vec::with_capacity(BUF),
            owned: 0,
            kept: 0,
            tx: Some(tx),
            spare,
            thread: Some(thread),
        })
    }

    /// `b` as a slice of the image, if it lies in it.
    fn in_image(&self, b: &[u8]) -> Option<(usize, usize)> {
        let base = self.image.as_ptr() as usize;
        let at = (b.as_ptr() as usize).checked_sub(base)?;
        let end = at.checked_add(b.len())?;
        (end <= self.image.len()).then_some((at, end))
    }

    /// Where the last piece, a kept slice, ends in the image (`None`: the last piece is not
    /// kept, or owned bytes were gathered since).
    fn kept_end(&self) -> Option<usize> {
        if !self.buf.is_empty() {
            return None;
        }
        match self.pieces.last() {
            Some(Piece::Kept(s)) => self.in_image(s).map(|(_, end)| end),
            _ => None,
        }
    }

    /// Makes the last piece (a kept slice ending at `end`) end at `new_end` instead.
    fn extend_kept(&mut self, end: usize, new_end: usize) {
        if let Some(Piece::Kept(s)) = self.pieces.last_mut() {
            let start = end - s.len();
            if let Some(longer) = self.image.get(start..new_end) {
                *s = longer;
                self.kept += new_end - end;
            }
        }
    }

    /// Moves the gathered bytes into a piece of their own.
    fn seal(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let next = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BUF));
        let full = std::mem::replace(&mut self.buf, next);
        self.pieces.push(Piece::Owned(full));
    }

    /// Hands the pieces to the thread; its error, if it stopped on one.
    fn ship(&mut self) -> io::Result<()> {
        self.seal();
        if self.pieces.is_empty() {
            return Ok(());
        }
        let batch = Batch {
            pieces: std::mem::take(&mut self.pieces),
            checks: std::mem::take(&mut self.checks),
        };
        self.owned = 0;
        self.kept = 0;
        match self.tx.as_ref().map(|tx| tx.send(batch)) {
            Some(Ok(())) => Ok(()),
            // The thread stopped: on a write error, which joining returns.
            _ => match self.join() {
                Err(e) => Err(e),
                Ok(_) => Err(io::Error::other("the writing thread stopped")),
            },
        }
    }

    fn ship_if_full(&mut self) -> io::Result<()> {
        if self.owned >= BATCH_OWNED || self.kept >= BATCH_KEPT || self.pieces.len() >= BATCH_PIECES
        {
            self.ship()?;
        }
        Ok(())
    }

    fn join(&mut self) -> io::Result<W> {
        self.tx = None;
        match self.thread.take().map(ScopedJoinHandle::join) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the writing thread panicked")),
            None => Err(io::Error::other("the output was already closed")),
        }
    }

    /// Writes what is left, waits for the thread, and returns the output (or the first
    /// error a write met).
    pub(crate) fn finish(mut self) -> io::Result<W> {
        self.ship()?;
        self.join()
    }
}

/// Writes a batch: its pieces as given, with the bytes of a failed check in place of the
/// image's.
fn write_batch<W: Write>(out: &mut W, batch: &Batch<'_>) -> io::Result<()> {
    let found = |c: &Check| match batch.pieces.get(c.piece) {
        Some(Piece::Kept(s)) => s.get(c.pos..c.pos + c.len),
        _ => None,
    };
    let holds = |c: &Check| found(c) == Some(&c.bytes[..c.len]);
    let mut slices: Vec<&[u8]> = Vec::with_capacity(batch.pieces.len());
    if batch.checks.iter().all(holds) {
        slices.extend(batch.pieces.iter().map(Piece::bytes));
        return write_slices(out, &slices);
    }
    // Rare: a kept piece is split around the bytes that differ.
    let mut checks = batch.checks.iter().peekable();
    for (i, p) in batch.pieces.iter().enumerate() {
        let bytes = p.bytes();
        let mut from = 0usize;
        while let Some(c) = checks.next_if(|c| c.piece == i) {
            if holds(c) || c.pos < from || c.pos + c.len > bytes.len() {
                continue;
            }
            slices.push(&bytes[from..c.pos]);
            slices.push(&c.bytes[..c.len]);
            from = c.pos + c.len;
        }
        slices.push(&bytes[from..]);
    }
    write_slices(out, &slices)
}

/// Writes the slices with as few calls as `writev` allows.
fn write_slices<W: Write>(out: &mut W, all: &[&[u8]]) -> io::Result<()> {
    const IOV: usize = 512;
    let mut i = 0;
    while i < all.len() {
        let group = &all[i..(i + IOV).min(all.len())];
        i += group.len();
        let mut slices: Vec<IoSlice<'_>> = group.iter().map(|b| IoSlice::new(b)).collect();
        let mut rest: &mut [IoSlice<'_>] = &mut slices;
        while !rest.is_empty() {
            match out.write_vectored(rest) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => IoSlice::advance_slices(&mut rest, n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(())
}

impl<'scope, 'a: 'scope, W: Write + Send + 'scope> Write for Pipe<'scope, 'a, W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.write_all(b)?;
        Ok(b.len())
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        if b.is_empty() {
            return Ok(());
        }
        let end = self.kept_end();
        match self.in_image(b) {
            // The next bytes of the input after the last kept slice: one longer slice.
            Some((at, to)) if end == Some(at) => self.extend_kept(at, to),
            Some((at, to)) if b.len() >= KEEP_MIN => {
                self.seal();
                if let Some(s) = self.image.get(at..to) {
                    self.pieces.push(Piece::Kept(s));
                    self.kept += s.len();
                }
            }
            _ => match end {
                // Padding: taken as what follows the kept slice in the input, checked by
                // the writing thread.
                Some(e) if b.len() <= CONTINUE_MAX && e + b.len() <= self.image.len() => {
                    let mut bytes = [0u8; CONTINUE_MAX];
                    bytes[..b.len()].copy_from_slice(b);
                    let piece = self.pieces.len() - 1;
                    let pos = self.pieces[piece].bytes().len();
                    self.checks.push(Check {
                        piece,
                        pos,
                        len: b.len(),
                        bytes,
                    });
                    self.extend_kept(e, e + b.len());
                }
                _ => {
                    let mut b = b;
                    while !b.is_empty() {
                        let n = (BUF - self.buf.len().min(BUF)).min(b.len());
                        self.buf.extend_from_slice(&b[..n]);
                        self.owned += n;
                        b = &b[n..];
                        if self.buf.len() >= BUF {
                            self.seal();
                        }
                    }
                }
            },
        }
        self.ship_if_full()
    }

    /// Hands what is gathered to the thread (the bytes reach `W` before
    /// [`Pipe::finish`] returns).
    fn flush(&mut self) -> io::Result<()> {
        self.ship()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 31 + i / 257) as u8).collect()
    }

    /// Every way a write can be taken (kept and continued, kept anew, padding equal to the
    /// input's next bytes or not, owned, across buffer and batch limits) gives the same
    /// bytes.
    #[test]
    fn output_is_exactly_the_writes() {
        let img = image(40 << 20);
        let mut want = Vec::new();
        let got = std::thread::scope(|s| {
            let mut p = Pipe::start(s, "test-write", &img, Vec::new()).unwrap();
            let mut at = 0usize;
            let mut k = 0usize;
            while at + 70_000 < img.len() {
                k += 1;
                let len = 1 + (k * 7919) % 66_000;
                let w: &[u8] = &img[at..at + len];
                p.write_all(w).expect("write");
                want.extend_from_slice(w);
                match k % 5 {
                    // The input's next bytes, as padding.
                    0 => {
                        let pad = &img[at + len..at + len + 3].to_vec();
                        p.write_all(pad).expect("write");
                        want.extend_from_slice(pad);
                        at += len + 3;
                    }
                    // Owned bytes that differ from the input's.
                    1 => {
                        let own = vec![0xA5u8; k % 3000];
                        p.write_all(&own).expect("write");
                        want.extend_from_slice(&own);
                        at += len;
                    }
                    // A jump elsewhere in the image.
                    2 => at = (at * 7 + 12_345) % (img.len() / 2),
                    // Owned large bytes.
                    3 => {
                        let own = vec![k as u8; 3 << 20];
                        p.write_all(&own).expect("write");
                        want.extend_from_slice(&own);
                        at += len;
                    }
                    // Padding that is not the input's next bytes, then the input again
                    // after it: the writing thread's check fails and splits the slice.
                    _ => {
                        let pad: Vec<u8> = img[at + len..at + len + 1 + k % 3]
                            .iter()
                            .map(|b| !b)
                            .collect();
                        p.write_all(&pad).expect("write");
                        want.extend_from_slice(&pad);
                        at += len + pad.len();
                    }
                }
                if want.len() > 300 << 20 {
                    break;
                }
            }
            p.finish().expect("finish")
        });
        assert_eq!(got.len(), want.len());
        assert!(got == want, "the bytes differ from the writes");
    }

    struct Failing(usize);
    impl Write for Failing {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            if self.0 < b.len() {
                return Err(io::Error::other("disk full"));
            }
            self.0 -= b.len();
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A write error of the thread reaches the writer, and nothing waits forever.
    #[test]
    fn write_errors_come_back() {
        let img = image(1 << 20);
        let r = std::thread::scope(|s| -> io::Result<()> {
            let mut p = Pipe::start(s, "test-write", &img, Failing(100_000))?;
            for _ in 0..200 {
                p.write_all(&img[..500_000])?;
                p.write_all(&[1, 2, 3])?;
            }
            p.finish().map(drop)
        });
        let e = r.expect_err("the error is returned");
        assert_eq!(e.to_string(), "disk full");
    }
}
