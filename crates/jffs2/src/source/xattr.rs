//! Reading extended attributes the way mkfs.jffs2 does (`write_xattr_entry`,
//! `docs/spec/mtd-utils-spec.md` §3.5.7) and converting POSIX ACLs to the JFFS2 format.

use std::path::Path;

use super::sys;
use super::{SourceError, SourceWarning, SourceXattr, XattrSelect};

/// mkfs' prefix table, in its order (first match wins).
const PREFIXES: [(u8, &[u8]); 5] = [
    (SourceXattr::PREFIX_USER, b"user."),
    (SourceXattr::PREFIX_SECURITY, b"security."),
    (SourceXattr::PREFIX_ACL_ACCESS, b"system.posix_acl_access"),
    (SourceXattr::PREFIX_ACL_DEFAULT, b"system.posix_acl_default"),
    (SourceXattr::PREFIX_TRUSTED, b"trusted."),
];

/// Matches one listed name against the prefix table. Returns the prefix number and the
/// prefix length.
///
/// Quirk (§3.5.7): for prefixes ending in '.', mkfs compares only the first `len - 1`
/// characters (`strncmp(name, "user.", 4)`), so "user" and "userfoo" match "user." too;
/// the ACL names must match exactly.
fn match_prefix(name: &[u8]) -> Option<(u8, usize)> {
    PREFIXES.iter().find_map(|&(num, p)| {
        let hit = if p.last() == Some(&b'.') {
            name.starts_with(&p[..p.len() - 1])
        } else {
            name == p
        };
        hit.then_some((num, p.len()))
    })
}

/// Reads the selected xattrs of `host_path` in `llistxattr` order.
///
/// Problems are never fatal, as in mkfs: a failing `llistxattr`/`lgetxattr` skips the
/// file/attribute, an unknown prefix is skipped, and each is reported (as a
/// [`super::SourceWarningKind::Verbose`] warning in mkfs' wording, naming the path as `shown`,
/// i.e. as mkfs built it) only when `verbose` is set.
pub(crate) fn read_xattrs(
    host_path: &Path,
    shown: &Path,
    select: XattrSelect,
    verbose: bool,
    warnings: &mut Vec<SourceWarning>,
) -> Vec<SourceXattr> {
    let mut out = Vec::new();
    if select.is_empty() {
        return out;
    }
    let shown = crate::text::path(shown);
    let cpath = match sys::cpath(host_path) {
        Ok(c) => c,
        Err(e) => {
            if verbose {
                warnings.push(SourceWarning::verbose(format!(
                    "llistxattr('{shown}') = {} : {}",
                    libc::EINVAL,
                    sys::strerror(&e)
                )));
            }
            return out;
        }
    };
    let list = match sys::llistxattr(&cpath) {
        Ok(l) => l,
        Err(e) => {
            if verbose {
                // mkfs prints errno, not the return value.
                warnings.push(SourceWarning::verbose(format!(
                    "llistxattr('{shown}') = {} : {}",
                    e.raw_os_error().unwrap_or(0),
                    sys::strerror(&e)
                )));
            }
            return out;
        }
    };

    let mut offset = 0;
    while offset < list.len() {
        let rest = &list[offset..];
        let name_end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        let xname = &rest[..name_end];
        let this_offset = offset;
        offset += name_end + 1;

        let Some((prefix, prefix_len)) = match_prefix(xname) else {
            if verbose {
                warnings.push(SourceWarning::verbose(format!(
                    "{shown}: xattr '{}' is not supported.",
                    sys::lossy(xname)
                )));
            }
            continue;
        };
        if !select.selects_prefix(prefix) {
            continue;
        }
        let value = match sys::lgetxattr(&cpath, xname) {
            Ok(v) => v,
            Err(e) => {
                if verbose {
                    warnings.push(SourceWarning::verbose(format!(
                        "lgetxattr('{shown}', '{}') = {} : {}",
                        sys::lossy(xname),
                        e.raw_os_error().unwrap_or(0),
                        sys::strerror(&e)
                    )));
                }
                continue;
            }
        };
        // mkfs stores `xname + prefix_len`, a pointer into the list buffer: for the ACLs
        // this is the empty string; for a name shorter than its prefix (the len-1 quirk)
        // it would run into the next list entry, which we reproduce within the list.
        let start = (this_offset + prefix_len).min(list.len());
        let tail = &list[start..];
        let end = tail.iter().position(|&b| b == 0).unwrap_or(tail.len());
        out.push(SourceXattr {
            prefix,
            name: tail[..end].to_vec(),
            value,
        });
    }
    out
}

