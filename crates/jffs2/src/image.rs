//! Opening an image: the one way in.
//!
//! Reading a JFFS2 image takes the same steps whatever is done with it afterwards, and each
//! is easy to forget on its own:
//!
//! 1. refuse what is not JFFS2 at all: an empty input, a directory, something with no node
//!    header in either byte order ([`ImageError`]) — an all-0xFF image is erased flash, which
//!    Linux mounts as an empty filesystem, and opens;
//! 2. detect the byte order and the erase size ([`crate::scan::detect()`]), unless given
//!    ([`ImageOptions`]);
//! 3. pad the image with 0xFF to whole erase blocks, at least five, as it would be flashed
//!    into the smallest partition Linux mounts (`docs/spec/kernel-jffs2-spec.md` §2,
//!    [`crate::scan::flashed_len`]): an mkfs.jffs2 image ends right after its last node;
//! 4. scan it as the mount does ([`crate::scan::scan`]) and stop where Linux would refuse
//!    the mount ([`crate::scan::Scan::failure`], [`MountError`]);
//! 5. build the filesystem model ([`crate::fs::Fs::from_scan`]).
//!
//! [`Image`] does 1–3 when it is opened and [`Image::mount`] does 4–5, returning a model
//! ([`Fs`]) that owns its scan:
//!
//! ```
//! # let dir = tempfile::tempdir()?;
//! # std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
//! # let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
//! # let mut bytes = Vec::new();
//! # jffs2::mkfs::build(&tree, &Default::default(), &mut bytes, &mut jffs2::mkfs::NullSink)?;
//! # let path = dir.path().join("fw.img");
//! # std::fs::write(&path, &bytes)?;
//! let image = jffs2::Image::open(&path)?;
//! let fs = image.mount()?;
//! assert_eq!(fs.read_file(b"/motd")?, b"Welcome\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Where Linux would refuse the mount, [`Image::salvage`] still builds the model (what
//! `jffs2-dump --extract` recovers, with a warning) and returns the reason beside it; fsck,
//! which reports rather than fails, works from [`Image::scan`].
//!
//! Files read in one call ([`Fs::read_file`]) or through [`std::io::Read`] and
//! [`std::io::Seek`] ([`Fs::open_file`], [`FileReader`]).

use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::format::Endian;
use crate::fs::{lookup, LookupError};
use crate::fs::{Fs, FsError, FsOptions, Inode, InodeKind};
use crate::mapped::{ImageMap, Trimmer, Window};
use crate::scan::{self, Detection, Geometry, MountFailure, Scan, ScanOptions};

/// How an image is opened and mounted. The default detects everything and mounts as the
/// reference kernel does (read-only, summaries and xattrs on).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ImageOptions {
    /// The erase size, instead of the detected one.
    pub erase_size: Option<u32>,
    /// The byte order, instead of the detected one.
    pub endian: Option<Endian>,
    /// The cleanmarker size the kernel expects (`c->cleanmarker_size`: 12 on plain NOR, 0 on
    /// NAND, `docs/spec/kernel-jffs2-spec.md` §1.6), instead of the detected one: what a
    /// device's MTD type decides, which the image alone may not show.
    pub cleanmarker_size: Option<u32>,
    /// Open an input the detection finds no node in (an empty one included) rather than
    /// refuse it as not JFFS2: for a caller who knows better (a geometry given by hand).
    pub insist: bool,
    /// Detect on the first 16 MiB of an image larger than 32 MiB when that is conclusive
    /// (confidence 0.9 or more), on all of it otherwise. The evaluation of candidate erase
    /// sizes touches a page at every candidate block boundary, which maps a whole large
    /// image; a prefix holds all the evidence a consistent image has and keeps memory low.
    pub quick_detect: bool,
    /// For an image opened from a path and mapped: drop the mapping's resident pages when
    /// they grow by `.0` bytes, checked every `.1` of CPU time, while the detection runs and
    /// under [`Image::trimmer`] (see [`crate::mapped::Trimmer`]).
    pub trim: Option<(usize, Duration)>,
    /// With `trim`: drop the pages only while the whole process holds more than the image
    /// and this many bytes (0: whenever they grew by `trim.0`), as
    /// [`crate::mapped::ImageMap::trimmer_keeping`]: a reader that goes over the image more
    /// than once keeps it resident, unless what it builds is large next to it.
    pub trim_keep: usize,
    /// Read only this part of the file ([`Window`]: a partition of a full-flash dump, an
    /// image inside an update file), as if it had been cut out: offsets in every report count
    /// from its start. `None`: the whole file. Applied when the image is opened from a path
    /// ([`Image::open_with`]), and by the tools when they map or read their input.
    pub window: Option<Window>,
    /// The kernel options of the mount scan.
    pub scan: ScanOptions,
    /// The options of the filesystem model.
    pub fs: FsOptions,
}

