//! The options of `jffs2-fsck` and of `fsck.jffs2` (fsck(8)'s generic options too), in the
//! order of `--help` and the manual page; the `--help` text is generated from the table.

use super::{
    help_lines, offset_flag, size_flag, Flag, Help, Names, Section, Takes, Values, BASE, OPTIONS,
};

/// `jffs2-fsck`.
pub const PLAIN: Names = 1;
/// `jffs2-fsck` invoked as `fsck.jffs2`.
pub const AS_FSCK: Names = 2;
/// Both names.
const BOTH: Names = PLAIN | AS_FSCK;

/// Id of `--json`.
pub(crate) const OPT_JSON: u32 = 1000;
/// Id of `--compare`.
pub(crate) const OPT_COMPARE: u32 = 1001;
/// Id of `--kernel-log`.
pub(crate) const OPT_KERNEL_LOG: u32 = 1002;
/// Id of `--squash`.
pub(crate) const OPT_SQUASH: u32 = 1003;
/// Id of `--squash-uids`.
pub(crate) const OPT_SQUASH_UIDS: u32 = 1004;
/// Id of `--squash-perms`.
pub(crate) const OPT_SQUASH_PERMS: u32 = 1005;
/// Id of `--faketime`.
pub(crate) const OPT_FAKETIME: u32 = 1006;
/// Id of `--with-xattr`.
pub(crate) const OPT_WITH_XATTR: u32 = 1007;
/// Id of `--with-selinux`.
pub(crate) const OPT_WITH_SELINUX: u32 = 1008;
/// Id of `--with-posix-acl`.
pub(crate) const OPT_WITH_POSIX_ACL: u32 = 1009;
/// Id of `--ignore-mtime`.
pub(crate) const OPT_IGNORE_MTIME: u32 = 1010;
/// Id of `--version` (`-V` is fsck(8)'s verbose flag, ignored).
pub(crate) const OPT_VERSION: u32 = 1011;
/// Id of `--no-progress`.
pub(crate) const OPT_NO_PROGRESS: u32 = 1012;
/// Id of `--repair`.
pub(crate) const OPT_REPAIR: u32 = 1013;

/// fsck(8)'s generic options, only under the `fsck.jffs2` name.
const GENERIC: Section = Section {
    title: "",
    heading: Some("FSCK(8) OPTIONS"),
};

/// A `--compare` adjustment.
const fn compare(
    key: &'static str,
    long: &'static [&'static str],
    id: u32,
    text: &'static str,
    doc: &'static str,
) -> Flag {
    Flag {
        key,
        long,
        id,
        help: Help::Line(text),
        doc,
        names: BOTH,
        ..BASE
    }
}

/// A generic option of fsck(8): accepted under `fsck.jffs2`, named in the prose of `--help`.
const fn generic(letter: u8, key: &'static str, doc: &'static str) -> Flag {
    Flag {
        key,
        short: letter,
        help: Help::Prose,
        doc,
        section: GENERIC,
        names: AS_FSCK,
        ..BASE
    }
}

