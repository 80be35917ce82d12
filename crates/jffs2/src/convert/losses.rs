//! What a conversion cannot carry over although it writes the inode: the file ranges of data
//! nodes that fail their data CRC. Linux drops such a node when it reads the inode and shows
//! what lies under it — older data, or zeros where nothing older covers the range
//! (`docs/spec/kernel-jffs2-spec.md` §6.2, §6.3) — and the output holds exactly that, so
//! each range is reported rather than converted silently.

use super::{Dropped, Planner};
use crate::format::InodeNode;
use crate::fs::{Frag, Inode, Problem};

/// How a report of data lost to a bad CRC starts.
pub(super) const DATA: &str = "data: ";

impl Planner<'_, '_> {
    /// One report per data node of `inode` that fails its data CRC and that newer valid data
    /// does not cover entirely (the kernel never checks those, and nothing of them shows):
    /// which bytes of the file read as zeros and which show older data instead.
    pub(super) fn data_crc_losses(&self, inode: &Inode) -> Vec<Dropped> {
        let mut out = Vec::new();
        for p in &inode.problems {
            let Problem::DataCrc {
                offset,
                stored,
                computed,
                superseded: false,
                ..
            } = p
            else {
                continue;
            };
            let Some((start, end)) = self.node_range(*offset, inode.size) else {
                continue;
            };
            let (zeros, older) = split_by_frags(&inode.frags, start, end);
            let mut shows = Vec::new();
            if !zeros.is_empty() {
                shows.push(format!("{} read as zeros", ranges_text(&zeros)));
            }
            if !older.is_empty() {
                shows.push(format!("{} show older data", ranges_text(&older)));
            }
            out.push(Dropped {
                ino: inode.ino,
                path: None,
                what: format!(
                    "{DATA}the data node at 0x{offset:08x} (bytes {start}-{} of the file) fails \
                     its data CRC (read 0x{stored:08x}, calculated 0x{computed:08x}); Linux \
                     drops it, so {}, in the output as in the input",
                    end - 1,
                    shows.join(" and ")
                ),
            });
        }
        out
    }

    /// The file range `[start, end)` the data node at flash offset `at` covers, within the
    /// file's size; `None` if it holds nothing the file shows (or cannot be decoded).
    fn node_range(&self, at: u32, size: u64) -> Option<(u64, u64)> {
        let e = self.fs.scan().geometry.endian;
        let bytes = self.fs.image().get(at as usize..)?;
        let node = InodeNode::decode(bytes, e, u64::from(at)).ok()?;
        let start = u64::from(node.offset);
        let end = (start + u64::from(node.dsize)).min(size);
        (start < end).then_some((start, end))
    }
}

/// File ranges `[start, end)`, in file order.
type Ranges = Vec<(u64, u64)>;

/// `[start, end)` of a file of fragments `frags` split into the ranges no fragment covers
/// (zeros) and those a fragment covers (older data), each in file order.
fn split_by_frags(frags: &[Frag], start: u64, end: u64) -> (Ranges, Ranges) {
    let (mut zeros, mut older) = (Vec::new(), Vec::new());
    let mut at = start;
    // Fragments are in file order and do not overlap (§6.3).
    for f in frags.iter().filter(|f| f.end > start && f.start < end) {
        let (s, e) = (f.start.max(start), f.end.min(end));
        if s > at {
            zeros.push((at, s));
        }
        older.push((s, e));
        at = e;
    }
    if at < end {
        zeros.push((at, end));
    }
    (merge(zeros), merge(older))
}

/// Adjacent ranges joined.
fn merge(v: Ranges) -> Ranges {
    let mut out: Ranges = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => out.push((s, e)),
        }
    }
    out
}

/// `bytes 0-4095, 8192-9999` (inclusive ends, as `jffs2-fsck` and `cmp` count).
fn ranges_text(v: &[(u64, u64)]) -> String {
    let parts: Vec<String> = v.iter().map(|(s, e)| format!("{s}-{}", e - 1)).collect();
    format!("bytes {}", parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_split_into_zeros_and_older_data() {
        let frags = [
            Frag {
                start: 0,
                end: 100,
                node: 0,
            },
            Frag {
                start: 200,
                end: 300,
                node: 1,
            },
        ];
        let (zeros, older) = split_by_frags(&frags, 50, 400);
        assert_eq!(zeros, vec![(100, 200), (300, 400)]);
        assert_eq!(older, vec![(50, 100), (200, 300)]);
        assert_eq!(ranges_text(&zeros), "bytes 100-199, 300-399");
    }
}
