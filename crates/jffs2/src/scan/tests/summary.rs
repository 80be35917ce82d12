//! The erase-block summary path (`docs/spec/kernel-jffs2-spec.md` §4, §9.3, §10.5).

use super::*;
use crate::format::{NodeKind, SumRecord, SUM_MAGIC};
use crate::scan::{BlockClass, DirtCause, MountFailure, RefState, ScanOptions, SummaryUse};

const LE: Endian = Endian::Little;
const ES: u32 = 4096;

/// Writes a summary node at `at` in block `blk` running to the block end: header, the raw
/// `records`, 0xFF, the marker; every CRC valid.
fn put_summary(f: &mut Flash, blk: u32, at: u32, sum_num: u32, cln_mkr: u32, records: &[u8]) {
    let e = f.e;
    let totlen = f.es - at;
    let mut v = Vec::new();
    e.put_u16(&mut v, 0x1985);
    e.put_u16(&mut v, 0x2006);
    e.put_u32(&mut v, totlen);
    let h = crc32(&v);
    e.put_u32(&mut v, h);
    e.put_u32(&mut v, sum_num);
    e.put_u32(&mut v, cln_mkr);
    e.put_u32(&mut v, 0);
    e.put_u32(&mut v, 0);
    e.put_u32(&mut v, 0);
    v.extend_from_slice(records);
    v.resize(totlen as usize - 8, 0xFF);
    e.put_u32(&mut v, at);
    e.put_u32(&mut v, SUM_MAGIC);
    let sc = crc32(&v[32..]);
    v[24..28].copy_from_slice(&e.u32_bytes(sc));
    let nc = crc32(&v[..24]);
    v[28..32].copy_from_slice(&e.u32_bytes(nc));
    f.put(blk * f.es + at, &v);
}

fn rec(r: SumRecord) -> Vec<u8> {
    let mut v = Vec::new();
    r.encode(LE, &mut v);
    v
}

fn dirent_rec(offset: u32, name: &[u8]) -> Vec<u8> {
    rec(SumRecord::Dirent {
        nodetype: 0xE001,
        totlen: 40 + name.len() as u32,
        offset,
        pino: 1,
        version: 1,
        ino: 2,
        dtype: 8,
        name: name.to_vec(),
    })
}

fn inode_rec(offset: u32, totlen: u32) -> Vec<u8> {
    rec(SumRecord::Inode {
        nodetype: 0xE002,
        inode: 2,
        version: 1,
        offset,
        totlen,
    })
}

/// Block 0: cleanmarker, dirent "file" at 12 (44 bytes), inode at 56 (168 bytes, ends at
/// 224); no summary yet. Block 4 holds a valid node (so the mount is never refused).
fn base() -> Flash {
    let mut f = erased(LE, ES, 5);
    f.put(0, &cleanmarker(LE));
    f.put(12, &dirent(LE, 1, 2, 1, b"file"));
    f.put(56, &inode(LE, 2, 1, &[9; 100]));
    f.put(4 * ES, &inode(LE, 100, 1, b"anchor"));
    f
}

fn both_records() -> Vec<u8> {
    let mut r = dirent_rec(12, b"file");
    r.extend(inode_rec(56, 168));
    r
}

