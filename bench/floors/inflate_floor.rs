//! Measures the "inflate floor" of `bench/fsck.sh` and `bench/dump.sh`: the CPU time needed
//! to decompress the data of every inode node of an image, on one thread, with nothing else
//! (no scan, no CRC, no tree, no output). Prints two figures, in seconds: with the system
//! zlib alone (the inflater of the kernel and of every other tool), then with the crate's
//! own decompressor (libdeflate for zlib nodes when linked); on stderr how many nodes and
//! bytes that was. With `--ours`, only the second figure (for runs alternated with a tool's).
//! With `--threads N` (and `--ours`), the wall time of the same work on N threads, each
//! inflating a contiguous share of the nodes of about the same compressed size: the floor
//! measured on the cores rather than divided by their number (which assumes they scale
//! perfectly).
//!
//!     cargo run --release --example inflate_floor -- image.jffs2 [--big-endian] [--ours] [--threads N]
//!
//! Nodes are found by walking the image in 4-byte steps for the magic bitmask and decoding
//! inode headers whose header CRC passes; the payloads are copied out before the clock starts.

use std::time::Instant;

use jffs2::compress::{decompress, zlib_decompress_reference};
use jffs2::format::{Endian, InodeNode, NodeHeader, INODE_SIZE, MAGIC, NODETYPE_INODE};

fn main() {
    let mut args = std::env::args().skip(1);
    let Some(path) = args.next() else {
        eprintln!("usage: inflate_floor IMAGE [--big-endian] [--ours]");
        std::process::exit(2);
    };
    let rest: Vec<String> = args.collect();
    let e = if rest.iter().any(|a| a == "--big-endian") {
        Endian::Big
    } else {
        Endian::Little
    };
    let ours_only = rest.iter().any(|a| a == "--ours");
    let threads: usize = rest
        .iter()
        .position(|a| a == "--threads")
        .and_then(|i| rest.get(i + 1))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1)
        .max(1);
    let img = match std::fs::read(&path) {
        Ok(b) => b,
        Err(err) => {
            eprintln!("{path}: {err}");
            std::process::exit(1);
        }
    };
    let mut nodes: Vec<(u8, Vec<u8>, usize)> = Vec::new();
    let mut off = 0usize;
    while off + 12 <= img.len() {
        let Some(magic) = e.get_u16(&img, off) else {
            break;
        };
        if magic != MAGIC {
            off += 4;
            continue;
        }
        let Ok(h) = NodeHeader::decode(&img[off..], e, off as u64) else {
            off += 4;
            continue;
        };
        if !h.crc_ok(e) || h.totlen < 12 || off + h.totlen as usize > img.len() {
            off += 4;
            continue;
        }
        if h.accurate_type() == NODETYPE_INODE && h.totlen as usize >= INODE_SIZE {
            let b = &img[off..off + h.totlen as usize];
            if let Ok(n) = InodeNode::decode(b, e, off as u64) {
                if let Some(data) = n.data(b) {
                    nodes.push((n.compr, data.to_vec(), n.dsize as usize));
                }
            }
        }
        off += (h.totlen as usize + 3) & !3;
    }
    let mut figures = Vec::new();
    let mut bytes = 0usize;
    let kinds: &[bool] = if ours_only { &[false] } else { &[true, false] };
    for &reference in kinds {
        let t = Instant::now();
        bytes = if threads > 1 {
            let shares = shares(&nodes, threads);
            std::thread::scope(|s| {
                let hs: Vec<_> = shares
                    .into_iter()
                    .map(|part| s.spawn(move || inflate_all(part, reference)))
                    .collect();
                hs.into_iter().filter_map(|h| h.join().ok()).sum()
            })
        } else {
            inflate_all(&nodes, reference)
        };
        figures.push(t.elapsed().as_secs_f64());
    }
    eprintln!("{} data nodes, {} bytes decompressed", nodes.len(), bytes);
    if threads > 1 {
        eprintln!("on {threads} threads");
    }
    let shown: Vec<String> = figures.iter().map(|f| format!("{f:.3}")).collect();
    println!("{}", shown.join(" "));
}

/// Inflates every node of `nodes`; the bytes that came out.
fn inflate_all(nodes: &[(u8, Vec<u8>, usize)], reference: bool) -> usize {
    let mut bytes = 0usize;
    for (compr, data, dsize) in nodes {
        let out = if reference && *compr == jffs2::compress::COMPR_ZLIB {
            zlib_decompress_reference(data, *dsize)
        } else {
            decompress(*compr, data, *dsize)
        };
        if let Ok(out) = out {
            bytes += out.len();
        }
    }
    bytes
}

/// `nodes` cut into `n` contiguous shares of about the same compressed size.
fn shares(nodes: &[(u8, Vec<u8>, usize)], n: usize) -> Vec<&[(u8, Vec<u8>, usize)]> {
    let total: usize = nodes.iter().map(|x| x.1.len()).sum();
    let mut out = Vec::new();
    let (mut from, mut acc) = (0usize, 0usize);
    for (i, x) in nodes.iter().enumerate() {
        acc += x.1.len();
        if out.len() + 1 < n && acc * n >= total * (out.len() + 1) {
            out.push(&nodes[from..=i]);
            from = i + 1;
        }
    }
    out.push(&nodes[from..]);
    out
}
