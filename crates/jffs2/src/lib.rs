//! JFFS2 images, written and read the way mtd-utils and the Linux kernel do.
//!
//! This is the core library of jffs2-tools: everything that knows about JFFS2 lives here,
//! once, and the command-line tools (`jffs2-mkfs`, `jffs2-sumtool`, `jffs2-dump`,
//! `jffs2-fsck`, `jffs2-convert`, `jffs2-mount`) only parse arguments and print. It builds images
//! byte-identical to mtd-utils' `mkfs.jffs2`, reads images exactly as Linux 6.1 mounts them,
//! checks, summarises, converts and extracts them.
//!
//! # Reading an image: three lines
//!
//! ```no_run
//! let image = jffs2::Image::open("fw.img")?; // recognised, geometry detected, padded as flashed
//! let fs = image.mount()?; // scanned and built as Linux mounts it, or why Linux would refuse
//! let motd = fs.read_file(b"/etc/motd")?; // or fs.open_file(..) (Read + Seek), fs.tree(..)
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Image`] refuses what is not JFFS2 at all ([`ImageError`]: an empty input, a directory,
//! no node in either byte order; an all-0xFF image is erased flash, an empty filesystem),
//! [`Image::mount`] what Linux would not mount ([`MountError`]); [`Image::salvage`] reads
//! what it can of the latter. The steps below it — [`scan::detect()`], [`scan::as_flashed`],
//! [`scan::scan`], [`fs::Fs::from_scan`] — stay public for the tools' finer needs ([`mod@image`]).
//!
//! # Data flow
//!
//! ```text
//! writing:  host directory --source::scan_host--> source::SourceTree --mkfs::build--> image bytes
//!           (source::apply_device_table, xattrs)  (compress, layout::BlockWriter, summaries)
//!
//! reading:  path or bytes --Image::open---------------------> Image --Image::mount--> Fs
//!           (inside: scan::detect --> Geometry, scan::as_flashed;   scan::scan, Fs::from_scan)
//!                                                                                     |
//!   Fs::read_inode / list_dir / read_data, fs::Tree ----------------------------------+
//!   extract::{list, lookup, cat, extract}   files as a read-only mount shows them
//!   mount::View                             the same, by inode number, for a FUSE server
//!   fsck::check                             every node and file checked, findings by offset
//!   sumtool::summarize                      erase-block summaries added, filesystem unchanged
//!   convert::convert                        garbage-collected and re-laid (erase size, ...)
//!   dump::{dump_content, swap_endian}       jffs2dump's listing; the other byte order
//! ```
//!
//! Below [`Image`], images are plain byte slices (`&[u8]`, typically a file read or
//! memory-mapped); outputs go to any [`std::io::Write`].
//!
//! # Example: a directory to an image and back
//!
//! ```
//! use jffs2::{fs, mkfs, source};
//!
//! // A small host tree.
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("etc"))?;
//! std::fs::write(dir.path().join("etc/hostname"), b"demo\n")?;
//! let text = b"JFFS2 compresses page by page. ".repeat(400); // 12 400 bytes: 4 pages
//! std::fs::write(dir.path().join("README"), &text)?;
//!
//! // host tree -> image (mkfs.jffs2 -r DIR -e 64KiB -l -f)
//! let opts = source::SourceOptions { faketime: true, ..Default::default() };
//! let (tree, _warnings) = source::scan_host(dir.path(), &opts)?;
//! let cfg = mkfs::MkfsConfig {
//!     endian: jffs2::format::Endian::Little,
//!     ..mkfs::MkfsConfig::default()
//! };
//! let mut image = Vec::new();
//! let report = mkfs::build(&tree, &cfg, &mut image, &mut mkfs::NullSink)?;
//! assert_eq!(report.image_size, image.len() as u64);
//!
//! // image -> geometry, padded as flashed -> mount scan -> filesystem model
//! let image = jffs2::Image::from_vec(image)?;
//! assert_eq!(image.geometry().erase_size, 64 * 1024);
//! let fs = image.mount()?; // Linux would mount it
//!
//! // List the tree and read a file back.
//! let paths: Vec<String> = fs
//!     .tree(&fs::TreeOptions::metadata())
//!     .entries
//!     .iter()
//!     .map(|e| String::from_utf8_lossy(&e.path).into_owned())
//!     .collect();
//! assert_eq!(paths, [".", "README", "etc", "etc/hostname"]);
//!
//! assert_eq!(fs.read_file(b"/README")?, text);
//! let mut hostname = String::new();
//! std::io::Read::read_to_string(&mut fs.open_file(b"etc/hostname")?, &mut hostname)?;
//! assert_eq!(hostname, "demo\n");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Two runnable programs do the same from the command line: `cargo run -p jffs2 --example
//! list -- IMAGE` and `cargo run -p jffs2 --example build -- DIR OUT` (`crates/jffs2/examples`,
//! `docs/LIBRARY.md`).
//!
//! # Guarantees
//!
//! * **No panic on input.** Every function that reads an image, a compressed payload, a
//!   device table or a host tree returns an error (or a finding) for bad input instead of
//!   panicking, never reads outside the slice it was given, and bounds its memory; the
//!   fuzz targets and `tests/hostile_cli.rs` hold the crate to this (`docs/SECURITY.md`).
//! * **Typed errors with places.** Fallible functions return an error type of their module
//!   (`thiserror`, implementing [`std::error::Error`]): decode errors carry the byte offset in
//!   the image ([`format::FormatError`], [`fs::ReadError::offset`]), host errors the path
//!   ([`source::SourceError`], [`mkfs::MkfsError`]), fsck findings offset, inode and path
//!   ([`fsck::Finding`]).
//! * **Never prints.** Messages a tool would show come back as values (warnings, kernel log
//!   lines, findings) or through a callback ([`mkfs::Sink`], progress functions); nothing is
//!   written to stdout or stderr, and nothing calls `exit`.
//! * **Deterministic output.** Images and texts depend only on the inputs and the options,
//!   never on the number of threads, the locale, the host's directory order or the time of
//!   the run (the one clock read, for device-table entries, is injected:
//!   [`source::SourceOptions::now`]); see the README's "Reproducible images".
//!
//! # Stability
//!
//! The supported API — kept stable within a minor version and changed with care (the crate
//! is 0.x: a breaking change bumps the minor version) — is:
//!
//! | module | for |
//! |---|---|
//! | [`mod@format`], [`crc`] | nodes: encode, decode, CRCs, constants |
//! | [`compress`] | mkfs.jffs2's compressor framework, every decompressor |
//! | [`source`], [`mkfs`], [`layout`] | building images from a host tree |
//! | [`Image`], [`mod@image`] | opening and mounting an image: the way in |
//! | [`scan`], [`fs`] | reading images as Linux mounts them |
//! | [`extract`], [`fsck`], [`sumtool`], [`convert`], [`dump`] | what the tools do |
//!
//! Public items that exist for one front end's output — [`dump::views`] (the JSON, SVG and
//! `--info` views), [`scan::msg`] (kernel message wording), texts such as
//! [`sumtool::size_text`] — are public and documented but follow the tools' output, which
//! may change in any release. The `fuzz` module is the fuzzer's entry points
//! (`fuzz/fuzz_targets`, `tests/fuzz_corpus.rs`), hidden from the documentation and not part
//! of the API. `docs/LIBRARY.md` has the details: error types, threads, memory.