/// Why an input is not a JFFS2 image at all (or cannot be read).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ImageError {
    /// The input could not be opened or read. The message is the path and the error (not
    /// also given as [`std::error::Error::source`], so that a chain prints it once).
    #[error("{}{error}", named(path))]
    Io {
        /// The input (empty for an image in memory).
        path: PathBuf,
        /// Why.
        error: io::Error,
    },
    /// The input is a directory.
    #[error("{}: Is a directory", .0.display())]
    Directory(PathBuf),
    /// The input is empty (an erased partition reads as 0xFF, never as nothing).
    #[error("not a JFFS2 image: the image is empty (0 bytes)")]
    Empty,
    /// The input is longer than the 4 GiB JFFS2's 32-bit offsets address.
    #[error("the image is {0} bytes; JFFS2 addresses at most 4 GiB")]
    TooLarge(u64),
    /// No node header (magic 0x1985 with a valid header CRC) in either byte order, and not
    /// erased flash; the detection says why ([`ImageError::why`]).
    #[error("not a JFFS2 image: {}", why(.0))]
    NotJffs2(Box<Detection>),
}

/// How the detection's evidence ends when it concludes (the message says it first).
const NOT_JFFS2: &str = ": not a JFFS2 image";

/// `PATH: ` before a message, or nothing for an image in memory (an empty path).
fn named(path: &Path) -> String {
    if path.as_os_str().is_empty() {
        String::new()
    } else {
        format!("{}: ", path.display())
    }
}

fn why(d: &Detection) -> String {
    d.evidence
        .last()
        .map(|w| w.trim_end_matches(NOT_JFFS2).to_string())
        .unwrap_or_else(|| "no JFFS2 node found".to_string())
}

impl ImageError {
    /// For [`ImageError::NotJffs2`], the detection's last piece of evidence (what it looked
    /// for and did not find), without its closing "not a JFFS2 image": the caller's message
    /// says that once, first.
    pub fn why(&self) -> Option<String> {
        match self {
            ImageError::NotJffs2(d) => Some(why(d)),
            _ => None,
        }
    }
}

/// Linux would refuse to mount the image ([`crate::scan::Scan::failure`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Linux would refuse to mount this image: {0}")]
pub struct MountError(pub MountFailure);

/// The image's bytes as flashed: the input followed by the 0xFF padding.
enum Bytes<'a> {
    Borrowed(&'a [u8]),
    Owned(Vec<u8>),
    Mapped(ImageMap),
}

/// A JFFS2 image, recognised and padded as flashed (see the module documentation). Opened
/// from a path ([`Image::open`]), bytes ([`Image::from_vec`], [`Image::from_bytes`],
/// [`Image::in_place`]) or a mapping ([`Image::from_map`]); mounted with [`Image::mount`].
pub struct Image<'a> {
    bytes: Bytes<'a>,
    file_len: usize,
    detection: Detection,
    geometry: Geometry,
    /// Offsets of the nodes the detection found: prefetch hints for the scan.
    hints: Vec<u32>,
    opts: ImageOptions,
    /// [`Image::trailing_data`], once found.
    trailing: std::sync::OnceLock<Option<scan::TrailingData>>,
}

/// The outcome of recognising an input: its detection, the geometry to read it with (the
/// options applied), and the detection's node offsets.
pub(crate) struct Recognised {
    pub(crate) detection: Detection,
    pub(crate) geometry: Geometry,
    pub(crate) hints: Vec<u32>,
}

/// Detection reads this much of a large image first with [`ImageOptions::quick_detect`]…
const DETECT_PREFIX: usize = 16 << 20;
/// …and all of it only when that is not conclusive.
const DETECT_SURE: f32 = 0.9;

