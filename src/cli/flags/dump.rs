//! The options of `jffs2-dump`, of `jffs2dump` (`docs/spec/mtd-utils-spec.md` §6) and of
//! `jffs2reader` (§7). The `jffs2-dump` and `jffs2dump` table is in the order of the manual
//! page; `rank` keeps jffs2dump's long-option order.

use super::{offset_flag, size_flag, Flag, Help, Names, Section, Takes, Values, BASE};

/// `jffs2-dump`.
pub const OURS: Names = 1;
/// `jffs2-dump` invoked as `jffs2dump`.
pub const DROP_IN: Names = 2;

/// Id of `--json`.
pub(crate) const OPT_JSON: u32 = 1000;
/// Id of `--summary`.
pub(crate) const OPT_SUMMARY: u32 = 1001;
/// Id of `--blocks`.
pub(crate) const OPT_BLOCKS: u32 = 1002;
/// Id of `--map`.
pub(crate) const OPT_MAP: u32 = 1003;
/// Id of `--info`.
pub(crate) const OPT_INFO: u32 = 1004;
/// Id of `--list`.
pub(crate) const OPT_LIST: u32 = 1005;
/// Id of `--cat`.
pub(crate) const OPT_CAT: u32 = 1006;
/// Id of `--extract`.
pub(crate) const OPT_EXTRACT: u32 = 1007;
/// Id of `--force`.
pub(crate) const OPT_FORCE: u32 = 1008;
/// Id of `--erase-size` and `--eraseblock`.
pub(crate) const OPT_ERASE: u32 = 1009;
/// Id of `--no-xattrs`.
pub(crate) const OPT_NO_XATTRS: u32 = 1010;
/// Id of `--no-owners`.
pub(crate) const OPT_NO_OWNERS: u32 = 1011;
/// Id of `--devtable`.
pub(crate) const OPT_DEVTABLE: u32 = 1012;
/// Id of `--find`.
pub(crate) const OPT_FIND: u32 = 1013;

/// The views, `jffs2-dump`'s own.
const VIEWS: Section = Section {
    title: "",
    heading: Some("VIEWS AND FILES"),
};

