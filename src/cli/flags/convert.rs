//! The options of `jffs2-convert`, in the order of `--help` and the manual page; the `--help`
//! text is generated from the table.

use super::{
    help_flag, help_lines, offset_flag, size_flag, version_flag, Flag, Help, Section, Takes,
    Values, ALL, BASE,
};

/// Id of `--summary`.
pub(crate) const OPT_SUMMARY: u32 = 1000;
/// Id of `--no-summary`.
pub(crate) const OPT_NO_SUMMARY: u32 = 1001;
/// Id of `--input-eraseblock`.
pub(crate) const OPT_INPUT_ERASEBLOCK: u32 = 1002;
/// Id of `--input-endian`.
pub(crate) const OPT_INPUT_ENDIAN: u32 = 1003;
/// Id of `--oobsize`.
pub(crate) const OPT_OOBSIZE: u32 = 1004;
/// Id of `--input-pagesize`.
pub(crate) const OPT_INPUT_PAGESIZE: u32 = 1005;
/// Id of `--json`.
pub(crate) const OPT_JSON: u32 = 1006;
/// Id of `--threads`.
pub(crate) const OPT_THREADS: u32 = 1007;
/// Id of `--no-progress`.
pub(crate) const OPT_NO_PROGRESS: u32 = 1008;

/// What is read.
const INPUT: Section = Section {
    title: "Input:",
    heading: Some("INPUT OPTIONS"),
};

/// What is written: mkfs.jffs2's options.
const OUTPUT: Section = Section {
    title: "Output (mkfs.jffs2's options; default: what the input had):",
    heading: None,
};

/// The rest.
const OTHER: Section = Section {
    title: "Other:",
    heading: Some("OTHER OPTIONS"),
};

/// Every option of `jffs2-convert`.
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "input",
        short: b'i',
        long: &["input"],
        takes: Takes::Required("FILE", Values::File),
        help: Help::Line("The image (a partition dump, dirty or clean)"),
        doc: "The image (a partition dump, dirty or clean).",
        section: INPUT,
        ..BASE
    },
    Flag {
        key: "input-eraseblock",
        long: &["input-eraseblock"],
        id: OPT_INPUT_ERASEBLOCK,
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line("Its erase size (detected when not given)"),
        doc: "Its erase size (detected when not given).",
        section: INPUT,
        ..BASE
    },
    Flag {
        key: "input-endian",
        long: &["input-endian"],
        id: OPT_INPUT_ENDIAN,
        takes: Takes::Required("little|big", Values::Choices(&["little", "big"])),
        help: Help::Line("Its byte order (detected when not given)"),
        doc: "Its byte order (detected when not given).",
        section: INPUT,
        ..BASE
    },
    Flag {
        key: "oobsize",
        long: &["oobsize"],
        id: OPT_OOBSIZE,
        takes: Takes::Required("N", Values::Any),
        help: Help::Line(
            "The input is a raw NAND dump with N bytes of OOB after\n\
             every page: they are removed first",
        ),
        doc: "The input is a raw NAND dump with N bytes of OOB after every page: they are removed first.",
        section: INPUT,
        // After --output for getopt, so that `--o` is reported ambiguous between
        // '--output' '--oobsize', in that order, as before the table existed.
        rank: 1,
        ..BASE
    },
    Flag {
        key: "input-pagesize",
        long: &["input-pagesize"],
        id: OPT_INPUT_PAGESIZE,
        takes: Takes::Required("N", Values::Any),
        help: Help::Line("NAND page size of such a dump (default 2048)"),
        doc: "NAND page size of such a dump (default 2048).",
        section: INPUT,
        ..BASE
    },
    // After --output and --oobsize for getopt: `--o` keeps naming those first.
    offset_flag(INPUT, ALL, 2, true),
    size_flag(INPUT, ALL, 2, true),
    Flag {
        key: "output",
        short: b'o',
        long: &["output"],
        takes: Takes::Required("FILE", Values::File),
        help: Help::Line("The new image (written to a temporary file, then renamed)"),
        doc: "The new image (written to a temporary file, then renamed).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "eraseblock",
        short: b'e',
        long: &["eraseblock"],
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line("Erase block size (default: the input's)"),
        doc: "Erase block size (default: the input's).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "pagesize",
        short: b's',
        long: &["pagesize"],
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line(
            "Page size: no data node crosses a multiple of it\n\
             (default 4KiB; the target's PAGE_SIZE)",
        ),
        doc: "Page size: no data node crosses a multiple of it (default 4KiB; the target's PAGE_SIZE).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "cleanmarker",
        short: b'c',
        long: &["cleanmarker"],
        takes: Takes::Required("SIZE", Values::Any),
        help: Help::Line("Cleanmarker size (default 12)"),
        doc: "Cleanmarker size (default 12).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "no-cleanmarkers",
        short: b'n',
        long: &["no-cleanmarkers"],
        help: Help::Line("No cleanmarkers\n(default: cleanmarkers if the input has them)"),
        doc: "No cleanmarkers (default: cleanmarkers if the input has them).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "little-endian",
        short: b'l',
        long: &["little-endian"],
        help: Help::Line("Little-endian output"),
        doc: "Little-endian output.",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "big-endian",
        short: b'b',
        long: &["big-endian"],
        help: Help::Line("Big-endian output (default: the input's byte order)"),
        doc: "Big-endian output (default: the input's byte order).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "pad",
        short: b'p',
        long: &["pad"],
        takes: Takes::Optional("SIZE", Values::Any),
        help: Help::Line(
            "Pad the output with 0xFF to SIZE (at most 4GiB; KiB,\n\
             MiB, GiB suffixes), or to the end of the final erase\n\
             block (default: to the end of the final block)",
        ),
        doc: "Pad the output with 0xFF to SIZE (at most 4GiB; KiB, MiB and GiB suffixes), or to the end of the final erase block (default: to the end of the final block). SIZE must be attached.",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "summary",
        long: &["summary"],
        id: OPT_SUMMARY,
        help: Help::Line("Write an erase block summary in every block"),
        doc: "Write an erase block summary in every block.",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "no-summary",
        long: &["no-summary"],
        id: OPT_NO_SUMMARY,
        help: Help::Line("Write no summaries (default: summaries if the input had)"),
        doc: "Write no summaries (default: summaries if the input had).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "compression-mode",
        short: b'm',
        long: &["compression-mode"],
        takes: Takes::Required("MODE", Values::Modes),
        help: Help::Line("none, priority, size or favourlzo"),
        doc: "Compression mode (recompresses every data node).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "disable-compressor",
        short: b'x',
        long: &["disable-compressor"],
        takes: Takes::Required("NAME", Values::Compressors),
        // Its help is -y's, shared by the three.
        help: Help::Line(""),
        doc: "Disable a compressor (recompresses every data node).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "enable-compressor",
        short: b'X',
        long: &["enable-compressor"],
        takes: Takes::Required("NAME", Values::Compressors),
        help: Help::Line(""),
        doc: "Enable a compressor (recompresses every data node).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "compressor-priority",
        short: b'y',
        long: &["compressor-priority"],
        takes: Takes::Required("PRIORITY:NAME", Values::Any),
        help: Help::Line(
            "\nAny of these recompresses every data node with the\n\
             given compressors; without them compressed data is\n\
             copied as it is and only rewritten nodes are compressed\n\
             (with mkfs.jffs2's defaults: zlib, then rtime)",
        ),
        doc: "Set the priority of a compressor (recompresses every data node).",
        section: OUTPUT,
        ..BASE
    },
    Flag {
        key: "verbose",
        short: b'v',
        long: &["verbose"],
        help: Help::Line("Report what was copied, rewritten and left out"),
        doc: "Report what was copied, rewritten and left out.",
        section: OTHER,
        ..BASE
    },
    Flag {
        key: "json",
        long: &["json"],
        id: OPT_JSON,
        help: Help::Line("The report as JSON on stdout"),
        doc: "The report as JSON on standard output.",
        section: OTHER,
        ..BASE
    },
    Flag {
        key: "threads",
        long: &["threads"],
        id: OPT_THREADS,
        takes: Takes::Required("N", Values::Any),
        help: Help::Line("Compression threads, 1 to 1024 (default: one per core)"),
        doc: "Compression threads, 1 to 1024 (default: one per core).",
        section: OTHER,
        ..BASE
    },
    Flag {
        key: "no-progress",
        long: &["no-progress"],
        id: OPT_NO_PROGRESS,
        help: Help::Line("No progress bar (shown only when stderr is a terminal)"),
        doc: "No progress bar (shown only when standard error is a terminal).",
        section: OTHER,
        ..BASE
    },
    help_flag(OTHER),
    version_flag(OTHER),
];