/// Step 1 and 2 of the module documentation on the input `bytes` (unpadded), with the
/// detection's node offsets when `hints` (a scan's prefetch hints; 4 bytes a node).
pub(crate) fn recognise(
    bytes: &[u8],
    opts: &ImageOptions,
    hints: bool,
) -> Result<Recognised, ImageError> {
    if bytes.is_empty() && !opts.insist {
        return Err(ImageError::Empty);
    }
    if bytes.len() as u64 > crate::input::MAX_IMAGE_LEN {
        return Err(ImageError::TooLarge(bytes.len() as u64));
    }
    let (detection, hints) = detect(bytes, opts.quick_detect, hints);
    // Erased flash has a (low) confidence: only an input with neither nodes nor 0xFF is 0.
    if detection.confidence <= 0.0 && !opts.insist {
        return Err(ImageError::NotJffs2(Box::new(detection)));
    }
    let mut geometry = detection.geometry;
    if let Some(e) = opts.endian {
        geometry.endian = e;
    }
    if let Some(es) = opts.erase_size {
        geometry.erase_size = es;
    }
    if let Some(cm) = opts.cleanmarker_size {
        geometry.cleanmarker_size = cm;
    }
    Ok(Recognised {
        detection,
        geometry,
        hints,
    })
}

/// An image in memory, as the entry points that work on bytes take it (`fsck::check`,
/// `sumtool::analyse`): they pad it with 0xFF to whole erase blocks, as flashed, and the
/// form given says where that padding may go. `&[u8]`, `&Vec<u8>`, `&mut Vec<u8>` convert
/// into it.
#[derive(Debug)]
pub enum ImageBytes<'a> {
    /// Borrowed, never written: a padded copy is made when the image does not end on whole
    /// erase blocks.
    Borrowed(&'a [u8]),
    /// A buffer resized and padded in place (give it spare capacity to avoid a reallocation).
    Vec(&'a mut Vec<u8>),
    /// The image is `buf[..len]`; the room after it receives the padding (a padded copy is
    /// made when it is too small). Bytes before `len` are never written.
    InPlace(&'a mut [u8], usize),
}

impl<'a> ImageBytes<'a> {
    /// The image as given, before any padding.
    pub fn bytes(&self) -> &[u8] {
        match self {
            ImageBytes::Borrowed(b) => b,
            ImageBytes::Vec(v) => v,
            ImageBytes::InPlace(buf, len) => &buf[..(*len).min(buf.len())],
        }
    }

    /// The image padded with 0xFF to `want` bytes (never shortened), and how much of the
    /// caller's buffer now holds it: the padded length when padded in place, else the
    /// length as given (a copy was padded).
    pub fn pad(self, want: usize) -> (std::borrow::Cow<'a, [u8]>, usize) {
        use std::borrow::Cow;
        match self {
            ImageBytes::Borrowed(b) if want <= b.len() => (Cow::Borrowed(b), b.len()),
            ImageBytes::Borrowed(b) => {
                let mut v = Vec::with_capacity(want);
                v.extend_from_slice(b);
                v.resize(want, 0xFF);
                (Cow::Owned(v), b.len())
            }
            ImageBytes::Vec(v) => {
                if want > v.len() {
                    v.resize(want, 0xFF);
                }
                let v: &'a Vec<u8> = v;
                (Cow::Borrowed(v.as_slice()), v.len())
            }
            ImageBytes::InPlace(buf, len) => {
                let len = len.min(buf.len());
                let padded = pad_in_place(buf, len, want);
                let held = match &padded {
                    Cow::Borrowed(b) => b.len(),
                    Cow::Owned(_) => len,
                };
                (padded, held)
            }
        }
    }
}

impl<'a> From<&'a [u8]> for ImageBytes<'a> {
    fn from(b: &'a [u8]) -> Self {
        ImageBytes::Borrowed(b)
    }
}

impl<'a> From<&'a Vec<u8>> for ImageBytes<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        ImageBytes::Borrowed(v)
    }
}

impl<'a, const N: usize> From<&'a [u8; N]> for ImageBytes<'a> {
    fn from(b: &'a [u8; N]) -> Self {
        ImageBytes::Borrowed(b)
    }
}

impl<'a> From<&'a mut Vec<u8>> for ImageBytes<'a> {
    fn from(v: &'a mut Vec<u8>) -> Self {
        ImageBytes::Vec(v)
    }
}

