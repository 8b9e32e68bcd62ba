# fakenccl: a CPU libnccl.so.2 for tests (never installed), its test programs, and the shared
# test-application infrastructure of tests/apps (launcher, id helper, incident, mixed).
FN_DIR := tests/fakenccl
FN_OUT := $(BUILD)/fakenccl
FN_LIB := $(FN_OUT)/libnccl.so.2
FN_SRCS := $(FN_DIR)/fn_api.c $(FN_DIR)/fn_engine.c $(FN_DIR)/fn_dtype.c $(FN_DIR)/fn_id.c \
  $(FN_DIR)/fn_async.c $(FN_DIR)/fn_stall.c $(FN_DIR)/fn_cuda.c $(FN_DIR)/fn_devapi.c \
  $(FN_DIR)/fn_rma.c $(FN_DIR)/fn_param.c
FN_OBJS := $(patsubst $(FN_DIR)/%.c,$(FN_OUT)/obj/%.o,$(FN_SRCS))
FN_APP_LIBS := -L$(FN_OUT) -l:libnccl.so.2
FN_REAL_NCCL_H := $(wildcard /usr/local/cuda/include/nccl.h)

ALL_TARGETS += $(FN_LIB) $(FN_OUT)/libnccl.so

$(FN_OUT)/obj/%.o: $(FN_DIR)/%.c $(FN_DIR)/fn_internal.h include/ncclguard/nccl_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -c $< -o $@

$(FN_LIB): $(FN_OBJS) $(FN_DIR)/libnccl.map
	$(CC) -shared -Wl,-soname,libnccl.so.2 -Wl,--version-script=$(FN_DIR)/libnccl.map \
	  $(BASE_LDFLAGS) -o $@ $(FN_OBJS) -lm -lpthread -ldl

$(FN_OUT)/libnccl.so: $(FN_LIB)
	ln -sf libnccl.so.2 $@

# --- tests/apps: launcher, id helper, applications written like NCCL programs ---
APPS_DIR := tests/apps
APPS_OUT := $(BUILD)/tests
APP_CFLAGS = $(CFLAGS) $(filter-out -fvisibility=hidden,$(BASE_CFLAGS)) -I$(APPS_DIR)

$(APPS_OUT)/ncg-launch: $(APPS_DIR)/launch.c
	@mkdir -p $(dir $@)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $<

$(APPS_OUT)/obj/ncg_test.o: $(APPS_DIR)/ncg_test.c $(APPS_DIR)/ncg_test.h include/ncclguard/nccl_abi.h
	@mkdir -p $(dir $@)
	$(CC) $(APP_CFLAGS) -c $< -o $@

# An app (one .c) linked against the fake with the id helper.
$(APPS_OUT)/%: $(APPS_DIR)/%.c $(APPS_OUT)/obj/ncg_test.o $(APPS_DIR)/ncg_test.h $(FN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread

TEST_BINS += $(APPS_OUT)/ncg-launch $(APPS_OUT)/incident $(APPS_OUT)/mixed

# The incident compiled against NVIDIA's own nccl.h (the drop-in acceptance point).
ifneq ($(FN_REAL_NCCL_H),)
$(APPS_OUT)/incident-realhdr: $(APPS_DIR)/incident.c $(APPS_OUT)/obj/ncg_test.o $(FN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=gnu11 -Wall $(SANFLAGS) -DNCG_REAL_NCCL_H -I/usr/local/cuda/include \
	  -I$(APPS_DIR) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS)
TEST_BINS += $(APPS_OUT)/incident-realhdr
endif

# --- tests/fakenccl/tests: C test programs ---
FN_TOUT := $(BUILD)/tests/fakenccl
$(FN_TOUT)/%: $(FN_DIR)/tests/%.c $(APPS_OUT)/obj/ncg_test.o $(APPS_DIR)/ncg_test.h $(FN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(APP_CFLAGS) -I$(FN_DIR) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread -lm

# (userguide is built against NVIDIA's headers and runtime below, not with the ABI header)
FN_TEST_PROGS := $(filter-out $(FN_TOUT)/userguide,\
  $(patsubst $(FN_DIR)/tests/%.c,$(FN_TOUT)/%,$(wildcard $(FN_DIR)/tests/*.c)))
TEST_BINS += $(FN_TEST_PROGS)

# Tiny interposer: counts ncclBroadcast calls (proves pncclBcast goes through the PLT).
$(FN_TOUT)/libbcastspy.so: $(FN_DIR)/tests/bcastspy.c.in
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(filter-out -fvisibility=hidden,$(BASE_CFLAGS)) -x c -shared -o $@ $< -ldl
TEST_BINS += $(FN_TOUT)/libbcastspy.so

# make bench: fakenccl's own speed (see tests/fakenccl/bench.sh)
.PHONY: fakenccl-bench
fakenccl-bench: $(APPS_OUT)/ncg-launch $(APPS_OUT)/mixed $(FN_LIB)
	@tests/fakenccl/bench.sh $(BUILD)
BENCH_TARGETS += fakenccl-bench

# Apps built against NVIDIA's nccl.h and cuda_runtime_api.h and linked against the genuine
# libcudart.so.13 (run on tests/fakecuda's), with the fake NCCL and the id helper:
# torchlike, the PyTorch-shaped asynchronous app; graphs, NCCL calls captured into CUDA graphs
# and replayed; userguide, the NCCL user guide's examples (stream order of the inputs).
FN_REAL_CUDART := $(wildcard /usr/local/cuda/lib64/libcudart.so.13)
ifneq ($(and $(FN_REAL_NCCL_H),$(FN_REAL_CUDART)),)
FN_REAL_APPS := $(APPS_OUT)/torchlike $(APPS_OUT)/graphs $(FN_TOUT)/userguide
$(APPS_OUT)/torchlike: $(APPS_DIR)/torchlike.c
$(APPS_OUT)/graphs: $(APPS_DIR)/graphs.c
$(FN_TOUT)/userguide: $(FN_DIR)/tests/userguide.c
$(FN_REAL_APPS): $(APPS_OUT)/obj/ncg_test.o $(FN_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=gnu11 $(WARN) $(SANFLAGS) -isystem /usr/local/cuda/include -I$(APPS_DIR) \
	  $(BASE_LDFLAGS) -o $@ $(filter %.c,$^) $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) \
	  -L/usr/local/cuda/lib64 -l:libcudart.so.13 -lpthread
TEST_BINS += $(FN_REAL_APPS)
endif

# cxxsite: a C++ application (a call site deep in a namespace and a class template) for the
# demangled, middle-shortened call sites of tests/checker/t_cxxsite.sh; only where g++ is.
ifneq ($(shell command -v $(CXX) 2>/dev/null),)
$(APPS_OUT)/cxxsite: $(APPS_DIR)/cxxsite.cc $(APPS_OUT)/obj/ncg_test.o $(APPS_DIR)/ncg_test.h $(FN_LIB)
	@mkdir -p $(dir $@)
	$(CXX) $(CFLAGS) -std=gnu++17 -Wall -Wextra $(SANFLAGS) -Iinclude -I$(APPS_DIR) $(BASE_LDFLAGS) \
	  -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread
TEST_BINS += $(APPS_OUT)/cxxsite
endif
