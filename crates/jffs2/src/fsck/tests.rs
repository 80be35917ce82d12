//! Unit tests of the checks, one per rule, on crafted images.

use super::*;
use crate::crc::crc32;
use crate::format::{dt, pad4, Endian, InodeNode, SumRecord, SummaryNode, MAGIC, NODETYPE_INODE};
use crate::fs::{Fs, FsOptions};
use crate::testing::Img;

const LE: Endian = Endian::Little;
const ES: u32 = 16384;
const S_IFREG: u32 = 0o100000;

/// A small consistent tree: /etc/motd, /bin (empty), /data (two nodes).
fn base() -> Img {
    let mut i = Img::new();
    i.dir(1, 2, b"etc", 1)
        .file(2, 3, b"motd", 1, b"hello, flash\n")
        .dir(1, 4, b"bin", 2);
    i.data(5, 1, 8192, 0, &[b'a'; 4096])
        .data(5, 2, 8192, 4096, &[b'b'; 4096])
        .dirent(1, 3, 5, dt::REG, b"data");
    i
}

fn opts() -> Options {
    Options {
        erase_size: Some(ES),
        endian: Some(LE),
        compare: None,
        progress: None,
    }
}

fn run(img: &[u8]) -> Report {
    check(img, &opts()).expect("checkable")
}

fn errors(r: &Report) -> Vec<&Finding> {
    r.findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect()
}

fn has(r: &Report, code: &str, offset: Option<u32>) -> bool {
    r.findings
        .iter()
        .any(|f| f.code == code && (offset.is_none() || f.offset == offset))
}

/// Offsets of every node of a type in the image (from the walk's view: valid headers).
fn node_offsets(img: &[u8], nodetype: u16) -> Vec<u32> {
    let mut v = Vec::new();
    let mut p = 0usize;
    while p + 12 <= img.len() {
        if LE.get_u16(img, p) == Some(MAGIC) {
            let t = LE.get_u16(img, p + 2).unwrap_or(0);
            let len = LE.get_u32(img, p + 4).unwrap_or(0);
            if len >= 12 {
                if t == nodetype {
                    v.push(p as u32);
                }
                p += pad4(len) as usize;
                continue;
            }
        }
        p += 4;
    }
    v
}

#[test]
fn consistent_image_has_no_error() {
    let img = base().build();
    let r = run(&img);
    assert!(errors(&r).is_empty(), "{:#?}", r.findings);
    assert_eq!(r.verdict(), Verdict::Consistent);
    assert_eq!(r.tree.files, 2);
    assert_eq!(r.tree.dirs, 3);
    assert!(r.mount_ok);
    assert_eq!(r.nodes.data_checked, 3);
    assert_eq!(r.nodes.data_bytes, 8192 + 13);
}

#[test]
fn empty_random_and_erased_images() {
    assert!(matches!(
        check(&[], &Options::default()),
        Err(FsckError::Empty)
    ));
    let mut x = 0x1234_5678_9abc_def0u64;
    let noise: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    assert!(matches!(
        check(&noise, &Options::default()),
        Err(FsckError::NotJffs2(_))
    ));
    let ff = vec![0xFFu8; 5 * 65536];
    let r = check(&ff, &Options::default()).unwrap();
    assert_eq!(r.verdict(), Verdict::Consistent);
    assert!(has(&r, "empty-filesystem", None));
}

#[test]
fn data_crc_of_a_live_node_is_an_error_with_its_offset() {
    let mut img = base().build();
    let off = node_offsets(&img, NODETYPE_INODE)[1]; // motd's data node
    img[off as usize + 68 + 3] ^= 0x01;
    let r = run(&img);
    let e = errors(&r);
    assert!(
        e.iter()
            .any(|f| f.code == "data-crc" && f.offset == Some(off) && f.ino == Some(3)),
        "{e:#?}"
    );
    assert_eq!(r.verdict().exit_code(), 4);
    let f = e.iter().find(|f| f.offset == Some(off)).unwrap();
    assert_eq!(f.path.as_deref(), Some("etc/motd"));
}

