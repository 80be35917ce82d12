//! JFFS2 compressors: the mkfs.jffs2 compressor framework (`docs/spec/mtd-utils-spec.md` §4, from
//! `jffsX-utils/compr.c`) and decompressors for every id the kernel knows
//! (`docs/spec/kernel-jffs2-spec.md` §1.9).
//!
//! [`Compressors`] holds the compressor list (names, priorities, enabled flags, sorted by
//! descending priority), the selection mode (`-m`) and the `-t` flag. Its
//! [`compress`](Compressors::compress) is a pure, deterministic emulation of mkfs.jffs2's
//! `jffs2_compress()`: it can run speculatively on many threads at once, and the statistics
//! it would have counted come back as a [`StatsDelta`] that the caller applies to a
//! [`Stats`] only for the results it actually writes.
//!
//! The individual algorithms are [`zlib_compress`] (byte-identical to mkfs.jffs2 with the
//! same libz), [`rtime_compress`], [`lzo_compress`] and OpenWrt's [`lzma_compress`];
//! [`decompress`] reads every id.
//!
//! # Two compressor tables
//!
//! Debian's mkfs.jffs2 registers zlib (priority 60), rtime (50) and lzo (80, disabled).
//! OpenWrt's, patched with LZMA (`130-lzma_jffs2.patch`), registers lzma at 70 (enabled) and
//! moves zlib to 80 and lzo to 90. [`Compressors::mkfs_default`] is Debian's table, so that
//! images, `-L` and the `-v` statistics stay Debian's byte for byte. The first time a
//! command line names lzma (`-x lzma`, `-X lzma`, `-y N:lzma`), the configuration becomes
//! OpenWrt's table ([`Compressors::openwrt_default`]) with every `-x`/`-X`/`-y` given so
//! far applied again in order: the run is then OpenWrt's mkfs.jffs2's. `-x lzma` alone
//! therefore writes the same image as Debian's mkfs.jffs2 without it (the enabled order is
//! zlib then rtime in both tables).

#![warn(missing_docs)]

mod lzma;
mod lzo;
mod rtime;
mod rubin;
mod zlib;

#[cfg(test)]
mod mkfs_vectors;
#[cfg(test)]
mod tests;

use std::fmt::Write as _;
use std::str::FromStr;

pub use lzma::{lzma_compress, lzma_decompress, LZMA_DICT_SIZE, LZMA_NICE_LEN};
pub use lzo::{lzo_compress, lzo_decompress};
pub use rtime::{rtime_compress, rtime_decompress};
pub use rubin::{dynrubin_compress, dynrubin_decompress, rubinmips_compress, rubinmips_decompress};
pub(crate) use zlib::zlib_decompress_append;

/// Appends `v` to `out`, taking `v`'s allocation when `out` is empty.
pub(crate) fn append(out: &mut Vec<u8>, v: Vec<u8>) {
    if out.is_empty() {
        *out = v;
    } else {
        out.extend_from_slice(&v);
    }
}
pub use zlib::{zlib_compress, zlib_decompress, zlib_decompress_reference};

/// Compressor id: data stored uncompressed (`JFFS2_COMPR_NONE`).
pub const COMPR_NONE: u8 = 0;
/// Compressor id: all-zero data, nothing stored (`JFFS2_COMPR_ZERO`; the kernel writes it
/// for holes).
pub const COMPR_ZERO: u8 = 1;
/// Compressor id: rtime (`JFFS2_COMPR_RTIME`).
pub const COMPR_RTIME: u8 = 2;
/// Compressor id: rubin with the fixed MIPS model (`JFFS2_COMPR_RUBINMIPS`).
pub const COMPR_RUBINMIPS: u8 = 3;
/// Compressor id: copy (`JFFS2_COMPR_COPY`); never implemented anywhere.
pub const COMPR_COPY: u8 = 4;
/// Compressor id: rubin with a per-node model (`JFFS2_COMPR_DYNRUBIN`).
pub const COMPR_DYNRUBIN: u8 = 5;
/// Compressor id: zlib (`JFFS2_COMPR_ZLIB`).
pub const COMPR_ZLIB: u8 = 6;
/// Compressor id: LZO1X (`JFFS2_COMPR_LZO`).
pub const COMPR_LZO: u8 = 7;
/// Compressor id: LZMA, only in OpenWrt-patched kernels and mtd-utils
/// (`JFFS2_COMPR_LZMA`; see [`lzma_compress`]).
pub const COMPR_LZMA: u8 = 8;

