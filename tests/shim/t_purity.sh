#!/usr/bin/env bash
# The pure layers (proto, judge, relay, machine: the checker's and the agent's state machines and
# decisions) use no
# sockets, threads, clock, environment or global configuration: their archives' undefined
# symbols hold none of them (each layer is then linkable into a one-thread simulator and unit
# tests). And no function of a higher layer (net, agent, cli) is declared in a pure layer's
# header. Each check is first run on a sample built to break it, which must fail.
set -u
cd "$NCG_ROOT"
B=$NCG_BUILD
for l in proto judge relay machine net agent; do
  [ -f "$B/lib/libncg_$l.a" ] || { echo "no $B/lib/libncg_$l.a (run make first)"; exit 77; }
done
FORBIDDEN='^(pthread_[a-z_]+|socket|socketpair|connect|accept4?|bind|listen|poll|ppoll|select|epoll_[a-z_]+|send|sendto|sendmsg|recv|recvfrom|recvmsg|getaddrinfo|setsockopt|getsockopt|read|write|open|close|clock_gettime|gettimeofday|time|nanosleep|usleep|sleep|getenv|secure_getenv|ncg_cfg|ncg_now_ns|ncg_log|fprintf|printf|puts)$'
# impure ARCHIVE: the forbidden symbols it needs, one per line
impure() { nm -u "$1" 2>/dev/null | awk '{print $2}' | sort -u | grep -E "$FORBIDDEN"; }
# declared_above HEADERS...: functions the headers declare that a higher layer's archive defines
declared_above() {
  local defs
  defs=$(for l in net agent; do nm --defined-only "$B/lib/libncg_$l.a" 2>/dev/null; done | awk '$2 == "T" {print $3}' | sort -u)
  sed -n 's/^[a-z][a-z0-9_ *]*[ *]\(ncg_[a-z0-9_]*\)(.*/\1/p' "$@" | sort -u | comm -12 - <(echo "$defs")
}
# the checks must be able to fail: a "pure" object that opens a socket, and a header declaring
# a function net/ defines
mkdir -p "$NCG_TMP/bad"
printf '#include <sys/socket.h>\nint ncg_bad_pure(void) { return socket(0, 0, 0); }\n' >"$NCG_TMP/bad/b.c"
${CC:-cc} -c -o "$NCG_TMP/bad/b.o" "$NCG_TMP/bad/b.c" && ar rcs "$NCG_TMP/bad/libbad.a" "$NCG_TMP/bad/b.o"
[ "$(impure "$NCG_TMP/bad/libbad.a")" = socket ] || { echo "FAIL: the purity check does not see socket() in a sample"; exit 1; }
printf 'int ncg_rhost_port(const struct ncg_rhost *h);\n' >"$NCG_TMP/bad/b.h"
[ "$(declared_above "$NCG_TMP/bad/b.h")" = ncg_rhost_port ] || { echo "FAIL: the header check does not see a net/ function in a sample"; exit 1; }
bad=0
for l in proto judge relay machine; do
  s=$(impure "$B/lib/libncg_$l.a")
  [ -z "$s" ] || { echo "FAIL: interpose/$l (pure) needs: $(echo $s)"; bad=1; }
  d=$(declared_above interpose/$l/*.h)
  [ -z "$d" ] || { echo "FAIL: interpose/$l's headers declare functions of a higher layer: $(echo $d)"; bad=1; }
done
[ $bad = 0 ] || exit 1
echo "ok: proto, judge, relay and machine need no socket, thread, clock, environment or configuration; their headers declare no higher layer's function"
