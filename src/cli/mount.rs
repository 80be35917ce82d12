//! `jffs2-mount`: an image mounted read-only through FUSE ([`jffs2::mount::View`] served by
//! `mount/serve.rs`). The command line, the checks that give clear messages where FUSE is
//! missing, the background start (the parent returns once the mount is ready), signals and
//! unmounting.

mod serve;
mod watch;

use std::ffi::{CString, OsString};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use fuser::{Config, MountOption, SessionACL};
use jffs2::format::Endian;
use jffs2::mount::{View, ViewOptions, DEFAULT_CACHE_BYTES};
use jffs2::{Image, ImageError, ImageOptions};

use super::flags::mount::{FLAGS, OPT_CACHE_SIZE, OPT_OOBSIZE, OPT_PAGESIZE, OPT_THREADS};
use super::flags::{self, ALL};
use super::getopt::{text, Parsed};
use super::num::{erase_size, strtol, strtol_i32, EraseSizeError};
use super::Tool;

pub use super::flags::mount::help;

/// Exit status: mounted, served, or unmounted.
const EXIT_OK: i32 = 0;
/// The image cannot be read, or the mount or unmount failed.
const EXIT_FAILED: i32 = 1;
/// Usage error.
use super::EXIT_USAGE;

/// The device FUSE is reached through.
const DEV_FUSE: &str = "/dev/fuse";

/// The options, as they stand after the command line has been read in order.
#[derive(Debug, Default)]
struct Args {
    operands: Vec<OsString>,
    foreground: bool,
    unmount: bool,
    options: Vec<String>,
    erase: Option<u32>,
    endian: Option<Endian>,
    oobsize: usize,
    pagesize: usize,
    /// `--cache-size`; `None`: [`default_cache_bytes`] of the image.
    cache_bytes: Option<usize>,
    threads: usize,
    /// `--offset`, `--size`: the part of the image file mounted.
    window: super::flags::Window,
}

/// Runs jffs2-mount with `args` (without the program name); returns the exit status.
pub fn main(tool: &Tool, args: &[OsString]) -> i32 {
    let a = match parse(tool, args) {
        Ok(a) => a,
        Err(code) => return code,
    };
    if a.unmount {
        return match a.operands.first() {
            Some(dir) => unmount(tool, Path::new(dir), false),
            None => EXIT_USAGE,
        };
    }
    match (a.operands.first(), a.operands.get(1)) {
        (Some(image), Some(dir)) => mount(tool, &a, Path::new(image), Path::new(dir)),
        _ => EXIT_USAGE,
    }
}

/// Reads the command line in order (an error or `-h`/`-V` ends it with the status in `Err`),
/// then checks the operands.
fn parse(tool: &Tool, args: &[OsString]) -> Result<Args, i32> {
    let mut a = Args {
        pagesize: 2048,
        cache_bytes: None,
        threads: std::thread::available_parallelism().map_or(1, |n| n.get().min(8)),
        ..Args::default()
    };
    for p in flags::getopt(args, FLAGS, ALL) {
        match p {
            Parsed::Opt { id, arg } => a.apply(tool, id, arg)?,
            Parsed::Operand(w) => a.operands.push(w),
            Parsed::Error(msg) => return Err(tool.usage(&msg)),
        }
    }
    let want = if a.unmount { 1 } else { 2 };
    match a.operands.len() {
        n if n < want && a.unmount => Err(tool.usage("-u needs the mount point")),
        n if n < want => Err(tool.usage("an image and a mount point are needed")),
        n if n > want => {
            let extra = text(&a.operands[want]);
            Err(tool.usage(&format!("unexpected operand '{extra}'")))
        }
        _ => Ok(a),
    }
}

