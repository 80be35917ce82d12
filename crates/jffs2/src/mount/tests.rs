//! The view on crafted images (`testing::Img`) and on images mkfs builds from a host tree.

use super::*;
use crate::compress::{COMPR_NONE, COMPR_ZERO, COMPR_ZLIB};
use crate::format::{dev::encode_dev, dt, xprefix, Endian, InodeNode};
use crate::testing::Img;
use crate::{Image, ImageOptions};

const ES: u32 = 16384;
const DIR: u32 = 0o040755;
const REG: u32 = 0o100644;

fn opened(img: &[u8]) -> Image<'_> {
    let opts = ImageOptions {
        erase_size: Some(ES),
        endian: Some(Endian::Little),
        insist: true,
        ..Default::default()
    };
    Image::from_bytes_with(img, &opts).unwrap()
}

/// A tree with every kind of entry: /d (dir), /d/f and /hard (hard links, zlib data, a hole,
/// a ZERO node), /s (symlink), /c (character device 4:64, setuid bit), /big (two nodes), an
/// xattr and an ACL on /d/f.
fn tree_image() -> Vec<u8> {
    let mut i = Img::new().min_blocks(0).exact_fit();
    i.dirent(1, 1, 2, dt::DIR, b"d")
        .inode_parts(2, 1, DIR, 0, 0, 0, COMPR_NONE, &[])
        .dirent(2, 2, 3, dt::REG, b"f")
        .dirent(1, 3, 3, dt::REG, b"hard");
    let page: Vec<u8> = (0..4096u32).map(|k| (k % 7) as u8).collect();
    let n = |version, offset, dsize, compr| InodeNode {
        ino: 3,
        version,
        mode: REG,
        isize: 20000,
        uid: 1000,
        gid: 100,
        atime: 1111,
        mtime: 1234,
        ctime: 2222,
        offset,
        dsize,
        compr,
        ..Default::default()
    };
    i.compressed(n(1, 0, 4096, COMPR_ZLIB), &page);
    // A ZERO node at 8192..12288, a hole at 4096..8192 and 12288..16384, data at 16384..20000.
    i.inode(n(2, 8192, 4096, COMPR_ZERO), &[]);
    i.inode(n(3, 16384, 3616, COMPR_NONE), &[b'z'; 3616]);
    // /bad: a good page, then a zlib page whose bytes are not zlib (CRCs right).
    i.dirent(1, 6, 6, dt::REG, b"bad")
        .inode_parts(6, 1, REG, 8192, 0, 4096, COMPR_NONE, &[b'g'; 4096])
        .inode_parts(6, 2, REG, 8192, 4096, 4096, COMPR_ZLIB, &[0x55; 64]);
    i.dirent(1, 4, 4, dt::LNK, b"s").inode_parts(
        4,
        1,
        0o120777,
        5,
        0,
        5,
        COMPR_NONE,
        b"d/f\0x"[..3].as_ref(),
    );
    let dev = encode_dev(Endian::Little, 4, 64);
    i.dirent(1, 5, 5, dt::CHR, b"c").inode_parts(
        5,
        1,
        0o024755,
        dev.len() as u32,
        0,
        dev.len() as u32,
        COMPR_NONE,
        &dev,
    );
    // An access ACL: user::rw-, group::r--, other::r-- (JFFS2's little-endian layout).
    let mut acl = 1u32.to_le_bytes().to_vec();
    for (tag, perm) in [(0x01u16, 6u16), (0x04, 4), (0x20, 4)] {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&perm.to_le_bytes());
    }
    i.xattr(1, 1, xprefix::USER, b"comment", b"hello")
        .xref(3, 1, 2)
        .xattr(2, 1, xprefix::ACL_ACCESS, b"", &acl)
        .xref(3, 2, 4);
    i.build()
}

fn view(img: Vec<u8>) -> View<'static> {
    // Leaking the image keeps the test short: the view borrows it.
    let img: &'static [u8] = Box::leak(img.into_boxed_slice());
    let image: &'static Image<'static> = Box::leak(Box::new(opened(img)));
    let (fs, refused) = image.salvage();
    assert_eq!(refused, None);
    View::new(fs, &ViewOptions::default())
}

