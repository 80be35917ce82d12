//! Tests of the filesystem model: crafted images (`crafted.rs`), hostile images
//! (`hostile.rs`), and whole images against what Linux showed (`images.rs`).
//!
//! Support here: an image builder on the format encoders and `layout::BlockWriter`; an image
//! opened in the tests' geometry (`opened`, `crate::Image`), or only scanned (`scan_image`) for
//! the tests that build the model on a scan they change; a JSON reader for the kernel
//! listings; the comparison helper.

mod crafted;
mod hostile;
mod images;

use std::collections::BTreeMap;

use super::tree::ListingEntry;
use crate::crc::crc32;
use crate::format::{dt, DirentNode, Endian, InodeNode, NodeKind, XattrNode, MAGIC};
pub(super) use crate::testing::Img;
use crate::{Image, ImageError, ImageOptions};

/// The builder these tests use: file and metadata nodes carry `mtime = 1000 + version`.
pub(super) fn new_img() -> Img {
    Img::new().inode_mtime(1000)
}

pub(super) const S_IFDIR: u32 = 0o040000;
pub(super) const S_IFREG: u32 = 0o100000;
pub(super) const S_IFLNK: u32 = 0o120000;
pub(super) const S_IFCHR: u32 = 0o020000;
use crate::scan::{Geometry, NodeRef, RefState, Scan, ScanDirent, XattrDatum, XattrRef};

pub(super) const LE: Endian = Endian::Little;
pub(super) const ES: u32 = 16384;

pub(super) fn geometry(e: Endian, erase_size: u32) -> Geometry {
    Geometry {
        endian: e,
        erase_size,
        cleanmarker_size: 12,
    }
}

/// How these tests open an image: in the byte order and erase size `g` gives, whatever the
/// detection makes of the image (a hostile one too).
pub(super) fn options(g: Geometry) -> ImageOptions {
    ImageOptions {
        erase_size: Some(g.erase_size),
        endian: Some(g.endian),
        insist: true,
        ..Default::default()
    }
}

/// `image` as opened with [`options`]. The cleanmarker size, which no option gives, is
/// detected: checked to be `g`'s, so that the image is read as these tests lay it out.
pub(super) fn checked<'a>(image: Result<Image<'a>, ImageError>, g: Geometry) -> Image<'a> {
    let image = image.unwrap();
    assert_eq!(image.geometry(), g, "the image is read in another geometry");
    image
}

/// `image` opened in the geometry `g` (see [`checked`]); mounted with `salvage`, which builds
/// the model whether or not Linux would mount it, as these tests want.
pub(super) fn opened(image: &[u8], g: Geometry) -> Image<'_> {
    checked(Image::from_bytes_with(image, &options(g)), g)
}

/// The mount scan alone, for the tests that change the scan before they build the model on
/// it (`Fs::from_scan` on a scan of the caller's, which [`Image::mount`] does not take), and for
/// images of garbage, whose cleanmarker size the detection cannot be trusted to find: the
/// image padded with 0xFF to whole erase blocks and scanned in exactly the geometry `g`.
pub(super) fn scan_image(image: &[u8], g: Geometry) -> Scan {
    let img = crate::scan::as_flashed(image, g.erase_size);
    crate::scan::scan(&img, &g, &crate::scan::ScanOptions::default())
}

/// A JSON value; strings are bytes (`\udcXX` lone surrogates, Python's surrogateescape, are
/// the raw bytes they stand for).
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u8>),
    Arr(Vec<Json>),
    Obj(Vec<(Vec<u8>, Json)>),
}

impl Json {
    pub fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Obj(v) => v.iter().find(|(n, _)| n == k.as_bytes()).map(|(_, j)| j),
            _ => None,
        }
    }
    pub fn str(&self) -> Option<&[u8]> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn num(&self) -> Option<f64> {
        match self {
            Json::Num(n) => Some(*n),
            _ => None,
        }
    }
    pub fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(a) => a,
            _ => &[],
        }
    }

    pub fn parse(s: &str) -> Json {
        let b = s.as_bytes();
        let mut p = 0;
        parse_value(b, &mut p)
    }
}