#[test]
fn superseded_bad_data_is_a_warning() {
    let mut i = base();
    i.data(5, 3, 8192, 0, &[b'c'; 4096]); // replaces version 1
    let mut img = i.build();
    let off = node_offsets(&img, NODETYPE_INODE)[3]; // ino 5 version 1
    img[off as usize + 100] ^= 0x40;
    let r = run(&img);
    assert!(errors(&r).is_empty(), "{:#?}", r.findings);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "data-crc" && f.severity == Severity::Warning && f.offset == Some(off)));
}

#[test]
fn header_crc_and_garbage() {
    let mut img = base().build();
    let off = node_offsets(&img, NODETYPE_INODE)[1];
    img[off as usize + 5] ^= 0x10; // totlen
    let r = run(&img);
    assert!(has(&r, "header-crc", Some(off)), "{:#?}", r.findings);
    assert_eq!(r.verdict().exit_code(), 4);

    let mut img = base().build();
    img[off as usize] ^= 0x80; // magic
    let r = run(&img);
    assert!(has(&r, "garbage", Some(off)), "{:#?}", r.findings);
}

#[test]
fn torn_node_at_the_end_of_the_written_space() {
    let img0 = base().build();
    let last = *node_offsets(&img0, 0xE001).last().unwrap();
    // Append a data node and tear it: its second half erased.
    let mut i = base();
    i.data(5, 3, 8192, 0, &crate::fs::Md5::new().finish().repeat(100));
    let mut img = i.build();
    let off = *node_offsets(&img, NODETYPE_INODE).last().unwrap();
    assert!(off > last);
    let totlen = LE.get_u32(&img, off as usize + 4).unwrap() as usize;
    for b in &mut img[off as usize + totlen / 2..off as usize + totlen] {
        *b = 0xFF;
    }
    let r = run(&img);
    let f = r
        .findings
        .iter()
        .find(|f| f.offset == Some(off))
        .expect("torn node reported");
    assert_eq!(f.code, "torn-node");
    assert_eq!(f.severity, Severity::Error);
    assert!(f
        .message
        .contains("looks like an interrupted write (power cut)"));
}

#[test]
fn truncated_image() {
    let img = base().build();
    let off = node_offsets(&img, NODETYPE_INODE)[3];
    let cut = &img[..off as usize + 100];
    let r = check(cut, &opts()).unwrap();
    assert!(has(&r, "truncated-image", Some(off)), "{:#?}", r.findings);
    assert_eq!(r.verdict().exit_code(), 4);
}

#[test]
fn flipped_accurate_bit_is_a_lost_node() {
    for nth in 0..4 {
        let mut img = base().build();
        let off = node_offsets(&img, NODETYPE_INODE)[nth];
        // Clear ACCURATE (0x2000) in the little-endian type field: byte 3, bit 5.
        img[off as usize + 3] &= !0x20;
        let r = run(&img);
        assert_eq!(r.verdict().exit_code(), 4, "node {nth}: {:#?}", r.findings);
    }
    let mut img = base().build();
    let off = node_offsets(&img, 0xE001)[1]; // motd's dirent
    img[off as usize + 3] &= !0x20;
    let r = run(&img);
    assert!(has(&r, "lost-node", Some(off)), "{:#?}", r.findings);
}

#[test]
fn node_crossing_a_block_and_erase_size_mismatch() {
    // Data enough for two blocks, checked with half the erase size.
    let mut i = Img::new();
    let mut x = 7u32;
    let noise: Vec<u8> = (0..4096)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    for v in 0..8u32 {
        i.data(2, v + 1, 8 * 4096, v * 4096, &noise);
    }
    i.dirent(1, 1, 2, dt::REG, b"noise");
    let img = i.build();
    let o = Options {
        erase_size: Some(ES / 2),
        endian: Some(LE),
        compare: None,
        progress: None,
    };
    let r = check(&img, &o).unwrap();
    assert!(has(&r, "node-crosses-block", None), "{:#?}", r.findings);
    assert!(has(&r, "erase-size-mismatch", None), "{:#?}", r.findings);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "erase-size-mismatch" && f.message.contains("16 KiB")));
}

