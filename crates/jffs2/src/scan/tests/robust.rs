//! Robustness: random and mutated images never panic, never loop, and finish quickly.

use std::time::{Duration, Instant};

use super::*;
use crate::format::{SumRecord, SummaryNode, SUM_MAGIC};
use crate::scan::{detect, ScanOptions};

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

/// A valid image of 6 blocks of 4 KiB with every kind of node and a summary in block 1.
fn seed_image(e: Endian) -> Vec<u8> {
    let es = 4096u32;
    let mut f = erased(e, es, 6);
    let mut at = 0u32;
    let put = |f: &mut Flash, n: Vec<u8>, at: &mut u32| {
        f.put(*at, &n);
        *at += n.len() as u32;
    };
    put(&mut f, cleanmarker(e), &mut at);
    put(&mut f, dirent(e, 1, 2, 1, b"file"), &mut at);
    put(&mut f, inode(e, 2, 1, &[7; 300]), &mut at);
    put(&mut f, xattr(e, 1, 1, b"user", b"value"), &mut at);
    put(&mut f, xref(e, 2, 1, 2), &mut at);
    put(&mut f, raw_node(e, 0x2004, 40), &mut at);
    put(&mut f, dirent(e, 1, 0, 2, b"gone"), &mut at);
    // Block 1: nodes and a summary.
    let b1 = es;
    let cm = cleanmarker(e);
    f.put(b1, &cm);
    let d = dirent(e, 1, 3, 3, b"other");
    f.put(b1 + 12, &d);
    let n = inode(e, 3, 1, &[1; 100]);
    f.put(b1 + 12 + d.len() as u32, &n);
    let end = 12 + d.len() as u32 + n.len() as u32;
    let recs = vec![
        SumRecord::Dirent {
            nodetype: 0xE001,
            totlen: 45,
            offset: 12,
            pino: 1,
            version: 3,
            ino: 3,
            dtype: 8,
            name: b"other".to_vec(),
        },
        SumRecord::Inode {
            nodetype: 0xE002,
            inode: 3,
            version: 1,
            offset: 12 + d.len() as u32,
            totlen: 168,
        },
    ];
    let mut s = Vec::new();
    SummaryNode {
        cln_mkr: 12,
        ..Default::default()
    }
    .encode(e, &recs, end, es, &mut s)
    .unwrap();
    f.put(b1 + end, &s);
    f.build()
}

fn check(img: &[u8], rng: &mut Rng) {
    let es = [128u32, 4096, 4096, 8192, 16384][rng.below(5) as usize];
    let e = if rng.below(2) == 0 {
        Endian::Little
    } else {
        Endian::Big
    };
    let geom = Geometry {
        endian: e,
        erase_size: es,
        cleanmarker_size: [12, 0, 16][rng.below(3) as usize],
    };
    let opts = ScanOptions {
        read_only: rng.below(2) == 0,
        summary: rng.below(4) != 0,
        xattr: rng.below(4) != 0,
        end_marker: rng.below(2) == 0,
    };
    let s = scan(img, &geom, &opts);
    // Basic sanity of what came out.
    for r in &s.refs {
        assert!(r.offset < s.flash_size.max(1));
    }
    for c in s.inodes.values() {
        for &n in &c.nodes {
            assert!(n < s.refs.len());
        }
        for d in &c.scan_dents {
            assert!(d.node < s.refs.len());
        }
    }
    let _ = detect(img);
}

#[test]
fn random_and_mutated_images() {
    let start = Instant::now();
    let mut rng = Rng(0x1234_5678_9ABC_DEF1);
    let seeds = [seed_image(Endian::Little), seed_image(Endian::Big)];
    for round in 0..600 {
        let img: Vec<u8> = match round % 6 {
            // Random bytes of random length.
            0 => (0..rng.below(40_000)).map(|_| rng.next() as u8).collect(),
            // Bit flips.
            1 => {
                let mut v = seeds[rng.below(2) as usize].clone();
                for _ in 0..1 + rng.below(8) {
                    let i = rng.below(v.len() as u64) as usize;
                    v[i] ^= 1 << rng.below(8);
                }
                v
            }
            // Random 32-bit values in node fields (totlen 0/huge, offsets anywhere).
            2 => {
                let mut v = seeds[rng.below(2) as usize].clone();
                for _ in 0..1 + rng.below(6) {
                    let i = (rng.below(v.len() as u64 / 4) * 4) as usize;
                    let val: u32 = match rng.below(4) {
                        0 => 0,
                        1 => u32::MAX,
                        2 => rng.below(1 << 16) as u32,
                        _ => rng.next() as u32,
                    };
                    v[i..i + 4].copy_from_slice(&val.to_le_bytes());
                }
                v
            }
            // Truncated images.
            3 => {
                let v = &seeds[rng.below(2) as usize];
                v[..rng.below(v.len() as u64) as usize].to_vec()
            }
            // Summary markers at block ends pointing anywhere, with valid-looking summaries.
            4 => {
                let mut v = seeds[0].clone();
                for blk in 0..v.len() / 4096 {
                    let end = (blk + 1) * 4096;
                    let off = rng.below(5000) as u32;
                    v[end - 8..end - 4].copy_from_slice(&off.to_le_bytes());
                    v[end - 4..end].copy_from_slice(&SUM_MAGIC.to_le_bytes());
                }
                v
            }
            // Chunks of nodes copied to random places (nodes crossing blocks, duplicates).
            _ => {
                let mut v = seeds[rng.below(2) as usize].clone();
                for _ in 0..4 {
                    let a = rng.below(v.len() as u64) as usize;
                    let n = rng.below(600) as usize;
                    let b = rng.below(v.len() as u64) as usize;
                    let n = n.min(v.len() - a).min(v.len() - b);
                    let chunk = v[a..a + n].to_vec();
                    v[b..b + n].copy_from_slice(&chunk);
                }
                v
            }
        };
        check(&img, &mut rng);
    }
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "took {:?}",
        start.elapsed()
    );
}

