//! The command lines described for clap, for manual pages and shell completions only.
//!
//! The tools parse with [`super::getopt`] (mtd-utils' grammar cannot be expressed in clap);
//! the [`clap::Command`]s here describe the same options (short letter, long names, value
//! name, whether the value is required or optional, help text) so that `clap_mangen` and
//! `clap_complete` can render them (`crates/gen`). Each [`Personality`] is one name a binary
//! answers to, with its own option set; the unit tests check that its command and its getopt
//! tables agree exactly, so the two can never drift.

use clap::builder::PossibleValue;
use clap::{Arg, ArgAction, Command, ValueHint};

use jffs2::compress::Kind;

use super::getopt::LongOpt;
use super::{convert, dump, fsck, mkfs, sumtool};

/// One name a binary answers to: `jffs2-mkfs`, `mkfs.jffs2`, `jffs2reader`, ...
#[derive(Clone, Copy)]
pub struct Personality {
    /// The name it is invoked as (the manual page's and the completion's name).
    pub name: &'static str,
    /// The installed binary that behaves so (the target of the link for an mtd-utils name).
    pub binary: &'static str,
    /// The manual section: `"1"`, or `"8"` for the checkers (like e2fsck).
    pub section: &'static str,
    /// The clap description of its command line (its `after_help` is the exit status).
    pub command: fn() -> Command,
    /// Its getopt short-option string.
    pub short: &'static str,
    /// Its getopt long options.
    pub long: &'static [LongOpt],
    /// Environment variables it reads: (name, meaning).
    pub environment: &'static [(&'static str, &'static str)],
    /// What it is compatible with, and how (paragraphs separated by blank lines).
    pub compatibility: &'static str,
    /// Related pages, `name(section)`.
    pub see_also: &'static [&'static str],
}

impl Personality {
    /// Whether this is an mtd-utils name (or `fsck.jffs2`) installed as a link.
    pub fn is_link(&self) -> bool {
        self.name != self.binary
    }

    /// The exit status paragraph(s) (the command's `after_help`).
    pub fn exit_status(&self) -> String {
        (self.command)()
            .get_after_help()
            .map(|s| s.to_string())
            .unwrap_or_default()
    }
}

const SEE_ALSO_ALL: &[&str] = &[
    "jffs2-mkfs(1)",
    "jffs2-sumtool(1)",
    "jffs2-dump(1)",
    "jffs2-fsck(8)",
    "jffs2-convert(1)",
];

const SOURCE_DATE_EPOCH: (&str, &str) = (
    "SOURCE_DATE_EPOCH",
    "When set (a number of seconds since 1970), every timestamp later than it is clamped \
     to it, for reproducible builds. Not a number: an error.",
);

const MKFS_COMPAT: &str = "jffs2-mkfs takes mkfs.jffs2's command line unchanged (mtd-utils \
2.x): every option, its number grammar and its quirks, and writes the same bytes as \
mkfs.jffs2 given the same zlib (the system zlib is linked, as mtd-utils does). The options \
under JFFS2-TOOLS ADDITIONS are ours; without them the image is byte for byte \
mkfs.jffs2's.

Invoked as mkfs.jffs2 (a link made at installation), it names itself so in its \
messages; build systems that call mkfs.jffs2 (Yocto, Buildroot, OpenWrt) then use it \
unchanged. Differences, none of which changes a byte of a valid image: device numbers above \
255 are stored in the kernel's 4-byte form instead of being corrupted; the -v listing goes to \
standard error when the image goes to standard output; the output is written to an unnamed \
temporary file and renamed when complete, so a failed or interrupted run never leaves a partial \
image; -o over the -i image is refused; a failed write to standard output is an error (255); \
more warnings.

Outputs (of every jffs2-tools program): FILE is opened by the kernel as mkfs.jffs2 opens it, \
so symbolic links are followed there, with its permission and fs.protected_symlinks checks. \
A pipe or device is written directly. A regular file (reached directly or through links) is \
replaced by a temporary file made beside it, given its mode (and, as root, its owner), and \
renamed over it when complete: a new inode, so other hard links keep the old bytes. A \
dangling link gets the file it names created, removed again if the run fails. A new FILE \
gets mode 0644 less the umask.";

const SUMTOOL_COMPAT: &str = "jffs2-sumtool takes mtd-utils sumtool's command line and \
messages; invoked as sumtool (a link made at installation) it names itself so.

