#!/usr/bin/env bash
# gpu-check.sh [--dry-run] [OUTDIR]: ncclguard on a GPU, in one bounded run (docs/gpu.md).
# Run from the repository root on the GPU machine with build/ made on a machine of the same
# glibc and architecture (nothing of ncclguard is compiled there; small C helpers are, when a compiler is present, else
# their prebuilt copies in build/tests/gpu are used). Writes gpu-check.log and gpu-check.json
# under OUTDIR (else $OUT, else build/gpu-check); every step passes, fails or is skipped with a
# reason, and every figure lands in gpu-check.json under its step:
#   1 versions   driver, GPU, CUDA, PyTorch and its NCCL, Python, glibc, CPU; libncclguard.so
#                loads here (ldd, GLIBC versions needed vs available, ELF machine, a preload)
#   2 ddp1       1-rank PyTorch DDP (env://), bare and under LD_PRELOAD: both exit 0, no
#                ncclguard output, `ncclguard status --json` mid-run saw the calls, step ratio
#   3 enqueue    C probe on the genuine libnccl.so.2 and device memory: 10,000 ncclAllReduce,
#                host enqueue ns per call bare/guarded, the id's tail stamped and accepted
#   4 multirank  2 ranks on the one GPU: the incident as a PyTorch DDP loop (exit 86 within 2 s
#                of the barrier, MISMATCH), the evenfix (clean), NCCLGUARD_ACTION=fail (PyTorch's
#                own error). NCCL >= 2.30: the real one with NCCL_MULTI_RANK_GPU_ENABLE=1; else
#                the CPU NCCL in its CUDA-aware mode (FAKENCCL_CUDA=1) under the real PyTorch
#   5 stack      the diagnostic's "stack of thread" in a CUDA process (2 ranks, a mismatch)
#   6 torchrun   the incident through PyTorch's launcher (python3 -m torch.distributed.run,
#                2 ranks on the one GPU as in step 4): the launcher ends the job, every rank's
#                report is written (MISMATCH, exit 86) and both full blocks are in its output
#   7 graphs     PyTorch collectives in CUDA graphs (tests/gpu/graphs.py: torch.cuda.graph
#                around all_reduce + reduce_scatter, replayed): 1 rank clean under the shim; with
#                2 ranks (NCCL >= 2.30) clean, then one rank replaying the other graph: MISMATCH
#                naming the graph replay on both ranks within 2 s
#   8 nccltests  NVIDIA's nccl-tests built here with nvcc (all_reduce_perf, reduce_scatter_perf;
#                the build starts in the background before step 4, so it runs last),
#                `-b 8 -e 128M -f 4 -g 1` bare and guarded, alternated (NCCL_TESTS_ROUNDS,
#                default 2), plain, with -G 10 (CUDA graphs) and -t 2 (two ranks on the one GPU:
#                NCCL >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1, thread 1's device folded onto
#                GPU 0 by tests/gpu/onegpu.c; older NCCL: skipped, saying so); figures: the
#                guarded/bare ratio of the latency at the smallest size (8 B; 0 B for
#                reduce_scatter, which nccl-tests rounds down) and of the bandwidth at 128 MB
#                (bus bandwidth; algorithm bandwidth where the bus one is 0, as with one rank)
# The nccl-tests checkout is never committed: NCCL_TESTS_SRC (else NCG_NCCL_TESTS_SRC, as
# scripts/nccl-tests.sh), else ./nccl-tests in the repository root, else /work/nccl-tests-src.
# To take it to the GPU machine, place it at ./nccl-tests (e.g. `mkdir nccl-tests && git
# --git-dir=<bare clone of NVIDIA/nccl-tests> archive HEAD | tar -x -C nccl-tests`),
# keep it out of git with `echo /nccl-tests/ >>"$(git rev-parse --git-common-dir)/info/exclude"`
# (.git/info/exclude; never commit it), and name it in the run's carry: carry: ["build",
# "nccl-tests"] (the sources are under 1 MiB; nothing is built inside it). Its build goes to
# NCCL_TESTS_BUILD (default OUTDIR/work/nccl-tests, never into the checkout), with NVCC_GENCODE
# (default: the GPU's compute capability, sm_90 on the dry run) and CUDA_HOME (/usr/local/cuda).
# --dry-run: the same steps on this machine with the CPU NCCL (build/fakenccl) and the CPU CUDA
# runtime (build/fakecuda); what needs PyTorch or a GPU is skipped, saying so; step 4 runs the C
# app tests/apps/torchlike.c instead of PyTorch, step 6 runs it under torchrun when a (CPU)
# PyTorch has the launcher, step 7 only compiles graphs.py and checks its argument handling,
# step 8 builds nccl-tests and runs it on the CPU stack (sizes up to 1 MB, no data check) or is
# skipped with the reason it cannot start. Bounded: each step by `timeout`, the whole by
# GPU_CHECK_TOTAL_S (default 450 s). Raw outputs and reports go to OUTDIR/work/; when OUTDIR is
# $OUT (the device tool, which brings back 8 files at most) they are packed into work.tar.gz.
# Exit 0 when no step failed, 1 otherwise, 2 on usage.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
DRY=0 OUTDIR=""
for a in "$@"; do
  case "$a" in
    --dry-run) DRY=1 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
    -*) echo "gpu-check: unknown option $a" >&2; exit 2 ;;
    *) OUTDIR=$a ;;
  esac