impl Args {
    /// Applies one option; `Err` holds the exit status when it ends the run (a usage error,
    /// or `-h`/`-V` done).
    fn apply(&mut self, tool: &Tool, id: u32, arg: Option<OsString>) -> Result<(), i32> {
        let s = arg.as_deref().map(text).unwrap_or_default();
        match id {
            0x66 /* f */ => self.foreground = true,
            0x75 /* u */ => self.unmount = true,
            0x6f /* o */ => self.options.extend(s.split(',').filter(|o| !o.is_empty()).map(str::to_string)),
            0x65 /* e */ => self.erase = Some(size_arg(tool, &s)?),
            0x6c /* l */ => self.endian = Some(Endian::Little),
            0x62 /* b */ => self.endian = Some(Endian::Big),
            OPT_OOBSIZE | OPT_PAGESIZE => {
                let v = strtol_i32(&s).unwrap_or(0);
                if v <= 0 {
                    return Err(tool.usage(&format!("bad size '{s}'")));
                }
                if id == OPT_OOBSIZE {
                    self.oobsize = v as usize;
                } else {
                    self.pagesize = v as usize;
                }
            }
            OPT_CACHE_SIZE => match super::num::size_up_to(&s, 1 << 40) {
                Some(v) if v >= 0 => self.cache_bytes = Some(v as usize),
                _ => return Err(tool.usage(&format!("--cache-size: bad size '{s}'"))),
            },
            OPT_THREADS => {
                let (v, rest) = strtol(&s);
                if !rest.is_empty() || !(1..=64).contains(&v) {
                    return Err(tool.usage(&format!("--threads: '{s}' is not between 1 and 64")));
                }
                self.threads = v as usize;
            }
            0x68 /* h */ => {
                return Err(tool.print(&help()).map_or(EXIT_FAILED, |()| EXIT_OK));
            }
            0x56 /* V */ => {
                let v = tool.version_line();
                return Err(tool.print(&v).map_or(EXIT_FAILED, |()| EXIT_OK));
            }
            _ => {
                if let Err(msg) = self.window.set(id, &s) {
                    return Err(tool.usage(&msg));
                }
            }
        }
        Ok(())
    }
}

/// An erase size in mkfs.jffs2's grammar.
fn size_arg(tool: &Tool, s: &str) -> Result<u32, i32> {
    match erase_size(s) {
        Ok((v, _)) => Ok(v),
        Err(EraseSizeError::Unrecognisable) => {
            Err(tool.usage(&format!("--erase-size: unrecognisable size '{s}'")))
        }
        Err(EraseSizeError::UnknownUnits) => {
            Err(tool.usage(&format!("--erase-size: unknown units in '{s}'")))
        }
        Err(EraseSizeError::OutOfRange) => {
            Err(tool.usage(&format!("--erase-size: '{s}' is out of range")))
        }
    }
}

/// The text of an I/O error with its errno name: `No such file or directory (ENOENT)`.
fn io_text(e: &io::Error) -> String {
    let s = e.to_string();
    let s = s.split(" (os error").next().unwrap_or(&s).to_string();
    match e.raw_os_error().and_then(errno_name) {
        Some(name) => format!("{s} ({name})"),
        None => s,
    }
}

/// The symbolic name of the errnos a mount meets.
fn errno_name(e: i32) -> Option<&'static str> {
    Some(match e {
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::EPERM => "EPERM",
        libc::ENODEV => "ENODEV",
        libc::ENXIO => "ENXIO",
        libc::EBUSY => "EBUSY",
        libc::ENOTDIR => "ENOTDIR",
        libc::EINVAL => "EINVAL",
        libc::ENOTCONN => "ENOTCONN",
        _ => return None,
    })
}

/// Whether the process runs as root (mounts and unmounts directly, not through fusermount3).
fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// The fusermount program an ordinary user mounts through: `FUSERMOUNT_PATH`, or
/// fusermount3 then fusermount in PATH, /sbin, /bin (where `fuser` looks).
fn fusermount() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FUSERMOUNT_PATH") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut dirs: Vec<PathBuf> = std::env::split_paths(&path).collect();
    dirs.extend(["/sbin", "/bin", "/usr/bin", "/usr/sbin"].map(PathBuf::from));
    for name in ["fusermount3", "fusermount"] {
        for d in &dirs {
            let p = d.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// The checks that turn FUSE's failures into clear messages: the mount point is a
/// directory, `/dev/fuse` exists (and opens, for root), and an ordinary user has fusermount3.
fn preflight(tool: &Tool, dir: &Path) -> Result<(), i32> {
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            tool.error(&format!("{}: not a directory (ENOTDIR)", dir.display()));
            return Err(EXIT_FAILED);
        }
        Err(e) => {
            tool.error(&format!("mount point {}: {}", dir.display(), io_text(&e)));
            return Err(EXIT_FAILED);
        }
    }
    // Root opens /dev/fuse itself; an ordinary user's fusermount3 (setuid root) does.
    let usable = if is_root() {
        std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(DEV_FUSE)
            .map(drop)
    } else {
        std::fs::metadata(DEV_FUSE).map(drop)
    };
    if let Err(e) = usable {
        tool.error(&format!(
            "cannot open {DEV_FUSE}: {} (is the fuse module loaded, and is {DEV_FUSE} given to this container?)",
            io_text(&e)
        ));
        return Err(EXIT_FAILED);
    }
    if !is_root() && fusermount().is_none() {
        tool.error(
            "fusermount3 not found (in PATH, /sbin, /bin): an ordinary user mounts through it; \
             install the fuse3 package, or mount as root",
        );
        return Err(EXIT_FAILED);
    }
    Ok(())
}

