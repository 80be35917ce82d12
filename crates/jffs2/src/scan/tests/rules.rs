//! One test per rule of the full scan (`docs/spec/kernel-jffs2-spec.md` §2, §3, §5.2, §7.1, §9.1–9.2).

use super::*;
use crate::format::NodeKind;
use crate::scan::{
    BlockClass, BlockList, DirtCause, Level, MountFailure, RefState, ScanOptions, SummaryUse,
};

const LE: Endian = Endian::Little;
const ES: u32 = 4096;

/// Five erased blocks.
fn bare() -> Flash {
    erased(LE, ES, 5)
}

/// Five erased blocks, with one valid inode node at the start of the last block so that the
/// mount is not refused for lack of valid nodes (§3.1 "Cowardly refusing").
fn flash() -> Flash {
    let mut f = bare();
    f.put(4 * ES, &inode(LE, 100, 1, b"anchor"));
    f
}

#[test]
fn erased_flash_is_empty_and_mounts() {
    let s = bare().scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(s.failure, None);
    for b in &s.blocks {
        assert_eq!(b.class, BlockClass::Empty);
        assert_eq!(b.list, BlockList::ErasePending);
        assert_eq!(b.free, ES);
        // §3.2 C: the 8-byte marker, then EMPTY_SCAN_SIZE = 256 bytes only.
        assert_eq!(b.bytes_read, 8 + 256);
        assert_eq!(b.summary, SummaryUse::None);
    }
    // Without summaries the marker is not read.
    let s = bare().scan_with(
        12,
        ScanOptions {
            summary: false,
            ..Default::default()
        },
    );
    assert!(s.blocks.iter().all(|b| b.bytes_read == 256));
    assert_eq!(s.flash_size, 5 * ES);
}

#[test]
fn erased_block_without_cleanmarkers_is_free() {
    // §3.2 C: cleanmarker_size == 0 → CLEANMARKER ("don't bother with re-erase").
    let s = bare().scan_with(0, ScanOptions::default());
    assert!(s
        .blocks
        .iter()
        .all(|b| b.class == BlockClass::Cleanmarker && b.list == BlockList::Free));
    assert_eq!(s.failure, None);
}

#[test]
fn cleanmarker_only_block_is_free() {
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    let s = f.scan();
    assert!(s.log.is_empty());
    let b = &s.blocks[0];
    assert_eq!(b.class, BlockClass::Cleanmarker);
    assert_eq!(b.list, BlockList::Free);
    assert_eq!((b.used, b.dirty, b.free), (12, 0, ES - 12));
    assert_eq!(b.refs, 0..1);
    assert_eq!(s.refs[0].kind, NodeKind::Cleanmarker);
    assert_eq!(s.refs[0].state, RefState::Normal);
    assert_eq!(s.refs[0].len, 12);
    assert_eq!(b.bytes_read, 8 + 256);
}

#[test]
fn cleanmarker_shortcut_ignores_data_after_byte_31() {
    // §3.2 D.5: 0xFF at 12..31 after a lone cleanmarker: free, unread beyond.
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    f.put(64, &inode(LE, 5, 1, b"hidden"));
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.blocks[0].class, BlockClass::Cleanmarker);
    assert_eq!(s.refs.len(), 1);
    assert!(!s.inodes.contains_key(&5));
}

#[test]
fn empty_flash_ends_message() {
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    f.put(20, &inode(LE, 5, 1, b"data"));
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec!["Empty flash at 0x0000000c ends at 0x00000014".to_string()]
    );
    assert_eq!(s.log[0].level, Level::Warning);
    assert_eq!(s.dirt[0].cause, DirtCause::Erased);
    assert_eq!((s.dirt[0].offset, s.dirt[0].len), (12, 8));
    assert!(s.inodes.contains_key(&5));
}

#[test]
fn leading_ff_becomes_dirt_silently() {
    // §3.2 C: fewer than 256 leading 0xFF bytes are dirt (debug message only).
    let mut f = bare();
    f.put(ES + 100, &inode(LE, 7, 1, b"x"));
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(s.blocks[1].dirty + s.blocks[1].wasted, 100);
    assert_eq!(s.dirt[0].offset, ES);
    assert_eq!(s.dirt[0].len, 100);
    // 256 or more leading 0xFF bytes: the block is declared empty.
    let mut f = bare();
    f.put(ES + 256, &inode(LE, 7, 1, b"x"));
    let s = f.scan();
    assert_eq!(s.blocks[1].class, BlockClass::Empty);
    assert!(!s.inodes.contains_key(&7));
}

