//! A node-by-node image builder for tests and fuzz seeds.
//!
//! [`Img`] collects nodes encoded by the [`format`](crate::format) encoders (dirents, inodes
//! with stored or compressed data, xattr datums and references, padding, cleanmarkers, or any
//! raw bytes) and lays them out with the one erase-block writer ([`BlockWriter`]), as mkfs does:
//! a cleanmarker at each block start, nodes 4-byte aligned, a node that does not fit moved to
//! the next block, optionally a summary in every block. The result is padded with erased flash
//! (0xFF) to whole blocks and to a minimum number of blocks, then bytes written by hand at
//! absolute offsets ([`Img::put`]) are applied: the image as it would be flashed.
//!
//! Built only for the crate's own tests and with the `testing` feature (the repository's
//! integration tests and fuzz seeds); not part of the stable API.
//!
//! ```text
//! use jffs2::format::{dt, Endian};
//! use jffs2::testing::Img;
//!
//! let mut img = Img::new().endian(Endian::Big).erase_size(8192);
//! img.dir(1, 2, b"etc", 1).file(2, 3, b"motd", 2, b"hello\n");
//! let bytes = img.build();
//! assert_eq!(bytes.len(), 5 * 8192);
//! ```

use crate::compress::{
    lzo_compress, rtime_compress, zlib_compress, COMPR_LZO, COMPR_NONE, COMPR_RTIME, COMPR_ZERO,
    COMPR_ZLIB,
};
use crate::format::{
    dt, encode_cleanmarker, encode_padding, pad4, DirentNode, Endian, InodeNode, XattrNode,
    XrefNode, CLEANMARKER_SIZE,
};
use crate::layout::{record_for, BlockWriter, EndPad, LayoutConfig};

/// `S_IFDIR | 0755`, the mode [`Img::dir`] gives.
pub const DIR_MODE: u32 = 0o040755;
/// `S_IFREG | 0644`, the mode [`Img::data`] and [`Img::file`] give.
pub const FILE_MODE: u32 = 0o100644;

/// An image built node by node. The fields are the layout and the nodes so far; tests may
/// change them between calls (e.g. corrupt a node in `nodes`).
#[derive(Clone, Debug)]
pub struct Img {
    /// Byte order of every node (default little endian).
    pub e: Endian,
    /// Erase-block size (default 16 KiB).
    pub es: u32,
    /// Cleanmarker size at each block start, `None` for none (default 12).
    pub cleanmarker: Option<u32>,
    /// An erase-block summary at the end of every block (default off).
    pub summary: bool,
    /// The image is padded with 0xFF to at least this many blocks (default 5, the fewest
    /// Linux mounts; 0 for no minimum).
    pub min_blocks: u32,
    /// How the laid-out image ends (default [`EndPad::Block`]: whole blocks; [`EndPad::None`]
    /// ends after the last node, as `mkfs.jffs2` without `-p`).
    pub end: EndPad,
    /// A node fits in the rest of a block by its unpadded length, as `mkfs.jffs2` decides
    /// (default `false`: by its length padded to 4 bytes).
    pub exact_fit: bool,
    /// Dirents get `mctime = base + version` when set, else 0 (default `None`).
    pub dirent_mctime: Option<u32>,
    /// Inodes of [`Img::data`], [`Img::meta`] and [`Img::dir`] get `mtime = base + version`
    /// when set, else 0 (default `None`).
    pub inode_mtime: Option<u32>,
    /// The encoded nodes, in write order (unpadded).
    pub nodes: Vec<Vec<u8>>,
    /// Bytes written over the laid-out image at absolute offsets, in order.
    pub patches: Vec<(u32, Vec<u8>)>,
}

impl Default for Img {
    fn default() -> Self {
        Img::new()
    }
}

impl Img {
    /// An empty little-endian image of 16 KiB blocks with 12-byte cleanmarkers, no summary,
    /// at least 5 blocks.
    pub fn new() -> Self {
        Img {
            e: Endian::Little,
            es: 16384,
            cleanmarker: Some(CLEANMARKER_SIZE),
            summary: false,
            min_blocks: 5,
            end: EndPad::Block,
            exact_fit: false,
            dirent_mctime: None,
            inode_mtime: None,
            nodes: Vec::new(),
            patches: Vec::new(),
        }
    }

    /// Sets the byte order.
    pub fn endian(mut self, e: Endian) -> Self {
        self.e = e;
        self
    }

    /// Sets the erase-block size.
    pub fn erase_size(mut self, es: u32) -> Self {
        self.es = es;
        self
    }

    /// Sets the cleanmarker size (`None`: no cleanmarkers, as `mkfs.jffs2 -n`).
    pub fn cleanmarkers(mut self, size: Option<u32>) -> Self {
        self.cleanmarker = size;
        self
    }

