//! Whole images: the kernel-written fixtures against the listings Linux showed, and
//! `mkfs.jffs2` images of a generated tree against the tree itself.

use std::collections::{BTreeMap, HashMap};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;
use crate::fs::{Md5, TreeOptions};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kernel")
}

/// A kernel message as the harness recorded it, in our form (`jffs2: ` stripped, pid as
/// `<pid>`).
fn normalize(msg: &[u8]) -> Option<String> {
    let s = String::from_utf8_lossy(msg);
    let s = s.strip_prefix("jffs2: ")?;
    let mut out = String::new();
    let mut rest = s;
    if let Some(i) = rest.find(": (") {
        if let Some(j) = rest[i + 3..].find(')') {
            if rest[i + 3..i + 3 + j].chars().all(|c| c.is_ascii_digit()) {
                out.push_str(&rest[..i + 3]);
                out.push_str("<pid>");
                rest = &rest[i + 3 + j..];
            }
        }
    }
    out.push_str(rest);
    Some(out)
}

/// Every kernel-written fixture: our tree equals the listing of the kernel's read-only mount,
/// field by field (root and directory sizes and link counts included), and the readinode
/// messages we would print appear in the kernel's log.
#[test]
fn kernel_fixtures_match_listings() {
    let mut checked = 0;
    let mut failures = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(fixtures())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    for json_path in names {
        let j = Json::parse(&std::fs::read_to_string(&json_path).unwrap());
        let image_name =
            String::from_utf8(j.get("image").unwrap().str().unwrap().to_vec()).unwrap();
        // The images are not in git (`*.img` is ignored); the kernel suite regenerates them.
        let Ok(image) = std::fs::read(fixtures().join(&image_name)) else {
            eprintln!("{image_name}: image not present, skipped");
            continue;
        };
        let es = j.get("erase_size").unwrap().num().unwrap() as u32;
        let opened = opened(&image, geometry(LE, es));
        let (fs, _) = opened.salvage();
        let tree = fs.tree(&TreeOptions::listing());
        let expected = listing_from_json(j.get("listing").unwrap());
        let diffs = compare_listings(
            &expected,
            &tree.listing(),
            Compare {
                root: true,
                dir_size_nlink: true,
                xattrs: true,
            },
        );
        for d in diffs {
            failures.push(format!("{image_name}: {d}"));
        }
        // Messages of reading every reachable inode must be among what the kernel printed.
        let kernel: Vec<String> = j
            .get("mount")
            .and_then(|m| m.get("kernel_messages"))
            .map(|m| {
                m.arr()
                    .iter()
                    .filter_map(|e| normalize(e.get("msg")?.str()?))
                    .collect()
            })
            .unwrap_or_default();
        let mut ours: Vec<String> = fs.kernel_log().iter().map(|m| m.text.clone()).collect();
        let mut inos: Vec<u32> = tree.entries.iter().map(|e| e.ino).collect();
        inos.sort();
        inos.dedup();
        for ino in inos {
            if let Ok(i) = fs.read_inode(ino) {
                ours.extend(i.log.iter().map(|m| m.text.clone()));
            }
        }
        for m in ours {
            if !kernel.contains(&m) {
                failures.push(format!(
                    "{image_name}: we would log {m:?}, the kernel did not"
                ));
            }
        }
        checked += 1;
    }
    eprintln!("{checked} kernel fixtures compared");
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn cstr(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

/// The host tree in listing form (like `harness.py list-host`).
fn list_host(root: &Path) -> Vec<ListingEntry> {
    let mut out = Vec::new();
    let mut by_ino: HashMap<(u64, u64), Vec<Vec<u8>>> = HashMap::new();
    let mut stack = vec![(root.to_path_buf(), b".".to_vec())];
    while let Some((p, rel)) = stack.pop() {
        let m = std::fs::symlink_metadata(&p).unwrap();
        let ft = m.file_type();
        let mode = m.mode();
        let kind = match mode & 0o170000 {
            0o040000 => "dir",
            0o100000 => "file",
            0o120000 => "symlink",
            0o010000 => "fifo",
            0o020000 => "char",
            0o060000 => "block",
            _ => "socket",
        };
        let md5 = ft.is_file().then(|| {
            let mut h = Md5::new();
            h.update(&std::fs::read(&p).unwrap());
            Md5::hex(&h.finish())
        });
        let rdev = matches!(kind, "char" | "block").then(|| {
            let d = m.rdev();
            let major = ((d >> 8) & 0xfff) | ((d >> 32) & !0xfff);
            let minor = (d & 0xff) | ((d >> 12) & !0xff);
            format!("{major}:{minor}")
        });
        let mut xattrs = BTreeMap::new();
        let c = cstr(&p);
        let mut names = vec![0u8; 65536];
        // SAFETY: valid C string and buffer of the given length.
        let n = unsafe { libc::llistxattr(c.as_ptr(), names.as_mut_ptr().cast(), names.len()) };
        if n > 0 {
            for name in names[..n as usize]
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
            {
                let cn = CString::new(name).unwrap();
                let mut v = vec![0u8; 65536];
                // SAFETY: as above.
                let vl = unsafe {
                    libc::lgetxattr(c.as_ptr(), cn.as_ptr(), v.as_mut_ptr().cast(), v.len())
                };
                let val = if vl < 0 {
                    "ERROR".to_string()
                } else {
                    hex(&v[..vl as usize])
                };
                xattrs.insert(String::from_utf8_lossy(name).into_owned(), val);
            }
        }
        if kind != "dir" {
            by_ino
                .entry((m.dev(), m.ino()))
                .or_default()
                .push(rel.clone());
        }
        out.push((
            (m.dev(), m.ino()),
            ListingEntry {
                path: rel.clone(),
                kind: kind.to_string(),
                mode: format!("{:04o}", mode & 0o7777),
                uid: m.uid(),
                gid: m.gid(),
                size: m.size(),
                nlink: m.nlink() as u32,
                mtime: m.mtime() as u32,
                md5,
                target: ft.is_symlink().then(|| {
                    std::fs::read_link(&p)
                        .unwrap()
                        .as_os_str()
                        .as_bytes()
                        .to_vec()
                }),
                rdev,
                links: None,
                xattrs,
            },
        ));
        if ft.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                let e = e.unwrap();
                let name = e.file_name().as_bytes().to_vec();
                let r = if rel == b"." {
                    name
                } else {
                    [rel.as_slice(), b"/", &name].concat()
                };
                stack.push((e.path(), r));
            }
        }
    }
    out.into_iter()
        .map(|(k, mut e)| {
            if let Some(g) = by_ino.get(&k).filter(|g| g.len() > 1) {
                let mut g = g.clone();
                g.sort();
                e.links = Some(g);
            }
            e
        })
        .collect()
}