#[test]
fn cleanmarker_of_wrong_size() {
    let mut f = flash();
    f.put(0, &cleanmarker(LE));
    // An ECC NOR kernel wants 16 bytes.
    let s = f.scan_with(16, ScanOptions::default());
    assert_eq!(
        texts(&s),
        vec!["CLEANMARKER node found at 0x00000000 has totlen 0xc != normal 0x10".to_string()]
    );
    assert_eq!(s.blocks[0].class, BlockClass::AllDirty);
    assert_eq!(s.blocks[0].dirty, 12);
    assert_eq!(s.dirt[0].cause, DirtCause::CleanmarkerSize);
    // NAND (cleanmarker size 0): every in-band cleanmarker is of the wrong size (§10.2).
    let s = f.scan_with(0, ScanOptions::default());
    assert_eq!(
        texts(&s),
        vec!["CLEANMARKER node found at 0x00000000 has totlen 0xc != normal 0x0".to_string()]
    );
    assert_eq!(s.blocks[0].class, BlockClass::AllDirty);
    assert_eq!(s.blocks[0].list, BlockList::ErasePending);
}

#[test]
fn cleanmarker_not_first() {
    let mut f = flash();
    let n = inode(LE, 5, 1, b"abcd");
    f.put(0, &n);
    f.put(n.len() as u32, &cleanmarker(LE));
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![format!(
            "CLEANMARKER node found at 0x{:08x}, not first node in block (0x00000000)",
            n.len()
        )]
    );
    assert_eq!(s.dirt[0].cause, DirtCause::CleanmarkerNotFirst);
    // Dirt before it counts as a ref too.
    let mut f = flash();
    f.put(0, &[0, 0, 0, 0]);
    f.put(4, &cleanmarker(LE));
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "CLEANMARKER node found at 0x00000004, not first node in block (0x00000000)"
                .to_string()
        ]
    );
}

#[test]
fn bad_magic_is_rate_limited() {
    let mut f = flash();
    f.put(ES, &[0x11; 200]);
    let s = f.scan();
    let t = texts(&s);
    assert_eq!(t.len(), 11, "{t:?}");
    assert_eq!(
        t[0],
        "jffs2_scan_eraseblock(): Magic bitmask 0x1985 not found at 0x00001000: 0x1111 instead"
    );
    assert_eq!(
        t[10],
        "Further such events for this erase block will not be printed"
    );
    assert!(s.log[..11].iter().all(|m| m.level == Level::Notice));
    assert_eq!(s.blocks[1].dirty, 200);
    assert_eq!(s.blocks[1].class, BlockClass::AllDirty);
    // The counter restarts for every block.
    f.put(2 * ES, &[0x11; 8]);
    let s = f.scan();
    assert_eq!(s.log.len(), 13);
}

#[test]
fn zero_words_are_silent_dirt() {
    let mut f = flash();
    f.put(ES, &[0; 64]);
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.blocks[1].dirty, 64);
    assert_eq!(s.dirt[0].cause, DirtCause::ZeroWord);
}

#[test]
fn old_magic() {
    let mut f = flash();
    f.put(ES, &[0x84, 0x19, 0x03, 0x20]);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "Old JFFS2 bitmask found at 0x00001000".to_string(),
            "You cannot use older JFFS2 filesystems with newer kernels".to_string()
        ]
    );
    assert!(s.log.iter().all(|m| m.level == Level::Warning));
}

#[test]
fn swapped_magic_only_at_block_start() {
    let mut f = flash();
    f.put(ES, &cleanmarker(Endian::Big));
    let s = f.scan();
    assert_eq!(
        s.log[0].text,
        "Magic bitmask is backwards at offset 0x00001000. Wrong endian filesystem?"
    );
    let mut f = flash();
    f.put(ES, &[0, 0, 0, 0]);
    f.put(ES + 4, &[0x19, 0x85, 0x20, 0x03]);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec![
            "jffs2_scan_eraseblock(): Magic bitmask 0x1985 not found at 0x00001004: 0x8519 instead"
                .to_string()
        ]
    );
}

