# How a rank left is named, never guessed (issue 13, item 8): ranks ended by ncclguard's own
# abort (a verdict on a split subgroup) are not "died" for the peers they leave behind on the
# world comm, in zero-config (the checker host's SHUTDOWN says so) and through a standalone
# checker (their GOODBYE says so); a rank that calls ncclCommAbort is named as such, also right
# after its first call.
. "$NCG_ROOT/tests/checker/lib.sh"
# every rank's full block is checked (the default prints it on two ranks)
export NCCLGUARD_DIAG=full
SCEN_SPLIT_WORLD=1 guarded "$NCG_TMP/out" "$LAUNCH" -n 4 -t 60 "$SCEN" split
expect "$(exited 86)" 4 "every rank ends (the even half by the verdict, the odd half after it)"
expect "$(nlines '^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]+ \(2 ranks\)')" 2 "the subgroup's verdict"
expect "$(nlines 'RANK DIED|died')" 0 "nobody called dead"
# (the checker host stays until the exit release, so its checker names the ranks the verdict
# ended, itself among them; a host that left first is named as such by the clients)
expect "$(nlines "^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): (ranks 0,2 were ended by ncclguard's abort while ranks? [0-9,-]+ issued calls they|rank [02] was ended by ncclguard's abort while ranks? [0-9,-]+ issued calls it|rank holding the checker \(global rank 0\) (and the ranks that left before it )?was ended by ncclguard's abort while ranks? [0-9,-]+ issued calls (it|they)) will never match\$")" 2 "the odd half: the even half was ended by the verdict"

guarded "$NCG_TMP/out2" "$LAUNCH" -n 4 -t 60 "$SCEN" abort
expect "$(exited 86)" 4 "ncclCommAbort: the others end"
expect "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): rank 1 called ncclCommAbort while ranks? [0-9,-]+ issued calls it will never match$')" 4 "ncclCommAbort named"
expect "$(nlines '^ncclguard:   called ncclCommAbort after 100 calls; others issued up to 101$')" 4 "detail"
# ncclCommAbort after the first call, before the process's link to the checker is up or any
# REPORT carried the comm: the GOODBYE waits for the link and a first REPORT introduces the
# comm (it used to be dropped, and the others waited forever: half the runs). Three runs.
for k in 1 2 3; do
  guarded "$NCG_TMP/early$k" "$LAUNCH" -n 4 -t 30 "$SCEN" abort 2
  expect "$(exited 86)" 4 "early ncclCommAbort ($k): the others end"
  expect "$(nlines '^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): rank 1 called ncclCommAbort while ranks? [0-9,-]+ issued calls it will never match$')" 4 "early ncclCommAbort ($k) named"
done

CLI=$B/ncclguard
[ -x "$CLI" ] || { echo "ncclguard CLI not built: NCCLGUARD_COORD part skipped"; exit 0; }
"$CLI" coord --listen 127.0.0.1:0 >"$NCG_TMP/coord.log" 2>&1 &
CP=$!
trap 'kill $CP 2>/dev/null' EXIT
for _ in $(seq 50); do grep -q 'listening on' "$NCG_TMP/coord.log" && break; sleep 0.1; done
PORT=$(grep -oE 'listening on [^ ]+' "$NCG_TMP/coord.log" | sed 's/.*://')
[ -n "$PORT" ] || fail "coordinator did not start: $(cat "$NCG_TMP/coord.log")"
NCCLGUARD_COORD=127.0.0.1:$PORT SCEN_SPLIT_WORLD=1 guarded "$NCG_TMP/out3" "$LAUNCH" -n 4 -t 60 "$SCEN" split
expect "$(exited 86)" 4 "COORD: every rank ends"
expect "$(nlines 'RANK DIED|died')" 0 "COORD: nobody called dead"
expect "$(nlines "^ncclguard: VERDICT: RANK EXITED on comm [0-9a-f]+ \(4 ranks\): (ranks 0,2 were ended by ncclguard's abort while ranks? [0-9,-]+ issued calls they|rank [02] was ended by ncclguard's abort while ranks? [0-9,-]+ issued calls it) will never match\$")" 2 "COORD: the even half was ended by the verdict"
# (the verdict names the even ranks whose goodbye reached the checker first: one or both)
echo "exited ok"