#[test]
fn valid_summary_is_trusted() {
    let mut f = base();
    put_summary(&mut f, 0, 224, 2, 12, &both_records());
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    let b = &s.blocks[0];
    assert_eq!(b.summary, SummaryUse::Used);
    // Only the summary is read: the marker, then the rest of the summary.
    assert_eq!(b.bytes_read, ES - 224);
    assert_eq!(b.class, BlockClass::Clean);
    assert_eq!((b.used, b.unchecked, b.free), (12 + ES - 224, 44 + 168, 0));
    let kinds: Vec<(NodeKind, RefState, u32)> = s.refs[..4]
        .iter()
        .map(|r| (r.kind, r.state, r.len))
        .collect();
    assert_eq!(
        kinds,
        vec![
            (NodeKind::Cleanmarker, RefState::Normal, 12),
            // Summary dirents are REF_UNCHECKED in mainline (§4.3, §12).
            (NodeKind::Dirent, RefState::Unchecked, 44),
            (NodeKind::Inode, RefState::Unchecked, 168),
            (NodeKind::Summary, RefState::Normal, ES - 224),
        ]
    );
    assert!(s.refs[..4].iter().all(|r| r.from_summary));
    assert_eq!(s.inodes[&1].scan_dents[0].name, b"file");
    assert_eq!(s.inodes[&2].nodes, vec![2]);

    // A kernel without CONFIG_JFFS2_SUMMARY scans the block and deletes the summary node.
    let s = f.scan_with(
        12,
        ScanOptions {
            summary: false,
            ..Default::default()
        },
    );
    assert!(s.log.is_empty());
    assert_eq!(s.refs[1].state, RefState::Pristine);
    assert!(s
        .dirt
        .iter()
        .any(|d| d.cause == DirtCause::Unknown && d.offset == 224));
    // The summary node is skipped by its totlen: only the first 256 bytes were read.
    assert_eq!(s.blocks[0].bytes_read, 256);
}

#[test]
fn unlisted_nodes_are_gaps() {
    let mut f = base();
    put_summary(&mut f, 0, 224, 1, 12, &inode_rec(56, 168));
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.blocks[0].summary, SummaryUse::Used);
    // The valid dirent is invisible: dirt (§4.4).
    assert!(!s.inodes.contains_key(&1));
    assert_eq!(s.dirt[0].cause, DirtCause::SummaryGap);
    assert_eq!((s.dirt[0].offset, s.dirt[0].len), (12, 44));
    // CLEAN: all dirt is counted as wasted.
    assert_eq!(s.blocks[0].wasted, 44);
}

#[test]
fn no_cleanmarker_in_summary() {
    let mut f = base();
    put_summary(&mut f, 0, 224, 2, 0, &both_records());
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.refs[0].kind, NodeKind::Dirent);
    assert_eq!((s.dirt[0].offset, s.dirt[0].len), (0, 12));
}

#[test]
fn corrupt_summary_falls_back_to_full_scan() {
    let mut f = base();
    put_summary(&mut f, 0, 224, 2, 12, &both_records());
    f.put(1000, &[0]); // in the 0xFF padding covered by sum_crc
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "warning: (<pid>) jffs2_sum_scan_sumnode: Summary node crc error, skipping summary information."
                .to_string()
        ]
    );
    assert!(matches!(s.blocks[0].summary, SummaryUse::Rejected(_)));
    assert!(s.refs.iter().all(|r| !r.from_summary));
    assert_eq!(s.refs[1].state, RefState::Pristine);
    // Every bit flip inside the summary is caught.
    for i in 224..ES as usize {
        let mut g = base();
        put_summary(&mut g, 0, 224, 2, 12, &both_records());
        let flipped = g.build()[i] ^ 0x10;
        g.put(i as u32, &[flipped]);
        let s = g.scan();
        assert_ne!(s.blocks[0].summary, SummaryUse::Used, "flip at {i}");
    }
}

#[test]
fn wrong_erase_size_rejects_summaries() {
    // §10.5: an image with 4 KiB blocks mounted with 8 KiB blocks.
    let mut f = erased(LE, ES, 10);
    for blk in [0, 1] {
        let o = blk * ES;
        f.put(o, &cleanmarker(LE));
        f.put(o + 12, &dirent(LE, 1, 2 + blk, 1, b"file"));
        f.put(o + 56, &inode(LE, 2 + blk, 1, &[9; 100]));
        let mut r = dirent_rec(12, b"file");
        r.extend(inode_rec(56, 168));
        put_summary(&mut f, blk, 224, 2, 12, &r);
    }
    let s = scan(
        &f.build(),
        &Geometry {
            endian: LE,
            erase_size: 2 * ES,
            cleanmarker_size: 12,
        },
        &ScanOptions::default(),
    );
    let t = texts(&s);
    assert_eq!(
        t,
        vec![
            "warning: (<pid>) jffs2_sum_scan_sumnode: Summary node crc error, skipping summary information."
                .to_string(),
            "CLEANMARKER node found at 0x00001000, not first node in block (0x00000000)".to_string(),
        ]
    );
    assert_eq!(s.failure, None);
    // Both dirents are there (as full-scan refs), the inner summary is dirt.
    assert_eq!(s.inodes[&1].scan_dents.len(), 1); // same name: the later one won
    assert!(s.dirt.iter().any(|d| d.cause == DirtCause::Unknown));
}

