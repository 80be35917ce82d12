//! Reading data: `read.c: jffs2_read_dnode` and `jffs2_read_inode_range`
//! (`docs/spec/kernel-jffs2-spec.md` §6.5, §1.9).

use std::rc::Rc;

use super::readinode::{DataNode, Inode};
use super::{Fs, FsError, Md5, ReadError, RubinMode};
use crate::compress::{
    self, dynrubin_decompress, rubinmips_decompress, ComprError, COMPR_DYNRUBIN, COMPR_NONE,
    COMPR_RUBINMIPS, COMPR_ZERO, COMPR_ZLIB,
};
use crate::crc::crc32;
use crate::format::{InodeNode, INODE_SIZE};

/// Decompressed data of a node kept by a streaming read: a few nodes' worth.
const CACHE_BYTES: usize = 64 << 20;
/// At most this many decompressed nodes are kept (bounds every cache lookup).
const CACHE_ENTRIES: usize = 32;

/// The data of one node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeData {
    /// A ZERO node: this many zero bytes (never materialised).
    Zeros(u32),
    /// Decompressed bytes (exactly the node's `dsize`).
    Bytes(Vec<u8>),
}

impl NodeData {
    /// The bytes, with zeros materialised (`len` bytes for a ZERO node).
    pub fn into_vec(self, len: u32) -> Vec<u8> {
        match self {
            NodeData::Zeros(_) => vec![0; len as usize],
            NodeData::Bytes(b) => b,
        }
    }
}

