#!/usr/bin/env bash
# No function in interpose/ longer than 120 lines (issue 34: a function you can read at once;
# split by meaning). Counted from the line of its name to its closing brace, the project's
# brace style (clang-format, Linux braces: a definition's "{" and "}" at column 0). The check
# is first run on a sample built to break it, which must fail.
set -u
cd "$NCG_ROOT"
MAX=120
# long_functions FILES...: "LINES FILE:LINE NAME" for each function over MAX lines
long_functions() {
  awk -v max=$MAX '
    FNR == 1 { start = 0; inf = 0 }
    !inf && /^[a-zA-Z_].*\(/ && !/;[ \t]*$/ { sig = $0; start = FNR }
    !inf && /^\{/ && start { inf = 1; next }
    inf && /^\}/ {
      name = sig; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
      if (FNR - start + 1 > max) print FNR - start + 1, FILENAME ":" start, name
      inf = 0; start = 0; next
    }
    !inf && /^[ \t]*$/ { start = 0 }' "$@"
}
mkdir -p "$NCG_TMP/funclen"
{ printf 'static int ncg_long_sample(int x)\n{\n'
  for i in $(seq 1 $MAX); do printf '    x += %d;\n' "$i"; done
  printf '    return x;\n}\n\nstatic int ncg_short_sample(int x)\n{\n    return x;\n}\n'; } >"$NCG_TMP/funclen/s.c"
[ "$(long_functions "$NCG_TMP/funclen/s.c" | awk '{print $3}')" = ncg_long_sample ] ||
  { echo "FAIL: the length check does not see a $((MAX + 3))-line function in a sample"; exit 1; }
bad=0
while read -r n where name; do
  echo "FAIL: $name is $n lines (over $MAX) at $where"
  bad=1
done < <(long_functions interpose/*/*.c interpose/*/*.h)
[ $bad = 0 ] || exit 1
echo "ok: no function in interpose/ over $MAX lines"
