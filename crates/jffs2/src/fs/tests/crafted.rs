//! Unit tests on crafted images, one kernel rule each (spec sections in the names' comments).

use super::*;
use crate::compress::{self, COMPR_LZO, COMPR_NONE, COMPR_RTIME, COMPR_ZERO, COMPR_ZLIB};
use crate::format::xprefix;
use crate::fs::{
    Fs, FsError, FsOptions, InodeKind, Problem, ReadError, RubinMode, TreeOptions, XattrError,
};

fn fs_of(img: &Img) -> Image<'static> {
    let g = geometry(img.e, img.es);
    checked(Image::from_vec_with(img.build(), &options(g)), g)
}

fn has(problems: &[Problem], code: &str) -> bool {
    problems.iter().any(|p| p.code() == code)
}

/// §6.4: no node for ino 1 → a faked 0755 root directory, 0:0, times 0; nlink 2 + subdirs + 1.
#[test]
fn root_is_faked_and_tree_lists_everything() {
    let mut img = new_img();
    img.dir(1, 2, b"etc", 1)
        .file(2, 3, b"passwd", 2, b"root:x:0:0\n")
        .file(1, 4, b"hello", 3, b"hello world");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let root = fs.read_inode(1).unwrap();
    assert!(root.faked);
    assert_eq!(root.mode, S_IFDIR | 0o755);
    assert_eq!((root.uid, root.gid, root.mtime, root.size), (0, 0, 0, 0));
    assert_eq!(root.nlink, 4);
    assert_eq!(fs.read_data(3, 0, 100).unwrap(), b"root:x:0:0\n");
    assert_eq!(fs.read_data(4, 6, 100).unwrap(), b"world");
    let t = fs.tree(&TreeOptions::listing());
    let paths: Vec<_> = t.entries.iter().map(|e| e.path.clone()).collect();
    assert_eq!(
        paths,
        vec![
            b".".to_vec(),
            b"etc".to_vec(),
            b"etc/passwd".to_vec(),
            b"hello".to_vec()
        ]
    );
    let l = t.listing();
    let mut h = crate::fs::Md5::new();
    h.update(b"root:x:0:0\n");
    assert_eq!(l[2].md5, Some(crate::fs::Md5::hex(&h.finish())));
    assert_eq!(l[1].nlink, 2);
    assert_eq!(l[3].mode, "0644");
    assert!(t.problems.is_empty(), "{:?}", t.problems);
    assert!(fs.problems().is_empty());
}

/// §5.3: a dirent to an inode with no inode cache is obsoleted and disappears.
#[test]
fn dirent_to_missing_inode_disappears() {
    let mut img = new_img();
    img.file(1, 2, b"a", 1, b"x")
        .dirent(1, 2, 99, dt::REG, b"ghost");
    let image = fs_of(&img);
    // The build empties the scan's dirents (the kernel frees them there): the ghost's node
    // is found in a scan of its own, whose ref numbering is the mount's.
    let ghost = image.scan().inodes[&1]
        .scan_dents
        .iter()
        .find(|d| d.ino == 99)
        .unwrap()
        .node;
    let (fs, _) = image.salvage();
    assert_eq!(fs.scan().refs[ghost].state, RefState::Obsolete);
    assert!(matches!(
        fs.build_problems()[0],
        Problem::DirentToMissingInode {
            ino: 99,
            parent: 1,
            ..
        }
    ));
    let names: Vec<_> = fs
        .list_dir(1)
        .unwrap()
        .into_iter()
        .map(|d| d.name)
        .collect();
    assert_eq!(names, vec![b"a".to_vec()]);
}

/// §5.4: inodes nothing names are removed, recursively, their nodes obsoleted.
#[test]
fn orphans_are_removed_recursively() {
    let mut img = new_img();
    img.file(1, 2, b"kept", 1, b"k")
        // Directory 10 is named by nothing; it contains 11, which contains file 12.
        .meta(10, 1, S_IFDIR | 0o755, 0)
        .dir(10, 11, b"sub", 1)
        .file(11, 12, b"f", 1, b"lost")
        // A plain orphan file.
        .data(13, 1, 1, 0, b"o");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    for ino in [10, 11, 12, 13] {
        assert!(fs.removed(ino), "ino {ino}");
        for &i in &fs.scan().inodes[&ino].nodes {
            assert_eq!(fs.scan().refs[i].state, RefState::Obsolete);
        }
    }
    assert!(!fs.removed(2));
    assert_eq!(
        fs.build_problems()
            .iter()
            .filter(|p| p.code() == "orphan-inode")
            .count(),
        4
    );
}

