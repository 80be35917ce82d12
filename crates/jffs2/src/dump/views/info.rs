//! `--info`: what an image is (byte order, erase size, page size, cleanmarkers, compressors,
//! node and inode counts) and the `mkfs.jffs2` command line that rebuilds it from its
//! extracted tree.
//!
//! # The command line
//!
//! mkfs.jffs2's output is a function of the tree and its options (`docs/spec/mtd-utils-spec.md` §3.9).
//! Read back from the image:
//!
//! * `-e`: the erase size (detected or given); `-l`/`-b`: the byte order;
//! * `-n` when there is no cleanmarker, `-c SIZE` when they are not 12 bytes;
//! * `-s`: the page size, the largest `dsize` of a data node (mkfs never makes a node larger
//!   than a page; 4096 when every file fits in a smaller node);
//! * `-f` when every timestamp is 0 (without it mkfs writes each host file's mtime as its
//!   atime, mtime and ctime, `docs/spec/mtd-utils-spec.md` §3.3; the extraction sets those
//!   mtimes, so the rebuild matches while the extracted tree is left unchanged);
//! * compressors: `-X lzo` when LZO was used (disabled by default), `-x zlib` when rtime or LZO
//!   was used but zlib never was (zlib, tried first, would have won), `-m none` when nothing is
//!   compressed although zlib would compress it;
//! * `--with-xattr` when the image holds extended attributes;
//! * `-p` when the image is padded to the end of its last erase block, `--pad=SIZE` when
//!   it is longer.
//!
//! Run on the tree extracted as root (devices, owners), that command gives the same bytes for
//! images mkfs.jffs2 made with `-f` and the default page size (tested); the notes say what
//! else would differ.

use std::collections::BTreeMap;
use std::io::{self, Write};

use super::{walk, Body, Item};
use crate::compress::{
    compr_name, zlib_compress, COMPR_LZMA, COMPR_LZO, COMPR_NONE, COMPR_RTIME, COMPR_ZERO,
    COMPR_ZLIB,
};
use crate::format::xprefix;
use crate::format::ROOT_INO;
use crate::format::{S_IFLNK, S_IFMT, S_IFREG};
use crate::fs::{Fs, InodeKind, TreeOptions};
use crate::scan::Detection;

/// Options of [`info`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InfoOptions {
    /// The byte order was given (not detected).
    pub endian_given: bool,
    /// The erase size was given (not detected).
    pub erase_size_given: bool,
    /// The directory the command line names (`-r`).
    pub root: String,
    /// The image it names (`-o`).
    pub output: String,
}

impl Default for InfoOptions {
    fn default() -> Self {
        InfoOptions {
            endian_given: false,
            erase_size_given: false,
            root: "DIR".into(),
            output: "IMAGE".into(),
        }
    }
}

/// Data-node counts per compressor.
pub type CompressorCounts = BTreeMap<&'static str, u64>;

/// A `mkfs.jffs2` command line and what it cannot reproduce.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MkfsCommand {
    /// The arguments after `mkfs.jffs2`.
    pub args: Vec<String>,
    /// What the rebuilt image will not have, or other caveats.
    pub notes: Vec<String>,
}

