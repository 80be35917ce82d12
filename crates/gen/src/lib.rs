//! The build step that turns the command descriptions of `jffs2_tools::cli::describe` into
//! manual pages (`clap_mangen`, plus EXIT STATUS, ENVIRONMENT, COMPATIBILITY and SEE ALSO
//! sections rendered here) and bash, zsh and fish completions (`clap_complete`), for every
//! name the binaries answer to. Run by `scripts/install.sh`; not installed itself.

use std::io;
use std::path::{Path, PathBuf};

use clap_complete::Shell;
use clap_mangen::roff::{bold, roman, Roff};
use clap_mangen::Man;
use jffs2_tools::cli::describe::{Personality, PERSONALITIES};

/// The shells completions are written for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// What to generate.
#[derive(Debug, Clone)]
pub struct Options {
    /// Also the mtd-utils names (`mkfs.jffs2`, `sumtool`, `jffs2dump`, `jffs2reader`),
    /// `fsck.jffs2` and `jefferson`.
    pub mtd_names: bool,
    /// The date on the pages (`YYYY-MM-DD`); today when not given.
    pub date: Option<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            mtd_names: true,
            date: None,
        }
    }
}

/// The personalities selected by `opts`.
pub fn selected(opts: &Options) -> impl Iterator<Item = &'static Personality> + '_ {
    PERSONALITIES
        .iter()
        .filter(|p| opts.mtd_names || !p.is_link())
}

/// The preamble `roff` writes before every piece (a string for apostrophes); kept once.
const APOSTROPHE_PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// Today's date, `YYYY-MM-DD` (UTC).
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    date_of(secs)
}

/// The manual page of `p` (roff source), dated `date` (today when `None`).
pub fn man_page(p: &Personality, date: Option<&str>) -> io::Result<Vec<u8>> {
    let date = date.map_or_else(today, str::to_string);
    let cmd = (p.command)();
    let manual = if p.section == "8" {
        "System Administration"
    } else {
        "User Commands"
    };
    let man = Man::new(cmd)
        .title(p.name.to_uppercase())
        .section(p.section)
        .date(date)
        .source(format!("jffs2-tools {}", env!("CARGO_PKG_VERSION")))
        .manual(manual);
    let mut pieces: Vec<Vec<u8>> = Vec::new();
    let mut piece = |f: &dyn Fn(&mut Vec<u8>) -> io::Result<()>| -> io::Result<()> {
        let mut b = Vec::new();
        f(&mut b)?;
        pieces.push(b);
        Ok(())
    };
    piece(&|w| man.render_title(w))?;
    piece(&|w| man.render_name_section(w))?;
    piece(&|w| man.render_synopsis_section(w))?;
    piece(&|w| man.render_description_section(w))?;
    piece(&|w| man.render_options_section(w))?;
    piece(&|w| extra_sections(p).to_writer(w))?;
    let mut out = Vec::new();
    for (i, b) in pieces.iter().enumerate() {
        let body = match b.strip_prefix(APOSTROPHE_PREAMBLE.as_bytes()) {
            Some(rest) if i > 0 => rest,
            _ => b.as_slice(),
        };
        out.extend_from_slice(body);
    }
    Ok(out)
}

/// Paragraphs of plain text: lines joined, a blank line starts a new paragraph.
fn paragraphs(roff: &mut Roff, text: &str) {
    for (i, para) in text.split("\n\n").enumerate() {
        if i > 0 {
            roff.control("PP", []);
        }
        let joined = para.split_whitespace().collect::<Vec<_>>().join(" ");
        roff.text([roman(joined)]);
    }
}

/// EXIT STATUS, ENVIRONMENT, COMPATIBILITY and SEE ALSO.
fn extra_sections(p: &Personality) -> Roff {
    let mut roff = Roff::new();
    roff.control("SH", ["EXIT STATUS"]);
    let exit = p.exit_status();
    // The help text's paragraph, its "Exit status:" lead-in dropped.
    let exit = exit.strip_prefix("Exit status:").unwrap_or(&exit).trim();
    let mut first = true;
    for line in exit.lines() {
        // Each further "Exit status ..." line of the help starts a paragraph.
        if line.starts_with("Exit status") && !first {
            roff.control("PP", []);
        }
        first = false;
        roff.text([roman(line.trim())]);
    }

    if !p.environment.is_empty() {
        roff.control("SH", ["ENVIRONMENT"]);
        for (name, what) in p.environment {
            roff.control("TP", []);
            roff.text([bold(*name)]);
            roff.text([roman(*what)]);
        }
    }

    roff.control("SH", ["COMPATIBILITY"]);
    paragraphs(&mut roff, p.compatibility);

    roff.control("SH", ["SEE ALSO"]);
    let mut line = Vec::new();
    for (i, page) in p.see_also.iter().enumerate() {
        if i > 0 {
            line.push(roman(", "));
        }
        match page.split_once('(') {
            Some((name, rest)) => {
                line.push(bold(name));
                line.push(roman(format!("({rest}")));
            }
            None => line.push(bold(*page)),
        }
    }
    roff.text(line);
    roff
}

