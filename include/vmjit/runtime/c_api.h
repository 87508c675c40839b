/*===- vmjit/runtime/c_api.h - The C value and call ABI ----------*- C -*-===*\
 *
 * The one ABI every vmjit layer, kernel library and piece of JIT code
 * shares. It is layout-compatible with the C ABI of tvm-ffi 0.1: a 16-byte
 * tagged value (VMJITAny), a 24-byte reference-counted object header
 * (VMJITObject), and one safe-call signature for every packed function.
 *
 * Rules of a safe call:
 *  - arguments are borrowed views; the result is owned by the caller, who
 *    sets result->type_index to kVMJITNone before the call;
 *  - 0 means success; -1 means an error object was stored in thread-local
 *    state (VMJITErrorSetRaised*), to be taken with VMJITErrorMoveFromRaised;
 *  - no C++ exception ever crosses this boundary.
 *
 * A kernel library exports packed function NAME as the safe-call symbol
 * `__vmjit_NAME` (`__tvm_ffi_NAME` is accepted too). This header is plain C
 * so that such libraries can be written in C.
 *
\*===----------------------------------------------------------------------===*/

#ifndef VMJIT_RUNTIME_C_API_H
#define VMJIT_RUNTIME_C_API_H

#include "vmjit/runtime/dlpack_compat.h"

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define VMJIT_DLL __declspec(dllexport)
#else
#define VMJIT_DLL __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Type indices of values and objects (tvm-ffi numbering). */
typedef enum {
  kVMJITNone = 0,
  kVMJITInt = 1,
  kVMJITBool = 2,
  kVMJITFloat = 3,
  kVMJITOpaquePtr = 4,
  kVMJITDataType = 5,
  kVMJITDevice = 6,
  kVMJITDLTensorPtr = 7,
  kVMJITRawStr = 8,
  kVMJITByteArrayPtr = 9,
  kVMJITObjectRValueRef = 10,
  kVMJITSmallStr = 11,
  kVMJITSmallBytes = 12,
  kVMJITStaticObjectBegin = 64,
  kVMJITObject = 64,
  kVMJITStr = 65,
  kVMJITBytes = 66,
  kVMJITError = 67,
  kVMJITFunction = 68,
  kVMJITShape = 69,
  kVMJITTensor = 70,
  kVMJITArray = 71,
  kVMJITMap = 72,
  kVMJITModule = 73,
  kVMJITDynObjectBegin = 128
} VMJITTypeIndex;

/* Flags passed to an object's deleter. */
typedef enum {
  kVMJITObjectDeleterFlagStrong = 1,
  kVMJITObjectDeleterFlagWeak = 2,
  kVMJITObjectDeleterFlagBoth = 3
} VMJITObjectDeleterFlag;

/* The header every heap object starts with (24 bytes). */
typedef struct VMJITObject {
  /* Strong count in the low 32 bits, weak count in the high 32 bits. */
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t padding;
  /* Called with flag Strong when the last strong reference goes (destroy
   * the payload), Weak when the last weak one goes (free the memory), or
   * Both at once. */
  void (*deleter)(void *self, int flags);
} VMJITObject;

/* A 16-byte tagged value. As an "Any" it owns the object it holds; as an
 * "AnyView" the same bytes borrow it. */
typedef struct VMJITAny {
  int32_t type_index;
  union {
    uint32_t zero_padding;
    /* Length of a small string or small byte array (type 11 / 12). */
    uint32_t small_str_len;
  };
  union {
    int64_t v_int64;
    double v_float64;
    void *v_ptr;
    const char *v_c_str;
    VMJITObject *v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
    uint64_t v_uint64;
  };
} VMJITAny;

/* A borrowed byte range (kVMJITByteArrayPtr points at one). */
typedef struct {
  const char *data;
  size_t size;
} VMJITByteArray;

/* The one signature of every packed function. */
typedef int (*VMJITSafeCallType)(void *self, const VMJITAny *args,
                                 int32_t num_args, VMJITAny *result);

/* The payload of a Function object, right after its header. */
typedef struct {
  VMJITSafeCallType safe_call;
} VMJITFunctionCell;

/* The payload of a Shape object, right after its header. */
typedef struct {
  const int64_t *data;
  size_t size;
} VMJITShapeCell;

/* ---- Errors (thread-local "last raised error") ---- */

/* Stores `error` (an Error object; a new reference is taken) as the raised
 * error of this thread, replacing any previous one. */
VMJIT_DLL void VMJITErrorSetRaised(VMJITObject *error);

/* Makes an Error object of `kind` ("ValueError", "TypeError", ...) with
 * `message` and stores it as the raised error of this thread. */
VMJIT_DLL void VMJITErrorSetRaisedFromCStr(const char *kind,
                                           const char *message);

/* Moves the raised error of this thread into *result (NULL if none): the
 * caller owns the reference and the thread's slot is cleared. */
VMJIT_DLL void VMJITErrorMoveFromRaised(VMJITObject **result);

/* Reads an Error object's kind and message (borrowed, live as long as the
 * object). Returns 0, or -1 if `error` is not an Error. */
VMJIT_DLL int VMJITErrorGetInfo(VMJITObject *error, VMJITByteArray *kind,
                                VMJITByteArray *message);

/* ---- Objects and values ---- */

VMJIT_DLL void VMJITObjectIncRef(VMJITObject *obj);
VMJIT_DLL void VMJITObjectDecRef(VMJITObject *obj);

/* Releases whatever `value` owns and sets it to None. */
VMJIT_DLL void VMJITAnyRelease(VMJITAny *value);

/* ---- Functions and the global registry ---- */

/* Calls a Function object. Same contract as a safe call. */
VMJIT_DLL int VMJITFunctionCall(VMJITObject *func, const VMJITAny *args,
                                int32_t num_args, VMJITAny *result);

/* Looks up a global function; *out is NULL when there is none. Returns 0,
 * or -1 with a raised error. */
VMJIT_DLL int VMJITFunctionGetGlobal(const char *name, VMJITObject **out);

/* Registers `func` (a Function object; a new reference is taken) under
 * `name`. Fails (-1) if the name is taken and `allow_override` is 0. */
VMJIT_DLL int VMJITFunctionSetGlobal(const char *name, VMJITObject *func,
                                     int allow_override);

/* Wraps a free safe-call entry (one that ignores its `self` argument, as
 * kernel-library exports do) as a new Function object. Returns 0, or -1
 * with a raised error. */
VMJIT_DLL int VMJITFunctionFromSafeCall(VMJITSafeCallType safe_call,
                                        VMJITObject **out);

#ifdef __cplusplus
} // extern "C"
#endif

#endif // VMJIT_RUNTIME_C_API_H
