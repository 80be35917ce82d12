//! The options of `jefferson` (`jffs2-dump` invoked under that name): jefferson 0.4's
//! command line (`docs/spec/ecosystem.md` §1.2.1), in the order of its `--help`, and our
//! `-V`/`--version`; the `--help` text is generated from the table.

use super::{help_lines, version_flag, Flag, Help, Takes, Values, ALL, BASE, OPTIONS};

/// Every option of `jefferson`.
pub const FLAGS: &[Flag] = &[
    Flag {
        key: "dest",
        short: b'd',
        long: &["dest"],
        takes: Takes::Required("DIRECTORY", Values::Dir),
        help: Help::Line(
            "Extract the files into this directory, created if it\n\
             does not exist (default: ./jffs2-root)",
        ),
        doc: "Extract the files into this directory, created if it does not exist (its parent must exist). Default: jffs2-root in the current directory.",
        ..BASE
    },
    Flag {
        key: "force",
        short: b'f',
        long: &["force"],
        help: Help::Line(
            "Extract even if the directory exists (its contents are\n\
             merged into, never replaced)",
        ),
        doc: "Extract even if the destination exists: the image's files are merged into it; nothing already there is replaced or removed (a name that exists is refused).",
        ..BASE
    },
    Flag {
        key: "verbose",
        short: b'v',
        long: &["verbose"],
        help: Help::Line("More messages on standard error (-v, -vv, -vvv: the same)"),
        doc: "Say on standard error what was detected and extracted. Given more than once (-vv, -vvv), the same.",
        ..BASE
    },
    Flag {
        key: "help",
        short: b'h',
        long: &["help"],
        help: Help::Line("Show this message and exit"),
        doc: "Show the help on standard output and exit.",
        ..BASE
    },
    // Ours (jefferson has none): which jefferson is installed.
    version_flag(OPTIONS),
];

/// What comes before the options in `--help`.
const HEAD: &str = "Usage: jefferson [OPTIONS] FILE

  Extracts the JFFS2 filesystem in FILE (jffs2-tools' jefferson: the files Linux
  shows, whatever the byte order; see jffs2-dump --extract). A FILE holding
  several filesystems (jffs2-dump --find lists them) has each extracted into
  DIRECTORY/fs_1, DIRECTORY/fs_2, ... in file order.

";

/// What comes after the options in `--help`.
const TAIL: &str = "
Exit status: 0 extracted; 1 FILE cannot be read or holds no JFFS2 filesystem, or the
directory cannot be made; 2 usage error, or some entries were refused (named on
standard error); 255 the directory exists and -f was not given, or FILE is empty.
";

/// The `--help` text.
pub fn help() -> String {
    format!("{HEAD}{}{TAIL}", help_lines(FLAGS, ALL, 24))
}

#[cfg(test)]
mod tests {
    use super::super::tests::{check_clap, check_help_kinds, check_table, check_text};
    use super::*;
    use crate::cli::describe::jefferson_command;

    #[test]
    fn help_names_every_option() {
        check_table(FLAGS);
        check_help_kinds(FLAGS, true);
        check_text(FLAGS, ALL, &help(), &["--extract", "--find"]);
    }

    #[test]
    fn clap_describes_what_is_parsed() {
        check_clap(jefferson_command(), FLAGS, ALL);
    }
}
