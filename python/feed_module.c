/* feed_module.c -- the CPython extension `_aegis_feed`: thin types over the
 * feed C library. aegis_feed.py builds the user-facing Producer/Consumer on
 * top of it.
 *
 * Zero copy on the consumer side: every consumer batch becomes one _Hold
 * (which calls feed_release when the last reference to it goes) and one
 * _View per tensor. A _View exports the shared bytes through the buffer
 * protocol (numpy) and __dlpack__ (torch), and keeps its _Hold alive, so the
 * slot cannot be reused while any array or tensor still points into it.
 * Views of CUDA tensors export a kDLCUDA DLPack tensor over the consumer's
 * mapping of the slot's device buffer, again with no copy. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#include "feed.h"

/* How long one C wait may block before we look for Ctrl-C. */
#define WAIT_SLICE_MS 100

static PyObject *FeedError;

/* FeedError(msg) with .code, the feed_err code (ENOENT: no such feed). */
static PyObject *raise_feed(const feed_err *err) {
    PyObject *exc = PyObject_CallFunction(FeedError, "s", err->msg);
    if (!exc) return NULL;
    PyObject *code = PyLong_FromLong(err->code);
    if (code && PyObject_SetAttrString(exc, "code", code) == 0)
        PyErr_SetObject(FeedError, exc);
    Py_XDECREF(code);
    Py_DECREF(exc);
    return NULL;
}

/* ---- DLPack: the struct layout is the public DLPack v0.8 ABI ---- */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} DLDevice;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
    DLTensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

enum { DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_BFLOAT = 4 };
enum { DL_CPU = 1, DL_CUDA = 2 };

static DLDataType dl_dtype(int dtype) {
    static const DLDataType map[FEED_NDTYPES] = {
        [FEED_U8] = {DL_UINT, 8, 1},    [FEED_I8] = {DL_INT, 8, 1},
        [FEED_I16] = {DL_INT, 16, 1},   [FEED_I32] = {DL_INT, 32, 1},
        [FEED_I64] = {DL_INT, 64, 1},   [FEED_F16] = {DL_FLOAT, 16, 1},
        [FEED_BF16] = {DL_BFLOAT, 16, 1}, [FEED_F32] = {DL_FLOAT, 32, 1},
        [FEED_F64] = {DL_FLOAT, 64, 1},
        /* torch 1.13 has no DLPack bool: it arrives as uint8 */
        [FEED_BOOL] = {DL_UINT, 8, 1},
    };
    return map[dtype];
}

/* numpy format characters; bf16 has none, it is exported as raw 2 bytes */
static const char *np_format(int dtype) {
    static const char *map[FEED_NDTYPES] = {
        [FEED_U8] = "B", [FEED_I8] = "b", [FEED_I16] = "h", [FEED_I32] = "i",
        [FEED_I64] = "q", [FEED_F16] = "e", [FEED_BF16] = "H",
        [FEED_F32] = "f", [FEED_F64] = "d", [FEED_BOOL] = "?",
    };
    return map[dtype];
}

/* ---- _Consumer, _Hold, _View ---- */
typedef struct {
    PyObject_HEAD
    feed_consumer *c;
    Py_ssize_t live_holds; /* _Holds not yet released */
    int closing;           /* close() asked; detach when live_holds is 0 */
} ConsumerObject;

typedef struct {
    PyObject_HEAD
    ConsumerObject *owner;
    uint64_t seq;
} HoldObject;

typedef struct {
    PyObject_HEAD
    HoldObject *hold;
    feed_tensor t;
    Py_ssize_t shape[FEED_MAX_DIMS];
} ViewObject;

static void consumer_detach_if_done(ConsumerObject *self) {
    if (self->c && self->closing && self->live_holds == 0) {
        feed_detach(self->c);
        self->c = NULL;
    }
}

