//! Hostile images: each must finish quickly, with bounded memory and no panic.

use std::time::{Duration, Instant};

use super::*;
use crate::compress::{self, COMPR_NONE, COMPR_ZERO, COMPR_ZLIB};
use crate::fs::{Fs, FsError, Problem, ReadError, TreeOptions, PATH_MAX};

/// zlib at level 9 (the kernel's reader accepts any zlib stream).
fn zlib9(data: &[u8]) -> Vec<u8> {
    use std::io::Write;
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    z.write_all(data).unwrap();
    z.finish().unwrap()
}

fn quick<T>(f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let r = f();
    assert!(
        t.elapsed() < Duration::from_secs(10),
        "took {:?}",
        t.elapsed()
    );
    r
}

/// A directory that contains its own ancestor: the walk lists it once more and stops.
#[test]
fn directory_cycle() {
    let mut img = new_img();
    img.dir(1, 2, b"a", 1)
        .dir(2, 3, b"b", 1)
        .dirent(3, 2, 2, dt::DIR, b"up")
        .dirent(3, 3, 1, dt::DIR, b"root");
    let image = img.build();
    let opened = opened(&image, geometry(LE, ES));
    let (fs, _) = opened.salvage();
    let t = quick(|| fs.tree(&TreeOptions::check()));
    assert_eq!(t.entries.len(), 5);
    assert!(
        t.problems
            .iter()
            .filter(|p| p.code() == "directory-reached-twice")
            .count()
            >= 2
    );
    let _ = quick(|| fs.problems());
}

/// §5.4: an unreachable cycle survives the build; the walk reports it.
#[test]
fn unreachable_cycle_survives() {
    let mut img = new_img();
    img.meta(10, 1, S_IFDIR | 0o755, 0)
        .dir(10, 11, b"x", 1)
        .dirent(11, 1, 10, dt::DIR, b"y")
        .file(11, 12, b"f", 2, b"in the cycle");
    let image = img.build();
    let opened = opened(&image, geometry(LE, ES));
    let (fs, _) = opened.salvage();
    assert!(!fs.removed(10) && !fs.removed(11) && !fs.removed(12));
    let t = fs.tree(&TreeOptions::check());
    let un: Vec<_> = t
        .problems
        .iter()
        .filter_map(|p| match p {
            Problem::Unreachable { ino } => Some(*ino),
            _ => None,
        })
        .collect();
    assert_eq!(un, vec![10, 11, 12]);
}

/// 4 GiB sparse claims: a ZERO node and a data node at the very end; never materialised.
#[test]
fn four_gib_sparse_file() {
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::REG, b"huge")
        .inode(
            InodeNode {
                ino: 2,
                version: 1,
                mode: S_IFREG | 0o644,
                isize: u32::MAX,
                dsize: u32::MAX - 16,
                compr: COMPR_ZERO,
                ..Default::default()
            },
            &[],
        )
        .data(2, 2, u32::MAX, u32::MAX - 16, &[7u8; 16])
        // A file claiming 4 GiB with one byte of data: Linux shows 1 byte.
        .dirent(1, 2, 3, dt::REG, b"liar")
        .data(3, 1, u32::MAX, 0, b"x");
    let image = img.build();
    let opened = opened(&image, geometry(LE, ES));
    let (fs, _) = opened.salvage();
    let ino = quick(|| fs.read_inode(2).unwrap());
    assert_eq!(ino.size, u64::from(u32::MAX));
    let tail = quick(|| fs.read_range(&ino, u64::from(u32::MAX) - 20, 100).unwrap());
    assert_eq!(tail, [&[0u8; 4][..], &[7u8; 16][..]].concat());
    assert_eq!(fs.read_inode(3).unwrap().size, 1);
    let t = quick(|| fs.tree(&TreeOptions::metadata()));
    assert_eq!(t.get(b"huge").unwrap().size, u64::from(u32::MAX));
}