#[test]
fn header_crc_with_accurate_bit_forced() {
    // An obsoleted node keeps its CRC: accepted, skipped as dirt, no message (§3.2 D.10, D.12).
    let mut f = flash();
    let mut n = inode(LE, 5, 1, b"old data");
    n[3] &= !0x20; // 0xE002 -> 0xC002 (LE: high byte at index 3)
    f.put(0, &cleanmarker(LE));
    f.put(12, &n);
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert!(!s.inodes.contains_key(&5));
    assert_eq!(s.dirt[0].cause, DirtCause::Obsolete);
    assert_eq!(s.dirt[0].len, n.len() as u32);
    // A wrong header CRC: rate-limited notice, 4 bytes of dirt, resync inside the node.
    let mut f = flash();
    let mut n = inode(LE, 5, 1, b"data");
    n[8] ^= 1;
    f.put(0, &n);
    let s = f.scan();
    let stored = u32::from_le_bytes([n[8], n[9], n[10], n[11]]);
    let calc = stored ^ 1;
    assert_eq!(
        s.log[0].text,
        format!(
            "jffs2_scan_eraseblock(): Node at 0x00000000 {{0x1985, 0xe002, 0x{:08x}) has invalid CRC 0x{stored:08x} (calculated 0x{calc:08x})",
            68 + 4
        )
    );
    assert_eq!(s.dirt[0].cause, DirtCause::HeaderCrc);
}

#[test]
fn node_running_over_the_block_end() {
    let mut f = flash();
    f.put(0, &cleanmarker(LE));
    let n = inode(LE, 5, 1, &[0x55; 200]);
    let at = ES - 100;
    f.put(12, &dirent(LE, 1, 5, 1, b"f"));
    f.put(at, &n[..100]);
    let s = f.scan();
    let t = texts(&s);
    assert_eq!(
        t[1],
        format!(
            "Node at 0x{at:08x} with length 0x{:08x} would run over the end of the erase block",
            268
        )
    );
    assert_eq!(
        t[2],
        "Perhaps the file system was created with the wrong erase size?"
    );
    assert_eq!(
        t[0],
        format!("Empty flash at 0x{:08x} ends at 0x{at:08x}", 12 + 44)
    );
    assert!(s.dirt.iter().any(|d| d.cause == DirtCause::CrossesBlockEnd));
    assert!(!s.inodes.contains_key(&5));
}

#[test]
fn inode_node_crc_failure() {
    let mut f = flash();
    let mut n = inode(LE, 5, 1, b"data");
    n[20] ^= 0xFF; // mode
    f.put(0, &n);
    let s = f.scan();
    let stored = u32::from_le_bytes([n[64], n[65], n[66], n[67]]);
    let calc = crc32(&n[..60]);
    assert_eq!(
        texts(&s),
        vec![format!(
            "jffs2_scan_inode_node(): CRC failed on node at 0x00000000: Read 0x{stored:08x}, calculated 0x{calc:08x}"
        )]
    );
    assert_eq!(s.dirt[0].cause, DirtCause::NodeCrc);
    assert_eq!(s.dirt[0].len, n.len() as u32);
    assert!(s.blocks[0].refs.is_empty());
}

#[test]
fn inode_linked_unchecked_data_crc_not_checked() {
    let mut f = bare();
    let mut n = inode(LE, 9, 3, b"payload!");
    n[68] ^= 0xFF; // data byte: data_crc is not checked by the scan
    f.put(0, &n);
    let s = f.scan();
    assert!(s.log.is_empty());
    let r = &s.refs[0];
    assert_eq!(
        (r.kind, r.state, r.len, r.ino),
        (NodeKind::Inode, RefState::Unchecked, 76, Some(9))
    );
    assert_eq!(s.blocks[0].unchecked, 76);
    assert_eq!(s.inodes[&9].nodes, vec![0]);
    assert_eq!(s.highest_ino, 9);
    assert_eq!(s.pseudo_random, 3);
}

