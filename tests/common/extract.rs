//! Helpers of the jffs2-dump view and extraction tests (`dump_extract.rs`, `dump_views.rs`):
//! running our binary (also as `jffs2reader`), snapshots of extracted trees with `lstat`,
//! contents and xattrs, and a builder of crafted (hostile) images on the core's encoders and
//! erase-block writer.
//!
//! Included with `#[path = "common/extract.rs"] mod extract_common;` next to `mod common;`.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::BTreeMap;
use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

use jffs2::format::{DirentNode, Endian, InodeNode, XattrNode, XrefNode};
use jffs2::layout::{BlockWriter, EndPad, LayoutConfig};

/// Our binary.
pub const OURS: &str = env!("CARGO_BIN_EXE_jffs2-dump");

/// What a run produced.
#[derive(Debug)]
pub struct Out {
    pub code: Option<i32>,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

impl Out {
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }
}

/// Runs `program` with `args` (C locale, stdin closed).
pub fn run_prog<S: AsRef<OsStr>>(program: &Path, args: &[S]) -> Out {
    let o = Command::new(program)
        .args(args)
        .env("LC_ALL", "C")
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("run {}: {e}", program.display()));
    Out {
        code: o.status.code(),
        stdout: o.stdout,
        stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
    }
}

/// Runs `jffs2-dump ARGS`.
pub fn dump<S: AsRef<OsStr>>(args: &[S]) -> Out {
    run_prog(Path::new(OURS), args)
}

/// A `jffs2reader` symlink to our binary (made once per process).
pub fn ours_as_reader() -> &'static Path {
    static LINK: OnceLock<PathBuf> = OnceLock::new();
    LINK.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("as-jffs2reader-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("mkdir");
        let link = dir.join("jffs2reader");
        std::os::unix::fs::symlink(OURS, &link).expect("symlink jffs2reader");
        link
    })
}

/// MD5 of bytes, as hex.
pub fn md5_hex(data: &[u8]) -> String {
    let mut h = jffs2::fs::Md5::new();
    h.update(data);
    jffs2::fs::Md5::hex(&h.finish())
}

fn cpath(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).expect("path without NUL")
}

/// `llistxattr` + `lgetxattr`: name -> value.
pub fn xattrs(p: &Path) -> BTreeMap<String, Vec<u8>> {
    let c = cpath(p);
    let mut out = BTreeMap::new();
    let mut names = vec![0u8; 65536];
    // SAFETY: valid path and buffer.
    let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
    if n <= 0 {
        return out;
    }
    names.truncate(n as usize);
    for name in names.split(|&b| b == 0).filter(|n| !n.is_empty()) {
        let cn = CString::new(name).expect("name");
        let mut v = vec![0u8; 65536];
        // SAFETY: valid path, name and buffer.
        let k = unsafe { libc::lgetxattr(c.as_ptr(), cn.as_ptr(), v.as_mut_ptr().cast(), v.len()) };
        if k >= 0 {
            v.truncate(k as usize);
            out.insert(String::from_utf8_lossy(name).into_owned(), v);
        }
    }
    out
}

/// One entry of a host tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostEntry {
    /// `file`, `dir`, `symlink`, `fifo`, `char`, `block`, `socket`.
    pub kind: &'static str,
    /// Permission bits with setuid/setgid/sticky.
    pub perm: u32,
    pub uid: u32,
    pub gid: u32,
    pub size: u64,
    pub nlink: u64,
    pub mtime: i64,
    pub ino: u64,
    /// 512-byte blocks allocated.
    pub blocks: u64,
    pub rdev: Option<(u32, u32)>,
    pub target: Option<Vec<u8>>,
    pub md5: Option<String>,
    pub xattrs: BTreeMap<String, Vec<u8>>,
}

fn kind_of(mode: u32) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFDIR => "dir",
        libc::S_IFREG => "file",
        libc::S_IFLNK => "symlink",
        libc::S_IFIFO => "fifo",
        libc::S_IFCHR => "char",
        libc::S_IFBLK => "block",
        libc::S_IFSOCK => "socket",
        _ => "unknown",
    }
}

/// Every entry below `root` (the root itself as `.`), by path bytes, never following links.
pub fn snapshot(root: &Path) -> BTreeMap<Vec<u8>, HostEntry> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, rel: &[u8], out: &mut BTreeMap<Vec<u8>, HostEntry>) {
        let p = if rel.is_empty() {
            root.to_path_buf()
        } else {
            root.join(OsStr::from_bytes(rel))
        };
        let m = std::fs::symlink_metadata(&p).unwrap_or_else(|e| panic!("lstat {p:?}: {e}"));
        let kind = kind_of(m.mode());
        let target = (kind == "symlink").then(|| {
            std::fs::read_link(&p)
                .expect("readlink")
                .as_os_str()
                .as_bytes()
                .to_vec()
        });
        let md5 = (kind == "file").then(|| md5_hex(&std::fs::read(&p).expect("read")));
        let rdev = matches!(kind, "char" | "block").then(|| {
            let r = m.rdev();
            (libc::major(r), libc::minor(r))
        });
        let key = if rel.is_empty() {
            b".".to_vec()
        } else {
            rel.to_vec()
        };
        out.insert(
            key,
            HostEntry {
                kind,
                perm: m.mode() & 0o7777,
                uid: m.uid(),
                gid: m.gid(),
                size: m.size(),
                nlink: m.nlink(),
                mtime: m.mtime(),
                ino: m.ino(),
                blocks: m.blocks(),
                rdev,
                target,
                md5,
                xattrs: xattrs(&p),
            },
        );
        if kind == "dir" {
            let mut names: Vec<Vec<u8>> = std::fs::read_dir(&p)
                .expect("readdir")
                .map(|e| e.expect("dirent").file_name().as_bytes().to_vec())
                .collect();
            names.sort();
            for n in names {
                let mut r = rel.to_vec();
                if !r.is_empty() {
                    r.push(b'/');
                }
                r.extend_from_slice(&n);
                walk(root, &r, out);
            }
        }
    }
    walk(root, b"", &mut out);
    out
}