done
OUTDIR=${OUTDIR:-${OUT:-build/gpu-check}}
mkdir -p "$OUTDIR" || exit 2
OUTDIR=$(cd "$OUTDIR" && pwd)
LOG=$OUTDIR/gpu-check.log JSON=$OUTDIR/gpu-check.json
W=$OUTDIR/work
rm -rf "$W" && mkdir -p "$W"
: >"$LOG"
B=${NCG_BUILD:-build}
case "$B" in /*) ;; *) B=$ROOT/$B ;; esac
TOTAL=${GPU_CHECK_TOTAL_S:-450}
T_START=$(date +%s)
export NCCLGUARD_REPORT_DIR=$W/reports
mkdir -p "$NCCLGUARD_REPORT_DIR"

say() { echo "gpu-check: $*" | tee -a "$LOG"; }
# logfile NAME FILE: append FILE to the log, indented
logfile() { { echo "---- $1"; sed 's/^/  | /' "$2" 2>/dev/null | tail -n 200; } >>"$LOG"; }
now() { date +%s.%N; }
elapsed() { awk -v s="$1" -v e="$(now)" 'BEGIN{printf "%.2f", e-s}'; }
# bound N: N seconds, or what is left of the total budget (minus a margin), at least 5
bound() {
  local left=$((TOTAL - ($(date +%s) - T_START) - 15))
  [ "$left" -lt "$1" ] && { [ "$left" -lt 5 ] && echo 5 || echo "$left"; } || echo "$1"
}
tmo() { local n; n=$(bound "$1"); shift; timeout -k 5 "$n" "$@"; }
have() { command -v "$1" >/dev/null 2>&1; }
json_esc() { printf '%s' "$1" | sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/\t/\\t/g' | tr -d '\000-\037'; }

# Results: per step a status, a reason and figures (a JSON object body).
declare -a S_NAME S_STATUS S_REASON S_FIGS S_SECS
fig() { # fig STEP KEY VALUE: numbers and true/false raw, the rest as strings
  local v=$3
  if [[ "$v" =~ ^-?[0-9]+(\.[0-9]+)?$ ]] || [ "$v" = true ] || [ "$v" = false ]; then :; else v="\"$(json_esc "$v")\""; fi
  S_FIGS[$1]="${S_FIGS[$1]:+${S_FIGS[$1]},}\"$2\":$v"
  echo "gpu-check:   [$1] $2 = $3" >>"$LOG"
}
figs() { # figs STEP KEY VALUE: always a string (versions: 2.40 is not 2.4)
  S_FIGS[$1]="${S_FIGS[$1]:+${S_FIGS[$1]},}\"$2\":\"$(json_esc "$3")\""
  echo "gpu-check:   [$1] $2 = $3" >>"$LOG"
}
result() { # result STEP STATUS REASON
  S_STATUS[$1]=$2 S_REASON[$1]=$3
  say "step $1 ${S_NAME[$1]}: $2${3:+ ($3)}"
}
# kv FILE KEY: the value of a key=value line
kv() { sed -n "s/^$2=//p" "$1" 2>/dev/null | tail -n 1; }

say "start $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), dry run $DRY, total bound ${TOTAL}s, output $OUTDIR"

# ---- the environment: Python with PyTorch, the GPU, the NCCL and CUDA runtime to use ----
PY="" TORCH=0 GPU=0
for p in ${GPU_CHECK_PYTHON:-} python3 python /usr/bin/python3; do
  have "$p" || [ -x "$p" ] || continue
  if tmo 90 "$p" -c 'import torch' >/dev/null 2>&1; then PY=$p TORCH=1; break; fi
  [ -z "$PY" ] && PY=$p
done
if [ $DRY = 0 ] && have nvidia-smi && tmo 30 nvidia-smi -L >/dev/null 2>&1; then GPU=1; fi
if [ $TORCH = 1 ]; then
  tmo 120 "$PY" - >"$W/torch.txt" 2>"$W/torch.err" <<'EOF'
import torch, sys
print("torch=%s" % torch.__version__)
print("torch_cuda=%s" % torch.version.cuda)
print("cuda_available=%d" % torch.cuda.is_available())
try:
    v = torch.cuda.nccl.version()
    print("torch_nccl=%s" % ".".join(map(str, v if isinstance(v, tuple) else (v,))))
except Exception as e:
    print("torch_nccl_error=%s" % e)
if torch.cuda.is_available():
    print("torch_device=%s" % torch.cuda.get_device_name(0))
    torch.zeros(1, device="cuda")
for ln in open("/proc/self/maps"):
    f = ln.split()[-1]
    if "/libnccl.so" in f: print("libnccl_path=%s" % f)
    if "/libcudart.so" in f: print("libcudart_path=%s" % f)
EOF
  logfile "torch probe" "$W/torch.txt"; logfile "torch probe stderr" "$W/torch.err"
  [ "$(kv "$W/torch.txt" cuda_available)" = 1 ] || GPU=0
fi
TORCH_NCCL=$(kv "$W/torch.txt" torch_nccl)
if [ $DRY = 1 ]; then
  NCCL_DIR=$B/fakenccl CUDART_DIR=$B/fakecuda
else
  p=$(kv "$W/torch.txt" libnccl_path); NCCL_DIR=${p:+$(dirname "$p")}
  p=$(kv "$W/torch.txt" libcudart_path); CUDART_DIR=${p:+$(dirname "$p")}
  NCCL_DIR=${NCCL_DIR:-/usr/local/cuda/lib64} CUDART_DIR=${CUDART_DIR:-/usr/local/cuda/lib64}
fi
NEED_GPU="needs PyTorch and a GPU"
[ $DRY = 1 ] && NEED_GPU="dry run: needs PyTorch and a GPU (none here)"
[ $DRY = 0 ] && [ $TORCH = 0 ] && NEED_GPU="no Python with PyTorch found (tried ${GPU_CHECK_PYTHON:-} python3 python /usr/bin/python3)"
[ $DRY = 0 ] && [ $TORCH = 1 ] && [ $GPU = 0 ] && NEED_GPU="PyTorch sees no usable GPU"
# a free TCP port for env:// rendezvous
free_port() { "${PY:-python3}" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null || echo 29511; }
# nccl_ge MAJOR MINOR: PyTorch's NCCL is at least that version
nccl_ge() { awk -v v="$TORCH_NCCL" -v a="$1" -v b="$2" 'BEGIN{split(v,x,"."); exit !(x[1]>a || (x[1]==a && x[2]>=b))}'; }

# ---- step 1: versions, and whether the carried build runs here ----
step1() {
  local s=1 f
  S_NAME[1]=versions
  fig 1 date "$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  fig 1 host "$(hostname)"
  fig 1 arch "$(uname -m)"
  fig 1 kernel "$(uname -r)"
  figs 1 glibc "$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')"
  fig 1 cpu "$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  fig 1 cpus "$(nproc)"
  f=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'sse4_2|avx|avx2|avx512f|bmi2|fma' | tr '\n' ' ')
  fig 1 cpu_flags "${f% }"
  if have nvidia-smi && tmo 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_mode --format=csv,noheader >"$W/smi.txt" 2>&1; then
    fig 1 gpu "$(head -n 1 "$W/smi.txt")"
  else
    fig 1 gpu "none (nvidia-smi: $(head -c 120 "$W/smi.txt" 2>/dev/null || echo absent))"
  fi
  have nvcc && fig 1 nvcc "$(nvcc --version | tail -n 1)"
  have gcc && figs 1 gcc "$(gcc -dumpfullversion 2>/dev/null)"
  [ -n "$PY" ] && fig 1 python "$("$PY" -c 'import sys; print(sys.version.split()[0])' 2>/dev/null) ($PY)"
  for k in torch torch_cuda torch_nccl torch_device libnccl_path libcudart_path; do
    [ -n "$(kv "$W/torch.txt" $k)" ] && figs 1 $k "$(kv "$W/torch.txt" $k)"
  done
  fig 1 nccl_dir "$NCCL_DIR"
  fig 1 cudart_dir "$CUDART_DIR"
  # the carried build: dynamic deps, GLIBC versions, machine, a real preload
  local lib=$B/libncclguard.so bad=""
  if [ ! -e "$lib" ]; then result 1 fail "$lib missing (build here with make, carry build/)"; return; fi
  ldd "$lib" >"$W/ldd.txt" 2>&1
  logfile "ldd libncclguard.so" "$W/ldd.txt"
  grep -q 'not found' "$W/ldd.txt" && bad="ldd: $(grep 'not found' "$W/ldd.txt" | tr -s ' \t\n' ' ')"
  local need have_v
  need=$(grep -ao 'GLIBC_2\.[0-9][0-9.]*' "$lib" "$B/ncclguard" 2>/dev/null | sed 's/.*://' | sort -uV | tail -n 1)
  have_v=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print "GLIBC_" $2}')
  fig 1 glibc_needed "$need"
  if [ -n "$need" ] && [ -n "$have_v" ] && [ "$(printf '%s\n%s\n' "$need" "$have_v" | sort -V | tail -n 1)" != "$have_v" ]; then
    bad="${bad:+$bad; }needs $need, this glibc is $have_v"
  fi
  local m
  m=$(od -An -tx1 -j18 -N2 "$lib" | tr -d ' \n')
  case "$m:$(uname -m)" in 3e00:x86_64 | b700:aarch64) ;; *) bad="${bad:+$bad; }ELF machine $m does not match $(uname -m)" ;; esac
  if ! LD_PRELOAD=$lib tmo 20 /bin/true 2>"$W/preload.err" || [ -s "$W/preload.err" ]; then
    bad="${bad:+$bad; }preload of /bin/true: $(head -c 200 "$W/preload.err")"
  fi
  tmo 20 "$B/ncclguard" status --json >"$W/status0.json" 2>"$W/status0.err"
  local rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 3 ] || bad="${bad:+$bad; }build/ncclguard status exit $rc: $(head -c 200 "$W/status0.err")"
  if [ -n "$bad" ]; then result 1 fail "the carried build does not run here: $bad"; return; fi
  local what="libncclguard.so loads here (needs $need, have ${have_v:-?})"
  [ -z "$TORCH_NCCL" ] && what="$what; PyTorch versions: ${NEED_GPU#dry run: }"
  result 1 pass "$what"
}

# ---- step 2: a 1-rank PyTorch DDP job, bare and guarded ----
step2() {
  S_NAME[2]=ddp1
  if [ $TORCH = 0 ] || [ $GPU = 0 ]; then result 2 skipped "$NEED_GPU"; return; fi
  local port rc1 rc2
  port=$(free_port)
  env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout -k 5 "$(bound 120)" "$PY" tests/gpu/ddp.py --steps 300 --json "$W/ddp1-bare.json" >"$W/ddp1-bare.out" 2>&1
  rc1=$?
  logfile "ddp1 bare (exit $rc1)" "$W/ddp1-bare.out"
  port=$(free_port)
  env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port LD_PRELOAD="$B/libncclguard.so" \
    timeout -k 5 "$(bound 120)" "$PY" tests/gpu/ddp.py --steps 300 --json "$W/ddp1-guard.json" \
    --status "$B/ncclguard status --json" --status-out "$W/ddp1-status.json" >"$W/ddp1-guard.out" 2>&1
  rc2=$?
  logfile "ddp1 guarded (exit $rc2)" "$W/ddp1-guard.out"
  fig 2 exit_bare $rc1
  fig 2 exit_guarded $rc2
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then result 2 fail "exit bare $rc1, guarded $rc2"; return; fi
  if grep -q '^ncclguard:' "$W/ddp1-guard.out" "$W/ddp1-bare.out"; then result 2 fail "ncclguard printed: $(grep -m1 '^ncclguard:' "$W/ddp1-guard.out")"; return; fi
  "$PY" - "$W" >"$W/ddp1.kv" 2>&1 <<'EOF'
import json, sys
w = sys.argv[1]
b = json.load(open(w + "/ddp1-bare.json")); g = json.load(open(w + "/ddp1-guard.json"))
print("step_ms_bare=%.4f" % b["step_ms"]); print("step_ms_guarded=%.4f" % g["step_ms"])
print("ratio=%.4f" % (g["step_ms"] / b["step_ms"] if b["step_ms"] else 0))
print("nccl_libs_guarded=%s" % " ".join(g["nccl_libs"]))
slots = 0
try:
    st = json.load(open(w + "/ddp1-status.json"))
    slots = max([c.get("max_slots", 0) for c in st.get("communicators", [])] or [0])
except Exception as e:
    print("status_error=%s" % e)
print("status_max_slots=%d" % slots)
EOF
  logfile "ddp1 figures" "$W/ddp1.kv"
  local k
  for k in step_ms_bare step_ms_guarded ratio status_max_slots nccl_libs_guarded status_error; do
    [ -n "$(kv "$W/ddp1.kv" $k)" ] && fig 2 $k "$(kv "$W/ddp1.kv" $k)"
  done
  [ "$(kv "$W/ddp1.kv" status_max_slots)" -gt 0 ] 2>/dev/null \
    || { result 2 fail "ncclguard status --json during the run showed no calls"; return; }
  result 2 pass "both exit 0, no ncclguard output, status saw $(kv "$W/ddp1.kv" status_max_slots) calls mid-run, step time ratio guarded/bare $(kv "$W/ddp1.kv" ratio)"
}

# ---- step 3: the C probe on libnccl.so.2 and device memory ----
find_inc() { # find_inc HEADER DIR...: the first DIR holding HEADER
  local h=$1 d; shift
  for d in "$@"; do [ -n "$d" ] && [ -e "$d/$h" ] && { echo "$d"; return 0; }; done
  return 1
}
PROBE=""
build_probe() {
  local sp="" cc="" ninc cinc cudart
  [ -n "$PY" ] && sp=$("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
  local cands=("$NCCL_DIR/../include" /usr/local/cuda/include /usr/include)
  local d
  for d in $sp; do cands+=("$d/nvidia/nccl/include" "$d/nvidia/cu13/include" "$d/nvidia/cuda_runtime/include"); done
  [ $DRY = 1 ] && cands=(/usr/local/cuda/include)
  have gcc && cc=gcc; [ -z "$cc" ] && have cc && cc=cc
  ninc=$(find_inc nccl.h "${cands[@]}")
  cinc=$(find_inc cuda_runtime_api.h "$CUDART_DIR/../include" "${cands[@]}")
  cudart=$(cd "$CUDART_DIR" 2>/dev/null && ls libcudart.so.[0-9]* 2>/dev/null | grep -E '^libcudart\.so\.[0-9]+$' | head -n 1)
  local ldir=("-L$NCCL_DIR" "-L$CUDART_DIR")
  [ $DRY = 1 ] && ldir=(-L/usr/local/cuda/lib64) && cudart=libcudart.so.13
  if [ -n "$cc" ] && [ -n "$ninc" ] && [ -n "$cinc" ] && [ -n "$cudart" ] &&
    tmo 60 "$cc" -O2 -std=gnu11 -isystem "$ninc" -isystem "$cinc" -o "$W/gpuprobe" tests/gpu/gpuprobe.c \
      "${ldir[@]}" -l:libnccl.so.2 -l:"$cudart" >"$W/cc.out" 2>&1; then
    PROBE=$W/gpuprobe
    fig 3 probe "compiled here with $cc (nccl.h in $ninc, cuda_runtime_api.h in $cinc, $cudart)"
  else
    logfile "probe compile ($cc, nccl.h '$ninc', cuda_runtime_api.h '$cinc', cudart '$cudart')" "$W/cc.out"
    [ -x "$B/tests/gpu/gpuprobe" ] && PROBE=$B/tests/gpu/gpuprobe && fig 3 probe "prebuilt $PROBE (no compiler or headers here)"
  fi
}
step3() {
  S_NAME[3]=enqueue
  if [ $DRY = 0 ] && [ $GPU = 0 ]; then result 3 skipped "no usable GPU (${NEED_GPU})"; return; fi
  build_probe
  [ -n "$PROBE" ] || { result 3 fail "no probe: cannot compile tests/gpu/gpuprobe.c and build/tests/gpu/gpuprobe is missing"; return; }
  local envs=(LD_LIBRARY_PATH="$NCCL_DIR:$CUDART_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" NCCL_DEBUG=WARN)
  [ $DRY = 1 ] && envs+=(FAKENCCL_ASYNC=1) && fig 3 nccl "CPU NCCL (asynchronous mode) on the CPU CUDA runtime"
  [ $DRY = 0 ] && fig 3 nccl "genuine libnccl.so.2 in $NCCL_DIR"
  local rc1 rc2
  env "${envs[@]}" timeout -k 5 "$(bound 90)" "$PROBE" enqueue 10000 >"$W/enq-bare.out" 2>&1; rc1=$?
  logfile "enqueue bare (exit $rc1)" "$W/enq-bare.out"
  env "${envs[@]}" LD_PRELOAD="$B/libncclguard.so" timeout -k 5 "$(bound 90)" "$PROBE" enqueue 10000 >"$W/enq-guard.out" 2>&1; rc2=$?
  logfile "enqueue guarded (exit $rc2)" "$W/enq-guard.out"
  fig 3 exit_bare $rc1
  fig 3 exit_guarded $rc2
  local nb ng
  nb=$(kv "$W/enq-bare.out" enqueue_ns_per_call) ng=$(kv "$W/enq-guard.out" enqueue_ns_per_call)
  [ -n "$nb" ] && fig 3 enqueue_ns_bare "$nb"
  [ -n "$ng" ] && fig 3 enqueue_ns_guarded "$ng"
  [ -n "$nb" ] && [ -n "$ng" ] && fig 3 enqueue_ns_added "$(awk -v a="$nb" -v b="$ng" 'BEGIN{printf "%.1f", b-a}')"
  fig 3 nccl_version "$(kv "$W/enq-bare.out" nccl_version)"
  fig 3 idtail_tag_guarded "$(kv "$W/enq-guard.out" idtail_tag)"
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then result 3 fail "exit bare $rc1, guarded $rc2: $(grep -m1 gpuprobe: "$W/enq-guard.out" "$W/enq-bare.out")"; return; fi
  [ "$(kv "$W/enq-bare.out" idtail_tag)" = 0 ] || { result 3 fail "the id's tail is stamped without the shim"; return; }
  [ "$(kv "$W/enq-guard.out" idtail_tag)" = 1 ] || { result 3 fail "ncclguard did not stamp the id's tail"; return; }
  [ "$(kv "$W/enq-guard.out" initrank_rc)" = 0 ] || { result 3 fail "the stamped id was refused by ncclCommInitRank"; return; }
  grep -q '^ncclguard:' "$W/enq-guard.out" && { result 3 fail "ncclguard printed: $(grep -m1 '^ncclguard:' "$W/enq-guard.out")"; return; }
  result 3 pass "10000 AllReduce each: $nb ns/call bare, $ng guarded; stamped id accepted by ncclCommInitRank"
}

# ---- step 4: several ranks on the one GPU, the incident ----
# mr_setup STEP: how 2 ranks share the one GPU under PyTorch (steps 4 and 7): MR_MODE real (NCCL
# >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1) or cpu (the CPU NCCL in CUDA-aware mode, preloaded
# after the shim: libtorch_cuda.so's libnccl.so.2 is satisfied by soname), MR_PRE the LD_PRELOAD,
# MR_ENVS the environment
mr_setup() {
  if nccl_ge 2 30; then
    MR_MODE=real MR_PRE="$B/libncclguard.so"
    MR_ENVS=(NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_DEBUG=WARN)
    fig "$1" nccl "PyTorch's NCCL $TORCH_NCCL with NCCL_MULTI_RANK_GPU_ENABLE=1"
  else
    MR_MODE=cpu MR_PRE="$B/libncclguard.so $B/fakenccl/libnccl.so.2"
    MR_ENVS=(FAKENCCL_CUDA=1)
    fig "$1" nccl "CPU NCCL in CUDA-aware mode under PyTorch (its own NCCL $TORCH_NCCL < 2.30 refuses 2 ranks per GPU)"
    if [ "$1" = 4 ] && have nm && [ -n "$(kv "$W/torch.txt" libnccl_path)" ]; then
      local tc miss
      tc=$(dirname "$("$PY" -c 'import torch; print(torch.__file__)')")/lib/libtorch_cuda.so
      miss=$(comm -23 <(nm -D --undefined-only "$tc" 2>/dev/null | awk '{print $NF}' | grep '^nccl' | sort -u) \
        <(nm -D --defined-only "$B/fakenccl/libnccl.so.2" | awk '{print $NF}' | sort -u) | tr '\n' ' ')
      fig 4 fake_missing_symbols "${miss:-none}"
    fi
  fi
}
# launch NAME SECS VAR=VALUE... -- PROG ARGS...: 2 ranks under ncg-launch with that environment,
# output in $W/NAME.out, status in $LRC, end time in $LEND, wall in $LWALL
launch() {
  local name=$1 secs=$2 t0 e=(); shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do e+=("$1"); shift; done
  shift
  t0=$(now)
  env "${e[@]}" timeout -k 5 "$(bound $((secs + 10)))" "$B/tests/ncg-launch" -n 2 -t "$(bound "$secs")" "$@" >"$W/$name.out" 2>&1
  LRC=$? LEND=$(now) LWALL=$(elapsed "$t0")
  logfile "$name (exit $LRC, ${LWALL}s)" "$W/$name.out"
}
exited() { grep -cE "^ncg-launch: rank [0-9]+ exited with status $2\$" "$W/$1.out"; }
step4() {
  S_NAME[4]=multirank
  local pre envs mode
  if [ $DRY = 1 ]; then
    local tl=$B/tests/torchlike
    [ -x "$tl" ] || { result 4 skipped "dry run: build/tests/torchlike not built (needs /usr/local/cuda headers)"; return; }
    fig 4 job "tests/apps/torchlike.c (the C stand-in for PyTorch), 2 ranks"
    fig 4 nccl "CPU NCCL, CUDA-aware mode (FAKENCCL_CUDA=1), on the CPU CUDA runtime"
    envs=(LD_LIBRARY_PATH="$B/fakenccl:$B/fakecuda" FAKENCCL_CUDA=1)
    launch inc 60 "${envs[@]}" LD_PRELOAD="$B/libncclguard.so" -- "$tl" --steps 80 --fault incident --fault-rank 1 --fault-step 40
    local inc_rc=$LRC inc86 inc_wall=$LWALL
    inc86=$(exited inc 86)
    launch fix 60 "${envs[@]}" LD_PRELOAD="$B/libncclguard.so" -- "$tl" --steps 80
    local fix_rc=$LRC
    launch failact 60 "${envs[@]}" LD_PRELOAD="$B/libncclguard.so" NCCLGUARD_ACTION=fail -- "$tl" --steps 80 --fault incident --fault-rank 1 --fault-step 20
    local fail_rc=$LRC
    fig 4 incident_exit $inc_rc; fig 4 incident_ranks_86 "$inc86"; fig 4 incident_wall_s "$inc_wall"
    fig 4 evenfix_exit $fix_rc; fig 4 fail_exit $fail_rc
    [ $inc_rc = 86 ] && [ "$inc86" = 2 ] && grep -q '^ncclguard: VERDICT: MISMATCH' "$W/inc.out" \
      || { result 4 fail "incident: exit $inc_rc, $inc86 of 2 ranks exited 86"; return; }
    [ $fix_rc = 0 ] && ! grep -q '^ncclguard:' "$W/fix.out" || { result 4 fail "healthy run: exit $fix_rc or ncclguard output"; return; }
    [ $fail_rc != 0 ] && [ $fail_rc != 86 ] && [ "$(exited failact 86)" = 0 ] && grep -q 'remote process exited or there was a network error' "$W/failact.out" \
      || { result 4 fail "fail action: exit $fail_rc, not the app's own error"; return; }
    result 4 pass "dry run (PyTorch part skipped: no CUDA PyTorch here): torchlike on the CUDA-aware CPU NCCL: incident -> both ranks 86 with MISMATCH in ${inc_wall}s, healthy clean, fail -> the app's own error (exit $fail_rc)"
    return
  fi
  if [ $TORCH = 0 ] || [ $GPU = 0 ]; then result 4 skipped "$NEED_GPU"; return; fi
  if grep -qi 'exclusive' "$W/smi.txt" 2>/dev/null; then result 4 skipped "the GPU's compute mode is exclusive: one process per GPU"; return; fi
  mr_setup 4
  mode=$MR_MODE pre=$MR_PRE envs=("${MR_ENVS[@]}")
  fig 4 job "tests/gpu/ddp.py (PyTorch DDP), 2 ranks on cuda:0"
  local common=(MASTER_ADDR=127.0.0.1 "${envs[@]}")
  launch inc 90 "${common[@]}" MASTER_PORT="$(free_port)" LD_PRELOAD="$pre" -- \
    "$PY" tests/gpu/ddp.py --steps 200 --short-rank 1 --short-steps 100 --timeout 120
  local inc_rc=$LRC inc_end=$LEND inc86 tb lat
  inc86=$(exited inc 86)
  tb=$(sed -n 's/^ddp: rank 1 barrier at \([0-9.]*\).*/\1/p' "$W/inc.out" | head -n 1)
  lat=$(awk -v b="$tb" -v e="$inc_end" 'BEGIN{ if (b=="") print ""; else printf "%.2f", e-b }')
  fig 4 incident_exit $inc_rc; fig 4 incident_ranks_86 "$inc86"
  [ -n "$lat" ] && fig 4 incident_s_after_barrier "$lat"
  fig 4 incident_stack "$(grep -c 'stack of thread' "$W/inc.out")"
  fig 4 incident_python_frames "$(grep -cE '^ncclguard: .*\.py:[0-9]+' "$W/inc.out")"
  launch fix 90 "${common[@]}" MASTER_PORT="$(free_port)" LD_PRELOAD="$pre" -- \
    "$PY" tests/gpu/ddp.py --steps 200 --short-rank 1 --short-steps 100 --evenfix --timeout 120
  local fix_rc=$LRC
  fig 4 evenfix_exit $fix_rc
  launch failact 100 "${common[@]}" MASTER_PORT="$(free_port)" LD_PRELOAD="$pre" NCCLGUARD_ACTION=fail -- \
    "$PY" tests/gpu/ddp.py --steps 200 --short-rank 1 --short-steps 100 --timeout 60
  local fail_rc=$LRC
  fig 4 fail_exit $fail_rc; fig 4 fail_wall_s "$LWALL"
  fig 4 fail_torch_error "$(grep -m1 -E 'DistBackendError|ProcessGroupNCCL|NCCL error|[Ww]atchdog' "$W/failact.out" | head -c 300)"
  local bad=""
  { [ $inc_rc = 86 ] && [ "$inc86" = 2 ] && grep -q '^ncclguard: VERDICT: MISMATCH' "$W/inc.out"; } \
    || bad="incident: exit $inc_rc, $inc86 of 2 ranks exited 86"
  [ -n "$lat" ] && awk -v l="$lat" 'BEGIN{exit !(l > 2.0)}' && bad="${bad:+$bad; }ranks ended ${lat}s after the barrier (want < 2 s)"
  grep -q 'stack of thread' "$W/inc.out" || bad="${bad:+$bad; }no stack of thread in the diagnostic"
  { [ $fix_rc = 0 ] && ! grep -q '^ncclguard:' "$W/fix.out"; } || bad="${bad:+$bad; }evenfix: exit $fix_rc or ncclguard output"
  { [ $fail_rc != 0 ] && [ $fail_rc != 86 ] && [ $fail_rc != 124 ] && [ "$(exited failact 86)" = 0 ] &&
    grep -qE 'DistBackendError|ProcessGroupNCCL|NCCL error|[Ww]atchdog' "$W/failact.out"; } \
    || bad="${bad:+$bad; }fail action: exit $fail_rc, PyTorch's own error not seen"
  [ -n "$bad" ] && { result 4 fail "($mode NCCL) $bad"; return; }
  result 4 pass "($mode NCCL) incident: both ranks 86 with MISMATCH ${lat}s after the barrier; evenfix clean; fail: PyTorch's own error (exit $fail_rc)"
}

