//! The FUSE side of `jffs2-mount`: every request answered from a [`jffs2::mount::View`]; this
//! file only translates between the view's types and FUSE's.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, ReplyAttr, ReplyData, ReplyDirectory, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyXattr, Request,
};
use jffs2::format::dt;
use jffs2::fs::InodeKind;
use jffs2::mount::{Attr, View, ViewError};

/// How long the kernel may keep attributes and entries: the image never changes.
const TTL: Duration = Duration::from_secs(3600);

/// The mounted image.
pub struct Served {
    /// The view every request is answered from.
    pub view: View<'static>,
    /// The kernel opens without asking (see [`zero_message_open`]).
    pub zero_open: bool,
}

/// Whether a kernel of FUSE protocol `major.minor` takes `ENOSYS` from `open` and `opendir`
/// as "no open needed": it then opens every file and directory without a message, keeping
/// the page cache (`FOPEN_KEEP_CACHE`) and caching directory listings (`FOPEN_CACHE_DIR`),
/// and sends no `release` (Linux 5.1, protocol 7.29). Opening a file of this read-only image
/// can only succeed, so the two requests a file costs are saved.
pub fn zero_message_open(major: u32, minor: u32) -> bool {
    (major, minor) >= (7, 29)
}

fn errno(e: &ViewError) -> Errno {
    Errno::from_i32(e.errno())
}

/// An inode number from the kernel as the image's (they are the same; larger ones do not
/// exist).
fn ino(i: INodeNo) -> u32 {
    u32::try_from(u64::from(i)).unwrap_or(u32::MAX)
}

fn kind(k: InodeKind) -> FileType {
    match k {
        InodeKind::Dir => FileType::Directory,
        InodeKind::Symlink => FileType::Symlink,
        InodeKind::Fifo => FileType::NamedPipe,
        InodeKind::Char => FileType::CharDevice,
        InodeKind::Block => FileType::BlockDevice,
        InodeKind::Socket => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

fn dtype(t: u8) -> FileType {
    match t {
        dt::DIR => FileType::Directory,
        dt::LNK => FileType::Symlink,
        dt::FIFO => FileType::NamedPipe,
        dt::CHR => FileType::CharDevice,
        dt::BLK => FileType::BlockDevice,
        dt::SOCK => FileType::Socket,
        _ => FileType::RegularFile,
    }
}

/// The kernel's `new_encode_dev`: what FUSE's `rdev` carries.
fn encode_dev(major: u32, minor: u32) -> u32 {
    (minor & 0xff) | (major << 8) | ((minor & !0xff) << 12)
}

fn time(secs: u32) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(u64::from(secs))
}

/// FUSE's attributes of `a`.
pub fn file_attr(a: &Attr) -> FileAttr {
    FileAttr {
        ino: INodeNo(u64::from(a.ino)),
        size: a.size,
        blocks: a.blocks,
        atime: time(a.atime),
        mtime: time(a.mtime),
        ctime: time(a.ctime),
        crtime: UNIX_EPOCH,
        kind: kind(a.kind),
        perm: (a.mode & 0o7777) as u16,
        nlink: a.nlink,
        uid: a.uid,
        gid: a.gid,
        rdev: a.rdev.map_or(0, |(ma, mi)| encode_dev(ma, mi)),
        blksize: jffs2::fs::PAGE_SIZE,
        flags: 0,
    }
}

/// Replies to a `getxattr`/`listxattr` of a value of `data`, for a buffer of `size` bytes
/// (0: only the length is asked).
fn xattr_reply(data: &[u8], size: u32, reply: ReplyXattr) {
    match u32::try_from(data.len()) {
        Ok(n) if size == 0 => reply.size(n),
        Ok(n) if n <= size => reply.data(data),
        _ => reply.error(Errno::from_i32(libc::ERANGE)),
    }
}

impl Filesystem for Served {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        let v = config.kernel_abi();
        self.zero_open = zero_message_open(v.0, v.1);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        match self.view.lookup(ino(parent), name.as_bytes()) {
            Ok(a) => reply.entry(&TTL, &file_attr(&a), Generation(0)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn getattr(&self, _req: &Request, i: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.view.attr(ino(i)) {
            Ok(a) => reply.attr(&TTL, &file_attr(&a)),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readlink(&self, _req: &Request, i: INodeNo, reply: ReplyData) {
        match self.view.readlink(ino(i)) {
            Ok(t) => reply.data(&t),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn open(&self, _req: &Request, _i: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.zero_open {
            return reply.error(Errno::ENOSYS);
        }
        // The image never changes: what the page cache holds stays valid.
        reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE);
    }

    fn opendir(&self, _req: &Request, _i: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.zero_open {
            return reply.error(Errno::ENOSYS);
        }
        reply.opened(FileHandle(0), FopenFlags::FOPEN_KEEP_CACHE);
    }

    fn read(
        &self,
        _req: &Request,
        i: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        match self.view.read(ino(i), offset, size as usize) {
            Ok(d) => reply.data(&d),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn readdir(
        &self,
        _req: &Request,
        i: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let skip = usize::try_from(offset).unwrap_or(usize::MAX);
        let mut k = offset;
        let listed = self.view.readdir_with(ino(i), skip, |e, t, name| {
            k += 1;
            // The offset of an entry is where the next read starts.
            reply.add(INodeNo(u64::from(e)), k, dtype(t), OsStr::from_bytes(name))
        });
        match listed {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn statfs(&self, _req: &Request, _i: INodeNo, reply: ReplyStatfs) {
        let s = self.view.statfs();
        reply.statfs(
            s.blocks, s.bfree, s.bavail, s.files, s.ffree, s.bsize, s.namelen, s.bsize,
        );
    }

    fn getxattr(&self, _req: &Request, i: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        match self.view.getxattr(ino(i), name.as_bytes()) {
            Ok(v) => xattr_reply(&v, size, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }

    fn listxattr(&self, _req: &Request, i: INodeNo, size: u32, reply: ReplyXattr) {
        match self.view.listxattr(ino(i)) {
            Ok(v) => xattr_reply(&v, size, reply),
            Err(e) => reply.error(errno(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers_as_the_kernel_encodes_them() {
        assert_eq!(encode_dev(4, 64), 0x440);
        assert_eq!(encode_dev(259, 300), 0x1032c | (300 & !0xff) << 12);
        assert_eq!(encode_dev(8, 1), 0x801);
    }

    #[test]
    fn zero_message_opens_from_protocol_7_29() {
        assert!(!zero_message_open(7, 28));
        assert!(zero_message_open(7, 29) && zero_message_open(7, 45));
    }
}
