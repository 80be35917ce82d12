//! The views and file access of `jffs2-dump` beyond jffs2dump (`--json`, `--summary`,
//! `--blocks`, `--map`, `--info`, `--list`, `--cat`, `--extract`) and the `jffs2reader` drop-in.
//! Everything JFFS2 is in the core (`jffs2::dump::views`, `jffs2::extract`); this module loads
//! the image, picks the geometry, and prints.

use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jffs2::dump::views::{self, Body, InfoOptions, Item, KernelView, NodeInfo, NodeVerdict};
use jffs2::extract::{self, ExtractOptions, Plan};
use jffs2::format::{DirentNode, Endian, InodeNode, SumRecord, XattrNode};
use jffs2::fs::{Fs, InodeKind};
use jffs2::scan::{self, Detection};
use jffs2::{Image, ImageError, ImageOptions};
use serde_json::{json, Map, Value};

use super::super::output::{is_input_message, same_file};
use super::{io_text, stdout_failed, Exit};
use crate::cli::flags::dump::reader_help;
use crate::cli::Tool;

/// The image's resident pages are dropped when they grow by this much…
pub(super) const TRIM_LIMIT: usize = 12 << 20;
/// …checked this often.
pub(super) const TRIM_PERIOD: Duration = Duration::from_millis(2);

/// What was asked for beyond jffs2dump's `-c`/`-e`.
#[derive(Debug, Default, Clone)]
pub struct ViewArgs {
    pub json: bool,
    pub summary: bool,
    pub blocks: bool,
    pub map: Option<PathBuf>,
    pub info: bool,
    pub list: bool,
    pub cat: Option<OsString>,
    pub extract: Option<PathBuf>,
    pub force: bool,
    pub erase_size: Option<u32>,
    pub endian: Option<Endian>,
    pub verbose: bool,
    pub no_xattrs: bool,
    pub no_owners: bool,
    pub devtable: Option<PathBuf>,
    /// `--offset`, `--size`: the part of the file read.
    pub window: crate::cli::flags::Window,
    /// `--find`.
    pub find: bool,
}

impl ViewArgs {
    /// Whether any of these views was asked for.
    pub fn any(&self) -> bool {
        self.json
            || self.summary
            || self.blocks
            || self.map.is_some()
            || self.info
            || self.list
            || self.cat.is_some()
            || self.extract.is_some()
            || self.find
    }

    /// The part of the file read (`None`: all of it).
    pub fn window(&self) -> Option<jffs2::mapped::Window> {
        self.window.window()
    }

    /// Views that print to stdout.
    fn stdout_views(&self) -> usize {
        [
            self.json,
            self.summary,
            self.blocks,
            self.info,
            self.list,
            self.cat.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count()
    }
}

/// A loaded image ([`jffs2::Image`]): the flash the kernel would mount (the file padded with
/// 0xFF to whole erase blocks, at least five) and the geometry.
pub struct Loaded {
    image: Image<'static>,
    /// The detection, with the geometry the user gave applied.
    pub detection: Detection,
    pub file_len: usize,
    /// Where the image starts in the file, when a window was given (`--offset`).
    pub window: Option<u64>,
}

impl Loaded {
    /// The file's bytes.
    pub fn file_bytes(&self) -> &[u8] {
        self.image.file_bytes()
    }

    /// The flash the kernel mounts.
    pub fn flash(&self) -> &[u8] {
        self.image.flash()
    }

    fn trimmer(&self) -> Option<extract::Trimmer<'_>> {
        self.image.trimmer()
    }
}

