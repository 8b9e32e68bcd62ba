# Sourced by tests/python/t_*.sh: the CPython builds to test with, the CPU NCCL, helpers.
set -u
B=$NCG_BUILD
LAUNCH=$B/tests/ncg-launch
export LD_LIBRARY_PATH=$B/fakenccl${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PYTHONDONTWRITEBYTECODE=1
for f in "$LAUNCH" "$B/libncclguard.so" "$B/fakenccl/libnccl.so.2"; do
  [ -e "$f" ] || { echo "missing $f (run make first)"; exit 77; }
done
SLOW=${NCG_SLOW:-1} # time bounds scale (tests/run.sh: 3 under ThreadSanitizer)
fail() { echo "FAIL: $*"; [ -n "${OUT:-}" ] && [ -f "$OUT" ] && sed 's/^/  | /' "$OUT" | tail -n 60; exit 1; }
expect() { [ "$1" = "$2" ] || fail "$3: got '$1', want '$2'"; }
# pythons: "label path" lines: Debian's python3 (libpython inside the executable), a pyenv 3.11
# with a shared libpython3.11.so, and any other pyenv 3.9+ shared build found (NCG_PYTHONS
# overrides: space-separated paths).
pythons() {
  if [ -n "${NCG_PYTHONS:-}" ]; then for p in $NCG_PYTHONS; do echo "$(basename "$p") $p"; done; return; fi
  [ -x /usr/bin/python3 ] && echo "debian /usr/bin/python3"
  for p in /root/.pyenv/versions/3.*/bin/python3; do
    [ -x "$p" ] || continue
    v=$("$p" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || continue
    case $v in 3.[0-8]) continue ;; esac
    ldd "$p" 2>/dev/null | grep -q "libpython$v\.so" || continue
    echo "pyenv-$v $p"
  done
}
# has_pyenv311: whether the required shared 3.11 is among them.
has_pyenv311() { pythons | grep -q '^pyenv-3\.11 '; }
# block R FILE: rank R's diagnostic (one write(2) per rank: its lines are contiguous).
block() { awk -v r="comm rank $1," 'index($0, r) { on = 1 } on { print } on && /^ncclguard:   action:/ { exit }' "$2"; }
# build_ext PY DIR: build the C extension tests/python/ncgext.c for interpreter PY into DIR
# (its own headers and suffix; linked against the CPU libnccl, never against libpython).
# Returns 1 when PY has no headers.
build_ext() {
  local inc suf
  inc=$("$1" -c 'import sysconfig; print(sysconfig.get_paths()["include"])') || return 1
  suf=$("$1" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))') || return 1
  [ -f "$inc/Python.h" ] || return 1
  mkdir -p "$2"
  ${CC:-cc} -O1 -g -shared -fPIC -std=gnu11 -Wall -Werror -I"$inc" -I"$NCG_ROOT/include" \
    -o "$2/ncgext$suf" "$NCG_ROOT/tests/python/ncgext.c" -L"$B/fakenccl" -l:libnccl.so.2
}
