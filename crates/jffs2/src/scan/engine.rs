//! Accounting and the medium driver: `jffs2_scan_medium` (`docs/spec/kernel-jffs2-spec.md` §3.1),
//! `jffs2_link_node_ref` / `jffs2_scan_dirty_space` (§3.2, §7.1), `jffs2_mark_node_obsolete`
//! while scanning (§5.2, §7.1), `jffs2_scan_classify_jeb` (§3.4), inode caches (§3.3, §5.1)
//! and the geometry checks of `jffs2_do_fill_super` (§2).

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use super::msg::{jffs2_error, PTR};
use super::nodelist::{DirentList, FdAdd};
use super::{
    BlockClass, BlockInfo, BlockList, Dirt, DirtCause, Geometry, InodeCache, KernelMsg, Level,
    MountFailure, NodeRef, RefState, Scan, ScanDirent, ScanOptions, SummaryUse, XattrDatum,
    XattrRef,
};
use crate::format::ROOT_INO;
use crate::format::{pad4, Endian, NodeKind};
use crate::prefetch::{with_pages_ahead, PagesAhead, Track};

/// The scan read buffer: `mtd_kmalloc_up_to(PAGE_SIZE)` on x86-64 (§3.1).
pub(super) const PAGE_SIZE: u32 = 4096;
/// `DEFAULT_EMPTY_SCAN_SIZE` of Linux 6.1 (§1.10, §12).
pub(super) const DEFAULT_EMPTY_SCAN_SIZE: u32 = 256;
/// `ISDIRTY(size)` ⇔ size > 68 + 128 (§1.10).
pub(super) const ISDIRTY_LIMIT: u32 = 196;
/// `min_free(c)` without a write buffer: 2 × sizeof(raw_inode) (§1.10).
const MIN_FREE: u32 = 136;
/// Cap on stored log messages (memory bound for hostile images).
const MAX_LOG: usize = 100_000;
/// Beyond this many dirt ranges, adjacent ranges merge whatever their cause.
const MAX_DIRT: usize = 1 << 20;
/// Smallest erase size accepted (the scan needs room for a header and a marker).
const MIN_ERASE_SIZE: u32 = 128;

/// The scan of the current block hit a kernel `BUG()`; the failure is recorded.
#[derive(Debug)]
pub(super) struct Bug;

/// State bits a ref carries in the low two bits of its offset (§7.1).
pub(super) const REF_UNCHECKED: u32 = 0;
pub(super) const REF_OBSOLETE: u32 = 1;
pub(super) const REF_PRISTINE: u32 = 2;
pub(super) const REF_NORMAL: u32 = 3;

fn state_of(bits: u32) -> RefState {
    match bits & 3 {
        REF_UNCHECKED => RefState::Unchecked,
        REF_OBSOLETE => RefState::Obsolete,
        REF_PRISTINE => RefState::Pristine,
        _ => RefState::Normal,
    }
}

/// One erase block's kernel state (`struct jffs2_eraseblock`).
#[derive(Debug, Clone)]
pub(super) struct Jeb {
    pub offset: u32,
    pub used: u32,
    pub unchecked: u32,
    pub dirty: u32,
    pub wasted: u32,
    pub free: u32,
    /// Number of refs linked (dirt refs included; merged dirt does not add one).
    pub nrefs: u32,
    /// Offset of the last ref.
    pub last_ofs: u32,
    /// The last ref is obsolete (dirt merges into it).
    pub last_obsolete: bool,
    /// Index in `refs` of the last ref when it is a node.
    pub last_node: Option<usize>,
    pub class: BlockClass,
    pub list: BlockList,
    pub summary: SummaryUse,
    pub bytes_read: u32,
    pub free_at_scan: u32,
    pub refs_start: usize,
    pub refs_end: usize,
}

