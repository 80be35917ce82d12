//! Byte-exact comparison with images written by the real mkfs.jffs2 (mtd-utils).
//!
//! A temporary tree with varied content is turned into images with several compressor
//! options. Every data node of every image is then recomputed: given the original file
//! bytes from the node's offset to the end of its page chunk, and the output room the
//! writer had (`min(ebs − node_offset % ebs − 68, remaining)`, §3.6.3),
//! [`Compressors::compress`] must return the same compressor id, consume exactly dsize
//! bytes and produce identical data. The `-v` statistics accumulated from the results must
//! equal mkfs.jffs2's stderr.
//!
//! These tests need `mkfs.jffs2`; without it they fail (they are the proof of
//! byte-compatibility and must not be skipped silently).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::tests::Rng;
use super::*;

/// Size of `struct jffs2_raw_inode`.
const INODE_HDR: usize = 68;

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("jffs2-compress-{}-{tag}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("create temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Finds mkfs.jffs2 or fails loudly.
fn mkfs_binary() -> PathBuf {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(["/usr/sbin", "/sbin", "/usr/local/sbin"].map(PathBuf::from));
    for d in dirs {
        let p = d.join("mkfs.jffs2");
        if p.is_file() {
            return p;
        }
    }
    panic!(
        "\n\n*** mkfs.jffs2 (mtd-utils) NOT FOUND in PATH, /usr/sbin or /sbin. ***\n\
         The byte-exact compressor tests compare against real mkfs.jffs2 output and cannot \
         run without it. Install mtd-utils (Debian/Ubuntu: apt-get install mtd-utils).\n\n"
    );
}

fn words_text(rng: &mut Rng, len: usize) -> Vec<u8> {
    const WORDS: [&str; 16] = [
        "the ",
        "flash ",
        "erase ",
        "block ",
        "node ",
        "journal ",
        "file ",
        "system ",
        "of ",
        "and ",
        "data ",
        "kernel ",
        "compress ",
        "page ",
        ".\n",
        ", ",
    ];
    let mut v = Vec::with_capacity(len + 16);
    while v.len() < len {
        v.extend_from_slice(WORDS[rng.below(WORDS.len())].as_bytes());
    }
    v.truncate(len);
    v
}

/// Writes the test tree and returns name → content.
fn build_tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut rng = Rng::new(2024);
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert("hello.txt".into(), b"hello\n".to_vec());
    files.insert("empty".into(), Vec::new());
    files.insert("text.txt".into(), words_text(&mut rng, 23_456));
    files.insert("tenk.txt".into(), words_text(&mut rng, 10_240));
    files.insert("page_plus_one.txt".into(), words_text(&mut rng, 4097));
    files.insert("almost_two_pages.txt".into(), words_text(&mut rng, 8191));
    files.insert("repetitive.bin".into(), b"ABCD0123".repeat(6400));
    files.insert("zeros.bin".into(), vec![0; 12_288]);
    let mut runs = Vec::new();
    while runs.len() < 30_000 {
        let b = rng.next_u64() as u8;
        let n = rng.below(40) + 1;
        runs.extend(std::iter::repeat_n(b, n));
    }
    files.insert("runs.bin".into(), runs);
    files.insert("random.bin".into(), rng.bytes(30_000));
    let mut structured = Vec::new();
    for i in 0..8000u32 {
        structured.extend_from_slice(&(i * 4 % 1000).to_le_bytes());
        structured.push(rng.below(3) as u8);
    }
    files.insert("binary.bin".into(), structured);
    let mut mixed = Vec::new();
    for i in 0..22 {
        if i % 3 == 0 {
            mixed.extend(rng.bytes(2900));
        } else {
            mixed.extend(words_text(&mut rng, 3100));
        }
    }
    files.insert("mixed.bin".into(), mixed);
    // Real machine code: the start of the mkfs.jffs2 binary itself.
    let exe = std::fs::read(mkfs_binary()).expect("read mkfs.jffs2 binary");
    files.insert("exe.bin".into(), exe[..exe.len().min(256 * 1024)].to_vec());
    let mut log = Vec::new();
    for i in 0..1500u32 {
        let line = format!(
            "[{:>8}.{:03}] jffs2: node {:#010x} version {} crc {:08x}\n",
            i * 37,
            i % 1000,
            rng.below(1 << 20) * 4,
            i,
            rng.next_u64() as u32
        );
        log.extend_from_slice(line.as_bytes());
    }
    files.insert("kernel.log".into(), log);
    let mut sparse = vec![0u8; 40_000];
    for _ in 0..300 {
        let at = rng.below(sparse.len() - 64);
        let n = rng.below(64);
        sparse[at..at + n].copy_from_slice(&rng.bytes(n));
    }
    files.insert("sparse.bin".into(), sparse);
    for (name, data) in &files {
        std::fs::write(root.join(name), data).expect("write test file");
    }
    files
}