/// `buf[..len]` padded with 0xFF to `want` bytes as flashed: in `buf`'s room after `len` when
/// it has enough (no copy of the image), else a padded copy. Bytes before `len` are never
/// written.
pub(crate) fn pad_in_place(buf: &mut [u8], len: usize, want: usize) -> std::borrow::Cow<'_, [u8]> {
    let len = len.min(buf.len());
    let want = want.max(len);
    if want <= buf.len() {
        let (padded, _) = buf.split_at_mut(want);
        padded[len..].fill(0xFF);
        std::borrow::Cow::Borrowed(padded)
    } else {
        let mut v = buf[..len].to_vec();
        v.resize(want, 0xFF);
        std::borrow::Cow::Owned(v)
    }
}

/// The detection, on a prefix of a large image when `quick` (see
/// [`ImageOptions::quick_detect`]), with the node offsets of a whole-image detection when
/// `hints`.
fn detect(image: &[u8], quick: bool, hints: bool) -> (Detection, Vec<u32>) {
    if quick && image.len() > 2 * DETECT_PREFIX {
        let mut d = scan::detect(&image[..DETECT_PREFIX]);
        if d.confidence >= DETECT_SURE {
            d.evidence.push(format!(
                "(detected on the first {} MiB of the image)",
                DETECT_PREFIX >> 20
            ));
            return (d, Vec::new());
        }
    }
    if hints {
        scan::detect::detect_with_nodes(image)
    } else {
        (scan::detect(image), Vec::new())
    }
}

impl Image<'static> {
    /// Opens the image file at `path` with the default options (see
    /// [`Image::open_with`]).
    pub fn open(path: impl AsRef<Path>) -> Result<Image<'static>, ImageError> {
        Self::open_with(path, &ImageOptions::default())
    }

    /// Opens the image at `path`: a regular file is memory-mapped (read-only, private; a
    /// file that shrinks while mapped reads as zeros instead of killing the process, see
    /// [`Image::changed`]), anything else (a pipe, a device) is read, up to the 4 GiB an
    /// image can hold ([`crate::input`]).
    pub fn open_with(
        path: impl AsRef<Path>,
        opts: &ImageOptions,
    ) -> Result<Image<'static>, ImageError> {
        let path = path.as_ref();
        let io_err = |error| ImageError::Io {
            path: path.to_path_buf(),
            error,
        };
        let meta = std::fs::metadata(path).map_err(io_err)?;
        if meta.is_dir() {
            return Err(ImageError::Directory(path.to_path_buf()));
        }
        let map = match ImageMap::open_in(path, opts.window, None) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                let mut v = crate::input::read_image_path(path).map_err(io_err)?;
                if let Some(w) = opts.window {
                    w.cut(&mut v).map_err(io_err)?;
                }
                return Self::from_vec_with(v, opts);
            }
            Err(e) => return Err(io_err(e)),
        };
        let r = {
            let _t = opts
                .trim
                .map(|(limit, period)| map.trimmer_keeping(limit, opts.trim_keep, period));
            recognise(map.file_bytes(), opts, true)?
        };
        let file_len = map.file_len();
        let want = scan::flashed_len(file_len, r.geometry.erase_size);
        let map = if want != file_len {
            // One mapping at a time: the detection's goes before the padded one comes.
            drop(map);
            ImageMap::open_in(path, opts.window, Some(want)).map_err(io_err)?
        } else {
            map
        };
        Ok(Self::assemble(Bytes::Mapped(map), file_len, r, opts))
    }

    /// An image in memory, with the default options.
    pub fn from_vec(bytes: Vec<u8>) -> Result<Image<'static>, ImageError> {
        Self::from_vec_with(bytes, &ImageOptions::default())
    }

    /// An image in memory, padded in place (give it spare capacity to avoid a reallocation).
    pub fn from_vec_with(
        mut bytes: Vec<u8>,
        opts: &ImageOptions,
    ) -> Result<Image<'static>, ImageError> {
        let r = recognise(&bytes, opts, true)?;
        let file_len = bytes.len();
        let want = scan::flashed_len(file_len, r.geometry.erase_size);
        if want > file_len {
            bytes
                .try_reserve_exact(want - file_len)
                .map_err(|_| ImageError::Io {
                    path: PathBuf::new(),
                    error: crate::input::out_of_memory(),
                })?;
            bytes.resize(want, 0xFF);
        }
        Ok(Self::assemble(Bytes::Owned(bytes), file_len, r, opts))
    }

    /// An image mapped by the caller ([`ImageMap::open`]): used as it is when the mapping
    /// already covers the padding (mapped with `pad_to`), else copied and padded.
    pub fn from_map(map: ImageMap, opts: &ImageOptions) -> Result<Image<'static>, ImageError> {
        let r = {
            let _t = opts
                .trim
                .map(|(limit, period)| map.trimmer_keeping(limit, opts.trim_keep, period));
            recognise(map.file_bytes(), opts, true)?
        };
        let file_len = map.file_len();
        let want = scan::flashed_len(file_len, r.geometry.erase_size);
        if map.bytes().len() >= want {
            return Ok(Self::assemble(Bytes::Mapped(map), file_len, r, opts));
        }
        let mut v = map.file_bytes().to_vec();
        v.resize(want, 0xFF);
        Ok(Self::assemble(Bytes::Owned(v), file_len, r, opts))
    }
}

