//! `login+iscsi://HOST[:PORT]/IQN/LUN[?initiator=NAME&wait=S]`: an iSCSI LUN the `iscsi`
//! (and `block`) suite attaches on every load generator with the kernel's initiator, the
//! seed's way ("mount the iSCSI device to each load generator"), as `mount+nfs://` is for
//! NFS ([`crate::nfs_mount`]). It is the URL of fio's libiscsi engine (`iscsi://...`, same
//! portal, target and LUN) with `login+` in front.
//!
//! Each load generator, before any load, in steps whose failures name the host and the step:
//!
//! 1. `iscsid`: started unless it runs (or systemd's `iscsid.socket` starts it on demand);
//! 2. an open-iscsi interface of the run's own, `qoslab-<run id>`
//!    (`iscsiadm -m iface -o new`), whose `iface.initiatorname` is `initiator=` (`{host}` in
//!    it becomes the load generator's name, so one URL gives every host its own name) or,
//!    without it, the host's own `/etc/iscsi/initiatorname.iscsi`;
//! 3. `iscsiadm -m discovery -t sendtargets -p HOST:PORT -I IFACE`, which must list `IQN`;
//! 4. `iscsiadm -m node -T IQN -p PORTAL -I IFACE --login` (PORTAL: the one discovery
//!    reported for `IQN`, as an array's LIF);
//! 5. the LUN's disk, found in sysfs (`/sys/class/iscsi_session/*`: the session of `IQN`
//!    on the run's interface, its SCSI device `H:C:T:LUN`, no udev needed), waited for up to
//!    `wait` seconds (default 30).
//!
//! The suite then treats the disk as a block target (the disks suite's safety check:
//! `--destroy-data` takes the URL or the device). At the end, on failure and on
//! SIGINT/SIGTERM/SIGHUP, the run's sessions are logged out and its node records,
//! interface and (if the run made it) discovery record deleted; an `iscsid` the run
//! started is stopped once no session is left.

use crate::SuiteError;

/// The scheme of a kernel-attached LUN.
pub const SCHEME: &str = "login+iscsi://";
/// The allowed form, for messages.
pub const FORM: &str = "login+iscsi://HOST[:PORT]/IQN/LUN[?initiator=NAME&wait=SECONDS]";
/// The iSCSI port when the URL gives none (RFC 7143); the highest LUN number (SAM's flat
/// space addressing: 14 bits); whether a name is an iSCSI name: the one rule of the node,
/// the harness and the suites.
pub use iscsi_proto::url::{valid_iscsi_name, DEFAULT_PORT, MAX_LUN};
use iscsi_proto::url::{AddressError, LunAddress, NAME_RULE};
/// Seconds to wait for the LUN's disk after login, unless `wait=` says.
pub const DEFAULT_WAIT_S: u32 = 30;
/// The placeholder of `initiator=` replaced by the load generator's name.
pub const HOST_PLACEHOLDER: &str = "{host}";

/// A target meaning "log in to this LUN with the load generator's kernel initiator".
pub fn is_login_url(t: &str) -> bool {
    t.starts_with(SCHEME)
}

/// A parsed `login+iscsi://` target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginUrl {
    /// A host name or address (IPv6 without its brackets).
    pub host: String,
    pub port: u16,
    pub iqn: String,
    pub lun: u16,
    /// `initiator=`, possibly with `{host}` in it.
    pub initiator: Option<String>,
    pub wait_s: u32,
}

