//! The options of `jffs2-sumtool` / `sumtool` (`docs/spec/mtd-utils-spec.md` §5.1): the
//! table is in the order of the manual page; `rank` keeps sumtool's long-option order.

use super::{Flag, Section, Takes, Values, BASE};

/// Id of `--force-eraseblock`.
pub(crate) const OPT_FORCE_ERASEBLOCK: u32 = 2000;

/// Every option of `jffs2-sumtool` (and of `sumtool`: both names have them all).
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "eraseblock",
        short: b'e',
        long: &["eraseblock"],
        takes: Takes::Required("SIZE", Values::Any),
        doc: "Use erase block size SIZE (default: the input's when detected with confidence, else 64KiB; usually 16KiB on NAND). A given size must be the input's, unless --force-eraseblock.",
        rank: 3,
        ..BASE
    },
    Flag {
        key: "cleanmarker",
        short: b'c',
        long: &["cleanmarker"],
        takes: Takes::Required("SIZE", Values::Any),
        doc: "Size of cleanmarker (default 12, or what the input's cleanmarkers have).",
        rank: 10,
        ..BASE
    },
    Flag {
        key: "no-cleanmarkers",
        short: b'n',
        long: &["no-cleanmarkers"],
        doc: "Don't add a cleanmarker to every eraseblock.",
        rank: 9,
        ..BASE
    },
    Flag {
        key: "output",
        short: b'o',
        long: &["output"],
        takes: Takes::Required("FILE", Values::File),
        doc: "Output to FILE.",
        rank: 1,
        ..BASE
    },
    Flag {
        key: "input",
        short: b'i',
        long: &["input"],
        takes: Takes::Required("FILE", Values::File),
        doc: "Input from FILE.",
        rank: 2,
        ..BASE
    },
    Flag {
        key: "bigendian",
        short: b'b',
        long: &["bigendian"],
        doc: "Image is big endian (detected; an error if it is not).",
        rank: 7,
        ..BASE
    },
    Flag {
        key: "littleendian",
        short: b'l',
        long: &["littleendian"],
        doc: "Image is little endian (detected; an error if it is not).",
        rank: 8,
        ..BASE
    },
    Flag {
        key: "help",
        short: b'h',
        long: &["help"],
        doc: "Display this help text.",
        rank: 4,
        ..BASE
    },
    Flag {
        key: "verbose",
        short: b'v',
        long: &["verbose"],
        doc: "Verbose operation: sumtool's listing of the nodes written.",
        rank: 5,
        ..BASE
    },
    Flag {
        key: "version",
        short: b'V',
        long: &["version"],
        doc: "Display version information.",
        rank: 6,
        ..BASE
    },
    Flag {
        key: "pad",
        short: b'p',
        long: &["pad"],
        doc: "Pad the OUTPUT with 0xFF to the end of the final eraseblock.",
        rank: 11,
        ..BASE
    },
    Flag {
        key: "force-eraseblock",
        long: &["force-eraseblock"],
        id: OPT_FORCE_ERASEBLOCK,
        doc: "Proceed when -e differs from the erase size the input was built with: the input is read with its own erase size and re-blocked into -e blocks.",
        section: Section {
            title: "",
            heading: Some("JFFS2-TOOLS ADDITIONS"),
        },
        rank: 12,
        ..BASE
    },
];

/// The help text: sumtool's, verbatim (`-l  --littleendian` and the blanks after FILE
/// included, which a generated text would not reproduce), with what differs added at the
/// end. A unit test checks that it names exactly the options of [`FLAGS`].
pub const HELP: &str = "Usage: sumtool [OPTIONS] -i inputfile -o outputfile

Convert the input JFFS2 image to a summarized JFFS2 image
Summary makes mounting faster - if summary support enabled in your kernel

Options:
  -e, --eraseblock=SIZE     Use erase block size SIZE (default: 64KiB)
                            (usually 16KiB on NAND)
  -c, --cleanmarker=SIZE    Size of cleanmarker (default 12).
                            (usually 16 bytes on NAND, and will be set to
                            this value if left at the default 12). Will be
                            stored in OOB after each physical page composing
                            a physical eraseblock.
  -n, --no-cleanmarkers     Don't add a cleanmarker to every eraseblock
  -o, --output=FILE         Output to FILE 
  -i, --input=FILE          Input from FILE 
  -b, --bigendian           Image is big endian
  -l  --littleendian        Image is little endian
  -h, --help                Display this help text
  -v, --verbose             Verbose operation
  -V, --version             Display version information
  -p, --pad                 Pad the OUTPUT with 0xFF to the end of the final
                            eraseblock

jffs2-tools (what differs from mtd-utils' sumtool):
      --force-eraseblock    Proceed when -e differs from the erase size the
                            input was built with: the input is read with its
                            own erase size and re-blocked into -e blocks
  The erase size and byte order of the input are detected. When -e or -b/-l
  is not given and the input was built otherwise, the detected value is used,
  with a warning (mtd-utils' sumtool would lose nodes); when a given -e or
  -b/-l disagrees, sumtool stops with an error instead of writing a broken
  image. Every erase block that holds nodes gets a summary, the last
  one included; the output is padded to at least the input's size (padded
  empty blocks are kept); obsolete nodes are dropped, never resurrected.
  The cleanmarker is 12 bytes unless -c or the input's cleanmarkers say
  otherwise (nothing is stored in OOB). The output is written to a temporary
  file and renamed into place, so a failed run leaves FILE untouched and
  -i and -o may name the same file.
Exit status: 0 on success, 1 for an unknown option, 255 for any other error.
";

#[cfg(test)]
mod tests {
    use super::super::tests::{
        check_clap, check_help_kinds, check_ranks, check_table, check_text, message,
    };
    use super::super::ALL;
    use super::*;
    use crate::cli::describe::{sumtool_command, sumtool_drop_in_command};

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, false);
        check_text(FLAGS, ALL, HELP, &[]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(sumtool_command(), FLAGS, ALL);
        check_clap(sumtool_drop_in_command(), FLAGS, ALL);
    }

    #[test]
    fn long_options_in_sumtool_order() {
        check_ranks(FLAGS, &[ALL]);
        assert_eq!(
            message(FLAGS, ALL, "--ver"),
            "option '--ver' is ambiguous; possibilities: '--verbose' '--version'"
        );
    }
}
