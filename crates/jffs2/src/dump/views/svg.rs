//! `--map FILE.svg`: the erase blocks as a grid of numbered squares coloured by state, each
//! with a bar of used / dirty / free space and a dot when its summary was used, a tooltip per
//! block, the first block's number and offset at the head of each row, and a legend of the
//! states that occur. Hand-written SVG 1.1, no scripts.

use std::fmt::Write as _;

use super::blocks::{BlockState, BlockView};
use crate::scan::{SpaceTotals, SummaryUse};

const CELL: u32 = 30;
const GAP: u32 = 3;
const MARGIN: u32 = 16;
/// Width of a character of the row labels (11 px monospace), with some slack.
const MONO_W: u32 = 7;
/// Height of a legend row.
const LEGEND_ROW: u32 = 20;
/// Width of a legend column.
const LEGEND_COL: u32 = 330;

/// Fill colour of a state.
fn colour(s: BlockState) -> &'static str {
    match s {
        BlockState::Clean => "#2e7d32",
        BlockState::Dirty => "#f9a825",
        BlockState::VeryDirty => "#ef6c00",
        BlockState::AllDirty => "#c62828",
        BlockState::Nextblock => "#1565c0",
        BlockState::Free => "#c8e6c9",
        BlockState::Erased => "#ffffff",
        BlockState::ErasePending => "#8e24aa",
    }
}

/// Colour of a block number written on a square of state `s`: readable on its fill.
fn ink(s: BlockState) -> &'static str {
    match s {
        BlockState::Dirty | BlockState::Free | BlockState::Erased => "#000000",
        _ => "#ffffff",
    }
}

/// One legend entry: a state, and for free blocks whether they hold a cleanmarker (an image
/// made without cleanmarkers has free blocks that are simply erased).
type Key = (BlockState, bool);

fn key(b: &BlockView) -> Key {
    (b.state, b.state == BlockState::Free && b.cleanmarker)
}

/// What a legend entry means.
fn meaning((s, cleanmarker): Key) -> &'static str {
    match s {
        BlockState::Clean => "clean (valid nodes)",
        BlockState::Dirty => "dirty (valid nodes and dirt)",
        BlockState::VeryDirty => "very dirty (half or more dirt)",
        BlockState::AllDirty => "all dirty (no valid node)",
        BlockState::Nextblock => "being written (nextblock)",
        BlockState::Free if cleanmarker => "free (cleanmarker only)",
        BlockState::Free => "free (erased; the image has no cleanmarkers)",
        BlockState::Erased => "erased (no cleanmarker: erased again before use)",
        BlockState::ErasePending => "cleanmarker and dirt",
    }
}

/// Escapes text for XML content and attributes.
fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if c.is_control() && c != '\n' => {}
            c => o.push(c),
        }
    }
    o
}

/// Where things go in the picture.
struct Layout {
    /// Cells per row.
    cols: u32,
    /// Left edge of the grid (the row labels are left of it).
    left: u32,
    /// Top of the grid.
    top: u32,
    /// Height of the grid.
    grid_h: u32,
    width: u32,
    height: u32,
}

impl Layout {
    /// The layout for `n` blocks under `title`, with `keys` legend entries.
    fn new(n: u32, title: &str, keys: u32) -> Layout {
        // A power of two per row, so that the rows' offsets are round numbers; about twice as
        // wide as high.
        let fit = (f64::from(n.max(1)) * 2.0).sqrt() as u32;
        let cols = (1u32 << (31 - fit.max(1).leading_zeros())).clamp(8, 64);
        let rows = n.div_ceil(cols).max(1);
        // "NUMBER  0xOFFSET", right-aligned against the grid.
        let label_chars = (n.max(1) - 1).to_string().len() as u32 + 2 + 10;
        let left = MARGIN + label_chars.max(13) * MONO_W + 6;
        let grid_w = cols * (CELL + GAP) - GAP;
        let legend_rows = keys.div_ceil(2) + 2;
        // Wide enough for the grid, the legend and the title (about 9 px per character).
        let title_w = title.chars().count() as u32 * 9;
        let width = (left + grid_w + MARGIN)
            .max(2 * LEGEND_COL + 2 * MARGIN)
            .max(title_w + 2 * MARGIN);
        let top = MARGIN + 56;
        let grid_h = rows * (CELL + GAP) - GAP;
        let height = top + grid_h + 24 + legend_rows * LEGEND_ROW + MARGIN;
        Layout {
            cols,
            left,
            top,
            grid_h,
            width,
            height,
        }
    }
}

