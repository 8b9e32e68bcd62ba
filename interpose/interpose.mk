# interpose/: one folder per place the code runs or role it has, each a layer that includes
# only the layers below it (tests/shim/t_layers.sh checks), each built into one static archive
# $(BUILD)/lib/libncg_<layer>.a; libncclguard.so is every layer below the command, linked whole.
#   common   config, log, hash, clock, host:port, buffer, connection table (everywhere)
#   shim     the wrappers, the ring, the segment      (the application's threads)
#   inspect  stacks, symbols                          (the job's threads, on a verdict)
#   proto    the wire: frames, codecs, the verdict    (pure)
#   judge    decisions over plain figures             (pure)
#   relay    the checker: the relay tree's state machine, its root the one checker of every
#            job (a flat job's: a tree of one node)   (pure; also ncg-sim)
#   machine  the agent's state machines (link, exit, a verdict's way) and their parameters:
#            events and the time in, what to do out   (pure; also the simulator)
#   net      sockets: peers, the HTTP endpoint, the relay's host (the checker thread, the daemon)
#   agent    what runs only inside the job: the checker thread, its link, actions, reports
#   cli      the `ncclguard` command (interpose/cli/cli.mk)
# (NCG_LAYERS and NCG_INC, in this order, are set in the Makefile.)
ncg_srcs = $(wildcard interpose/$(1)/*.c)
ncg_objs = $(patsubst %.c,$(BUILD)/obj/%.o,$(call ncg_srcs,$(1)))
# The archives of some layers: $(call ncg_a,net coord) as prerequisites, $(call ncg_link,...)
# on a link line (one group: the order of the layers does not matter there).
ncg_a = $(foreach l,$(1),$(BUILD)/lib/libncg_$(l).a)
ncg_link = -Wl,--start-group $(call ncg_a,$(1)) -Wl,--end-group

define NCG_LAYER_RULE
$(BUILD)/lib/libncg_$(1).a: $(call ncg_objs,$(1))
	@mkdir -p $$(@D)
	@rm -f $$@
	$$(AR) rcs $$@ $$^
endef
$(foreach l,$(NCG_LAYERS),$(eval $(call NCG_LAYER_RULE,$(l))))

NCG_LIB_OBJS := $(foreach l,$(NCG_LAYERS),$(call ncg_objs,$(l)))
SHIM_CFLAGS := -ftls-model=initial-exec -MMD -MP
SHIM_LDFLAGS := -shared -Wl,--version-script=interpose/shim/exports.map -Wl,-z,defs -Wl,-z,relro \
                -Wl,--as-needed
SHIM_LIBS := -ldl -lpthread
# Each layer compiled with the include paths of itself and the layers below only.
NCG_SEES_common := common
NCG_SEES_shim := common shim
NCG_SEES_inspect := common shim inspect
NCG_SEES_proto := $(NCG_SEES_inspect) proto
NCG_SEES_judge := $(NCG_SEES_proto) judge
NCG_SEES_relay := $(NCG_SEES_judge) relay
NCG_SEES_machine := $(NCG_SEES_relay) machine
NCG_SEES_net := $(NCG_SEES_machine) net
NCG_SEES_agent := $(NCG_SEES_net) agent
define NCG_OBJ_RULE
$(BUILD)/obj/interpose/$(1)/%.o: interpose/$(1)/%.c
	@mkdir -p $$(@D)
	$$(CC) $$(filter-out $$(NCG_INC),$$(BASE_CFLAGS)) $(foreach l,$(NCG_SEES_$(1)),-Iinterpose/$(l)) $$(CFLAGS) $$(SHIM_CFLAGS) -c -o $$@ $$<
endef
$(foreach l,$(NCG_LAYERS),$(eval $(call NCG_OBJ_RULE,$(l))))
# dlsym.c runs inside a sanitizer runtime's own initialisation (it calls dlsym before its shadow
# memory exists): never instrumented. It only reads the loader's tables.
$(BUILD)/obj/interpose/shim/dlsym.o: SHIM_CFLAGS += -fno-sanitize=all
$(BUILD)/libncclguard.so: $(NCG_LIB_OBJS) interpose/shim/exports.map
	$(CC) $(BASE_LDFLAGS) $(SHIM_LDFLAGS) -o $@ $(NCG_LIB_OBJS) $(SHIM_LIBS)
ALL_TARGETS += $(BUILD)/libncclguard.so $(call ncg_a,$(NCG_LAYERS))
-include $(wildcard $(BUILD)/obj/interpose/*/*.d)
