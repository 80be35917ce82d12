//! Device numbers as a character or block device inode stores them: the node's data, 2 or
//! 4 bytes (`docs/spec/kernel-jffs2-spec.md` §1.4). Every writer encodes and every reader
//! decodes them here.

use super::Endian;

/// The size of the old 2-byte form (major in the high byte, minor in the low one).
pub const OLD_DEV_SIZE: usize = 2;
/// The size of the kernel's newer 4-byte form (`new_encode_dev`).
pub const NEW_DEV_SIZE: usize = 4;
/// The largest major the 4-byte form holds: 12 bits, as in the kernel's `dev_t`.
pub const MAJOR_MASK: u32 = 0xfff;

/// True when `major:minor` fits the old 2-byte form (`old_valid_dev`), which the kernel and
/// mkfs.jffs2 write whenever they can.
pub const fn fits_old_encoding(major: u32, minor: u32) -> bool {
    major < 256 && minor < 256
}

/// The 2- or 4-byte device payload Linux writes (`jffs2_encode_dev`, §1.4). A major wider than
/// the 4-byte form's 12 bits is cut to them ([`MAJOR_MASK`]) rather than spilling into the
/// minor's bits; numbers read from an image (see [`decode_dev`]) never have one.
pub fn encode_dev(e: Endian, major: u32, minor: u32) -> Vec<u8> {
    if fits_old_encoding(major, minor) {
        e.u16_bytes(((major << 8) | minor) as u16).to_vec()
    } else {
        let v = (minor & 0xff) | ((major & MAJOR_MASK) << 8) | ((minor & !0xff) << 12);
        e.u32_bytes(v).to_vec()
    }
}

/// `old_decode_dev` / `new_decode_dev` of a 2- or 4-byte device payload (§1.4).
pub fn decode_dev(data: &[u8], e: Endian) -> (u32, u32) {
    if data.len() == OLD_DEV_SIZE {
        let v = u32::from(e.get_u16(data, 0).unwrap_or(0));
        ((v >> 8) & 0xff, v & 0xff)
    } else {
        let v = e.get_u32(data, 0).unwrap_or(0);
        ((v & 0xfff00) >> 8, (v & 0xff) | ((v >> 12) & 0xfff00))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_numbers() {
        assert_eq!(decode_dev(&[0x03, 0x01], Endian::Little), (1, 3));
        // new_encode_dev(MKDEV(259, 70000)) = (70000 & 0xff) | (259 << 8) | ((70000 & !0xff) << 12)
        let v: u32 = (70000 & 0xff) | (259 << 8) | ((70000 & !0xff) << 12);
        assert_eq!(decode_dev(&v.to_le_bytes(), Endian::Little), (259, 70000));
    }

    #[test]
    fn encode_round_trips_and_matches_both_former_writers() {
        for e in [Endian::Little, Endian::Big] {
            for (ma, mi) in [(1, 3), (255, 255), (8, 256), (259, 70000), (4095, 1 << 19)] {
                let b = encode_dev(e, ma, mi);
                assert_eq!(b.len(), if fits_old_encoding(ma, mi) { 2 } else { 4 });
                assert_eq!(decode_dev(&b, e), (ma, mi));
            }
            // mkfs cut an over-wide major to 12 bits; so does the shared encoder.
            assert_eq!(decode_dev(&encode_dev(e, 0x1001, 300), e), (1, 300));
        }
    }
}