    /// Writes an erase-block summary at the end of every block, as `mkfs --summary` does.
    pub fn with_summary(mut self) -> Self {
        self.summary = true;
        self
    }

    /// Sets the minimum number of blocks of the built image.
    pub fn min_blocks(mut self, n: u32) -> Self {
        self.min_blocks = n;
        self
    }

    /// Ends the image as `pad` says, with no minimum number of blocks (e.g. [`EndPad::None`]:
    /// right after the last node).
    pub fn end_pad(mut self, pad: EndPad) -> Self {
        self.end = pad;
        self.min_blocks = 0;
        self
    }

    /// Lets a node fit in the rest of a block by its unpadded length (see `exact_fit`).
    pub fn exact_fit(mut self) -> Self {
        self.exact_fit = true;
        self
    }

    /// Dirents get `mctime = base + version` (later versions are later in time).
    pub fn dirent_mctime(mut self, base: u32) -> Self {
        self.dirent_mctime = Some(base);
        self
    }

    /// Inodes of the convenience methods get `mtime = base + version`.
    pub fn inode_mtime(mut self, base: u32) -> Self {
        self.inode_mtime = Some(base);
        self
    }

    /// Appends a node given as bytes (any type, even invalid); it is laid out like the others.
    pub fn raw(&mut self, node: Vec<u8>) -> &mut Self {
        self.nodes.push(node);
        self
    }

    /// A dirent: `name` in directory `pino` pointing at `ino` (0: a deletion dirent).
    pub fn dirent(
        &mut self,
        pino: u32,
        version: u32,
        ino: u32,
        dtype: u8,
        name: &[u8],
    ) -> &mut Self {
        let mut b = Vec::new();
        DirentNode {
            pino,
            version,
            ino,
            mctime: self.dirent_mctime.map_or(0, |t| t + version),
            dtype,
            ..Default::default()
        }
        .encode(self.e, name, &mut b);
        self.raw(b)
    }

    /// An inode node with every header field given, followed by `stored` as it is on flash
    /// (`csize` and the data CRC come from `stored`).
    pub fn inode(&mut self, n: InodeNode, stored: &[u8]) -> &mut Self {
        let mut b = Vec::new();
        n.encode(self.e, stored, &mut b);
        self.raw(b)
    }

    /// An inode node whose data is `data` compressed with `n.compr` (none, zero, zlib, lzo,
    /// rtime); `dsize` is set to `data.len()`.
    ///
    /// # Panics
    /// If the compressor is another one or cannot shrink `data` (choose compressible data).
    pub fn compressed(&mut self, mut n: InodeNode, data: &[u8]) -> &mut Self {
        n.dsize = data.len() as u32;
        let stored = match n.compr {
            COMPR_NONE => data.to_vec(),
            COMPR_ZERO => Vec::new(),
            c => {
                let packed = match c {
                    COMPR_ZLIB => zlib_compress(data, data.len()),
                    COMPR_LZO => lzo_compress(data, data.len()),
                    COMPR_RTIME => rtime_compress(data, data.len()),
                    _ => panic!("testing::Img::compressed: compressor {c} not supported"),
                };
                match packed {
                    Some((stored, n_in)) if n_in == data.len() => stored,
                    _ => panic!("testing::Img::compressed: compressor {c} cannot shrink the data"),
                }
            }
        };
        self.inode(n, &stored)
    }

    /// An inode node from the fields tests vary most, `stored` as on flash.
    #[allow(clippy::too_many_arguments)]
    pub fn inode_parts(
        &mut self,
        ino: u32,
        version: u32,
        mode: u32,
        isize: u32,
        offset: u32,
        dsize: u32,
        compr: u8,
        stored: &[u8],
    ) -> &mut Self {
        self.inode(
            InodeNode {
                ino,
                version,
                mode,
                isize,
                offset,
                dsize,
                compr,
                ..Default::default()
            },
            stored,
        )
    }

    /// A data node of a regular file ([`FILE_MODE`]): `data` uncompressed at `ofs`.
    pub fn data(&mut self, ino: u32, version: u32, isize: u32, ofs: u32, data: &[u8]) -> &mut Self {
        self.inode(
            InodeNode {
                ino,
                version,
                mode: FILE_MODE,
                isize,
                mtime: self.inode_mtime.map_or(0, |t| t + version),
                offset: ofs,
                dsize: data.len() as u32,
                ..Default::default()
            },
            data,
        )
    }

    /// A metadata node (no data) of any mode.
    pub fn meta(&mut self, ino: u32, version: u32, mode: u32, isize: u32) -> &mut Self {
        self.inode(
            InodeNode {
                ino,
                version,
                mode,
                isize,
                mtime: self.inode_mtime.map_or(0, |t| t + version),
                ..Default::default()
            },
            &[],
        )
    }

