//! Hostile input and failure safety at the command line: the five binaries, as built, run
//! on crafted images and on a full disk.
//!
//! Images (built here, little endian, every CRC valid unless the case is about it): a node
//! with `totlen` 0; CRC-valid nodes claiming `totlen` 0xFFFFFFFF; a node running past the end
//! of the file; dirents named `.`, `..`, `` and with `/`; a symbolic link and a directory of
//! the same name in one parent (the later version wins, wherever it lies on flash); summaries
//! with records outside their block, a count of 4 billion and a marker outside the block;
//! misordered summary records; unknown compressor ids; and a 4 MiB image of decompression
//! bombs and nodes claiming 4 GiB. Each goes through `jffs2-dump -c`, `--list`, `--extract`,
//! `-e`, `jffs2-fsck`, `jffs2-fsck --repair`, `jffs2-sumtool` and `jffs2-convert`, and every
//! run must:
//!
//! * (a) not panic (exit 101, "panicked", or death by a signal);
//! * (b) exit with a status its `--help` documents — the one expected for the image, non-zero
//!   where the tool's job is to say the input is broken — and report the hostile condition
//!   (fsck names every hostile node's offset; `-c` and sumtool name the bad headers);
//! * (c) peak at no more than 2 × the image size + 64 MiB of memory (`/usr/bin/time -f %M`);
//! * (d) leave the input's bytes and mtime as they were;
//! * (e) leave the complete output or nothing: never a `.NAME.*.tmp` beside it;
//! * (g) name a byte offset (`0x%08x`) or a path in every error (`error!:` messages and
//!   fsck's `ERROR` findings).
//!
//! And (f): `jffs2-mkfs`, `jffs2-convert`, `jffs2-sumtool`, `jffs2-dump -e`,
//! `jffs2-fsck --repair` and `jffs2-dump --extract` writing a multi-MiB output into a 1 MiB
//! tmpfs exit non-zero naming the output and "No space left on device", and leave nothing
//! there (an older output stays as it was; an extraction keeps only complete files).
//!
//! Needs GNU time (`scripts/install-test-deps.sh`) and root for the tmpfs; without them the
//! tests are skipped loudly (tests/common/skip.rs), and fail under `CI=true`.

mod common;

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

use common::scratch;
use jffs2::compress::{zlib_compress, COMPR_COPY, COMPR_NONE, COMPR_ZLIB};
use jffs2::crc::crc32;
use jffs2::format::{
    dt, encode_cleanmarker, DirentNode, Endian, InodeNode, SumRecord, SummaryNode, NODETYPE_DIRENT,
    NODETYPE_INODE, NODETYPE_XREF,
};

const DUMP: &str = env!("CARGO_BIN_EXE_jffs2-dump");
const FSCK: &str = env!("CARGO_BIN_EXE_jffs2-fsck");
const SUMTOOL: &str = env!("CARGO_BIN_EXE_jffs2-sumtool");
const CONVERT: &str = env!("CARGO_BIN_EXE_jffs2-convert");
const MKFS: &str = env!("CARGO_BIN_EXE_jffs2-mkfs");

const E: Endian = Endian::Little;
const DIR: u32 = 0o040755;
const REG: u32 = 0o100644;
const LNK: u32 = 0o120777;
const MIB: u64 = 1 << 20;

// ---------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------

/// A dirent node.
fn dirent(pino: u32, version: u32, ino: u32, dtype: u8, name: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    DirentNode {
        pino,
        version,
        ino,
        mctime: 1_600_000_000,
        dtype,
        ..Default::default()
    }
    .encode(E, name, &mut v);
    v
}

/// An inode node with `data` stored (`csize` = its length).
#[allow(clippy::too_many_arguments)]
fn inode(
    ino: u32,
    version: u32,
    mode: u32,
    isize: u32,
    offset: u32,
    dsize: u32,
    compr: u8,
    data: &[u8],
) -> Vec<u8> {
    let mut v = Vec::new();
    InodeNode {
        ino,
        version,
        mode,
        isize,
        atime: 1_600_000_000,
        mtime: 1_600_000_000,
        ctime: 1_600_000_000,
        offset,
        dsize,
        compr,
        ..Default::default()
    }
    .encode(E, data, &mut v);
    v
}

/// A regular file's single uncompressed node.
fn file(ino: u32, data: &[u8]) -> Vec<u8> {
    let n = data.len() as u32;
    inode(ino, 1, REG, n, 0, n, COMPR_NONE, data)
}

/// A bare 12-byte node header with a valid header CRC.
fn header(nodetype: u16, totlen: u32) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend_from_slice(&0x1985u16.to_le_bytes());
    v.extend_from_slice(&nodetype.to_le_bytes());
    v.extend_from_slice(&totlen.to_le_bytes());
    let c = crc32(&v);
    v.extend_from_slice(&c.to_le_bytes());
    v
}

/// Re-computes the header CRC (bytes 8..12) and, for an inode, the node CRC (64..68).
fn fix_inode_crcs(n: &mut [u8]) {
    let c = crc32(&n[..8]);
    n[8..12].copy_from_slice(&c.to_le_bytes());
    let c = crc32(&n[..60]);
    n[64..68].copy_from_slice(&c.to_le_bytes());
}

/// `0x%08x`, as every tool prints offsets.
fn hex8(ofs: usize) -> String {
    format!("0x{ofs:08x}")
}

/// Erase blocks filled node by node: a cleanmarker at the start of each block entered, nodes
/// 4-byte aligned, a new block when a node does not fit; 0xFF elsewhere.
struct Flash {
    es: usize,
    img: Vec<u8>,
    at: usize,
}

impl Flash {
    fn new(es: usize) -> Flash {
        Flash {
            es,
            img: Vec::new(),
            at: 0,
        }
    }

    fn grow(&mut self, end: usize) {
        let want = end.div_ceil(self.es) * self.es;
        if self.img.len() < want {
            self.img.resize(want, 0xFF);
        }
    }

    /// Writes `bytes` at `ofs` as they are.
    fn write_at(&mut self, ofs: usize, bytes: &[u8]) {
        self.grow(ofs + bytes.len());
        self.img[ofs..ofs + bytes.len()].copy_from_slice(bytes);
    }

    /// Moves to the start of the next erase block.
    fn next_block(&mut self) {
        if self.at % self.es != 0 {
            self.at = self.at.div_ceil(self.es) * self.es;
        }
    }

