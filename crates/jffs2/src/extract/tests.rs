//! Tests of the plan, the streaming reader and the lookup on crafted images (the extraction
//! itself, which needs a host directory, is tested end to end in `tests/dump_extract.rs`).

use super::*;
use crate::compress::{zlib_compress, COMPR_NONE, COMPR_ZERO, COMPR_ZLIB};
use crate::format::{dt, Endian};
use crate::fs::{Fs, InodeKind};
use crate::testing::Img;
use crate::{Image, ImageOptions};

const ES: u32 = 16384;
const DIR: u32 = 0o040755;
const REG: u32 = 0o100644;
const LNK: u32 = 0o120777;

/// The crafted images of these tests: no minimum size (a single block is enough here), a node
/// fitting a block by its unpadded length.
fn new_img() -> Img {
    Img::new().min_blocks(0).exact_fit()
}

/// Entries written the way these tests write them: the dirent first, its version the inode
/// number, then the inode's node.
trait Entries {
    fn dir_entry(&mut self, pino: u32, ino: u32, name: &[u8]) -> &mut Self;
    fn file_entry(&mut self, pino: u32, ino: u32, name: &[u8], data: &[u8]) -> &mut Self;
}

impl Entries for Img {
    fn dir_entry(&mut self, pino: u32, ino: u32, name: &[u8]) -> &mut Self {
        self.dirent(pino, ino, ino, dt::DIR, name).inode_parts(
            ino,
            1,
            DIR,
            0,
            0,
            0,
            COMPR_NONE,
            &[],
        )
    }

    fn file_entry(&mut self, pino: u32, ino: u32, name: &[u8], data: &[u8]) -> &mut Self {
        let n = data.len() as u32;
        self.dirent(pino, ino, ino, dt::REG, name)
            .inode_parts(ino, 1, REG, n, 0, n, COMPR_NONE, data)
    }
}

/// `img` opened in the geometry it was laid out in, whatever the detection makes of it.
fn opened(img: &[u8]) -> Image<'_> {
    let opts = ImageOptions {
        erase_size: Some(ES),
        endian: Some(Endian::Little),
        insist: true,
        ..Default::default()
    };
    Image::from_bytes_with(img, &opts).unwrap()
}