impl Jeb {
    fn new(offset: u32, sector: u32) -> Self {
        Jeb {
            offset,
            used: 0,
            unchecked: 0,
            dirty: 0,
            wasted: 0,
            free: sector,
            nrefs: 0,
            last_ofs: offset,
            last_obsolete: false,
            last_node: None,
            class: BlockClass::Empty,
            list: BlockList::ErasePending,
            summary: SummaryUse::None,
            bytes_read: 0,
            free_at_scan: sector,
            refs_start: 0,
            refs_end: 0,
        }
    }
}

/// An inode cache under construction.
#[derive(Debug, Clone, Default)]
pub(super) struct Cache {
    pub nodes: Vec<usize>,
    pub dents: DirentList,
    pub pino_nlink: u32,
}

/// The inode caches by number (`c->inocache_list`), remembering the one looked up last: an
/// inode's nodes mostly follow one another on flash, and each node looks its cache up twice
/// (a search of the whole map each time was a quarter of the scan's time).
#[derive(Debug, Default)]
pub(super) struct Caches {
    index: BTreeMap<u32, usize>,
    list: Vec<Cache>,
    last: Option<(u32, usize)>,
}

impl Caches {
    /// Where the cache of `ino` is in `list`, remembered for the next lookup.
    fn find(&mut self, ino: u32) -> Option<usize> {
        if let Some((n, i)) = self.last {
            if n == ino {
                return Some(i);
            }
        }
        let i = *self.index.get(&ino)?;
        self.last = Some((ino, i));
        Some(i)
    }

    /// The cache of `ino`, if there is one.
    pub(super) fn get_mut(&mut self, ino: u32) -> Option<&mut Cache> {
        let i = self.find(ino)?;
        self.list.get_mut(i)
    }

    /// The cache of `ino`, made empty if there is none.
    pub(super) fn get_or_default(&mut self, ino: u32) -> &mut Cache {
        let i = match self.find(ino) {
            Some(i) => i,
            None => {
                let i = self.list.len();
                self.list.push(Cache::default());
                self.index.insert(ino, i);
                self.last = Some((ino, i));
                i
            }
        };
        &mut self.list[i]
    }

    /// The caches in inode number order.
    fn into_sorted(mut self) -> impl Iterator<Item = (u32, Cache)> {
        self.index
            .into_iter()
            .map(move |(ino, i)| (ino, std::mem::take(&mut self.list[i])))
    }
}

/// The scan state (`struct jffs2_sb_info` as far as the scan touches it).
pub(super) struct Engine<'a> {
    /// The flash: the image truncated to whole blocks.
    pub img: &'a [u8],
    pub e: Endian,
    pub sector: u32,
    pub cm: u32,
    pub opts: ScanOptions,
    pub jebs: Vec<Jeb>,
    pub refs: Vec<NodeRef>,
    /// Block index of each ref.
    pub ref_block: Vec<u32>,
    pub caches: Caches,
    pub xattr_datums: Vec<XattrDatum>,
    /// Current version of each xattr datum (`xd->version`).
    pub xd_version: HashMap<u32, u32>,
    pub xattr_refs: Vec<XattrRef>,
    pub log: Vec<KernelMsg>,
    pub log_dropped: u64,
    pub dirt: Vec<Dirt>,
    pub highest_ino: u32,
    pub highest_xid: u32,
    pub highest_xseqno: u32,
    pub pseudo_random: u32,
    pub forced_ro: bool,
    pub failure: Option<MountFailure>,
    /// The kernel has stopped (a failure): nothing more is logged.
    pub halted: bool,
    pub nextblock: Option<usize>,
    pub nr_free_blocks: u32,
    pub nr_erasing_blocks: u32,
    pub empty_blocks: u32,
    /// OpenWrt's end-of-filesystem marker was found at this block offset (the kernel's
    /// `c->flags & (1 << 7)`).
    pub end_marker: Option<u32>,
    /// Prefetch hints ([`scan_hinted`]) and the first not yet passed.
    pub hints: &'a [u32],
    pub hint_at: usize,
}