static void hold_dealloc(HoldObject *self) {
    ConsumerObject *owner = self->owner;
    if (owner->c) feed_release(owner->c, self->seq);
    owner->live_holds--;
    consumer_detach_if_done(owner);
    Py_DECREF(owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyTypeObject HoldType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_aegis_feed._Hold",
    .tp_basicsize = sizeof(HoldObject),
    .tp_dealloc = (destructor)hold_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
};

static void view_dealloc(ViewObject *self) {
    Py_XDECREF(self->hold);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int view_getbuffer(ViewObject *self, Py_buffer *view, int flags) {
    if (flags & PyBUF_WRITABLE) {
        PyErr_SetString(PyExc_BufferError,
                        "feed batches are shared by all consumers: read-only");
        return -1;
    }
    if (self->t.device != FEED_HOST) {
        PyErr_Format(PyExc_BufferError,
                     "feed tensor '%s' is on cuda:%d: numpy cannot read GPU "
                     "memory; read this feed as torch tensors",
                     self->t.key, self->t.device_id);
        return -1;
    }
    view->obj = (PyObject *)self;
    Py_INCREF(self);
    view->buf = self->t.data;
    view->len = (Py_ssize_t)self->t.nbytes;
    view->readonly = 1;
    view->itemsize = (Py_ssize_t)feed_dtype_size(self->t.dtype);
    view->format = (flags & PyBUF_FORMAT) ? (char *)np_format(self->t.dtype)
                                          : NULL;
    view->ndim = self->t.ndim;
    view->shape = (flags & PyBUF_ND) ? self->shape : NULL;
    view->strides = NULL; /* C-contiguous */
    view->suboffsets = NULL;
    view->internal = NULL;
    return 0;
}

static PyBufferProcs view_as_buffer = {
    .bf_getbuffer = (getbufferproc)view_getbuffer,
};

static void dl_deleter(DLManagedTensor *m) {
    PyGILState_STATE g = PyGILState_Ensure(); /* torch may free off-thread */
    Py_DECREF((PyObject *)m->manager_ctx);
    PyGILState_Release(g);
    PyMem_RawFree(m);
}

static void dl_capsule_destructor(PyObject *cap) {
    /* Renamed to "used_dltensor" by whoever consumed it. */
    if (!PyCapsule_IsValid(cap, "dltensor")) return;
    DLManagedTensor *m = PyCapsule_GetPointer(cap, "dltensor");
    if (m) m->deleter(m);
}

static PyObject *view_dlpack(ViewObject *self, PyObject *args,
                             PyObject *kw) {
    /* One allocation holds the managed tensor and its shape array. */
    DLManagedTensor *m =
        PyMem_RawCalloc(1, sizeof *m + FEED_MAX_DIMS * sizeof(int64_t));
    if (!m) return PyErr_NoMemory();
    int64_t *shape = (int64_t *)(m + 1);
    memcpy(shape, self->t.shape, sizeof self->t.shape);
    m->dl_tensor.data = self->t.data;
    m->dl_tensor.device.device_type =
        self->t.device == FEED_CUDA ? DL_CUDA : DL_CPU;
    m->dl_tensor.device.device_id = self->t.device_id;
    m->dl_tensor.ndim = self->t.ndim;
    m->dl_tensor.dtype = dl_dtype(self->t.dtype);
    m->dl_tensor.shape = shape;
    m->manager_ctx = self;
    m->deleter = dl_deleter;
    Py_INCREF(self);
    PyObject *cap = PyCapsule_New(m, "dltensor", dl_capsule_destructor);
    if (!cap) dl_deleter(m);
    return cap;
}

static PyObject *view_dlpack_device(ViewObject *self, PyObject *unused) {
    return Py_BuildValue("(ii)", self->t.device == FEED_CUDA ? DL_CUDA : DL_CPU,
                         self->t.device_id);
}

static PyMethodDef view_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))view_dlpack,
     METH_VARARGS | METH_KEYWORDS, "DLPack capsule of the shared bytes"},
    {"__dlpack_device__", (PyCFunction)view_dlpack_device, METH_NOARGS,
     "(device type, device id)"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ViewType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_aegis_feed._View",
    .tp_basicsize = sizeof(ViewObject),
    .tp_dealloc = (destructor)view_dealloc,
    .tp_as_buffer = &view_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = view_methods,
};

static int consumer_init(ConsumerObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name", "batch_size", "timeout_ms", NULL};
    const char *name;
    unsigned int batch_size = 0;
    int timeout_ms = 30000;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|Ii", kwlist, &name,
                                     &batch_size, &timeout_ms))
        return -1;
    feed_err err;
    Py_BEGIN_ALLOW_THREADS
    self->c = feed_attach(name, batch_size, timeout_ms, &err);
    Py_END_ALLOW_THREADS
    if (!self->c) {
        raise_feed(&err);
        return -1;
    }
    return 0;
}

