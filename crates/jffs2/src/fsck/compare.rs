//! Factory verification: the image's tree, as Linux shows it, against a host directory read
//! the way `mkfs.jffs2` reads it ([`crate::source::scan_host`]: through libc, fakeroot-safe,
//! with mkfs's `-U`/`-P`/`-q`/`-f` squashing).
//!
//! Compared for every path: presence, type, permission bits, owner, group, size, contents (byte
//! by byte, files in parallel), symlink targets, device numbers, modification time, hard-link
//! groups and, when asked or when the image has any, extended attributes. The root directory's
//! attributes are skipped: `mkfs.jffs2` never writes an inode for it, so Linux shows a
//! synthetic 0755 root owned by 0:0 with time 0. Directory sizes and link counts are not
//! compared (the host's depend on its filesystem and on links outside the tree).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::io::Read;
use std::path::PathBuf;

use rayon::prelude::*;

use crate::format::InodeNode;
use crate::fs::{Fs, InodeKind, Tree, TreeEntry};
use crate::source::{self, SourceEntry, SourceError, XattrSelect};

/// How the image was made (so that what `mkfs.jffs2` changed is expected).
#[derive(Debug, Clone, Default)]
pub struct CompareOptions {
    /// The host directory (what `-r` got).
    pub dir: PathBuf,
    /// `-U` (or `-q`): every owner 0:0.
    pub squash_uids: bool,
    /// `-P` (or `-q`): group/other write and setuid/setgid cleared (not on symlinks).
    pub squash_perms: bool,
    /// `-f`: every timestamp 0.
    pub faketime: bool,
    /// Which xattrs the image was made with (`--with-xattr` …); `None`: all of them when the
    /// image has any, none otherwise.
    pub xattr: Option<XattrSelect>,
    /// Do not compare modification times.
    pub ignore_mtime: bool,
}

/// One difference between the image and the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Difference {
    /// Path relative to the root (`.` for the root).
    pub path: String,
    /// What differs: `missing`, `unexpected`, `type`, `mode`, `uid`, `gid`, `size`,
    /// `content`, `target`, `rdev`, `mtime`, `xattr`, `hard-link`.
    pub what: &'static str,
    /// The image's side.
    pub image: String,
    /// The directory's side.
    pub dir: String,
    /// `content`: the offset of the first differing byte (`image` and `dir` hold the two
    /// bytes there).
    pub offset: Option<u64>,
}

impl fmt::Display for Difference {
    /// `path: what: image X, directory Y`, names escaped (they come from the image and the
    /// host tree).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let e = |s: &'_ str| crate::text::escape_if_needed(s.as_bytes()).into_owned();
        if let Some(o) = self.offset {
            return write!(
                f,
                "{}: {}: image differs from byte {o} (image {}, directory {})",
                e(&self.path),
                self.what,
                self.image,
                self.dir
            );
        }
        write!(
            f,
            "{}: {}: image {}, directory {}",
            e(&self.path),
            self.what,
            e(&self.image),
            e(&self.dir)
        )
    }
}

/// Names and paths as JSON keeps them (the text output escapes them when shown).
fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn kind_of_mode(mode: u32) -> InodeKind {
    InodeKind::of_mode(mode)
}

fn prefix_name(prefix: u8) -> &'static str {
    match prefix {
        1 => "user.",
        2 => "security.",
        3 => "system.posix_acl_access",
        4 => "system.posix_acl_default",
        5 => "trusted.",
        _ => "",
    }
}

fn class_of(name: &[u8]) -> Option<XattrSelect> {
    if name.starts_with(b"user.") {
        Some(XattrSelect::USER)
    } else if name.starts_with(b"security.") {
        Some(XattrSelect::SECURITY)
    } else if name.starts_with(b"system.posix_acl_") {
        Some(XattrSelect::POSIX_ACL)
    } else if name.starts_with(b"trusted.") {
        Some(XattrSelect::TRUSTED)
    } else {
        None
    }
}

