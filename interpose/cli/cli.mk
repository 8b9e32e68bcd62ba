# The `ncclguard` command: $(BUILD)/ncclguard, linked from interpose/cli/*.c and the archives of
# the layers below (for `coord`, the same coordinator that runs in the job; the CLI never needs
# libncclguard.so). Also: `make install`, and the CLI's test programs.

CLI_SRCS := $(wildcard interpose/cli/*.c)
CLI_OBJS := $(patsubst interpose/cli/%.c,$(BUILD)/cli/%.o,$(CLI_SRCS))
# The coordinator (`ncclguard coord`), the endpoint and the checker's names and call formatting:
# the archives of the layers below (interpose/interpose.mk).
CLI_LAYERS := net relay judge proto common
CLI_LIBS := -lpthread

ALL_TARGETS += $(BUILD)/ncclguard

$(BUILD)/cli/%.o: interpose/cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/ncclguard: $(CLI_OBJS) $(call ncg_a,$(CLI_LAYERS))
	$(CC) $(BASE_LDFLAGS) -o $@ $(CLI_OBJS) $(call ncg_link,$(CLI_LAYERS)) $(CLI_LIBS)

# Synthetic segment writer for the CLI tests (no shim, no NCCL needed).
TEST_BINS += $(BUILD)/tests/cli/fakeseg
$(BUILD)/tests/cli/fakeseg: tests/cli/fakeseg.c include/ncclguard/shm.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -o $@ $< $(BASE_LDFLAGS)

-include $(CLI_OBJS:.o=.d)

install: $(BUILD)/libncclguard.so $(BUILD)/ncclguard
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib
	install -m 755 $(BUILD)/ncclguard $(DESTDIR)$(PREFIX)/bin/ncclguard
	install -m 755 scripts/ncclguard-run $(DESTDIR)$(PREFIX)/bin/ncclguard-run
	install -m 755 $(BUILD)/libncclguard.so $(DESTDIR)$(PREFIX)/lib/libncclguard.so
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man7 \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions
	install -m 644 docs/man/ncclguard.1 docs/man/ncclguard-run.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 644 docs/man/ncclguard.7 $(DESTDIR)$(PREFIX)/share/man/man7/
	install -m 644 scripts/ncclguard.bash-completion \
	    $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ncclguard
	ln -sf ncclguard $(DESTDIR)$(PREFIX)/share/bash-completion/completions/ncclguard-run
	install -d $(DESTDIR)$(PREFIX)/share/ncclguard/prometheus
	install -m 644 scripts/prometheus/ncclguard-rules.yml $(DESTDIR)$(PREFIX)/share/ncclguard/prometheus/

# A small guarded job (healthy, or one rank that stops calling) on the CPU NCCL.
ifneq ($(APP_CFLAGS),)
TEST_BINS += $(BUILD)/tests/cli/cliapp
$(BUILD)/tests/cli/cliapp: tests/cli/cliapp.c $(APPS_OUT)/obj/ncg_test.o $(FN_LIB)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread
endif

# Unit tests of the CLI's pure parts, linked with its objects (all but main).
TEST_BINS += $(BUILD)/tests/cli/unit
$(BUILD)/tests/cli/unit: tests/cli/unit.c $(filter-out $(BUILD)/cli/main.o,$(CLI_OBJS)) $(call ncg_a,$(CLI_LAYERS))
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -Iinterpose/cli -o $@ tests/cli/unit.c $(filter-out $(BUILD)/cli/main.o,$(CLI_OBJS)) \
	    $(call ncg_link,$(CLI_LAYERS)) $(BASE_LDFLAGS) $(CLI_LIBS)
