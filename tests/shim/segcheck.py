"""Parses the text dumps of segdump.h (tests/shim) for the t_*.sh assertions."""
import re
import sys


def _kv(line):
    return dict(re.findall(r"(\w+)=(\S*)", line))


def load(path):
    seg = {"proc": None, "comms": [], "errors": []}
    cur = None
    with open(path) as f:
        for line in f:
            kind = line.split(" ", 1)[0]
            kv = _kv(line)
            if kind == "noseg":
                return None
            if kind == "proc":
                seg["proc"] = kv
            elif kind == "comm":
                c = dict(kv, colls=[], p2ps=[])
                for k in ("rank", "nranks", "coll_seq", "p2p_seq", "origin", "state", "slot"):
                    c[k] = int(c[k])
                seg["comms"].append(c)
                cur = c  # records follow their comm line (ids may repeat: InitAll)
            elif kind in ("coll", "p2p"):
                if "err" in kv:
                    seg["errors"].append(line.strip())
                    continue
                for k in list(kv):
                    if k not in ("id", "digest"):
                        kv[k] = int(kv[k])
                cur["colls" if kind == "coll" else "p2ps"].append(kv)
    return seg


def check(cond, msg):
    if not cond:
        print("FAIL: " + msg)
        sys.exit(1)
