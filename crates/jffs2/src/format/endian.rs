//! Byte order of an image.

/// The byte order of every multi-byte field of an image (`docs/spec/mtd-utils-spec.md` §1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Endian {
    /// Little endian (`-l`).
    Little,
    /// Big endian (`-b`).
    Big,
}

impl Endian {
    /// The byte order of the machine running this code (mtd-utils' default).
    pub const fn host() -> Endian {
        if cfg!(target_endian = "big") {
            Endian::Big
        } else {
            Endian::Little
        }
    }

    /// Encodes a `u16`.
    #[inline]
    pub fn u16_bytes(self, v: u16) -> [u8; 2] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// Encodes a `u32`.
    #[inline]
    pub fn u32_bytes(self, v: u32) -> [u8; 4] {
        match self {
            Endian::Little => v.to_le_bytes(),
            Endian::Big => v.to_be_bytes(),
        }
    }

    /// Appends a `u16`.
    #[inline]
    pub fn put_u16(self, out: &mut Vec<u8>, v: u16) {
        out.extend_from_slice(&self.u16_bytes(v));
    }

    /// Appends a `u32`.
    #[inline]
    pub fn put_u32(self, out: &mut Vec<u8>, v: u32) {
        out.extend_from_slice(&self.u32_bytes(v));
    }

    /// Reads a `u16` at `at`; `None` when the slice is too short.
    #[inline]
    pub fn get_u16(self, b: &[u8], at: usize) -> Option<u16> {
        let s: [u8; 2] = b.get(at..at.checked_add(2)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u16::from_le_bytes(s),
            Endian::Big => u16::from_be_bytes(s),
        })
    }

    /// Reads a `u32` at `at`; `None` when the slice is too short.
    #[inline]
    pub fn get_u32(self, b: &[u8], at: usize) -> Option<u32> {
        let s: [u8; 4] = b.get(at..at.checked_add(4)?)?.try_into().ok()?;
        Some(match self {
            Endian::Little => u32::from_le_bytes(s),
            Endian::Big => u32::from_be_bytes(s),
        })
    }

    /// Short lower-case name ("little" / "big").
    pub fn name(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }
}
