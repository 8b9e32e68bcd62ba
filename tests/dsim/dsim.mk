# ncg-dsim (tests/dsim, docs/simulator.md): the checker's protocol under a deterministic
# simulator: the real relay root and codecs, the agent's real machines (the machine layer) under
# a model of its I/O, one thread, virtual time.
DSIM_SRCS := $(wildcard tests/dsim/*.c)
DSIM_LAYERS := machine net relay judge proto common
$(BUILD)/tests/ncg-dsim: $(DSIM_SRCS) tests/dsim/dsim.h $(call ncg_a,$(DSIM_LAYERS))
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ $(DSIM_SRCS) $(call ncg_link,$(DSIM_LAYERS)) -lpthread
TEST_BINS += $(BUILD)/tests/ncg-dsim

# The relay built with one rule broken (NCG_SIM_BREAK_<RULE>), for t_dsim_broken.sh: its own
# objects under $(BUILD)/dsim-break-<rule>/, the other layers shared.
DSIM_BREAKS := release count release1
DSIM_BREAK_DEF_release := NCG_SIM_BREAK_EXIT_RELEASE
DSIM_BREAK_DEF_count := NCG_SIM_BREAK_DEPARTED_COUNT
DSIM_BREAK_DEF_release1 := NCG_SIM_BREAK_ONE_RELEASE
define DSIM_BREAK_RULE
$(BUILD)/dsim-break-$(1)/%.o: interpose/relay/%.c tests/dsim/dsim.mk
	@mkdir -p $$(@D)
	$$(CC) $$(filter-out $$(NCG_INC),$$(BASE_CFLAGS)) $(foreach l,$(NCG_SEES_relay),-Iinterpose/$(l)) $$(CFLAGS) -D$(DSIM_BREAK_DEF_$(1)) -MMD -MP -c -o $$@ $$<
$(BUILD)/tests/ncg-dsim-break-$(1): $(DSIM_SRCS) tests/dsim/dsim.h $(patsubst interpose/relay/%.c,$(BUILD)/dsim-break-$(1)/%.o,$(call ncg_srcs,relay)) $(call ncg_a,machine net judge proto common)
	@mkdir -p $$(@D)
	$$(CC) $$(CHK_CFLAGS) $$(BASE_LDFLAGS) -o $$@ $(DSIM_SRCS) $(patsubst interpose/relay/%.c,$(BUILD)/dsim-break-$(1)/%.o,$(call ncg_srcs,relay)) $(call ncg_link,machine net judge proto common) -lpthread
endef
$(foreach b,$(DSIM_BREAKS),$(eval $(call DSIM_BREAK_RULE,$(b))))
# (their headers too, and this file: a changed relay_int.h left stale objects of another layout)
-include $(wildcard $(BUILD)/dsim-break-*/*.d)
.PHONY: dsim-broken
dsim-broken: $(foreach b,$(DSIM_BREAKS),$(BUILD)/tests/ncg-dsim-break-$(b))
TEST_BINS += $(foreach b,$(DSIM_BREAKS),$(BUILD)/tests/ncg-dsim-break-$(b))

# One seed, replayed bit for bit: make sim SEED=N [SIM_ARGS='--workload mismatch ...']
SEED ?= 1
.PHONY: sim
sim: $(BUILD)/tests/ncg-dsim
	$(BUILD)/tests/ncg-dsim --seed $(SEED) $(SIM_ARGS)
