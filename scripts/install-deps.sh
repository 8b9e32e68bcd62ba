#!/usr/bin/env bash
# Installs ncclguard's build and test dependencies from Debian's packages when missing.
# --check-or-install (used by make): silent when everything is present.
# --launchers: also the real launchers tests/launchers runs (Debian's openmpi-bin, libopenmpi-dev,
# python3-torch, slurm-wlm, munge; about a minute on a fresh machine): CI calls it this way;
# make does not (a plain build needs none of them; without them those tests skip).
# --prometheus: also Debian's Prometheus server and promtool, for tests/monitoring (the shipped
# alerting rules, tested with promtool and against a real server); CI calls it this way too.
set -u
launchers=0 prom=0
for a in "$@"; do
  case $a in
    --launchers) launchers=1 ;;
    --prometheus) prom=1 ;;
    --check-or-install) ;;
    *) echo "usage: scripts/install-deps.sh [--check-or-install] [--launchers] [--prometheus]" >&2; exit 2 ;;
  esac
done
need=()
have_hdr() { printf '#include <%s>\n' "$1" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
command -v cc >/dev/null 2>&1 || need+=(gcc)
command -v make >/dev/null 2>&1 || need+=(make)
have_hdr ck_pr.h || need+=(libck-dev)
have_hdr libunwind.h || need+=(libunwind-dev)
command -v python3 >/dev/null 2>&1 || need+=(python3)
# Python's headers: the tests build a C extension linked against libnccl (tests/python/ncgext.c).
ls /usr/include/python3*/Python.h >/dev/null 2>&1 || need+=(python3-dev)
command -v clang >/dev/null 2>&1 || need+=(clang)
command -v clang-format >/dev/null 2>&1 || need+=(clang-format)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
# Optional at run time (file:line in call sites, loaded with dlopen); installed for the tests.
ldconfig -p 2>/dev/null | grep -q 'libdw\.so\.1 ' || need+=(libdw1)
# The launchers, by package (installed: dpkg's status "ii"; about 10 ms each). Their recommends
# (libtorch-dev, build-essential, pybind11-dev, ninja-build, coarrays) are not needed to run them.
lneed=()
if [ $launchers = 1 ]; then
  for p in openmpi-bin libopenmpi-dev python3-torch slurm-wlm munge; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || lneed+=("$p")
  done
fi
if [ $prom = 1 ]; then
  for p in prometheus curl; do
    dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null | grep -q '^ii' || lneed+=("$p")
  done
fi
[ ${#need[@]} -eq 0 ] && [ ${#lneed[@]} -eq 0 ] && exit 0
export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -o Acquire::Retries=3 -o DPkg::Lock::Timeout=300)
[ "$(id -u)" -ne 0 ] && apt=(sudo "${apt[@]}")
"${apt[@]}" update -qq >/dev/null || { echo "ncclguard: apt-get update failed" >&2; exit 1; }
if [ ${#need[@]} -gt 0 ]; then
  echo "ncclguard: installing build dependencies: ${need[*]}" >&2
  "${apt[@]}" install -y -qq "${need[@]}" >/dev/null || {
    echo "ncclguard: could not install ${need[*]}; install them and retry" >&2; exit 1; }
fi
if [ ${#lneed[@]} -gt 0 ]; then
  echo "ncclguard: installing what tests/launchers and tests/monitoring run: ${lneed[*]}" >&2
  "${apt[@]}" install -y -qq --no-install-recommends "${lneed[@]}" >/dev/null || {
    echo "ncclguard: could not install ${lneed[*]}; install them and retry" >&2; exit 1; }
fi