#[test]
fn incompat_rocompat_and_unknown_nodes() {
    let unknown = |t: u16| {
        let mut out = Vec::new();
        LE.put_u16(&mut out, MAGIC);
        LE.put_u16(&mut out, t);
        LE.put_u32(&mut out, 16);
        let crc = crc32(&out[..8]);
        LE.put_u32(&mut out, crc);
        out.extend_from_slice(&[0; 4]);
        out
    };
    let mut i = base();
    i.raw(unknown(0xE0F0));
    let r = run(&i.build());
    assert!(has(&r, "incompat-node", None), "{:#?}", r.findings);
    assert!(!r.mount_ok);
    assert_eq!(r.verdict().exit_code(), 4);

    let mut i = base();
    i.raw(unknown(0xA0F0));
    let r = run(&i.build());
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "rocompat-node" && f.severity == Severity::Warning));
    assert!(r.read_only);
    assert_eq!(r.verdict().exit_code(), 0);

    let mut i = base();
    i.raw(unknown(0x60F0));
    let r = run(&i.build());
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "unknown-node" && f.severity == Severity::Info));
    assert_eq!(r.verdict().exit_code(), 0);
}

#[test]
fn non_erased_free_space() {
    let mut img = base().build();
    // Block 2 holds only a cleanmarker? base() fits in one block: blocks 1..4 are erased.
    // Make block 1 a cleanmarker block with junk after 256 bytes.
    let mut cm = Vec::new();
    crate::format::encode_cleanmarker(LE, 12, &mut cm);
    let b1 = ES as usize;
    img[b1..b1 + 12].copy_from_slice(&cm);
    img[b1 + 1000] = 0x00;
    let r = run(&img);
    assert!(
        has(&r, "non-erased-free-space", Some(ES + 1000)),
        "{:#?}",
        r.findings
    );
    assert_eq!(r.verdict().exit_code(), 4);
}

#[test]
fn dirent_to_missing_inode_and_orphans() {
    let mut i = base();
    i.dirent(1, 9, 77, dt::REG, b"ghost");
    i.data(88, 1, 3, 0, b"abc");
    let r = run(&i.build());
    assert!(
        has(&r, "dirent-to-missing-inode", None),
        "{:#?}",
        r.findings
    );
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "orphan-inode" && f.severity == Severity::Info && f.ino == Some(88)));
}

#[test]
fn directory_cycle_and_two_parents() {
    let mut i = base();
    // /etc/sub (ino 6), and /bin names /etc as well: a directory with two parents.
    i.dir(2, 6, b"sub", 4)
        .dirent(4, 5, 2, dt::DIR, b"etc-again");
    let r = run(&i.build());
    assert!(
        has(&r, "directory-hard-link", None) || has(&r, "directory-reached-twice", None),
        "{:#?}",
        r.findings
    );
    assert_eq!(r.verdict().exit_code(), 4);
}

#[test]
fn size_beyond_data() {
    let mut i = base();
    i.data(9, 1, 100_000, 0, b"short");
    i.dirent(1, 10, 9, dt::REG, b"liar");
    let r = run(&i.build());
    assert!(has(&r, "size-beyond-data", None), "{:#?}", r.findings);
}