/// Bytes an image of `len` bytes takes as flashed in blocks of `erase_size`: whole blocks,
/// at least 5 (the smallest partition Linux mounts), not beyond the 32-bit flash size the
/// kernel uses (§2; the scan never reads past it). `len` itself for an erase size of 0.
pub fn flashed_len(len: usize, erase_size: u32) -> usize {
    if erase_size == 0 {
        return len;
    }
    let es = erase_size as usize;
    let want = len.div_ceil(es).max(5).saturating_mul(es);
    let cap = (u32::MAX as usize / es) * es;
    want.min(cap.max(len))
}

/// The image as the kernel would see it flashed into the smallest partition it mounts: padded
/// with 0xFF to a whole number of erase blocks, and to at least 5 blocks (§2). mkfs.jffs2
/// images without `-p` end right after their last node; tools that check such an image as
/// it will be used should scan `as_flashed(image, erase_size)`. Borrowed when nothing needs
/// padding.
pub fn as_flashed(image: &[u8], erase_size: u32) -> Cow<'_, [u8]> {
    if erase_size == 0 {
        return Cow::Borrowed(image);
    }
    let want = flashed_len(image.len(), erase_size);
    if want == image.len() {
        return Cow::Borrowed(image);
    }
    let mut v = Vec::with_capacity(want);
    v.extend_from_slice(image);
    v.resize(want, 0xFF);
    Cow::Owned(v)
}

/// Scans `image` as Linux 6.1 does at mount (`jffs2_scan_medium`, `docs/spec/kernel-jffs2-spec.md`
/// §2–§4, §7.1, §9.1–9.3): every block in address order, with the summary path when
/// `opts.summary`, and returns every ref, inode cache, dirent, xattr, the per-block
/// accounting, and the messages Linux would print.
///
/// `image` is the whole MTD device (see [`as_flashed`] for images smaller than their
/// partition). Never panics; runs in time linear in the image size (plus `O(n log n)` in the
/// number of dirents).
///
/// ```
/// use jffs2::scan::{as_flashed, detect, scan, ScanOptions};
///
/// let dir = tempfile::tempdir()?;
/// std::fs::write(dir.path().join("motd"), b"Welcome\n")?;
/// let (tree, _) = jffs2::source::scan_host(dir.path(), &Default::default())?;
/// let mut image = Vec::new();
/// jffs2::mkfs::build(&tree, &Default::default(), &mut image, &mut jffs2::mkfs::NullSink)?;
///
/// let g = detect(&image).geometry;
/// // mkfs.jffs2's image ends after its last node; Linux sees the partition it is flashed to.
/// let flash = as_flashed(&image, g.erase_size);
/// assert_eq!(flash.len(), 5 * 65536);
/// let s = scan(&flash, &g, &ScanOptions::default());
/// assert!(s.failure.is_none() && s.log.is_empty());
/// assert_eq!(s.highest_ino, 2);
/// assert_eq!(s.refs.len(), 3); // the cleanmarker, the dirent, the inode node
/// let t = s.totals();
/// assert_eq!(t.used + t.unchecked + t.dirty + t.wasted + t.free, u64::from(s.flash_size));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn scan(image: &[u8], geom: &Geometry, opts: &ScanOptions) -> Scan {
    scan_hinted(image, geom, opts, &[], false)
}

