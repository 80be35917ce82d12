//! Listings of the tree Linux shows (an `ls -lR`-like one, and jffs2reader's format), path
//! lookup inside the image, and file contents.

use std::collections::HashSet;
use std::io::{self, Write};

use super::plan::FileData;
use super::stream::{stream, Chunk, StreamOptions};
use crate::format::ROOT_INO;
use crate::fs::{lookup, Dirent, Fs, FsError, Inode, InodeKind, LookupError, ReadError};
pub use crate::text::escape;
use crate::text::format_time;

/// `ls -l`'s mode string (type character and permissions with `s`/`S`/`t`/`T`), with
/// jffs2reader's type characters (`"0pcCd?bB-?l?s???"`: the usual ones for the real types).
pub fn format_mode(mode: u32) -> String {
    const TYPES: &[u8; 16] = b"0pcCd?bB-?l?s???";
    let mut s = String::with_capacity(10);
    s.push(char::from(TYPES[((mode >> 12) & 0xF) as usize]));
    let bits = [
        (0o400, 'r', 0, ' ', ' '),
        (0o200, 'w', 0, ' ', ' '),
        (0o100, 'x', 0o4000, 's', 'S'),
        (0o040, 'r', 0, ' ', ' '),
        (0o020, 'w', 0, ' ', ' '),
        (0o010, 'x', 0o2000, 's', 'S'),
        (0o004, 'r', 0, ' ', ' '),
        (0o002, 'w', 0, ' ', ' '),
        (0o001, 'x', 0o1000, 't', 'T'),
    ];
    for (bit, c, special, set, unset) in bits {
        let on = mode & bit != 0;
        if special != 0 && mode & special != 0 {
            s.push(if on { set } else { unset });
        } else {
            s.push(if on { c } else { '-' });
        }
    }
    s
}

/// C `ctime()` in UTC: `Www Mmm dd hh:mm:ss yyyy`.
fn ctime(t: i64) -> String {
    const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = t.div_euclid(86_400);
    let (y, mo, d) = crate::text::civil(days);
    let s = t.rem_euclid(86_400);
    format!(
        "{} {} {d:2} {:02}:{:02}:{:02} {y}",
        DAYS[(days + 4).rem_euclid(7) as usize],
        MONTHS[(mo as usize).saturating_sub(1).min(11)],
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// Options of [`list`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ListOptions {
    /// Also list each entry's extended attributes (indented, `name=value`).
    pub xattrs: bool,
}

/// One step of a listing walk.
struct Item<'a> {
    /// The path as text: each name escaped with [`escape`] (a `/` inside a name shows as
    /// `\x2f`), joined with `/`.
    shown: &'a str,
    inode: Result<&'a Inode, &'a FsError>,
    ino: u32,
}

/// `dir/name` for display.
fn join_shown(dir: &str, name: &[u8], top_slash: bool) -> String {
    let n = escape(name, true);
    if dir.is_empty() && !top_slash {
        n
    } else {
        format!("{dir}/{n}")
    }
}

