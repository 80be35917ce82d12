//! The finding codes, each defined once: its stable kebab-case string, the severities it is
//! reported with and its meaning. They sit below every reader, so that the filesystem model
//! (`fs::Problem::code`) and the checker (`fsck::Finding`) name a finding with the same
//! value. `docs/FSCK.md`'s table of findings is [`Code::table()`]
//! (a test compares them), so the codes fsck prints, their severities and their documentation
//! cannot drift apart.

use std::fmt;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Normal, or a fact about the check.
    Info,
    /// Tolerated by Linux but worth a look.
    Warning,
    /// Linux refuses to mount or loses/misreads data, or the image is corrupt.
    Error,
}

impl Severity {
    /// `ERROR`, `WARNING`, `INFO`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Error => "ERROR",
            Severity::Warning => "WARNING",
            Severity::Info => "INFO",
        }
    }

    /// `error`, `warning`, `info` (JSON).
    pub fn lower(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Defines [`Code`] from one line per code: `Variant = "code", [Default, Other…], "meaning";`.
/// The first severity is the one `fsck::Finding::new` gives; the others are those a site may
/// choose instead (`fsck::Finding::with_severity`), and say so in the doc comment above.
macro_rules! codes {
    ($(
        $(#[doc = $doc0:literal] $(#[doc = $doc:literal])*)?
        $variant:ident = $code:literal, [$($sev:ident),+], $meaning:literal;
    )+) => {
        /// What a finding (`fsck::Finding`, `fs::Problem`) is about. Its string ([`Code::as_str`]) is stable: text
        /// and JSON output, scripts and `docs/FSCK.md` use it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[non_exhaustive]
        pub enum Code {
            $(
                #[doc = concat!("`", $code, "`: ", $meaning, ".")]
                $(#[doc = ""] #[doc = $doc0] $(#[doc = $doc])*)?
                $variant,
            )+
        }

        impl Code {
            /// Every code, in the order of the documentation's table.
            pub const ALL: &'static [Code] = &[$(Code::$variant),+];

            /// The stable kebab-case string (`data-crc`).
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Code::$variant => $code,)+
                }
            }

            /// The severities the code is reported with, the usual one first.
            pub fn severities(self) -> &'static [Severity] {
                match self {
                    $(Code::$variant => &[$(Severity::$sev),+],)+
                }
            }

            /// One line saying what the finding means (the documentation's wording).
            pub fn meaning(self) -> &'static str {
                match self {
                    $(Code::$variant => $meaning,)+
                }
            }
        }
    };
}