/// [`scan`] with `hints`: offsets where nodes are expected (ascending; the detection's
/// walk, [`crate::scan::detect::detect_with_nodes`]), whose headers are asked for a few nodes
/// ahead. Hints change nothing the scan finds, only how long it waits on memory; wrong ones
/// cost nothing but the hint. With `pages_ahead`, a helper thread maps the pages the scan
/// will read and write a little ahead of it (`crate::prefetch::PagesAhead`): for a scan
/// that holds up everything after it with a core to spare (not jffs2-fsck's, beside which
/// another pass walks the flash: there the helper only takes that pass's core, 4 % slower in
/// all by `bench/ab.sh`, docs/BENCHMARKS.md session 16).
pub(crate) fn scan_hinted(
    image: &[u8],
    geom: &Geometry,
    opts: &ScanOptions,
    hints: &[u32],
    pages_ahead: bool,
) -> Scan {
    let sector = geom.erase_size;
    let mut eng = Engine::new(&[], geom, opts);
    eng.hints = hints;
    if sector < MIN_ERASE_SIZE || sector % 4 != 0 {
        eng.halted = true;
        eng.failure = Some(MountFailure::Other(format!(
            "unsupported erase size {sector:#x}: the scan needs a multiple of 4 of at least {MIN_ERASE_SIZE} bytes"
        )));
        return eng.finish(geom, 0);
    }
    // §2: flash_size = mtd->size truncated to whole blocks (the kernel's flash_size is a u32).
    let cap = (u32::MAX / sector) as u64 * u64::from(sector);
    let len = (image.len() as u64).min(cap);
    let blocks = len / u64::from(sector);
    let flash = (blocks * u64::from(sector)) as u32;
    eng.img = image.get(..flash as usize).unwrap_or(&[]);
    // Both messages go through the fs_context log (`infof`/`errorf`): printed without the
    // `jffs2: ` prefix, `infof` at KERN_NOTICE (checked against Linux 6.1; §2 of the spec
    // describes the older pr_info/pr_err calls).
    if u64::from(flash) != image.len() as u64 && (image.len() as u64) <= cap {
        eng.msg(
            Level::Notice,
            None,
            format!(
                "Flash size not aligned to erasesize, reducing to {}KiB",
                flash / 1024
            ),
        );
    }
    if flash < sector.saturating_mul(5) || blocks < 5 {
        eng.msg(
            Level::Err,
            None,
            format!("Too few erase blocks ({})", blocks),
        );
        eng.fail(MountFailure::TooFewBlocks(blocks as u32));
    }
    eng.jebs = (0..blocks as u32)
        .map(|i| Jeb::new(i * sector, sector))
        .collect();
    // The detection found about as many nodes as the scan links: their refs reserved whole,
    // and with `pages_ahead`, the pages of the image and of those refs mapped ahead of the
    // scan on another core.
    eng.refs.reserve(hints.len());
    eng.ref_block.reserve(hints.len());
    let tracks = if pages_ahead {
        vec![
            Track::read(eng.img),
            Track::write(&eng.refs),
            Track::write(&eng.ref_block),
        ]
    } else {
        Vec::new()
    };
    with_pages_ahead(tracks, |ahead| eng.scan_medium(ahead));
    eng.finish(geom, flash)
}

impl<'a> Engine<'a> {
    fn new(img: &'a [u8], geom: &Geometry, opts: &ScanOptions) -> Self {
        Engine {
            img,
            e: geom.endian,
            sector: geom.erase_size,
            cm: geom.cleanmarker_size,
            opts: *opts,
            jebs: Vec::new(),
            refs: Vec::new(),
            ref_block: Vec::new(),
            caches: Caches::default(),
            xattr_datums: Vec::new(),
            xd_version: HashMap::new(),
            xattr_refs: Vec::new(),
            log: Vec::new(),
            log_dropped: 0,
            dirt: Vec::new(),
            highest_ino: 0,
            highest_xid: 0,
            highest_xseqno: 0,
            pseudo_random: 0,
            forced_ro: false,
            failure: None,
            halted: false,
            nextblock: None,
            nr_free_blocks: 0,
            nr_erasing_blocks: 0,
            empty_blocks: 0,
            end_marker: None,
            hints: &[],
            hint_at: 0,
        }
    }

    /// Logs a message, unless the kernel has already stopped.
    pub(super) fn msg(&mut self, level: Level, offset: Option<u32>, text: String) {
        if self.halted {
            return;
        }
        if self.log.len() >= MAX_LOG {
            self.log_dropped += 1;
            return;
        }
        self.log.push(KernelMsg {
            level,
            offset,
            text,
        });
    }

    /// Records a fatal condition (the first one wins) and stops logging.
    pub(super) fn fail(&mut self, f: MountFailure) {
        if self.failure.is_none() {
            self.failure = Some(f);
        }
        self.halted = true;
    }

    /// A kernel `BUG()`: the mount oopses.
    pub(super) fn bug(&mut self, what: &str) -> Bug {
        self.fail(MountFailure::Other(format!("kernel BUG: {what}")));
        Bug
    }

