//! Autodetection of byte order, erase size and cleanmarker size.

use std::process::Command;

use super::images::{fixtures_dir, made_images, make_tree};
use super::*;
use crate::scan::detect::{walk, walk_parts, walks};
use crate::scan::{as_flashed, detect};

#[test]
fn mkfs_images_are_recognised() {
    for m in made_images() {
        let what = format!(
            "{} KiB {} cleanmarkers={} summary={}",
            m.erase / 1024,
            m.endian.name(),
            m.cleanmarkers,
            m.summary
        );
        for (label, img) in [
            ("raw", m.image.clone()),
            ("flashed", as_flashed(&m.image, m.erase).into_owned()),
        ] {
            let d = detect(&img);
            assert_eq!(
                d.geometry.endian, m.endian,
                "{what} {label}: {:#?}",
                d.evidence
            );
            assert_eq!(
                d.geometry.erase_size, m.erase,
                "{what} {label}: {:#?}",
                d.evidence
            );
            assert_eq!(
                d.geometry.cleanmarker_size,
                if m.cleanmarkers { 12 } else { 0 },
                "{what} {label}"
            );
            assert!(
                d.confidence > 0.5,
                "{what} {label}: {} {:#?}",
                d.confidence,
                d.evidence
            );
        }
    }
}

#[test]
fn kernel_fixtures_are_recognised() {
    let dir = fixtures_dir();
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
        let p = entry.path();
        if p.extension().is_none_or(|x| x != "img") {
            continue;
        }
        let json = std::fs::read_to_string(p.with_extension("json")).unwrap();
        let es: u32 = {
            let i = json.find("\"erase_size\"").unwrap();
            json[i + 12..]
                .trim_start_matches([':', ' '])
                .chars()
                .take_while(|c| c.is_ascii_digit())
                .collect::<String>()
                .parse()
                .unwrap()
        };
        let img = std::fs::read(&p).unwrap();
        let d = detect(&img);
        assert_eq!(d.geometry.endian, Endian::Little, "{p:?}");
        assert_eq!(d.geometry.erase_size, es, "{p:?}: {:#?}", d.evidence);
        assert_eq!(d.geometry.cleanmarker_size, 12, "{p:?}");
        assert!(
            d.confidence > 0.5,
            "{p:?}: {} {:#?}",
            d.confidence,
            d.evidence
        );
        seen += 1;
    }
    eprintln!("{seen} kernel fixtures detected");
}

#[test]
fn non_power_of_two_erase_size() {
    if Command::new("mkfs.jffs2").arg("--help").output().is_err() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("root");
    make_tree(&root);
    let out = tmp.path().join("x.img");
    let st = Command::new("mkfs.jffs2")
        .arg("-r")
        .arg(&root)
        .arg("-o")
        .arg(&out)
        .args(["-e", "0x2100", "-l"])
        .output()
        .unwrap();
    assert!(st.status.success());
    let img = std::fs::read(&out).unwrap();
    let d = detect(&img);
    assert_eq!(d.geometry.erase_size, 0x2100, "{:#?}", d.evidence);
    assert_eq!(d.geometry.cleanmarker_size, 12);
}

#[test]
fn erased_empty_and_foreign_data() {
    let d = detect(&[0xFF; 1 << 20]);
    assert_eq!(d.geometry.erase_size, 64 * 1024);
    assert!((d.confidence - 0.1).abs() < 1e-6);
    assert!(d.evidence[0].contains("0xFF"));

    let d = detect(&[]);
    assert_eq!(d.confidence, 0.0);
    assert!(d.evidence[0].contains("empty"));

    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    let random: Vec<u8> = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    let d = detect(&random);
    assert_eq!(d.confidence, 0.0, "{:#?}", d.evidence);
    assert!(d.evidence.iter().any(|e| e.contains("not a JFFS2 image")));

    let d = detect(&[0u8; 65536]);
    assert_eq!(d.confidence, 0.0);
}

#[test]
fn a_single_small_block_is_a_lower_bound() {
    // One cleanmarker and a couple of nodes: any erase size of at least 8 KiB fits.
    let e = Endian::Little;
    let mut v = cleanmarker(e);
    v.extend(dirent(e, 1, 2, 1, b"f"));
    v.extend(inode(e, 2, 1, b"data"));
    let d = detect(&v);
    assert_eq!(d.geometry.erase_size, 64 * 1024);
    assert!(d.confidence <= 0.3);
    assert_eq!(d.geometry.cleanmarker_size, 12);
}