impl LoginUrl {
    /// Parse; the error names what is wrong and the form.
    pub fn parse(url: &str) -> Result<LoginUrl, String> {
        let bad = |what: String| format!("{what} ({FORM})");
        let rest = url
            .strip_prefix(SCHEME)
            .ok_or_else(|| format!("a kernel-attached LUN is {FORM}"))?;
        let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
        let a = LunAddress::parse(rest).map_err(|e| {
            bad(match e {
                AddressError::NoHost => "the portal's host is missing".into(),
                AddressError::BadIqn(iqn) => {
                    format!("target {iqn:?} is not an iSCSI name: {NAME_RULE}")
                }
                e => e.to_string(),
            })
        })?;
        let mut u = LoginUrl {
            host: a.host,
            port: a.port.unwrap_or(DEFAULT_PORT),
            iqn: a.iqn,
            lun: a.lun,
            initiator: None,
            wait_s: DEFAULT_WAIT_S,
        };
        for kv in query.split('&').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            match k {
                "initiator" => {
                    // Checked with a host name in the placeholder's place.
                    if !valid_iscsi_name(&v.replace(HOST_PLACEHOLDER, "h")) {
                        return Err(bad(format!(
                            "initiator={v:?} is not an iSCSI name ({HOST_PLACEHOLDER} may \
                             stand for the load generator's name): {NAME_RULE}"
                        )));
                    }
                    u.initiator = Some(v.to_string());
                }
                "wait" => {
                    u.wait_s = v
                        .parse::<u32>()
                        .ok()
                        .filter(|s| (1..=600).contains(s))
                        .ok_or_else(|| bad(format!("wait={v:?}: want seconds from 1 to 600")))?;
                }
                _ => {
                    return Err(bad(format!(
                        "{k:?}: unknown option (allowed: initiator, wait)"
                    )))
                }
            }
        }
        Ok(u)
    }

    /// `HOST:PORT`, as iscsiadm's `-p` takes it.
    pub fn portal(&self) -> String {
        iscsi_proto::url::portal(&self.host, self.port)
    }

    /// The initiator name load generator `host` logs in with (`{host}` replaced), or None:
    /// the host's own `/etc/iscsi/initiatorname.iscsi`.
    pub fn initiator_for(&self, host: &str) -> Result<Option<String>, String> {
        let Some(i) = &self.initiator else {
            return Ok(None);
        };
        let name = i.replace(HOST_PLACEHOLDER, host);
        if !valid_iscsi_name(&name) {
            return Err(format!(
                "initiator={i:?} for host {host:?} is {name:?}, not an iSCSI name: {NAME_RULE}"
            ));
        }
        Ok(Some(name))
    }

    /// Whether every load generator given this URL logs in with a name of its own.
    pub fn names_each_host(&self) -> bool {
        self.initiator
            .as_deref()
            .is_none_or(|i| i.contains(HOST_PLACEHOLDER))
    }

    /// "LUN 0 of iqn... at 10.0.0.5:3260", for messages.
    pub fn describe(&self) -> String {
        format!("LUN {} of {} at {}", self.lun, self.iqn, self.portal())
    }
}

/// What the host had before the run touched it (learned by [`probe_script`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Before {
    /// iscsid was running, or systemd starts it on demand (`iscsid.socket`).
    pub iscsid: bool,
    /// A SendTargets discovery record of the portal existed.
    pub discovery_record: bool,
}

/// Reads only: is iscsiadm there, does iscsid run, is the portal's discovery recorded.
/// Prints `iscsid yes|no` and `discovery yes|no`; exits 3 without iscsiadm.
pub fn probe_script(u: &LoginUrl) -> String {
    format!(
        "command -v iscsiadm >/dev/null 2>&1 || {{ echo 'iscsiadm not found (install open-iscsi)'; exit 3; }}\n\
         if pidof iscsid >/dev/null 2>&1 || systemctl is-active --quiet iscsid.socket 2>/dev/null; then echo 'iscsid yes'; else echo 'iscsid no'; fi\n\
         if iscsiadm -m discoverydb -t sendtargets -p {p} >/dev/null 2>&1; then echo 'discovery yes'; else echo 'discovery no'; fi\n",
        p = hosts::quote(&u.portal())
    )
}

/// [`probe_script`]'s answer.
pub fn parse_probe(out: &str) -> Result<Before, String> {
    let mut b = (None, None);
    for l in out.lines() {
        match l.trim() {
            "iscsid yes" => b.0 = Some(true),
            "iscsid no" => b.0 = Some(false),
            "discovery yes" => b.1 = Some(true),
            "discovery no" => b.1 = Some(false),
            _ => {}
        }
    }
    match b {
        (Some(iscsid), Some(discovery_record)) => Ok(Before {
            iscsid,
            discovery_record,
        }),
        _ => Err(format!("unexpected answer: {}", out.trim())),
    }
}

/// Start iscsid (its state directories first: a minimal host may have none). Its output
/// goes to a file, never to the ssh session's pipes, which the daemon would hold open.
pub fn start_iscsid_script() -> String {
    "mkdir -p /etc/iscsi /var/lib/iscsi /run/lock/iscsi /var/lock && l=$(mktemp) || exit 4\n\
     iscsid </dev/null >\"$l\" 2>&1; r=$?; cat \"$l\"; rm -f \"$l\"; [ $r -eq 0 ] || exit 4\n\
     sleep 1; pidof iscsid >/dev/null || { echo 'iscsid exited'; exit 4; }\n"
        .into()
}