/// A data node as parsed from the image.
struct Node {
    /// Byte offset of the node in the image.
    at: usize,
    ino: u32,
    offset: usize,
    dsize: usize,
    compr: u8,
    data: Vec<u8>,
}

fn le16(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

fn le32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// Minimal little-endian image walker (§2.2–2.4): inode nodes in image order and the
/// dirents' ino → name map.
fn parse_image(img: &[u8]) -> (Vec<Node>, BTreeMap<u32, String>) {
    let mut nodes = Vec::new();
    let mut names = BTreeMap::new();
    let mut at = 0;
    while at + 12 <= img.len() {
        let magic = le16(img, at);
        if magic == 0xffff {
            at += 4;
            continue;
        }
        assert_eq!(magic, 0x1985, "bad magic at {at:#x}");
        let nodetype = le16(img, at + 2);
        let totlen = le32(img, at + 4) as usize;
        match nodetype {
            0xe001 => {
                let ino = le32(img, at + 20);
                let nsize = img[at + 28] as usize;
                let name = String::from_utf8_lossy(&img[at + 40..at + 40 + nsize]).into_owned();
                names.insert(ino, name);
            }
            0xe002 => {
                let csize = le32(img, at + 48) as usize;
                assert_eq!(totlen, INODE_HDR + csize);
                assert_eq!(img[at + 57], 0, "usercompr");
                nodes.push(Node {
                    at,
                    ino: le32(img, at + 12),
                    offset: le32(img, at + 44) as usize,
                    dsize: le32(img, at + 52) as usize,
                    compr: img[at + 56],
                    data: img[at + INODE_HDR..at + INODE_HDR + csize].to_vec(),
                });
            }
            other => panic!("unexpected node type {other:#x} at {at:#x}"),
        }
        at += (totlen + 3) & !3;
    }
    (nodes, names)
}

/// One mkfs configuration to compare.
struct Config {
    name: &'static str,
    args: &'static [&'static str],
    page: usize,
    ebs: usize,
    setup: fn(&mut Compressors),
}

/// What one configuration exercised.
#[derive(Default, Debug)]
struct Summary {
    /// Data nodes compared, per compressor id.
    per_compr: BTreeMap<u8, usize>,
    /// Nodes whose dsize is less than the rest of their page chunk (block-tail splits),
    /// per compressor id.
    splits: BTreeMap<u8, usize>,
}

fn run_config(files: &BTreeMap<String, Vec<u8>>, tree: &Path, cfg: &Config) -> Summary {
    let out_dir = TempDir::new("img");
    let img_path = out_dir.0.join("image.jffs2");
    let page = cfg.page.to_string();
    let ebs = cfg.ebs.to_string();
    let output = Command::new(mkfs_binary())
        .args(["-l", "-f", "-n", "-v", "-e", &ebs, "-s", &page])
        .args(cfg.args)
        .arg("-r")
        .arg(tree)
        .arg("-o")
        .arg(&img_path)
        .output()
        .expect("run mkfs.jffs2");
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(
        output.status.success(),
        "{}: mkfs.jffs2 failed: {stderr}",
        cfg.name
    );
    let img = std::fs::read(&img_path).expect("read image");
    let (nodes, names) = parse_image(&img);

    let mut comps = Compressors::mkfs_default();
    (cfg.setup)(&mut comps);
    let mut stats = Stats::default();
    let mut summary = Summary::default();
    for n in nodes.iter().filter(|n| n.dsize > 0) {
        let name = &names[&n.ino];
        let content = &files[name];
        let chunk_end = ((n.offset / cfg.page + 1) * cfg.page).min(content.len());
        let remaining = chunk_end - n.offset;
        let room = cfg.ebs - n.at % cfg.ebs - INODE_HDR;
        let dstlen = room.min(remaining);
        let r = comps.compress(&content[n.offset..chunk_end], dstlen);
        let what = format!(
            "{}: {name} node at {:#x} offset {} dsize {} compr {} (dstlen {dstlen}, remaining {remaining})",
            cfg.name, n.at, n.offset, n.dsize, n.compr
        );
        assert_eq!(r.compr, n.compr, "compressor id differs: {what}");
        assert_eq!(r.consumed, n.dsize, "consumed differs: {what}");
        assert!(r.data == n.data, "data differs: {what}");
        assert_eq!(
            r.stats.errors, 0,
            "-t errors: {what}: {:?}",
            r.stats.messages
        );
        stats.add(&r.stats);
        *summary.per_compr.entry(n.compr).or_default() += 1;
        if n.dsize < remaining {
            *summary.splits.entry(n.compr).or_default() += 1;
        }
    }
    assert_eq!(
        stats.report(&comps),
        stderr,
        "{}: -v statistics differ",
        cfg.name
    );
    println!("{}: {summary:?}", cfg.name);
    summary
}

