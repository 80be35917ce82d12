//! `mkfs::build` on host files that change while they are read, checked with `fsck` and read
//! back through `Image` (a test across the layers, so it lives outside the crate's modules).

use jffs2::mkfs::{self, MkfsConfig, MsgKind, Sink};
use jffs2::{fsck, source};

#[derive(Default)]
struct Messages(Vec<String>);
impl Sink for Messages {
    fn message(&mut self, _kind: MsgKind, text: &str) {
        self.0.push(text.to_string());
    }
}

/// Files whose size changes between the listing and the reading: the image stays
/// consistent (each file's size is the data stored) and each is reported by name.
#[test]
fn files_that_change_size_while_read_are_stored_consistently() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("grew"), b"0123456789").unwrap();
    let shrunk: Vec<u8> = (0..20_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(dir.path().join("shrank"), &shrunk).unwrap();
    std::fs::write(dir.path().join("emptied"), b"").unwrap();
    // Files read in several batches: one ends in its second batch, one goes on past its
    // last (the batches after a short one are dropped; the growth is seen at the end).
    let long: Vec<u8> = (0..600_000u32)
        .map(|i| (i % 239) as u8 ^ (i >> 12) as u8)
        .collect();
    std::fs::write(dir.path().join("shrank_far"), &long[..300_000]).unwrap();
    std::fs::write(dir.path().join("grew_far"), &long).unwrap();
    let (mut tree, _) = source::scan_host(dir.path(), &Default::default()).unwrap();
    // A file in /proc is listed with size 0 and reads more: it "grows". The others are
    // listed larger than what they hold: they "shrink" (to nothing for the last).
    let grew = tree.find(b"/grew").unwrap();
    tree.entries[grew].host_path = "/proc/self/stat".into();
    let s = tree.find(b"/shrank").unwrap();
    tree.entries[s].size = 100_000;
    let em = tree.find(b"/emptied").unwrap();
    tree.entries[em].size = 5000;
    let far = tree.find(b"/shrank_far").unwrap();
    tree.entries[far].size = 1_000_000;
    let gf = tree.find(b"/grew_far").unwrap();
    tree.entries[gf].size = 300_000;
    let mut image = Vec::new();
    let mut sink = Messages::default();
    mkfs::build(&tree, &MkfsConfig::default(), &mut image, &mut sink).unwrap();
    let changed: Vec<&String> = sink
        .0
        .iter()
        .filter(|m| m.contains("changed size while being read"))
        .collect();
    assert_eq!(changed.len(), 5, "{:?}", sink.0);
    assert!(changed.iter().any(|m| m.starts_with("/proc/self/stat: ")
        && m.ends_with("(more than its 10 bytes; the first 10 stored)")));
    assert!(changed.iter().any(|m| m.ends_with(
        "shrank: changed size while being read (20000 bytes read of 100000; the 20000 stored)"
    )));

    let report = fsck::check(&image, &Default::default()).unwrap();
    assert_eq!(report.verdict().exit_code(), 0, "{:?}", report.findings);
    let image = jffs2::Image::from_vec(image).unwrap();
    let fsm = image.mount().unwrap();
    let root = fsm.read_inode(1).unwrap();
    let ino = |n: &[u8]| root.dents.iter().find(|d| d.name == n).unwrap().ino;
    let size = |n: &[u8]| fsm.read_inode(ino(n)).unwrap().size;
    assert_eq!(size(b"grew"), 10);
    assert_eq!(size(b"shrank"), 20_000);
    assert_eq!(size(b"emptied"), 0);
    assert_eq!(fsm.read_data(ino(b"shrank"), 0, 200_000).unwrap(), shrunk);
    assert_eq!(fsm.read_data(ino(b"grew"), 0, 100).unwrap().len(), 10);
    assert_eq!(size(b"shrank_far"), 300_000);
    assert_eq!(
        fsm.read_data(ino(b"shrank_far"), 0, 2_000_000).unwrap(),
        &long[..300_000]
    );
    assert_eq!(size(b"grew_far"), 300_000);
    assert_eq!(
        fsm.read_data(ino(b"grew_far"), 0, 2_000_000).unwrap(),
        &long[..300_000]
    );
}
