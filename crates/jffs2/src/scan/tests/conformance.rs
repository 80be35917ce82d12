//! Conformance with the real kernel: crafted images, one defect each, are mounted read-only
//! by Linux 6.1 under qemu (`tests/kernel/harness.py`, docs/TESTING.md) and the scan-time
//! messages it prints are compared with the scan's log, message for message and level for
//! level, as is whether the mount succeeded.
//!
//! Slow (two qemu boots, ~30 s) and needs the harness: run it with
//! `cargo test -p jffs2 --lib scan::tests::conformance -- --ignored --nocapture`.
//! Images that make the kernel BUG() are not in the corpus (a BUG ends the boot).

use std::path::Path;
use std::process::Command;

use super::*;
use crate::format::{SumRecord, SummaryNode};
use crate::scan::as_flashed;
use crate::scan::msg::{is_scan_message, normalize_dmesg};

const LE: Endian = Endian::Little;
const ES: u32 = 16 * 1024;

/// A minimal JSON value, enough to read the harness's result.
#[derive(Debug, Clone)]
enum Json {
    Null,
    Bool(bool),
    Num,
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn get(&self, k: &str) -> Option<&Json> {
        match self {
            Json::Obj(v) => v.iter().find(|(n, _)| n == k).map(|(_, j)| j),
            _ => None,
        }
    }
    fn str(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
    fn arr(&self) -> &[Json] {
        match self {
            Json::Arr(v) => v,
            _ => &[],
        }
    }
}

struct P<'a> {
    s: &'a [u8],
    i: usize,
}

impl P<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn value(&mut self) -> Option<Json> {
        self.ws();
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s.get(self.i) == Some(&b'}') {
                        self.i += 1;
                        return Some(Json::Obj(v));
                    }
                    let Json::Str(k) = self.value()? else {
                        return None;
                    };
                    self.ws();
                    self.i += 1; // ':'
                    let val = self.value()?;
                    v.push((k, val));
                    self.ws();
                    if self.s.get(self.i) == Some(&b',') {
                        self.i += 1;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut v = Vec::new();
                loop {
                    self.ws();
                    if self.s.get(self.i) == Some(&b']') {
                        self.i += 1;
                        return Some(Json::Arr(v));
                    }
                    v.push(self.value()?);
                    self.ws();
                    if self.s.get(self.i) == Some(&b',') {
                        self.i += 1;
                    }
                }
            }
            b'"' => {
                self.i += 1;
                let mut out = Vec::new();
                loop {
                    let c = *self.s.get(self.i)?;
                    self.i += 1;
                    match c {
                        b'"' => return Some(Json::Str(String::from_utf8_lossy(&out).into())),
                        b'\\' => {
                            let e = *self.s.get(self.i)?;
                            self.i += 1;
                            match e {
                                b'n' => out.push(b'\n'),
                                b't' => out.push(b'\t'),
                                b'r' => out.push(b'\r'),
                                b'u' => {
                                    let h = std::str::from_utf8(self.s.get(self.i..self.i + 4)?)
                                        .ok()?;
                                    self.i += 4;
                                    let c = char::from_u32(u32::from_str_radix(h, 16).ok()?)
                                        .unwrap_or('?');
                                    let mut b = [0; 4];
                                    out.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                                }
                                o => out.push(o),
                            }
                        }
                        o => out.push(o),
                    }
                }
            }
            b't' => {
                self.i += 4;
                Some(Json::Bool(true))
            }
            b'f' => {
                self.i += 5;
                Some(Json::Bool(false))
            }
            b'n' => {
                self.i += 4;
                Some(Json::Null)
            }
            _ => {
                let st = self.i;
                while self.i < self.s.len() && b"+-0123456789.eE".contains(&self.s[self.i]) {
                    self.i += 1;
                }
                std::str::from_utf8(&self.s[st..self.i])
                    .ok()?
                    .parse::<f64>()
                    .ok()
                    .map(|_| Json::Num)
            }
        }
    }
}

/// A case: an image (before the harness pads it), its partition size, and a label.
struct Case {
    id: &'static str,
    image: Vec<u8>,
    pad_to: Option<u32>,
}