// The ACL layout and its conversions are described once, in format (`docs/spec/mtd-utils-spec.md` §3.5.7).
use crate::format::acl::{self, AclError};
use crate::format::Endian;

/// Converts a POSIX ACL xattr value from the Linux format to the JFFS2 on-flash format in the
/// target endianness ([`acl::from_xattr`], `formalize_posix_acl`,
/// `docs/spec/mtd-utils-spec.md` §3.5.7), with mkfs.jffs2's errors:
/// an unknown tag ([`SourceError::AclUnknownTag`], mkfs exits 1 with that message), a value
/// shorter than the 4-byte header ([`SourceError::AclTooShort`], ditto), and a value that is
/// not a header plus whole entries ([`SourceError::AclMalformed`]; mkfs would read garbage
/// past the value).
pub fn acl_to_jffs2(value: &[u8], big_endian: bool) -> Result<Vec<u8>, SourceError> {
    let e = if big_endian {
        Endian::Big
    } else {
        Endian::Little
    };
    acl::from_xattr(value, e).map_err(|err| match err {
        AclError::UnknownTag { tag } => SourceError::AclUnknownTag { tag },
        AclError::LongerThanHost {
            jffs2_len,
            value_len,
        } => SourceError::AclTooShort {
            jffs2_len,
            value_len,
        },
        _ => SourceError::AclMalformed { len: value.len() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn prefix_matching_quirk() {
        assert_eq!(match_prefix(b"user.foo"), Some((1, 5)));
        // Only len-1 characters are compared for "xxx." prefixes.
        assert_eq!(match_prefix(b"user"), Some((1, 5)));
        assert_eq!(match_prefix(b"userfoo"), Some((1, 5)));
        assert_eq!(match_prefix(b"security.selinux"), Some((2, 9)));
        assert_eq!(match_prefix(b"security.capability"), Some((2, 9)));
        assert_eq!(match_prefix(b"system.posix_acl_access"), Some((3, 23)));
        assert_eq!(match_prefix(b"system.posix_acl_default"), Some((4, 24)));
        assert_eq!(match_prefix(b"system.posix_acl_accessX"), None);
        assert_eq!(match_prefix(b"trusted.overlay.opaque"), Some((5, 8)));
        assert_eq!(match_prefix(b"system.nfs4_acl"), None);
        assert_eq!(match_prefix(b"use"), None);
    }

    #[test]
    fn acl_access_conversion() {
        // getfattr -e hex of `setfacl -m u:1000:rw f` on a 0644 file.
        let host = hex("0200000001000600ffffffff02000600e803000004000400ffffffff10000600ffffffff20000400ffffffff");
        let le = acl_to_jffs2(&host, false).unwrap();
        assert_eq!(
            le,
            hex(concat!(
                "01000000",         // version 1
                "01000600",         // USER_OBJ rw
                "02000600e8030000", // USER 1000 rw
                "04000400",         // GROUP_OBJ r
                "10000600",         // MASK rw
                "20000400",         // OTHER r
            ))
        );
        let be = acl_to_jffs2(&host, true).unwrap();
        assert_eq!(
            be,
            hex(concat!(
                "00000001",         // version 1
                "00010006",         // USER_OBJ rw
                "00020006000003e8", // USER 1000 rw
                "00040004",         // GROUP_OBJ r
                "00100006",         // MASK rw
                "00200004",         // OTHER r
            ))
        );
    }

    #[test]
    fn acl_errors() {
        assert!(matches!(
            acl_to_jffs2(&[], false),
            Err(SourceError::AclTooShort {
                jffs2_len: 4,
                value_len: 0
            })
        ));
        assert!(matches!(
            acl_to_jffs2(&[2, 0], false),
            Err(SourceError::AclTooShort {
                jffs2_len: 4,
                value_len: 2
            })
        ));
        // Header only: an empty ACL converts to the bare JFFS2 header.
        assert_eq!(acl_to_jffs2(&[2, 0, 0, 0], true).unwrap(), vec![0, 0, 0, 1]);
        let bad = hex("020000004000060000000000");
        let err = acl_to_jffs2(&bad, false).unwrap_err();
        assert_eq!(err.to_string(), "0040 : Unknown XATTR entry tag.");
        let short = hex("0200000001000600ffff");
        assert!(matches!(
            acl_to_jffs2(&short, false),
            Err(SourceError::AclMalformed { len: 10 })
        ));
        assert_eq!(
            acl_to_jffs2(&[], false).unwrap_err().to_string(),
            "Length of JFFS2 ACL expression(4) is longer than general one(0)."
        );
    }

    fn run(cmd: &mut Command) {
        let out = cmd.output().expect("spawn");
        assert!(
            out.status.success(),
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    #[test]
    fn reads_selected_xattrs_in_list_order() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("f");
        std::fs::write(&f, b"x").unwrap();
        run(Command::new("setfattr")
            .args(["-n", "user.b", "-v", "2"])
            .arg(&f));
        run(Command::new("setfattr")
            .args(["-n", "user.a", "-v", "1"])
            .arg(&f));
        run(Command::new("setfattr")
            .args(["-n", "trusted.t", "-v", "tv"])
            .arg(&f));
        run(Command::new("setfattr")
            .args(["-n", "security.s", "-v", "sv"])
            .arg(&f));
        run(Command::new("setfacl").args(["-m", "u:1000:rw"]).arg(&f));

        let list = sys::llistxattr(&sys::cpath(&f).unwrap()).unwrap();
        let listed: Vec<&[u8]> = list.split(|&b| b == 0).filter(|n| !n.is_empty()).collect();

        let mut w = Vec::new();
        let all = read_xattrs(&f, &f, XattrSelect::ALL, true, &mut w);
        assert!(w.is_empty(), "{w:?}");
        // Same order as llistxattr.
        let expected_order: Vec<(u8, Vec<u8>)> = listed
            .iter()
            .map(|n| {
                let (p, l) = match_prefix(n).unwrap();
                (p, n[l..].to_vec())
            })
            .collect();
        let got: Vec<(u8, Vec<u8>)> = all.iter().map(|x| (x.prefix, x.name.clone())).collect();
        assert_eq!(got, expected_order);
        let find = |p: u8, n: &[u8]| all.iter().find(|x| x.prefix == p && x.name == n).unwrap();
        assert_eq!(find(1, b"a").value, b"1");
        assert_eq!(find(1, b"b").value, b"2");
        assert_eq!(find(5, b"t").value, b"tv");
        assert_eq!(find(2, b"s").value, b"sv");
        let acl = find(3, b"");
        assert!(acl.is_posix_acl());
        assert_eq!(acl.value.len(), 4 + 5 * 8);

        let mut w = Vec::new();
        let user = read_xattrs(&f, &f, XattrSelect::USER, false, &mut w);
        assert!(user.iter().all(|x| x.prefix == 1) && user.len() == 2);
        let acl_only = read_xattrs(&f, &f, XattrSelect::POSIX_ACL, false, &mut w);
        assert_eq!(acl_only.len(), 1);
        assert_eq!(acl_only[0].prefix, 3);
        let sec = read_xattrs(
            &f,
            &f,
            XattrSelect::SECURITY | XattrSelect::TRUSTED,
            false,
            &mut w,
        );
        assert_eq!(sec.len(), 2);
        assert!(read_xattrs(&f, &f, XattrSelect::NONE, true, &mut w).is_empty());
        assert!(w.is_empty());
    }

    #[test]
    fn default_acl_on_directory_and_symlink_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().join("d");
        std::fs::create_dir(&d).unwrap();
        run(Command::new("setfacl")
            .args(["-d", "-m", "g:100:r"])
            .arg(&d));
        let mut w = Vec::new();
        let x = read_xattrs(&d, &d, XattrSelect::POSIX_ACL, false, &mut w);
        assert_eq!(x.len(), 1);
        assert_eq!(x[0].prefix, SourceXattr::PREFIX_ACL_DEFAULT);
        assert_eq!(x[0].name, b"");
        let conv = acl_to_jffs2(&x[0].value, false).unwrap();
        assert_eq!(&conv[..4], &[1, 0, 0, 0]);

        // A symlink's own (absent) xattrs are read, not its target's.
        let f = dir.path().join("f");
        std::fs::write(&f, b"").unwrap();
        run(Command::new("setfattr")
            .args(["-n", "user.x", "-v", "1"])
            .arg(&f));
        let l = dir.path().join("l");
        std::os::unix::fs::symlink("f", &l).unwrap();
        assert!(read_xattrs(&l, &l, XattrSelect::ALL, true, &mut w).is_empty());
        assert!(w.is_empty(), "{w:?}");
    }

    #[test]
    fn missing_path_reports_only_when_verbose() {
        let mut w = Vec::new();
        let p = Path::new("/nonexistent/x");
        assert!(read_xattrs(p, p, XattrSelect::ALL, false, &mut w).is_empty());
        assert!(w.is_empty());
        assert!(read_xattrs(p, p, XattrSelect::ALL, true, &mut w).is_empty());
        assert_eq!(w.len(), 1);
        assert_eq!(
            w[0].message,
            "llistxattr('/nonexistent/x') = 2 : No such file or directory"
        );
        assert_eq!(w[0].kind, super::super::SourceWarningKind::Verbose);
    }
}
