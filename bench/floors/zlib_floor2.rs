//! The multi-thread "zlib floor" of `bench/mkfs-floor.sh`: reads every regular file under a
//! directory (hard links once, symlinks not followed, as mkfs.jffs2 does) and compresses each
//! 4 KiB page as mkfs.jffs2 cuts it (`docs/spec/mtd-utils-spec.md` §3.6.3) with its zlib call
//! sequence (§4.3), on N threads with one deflate stream each, reset between pages. That is
//! the least any tool writing the same bytes must do: no node headers, CRCs, layout, block-end
//! recompression or output, and none of `deflateInit`'s allocations and page faults.
//!
//!     cargo run --release -p jffs2 --example zlib_floor2 -- [--threads N] [--verify] TREE
//!
//! Prints `wall_s cpu_s` (whole process, CPU = user + system) on stdout and the page counts
//! on stderr. `--verify` also compresses every page with `jffs2::compress::zlib_compress` and
//! fails if any output differs (it doubles the work: not for timing). `--rtime` adds what
//! mkfs.jffs2's default priority mode also does for the same bytes (§4.2): rtime on each page
//! zlib cannot shrink (the crate's `rtime_compress`).

use std::collections::HashSet;
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use flate2::{Compress, Compression, FlushCompress, Status};

/// mkfs.jffs2's default page size (§3.6.4).
const PAGE: usize = 4096;
/// Pages handed to a thread at a time: big files are shared, hand-offs stay rare.
const CHUNK_PAGES: usize = 16;
/// `STREAM_END_SPACE` of §4.3.
const END_SPACE: usize = 12;

/// Regular files under `dir`, each (dev, ino) once, with their sizes.
fn walk(dir: &Path, seen: &mut HashSet<(u64, u64)>, files: &mut Vec<(PathBuf, u64)>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            walk(&e.path(), seen, files);
        } else if t.is_file() {
            if let Ok(m) = e.metadata() {
                if seen.insert((m.dev(), m.ino())) {
                    files.push((e.path(), m.size()));
                }
            }
        }
    }
}

/// One unit of work: `len` bytes of file `file` from `off` (a whole number of pages but the
/// file's last).
struct Unit {
    file: usize,
    off: u64,
    len: usize,
}

fn units(files: &[(PathBuf, u64)]) -> Vec<Unit> {
    let step = (PAGE * CHUNK_PAGES) as u64;
    let mut v = Vec::new();
    for (file, &(_, size)) in files.iter().enumerate() {
        let mut off = 0;
        while off < size {
            let len = (size - off).min(step) as usize;
            v.push(Unit { file, off, len });
            off += step;
        }
    }
    v
}

/// The §4.3 sequence on a stream just reset, output into `out` (at least `src.len()` bytes).
/// Returns the bytes produced and consumed, or None where mkfs would store the data raw.
fn deflate_page(strm: &mut Compress, src: &[u8], out: &mut [u8]) -> Option<(usize, usize)> {
    let dstlen = src.len();
    if dstlen <= END_SPACE {
        return None;
    }
    let limit = dstlen - END_SPACE;
    loop {
        let (tin, tout) = (strm.total_in() as usize, strm.total_out() as usize);
        if tout >= limit || tin >= src.len() {
            break;
        }
        let avail_out = dstlen - (tout + END_SPACE);
        let avail_in = (src.len() - tin).min(avail_out);
        let r = strm.compress(
            &src[tin..tin + avail_in],
            &mut out[tout..tout + avail_out],
            FlushCompress::Partial,
        );
        if !matches!(r, Ok(Status::Ok)) {
            return None;
        }
    }
    let tout = strm.total_out() as usize;
    let r = strm.compress(&[], &mut out[tout..dstlen], FlushCompress::Finish);
    if !matches!(r, Ok(Status::StreamEnd)) {
        return None;
    }
    let (tin, tout) = (strm.total_in() as usize, strm.total_out() as usize);
    (tout < tin).then_some((tout, tin))
}

/// What the workers do besides zlib.
#[derive(Clone, Copy, Default)]
struct Opts {
    verify: bool,
    rtime: bool,
}

/// Per-thread totals: pages, nodes, input bytes, compressed bytes, pages differing from the crate.
#[derive(Default)]
struct Totals {
    pages: u64,
    nodes: u64,
    bytes_in: u64,
    bytes_out: u64,
    mismatches: u64,
}

/// Reads `len` bytes at `off` (fewer if the file shrank) into `buf`.
fn read_unit(f: &File, off: u64, len: usize, buf: &mut Vec<u8>) -> std::io::Result<()> {
    buf.resize(len, 0);
    let mut got = 0;
    while got < len {
        let n = f.read_at(&mut buf[got..], off + got as u64)?;
        if n == 0 {
            break;
        }
        got += n;
    }
    buf.truncate(got);
    Ok(())
}

