//! jffs2-fsck on real images: every image mtd-utils' `mkfs.jffs2` and `sumtool` make (several
//! geometries, both byte orders), every image our `jffs2-mkfs` makes (with `--summary` too),
//! and every kernel-written fixture, checked against what Linux showed.

mod common;
#[path = "common/fsck_util.rs"]
mod fsck_util;

use std::collections::BTreeMap;

use fsck_util::*;

/// Geometries: erase size, byte order, extra mkfs options.
const GEOMETRIES: &[(&str, &str, &[&str])] = &[
    ("0x2000", "-l", &[]),
    ("0x4000", "-b", &[]),
    ("0x10000", "-l", &[]),
    ("0x10000", "-b", &["-n"]),
    ("0x20000", "-l", &["-n"]),
    ("0x40000", "-b", &[]),
    ("0x4000", "-l", &["-p"]),
    ("0x8000", "-l", &["--with-xattr"]),
];

fn expect_clean(img: &std::path::Path, extra: &[&str], what: &str) {
    let mut args: Vec<&str> = extra.to_vec();
    let p = img.to_str().unwrap();
    args.push(p);
    let o = fsck(&args);
    assert_eq!(
        o.status,
        0,
        "{what}: jffs2-fsck {args:?} exited {}\n{}{}",
        o.status,
        o.stdout_text(),
        o.stderr_text()
    );
    assert!(
        !o.stdout_text().contains("WARNING "),
        "{what}: warnings on a clean image\n{}",
        o.stdout_text()
    );
}