/// Every option of `jffs2-dump` ([`OURS`]) and `jffs2dump` ([`DROP_IN`]).
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "help",
        short: b'h',
        long: &["help"],
        doc: "Display this help and exit.",
        rank: 1,
        ..BASE
    },
    Flag {
        key: "version",
        short: b'V',
        long: &["version"],
        doc: "Display version information and exit.",
        rank: 2,
        ..BASE
    },
    Flag {
        key: "bigendian",
        short: b'b',
        long: &["bigendian"],
        doc: "Image is big endian.",
        rank: 3,
        ..BASE
    },
    Flag {
        key: "littleendian",
        short: b'l',
        long: &["littleendian"],
        doc: "Image is little endian.",
        rank: 4,
        ..BASE
    },
    Flag {
        key: "content",
        short: b'c',
        long: &["content"],
        doc: "Dump image contents: every node, as jffs2dump prints it.",
        rank: 7,
        ..BASE
    },
    Flag {
        key: "endianconvert",
        short: b'e',
        long: &["endianconvert"],
        takes: Takes::Required("FNAME", Values::File),
        doc: "Convert image endianness, output to file FNAME (every node converted; FNAME replaced only when complete).",
        rank: 8,
        ..BASE
    },
    // -r and --recalccrc are separate rows: jffs2dump gives --recalccrc an argument.
    Flag {
        key: "r",
        short: b'r',
        doc: "Recalc name and data crc on endian conversion.",
        ..BASE
    },
    Flag {
        key: "datsize",
        short: b'd',
        long: &["datsize"],
        takes: Takes::Required("LEN", Values::Any),
        doc: "Size of data chunks, when oob data in binary image (NAND only).",
        rank: 9,
        ..BASE
    },
    Flag {
        key: "oobsize",
        short: b'o',
        long: &["oobsize"],
        takes: Takes::Required("LEN", Values::Any),
        doc: "Size of oob data chunk in binary image (NAND only).",
        rank: 10,
        ..BASE
    },
    Flag {
        key: "verbose",
        short: b'v',
        long: &["verbose"],
        doc: "Verbose output.",
        rank: 12,
        ..BASE
    },
    Flag {
        key: "big-endian",
        long: &["big-endian"],
        id: b'b' as u32,
        doc: "Same as -b.",
        names: OURS,
        rank: 5,
        ..BASE
    },
    Flag {
        key: "little-endian",
        long: &["little-endian"],
        id: b'l' as u32,
        doc: "Same as -l.",
        names: OURS,
        rank: 6,
        ..BASE
    },
    Flag {
        key: "recalccrc",
        long: &["recalccrc"],
        id: b'r' as u32,
        takes: Takes::Optional("IGNORED", Values::Any),
        doc: "Same as -r; an attached argument is accepted and ignored.",
        names: OURS,
        rank: 11,
        ..BASE
    },
    Flag {
        key: "recalccrc",
        long: &["recalccrc"],
        id: b'r' as u32,
        takes: Takes::Required("ARG", Values::Any),
        doc: "Same as -r, but takes an argument (ignored), as jffs2dump declares it: --recalccrc -e FILE consumes the -e.",
        names: DROP_IN,
        rank: 11,
        ..BASE
    },
    Flag {
        key: "info",
        long: &["info"],
        id: OPT_INFO,
        doc: "Byte order, erase size, page size, cleanmarkers, compressors, node and inode counts, and the mkfs.jffs2 command line that rebuilds the image from its extracted tree.",
        section: VIEWS,
        names: OURS,
        rank: 17,
        ..BASE
    },
    Flag {
        key: "json",
        long: &["json"],
        id: OPT_JSON,
        doc: "Every node: offset, type, fields, CRC verdicts, the kernel's verdict; and the gaps between nodes.",
        section: VIEWS,
        names: OURS,
        rank: 13,
        ..BASE
    },
    Flag {
        key: "blocks",
        long: &["blocks"],
        id: OPT_BLOCKS,
        doc: "Per erase block: state, used/dirty/free bytes, summary, cleanmarker.",
        section: VIEWS,
        names: OURS,
        rank: 15,
        ..BASE
    },
    Flag {
        key: "summary",
        long: &["summary"],
        id: OPT_SUMMARY,
        doc: "Each erase block's summary records.",
        section: VIEWS,
        names: OURS,
        rank: 14,
        ..BASE
    },
    Flag {
        key: "map",
        long: &["map"],
        id: OPT_MAP,
        takes: Takes::Required("FILE.svg", Values::File),
        doc: "A picture of the erase blocks coloured by state.",
        section: VIEWS,
        names: OURS,
        rank: 16,
        ..BASE
    },
    Flag {
        key: "list",
        long: &["list"],
        id: OPT_LIST,
        doc: "The files as Linux shows them, ls -lR style (-v: xattrs too).",
        section: VIEWS,
        names: OURS,
        rank: 18,
        ..BASE
    },
    Flag {
        key: "cat",
        long: &["cat"],
        id: OPT_CAT,
        takes: Takes::Required("PATH", Values::Any),
        doc: "A file's content to standard output.",
        section: VIEWS,
        names: OURS,
        rank: 19,
        ..BASE
    },
    Flag {
        key: "extract",
        long: &["extract"],
        id: OPT_EXTRACT,
        takes: Takes::Required("DIR", Values::Dir),
        doc: "Recreate the files in DIR (created if missing; must be empty unless --force).",
        section: VIEWS,
        names: OURS,
        rank: 20,
        ..BASE
    },
    Flag {
        key: "force",
        long: &["force"],
        id: OPT_FORCE,
        doc: "Extract into a non-empty DIR: merges, and never replaces anything; existing directories (DIR included) keep their owner, mode, times and xattrs.",
        section: VIEWS,
        names: OURS,
        rank: 21,
        ..BASE
    },
    Flag {
        key: "no-xattrs",
        long: &["no-xattrs"],
        id: OPT_NO_XATTRS,
        doc: "Do not set extended attributes when extracting.",
        section: VIEWS,
        names: OURS,
        rank: 23,
        ..BASE
    },
    Flag {
        key: "no-owners",
        long: &["no-owners"],
        id: OPT_NO_OWNERS,
        doc: "Do not set owners when extracting.",
        section: VIEWS,
        names: OURS,
        rank: 24,
        ..BASE
    },
    Flag {
        key: "devtable",
        long: &["devtable"],
        id: OPT_DEVTABLE,
        takes: Takes::Required("FILE", Values::File),
        doc: "Where to list devices that cannot be created (default: DIR.devtable, which never replaces an existing file; FILE may not be the image).",
        section: VIEWS,
        names: OURS,
        rank: 25,
        ..BASE
    },
    Flag {
        key: "eraseblock",
        long: &["eraseblock", "erase-size"],
        primary: 1,
        id: OPT_ERASE,
        takes: Takes::Required("SIZE", Values::Any),
        doc: "Erase block size (same grammar as mkfs.jffs2 -e); detected when not given. --eraseblock=SIZE is the same.",
        section: VIEWS,
        names: OURS,
        rank: 22,
        ..BASE
    },
    offset_flag(VIEWS, OURS, 26, false),
    size_flag(VIEWS, OURS, 27, false),
    Flag {
        key: "find",
        long: &["find"],
        id: OPT_FIND,
        doc: "List every JFFS2 filesystem in the file (a full-flash dump, an update file): start and end offset, byte order, erase size, node and file counts, and whether it is a clean mkfs.jffs2 image or was written by the kernel (--json: one JSON document). With --extract=DIR: every filesystem found is extracted, each read in place (as with --offset/--size), into DIR/fs_1, DIR/fs_2, ... numbered as --find lists them (DIR created if missing; must be empty unless --force).",
        section: VIEWS,
        names: OURS,
        rank: 28,
        ..BASE
    },
];