    /// Absolute write position of a block (`offset + sector_size - free_size`).
    pub(super) fn write_pos(&self, b: usize) -> u32 {
        let j = &self.jebs[b];
        j.offset.wrapping_add(self.sector.wrapping_sub(j.free))
    }

    /// `jffs2_link_node_ref` for a node: `raw` is the offset with the state in its low bits.
    /// Returns the index of the new ref.
    pub(super) fn link(
        &mut self,
        b: usize,
        raw: u32,
        len: u32,
        kind: NodeKind,
        ino: Option<u32>,
        from_summary: bool,
    ) -> Result<usize, Bug> {
        let ofs = raw & !3;
        let state = state_of(raw);
        self.check_contiguous(b, ofs, len)?;
        let idx = self.refs.len();
        let j = &mut self.jebs[b];
        j.nrefs += 1;
        j.last_ofs = ofs;
        j.last_obsolete = state == RefState::Obsolete;
        j.last_node = Some(idx);
        match state {
            RefState::Unchecked => j.unchecked = j.unchecked.wrapping_add(len),
            RefState::Normal | RefState::Pristine => j.used = j.used.wrapping_add(len),
            RefState::Obsolete => j.dirty = j.dirty.wrapping_add(len),
        }
        j.free = j.free.wrapping_sub(len);
        self.refs.push(NodeRef {
            offset: ofs,
            len,
            state,
            kind,
            from_summary,
            ino,
        });
        self.ref_block.push(b as u32);
        if let Some(i) = ino {
            if let Some(c) = self.caches.get_mut(i) {
                c.nodes.push(idx);
            }
        }
        Ok(idx)
    }

    /// The contiguity rule of `jffs2_link_node_ref` (§7.1): the first ref of a block is at
    /// its start, every other one at the write position; otherwise the kernel BUG()s.
    fn check_contiguous(&mut self, b: usize, ofs: u32, len: u32) -> Result<(), Bug> {
        let j = &self.jebs[b];
        if j.nrefs == 0 {
            if ofs != j.offset {
                return Err(self.bug(&format!(
                    "first ref of the block at 0x{:08x} is at 0x{ofs:08x}",
                    j.offset
                )));
            }
            return Ok(());
        }
        let wp = self.write_pos(b);
        if ofs != wp {
            let last = j.last_ofs;
            let text = jffs2_error(
                "jffs2_link_node_ref",
                &format!(
                    "Adding new ref {PTR} at (0x{ofs:08x}-0x{:08x}) not immediately after previous (0x{last:08x}-0x{wp:08x})",
                    ofs.wrapping_add(len)
                ),
            );
            self.msg(Level::Err, Some(ofs), text);
            return Err(self.bug(&format!(
                "ref at 0x{ofs:08x} not immediately after the previous one (0x{last:08x}-0x{wp:08x})"
            )));
        }
        Ok(())
    }

    /// `jffs2_scan_dirty_space` (§3.2): `size` bytes of dirt at the write position, merged
    /// into the last ref when that is obsolete. `cause` `None` = accounting only (not listed
    /// in [`Scan::dirt`]).
    pub(super) fn dirty(
        &mut self,
        b: usize,
        size: u32,
        cause: Option<DirtCause>,
    ) -> Result<(), Bug> {
        if size == 0 {
            return Ok(());
        }
        let (free, wasted) = (self.jebs[b].free, self.jebs[b].wasted);
        if size > free {
            self.msg(
                Level::Err,
                None,
                format!(
                    "Dirty space 0x{size:x} larger then free_size 0x{free:x} (wasted 0x{wasted:x})"
                ),
            );
            return Err(self.bug(&format!(
                "dirty space 0x{size:x} larger than free_size 0x{free:x} in the block at 0x{:08x}",
                self.jebs[b].offset
            )));
        }
        let at = self.write_pos(b);
        let j = &mut self.jebs[b];
        if !(j.nrefs > 0 && j.last_obsolete) {
            // A new REF_OBSOLETE ref at the write position (contiguous by construction).
            j.nrefs += 1;
            j.last_ofs = at;
            j.last_obsolete = true;
            j.last_node = None;
        }
        j.dirty = j.dirty.wrapping_add(size);
        j.free -= size;
        if let Some(c) = cause {
            self.note_dirt(at, size, c);
        }
        Ok(())
    }