impl<'a> Image<'a> {
    /// An image borrowed from the caller, with the default options.
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Image<'a>, ImageError> {
        Self::from_bytes_with(bytes, &ImageOptions::default())
    }

    /// An image borrowed from the caller: not copied when it already ends on a whole erase
    /// block (at least five), else copied and padded.
    pub fn from_bytes_with(bytes: &'a [u8], opts: &ImageOptions) -> Result<Image<'a>, ImageError> {
        let r = recognise(bytes, opts, true)?;
        let want = scan::flashed_len(bytes.len(), r.geometry.erase_size);
        let data = if want > bytes.len() {
            let mut v = Vec::with_capacity(want);
            v.extend_from_slice(bytes);
            v.resize(want, 0xFF);
            Bytes::Owned(v)
        } else {
            Bytes::Borrowed(bytes)
        };
        Ok(Self::assemble(data, bytes.len(), r, opts))
    }

    /// The image `buf[..len]`, padded with 0xFF in the room after it (a mapping with spare
    /// room: no copy of the image is made), or copied and padded when that room is too
    /// small. Bytes before `len` are never written.
    pub fn in_place(
        buf: &'a mut [u8],
        len: usize,
        opts: &ImageOptions,
    ) -> Result<Image<'a>, ImageError> {
        let len = len.min(buf.len());
        let r = recognise(&buf[..len], opts, true)?;
        let want = scan::flashed_len(len, r.geometry.erase_size);
        let data = match pad_in_place(buf, len, want) {
            std::borrow::Cow::Borrowed(b) => Bytes::Borrowed(b),
            std::borrow::Cow::Owned(v) => Bytes::Owned(v),
        };
        Ok(Self::assemble(data, len, r, opts))
    }

    /// The padded bytes (not for a mapping: `None`), the input's length and the recognition,
    /// for a reader that keeps them in its own type ([`crate::convert::Source`]).
    pub(crate) fn into_parts(self) -> Option<(std::borrow::Cow<'a, [u8]>, usize, Recognised)> {
        let bytes = match self.bytes {
            Bytes::Borrowed(b) => std::borrow::Cow::Borrowed(b),
            Bytes::Owned(v) => std::borrow::Cow::Owned(v),
            Bytes::Mapped(_) => return None,
        };
        let r = Recognised {
            detection: self.detection,
            geometry: self.geometry,
            hints: self.hints,
        };
        Some((bytes, self.file_len, r))
    }

    fn assemble(bytes: Bytes<'a>, file_len: usize, r: Recognised, opts: &ImageOptions) -> Self {
        Image {
            bytes,
            file_len,
            detection: r.detection,
            geometry: r.geometry,
            hints: r.hints,
            opts: *opts,
            trailing: std::sync::OnceLock::new(),
        }
    }

    /// The flash Linux would mount: the input followed by the 0xFF padding.
    pub fn flash(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Borrowed(b) => b,
            Bytes::Owned(v) => v,
            Bytes::Mapped(m) => m.bytes(),
        }
    }

    /// The input as given, without the padding.
    pub fn file_bytes(&self) -> &[u8] {
        self.flash().get(..self.file_len).unwrap_or_default()
    }

    /// Length of the input as given.
    pub fn file_len(&self) -> usize {
        self.file_len
    }

    /// What the detection found (before [`ImageOptions::erase_size`] and
    /// [`ImageOptions::endian`] were applied).
    pub fn detection(&self) -> &Detection {
        &self.detection
    }

    /// The geometry the image is read with: the detected one, with what the options give.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The options it was opened with.
    pub fn options(&self) -> &ImageOptions {
        &self.opts
    }

    /// Data after the end of the filesystem in the input (the next partition of a flash
    /// dump, a carver's tail): at least 4 KiB that is neither nodes nor 0xFF after the last
    /// node ([`crate::scan::trailing_data`]). It holds no node, so it changes no file; the
    /// reports name it rather than count it as damage. Made once (by [`Image::salvage`]
    /// beside its scan): after the detection's last node when the detection kept its nodes,
    /// else one pass over the input ([`crate::scan::trailing::trailing_data_after`]).
    pub fn trailing_data(&self) -> Option<scan::TrailingData> {
        *self.trailing.get_or_init(|| {
            scan::trailing::trailing_data_after(
                self.file_bytes(),
                self.geometry.endian,
                &self.hints,
            )
        })
    }

    /// Whether the mapped file shrank while it was read (its vanished pages then read as
    /// zeros): results read since are not the file's. Always false for an image in memory.
    pub fn changed(&self) -> bool {
        match &self.bytes {
            Bytes::Mapped(m) => m.changed(),
            _ => false,
        }
    }

    /// For a mapped image: its pages dropped on rayon's pool
    /// ([`crate::mapped::ImageMap::release_on_pool`]), which makes its unmapping cheap; for
    /// the end of a run, when the pool is idle. Nothing for an image in memory.
    pub fn release_on_pool(&self) {
        if let Bytes::Mapped(m) = &self.bytes {
            m.release_on_pool();
        }
    }

    /// For a mapped image opened with [`ImageOptions::trim`]: a trimmer of its resident
    /// pages, active until dropped (hold it while scanning, building and reading).
    pub fn trimmer(&self) -> Option<Trimmer<'_>> {
        match (&self.bytes, self.opts.trim) {
            (Bytes::Mapped(m), Some((limit, period))) => {
                Some(m.trimmer_keeping(limit, self.opts.trim_keep, period))
            }
            _ => None,
        }
    }

    /// The mount scan alone ([`crate::scan::scan`] with the image's geometry and
    /// [`ImageOptions::scan`]), whether or not Linux would mount it: see
    /// [`Scan::failure`].
    pub fn scan(&self) -> Scan {
        scan::engine::scan_hinted(
            self.flash(),
            &self.geometry,
            &self.opts.scan,
            &self.hints,
            true,
        )
    }

    /// Mounts the image as Linux would: the scan, then the filesystem model, which owns it.
    /// An error, with the reason, where Linux would refuse the mount.
    pub fn mount(&self) -> Result<Fs<'_>, MountError> {
        let scan = self.scan();
        if let Some(f) = &scan.failure {
            return Err(MountError(f.clone()));
        }
        Ok(crate::fs::Fs::from_scan(self.flash(), scan, self.opts.fs))
    }

    /// The model even where Linux would refuse the mount (a salvage: what can be read of
    /// it), and the reason Linux would refuse, if any. The scan carries on past the point
    /// the kernel stops ([`Scan::failure`]).
    pub fn salvage(&self) -> (Fs<'_>, Option<MountFailure>) {
        // Its callers (the dump's views, extraction) look for data after the end next: the
        // two passes over the image side by side.
        let (_, scan) =
            scan::detect::join2("jffs2-trailing", || self.trailing_data(), || self.scan());
        let failure = scan.failure.clone();
        (
            crate::fs::Fs::from_scan(self.flash(), scan, self.opts.fs),
            failure,
        )
    }
}

