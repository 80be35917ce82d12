//! The command lines described for clap, for manual pages and shell completions only.
//!
//! The tools parse with [`super::getopt`] (mtd-utils' grammar cannot be expressed in clap);
//! the [`clap::Command`]s here take their options from the same tables the tools parse with
//! ([`super::flags`]: short letter, long names, value name, whether the value is required or
//! optional, description), so that `clap_mangen` and `clap_complete` can render them
//! (`crates/gen`). What is here is the rest: names, summaries, usage lines, operands, exit
//! status. Each [`Personality`] is one name a binary answers to, with its own option set;
//! the unit tests check that its command and the parser accept exactly the same options.

use clap::{Arg, ArgAction, Command, ValueHint};

use super::flags::{self, convert, dump, fsck, jefferson, mkfs, mount, sumtool, Flag, Names, ALL};
use super::getopt::LongOpt;

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
    /// Its options: the rows of this table that `names` selects ([`flags`]).
    pub flags: &'static [Flag],
    /// Which of the table's names it is.
    pub names: Names,
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

    /// Its getopt short-option string.
    pub fn short(&self) -> String {
        flags::short_spec(self.flags, self.names)
    }

    /// Its getopt long options.
    pub fn long(&self) -> Vec<LongOpt> {
        flags::long_opts(self.flags, self.names)
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
        flags: mkfs::FLAGS,
        names: ALL,
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
        flags: sumtool::FLAGS,
        names: ALL,
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
        flags: dump::FLAGS,
        names: dump::OURS,
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
        flags: fsck::FLAGS,
        names: fsck::PLAIN,
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
        flags: convert::FLAGS,
        names: ALL,
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
        name: "jffs2-mount",
        binary: "jffs2-mount",
        section: "1",
        command: mount_command,
        flags: mount::FLAGS,
        names: ALL,
        environment: &[(
            "FUSERMOUNT_PATH",
            "The fusermount program to mount through as an ordinary user (default: fusermount3, \
             then fusermount, found in PATH, /sbin or /bin).",
        )],
        compatibility: MOUNT_COMPAT,
        see_also: &[
            "fusermount3(1)",
            "mount.fuse3(8)",
            "jffs2-dump(1)",
            "jffs2-fsck(8)",
        ],
    },
    Personality {
        name: "mkfs.jffs2",
        binary: "jffs2-mkfs",
        section: "1",
        command: mkfs_jffs2_command,
        flags: mkfs::FLAGS,
        names: ALL,
        environment: &[SOURCE_DATE_EPOCH],
        compatibility: MKFS_COMPAT,
        see_also: SEE_ALSO_ALL,
    },
    Personality {
        name: "sumtool",
        binary: "jffs2-sumtool",
        section: "1",
        command: sumtool_drop_in_command,
        flags: sumtool::FLAGS,
        names: ALL,
        environment: &[],
        compatibility: SUMTOOL_COMPAT,
        see_also: SEE_ALSO_ALL,
    },
    Personality {
        name: "jffs2dump",
        binary: "jffs2-dump",
        section: "1",
        command: jffs2dump_command,
        flags: dump::FLAGS,
        names: dump::DROP_IN,
        environment: &[],
        compatibility: JFFS2DUMP_COMPAT,
        see_also: &["jffs2-dump(1)", "jffs2reader(1)", "jffs2-fsck(8)"],
    },
    Personality {
        name: "jffs2reader",
        binary: "jffs2-dump",
        section: "1",
        command: jffs2reader_command,
        flags: dump::READER,
        names: ALL,
        environment: &[],
        compatibility: READER_COMPAT,
        see_also: &["jffs2-dump(1)", "jffs2dump(1)"],
    },
    Personality {
        name: "fsck.jffs2",
        binary: "jffs2-fsck",
        section: "8",
        command: fsck_jffs2_command,
        flags: fsck::FLAGS,
        names: fsck::AS_FSCK,
        environment: &[],
        compatibility: FSCK_JFFS2_COMPAT,
        see_also: &["jffs2-fsck(8)", "fsck(8)", "jffs2-dump(1)"],
    },
    Personality {
        name: "jefferson",
        binary: "jffs2-dump",
        section: "1",
        command: jefferson_command,
        flags: jefferson::FLAGS,
        names: ALL,
        environment: &[],
        compatibility: JEFFERSON_COMPAT,
        see_also: &["jffs2-dump(1)", "jffs2-mount(1)", "jffs2-fsck(8)"],
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

/// An operand (required: it is shown as such; nothing is parsed with clap).
fn operand(id: &'static str, value_name: &'static str, help: &'static str) -> Arg {
    Arg::new(id)
        .action(ArgAction::Set)
        .required(true)
        .value_name(value_name)
        .value_hint(ValueHint::FilePath)
        .help(help)
}

const MKFS_ABOUT: &str = "make a JFFS2 file system image from a directory tree";

const MKFS_LONG_ABOUT: &str = "Makes a JFFS2 file system image of the directory tree DIR \
(default: the current directory), as mtd-utils mkfs.jffs2 does, byte for byte, compressing \
on all cores.

SIZE arguments follow mkfs.jffs2: decimal, 0x hex or 0 octal; -e also takes KiB and MiB \
suffixes and reads a bare number below 4096 as KiB. The optional argument of -p/--pad is taken \
only when attached: -p SIZE (with a space) pads to the end of the final erase block and leaves \
SIZE as an operand, which is ignored; write --pad=SIZE or -pSIZE.";

/// `jffs2-mkfs`.
pub fn mkfs_command() -> Command {
    base("jffs2-mkfs", MKFS_ABOUT, MKFS_LONG_ABOUT)
        .override_usage("jffs2-mkfs [OPTION]... [-r DIR] [-o FILE]")
        .after_help(exit_status_of(mkfs::HELP))
        .args(flags::args(mkfs::FLAGS, ALL))
}

/// `jffs2-mkfs` invoked as `mkfs.jffs2`.
pub fn mkfs_jffs2_command() -> Command {
    base("mkfs.jffs2", MKFS_ABOUT, MKFS_LONG_ABOUT)
        .override_usage("mkfs.jffs2 [OPTION]... [-r DIR] [-o FILE]")
        .after_help(exit_status_of(mkfs::HELP))
        .args(flags::args(mkfs::FLAGS, ALL))
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

/// `jffs2-sumtool`.
pub fn sumtool_command() -> Command {
    base("jffs2-sumtool", SUMTOOL_ABOUT, SUMTOOL_LONG_ABOUT)
        .override_usage("jffs2-sumtool [OPTION]... -i INPUTFILE -o OUTPUTFILE")
        .after_help(exit_status_of(sumtool::HELP))
        .args(flags::args(sumtool::FLAGS, ALL))
}

/// `jffs2-sumtool` invoked as `sumtool`.
pub fn sumtool_drop_in_command() -> Command {
    base("sumtool", SUMTOOL_ABOUT, SUMTOOL_LONG_ABOUT)
        .override_usage("sumtool [OPTION]... -i INPUTFILE -o OUTPUTFILE")
        .after_help(exit_status_of(sumtool::HELP))
        .args(flags::args(sumtool::FLAGS, ALL))
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
    base("jffs2-dump", DUMP_ABOUT, DUMP_LONG_ABOUT)
        .override_usage(
            "jffs2-dump [OPTION]... INPUTFILE\n\
             jffs2-dump --info|--list|--json|--blocks|--summary INPUTFILE\n\
             jffs2-dump --cat PATH INPUTFILE\n\
             jffs2-dump --extract DIR [--force] INPUTFILE",
        )
        .after_help(exit_status_of(&dump::help("jffs2-dump")))
        .args(flags::args(dump::FLAGS, dump::OURS))
        .arg(operand(
            "INPUTFILE",
            "INPUTFILE",
            "The image (a file, or a device that can be read).",
        ))
}

/// `jffs2-dump` invoked as `jffs2dump`.
pub fn jffs2dump_command() -> Command {
    base("jffs2dump", "dump the contents of a binary JFFS2 image", "Dumps the contents of a binary JFFS2 image, as mtd-utils jffs2dump does: -c prints every node, -e converts the image to the other byte order.")
        .override_usage("jffs2dump [OPTION]... INPUTFILE")
        .after_help(
            "Exit status: 0 on success, corrupt images included, and also when the number \
             of operands is not one (the help is then printed, as jffs2dump does); 1 on \
             errors and usage errors.",
        )
        .args(flags::args(dump::FLAGS, dump::DROP_IN))
        .arg(operand("INPUTFILE", "INPUTFILE", "The image."))
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
    .args(flags::args(dump::READER, ALL))
    .arg(operand("IMAGE", "IMAGE", "The image."))
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

/// `jffs2-fsck`.
pub fn fsck_command() -> Command {
    base("jffs2-fsck", FSCK_ABOUT, FSCK_LONG_ABOUT)
        .override_usage("jffs2-fsck [OPTION]... IMAGE")
        .after_help(exit_status_of(&fsck::help()))
        .args(flags::args(fsck::FLAGS, fsck::PLAIN))
        .arg(operand(
            "IMAGE",
            "IMAGE",
            "The image: a file, or a device that can be read.",
        ))
}

/// `jffs2-fsck` invoked as `fsck.jffs2` (by fsck(8)).
pub fn fsck_jffs2_command() -> Command {
    let mut args = flags::args(fsck::FLAGS, fsck::AS_FSCK);
    // The operand where `jffs2-fsck` has it: before fsck(8)'s options.
    let at = args
        .iter()
        .take_while(|a| a.get_help_heading().is_none())
        .count();
    args.insert(
        at,
        operand(
            "IMAGE",
            "IMAGE",
            "The image: a file, or a device that can be read.",
        ),
    );
    base("fsck.jffs2", FSCK_ABOUT, FSCK_LONG_ABOUT)
        .override_usage(
            "fsck.jffs2 [-a|-p|-y|-n] [-f] [-V] [-C[FD]] [OPTION]... IMAGE\n\
             fsck -t jffs2 IMAGE",
        )
        .after_help(exit_status_of(&fsck::help()))
        .args(args)
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
    base("jffs2-convert", CONVERT_ABOUT, CONVERT_LONG_ABOUT)
        .override_usage("jffs2-convert -i INPUT -o OUTPUT [OPTION]...")
        .after_help(exit_status_of(&convert::help()))
        .args(flags::args(convert::FLAGS, ALL))
}

const MOUNT_ABOUT: &str = "mount a JFFS2 image read-only through FUSE";

const MOUNT_LONG_ABOUT: &str = "Mounts a JFFS2 image read-only through FUSE, showing what \
Linux shows when it mounts the image (the files jffs2-dump --extract writes): names, modes, \
owners, times, hard links, symlinks, devices, extended attributes and POSIX ACLs, statfs \
figures. No kernel JFFS2 or MTD support is needed; an ordinary user mounts through \
fusermount3. File data is decompressed when read, with a cache of bounded size. An image \
Linux would refuse to mount is mounted all the same, with a warning naming why.

In the background (the default) jffs2-mount returns once the mount is ready. It also \
accepts the argument form mount(8) gives a FUSE helper, so that mount -t fuse.jffs2-mount \
IMAGE DIR and an /etc/fstab line of type fuse.jffs2-mount work.";

const MOUNT_COMPAT: &str = "Linux mounts JFFS2 only from an MTD device (mtdram, block2mtd \
and losetup as root, in the image's byte order); jffs2-mount needs neither root nor the \
kernel driver, and reads both byte orders, NAND dumps with OOB bytes and OpenWrt's LZMA. \
What it shows is the kernel's view as jffs2-dump --extract writes it; directory entries are \
listed in name order (Linux lists them in the order of a name hash).";

/// `jffs2-mount`.
pub fn mount_command() -> Command {
    base("jffs2-mount", MOUNT_ABOUT, MOUNT_LONG_ABOUT)
        .override_usage(
            "jffs2-mount [OPTION]... IMAGE MOUNTPOINT\n       jffs2-mount -u MOUNTPOINT",
        )
        .after_help(exit_status_of(&mount::help()))
        .args(flags::args(mount::FLAGS, ALL))
        .arg(operand(
            "IMAGE",
            "IMAGE",
            "The image: a file, or a device that can be read.",
        ))
        .arg(
            operand("MOUNTPOINT", "MOUNTPOINT", "The directory to mount it on.")
                .value_hint(ValueHint::DirPath),
        )
}

const JEFFERSON_COMPAT: &str = "This is jffs2-dump invoked as jefferson (a link made at \
installation): the command line of the Python jefferson 0.4 extractor, which binwalk, unblob \
and FACT run (jefferson -f -d DIR FILE, jefferson -v -f -d DIR FILE, fakeroot jefferson -vfd \
DIR FILE), with its exit status where those tools read it.

What is extracted is what jffs2-dump --extract writes: the files Linux shows (deleted files \
stay deleted, every hard link, rubin and dynrubin data, holes), the byte order detected from \
the filesystem's nodes, names that would leave DIR refused. As an ordinary user nothing \
fails for want of root: the device nodes that cannot be made are listed with their owners in \
DIR.devtable (mkfs.jffs2 -D syntax), and the other owners not set are counted in a notice. \
Messages go to standard error; standard output carries only jefferson's line for an \
existing DIR without -f. -f merges into DIR and never removes anything.";

/// `jffs2-dump` invoked as `jefferson`.
pub fn jefferson_command() -> Command {
    base(
        "jefferson",
        "extract a JFFS2 image (jefferson's command line)",
        "Extracts the JFFS2 filesystem in FILE into DIR (default: jffs2-root in the current \
         directory), as jffs2-dump --extract does, under the command line of the jefferson \
         extractor.",
    )
    .override_usage("jefferson [-d DIR] [-f] [-v|-vv|-vvv] FILE")
    .after_help(exit_status_of(&jefferson::help()))
    .args(flags::args(jefferson::FLAGS, ALL))
    .arg(operand("FILE", "FILE", "The image (a file)."))
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
            let theirs = getopt_names(&p.short(), &p.long());
            assert_eq!(
                ours, theirs,
                "{}: clap command and getopt tables differ",
                p.name
            );
            // No clap option pairs a short letter with a long name that getopt gives to
            // another letter.
            let letters: Vec<u8> = parse_short_spec(&p.short())
                .iter()
                .map(|(c, _)| *c)
                .collect();
            let long = p.long();
            for a in cmd.get_arguments() {
                let shorts: Vec<char> = a.get_short().into_iter().collect();
                let longs = a
                    .get_long()
                    .into_iter()
                    .chain(a.get_all_aliases().unwrap_or_default());
                for l in longs {
                    let Some(o) = long.iter().find(|o| o.name == l) else {
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
            "jffs2-mount",
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
                ("jefferson", "jffs2-dump"),
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