/// `FAVOUR_LZO_PERCENT` of `compr.c`.
const FAVOUR_LZO_PERCENT: u32 = 80;

/// Human-readable name of a compressor id, for messages.
pub fn compr_name(compr: u8) -> &'static str {
    match compr {
        COMPR_NONE => "none",
        COMPR_ZERO => "zero",
        COMPR_RTIME => "rtime",
        COMPR_RUBINMIPS => "rubinmips",
        COMPR_COPY => "copy",
        COMPR_DYNRUBIN => "dynrubin",
        COMPR_ZLIB => "zlib",
        COMPR_LZO => "lzo",
        COMPR_LZMA => "lzma",
        _ => "unknown",
    }
}

/// Errors of compressor configuration and of decompression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ComprError {
    /// `-m` with a name other than none, priority, size, favourlzo (mkfs.jffs2 wording).
    #[error("Unknown compression mode {0}")]
    UnknownMode(String),
    /// `-x`/`-X` with a name that is not a compressor (mkfs.jffs2 wording).
    #[error("Unknown compressor name {0}")]
    UnknownCompressor(String),
    /// `-y` with a name that is not a compressor (mkfs.jffs2 wording; it exits with 1).
    #[error("compressor {0} not found.")]
    CompressorNotFound(String),
    /// A compressor name that only old OpenWrt-patched mkfs.jffs2 builds knew ("lzari",
    /// which OpenWrt trees of 2007 listed in a commented-out `-Xlzari`).
    #[error(
        "compressor \"{0}\" exists only in OpenWrt-patched mkfs.jffs2 builds and is not supported"
    )]
    OpenWrtCompressor(String),
    /// No decompressor for this id (COPY, unknown ids); kernel wording.
    #[error("compression type 0x{0:02x} not available")]
    UnsupportedCompressor(u8),
    /// The compressed data ends before `dsize` bytes could be produced.
    #[error("{} data truncated ({len} bytes) before the node's dsize was reached", compr_name(*compr))]
    Truncated {
        /// Compressor id.
        compr: u8,
        /// Length of the compressed data.
        len: usize,
    },
    /// The compressed data is invalid.
    #[error("corrupt {} data: {reason}", compr_name(*compr))]
    Corrupt {
        /// Compressor id.
        compr: u8,
        /// What is wrong.
        reason: String,
    },
    /// The data decompresses to a different length than the node's dsize.
    #[error("{} data decompresses to {actual} bytes, dsize is {expected}", compr_name(*compr))]
    LengthMismatch {
        /// Compressor id.
        compr: u8,
        /// The node's dsize.
        expected: usize,
        /// What the stream produced.
        actual: usize,
    },
}

/// Compressor selection mode (`-m`, §4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    /// Store everything uncompressed.
    None,
    /// The first enabled compressor (in list order) that succeeds wins (default).
    #[default]
    Priority,
    /// Try all enabled compressors; the smallest result wins.
    Size,
    /// Like `Size`, but LZO wins unless another result is below 80 % of LZO's size.
    FavourLzo,
}

impl Mode {
    /// The name used by `-m` and printed in the `-v` statistics.
    pub fn name(self) -> &'static str {
        match self {
            Mode::None => "none",
            Mode::Priority => "priority",
            Mode::Size => "size",
            Mode::FavourLzo => "favourlzo",
        }
    }
}

impl FromStr for Mode {
    type Err = ComprError;

    /// Exact lower-case names only, like `jffs2_set_compression_mode_name()`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => Ok(Mode::None),
            "priority" => Ok(Mode::Priority),
            "size" => Ok(Mode::Size),
            "favourlzo" => Ok(Mode::FavourLzo),
            _ => Err(ComprError::UnknownMode(s.to_string())),
        }
    }
}

