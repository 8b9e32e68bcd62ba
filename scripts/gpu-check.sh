#!/usr/bin/env bash
# gpu-check.sh [--dry-run] [OUTDIR]: ncclguard on a GPU, in one prepared call (issue #15). Run
# from the repository root on the device machine with build/ carried from the build machine
# (nothing of ncclguard is compiled here; a small C probe is, when a compiler is present, else
# build/tests/gpu/gpuprobe is used). Writes gpu-check.log and gpu-check.json under OUTDIR (else
# $OUT, else build/gpu-check); every step passes, fails or is skipped with a reason:
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
# --dry-run: the same steps on this machine with the CPU NCCL (build/fakenccl) and the CPU CUDA
# runtime (build/fakecuda); what needs PyTorch or a GPU is skipped, saying so; step 4 runs the C
# app tests/apps/torchlike.c instead of PyTorch. Bounded: each step by `timeout`, the whole by
# GPU_CHECK_TOTAL_S (default 450 s). Exit 0 when no step failed, 1 otherwise, 2 on usage.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$PWD
DRY=0 OUTDIR=""
for a in "$@"; do
  case "$a" in
    --dry-run) DRY=1 ;;
    -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
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
for p in ${GPU_CHECK_PYTHON:-} python3 python; do
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
[ $DRY = 0 ] && [ $TORCH = 0 ] && NEED_GPU="no Python with PyTorch found (tried ${GPU_CHECK_PYTHON:-} python3 python)"
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
    result 4 pass "dry run (PyTorch part skipped: no torch here): torchlike on the CUDA-aware CPU NCCL: incident -> both ranks 86 with MISMATCH in ${inc_wall}s, healthy clean, fail -> the app's own error (exit $fail_rc)"
    return
  fi
  if [ $TORCH = 0 ] || [ $GPU = 0 ]; then result 4 skipped "$NEED_GPU"; return; fi
  if grep -qi 'exclusive' "$W/smi.txt" 2>/dev/null; then result 4 skipped "the GPU's compute mode is exclusive: one process per GPU"; return; fi
  if nccl_ge 2 30; then
    mode=real pre="$B/libncclguard.so"
    envs=(NCCL_MULTI_RANK_GPU_ENABLE=1 NCCL_DEBUG=WARN)
    fig 4 nccl "PyTorch's NCCL $TORCH_NCCL with NCCL_MULTI_RANK_GPU_ENABLE=1"
  else
    mode=cpu pre="$B/libncclguard.so $B/fakenccl/libnccl.so.2"
    envs=(FAKENCCL_CUDA=1)
    fig 4 nccl "CPU NCCL in CUDA-aware mode under PyTorch (its own NCCL $TORCH_NCCL < 2.30 refuses 2 ranks per GPU)"
    if have nm && [ -n "$(kv "$W/torch.txt" libnccl_path)" ]; then
      local tc miss
      tc=$(dirname "$("$PY" -c 'import torch; print(torch.__file__)')")/lib/libtorch_cuda.so
      miss=$(comm -23 <(nm -D --undefined-only "$tc" 2>/dev/null | awk '{print $NF}' | grep '^nccl' | sort -u) \
        <(nm -D --defined-only "$B/fakenccl/libnccl.so.2" | awk '{print $NF}' | sort -u) | tr '\n' ' ')
      fig 4 fake_missing_symbols "${miss:-none}"
    fi
  fi
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

for st in 1 2 3 4 5; do
  S_NAME[$st]=step$st S_FIGS[$st]="" S_STATUS[$st]=fail S_REASON[$st]="did not finish"
  t=$(now)
  if [ $(($(date +%s) - T_START)) -ge $((TOTAL - 20)) ]; then
    S_NAME[$st]=$(case $st in 1) echo versions ;; 2) echo ddp1 ;; 3) echo enqueue ;; 4) echo multirank ;; 5) echo stack ;; esac)
    result $st skipped "total time bound ${TOTAL}s reached"
  else
    say "step $st ..."
    step$st
  fi
  S_SECS[$st]=$(elapsed "$t")
done

# ---- the summary ----
np=0 nf=0 ns=0
{
  printf '{"format":"ncclguard-gpu-check","version":1,"date":"%s","dry_run":%s,"host":"%s","wall_s":%s,' \
    "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$([ $DRY = 1 ] && echo true || echo false)" "$(json_esc "$(hostname)")" \
    "$(($(date +%s) - T_START))"
  printf '"commit":"%s",' "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  printf '"versions":{%s},"steps":[' "${S_FIGS[1]}"
  for st in 1 2 3 4 5; do
    case ${S_STATUS[$st]} in pass) np=$((np+1)) ;; fail) nf=$((nf+1)) ;; *) ns=$((ns+1)) ;; esac
    [ $st -gt 1 ] && printf ','
    printf '{"step":%d,"name":"%s","status":"%s","reason":"%s","seconds":%s,"figures":{%s}}' \
      $st "${S_NAME[$st]}" "${S_STATUS[$st]}" "$(json_esc "${S_REASON[$st]}")" "${S_SECS[$st]}" "${S_FIGS[$st]}"
  done
  printf '],"summary":{"pass":%d,"fail":%d,"skipped":%d}}\n' $np $nf $ns
} >"$JSON"
say "done in $(($(date +%s) - T_START))s: $np passed, $nf failed, $ns skipped; $JSON and $LOG"
[ $nf -eq 0 ]