#[test]
fn dirent_checks() {
    // Node CRC.
    let mut f = flash();
    let mut d = dirent(LE, 1, 5, 1, b"name");
    d[20] ^= 1;
    f.put(0, &d);
    let s = f.scan();
    let stored = u32::from_le_bytes([d[32], d[33], d[34], d[35]]);
    assert_eq!(
        texts(&s),
        vec![format!(
            "jffs2_scan_dirent_node(): Node CRC failed on node at 0x00000000: Read 0x{stored:08x}, calculated 0x{:08x}",
            crc32(&d[..32])
        )]
    );
    // Name CRC.
    let mut f = flash();
    let mut d = dirent(LE, 1, 5, 1, b"name");
    d[41] ^= 1;
    f.put(0, &d);
    let s = f.scan();
    let stored = u32::from_le_bytes([d[36], d[37], d[38], d[39]]);
    assert_eq!(
        texts(&s),
        vec![format!(
            "jffs2_scan_dirent_node(): Name CRC failed on node at 0x00000000: Read 0x{stored:08x}, calculated 0x{:08x}",
            crc32(&d[40..44])
        )]
    );
    assert_eq!(s.dirt[0].cause, DirtCause::NameCrc);
}

#[test]
fn dirent_zeroes_in_name() {
    // The writer's name CRC covers all nsize bytes: truncation makes it fail.
    let mut f = flash();
    f.put(0, &dirent(LE, 1, 5, 1, b"ab\0cd"));
    let s = f.scan();
    assert_eq!(
        s.log[0].text,
        "Dirent at 00000000 has zeroes in name. Truncating to 2 chars"
    );
    assert_eq!(s.log[0].level, Level::Err);
    assert!(s.log[1]
        .text
        .starts_with("jffs2_scan_dirent_node(): Name CRC failed"));
    // A name CRC over the truncated name passes: the dirent is kept as "ab".
    let mut d = dirent(LE, 1, 5, 1, b"ab\0cd");
    let c = crc32(b"ab");
    d[36..40].copy_from_slice(&c.to_le_bytes());
    let mut f = flash();
    f.put(0, &d);
    let s = f.scan();
    assert_eq!(texts(&s).len(), 1);
    assert_eq!(s.inodes[&1].scan_dents[0].name, b"ab");
}

#[test]
fn dirent_states_and_dedupe() {
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    let d1 = dirent(LE, 1, 5, 1, b"f");
    let d2 = dirent(LE, 1, 6, 2, b"f");
    let d3 = dirent(LE, 1, 0, 3, b"g"); // deletion dirent
    let d4 = dirent(LE, 1, 7, 3, b"g");
    let mut at = 12;
    for d in [&d1, &d2, &d3, &d4] {
        f.put(at, d);
        at += d.len() as u32;
    }
    let s = f.scan();
    assert!(s.log.is_empty());
    // d1 loses to the newer d2; d3 and d4 have equal versions: the later one wins.
    assert_eq!(s.refs[1].state, RefState::Obsolete);
    assert_eq!(s.refs[2].state, RefState::Pristine);
    assert_eq!(s.refs[3].state, RefState::Obsolete);
    assert_eq!(s.refs[4].state, RefState::Pristine);
    let dents = &s.inodes[&1].scan_dents;
    assert_eq!(dents.len(), 2);
    let f_ = dents.iter().find(|d| d.name == b"f").unwrap();
    assert_eq!((f_.ino, f_.node), (6, 2));
    // Obsoleted during the scan: wasted first, moved to dirty at the block's end (§3.4).
    let b = &s.blocks[0];
    assert_eq!(b.dirty + b.wasted, 2 * 44);
    assert_eq!(b.used, 12 + 2 * 44);
    assert_eq!(s.inodes[&1].nodes, vec![1, 2, 3, 4]);
    // A deletion dirent alone is REF_NORMAL.
    let mut f = bare();
    f.put(0, &d3);
    let s = f.scan();
    assert_eq!(s.refs[0].state, RefState::Normal);
    assert_eq!(s.inodes[&1].scan_dents[0].ino, 0);
}

#[test]
fn ino_zero_phantoms() {
    // §3.3: each ino-0 node gets a fresh cache numbered ++highest_ino.
    let mut f = bare();
    let a = inode(LE, 5, 1, b"a");
    let z = inode(LE, 0, 1, b"z");
    let d = dirent(LE, 0, 5, 1, b"p");
    let r = inode(LE, 7, 1, b"r");
    let mut at = 0;
    for n in [&a, &z, &d, &z, &r] {
        f.put(at, n);
        at += n.len() as u32;
    }
    let s = f.scan();
    assert!(s.log.is_empty());
    let inos: Vec<u32> = s.inodes.keys().copied().collect();
    assert_eq!(inos, vec![5, 6, 7, 8]);
    // ino 7 was created as a phantom (the dirent's pino 0), then the real inode 7 joined it.
    assert_eq!(s.inodes[&7].nodes, vec![2, 4]);
    assert_eq!(s.inodes[&7].scan_dents[0].name, b"p");
    assert_eq!(s.highest_ino, 8);
    assert_eq!(s.refs[1].ino, Some(6));
}