What differs on purpose: the erase size and byte order of the input are detected; without \
-e or -b/-l, what the input was built with is used (with a warning when it is not sumtool's \
default), and a given -e or -b/-l that disagrees stops it with an error (--force-eraseblock \
re-blocks instead); every \
erase block that holds nodes gets a summary, the last one included; nodes are packed as \
tightly as the kernel allows; obsolete nodes stay obsolete; the output keeps the input's size \
and is written atomically, as jffs2-mkfs writes its output (see jffs2-mkfs(1): links \
followed by the kernel, the mode kept, a new inode).";

const DUMP_COMPAT: &str = "jffs2-dump's -c text is jffs2dump's (mtd-utils) byte for byte. \
Invoked as jffs2dump (a link made at installation) it takes exactly jffs2dump's \
options and exit codes; as jffs2reader, that tool's (see jffs2reader(1)).

What differs on purpose: -e converts every node (xrefs, obsolete and unknown nodes, \
summaries, device numbers and POSIX ACLs included) and replaces FNAME only when complete; a \
node with totlen 0 is shown once (jffs2dump loops forever); -d/-o refuse an image that is not \
a whole number of data+oob pages; errors name the file. Outputs are written as jffs2-mkfs \
writes its output (see jffs2-mkfs(1)); --map and --devtable refuse to overwrite the image, \
and the default DIR.devtable never replaces an existing file.";

const JFFS2DUMP_COMPAT: &str = "This is jffs2-dump invoked as jffs2dump: mtd-utils \
jffs2dump's options, messages and exit codes, and its -c text byte for byte. \
--recalccrc requires an argument, as jffs2dump declares it. The views and file access of \
jffs2-dump (--info, --list, --extract, ...) are available under the jffs2-dump name only.

What differs on purpose: -e converts every node (xrefs, obsolete and unknown nodes, \
summaries, device numbers and POSIX ACLs included) and replaces FNAME only when complete; a \
node with totlen 0 is shown once (jffs2dump loops forever); -d/-o refuse an image that is not \
a whole number of data+oob pages.";

const READER_COMPAT: &str = "This is jffs2-dump invoked as jffs2reader (a link made at installation): mtd-utils jffs2reader's command line, with correct output.

What differs on purpose: the byte order and erase size are detected; every node is checked \
and every compressor read, so files show their real size and content (jffs2reader shows the \
first node of each file and hides the first entry mkfs.jffs2 writes); link counts, sizes, \
device numbers and times are Linux's (times in UTC); entries are listed by name; names are \
escaped; symbolic links inside the image are followed for PATH.";

const FSCK_COMPAT: &str = "mtd-utils has no checker for JFFS2: jffs2-fsck reproduces the \
Linux 6.1 mount scan and inode reads, checks every CRC and every data node, and reports \
problems by byte offset. Its exit codes are fsck(8)'s. It never writes to IMAGE: a --repair \
OUT that is IMAGE (through links too) is refused with status 16.

Installed as fsck.jffs2 (a link made at installation, found by fsck(8) in its search path \
or PATH), fsck -t jffs2 IMAGE runs it; under that name it also accepts fsck(8)'s generic \
options (see fsck.jffs2(8)).";

const FSCK_JFFS2_COMPAT: &str = "This is jffs2-fsck invoked as fsck.jffs2, the name fsck(8) \
runs for fsck -t jffs2 (a link to jffs2-fsck made at installation; fsck(8) searches /sbin, \
/sbin/fs.d, /sbin/fs, /etc/fs, /etc and then PATH). fsck(8)'s generic options -a, -p, -y, -n and -f are \
accepted and have no effect, since the check never writes and is always complete; -V is \
ignored; -C shows the progress bar when standard error is a terminal.";

const CONVERT_COMPAT: &str = "mtd-utils has no converter: jffs2-convert is offline garbage \
collection and re-layout. Its output options are mkfs.jffs2's, with mkfs.jffs2's grammar \
(-e 128KiB, --pad=SIZE). The input is never modified; the output is written as jffs2-mkfs \
writes its output (see jffs2-mkfs(1)): from an unnamed temporary file renamed when complete, \
links followed by the kernel, the mode kept.";

/// Every name the binaries answer to, the jffs2-tools names first.
pub const PERSONALITIES: &[Personality] = &[
    Personality {
        name: "jffs2-mkfs",
        binary: "jffs2-mkfs",
        section: "1",
        command: mkfs_command,
        short: mkfs::SHORT,
        long: mkfs::LONG,
        environment: &[SOURCE_DATE_EPOCH],
        compatibility: MKFS_COMPAT,
        see_also: &[
            "mkfs.jffs2(1)",
            "jffs2-sumtool(1)",
            "jffs2-dump(1)",
            "jffs2-fsck(8)",
            "jffs2-convert(1)",
        ],
    },
    Personality {
        name: "jffs2-sumtool",
        binary: "jffs2-sumtool",
        section: "1",
        command: sumtool_command,
        short: sumtool::SHORT,
        long: sumtool::LONG,
        environment: &[],
        compatibility: SUMTOOL_COMPAT,
        see_also: &[
            "sumtool(1)",
            "jffs2-mkfs(1)",
            "jffs2-dump(1)",
            "jffs2-fsck(8)",
            "jffs2-convert(1)",
        ],
    },
    Personality {
        name: "jffs2-dump",
        binary: "jffs2-dump",
        section: "1",
        command: dump_command,
        short: dump::SHORT,
        long: dump::LONG_OURS,
        environment: &[],
        compatibility: DUMP_COMPAT,
        see_also: &[
            "jffs2dump(1)",
            "jffs2reader(1)",
            "jffs2-mkfs(1)",
            "jffs2-fsck(8)",
            "jffs2-convert(1)",
        ],
    },
    Personality {
        name: "jffs2-fsck",
        binary: "jffs2-fsck",
        section: "8",
        command: fsck_command,
        short: fsck::SHORT,
        long: fsck::LONG,
        environment: &[],
        compatibility: FSCK_COMPAT,
        see_also: &[
            "fsck.jffs2(8)",
            "fsck(8)",
            "jffs2-dump(1)",
            "jffs2-convert(1)",
            "jffs2-mkfs(1)",
        ],
    },
    Personality {
        name: "jffs2-convert",
        binary: "jffs2-convert",
        section: "1",
        command: convert_command,
        short: convert::SHORT,
        long: convert::LONG,
        environment: &[],
        compatibility: CONVERT_COMPAT,
        see_also: &[
            "jffs2-mkfs(1)",
            "jffs2-sumtool(1)",
            "jffs2-fsck(8)",
            "jffs2-dump(1)",
        ],
    },
    Personality {
        name: "mkfs.jffs2",
        binary: "jffs2-mkfs",
        section: "1",
        command: mkfs_jffs2_command,
        short: mkfs::SHORT,
        long: mkfs::LONG,
        environment: &[SOURCE_DATE_EPOCH],
        compatibility: MKFS_COMPAT,
        see_also: SEE_ALSO_ALL,
    },
    Personality {
        name: "sumtool",
        binary: "jffs2-sumtool",
        section: "1",
        command: sumtool_drop_in_command,
        short: sumtool::SHORT,
        long: sumtool::LONG,
        environment: &[],
        compatibility: SUMTOOL_COMPAT,
        see_also: SEE_ALSO_ALL,
    },
    Personality {
        name: "jffs2dump",
        binary: "jffs2-dump",
        section: "1",
        command: jffs2dump_command,
        short: dump::SHORT,
        long: dump::LONG_DROP_IN,
        environment: &[],
        compatibility: JFFS2DUMP_COMPAT,
        see_also: &["jffs2-dump(1)", "jffs2reader(1)", "jffs2-fsck(8)"],
    },
    Personality {
        name: "jffs2reader",
        binary: "jffs2-dump",
        section: "1",
        command: jffs2reader_command,
        short: dump::READER_SHORT,
        long: dump::READER_LONG,
        environment: &[],
        compatibility: READER_COMPAT,
        see_also: &["jffs2-dump(1)", "jffs2dump(1)"],
    },
    Personality {
        name: "fsck.jffs2",
        binary: "jffs2-fsck",
        section: "8",
        command: fsck_jffs2_command,
        short: fsck::SHORT_AS_FSCK,
        long: fsck::LONG,
        environment: &[],
        compatibility: FSCK_JFFS2_COMPAT,
        see_also: &["jffs2-fsck(8)", "fsck(8)", "jffs2-dump(1)"],
    },
];

/// The personality invoked as `name`.
pub fn personality(name: &str) -> Option<&'static Personality> {
    PERSONALITIES.iter().find(|p| p.name == name)
}

