//! The options of `jffs2-mkfs` / `mkfs.jffs2` (`docs/spec/mtd-utils-spec.md` §3.1): the
//! table is in the order of the manual page; `rank` keeps mkfs.jffs2's long-option order.

use super::{Flag, Section, Takes, Values, BASE};

/// Id of `--with-xattr`.
pub(crate) const OPT_WITH_XATTR: u32 = 1000;
/// Id of `--with-selinux`.
pub(crate) const OPT_WITH_SELINUX: u32 = 1001;
/// Id of `--with-posix-acl`.
pub(crate) const OPT_WITH_POSIX_ACL: u32 = 1002;
/// Id of `--summary`.
pub(crate) const OPT_SUMMARY: u32 = 2000;
/// Id of `--threads`.
pub(crate) const OPT_THREADS: u32 = 2001;
/// Id of `--list-compressors` (`-L` is reported as `L`: it exits differently).
pub(crate) const OPT_LIST_COMPRESSORS: u32 = 2002;
/// Id of `--no-progress`.
pub(crate) const OPT_NO_PROGRESS: u32 = 2003;

/// What mkfs.jffs2 lacks, under its own heading in the manual page.
const EXTRA: Section = Section {
    title: "",
    heading: Some("JFFS2-TOOLS ADDITIONS"),
};