/// The names directly in `dir`.
pub fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

// ---------------------------------------------------------------------------------------
// Crafted images
// ---------------------------------------------------------------------------------------

/// `S_IF*` modes.
pub const DIR: u32 = 0o040755;
pub const REG: u32 = 0o100644;
pub const LNK: u32 = 0o120777;

/// A builder of images from individual nodes, laid out by the core's erase-block writer
/// (cleanmarkers, block ends), so that they mount.
pub struct Craft {
    pub e: Endian,
    pub erase_size: u32,
    nodes: Vec<Vec<u8>>,
}

impl Craft {
    pub fn new(e: Endian, erase_size: u32) -> Craft {
        Craft {
            e,
            erase_size,
            nodes: Vec::new(),
        }
    }

    /// A raw node (already encoded).
    pub fn raw(&mut self, node: Vec<u8>) -> &mut Self {
        self.nodes.push(node);
        self
    }

    /// A directory entry.
    pub fn dirent(
        &mut self,
        pino: u32,
        version: u32,
        ino: u32,
        dtype: u8,
        name: &[u8],
    ) -> &mut Self {
        let d = DirentNode {
            pino,
            version,
            ino,
            mctime: 1_600_000_000,
            nsize: name.len() as u8,
            dtype,
            node_crc: 0,
            name_crc: 0,
        };
        let mut v = Vec::new();
        d.encode(self.e, name, &mut v);
        self.raw(v)
    }

    /// An inode node with the given fields and stored data (`csize` = its length).
    #[allow(clippy::too_many_arguments)]
    pub fn inode(
        &mut self,
        ino: u32,
        version: u32,
        mode: u32,
        isize: u32,
        offset: u32,
        dsize: u32,
        compr: u8,
        data: &[u8],
    ) -> &mut Self {
        let n = InodeNode {
            ino,
            version,
            mode,
            uid: 0,
            gid: 0,
            isize,
            atime: 1_600_000_000,
            mtime: 1_600_000_000,
            ctime: 1_600_000_000,
            offset,
            csize: data.len() as u32,
            dsize,
            compr,
            usercompr: 0,
            flags: 0,
            data_crc: 0,
            node_crc: 0,
        };
        let mut v = Vec::new();
        n.encode(self.e, data, &mut v);
        self.raw(v)
    }

    /// A directory inode.
    pub fn dir(&mut self, ino: u32) -> &mut Self {
        self.inode(ino, 1, DIR, 0, 0, 0, 0, &[])
    }

    /// A regular file with `data` in one uncompressed node.
    pub fn file(&mut self, ino: u32, data: &[u8]) -> &mut Self {
        let len = data.len() as u32;
        self.inode(ino, 1, REG, len, 0, len, 0, data)
    }

    /// A symbolic link.
    pub fn symlink(&mut self, ino: u32, target: &[u8]) -> &mut Self {
        let len = target.len() as u32;
        self.inode(ino, 1, LNK, len, 0, len, 0, target)
    }

    /// An xattr datum and a reference to it from `ino`.
    pub fn xattr(
        &mut self,
        ino: u32,
        xid: u32,
        prefix: u8,
        name: &[u8],
        value: &[u8],
    ) -> &mut Self {
        let x = XattrNode {
            xid,
            version: 1,
            xprefix: prefix,
            name_len: name.len() as u8,
            value_len: value.len() as u16,
            data_crc: 0,
            node_crc: 0,
        };
        let mut v = Vec::new();
        x.encode(self.e, name, value, &mut v);
        self.raw(v);
        let r = XrefNode {
            ino,
            xid,
            xseqno: xid * 2,
            node_crc: 0,
        };
        let mut v = Vec::new();
        r.encode(self.e, &mut v);
        self.raw(v)
    }

    /// The image: nodes in order with cleanmarkers, padded to the end of the last block.
    pub fn build(&self) -> Vec<u8> {
        let cfg = LayoutConfig {
            endian: self.e,
            erase_size: self.erase_size,
            cleanmarker: Some(12),
            summary: false,
        };
        let mut w = BlockWriter::new(Vec::new(), cfg);
        for n in &self.nodes {
            w.prepare(n.len() as u32, 0).expect("prepare");
            w.write_node(n).expect("write node");
        }
        let (img, _) = w.finish(EndPad::Block).expect("finish");
        img
    }
}