/// The completion script of `p` for `shell`.
pub fn completion(p: &Personality, shell: Shell) -> Vec<u8> {
    let mut cmd = (p.command)();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, p.name, &mut out);
    out
}

/// Where a completion goes under `completions/`: the names bash-completion, zsh's
/// `fpath` and fish look up.
pub fn completion_path(p: &Personality, shell: Shell) -> PathBuf {
    match shell {
        Shell::Zsh => PathBuf::from("zsh").join(format!("_{}", p.name)),
        Shell::Fish => PathBuf::from("fish").join(format!("{}.fish", p.name)),
        _ => PathBuf::from("bash").join(p.name),
    }
}

/// Where a manual page goes under `man/`.
pub fn man_path(p: &Personality) -> PathBuf {
    PathBuf::from(format!("man{}", p.section)).join(format!("{}.{}", p.name, p.section))
}

/// Writes `out/man/manN/NAME.N` and `out/completions/{bash,zsh,fish}/...` for every selected
/// name; returns the files written.
pub fn generate(out: &Path, opts: &Options) -> io::Result<Vec<PathBuf>> {
    let mut written = Vec::new();
    let mut write = |path: PathBuf, bytes: &[u8]| -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, bytes)?;
        written.push(path);
        Ok(())
    };
    for p in selected(opts) {
        write(
            out.join("man").join(man_path(p)),
            &man_page(p, opts.date.as_deref())?,
        )?;
        for shell in SHELLS {
            write(
                out.join("completions").join(completion_path(p, shell)),
                &completion(p, shell),
            )?;
        }
    }
    Ok(written)
}

/// `YYYY-MM-DD` of a Unix time (UTC), for `SOURCE_DATE_EPOCH`.
pub fn date_of(secs: u64) -> String {
    // Howard Hinnant's civil_from_days.
    let z = (secs / 86_400) as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(name: &str) -> String {
        let p = jffs2_tools::cli::describe::personality(name).expect("a personality");
        String::from_utf8(man_page(p, Some("2024-01-02")).expect("rendered")).expect("UTF-8")
    }

    #[test]
    fn pages_have_every_section_and_option() {
        for p in PERSONALITIES {
            let s = page(p.name);
            assert_eq!(s.matches(".ds Aq").count(), 2, "{}: one preamble", p.name);
            assert!(s.contains(&format!(
                ".TH {} {} 2024-01-02",
                p.name.to_uppercase(),
                p.section
            )));
            for section in [
                ".SH NAME",
                ".SH SYNOPSIS",
                ".SH DESCRIPTION",
                ".SH OPTIONS",
                ".SH \"EXIT STATUS\"",
                ".SH COMPATIBILITY",
                ".SH \"SEE ALSO\"",
            ] {
                assert!(s.contains(section), "{}: no {section}", p.name);
            }
            for o in p.long() {
                // roff escapes '-' as "\-".
                let escaped = format!("\\-\\-{}", o.name.replace('-', "\\-"));
                assert!(s.contains(&escaped), "{}: --{} missing", p.name, o.name);
            }
        }
        assert!(page("jffs2-mkfs").contains("SOURCE_DATE_EPOCH"));
        assert!(page("fsck.jffs2").contains("16 usage error"));
    }

    #[test]
    fn completions_name_their_command() {
        for p in PERSONALITIES {
            let bash = String::from_utf8(completion(p, Shell::Bash)).expect("UTF-8");
            assert!(bash.contains(&format!("complete -F _{} ", p.name.replace('-', "__"))));
            let zsh = String::from_utf8(completion(p, Shell::Zsh)).expect("UTF-8");
            assert!(zsh.starts_with(&format!("#compdef {}\n", p.name)));
            let fish = String::from_utf8(completion(p, Shell::Fish)).expect("UTF-8");
            assert!(fish.contains(&format!("complete -c {} ", p.name)));
        }
    }

    #[test]
    fn dates() {
        assert_eq!(date_of(0), "1970-01-01");
        assert_eq!(date_of(951_782_400), "2000-02-29");
        assert_eq!(date_of(1_704_153_600), "2024-01-02");
    }
}
