//! Every command-line option of every tool, each defined once.
//!
//! A tool's options are a table of [`Flag`]s (one module per tool). From one row come: the
//! getopt short-option string and long-option table the tool parses with
//! ([`super::getopt`]), its line in the `--help` text (for the tools whose text is generated),
//! and the clap [`Arg`] that [`super::describe`] gives `clap_mangen` and `clap_complete` for
//! the manual page and the completions.
//!
//! mtd-utils' usage texts (mkfs.jffs2, sumtool, jffs2dump, jffs2reader) cannot be generated
//! without changing their bytes, so those stay verbatim constants next to their table, and a
//! unit test per tool checks that every option of the table is named in the text and every
//! option the text names is in the table.

pub mod convert;
pub mod dump;
pub mod fsck;
pub mod jefferson;
pub mod mkfs;
pub mod mount;
pub mod sumtool;

use std::ffi::OsString;

use clap::builder::PossibleValue;
use clap::{Arg, ArgAction, ValueHint};

use jffs2::compress::Kind;

use super::getopt::{getopt_long, HasArg, LongOpt, Parsed};

/// Which of a tool's names (personalities) have an option: a bit set, one bit per name
/// (each tool module defines its bits).
pub type Names = u8;

/// Every name of a tool.
pub const ALL: Names = Names::MAX;

/// What an option's argument is, for completion and the manual page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Values {
    /// Anything (a number, a size, a name inside an image).
    Any,
    /// A file of the host.
    File,
    /// A directory of the host.
    Dir,
    /// A compression mode of mkfs.jffs2 (`-m`).
    Modes,
    /// A compressor name (`-x`, `-X`).
    Compressors,
    /// One of these words.
    Choices(&'static [&'static str]),
}

/// Whether an option takes an argument, its name (`SIZE`, `FILE`) and what it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// No argument.
    Nothing,
    /// A required argument: attached or the next word.
    Required(&'static str, Values),
    /// An optional argument, taken only when attached (`-pSIZE`, `--pad=SIZE`;
    /// `docs/spec/mtd-utils-spec.md` §3.1).
    Optional(&'static str, Values),
}

impl Takes {
    /// getopt's view of it.
    pub const fn has_arg(self) -> HasArg {
        match self {
            Takes::Nothing => HasArg::No,
            Takes::Required(..) => HasArg::Required,
            Takes::Optional(..) => HasArg::Optional,
        }
    }
}

/// Where an option is listed: the heading of its group in a generated `--help` text and in
/// the manual page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// The line that starts its group in a generated `--help` text (`"Options:"`).
    pub title: &'static str,
    /// The manual page's heading (`None`: the default "OPTIONS").
    pub heading: Option<&'static str>,
}

/// The default section: "Options:", listed under OPTIONS in the manual page.
pub const OPTIONS: Section = Section {
    title: "Options:",
    heading: None,
};

/// How an option appears in `--help`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Help {
    /// Named in the tool's verbatim usage text (mtd-utils' words, kept byte for byte).
    Verbatim,
    /// Its line in a generated text: what follows the option names. Lines are separated by
    /// `\n` and indented to the text's column; a leading `\n` puts the text under the names.
    Line(&'static str),
    /// Named only in the prose of a generated text (not listed as a line).
    Prose,
    /// Not in `--help` at all, on purpose (the manual page describes it).
    Unlisted,
}

