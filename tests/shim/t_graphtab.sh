# The CUDA graph tables as plain data (interpose/shim/graphtab.c): captured call lists (growth,
# concatenation, references) and the pointer map (replace, delete, tombstone churn, growth),
# against a model.
. "$NCG_ROOT/tests/shim/lib.sh"
need "$NCG_BUILD/tests/shim/graphtab_test"
"$NCG_BUILD/tests/shim/graphtab_test" || fail "graphtab_test"
