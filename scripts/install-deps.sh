#!/usr/bin/env bash
# Install the external programs qoslab's tests and benchmarks drive, all real (no mocks):
#   - NBD clients and peers: fio (with its nbd engine), nbdkit, libnbd's nbdinfo/nbdcopy/
#     nbdfuse/nbdsh and its Python module, qemu-img and qemu-storage-daemon
#   - reports: headless Chromium (reports are rendered and screenshotted)
#   - the ONTAP-compatibility test: NetApp's own netapp-ontap client (PyPI, pinned), curl
#   - the S3 endpoint's interop tests: awscli and boto3 (PyPI), s3cmd, rclone
#   - tenant sweeps: fuse3, mount/losetup, e2fsprogs, xfsprogs, git, tar, redis
#     (redis-server is run by the tests, never as a service)
#   - system suites and their namespace test hosts: iperf3, OpenSSH client and server,
#     iproute2 (netns, veth, bridge, tc), util-linux (wipefs, setsid), procps, coreutils
#   - NFS: libnfs-utils, fio rebuilt from Debian's source with its nfs and libiscsi ioengines, nfs-ganesha
#     (VFS FSAL, rpcbind) as the peer, and a Linux kernel NFS client: Debian's kernel and
#     qemu-system-x86_64 unpacked into QOSLAB_CACHE (default /var/cache/qoslab), busybox
#     and cpio (also the test bed's qemu guest hosts: sshd and fio copied in with their libraries)
# Idempotent: installs only what is missing. Needs root (apt-get) or sudo.
#
# --garage also installs Garage (crates.io, pinned), the S3 object store the S3 benchmark is
# checked against by bench/s3-garage.sh. Not for CI: it compiles for ~11.5 CPU-minutes
# (8 min wall here; docs/BENCHMARKS.md, "Garage's install"), most of a CI run; no test needs it.
set -euo pipefail
with_garage=0
for arg in "$@"; do
  case "$arg" in
    --garage) with_garage=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown argument $arg (known: --garage)" >&2; exit 2 ;;
  esac
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
say() { echo "install-deps: $*" >&2; }

# A command (or an absolute path) -> the Debian package that provides it.
declare -A apt_pkg_of=(
  # NBD clients, peers, reports
  [fio]=fio
  [nbdkit]=nbdkit
  [nbdinfo]=libnbd-bin
  [nbdcopy]=libnbd-bin
  [nbdfuse]=libnbd-bin
  [nbdsh]=python3-libnbd
  [qemu-img]=qemu-utils
  [qemu-storage-daemon]=qemu-utils
  [python3]=python3
  [chromium]=chromium
  [curl]=curl
  # S3 clients from Debian (awscli and boto3 come from PyPI, below)
  [s3cmd]=s3cmd
  [rclone]=rclone
  # tenants: volumes mounted as file systems, and the applications on them
  [fusermount3]=fuse3
  [losetup]=mount
  [mkfs.ext4]=e2fsprogs
  [mkfs.xfs]=xfsprogs
  [git]=git
  [tar]=tar
  [redis-server]=redis-server
  [redis-cli]=redis-tools
  # system suites and namespace test hosts (the tests run their own sshd per namespace; a
  # system sshd the package may start listens in the root namespace and is not used)
  [iperf3]=iperf3
  [ssh]=openssh-client
  [ssh-keygen]=openssh-client
  [/usr/sbin/sshd]=openssh-server
  [ip]=iproute2
  [tc]=iproute2
  [wipefs]=util-linux
  [setsid]=util-linux
  [pgrep]=procps
  [timeout]=coreutils
  [sha256sum]=coreutils
  # iSCSI: libiscsi's clients and conformance suite, tgt as the peer target
  [iscsi-ls]=libiscsi-bin
  [iscsi-test-cu]=libiscsi-bin
  [iscsi-perf]=libiscsi-bin
  [/usr/sbin/tgtd]=tgt
  [tgtadm]=tgt
  # the Linux kernel initiator's user space (iscsid, iscsiadm), copied into the qemu
  # guests the tests boot (its service on this machine is not used)
  [/usr/sbin/iscsiadm]=open-iscsi
  [/usr/sbin/iscsid]=open-iscsi
)

apt_install() {
  say "installing $*"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}

pip_install() {
  say "pip installing $*"
  python3 -m pip install --quiet --disable-pip-version-check "$@" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$@"
}

# 1. Debian packages for every missing command.
missing=()
for cmd in "${!apt_pkg_of[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "$cmd" ] || missing+=("${apt_pkg_of[$cmd]}")
done
# libnbd's Python module is Debian's, for Debian's python3 (nbdsh may be present while
# another python3 comes first on PATH).
/usr/bin/python3 -c "import nbd" 2>/dev/null || missing+=(python3-libnbd)
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  apt_install "${missing[@]}"
fi