/// One option: everything about it, in one place.
#[derive(Debug, Clone, Copy)]
pub struct Flag {
    /// The clap argument id (the long name, or the letter of a short-only option).
    pub key: &'static str,
    /// Its short letter (0: none).
    pub short: u8,
    /// Other short letters for it, listed in the manual page (mkfs.jffs2's `-d` for `-r`).
    /// Each is reported under its own letter, so the tool may tell them apart.
    pub also: &'static [u8],
    /// Short letters that are accepted but not listed (mkfs.jffs2's `-?`), reported under
    /// their own letter.
    pub hidden: &'static [u8],
    /// Its long names, without `--`. The manual page lists `long[primary]` first and the
    /// others as aliases.
    pub long: &'static [&'static str],
    /// Index in `long` of the name the manual page shows first.
    pub primary: usize,
    /// The id the parser reports for the long names; 0: the short letter. (The short
    /// letters are always reported as themselves.)
    pub id: u32,
    /// Its argument.
    pub takes: Takes,
    /// Its `--help` presence.
    pub help: Help,
    /// Its description in the manual page (and zsh/fish completions).
    pub doc: &'static str,
    /// Its group.
    pub section: Section,
    /// The names of the tool that have it.
    pub names: Names,
    /// Position of its long names in the getopt long-option table, where it must differ
    /// from the table's order: glibc names the candidates of an ambiguous abbreviation
    /// in that order (`option '--s' is ambiguous; possibilities: ...`), and mtd-utils'
    /// order is kept. Rows sort by it, stably; 0 for all keeps the table's order.
    pub rank: u8,
}

/// A row's defaults, for `..BASE` in the tables.
pub const BASE: Flag = Flag {
    key: "",
    short: 0,
    also: &[],
    hidden: &[],
    long: &[],
    primary: 0,
    id: 0,
    takes: Takes::Nothing,
    help: Help::Verbatim,
    doc: "",
    section: OPTIONS,
    names: ALL,
    rank: 0,
};

/// `-h`/`--help` of a tool whose `--help` is generated (jffs2-convert, jffs2-mount), in
/// `section`.
pub const fn help_flag(section: Section) -> Flag {
    Flag {
        key: "help",
        short: b'h',
        long: &["help"],
        help: Help::Line("This text"),
        doc: "This text.",
        section,
        ..BASE
    }
}

/// `-V`/`--version` of a tool whose `--help` is generated, in `section`.
pub const fn version_flag(section: Section) -> Flag {
    Flag {
        key: "version",
        short: b'V',
        long: &["version"],
        help: Help::Line("Version information"),
        doc: "Version information.",
        section,
        ..BASE
    }
}

/// Id of `--offset`, the same in every reading tool's table ([`offset_flag`]).
pub const OPT_OFFSET: u32 = 1100;
/// Id of `--size` ([`size_flag`]).
pub const OPT_SIZE: u32 = 1101;

/// `--offset=N` of every reading tool (jffs2-fsck, jffs2-dump, jffs2-convert, jffs2-mount):
/// read the filesystem that starts N bytes into the file, in place, as if it had been cut
/// out with dd; `help` is the tool's kind of `--help` ([`Help::Line`] or [`Help::Verbatim`]).
pub const fn offset_flag(section: Section, names: Names, rank: u8, help: bool) -> Flag {
    Flag {
        key: "offset",
        long: &["offset"],
        id: OPT_OFFSET,
        takes: Takes::Required("N", Values::Any),
        help: if help {
            Help::Line("Read the filesystem N bytes into the file (decimal,\n0x hex, KiB/MiB/GiB); offsets count from there")
        } else {
            Help::Verbatim
        },
        doc: "Read the filesystem that starts N bytes into the file (decimal, 0x hex, or with a KiB, MiB or GiB suffix), in place, as if it had been cut out with dd: every offset reported counts from there. With --oobsize, N counts bytes of the raw file.",
        section,
        names,
        rank,
        ..BASE
    }
}

/// `--size=N` of every reading tool, with [`offset_flag`]: the filesystem is N bytes long.
pub const fn size_flag(section: Section, names: Names, rank: u8, help: bool) -> Flag {
    Flag {
        key: "size",
        long: &["size"],
        id: OPT_SIZE,
        takes: Takes::Required("N", Values::Any),
        help: if help {
            Help::Line("...and is N bytes long (default: to the end of the file)")
        } else {
            Help::Verbatim
        },
        doc: "The filesystem read is N bytes long (same grammar as --offset; default: to the end of the file). What follows it in the file is never read.",
        section,
        names,
        rank,
        ..BASE
    }
}

/// The values of `--offset` and `--size`, as parsed ([`Window::set`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Window {
    /// `--offset`.
    pub offset: Option<u64>,
    /// `--size`.
    pub size: Option<u64>,
}

