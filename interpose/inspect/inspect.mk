# inspect (stacks, symbols): its archive is linked into libncclguard.so (interpose/interpose.mk)
# and into tests/shim/symtest (interpose/shim/shim.mk); here the unit tests of a call site's
# text (tests/shim/site_test.c, run by tests/checker/t_cxxsite.sh).
$(BUILD)/tests/shim/site_test: tests/shim/site_test.c $(call ncg_a,inspect) $(NCG_LOW_A)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -o $@ $< -Wl,--start-group $(call ncg_a,inspect) $(NCG_LOW_A) -Wl,--end-group $(BASE_LDFLAGS) -ldl
TEST_BINS += $(BUILD)/tests/shim/site_test