/// Loads `path` (or uses `owned`, an image already read and peeled), detects the geometry
/// and applies what the user gave.
pub fn load(
    tool: &Tool,
    path: &Path,
    owned: Option<Vec<u8>>,
    endian: Option<Endian>,
    erase_size: Option<u32>,
    window: Option<jffs2::mapped::Window>,
    verbose: bool,
) -> Result<Loaded, Exit> {
    let shown = path.display();
    let open_error = |e: &io::Error| {
        tool.error(&format!("open input file {shown}: {}", io_text(e)));
        Exit(1)
    };
    let print_evidence = |d: &Detection| {
        if verbose {
            for ev in &d.evidence {
                eprintln!("{}: detection: {ev}", tool.name);
            }
        }
    };
    let opts = ImageOptions {
        erase_size,
        endian,
        // A geometry given by hand opens what the detection finds no node in.
        insist: endian.is_some() || erase_size.is_some(),
        quick_detect: true,
        trim: Some((TRIM_LIMIT, TRIM_PERIOD)),
        // The views go over the image several times (scan, inode reads, data): kept
        // resident unless the model is large next to it (as jffs2-fsck does).
        trim_keep: jffs2::mapped::TRIM_KEEP,
        // An image already read (`owned`) was windowed before its OOB bytes were peeled.
        window: if owned.is_some() { None } else { window },
        ..ImageOptions::default()
    };
    let opened = match owned {
        Some(v) => Image::from_vec_with(v, &opts),
        None => Image::open_with(path, &opts),
    };
    let image = match opened {
        Ok(image) => image,
        Err(ImageError::Io { error, .. }) => return Err(open_error(&error)),
        Err(ImageError::Directory(_)) => {
            return Err(open_error(&io::Error::from_raw_os_error(libc::EISDIR)))
        }
        Err(e @ (ImageError::Empty | ImageError::NotJffs2(_))) => {
            let why = e.why();
            let detection = match e {
                ImageError::NotJffs2(d) => *d,
                _ => scan::detect(&[]),
            };
            print_evidence(&detection);
            let why = why.unwrap_or_else(|| "the image is empty (0 bytes)".to_string());
            tool.error(&format!("{shown}: not a JFFS2 image: {why}"));
            return Err(Exit(1));
        }
        Err(e) => {
            tool.error(&format!("{shown}: {e}"));
            return Err(Exit(1));
        }
    };
    let mut detection = image.detection().clone();
    print_evidence(&detection);
    if let Some(e) = endian {
        if e != detection.geometry.endian && detection.confidence > 0.0 && erase_size.is_none() {
            tool.warning(&format!(
                "{shown}: the image looks {} endian; its erase size was detected that way (give --erase-size if it is wrong)",
                detection.geometry.endian.name()
            ));
        }
    }
    detection.geometry = image.geometry();
    Ok(Loaded {
        file_len: image.file_len(),
        image,
        detection,
        window: window.map(|w| w.offset),
    })
}

fn hex(v: &[u8]) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}

fn crc_json(c: &views::Crc) -> Value {
    json!({ "stored": c.stored, "computed": c.computed, "ok": c.ok() })
}

/// A name or value as JSON: the string when it is UTF-8, plus its hex when it is not.
fn bytes_json(m: &mut Map<String, Value>, key: &str, b: &[u8]) {
    m.insert(
        key.into(),
        Value::String(String::from_utf8_lossy(b).into_owned()),
    );
    if std::str::from_utf8(b).is_err() {
        m.insert(format!("{key}_hex"), Value::String(hex(b)));
    }
}

fn record_json(r: &SumRecord) -> Value {
    match r {
        SumRecord::Inode {
            nodetype,
            inode,
            version,
            offset,
            totlen,
        } => json!({"type": "inode", "nodetype": nodetype, "ino": inode, "version": version,
            "offset": offset, "totlen": totlen}),
        SumRecord::Dirent {
            nodetype,
            totlen,
            offset,
            pino,
            version,
            ino,
            dtype,
            name,
        } => {
            let mut m = Map::new();
            m.insert("type".into(), json!("dirent"));
            m.insert("nodetype".into(), json!(nodetype));
            m.insert("totlen".into(), json!(totlen));
            m.insert("offset".into(), json!(offset));
            m.insert("pino".into(), json!(pino));
            m.insert("version".into(), json!(version));
            m.insert("ino".into(), json!(ino));
            m.insert("dtype".into(), json!(dtype));
            bytes_json(&mut m, "name", name);
            Value::Object(m)
        }
        SumRecord::Xattr {
            nodetype,
            xid,
            version,
            offset,
            totlen,
        } => json!({"type": "xattr", "nodetype": nodetype, "xid": xid, "version": version,
            "offset": offset, "totlen": totlen}),
        SumRecord::Xref { nodetype, offset } => {
            json!({"type": "xref", "nodetype": nodetype, "offset": offset})
        }
    }
}