impl MkfsCommand {
    /// `mkfs.jffs2 ARGS…` as one line.
    pub fn line(&self) -> String {
        let mut s = "mkfs.jffs2".to_string();
        for a in &self.args {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}

/// What `--info` shows.
#[derive(Debug, Clone, PartialEq)]
pub struct ImageInfo {
    /// Length of the image file.
    pub image_len: u64,
    /// The detection (evidence and confidence), as run.
    pub detection: Detection,
    /// Options.
    pub opts: InfoOptions,
    /// Largest `dsize` of a data node.
    pub max_dsize: u32,
    /// The page size guessed from it.
    pub page_size: u32,
    /// Cleanmarker nodes found.
    pub cleanmarkers: u64,
    /// Data nodes (dsize > 0, not obsolete) per compressor.
    pub compressors: CompressorCounts,
    /// Nodes per type name (all nodes found by the walk).
    pub nodes: BTreeMap<&'static str, u64>,
    /// Nodes whose ACCURATE bit is clear (obsoleted by the kernel).
    pub obsolete_nodes: u64,
    /// Nodes with a wrong CRC.
    pub bad_crc_nodes: u64,
    /// Inodes Linux shows, per kind.
    pub inodes: BTreeMap<&'static str, u64>,
    /// Directory entries Linux shows (names, the root not counted).
    pub dirents: u64,
    /// Non-directories with more than one name.
    pub hard_linked: u64,
    /// xattr name prefixes used.
    pub xattr_prefixes: Vec<&'static str>,
    /// Blocks whose summary the kernel used.
    pub summaries: u64,
    /// Every timestamp is 0.
    pub times_zero: bool,
    /// End of the last node that is not a cleanmarker.
    pub data_end: u64,
    /// Why the mount would fail, if it would.
    pub mount_failure: Option<String>,
    /// The command line.
    pub mkfs: MkfsCommand,
}

/// What the node walk finds: counts and the signs the command line is read from.
struct NodeStats {
    nodes: BTreeMap<&'static str, u64>,
    compr: BTreeMap<u8, u64>,
    obsolete: u64,
    bad_crc: u64,
    cleanmarkers: u64,
    max_dsize: u32,
    times_zero: bool,
    data_end: u64,
    /// A (non-ZERO) data node lies at file offset 4096 or later.
    far_data: bool,
    /// (start, length) of the first few uncompressed data payloads.
    none_samples: Vec<(usize, usize)>,
    /// xattr name prefixes, in first-seen order.
    prefixes: Vec<u8>,
    root_inode: bool,
    /// Symlink inode number to (isize, csize).
    symlink_isize: BTreeMap<u32, (u32, u32)>,
}

impl NodeStats {
    /// Valid regular-file data nodes written with compressor `c`.
    fn count(&self, c: u8) -> u64 {
        self.compr.get(&c).copied().unwrap_or(0)
    }

    /// mkfs makes nodes of at most a page; smaller nodes only at block tails and file ends.
    fn page_size(&self) -> u32 {
        let d = self.max_dsize;
        if d > 4096 || (d > 0 && d < 4096 && self.far_data) {
            d
        } else {
            4096
        }
    }
}

/// Walks every node of `image` and gathers [`NodeStats`].
fn node_stats(image: &[u8], e: crate::format::Endian) -> NodeStats {
    let mut s = NodeStats {
        nodes: BTreeMap::new(),
        compr: BTreeMap::new(),
        obsolete: 0,
        bad_crc: 0,
        cleanmarkers: 0,
        max_dsize: 0,
        times_zero: true,
        data_end: 0,
        far_data: false,
        none_samples: Vec::new(),
        prefixes: Vec::new(),
        root_inode: false,
        symlink_isize: BTreeMap::new(),
    };
    for it in walk(image, e) {
        let Item::Node(n) = it else {
            continue;
        };
        *s.nodes.entry(n.type_name()).or_default() += 1;
        if !n.accurate() {
            s.obsolete += 1;
        }
        if !n.crcs_ok() {
            s.bad_crc += 1;
        }
        match &n.body {
            Body::Cleanmarker => s.cleanmarkers += 1,
            _ => s.data_end = s.data_end.max(n.offset + ((u64::from(n.totlen) + 3) & !3)),
        }
        if !n.accurate() {
            continue;
        }
        match &n.body {
            Body::Inode { node, .. } => s.add_inode(n.offset, node),
            Body::Dirent { node, .. } if node.mctime != 0 => s.times_zero = false,
            Body::Xattr { node, .. } if !s.prefixes.contains(&node.xprefix) => {
                s.prefixes.push(node.xprefix);
            }
            _ => {}
        }
    }
    s
}

impl NodeStats {
    /// Counts one valid inode node found at image offset `at`.
    fn add_inode(&mut self, at: u64, node: &crate::format::InodeNode) {
        if node.atime != 0 || node.mtime != 0 || node.ctime != 0 {
            self.times_zero = false;
        }
        if node.ino == ROOT_INO {
            self.root_inode = true;
        }
        if node.mode & S_IFMT == S_IFLNK {
            self.symlink_isize
                .insert(node.ino, (node.isize, node.csize));
        }
        if node.dsize > 0 && node.mode & S_IFMT == S_IFREG {
            *self.compr.entry(node.compr).or_default() += 1;
            // A ZERO node (a hole the kernel wrote) can be of any size.
            if node.compr != COMPR_ZERO {
                self.max_dsize = self.max_dsize.max(node.dsize);
                if node.offset >= 4096 {
                    self.far_data = true;
                }
            }
            if node.compr == COMPR_NONE && self.none_samples.len() < 16 {
                let start = at as usize + crate::format::INODE_SIZE;
                self.none_samples.push((start, node.csize as usize));
            }
        }
    }
}

/// What Linux shows: inodes per kind, names, hard links, symlinks mkfs cut short.
struct TreeStats {
    inodes: BTreeMap<&'static str, u64>,
    dirents: u64,
    hard_linked: u64,
    /// Escaped paths of symlinks whose isize is not their stored length.
    long_links: Vec<String>,
}

/// Counts the tree `fs` shows; `symlink_isize` is [`NodeStats::symlink_isize`].
fn tree_stats(fs: &Fs<'_>, symlink_isize: &BTreeMap<u32, (u32, u32)>) -> TreeStats {
    let tree = fs.tree(&TreeOptions::metadata());
    let mut inodes: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut seen = std::collections::HashSet::new();
    let mut hard_linked = 0u64;
    let mut long_links = Vec::new();
    for t in &tree.entries {
        if seen.insert(t.ino) {
            *inodes.entry(t.kind.listing_name()).or_default() += 1;
            if t.kind != InodeKind::Dir && t.nlink > 1 {
                hard_linked += 1;
            }
            if t.kind == InodeKind::Symlink {
                if let Some(&(isize, csize)) = symlink_isize.get(&t.ino) {
                    if isize != csize {
                        long_links.push(crate::text::escape(&t.path, false));
                    }
                }
            }
        }
    }
    TreeStats {
        inodes,
        dirents: tree.entries.len().saturating_sub(1) as u64,
        hard_linked,
        long_links,
    }
}

/// The names of the xattr prefixes, each once, in first-seen order.
fn xattr_prefix_names(prefixes: &[u8]) -> Vec<&'static str> {
    prefixes
        .iter()
        .map(|p| match *p {
            xprefix::USER => "user",
            xprefix::SECURITY => "security",
            xprefix::ACL_ACCESS | xprefix::ACL_DEFAULT => "system.posix_acl",
            xprefix::TRUSTED => "trusted",
            _ => "unknown",
        })
        .fold(Vec::new(), |mut v, p| {
            if !v.contains(&p) {
                v.push(p);
            }
            v
        })
}

/// Everything the command line and its notes are read from.
struct CommandInput<'a> {
    image: &'a [u8],
    detection: &'a Detection,
    fs: &'a Fs<'a>,
    opts: &'a InfoOptions,
    stats: &'a NodeStats,
    tree: &'a TreeStats,
    page_size: u32,
    summaries: u64,
    has_xattrs: bool,
}

