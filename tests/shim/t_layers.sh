# The layers of interpose/ include only downwards (interpose/interpose.mk): common <- shim <-
# inspect <- proto <- judge <- relay <- machine <- net <- agent <- cli. A header of a higher layer included
# by a lower one (an include cycle between layers) fails, naming the file and the header. (The
# build also compiles each layer with the include paths at or below it only.)
set -u
cd "$NCG_ROOT"
level() {
  case $1 in common) echo 0 ;; shim) echo 1 ;; inspect) echo 2 ;; proto) echo 3 ;; judge) echo 4 ;;
    relay) echo 5 ;; machine) echo 6 ;; net) echo 7 ;; agent) echo 8 ;; cli) echo 9 ;; *) echo 99 ;; esac
}
bad=0 n=0
for f in interpose/*/*.[ch] interpose/*/*.def; do
  layer=${f#interpose/}; layer=${layer%%/*}
  mine=$(level "$layer")
  [ "$mine" = 99 ] && { echo "FAIL: $f is in no layer"; bad=1; continue; }
  for h in $(sed -n 's/^#include "\([^"/]*\)".*/\1/p' "$f"); do
    n=$((n+1))
    where=$(ls interpose/*/"$h" 2>/dev/null | head -n 1)
    [ -n "$where" ] || continue # include/ncclguard/*.h or a generated file
    hl=${where#interpose/}; hl=${hl%%/*}
    if [ "$(level "$hl")" -gt "$mine" ]; then
      echo "FAIL: $f ($layer) includes $h ($hl), a higher layer"; bad=1
    elif [ "$(level "$hl")" = "$mine" ] && [ "$hl" != "$layer" ]; then
      echo "FAIL: $f ($layer) includes $h ($hl), a sibling layer"; bad=1
    fi
  done
done
# No .c file compiled by an #include from another (private *_int.h headers share state).
for f in $(grep -l '^#include "[^"]*\.c"' interpose/*/*.[ch] 2>/dev/null); do
  echo "FAIL: $f includes a .c file: $(grep -h '^#include "[^"]*\.c"' "$f" | head -n 1)"; bad=1
done
# Every header compiles on its own, with the include paths of its layer only.
sees() {
  case $1 in common) echo common ;; shim) echo common shim ;; inspect) echo common shim inspect ;;
    proto) echo common shim inspect proto ;; judge) echo common shim inspect proto judge ;;
    relay) echo common shim inspect proto judge relay ;;
    machine) echo common shim inspect proto judge relay machine ;;
    net) echo common shim inspect proto judge relay machine net ;;
    agent) echo common shim inspect proto judge relay machine net agent ;;
    *) echo common shim inspect proto judge relay machine net agent cli ;; esac
}
nh=0
for h in interpose/*/*.h; do
  layer=${h#interpose/}; layer=${layer%%/*}
  inc=(-Iinclude); for l in $(sees "$layer"); do inc+=("-Iinterpose/$l"); done
  nh=$((nh+1))
  if ! echo "#include \"${h##*/}\"" | ${CC:-cc} -std=gnu11 -fsyntax-only "${inc[@]}" -x c - 2>"$NCG_TMP/h.err"; then
    echo "FAIL: $h does not compile on its own with its layer's include paths:"; head -n 3 "$NCG_TMP/h.err"; bad=1
  fi
done
[ $bad = 0 ] || exit 1
echo "ok: $n includes, none upwards or sideways, no .c included; $nh headers compile alone"
