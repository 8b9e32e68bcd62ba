/* api: the single-process parts of the API. `api basics`: version, error strings, the unique
 * id's layout (random magic, the host's socket address, zero tail), NCCL_COMM_ID ids, argument
 * errors, groups (unmatched end, GroupSimulateEnd), memory, registration, windows,
 * ncclCommInitAll and a group of ncclCommInitRank driving several ranks from one thread, the
 * device API's host side (device communicators refused, teams).
 * `api bcast N`: N ncclBcast calls on a 1-rank comm (for the PLT interposition test).
 * `api commid` (under ncg-launch, NCCL_COMM_ID set): each rank builds its own id, one AllReduce.
 * Prints what it checked; exit 0 when everything matched. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ncclguard/nccl_abi.h"
#include "ncg_test.h"

static int g_fail;
#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            g_fail++;                                                                              \
            fprintf(stderr, "api: line %d: ", __LINE__);                                           \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static int tail_zero(const ncclUniqueId *id)
{
    for (int i = 40; i < NCCL_UNIQUE_ID_BYTES; i++)
        if (id->internal[i])
            return 0;
    return 1;
}

/* a op b over a two-rank InitAll pair, for one element given by its bit pattern */
static unsigned pair_reduce(ncclComm_t *cs, ncclDataType_t dt, unsigned a, unsigned b,
                            ncclRedOp_t op)
{
    unsigned in[2] = {a, b}, out[2] = {0, 0};
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < 2; i++)
        NCG_CHECK(ncclAllReduce(&in[i], &out[i], 1, dt, op, cs[i], NULL));
    NCG_CHECK(ncclGroupEnd());
    EXPECT(out[0] == out[1], "ranks disagree: %#x %#x", out[0], out[1]);
    return out[0];
}

/* Small-float rounding: ties to even, overflow to inf (e4m3: saturate at 448). */
static void rounding(void)
{
    ncclComm_t cs[2];
    NCG_CHECK(ncclCommInitAll(cs, 2, NULL));
    static const struct {
        ncclDataType_t dt;
        unsigned a, b, want;
        const char *what;
    } cases[] = {
        {ncclFloat16, 0x3C00, 0x1000, 0x3C00, "half 1 + 2^-11 ties to even (down)"},
        {ncclFloat16, 0x3C01, 0x1000, 0x3C02, "half (1 + 2^-10) + 2^-11 ties to even (up)"},
        {ncclFloat16, 0x7BFF, 0x7BFF, 0x7C00, "half 65504 + 65504 = inf"},
        {ncclBfloat16, 0x3F80, 0x3B80, 0x3F80, "bf16 1 + 2^-8 ties to even"},
        {ncclFloat8e4m3, 0x38, 0x18, 0x38, "e4m3 1 + 1/16 ties to even"},
        {ncclFloat8e4m3, 0x39, 0x18, 0x3A, "e4m3 1.125 + 1/16 ties to even (up)"},
        {ncclFloat8e4m3, 0x7C, 0x7C, 0x7E, "e4m3 384 + 384 saturates at 448"},
        {ncclFloat8e5m2, 0x3C, 0x30, 0x3C, "e5m2 1 + 1/8 ties to even"},
        {ncclFloat8e5m2, 0x7B, 0x7B, 0x7C, "e5m2 57344 + 57344 = inf"},
        {ncclFloat8e4m3, 0xB8, 0x38, 0x00, "e4m3 -1 + 1 = 0"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        unsigned got = pair_reduce(cs, cases[i].dt, cases[i].a, cases[i].b, ncclSum);
        EXPECT(got == cases[i].want, "%s: got %#x want %#x", cases[i].what, got, cases[i].want);
    }
    /* int avg is integer division of the (wrapped) sum, as NCCL: (7 + 8) / 2 = 7 */
    EXPECT(pair_reduce(cs, ncclInt32, 7, 8, ncclAvg) == 7, "int32 avg");
    /* signed max/min compare as signed */
    EXPECT(pair_reduce(cs, ncclInt8, 0xFF, 0x01, ncclMax) == 0x01, "int8 max(-1, 1)");
    EXPECT(pair_reduce(cs, ncclUint8, 0xFF, 0x01, ncclMax) == 0xFF, "uint8 max(255, 1)");
    /* integer sums wrap */
    EXPECT(pair_reduce(cs, ncclUint8, 0xFF, 0x02, ncclSum) == 0x01, "uint8 255 + 2 wraps");
    for (int i = 0; i < 2; i++)
        NCG_CHECK(ncclCommDestroy(cs[i]));
}

/* The device API's host side (nccl_device/core.h; not in our ABI header): a team is 3 ints. */
typedef struct {
    int nRanks, rank, stride;
} team_t;
ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *outDevComm);
ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm);
team_t ncclTeamWorld(ncclComm_t comm);
team_t ncclTeamLsa(ncclComm_t comm);
team_t ncclTeamRail(ncclComm_t comm);
int ncclTeamRankToWorld(ncclComm_t comm, team_t team, int rank);