/// The compressors mkfs.jffs2 can write with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// zlib, id 6, default priority 60, enabled.
    Zlib,
    /// rtime, id 2, default priority 50, enabled.
    Rtime,
    /// LZO1X-999, id 7, default priority 80, disabled (§4.1).
    Lzo,
    /// OpenWrt's LZMA, id 8: only in OpenWrt's table (priority 70, enabled there).
    Lzma,
}

impl Kind {
    /// All kinds, in the order mkfs.jffs2 registers them (`jffs2_compressors_init`; OpenWrt's
    /// patch registers lzma last).
    pub const ALL: [Kind; 4] = [Kind::Zlib, Kind::Rtime, Kind::Lzo, Kind::Lzma];

    /// The kinds of Debian's mkfs.jffs2 (built with zlib and LZO), in registration order.
    pub const DEBIAN: [Kind; 3] = [Kind::Zlib, Kind::Rtime, Kind::Lzo];

    /// The name used by `-x`, `-X`, `-y`, `-L` and `-v`.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Zlib => "zlib",
            Kind::Rtime => "rtime",
            Kind::Lzo => "lzo",
            Kind::Lzma => "lzma",
        }
    }

    /// The on-flash compressor id.
    pub fn compr(self) -> u8 {
        match self {
            Kind::Zlib => COMPR_ZLIB,
            Kind::Rtime => COMPR_RTIME,
            Kind::Lzo => COMPR_LZO,
            Kind::Lzma => COMPR_LZMA,
        }
    }

    /// Priority as registered by Debian's mkfs.jffs2 (`compr.h`); lzma, which Debian's
    /// does not have, gets OpenWrt's 70.
    pub fn default_priority(self) -> i32 {
        match self {
            Kind::Zlib => 60,
            Kind::Rtime => 50,
            Kind::Lzo => 80,
            Kind::Lzma => 70,
        }
    }

    /// Priority in OpenWrt's mkfs.jffs2 (`130-lzma_jffs2.patch`: lzma 70, zlib 80, lzo 90;
    /// rtime keeps 50).
    pub fn openwrt_priority(self) -> i32 {
        match self {
            Kind::Zlib => 80,
            Kind::Rtime => 50,
            Kind::Lzo => 90,
            Kind::Lzma => 70,
        }
    }

    /// Whether mkfs.jffs2 registers it enabled (LZO is disabled by default,
    /// `compr_lzo.c`, because old kernels cannot read it; OpenWrt's lzma is enabled,
    /// `.disabled = 0`).
    pub fn default_enabled(self) -> bool {
        !matches!(self, Kind::Lzo)
    }

    /// Looks a name up like `-x`/`-X`/`-y` do (exact, case-sensitive).
    pub fn from_name(name: &str) -> Result<Kind, ComprError> {
        match name {
            "zlib" => Ok(Kind::Zlib),
            "rtime" => Ok(Kind::Rtime),
            "lzo" => Ok(Kind::Lzo),
            "lzma" => Ok(Kind::Lzma),
            "lzari" => Err(ComprError::OpenWrtCompressor(name.to_string())),
            _ => Err(ComprError::UnknownCompressor(name.to_string())),
        }
    }

    /// Index into per-kind tables.
    fn index(self) -> usize {
        match self {
            Kind::Zlib => 0,
            Kind::Rtime => 1,
            Kind::Lzo => 2,
            Kind::Lzma => 3,
        }
    }

    /// Runs the compressor: `(output, consumed)` or `None` if it fails.
    fn run(self, data: &[u8], dstlen: usize) -> Option<(Vec<u8>, usize)> {
        match self {
            Kind::Zlib => zlib_compress(data, dstlen),
            Kind::Rtime => rtime_compress(data, dstlen),
            Kind::Lzo => lzo_compress(data, dstlen),
            Kind::Lzma => lzma_compress(data, dstlen),
        }
    }
}

/// One entry of the compressor list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressorEntry {
    /// Which compressor.
    pub kind: Kind,
    /// Its priority (`-y`).
    pub priority: i32,
    /// Whether it is used (`-x`/`-X`).
    pub enabled: bool,
}