/// Computes [`ImageInfo`] for `image` (the file's bytes, unpadded), given the detection that
/// chose the geometry and the filesystem model built from the scan.
pub fn info(image: &[u8], detection: &Detection, fs: &Fs<'_>, opts: &InfoOptions) -> ImageInfo {
    let stats = node_stats(image, fs.scan().geometry.endian);
    let page_size = stats.page_size();
    let tree = tree_stats(fs, &stats.symlink_isize);
    let summaries = fs
        .scan()
        .blocks
        .iter()
        .filter(|b| b.summary == crate::scan::SummaryUse::Used)
        .count() as u64;
    let xattr_prefixes = xattr_prefix_names(&stats.prefixes);
    let input = CommandInput {
        image,
        detection,
        fs,
        opts,
        stats: &stats,
        tree: &tree,
        page_size,
        summaries,
        has_xattrs: !xattr_prefixes.is_empty(),
    };
    let (mkfs, len) = mkfs_command(&input);
    ImageInfo {
        image_len: len,
        detection: detection.clone(),
        opts: opts.clone(),
        max_dsize: stats.max_dsize,
        page_size,
        cleanmarkers: stats.cleanmarkers,
        compressors: stats
            .compr
            .iter()
            .map(|(c, n)| (compr_name(*c), *n))
            .collect(),
        nodes: stats.nodes,
        obsolete_nodes: stats.obsolete,
        bad_crc_nodes: stats.bad_crc,
        inodes: tree.inodes,
        dirents: tree.dirents,
        hard_linked: tree.hard_linked,
        xattr_prefixes,
        summaries,
        times_zero: stats.times_zero,
        data_end: stats.data_end,
        mount_failure: fs.scan().failure.as_ref().map(|f| format!("{f:?}")),
        mkfs,
    }
}