# 2. PyPI, for whichever python3 is first on PATH: awscli and boto3 (Debian's python3-boto3
# only serves /usr/bin/python3, and its awscli is v2, a different program), and NetApp's
# ONTAP client at the version the compatibility test was written against.
if ! python3 -c 'import boto3' >/dev/null 2>&1 || ! command -v aws >/dev/null 2>&1; then
  pip_install awscli boto3
fi
NETAPP_ONTAP_VERSION=9.19.1.0
if ! python3 -c "import netapp_ontap, sys; sys.exit(netapp_ontap.__version__ != '$NETAPP_ONTAP_VERSION')" 2>/dev/null; then
  pip_install "netapp-ontap==$NETAPP_ONTAP_VERSION"
fi

# schemathesis: the REST API's contract test (docs/API.md, issue 23) runs it against a node.
SCHEMATHESIS_VERSION=4.32.5
if ! python3 -c "import schemathesis, sys; sys.exit(schemathesis.__version__ != '$SCHEMATHESIS_VERSION')" 2>/dev/null; then
  pip_install "schemathesis==$SCHEMATHESIS_VERSION"
fi

# 2b. cargo-nextest, the test runner of scripts/test.sh (tiers, test groups, per-test times;
# docs/TESTING.md). The machine image ships it; elsewhere it is built from crates.io.
command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
if ! cargo nextest --version >/dev/null 2>&1; then
  say "cargo install cargo-nextest --locked (a few CPU-minutes)"
  cargo install --quiet --locked cargo-nextest
fi

# 3. What the tests rely on beyond presence.
if ! fio --enghelp 2>/dev/null | grep -qw nbd; then
  say "this fio ($(fio --version)) lacks the nbd ioengine"
  exit 1
fi

# 4. Garage (opt-in, above): `cargo install` from crates.io, the version pinned and its lock
# file used; the time it took is printed.
GARAGE_VERSION=2.5.0
if [ "$with_garage" = 1 ]; then
  command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
  if ! garage --version 2>/dev/null | grep -q "cargo:$GARAGE_VERSION "; then
    say "cargo install garage --locked --version $GARAGE_VERSION (~11.5 CPU-minutes)"
    start=$(date +%s)
    cargo install --quiet --locked garage --version "$GARAGE_VERSION"
    say "garage built and installed in $(( $(date +%s) - start )) s (load: $(uptime | sed 's/.*load average: //'))"
  fi
fi

# 5. NFS (issue 22). Everything downloaded or built is kept in $QOSLAB_CACHE, so a machine
# pays for it once. fio: Debian's fio lacks the nfs ioengine, so Debian's own source package
# is rebuilt with libnfs (and libnbd and libaio, as Debian builds it) into /usr/local
# (~40 s on 2 cores). The kernel client: qemu-system-x86 7.2 from Debian would replace this
# image's qemu-utils 10, so its packages are downloaded and unpacked privately; the kernel
# is Debian's linux-image-amd64 dependency, unpacked likewise (no depmod: the test's
# initramfs loads its modules by path).
QOSLAB_CACHE=${QOSLAB_CACHE:-/var/cache/qoslab}
nfs_pkgs=()
for p in libnfs-utils libnfs-dev nfs-ganesha nfs-ganesha-vfs rpcbind busybox-static cpio \
         libaio-dev libnbd-dev libiscsi-dev zlib1g-dev pkg-config make gcc dpkg-dev \
         libcapstone4 libfdt1 libslirp0 libvdeplug2; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || nfs_pkgs+=("$p")