static PyObject *batch_to_list(ConsumerObject *self, const feed_batch *b) {
    HoldObject *hold = PyObject_New(HoldObject, &HoldType);
    if (!hold) {
        feed_release(self->c, b->seq);
        return NULL;
    }
    hold->owner = self;
    hold->seq = b->seq;
    Py_INCREF(self);
    self->live_holds++;
    PyObject *list = PyList_New(b->ntensors);
    for (int i = 0; list && i < b->ntensors; i++) {
        ViewObject *v = PyObject_New(ViewObject, &ViewType);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        v->t = b->t[i];
        for (int d = 0; d < FEED_MAX_DIMS; d++)
            v->shape[d] = (Py_ssize_t)b->t[i].shape[d];
        v->hold = hold;
        Py_INCREF(hold);
        PyObject *item = Py_BuildValue("(sN)", b->t[i].key, (PyObject *)v);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    Py_DECREF(hold); /* the views own it now */
    return list;
}

/* next() -> list of (key, _View), or 1 at the end of an epoch, 2 when the
 * producer closed the feed. */
static PyObject *consumer_next(ConsumerObject *self, PyObject *unused) {
    if (!self->c || self->closing)
        return PyErr_Format(FeedError, "consumer is closed");
    feed_batch b;
    feed_err err;
    int rc;
    do {
        Py_BEGIN_ALLOW_THREADS
        rc = feed_next(self->c, &b, WAIT_SLICE_MS, &err);
        Py_END_ALLOW_THREADS
        if (rc == FEED_TIMEOUT && PyErr_CheckSignals() < 0) return NULL;
    } while (rc == FEED_TIMEOUT);
    if (rc < 0) return raise_feed(&err);
    if (rc != FEED_OK) return PyLong_FromLong(rc);
    return batch_to_list(self, &b);
}

static PyObject *consumer_close(ConsumerObject *self, PyObject *unused) {
    self->closing = 1;
    consumer_detach_if_done(self);
    Py_RETURN_NONE;
}

static PyObject *consumer_user_flags(ConsumerObject *self, void *closure) {
    if (!self->c) return PyErr_Format(FeedError, "consumer is closed");
    return PyLong_FromUnsignedLong(feed_user_flags(self->c));
}

static PyObject *consumer_user_meta(ConsumerObject *self, void *closure) {
    if (!self->c) return PyErr_Format(FeedError, "consumer is closed");
    char buf[FEED_META_MAX];
    size_t n = feed_user_meta(self->c, buf);
    return PyBytes_FromStringAndSize(buf, (Py_ssize_t)n);
}

static PyObject *consumer_id(ConsumerObject *self, void *closure) {
    if (!self->c) return PyErr_Format(FeedError, "consumer is closed");
    uint8_t id[FEED_ID_BYTES];
    feed_consumer_id(self->c, id);
    return PyBytes_FromStringAndSize((const char *)id, sizeof id);
}

static PyObject *consumer_epoch(ConsumerObject *self, void *closure) {
    if (!self->c) return PyErr_Format(FeedError, "consumer is closed");
    return PyLong_FromUnsignedLongLong(feed_consumer_epoch(self->c));
}

/* len(): batches per epoch at this consumer's batch size. */
static Py_ssize_t consumer_len(ConsumerObject *self) {
    if (!self->c) {
        PyErr_SetString(FeedError, "consumer is closed");
        return -1;
    }
    uint64_t n = feed_consumer_len(self->c);
    if (n == 0)
        PyErr_SetString(PyExc_TypeError,
                        "the feed's producer did not say how many batches an "
                        "epoch has (its loader has no len())");
    return n ? (Py_ssize_t)n : -1;
}

static PySequenceMethods consumer_as_sequence = {
    .sq_length = (lenfunc)consumer_len,
};

static void consumer_dealloc(ConsumerObject *self) {
    /* Holds keep a reference to us, so none is live here. */
    if (self->c) feed_detach(self->c);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef consumer_methods[] = {
    {"next", (PyCFunction)consumer_next, METH_NOARGS,
     "next() -> [(key, view)...] | 1 (epoch end) | 2 (feed closed)"},
    {"close", (PyCFunction)consumer_close, METH_NOARGS,
     "detach once every batch handed out is released"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef consumer_getset[] = {
    {"user_flags", (getter)consumer_user_flags, NULL, "producer's flags",
     NULL},
    {"epoch", (getter)consumer_epoch, NULL, "epoch being read", NULL},
    {"user_meta", (getter)consumer_user_meta, NULL,
     "the producer's user_meta bytes", NULL},
    {"id", (getter)consumer_id, NULL,
     "this consumer's id (bytes), as the producer's peers() shows it", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ConsumerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_aegis_feed._Consumer",
    .tp_basicsize = sizeof(ConsumerObject),
    .tp_dealloc = (destructor)consumer_dealloc,
    .tp_as_sequence = &consumer_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = consumer_methods,
    .tp_getset = consumer_getset,
    .tp_init = (initproc)consumer_init,
    .tp_new = PyType_GenericNew,
};

/* ---- _Producer ---- */
typedef struct {
    PyObject_HEAD
    feed_producer *p;
    uint64_t epoch_batches; /* for len(); 0: unknown */
} ProducerObject;

static int producer_init(ProducerObject *self, PyObject *args, PyObject *kw) {
    static char *kwlist[] = {"name",          "slot_bytes",  "slots",
                             "ahead",         "replay",      "min_consumers",
                             "user_flags",    "consumer_wait_ms",
                             "batch_rows",    "epoch_batches",
                             "epoch_rows",    "user_meta",   NULL};
    feed_config cfg = {.ahead = 10, .min_consumers = 1};
    unsigned long long slot_bytes, rows = 0, batches = 0, samples = 0;
    Py_ssize_t meta_len = 0;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "sK|IIIIIiKKKy#", kwlist, &cfg.name, &slot_bytes,
            &cfg.slots, &cfg.ahead, &cfg.replay, &cfg.min_consumers,
            &cfg.user_flags, &cfg.consumer_wait_ms, &rows, &batches,
            &samples, &cfg.user_meta, &meta_len))
        return -1;
    cfg.user_meta_len = (size_t)meta_len;
    cfg.slot_bytes = slot_bytes;
    cfg.batch_rows = rows;
    cfg.epoch_batches = self->epoch_batches = batches;
    cfg.epoch_rows = samples;
    feed_err err;
    self->p = feed_create(&cfg, &err);
    if (!self->p) {
        raise_feed(&err);
        return -1;
    }
    return 0;
}

static void release_buffers(Py_buffer *bufs, int n) {
    for (int i = 0; i < n; i++) PyBuffer_Release(&bufs[i]);
}

/* A CUDA tensor comes as (data_ptr, shape, device ordinal) of contiguous
 * memory the caller keeps alive and has synchronised: the buffer protocol
 * cannot describe device memory. */
static int parse_cuda(PyObject *obj, feed_tensor *ti, Py_ssize_t i) {
    unsigned long long ptr;
    PyObject *shape;
    if (!PyArg_ParseTuple(obj, "KO!i", &ptr, &PyTuple_Type, &shape,
                          &ti->device_id))
        return -1;
    ti->ndim = (int)PyTuple_GET_SIZE(shape);
    if (ti->ndim > FEED_MAX_DIMS) {
        PyErr_Format(PyExc_ValueError, "tensor %zd: %d dims (max %d)", i,
                     ti->ndim, FEED_MAX_DIMS);
        return -1;
    }
    size_t nbytes = feed_dtype_size(ti->dtype);
    for (int d = 0; d < ti->ndim; d++) {
        ti->shape[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, d));
        if (ti->shape[d] < 0) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "tensor %zd: negative dim",
                             i);
            return -1;
        }
        nbytes *= (size_t)ti->shape[d];
    }
    ti->device = FEED_CUDA;
    ti->data = (void *)(uintptr_t)ptr;
    ti->nbytes = nbytes;
    return 0;
}

