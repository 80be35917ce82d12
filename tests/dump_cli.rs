//! The command line of `jffs2-dump` / `jffs2dump`: jffs2dump's options, grammar, messages
//! and exit codes, compared with Debian's jffs2dump where we behave the same, and our
//! documented differences where we do not (`src/cli/dump.rs`); `-e` output written
//! atomically; `-d/-o` OOB peeling; hostile images that must neither hang nor panic.

mod common;
#[path = "common/dump.rs"]
mod dump_common;

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{scratch, Rng};
use dump_common::*;

fn args(v: &[&str]) -> Vec<OsString> {
    v.iter().map(OsString::from).collect()
}

/// glibc prefixes its getopt messages with argv[0] as given.
fn normalize_prog(s: &str) -> String {
    s.replace(&reference().display().to_string(), "jffs2dump")
        .replace(&ours_as_jffs2dump().display().to_string(), "jffs2dump")
}

/// A small clean image.
fn image(dir: &Path) -> std::path::PathBuf {
    put(dir, "img", &mkfs(&rootfs(), &["-e", "16KiB", "-l"]))
}

#[test]
fn usage_and_help_like_jffs2dump_under_its_name() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let img = image(dir.path());
    let img = img.to_str().unwrap();
    for case in [
        vec!["-h"],
        vec!["--help"],
        vec!["--he"],
        vec![],
        vec![img, img],
        vec!["-k", img],
        vec!["--nope", img],
        vec!["-c", "--recalccrc"],
        // --recalccrc "requires an argument" and eats -e: two operands, help, exit 0.
        vec!["--recalccrc", "-e", "/nonexistent/x", img],
        vec!["-e"],
        vec!["-h", "-k"],
        vec!["-k", "-h"],
        vec!["-d"],
    ] {
        let a = args(&case);
        let r = dump(Dump::Ref, &a);
        let o = dump(Dump::OursAsRef, &a);
        assert_eq!(o.status, r.status, "{case:?}: exit status");
        assert_eq!(o.stdout_text(), r.stdout_text(), "{case:?}: stdout");
        assert_eq!(
            normalize_prog(&o.stderr_text()),
            normalize_prog(&r.stderr_text()),
            "{case:?}: stderr"
        );
    }
}

#[test]
fn our_own_name_exits_1_on_operand_errors() {
    for case in [vec![], vec!["a", "b"]] {
        let o = dump(Dump::Ours, &args(&case));
        assert_eq!(o.status, Some(1), "{case:?}");
        assert!(o
            .stderr_text()
            .contains("jffs2-dump: error!: exactly one INPUTFILE is needed"));
        assert!(o
            .stdout_text()
            .starts_with("Usage: jffs2-dump [OPTION]... INPUTFILE\n"));
    }
    let o = dump(Dump::Ours, &args(&["-h"]));
    assert_eq!(o.status, Some(0));
    assert!(o.stdout_text().contains("jffs2-tools differences"));
    let o = dump(Dump::Ours, &args(&["-k", "x"]));
    assert_eq!(o.status, Some(1));
    assert!(o
        .stderr_text()
        .starts_with("jffs2-dump: invalid option -- 'k'\n"));
}

#[test]
fn version() {
    if !(common::require_mtd_utils()) {
        return;
    }
    for (which, name) in [(Dump::Ours, "jffs2-dump"), (Dump::OursAsRef, "jffs2dump")] {
        let o = dump(which, &args(&["-V", "whatever"]));
        assert_eq!(o.status, Some(0));
        assert!(o
            .stdout_text()
            .starts_with(&format!("{name} (jffs2-tools) ")));
    }
    assert_eq!(dump(Dump::Ref, &args(&["--version"])).status, Some(0));
}