/// The SVG picture of `blocks` with the scan's space counters `space`; `title` heads it (e.g.
/// the image name and geometry).
pub fn svg_map(blocks: &[BlockView], space: &SpaceTotals, title: &str) -> String {
    let keys = keys(blocks);
    let l = Layout::new(blocks.len() as u32, title, keys.len() as u32);
    let (width, height) = (l.width, l.height);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r##"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">
<title>{}</title>
<rect width="100%" height="100%" fill="#fafafa"/>
<text x="{MARGIN}" y="{}" font-size="15" font-weight="bold">{}</text>"##,
        xml(title),
        MARGIN + 12,
        xml(title)
    );
    totals_line(&mut s, blocks, space);
    let _ = writeln!(
        s,
        r##"<text x="{}" y="{}" text-anchor="end" font-family="monospace" font-size="11" fill="#444">block  offset</text>"##,
        l.left - 6,
        l.top - 6
    );
    for (i, b) in blocks.iter().enumerate() {
        let (c, r) = (i as u32 % l.cols, i as u32 / l.cols);
        let x = l.left + c * (CELL + GAP);
        let y = l.top + r * (CELL + GAP);
        if c == 0 {
            let _ = writeln!(
                s,
                r##"<text x="{}" y="{}" text-anchor="end" font-family="monospace" font-size="11" fill="#222">{}  0x{:08x}</text>"##,
                l.left - 6,
                y + CELL / 2 + 4,
                b.index,
                b.offset
            );
        }
        block_cell(&mut s, b, x, y);
    }
    let summaries = blocks.iter().any(|b| b.summary == SummaryUse::Used);
    legend(&mut s, blocks, &keys, summaries, l.top + l.grid_h + 24);
    s.push_str("</svg>\n");
    s
}

/// The legend entries that occur among `blocks`, in [`BlockState::ALL`] order.
fn keys(blocks: &[BlockView]) -> Vec<Key> {
    let mut k: Vec<Key> = Vec::new();
    for st in BlockState::ALL {
        for cm in [true, false] {
            if blocks.iter().any(|b| key(b) == (st, cm)) {
                k.push((st, cm));
            }
        }
    }
    k
}

/// The line under the title: the blocks, their size, and the space shares as `jffs2-fsck`
/// prints them for the same image.
fn totals_line(s: &mut String, blocks: &[BlockView], space: &SpaceTotals) {
    let flash: u64 = blocks.iter().map(|b| u64::from(b.size)).sum();
    let sh = space.shares(flash);
    let _ = writeln!(
        s,
        r##"<text x="{MARGIN}" y="{}" fill="#444">{} blocks of {} bytes: used {}, unchecked {}, dirty {}, wasted {}, free {}</text>"##,
        MARGIN + 30,
        blocks.len(),
        blocks.first().map_or(0, |b| b.size),
        sh.used,
        sh.unchecked,
        sh.dirty,
        sh.wasted,
        sh.free,
    );
}