#[test]
fn root_gets_pino_nlink_one() {
    let mut f = bare();
    f.put(0, &dirent(LE, 1, 2, 1, b"x"));
    f.put(44, &inode(LE, 2, 1, b""));
    let s = f.scan();
    assert_eq!(s.inodes[&1].pino_nlink, 1);
    assert_eq!(s.inodes[&2].pino_nlink, 0);
}

#[test]
fn xattr_and_xref() {
    let mut f = bare();
    let x1 = xattr(LE, 3, 2, b"name", b"value");
    let x0 = xattr(LE, 3, 1, b"name", b"old");
    let r = xref(LE, 5, 3, 4);
    let mut at = 0;
    for n in [&x1, &x0, &r] {
        f.put(at, n);
        at += n.len() as u32;
    }
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(s.refs.len(), 3);
    assert!(s
        .refs
        .iter()
        .all(|r| r.state == RefState::Pristine && r.ino.is_none()));
    assert_eq!(s.xattr_datums.len(), 2);
    assert_eq!((s.xattr_datums[0].xid, s.xattr_datums[0].version), (3, 2));
    assert_eq!(s.xattr_refs[0].ino, Some(5));
    assert_eq!(s.xattr_refs[0].xseqno, Some(4));
    assert_eq!(s.highest_xid, 3);
    assert_eq!(s.highest_xseqno, 4);
    assert_eq!(s.refs[2].len, 28);
}

#[test]
fn xattr_errors() {
    // Node CRC: JFFS2_WARNING with %#08x, dirt of the unpadded totlen.
    let mut f = flash();
    let mut x = xattr(LE, 3, 1, b"n", b"v");
    x[16] ^= 1; // version
    f.put(0, &x);
    let s = f.scan();
    let stored = u32::from_le_bytes([x[28], x[29], x[30], x[31]]);
    assert_eq!(
        s.log[0].text,
        format!(
            "warning: (<pid>) jffs2_scan_xattr_node: node CRC failed at 0x000000, read={:#08x}, calc={:#08x}",
            stored,
            crc32(&x[..28])
        )
    );
    // Length mismatch.
    let mut f = flash();
    let mut x = xattr(LE, 3, 1, b"n", b"v");
    x[4] = 40; // totlen 36 -> 40
    refresh(LE, &mut x, 28);
    f.put(0, &x);
    let s = f.scan();
    assert_eq!(
        s.log[0].text,
        "warning: (<pid>) jffs2_scan_xattr_node: node length mismatch at 0x000000, read=40, calc=36"
    );
    assert_eq!(s.dirt[0].cause, DirtCause::Length);
    // xref totlen != 28.
    let mut f = flash();
    let mut r = xref(LE, 5, 3, 4);
    r[4] = 32;
    refresh(LE, &mut r, 24);
    r.extend_from_slice(&[0; 4]);
    f.put(0x1000, &r);
    let s = f.scan();
    assert_eq!(
        s.log[0].text,
        "warning: (<pid>) jffs2_scan_xref_node: node length mismatch at 0x001000, read=32, calc=28"
    );
    // Without CONFIG_JFFS2_FS_XATTR: INCOMPAT, the mount fails (§9).
    let mut f = flash();
    f.put(0, &xattr(LE, 3, 1, b"n", b"v"));
    let s = f.scan_with(
        12,
        ScanOptions {
            xattr: false,
            ..Default::default()
        },
    );
    assert_eq!(
        texts(&s),
        vec!["Incompatible feature node (0xe008) found at offset 0x00000000".to_string()]
    );
    assert_eq!(
        s.failure,
        Some(MountFailure::Incompat {
            offset: 0,
            nodetype: 0xE008
        })
    );
}

