# The layers of interpose/ include only downwards: common (config, log, hash) <- shim (the
# in-process recorder) <- inspect (stacks, symbols) <- checker (client, coordinator, wire,
# verdicts, diagnostics, actions) <- cli (the command). A header of a higher layer included
# by a lower one (an include cycle between layers) fails, naming the file and the header.
set -u
cd "$NCG_ROOT"
level() { case $1 in common) echo 0 ;; shim) echo 1 ;; inspect) echo 2 ;; checker) echo 3 ;; cli) echo 4 ;; *) echo 9 ;; esac; }
bad=0 n=0
for f in interpose/*/*.[ch] interpose/*/*.def; do
  layer=${f#interpose/}; layer=${layer%%/*}
  mine=$(level "$layer")
  [ "$mine" = 9 ] && { echo "FAIL: $f is in no layer"; bad=1; continue; }
  for h in $(sed -n 's/^#include "\([^"/]*\)".*/\1/p' "$f"); do
    n=$((n+1))
    where=$(ls interpose/*/"$h" 2>/dev/null | head -n 1)
    [ -n "$where" ] || continue # include/ncclguard/*.h or a generated file
    hl=${where#interpose/}; hl=${hl%%/*}
    if [ "$(level "$hl")" -gt "$mine" ]; then
      echo "FAIL: $f ($layer) includes $h ($hl), a higher layer"; bad=1
    fi
  done
done
[ $bad = 0 ] || exit 1
echo "ok: $n includes, none upwards"