/// Hostile summaries with valid CRCs: sum_num huge, records anywhere, huge totlens.
#[test]
fn hostile_summaries() {
    let mut rng = Rng(77);
    let start = Instant::now();
    for _ in 0..300 {
        let e = Endian::Little;
        let mut f = erased(e, 4096, 5);
        f.put(4 * 4096, &inode(e, 9, 1, b"anchor"));
        let mut recs = Vec::new();
        for _ in 0..rng.below(6) {
            let r = match rng.below(4) {
                0 => SumRecord::Inode {
                    nodetype: 0xE002,
                    inode: rng.next() as u32,
                    version: 1,
                    offset: rng.below(5000) as u32,
                    totlen: [0, 12, 68, u32::MAX][rng.below(4) as usize],
                },
                1 => SumRecord::Dirent {
                    nodetype: 0xE001,
                    totlen: rng.next() as u32,
                    offset: rng.below(5000) as u32,
                    pino: rng.below(3) as u32,
                    version: 1,
                    ino: 2,
                    dtype: 8,
                    name: vec![b'a'; rng.below(20) as usize],
                },
                2 => SumRecord::Xattr {
                    nodetype: 0xE008,
                    xid: 1,
                    version: 1,
                    offset: rng.below(5000) as u32,
                    totlen: rng.next() as u32,
                },
                _ => SumRecord::Xref {
                    nodetype: 0xE009,
                    offset: rng.below(5000) as u32,
                },
            };
            recs.push(r);
        }
        let at = 12 + 4 * rng.below(500) as u32;
        let mut s = Vec::new();
        if (SummaryNode {
            cln_mkr: [0, 12, 16, u32::MAX][rng.below(4) as usize],
            ..Default::default()
        })
        .encode(e, &recs, at, 4096, &mut s)
        .is_none()
        {
            continue;
        }
        // Lie about sum_num sometimes (node_crc recomputed).
        if rng.below(3) == 0 {
            let n = [u32::MAX, 1000, 0][rng.below(3) as usize];
            s[12..16].copy_from_slice(&n.to_le_bytes());
            let c = crc32(&s[..24]);
            s[28..32].copy_from_slice(&c.to_le_bytes());
        }
        f.put(at, &s);
        let _ = f.scan();
    }
    assert!(start.elapsed() < Duration::from_secs(30));
}

/// A large synthetic image: many blocks of real nodes (run with --release --ignored to time a
/// 128 MiB scan).
#[test]
#[ignore]
fn large_image_scan_is_fast() {
    let e = Endian::Little;
    let es = 65536u32;
    let blocks = 2048u32; // 128 MiB
    let mut f = erased(e, es, blocks);
    let mut ino = 2;
    for b in 0..blocks {
        let mut at = b * es;
        f.put(at, &cleanmarker(e));
        at += 12;
        while at + 4200 < (b + 1) * es {
            let n = inode(e, ino, 1, &[(ino & 0xFF) as u8; 4096]);
            f.put(at, &n);
            at += n.len() as u32;
            let d = dirent(e, 1, ino, ino, format!("f{ino}").as_bytes());
            f.put(at, &d);
            at += d.len() as u32;
            ino += 1;
        }
    }
    // the flash is written out before the clock starts: only the scan is timed
    let data = f.build();
    let t = Instant::now();
    let s = scan(&data, &f.geom(12), &ScanOptions::default());
    let el = t.elapsed();
    eprintln!(
        "scan of {} MiB: {:?}, {} refs",
        data.len() >> 20,
        el,
        s.refs.len()
    );
    assert!(s.log.is_empty());
    let t = Instant::now();
    let d = detect(&data);
    eprintln!("detect: {:?} ({:?})", t.elapsed(), d.geometry);
    assert!(el < Duration::from_secs(1));
}