#[test]
fn options_in_any_order_and_abbreviated() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let img = image(dir.path());
    let want = dump(
        Dump::Ref,
        &[OsStr::new("-c"), OsStr::new("-v"), img.as_os_str()],
    );
    for case in [
        vec![img.as_os_str(), OsStr::new("-cv")],
        vec![OsStr::new("--cont"), img.as_os_str(), OsStr::new("--verb")],
        vec![
            OsStr::new("--content"),
            OsStr::new("--verbose"),
            OsStr::new("--littleendian"),
            img.as_os_str(),
        ],
        vec![
            OsStr::new("-b"),
            OsStr::new("-l"),
            OsStr::new("-c"),
            OsStr::new("-v"),
            img.as_os_str(),
        ],
    ] {
        for which in [Dump::Ref, Dump::Ours, Dump::OursAsRef] {
            let o = dump(which, &case);
            assert_eq!(o.stdout_text(), want.stdout_text(), "{which:?} {case:?}");
            assert_eq!(o.status, Some(0));
        }
    }
    // Ours also spells the endian options as mkfs.jffs2 does.
    let o = dump(
        Dump::Ours,
        &[
            OsStr::new("--little-endian"),
            OsStr::new("-cv"),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.stdout_text(), want.stdout_text());
    // --recalccrc needs no argument under our name.
    let out = dir.path().join("conv");
    let o = dump(
        Dump::Ours,
        &[
            OsStr::new("--recalccrc"),
            OsStr::new("-e"),
            out.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.status, Some(0), "{}", o.stderr_text());
    assert!(out.exists());
}

#[test]
fn input_errors_name_the_file() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let missing = dir.path().join("missing.img");
    let r = dump(Dump::Ref, &[OsStr::new("-c"), missing.as_os_str()]);
    assert_eq!(r.status, Some(1));
    for which in [Dump::Ours, Dump::OursAsRef] {
        let o = dump(which, &[OsStr::new("-c"), missing.as_os_str()]);
        assert_eq!(o.status, Some(1));
        let e = o.stderr_text();
        assert!(
            e.contains("open input file") && e.contains("missing.img"),
            "{e}"
        );
        assert!(e.contains("No such file or directory"), "{e}");
        assert!(o.stdout.is_empty());
        let o = dump(which, &[OsStr::new("-c"), dir.path().as_os_str()]);
        assert_eq!(o.status, Some(1));
        assert!(
            o.stderr_text().contains("Is a directory"),
            "{}",
            o.stderr_text()
        );
    }
}

#[test]
fn empty_image() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let p = put(dir.path(), "empty", b"");
    for opts in [&["-c"][..], &["-c", "-v"][..]] {
        let mut a: Vec<&OsStr> = opts.iter().map(OsStr::new).collect();
        a.push(p.as_os_str());
        let r = dump(Dump::Ref, &a);
        let o = dump(Dump::Ours, &a);
        assert_eq!((o.status, o.stdout), (r.status, r.stdout));
    }
}