/// The `mkfs.jffs2` command line and its notes, and the image length it pads to (the
/// file's length, or OpenWrt's end marker when there is one). Arguments and notes come in
/// the order the steps below add them.
fn mkfs_command(c: &CommandInput<'_>) -> (MkfsCommand, u64) {
    let mut cmd = MkfsCommand {
        args: Vec::new(),
        notes: Vec::new(),
    };
    geometry_args(c, &mut cmd);
    compressor_args(c, &mut cmd);
    if c.has_xattrs {
        cmd.args.push("--with-xattr".into());
        cmd.notes.push(
            "xattrs: mkfs.jffs2 writes them in the order the host filesystem lists them, \
             which decides their ids"
                .into(),
        );
    }
    let len = padding_args(c, &mut cmd);
    closing_notes(c, &mut cmd);
    (cmd, len)
}

/// The `-b`/`-l` flag for the byte order `e`.
fn endian_flag(e: crate::format::Endian) -> &'static str {
    if e == crate::format::Endian::Big {
        "-b"
    } else {
        "-l"
    }
}

/// `-r`, `-o`, `-e`, the byte order, cleanmarkers (`-n`/`-c`), `-s` and `-f`.
fn geometry_args(c: &CommandInput<'_>, cmd: &mut MkfsCommand) {
    let g = c.fs.scan().geometry;
    cmd.args.extend([
        "-r".to_string(),
        c.opts.root.clone(),
        "-o".to_string(),
        c.opts.output.clone(),
        "-e".to_string(),
        crate::text::erase_size_arg(g.erase_size),
        endian_flag(g.endian).into(),
    ]);
    let cm = c.detection.geometry.cleanmarker_size;
    if c.stats.cleanmarkers == 0 {
        cmd.args.push("-n".into());
    } else if cm != 12 && cm != 0 {
        cmd.args.push("-c".into());
        cmd.args.push(cm.to_string());
    }
    if c.page_size != 4096 {
        cmd.args.push("-s".into());
        cmd.args.push(c.page_size.to_string());
    }
    if c.stats.times_zero {
        cmd.args.push("-f".into());
    } else {
        cmd.notes.push(
            "timestamps: without -f, mkfs.jffs2 writes each file's mtime as its atime, mtime \
             and ctime; --extract sets those mtimes, so rebuild from the extracted tree as it \
             is (creating or removing anything in a directory changes its mtime)"
                .into(),
        );
    }
}

