use super::*;

const IQN: &str = "iqn.2026-01.lab.qoslab:target0";

#[test]
fn a_login_url_is_parsed_with_its_defaults() {
    let u = LoginUrl::parse(&format!("login+iscsi://10.0.0.5/{IQN}/0")).unwrap();
    assert_eq!(
        u,
        LoginUrl {
            host: "10.0.0.5".into(),
            port: 3260,
            iqn: IQN.into(),
            lun: 0,
            initiator: None,
            wait_s: 30,
        }
    );
    assert_eq!(u.portal(), "10.0.0.5:3260");
    assert_eq!(u.describe(), format!("LUN 0 of {IQN} at 10.0.0.5:3260"));
    assert_eq!(u.initiator_for("h0").unwrap(), None);
    assert!(u.names_each_host(), "each host's own initiatorname.iscsi");
    let u = LoginUrl::parse(&format!(
        "login+iscsi://[fd00::5]:3261/{IQN}/16383?initiator=iqn.2026-01.lab:{{host}}&wait=5"
    ))
    .unwrap();
    assert_eq!(
        (u.portal(), u.lun, u.wait_s),
        ("[fd00::5]:3261".into(), 16383, 5)
    );
    assert_eq!(
        u.initiator_for("h1").unwrap().as_deref(),
        Some("iqn.2026-01.lab:h1")
    );
    assert!(u.names_each_host());
    let fixed = LoginUrl::parse(&format!(
        "login+iscsi://filer/{IQN}/1?initiator=iqn.2026-01.lab:one"
    ))
    .unwrap();
    assert!(!fixed.names_each_host(), "one name for every host");
    // A host name that makes the name invalid is refused when it is known.
    let e = u.initiator_for("root@lg1").unwrap_err();
    assert!(
        e.contains("\"iqn.2026-01.lab:root@lg1\", not an iSCSI name"),
        "{e}"
    );
}

#[test]
fn bad_login_urls_say_what_is_wrong() {
    for (url, want) in [
        (
            format!("iscsi://10.0.0.5/{IQN}/0"),
            "a kernel-attached LUN is login+iscsi://HOST[:PORT]/IQN/LUN",
        ),
        (
            format!("login+iscsi://10.0.0.5:0/{IQN}/0"),
            "port \"0\" is not a number from 1 to 65535",
        ),
        (
            format!("login+iscsi://10.0.0.5:70000/{IQN}/0"),
            "port \"70000\"",
        ),
        (format!("login+iscsi://10.0.0.5:+1/{IQN}/0"), "port \"+1\""),
        (
            format!("login+iscsi://10.0.0.5/{IQN}"),
            "the LUN number is missing",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/"),
            "the LUN number is missing",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/16384"),
            "LUN \"16384\" is not a number from 0 to 16383",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/0/x"),
            "\"/x\" after the LUN",
        ),
        (
            "login+iscsi://10.0.0.5/target0/0".into(),
            "target \"target0\" is not an iSCSI name",
        ),
        (
            "login+iscsi://10.0.0.5/iqn.2026-01.lab:a_b/0".into(),
            "target \"iqn.2026-01.lab:a_b\" is not an iSCSI name",
        ),
        (
            format!("login+iscsi://10.0.0.5/iqn.{}/0", "a".repeat(220)),
            "is not an iSCSI name",
        ),
        (
            "login+iscsi://10.0.0.5//0".into(),
            "the target's name (IQN) is missing",
        ),
        (format!("login+iscsi:///{IQN}/0"), "host is missing"),
        (
            format!("login+iscsi://a;b/{IQN}/0"),
            "\"a;b\" is not a host name or address",
        ),
        (
            format!("login+iscsi://[zz]:3260/{IQN}/0"),
            "[zz] is not an IPv6 address",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/0?initiator=me"),
            "initiator=\"me\" is not an iSCSI name",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/0?initiator=iqn.2026-01.x:$(id)"),
            "is not an iSCSI name",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/0?wait=0"),
            "wait=\"0\": want seconds from 1 to 600",
        ),
        (
            format!("login+iscsi://10.0.0.5/{IQN}/0?chap=x"),
            "\"chap\": unknown option (allowed: initiator, wait)",
        ),
    ] {
        let e = LoginUrl::parse(&url).unwrap_err();
        assert!(e.contains(want), "{url}: {e}");
    }
}