#[test]
fn conversion_output_is_atomic_and_complete() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let img = image(dir.path());
    let size = std::fs::metadata(&img).unwrap().len();
    // An existing, longer destination: mtd-utils (no O_TRUNC) leaves its tail; we replace it.
    for which in [Dump::Ref, Dump::Ours] {
        let dest = put(dir.path(), "dest", &vec![0xABu8; size as usize + 5000]);
        let o = dump(
            which,
            &[OsStr::new("-e"), dest.as_os_str(), img.as_os_str()],
        );
        assert_eq!(o.status, Some(0));
        let got = std::fs::metadata(&dest).unwrap().len();
        match which {
            Dump::Ref => assert_eq!(got, size + 5000, "mtd-utils truncates now?"),
            _ => assert_eq!(got, size),
        }
    }
    // A destination that cannot be created: an error naming it, exit 1 (jffs2dump: 0).
    let bad = dir.path().join("no/such/dir/out");
    let r = dump(
        Dump::Ref,
        &[OsStr::new("-e"), bad.as_os_str(), img.as_os_str()],
    );
    assert_eq!(r.status, Some(0));
    assert!(r.stderr_text().contains("Cannot open / create file"));
    for which in [Dump::Ours, Dump::OursAsRef] {
        let o = dump(which, &[OsStr::new("-e"), bad.as_os_str(), img.as_os_str()]);
        assert_eq!(o.status, Some(1));
        let e = o.stderr_text();
        assert!(
            e.contains("Cannot open / create file") && e.contains("no/such/dir/out"),
            "{e}"
        );
    }
    // A write error (device full): exit 1, nothing half-written left behind.
    let o = dump(
        Dump::Ours,
        &[OsStr::new("-e"), OsStr::new("/dev/full"), img.as_os_str()],
    );
    assert_eq!(o.status, Some(1));
    assert!(o.stderr_text().contains("/dev/full"), "{}", o.stderr_text());
    // No temporary files remain next to the destinations.
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn content_and_conversion_together() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let img = image(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let r = dump(
        Dump::Ref,
        &[
            OsStr::new("-c"),
            OsStr::new("-v"),
            OsStr::new("-e"),
            a.as_os_str(),
            img.as_os_str(),
        ],
    );
    let o = dump(
        Dump::OursAsRef,
        &[
            OsStr::new("-c"),
            OsStr::new("-v"),
            OsStr::new("-e"),
            b.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(o.stdout_text(), r.stdout_text());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
}

/// jffs2dump prints "Wrong bitmask" for every word without the magic while converting (not
/// once per run, as in the dump) and copies junk; ours prints the same lines.
#[test]
fn conversion_messages_like_jffs2dump() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let mut junk = Vec::new();
    for i in 0..64u32 {
        junk.extend_from_slice(&(i.wrapping_mul(0x0101_0101) | 0x0002_0000).to_le_bytes());
    }
    junk.extend_from_slice(&[0xFF; 64]);
    let p = put(dir.path(), "junk", &junk);
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let r = dump(Dump::Ref, &[OsStr::new("-e"), a.as_os_str(), p.as_os_str()]);
    let o = dump(
        Dump::OursAsRef,
        &[OsStr::new("-e"), b.as_os_str(), p.as_os_str()],
    );
    assert_eq!(o.stdout_text(), r.stdout_text());
    assert_eq!(r.stdout_text().lines().count(), 64);
    // The bytes: jffs2dump swaps the halves of junk words, we keep them.
    assert_eq!(std::fs::read(&b).unwrap(), junk);
}

/// A raw NAND dump: every 512 data bytes followed by 16 OOB bytes.
fn with_oob(data: &[u8], page: usize, oob: usize) -> Vec<u8> {
    let mut v = Vec::new();
    for (i, chunk) in data.chunks(page).enumerate() {
        v.extend_from_slice(chunk);
        v.extend(std::iter::repeat_n(
            if i % 2 == 0 { 0xFF } else { 0x5A },
            oob,
        ));
    }
    v
}

#[test]
fn oob_peeling() {
    if !(common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let clean = mkfs(&rootfs(), &["-e", "16KiB", "-l", "-p"]);
    assert_eq!(clean.len() % 512, 0);
    let raw = put(dir.path(), "raw", &with_oob(&clean, 512, 16));
    let clean_p = put(dir.path(), "clean", &clean);
    for opts in [
        &["-d", "512", "-o", "16", "-c"][..],
        &["--datsize=512", "--oobsize", "16", "-c", "-v"][..],
        &["-d", "512", "-o", "16"][..],
        &["-d", "512", "-c"][..], // -o missing: no peeling
    ] {
        let mut a: Vec<&OsStr> = opts.iter().map(OsStr::new).collect();
        a.push(raw.as_os_str());
        let r = dump(Dump::Ref, &a);
        for which in [Dump::Ours, Dump::OursAsRef] {
            let o = dump(which, &a);
            assert_eq!(o.status, r.status, "{opts:?}");
            assert_eq!(o.stdout_text(), r.stdout_text(), "{opts:?}");
        }
    }
    // Peeled and converted = the clean image converted.
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    dump(
        Dump::Ours,
        &[
            OsStr::new("-d512"),
            OsStr::new("-o16"),
            OsStr::new("-e"),
            a.as_os_str(),
            raw.as_os_str(),
        ],
    );
    dump(
        Dump::Ours,
        &[OsStr::new("-e"), b.as_os_str(), clean_p.as_os_str()],
    );
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());

    // Not a whole number of pages: jffs2dump loops forever; we stop with an error.
    let odd = put(dir.path(), "odd", &with_oob(&clean, 512, 16)[..5000]);
    let o = dump(
        Dump::Ours,
        &[
            OsStr::new("-d"),
            OsStr::new("512"),
            OsStr::new("-o"),
            OsStr::new("16"),
            OsStr::new("-c"),
            odd.as_os_str(),
        ],
    );
    assert_eq!(o.status, Some(1));
    assert_eq!(
        o.stdout_text(),
        "Peeling data out of combined data/oob image\n"
    );
    let e = o.stderr_text();
    assert!(
        e.contains("odd") && e.contains("5000 bytes") && e.contains("528"),
        "{e}"
    );
    assert!(o.elapsed < Duration::from_secs(10));
    // Negative sizes.
    let o = dump(
        Dump::Ours,
        &[
            OsStr::new("-d"),
            OsStr::new("-512"),
            OsStr::new("-o"),
            OsStr::new("16"),
            raw.as_os_str(),
        ],
    );
    assert_eq!(o.status, Some(1));
    assert!(o.stderr_text().contains("must be positive"));
}

/// `jffs2-dump -c big | head -1`: ends when the reader goes away, like jffs2dump (SIGPIPE).
#[test]
fn closed_stdout_ends_the_dump() {
    let img = kernel_images()
        .into_iter()
        .find(|p| p.ends_with("dirty-summary-64k.img"))
        .unwrap();
    let mut child = Command::new(OURS)
        .args(["-c", "-v"])
        .arg(&img)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 100];
    out.read_exact(&mut first).unwrap();
    drop(out);
    let st = child.wait().unwrap();
    assert_eq!(st.code(), Some(141));
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.is_empty(), "{err}");
}

