//! Unit tests of the summariser on crafted images (the mkfs.jffs2, mtd-utils sumtool and
//! kernel comparisons are integration tests: `tests/sumtool_*.rs`).

use super::*;
use crate::format::{
    encode_cleanmarker, DirentNode, InodeNode, SumRecord, SummaryNode, XattrNode, XrefNode,
    NODETYPE_SUMMARY, SUM_MAGIC,
};
use crate::layout::{EndPad, LayoutConfig};
use crate::scan::{BlockClass, SummaryUse};
use crate::testing::Img;
use crate::testing::XorShift;

const E: Endian = Endian::Little;

fn dirent(pino: u32, ino: u32, version: u32, name: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    DirentNode {
        pino,
        ino,
        version,
        dtype: 8,
        ..Default::default()
    }
    .encode(E, name, &mut v);
    v
}

fn inode(ino: u32, version: u32, data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    InodeNode {
        ino,
        version,
        mode: 0o100644,
        isize: data.len() as u32,
        dsize: data.len() as u32,
        ..Default::default()
    }
    .encode(E, data, &mut v);
    v
}

/// Pseudo-random bytes (incompressible content for big nodes).
fn noise(seed: u32, n: usize) -> Vec<u8> {
    XorShift::new(seed.wrapping_mul(2_654_435_761).wrapping_add(1)).bytes(n)
}

/// A file system of `files` files of `size` bytes each, as a node list in write order.
fn nodes(files: u32, size: usize) -> Vec<Vec<u8>> {
    let mut v = Vec::new();
    for i in 0..files {
        let ino = i + 2;
        v.push(dirent(1, ino, i, format!("file{i:04}").as_bytes()));
        v.push(inode(ino, 1, &noise(i, size)));
    }
    v
}

/// Lays `nodes` out with the plain writer (what mkfs.jffs2 does with whole nodes).
fn plain(nodes: &[Vec<u8>], es: u32, cm: Option<u32>, pad: EndPad) -> Vec<u8> {
    let mut img = Img::new()
        .endian(E)
        .erase_size(es)
        .cleanmarkers(cm)
        .end_pad(pad)
        .exact_fit();
    for n in nodes {
        img.raw(n.clone());
    }
    img.build()
}

fn cfg(es: u32) -> SumtoolConfig {
    SumtoolConfig {
        endian: E,
        erase_size: es,
        ..SumtoolConfig::new()
    }
}

fn run(img: &[u8], c: &SumtoolConfig) -> (Vec<u8>, Analysis, SumtoolReport) {
    let r = summarize(img, c, Vec::new()).unwrap();
    same_when_checked_while_writing(img, c);
    r
}

/// What an analysis and a writing come to: the bytes (or the error), and the analysis.
fn outcome(r: Result<(Vec<u8>, SumtoolReport), SumtoolError>, a: &Analysis) -> String {
    let r = r.map(|(b, rep)| (crate::crc::crc32(&b), b.len(), rep));
    format!("{r:?} {:?} {:?} {:?}", a.kept, a.rejected, a.warnings)
}

/// [`analyse_unchecked`] then [`write_piped_checking`] come to what [`analyse`] then
/// [`write_piped`] do, whether the image is borrowed (checked on a padded copy) or padded
/// in place.
fn same_when_checked_while_writing(img: &[u8], c: &SumtoolConfig) {
    let want = analyse(img, c).map(|a| {
        let w = write_piped(&img[..a.held_len.min(img.len())], &a, c, Vec::new());
        outcome(w, &a)
    });
    let want = want.map_err(|e| e.to_string());
    let got = analyse_unchecked(img, c).map(|mut a| {
        let w = write_piped_checking(&img[..a.held_len.min(img.len())], &mut a, c, Vec::new());
        outcome(w, &a)
    });
    assert_eq!(got.map_err(|e| e.to_string()), want, "borrowed, {c:?}");
    let mut buf = img.to_vec();
    buf.resize(img.len() + (1 << 20), 0);
    let got = analyse_unchecked(ImageBytes::InPlace(&mut buf, img.len()), c).map(|mut a| {
        let held = a.held_len;
        let w = write_piped_checking(&buf[..held], &mut a, c, Vec::new());
        outcome(w, &a)
    });
    assert_eq!(got.map_err(|e| e.to_string()), want, "in place, {c:?}");
}