/// Unmounts `dir`: umount(2) as root, else `fusermount3 -u` (`lazy`: detached even if busy).
fn unmount(tool: &Tool, dir: &Path, lazy: bool) -> i32 {
    if is_root() {
        let Ok(c) = CString::new(dir.as_os_str().as_bytes()) else {
            return tool.usage("the mount point contains a NUL byte");
        };
        let flags = if lazy { libc::MNT_DETACH } else { 0 };
        // SAFETY: `c` is a valid NUL-terminated path.
        if unsafe { libc::umount2(c.as_ptr(), flags) } != 0 {
            let e = io::Error::last_os_error();
            tool.error(&format!("unmount {}: {}", dir.display(), io_text(&e)));
            return EXIT_FAILED;
        }
        return EXIT_OK;
    }
    let Some(prog) = fusermount() else {
        tool.error("fusermount3 not found (in PATH, /sbin, /bin): install the fuse3 package");
        return EXIT_FAILED;
    };
    let mut cmd = std::process::Command::new(&prog);
    cmd.arg(if lazy { "-uz" } else { "-u" }).arg("--").arg(dir);
    match cmd.status() {
        Ok(s) if s.success() => EXIT_OK,
        Ok(_) => EXIT_FAILED, // fusermount3 said why
        Err(e) => {
            tool.error(&format!("{}: {}", prog.display(), io_text(&e)));
            EXIT_FAILED
        }
    }
}

/// What a fork left this process as.
enum Forked {
    /// The parent: the mount is ready (or failed); exit with this status.
    Parent(i32),
    /// The child, which serves: tell the parent through this pipe once the mount is ready.
    Child(OwnedFd),
}

/// Forks (before any thread exists): the parent waits until the child writes to the pipe
/// that the mount is ready, or exits (then its status is the parent's).
fn daemonize(tool: &Tool) -> Result<Forked, i32> {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for the two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        tool.error(&format!("pipe: {}", io_text(&io::Error::last_os_error())));
        return Err(EXIT_FAILED);
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // SAFETY: the process is single-threaded here (nothing has been spawned yet).
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        tool.error(&format!("fork: {}", io_text(&io::Error::last_os_error())));
        return Err(EXIT_FAILED);
    }
    if pid == 0 {
        drop(rd);
        // SAFETY: setsid has no preconditions; the child leaves the terminal's session.
        unsafe { libc::setsid() };
        return Ok(Forked::Child(wr));
    }
    drop(wr);
    let mut byte = [0u8; 1];
    let mut f = std::fs::File::from(rd);
    if matches!(f.read(&mut byte), Ok(1)) {
        return Ok(Forked::Parent(EXIT_OK));
    }
    let mut status = 0;
    // SAFETY: `pid` is our child; `status` is a valid out-pointer.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        EXIT_FAILED
    };
    Ok(Forked::Parent(if code == 0 { EXIT_FAILED } else { code }))
}

/// Tells the waiting parent the mount is ready, then leaves the terminal: standard input,
/// output and error to /dev/null, the working directory `/`.
fn detach(ready: OwnedFd) {
    let mut f = std::fs::File::from(ready);
    let _ = f.write_all(b"R");
    drop(f);
    if let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    {
        for fd in 0..3 {
            // SAFETY: dup2 onto the standard descriptors; `null` stays open meanwhile.
            unsafe { libc::dup2(null.as_raw_fd(), fd) };
        }
    }
    let _ = std::env::set_current_dir("/");
}

/// The signals that end the mount: blocked in every thread (set before any is spawned, so
/// inherited), taken by one thread with `sigwait`.
fn ending_signals() -> libc::sigset_t {
    // SAFETY: a zeroed sigset_t is initialised by sigemptyset before use.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        set
    }
}