/// Hostile images: every run ends quickly, with exit 0, no panic, and output bounded by the
/// image size.
#[test]
fn hostile_images_neither_hang_nor_panic() {
    let dir = scratch();
    let mut rng = Rng::new(11);
    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    // Noise, and noise full of valid headers with random types and lengths.
    for k in 0..30 {
        let len = 4 + rng.below(40_000) as usize;
        let mut d = common::random(1000 + k, len);
        if k % 2 == 1 {
            let mut at = 0;
            while at + 12 <= d.len() {
                let ty = [
                    0xE001u16, 0xE002, 0x2003, 0x2004, 0x2006, 0xE008, 0xE009, 0xC002, 0x0006,
                ][rng.below(9) as usize];
                let totlen = match rng.below(5) {
                    0 => 0,
                    1 => 0xFFFF_FFFF,
                    2 => rng.below(64) as u32,
                    3 => rng.next_u64() as u32,
                    _ => 12 + 4 * rng.below(300) as u32,
                };
                put_header(&mut d, at, false, ty, totlen);
                at += 4 * (1 + rng.below(40) as usize);
            }
        }
        cases.push((format!("noise{k}"), d));
    }
    // A summary claiming 4 billion records, with valid CRCs (jffs2dump -v prints
    // "Unknown summary node!" ~4 billion times).
    let mut s = vec![0xFFu8; 4096];
    put_header(&mut s, 0, false, 0x2006, 4096);
    s[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    s[32..34].copy_from_slice(&0x1234u16.to_le_bytes());
    let sum_crc = crc(&s[32..4096]);
    s[24..28].copy_from_slice(&sum_crc.to_le_bytes());
    let node_crc = crc(&s[..24]);
    s[28..32].copy_from_slice(&node_crc.to_le_bytes());
    cases.push(("sum_num".into(), s));
    // An inode claiming 4 GiB of data at the end of the image.
    let mut i = vec![0u8; 68];
    put_header(&mut i, 0, false, 0xE002, 0xFFFF_FFF0);
    i[48..52].copy_from_slice(&0xFFFF_FFF0u32.to_le_bytes());
    let node_crc = crc(&i[..60]);
    i[64..68].copy_from_slice(&node_crc.to_le_bytes());
    cases.push(("csize".into(), i));
    for (name, d) in &cases {
        let p = put(dir.path(), name, d);
        for opts in [&["-c"][..], &["-c", "-v"][..], &["-b", "-c", "-v"][..]] {
            let e = dir.path().join("conv");
            let mut a: Vec<&OsStr> = opts.iter().map(OsStr::new).collect();
            a.extend([OsStr::new("-e"), e.as_os_str(), p.as_os_str()]);
            let mut c = Command::new(OURS);
            c.args(&a);
            let o = run_limited(c, Duration::from_secs(20), 64 << 20);
            assert!(
                o.finished(),
                "{name} {opts:?}: did not finish ({:?})",
                o.elapsed
            );
            assert_eq!(o.status, Some(0), "{name} {opts:?}: {}", o.stderr_text());
            assert!(
                !o.stderr_text().contains("panicked"),
                "{name}: {}",
                o.stderr_text()
            );
            assert!(
                o.stdout.len() <= 64 * d.len() + 4096,
                "{name} {opts:?}: {} bytes of output for {} bytes",
                o.stdout.len(),
                d.len()
            );
            assert_eq!(std::fs::read(&e).unwrap().len(), d.len());
        }
    }
    // And the record cap says so.
    let p = dir.path().join("sum_num");
    let o = dump(Dump::Ours, &[OsStr::new("-cv"), p.as_os_str()]);
    assert!(
        o.stderr_text().contains("claims 4294967295 records"),
        "{}",
        o.stderr_text()
    );
    assert_eq!(
        o.stdout_text().matches("Unknown summary node!").count(),
        4096 / 6
    );
}

/// `-e` is jffs2dump's `--endianconvert FNAME`; every other tool reads it as the erase
/// size. With a view asked for, an FNAME that looks like a size is refused, naming
/// `--erase-size`, and no file of that name is written; `--help` shows `--erase-size` and
/// `--eraseblock`. As jffs2dump (no views) and without a view, `-e` converts as before.
#[test]
fn size_given_to_e_with_a_view_is_refused() {
    let dir = scratch();
    let img = image(dir.path());
    let img = img.to_str().unwrap();
    let help = dump(Dump::Ours, &["--help"]).stdout_text();
    assert!(help.contains("--erase-size=SIZE"), "{help}");
    assert!(help.contains("--eraseblock=SIZE"), "{help}");
    for size in ["128KiB", "0x20000", "65536"] {
        let target = dir.path().join(size);
        let t = target.to_str().unwrap();
        let r = dump(Dump::Ours, &["--list", "-e", size, img]);
        assert_eq!(r.status, Some(1), "{size}: {}", r.stderr_text());
        assert!(
            r.stderr_text().contains(&format!("--erase-size={size}")),
            "{size}: {}",
            r.stderr_text()
        );
        assert!(
            !Path::new(size).exists() && !target.exists(),
            "{size}: a file was written"
        );
        // Without a view, -e converts into that name, as jffs2dump does.
        let c = dump(Dump::Ours, &["-e", t, img]);
        assert_eq!(c.status, Some(0), "{size}: {}", c.stderr_text());
        assert!(target.exists(), "{size}: -e without a view did not convert");
        std::fs::remove_file(&target).unwrap();
        let c = dump(Dump::OursAsRef, &["-e", t, img]);
        assert_eq!(c.status, Some(0), "{size}: {}", c.stderr_text());
        assert!(target.exists(), "{size}: jffs2dump -e did not convert");
        std::fs::remove_file(&target).unwrap();
    }
    // A file name that is no size still converts alongside a view.
    let out = dir.path().join("swapped.img");
    let r = dump(Dump::Ours, &["--info", "-e", out.to_str().unwrap(), img]);
    assert_eq!(r.status, Some(0), "{}", r.stderr_text());
    assert!(out.exists());
}

/// Without `-f`, mkfs.jffs2 writes each host file's mtime as its atime, mtime and ctime
/// (`docs/spec/mtd-utils-spec.md` §3.3): the command line `--info` prints, run as root on the
/// tree `--extract` made, rebuilds the image byte for byte, and the note says so truly.
#[test]
fn info_rebuilds_an_image_made_without_f() {
    if !(common::require_root() && common::require_mtd_utils()) {
        return;
    }
    let dir = scratch();
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("d/e")).unwrap();
    std::fs::write(tree.join("d/f"), b"hello\n").unwrap();
    std::fs::write(tree.join("d/e/g"), vec![7u8; 9000]).unwrap();
    for p in ["d/e/g", "d/f", "d/e", "d"] {
        common::set_mtime(&tree.join(p), 1_600_000_000);
    }
    let img = put(dir.path(), "a.img", &mkfs(&tree, &["-e", "16KiB", "-l"]));
    let out = dir.path().join("out");
    let r = dump(
        Dump::Ours,
        &[
            OsStr::new("--info"),
            OsStr::new("--extract"),
            out.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr_text());
    let info = r.stdout_text();
    assert!(!info.contains("takes atime and ctime"), "{info}");
    assert!(
        info.contains("writes each file's mtime as its atime, mtime and ctime"),
        "{info}"
    );
    let line = info
        .lines()
        .find_map(|l| l.strip_prefix("rebuild with:"))
        .expect("rebuild line");
    let rebuilt = dir.path().join("b.img");
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words[0], "mkfs.jffs2", "{line}");
    let args: Vec<&OsStr> = words[1..]
        .iter()
        .map(|w| {
            if *w == "IMAGE" {
                rebuilt.as_os_str()
            } else {
                OsStr::new(w)
            }
        })
        .collect();
    let o = Command::new(mkfs_tool()).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(
        std::fs::read(&img).unwrap() == std::fs::read(&rebuilt).unwrap(),
        "{line}: the rebuilt image differs"
    );
}

