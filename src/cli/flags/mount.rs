//! The options of `jffs2-mount`, in the order of `--help` and the manual page; the `--help`
//! text is generated from the table.

use super::{
    help_flag, help_lines, offset_flag, size_flag, version_flag, Flag, Help, Section, Takes,
    Values, ALL, BASE,
};

/// Id of `--oobsize`.
pub(crate) const OPT_OOBSIZE: u32 = 1000;
/// Id of `--pagesize`.
pub(crate) const OPT_PAGESIZE: u32 = 1001;
/// Id of `--cache-size`.
pub(crate) const OPT_CACHE_SIZE: u32 = 1002;
/// Id of `--threads`.
pub(crate) const OPT_THREADS: u32 = 1003;

/// How the image is read.
const IMAGE: Section = Section {
    title: "Image (detected when not given):",
    heading: Some("IMAGE OPTIONS"),
};

/// How it is mounted.
const MOUNT: Section = Section {
    title: "Mount:",
    heading: Some("MOUNT OPTIONS"),
};

/// The rest.
const OTHER: Section = Section {
    title: "Other:",
    heading: Some("OTHER OPTIONS"),
};

/// Every option of `jffs2-mount`.
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "eraseblock",
        short: b'e',
        long: &["erase-size", "eraseblock"],
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line("Erase block size, as mkfs.jffs2's -e (128KiB)"),
        doc: "Erase block size, in mkfs.jffs2's grammar (detected when not given). --eraseblock=SIZE is the same.",
        section: IMAGE,
        ..BASE
    },
    Flag {
        key: "little-endian",
        short: b'l',
        long: &["little-endian"],
        help: Help::Line("The image is little-endian"),
        doc: "The image is little-endian.",
        section: IMAGE,
        ..BASE
    },
    Flag {
        key: "big-endian",
        short: b'b',
        long: &["big-endian"],
        help: Help::Line("The image is big-endian"),
        doc: "The image is big-endian.",
        section: IMAGE,
        ..BASE
    },
    offset_flag(IMAGE, ALL, 0, true),
    size_flag(IMAGE, ALL, 0, true),
    Flag {
        key: "oobsize",
        long: &["oobsize"],
        id: OPT_OOBSIZE,
        takes: Takes::Required("N", Values::Any),
        help: Help::Line(
            "The image is a raw NAND dump with N bytes of OOB after\n\
             every page: they are removed first",
        ),
        doc: "The image is a raw NAND dump with N bytes of OOB after every page: they are removed first (the image is then read into memory).",
        section: IMAGE,
        ..BASE
    },
    Flag {
        key: "pagesize",
        long: &["pagesize"],
        id: OPT_PAGESIZE,
        takes: Takes::Required("N", Values::Any),
        help: Help::Line("NAND page size of such a dump (default 2048)"),
        doc: "NAND page size of such a dump (default 2048).",
        section: IMAGE,
        ..BASE
    },
    Flag {
        key: "options",
        short: b'o',
        long: &["options"],
        takes: Takes::Required("OPTS", Values::Any),
        help: Help::Line(
            "Mount options, comma-separated: allow_other,\n\
             allow_root, default_permissions, fsname=NAME,\n\
             subtype=NAME, auto_unmount, nosuid, nodev, noexec,\n\
             noatime, ...; others are given to FUSE as they are;\n\
             always read-only (rw is ignored, with a warning)",
        ),
        doc: "Mount options, comma-separated, as mount(8) gives them: allow_other, allow_root, default_permissions, fsname=NAME, subtype=NAME, auto_unmount, dev, nodev, suid, nosuid, exec, noexec, atime, noatime, sync, async, dirsync; mount(8)'s own (defaults, auto, noauto, user, users, nofail, _netdev, x-*) are ignored; others are given to FUSE as they are. The mount is always read-only: ro is implied and rw is ignored, with a warning.",
        section: MOUNT,
        ..BASE
    },
    Flag {
        key: "foreground",
        short: b'f',
        long: &["foreground"],
        help: Help::Line(
            "Stay in the foreground (default: return once the mount\n\
             is ready and serve it in the background)",
        ),
        doc: "Stay in the foreground until unmounted or interrupted (default: return once the mount is ready and serve it in the background).",
        section: MOUNT,
        ..BASE
    },
    Flag {
        key: "unmount",
        short: b'u',
        long: &["unmount"],
        help: Help::Line("Unmount MOUNTPOINT (the only operand) and exit"),
        doc: "Unmount MOUNTPOINT, given as the only operand (fusermount3 -u, or umount(2) as root), and exit.",
        section: MOUNT,
        ..BASE
    },
    Flag {
        key: "cache-size",
        long: &["cache-size"],
        id: OPT_CACHE_SIZE,
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line("Decompressed data kept in memory (default: image/16, 1-64MiB)"),
        doc: "Decompressed file data kept in memory between reads (KiB, MiB, GiB suffixes; default: a sixteenth of the image, at least 1MiB, at most 64MiB).",
        section: OTHER,
        ..BASE
    },
    Flag {
        key: "threads",
        long: &["threads"],
        id: OPT_THREADS,
        takes: Takes::Required("N", Values::Any),
        help: Help::Line("Threads serving requests, 1 to 64 (default: cores, at most 8)"),
        doc: "Threads serving requests, 1 to 64 (default: one per core, at most 8).",
        section: OTHER,
        ..BASE
    },
    help_flag(OTHER),
    version_flag(OTHER),
];

/// What comes before the options in `--help`.
const HEAD: &str = "Usage: jffs2-mount [OPTIONS] IMAGE MOUNTPOINT
       jffs2-mount -u MOUNTPOINT

Mounts a JFFS2 image read-only through FUSE, showing what Linux shows when it mounts
the image: names, modes, owners, times, hard links, symlinks, devices, extended
attributes and POSIX ACLs, statfs figures. No kernel JFFS2 or MTD support is needed;
an ordinary user mounts through fusermount3 (package fuse3). File data is decompressed
when read. An image Linux would refuse to mount is mounted all the same, with a
warning naming why. Unmount with jffs2-mount -u, fusermount3 -u or umount.

";

/// What comes after the options in `--help`.
const TAIL: &str = "
Exit status: 0 mounted (in the background: the mount is ready), unmounted, or (in the
foreground) served until unmounted or interrupted; 1 the image cannot be read or is
not JFFS2, or the mount or unmount failed (/dev/fuse or fusermount3 missing included);
16 usage error.
";

/// The `--help` text.
pub fn help() -> String {
    format!("{HEAD}{}{TAIL}", help_lines(FLAGS, ALL, 28))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_clap, check_help_kinds, check_table, check_text};
    use super::*;
    use crate::cli::describe::mount_command;

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, true);
        check_text(FLAGS, ALL, &help(), &[]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(mount_command(), FLAGS, ALL);
    }
}
