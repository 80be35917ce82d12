//! Unit tests of the compressors, the selection logic and the decompressors.

use super::*;

/// Deterministic xorshift64* generator for test data.
pub(super) struct Rng(u64);

impl Rng {
    pub(super) fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub(super) fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub(super) fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub(super) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
}

/// Sample inputs covering the interesting shapes.
fn samples() -> Vec<(&'static str, Vec<u8>)> {
    let mut rng = Rng::new(7);
    let words = [
        "jffs2 ", "flash ", "erase ", "block ", "node ", "the ", "a ", "\n",
    ];
    let text: Vec<u8> = (0..5000)
        .flat_map(|_| words[rng.below(words.len())].bytes())
        .collect();
    let mut low_entropy = Vec::new();
    for i in 0..3000u32 {
        low_entropy.extend_from_slice(&(i % 97).to_le_bytes());
        low_entropy.push(rng.below(4) as u8);
    }
    vec![
        ("empty", Vec::new()),
        ("one", vec![42]),
        ("two", b"ab".to_vec()),
        ("hello", b"hello\n".to_vec()),
        ("zeros4k", vec![0; 4096]),
        ("ff4k", vec![0xff; 4096]),
        ("run1000", vec![b'a'; 1000]),
        ("abab", b"ab".repeat(3000)),
        ("text", text),
        ("random4k", rng.bytes(4096)),
        ("random100", rng.bytes(100)),
        ("lowentropy", low_entropy),
        ("big", {
            let mut v = rng.bytes(20000);
            v.extend(std::iter::repeat_n(7u8, 50000));
            v
        }),
    ]
}

#[test]
fn rtime_round_trip() {
    for (name, data) in samples() {
        for dstlen in [
            0,
            1,
            2,
            3,
            13,
            100,
            data.len() / 2,
            data.len(),
            data.len() * 2 + 2,
        ] {
            if let Some((out, consumed)) = rtime_compress(&data, dstlen) {
                assert!(out.len() <= dstlen, "{name}/{dstlen}: output too long");
                assert!(out.len() < consumed, "{name}/{dstlen}: not smaller");
                assert!(consumed <= data.len());
                assert_eq!(out.len() % 2, 0);
                let back = rtime_decompress(&out, consumed).expect(name);
                assert_eq!(back, data[..consumed], "{name}/{dstlen}");
            }
        }
    }
}

#[test]
fn rtime_edge_cases() {
    // Empty input and tiny output room fail (no iteration, or "outpos >= pos").
    assert_eq!(rtime_compress(b"", 100), None);
    assert_eq!(rtime_compress(b"a", 1), None);
    assert_eq!(rtime_compress(b"a", 100), None);
    // 1000 equal bytes: literal + run 255 repeatedly; the first literal is compared with
    // position 0 (the initial positions), so the run starts immediately.
    let (out, consumed) = rtime_compress(&[b'a'; 1000], 1000).unwrap();
    assert_eq!(consumed, 1000);
    assert_eq!(&out[..4], &[b'a', 255, b'a', 255]);
    // Output room for exactly one pair: stops after it.
    let (out, consumed) = rtime_compress(&[0u8; 600], 3).unwrap();
    assert_eq!(out, vec![0, 255]);
    assert_eq!(consumed, 256);
    // The initial positions are 0: a first occurrence is compared with the buffer start.
    let (out, _) = rtime_compress(b"aab", 6).map_or((vec![], 0), |x| x);
    assert!(out.is_empty(), "aab does not compress");
    let (out, consumed) = rtime_compress(b"xxxxxxxx", 8).unwrap();
    assert_eq!((out, consumed), (vec![b'x', 7], 8));
    // Decoder: run past dsize, truncated input, empty.
    assert!(matches!(
        rtime_decompress(&[b'x', 7], 4),
        Err(ComprError::Corrupt { .. })
    ));
    assert!(matches!(
        rtime_decompress(b"x", 1),
        Err(ComprError::Truncated { .. })
    ));
    assert!(matches!(
        rtime_decompress(&[], 1),
        Err(ComprError::Truncated { .. })
    ));
    assert_eq!(rtime_decompress(&[], 0).unwrap(), Vec::<u8>::new());
    // Absurd dsize is refused before allocating.
    assert!(rtime_decompress(&[0, 255], 1 << 40).is_err());
}