/// One node as JSON: offset, type, header, fields, CRC verdicts, the kernel's verdict.
pub fn node_json(n: &NodeInfo, v: Option<NodeVerdict>, erase_size: u32) -> Value {
    let mut m = Map::new();
    m.insert("offset".into(), json!(n.offset));
    if erase_size > 0 {
        m.insert("block".into(), json!(n.offset / u64::from(erase_size)));
    }
    m.insert("type".into(), json!(n.type_name()));
    m.insert("nodetype".into(), json!(format!("0x{:04x}", n.nodetype)));
    m.insert("accurate".into(), json!(n.accurate()));
    m.insert("totlen".into(), json!(n.totlen));
    m.insert("hdr_crc".into(), crc_json(&n.hdr_crc));
    if n.truncated {
        m.insert("truncated".into(), json!(true));
    }
    body_json(&mut m, &n.body);
    m.insert("crcs_ok".into(), json!(n.crcs_ok()));
    if let Some(v) = v {
        m.insert("kernel".into(), kernel_json(v));
    }
    Value::Object(m)
}

/// A node body's fields and CRC verdicts, added to `m`.
fn body_json(m: &mut Map<String, Value>, body: &Body) {
    match body {
        Body::Inode {
            node,
            node_crc,
            data_crc,
        } => {
            m.insert("fields".into(), inode_fields(node));
            m.insert("node_crc".into(), crc_json(node_crc));
            m.insert("data_crc".into(), crc_json(data_crc));
        }
        Body::Dirent {
            node,
            name,
            node_crc,
            name_crc,
        } => {
            m.insert("fields".into(), dirent_fields(node, name));
            m.insert("node_crc".into(), crc_json(node_crc));
            m.insert("name_crc".into(), crc_json(name_crc));
        }
        Body::Xattr {
            node,
            name,
            value,
            node_crc,
            data_crc,
        } => {
            m.insert("fields".into(), xattr_fields(node, name, value));
            m.insert("node_crc".into(), crc_json(node_crc));
            m.insert("data_crc".into(), crc_json(data_crc));
        }
        Body::Xref { node, node_crc } => {
            m.insert(
                "fields".into(),
                json!({"ino": node.ino, "xid": node.xid, "xseqno": node.xseqno}),
            );
            m.insert("node_crc".into(), crc_json(node_crc));
        }
        Body::Summary {
            node,
            node_crc,
            sum_crc,
            records,
        } => {
            m.insert(
                "fields".into(),
                json!({"sum_num": node.sum_num, "cln_mkr": node.cln_mkr, "padded": node.padded}),
            );
            m.insert("node_crc".into(), crc_json(node_crc));
            m.insert("sum_crc".into(), crc_json(sum_crc));
            match records {
                Ok(rs) => {
                    m.insert(
                        "records".into(),
                        Value::Array(rs.iter().map(record_json).collect()),
                    );
                }
                Err(e) => {
                    m.insert("records_error".into(), json!(e));
                }
            }
        }
        Body::Short => {
            m.insert("short".into(), json!(true));
        }
        Body::Cleanmarker | Body::Padding | Body::Other => {}
    }
}

/// An inode node's fixed fields.
fn inode_fields(node: &InodeNode) -> Value {
    json!({
        "ino": node.ino, "version": node.version, "mode": node.mode,
        "mode_text": extract::format_mode(node.mode), "uid": node.uid,
        "gid": node.gid, "isize": node.isize, "atime": node.atime,
        "mtime": node.mtime, "ctime": node.ctime, "offset": node.offset,
        "csize": node.csize, "dsize": node.dsize, "compr": node.compr,
        "compr_name": jffs2::compress::compr_name(node.compr),
        "usercompr": node.usercompr, "flags": node.flags,
    })
}