/// §3.3/§5.4: a `pino = 0` dirent makes a phantom inode whose link to the child is taken back.
#[test]
fn pino_zero_phantom_takes_back_its_link() {
    let mut img = new_img();
    img.file(1, 2, b"f", 1, b"data")
        .dirent(0, 5, 2, dt::REG, b"phantom-name");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    // The build changes the state of refs only: the highest inode number is the scan's.
    let phantom = fs.scan().highest_ino;
    assert!(phantom > 2);
    assert!(fs.removed(phantom));
    assert_eq!(fs.pino_nlink(2), Some(1));
    assert_eq!(fs.read_inode(2).unwrap().nlink, 1);
}

/// §5.5: a directory named by DT_DIR dirents in two directories: error, last parent wins.
#[test]
fn directory_hard_link() {
    let mut img = new_img();
    img.dir(1, 2, b"a", 1)
        .dir(1, 3, b"b", 2)
        .dirent(2, 3, 3, dt::DIR, b"b-again");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let p = fs
        .build_problems()
        .iter()
        .find(|p| p.code() == "directory-hard-link")
        .unwrap();
    assert!(matches!(p, Problem::DirHardLink { ino: 3, .. }));
    // Hash order: ino 1's dirents first, then ino 2's: the last parent visited is 2.
    assert_eq!(fs.pino_nlink(3), Some(2));
    assert!(fs
        .kernel_log()
        .iter()
        .any(|m| m.text.contains("is also hard linked from dir ino #1")));
    let t = fs.tree(&TreeOptions::metadata());
    assert!(has(&t.problems, "directory-reached-twice"));
    assert!(t.get(b"a/b-again").is_some());
}

/// §6.3: overlay by version, partial overlaps, truncation to the latest isize, holes.
#[test]
fn fragments_by_version_and_truncation() {
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::REG, b"f")
        .data(2, 1, 100, 0, &[b'a'; 100])
        .data(2, 3, 150, 50, &[b'c'; 100])
        .data(2, 2, 100, 10, &[b'b'; 10])
        .meta(2, 4, S_IFREG | 0o600, 120);
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let ino = fs.read_inode(2).unwrap();
    assert_eq!(ino.size, 120);
    assert_eq!(ino.perm(), 0o600);
    let mut want = vec![b'a'; 10];
    want.extend([b'b'; 10]);
    want.extend([b'a'; 30]);
    want.extend([b'c'; 70]);
    assert_eq!(fs.read_range(&ino, 0, 1000).unwrap(), want);
    assert_eq!(fs.read_range(&ino, 45, 10).unwrap(), b"aaaaaccccc");
}

/// §6.4: a file whose isize is beyond its data shows the end of its data.
#[test]
fn size_beyond_data_is_clipped() {
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::REG, b"f")
        .data(2, 1, 5000, 0, b"short");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let ino = fs.read_inode(2).unwrap();
    assert_eq!(ino.size, 5);
    assert!(matches!(
        ino.problems[0],
        Problem::SizeBeyondData {
            isize: 5000,
            size: 5,
            ..
        }
    ));
    assert!(ino
        .log
        .iter()
        .any(|m| m.text.contains("Truncating ino #2 to 5000 bytes failed")));
}

/// §6.3: holes between nodes and ZERO nodes read as zeros; a size extension by a ZERO node.
#[test]
fn holes_and_zero_nodes() {
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::REG, b"f")
        .data(2, 1, 8196, 8192, b"tail")
        .inode(
            InodeNode {
                ino: 2,
                version: 2,
                mode: S_IFREG | 0o644,
                isize: 20000,
                offset: 8196,
                dsize: 20000 - 8196,
                compr: COMPR_ZERO,
                ..Default::default()
            },
            &[],
        );
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let ino = fs.read_inode(2).unwrap();
    assert_eq!(ino.size, 20000);
    let d = fs.read_range(&ino, 0, 30000).unwrap();
    assert_eq!(d.len(), 20000);
    assert!(d[..8192].iter().all(|&b| b == 0));
    assert_eq!(&d[8192..8196], b"tail");
    assert!(d[8196..].iter().all(|&b| b == 0));
}

