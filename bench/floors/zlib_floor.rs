//! Measures the "zlib floor" of `bench/mkfs.sh`: the CPU time real zlib needs to compress
//! every 4 KiB page of every regular file under a directory with mkfs.jffs2's exact call
//! sequence, on one thread. Prints the seconds.
//!
//!     cargo run --release --example zlib_floor -- /usr/bin

use std::io::Read;
use std::time::Instant;

fn walk(dir: &std::path::Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let Ok(t) = e.file_type() else { continue };
        if t.is_dir() {
            walk(&e.path(), files);
        } else if t.is_file() {
            files.push(e.path());
        }
    }
}

fn main() {
    let dir = std::env::args().nth(1).unwrap_or_else(|| "/usr/bin".into());
    let mut files = Vec::new();
    walk(std::path::Path::new(&dir), &mut files);
    let mut pages = Vec::new();
    for f in &files {
        let mut data = Vec::new();
        if std::fs::File::open(f)
            .and_then(|mut h| h.read_to_end(&mut data))
            .is_ok()
        {
            pages.extend(data.chunks(4096).map(<[u8]>::to_vec));
        }
    }
    let t = Instant::now();
    let mut out = 0usize;
    for p in &pages {
        if let Some((c, _)) = jffs2::compress::zlib_compress(p, p.len()) {
            out += c.len();
        }
    }
    let secs = t.elapsed().as_secs_f64();
    eprintln!("{} pages, {} bytes compressed", pages.len(), out);
    println!("{secs:.2}");
}