/// A directory entry's fixed fields and name.
fn dirent_fields(node: &DirentNode, name: &[u8]) -> Value {
    let mut f = Map::new();
    for (k, v) in [
        ("pino", node.pino),
        ("version", node.version),
        ("ino", node.ino),
        ("mctime", node.mctime),
        ("nsize", u32::from(node.nsize)),
        ("dtype", u32::from(node.dtype)),
    ] {
        f.insert(k.into(), json!(v));
    }
    bytes_json(&mut f, "name", name);
    Value::Object(f)
}

/// An xattr datum's fixed fields, name and value.
fn xattr_fields(node: &XattrNode, name: &[u8], value: &[u8]) -> Value {
    let mut f = Map::new();
    for (k, v) in [
        ("xid", node.xid),
        ("version", node.version),
        ("xprefix", u32::from(node.xprefix)),
        ("name_len", u32::from(node.name_len)),
        ("value_len", u32::from(node.value_len)),
    ] {
        f.insert(k.into(), json!(v));
    }
    bytes_json(&mut f, "name", name);
    f.insert("value_hex".into(), json!(hex(value)));
    Value::Object(f)
}

/// The kernel's verdict on a node.
fn kernel_json(v: NodeVerdict) -> Value {
    let mut k = Map::new();
    k.insert("verdict".into(), json!(v.name()));
    match v {
        NodeVerdict::Dirt(c) => {
            k.insert("dirt".into(), json!(c.name()));
        }
        NodeVerdict::Linked { from_summary, .. } if from_summary => {
            k.insert("from_summary".into(), json!(true));
        }
        _ => {}
    }
    Value::Object(k)
}

/// Most gaps listed in `--json` (a hostile image has one every other word).
const MAX_GAPS: usize = 100_000;

fn write_json(
    loaded: &Loaded,
    kernel: &KernelView<'_>,
    fs: &Fs<'_>,
    status: i32,
    out: &mut dyn Write,
) -> io::Result<()> {
    let g = loaded.detection.geometry;
    let head = json!({
        "format": "jffs2-dump-json/1",
        "image_size": loaded.file_len,
        // Offsets below count from the window's start (as in an image cut out with dd).
        "window": loaded.window.map(|o| json!({"offset": o, "size": loaded.file_len})),
        "endian": g.endian.name(),
        "erase_size": g.erase_size,
        "cleanmarker_size": g.cleanmarker_size,
        "detection_confidence": crate::cli::f32_json(loaded.detection.confidence),
        "mount_failure": fs.scan().failure.as_ref().map(|f| format!("{f:?}")),
        "end_marker": fs.scan().end_marker,
        "data_after_end": loaded.image.trailing_data().map(|t| json!({"offset": t.offset, "length": t.len})),
    });
    let head = serde_json::to_string(&head).map_err(io::Error::other)?;
    // The head object without its closing brace, then the node array.
    writeln!(out, "{},\n\"nodes\": [", &head[..head.len() - 1])?;
    let mut gaps = Vec::new();
    let mut gaps_omitted = 0u64;
    let mut first = true;
    for it in views::walk(loaded.file_bytes(), g.endian) {
        match it {
            Item::Node(n) => {
                let v = node_json(&n, Some(kernel.verdict(n.offset)), g.erase_size);
                if !first {
                    out.write_all(b",\n")?;
                }
                first = false;
                serde_json::to_writer(&mut *out, &v).map_err(io::Error::other)?;
            }
            Item::Gap { offset, len, kind } => {
                // OpenWrt's end-of-filesystem marker: its 4 bytes are a gap of their own.
                let marker = fs.scan().end_marker.map(u64::from);
                let mut parts = vec![(offset, len, kind.name())];
                if marker == Some(offset) && len >= 4 {
                    parts = vec![(offset, 4, "end-marker")];
                    if len > 4 {
                        parts.push((offset + 4, len - 4, kind.name()));
                    }
                }
                for (offset, len, kind) in parts {
                    if gaps.len() < MAX_GAPS {
                        gaps.push(json!({"offset": offset, "length": len, "kind": kind}));
                    } else {
                        gaps_omitted += 1;
                    }
                }
            }
        }
    }
    writeln!(out, "\n],\n\"gaps\": [")?;
    for (i, g) in gaps.iter().enumerate() {
        if i > 0 {
            out.write_all(b",\n")?;
        }
        serde_json::to_writer(&mut *out, g).map_err(io::Error::other)?;
    }
    writeln!(
        out,
        "\n],\n\"gaps_omitted\": {gaps_omitted},\n\"exit_code\": {status}\n}}"
    )
}