/// The compressor configuration of one mkfs run: the list sorted by descending priority
/// (ties keep insertion order, §4.1), the mode and the `-t` flag. See the module
/// documentation for the two tables (Debian's, and OpenWrt's once lzma is named).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressors {
    list: Vec<CompressorEntry>,
    mode: Mode,
    test: bool,
    /// OpenWrt's table is in use.
    openwrt: bool,
    /// The `-x`/`-X`/`-y` changes so far, in order, replayed on OpenWrt's table when lzma
    /// is first named.
    ops: Vec<Op>,
}

/// A change of the compressor list, as a command line makes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    /// `-X` (true) or `-x` (false).
    Enable(Kind, bool),
    /// `-y PRIO:NAME`.
    Priority(Kind, i32),
}

/// Result of [`Compressors::compress`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compressed {
    /// Compressor id for the node's `compr` byte (`usercompr` is always 0).
    pub compr: u8,
    /// Input bytes this node covers (its dsize).
    pub consumed: usize,
    /// The node data as stored on flash (its csize is `data.len()`). For [`COMPR_NONE`] this
    /// is the first `consumed` input bytes, where `consumed` is the full `dstlen`
    /// (`datalen := cdatalen`, §4.2).
    pub data: Vec<u8>,
    /// What this call adds to the statistics and the `-t` error count.
    pub stats: StatsDelta,
}

/// The statistics of one `jffs2_compress()` call, to be added to [`Stats`] only if the
/// result is written.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatsDelta {
    /// The compressor credited with the block, `None` for a block stored uncompressed
    /// (counted on the "none" line).
    pub winner: Option<Kind>,
    /// Input bytes of the block (the "orig" size; for "none" the stored size).
    pub orig_size: u64,
    /// Output bytes of the block (the "new" size).
    pub new_size: u64,
    /// `-t` errors found by this call.
    pub errors: u32,
    /// `-t` error messages in mtd-utils wording, one line each without the trailing
    /// newline; mkfs.jffs2 prints each to stderr at compression time.
    pub messages: Vec<String>,
}

impl Default for Compressors {
    fn default() -> Self {
        Self::mkfs_default()
    }
}

impl Compressors {
    /// The configuration of Debian's mkfs.jffs2 (built with zlib and LZO): list
    /// `lzo (80, disabled), zlib (60), rtime (50)`, priority mode, no `-t` (§4.1).
    pub fn mkfs_default() -> Self {
        let mut c = Compressors {
            list: Vec::with_capacity(Kind::ALL.len()),
            mode: Mode::Priority,
            test: false,
            openwrt: false,
            ops: Vec::new(),
        };
        c.list = Self::table(false);
        c
    }

    /// The configuration of OpenWrt's mkfs.jffs2 (`130-lzma_jffs2.patch`): list
    /// `lzo (90, disabled), zlib (80), lzma (70), rtime (50)`, priority mode, no `-t`.
    /// (OpenWrt builds its mkfs.jffs2 without LZO; the entry is kept here, disabled, so
    /// that `-X lzo` still works.)
    pub fn openwrt_default() -> Self {
        let mut c = Self::mkfs_default();
        c.list = Self::table(true);
        c.openwrt = true;
        c
    }

    /// The registered list of one table, sorted.
    fn table(openwrt: bool) -> Vec<CompressorEntry> {
        let mut c = Compressors {
            list: Vec::with_capacity(Kind::ALL.len()),
            mode: Mode::Priority,
            test: false,
            openwrt,
            ops: Vec::new(),
        };
        // Registration order of `jffs2_compressors_init`: zlib, rtime, lzo (then lzma).
        let kinds: &[Kind] = if openwrt { &Kind::ALL } else { &Kind::DEBIAN };
        for &kind in kinds {
            c.insert_sorted(CompressorEntry {
                kind,
                priority: if openwrt {
                    kind.openwrt_priority()
                } else {
                    kind.default_priority()
                },
                enabled: kind.default_enabled(),
            });
        }
        c.list
    }

