#!/usr/bin/env bash
# `ncclguard clean`: segments of processes that are gone (and unusable files named like ours
# whose pid is gone) are removed; live processes' segments are kept; --dry-run removes nothing;
# --grace keeps recently active ones. status/watch clean implicitly only old, unrelated ones.
. "$(dirname "$0")/lib.sh"
need "$NCG" "$FAKESEG"
A=$NCG_TMP/a; mkdir -p "$A"
start_fakeseg a --dir "$A" --ranks 3 --counts 7 --dead 1 --exited 2 --junk --comm 00000000000000cc
P=("${FS_PIDS[@]}")
seg() { echo "$A/ncclguard.$(id -u).$1"; }
[ -f "$(seg ${P[0]})" ] && [ -f "$(seg ${P[1]})" ] && [ -f "$(seg ${P[2]})" ] || fail "segments not created"
# implicit cleaning by status keeps the dead rank: its comm still has a live member here
"$NCG" status --dir "$A" >/dev/null
[ -f "$(seg ${P[1]})" ] || fail "status removed a dead rank's segment that explains a live comm"
# fresh activity: the default grace (5 s) keeps them; --grace 0 does not
"$NCG" clean --dir "$A" --dry-run --grace 0 >"$NCG_TMP/o1" || fail "dry run exit $?"
cat "$NCG_TMP/o1"
contains "$NCG_TMP/o1" "would remove $(seg ${P[1]}) (pid ${P[1]} pid gone)" \
  "would remove $(seg ${P[2]}) (pid ${P[2]} exited)" "would remove $A/ncclguard.$(id -u).999999999"
lacks "$NCG_TMP/o1" "$(seg ${P[0]})"
[ -f "$(seg ${P[1]})" ] || fail "--dry-run removed a file"
"$NCG" clean --dir "$A" --grace 1000 >"$NCG_TMP/o2"
lacks "$NCG_TMP/o2" "$(seg ${P[1]})"
# unusable files carry no activity time: they go as soon as the pid in their name is gone
contains "$NCG_TMP/o2" "removed $A/ncclguard.$(id -u).999999999"
"$NCG" clean --dir "$A" --grace 0 >"$NCG_TMP/o3" || fail "clean exit $?"
cat "$NCG_TMP/o3"
contains "$NCG_TMP/o3" "removed 2 segments, 1 kept"
[ -f "$(seg ${P[0]})" ] || fail "live rank's segment removed"
[ ! -e "$(seg ${P[1]})" ] && [ ! -e "$(seg ${P[2]})" ] && [ ! -e "$A/ncclguard.$(id -u).999999999" ] || fail "dead segments left"
# a live process is never removed, whatever the grace
"$NCG" clean --dir "$A" --grace 0 >"$NCG_TMP/o4"
contains "$NCG_TMP/o4" "removed 0 segments, 1 kept"
# kill the last rank: now it goes too
kill -KILL "${P[0]}"
wait_until 10 sh -c "! grep -q '^State:.*[RSD]' /proc/${P[0]}/status 2>/dev/null"
"$NCG" clean --dir "$A" --grace 0 >"$NCG_TMP/o5"
contains "$NCG_TMP/o5" "removed $(seg ${P[0]})"
echo ok
