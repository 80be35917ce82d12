//! Number grammars of the mtd-utils tools.
//!
//! mtd-utils parses numbers with C's `strtol(s, &end, 0)`: leading white space, an optional
//! sign, `0x` for hex, a leading `0` for octal, decimal otherwise, stopping at the first
//! character that does not fit — and then usually ignores what follows
//! (`docs/spec/mtd-utils-spec.md` §3.1, B-3). The erase-size grammar adds `KiB`/`MiB` suffixes and
//! reads a bare number below 0x1000 as KiB.

/// C `strtol(s, &end, 0)` on a 64-bit `long`: the value (saturated on overflow, like
/// glibc) and the unparsed rest. Without any digit the value is 0 and the rest is `s`.
pub fn strtol(s: &str) -> (i64, &str) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && (b[i] == b' ' || (b'\t'..=b'\r').contains(&b[i])) {
        i += 1;
    }
    let mut neg = false;
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        neg = b[i] == b'-';
        i += 1;
    }
    let mut base = 10u32;
    if i < b.len() && b[i] == b'0' {
        if i + 2 < b.len() + 1
            && b.get(i + 1).is_some_and(|&c| c == b'x' || c == b'X')
            && b.get(i + 2).is_some_and(|c| c.is_ascii_hexdigit())
        {
            base = 16;
            i += 2;
        } else {
            base = 8;
        }
    }
    let start = i;
    let mut v: i128 = 0;
    while i < b.len() {
        let Some(d) = char::from(b[i]).to_digit(base) else {
            break;
        };
        v = (v * i128::from(base) + i128::from(d)).min(i128::from(i64::MAX) + 1);
        i += 1;
    }
    if i == start && base != 8 {
        return (0, s);
    }
    let v = if neg { -v } else { v };
    let v = v.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    (v, &s[i..])
}

/// The value a C `int` receives from `strtol` (truncated to 32 bits, as mkfs.jffs2's
/// `int` variables do).
pub fn strtol_int(s: &str) -> i32 {
    strtol(s).0 as i32
}

/// `strtol` into a C `int`, or `None` when the value does not fit (mkfs.jffs2 would keep
/// its low 32 bits: `-s 4294967808` becoming 512).
pub fn strtol_i32(s: &str) -> Option<i32> {
    i32::try_from(strtol(s).0).ok()
}

/// A size with an optional `KiB`, `MiB` or `GiB` suffix (the number in `strtol`'s grammar),
/// at most `max`; `-1` is returned as is (the tools' "no size"). `None` for anything else:
/// other negative values, unknown suffixes, values above `max` (never wrapped).
pub fn size_up_to(s: &str, max: u64) -> Option<i64> {
    let (v, rest) = strtol(s);
    if rest.len() == s.len() {
        return None;
    }
    if v == -1 && rest.is_empty() {
        return Some(-1);
    }
    let unit: i64 = match rest {
        "" => 1,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    v.checked_mul(unit).filter(|&n| n >= 0 && n as u64 <= max)
}

/// Why an erase size was refused (mkfs.jffs2's wording).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EraseSizeError {
    /// The number parsed as 0.
    Unrecognisable,
    /// A suffix other than exactly `KiB` or `MiB`.
    UnknownUnits,
    /// The size does not fit in mkfs.jffs2's `int` (it would wrap: `4096MiB` becoming 0,
    /// then the 8 KiB minimum).
    OutOfRange,
}