#![warn(missing_docs)]
#![warn(rustdoc::broken_intra_doc_links)]

pub mod code;
pub mod compress;
pub mod convert;
pub mod crc;
pub mod dump;
pub mod extract;
pub mod format;
pub mod fs;
pub mod fsck;
// Public only so that `fuzz/fuzz_targets` and `tests/fuzz_corpus.rs` can reach it: the fuzz
// targets' bodies, not an API (no stability promise, hidden from the documentation).
#[doc(hidden)]
pub mod fuzz;
pub mod image;
pub mod input;
pub mod layout;
pub mod mapguard;
pub mod mapped;
pub mod mkfs;
pub mod mount;
pub mod name;
mod pipe;
mod prefetch;
pub mod progress;
pub mod scan;
pub mod source;
pub mod sumtool;
// The node-by-node image builder of the tests (the crate's, the repository's integration
// tests and fuzz seeds): only with `cfg(test)` or the `testing` feature, no stability promise.
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod text;

pub use image::{FileError, FileReader, Image, ImageBytes, ImageError, ImageOptions, MountError};
pub use progress::Progress;

/// What docs/LIBRARY.md promises of the error types and the read-side models, checked at
/// compile time: errors are `std::error::Error + Send + Sync + 'static` (usable with `?` into
/// `Box<dyn Error + Send + Sync>` or `anyhow`), a model can be shared between threads.
#[allow(dead_code)]
fn _api_traits() {
    fn error<T: std::error::Error + Send + Sync + 'static>() {}
    fn sync<T: Send + Sync>() {}
    error::<format::FormatError>();
    error::<compress::ComprError>();
    error::<source::SourceError>();
    error::<mkfs::MkfsError>();
    error::<fs::ReadError>();
    error::<fs::FsError>();
    error::<extract::ExtractError>();
    error::<extract::LookupError>();
    error::<extract::ReaderListError>();
    error::<fsck::FsckError>();
    error::<sumtool::SumtoolError>();
    error::<convert::ConvertError>();
    error::<dump::DumpError>();
    error::<image::ImageError>();
    error::<image::MountError>();
    error::<image::FileError>();
    error::<mount::ViewError>();
    sync::<Image<'static>>();
    sync::<scan::Scan>();
    sync::<fs::Fs<'static>>();
    sync::<fsck::Report>();
    sync::<mount::View<'static>>();
}