/* A host tensor comes as any C-contiguous buffer; its view is held in buf
 * until the publish is done. */
static int parse_host(PyObject *obj, feed_tensor *ti, Py_buffer *buf,
                      Py_ssize_t i) {
    if (PyObject_GetBuffer(obj, buf, PyBUF_C_CONTIGUOUS) < 0) return -1;
    ti->device = FEED_HOST;
    ti->ndim = buf->ndim;
    if (ti->ndim > FEED_MAX_DIMS ||
        buf->itemsize != (Py_ssize_t)feed_dtype_size(ti->dtype)) {
        PyErr_Format(PyExc_ValueError,
                     "tensor %zd: %d dims (max %d) or item size %zd "
                     "does not match dtype %d",
                     i, ti->ndim, FEED_MAX_DIMS, buf->itemsize, ti->dtype);
        PyBuffer_Release(buf);
        return -1;
    }
    for (int d = 0; d < ti->ndim; d++) ti->shape[d] = buf->shape[d];
    ti->data = buf->buf;
    ti->nbytes = (size_t)buf->len;
    return 0;
}

/* Fill t from (key, buffer or CUDA tuple, dtype) tuples, holding the
 * buffers (bufs[i].obj stays NULL for CUDA tensors). */
static int parse_tensors(PyObject *items, feed_tensor *t, Py_buffer *bufs,
                         int *n) {
    Py_ssize_t count = PySequence_Size(items);
    if (count < 1 || count > FEED_MAX_TENSORS) {
        PyErr_Format(PyExc_ValueError, "a batch holds 1..%d tensors, not %zd",
                     FEED_MAX_TENSORS, count);
        return -1;
    }
    *n = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *item = PySequence_GetItem(items, i);
        const char *key;
        PyObject *obj;
        int dtype;
        int ok = item && PyArg_ParseTuple(item, "sOi", &key, &obj, &dtype);
        if (ok && !feed_dtype_size(dtype)) {
            PyErr_Format(PyExc_ValueError, "tensor %zd: bad dtype %d", i,
                         dtype);
            ok = 0;
        }
        feed_tensor *ti = &t[i];
        memset(ti, 0, sizeof *ti);
        memset(&bufs[i], 0, sizeof bufs[i]);
        if (ok) {
            snprintf(ti->key, sizeof ti->key, "%s", key);
            ti->dtype = dtype;
            ok = (PyTuple_Check(obj) ? parse_cuda(obj, ti, i)
                                     : parse_host(obj, ti, &bufs[i], i)) == 0;
        }
        Py_XDECREF(item);
        if (!ok) {
            release_buffers(bufs, *n);
            return -1;
        }
        (*n)++;
    }
    return 0;
}

