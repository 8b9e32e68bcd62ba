# fakecuda: a CPU libcudart.so.13 for tests (never installed), and its test programs.
# Compiled against NVIDIA's cuda_runtime_api.h (skipped when absent); the test programs are
# linked against the genuine libcudart.so.13 when present (else the fake) and run on the fake.
FC_DIR := tests/fakecuda
FC_OUT := $(BUILD)/fakecuda
FC_LIB := $(FC_OUT)/libcudart.so.13
FC_CUDA := /usr/local/cuda
FC_HDR := $(wildcard $(FC_CUDA)/include/cuda_runtime_api.h)
FC_REAL_LIB := $(wildcard $(FC_CUDA)/lib64/libcudart.so.13)

ifneq ($(FC_HDR),)
FC_SRCS := $(FC_DIR)/fc_device.c $(FC_DIR)/fc_error.c $(FC_DIR)/fc_mem.c $(FC_DIR)/fc_stream.c \
  $(FC_DIR)/fc_event.c $(FC_DIR)/fc_graph.c $(FC_DIR)/fc_capture.c $(FC_DIR)/fc_kernel.c
FC_OBJS := $(patsubst $(FC_DIR)/%.c,$(FC_OUT)/obj/%.o,$(FC_SRCS))
FC_CFLAGS = $(CFLAGS) $(BASE_CFLAGS) -isystem $(FC_CUDA)/include

ALL_TARGETS += $(FC_LIB) $(FC_OUT)/libcudart.so

$(FC_OUT)/obj/%.o: $(FC_DIR)/%.c $(FC_DIR)/fc_internal.h $(FC_DIR)/fc_graph.h $(FC_DIR)/fc_errors.def
	@mkdir -p $(dir $@)
	$(CC) $(FC_CFLAGS) -c $< -o $@

$(FC_LIB): $(FC_OBJS) $(FC_DIR)/libcudart.map
	$(CC) -shared -Wl,-soname,libcudart.so.13 -Wl,--version-script=$(FC_DIR)/libcudart.map \
	  -Wl,-z,defs $(BASE_LDFLAGS) -o $@ $(FC_OBJS) -lpthread

$(FC_OUT)/libcudart.so: $(FC_LIB)
	ln -sf libcudart.so.13 $@

# --- tests/fakecuda/tests: programs written like CUDA programs ---
FC_TOUT := $(BUILD)/tests/fakecuda
ifneq ($(FC_REAL_LIB),)
FC_APP_LIBS := -L$(FC_CUDA)/lib64 -l:libcudart.so.13
else
FC_APP_LIBS := -L$(FC_OUT) -l:libcudart.so.13
endif
FC_APP_CFLAGS = $(CFLAGS) -std=gnu11 -Wall -Wextra $(filter -Werror,$(WARN)) $(SANFLAGS) \
  -I$(FC_CUDA)/include -I$(FC_DIR)/tests

$(FC_TOUT)/%: $(FC_DIR)/tests/%.c $(FC_DIR)/tests/fc_test.h $(FC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(FC_APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(FC_APP_LIBS) -lpthread -ldl

# The same source built with per-thread default streams (NULL = cudaStreamPerThread).
$(FC_TOUT)/legacy-ptds: $(FC_DIR)/tests/legacy.c $(FC_DIR)/tests/fc_test.h $(FC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(FC_APP_CFLAGS) -DCUDA_API_PER_THREAD_DEFAULT_STREAM $(BASE_LDFLAGS) -o $@ $< \
	  $(FC_APP_LIBS) -lpthread -ldl

# A CUDA program built by nvcc (kernel registration, <<<>>> launches), only where nvcc exists;
# linked against the genuine runtime (-cudart shared) like the C programs, run on the fake.
FC_NVCC := $(wildcard $(FC_CUDA)/bin/nvcc)
ifneq ($(FC_NVCC),)
$(FC_TOUT)/kernel: $(FC_DIR)/tests/kernel.cu $(FC_DIR)/tests/fc_test.h $(FC_LIB)
	@mkdir -p $(dir $@)
	$(FC_NVCC) -gencode=arch=compute_90,code=sm_90 -cudart shared -I$(FC_DIR)/tests -o $@ $<
TEST_BINS += $(FC_TOUT)/kernel
endif

FC_TEST_PROGS := $(patsubst $(FC_DIR)/tests/%.c,$(FC_TOUT)/%,$(wildcard $(FC_DIR)/tests/*.c))
TEST_BINS += $(FC_TEST_PROGS) $(FC_TOUT)/legacy-ptds
endif
