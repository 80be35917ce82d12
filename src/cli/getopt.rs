//! A GNU `getopt_long` work-alike.
//!
//! The drop-in tools must accept exactly what mtd-utils accepts, and mtd-utils parses with
//! glibc's `getopt_long`: options and operands may be mixed (permutation), long options may
//! be abbreviated to any unambiguous prefix, an *optional* argument is taken only when
//! attached (`-p0x1000`, `--pad=0x1000`; `-p 0x1000` leaves `0x1000` as an operand,
//! `docs/spec/mtd-utils-spec.md` §3.1), and options take effect in command-line order. clap cannot
//! express all of that, so the drop-ins parse with this instead.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};

/// Whether an option takes an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HasArg {
    /// No argument.
    No,
    /// A required argument (attached or the next word).
    Required,
    /// An optional argument (attached only).
    Optional,
}

/// A long option: its name, argument kind and the id reported for it.
#[derive(Debug, Clone, Copy)]
pub struct LongOpt {
    /// Name without the leading `--`.
    pub name: &'static str,
    /// Argument kind.
    pub has_arg: HasArg,
    /// The id [`Parsed::Opt`] carries (the short letter as `u32`, or any other number).
    pub id: u32,
}

/// One result of parsing, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parsed {
    /// An option and its argument.
    Opt {
        /// The option's id.
        id: u32,
        /// Its argument, if it has one.
        arg: Option<OsString>,
    },
    /// An operand (a word that is not an option).
    Operand(OsString),
    /// A usage error, with glibc's message (without the program name).
    Error(String),
}

/// Parses `args` (without the program name) against a getopt short-option string such
/// as `"ab:c::"` and the long options.
pub fn getopt_long(args: &[OsString], short: &str, long: &[LongOpt]) -> Vec<Parsed> {
    let shorts = parse_short_spec(short);
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let word = args[i].as_bytes();
        i += 1;
        if word == b"--" {
            out.extend(args[i..].iter().cloned().map(Parsed::Operand));
            break;
        }
        // The word after this one, which a required argument may take.
        let next = args.get(i);
        let took_next = if let Some(body) = word.strip_prefix(b"--") {
            long_option(body, next, long, &mut out)
        } else if word.len() > 1 && word[0] == b'-' {
            short_options(word, next, &shorts, &mut out)
        } else {
            out.push(Parsed::Operand(OsString::from_vec(word.to_vec())));
            false
        };
        if took_next {
            i += 1;
        }
    }
    out
}

/// One `--name[=arg]` word (`body` without the `--`); returns whether it took `next` as
/// its argument.
fn long_option(
    body: &[u8],
    next: Option<&OsString>,
    long: &[LongOpt],
    out: &mut Vec<Parsed>,
) -> bool {
    let (name, attached) = match body.iter().position(|&c| c == b'=') {
        Some(p) => (&body[..p], Some(&body[p + 1..])),
        None => (body, None),
    };
    let name_s = String::from_utf8_lossy(name);
    let opt = match find_long(long, name) {
        Ok(o) => o,
        Err(Some(cands)) => {
            let list: Vec<String> = cands.iter().map(|c| format!("'--{c}'")).collect();
            out.push(Parsed::Error(format!(
                "option '--{name_s}' is ambiguous; possibilities: {}",
                list.join(" ")
            )));
            return false;
        }
        Err(None) => {
            out.push(Parsed::Error(format!("unrecognized option '--{name_s}'")));
            return false;
        }
    };
    match (opt.has_arg, attached) {
        (HasArg::No, Some(_)) => out.push(Parsed::Error(format!(
            "option '--{}' doesn't allow an argument",
            opt.name
        ))),
        (HasArg::No, None) => out.push(Parsed::Opt {
            id: opt.id,
            arg: None,
        }),
        (_, Some(a)) => out.push(Parsed::Opt {
            id: opt.id,
            arg: Some(OsString::from_vec(a.to_vec())),
        }),
        (HasArg::Optional, None) => out.push(Parsed::Opt {
            id: opt.id,
            arg: None,
        }),
        (HasArg::Required, None) => match next {
            Some(a) => {
                out.push(Parsed::Opt {
                    id: opt.id,
                    arg: Some(a.clone()),
                });
                return true;
            }
            None => out.push(Parsed::Error(format!(
                "option '--{}' requires an argument",
                opt.name
            ))),
        },
    }
    false
}