    /// Whether OpenWrt's table is in use (lzma was named, or [`Self::openwrt_default`]).
    pub fn is_openwrt(&self) -> bool {
        self.openwrt
    }

    /// Switches to OpenWrt's table (when lzma is first named), applying again every change
    /// made so far.
    fn become_openwrt(&mut self) {
        if self.openwrt {
            return;
        }
        self.openwrt = true;
        self.list = Self::table(true);
        for op in self.ops.clone() {
            self.apply(op);
        }
    }

    /// Applies one change to the list (the kind is in it).
    fn apply(&mut self, op: Op) {
        match op {
            Op::Enable(kind, on) => {
                if let Some(e) = self.list.iter_mut().find(|e| e.kind == kind) {
                    e.enabled = on;
                }
            }
            Op::Priority(kind, prio) => {
                if let Some(at) = self.list.iter().position(|e| e.kind == kind) {
                    let mut e = self.list.remove(at);
                    e.priority = prio;
                    self.insert_sorted(e);
                }
            }
        }
    }

    /// Inserts before the first entry with a strictly lower priority, else at the end
    /// (`jffs2_register_compressor`, and the re-insertion of
    /// `jffs2_set_compressor_priority`; `compr.c`).
    fn insert_sorted(&mut self, e: CompressorEntry) {
        let at = self
            .list
            .iter()
            .position(|x| x.priority < e.priority)
            .unwrap_or(self.list.len());
        self.list.insert(at, e);
    }

    /// Sets the selection mode (`-m`).
    pub fn set_mode(&mut self, m: Mode) {
        self.mode = m;
    }

    /// The selection mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Enables (`-X`) or disables (`-x`) a compressor by its exact name. "lzma" switches to
    /// OpenWrt's table first (module documentation); "lzari" gives
    /// [`ComprError::OpenWrtCompressor`], other unknown names
    /// [`ComprError::UnknownCompressor`].
    pub fn set_enabled(&mut self, name: &str, on: bool) -> Result<(), ComprError> {
        let kind = Kind::from_name(name)?;
        if kind == Kind::Lzma {
            self.become_openwrt();
        }
        if !self.list.iter().any(|e| e.kind == kind) {
            return Err(ComprError::UnknownCompressor(name.to_string()));
        }
        let op = Op::Enable(kind, on);
        self.apply(op);
        self.ops.push(op);
        Ok(())
    }

    /// Sets a compressor's priority (`-y PRIO:NAME`) and moves it to its sorted place:
    /// it is taken out and re-inserted before the first entry with a strictly lower
    /// priority, i.e. *after* entries of equal priority (`jffs2_set_compressor_priority`).
    /// Unknown names give [`ComprError::CompressorNotFound`] (or
    /// [`ComprError::OpenWrtCompressor`]); "lzma" switches to OpenWrt's table first. Parsing
    /// and the `prio >= 0` check are the CLI's.
    pub fn set_priority(&mut self, name: &str, prio: i32) -> Result<(), ComprError> {
        let kind = match Kind::from_name(name) {
            Ok(k) => k,
            Err(ComprError::UnknownCompressor(n)) => return Err(ComprError::CompressorNotFound(n)),
            Err(e) => return Err(e),
        };
        if kind == Kind::Lzma {
            self.become_openwrt();
        }
        if !self.list.iter().any(|e| e.kind == kind) {
            return Err(ComprError::CompressorNotFound(name.to_string()));
        }
        let op = Op::Priority(kind, prio);
        self.apply(op);
        self.ops.push(op);
        Ok(())
    }

    /// Turns the decompress-and-compare check of `-t` on or off (§4.6).
    pub fn set_test(&mut self, on: bool) {
        self.test = on;
    }

    /// Whether `-t` is on.
    pub fn test(&self) -> bool {
        self.test
    }

    /// The compressor list in its current order.
    pub fn entries(&self) -> &[CompressorEntry] {
        &self.list
    }

