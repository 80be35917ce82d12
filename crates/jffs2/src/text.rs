//! Names and paths as text for people: every tool's human-readable output (listings,
//! warnings, refusals, findings) shows a name through this module, so that a name from an
//! image or a host tree cannot drive the terminal (colour and cursor escapes, carriage
//! returns, bidirectional overrides that reorder what is shown).
//!
//! The escapes are C-style and of bytes: `\n`, `\t`, `\r`, `\\`, and `\xNN` for every other
//! byte of a character that needs it and for bytes that are not UTF-8 (`\x1b` for ESC,
//! `\xe2\x80\xae` for U+202E). Machine-readable output (JSON) keeps the real names, and so
//! does text that must equal mtd-utils' byte for byte (`jffs2dump -c`).

use std::borrow::Cow;
use std::fmt::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// `part` as a percentage of `whole` with one decimal (`0%` of nothing): how every tool prints a
/// share, so that the same share reads the same in each.
pub fn percent(part: u64, whole: u64) -> String {
    if whole == 0 {
        "0%".to_string()
    } else {
        format!("{:.1}%", part as f64 * 100.0 / whole as f64)
    }
}

/// Whether `c` must not reach a terminal as it is: C0 controls (tab and newline included),
/// DEL, C1 controls, the bidirectional marks, embeddings, overrides and isolates (U+061C,
/// U+200E, U+200F, U+202A–U+202E, U+2066–U+2069), and the line and paragraph separators
/// (U+2028, U+2029).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// Appends the escape of `c`: `\n`, `\t`, `\r`, else `\xNN` for each of its UTF-8 bytes.
fn push_escaped(s: &mut String, c: char) {
    match c {
        '\n' => s.push_str("\\n"),
        '\t' => s.push_str("\\t"),
        '\r' => s.push_str("\\r"),
        c => {
            let mut buf = [0u8; 4];
            for byte in c.encode_utf8(&mut buf).bytes() {
                let _ = write!(s, "\\x{byte:02x}");
            }
        }
    }
}

/// A path (or name) as text: valid UTF-8 is kept, what [`needs_escape`] selects, backslashes
/// and invalid bytes are escaped C-style (`\n`, `\\`, `\xNN`); with `name`, a `/` inside it is
/// escaped too (`\x2f`), so that a hostile name cannot pass for a path. Always unambiguous
/// (backslashes are doubled): for our own formats (`--list`, refusals).
pub fn escape(b: &[u8], name: bool) -> String {
    let mut s = String::with_capacity(b.len());
    for chunk in b.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => s.push_str("\\\\"),
                '/' if name => s.push_str("\\x2f"),
                c if needs_escape(c) => push_escaped(&mut s, c),
                c => s.push(c),
            }
        }
        for byte in chunk.invalid() {
            let _ = write!(s, "\\x{byte:02x}");
        }
    }
    s
}

/// Whether [`escape_if_needed`] would escape `b`: it is not UTF-8, or holds a character
/// [`needs_escape`] selects.
pub fn is_unsafe(b: &[u8]) -> bool {
    match std::str::from_utf8(b) {
        Ok(s) => s.chars().any(needs_escape),
        Err(_) => true,
    }
}

/// `b` as it is when it is UTF-8 without anything [`needs_escape`] selects (so ordinary
/// names print exactly as mtd-utils prints them, backslashes included), else [`escape`]d in
/// full. For text that mirrors mtd-utils' (mkfs.jffs2's messages and `-v` listing, sumtool's
/// `-v`) and for messages naming host paths.
pub fn escape_if_needed(b: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(b) {
        Ok(s) if !s.chars().any(needs_escape) => Cow::Borrowed(s),
        _ => Cow::Owned(escape(b, false)),
    }
}

/// A host path as text, by [`escape_if_needed`].
pub fn path(p: &Path) -> Cow<'_, str> {
    escape_if_needed(p.as_os_str().as_bytes())
}

/// A message that may quote names: its characters that [`needs_escape`] selects are
/// escaped, except newline and tab (a message may span lines); the rest is kept as it is.
/// A last line of defence where messages are printed; names should already be escaped.
pub fn message(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| needs_escape(c) && c != '\n' && c != '\t') {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) && c != '\n' && c != '\t' {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Days since 1970-01-01 to (year, month, day) in the proleptic Gregorian calendar.
pub(crate) fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A timestamp as `YYYY-MM-DD HH:MM:SS` (UTC).
pub fn format_time(t: u32) -> String {
    let t = i64::from(t);
    let (y, mo, d) = civil(t.div_euclid(86_400));
    let s = t.rem_euclid(86_400);
    format!(
        "{y:04}-{mo:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    )
}

/// A size as mkfs.jffs2's `-e` takes it: `64KiB`, `1MiB`, else `0x…` bytes.
pub fn erase_size_arg(v: u32) -> String {
    if v % (1 << 20) == 0 {
        format!("{}MiB", v >> 20)
    } else if v % 1024 == 0 {
        format!("{}KiB", v >> 10)
    } else {
        format!("0x{v:x}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape(b"plain", true), "plain");
        assert_eq!(escape("é".as_bytes(), true), "é");
        assert_eq!(escape(b"a/b", true), "a\\x2fb");
        assert_eq!(escape(b"a/b", false), "a/b");
        assert_eq!(escape(b"\xff\n\\", false), "\\xff\\n\\\\");
        assert_eq!(escape(b"\x7f", false), "\\x7f");
        assert_eq!(escape(b"\x1b[31mred\r\x08", false), "\\x1b[31mred\\r\\x08");
        assert_eq!(escape("\u{85}".as_bytes(), false), "\\xc2\\x85");
        for c in [
            '\u{202a}', '\u{202e}', '\u{2066}', '\u{2069}', '\u{200e}', '\u{200f}', '\u{061c}',
            '\u{2028}',
        ] {
            let s = escape(c.to_string().as_bytes(), false);
            assert!(s.starts_with("\\x") && s.is_ascii(), "{c:?}: {s}");
        }
        assert_eq!(escape("a\u{202e}b".as_bytes(), false), "a\\xe2\\x80\\xaeb");
    }

    #[test]
    fn escaping_only_when_needed() {
        // Ordinary names as they are, backslashes included (mtd-utils' text).
        assert_eq!(escape_if_needed(b"a\\b c/d\xc3\xa9"), "a\\b c/dé");
        assert!(matches!(escape_if_needed(b"x"), Cow::Borrowed(_)));
        // Otherwise in full: backslashes doubled, so the escapes are unambiguous.
        assert_eq!(escape_if_needed(b"a\\b\x1b"), "a\\\\b\\x1b");
        assert_eq!(escape_if_needed(b"\xff"), "\\xff");
        assert_eq!(escape_if_needed(b"tab\there"), "tab\\there");
        assert!(is_unsafe("\u{2067}".as_bytes()) && !is_unsafe(b"ok"));
        assert_eq!(path(Path::new("/a\rb")), "/a\\rb");
    }

    #[test]
    fn messages_keep_lines_and_escape_the_rest() {
        assert_eq!(message("one\n\ttwo"), "one\n\ttwo");
        assert_eq!(
            message("a\u{1b}[2Jb\u{202e}c\r"),
            "a\\x1b[2Jb\\xe2\\x80\\xaec\\r"
        );
    }
}