# ---- step 5: the stack of the stuck thread in a CUDA process ----
step5() {
  S_NAME[5]=stack
  if [ $DRY = 0 ] && [ $GPU = 0 ]; then result 5 skipped "no usable GPU (${NEED_GPU})"; return; fi
  [ -n "$PROBE" ] || build_probe
  [ -n "$PROBE" ] || { result 5 fail "no probe program"; return; }
  local rt=$CUDART_DIR
  fig 5 cuda_runtime "$rt"
  fig 5 nccl "CPU NCCL, CUDA-aware mode (device buffers staged through the runtime)"
  launch stack 60 LD_LIBRARY_PATH="$B/fakenccl:$rt" FAKENCCL_CUDA=1 LD_PRELOAD="$B/libncclguard.so" -- \
    "$PROBE" mismatch
  local n86 frames
  n86=$(exited stack 86)
  frames=$(grep -cE '^ncclguard:     #[0-9]+ ' "$W/stack.out")
  fig 5 exit $LRC; fig 5 ranks_86 "$n86"; fig 5 frames "$frames"
  fig 5 cudart_frames "$(grep -cE '^ncclguard:     #[0-9]+ .*libcudart' "$W/stack.out")"
  { [ $LRC = 86 ] && [ "$n86" = 2 ] && grep -q 'stack of thread' "$W/stack.out" && [ "$frames" -gt 2 ]; } \
    || { result 5 fail "exit $LRC, $n86 of 2 ranks 86, $frames stack frames"; return; }
  result 5 pass "both ranks 86 with the MISMATCH diagnostic and a stack of thread ($frames frames over 2 ranks)"
}