#[test]
fn rtime_large_pages_are_safe() {
    // > 32768 bytes (mkfs.jffs2's signed positions would read out of bounds) and > 65536
    // (16-bit positions wrap): must stay in bounds and round-trip.
    let mut rng = Rng::new(3);
    let mut data = Vec::new();
    while data.len() < 140_000 {
        let n = rng.below(300) + 1;
        if rng.below(4) == 0 {
            data.extend(rng.bytes(n / 16));
        } else {
            let b = rng.below(4) as u8;
            data.extend(std::iter::repeat_n(b, n));
        }
    }
    let (out, consumed) = rtime_compress(&data, data.len()).unwrap();
    assert_eq!(consumed, data.len());
    assert_eq!(rtime_decompress(&out, consumed).unwrap(), data);
}

#[test]
fn zlib_round_trip_and_split() {
    for (name, data) in samples() {
        for dstlen in [0, 12, 13, 20, 64, 200, 1000, data.len() / 3, data.len()] {
            if let Some((out, consumed)) = zlib_compress(&data, dstlen) {
                assert!(out.len() <= dstlen, "{name}/{dstlen}");
                assert!(out.len() < consumed);
                assert_eq!(&out[..2], &[0x78, 0x5e], "level-3 zlib header");
                let back = zlib_decompress(&out, consumed).expect(name);
                assert_eq!(back, data[..consumed], "{name}/{dstlen}");
            }
        }
    }
    assert_eq!(zlib_compress(&[0; 100], 12), None, "dstlen <= 12 fails");
}

#[test]
fn zlib_uses_the_flush_sequence() {
    // §4.3: a full page is fed as 4084 bytes + partial flush, then 12 bytes + partial
    // flush, then finish; a one-shot compression differs.
    let data: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 251) as u8).collect();
    let (ours, consumed) = zlib_compress(&data, 4096).unwrap();
    assert_eq!(consumed, 4096);
    let mut oneshot = flate2::Compress::new(flate2::Compression::new(3), true);
    let mut buf = vec![0; 8192];
    oneshot
        .compress(&data, &mut buf, flate2::FlushCompress::Finish)
        .unwrap();
    buf.truncate(oneshot.total_out() as usize);
    assert_ne!(ours, buf);
    // Deterministic across threads (the per-thread stream is reset every time).
    let other = std::thread::spawn(move || zlib_compress(&data, 4096))
        .join()
        .unwrap();
    assert_eq!(other.unwrap().0, ours);
}

#[test]
fn zlib_decompress_kernel_style() {
    let data = b"hello hello hello hello hello hello".repeat(20);
    let (out, n) = zlib_compress(&data, data.len()).unwrap();
    // Adler-32 is ignored: corrupt or missing trailer still decodes.
    let mut bad_adler = out.clone();
    let l = bad_adler.len();
    bad_adler[l - 1] ^= 0xff;
    assert_eq!(zlib_decompress(&bad_adler, n).unwrap(), data);
    assert_eq!(zlib_decompress(&out[..l - 4], n).unwrap(), data);
    // Wrong dsize either way.
    assert!(matches!(
        zlib_decompress(&out, n + 1),
        Err(ComprError::LengthMismatch { .. })
    ));
    assert!(zlib_decompress(&out, n - 1).is_err());
    // Header problems.
    assert!(zlib_decompress(&[0x78], 1).is_err());
    assert!(zlib_decompress(&[0x78, 0x5e], 1).is_err());
    assert!(
        zlib_decompress(&[0x78, 0x5f, 0, 0], 1).is_err(),
        "bad check bits"
    );
    assert!(
        zlib_decompress(&[0x78, 0x7d, 0, 0], 1).is_err(),
        "preset dictionary"
    );
    // CINFO 8 (window 2^16) is invalid; header 0x88 0x1? with mod 31 == 0.
    let b1 = (0..=255u8).find(|b| ((0x88u16 << 8) | u16::from(*b)) % 31 == 0 && b & 0x20 == 0);
    assert!(zlib_decompress(&[0x88, b1.unwrap(), 0, 0], 1).is_err());
    // Huge dsize with little input fails without allocating it all.
    assert!(zlib_decompress(&out, 1 << 40).is_err());
}

