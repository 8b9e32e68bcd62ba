# tests/gpu: the C programs of scripts/gpu-check.sh, prebuilt here so that a device machine
# without a compiler can run them from build/: gpuprobe, against NVIDIA's nccl.h and
# cuda_runtime_api.h (/usr/local/cuda), linked with the genuine sonames libnccl.so.2 and
# libcudart.so.13; onegpu.so (nccl-tests -t N on one GPU: an LD_PRELOAD, no CUDA header needed,
# built without the sanitizers since it is preloaded into uninstrumented programs).
GPU_DIR := tests/gpu
GPU_OUT := $(BUILD)/tests/gpu
GPU_CUDA := /usr/local/cuda
ifneq ($(and $(wildcard $(GPU_CUDA)/include/nccl.h),$(wildcard $(GPU_CUDA)/lib64/libcudart.so.13),$(wildcard $(GPU_CUDA)/lib64/libnccl.so.2)),)
$(GPU_OUT)/gpuprobe: $(GPU_DIR)/gpuprobe.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=gnu11 $(WARN) $(SANFLAGS) -isystem $(GPU_CUDA)/include $(BASE_LDFLAGS) \
	  -o $@ $< -L$(GPU_CUDA)/lib64 -l:libnccl.so.2 -l:libcudart.so.13
TEST_BINS += $(GPU_OUT)/gpuprobe
endif

$(GPU_OUT)/onegpu.so: $(GPU_DIR)/onegpu.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -std=gnu11 $(WARN) -shared -fPIC -o $@ $< -ldl
TEST_BINS += $(GPU_OUT)/onegpu.so