# ---- step 6: the incident through torchrun ----
# tr_check OUT REPORTS: every rank's report (MISMATCH, exit 86, ranks 0 and 1) and both full
# blocks in the launcher's output; sets TR_BAD
tr_check() {
  local out=$1 rd=$2 n
  TR_BAD=""
  n=$(ls "$rd"/ncclguard-report.*.json 2>/dev/null | wc -l)
  fig 6 reports "$n"
  fig 6 headlines "$(grep -c '^ncclguard: VERDICT: MISMATCH' "$out")"
  fig 6 full_blocks "$(grep -c '^ncclguard:   collective calls issued per rank' "$out")"
  fig 6 actions_86 "$(grep -c '^ncclguard:   action: abort (exit status 86)' "$out")"
  fig 6 launcher_exitcode_86 "$(grep -cE 'exitcode *: *86' "$out")"
  [ "$n" = 2 ] || TR_BAD="${TR_BAD:+$TR_BAD; }$n reports in $rd, want 2"
  if [ "$n" -gt 0 ]; then
    local chk
    chk=$("${PY:-python3}" - "$rd" 2>&1 <<'EOF'
import glob, json, sys
rs = [json.load(open(f)) for f in sorted(glob.glob(sys.argv[1] + "/ncclguard-report.*.json"))]
bad = [r.get("verdict") for r in rs if r.get("verdict") != "MISMATCH" or r.get("exit_status") != 86]
ranks = sorted(r.get("global_rank") for r in rs)
print("ok" if not bad and ranks == list(range(len(rs))) else "verdicts %s, global ranks %s" % (bad, ranks))
EOF
)
    [ "$chk" = ok ] || TR_BAD="${TR_BAD:+$TR_BAD; }reports: $(echo "$chk" | tail -n 1 | head -c 200)"
  fi
  [ "$(grep -c '^ncclguard: VERDICT: MISMATCH' "$out")" = 2 ] || TR_BAD="${TR_BAD:+$TR_BAD; }not 2 MISMATCH headlines"
  [ "$(grep -c '^ncclguard:   collective calls issued per rank' "$out")" = 2 ] || TR_BAD="${TR_BAD:+$TR_BAD; }not 2 full blocks"
  [ "$(grep -c '^ncclguard:   action: abort (exit status 86)' "$out")" = 2 ] || TR_BAD="${TR_BAD:+$TR_BAD; }not 2 complete blocks (action lines)"
  grep -qE 'exitcode *: *86' "$out" || TR_BAD="${TR_BAD:+$TR_BAD; }the launcher's summary names no exit code 86"
}
step6() {
  S_NAME[6]=torchrun
  local launcher=0 rd=$W/reports-torchrun mode
  [ $TORCH = 1 ] && tmo 60 "$PY" -c 'import torch.distributed.run' >/dev/null 2>&1 && launcher=1
  if [ $DRY = 1 ]; then
    [ $launcher = 1 ] || { result 6 skipped "dry run: no CUDA PyTorch, and no PyTorch with torch.distributed.run to run the C stand-in under"; return; }
    [ -x "$B/tests/torchlike" ] || { result 6 skipped "dry run: no CUDA PyTorch; build/tests/torchlike not built"; return; }
  else
    if [ $TORCH = 0 ] || [ $GPU = 0 ]; then result 6 skipped "$NEED_GPU"; return; fi
    [ $launcher = 1 ] || { result 6 skipped "PyTorch has no torch.distributed.run"; return; }
    if grep -qi 'exclusive' "$W/smi.txt" 2>/dev/null; then result 6 skipped "the GPU's compute mode is exclusive: one process per GPU"; return; fi
  fi
  mkdir -p "$rd"
  local tr=(-m torch.distributed.run --nnodes 1 --nproc_per_node 2 --max_restarts 0
    --master_addr 127.0.0.1 --master_port "$(free_port)")
  local t0 rc
  t0=$(now)
  if [ $DRY = 1 ]; then
    mode="dry run: torchrun of PyTorch $("$PY" -c 'import torch; print(torch.__version__)' 2>/dev/null) (CPU) running the C stand-in torchlike on the CUDA-aware CPU NCCL; the CUDA PyTorch DDP job needs a GPU"
    fig 6 job "tests/apps/torchlike.c under torchrun --no_python, 2 ranks"
    # --redirects 1 --tee 1: torchrun 1.13 under Python >= 3.11 cannot parse its default "0"
    # (Std.from_str finds no IntFlag member equal to 0 and returns None); stdout goes through a
    # file and is copied to the console, stderr (where ncclguard writes) is the worker's own
    rm -f "$W/torchrun.id"
    env LD_LIBRARY_PATH="$B/fakenccl:$B/fakecuda" FAKENCCL_CUDA=1 NCG_ID_FILE="$W/torchrun.id" \
      LD_PRELOAD="$B/libncclguard.so" NCCLGUARD_REPORT_DIR="$rd" \
      timeout -k 5 "$(bound 90)" "$PY" "${tr[@]}" --redirects 1 --tee 1 --no_python "$B/tests/torchlike" \
      --steps 80 --fault incident --fault-rank 1 --fault-step 40 </dev/null >"$W/torchrun.out" 2>&1
    rc=$?
  else
    mr_setup 6
    mode="($MR_MODE NCCL) PyTorch DDP"
    fig 6 job "tests/gpu/ddp.py (PyTorch DDP) under torchrun, 2 ranks on cuda:0"
    env "${MR_ENVS[@]}" LD_PRELOAD="$MR_PRE" NCCLGUARD_REPORT_DIR="$rd" \
      timeout -k 5 "$(bound 150)" "$PY" "${tr[@]}" tests/gpu/ddp.py \
      --steps 200 --short-rank 1 --short-steps 100 --timeout 120 </dev/null >"$W/torchrun.out" 2>&1
    rc=$?
  fi
  local wall
  wall=$(elapsed "$t0")
  logfile "torchrun incident (exit $rc, ${wall}s)" "$W/torchrun.out"
  fig 6 launcher_exit "$rc"; fig 6 wall_s "$wall"
  tr_check "$W/torchrun.out" "$rd"
  { [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ]; } || TR_BAD="launcher exit $rc${TR_BAD:+; $TR_BAD}"
  [ -n "$TR_BAD" ] && { result 6 fail "$mode: $TR_BAD"; return; }
  result 6 pass "$mode: torchrun ended the job (exit $rc) in ${wall}s; 2 reports (MISMATCH, exit 86) and both full blocks in its output"
}