/// A directory listed in the order Linux 6.1 (x86-64, under qemu: tests/kernel/harness.py,
/// busybox `find DIR -maxdepth 1`, which lists in readdir order) listed the same names from
/// images where they were written in name order: by `full_name_hash`, and, for names of equal
/// hash (`name-0081201.txt` and `name-0084720.txt` both hash to 0x1d21f520), the
/// later-written node first. Renaming `name-0081201.txt` away and back (a newer node for it)
/// put it first.
#[test]
fn readdir_lists_in_linux_order() {
    let kernel_order: [&[u8]; 12] = [
        b"h6-",
        b"plnc-1ra3d20kcc97.wgep5f4",
        b"5ni",
        b"b.ofzxt",
        b"d5pdmsxge",
        b"c54wa14",
        b"ypf2wifajxbbq93y7f",
        b"99oqe9pqs7",
        b"6xew_ctx9r5qsvl_a49qur3s6wwr",
        b"px3yl",
        b"name-0084720.txt",
        b"name-0081201.txt",
    ];
    let listed = |img: Vec<u8>| -> Vec<Vec<u8>> {
        let v = view(img);
        v.readdir(1).unwrap().into_iter().map(|e| e.name).collect()
    };
    let mut by_name = kernel_order.to_vec();
    by_name.sort();
    let mut i = Img::new();
    for (k, name) in by_name.iter().enumerate() {
        let ino = 2 + k as u32;
        i.file(1, ino, name, ino, name);
    }
    let mut want: Vec<Vec<u8>> = vec![b".".to_vec(), b"..".to_vec()];
    want.extend(kernel_order.iter().map(|n| n.to_vec()));
    assert_eq!(listed(i.build()), want);
    // name-0081201.txt renamed away and back: its newest node is the last written.
    let at = by_name
        .iter()
        .position(|n| n == b"name-0081201.txt")
        .unwrap() as u32;
    i.dirent(1, 100, 2 + at, dt::REG, b"t")
        .dirent(1, 101, 0, dt::REG, b"name-0081201.txt")
        .dirent(1, 102, 2 + at, dt::REG, b"name-0081201.txt")
        .dirent(1, 103, 0, dt::REG, b"t");
    want.swap(12, 13);
    assert_eq!(listed(i.build()), want);
    // Resumed listings (FUSE's offsets) follow the same order.
    let v = view(i.build());
    let mut tail = Vec::new();
    v.readdir_with(1, 12, |_, _, n| {
        tail.push(n.to_vec());
        false
    })
    .unwrap();
    assert_eq!(tail, want[12..]);
}

#[test]
fn attributes_lookup_and_readdir() {
    let img = tree_image();
    let v = view(img.clone());
    let root = v.attr(1).unwrap();
    assert_eq!((root.kind, root.mode & 0o7777), (InodeKind::Dir, 0o755));
    // 2 + one subdirectory + one more for the root.
    assert_eq!(root.nlink, 4);
    let names: Vec<Vec<u8>> = v.readdir(1).unwrap().into_iter().map(|e| e.name).collect();
    // Linux's order: by full_name_hash (d 0x36a1a198, hard 0x3ae0a591, s 0x4ba046a2,
    // c 0x575d7475, bad 0xeecc0bbf).
    assert_eq!(
        names,
        [&b"."[..], b"..", b"d", b"hard", b"s", b"c", b"bad"].map(<[u8]>::to_vec)
    );
    let f = v.lookup(2, b"f").unwrap();
    let hard = v.lookup(1, b"hard").unwrap();
    assert_eq!(f, hard);
    assert_eq!((f.ino, f.nlink, f.size, f.blocks), (3, 2, 20000, 40));
    assert_eq!((f.uid, f.gid, f.mtime), (1000, 100, 1234));
    assert_eq!((f.atime, f.ctime), (1111, 2222));
    let d = v.lookup(1, b"d").unwrap();
    assert_eq!((d.kind, d.nlink), (InodeKind::Dir, 2));
    let dd = v.readdir(2).unwrap();
    assert_eq!((dd[0].ino, dd[1].ino, dd[2].ino), (2, 1, 3));
    let c = v.lookup(1, b"c").unwrap();
    assert_eq!(
        (c.kind, c.mode, c.rdev),
        (InodeKind::Char, 0o024755, Some((4, 64)))
    );
    assert_eq!(v.lookup(1, b"nope").unwrap_err().errno(), libc::ENOENT);
    assert_eq!(v.lookup(3, b"x").unwrap_err().errno(), libc::ENOTDIR);
    assert_eq!(v.readdir(3).unwrap_err().errno(), libc::ENOTDIR);
    assert_eq!(v.attr(99).unwrap_err().errno(), libc::ENOENT);
}