/// Why a file could not be read by path ([`Fs::read_file`], [`Fs::open_file`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
    /// The path does not lead to an inode.
    #[error(transparent)]
    Lookup(#[from] LookupError),
    /// The path names a directory.
    #[error("{}: Is a directory", crate::text::escape(.0, false))]
    IsADirectory(Vec<u8>),
    /// The file's data cannot be read (the kernel's `read()` fails: -EIO).
    #[error(transparent)]
    Read(#[from] FsError),
}

impl<'a> Fs<'a> {
    /// The file at `path` (from the image's root; symbolic links followed), for reading
    /// through [`std::io::Read`] and [`std::io::Seek`].
    pub fn open_file(&self, path: &[u8]) -> Result<FileReader<'_, 'a>, FileError> {
        let inode = lookup(self, path, true)?;
        if inode.kind == InodeKind::Dir {
            return Err(FileError::IsADirectory(path.to_vec()));
        }
        Ok(self.reader(inode))
    }

    /// The whole content of the file at `path` (see [`Fs::open_file`]), holes as zeros.
    pub fn read_file(&self, path: &[u8]) -> Result<Vec<u8>, FileError> {
        let r = self.open_file(path)?;
        let len = usize::try_from(r.inode.size).unwrap_or(usize::MAX);
        Ok(self.read_range(&r.inode, 0, len)?)
    }

    /// A reader over the content of `inode` (read with [`Fs::read_inode`]).
    pub fn reader(&self, inode: Inode) -> FileReader<'_, 'a> {
        FileReader {
            fs: self,
            inode,
            pos: 0,
        }
    }
}

/// The content of one inode as [`std::io::Read`] + [`std::io::Seek`] ([`Fs::open_file`],
/// [`Fs::reader`]). A range that cannot be read is an [`io::Error`] of kind `Other`
/// wrapping the [`FsError`], as the kernel's `read()` fails with -EIO.
pub struct FileReader<'f, 'a> {
    fs: &'f Fs<'a>,
    inode: Inode,
    pos: u64,
}

impl FileReader<'_, '_> {
    /// The inode read.
    pub fn inode(&self) -> &Inode {
        &self.inode
    }

    /// The file's size.
    pub fn len(&self) -> u64 {
        self.inode.size
    }

    /// Whether the file is empty.
    pub fn is_empty(&self) -> bool {
        self.inode.size == 0
    }
}

impl Read for FileReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos >= self.inode.size || buf.is_empty() {
            return Ok(0);
        }
        let mut n = 0usize;
        let pos = self.pos;
        self.fs
            .read_with(&self.inode, pos, buf.len() as u64, |s| {
                if let Some(dst) = buf.get_mut(n..n + s.len()) {
                    dst.copy_from_slice(s);
                    n += s.len();
                }
            })
            .map_err(io::Error::other)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for FileReader<'_, '_> {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.inode.size.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        match target {
            Some(p) => {
                self.pos = p;
                Ok(p)
            }
            None => Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek to a negative or overflowing position",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image_of(files: &[(&str, &[u8])]) -> Vec<u8> {
        let dir = tempfile::tempdir().unwrap();
        for (name, data) in files {
            std::fs::write(dir.path().join(name), data).unwrap();
        }
        let opts = crate::source::SourceOptions {
            faketime: true,
            ..Default::default()
        };
        let (tree, _) = crate::source::scan_host(dir.path(), &opts).unwrap();
        let mut image = Vec::new();
        crate::mkfs::build(
            &tree,
            &Default::default(),
            &mut image,
            &mut crate::mkfs::NullSink,
        )
        .unwrap();
        image
    }

    #[test]
    fn what_is_not_jffs2_is_refused() {
        assert!(matches!(
            Image::from_vec(Vec::new()),
            Err(ImageError::Empty)
        ));
        assert_eq!(
            ImageError::Empty.to_string(),
            "not a JFFS2 image: the image is empty (0 bytes)"
        );
        let e = Image::from_bytes(b"certainly not JFFS2").err().unwrap();
        assert!(matches!(e, ImageError::NotJffs2(_)));
        assert!(!e.why().unwrap().contains("not a JFFS2 image"));
        assert_eq!(
            e.to_string(),
            "not a JFFS2 image: no JFFS2 node header (magic 0x1985 with a valid header CRC) in either byte order"
        );
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Image::open(dir.path()),
            Err(ImageError::Directory(_))
        ));
        let missing = dir.path().join("missing");
        let e = Image::open(&missing).err().unwrap();
        assert!(matches!(e, ImageError::Io { .. }));
        assert!(e
            .to_string()
            .starts_with(&format!("{}: ", missing.display())));
        let empty = dir.path().join("empty");
        std::fs::write(&empty, b"").unwrap();
        assert!(matches!(Image::open(&empty), Err(ImageError::Empty)));
        // Insisting opens it (the geometry is the caller's business).
        let opts = ImageOptions {
            insist: true,
            ..Default::default()
        };
        assert!(Image::from_vec_with(Vec::new(), &opts).is_ok());
    }

    #[test]
    fn erased_flash_is_an_empty_filesystem() {
        let image = Image::from_vec(vec![0xFF; 5 * 65536]).unwrap();
        let fs = image.mount().unwrap();
        assert_eq!(fs.list_dir(1).unwrap().len(), 0);
    }

    #[test]
    fn every_way_in_mounts_the_same() {
        let bytes = image_of(&[("a", b"alpha\n"), ("b", &[7u8; 10_000])]);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fw.img");
        std::fs::write(&path, &bytes).unwrap();

        let opened = Image::open(&path).unwrap();
        assert_eq!(opened.file_len(), bytes.len());
        assert_eq!(opened.file_bytes(), &bytes[..]);
        assert_eq!(opened.flash().len(), 5 * 65536);
        assert!(!opened.changed());
        let mut buf = bytes.clone();
        buf.resize(6 * 65536, 0);
        let len = bytes.len();
        let images = [
            opened,
            Image::from_vec(bytes.clone()).unwrap(),
            Image::from_bytes(&bytes).unwrap(),
            Image::from_map(ImageMap::open(&path, None).unwrap(), &Default::default()).unwrap(),
            Image::in_place(&mut buf, len, &Default::default()).unwrap(),
        ];
        for image in &images {
            assert_eq!(image.geometry().erase_size, 65536);
            assert_eq!(image.flash().len(), 5 * 65536);
            let fs = image.mount().unwrap();
            assert_eq!(fs.read_file(b"/a").unwrap(), b"alpha\n");
            assert_eq!(fs.read_file(b"b").unwrap(), vec![7u8; 10_000]);
            assert!(matches!(
                fs.read_file(b"/"),
                Err(FileError::IsADirectory(_))
            ));
            assert!(matches!(
                fs.read_file(b"/nope"),
                Err(FileError::Lookup(LookupError::NotFound(_)))
            ));
        }
    }

    #[test]
    fn a_file_reads_and_seeks() {
        let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let bytes = image_of(&[("f", &data)]);
        let image = Image::from_vec(bytes).unwrap();
        let fs = image.mount().unwrap();
        let mut r = fs.open_file(b"/f").unwrap();
        assert_eq!(r.len(), data.len() as u64);
        let mut all = Vec::new();
        r.read_to_end(&mut all).unwrap();
        assert_eq!(all, data);
        assert_eq!(r.seek(SeekFrom::Start(5000)).unwrap(), 5000);
        let mut b = [0u8; 10];
        r.read_exact(&mut b).unwrap();
        assert_eq!(b, data[5000..5010]);
        assert_eq!(r.seek(SeekFrom::End(-3)).unwrap(), 19_997);
        let mut tail = Vec::new();
        r.read_to_end(&mut tail).unwrap();
        assert_eq!(tail, data[19_997..]);
        assert_eq!(r.seek(SeekFrom::Current(-20_000)).unwrap(), 0);
        assert!(r.seek(SeekFrom::Current(-1)).is_err());
        r.seek(SeekFrom::Start(1 << 40)).unwrap();
        assert_eq!(r.read(&mut b).unwrap(), 0);
    }

    #[test]
    fn a_refused_mount_is_an_error_or_a_salvage() {
        let mut bytes = image_of(&[("a", b"alpha\n")]);
        bytes.resize(2 * 65536, 0xFF);
        // An INCOMPAT node (ACCURATE bit set) of an unknown type in the second block.
        let e = Endian::Little;
        let mut node = Vec::new();
        node.extend_from_slice(&e.u16_bytes(crate::format::MAGIC));
        node.extend_from_slice(&e.u16_bytes(0xe0ff));
        node.extend_from_slice(&e.u32_bytes(12));
        let crc = crate::crc::crc32(&node[..8]);
        node.extend_from_slice(&e.u32_bytes(crc));
        bytes[65536..65536 + 12].copy_from_slice(&node);
        let image = Image::from_vec(bytes).unwrap();
        let err = image.mount().err().unwrap();
        assert!(matches!(
            err.0,
            MountFailure::Incompat { offset: 65536, .. }
        ));
        assert!(err.to_string().starts_with("Linux would refuse to mount"));
        let (fs, failure) = image.salvage();
        assert_eq!(failure, Some(err.0));
        assert_eq!(fs.read_file(b"/a").unwrap(), b"alpha\n");
        assert_eq!(fs.scan().failure, failure);
    }
}
