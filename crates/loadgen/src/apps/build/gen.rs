//! The build workload's generated sources, a function of [`BuildSpec`] alone: a C project
//! (`units` translation units of `functions` functions each, a `main.c`, a header, a
//! Makefile) and its dependencies (`deps` static libraries, each a function that reads a
//! data blob of `dep_bytes / deps` bytes linked in with `.incbin`, like a jar with its
//! resources). The program prints a checksum the generator also computes, so a build's
//! test step knows the right answer without a reference build.

use std::fmt::Write as _;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::apps::rng::Rng;

/// Bump when the generator changes: cached dependency repositories of older versions are
/// not reused.
pub const GENERATOR_VERSION: u32 = 1;

/// The build workload's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildSpec {
    /// Concurrent builds per tenant and iteration (the seed triggers 3 per Jenkins).
    pub builds: u32,
    /// Translation units of the project.
    pub units: u32,
    /// Functions per unit.
    pub functions: u32,
    /// Dependency libraries (the tenant's dependency cache holds one archive each).
    pub deps: u32,
    /// Total bytes of the dependencies' data.
    pub dep_bytes: u64,
    pub seed: u64,
    /// `make -j` per build.
    pub jobs: u32,
}

impl Default for BuildSpec {
    /// Three builds (the seed's), each compiling 24 units of 12 functions and linking 4
    /// dependencies of 1 MiB each: about a CPU-second per build here.
    fn default() -> BuildSpec {
        BuildSpec {
            builds: 3,
            units: 24,
            functions: 12,
            deps: 4,
            dep_bytes: 4 << 20,
            seed: 4,
            jobs: 1,
        }
    }
}

impl BuildSpec {
    /// Check the values; the message names the field and the allowed range.
    pub fn validate(&self) -> Result<(), String> {
        let range = |v: u64, lo: u64, hi: u64, f: &str| {
            if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("build.{f} = {v}: allowed {lo} to {hi}"))
            }
        };
        range(self.builds as u64, 1, 16, "builds")?;
        range(self.units as u64, 1, 5000, "units")?;
        range(self.functions as u64, 1, 1000, "functions")?;
        range(self.deps as u64, 1, 64, "deps")?;
        range(self.jobs as u64, 1, 64, "jobs")?;
        range(
            self.dep_bytes,
            64 * self.deps as u64,
            16 << 30,
            "dep_bytes (at least 64 bytes per dependency)",
        )
    }

    /// The dependency repository's cache key.
    pub fn deps_key(&self) -> String {
        format!(
            "build-deps-v{GENERATOR_VERSION}-{}d-{}b-s{}",
            self.deps, self.dep_bytes, self.seed
        )
    }

    /// Bytes of dependency `k`'s blob (the remainder goes to the last one).
    pub fn blob_len(&self, k: u32) -> usize {
        let each = self.dep_bytes / self.deps as u64;
        let extra = if k + 1 == self.deps {
            self.dep_bytes % self.deps as u64
        } else {
            0
        };
        (each + extra) as usize
    }
}

/// Dependency `k`'s archive file name (`libdep003.a`, linked as `-ldep003`).
pub fn dep_archive(k: u32) -> String {
    format!("libdep{k:03}.a")
}

/// Dependency `k`'s data blob.
pub fn blob(spec: &BuildSpec, k: u32) -> Vec<u8> {
    let mut r = Rng::new(spec.seed ^ 0xB10B_0000 ^ ((k as u64) << 40));
    let n = spec.blob_len(k);
    let mut v = Vec::with_capacity(n + 8);
    while v.len() < n {
        v.extend_from_slice(&r.next_u64().to_le_bytes());
    }
    v.truncate(n);
    v
}

/// The sources of dependency `k`: (file name, contents) — its C file, its blob's
/// assembler file and the blob itself.
pub fn dep_sources(spec: &BuildSpec, k: u32) -> Vec<(String, Vec<u8>)> {
    let c = format!(
        "#include <stdint.h>\n#include <stddef.h>\n\
         extern const unsigned char dep{k:03}_blob[];\n\
         extern const unsigned char dep{k:03}_blob_end[];\n\
         uint32_t dep{k:03}_mix(uint32_t x) {{\n\
         \tsize_t n = (size_t)(dep{k:03}_blob_end - dep{k:03}_blob);\n\
         \tfor (uint32_t i = 0; i < 64; i++)\n\
         \t\tx = x * 31u + dep{k:03}_blob[(x ^ i) % n];\n\
         \treturn x;\n}}\n"
    );
    let s = format!(
        "\t.section .rodata\n\t.globl dep{k:03}_blob\n\t.type dep{k:03}_blob, @object\n\
         dep{k:03}_blob:\n\t.incbin \"dep{k:03}.bin\"\n\
         \t.globl dep{k:03}_blob_end\ndep{k:03}_blob_end:\n\t.byte 0\n\
         \t.section .note.GNU-stack,\"\",@progbits\n"
    );
    vec![
        (format!("dep{k:03}.c"), c.into_bytes()),
        (format!("blob{k:03}.S"), s.into_bytes()),
        (format!("dep{k:03}.bin"), blob(spec, k)),
    ]
}

