#!/usr/bin/env bash
# Every relative link in README.md, CONTRIBUTING.md, BENCHMARKS.md and docs/**/*.md resolves
# inside the repository: the file or directory exists, is not ignored by git (a clone would not
# have it), and a #fragment names a heading (GitHub's anchor) or an <a id/name> of the target.
# A link that leaves the repository (../shared/..., an absolute path) fails. URLs with a scheme
# (https:, mailto:) are not checked. Links inside code (fenced blocks, `spans`) are not links.
# First proves itself on a scratch tree with a broken link and one leaving the tree (both must
# be reported), then checks the real documents. Exit 0 pass, 77 skip (no python3), 1 fail.
set -u
cd "${NCG_ROOT:-$(dirname "$0")/../..}" || exit 1
command -v python3 >/dev/null 2>&1 || { echo "python3 not found"; exit 77; }

read -r -d '' CHECK <<'PY'
import os, re, subprocess, sys, unicodedata

root = os.path.realpath(sys.argv[1])
files = sys.argv[2:]
FENCE = re.compile(r'^\s*(```|~~~)')
INLINE = re.compile(r'(`+)(?:(?!\1).)+?\1')
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)')
REFDEF = re.compile(r'^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$')
HEADING = re.compile(r'^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$')
HTMLID = re.compile(r'<a\s+(?:id|name)="([^"]+)"')

def prose(path):
    """The lines of a markdown file outside fenced code, inline code spans removed."""
    out, fenced = [], False
    with open(path, encoding='utf-8') as f:
        for n, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                out.append((n, INLINE.sub('', line.rstrip('\n'))))
    return out

def slug(text):
    """GitHub's heading anchor: markup dropped, lower case, punctuation but - and _ dropped."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)
    text = text.replace('`', '').lower()
    keep = []
    for ch in text:
        cat = unicodedata.category(ch)
        if ch in '-_' or cat[0] in 'LN' or cat == 'Mn':
            keep.append(ch)
        elif ch == ' ':
            keep.append('-')
    return ''.join(keep)

anchor_cache = {}
def anchors(path):
    if path not in anchor_cache:
        seen, names = {}, set()
        with open(path, encoding='utf-8') as f:
            fenced = False
            for line in f:
                if FENCE.match(line):
                    fenced = not fenced
                    continue
                if fenced:
                    continue
                names.update(HTMLID.findall(line))
                m = HEADING.match(line)
                if m:
                    s = slug(m.group(2))
                    k = seen.get(s, 0)
                    seen[s] = k + 1
                    names.add(s if k == 0 else '%s-%d' % (s, k))
        anchor_cache[path] = names
    return anchor_cache[path]

def ignored(path):
    try:
        r = subprocess.run(['git', '-C', root, 'check-ignore', '-q', path],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return r.returncode == 0
    except OSError:
        return False

bad = 0
def fail(f, n, target, why):
    global bad
    bad += 1
    print('%s:%d: %s: %s' % (os.path.relpath(f, root), n, target, why))

checked = 0
for f in files:
    f = os.path.realpath(f)
    for n, line in prose(f):
        targets = LINK.findall(line)
        m = REFDEF.match(line)
        if m:
            targets.append(m.group(1))
        for t in targets:
            if re.match(r'^[A-Za-z][A-Za-z0-9+.-]*:', t):
                continue                    # https:, mailto: ...: not a relative link
            checked += 1
            path, _, frag = t.partition('#')
            if path.startswith('/'):
                fail(f, n, t, 'absolute path (write it relative to this file)')
                continue
            dest = os.path.realpath(os.path.join(os.path.dirname(f), path)) if path else f
            if dest != root and not dest.startswith(root + os.sep):
                fail(f, n, t, 'leaves the repository')
                continue
            if not os.path.exists(dest):
                fail(f, n, t, 'no such file or directory')
                continue
            if ignored(dest):
                fail(f, n, t, 'ignored by git: a clone does not have it')
                continue
            if frag and dest.endswith('.md') and frag not in anchors(dest):
                fail(f, n, t, 'no heading or anchor "%s" in %s' % (frag, os.path.relpath(dest, root)))
print('links: %d relative links in %d files, %d broken' % (checked, len(files), bad))
sys.exit(1 if bad else 0)
PY

# 1. The checker must catch a broken link, a missing anchor and links leaving the tree.
scratch=$(mktemp -d /tmp/ncg-links.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/repo/docs" "$scratch/shared"
echo '# Outside' >"$scratch/shared/INCIDENT.md"
printf '# Guide\n\n## The `status` endpoint (HTTP)\n\nSee [the top](../README.md#top-title).\n' \
  >"$scratch/repo/docs/guide.md"
cat >"$scratch/repo/README.md" <<'EOF'
# Top title

Good: [guide](docs/guide.md), [anchor](docs/guide.md#the-status-endpoint-http), [web](https://example.com).
`[code](nowhere.md)` is code, not a link.
Broken: [gone](docs/missing.md) and [bad anchor](docs/guide.md#no-such-heading).
Outside: [incident](../shared/INCIDENT.md), [abs](/etc/passwd).

[ref]: docs/also-missing.md
EOF
out=$(python3 -c "$CHECK" "$scratch/repo" "$scratch/repo/README.md" "$scratch/repo/docs/guide.md")
rc=$?
echo "$out" | sed 's/^/  self-test: /'
fails=0
[ "$rc" = 1 ] || { echo "FAIL: the checker passed a tree with broken links (exit $rc)"; fails=1; }
for want in 'docs/missing.md: no such file' 'no heading or anchor "no-such-heading"' \
  '../shared/INCIDENT.md: leaves the repository' '/etc/passwd: absolute path' \
  'docs/also-missing.md: no such file' ' 5 broken'; do
  case $out in *"$want"*) ;; *) echo "FAIL: the self-test did not report: $want"; fails=1 ;; esac
done
case $out in *nowhere.md*) echo "FAIL: a link inside a code span was checked"; fails=1 ;; esac
[ $fails = 0 ] || exit 1

# 2. The real documents.
docs=(README.md CONTRIBUTING.md BENCHMARKS.md)
while IFS= read -r f; do docs+=("$f"); done < <(find docs -name '*.md' | sort)
python3 -c "$CHECK" "$PWD" "${docs[@]}"
