# The shim libncclguard.so (issue 3): sources, the shared library, its tests and benchmark.
# checker.mk has already appended the checker's sources to SHIM_SRCS.

# Pure code other components (the CLI) may link: config parsing, hashing, the ring reader, log.
SHIM_PURE_SRCS := interpose/config.c interpose/hash.c interpose/ring.c interpose/log.c
SHIM_SRCS += $(SHIM_PURE_SRCS) interpose/resolve.c interpose/shm.c interpose/comm.c interpose/shim.c \
             interpose/wrappers.c
SHIM_OBJS = $(patsubst %.c,$(BUILD)/obj/%.o,$(SHIM_SRCS))
SHIM_PURE_OBJS := $(patsubst %.c,$(BUILD)/obj/%.o,$(SHIM_PURE_SRCS))
SHIM_CFLAGS := -ftls-model=initial-exec -MMD -MP
SHIM_LDFLAGS := -shared -Wl,--version-script=interpose/exports.map -Wl,-z,defs -Wl,-z,relro \
                -Wl,--as-needed
SHIM_LIBS := -ldl -lpthread

$(BUILD)/obj/interpose/%.o: interpose/%.c
	@mkdir -p $(@D)
	$(CC) $(BASE_CFLAGS) $(CFLAGS) $(SHIM_CFLAGS) -c -o $@ $<

$(BUILD)/libncclguard.so: $(SHIM_OBJS) interpose/exports.map
	$(CC) $(BASE_LDFLAGS) $(SHIM_LDFLAGS) -o $@ $(SHIM_OBJS) $(SHIM_LIBS)

# Pure helpers as a static archive (no shim state, no wrappers).
$(BUILD)/libncg_pure.a: $(SHIM_PURE_OBJS)
	@rm -f $@
	ar rcs $@ $^

ALL_TARGETS += $(BUILD)/libncclguard.so $(BUILD)/libncg_pure.a

-include $(wildcard $(BUILD)/obj/interpose/*.d)