/// What dependency `k`'s `mix` computes (the C code above, in Rust).
fn dep_mix(blob: &[u8], mut x: u32) -> u32 {
    let n = blob.len() as u64;
    for i in 0..64u32 {
        x = x
            .wrapping_mul(31)
            .wrapping_add(blob[((x ^ i) as u64 % n) as usize] as u32);
    }
    x
}

/// One generated function: `x ^= x << 13; x ^= x >> 17; x ^= x << 5; x * a + b`.
#[derive(Debug, Clone, Copy)]
struct Fun {
    a: u32,
    b: u32,
}

impl Fun {
    fn apply(self, mut x: u32) -> u32 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x.wrapping_mul(self.a).wrapping_add(self.b)
    }
}

/// Unit `i`'s functions and table.
fn unit(spec: &BuildSpec, i: u32) -> (Vec<Fun>, [u32; 16]) {
    let mut r = Rng::new(spec.seed ^ 0x0C0D_E000 ^ ((i as u64) << 32));
    let funs = (0..spec.functions)
        .map(|_| Fun {
            a: (r.next_u64() as u32) | 1,
            b: r.next_u64() as u32,
        })
        .collect();
    let mut table = [0u32; 16];
    for t in &mut table {
        *t = r.next_u64() as u32;
    }
    (funs, table)
}

fn unit_entry(funs: &[Fun], table: &[u32; 16], mut x: u32) -> u32 {
    for f in funs {
        x = f.apply(x);
    }
    x.wrapping_add(table[(x & 15) as usize])
}

fn start_value(spec: &BuildSpec) -> u32 {
    Rng::new(spec.seed ^ 0x5747).next_u64() as u32
}

/// The checksum the built program must print (`checksum %08x`).
pub fn expected_checksum(spec: &BuildSpec) -> u32 {
    let mut x = start_value(spec);
    for i in 0..spec.units {
        let (funs, table) = unit(spec, i);
        x = unit_entry(&funs, &table, x);
    }
    for k in 0..spec.deps {
        x = dep_mix(&blob(spec, k), x);
    }
    x
}

