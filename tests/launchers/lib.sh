# Shared by tests/launchers/t_*.sh and accept.sh (sourced): 4-rank jobs of the test apps run
# by the real launchers (mpirun, torchrun, srun) with the shim preloaded as a user does it, and
# what a user checks after them. Built on tests/checker/lib.sh (paths, NCCL mode, assertions).
. "$NCG_ROOT/tests/checker/lib.sh"
RANKSH=$NCG_ROOT/tests/launchers/rank.sh
NCG_CLI=$B/ncclguard
[ -x "$NCG_CLI" ] || { echo "missing $NCG_CLI (run make first)"; exit 77; }
# LABELED=1: the launcher prefixes each line with its rank ("1: ", srun -l); rank R's lines are
# then those with its label. Otherwise a rank's diagnostic is one write(2), contiguous in $OUT.
LABELED=0

# elapsed T0: seconds since T0 (date +%s.%N), one decimal.
elapsed() { awk -v s="$1" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }
# waitfor SECS CMD...: run CMD every 0.1 s until it succeeds (0) or SECS x NCG_SLOW pass (1).
waitfor() {
  local t0 lim=$(($1 * SLOW))
  shift
  t0=$(date +%s)
  until "$@"; do
    [ $(($(date +%s) - t0)) -ge "$lim" ] && return 1
    sleep 0.1
  done
}
# free_port: a TCP port free on the loopback now (the kernel's pick; taken again within a second).
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# job_pids: live processes (launchers, agents, ranks) of this script's jobs: their environment
# names an id file in $NCG_TMP (launched exports it to the launcher; nothing else has it).
job_pids() { grep -lzsF "NCG_ID_FILE=$NCG_TMP/" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; }
no_job_pids() { [ -z "$(job_pids)" ]; }
# no_leftovers: nothing of the job may outlive its launcher (bounded wait for the last exits).
no_leftovers() {
  waitfor 10 no_job_pids && return 0
  local p left=""
  for p in $(job_pids); do left="$left $p:$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"; done
  # shellcheck disable=SC2046
  kill -9 $(job_pids) 2>/dev/null
  fail "processes left running after the launcher ended:$left"
}

# launched NAME CMD...: run a launcher command line as a user does, with the shim preloaded
# into the launcher's environment (dormant there, active in the ranks), reports into
# $REPORTS=$NCG_TMP/NAME.reports, a fresh unique id file ($NCG_ID_FILE, per attempt in
# rank.sh). Output (both streams) in OUT=$NCG_TMP/NAME.out, status in RC, seconds in SECS;
# then checks that nothing of the job is left running.
launched() {
  local name=$1 t0
  shift
  OUT=$NCG_TMP/$name.out REPORTS=$NCG_TMP/$name.reports
  mkdir -p "$REPORTS"
  t0=$(date +%s.%N)
  env LD_PRELOAD="$NCG_PRELOAD" NCCLGUARD_REPORT_DIR="$REPORTS" NCG_ID_FILE="$NCG_TMP/$name.id" \
    timeout -k 5 $((90 * SLOW)) "$@" >"$OUT" 2>&1
  RC=$?
  SECS=$(elapsed "$t0")
  echo "$name: exit $RC after ${SECS}s"
  no_leftovers
}

# lib_exit (at exit): the Slurm daemons stopped (if started), the segments in /dev/shm of this
# script's ranks whose process is gone (a verdict's exit 86 leaves them; rank.sh starts the
# app by its full path: in $NCG_TMP/root for the recipes, $SCEN for `launched`), then the
# script's own cleanup, if any (its function at_exit).
lib_exit() {
  slurm_stop
  "$NCG_CLI" clean --quiet --grace 0 --match "$NCG_TMP/" >/dev/null 2>&1
  "$NCG_CLI" clean --quiet --grace 0 --match "$SCEN" >/dev/null 2>&1
  if declare -F at_exit >/dev/null; then at_exit; fi
}
trap lib_exit EXIT

