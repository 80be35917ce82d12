//! Where a filesystem ends inside a file that goes on: the data after it (the next
//! partition of a full-flash dump, a carver's tail) told apart from torn nodes
//! (`docs/spec/ecosystem.md` §9).
//!
//! A node is a word that starts a node header: magic 0x1985, header CRC right, a length that
//! fits. A write cut by a power loss leaves such a header (it is written first), so a torn
//! node is still a node here, skipped whole; what a power cut leaves that is not a node is
//! short. Data after the end is what follows the last node: at least [`FOREIGN_GAP`] bytes
//! that are neither nodes nor 0xFF.

use crate::format::{pad4_64, Endian, NodeHeader, HEADER_SIZE, MAGIC};

/// Foreign bytes (neither nodes nor 0xFF) that cannot be part of a filesystem: as long as the
/// smallest erase block the detection considers (`detect`'s 4 KiB), longer than anything a
/// cut write leaves.
pub const FOREIGN_GAP: u64 = 4096;

/// The node header at the start of `b` in either byte order: magic, header CRC right, at
/// least a header long and inside `b`.
pub fn node_header_at(b: &[u8]) -> Option<(Endian, NodeHeader)> {
    let e = match b.get(..2)? {
        [0x85, 0x19] => Endian::Little,
        [0x19, 0x85] => Endian::Big,
        _ => return None,
    };
    let h = NodeHeader::decode(b, e, 0).ok()?;
    let fits = usize::try_from(h.totlen).is_ok_and(|n| n >= HEADER_SIZE && n <= b.len());
    (h.magic == MAGIC && h.crc_ok(e) && fits).then_some((e, h))
}

/// Data after the end of a filesystem: where it starts and how long it is (to the end of the
/// image as given).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TrailingData {
    /// Offset of its first byte that is not 0xFF after the last node.
    pub offset: u32,
    /// Bytes from there to the end of the image.
    pub len: u32,
}

impl std::fmt::Display for TrailingData {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "data after the end of the filesystem at 0x{:08x} ({} bytes)",
            self.offset, self.len
        )
    }
}

/// The data after the end of the filesystem in `image` (as given, unpadded; nodes in byte
/// order `e`), if any: see the module documentation. One pass, front to back.
pub fn trailing_data(image: &[u8], e: Endian) -> Option<TrailingData> {
    let mut p = 0usize;
    let mut last_end = 0usize;
    while p + 4 <= image.len() {
        match node_header_at(&image[p..]) {
            Some((ne, h)) if ne == e => {
                p = usize::try_from(p as u64 + pad4_64(h.totlen)).unwrap_or(image.len());
                last_end = p.min(image.len());
            }
            _ => p += 4,
        }
    }
    trailing_after(image, last_end)
}

/// [`trailing_data`], told where the nodes are: `nodes`, the offsets a detection found
/// (those of [`crate::scan::detect()`]'s walk, which takes the nodes this search
/// takes). When the last of them is a node in byte order `e`, the data after the end is looked
/// for after it, without a walk of the image; else (no nodes, nodes of the other byte order,
/// an image longer than the detection looks at) by [`trailing_data`].
pub fn trailing_data_after(image: &[u8], e: Endian, nodes: &[u32]) -> Option<TrailingData> {
    let last_end = nodes
        .last()
        .filter(|_| image.len() <= u32::MAX as usize - 3)
        .and_then(|&o| {
            let (ne, h) = node_header_at(image.get(o as usize..)?)?;
            let end = (u64::from(o) + pad4_64(h.totlen)).min(image.len() as u64);
            (ne == e).then_some(end as usize)
        });
    match last_end {
        Some(end) => trailing_after(image, end),
        None => trailing_data(image, e),
    }
}

/// The data after `last_end` (where the filesystem's last node ends), if any.
fn trailing_after(image: &[u8], last_end: usize) -> Option<TrailingData> {
    let tail = image.get(last_end..)?;
    let start = last_end + tail.iter().position(|&b| b != 0xFF)?;
    let foreign = image[start..]
        .chunks(4)
        .filter(|w| w.iter().any(|&b| b != 0xFF))
        .count() as u64
        * 4;
    if foreign < FOREIGN_GAP {
        return None;
    }
    Some(TrailingData {
        offset: u32::try_from(start).ok()?,
        len: u32::try_from(image.len() - start).ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(e: Endian) -> Vec<u8> {
        let mut v = Vec::new();
        crate::format::encode_cleanmarker(e, 12, &mut v);
        crate::format::encode_padding(e, 64, &mut v);
        v
    }

    #[test]
    fn data_after_the_end_is_told_from_torn_bytes() {
        for e in [Endian::Little, Endian::Big] {
            let img = image(e);
            let n = img.len();
            assert_eq!(trailing_data(&img, e), None);
            let mut t = img.clone();
            t.extend([0xFF; 100]);
            t.extend((0..5000u32).map(|i| (i % 200) as u8));
            let d = trailing_data(&t, e).unwrap();
            assert_eq!((d.offset as usize, d.len), (n + 100, 5000));
            assert_eq!(
                d.to_string(),
                format!(
                    "data after the end of the filesystem at 0x{:08x} (5000 bytes)",
                    n + 100
                )
            );
            // A few bytes a cut write left, then erased flash: not data after the end.
            let mut torn = img.clone();
            torn.extend([0x85, 0x19, 0x01]);
            torn.extend([0xFF; 9000]);
            assert_eq!(trailing_data(&torn, e), None);
            // From the detection's nodes, the same without the walk.
            for img in [&img, &t, &torn] {
                let (_, nodes) = crate::scan::detect::detect_with_nodes(img);
                assert_eq!(trailing_data_after(img, e, &nodes), trailing_data(img, e));
                // Nodes of the other byte order, or none: the walk.
                let other = match e {
                    Endian::Little => Endian::Big,
                    Endian::Big => Endian::Little,
                };
                assert_eq!(
                    trailing_data_after(img, other, &nodes),
                    trailing_data(img, other)
                );
                assert_eq!(trailing_data_after(img, e, &[]), trailing_data(img, e));
            }
        }
    }
}
