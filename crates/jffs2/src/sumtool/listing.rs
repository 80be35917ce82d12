//! The `-v` listing: mtd-utils sumtool's lines where they apply (`docs/spec/mtd-utils-spec.md` §5.4).
//!
//! sumtool reads its input in erase-block chunks and prints `Load next block : N bytes read`
//! per chunk, then a jffs2dump-style line per node with the offset inside the chunk. Here
//! the chunks are the input's erase blocks (which is what sumtool's chunks are when `-e` is
//! right), the nodes are those the kernel's scan linked — carried over, or not with the
//! reason — and every range the kernel skips gets one `Skipped` line with its cause instead
//! of sumtool's per-node lines for dirt (erased ranges, which sumtool passes over silently,
//! get none). For a clean image and the right `-e` the listing is sumtool's, line for line.

use super::{cause_text, Analysis};
use crate::format::{
    DirentNode, InodeNode, NodeHeader, NodeKind, XattrNode, XrefNode, DIRENT_SIZE,
};

/// Calls `line` with each line of the listing of `image` (without newlines); `image` is the
/// input as given to [`super::analyse`] (or its first [`super::Analysis::held_len`] bytes).
pub fn listing(image: &[u8], a: &Analysis, line: &mut dyn FnMut(&str)) {
    let es = u64::from(a.input_geometry.erase_size);
    let e = a.input_geometry.endian;
    let scan = &a.scan;
    let mut status: Vec<Option<&'static str>> = vec![None; scan.refs.len()];
    for k in &a.kept {
        if let Some(s) = status.get_mut(k.node) {
            *s = Some("");
        }
    }
    let mut reasons = std::collections::BTreeMap::new();
    for r in &a.rejected {
        if let Some(s) = status.get_mut(r.node) {
            *s = Some("Dropped");
        }
        reasons.insert(r.node, r.reason);
    }
    let len = a.input_len;
    let mut dirt = scan.dirt.iter().peekable();
    let mut block_start = 0u64;
    let mut buf = String::new();
    while block_start < len {
        let n = (len - block_start).min(es);
        line(&format!("Load next block : {n} bytes read"));
        let bi = (block_start / es.max(1)) as usize;
        // Nodes in address order (a summary's records are in address order too), merged
        // with the dirt of the block.
        let mut items: Vec<(u32, usize)> = Vec::new();
        if let Some(b) = scan.blocks.get(bi) {
            for i in b.refs.clone() {
                if let Some(r) = scan.refs.get(i) {
                    items.push((r.offset, i));
                }
            }
        }
        items.sort_by_key(|&(o, _)| o);
        let end = block_start + n;
        let mut dirts = Vec::new();
        while let Some(d) = dirt.peek() {
            if u64::from(d.offset) >= end {
                break;
            }
            dirts.push(**d);
            dirt.next();
        }
        let mut di = dirts.iter().peekable();
        for (ofs, i) in items {
            while let Some(d) = di.next_if(|d| d.offset < ofs) {
                if !erased(image, d.offset, d.len) {
                    line(&skipped(d.offset, d.len, d.cause, block_start));
                }
            }
            buf.clear();
            node_line(image, e, ofs, block_start, status[i], &mut buf);
            if let Some(r) = reasons.get(&i) {
                buf.push_str(&format!(" ({r})"));
            }
            line(&buf);
        }
        for d in di {
            if !erased(image, d.offset, d.len) {
                line(&skipped(d.offset, d.len, d.cause, block_start));
            }
        }
        block_start = end;
    }
    line("Load next block : 0 bytes read");
}

/// Dirt that is only 0xFF (erased gaps, short block tails): sumtool passes over it
/// silently, and so does the listing.
fn erased(image: &[u8], ofs: u32, len: u32) -> bool {
    let a = ofs as usize;
    image
        .get(a..a.saturating_add(len as usize))
        .is_none_or(|b| b.iter().all(|&c| c == 0xFF))
}

