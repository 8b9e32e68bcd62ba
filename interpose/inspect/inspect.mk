# inspect (stacks, symbols): its sources are linked into libncclguard.so (interpose/checker/
# checker.mk's SHIM_SRCS) and into tests/shim/symtest (interpose/shim/shim.mk); here the unit
# tests of a call site's text (tests/shim/site_test.c, run by tests/checker/t_cxxsite.sh).
INSPECT_SITE_SRCS := interpose/inspect/symbol.c interpose/inspect/elfsym.c interpose/inspect/srcline.c
$(BUILD)/tests/shim/site_test: tests/shim/site_test.c $(INSPECT_SITE_SRCS) interpose/inspect/symbol.h \
                               $(BUILD)/libncg_pure.a
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -o $@ $< $(INSPECT_SITE_SRCS) $(BUILD)/libncg_pure.a $(BASE_LDFLAGS) -ldl
TEST_BINS += $(BUILD)/tests/shim/site_test
