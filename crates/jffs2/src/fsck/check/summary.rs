//! The summary check: a block's summary against the nodes on flash.

use std::collections::{HashMap, HashSet};

use super::super::Code;
use super::super::Finding;
use super::Ctx;
use crate::format::marker;
use crate::format::{pad4, SumRecord, SummaryNode, NODE_ACCURATE, SUMMARY_MARKER_SIZE, SUM_MAGIC};
use crate::fsck::walk::{BlockWalk, Body, WNode};
use crate::scan::{self, SummaryUse};

impl Ctx<'_, '_> {
    /// Checks a block's summary against the nodes on flash.
    pub(super) fn summary(&mut self, w: &BlockWalk, info: Option<&scan::BlockInfo>) {
        let start = w.offset;
        let end = start + self.es;
        let sum_node = w
            .nodes
            .iter()
            .find(|n| n.body == Body::Summary && n.offset + n.totlen == end);
        if !self.summary_used(start, info.map(|i| &i.summary), sum_node) {
            return;
        }
        let Some(sn) = sum_node else { return };
        let e = self.fs.scan().geometry.endian;
        let raw = &self.img[sn.offset as usize..end as usize];
        let Ok(sum) = SummaryNode::decode(raw, e, u64::from(sn.offset)) else {
            return;
        };
        // The marker: the summary's offset in the block, then the magic.
        let mpos = raw.len().saturating_sub(SUMMARY_MARKER_SIZE);
        if e.get_u32(raw, mpos + marker::MAGIC) != Some(SUM_MAGIC)
            || e.get_u32(raw, mpos + marker::OFFSET) != Some(sn.offset - start)
        {
            self.findings.push(
                Finding::new(
                    Code::SummaryMismatch,
                    "the summary marker does not give the summary's own offset".to_string(),
                )
                .at(sn.offset),
            );
        }
        let recs = match sum.records(raw, e, u64::from(sn.offset)) {
            Ok(r) => r,
            Err(err) => {
                self.findings.push(
                    Finding::new(
                        Code::SummaryMismatch,
                        format!("the summary's records cannot be read: {err}"),
                    )
                    .at(sn.offset),
                );
                return;
            }
        };
        let by_off: HashMap<u32, &WNode> = w.nodes.iter().map(|n| (n.offset, n)).collect();
        let mut described: HashSet<u32> = HashSet::new();
        for (i, r) in recs.iter().enumerate() {
            described.insert(self.summary_record(start, i, r, &by_off));
        }
        self.summary_unlisted(w, &described);
        self.summary_cleanmarker(w, sum.cln_mkr, sn.offset);
        // Padding of the summary node's own length (kernel summaries pad with 0xFF; covered
        // by the summary CRC, nothing to add).
        let _ = pad4(0);
    }

    /// Whether Linux mounts the block from its summary; a summary it rejects or cannot find
    /// is a finding.
    fn summary_used(
        &mut self,
        start: u32,
        use_: Option<&SummaryUse>,
        sum_node: Option<&WNode>,
    ) -> bool {
        match use_ {
            Some(SummaryUse::Rejected(why)) => {
                let at = sum_node.map_or(start, |n| n.offset);
                self.findings.push(
                    Finding::new(
                        Code::SummaryInvalid,
                        format!(
                            "Linux rejects the summary of the erase block at 0x{start:08x} ({why}) and scans the block in full"
                        ),
                    )
                    .at(at),
                );
                false
            }
            Some(SummaryUse::Used) => true,
            _ => {
                if let Some(n) = sum_node {
                    self.findings.push(
                        Finding::new(
                            Code::SummaryInvalid,
                            "summary node without a valid marker at the end of its erase block: Linux does not find it and scans the block in full"
                                .to_string(),
                        )
                        .at(n.offset),
                    );
                }
                false
            }
        }
    }

