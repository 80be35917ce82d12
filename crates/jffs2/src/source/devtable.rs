//! The device table (`-D`, `interpret_table_entry` / `parse_device_table`,
//! `docs/spec/mtd-utils-spec.md` §3.4, §8 B-18; `docs/spec/ecosystem.md` §3).

use std::path::{Path, PathBuf};

use super::scan::path_bytes;
use super::sys::{self, Stat};
use super::xattr::read_xattrs;
use super::{
    EntryId, SourceEntry, SourceError, SourceOptions, SourceTree, SourceWarning, SourceWarningKind,
};

/// Largest number of entries a whole device table may create (ranges expanded), and so one
/// `c`/`b` range line too. mkfs has no limit (a huge or negative count makes it allocate
/// until it dies; three lines of 4 million entries need 3 GB); we fail with a located error
/// instead. A million entries is far beyond any real table (a few hundred), and already costs
/// about 300 MB of metadata and 100 MB of image (an inode and a dirent node each).
pub const MAX_TABLE_ENTRIES: u64 = 1 << 20;

/// Largest number of entries one `c`/`b` range line may create (the table's own bound).
pub const MAX_RANGE_COUNT: u64 = MAX_TABLE_ENTRIES;

/// Largest device table file read (real ones are a few KiB; `/dev/zero` never ends).
pub const MAX_TABLE_BYTES: u64 = 64 << 20;

/// Reads a device table file and applies mkfs' sanity check: a file shorter than 10 bytes is
/// rejected with "%s: not a proper device table file" (§3.1 `-D`). Unlike mkfs (which checks
/// `st_size`), the length of the content is checked, so pipes work.
pub fn read_device_table(path: &Path) -> Result<Vec<u8>, SourceError> {
    let data = std::fs::File::open(path)
        .and_then(|f| crate::input::read_limited(&f, MAX_TABLE_BYTES, "not a device table"))
        .map_err(|source| SourceError::DeviceTableIo {
            path: path.to_path_buf(),
            source,
        })?;
    if data.len() < 10 {
        return Err(SourceError::DeviceTableTooSmall {
            path: path.to_path_buf(),
        });
    }
    Ok(data)
}

/// One parsed table line, with mkfs' defaults for the fields that did not convert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Line {
    /// Number of fields `sscanf` converted.
    pub converted: usize,
    pub name: Vec<u8>,
    pub typ: u8,
    pub mode: u64,
    pub uid: u64,
    pub gid: u64,
    pub major: u64,
    pub minor: u64,
    pub start: u64,
    pub inc: u64,
    pub count: u64,
    /// The word where conversion stopped (empty when it did not, or at the end of the line).
    pub stop: Vec<u8>,
}

/// C-locale `isspace`.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// A byte cursor that emulates glibc `sscanf` directives.
struct Scanner<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Scanner<'_> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && is_c_space(self.s[self.pos]) {
            self.pos += 1;
        }
    }

    /// `%ms`: skip white space, take the following non-space run.
    fn string(&mut self) -> Option<Vec<u8>> {
        self.skip_ws();
        let start = self.pos;
        while self.pos < self.s.len() && !is_c_space(self.s[self.pos]) {
            self.pos += 1;
        }
        (self.pos > start).then(|| self.s[start..self.pos].to_vec())
    }

    /// The next white-space-delimited word (without moving).
    fn peek_word(&self) -> Vec<u8> {
        let rest = self.s.get(self.pos..).unwrap_or_default();
        rest.iter()
            .copied()
            .skip_while(|&b| is_c_space(b))
            .take_while(|&b| !is_c_space(b))
            .collect()
    }

    /// `" %c"`: the blank in the format skips white space, then one byte.
    fn char(&mut self) -> Option<u8> {
        self.skip_ws();
        let c = *self.s.get(self.pos)?;
        self.pos += 1;
        Some(c)
    }

    /// `%lo` / `%lu`: glibc reads an optional sign and digits of the base and converts them
    /// with `strtoul`: a '-' negates modulo 2^64, overflow saturates to ULONG_MAX, and a
    /// sign without digits (the `-` placeholder) is a matching failure.
    fn ulong(&mut self, radix: u32) -> Option<u64> {
        self.skip_ws();
        let mut p = self.pos;
        let negative = match self.s.get(p) {
            Some(b'-') => {
                p += 1;
                true
            }
            Some(b'+') => {
                p += 1;
                false
            }
            _ => false,
        };
        let digits_start = p;
        let mut value: u64 = 0;
        let mut overflow = false;
        while let Some(d) = self.s.get(p).and_then(|&b| (b as char).to_digit(radix)) {
            match value
                .checked_mul(radix as u64)
                .and_then(|v| v.checked_add(d as u64))
            {
                Some(v) => value = v,
                None => overflow = true,
            }
            p += 1;
        }
        if p == digits_start {
            return None;
        }
        self.pos = p;
        Some(if overflow {
            u64::MAX
        } else if negative {
            value.wrapping_neg()
        } else {
            value
        })
    }
}

