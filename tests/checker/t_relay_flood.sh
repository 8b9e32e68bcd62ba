# A connection flood on the relay tree's root (issue 23), as t_flood.sh on the flat checker:
# NCCLGUARD_TREE=on, 8 ranks in 2 "nodes" of 4, rank 0's checker thread the tree's root (its
# relay host's TCP listener is the port in the id's tail), under `ulimit -n 256`; 1000 silent
# connections held open while the job runs (tests/checker/flood.sh). The root caps connections
# that have said no HELLO (the oldest dropped past 64), never takes the application's last
# descriptors (a margin below RLIMIT_NOFILE) and backs off instead of spinning on EMFILE; the job
# completes with no verdict, and nothing is printed on the job's stderr.
. "$NCG_ROOT/tests/checker/lib.sh"
. "$NCG_ROOT/tests/checker/flood.sh"
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4
BANNER='^ncclguard: checking through a relay tree: 2 nodes of 4 ranks'
flood_run 8
grep '^ncclguard:' "$OUT" | grep -v "$BANNER" | sort | uniq -c
flood_check
expect "$(nlines "$BANNER")" 1 "the relay tree checks the job"
expect "$(grep -v "$BANNER" "$OUT" | grep -c '^ncclguard:')" 0 "nothing else on stderr"
echo "relay flood ok (checker cpu ${CPU}s)"