    /// Places `bytes`; returns their offset.
    fn put(&mut self, bytes: &[u8]) -> usize {
        assert!(bytes.len() <= self.es - 12, "node too large for a block");
        if self.at % self.es + bytes.len() > self.es {
            self.next_block();
        }
        if self.at % self.es == 0 {
            let mut cm = Vec::new();
            encode_cleanmarker(E, 12, &mut cm);
            let at = self.at;
            self.write_at(at, &cm);
            self.at += 12;
        }
        let ofs = self.at;
        self.write_at(ofs, bytes);
        self.at = (ofs + bytes.len()).div_ceil(4) * 4;
        ofs
    }

    /// Ends the current block with a summary of `records` (placed at the cursor); `patch`
    /// may alter the encoded node (its CRCs are the caller's business). Returns its offset.
    fn summary(&mut self, records: &[SumRecord], patch: impl FnOnce(&mut Vec<u8>)) -> usize {
        let in_block = (self.at % self.es) as u32;
        let mut s = Vec::new();
        SummaryNode {
            cln_mkr: 12,
            ..Default::default()
        }
        .encode(E, records, in_block, self.es as u32, &mut s)
        .expect("the summary fits");
        patch(&mut s);
        let ofs = self.at;
        self.write_at(ofs, &s);
        self.at = ofs + s.len();
        assert_eq!(self.at % self.es, 0);
        ofs
    }

    /// The image: whole blocks, at least `min_blocks`; erased blocks get a cleanmarker (as
    /// `mkfs.jffs2 --pad` writes them), which tells the tools the erase size.
    fn image(mut self, min_blocks: usize) -> Vec<u8> {
        let end = (min_blocks * self.es).max(self.at);
        self.grow(end);
        let mut cm = Vec::new();
        encode_cleanmarker(E, 12, &mut cm);
        for b in (0..self.img.len()).step_by(self.es) {
            if self.img[b..b + self.es].iter().all(|&x| x == 0xFF) {
                self.img[b..b + 12].copy_from_slice(&cm);
            }
        }
        self.img
    }
}

/// A small valid tree at the start of every image: `/etc/passwd`, `/readme`.
fn base(f: &mut Flash) {
    f.put(&inode(2, 1, DIR, 0, 0, 0, COMPR_NONE, &[]));
    f.put(&dirent(1, 1, 2, dt::DIR, b"etc"));
    f.put(&file(3, b"root:x:0:0:root:/root:/bin/sh\n"));
    f.put(&dirent(2, 2, 3, dt::REG, b"passwd"));
    f.put(&file(4, b"hello\n"));
    f.put(&dirent(1, 3, 4, dt::REG, b"readme"));
}

/// One hostile image and what the tools must say about it.
struct Case {
    name: &'static str,
    image: Vec<u8>,
    /// The erase size it was built with (given to jffs2-sumtool, whose default is 64 KiB).
    es: u32,
    /// Offsets of the hostile nodes: jffs2-fsck names each of them.
    marks: Vec<usize>,
    /// Offsets of bad headers that `jffs2-dump -c` and jffs2-sumtool warn about.
    headers: Vec<usize>,
    /// The exit status of each mode, in [`MODES`] order.
    codes: [i32; 8],
}

/// A node whose header says `totlen` 0 (header CRC valid), with good nodes after it.
fn totlen_zero() -> Case {
    let mut f = Flash::new(0x4000);
    base(&mut f);
    let bad = f.put(&header(NODETYPE_INODE, 0));
    f.put(&file(10, b"after the zero-length node\n"));
    f.put(&dirent(1, 10, 10, dt::REG, b"after-zero"));
    Case {
        name: "totlen-0",
        image: f.image(5),
        es: 0x4000,
        marks: vec![bad],
        headers: vec![bad],
        //     -c list extract -e fsck sumtool repair convert
        codes: [0, 0, 0, 0, 4, 0, 1, 0],
    }
}

