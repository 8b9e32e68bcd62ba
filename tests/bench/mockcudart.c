/* A do-nothing CUDA runtime for the per-call benchmark of completion by events
 * (NCCLGUARD_COMPLETION=events): events are records of nothing, every query says "done". */
typedef struct mock_event *cudaEvent_t;
typedef void *cudaStream_t;
int cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f);
int cudaEventRecord(cudaEvent_t e, cudaStream_t s);
int cudaEventQuery(cudaEvent_t e);
int cudaStreamQuery(cudaStream_t s);
static struct mock_event {
    int used;
} pool[64];
static unsigned next;
__attribute__((visibility("default"))) int cudaEventCreateWithFlags(cudaEvent_t *e, unsigned f)
{
    (void)f;
    *e = &pool[next++ % 64];
    return 0;
}
__attribute__((visibility("default"))) int cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    (void)s;
    e->used++;
    return 0;
}
__attribute__((visibility("default"))) int cudaEventQuery(cudaEvent_t e)
{
    (void)e;
    return 0;
}
__attribute__((visibility("default"))) int cudaStreamQuery(cudaStream_t s)
{
    (void)s;
    return 0;
}

/* Stream capture and graphs that do nothing (make bench-graph): one capture at a time, graphs
 * and executables are distinct handles, a launch is a counter. */
typedef struct mock_graph *cudaGraph_t;
typedef struct mock_graph *cudaGraphExec_t;
int cudaStreamBeginCapture(cudaStream_t s, int mode);
int cudaStreamGetCaptureInfo(cudaStream_t s, int *status, unsigned long long *id, void *a4,
                             void *a5, void *a6, void *a7);
int cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
int cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags);
int cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s);
int cudaGraphExecDestroy(cudaGraphExec_t e);
int cudaGraphDestroy(cudaGraph_t g);
static struct mock_graph {
    unsigned long long launches;
} graphs[64];
static unsigned ngraphs;
static int capturing;
static unsigned long long capture_id;
__attribute__((visibility("default"))) int cudaStreamBeginCapture(cudaStream_t s, int mode)
{
    (void)s;
    (void)mode;
    capturing = 1;
    capture_id++;
    return 0;
}
__attribute__((visibility("default"))) int cudaStreamGetCaptureInfo(cudaStream_t s, int *status,
                                                                    unsigned long long *id,
                                                                    void *a4, void *a5, void *a6,
                                                                    void *a7)
{
    (void)s;
    (void)a4;
    (void)a5;
    (void)a6;
    (void)a7;
    *status = capturing;
    if (id)
        *id = capturing ? capture_id : 0;
    return 0;
}
__attribute__((visibility("default"))) int cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    (void)s;
    capturing = 0;
    *g = &graphs[ngraphs++ % 64];
    return 0;
}
__attribute__((visibility("default"))) int cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g,
                                                                unsigned long long flags)
{
    (void)g;
    (void)flags;
    *e = &graphs[ngraphs++ % 64];
    return 0;
}
__attribute__((visibility("default"))) int cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
    (void)s;
    e->launches++;
    return 0;
}
__attribute__((visibility("default"))) int cudaGraphExecDestroy(cudaGraphExec_t e)
{
    (void)e;
    return 0;
}
__attribute__((visibility("default"))) int cudaGraphDestroy(cudaGraph_t g)
{
    (void)g;
    return 0;
}