codes! {
    EmptyFilesystem = "empty-filesystem", [Info],
        "the image is erased flash (all 0xFF): a valid empty filesystem";
    ImagePadded = "image-padded", [Info],
        "not a whole number of erase blocks (or fewer than 5): checked as flashed, the rest erased";
    EraseSizeUncertain = "erase-size-uncertain", [Info],
        "nothing in the image tells its erase size for sure; the one assumed is named";
    EraseSizeMismatch = "erase-size-mismatch", [Error],
        "the `-e` given is contradicted by the image (nodes crossing its block ends, cleanmarkers or summaries away from them); the size the image was made for is named";
    EndianMismatch = "endian-mismatch", [Error],
        "the `-l`/`-b` given is not the image's byte order";
    TruncatedImage = "truncated-image", [Error],
        "the image file ends inside a node";
    TornNode = "torn-node", [Error],
        "a damaged node or partial header at the end of the written space: an interrupted write (power cut)";
    HeaderCrc = "header-crc", [Error],
        "a node header whose CRC fails: Linux skips it, the node is lost";
    Garbage = "garbage", [Error],
        "bytes that are neither a node nor erased flash (wrong magic, JFFS1 magic, zero words, the other byte order)";
    NodeCrossesBlock = "node-crosses-block", [Error],
        "a node runs over its erase block's end: Linux ignores it";
    /// Graded like the other faults of a node: by whether the node is live, superseded or
    /// obsolete.
    BadLength = "bad-length", [Error, Warning, Info],
        "`totlen` disagrees with the contents (`csize`, `nsize`, xattr lengths, xref size, data offset beyond the size; live / superseded / obsolete node)";
    /// Error for a live node, warning for a superseded one, info for an obsolete one.
    NodeCrc = "node-crc", [Error, Warning, Info],
        "node CRC fails (live / superseded / obsolete node)";
    /// Graded by the node's state, as `node-crc`.
    NameCrc = "name-crc", [Error, Warning, Info],
        "an entry's name CRC fails, or the name holds a NUL byte";
    /// Graded by the node's state, as `node-crc`.
    BadName = "bad-name", [Error, Warning, Info],
        "an entry's name no file system can hold (empty, `.`, `..`, containing `/`; live / superseded / obsolete entry): Linux lists it, but no path reaches it — crafted or corrupted, never written by Linux";
    /// Graded by the node's state, as `node-crc`.
    DataCrc = "data-crc", [Error, Warning, Info],
        "data CRC fails (live data / superseded by newer data / obsolete node)";
    /// Graded by the node's state, as `node-crc`.
    UnreadableData = "unreadable-data", [Error, Warning, Info],
        "data that does not decompress to its `dsize`, or that Linux cannot allocate";
    /// Graded by the node's state, as `node-crc`.
    UnknownCompressor = "unknown-compressor", [Error, Warning, Info],
        "a compressor Debian's Linux 6.1 does not have (rubin, copy, unknown ids)";
    DecompressionBudget = "decompression-budget", [Info],
        "superseded or deleted data past the budget of dead data an erase block may decompress (16 times its size): CRCs checked, not decompressed (Linux never reads it); the first offset and the count";
    LargeDataNode = "large-data-node", [Info],
        "data nodes covering more than 64 KiB (the largest page Linux uses; it writes at most a page per node and reads a node whole): `mkfs.jffs2 -s` with a large page size, or crafted; the count, the first and the largest";
    LzmaCompression = "lzma-compression", [Info],
        "data nodes compressed with OpenWrt's LZMA (compressor 8), checked like the others: OpenWrt kernels read them, stock Linux cannot (see [OpenWrt images](#openwrt-images))";
    EndMarker = "end-marker", [Info],
        "OpenWrt's end-of-filesystem marker `de ad c0 de` at a block start: the filesystem ends there (see [OpenWrt images](#openwrt-images))";
    /// A warning for an entry whose inode keeps another name.
    LostNode = "lost-node", [Error, Warning],
        "a node marked obsolete that nothing supersedes: data, an inode or a name is lost (a flipped ACCURATE bit); a warning for an entry whose inode keeps another name (what garbage collection leaves on NOR flash; a lost hard link in a fresh image)";
    PaddingNotErased = "padding-not-erased", [Warning],
        "padding inside or after a node is not 0xFF";
    StrayDataCrc = "stray-data-crc", [Warning],
        "an inode node without data has a non-zero `data_crc`";
    CleanmarkerMisplaced = "cleanmarker-misplaced", [Warning],
        "a cleanmarker away from its block start (wrong erase size?)";
    CleanmarkerSize = "cleanmarker-size", [Warning],
        "a cleanmarker of another size than Linux expects";
    CleanmarkerObsolete = "cleanmarker-obsolete", [Error],
        "a cleanmarker with its ACCURATE bit cleared (Linux never does that)";
    /// Info when the block's start reads as erased, so that Linux erases it before use.
    NonErasedFreeSpace = "non-erased-free-space", [Error, Info],
        "a block Linux takes for free is not erased: Linux will write over the old bytes (info when Linux erases the block first)";
    DataInErasedBlock = "data-in-erased-block", [Error],
        "a block whose first 256 bytes are erased holds nodes: Linux erases it at mount";
    SummaryInvalid = "summary-invalid", [Error],
        "a summary Linux rejects (CRC, length, marker) or cannot find: the block is scanned in full";
    SummaryMismatch = "summary-mismatch", [Error],
        "a summary record disagrees with its node, or a node has no record";
    SummaryCleanmarker = "summary-cleanmarker", [Warning],
        "the summary's cleanmarker field disagrees with the block";
    IncompatNode = "incompat-node", [Error],
        "an INCOMPAT node: Linux refuses to mount";
    /// An error when it makes a read-write mount fail (the scan's mount failure).
    RocompatNode = "rocompat-node", [Warning, Error],
        "a ROCOMPAT node: Linux mounts read-only only (an error where a read-write mount fails)";
    UnknownNode = "unknown-node", [Info],
        "an unknown RWCOMPAT node, kept (COPY) or deleted (DELETE) by Linux";
    MountFailure = "mount-failure", [Error],
        "another reason the mount fails, with the kernel's reason";
    DirentToMissingInode = "dirent-to-missing-inode", [Error],
        "an entry names an inode that does not exist: Linux drops it";
    OrphanInode = "orphan-inode", [Info],
        "an inode no entry names (a deleted file whose nodes are still on flash: normal on written images)";
    DirectoryHardLink = "directory-hard-link", [Error],
        "a directory with two parents";
    DirectoryReachedTwice = "directory-reached-twice", [Error],
        "a directory reached twice from the root (a cycle or a hard link)";
    UnreachableInode = "unreachable-inode", [Error],
        "an inode with links that cannot be reached from the root";
    NlinkMismatch = "nlink-mismatch", [Error],
        "the link count Linux reports differs from the names found";
    SizeBeyondData = "size-beyond-data", [Error],
        "a file's size is beyond its data: Linux shows it shorter";
    BadNode = "bad-node", [Error],
        "a node Linux rejects reading its inode";
    UnreadableInode = "unreadable-inode", [Error],
        "an inode that cannot be read (`stat` fails)";
    PathTooLong = "path-too-long", [Info],
        "a path of `PATH_MAX` bytes or more: Linux reaches what lies below through relative lookups, not by absolute paths; the subtree is checked all the same (a deep tree is not a cycle)";
    XrefCrc = "xref-crc", [Error],
        "an xattr reference from a summary fails its node CRC: Linux drops it";
    XrefInconsistent = "xref-inconsistent", [Error],
        "an xattr reference from a summary is not an xref node of its size: Linux drops it";
    BadXattr = "bad-xattr", [Error],
        "an xattr datum that fails its checks (node CRC, header, data CRC): Linux drops the references using it";
    BadAcl = "bad-acl", [Error],
        "a POSIX ACL Linux cannot convert: `getxattr` fails";
    DuplicateXattr = "duplicate-xattr", [Warning],
        "an inode with the same attribute twice";
    OrphanXref = "orphan-xref", [Info],
        "an xattr reference to a datum or inode that does not exist (normal after deletions)";
    OrphanXattr = "orphan-xattr", [Info],
        "an xattr datum no reference uses (normal after deletions)";
    /// The severity of the message's level: `pr_err` or `pr_warn` (notices and info are not
    /// findings).
    KernelMessage = "kernel-message", [Error, Warning],
        "a message Linux would log that no other finding explains (`pr_err` → error, `pr_warn` → warning)";
    DataAfterEnd = "data-after-end", [Info],
        "at least 4 KiB of data that is neither nodes nor erased flash after the last node (the next partition of a flash dump, a carver's tail): the filesystem ends before it, and it is checked as erased (see [Filesystems inside larger files](#filesystems-inside-larger-files))";
}