/// Parses one (already trimmed) line like
/// `sscanf(line, "%ms %c %lo %lu %lu %lu %lu %lu %lu %lu", ...)` (§3.4): conversion stops
/// at the first field that fails and every later field keeps its default
/// (mode 0755, uid 0, gid 0, major 0, minor 0, start 0, inc 1, count 0).
pub(crate) fn parse_line(line: &[u8]) -> Line {
    let mut l = Line {
        converted: 0,
        name: Vec::new(),
        typ: 0,
        mode: 0o755,
        uid: 0,
        gid: 0,
        major: 0,
        minor: 0,
        start: 0,
        inc: 1,
        count: 0,
        stop: Vec::new(),
    };
    let mut sc = Scanner { s: line, pos: 0 };
    let Some(name) = sc.string() else { return l };
    l.name = name;
    l.converted = 1;
    let Some(t) = sc.char() else { return l };
    l.typ = t;
    l.converted = 2;
    let fields: [(&mut u64, u32); 8] = [
        (&mut l.mode, 8),
        (&mut l.uid, 10),
        (&mut l.gid, 10),
        (&mut l.major, 10),
        (&mut l.minor, 10),
        (&mut l.start, 10),
        (&mut l.inc, 10),
        (&mut l.count, 10),
    ];
    let mut converted = 2;
    let mut stop = Vec::new();
    for (slot, radix) in fields {
        match sc.ulong(radix) {
            Some(v) => {
                *slot = v;
                converted += 1;
            }
            None => {
                stop = sc.peek_word();
                break;
            }
        }
    }
    l.converted = converted;
    l.stop = stop;
    l
}

/// Splits the table into lines the way `parse_device_table` sees them (§3.4): `getline`
/// lines, cut at the first NUL (the C code uses `strlen`), trailing `isspace` trimmed,
/// leading `" \n\r\t\v"` trimmed (note: no '\f' — a quirk kept as is). Yields
/// (1-based line number, trimmed line) for lines mkfs interprets (non-empty, not '#').
fn table_lines(table: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    table
        .split(|&b| b == b'\n')
        .enumerate()
        .filter_map(|(i, raw)| {
            let mut line = match raw.iter().position(|&b| b == 0) {
                Some(n) => &raw[..n],
                None => raw,
            };
            while let Some((&last, rest)) = line.split_last() {
                if !is_c_space(last) {
                    break;
                }
                line = rest;
            }
            let lead = line
                .iter()
                .take_while(|&&b| matches!(b, b' ' | b'\n' | b'\r' | b'\t' | b'\x0b'))
                .count();
            let line = &line[lead..];
            (!line.is_empty() && line[0] != b'#').then_some((i + 1, line))
        })
}

