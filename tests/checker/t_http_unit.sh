# The status endpoint's pure parts and server state machine (tests/checker/http_unit.c), and
# the request parser's fuzz driver (tests/checker/fuzz_http.c).
set -u
B=$NCG_BUILD/tests/checker
[ -x "$B/http_unit" ] && [ -x "$B/fuzz_http" ] || { echo "http unit tests not built"; exit 77; }
"$B/http_unit" || exit 1
"$B/fuzz_http" 200000 || exit 1