#[test]
fn the_steps_are_iscsiadms_command_lines() {
    let u = LoginUrl::parse(&format!("login+iscsi://10.0.0.5:3261/{IQN}/2?wait=3")).unwrap();
    let iface = "qoslab-77-1700000000000";
    assert_eq!(
        discovery_command(&u, iface),
        "timeout 60 iscsiadm -m discovery -t sendtargets -p 10.0.0.5:3261 \
         -I qoslab-77-1700000000000 2>&1"
    );
    assert_eq!(
        login_command(IQN, "10.0.0.6:3260", iface),
        "timeout 60 iscsiadm -m node -T iqn.2026-01.lab.qoslab:target0 -p 10.0.0.6:3260 \
         -I qoslab-77-1700000000000 --login 2>&1"
    );
    let s = iface_script(iface, Some("iqn.2026-01.lab:h0"));
    assert!(s.starts_with("n=iqn.2026-01.lab:h0\n"), "{s}");
    assert!(
        s.contains(
            "iscsiadm -m iface -I qoslab-77-1700000000000 -o update -n iface.initiatorname -v \"$n\""
        ),
        "{s}"
    );
    let s = iface_script(iface, None);
    assert!(s.contains("/etc/iscsi/initiatorname.iscsi"), "{s}");
    assert!(s.contains("give ?initiator=IQN"), "{s}");
    let s = find_disk_script(IQN, iface, 2, 3);
    assert!(s.contains("$d/target*/*:*:*:2/block/*"), "{s}");
    assert!(s.contains("[ $n -ge 15 ]"), "3 s in 0.2 s ticks: {s}");
    assert!(
        probe_script(&u).contains("iscsiadm -m discoverydb -t sendtargets -p 10.0.0.5:3261"),
        "{}",
        probe_script(&u)
    );
}

#[test]
fn cleanup_undoes_only_what_the_run_did() {
    let u = LoginUrl::parse(&format!("login+iscsi://10.0.0.5/{IQN}/0")).unwrap();
    let all = cleanup_script(&u, "qoslab-1", Before::default());
    assert_eq!(
        all,
        "timeout 60 iscsiadm -m node -I qoslab-1 --logout >/dev/null 2>&1\n\
         for s in /sys/class/iscsi_session/session*; do [ \"$(cat $s/ifacename 2>/dev/null)\" = qoslab-1 ] && \
         timeout 60 iscsiadm -m session -r ${s##*session} --logout >/dev/null 2>&1; done\n\
         iscsiadm -m node -I qoslab-1 -o delete >/dev/null 2>&1\n\
         iscsiadm -m iface -I qoslab-1 -o delete >/dev/null 2>&1\n\
         iscsiadm -m discoverydb -t sendtargets -p 10.0.0.5:3260 -o delete >/dev/null 2>&1\n\
         [ -z \"$(iscsiadm -m session 2>/dev/null)\" ] && iscsiadm -k 0 >/dev/null 2>&1\n\
         true\n"
    );
    let kept = cleanup_script(
        &u,
        "qoslab-1",
        Before {
            iscsid: true,
            discovery_record: true,
        },
    );
    assert!(
        !kept.contains("discoverydb") && !kept.contains("-k 0"),
        "{kept}"
    );
    assert!(kept.contains("--logout"), "{kept}");
}

#[test]
fn discovery_and_probe_answers_are_read() {
    let out = "10.0.0.6:3260,1 iqn.2026-01.lab.qoslab:other\n\
               10.0.0.6:3260,1 iqn.2026-01.lab.qoslab:target0\n";
    assert_eq!(portal_of(out, IQN).unwrap(), "10.0.0.6:3260");
    assert_eq!(
        portal_of("[fd00::6]:3260,1 iqn.2026-01.lab.qoslab:target0\n", IQN).unwrap(),
        "[fd00::6]:3260"
    );
    let e = portal_of("10.0.0.6:3260,1 iqn.2026-01.lab.qoslab:other\n", IQN).unwrap_err();
    assert_eq!(
        e,
        "no target iqn.2026-01.lab.qoslab:target0 (it lists iqn.2026-01.lab.qoslab:other)"
    );
    assert!(portal_of("", IQN).unwrap_err().contains("it lists none"));
    assert_eq!(
        parse_probe("iscsid no\ndiscovery yes\n").unwrap(),
        Before {
            iscsid: false,
            discovery_record: true
        }
    );
    assert!(parse_probe("iscsid no\n").is_err());
}