/// The lines of `help` from each line starting with "Exit status" to the end of its
/// paragraph (a blank line or the end): the exit status the help text documents.
pub fn exit_status_of(help: &str) -> String {
    let mut out = Vec::new();
    let mut inside = false;
    for line in help.lines() {
        if line.starts_with("Exit status") {
            inside = true;
        } else if line.trim().is_empty() {
            inside = false;
        }
        if inside {
            out.push(line.trim_end());
        }
    }
    out.join("\n")
}

/// A command with none of clap's own flags: every option is described explicitly.
fn base(name: &'static str, about: &'static str, long_about: &'static str) -> Command {
    Command::new(name)
        .bin_name(name)
        .version(env!("CARGO_PKG_VERSION"))
        .about(about)
        .long_about(long_about)
        .disable_help_flag(true)
        .disable_version_flag(true)
        .disable_help_subcommand(true)
}

/// An option without an argument.
fn flag(id: &'static str, help: &'static str) -> Arg {
    Arg::new(id).action(ArgAction::SetTrue).help(help)
}

/// An option with a required argument (attached or the next word); not a file name unless
/// a [`ValueHint`] says so.
fn value(id: &'static str, value_name: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .action(ArgAction::Set)
        .num_args(1)
        .value_name(value_name)
        .value_hint(ValueHint::Other)
        .help(help)
}

/// An option with an optional argument, taken only when attached (`-pSIZE`, `--pad=SIZE`).
fn optional(id: &'static str, value_name: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .action(ArgAction::Set)
        .num_args(0..=1)
        .require_equals(true)
        .value_name(value_name)
        .value_hint(ValueHint::Other)
        .help(help)
}

/// An operand (required: it is shown as such; nothing is parsed with clap).
fn operand(id: &'static str, value_name: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .action(ArgAction::Set)
        .required(true)
        .value_name(value_name)
        .value_hint(ValueHint::FilePath)
        .help(help)
}

/// The compressor names `-x`, `-X` and `-y` take.
fn compressor_names() -> Vec<PossibleValue> {
    Kind::ALL
        .iter()
        .map(|k| PossibleValue::new(k.name()))
        .collect()
}

/// The `-m` modes.
fn modes() -> [PossibleValue; 4] {
    [
        PossibleValue::new("none").help("no compression"),
        PossibleValue::new("priority")
            .help("the enabled compressor of highest priority that gains (default)"),
        PossibleValue::new("size").help("every enabled compressor; the smallest result wins"),
        PossibleValue::new("favourlzo")
            .help("like size, but LZO wins unless another result is below 80 % of its size"),
    ]
}

const MKFS_ABOUT: &str = "make a JFFS2 file system image from a directory tree";

const MKFS_LONG_ABOUT: &str = "Makes a JFFS2 file system image of the directory tree DIR \
(default: the current directory), as mtd-utils mkfs.jffs2 does, byte for byte, compressing \
on all cores.

SIZE arguments follow mkfs.jffs2: decimal, 0x hex or 0 octal; -e also takes KiB and MiB \
suffixes and reads a bare number below 4096 as KiB. The optional argument of -p/--pad is taken \
only when attached: -p SIZE (with a space) pads to the end of the final erase block and leaves \
SIZE as an operand, which is ignored; write --pad=SIZE or -pSIZE.";