/// Every valid node of an image (full scan without summaries, so nodes are read), as bytes.
fn node_multiset(img: &[u8], es: u32) -> Vec<Vec<u8>> {
    let s = scan::scan(
        &as_flashed(img, es),
        &Geometry {
            endian: E,
            erase_size: es,
            cleanmarker_size: 12,
        },
        &ScanOptions {
            summary: false,
            ..ScanOptions::default()
        },
    );
    let mut v: Vec<Vec<u8>> = s
        .refs
        .iter()
        .filter(|r| {
            !matches!(
                r.kind,
                NodeKind::Cleanmarker | NodeKind::Summary | NodeKind::Padding
            )
        })
        .map(|r| {
            let b = &img[r.offset as usize..];
            let t = NodeHeader::decode(b, E, 0).unwrap().totlen as usize;
            b[..t].to_vec()
        })
        .collect();
    v.sort();
    v
}

/// The output is a valid summarised image: every block holding nodes is read through its
/// summary, the kernel logs nothing.
fn assert_all_summarized(out: &[u8], es: u32, cm: u32) {
    assert_eq!(out.len() % es as usize, 0);
    let s = scan::scan(
        &as_flashed(out, es),
        &Geometry {
            endian: E,
            erase_size: es,
            cleanmarker_size: cm,
        },
        &ScanOptions::default(),
    );
    assert!(s.log.is_empty(), "kernel log: {:?}", s.log);
    assert!(s.failure.is_none());
    for b in &s.blocks {
        if !matches!(b.class, BlockClass::Empty | BlockClass::Cleanmarker) {
            assert_eq!(b.summary, SummaryUse::Used, "block {:#x}", b.offset);
        }
    }
}

#[test]
fn every_block_summarized_nodes_kept_and_smaller_than_sumtool_rule() {
    for (es, cm) in [(8192u32, Some(12u32)), (16384, None), (0x2100, Some(16))] {
        let ns = nodes(60, 700);
        let img = plain(&ns, es, cm, EndPad::None);
        let (out, a, r) = run(&img, &cfg(es));
        assert_eq!(a.kept.len(), ns.len());
        assert!(a.rejected.is_empty());
        assert_eq!(r.cleanmarker, cm);
        assert_all_summarized(&out, es, cm.unwrap_or(12));
        assert_eq!(node_multiset(&img, es), node_multiset(&out, es));
        assert_eq!(r.stats.unsummarized_blocks, 0);
        assert_eq!(
            r.stats.summarized_blocks as usize,
            out.len() / es as usize,
            "{es}"
        );
    }
}

#[test]
fn idempotent_and_order_preserved() {
    let ns = nodes(40, 900);
    let img = plain(&ns, 8192, Some(12), EndPad::None);
    let (out, a, _) = run(&img, &cfg(8192));
    let (again, _, _) = run(&out, &cfg(8192));
    assert_eq!(out, again, "summarising a summarised image changes nothing");
    // Node order: the kept offsets are increasing, and so are the output positions.
    assert!(a.kept.windows(2).all(|w| w[0].offset < w[1].offset));
}

#[test]
fn padding_to_the_input_size_is_kept() {
    let ns = nodes(5, 300);
    // --pad=SIZE with cleanmarkers: whole blocks of cleanmarker + 0xFF.
    let img = plain(&ns, 8192, Some(12), EndPad::Size(8 * 8192));
    assert_eq!(img.len(), 8 * 8192);
    let (out, _, _) = run(&img, &cfg(8192));
    assert_eq!(out.len(), img.len());
    for b in 1..8 {
        let blk = &out[b * 8192..(b + 1) * 8192];
        assert_eq!(
            &blk[..12],
            &img[b * 8192..b * 8192 + 12],
            "cleanmarker of block {b}"
        );
        assert!(blk[12..].iter().all(|&c| c == 0xFF));
    }
    // Without cleanmarkers: exactly the input size.
    let img = plain(&ns, 8192, None, EndPad::Size(50_000));
    let (out, _, _) = run(&img, &cfg(8192));
    assert_eq!(out.len(), 50_000);
    // -p: whole blocks.
    let c = SumtoolConfig {
        pad: true,
        ..cfg(8192)
    };
    let (out, _, _) = run(&img, &c);
    assert_eq!(out.len(), 7 * 8192);
}

