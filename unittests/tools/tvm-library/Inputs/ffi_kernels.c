/* A kernel library as tvm-ffi's TVM_FFI_DLL_EXPORT_TYPED_FUNC builds one:
 * it links the FFI runtime (here fake_tvm_ffi.c) and raises its errors
 * there. `size0` fails the way TensorView::size(0) does on a rank-0
 * tensor. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  int32_t type_index;
  uint32_t zero_padding;
  int64_t v_int64;
} Any;

void fake_tvm_ffi_raise(const char *kind, const char *message);

EXPORT int __tvm_ffi_size0(void *self, const Any *args, int32_t n,
                           Any *result) {
  (void)self, (void)args, (void)n, (void)result;
  fake_tvm_ffi_raise("IndexError",
                     "Index 0 out of range for tensor of rank 0");
  return -1;
}
