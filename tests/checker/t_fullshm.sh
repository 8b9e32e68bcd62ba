# A full /dev/shm (a tiny tmpfs over it, in a private mount namespace; issue 13, items 10 and 8).
# The CPU NCCL reserves its segment at init: with no room, init fails with ncclSystemError on
# every rank (it used to SIGBUS, or hang, later). The shim's own segment: a communicator whose
# slot does not fit runs unrecorded and unchecked, and the warning says so; the job completes.
. "$NCG_ROOT/tests/checker/lib.sh"
unshare -m true 2>/dev/null || { echo "no private mount namespace here (needs root / CAP_SYS_ADMIN)"; exit 77; }
# in_tiny_shm SIZE CMD...: CMD with a SIZE tmpfs on /dev/shm; output in $OUT, status in $RC.
in_tiny_shm() {
  local sz=$1; shift
  unshare -m sh -c 'mount -t tmpfs -o size="$0" none /dev/shm && exec "$@"' "$sz" "$@" >"$OUT" 2>&1
  RC=$?
}
OUT=$NCG_TMP/plain
in_tiny_shm 128k timeout -k 5 60 "$LAUNCH" -n 4 -t 30 "$SCEN" healthy 5
expect "$RC" 3 "no room for the NCCL segment: the application's own error"
expect "$(exited 3)" 4 "every rank failed its init"
expect "$(nlines '^scen: rank [0-3]: ncclCommInitRank\(.*\): unhandled system error')" 4 "ncclSystemError at init"
! grep -qiE "signal|timed out" "$OUT" || fail "a rank crashed or hung"

OUT=$NCG_TMP/guarded
in_tiny_shm 80k env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" FAKENCCL_STAGE_BYTES=4096 FAKENCCL_PUT_BYTES=4096 \
  FAKENCCL_P2P_BYTES=4096 timeout -k 5 60 "$LAUNCH" -n 2 -t 30 "$SCEN" steady 1
expect "$RC" 0 "no room for the shim's slots: the job completes"
expect "$(nlines '^ncclguard: cannot reserve [0-9]+ KiB in /dev/shm/ncclguard\.[0-9.]+ for a communicator \(No space left on device\); it and any later one that does not fit run unrecorded and unchecked$')" 2 "one true warning per process"
no_verdict
echo "full /dev/shm ok"
