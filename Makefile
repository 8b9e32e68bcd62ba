# ncclguard: one Makefile, everything into $(BUILD)/.
# Knobs: SANITIZER=address|undefined|address,undefined|thread  WERROR=1  CC=...
# Each component adds its rules in its own fragment (included below).

CC ?= cc
SANITIZER ?=
ifeq ($(SANITIZER),)
BUILD ?= build
SANFLAGS :=
else
BUILD ?= build-$(subst $(comma),-,$(SANITIZER))
SANFLAGS := -fsanitize=$(SANITIZER) -fno-omit-frame-pointer
endif
comma := ,

WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ifeq ($(WERROR),1)
WARN += -Werror
endif
# ThreadSanitizer does not model standalone fences (the seqlock readers of the segment use
# them); gcc warns about each. The pairs TSan must see are release/acquire atomics.
ifneq ($(findstring thread,$(SANITIZER)),)
WARN += -Wno-tsan
endif
CFLAGS ?= -O2 -g
# interpose/ by layer, each including only those below it (tests/shim/t_layers.sh checks):
# common (config, log, hash) <- shim (the in-process recorder) <- inspect (stacks, symbols)
# <- checker (client, coordinator, wire, verdicts, diagnostics, actions) <- cli (the command).
NCG_INC := -Iinterpose/common -Iinterpose/shim -Iinterpose/inspect -Iinterpose/checker
BASE_CFLAGS := -std=gnu11 -fPIC -fvisibility=hidden $(WARN) $(SANFLAGS) -Iinclude $(NCG_INC)
BASE_LDFLAGS := $(SANFLAGS)
PREFIX ?= /usr/local

# Components append to these.
ALL_TARGETS :=
TEST_BINS :=
BENCH_TARGETS :=

.PHONY: all test bench demo install clean deps format format-check
all:

# Order matters: checker.mk appends to SHIM_SRCS before shim.mk uses it in rules.
-include tests/fakenccl/fakenccl.mk
-include tests/fakecuda/fakecuda.mk
-include interpose/checker/checker.mk
-include interpose/shim/shim.mk
-include interpose/cli/cli.mk
-include interpose/inspect/inspect.mk
-include tests/gpu/gpu.mk
-include tests/nvml/nvml.mk

all: $(ALL_TARGETS) $(TEST_BINS)

# Build dependencies: installed by the project's own script when missing (idempotent, quick).
# Checked while the Makefile is read, before any rule runs, so that `make -j` never compiles
# against a header that is still being installed.
ifeq ($(filter clean format format-check,$(MAKECMDGOALS)),)
NCG_DEPS_RC := $(shell scripts/install-deps.sh --check-or-install 1>&2; echo $$?)
ifneq ($(NCG_DEPS_RC),0)
$(error build dependencies are missing and scripts/install-deps.sh could not install them)
endif
endif
deps-check:
	@scripts/install-deps.sh --check-or-install

# TESTS="tests/x/t_a.sh ..." runs only those scripts.
test: all
	@NCG_BUILD=$(BUILD) NCG_SANITIZER=$(SANITIZER) tests/run.sh $(TESTS)

bench: all $(BENCH_TARGETS)

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format: ok"

clean:
	rm -rf build build-*
