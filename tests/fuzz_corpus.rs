//! The fuzz targets' seed corpus and every input that ever crashed one (`fuzz/corpus/`,
//! `fuzz/regressions/`) run as ordinary tests: each file through its own target, and every
//! image (the scan corpus, the kernel-written fixtures) through every image target. See
//! `jffs2::fuzz` and `docs/SECURITY.md`.

use std::path::{Path, PathBuf};

use jffs2::fuzz::TARGETS;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(rd) => rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    v.sort();
    v
}

fn run(target: &str, f: fn(&[u8]), path: &Path) {
    let data = std::fs::read(path).unwrap();
    let r = std::panic::catch_unwind(|| f(&data));
    assert!(
        r.is_ok(),
        "fuzz target {target} failed on {} (reproduce: cargo fuzz run {target} {})",
        path.display(),
        path.display()
    );
}

#[test]
fn seed_corpus_passes_every_target() {
    let mut total = 0;
    for (name, f) in TARGETS {
        let seeds = files(&root().join("fuzz/corpus").join(name));
        assert!(
            seeds.len() >= 10,
            "fuzz/corpus/{name} holds {} seeds: run fuzz/make-seeds.sh",
            seeds.len()
        );
        for p in seeds {
            run(name, *f, &p);
            total += 1;
        }
    }
    eprintln!("{total} seeds passed");
}

#[test]
fn regressions_pass_their_target() {
    // Inputs that once crashed a target, named after what they found.
    let mut total = 0;
    for (name, f) in TARGETS {
        for p in files(&root().join("fuzz/regressions").join(name)) {
            run(name, *f, &p);
            total += 1;
        }
    }
    eprintln!("{total} regression inputs passed");
}

#[test]
fn every_image_passes_every_image_target() {
    let mut images = files(&root().join("fuzz/corpus/scan"));
    images.extend(
        files(&root().join("fixtures/kernel"))
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "img")),
    );
    assert!(images.len() >= 20, "only {} images", images.len());
    for (name, f) in TARGETS {
        if matches!(*name, "nodes" | "decompress") {
            continue;
        }
        for p in &images {
            run(name, *f, p);
        }
    }
}
