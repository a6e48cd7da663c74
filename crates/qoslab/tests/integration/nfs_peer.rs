//! nfs-ganesha, the open userspace NFS server, as the peer the NFS front end is compared
//! with (`scripts/install-deps.sh` installs it): [`Ganesha`] starts `ganesha.nfsd` (VFS
//! FSAL, NFSv3 over TCP) on free ports with the given exports, starting `rpcbind` first if
//! none runs (ganesha exits without it), and stops both on drop.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::nfs_util::Wire;
use crate::util::TempDir;
use test_support::free_port;

/// One ganesha export: its path (what NFSv3 clients mount) and whether root is squashed.
pub struct GaneshaExport {
    pub path: PathBuf,
    pub root_squash: bool,
}

/// A running `ganesha.nfsd`; killed (with the `rpcbind` it started) on drop.
pub struct Ganesha {
    child: Option<Child>,
    rpcbind: Option<Child>,
    pub nfs_port: u16,
    pub mnt_port: u16,
    dir: TempDir,
}

fn die_with_parent(cmd: &mut Command) {
    // SAFETY: prctl in the child before exec: it dies with the test's thread.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
}

fn rpcbind_runs() -> bool {
    Command::new("pgrep")
        .args(["-x", "rpcbind"])
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

impl Ganesha {
    pub fn start(exports: &[GaneshaExport]) -> Ganesha {
        assert!(
            Path::new("/usr/bin/ganesha.nfsd").exists(),
            "nfs-ganesha is not installed: run scripts/install-deps.sh"
        );
        let dir = TempDir::new("ganesha");
        let rpcbind = (!rpcbind_runs()).then(|| {
            let mut c = Command::new("rpcbind");
            c.arg("-f").stdout(Stdio::null()).stderr(Stdio::null());
            die_with_parent(&mut c);
            let child = c
                .spawn()
                .expect("starting rpcbind (scripts/install-deps.sh)");
            std::thread::sleep(Duration::from_millis(300));
            child
        });
        let (nfs_port, mnt_port) = (free_port(), free_port());
        let mut conf = format!(
            "NFS_CORE_PARAM {{ NFS_Port = {nfs_port}; MNT_Port = {mnt_port}; Enable_NLM = false; \
             Enable_RQUOTA = false; Protocols = 3; }}\nNFSV4 {{ Graceless = true; }}\n\
             LOG {{ Default_Log_Level = EVENT; }}\n"
        );
        for (i, e) in exports.iter().enumerate() {
            conf.push_str(&format!(
                "EXPORT {{ Export_Id = {}; Path = {p}; Pseudo = {p}; Protocols = 3; \
                 Transports = TCP; Access_Type = RW; SecType = sys, none; Squash = {}; \
                 Anonymous_Uid = 65534; Anonymous_Gid = 65534; FSAL {{ Name = VFS; }} }}\n",
                i + 1,
                if e.root_squash {
                    "Root_Squash"
                } else {
                    "No_Root_Squash"
                },
                p = e.path.display(),
            ));
        }
        let conf_path = dir.join("ganesha.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let mut c = Command::new("ganesha.nfsd");
        c.arg("-F")
            .arg("-f")
            .arg(&conf_path)
            .arg("-L")
            .arg(dir.join("ganesha.log"))
            .arg("-p")
            .arg(dir.join("ganesha.pid"))
            .args(["-N", "NIV_EVENT"])
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        die_with_parent(&mut c);
        let child = c.spawn().expect("starting ganesha.nfsd");
        let mut g = Ganesha {
            child: Some(child),
            rpcbind,
            nfs_port,
            mnt_port,
            dir,
        };
        // Up when its MOUNT program mounts the first export.
        let deadline = Instant::now() + Duration::from_secs(30);
        let first = exports[0].path.to_string_lossy().to_string();
        loop {
            let ok = std::net::TcpStream::connect(("127.0.0.1", g.mnt_port)).is_ok()
                && Wire::connect(g.mnt_port).try_mount(&first).is_ok();
            if ok {
                return g;
            }
            if Instant::now() > deadline {
                let log = g.log();
                g.stop();
                panic!("ganesha did not start within 30 s; its log:\n{log}");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("ganesha.log")).unwrap_or_default()
    }

    fn stop(&mut self) {
        for c in [self.child.take(), self.rpcbind.take()]
            .into_iter()
            .flatten()
        {
            let mut c = c;
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Ganesha {
    fn drop(&mut self) {
        self.stop();
    }
}
