/*===- vmjit/runtime/dlpack_compat.h - DLPack 1.x names over DLPack 0.6 ---===*\
 *
 * Debian 12 ships DLPack 0.6. vmjit speaks DLPack 1.x where it matters
 * (the bool type code and the versioned managed tensor of 1.0, the float8,
 * float6 and float4 type codes of 1.1), so this header adds exactly those
 * definitions, with the values DLPack publishes, when the installed header
 * does not have them. Usable from C and C++.
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

#if DLPACK_MAJOR_VERSION == 1 && DLPACK_MINOR_VERSION < 1

#ifdef __cplusplus
extern "C" {
#endif

/* DLPack 1.1 type codes of the float8, float6 and float4 formats (stored
 * packed: an element of fewer than 8 bits shares its byte, little
 * bit-endian). Names and values as in DLPack 1.1's DLDataTypeCode. */
#define VMJIT_DLPACK_COMPAT_FLOAT8 1
enum {
  kDLFloat8_e3m4 = 7,
  kDLFloat8_e4m3 = 8,
  kDLFloat8_e4m3b11fnuz = 9,
  kDLFloat8_e4m3fn = 10,
  kDLFloat8_e4m3fnuz = 11,
  kDLFloat8_e5m2 = 12,
  kDLFloat8_e5m2fnuz = 13,
  kDLFloat8_e8m0fnu = 14,
  kDLFloat6_e2m3fn = 15,
  kDLFloat6_e3m2fn = 16,
  kDLFloat4_e2m1fn = 17
};

#ifdef __cplusplus
} // extern "C"
#endif

#endif // DLPACK 1.0 without the 1.1 type codes

#endif // VMJIT_RUNTIME_DLPACK_COMPAT_H