/// glibc `dirname()` (libgen, POSIX): strips the last component and trailing slashes;
/// "/" → "/", "//x" → "//", "x" → ".".
pub(crate) fn dirname(path: &[u8]) -> Vec<u8> {
    let Some(mut last) = path.iter().rposition(|&b| b == b'/') else {
        return b".".to_vec();
    };
    if last != 0 && last + 1 == path.len() {
        // Trailing slash(es): skip them and look for the slash before.
        let mut run = last;
        while run > 0 && path[run - 1] == b'/' {
            run -= 1;
        }
        if run != 0 {
            match path[..run].iter().rposition(|&b| b == b'/') {
                Some(p) => last = p,
                None => return b".".to_vec(),
            }
        }
    }
    let mut run = last;
    while run > 0 && path[run - 1] == b'/' {
        run -= 1;
    }
    let end = if run == 0 {
        // Only slashes before: "/" — or "//" when there are exactly two leading slashes.
        if last == 1 {
            2
        } else {
            1
        }
    } else {
        run
    };
    path[..end].to_vec()
}

/// GNU `basename()` (mkfs `#undef`s the XPG one): everything after the last '/'.
pub(crate) fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// mkfs' `find_filesystem_entry(dir, fullname)` (§3.4): if `dir` itself has that name it is
/// returned; otherwise its children are scanned in order: a directory child whose full name
/// is a prefix of `fullname` followed by '/' is descended into (and the search ends there,
/// NULL if it has no children); any other child must match exactly. Types are judged by the
/// current mode, so entries re-typed by the table behave as in mkfs.
pub(crate) fn find_filesystem_entry(
    tree: &SourceTree,
    dir: EntryId,
    fullname: &[u8],
) -> Option<EntryId> {
    let mut dir = dir;
    // Iterative form of the C recursion.
    loop {
        let d = tree.entries.get(dir)?;
        // (mkfs only ever calls this with a directory; a non-directory would make it scan
        // its siblings, which cannot happen here.)
        if d.full_name == fullname {
            return Some(dir);
        }
        let mut descend = None;
        for &c in &d.children {
            let e = &tree.entries[c];
            if e.is_dir() {
                let len = e.full_name.len();
                if fullname.starts_with(&e.full_name) {
                    if fullname.len() == len {
                        return Some(c);
                    }
                    if fullname[len] == b'/' {
                        if e.children.is_empty() {
                            return None;
                        }
                        descend = Some(c);
                        break;
                    }
                }
            } else if e.full_name == fullname {
                return Some(c);
            }
        }
        dir = descend?;
    }
}

/// Applies a device table to a scanned tree, exactly as mkfs.jffs2's `parse_device_table`
/// (`docs/spec/mtd-utils-spec.md` §3.4, §8 B-18):
///
/// * Lines: `<name> <type> <mode:octal> <uid> <gid> <major> <minor> <start> <inc> <count>`
///   read with glibc `sscanf("%ms %c %lo %lu %lu %lu %lu %lu %lu %lu")` semantics (§3.4):
///   white space trimmed, empty and '#' lines skipped, conversion stops at the first field
///   that fails (`-`, user/group names) and later fields keep their defaults (mode 0755,
///   uid 0, gid 0, major 0, minor 0, start 0, inc 1, count 0), `strtoul` sign handling
///   (`-1` is 2^64−1, truncated to 32 bits where mkfs stores it). Lines with fewer than two
///   fields are ignored (reported as a [`SourceWarningKind::Notice`] only when `opts.verbose`).
/// * Squash options are ignored for everything the table creates or modifies (§3.4:
///   mkfs turns them off); `opts.faketime`, `opts.now`, `opts.xattr` and `opts.verbose` apply.
/// * An existing entry (found by full name only, type not compared, and not a `c`/`b` line
///   with count > 0) gets uid, gid and mode (type bits included) replaced; its rdev only if
///   both major and minor are non-zero; its timestamps, size, host path and xattrs stay.
/// * Otherwise new entries are appended at the end of the parent's children (parent = entry
///   named `dirname(name)`; none → warning "skipping device_table entry '%s': no parent
///   directory!"). A `c`/`b` line with count > 0 creates `name` + decimal `i` for
///   `i = start .. start+count-1` with minor `minor + (i-start)*inc` (u64 wrap-around, then
///   truncated to 32 bits like glibc `makedev`).
/// * The host path of a new entry is `root_as_given + name` (ranges: `root_as_given + "/" +
///   name + i`), resolved the way mkfs resolves it *after* its `chdir` into the root: a
///   relative `-r` is therefore taken relative to the root itself (§3.4, B-18: `-r rootfs`
///   looks at `rootfs/rootfs/dev/...`). Pass `-r` exactly as given, or "." if it was not
///   given (mkfs' default, which resolves correctly). If that path exists its type must
///   match ("%s: file type does not match specified type!"), and its mtime, size (regular
///   files), lstat identity (which can make the writer treat the entry as a hard link, as
///   in mkfs) and xattrs are taken; a new `f` must exist ("%s: does not exist!"); otherwise
///   mtime is `opts.now` (0 with faketime).
/// * Fatal: name "/" ("Device table entries require absolute paths"), a type letter other
///   than d f p c b l ("Unsupported file type '%c'"), a new `l` entry ("Unsupported file
///   type 'l'"), a table shorter than 10 bytes ([`SourceError::DeviceTableTooSmall`]).
///   Fatal line errors are [`SourceError::DeviceTable`], displayed as "table:line: message"
///   with the message in mtd-utils' wording.
pub fn apply_device_table(
    tree: &mut SourceTree,
    table: &[u8],
    table_name: &Path,
    root_as_given: &Path,
    opts: &SourceOptions,
) -> Result<Vec<SourceWarning>, SourceError> {
    apply_limited(
        tree,
        table,
        table_name,
        root_as_given,
        opts,
        MAX_TABLE_ENTRIES,
    )
}