/// Lying csize/dsize: a dsize the kernel cannot allocate, an uncompressed node shorter than
/// its dsize, a compressed stream that does not fill its dsize.
#[test]
fn lying_sizes() {
    let z = compress::zlib_compress(&[1u8; 4096], 4096).unwrap().0;
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::REG, b"toolarge")
        .inode(
            InodeNode {
                ino: 2,
                version: 1,
                mode: S_IFREG | 0o644,
                isize: 64 << 20,
                dsize: 64 << 20,
                compr: COMPR_ZLIB,
                ..Default::default()
            },
            &z,
        )
        .dirent(1, 2, 3, dt::REG, b"short")
        .inode(
            InodeNode {
                ino: 3,
                version: 1,
                mode: S_IFREG | 0o644,
                isize: 100_000,
                dsize: 100_000,
                compr: COMPR_NONE,
                ..Default::default()
            },
            b"abc",
        )
        .dirent(1, 3, 4, dt::REG, b"underfull")
        .inode(
            InodeNode {
                ino: 4,
                version: 1,
                mode: S_IFREG | 0o644,
                isize: 8192,
                dsize: 8192,
                compr: COMPR_ZLIB,
                ..Default::default()
            },
            &z,
        );
    let image = img.build();
    let opened = opened(&image, geometry(LE, ES));
    let (fs, _) = opened.salvage();
    let e = quick(|| fs.read_data(2, 0, 10).unwrap_err());
    assert!(
        matches!(
            e,
            FsError::Read {
                error: ReadError::TooLarge { .. },
                ..
            }
        ),
        "{e}"
    );
    let e = fs.read_data(3, 0, 10).unwrap_err();
    assert!(
        matches!(
            e,
            FsError::Read {
                error: ReadError::ShortUncompressed { csize: 3, .. },
                ..
            }
        ),
        "{e}"
    );
    assert!(fs.read_data(4, 0, 10).is_err());
    let t = quick(|| fs.tree(&TreeOptions::check()));
    assert_eq!(
        t.problems
            .iter()
            .filter(|p| p.code() == "unreadable-data")
            .count(),
        3
    );
}

/// A decompression bomb: a few KiB of zlib claiming and expanding to the 4 MiB the kernel
/// allows, and one whose stream expands far beyond its dsize.
#[test]
fn decompression_bombs() {
    let zeros = vec![0u8; 4 << 20];
    let bomb = zlib9(&zeros);
    assert!(bomb.len() < 8000);
    let mut img = new_img();
    img.es = 65536;
    for (ino, dsize) in [(2u32, 4u32 << 20), (3, 4096)] {
        img.dirent(1, ino, ino, dt::REG, format!("b{ino}").as_bytes())
            .inode(
                InodeNode {
                    ino,
                    version: 1,
                    mode: S_IFREG | 0o644,
                    isize: dsize,
                    dsize,
                    compr: COMPR_ZLIB,
                    ..Default::default()
                },
                &bomb,
            );
    }
    let image = img.build();
    let opened = opened(&image, geometry(LE, 65536));
    let (fs, _) = opened.salvage();
    let ino = fs.read_inode(2).unwrap();
    let md5 = quick(|| fs.md5(&ino).unwrap());
    let mut h = crate::fs::Md5::new();
    h.update(&zeros);
    assert_eq!(md5, h.finish());
    // The stream does not end within 4096 bytes: an error, never more than dsize.
    assert!(quick(|| fs.read_data(3, 0, 10_000)).is_err());
}

/// Thousands of versions of one node, and thousands of small nodes splitting one big node:
/// both read in time, with the newest data.
#[test]
fn thousands_of_versions() {
    let mut img = new_img();
    img.es = 65536;
    img.dirent(1, 1, 2, dt::REG, b"f");
    for v in 1..=5000u32 {
        let b = (v % 251) as u8;
        img.data(2, v, 256, 0, &[b; 256][..v as usize % 200 + 1]);
    }
    // One big node, then 3000 one-byte nodes over it.
    let big = zlib9(&vec![9u8; 4 << 20]);
    img.dirent(1, 2, 3, dt::REG, b"split").inode(
        InodeNode {
            ino: 3,
            version: 1,
            mode: S_IFREG | 0o644,
            isize: 4 << 20,
            dsize: 4 << 20,
            compr: COMPR_ZLIB,
            ..Default::default()
        },
        &big,
    );
    for k in 0..3000u32 {
        img.data(3, 2 + k, 4 << 20, k * 1024 + 7, b"!");
    }
    let image = img.build();
    let opened = opened(&image, geometry(LE, 65536));
    let (fs, _) = opened.salvage();
    let ino = quick(|| fs.read_inode(2).unwrap());
    let d = fs.read_range(&ino, 0, 8192).unwrap();
    assert_eq!(d.len(), 200, "the longest node ends at 200");
    // Byte k shows the newest version whose node is longer than k.
    for (k, &b) in d.iter().enumerate() {
        let v = (1..=5000u32)
            .rev()
            .find(|v| *v as usize % 200 + 1 > k)
            .unwrap();
        assert_eq!(b, (v % 251) as u8, "byte {k}");
    }
    let split = quick(|| fs.read_inode(3).unwrap());
    assert_eq!(split.frags.len(), 6001);
    let md5 = quick(|| fs.md5(&split).unwrap());
    let mut want = vec![9u8; 4 << 20];
    for k in 0..3000usize {
        want[k * 1024 + 7] = b'!';
    }
    let mut h = crate::fs::Md5::new();
    h.update(&want);
    assert_eq!(md5, h.finish());
}

