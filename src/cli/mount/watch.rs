//! `-o auto_unmount`: a watcher process that unmounts the mount point when the server dies,
//! however it dies (`kill -9` included).
//!
//! jffs2-mount does not leave this to fusermount3's own `auto_unmount`: root mounts without
//! fusermount3, and fusermount3 (3.14, Debian 12's) decides that the server is gone by
//! opening the mount point as root and expecting `ENOTCONN`, but FUSE refuses every user
//! but the mounting one (`EACCES`) on a mount without `allow_other`, so the mount stays.
//!
//! The watcher is forked before the server starts any thread and before it opens the image
//! or `/dev/fuse`, so it holds neither. Once mounted, the server writes the mount's device
//! number (`major:minor`, from `/proc/self/mountinfo`) into a pipe whose write end only it
//! holds. When the pipe ends (the server exited or was killed), the watcher unmounts, lazily,
//! only if that same mount is still on the mount point and its server is gone (opening it
//! fails with `ENOTCONN` or `ECONNABORTED`), as fusermount3 checks: as root with
//! `umount2(MNT_DETACH)`, otherwise with `fusermount3 -u -z`.

use std::io::{self, Read, Write};
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::super::Tool;

/// The server's end of the watcher's pipe: dropped (or the process gone), the watcher acts.
pub struct Watch {
    tx: std::fs::File,
    dir: PathBuf,
}

/// What a fork left this process as.
pub enum Started {
    /// The server, with its end of the pipe.
    Server(Watch),
    /// The watcher, done: exit with this status.
    Watcher(i32),
}

/// Forks the watcher of the mount to be made on `dir`. Call while the process is
/// single-threaded. In the watcher, `close` (the background parent's ready pipe) is closed,
/// standard input and output go to /dev/null, and standard error too unless
/// `keep_stderr`.
pub fn start(
    tool: &Tool,
    dir: &Path,
    keep_stderr: bool,
    close: &mut Option<OwnedFd>,
) -> io::Result<Started> {
    // The mount point as /proc/self/mountinfo will name it (resolved now: once mounted, a
    // path through it would ask the server, which does not answer yet).
    let dir = std::fs::canonicalize(dir)?;
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    let (rx, tx) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the caller guarantees a single-threaded process.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    if pid > 0 {
        drop(rx);
        let tx = std::fs::File::from(tx);
        return Ok(Started::Server(Watch { tx, dir }));
    }
    drop(tx);
    drop(close.take());
    quiet(keep_stderr);
    Ok(Started::Watcher(watch(tool, rx, &dir)))
}

/// Standard input and output (and error, unless `keep_stderr`) to /dev/null; the working
/// directory `/` (the watcher must not keep the mount point busy).
fn quiet(keep_stderr: bool) {
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        use std::os::fd::AsRawFd;
        let last = if keep_stderr { 1 } else { 2 };
        for fd in 0..=last {
            // SAFETY: dup2 onto the standard descriptors; `null` stays open meanwhile.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    let _ = std::env::set_current_dir("/");
}

impl Watch {
    /// Tells the watcher which mount to watch: the one now on the mount point.
    pub fn mounted(&mut self) {
        let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        if let Some(dev) = mount_device(&info, &self.dir) {
            let _ = self.tx.write_all(format!("{dev}\n").as_bytes());
        }
    }
}

/// Waits until the server is gone, then unmounts its mount if it is still there, dead.
fn watch(tool: &Tool, rx: OwnedFd, dir: &Path) -> i32 {
    let mut told = Vec::new();
    // Returns at the end of the pipe: the server exited or was killed.
    let _ = std::fs::File::from(rx).read_to_end(&mut told);
    let told = String::from_utf8_lossy(&told);
    let Some(dev) = told.lines().next().filter(|d| !d.is_empty()) else {
        return 0; // nothing was mounted
    };
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    if mount_device(&info, dir).as_deref() != Some(dev) {
        return 0; // unmounted already (or another mount is there now)
    }
    // A request to a mount whose server is gone fails with ENOTCONN (or, if it was made
    // just before the kernel noticed, ECONNABORTED). A live mount is left alone.
    match std::fs::File::open(dir) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::ENOTCONN | libc::ECONNABORTED)) => {
            super::unmount(tool, dir, true)
        }
        _ => 0,
    }
}

/// The device number (`major:minor`) of the topmost mount on `dir` in `info`
/// (`/proc/self/mountinfo`'s text, whose mount points escape space, tab, newline and
/// backslash as octal).
fn mount_device(info: &str, dir: &Path) -> Option<String> {
    let want = dir.as_os_str().as_bytes();
    info.lines().rev().find_map(|l| {
        let mut f = l.split(' ');
        let dev = f.nth(2)?;
        let point = f.nth(1)?;
        (unescape(point) == want).then(|| dev.to_string())
    })
}

/// A mountinfo field with its `\NNN` octal escapes undone.
fn unescape(s: &str) -> Vec<u8> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut k = 0;
    while k < b.len() {
        let octal = b
            .get(k + 1..k + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[k], octal) {
            (b'\\', Some(d)) => {
                out.push(
                    d.iter()
                        .fold(0u8, |v, c| v.wrapping_mul(8).wrapping_add(c - b'0')),
                );
                k += 4;
            }
            (c, _) => {
                out.push(c);
                k += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_topmost_mount_on_a_path_with_escapes() {
        let info = "\
22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:51 / /tmp/a\\040b rw,nosuid shared:2 - fuse.jffs2-mount /i ro,user_id=0
41 40 0:52 / /tmp/a\\040b rw,nosuid shared:3 - fuse.jffs2-mount /j ro,user_id=0
";
        assert_eq!(
            mount_device(info, Path::new("/tmp/a b")).as_deref(),
            Some("0:52")
        );
        assert_eq!(mount_device(info, Path::new("/tmp/a")), None);
        assert_eq!(mount_device(info, Path::new("/")).as_deref(), Some("254:0"));
        assert_eq!(unescape("a\\134b\\011\\0"), b"a\\b\t\\0");
    }
}