/// One `-abc` word of short options; returns whether the last took `next` as its
/// argument.
fn short_options(
    word: &[u8],
    next: Option<&OsString>,
    shorts: &[(u8, HasArg)],
    out: &mut Vec<Parsed>,
) -> bool {
    let mut j = 1;
    while j < word.len() {
        let c = word[j];
        j += 1;
        let Some(&(_, has_arg)) = shorts.iter().find(|(s, _)| *s == c) else {
            out.push(Parsed::Error(format!(
                "invalid option -- '{}'",
                char::from(c)
            )));
            continue;
        };
        let id = u32::from(c);
        match has_arg {
            HasArg::No => out.push(Parsed::Opt { id, arg: None }),
            HasArg::Optional => {
                let arg = (j < word.len()).then(|| OsString::from_vec(word[j..].to_vec()));
                out.push(Parsed::Opt { id, arg });
                return false;
            }
            HasArg::Required => {
                if j < word.len() {
                    out.push(Parsed::Opt {
                        id,
                        arg: Some(OsString::from_vec(word[j..].to_vec())),
                    });
                } else if let Some(a) = next {
                    out.push(Parsed::Opt {
                        id,
                        arg: Some(a.clone()),
                    });
                    return true;
                } else {
                    out.push(Parsed::Error(format!(
                        "option requires an argument -- '{}'",
                        char::from(c)
                    )));
                }
                return false;
            }
        }
    }
    false
}

/// The letters of a getopt short-option string with their argument kinds.
pub(crate) fn parse_short_spec(spec: &str) -> Vec<(u8, HasArg)> {
    let b = spec.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        i += 1;
        let mut has = HasArg::No;
        if i < b.len() && b[i] == b':' {
            has = HasArg::Required;
            i += 1;
            if i < b.len() && b[i] == b':' {
                has = HasArg::Optional;
                i += 1;
            }
        }
        v.push((c, has));
    }
    v
}

/// Exact match first, then a unique prefix (or several prefixes that all name the same
/// option, as glibc allows). `Err(Some(names))` is ambiguous, `Err(None)` unknown.
fn find_long<'a>(long: &'a [LongOpt], name: &[u8]) -> Result<&'a LongOpt, Option<Vec<&'a str>>> {
    if let Some(o) = long.iter().find(|o| o.name.as_bytes() == name) {
        return Ok(o);
    }
    if name.is_empty() {
        return Err(None);
    }
    let cands: Vec<&LongOpt> = long
        .iter()
        .filter(|o| o.name.as_bytes().starts_with(name))
        .collect();
    match cands.as_slice() {
        [] => Err(None),
        [one] => Ok(one),
        [first, rest @ ..] => {
            if rest
                .iter()
                .all(|o| o.id == first.id && o.has_arg == first.has_arg)
            {
                Ok(first)
            } else {
                Err(Some(cands.iter().map(|o| o.name).collect()))
            }
        }
    }
}

/// Lossy text of an argument, for messages and number parsing.
pub fn text(a: &OsStr) -> String {
    a.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const LONG: &[LongOpt] = &[
        LongOpt {
            name: "pad",
            has_arg: HasArg::Optional,
            id: b'p' as u32,
        },
        LongOpt {
            name: "pagesize",
            has_arg: HasArg::Required,
            id: b's' as u32,
        },
        LongOpt {
            name: "verbose",
            has_arg: HasArg::No,
            id: b'v' as u32,
        },
    ];

    fn run(v: &[&str]) -> Vec<Parsed> {
        let args: Vec<OsString> = v.iter().map(OsString::from).collect();
        getopt_long(&args, "s:vp::e:", LONG)
    }

    fn opt(c: char, a: Option<&str>) -> Parsed {
        Parsed::Opt {
            id: c as u32,
            arg: a.map(OsString::from),
        }
    }

    #[test]
    fn optional_argument_only_when_attached() {
        assert_eq!(
            run(&["-p", "0x40000"]),
            vec![opt('p', None), Parsed::Operand("0x40000".into())]
        );
        assert_eq!(run(&["-p0x40000"]), vec![opt('p', Some("0x40000"))]);
        assert_eq!(run(&["--pad=4096"]), vec![opt('p', Some("4096"))]);
        assert_eq!(
            run(&["--pad", "4096"]),
            vec![opt('p', None), Parsed::Operand("4096".into())]
        );
    }

    #[test]
    fn clusters_prefixes_and_permutation() {
        assert_eq!(
            run(&["x", "-vs4096", "y", "-e", "64"]),
            vec![
                Parsed::Operand("x".into()),
                opt('v', None),
                opt('s', Some("4096")),
                Parsed::Operand("y".into()),
                opt('e', Some("64"))
            ]
        );
        assert_eq!(run(&["--verb"]), vec![opt('v', None)]);
        assert_eq!(run(&["--pages", "2048"]), vec![opt('s', Some("2048"))]);
        assert!(matches!(&run(&["--pa"])[0], Parsed::Error(m) if m.contains("ambiguous")));
        assert!(
            matches!(&run(&["--nope"])[0], Parsed::Error(m) if m == "unrecognized option '--nope'")
        );
        assert!(matches!(&run(&["-k"])[0], Parsed::Error(m) if m == "invalid option -- 'k'"));
        assert!(
            matches!(&run(&["-e"])[0], Parsed::Error(m) if m == "option requires an argument -- 'e'")
        );
        assert!(
            matches!(&run(&["--verbose=1"])[0], Parsed::Error(m) if m.contains("doesn't allow"))
        );
        assert_eq!(run(&["--", "-v"]), vec![Parsed::Operand("-v".into())]);
        assert_eq!(run(&["-"]), vec![Parsed::Operand("-".into())]);
    }
}