/// What comes before the options in `--help`.
const HEAD: &str = "Usage: jffs2-convert -i INPUT -o OUTPUT [OPTIONS]

Rewrites a JFFS2 image as Linux would show it mounted: every file, directory, link,
device, owner, mode, time and extended attribute is kept; obsolete, superseded and
deleted nodes are dropped (offline garbage collection); the output can have another
erase size, page size, cleanmarker layout, byte order, compression, and summaries.
Live nodes are copied unchanged where the new layout allows; the rest is rewritten
within page boundaries, compressed on all cores.

";

/// What comes after the options in `--help`.
const TAIL: &str = "
Exit status: 0 converted; 1 converted, but something Linux cannot read or never
shows (valid nodes a summary hides, data failing its CRC included), or a further
name of a directory (a cycle, a second parent), was left out (each named on
stderr), or Linux would not mount the input (what can be read of it was
converted); 8 the input cannot be converted (not JFFS2, unreadable, nothing of
it readable) or the output (or standard output) cannot be written; 16 usage
error.
";

/// The `--help` text.
pub fn help() -> String {
    format!("{HEAD}{}{TAIL}", help_lines(FLAGS, ALL, 28))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_clap, check_help_kinds, check_table, check_text, message};
    use super::*;
    use crate::cli::describe::convert_command;

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, true);
        check_text(FLAGS, ALL, &help(), &[]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(convert_command(), FLAGS, ALL);
    }

    #[test]
    fn oobsize_after_output_for_getopt() {
        assert_eq!(
            message(FLAGS, ALL, "--o"),
            "option '--o' is ambiguous; possibilities: '--output' '--oobsize' '--offset'"
        );
        assert_eq!(
            message(FLAGS, ALL, "--in"),
            "option '--in' is ambiguous; possibilities: '--input' '--input-eraseblock' \
             '--input-endian' '--input-pagesize'"
        );
    }
}
