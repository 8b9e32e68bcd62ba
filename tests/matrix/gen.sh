#!/usr/bin/env bash
# The divergence matrix's case list (tests/matrix/README.md), one case a line:
#   ID LAYOUT NRANKS KIND FAULT COMPLETE   (an ID ending in .v0: rank 0 applies the fault)
# LAYOUT proc (one process per rank, under ncg-launch) or thread (mx -T N); COMPLETE sync, or
# event / group (only meaningful, and only run, in the asynchronous NCCL mode). Every kind
# crossed with every fault that applies to it (and none); the process layout takes each pair
# once, on 2, 3, 4 or 8 ranks in turn; the thread layout the faults that stay inside the
# process (2 and 4 ranks); event and group completion a few faults per kind (4 ranks).
# Usage: gen.sh [--sample] [--mode sync|async]
#   --sample  a fixed subset (every kind and every fault at least once, 2-4 ranks)
#   --mode M  only the cases run in mode M (sync: COMPLETE=sync only)
# Same output for the same script: IDs are stable (KIND.FAULT.LAYOUT+NRANKS[.ev|.gr]).
set -u
sample=0 mode=""
while [ $# -gt 0 ]; do
  case "$1" in
    --sample) sample=1 ;;
    --mode) mode=$2; shift ;;
    *) echo "usage: gen.sh [--sample] [--mode sync|async]" >&2; exit 2 ;;
  esac
  shift
done

KINDS="coll_allreduce coll_broadcast coll_reduce coll_allgather coll_reducescatter coll_alltoall
coll_gather coll_scatter p2p_ring p2p_pair p2p_gather p2p_scatter p2p_alltoall mixed split dup"
FAULTS="none swap skip extra count dtype op root peer comm exit crash ncclerr recvrecv"

short() {
  case $1 in
    coll_allreduce) echo ar ;; coll_broadcast) echo bcast ;; coll_reduce) echo reduce ;;
    coll_allgather) echo ag ;; coll_reducescatter) echo rs ;; coll_alltoall) echo a2a ;;
    coll_gather) echo gather ;; coll_scatter) echo scatter ;; p2p_ring) echo ring ;;
    p2p_pair) echo pair ;; p2p_gather) echo pgather ;; p2p_scatter) echo pscatter ;;
    p2p_alltoall) echo pa2a ;; *) echo "$1" ;;
  esac
}

# applies KIND FAULT: whether the fault means something for the kind.
applies() {
  case $2 in
    none | skip | extra | count | dtype | comm | exit | crash | ncclerr) return 0 ;;
    # two calls to put in the other order (dup: this iteration's and the next one's, on the
    # other comm; a group's calls reversed); a one-call collective has none
    swap) case $1 in mixed | split | dup | p2p_pair | p2p_ring | p2p_alltoall) return 0 ;; esac ;;
    op) case $1 in coll_allreduce | coll_reduce | coll_reducescatter | mixed | split | dup) return 0 ;; esac ;;
    root) case $1 in coll_broadcast | coll_reduce | coll_gather | coll_scatter | p2p_gather | p2p_scatter) return 0 ;; esac ;;
    # p2p_gather: the victim's only peer is the root (that is "root")
    peer) case $1 in p2p_ring | p2p_pair | p2p_scatter | p2p_alltoall | mixed) return 0 ;; esac ;;
    recvrecv) [ "$1" = p2p_pair ] && return 0 ;;
  esac
  return 1
}

# fits KIND FAULT N: N ranks make the case what it says (a pair for every rank, another peer,
# a split whose victim's half has two ranks).
fits() {
  case $1 in p2p_pair) [ $(($3 % 2)) = 0 ] || return 1 ;; split) [ "$3" -ge 3 ] || return 1 ;; esac
  case $2 in peer) [ "$3" -ge 3 ] || return 1 ;; esac
  return 0
}

# pick I KIND FAULT SIZES...: the (I mod count)-th size that fits.
pick() {
  local i=$1 k=$2 f=$3 ok=() n
  shift 3
  for n in "$@"; do fits "$k" "$f" "$n" && ok+=("$n"); done
  echo "${ok[$((i % ${#ok[@]}))]}"
}

all_cases() {
  local ki=0 fi k f n
  for k in $KINDS; do
    fi=0
    for f in $FAULTS; do
      if applies "$k" "$f"; then
        n=$(pick $((ki + fi)) "$k" "$f" 2 3 4 8)
        echo "$(short "$k").$f.p$n proc $n $k $f sync"
      fi
      fi=$((fi + 1))
    done
    ki=$((ki + 1))
  done
  # threads: the faults that stay inside the process (exit, crash and ncclerr end every rank)
  ki=0
  for k in $KINDS; do
    fi=0
    for f in none skip count swap; do
      if applies "$k" "$f"; then
        n=$(pick $((ki + fi)) "$k" "$f" 4 2)
        echo "$(short "$k").$f.t$n thread $n $k $f sync"
      fi
      fi=$((fi + 1))
    done
    ki=$((ki + 1))
  done
  # rank 0 applies the fault: zero-config, its process hosts the checker, which must stay
  # for the others whether it skips a call and exits, crashes or fails (ID suffix .v0)
  for k in coll_allreduce coll_broadcast p2p_ring p2p_pair mixed split; do
    for f in skip exit crash ncclerr; do
      n=4
      [ "$k" = split ] && n=3
      echo "$(short "$k").$f.p$n.v0 proc $n $k $f sync"
    done
  done
  # asynchronous mode: the host waits on a CUDA event, or issues each iteration as one group
  for k in $KINDS; do
    n=$(pick 0 "$k" none 4)
    for f in none skip count; do
      echo "$(short "$k").$f.p$n.ev proc $n $k $f event"
    done
    for f in none count; do
      echo "$(short "$k").$f.p$n.gr proc $n $k $f group"
    done
  done
}

SAMPLE="ar.op.p4 bcast.root.p2 reduce.none.p4 ag.extra.p4 rs.dtype.p3 a2a.count.p3 gather.exit.p2
scatter.crash.p4 ring.peer.p4 pair.recvrecv.p4 pair.swap.p4 pgather.skip.p2 pscatter.comm.p2
pa2a.ncclerr.p2 pa2a.dtype.p3 mixed.swap.p4 mixed.peer.p3 split.swap.p3 split.count.p3 dup.swap.p2
dup.op.p3 ar.count.t4 ring.swap.t2 dup.swap.t4 split.swap.t4 ar.skip.p4.ev ring.count.p4.gr ar.exit.p4.v0
mixed.skip.p4.v0"

all_cases | while read -r id layout n kind fault complete; do
  [ "$mode" = sync ] && [ "$complete" != sync ] && continue
  if [ $sample = 1 ]; then
    case " $(echo $SAMPLE) " in *" $id "*) ;; *) continue ;; esac
  fi
  echo "$id $layout $n $kind $fault $complete"
done
