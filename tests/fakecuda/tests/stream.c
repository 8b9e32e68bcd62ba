/* Stream order: host functions, async copies and sets run in enqueue order on one stream,
 * many host threads enqueue concurrently, destroy with pending work returns at once. */
#include <string.h>

#include "fc_test.h"

#define N_OPS 2000
#define N_THREADS 4

struct log {
    pthread_mutex_t mu;
    int n;
    int v[N_THREADS * N_OPS + 16];
};

struct item {
    struct log *log;
    int value;
};

static void append(void *arg)
{
    struct item *it = arg;
    pthread_mutex_lock(&it->log->mu);
    it->log->v[it->log->n++] = it->value;
    pthread_mutex_unlock(&it->log->mu);
}

static void check_byte(void *arg)
{
    unsigned char *p = arg;
    REQUIRE(p[0] == 0x5a && p[4095] == 0x5a); /* the memset before us ran */
    p[0] = 0x11;
}

static void order(void)
{
    static struct log log = {PTHREAD_MUTEX_INITIALIZER, 0, {0}};
    static struct item items[N_OPS];
    cudaStream_t s;
    unsigned char *dev, *host;
    int i;

    CK(cudaStreamCreate(&s));
    for (i = 0; i < N_OPS; i++) {
        items[i] = (struct item){&log, i};
        CK(cudaLaunchHostFunc(s, append, &items[i]));
    }
    CK(cudaStreamSynchronize(s));
    REQUIRE(log.n == N_OPS);
    for (i = 0; i < N_OPS; i++)
        REQUIRE(log.v[i] == i);

    /* memset, host func reading it, memcpy back: stream order, not host order */
    CK(cudaMalloc((void **)&dev, 4096));
    CK(cudaMallocHost((void **)&host, 4096));
    memset(host, 0, 4096);
    CK(cudaMemsetAsync(dev, 0x5a, 4096, s));
    CK(cudaLaunchHostFunc(s, check_byte, dev));
    CK(cudaMemcpyAsync(host, dev, 4096, cudaMemcpyDeviceToHost, s));
    CK(cudaMemsetAsync(dev, 0, 4096, s));
    CK(cudaMemcpyAsync(host + 1, dev, 1, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    REQUIRE(host[0] == 0x11 && host[1] == 0 && host[2] == 0x5a && host[4095] == 0x5a);
    /* synchronous forms on the default stream */
    CK(cudaMemset(dev, 7, 4096));
    CK(cudaMemcpy(host, dev, 4096, cudaMemcpyDefault));
    REQUIRE(host[0] == 7 && host[4095] == 7);
    CK(cudaFree(dev));
    CK(cudaFreeHost(host));
    CK(cudaStreamDestroy(s));
    printf("stream: order ok\n");
}

struct worker_arg {
    cudaStream_t shared;
    int id;
    struct log *own_log, *shared_log;
    struct item items[N_OPS], shared_items[N_OPS];
};

static void *enqueuer(void *arg)
{
    struct worker_arg *w = arg;
    cudaStream_t own;
    int i;

    CK(cudaStreamCreateWithFlags(&own, cudaStreamNonBlocking));
    for (i = 0; i < N_OPS; i++) {
        w->items[i] = (struct item){w->own_log, i};
        w->shared_items[i] = (struct item){w->shared_log, w->id * N_OPS + i};
        CK(cudaLaunchHostFunc(own, append, &w->items[i]));
        CK(cudaLaunchHostFunc(w->shared, append, &w->shared_items[i]));
    }
    CK(cudaStreamSynchronize(own));
    REQUIRE(w->own_log->n == N_OPS);
    for (i = 0; i < N_OPS; i++)
        REQUIRE(w->own_log->v[i] == i);
    CK(cudaStreamDestroy(own));
    return NULL;
}

static void threads(void)
{
    static struct log logs[N_THREADS], shared_log;
    static struct worker_arg w[N_THREADS];
    pthread_t t[N_THREADS];
    int last[N_THREADS];
    cudaStream_t shared;
    int i;

    CK(cudaStreamCreateWithFlags(&shared, cudaStreamNonBlocking));
    pthread_mutex_init(&shared_log.mu, NULL);
    for (i = 0; i < N_THREADS; i++) {
        pthread_mutex_init(&logs[i].mu, NULL);
        w[i] = (struct worker_arg){
            .shared = shared, .id = i, .own_log = &logs[i], .shared_log = &shared_log};
        REQUIRE(pthread_create(&t[i], NULL, enqueuer, &w[i]) == 0);
    }
    for (i = 0; i < N_THREADS; i++)
        pthread_join(t[i], NULL);
    CK(cudaStreamSynchronize(shared));
    REQUIRE(shared_log.n == N_THREADS * N_OPS);
    /* each thread's items appear in its own order on the shared stream */
    for (i = 0; i < N_THREADS; i++)
        last[i] = -1;
    for (i = 0; i < shared_log.n; i++) {
        int who = shared_log.v[i] / N_OPS, k = shared_log.v[i] % N_OPS;
        REQUIRE(k == last[who] + 1);
        last[who] = k;
    }
    CK(cudaStreamDestroy(shared));
    printf("stream: %d threads ok\n", N_THREADS);
}

static int after_destroy;
static void mark(void *arg)
{
    (void)arg;
    __atomic_store_n(&after_destroy, 1, __ATOMIC_RELEASE);
}

static void destroy_pending(void)
{
    static struct gate g = GATE_INIT;
    cudaStream_t s;
    cudaEvent_t ev;

    CK(cudaStreamCreate(&s));
    CK(cudaEventCreate(&ev));
    CK(cudaLaunchHostFunc(s, gate_wait, &g));
    CK(cudaLaunchHostFunc(s, mark, NULL));
    CK(cudaEventRecord(ev, s));
    EXPECT(cudaStreamQuery(s), cudaErrorNotReady);
    CK(cudaStreamDestroy(s)); /* returns at once; the work still runs */
    EXPECT(cudaStreamQuery(s), cudaErrorInvalidResourceHandle);
    EXPECT(cudaStreamDestroy(s), cudaErrorInvalidResourceHandle);
    EXPECT(cudaGetLastError(), cudaErrorInvalidResourceHandle); /* and it resets */
    CK(cudaPeekAtLastError());
    EXPECT(cudaEventQuery(ev), cudaErrorNotReady);
    REQUIRE(!__atomic_load_n(&after_destroy, __ATOMIC_ACQUIRE));
    gate_open(&g);
    CK(cudaEventSynchronize(ev));
    REQUIRE(__atomic_load_n(&after_destroy, __ATOMIC_ACQUIRE));
    CK(cudaEventDestroy(ev));
    CK(cudaDeviceSynchronize());
    printf("stream: destroy with pending work ok\n");
}

int main(int argc, char **argv)
{
    const char *what = argc > 1 ? argv[1] : "all";

    if (!strcmp(what, "order") || !strcmp(what, "all"))
        order();
    if (!strcmp(what, "threads") || !strcmp(what, "all"))
        threads();
    if (!strcmp(what, "destroy") || !strcmp(what, "all"))
        destroy_pending();
    return 0;
}