/// The project's files, relative to its root.
pub fn project(spec: &BuildSpec) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut header = String::from(
        "/* generated by qoslab (build workload) */\n#ifndef APP_H\n#define APP_H\n#include <stdint.h>\n",
    );
    for i in 0..spec.units {
        let _ = writeln!(header, "uint32_t u{i:04}_entry(uint32_t x);");
    }
    for k in 0..spec.deps {
        let _ = writeln!(header, "uint32_t dep{k:03}_mix(uint32_t x);");
    }
    header.push_str("#endif\n");
    files.push((PathBuf::from("include/app.h"), header));
    for i in 0..spec.units {
        let (funs, table) = unit(spec, i);
        let mut c = format!("/* unit {i}: generated by qoslab */\n#include \"app.h\"\n\n");
        let _ = write!(c, "static const uint32_t u{i:04}_table[16] = {{");
        for (j, t) in table.iter().enumerate() {
            let _ = write!(c, "{}0x{t:08x}u", if j > 0 { ", " } else { "" });
        }
        c.push_str("};\n\n");
        for (j, f) in funs.iter().enumerate() {
            let _ = write!(
                c,
                "static uint32_t u{i:04}_f{j:03}(uint32_t x)\n{{\n\tx ^= x << 13;\n\tx ^= x >> 17;\n\tx ^= x << 5;\n\treturn x * 0x{:08x}u + 0x{:08x}u;\n}}\n\n",
                f.a, f.b
            );
        }
        let _ = writeln!(c, "uint32_t u{i:04}_entry(uint32_t x)\n{{");
        for j in 0..funs.len() {
            let _ = writeln!(c, "\tx = u{i:04}_f{j:03}(x);");
        }
        let _ = writeln!(c, "\treturn x + u{i:04}_table[x & 15];\n}}");
        files.push((PathBuf::from(format!("src/unit{i:04}.c")), c));
    }
    let mut main = format!(
        "/* generated by qoslab (build workload) */\n#include <stdio.h>\n#include \"app.h\"\n\nint main(void)\n{{\n\tuint32_t x = 0x{:08x}u;\n",
        start_value(spec)
    );
    for i in 0..spec.units {
        let _ = writeln!(main, "\tx = u{i:04}_entry(x);");
    }
    for k in 0..spec.deps {
        let _ = writeln!(main, "\tx = dep{k:03}_mix(x);");
    }
    main.push_str("\tprintf(\"checksum %08x\\n\", x);\n\treturn 0;\n}\n");
    files.push((PathBuf::from("src/main.c"), main));
    let objs: Vec<String> = (0..spec.units)
        .map(|i| format!("obj/unit{i:04}.o"))
        .collect();
    let libs: Vec<String> = (0..spec.deps).map(|k| format!("-ldep{k:03}")).collect();
    let make = format!(
        "# generated by qoslab (build workload): {units} units, {deps} dependencies\n\
         CC = gcc\n\
         CFLAGS = -O1 -g -Wall -Werror -MMD -Iinclude\n\
         DEPS = ../../cache\n\
         OBJS = {objs}\n\
         LIBS = {libs}\n\n\
         all: bin/app\n\n\
         obj/%.o: src/%.c\n\t@mkdir -p obj\n\t$(CC) $(CFLAGS) -c $< -o $@\n\n\
         lib/libapp.a: $(OBJS)\n\t@mkdir -p lib\n\trm -f $@\n\tar rcs $@ $(OBJS)\n\n\
         bin/app: obj/main.o lib/libapp.a\n\t@mkdir -p bin\n\t$(CC) -o $@ obj/main.o -Llib -lapp -L$(DEPS) $(LIBS)\n\n\
         -include $(OBJS:.o=.d) obj/main.d\n",
        units = spec.units,
        deps = spec.deps,
        objs = objs.join(" "),
        libs = libs.join(" "),
    );
    files.push((PathBuf::from("Makefile"), make));
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_project_is_a_function_of_the_spec() {
        let s = BuildSpec {
            units: 3,
            functions: 2,
            deps: 2,
            dep_bytes: 1000,
            ..Default::default()
        };
        let p = project(&s);
        assert_eq!(p, project(&s), "deterministic");
        let names: Vec<String> = p.iter().map(|(n, _)| n.display().to_string()).collect();
        assert_eq!(
            names,
            [
                "include/app.h",
                "src/unit0000.c",
                "src/unit0001.c",
                "src/unit0002.c",
                "src/main.c",
                "Makefile"
            ]
        );
        let make = &p[5].1;
        assert!(make.contains("OBJS = obj/unit0000.o obj/unit0001.o obj/unit0002.o\n"));
        assert!(make.contains("LIBS = -ldep000 -ldep001\n"));
        assert!(make.contains("\n\t$(CC) $(CFLAGS) -c $< -o $@\n"), "tabs");
        assert_ne!(
            expected_checksum(&s),
            expected_checksum(&BuildSpec { seed: 5, ..s })
        );
        assert_eq!((s.blob_len(0), s.blob_len(1)), (500, 500));
        let odd = BuildSpec {
            dep_bytes: 1001,
            ..s
        };
        assert_eq!((odd.blob_len(0), odd.blob_len(1)), (500, 501));
        assert_eq!(blob(&odd, 1).len(), 501);
        assert_eq!(blob(&odd, 1), blob(&odd, 1));
    }

    #[test]
    fn the_rust_model_matches_the_c_arithmetic() {
        // x = 1: x ^= x<<13 -> 0x2001; x ^= x>>17 -> 0x2001; x ^= x<<5 -> 0x42021.
        let f = Fun { a: 3, b: 7 };
        assert_eq!(f.apply(1), 0x42021 * 3 + 7);
        // Wrapping like C's uint32_t.
        let g = Fun {
            a: 0xFFFF_FFFF,
            b: 0,
        };
        assert_eq!(g.apply(1), 0x42021u32.wrapping_mul(0xFFFF_FFFF));
        // dep_mix indexes the blob by (x ^ i) % n.
        assert_eq!(
            dep_mix(&[1], 0),
            (0..64).fold(0u32, |x, _| x.wrapping_mul(31) + 1)
        );
    }

    #[test]
    fn values_are_checked_with_the_field_named() {
        assert!(BuildSpec::default().validate().is_ok());
        for (s, want) in [
            (
                BuildSpec {
                    builds: 0,
                    ..Default::default()
                },
                "build.builds = 0",
            ),
            (
                BuildSpec {
                    units: 0,
                    ..Default::default()
                },
                "build.units",
            ),
            (
                BuildSpec {
                    deps: 2,
                    dep_bytes: 100,
                    ..Default::default()
                },
                "build.dep_bytes",
            ),
        ] {
            let e = s.validate().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