/// `-X`, `-x` and `-m` from the compressors the data nodes use, and a note per compressor
/// mkfs.jffs2 cannot write.
fn compressor_args(c: &CommandInput<'_>, cmd: &mut MkfsCommand) {
    let s = c.stats;
    let (zlib, rtime, lzo, none, lzma) = (
        s.count(COMPR_ZLIB),
        s.count(COMPR_RTIME),
        s.count(COMPR_LZO),
        s.count(COMPR_NONE),
        s.count(COMPR_LZMA),
    );
    if lzo > 0 {
        cmd.args.push("-X".into());
        cmd.args.push("lzo".into());
    }
    if lzma > 0 {
        // OpenWrt's recipe for its LZMA images.
        cmd.args
            .extend(["-X", "lzma", "-m", "size"].map(String::from));
        cmd.notes.push(
            "lzma data nodes: OpenWrt's compressor, written with -X lzma (OpenWrt's \
             mkfs.jffs2 and jffs2-mkfs); jffs2-mkfs encodes with liblzma, not the LZMA SDK, \
             so node bytes and layout may differ from OpenWrt's build"
                .into(),
        );
    }
    if zlib == 0 && (rtime > 0 || lzo > 0) {
        cmd.args.push("-x".into());
        cmd.args.push("zlib".into());
    }
    if zlib == 0 && rtime == 0 && lzo == 0 && none > 0 {
        let compressible = s.none_samples.iter().any(|&(st, n)| {
            c.image
                .get(st..st.saturating_add(n))
                .is_some_and(|d| zlib_compress(d, d.len()).is_some())
        });
        if compressible {
            cmd.args.push("-m".into());
            cmd.args.push("none".into());
        }
    }
    for (&cp, _) in s.compr.iter().filter(|(cp, _)| {
        !matches!(
            **cp,
            COMPR_NONE | COMPR_ZLIB | COMPR_RTIME | COMPR_LZO | COMPR_ZERO | COMPR_LZMA
        )
    }) {
        cmd.notes.push(format!(
            "{} data nodes: mkfs.jffs2 cannot write that compressor",
            compr_name(cp)
        ));
    }
}

/// `-p` or `--pad`, and the note on OpenWrt's end marker; returns the length padded to.
fn padding_args(c: &CommandInput<'_>, cmd: &mut MkfsCommand) -> u64 {
    let es = u64::from(c.fs.scan().geometry.erase_size.max(1));
    let len = c.image.len() as u64;
    // OpenWrt appends its end-of-filesystem marker to the padded image.
    let marker = c.fs.scan().end_marker.map(u64::from).filter(|&m| m < len);
    if let Some(m) = marker {
        cmd.notes.push(format!(
            "OpenWrt's end-of-filesystem marker at 0x{m:x}: append it as OpenWrt does, \
             echo -ne '\\xde\\xad\\xc0\\xde' >> {}",
            c.opts.output
        ));
    }
    let len = marker.unwrap_or(len);
    let data_end = c.stats.data_end;
    if len > data_end && data_end > 0 {
        if len == data_end.div_ceil(es) * es {
            cmd.args.push("-p".into());
        } else {
            cmd.args.push(format!("--pad={len}"));
        }
    }
    len
}

/// The notes on what else a rebuild would change: devices, cut symlinks, summaries, the
/// kernel's writes, a low-confidence detection.
fn closing_notes(c: &CommandInput<'_>, cmd: &mut MkfsCommand) {
    let (s, t) = (c.stats, c.tree);
    let g = c.fs.scan().geometry;
    let devices =
        t.inodes.get("char").copied().unwrap_or(0) + t.inodes.get("block").copied().unwrap_or(0);
    if devices > 0 {
        cmd.notes.push(format!(
            "{devices} device nodes: extract as root so that they are in the tree (a -D device \
             table makes mkfs.jffs2 write them after the other entries of their directory)"
        ));
    }
    if !t.long_links.is_empty() {
        cmd.notes.push(format!(
            "{} symbolic links were cut to 254 bytes by mkfs.jffs2 (their size still says the \
             full length), e.g. {}: rebuilt, they get the shorter size",
            t.long_links.len(),
            t.long_links[0]
        ));
    }
    if c.summaries > 0 || s.nodes.contains_key("summary") {
        cmd.notes.push(format!(
            "erase-block summaries: mkfs.jffs2 writes none; pass its output through \
             sumtool -e {} {}{} (or use jffs2-mkfs --summary)",
            crate::text::erase_size_arg(g.erase_size),
            endian_flag(g.endian),
            if s.cleanmarkers == 0 { " -n" } else { "" }
        ));
    }
    let kernel_signs = crate::dump::find::KernelSigns {
        obsolete: s.obsolete > 0,
        zero_data: s.count(COMPR_ZERO) > 0,
        root_inode: s.root_inode,
        padding: s.nodes.contains_key("padding"),
        dirent_order: false,
    }
    .names();
    if !kernel_signs.is_empty() {
        cmd.notes.push(format!(
            "the kernel has written to this image ({}): mkfs.jffs2 rebuilds the same files, \
             not the same bytes",
            kernel_signs.join(", ")
        ));
    }
    let d = c.detection;
    if d.confidence < 0.5 && !c.opts.erase_size_given {
        cmd.notes.push(format!(
            "the erase size was detected with low confidence ({:.2}); give the erase size if \
             you know it",
            d.confidence
        ));
    }
}