#[test]
fn dirent_record_with_zero_at_start_aborts() {
    let mut f = base();
    let mut r = dirent_rec(12, b"\0ile");
    r.extend(inode_rec(56, 168));
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec!["Dirent at 0000000c has zero at start of name. Aborting mount.".to_string()]
    );
    assert!(matches!(&s.failure, Some(MountFailure::Other(m)) if m.contains("zero at start")));
    // Scanned on for the tools: the block was fully scanned.
    assert!(matches!(s.blocks[0].summary, SummaryUse::Rejected(_)));
    assert!(s.refs.iter().all(|r| !r.from_summary));
}

#[test]
fn dirent_record_with_zeroes_is_truncated() {
    let mut f = base();
    let mut r = dirent_rec(12, b"fi\0e");
    r.extend(inode_rec(56, 168));
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec!["Dirent at 0000000c has zeroes in name. Truncating to 2 chars".to_string()]
    );
    assert_eq!(s.inodes[&1].scan_dents[0].name, b"fi");
    assert_eq!(s.blocks[0].summary, SummaryUse::Used);
}

#[test]
fn unsupported_compatible_record_falls_back() {
    // First record: nothing was linked, the kernel falls back to a full scan cleanly.
    let mut f = base();
    let mut r = 0x2005u16.to_le_bytes().to_vec();
    r.extend(inode_rec(56, 168));
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "warning: (<pid>) jffs2_sum_process_sum_data: Unsupported node type 2005 found in summary! Exiting..."
                .to_string()
        ]
    );
    assert_eq!(s.failure, None);
    assert!(matches!(s.blocks[0].summary, SummaryUse::Rejected(_)));
    // The full scan found everything, once.
    assert!(s.refs.iter().all(|r| !r.from_summary));
    assert_eq!(s.inodes[&2].nodes.len(), 1);
    assert_eq!(s.inodes[&1].scan_dents.len(), 1);

    // After other records: the kernel keeps freed refs on its lists and crashes.
    let mut f = base();
    let mut r = inode_rec(56, 168);
    r.extend_from_slice(&0x2005u16.to_le_bytes());
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert_eq!(s.log.len(), 1);
    assert!(matches!(&s.failure, Some(MountFailure::Other(m)) if m.contains("use-after-free")));
    // The tools still get the block fully scanned, each node once.
    assert_eq!(s.inodes[&2].nodes.len(), 1);
}

#[test]
fn unsupported_incompat_record_fails() {
    let mut f = base();
    let mut r = inode_rec(56, 168);
    r.extend_from_slice(&0xE00Au16.to_le_bytes());
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "warning: (<pid>) jffs2_sum_process_sum_data: Unsupported node type e00a found in summary! Exiting..."
                .to_string()
        ]
    );
    assert!(matches!(s.failure, Some(MountFailure::Other(_))));
    // Without xattr support an xattr record is the same (§9).
    let mut f = base();
    let r = rec(SumRecord::Xref {
        nodetype: 0xE009,
        offset: 12,
    });
    put_summary(&mut f, 0, 224, 1, 12, &r);
    let s = f.scan_with(
        12,
        ScanOptions {
            xattr: false,
            ..Default::default()
        },
    );
    assert!(s.log[0]
        .text
        .contains("Unsupported node type e009 found in summary"));
    assert!(s.failure.is_some());
}

#[test]
fn sum_num_too_large_reads_the_padding() {
    // The record after the last one starts in the 0xFF padding: type 0xffff, INCOMPAT.
    let mut f = base();
    put_summary(&mut f, 0, 224, 3, 12, &both_records());
    let s = f.scan();
    assert!(s.log[0]
        .text
        .contains("Unsupported node type ffff found in summary! Exiting..."));
    assert!(s.failure.is_some());
    // A huge sum_num is the same (and terminates).
    let mut f = base();
    put_summary(&mut f, 0, 224, u32::MAX, 12, &both_records());
    let s = f.scan();
    assert!(s.failure.is_some());
}