/// Every option of `jffs2-mkfs` (and of `mkfs.jffs2`: both names have them all).
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "pad",
        short: b'p',
        long: &["pad"],
        takes: Takes::Optional("SIZE", Values::Any),
        doc: "Pad output to SIZE bytes with 0xFF. If SIZE is not specified, the output is padded to the end of the final erase block. SIZE must be attached (-p0x400000, --pad=0x400000).",
        rank: 1,
        ..BASE
    },
    Flag {
        key: "root",
        short: b'r',
        also: b"d",
        long: &["root"],
        takes: Takes::Required("DIR", Values::Dir),
        doc: "Build file system from directory DIR (default: the current directory). -d DIR is the same.",
        rank: 2,
        ..BASE
    },
    Flag {
        key: "pagesize",
        short: b's',
        long: &["pagesize"],
        takes: Takes::Required("SIZE", Values::Any),
        doc: "Use page size (max data node size) SIZE. Set according to the target system's memory management page size (default: 4KiB).",
        rank: 3,
        ..BASE
    },
    Flag {
        key: "eraseblock",
        short: b'e',
        long: &["eraseblock"],
        takes: Takes::Required("SIZE", Values::Any),
        doc: "Use erase block size SIZE (default: 64KiB). Below 8KiB it is raised to 8KiB, with a message.",
        rank: 4,
        ..BASE
    },
    Flag {
        key: "cleanmarker",
        short: b'c',
        long: &["cleanmarker"],
        takes: Takes::Required("SIZE", Values::Any),
        doc: "Size of cleanmarker (default 12); checked against the erase size given before it.",
        rank: 12,
        ..BASE
    },
    Flag {
        key: "compression-mode",
        short: b'm',
        long: &["compression-mode"],
        takes: Takes::Required("MODE", Values::Modes),
        doc: "Select compression mode (default: priority).",
        rank: 18,
        ..BASE
    },
    Flag {
        key: "disable-compressor",
        short: b'x',
        long: &["disable-compressor"],
        takes: Takes::Required("COMPRESSOR_NAME", Values::Compressors),
        doc: "Disable a compressor.",
        rank: 19,
        ..BASE
    },
    Flag {
        key: "enable-compressor",
        short: b'X',
        long: &["enable-compressor"],
        takes: Takes::Required("COMPRESSOR_NAME", Values::Compressors),
        doc: "Enable a compressor.",
        rank: 20,
        ..BASE
    },
    Flag {
        key: "compressor-priority",
        short: b'y',
        long: &["compressor-priority"],
        takes: Takes::Required("PRIORITY:COMPRESSOR_NAME", Values::Any),
        doc: "Set the priority of a compressor.",
        rank: 22,
        ..BASE
    },
    Flag {
        key: "list-compressors",
        short: b'L',
        long: &["list-compressors"],
        id: OPT_LIST_COMPRESSORS,
        doc: "Show the list of the available compressors: -L prints it with an error status (255), as mkfs.jffs2 does; --list-compressors prints it on standard output and exits 0.",
        rank: 29,
        ..BASE
    },
    Flag {
        key: "test-compression",
        short: b't',
        long: &["test-compression"],
        doc: "Call decompress and compare with the original (for test).",
        rank: 21,
        ..BASE
    },
    Flag {
        key: "no-cleanmarkers",
        short: b'n',
        long: &["no-cleanmarkers"],
        doc: "Don't add a cleanmarker to every eraseblock.",
        rank: 11,
        ..BASE
    },
    Flag {
        key: "output",
        short: b'o',
        long: &["output"],
        takes: Takes::Required("FILE", Values::File),
        doc: "Output to FILE (default: stdout). FILE is opened as mkfs.jffs2 opens it (links followed by the kernel); a regular file is replaced when the image is complete, keeping its mode (see COMPATIBILITY).",
        rank: 5,
        ..BASE
    },
    Flag {
        key: "little-endian",
        short: b'l',
        long: &["little-endian"],
        doc: "Create a little-endian filesystem (default: the host's byte order).",
        rank: 10,
        ..BASE
    },
    Flag {
        key: "big-endian",
        short: b'b',
        long: &["big-endian"],
        doc: "Create a big-endian filesystem.",
        rank: 9,
        ..BASE
    },
    Flag {
        key: "devtable",
        short: b'D',
        long: &["devtable"],
        takes: Takes::Required("FILE", Values::File),
        doc: "Use the named FILE as a device table file (mkfs.jffs2's format: name type mode uid gid major minor start inc count). Unlike mkfs.jffs2, a field that is neither a number nor -, a device without major and minor, a mode beyond 07777 and more than 1048576 entries in all are errors naming the line.",
        rank: 17,
        ..BASE
    },
    Flag {
        key: "faketime",
        short: b'f',
        long: &["faketime"],
        doc: "Change all file times to '0' for regression testing.",
        rank: 16,
        ..BASE
    },
    Flag {
        key: "squash",
        short: b'q',
        long: &["squash"],
        doc: "Squash permissions and owners making all files be owned by root (-U and -P).",
        rank: 13,
        ..BASE
    },
    Flag {
        key: "squash-uids",
        short: b'U',
        long: &["squash-uids"],
        doc: "Squash owners making all files be owned by root.",
        rank: 14,
        ..BASE
    },
    Flag {
        key: "squash-perms",
        short: b'P',
        long: &["squash-perms"],
        doc: "Squash permissions on all files (no group or other write, no setuid or setgid).",
        rank: 15,
        ..BASE
    },
    Flag {
        key: "with-xattr",
        long: &["with-xattr"],
        id: OPT_WITH_XATTR,
        doc: "Stuff all xattr entries into image.",
        rank: 24,
        ..BASE
    },
    Flag {
        key: "with-selinux",
        long: &["with-selinux"],
        id: OPT_WITH_SELINUX,
        doc: "Stuff only SELinux Labels into jffs2 image.",
        rank: 25,
        ..BASE
    },
    Flag {
        key: "with-posix-acl",
        long: &["with-posix-acl"],
        id: OPT_WITH_POSIX_ACL,
        doc: "Stuff only POSIX ACL entries into jffs2 image.",
        rank: 26,
        ..BASE
    },
    Flag {
        key: "help",
        short: b'h',
        hidden: b"?",
        long: &["help"],
        doc: "Display the help text and exit (-? does the same, with status 1).",
        rank: 6,
        ..BASE
    },
    Flag {
        key: "verbose",
        short: b'v',
        long: &["verbose"],
        doc: "Verbose operation: list every entry written.",
        rank: 7,
        ..BASE
    },
    Flag {
        key: "version",
        short: b'V',
        long: &["version"],
        doc: "Display version information.",
        rank: 8,
        ..BASE
    },
    Flag {
        key: "incremental",
        short: b'i',
        long: &["incremental"],
        takes: Takes::Required("FILE", Values::File),
        doc: "Parse FILE (an image) and generate appendage output for it.",
        rank: 23,
        ..BASE
    },
    Flag {
        key: "summary",
        long: &["summary"],
        id: OPT_SUMMARY,
        doc: "Write an erase-block summary into every erase block: the bytes of jffs2-mkfs followed by jffs2-sumtool; the image then ends on an erase-block boundary.",
        section: EXTRA,
        rank: 27,
        ..BASE
    },
    Flag {
        key: "threads",
        long: &["threads"],
        id: OPT_THREADS,
        takes: Takes::Required("N", Values::Any),
        doc: "Compress on N threads, 1 to 1024 (default: one per core; the output does not depend on it).",
        section: EXTRA,
        rank: 28,
        ..BASE
    },
    Flag {
        key: "no-progress",
        long: &["no-progress"],
        id: OPT_NO_PROGRESS,
        doc: "Never show a progress bar (shown only when standard error is a terminal).",
        section: EXTRA,
        rank: 30,
        ..BASE
    },
];

/// The help text: mkfs.jffs2's, verbatim (its layout cannot be generated from [`FLAGS`]
/// without changing bytes), with the options it lacks added at the end. A unit test checks
/// that it names exactly the options of [`FLAGS`].
pub const HELP: &str = "Usage: mkfs.jffs2 [OPTIONS]
Make a JFFS2 file system image from an existing directory tree