#[test]
fn unaligned_xattr_totlen_breaks_accounting() {
    // §9.1 hazard: dirt of an unpadded totlen leaves the accounting 1-3 bytes behind the
    // scan position; the next node linked trips the contiguity BUG.
    let mut f = bare();
    let mut x = xattr(LE, 3, 1, b"n", b"v");
    x[4] = 37;
    refresh(LE, &mut x, 28);
    f.put(0, &x);
    f.put(40, &inode(LE, 5, 1, b"a"));
    let s = f.scan();
    assert!(s.log[0]
        .text
        .contains("node length mismatch at 0x000000, read=37, calc=36"));
    assert_eq!(
        s.log[1].text,
        "error: (<pid>) jffs2_link_node_ref: Adding new ref <ptr> at (0x00000028-0x00000070) not immediately after previous (0x00000000-0x00000025)"
    );
    assert!(matches!(&s.failure, Some(MountFailure::Other(m)) if m.starts_with("kernel BUG")));
    assert_eq!(s.log.len(), 2);
}

#[test]
fn unknown_node_classes() {
    let opts_rw = ScanOptions {
        read_only: false,
        ..Default::default()
    };
    // ROCOMPAT: fine read-only (dirt, forced RO), fatal read-write.
    let mut f = flash();
    f.put(0, &raw_node(LE, 0xA001, 20));
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec!["Read-only compatible feature node (0xa001) found at offset 0x00000000".to_string()]
    );
    assert!(s.forced_read_only);
    assert_eq!(s.failure, None);
    let s = f.scan_with(12, opts_rw);
    assert_eq!(
        s.failure,
        Some(MountFailure::RoCompat {
            offset: 0,
            nodetype: 0xA001
        })
    );
    // INCOMPAT.
    let mut f = flash();
    f.put(ES, &raw_node(LE, 0xE00A, 16));
    f.put(2 * ES, &[0x11; 4]);
    let s = f.scan();
    assert_eq!(
        texts(&s),
        vec!["Incompatible feature node (0xe00a) found at offset 0x00001000".to_string()]
    );
    // Nothing after the failure is logged, but the rest is still scanned.
    assert_eq!(s.blocks.len(), 5);
    assert_eq!(s.blocks[2].class, BlockClass::AllDirty);
    // RWCOMPAT_DELETE (and a summary node in a full scan): silent dirt.
    let mut f = flash();
    f.put(0, &raw_node(LE, 0x2005, 16));
    f.put(16, &raw_node(LE, 0x2006, 16));
    let s = f.scan_with(
        12,
        ScanOptions {
            summary: false,
            ..Default::default()
        },
    );
    assert!(s.log.is_empty());
    assert_eq!(s.dirt[0].cause, DirtCause::Unknown);
    assert_eq!(s.dirt[0].len, 32);
    // RWCOMPAT_COPY: kept, REF_PRISTINE, no inode.
    let mut f = flash();
    f.put(0, &raw_node(LE, 0x6001, 18));
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.refs[0].kind, NodeKind::Other);
    assert_eq!(s.refs[0].state, RefState::Pristine);
    assert_eq!(s.refs[0].len, 20);
    assert_eq!(s.blocks[0].used, 20);
}

#[test]
fn padding_is_dirt() {
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    f.put(12, &raw_node(LE, 0x2004, 100));
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.dirt[0].cause, DirtCause::Padding);
    assert_eq!(s.dirt[0].len, 100);
    // A cleanmarker plus dirt is not CLEANMARKER (that needs dirty == 0) but PARTDIRTY.
    assert_eq!(s.blocks[0].class, BlockClass::PartDirty);
}

#[test]
fn fewer_than_12_bytes_left_is_dirt() {
    // §3.2 D.3 comes before the 0xFF test: an 8-byte erased tail is dirt.
    let mut f = bare();
    let n = inode(LE, 5, 1, &vec![0x41; (ES - 68 - 8) as usize]);
    f.put(0, &n);
    let s = f.scan();
    assert!(s.log.is_empty());
    assert_eq!(s.dirt[0].cause, DirtCause::BlockTail);
    assert_eq!(s.dirt[0].len, 8);
    assert_eq!(s.blocks[0].class, BlockClass::Clean);
    assert_eq!(s.blocks[0].wasted, 8);
}

#[test]
fn zero_totlen_is_seen_twice() {
    let mut f = flash();
    let mut h = header(LE, 0xE002, 0);
    h[3] &= !0x20; // obsolete, totlen 0: no progress
    f.put(0, &h);
    let s = f.scan();
    assert_eq!(
        s.log[0].text,
        "ofs 0x00000000 has already been seen. Skipping"
    );
    assert!(s.dirt.iter().any(|d| d.cause == DirtCause::AlreadySeen));
}