#[test]
fn records_out_of_order_crash_the_kernel() {
    let mut f = base();
    let mut r = inode_rec(56, 168);
    r.extend(dirent_rec(12, b"file"));
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "error: (<pid>) jffs2_link_node_ref: Adding new ref <ptr> at (0x0000000c-0x00000038) not immediately after previous (0x00000038-0x000000e0)"
                .to_string()
        ]
    );
    assert!(matches!(&s.failure, Some(MountFailure::Other(m)) if m.starts_with("kernel BUG")));
    assert!(matches!(s.blocks[0].summary, SummaryUse::Rejected(_)));
    // Rolled back, then fully scanned: each node once.
    assert_eq!(
        s.refs.iter().filter(|r| r.kind == NodeKind::Dirent).count(),
        1
    );
}

#[test]
fn record_beyond_the_summary_start_crashes_the_kernel() {
    let mut f = base();
    put_summary(&mut f, 0, 224, 1, 12, &inode_rec(1000, 168));
    let s = f.scan();
    assert!(s.log[0].text.contains("not immediately after previous"));
    assert!(s.failure.is_some());
}

#[test]
fn misaligned_offsets() {
    // A record offset +2 turns REF_UNCHECKED into REF_PRISTINE (§4.4).
    let mut f = base();
    let mut r = dirent_rec(12, b"file");
    r.extend(inode_rec(58, 168));
    put_summary(&mut f, 0, 224, 2, 12, &r);
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(s.refs[2].offset, 56);
    assert_eq!(s.refs[2].state, RefState::Pristine);
    // A summary at an unaligned offset leaves 1 byte "free": warned and wasted.
    let mut f = base();
    put_summary(&mut f, 0, 225, 2, 12, &both_records());
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "warning: (<pid>) jffs2_sum_scan_sumnode: Free size 0x1 bytes in eraseblock @0x00000000 with summary?"
                .to_string()
        ]
    );
    assert_eq!(s.blocks[0].free, 0);
    assert_eq!(s.blocks[0].summary, SummaryUse::Used);
}

#[test]
fn marker_offset_beyond_the_block() {
    let mut f = base();
    let end = ES as usize;
    f.put((end - 8) as u32, &(ES + 16).to_le_bytes());
    f.put((end - 4) as u32, &SUM_MAGIC.to_le_bytes());
    let s = f.scan();
    // Full scan: the 0xFF run stops at the marker, whose 8 bytes are too few for a node.
    assert_eq!(
        texts(&s),
        vec!["Empty flash at 0x000000e0 ends at 0x00000ff8".to_string()]
    );
    assert!(matches!(s.blocks[0].summary, SummaryUse::Rejected(_)));
    assert_eq!(s.refs[1].state, RefState::Pristine);
    assert_eq!(s.dirt.last().map(|d| d.cause), Some(DirtCause::BlockTail));
}

#[test]
fn xattr_records() {
    let mut f = base();
    let x = xattr(LE, 4, 1, b"n", b"v");
    let xr = xref(LE, 2, 4, 2);
    f.put(224, &x);
    f.put(260, &xr);
    let mut r = both_records();
    r.extend(rec(SumRecord::Xattr {
        nodetype: 0xE008,
        xid: 4,
        version: 1,
        offset: 224,
        totlen: 36,
    }));
    r.extend(rec(SumRecord::Xref {
        nodetype: 0xE009,
        offset: 260,
    }));
    put_summary(&mut f, 0, 288, 4, 12, &r);
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(s.xattr_datums.len(), 1);
    assert_eq!(s.xattr_refs.len(), 1);
    assert_eq!(s.xattr_refs[0].ino, None);
    let xr = &s.refs[s.xattr_refs[0].node];
    assert_eq!(
        (xr.offset, xr.len, xr.state),
        (260, 28, RefState::Unchecked)
    );
    assert_eq!(s.highest_xid, 4);
}