/// A tree with every kind of entry mkfs.jffs2 handles. Returns whether xattrs could be set.
fn make_tree(root: &Path) -> bool {
    let w = |p: &str, d: &[u8], mode: u32| {
        let p = root.join(p);
        std::fs::write(&p, d).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    std::fs::create_dir_all(root.join("etc/deep/deeper")).unwrap();
    std::fs::create_dir_all(root.join("home/user")).unwrap();
    std::fs::create_dir_all(root.join("empty")).unwrap();
    w("etc/config", b"key=value\n", 0o644);
    w("empty-file", b"", 0o600);
    let mut seed = 7u32;
    let random: Vec<u8> = (0..30000)
        .map(|_| {
            seed ^= seed << 13;
            seed ^= seed >> 17;
            seed ^= seed << 5;
            seed as u8
        })
        .collect();
    w("home/user/random.bin", &random, 0o640);
    let text: Vec<u8> = b"All work and no play makes Jack a dull boy.\n"
        .iter()
        .cycle()
        .take(200_000)
        .copied()
        .collect();
    w("etc/deep/deeper/big.txt", &text, 0o644);
    w("setuid-tool", b"#!/bin/sh\n", 0o4755);
    w("odd name \u{e9}\t!", b"odd", 0o644);
    std::fs::hard_link(root.join("etc/config"), root.join("home/config-link")).unwrap();
    std::os::unix::fs::symlink("../etc/config", root.join("home/symlink")).unwrap();
    let fifo = cstr(&root.join("fifo"));
    // SAFETY: valid C string.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    let owned = cstr(&root.join("home/user"));
    // SAFETY: valid C string.
    unsafe { libc::lchown(owned.as_ptr(), 1000, 1000) };
    let f = cstr(&root.join("etc/config"));
    let name = CString::new("user.color").unwrap();
    // SAFETY: valid C strings and buffer.
    let ok =
        unsafe { libc::lsetxattr(f.as_ptr(), name.as_ptr(), b"blue".as_ptr().cast(), 4, 0) } == 0;
    // An extended POSIX ACL (named user and mask, so the host keeps it), in the
    // posix_acl_xattr format: mkfs.jffs2 converts it to JFFS2's, Linux converts it back.
    let mut acl = 2u32.to_le_bytes().to_vec();
    for (tag, perm, id) in [
        (0x01u16, 6u16, u32::MAX),
        (0x02, 6, 1000),
        (0x04, 4, u32::MAX),
        (0x10, 6, u32::MAX),
        (0x20, 4, u32::MAX),
    ] {
        acl.extend_from_slice(&tag.to_le_bytes());
        acl.extend_from_slice(&perm.to_le_bytes());
        acl.extend_from_slice(&id.to_le_bytes());
    }
    let acl_name = CString::new("system.posix_acl_access").unwrap();
    let g = cstr(&root.join("home/user/random.bin"));
    // SAFETY: valid C strings and buffer. Failure (no ACL support) only drops the ACL.
    let acl_ok = unsafe {
        libc::lsetxattr(
            g.as_ptr(),
            acl_name.as_ptr(),
            acl.as_ptr().cast(),
            acl.len(),
            0,
        )
    };
    eprintln!("host ACL set: {}", acl_ok == 0);
    // Timestamps last: everything the same second, like the kernel fixtures' tree.
    for e in walk(root) {
        let c = cstr(&e);
        let t = [
            libc::timespec {
                tv_sec: 1_700_000_000,
                tv_nsec: 0,
            },
            libc::timespec {
                tv_sec: 1_700_000_000,
                tv_nsec: 0,
            },
        ];
        // SAFETY: valid C string and two timespecs.
        unsafe {
            libc::utimensat(
                libc::AT_FDCWD,
                c.as_ptr(),
                t.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
            )
        };
    }
    ok
}

fn walk(root: &Path) -> Vec<PathBuf> {
    let mut out = vec![root.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        let p = out[i].clone();
        if std::fs::symlink_metadata(&p).unwrap().is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                out.push(e.unwrap().path());
            }
        }
        i += 1;
    }
    out.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    out
}