#[test]
fn single_block_image_gets_a_summary() {
    let ns = nodes(2, 100);
    let img = plain(&ns, 65536, Some(12), EndPad::None);
    assert!(img.len() < 1000);
    let (out, a, r) = run(&img, &cfg(65536));
    assert_eq!(a.kept.len(), 4);
    assert_eq!(out.len(), 65536);
    assert_eq!(r.stats.summarized_blocks, 1);
    assert_all_summarized(&out, 65536, 12);
}

#[test]
fn node_nearly_filling_a_block_gets_a_block_without_summary() {
    // 8 KiB blocks, a node of 8192 - 12 - 16 bytes: no room for a 58-byte summary.
    let es = 8192;
    let big = inode(2, 1, &noise(7, es as usize - 12 - 16 - 68));
    let ns = vec![
        dirent(1, 2, 0, b"big"),
        big.clone(),
        dirent(1, 3, 1, b"small"),
        inode(3, 1, b"x"),
    ];
    let img = plain(&ns, es, Some(12), EndPad::None);
    let (out, a, r) = run(&img, &cfg(es));
    assert_eq!(a.kept.len(), 4);
    assert_eq!(r.stats.unsummarized_blocks, 1);
    assert_eq!(node_multiset(&img, es), node_multiset(&out, es));
    let s = scan::scan(
        &as_flashed(&out, es),
        &Geometry {
            endian: E,
            erase_size: es,
            cleanmarker_size: 12,
        },
        &ScanOptions::default(),
    );
    assert!(s.log.is_empty(), "{:?}", s.log);
    let used = s
        .blocks
        .iter()
        .filter(|b| b.summary == SummaryUse::Used)
        .count();
    assert_eq!(
        used, 2,
        "the blocks before and after the big node are summarised"
    );
}

#[test]
fn obsolete_and_corrupt_nodes_are_dropped_superseded_kept() {
    let es = 8192;
    let mut ns = vec![
        dirent(1, 2, 0, b"a"),
        inode(2, 1, b"first"),
        inode(2, 2, b"second"),   // supersedes version 1: both kept
        dirent(1, 2, 5, b"a"),    // supersedes the dirent: both kept
        inode(2, 3, b"obsolete"), // ACCURATE cleared below
        inode(2, 4, b"bad crc"),  // data CRC broken below
    ];
    // Clear ACCURATE on node 4 (type 0xE002 -> 0xC002); CRCs stay as written.
    ns[4][2..4].copy_from_slice(&0xC002u16.to_le_bytes());
    let last = ns[5].len() - 1;
    ns[5][last] ^= 0xFF;
    let img = plain(&ns, es, Some(12), EndPad::None);
    let (out, a, _) = run(&img, &cfg(es));
    assert_eq!(a.kept.len(), 4);
    assert_eq!(a.rejected.len(), 1);
    assert_eq!(a.rejected[0].reason, RejectReason::DataCrc);
    let kept = node_multiset(&out, es);
    let mut want: Vec<Vec<u8>> = ns[..4].to_vec();
    want.sort();
    assert_eq!(
        kept, want,
        "obsolete node not resurrected, bad node dropped"
    );
    assert!(a
        .warnings
        .iter()
        .any(|w| matches!(w, Warning::Rejected { count: 1, .. })));
}