/// Blocks the ending signals in this thread and the threads it will start.
fn block_signals() {
    let set = ending_signals();
    // SAFETY: `set` is initialised; the old mask is not wanted.
    unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
}

/// A thread that, on SIGINT, SIGTERM or SIGHUP, unmounts `dir` (lazily: open files do not
/// keep it) and exits; the serving loop then ends with the process.
fn on_signals(dir: PathBuf) {
    let spawned = std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let set = ending_signals();
            let mut sig = 0;
            // SAFETY: `set` is initialised and `sig` is a valid out-pointer.
            unsafe { libc::sigwait(&set, &mut sig) };
            let tool = Tool {
                name: "jffs2-mount".into(),
            };
            std::process::exit(unmount(&tool, &dir, true));
        });
    if spawned.is_err() {
        // Without the thread the signals must not stay blocked.
        let set = ending_signals();
        // SAFETY: as in block_signals.
        unsafe { libc::pthread_sigmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut()) };
    }
}

/// FUSE's configuration from `-o` and the defaults: read-only, the image as the source
/// (`fsname`), `fuse.jffs2-mount` as the type.
fn fuse_config(tool: &Tool, a: &Args, image: &Path) -> Config {
    let mut c = Config::default();
    let mut fsname = image.display().to_string();
    let mut subtype = "jffs2-mount".to_string();
    let mut opts = vec![MountOption::RO];
    for o in &a.options {
        let simple = match o.as_str() {
            "ro" => None,
            "rw" => {
                tool.warning("-o rw ignored: the mount is read-only");
                None
            }
            "allow_other" => {
                c.acl = SessionACL::All;
                None
            }
            "allow_root" => {
                c.acl = SessionACL::RootAndOwner;
                None
            }
            "default_permissions" => Some(MountOption::DefaultPermissions),
            // Done by a watcher process of our own (mount/watch.rs), not by FUSE.
            "auto_unmount" => None,
            "dev" => Some(MountOption::Dev),
            "nodev" => Some(MountOption::NoDev),
            "suid" => Some(MountOption::Suid),
            "nosuid" => Some(MountOption::NoSuid),
            "exec" => Some(MountOption::Exec),
            "noexec" => Some(MountOption::NoExec),
            "atime" => Some(MountOption::Atime),
            "noatime" => Some(MountOption::NoAtime),
            "sync" => Some(MountOption::Sync),
            "async" => Some(MountOption::Async),
            "dirsync" => Some(MountOption::DirSync),
            // mount(8)'s own, meaningless to FUSE.
            "defaults" | "auto" | "noauto" | "user" | "users" | "nouser" | "owner" | "group"
            | "nofail" | "_netdev" => None,
            x if x.starts_with("x-") || x.starts_with("comment=") => None,
            x => {
                if let Some(n) = x.strip_prefix("fsname=") {
                    fsname = n.to_string();
                } else if let Some(n) = x.strip_prefix("subtype=") {
                    subtype = n.to_string();
                } else {
                    opts.push(MountOption::CUSTOM(x.to_string()));
                }
                None
            }
        };
        opts.extend(simple);
    }
    opts.push(MountOption::FSName(fsname));
    opts.push(MountOption::Subtype(subtype));
    c.mount_options = opts;
    c.n_threads = Some(a.threads.max(1));
    c
}

