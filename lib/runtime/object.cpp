//===- object.cpp - Type names and the dynamic type table ------------------===//
//
// Names of the static type indices and the table of types registered at run
// time (index >= 128), plus the object parts of the C API.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/object.h"
#include "vmjit/runtime/any.h"

#include <deque>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <unordered_map>

namespace vmjit {
namespace {

struct DynamicTypeTable {
  std::shared_mutex Mutex;
  // A deque keeps names at stable addresses, so views of them stay valid.
  std::deque<std::string> Names;
  std::unordered_map<std::string, int32_t> Index;
};

DynamicTypeTable &dynamicTypes() {
  static DynamicTypeTable *Table = new DynamicTypeTable(); // never destroyed
  return *Table;
}

} // namespace

std::string_view typeIndexName(int32_t TypeIndex) noexcept {
  switch (TypeIndex) {
  case kVMJITNone:
    return "None";
  case kVMJITInt:
    return "int";
  case kVMJITBool:
    return "bool";
  case kVMJITFloat:
    return "float";
  case kVMJITOpaquePtr:
    return "void*";
  case kVMJITDataType:
    return "DataType";
  case kVMJITDevice:
    return "Device";
  case kVMJITDLTensorPtr:
    return "DLTensor*";
  case kVMJITRawStr:
  case kVMJITSmallStr:
  case kVMJITStr:
    return "str";
  case kVMJITByteArrayPtr:
  case kVMJITSmallBytes:
  case kVMJITBytes:
    return "bytes";
  case kVMJITObjectRValueRef:
    return "ObjectRValueRef";
  case kVMJITObject:
    return "Object";
  case kVMJITError:
    return "Error";
  case kVMJITFunction:
    return "Function";
  case kVMJITShape:
    return "Shape";
  case kVMJITTensor:
    return "Tensor";
  case kVMJITArray:
    return "Array";
  case kVMJITMap:
    return "Map";
  case kVMJITModule:
    return "Module";
  default:
    break;
  }
  if (TypeIndex >= kVMJITDynObjectBegin) {
    DynamicTypeTable &T = dynamicTypes();
    std::shared_lock Lock(T.Mutex);
    size_t Slot = static_cast<size_t>(TypeIndex - kVMJITDynObjectBegin);
    if (Slot < T.Names.size())
      return T.Names[Slot];
  }
  return "unknown";
}

int32_t registerDynamicType(std::string_view Key) {
  DynamicTypeTable &T = dynamicTypes();
  std::unique_lock Lock(T.Mutex);
  auto It = T.Index.find(std::string(Key));
  if (It != T.Index.end())
    return It->second;
  int32_t Index = kVMJITDynObjectBegin + static_cast<int32_t>(T.Names.size());
  T.Names.emplace_back(Key);
  T.Index.emplace(std::string(Key), Index);
  return Index;
}

} // namespace vmjit

using vmjit::Object;

extern "C" {

void VMJITObjectIncRef(VMJITObject *Obj) {
  if (Obj)
    Object::fromRaw(Obj)->incRef();
}

void VMJITObjectDecRef(VMJITObject *Obj) {
  if (Obj)
    Object::fromRaw(Obj)->decRef();
}

void VMJITAnyRelease(VMJITAny *Value) {
  if (!Value)
    return;
  vmjit::detail::releaseValue(*Value);
  vmjit::detail::setNone(*Value);
}

} // extern "C"