/// Walks from `start` depth-first (children by name), calling `visit` for every entry; a
/// directory reached a second time is listed but not entered, nor is one whose path reaches
/// `PATH_MAX`. With `recursive` false, only the children of `start`. `top_slash`: join with
/// `/` even below an empty start path (jffs2reader's `"%s/%s"`).
fn walk(
    fs: &Fs<'_>,
    start: &Inode,
    start_shown: &str,
    recursive: bool,
    top_slash: bool,
    visit: &mut dyn FnMut(&Item<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut seen: HashSet<u32> = HashSet::from([start.ino]);
    // (raw path length, shown path, remaining children reversed)
    let mut stack: Vec<(usize, String, Vec<Dirent>)> =
        vec![(0, start_shown.to_string(), rev(start.dents.clone()))];
    while let Some((raw_len, dir_shown, children)) = stack.last_mut() {
        let Some(d) = children.pop() else {
            stack.pop();
            continue;
        };
        let raw_len = *raw_len + 1 + d.name.len();
        let shown = join_shown(dir_shown, &d.name, top_slash);
        let child = fs.read_inode(d.ino);
        visit(&Item {
            shown: &shown,
            inode: child.as_ref(),
            ino: d.ino,
        })?;
        if let Ok(c) = child {
            if recursive
                && c.kind == InodeKind::Dir
                && seen.insert(c.ino)
                && raw_len < crate::fs::PATH_MAX
            {
                stack.push((raw_len, shown, rev(c.dents)));
            }
        }
    }
    Ok(())
}

fn rev(mut v: Vec<Dirent>) -> Vec<Dirent> {
    v.reverse();
    v
}

fn hex(v: &[u8]) -> String {
    v.iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes the `ls -lR`-like listing of the whole tree: one line per entry, the root first
/// (`.`), then depth-first with the children of a directory by name:
///
/// ```text
///    inode mode       links    uid    gid         size mtime (UTC)         path -> target
/// ```
///
/// Devices show `major, minor` instead of a size; names are escaped with [`escape`] (a `/`
/// inside a name shows as `\x2f`); an entry whose inode cannot be read shows `?` fields and
/// the reason. Returns how many entries could not be read.
///
/// ```
/// use jffs2::extract::{list, ListOptions};
/// # use std::os::unix::fs::PermissionsExt;
/// # let dir = tempfile::tempdir()?;
/// # std::fs::create_dir(dir.path().join("etc"))?;
/// # std::fs::write(dir.path().join("etc/motd"), b"Welcome\n")?;
/// # std::fs::set_permissions(dir.path().join("etc"), std::fs::Permissions::from_mode(0o755))?;
/// # std::fs::set_permissions(dir.path().join("etc/motd"), std::fs::Permissions::from_mode(0o644))?;
/// # std::os::unix::fs::symlink("etc/motd", dir.path().join("motd"))?;
/// # let opts = jffs2::source::SourceOptions { faketime: true, squash_uids: true, ..Default::default() };
/// # let (tree, _) = jffs2::source::scan_host(dir.path(), &opts)?;
/// # let mut image = Vec::new();
/// # jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
/// # let image = jffs2::Image::from_vec(image)?;
/// # let fs = image.mount()?;
/// // `fs`: the model of `mkfs.jffs2 -f -U` of a tree with `etc/motd` and a symlink to it.
/// let mut out = Vec::new();
/// let unreadable = list(&fs, &mut out, &ListOptions::default())?;
/// assert_eq!(unreadable, 0);
/// // Linux counts the root's links one too many (`fs.c`: "Root dir gets i_nlink 3").
/// assert_eq!(
///     String::from_utf8(out)?,
///     concat!(
///         "       1 drwxr-xr-x    4      0      0            0 1970-01-01 00:00:00 .\n",
///         "       2 drwxr-xr-x    2      0      0            0 1970-01-01 00:00:00 etc\n",
///         "       4 -rw-r--r--    1      0      0            8 1970-01-01 00:00:00 etc/motd\n",
///         "       3 lrwxrwxrwx    1      0      0            8 1970-01-01 00:00:00 motd -> etc/motd\n",
///     )
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn list(fs: &Fs<'_>, out: &mut dyn Write, opts: &ListOptions) -> io::Result<u64> {
    let root = fs
        .read_inode(ROOT_INO)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("/: {e}")))?;
    let line = |inode: &Inode, shown: &str, out: &mut dyn Write| -> io::Result<()> {
        let size = match inode.rdev {
            Some((ma, mi)) if matches!(inode.kind, InodeKind::Char | InodeKind::Block) => {
                format!("{ma:>5}, {mi:>5}")
            }
            _ => inode.size.to_string(),
        };
        write!(
            out,
            "{:>8} {} {:>4} {:>6} {:>6} {:>12} {} {shown}",
            inode.ino,
            format_mode(inode.mode),
            inode.nlink,
            inode.uid,
            inode.gid,
            size,
            format_time(inode.mtime),
        )?;
        if let Some(t) = &inode.target {
            write!(out, " -> {}", escape(t, false))?;
        }
        writeln!(out)?;
        if opts.xattrs {
            for x in fs.xattrs(inode).0 {
                let v = match &x.value {
                    Ok(v) => match std::str::from_utf8(v) {
                        // Text only when nothing in it could drive a terminal; else hex.
                        Ok(s) if !s.chars().any(crate::text::needs_escape) => {
                            format!("\"{s}\"")
                        }
                        _ => format!("0x{}", hex(v)),
                    },
                    Err(e) => format!("<{e}>"),
                };
                writeln!(out, "{:>8}   {}={v}", "", escape(&x.name, false))?;
            }
        }
        Ok(())
    };
    line(&root, ".", out)?;
    let mut bad = 0u64;
    walk(fs, &root, "", true, false, &mut |it| match it.inode {
        Ok(inode) => line(inode, it.shown, out),
        Err(e) => {
            bad += 1;
            writeln!(
                out,
                "{:>8} ?????????? {:>4} {:>6} {:>6} {:>12} {:>19} {}  [cannot be read: {e}]",
                it.ino, "?", "?", "?", "?", "?", it.shown
            )
        }
    })?;
    Ok(bad)
}