#[test]
fn lzo_round_trip() {
    for (name, data) in samples() {
        if let Some((out, consumed)) = lzo_compress(&data, data.len()) {
            assert_eq!(consumed, data.len());
            assert_eq!(lzo_decompress(&out, consumed).expect(name), data, "{name}");
        }
    }
    // LZO never compresses partially: too little room fails.
    let data = vec![1u8; 4096];
    let (full, _) = lzo_compress(&data, 4096).unwrap();
    assert_eq!(lzo_compress(&data, full.len() - 1), None);
    assert!(lzo_decompress(&full, 4095).is_err());
    assert!(lzo_decompress(&full, 1 << 40).is_err());
}

#[test]
fn rubin_round_trip() {
    for (name, data) in samples() {
        for dstlen in [13, 100, data.len()] {
            if let Some((out, consumed)) = dynrubin_compress(&data, dstlen) {
                assert!(out.len() <= dstlen && out.len() < consumed, "{name}");
                let back = dynrubin_decompress(&out, consumed).expect(name);
                assert_eq!(back, data[..consumed], "dynrubin {name}/{dstlen}");
                assert_eq!(decompress(COMPR_DYNRUBIN, &out, consumed).unwrap(), back);
            }
            if let Some((out, consumed)) = rubinmips_compress(&data, dstlen) {
                assert!(out.len() <= dstlen && out.len() < consumed, "{name}");
                let back = rubinmips_decompress(&out, consumed).expect(name);
                assert_eq!(back, data[..consumed], "rubinmips {name}/{dstlen}");
                assert_eq!(decompress(COMPR_RUBINMIPS, &out, consumed).unwrap(), back);
            }
        }
    }
    // Something must actually compress for the test to mean anything.
    assert!(dynrubin_compress(&[0u8; 4096], 4096).is_some());
    assert!(rubinmips_compress(&[0u8; 4096], 4096).is_some());
    assert!(dynrubin_decompress(&[1, 2, 3], 1).is_err());
}

#[test]
fn decompress_every_id() {
    let data = b"The quick brown fox jumps over the lazy dog. ".repeat(40);
    assert_eq!(decompress(COMPR_NONE, &data, data.len()).unwrap(), data);
    assert_eq!(decompress(COMPR_NONE, &data, 10).unwrap(), data[..10]);
    assert!(decompress(COMPR_NONE, &data[..5], 10).is_err());
    assert_eq!(decompress(COMPR_ZERO, &[], 17).unwrap(), vec![0; 17]);
    for kind in Kind::ALL {
        let (out, consumed) = kind.run(&data, data.len()).unwrap();
        assert_eq!(
            decompress(kind.compr(), &out, consumed).unwrap(),
            data,
            "{kind:?}"
        );
    }
    for id in [COMPR_COPY, 9, 0x15, 0xff] {
        assert_eq!(
            decompress(id, &data, 10),
            Err(ComprError::UnsupportedCompressor(id))
        );
    }
}

#[test]
fn hostile_input_never_panics() {
    let mut rng = Rng::new(99);
    let ids = [
        COMPR_NONE,
        COMPR_ZERO,
        COMPR_RTIME,
        COMPR_RUBINMIPS,
        COMPR_DYNRUBIN,
        COMPR_ZLIB,
        COMPR_LZO,
        COMPR_LZMA,
    ];
    let data = b"abcabcabcabc hostile hostile hostile".repeat(30);
    let zeros = vec![0u8; 1000];
    let valid: Vec<(u8, Vec<u8>, &[u8])> = Kind::ALL
        .iter()
        .map(|k| (k.compr(), k.run(&data, data.len()).unwrap().0, &data[..]))
        .chain([
            (
                COMPR_DYNRUBIN,
                dynrubin_compress(&data, data.len()).unwrap().0,
                &data[..],
            ),
            (
                COMPR_RUBINMIPS,
                rubinmips_compress(&zeros, zeros.len()).unwrap().0,
                &zeros[..],
            ),
        ])
        .collect();
    for round in 0..3000 {
        let id = ids[round % ids.len()];
        let len = rng.below(300);
        let mut src = rng.bytes(len);
        if round % 3 == 0 {
            // zlib-looking header so the inflater is really exercised.
            if src.len() >= 2 {
                src[0] = 0x78;
                src[1] = 0x5e;
            }
        }
        let dsize = [0, 1, 100, 4096, 9000][rng.below(5)];
        let _ = decompress(id, &src, dsize);
    }
    // Truncations and bit flips of valid streams.
    for (id, stream, plain) in &valid {
        for cut in 0..stream.len() {
            let _ = decompress(*id, &stream[..cut], plain.len());
        }
        for i in (0..stream.len() * 8).step_by(5) {
            let mut s = stream.clone();
            s[i / 8] ^= 1 << (i % 8);
            let _ = decompress(*id, &s, plain.len());
        }
        assert_eq!(decompress(*id, stream, plain.len()).unwrap(), *plain);
    }
}