/// Opens the image (OOB bytes peeled first with `--oobsize`) and builds the view: the
/// model Linux would mount, or, where Linux would refuse, what can be read of it (a warning
/// names why).
fn open_view(tool: &Tool, a: &Args, image: &Path) -> Result<View<'static>, i32> {
    let shown = image.display();
    let opts = ImageOptions {
        erase_size: a.erase,
        endian: a.endian,
        // A geometry given by hand opens what the detection finds no node in.
        insist: a.endian.is_some() || a.erase.is_some(),
        quick_detect: true,
        trim: Some((trim_limit(image_len(image)), TRIM_PERIOD)),
        window: a.window.window(),
        ..ImageOptions::default()
    };
    let opened = if a.oobsize > 0 {
        // The window is on the raw file, OOB bytes included.
        let read = jffs2::input::read_image_path(image).and_then(|mut v| {
            if let Some(w) = opts.window {
                w.cut(&mut v)?;
            }
            Ok(v)
        });
        let mut v = read.map_err(|e| {
            tool.error(&format!("open input file {shown}: {}", io_text(&e)));
            EXIT_FAILED
        })?;
        let opts = ImageOptions {
            window: None,
            ..opts
        };
        if let Err(e) = jffs2::dump::peel_oob(&mut v, a.pagesize, a.oobsize) {
            tool.error(&format!("{shown}: {e}"));
            return Err(EXIT_FAILED);
        }
        Image::from_vec_with(v, &opts)
    } else {
        Image::open_with(image, &opts)
    };
    let opened = match opened {
        Ok(i) => i,
        Err(ImageError::Io { error, .. }) => {
            tool.error(&format!("open input file {shown}: {}", io_text(&error)));
            return Err(EXIT_FAILED);
        }
        Err(e) => {
            tool.error(&format!("{shown}: {e}"));
            return Err(EXIT_FAILED);
        }
    };
    // The image lives as long as the process serves it.
    let opened: &'static Image<'static> = Box::leak(Box::new(opened));
    // The mapped image's pages the scan and the reads touch are dropped as they accumulate
    // (as for an extraction: `crate::mapped`'s module documentation), for as long as the
    // process serves the image, so that they do not count in its memory.
    std::mem::forget(opened.trimmer());
    let (fs, refused) = opened.salvage();
    if let Some(f) = refused {
        tool.warning(&format!(
            "{shown}: Linux would refuse to mount this image: {f}; mounting what can be read of it"
        ));
    }
    let cache_bytes = a
        .cache_bytes
        .unwrap_or_else(|| default_cache_bytes(opened.file_len()));
    Ok(View::new(fs, &ViewOptions { cache_bytes }))
}

/// How often (in the process's CPU time) the mapped image's resident pages are checked.
const TRIM_PERIOD: std::time::Duration = std::time::Duration::from_millis(2);

/// The size of the image file at `path` (0 if it cannot be read: the opening says why).
fn image_len(path: &Path) -> usize {
    std::fs::metadata(path).map_or(0, |m| usize::try_from(m.len()).unwrap_or(usize::MAX))
}

/// The growth of the mapped image's resident pages at which they are dropped: a 32nd of
/// the image, 2 to 12 MiB (with the cache's sixteenth and the model, the server stays within
/// a quarter of the image).
fn trim_limit(image_len: usize) -> usize {
    (image_len / 32).clamp(2 << 20, 12 << 20)
}

/// The decompressed-data cache without `--cache-size`: a sixteenth of the image, at most
/// [`DEFAULT_CACHE_BYTES`], at least 1 MiB, so that the server's memory stays a fraction
/// of the image it serves (`docs/MOUNT.md`).
fn default_cache_bytes(image_len: usize) -> usize {
    (image_len / 16).clamp(1 << 20, DEFAULT_CACHE_BYTES)
}

/// What root gives mount(2) for a configuration: the source (`fsname`), the flags and the
/// data (the `/dev/fuse` descriptor `fd`, the mount point's type `rootmode`, and the
/// subtype, so that the mount's type reads `fuse.jffs2-mount` as mount(8) and fstab name
/// it). FUSE's defaults, `nodev` and `nosuid`, unless `dev`/`suid` are given.
fn root_mount_args(c: &Config, fd: i32, rootmode: u32) -> (String, libc::c_ulong, String) {
    let mut source = DEV_FUSE.to_string();
    let mut data = format!("fd={fd},rootmode={rootmode:o},user_id=0,group_id=0");
    let (mut flags, mut dev, mut suid) = (0, false, false);
    for o in &c.mount_options {
        match o {
            MountOption::FSName(n) => source = n.clone(),
            MountOption::Subtype(t) => data.push_str(&format!(",subtype={t}")),
            MountOption::CUSTOM(x) => data.push_str(&format!(",{x}")),
            MountOption::DefaultPermissions => data.push_str(",default_permissions"),
            MountOption::RO => flags |= libc::MS_RDONLY,
            MountOption::NoDev => flags |= libc::MS_NODEV,
            MountOption::NoSuid => flags |= libc::MS_NOSUID,
            MountOption::NoExec => flags |= libc::MS_NOEXEC,
            MountOption::NoAtime => flags |= libc::MS_NOATIME,
            MountOption::Sync => flags |= libc::MS_SYNCHRONOUS,
            MountOption::DirSync => flags |= libc::MS_DIRSYNC,
            MountOption::Dev => dev = true,
            MountOption::Suid => suid = true,
            MountOption::RW
            | MountOption::Exec
            | MountOption::Atime
            | MountOption::Async
            | MountOption::AutoUnmount => {}
        }
    }
    if !dev {
        flags |= libc::MS_NODEV;
    }
    if !suid {
        flags |= libc::MS_NOSUID;
    }
    // allow_root is allow_other for the kernel; the session refuses the others itself.
    if c.acl != SessionACL::Owner {
        data.push_str(",allow_other");
    }
    (source, flags, data)
}

