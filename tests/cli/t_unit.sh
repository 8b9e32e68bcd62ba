#!/usr/bin/env bash
# Unit tests of the CLI's pure parts (tests/cli/unit.c): seqlock reader, comm analysis, JSON reader.
. "$(dirname "$0")/lib.sh"
need "$NCG_BUILD/tests/cli/unit"
"$NCG_BUILD/tests/cli/unit"