/// A worker: takes units until none are left; one stream, one input and one output buffer.
fn worker(files: &[(PathBuf, u64)], units: &[Unit], next: &AtomicUsize, o: Opts) -> Totals {
    let mut strm = Compress::new(Compression::new(3), true);
    let (mut buf, mut out) = (Vec::new(), vec![0u8; PAGE]);
    let mut open: Option<(usize, File)> = None;
    let mut t = Totals::default();
    loop {
        let Some(u) = units.get(next.fetch_add(1, Ordering::Relaxed)) else {
            return t;
        };
        if open.as_ref().is_none_or(|(i, _)| *i != u.file) {
            open = File::open(&files[u.file].0).ok().map(|f| (u.file, f));
        }
        let Some((_, f)) = &open else { continue };
        if read_unit(f, u.off, u.len, &mut buf).is_err() {
            continue;
        }
        for page in buf.chunks(PAGE) {
            page_nodes(&mut strm, page, &mut out, o, &mut t);
        }
    }
}

/// The nodes of one page without block ends (§3.6.3): compress what is left of the page;
/// when zlib consumed only part of it (the output reached the page's size), the rest is
/// compressed again, as mkfs.jffs2 does in its next node.
fn page_nodes(strm: &mut Compress, page: &[u8], out: &mut [u8], o: Opts, t: &mut Totals) {
    t.pages += 1;
    t.bytes_in += page.len() as u64;
    let mut pos = 0;
    while pos < page.len() {
        let rest = &page[pos..];
        strm.reset();
        let r = deflate_page(strm, rest, out);
        let rtime = || jffs2::compress::rtime_compress(rest, rest.len()).map(|(c, n)| (c.len(), n));
        // Not compressed: stored raw, all of what is left (§4.2).
        let (produced, consumed) = r
            .or_else(|| if o.rtime { rtime() } else { None })
            .unwrap_or((rest.len(), rest.len()));
        t.nodes += 1;
        t.bytes_out += produced as u64;
        if o.verify {
            let ours = jffs2::compress::zlib_compress(rest, rest.len());
            let same = match (&ours, r) {
                (Some((c, used)), Some((n, tin))) => *used == tin && c[..] == out[..n],
                (None, None) => true,
                _ => false,
            };
            t.mismatches += u64::from(!same);
        }
        pos += consumed;
    }
}

/// User + system CPU seconds of the whole process so far.
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: RUSAGE_SELF with a valid pointer.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn main() {
    let start = Instant::now();
    let (mut threads, mut o, mut tree) = (2usize, Opts::default(), PathBuf::from("/usr/bin"));
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--threads" => match args.next().and_then(|n| n.parse().ok()) {
                Some(n) if n > 0 => threads = n,
                _ => {
                    eprintln!("zlib_floor2: --threads needs a number > 0");
                    std::process::exit(2);
                }
            },
            "--verify" => o.verify = true,
            "--rtime" => o.rtime = true,
            _ => tree = PathBuf::from(a),
        }
    }
    let mut files = Vec::new();
    walk(&tree, &mut HashSet::new(), &mut files);
    let units = units(&files);
    let next = AtomicUsize::new(0);
    let totals: Vec<Totals> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| worker(&files, &units, &next, o)))
            .collect();
        hs.into_iter().filter_map(|h| h.join().ok()).collect()
    });
    let sum = |f: fn(&Totals) -> u64| totals.iter().map(f).sum::<u64>();
    let (wall, cpu) = (start.elapsed().as_secs_f64(), cpu_seconds());
    eprintln!(
        "{} files, {} pages, {} nodes, {} bytes -> {} bytes, {} threads{}",
        files.len(),
        sum(|t| t.pages),
        sum(|t| t.nodes),
        sum(|t| t.bytes_in),
        sum(|t| t.bytes_out),
        threads,
        if o.verify {
            format!(
                ", {} pages differ from jffs2::compress",
                sum(|t| t.mismatches)
            )
        } else {
            String::new()
        }
    );
    println!("{wall:.3} {cpu:.3}");
    if sum(|t| t.mismatches) > 0 {
        std::process::exit(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The floor's stream, reset between pages, gives the crate compressor's bytes for
    /// text, zeros, noise and short tails (and fails where it fails).
    #[test]
    fn same_bytes_as_the_crate() {
        let mut pages: Vec<Vec<u8>> = vec![vec![0; PAGE], b"jffs2 ".repeat(700)[..PAGE].to_vec()];
        let mut x = 0x1234_5678u32;
        let noise: Vec<u8> = (0..PAGE)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        pages.push(noise);
        pages.push(b"tail".repeat(50));
        pages.push(vec![7; 5]);
        let mut strm = Compress::new(Compression::new(3), true);
        let mut out = vec![0u8; PAGE];
        for p in &pages {
            strm.reset();
            let n = deflate_page(&mut strm, p, &mut out);
            let ours = jffs2::compress::zlib_compress(p, p.len());
            assert_eq!(n.map(|(n, tin)| (out[..n].to_vec(), tin)), ours);
        }
        let mut t = Totals::default();
        for p in &pages {
            let o = Opts {
                verify: true,
                rtime: true,
            };
            page_nodes(&mut strm, p, &mut out, o, &mut t);
        }
        assert_eq!((t.pages, t.mismatches), (pages.len() as u64, 0));
    }
}