fn mkfs_args(cmd: Command) -> Command {
    let extra = "JFFS2-TOOLS ADDITIONS";
    cmd.args([
        optional("pad", "SIZE", "Pad output to SIZE bytes with 0xFF. If SIZE is not specified, the output is padded to the end of the final erase block. SIZE must be attached (-p0x400000, --pad=0x400000).")
            .short('p')
            .long("pad"),
        value("root", "DIR", "Build file system from directory DIR (default: the current directory). -d DIR is the same.")
            .short('r')
            .visible_short_alias('d')
            .long("root")
            .value_hint(ValueHint::DirPath),
        value("pagesize", "SIZE", "Use page size (max data node size) SIZE. Set according to the target system's memory management page size (default: 4KiB).")
            .short('s')
            .long("pagesize"),
        value("eraseblock", "SIZE", "Use erase block size SIZE (default: 64KiB). Below 8KiB it is raised to 8KiB, with a message.")
            .short('e')
            .long("eraseblock"),
        value("cleanmarker", "SIZE", "Size of cleanmarker (default 12); checked against the erase size given before it.")
            .short('c')
            .long("cleanmarker"),
        value("compression-mode", "MODE", "Select compression mode (default: priority).")
            .short('m')
            .long("compression-mode")
            .value_parser(modes())
            .value_hint(ValueHint::Unknown),
        value("disable-compressor", "COMPRESSOR_NAME", "Disable a compressor.")
            .short('x')
            .long("disable-compressor")
            .value_parser(compressor_names())
            .value_hint(ValueHint::Unknown),
        value("enable-compressor", "COMPRESSOR_NAME", "Enable a compressor.")
            .short('X')
            .long("enable-compressor")
            .value_parser(compressor_names())
            .value_hint(ValueHint::Unknown),
        value("compressor-priority", "PRIORITY:COMPRESSOR_NAME", "Set the priority of a compressor.")
            .short('y')
            .long("compressor-priority"),
        flag("list-compressors", "Show the list of the available compressors: -L prints it with an error status (255), as mkfs.jffs2 does; --list-compressors prints it on standard output and exits 0.")
            .short('L')
            .long("list-compressors"),
        flag("test-compression", "Call decompress and compare with the original (for test).")
            .short('t')
            .long("test-compression"),
        flag("no-cleanmarkers", "Don't add a cleanmarker to every eraseblock.")
            .short('n')
            .long("no-cleanmarkers"),
        value("output", "FILE", "Output to FILE (default: stdout). FILE is opened as mkfs.jffs2 opens it (links followed by the kernel); a regular file is replaced when the image is complete, keeping its mode (see COMPATIBILITY).")
            .short('o')
            .long("output")
            .value_hint(ValueHint::FilePath),
        flag("little-endian", "Create a little-endian filesystem (default: the host's byte order).")
            .short('l')
            .long("little-endian"),
        flag("big-endian", "Create a big-endian filesystem.")
            .short('b')
            .long("big-endian"),
        value("devtable", "FILE", "Use the named FILE as a device table file (mkfs.jffs2's format: name type mode uid gid major minor start inc count). Unlike mkfs.jffs2, a field that is neither a number nor -, a device without major and minor, a mode beyond 07777 and more than 1048576 entries in all are errors naming the line.")
            .short('D')
            .long("devtable")
            .value_hint(ValueHint::FilePath),
        flag("faketime", "Change all file times to '0' for regression testing.")
            .short('f')
            .long("faketime"),
        flag("squash", "Squash permissions and owners making all files be owned by root (-U and -P).")
            .short('q')
            .long("squash"),
        flag("squash-uids", "Squash owners making all files be owned by root.")
            .short('U')
            .long("squash-uids"),
        flag("squash-perms", "Squash permissions on all files (no group or other write, no setuid or setgid).")
            .short('P')
            .long("squash-perms"),
        flag("with-xattr", "Stuff all xattr entries into image.").long("with-xattr"),
        flag("with-selinux", "Stuff only SELinux Labels into jffs2 image.").long("with-selinux"),
        flag("with-posix-acl", "Stuff only POSIX ACL entries into jffs2 image.").long("with-posix-acl"),
        flag("help", "Display the help text and exit (-? does the same, with status 1).")
            .short('h')
            .short_alias('?')
            .long("help"),
        flag("verbose", "Verbose operation: list every entry written.")
            .short('v')
            .long("verbose"),
        flag("version", "Display version information.")
            .short('V')
            .long("version"),
        value("incremental", "FILE", "Parse FILE (an image) and generate appendage output for it.")
            .short('i')
            .long("incremental")
            .value_hint(ValueHint::FilePath),
        flag("summary", "Write an erase-block summary into every erase block: the bytes of jffs2-mkfs followed by jffs2-sumtool; the image then ends on an erase-block boundary.")
            .long("summary")
            .help_heading(extra),
        value("threads", "N", "Compress on N threads, 1 to 1024 (default: one per core; the output does not depend on it).")
            .long("threads")
            .help_heading(extra),
        flag("no-progress", "Never show a progress bar (shown only when standard error is a terminal).")
            .long("no-progress")
            .help_heading(extra),
    ])
}

/// `jffs2-mkfs`.
pub fn mkfs_command() -> Command {
    mkfs_args(
        base("jffs2-mkfs", MKFS_ABOUT, MKFS_LONG_ABOUT)
            .override_usage("jffs2-mkfs [OPTION]... [-r DIR] [-o FILE]")
            .after_help(exit_status_of(mkfs::HELP)),
    )
}

/// `jffs2-mkfs` invoked as `mkfs.jffs2`.
pub fn mkfs_jffs2_command() -> Command {
    mkfs_args(
        base("mkfs.jffs2", MKFS_ABOUT, MKFS_LONG_ABOUT)
            .override_usage("mkfs.jffs2 [OPTION]... [-r DIR] [-o FILE]")
            .after_help(exit_status_of(mkfs::HELP)),
    )
}

const SUMTOOL_ABOUT: &str = "convert a JFFS2 image to a summarized JFFS2 image";

const SUMTOOL_LONG_ABOUT: &str = "Converts the input JFFS2 image to a summarized JFFS2 image: \
an erase-block summary at the end of every erase block that holds nodes, so that Linux mounts \
it without reading every node (if summary support is enabled in the kernel).

The input is read as the kernel reads it at mount, and every node the kernel would see is \
written, byte for byte and in order. The erase size and byte order of the input are detected. \
Without -e or -b/-l, what the input was built with is used, with a warning when it differs \
from sumtool's default (64KiB, the host's byte order), where mtd-utils' sumtool would lose \
nodes; a given -e or -b/-l that disagrees stops sumtool with an error naming what was \
detected, instead of writing a broken image. The output is written to a temporary file and \
renamed into place, so a failed run leaves FILE untouched, and -i and -o may name the same \
file.";

fn sumtool_args(cmd: Command) -> Command {
    cmd.args([
        value("eraseblock", "SIZE", "Use erase block size SIZE (default: the input's when detected with confidence, else 64KiB; usually 16KiB on NAND). A given size must be the input's, unless --force-eraseblock.")
            .short('e')
            .long("eraseblock"),
        value("cleanmarker", "SIZE", "Size of cleanmarker (default 12, or what the input's cleanmarkers have).")
            .short('c')
            .long("cleanmarker"),
        flag("no-cleanmarkers", "Don't add a cleanmarker to every eraseblock.")
            .short('n')
            .long("no-cleanmarkers"),
        value("output", "FILE", "Output to FILE.")
            .short('o')
            .long("output")
            .value_hint(ValueHint::FilePath),
        value("input", "FILE", "Input from FILE.")
            .short('i')
            .long("input")
            .value_hint(ValueHint::FilePath),
        flag("bigendian", "Image is big endian (detected; an error if it is not).")
            .short('b')
            .long("bigendian"),
        flag("littleendian", "Image is little endian (detected; an error if it is not).")
            .short('l')
            .long("littleendian"),
        flag("help", "Display this help text.").short('h').long("help"),
        flag("verbose", "Verbose operation: sumtool's listing of the nodes written.")
            .short('v')
            .long("verbose"),
        flag("version", "Display version information.")
            .short('V')
            .long("version"),
        flag("pad", "Pad the OUTPUT with 0xFF to the end of the final eraseblock.")
            .short('p')
            .long("pad"),
        flag("force-eraseblock", "Proceed when -e differs from the erase size the input was built with: the input is read with its own erase size and re-blocked into -e blocks.")
            .long("force-eraseblock")
            .help_heading("JFFS2-TOOLS ADDITIONS"),
    ])
}

