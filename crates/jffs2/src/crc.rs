//! The JFFS2 CRC-32.
//!
//! JFFS2 uses the reflected CRC-32 polynomial (0xEDB88320) with an initial register of 0 and
//! no final inversion (`docs/spec/mtd-utils-spec.md` §1.4, `docs/spec/kernel-jffs2-spec.md` §1.1). This equals
//! the standard CRC-32 started from 0xFFFFFFFF with the final inversion undone, so the fast
//! SIMD implementation of `crc32fast` can be reused.

/// JFFS2 CRC of `data`, starting from 0 (the seed every JFFS2 call site uses).
pub fn crc32(data: &[u8]) -> u32 {
    crc32_update(0, data)
}

/// Continues a JFFS2 CRC: `crc32_update(crc32(a), b) == crc32(a ++ b)`.
pub fn crc32_update(crc: u32, data: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new_with_initial(!crc);
    h.update(data);
    !h.finalize()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_value() {
        assert_eq!(crc32(b"123456789"), 0x2DFD_2D88);
        assert_eq!(crc32(b""), 0);
    }

    #[test]
    fn incremental_equals_whole() {
        let a = b"hello, ";
        let b = b"jffs2 world";
        let whole: Vec<u8> = a.iter().chain(b.iter()).copied().collect();
        assert_eq!(crc32_update(crc32(a), b), crc32(&whole));
    }

    #[test]
    fn cleanmarker_vector() {
        // docs/spec/mtd-utils-spec.md §2.7: LE cleanmarker header CRC is e41eb0b1.
        assert_eq!(crc32(&[0x85, 0x19, 0x03, 0x20, 0x0c, 0, 0, 0]), 0xe41e_b0b1);
        assert_eq!(crc32(&[0x19, 0x85, 0x20, 0x03, 0, 0, 0, 0x0c]), 0xf060_dc98);
    }
}
