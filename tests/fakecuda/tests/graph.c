/* Stream capture and graphs: captured work does not run; a graph of 3 host functions and a
 * memset launched 100 times runs each node once per launch, in order; the exec outlives its
 * graph; exec update; capture on the legacy stream refused; capture status and ids; a
 * synchronization on a capturing stream fails and invalidates the capture; user objects. */
#include <string.h>

#include "fc_test.h"

#define LAUNCHES 100

struct trace {
    pthread_mutex_t mu;
    int n;
    char v[4 * LAUNCHES + 16];
    unsigned char *buf; /* memset to 0x5a between b and c */
};

struct node {
    struct trace *t;
    char name;
};

static void mark(void *arg)
{
    struct node *nd = arg;
    pthread_mutex_lock(&nd->t->mu);
    if (nd->name == 'c') {
        REQUIRE(nd->t->buf[0] == 0x5a && nd->t->buf[99] == 0x5a); /* the memset ran before */
        nd->t->buf[0] = 0;
    }
    nd->t->v[nd->t->n++] = nd->name;
    pthread_mutex_unlock(&nd->t->mu);
}

static void count(void *arg)
{
    __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

static void basic(void)
{
    static struct trace t = {PTHREAD_MUTEX_INITIALIZER, 0, {0}, NULL};
    static struct node a = {&t, 'a'}, b = {&t, 'b'}, c = {&t, 'c'};
    cudaGraphNode_t nodes[8];
    enum cudaStreamCaptureStatus st;
    cudaGraphExec_t exec;
    cudaStream_t s;
    cudaGraph_t g;
    size_t n = 0;
    int i;

    CK(cudaMallocHost((void **)&t.buf, 4096));
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamIsCapturing(s, &st));
    REQUIRE(st == cudaStreamCaptureStatusNone);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState);
    CK(cudaStreamIsCapturing(s, &st));
    REQUIRE(st == cudaStreamCaptureStatusActive);
    CK(cudaLaunchHostFunc(s, mark, &a));
    CK(cudaLaunchHostFunc(s, mark, &b));
    CK(cudaMemsetAsync(t.buf, 0x5a, 100, s));
    CK(cudaLaunchHostFunc(s, mark, &c));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaStreamIsCapturing(s, &st));
    REQUIRE(st == cudaStreamCaptureStatusNone);
    CK(cudaStreamSynchronize(s));
    REQUIRE(t.n == 0); /* captured, not run */
    CK(cudaGraphGetNodes(g, NULL, &n));
    REQUIRE(n == 4);
    n = 8;
    CK(cudaGraphGetNodes(g, nodes, &n));
    REQUIRE(n == 4 && nodes[3] != NULL && nodes[4] == NULL);
    CK(cudaGraphInstantiate(&exec, g, 0));
    CK(cudaGraphDestroy(g)); /* the exec has its own copy */
    EXPECT(cudaGraphDestroy(g), cudaErrorInvalidResourceHandle);
    CK(cudaGraphUpload(exec, s));
    for (i = 0; i < LAUNCHES; i++)
        CK(cudaGraphLaunch(exec, s));
    CK(cudaStreamSynchronize(s));
    REQUIRE(t.n == 3 * LAUNCHES);
    for (i = 0; i < 3 * LAUNCHES; i++)
        REQUIRE(t.v[i] == "abc"[i % 3]);
    CK(cudaGraphExecDestroy(exec));
    EXPECT(cudaGraphLaunch(exec, s), cudaErrorInvalidResourceHandle);
    CK(cudaStreamDestroy(s));
    CK(cudaFreeHost(t.buf));
    printf("graph: basic ok\n");
}

/* Two launches of one exec on two streams never overlap; launches serialize with the
 * stream's other work. */
