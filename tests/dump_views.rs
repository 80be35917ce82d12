//! `jffs2-dump --json / --summary / --blocks / --map / --info / --list` and `jffs2reader`:
//!
//! * `--json` parses, and lists exactly the nodes Debian's `jffs2dump -c -v` lists on
//!   mkfs.jffs2 and sumtool images (both byte orders); on kernel-written images it marks the
//!   obsolete nodes and gives the kernel's verdicts;
//! * `--info`'s mkfs.jffs2 command line, run on the tree `--extract` made, rebuilds
//!   mkfs.jffs2 images byte for byte (`-f`, default page size; cleanmarkers or not, padding,
//!   compressor choices, xattrs, devices, both byte orders);
//! * `--blocks`, `--summary` and `--map` run on every kernel fixture; the SVG is well formed
//!   and has one square per erase block;
//! * `--list` and `jffs2reader` listings (jffs2reader's own output where it is right).
//!
//! Needs root and Debian's mtd-utils (fails loudly without them).

mod common;
#[path = "common/dump.rs"]
mod dump_common;
#[path = "common/extract.rs"]
mod extract_common;

use std::ffi::OsStr;
use std::path::Path;

use common::{require_root, scratch};
use extract_common::*;
use jffs2::format::{dt, Endian};

fn json_of(image: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args: Vec<&OsStr> = vec![OsStr::new("--json")];
    args.extend(extra.iter().map(OsStr::new));
    args.push(image.as_os_str());
    let o = dump(&args);
    assert_eq!(o.code, Some(0), "--json {}: {}", image.display(), o.stderr);
    serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("--json {} does not parse: {e}", image.display()))
}

