//! `[[lun]]`, `[[igroup]]`, `[[lun_map]]`: good input parsed whole, bad input refused with
//! the exact message (file:line, section, field, value, what is allowed).

use super::san::{IgroupSpec, LunMapSpec, SanLunSpec};
use super::NodeConfig;

const BASE: &str = "\
[[policy]]
name = \"gold\"
fixed.max_throughput = \"500iops\"

[[volume]]
name = \"db\"
size = \"1GiB\"

[[volume]]
name = \"files\"
size = \"1GiB\"
nas_path = \"/files\"
";

const H1: &str = "iqn.1993-08.org.debian:01:dbhost";
const H2: &str = "iqn.1993-08.org.debian:01:other";

fn parse(extra: &str) -> Result<NodeConfig, String> {
    NodeConfig::parse(&format!("{BASE}{extra}"), "node.toml").map_err(|e| e.to_string())
}

#[track_caller]
fn bad(extra: &str, want: &str) {
    let e = parse(extra).expect_err("the config should be refused");
    assert_eq!(e, want, "\ninput:\n{extra}");
}

#[test]
fn luns_igroups_and_maps_parse_in_ontaps_shape() {
    let cfg = parse(&format!(
        "[[lun]]\npath = \"/vol/db/lun1\"\nsize = \"64MiB\"\nos_type = \"linux\"\n\
         [[lun]]\npath = \"/vol/db/lun2\"\nsize = 1048576\nos_type = \"vmware\"\npolicy = \"gold\"\n\
         [[igroup]]\nname = \"dbhosts\"\nos_type = \"linux\"\ninitiators = [\"{H1}\", \"{H2}\"]\n\
         [[igroup]]\nname = \"empty\"\nos_type = \"windows\"\nprotocol = \"iscsi\"\n\
         [[lun_map]]\nlun = \"/vol/db/lun1\"\nigroup = \"dbhosts\"\nlogical_unit_number = 3\n\
         [[lun_map]]\nlun = \"/vol/db/lun2\"\nigroup = \"dbhosts\"\n"
    ))
    .unwrap();
    let s = &cfg.san;
    assert_eq!(
        s.luns,
        [
            SanLunSpec {
                volume: "db".into(),
                name: "lun1".into(),
                size: 64 << 20,
                os_type: "linux".into(),
                policy: None,
                at: "node.toml:14".into(),
            },
            SanLunSpec {
                volume: "db".into(),
                name: "lun2".into(),
                size: 1 << 20,
                os_type: "vmware".into(),
                policy: Some("gold".into()),
                at: "node.toml:18".into(),
            }
        ]
    );
    assert_eq!(s.luns[0].path(), "/vol/db/lun1");
    assert_eq!(
        s.igroups,
        [
            IgroupSpec {
                name: "dbhosts".into(),
                os_type: "linux".into(),
                initiators: vec![H1.into(), H2.into()],
                at: "node.toml:23".into(),
            },
            IgroupSpec {
                name: "empty".into(),
                os_type: "windows".into(),
                initiators: vec![],
                at: "node.toml:27".into(),
            }
        ]
    );
    assert_eq!(
        s.maps,
        [
            LunMapSpec {
                lun: "/vol/db/lun1".into(),
                igroup: "dbhosts".into(),
                number: Some(3),
                at: "node.toml:31".into(),
            },
            LunMapSpec {
                lun: "/vol/db/lun2".into(),
                igroup: "dbhosts".into(),
                number: None,
                at: "node.toml:35".into(),
            }
        ]
    );
    // The fingerprint is what the declaration says, not where it is written.
    let mut moved = s.luns[0].clone();
    moved.at = "node.toml:99".into();
    assert_eq!(moved.fingerprint(), s.luns[0].fingerprint());
    moved.size += 512;
    assert_ne!(moved.fingerprint(), s.luns[0].fingerprint());
}