fn hex(v: &[u8]) -> String {
    if v.len() > 32 {
        let h: String = v[..32].iter().map(|b| format!("{b:02x}")).collect();
        format!("{h}… ({} bytes)", v.len())
    } else {
        v.iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// Compares the image's tree with `opts.dir`. Errors only when the directory cannot be read.
pub fn compare(
    fs: &Fs<'_>,
    tree: &Tree,
    opts: &CompareOptions,
) -> Result<Vec<Difference>, SourceError> {
    let image_has_xattrs = tree.entries.iter().any(|e| !e.xattrs.is_empty());
    let select = opts.xattr.unwrap_or(if image_has_xattrs {
        XattrSelect::ALL
    } else {
        XattrSelect::NONE
    });
    let sopts = source::SourceOptions {
        squash_uids: opts.squash_uids,
        squash_perms: opts.squash_perms,
        faketime: opts.faketime,
        xattr: select,
        verbose: false,
        now: 0,
    };
    let (host, _warnings) = source::scan_host(&opts.dir, &sopts)?;
    let hosts = host_paths(&host.entries);
    let mut images: BTreeMap<Vec<u8>, &TreeEntry> = BTreeMap::new();
    for e in &tree.entries {
        images.entry(e.path.clone()).or_insert(e);
    }

    let mut diffs: Vec<Difference> = Vec::new();
    let both = pair_paths(&images, &hosts, &mut diffs);

    let per: Vec<Vec<Difference>> = both
        .par_iter()
        .map(|(e, h)| compare_entry(fs, e, h, opts, select))
        .collect();
    for d in per {
        diffs.extend(d);
    }

    diffs.extend(hard_links(&both));

    diffs.sort_by(|a, b| (a.path.as_bytes(), a.what).cmp(&(b.path.as_bytes(), b.what)));
    Ok(diffs)
}

/// The host entries by path relative to the root (`.` for the root), the first of each.
fn host_paths(entries: &[SourceEntry]) -> BTreeMap<Vec<u8>, &SourceEntry> {
    let mut hosts: BTreeMap<Vec<u8>, &SourceEntry> = BTreeMap::new();
    for e in entries {
        let rel = match e.full_name.strip_prefix(b"/") {
            Some(r) if !r.is_empty() => r.to_vec(),
            _ => b".".to_vec(),
        };
        hosts.entry(rel).or_insert(e);
    }
    hosts
}

/// Pairs the paths present on both sides; those on one side only are differences.
fn pair_paths<'t, 'h>(
    images: &BTreeMap<Vec<u8>, &'t TreeEntry>,
    hosts: &BTreeMap<Vec<u8>, &'h SourceEntry>,
    diffs: &mut Vec<Difference>,
) -> Vec<(&'t TreeEntry, &'h SourceEntry)> {
    let mut both: Vec<(&TreeEntry, &SourceEntry)> = Vec::new();
    for (p, e) in images {
        match hosts.get(p) {
            Some(h) => both.push((e, h)),
            None => diffs.push(Difference {
                path: lossy(p),
                what: "unexpected",
                image: e.kind.listing_name().to_string(),
                dir: "nothing".to_string(),
                offset: None,
            }),
        }
    }
    for (p, h) in hosts {
        if !images.contains_key(p) {
            diffs.push(Difference {
                path: lossy(p),
                what: "missing",
                image: "nothing".to_string(),
                dir: kind_of_mode(h.mode).listing_name().to_string(),
                offset: None,
            });
        }
    }
    both
}

/// Hard-link groups: paths sharing an inode in the image must share one on the host.
fn hard_links(both: &[(&TreeEntry, &SourceEntry)]) -> Vec<Difference> {
    let mut img_groups: HashMap<u32, Vec<&[u8]>> = HashMap::new();
    for (e, _) in both {
        if e.kind != InodeKind::Dir {
            img_groups.entry(e.ino).or_default().push(&e.path);
        }
    }
    let mut host_groups: HashMap<(u64, u64), Vec<&[u8]>> = HashMap::new();
    for (e, h) in both {
        if e.kind != InodeKind::Dir && h.ino != 0 && h.nlink > 1 {
            host_groups.entry((h.dev, h.ino)).or_default().push(&e.path);
        }
    }
    let mut partners: BTreeMap<Vec<u8>, (Vec<String>, Vec<String>)> = BTreeMap::new();
    for (e, h) in both {
        if e.kind == InodeKind::Dir {
            continue;
        }
        let mut a: Vec<String> = img_groups
            .get(&e.ino)
            .map(|g| g.iter().map(|p| lossy(p)).collect())
            .unwrap_or_default();
        let mut b: Vec<String> = if h.ino != 0 && h.nlink > 1 {
            host_groups
                .get(&(h.dev, h.ino))
                .map(|g| g.iter().map(|p| lossy(p)).collect())
                .unwrap_or_default()
        } else {
            vec![lossy(&e.path)]
        };
        a.sort();
        b.sort();
        if a != b {
            partners.insert(e.path.clone(), (a, b));
        }
    }
    partners
        .into_iter()
        .map(|(p, (a, b))| Difference {
            path: lossy(&p),
            what: "hard-link",
            image: format!("[{}]", a.join(", ")),
            dir: format!("[{}]", b.join(", ")),
            offset: None,
        })
        .collect()
}

/// Compares one path present on both sides.
fn compare_entry(
    fs: &Fs<'_>,
    e: &TreeEntry,
    h: &SourceEntry,
    opts: &CompareOptions,
    select: XattrSelect,
) -> Vec<Difference> {
    let mut d = EntryDiffs {
        path: lossy(&e.path),
        diffs: Vec::new(),
    };
    let hkind = kind_of_mode(h.mode);
    if e.kind != hkind {
        d.diff(
            "type",
            e.kind.listing_name().to_string(),
            hkind.listing_name().to_string(),
        );
        return d.diffs;
    }
    if e.path == b"." {
        // mkfs.jffs2 never writes the root's inode: its attributes are Linux's defaults.
        return d.diffs;
    }
    d.attributes(fs, e, h, opts);
    d.by_kind(fs, e, h);
    if !select.is_empty() {
        d.xattrs(e, h, select);
    }
    d.diffs
}

/// The differences found at one path.
struct EntryDiffs {
    path: String,
    diffs: Vec<Difference>,
}

impl EntryDiffs {
    /// Records one difference.
    fn diff(&mut self, what: &'static str, image: String, dir: String) {
        self.diffs.push(Difference {
            path: self.path.clone(),
            what,
            image,
            dir,
            offset: None,
        })
    }

    /// The attributes every type has: mode, owner, group, size (files and symlinks), mtime.
    fn attributes(&mut self, fs: &Fs<'_>, e: &TreeEntry, h: &SourceEntry, opts: &CompareOptions) {
        if e.mode & 0o7777 != h.mode & 0o7777 {
            self.diff(
                "mode",
                format!("{:04o}", e.mode & 0o7777),
                format!("{:04o}", h.mode & 0o7777),
            );
        }
        if e.uid != h.uid {
            self.diff("uid", e.uid.to_string(), h.uid.to_string());
        }
        if e.gid != h.gid {
            self.diff("gid", e.gid.to_string(), h.gid.to_string());
        }
        if matches!(e.kind, InodeKind::File | InodeKind::Symlink) && e.size != h.size {
            self.diff("size", e.size.to_string(), h.size.to_string());
        }
        if !opts.ignore_mtime && e.mtime != h.mtime {
            // A directory shows its newest entry's time when that entry is newer than its inode
            // (mkfs.jffs2 stores each child's mtime in its entry): the time mkfs stored in the
            // directory's inode counts as well.
            let stored = (e.kind == InodeKind::Dir)
                .then(|| stored_mtime(fs, e.ino))
                .flatten();
            if stored != Some(h.mtime) {
                self.diff("mtime", time(e.mtime), time(h.mtime));
            }
        }
    }

    /// What only some types have: symlink targets, device numbers, file contents.
    fn by_kind(&mut self, fs: &Fs<'_>, e: &TreeEntry, h: &SourceEntry) {
        match e.kind {
            InodeKind::Symlink => {
                let t = e.target.clone().unwrap_or_default();
                let ht = h.link_target.clone().unwrap_or_default();
                if t != ht {
                    self.diff("target", lossy(&t), lossy(&ht));
                }
            }
            InodeKind::Char | InodeKind::Block => {
                let r = e.rdev.unwrap_or((0, 0));
                if r != (h.rdev_major, h.rdev_minor) {
                    self.diff(
                        "rdev",
                        format!("{}:{}", r.0, r.1),
                        format!("{}:{}", h.rdev_major, h.rdev_minor),
                    );
                }
            }
            InodeKind::File if e.size == h.size => {
                if let Some((image, dir, offset)) = content_difference(fs, e, h) {
                    self.diff("content", image, dir);
                    if let Some(d) = self.diffs.last_mut() {
                        d.offset = offset;
                    }
                }
            }
            _ => {}
        }
    }

    /// The extended attributes of the selected classes, all of them as one difference.
    fn xattrs(&mut self, e: &TreeEntry, h: &SourceEntry, select: XattrSelect) {
        let img: BTreeMap<Vec<u8>, String> = e
            .xattrs
            .iter()
            .filter(|x| class_of(&x.name).is_some_and(|c| select.contains(c)))
            .map(|x| {
                (
                    x.name.clone(),
                    match &x.value {
                        Ok(v) => xattr_value(v),
                        Err(errno) => format!("({errno})"),
                    },
                )
            })
            .collect();
        let host: BTreeMap<Vec<u8>, String> = h
            .xattrs
            .iter()
            .map(|x| {
                let mut n = prefix_name(x.prefix).as_bytes().to_vec();
                n.extend_from_slice(&x.name);
                (n, xattr_value(&x.value))
            })
            .collect();
        if img != host {
            let show = |m: &BTreeMap<Vec<u8>, String>| {
                let v: Vec<String> = m.iter().map(|(k, v)| format!("{}={v}", lossy(k))).collect();
                format!("{{{}}}", v.join(", "))
            };
            self.diff("xattr", show(&img), show(&host));
        }
    }
}

/// The mtime stored in a directory's latest inode node (Linux may show the newest entry's
/// time instead; mkfs stores the host directory's).
fn stored_mtime(fs: &Fs<'_>, ino: u32) -> Option<u32> {
    let inode = fs.read_inode(ino).ok()?;
    let r = fs.scan().refs.get(inode.latest?)?;
    let b = fs.image().get(r.offset as usize..)?;
    InodeNode::decode(b, fs.scan().geometry.endian, u64::from(r.offset))
        .ok()
        .map(|n| n.mtime)
}

/// The first differing byte of a regular file, streamed from both sides: the image's and
/// the directory's side, and the offset with the two bytes there (`None` when a side cannot
/// be read).
fn content_difference(
    fs: &Fs<'_>,
    e: &TreeEntry,
    h: &SourceEntry,
) -> Option<(String, String, Option<u64>)> {
    let inode = match fs.read_inode(e.ino) {
        Ok(i) => i,
        Err(err) => return Some((format!("unreadable ({err})"), "readable".to_string(), None)),
    };
    let mut f = match std::fs::File::open(&h.host_path) {
        Ok(f) => f,
        Err(err) => {
            return Some((
                "readable".to_string(),
                format!("unreadable ({}: {err})", crate::text::path(&h.host_path)),
                None,
            ))
        }
    };
    let mut pos: u64 = 0;
    let mut first: Option<(u64, u8, u8)> = None;
    let mut buf: Vec<u8> = Vec::new();
    let mut host_err: Option<String> = None;
    let r = fs.read_with(&inode, 0, inode.size, |chunk| {
        if first.is_some() || host_err.is_some() {
            return;
        }
        buf.resize(chunk.len(), 0);
        if let Err(err) = f.read_exact(&mut buf) {
            host_err = Some(err.to_string());
            return;
        }
        if buf != chunk {
            let i = buf.iter().zip(chunk).position(|(a, b)| a != b).unwrap_or(0);
            first = Some((pos + i as u64, chunk[i], buf[i]));
        }
        pos += chunk.len() as u64;
    });
    if let Err(err) = r {
        return Some((format!("unreadable ({err})"), "readable".to_string(), None));
    }
    if let Some(err) = host_err {
        return Some(("readable".to_string(), format!("short read ({err})"), None));
    }
    first.map(|(o, a, b)| (format!("{a:#04x}"), format!("{b:#04x}"), Some(o)))
}

/// A time as its seconds and its date: `1700000000 (2023-11-14 22:13:20 UTC)`.
fn time(t: u32) -> String {
    format!("{t} ({} UTC)", crate::text::format_time(t))
}

/// An xattr value: quoted text when it is printable UTF-8 (a trailing NUL, as security
/// labels have, shown as `\0`), hex otherwise.
fn xattr_value(v: &[u8]) -> String {
    let (text, nul) = match v.split_last() {
        Some((0, rest)) => (rest, "\\0"),
        _ => (v, ""),
    };
    match std::str::from_utf8(text) {
        Ok(t) if !t.is_empty() && !t.chars().any(char::is_control) => format!("\"{t}{nul}\""),
        _ => hex(v),
    }
}

/// What the differences suggest about how the image was made: when every one of them is
/// a time of 0 in the image (`mkfs.jffs2 -f`), an owner 0 (`-U`) or permissions `-P` cleared,
/// the `--compare` options that are missing, as one sentence.
pub fn hint(diffs: &[Difference], opts: &CompareOptions) -> Option<String> {
    let (mut times, mut owners, mut perms) = (false, false, false);
    for d in diffs {
        match d.what {
            "mtime" if d.image.split(' ').next() == Some("0") => times = true,
            "uid" | "gid" if d.image == "0" => owners = true,
            "mode" if squashed_mode(&d.image, &d.dir) => perms = true,
            _ => return None,
        }
    }
    let mut flags: Vec<&str> = Vec::new();
    let mut made: Vec<&str> = Vec::new();
    if times && !opts.faketime {
        flags.push("--faketime");
        made.push("-f");
    }
    if owners && perms && !opts.squash_uids && !opts.squash_perms {
        flags.push("--squash");
        made.push("-q");
    } else {
        if owners && !opts.squash_uids {
            flags.push("--squash-uids");
            made.push("-U");
        }
        if perms && !opts.squash_perms {
            flags.push("--squash-perms");
            made.push("-P");
        }
    }
    (!flags.is_empty()).then(|| {
        format!(
            "every difference is what mkfs.jffs2 {} does: if the image was made so, add {}",
            made.join(" "),
            flags.join(" ")
        )
    })
}

/// Whether the image's mode is the directory's with mkfs.jffs2 `-P`'s bits cleared (group
/// and other write, setuid, setgid).
fn squashed_mode(image: &str, dir: &str) -> bool {
    let (Ok(i), Ok(d)) = (u32::from_str_radix(image, 8), u32::from_str_radix(dir, 8)) else {
        return false;
    };
    i == d & !0o6022
}