/// `-c` reads the host's byte order unless told: on an image of the other one, jffs2dump's
/// text stays byte for byte (every node a "Wrong bitmask") and one line on stderr says
/// which flag reads it; with that flag, or on an image of the host's order, no hint.
#[test]
fn content_of_the_other_byte_order_hints_at_the_flag() {
    if cfg!(target_endian = "big") {
        return;
    }
    let dir = scratch();
    let big = put(
        dir.path(),
        "big.img",
        &mkfs(&rootfs(), &["-e", "16KiB", "-b"]),
    );
    let little = image(dir.path());
    let hint = "big-endian image: add -b";
    let r = dump(Dump::Ours, &[OsStr::new("-c"), big.as_os_str()]);
    assert_eq!(r.status, Some(0), "{}", r.stderr_text());
    assert_eq!(
        r.stderr_text().matches(hint).count(),
        1,
        "{}",
        r.stderr_text()
    );
    if common::require_mtd_utils() {
        let reference = dump(Dump::Ref, &[OsStr::new("-c"), big.as_os_str()]);
        assert_eq!(
            r.stdout, reference.stdout,
            "-c text differs from jffs2dump's"
        );
    }
    let r = dump(
        Dump::Ours,
        &[OsStr::new("-c"), OsStr::new("-b"), big.as_os_str()],
    );
    assert!(
        !r.stderr_text().contains("endian image"),
        "{}",
        r.stderr_text()
    );
    let r = dump(Dump::Ours, &[OsStr::new("-c"), little.as_os_str()]);
    assert!(
        !r.stderr_text().contains("endian image"),
        "{}",
        r.stderr_text()
    );
}