/* Run one blocking producer call in slices, watching for Ctrl-C. */
static PyObject *producer_call(ProducerObject *self, const feed_tensor *t,
                               int n) {
    feed_err err;
    int rc;
    do {
        Py_BEGIN_ALLOW_THREADS
        rc = t ? feed_publish(self->p, t, n, WAIT_SLICE_MS, &err)
               : feed_end_epoch(self->p, WAIT_SLICE_MS, &err);
        Py_END_ALLOW_THREADS
        if (rc == FEED_TIMEOUT && PyErr_CheckSignals() < 0) return NULL;
    } while (rc == FEED_TIMEOUT);
    if (rc < 0) return raise_feed(&err);
    Py_RETURN_NONE;
}

static PyObject *producer_publish(ProducerObject *self, PyObject *items) {
    if (!self->p) return PyErr_Format(FeedError, "producer is closed");
    feed_tensor t[FEED_MAX_TENSORS];
    Py_buffer bufs[FEED_MAX_TENSORS];
    int n;
    if (parse_tensors(items, t, bufs, &n) < 0) return NULL;
    PyObject *r = producer_call(self, t, n);
    release_buffers(bufs, n);
    return r;
}

static PyObject *producer_end_epoch(ProducerObject *self, PyObject *unused) {
    if (!self->p) return PyErr_Format(FeedError, "producer is closed");
    return producer_call(self, NULL, 0);
}

static PyObject *producer_consumers(ProducerObject *self, PyObject *unused) {
    if (!self->p) return PyErr_Format(FeedError, "producer is closed");
    return PyLong_FromLong(feed_consumers(self->p));
}

/* peers() -> [(id bytes, pid, batch_size, producer batches read)...] */
static PyObject *producer_peers(ProducerObject *self, PyObject *unused) {
    if (!self->p) return PyErr_Format(FeedError, "producer is closed");
    feed_peer peers[FEED_MAX_CONSUMERS];
    int n = feed_peers(self->p, peers, FEED_MAX_CONSUMERS);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *item = Py_BuildValue(
            "(y#iIK)", (const char *)peers[i].id, (Py_ssize_t)FEED_ID_BYTES,
            (int)peers[i].pid, (unsigned int)peers[i].batch_size,
            (unsigned long long)peers[i].batches);
        if (!item) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, item);
    }
    return list;
}