    /// The `-L` list: one `"%10s priority:%d enabled|disabled\n"` line per compressor in
    /// list order (`jffs2_list_compressors`). mkfs.jffs2 prints it to stderr after
    /// `"mkfs.jffs2: error!: \n"` and exits with 255.
    pub fn list_text(&self) -> String {
        let mut s = String::new();
        for e in &self.list {
            let state = if e.enabled { "enabled" } else { "disabled" };
            let _ = writeln!(s, "{:>10} priority:{} {}", e.kind.name(), e.priority, state);
        }
        s
    }

    /// Emulates mkfs.jffs2's `jffs2_compress()` (§4.2): `data` holds the bytes available
    /// (`datalen`), `dstlen` is the room for the output (`cdatalen`).
    ///
    /// * [`Mode::None`]: nothing is tried.
    /// * [`Mode::Priority`]: enabled compressors in list order, each with the full
    ///   `(datalen, cdatalen)`; the first success wins, even if its output is not smaller.
    /// * [`Mode::Size`] / [`Mode::FavourLzo`]: all enabled compressors are tried; a result
    ///   qualifies only if its output is smaller than the input it consumed; the best one
    ///   wins per `jffs2_is_best_compression` (strictly smaller; favourlzo: LZO wins unless
    ///   the other is below 80 % of it).
    /// * Nothing won: [`COMPR_NONE`], storing the first `dstlen` bytes raw.
    ///
    /// With `-t` every successful compressor's output is decompressed and compared (only
    /// the winner in priority mode, all successes in size modes, like `compr.c`).
    ///
    /// `dstlen` is clamped to `data.len()` (mkfs.jffs2 always has `cdatalen <= datalen`),
    /// so `consumed` never exceeds `data.len()`. Pure and deterministic: safe to call
    /// speculatively from many threads.
    ///
    /// ```
    /// use jffs2::compress::{decompress, Compressors, Mode, COMPR_NONE, COMPR_ZLIB};
    ///
    /// let page = b"JFFS2 ".repeat(682); // 4092 bytes
    /// let c = Compressors::mkfs_default(); // zlib (60), rtime (50); lzo (80) disabled
    /// let out = c.compress(&page, page.len());
    /// assert_eq!((out.compr, out.consumed), (COMPR_ZLIB, page.len()));
    /// assert!(out.data.len() < 100);
    /// assert_eq!(decompress(out.compr, &out.data, out.consumed)?, page);
    ///
    /// // `-m none`, and room for only 1000 bytes (a node at the end of an erase block).
    /// let mut none = Compressors::mkfs_default();
    /// none.set_mode(Mode::None);
    /// let raw = none.compress(&page, 1000);
    /// assert_eq!((raw.compr, raw.consumed, &raw.data[..]), (COMPR_NONE, 1000, &page[..1000]));
    /// # Ok::<(), jffs2::compress::ComprError>(())
    /// ```
    pub fn compress(&self, data: &[u8], dstlen: usize) -> Compressed {
        let dstlen = dstlen.min(data.len());
        let mut delta = StatsDelta::default();
        let enabled = || self.list.iter().filter(|e| e.enabled).map(|e| e.kind);
        let winner = match self.mode {
            Mode::None => None,
            Mode::Priority => enabled().find_map(|kind| {
                let (out, consumed) = kind.run(data, dstlen)?;
                if self.test {
                    test_result(kind, data, &out, consumed, dstlen, &mut delta);
                }
                Some((kind, out, consumed))
            }),
            Mode::Size | Mode::FavourLzo => {
                let mut best: Option<(Kind, Vec<u8>, usize)> = None;
                for kind in enabled() {
                    let Some((out, consumed)) = kind.run(data, dstlen) else {
                        continue;
                    };
                    if self.test {
                        test_result(kind, data, &out, consumed, dstlen, &mut delta);
                    }
                    let better = match &best {
                        None => true,
                        Some((bk, bout, _)) => self.is_best(kind, *bk, out.len(), bout.len()),
                    };
                    if better && out.len() < consumed {
                        best = Some((kind, out, consumed));
                    }
                }
                best
            }
        };
        match winner {
            Some((kind, out, consumed)) => {
                delta.winner = Some(kind);
                delta.orig_size = consumed as u64;
                delta.new_size = out.len() as u64;
                Compressed {
                    compr: kind.compr(),
                    consumed,
                    data: out,
                    stats: delta,
                }
            }
            None => {
                // `datalen := cdatalen` (§4.2): as much raw data as fits.
                delta.orig_size = dstlen as u64;
                delta.new_size = dstlen as u64;
                Compressed {
                    compr: COMPR_NONE,
                    consumed: dstlen,
                    data: data[..dstlen].to_vec(),
                    stats: delta,
                }
            }
        }
    }