const CONFIGS: &[Config] = &[
    Config {
        name: "default",
        args: &[],
        page: 4096,
        ebs: 8192,
        setup: |_| {},
    },
    Config {
        name: "rtime (-x zlib)",
        args: &["-x", "zlib"],
        page: 4096,
        ebs: 8192,
        setup: |c| c.set_enabled("zlib", false).unwrap(),
    },
    Config {
        name: "lzo (-X lzo)",
        args: &["-X", "lzo"],
        page: 4096,
        ebs: 8192,
        setup: |c| c.set_enabled("lzo", true).unwrap(),
    },
    Config {
        name: "size (-m size)",
        args: &["-m", "size"],
        page: 4096,
        ebs: 8192,
        setup: |c| c.set_mode(Mode::Size),
    },
    Config {
        name: "size+lzo+test (-m size -X lzo -t)",
        args: &["-m", "size", "-X", "lzo", "-t"],
        page: 4096,
        ebs: 8192,
        setup: |c| {
            c.set_mode(Mode::Size);
            c.set_enabled("lzo", true).unwrap();
            c.set_test(true);
        },
    },
    Config {
        name: "favourlzo (-m favourlzo -X lzo)",
        args: &["-m", "favourlzo", "-X", "lzo"],
        page: 4096,
        ebs: 8192,
        setup: |c| {
            c.set_mode(Mode::FavourLzo);
            c.set_enabled("lzo", true).unwrap();
        },
    },
    Config {
        name: "none (-m none)",
        args: &["-m", "none"],
        page: 4096,
        ebs: 8192,
        setup: |c| c.set_mode(Mode::None),
    },
    Config {
        name: "rtime first (-y 70:rtime -t)",
        args: &["-y", "70:rtime", "-t"],
        page: 4096,
        ebs: 8192,
        setup: |c| {
            c.set_priority("rtime", 70).unwrap();
            c.set_test(true);
        },
    },
    Config {
        name: "zlib 32K pages (-s 32768 -e 64KiB)",
        args: &[],
        page: 32768,
        ebs: 65536,
        setup: |_| {},
    },
    Config {
        name: "rtime 32K pages (-x zlib -s 32768 -e 64KiB)",
        args: &["-x", "zlib"],
        page: 32768,
        ebs: 65536,
        setup: |c| c.set_enabled("zlib", false).unwrap(),
    },
];

fn count(m: &BTreeMap<u8, usize>, id: u8) -> usize {
    m.get(&id).copied().unwrap_or(0)
}

#[test]
fn byte_exact_against_mkfs_jffs2() {
    let tree = TempDir::new("tree");
    let files = build_tree(&tree.0);
    let mut total = 0;
    for cfg in CONFIGS {
        let s = run_config(&files, &tree.0, cfg);
        total += s.per_compr.values().sum::<usize>();
        // Make sure each configuration really exercised what it is meant to.
        match cfg.name {
            "default" | "size (-m size)" => {
                assert!(count(&s.per_compr, COMPR_ZLIB) > 20, "{}", cfg.name);
                assert!(
                    count(&s.splits, COMPR_ZLIB) > 0,
                    "{}: no zlib split",
                    cfg.name
                );
                assert!(count(&s.per_compr, COMPR_NONE) > 0, "{}", cfg.name);
                assert!(
                    count(&s.splits, COMPR_NONE) > 0,
                    "{}: no raw split",
                    cfg.name
                );
            }
            "rtime (-x zlib)" | "rtime 32K pages (-x zlib -s 32768 -e 64KiB)" => {
                assert!(count(&s.per_compr, COMPR_RTIME) > 10, "{}", cfg.name);
                assert!(
                    count(&s.splits, COMPR_RTIME) > 0,
                    "{}: no rtime split",
                    cfg.name
                );
                assert_eq!(count(&s.per_compr, COMPR_ZLIB), 0);
            }
            "lzo (-X lzo)" | "favourlzo (-m favourlzo -X lzo)" => {
                assert!(count(&s.per_compr, COMPR_LZO) > 20, "{}", cfg.name);
            }
            "none (-m none)" => {
                assert_eq!(
                    s.per_compr.keys().copied().collect::<Vec<_>>(),
                    [COMPR_NONE]
                );
            }
            "rtime first (-y 70:rtime -t)" => {
                assert!(count(&s.per_compr, COMPR_RTIME) > 20, "{}", cfg.name);
            }
            _ => {}
        }
    }
    println!("total data nodes compared byte-exact: {total}");
}