/// `f` on the model of `img`, built even where Linux would refuse the mount.
fn with_fs<R>(img: &[u8], f: impl FnOnce(&Fs<'_>) -> R) -> R {
    f(&opened(img).salvage().0)
}

fn paths(plan: &Plan) -> Vec<String> {
    (0..plan.entries.len())
        .map(|i| String::from_utf8_lossy(&plan.path(i)).into_owned())
        .collect()
}

#[test]
fn plan_refuses_bad_names_walks_depth_first_by_name() {
    let mut i = new_img();
    i.dir_entry(1, 2, b"b")
        .file_entry(2, 3, b"z", b"z")
        .file_entry(2, 4, b"a", b"a")
        .file_entry(1, 5, b"a", b"top")
        .file_entry(1, 6, b"..", b"evil")
        .file_entry(1, 7, b"x/y", b"evil")
        .file_entry(2, 8, b".", b"evil");
    let img = i.build();
    with_fs(&img, |fs| {
        let plan = Plan::build(fs, true).unwrap();
        assert_eq!(paths(&plan), vec!["", "a", "b", "b/a", "b/z"]);
        let reasons: Vec<String> = plan.refused.iter().map(ToString::to_string).collect();
        assert_eq!(plan.refused.len(), 3, "{reasons:?}");
        assert!(
            reasons.iter().any(|r| r.contains("\"x\\x2fy\"")),
            "{reasons:?}"
        );
        assert_eq!(plan.files().len(), 3);
    });
}

#[test]
fn plan_links_and_directories_reached_twice() {
    let mut i = new_img();
    i.dir_entry(1, 2, b"d")
        .file_entry(2, 3, b"f", b"data")
        .dirent(1, 10, 3, dt::REG, b"g")
        .dirent(2, 11, 2, dt::DIR, b"self")
        .dirent(1, 12, 2, dt::DIR, b"e");
    let img = i.build();
    with_fs(&img, |fs| {
        let plan = Plan::build(fs, false).unwrap();
        assert_eq!(paths(&plan), vec!["", "d", "d/f", "g"]);
        assert_eq!(plan.entries[3].kind, EntryKind::HardLink { first: 2 });
        let twice: Vec<_> = plan
            .refused
            .iter()
            .filter(|r| matches!(r, Refusal::DirReachedTwice { .. }))
            .collect();
        assert_eq!(twice.len(), 2, "{:?}", plan.refused);
    });
}

/// Streams every file of `files` and returns their contents.
fn read_all(fs: &Fs<'_>, files: &[&FileData], opts: StreamOptions, skip: &[usize]) -> Vec<Vec<u8>> {
    stream(fs, files, opts, |r| {
        let mut out = vec![Vec::new(); files.len()];
        for (k, o) in out.iter_mut().enumerate() {
            if skip.contains(&k) {
                continue;
            }
            let mut pos = 0u64;
            r.read_file(k, |c| {
                match c {
                    Chunk::Data { offset, bytes } => {
                        assert_eq!(offset, pos);
                        o.extend_from_slice(bytes.as_slice());
                        pos += bytes.len() as u64;
                    }
                    Chunk::Zeros { offset, len } | Chunk::Unreadable { offset, len, .. } => {
                        assert_eq!(offset, pos);
                        o.resize(o.len() + len as usize, 0);
                        pos += len;
                    }
                }
                Ok(())
            })
            .unwrap();
        }
        out
    })
}

#[test]
fn stream_matches_the_model_in_every_mode() {
    let page: Vec<u8> = (0..8192u32)
        .map(|i| (i % 251) as u8 ^ (i / 97) as u8)
        .collect();
    let (z, _) = zlib_compress(&page, page.len()).unwrap();
    let mut i = new_img();
    // File 2: one 8 KiB zlib node, overwritten in the middle (it shows in two places), a
    // hole, and a ZERO node.
    i.dirent(1, 1, 2, dt::REG, b"f")
        .inode_parts(2, 1, REG, 20_000, 0, 8192, COMPR_ZLIB, &z)
        .inode_parts(2, 2, REG, 20_000, 100, 10, COMPR_NONE, b"XXXXXXXXXX")
        .inode_parts(2, 3, REG, 20_000, 12_000, 2000, COMPR_ZERO, &[])
        .inode_parts(2, 4, REG, 20_000, 19_000, 1000, COMPR_NONE, &[7; 1000]);
    // Many small files after it.
    for k in 0..40u32 {
        let data: Vec<u8> = (0..(k * 300)).map(|b| (b * k) as u8).collect();
        i.file_entry(1, 10 + k, format!("n{k:02}").as_bytes(), &data);
    }
    let img = i.build();
    with_fs(&img, |fs| {
        let plan = Plan::build(fs, false).unwrap();
        let files: Vec<&FileData> = plan.files().into_iter().map(|(_, f)| f).collect();
        let want: Vec<Vec<u8>> = files
            .iter()
            .map(|f| {
                let inode = fs.read_inode(f.ino).unwrap();
                fs.read_range(&inode, 0, usize::MAX).unwrap()
            })
            .collect();
        assert_eq!(want[0].len(), 20_000);
        assert_eq!(&want[0][100..110], b"XXXXXXXXXX");
        for opts in stream_modes() {
            assert_eq!(read_all(fs, &files, opts, &[]), want, "{opts:?}");
            // Skipping files keeps the rest right.
            let got = read_all(fs, &files, opts, &[0, 5, 6, 39]);
            for (k, g) in got.iter().enumerate() {
                if ![0, 5, 6, 39].contains(&k) {
                    assert_eq!(g, &want[k], "file {k} {opts:?}");
                }
            }
        }
    });
}

#[test]
fn stream_reports_holes_and_unreadable_nodes() {
    let mut i = new_img();
    i.dirent(1, 1, 2, dt::REG, b"f")
        .inode_parts(2, 1, REG, 8192, 0, 4096, COMPR_NONE, &[0; 4096])
        .inode_parts(2, 2, REG, 8192, 4096, 4096, 0x42, &[1; 16]);
    let img = i.build();
    with_fs(&img, |fs| {
        let plan = Plan::build(fs, false).unwrap();
        let files: Vec<&FileData> = plan.files().into_iter().map(|(_, f)| f).collect();
        let chunks = stream(fs, &files, StreamOptions::default(), |r| {
            let mut v = Vec::new();
            r.read_file(0, |c| {
                v.push(c);
                Ok(())
            })
            .unwrap();
            v
        });
        assert!(
            matches!(
                chunks[0],
                Chunk::Zeros {
                    offset: 0,
                    len: 4096
                }
            ),
            "{chunks:?}"
        );
        assert!(
            matches!(
                chunks[1],
                Chunk::Unreadable {
                    offset: 4096,
                    len: 4096,
                    ..
                }
            ),
            "{chunks:?}"
        );
    });
}

#[test]
fn lookup_follows_links_inside_the_image() {
    let mut i = new_img();
    i.dir_entry(1, 2, b"etc")
        .file_entry(2, 3, b"passwd", b"root:x:0:0\n")
        .dirent(1, 4, 4, dt::LNK, b"abs")
        .inode_parts(4, 1, LNK, 11, 0, 11, COMPR_NONE, b"/etc/passwd")
        .dirent(2, 5, 5, dt::LNK, b"rel")
        .inode_parts(5, 1, LNK, 8, 0, 8, COMPR_NONE, b"../etc/.")
        .dirent(1, 6, 6, dt::LNK, b"loop")
        .inode_parts(6, 1, LNK, 4, 0, 4, COMPR_NONE, b"loop");
    let img = i.build();
    with_fs(&img, |fs| {
        assert_eq!(lookup(fs, b"/etc/passwd", true).unwrap().ino, 3);
        assert_eq!(lookup(fs, b"abs", true).unwrap().ino, 3);
        assert_eq!(lookup(fs, b"abs", false).unwrap().kind, InodeKind::Symlink);
        assert_eq!(lookup(fs, b"etc/rel/passwd", true).unwrap().ino, 3);
        assert_eq!(lookup(fs, b"../../etc/./passwd", true).unwrap().ino, 3);
        assert_eq!(lookup(fs, b"/", true).unwrap().ino, 1);
        assert!(matches!(
            lookup(fs, b"loop", true),
            Err(LookupError::Loop(_))
        ));
        assert!(matches!(
            lookup(fs, b"etc/passwd/x", true),
            Err(LookupError::NotADirectory(_))
        ));
        assert!(matches!(
            lookup(fs, b"nope", true),
            Err(LookupError::NotFound(_))
        ));
        let mut out = Vec::new();
        list(fs, &mut out, &ListOptions::default()).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains(" abs -> /etc/passwd\n"), "{text}");
        assert_eq!(text.lines().count(), 6, "{text}");
    });
}