#[test]
fn default_list_and_listing() {
    let c = Compressors::mkfs_default();
    let order: Vec<_> = c
        .entries()
        .iter()
        .map(|e| (e.kind, e.priority, e.enabled))
        .collect();
    assert_eq!(
        order,
        vec![
            (Kind::Lzo, 80, false),
            (Kind::Zlib, 60, true),
            (Kind::Rtime, 50, true)
        ]
    );
    // Verified against `mkfs.jffs2 -L` (2.1.5 with LZO).
    assert_eq!(
        c.list_text(),
        "       lzo priority:80 disabled\n      zlib priority:60 enabled\n     rtime priority:50 enabled\n"
    );
}

#[test]
fn priorities_reinsert_after_equals() {
    let mut c = Compressors::mkfs_default();
    // Equal priority goes after the existing entry of that priority.
    c.set_priority("lzo", 60).unwrap();
    let names: Vec<_> = c.entries().iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, ["zlib", "lzo", "rtime"]);
    c.set_priority("rtime", 100).unwrap();
    let names: Vec<_> = c.entries().iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, ["rtime", "zlib", "lzo"]);
    c.set_priority("rtime", 0).unwrap();
    let names: Vec<_> = c.entries().iter().map(|e| e.kind.name()).collect();
    assert_eq!(names, ["zlib", "lzo", "rtime"]);
    assert_eq!(
        c.set_priority("gzip", 1),
        Err(ComprError::CompressorNotFound("gzip".into()))
    );
    assert!(matches!(
        c.set_priority("lzari", 1),
        Err(ComprError::OpenWrtCompressor(_))
    ));
}

#[test]
fn names_and_modes() {
    let mut c = Compressors::mkfs_default();
    c.set_enabled("lzo", true).unwrap();
    c.set_enabled("zlib", false).unwrap();
    assert!(c.entries().iter().any(|e| e.kind == Kind::Lzo && e.enabled));
    assert_eq!(
        c.set_enabled("ZLIB", true),
        Err(ComprError::UnknownCompressor("ZLIB".into()))
    );
    let e = c.set_enabled("lzari", false).unwrap_err();
    assert!(matches!(e, ComprError::OpenWrtCompressor(_)));
    assert!(e.to_string().contains("OpenWrt"));
    for m in ["none", "priority", "size", "favourlzo"] {
        assert_eq!(m.parse::<Mode>().unwrap().name(), m);
    }
    assert_eq!(
        "Size".parse::<Mode>(),
        Err(ComprError::UnknownMode("Size".into()))
    );
    assert_eq!(Mode::default(), Mode::Priority);
}