    /// A directory: its inode (version 1, [`DIR_MODE`]), then its dirent `name` in `parent`
    /// at dirent version `version`.
    pub fn dir(&mut self, parent: u32, ino: u32, name: &[u8], version: u32) -> &mut Self {
        self.meta(ino, 1, DIR_MODE, 0);
        self.dirent(parent, version, ino, dt::DIR, name)
    }

    /// A regular file holding `data` in one uncompressed node (version 1), then its dirent.
    pub fn file(
        &mut self,
        parent: u32,
        ino: u32,
        name: &[u8],
        version: u32,
        data: &[u8],
    ) -> &mut Self {
        self.data(ino, 1, data.len() as u32, 0, data);
        self.dirent(parent, version, ino, dt::REG, name)
    }

    /// An xattr datum node (`prefix` is an `XATTR_PREFIX` index, e.g. 1 for `user.`).
    pub fn xattr(
        &mut self,
        xid: u32,
        version: u32,
        prefix: u8,
        name: &[u8],
        value: &[u8],
    ) -> &mut Self {
        let mut b = Vec::new();
        XattrNode {
            xid,
            version,
            xprefix: prefix,
            ..Default::default()
        }
        .encode(self.e, name, value, &mut b);
        self.raw(b)
    }

    /// An xattr reference node: datum `xid` attached to inode `ino`.
    pub fn xref(&mut self, ino: u32, xid: u32, xseqno: u32) -> &mut Self {
        let mut b = Vec::new();
        XrefNode {
            ino,
            xid,
            xseqno,
            ..Default::default()
        }
        .encode(self.e, &mut b);
        self.raw(b)
    }

    /// A padding node of `totlen` bytes (at least 12) among the nodes.
    pub fn padding(&mut self, totlen: u32) -> &mut Self {
        let mut b = Vec::new();
        encode_padding(self.e, totlen, &mut b);
        self.raw(b)
    }

    /// A cleanmarker node of `size` bytes among the nodes (not at a block start: misplaced).
    pub fn cleanmarker_node(&mut self, size: u32) -> &mut Self {
        let mut b = Vec::new();
        encode_cleanmarker(self.e, size, &mut b);
        self.raw(b)
    }

    /// Writes `bytes` at absolute offset `ofs` of the built image, over whatever the layout put
    /// there (extending it with 0xFF if needed): nodes placed by hand, torn writes, junk.
    pub fn put(&mut self, ofs: u32, bytes: &[u8]) -> &mut Self {
        self.patches.push((ofs, bytes.to_vec()));
        self
    }

    /// The layout's configuration.
    pub fn layout(&self) -> LayoutConfig {
        LayoutConfig {
            endian: self.e,
            erase_size: self.es,
            cleanmarker: self.cleanmarker,
            summary: self.summary,
        }
    }

    /// The image as flashed: the nodes through the erase-block writer, whole blocks (unless
    /// `end` says otherwise), at least `min_blocks`, erased bytes 0xFF, then the
    /// [`put`](Img::put) bytes.
    ///
    /// # Panics
    /// If a node is larger than an erase block (the writer refuses it).
    pub fn build(&self) -> Vec<u8> {
        let mut w = BlockWriter::new(Vec::new(), self.layout());
        for n in &self.nodes {
            let rec = if self.summary {
                record_for(n, self.e, 0).map_or(0, |r| r.size() as u32)
            } else {
                0
            };
            let req = if self.exact_fit {
                n.len() as u32
            } else {
                pad4(n.len() as u32)
            };
            w.prepare(req, rec)
                .and_then(|()| w.write_node(n))
                .expect("testing::Img: a node larger than an erase block");
        }
        let (mut out, _) = w.finish(self.end).expect("testing::Img: writing to memory");
        let min = self.min_blocks as usize * self.es as usize;
        if out.len() < min {
            out.resize(min, 0xFF);
        }
        for (ofs, bytes) in &self.patches {
            let at = *ofs as usize;
            if out.len() < at + bytes.len() {
                out.resize(at + bytes.len(), 0xFF);
            }
            out[at..at + bytes.len()].copy_from_slice(bytes);
        }
        out
    }
}

/// A xorshift32 generator: reproducible, incompressible test data.
pub struct XorShift(u32);

impl XorShift {
    /// A generator starting from `seed` (which must not be 0, the one fixed point).
    pub fn new(seed: u32) -> Self {
        XorShift(seed)
    }

    /// The next 32-bit value.
    pub fn next_u32(&mut self) -> u32 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.0 = x;
        x
    }

    /// `n` bytes: the low byte of each next value.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u32() as u8).collect()
    }
}