/// `jffs2-sumtool`.
pub fn sumtool_command() -> Command {
    sumtool_args(
        base("jffs2-sumtool", SUMTOOL_ABOUT, SUMTOOL_LONG_ABOUT)
            .override_usage("jffs2-sumtool [OPTION]... -i INPUTFILE -o OUTPUTFILE")
            .after_help(exit_status_of(sumtool::HELP)),
    )
}

/// `jffs2-sumtool` invoked as `sumtool`.
pub fn sumtool_drop_in_command() -> Command {
    sumtool_args(
        base("sumtool", SUMTOOL_ABOUT, SUMTOOL_LONG_ABOUT)
            .override_usage("sumtool [OPTION]... -i INPUTFILE -o OUTPUTFILE")
            .after_help(exit_status_of(sumtool::HELP)),
    )
}

/// jffs2dump's options, common to `jffs2-dump` and `jffs2dump` (`-r` and `--recalccrc`
/// are separate: their argument kinds differ).
fn jffs2dump_args(cmd: Command) -> Command {
    cmd.args([
        flag("help", "Display this help and exit.").short('h').long("help"),
        flag("version", "Display version information and exit.")
            .short('V')
            .long("version"),
        flag("bigendian", "Image is big endian.")
            .short('b')
            .long("bigendian"),
        flag("littleendian", "Image is little endian.")
            .short('l')
            .long("littleendian"),
        flag("content", "Dump image contents: every node, as jffs2dump prints it.")
            .short('c')
            .long("content"),
        value("endianconvert", "FNAME", "Convert image endianness, output to file FNAME (every node converted; FNAME replaced only when complete).")
            .short('e')
            .long("endianconvert")
            .value_hint(ValueHint::FilePath),
        flag("r", "Recalc name and data crc on endian conversion.").short('r'),
        value("datsize", "LEN", "Size of data chunks, when oob data in binary image (NAND only).")
            .short('d')
            .long("datsize"),
        value("oobsize", "LEN", "Size of oob data chunk in binary image (NAND only).")
            .short('o')
            .long("oobsize"),
        flag("verbose", "Verbose output.").short('v').long("verbose"),
    ])
}

const DUMP_ABOUT: &str = "dump, check and read a JFFS2 image";

const DUMP_LONG_ABOUT: &str = "Dumps the contents of a binary JFFS2 image: mtd-utils \
jffs2dump's -c text byte for byte and a correct -e endianness conversion; and more: the nodes \
as JSON with every CRC and the kernel's verdict, erase blocks as a table or an SVG picture, \
and the files as a read-only Linux mount shows them (--list, --cat, --extract).

For the views the byte order and erase size are detected unless -b/-l and --erase-size are \
given; several views may be combined, except --json and --cat. Extraction recreates hard \
links, holes, symlinks (never followed), devices (as root; otherwise a mkfs.jffs2 -D table \
beside the directory), owners, modes, times and xattrs; it refuses names like .. or a/b and \
streams data in bounded memory.";

/// `jffs2-dump`.
pub fn dump_command() -> Command {
    let views = "VIEWS AND FILES";
    jffs2dump_args(
        base("jffs2-dump", DUMP_ABOUT, DUMP_LONG_ABOUT)
            .override_usage(
                "jffs2-dump [OPTION]... INPUTFILE\n\
                 jffs2-dump --info|--list|--json|--blocks|--summary INPUTFILE\n\
                 jffs2-dump --cat PATH INPUTFILE\n\
                 jffs2-dump --extract DIR [--force] INPUTFILE",
            )
            .after_help(exit_status_of(&dump::help("jffs2-dump"))),
    )
    .args([
        flag("big-endian", "Same as -b.").long("big-endian"),
        flag("little-endian", "Same as -l.").long("little-endian"),
        optional("recalccrc", "IGNORED", "Same as -r; an attached argument is accepted and ignored.")
            .long("recalccrc"),
        operand("INPUTFILE", "INPUTFILE", "The image (a file, or a device that can be read)."),
        flag("info", "Byte order, erase size, page size, cleanmarkers, compressors, node and inode counts, and the mkfs.jffs2 command line that rebuilds the image from its extracted tree.")
            .long("info")
            .help_heading(views),
        flag("json", "Every node: offset, type, fields, CRC verdicts, the kernel's verdict; and the gaps between nodes.")
            .long("json")
            .help_heading(views),
        flag("blocks", "Per erase block: state, used/dirty/free bytes, summary, cleanmarker.")
            .long("blocks")
            .help_heading(views),
        flag("summary", "Each erase block's summary records.")
            .long("summary")
            .help_heading(views),
        value("map", "FILE.svg", "A picture of the erase blocks coloured by state.")
            .long("map")
            .value_hint(ValueHint::FilePath)
            .help_heading(views),
        flag("list", "The files as Linux shows them, ls -lR style (-v: xattrs too).")
            .long("list")
            .help_heading(views),
        value("cat", "PATH", "A file's content to standard output.")
            .long("cat")
            .help_heading(views),
        value("extract", "DIR", "Recreate the files in DIR (created if missing; must be empty unless --force).")
            .long("extract")
            .value_hint(ValueHint::DirPath)
            .help_heading(views),
        flag("force", "Extract into a non-empty DIR: merges, and never replaces anything; existing directories (DIR included) keep their owner, mode, times and xattrs.")
            .long("force")
            .help_heading(views),
        flag("no-xattrs", "Do not set extended attributes when extracting.")
            .long("no-xattrs")
            .help_heading(views),
        flag("no-owners", "Do not set owners when extracting.")
            .long("no-owners")
            .help_heading(views),
        value("devtable", "FILE", "Where to list devices that cannot be created (default: DIR.devtable, which never replaces an existing file; FILE may not be the image).")
            .long("devtable")
            .value_hint(ValueHint::FilePath)
            .help_heading(views),
        value("eraseblock", "SIZE", "Erase block size (same grammar as mkfs.jffs2 -e); detected when not given. --eraseblock=SIZE is the same.")
            .long("erase-size")
            .visible_alias("eraseblock")
            .help_heading(views),
    ])
}

