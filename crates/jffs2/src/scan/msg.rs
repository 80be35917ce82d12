//! Kernel message wording (`docs/spec/kernel-jffs2-spec.md` Appendix A) and comparison with `dmesg`.
//!
//! [`KernelMsg::text`](super::KernelMsg::text) is what `dmesg` shows after the `jffs2: `
//! prefix. Messages printed with `JFFS2_WARNING` / `JFFS2_NOTICE` / `JFFS2_ERROR` carry the
//! pid of the mounting process, which an offline tool cannot know: it is written as
//! [`PID`]. Three messages have no `jffs2: ` prefix in a real log, and are stored the same
//! way: `Too few erase blocks (%d)` and `Flash size not aligned to erasesize, reducing to
//! %dKiB` (the fs_context `errorf`/`infof` of `jffs2_do_fill_super`) and the
//! `printk(KERN_CRIT …)` `Dirty space … larger then free_size …`.

/// Placeholder for the pid in `warning: (<pid>) function: …` messages.
pub const PID: &str = "<pid>";

/// Placeholder for a `%p` pointer (the kernel prints a hashed address).
pub const PTR: &str = "<ptr>";

/// `JFFS2_WARNING(…)` text: `warning: (<pid>) func: …`.
pub(crate) fn jffs2_warning(func: &str, text: &str) -> String {
    format!("warning: ({PID}) {func}: {text}")
}

/// `JFFS2_ERROR(…)` text: `error: (<pid>) func: …`.
pub(crate) fn jffs2_error(func: &str, text: &str) -> String {
    format!("error: ({PID}) {func}: {text}")
}

/// The kernel's `%#08x` (the `0x` counts in the width; the kernel prints `0x` even for 0).
pub(crate) fn hash08x(v: u32) -> String {
    format!("{v:#08x}")
}

/// Messages jffs2 prints without its `jffs2: ` prefix.
const UNPREFIXED: &[&str] = &[
    "Too few erase blocks (",
    "Flash size not aligned to erasesize, reducing to ",
    "Dirty space 0x",
];

/// Turns one `dmesg` line into the form of [`KernelMsg::text`](super::KernelMsg::text):
/// strips a leading `[ timestamp ]`, requires the `jffs2: ` prefix (or one of the few
/// unprefixed jffs2 messages; returns `None` for other subsystems' lines), and replaces the
/// pid of `warning: (N)`, `notice: (N)` and `error: (N)` by [`PID`] and a hashed pointer
/// after `Adding new ref ` by [`PTR`].
pub fn normalize_dmesg(line: &str) -> Option<String> {
    let mut l = line.trim();
    if l.starts_with('[') {
        if let Some(i) = l.find(']') {
            l = l[i + 1..].trim_start();
        }
    }
    if UNPREFIXED.iter().any(|p| l.starts_with(p)) {
        return Some(l.to_string());
    }
    let rest = l.strip_prefix("jffs2: ")?;
    let mut out = rest.to_string();
    for kind in ["warning: (", "notice: (", "error: ("] {
        if let Some(tail) = out.strip_prefix(kind) {
            if let Some(close) = tail.find(')') {
                if tail[..close].bytes().all(|b| b.is_ascii_digit()) && close > 0 {
                    out = format!("{kind}{PID}{}", &tail[close..]);
                }
            }
            break;
        }
    }
    if let Some(i) = out.find("Adding new ref ") {
        let start = i + "Adding new ref ".len();
        if let Some(sp) = out[start..].find(' ') {
            out.replace_range(start..start + sp, PTR);
        }
    }
    Some(out)
}

/// Whether a message text (as stored in [`KernelMsg::text`](super::KernelMsg::text)) is one
/// the mount *scan* prints (`scan.c`, `summary.c` scan functions, `fs.c` geometry checks,
/// `nodelist.c` accounting BUGs) — as opposed to the build (`build.c`, `xattr.c`), readinode
/// or GC. Used to compare a scan's log with a kernel log.
pub fn is_scan_message(text: &str) -> bool {
    const SCAN: &[&str] = &[
        "Eep. ofs ",
        "ofs 0x",
        "Empty flash at ",
        "Magic bitmask is backwards",
        "Old JFFS2 bitmask found",
        "You cannot use older JFFS2 filesystems",
        "jffs2_scan_eraseblock(): ",
        "Further such events for this erase block",
        "Node at 0x",
        "Perhaps the file system was created with the wrong erase size",
        "CLEANMARKER node found at ",
        "Read-only compatible feature node",
        "Incompatible feature node",
        "jffs2_scan_inode_node(): ",
        "jffs2_scan_dirent_node(): ",
        "Dirent at ",
        "Cowardly refusing to erase blocks",
        "empty_blocks ",
        "Flash size not aligned to erasesize",
        "Too few erase blocks",
        "Dirty space 0x",
    ];
    const SCAN_FUNCS: &[&str] = &[
        ") jffs2_scan_xattr_node: ",
        ") jffs2_scan_xref_node: ",
        ") jffs2_sum_scan_sumnode: ",
        ") jffs2_sum_process_sum_data: ",
        ") jffs2_link_node_ref: ",
    ];
    SCAN.iter().any(|p| text.starts_with(p)) || SCAN_FUNCS.iter().any(|p| text.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(hash08x(0x1234), "0x001234");
        assert_eq!(hash08x(0), "0x000000");
        assert_eq!(hash08x(0x1234_5678), "0x12345678");
    }

    #[test]
    fn normalize() {
        assert_eq!(
            normalize_dmesg("[   12.345678] jffs2: warning: (102) jffs2_sum_scan_sumnode: Summary node crc error, skipping summary information.").as_deref(),
            Some("warning: (<pid>) jffs2_sum_scan_sumnode: Summary node crc error, skipping summary information.")
        );
        assert_eq!(
            normalize_dmesg("jffs2: Empty flash at 0x00000010 ends at 0x00000020").as_deref(),
            Some("Empty flash at 0x00000010 ends at 0x00000020")
        );
        assert_eq!(
            normalize_dmesg("block2mtd: mtd0: [/dev/vda] erase_size = 16KiB"),
            None
        );
        assert_eq!(
            normalize_dmesg("jffs2: error: (1142) jffs2_link_node_ref: Adding new ref 28bd9da7 at (0x000ad578-0x000ae5bc) not immediately after previous (0x000ad578-0x000ad578)").as_deref(),
            Some("error: (<pid>) jffs2_link_node_ref: Adding new ref <ptr> at (0x000ad578-0x000ae5bc) not immediately after previous (0x000ad578-0x000ad578)")
        );
        assert!(!is_scan_message(
            "notice: (<pid>) jffs2_build_xattr_subsystem: complete building xattr subsystem, 0 of xdatum (0 unchecked, 0 orphan) and 0 of xref (0 dead, 0 orphan) found."
        ));
        assert!(!is_scan_message(
            "notice: (<pid>) check_node_data: wrong data CRC in data node at 0x0000be84: read 0x82a401e0, calculated 0xb87b1ed."
        ));
        assert!(is_scan_message(
            "Empty flash at 0x00000010 ends at 0x00000020"
        ));
    }
}