fn skipped(ofs: u32, len: u32, cause: crate::scan::DirtCause, base: u64) -> String {
    format!(
        "{:>8} {:<10} at 0x{:08x}, length 0x{len:08x}: {}",
        "Skipped",
        "",
        u64::from(ofs).saturating_sub(base),
        cause_text(cause)
    )
}

/// One node in sumtool's format (offset relative to the block).
fn node_line(
    img: &[u8],
    e: crate::format::Endian,
    ofs: u32,
    base: u64,
    status: Option<&str>,
    out: &mut String,
) {
    let rel = u64::from(ofs).saturating_sub(base);
    let b = img.get(ofs as usize..).unwrap_or(&[]);
    let Ok(h) = NodeHeader::decode(b, e, u64::from(ofs)) else {
        out.push_str(&format!("{:>8} Unreadable node at 0x{rel:08x}", "Dropped"));
        return;
    };
    let prefix = status.unwrap_or_default();
    let t = h.totlen;
    let text = match NodeKind::of(h.nodetype) {
        NodeKind::Inode => match InodeNode::decode(b, e, 0) {
            Ok(i) => format!(
                "{prefix:>8} Inode      node at 0x{rel:08x}, totlen 0x{t:08x}, #ino  {:5}, version {:5}, isize {:8}, csize {:8}, dsize {:8}, offset {:8}",
                i.ino as i32, i.version as i32, i.isize as i32, i.csize as i32, i.dsize as i32, i.offset as i32
            ),
            Err(_) => format!("{prefix:>8} Inode      node at 0x{rel:08x}, totlen 0x{t:08x}"),
        },
        NodeKind::Dirent => match DirentNode::decode(b, e, 0) {
            Ok(d) => {
                let name = b
                    .get(DIRENT_SIZE..DIRENT_SIZE + usize::from(d.nsize))
                    .unwrap_or(&[]);
                let name = &name[..name.iter().position(|&c| c == 0).unwrap_or(name.len())];
                format!(
                    "{prefix:>8} Dirent     node at 0x{rel:08x}, totlen 0x{t:08x}, #pino {:5}, version {:5}, #ino  {:8}, nsize {:8}, name {}",
                    d.pino as i32,
                    d.version as i32,
                    d.ino as i32,
                    d.nsize,
                    crate::text::escape_if_needed(name)
                )
            }
            Err(_) => format!("{prefix:>8} Dirent     node at 0x{rel:08x}, totlen 0x{t:08x}"),
        },
        NodeKind::Xattr => match XattrNode::decode(b, e, 0) {
            Ok(x) => format!(
                "{prefix:>8} Xdatum     node at 0x{rel:08x}, totlen 0x{t:08x}, #xid  {:5}, version {:5}",
                x.xid, x.version
            ),
            Err(_) => format!("{prefix:>8} Xdatum     node at 0x{rel:08x}, totlen 0x{t:08x}"),
        },
        NodeKind::Xref => match XrefNode::decode(b, e, 0) {
            Ok(x) => format!(
                "{prefix:>8} Xref       node at 0x{rel:08x}, totlen 0x{t:08x}, #ino  {:5}, xid     {:5}",
                x.ino, x.xid
            ),
            Err(_) => format!("{prefix:>8} Xref       node at 0x{rel:08x}, totlen 0x{t:08x}"),
        },
        NodeKind::Cleanmarker => {
            format!("{prefix:>8} Cleanmarker     at 0x{rel:08x}, totlen 0x{t:08x}")
        }
        NodeKind::Padding => format!("{prefix:>8} Padding    node at 0x{rel:08x}, totlen 0x{t:08x}"),
        NodeKind::Summary => format!(
            "{:>8} Summary    node at 0x{rel:08x}, totlen 0x{t:08x} (replaced)",
            prefix
        ),
        NodeKind::Other => format!("{prefix:>8} Unknown    node at 0x{rel:08x}, totlen 0x{t:08x}"),
    };
    out.push_str(&text);
}