/// [`apply_device_table`] with `max_entries` in place of [`MAX_TABLE_ENTRIES`].
pub(crate) fn apply_limited(
    tree: &mut SourceTree,
    table: &[u8],
    table_name: &Path,
    root_as_given: &Path,
    opts: &SourceOptions,
    max_entries: u64,
) -> Result<Vec<SourceWarning>, SourceError> {
    if table.len() < 10 {
        return Err(SourceError::DeviceTableTooSmall {
            path: table_name.to_path_buf(),
        });
    }
    if tree.entries.is_empty() {
        return Ok(Vec::new());
    }
    let mut ctx = Ctx {
        tree,
        table_name,
        rootdir: path_bytes(root_as_given).to_vec(),
        opts,
        warnings: Vec::new(),
        line: 0,
        created: 0,
        max_entries,
    };
    for (lineno, line) in table_lines(table) {
        ctx.line = lineno;
        ctx.interpret(line)?;
    }
    Ok(ctx.warnings)
}

struct Ctx<'a> {
    tree: &'a mut SourceTree,
    table_name: &'a Path,
    /// `-r` as given (mkfs' `rootdir`).
    rootdir: Vec<u8>,
    opts: &'a SourceOptions,
    warnings: Vec<SourceWarning>,
    line: usize,
    /// Entries created so far, and the bound ([`MAX_TABLE_ENTRIES`]).
    created: u64,
    max_entries: u64,
}