/// Root's mount: `/dev/fuse` opened and mounted on `dir` with mount(2), the session served
/// on that descriptor. (Not `fuser::Session::new`, whose session unmounts its mount point by
/// path when it ends, even after a lazy unmount: a new mount made there meanwhile would go.)
fn root_session(
    served: serve::Served,
    dir: &Path,
    config: Config,
) -> io::Result<fuser::Session<serve::Served>> {
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let dev = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC)
        .open(DEV_FUSE)?;
    let rootmode = std::fs::metadata(dir)?.mode() & libc::S_IFMT;
    let (source, flags, data) = root_mount_args(&config, dev.as_raw_fd(), rootmode);
    let c = |s: &[u8]| CString::new(s).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL));
    let (source, target) = (c(source.as_bytes())?, c(dir.as_os_str().as_bytes())?);
    let data = c(data.as_bytes())?;
    // SAFETY: every pointer is a valid NUL-terminated string that outlives the call.
    let r = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            c"fuse".as_ptr(),
            flags,
            data.as_ptr().cast(),
        )
    };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    let acl = config.acl;
    fuser::Session::from_fd(served, OwnedFd::from(dev), acl, config)
}

/// An option value for fusermount3's `-o`: commas and backslashes escaped.
fn escape_option(v: &str) -> String {
    v.replace('\\', "\\\\").replace(',', "\\,")
}

/// fusermount3's `-o` text for a configuration.
fn fusermount_options(c: &Config) -> String {
    let mut v: Vec<String> = c
        .mount_options
        .iter()
        .map(|o| match o {
            MountOption::FSName(n) => format!("fsname={}", escape_option(n)),
            MountOption::Subtype(n) => format!("subtype={}", escape_option(n)),
            MountOption::CUSTOM(x) => x.clone(),
            MountOption::AutoUnmount => "auto_unmount".into(),
            MountOption::DefaultPermissions => "default_permissions".into(),
            MountOption::Dev => "dev".into(),
            MountOption::NoDev => "nodev".into(),
            MountOption::Suid => "suid".into(),
            MountOption::NoSuid => "nosuid".into(),
            MountOption::RW => "rw".into(),
            MountOption::Exec => "exec".into(),
            MountOption::NoExec => "noexec".into(),
            MountOption::Atime => "atime".into(),
            MountOption::NoAtime => "noatime".into(),
            MountOption::DirSync => "dirsync".into(),
            MountOption::Sync => "sync".into(),
            MountOption::Async => "async".into(),
            MountOption::RO => "ro".into(),
        })
        .collect();
    if c.acl != SessionACL::Owner {
        v.push("allow_other".into());
    }
    v.join(",")
}