fn ws(b: &[u8], p: &mut usize) {
    while *p < b.len() && b[*p].is_ascii_whitespace() {
        *p += 1;
    }
}

fn parse_value(b: &[u8], p: &mut usize) -> Json {
    ws(b, p);
    match b[*p] {
        b'{' => {
            *p += 1;
            let mut v = Vec::new();
            loop {
                ws(b, p);
                if b[*p] == b'}' {
                    *p += 1;
                    return Json::Obj(v);
                }
                let Json::Str(k) = parse_value(b, p) else {
                    panic!("bad key")
                };
                ws(b, p);
                assert_eq!(b[*p], b':');
                *p += 1;
                let val = parse_value(b, p);
                v.push((k, val));
                ws(b, p);
                if b[*p] == b',' {
                    *p += 1;
                }
            }
        }
        b'[' => {
            *p += 1;
            let mut v = Vec::new();
            loop {
                ws(b, p);
                if b[*p] == b']' {
                    *p += 1;
                    return Json::Arr(v);
                }
                v.push(parse_value(b, p));
                ws(b, p);
                if b[*p] == b',' {
                    *p += 1;
                }
            }
        }
        b'"' => {
            *p += 1;
            let mut out = Vec::new();
            loop {
                let c = b[*p];
                *p += 1;
                match c {
                    b'"' => return Json::Str(out),
                    b'\\' => {
                        let c = b[*p];
                        *p += 1;
                        match c {
                            b'n' => out.push(b'\n'),
                            b't' => out.push(b'\t'),
                            b'r' => out.push(b'\r'),
                            b'b' => out.push(8),
                            b'f' => out.push(12),
                            b'u' => {
                                let hex = |p: &mut usize| {
                                    let h = std::str::from_utf8(&b[*p..*p + 4]).unwrap();
                                    *p += 4;
                                    u32::from_str_radix(h, 16).unwrap()
                                };
                                let u = hex(p);
                                if (0xDC80..=0xDCFF).contains(&u) {
                                    out.push((u - 0xDC00) as u8);
                                } else if (0xD800..0xDC00).contains(&u) && b[*p] == b'\\' {
                                    *p += 2;
                                    let lo = hex(p);
                                    let cp = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
                                    let ch = char::from_u32(cp).unwrap();
                                    out.extend_from_slice(ch.to_string().as_bytes());
                                } else {
                                    let ch = char::from_u32(u).unwrap_or('\u{fffd}');
                                    out.extend_from_slice(ch.to_string().as_bytes());
                                }
                            }
                            other => out.push(other),
                        }
                    }
                    other => out.push(other),
                }
            }
        }
        b't' => {
            *p += 4;
            Json::Bool(true)
        }
        b'f' => {
            *p += 5;
            Json::Bool(false)
        }
        b'n' => {
            *p += 4;
            Json::Null
        }
        _ => {
            let s = *p;
            while *p < b.len() && matches!(b[*p], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                *p += 1;
            }
            Json::Num(std::str::from_utf8(&b[s..*p]).unwrap().parse().unwrap())
        }
    }
}

/// A kernel harness listing entry, as JSON, in [`ListingEntry`] form.
pub(super) fn listing_from_json(j: &Json) -> Vec<ListingEntry> {
    j.arr()
        .iter()
        .map(|e| {
            let s = |k: &str| e.get(k).and_then(Json::str).map(<[u8]>::to_vec);
            let n = |k: &str| e.get(k).and_then(Json::num).unwrap_or(-1.0);
            ListingEntry {
                path: s("path").unwrap(),
                kind: String::from_utf8(s("type").unwrap()).unwrap(),
                mode: String::from_utf8(s("mode").unwrap()).unwrap(),
                uid: n("uid") as u32,
                gid: n("gid") as u32,
                size: n("size") as u64,
                nlink: n("nlink") as u32,
                mtime: n("mtime") as u32,
                md5: s("md5").map(|v| String::from_utf8(v).unwrap()),
                target: s("target"),
                rdev: s("rdev").map(|v| String::from_utf8(v).unwrap()),
                links: e
                    .get("links")
                    .map(|l| l.arr().iter().map(|p| p.str().unwrap().to_vec()).collect()),
                xattrs: match e.get("xattrs") {
                    Some(Json::Obj(v)) => v
                        .iter()
                        .map(|(k, v)| {
                            (
                                String::from_utf8_lossy(k).into_owned(),
                                String::from_utf8_lossy(v.str().unwrap_or(b"")).into_owned(),
                            )
                        })
                        .collect(),
                    _ => BTreeMap::new(),
                },
            }
        })
        .collect()
}

