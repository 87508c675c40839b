/* Kernels laid out as Apache TVM's LLVM codegen lays out a CPU library:
 * `__tvm_ffi_NAME` safe-call exports, and writable context slots the host
 * fills after dlopen (`__tvm_ffi__library_ctx`, `__TVMFFIFunctionCall`, the
 * workspace allocator, the parallel launcher, ...). No link dependency on
 * the host: errors go through the slot, or through
 * TVMFFIErrorSetRaisedFromCStrParts, which the host exports by name.
 * Built with the generated `__tvm_ffi__library_bin` into the fixture
 * model library of the tvm-library tests. */
#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  int32_t type_index;
  uint32_t zero_padding;
  union {
    int64_t v_int64;
    double v_float64;
    void *v_ptr;
  };
} Any;

typedef struct {
  void *sync_handle;
  int32_t num_task;
} ParallelGroupEnv;
typedef int (*ParallelLambda)(int task_id, ParallelGroupEnv *env, void *cdata);

EXPORT void *__tvm_ffi__library_ctx = NULL;
EXPORT int (*__TVMFFIFunctionCall)(void *, Any *, int32_t, Any *) = NULL;
EXPORT int (*__TVMFFIEnvModLookupFromImports)(void *, const char *,
                                              void **) = NULL;
EXPORT int (*__TVMFFIHandleInitOnce)(void **, int (*)(void **)) = NULL;
EXPORT void (*__TVMFFIErrorSetRaisedFromCStr)(const char *,
                                              const char *) = NULL;
EXPORT void *(*__TVMBackendAllocWorkspace)(int, int, uint64_t, int,
                                           int) = NULL;
EXPORT int (*__TVMBackendFreeWorkspace)(int, int, void *) = NULL;
EXPORT int (*__TVMBackendParallelLaunch)(ParallelLambda, void *, int) = NULL;
EXPORT int (*__TVMBackendParallelBarrier)(int, ParallelGroupEnv *) = NULL;

void TVMFFIErrorSetRaisedFromCStrParts(const char *kind, const char **parts,
                                       int32_t num_parts);

enum { kNone = 0, kInt = 1, kDLTensorPtr = 7, kTensor = 70 };

/* A Tensor object is its 24-byte header followed by a DLTensor. */
static DLTensor *tensorArg(const Any *a) {
  if (a->type_index == kDLTensorPtr)
    return (DLTensor *)a->v_ptr;
  if (a->type_index == kTensor)
    return (DLTensor *)((char *)a->v_ptr + 24);
  return NULL;
}

static int isF32Vector(const DLTensor *t) {
  return t && t->ndim == 1 && t->dtype.code == kDLFloat &&
         t->dtype.bits == 32 && t->dtype.lanes == 1;
}

typedef struct {
  const float *x, *y;
  float *out, *tmp;
  int64_t n;
  int barrier_rc;
} ScaleAdd;

/* Phase 1 (tmp = 2x) in blocks, a barrier, then phase 2 (out = tmp + y) in
 * the reverse block order: each task reads what others wrote. */
static int scaleAddTask(int task, ParallelGroupEnv *env, void *cdata) {
  ScaleAdd *s = (ScaleAdd *)cdata;
  int64_t k = env->num_task, chunk = (s->n + k - 1) / k;
  for (int64_t i = task * chunk; i < s->n && i < (task + 1) * chunk; ++i)
    s->tmp[i] = 2 * s->x[i];
  if (__TVMBackendParallelBarrier(task, env) != 0)
    s->barrier_rc = -1;
  int64_t r = k - 1 - task;
  for (int64_t i = r * chunk; i < s->n && i < (r + 1) * chunk; ++i)
    s->out[i] = s->tmp[i] + s->y[i];
  return 0;
}

/* scale_add(x, y, out): out = 2 * x + y, float32 vectors of one length. */
EXPORT int __tvm_ffi_scale_add(void *self, const Any *args, int32_t n,
                               Any *result) {
  (void)self;
  if (n != 3) {
    __TVMFFIErrorSetRaisedFromCStr("TypeError",
                                   "scale_add: expected 3 arguments");
    return -1;
  }
  DLTensor *x = tensorArg(&args[0]), *y = tensorArg(&args[1]),
           *out = tensorArg(&args[2]);
  if (!isF32Vector(x) || !isF32Vector(y) || !isF32Vector(out)) {
    __TVMFFIErrorSetRaisedFromCStr(
        "TypeError", "scale_add: expected three float32 vectors");
    return -1;
  }
  if (x->shape[0] != y->shape[0] || x->shape[0] != out->shape[0]) {
    const char *parts[] = {"scale_add: ", "the vectors' lengths differ ",
                           "(x, y and out must match)"};
    TVMFFIErrorSetRaisedFromCStrParts("ValueError", parts, 3);
    return -1;
  }
  int64_t len = x->shape[0];
  /* Two nested workspaces, as TVM's codegen allocates them. */
  float *tmp = (float *)__TVMBackendAllocWorkspace(
      kDLCPU, 0, (uint64_t)len * sizeof(float), kDLFloat, 32);
  void *scratch = __TVMBackendAllocWorkspace(kDLCPU, 0, 1, kDLInt, 8);
  if (!tmp || !scratch)
    return -1;
  if (((uintptr_t)tmp & 63) != 0 || ((uintptr_t)scratch & 63) != 0) {
    __TVMFFIErrorSetRaisedFromCStr("RuntimeError",
                                   "scale_add: workspace not 64-byte aligned");
    return -1;
  }
  ScaleAdd s = {(const float *)x->data, (const float *)y->data,
                (float *)out->data, tmp, len, 0};
  int rc = __TVMBackendParallelLaunch(scaleAddTask, &s, 0);
  __TVMBackendFreeWorkspace(kDLCPU, 0, scratch);
  __TVMBackendFreeWorkspace(kDLCPU, 0, tmp);
  if (rc != 0)
    return rc;
  if (s.barrier_rc != 0) {
    __TVMFFIErrorSetRaisedFromCStr("RuntimeError", "scale_add: barrier");
    return -1;
  }
  result->type_index = kNone;
  return 0;
}

static void *add_handle = NULL;

static int initAdd(void **out) {
  return __TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx, "scalar.add",
                                         out);
}

/* add_imported(a, b): scalar.add(a, b), looked up once through the
 * library context and called through __TVMFFIFunctionCall. */
EXPORT int __tvm_ffi_add_imported(void *self, const Any *args, int32_t n,
                                  Any *result) {
  (void)self;
  if (__TVMFFIHandleInitOnce(&add_handle, initAdd) != 0)
    return -1;
  Any call_args[2] = {args[0], args[1]};
  return __TVMFFIFunctionCall(add_handle, call_args, n < 2 ? n : 2, result);
}

/* missing_import(): looks up a function nobody defines. */
EXPORT int __tvm_ffi_missing_import(void *self, const Any *args, int32_t n,
                                    Any *result) {
  (void)self, (void)args, (void)n, (void)result;
  void *h = NULL;
  return __TVMFFIEnvModLookupFromImports(__tvm_ffi__library_ctx,
                                         "no.such.function", &h);
}