fn node_offsets(j: &serde_json::Value) -> Vec<u64> {
    j["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| n["offset"].as_u64().expect("offset"))
        .collect()
}

#[test]
fn json_lists_the_nodes_jffs2dump_lists() {
    if !require_root() {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let tree = dump_common::plain_tree(true);
    let d = scratch();
    for (what, args, sum) in [
        ("le", vec!["-l", "-e", "16KiB", "--with-xattr"], None),
        ("be-n", vec!["-b", "-e", "64KiB", "-n"], None),
        (
            "le-sum",
            vec!["-l", "-e", "16KiB"],
            Some(vec!["-l", "-e", "16KiB"]),
        ),
        (
            "be-sum-n",
            vec!["-b", "-e", "32KiB", "-n"],
            Some(vec!["-b", "-e", "32KiB", "-n"]),
        ),
    ] {
        let mut img = dump_common::mkfs(tree.path(), &args);
        if let Some(s) = sum {
            img = dump_common::sumtool(&img, &s);
        }
        let path = dump_common::put(d.path(), what, &img);
        let big = what.starts_with("be");
        let j = json_of(&path, &[]);
        let want: Vec<u64> = dump_common::node_offsets(&path, big)
            .into_iter()
            .map(|(o, _)| o)
            .collect();
        assert_eq!(
            node_offsets(&j),
            want,
            "{what}: node offsets differ from jffs2dump -c -v"
        );
        assert_eq!(j["endian"], if big { "big" } else { "little" });
        for n in j["nodes"].as_array().unwrap() {
            assert_eq!(n["hdr_crc"]["ok"], true, "{what}: {n}");
            assert_eq!(n["crcs_ok"], true, "{what}: {n}");
            assert!(n["kernel"]["verdict"].is_string(), "{what}: {n}");
            match n["type"].as_str().unwrap() {
                "inode" => assert!(n["fields"]["ino"].as_u64().is_some()),
                "dirent" => assert!(n["fields"]["name"].is_string()),
                "summary" => assert_eq!(
                    n["records"].as_array().map(Vec::len),
                    n["fields"]["sum_num"].as_u64().map(|v| v as usize)
                ),
                _ => {}
            }
        }
        if what == "le" {
            let x = j["nodes"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|n| n["type"] == "xattr")
                .count();
            assert!(x > 0, "xattr nodes in the JSON");
        }
    }
}

#[test]
fn json_on_kernel_images_shows_superseded_nodes_and_verdicts() {
    for img in dump_common::kernel_images() {
        let j = json_of(&img, &[]);
        let nodes = j["nodes"].as_array().unwrap();
        assert!(!nodes.is_empty());
        let obsolete: Vec<_> = nodes.iter().filter(|n| n["accurate"] == false).collect();
        for n in &obsolete {
            assert!(
                matches!(
                    n["kernel"]["verdict"].as_str(),
                    Some("dirt" | "not-read" | "obsolete")
                ),
                "{}: {n}",
                img.display()
            );
        }
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        // Superseded nodes the build obsoletes (the kernel rewrote files, renamed, deleted).
        if [
            "dirty-gc",
            "dirty-summary",
            "dirty-workload",
            "powercut-rename",
        ]
        .iter()
        .any(|p| name.starts_with(p))
        {
            assert!(
                nodes.iter().any(|n| n["kernel"]["verdict"] == "obsolete"),
                "{name}: superseded nodes"
            );
        }
        if name.contains("torn") {
            let bad = nodes.iter().filter(|n| n["crcs_ok"] == false).count();
            assert!(bad > 0, "{name}: the torn node has a wrong CRC");
        }
    }
}

#[test]
fn json_survives_hostile_images() {
    // An obsoleted node (ACCURATE bit cleared on flash, header CRC of the original type).
    let mut gone = Vec::new();
    jffs2::format::DirentNode {
        pino: 1,
        version: 5,
        ino: 3,
        nsize: 4,
        dtype: dt::REG,
        ..Default::default()
    }
    .encode(Endian::Little, b"gone", &mut gone);
    gone[3] &= !0x20;
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::REG, b"a/b\xff")
        .file(2, b"x")
        .raw(gone);
    let mut img = c.build();
    // Junk, a bad header, a node running past the end.
    img.extend_from_slice(&[0x12, 0x34, 0x56, 0x78]);
    img.extend_from_slice(&[0x85, 0x19, 0x02, 0xe0, 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0]);
    let mut n = Vec::new();
    jffs2::format::InodeNode {
        ino: 9,
        ..Default::default()
    }
    .encode(Endian::Little, &[1; 64], &mut n);
    img.extend_from_slice(&n[..80]);
    let d = scratch();
    let p = dump_common::put(d.path(), "h.img", &img);
    let j = json_of(&p, &["--erase-size", "16KiB"]);
    assert!(j["gaps"]
        .as_array()
        .unwrap()
        .iter()
        .any(|g| g["kind"] == "junk"));
    let last = j["nodes"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["truncated"], true, "{last}");
    assert_eq!(last["data_crc"]["computed"], serde_json::Value::Null);
    let names: Vec<_> = j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|n| n["fields"]["name_hex"].as_str())
        .collect();
    assert_eq!(names, vec!["612f62ff"]);
    let gone: Vec<_> = j["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["accurate"] == false)
        .collect();
    assert_eq!(gone.len(), 1, "{j}");
    assert_eq!(gone[0]["kernel"]["verdict"], "dirt");
    assert_eq!(gone[0]["kernel"]["dirt"], "obsolete");
    assert_eq!(gone[0]["fields"]["name"], "gone");
}

/// The "rebuild with:" command of `--info`, run with mtd-utils' mkfs.jffs2 writing `out`.
fn rebuild(info: &str, out: &Path) -> Vec<u8> {
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("rebuild with:"))
        .unwrap_or_else(|| panic!("no command line in:\n{info}"))
        .trim();
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("mkfs.jffs2"));
    let args: Vec<String> = words
        .map(|w| {
            if w == "IMAGE" {
                out.display().to_string()
            } else {
                w.to_string()
            }
        })
        .collect();
    let o = run_prog(dump_common::mkfs_tool(), &args);
    assert_eq!(o.code, Some(0), "mkfs.jffs2 {args:?}: {}", o.stderr);
    std::fs::read(out).expect("rebuilt image")
}

