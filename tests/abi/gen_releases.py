#!/usr/bin/env python3
"""Produces tests/abi/releases/nccl-<X.Y>.txt, ncclguard's reduced record of one NCCL release's
host API, from NVIDIA's public NCCL repository (github NVIDIA/nccl, every release tagged): for
each minor release from 2.18 on, the newest tag v2.Y.Z-N's src/nccl.h.in is read and reduced to
the facts an interposer depends on: each host function's return and parameter types (names
dropped), the handle typedefs, the enums with their values, and the layout of every struct
(ncclConfig_t, ncclSimInfo_t, ncclUniqueId, the signal descriptor). Nothing of NVIDIA's text is
kept beyond these declarations' types. Run by hand when a release appears (needs a clone):

    python3 tests/abi/gen_releases.py /path/to/nccl.git [first_minor [last_minor]]

t_releases.sh checks api.def against the files; docs/nccl-releases.md says how."""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "releases")


def git(repo, *args):
    return subprocess.run(["git", "--git-dir", repo] + list(args), check=True,
                          capture_output=True, text=True).stdout


def newest_tags(repo, first, last):
    """{minor: (tag, 'X.Y.Z')}: the newest tag of each 2.Y release."""
    best = {}
    for t in git(repo, "tag").split():
        m = re.fullmatch(r"v2\.(\d+)\.(\d+)-(\d+)", t)
        if not m:
            continue
        y, z, n = map(int, m.groups())
        if first <= y <= last and (y not in best or (z, n) > best[y][0]):
            best[y] = ((z, n), t, "2.%d.%d" % (y, z))
    return {y: (v[1], v[2]) for y, v in best.items()}


def preprocess(text):
    """Comments out; conditionals resolved as a C build with CUDA >= 11.8 sees them (the first
    branch), except __cplusplus (false); #define'd numbers kept for array sizes."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    text = re.sub(r"\\\n", " ", text)  # continued lines (NCCL_CONFIG_INITIALIZER) joined
    out, stack, defines = [], [], {}
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("#"):
            d = s[1:].strip()
            if re.match(r"if(n?def)?\b", d):
                parent = all(k for k, _ in stack)
                take = "__cplusplus" not in d and not d.startswith("ifndef NCCL_H_")
                if d.startswith("ifndef NCCL_H_"):
                    take = True
                stack.append((parent and take, take))
            elif d.startswith("el"):
                k, taken = stack.pop()
                parent = all(k for k, _ in stack)
                stack.append((parent and not taken, True))
            elif d.startswith("endif"):
                stack.pop()
            elif d.startswith("define") and all(k for k, _ in stack):
                m = re.match(r"define\s+(\w+)\s+(\d+)\s*$", d)
                if m:
                    defines[m.group(1)] = m.group(2)
            continue
        if all(k for k, _ in stack):
            out.append(line)
    body = "\n".join(out)
    body = strip_attributes(body)
    for k, v in defines.items():
        body = re.sub(r"\b%s\b" % k, v, body)
    return body


def strip_attributes(s):
    while True:
        i = s.find("__attribute__")
        if i < 0:
            return s
        j = s.index("(", i)
        depth = 0
        for k in range(j, len(s)):
            depth += {"(": 1, ")": -1}.get(s[k], 0)
            if depth == 0:
                break
        s = s[:i] + s[k + 1:]


def statements(body):
    """Top-level statements (ending with ';' outside braces), whitespace collapsed."""
    out, cur, depth = [], [], 0
    for ch in body:
        cur.append(ch)
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == ";" and depth == 0:
            out.append(" ".join("".join(cur).split()))
            cur = []
    return out


def norm_type(tokens):
    base = [t for t in tokens if t != "*"]
    stars = tokens.count("*")
    return " ".join(base) + (" " + "*" * stars if stars else "")


def param_type(p):
    toks = re.findall(r"\w+|\*|\[\]", p)
    if toks in ([], ["void"]):
        return None
    if len(toks) < 2 or not re.fullmatch(r"\w+", toks[-1]):
        raise ValueError("unnamed parameter: %r" % p)
    toks = toks[:-1]
    if "[]" in toks:
        raise ValueError("array parameter: %r" % p)
    return norm_type(toks)


def reduce_header(text):
    body = preprocess(text)
    types, structs, enums, fns = [], [], [], []
    for st in statements(body):
        st = st.rstrip(";").strip()
        m = re.fullmatch(r"typedef struct (\w+) ?\* ?(\w+)", st)
        if m:
            types.append("type %s = struct %s *" % (m.group(2), m.group(1)))
            continue
        m = re.fullmatch(r"typedef struct (\w+) (\w+)", st)  # 2.30.4's ncclParamHandle_t
        if m:
            types.append("type %s = struct %s" % (m.group(2), m.group(1)))
            continue
        m = re.fullmatch(r"typedef struct ?(\w*) ?\{(.*)\} ?(\w+)", st)
        if m:
            fields = []
            for f in m.group(2).split(";"):
                f = f.strip()
                if not f:
                    continue
                fm = re.fullmatch(r"(.+?)\s*\b(\w+)\s*(\[\s*\d+\s*\])?", f)
                ftype = norm_type(re.findall(r"\w+|\*", fm.group(1)))
                fields.append("%s %s%s" % (ftype, fm.group(2), (fm.group(3) or "").replace(" ", "")))
            structs.append("struct %s %s { %s; }" % (m.group(3), m.group(1) or "-", "; ".join(fields)))
            continue
        m = re.fullmatch(r"typedef enum ?(\w*) ?\{(.*)\} ?(\w+)", st)
        if m:
            vals = [" ".join(v.split()) for v in m.group(2).split(",") if v.strip()]
            enums.append("enum %s { %s }" % (m.group(3), ", ".join(vals)))
            continue
        m = re.fullmatch(r"(.+?)\s*\b(p?nccl\w+) ?\((.*)\)", st)
        if m and not st.startswith("typedef"):
            if m.group(2).startswith("p"):
                continue
            ret = norm_type(re.findall(r"\w+|\*", m.group(1)))
            params = [param_type(p) for p in m.group(3).split(",")] if m.group(3).strip() else []
            params = [p for p in params if p is not None] or ["void"]
            line = "fn %s %s(%s)" % (ret, m.group(2), ", ".join(params))
            if line not in fns:  # 2.20 declares ncclCommRegister/Deregister twice
                fns.append(line)
    return types, structs, enums, fns


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    repo = sys.argv[1]
    if os.path.isdir(os.path.join(repo, ".git")):
        repo = os.path.join(repo, ".git")
    first = int(sys.argv[2]) if len(sys.argv) > 2 else 18
    last = int(sys.argv[3]) if len(sys.argv) > 3 else 99
    os.makedirs(OUT, exist_ok=True)
    for y, (tag, ver) in sorted(newest_tags(repo, first, last).items()):
        types, structs, enums, fns = reduce_header(git(repo, "show", tag + ":src/nccl.h.in"))
        path = os.path.join(OUT, "nccl-2.%d.txt" % y)
        with open(path, "w") as f:
            f.write("# NCCL %s: the host API of nccl.h reduced to types (tag %s, src/nccl.h.in),\n"
                    "# written by tests/abi/gen_releases.py; read by tests/abi/releases.py.\n"
                    % (ver, tag))
            f.write("release %s\n" % ver)
            for line in types + structs + enums + fns:
                f.write(line + "\n")
        print("%s: %s, %d functions, %d structs, %d enums" % (path, tag, len(fns), len(structs),
                                                             len(enums)))


if __name__ == "__main__":
    main()
