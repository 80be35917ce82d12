//! Tests of the views on crafted images.

use super::*;
use crate::format::dt;
use crate::layout::EndPad;
use crate::testing::Img;
use crate::{Image, ImageOptions};

const ES: u32 = 8192;

/// `n` files of 3000 bytes, laid out with or without summaries and cleanmarkers.
fn image(e: Endian, summary: bool, cleanmarker: Option<u32>, n: u32) -> Vec<u8> {
    let mut img = Img::new()
        .endian(e)
        .erase_size(ES)
        .cleanmarkers(cleanmarker)
        .end_pad(EndPad::None)
        .exact_fit();
    img.summary = summary;
    for k in 0..n {
        img.dirent(1, k, k + 2, dt::REG, format!("f{k}").as_bytes())
            .data(k + 2, 1, 3000, 0, &vec![k as u8; 3000]);
    }
    img.build()
}

/// `img` opened in the byte order and erase size it was laid out with (the cleanmarker size is
/// detected: the one it was laid out with, 0 without); the views are built on its model even
/// where Linux would refuse the mount ([`Image::salvage`]).
fn opened(img: Vec<u8>, e: Endian) -> Image<'static> {
    let opts = ImageOptions {
        erase_size: Some(ES),
        endian: Some(e),
        ..Default::default()
    };
    Image::from_vec_with(img, &opts).unwrap()
}

#[test]
fn walk_covers_the_image_in_order() {
    for e in [Endian::Little, Endian::Big] {
        let mut img = image(e, false, Some(12), 6);
        img.extend_from_slice(&[0, 0, 0, 0, 1, 2, 3, 4]);
        img.extend_from_slice(&[0xFF; 64]);
        let mut pos = 0u64;
        let (mut nodes, mut gaps) = (0, 0);
        for it in walk(&img, e) {
            match it {
                Item::Node(n) => {
                    assert_eq!(n.offset, pos);
                    assert!(n.crcs_ok(), "{n:?}");
                    pos += (u64::from(n.totlen) + 3) & !3;
                    nodes += 1;
                }
                Item::Gap { offset, len, .. } => {
                    assert_eq!(offset, pos);
                    pos += len;
                    gaps += 1;
                }
            }
        }
        assert_eq!(pos, img.len() as u64);
        assert!(nodes >= 12 + 2, "{nodes}");
        assert!(gaps >= 2);
    }
}

#[test]
fn walk_never_loops_on_huge_totlen() {
    let e = Endian::Little;
    let mut img = vec![0xFFu8; 16];
    let mut h = Vec::new();
    e.put_u16(&mut h, crate::format::MAGIC);
    e.put_u16(&mut h, crate::format::NODETYPE_INODE);
    e.put_u32(&mut h, 0xFFFF_FFFE);
    let crc = crate::crc::crc32(&h);
    e.put_u32(&mut h, crc);
    img.extend_from_slice(&h);
    img.extend_from_slice(&[0xAB; 100]);
    let items: Vec<Item> = walk(&img, e).collect();
    assert_eq!(items.len(), 2, "{items:?}");
    let Item::Node(n) = &items[1] else {
        panic!("{items:?}")
    };
    assert!(n.truncated);
    // The fixed part is in the image; the data is not.
    let Body::Inode { data_crc, .. } = &n.body else {
        panic!("{n:?}")
    };
    assert_eq!(data_crc.computed, None);
    // Without room for the fixed part, the node is short.
    let items: Vec<Item> = walk(&img[..img.len() - 60], e).collect();
    let Item::Node(n) = &items[1] else {
        panic!("{items:?}")
    };
    assert_eq!(n.body, Body::Short);
}

