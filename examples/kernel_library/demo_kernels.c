/*===- demo_kernels.c - A kernel library written against the C ABI -------===*\
 *
 * A small, real kernel library: plain C, no vmjit C++ headers, exporting
 * safe-call functions the way a TVM-compiled kernel module would. `vmjit run
 * --lib libvmjit_demo_kernels.so` makes them packed functions named after
 * the symbol minus its prefix (`__vmjit_demo_add_int` is `demo_add_int`).
 * The tests load it to check the library loader and the error path.
 *
\*===----------------------------------------------------------------------===*/

#include "vmjit/runtime/c_api.h"

#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

static int fail(const char *kind, const char *message) {
  VMJITErrorSetRaisedFromCStr(kind, message);
  return -1;
}

/* The DLTensor of a Tensor object (type 70) or of a DLTensor pointer. */
static DLTensor *asTensor(const VMJITAny *v) {
  if (v->type_index == kVMJITTensor)
    return (DLTensor *)((char *)v->v_obj + sizeof(VMJITObject));
  if (v->type_index == kVMJITDLTensorPtr)
    return (DLTensor *)v->v_ptr;
  return NULL;
}

/* demo_add_int(a: int, b: int) -> int */
EXPORT int __vmjit_demo_add_int(void *self, const VMJITAny *args,
                                int32_t num_args, VMJITAny *result) {
  (void)self;
  if (num_args != 2)
    return fail("TypeError", "demo_add_int: expected 2 arguments");
  if (args[0].type_index != kVMJITInt || args[1].type_index != kVMJITInt)
    return fail("TypeError", "demo_add_int: arguments must be int");
  result->type_index = kVMJITInt;
  result->zero_padding = 0;
  result->v_int64 = args[0].v_int64 + args[1].v_int64;
  return 0;
}

/* demo_sum_f32(x: float32 tensor) -> float: the sum of a compact tensor. */
EXPORT int __vmjit_demo_sum_f32(void *self, const VMJITAny *args,
                                int32_t num_args, VMJITAny *result) {
  (void)self;
  if (num_args != 1)
    return fail("TypeError", "demo_sum_f32: expected 1 argument");
  DLTensor *t = asTensor(&args[0]);
  if (!t)
    return fail("TypeError", "demo_sum_f32: argument 1 must be a tensor");
  if (t->dtype.code != kDLFloat || t->dtype.bits != 32 || t->dtype.lanes != 1)
    return fail("TypeError", "demo_sum_f32: tensor must be float32");
  if (t->strides)
    return fail("ValueError", "demo_sum_f32: tensor must be compact");
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i)
    n *= t->shape[i];
  const float *data = (const float *)((const char *)t->data + t->byte_offset);
  double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum += data[i];
  result->type_index = kVMJITFloat;
  result->zero_padding = 0;
  result->v_float64 = sum;
  return 0;
}

/* demo_identity(x) -> x: returns its argument, taking a new reference to
 * an object (the result is owned). */
EXPORT int __vmjit_demo_identity(void *self, const VMJITAny *args,
                                 int32_t num_args, VMJITAny *result) {
  (void)self;
  if (num_args != 1)
    return fail("TypeError", "demo_identity: expected 1 argument");
  /* A result is owned: a borrowed view (raw string, byte array or DLTensor
   * pointer) would dangle once the caller's argument goes away. */
  if (args[0].type_index >= kVMJITDLTensorPtr &&
      args[0].type_index <= kVMJITObjectRValueRef)
    return fail("TypeError", "demo_identity: cannot return a borrowed view");
  *result = args[0];
  if (result->type_index >= kVMJITStaticObjectBegin)
    VMJITObjectIncRef(result->v_obj);
  return 0;
}

/* demo_fail(code: int): always raises a ValueError whose message carries
 * the code, to show that messages survive the boundary. */
EXPORT int __vmjit_demo_fail(void *self, const VMJITAny *args,
                             int32_t num_args, VMJITAny *result) {
  (void)self;
  (void)result;
  char message[96];
  long long code = num_args > 0 && args[0].type_index == kVMJITInt
                       ? (long long)args[0].v_int64
                       : -1;
  snprintf(message, sizeof message, "demo_fail: kernel failed with code %lld",
           code);
  return fail("ValueError", message);
}

/* demo_count() -> int: how many times it was called in this process, this
 * call included (for checking the call counts of `vmjit run --stats`). */
EXPORT int __vmjit_demo_count(void *self, const VMJITAny *args,
                              int32_t num_args, VMJITAny *result) {
  static long long calls;
  (void)self;
  (void)args;
  (void)num_args;
  result->type_index = kVMJITInt;
  result->zero_padding = 0;
  result->v_int64 = ++calls;
  return 0;
}

/* demo_negate(x: int) -> int, exported under the tvm-ffi prefix. */
EXPORT int __tvm_ffi_demo_negate(void *self, const VMJITAny *args,
                                 int32_t num_args, VMJITAny *result) {
  (void)self;
  if (num_args != 1 || args[0].type_index != kVMJITInt)
    return fail("TypeError", "demo_negate: expected one int");
  result->type_index = kVMJITInt;
  result->zero_padding = 0;
  result->v_int64 = -args[0].v_int64;
  return 0;
}

/* Not a kernel: no prefix, so the loader does not list it. */
EXPORT int demo_helper_not_a_kernel(void) { return 42; }