/// A chain of directories deeper than PATH_MAX: not listed beyond it, but reached (Linux
/// reaches it through relative lookups; a deep chain is no cycle).
#[test]
fn deep_tree_stops_at_path_max() {
    let mut img = new_img();
    img.es = 65536;
    let name = [b'd'; 100];
    for i in 0..60u32 {
        img.dir(if i == 0 { 1 } else { i + 1 }, i + 2, &name, 1);
    }
    let image = img.build();
    let opened = opened(&image, geometry(LE, 65536));
    let (fs, _) = opened.salvage();
    let t = quick(|| fs.tree(&TreeOptions::check()));
    assert!(t.entries.iter().all(|e| e.path.len() < PATH_MAX));
    assert!(t.problems.iter().any(|p| p.code() == "path-too-long"));
    assert!(
        !t.problems.iter().any(|p| p.code() == "unreachable-inode"),
        "{:?}",
        t.problems
    );
}

/// Refs at arbitrary offsets of garbage (what a broken summary can claim): no panic.
#[test]
fn refs_into_garbage() {
    let mut seed = 0x1234_5678u32;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 17;
        seed ^= seed << 5;
        seed
    };
    let image: Vec<u8> = (0..5 * ES).map(|_| rnd() as u8).collect();
    let mut scan = scan_image(&image, geometry(LE, ES));
    for round in 0..200u32 {
        let ino = 1 + round % 7;
        let kind = if round % 2 == 0 {
            NodeKind::Inode
        } else {
            NodeKind::Dirent
        };
        scan.refs.push(NodeRef {
            offset: rnd() % (image.len() as u32 + 100),
            len: 68,
            state: if round % 3 == 0 {
                RefState::Unchecked
            } else {
                RefState::Normal
            },
            kind,
            from_summary: true,
            ino: Some(ino),
        });
        let i = scan.refs.len() - 1;
        let ic = scan.inodes.entry(ino).or_default();
        ic.ino = ino;
        ic.nodes.push(i);
        ic.pino_nlink = 1;
        if round % 5 == 0 {
            ic.scan_dents.push(ScanDirent {
                pino: ino,
                version: rnd(),
                ino: 1 + rnd() % 8,
                dtype: dt::DIR,
                name: vec![b'n'; (rnd() % 5) as usize].into(),
                node: i,
            });
        }
    }
    scan.xattr_refs.push(XattrRef {
        ino: None,
        xid: None,
        xseqno: None,
        node: 3,
    });
    scan.xattr_datums.push(XattrDatum {
        xid: 1,
        version: 1,
        node: 5,
    });
    let fs = Fs::from_scan(&image, &mut scan, Default::default());
    for ino in 0..10 {
        let _ = fs.read_inode(ino);
    }
    let _ = quick(|| fs.problems());
}

/// Random bit flips in a valid image: whatever survives the scan, nothing panics.
#[test]
fn bit_flips_never_panic() {
    let mut img = new_img();
    img.dir(1, 2, b"d", 1)
        .file(2, 3, b"f", 2, &[5u8; 3000])
        .xattr(1, 1, crate::format::xprefix::USER, b"a", b"b")
        .xref(3, 1, 2);
    let base = img.build();
    let mut seed = 99u32;
    for _ in 0..300 {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
        let mut image = base.clone();
        let pos = (seed >> 8) as usize % 3400;
        image[pos] ^= 1 << (seed % 8);
        // Scanned directly: a flipped bit can make the detection see other cleanmarkers.
        let mut scan = scan_image(&image, geometry(LE, ES));
        let fs = Fs::from_scan(&image, &mut scan, Default::default());
        let _ = fs.tree(&TreeOptions::check());
    }
}
