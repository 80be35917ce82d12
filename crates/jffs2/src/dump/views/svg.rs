//! `--map FILE.svg`: the erase blocks as a grid of squares coloured by state, each with a bar
//! of used / dirty / free space and a dot when its summary was used, a tooltip per block and
//! a legend. Hand-written SVG 1.1, no scripts.

use std::fmt::Write as _;

use super::blocks::{BlockState, BlockView};
use crate::scan::SummaryUse;

const CELL: u32 = 22;
const GAP: u32 = 3;
const MARGIN: u32 = 16;

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

/// What a state means, for the legend.
fn meaning(s: BlockState) -> &'static str {
    match s {
        BlockState::Clean => "clean (valid nodes)",
        BlockState::Dirty => "dirty (valid nodes and dirt)",
        BlockState::VeryDirty => "very dirty (half or more dirt)",
        BlockState::AllDirty => "all dirty (no valid node)",
        BlockState::Nextblock => "being written (nextblock)",
        BlockState::Free => "free (cleanmarker only)",
        BlockState::Erased => "erased (no cleanmarker)",
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
    /// Top of the grid.
    top: u32,
    /// Height of the grid.
    grid_h: u32,
    width: u32,
    height: u32,
}

impl Layout {
    /// The layout for `n` blocks under `title`.
    fn new(n: u32, title: &str) -> Layout {
        let cols = ((f64::from(n.max(1)) * 2.0).sqrt().ceil() as u32).clamp(8, 64);
        let rows = n.div_ceil(cols).max(1);
        let grid_w = cols * (CELL + GAP) - GAP;
        let legend_rows = BlockState::ALL.len().div_ceil(2) as u32 + 2;
        // Wide enough for the grid, the legend and the title (about 9 px per character).
        let title_w = title.chars().count() as u32 * 9;
        let width = (grid_w + 2 * MARGIN).max(560).max(title_w + 2 * MARGIN);
        let top = MARGIN + 34;
        let grid_h = rows * (CELL + GAP) - GAP;
        let height = top + grid_h + 24 + legend_rows * 20 + MARGIN;
        Layout {
            cols,
            top,
            grid_h,
            width,
            height,
        }
    }
}

/// The SVG picture of `blocks`; `title` heads it (e.g. the image name and geometry).
pub fn svg_map(blocks: &[BlockView], title: &str) -> String {
    let l = Layout::new(blocks.len() as u32, title);
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
    let counts = totals_line(&mut s, blocks);
    for (i, b) in blocks.iter().enumerate() {
        let (c, r) = (i as u32 % l.cols, i as u32 / l.cols);
        let x = MARGIN + c * (CELL + GAP);
        let y = l.top + r * (CELL + GAP);
        block_cell(&mut s, b, x, y);
    }
    legend(&mut s, &counts, l.top + l.grid_h + 24);
    s.push_str("</svg>\n");
    s
}

/// The line under the title (blocks, their size, the space shares); returns the blocks per
/// state, in [`BlockState::ALL`] order.
fn totals_line(s: &mut String, blocks: &[BlockView]) -> [usize; 8] {
    let mut counts = [0usize; 8];
    let (mut used, mut dirty, mut free) = (0u64, 0u64, 0u64);
    for b in blocks {
        if let Some(i) = BlockState::ALL.iter().position(|x| *x == b.state) {
            counts[i] += 1;
        }
        used += u64::from(b.used) + u64::from(b.unchecked);
        dirty += u64::from(b.dirty) + u64::from(b.wasted);
        free += u64::from(b.free);
    }
    let total = (used + dirty + free).max(1);
    let _ = writeln!(
        s,
        r##"<text x="{MARGIN}" y="{}" fill="#444">{} blocks of {} bytes: {:.1}% used, {:.1}% dirty, {:.1}% free</text>"##,
        MARGIN + 28,
        blocks.len(),
        blocks.first().map_or(0, |b| b.size),
        used as f64 * 100.0 / total as f64,
        dirty as f64 * 100.0 / total as f64,
        free as f64 * 100.0 / total as f64,
    );
    counts
}

/// One block's cell at (`x`, `y`): its colour, tooltip, space bar and summary dot.
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
    let _ = writeln!(
        s,
        r##"<g><title>{}</title><rect x="{x}" y="{y}" width="{CELL}" height="{CELL}" fill="{}" stroke="#555" stroke-width="0.6"/>"##,
        xml(&tip),
        colour(b.state)
    );
    // The space bar: used (dark), dirty (red), free (white) along the bottom.
    let size = f64::from(b.size.max(1));
    let w = f64::from(CELL - 4);
    let mut bx = f64::from(x + 2);
    let by = y + CELL - 6;
    for (bytes, fill) in [
        (u64::from(b.used) + u64::from(b.unchecked), "#1b1b1b"),
        (u64::from(b.dirty) + u64::from(b.wasted), "#d50000"),
        (u64::from(b.free), "#ffffff"),
    ] {
        let bw = (bytes as f64 / size * w).min(w);
        if bw > 0.05 {
            let _ = write!(
                s,
                r#"<rect x="{bx:.2}" y="{by}" width="{bw:.2}" height="4" fill="{fill}"/>"#
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

/// The legend from `ly` down: each state's colour and count, the bar, the summary dot.
fn legend(s: &mut String, counts: &[usize; 8], ly: u32) {
    for (k, st) in BlockState::ALL.iter().enumerate() {
        let (col, row) = (k as u32 % 2, k as u32 / 2);
        let x = MARGIN + col * 270;
        let y = ly + row * 20;
        let _ = writeln!(
            s,
            r##"<rect x="{x}" y="{y}" width="14" height="14" fill="{}" stroke="#555" stroke-width="0.6"/><text x="{}" y="{}">{} — {}</text>"##,
            colour(*st),
            x + 20,
            y + 11,
            xml(meaning(*st)),
            counts[k]
        );
    }
    let y = ly + (BlockState::ALL.len() as u32).div_ceil(2) * 20;
    let _ = writeln!(
        s,
        r##"<rect x="{MARGIN}" y="{}" width="6" height="4" fill="#1b1b1b"/><rect x="{}" y="{}" width="6" height="4" fill="#d50000"/><rect x="{}" y="{}" width="6" height="4" fill="#ffffff" stroke="#555" stroke-width="0.4"/><text x="{}" y="{}">bar: used, dirty, free space</text>"##,
        y + 6,
        MARGIN + 6,
        y + 6,
        MARGIN + 12,
        y + 6,
        MARGIN + 24,
        y + 11
    );
    let _ = writeln!(
        s,
        r##"<circle cx="{}" cy="{}" r="2.5" fill="#ffffff" stroke="#000" stroke-width="0.6"/><text x="{}" y="{}">summary used by the kernel</text>"##,
        MARGIN + 274,
        y + 7,
        MARGIN + 290,
        y + 11
    );
}