/// `--json` gives the detection confidence, an `f32`, as it reads (0.3), not widened to
/// an `f64` (0.30000001192092896).
#[test]
fn json_confidence_is_the_f32_as_it_reads() {
    let dir = scratch();
    let img = image(dir.path());
    let r = dump(Dump::Ours, &[OsStr::new("--json"), img.as_os_str()]);
    assert_eq!(r.status, Some(0), "{}", r.stderr_text());
    let text = r.stdout_text();
    let v: serde_json::Value = serde_json::from_str(&text).expect("one JSON document");
    let c = v["detection_confidence"].as_f64().expect("a number");
    let raw = text
        .split("\"detection_confidence\":")
        .nth(1)
        .and_then(|t| t.split([',', '}']).next())
        .expect("the field");
    assert_eq!(raw.trim(), format!("{}", c as f32), "{raw}");
    assert!(raw.trim().len() <= 8, "{raw}");
}

/// An input that is not JFFS2 is said to be so once, with why.
#[test]
fn not_jffs2_is_said_once() {
    let dir = scratch();
    let junk = put(
        dir.path(),
        "junk.img",
        b"certainly not a JFFS2 image at all",
    );
    let empty = put(dir.path(), "empty.img", b"");
    for img in [&junk, &empty] {
        let r = dump(Dump::Ours, &[OsStr::new("--list"), img.as_os_str()]);
        assert_eq!(r.status, Some(1), "{}", r.stderr_text());
        let e = r.stderr_text();
        assert_eq!(e.matches("not a JFFS2 image").count(), 1, "{e}");
        assert!(
            e.contains(&format!("{}: not a JFFS2 image: ", img.display())),
            "{e}"
        );
    }
}