/// Which fields [`compare_listings`] compares.
#[derive(Clone, Copy)]
pub(super) struct Compare {
    /// Compare the root's metadata (not only its type).
    pub root: bool,
    /// Compare directory sizes and link counts.
    pub dir_size_nlink: bool,
    /// Compare xattrs.
    pub xattrs: bool,
}

/// Differences between an expected listing (kernel or host) and ours, one line each, like
/// `harness.py compare`.
pub(super) fn compare_listings(
    expected: &[ListingEntry],
    actual: &[ListingEntry],
    c: Compare,
) -> Vec<String> {
    let ex: BTreeMap<&[u8], &ListingEntry> =
        expected.iter().map(|e| (e.path.as_slice(), e)).collect();
    let ac: BTreeMap<&[u8], &ListingEntry> =
        actual.iter().map(|e| (e.path.as_slice(), e)).collect();
    let mut diffs = Vec::new();
    let show = |p: &[u8]| String::from_utf8_lossy(p).into_owned();
    for p in ex
        .keys()
        .chain(ac.keys())
        .collect::<std::collections::BTreeSet<_>>()
    {
        let (Some(a), Some(b)) = (ex.get(p), ac.get(p)) else {
            diffs.push(format!(
                "{}: {}",
                show(p),
                if ex.contains_key(p) {
                    "missing"
                } else {
                    "unexpected"
                }
            ));
            continue;
        };
        let mut d = |what: &str, x: String, y: String| {
            if x != y {
                diffs.push(format!("{}: {what}: expected {x}, got {y}", show(p)));
            }
        };
        d("type", a.kind.clone(), b.kind.clone());
        if *p == b"." && !c.root {
            continue;
        }
        d("mode", a.mode.clone(), b.mode.clone());
        d("uid", a.uid.to_string(), b.uid.to_string());
        d("gid", a.gid.to_string(), b.gid.to_string());
        if a.kind != "dir" || c.dir_size_nlink {
            d("size", a.size.to_string(), b.size.to_string());
            d("nlink", a.nlink.to_string(), b.nlink.to_string());
        }
        d("mtime", a.mtime.to_string(), b.mtime.to_string());
        d("md5", format!("{:?}", a.md5), format!("{:?}", b.md5));
        d(
            "target",
            format!("{:?}", a.target.as_deref().map(show)),
            format!("{:?}", b.target.as_deref().map(show)),
        );
        d("rdev", format!("{:?}", a.rdev), format!("{:?}", b.rdev));
        d("links", format!("{:?}", a.links), format!("{:?}", b.links));
        if c.xattrs {
            d(
                "xattrs",
                format!("{:?}", a.xattrs),
                format!("{:?}", b.xattrs),
            );
        }
    }
    diffs
}

/// Hex of bytes.
pub(super) fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Raw header bytes for crafted nodes with arbitrary type and totlen.
pub(super) fn header(e: Endian, nodetype: u16, totlen: u32) -> Vec<u8> {
    let mut out = Vec::new();
    e.put_u16(&mut out, MAGIC);
    e.put_u16(&mut out, nodetype);
    e.put_u32(&mut out, totlen);
    let crc = crc32(&out[..8]);
    e.put_u32(&mut out, crc);
    out
}
