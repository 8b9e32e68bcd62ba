# The checker's tests (unit tests of the pure layers, fuzzers, scenarios), the demo and its
# benchmarks. The code itself: interpose/{proto,judge,coord,relay,net,agent}, built by
# interpose/interpose.mk into one archive per layer, which the programs here link.
CHK_OUT = $(BUILD)/tests/checker
CHK_CFLAGS = $(CFLAGS) $(BASE_CFLAGS) -Itests/apps

# Unit tests of the pure parts (wire, verdicts, compact lists, coordinator state machine,
# the diagnostics' text).
CHK_UNIT_LAYERS := agent machine judge proto common
# unit.c holds the shared round trip and main; unit_<topic>.c the tests (unit.h).
CHK_UNIT_SRCS := tests/checker/unit.c $(foreach t,wire verdicts,tests/checker/unit_$(t).c)
$(CHK_OUT)/unit: $(CHK_UNIT_SRCS) tests/checker/unit.h tests/checker/check.h \
                 $(call ncg_a,$(CHK_UNIT_LAYERS))
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ $(CHK_UNIT_SRCS) $(call ncg_link,$(CHK_UNIT_LAYERS))

# Wire decoder fuzzing: a standalone driver over random/mutated frames (always built), and a
# libFuzzer target when clang is there (make fuzz-wire).
$(CHK_OUT)/fuzz_wire: tests/checker/fuzz_wire.c $(call ncg_a,proto)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/fuzz_wire.c $(call ncg_link,proto)

.PHONY: fuzz-wire
FUZZ_SECONDS ?= 60
fuzz-wire:
	@mkdir -p $(BUILD)/tests/checker
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -DNCG_LIBFUZZER -Iinclude $(NCG_INC) \
	  -o $(BUILD)/tests/checker/fuzz_wire_lf tests/checker/fuzz_wire.c $(call ncg_srcs,proto)
	$(BUILD)/tests/checker/fuzz_wire_lf -max_total_time=$(FUZZ_SECONDS)

# Divergence scenarios as an NCCL program (uses the CPU NCCL and tests/apps/ncg_test.h).
$(CHK_OUT)/scen: tests/checker/scen.c $(APPS_OUT)/obj/ncg_test.o $(FN_LIB)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread

# The hangs a new user's programs showed (send/recv, mixed, asynchronous, threads): t_shapes.sh.
$(CHK_OUT)/shapes: tests/checker/shapes.c $(APPS_OUT)/obj/ncg_test.o $(FN_LIB)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread

TEST_BINS += $(CHK_OUT)/shapes