#[test]
fn selection_modes() {
    let text = b"compressible text, compressible text, compressible text. ".repeat(80);
    let text = &text[..4096];
    let random = Rng::new(5).bytes(4096);

    let mut c = Compressors::mkfs_default();
    let r = c.compress(text, 4096);
    assert_eq!(r.compr, COMPR_ZLIB);
    assert_eq!(r.stats.winner, Some(Kind::Zlib));
    assert_eq!(
        (r.stats.orig_size, r.stats.new_size),
        (4096, r.data.len() as u64)
    );

    // Random data: everything fails, stored raw, datalen := cdatalen.
    let r = c.compress(&random, 1000);
    assert_eq!((r.compr, r.consumed), (COMPR_NONE, 1000));
    assert_eq!(r.data, random[..1000]);
    assert_eq!(r.stats.winner, None);
    assert_eq!(r.stats.orig_size, 1000);

    c.set_mode(Mode::None);
    let r = c.compress(text, 4096);
    assert_eq!(
        (r.compr, r.consumed, r.data.len()),
        (COMPR_NONE, 4096, 4096)
    );

    // Size mode picks the smallest.
    c.set_mode(Mode::Size);
    c.set_enabled("lzo", true).unwrap();
    let r = c.compress(text, 4096);
    let sizes: Vec<_> = Kind::DEBIAN
        .iter()
        .map(|k| k.run(text, 4096).map_or(usize::MAX, |x| x.0.len()))
        .collect();
    assert_eq!(r.data.len(), *sizes.iter().min().unwrap());

    // Priority mode with rtime first.
    c.set_mode(Mode::Priority);
    c.set_priority("rtime", 90).unwrap();
    assert_eq!(c.compress(text, 4096).compr, COMPR_RTIME);

    // dstlen above the input length is clamped.
    let r = Compressors::mkfs_default().compress(&random[..10], 100);
    assert_eq!((r.compr, r.consumed), (COMPR_NONE, 10));
}

#[test]
fn favourlzo_rules() {
    let mut c = Compressors::mkfs_default();
    c.set_mode(Mode::FavourLzo);
    // LZO result of 100 vs zlib of 85: zlib is not below 80 % (80), LZO stays.
    assert!(!c.is_best(Kind::Zlib, Kind::Lzo, 85, 100));
    assert!(c.is_best(Kind::Zlib, Kind::Lzo, 79, 100));
    // LZO after zlib of 85: LZO 100 wins since 85 > 80.
    assert!(c.is_best(Kind::Lzo, Kind::Zlib, 100, 85));
    assert!(!c.is_best(Kind::Lzo, Kind::Zlib, 100, 80));
    // Neither is LZO: plain size comparison.
    assert!(c.is_best(Kind::Rtime, Kind::Zlib, 10, 11));
    assert!(!c.is_best(Kind::Rtime, Kind::Zlib, 11, 11));
}

#[test]
fn test_mode_and_stats_report() {
    let mut c = Compressors::mkfs_default();
    c.set_test(true);
    let text = b"abcdefgh".repeat(512);
    let mut stats = Stats::default();
    let r = c.compress(&text, 4096);
    assert_eq!(r.stats.errors, 0);
    assert!(r.stats.messages.is_empty());
    stats.add(&r.stats);
    let r = c.compress(b"hello\n", 6);
    stats.add(&r.stats);
    let want_zlib = format!(
        "      zlib (prio:60) + compr: 1 blocks ({}/4096)  decompr: 0 blocks \n",
        c.compress(&text, 4096).data.len()
    );
    let report = stats.report(&c);
    assert!(report.starts_with("\n\nCompression mode: priority\nCompressors:\n"));
    assert!(report.contains("      none             compr: 1 blocks (6)  decompr: 0 blocks\n"));
    assert!(report.contains("       lzo (prio:80) - compr: 0 blocks (0/0)  decompr: 0 blocks \n"));
    assert!(report.contains(&want_zlib));
    assert!(report.ends_with("Compression errors: 0\n"));
    assert_eq!(stats.errors(), 0);

    // A failing check is reported in mtd-utils wording.
    let mut d = StatsDelta::default();
    test_result(Kind::Zlib, b"xyz", &[0x78, 0x5e, 1, 2, 3], 3, 10, &mut d);
    assert_eq!(d.errors, 1);
    assert_eq!(
        d.messages,
        ["JFFS2 compression check: decompression failed at zlib."]
    );
    let (out, n) = rtime_compress(&[5u8; 50], 50).unwrap();
    let mut wrong = [5u8; 50];
    wrong[7] = 6;
    let mut d = StatsDelta::default();
    test_result(Kind::Rtime, &wrong, &out, n, 50, &mut d);
    assert_eq!(
        d.messages,
        ["JFFS2 compression check: data mismatch at rtime (pos 7)."]
    );
    stats.add(&d);
    assert_eq!(stats.errors(), 1);
    assert_eq!(stats.errors_line(), "Compression errors: 1\n");
}

