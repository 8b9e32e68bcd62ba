# The fake NVML the CLI's GPU tests load instead of NVIDIA's (tests/nvml/fakenvml.c): a shared
# library named libnvidia-ml.so.1 in its own directory, found through LD_LIBRARY_PATH.
TEST_BINS += $(BUILD)/tests/nvml/libnvidia-ml.so.1
$(BUILD)/tests/nvml/libnvidia-ml.so.1: tests/nvml/fakenvml.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -o $@ $< $(BASE_LDFLAGS)