# ---- step 7: PyTorch collectives in CUDA graphs ----
step7() {
  S_NAME[7]=graphs
  local p=${PY:-python3} smoke=""
  # graphs.py and ddp.py (whose process-group setup it imports) compile and parse their
  # arguments (no torch import for that)
  if ! "$p" -c 'import sys; [compile(open(f).read(), f, "exec") for f in sys.argv[1:]]' tests/gpu/graphs.py tests/gpu/ddp.py >"$W/graphs-smoke.out" 2>&1; then
    smoke="or ddp.py does not compile: $(tail -n 1 "$W/graphs-smoke.out")"
  elif ! tmo 30 "$p" tests/gpu/graphs.py --help >>"$W/graphs-smoke.out" 2>&1 || ! tmo 30 "$p" tests/gpu/ddp.py --help >>"$W/graphs-smoke.out" 2>&1; then
    smoke="or ddp.py: --help failed"
  else
    tmo 30 "$p" tests/gpu/graphs.py --odd 1 >>"$W/graphs-smoke.out" 2>&1
    [ $? = 2 ] || smoke="--odd without --at was not refused with exit 2"
  fi
  logfile "graphs.py smoke ($p)" "$W/graphs-smoke.out"
  [ -n "$smoke" ] && { result 7 fail "tests/gpu/graphs.py $smoke"; return; }
  fig 7 smoke "graphs.py and ddp.py compile and parse their arguments ($p)"
  if [ $DRY = 1 ] || [ $TORCH = 0 ] || [ $GPU = 0 ]; then
    local why="no CUDA PyTorch"
    [ $DRY = 1 ] && why="dry run: no CUDA PyTorch here"
    [ $DRY = 0 ] && [ $TORCH = 1 ] && why="PyTorch sees no usable GPU"
    result 7 skipped "$why (graphs.py and ddp.py compiled and their argument handling checked with $p; CUDA graphs cannot be captured without a GPU)"
    return
  fi
  # 1 rank, PyTorch's own NCCL: capture and replays under the shim are clean
  local rc port
  port=$(free_port)
  env RANK=0 WORLD_SIZE=1 LOCAL_RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port LD_PRELOAD="$B/libncclguard.so" \
    timeout -k 5 "$(bound 120)" "$PY" tests/gpu/graphs.py --replays 100 </dev/null >"$W/graphs1.out" 2>&1
  rc=$?
  logfile "graphs.py, 1 rank, guarded (exit $rc)" "$W/graphs1.out"
  fig 7 one_rank_exit "$rc"
  { [ $rc = 0 ] && grep -q 'replays ok' "$W/graphs1.out" && ! grep -q '^ncclguard:' "$W/graphs1.out"; } \
    || { result 7 fail "1 rank: exit $rc: $(grep -m1 -E '^ncclguard:|Error|error' "$W/graphs1.out" | head -c 200)"; return; }
  local one="1 rank: 100 replays of a captured all_reduce + reduce_scatter under the shim, clean"
  if grep -qi 'exclusive' "$W/smi.txt" 2>/dev/null; then result 7 skipped "$one; 2 ranks: the GPU's compute mode is exclusive"; return; fi
  if ! nccl_ge 2 30; then
    result 7 skipped "$one; the 2-rank MISMATCH needs 2 ranks on one GPU: PyTorch's NCCL ${TORCH_NCCL:-?} < 2.30 refuses that, and the CPU NCCL's CUDA-aware mode refuses capture"
    return
  fi
  local envs=(NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_DEBUG=WARN MASTER_ADDR=127.0.0.1)
  fig 7 nccl "PyTorch's NCCL $TORCH_NCCL with NCCL_MULTI_RANK_GPU_ENABLE=1"
  launch graphs-ok 90 "${envs[@]}" MASTER_PORT="$(free_port)" LD_PRELOAD="$B/libncclguard.so" -- \
    "$PY" tests/gpu/graphs.py --replays 100
  local ok_rc=$LRC
  fig 7 healthy_exit "$ok_rc"
  launch graphs-odd 90 "${envs[@]}" MASTER_PORT="$(free_port)" LD_PRELOAD="$B/libncclguard.so" -- \
    "$PY" tests/gpu/graphs.py --replays 100 --odd 1 --at 50 --timeout 60
  local odd_rc=$LRC odd_end=$LEND at lat n86
  n86=$(exited graphs-odd 86)
  at=$(sed -n 's/^graphs: replay_at //p' "$W/graphs-odd.out" | head -n 1)
  lat=$(awk -v b="$at" -v e="$odd_end" 'BEGIN{ if (b=="") print ""; else printf "%.2f", e-b }')
  fig 7 odd_exit "$odd_rc"; fig 7 odd_ranks_86 "$n86"
  [ -n "$lat" ] && fig 7 odd_s_after_replay "$lat"
  fig 7 graph_replay_named "$(grep -c '(in a CUDA graph replay)' "$W/graphs-odd.out")"
  fig 7 headline "$(grep -m1 '^ncclguard: VERDICT' "$W/graphs-odd.out" | head -c 300)"
  local bad=""
  { [ $ok_rc = 0 ] && [ "$(grep -c 'replays ok' "$W/graphs-ok.out")" = 2 ] && ! grep -q '^ncclguard:' "$W/graphs-ok.out"; } \
    || bad="healthy replays: exit $ok_rc or ncclguard output"
  { [ $odd_rc = 86 ] && [ "$n86" = 2 ] && [ "$(grep -c '^ncclguard: VERDICT: MISMATCH' "$W/graphs-odd.out")" = 2 ]; } \
    || bad="${bad:+$bad; }odd replay: exit $odd_rc, $n86 of 2 ranks exited 86, $(grep -c '^ncclguard: VERDICT: MISMATCH' "$W/graphs-odd.out") MISMATCH headlines"
  grep -q '(in a CUDA graph replay)' "$W/graphs-odd.out" || bad="${bad:+$bad; }the diagnostic does not name the graph replay"
  [ -n "$lat" ] && awk -v l="$lat" 'BEGIN{exit !(l > 2.0)}' && bad="${bad:+$bad; }ranks ended ${lat}s after the odd replay (want < 2 s)"
  [ -n "$bad" ] && { result 7 fail "$bad"; return; }
  result 7 pass "$one; 2 ranks: healthy clean, one rank replaying the other graph: MISMATCH naming the graph replay, both ranks 86 ${lat}s after it"
}