/// mkfs.jffs2 / sumtool `-e` grammar: returns the size and whether it was raised to the
/// 8 KiB minimum (the caller prints "Erase size 0x%x too small. Increasing to 8KiB
/// minimum" with the original value, the second element).
pub fn erase_size(arg: &str) -> Result<(u32, Option<i32>), EraseSizeError> {
    let (v, rest) = strtol(arg);
    if v == 0 {
        return Err(EraseSizeError::Unrecognisable);
    }
    let v = i32::try_from(v).map_err(|_| EraseSizeError::OutOfRange)?;
    let units: i32 = if !rest.is_empty() {
        match rest {
            "KiB" => 1024,
            "MiB" => 1024 * 1024,
            _ => return Err(EraseSizeError::UnknownUnits),
        }
    } else if v < 0x1000 {
        1024
    } else {
        1
    };
    let size = v.checked_mul(units).ok_or(EraseSizeError::OutOfRange)?;
    if size < 0x2000 {
        Ok((0x2000, Some(size)))
    } else {
        Ok((size as u32, None))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtol_like_c() {
        assert_eq!(strtol("0x100000"), (0x100000, ""));
        assert_eq!(strtol("4MiB"), (4, "MiB"));
        assert_eq!(strtol("010"), (8, ""));
        assert_eq!(strtol("09"), (0, "9"));
        assert_eq!(strtol("  -12k"), (-12, "k"));
        assert_eq!(strtol("abc"), (0, "abc"));
        assert_eq!(strtol("0x"), (0, "x"));
        assert_eq!(strtol("0xg"), (0, "xg"));
        assert_eq!(strtol("0"), (0, ""));
        assert_eq!(strtol("99999999999999999999"), (i64::MAX, ""));
        assert_eq!(strtol_int("0x100000000"), 0);
    }

    #[test]
    fn erase_size_grammar() {
        assert_eq!(erase_size("64"), Ok((65536, None)));
        assert_eq!(erase_size("0x20000"), Ok((0x20000, None)));
        assert_eq!(erase_size("128KiB"), Ok((131072, None)));
        assert_eq!(erase_size("1MiB"), Ok((1048576, None)));
        assert_eq!(erase_size("4095"), Ok((4095 * 1024, None)));
        assert_eq!(erase_size("4096"), Ok((0x2000, Some(4096))));
        assert_eq!(erase_size("0x2100"), Ok((0x2100, None)));
        assert_eq!(erase_size("0x1080"), Ok((0x2000, Some(0x1080))));
        assert_eq!(erase_size("128K"), Err(EraseSizeError::UnknownUnits));
        assert_eq!(erase_size("128KB"), Err(EraseSizeError::UnknownUnits));
        assert_eq!(erase_size("0"), Err(EraseSizeError::Unrecognisable));
        assert_eq!(erase_size("zz"), Err(EraseSizeError::Unrecognisable));
        // Never wrapped (mkfs.jffs2 makes 4096MiB 0, then 8 KiB).
        assert_eq!(erase_size("4096MiB"), Err(EraseSizeError::OutOfRange));
        assert_eq!(erase_size("2048MiB"), Err(EraseSizeError::OutOfRange));
        assert_eq!(erase_size("0x100002000"), Err(EraseSizeError::OutOfRange));
        assert_eq!(erase_size("2097151KiB"), Ok((2097151 * 1024, None)));
    }

    #[test]
    fn sizes_never_wrap() {
        assert_eq!(strtol_i32("4294967808"), None);
        assert_eq!(strtol_i32("-2147483648"), Some(i32::MIN));
        assert_eq!(strtol_i32("0x1000"), Some(4096));
        let max = 1 << 32;
        assert_eq!(size_up_to("4GiB", max), Some(1 << 32));
        assert_eq!(size_up_to("4097MiB", max), None);
        assert_eq!(size_up_to("5368709120", max), None);
        assert_eq!(size_up_to("0x100000", max), Some(0x100000));
        assert_eq!(size_up_to("300000", max), Some(300000));
        assert_eq!(size_up_to("-1", max), Some(-1));
        assert_eq!(size_up_to("-2", max), None);
        assert_eq!(size_up_to("4G", max), None);
        assert_eq!(size_up_to("", max), None);
        assert_eq!(size_up_to("99999999999999999999GiB", max), None);
    }
}