# --- The recipes of docs/launchers.md, run as written: the fenced block after the line
# "<!-- recipe: NAME -->" in that file.
DOC=$NCG_ROOT/docs/launchers.md
# recipe NAME: prints the block (fails the test when the doc has none by that name).
recipe() {
  local text
  text=$(awk -v mark="<!-- recipe: $1 -->" '$0 == mark { on = 1; next }
    on == 1 && /^```/ { on = 2; next } on == 2 && /^```/ { exit } on == 2 { print }' "$DOC")
  [ -n "$text" ] || fail "docs/launchers.md has no recipe '$1' (a fenced block after <!-- recipe: $1 -->)"
  printf '%s\n' "$text"
}
# RROOT: where the recipes run, laid out as the repository root they are written for: build/
# is the build under test (NCG_BUILD: build-address-undefined in a sanitizer pass), tests/ and
# scripts/ the checkout's.
RROOT=$NCG_TMP/root
mkdir -p "$RROOT" && ln -sfn "$NCG_BUILD" "$RROOT/build" && ln -sfn "$NCG_ROOT/tests" "$RROOT/tests" &&
  ln -sfn "$NCG_ROOT/scripts" "$RROOT/scripts"
# launched_recipe NAME RECIPE [JOB]: a fresh shell in $RROOT runs the recipe $RECIPE_SETUP then
# RECIPE, as written, with TMPDIR=$NCG_TMP/NAME.tmp (where their mktemp -t put the report
# directory, the unique id file and torchrun's logs); JOB (default count) replaces the app's
# argument "count" at the end of the recipe (the healthy job is the same line with healthy).
# The one addition: in a sanitizer build, LD_PRELOAD gets the sanitizer's runtime first
# (NCG_PRELOAD). Output (both streams) in OUT=$NCG_TMP/NAME.out, status in RC, seconds in
# SECS, the job's report directory (if any) in REPORTS; then checks that nothing of the job is left
# running.
RECIPE_SETUP=setup # the recipe run before each one ("" for a recipe that sets its own variables)
launched_recipe() {
  local name=$1 job=${3:-count} t0 script="" tmp=$NCG_TMP/$1.tmp
  [ -z "$RECIPE_SETUP" ] || script="$(recipe "$RECIPE_SETUP")" || exit 1
  [ "$NCG_PRELOAD" = "$NCG_BUILD/libncclguard.so" ] || script="$script
export LD_PRELOAD=\"$NCG_PRELOAD\""
  script="$script
$(recipe "$2" | sed -E "\$s/ count\$/ $job/")" || exit 1
  printf '%s\n' "$script" >"$NCG_TMP/$name.sh"
  OUT=$NCG_TMP/$name.out
  mkdir -p "$tmp"
  t0=$(date +%s.%N)
  (cd "$RROOT" && TMPDIR=$tmp timeout -k 5 $((90 * SLOW)) bash "$NCG_TMP/$name.sh") >"$OUT" 2>&1
  RC=$?
  SECS=$(elapsed "$t0")
  REPORTS=$(find "$tmp" -maxdepth 1 -name 'ncg-reports.*' -type d | head -n 1)
  echo "$name: exit $RC after ${SECS}s ($2 recipe, job $job)"
  no_leftovers
}

# no_ncclguard: a healthy job prints no line naming ncclguard, on either stream.
no_ncclguard() { ! grep -q ncclguard "$OUT" || fail "ncclguard output from a healthy job"; }

# rank_text R: rank R's output lines (all of $OUT unless LABELED).
rank_text() { if [ $LABELED = 1 ]; then sed -nE "s/^ *$1: //p" "$OUT"; else cat "$OUT"; fi; }
# rank_block R: rank R's diagnostic, from its headline to its action line (one write(2)).
rank_block() {
  rank_text "$1" | awk -v r="comm rank $1," '/^ncclguard: VERDICT:/ { buf = "" } /^ncclguard: / { buf = buf $0 "\n" }
    index($0, r) { mine = 1 } /^ncclguard:   action:/ { if (mine) { printf "%s", buf; exit } }'
}

# The count mismatch (tests/checker/scen.c "count"): at slot 100 rank 1 calls AllReduce with 9
# elements, ranks 0, 2 and 3 with 8.
COUNT_HEADLINE='^ncclguard: VERDICT: MISMATCH on comm [0-9a-f]{16} \(4 ranks\): slot 100: AllReduce\(count=9, float32, sum\) on rank 1 vs AllReduce\(count=8, float32, sum\) on ranks 0,2-3$'
# incident_why: what a user checks after the count mismatch, beyond the launcher's status:
# rank 1's full diagnostic (the verdict naming rank 1 and slot 100, the calls with their call
# sites, the stack of its thread, the action and its report) is printed, and the 4 ranks' JSON
# reports are written and merge into one account naming rank 1 (`ncclguard report`). Prints the
# first thing missing and returns 1; returns 0 when all is there.
incident_why() {
  local b n
  b=$(rank_block 1)
  [ -n "$b" ] || { echo "rank 1's diagnostic is not printed (no block from its headline to its action line)"; return 1; }
  echo "$b" | grep -qE "$COUNT_HEADLINE" || { echo "rank 1's headline does not name rank 1 and slot 100"; return 1; }
  echo "$b" | grep -qE '^ncclguard:   slot 100 \(0-based\) differs:$' || { echo "rank 1 printed the short form, not the full block"; return 1; }
  echo "$b" | grep -qE '^ncclguard:     AllReduce\(count=9, float32, sum\) +on rank 1  from allreduce_on\+0x[0-9a-f]+ \(scen\+0x[0-9a-f]+\)' ||
    { echo "rank 1's block lacks its call site"; return 1; }
  echo "$b" | grep -qE '^ncclguard:   this process \(comm rank 1, global rank 1, pid [0-9]+ on ' ||
    { echo "rank 1's block does not say global rank 1 (the launcher's rank)"; return 1; }
  echo "$b" | grep -qE '^ncclguard:   stack of thread [0-9]+ \(issued slot [0-9]+ AllReduce\(count=[89], float32, sum\)\)'"$STACK_HDR" ||
    { echo "rank 1's block has no stack header"; return 1; }
  if [ $tsan = 0 ]; then
    echo "$b" | grep -qE '^ncclguard:     #[0-9]+ main\+0x[0-9a-f]+ \(scen\+0x' || { echo "rank 1's stack is cut short (no frame in main)"; return 1; }
  fi
  echo "$b" | grep -qE "^ncclguard:   action: abort \(exit status 86\); report: $REPORTS/ncclguard-report\.[^ ]+\.json\$" ||
    { echo "rank 1's block has no action line with its report"; return 1; }
  n=$(find "$REPORTS" -name 'ncclguard-report.*.json' | wc -l)
  [ "$n" = 4 ] || { echo "$n of 4 reports written"; return 1; }
  "$NCG_CLI" report "$REPORTS" >"$OUT.report" 2>&1 || { echo "ncclguard report failed"; return 1; }
  for want in '4 reports (one per process), 1 verdict' 'MISMATCH (error) on comm ' ' at slot 100, last agreed slot 99' \
    '  about ranks: 1' '  reports from 4 processes: ranks 0-3 (all 4 ranks)'; do
    grep -qF -- "$want" "$OUT.report" || { echo "ncclguard report lacks '$want'"; return 1; }
  done
}
# check_incident: fail with the first thing incident_why finds missing.
check_incident() {
  local why
  why=$(incident_why) || { [ -f "$OUT.report" ] && sed 's/^/  report| /' "$OUT.report"; fail "$why"; }
}

# --- Slurm: a single-node cluster of this host, all in $NCG_TMP/slurm (own munge socket and
# key, own ports), for `srun`. slurm_start skips the test (77) when it cannot come up;
# slurm_stop (at exit) ends every daemon it started.
SLURM_PIDS=""
# slurm_steps: the slurmstepd processes of this cluster (slurmd's environment names its conf).
slurm_steps() {
  local p c
  for p in /proc/[0-9]*; do
    read -r c 2>/dev/null <"$p/comm" && [ "$c" = slurmstepd ] &&
      grep -qzsF "SLURM_CONF=$SD/slurm.conf" "$p/environ" && echo "${p#/proc/}"
  done
}
no_slurm_steps() { [ -z "$(slurm_steps)" ]; }
slurm_stop() {
  local p
  [ -n "$SLURM_PIDS" ] || return 0
  # A step's slurmstepd lingers after its tasks, reporting to the daemons; once they are gone it
  # retries for minutes: let the steps end first, and SIGKILL any left (SIGTERM is ignored).
  waitfor 10 no_slurm_steps
  # shellcheck disable=SC2086
  kill $SLURM_PIDS 2>/dev/null
  for p in $SLURM_PIDS; do
    waitfor 10 eval "! kill -0 $p 2>/dev/null" || kill -9 "$p" 2>/dev/null
  done
  # shellcheck disable=SC2046
  kill -9 $(slurm_steps) 2>/dev/null
  wait 2>/dev/null
  SLURM_PIDS=""
  waitfor 10 no_slurm_steps || { echo "FAIL: slurmstepd left running: $(slurm_steps | tr '\n' ' ')"; exit 1; }
}
# slurm_skip REASON: the daemons' last log lines, then the reason as the last line (exit 77).
slurm_skip() {
  local f
  for f in "$SD"/*.log "$SD"/*.out; do [ -s "$f" ] && tail -n 5 "$f" | sed "s#^#  $(basename "$f")| #"; done
  slurm_stop
  echo "$1"
  exit 77
}
slurm_node_idle() { [ "$(sinfo -h -n "$SLURM_NODE" -o %T 2>/dev/null)" = idle ]; }
# slurm_start: munged, slurmctld and slurmd in the foreground of background jobs, then waits
# (bounded) until the node is idle. Sets SLURM_CONF (exported) and SLURM_UP_S (seconds taken).
slurm_start() {
  local c t0 tmp=$NCG_TMP/slurm.tmp old_tmpdir=${TMPDIR-}
  for c in munged slurmctld slurmd srun sinfo; do
    command -v $c >/dev/null 2>&1 || { echo "$c not installed (slurm-wlm, munge: scripts/install-deps.sh --launchers)"; exit 77; }
  done
  # munged wants its socket's directories searchable by all (the scratch dir is 0700; the
  # recipe's own directory it makes so)
  mkdir -p "$tmp" && chmod 711 "$NCG_TMP" "$tmp"
  trap 'exit 143' TERM INT
  t0=$(date +%s.%N)
  # The recipe "slurm", as written, in this shell: its daemons are this shell's background
  # jobs, SLURM_CONF its export, DIR and HOST its variables; mktemp -t puts DIR in $tmp.
  export TMPDIR=$tmp
  eval "$(recipe slurm)" >"$NCG_TMP/slurm.recipe.out" 2>&1
  if [ -n "$old_tmpdir" ]; then TMPDIR=$old_tmpdir; else unset TMPDIR; fi
  SLURM_PIDS=$(jobs -p | tr '\n' ' ')
  SD=${DIR:-$tmp} SLURM_NODE=${HOST:-$(hostname -s)}
  [ -n "$SLURM_PIDS" ] || slurm_skip "the recipe started no daemon ($(tail -n 3 "$NCG_TMP/slurm.recipe.out"))"
  # munged is installed: a munged that does not start is the recipe's fault (as root without
  # its seed, log and pid files named it refuses Debian's /var/lib/munge): a failure, not a skip
  waitfor 10 test -S "$SD/munge.sock" || { sed 's/^/  munged| /' "$SD/munged.out" "$SD/munged.log" 2>/dev/null | tail -n 5
    fail "the recipe's munged did not start (no socket $SD/munge.sock)"; }
  [ "${SLURM_CONF:-}" = "$SD/slurm.conf" ] || fail "the recipe did not export SLURM_CONF=\$DIR/slurm.conf"
  # the recipe waits up to 60 s; a slower machine (NCG_SLOW) gets the rest here
  waitfor 60 slurm_node_idle || slurm_skip "slurm did not come up: node $SLURM_NODE not idle after $((60 * SLOW)) s ($(sinfo -h -o %T 2>&1 | head -n 1))"
  SLURM_UP_S=$(elapsed "$t0")
  echo "slurm: node $SLURM_NODE idle after ${SLURM_UP_S}s"
}