/// Block 0 of every image: a cleanmarker, a dirent and its inode, so the mount succeeds.
fn base(blocks: u32) -> Flash {
    let mut f = erased(LE, ES, blocks);
    f.put(0, &cleanmarker(LE));
    f.put(12, &dirent(LE, 1, 2, 1, b"file"));
    f.put(56, &inode(LE, 2, 1, b"hello\n"));
    f
}

fn summary_block(f: &mut Flash, blk: u32, records: &[u8], sum_num: u32, at: u32) {
    let e = f.e;
    let totlen = ES - at;
    let mut v = Vec::new();
    e.put_u16(&mut v, 0x1985);
    e.put_u16(&mut v, 0x2006);
    e.put_u32(&mut v, totlen);
    let h = crc32(&v);
    e.put_u32(&mut v, h);
    e.put_u32(&mut v, sum_num);
    e.put_u32(&mut v, 12);
    e.put_u32(&mut v, 0);
    e.put_u32(&mut v, 0);
    e.put_u32(&mut v, 0);
    v.extend_from_slice(records);
    v.resize(totlen as usize - 8, 0xFF);
    e.put_u32(&mut v, at);
    e.put_u32(&mut v, crate::format::SUM_MAGIC);
    let sc = crc32(&v[32..]);
    v[24..28].copy_from_slice(&e.u32_bytes(sc));
    let nc = crc32(&v[..24]);
    v[28..32].copy_from_slice(&e.u32_bytes(nc));
    f.put(blk * ES + at, &v);
}

/// Block `blk`: cleanmarker, dirent `name` → ino, the inode; returns the end offset in block.
fn data_block(f: &mut Flash, blk: u32, name: &[u8], ino: u32) -> u32 {
    let o = blk * ES;
    f.put(o, &cleanmarker(LE));
    let d = dirent(LE, 1, ino, 1, name);
    f.put(o + 12, &d);
    let n = inode(LE, ino, 1, &[b'x'; 100]);
    f.put(o + 12 + d.len() as u32, &n);
    12 + d.len() as u32 + n.len() as u32
}

fn records(name: &[u8], ino: u32) -> Vec<u8> {
    let mut v = Vec::new();
    let dlen = 40 + name.len() as u32;
    SumRecord::Dirent {
        nodetype: 0xE001,
        totlen: dlen,
        offset: 12,
        pino: 1,
        version: 1,
        ino,
        dtype: 8,
        name: name.to_vec(),
    }
    .encode(LE, &mut v);
    SumRecord::Inode {
        nodetype: 0xE002,
        inode: ino,
        version: 1,
        offset: 12 + pad4(dlen),
        totlen: 168,
    }
    .encode(LE, &mut v);
    v
}

fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    let mut add = |id, f: Flash, pad_to: Option<u32>| {
        v.push(Case {
            id,
            image: f.build(),
            pad_to,
        })
    };
    add("clean", base(6), None);
    {
        let mut f = base(6);
        // Block 1: 0xFF at bytes 12..31 after the cleanmarker: the kernel stops reading
        // (the node at 40 is ignored). Block 2: a gap ending inside that window.
        f.put(ES, &cleanmarker(LE));
        f.put(ES + 40, &inode(LE, 2, 2, b"gap"));
        f.put(2 * ES, &cleanmarker(LE));
        f.put(2 * ES + 20, &inode(LE, 2, 3, b"gap"));
        // Block 3: 100 bytes of 0xFF at the start (dirt, silent), then a node.
        f.put(3 * ES + 100, &inode(LE, 2, 4, b"late"));
        add("empty-flash-gap", f, None);
    }
    {
        let mut f = base(6);
        f.put(ES, &[0x11; 200]);
        f.put(2 * ES, &[0x11; 12]);
        add("bad-magic-noise", f, None);
    }
    {
        let mut f = base(6);
        f.put(ES, &[0; 64]);
        f.put(2 * ES, &[0x84, 0x19, 0x03, 0x20]);
        f.put(3 * ES, &cleanmarker(Endian::Big));
        add("zero-old-swapped", f, None);
    }
    {
        let mut f = base(6);
        let mut n = inode(LE, 2, 2, b"obsolete");
        n[3] &= !0x20;
        f.put(ES, &n);
        let mut n = inode(LE, 2, 3, b"badhdr");
        n[8] ^= 1;
        f.put(2 * ES, &n);
        add("obsolete-and-header-crc", f, None);
    }
    {
        let mut f = base(6);
        let n = inode(LE, 3, 1, &[0x55; 300]);
        f.put(ES, &cleanmarker(LE));
        f.put(ES + 12, &inode(LE, 2, 2, b"x"));
        f.put(2 * ES - 100, &n[..100]);
        add("crosses-block-end", f, None);
    }
    {
        let mut f = base(6);
        let mut at = ES;
        for n in [
            cleanmarker(LE),
            xattr(LE, 5, 1, b"user-name", b"value"),
            xattr(LE, 5, 2, b"user-name", b"value2"),
            xref(LE, 2, 5, 2),
        ] {
            f.put(at, &n);
            at += n.len() as u32;
        }
        let mut at = 2 * ES;
        for n in [
            cleanmarker(LE),
            dirent(LE, 1, 2, 5, b"dup"),
            dirent(LE, 1, 2, 4, b"dup"),
            dirent(LE, 1, 0, 6, b"file"),
            inode(LE, 0, 1, b"phantom"),
        ] {
            f.put(at, &n);
            at += n.len() as u32;
        }
        add("valid-xattrs-dedupe-phantom", f, None);
    }
    {
        let mut f = base(6);
        let mut n = inode(LE, 2, 2, b"data");
        n[20] ^= 0xFF;
        f.put(ES, &n);
        let mut d = dirent(LE, 1, 2, 2, b"other");
        d[20] ^= 1;
        f.put(2 * ES, &d);
        let mut d = dirent(LE, 1, 2, 3, b"third");
        d[41] ^= 1;
        f.put(3 * ES, &d);
        add("node-and-name-crc", f, None);
    }
    {
        let mut f = base(6);
        f.put(ES, &dirent(LE, 1, 2, 2, b"ab\0cd"));
        let mut d = dirent(LE, 1, 2, 3, b"xy\0z");
        let c = crc32(b"xy");
        d[36..40].copy_from_slice(&c.to_le_bytes());
        f.put(2 * ES, &d);
        add("zeroes-in-name", f, None);
    }
    {
        let mut f = base(6);
        let n = inode(LE, 2, 2, b"abcd");
        f.put(ES, &n);
        f.put(ES + n.len() as u32, &cleanmarker(LE));
        let mut cm16 = header(LE, 0x2003, 16);
        cm16.extend_from_slice(&[0xFF; 4]);
        f.put(2 * ES, &cm16);
        add("cleanmarker-rules", f, None);
    }
    {
        let mut f = base(6);
        let mut x = xattr(LE, 3, 1, b"n", b"v");
        x[16] ^= 1;
        f.put(ES, &x);
        let mut x = xattr(LE, 4, 1, b"n", b"v");
        x[4] = 40;
        refresh(LE, &mut x, 28);
        f.put(2 * ES, &x);
        let mut r = xref(LE, 2, 3, 4);
        r[4] = 32;
        refresh(LE, &mut r, 24);
        r.extend_from_slice(&[0; 4]);
        f.put(3 * ES, &r);
        add("xattr-errors", f, None);
    }
    {
        let mut f = base(6);
        f.put(ES, &raw_node(LE, 0xA001, 20));
        f.put(2 * ES, &raw_node(LE, 0x6001, 20));
        f.put(2 * ES + 20, &raw_node(LE, 0x2005, 20));
        f.put(2 * ES + 40, &raw_node(LE, 0x2004, 24));
        add("rocompat-copy-delete-padding", f, None);
    }
    {
        let mut f = base(6);
        f.put(ES, &raw_node(LE, 0xE00A, 20));
        add("incompat", f, None);
    }
    {
        let mut f = base(6);
        let n = inode(LE, 2, 2, &vec![0x41; (ES - 68 - 8) as usize]);
        f.put(ES, &n);
        let mut h = header(LE, 0xE002, 0);
        h[3] &= !0x20;
        f.put(2 * ES, &h);
        add("tail-and-zero-totlen", f, None);
    }
    {
        let mut f = base(6);
        for b in 1..4 {
            let end = data_block(&mut f, b, format!("f{b}").as_bytes(), 10 + b);
            summary_block(
                &mut f,
                b,
                &records(format!("f{b}").as_bytes(), 10 + b),
                2,
                end,
            );
        }
        // Block 1: corrupt summary. Block 2: valid. Block 3: unaligned (1 byte "free").
        f.put(ES + 3000, &[0]);
        let end = data_block(&mut f, 3, b"f3", 13);
        let mut blk = erased(LE, ES, 1);
        summary_block(&mut blk, 0, &records(b"f3", 13), 2, end + 1);
        f.put(3 * ES + end, &blk.build()[end as usize..]);
        add("summaries", f, None);
    }
    {
        let mut f = base(6);
        let end = data_block(&mut f, 1, b"a\0b", 11);
        summary_block(&mut f, 1, &records(b"a\0b", 11), 2, end);
        // An unsupported compatible record first: a clean fall-back to the full scan. (After
        // other records the kernel crashes, which would end the boot: not in the corpus.)
        let end = data_block(&mut f, 2, b"c2", 12);
        let mut r = 0x2005u16.to_le_bytes().to_vec();
        r.extend(records(b"c2", 12));
        summary_block(&mut f, 2, &r, 3, end);
        add("summary-truncated-name-and-compat-record", f, None);
    }
    {
        let mut f = base(6);
        let end = data_block(&mut f, 1, b"\0b", 11);
        summary_block(&mut f, 1, &records(b"\0b", 11), 2, end);
        add("summary-zero-name-aborts", f, None);
    }
    {
        let mut f = base(6);
        let end = data_block(&mut f, 1, b"d1", 11);
        summary_block(&mut f, 1, &records(b"d1", 11), 3, end);
        add("summary-sum-num-too-large", f, None);
    }
    {
        let mut f = erased(LE, ES, 6);
        for b in 0..6 {
            f.put(b * ES, &[0x11; 8]);
        }
        add("cowardly", f, None);
    }
    add("too-few-blocks", base(4), Some(4 * ES));
    {
        // A big-endian image on a little-endian host.
        let e = Endian::Big;
        let mut f = erased(e, ES, 6);
        f.put(0, &cleanmarker(e));
        f.put(12, &dirent(e, 1, 2, 1, b"file"));
        add("wrong-endian", f, None);
    }
    {
        // An 8 KiB-block summary image mounted with 16 KiB blocks (§10.5).
        let mut f = erased(LE, 8192, 12);
        f.put(0, &cleanmarker(LE));
        f.put(12, &dirent(LE, 1, 2, 1, b"file"));
        f.put(56, &inode(LE, 2, 1, b"hello\n"));
        for b in 1..3u32 {
            let o = b * 8192;
            f.put(o, &cleanmarker(LE));
            let name = format!("g{b}");
            let d = dirent(LE, 1, 20 + b, 1, name.as_bytes());
            f.put(o + 12, &d);
            let n = inode(LE, 20 + b, 1, &[b'x'; 100]);
            f.put(o + 12 + d.len() as u32, &n);
            let end = 12 + d.len() as u32 + n.len() as u32;
            let mut s = Vec::new();
            let recs = vec![
                SumRecord::Dirent {
                    nodetype: 0xE001,
                    totlen: 40 + name.len() as u32,
                    offset: 12,
                    pino: 1,
                    version: 1,
                    ino: 20 + b,
                    dtype: 8,
                    name: name.into_bytes(),
                },
                SumRecord::Inode {
                    nodetype: 0xE002,
                    inode: 20 + b,
                    version: 1,
                    offset: 12 + d.len() as u32,
                    totlen: 168,
                },
            ];
            SummaryNode {
                cln_mkr: 12,
                ..Default::default()
            }
            .encode(LE, &recs, end, 8192, &mut s)
            .unwrap();
            f.put(o + end, &s);
        }
        add("wrong-erase-size-summaries", f, None);
    }
    v
}