/// Writes `--info` as text.
pub fn write_info(i: &ImageInfo, out: &mut dyn Write) -> io::Result<()> {
    let g = i.detection.geometry;
    let how = |given: bool, confidence: f32| {
        if given {
            "given".to_string()
        } else {
            format!("detected, confidence {confidence:.2}")
        }
    };
    writeln!(out, "image:            {} bytes", i.image_len)?;
    writeln!(
        out,
        "byte order:       {} endian ({})",
        g.endian.name(),
        how(i.opts.endian_given, i.detection.endian_confidence)
    )?;
    writeln!(
        out,
        "erase size:       {} (0x{:x} bytes; {})",
        crate::text::erase_size_arg(g.erase_size),
        g.erase_size,
        how(i.opts.erase_size_given, i.detection.confidence)
    )?;
    writeln!(
        out,
        "page size:        {} (largest data node: {} bytes)",
        i.page_size, i.max_dsize
    )?;
    if i.cleanmarkers == 0 {
        writeln!(out, "cleanmarkers:     none")?;
    } else {
        writeln!(
            out,
            "cleanmarkers:     {} bytes, in {} blocks",
            g.cleanmarker_size, i.cleanmarkers
        )?;
    }
    let comp: Vec<String> = i
        .compressors
        .iter()
        .map(|(n, c)| format!("{n} {c}"))
        .collect();
    writeln!(
        out,
        "compressors:      {} (data nodes)",
        if comp.is_empty() {
            "none".to_string()
        } else {
            comp.join(", ")
        }
    )?;
    let total: u64 = i.nodes.values().sum();
    let types: Vec<String> = i.nodes.iter().map(|(n, c)| format!("{n} {c}")).collect();
    writeln!(out, "nodes:            {total} ({})", types.join(", "))?;
    if i.obsolete_nodes > 0 || i.bad_crc_nodes > 0 {
        writeln!(
            out,
            "                  {} obsolete, {} with a wrong CRC",
            i.obsolete_nodes, i.bad_crc_nodes
        )?;
    }
    let inodes: u64 = i.inodes.values().sum();
    let kinds: Vec<String> = i.inodes.iter().map(|(n, c)| format!("{n} {c}")).collect();
    writeln!(
        out,
        "inodes:           {inodes} ({}); {} directory entries, {} hard-linked",
        kinds.join(", "),
        i.dirents,
        i.hard_linked
    )?;
    if !i.xattr_prefixes.is_empty() {
        writeln!(out, "xattrs:           {}", i.xattr_prefixes.join(", "))?;
    }
    writeln!(out, "summaries:        used in {} blocks", i.summaries)?;
    writeln!(
        out,
        "timestamps:       {}",
        if i.times_zero {
            "all zero (mkfs.jffs2 -f)"
        } else {
            "set"
        }
    )?;
    if let Some(f) = &i.mount_failure {
        writeln!(out, "mount:            Linux would refuse it: {f}")?;
    }
    writeln!(out, "rebuild with:     {}", i.mkfs.line())?;
    for n in &i.mkfs.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}
