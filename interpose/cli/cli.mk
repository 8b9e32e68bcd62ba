# The `ncclguard` command: $(BUILD)/ncclguard, linked statically from interpose/cli/*.c plus, for
# `coord`, the checker's coordinator sources compiled here (the CLI never needs
# libncclguard.so). Also: `make install`, and the CLI's test programs.

CLI_SRCS := $(wildcard interpose/cli/*.c)
CLI_OBJS := $(patsubst interpose/cli/%.c,$(BUILD)/cli/%.o,$(CLI_SRCS))
# The coordinator (`ncclguard coord`) and the checker's names and call formatting (verdict.c).
CLI_COORD_SRCS := $(addprefix interpose/checker/,channel.c coord.c p2pmatch.c round.c release.c wire.c wire_relay.c \
                  verdict.c waitfor.c deadlock.c http.c http_parse.c metrics.c) interpose/common/config.c
CLI_EXT_OBJS := $(patsubst interpose/%.c,$(BUILD)/cli/ext/%.o,$(CLI_COORD_SRCS))
CLI_LIBS := -lpthread

ALL_TARGETS += $(BUILD)/ncclguard

$(BUILD)/cli/%.o: interpose/cli/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/cli/ext/%.o: interpose/%.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -MMD -MP -c -o $@ $<

$(BUILD)/ncclguard: $(CLI_OBJS) $(CLI_EXT_OBJS)
	$(CC) $(BASE_LDFLAGS) -o $@ $^ $(CLI_LIBS)

# Synthetic segment writer for the CLI tests (no shim, no NCCL needed).
TEST_BINS += $(BUILD)/tests/cli/fakeseg
$(BUILD)/tests/cli/fakeseg: tests/cli/fakeseg.c include/ncclguard/shm.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -o $@ $< $(BASE_LDFLAGS)

-include $(CLI_OBJS:.o=.d) $(CLI_EXT_OBJS:.o=.d)

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

# A small guarded job (healthy, or one rank that stops calling) on the CPU NCCL.
ifneq ($(APP_CFLAGS),)
TEST_BINS += $(BUILD)/tests/cli/cliapp
$(BUILD)/tests/cli/cliapp: tests/cli/cliapp.c $(APPS_OUT)/obj/ncg_test.o $(FN_LIB)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread
endif

# Unit tests of the CLI's pure parts, linked with its objects (all but main).
TEST_BINS += $(BUILD)/tests/cli/unit
$(BUILD)/tests/cli/unit: tests/cli/unit.c $(filter-out $(BUILD)/cli/main.o,$(CLI_OBJS)) $(CLI_EXT_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(BASE_CFLAGS) -Iinterpose/cli -o $@ $^ $(BASE_LDFLAGS) $(CLI_LIBS)