/// A complete inode node, every CRC valid, whose totlen (and csize) claim 4 GiB; and a bare
/// dirent header claiming 4 GiB.
fn totlen_4gib() -> Case {
    let mut f = Flash::new(0x4000);
    base(&mut f);
    let mut n = inode(10, 1, REG, 0x1000, 0, 0x1000, COMPR_NONE, &[b'x'; 0x100]);
    n[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    n[48..52].copy_from_slice(&(u32::MAX - 68).to_le_bytes());
    fix_inode_crcs(&mut n);
    let bad = f.put(&n);
    f.put(&dirent(1, 10, 10, dt::REG, b"four-gib"));
    let bad2 = f.put(&header(NODETYPE_DIRENT, u32::MAX));
    f.put(&file(11, b"still here\n"));
    f.put(&dirent(1, 11, 11, dt::REG, b"after"));
    Case {
        name: "totlen-4gib",
        image: f.image(5),
        es: 0x4000,
        marks: vec![bad, bad2],
        headers: vec![bad, bad2],
        codes: [0, 0, 0, 0, 4, 0, 1, 0],
    }
}

/// The file ends in the middle of a node: its totlen runs past the end of the image.
fn totlen_past_end() -> Case {
    let mut f = Flash::new(0x4000);
    base(&mut f);
    f.put(&dirent(1, 10, 10, dt::REG, b"cut"));
    let data: Vec<u8> = (0..3000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let bad = f.put(&file(10, &data));
    let mut image = f.image(1);
    image.truncate(bad + 68 + 1000);
    Case {
        name: "totlen-past-end",
        image,
        es: 0x4000,
        marks: vec![bad],
        headers: vec![bad],
        codes: [0, 0, 2, 0, 4, 0, 1, 1],
    }
}

/// Dirents named ".", "..", "", and with '/' in them, each naming a file; a directory with
/// a ".." child; one good file.
fn bad_names() -> Case {
    let mut f = Flash::new(0x4000);
    base(&mut f);
    let mut ino = 10;
    let mut marks = Vec::new();
    for name in [
        &b"."[..],
        b"..",
        b"",
        b"a/b",
        b"/etc/passwd",
        b"../../escape",
        b"tail/",
    ] {
        f.put(&file(ino, b"evil\n"));
        marks.push(f.put(&dirent(1, ino, ino, dt::REG, name)));
        ino += 1;
    }
    f.put(&inode(ino, 1, DIR, 0, 0, 0, COMPR_NONE, &[]));
    f.put(&dirent(1, ino, ino, dt::DIR, b"sub"));
    f.put(&file(ino + 1, b"evil\n"));
    marks.push(f.put(&dirent(ino, ino + 1, ino + 1, dt::REG, b"..")));
    f.put(&file(ino + 2, b"fine\n"));
    f.put(&dirent(1, ino + 2, ino + 2, dt::REG, b"ok"));
    Case {
        name: "names",
        image: f.image(5),
        es: 0x4000,
        marks,
        headers: Vec::new(),
        codes: [0, 0, 2, 0, 4, 0, 1, 0],
    }
}

/// In one parent, symbolic links and directories of the same name: "s" is a link (v1) then
/// a directory (v2, later on flash); "t" is a directory (v20, first on flash) and a link
/// (v5, later on flash, in the next block); "r" a relative link climbing out, then a
/// directory. The directory wins each time (the higher version, not the later position).
/// The absolute links point at `outside`, where nothing may ever be written.
fn symlink_then_dir(outside: &Path) -> Case {
    let target = outside.as_os_str().as_bytes();
    let n = target.len() as u32;
    let rel = b"../../../../../../../../../../../../tmp";
    let m = rel.len() as u32;
    let mut f = Flash::new(0x4000);
    base(&mut f);
    f.put(&inode(12, 1, DIR, 0, 0, 0, COMPR_NONE, &[]));
    f.put(&dirent(1, 20, 12, dt::DIR, b"t"));
    f.put(&file(13, b"inside t\n"));
    f.put(&dirent(12, 21, 13, dt::REG, b"child"));
    f.put(&inode(10, 1, LNK, n, 0, n, COMPR_NONE, target));
    f.put(&dirent(1, 1, 10, dt::LNK, b"s"));
    f.put(&inode(11, 1, DIR, 0, 0, 0, COMPR_NONE, &[]));
    f.put(&dirent(1, 2, 11, dt::DIR, b"s"));
    f.put(&file(14, b"inside s\n"));
    f.put(&dirent(11, 3, 14, dt::REG, b"child"));
    f.next_block();
    f.put(&inode(15, 1, LNK, n, 0, n, COMPR_NONE, target));
    f.put(&dirent(1, 5, 15, dt::LNK, b"t"));
    f.put(&inode(16, 1, LNK, m, 0, m, COMPR_NONE, rel));
    f.put(&dirent(1, 6, 16, dt::LNK, b"r"));
    f.put(&inode(17, 1, DIR, 0, 0, 0, COMPR_NONE, &[]));
    f.put(&dirent(1, 7, 17, dt::DIR, b"r"));
    f.put(&file(18, b"inside r\n"));
    f.put(&dirent(17, 8, 18, dt::REG, b"child"));
    Case {
        name: "symlink-then-dir",
        image: f.image(5),
        es: 0x4000,
        // Nothing is broken: the older links are superseded, as Linux writes renames.
        marks: Vec::new(),
        headers: Vec::new(),
        codes: [0, 0, 0, 0, 0, 0, 0, 0],
    }
}

/// The summary record of the node `bytes` placed at `at` in a block starting at `blk`.
fn record(bytes: &[u8], at: usize, blk: usize) -> SumRecord {
    jffs2::layout::record_for(bytes, E, (at - blk) as u32).expect("a summarised node type")
}

/// Summaries that lie with valid CRCs: records outside their block (one claiming 4 GiB, one
/// at 0xFFFFFFF0, a dirent that is on no flash, an xref), a count of 4 billion records, a
/// marker pointing outside the block.
fn summaries_outside() -> Case {
    let es = 0x4000usize;
    let mut f = Flash::new(es);
    base(&mut f);
    let mut marks = Vec::new();
    f.next_block();
    let d = dirent(1, 20, 20, dt::REG, b"sum-outside");
    let d_at = f.put(&d);
    f.put(&file(20, b"described far away\n"));
    let blk = (d_at / es) * es;
    let recs = vec![
        record(&d, d_at, blk),
        SumRecord::Inode {
            nodetype: NODETYPE_INODE,
            inode: 20,
            version: 1,
            offset: es as u32 + 0x100,
            totlen: u32::MAX,
        },
        SumRecord::Inode {
            nodetype: NODETYPE_INODE,
            inode: 20,
            version: 2,
            offset: 0xFFFF_FFF0,
            totlen: 68,
        },
        SumRecord::Dirent {
            nodetype: NODETYPE_DIRENT,
            totlen: 50,
            offset: 0x7FFF_FFFF,
            pino: 1,
            version: 21,
            ino: 21,
            dtype: dt::REG,
            name: b"ghost".to_vec(),
        },
        SumRecord::Xref {
            nodetype: NODETYPE_XREF,
            offset: 0x10_0000,
        },
    ];
    marks.push(f.summary(&recs, |_| {}));
    // sum_num of 4 billion (node CRC fixed).
    f.put(&dirent(1, 25, 25, dt::REG, b"count"));
    f.put(&file(25, b"counted\n"));
    marks.push(f.summary(&[], |s| {
        s[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
        let c = crc32(&s[..24]);
        s[28..32].copy_from_slice(&c.to_le_bytes());
    }));
    // The marker at the end of the block points outside it (summary CRC fixed).
    f.put(&dirent(1, 26, 26, dt::REG, b"marker"));
    f.put(&file(26, b"marked\n"));
    marks.push(f.summary(&[], |s| {
        let l = s.len();
        s[l - 8..l - 4].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        let c = crc32(&s[32..]);
        s[24..28].copy_from_slice(&c.to_le_bytes());
    }));
    Case {
        name: "summaries-outside",
        image: f.image(6),
        es: es as u32,
        marks,
        headers: Vec::new(),
        codes: [0, 0, 0, 0, 4, 0, 1, 1],
    }
}

/// Summaries whose records are all true but misordered (last node first), and one with a
/// duplicated record and one pointing into the middle of a node.
fn summaries_misordered() -> Case {
    let es = 0x4000usize;
    let mut f = Flash::new(es);
    base(&mut f);
    let mut marks = Vec::new();
    f.next_block();
    let mut placed = Vec::new();
    for k in 0..4u32 {
        let ino = 30 + k;
        let name = format!("order-{k}");
        let d = dirent(1, ino, ino, dt::REG, name.as_bytes());
        let d_at = f.put(&d);
        let n = file(ino, name.as_bytes());
        let n_at = f.put(&n);
        placed.push((d, d_at));
        placed.push((n, n_at));
    }
    let blk = (placed[0].1 / es) * es;
    let recs: Vec<SumRecord> = placed
        .iter()
        .rev()
        .map(|(b, at)| record(b, *at, blk))
        .collect();
    marks.push(f.summary(&recs, |_| {}));
    // Block 2: a duplicate record, and a record 4 bytes into a node.
    let d = dirent(1, 40, 40, dt::REG, b"dup");
    let d_at = f.put(&d);
    let n = file(40, b"duplicated\n");
    let n_at = f.put(&n);
    let blk = (d_at / es) * es;
    let mut inside = record(&n, n_at, blk);
    if let SumRecord::Inode { offset, .. } = &mut inside {
        *offset += 4;
    }
    let recs = vec![
        record(&n, n_at, blk),
        record(&d, d_at, blk),
        record(&n, n_at, blk),
        inside,
    ];
    marks.push(f.summary(&recs, |_| {}));
    Case {
        name: "summaries-misordered",
        image: f.image(5),
        es: es as u32,
        marks,
        headers: Vec::new(),
        codes: [0, 0, 0, 0, 4, 0, 1, 1],
    }
}

/// Files whose only node uses a compressor Linux does not have (0x15: a vendor's "LZMA
/// without size" that jefferson knows; OpenWrt's LZMA, 8, is read: tests/openwrt.rs).
fn unknown_compressors() -> Case {
    let mut f = Flash::new(0x4000);
    base(&mut f);
    let mut marks = Vec::new();
    for (k, compr) in [COMPR_COPY, 0x15, 9, 0x42, 0xFF].into_iter().enumerate() {
        let ino = 10 + k as u32;
        marks.push(f.put(&inode(ino, 1, REG, 4096, 0, 4096, compr, &[0x5a; 200])));
        f.put(&dirent(
            1,
            ino,
            ino,
            dt::REG,
            format!("c{compr}").as_bytes(),
        ));
    }
    Case {
        name: "compressors",
        image: f.image(5),
        es: 0x4000,
        marks,
        headers: Vec::new(),
        codes: [0, 0, 2, 0, 4, 0, 1, 0],
    }
}

/// 4 MiB of 64 KiB blocks: 48 zlib bombs (4 MiB of zeros each, in ~18 KiB), two 16 MiB
/// files of 4 MiB bombs of letters, 12 000 nodes of one file claiming 4 GiB sizes at random
/// offsets (zlib junk and uncompressed nodes whose dsize lies), 2000 CRC-valid inode nodes
/// whose totlen and csize claim 4 GiB, as many bare headers claiming 4 GiB, 5000 names.
fn bombs() -> Case {
    let es = 0x10000usize;
    let mut f = Flash::new(es);
    base(&mut f);
    let (zeros, used) = zlib_compress(&vec![0u8; 4 << 20], 8 << 20).expect("compressible");
    assert_eq!(used, 4 << 20);
    let (letters, used) = zlib_compress(&vec![b'a'; 4 << 20], 8 << 20).expect("compressible");
    assert_eq!(used, 4 << 20);
    assert!(zeros.len() < 32768 && letters.len() < 32768);
    for k in 0..48u32 {
        let ino = 100 + k;
        f.put(&inode(ino, 1, REG, 4 << 20, 0, 4 << 20, COMPR_ZLIB, &zeros));
        f.put(&dirent(
            1,
            ino,
            ino,
            dt::REG,
            format!("zeros-{k}").as_bytes(),
        ));
    }
    for k in 0..2u32 {
        let ino = 200 + k;
        for p in 0..4u32 {
            let n = inode(
                ino,
                p + 1,
                REG,
                16 << 20,
                p << 22,
                4 << 20,
                COMPR_ZLIB,
                &letters,
            );
            f.put(&n);
        }
        f.put(&dirent(
            1,
            ino,
            ino,
            dt::REG,
            format!("letters-{k}").as_bytes(),
        ));
    }
    let mut rng = common::Rng::new(7);
    for v in 0..12_000u32 {
        let ofs = (rng.below(0xFFFF_0000) as u32) & !0xFFF;
        let junk = rng.next_u64().to_le_bytes();
        let n = if v % 2 == 0 {
            inode(300, v + 1, REG, u32::MAX, ofs, u32::MAX, COMPR_ZLIB, &junk)
        } else {
            inode(
                300,
                v + 1,
                REG,
                u32::MAX,
                ofs,
                0x7FFF_FFFF,
                COMPR_NONE,
                &junk,
            )
        };
        f.put(&n);
    }
    f.put(&dirent(1, 300, 300, dt::REG, b"claims-4gib"));
    let mut marks = Vec::new();
    for k in 0..2000u32 {
        let mut n = inode(400 + k, 1, REG, u32::MAX, 0, u32::MAX, COMPR_ZLIB, &[]);
        n[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
        n[48..52].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
        fix_inode_crcs(&mut n);
        let at = f.put(&n);
        let h = f.put(&header(NODETYPE_DIRENT, u32::MAX));
        if k == 0 {
            marks.extend([at, h]);
        }
    }
    for k in 0..5000u32 {
        f.put(&dirent(
            1,
            10_000 + k,
            4,
            dt::REG,
            format!("name-{k:05}").as_bytes(),
        ));
    }
    let image = f.image(64);
    assert_eq!(image.len(), 4 << 20, "the image is not the 4 MiB planned");
    Case {
        name: "bombs",
        image,
        es: es as u32,
        headers: marks.clone(),
        marks,
        codes: [0, 0, 2, 0, 4, 0, 1, 0],
    }
}

// ---------------------------------------------------------------------------------------
// Running the binaries
// ---------------------------------------------------------------------------------------

/// What one run of a binary did.
struct Run {
    what: String,
    code: i32,
    stdout: String,
    stderr: String,
    /// Peak resident memory, bytes.
    peak: u64,
    /// Broken guarantees (c) and (d), reported together at the end of a case.
    problems: Vec<String>,
}

/// The input's bytes and modification time.
fn fingerprint(p: &Path) -> (Vec<u8>, SystemTime) {
    let bytes = std::fs::read(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    let mtime = std::fs::metadata(p).unwrap().modified().unwrap();
    (bytes, mtime)
}

/// Runs `bin args` under GNU time. Panics on (a), a panic or a death by a signal; records
/// in `problems` a peak memory above 2 × `image_len` + 64 MiB (c) and any change to the
/// bytes or mtime of `input` (d).
fn run(bin: &str, args: &[&OsStr], input: &Path, image_len: u64) -> Run {
    let name = Path::new(bin).file_name().unwrap().to_string_lossy();
    let what = format!(
        "{name} {}",
        args.iter()
            .map(|a| a.to_string_lossy())
            .collect::<Vec<_>>()
            .join(" ")
    );
    let before = fingerprint(input);
    let m = common::measured(bin, args, true);
    let (code, stdout, stderr, peak) = (m.code, m.stdout, m.stderr, m.peak);
    let mut problems = Vec::new();
    let limit = 2 * image_len + 64 * MIB;
    if peak > limit {
        problems.push(format!(
            "{what}: peak memory {} MiB, more than 2 x {} KiB + 64 MiB = {} MiB",
            peak / MIB,
            image_len / 1024,
            limit / MIB
        ));
    }
    let after = fingerprint(input);
    if after.0 != before.0 {
        problems.push(format!("{what}: the input's bytes changed"));
    }
    if after.1 != before.1 {
        problems.push(format!("{what}: the input's mtime changed"));
    }
    Run {
        what,
        code,
        stdout,
        stderr,
        peak,
        problems,
    }
}

/// The ways the binaries are run on an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// `jffs2-dump -c IMAGE`
    Content,
    /// `jffs2-dump --list IMAGE`
    List,
    /// `jffs2-dump --extract OUT IMAGE`
    Extract,
    /// `jffs2-dump -e OUT IMAGE`
    Swap,
    /// `jffs2-fsck IMAGE`
    Fsck,
    /// `jffs2-sumtool -e ES -i IMAGE -o OUT`
    Sumtool,
    /// `jffs2-fsck --repair OUT IMAGE`
    Repair,
    /// `jffs2-convert -i IMAGE -o OUT`
    Convert,
}

const MODES: [Mode; 8] = [
    Mode::Content,
    Mode::List,
    Mode::Extract,
    Mode::Swap,
    Mode::Fsck,
    Mode::Sumtool,
    Mode::Repair,
    Mode::Convert,
];

impl Mode {
    /// The exit statuses its `--help` documents.
    fn documented(self) -> &'static [i32] {
        match self {
            // "Exit status: 0 on success, corrupt images included; 1 on errors".
            Mode::Content | Mode::Swap => &[0, 1],
            // "Exit status of the views: 0; 1 on errors; 2 when --extract refused
            // something or --cat met unreadable data".
            Mode::List => &[0, 1],
            Mode::Extract => &[0, 1, 2],
            // "0 consistent, 4 errors found, 8 operational error, 16 usage error".
            Mode::Fsck => &[0, 4, 8, 16],
            // "0 on success, 1 for an unknown option, 255 for any other error".
            Mode::Sumtool => &[0, 1, 255],
            // "With --repair: 1 when OUT was written and IMAGE had errors or something was
            // left out, 0 when IMAGE was consistent, 8 when no repair was possible."
            Mode::Repair => &[0, 1, 8],
            // "0 converted; 1 converted, but something ... was left out; 8 the input cannot
            // be converted ...; 16 usage error".
            Mode::Convert => &[0, 1, 8, 16],
        }
    }

    /// Whether the exit status says the output was written.
    fn wrote(self, code: i32) -> bool {
        match self {
            Mode::Content | Mode::List | Mode::Fsck => false,
            Mode::Extract => code != 1,
            Mode::Swap | Mode::Sumtool => code == 0,
            Mode::Repair | Mode::Convert => code == 0 || code == 1,
        }
    }

    fn has_output(self) -> bool {
        !matches!(self, Mode::Content | Mode::List | Mode::Fsck)
    }

    /// The program and its arguments.
    fn command(
        self,
        image: &Path,
        out: &Path,
        es: &str,
    ) -> (&'static str, Vec<std::ffi::OsString>) {
        let i = image.as_os_str().to_owned();
        let o = out.as_os_str().to_owned();
        let s = |x: &str| std::ffi::OsString::from(x);
        match self {
            Mode::Content => (DUMP, vec![s("-c"), i]),
            Mode::List => (DUMP, vec![s("--list"), i]),
            Mode::Extract => (DUMP, vec![s("--extract"), o, i]),
            Mode::Swap => (DUMP, vec![s("-e"), o, i]),
            Mode::Fsck => (FSCK, vec![i]),
            Mode::Sumtool => (SUMTOOL, vec![s("-e"), s(es), s("-i"), i, s("-o"), o]),
            Mode::Repair => (FSCK, vec![s("--repair"), o, i]),
            Mode::Convert => (CONVERT, vec![s("-i"), i, s("-o"), o, s("--no-progress")]),
        }
    }
}

/// Names in `dir` (dot files included), sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Whether `name` is one of the atomic output's temporary files for `out`: `.OUT.*.tmp`.
fn is_temp_of(name: &str, out: &str) -> bool {
    name.starts_with(&format!(".{out}.")) && name.ends_with(".tmp")
}

/// Whether `l` holds a `0x%08x` offset.
fn has_offset(l: &str) -> bool {
    l.match_indices("0x").any(|(i, _)| {
        let digits = l[i + 2..]
            .chars()
            .take_while(char::is_ascii_hexdigit)
            .count();
        digits >= 8
    })
}

/// (g): every error names a byte offset (`0x%08x`) or a path: one of `paths`, or an entry
/// of the image (extraction's "refused: PATH:", convert's "(inode #N /PATH)", fsck's
/// "ino N PATH:"). Returns the errors that name neither.
fn unlocated(r: &Run, paths: &[&Path]) -> Vec<String> {
    let paths: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let located = |l: &str| has_offset(l) || paths.iter().any(|p| l.contains(p.as_str()));
    let mut bad = Vec::new();
    // "PROGRAM: error!: ..." (and the errno line under it, which needs no location).
    for l in r.stderr.lines() {
        let error = l
            .split_once(": ")
            .is_some_and(|(_, m)| m.starts_with("error!:"));
        if error && !l.contains("(inode #") && !located(l) {
            bad.push(format!("{}: {l}", r.what));
        }
    }
    // fsck's findings: "ERROR code OFFSET|- [ino N [PATH]]: message".
    for l in r.stdout.lines() {
        if !l.starts_with("ERROR ") {
            continue;
        }
        let entry = l.split(' ').nth(3) == Some("ino");
        if !entry && !located(l) {
            bad.push(format!("{}: {l}", r.what));
        }
    }
    bad
}

/// Runs every mode on `case` and checks (a)-(e) and (g); returns the scratch directory
/// (the extraction is in `Extract/OUT`) and the runs in [`MODES`] order. `outside` is a
/// directory nothing may be written into.
fn run_case(case: &Case, outside: &Path) -> (tempfile::TempDir, Vec<Run>) {
    let work = scratch();
    let image = work.path().join(format!("{}.img", case.name));
    std::fs::write(&image, &case.image).unwrap();
    let len = case.image.len() as u64;
    let es = format!("0x{:x}", case.es);
    let mut runs = Vec::new();
    let mut problems = Vec::new();
    for (mode, &want) in MODES.iter().zip(&case.codes) {
        let dir = work.path().join(format!("{mode:?}"));
        std::fs::create_dir(&dir).unwrap();
        let out = dir.join("OUT");
        let (bin, args) = mode.command(&image, &out, &es);
        let args: Vec<&OsStr> = args.iter().map(|a| a.as_os_str()).collect();
        let mut r = run(bin, &args, &image, len);
        let ctx = format!("{}: {}", case.name, r.what);
        eprintln!(
            "{ctx}: exit {}, peak {} KiB, {} lines on stderr",
            r.code,
            r.peak / 1024,
            r.stderr.lines().count()
        );
        // HOSTILE_CLI_SHOW=1 shows what each run printed (with --nocapture).
        if std::env::var_os("HOSTILE_CLI_SHOW").is_some() {
            eprintln!(
                "{}\n{}",
                r.stdout.lines().take(40).collect::<Vec<_>>().join("\n"),
                r.stderr
            );
        }
        problems.append(&mut r.problems);
        // (b) documented, and the status expected for this image.
        assert!(
            mode.documented().contains(&r.code),
            "{ctx}: exit {} is not documented ({:?})\nstderr: {}",
            r.code,
            mode.documented(),
            r.stderr
        );
        if r.code != want {
            problems.push(format!(
                "{ctx}: exit {} instead of {want}; stderr:\n{}",
                r.code, r.stderr
            ));
        }
        // (e) the whole output or nothing, and never a temporary file.
        if mode.has_output() {
            let names = names_in(&dir);
            if names.iter().any(|n| is_temp_of(n, "OUT")) {
                problems.push(format!("{ctx}: temporary file left: {names:?}"));
            }
            let expect: &[&str] = if mode.wrote(r.code) { &["OUT"] } else { &[] };
            if names != expect {
                problems.push(format!("{ctx}: exit {}, but {names:?} written", r.code));
            }
        }
        // (g) messages that say where.
        problems.extend(unlocated(&r, &[&image, &out]));
        if !names_in(outside).is_empty() {
            problems.push(format!("{ctx}: written outside, through a link"));
        }
        runs.push(r);
    }
    // (b) the hostile condition was present and reported.
    let fsck = &runs[4];
    for m in &case.marks {
        if !fsck.stdout.contains(&hex8(*m)) {
            problems.push(format!(
                "{}: jffs2-fsck does not name {}:\n{}",
                case.name,
                hex8(*m),
                fsck.stdout
            ));
        }
    }
    // -c warns about each bad header; sumtool counts them, naming the first of each kind.
    let warned = [
        (0usize, "jffs2-dump -c", &case.headers[..]),
        (
            5,
            "jffs2-sumtool",
            &case.headers[..case.headers.len().min(1)],
        ),
    ];
    for (k, tool, offsets) in warned {
        for m in offsets {
            if !runs[k].stderr.contains(&hex8(*m)) {
                problems.push(format!(
                    "{}: {tool} does not warn about {}:\n{}",
                    case.name,
                    hex8(*m),
                    runs[k].stderr
                ));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{}: {} broken guarantees:\n{}",
        case.name,
        problems.len(),
        problems.join("\n")
    );
    (work, runs)
}

/// A directory that symbolic links in the images point at: nothing may appear in it.
fn outside_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("jffs2-outside-")
        .tempdir()
        .unwrap()
}

/// The outputs of sumtool, --repair and convert (where written) checked by jffs2-fsck: the
/// status for sumtool's (it carries every node Linux reads, dangling entries included) and
/// for the rewritten ones.
fn check_outputs(work: &Path, sumtool: i32, rewritten: i32) {
    for (m, want) in [
        (Mode::Sumtool, sumtool),
        (Mode::Repair, rewritten),
        (Mode::Convert, rewritten),
    ] {
        let out = work.join(format!("{m:?}")).join("OUT");
        if !out.exists() {
            continue;
        }
        let len = std::fs::metadata(&out).unwrap().len();
        let r = run(FSCK, &[out.as_os_str()], &out, len);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(
            r.code, want,
            "jffs2-fsck of the {m:?} output:\n{}",
            r.stdout
        );
    }
}

fn read(p: &Path) -> Vec<u8> {
    std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

// ---------------------------------------------------------------------------------------
// The hostile images
// ---------------------------------------------------------------------------------------

#[test]
fn a_totlen_of_zero() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&totlen_zero(), outside.path());
    let x = work.path().join("Extract/OUT");
    assert_eq!(read(&x.join("after-zero")), b"after the zero-length node\n");
    assert!(
        runs[1].stdout.contains(" after-zero\n"),
        "{}",
        runs[1].stdout
    );
    check_outputs(work.path(), 0, 0);
}

#[test]
fn totlen_four_gib() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&totlen_4gib(), outside.path());
    let x = work.path().join("Extract/OUT");
    assert_eq!(read(&x.join("after")), b"still here\n");
    // The 4 GiB node is skipped like Linux skips it: its name leads nowhere.
    assert!(!x.join("four-gib").exists());
    assert!(!runs[1].stdout.contains("four-gib"), "{}", runs[1].stdout);
    check_outputs(work.path(), 4, 0);
}

#[test]
fn totlen_past_the_end_of_the_image() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let case = totlen_past_end();
    assert_ne!(case.image.len() % case.es as usize, 0);
    let (work, runs) = run_case(&case, outside.path());
    let x = work.path().join("Extract/OUT");
    assert!(!x.join("cut").exists());
    assert_eq!(read(&x.join("readme")), b"hello\n");
    assert!(
        runs[2].stderr.contains("refused: cut:"),
        "{}",
        runs[2].stderr
    );
    assert!(
        runs[4].stdout.contains("truncated-image"),
        "{}",
        runs[4].stdout
    );
    check_outputs(work.path(), 4, 0);
}