# A raw TCP client for the "garbage / wrong token" tests.
$(CHK_OUT)/rawconn: tests/checker/rawconn.c $(call ncg_a,judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/rawconn.c $(call ncg_link,judge proto common)

# The wait-for graph alone (DEADLOCK).
$(CHK_OUT)/waitfor_test: tests/checker/waitfor_test.c tests/checker/check.h $(call ncg_a,judge)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/waitfor_test.c $(call ncg_link,judge)

# Fault injection: allocations fail in the checker thread of one rank (out-of-memory tests).
$(CHK_OUT)/failalloc.so: tests/checker/failalloc.c
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -shared -o $@ $<

# The straggler decision alone (SLOW).
$(CHK_OUT)/straggler_test: tests/checker/straggler_test.c tests/checker/check.h $(call ncg_a,judge)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/straggler_test.c $(call ncg_link,judge)

# One-sided signals in the p2p matcher (tests/checker/t_signals.sh).
$(CHK_OUT)/signal_test: tests/checker/signal_test.c tests/checker/check.h $(call ncg_a,judge)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/signal_test.c $(call ncg_link,judge)

TEST_BINS += $(CHK_OUT)/waitfor_test $(CHK_OUT)/straggler_test $(CHK_OUT)/signal_test
TEST_BINS += $(CHK_OUT)/unit $(CHK_OUT)/fuzz_wire $(CHK_OUT)/scen $(CHK_OUT)/rawconn \
             $(CHK_OUT)/failalloc.so

demo: all
	@scripts/demo.sh

.PHONY: bench-detect
bench-detect: all
	@NCG_BUILD=$(BUILD) scripts/bench-detect.sh
BENCH_TARGETS += bench-detect

# The exit release under a launcher that kills at the first exit (scripts/bench-release.sh).
.PHONY: bench-release
bench-release: all
	@NCG_BUILD=$(BUILD) scripts/bench-release.sh
BENCH_TARGETS += bench-release

# The status endpoint's tests: parser, renderers and server state machine; parser
# fuzzing as a standalone driver (always built) and a libFuzzer target (make fuzz-http).
$(CHK_OUT)/http_unit: tests/checker/http_unit.c tests/checker/check.h interpose/cli/json.c $(call ncg_a,net relay judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) -Iinterpose/cli $(BASE_LDFLAGS) -o $@ tests/checker/http_unit.c interpose/cli/json.c $(call ncg_link,net relay judge proto common)
$(CHK_OUT)/fuzz_http: tests/checker/fuzz_http.c interpose/net/http_parse.c interpose/net/http_parse.h
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/fuzz_http.c interpose/net/http_parse.c
TEST_BINS += $(CHK_OUT)/http_unit $(CHK_OUT)/fuzz_http

.PHONY: fuzz-http
fuzz-http:
	@mkdir -p $(BUILD)/tests/checker
	clang -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined -DNCG_LIBFUZZER -Iinclude $(NCG_INC) \
	  -o $(BUILD)/tests/checker/fuzz_http_lf tests/checker/fuzz_http.c interpose/net/http_parse.c
	$(BUILD)/tests/checker/fuzz_http_lf -max_total_time=$(FUZZ_SECONDS)

# The endpoint's cost to the checker at 1,024 simulated ranks (BENCHMARKS.md).
$(BUILD)/bench/httpbench: tests/bench/httpbench.c $(call ncg_a,net relay judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/bench/httpbench.c $(call ncg_link,net relay judge proto common)
TEST_BINS += $(BUILD)/bench/httpbench
.PHONY: bench-http
bench-http: $(BUILD)/bench/httpbench
	@$(BUILD)/bench/httpbench 1024 $${NCG_BENCH_SCRAPES:-200}
BENCH_TARGETS += bench-http
# One DEADLOCK check at scale (the graph's cost in a hang: W waiting of N ranks).
$(BUILD)/bench/dlbench: tests/bench/dlbench.c $(call ncg_a,judge proto)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/bench/dlbench.c $(call ncg_link,judge proto)
TEST_BINS += $(BUILD)/bench/dlbench
.PHONY: bench-deadlock
bench-deadlock: $(BUILD)/bench/dlbench
	@$(BUILD)/bench/dlbench $${NCG_BENCH_RUNS:-9}
BENCH_TARGETS += bench-deadlock
# The same cost in a real 16-rank job on the CPU NCCL (scraped vs not, in one run).
.PHONY: bench-http-real
bench-http-real: all
	tests/bench/httpreal.sh $(BUILD)
BENCH_TARGETS += bench-http-real

# The relay tree: its state machine, unit-tested over an in-memory network, and in
# the shim with its host (relayhost.c) under NCCLGUARD_TREE (docs/checker.md, "the relay tree").
# relay_unit.c holds the network and main; relay_unit_<topic>.c the tests (relay_unit.h).
CHK_RELAY_UNIT_SRCS := tests/checker/relay_unit.c \
  $(foreach t,codec rounds faults exit progress p2p deadlock,tests/checker/relay_unit_$(t).c)
$(CHK_OUT)/relay_unit: $(CHK_RELAY_UNIT_SRCS) tests/checker/relay_unit.h tests/checker/check.h \
                       $(call ncg_a,relay judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ $(CHK_RELAY_UNIT_SRCS) $(call ncg_link,relay judge proto common)
TEST_BINS += $(CHK_OUT)/relay_unit

# The simulator: N virtual ranks through the relay tree's code and protocol (tests/sim).
SIM_SRCS := tests/sim/ncg_sim.c tests/sim/sim_run.c tests/sim/sim_link.c tests/sim/sim_rank.c
$(BUILD)/tests/ncg-sim: $(SIM_SRCS) tests/sim/sim.h interpose/cli/json.c $(call ncg_a,relay net relay judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) -Iinterpose/cli $(BASE_LDFLAGS) -o $@ $(SIM_SRCS) interpose/cli/json.c $(call ncg_link,relay net relay judge proto common)
TEST_BINS += $(BUILD)/tests/ncg-sim
.PHONY: bench-scale
bench-scale: $(BUILD)/tests/ncg-sim
	@NCG_BUILD=$(BUILD) scripts/bench-scale.sh
BENCH_TARGETS += bench-scale

# One relay as a standalone process, for the end-to-end test of real ranks through relays.
$(BUILD)/tests/ncg-relayd: tests/sim/relayd.c interpose/cli/json.c $(call ncg_a,relay net relay judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) -Iinterpose/cli $(BASE_LDFLAGS) -o $@ tests/sim/relayd.c interpose/cli/json.c $(call ncg_link,relay net relay judge proto common)
TEST_BINS += $(BUILD)/tests/ncg-relayd

# Several comm ranks in one process (NCCL's multiple-devices-per-thread pattern, InitAll).
TEST_BINS += $(APPS_OUT)/multidev $(APPS_OUT)/tworelease

# The id's tail codec alone (interpose/proto/idtail.c).
$(CHK_OUT)/idtail_test: tests/checker/idtail_test.c tests/checker/check.h $(call ncg_a,proto)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/idtail_test.c $(call ncg_link,proto)
TEST_BINS += $(CHK_OUT)/idtail_test

# Figure runs alone (interpose/proto/figruns.c): round trips, coarsening, edges.
$(CHK_OUT)/figruns_test: tests/checker/figruns_test.c tests/checker/check.h $(call ncg_a,proto)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/figruns_test.c $(call ncg_link,proto)
TEST_BINS += $(CHK_OUT)/figruns_test

# The verdicts a process decides on its own (interpose/judge/local.c).
$(CHK_OUT)/local_test: tests/checker/local_test.c tests/checker/check.h $(call ncg_a,judge proto)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/local_test.c $(call ncg_link,judge proto)
TEST_BINS += $(CHK_OUT)/local_test

# The agent's link to its checker as a state machine (interpose/machine/link_sm.c).
$(CHK_OUT)/link_sm_test: tests/checker/link_sm_test.c tests/checker/check.h $(call ncg_a,machine)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/link_sm_test.c $(call ncg_link,machine)
TEST_BINS += $(CHK_OUT)/link_sm_test
# The exit's state machine alone (interpose/machine/exit_sm.c): every phase and the overlaps.
$(CHK_OUT)/exit_sm_test: tests/checker/exit_sm_test.c tests/checker/check.h $(call ncg_a,machine)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/exit_sm_test.c $(call ncg_link,machine)
TEST_BINS += $(CHK_OUT)/exit_sm_test
# A verdict's way through one process, its pure steps (interpose/machine/verdict_sm.c).
$(CHK_OUT)/verdict_test: tests/checker/verdict_test.c tests/checker/check.h $(call ncg_a,machine judge proto common)
	@mkdir -p $(@D)
	$(CC) $(CHK_CFLAGS) $(BASE_LDFLAGS) -o $@ tests/checker/verdict_test.c $(call ncg_link,machine judge proto common)
TEST_BINS += $(CHK_OUT)/verdict_test