/// The extraction's summary takes the singular for one ("1 file", "1 symbolic link").
#[test]
fn extraction_summary_is_singular_for_one() {
    let dir = scratch();
    let src = dir.path().join("src");
    std::fs::create_dir_all(src.join("d")).unwrap();
    std::fs::write(src.join("d/only"), b"one file\n").unwrap();
    std::os::unix::fs::symlink("d/only", src.join("link")).unwrap();
    let img = put(dir.path(), "one.img", &mkfs(&src, &["-e", "16KiB", "-l"]));
    let out = dir.path().join("out");
    let r = dump(
        Dump::Ours,
        &[
            OsStr::new("-v"),
            OsStr::new("--extract"),
            out.as_os_str(),
            img.as_os_str(),
        ],
    );
    assert_eq!(r.status, Some(0), "{}", r.stderr_text());
    let e = r.stderr_text();
    assert!(e.contains("extracted 1 directory, 1 file ("), "{e}");
    assert!(
        e.contains("0 hard links, 1 symbolic link, 0 devices"),
        "{e}"
    );
}

/// Only the views the erase size changes (block accounting, summaries, the map) warn
/// about a low-confidence erase size; --list and --cat read the model, which it does not
/// change. A one-block image padded to its block tells its erase size.
#[test]
fn erase_size_warning_only_where_it_matters() {
    let dir = scratch();
    let mkfs = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let o = Command::new(env!("CARGO_BIN_EXE_jffs2-mkfs"))
            .arg("-r")
            .arg(rootfs())
            .arg("-o")
            .arg(&out)
            .args(extra)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let small = mkfs("small.img", &[]);
    let small = small.to_str().unwrap();
    for view in [&["--list"][..], &["--cat", "/etc/passwd"], &["--info"]] {
        let o = dump(Dump::Ours, &[view, &[small]].concat());
        assert!(
            !o.stderr_text().contains("low confidence"),
            "{view:?}: {}",
            o.stderr_text()
        );
    }
    let o = dump(Dump::Ours, &["--blocks", small]);
    assert!(
        o.stderr_text().contains("low confidence"),
        "{}",
        o.stderr_text()
    );

    let one = mkfs("one.img", &["-e", "128KiB", "--pad", "-b"]);
    let o = dump(Dump::Ours, &["--info", "--blocks", one.to_str().unwrap()]);
    let out = o.stdout_text();
    assert!(
        out.contains("byte order:       big endian (detected, confidence 1.00)"),
        "{out}"
    );
    assert!(out.contains("erase size:       128KiB"), "{out}");
    assert!(
        !o.stderr_text().contains("low confidence"),
        "{}",
        o.stderr_text()
    );
}

/// `--json` prints one JSON document whatever happens, with the exit status inside.
#[test]
fn json_always_prints_one_document() {
    let dir = scratch();
    let junk = put(dir.path(), "junk", b"certainly not JFFS2");
    let missing = dir.path().join("missing");
    for p in [&missing, dir.path(), &junk] {
        let o = dump(Dump::Ours, &[OsStr::new("--json"), p.as_os_str()]);
        assert_eq!(o.status, Some(1), "{p:?}");
        let j: serde_json::Value = serde_json::from_str(&o.stdout_text())
            .unwrap_or_else(|e| panic!("{p:?}: {e}: {:?}", o.stdout_text()));
        assert_eq!(j["exit_code"], 1, "{p:?}");
        assert!(!j["error"].as_str().unwrap().is_empty(), "{p:?}");
    }
    let img = rootfs_image(dir.path());
    let o = dump(Dump::Ours, &[OsStr::new("--json"), img.as_os_str()]);
    let j: serde_json::Value = serde_json::from_str(&o.stdout_text()).unwrap();
    assert_eq!(j["exit_code"], 0);
}

fn rootfs_image(dir: &Path) -> std::path::PathBuf {
    let out = dir.join("rootfs.img");
    let o = Command::new(env!("CARGO_BIN_EXE_jffs2-mkfs"))
        .arg("-r")
        .arg(rootfs())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success());
    out
}