#[test]
fn mkfs_and_sumtool_images_are_consistent() {
    if !(common::require_root()) {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let tree = common::tree(common::Kind::Small);
    let dir = common::scratch();
    let mut n = 0;
    for (es, endian, extra) in GEOMETRIES {
        let img = dir.path().join(format!("mkfs-{es}{endian}.img"));
        let mut args = vec!["-e", es, endian];
        args.extend_from_slice(extra);
        mkfs(tree.path(), &img, &args);
        let what = format!("mkfs.jffs2 {args:?}");
        // Detected geometry, and the geometry given.
        expect_clean(&img, &[], &what);
        expect_clean(&img, &["-e", es, endian], &what);
        // The same through sumtool.
        let sum = dir.path().join(format!("sum-{es}{endian}.img"));
        let mut sargs = vec!["-e", es, endian];
        if extra.contains(&"-n") {
            sargs.push("-n");
        }
        sargs.push("-p");
        sumtool(&img, &sum, &sargs);
        let what = format!("sumtool {sargs:?} of mkfs.jffs2 {args:?}");
        expect_clean(&sum, &[], &what);
        expect_clean(&sum, &["-e", es, endian], &what);
        // The summaries are used: the mount reads less than a full scan. (sumtool writes no
        // summary into the last, partly filled block: an image within one block has none.)
        let bytes = std::fs::read(&sum).unwrap();
        let big = *endian == "-b";
        if !node_list(&bytes, big).iter().any(|n| n.2 == 0x2006) {
            n += 1;
            continue;
        }
        let o = fsck(&["--json", "-e", es, sum.to_str().unwrap()]);
        let j = json_of(&o);
        let s = &j["summary"];
        assert!(
            s["summary_coverage"]["blocks_with_summary"]
                .as_u64()
                .unwrap()
                > 0,
            "{what}: no summary used"
        );
        assert!(
            s["mount_cost"]["bytes_read_with_summaries"].as_u64()
                < s["mount_cost"]["bytes_read_full_scan"].as_u64(),
            "{what}: {s}"
        );
        n += 1;
    }
    assert_eq!(n, GEOMETRIES.len());
}

#[test]
fn jffs2_mkfs_images_are_consistent() {
    if !(common::require_root()) {
        return;
    }
    let tree = common::tree(common::Kind::Small);
    let dir = common::scratch();
    for args in [
        &["-e", "16KiB", "-l"][..],
        &["-e", "64KiB", "-b", "--summary"],
        &["-e", "128KiB", "-l", "--summary", "-n"],
        &["-e", "8KiB", "-l", "--summary", "--with-xattr"],
        &["-e", "256KiB", "-b", "-X", "lzo"],
    ] {
        let img = dir.path().join("ours.img");
        ours_mkfs(tree.path(), &img, args);
        expect_clean(&img, &[], &format!("jffs2-mkfs {args:?}"));
    }
}

#[test]
fn big_endian_needs_the_right_byte_order() {
    if !(common::require_root()) {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let src = common::scratch();
    small_tree(src.path());
    let dir = common::scratch();
    let img = dir.path().join("be.img");
    mkfs(src.path(), &img, &["-e", "0x4000", "-b"]);
    expect_clean(&img, &["-b"], "BE with -b");
    expect_clean(&img, &[], "BE detected");
    // Forced to little endian, the image is not readable: errors, naming the right order.
    let o = fsck(&["-l", img.to_str().unwrap()]);
    assert_eq!(o.status, 4, "{}", o.stdout_text());
    assert!(o.stdout_text().contains("endian-mismatch"));
}

#[test]
fn wrong_erase_size_names_the_right_one() {
    if !(common::require_root()) {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let tree = common::tree(common::Kind::Small);
    let dir = common::scratch();
    let img = dir.path().join("64k.img");
    mkfs(tree.path(), &img, &["-e", "0x10000", "-l"]);
    let sum = dir.path().join("64k-sum.img");
    sumtool(&img, &sum, &["-e", "0x10000", "-l", "-p"]);
    for (es, img) in [("0x20000", &sum), ("0x4000", &img)] {
        let o = fsck(&["-e", es, img.to_str().unwrap()]);
        let out = o.stdout_text();
        assert_eq!(o.status, 4, "-e {es}: {out}");
        assert!(
            out.lines()
                .any(|l| l.starts_with("ERROR erase-size-mismatch") && l.contains("64 KiB")),
            "-e {es}: {out}"
        );
    }
}

fn counts(listing: &[serde_json::Value]) -> BTreeMap<&'static str, u64> {
    let mut m = BTreeMap::new();
    for e in listing {
        let k = match e["type"].as_str().unwrap() {
            "dir" => "dirs",
            "file" => "files",
            "symlink" => "symlinks",
            _ => "special",
        };
        *m.entry(k).or_insert(0) += 1;
        if k == "files" {
            *m.entry("file_bytes").or_insert(0) += e["size"].as_u64().unwrap();
        }
    }
    m
}

/// Every kernel-written image is consistent except the torn one; every CRC problem the kernel
/// logged is reported at its offset; the tree fsck walks is the one the kernel listed.
#[test]
fn kernel_fixtures() {
    for (img, doc) in fixture_images() {
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        let o = fsck(&["--json", img.to_str().unwrap()]);
        let j = json_of(&o);
        let findings = j["findings"].as_array().unwrap();
        let torn = doc["kind"] == "powercut-derived";
        if torn {
            assert_eq!(o.status, 4, "{name}: {j:#}");
            let f = findings
                .iter()
                .find(|f| f["code"] == "torn-node")
                .unwrap_or_else(|| panic!("{name}: no torn-node finding: {j:#}"));
            assert_eq!(f["severity"], "error");
            assert_eq!(f["offset"], 0xbe84);
            assert!(f["message"]
                .as_str()
                .unwrap()
                .contains("looks like an interrupted write (power cut)"));
        } else {
            assert_eq!(o.status, 0, "{name}: {j:#}");
            assert_eq!(j["summary"]["counts"]["warning"], 0, "{name}: {j:#}");
        }
        // A CRC problem the kernel logged is a finding at the offset it names.
        for m in doc["mount"]["kernel_messages"].as_array().unwrap() {
            let msg = m["msg"].as_str().unwrap();
            if !msg.starts_with("jffs2:") || !msg.contains("CRC") {
                continue;
            }
            let at = msg
                .split("0x")
                .skip(1)
                .find_map(|h| u64::from_str_radix(&h[..8.min(h.len())], 16).ok())
                .unwrap_or_else(|| panic!("{name}: no offset in {msg}"));
            assert!(
                findings
                    .iter()
                    .any(|f| f["offset"].as_u64() == Some(at) && f["severity"] == "error"),
                "{name}: the kernel logged {msg:?}, fsck has no error at 0x{at:08x}"
            );
        }
        // The tree: what the kernel listed.
        let want = counts(doc["listing"].as_array().unwrap());
        let t = &j["summary"]["tree"];
        for (k, v) in &want {
            assert_eq!(t[k].as_u64(), Some(*v), "{name}: {k}: {t}");
        }
        assert_eq!(j["summary"]["mount_ok"], doc["mount"]["mount_ok"], "{name}");
    }
}

/// `--kernel-log` prints what Linux printed mounting the fixture and listing it.
#[test]
fn kernel_log_equals_the_recorded_messages() {
    for (img, doc) in fixture_images() {
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        let o = fsck(&["--kernel-log", img.to_str().unwrap()]);
        let ours: Vec<String> = o.stdout_text().lines().map(str::to_string).collect();
        let kernel: Vec<String> = doc["mount"]["kernel_messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| normalize_dmesg(m["msg"].as_str().unwrap()))
            .collect();
        assert_eq!(ours, kernel, "{name}");
    }
}

/// The tree fsck sees in each fixture (the one `--compare` compares) is the one the kernel
/// listed: the listing is rebuilt on the host (names, types, modes, owners, sizes, targets,
/// device numbers, hard links, times) and `--compare` must find no difference other than the
/// contents of files, which the listing gives only as an md5 (fsck verifies every data node
/// itself; the fs tests compare the md5s).
#[test]
fn fixture_trees_compare_equal_to_the_kernel_listing() {
    if !(common::require_root()) {
        return;
    }
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    for (img, doc) in fixture_images() {
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        let dir = common::scratch();
        let root = dir.path().join("root");
        std::fs::create_dir(&root).unwrap();
        let listing = doc["listing"].as_array().unwrap();
        let mut first_link: BTreeMap<String, std::path::PathBuf> = BTreeMap::new();
        let cpath = |p: &std::path::Path| CString::new(p.as_os_str().as_bytes()).unwrap();
        for e in listing {
            let p = e["path"].as_str().unwrap();
            if p == "." {
                continue;
            }
            let hp = root.join(p);
            let mode = u32::from_str_radix(e["mode"].as_str().unwrap(), 8).unwrap();
            let c = cpath(&hp);
            match e["type"].as_str().unwrap() {
                "dir" => std::fs::create_dir_all(&hp).unwrap(),
                "symlink" => {
                    std::os::unix::fs::symlink(e["target"].as_str().unwrap(), &hp).unwrap()
                }
                "file" => {
                    let group = e["links"]
                        .as_array()
                        .map(|l| l[0].as_str().unwrap().to_string());
                    match group.as_ref().and_then(|g| first_link.get(g)) {
                        Some(first) => std::fs::hard_link(first, &hp).unwrap(),
                        None => {
                            let f = std::fs::File::create(&hp).unwrap();
                            f.set_len(e["size"].as_u64().unwrap()).unwrap();
                            if let Some(g) = group {
                                first_link.insert(g, hp.clone());
                            }
                        }
                    }
                }
                "fifo" => {
                    // SAFETY: valid C string.
                    unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
                }
                t @ ("char" | "block") => {
                    let (ma, mi) = e["rdev"].as_str().unwrap().split_once(':').unwrap();
                    let kind = if t == "char" {
                        libc::S_IFCHR
                    } else {
                        libc::S_IFBLK
                    };
                    let dev = libc::makedev(ma.parse().unwrap(), mi.parse().unwrap());
                    // SAFETY: valid C string.
                    unsafe { libc::mknod(c.as_ptr(), kind | 0o600, dev) };
                }
                _ => continue,
            }
            // SAFETY: valid C string.
            unsafe {
                libc::lchown(
                    c.as_ptr(),
                    e["uid"].as_u64().unwrap() as u32,
                    e["gid"].as_u64().unwrap() as u32,
                );
                if e["type"] != "symlink" {
                    libc::chmod(c.as_ptr(), mode);
                }
            }
        }
        // Times last (children change their directory's).
        for e in listing.iter().rev() {
            let p = e["path"].as_str().unwrap();
            if p != "." {
                common::set_mtime(&root.join(p), e["mtime"].as_i64().unwrap());
            }
        }
        let o = fsck(&[
            "--json",
            "--compare",
            root.to_str().unwrap(),
            img.to_str().unwrap(),
        ]);
        let j = json_of(&o);
        let diffs: Vec<&serde_json::Value> = j["differences"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["what"] != "content")
            .collect();
        assert!(diffs.is_empty(), "{name}: {diffs:#?}");
    }
}