/// Runs the requested views on `image` (`owned`: already read, for `-d`/`-o`). Returns the
/// exit status: 0, 2 when an extraction or `--cat` could not reproduce everything.
pub fn run(
    tool: &Tool,
    image: &Path,
    owned: Option<Vec<u8>>,
    a: &ViewArgs,
    out: &mut dyn Write,
) -> Result<i32, Exit> {
    if a.json && a.stdout_views() > 1 || a.cat.is_some() && a.stdout_views() > 1 {
        tool.error("--json and --cat print to standard output alone; give them separately");
        return Err(Exit(1));
    }
    // --info -v prints the evidence itself.
    // --json prints one document whatever happens: the error's when the run fails.
    let failed = |e: Exit| {
        if a.json {
            tool.json_error(&image.display().to_string(), e.0);
        }
        e
    };
    let loaded = load(
        tool,
        image,
        owned,
        a.endian,
        a.erase_size,
        a.window(),
        a.verbose && !a.info,
    )
    .map_err(failed)?;
    let shown = image.display().to_string();
    let flash = loaded.flash();
    let _trim = loaded.trimmer();
    // --extract and the views salvage what Linux would refuse to mount, with a warning.
    let (fs, refused) = loaded.image.salvage();
    if let Some(f) = &refused {
        tool.warning(&format!(
            "{shown}: Linux would refuse to mount this image: {f}"
        ));
    }
    let trailing = loaded.image.trailing_data();
    if let Some(t) = trailing.filter(|_| a.extract.is_some() || a.list || a.cat.is_some()) {
        tool.warning(&format!(
            "{shown}: {t}: not part of the filesystem (the next partition or a carver's tail?), not read"
        ));
    }
    let mut status = 0;
    let g = loaded.detection.geometry;
    // Only the block views depend on the erase size (--info and --json say the confidence).
    let blockwise = a.blocks || a.summary || a.map.is_some();
    if blockwise && loaded.detection.confidence < 0.5 && a.erase_size.is_none() {
        tool.warning(&format!(
            "{shown}: erase size {} guessed with low confidence ({:.2}); give --erase-size if you know it",
            g.erase_size, loaded.detection.confidence
        ));
    }

    if a.info {
        info_view(&loaded, &fs, a, out).map_err(|e| stdout_failed(tool, &e))?;
    }
    let blocks = (a.blocks || a.map.is_some()).then(|| views::blocks(fs.scan(), flash));
    if let (true, Some(b)) = (a.blocks, &blocks) {
        views::write_blocks(b, out).map_err(|e| stdout_failed(tool, &e))?;
    }
    if a.summary {
        let s = views::summaries(fs.scan(), flash);
        views::write_summaries(&s, out).map_err(|e| stdout_failed(tool, &e))?;
    }
    if let (Some(path), Some(b)) = (&a.map, &blocks) {
        let space = fs.scan().totals();
        write_map(tool, image, &shown, path, (b, &space), &g).map_err(failed)?;
    }
    if a.list {
        let bad = extract::list(&fs, out, &extract::ListOptions { xattrs: a.verbose })
            .map_err(|e| stdout_failed(tool, &e))?;
        if bad > 0 {
            out.flush().map_err(|e| stdout_failed(tool, &e))?;
            tool.warning(&format!("{shown}: {bad} entries cannot be read (marked ?)"));
        }
    }
    if let Some(p) = &a.cat {
        status = status.max(cat(tool, &fs, p.as_bytes(), out)?);
    }
    if let Some(dir) = &a.extract {
        out.flush().map_err(|e| stdout_failed(tool, &e))?;
        if let Some(t) = a.devtable.as_deref().filter(|t| same_file(t, image)) {
            tool.error(&format!("--devtable: {}", is_input_message(t, image)));
            return Err(failed(Exit(1)));
        }
        status = status.max(extract_to(tool, &fs, dir, a).map_err(failed)?);
    }
    // Last, for the exit status of --extract beside it.
    if a.json {
        let kernel = KernelView::new(fs.scan());
        write_json(&loaded, &kernel, &fs, status, out).map_err(|e| stdout_failed(tool, &e))?;
    }
    drop((fs, _trim));
    loaded.image.release_on_pool();
    Ok(status)
}