#[test]
fn compressors_are_send_sync() {
    fn check<T: Send + Sync + Clone>() {}
    check::<Compressors>();
}

/// The libdeflate fast path (when linked) and zlib alone give the same result — the same
/// bytes or the same error — for valid streams of every shape, streams with a wrong dsize,
/// cut short, with trailing bytes, with flipped bits, and smaller windows.
#[test]
fn libdeflate_agrees_with_zlib() {
    let mut rng = Rng::new(2026);
    let mut streams: Vec<(Vec<u8>, usize)> = Vec::new();
    for (_, data) in samples() {
        let Some((c, n)) = zlib_compress(&data, data.len() + 64) else {
            continue;
        };
        streams.push((c.clone(), n));
        for d in [n.saturating_sub(1), n + 1, 0] {
            streams.push((c.clone(), d));
        }
        if c.len() > 3 {
            streams.push((c[..c.len() / 2].to_vec(), n));
            streams.push((c[..c.len() - 1].to_vec(), n));
        }
        let mut t = c.clone();
        t.extend_from_slice(b"trailing garbage");
        streams.push((t, n));
        for _ in 0..40 {
            let mut f = c.clone();
            let i = rng.below(f.len());
            f[i] ^= 1 << rng.below(8);
            streams.push((f, n));
        }
        // A smaller window declared in the header (CINFO 0..7).
        for cinfo in 0..8u8 {
            let mut w = c.clone();
            w[0] = (cinfo << 4) | 8;
            w[1] = 0;
            let fcheck = 31 - ((u16::from(w[0]) << 8) % 31) as u8;
            w[1] = if fcheck == 31 { 0 } else { fcheck };
            streams.push((w, n));
        }
    }
    for _ in 0..200 {
        let len = rng.below(64);
        let mut r = rng.bytes(len);
        if r.len() >= 2 {
            r[0] = 0x78;
            r[1] = 0x5e;
        }
        streams.push((r, rng.below(5000)));
    }
    assert!(streams.len() > 500);
    for (i, (s, d)) in streams.iter().enumerate() {
        let fast = zlib_decompress(s, *d);
        let reference = zlib_decompress_reference(s, *d);
        assert_eq!(format!("{fast:?}"), format!("{reference:?}"), "stream {i}");
    }
}

#[test]
fn openwrt_table() {
    let names = |c: &Compressors| -> Vec<(&'static str, i32, bool)> {
        c.entries()
            .iter()
            .map(|e| (e.kind.name(), e.priority, e.enabled))
            .collect()
    };
    let o = Compressors::openwrt_default();
    assert!(o.is_openwrt());
    assert_eq!(
        names(&o),
        [
            ("lzo", 90, false),
            ("zlib", 80, true),
            ("lzma", 70, true),
            ("rtime", 50, true)
        ]
    );
    // Naming lzma switches to OpenWrt's table; -x lzma leaves zlib, rtime enabled in that
    // order, as in Debian's table.
    let mut c = Compressors::mkfs_default();
    assert!(!c.is_openwrt());
    c.set_enabled("lzma", false).unwrap();
    assert!(c.is_openwrt());
    assert_eq!(
        names(&c),
        [
            ("lzo", 90, false),
            ("zlib", 80, true),
            ("lzma", 70, false),
            ("rtime", 50, true)
        ]
    );
    let enabled = |c: &Compressors| -> Vec<Kind> {
        c.entries()
            .iter()
            .filter(|e| e.enabled)
            .map(|e| e.kind)
            .collect()
    };
    assert_eq!(
        enabled(&c),
        enabled(&Compressors::mkfs_default()),
        "-x lzma must select like Debian's default"
    );
    // Changes made before lzma is named are applied again on OpenWrt's table, in order.
    let mut c = Compressors::mkfs_default();
    c.set_priority("rtime", 85).unwrap();
    c.set_enabled("zlib", false).unwrap();
    c.set_enabled("lzma", true).unwrap();
    assert_eq!(
        names(&c),
        [
            ("lzo", 90, false),
            ("rtime", 85, true),
            ("zlib", 80, false),
            ("lzma", 70, true)
        ]
    );
    let mut c = Compressors::mkfs_default();
    c.set_priority("lzma", 95).unwrap();
    assert_eq!(names(&c)[0], ("lzma", 95, true));
    assert_eq!(
        c.list_text().lines().next(),
        Some("      lzma priority:95 enabled")
    );
    // -v statistics name lzma only in OpenWrt's table.
    let r = Stats::default().report(&Compressors::mkfs_default());
    assert!(!r.contains("lzma"), "{r}");
    let r = Stats::default().report(&c);
    assert!(
        r.contains("      lzma (prio:95) + compr: 0 blocks (0/0)"),
        "{r}"
    );
}