/// `jffs2-dump` invoked as `jffs2dump`.
pub fn jffs2dump_command() -> Command {
    jffs2dump_args(
        base("jffs2dump", "dump the contents of a binary JFFS2 image", "Dumps the contents of a binary JFFS2 image, as mtd-utils jffs2dump does: -c prints every node, -e converts the image to the other byte order.")
            .override_usage("jffs2dump [OPTION]... INPUTFILE")
            .after_help(
                "Exit status: 0 on success, corrupt images included, and also when the number \
                 of operands is not one (the help is then printed, as jffs2dump does); 1 on \
                 errors and usage errors.",
            ),
    )
    .args([
        value("recalccrc", "ARG", "Same as -r, but takes an argument (ignored), as jffs2dump declares it: --recalccrc -e FILE consumes the -e.")
            .long("recalccrc"),
        operand("INPUTFILE", "INPUTFILE", "The image."),
    ])
}

/// `jffs2-dump` invoked as `jffs2reader`.
pub fn jffs2reader_command() -> Command {
    base(
        "jffs2reader",
        "list and read the files of a JFFS2 image",
        "Lists the directories and prints the files of a JFFS2 image as Linux shows them. \
         Without -d or -f, lists / recursively.",
    )
    .override_usage("jffs2reader IMAGE [-d PATH [-r] [-t] | -f PATH]")
    .after_help(
        "Exit status: 0 on success; 1 on errors (PATH not found, not a regular file, an \
         unreadable image) and usage errors; 2 when -f met data that cannot be read (written \
         as zeros, reported on standard error).",
    )
    .args([
        value("d", "PATH", "List directory PATH.").short('d'),
        flag("r", "With -d: list recursively.").short('r'),
        flag("t", "With -d: show change times.").short('t'),
        value("f", "PATH", "Write file PATH to standard output.").short('f'),
        flag("help", "Display the usage on standard error.")
            .short('h')
            .long("help"),
        flag("version", "Display version information.")
            .short('V')
            .long("version"),
        operand("IMAGE", "IMAGE", "The image."),
    ])
}

const FSCK_ABOUT: &str = "check a JFFS2 file system image";

const FSCK_LONG_ABOUT: &str = "Checks a JFFS2 image: every node, every CRC, all data, the \
tree, the summaries, as the Linux 6.1 mount scan and inode reads see them. Problems are \
reported by byte offset, as errors (what Linux would lose or complain about) or warnings. \
IMAGE itself is never written.

The erase size and byte order are detected unless -e and -b/-l are given. --kernel-log \
prints what Linux would log mounting the image and reading every file; --compare verifies \
the image's tree against a directory (factory verification); --repair writes what Linux \
would have shown to another file.";

fn fsck_args(cmd: Command) -> Command {
    cmd.args([
        value("eraseblock", "SIZE", "Erase block size (mkfs.jffs2 grammar: 0x20000, 128KiB, 128 = 128 KiB); detected from the image when not given.")
            .short('e')
            .long("eraseblock"),
        flag("little-endian", "The image is little-endian (detected when not given).")
            .short('l')
            .long("little-endian"),
        flag("big-endian", "The image is big-endian (detected when not given).")
            .short('b')
            .long("big-endian"),
        flag("verbose", "Show the detection evidence and every erase block.")
            .short('v')
            .long("verbose"),
        flag("json", "Print one JSON document (findings and summary).").long("json"),
        flag("kernel-log", "Print what Linux 6.1 logs mounting the image and reading every file (dmesg style), instead of the findings.")
            .long("kernel-log"),
        value("repair", "OUT", "Also write to OUT the image Linux would have shown: what it can read, in the same layout, without dead nodes (the garbage collection of jffs2-convert); what is left out is named. IMAGE itself is never written (an OUT that is IMAGE is refused).")
            .long("repair")
            .value_hint(ValueHint::FilePath),
        value("compare", "DIR", "Factory verification: the image's tree must equal DIR (names, types, modes, owners, sizes, contents, link targets, device numbers, times, xattrs).")
            .long("compare")
            .value_hint(ValueHint::DirPath),
        flag("squash", "With --compare: the image was made with -q (-U -P).").long("squash"),
        flag("squash-uids", "With --compare: made with -U (owners 0:0).").long("squash-uids"),
        flag("squash-perms", "With --compare: made with -P (no g/o write, setuid, setgid).")
            .long("squash-perms"),
        flag("faketime", "With --compare: made with -f (all times 0).").long("faketime"),
        flag("with-xattr", "With --compare: made with --with-xattr.").long("with-xattr"),
        flag("with-selinux", "With --compare: made with --with-selinux.").long("with-selinux"),
        flag("with-posix-acl", "With --compare: made with --with-posix-acl.")
            .long("with-posix-acl"),
        flag("ignore-mtime", "With --compare: do not compare modification times.")
            .long("ignore-mtime"),
        flag("no-progress", "No progress bar (shown only when standard error is a terminal).")
            .long("no-progress"),
        flag("help", "Display this help text.").short('h').long("help"),
        flag("version", "Display version information.").long("version"),
        operand("IMAGE", "IMAGE", "The image: a file, or a device that can be read."),
    ])
}

/// `jffs2-fsck`.
pub fn fsck_command() -> Command {
    fsck_args(
        base("jffs2-fsck", FSCK_ABOUT, FSCK_LONG_ABOUT)
            .override_usage("jffs2-fsck [OPTION]... IMAGE")
            .after_help(exit_status_of(fsck::HELP)),
    )
}

