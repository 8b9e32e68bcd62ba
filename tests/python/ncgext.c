/* ncgext: a CPython C extension linked against libnccl (the PyTorch shape: libtorch_cuda.so
 * calls NCCL through its own PLT, not through ctypes), used by tests/python/train.py --via ext.
 * One communicator per process, the buffers of the incident's two calls, the GIL released
 * around every NCCL call as PyTorch does. Built at test time against each interpreter's
 * headers (tests/python/lib.sh, build_ext), never against libpython.
 *   unique_id() -> bytes(128)        init(uid, world, rank) -> None
 *   reduce_scatter(count) -> int      all_reduce(count) -> int  (an ncclResult_t) */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "ncclguard/nccl_abi.h"

static ncclComm_t g_comm;
static int g_world = 1;
static uint16_t *g_send, *g_recv;
static float g_flag[1];

static PyObject *unique_id(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    ncclUniqueId id;
    ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess)
        return PyErr_Format(PyExc_RuntimeError, "ncclGetUniqueId: %d", (int)r);
    return PyBytes_FromStringAndSize(id.internal, sizeof id.internal);
}

static PyObject *init(PyObject *self, PyObject *args)
{
    (void)self;
    const char *buf;
    Py_ssize_t n;
    int world, rank;
    if (!PyArg_ParseTuple(args, "y#ii", &buf, &n, &world, &rank))
        return NULL;
    ncclUniqueId id;
    if (n != (Py_ssize_t)sizeof id.internal)
        return PyErr_Format(PyExc_ValueError, "unique id of %zd bytes", n);
    memcpy(id.internal, buf, sizeof id.internal);
    g_world = world;
    g_send = calloc((size_t)world * 1024, sizeof *g_send);
    g_recv = calloc(1024, sizeof *g_recv);
    if (!g_send || !g_recv)
        return PyErr_NoMemory();
    PyThreadState *ts = PyEval_SaveThread();
    ncclResult_t r = ncclCommInitRank(&g_comm, world, id, rank);
    PyEval_RestoreThread(ts);
    if (r != ncclSuccess)
        return PyErr_Format(PyExc_RuntimeError, "ncclCommInitRank: %d", (int)r);
    Py_RETURN_NONE;
}

/* The native frames a user would see under the Python ones (ext_ncclReduceScatter). */
__attribute__((noinline)) static ncclResult_t ext_ncclReduceScatter(size_t count)
{
    return ncclReduceScatter(g_send, g_recv, count, ncclBfloat16, ncclSum, g_comm, NULL);
}

__attribute__((noinline)) static ncclResult_t ext_ncclAllReduce(size_t count)
{
    return ncclAllReduce(g_flag, g_flag, count, ncclFloat32, ncclSum, g_comm, NULL);
}

static PyObject *reduce_scatter(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "n", &count))
        return NULL;
    if (count < 0 || count > 1024)
        return PyErr_Format(PyExc_ValueError, "count %zd", count);
    PyThreadState *ts = PyEval_SaveThread(); /* the GIL released, as PyTorch does */
    ncclResult_t r = ext_ncclReduceScatter((size_t)count);
    PyEval_RestoreThread(ts);
    return PyLong_FromLong((long)r);
}

static PyObject *all_reduce(PyObject *self, PyObject *args)
{
    (void)self;
    Py_ssize_t count;
    if (!PyArg_ParseTuple(args, "n", &count))
        return NULL;
    if (count != 1)
        return PyErr_Format(PyExc_ValueError, "count %zd", count);
    PyThreadState *ts = PyEval_SaveThread(); /* the GIL released, as PyTorch does */
    ncclResult_t r = ext_ncclAllReduce((size_t)count);
    PyEval_RestoreThread(ts);
    return PyLong_FromLong((long)r);
}

static PyObject *destroy(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    if (g_comm) {
        PyThreadState *ts = PyEval_SaveThread();
        ncclCommDestroy(g_comm);
        PyEval_RestoreThread(ts);
        g_comm = NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"unique_id", unique_id, METH_NOARGS, "ncclGetUniqueId"},
    {"init", init, METH_VARARGS, "ncclCommInitRank(uid, world, rank)"},
    {"reduce_scatter", reduce_scatter, METH_VARARGS, "ncclReduceScatter(count, bfloat16, sum)"},
    {"all_reduce", all_reduce, METH_VARARGS, "ncclAllReduce(1, float32, sum)"},
    {"destroy", destroy, METH_NOARGS, "ncclCommDestroy"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "ncgext", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit_ncgext(void)
{
    return PyModule_Create(&module);
}