/* Device communicators need a GPU: ncclInvalidUsage with a reason, nothing written; the teams
 * of rank 1 of 3 on one host. */
static void devapi(ncclComm_t c)
{
    unsigned char devcomm[256], reqs[256];
    memset(devcomm, 0x5a, sizeof devcomm);
    memset(reqs, 0, sizeof reqs);
    EXPECT(ncclDevCommCreate(c, reqs, devcomm) == ncclInvalidUsage, "ncclDevCommCreate");
    EXPECT(strstr(ncclGetLastError(c), "needs a GPU") != NULL, "ncclDevCommCreate last error: %s",
           ncclGetLastError(c));
    EXPECT(devcomm[0] == 0x5a && devcomm[255] == 0x5a, "ncclDevCommCreate wrote its output");
    EXPECT(ncclDevCommDestroy(c, devcomm) == ncclInvalidUsage, "ncclDevCommDestroy");
    EXPECT(ncclDevCommCreate(NULL, NULL, NULL) == ncclInvalidUsage, "ncclDevCommCreate(NULL)");
    team_t w = ncclTeamWorld(c), l = ncclTeamLsa(c), r = ncclTeamRail(c);
    EXPECT(w.nRanks == 3 && w.rank == 1 && w.stride == 1, "world team %d %d %d", w.nRanks, w.rank,
           w.stride);
    EXPECT(l.nRanks == 3 && l.rank == 1, "lsa team %d %d", l.nRanks, l.rank);
    EXPECT(r.nRanks == 1 && r.rank == 0, "rail team %d %d", r.nRanks, r.rank);
    EXPECT(ncclTeamRankToWorld(c, w, 2) == 2 && ncclTeamRankToWorld(c, w, 3) == -1,
           "team rank to world");
    EXPECT(ncclTeamWorld(NULL).nRanks == 0, "world team of NULL");
}