#[test]
fn a_bad_lun_is_refused_naming_line_field_value_and_what_is_allowed() {
    let lun = |body: &str| format!("[[lun]]\n{body}");
    bad(
        &lun("path = \"/vol/db\"\nsize = \"1MiB\"\nos_type = \"linux\""),
        "node.toml:14: lun[0] (\"/vol/db\"): path = \"/vol/db\": a LUN's path is /vol/VOLUME/LUN (no qtrees)",
    );
    bad(
        &lun("path = \"/vol/db/q/l\"\nsize = \"1MiB\"\nos_type = \"linux\""),
        "node.toml:14: lun[0] (\"/vol/db/q/l\"): path = \"/vol/db/q/l\": a LUN's path is /vol/VOLUME/LUN (no qtrees)",
    );
    bad(
        &lun("path = \"/vol/db/a b\"\nsize = \"1MiB\"\nos_type = \"linux\""),
        "node.toml:14: lun[0] (\"/vol/db/a b\"): path = \"/vol/db/a b\": \"a b\" is not a valid name: names are 1 to 128 characters from A-Z a-z 0-9 _ - . (not starting with - or .)",
    );
    bad(
        &lun("path = \"/vol/nope/l\"\nsize = \"1MiB\"\nos_type = \"linux\""),
        "node.toml:14: lun[0] (\"/vol/nope/l\"): path = \"/vol/nope/l\": volume \"nope\" is not a [[volume]] of this file (its block volumes: db)",
    );
    bad(
        &lun("path = \"/vol/files/l\"\nsize = \"1MiB\"\nos_type = \"linux\""),
        "node.toml:14: lun[0] (\"/vol/files/l\"): path = \"/vol/files/l\": volume \"files\" is a NAS volume (nas_path); a LUN lives in a block volume",
    );
    bad(
        &lun("path = \"/vol/db/l\"\nsize = \"1000\"\nos_type = \"linux\""),
        "node.toml:15: lun[0] (\"/vol/db/l\"): size = \"1000\": 1000 bytes: allowed is a multiple of 512 bytes from 4 KiB to 128 TiB",
    );
    bad(
        &lun("path = \"/vol/db/l\"\nsize = 4097\nos_type = \"linux\""),
        "node.toml:15: lun[0] (\"/vol/db/l\"): size = 4097: 4097 bytes: allowed is a multiple of 512 bytes from 4 KiB to 128 TiB",
    );
    bad(
        &lun("path = \"/vol/db/l\"\nsize = \"200TiB\"\nos_type = \"linux\""),
        "node.toml:15: lun[0] (\"/vol/db/l\"): size = \"200TiB\": 219902325555200 bytes: allowed is a multiple of 512 bytes from 4 KiB to 128 TiB",
    );
    bad(
        &lun("path = \"/vol/db/l\"\nsize = -1\nos_type = \"linux\""),
        "node.toml:15: lun[0] (\"/vol/db/l\"): size = -1: a LUN's size is a whole number of bytes, or a string such as \"10GiB\"",
    );
    bad(
        &lun("path = \"/vol/db/l\"\nsize = \"1MiB\"\nos_type = \"beos\""),
        "node.toml:16: lun[0] (\"/vol/db/l\"): os_type = \"beos\": allowed values are ONTAP's: aix, hpux, hyper_v, linux, netware, openvms, solaris, solaris_efi, vmware, windows, windows_2008, windows_gpt, xen",
    );
    bad(
        &lun("path = \"/vol/db/l\"\nsize = \"1MiB\"\nos_type = \"linux\"\npolicy = \"silver\""),
        "node.toml:17: lun[0] (\"/vol/db/l\"): policy = \"silver\": not defined; defined policies: extreme, gold, performance, value",
    );
    bad(
        "[[lun]]\npath = \"/vol/db/l\"\nsize = \"1MiB\"\nos_type = \"linux\"\n\
         [[lun]]\npath = \"/vol/db/l\"\nsize = \"2MiB\"\nos_type = \"linux\"",
        "node.toml:18: lun[1] (\"/vol/db/l\"): path = \"/vol/db/l\": declared twice (a path names one LUN)",
    );
    let e = parse("[[lun]]\npath = \"/vol/db/l\"\nsize = \"1MiB\"").unwrap_err();
    assert!(e.contains("missing field `os_type`"), "{e}");
    let e = parse(&lun(
        "path = \"/vol/db/l\"\nsize = \"1MiB\"\nos_type = \"linux\"\nserial = \"x\"",
    ))
    .unwrap_err();
    assert!(
        e.starts_with("node.toml:17:") && e.contains("unknown field `serial`"),
        "{e}"
    );
}