/// `jffs2-fsck` invoked as `fsck.jffs2` (by fsck(8)).
pub fn fsck_jffs2_command() -> Command {
    let generic = "FSCK(8) OPTIONS";
    fsck_args(
        base("fsck.jffs2", FSCK_ABOUT, FSCK_LONG_ABOUT)
            .override_usage(
                "fsck.jffs2 [-a|-p|-y|-n] [-f] [-V] [-C[FD]] [OPTION]... IMAGE\n\
                 fsck -t jffs2 IMAGE",
            )
            .after_help(exit_status_of(fsck::HELP)),
    )
    .args([
        flag("a", "Repair automatically: accepted, no effect (the check never writes).")
            .short('a')
            .help_heading(generic),
        flag("p", "Same as -a.").short('p').help_heading(generic),
        flag("y", "Answer yes to every question: accepted, no effect.")
            .short('y')
            .help_heading(generic),
        flag("n", "Make no changes: accepted (the check never writes).")
            .short('n')
            .help_heading(generic),
        flag("f", "Force a check: accepted, no effect (the check is always complete).")
            .short('f')
            .help_heading(generic),
        flag("V", "fsck's verbose flag: ignored.")
            .short('V')
            .help_heading(generic),
        Arg::new("C")
            .short('C')
            .action(ArgAction::Set)
            .num_args(0..=1)
            .value_name("FD")
            .value_hint(ValueHint::Other)
            .help("Show the progress bar when standard error is a terminal. A file descriptor, if given, must be attached (-C0) and is ignored.")
            .help_heading(generic),
    ])
}

const CONVERT_ABOUT: &str = "garbage-collect and re-lay a JFFS2 image offline";

const CONVERT_LONG_ABOUT: &str = "Rewrites a JFFS2 image as Linux would show it mounted: \
every file, directory, link, device, owner, mode, time and extended attribute is kept; \
obsolete, superseded and deleted nodes are dropped (offline garbage collection); the output \
can have another erase size, page size, cleanmarker layout, byte order, compression, and \
summaries. Live nodes are copied unchanged where the new layout allows; the rest is \
rewritten within page boundaries, compressed on all cores.

