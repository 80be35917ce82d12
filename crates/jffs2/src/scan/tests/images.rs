//! Real images: the kernel-written fixtures (`fixtures/kernel/`, their `.json` holds what
//! Linux 6.1 printed mounting them) and images made by mtd-utils' mkfs.jffs2 and sumtool.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::scan::msg::{is_scan_message, normalize_dmesg};
use crate::scan::{as_flashed, BlockClass, SummaryUse};

pub(super) fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kernel")
}

/// Decodes the JSON string starting at `s[0] == '"'`; returns it and the rest.
fn json_string(s: &str) -> Option<(String, &str)> {
    let mut out = String::new();
    let mut it = s.strip_prefix('"')?.char_indices();
    while let Some((i, c)) = it.next() {
        match c {
            '"' => return Some((out, &s[i + 2..])),
            '\\' => {
                let (_, e) = it.next()?;
                match e {
                    'n' => out.push('\n'),
                    't' => out.push('\t'),
                    'u' => {
                        let mut v = 0u32;
                        for _ in 0..4 {
                            v = v * 16 + it.next()?.1.to_digit(16)?;
                        }
                        out.push(char::from_u32(v).unwrap_or('?'));
                    }
                    other => out.push(other),
                }
            }
            c => out.push(c),
        }
    }
    None
}

/// The `msg` strings of `mount.kernel_messages` in a fixture's `.json`.
pub(super) fn mount_messages(json: &str) -> Vec<String> {
    let Some(m) = json.find("\"mount\"") else {
        return Vec::new();
    };
    let rest = &json[m..];
    let Some(k) = rest.find("\"kernel_messages\"") else {
        return Vec::new();
    };
    let mut rest = &rest[k..];
    let end = rest.find(']').unwrap_or(rest.len());
    let mut out = Vec::new();
    while let Some(i) = rest.find("\"msg\"") {
        if i > end {
            break;
        }
        let after = rest[i + 5..]
            .trim_start()
            .trim_start_matches(':')
            .trim_start();
        match json_string(after) {
            Some((s, r)) => {
                out.push(s);
                rest = r;
            }
            None => break,
        }
    }
    out
}

fn json_u32(json: &str, key: &str) -> Option<u32> {
    let i = json.find(&format!("\"{key}\""))?;
    let rest = json[i + key.len() + 2..]
        .trim_start()
        .trim_start_matches(':')
        .trim_start();
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// Every kernel-written fixture: the scan prints exactly the scan-time messages the kernel
/// printed when mounting it read-only (none, for these images), and the mount succeeds.
#[test]
fn kernel_fixtures_scan_like_the_kernel() {
    let dir = fixtures_dir();
    let mut seen = 0;
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixtures/kernel")
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "img"))
        .collect();
    entries.sort();
    if entries.is_empty() {
        // `*.img` is git-ignored: a checkout without the images cannot run this test.
        eprintln!("no fixtures/kernel/*.img: skipping");
        return;
    }
    for img_path in entries {
        let json = std::fs::read_to_string(img_path.with_extension("json")).expect("json");
        let es = json_u32(&json, "erase_size").expect("erase_size");
        let img = std::fs::read(&img_path).expect("image");
        let geom = Geometry {
            endian: Endian::Little,
            erase_size: es,
            cleanmarker_size: 12,
        };
        let s = scan(&img, &geom, &ScanOptions::default());
        let name = img_path.file_name().unwrap().to_string_lossy().to_string();
        let kernel: Vec<String> = mount_messages(&json)
            .iter()
            .filter_map(|m| normalize_dmesg(m))
            .filter(|m| is_scan_message(m))
            .collect();
        let ours: Vec<String> = texts(&s);
        assert_eq!(
            ours, kernel,
            "{name}: scan messages differ from the kernel's"
        );
        assert_eq!(s.failure, None, "{name}");
        // The messages the kernel printed that are not scan messages are build/readinode
        // ones (the xattr notice, a data CRC at readinode).
        assert!(
            !mount_messages(&json).is_empty(),
            "{name}: no messages parsed"
        );
        assert!(
            s.inodes.contains_key(&1),
            "{name}: no root directory entries"
        );
        for b in &s.blocks {
            assert_eq!(
                u64::from(b.used)
                    + u64::from(b.unchecked)
                    + u64::from(b.dirty)
                    + u64::from(b.wasted)
                    + u64::from(b.free),
                u64::from(es),
                "{name}: block {} accounting",
                b.index
            );
        }
        if name.contains("summary") {
            assert!(
                s.blocks.iter().any(|b| b.summary == SummaryUse::Used),
                "{name}: no summary used"
            );
            // Mount cost with summaries is lower than without.
            let full = scan(
                &img,
                &geom,
                &ScanOptions {
                    summary: false,
                    ..Default::default()
                },
            );
            assert!(s.totals().bytes_read < full.totals().bytes_read, "{name}");
            assert_eq!(full.failure, None);
        }
        seen += 1;
    }
    assert!(seen >= 9, "only {seen} fixtures");
}