#[test]
fn blocks_summaries_and_svg() {
    let e = Endian::Big;
    let mut img = image(e, true, Some(12), 12);
    // As flashed, then two more erased blocks.
    img.resize(
        crate::scan::flashed_len(img.len(), ES) + 2 * ES as usize,
        0xFF,
    );
    let image = opened(img, e);
    let (f, _) = image.salvage();
    let img = image.flash();
    let b = blocks(f.scan(), img);
    assert_eq!(b.len(), img.len() / ES as usize);
    let with: Vec<_> = b.iter().filter(|x| x.summary_present).collect();
    assert!(with.len() >= 4, "{b:?}");
    assert!(with
        .iter()
        .all(|x| x.summary == SummaryUse::Used && x.cleanmarker));
    assert_eq!(
        b.iter().filter(|x| x.state == BlockState::Erased).count(),
        2,
        "{b:?}"
    );
    let sums = summaries(f.scan(), img);
    let used: Vec<_> = sums.iter().filter(|s| s.node.is_some()).collect();
    assert_eq!(used.len(), with.len());
    for s in used {
        let Some(NodeInfo {
            body:
                Body::Summary {
                    node,
                    records,
                    sum_crc,
                    ..
                },
            ..
        }) = &s.node
        else {
            panic!("{s:?}")
        };
        assert!(sum_crc.ok());
        assert_eq!(
            records.as_ref().map(Vec::len).ok(),
            Some(node.sum_num as usize)
        );
    }
    let mut text = Vec::new();
    blocks::write_blocks(&b, &mut text).unwrap();
    blocks::write_summaries(&sums, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("kernel: used"), "{text}");
    assert!(text.contains("    dirent  0x"), "{text}");
    let header = text.lines().next().unwrap();
    assert!(header.contains(" cleanmarker "), "{header}");
    assert!(!header.contains(" clean "), "{header}");
    let svg = svg_map(&b, &f.scan().totals(), "t <&> \"q\"");
    assert_eq!(svg.matches("<g><title>").count(), b.len());
    // Each square carries its block's number; each tooltip the number, offset and state.
    assert_eq!(block_numbers(&svg), (0..b.len() as u32).collect::<Vec<_>>());
    for x in &b {
        assert!(svg.contains(&format!(
            "<title>block {} at 0x{:08x}: {}\nused {}",
            x.index,
            x.offset,
            x.state.name(),
            x.used
        )));
    }
    // Row labels: the first block of each row and its offset.
    assert!(svg.contains(">0  0x00000000</text>"), "{svg}");
    // Only the states that occur are in the legend: cleanmarkers, so no erased-free entry.
    assert!(!svg.contains("the image has no cleanmarkers"));
    assert!(!svg.contains("all dirty (no valid node)"));
    assert!(svg.contains("t &lt;&amp;&gt; &quot;q&quot;"));
    assert!(svg.ends_with("</svg>\n"));
}

/// The numbers written on the map's squares, in order.
fn block_numbers(svg: &str) -> Vec<u32> {
    svg.split(r#"<text class="block""#)
        .skip(1)
        .map(|t| {
            let t = &t[t.find('>').unwrap() + 1..];
            t[..t.find('<').unwrap()].parse().unwrap()
        })
        .collect()
}

#[test]
fn map_of_an_image_without_cleanmarkers() {
    let e = Endian::Little;
    let mut img = image(e, false, None, 6);
    img.resize(
        crate::scan::flashed_len(img.len(), ES) + 3 * ES as usize,
        0xFF,
    );
    let image = opened(img, e);
    let (f, _) = image.salvage();
    let b = blocks(f.scan(), image.flash());
    assert!(b.iter().all(|x| !x.cleanmarker));
    let svg = svg_map(&b, &f.scan().totals(), "t");
    // The erased blocks are free for writing, and no block can hold a cleanmarker alone.
    assert!(
        svg.contains("free (erased; the image has no cleanmarkers) — "),
        "{svg}"
    );
    assert!(!svg.contains("cleanmarker only"), "{svg}");
    assert!(!svg.contains("summary used by the kernel"), "{svg}");
    // The shares as jffs2-fsck prints them: checked bytes only count as used.
    let sh = f.scan().totals().shares(image.flash().len() as u64);
    assert!(
        svg.contains(&format!("used {}, unchecked {},", sh.used, sh.unchecked)),
        "{svg}"
    );
}

#[test]
fn verdicts_follow_the_scan() {
    let e = Endian::Little;
    let mut img = image(e, false, None, 3);
    // Obsolete the first dirent on flash (clear ACCURATE): the scan counts it as dirt.
    img[3] &= !0x20;
    let image = opened(img, e);
    let (f, _) = image.salvage();
    let img = image.flash();
    let kv = KernelView::new(f.scan());
    let nodes: Vec<Box<NodeInfo>> = walk(img, e)
        .filter_map(|i| match i {
            Item::Node(n) => Some(n),
            Item::Gap { .. } => None,
        })
        .collect();
    assert!(!nodes[0].accurate());
    assert_eq!(
        kv.verdict(nodes[0].offset),
        NodeVerdict::Dirt(DirtCause::Obsolete)
    );
    assert!(matches!(
        kv.verdict(nodes[2].offset),
        NodeVerdict::Linked { .. }
    ));
    assert_eq!(
        kv.verdict(u64::from(u32::MAX) + 5),
        NodeVerdict::OutsideFlash
    );
}

#[test]
fn info_reads_the_mkfs_options_back() {
    let e = Endian::Big;
    let raw = image(e, false, None, 5);
    let image = opened(raw, e);
    let (f, _) = image.salvage();
    let i = info(
        image.file_bytes(),
        image.detection(),
        &f,
        &InfoOptions::default(),
    );
    assert_eq!(i.page_size, 4096);
    assert_eq!(i.max_dsize, 3000);
    assert!(i.times_zero);
    assert_eq!(i.inodes.get("file"), Some(&5));
    assert_eq!(i.compressors.get("none"), Some(&5));
    let line = i.mkfs.line();
    assert!(
        line.starts_with("mkfs.jffs2 -r DIR -o IMAGE -e 8KiB -b -n -f"),
        "{line}"
    );
    // The data would compress: compression was off.
    assert!(line.contains("-m none"), "{line}");
}
