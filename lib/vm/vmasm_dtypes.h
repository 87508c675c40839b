//===- vmasm_dtypes.h - Element types of vmasm tensor constants ------------===//
//
// What `tensor DTYPE ...` accepts and `dis` can write back (lib/vm
// internal): one lane of bool (8 bits), int/uint 8..64, float 16/32/64 or
// bfloat16.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_LIB_VM_VMASM_DTYPES_H
#define VMJIT_LIB_VM_VMASM_DTYPES_H

#include "vmjit/runtime/data_type.h"

namespace vmjit::vm {

inline bool isVmasmTensorDType(DLDataType T) {
  if (T.lanes != 1)
    return false;
  switch (T.code) {
  case kDLBool:
    return T.bits == 8;
  case kDLInt:
  case kDLUInt:
    return T.bits == 8 || T.bits == 16 || T.bits == 32 || T.bits == 64;
  case kDLFloat:
    return T.bits == 16 || T.bits == 32 || T.bits == 64;
  case kDLBfloat:
    return T.bits == 16;
  default:
    return false;
  }
}

} // namespace vmjit::vm

#endif // VMJIT_LIB_VM_VMASM_DTYPES_H