#[test]
fn unknown_compressor_and_lying_sizes() {
    let mut i = base();
    i.inode(
        InodeNode {
            ino: 9,
            version: 1,
            mode: S_IFREG | 0o644,
            isize: 4096,
            dsize: 4096,
            compr: crate::compress::COMPR_COPY,
            ..Default::default()
        },
        &[1, 2, 3, 4],
    );
    i.dirent(1, 10, 9, dt::REG, b"copy");
    let r = run(&i.build());
    assert!(has(&r, "unknown-compressor", None), "{:#?}", r.findings);

    let mut i = base();
    i.inode(
        InodeNode {
            ino: 9,
            version: 1,
            mode: S_IFREG | 0o644,
            isize: 4096,
            dsize: 4096,
            compr: crate::compress::COMPR_ZLIB,
            ..Default::default()
        },
        &[0x78, 0x9c, 0x03, 0x00],
    );
    i.dirent(1, 10, 9, dt::REG, b"liar");
    let r = run(&i.build());
    assert!(has(&r, "unreadable-data", None), "{:#?}", r.findings);
}

#[test]
fn summary_records_must_match_their_block() {
    // A block with a summary that names a wrong version.
    let mut i = Img::new();
    i.file(1, 2, b"a", 1, b"AAAA");
    let mut img = i.build();
    let nodes = node_offsets(&img, NODETYPE_INODE);
    let dirents = node_offsets(&img, 0xE001);
    let recs = vec![
        SumRecord::Inode {
            nodetype: NODETYPE_INODE,
            inode: 2,
            version: 7, // wrong
            offset: nodes[0],
            totlen: 68 + 4,
        },
        SumRecord::Dirent {
            nodetype: 0xE001,
            totlen: 41,
            offset: dirents[0],
            pino: 1,
            version: 1,
            ino: 2,
            dtype: dt::REG,
            name: b"a".to_vec(),
        },
    ];
    let at = ES - 256;
    let mut s = Vec::new();
    SummaryNode {
        cln_mkr: 12,
        ..Default::default()
    }
    .encode(LE, &recs, at, ES, &mut s)
    .unwrap();
    img[at as usize..ES as usize].copy_from_slice(&s);
    let r = run(&img);
    assert_eq!(r.summary_blocks, 1);
    assert!(
        has(&r, "summary-mismatch", Some(nodes[0])),
        "{:#?}",
        r.findings
    );

    // The same with the right version: consistent, and cheaper to mount.
    let mut recs = recs;
    if let SumRecord::Inode { version, .. } = &mut recs[0] {
        *version = 1;
    }
    let mut s = Vec::new();
    SummaryNode {
        cln_mkr: 12,
        ..Default::default()
    }
    .encode(LE, &recs, at, ES, &mut s)
    .unwrap();
    img[at as usize..ES as usize].copy_from_slice(&s);
    let r = run(&img);
    assert!(errors(&r).is_empty(), "{:#?}", r.findings);
    assert!(r.mount_cost.with_summaries < r.mount_cost.full_scan);

    // A corrupt summary: rejected, an error.
    img[at as usize + 40] ^= 1;
    let r = run(&img);
    assert!(has(&r, "summary-invalid", None), "{:#?}", r.findings);
}

#[test]
fn findings_print_as_documented() {
    let f = Finding::new(Code::DataCrc, "bad".into())
        .at(0xbe84)
        .ino(Some(19))
        .path(Some("var/log/messages".into()));
    assert_eq!(
        f.to_string(),
        "ERROR data-crc 0x0000be84 ino 19 var/log/messages: bad"
    );
    let g = Finding::new(Code::ImagePadded, "x".into());
    assert_eq!(g.to_string(), "INFO image-padded -: x");
}

#[test]
fn misplaced_and_wrong_sized_cleanmarkers() {
    let mut cm = Vec::new();
    crate::format::encode_cleanmarker(LE, 12, &mut cm);
    let mut i = base();
    i.raw(cm);
    let r = run(&i.build());
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "cleanmarker-misplaced" && f.severity == Severity::Warning));
    assert_eq!(r.verdict().exit_code(), 0, "{:#?}", r.findings);

    // A 16-byte cleanmarker where 12 are expected, at a block start.
    let mut img = base().build();
    let mut big = Vec::new();
    crate::format::encode_cleanmarker(LE, 16, &mut big);
    let b1 = ES as usize;
    img[b1..b1 + 16].copy_from_slice(&big);
    let r = run(&img);
    assert!(has(&r, "cleanmarker-size", Some(ES)), "{:#?}", r.findings);
}

