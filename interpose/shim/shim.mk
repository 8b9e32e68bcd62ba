# The shim libncclguard.so: sources, the shared library, its tests and benchmark.
# checker.mk has already appended the checker's sources to SHIM_SRCS.

# Pure code other components (the CLI) may link: config parsing, hashing, the ring reader, log.
SHIM_PURE_SRCS := interpose/common/config.c interpose/common/hash.c interpose/shim/ring.c interpose/common/log.c \
                  interpose/shim/graphtab.c
SHIM_SRCS += $(SHIM_PURE_SRCS) interpose/shim/resolve.c interpose/shim/shm.c interpose/shim/comm.c interpose/shim/shim.c \
             interpose/shim/wrappers.c interpose/shim/completion.c interpose/shim/dlsym.c interpose/shim/graph.c \
             interpose/shim/streamtab.c
SHIM_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(SHIM_SRCS))
SHIM_PURE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(SHIM_PURE_SRCS))
SHIM_CFLAGS := -ftls-model=initial-exec -MMD -MP
SHIM_LDFLAGS := -shared -Wl,--version-script=interpose/shim/exports.map -Wl,-z,defs -Wl,-z,relro \
                -Wl,--as-needed
SHIM_LIBS := -ldl -lpthread

$(BUILD)/obj/interpose/%.o: interpose/%.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SHIM_CFLAGS) -c -o $@ $<

# dlsym.c runs inside a sanitizer runtime's own initialisation (it calls dlsym before its shadow
# memory exists): never instrumented. It only reads the loader's tables.
$(BUILD)/obj/interpose/shim/dlsym.o: SHIM_CFLAGS += -fno-sanitize=all

$(BUILD)/libncclguard.so: $(SHIM_OBJS) interpose/shim/exports.map
	$(CC) $(BASE_LDFLAGS) $(SHIM_LDFLAGS) -o $@ $(SHIM_OBJS) $(SHIM_LIBS)

# Pure helpers as a static archive (no shim state, no wrappers).
$(BUILD)/libncg_pure.a: $(SHIM_PURE_OBJS)
	@rm -f $@
	ar rcs $@ $^

ALL_TARGETS += $(BUILD)/libncclguard.so $(BUILD)/libncg_pure.a


# ---- tests: C programs built into $(BUILD)/tests/shim (tests/shim/t_*.sh, tests/abi/t_*.sh) ----
SHIM_TEST_CFLAGS = $(BASE_CFLAGS) $(CFLAGS) -MMD -MP
SHIM_FAKE := $(BUILD)/fakenccl/libnccl.so.2
SHIM_TEST_BINS := $(BUILD)/tests/shim/config_test $(BUILD)/tests/shim/api_names \
                  $(BUILD)/tests/shim/ring_test $(BUILD)/tests/shim/graphtab_test $(BUILD)/tests/shim/shmread $(BUILD)/tests/shim/calls \
                  $(BUILD)/tests/shim/realnccl $(BUILD)/tests/shim/dlopen_local \
                  $(BUILD)/tests/shim/libuses_nccl.so $(BUILD)/bench/null/libnccl.so.2 \
                  $(BUILD)/bench/null-norevoke/libnccl.so.2 $(BUILD)/bench/percall \
                  $(BUILD)/tests/shim/symtest $(BUILD)/tests/shim/libsymmod.so \
                  $(BUILD)/tests/shim/libsymmod_stripped.so $(BUILD)/tests/shim/libsymtest.so \
                  $(BUILD)/tests/shim/ranks_test $(BUILD)/tests/shim/dlsym_nccl \
                  $(BUILD)/tests/shim/libown_nccl.so
TEST_BINS += $(SHIM_TEST_BINS)

# Symbolization (t_symbol.sh): the driver links symbol.c and its helpers directly.
SYM_SRCS := interpose/inspect/symbol.c interpose/inspect/elfsym.c interpose/inspect/srcline.c
$(BUILD)/tests/shim/symtest: tests/shim/symtest.c $(SYM_SRCS) $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(SYM_SRCS) $(BUILD)/libncg_pure.a $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libsymtest.so: tests/shim/symtest.c $(SYM_SRCS) $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -shared -o $@ $< $(SYM_SRCS) $(BUILD)/libncg_pure.a $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libsymmod.so: tests/shim/symmod.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -O1 -shared -o $@ $< $(BASE_LDFLAGS)

$(BUILD)/tests/shim/libsymmod_stripped.so: $(BUILD)/tests/shim/libsymmod.so
	strip --strip-unneeded -o $@ $<

$(BUILD)/tests/shim/config_test: tests/shim/config_test.c $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BUILD)/libncg_pure.a $(BASE_LDFLAGS)

$(BUILD)/tests/shim/ranks_test: tests/shim/ranks_test.c $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BUILD)/libncg_pure.a $(BASE_LDFLAGS)

$(BUILD)/tests/shim/api_names: tests/shim/api_names.c interpose/shim/api.def
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS)

$(BUILD)/tests/shim/graphtab_test: tests/shim/graphtab_test.c $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BUILD)/libncg_pure.a $(BASE_LDFLAGS)

$(BUILD)/tests/shim/ring_test: tests/shim/ring_test.c $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BUILD)/libncg_pure.a $(BASE_LDFLAGS) -lpthread

$(BUILD)/tests/shim/shmread: tests/shim/shmread.c tests/shim/segdump.h $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BUILD)/libncg_pure.a $(BASE_LDFLAGS)