done
[ ${#nfs_pkgs[@]} -eq 0 ] || apt_install "${nfs_pkgs[@]}"
$SUDO mkdir -p "$QOSLAB_CACHE"
if ! fio --enghelp=nfs >/dev/null 2>&1 || ! fio --enghelp=libiscsi >/dev/null 2>&1; then
  start=$(date +%s)
  src="$QOSLAB_CACHE/fio-src"
  $SUDO mkdir -p "$src/lists"
  echo "deb-src http://deb.debian.org/debian bookworm main" | $SUDO tee "$src/sources.list" >/dev/null
  aptsrc=(-o Dir::Etc::SourceList="$src/sources.list" -o Dir::Etc::SourceParts=/dev/null -o Dir::State::Lists="$src/lists")
  if ! ls "$src"/fio_*.dsc >/dev/null 2>&1; then
    say "downloading Debian's fio source package"
    (cd "$src" && $SUDO apt-get "${aptsrc[@]}" update -qq && $SUDO apt-get "${aptsrc[@]}" source --download-only -qq fio) >/dev/null 2>&1
  fi
  dsc=$(ls "$src"/fio_*.dsc | head -1)
  ver=$(basename "$dsc" .dsc | sed 's/^fio_//; s/-[^-]*$//')
  [ -d "$src/fio-$ver" ] || (cd "$src" && $SUDO dpkg-source -x "$dsc" "fio-$ver" >/dev/null)
  say "building fio $ver with the nfs and libiscsi ioengines"
  (cd "$src/fio-$ver" && $SUDO ./configure --disable-native --prefix=/usr/local --enable-libnbd --enable-libnfs --enable-libiscsi >/dev/null \
    && $SUDO make -j"$(nproc)" >/dev/null 2>&1 && $SUDO make install >/dev/null 2>&1)
  hash -r
  say "fio $ver with nfs and libiscsi built and installed in $(( $(date +%s) - start )) s"
fi
for engine in nfs nbd libaio libiscsi; do
  fio --enghelp="$engine" >/dev/null 2>&1 || { say "$(command -v fio) lacks the $engine ioengine"; exit 1; }
done
if [ ! -x "$QOSLAB_CACHE/qemu/usr/bin/qemu-system-x86_64" ] || [ ! -d "$QOSLAB_CACHE/kernel/lib/modules" ]; then
  start=$(date +%s)
  $SUDO mkdir -p "$QOSLAB_CACHE/debs" && $SUDO chmod 777 "$QOSLAB_CACHE/debs"
  kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}')
  [ -n "$kpkg" ] || { $SUDO apt-get update -qq; kpkg=$(apt-cache depends linux-image-amd64 | awk '/Depends: linux-image-[0-9]/{print $2; exit}'); }
  (cd "$QOSLAB_CACHE/debs" && apt-get download -qq qemu-system-x86 qemu-system-common qemu-system-data seabios "$kpkg" 2>/dev/null)
  $SUDO rm -rf "$QOSLAB_CACHE/qemu" "$QOSLAB_CACHE/kernel"
  $SUDO mkdir -p "$QOSLAB_CACHE/qemu" "$QOSLAB_CACHE/kernel"
  for d in "$QOSLAB_CACHE"/debs/qemu-system-*.deb "$QOSLAB_CACHE"/debs/seabios_*.deb; do $SUDO dpkg -x "$d" "$QOSLAB_CACHE/qemu"; done
  $SUDO dpkg -x "$QOSLAB_CACHE"/debs/"$kpkg"_*.deb "$QOSLAB_CACHE/kernel"
  say "qemu-system-x86_64 and $kpkg unpacked into $QOSLAB_CACHE in $(( $(date +%s) - start )) s"
fi
if ldd "$QOSLAB_CACHE/qemu/usr/bin/qemu-system-x86_64" | grep -q 'not found'; then
  say "qemu-system-x86_64 misses libraries: $(ldd "$QOSLAB_CACHE/qemu/usr/bin/qemu-system-x86_64" | grep 'not found' | tr -s ' \n' ' ')"
  exit 1
fi
say "NFS: $(fio --version) with nfs at $(command -v fio), libnfs-utils $(dpkg-query -W -f='${Version}' libnfs-utils), nfs-ganesha $(dpkg-query -W -f='${Version}' nfs-ganesha), $("$QOSLAB_CACHE/qemu/usr/bin/qemu-system-x86_64" -L "$QOSLAB_CACHE/qemu/usr/share/seabios" --version | head -1), kernel $(ls "$QOSLAB_CACHE/kernel/lib/modules")"

# 6. Seed 004's build and broker tenant apps (issue 26): gcc, make and binutils for the
# builds; Apache ActiveMQ (Debian's activemq, 5.17, pulls a Java runtime) for the broker.
# Its system service is not wanted: the tests start their own brokers on free ports.
apps_pkgs=()
for p in gcc make binutils activemq; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || apps_pkgs+=("$p")
done
command -v java >/dev/null 2>&1 || apps_pkgs+=(default-jre-headless)
if [ ${#apps_pkgs[@]} -gt 0 ]; then
  apt_install "${apps_pkgs[@]}"
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet activemq 2>/dev/null; then
    $SUDO systemctl disable --now activemq >/dev/null 2>&1 || true
  fi
fi
[ -f /usr/share/activemq/bin/activemq.jar ] && command -v java >/dev/null \
  || { say "ActiveMQ or java missing after install"; exit 1; }
say "apps: $(gcc --version | head -1), $(make --version | head -1), ActiveMQ $(dpkg-query -W -f='${Version}' activemq), $(java -version 2>&1 | head -1)"

say "fio $(fio --version | sed 's/fio-//'), nbdkit $(nbdkit --version | awk '{print $2}'), $(nbdinfo --version | head -1), $(qemu-img --version | head -1), $(chromium --version 2>/dev/null | head -1), netapp-ontap $(python3 -c 'import netapp_ontap; print(netapp_ontap.__version__)')"
say "$(aws --version 2>&1 | head -1), boto3 $(python3 -c 'import boto3; print(boto3.__version__)'), s3cmd $(s3cmd --version | awk '{print $3}'), $(rclone version | head -1), $(curl --version | head -1 | awk '{print $1, $2}')"
say "$(iperf3 --version | head -1), $(ssh -V 2>&1), $(redis-server --version | awk '{print $1, $2, $3}'), $(git --version)"
say "$(cargo nextest --version | head -1)"
[ "$with_garage" = 1 ] && say "$(garage --version | head -1)"
exit 0