#[test]
fn a_bad_igroup_is_refused_naming_line_field_value_and_what_is_allowed() {
    bad(
        "[[igroup]]\nname = \"-g\"\nos_type = \"linux\"",
        "node.toml:14: igroup[0] (\"-g\"): name = \"-g\": names are 1 to 128 characters from A-Z a-z 0-9 _ - . (not starting with - or .)",
    );
    bad(
        "[[igroup]]\nname = \"g\"\nos_type = \"solaris_efi\"",
        "node.toml:15: igroup[0] (\"g\"): os_type = \"solaris_efi\": allowed values are ONTAP's: aix, hpux, hyper_v, linux, netware, openvms, solaris, vmware, windows, xen",
    );
    bad(
        "[[igroup]]\nname = \"g\"\nos_type = \"linux\"\nprotocol = \"fcp\"",
        "node.toml:16: igroup[0] (\"g\"): protocol = \"fcp\": this node serves LUNs over iSCSI only: \"iscsi\" (no fcp or mixed)",
    );
    bad(
        "[[igroup]]\nname = \"g\"\nos_type = \"linux\"\ninitiators = [\"host1\"]",
        "node.toml:16: igroup[0] (\"g\"): initiators = [\"host1\"]: \"host1\" is not an iSCSI name: iqn.YYYY-MM.reversed.domain[:id] (or eui./naa.), at most 223 characters of A-Z a-z 0-9 . - :",
    );
    bad(
        &format!(
            "[[igroup]]\nname = \"g\"\nos_type = \"linux\"\ninitiators = [\"{H1}\", \"{}\"]",
            H1.to_uppercase().replace("IQN", "iqn")
        ),
        &format!(
            "node.toml:16: igroup[0] (\"g\"): initiators = [\"{H1}\", \"{}\"]: \"{}\" is given twice (names are case-insensitive)",
            H1.to_uppercase().replace("IQN", "iqn"),
            H1.to_uppercase().replace("IQN", "iqn")
        ),
    );
    bad(
        "[[igroup]]\nname = \"g\"\nos_type = \"linux\"\n[[igroup]]\nname = \"g\"\nos_type = \"xen\"",
        "node.toml:17: igroup[1] (\"g\"): name = \"g\": declared twice",
    );
}

#[test]
fn a_bad_lun_map_is_refused_naming_line_field_value_and_what_is_allowed() {
    let decl = format!(
        "[[lun]]\npath = \"/vol/db/l\"\nsize = \"1MiB\"\nos_type = \"linux\"\n\
         [[igroup]]\nname = \"g\"\nos_type = \"linux\"\ninitiators = [\"{H1}\"]\n"
    );
    let map = |body: &str| format!("{decl}[[lun_map]]\n{body}");
    bad(
        &map("lun = \"/vol/db/x\"\nigroup = \"g\""),
        "node.toml:22: lun_map[0] (\"/vol/db/x\" to \"g\"): lun = \"/vol/db/x\": not a [[lun]] of this file (its LUNs: /vol/db/l)",
    );
    bad(
        &map("lun = \"/vol/db/l\"\nigroup = \"h\""),
        "node.toml:23: lun_map[0] (\"/vol/db/l\" to \"h\"): igroup = \"h\": not an [[igroup]] of this file (its igroups: g)",
    );
    bad(
        &map("lun = \"/vol/db/l\"\nigroup = \"g\"\nlogical_unit_number = 16384"),
        "node.toml:24: lun_map[0] (\"/vol/db/l\" to \"g\"): logical_unit_number = 16384: allowed range is 0 to 16383",
    );
    bad(
        &map("lun = \"/vol/db/l\"\nigroup = \"g\"\n[[lun_map]]\nlun = \"/vol/db/l\"\nigroup = \"g\""),
        "node.toml:25: lun_map[1] (\"/vol/db/l\" to \"g\"): lun = \"/vol/db/l\": this LUN is mapped to igroup \"g\" already",
    );
    bad(
        &format!(
            "{decl}[[lun]]\npath = \"/vol/db/m\"\nsize = \"1MiB\"\nos_type = \"linux\"\n\
             [[lun_map]]\nlun = \"/vol/db/l\"\nigroup = \"g\"\nlogical_unit_number = 1\n\
             [[lun_map]]\nlun = \"/vol/db/m\"\nigroup = \"g\"\nlogical_unit_number = 1"
        ),
        "node.toml:32: lun_map[1] (\"/vol/db/m\" to \"g\"): logical_unit_number = 1: igroup \"g\" sees LUN /vol/db/l at this number already",
    );
}

#[test]
fn a_lun_path_splits_into_two_valid_names_or_is_refused() {
    use super::san::{split_lun_path, LunPathError as E};
    assert_eq!(split_lun_path("/vol/db/lun_1.a"), Ok(("db", "lun_1.a")));
    // Each part names the LUN's file: nothing that leaves the data directory.
    for (p, want) in [
        ("/vol/db/..", E::Name("..")),
        ("/vol/../lun", E::Name("..")),
        ("/vol/db/", E::Name("")),
        ("/vol/db/a:b", E::Name("a:b")),
        ("/vol/db/q/lun", E::Qtree),
        ("/vol/db", E::Shape),
        ("vol/db/lun", E::Shape),
        ("/vol//db/lun", E::Qtree),
    ] {
        assert_eq!(split_lun_path(p), Err(want), "{p:?}");
    }
}