/// Make the run's interface `iface` with `initiator` (None: the host's own name, from
/// `/etc/iscsi/initiatorname.iscsi`); prints `initiator NAME`.
pub fn iface_script(iface: &str, initiator: Option<&str>) -> String {
    let name = match initiator {
        Some(n) => format!("n={}", hosts::quote(n)),
        None => "n=$(sed -n 's/^[[:space:]]*InitiatorName=//p' /etc/iscsi/initiatorname.iscsi 2>/dev/null | head -n 1)\n\
                 [ -n \"$n\" ] || { echo 'no InitiatorName in /etc/iscsi/initiatorname.iscsi (set it, or give ?initiator=IQN)'; exit 3; }"
            .into(),
    };
    let i = hosts::quote(iface);
    format!(
        "{name}\n\
         iscsiadm -m iface -I {i} -o new >/dev/null 2>&1 || {{ iscsiadm -m iface -I {i} -o new 2>&1; exit 4; }}\n\
         iscsiadm -m iface -I {i} -o update -n iface.initiatorname -v \"$n\" 2>&1 >/dev/null || exit 4\n\
         echo \"initiator $n\"\n"
    )
}

/// SendTargets discovery at the URL's portal through `iface`.
pub fn discovery_command(u: &LoginUrl, iface: &str) -> String {
    format!(
        "timeout 60 iscsiadm -m discovery -t sendtargets -p {} -I {} 2>&1",
        hosts::quote(&u.portal()),
        hosts::quote(iface)
    )
}

/// The portal discovery's output (`ADDR:PORT,TPGT IQN` lines) reports for `iqn`.
pub fn portal_of(discovery: &str, iqn: &str) -> Result<String, String> {
    let mut listed = Vec::new();
    for l in discovery.lines() {
        let mut w = l.split_whitespace();
        let (Some(p), Some(t)) = (w.next(), w.next()) else {
            continue;
        };
        let Some((portal, _tpgt)) = p.rsplit_once(',') else {
            continue;
        };
        if t == iqn {
            return Ok(portal.to_string());
        }
        listed.push(t.to_string());
    }
    Err(if listed.is_empty() {
        format!("no target {iqn} (it lists none)")
    } else {
        format!("no target {iqn} (it lists {})", listed.join(", "))
    })
}

/// Log in to `iqn` at `portal` through `iface`.
pub fn login_command(iqn: &str, portal: &str, iface: &str) -> String {
    format!(
        "timeout 60 iscsiadm -m node -T {} -p {} -I {} --login 2>&1",
        hosts::quote(iqn),
        hosts::quote(portal),
        hosts::quote(iface)
    )
}

/// Find the disk of LUN `lun` in `iqn`'s session on `iface` (sysfs), waiting up to `wait_s`
/// seconds; prints `disk NAME`, or exits 5 after listing the session's LUNs (`luns N ...`).
pub fn find_disk_script(iqn: &str, iface: &str, lun: u16, wait_s: u32) -> String {
    format!(
        "t={t}; f={f}; n=0\n\
         while :; do\n\
         \x20 luns=''\n\
         \x20 for s in /sys/class/iscsi_session/session*; do\n\
         \x20   [ \"$(cat $s/targetname 2>/dev/null)\" = \"$t\" ] && [ \"$(cat $s/ifacename 2>/dev/null)\" = \"$f\" ] || continue\n\
         \x20   d=$(readlink -f $s/device)\n\
         \x20   for u in $d/target*/*:*:*:*; do [ -e \"$u\" ] && luns=\"$luns ${{u##*:}}\"; done\n\
         \x20   for b in $d/target*/*:*:*:{lun}/block/*; do [ -e \"$b\" ] && {{ echo \"disk ${{b##*/}}\"; exit 0; }}; done\n\
         \x20 done\n\
         \x20 [ $n -ge {ticks} ] && {{ echo \"luns$luns\"; exit 5; }}\n\
         \x20 n=$((n+1)); sleep 0.2\n\
         done\n",
        t = hosts::quote(iqn),
        f = hosts::quote(iface),
        ticks = wait_s * 5,
    )
}

/// Undo everything the run did on the host: log its sessions out, delete its node records
/// and interface, the discovery record unless the host had it, and stop iscsid if the run
/// started it and no session is left. Never fails.
pub fn cleanup_script(u: &LoginUrl, iface: &str, before: Before) -> String {
    let i = hosts::quote(iface);
    let mut s = format!(
        "timeout 60 iscsiadm -m node -I {i} --logout >/dev/null 2>&1\n\
         for s in /sys/class/iscsi_session/session*; do [ \"$(cat $s/ifacename 2>/dev/null)\" = {i} ] && \
         timeout 60 iscsiadm -m session -r ${{s##*session}} --logout >/dev/null 2>&1; done\n\
         iscsiadm -m node -I {i} -o delete >/dev/null 2>&1\n\
         iscsiadm -m iface -I {i} -o delete >/dev/null 2>&1\n"
    );
    if !before.discovery_record {
        s.push_str(&format!(
            "iscsiadm -m discoverydb -t sendtargets -p {} -o delete >/dev/null 2>&1\n",
            hosts::quote(&u.portal())
        ));
    }
    if !before.iscsid {
        s.push_str(
            "[ -z \"$(iscsiadm -m session 2>/dev/null)\" ] && iscsiadm -k 0 >/dev/null 2>&1\n",
        );
    }
    s.push_str("true\n");
    s
}