static PyObject *producer_close(ProducerObject *self, PyObject *unused) {
    feed_close(self->p);
    self->p = NULL;
    Py_RETURN_NONE;
}

static PyObject *producer_fail(ProducerObject *self, PyObject *args) {
    const char *why = NULL;
    if (!PyArg_ParseTuple(args, "|z", &why)) return NULL;
    feed_fail(self->p, why);
    self->p = NULL;
    Py_RETURN_NONE;
}

/* len(): producer batches per epoch, as the constructor was told. */
static Py_ssize_t producer_len(ProducerObject *self) {
    if (self->epoch_batches == 0)
        PyErr_SetString(PyExc_TypeError,
                        "the producer was not told how many batches an epoch "
                        "has (epoch_batches)");
    return self->epoch_batches ? (Py_ssize_t)self->epoch_batches : -1;
}

static PySequenceMethods producer_as_sequence = {
    .sq_length = (lenfunc)producer_len,
};

static void producer_dealloc(ProducerObject *self) {
    feed_close(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef producer_methods[] = {
    {"publish", (PyCFunction)producer_publish, METH_O,
     "publish([(key, buffer | (cuda_ptr, shape, device), dtype)...]): "
     "copy one batch into the ring"},
    {"end_epoch", (PyCFunction)producer_end_epoch, METH_NOARGS,
     "mark the end of the epoch"},
    {"consumers", (PyCFunction)producer_consumers, METH_NOARGS,
     "live consumers"},
    {"peers", (PyCFunction)producer_peers, METH_NOARGS,
     "peers() -> [(id, pid, batch_size, batches read)...] of the live "
     "consumers"},
    {"close", (PyCFunction)producer_close, METH_NOARGS,
     "end the stream and unlink the feed"},
    {"fail", (PyCFunction)producer_fail, METH_VARARGS,
     "fail(why=None): end the stream as failed (consumers get an error "
     "quoting why, not its end) and unlink the feed"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProducerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "_aegis_feed._Producer",
    .tp_basicsize = sizeof(ProducerObject),
    .tp_dealloc = (destructor)producer_dealloc,
    .tp_as_sequence = &producer_as_sequence,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_methods = producer_methods,
    .tp_init = (initproc)producer_init,
    .tp_new = PyType_GenericNew,
};

/* announce(name) -> bool and unannounce(name): aegis_feed's attach waits
 * in short feed_attach calls, and announces this process as a consumer of
 * the feed around them (see feed_announce). */
static PyObject *module_announce(PyObject *mod, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    return PyBool_FromLong(feed_announce(name));
}

static PyObject *module_unannounce(PyObject *mod, PyObject *arg) {
    const char *name = PyUnicode_AsUTF8(arg);
    if (!name) return NULL;
    feed_unannounce(name);
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"announce", module_announce, METH_O,
     "announce this process as a consumer waiting for a feed; True if made"},
    {"unannounce", module_unannounce, METH_O,
     "withdraw the announcement announce() made"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef feed_module = {
    PyModuleDef_HEAD_INIT, .m_name = "_aegis_feed",
    .m_doc = "shared-memory data feed (C core of aegis_feed)", .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__aegis_feed(void) {
    PyTypeObject *types[] = {&HoldType, &ViewType, &ConsumerType,
                             &ProducerType};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        if (PyType_Ready(types[i]) < 0) return NULL;
    PyObject *m = PyModule_Create(&feed_module);
    if (!m) return NULL;
    FeedError = PyErr_NewException("_aegis_feed.FeedError", NULL, NULL);
    Py_INCREF(FeedError);
    PyModule_AddObject(m, "FeedError", FeedError);
    Py_INCREF(&ConsumerType);
    PyModule_AddObject(m, "_Consumer", (PyObject *)&ConsumerType);
    Py_INCREF(&ProducerType);
    PyModule_AddObject(m, "_Producer", (PyObject *)&ProducerType);
    PyModule_AddIntConstant(m, "EPOCH_END", FEED_EPOCH_END);
    PyModule_AddIntConstant(m, "END", FEED_END);
    PyModule_AddIntConstant(m, "ENOENT", FEED_ENOENT);
    PyModule_AddIntConstant(m, "KEY_MAX", FEED_KEY_MAX - 1); /* NUL out */
    return m;
}