/// The walks detection makes (the likelier byte order over the whole image, the other only
/// between its nodes) find exactly the nodes two whole-image walks find: on mkfs images of
/// either byte order, on images of both orders end to end (either first), after a MiB of
/// foreign data (the first MiB decides the order walked first), and with one order's image
/// in the middle of the other's.
#[test]
fn split_walks_find_what_whole_walks_find() {
    let made = made_images();
    assert!(!made.is_empty(), "mkfs.jffs2 is needed");
    let le = made
        .iter()
        .find(|m| m.endian == Endian::Little)
        .expect("an LE image");
    let be = made
        .iter()
        .find(|m| m.endian == Endian::Big)
        .expect("a BE image");
    let noise: Vec<u8> = (0..(1usize << 20) + 4096)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let cat = |parts: &[&[u8]]| -> Vec<u8> { parts.concat() };
    let half = be.image.len() / 2 / 4 * 4;
    let mut images: Vec<(String, Vec<u8>)> = made
        .iter()
        .map(|m| (format!("{} {}", m.endian.name(), m.erase), m.image.clone()))
        .collect();
    images.push(("LE then BE".into(), cat(&[&le.image, &be.image])));
    images.push(("BE then LE".into(), cat(&[&be.image, &le.image])));
    images.push(("noise then BE".into(), cat(&[&noise, &be.image])));
    images.push((
        "LE inside BE".into(),
        cat(&[&be.image[..half], &le.image, &be.image[half..]]),
    ));
    // A node holding an image (a padding node here; a file of an image stored as is): a
    // walk from inside it finds the nodes it holds, which the whole walk skips.
    let holding = |e: Endian, inner: &[u8]| -> Vec<u8> {
        let h = crate::format::NodeHeader {
            magic: crate::format::MAGIC,
            nodetype: crate::format::NODETYPE_PADDING,
            totlen: 12 + inner.len() as u32,
            hdr_crc: 0,
        };
        let mut v = Vec::new();
        v.extend_from_slice(&e.u16_bytes(h.magic));
        v.extend_from_slice(&e.u16_bytes(h.nodetype));
        v.extend_from_slice(&e.u32_bytes(h.totlen));
        v.extend_from_slice(&e.u32_bytes(h.computed_crc(e)));
        v.extend_from_slice(inner);
        v
    };
    images.push((
        "LE image in a node, then LE".into(),
        cat(&[&holding(Endian::Little, &le.image), &le.image]),
    ));
    images.push((
        "BE image in a node, in BE".into(),
        cat(&[
            &be.image[..half],
            &holding(Endian::Big, &be.image),
            &be.image[half..],
        ]),
    ));
    // …and where the node ends inside one of the nodes it holds (the image cut there, its
    // rest after the node): from inside, a walk is in that node when the whole walk comes
    // out of the outer one.
    let lw = walk(&le.image, Endian::Little);
    let cut_in = lw
        .nodes
        .iter()
        .skip(lw.nodes.len() / 2)
        .find(|n| n.totlen > 64)
        .map_or(64, |n| n.ofs as usize + 32);
    images.push((
        "LE image in a node that ends inside one of its nodes".into(),
        cat(&[
            &holding(Endian::Little, &le.image[..cut_in]),
            &le.image[cut_in..],
        ]),
    ));
    // …and a node holding the start of another that holds an image: from just inside the
    // outer node, a walk skips the inner one, whose image the whole walk reads.
    let inner = holding(Endian::Little, &le.image);
    let cut_at = 12 + (le.image.len() / 2 / 4 * 4);
    images.push((
        "LE image in a node in a node".into(),
        cat(&[&holding(Endian::Little, &inner[..cut_at]), &inner[cut_at..]]),
    ));
    for (what, img) in &images {
        // Walked in two halves from any middle: the nodes of one walk.
        for e in [Endian::Little, Endian::Big] {
            let want = walk(img, e);
            // About a hundred middles spread over the image (an odd step, so that they fall
            // at every kind of place in a node), and the first 64 words.
            let step = (img.len() / 100 / 4 * 4).max(4) + 4;
            let mids = (0..=img.len() / 4 * 4)
                .step_by(step)
                .chain((0..64).map(|k| 4 * k));
            let mids: Vec<usize> = mids.collect();
            for (k, &mid) in mids.iter().enumerate() {
                // Two parts, and now and then three (the third from another middle).
                let other = mids[(k * 7 + 3) % mids.len()];
                let got = walk_parts(img, e, &[mid]);
                if k % 5 == 0 {
                    let three = walk_parts(img, e, &[mid.min(other), mid.max(other)]);
                    assert_eq!(
                        (&three.nodes, three.node_bytes),
                        (&want.nodes, want.node_bytes),
                        "{what}, {}, parts at {mid} and {other}",
                        e.name()
                    );
                }
                assert!(
                    got.nodes == want.nodes && got.node_bytes == want.node_bytes,
                    "{what}, {}, halves at {mid}: {} nodes, a whole walk finds {}",
                    e.name(),
                    got.nodes.len(),
                    want.nodes.len()
                );
            }
        }
    }
    for (what, img) in images {
        let (l, b) = walks(&img);
        for (got, e) in [(l, Endian::Little), (b, Endian::Big)] {
            let want = walk(&img, e);
            assert!(
                got.nodes == want.nodes && got.node_bytes == want.node_bytes,
                "{what}, {}: {} nodes, a whole walk finds {}",
                e.name(),
                got.nodes.len(),
                want.nodes.len()
            );
        }
    }
}