/// A LUN attached on one load generator; logged out on drop and on signals.
#[derive(Debug)]
pub struct Attached {
    host: hosts::Host,
    cleanup: String,
    /// `/dev/NAME`.
    pub device: String,
    /// The initiator name the session logged in with.
    pub initiator: String,
    _guard: lifecycle::Guard,
}

impl Attached {
    /// Attach `url` on `h` (named `host`) through the open-iscsi interface `iface`.
    pub fn attach(
        h: &hosts::Host,
        host: &str,
        url: &str,
        iface: &str,
    ) -> Result<Attached, SuiteError> {
        let fail = |step: &str, detail: &str| {
            SuiteError::Invalid(format!("{host}: {url}: {step}: {}", detail.trim()))
        };
        let u = LoginUrl::parse(url).map_err(|e| fail("invalid target", &e))?;
        let initiator = u
            .initiator_for(host)
            .map_err(|e| fail("invalid target", &e))?;
        let out = h.run(&probe_script(&u))?;
        if out.code != 0 {
            return Err(fail("open-iscsi", &format!("{}{}", out.stdout, out.stderr)));
        }
        let before = parse_probe(&out.stdout).map_err(|e| fail("open-iscsi", &e))?;
        let cleanup = cleanup_script(&u, iface, before);
        // Registered before anything changes, so a signal during the steps still undoes them.
        let (h2, c2) = (h.clone(), cleanup.clone());
        let guard = lifecycle::register(lifecycle::Phase::Remote, move || {
            let _ = h2.run(&c2);
        });
        match steps(h, &u, iface, initiator.as_deref(), before, &fail) {
            Ok((disk, initiator)) => Ok(Attached {
                host: h.clone(),
                cleanup,
                device: format!("/dev/{disk}"),
                initiator,
                _guard: guard,
            }),
            Err(e) => {
                // Whichever step failed (its host unreachable too), undo what was done.
                let _ = h.run(&cleanup);
                Err(e)
            }
        }
    }
}

/// [`Attached::attach`]'s steps after the probe: iscsid, the interface, discovery, login,
/// the disk; the disk's name and the initiator name logged in with.
fn steps(
    h: &hosts::Host,
    u: &LoginUrl,
    iface: &str,
    initiator: Option<&str>,
    before: Before,
    fail: &dyn Fn(&str, &str) -> SuiteError,
) -> Result<(String, String), SuiteError> {
    let step = |name: &str, script: &str| -> Result<String, SuiteError> {
        let o = h.run(script)?;
        if o.code != 0 {
            return Err(fail(name, &format!("{}{}", o.stdout, o.stderr)));
        }
        Ok(o.stdout)
    };
    if !before.iscsid {
        step("starting iscsid failed", &start_iscsid_script())?;
    }
    let made = step("the initiator's interface", &iface_script(iface, initiator))?;
    let initiator = made
        .lines()
        .find_map(|l| l.strip_prefix("initiator "))
        .unwrap_or_default()
        .to_string();
    let disc = step(
        &format!("discovery at {} refused", u.portal()),
        &discovery_command(u, iface),
    )?;
    let portal =
        portal_of(&disc, &u.iqn).map_err(|e| fail(&format!("discovery at {}", u.portal()), &e))?;
    step(
        &format!("login to {} at {portal} as {initiator} failed", u.iqn),
        &login_command(&u.iqn, &portal, iface),
    )?;
    let o = h.run(&find_disk_script(&u.iqn, iface, u.lun, u.wait_s))?;
    let disk = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("disk "))
        .filter(|d| !d.is_empty() && d.bytes().all(|c| c.is_ascii_alphanumeric()));
    let Some(disk) = disk else {
        let seen = o
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix("luns"))
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| format!("the session's LUNs: {}", l.replace(' ', ", ")))
            .unwrap_or_else(|| "the session has no LUN this initiator may see".into());
        return Err(fail(
            &format!("no LUN {}", u.lun),
            &format!(
                "logged in to {} as {initiator}, no disk for LUN {} after {} s ({seen}){}",
                u.iqn,
                u.lun,
                u.wait_s,
                if o.stderr.trim().is_empty() {
                    String::new()
                } else {
                    format!(": {}", o.stderr.trim())
                }
            ),
        ));
    };
    Ok((disk.to_string(), initiator))
}

impl Drop for Attached {
    fn drop(&mut self) {
        let _ = self.host.run(&self.cleanup);
    }
}

#[cfg(test)]
#[path = "iscsi_login_tests.rs"]
mod tests;