#[test]
fn dot_dotdot_empty_and_slash_names() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&bad_names(), outside.path());
    let x = work.path().join("Extract/OUT");
    assert_eq!(names_in(&x), ["etc", "ok", "readme", "sub"]);
    assert!(names_in(&x.join("sub")).is_empty());
    assert!(!work.path().join("Extract/escape").exists());
    let refused = runs[2].stderr.matches(": refused: ").count();
    assert_eq!(refused, 8, "{}", runs[2].stderr);
    // fsck: one bad-name error per entry.
    let bad = runs[4]
        .stdout
        .lines()
        .filter(|l| l.starts_with("ERROR bad-name "))
        .count();
    assert_eq!(bad, 8, "{}", runs[4].stdout);
    // --list shows them escaped: a '/' never passes for a path.
    for shown in [
        "a\\x2fb",
        "\\x2fetc\\x2fpasswd",
        "..\\x2f..\\x2fescape",
        "sub/..",
    ] {
        assert!(
            runs[1].stdout.contains(shown),
            "{shown}: {}",
            runs[1].stdout
        );
    }
    // sumtool and convert carry the names over (Linux shows them): fsck still objects.
    check_outputs(work.path(), 4, 4);
}

#[test]
fn symlink_then_directory_of_the_same_name() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&symlink_then_dir(outside.path()), outside.path());
    let x = work.path().join("Extract/OUT");
    for (d, content) in [
        ("s", "inside s\n"),
        ("t", "inside t\n"),
        ("r", "inside r\n"),
    ] {
        let m = std::fs::symlink_metadata(x.join(d)).unwrap();
        assert!(m.is_dir(), "{d} is not a directory");
        assert_eq!(read(&x.join(d).join("child")), content.as_bytes());
    }
    assert!(names_in(outside.path()).is_empty());
    for d in ["s", "t", "r"] {
        let line = format!(" {d}/child\n");
        assert!(runs[1].stdout.contains(&line), "{d}: {}", runs[1].stdout);
    }
    check_outputs(work.path(), 0, 0);
}

