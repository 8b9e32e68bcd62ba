# The divergence matrix (tests/matrix/README.md): mx, one NCCL program for every (kind, fault)
# case, built like the checker's scen; `make matrix` runs the full matrix in both NCCL modes.
MX_OUT = $(BUILD)/tests/matrix

$(MX_OUT)/mx: tests/matrix/mx.c $(APPS_OUT)/obj/ncg_test.o $(APPS_DIR)/ncg_test.h $(FN_LIB)
	@mkdir -p $(@D)
	$(CC) $(APP_CFLAGS) $(BASE_LDFLAGS) -o $@ $< $(APPS_OUT)/obj/ncg_test.o $(FN_APP_LIBS) -lpthread -ldl
TEST_BINS += $(MX_OUT)/mx

# 3 cases at a time (a hanging run sleeps); MATRIX_ARGS: more options for tests/matrix/run.sh
# (--jobs N, --out DIR, --filter RE, --modes M).
.PHONY: matrix
matrix: all
	@NCG_BUILD=$(BUILD) tests/matrix/run.sh --modes "sync async" --jobs 3 $(MATRIX_ARGS)