/// A one-block image padded to its block (`-e SIZE --pad`): the byte order is certain from
/// the header CRCs, and the erase size is the image's length (a smaller size would start an
/// erased block without the cleanmarker mkfs writes at every block start).
#[test]
fn one_padded_block_gives_its_erase_size() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("motd"), b"Welcome\n").unwrap();
    let (tree, _) = crate::source::scan_host(dir.path(), &Default::default()).unwrap();
    for endian in [Endian::Little, Endian::Big] {
        for erase in [16 * 1024, 128 * 1024, 256 * 1024] {
            let cfg = crate::mkfs::MkfsConfig {
                endian,
                erase_size: erase,
                pad: crate::layout::EndPad::Block,
                ..Default::default()
            };
            let mut img = Vec::new();
            crate::mkfs::build(&tree, &cfg, &mut img, &mut crate::mkfs::NullSink).unwrap();
            assert_eq!(img.len(), erase as usize);
            let d = detect(&img);
            let what = format!("{} {} KiB: {:#?}", endian.name(), erase / 1024, d.evidence);
            assert_eq!(d.geometry.endian, endian, "{what}");
            assert_eq!(d.endian_confidence, 1.0, "{what}");
            assert_eq!(d.geometry.erase_size, erase, "{what}");
            assert!(d.confidence >= 0.5, "{} {what}", d.confidence);
        }
        // Unpadded, nothing tells the erase size: the byte order is still certain.
        let mut img = Vec::new();
        let cfg = crate::mkfs::MkfsConfig {
            endian,
            ..Default::default()
        };
        crate::mkfs::build(&tree, &cfg, &mut img, &mut crate::mkfs::NullSink).unwrap();
        let d = detect(&img);
        assert_eq!(d.endian_confidence, 1.0);
        assert!(d.confidence < 0.5, "{}", d.confidence);
    }
}

/// An image of `blocks` full `erase`-byte blocks of incompressible data (mkfs splits a node
/// at each block's end: no 0xFF between blocks), with or without cleanmarkers.
fn incompressible_image(endian: Endian, erase: u32, blocks: usize, cm: bool) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let data: Vec<u8> = (0..blocks * erase as usize)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(dir.path().join("noise"), data).unwrap();
    let (tree, _) = crate::source::scan_host(dir.path(), &Default::default()).unwrap();
    let cfg = crate::mkfs::MkfsConfig {
        endian,
        erase_size: erase,
        cleanmarker: cm.then_some(12),
        ..Default::default()
    };
    let mut img = Vec::new();
    crate::mkfs::build(&tree, &cfg, &mut img, &mut crate::mkfs::NullSink).unwrap();
    img
}

/// Bytes cut out of (or inserted into) a block shift every block after it, so no size fits
/// every node, or only a larger one by chance (a size over the image's length always does
/// without cleanmarkers); the size the image was made with is still the one it lays out
/// longest in one stretch (binaryanalysis-ng's `test-little-cut-data-from-middle.jffs2`, in
/// `fixtures/thirdparty/`, was taken for 1 MiB: the size with the fewest boundaries to
/// break). With cleanmarkers the stretch may be after the damage, which may be in the first
/// block.
#[test]
fn bytes_cut_or_inserted_keep_the_erase_size() {
    for (endian, erase, cm) in [
        (Endian::Little, 64 * 1024, true),
        (Endian::Big, 16 * 1024, true),
        (Endian::Little, 128 * 1024, true),
        (Endian::Little, 64 * 1024, false),
        (Endian::Big, 16 * 1024, false),
    ] {
        let img = incompressible_image(endian, erase, 7, cm);
        let e = erase as usize;
        let mut cases = vec![];
        let blocks: &[usize] = if cm { &[0, 4] } else { &[4] };
        for &block in blocks {
            let at = block * e + e / 2 + 3;
            let mut cut = img.clone();
            cut.drain(at..at + 100);
            let mut inserted = img.clone();
            inserted.splice(at..at, [0x5Au8; 36]);
            cases.push((format!("cut in block {block}"), cut));
            cases.push((format!("inserted in block {block}"), inserted));
        }
        for (how, damaged) in cases {
            let d = detect(&damaged);
            let what = format!(
                "{} {} KiB cleanmarkers={cm}, {how}: {:#?}",
                endian.name(),
                erase / 1024,
                d.evidence
            );
            assert_eq!(d.geometry.endian, endian, "{what}");
            assert_eq!(d.geometry.erase_size, erase, "{what}");
            assert!(d.confidence < 0.5, "{} {what}", d.confidence);
            assert!(
                d.evidence
                    .iter()
                    .any(|e| e.contains("consecutive block starts")),
                "{what}"
            );
        }
    }
}
