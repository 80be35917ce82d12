//! POSIX ACL xattr values as JFFS2 stores them (`docs/spec/kernel-jffs2-spec.md` §1.8,
//! `docs/spec/mtd-utils-spec.md` §3.5.7): a 32-bit version ([`JFFS2_ACL_VERSION`]), then
//! entries of a 16-bit tag and 16-bit permissions, followed by a 32-bit id for the named user
//! and group tags — all in the filesystem's byte order. The host (`getxattr`) form is
//! little-endian, version [`POSIX_ACL_XATTR_VERSION`], 8 bytes per entry.
//!
//! The constants are the one description of the layout, and the three conversions built on it
//! are here with one error type ([`AclError`]): host form to flash ([`from_xattr`], for mkfs:
//! `source::acl_to_jffs2` gives its errors mkfs.jffs2's messages), flash to host form
//! ([`to_xattr`], for reading: `fs::acl_to_xattr`), and flash to flash in the other byte order
//! ([`swap_acl`], for the endianness conversions; it stops where reading back would stop, so
//! it has no error).

use super::Endian;

/// Tag: the owner's permissions (`ACL_USER_OBJ`), a short entry.
pub const ACL_USER_OBJ: u16 = 0x01;
/// Tag: a named user's permissions (`ACL_USER`), a long entry (with an id).
pub const ACL_USER: u16 = 0x02;
/// Tag: the owning group's permissions (`ACL_GROUP_OBJ`), a short entry.
pub const ACL_GROUP_OBJ: u16 = 0x04;
/// Tag: a named group's permissions (`ACL_GROUP`), a long entry (with an id).
pub const ACL_GROUP: u16 = 0x08;
/// Tag: the mask (`ACL_MASK`), a short entry.
pub const ACL_MASK: u16 = 0x10;
/// Tag: everyone else's permissions (`ACL_OTHER`), a short entry.
pub const ACL_OTHER: u16 = 0x20;
/// The version in the header of an ACL as JFFS2 stores it (`JFFS2_ACL_VERSION`).
pub const JFFS2_ACL_VERSION: u32 = 1;
/// The version in the header of the host form (`POSIX_ACL_XATTR_VERSION`).
pub const POSIX_ACL_XATTR_VERSION: u32 = 2;
/// The id the host form gives entries that have none (`ACL_UNDEFINED_ID`).
pub const ACL_UNDEFINED_ID: u32 = u32::MAX;

/// Why an ACL value cannot be converted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AclError {
    /// A stored value shorter than its 4-byte header.
    #[error("shorter than its header")]
    ShorterThanHeader,
    /// A stored version other than [`JFFS2_ACL_VERSION`].
    #[error("invalid ACL version")]
    BadVersion,
    /// A length that is not a header plus whole entries.
    #[error("size is not a whole number of entries")]
    NotWholeEntries,
    /// A stored ACL without entries.
    #[error("empty")]
    Empty,
    /// A stored entry cut short.
    #[error("truncated entry")]
    TruncatedEntry,
    /// A tag that is none of the six.
    #[error("unknown ACL tag")]
    UnknownTag {
        /// The tag.
        tag: u16,
    },
    /// Converting a host value gave more bytes than the value has (only a value shorter than
    /// its header can).
    #[error("the JFFS2 form ({jffs2_len} bytes) is longer than the host form ({value_len})")]
    LongerThanHost {
        /// Length of the converted value.
        jffs2_len: usize,
        /// Length of the host value.
        value_len: usize,
    },
}

impl AclError {
    /// The reason as a fixed text (what the read side reports with a bad ACL).
    pub fn reason(self) -> &'static str {
        match self {
            AclError::ShorterThanHeader => "shorter than its header",
            AclError::BadVersion => "invalid ACL version",
            AclError::NotWholeEntries => "size is not a whole number of entries",
            AclError::Empty => "empty",
            AclError::TruncatedEntry => "truncated entry",
            AclError::UnknownTag { .. } => "unknown ACL tag",
            AclError::LongerThanHost { .. } => "longer than the host form",
        }
    }
}

/// Converts a POSIX ACL xattr value from the Linux (`getxattr`) form — little-endian u32
/// version, then 8-byte entries `le16 tag, le16 perm, le32 id` — to the JFFS2 on-flash form in
/// byte order `e` (`formalize_posix_acl`, `docs/spec/mtd-utils-spec.md` §3.5.7): version
/// [`JFFS2_ACL_VERSION`], then per entry `tag, perm` for USER_OBJ, GROUP_OBJ, MASK and OTHER,
/// or `tag, perm, id` for USER and GROUP.
///
/// The host version field is not checked (mkfs does not either). Errors: a value that is not
/// a header plus whole entries ([`AclError::NotWholeEntries`]), an unknown tag
/// ([`AclError::UnknownTag`]), and a result longer than the value, which only a value shorter
/// than the header gives ([`AclError::LongerThanHost`], mkfs' final check).
pub fn from_xattr(value: &[u8], e: Endian) -> Result<Vec<u8>, AclError> {
    let u16b = |v: u16| e.u16_bytes(v);
    let u32b = |v: u32| e.u32_bytes(v);

    let entries = value.get(4..).unwrap_or(&[]);
    if entries.len() % 8 != 0 {
        return Err(AclError::NotWholeEntries);
    }
    let mut out = Vec::with_capacity(value.len());
    out.extend_from_slice(&u32b(JFFS2_ACL_VERSION));
    for ent in entries.chunks_exact(8) {
        let tag = u16::from_le_bytes([ent[0], ent[1]]);
        let perm = u16::from_le_bytes([ent[2], ent[3]]);
        let id = u32::from_le_bytes([ent[4], ent[5], ent[6], ent[7]]);
        match tag {
            ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_MASK | ACL_OTHER => {
                out.extend_from_slice(&u16b(tag));
                out.extend_from_slice(&u16b(perm));
            }
            ACL_USER | ACL_GROUP => {
                out.extend_from_slice(&u16b(tag));
                out.extend_from_slice(&u16b(perm));
                out.extend_from_slice(&u32b(id));
            }
            _ => return Err(AclError::UnknownTag { tag }),
        }
    }
    // mkfs' final sanity check; only a value shorter than the header can trip it.
    if out.len() > value.len() {
        return Err(AclError::LongerThanHost {
            jffs2_len: out.len(),
            value_len: value.len(),
        });
    }
    Ok(out)
}