#[test]
fn links_data_and_xattrs() {
    let img = tree_image();
    let v = view(img.clone());
    assert_eq!(v.readlink(4).unwrap(), b"d/f");
    assert_eq!(v.readlink(3).unwrap_err().errno(), libc::EINVAL);
    let mut want: Vec<u8> = (0..4096u32).map(|k| (k % 7) as u8).collect();
    want.resize(16384, 0);
    want.extend_from_slice(&[b'z'; 3616]);
    assert_eq!(v.read(3, 0, 1 << 20).unwrap(), want);
    // Ranges across nodes, holes and the end; past the end nothing.
    for (off, len) in [(0, 1), (4000, 200), (8190, 5000), (16380, 10), (19999, 100)] {
        let got = v.read(3, off, len).unwrap();
        let end = (off as usize + len).min(want.len());
        assert_eq!(got, want[off as usize..end], "{off}+{len}");
    }
    assert!(v.read(3, 20000, 10).unwrap().is_empty());
    assert_eq!(v.read(2, 0, 10).unwrap_err().errno(), libc::EISDIR);
    assert_eq!(
        v.listxattr(3).unwrap(),
        b"system.posix_acl_access\0user.comment\0"
    );
    // posix_acl_xattr: version 2, then (tag u16, perm u16, id u32) little endian.
    assert_eq!(
        v.getxattr(3, b"system.posix_acl_access").unwrap(),
        [
            2, 0, 0, 0, 1, 0, 6, 0, 255, 255, 255, 255, 4, 0, 4, 0, 255, 255, 255, 255, 32, 0, 4,
            0, 255, 255, 255, 255
        ]
    );
    assert_eq!(v.getxattr(3, b"user.comment").unwrap(), b"hello");
    assert_eq!(
        v.getxattr(3, b"user.other").unwrap_err().errno(),
        libc::ENODATA
    );
    assert_eq!(v.listxattr(2).unwrap(), b"");
}

#[test]
fn corrupt_data_reads_as_eio_where_linux_fails() {
    let v = view(tree_image());
    let bad = v.lookup(1, b"bad").unwrap();
    assert_eq!(bad.size, 8192);
    // The page before the bad node reads; a read touching it fails, as Linux's does.
    assert_eq!(v.read(bad.ino, 0, 4096).unwrap(), [b'g'; 4096]);
    let e = v.read(bad.ino, 4000, 200).unwrap_err();
    assert_eq!(e.errno(), libc::EIO, "{e}");
    assert_eq!(v.read(bad.ino, 4096, 10).unwrap_err().errno(), libc::EIO);
}

#[test]
fn statfs_follows_jffs2_statfs() {
    let img = tree_image();
    let v = view(img.clone());
    let s = v.statfs();
    let scan = v.fs().scan();
    let t = scan.totals();
    let flash = u64::from(scan.flash_size);
    let es = u64::from(ES);
    let resv = 2 + (flash / 50 + flash / es * 100).div_ceil(es);
    let avail = (t.dirty + t.free).saturating_sub(resv * es);
    assert_eq!(s.bsize, 4096);
    assert_eq!(s.blocks, flash / 4096);
    assert_eq!((s.bfree, s.bavail), (avail / 4096, avail / 4096));
    assert_eq!((s.files, s.ffree, s.namelen), (0, 0, 254));
    // A tiny image is all reserve: nothing available.
    assert!(flash < resv * es || s.bfree > 0);
}

