# A connection flood on the relay tree's root (issue 23), as t_flood.sh on the flat checker:
# NCCLGUARD_TREE=on, 8 ranks in 2 "nodes" of 4, rank 0's checker thread the tree's root (its
# relay host's TCP listener is the port in the id's tail), under `ulimit -n 256`; 1000 silent
# connections held open while the job runs (tests/checker/flood.sh). The relay's listener
# behaves like the checker's: it never takes the application's last descriptors (a margin below
# RLIMIT_NOFILE), backs off instead of spinning on EMFILE and says so once; the job completes
# with no verdict.
. "$NCG_ROOT/tests/checker/lib.sh"
. "$NCG_ROOT/tests/checker/flood.sh"
export NCCLGUARD_TREE=on NCG_LAUNCH_PER_NODE=4
BANNER='^ncclguard: checking through a relay tree: 2 nodes of 4 ranks'
flood_run 8
grep '^ncclguard:' "$OUT" | grep -v "$BANNER" | sort | uniq -c
flood_check
expect "$(nlines "$BANNER")" 1 "the relay tree checks the job"
expect "$(nlines '^ncclguard: near this process.s file descriptor limit')" 1 "one line on the descriptor limit"
echo "relay flood ok (checker cpu ${CPU}s)"