#[test]
fn summaries_pointing_outside_their_block() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&summaries_outside(), outside.path());
    assert_eq!(runs[4].stdout.matches("ERROR summary-invalid ").count(), 3);
    // The image still lists and extracts (by a full scan); convert and --repair write what
    // that full scan reads, saying that Linux would not mount the input.
    assert!(work.path().join("Extract/OUT/count").exists());
    for r in [&runs[6], &runs[7]] {
        assert!(r.stderr.contains("Linux would not mount"), "{}", r.stderr);
    }
    // sumtool ignores old summaries (as mtd-utils' does), says what Linux would make of
    // them, and writes true ones.
    assert!(
        runs[5].stderr.contains("the kernel would report"),
        "{}",
        runs[5].stderr
    );
    check_outputs(work.path(), 0, 0);
}

#[test]
fn misordered_summaries() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&summaries_misordered(), outside.path());
    assert_eq!(
        runs[4].stdout.matches("ERROR summary-invalid ").count(),
        2,
        "{}",
        runs[4].stdout
    );
    assert!(work.path().join("Extract/OUT/order-3").exists());
    assert!(
        runs[5].stderr.contains("the kernel would report"),
        "{}",
        runs[5].stderr
    );
    check_outputs(work.path(), 0, 0);
}

#[test]
fn unknown_compressor_ids() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let case = unknown_compressors();
    let marks = case.marks.clone();
    let (work, runs) = run_case(&case, outside.path());
    // Extraction names the node of each unreadable range and leaves it a hole.
    for m in &marks {
        assert!(runs[2].stderr.contains(&hex8(*m)), "{}", runs[2].stderr);
    }
    let x = work.path().join("Extract/OUT/c255");
    assert_eq!(read(&x), vec![0; 4096]);
    assert_eq!(
        runs[4].stdout.matches("ERROR unknown-compressor ").count(),
        5,
        "{}",
        runs[4].stdout
    );
    // Kept as they are (Linux cannot read them either): fsck still objects.
    check_outputs(work.path(), 4, 4);
}