    fn note_dirt(&mut self, offset: u32, len: u32, cause: DirtCause) {
        let full = self.dirt.len() >= MAX_DIRT;
        if let Some(last) = self.dirt.last_mut() {
            let contiguous = u64::from(last.offset) + u64::from(last.len) == u64::from(offset)
                && offset % self.sector != 0;
            if contiguous && (last.cause == cause || full) {
                if last.cause != cause {
                    last.cause = DirtCause::Mixed;
                }
                last.len = last.len.saturating_add(len);
                return;
            }
        }
        self.dirt.push(Dirt { offset, len, cause });
    }

    /// `jffs2_mark_node_obsolete` while SCANNING (§7.1): the node's space moves from used or
    /// unchecked to dirty (or wasted), nothing is written and no block is refiled.
    pub(super) fn mark_obsolete(&mut self, idx: usize) {
        let Some(r) = self.refs.get(idx) else { return };
        if r.state == RefState::Obsolete {
            return;
        }
        let (state, freed) = (r.state, r.len);
        let b = self.ref_block[idx] as usize;
        let is_next = self.nextblock == Some(b);
        let j = &mut self.jebs[b];
        if state == RefState::Unchecked {
            j.unchecked = j.unchecked.wrapping_sub(freed);
        } else {
            j.used = j.used.wrapping_sub(freed);
        }
        if (j.dirty != 0 || j.wasted.wrapping_add(freed) > ISDIRTY_LIMIT) && !is_next {
            j.dirty = j.dirty.wrapping_add(freed);
            // Convert wasted space to dirty.
            j.dirty = j.dirty.wrapping_add(j.wasted);
            j.wasted = 0;
        } else {
            j.wasted = j.wasted.wrapping_add(freed);
        }
        if j.last_node == Some(idx) {
            j.last_obsolete = true;
        }
        if let Some(r) = self.refs.get_mut(idx) {
            r.state = RefState::Obsolete;
        }
    }

    /// `jffs2_scan_make_ino_cache` (§3.3, §5.1): finds or creates the cache for `ino` and
    /// returns its number. Inode 0 is never found: each request creates a phantom cache
    /// numbered `++highest_ino` (`jffs2_add_ino_cache`).
    pub(super) fn make_ino_cache(&mut self, ino: u32) -> u32 {
        if self.caches.get_mut(ino).is_some() {
            return ino;
        }
        if ino > self.highest_ino {
            self.highest_ino = ino;
        }
        let mut n = ino;
        if n == 0 {
            self.highest_ino = self.highest_ino.wrapping_add(1);
            n = self.highest_ino;
        }
        // After a wrap-around the number may already exist: the kernel would then hold two
        // caches with one number; here they share one.
        let c = self.caches.get_or_default(n);
        if ino == ROOT_INO {
            c.pino_nlink = 1;
        }
        n
    }

    /// Adds a dirent to its directory's `scan_dents` with `jffs2_add_fd_to_list`; the loser
    /// of a name clash is marked obsolete (§5.2).
    pub(super) fn add_dirent(&mut self, dir: u32, fd: ScanDirent) {
        let out = match self.caches.get_mut(dir) {
            Some(c) => c.dents.add(fd),
            None => return,
        };
        match out {
            FdAdd::Inserted => {}
            FdAdd::Replaced(old) => self.mark_obsolete(old.node),
            FdAdd::Dropped(new) => self.mark_obsolete(new.node),
        }
    }

    /// `jffs2_setup_xattr_datum` (§9.1): finds or creates the datum and returns its current
    /// version.
    pub(super) fn setup_xattr_datum(&mut self, xid: u32, version: u32) -> u32 {
        if xid > self.highest_xid && !self.xd_version.contains_key(&xid) {
            self.highest_xid = xid;
        }
        *self.xd_version.entry(xid).or_insert(version)
    }

