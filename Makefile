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
# interpose/ by layer, each including only those below it: interpose/interpose.mk.
NCG_LAYERS := common shim inspect proto judge relay machine net agent
NCG_INC := $(foreach l,$(NCG_LAYERS),-Iinterpose/$(l))
BASE_CFLAGS := -std=gnu11 -fPIC -fvisibility=hidden $(WARN) $(SANFLAGS) -Iinclude $(NCG_INC)
BASE_LDFLAGS := $(SANFLAGS)
PREFIX ?= /usr/local

# Components append to these.
ALL_TARGETS :=
TEST_BINS :=
BENCH_TARGETS :=

.PHONY: all test bench demo install clean deps format format-check
all:

-include interpose/interpose.mk
-include tests/fakenccl/fakenccl.mk
-include tests/fakecuda/fakecuda.mk
-include tests/checker/checker.mk
-include tests/dsim/dsim.mk
-include tests/matrix/matrix.mk
-include interpose/shim/shim.mk
-include interpose/cli/cli.mk
-include interpose/inspect/inspect.mk
-include tests/gpu/gpu.mk
-include tests/nvml/nvml.mk

# Build dependencies: `make deps` installs what is missing (scripts/install-deps.sh, quick and
# silent when all is there). `make` (all), `make test` and `make demo` run it once first (a stamp
# in $(BUILD)), then build in a make of their own, so that `make -j` never compiles against a
# header that is still being installed.
deps:
	@scripts/install-deps.sh --check-or-install
	@mkdir -p $(BUILD) && touch $(BUILD)/.deps-ok
$(BUILD)/.deps-ok:
	@scripts/install-deps.sh --check-or-install
	@mkdir -p $(@D) && touch $@
all: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory build-all
.PHONY: build-all
build-all: $(ALL_TARGETS) $(TEST_BINS)

# TESTS="tests/x/t_a.sh ..." runs only those scripts.
test: all
	@NCG_BUILD=$(BUILD) NCG_SANITIZER=$(SANITIZER) tests/run.sh $(TESTS)

# One benchmark at a time, after the build (they measure; in parallel they would measure each other).
bench: all
	@$(MAKE) --no-print-directory -j1 $(BENCH_TARGETS)

# Your own NCCL program on the CPU stack (docs/launchers.md): $(BUILD)/cpu-nccl/{include,lib}, an
# NCCL_HOME for Makefiles such as NVIDIA's examples; scripts/cpu-stack-flags.sh prints the flags.
.PHONY: cpu-nccl-home
cpu-nccl-home: $(BUILD)/.deps-ok
	@$(MAKE) --no-print-directory $(BUILD)/libncclguard.so $(FN_LIB) $(FC_LIB)
	@NCG_BUILD=$(BUILD) scripts/cpu-stack-flags.sh --nccl-home

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format: ok"

clean:
	rm -rf build build-*