impl Window {
    /// Takes `arg` for `id` when it is [`OPT_OFFSET`] or [`OPT_SIZE`] (`Ok(true)`); `Ok(false)`
    /// for another option; the message for a value that is not a size.
    pub fn set(&mut self, id: u32, arg: &str) -> Result<bool, String> {
        let slot = match id {
            OPT_OFFSET => &mut self.offset,
            OPT_SIZE => &mut self.size,
            _ => return Ok(false),
        };
        let name = if id == OPT_OFFSET { "offset" } else { "size" };
        match super::num::size_up_to(arg, u64::MAX >> 1) {
            Some(n) if n >= 0 => {
                *slot = Some(n as u64);
                Ok(true)
            }
            _ => Err(format!(
                "invalid --{name} '{arg}': a byte count (decimal, 0x hex, KiB/MiB/GiB suffix)"
            )),
        }
    }

    /// The window to read (`None`: neither option given, the whole file).
    pub fn window(&self) -> Option<jffs2::mapped::Window> {
        if self.offset.is_none() && self.size.is_none() {
            return None;
        }
        Some(jffs2::mapped::Window {
            offset: self.offset.unwrap_or(0),
            size: self.size,
        })
    }
}

impl Flag {
    /// The id the parser reports for the long names.
    pub const fn id(&self) -> u32 {
        if self.id != 0 {
            self.id
        } else {
            self.short as u32
        }
    }

    /// Whether `name` (a bit) has it.
    pub const fn of(&self, name: Names) -> bool {
        self.names & name != 0
    }

    /// Its clap argument.
    pub fn arg(&self) -> Arg {
        let mut a = Arg::new(self.key).help(self.doc);
        a = match self.takes {
            Takes::Nothing => a.action(ArgAction::SetTrue),
            Takes::Required(name, values) => values
                .apply(a.action(ArgAction::Set).num_args(1))
                .value_name(name),
            // `--pad=SIZE` is shown with its `=`; a short-only option is not (`-C0`: an
            // `=` there would be part of the argument).
            Takes::Optional(name, values) => values
                .apply(
                    a.action(ArgAction::Set)
                        .num_args(0..=1)
                        .require_equals(!self.long.is_empty()),
                )
                .value_name(name),
        };
        if self.short != 0 {
            a = a.short(char::from(self.short));
        }
        for &c in self.also {
            a = a.visible_short_alias(char::from(c));
        }
        for &c in self.hidden {
            a = a.short_alias(char::from(c));
        }
        if let Some(&l) = self.long.get(self.primary) {
            a = a.long(l);
        }
        for (i, &l) in self.long.iter().enumerate() {
            if i != self.primary {
                a = a.visible_alias(l);
            }
        }
        if let Some(h) = self.section.heading {
            a = a.help_heading(h);
        }
        a
    }
}

impl Values {
    /// Sets the value hint (and the possible values) of `a`.
    fn apply(self, a: Arg) -> Arg {
        match self {
            Values::Any => a.value_hint(ValueHint::Other),
            Values::File => a.value_hint(ValueHint::FilePath),
            Values::Dir => a.value_hint(ValueHint::DirPath),
            Values::Modes => a.value_parser(modes()).value_hint(ValueHint::Unknown),
            Values::Compressors => a
                .value_parser(compressor_names())
                .value_hint(ValueHint::Unknown),
            Values::Choices(words) => a
                .value_parser(
                    words
                        .iter()
                        .map(|&w| PossibleValue::new(w))
                        .collect::<Vec<_>>(),
                )
                .value_hint(ValueHint::Unknown),
        }
    }
}

/// The compressor names `-x` and `-X` take.
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

/// The rows `name` has.
fn rows(table: &[Flag], name: Names) -> impl Iterator<Item = &Flag> {
    table.iter().filter(move |f| f.of(name))
}

