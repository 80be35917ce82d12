//! POSIX ACL xattr values as JFFS2 stores them (`docs/spec/kernel-jffs2-spec.md` §1.8,
//! `docs/spec/mtd-utils-spec.md` §3.5.7): a 32-bit version ([`JFFS2_ACL_VERSION`]), then
//! entries of a 16-bit tag and 16-bit permissions, followed by a 32-bit id for the named user
//! and group tags — all in the filesystem's byte order. The host (`getxattr`) form is
//! little-endian, version [`POSIX_ACL_XATTR_VERSION`], 8 bytes per entry.
//!
//! The constants are the one description of the layout; the three conversions built on it
//! live with their users: host form to flash (`source::acl_to_jffs2`, for mkfs), flash to host
//! form (`fs::acl_to_xattr`, for reading), and flash to flash in the other byte order
//! ([`swap_acl`], for the endianness conversions).

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

/// A JFFS2 POSIX ACL xattr value in the other byte order (see `dump::convert_endian`).
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