/// One block's cell at (`x`, `y`): its colour, number, tooltip, space bar and summary dot.
fn block_cell(s: &mut String, b: &BlockView, x: u32, y: u32) {
    let sum = match &b.summary {
        SummaryUse::Used => "summary used",
        SummaryUse::Rejected(_) => "summary rejected",
        SummaryUse::None if b.summary_present => "summary not read",
        SummaryUse::None => "no summary",
    };
    let tip = format!(
        "block {} at 0x{:08x}: {}\nused {} + unchecked {}, dirty {}, wasted {}, free {}\n{} nodes, cleanmarker: {}, {}",
        b.index,
        b.offset,
        b.state.name(),
        b.used,
        b.unchecked,
        b.dirty,
        b.wasted,
        b.free,
        b.nodes,
        if b.cleanmarker { "yes" } else { "no" },
        sum
    );
    let digits = b.index.to_string().len();
    let font = match digits {
        0..=3 => 11,
        4 => 10,
        _ => 8,
    };
    let _ = writeln!(
        s,
        r##"<g><title>{}</title><rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{}" stroke="#555" stroke-width="0.6"/><text class="block" x="{}" y="{}" text-anchor="middle" font-size="{font}" fill="{}">{}</text>"##,
        xml(&tip),
        colour(b.state),
        x + CELL / 2,
        y + 15,
        ink(b.state),
        b.index
    );
    // The space bar: used (dark), dirty (red), free (white) along the bottom.
    let size = f64::from(b.size.max(1));
    let w = f64::from(CELL - 4);
    let mut bx = f64::from(x + 2);
    let by = y + CELL - 7;
    for (bytes, fill) in [
        (u64::from(b.used) + u64::from(b.unchecked), "#1b1b1b"),
        (u64::from(b.dirty) + u64::from(b.wasted), "#d50000"),
        (u64::from(b.free), "#ffffff"),
    ] {
        let bw = (bytes as f64 / size * w).min(w);
        if bw > 0.05 {
            let _ = write!(
                s,
                r#"<rect x="{bx:.2}" y="{by}" width="{bw:.2}" height="5" fill="{fill}"/>"#
            );
            bx += bw;
        }
    }
    if b.summary == SummaryUse::Used {
        let _ = write!(
            s,
            r##"<circle cx="{}" cy="{}" r="2.5" fill="#ffffff" stroke="#000" stroke-width="0.6"/>"##,
            x + CELL - 5,
            y + 5
        );
    }
    let _ = writeln!(s, "</g>");
}

/// The legend from `ly` down: each entry that occurs with its colour and count, the bar, and
/// the summary dot when a block has one.
fn legend(s: &mut String, blocks: &[BlockView], keys: &[Key], summaries: bool, ly: u32) {
    for (k, entry) in keys.iter().enumerate() {
        let (col, row) = (k as u32 % 2, k as u32 / 2);
        let x = MARGIN + col * LEGEND_COL;
        let y = ly + row * LEGEND_ROW;
        let n = blocks.iter().filter(|b| key(b) == *entry).count();
        let _ = writeln!(
            s,
            r##"<rect x="{x}" y="{y}" width="14" height="14" fill="{}" stroke="#555" stroke-width="0.6"/><text class="legend" x="{}" y="{}">{} — {n}</text>"##,
            colour(entry.0),
            x + 20,
            y + 11,
            xml(meaning(*entry)),
        );
    }
    let y = ly + (keys.len() as u32).div_ceil(2) * LEGEND_ROW;
    let _ = writeln!(
        s,
        r##"<rect x="{MARGIN}" y="{}" width="6" height="5" fill="#1b1b1b"/><rect x="{}" y="{}" width="6" height="5" fill="#d50000"/><rect x="{}" y="{}" width="6" height="5" fill="#ffffff" stroke="#555" stroke-width="0.4"/><text x="{}" y="{}">bar: used (and unchecked), dirty, free space</text>"##,
        y + 6,
        MARGIN + 6,
        y + 6,
        MARGIN + 12,
        y + 6,
        MARGIN + 24,
        y + 11
    );
    if summaries {
        let _ = writeln!(
            s,
            r##"<circle cx="{}" cy="{}" r="2.5" fill="#ffffff" stroke="#000" stroke-width="0.6"/><text x="{}" y="{}">summary used by the kernel</text>"##,
            MARGIN + LEGEND_COL + 4,
            y + 8,
            MARGIN + LEGEND_COL + 20,
            y + 11
        );
    }
}