Output options default to what the input had. -x, -X, -y and -m recompress every data node \
with the given compressors; without them compressed data is copied as it is and only \
rewritten nodes are compressed (with mkfs.jffs2's defaults: zlib, then rtime).";

/// `jffs2-convert`.
pub fn convert_command() -> Command {
    let input = "INPUT OPTIONS";
    let other = "OTHER OPTIONS";
    base("jffs2-convert", CONVERT_ABOUT, CONVERT_LONG_ABOUT)
        .override_usage("jffs2-convert -i INPUT -o OUTPUT [OPTION]...")
        .after_help(exit_status_of(convert::HELP))
        .args([
            value("input", "FILE", "The image (a partition dump, dirty or clean).")
                .short('i')
                .long("input")
                .value_hint(ValueHint::FilePath)
                .help_heading(input),
            value("input-eraseblock", "SIZE", "Its erase size (detected when not given).")
                .long("input-eraseblock")
                .help_heading(input),
            value("input-endian", "little|big", "Its byte order (detected when not given).")
                .long("input-endian")
                .value_parser(["little", "big"])
                .value_hint(ValueHint::Unknown)
                .help_heading(input),
            value("oobsize", "N", "The input is a raw NAND dump with N bytes of OOB after every page: they are removed first.")
                .long("oobsize")
                .help_heading(input),
            value("input-pagesize", "N", "NAND page size of such a dump (default 2048).")
                .long("input-pagesize")
                .help_heading(input),
            value("output", "FILE", "The new image (written to a temporary file, then renamed).")
                .short('o')
                .long("output")
                .value_hint(ValueHint::FilePath),
            value("eraseblock", "SIZE", "Erase block size (default: the input's).")
                .short('e')
                .long("eraseblock"),
            value("pagesize", "SIZE", "Page size: no data node crosses a multiple of it (default 4KiB; the target's PAGE_SIZE).")
                .short('s')
                .long("pagesize"),
            value("cleanmarker", "SIZE", "Cleanmarker size (default 12).")
                .short('c')
                .long("cleanmarker"),
            flag("no-cleanmarkers", "No cleanmarkers (default: cleanmarkers if the input has them).")
                .short('n')
                .long("no-cleanmarkers"),
            flag("little-endian", "Little-endian output.")
                .short('l')
                .long("little-endian"),
            flag("big-endian", "Big-endian output (default: the input's byte order).")
                .short('b')
                .long("big-endian"),
            optional("pad", "SIZE", "Pad the output with 0xFF to SIZE (at most 4GiB; KiB, MiB and GiB suffixes), or to the end of the final erase block (default: to the end of the final block). SIZE must be attached.")
                .short('p')
                .long("pad"),
            flag("summary", "Write an erase block summary in every block.").long("summary"),
            flag("no-summary", "Write no summaries (default: summaries if the input had).")
                .long("no-summary"),
            value("compression-mode", "MODE", "Compression mode (recompresses every data node).")
                .short('m')
                .long("compression-mode")
                .value_parser(modes())
            .value_hint(ValueHint::Unknown),
            value("disable-compressor", "NAME", "Disable a compressor (recompresses every data node).")
                .short('x')
                .long("disable-compressor")
                .value_parser(compressor_names())
            .value_hint(ValueHint::Unknown),
            value("enable-compressor", "NAME", "Enable a compressor (recompresses every data node).")
                .short('X')
                .long("enable-compressor")
                .value_parser(compressor_names())
            .value_hint(ValueHint::Unknown),
            value("compressor-priority", "PRIORITY:NAME", "Set the priority of a compressor (recompresses every data node).")
                .short('y')
                .long("compressor-priority"),
            flag("verbose", "Report what was copied, rewritten and left out.")
                .short('v')
                .long("verbose")
                .help_heading(other),
            flag("json", "The report as JSON on standard output.")
                .long("json")
                .help_heading(other),
            value("threads", "N", "Compression threads, 1 to 1024 (default: one per core).")
                .long("threads")
                .help_heading(other),
            flag("no-progress", "No progress bar (shown only when standard error is a terminal).")
                .long("no-progress")
                .help_heading(other),
            flag("help", "This text.")
                .short('h')
                .long("help")
                .help_heading(other),
            flag("version", "Version information.")
                .short('V')
                .long("version")
                .help_heading(other),
        ])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::cli::getopt::{parse_short_spec, HasArg};

    /// How an option takes its argument, as clap describes it.
    fn clap_kind(arg: &Arg) -> HasArg {
        match arg.get_num_args() {
            Some(r) if r.takes_values() && r.min_values() == 0 => HasArg::Optional,
            Some(r) if r.takes_values() => HasArg::Required,
            _ => HasArg::No,
        }
    }

    /// Every option name (`-x`, `--xyz`) of a command with its argument kind.
    fn clap_names(cmd: &mut Command) -> BTreeMap<String, HasArg> {
        cmd.build();
        let mut m = BTreeMap::new();
        for a in cmd.get_arguments().filter(|a| !a.is_positional()) {
            let kind = clap_kind(a);
            let shorts = a
                .get_short()
                .into_iter()
                .chain(a.get_all_short_aliases().unwrap_or_default());
            for s in shorts {
                assert!(m.insert(format!("-{s}"), kind).is_none(), "-{s} twice");
            }
            let longs = a
                .get_long()
                .into_iter()
                .chain(a.get_all_aliases().unwrap_or_default());
            for l in longs {
                assert!(m.insert(format!("--{l}"), kind).is_none(), "--{l} twice");
            }
        }
        m
    }

    fn getopt_names(short: &str, long: &[LongOpt]) -> BTreeMap<String, HasArg> {
        let mut m = BTreeMap::new();
        for (c, kind) in parse_short_spec(short) {
            assert!(m.insert(format!("-{}", char::from(c)), kind).is_none());
        }
        for o in long {
            assert!(m.insert(format!("--{}", o.name), o.has_arg).is_none());
        }
        m
    }

    #[test]
    fn every_command_agrees_with_its_getopt_tables() {
        for p in PERSONALITIES {
            let mut cmd = (p.command)();
            cmd.clone().debug_assert();
            assert_eq!(cmd.get_name(), p.name);
            let ours = clap_names(&mut cmd);
            let theirs = getopt_names(p.short, p.long);
            assert_eq!(
                ours, theirs,
                "{}: clap command and getopt tables differ",
                p.name
            );
            // No clap option pairs a short letter with a long name that getopt gives to
            // another letter.
            let letters: Vec<u8> = parse_short_spec(p.short).iter().map(|(c, _)| *c).collect();
            for a in cmd.get_arguments() {
                let shorts: Vec<char> = a.get_short().into_iter().collect();
                let longs = a
                    .get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().unwrap_or_default());
                for l in longs {
                    let Some(o) = p.long.iter().find(|o| o.name == l) else {
                        continue;
                    };
                    let Ok(letter) = u8::try_from(o.id) else {
                        continue;
                    };
                    if letters.contains(&letter) && !shorts.is_empty() {
                        assert_eq!(
                            shorts,
                            vec![char::from(letter)],
                            "{}: --{l} is -{} in getopt",
                            p.name,
                            char::from(letter)
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn every_personality_documents_its_exit_status() {
        for p in PERSONALITIES {
            let exit = p.exit_status();
            assert!(exit.starts_with("Exit status"), "{}: {exit:?}", p.name);
            assert!(
                exit.contains('0') && exit.contains('1'),
                "{}: {exit:?}",
                p.name
            );
            let cmd = (p.command)();
            assert!(cmd.get_about().is_some() && cmd.get_long_about().is_some());
        }
        assert!(
            personality("fsck.jffs2").is_some_and(|p| p.exit_status().contains("16 usage error"))
        );
        assert!(personality("jffs2-mkfs").is_some_and(|p| p.exit_status().contains("255")));
    }

    #[test]
    fn names_and_binaries() {
        let binaries = [
            "jffs2-mkfs",
            "jffs2-sumtool",
            "jffs2-dump",
            "jffs2-fsck",
            "jffs2-convert",
        ];
        for b in binaries {
            assert!(personality(b).is_some_and(|p| !p.is_link()), "{b}");
        }
        let links: Vec<(&str, &str)> = PERSONALITIES
            .iter()
            .filter(|p| p.is_link())
            .map(|p| (p.name, p.binary))
            .collect();
        assert_eq!(
            links,
            [
                ("mkfs.jffs2", "jffs2-mkfs"),
                ("sumtool", "jffs2-sumtool"),
                ("jffs2dump", "jffs2-dump"),
                ("jffs2reader", "jffs2-dump"),
                ("fsck.jffs2", "jffs2-fsck"),
            ]
        );
        for p in PERSONALITIES {
            assert!(binaries.contains(&p.binary));
            assert!(p.section == "1" || p.section == "8");
        }
    }

    #[test]
    fn values_and_hints() {
        let mut cmd = mkfs_command();
        cmd.build();
        let arg = |id: &str| cmd.get_arguments().find(|a| a.get_id() == id).cloned();
        let names = |id: &str| -> Vec<String> {
            arg(id)
                .map(|a| {
                    a.get_possible_values()
                        .iter()
                        .map(|v| v.get_name().to_string())
                        .collect()
                })
                .unwrap_or_default()
        };
        assert_eq!(
            names("compression-mode"),
            ["none", "priority", "size", "favourlzo"]
        );
        let compressors = names("disable-compressor");
        for c in ["zlib", "lzo", "rtime"] {
            assert!(compressors.iter().any(|n| n == c), "{compressors:?}");
        }
        assert_eq!(names("enable-compressor"), compressors);
        assert!(arg("root").is_some_and(|a| a.get_value_hint() == ValueHint::DirPath));
        assert!(arg("output").is_some_and(|a| a.get_value_hint() == ValueHint::FilePath));
        assert!(arg("devtable").is_some_and(|a| a.get_value_hint() == ValueHint::FilePath));
    }

    #[test]
    fn exit_status_paragraphs() {
        let help =
            "Usage: x\n\nSome text.\nExit status: 0 ok,\n1 bad.\n\nMore.\nExit status of y: 2.\n";
        assert_eq!(
            exit_status_of(help),
            "Exit status: 0 ok,\n1 bad.\nExit status of y: 2."
        );
    }
}