/// Options of [`reader_list`] (jffs2reader's `-d`, `-r`, `-t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReaderListOptions {
    /// `-r`: descend into directories.
    pub recursive: bool,
    /// `-t`: show the change time.
    pub time: bool,
    /// "Now", for `-t`'s six-month rule (seconds since the epoch).
    pub now: i64,
}

/// jffs2reader's listing of directory `path` (its `lsdir`), with correct values: each line
/// `"%s %-4d %-8d %-8d "` (mode string, link count, uid, gid), then `"%4d, %3d "` (device
/// numbers) or `"%9ld "` (size), with `-t` the change time as `ls` shows it (UTC), then
/// `path/name` and a type mark (`/` directory, `|` FIFO, `=` socket), and ` -> target` for
/// symbolic links. Unlike jffs2reader: the link count, size, device numbers and times are
/// Linux's (jffs2reader prints 1, the first node's `dsize`, uninitialised device bits and
/// garbage times), entries are listed by name (jffs2reader: in dirent version order, missing
/// the version-0 entry), a directory reached twice is not entered again, names are escaped.
pub fn reader_list(
    fs: &Fs<'_>,
    path: &[u8],
    opts: &ReaderListOptions,
    out: &mut dyn Write,
) -> Result<(), ReaderListError> {
    let dir = lookup(fs, path, true).map_err(ReaderListError::Lookup)?;
    if dir.kind != InodeKind::Dir {
        return Err(ReaderListError::Lookup(LookupError::NotFound(
            path.to_vec(),
        )));
    }
    // jffs2reader prints "%s/%s" with the path as given, "/" alone becoming "".
    let shown = if path == b"/" {
        String::new()
    } else {
        escape(path, false)
    };
    walk(fs, &dir, &shown, opts.recursive, true, &mut |it| {
        let inode = match it.inode {
            Ok(i) => i,
            Err(e) => {
                return writeln!(
                    out,
                    "?????????? {:<4} {:<8} {:<8} {:>9} {}  [cannot be read: {e}]",
                    "?", "?", "?", "?", it.shown
                )
            }
        };
        write!(
            out,
            "{} {:<4} {:<8} {:<8} ",
            format_mode(inode.mode),
            inode.nlink,
            inode.uid,
            inode.gid
        )?;
        match (inode.kind, inode.rdev) {
            (InodeKind::Char | InodeKind::Block, Some((ma, mi))) => write!(out, "{ma:4}, {mi:3} ")?,
            _ => write!(out, "{:9} ", inode.size)?,
        }
        if opts.time {
            let c = ctime(i64::from(inode.ctime));
            let age = opts.now - i64::from(inode.ctime);
            if age < 3600 * 24 * 365 / 2 && age > -15 * 60 {
                write!(out, "{:>6.6} {:>5.5} ", &c[4..], &c[11..])?;
            } else {
                write!(out, "{:>6.6} {:>4.4} ", &c[4..], &c[20..])?;
            }
        }
        let mark = match inode.kind {
            InodeKind::Dir => '/',
            InodeKind::Fifo => '|',
            InodeKind::Socket => '=',
            InodeKind::Unknown => '?',
            _ => ' ',
        };
        write!(out, "{}{mark}", it.shown)?;
        if let Some(t) = &inode.target {
            write!(out, " -> {}", escape(t, false))?;
        }
        writeln!(out)
    })
    .map_err(ReaderListError::Io)
}