/// §6.2/§6.4: a newer node failing its data CRC is dropped; older data and older metadata
/// show through.
#[test]
fn data_crc_failure_falls_back_to_older_data() {
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::REG, b"f").data(2, 1, 3, 0, b"old");
    let mut bad = Vec::new();
    InodeNode {
        ino: 2,
        version: 2,
        mode: S_IFREG | 0o755,
        isize: 3,
        mtime: 2222,
        dsize: 3,
        ..Default::default()
    }
    .encode(LE, b"new", &mut bad);
    let n = bad.len();
    bad[n - 1] = b'X'; // data no longer matches data_crc
    img.raw(bad);
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let ino = fs.read_inode(2).unwrap();
    assert_eq!(fs.read_range(&ino, 0, 10).unwrap(), b"old");
    assert_eq!(ino.mtime, 1001, "metadata from the older node");
    assert_eq!(ino.perm(), 0o644);
    assert!(matches!(
        ino.problems[0],
        Problem::DataCrc {
            superseded: false,
            ..
        }
    ));
    assert!(ino.log.iter().any(|m| m
        .text
        .contains("check_node_data: wrong data CRC in data node at")));
}

/// §6.2: a bad node entirely covered by newer valid data is "superseded".
#[test]
fn superseded_bad_node_is_only_noted() {
    let mut img = new_img();
    let mut bad = Vec::new();
    InodeNode {
        ino: 2,
        version: 1,
        mode: S_IFREG | 0o644,
        isize: 3,
        dsize: 3,
        ..Default::default()
    }
    .encode(LE, b"old", &mut bad);
    let n = bad.len();
    bad[n - 1] = b'X';
    img.dirent(1, 1, 2, dt::REG, b"f")
        .raw(bad)
        .data(2, 2, 3, 0, b"new");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let ino = fs.read_inode(2).unwrap();
    assert_eq!(fs.read_range(&ino, 0, 10).unwrap(), b"new");
    assert!(matches!(
        ino.problems[0],
        Problem::DataCrc {
            superseded: true,
            ..
        }
    ));
    assert!(ino.log.is_empty());
}

/// §6.4: symlinks (target = csize raw bytes; isize 0 → dsize), devices (2 and 4 bytes).
#[test]
fn symlinks_and_devices() {
    let mut img = new_img();
    img.dirent(1, 1, 2, dt::LNK, b"l")
        .inode(
            InodeNode {
                ino: 2,
                version: 1,
                mode: S_IFLNK | 0o777,
                isize: 0,
                dsize: 6,
                ..Default::default()
            },
            b"target",
        )
        .dirent(1, 2, 3, dt::CHR, b"old")
        .inode(
            InodeNode {
                ino: 3,
                version: 1,
                mode: S_IFCHR | 0o600,
                dsize: 2,
                ..Default::default()
            },
            &[3, 1],
        )
        .dirent(1, 3, 4, dt::CHR, b"new")
        .inode(
            InodeNode {
                ino: 4,
                version: 1,
                mode: S_IFCHR | 0o600,
                dsize: 4,
                ..Default::default()
            },
            &((70000u32 & 0xff) | (259 << 8) | ((70000 & !0xff) << 12)).to_le_bytes(),
        )
        .dirent(1, 4, 5, dt::CHR, b"strange")
        .inode(
            InodeNode {
                ino: 5,
                version: 1,
                mode: S_IFCHR | 0o600,
                dsize: 3,
                ..Default::default()
            },
            &[1, 2, 3],
        );
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let l = fs.read_inode(2).unwrap();
    assert_eq!((l.kind, l.size), (InodeKind::Symlink, 6));
    assert_eq!(l.target.as_deref(), Some(&b"target"[..]));
    assert_eq!(fs.read_inode(3).unwrap().rdev, Some((1, 3)));
    assert_eq!(fs.read_inode(4).unwrap().rdev, Some((259, 70000)));
    assert!(matches!(
        fs.read_inode(5),
        Err(FsError::DeviceSize { size: 3, .. })
    ));
    let t = fs.tree(&TreeOptions::listing());
    assert!(t.get(b"strange").is_none(), "stat fails: not listed");
    assert!(has(&t.problems, "unreadable-inode"));
    assert_eq!(
        t.listing()
            .iter()
            .find(|e| e.path == b"new")
            .unwrap()
            .rdev
            .as_deref(),
        Some("259:70000")
    );
}