#[test]
fn mkfs_image_reads_back_with_a_tiny_cache() {
    let dir = tempfile::tempdir().unwrap();
    let big: Vec<u8> = (0..300_000u32)
        .map(|k| (k.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(dir.path().join("big"), &big).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    std::fs::write(dir.path().join("sub/small"), b"small\n").unwrap();
    let (tree, _) = crate::source::scan_host(dir.path(), &Default::default()).unwrap();
    let mut out = Vec::new();
    crate::mkfs::build(
        &tree,
        &Default::default(),
        &mut out,
        &mut crate::mkfs::NullSink,
    )
    .unwrap();
    let image: &'static Image<'static> = Box::leak(Box::new(Image::from_vec(out).unwrap()));
    let fs = image.mount().unwrap();
    for cache_bytes in [1, DEFAULT_CACHE_BYTES] {
        let (fs, _) = image.salvage();
        let v = View::new(fs, &ViewOptions { cache_bytes });
        let a = v.lookup(1, b"big").unwrap();
        assert_eq!(a.size, big.len() as u64);
        let mut got = Vec::new();
        let mut off = 0u64;
        // Reads of odd sizes, as a FUSE client may ask.
        while off < a.size {
            let chunk = v.read(a.ino, off, 131_071).unwrap();
            assert!(!chunk.is_empty());
            off += chunk.len() as u64;
            got.extend_from_slice(&chunk);
        }
        assert_eq!(got, big);
        let sub = v.lookup(1, b"sub").unwrap();
        let small = v.lookup(sub.ino, b"small").unwrap();
        assert_eq!(v.read(small.ino, 0, 100).unwrap(), b"small\n");
        assert_eq!(sub.nlink, 2);
    }
    drop(fs);
}

/// Every inode reachable from the root walked through the view — attributes, lookups,
/// entries, link targets, xattrs, every byte of every file — as a FUSE client would; errors
/// are values, never panics. Returns the number of reads.
fn walk(v: &View<'_>) -> usize {
    let mut seen = std::collections::BTreeSet::new();
    let mut todo = vec![1u32];
    let mut reads = 0;
    while let Some(ino) = todo.pop() {
        if !seen.insert(ino) {
            continue;
        }
        let _ = (
            v.listxattr(ino),
            v.readlink(ino),
            v.getxattr(ino, b"user.x"),
        );
        if let Ok(list) = v.readdir(ino) {
            for e in list.iter().skip(2) {
                let _ = v.lookup(ino, &e.name);
                todo.push(e.ino);
            }
        }
        let Ok(a) = v.attr(ino) else { continue };
        let mut off = 0;
        while a.kind == InodeKind::File && off < a.size.min(1 << 24) {
            let got = v.read(ino, off, 65536).map_or(0, |d| d.len() as u64);
            off += if got == 0 { 65536 } else { got };
            reads += 1;
        }
    }
    let _ = v.statfs();
    reads
}

#[test]
fn corrupted_and_truncated_images_walk_without_panic() {
    let dir = tempfile::tempdir().unwrap();
    for (k, n) in [0usize, 100, 5000, 70_000].iter().enumerate() {
        let data: Vec<u8> = (0..*n).map(|i| (i * 31 % 251) as u8).collect();
        std::fs::write(dir.path().join(format!("f{k}")), data).unwrap();
    }
    std::fs::create_dir(dir.path().join("d")).unwrap();
    std::fs::write(dir.path().join("d/x"), b"x").unwrap();
    std::os::unix::fs::symlink("d/x", dir.path().join("s")).unwrap();
    let (tree, _) = crate::source::scan_host(dir.path(), &Default::default()).unwrap();
    let mut base = Vec::new();
    let config = crate::mkfs::MkfsConfig {
        erase_size: ES,
        ..Default::default()
    };
    crate::mkfs::build(&tree, &config, &mut base, &mut crate::mkfs::NullSink).unwrap();
    let mut variants = vec![
        base[..base.len() / 3].to_vec(),
        base[..base.len() / 2].to_vec(),
    ];
    for stride in [7usize, 61, 251, 1021] {
        for xor in [0x01u8, 0xff] {
            let mut v = base.clone();
            for b in v.iter_mut().skip(stride / 2).step_by(stride) {
                *b ^= xor;
            }
            variants.push(v);
        }
    }
    let clean = view(base.clone());
    assert!(walk(&clean) >= 4);
    for img in variants {
        let img: &'static [u8] = Box::leak(img.into_boxed_slice());
        let Ok(image) = Image::from_bytes_with(
            img,
            &ImageOptions {
                erase_size: Some(ES),
                endian: Some(Endian::Little),
                insist: true,
                ..Default::default()
            },
        ) else {
            continue;
        };
        let image: &'static Image<'static> = Box::leak(Box::new(image));
        walk(&View::new(
            image.salvage().0,
            &ViewOptions { cache_bytes: 4096 },
        ));
    }
}