/// Why [`reader_list`] failed.
#[derive(Debug, thiserror::Error)]
pub enum ReaderListError {
    /// The directory cannot be found.
    #[error("{0}")]
    Lookup(LookupError),
    /// Writing failed.
    #[error("{0}")]
    Io(io::Error),
}

/// What [`cat`] could not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// Offset of the first unreadable byte.
    pub offset: u64,
    /// Unreadable bytes (written as zeros).
    pub bytes: u64,
    /// The first error.
    pub error: ReadError,
}

/// Writes a regular file's content to `out`, streamed (decompressing ahead on all cores);
/// ranges that cannot be read are written as zeros and reported.
pub fn cat(
    fs: &Fs<'_>,
    inode: &Inode,
    out: &mut dyn Write,
    opts: StreamOptions,
) -> io::Result<Option<Unreadable>> {
    static ZEROS: [u8; 65536] = [0; 65536];
    let data = FileData::of(inode);
    let files = [&data];
    let mut bad: Option<Unreadable> = None;
    stream(fs, &files, opts, |r| {
        r.read_file(0, |c| match c {
            Chunk::Data { bytes, .. } => out.write_all(bytes.as_slice()),
            Chunk::Zeros { len, .. } | Chunk::Unreadable { len, .. } => {
                if let Chunk::Unreadable { offset, len, error } = &c {
                    match &mut bad {
                        Some(b) => b.bytes += len,
                        None => {
                            bad = Some(Unreadable {
                                offset: *offset,
                                bytes: *len,
                                error: error.clone(),
                            })
                        }
                    }
                }
                let mut n = len;
                while n > 0 {
                    let k = n.min(ZEROS.len() as u64) as usize;
                    out.write_all(&ZEROS[..k])?;
                    n -= k as u64;
                }
                Ok(())
            }
        })
    })?;
    Ok(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        assert_eq!(format_time(0), "1970-01-01 00:00:00");
        assert_eq!(format_time(1_600_000_000), "2020-09-13 12:26:40");
        assert_eq!(format_time(u32::MAX), "2106-02-07 06:28:15");
        assert_eq!(ctime(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime(1_700_000_000), "Tue Nov 14 22:13:20 2023");
        assert_eq!(format_time(951_782_400), "2000-02-29 00:00:00");
    }

    #[test]
    fn modes() {
        assert_eq!(format_mode(0o100644), "-rw-r--r--");
        assert_eq!(format_mode(0o40755), "drwxr-xr-x");
        assert_eq!(format_mode(0o104755), "-rwsr-xr-x");
        assert_eq!(format_mode(0o102644), "-rw-r-Sr--");
        assert_eq!(format_mode(0o41777), "drwxrwxrwt");
        assert_eq!(format_mode(0o41776), "drwxrwxrwT");
        assert_eq!(format_mode(0o120777), "lrwxrwxrwx");
        assert_eq!(format_mode(0o20666), "crw-rw-rw-");
        assert_eq!(format_mode(0o60660), "brw-rw----");
        assert_eq!(format_mode(0o10644), "prw-r--r--");
        assert_eq!(format_mode(0o140755), "srwxr-xr-x");
    }
}
