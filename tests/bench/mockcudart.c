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