/// What a node holds once its CRCs pass (see [`Fs::node_data`]).
enum Payload<'i> {
    /// A ZERO node of this many bytes.
    Zeros(u32),
    /// Uncompressed data, `dsize` bytes.
    Stored(&'i [u8]),
    /// Compressed data and the `dsize` it must decompress to.
    Packed { compr: u8, data: (&'i [u8], usize) },
}

impl Fs<'_> {
    /// `jffs2_read_dnode` for a whole node (§6.5): re-checks the node CRC, fixes up the legacy
    /// ZERO node, checks the data CRC and decompresses to exactly `dsize` bytes.
    ///
    /// * The compressor is `compr | usercompr << 8`, masked to the low byte only when that is
    ///   ZLIB or lower: LZO with a non-zero `usercompr` is "not available" (§1.9).
    /// * Rubin ids follow [`super::FsOptions::rubin`]; COPY, LZMA and unknown ids are
    ///   [`ComprError::UnsupportedCompressor`], never a panic.
    /// * A compressed node with `dsize` over [`super::FsOptions::kmalloc_max`] cannot be read
    ///   (the kernel's `kmalloc(dsize)` fails), so decompression never allocates more.
    pub fn node_data(&self, dn: &DataNode) -> Result<NodeData, ReadError> {
        let mut out = Vec::new();
        match self.node_data_append(dn, &mut out)? {
            Some(n) => Ok(NodeData::Zeros(n)),
            None => Ok(NodeData::Bytes(out)),
        }
    }

    /// [`Fs::node_data`] appending the node's bytes to `out` (left as it was on an error),
    /// so that consecutive nodes can share one allocation; for a ZERO node (never
    /// materialised: nothing appended) its length.
    pub(crate) fn node_data_append(
        &self,
        dn: &DataNode,
        out: &mut Vec<u8>,
    ) -> Result<Option<u32>, ReadError> {
        match self.payload(dn)? {
            Payload::Zeros(n) => Ok(Some(n)),
            Payload::Stored(d) => {
                out.extend_from_slice(d);
                Ok(None)
            }
            Payload::Packed { compr, data } => {
                self.unpack(compr, data, dn.offset, out)?;
                Ok(None)
            }
        }
    }

    /// [`Fs::node_data`] for a check that only needs to know whether a node reads: the same
    /// result, the data decompressed into `buf` (reused from node to node, so nothing is
    /// allocated per node) and not kept.
    pub(crate) fn check_node_data(
        &self,
        dn: &DataNode,
        buf: &mut Vec<u8>,
    ) -> Result<(), ReadError> {
        match self.payload(dn)? {
            Payload::Zeros(_) | Payload::Stored(_) => Ok(()),
            Payload::Packed { compr, data } => {
                buf.clear();
                self.unpack(compr, data, dn.offset, buf)
            }
        }
    }

    /// Everything [`Fs::node_data`] checks before decompressing, and the data to decompress
    /// (to exactly the node's `dsize`, which `data` carries as its length when stored).
    fn payload(&self, dn: &DataNode) -> Result<Payload<'_>, ReadError> {
        let off = dn.offset;
        let b = self
            .image
            .get(off as usize..)
            .filter(|b| b.len() >= INODE_SIZE)
            .ok_or(ReadError::OutOfImage { offset: off })?;
        let ri = InodeNode::decode(b, self.scan.geometry.endian, u64::from(off))
            .map_err(|_| ReadError::OutOfImage { offset: off })?;
        let computed = crc32(&b[..INODE_SIZE - 8]);
        if computed != ri.node_crc {
            return Err(ReadError::NodeCrc {
                offset: off,
                stored: ri.node_crc,
                computed,
            });
        }
        let (mut csize, mut dsize) = (ri.csize, ri.dsize);
        if ri.compr == COMPR_ZERO && dsize == 0 && csize != 0 {
            dsize = csize;
            csize = 0;
        }
        if ri.compr == COMPR_ZERO {
            return Ok(Payload::Zeros(dsize));
        }
        if ri.compr != COMPR_NONE && dsize > self.opts.kmalloc_max {
            return Err(ReadError::TooLarge { offset: off, dsize });
        }
        let data = b
            .get(INODE_SIZE..INODE_SIZE + csize as usize)
            .ok_or(ReadError::OutOfImage { offset: off })?;
        if !self.data_crc_known(dn) {
            let computed = crc32(data);
            if computed != ri.data_crc {
                return Err(ReadError::DataCrc {
                    offset: off,
                    stored: ri.data_crc,
                    computed,
                });
            }
            self.data_crc_passed(dn);
        }
        if ri.compr == COMPR_NONE {
            return match data.get(..dsize as usize) {
                Some(d) => Ok(Payload::Stored(d)),
                None => Err(ReadError::ShortUncompressed {
                    offset: off,
                    csize,
                    dsize,
                }),
            };
        }
        // jffs2_decompress: "Older code had a bug where it would write non-zero 'usercompr'
        // fields": masked only for ids up to ZLIB.
        if ri.compr > COMPR_ZLIB && ri.usercompr != 0 {
            return Err(ReadError::Decompress {
                offset: off,
                error: ComprError::UnsupportedCompressor(ri.compr),
            });
        }
        Ok(Payload::Packed {
            compr: ri.compr,
            data: (data, dsize as usize),
        })
    }

    /// Decompresses `data.0` (of the node at `offset`) with compressor `compr` into exactly
    /// `data.1` bytes appended to `out` (left as it was on an error).
    fn unpack(
        &self,
        compr: u8,
        (data, n): (&[u8], usize),
        offset: u32,
        out: &mut Vec<u8>,
    ) -> Result<(), ReadError> {
        let r = match (compr, self.opts.rubin) {
            (COMPR_RUBINMIPS | COMPR_DYNRUBIN, RubinMode::Unavailable) => {
                Err(ComprError::UnsupportedCompressor(compr))
            }
            (COMPR_RUBINMIPS, RubinMode::KernelSwapped) => dynrubin_decompress(data, n),
            (COMPR_DYNRUBIN, RubinMode::KernelSwapped) => rubinmips_decompress(data, n),
            (COMPR_ZLIB, _) => {
                return compress::zlib_decompress_append(data, n, out)
                    .map_err(|error| ReadError::Decompress { offset, error })
            }
            (c, _) => compress::decompress(c, data, n),
        };
        compress::append(
            out,
            r.map_err(|error| ReadError::Decompress { offset, error })?,
        );
        Ok(())
    }

    /// The data node at `scan.refs[idx]`, if that ref is an inode node whose header can be
    /// read: for checking nodes that no fragment shows (superseded data), which the kernel
    /// never reads but fsck decompresses all the same (with [`Fs::node_data`]).
    pub fn data_node(&self, idx: usize) -> Option<DataNode> {
        let r = self.scan.refs.get(idx)?;
        let b = self.image.get(r.offset as usize..)?;
        let ri = InodeNode::decode(b, self.scan.geometry.endian, u64::from(r.offset)).ok()?;
        let size = if ri.compr == COMPR_ZERO && ri.dsize == 0 && ri.csize != 0 {
            ri.csize
        } else {
            ri.dsize
        };
        Some(DataNode {
            node: idx,
            offset: r.offset,
            version: ri.version,
            ofs: ri.offset,
            size,
            csize: ri.csize,
            compr: ri.compr,
            usercompr: ri.usercompr,
        })
    }

    /// Streams `[offset, offset + len)` of a regular file (clipped to its size) into `sink`
    /// in order, like `jffs2_read_inode_range` page by page (§6.5): holes and ZERO nodes are
    /// zeros, every other node is read with [`Fs::node_data`]. Stops at the first error (the
    /// kernel's `read()` fails with -EIO). Memory stays bounded whatever the file size:
    /// zeros are never materialised and at most a few decompressed nodes are cached.
    pub fn read_with(
        &self,
        inode: &Inode,
        offset: u64,
        len: u64,
        mut sink: impl FnMut(&[u8]),
    ) -> Result<(), FsError> {
        static ZEROS: [u8; 65536] = [0; 65536];
        let zeros = |sink: &mut dyn FnMut(&[u8]), mut n: u64| {
            while n > 0 {
                let k = n.min(ZEROS.len() as u64) as usize;
                sink(&ZEROS[..k]);
                n -= k as u64;
            }
        };
        let end = offset.saturating_add(len).min(inode.size);
        let mut pos = offset;
        // Recently decompressed nodes, most recent last, with their total size kept as a
        // running sum and the entry count capped, so a lookup or an eviction never walks
        // more than CACHE_ENTRIES entries (a per-node sum over the cache was quadratic
        // within a large file).
        let mut cache: std::collections::VecDeque<(usize, Rc<Vec<u8>>)> =
            std::collections::VecDeque::new();
        let mut cached_bytes = 0usize;
        let first = inode.frags.partition_point(|f| f.end <= pos);
        for f in &inode.frags[first..] {
            if pos >= end {
                break;
            }
            if f.start > pos {
                let z = f.start.min(end) - pos;
                zeros(&mut sink, z);
                pos += z;
                if pos >= end {
                    break;
                }
            }
            let stop = f.end.min(end);
            let Some(dn) = inode.nodes.get(f.node) else {
                continue;
            };
            let ino = inode.ino;
            let data = match cache.iter().position(|(id, _)| *id == f.node) {
                Some(i) => cache.remove(i).map(|hit| {
                    let d = Rc::clone(&hit.1);
                    cache.push_back(hit);
                    d
                }),
                None => match self
                    .node_data(dn)
                    .map_err(|error| FsError::Read { ino, error })?
                {
                    NodeData::Zeros(_) => None,
                    NodeData::Bytes(b) => {
                        let d = Rc::new(b);
                        cached_bytes += d.len();
                        cache.push_back((f.node, Rc::clone(&d)));
                        while (cached_bytes > CACHE_BYTES || cache.len() > CACHE_ENTRIES)
                            && cache.len() > 1
                        {
                            if let Some((_, old)) = cache.pop_front() {
                                cached_bytes -= old.len();
                            }
                        }
                        Some(d)
                    }
                },
            };
            match data {
                None => zeros(&mut sink, stop - pos),
                Some(d) => {
                    let a = (pos - u64::from(dn.ofs)) as usize;
                    let b = (stop - u64::from(dn.ofs)) as usize;
                    match d.get(a..b) {
                        Some(s) => sink(s),
                        // Cannot happen: a node's fragments lie within its dsize.
                        None => zeros(&mut sink, stop - pos),
                    }
                }
            }
            pos = stop;
        }
        if pos < end {
            zeros(&mut sink, end - pos);
        }
        Ok(())
    }

    /// Reads up to `len` bytes at `offset` of a regular file (clipped to its size).
    pub fn read_range(&self, inode: &Inode, offset: u64, len: usize) -> Result<Vec<u8>, FsError> {
        let n = inode.size.saturating_sub(offset).min(len as u64) as usize;
        let mut out = Vec::with_capacity(n);
        self.read_with(inode, offset, len as u64, |s| out.extend_from_slice(s))?;
        Ok(out)
    }

    /// Reads an inode, then up to `len` bytes at `offset` of it (clipped to its size; holes
    /// read as zeros). A node that cannot be read is an error naming its offset
    /// ([`FsError::Read`]), as the kernel's `read()` fails.
    ///
    /// ```
    /// # let dir = tempfile::tempdir()?;
    /// # std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
    /// # let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
    /// # let mut image = Vec::new();
    /// # jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
    /// # let image = jffs2::Image::from_vec(image)?;
    /// # let fs = image.mount()?;
    /// // `fs`: the model of an image holding `/motd` (inode 2, "Welcome\n").
    /// assert_eq!(fs.read_data(2, 0, 4096)?, b"Welcome\n");
    /// assert_eq!(fs.read_data(2, 3, 100)?, b"come\n");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_data(&self, ino: u32, offset: u64, len: usize) -> Result<Vec<u8>, FsError> {
        let inode = self.read_inode(ino)?;
        self.read_range(&inode, offset, len)
    }

    /// MD5 of a regular file's whole content, streamed.
    pub fn md5(&self, inode: &Inode) -> Result<[u8; 16], FsError> {
        let mut h = Md5::new();
        self.read_with(inode, 0, inode.size, |s| h.update(s))?;
        Ok(h.finish())
    }
}