# ---- step 8: nccl-tests, bare and guarded ----
# The build runs in the background from before step 4 (steps 4 to 7 are not timed to the
# nanosecond; the ratios of steps 2 and 3 are taken before it starts); step 8 waits for it.
NT_SRC="" NT_WHY="" NT_PID="" NT_BD="" NT_CUDA="" NT_LD="" NT_GEN="" NT_T0=""
nt_start_build() {
  local d inc lib cc j
  [ -n "$NT_PID" ] || [ -n "$NT_WHY" ] && return 0
  if [ $DRY = 0 ] && [ $GPU = 0 ]; then NT_WHY="no usable GPU (${NEED_GPU})"; return 0; fi
  # NCG_NCCL_TESTS_SRC is the name scripts/nccl-tests.sh and its test read
  local given=${NCCL_TESTS_SRC:-${NCG_NCCL_TESTS_SRC:-}}
  if [ -n "$given" ]; then
    [ -f "$given/src/common.cu" ] && NT_SRC=$(cd "$given" && pwd)
    [ -n "$NT_SRC" ] || { NT_WHY="no nccl-tests checkout: NCCL_TESTS_SRC (or NCG_NCCL_TESTS_SRC) $given has no src/common.cu"; return 0; }
  else
    for d in "$ROOT/nccl-tests" /work/nccl-tests-src; do
      [ -f "$d/src/common.cu" ] && { NT_SRC=$(cd "$d" && pwd); break; }
    done
    [ -n "$NT_SRC" ] || { NT_WHY="no nccl-tests checkout (NCCL_TESTS_SRC, ./nccl-tests, /work/nccl-tests-src)"; return 0; }
  fi
  NT_CUDA=${CUDA_HOME:-/usr/local/cuda}
  if [ ! -x "$NT_CUDA/bin/nvcc" ]; then
    if have nvcc; then NT_CUDA=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")"); else NT_WHY="no nvcc ($NT_CUDA/bin/nvcc, PATH)"; return 0; fi
  fi
  # NCCL_HOME for the build: the headers and the library the runs load (PyTorch's NCCL on the
  # device; on the dry run NVIDIA's headers and library, the CPU NCCL being loaded at run time)
  lib=""
  [ $DRY = 0 ] && [ -e "$NCCL_DIR/libnccl.so.2" ] && lib=$NCCL_DIR/libnccl.so.2
  for d in "$NT_CUDA/lib64" "$NT_CUDA/lib"; do [ -z "$lib" ] && [ -e "$d/libnccl.so.2" ] && lib=$d/libnccl.so.2; done
  [ -n "$lib" ] || { NT_WHY="no libnccl.so.2 to build nccl-tests against (${NCCL_DIR:-no PyTorch NCCL dir}, $NT_CUDA/lib64)"; return 0; }
  local sp=""
  [ -n "$PY" ] && sp=$("$PY" -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null)
  local cands=("$(dirname "$lib")/../include")
  for d in $sp; do cands+=("$d/nvidia/nccl/include"); done
  cands+=("$NT_CUDA/include" /usr/include)
  # headers of NCCL >= 2.28 come with nccl_device.h, which nccl-tests includes: a tree without it
  # is passed over (pip wheels may ship nccl.h alone)
  inc=""
  for d in "${cands[@]}"; do
    [ -e "$d/nccl.h" ] || continue
    if [ -e "$d/nccl_device.h" ] || [ "$(sed -n 's/^#define NCCL_MINOR *\([0-9]*\).*/\1/p' "$d/nccl.h")" -lt 28 ] 2>/dev/null; then inc=$d; break; fi
  done
  [ -n "$inc" ] || { NT_WHY="no usable nccl.h (with nccl_device.h from NCCL 2.28 on; looked in ${cands[*]})"; return 0; }
  rm -rf "$W/nccl-home" && mkdir -p "$W/nccl-home/lib" &&
    ln -s "$(cd "$inc" && pwd)" "$W/nccl-home/include" && ln -s "$lib" "$W/nccl-home/lib/libnccl.so" ||
    { NT_WHY="cannot make $W/nccl-home"; return 0; }
  if [ $DRY = 1 ]; then
    NT_LD="$B/fakenccl:$B/fakecuda"
  else
    NT_LD="$(dirname "$lib"):$CUDART_DIR:$NT_CUDA/lib64"
  fi
  cc=""
  [ $DRY = 0 ] && cc=$(tmo 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d '. \r')
  [[ "$cc" =~ ^[0-9]+$ ]] || cc=90
  NT_GEN=${NVCC_GENCODE:--gencode=arch=compute_$cc,code=sm_$cc}
  NT_BD=${NCCL_TESTS_BUILD:-$W/nccl-tests}
  mkdir -p "$NT_BD" && NT_BD=$(cd "$NT_BD" && pwd)
  j=$(($(nproc) / 2)); [ $j -lt 2 ] && j=2; [ $j -gt 8 ] && j=8
  local secs; secs=$(bound 300)
  NT_T0=$(now)
  (
    timeout -k 5 "$secs" make -C "$NT_SRC/src" -j"$j" BUILDDIR="$NT_BD" CUDA_HOME="$NT_CUDA" \
      NCCL_HOME="$W/nccl-home" NVCC_GENCODE="$NT_GEN" "$NT_BD/all_reduce_perf" "$NT_BD/reduce_scatter_perf" \
      </dev/null >"$W/nt-build.log" 2>&1
    echo $? >"$W/nt-build.rc"
    now >"$W/nt-build.end"
  ) &
  NT_PID=$!
  say "nccl-tests: building $NT_SRC into $NT_BD in the background (make -j$j, $NT_GEN, NCCL from $lib, bound ${secs}s)"
}
# onegpu: tests/gpu/onegpu.c compiled here, else the prebuilt one
ONEGPU=""
build_onegpu() {
  local cc=""
  have gcc && cc=gcc; [ -z "$cc" ] && have cc && cc=cc
  if [ -n "$cc" ] && tmo 60 "$cc" -O2 -shared -fPIC -o "$W/onegpu.so" tests/gpu/onegpu.c -ldl >"$W/onegpu-cc.out" 2>&1; then
    ONEGPU=$W/onegpu.so
  elif [ -e "$B/tests/gpu/onegpu.so" ]; then
    ONEGPU=$B/tests/gpu/onegpu.so
  fi
}
# nt_run OUT PRELOAD BIN ARGS...: one nccl-tests run, output in $W/OUT, returns its status
nt_run() {
  local out=$1 pre=$2 bin=$3; shift 3
  env LD_LIBRARY_PATH="$NT_LD${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" ${pre:+LD_PRELOAD="$pre"} "${NT_ENV[@]}" \
    timeout -k 5 "$(bound 90)" "$NT_BD/${bin}_perf" "${NT_SIZES[@]}" "$@" </dev/null >"$W/$out" 2>&1
}
# nt_parse FILE: "MIN LAT MAX ALGBW BUSBW": the smallest size of the table (8 B; smaller where
# nccl-tests rounds it down to whole elements per rank) and its out-of-place time (us), the
# largest size and its out-of-place bandwidths (GB/s); - where absent
nt_parse() {
  awk '!/^#/ && $1 ~ /^[0-9]+$/ && NF >= 12 {
      if (min == "") { min = $1; lat = $(NF-7) }
      max = $1; alg = $(NF-6); bus = $(NF-5) }
    END { if (min == "") print "- - - - -"; else print min, lat, max, alg, bus }' "$1"
}
# human SIZE: 134217728 -> 128M, 524288 -> 512K, 8 -> 8
human() { awk -v n="$1" 'BEGIN{ if (n >= 1048576 && n % 1048576 == 0) print n/1048576 "M"; else if (n >= 1024 && n % 1024 == 0) print n/1024 "K"; else print n }'; }
declare -a NT_ENV NT_SIZES
step8() {
  S_NAME[8]=nccltests
  nt_start_build
  if [ -n "$NT_WHY" ]; then result 8 skipped "$NT_WHY"; return; fi
  wait "$NT_PID"
  local brc bs
  brc=$(cat "$W/nt-build.rc" 2>/dev/null || echo 1)
  bs=$(awk -v s="$NT_T0" -v e="$(cat "$W/nt-build.end" 2>/dev/null || now)" 'BEGIN{printf "%.1f", e-s}')
  logfile "nccl-tests build (exit $brc, ${bs}s)" "$W/nt-build.log"
  fig 8 src "$NT_SRC"
  figs 8 nccl_tests_version "$(sed -n 's/^#define NCCL_TESTS_VERSION "\(.*\)"/\1/p' "$NT_SRC/src/common.h")"
  fig 8 build_dir "$NT_BD"; fig 8 gencode "$NT_GEN"; fig 8 build_s "$bs"
  case $brc in
    0) ;;
    124 | 137) result 8 skipped "the nccl-tests build did not finish within its bound (${bs}s; $NT_BD keeps what was built)"; return ;;
    *) result 8 fail "the nccl-tests build failed (exit $brc): $(grep -m1 -iE 'error|No rule' "$W/nt-build.log" | head -c 240)"; return ;;
  esac
  local rounds=${NCCL_TESTS_ROUNDS:-2}
  NT_SIZES=(-b 8 -e 128M -f 4)
  [ $DRY = 1 ] && NT_SIZES=(-b 8 -e 1M -f 4 -n 5 -w 1 -c 0)
  fig 8 sizes "${NT_SIZES[*]}"; fig 8 rounds "$rounds"
  [ $DRY = 1 ] && fig 8 stack "CPU NCCL and CPU CUDA runtime (kernels do not run: no data check, small sizes)"
  # can it start here? the first bare run says
  NT_ENV=()
  nt_run nt-start "" all_reduce -g 1
  local rc=$?
  logfile "nccl-tests all_reduce_perf -g 1, bare (exit $rc)" "$W/nt-start"
  if [ $rc -ne 0 ]; then
    local why
    why=$(grep -m1 -E 'undefined symbol|error while loading shared libraries|symbol lookup error|not found' "$W/nt-start" | head -c 240)
    if [ -n "$why" ]; then result 8 skipped "the nccl-tests binaries cannot start on this stack: $why"; return; fi
    why=$(grep -v '^#' "$W/nt-start" | grep -m1 . | head -c 240)
    [ $DRY = 1 ] && { result 8 skipped "nccl-tests does not run on the CPU stack (exit $rc): $why"; return; }
    result 8 fail "all_reduce_perf -g 1 failed bare (exit $rc): $why"; return
  fi
  local code ver
  code=$(sed -n 's/.*nccl-library=\([0-9]*\).*/\1/p' "$W/nt-start" | head -n 1)
  [ -n "$code" ] && ver=$((code / 10000)).$((code % 10000 / 100)).$((code % 100)) && figs 8 nccl_library "$ver"
  # the variants: plain, CUDA graphs, two ranks (threads) on the one GPU
  local variants="plain graph t2" v bin r g args pre bad="" skips="" summary="" t2pre="" t2env=()
  local fold=0
  if [ $DRY = 1 ]; then
    # the CPU NCCL takes two ranks per device; one CPU device, as on the one GPU
    t2env=(FAKECUDA_DEVICES=1) fold=1
  elif [ -n "$code" ] && [ "$code" -ge 23000 ]; then
    t2env=(NCCL_MULTI_RANK_GPU_ENABLE=1)
    [ "$(tmo 20 nvidia-smi -L 2>/dev/null | grep -c '^GPU')" -lt 2 ] && fold=1
  else
    skips="${skips:+$skips; }-t 2: NCCL ${ver:-?} refuses two ranks on one GPU (needs >= 2.30 with NCCL_MULTI_RANK_GPU_ENABLE=1)"
    variants="plain graph"
  fi
  if [ $fold = 1 ]; then
    build_onegpu
    if [ -n "$ONEGPU" ]; then
      t2pre=$ONEGPU
      fig 8 t2_devices "thread 1's device folded onto device 0 by $ONEGPU"
    else
      skips="${skips:+$skips; }-t 2: nccl-tests puts thread 1 on device 1, and tests/gpu/onegpu.c could not be built"
      variants="plain graph"
    fi
  fi
  declare -A sum=() cnt=() NT_MIN=() NT_MAX=()
  local nruns=0
  for v in $variants; do
    case $v in plain) args=(-g 1) ;; graph) args=(-g 1 -G 10) ;; t2) args=(-t 2 -g 1) ;; esac
    NT_ENV=(); [ $v = t2 ] && NT_ENV=("${t2env[@]}")
    local vbad=""
    for bin in all_reduce reduce_scatter; do
      for ((r = 1; r <= rounds; r++)); do
        for g in bare guarded; do
          if [ $(($(date +%s) - T_START)) -ge $((TOTAL - 20)) ]; then
            vbad="total time bound ${TOTAL}s reached before $bin ${args[*]} $g round $r"; break 3
          fi
          local o="nt-$bin-$v-$g-$r"
          pre=$t2pre; [ $v != t2 ] && pre=""
          [ $g = guarded ] && pre="$B/libncclguard.so${pre:+ $pre}"
          nt_run "$o" "$pre" "$bin" "${args[@]}"
          rc=$?
          nruns=$((nruns + 1))
          logfile "$bin ${args[*]} $g round $r (exit $rc)" "$W/$o"
          if [ $rc -ne 0 ]; then
            if [ $g = bare ]; then vbad="bare $bin ${args[*]} exit $rc: $(grep -v '^#' "$W/$o" | grep -m1 . | head -c 160)"
            else bad="${bad:+$bad; }guarded $bin ${args[*]} exit $rc (bare ok): $(grep -v '^#' "$W/$o" | grep -m1 . | head -c 160)"; fi
            break 2
          fi
          grep -q 'cannot be preloaded' "$W/$o" && { bad="${bad:+$bad; }$g $bin ${args[*]}: $(grep -m1 'cannot be preloaded' "$W/$o" | head -c 160)"; break 2; }
          grep -q '^ncclguard:' "$W/$o" && { bad="${bad:+$bad; }guarded $bin ${args[*]}: $(grep -m1 '^ncclguard:' "$W/$o" | head -c 160)"; break 2; }
          if [ $DRY = 0 ] && ! grep -qE '^# *Out of bounds values *: 0 OK' "$W/$o"; then
            bad="${bad:+$bad; }$g $bin ${args[*]}: data check not OK: $(grep -m1 'Out of bounds' "$W/$o")"; break 2
          fi
          local mn lat mx alg bus
          read -r mn lat mx alg bus <<<"$(nt_parse "$W/$o")"
          [ "$mn" != - ] && NT_MIN[$bin.$v]=$mn NT_MAX[$bin.$v]=$mx
          [ "$lat" != - ] && sum[$bin.$v.$g.lat]=$(awk -v a="${sum[$bin.$v.$g.lat]:-0}" -v b="$lat" 'BEGIN{print a+b}') && cnt[$bin.$v.$g.lat]=$((${cnt[$bin.$v.$g.lat]:-0} + 1))
          [ "$alg" != - ] && sum[$bin.$v.$g.alg]=$(awk -v a="${sum[$bin.$v.$g.alg]:-0}" -v b="$alg" 'BEGIN{print a+b}') && cnt[$bin.$v.$g.alg]=$((${cnt[$bin.$v.$g.alg]:-0} + 1))
          [ "$bus" != - ] && sum[$bin.$v.$g.bus]=$(awk -v a="${sum[$bin.$v.$g.bus]:-0}" -v b="$bus" 'BEGIN{print a+b}') && cnt[$bin.$v.$g.bus]=$((${cnt[$bin.$v.$g.bus]:-0} + 1))
        done
      done
    done
    [ -n "$vbad" ] && skips="${skips:+$skips; }$v: $vbad"
    [ -n "$bad" ] && break
    # the figures of this variant: means over the rounds, guarded/bare ratios
    local kb kg what
    for bin in all_reduce reduce_scatter; do
      for what in lat bw; do
        if [ $what = lat ]; then kb=$bin.$v.bare.lat kg=$bin.$v.guarded.lat
        else
          kb=$bin.$v.bare.bus kg=$bin.$v.guarded.bus
          awk -v s="${sum[$kb]:-0}" 'BEGIN{exit !(s > 0)}' || { kb=$bin.$v.bare.alg kg=$bin.$v.guarded.alg; }
        fi
        [ -n "${cnt[$kb]:-}" ] && [ -n "${cnt[$kg]:-}" ] || continue
        local mb mg ratio name
        mb=$(awk -v s="${sum[$kb]}" -v n="${cnt[$kb]}" 'BEGIN{printf "%.3f", s/n}')
        mg=$(awk -v s="${sum[$kg]}" -v n="${cnt[$kg]}" 'BEGIN{printf "%.3f", s/n}')
        ratio=$(awk -v b="$mb" -v g="$mg" 'BEGIN{ if (b > 0) printf "%.4f", g/b; else print "-" }')
        if [ $what = lat ]; then name=${bin}_${v}_lat_${NT_MIN[$bin.$v]}B_us
        else name=${bin}_${v}_${kb##*.}bw_$(human "${NT_MAX[$bin.$v]}")_GBps; fi
        fig 8 "${name}_bare" "$mb"; fig 8 "${name}_guarded" "$mg"
        [ "$ratio" != - ] && fig 8 "${name}_ratio" "$ratio"
        [ $what = lat ] && summary="${summary:+$summary; }$bin $v: ${NT_MIN[$bin.$v]} B latency x$ratio"
        [ $what = bw ] && summary="$summary, ${kb##*.}bw $(human "${NT_MAX[$bin.$v]}") x$ratio"
      done
    done
  done
  fig 8 runs "$nruns"
  [ -n "$skips" ] && fig 8 skipped_parts "$skips"
  [ -n "$bad" ] && { result 8 fail "$bad"; return; }
  [ -z "$summary" ] && { result 8 skipped "no variant ran: $skips"; return; }
  local note=""
  [ $DRY = 1 ] && note="CPU stack, the plumbing only (no GPU work: these ratios are no cost figures): "
  result 8 pass "$note$nruns runs, bare and guarded alternated, guarded/bare: $summary${skips:+ (skipped: $skips)}"
}