/// `--info`: with `-v` the detection's evidence first.
fn info_view(loaded: &Loaded, fs: &Fs<'_>, a: &ViewArgs, out: &mut dyn Write) -> io::Result<()> {
    let opts = InfoOptions {
        endian_given: a.endian.is_some(),
        erase_size_given: a.erase_size.is_some(),
        root: a
            .extract
            .as_ref()
            .map_or("DIR".to_string(), |p| p.display().to_string()),
        output: "IMAGE".into(),
    };
    let i = views::info(loaded.file_bytes(), &loaded.detection, fs, &opts);
    if a.verbose {
        for ev in &loaded.detection.evidence {
            writeln!(out, "evidence:         {ev}")?;
        }
    }
    if let Some(o) = loaded.window {
        writeln!(
            out,
            "window:           0x{o:08x}..0x{:08x} of the file (offsets count from 0x{o:08x})",
            o + loaded.file_len as u64
        )?;
    }
    views::write_info(&i, out)?;
    if let Some(t) = loaded.image.trailing_data() {
        writeln!(
            out,
            "  note: {t}: not part of the filesystem; --size=0x{:x} leaves it out",
            t.offset
        )?;
    }
    Ok(())
}

/// `--map FILE`: the SVG map of the erase blocks `b` (with the scan's space counters), written
/// to a file that is not the image.
fn write_map(
    tool: &Tool,
    image: &Path,
    shown: &str,
    path: &Path,
    (b, space): (&[views::BlockView], &scan::SpaceTotals),
    g: &scan::Geometry,
) -> Result<(), Exit> {
    let title = format!(
        "{} — {} endian, {} erase blocks of {} bytes",
        Path::new(shown)
            .file_name()
            .map_or(shown.to_string(), |n| n.to_string_lossy().into_owned()),
        g.endian.name(),
        b.len(),
        g.erase_size
    );
    let svg = views::svg_map(b, space, &title);
    let mut o = match super::Output::file(path.to_path_buf()) {
        Ok(o) => o,
        Err(e) => {
            tool.error(&format!("create {}: {}", path.display(), io_text(&e)));
            return Err(Exit(1));
        }
    };
    if o.is_same_file(image) {
        o.abandon();
        tool.error(&format!("--map: {}", is_input_message(path, image)));
        return Err(Exit(1));
    }
    let w = o.writer().write_all(svg.as_bytes());
    if let Err(e) = super::input_unchanged(tool, &shown) {
        o.abandon();
        return Err(e);
    }
    if let Err(e) = w.and_then(|()| o.commit()) {
        tool.error(&format!("write {}: {}", path.display(), io_text(&e)));
        return Err(Exit(1));
    }
    Ok(())
}

/// `--cat PATH` / `jffs2reader -f PATH`.
pub fn cat(tool: &Tool, fs: &Fs<'_>, path: &[u8], out: &mut dyn Write) -> Result<i32, Exit> {
    let inode = match extract::lookup(fs, path, true) {
        Ok(i) => i,
        Err(e) => {
            tool.error(&e.to_string());
            return Err(Exit(1));
        }
    };
    if inode.kind != InodeKind::File {
        tool.error(&format!(
            "{}: Not a regular file",
            extract::escape(path, false)
        ));
        return Err(Exit(1));
    }
    let bad = extract::cat(fs, &inode, out, extract::StreamOptions::default())
        .map_err(|e| stdout_failed(tool, &e))?;
    out.flush().map_err(|e| stdout_failed(tool, &e))?;
    Ok(match bad {
        Some(u) => {
            tool.warning(&format!(
                "{}: {} bytes from offset {} cannot be read ({}); written as zeros",
                extract::escape(path, false),
                u.bytes,
                u.offset,
                u.error
            ));
            2
        }
        None => 0,
    })
}