#[test]
fn uncovered_bytes_are_warnings() {
    let mut img = base().build();
    // The data CRC of the /etc directory's inode node (no data).
    let off = node_offsets(&img, NODETYPE_INODE)[0] as usize;
    img[off + 60] = 0x55;
    let r = run(&img);
    assert!(r
        .findings
        .iter()
        .any(|f| f.code == "stray-data-crc" && f.severity == Severity::Warning));
    assert_eq!(r.verdict().exit_code(), 0);

    // Padding after a node of odd length (the "motd" dirent: 40 + 4 bytes, then data node of
    // 68 + 13 = 81 bytes, padded to 84).
    let mut img = base().build();
    let off = node_offsets(&img, NODETYPE_INODE)[1] as usize;
    img[off + 82] = 0x00;
    let r = run(&img);
    assert!(
        has(&r, "padding-not-erased", Some(off as u32)),
        "{:#?}",
        r.findings
    );
    assert_eq!(r.verdict().exit_code(), 0);
}

#[test]
fn output_does_not_depend_on_the_thread_count() {
    let mut img = base().build();
    let offs = node_offsets(&img, NODETYPE_INODE);
    for o in &offs[1..] {
        img[*o as usize + 70] ^= 4;
    }
    let a = run(&img).findings;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let b = pool.install(|| run(&img).findings);
    assert_eq!(a, b);
    assert!(a.len() >= 3);
}

#[test]
fn kernel_log_stops_at_a_failed_scan() {
    let mut out = Vec::new();
    LE.put_u16(&mut out, MAGIC);
    LE.put_u16(&mut out, 0xE0F0);
    LE.put_u32(&mut out, 12);
    let crc = crc32(&out[..8]);
    LE.put_u32(&mut out, crc);
    let mut i = base();
    i.raw(out);
    let r = run(&i.build());
    assert!(!r.mount_ok);
    let last = r.kernel_log.last().expect("a message");
    assert!(last.text.contains("Incompatible feature node"), "{last:?}");
}

#[test]
fn kernel_log_keeps_the_messages_of_an_inode_that_fails_to_read() {
    const S_IFCHR: u32 = 0o020000;
    let mut i = base();
    // A character device with two data nodes: "more than one node", -EIO.
    for (version, ofs) in [(1, 0), (2, 2)] {
        i.inode(
            InodeNode {
                ino: 6,
                version,
                mode: S_IFCHR | 0o644,
                isize: 4,
                offset: ofs,
                dsize: 2,
                ..Default::default()
            },
            &[1, 2],
        );
    }
    i.dirent(1, 4, 6, dt::CHR, b"tty");
    // A file whose only node fails its data CRC: the notice, then "no data nodes", -EIO.
    i.data(7, 1, 5, 0, b"lost!")
        .dirent(1, 5, 7, dt::REG, b"lost");
    let mut img = i.build();
    let offs = node_offsets(&img, NODETYPE_INODE);
    let last = *offs.last().expect("inode nodes");
    img[last as usize + 68] ^= 0x01; // the data CRC no longer matches
    let r = run(&img);
    let log: Vec<&str> = r.kernel_log.iter().map(|m| m.text.as_str()).collect();
    let want = [
        "error: (<pid>) jffs2_do_read_inode_internal: Argh. Special inode #6 with mode 0x21a4 had more than one node".to_string(),
        format!("wrong data CRC in data node at 0x{last:08x}"),
        "warning: (<pid>) jffs2_do_read_inode_internal: no data nodes found for ino #7".to_string(),
    ];
    for w in &want {
        assert!(
            log.iter().any(|l| l.contains(w.as_str())),
            "{w}\nnot in {log:#?}"
        );
    }
}

