//! Build (or find cached) the git workload's generated repository and print its commit and
//! build time: `cargo run --release -p loadgen --example build_repo -- CACHE_DIR [FILES BYTES SEED]`.

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cache) = args.first() else {
        eprintln!("usage: build_repo CACHE_DIR [FILES BYTES SEED]");
        std::process::exit(2);
    };
    let mut spec = loadgen::apps::git::RepoSpec::default();
    let num = |i: usize| args.get(i).map(|s| s.parse::<u64>().expect("a number"));
    if let Some(f) = num(1) {
        spec.files = f as u32;
    }
    if let Some(b) = num(2) {
        spec.bytes = b;
    }
    if let Some(s) = num(3) {
        spec.seed = s;
    }
    let t = Instant::now();
    match loadgen::apps::git::build_repo(std::path::Path::new(cache), spec) {
        Ok(r) => println!(
            "{} commit {} ({} files, {} bytes) in {:.1}s",
            r.path.display(),
            r.commit,
            spec.files,
            spec.bytes,
            t.elapsed().as_secs_f64()
        ),
        Err(f) => {
            eprintln!("{f}");
            std::process::exit(1);
        }
    }
}