/// `--extract DIR`: returns 0, or 2 when something was refused.
fn extract_to(tool: &Tool, fs: &Fs<'_>, dir: &Path, a: &ViewArgs) -> Result<i32, Exit> {
    let plan = match Plan::build(fs, !a.no_xattrs) {
        Ok(p) => p,
        Err(e) => {
            tool.error(&format!("the root directory cannot be read: {e}"));
            return Err(Exit(1));
        }
    };
    let mut opts = ExtractOptions {
        xattrs: !a.no_xattrs,
        allow_non_empty: a.force,
        devtable: a.devtable.clone(),
        ..ExtractOptions::default()
    };
    if a.no_owners {
        opts.owners = false;
    }
    let r = match extract::extract(fs, &plan, dir, &opts) {
        Ok(r) => r,
        Err(extract::ExtractError::NotEmpty { path }) => {
            tool.error(&format!(
                "{}: the destination is not empty (--force merges into it, never replacing anything)",
                path.display()
            ));
            return Err(Exit(1));
        }
        // DIR.devtable exists: a name the user did not give replaces nothing.
        Err(extract::ExtractError::Io {
            what: "write device table",
            path,
            source,
        }) if source.kind() == io::ErrorKind::AlreadyExists && a.devtable.is_none() => {
            tool.error(&format!(
                "{}: exists; the table of the device nodes not created was not written over it (name its file with --devtable=FILE)",
                path.display()
            ));
            return Err(Exit(1));
        }
        // A write error (a full disk) names the file relative to DIR: name DIR too.
        Err(e @ extract::ExtractError::Write { .. }) => {
            tool.error(&format!("{}: {e}", dir.display()));
            return Err(Exit(1));
        }
        Err(e) => {
            tool.error(&e.to_string());
            return Err(Exit(1));
        }
    };
    report_extraction(tool, &r, dir, a.verbose);
    Ok(if r.refused.is_empty() { 0 } else { 2 })
}

/// What an extraction could not do (refusals, notices, warnings) and, with `-v` or
/// refusals, what it did; on stderr.
fn report_extraction(tool: &Tool, r: &extract::ExtractReport, dir: &Path, verbose: bool) {
    for refusal in &r.refused {
        eprintln!("{}: refused: {refusal}", tool.name);
    }
    for s in &r.xattrs_skipped {
        eprintln!(
            "{}: notice: {} {}.* extended attributes not set ({}), first on {}",
            tool.name,
            s.count,
            s.namespace,
            s.reason,
            extract::escape(&s.first_path, false)
        );
    }
    if r.owners_not_set > 0 {
        eprintln!(
            "{}: notice: owners of {} entries not set (not running as root)",
            tool.name, r.owners_not_set
        );
    }
    for m in &r.metadata_errors {
        eprintln!("{}: warning: {m}", tool.name);
    }
    if r.metadata_errors_omitted > 0 {
        eprintln!(
            "{}: warning: {} more metadata errors",
            tool.name, r.metadata_errors_omitted
        );
    }
    if let Some((p, n)) = &r.devtable {
        eprintln!(
            "{}: notice: {n} device nodes could not be created (not permitted); they are listed in {} (mkfs.jffs2 -D syntax)",
            tool.name,
            p.display()
        );
    }
    if verbose || !r.refused.is_empty() {
        eprintln!(
            "{}: extracted {}{}, {} ({} bytes written, {} left as holes), {}, {}, {}, {}, {} into {}; {} refused",
            tool.name,
            crate::cli::count(r.dirs, "directory", "directories"),
            if r.dirs_merged > 0 {
                format!(" (and {} existing ones merged into, left as they were)", r.dirs_merged)
            } else {
                String::new()
            },
            crate::cli::count(r.files, "file", "files"),
            r.data_bytes,
            r.hole_bytes,
            crate::cli::count(r.hard_links, "hard link", "hard links"),
            crate::cli::count(r.symlinks, "symbolic link", "symbolic links"),
            crate::cli::count(r.devices, "device", "devices"),
            crate::cli::count(r.fifos, "FIFO", "FIFOs"),
            crate::cli::count(r.sockets, "socket", "sockets"),
            dir.display(),
            r.refused.len()
        );
    }
}