#[test]
fn decompression_bombs_and_4_gib_claims_in_bounded_memory() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let outside = outside_dir();
    let (work, runs) = run_case(&bombs(), outside.path());
    let x = work.path().join("Extract/OUT");
    let zeros = std::fs::metadata(x.join("zeros-47")).unwrap();
    assert_eq!(zeros.len(), 4 << 20);
    let letters = read(&x.join("letters-1"));
    assert_eq!(letters.len(), 16 << 20);
    assert!(letters.iter().all(|&b| b == b'a'));
    assert!(
        runs[4].stdout.contains("unreadable-data"),
        "{}",
        runs[4].stdout
    );
}

// ---------------------------------------------------------------------------------------
// Failures leave nothing behind
// ---------------------------------------------------------------------------------------

/// Runs that fail before or while writing leave an existing output untouched and no
/// temporary file, and name the file.
#[test]
fn failed_runs_leave_old_outputs_untouched() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let work = scratch();
    let unmountable = work.path().join("unmountable.img");
    std::fs::write(&unmountable, incompat_only()).unwrap();
    let missing = work.path().join("missing.img");
    let outs = work.path().join("outs");
    std::fs::create_dir(&outs).unwrap();
    let out = outs.join("OUT");
    let s = OsStr::new;
    // (program, arguments, exit status, the path its error names).
    let cases = [
        (
            SUMTOOL,
            vec![s("-o"), out.as_os_str(), s("-i"), missing.as_os_str()],
            255,
            &missing,
        ),
        (
            MKFS,
            vec![s("-r"), missing.as_os_str(), s("-o"), out.as_os_str()],
            255,
            &missing,
        ),
        (
            CONVERT,
            vec![s("-i"), unmountable.as_os_str(), s("-o"), out.as_os_str()],
            8,
            &unmountable,
        ),
        (
            FSCK,
            vec![s("--repair"), out.as_os_str(), unmountable.as_os_str()],
            8,
            &unmountable,
        ),
        (
            DUMP,
            vec![s("-e"), out.as_os_str(), missing.as_os_str()],
            1,
            &missing,
        ),
    ];
    for (bin, args, code, named) in cases {
        std::fs::write(&out, b"old output\n").unwrap();
        let r = run(bin, &args, &unmountable, 1 << 20);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.code, code, "{}: {}", r.what, r.stderr);
        assert_eq!(names_in(&outs), ["OUT"], "{}", r.what);
        assert_eq!(read(&out), b"old output\n", "{}", r.what);
        assert!(
            r.stderr.contains("error!:"),
            "{}: no error: {}",
            r.what,
            r.stderr
        );
        let bad = unlocated(&r, &[named, &out]);
        assert!(bad.is_empty(), "{bad:?}");
    }
}

