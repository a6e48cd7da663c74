#!/usr/bin/env bash
# Install the external programs qoslab's tests and benchmarks drive: fio (with the nbd
# engine), nbdkit, libnbd's nbdinfo/nbdcopy/nbdfuse and Python bindings (strict-mode
# tests), qemu-img/qemu-storage-daemon, curl (seed 000's commands, SigV4), headless Chromium
# (the report test renders HTML reports and screenshots them), NetApp's own ONTAP client
# (netapp-ontap from PyPI, pinned) that the ONTAP-compatibility test drives, the S3 clients
# the S3 endpoint is tested with (s3cmd, rclone, awscli and boto3), and for tenant sweeps:
# fuse3, e2fsprogs/xfsprogs, git, tar and redis-server (not started as a service).
# Idempotent: installs only what is missing. Needs root (apt-get).
#
# --garage also installs Garage (crates.io, pinned), the S3 object store the S3 benchmark is
# checked against by bench/s3-garage.sh. Not for CI: it compiles for ~11.5 CPU-minutes
# (8 min wall here; docs/BENCHMARKS.md, "Garage's install"), most of a CI run; no test needs it.
set -euo pipefail
with_garage=0
for arg in "$@"; do
  case "$arg" in
    --garage) with_garage=1 ;;
    -h|--help) sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "install-deps: unknown argument $arg (known: --garage)" >&2; exit 2 ;;
  esac
done
declare -A pkg_of=(
  [fio]=fio
  [nbdkit]=nbdkit
  [nbdinfo]=libnbd-bin
  [nbdcopy]=libnbd-bin
  [qemu-img]=qemu-utils
  [qemu-storage-daemon]=qemu-utils
  [python3]=python3
  [chromium]=chromium
  [s3cmd]=s3cmd
  [rclone]=rclone
  [curl]=curl
  [nbdsh]=python3-libnbd
  # tenants (seed 004): volumes mounted as file systems, and the applications on them
  [nbdfuse]=libnbd-bin
  [fusermount3]=fuse3
  [losetup]=mount
  [mkfs.ext4]=e2fsprogs
  [mkfs.xfs]=xfsprogs
  [git]=git
  [tar]=tar
  [redis-server]=redis-server
  [redis-cli]=redis-tools
)
missing=()
for cmd in "${!pkg_of[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${pkg_of[$cmd]}")
done
if [ ${#missing[@]} -gt 0 ]; then
  mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
  echo "install-deps: installing ${missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# awscli and boto3 come from PyPI for whichever python3 is first on PATH (Debian's
# python3-boto3 only serves /usr/bin/python3, and its awscli is v2, a different program).
if ! python3 -c 'import boto3' >/dev/null 2>&1 || ! command -v aws >/dev/null 2>&1; then
  echo "install-deps: installing awscli and boto3 from PyPI" >&2
  python3 -m pip install --quiet awscli boto3 2>/dev/null \
    || python3 -m pip install --quiet --break-system-packages awscli boto3
fi
# libnbd's Python module is Debian's, for Debian's python3 (nbdsh may be present while
# another python3 comes first on PATH).
if ! /usr/bin/python3 -c "import nbd" 2>/dev/null; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-libnbd >/dev/null
fi
NETAPP_ONTAP_VERSION=9.19.1.0
if ! python3 -c "import netapp_ontap, sys; sys.exit(netapp_ontap.__version__ != '$NETAPP_ONTAP_VERSION')" 2>/dev/null; then
  echo "install-deps: pip installing netapp-ontap==$NETAPP_ONTAP_VERSION" >&2
  python3 -m pip install --quiet --disable-pip-version-check "netapp-ontap==$NETAPP_ONTAP_VERSION" 2>/dev/null \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "netapp-ontap==$NETAPP_ONTAP_VERSION"
fi
if ! fio --enghelp 2>/dev/null | grep -qw nbd; then
  echo "install-deps: this fio ($(fio --version)) lacks the nbd ioengine" >&2
  exit 1
fi
echo "install-deps: fio $(fio --version | sed 's/fio-//'), nbdkit $(nbdkit --version | awk '{print $2}'), $(nbdinfo --version | head -1), $(qemu-img --version | head -1), $(chromium --version 2>/dev/null | head -1), netapp-ontap $(python3 -c 'import netapp_ontap; print(netapp_ontap.__version__)')" >&2
echo "install-deps: $(aws --version 2>&1 | head -1), boto3 $(python3 -c 'import boto3; print(boto3.__version__)'), s3cmd $(s3cmd --version | awk '{print $3}'), $(rclone version | head -1), $(curl --version | head -1 | awk '{print $1, $2}')" >&2

# System suites (crates/hosts, crates/suites) and their namespace test hosts (crates/testbed):
# iperf3, OpenSSH client and server, iproute2 (ip netns, veth, bridge, tc htb), util-linux
# (losetup, wipefs, setsid), e2fsprogs (mkfs.ext4 for the refused-device test), procps (pgrep).
declare -A sys_pkg_of=(
  [iperf3]=iperf3
  [ssh]=openssh-client
  [ssh-keygen]=openssh-client
  [/usr/sbin/sshd]=openssh-server
  [ip]=iproute2
  [tc]=iproute2
  [losetup]=util-linux
  [wipefs]=util-linux
  [setsid]=util-linux
  [mkfs.ext4]=e2fsprogs
  [pgrep]=procps
  [timeout]=coreutils
  [sha256sum]=coreutils
)
sys_missing=()
for cmd in "${!sys_pkg_of[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || [ -x "$cmd" ] || sys_missing+=("${sys_pkg_of[$cmd]}")
done
if [ ${#sys_missing[@]} -gt 0 ]; then
  mapfile -t sys_missing < <(printf '%s\n' "${sys_missing[@]}" | sort -u)
  echo "install-deps: installing ${sys_missing[*]}" >&2
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  # The tests run their own sshd per namespace; a system sshd, if the package starts one,
  # listens in the root namespace and is not used.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${sys_missing[@]}" >/dev/null
fi
echo "install-deps: $(iperf3 --version | head -1), $(ssh -V 2>&1)" >&2

# Garage (opt-in, above): `cargo install` from crates.io, the version pinned and its lock file
# used; the time it took is printed.
GARAGE_VERSION=2.5.0
if [ "$with_garage" = 1 ]; then
  command -v cargo >/dev/null 2>&1 || export PATH="$HOME/.cargo/bin:$PATH"
  if ! garage --version 2>/dev/null | grep -q "cargo:$GARAGE_VERSION "; then
    echo "install-deps: cargo install garage --locked --version $GARAGE_VERSION (~11.5 CPU-minutes)" >&2
    start=$(date +%s)
    cargo install --quiet --locked garage --version "$GARAGE_VERSION"
    echo "install-deps: garage built and installed in $(( $(date +%s) - start )) s (load: $(uptime | sed 's/.*load average: //'))" >&2
  fi
  echo "install-deps: $(garage --version | head -1)" >&2
fi