#[test]
#[ignore]
fn kernel_conformance() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let harness = repo.join("tests/kernel/harness.py");
    let tmp = tempfile::tempdir().unwrap();
    // JFFS2_CONFORMANCE_ONLY=id,id runs a subset; the harness result is kept in
    // JFFS2_CONFORMANCE_KEEP (a directory) when set.
    let only = std::env::var("JFFS2_CONFORMANCE_ONLY").ok();
    let cases: Vec<Case> = cases()
        .into_iter()
        .filter(|c| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|x| x == c.id))
        })
        .collect();
    let mut spec = String::from("{\"timeout\": 600, \"images\": [");
    for (i, c) in cases.iter().enumerate() {
        let p = tmp.path().join(format!("{}.img", c.id));
        std::fs::write(&p, &c.image).unwrap();
        if i > 0 {
            spec.push(',');
        }
        spec.push_str(&format!(
            "{{\"id\": \"{}\", \"path\": \"{}\", \"erase_size\": {ES}{}}}",
            c.id,
            p.display(),
            c.pad_to
                .map(|x| format!(", \"pad_to\": {x}"))
                .unwrap_or_default()
        ));
    }
    spec.push_str("]}");
    let spec_path = tmp.path().join("spec.json");
    let out_path = tmp.path().join("result.json");
    std::fs::write(&spec_path, spec).unwrap();
    let st = Command::new("python3")
        .arg(&harness)
        .arg("run")
        .arg("--spec")
        .arg(&spec_path)
        .arg("--out")
        .arg(&out_path)
        .status()
        .unwrap();
    assert!(out_path.exists(), "harness failed: {st:?}");
    let text = std::fs::read(&out_path).unwrap();
    if let Ok(keep) = std::env::var("JFFS2_CONFORMANCE_KEEP") {
        let _ = std::fs::write(Path::new(&keep).join("result.json"), &text);
    }
    let res = P { s: &text, i: 0 }.value().expect("result JSON");
    let results = res
        .get("results")
        .map(|r| r.arr().to_vec())
        .unwrap_or_default();
    let mut bad = Vec::new();
    for c in &cases {
        let r = results
            .iter()
            .find(|r| r.get("id").and_then(Json::str) == Some(c.id))
            .unwrap_or_else(|| panic!("{}: no result", c.id));
        let mount_ok = matches!(r.get("mount_ok"), Some(Json::Bool(true)));
        let mut kernel: Vec<(String, String)> = Vec::new();
        for m in r.get("kernel_log").map(|k| k.arr()).unwrap_or(&[]) {
            let msg = m.get("msg").and_then(Json::str).unwrap_or("");
            let lvl = m.get("level").and_then(Json::str).unwrap_or("");
            if let Some(t) = normalize_dmesg(msg) {
                if is_scan_message(&t) {
                    kernel.push((lvl.to_string(), t));
                }
            }
        }
        let pad = c.pad_to.unwrap_or(0) as usize;
        let mut img = as_flashed(&c.image, ES).into_owned();
        if pad > 0 {
            img.resize(pad.max(c.image.len()), 0xFF);
        }
        let s = scan(
            &img,
            &Geometry {
                endian: LE,
                erase_size: ES,
                cleanmarker_size: 12,
            },
            &ScanOptions::default(),
        );
        let ours: Vec<(String, String)> = s
            .log
            .iter()
            .map(|m| (m.level.name().to_string(), m.text.clone()))
            .collect();
        let status = r.get("status").and_then(Json::str).unwrap_or("?");
        eprintln!("== {} (kernel status {status}, mount_ok={mount_ok})", c.id);
        for (l, t) in &kernel {
            eprintln!("   kernel {l:8} {t}");
        }
        if ours != kernel {
            for (l, t) in &ours {
                eprintln!("   ours   {l:8} {t}");
            }
            bad.push(format!("{}: messages differ", c.id));
        }
        if mount_ok != s.failure.is_none() {
            bad.push(format!(
                "{}: kernel mount_ok={mount_ok}, scan failure={:?}",
                c.id, s.failure
            ));
        }
    }
    assert!(bad.is_empty(), "{bad:#?}");
}