impl Code {
    /// The usual severity: a finding of this code has it unless its site picks another of
    /// [`Code::severities`] (and the variant says when).
    pub fn severity(self) -> Severity {
        self.severities()[0]
    }

    /// The code with this string, if any.
    pub fn parse(s: &str) -> Option<Code> {
        Code::ALL.iter().copied().find(|c| c.as_str() == s)
    }

    /// `docs/FSCK.md`'s table of findings: a header, then one row per code
    /// (`` | `code` | error / warning | meaning | ``).
    pub fn table() -> String {
        let mut s = String::from("| code | severity | meaning |\n|---|---|---|\n");
        for c in Code::ALL {
            let sev: Vec<&str> = c.severities().iter().map(|s| s.lower()).collect();
            s.push_str(&format!(
                "| `{}` | {} | {} |\n",
                c.as_str(),
                sev.join(" / "),
                c.meaning()
            ));
        }
        s
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Compares with the code's string (`f.code == "data-crc"`).
impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

/// Compares with the code's string (`f.code == "data-crc"`).
impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `docs/FSCK.md`'s table of findings: from its header row to the first line that is not
    /// a row.
    fn doc_table() -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/FSCK.md");
        let doc = std::fs::read_to_string(&path).expect("docs/FSCK.md");
        let start = doc
            .find("| code | severity | meaning |\n")
            .expect("docs/FSCK.md has a table of findings");
        doc[start..]
            .lines()
            .take_while(|l| l.starts_with('|'))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn codes_are_unique_and_kebab_case() {
        let mut seen = std::collections::HashSet::new();
        for c in Code::ALL {
            let s = c.as_str();
            assert!(seen.insert(s), "{s} is defined twice");
            assert!(
                !s.is_empty()
                    && !s.starts_with('-')
                    && !s.ends_with('-')
                    && !s.contains("--")
                    && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{s} is not kebab-case"
            );
            assert_eq!(Code::parse(s), Some(*c));
            assert_eq!(c.to_string(), s);
            let sev = c.severities();
            assert!(!sev.is_empty());
            for (i, x) in sev.iter().enumerate() {
                assert!(!sev[..i].contains(x), "{s}: {x} given twice");
            }
            assert!(!c.meaning().is_empty() && !c.meaning().contains('|'));
        }
        assert_eq!(Code::parse("no-such-code"), None);
    }

    #[test]
    fn the_documentation_table_is_the_enum() {
        let doc = doc_table();
        for c in Code::ALL {
            assert!(
                doc.contains(&format!("| `{}` |", c.as_str())),
                "{} is missing from docs/FSCK.md's table of findings",
                c.as_str()
            );
        }
        let want = Code::table();
        assert!(
            doc == want,
            "docs/FSCK.md's table of findings differs from code::Code (crates/jffs2/src/code.rs); \
             replace it with:\n\n{want}"
        );
    }

    #[test]
    fn findings_take_their_severity_from_the_code() {
        use crate::fsck::Finding;
        for c in Code::ALL {
            let f = Finding::new(*c, String::new());
            assert_eq!((f.code, f.severity), (*c, c.severity()));
            for s in c.severities() {
                assert_eq!(f.clone().with_severity(*s).severity, *s);
            }
        }
    }

    /// A severity the code does not list is a bug of the site (caught by the tests, which
    /// build with debug assertions).
    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "header-crc is never INFO")]
    fn other_severities_are_refused() {
        let _ =
            crate::fsck::Finding::new(Code::HeaderCrc, String::new()).with_severity(Severity::Info);
    }
}
