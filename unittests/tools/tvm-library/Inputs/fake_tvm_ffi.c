/* Stands in for libtvm_ffi.so in the tests: a second FFI runtime in the
 * process with its own thread-local raised-error slot, holding error
 * objects in tvm-ffi's layout (24-byte object header, then kind, message
 * and backtrace byte arrays). A kernel built with tvm-ffi raises there,
 * not in vmjit's slot; vmjit must still report the kernel's message. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

typedef struct {
  const char *data;
  size_t size;
} ByteArray;

typedef struct {
  uint64_t ref_count;
  int32_t type_index;
  int32_t padding;
  void (*deleter)(void *, int);
  ByteArray kind, message, backtrace;
  char text[256];
} ErrorObj;

static _Thread_local ErrorObj *raised;
EXPORT int fake_tvm_ffi_live_errors;

EXPORT void fake_tvm_ffi_raise(const char *kind, const char *message) {
  ErrorObj *e = calloc(1, sizeof(ErrorObj));
  size_t k = strlen(kind), m = strlen(message);
  if (k + m + 2 > sizeof e->text)
    m = sizeof e->text - k - 2;
  memcpy(e->text, kind, k);
  memcpy(e->text + k + 1, message, m);
  e->ref_count = 1;
  e->type_index = 67; /* kTVMFFIError */
  e->kind = (ByteArray){e->text, k};
  e->message = (ByteArray){e->text + k + 1, m};
  e->backtrace = (ByteArray){"", 0};
  ++fake_tvm_ffi_live_errors;
  raised = e;
}

EXPORT void TVMFFIErrorMoveFromRaised(void **out) {
  *out = raised;
  raised = NULL;
}

EXPORT int TVMFFIObjectDecRef(void *obj) {
  ErrorObj *e = obj;
  if (e && --e->ref_count == 0) {
    free(e);
    --fake_tvm_ffi_live_errors;
  }
  return 0;
}