#[test]
fn stale_summary_hides_unlisted_nodes_as_the_kernel_does() {
    // A block with a valid summary that lists only the first node: the kernel never sees
    // the second, so it is not carried over.
    let es = 8192u32;
    let mut img = vec![0xFFu8; es as usize];
    let mut cm = Vec::new();
    encode_cleanmarker(E, 12, &mut cm);
    img[..12].copy_from_slice(&cm);
    let d1 = dirent(1, 2, 0, b"listed");
    let d2 = dirent(1, 3, 1, b"unlisted");
    img[12..12 + d1.len()].copy_from_slice(&d1);
    let o2 = 12 + pad4(d1.len() as u32) as usize;
    img[o2..o2 + d2.len()].copy_from_slice(&d2);
    let sum_at = pad4((o2 + d2.len()) as u32);
    let rec = record_for_test(&d1, 12);
    let mut s = Vec::new();
    SummaryNode {
        cln_mkr: 12,
        ..Default::default()
    }
    .encode(E, &[rec], sum_at, es, &mut s)
    .unwrap();
    img[sum_at as usize..].copy_from_slice(&s);
    let (out, a, _) = run(&img, &cfg(es));
    assert_eq!(a.kept.len(), 1);
    assert_eq!(node_multiset(&out, es), vec![d1]);
}

fn record_for_test(node: &[u8], at: u32) -> SumRecord {
    crate::layout::record_for(node, E, at).unwrap()
}

#[test]
fn wrong_erase_size_is_refused_and_force_reblocks() {
    let ns = nodes(200, 1500);
    let img = plain(&ns, 16384, Some(12), EndPad::None);
    let err = analyse(&img, &cfg(8192)).unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(
            err,
            SumtoolError::EraseSizeMismatch {
                detected: 16384,
                requested: 8192,
                ..
            }
        ),
        "{msg}"
    );
    assert!(msg.contains("16 KiB") && msg.contains("-e 0x4000"), "{msg}");
    let err = analyse(&img, &cfg(65536)).unwrap_err();
    assert!(matches!(err, SumtoolError::EraseSizeMismatch { .. }));
    // Forced: read with 16 KiB blocks, written with 8 KiB ones, nothing lost.
    let c = SumtoolConfig {
        force_erase_size: true,
        ..cfg(8192)
    };
    let (out, a, _) = run(&img, &c);
    assert!(a.warnings.iter().any(|w| matches!(
        w,
        Warning::Reblocking {
            from: 16384,
            to: 8192
        }
    )));
    assert_all_summarized(&out, 8192, 12);
    assert_eq!(node_multiset(&img, 16384), node_multiset(&out, 8192));
}

