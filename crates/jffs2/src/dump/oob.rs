//! `jffs2dump -d LEN -o LEN`: a raw NAND dump holds, page after page, `LEN` data bytes then
//! `LEN` OOB bytes; the image is the data bytes alone (`docs/spec/mtd-utils-spec.md` §6.4).

use super::DumpError;

/// Removes the OOB bytes from `raw` in place: keeps the first `datsize` bytes of every
/// `datsize + oobsize`-byte page. jffs2dump loops forever (and writes past its buffer) when
/// the length is not a whole number of pages; that is an error here, and `raw` is left as
/// it was.
pub fn peel_oob(raw: &mut Vec<u8>, datsize: usize, oobsize: usize) -> Result<(), DumpError> {
    if datsize == 0 || oobsize == 0 {
        return Err(DumpError::OobGeometry { datsize, oobsize });
    }
    let page = datsize
        .checked_add(oobsize)
        .ok_or(DumpError::OobGeometry { datsize, oobsize })?;
    if raw.len() % page != 0 {
        return Err(DumpError::OobSizeMismatch {
            len: raw.len() as u64,
            datsize,
            oobsize,
            page: page as u64,
        });
    }
    let pages = raw.len() / page;
    for i in 1..pages {
        // Page i's data moves from i*page to i*datsize, never past where it was.
        raw.copy_within(i * page..i * page + datsize, i * datsize);
    }
    raw.truncate(pages * datsize);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peels_whole_pages() {
        let mut raw = Vec::new();
        for p in 0..5u8 {
            raw.extend(std::iter::repeat_n(p, 8));
            raw.extend(std::iter::repeat_n(0xEE, 3));
        }
        peel_oob(&mut raw, 8, 3).unwrap();
        let want: Vec<u8> = (0..5u8).flat_map(|p| std::iter::repeat_n(p, 8)).collect();
        assert_eq!(raw, want);
        let mut empty = Vec::new();
        peel_oob(&mut empty, 512, 16).unwrap();
        assert!(empty.is_empty());
    }

    #[test]
    fn refuses_partial_pages_and_zero_sizes() {
        let mut raw = vec![0u8; 1000];
        assert!(matches!(
            peel_oob(&mut raw, 512, 16),
            Err(DumpError::OobSizeMismatch { page: 528, .. })
        ));
        assert_eq!(raw.len(), 1000);
        assert!(matches!(
            peel_oob(&mut raw, 0, 16),
            Err(DumpError::OobGeometry { .. })
        ));
        assert!(matches!(
            peel_oob(&mut raw, usize::MAX, 16),
            Err(DumpError::OobGeometry { .. })
        ));
    }
}