/// §6.4: a symlink target over 254 bytes is -ENAMETOOLONG; a special inode with a hole
/// before its node "had more than one node".
#[test]
fn bad_special_inodes() {
    let mut img = new_img();
    let long = vec![b'x'; 300];
    img.inode(
        InodeNode {
            ino: 2,
            version: 1,
            mode: S_IFLNK | 0o777,
            dsize: 300,
            ..Default::default()
        },
        &long,
    )
    .dirent(1, 1, 2, dt::LNK, b"long")
    .inode(
        InodeNode {
            ino: 3,
            version: 1,
            mode: S_IFLNK | 0o777,
            isize: 10,
            offset: 4,
            dsize: 6,
            ..Default::default()
        },
        b"target",
    )
    .dirent(1, 2, 3, dt::LNK, b"holey");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    assert!(matches!(
        fs.read_inode(2),
        Err(FsError::SymlinkTooLong { len: 300, .. })
    ));
    assert!(matches!(
        fs.read_inode(3),
        Err(FsError::BadSpecial {
            what: "had more than one node",
            ..
        })
    ));
}

/// §5.2: a deletion dirent hides the older entry; a newer entry of the same name wins.
#[test]
fn deletion_and_rename_by_version() {
    let mut img = new_img();
    img.file(1, 2, b"gone", 1, b"1")
        .dirent(1, 5, 0, dt::UNKNOWN, b"gone")
        .file(1, 3, b"name", 2, b"first")
        .file(1, 4, b"name", 6, b"second");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let d = fs.list_dir(1).unwrap();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].name.as_bytes(), d[0].ino), (&b"name"[..], 4));
    assert!(fs.removed(2) && fs.removed(3));
}

/// §6.4: a directory's mtime/ctime come from its latest dirent's mctime when newer.
#[test]
fn directory_mtime_from_mctime() {
    let mut img = new_img();
    img.dir(1, 2, b"d", 1);
    let mut b = Vec::new();
    DirentNode {
        pino: 2,
        version: 5,
        ino: 3,
        mctime: 777,
        dtype: dt::REG,
        ..Default::default()
    }
    .encode(LE, b"f", &mut b);
    img.raw(b).data(3, 1, 1, 0, b"z");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let d = fs.read_inode(2).unwrap();
    assert_eq!((d.mtime, d.ctime), (777, 777));
}

fn compressed(ino: u32, compr: u8, usercompr: u8, stored: &[u8], dsize: usize) -> InodeNode {
    let _ = stored;
    InodeNode {
        ino,
        version: 1,
        mode: S_IFREG | 0o644,
        isize: dsize as u32,
        dsize: dsize as u32,
        compr,
        usercompr,
        ..Default::default()
    }
}