static void serialize(void)
{
    static struct gate gate = GATE_INIT;
    cudaStream_t s1, s2;
    cudaGraphExec_t exec;
    cudaGraph_t g;
    int hits = 0;

    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeThreadLocal));
    CK(cudaLaunchHostFunc(s1, count, &hits));
    CK(cudaStreamEndCapture(s1, &g));
    CK(cudaGraphInstantiateWithFlags(&exec, g, 0));
    CK(cudaLaunchHostFunc(s1, gate_wait, &gate));
    CK(cudaGraphLaunch(exec, s1)); /* behind the gate */
    CK(cudaGraphLaunch(exec, s2)); /* behind the launch on s1 */
    gate_entered(&gate);
    sleep_ms(50);
    REQUIRE(__atomic_load_n(&hits, __ATOMIC_RELAXED) == 0);
    EXPECT(cudaStreamQuery(s2), cudaErrorNotReady);
    gate_open(&gate);
    CK(cudaStreamSynchronize(s2));
    REQUIRE(hits == 2);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    printf("graph: serialize ok\n");
}

static void update(void)
{
    cudaGraphExecUpdateResultInfo info;
    cudaGraphInstantiateParams p;
    cudaGraph_t g1, g2, g3, g4;
    int x = 0, y = 0, buf[4];
    cudaGraphExec_t exec;
    cudaStream_t s;

    CK(cudaStreamCreate(&s));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CK(cudaLaunchHostFunc(s, count, &x));
    CK(cudaStreamEndCapture(s, &g1));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CK(cudaLaunchHostFunc(s, count, &y));
    CK(cudaStreamEndCapture(s, &g2));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CK(cudaLaunchHostFunc(s, count, &y));
    CK(cudaLaunchHostFunc(s, count, &y));
    CK(cudaStreamEndCapture(s, &g3));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    CK(cudaMemsetAsync(buf, 0, sizeof buf, s));
    CK(cudaStreamEndCapture(s, &g4));
    memset(&p, 0xff, sizeof p);
    p.flags = 0;
    p.uploadStream = s;
    CK(cudaGraphInstantiateWithParams(&exec, g1, &p));
    REQUIRE(p.result_out == cudaGraphInstantiateSuccess && p.errNode_out == NULL);
    CK(cudaGraphLaunch(exec, s));
    CK(cudaGraphExecUpdate(exec, g2, &info)); /* same shape: the exec now runs g2's node */
    REQUIRE(info.result == cudaGraphExecUpdateSuccess);
    CK(cudaGraphLaunch(exec, s));
    EXPECT(cudaGraphExecUpdate(exec, g3, &info), cudaErrorGraphExecUpdateFailure);
    REQUIRE(info.result == cudaGraphExecUpdateErrorTopologyChanged);
    EXPECT(cudaGraphExecUpdate(exec, g4, &info), cudaErrorGraphExecUpdateFailure);
    REQUIRE(info.result == cudaGraphExecUpdateErrorNodeTypeChanged && info.errorNode != NULL);
    CK(cudaGraphLaunch(exec, s)); /* failed updates left it alone */
    CK(cudaStreamSynchronize(s));
    REQUIRE(x == 1 && y == 2);
    CK(cudaGraphExecDestroy(exec));
    CK(cudaGraphDestroy(g1));
    CK(cudaGraphDestroy(g2));
    CK(cudaGraphDestroy(g3));
    CK(cudaGraphDestroy(g4));
    CK(cudaStreamDestroy(s));
    printf("graph: update ok\n");
}