/// An image Linux refuses (an INCOMPAT node of a type it does not know) and of which nothing
/// can be read: convert and --repair fail on it.
fn incompat_only() -> Vec<u8> {
    let mut f = Flash::new(0x4000);
    f.put(&header(0xE0FF, 12));
    f.image(5)
}

/// A 1 MiB tmpfs mounted for the test, unmounted (and its mount point removed) on drop,
/// also when the test fails.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn mount() -> Result<Tmpfs, String> {
        let dir = tempfile::Builder::new()
            .prefix("jffs2-full-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let o = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| format!("mount: {e}"))?;
        if !o.status.success() {
            return Err(String::from_utf8_lossy(&o.stderr).trim().to_string());
        }
        Ok(Tmpfs { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Empties it (between runs).
    fn clear(&self) {
        for n in names_in(self.path()) {
            let p = self.path().join(n);
            if std::fs::symlink_metadata(&p).unwrap().is_dir() {
                std::fs::remove_dir_all(&p).unwrap();
            } else {
                std::fs::remove_file(&p).unwrap();
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(self.dir.path())
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount")
                .arg("-l")
                .arg(self.dir.path())
                .status();
        }
    }
}

/// Every regular file below `root`, relative path → content.
fn files_below(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                stack.push(p);
            } else {
                assert!(m.is_file(), "{}: not a file", p.display());
                v.push((p.strip_prefix(root).unwrap().to_path_buf(), read(&p)));
            }
        }
    }
    v.sort();
    v
}

