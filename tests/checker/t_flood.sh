# A connection flood on the checker inside rank 0 (issue 13, item 3), under `ulimit -n 256`:
# 1000 silent connections held open while the job runs. The checker caps connections that have
# not presented the token, never takes the application's last descriptors (a margin below
# RLIMIT_NOFILE), and backs off instead of spinning on EMFILE: rank 0 can still open its files,
# the checker thread stays cheap, and the job completes with no verdict. (tests/checker/flood.sh)
. "$NCG_ROOT/tests/checker/lib.sh"
. "$NCG_ROOT/tests/checker/flood.sh"
flood_run 4
flood_check
echo "flood ok (checker cpu ${CPU}s)"