impl Ctx<'_> {
    fn fatal(&self, message: String) -> SourceError {
        SourceError::DeviceTable {
            table: self.table_name.to_path_buf(),
            line: self.line,
            message,
        }
    }

    fn warn(&mut self, kind: SourceWarningKind, message: String) {
        self.warnings.push(SourceWarning {
            message,
            location: Some(format!(
                "{}:{}",
                crate::text::path(self.table_name),
                self.line
            )),
            kind,
        });
    }

    /// What mkfs.jffs2 gets silently wrong (§3.4: conversion stops at the first field that
    /// fails and every later field keeps its default) is an error here: a field that is
    /// neither a number nor the `-` placeholder (`root`, `644abc`, an `8` or `9` in the
    /// octal mode), a device without its major and minor numbers (it would be 0,0), a mode
    /// beyond the permission bits (it would change the type). Trailing fields may still be
    /// left out or written `-` (mode 0755, owner 0, no range: mkfs' defaults), as real
    /// tables do for directories and files.
    fn check_fields(&self, l: &Line) -> Result<(), SourceError> {
        const FIELDS: [&str; 10] = [
            "name", "type", "mode", "uid", "gid", "major", "minor", "start", "inc", "count",
        ];
        if l.converted < FIELDS.len() && !l.stop.is_empty() && l.stop != b"-" {
            let field = FIELDS.get(l.converted).copied().unwrap_or("field");
            let kind = if l.converted == 2 {
                "an octal"
            } else {
                "a decimal"
            };
            return Err(self.fatal(format!(
                "{field} '{}' is not {kind} number (nor '-')",
                sys::lossy(&l.stop)
            )));
        }
        if matches!(l.typ, b'c' | b'b') && l.converted < 7 {
            return Err(self.fatal(format!(
                "'{}': a device needs its major and minor numbers",
                sys::lossy(&l.name)
            )));
        }
        if l.mode > 0o7777 {
            return Err(self.fatal(format!(
                "'{}': mode {:o} is more than the permission bits (07777)",
                sys::lossy(&l.name),
                l.mode
            )));
        }
        Ok(())
    }

    /// Counts `n` more entries created by the table against [`MAX_TABLE_ENTRIES`].
    fn count_entries(&mut self, n: u64) -> Result<(), SourceError> {
        self.created = self.created.saturating_add(n);
        if self.created > self.max_entries {
            return Err(self.fatal(format!(
                "the device table creates more than {} entries (ranges expanded)",
                self.max_entries
            )));
        }
        Ok(())
    }

    /// mkfs resolves its host paths relative to the root it has `chdir`ed into; `join`
    /// gives exactly that (an absolute host path string replaces the base).
    fn resolve(&self, host: &[u8]) -> PathBuf {
        self.tree.entries[SourceTree::ROOT]
            .host_path
            .join(sys::path_from_bytes(host))
    }

    fn interpret(&mut self, line: &[u8]) -> Result<(), SourceError> {
        let l = parse_line(line);
        if l.converted < 2 {
            // mkfs ignores such a line (it only flags a failure status nobody reads).
            if self.opts.verbose {
                self.warn(
                    SourceWarningKind::Notice,
                    format!("ignoring device table line '{}'", sys::lossy(line)),
                );
            }
            return Ok(());
        }
        self.check_fields(&l)?;
        let name = l.name.as_slice();
        if name == b"/" {
            return Err(self.fatal("Device table entries require absolute paths".into()));
        }
        let ifmt: u64 = match l.typ {
            b'd' => libc::S_IFDIR,
            b'f' => libc::S_IFREG,
            b'p' => libc::S_IFIFO,
            b'c' => libc::S_IFCHR,
            b'b' => libc::S_IFBLK,
            b'l' => libc::S_IFLNK,
            t => return Err(self.fatal(unsupported_type(t))),
        }
        .into();
        let mode = l.mode | ifmt;
        let is_dev = l.typ == b'c' || l.typ == b'b';

        if let Some(id) = find_filesystem_entry(self.tree, SourceTree::ROOT, name) {
            if !(l.count > 0 && is_dev) {
                // Fix up the existing entry (§3.4): owner and mode (type bits included, so a
                // mismatching letter silently re-types it); rdev only if both numbers are
                // non-zero (B-18), judged on the full-width values as in C.
                let e = &mut self.tree.entries[id];
                e.uid = l.uid as u32;
                e.gid = l.gid as u32;
                e.mode = mode as u32;
                if l.major != 0 && l.minor != 0 {
                    e.rdev_major = l.major as u32;
                    e.rdev_minor = l.minor as u32;
                }
                return Ok(());
            }
        }

        let Some(parent) = find_filesystem_entry(self.tree, SourceTree::ROOT, &dirname(name))
        else {
            self.warn(
                SourceWarningKind::Error,
                format!(
                    "skipping device_table entry '{}': no parent directory!",
                    sys::lossy(name)
                ),
            );
            return Ok(());
        };

        let mut hostpath = self.rootdir.clone();
        hostpath.extend_from_slice(name);
        match l.typ {
            b'd' | b'f' | b'p' => {
                self.count_entries(1)?;
                self.add(name, &hostpath, &l, mode, (0, 0), parent)
            }
            b'c' | b'b' if l.count > 0 => {
                // for (i = start; i < start + count; i++) in unsigned long arithmetic.
                let end = l.start.wrapping_add(l.count);
                let n = end.saturating_sub(l.start);
                if n > MAX_RANGE_COUNT {
                    return Err(self.fatal(format!(
                        "device range of {n} entries for '{}' exceeds the limit of {MAX_RANGE_COUNT}",
                        sys::lossy(name)
                    )));
                }
                self.count_entries(n)?;
                for k in 0..n {
                    let i = l.start + k;
                    let mut dname = name.to_vec();
                    dname.extend_from_slice(i.to_string().as_bytes());
                    // mkfs builds this one as "%s/%s%lu" (an extra '/').
                    let mut hpath = self.rootdir.clone();
                    hpath.push(b'/');
                    hpath.extend_from_slice(&dname);
                    let minor = l.minor.wrapping_add(k.wrapping_mul(l.inc));
                    let rdev = (l.major as u32, minor as u32);
                    self.add(&dname, &hpath, &l, mode, rdev, parent)?;
                }
                Ok(())
            }
            b'c' | b'b' => {
                self.count_entries(1)?;
                let rdev = (l.major as u32, l.minor as u32);
                self.add(name, &hostpath, &l, mode, rdev, parent)
            }
            // 'l' can only modify an existing link.
            t => Err(self.fatal(unsupported_type(t))),
        }
    }

    /// `add_host_filesystem_entry` for a table-created entry (squash off, §3.4).
    fn add(
        &mut self,
        name: &[u8],
        hostpath: &[u8],
        l: &Line,
        mode: u64,
        rdev: (u32, u32),
        parent: EntryId,
    ) -> Result<(), SourceError> {
        let abs = self.resolve(hostpath);
        let shown = sys::lossy(hostpath);
        let mode32 = mode as u32;
        let ifmt = mode32 & libc::S_IFMT;
        let (st, timestamp) = match sys::lstat(&abs) {
            Ok(st) => {
                if st.mode & libc::S_IFMT != ifmt {
                    return Err(
                        self.fatal(format!("{shown}: file type does not match specified type!"))
                    );
                }
                (st, st.mtime as u32)
            }
            // Any lstat failure counts as "does not exist", as in mkfs.
            Err(_) => {
                if ifmt == libc::S_IFREG {
                    return Err(self.fatal(format!("{shown}: does not exist!")));
                }
                (Stat::default(), self.opts.now)
            }
        };
        let mut size = 0;
        let mut link_target = None;
        if ifmt == libc::S_IFREG {
            size = st.size.max(0) as u64;
        }
        if ifmt == libc::S_IFLNK {
            // Only reachable when an odd mode turns another letter into a symlink type and the
            // host object is a symlink (mkfs would crash if readlink failed).
            let t = std::fs::read_link(&abs).map_err(|e| self.fatal(format!("{shown}: {e}")))?;
            let t = path_bytes(&t).to_vec();
            size = t.len() as u64;
            link_target = Some(t);
        }
        // mkfs names the path as it built it (relative for a relative -r) in its messages.
        let xattrs = read_xattrs(
            &abs,
            &sys::path_from_bytes(hostpath),
            self.opts.xattr,
            self.opts.verbose,
            &mut self.warnings,
        );
        let entry = SourceEntry {
            name: basename(name).to_vec(),
            full_name: name.to_vec(),
            host_path: abs,
            mode: mode32,
            uid: l.uid as u32,
            gid: l.gid as u32,
            rdev_major: rdev.0,
            rdev_minor: rdev.1,
            size,
            mtime: if self.opts.faketime { 0 } else { timestamp },
            dev: st.dev,
            ino: st.ino,
            nlink: st.nlink,
            link_target,
            children: Vec::new(),
            parent: Some(parent),
            xattrs,
        };
        let id = self.tree.entries.len();
        self.tree.entries.push(entry);
        self.tree.entries[parent].children.push(id);
        Ok(())
    }
}

fn unsupported_type(t: u8) -> String {
    format!("Unsupported file type '{}'", sys::lossy(&[t]))
}

#[cfg(test)]
mod tests;
