"""Checks symbolized lines "<path> 0x<modoff> <symbolized>" (tests/shim/symtest.c) against the
module's own symbol tables (nm -S): a printed name must be a symbol that contains the address.
Prints "checked N named M wrong K" and every wrong line; exit 1 when K > 0."""
import re, subprocess, sys

SYM = re.compile(r"^(\S+)\+0x([0-9a-f]+) \((\S+)\+0x([0-9a-f]+)\)")
tables = {}


def table(path):
    if path not in tables:
        syms = {}
        for flags in (["-S"], ["-D", "-S"]):
            out = subprocess.run(["nm", "--defined-only"] + flags + [path], capture_output=True,
                                 text=True).stdout
            for ln in out.splitlines():
                f = ln.split()
                if len(f) == 4:
                    syms.setdefault(f[3].split("@")[0], []).append((int(f[0], 16), int(f[1], 16)))
        tables[path] = syms
    return tables[path]


checked = named = wrong = 0
for ln in sys.stdin:
    path, off, text = ln.rstrip("\n").split(" ", 2)
    checked += 1
    m = SYM.match(text)
    if not m:
        continue
    named += 1
    name, soff, modoff = m.group(1), int(m.group(2), 16), int(m.group(4), 16)
    if int(off, 16) != modoff:
        wrong += 1
        print("offset differs:", ln.rstrip())
        continue
    start = modoff - soff
    if not any(v == start and soff < size for v, size in table(path).get(name, [])):
        wrong += 1
        print("outside its symbol:", ln.rstrip())
print("checked %d named %d wrong %d" % (checked, named, wrong))
sys.exit(1 if wrong else 0)