#[test]
fn wrong_byte_order_is_refused() {
    let ns = nodes(20, 200);
    let img = plain(&ns, 8192, Some(12), EndPad::None);
    let c = SumtoolConfig {
        endian: Endian::Big,
        ..cfg(8192)
    };
    let err = analyse(&img, &c).unwrap_err();
    assert!(
        matches!(
            err,
            SumtoolError::EndianMismatch {
                detected: Endian::Little,
                requested: Endian::Big,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("pass -l"), "{err}");
}

#[test]
fn cleanmarker_options() {
    let ns = nodes(10, 300);
    let img = plain(&ns, 8192, Some(16), EndPad::None);
    // Adopted from the input.
    let (_, _, r) = run(&img, &cfg(8192));
    assert_eq!(r.cleanmarker, Some(16));
    // -n
    let c = SumtoolConfig {
        cleanmarkers: Cleanmarkers::Off,
        ..cfg(8192)
    };
    let (out, _, r) = run(&img, &c);
    assert_eq!(r.cleanmarker, None);
    assert_ne!(E.get_u16(&out, 2), Some(0x2003));
    // -c on an input without cleanmarkers.
    let img = plain(&ns, 8192, None, EndPad::None);
    let (_, _, r) = run(&img, &cfg(8192));
    assert_eq!(r.cleanmarker, None);
    let c = SumtoolConfig {
        cleanmarkers: Cleanmarkers::Size(12),
        ..cfg(8192)
    };
    let (out, _, r) = run(&img, &c);
    assert_eq!(r.cleanmarker, Some(12));
    assert_eq!(E.get_u16(&out, 2), Some(0x2003));
    assert_all_summarized(&out, 8192, 12);
}

#[test]
fn unknown_nodes() {
    let es = 8192;
    // RWCOMPAT_COPY (0x4000 class): kept, in a block without a summary.
    let mut copy = Vec::new();
    let t = 0x6123u16; // ACCURATE | RWCOMPAT_COPY | 0x123
    E.put_u16(&mut copy, MAGIC);
    E.put_u16(&mut copy, t);
    E.put_u32(&mut copy, 20);
    let crc = crate::crc::crc32(&copy[..8]);
    E.put_u32(&mut copy, crc);
    copy.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
    let mut ns = nodes(3, 100);
    ns.insert(2, copy.clone());
    let img = plain(&ns, es, Some(12), EndPad::None);
    let (out, a, r) = run(&img, &cfg(es));
    assert_eq!(a.kept.len(), 7);
    assert!(r.stats.unsummarized_blocks >= 1);
    assert!(out.windows(copy.len()).any(|w| w == copy.as_slice()));
    let s = scan::scan(
        &as_flashed(&out, es),
        &Geometry {
            endian: E,
            erase_size: es,
            cleanmarker_size: 12,
        },
        &ScanOptions::default(),
    );
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(
        s.refs.iter().filter(|r| r.kind == NodeKind::Other).count(),
        1
    );
    // INCOMPAT: refused.
    let mut inc = copy.clone();
    inc[2..4].copy_from_slice(&0xE123u16.to_le_bytes());
    let crc = crate::crc::crc32(&inc[..8]);
    inc[8..12].copy_from_slice(&crc.to_le_bytes());
    let mut ns = nodes(3, 100);
    ns.insert(2, inc);
    let img = plain(&ns, es, Some(12), EndPad::None);
    assert!(matches!(
        analyse(&img, &cfg(es)),
        Err(SumtoolError::UnknownNode { incompat: true, .. })
    ));
}

#[test]
fn xattrs_are_summarized() {
    let es = 8192;
    let mut x = Vec::new();
    XattrNode {
        xid: 1,
        version: 1,
        xprefix: 1,
        ..Default::default()
    }
    .encode(E, b"name", b"value", &mut x);
    let mut r = Vec::new();
    XrefNode {
        ino: 2,
        xid: 1,
        xseqno: 2,
        ..Default::default()
    }
    .encode(E, &mut r);
    let mut ns = nodes(2, 100);
    ns.push(x);
    ns.push(r);
    let img = plain(&ns, es, Some(12), EndPad::None);
    let (out, a, _) = run(&img, &cfg(es));
    assert_eq!(a.kept.len(), 6);
    assert_all_summarized(&out, es, 12);
    assert_eq!(node_multiset(&img, es), node_multiset(&out, es));
}

#[test]
fn summary_marker_and_records() {
    let es = 8192u32;
    let ns = nodes(30, 500);
    let img = plain(&ns, es, Some(12), EndPad::None);
    let (out, _, _) = run(&img, &cfg(es));
    let mut total = 0;
    for blk in out.chunks(es as usize) {
        let n = blk.len();
        assert_eq!(E.get_u32(blk, n - 4), Some(SUM_MAGIC));
        let at = E.get_u32(blk, n - 8).unwrap() as usize;
        let h = NodeHeader::decode(&blk[at..], E, 0).unwrap();
        assert_eq!(h.nodetype, NODETYPE_SUMMARY);
        let sn = SummaryNode::decode(&blk[at..], E, 0).unwrap();
        assert!(sn.node_crc_ok(&blk[at..], E) && sn.sum_crc_ok(&blk[at..], h.totlen));
        total += sn.sum_num;
    }
    assert_eq!(total as usize, ns.len());
}

#[test]
fn empty_and_erased_inputs() {
    let (out, a, _) = run(&[], &cfg(65536));
    assert!(out.is_empty() && a.kept.is_empty());
    let ff = vec![0xFFu8; 5 * 8192];
    let (out, a, _) = run(&ff, &cfg(8192));
    assert_eq!(out.len(), ff.len());
    assert!(a.kept.is_empty());
}

#[test]
fn data_behind_a_free_looking_block_start_is_reported() {
    let es = 8192u32;
    let ns = nodes(3, 100);
    let mut img = plain(&ns, es, Some(12), EndPad::Size(3 * 8192));
    // A node 1 KiB into block 2, which starts with a cleanmarker and 0xFF: never read.
    let d = dirent(1, 9, 9, b"hidden");
    img[2 * 8192 + 1024..2 * 8192 + 1024 + d.len()].copy_from_slice(&d);
    let (_, a, _) = run(&img, &cfg(es));
    assert!(
        a.warnings
            .iter()
            .any(|w| matches!(w, Warning::UnreadData { blocks } if blocks == &[2 * 8192])),
        "{:?}",
        a.warnings
    );
    assert_eq!(a.kept.len(), 6);
}

#[test]
fn analyse_in_place_equals_analyse_of_bytes() {
    let ns = nodes(30, 700);
    let img = plain(&ns, 8192, None, EndPad::None);
    let c = cfg(8192);
    let (want, _, _) = run(&img, &c);
    let mut buf = img.clone();
    buf.resize(img.len() + 10 * 8192, 0);
    let a = analyse(ImageBytes::InPlace(&mut buf, img.len()), &c).unwrap();
    let padded = a.held_len;
    assert_eq!(padded % 8192, 0);
    let (got, _) = write(&buf[..padded], &a, &c, Vec::new()).unwrap();
    assert_eq!(got, want);
    let mut v = img.clone();
    let a = analyse(&mut v, &c).unwrap();
    assert_eq!(a.held_len, v.len());
    let (got, _) = write(&v, &a, &c, Vec::new()).unwrap();
    assert_eq!(got, want);
    let mut lines = 0;
    listing(&v, &a, &mut |_| lines += 1);
    assert!(lines > ns.len());
}

/// The analysis with the detection beside a scan in the requested geometry (inputs of
/// `SPECULATE_FROM` bytes on) equals the sequential one, whether the guess holds or not
/// (other cleanmarkers, another erase size either way, another byte order), in a buffer
/// padded in place as from bytes.
#[test]
fn speculating_analysis_equals_sequential() {
    let ns = nodes(1300, 3500);
    let cases = [
        (16384, None, cfg(16384)),
        (16384, Some(16), cfg(16384)),
        (
            16384,
            Some(12),
            SumtoolConfig {
                force_erase_size: true,
                ..cfg(8192)
            },
        ),
        (
            8192,
            None,
            SumtoolConfig {
                force_erase_size: true,
                ..cfg(65536)
            },
        ),
        (8192, None, cfg(65536)),
        (
            8192,
            None,
            SumtoolConfig {
                endian: Endian::Big,
                ..cfg(8192)
            },
        ),
    ];
    for (es, cm, c) in cases {
        let img = plain(&ns, es, cm, EndPad::None);
        assert!(img.len() >= SPECULATE_FROM);
        let seq = analyse_sequential(ImageBytes::Borrowed(&img), img.len(), &c, true);
        same_when_checked_while_writing(&img, &c);
        for room in [0, 64 << 10, 1 << 20] {
            let mut buf = img.clone();
            buf.resize(img.len() + room, 0);
            let got = analyse(ImageBytes::InPlace(&mut buf, img.len()), &c);
            let (want, got) = match (&seq, got) {
                (Ok(w), Ok(g)) => (w, g),
                (Err(w), Err(g)) => {
                    assert_eq!(w.to_string(), g.to_string());
                    continue;
                }
                (w, g) => panic!("{es} {cm:?} {c:?}: {w:?} / {g:?}"),
            };
            assert_eq!(format!("{:?}", got.scan), format!("{:?}", want.scan));
            assert_eq!(got.kept, want.kept);
            assert_eq!(got.rejected, want.rejected);
            assert_eq!(got.warnings, want.warnings);
            assert_eq!(got.input_geometry, want.input_geometry);
            let (a, _) = write(&buf[..got.held_len], &got, &c, Vec::new()).unwrap();
            let (b, _) = write(&img, want, &c, Vec::new()).unwrap();
            assert!(a == b, "{es} {cm:?} {c:?} room {room}: outputs differ");
            let (p, _) = write_piped(&img, want, &c, Vec::new()).unwrap();
            assert!(p == b, "{es} {cm:?} {c:?}: piped output differs");
        }
    }
}

#[test]
fn mkfs_summary_writer_equals_plain_then_summarize() {
    // The SummarizingWriter (jffs2-mkfs --summary) against plain + summarize.
    for (es, cm, pad) in [
        (8192u32, Some(12u32), EndPad::None),
        (8192, None, EndPad::Block),
        (16384, Some(12), EndPad::Size(200_000)),
        (16384, None, EndPad::Size(200_000)),
        (0x2100, Some(16), EndPad::None),
    ] {
        let ns = nodes(50, 1200);
        let lc = LayoutConfig {
            endian: E,
            erase_size: es,
            cleanmarker: cm,
            summary: true,
        };
        let mut w = SummarizingWriter::new(Vec::new(), lc);
        for n in &ns {
            w.prepare(n.len() as u32, 18).unwrap();
            w.write_node(n).unwrap();
        }
        let (one, len) = w.finish(pad).unwrap();
        assert_eq!(one.len() as u64, len);
        let img = plain(&ns, es, cm, pad);
        let (two, _, _) = run(&img, &cfg(es));
        assert_eq!(one, two, "{es} {cm:?} {pad:?}");
    }
}

#[test]
fn mutated_and_random_inputs_never_panic_and_outputs_stay_clean() {
    let ns = nodes(40, 600);
    let base = plain(&ns, 8192, Some(12), EndPad::None);
    let mut x = 0x9E37_79B9u32;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    for round in 0..300 {
        let mut img = base.clone();
        match round % 4 {
            0 => {
                for _ in 0..(1 + rnd() % 8) {
                    let i = rnd() as usize % img.len();
                    img[i] ^= 1 << (rnd() % 8);
                }
            }
            1 => img.truncate(rnd() as usize % img.len()),
            2 => {
                // A header with a valid CRC and a wild totlen.
                let at = (rnd() as usize % (img.len() / 4)) * 4;
                let mut h = Vec::new();
                E.put_u16(&mut h, MAGIC);
                E.put_u16(
                    &mut h,
                    [0xE001u16, 0xE002, 0x2003, 0x2006, 0xE008][rnd() as usize % 5],
                );
                E.put_u32(
                    &mut h,
                    [0, 4, 0xFFFF_FFFF, 0xFFFF_FFFC, rnd()][rnd() as usize % 5],
                );
                let crc = crate::crc::crc32(&h);
                E.put_u32(&mut h, crc);
                let end = (at + 12).min(img.len());
                img[at..end].copy_from_slice(&h[..end - at]);
            }
            _ => img = noise(round, 20_000 + (rnd() as usize % 50_000)),
        }
        for c in [
            cfg(8192),
            SumtoolConfig {
                force_erase_size: true,
                ..cfg(8192)
            },
        ] {
            same_when_checked_while_writing(&img, &c);
            if let Ok((out, a, _)) = summarize(&img, &c, Vec::new()) {
                assert!(
                    out.len() as u64 >= a.input_len,
                    "round {round}: output shorter than input"
                );
                if a.input_geometry.erase_size == 8192 {
                    let s = scan::scan(
                        &as_flashed(&out, 8192),
                        &Geometry {
                            endian: E,
                            erase_size: 8192,
                            cleanmarker_size: 12,
                        },
                        &ScanOptions::default(),
                    );
                    assert!(s.log.is_empty(), "round {round}: {:?}", s.log);
                }
                let mut n = 0;
                listing(&img, &a, &mut |_| n += 1);
                assert!(n > 0);
            }
        }
    }
}
