/* A TVM-style library with a context slot vmjit does not serve: loading it
 * must fail with a clear error, not leave the slot null for a kernel to
 * call. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int (*__TVMBackendRunOnGPU)(void *) = 0;

EXPORT int __tvm_ffi_uses_gpu(void *self, const void *args, int32_t n,
                              void *result) {
  (void)self, (void)args, (void)n, (void)result;
  return __TVMBackendRunOnGPU(0);
}
