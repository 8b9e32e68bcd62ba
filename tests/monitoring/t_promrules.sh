# The alerting rules shipped for Prometheus (scripts/prometheus/ncclguard-rules.yml): valid, and
# each alert fires from the series an incident leaves in /metrics and only then
# (tests/monitoring/rules_test.yml: a healthy job raises none; MISMATCH, STUCK verdict and
# warning, a dead rank, a lag, the throughput floor with its 5 minutes and active ranks only).
set -u
command -v promtool >/dev/null || { echo "promtool not installed (scripts/install-deps.sh --prometheus)"; exit 77; }
cd "$NCG_ROOT" || exit 1
promtool check rules scripts/prometheus/ncclguard-rules.yml || { echo "FAIL: promtool check rules"; exit 1; }
(cd tests/monitoring && promtool test rules rules_test.yml) || { echo "FAIL: promtool test rules"; exit 1; }
