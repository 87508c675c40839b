//===- builtins_storage.cpp - alloc_storage and alloc_tensor --------------===//
//
// vm.builtin.alloc_storage(%vm, shape [nbytes], device index, dtype hint
// [, memory scope]) takes a block from the VM's allocator;
// vm.builtin.alloc_tensor(storage, byte offset, shape, dtype [, memory
// scope]) is a tensor that lives in it. TVM always passes the scope (5
// arguments to alloc_storage); the spec's 4-argument form leaves it out.
// On the CPU the only scope is "global" (or ""), as in TVM.
//
//===----------------------------------------------------------------------===//

#include "builtins_internal.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/vm/allocator.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstring>
#include <fmt/format.h>

namespace vmjit::vm::builtin {
namespace {

/// The scope argument I, if given and not None; "" otherwise (a plain
/// view: an optional passed by value is written and read back bytewise).
[[gnu::always_inline]] inline std::string_view
scopeArg(const char *Fn, const PackedArgs &A, int32_t I) {
  if (A.size() > I && !A[I].isNone())
    return arg<std::string_view>(Fn, A, I);
  return {};
}

void checkScope(const char *Fn, std::string_view Scope) {
  // A fixed-length compare (inlined), not a call to memcmp.
  constexpr std::string_view Global = "global";
  if (!Scope.empty() &&
      !(Scope.size() == Global.size() &&
        std::memcmp(Scope.data(), Global.data(), Global.size()) == 0))
    fail(Fn, fmt::format("memory scope '{}' is not supported: CPU storage has "
                         "only the \"global\" scope",
                         Scope));
}

/// Argument I as an object of type index `Want` (named `What` in the
/// error), borrowed from the call's arguments: no reference is taken.
template <typename ObjT>
const ObjT *borrowedArg(const char *Fn, const PackedArgs &A, int32_t I,
                        int32_t Want, std::string_view What) {
  if (A[I].typeIndex() != Want)
    detail::throwArgTypeError(Fn, I + 1, What, A[I]);
  return reinterpret_cast<const ObjT *>(A[I].raw().v_obj);
}

/// alloc_storage(%vm, shape [nbytes], device index, dtype hint [, scope]).
/// Device index -1 is the host; the block holds exactly nbytes (the dtype
/// hint does not scale it). Packed, reading the size shape in place, with
/// the typed form's checks and messages in the same order (argument kinds
/// first, then the device index, the scope, the size).
void allocStorage(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.alloc_storage";
  needArgs(Fn, A, 4, 5);
  VMContext VM = arg<VMContext>(Fn, A, 0);
  std::span<const int64_t> Size =
      borrowedArg<ShapeObj>(Fn, A, 1, ShapeObj::kTypeIndex, Shape::kTypeName)
          ->dims();
  const int64_t DeviceIndex = arg<int64_t>(Fn, A, 2);
  if (A[3].typeIndex() != kVMJITDataType)
    arg<DLDataType>(Fn, A, 3); // the hint: checked, not used
  const std::string_view Scope = scopeArg(Fn, A, 4);
  const auto &Devices = VM->devices();
  if (DeviceIndex < -1 || DeviceIndex >= static_cast<int64_t>(Devices.size()))
    fail(Fn, fmt::format("device index {} is out of range: the VM has {} "
                         "device(s)",
                         DeviceIndex, Devices.size()));
  checkScope(Fn, Scope);
  if (Size.size() != 1 || Size[0] < 0)
    fail(Fn, fmt::format("the size must be a shape [nbytes], not {}",
                         shapeString(Size)));
  DLDevice Dev = cpuDevice();
  if (DeviceIndex >= 0)
    Dev = Devices[static_cast<size_t>(DeviceIndex)];
  *Rv = Storage(VM->allocator().allocate(static_cast<size_t>(Size[0]), Dev));
}

/// TVM's check of a tensor's element type: whole bytes (or 1 bit), a
/// power of two, at least one lane.
void checkElementType(const char *Fn, DLDataType T) {
  bool Bits = T.bits == 1 || (T.bits >= 8 && T.bits % 8 == 0 &&
                              (T.bits & (T.bits - 1)) == 0);
  if (!Bits || T.lanes < 1)
    fail(Fn, fmt::format("cannot allocate a tensor of element type {}",
                         dtypeName(T)));
}

/// alloc_tensor(storage, byte offset, shape, dtype [, scope]): a tensor at
/// that offset of the storage, which it keeps alive. The tensor must fit in
/// the nbytes the storage was asked for, at an offset that is a multiple of
/// the element size. Packed, reading the storage and the shape in place
/// (one reference taken: the tensor's on its storage); the checks and
/// messages are those of the typed form (argument kinds in order, then
/// the scope, the element type, the dimensions, the offset, the size).
void allocTensor(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.alloc_tensor";
  needArgs(Fn, A, 4, 5);
  const auto *S = borrowedArg<StorageObj>(Fn, A, 0, StorageObj::typeIndex(),
                                          Storage::kTypeName);
  const int64_t Offset = arg<int64_t>(Fn, A, 1);
  std::span<const int64_t> Dims =
      borrowedArg<ShapeObj>(Fn, A, 2, ShapeObj::kTypeIndex, Shape::kTypeName)
          ->dims();
  // A DataType constant read directly (no optional built and read back).
  const DLDataType T = A[3].typeIndex() == kVMJITDataType
                           ? A[3].raw().v_dtype
                           : arg<DLDataType>(Fn, A, 3);
  checkScope(Fn, scopeArg(Fn, A, 4));
  // A dead view of the same bytes, shape and type made by an earlier call
  // passed every check below with these very arguments.
  auto *Owner = const_cast<StorageObj *>(S);
  if (Offset >= 0 && static_cast<uint64_t>(Offset) <= S->size()) {
    if (Tensor V = Owner->views().revive(
            Owner, static_cast<char *>(S->data()) + Offset, Dims, T,
            S->device())) {
      *Rv = std::move(V);
      return;
    }
  }
  checkElementType(Fn, T);
  const uint64_t Capacity = S->size();
  // The elements (none: more than a tensor of T can have, by the one rule
  // for shapes), then their bytes as TVM counts them (GetDataSize: 1-bit
  // elements packed eight to a byte).
  for (int64_t D : Dims)
    if (D < 0)
      fail(Fn, fmt::format("negative dimension in shape {}",
                           shapeString(Dims)));
  const std::optional<uint64_t> Elems = tensorElementCount(Dims, T);
  const uint64_t Bytes = Elems ? tensorDataBytes(*Elems, T) : UINT64_MAX;
  if (Offset < 0)
    fail(Fn, fmt::format("the byte offset {} is negative", Offset));
  if (Offset % static_cast<int64_t>(dtypeBytes(T)))
    fail(Fn, fmt::format("the byte offset {} is not a multiple of {} (the "
                         "size of a {} element)",
                         Offset, dtypeBytes(T), dtypeName(T)));
  if (static_cast<uint64_t>(Offset) > Capacity ||
      Bytes > Capacity - static_cast<uint64_t>(Offset))
    fail(Fn, fmt::format("a {} tensor of shape {} at offset {} does not fit "
                         "in a storage of {} bytes",
                         dtypeName(T), shapeString(Dims), Offset, Capacity));
  *Rv = Owner->views().makeView(Owner, static_cast<char *>(S->data()) + Offset,
                                Dims, T, S->device());
}

} // namespace

void registerStorageBuiltins(GlobalDef &D) {
  D.defPacked("vm.builtin.alloc_storage", allocStorage)
      .defPacked("vm.builtin.alloc_tensor", allocTensor);
}

} // namespace vmjit::vm::builtin
