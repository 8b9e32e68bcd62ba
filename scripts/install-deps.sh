#!/usr/bin/env bash
# Installs ncclguard's build and test dependencies from Debian's packages when missing.
# --check-or-install (used by make): silent when everything is present.
set -u
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
[ ${#need[@]} -eq 0 ] && exit 0
echo "ncclguard: installing build dependencies: ${need[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null && $SUDO apt-get install -y -qq "${need[@]}" >/dev/null || {
  echo "ncclguard: could not install ${need[*]}; install them and retry" >&2; exit 1; }