/// An ordinary user's mount: fusermount3 (setuid root) opens `/dev/fuse`, mounts it on
/// `dir` and passes the descriptor back over a socket (its `_FUSE_COMMFD` protocol); the
/// session is served on that descriptor. fusermount3 opens `/dev/fuse` with the user's
/// rights, not root's: a `/dev/fuse` given to root alone (`crw-------`) fails here.
fn user_session(
    served: serve::Served,
    dir: &Path,
    config: Config,
) -> io::Result<fuser::Session<serve::Served>> {
    use std::os::unix::process::CommandExt;
    let prog = fusermount().ok_or_else(|| io::Error::from_raw_os_error(libc::ENOENT))?;
    let mut sv = [0; 2];
    // SAFETY: `sv` has room for the two descriptors.
    if unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_CLOEXEC,
            0,
            sv.as_mut_ptr(),
        )
    } != 0
    {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned here alone.
    let (ours, theirs) = unsafe { (OwnedFd::from_raw_fd(sv[0]), OwnedFd::from_raw_fd(sv[1])) };
    let raw = theirs.as_raw_fd();
    let mut cmd = std::process::Command::new(&prog);
    cmd.arg("-o")
        .arg(fusermount_options(&config))
        .arg("--")
        .arg(dir)
        .env("_FUSE_COMMFD", raw.to_string())
        .stdin(std::process::Stdio::null());
    // SAFETY: only fcntl, async-signal-safe, runs between fork and exec: fusermount3
    // inherits its end of the socket.
    unsafe {
        cmd.pre_exec(move || {
            if libc::fcntl(raw, libc::F_SETFD, 0) == -1 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        })
    };
    let mut child = cmd.spawn()?;
    drop(theirs);
    // The descriptor comes before fusermount3 exits; an end of the socket without one means
    // it failed and said why.
    let received = receive_fd(&ours);
    let _ = child.wait();
    let Ok(fd) = received else {
        return Err(io::Error::other(format!("{} failed", prog.display())));
    };
    let acl = config.acl;
    fuser::Session::from_fd(served, fd, acl, config)
}

/// The descriptor passed over `sock` (`SCM_RIGHTS`).
fn receive_fd(sock: &OwnedFd) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // Room for one descriptor, aligned for cmsghdr.
    let mut control = [0u64; 8];
    // SAFETY: a zeroed msghdr is valid; every pointer set below outlives the call.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.as_mut_ptr().cast();
    msg.msg_controllen = std::mem::size_of_val(&control) as _;
    let n = loop {
        // SAFETY: `msg` describes valid buffers.
        let n = unsafe { libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 || io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            break n;
        }
    };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `msg` was filled by recvmsg; CMSG_FIRSTHDR checks the length.
    let cmsg = unsafe { libc::CMSG_FIRSTHDR(&msg) };
    // SAFETY: `cmsg` is checked for null before it is read.
    let ok = !cmsg.is_null()
        && unsafe {
            (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS
        };
    if !ok {
        return Err(io::Error::other(
            "fusermount3 passed no /dev/fuse descriptor",
        ));
    }
    // SAFETY: an SCM_RIGHTS message carries at least one int; it is ours to own now.
    let fd = unsafe { std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast::<libc::c_int>()) };
    // SAFETY: the kernel installed `fd` in this process for us.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Mounts `image` on `dir` and serves it until unmounted (or a signal).
fn mount(tool: &Tool, a: &Args, image: &Path, dir: &Path) -> i32 {
    if let Err(code) = preflight(tool, dir) {
        return code;
    }
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (image, dir) = (abs(image), abs(dir));
    let config = fuse_config(tool, a, &image);
    let mut ready = if a.foreground {
        None
    } else {
        match daemonize(tool) {
            Ok(Forked::Parent(code)) | Err(code) => return code,
            Ok(Forked::Child(fd)) => Some(fd),
        }
    };
    block_signals();
    let mut watch = None;
    if a.options.iter().any(|o| o == "auto_unmount") {
        match watch::start(tool, &dir, a.foreground, &mut ready) {
            Ok(watch::Started::Server(w)) => watch = Some(w),
            Ok(watch::Started::Watcher(code)) => return code,
            Err(e) => {
                tool.error(&format!("auto_unmount: {}: {}", dir.display(), io_text(&e)));
                return EXIT_FAILED;
            }
        }
    }
    let view = match open_view(tool, a, &image) {
        Ok(v) => v,
        Err(code) => return code,
    };
    let served = serve::Served {
        view,
        zero_open: false,
    };
    let session = if is_root() {
        root_session(served, &dir, config)
    } else {
        user_session(served, &dir, config)
    };
    let session = match session {
        Ok(s) => s,
        Err(e) => {
            tool.error(&format!(
                "mount {} on {}: {}",
                image.display(),
                dir.display(),
                io_text(&e)
            ));
            return EXIT_FAILED;
        }
    };
    if let Some(w) = &mut watch {
        w.mounted();
    }
    on_signals(dir.clone());
    if let Some(fd) = ready {
        detach(fd);
    }
    match session.run() {
        Ok(()) => EXIT_OK,
        Err(e) => {
            tool.error(&format!("serving {}: {}", dir.display(), io_text(&e)));
            EXIT_FAILED
        }
    }
}

