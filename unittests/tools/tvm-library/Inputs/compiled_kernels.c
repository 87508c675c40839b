/* TVM's compiled mode (exec_mode="compiled") in miniature: each function
 * of compiled.vmasm is a safe-call export `__tvm_ffi___vmtir__NAME` of
 * four handles (ctx_ptr, registers, constants, functions: arrays of
 * 16-byte values), written as TVM's codegen writes them: values move
 * between those arrays and a call's argument stack only through
 * TVMBackendAnyListSetPackedArg / MoveFromPackedReturn / ResetItem, which
 * the host exports by name, and builtins are looked up by name through the
 * library context and called through __TVMFFIFunctionCall, or (recurse)
 * through the same functions linked by name, as a system-lib build does. */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  int32_t type_index;
  uint32_t zero_padding;
  union {
    int64_t v_int64;
    void *v_ptr;
  };
} Any;

enum { kNone = 0, kInt = 1, kOpaquePtr = 4 };

EXPORT void *__tvm_ffi__library_ctx = NULL;
EXPORT int (*__TVMFFIFunctionCall)(void *, Any *, int32_t, Any *) = NULL;
EXPORT int (*__TVMFFIEnvModLookupFromImports)(void *, const char *,
                                              void **) = NULL;

int TVMBackendAnyListSetPackedArg(void *list, int index, Any *args,
                                  int offset);
int TVMBackendAnyListResetItem(void *list, int index);
int TVMBackendAnyListMoveFromPackedReturn(void *list, int index, Any *args,
                                          int offset);
void TVMFFIErrorSetRaisedFromCStrParts(const char *kind, const char **parts,
                                       int32_t num_parts);
/* What a system-lib build links against directly, instead of the slots. */
int TVMFFIEnvModLookupFromImports(void *ctx, const char *name, void **out);
int TVMFFIFunctionCall(void *func, Any *args, int32_t n, Any *ret);
void *TVMBackendAllocWorkspace(int device_type, int device_id, uint64_t bytes,
                               int dtype_code, int dtype_bits);
int TVMBackendFreeWorkspace(int device_type, int device_id, void *ptr);

/* Writes a value of `type` with payload `bits` into an argument slot. */
static void setValue(Any *a, int32_t type, int64_t bits) {
  a->type_index = type;
  a->zero_padding = 0;
  a->v_int64 = bits;
}

/* The four handles of a VMTIR function. */
typedef struct {
  void *ctx, *regs, *consts, *funcs;
} Handles;

static int handles(const Any *args, int32_t n, Handles *h) {
  if (n != 4) {
    const char *parts[] = {"a VMTIR function takes 4 handles"};
    TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 1);
    return -1;
  }
  h->ctx = args[0].v_ptr;
  h->regs = args[1].v_ptr;
  h->consts = args[2].v_ptr;
  h->funcs = args[3].v_ptr;
  return 0;
}

/* regs[dst] = NAME(stack[0..n)), the result moved out of stack[n]:
 * through the context slots, or (direct) through the runtime's exports. */
static int callNamedVia(int direct, const char *name, Any *stack, int n,
                        void *regs, int dst) {
  void *f;
  if ((direct ? TVMFFIEnvModLookupFromImports
              : __TVMFFIEnvModLookupFromImports)(__tvm_ffi__library_ctx, name,
                                                  &f))
    return -1;
  setValue(&stack[n], kNone, 0);
  if ((direct ? TVMFFIFunctionCall : __TVMFFIFunctionCall)(f, stack, n,
                                                           &stack[n]))
    return -1;
  return TVMBackendAnyListMoveFromPackedReturn(regs, dst, stack, n);
}

static int callNamed(const char *name, Any *stack, int n, void *regs,
                     int dst) {
  return callNamedVia(0, name, stack, n, regs, dst);
}

static int recurseBody(const Handles *h, Any *stack);

/* main(x, y) = (x * y + 10, x); register 4 is a temporary. */
EXPORT int __tvm_ffi___vmtir__main(void *self, const Any *args, int32_t n,
                                   Any *ret) {
  Handles h;
  Any stack[4];
  if (handles(args, n, &h))
    return -1;
  TVMBackendAnyListSetPackedArg(h.regs, 0, stack, 0);
  TVMBackendAnyListSetPackedArg(h.regs, 1, stack, 1);
  if (callNamed("scalar.mul", stack, 2, h.regs, 3))
    return -1;
  TVMBackendAnyListSetPackedArg(h.regs, 3, stack, 0);
  TVMBackendAnyListSetPackedArg(h.consts, 0, stack, 1);
  if (callNamed("scalar.add", stack, 2, h.regs, 4))
    return -1;
  TVMBackendAnyListResetItem(h.regs, 3);
  TVMBackendAnyListSetPackedArg(h.regs, 4, stack, 0);
  TVMBackendAnyListSetPackedArg(h.regs, 0, stack, 1);
  if (callNamed("vm.builtin.make_tuple", stack, 2, h.regs, 2))
    return -1;
  return TVMBackendAnyListResetItem(h.regs, 4);
}

/* fails(x) = x / 0: the builtin's error comes out as it is. */
EXPORT int __tvm_ffi___vmtir__fails(void *self, const Any *args, int32_t n,
                                    Any *ret) {
  Handles h;
  Any stack[3];
  if (handles(args, n, &h))
    return -1;
  TVMBackendAnyListSetPackedArg(h.regs, 0, stack, 0);
  setValue(&stack[1], kInt, 0);
  return callNamed("scalar.div", stack, 2, h.regs, 1);
}

/* recurse(n) = n <= 0 ? n : recurse(n - 1), the call through
 * vm.builtin.invoke_closure(ctx, functions[2], n - 1), as TVM calls
 * another Relax function; linked directly against the runtime's C API, as
 * a system-lib build is, with a workspace held across the call. */
EXPORT int __tvm_ffi___vmtir__recurse(void *self, const Any *args,
                                      int32_t n, Any *ret) {
  Handles h;
  Any stack[4];
  if (handles(args, n, &h))
    return -1;
  void *scratch = TVMBackendAllocWorkspace(1, 0, 64, 2, 32);
  if (!scratch)
    return -1;
  int rc = recurseBody(&h, stack);
  TVMBackendFreeWorkspace(1, 0, scratch);
  return rc;
}

static int recurseBody(const Handles *hp, Any *stack) {
  Handles h = *hp;
  TVMBackendAnyListSetPackedArg(h.regs, 0, stack, 0);
  if (stack[0].type_index != kInt || stack[0].v_int64 <= 0) {
    Any copy[2];
    TVMBackendAnyListSetPackedArg(h.regs, 0, copy, 0);
    return callNamedVia(1, "vm.builtin.copy", copy, 1, h.regs, 1);
  }
  int64_t k = stack[0].v_int64 - 1;
  setValue(&stack[0], kOpaquePtr, (int64_t)(intptr_t)h.ctx);
  TVMBackendAnyListSetPackedArg(h.funcs, 2, stack, 1);
  setValue(&stack[2], kInt, k);
  return callNamedVia(1, "vm.builtin.invoke_closure", stack, 3, h.regs, 1);
}

/* Never reached: its register file has no room for a result. */
EXPORT int __tvm_ffi___vmtir__noresult(void *self, const Any *args,
                                       int32_t n, Any *ret) {
  return 0;
}