    /// `jffs2_is_best_compression(this, best, size, bestsize)`, with the C unsigned 32-bit
    /// arithmetic of the 80 % computations.
    fn is_best(&self, this: Kind, best: Kind, size: usize, bestsize: usize) -> bool {
        let (size, bestsize) = (size as u32, bestsize as u32);
        match self.mode {
            Mode::Size => bestsize > size,
            Mode::FavourLzo => {
                let pct = |x: u32| x.wrapping_mul(FAVOUR_LZO_PERCENT) / 100;
                // The four tests of `compr.c`, the first two merged: (1) this is LZO and
                // smaller, (2) best is not LZO and this is smaller, (3) this is LZO and
                // best is not below 80 % of it, (4) this is below 80 % of best.
                ((this == Kind::Lzo || best != Kind::Lzo) && bestsize > size)
                    || (this == Kind::Lzo && bestsize > pct(size))
                    || pct(bestsize) > size
            }
            Mode::None | Mode::Priority => false,
        }
    }
}

/// The `-t` check of one successful compression (`jffs2_decompression_test`, §4.6).
///
/// mkfs.jffs2 first checks a 0x55 guard area behind the output for overflows
/// ("COMPR_ERROR: buffer overflow at …"); the compressors here return an owned buffer of
/// at most `dstlen` bytes, so that check is the length comparison below.
fn test_result(
    kind: Kind,
    data: &[u8],
    out: &[u8],
    consumed: usize,
    dstlen: usize,
    delta: &mut StatsDelta,
) {
    let name = kind.name();
    if out.len() > dstlen {
        delta.errors += 1;
        delta.messages.push(format!(
            "COMPR_ERROR: buffer overflow at {name}. (bs={dstlen} csize={} b[{}]=0)",
            out.len(),
            dstlen
        ));
        return;
    }
    match decompress(kind.compr(), out, consumed) {
        Err(_) => {
            delta.errors += 1;
            delta.messages.push(format!(
                "JFFS2 compression check: decompression failed at {name}."
            ));
        }
        Ok(plain) => {
            let expect = data.get(..consumed).unwrap_or(data);
            let mismatch = expect
                .iter()
                .zip(plain.iter())
                .position(|(a, b)| a != b)
                .or_else(|| (plain.len() < expect.len()).then_some(plain.len()));
            if let Some(pos) = mismatch {
                delta.errors += 1;
                delta.messages.push(format!(
                    "JFFS2 compression check: data mismatch at {name} (pos {pos})."
                ));
            }
        }
    }
}

/// Per-compressor counters (`stat_compr_*` of `struct jffs2_compressor`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct KindStats {
    blocks: u32,
    orig_size: u32,
    new_size: u32,
}

/// Accumulated compression statistics of a run (`-v`) and the `-t` error count.
///
/// The counters are 32-bit and wrap, and are printed with `%d`, exactly like mkfs.jffs2's
/// `uint32_t` fields; the decompression counters of the report are always 0 in mkfs.jffs2.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    none_blocks: u32,
    none_size: u32,
    kinds: [KindStats; 4],
    errors: u32,
}

impl Stats {
    /// Adds the statistics of one written block.
    pub fn add(&mut self, d: &StatsDelta) {
        match d.winner {
            None => {
                self.none_blocks = self.none_blocks.wrapping_add(1);
                self.none_size = self.none_size.wrapping_add(d.orig_size as u32);
            }
            Some(kind) => {
                let k = &mut self.kinds[kind.index()];
                k.blocks = k.blocks.wrapping_add(1);
                k.orig_size = k.orig_size.wrapping_add(d.orig_size as u32);
                k.new_size = k.new_size.wrapping_add(d.new_size as u32);
            }
        }
        self.errors = self.errors.wrapping_add(d.errors);
    }