/// The mount options of a configuration, as debug text (for the tests).
#[cfg(test)]
fn option_names(c: &Config) -> Vec<String> {
    c.mount_options.iter().map(|o| format!("{o:?}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Result<Args, i32> {
        let v: Vec<OsString> = words.iter().map(OsString::from).collect();
        parse(
            &Tool {
                name: "jffs2-mount".into(),
            },
            &v,
        )
    }

    #[test]
    fn mount8_argument_form_and_options() {
        // mount.fuse3 runs the helper as `jffs2-mount SOURCE DIR -o OPTS`.
        let a = args(&[
            "img",
            "/mnt",
            "-o",
            "rw,allow_other,nosuid,fsname=fw,x-systemd.foo,big_writes",
        ])
        .unwrap();
        assert_eq!(a.operands, ["img", "/mnt"].map(OsString::from));
        let c = fuse_config(&Tool { name: "t".into() }, &a, Path::new("/i"));
        assert_eq!(c.acl, SessionACL::All);
        let names = option_names(&c);
        assert_eq!(
            names,
            [
                "RO",
                "NoSuid",
                "CUSTOM(\"big_writes\")",
                "FSName(\"fw\")",
                "Subtype(\"jffs2-mount\")"
            ]
        );
        assert!(args(&["-u", "/mnt"]).is_ok_and(|a| a.unmount));
        assert_eq!(args(&["img"]).err(), Some(EXIT_USAGE));
        assert_eq!(args(&["-u"]).err(), Some(EXIT_USAGE));
        assert_eq!(args(&["a", "b", "c"]).err(), Some(EXIT_USAGE));
        assert_eq!(args(&["--threads=0", "a", "b"]).err(), Some(EXIT_USAGE));
        assert_eq!(args(&["a", "b"]).unwrap().cache_bytes, None);
        assert_eq!(default_cache_bytes(128 << 20), 8 << 20);
        assert_eq!(default_cache_bytes(2 << 30), DEFAULT_CACHE_BYTES);
        assert_eq!(default_cache_bytes(100), 1 << 20);
        assert_eq!(trim_limit(128 << 20), 4 << 20);
        let a = args(&["--cache-size=1MiB", "-e", "128KiB", "-b", "a", "b"]).unwrap();
        assert_eq!(
            (a.cache_bytes.unwrap_or(0), a.erase, a.endian),
            (1 << 20, Some(128 << 10), Some(Endian::Big))
        );
    }

    #[test]
    fn options_for_fusermount3_and_for_the_kernel() {
        let a = args(&["i", "d", "-o", "allow_root,noexec,fsname=a\\b,c"]).unwrap();
        let c = fuse_config(&Tool { name: "t".into() }, &a, Path::new("/i"));
        assert_eq!(
            fusermount_options(&c),
            "ro,noexec,c,fsname=a\\\\b,subtype=jffs2-mount,allow_other"
        );
        // The default fsname, the image's path, may hold a comma.
        let a = args(&["i", "d"]).unwrap();
        let c = fuse_config(&Tool { name: "t".into() }, &a, Path::new("/fw,1.img"));
        assert_eq!(
            fusermount_options(&c),
            "ro,fsname=/fw\\,1.img,subtype=jffs2-mount"
        );
        assert_eq!(escape_option("a,b\\c"), "a\\,b\\\\c");
        // Root gives the subtype to the kernel itself, with FUSE's defaults.
        let (source, flags, data) = root_mount_args(&c, 5, 0o40000);
        assert_eq!(source, "/fw,1.img");
        assert_eq!(flags, libc::MS_RDONLY | libc::MS_NODEV | libc::MS_NOSUID);
        assert_eq!(
            data,
            "fd=5,rootmode=40000,user_id=0,group_id=0,subtype=jffs2-mount"
        );
        let a = args(&["i", "d", "-o", "dev,suid,noexec,allow_root"]).unwrap();
        let c = fuse_config(&Tool { name: "t".into() }, &a, Path::new("/i"));
        let (_, flags, data) = root_mount_args(&c, 5, 0o40000);
        assert_eq!(flags, libc::MS_RDONLY | libc::MS_NOEXEC);
        assert!(data.ends_with(",allow_other"), "{data}");
    }

    #[test]
    fn errno_names_in_messages() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(io_text(&e), "No such file or directory (ENOENT)");
    }
}