/// A page of text, as mkfs compresses it.
fn text_page() -> Vec<u8> {
    let mut rng = Rng::new(31);
    let words = [
        "root:x:0:0:",
        "/bin/ash\n",
        "option ",
        "config ",
        "'lan'",
        "\t",
        "\n",
    ];
    let t: Vec<u8> = (0..3000)
        .flat_map(|_| words[rng.below(words.len())].bytes())
        .collect();
    t[..4096].to_vec()
}

#[test]
fn lzma_round_trip_and_limits() {
    let page = text_page();
    let (out, consumed) = lzma_compress(&page, page.len()).unwrap();
    assert_eq!(consumed, page.len(), "lzma always takes the whole input");
    assert!(out.len() < page.len() / 2, "{} bytes", out.len());
    // Raw LZMA1: the range coder's first byte is 0; no header.
    assert_eq!(out[0], 0);
    assert_eq!(decompress(COMPR_LZMA, &out, page.len()).unwrap(), page);
    // Deterministic.
    assert_eq!(lzma_compress(&page, page.len()).unwrap().0, out);
    // Fits exactly: a success; one byte less: a failure (never a partial stream).
    assert_eq!(lzma_compress(&page, out.len()).unwrap().0, out);
    assert!(lzma_compress(&page, out.len() - 1).is_none());
    // Incompressible data does not fit its own size.
    let random = Rng::new(3).bytes(4096);
    assert!(lzma_compress(&random, random.len()).is_none());
    let (big, _) = lzma_compress(&random, 5000).unwrap();
    assert_eq!(lzma_decompress(&big, 4096).unwrap(), random);
    // Input after the end of the stream is ignored, as the kernel's LzmaDecode ignores it.
    let mut longer = out.clone();
    longer.extend_from_slice(&[0x55; 17]);
    assert_eq!(lzma_decompress(&longer, page.len()).unwrap(), page);
    // The wrong dsize, a truncated stream: errors.
    assert!(lzma_decompress(&out, page.len() + 1).is_err());
    assert!(lzma_decompress(&out, page.len() - 1).is_err());
    assert!(lzma_decompress(&out[..out.len() - 3], page.len()).is_err());
    assert!(lzma_decompress(&[], page.len()).is_err());
    // Large dsize claims cost only what the stream decodes to.
    assert!(lzma_decompress(&out, 1 << 30).is_err());
}

#[test]
fn lzma_in_the_selection_modes() {
    let page = text_page();
    let mut c = Compressors::mkfs_default();
    c.set_enabled("lzma", true).unwrap();
    // Priority mode: zlib (80) comes first in OpenWrt's table and wins.
    assert_eq!(c.compress(&page, 4096).compr, COMPR_ZLIB);
    // Size mode: the smallest wins, lzma on text.
    c.set_mode(Mode::Size);
    let r = c.compress(&page, 4096);
    assert_eq!(r.compr, COMPR_LZMA);
    assert_eq!(r.stats.winner, Some(Kind::Lzma));
    assert_eq!(decompress(r.compr, &r.data, r.consumed).unwrap(), page);
    // -t checks lzma like the others.
    c.set_test(true);
    assert_eq!(c.compress(&page, 4096).stats.errors, 0);
    // A block tail with less room than lzma needs: lzma fails (whole input or nothing), zlib
    // compresses part of the page.
    let (lz, _) = lzma_compress(&page, 4096).unwrap();
    let r = c.compress(&page, lz.len() - 1);
    assert_ne!(r.compr, COMPR_LZMA);
    let mut stats = Stats::default();
    stats.add(&c.compress(&page, 4096).stats);
    assert!(stats
        .report(&c)
        .contains("      lzma (prio:70) + compr: 1 blocks"));
}