/// jffs2dump's usage text after its first line, verbatim.
const OPTIONS_HELP: &str = "Dump the contents of a binary JFFS2 image.

 -h, --help                   display this help and exit
 -V, --version                display version information and exit
 -b, --bigendian              image is big endian
 -l, --littleendian           image is little endian
 -c, --content                dump image contents
 -e, --endianconvert=FNAME    convert image endianness, output to file fname
 -r, --recalccrc              recalc name and data crc on endian conversion
 -d, --datsize=LEN            size of data chunks, when oob data in binary image (NAND only)
 -o, --oobsize=LEN            size of oob data chunk in binary image (NAND only)
 -v, --verbose                verbose output
";

/// What `jffs2-dump` adds, kept as written (its layout is not [`super::help_lines`]'s).
const OURS_HELP: &str = "
Views and files (jffs2-dump only; the byte order and erase size are detected unless
-b/-l and --erase-size are given; several views may be combined, except --json and --cat):
     --info                   byte order, erase size, page size, cleanmarkers, compressors,
                              node and inode counts, and the mkfs.jffs2 command line that
                              rebuilds the image from its extracted tree
     --json                   every node: offset, type, fields, CRC verdicts, the kernel's
                              verdict; and the gaps between nodes
     --blocks                 per erase block: state, used/dirty/free bytes, summary,
                              cleanmarker
     --summary                each erase block's summary records
     --map=FILE.svg           a picture of the erase blocks coloured by state
     --list                   the files as Linux shows them, ls -lR style (-v: xattrs too)
     --cat=PATH               a file's content to standard output
     --extract=DIR            recreate the files in DIR (created if missing; must be empty
                              unless --force, which merges and never replaces anything);
                              hard links, holes, symlinks (never followed), devices (as
                              root; else listed in DIR.devtable), owners (as root), modes,
                              times, xattrs where permitted
     --force                  extract into a non-empty DIR; existing directories (and DIR)
                              keep their owner, mode, times and xattrs
     --no-xattrs, --no-owners do not set extended attributes / owners
     --devtable=FILE          where to list devices that cannot be created
     --erase-size=SIZE        erase block size (same grammar as mkfs.jffs2 -e);
     --eraseblock=SIZE        here -e is --endianconvert (jffs2dump's), not the size
     --offset=N, --size=N     read only the filesystem N bytes into the file (and N
                              bytes long), in place, as if cut out with dd: offsets
                              count from there (decimal, 0x hex, KiB/MiB/GiB)
     --find                   list every JFFS2 filesystem in the file: start and end,
                              byte order, erase size, node and file counts, clean mkfs
                              image or kernel-written (--json: one document);
                              with --extract=DIR, each one into DIR/fs_N (N as listed)
Exit status of the views: 0; 1 on errors; 2 when --extract refused something or --cat
met unreadable data (reported on standard error).

jffs2-tools differences (the -c text is jffs2dump's, byte for byte):
  -e converts every node in place -- xrefs, obsolete and unknown nodes, summaries,
     device numbers and POSIX ACLs included (jffs2dump drops or corrupts them) --
     keeps wrong CRCs wrong, and replaces FNAME only when it is complete
  a node with totlen 0 is shown once (jffs2dump loops forever); -d/-o refuse an
  image that is not a whole number of data+oob pages
  --big-endian, --little-endian  same as -b, -l
Exit status: 0 on success, corrupt images included; 1 on errors and usage errors.
Invoked as jffs2dump, a wrong number of operands exits 0, as jffs2dump does.
";

/// The help text under `name`: jffs2dump's exactly under its own name, with our additions
/// otherwise.
pub fn help(name: &str) -> String {
    let mut s = format!("Usage: {name} [OPTION]... INPUTFILE\n{OPTIONS_HELP}");
    if name != "jffs2dump" {
        s.push_str(OURS_HELP);
    }
    s
}

/// Every option of `jffs2reader` (which has no long options; `--help` and `--version` are
/// ours).
pub const READER: &[Flag] = &[
    Flag {
        key: "d",
        short: b'd',
        takes: Takes::Required("PATH", Values::Any),
        doc: "List directory PATH.",
        ..BASE
    },
    Flag {
        key: "r",
        short: b'r',
        doc: "With -d: list recursively.",
        ..BASE
    },
    Flag {
        key: "t",
        short: b't',
        doc: "With -d: show change times.",
        ..BASE
    },
    Flag {
        key: "f",
        short: b'f',
        takes: Takes::Required("PATH", Values::Any),
        doc: "Write file PATH to standard output.",
        ..BASE
    },
    Flag {
        key: "help",
        short: b'h',
        long: &["help"],
        help: Help::Unlisted,
        doc: "Display the usage on standard error.",
        ..BASE
    },
    Flag {
        key: "version",
        short: b'V',
        long: &["version"],
        help: Help::Unlisted,
        doc: "Display version information.",
        ..BASE
    },
];

/// `jffs2reader`'s usage line (verbatim), its options, and what differs.
pub fn reader_help(name: &str) -> String {
    format!(
        "Usage: {name} <image> [-d|-f] < path >
  -d PATH   list directory PATH (-r: recursively, -t: with change times)
  -f PATH   write file PATH to standard output
  (no option: list / recursively)
jffs2-tools differences: the byte order and erase size are detected; every node is
checked and every compressor read, so files show their real size and content (jffs2reader
shows the first node of each file and hides the first entry mkfs.jffs2 writes); link counts,
sizes, device numbers and times are Linux's (times in UTC); entries are listed by name;
names are escaped; symbolic links inside the image are followed for PATH.
"
    )
}

#[cfg(test)]
mod tests {
    use super::super::tests::{
        check_clap, check_help_kinds, check_ranks, check_table, check_text, message,
    };
    use super::super::ALL;
    use super::*;
    use crate::cli::describe::{dump_command, jffs2dump_command, jffs2reader_command};

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, false);
        check_table(READER);
        check_help_kinds(READER, false);
        check_text(FLAGS, OURS, &help("jffs2-dump"), &[]);
        check_text(FLAGS, DROP_IN, &help("jffs2dump"), &[]);
        check_text(READER, ALL, &reader_help("jffs2reader"), &[]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(dump_command(), FLAGS, OURS);
        check_clap(jffs2dump_command(), FLAGS, DROP_IN);
        check_clap(jffs2reader_command(), READER, ALL);
    }

    #[test]
    fn long_options_in_jffs2dump_order() {
        check_ranks(FLAGS, &[OURS, DROP_IN]);
        assert_eq!(
            message(FLAGS, OURS, "--e"),
            "option '--e' is ambiguous; possibilities: '--endianconvert' '--extract' \
             '--eraseblock' '--erase-size'"
        );
        assert_eq!(
            message(FLAGS, DROP_IN, "--recalccrc"),
            "option '--recalccrc' requires an argument"
        );
    }
}