#[test]
fn info_command_line_rebuilds_the_image_byte_for_byte() {
    if !require_root() {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    let tree = dump_common::plain_tree(true);
    // Devices and a socket too (the tree is extracted as root).
    for (name, kind, dev) in [
        ("null", libc::S_IFCHR, (1, 3)),
        ("sda1", libc::S_IFBLK, (8, 1)),
    ] {
        let p =
            std::ffi::CString::new(tree.path().join(name).as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid path.
        let rc = unsafe { libc::mknod(p.as_ptr(), kind | 0o640, libc::makedev(dev.0, dev.1)) };
        assert_eq!(rc, 0, "mknod {name}");
    }
    std::os::unix::net::UnixListener::bind(tree.path().join("sock")).expect("socket");
    let d = scratch();
    let mut failures = Vec::new();
    for (what, args) in [
        ("le-64k-cm", vec!["-l", "-e", "64KiB", "-f"]),
        ("be-128k-n-p", vec!["-b", "-e", "128KiB", "-n", "-f", "-p"]),
        (
            "le-16k-rtime-pad",
            vec!["-l", "-e", "16KiB", "-f", "-x", "zlib", "--pad=0x100000"],
        ),
        (
            "le-32k-lzo-n",
            vec!["-l", "-e", "32KiB", "-n", "-f", "-X", "lzo"],
        ),
        ("be-64k-none", vec!["-b", "-e", "64KiB", "-f", "-m", "none"]),
        (
            "le-64k-xattr",
            vec!["-l", "-e", "64KiB", "-f", "--with-xattr"],
        ),
        (
            "le-8k-n-pad",
            vec!["-l", "-e", "8KiB", "-n", "-f", "--pad=300000"],
        ),
    ] {
        let a = dump_common::mkfs(tree.path(), &args);
        let img = dump_common::put(d.path(), &format!("{what}.img"), &a);
        let root = d.path().join(format!("{what}.tree"));
        let o = dump(&[
            OsStr::new("--info"),
            OsStr::new("--extract"),
            root.as_os_str(),
            img.as_os_str(),
        ]);
        assert_eq!(o.code, Some(0), "{what}: {}", o.stderr);
        let info = o.text();
        let out = d.path().join(format!("{what}.rebuilt"));
        let b = rebuild(&info, &out);
        if a != b {
            let why =
                common::explain_difference(&img, &out, what.starts_with("be")).unwrap_or_default();
            failures.push(format!("{what}: rebuilt image differs\n{info}\n{why}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn info_describes_kernel_images() {
    for img in dump_common::kernel_images() {
        let o = dump(&[OsStr::new("--info"), OsStr::new("-v"), img.as_os_str()]);
        assert_eq!(o.code, Some(0), "{}: {}", img.display(), o.stderr);
        let t = o.text();
        for key in [
            "byte order:       little endian",
            "erase size:",
            "page size:        4096",
            "compressors:",
            "inodes:",
            "rebuild with:     mkfs.jffs2",
            "evidence:",
        ] {
            assert!(t.contains(key), "{}: no {key:?} in\n{t}", img.display());
        }
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(img.with_extension("json")).unwrap())
                .unwrap();
        let es = doc["erase_size"].as_u64().unwrap();
        assert!(
            t.contains(&format!("(0x{es:x} bytes")),
            "{}: erase size {es} not detected:\n{t}",
            img.display()
        );
    }
}

/// Checks that every element of an SVG is closed (a tiny XML well-formedness check).
fn well_formed(svg: &str) -> Result<(), String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = svg;
    while let Some(i) = rest.find('<') {
        rest = &rest[i + 1..];
        let j = rest.find('>').ok_or("unterminated tag")?;
        let tag = &rest[..j];
        rest = &rest[j + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
        } else if !tag.ends_with('/') {
            stack.push(tag.split_whitespace().next().unwrap_or("").to_string());
        }
    }
    if stack.is_empty() {
        Ok(())
    } else {
        Err(format!("unclosed: {stack:?}"))
    }
}

#[test]
fn blocks_summary_and_map_on_every_kernel_fixture() {
    let d = scratch();
    for img in dump_common::kernel_images() {
        let name = img.file_name().unwrap().to_string_lossy().into_owned();
        let svg = d.path().join(format!("{name}.svg"));
        let o = dump(&[
            OsStr::new("--blocks"),
            OsStr::new("--summary"),
            OsStr::new("--map"),
            svg.as_os_str(),
            img.as_os_str(),
        ]);
        assert_eq!(o.code, Some(0), "{name}: {}", o.stderr);
        let t = o.text();
        let doc: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(img.with_extension("json")).unwrap())
                .unwrap();
        let blocks = doc["size"].as_u64().unwrap() / doc["erase_size"].as_u64().unwrap();
        let rows = t
            .lines()
            .filter(|l| {
                l.trim_start().starts_with(|c: char| c.is_ascii_digit()) && l.contains(" 0x")
            })
            .count() as u64;
        assert_eq!(rows, blocks, "{name}: --blocks rows\n{t}");
        assert!(t.contains("blocks: "), "{name}");
        assert!(
            t.contains(&format!("of {blocks} blocks carry a summary")),
            "{name}\n{t}"
        );
        if name.contains("summary") {
            assert!(t.contains("kernel: used"), "{name}: summaries used\n{t}");
            assert!(t.contains("    dirent  0x"), "{name}: summary records\n{t}");
        }
        let s = std::fs::read_to_string(&svg).expect("svg written");
        assert!(s.starts_with("<?xml"), "{name}");
        well_formed(&s).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            s.matches("<g><title>block ").count() as u64,
            blocks,
            "{name}"
        );
    }
}

#[test]
fn list_shows_what_linux_shows() {
    if !common::require_mtd_utils() {
        return;
    }
    let tree = dump_common::plain_tree(false);
    let img = dump_common::mkfs(tree.path(), &["-l", "-e", "16KiB"]);
    let d = scratch();
    let path = dump_common::put(d.path(), "img", &img);
    let o = dump(&[OsStr::new("--list"), path.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    let t = o.text();
    let line = |suffix: &str| {
        t.lines()
            .find(|l| l.ends_with(suffix))
            .unwrap_or_else(|| panic!("no line ending {suffix:?} in\n{t}"))
            .to_string()
    };
    assert!(line(" .").contains("drwxr-xr-x"));
    assert!(line(" deep/hard").contains(" 2 "), "hard link count");
    assert!(line(" names/link -> ../text/t3").starts_with(' '));
    assert!(line(" rand/r8").contains(" 70000 2020-09-13 12:26:40 "));
    assert!(line(" fifo").contains("prw-r--r--"));
    assert_eq!(
        t.lines().count(),
        dump_common::node_offsets(&path, false)
            .iter()
            .filter(|(_, l)| l.contains("Dirent"))
            .count()
            + 1,
        "one line per entry and the root"
    );
}

#[test]
fn jffs2reader_lists_like_jffs2reader_where_it_is_right() {
    if !(common::require_root()) {
        return;
    }
    if !common::require_mtd_utils() {
        return;
    }
    // Single-node files, no subdirectories, no hard links: where jffs2reader is right (but
    // for the first entry, which it cannot see).
    let tree = scratch();
    for (i, n) in ["alpha", "beta", "gamma", "delta"].iter().enumerate() {
        std::fs::write(tree.path().join(n), vec![b'x'; 100 * (i + 1)]).unwrap();
    }
    std::os::unix::fs::symlink("alpha", tree.path().join("link")).unwrap();
    let img = dump_common::mkfs(tree.path(), &["-e", "16KiB"]);
    let d = scratch();
    let path = dump_common::put(d.path(), "img", &img);
    let theirs = run_prog(
        &common::mtd_tool("jffs2reader"),
        &[path.as_os_str(), OsStr::new("-d"), OsStr::new("/")],
    );
    let ours = run_prog(
        ours_as_reader(),
        &[path.as_os_str(), OsStr::new("-d"), OsStr::new("/")],
    );
    assert_eq!(ours.code, Some(0), "{}", ours.stderr);
    let ours_text = ours.text();
    let mut ours_lines: Vec<&str> = ours_text.lines().collect();
    // mkfs.jffs2 writes "alpha" first, as dirent version 0, which jffs2reader misses.
    assert!(ours_lines[0].ends_with("/alpha "), "{ours_text}");
    ours_lines.remove(0);
    let theirs_text = theirs.text();
    let mut theirs_lines: Vec<&str> = theirs_text.lines().collect();
    theirs_lines.sort();
    ours_lines.sort();
    assert_eq!(
        ours_lines, theirs_lines,
        "ours:\n{ours_text}\ntheirs:\n{theirs_text}"
    );
    // No options: the whole tree, recursively.
    let all = run_prog(ours_as_reader(), &[path.as_os_str()]);
    assert_eq!(all.code, Some(0));
    assert_eq!(all.text().lines().count(), 5);
    assert!(
        all.text()
            .contains("lrwxrwxrwx 1    0        0                5 /link  -> alpha"),
        "{}",
        all.text()
    );
    let missing = run_prog(
        ours_as_reader(),
        &[path.as_os_str(), OsStr::new("-d"), OsStr::new("/nope")],
    );
    assert_eq!(missing.code, Some(1));
    assert!(
        missing.stderr.contains("/nope: No such file or directory"),
        "{}",
        missing.stderr
    );
}

#[test]
fn json_and_cat_print_alone() {
    let mut c = Craft::new(Endian::Little, 16384);
    c.dirent(1, 1, 2, dt::REG, b"f").file(2, b"x");
    let d = scratch();
    let p = dump_common::put(d.path(), "i.img", &c.build());
    let o = dump(&[OsStr::new("--json"), OsStr::new("--info"), p.as_os_str()]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("alone"), "{}", o.stderr);
    let o = dump(&[OsStr::new("--info"), OsStr::new("--blocks"), p.as_os_str()]);
    assert_eq!(o.code, Some(0), "{}", o.stderr);
    // Not a JFFS2 image.
    let junk = dump_common::put(d.path(), "junk", &[0x55u8; 4096]);
    let o = dump(&[OsStr::new("--list"), junk.as_os_str()]);
    assert_eq!(o.code, Some(1));
    assert!(o.stderr.contains("not a JFFS2 image"), "{}", o.stderr);
}

/// The value of attribute `name` of the `<svg>` element.
fn svg_attr(svg: &str, name: &str) -> u32 {
    let tag = &svg[svg.find("<svg ").expect("<svg>")..];
    let at = tag.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
    tag[at..at + tag[at..].find('"').unwrap()].parse().unwrap()
}

/// The share after `key ` in `text` up to `%` (`used 0.4%`, `used 3.1 KiB (0.4%)`).
fn share(text: &str, key: &str) -> String {
    let at = text
        .find(&format!("{key} "))
        .unwrap_or_else(|| panic!("{key} in {text}"));
    let rest = &text[at..];
    let end = rest.find('%').unwrap();
    let start = rest[..end]
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap();
    rest[start + 1..=end].to_string()
}

#[test]
fn map_renders_with_numbered_blocks_and_fsck_shares() {
    if !common::require_mtd_utils() || !common::skip::program("rsvg-convert", "librsvg2-bin") {
        return;
    }
    let tree = dump_common::plain_tree(false);
    let d = scratch();
    // A small image without cleanmarkers and one of 600 blocks with them.
    for (name, args, blocks) in [
        ("small", vec!["-n", "-e", "16KiB", "--pad=0xa0000"], 40u32),
        ("big", vec!["-e", "16KiB", "--pad=0x960000"], 600),
    ] {
        let img = dump_common::put(d.path(), name, &dump_common::mkfs(tree.path(), &args));
        let svg_path = d.path().join(format!("{name}.svg"));
        let o = dump(&[OsStr::new("--map"), svg_path.as_os_str(), img.as_os_str()]);
        assert_eq!(o.code, Some(0), "{name}: {}", o.stderr);
        let svg = std::fs::read_to_string(&svg_path).unwrap();
        // Every square carries its number; each row starts with its first block and offset.
        let numbers: Vec<u32> = svg
            .split(r#"<text class="block""#)
            .skip(1)
            .map(|t| {
                let t = &t[t.find('>').unwrap() + 1..];
                t[..t.find('<').unwrap()].parse().unwrap()
            })
            .collect();
        assert_eq!(numbers, (0..blocks).collect::<Vec<_>>(), "{name}");
        assert!(svg.contains(">0  0x00000000</text>"), "{name}");
        if blocks == 600 {
            assert!(
                svg.contains(">576  0x00900000</text>"),
                "{name}: row labels"
            );
        }
        assert!(svg.contains("<title>block 7 at 0x0001c000: "), "{name}");
        // Only the categories that occur: free blocks of an image without cleanmarkers are
        // erased, not "cleanmarker only".
        let no_cm = args.contains(&"-n");
        assert_eq!(svg.contains("free (cleanmarker only)"), !no_cm, "{name}");
        assert_eq!(
            svg.contains("the image has no cleanmarkers"),
            no_cm,
            "{name}"
        );
        assert!(!svg.contains("all dirty"), "{name}");
        // The shares are the ones jffs2-fsck prints.
        let f = run_prog(
            Path::new(env!("CARGO_BIN_EXE_jffs2-fsck")),
            &[img.as_os_str()],
        );
        let space = f.text();
        let space = space.lines().find(|l| l.contains("space:")).unwrap();
        for key in ["used", "dirty", "free"] {
            assert_eq!(share(&svg, key), share(space, key), "{name} {key}: {space}");
        }
        // It renders, at the size it says.
        let png = d.path().join(format!("{name}.png"));
        let r = run_prog(
            &common::skip::find_program("rsvg-convert", "librsvg2-bin").unwrap(),
            &[OsStr::new("-o"), png.as_os_str(), svg_path.as_os_str()],
        );
        assert_eq!(r.code, Some(0), "{name}: rsvg-convert: {}", r.stderr);
        let p = std::fs::read(&png).unwrap();
        assert_eq!(&p[1..4], b"PNG");
        let be = |i: usize| u32::from_be_bytes(p[i..i + 4].try_into().unwrap());
        assert_eq!(
            (be(16), be(20)),
            (svg_attr(&svg, "width"), svg_attr(&svg, "height")),
            "{name}"
        );
        assert!(be(16) >= 600, "{name}: {} px wide", be(16));
    }
}