/// `jffs2_acl_from_medium` then `posix_acl_to_xattr`: the JFFS2 ACL (byte order `e`, 4-byte
/// short entries for the `*_OBJ`, MASK and OTHER tags, 8-byte entries for named users and
/// groups) as the little-endian `posix_acl_xattr` value `getxattr` returns (version
/// [`POSIX_ACL_XATTR_VERSION`], 8-byte entries, [`ACL_UNDEFINED_ID`] where there is no id).
/// [`AclError::Empty`] when the ACL has no entries (`getxattr` then fails with ENODATA); the
/// other errors are EINVAL.
pub fn to_xattr(v: &[u8], e: Endian) -> Result<Vec<u8>, AclError> {
    if v.len() < 4 {
        return Err(AclError::ShorterThanHeader);
    }
    if e.get_u32(v, 0) != Some(JFFS2_ACL_VERSION) {
        return Err(AclError::BadVersion);
    }
    // jffs2_acl_count: up to four short entries, then long ones.
    let size = v.len() - 4;
    let count = if size < 16 {
        if size % 4 != 0 {
            return Err(AclError::NotWholeEntries);
        }
        size / 4
    } else {
        if (size - 16) % 8 != 0 {
            return Err(AclError::NotWholeEntries);
        }
        (size - 16) / 8 + 4
    };
    if count == 0 {
        return Err(AclError::Empty);
    }
    let mut out = POSIX_ACL_XATTR_VERSION.to_le_bytes().to_vec();
    let mut p = 4usize;
    for _ in 0..count {
        let tag = e.get_u16(v, p).ok_or(AclError::TruncatedEntry)?;
        let perm = e.get_u16(v, p + 2).ok_or(AclError::TruncatedEntry)?;
        let id = match tag {
            ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_MASK | ACL_OTHER => {
                p += 4;
                ACL_UNDEFINED_ID
            }
            ACL_USER | ACL_GROUP => {
                let id = e.get_u32(v, p + 4).ok_or(AclError::TruncatedEntry)?;
                p += 8;
                id
            }
            _ => return Err(AclError::UnknownTag { tag }),
        };
        out.extend_from_slice(&tag.to_le_bytes());
        out.extend_from_slice(&perm.to_le_bytes());
        out.extend_from_slice(&id.to_le_bytes());
    }
    Ok(out)
}

/// A JFFS2 POSIX ACL xattr value in the other byte order (see `dump::swap_endian`).
pub fn swap_acl(value: &[u8], from: Endian) -> Vec<u8> {
    let mut out = value.to_vec();
    convert_acl(value, &mut out, from, super::swap::other(from));
    out
}

/// Converts a JFFS2 POSIX ACL value. Stops at a version other than 1, an unknown tag or an
/// entry cut short — after converting that version or tag, so that reading the output
/// back stops at the same place.
pub(crate) fn convert_acl(src: &[u8], dst: &mut [u8], from: Endian, to: Endian) {
    let Some(version) = from.get_u32(src, 0) else {
        return;
    };
    dst[0..4].copy_from_slice(&to.u32_bytes(version));
    if version != JFFS2_ACL_VERSION {
        return;
    }
    let mut at = 4;
    while let Some(tag) = from.get_u16(src, at) {
        dst[at..at + 2].copy_from_slice(&to.u16_bytes(tag));
        let size = match tag {
            ACL_USER_OBJ | ACL_GROUP_OBJ | ACL_MASK | ACL_OTHER => 4,
            ACL_USER | ACL_GROUP => 8,
            _ => return,
        };
        if at + size > src.len() {
            return;
        }
        if let Some(perm) = from.get_u16(src, at + 2) {
            dst[at + 2..at + 4].copy_from_slice(&to.u16_bytes(perm));
        }
        if size == 8 {
            if let Some(id) = from.get_u32(src, at + 4) {
                dst[at + 4..at + 8].copy_from_slice(&to.u32_bytes(id));
            }
        }
        at += size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn acl_stops_consistently() {
        for v in [
            vec![1u8, 0, 0, 0, 2, 0, 6, 0, 0xe8, 0x03], // USER entry cut short
            vec![1, 0, 0, 0, 0x40, 0, 6, 0, 1, 0, 6, 0], // unknown tag first
            vec![2, 0, 0, 0, 1, 0, 6, 0],               // version 2
            vec![1, 0, 0],
        ] {
            let mut be = v.clone();
            convert_acl(&v, &mut be, Endian::Little, Endian::Big);
            let mut back = be.clone();
            convert_acl(&be, &mut back, Endian::Big, Endian::Little);
            assert_eq!(back, v);
        }
    }
}
