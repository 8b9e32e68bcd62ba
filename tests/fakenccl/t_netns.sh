# Ranks in different network namespaces still form a communicator (the fake talks through
# /dev/shm, not sockets). Skipped where unshare -n is not permitted.
. "$NCG_ROOT/tests/fakenccl/lib.sh"
need "$FN_T/comms"
command -v unshare >/dev/null && unshare -n true 2>/dev/null || { echo "unshare -n not permitted here"; exit 77; }
launch -n 3 -t 120 -- sh -c 'if [ "$RANK" = 1 ]; then exec unshare -n "$0"; else exec "$0"; fi' "$FN_T/comms"
[ $rc -eq 0 ] || fail "comms across network namespaces: exit $rc: $out"
echo "ok"
