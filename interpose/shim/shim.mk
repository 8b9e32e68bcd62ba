# The shim's tests and benchmarks (libncclguard.so itself: interpose/interpose.mk). Test
# programs link the archives of the layers they test; of the shim's, never the whole: it defines
# dlsym and the NCCL API (a test's own dlsym would be ours). Its pure members (the ring, the
# graph table) make an archive of their own: NCG_LOW is that and common (config, log, hash).
SHIM_PURE_OBJS := $(addprefix $(BUILD)/obj/interpose/shim/,ring.o graphtab.o libver.o)
$(BUILD)/lib/libncg_shimpure.a: $(SHIM_PURE_OBJS)
	@rm -f $@
	$(AR) rcs $@ $^
NCG_LOW_A = $(BUILD)/lib/libncg_shimpure.a $(call ncg_a,common)
NCG_LOW = $(NCG_LOW_A)
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

# Symbolization (t_symbol.sh): the driver, and a library of it, compile the symbolizer in (the
# library is loaded with dlopen: the archive's objects assume the initial TLS model).
SYM_SRCS := interpose/inspect/symbol.c interpose/inspect/elfsym.c interpose/inspect/srcline.c interpose/inspect/unw.c
$(BUILD)/tests/shim/symtest: tests/shim/symtest.c $(SYM_SRCS) $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(SYM_SRCS) $(NCG_LOW) $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libsymtest.so: tests/shim/symtest.c $(SYM_SRCS) $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -shared -o $@ $< $(SYM_SRCS) $(NCG_LOW) $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libsymmod.so: tests/shim/symmod.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -O1 -shared -o $@ $< $(BASE_LDFLAGS)

$(BUILD)/tests/shim/libsymmod_stripped.so: $(BUILD)/tests/shim/libsymmod.so
	strip --strip-unneeded -o $@ $<

$(BUILD)/tests/shim/config_test: tests/shim/config_test.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS)

$(BUILD)/tests/shim/ranks_test: tests/shim/ranks_test.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS)

$(BUILD)/tests/shim/api_names: tests/shim/api_names.c interpose/shim/api.def
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS)

$(BUILD)/tests/shim/graphtab_test: tests/shim/graphtab_test.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS)

# The loaded release's pure part: version codes, unknown names, who speaks (t_libver.sh).
$(BUILD)/tests/shim/libver_test: tests/shim/libver_test.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -Iinterpose/shim -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS)
TEST_BINS += $(BUILD)/tests/shim/libver_test

$(BUILD)/tests/shim/ring_test: tests/shim/ring_test.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS) -lpthread

$(BUILD)/tests/shim/shmread: tests/shim/shmread.c tests/shim/segdump.h $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS)

# Written like an application of the CPU NCCL (tests/apps' id helper), rpath to the fake.
$(BUILD)/tests/shim/calls: tests/shim/calls.c tests/shim/segdump.h $(BUILD)/tests/obj/ncg_test.o \
                           $(SHIM_FAKE) $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -Itests/apps -o $@ $< $(BUILD)/tests/obj/ncg_test.o $(NCG_LOW) \
	    $(BASE_LDFLAGS) -L$(BUILD)/fakenccl -l:libnccl.so.2 -Wl,-rpath,'$$ORIGIN/../../fakenccl' -lpthread

$(BUILD)/tests/shim/realnccl: tests/shim/realnccl.c
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/libuses_nccl.so: tests/shim/uses_nccl.c $(SHIM_FAKE)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -shared -o $@ $< $(BASE_LDFLAGS) -L$(BUILD)/fakenccl -l:libnccl.so.2 \
	    -Wl,-rpath,'$$ORIGIN/../../fakenccl'

$(BUILD)/tests/shim/dlopen_local: tests/shim/dlopen_local.c tests/shim/segdump.h $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS) -ldl

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
$(BUILD)/tests/shim/cev_test: tests/shim/cev_test.c interpose/shim/completion.c interpose/shim/completion.h interpose/shim/slow.c interpose/shim/streamtab.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ tests/shim/cev_test.c interpose/shim/completion.c interpose/shim/slow.c interpose/shim/streamtab.c $(NCG_LOW) \
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

-include $(wildcard $(BUILD)/tests/shim/*.d $(BUILD)/bench/*.d)

# common/'s helpers (host:port, the buffer and its escapes, clocks, getenv): run by t_config.sh.
$(BUILD)/tests/shim/common_test: tests/shim/common_test.c $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -o $@ $< $(NCG_LOW) $(BASE_LDFLAGS)
TEST_BINS += $(BUILD)/tests/shim/common_test

# Host waits (t_hostwait.sh), where the CUDA header is (fakecuda.mk): hostwait.c and streamtab.c
# in a library of their own with the shim state they read (hostwait_lib.c), linked before the
# CPU CUDA runtime as a preloaded libncclguard.so comes before it; and the cost and results
# through the real shim (a communicator of the null NCCL makes it active).
ifneq ($(FC_HDR),)
HW_SRCS := interpose/shim/hostwait.c interpose/shim/streamtab.c tests/shim/hostwait_lib.c
$(BUILD)/tests/shim/libhostwait.so: $(HW_SRCS) interpose/shim/hostwait.h interpose/shim/streamtab.h
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -fvisibility=default -ftls-model=initial-exec -shared -o $@ $(HW_SRCS) \
	    $(BASE_LDFLAGS) -ldl

$(BUILD)/tests/shim/hostwait_test: tests/shim/hostwait_test.c $(BUILD)/tests/shim/libhostwait.so $(FC_LIB)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -isystem $(FC_CUDA)/include -I$(FC_DIR)/tests -o $@ $< \
	    $(BASE_LDFLAGS) -L$(@D) -lhostwait -Wl,-rpath,'$$ORIGIN' $(FC_APP_LIBS) -lpthread -ldl

$(BUILD)/tests/shim/hostwait_cost: tests/shim/hostwait_cost.c $(BUILD)/bench/null/libnccl.so.2 $(FC_LIB)
	@mkdir -p $(@D)
	$(CC) $(SHIM_TEST_CFLAGS) -isystem $(FC_CUDA)/include -I$(FC_DIR)/tests -o $@ $< \
	    $(BASE_LDFLAGS) -L$(BUILD)/bench/null -l:libnccl.so.2 $(FC_APP_LIBS) -lpthread -ldl
TEST_BINS += $(BUILD)/tests/shim/libhostwait.so $(BUILD)/tests/shim/hostwait_test \
             $(BUILD)/tests/shim/hostwait_cost
endif