/// (f) A full disk: a multi-MiB output into a 1 MiB tmpfs.
#[test]
fn a_full_disk_leaves_nothing_behind() {
    if !(common::skip::gnu_time()) {
        return;
    }
    let work = scratch();
    // 3 MiB of incompressible files, and some text.
    let src = work.path().join("src");
    std::fs::create_dir_all(src.join("docs")).unwrap();
    for k in 0..24u64 {
        std::fs::write(
            src.join(format!("f{k:02}.bin")),
            common::random(k, 128 << 10),
        )
        .unwrap();
    }
    for k in 0..8u64 {
        std::fs::write(src.join(format!("docs/t{k}.txt")), common::text(k, 9000)).unwrap();
    }
    let image = work.path().join("in.img");
    let o = Command::new(MKFS)
        .arg("-r")
        .arg(&src)
        .arg("-o")
        .arg(&image)
        .arg("--no-progress")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let len = std::fs::metadata(&image).unwrap().len();
    assert!(len > 3 * MIB, "{len}");

    let tmpfs = match Tmpfs::mount() {
        Ok(t) => t,
        Err(e) => {
            // the full-disk guarantees (f) need a small filesystem to fill
            common::skip::skip(&format!("a tmpfs mount (root; mount said: {e})"));
            return;
        }
    };
    let full = tmpfs.path();
    let out = full.join("out.img");
    let s = OsStr::new;
    let a_source_file = src.join("f00.bin");
    let writers: Vec<(&str, Vec<&OsStr>, &Path, i32)> = vec![
        (
            MKFS,
            vec![
                s("-r"),
                src.as_os_str(),
                s("-o"),
                out.as_os_str(),
                s("--no-progress"),
            ],
            &a_source_file,
            255,
        ),
        (
            CONVERT,
            vec![
                s("-i"),
                image.as_os_str(),
                s("-o"),
                out.as_os_str(),
                s("--no-progress"),
            ],
            &image,
            8,
        ),
        (
            SUMTOOL,
            vec![s("-i"), image.as_os_str(), s("-o"), out.as_os_str()],
            &image,
            255,
        ),
        (
            DUMP,
            vec![s("-e"), out.as_os_str(), image.as_os_str()],
            &image,
            1,
        ),
        (
            FSCK,
            vec![s("--repair"), out.as_os_str(), image.as_os_str()],
            &image,
            8,
        ),
    ];
    for old in [None, Some(&b"an older image\n"[..])] {
        for (bin, args, input, code) in &writers {
            tmpfs.clear();
            if let Some(old) = old {
                std::fs::write(&out, old).unwrap();
            }
            let r = run(bin, args, input, len);
            eprintln!("{}: exit {}:\n{}", r.what, r.code, r.stderr.trim_end());
            assert!(r.problems.is_empty(), "{:?}", r.problems);
            assert_eq!(r.code, *code, "{}: {}", r.what, r.stderr);
            assert!(
                r.stderr.contains(&*out.to_string_lossy())
                    && r.stderr.contains("No space left on device"),
                "{}: the message must name {} and the full disk:\n{}",
                r.what,
                out.display(),
                r.stderr
            );
            let bad = unlocated(&r, &[&out, input]);
            assert!(bad.is_empty(), "{bad:?}");
            match old {
                None => assert!(
                    names_in(full).is_empty(),
                    "{}: left {:?}",
                    r.what,
                    names_in(full)
                ),
                Some(old) => {
                    assert_eq!(names_in(full), ["out.img"], "{}", r.what);
                    assert_eq!(read(&out), old, "{}: the older output changed", r.what);
                }
            }
        }
    }

    // Extraction: stops at the full disk (exit 1), naming the file it was writing; what it
    // leaves is complete files only (the one being written is removed), and nothing else.
    tmpfs.clear();
    let dest = full.join("tree");
    let r = run(
        DUMP,
        &[s("--extract"), dest.as_os_str(), image.as_os_str()],
        &image,
        len,
    );
    eprintln!("{}: exit {}:\n{}", r.what, r.code, r.stderr.trim_end());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&*dest.to_string_lossy()) && r.stderr.contains("No space left on device"),
        "{}",
        r.stderr
    );
    let bad = unlocated(&r, &[&dest, &image]);
    assert!(bad.is_empty(), "{bad:?}");
    assert_eq!(names_in(full), ["tree"]);
    let left = files_below(&dest);
    assert!(left.len() < 24, "everything fit? {}", left.len());
    for (rel, content) in &left {
        assert_eq!(
            content,
            &read(&src.join(rel)),
            "{}: left incomplete",
            rel.display()
        );
        assert!(
            !r.stderr.contains(&format!("writing {}:", rel.display())),
            "{}: the file being written was left: {}",
            rel.display(),
            r.stderr
        );
    }
    tmpfs.clear();
}
