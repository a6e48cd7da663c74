# shellcheck shell=bash
# Shared helpers of the NFS benchmarks (nfs-ganesha.sh, nfs-readdir.sh). Source it after
# setting QOSLAB; do not run it.
#
# Provides: a temp work dir $work and an EXIT trap that stops every process in $pids and
# removes it; free_port; start_rpcbind (only if none runs: ganesha exits without it);
# start_pair EXPORT_LINE QOSLAB_EXPORT: nfs-ganesha 4.3 (VFS FSAL) with one EXPORT block
# and `qoslab nfs serve` with one --export, both on free ports, waiting until ganesha
# serves its mount path and qoslab printed its port; sets gport, gmnt, gpid, qport, qpid.

work=$(mktemp -d /tmp/qoslab-nfsbench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

start_rpcbind() {
  if ! pgrep -x rpcbind >/dev/null; then
    rpcbind -f & pids+=($!)
    sleep 0.5
  fi
}

# start_pair 'EXPORT { ... }' '/q=DIR[,opts]' GANESHA_MOUNT_PATH
start_pair() {
  gport=$(free_port); gmnt=$(free_port)
  cat > "$work/ganesha.conf" <<CONF
NFS_CORE_PARAM { NFS_Port = $gport; MNT_Port = $gmnt; Enable_NLM = false; Enable_RQUOTA = false; Protocols = 3; }
NFSV4 { Graceless = true; }
$1
LOG { Default_Log_Level = EVENT; }
CONF
  ganesha.nfsd -F -f "$work/ganesha.conf" -L "$work/ganesha.log" -p "$work/ganesha.pid" -N NIV_EVENT & gpid=$!; pids+=($gpid)
  "$QOSLAB" nfs serve --listen 127.0.0.1:0 --export "$2" 2> "$work/qoslab.log" & qpid=$!; pids+=($qpid)
  qport=""
  for _ in $(seq 100); do
    qport=$(sed -n 's/.*serving NFSv3 on [^:]*:\([0-9]*\).*/\1/p' "$work/qoslab.log")
    [ -n "$qport" ] && nfs-ls "nfs://127.0.0.1$3?nfsport=$gport&mountport=$gmnt" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  cat "$work/qoslab.log" "$work/ganesha.log" >&2
  exit 1
}