    /// `jffs2_scan_classify_jeb` (§3.4).
    pub(super) fn classify(&mut self, b: usize) -> BlockClass {
        let sector = self.sector;
        let cm = self.cm;
        let j = &mut self.jebs[b];
        let uu = j.used.wrapping_add(j.unchecked);
        if uu == pad4(cm) && j.dirty == 0 && j.nrefs <= 1 {
            BlockClass::Cleanmarker
        } else if sector.wrapping_sub(uu) <= ISDIRTY_LIMIT {
            j.wasted = j.wasted.wrapping_add(j.dirty);
            j.dirty = 0;
            BlockClass::Clean
        } else if j.used != 0 || j.unchecked != 0 {
            BlockClass::PartDirty
        } else {
            BlockClass::AllDirty
        }
    }

    /// `file_dirty` (§3.1): the free tail becomes dirt, wasted becomes dirt, and the block
    /// goes to the dirty or very dirty list.
    fn file_dirty(&mut self, b: usize) {
        let free = self.jebs[b].free;
        // Cannot exceed free_size; a BUG here is impossible.
        let _ = self.dirty(b, free, None);
        let j = &mut self.jebs[b];
        j.dirty = j.dirty.wrapping_add(j.wasted);
        j.wasted = 0;
        j.list = if j.dirty >= self.sector / 2 {
            BlockList::VeryDirty
        } else {
            BlockList::Dirty
        };
    }

    /// The per-state filing of `jffs2_scan_medium` (§3.1).
    fn file_block(&mut self, b: usize, class: BlockClass) {
        self.jebs[b].class = class;
        self.jebs[b].free_at_scan = self.jebs[b].free;
        match class {
            BlockClass::Empty => {
                self.empty_blocks += 1;
                self.nr_erasing_blocks += 1;
                self.jebs[b].list = BlockList::ErasePending;
            }
            BlockClass::Cleanmarker => {
                if self.jebs[b].dirty == 0 {
                    self.jebs[b].list = BlockList::Free;
                    self.nr_free_blocks += 1;
                } else {
                    self.jebs[b].list = BlockList::ErasePending;
                    self.nr_erasing_blocks += 1;
                }
            }
            BlockClass::Clean => self.jebs[b].list = BlockList::Clean,
            BlockClass::PartDirty => {
                let free = self.jebs[b].free;
                let better = match self.nextblock {
                    None => true,
                    Some(n) => self.jebs[n].free < free,
                };
                if free > MIN_FREE && better {
                    if let Some(old) = self.nextblock {
                        self.file_dirty(old);
                    }
                    self.nextblock = Some(b);
                    self.jebs[b].list = BlockList::Nextblock;
                } else {
                    self.file_dirty(b);
                }
            }
            BlockClass::AllDirty => {
                self.jebs[b].list = BlockList::ErasePending;
                self.nr_erasing_blocks += 1;
            }
        }
    }