/// §1.9: every compressor the kernel reads; unknown ids and LZO with usercompr are errors.
#[test]
fn compressors() {
    let text: Vec<u8> = b"jffs2 jffs2 jffs2 compress me please "
        .iter()
        .cycle()
        .take(4096)
        .copied()
        .collect();
    let z = compress::zlib_compress(&text, 4096).unwrap().0;
    let r = compress::rtime_compress(&text, 4096).unwrap().0;
    let l = compress::lzo_compress(&text, 4096).unwrap().0;
    let dynr = compress::dynrubin_compress(&text, 4096).unwrap().0;
    let mut img = new_img();
    let cases: [(u32, u8, u8, &[u8]); 7] = [
        (2, COMPR_ZLIB, 0, &z),
        (3, COMPR_RTIME, 0, &r),
        (4, COMPR_LZO, 0, &l),
        (5, COMPR_LZO, 1, &l),
        (6, 4, 0, &text[..10]),
        (7, 200, 0, &text[..10]),
        (8, 3, 0, &dynr),
    ];
    for (ino, c, u, data) in cases {
        img.dirent(1, ino, ino, dt::REG, format!("f{ino}").as_bytes())
            .inode(compressed(ino, c, u, data, 4096), data);
    }
    // ZLIB with a non-zero usercompr byte is masked and reads fine.
    img.dirent(1, 9, 9, dt::REG, b"f9")
        .inode(compressed(9, COMPR_ZLIB, 3, &z, 4096), &z);
    // OpenWrt's LZMA reads (like an OpenWrt kernel); with a usercompr byte it is "not
    // available", like LZO.
    let lz = compress::lzma_compress(&text, 4096).unwrap().0;
    img.dirent(1, 10, 10, dt::REG, b"f10")
        .inode(compressed(10, compress::COMPR_LZMA, 0, &lz, 4096), &lz);
    img.dirent(1, 11, 11, dt::REG, b"f11")
        .inode(compressed(11, compress::COMPR_LZMA, 2, &lz, 4096), &lz);
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    for ino in [2, 3, 4, 9, 10] {
        assert_eq!(fs.read_data(ino, 0, 5000).unwrap(), text, "ino {ino}");
    }
    for ino in [5, 6, 7, 8, 11] {
        let e = fs.read_data(ino, 0, 5000).unwrap_err();
        assert!(
            matches!(
                e,
                FsError::Read {
                    error: ReadError::Decompress {
                        error: compress::ComprError::UnsupportedCompressor(_),
                        ..
                    },
                    ..
                }
            ),
            "ino {ino}: {e}"
        );
    }
    let t = fs.tree(&TreeOptions::listing());
    assert_eq!(
        t.problems
            .iter()
            .filter(|p| p.code() == "unreadable-data")
            .count(),
        5
    );
    assert!(t
        .listing()
        .iter()
        .find(|e| e.path == b"f6")
        .unwrap()
        .md5
        .is_none());
    let _ = COMPR_NONE;

    // A kernel built with CONFIG_JFFS2_RUBIN reads id 3 with the dynamic-model decoder.
    let g = geometry(LE, ES);
    let opts = ImageOptions {
        fs: FsOptions {
            rubin: RubinMode::KernelSwapped,
            ..FsOptions::default()
        },
        ..options(g)
    };
    let rubin = checked(Image::from_bytes_with(image.file_bytes(), &opts), g);
    let (fs, _) = rubin.salvage();
    assert_eq!(fs.read_data(8, 0, 5000).unwrap(), text);
}

fn acl_jffs2(e: Endian) -> Vec<u8> {
    let mut v = Vec::new();
    e.put_u32(&mut v, 1);
    for (tag, perm) in [(0x01u16, 6u16), (0x04, 4), (0x20, 4)] {
        e.put_u16(&mut v, tag);
        e.put_u16(&mut v, perm);
    }
    v
}