# Written like an application of the CPU NCCL (tests/apps' id helper), rpath to the fake.
$(BUILD)/tests/shim/calls: tests/shim/calls.c tests/shim/segdump.h $(BUILD)/tests/obj/ncg_test.o \
                           $(SHIM_FAKE) $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -Itests/apps -o $@ $< $(BUILD)/tests/obj/ncg_test.o $(BUILD)/libncg_pure.a \
	    $(BASE_LDFLAGS) -L$(BUILD)/fakenccl -l:libnccl.so.2 -Wl,-rpath,'$$ORIGIN/../../fakenccl' -lpthread

$(BUILD)/tests/shim/realnccl: tests/shim/realnccl.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libuses_nccl.so: tests/shim/uses_nccl.c $(SHIM_FAKE)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS) -L$(BUILD)/fakenccl -l:libnccl.so.2 \
	    -Wl,-rpath,'$$ORIGIN/../../fakenccl'

$(BUILD)/tests/shim/dlopen_local: tests/shim/dlopen_local.c tests/shim/segdump.h $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BUILD)/libncg_pure.a $(BASE_LDFLAGS) -ldl

# NCCL reached only through dlopen(RTLD_LOCAL) + dlsym (the ctypes shape), and a non-NCCL
# library with an ncclAllReduce of its own (tests/shim/t_dlsym.sh).
$(BUILD)/tests/shim/dlsym_nccl: tests/shim/dlsym_nccl.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libown_nccl.so: tests/shim/own_nccl.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS)

# ---- bench: a NCCL whose calls do nothing, and the per-call cost driver (make bench) ----
$(BUILD)/bench/null/libnccl.so.2: tests/bench/nullnccl.c interpose/shim/api.def
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -shared -Wl,-soname,libnccl.so.2 -o $@ $< $(BASE_LDFLAGS)

$(BUILD)/bench/null-norevoke/libnccl.so.2: tests/bench/nullnccl.c interpose/shim/api.def
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -DNULL_OMIT_REVOKE -shared -Wl,-soname,libnccl.so.2 -o $@ $< $(BASE_LDFLAGS)

$(BUILD)/bench/percall: tests/bench/percall.c $(BUILD)/bench/null/libnccl.so.2
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS) -L$(BUILD)/bench/null -l:libnccl.so.2 \
	    -Wl,-rpath,'$$ORIGIN/null' -lpthread

# Completion by CUDA events against a mock runtime (unit test).
$(BUILD)/tests/shim/cev_test: tests/shim/cev_test.c interpose/shim/completion.c interpose/shim/completion.h interpose/shim/streamtab.c $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ tests/shim/cev_test.c interpose/shim/completion.c interpose/shim/streamtab.c $(BUILD)/libncg_pure.a \
	    $(BASE_LDFLAGS) -ldl -lpthread
TEST_BINS += $(BUILD)/tests/shim/cev_test

# Completion by events against the genuine CUDA runtime (built when it is installed).
CUDA_HOME ?= /usr/local/cuda
ifneq ($(wildcard $(CUDA_HOME)/lib64/libcudart.so),)
$(BUILD)/tests/shim/cuda_bind: tests/shim/cuda_bind.c interpose/shim/completion.h $(BUILD)/bench/null/libnccl.so.2
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -I$(CUDA_HOME)/include -o $@ $< $(BASE_LDFLAGS) -L$(BUILD)/bench/null \
	    -l:libnccl.so.2 -L$(CUDA_HOME)/lib64 -lcudart -Wl,-rpath,$(CUDA_HOME)/lib64
TEST_BINS += $(BUILD)/tests/shim/cuda_bind
endif

# A do-nothing CUDA runtime: completion by events in the per-call benchmark.
$(BUILD)/bench/mockcudart/libcudart.so: tests/bench/mockcudart.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS)
TEST_BINS += $(BUILD)/bench/mockcudart/libcudart.so

BENCH_TARGETS += bench-percall
.PHONY: bench-percall
bench-percall: $(BUILD)/libncclguard.so $(BUILD)/bench/percall $(BUILD)/bench/mockcudart/libcudart.so
	tests/bench/percall.sh $(BUILD)

# CUDA graph replays: cudaGraphLaunch of captured NCCL calls over the do-nothing runtime.
$(BUILD)/bench/graphbench: tests/bench/graphbench.c $(BUILD)/bench/null/libnccl.so.2 $(BUILD)/bench/mockcudart/libcudart.so
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS) -L$(BUILD)/bench/null -l:libnccl.so.2 \
	    -L$(BUILD)/bench/mockcudart -l:libcudart.so -Wl,-rpath,'$$ORIGIN/null:$$ORIGIN/mockcudart'
TEST_BINS += $(BUILD)/bench/graphbench
BENCH_TARGETS += bench-graph
.PHONY: bench-graph
bench-graph: $(BUILD)/libncclguard.so $(BUILD)/bench/graphbench
	tests/bench/graphbench.sh $(BUILD)

# Python callers (ctypes and a C extension), bare and guarded in one run.
BENCH_TARGETS += bench-python
.PHONY: bench-python
bench-python: $(BUILD)/libncclguard.so $(BUILD)/bench/null/libnccl.so.2
	tests/bench/pycall.sh $(BUILD)

-include $(wildcard $(BUILD)/obj/interpose/*/*.d $(BUILD)/tests/shim/*.d $(BUILD)/bench/*.d)