#[test]
fn devtable_path_is_beside_the_directory() {
    assert_eq!(
        default_devtable(std::path::Path::new("/tmp/out/")),
        std::path::PathBuf::from("/tmp/out.devtable")
    );
    assert_eq!(
        default_devtable(std::path::Path::new("out")),
        std::path::PathBuf::from("out.devtable")
    );
}

/// A tiny deterministic generator.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Recomputes a mutated inode or dirent node's node CRC (and a dirent's name CRC), so that
/// the node is accepted with its lying fields.
fn fix_crcs(n: &mut [u8]) {
    let crc = |b: &[u8]| crate::crc::crc32(b).to_le_bytes();
    match (n.get(2), n.get(3)) {
        (Some(0x02), Some(0xE0)) if n.len() >= 68 => {
            let c = crc(&n[..60]);
            n[64..68].copy_from_slice(&c);
        }
        (Some(0x01), Some(0xE0)) if n.len() >= 40 => {
            let c = crc(&n[..32]);
            n[32..36].copy_from_slice(&c);
            let nsize = usize::from(n[28]).min(n.len() - 40);
            let c = crc(&n[40..40 + nsize]);
            n[36..40].copy_from_slice(&c);
        }
        _ => {}
    }
}

#[test]
fn lying_fields_with_valid_crcs_never_panic_nor_escape() {
    let text: Vec<u8> = (0..9000u32)
        .map(|i| b"jffs2 node "[(i % 11) as usize])
        .collect();
    let mut base = new_img();
    base.dir_entry(1, 2, b"d")
        .dir_entry(2, 3, b"e")
        .file_entry(3, 4, b"f", b"hello\n");
    base.dirent(1, 5, 5, dt::REG, b"z")
        .inode_parts(
            5,
            1,
            REG,
            9000,
            0,
            4096,
            COMPR_ZLIB,
            &zlib_compress(&text[..4096], 4096).unwrap().0,
        )
        .inode_parts(
            5,
            2,
            REG,
            9000,
            4096,
            4904,
            COMPR_ZLIB,
            &zlib_compress(&text[4096..], 4904).unwrap().0,
        );
    base.dirent(2, 6, 6, dt::LNK, b"l")
        .inode_parts(6, 1, LNK, 3, 0, 3, COMPR_NONE, b"../")
        .dirent(1, 7, 4, dt::REG, b"hard")
        .file_entry(1, 8, b"zero", &[0; 3000]);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for round in 0..300 {
        let mut img = base.clone();
        for _ in 0..1 + rng.below(3) {
            let k = rng.below(img.nodes.len());
            let n = &mut img.nodes[k];
            let pos = 12 + rng.below((n.len() - 12).min(60));
            match rng.below(3) {
                0 => n[pos] = rng.next() as u8,
                1 => {
                    let end = (pos + 4).min(n.len());
                    n[pos..end].fill(0xFF);
                }
                _ => n[pos] ^= 1 << rng.below(8),
            }
            fix_crcs(n);
        }
        let built = img.build();
        let image = opened(&built);
        let (fs, _) = image.salvage();
        // Views.
        let items = crate::dump::views::walk(&built, Endian::Little).count();
        assert!(items > 0);
        let _ = crate::dump::views::blocks(fs.scan(), image.flash());
        let _ = crate::dump::views::summaries(fs.scan(), image.flash());
        let _ = crate::dump::views::info(&built, image.detection(), &fs, &Default::default());
        let mut sink = Vec::new();
        let _ = list(&fs, &mut sink, &ListOptions { xattrs: true });
        // Extraction.
        let Ok(plan) = Plan::build(&fs, true) else {
            continue;
        };
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("out");
        let opts = ExtractOptions {
            owners: false,
            ..ExtractOptions::default()
        };
        match extract(&fs, &plan, &dir, &opts) {
            Ok(_) => {}
            Err(e) => panic!("round {round}: {e}"),
        }
        let beside: Vec<String> = std::fs::read_dir(parent.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "out" && n != "out.devtable")
            .collect();
        assert!(beside.is_empty(), "round {round}: wrote {beside:?}");
    }
}