/// A small deterministic tree: text, incompressible data, a symlink, many dirents, a long
/// name; about 1.2 MB.
pub(super) fn make_tree(root: &Path) {
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = |n: usize| -> Vec<u8> {
        (0..n)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect()
    };
    std::fs::create_dir_all(root.join("etc/sub/deeper")).unwrap();
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::create_dir_all(root.join("many")).unwrap();
    for i in 0..10 {
        std::fs::write(root.join(format!("bin/prog{i}")), rnd(40_000 + i * 9_000)).unwrap();
    }
    let text: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(root.join("etc/big.txt"), text).unwrap();
    std::fs::write(root.join("etc/sub/deeper/small"), b"hello\n").unwrap();
    std::fs::write(root.join("etc/empty"), b"").unwrap();
    for i in 0..150 {
        std::fs::write(
            root.join(format!("many/file-with-a-longish-name-{i:04}")),
            b"x",
        )
        .unwrap();
    }
    std::fs::write(root.join("a".repeat(200)), b"long name").unwrap();
    std::os::unix::fs::symlink("etc/big.txt", root.join("link")).unwrap();
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--help").output().is_ok()
}

/// One mkfs.jffs2 (and optionally sumtool) image.
pub(super) struct Made {
    pub erase: u32,
    pub endian: Endian,
    pub cleanmarkers: bool,
    pub summary: bool,
    pub image: Vec<u8>,
}

/// mkfs.jffs2 images in several geometries, with and without -n, and sumtool versions of
/// some. Empty when the tools are not installed.
pub(super) fn made_images() -> Vec<Made> {
    if !have("mkfs.jffs2") {
        eprintln!("mkfs.jffs2 not installed: skipping");
        return Vec::new();
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    make_tree(&root);
    let mut out = Vec::new();
    for kib in [8u32, 16, 32, 64, 128, 256] {
        for (endian, flag) in [(Endian::Little, "-l"), (Endian::Big, "-b")] {
            for cm in [true, false] {
                let img = tmp.path().join(format!("i-{kib}-{flag}-{cm}.img"));
                let mut c = Command::new("mkfs.jffs2");
                c.arg("-r")
                    .arg(&root)
                    .arg("-o")
                    .arg(&img)
                    .arg(format!("-e{kib}KiB"))
                    .arg(flag);
                if !cm {
                    c.arg("-n");
                }
                let st = c.output().unwrap();
                assert!(st.status.success(), "{:?}", st);
                let image = std::fs::read(&img).unwrap();
                out.push(Made {
                    erase: kib * 1024,
                    endian,
                    cleanmarkers: cm,
                    summary: false,
                    image,
                });
                if have("sumtool") && kib <= 64 {
                    let sum = tmp.path().join(format!("s-{kib}-{flag}-{cm}.img"));
                    let mut c = Command::new("sumtool");
                    c.arg("-i")
                        .arg(&img)
                        .arg("-o")
                        .arg(&sum)
                        .arg(format!("-e{kib}KiB"))
                        .arg(flag);
                    if !cm {
                        c.arg("-n");
                    }
                    let st = c.output().unwrap();
                    assert!(st.status.success(), "{:?}", st);
                    out.push(Made {
                        erase: kib * 1024,
                        endian,
                        cleanmarkers: cm,
                        summary: true,
                        image: std::fs::read(&sum).unwrap(),
                    });
                }
            }
        }
    }
    out
}

#[test]
fn mkfs_and_sumtool_images_scan_clean() {
    for m in made_images() {
        let what = format!(
            "{} KiB {} cleanmarkers={} summary={}",
            m.erase / 1024,
            m.endian.name(),
            m.cleanmarkers,
            m.summary
        );
        let img = as_flashed(&m.image, m.erase);
        // NOR (12-byte cleanmarkers expected) for every image, NAND-like (0) for -n ones.
        let cms: &[u32] = if m.cleanmarkers { &[12] } else { &[12, 0] };
        for &cm in cms {
            let geom = Geometry {
                endian: m.endian,
                erase_size: m.erase,
                cleanmarker_size: cm,
            };
            let s = scan(&img, &geom, &ScanOptions::default());
            assert!(
                s.log.is_empty(),
                "{what} cm={cm}: {:?}",
                &s.log[..s.log.len().min(5)]
            );
            assert_eq!(s.failure, None, "{what}");
            assert!(s.inodes.len() > 150, "{what}: {} inodes", s.inodes.len());
            let data_blocks = m.image.len().div_ceil(m.erase as usize);
            for b in &s.blocks {
                let ok = match b.class {
                    BlockClass::Clean | BlockClass::PartDirty => true,
                    BlockClass::Empty => cm != 0,
                    BlockClass::Cleanmarker => cm == 0,
                    BlockClass::AllDirty => false,
                };
                assert!(ok, "{what} cm={cm}: block {} is {:?}", b.index, b.class);
                if m.summary && (b.index as usize) + 1 < data_blocks {
                    assert_eq!(b.summary, SummaryUse::Used, "{what}: block {}", b.index);
                    assert!(
                        b.bytes_read < m.erase,
                        "{what}: block {} read {}",
                        b.index,
                        b.bytes_read
                    );
                }
                if !m.summary {
                    assert_eq!(b.summary, SummaryUse::None, "{what}");
                }
            }
            // The root directory lists the top-level entries.
            let root: Vec<&[u8]> = s.inodes[&1]
                .scan_dents
                .iter()
                .map(|d| &d.name[..])
                .collect();
            assert!(
                root.contains(&&b"etc"[..]) && root.contains(&&b"link"[..]),
                "{what}"
            );
            assert_eq!(s.inodes[&1].scan_dents.len(), 5, "{what}");
        }
    }
}