static void capture_rules(void)
{
    unsigned long long id1 = 0, id2 = 0, id3 = 0;
    enum cudaStreamCaptureStatus st;
    const cudaGraphNode_t *deps;
    cudaGraph_t g, cg = NULL;
    cudaStream_t s, t;
    size_t nd = 9;
    int x = 0;

    EXPECT(cudaStreamBeginCapture(NULL, cudaStreamCaptureModeGlobal),
           cudaErrorStreamCaptureUnsupported);
    EXPECT(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal),
           cudaErrorStreamCaptureUnsupported);
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
    EXPECT(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaStreamBeginCapture(t, cudaStreamCaptureModeGlobal));
    CK(cudaStreamGetCaptureInfo(s, &st, &id1, &cg, &deps, NULL, &nd));
    REQUIRE(st == cudaStreamCaptureStatusActive && id1 != 0 && cg != NULL && nd == 0);
    CK(cudaStreamGetCaptureInfo(t, &st, &id2, NULL, NULL, NULL, NULL));
    REQUIRE(st == cudaStreamCaptureStatusActive && id2 != 0 && id2 != id1);
    CK(cudaLaunchHostFunc(s, count, &x));
    CK(cudaStreamGetCaptureInfo(s, &st, &id3, NULL, &deps, NULL, &nd));
    REQUIRE(id3 == id1 && nd == 1 && deps && deps[0]); /* the id is stable through the capture */
    EXPECT(cudaGraphDestroy(cg), cudaErrorIllegalState);
    /* synchronizing a capturing stream fails and invalidates the capture */
    EXPECT(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported);
    CK(cudaStreamIsCapturing(s, &st));
    REQUIRE(st == cudaStreamCaptureStatusInvalidated);
    CK(cudaStreamGetCaptureInfo(s, &st, &id3, NULL, NULL, NULL, NULL));
    REQUIRE(st == cudaStreamCaptureStatusInvalidated && id3 == id1);
    EXPECT(cudaLaunchHostFunc(s, count, &x), cudaErrorStreamCaptureInvalidated);
    EXPECT(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    REQUIRE(g == NULL);
    CK(cudaStreamIsCapturing(s, &st));
    REQUIRE(st == cudaStreamCaptureStatusNone);
    EXPECT(cudaStreamQuery(t), cudaErrorStreamCaptureUnsupported);
    EXPECT(cudaStreamEndCapture(t, &g), cudaErrorStreamCaptureInvalidated);
    /* a fresh capture of the same stream is a new sequence */
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaStreamGetCaptureInfo(s, &st, &id3, NULL, NULL, NULL, NULL));
    REQUIRE(id3 != id1 && id3 != id2 && id3 != 0);
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphDestroy(g));
    CK(cudaStreamSynchronize(s));
    REQUIRE(x == 0);
    CK(cudaStreamDestroy(s));
    CK(cudaStreamDestroy(t));
    printf("graph: capture rules ok\n");
}

static void uobj_destroyed(void *arg)
{
    __atomic_fetch_add((int *)arg, 1, __ATOMIC_RELAXED);
}

/* A user object retained by a graph lives until the graph and every exec made from it went,
 * and an exec destroyed with launches in flight keeps it until they ran. */
static void user_objects(void)
{
    static struct gate gate = GATE_INIT;
    enum cudaStreamCaptureStatus st;
    cudaGraphExec_t exec;
    cudaUserObject_t o;
    cudaStream_t s;
    cudaGraph_t g;
    int freed = 0, x = 0;

    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    CK(cudaUserObjectCreate(&o, &freed, uobj_destroyed, 1, cudaUserObjectNoDestructorSync));
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    CK(cudaStreamGetCaptureInfo(s, &st, NULL, &g, NULL, NULL, NULL));
    CK(cudaGraphRetainUserObject(g, o, 1, cudaGraphUserObjectMove));
    CK(cudaLaunchHostFunc(s, count, &x));
    CK(cudaStreamEndCapture(s, &g));
    CK(cudaGraphInstantiate(&exec, g, 0));
    CK(cudaGraphDestroy(g));
    REQUIRE(freed == 0);
    CK(cudaLaunchHostFunc(s, gate_wait, &gate));
    CK(cudaGraphLaunch(exec, s));
    CK(cudaGraphExecDestroy(exec));
    sleep_ms(20);
    REQUIRE(__atomic_load_n(&freed, __ATOMIC_RELAXED) == 0); /* the launch is still queued */
    gate_open(&gate);
    CK(cudaStreamSynchronize(s));
    REQUIRE(x == 1 && freed == 1);
    CK(cudaStreamDestroy(s));
    printf("graph: user objects ok\n");
}

int main(void)
{
    basic();
    serialize();
    update();
    capture_rules();
    user_objects();
    return 0;
}