/// Merging (`allow_non_empty`) never hands an existing directory the image's mode or times —
/// the destination itself included — while the directories it creates get them.
#[test]
fn merged_directories_keep_their_own_mode_and_times() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let mut img = new_img();
    img.inode_parts(1, 1, 0o047777, 0, 0, 0, COMPR_NONE, &[])
        .dirent(1, 2, 2, dt::DIR, b"etc")
        .inode_parts(2, 1, 0o041777, 0, 0, 0, COMPR_NONE, &[])
        .dirent(2, 3, 3, dt::DIR, b"new")
        .inode_parts(3, 1, 0o042775, 0, 0, 0, COMPR_NONE, &[]);
    let image = img.build();
    let parent = tempfile::tempdir().unwrap();
    let dest = parent.path().join("out");
    std::fs::create_dir(&dest).unwrap();
    std::fs::create_dir(dest.join("etc")).unwrap();
    let stamp = |p: &std::path::Path, mode: u32| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
        let t = std::fs::FileTimes::new()
            .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_234_567_890));
        std::fs::File::open(p).unwrap().set_times(t).unwrap();
    };
    stamp(&dest, 0o700);
    stamp(&dest.join("etc"), 0o755);
    let report = with_fs(&image, |fs| {
        let plan = Plan::build(fs, true).unwrap();
        let opts = ExtractOptions {
            owners: false,
            allow_non_empty: true,
            ..ExtractOptions::default()
        };
        extract(fs, &plan, &dest, &opts).unwrap()
    });
    assert!(report.refused.is_empty(), "{:?}", report.refused);
    assert_eq!((report.dirs, report.dirs_merged), (1, 1));
    for (p, mode) in [(dest.clone(), 0o700), (dest.join("etc"), 0o755)] {
        let m = std::fs::symlink_metadata(&p).unwrap();
        assert_eq!(m.mode() & 0o7777, mode, "{}", p.display());
        assert_eq!(m.mtime(), 1_234_567_890, "{}", p.display());
    }
    let m = std::fs::symlink_metadata(dest.join("etc/new")).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o2775);
    assert_eq!(m.mtime(), 0);
    // A destination the extraction creates gets the image root's mode.
    let fresh = parent.path().join("fresh");
    with_fs(&image, |fs| {
        let plan = Plan::build(fs, true).unwrap();
        let opts = ExtractOptions {
            owners: false,
            ..ExtractOptions::default()
        };
        extract(fs, &plan, &fresh, &opts).unwrap()
    });
    let m = std::fs::symlink_metadata(&fresh).unwrap();
    assert_eq!(m.mode() & 0o7777, 0o7777);
}