/// The getopt short-option string of `name` (`"ab:c::"`).
pub fn short_spec(table: &[Flag], name: Names) -> String {
    let mut s = String::new();
    for f in rows(table, name) {
        let colons = match f.takes.has_arg() {
            HasArg::No => "",
            HasArg::Required => ":",
            HasArg::Optional => "::",
        };
        for &c in [f.short].iter().chain(f.also).chain(f.hidden) {
            if c != 0 {
                s.push(char::from(c));
                s.push_str(colons);
            }
        }
    }
    s
}

/// The getopt long options of `name`, in getopt's order (see [`Flag::rank`]).
pub fn long_opts(table: &[Flag], name: Names) -> Vec<LongOpt> {
    let mut v: Vec<&Flag> = rows(table, name).collect();
    v.sort_by_key(|f| f.rank);
    v.iter()
        .flat_map(|f| {
            f.long.iter().map(|&l| LongOpt {
                name: l,
                has_arg: f.takes.has_arg(),
                id: f.id(),
            })
        })
        .collect()
}

/// Parses `args` (without the program name) with the options `name` has.
pub fn getopt(args: &[OsString], table: &[Flag], name: Names) -> Vec<Parsed> {
    getopt_long(args, &short_spec(table, name), &long_opts(table, name))
}

/// The clap arguments of `name`, in the table's order.
pub fn args(table: &[Flag], name: Names) -> Vec<Arg> {
    rows(table, name).map(Flag::arg).collect()
}