    /// Adds another accumulator (e.g. per-thread statistics).
    pub fn merge(&mut self, o: &Stats) {
        self.none_blocks = self.none_blocks.wrapping_add(o.none_blocks);
        self.none_size = self.none_size.wrapping_add(o.none_size);
        for (a, b) in self.kinds.iter_mut().zip(o.kinds.iter()) {
            a.blocks = a.blocks.wrapping_add(b.blocks);
            a.orig_size = a.orig_size.wrapping_add(b.orig_size);
            a.new_size = a.new_size.wrapping_add(b.new_size);
        }
        self.errors = self.errors.wrapping_add(o.errors);
    }

    /// The `-t` error count (`jffs2_compression_check_errorcnt_get`).
    pub fn errors(&self) -> u64 {
        u64::from(self.errors)
    }

    /// The complete stderr text mkfs.jffs2 prints at exit with `-v` (§3.8): `"\n\n"`, the
    /// `jffs2_stats()` block (mode, "none" line, one line per compressor in list order)
    /// and `"Compression errors: %d\n"`. Without `-v` mkfs.jffs2 prints only
    /// [`errors_line`](Self::errors_line), and only if `-t` found errors.
    pub fn report(&self, c: &Compressors) -> String {
        let mut s = String::from("\n\n");
        let _ = write!(s, "Compression mode: {}\nCompressors:\n", c.mode.name());
        let _ = writeln!(
            s,
            "{:>10}             compr: {} blocks ({})  decompr: 0 blocks",
            "none", self.none_blocks as i32, self.none_size as i32
        );
        for e in &c.list {
            let k = &self.kinds[e.kind.index()];
            let _ = writeln!(
                s,
                "{:>10} (prio:{}) {} compr: {} blocks ({}/{})  decompr: 0 blocks ",
                e.kind.name(),
                e.priority,
                if e.enabled { "+" } else { "-" },
                k.blocks as i32,
                k.new_size as i32,
                k.orig_size as i32
            );
        }
        s.push_str(&self.errors_line());
        s
    }

    /// `"Compression errors: %d\n"`.
    pub fn errors_line(&self) -> String {
        format!("Compression errors: {}\n", self.errors as i32)
    }
}

/// Decompresses the data of a node with compressor id `compr` into exactly `dsize` bytes.
///
/// Supports NONE (the first `dsize` bytes; shorter data is an error), ZERO (`dsize` zero
/// bytes, `src` ignored), RTIME, RUBINMIPS (3, fixed model), DYNRUBIN (5, model header),
/// ZLIB (kernel style: header checked and skipped, Adler-32 ignored), LZO and OpenWrt's LZMA
/// ([`lzma_decompress`]). COPY and unknown ids give [`ComprError::UnsupportedCompressor`].
/// Never panics; apart from ZERO (which needs no input) allocation is bounded by `dsize`
/// and by what `src` can expand to. See [`rubinmips_decompress`] for the kernel's swapped rubin ids.
pub fn decompress(compr: u8, src: &[u8], dsize: usize) -> Result<Vec<u8>, ComprError> {
    match compr {
        COMPR_NONE => src
            .get(..dsize)
            .map(<[u8]>::to_vec)
            .ok_or(ComprError::Truncated {
                compr,
                len: src.len(),
            }),
        COMPR_ZERO => Ok(vec![0; dsize]),
        COMPR_RTIME => rtime_decompress(src, dsize),
        COMPR_RUBINMIPS => rubinmips_decompress(src, dsize),
        COMPR_DYNRUBIN => dynrubin_decompress(src, dsize),
        COMPR_ZLIB => zlib_decompress(src, dsize),
        COMPR_LZO => lzo_decompress(src, dsize),
        COMPR_LZMA => lzma_decompress(src, dsize),
        _ => Err(ComprError::UnsupportedCompressor(compr)),
    }
}