#[test]
fn classification_and_nextblock() {
    let mut f = bare();
    // Block 0: full → CLEAN (tail ≤ 196 bytes).
    f.put(0, &cleanmarker(LE));
    f.put(
        12,
        &inode(LE, 2, 1, &vec![1; (ES - 12 - 68 - 100) as usize]),
    );
    // Block 1: a little data → PARTDIRTY, lots of free space.
    f.put(ES, &cleanmarker(LE));
    f.put(ES + 12, &inode(LE, 3, 1, &[2; 100]));
    // Block 2: more data → PARTDIRTY, less free space: filed dirty.
    f.put(2 * ES, &cleanmarker(LE));
    f.put(2 * ES + 12, &inode(LE, 4, 1, &[3; 2000]));
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    let b = &s.blocks;
    assert_eq!(
        (b[0].class, b[0].list),
        (BlockClass::Clean, BlockList::Clean)
    );
    assert_eq!(b[0].free, 100);
    assert_eq!(
        (b[1].class, b[1].list),
        (BlockClass::PartDirty, BlockList::Nextblock)
    );
    assert_eq!(
        (b[2].class, b[2].list),
        (BlockClass::PartDirty, BlockList::Dirty)
    );
    // file_dirty: the free tail became dirt.
    assert_eq!(b[2].free, 0);
    assert_eq!(b[2].free_at_scan, ES - 12 - 2068);
    assert_eq!(b[2].dirty, ES - 12 - 2068);
    // Per-block invariant (§7.1).
    for x in b {
        assert_eq!(x.used + x.unchecked + x.dirty + x.wasted + x.free, ES);
    }
    let t = s.totals();
    assert_eq!(
        t.used + t.unchecked + t.dirty + t.wasted + t.free,
        u64::from(5 * ES)
    );
}

#[test]
fn very_dirty_when_filed() {
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    f.put(12, &inode(LE, 3, 1, &[2; 100]));
    f.put(ES, &cleanmarker(LE));
    f.put(ES + 12, &inode(LE, 3, 2, &[2; 10]));
    let s = f.scan();
    // Block 1 has more free space: it becomes nextblock and block 0 is filed very dirty.
    assert_eq!(s.blocks[0].list, BlockList::VeryDirty);
    assert_eq!(s.blocks[1].list, BlockList::Nextblock);
}

#[test]
fn too_few_blocks_and_unaligned_size() {
    let f = erased(LE, ES, 4);
    let s = f.scan();
    assert_eq!(texts(&s), vec!["Too few erase blocks (4)".to_string()]);
    assert_eq!(s.log[0].level, Level::Err);
    assert_eq!(s.failure, Some(MountFailure::TooFewBlocks(4)));
    // The blocks are still scanned for the tools.
    assert_eq!(s.blocks.len(), 4);

    let mut img = vec![0xFF; (5 * ES + ES / 2) as usize];
    img[(5 * ES) as usize] = 0;
    let s = scan(&img, &f.geom(12), &ScanOptions::default());
    assert_eq!(
        texts(&s),
        vec!["Flash size not aligned to erasesize, reducing to 20KiB".to_string()]
    );
    // infof() of the fs_context: KERN_NOTICE.
    assert_eq!(s.log[0].level, Level::Notice);
    assert_eq!(s.failure, None);
    assert_eq!(s.flash_size, 5 * ES);

    // as_flashed pads to whole blocks and 5 blocks at least.
    let small = vec![0xFFu8; 100];
    assert_eq!(crate::scan::as_flashed(&small, ES).len(), (5 * ES) as usize);
}

#[test]
fn cowardly_refusal() {
    let mut f = bare();
    for b in 0..5 {
        f.put(b * ES, &[0x11; 8]);
    }
    let s = f.scan();
    let t = texts(&s);
    assert_eq!(
        &t[t.len() - 2..],
        &[
            "Cowardly refusing to erase blocks on filesystem with no valid JFFS2 nodes".to_string(),
            "empty_blocks 0, bad_blocks 0, c->nr_blocks 5".to_string()
        ]
    );
    assert!(matches!(s.failure, Some(MountFailure::Other(_))));
    // Erased blocks plus a free (cleanmarker) block mount.
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    let s = f.scan();
    assert_eq!(s.failure, None);
}