Options:
  -p, --pad[=SIZE]        Pad output to SIZE bytes with 0xFF. If SIZE is
                          not specified, the output is padded to the end of
                          the final erase block
  -r, -d, --root=DIR      Build file system from directory DIR (default: cwd)
  -s, --pagesize=SIZE     Use page size (max data node size) SIZE.
                          Set according to target system's memory management
                          page size (default: 4KiB)
  -e, --eraseblock=SIZE   Use erase block size SIZE (default: 64KiB)
  -c, --cleanmarker=SIZE  Size of cleanmarker (default 12)
  -m, --compression-mode=MODE
                          Select compression mode (default: priority)
  -x, --disable-compressor=COMPRESSOR_NAME
                          Disable a compressor
  -X, --enable-compressor=COMPRESSOR_NAME
                          Enable a compressor
  -y, --compressor-priority=PRIORITY:COMPRESSOR_NAME
                          Set the priority of a compressor
  -L, --list-compressors  Show the list of the available compressors
  -t, --test-compression  Call decompress and compare with the original (for test)
  -n, --no-cleanmarkers   Don't add a cleanmarker to every eraseblock
  -o, --output=FILE       Output to FILE (default: stdout)
  -l, --little-endian     Create a little-endian filesystem
  -b, --big-endian        Create a big-endian filesystem
  -D, --devtable=FILE     Use the named FILE as a device table file
  -f, --faketime          Change all file times to '0' for regression testing
  -q, --squash            Squash permissions and owners making all files be owned by root
  -U, --squash-uids       Squash owners making all files be owned by root
  -P, --squash-perms      Squash permissions on all files
      --with-xattr        stuff all xattr entries into image
      --with-selinux      stuff only SELinux Labels into jffs2 image
      --with-posix-acl    stuff only POSIX ACL entries into jffs2 image
  -h, --help              Display this help text
  -v, --verbose           Verbose operation
  -V, --version           Display version information
  -i, --incremental=FILE  Parse FILE and generate appendage output for it

jffs2-tools additions (mkfs.jffs2 has none of these; without them the bytes are
identical to mkfs.jffs2's):
      --summary           Write an erase-block summary into every erase block
                          (the bytes of jffs2-mkfs followed by jffs2-sumtool; the
                          image then ends on an erase-block boundary)
      --threads=N         Compress on N threads, 1 to 1024 (default: one per
                          core; the output does not depend on it)
      --no-progress       Never show a progress bar (shown only when stderr is
                          a terminal)
  -X lzma, -x lzma, -y PRIO:lzma
                          OpenWrt's LZMA compressor (id 8; readable by OpenWrt
                          kernels only). Naming it selects OpenWrt's priorities
                          (lzo 90, zlib 80, lzma 70, rtime 50); -x lzma alone
                          gives the image of plain mkfs.jffs2
  SOURCE_DATE_EPOCH       When set in the environment, every timestamp later
                          than it is clamped to it (reproducible builds)

SIZE arguments follow mkfs.jffs2: decimal, 0x hex or 0 octal; -e also takes
KiB/MiB suffixes and reads a bare number below 4096 as KiB. Note that `-p SIZE`
(with a space) pads to the end of the last erase block only: write --pad=SIZE.
Names that are not UTF-8 or hold control or bidirectional characters are shown
escaped (\\x1b, \\r, \\xe2\\x80\\xae) in messages and the -v listing; mkfs.jffs2
prints them raw. Other names are shown exactly as mkfs.jffs2 shows them.
Exit status: 0 on success, 1 for an unknown option, 255 for any other error.
";

#[cfg(test)]
mod tests {
    use super::super::tests::{
        check_clap, check_help_kinds, check_ranks, check_table, check_text, message,
    };
    use super::super::ALL;
    use super::*;
    use crate::cli::describe::{mkfs_command, mkfs_jffs2_command};

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, false);
        check_text(FLAGS, ALL, HELP, &[]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(mkfs_command(), FLAGS, ALL);
        check_clap(mkfs_jffs2_command(), FLAGS, ALL);
    }

    #[test]
    fn long_options_in_mkfs_jffs2_order() {
        check_ranks(FLAGS, &[ALL]);
        assert_eq!(
            message(FLAGS, ALL, "--c"),
            "option '--c' is ambiguous; possibilities: '--cleanmarker' '--compression-mode' \
             '--compressor-priority'"
        );
        assert_eq!(
            message(FLAGS, ALL, "--s"),
            "option '--s' is ambiguous; possibilities: '--squash' '--squash-uids' \
             '--squash-perms' '--summary'"
        );
    }
}