/// mkfs.jffs2 images of a generated tree, in several geometries and compressor settings:
/// the tree we show equals the source directory.
#[test]
fn mkfs_images_equal_their_source_tree() {
    if Command::new("mkfs.jffs2")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("mkfs.jffs2 not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root");
    std::fs::create_dir(&root).unwrap();
    let xattrs = make_tree(&root);
    let host = list_host(&root);
    let variants: [(&[&str], Endian, u32); 4] = [
        (&["-l", "-e", "16KiB"], Endian::Little, 16384),
        (
            &["-b", "-e", "64KiB", "-X", "lzo", "-m", "size"],
            Endian::Big,
            65536,
        ),
        (
            &["-l", "-n", "-e", "32KiB", "-s", "8192"],
            Endian::Little,
            32768,
        ),
        (
            &["-l", "-e", "16KiB", "-x", "zlib", "-x", "rtime"],
            Endian::Little,
            16384,
        ),
    ];
    let mut failures = Vec::new();
    for (args, e, es) in variants {
        let img = dir.path().join("img");
        let mut cmd = Command::new("mkfs.jffs2");
        cmd.args(args)
            .arg("-r")
            .arg(&root)
            .arg("-o")
            .arg(&img)
            .arg("--pad=1048576");
        if xattrs {
            cmd.arg("--with-xattr");
        }
        let st = cmd.status().unwrap();
        assert!(st.success(), "mkfs.jffs2 {args:?}");
        let image = std::fs::read(&img).unwrap();
        // `-n` writes no cleanmarkers: the image is read with none expected (cleanmarker size
        // 0, as detected), which changes the block accounting (§3.4), not the tree compared.
        let g = Geometry {
            cleanmarker_size: if args.contains(&"-n") { 0 } else { 12 },
            ..geometry(e, es)
        };
        let opened = opened(&image, g);
        let (fs, _) = opened.salvage();
        let tree = fs.tree(&TreeOptions::check());
        assert!(tree.problems.is_empty(), "{args:?}: {:?}", tree.problems);
        for d in compare_listings(
            &host,
            &tree.listing(),
            Compare {
                root: false,
                dir_size_nlink: false,
                xattrs,
            },
        ) {
            failures.push(format!("{args:?}: {d}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    if !xattrs {
        eprintln!("xattrs could not be set on the host: compared without them");
    }
}
