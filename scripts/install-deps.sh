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

say "fio $(fio --version | sed 's/fio-//'), nbdkit $(nbdkit --version | awk '{print $2}'), $(nbdinfo --version | head -1), $(qemu-img --version | head -1), $(chromium --version 2>/dev/null | head -1), netapp-ontap $(python3 -c 'import netapp_ontap; print(netapp_ontap.__version__)')"
say "$(aws --version 2>&1 | head -1), boto3 $(python3 -c 'import boto3; print(boto3.__version__)'), s3cmd $(s3cmd --version | awk '{print $3}'), $(rclone version | head -1), $(curl --version | head -1 | awk '{print $1, $2}')"
say "$(iperf3 --version | head -1), $(ssh -V 2>&1), $(redis-server --version | awk '{print $1, $2, $3}'), $(git --version)"
say "$(cargo nextest --version | head -1)"
[ "$with_garage" = 1 ] && say "$(garage --version | head -1)"
exit 0