    /// Checks summary record `i` against the node it names; returns the offset it names.
    fn summary_record(
        &mut self,
        start: u32,
        i: usize,
        r: &SumRecord,
        by_off: &HashMap<u32, &WNode>,
    ) -> u32 {
        let (rofs, rtype) = match r {
            SumRecord::Inode {
                offset, nodetype, ..
            }
            | SumRecord::Dirent {
                offset, nodetype, ..
            }
            | SumRecord::Xattr {
                offset, nodetype, ..
            }
            | SumRecord::Xref { offset, nodetype } => (*offset, *nodetype),
        };
        let at = start.wrapping_add(rofs & !3);
        let bad = |what: String| {
            Finding::new(
                Code::SummaryMismatch,
                format!(
                    "summary record {i} of the erase block at 0x{start:08x} {what}: Linux believes the summary"
                ),
            )
            .at(at)
        };
        let Some(n) = by_off.get(&at) else {
            self.findings.push(bad(format!(
                "names a node at 0x{at:08x}, but there is none"
            )));
            return at;
        };
        if (n.nodetype | NODE_ACCURATE) != (rtype | NODE_ACCURATE) {
            self.findings.push(bad(format!(
                "says type 0x{rtype:04x}, the node is 0x{:04x}",
                n.nodetype
            )));
            return at;
        }
        if let Some(m) = self.record_mismatch(r, n) {
            self.findings.push(bad(m));
        }
        at
    }

    /// How a summary record differs from the node of its type it names, if it does.
    fn record_mismatch(&self, r: &SumRecord, n: &WNode) -> Option<String> {
        match (r, &n.body) {
            (
                SumRecord::Inode {
                    inode,
                    version,
                    totlen,
                    ..
                },
                Body::Inode {
                    ino, version: v, ..
                },
            ) => (inode != ino || version != v || *totlen != n.totlen).then(|| {
                format!(
                    "says inode #{inode} version {version} of {totlen} bytes, the node is inode #{ino} version {v} of {} bytes",
                    n.totlen
                )
            }),
            (
                SumRecord::Dirent {
                    totlen,
                    pino,
                    version,
                    ino,
                    dtype,
                    name,
                    ..
                },
                Body::Dirent {
                    pino: p,
                    version: v,
                    ino: i,
                    dtype: d,
                    name: nm,
                },
            ) => (pino != p
                || version != v
                || ino != i
                || dtype != d
                || name[..] != *nm.get(self.img)
                || *totlen != n.totlen)
                .then(|| {
                    format!(
                        "says entry \"{}\" -> #{ino} in #{pino} (version {version}), the node is \"{}\" -> #{i} in #{p} (version {v})",
                        crate::text::escape_if_needed(name),
                        crate::text::escape_if_needed(nm.get(self.img))
                    )
                }),
            (
                SumRecord::Xattr {
                    xid,
                    version,
                    totlen,
                    ..
                },
                Body::Xattr { xid: x, version: v },
            ) => (xid != x || version != v || *totlen != n.totlen).then(|| {
                format!("says xattr {xid} version {version}, the node is xattr {x} version {v}")
            }),
            (SumRecord::Xref { .. }, Body::Xref { .. }) => None,
            _ => Some("describes a node whose fields cannot be read".to_string()),
        }
    }

    /// Valid nodes of a block mounted from its summary that the summary leaves out.
    fn summary_unlisted(&mut self, w: &BlockWalk, described: &HashSet<u32>) {
        let start = w.offset;
        for n in &w.nodes {
            let described_kind = matches!(
                n.body,
                Body::Inode { .. } | Body::Dirent { .. } | Body::Xattr { .. } | Body::Xref { .. }
            );
            if described_kind && n.accurate && !described.contains(&n.offset) {
                self.findings.push(
                    Finding::new(
                        Code::SummaryMismatch,
                        format!(
                            "this node is not in the summary of its erase block (0x{start:08x}): Linux, which reads only the summary, does not see it"
                        ),
                    )
                    .at(n.offset),
                );
            }
        }
    }

    /// The summary's cleanmarker size (`cln_mkr`, 0 for none) against the block's own
    /// cleanmarker; the summary node is at `at`.
    fn summary_cleanmarker(&mut self, w: &BlockWalk, cln_mkr: u32, at: u32) {
        let start = w.offset;
        let cm_on_flash = w
            .nodes
            .iter()
            .find(|n| n.offset == start && n.body == Body::Cleanmarker && n.accurate)
            .map(|n| n.totlen);
        let claimed = (cln_mkr != 0).then_some(cln_mkr);
        if claimed != cm_on_flash {
            self.findings.push(
                Finding::new(
                    Code::SummaryCleanmarker,
                    format!(
                        "the summary says {} but the block has {}",
                        claimed.map_or("no cleanmarker".to_string(), |c| format!(
                            "a {c}-byte cleanmarker"
                        )),
                        cm_on_flash
                            .map_or("none".to_string(), |c| format!("a {c}-byte cleanmarker"))
                    ),
                )
                .at(at),
            );
        }
    }
}