#[test]
fn openwrt_lzma_nodes() {
    use crate::compress::{lzma_compress, COMPR_LZMA};
    let text: Vec<u8> = b"config interface 'lan'\n\toption proto 'static'\n"
        .iter()
        .cycle()
        .take(4096)
        .copied()
        .collect();
    let (z, _) = lzma_compress(&text, 4096).unwrap();
    let lzma_file = |i: &mut Img, payload: &[u8]| {
        i.inode(
            InodeNode {
                ino: 9,
                version: 1,
                mode: S_IFREG | 0o644,
                isize: 4096,
                dsize: 4096,
                compr: COMPR_LZMA,
                ..Default::default()
            },
            payload,
        );
        i.dirent(1, 10, 9, dt::REG, b"network");
    };
    // Valid: verified, one note, consistent.
    let mut i = base();
    lzma_file(&mut i, &z);
    let r = run(&i.build());
    assert_eq!(r.verdict(), Verdict::Consistent, "{:#?}", r.findings);
    let f = r
        .findings
        .iter()
        .find(|f| f.code == "lzma-compression")
        .expect("lzma note");
    assert_eq!(f.severity, Severity::Info);
    assert!(
        f.message.starts_with("1 data nodes (4096 bytes of data)"),
        "{f}"
    );
    assert!(!has(&r, "unknown-compressor", None));
    assert_eq!(r.nodes.data_bytes, 4096 + 8192 + 13);
    // Corrupt (with a valid data CRC): unreadable, an error.
    let mut bad = z.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x5a;
    bad.truncate(bad.len() - 2);
    let mut i = base();
    lzma_file(&mut i, &bad);
    let r = run(&i.build());
    assert!(has(&r, "unreadable-data", None), "{:#?}", r.findings);
    assert_eq!(r.verdict(), Verdict::ErrorsFound);
}

#[test]
fn openwrt_end_marker() {
    let mut img = base().build();
    // The marker at the start of the first erased block.
    let at = img
        .chunks(ES as usize)
        .position(|b| b.iter().all(|&x| x == 0xFF))
        .unwrap()
        * ES as usize;
    img[at..at + 4].copy_from_slice(&scan::END_MARKER);
    let r = run(&img);
    assert_eq!(r.verdict(), Verdict::Consistent, "{:#?}", r.findings);
    let f = r.findings.iter().find(|f| f.code == "end-marker").unwrap();
    assert_eq!((f.severity, f.offset), (Severity::Info, Some(at as u32)));
    assert!(f.message.contains("shows the same files"), "{f}");
    assert!(!has(&r, "garbage", None) && !has(&r, "kernel-message", None));
    assert!(r.kernel_log.iter().any(|m| m.text
        == format!("jffs2_scan_eraseblock(): End of filesystem marker found at 0x{at:x}")));
    let before = run(&base().build());
    assert_eq!(r.tree, before.tree);
    // Data after the marker (an old filesystem in the rest of the partition): not checked,
    // named in the note; nodes there are not part of the filesystem.
    let mut more = img.clone();
    let old = base().build();
    more.truncate(at + ES as usize);
    more.extend_from_slice(&old);
    let r = run(&more);
    assert_eq!(r.verdict(), Verdict::Consistent, "{:#?}", r.findings);
    let f = r.findings.iter().find(|f| f.code == "end-marker").unwrap();
    assert!(f.message.contains("holds data after it"), "{f}");
    assert_eq!(r.tree, before.tree);
}