/// The option lines of a generated `--help` text: the [`Help::Line`] rows of `name`, each
/// section started by its title and separated from the previous by a blank line; the help
/// of an option starts at `column`.
pub fn help_lines(table: &[Flag], name: Names, column: usize) -> String {
    let mut s = String::new();
    let mut section: Option<Section> = None;
    for f in rows(table, name) {
        let Help::Line(text) = f.help else {
            continue;
        };
        if section != Some(f.section) {
            if section.is_some() {
                s.push('\n');
            }
            s.push_str(f.section.title);
            s.push('\n');
            section = Some(f.section);
        }
        let mut left = String::from("  ");
        if f.short != 0 {
            left.push('-');
            left.push(char::from(f.short));
            left.push_str(if f.long.is_empty() { "" } else { ", " });
        } else {
            left.push_str("    ");
        }
        if let Some(l) = f.long.first() {
            left.push_str("--");
            left.push_str(l);
            match f.takes {
                Takes::Nothing => {}
                Takes::Required(v, _) => {
                    left.push('=');
                    left.push_str(v);
                }
                Takes::Optional(v, _) => {
                    left.push_str("[=");
                    left.push_str(v);
                    left.push(']');
                }
            }
        }
        s.push_str(&left);
        if let Some(under) = text.strip_prefix('\n') {
            for line in under.lines() {
                s.push('\n');
                s.push_str(&" ".repeat(column));
                s.push_str(line);
            }
        } else if !text.is_empty() {
            if left.len() < column {
                s.push_str(&" ".repeat(column - left.len()));
            } else {
                s.push_str("  ");
            }
            for (i, line) in text.lines().enumerate() {
                if i > 0 {
                    s.push('\n');
                    s.push_str(&" ".repeat(column));
                }
                s.push_str(line);
            }
        }
        s.push('\n');
    }
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use clap::Command;

    use super::*;
    use crate::cli::getopt::parse_short_spec;

    /// The option words (`-x`, `--xyz`) a usage text names.
    fn named_in(text: &str) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for line in text.lines() {
            let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '?'));
            for w in words {
                let name = w.trim_start_matches('-');
                let dashes = w.len() - name.len();
                let ok = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '?');
                match dashes {
                    1 if ok => {
                        // "-C" of "-C[fd]", "-p" of "-pSIZE": the letter only.
                        out.insert(format!("-{}", &name[..1]));
                    }
                    2 if ok => {
                        out.insert(w.to_string());
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// Every name of a row (`-x`, `--xyz`).
    fn names_of(f: &Flag) -> Vec<String> {
        let shorts = [f.short].into_iter().chain(f.also.iter().copied());
        let shorts = shorts.chain(f.hidden.iter().copied()).filter(|&c| c != 0);
        shorts
            .map(|c| format!("-{}", char::from(c)))
            .chain(f.long.iter().map(|l| format!("--{l}")))
            .collect()
    }

    /// Checks that `text` (the usage text of `name`) names every option `name` has, except
    /// the [`Help::Unlisted`] ones, and names no other option except the `foreign` ones
    /// (another tool's, which the text refers to).
    pub(crate) fn check_text(table: &[Flag], name: Names, text: &str, foreign: &[&str]) {
        let mut named = named_in(text);
        for f in foreign {
            assert!(named.remove(*f), "{f} is not in the text");
        }
        let mut known = BTreeSet::new();
        for f in rows(table, name) {
            let all = names_of(f);
            if f.help != Help::Unlisted {
                assert!(
                    all.iter().any(|n| named.contains(n)),
                    "{} is not in the text:\n{text}",
                    f.key
                );
            }
            known.extend(all);
        }
        let unknown: Vec<&String> = named.difference(&known).collect();
        assert!(
            unknown.is_empty(),
            "the text names {unknown:?}, not in the table"
        );
    }

    /// Checks that the clap command describes exactly what the parser accepts for `name`:
    /// every option name clap knows is parsed, with the same argument kind, and every option
    /// getopt knows is in clap's command.
    pub(crate) fn check_clap(mut cmd: Command, table: &[Flag], name: Names) {
        cmd.build();
        let mut clap = BTreeMap::new();
        for a in cmd.get_arguments().filter(|a| !a.is_positional()) {
            let kind = match a.get_num_args() {
                Some(r) if r.takes_values() && r.min_values() == 0 => HasArg::Optional,
                Some(r) if r.takes_values() => HasArg::Required,
                _ => HasArg::No,
            };
            let shorts = a.get_short().into_iter();
            for s in shorts.chain(a.get_all_short_aliases().unwrap_or_default()) {
                assert!(clap.insert(format!("-{s}"), kind).is_none(), "-{s} twice");
            }
            for l in a
                .get_long()
                .into_iter()
                .chain(a.get_all_aliases().unwrap_or_default())
            {
                assert!(clap.insert(format!("--{l}"), kind).is_none(), "--{l} twice");
            }
        }
        let mut getopt_names = BTreeMap::new();
        for (c, kind) in parse_short_spec(&short_spec(table, name)) {
            let k = format!("-{}", char::from(c));
            assert!(
                getopt_names.insert(k, kind).is_none(),
                "-{} twice",
                char::from(c)
            );
        }
        for o in long_opts(table, name) {
            let k = format!("--{}", o.name);
            assert!(
                getopt_names.insert(k, o.has_arg).is_none(),
                "--{} twice",
                o.name
            );
        }
        assert_eq!(clap, getopt_names, "{}", cmd.get_name());
        // And the parser really takes each so: alone, and with an attached argument.
        for (word, kind) in &clap {
            let parsed = getopt(&[OsString::from(word)], table, name);
            let ok = match kind {
                HasArg::Required => {
                    matches!(&parsed[..], [Parsed::Error(m)] if m.contains("requires an argument"))
                }
                _ => matches!(&parsed[..], [Parsed::Opt { arg: None, .. }]),
            };
            assert!(ok, "{} {word}: {parsed:?}", cmd.get_name());
            let attached = if word.starts_with("--") {
                format!("{word}=1")
            } else {
                format!("{word}1")
            };
            let parsed = getopt(&[OsString::from(&attached)], table, name);
            let ok = match kind {
                HasArg::No if word.starts_with("--") => {
                    matches!(&parsed[..], [Parsed::Error(m)] if m.contains("doesn't allow"))
                }
                // "-v1": -v, then -1, which no tool has.
                HasArg::No => matches!(
                    &parsed[..],
                    [Parsed::Opt { arg: None, .. }, Parsed::Error(_)]
                ),
                _ => matches!(&parsed[..], [Parsed::Opt { arg: Some(a), .. }] if a == "1"),
            };
            assert!(ok, "{} {attached}: {parsed:?}", cmd.get_name());
        }
    }

    /// The message for `word` (an abbreviation) alone on the command line of `name`.
    pub(crate) fn message(table: &[Flag], name: Names, word: &str) -> String {
        match &getopt(&[OsString::from(word)], table, name)[..] {
            [Parsed::Error(m)] => m.clone(),
            other => panic!("{word}: {other:?}"),
        }
    }

    /// Checks that every row of a table that follows mtd-utils' long-option order has its
    /// place in it ([`Flag::rank`]), and that no two rows of one name share a place.
    pub(crate) fn check_ranks(table: &[Flag], names: &[Names]) {
        for &name in names {
            let mut seen = BTreeSet::new();
            for f in rows(table, name).filter(|f| !f.long.is_empty()) {
                assert!(
                    f.rank != 0 && seen.insert(f.rank),
                    "{}: rank {}",
                    f.key,
                    f.rank
                );
            }
        }
    }

    /// Checks that a table whose `--help` text is `generated` by [`help_lines`] has no
    /// [`Help::Verbatim`] row (it would be missing from the text), and that a table with a
    /// verbatim text has no [`Help::Line`] or [`Help::Prose`] row (nothing would print it).
    pub(crate) fn check_help_kinds(table: &[Flag], generated: bool) {
        for f in table {
            let ok = match f.help {
                Help::Verbatim => !generated,
                Help::Line(_) | Help::Prose => generated,
                Help::Unlisted => true,
            };
            assert!(
                ok,
                "{}: {:?} in a {} text",
                f.key,
                f.help,
                if generated { "generated" } else { "verbatim" }
            );
        }
    }

    /// Checks what every table must satisfy: rows have keys, names, ids and documentation.
    pub(crate) fn check_table(table: &[Flag]) {
        for f in table {
            assert!(!f.key.is_empty() && !f.doc.is_empty(), "{f:?}");
            assert!(f.short != 0 || !f.long.is_empty(), "{}: no name", f.key);
            assert!(f.primary < f.long.len().max(1), "{}", f.key);
            assert!(f.id() != 0, "{}: no id", f.key);
        }
    }

    #[test]
    fn help_lines_layout() {
        const S: Section = Section {
            title: "Two:",
            heading: None,
        };
        let table = [
            Flag {
                key: "pad",
                short: b'p',
                long: &["pad"],
                takes: Takes::Optional("SIZE", Values::Any),
                help: Help::Line("Pad\nto SIZE"),
                doc: "d",
                ..BASE
            },
            Flag {
                key: "long-option-name",
                long: &["long-option-name"],
                id: 1000,
                takes: Takes::Required("VALUE", Values::Any),
                help: Help::Line("Same line"),
                doc: "d",
                ..BASE
            },
            Flag {
                key: "x",
                short: b'x',
                help: Help::Line("\nUnder"),
                doc: "d",
                section: S,
                ..BASE
            },
            Flag {
                key: "y",
                short: b'y',
                long: &["yes"],
                help: Help::Line(""),
                doc: "d",
                section: S,
                ..BASE
            },
        ];
        assert_eq!(
            help_lines(&table, ALL, 20),
            "Options:
  -p, --pad[=SIZE]  Pad
                    to SIZE
      --long-option-name=VALUE  Same line

Two:
  -x
                    Under
  -y, --yes
"
        );
        assert_eq!(short_spec(&table, ALL), "p::xy");
        check_table(&table);
        check_text(&table, ALL, &help_lines(&table, ALL, 20), &[]);
    }

    /// A one-row table for the drift checks.
    const ONE: &[Flag] = &[Flag {
        key: "pad",
        short: b'p',
        long: &["pad"],
        doc: "d",
        ..BASE
    }];

    #[test]
    #[should_panic(expected = "pad is not in the text")]
    fn a_text_without_an_option_is_caught() {
        check_text(
            ONE,
            ALL,
            "Usage: x\n  -v, --verbose  more\n",
            &["-v", "--verbose"],
        );
    }

    #[test]
    #[should_panic(expected = "not in the table")]
    fn a_text_with_another_option_is_caught() {
        check_text(ONE, ALL, "Usage: x\n  -p, --pad\n  -q, --quiet\n", &[]);
    }
}
