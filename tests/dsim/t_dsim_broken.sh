#!/usr/bin/env bash
# The simulator can fail: the relay built with one rule broken (NCG_SIM_BREAK_<RULE>, one
# #ifdef each in interpose/relay/; build/tests/ncg-dsim-break-<rule>, tests/dsim/dsim.mk) is
# caught within the first 300 seeds, and the intact build passes that seed.
set -u
fail=0
for b in release count release1; do
  sim=$NCG_BUILD/tests/ncg-dsim-break-$b
  [ -x "$sim" ] || { echo "no $sim"; exit 1; }
  first=""
  for s in $(seq 1 300); do
    if ! "$sim" --seed "$s" >"$NCG_TMP/$b.log" 2>&1; then first=$s; break; fi
  done
  if [ -z "$first" ]; then
    echo "broken rule '$b' not found in 300 seeds"; fail=1
  else
    echo "broken rule '$b': found at seed $first: $(grep -m1 'invariant violated' "$NCG_TMP/$b.log")"
    "$NCG_BUILD/tests/ncg-dsim" --seed "$first" >/dev/null 2>&1 ||
      { echo "the intact build fails seed $first too"; fail=1; }
  fi
done
exit $fail
