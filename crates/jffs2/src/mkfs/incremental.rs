//! `mkfs.jffs2 -i FILE`: find the highest inode number of an existing image so that the
//! new image can be appended to it (`docs/spec/mtd-utils-spec.md` §3.7).
//!
//! This is deliberately *not* the project's mount scanner: it reproduces mkfs.jffs2's own
//! walk, including its stdout lines, because users compare that output. The walk reads
//! the image in erase-block-sized chunks and parses each chunk from its start, does not
//! check CRCs and only looks at inode nodes. Unlike mkfs.jffs2 it cannot hang on a node
//! with totlen 0 (§8 B-19): such a node is stepped over like a bad word.

use crate::format::{hdr, NODETYPE_PADDING, NODE_ACCURATE};
use crate::format::{pad4, Endian, NODETYPE_CLEANMARKER, NODETYPE_DIRENT, NODETYPE_INODE};

/// Result of the `-i` walk.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IncrementalScan {
    /// Highest inode number found in an inode node (0 if none).
    pub max_ino: u32,
    /// What mkfs.jffs2 prints on stdout during the walk, line by line (without newlines):
    /// "Wrong bitmask" lines always, the per-node lines only when `verbose`.
    pub stdout: Vec<String>,
}

/// Walks `image` as mkfs.jffs2's `-i` does, with `erase_size`-byte chunks.
pub fn incremental_max_ino(
    image: &[u8],
    e: Endian,
    erase_size: u32,
    verbose: bool,
) -> IncrementalScan {
    let mut r = IncrementalScan::default();
    let chunk = (erase_size as usize).max(1);
    let mut chunks = image.chunks(chunk);
    loop {
        let buf = chunks.next().unwrap_or(&[]);
        if verbose {
            r.stdout
                .push(format!("Load next block : {} bytes read", buf.len()));
        }
        if buf.is_empty() {
            break;
        }
        walk_chunk(buf, e, verbose, &mut r);
    }
    r
}

fn walk_chunk(buf: &[u8], e: Endian, verbose: bool, r: &mut IncrementalScan) {
    let u16_at = |at: usize| e.get_u16(buf, at);
    let u32_at = |at: usize| e.get_u32(buf, at);
    let mut p = 0usize;
    let mut bad = 0u32;
    while p < buf.len() {
        let (Some(magic), Some(ty)) = (u16_at(p + hdr::MAGIC), u16_at(p + hdr::NODETYPE)) else {
            break;
        };
        if magic == 0xFFFF && ty == 0xFFFF {
            p += 4;
            continue;
        }
        if magic != crate::format::MAGIC {
            if bad == 0 {
                r.stdout
                    .push(format!("Wrong bitmask  at  0x{p:08x}, 0x{magic:04x}"));
            }
            bad += 1;
            p += 4;
            continue;
        }
        bad = 0;
        let obsolete = ty & NODE_ACCURATE == 0;
        let ty = ty | NODE_ACCURATE;
        let tag = if obsolete { "Obsolete" } else { "" };
        let totlen = u32_at(p + hdr::TOTLEN).unwrap_or(0);
        let f = |at: usize| u32_at(p + at).unwrap_or(0) as i32;
        match ty {
            NODETYPE_INODE => {
                if verbose {
                    r.stdout.push(format!(
                        "{tag:>8} Inode      node at 0x{p:08x}, totlen 0x{totlen:08x}, #ino  {:5}, version {:5}, isize {:8}, csize {:8}, dsize {:8}, offset {:8}",
                        f(12), f(16), f(28), f(48), f(52), f(44)
                    ));
                }
                r.max_ino = r.max_ino.max(f(12) as u32);
            }
            NODETYPE_DIRENT => {
                if verbose {
                    let nsize = buf.get(p + 28).copied().unwrap_or(0) as usize;
                    let name = buf
                        .get(p + 40..(p + 40 + nsize).min(buf.len()))
                        .unwrap_or(&[]);
                    let name = name.split(|&c| c == 0).next().unwrap_or(&[]);
                    r.stdout.push(format!(
                        "{tag:>8} Dirent     node at 0x{p:08x}, totlen 0x{totlen:08x}, #pino {:5}, version {:5}, #ino  {:8}, nsize {:8}, name {}",
                        f(12), f(16), f(20), nsize, crate::text::escape_if_needed(name)
                    ));
                }
            }
            NODETYPE_CLEANMARKER => {
                if verbose {
                    r.stdout.push(format!(
                        "{tag:>8} Cleanmarker     at 0x{p:08x}, totlen 0x{totlen:08x}"
                    ));
                }
            }
            NODETYPE_PADDING => {
                if verbose {
                    r.stdout.push(format!(
                        "{tag:>8} Padding    node at 0x{p:08x}, totlen 0x{totlen:08x}"
                    ));
                }
            }
            0xFFFF => {
                p += 4;
                continue;
            }
            _ => {
                if verbose {
                    r.stdout.push(format!(
                        "{tag:>8} Unknown    node at 0x{p:08x}, totlen 0x{totlen:08x}"
                    ));
                }
            }
        }
        let step = pad4(totlen) as usize;
        // mkfs.jffs2 loops forever here on totlen 0; step over the word instead.
        p = p.saturating_add(if step == 0 { 4 } else { step });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{encode_cleanmarker, DirentNode, InodeNode};

    #[test]
    fn finds_max_ino_and_survives_garbage() {
        let e = Endian::Little;
        let mut img = Vec::new();
        encode_cleanmarker(e, 12, &mut img);
        DirentNode {
            pino: 1,
            ino: 7,
            ..Default::default()
        }
        .encode(e, b"abc", &mut img);
        img.resize(pad4(img.len() as u32) as usize, 0xFF);
        InodeNode {
            ino: 7,
            version: 1,
            ..Default::default()
        }
        .encode(e, b"", &mut img);
        img.extend_from_slice(&[0x12, 0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde, 0xf0]);
        // A dirent header with totlen 0: mkfs.jffs2 would hang here.
        img.extend_from_slice(&[0x85, 0x19, 0x01, 0xe0, 0, 0, 0, 0]);
        img.resize(8192, 0xFF);
        let r = incremental_max_ino(&img, e, 8192, true);
        assert_eq!(r.max_ino, 7);
        assert_eq!(r.stdout[0], "Load next block : 8192 bytes read");
        assert!(r
            .stdout
            .iter()
            .any(|l| l.starts_with("Wrong bitmask  at  0x0000")));
        assert_eq!(r.stdout.last().unwrap(), "Load next block : 0 bytes read");
        let quiet = incremental_max_ino(&img, e, 8192, false);
        // Without -v only "Wrong bitmask" lines: the garbage words, and the totlen word
        // after the totlen-0 header that is stepped over.
        assert_eq!(quiet.stdout.len(), 2);
        assert!(quiet.stdout.iter().all(|l| l.starts_with("Wrong bitmask")));
    }
}