/// `jffs2reader IMAGE [-d DIR | -f FILE] [-r] [-t]` (`docs/spec/mtd-utils-spec.md` §7), with correct
/// data: see `reader_help`.
pub fn reader_main(tool: &Tool, args: &[OsString]) -> i32 {
    use super::super::flags::{self, dump::READER, ALL};
    use super::super::getopt::Parsed;
    let mut dir: Option<OsString> = None;
    let mut file: Option<OsString> = None;
    let (mut recursive, mut time) = (false, false);
    let mut operands = Vec::new();
    for p in flags::getopt(args, READER, ALL) {
        match p {
            Parsed::Opt { id, arg } => match u8::try_from(id).unwrap_or(0) {
                b'd' => dir = arg,
                b'f' => file = arg,
                b'r' => recursive = true,
                b't' => time = true,
                b'V' => {
                    let v = tool.version_line();
                    return match tool.print(&v) {
                        Ok(()) => 0,
                        Err(_) => 1,
                    };
                }
                b'h' => {
                    eprint!("{}", reader_help(&tool.name));
                    return 0;
                }
                _ => {}
            },
            Parsed::Operand(o) => operands.push(o),
            Parsed::Error(msg) => {
                eprintln!("{}: {msg}", tool.name);
                eprint!("{}", reader_help(&tool.name));
                return 1;
            }
        }
    }
    let Some(image) = operands.first() else {
        eprint!("{}", reader_help(&tool.name));
        return 1;
    };
    let run = || -> Result<i32, Exit> {
        let loaded = load(tool, Path::new(image), None, None, None, None, false)?;
        let _trim = loaded.trimmer();
        // jffs2reader reads what it can of an image Linux would refuse, silently.
        let (fs, _) = loaded.image.salvage();
        let stdout = io::stdout();
        let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let list = |path: &[u8], recursive: bool, out: &mut dyn Write| -> Result<(), Exit> {
            let opts = extract::ReaderListOptions {
                recursive,
                time,
                now,
            };
            match extract::reader_list(&fs, path, &opts, out) {
                Ok(()) => Ok(()),
                Err(extract::ReaderListError::Io(e)) => Err(stdout_failed(tool, &e)),
                Err(extract::ReaderListError::Lookup(e)) => {
                    let _ = out.flush();
                    tool.error(&format!(
                        "{}: No such file or directory",
                        match &e {
                            extract::LookupError::NotFound(p)
                            | extract::LookupError::NotADirectory(p)
                            | extract::LookupError::Loop(p)
                            | extract::LookupError::Unreadable(p, _) => extract::escape(p, false),
                        }
                    ));
                    Err(Exit(1))
                }
            }
        };
        let mut status = 0;
        if let Some(d) = &dir {
            list(d.as_bytes(), recursive, &mut out)?;
        }
        if let Some(f) = &file {
            out.flush().map_err(|e| stdout_failed(tool, &e))?;
            status = cat(tool, &fs, f.as_bytes(), &mut out)?;
        }
        if dir.is_none() && file.is_none() {
            list(b"/", true, &mut out)?;
        }
        out.flush().map_err(|e| stdout_failed(tool, &e))?;
        super::input_unchanged(tool, &Path::new(image).display())?;
        Ok(status)
    };
    match run() {
        Ok(c) | Err(Exit(c)) => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_of_a_node() {
        let mut img = Vec::new();
        let d = jffs2::format::DirentNode {
            pino: 1,
            version: 2,
            ino: 3,
            mctime: 4,
            nsize: 0,
            dtype: 8,
            node_crc: 0,
            name_crc: 0,
        };
        d.encode(Endian::Little, b"n\xff", &mut img);
        let items: Vec<Item> = views::walk(&img, Endian::Little).collect();
        let Item::Node(n) = &items[0] else {
            panic!("no node: {items:?}");
        };
        let v = node_json(n, None, 0);
        assert_eq!(v["type"], "dirent");
        assert_eq!(v["fields"]["ino"], 3);
        assert_eq!(v["fields"]["name_hex"], "6eff");
        assert_eq!(v["node_crc"]["ok"], true);
        assert_eq!(v["name_crc"]["ok"], true);
    }
}