/// §9.4: xattrs bound to inodes, ACL conversion, delete markers, orphans, invalid datums,
/// duplicate names.
#[test]
fn xattrs() {
    let mut img = new_img();
    img.file(1, 2, b"f", 1, b"data")
        .xattr(1, 1, xprefix::USER, b"color", b"blue")
        .xref(2, 1, 2)
        .xattr(2, 1, xprefix::ACL_ACCESS, b"", &acl_jffs2(LE))
        .xref(2, 2, 4)
        // A deleted xref with a higher xseqno hides the live one.
        .xattr(3, 1, xprefix::TRUSTED, b"gone", b"x")
        .xref(2, 3, 6)
        .xref(2, 3, 9)
        // Orphans: xref to a missing inode, datum nobody uses.
        .xref(77, 1, 10)
        .xattr(4, 1, xprefix::USER, b"unused", b"u")
        // Two datums of the same name: the larger xseqno wins.
        .xattr(5, 1, xprefix::USER, b"dup", b"old")
        .xref(2, 5, 12)
        .xattr(6, 1, xprefix::USER, b"dup", b"new")
        .xref(2, 6, 14);
    // A datum whose data CRC fails.
    let mut bad = Vec::new();
    XattrNode {
        xid: 7,
        version: 1,
        xprefix: xprefix::USER,
        ..Default::default()
    }
    .encode(LE, b"broken", b"value", &mut bad);
    let n = bad.len();
    bad[n - 1] ^= 1;
    img.raw(bad).xref(2, 7, 16);
    // A newer version of datum 1 replaces the older.
    img.xattr(1, 2, xprefix::USER, b"color", b"green");
    let image = fs_of(&img);
    let (fs, _) = image.salvage();
    let s = fs.xattr_summary();
    // Datum 3 is used only by a deleted xref, datum 4 by nothing.
    assert_eq!((s.xdatum, s.xdatum_orphan), (7, 2));
    assert_eq!((s.xref, s.dead, s.xref_orphan), (7, 1, 1));
    assert!(fs.kernel_log().iter().any(|m| m.text.ends_with(
        "complete building xattr subsystem, 7 of xdatum (0 unchecked, 2 orphan) and 7 of xref (1 dead, 1 orphan) found."
    )));
    let inode = fs.read_inode(2).unwrap();
    let (x, probs) = fs.xattrs(&inode);
    let names: Vec<_> = x
        .iter()
        .map(|a| String::from_utf8_lossy(&a.name).into_owned())
        .collect();
    assert_eq!(
        names,
        vec!["system.posix_acl_access", "user.color", "user.dup"]
    );
    assert_eq!(x[1].value.as_deref(), Ok(&b"green"[..]));
    assert_eq!(x[2].value.as_deref(), Ok(&b"new"[..]));
    assert_eq!(
        hex(x[0].value.as_deref().unwrap()),
        "0200000001000600ffffffff04000400ffffffff20000400ffffffff"
    );
    assert!(probs
        .iter()
        .any(|p| matches!(p, Problem::Xattr(XattrError::BadDatum { xid: 7, .. }))));
    assert!(probs
        .iter()
        .any(|p| matches!(p, Problem::Xattr(XattrError::DuplicateName { .. }))));
    assert!(has(fs.build_problems(), "orphan-xref"));
    assert!(has(fs.build_problems(), "orphan-xattr"));
    let l = fs.tree(&TreeOptions::listing()).listing();
    assert_eq!(
        l[1].xattrs.get("user.color").map(String::as_str),
        Some("677265656e")
    );
}

/// §6.1: refs from a summary are checked at readinode: a node obsoleted on flash after the
/// summary was written fails its header CRC as stored, an unknown node is rejected.
#[test]
fn summary_refs_are_checked_at_readinode() {
    let mut img = new_img();
    img.file(1, 2, b"f", 1, b"v1");
    // Version 2, obsoleted on flash (ACCURATE cleared, CRCs as written).
    let mut v2 = Vec::new();
    InodeNode {
        ino: 2,
        version: 2,
        mode: S_IFREG | 0o644,
        isize: 2,
        dsize: 2,
        ..Default::default()
    }
    .encode(LE, b"v2", &mut v2);
    let t = u16::from_le_bytes([v2[2], v2[3]]) & !crate::format::NODE_ACCURATE;
    v2[2..4].copy_from_slice(&t.to_le_bytes());
    img.raw(v2);
    img.raw(header(LE, crate::format::NODETYPE_PADDING, 12));
    let image = img.build();
    let mut scan = scan_image(&image, geometry(LE, ES));
    // Link both the way a (stale) summary would: unchecked refs of inode 2.
    for (i, off) in image
        .windows(4)
        .enumerate()
        .filter(|(_, w)| {
            w[..2] == [0x85, 0x19] && (w[2..4] == [0x02, 0xc0] || w[2..4] == [0x04, 0x20])
        })
        .map(|(i, _)| (i, i as u32))
        .collect::<Vec<_>>()
    {
        let _ = i;
        scan.refs.push(NodeRef {
            offset: off,
            len: 0,
            state: RefState::Unchecked,
            kind: NodeKind::Inode,
            from_summary: true,
            ino: Some(2),
        });
        let n = scan.refs.len() - 1;
        scan.inodes.get_mut(&2).unwrap().nodes.push(n);
    }
    let fs = Fs::from_scan(&image, &mut scan, Default::default());
    let ino = fs.read_inode(2).unwrap();
    assert_eq!(fs.read_range(&ino, 0, 10).unwrap(), b"v1");
    let reasons: Vec<_> = ino
        .problems
        .iter()
        .filter_map(|p| match p {
            Problem::BadNode { reason, .. } => Some(reason.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(reasons.len(), 2, "{reasons:?}");
    assert!(reasons
        .iter()
        .any(|r| r.starts_with("Node header CRC failed at")));
    assert!(reasons
        .iter()
        .any(|r| r.contains("Please report this error")));
    assert_eq!(ino.obsoleted.len(), 2);
}