/// A 16 KiB block's budget for dead data is 256 KiB decompressed; live data has none. The
/// walk that runs before the inodes are read counts every node as dead: where that overruns
/// the budget it must leave the block to the walk that knows what is live, whose verdict
/// alone counts (live data always decompressed, dead data past the budget noted).
#[test]
fn live_data_past_the_dead_data_budget_is_all_decompressed() {
    let zeros = [0u8; 32768];
    let node = |version: u32, ofs: u32| InodeNode {
        ino: 5,
        version,
        mode: S_IFREG | 0o644,
        isize: 12 * 32768,
        offset: ofs,
        compr: crate::compress::COMPR_ZLIB,
        ..Default::default()
    };
    // Live only: 12 nodes of 32 KiB, 384 KiB decompressed, in one block.
    let mut i = Img::new().erase_size(ES);
    for k in 0..12 {
        i.compressed(node(k + 1, k * 32768), &zeros);
    }
    i.dirent(1, 1, 5, dt::REG, b"zeros");
    let r = run(&i.build());
    assert!(errors(&r).is_empty(), "{:#?}", r.findings);
    assert!(!has(&r, "decompression-budget", None), "{:#?}", r.findings);
    assert_eq!((r.nodes.data_checked, r.nodes.data_bytes), (12, 12 * 32768));

    // The same nodes, each rewritten once more: 12 dead, 12 live, in the same block. The
    // live ones are decompressed; of the dead, 8 fit the budget (256 KiB), 4 do not.
    let mut i = Img::new().erase_size(ES);
    for k in 0..12 {
        i.compressed(node(k + 1, k * 32768), &zeros);
        i.compressed(node(k + 13, k * 32768), &zeros);
    }
    i.dirent(1, 1, 5, dt::REG, b"zeros");
    let img = i.build();
    let r = run(&img);
    assert!(errors(&r).is_empty(), "{:#?}", r.findings);
    let note = r
        .findings
        .iter()
        .find(|f| f.code == "decompression-budget")
        .unwrap_or_else(|| panic!("{:#?}", r.findings));
    assert!(note.message.contains(": 4 superseded"), "{}", note.message);
    assert_eq!(r.nodes.data_checked, 20);
}

/// The walk of the last blocks made beside the scan, without a model
/// (`walk::walk_tail` with `Fs::for_node_reads`), gives the walks the walk beside the inode
/// reads would have made of them, a block overrunning the dead-data budget included (left
/// to the walk that knows what is live), however many blocks it got to.
#[test]
fn blocks_walked_beside_the_scan_are_walked_alike() {
    let zeros = [0u8; 32768];
    let mut i = base().erase_size(ES);
    // Enough dead data for one block to overrun its budget, then more blocks of files.
    for k in 0..24u32 {
        i.compressed(
            InodeNode {
                ino: 6,
                version: k + 1,
                mode: S_IFREG | 0o644,
                isize: 32768,
                compr: crate::compress::COMPR_ZLIB,
                ..Default::default()
            },
            &zeros,
        );
    }
    i.dirent(1, 5, 6, dt::REG, b"rewritten");
    for ino in 7..40u32 {
        i.file(
            1,
            ino,
            format!("f{ino}").as_bytes(),
            ino,
            &[ino as u8; 3000],
        );
    }
    let opened = crate::Image::from_vec_with(
        i.build(),
        &crate::ImageOptions {
            erase_size: Some(ES),
            ..Default::default()
        },
    )
    .expect("image");
    let fs = opened.mount().expect("mounts");
    let (flash, geom) = (opened.flash(), opened.geometry());
    let bare = Fs::for_node_reads(flash, geom, FsOptions::default());
    let es = geom.erase_size;
    let blocks = flash.len() / es as usize;
    assert!(blocks >= 8, "{blocks} blocks");
    let shown = |w: &[Option<walk::BlockWalk>]| format!("{w:?}");
    let whole = walk::walk_ahead(flash, &fs, es, Vec::new(), None);
    assert!(
        whole.iter().any(Option::is_none),
        "no block overran the budget"
    );
    let want = shown(&whole);
    for k in [0, 1, blocks / 2, blocks - 1, blocks] {
        let asked = std::cell::Cell::new(0usize);
        let tail = walk::walk_tail(flash, &bare, es, || {
            asked.set(asked.get() + 1);
            asked.get() > k
        });
        assert_eq!(tail.len(), k);
        let got = walk::walk_ahead(flash, &fs, es, tail, None);
        assert_eq!(shown(&got), want, "{k} blocks walked beside the scan");
    }
}