/// Every option of `jffs2-fsck` ([`PLAIN`]) and `fsck.jffs2` ([`AS_FSCK`]).
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "eraseblock",
        short: b'e',
        long: &["eraseblock"],
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line(
            "Erase block size (mkfs.jffs2 grammar: 0x20000, 128KiB,\n\
             128 = 128 KiB); detected from the image when not given",
        ),
        doc: "Erase block size (mkfs.jffs2 grammar: 0x20000, 128KiB, 128 = 128 KiB); detected from the image when not given.",
        ..BASE
    },
    Flag {
        key: "little-endian",
        short: b'l',
        long: &["little-endian"],
        help: Help::Line("The image is little-endian (detected when not given)"),
        doc: "The image is little-endian (detected when not given).",
        ..BASE
    },
    Flag {
        key: "big-endian",
        short: b'b',
        long: &["big-endian"],
        help: Help::Line("The image is big-endian (detected when not given)"),
        doc: "The image is big-endian (detected when not given).",
        ..BASE
    },
    offset_flag(OPTIONS, BOTH, 0, true),
    size_flag(OPTIONS, BOTH, 0, true),
    Flag {
        key: "verbose",
        short: b'v',
        long: &["verbose"],
        help: Help::Line("Show the detection evidence and every erase block"),
        doc: "Show the detection evidence and every erase block.",
        ..BASE
    },
    Flag {
        key: "json",
        long: &["json"],
        id: OPT_JSON,
        help: Help::Line("Print one JSON document (findings and summary)"),
        doc: "Print one JSON document (findings and summary).",
        ..BASE
    },
    Flag {
        key: "kernel-log",
        long: &["kernel-log"],
        id: OPT_KERNEL_LOG,
        help: Help::Line(
            "Print what Linux 6.1 logs mounting the image and reading\n\
             every file (dmesg style), instead of the findings",
        ),
        doc: "Print what Linux 6.1 logs mounting the image and reading every file (dmesg style), instead of the findings.",
        ..BASE
    },
    Flag {
        key: "repair",
        long: &["repair"],
        id: OPT_REPAIR,
        takes: Takes::Required("OUT", Values::File),
        help: Help::Line(
            "Also write to OUT the image Linux would have shown: what it\n\
             can read, in the same layout, without dead nodes (the\n\
             garbage collection of jffs2-convert); what is left out is\n\
             named. IMAGE itself is never written (an OUT that\n\
             is IMAGE, through links too, is refused: status 16)",
        ),
        doc: "Also write to OUT the image Linux would have shown: what it can read, in the same layout, without dead nodes (the garbage collection of jffs2-convert); what is left out is named. IMAGE itself is never written (an OUT that is IMAGE is refused).",
        ..BASE
    },
    Flag {
        key: "compare",
        long: &["compare"],
        id: OPT_COMPARE,
        takes: Takes::Required("DIR", Values::Dir),
        help: Help::Line(
            "Factory verification: the image's tree must equal DIR\n\
             (names, types, modes, owners, sizes, contents, link\n\
             targets, device numbers, times, xattrs)",
        ),
        doc: "Factory verification: the image's tree must equal DIR (names, types, modes, owners, sizes, contents, link targets, device numbers, times, xattrs).",
        ..BASE
    },
    compare(
        "squash",
        &["squash"],
        OPT_SQUASH,
        "With --compare: the image was made with -q (-U -P)",
        "With --compare: the image was made with -q (-U -P).",
    ),
    compare(
        "squash-uids",
        &["squash-uids"],
        OPT_SQUASH_UIDS,
        "With --compare: made with -U (owners 0:0)",
        "With --compare: made with -U (owners 0:0).",
    ),
    compare(
        "squash-perms",
        &["squash-perms"],
        OPT_SQUASH_PERMS,
        "With --compare: made with -P (no g/o write, setuid, setgid)",
        "With --compare: made with -P (no g/o write, setuid, setgid).",
    ),
    compare(
        "faketime",
        &["faketime"],
        OPT_FAKETIME,
        "With --compare: made with -f (all times 0)",
        "With --compare: made with -f (all times 0).",
    ),
    compare(
        "with-xattr",
        &["with-xattr"],
        OPT_WITH_XATTR,
        "With --compare: made with --with-xattr",
        "With --compare: made with --with-xattr.",
    ),
    compare(
        "with-selinux",
        &["with-selinux"],
        OPT_WITH_SELINUX,
        "With --compare: made with --with-selinux",
        "With --compare: made with --with-selinux.",
    ),
    compare(
        "with-posix-acl",
        &["with-posix-acl"],
        OPT_WITH_POSIX_ACL,
        "With --compare: made with --with-posix-acl",
        "With --compare: made with --with-posix-acl.",
    ),
    compare(
        "ignore-mtime",
        &["ignore-mtime"],
        OPT_IGNORE_MTIME,
        "With --compare: do not compare modification times",
        "With --compare: do not compare modification times.",
    ),
    Flag {
        key: "no-progress",
        long: &["no-progress"],
        id: OPT_NO_PROGRESS,
        help: Help::Line("No progress bar"),
        doc: "No progress bar (shown only when standard error is a terminal).",
        ..BASE
    },
    Flag {
        key: "help",
        short: b'h',
        long: &["help"],
        help: Help::Line("Display this help text"),
        doc: "Display this help text.",
        ..BASE
    },
    Flag {
        key: "version",
        long: &["version"],
        id: OPT_VERSION,
        help: Help::Line("Display version information"),
        doc: "Display version information.",
        ..BASE
    },
    generic(
        b'a',
        "a",
        "Repair automatically: accepted, no effect (the check never writes).",
    ),
    generic(b'p', "p", "Same as -a."),
    generic(b'y', "y", "Answer yes to every question: accepted, no effect."),
    generic(b'n', "n", "Make no changes: accepted (the check never writes)."),
    generic(
        b'f',
        "f",
        "Force a check: accepted, no effect (the check is always complete).",
    ),
    generic(b'V', "V", "fsck's verbose flag: ignored."),
    Flag {
        key: "C",
        short: b'C',
        takes: Takes::Optional("FD", Values::Any),
        help: Help::Prose,
        doc: "Show the progress bar when standard error is a terminal. A file descriptor, if given, must be attached (-C0) and is ignored.",
        section: GENERIC,
        names: AS_FSCK,
        ..BASE
    },
];

/// What comes before the options in `--help`.
const HEAD: &str = "Usage: jffs2-fsck [OPTIONS] IMAGE
Check a JFFS2 image: every node, every CRC, all data, the tree, the summaries

";

/// What comes after the options in `--help` (the same text under both names).
const TAIL: &str = "
As fsck.jffs2, fsck(8)'s -a -p -y -n -f -V -C[fd] are accepted (the check never
writes; -C shows the progress bar).

Exit status: 0 consistent, 4 errors found (or differences from --compare),
8 operational error (unreadable, empty, not JFFS2, standard output not
writable), 16 usage error. With
--repair: 1 when OUT was written and IMAGE had errors (Linux unable to mount it
included) or something was left out (errors corrected), 0 when IMAGE was
consistent, 8 when no repair was possible.
";

/// The `--help` text (under both names).
pub fn help() -> String {
    format!("{HEAD}{}{TAIL}", help_lines(FLAGS, PLAIN, 26))
}

/// [`help`], its usage line naming `name`, the name the tool was run as.
pub fn help_as(name: &str) -> String {
    help().replacen("Usage: jffs2-fsck", &format!("Usage: {name}"), 1)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_clap, check_help_kinds, check_table, check_text};
    use super::*;
    use crate::cli::describe::{fsck_command, fsck_jffs2_command};

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, true);
        // One text for both names; -q, -U and -P are mkfs.jffs2's, which --compare names.
        check_text(FLAGS, BOTH, &help(), &["-q", "-U", "-P"]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(fsck_command(), FLAGS, PLAIN);
        check_clap(fsck_jffs2_command(), FLAGS, AS_FSCK);
    }
}