STEPS="1 2 3 4 5 6 7 8"
for st in $STEPS; do
  S_NAME[$st]=step$st S_FIGS[$st]="" S_STATUS[$st]=fail S_REASON[$st]="did not finish"
done
for st in $STEPS; do
  t=$(now)
  if [ $(($(date +%s) - T_START)) -ge $((TOTAL - 20)) ]; then
    S_NAME[$st]=$(case $st in 1) echo versions ;; 2) echo ddp1 ;; 3) echo enqueue ;; 4) echo multirank ;;
      5) echo stack ;; 6) echo torchrun ;; 7) echo graphs ;; 8) echo nccltests ;; esac)
    result $st skipped "total time bound ${TOTAL}s reached"
  else
    # nccl-tests builds while steps 4 to 7 run
    [ $st = 4 ] && nt_start_build
    say "step $st ..."
    step$st
  fi
  S_SECS[$st]=$(elapsed "$t")
done
# a background build still running (its step skipped by the time bound) ends by its own bound
[ -n "$NT_PID" ] && wait "$NT_PID" 2>/dev/null

# ---- the summary ----
np=0 nf=0 ns=0
{
  printf '{"format":"ncclguard-gpu-check","version":1,"date":"%s","dry_run":%s,"host":"%s","wall_s":%s,' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$([ $DRY = 1 ] && echo true || echo false)" "$(json_esc "$(hostname)")" \
    "$(($(date +%s) - T_START))"
  printf '"commit":"%s",' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf '"versions":{%s},"steps":[' "${S_FIGS[1]}"
  for st in $STEPS; do
    case ${S_STATUS[$st]} in pass) np=$((np+1)) ;; fail) nf=$((nf+1)) ;; *) ns=$((ns+1)) ;; esac
    [ $st -gt 1 ] && printf ','
    printf '{"step":%d,"name":"%s","status":"%s","reason":"%s","seconds":%s,"figures":{%s}}' \
      $st "${S_NAME[$st]}" "${S_STATUS[$st]}" "$(json_esc "${S_REASON[$st]}")" "${S_SECS[$st]}" "${S_FIGS[$st]}"
  done
  printf '],"summary":{"pass":%d,"fail":%d,"skipped":%d}}\n' $np $nf $ns
} >"$JSON"
# On the device tool only 8 files come back from $OUT, so there the raw outputs travel as one
# archive, work.tar.gz (without the nccl-tests build), and work/ is removed
if [ -n "${OUT:-}" ] && [ -d "$OUT" ] && [ "$OUTDIR" = "$(cd "$OUT" && pwd)" ]; then
  tar -czf "$OUTDIR/work.tar.gz" --exclude=./nccl-tests --exclude=./nccl-home -C "$W" . 2>>"$LOG" && rm -rf "$W"
  say "raw outputs: $OUTDIR/work.tar.gz"
fi
say "done in $(($(date +%s) - T_START))s: $np passed, $nf failed, $ns skipped; $JSON and $LOG"
[ $nf -eq 0 ]