    /// The loop and epilogue of `jffs2_scan_medium` (§3.1).
    fn scan_medium(&mut self, ahead: Option<&PagesAhead>) {
        for b in 0..self.jebs.len() {
            if let Some(a) = ahead {
                a.at(0, self.jebs[b].offset as usize);
                a.at(1, self.refs.len() * size_of::<NodeRef>());
                a.at(2, self.ref_block.len() * size_of::<u32>());
            }
            self.jebs[b].refs_start = self.refs.len();
            if self.end_marker.is_some() {
                // OpenWrt: every block after the end marker is BLK_STATE_ALLFF, unread.
                self.jebs[b].refs_end = self.refs.len();
                self.file_block(b, BlockClass::Empty);
                continue;
            }
            let class = match self.scan_eraseblock(b) {
                Ok(c) => c,
                // A BUG in the middle of a full scan: the kernel is gone; close the block as
                // it stands so the rest of the image can still be examined.
                Err(Bug) => {
                    let j = &mut self.jebs[b];
                    j.dirty = j.dirty.wrapping_add(j.wasted);
                    j.wasted = 0;
                    self.classify(b)
                }
            };
            self.jebs[b].refs_end = self.refs.len();
            self.file_block(b, class);
        }
        // Nextblock dirty is always seen as wasted.
        if let Some(n) = self.nextblock {
            let j = &mut self.jebs[n];
            j.wasted = j.wasted.wrapping_add(j.dirty);
            j.dirty = 0;
        }
        if self.nr_erasing_blocks > 0 && !self.halted {
            let used: u64 = self.jebs.iter().map(|j| u64::from(j.used)).sum();
            let unchecked: u64 = self.jebs.iter().map(|j| u64::from(j.unchecked)).sum();
            let nr_blocks = self.jebs.len() as u32;
            if used == 0 && unchecked == 0 && self.nr_free_blocks + self.empty_blocks != nr_blocks {
                self.msg(
                    Level::Notice,
                    None,
                    "Cowardly refusing to erase blocks on filesystem with no valid JFFS2 nodes"
                        .to_string(),
                );
                self.msg(
                    Level::Notice,
                    None,
                    format!(
                        "empty_blocks {}, bad_blocks 0, c->nr_blocks {}",
                        self.empty_blocks, nr_blocks
                    ),
                );
                self.fail(MountFailure::Other(
                    "Cowardly refusing to erase blocks on filesystem with no valid JFFS2 nodes"
                        .to_string(),
                ));
            }
        }
    }

    fn finish(self, geom: &Geometry, flash_size: u32) -> Scan {
        let blocks = self
            .jebs
            .iter()
            .enumerate()
            .map(|(i, j)| BlockInfo {
                index: i as u32,
                offset: j.offset,
                class: j.class,
                used: j.used,
                unchecked: j.unchecked,
                dirty: j.dirty,
                wasted: j.wasted,
                free: j.free,
                summary: j.summary.clone(),
                bytes_read: j.bytes_read,
                list: j.list,
                free_at_scan: j.free_at_scan,
                refs: j.refs_start..j.refs_end,
            })
            .collect();
        let inodes = self
            .caches
            .into_sorted()
            .map(|(ino, c)| {
                (
                    ino,
                    InodeCache {
                        ino,
                        nodes: c.nodes,
                        scan_dents: c.dents.into_vec(),
                        pino_nlink: c.pino_nlink,
                    },
                )
            })
            .collect();
        Scan {
            geometry: *geom,
            refs: self.refs,
            inodes,
            xattr_datums: self.xattr_datums,
            xattr_refs: self.xattr_refs,
            blocks,
            log: self.log,
            failure: self.failure,
            highest_ino: self.highest_ino,
            flash_size,
            dirt: self.dirt,
            forced_read_only: self.forced_ro,
            pseudo_random: self.pseudo_random,
            highest_xid: self.highest_xid,
            highest_xseqno: self.highest_xseqno,
            log_dropped: self.log_dropped,
            end_marker: self.end_marker,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cache remembered from the last lookup never stands in for another number.
    #[test]
    fn caches_are_found_by_number_whatever_was_looked_up_last() {
        let mut c = Caches::default();
        for (ino, node) in [(5, 0), (3, 1), (5, 2), (9, 3), (9, 4), (3, 5)] {
            c.get_or_default(ino).nodes.push(node);
        }
        assert!(c.get_mut(4).is_none());
        assert_eq!(c.get_mut(9).map(|x| x.nodes.clone()), Some(vec![3, 4]));
        assert!(c.get_mut(10).is_none());
        assert_eq!(c.get_mut(9).map(|x| x.nodes.len()), Some(2));
        c.get_or_default(4).pino_nlink = 1;
        let all: Vec<(u32, Vec<usize>, u32)> = c
            .into_sorted()
            .map(|(ino, x)| (ino, x.nodes, x.pino_nlink))
            .collect();
        assert_eq!(
            all,
            vec![
                (3, vec![1, 5], 0),
                (4, vec![], 1),
                (5, vec![0, 2], 0),
                (9, vec![3, 4], 0)
            ]
        );
    }
}
