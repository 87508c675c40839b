/*===- vmjit/runtime/dlpack_compat.h - DLPack 1.x names over DLPack 0.6 ---===*\
 *
 * Debian 12 ships DLPack 0.6. vmjit speaks DLPack 1.x where it matters
 * (the bool type code and the versioned managed tensor), so this header adds
 * exactly those definitions, with the values published by DLPack 1.0, when
 * the installed header does not have them. Usable from C and C++.
 *
\*===----------------------------------------------------------------------===*/

#ifndef VMJIT_RUNTIME_DLPACK_COMPAT_H
#define VMJIT_RUNTIME_DLPACK_COMPAT_H

#include <dlpack/dlpack.h>
#include <stdint.h>

#if !defined(DLPACK_MAJOR_VERSION)

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack 1.0 type code for booleans (stored one per byte, bits = 8). */
#define VMJIT_DLPACK_COMPAT 1
enum { kDLBool = 6 };

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

/* Flags of DLManagedTensorVersioned. */
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
} // extern "C"
#endif

#endif // !defined(DLPACK_MAJOR_VERSION)

#endif // VMJIT_RUNTIME_DLPACK_COMPAT_H