static void basics(void)
{
    int v = 0;
    NCG_CHECK(ncclGetVersion(&v));
    EXPECT(v == 22809, "version %d", v);
    EXPECT(!strcmp(ncclGetErrorString(ncclSuccess), "no error"), "success string");
    EXPECT(strstr(ncclGetErrorString(ncclSystemError), "system error") != NULL, "system string");
    EXPECT(strstr(ncclGetErrorString(ncclInProgress), "in progress") != NULL, "inprogress string");
    EXPECT(ncclGetErrorString((ncclResult_t)99) != NULL, "unknown code string");

    /* the id: NCCL's bootstrap handle */
    ncclUniqueId a, b;
    unsetenv("NCCL_COMM_ID");
    NCG_CHECK(ncclGetUniqueId(&a));
    NCG_CHECK(ncclGetUniqueId(&b));
    uint64_t ma, mb;
    memcpy(&ma, a.internal, 8);
    memcpy(&mb, b.internal, 8);
    EXPECT(ma != mb && ma != NCG_NCCL_COMM_ID_MAGIC && ma != 0, "magic %llx/%llx",
           (unsigned long long)ma, (unsigned long long)mb);
    struct sockaddr_in sin;
    memcpy(&sin, a.internal + 8, sizeof sin);
    EXPECT(sin.sin_family == AF_INET && sin.sin_port != 0, "family %d port %d", sin.sin_family,
           ntohs(sin.sin_port));
    EXPECT(tail_zero(&a), "id tail not zero");

    setenv("FAKENCCL_ADDR", "10.1.2.3:4567", 1);
    NCG_CHECK(ncclGetUniqueId(&a));
    memcpy(&sin, a.internal + 8, sizeof sin);
    EXPECT(sin.sin_addr.s_addr == inet_addr("10.1.2.3") && ntohs(sin.sin_port) == 4567,
           "FAKENCCL_ADDR not used");
    unsetenv("FAKENCCL_ADDR");

    setenv("NCCL_COMM_ID", "127.0.0.1:29500", 1);
    NCG_CHECK(ncclGetUniqueId(&a));
    NCG_CHECK(ncclGetUniqueId(&b));
    memcpy(&ma, a.internal, 8);
    memcpy(&sin, a.internal + 8, sizeof sin);
    EXPECT(ma == NCG_NCCL_COMM_ID_MAGIC, "NCCL_COMM_ID magic %llx", (unsigned long long)ma);
    EXPECT(sin.sin_family == AF_INET && ntohs(sin.sin_port) == 29500 &&
               sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK),
           "NCCL_COMM_ID address");
    EXPECT(!memcmp(&a, &b, sizeof a), "NCCL_COMM_ID ids differ");
    setenv("NCCL_COMM_ID", "nonsense", 1);
    EXPECT(ncclGetUniqueId(&a) == ncclInvalidArgument, "bad NCCL_COMM_ID accepted");
    unsetenv("NCCL_COMM_ID");

    /* groups */
    EXPECT(ncclGroupEnd() == ncclInvalidUsage, "unmatched ncclGroupEnd");
    ncclComm_t c1;
    NCG_CHECK(ncclGetUniqueId(&a));
    NCG_CHECK(ncclCommInitRank(&c1, 1, a, 0));
    EXPECT(strlen(ncclGetLastError(c1)) < 256, "last error");
    float x = 2, y = 0;
    ncclSimInfo_t sim = {sizeof sim, 0x74685283u, 22809, NCCL_UNDEF_FLOAT};
    NCG_CHECK(ncclGroupStart());
    NCG_CHECK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c1, NULL));
    NCG_CHECK(ncclGroupSimulateEnd(&sim));
    EXPECT(y == 0 && sim.estimatedTime > 0, "simulate: y %g time %g", y, sim.estimatedTime);
    NCG_CHECK(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, c1, NULL)); /* slots rolled back */
    EXPECT(y == 2, "after simulate: %g", y);

    /* argument errors */
    EXPECT(ncclAllReduce(&x, &y, 1, (ncclDataType_t)42, ncclSum, c1, NULL) == ncclInvalidArgument,
           "bad dtype");
    EXPECT(ncclAllReduce(&x, &y, 1, ncclFloat32, (ncclRedOp_t)77, c1, NULL) == ncclInvalidArgument,
           "bad op");
    EXPECT(ncclBroadcast(&x, &y, 1, ncclFloat32, 3, c1, NULL) == ncclInvalidArgument, "bad root");
    EXPECT(ncclSend(&x, 1, ncclFloat32, 5, c1, NULL) == ncclInvalidArgument, "bad peer");
    EXPECT(ncclAllReduce(&x, &y, 1, ncclFloat32, ncclSum, NULL, NULL) == ncclInvalidArgument,
           "NULL comm");
    ncclComm_t bad;
    EXPECT(ncclCommInitRank(&bad, 2, a, 2) == ncclInvalidArgument, "rank out of range");

    /* memory, registration, windows, odds and ends */
    void *p = NULL, *h = NULL;
    NCG_CHECK(ncclMemAlloc(&p, 1000));
    EXPECT(p != NULL, "ncclMemAlloc");
    memset(p, 1, 1000);
    NCG_CHECK(ncclCommRegister(c1, p, 1000, &h));
    EXPECT(h != NULL, "register handle");
    NCG_CHECK(ncclCommDeregister(c1, h));
    ncclWindow_t w = NULL;
    NCG_CHECK(ncclCommWindowRegister(c1, p, 1000, &w, NCCL_WIN_DEFAULT));
    NCG_CHECK(ncclCommWindowDeregister(c1, w));
    NCG_CHECK(ncclMemFree(p));
    ncclResetDebugInit();
    int dev = -1;
    NCG_CHECK(ncclCommCuDevice(c1, &dev));
    ncclResult_t ae;
    NCG_CHECK(ncclCommGetAsyncError(c1, &ae));
    EXPECT(ae == ncclSuccess, "async error %d", ae);
    NCG_CHECK(ncclCommDestroy(c1));

    /* InitAll: three ranks in this process, driven from this thread inside one group */
    ncclComm_t cs[3];
    int devs[3] = {4, 5, 6};
    NCG_CHECK(ncclCommInitAll(cs, 3, devs));
    int64_t in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < 3; i++)
        NCG_CHECK(ncclAllReduce(&in[i], &out[i], 1, ncclInt64, ncclSum, cs[i], NULL));
    NCG_CHECK(ncclGroupEnd());
    for (int i = 0; i < 3; i++) {
        int r, d;
        NCG_CHECK(ncclCommUserRank(cs[i], &r));
        NCG_CHECK(ncclCommCuDevice(cs[i], &d));
        EXPECT(out[i] == 6 && r == i && d == devs[i], "InitAll comm %d: sum %lld rank %d dev %d", i,
               (long long)out[i], r, d);
    }
    devapi(cs[1]);
    for (int i = 0; i < 3; i++)
        NCG_CHECK(ncclCommDestroy(cs[i]));

    /* the single-process multi-GPU pattern: InitRank for several ranks inside one group */
    ncclComm_t gs[4];
    NCG_CHECK(ncclGetUniqueId(&a));
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < 4; i++)
        NCG_CHECK(ncclCommInitRank(&gs[i], 4, a, i));
    NCG_CHECK(ncclGroupEnd());
    int32_t send[4][4], recv[4][16];
    NCG_CHECK(ncclGroupStart());
    for (int i = 0; i < 4; i++) {
        for (int k = 0; k < 4; k++)
            send[i][k] = i * 10 + k;
        NCG_CHECK(ncclAllGather(send[i], recv[i], 4, ncclInt32, gs[i], NULL));
    }
    NCG_CHECK(ncclGroupEnd());
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 16; k++)
            EXPECT(recv[i][k] == (k / 4) * 10 + k % 4, "group init allgather %d/%d", i, k);
    for (int i = 0; i < 4; i++)
        NCG_CHECK(ncclCommDestroy(gs[i]));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "basics";
    if (!strcmp(mode, "bcast")) {
        int n = argc > 2 ? atoi(argv[2]) : 3;
        ncclUniqueId id;
        ncclComm_t c;
        NCG_CHECK(ncclGetUniqueId(&id));
        NCG_CHECK(ncclCommInitRank(&c, 1, id, 0));
        int v = 5;
        for (int i = 0; i < n; i++)
            NCG_CHECK(ncclBcast(&v, 1, ncclInt32, 0, c, NULL));
        NCG_CHECK(ncclCommDestroy(c));
        printf("api: %d ncclBcast calls done\n", n);
        return v == 5 ? 0 : 1;
    }
    if (!strcmp(mode, "commid")) {
        /* NCCL_COMM_ID: every rank builds the id itself; nothing is exchanged */
        int me = ncg_test_rank(), n = ncg_test_world();
        ncclUniqueId id;
        ncclComm_t c;
        NCG_CHECK(ncclGetUniqueId(&id));
        NCG_CHECK(ncclCommInitRank(&c, n, id, me));
        int64_t v = me, s = -1;
        NCG_CHECK(ncclAllReduce(&v, &s, 1, ncclInt64, ncclSum, c, NULL));
        NCG_CHECK(ncclCommDestroy(c));
        if (s != (int64_t)n * (n - 1) / 2)
            return 1;
        if (me == 0)
            printf("api: NCCL_COMM_ID job of %d ranks ok\n", n);
        return 0;
    }
    basics();
    rounding();
    if (g_fail)
        return 1;
    printf("api: basics ok\n");
    return 0;
}