/// A tree of directories, files of many sizes (several nodes, holes), symbolic links and hard
/// links, with times.
fn mixed_tree() -> Vec<u8> {
    let mut img = new_img().inode_mtime(1_000_000);
    img.inode_parts(1, 1, DIR, 0, 0, 0, COMPR_NONE, &[]);
    let mut ino = 2u32;
    for d in 0..4u32 {
        let dir = ino;
        img.dir(1, dir, format!("d{d}").as_bytes(), dir);
        ino += 1;
        let first = ino;
        for k in 0..30u32 {
            let size = (k * k * 97 + d * 13) % 40_000 + 1;
            let data: Vec<u8> = (0..size)
                .map(|b| {
                    if (b / 4096) % 5 == 3 {
                        0
                    } else {
                        (b * 7 + k) as u8
                    }
                })
                .collect();
            for (j, part) in data.chunks(4096).enumerate() {
                img.data(ino, j as u32 + 1, size, j as u32 * 4096, part);
            }
            img.dirent(dir, ino, ino, dt::REG, format!("f{k:02}").as_bytes());
            ino += 1;
        }
        let target = b"f00";
        img.inode_parts(ino, 1, LNK, 3, 0, 3, COMPR_NONE, target)
            .dirent(dir, ino, ino, dt::LNK, b"link");
        // A further name of the directory's first file, and of one in the previous directory.
        img.dirent(dir, ino + 1, first, dt::REG, b"zz-hard");
        if d > 0 {
            img.dirent(dir, ino + 2, first - 34, dt::REG, b"zz-hard-up");
        }
        ino += 3;
    }
    img.build()
}

/// Everything an extraction made below `root`: path, type and mode, size, times, links,
/// content (or link target).
fn tree_listing(root: &std::path::Path) -> Vec<(String, u32, u64, i64, u64, Vec<u8>)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let body = if m.is_dir() {
                stack.push(p.clone());
                Vec::new()
            } else if m.file_type().is_symlink() {
                std::fs::read_link(&p)
                    .unwrap()
                    .into_os_string()
                    .into_encoded_bytes()
            } else {
                std::fs::read(&p).unwrap()
            };
            let rel = p.strip_prefix(root).unwrap().display().to_string();
            out.push((rel, m.mode(), m.size(), m.mtime(), m.nlink(), body));
        }
    }
    out.sort();
    out
}

/// File data is written on the pool: the tree and the report are the same as on one thread
/// (whatever the stream's budgets), and every time is the image's (no write after it is set).
#[test]
fn extraction_on_the_pool_equals_one_thread() {
    let image = mixed_tree();
    let parent = tempfile::tempdir().unwrap();
    let mut seen = Vec::new();
    for (k, stream) in stream_modes().into_iter().enumerate() {
        let dest = parent.path().join(format!("out{k}"));
        let report = with_fs(&image, |fs| {
            let plan = Plan::build(fs, false).unwrap();
            let opts = ExtractOptions {
                owners: false,
                stream,
                ..ExtractOptions::default()
            };
            extract(fs, &plan, &dest, &opts).unwrap()
        });
        assert!(report.refused.is_empty(), "{:?}", report.refused);
        assert!(
            report.metadata_errors.is_empty(),
            "{:?}",
            report.metadata_errors
        );
        assert_eq!(
            (report.files, report.hard_links, report.symlinks),
            (120, 7, 4)
        );
        let tree = tree_listing(&dest);
        for (path, mode, _, mtime, _, _) in &tree {
            let link = mode & libc::S_IFMT == libc::S_IFLNK;
            assert!(
                link || (1_000_000..1_001_000).contains(mtime),
                "{path}: {mtime}"
            );
        }
        seen.push((tree, report.data_bytes, report.hole_bytes));
    }
    assert!(seen.iter().all(|s| *s == seen[0]));
}

/// The stream's modes whose results must not differ: the default, on the calling thread only,
/// and one node at a time with nothing held or read ahead.
fn stream_modes() -> [StreamOptions; 3] {
    [
        StreamOptions::default(),
        StreamOptions {
            sequential: true,
            ..StreamOptions::default()
        },
        StreamOptions {
            held_bytes: 0,
            ahead_bytes: 1,
            job_bytes: 1,
            ahead_jobs: 1,
            ..StreamOptions::default()
        },
    ]
}