#[test]
fn bytes_read_follow_the_kernel_buffer() {
    let mut f = bare();
    f.put(0, &cleanmarker(LE));
    f.put(12, &inode(LE, 2, 1, &[7; 100]));
    let s = f.scan();
    // Marker 8 + first 256 + one re-read from the word after the run's start (0xB8..end).
    assert_eq!(s.blocks[0].bytes_read, 8 + 256 + (ES - 184));
}

#[test]
fn big_endian() {
    let e = Endian::Big;
    let mut f = erased(e, ES, 5);
    f.put(0, &cleanmarker(e));
    f.put(12, &dirent(e, 1, 2, 1, b"hello"));
    f.put(12 + 48, &inode(e, 2, 1, b"world"));
    let s = f.scan();
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert_eq!(s.inodes[&1].scan_dents[0].name, b"hello");
    assert_eq!(s.inodes[&2].nodes.len(), 1);
    // Read little-endian: the magic is backwards at the block start.
    let s = scan(
        &f.build(),
        &Geometry {
            endian: LE,
            ..f.geom(12)
        },
        &ScanOptions::default(),
    );
    assert!(s.log[0]
        .text
        .starts_with("Magic bitmask is backwards at offset 0x00000000"));
}

#[test]
fn invalid_geometry_is_a_failure_not_a_panic() {
    for es in [0, 3, 100, 4097] {
        let s = scan(
            &[0xFF; 8192],
            &Geometry {
                endian: LE,
                erase_size: es,
                cleanmarker_size: 12,
            },
            &ScanOptions::default(),
        );
        assert!(matches!(s.failure, Some(MountFailure::Other(_))));
        assert!(s.blocks.is_empty());
    }
}

/// OpenWrt's end-of-filesystem marker (`532-jffs2_eofdetect.patch`): its block and every
/// later one are erased (unread); stock Linux reads 4 bytes of dirt and scans on.
#[test]
fn openwrt_end_marker() {
    for e in [Endian::Little, Endian::Big] {
        let mut f = erased(e, ES, 6);
        f.put(0, &inode(e, 2, 1, b"before"));
        f.put(2 * ES, &crate::scan::END_MARKER);
        // An old node after the marker (the rest of a partition).
        f.put(3 * ES, &inode(e, 3, 1, b"after"));
        let s = f.scan();
        assert_eq!(s.end_marker, Some(2 * ES));
        assert_eq!(s.failure, None);
        assert!(s.inodes.contains_key(&2) && !s.inodes.contains_key(&3));
        assert_eq!(
            s.log,
            [crate::scan::KernelMsg {
                level: Level::Warning,
                offset: Some(2 * ES),
                text: "jffs2_scan_eraseblock(): End of filesystem marker found at 0x2000"
                    .to_string(),
            }]
        );
        for b in &s.blocks[2..] {
            assert_eq!(
                (b.class, b.list),
                (BlockClass::Empty, BlockList::ErasePending)
            );
            assert_eq!((b.dirty, b.free), (0, ES));
        }
        assert_eq!(s.blocks[2].bytes_read, 8 + 256);
        assert!(s.blocks[3..].iter().all(|b| b.bytes_read == 0));
        // Also where NAND would take an erased block for free (no cleanmarkers).
        let s = f.scan_with(0, ScanOptions::default());
        assert_eq!(s.blocks[2].list, BlockList::ErasePending);
        // Stock Linux: the marker is dirt (a bad magic), the next blocks are scanned.
        let stock = ScanOptions {
            end_marker: false,
            ..ScanOptions::default()
        };
        let s = f.scan_with(12, stock);
        assert_eq!(s.end_marker, None);
        assert!(s.inodes.contains_key(&3));
        assert_eq!(s.blocks[2].class, BlockClass::AllDirty);
        assert_eq!(s.blocks[2].dirty, 4);
        assert_eq!(s.dirt[0].cause, DirtCause::BadMagic);
        // Not at a block start: no marker.
        let mut g = erased(e, ES, 6);
        g.put(0, &inode(e, 2, 1, b"before"));
        g.put(2 * ES + 4, &crate::scan::END_MARKER);
        assert_eq!(g.scan().end_marker, None);
    }
}
