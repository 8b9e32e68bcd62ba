#!/usr/bin/env bash
# What a newcomer copies from the README and the docs holds: README.md stays within 200 lines;
# every figure in it (a number with a unit: ns, ms, s, min, B/s, %, KiB, GPU-hours, ...) is
# written the same in BENCHMARKS.md, docs/*.md or CONTRIBUTING.md, where its command is named;
# every torchrun command line in README.md, docs/ and its man pages (continuation lines joined)
# uses the underscore spellings (Debian 12's torch 1.13 rejects --nproc-per-node and the like:
# "unrecognized arguments") and passes --redirects 1 --tee 1 (without them it crashes on
# Python 3.11 before starting a worker); "torchrun ... train.py" (elided options) is not a
# command. First proves each check on scratch files that break it.
# Exit 0 pass, 1 fail.
set -u
cd "${NCG_ROOT:-$(dirname "$0")/../..}" || exit 1
MAX_LINES=200
fails=0
bad() { echo "FAIL: $*"; fails=$((fails + 1)); }

# figures FILE: "LINE: FIGURE" for each figure of FILE (numbers with a unit)
figures() {
  grep -noE '[0-9][0-9.,]*(-[0-9][0-9.,]*)? ?(ns|ms|s|min|B/s|%|KiB|MiB|GPU-hours|hours)\b' "$1" |
    sed -E 's/^([0-9]+):/\1: /'
}
# unsourced FILE SOURCES...: the figures of FILE written nowhere in SOURCES
unsourced() {
  local f=$1 l tok
  shift
  figures "$f" | while IFS= read -r l; do
    tok=${l#*: }
    grep -qF -- "$tok" "$@" || echo "$l"
  done
}
# torchrun_lines FILES...: "FILE:LINE: COMMAND" for each torchrun command line (continuations
# joined; the part from "torchrun" on)
torchrun_lines() {
  awk '{ line = $0; n = FNR
         while (line ~ /\\$/ && (getline nxt) > 0) { sub(/\\$/, "", line); line = line " " nxt }
         if (match(line, /(^|[ "`(=])torchrun"?,? +"?(--?[a-z]|[A-Za-z0-9_.\/]+\.py)/)) {
           cmd = substr(line, RSTART); sub(/^[ "`(=]/, "", cmd)
           if (cmd !~ /^torchrun +\.\.\./) print FILENAME ":" n ": " cmd } }' "$@"
}
# bad_torchrun FILES...: the torchrun commands with a dashed option, or without --redirects 1
# --tee 1 (also in a JSON list: "--redirects", "1", "--tee", "1")
bad_torchrun() {
  torchrun_lines "$@" | while IFS= read -r l; do
    cmd=${l#*: }; cmd=${cmd#* }
    if echo "$cmd" | grep -qE '(^|[ "])--[a-z]+-[a-z-]+'; then echo "$l  (dashed option: $(echo "$cmd" | grep -oE -- '--[a-z]+-[a-z-]+' | head -n 1))"
    elif ! echo "$cmd" | tr -d '",' | grep -qE -- '--redirects +1 +--tee +1'; then echo "$l  (no --redirects 1 --tee 1)"
    fi
  done
}

# --- self-test: each check must catch a file that breaks it
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
printf 'costs 12.5 ns and 3 min\n' >"$T/readme.md"
printf 'costs 12.5 ns\n' >"$T/bench.md"
[ "$(unsourced "$T/readme.md" "$T/bench.md")" = "1: 3 min" ] || bad "self-test: a figure written nowhere else is not found (got '$(unsourced "$T/readme.md" "$T/bench.md")')"
cat >"$T/doc.md" <<'EOF'
    LD_PRELOAD=x torchrun --nproc-per-node 8 --redirects 1 --tee 1 train.py
    torchrun --nproc_per_node 8 train.py
    ncclguard-run -- \
        torchrun --nnodes 2 --rdzv-backend c10d --redirects 1 --tee 1 train.py
    CMD ["torchrun", "--nproc_per_node", "8", "train.py"]
    torchrun --nproc_per_node 8 --redirects 1 --tee 1 train.py
    ncclguard-run -- torchrun ... train.py
    Newer torch also takes dashes (`--nproc-per-node`).
    <!-- recipe: torchrun -->
EOF
got=$(bad_torchrun "$T/doc.md" | cut -d: -f2 | tr '\n' ' ')
[ "$got" = "1 2 3 5 " ] || bad "self-test: the torchrun check flags lines '$got', want '1 2 3 5 '"
seq 1 $((MAX_LINES + 1)) >"$T/long.md"
[ "$(wc -l <"$T/long.md")" -gt $MAX_LINES ] || bad "self-test: line count"

# --- the real documents
n=$(wc -l <README.md)
[ "$n" -le $MAX_LINES ] || bad "README.md has $n lines, at most $MAX_LINES"
left=$(unsourced README.md BENCHMARKS.md docs/*.md CONTRIBUTING.md)
[ -z "$left" ] || bad "figures of README.md written nowhere in BENCHMARKS.md, docs/ or CONTRIBUTING.md:
$left"
# (the man pages too, their roff "\-" read as "-")
for m in docs/man/*.[1-8]; do sed 's/\\-/-/g' "$m" >"$T/$(basename "$m")"; done
docs=(README.md CONTRIBUTING.md docs/*.md "$T"/*.[1-8])
bt=$(bad_torchrun "${docs[@]}")
[ -z "$bt" ] || bad "torchrun command lines Debian 12's torch 1.13 rejects or crashes on:
$bt"
nt=$(torchrun_lines "${docs[@]}" | wc -l)
[ "$nt" -ge 3 ] || bad "only $nt torchrun command lines found in README.md and docs/ (the check reads nothing?)"
[ $fails = 0 ] || exit 1
echo "README.md: $n lines; $(figures README.md | wc -l) figures, all sourced; $nt torchrun command lines, all as Debian 12's torch takes them"
