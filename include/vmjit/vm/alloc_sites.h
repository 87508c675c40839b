//===- vmjit/vm/alloc_sites.h - Caches of allocation call sites -*- C++ -*-===//
//
// TVM's drivers allocate the same storages, and make the same tensor views
// and shapes, at the same instructions on every call, and drop them a few
// instructions later (`null_value`) or at the return. Each call site of
// `vm.builtin.alloc_storage`, `vm.builtin.alloc_tensor` and
// `vm.builtin.make_shape` in a VM keeps the object it returned last and
// returns it again when no one else can see it and the arguments are those
// it was made from (a shape: its dimensions written again); otherwise the
// builtin is called (its checks and errors unchanged) and its result
// replaces the cached one. Every tier calls through here: the interpreter
// directly, native code through vmjit_jit_alloc_tensor, _alloc_storage
// and _make_shape (vm/native_helpers.h), and the JIT tiers check a tensor
// site inline where its arguments are constants (reusedConstantView).
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_VM_ALLOC_SITES_H
#define VMJIT_VM_ALLOC_SITES_H

#include "vmjit/runtime/c_api.h"
#include "vmjit/runtime/tensor.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace vmjit {
class FunctionObj;
}

namespace vmjit::vm {

class VirtualMachine;

/// One allocation call site: what the object it holds was made from.
/// What a hit compares lives here (one or two cache lines), not in the
/// objects the arguments point to. The baseline tier's alloc_tensor_hit
/// stencil reads Obj and Storage at their pinned offsets.
struct AllocSite {
  /// The cached tensor or storage (one strong reference), or null.
  Object *Obj = nullptr;
  /// Tensor site: the storage its view lives in (kept alive by the view).
  Object *Storage = nullptr;
  /// The shape argument the object was made from (the view's shape, the
  /// storage's size; one strong reference, or null): the same object is
  /// the same dimensions, without reading them.
  Object *Shape = nullptr;
  /// Tensor site: the byte offset; storage site: the device index.
  int64_t Offset = 0;
  /// Tensor site: the dtype.
  DLDataType DType{};
  /// Tensor site: the storage site whose cached storage that is (-1:
  /// none); storage site: its index in its function's list of links
  /// (-1 before its first object).
  int32_t Link = -1;
};
static_assert(offsetof(AllocSite, Obj) == 0);
static_assert(offsetof(AllocSite, Storage) == 8);
static_assert(sizeof(AllocSite) == 40);

/// The count of an object whose only reference is its holder's.
inline constexpr uint64_t kSoleReference = (uint64_t(1) << 32) | 1;

/// The view tensor site `S` hands out again, with a new reference, to an
/// alloc_tensor call whose offset, shape, dtype and scope are constants
/// of the instruction (so they are those the view was made from) and
/// whose storage argument is `Storage`; null when the site has no view,
/// the storage differs, or someone else holds the view. The baseline
/// tier's alloc_tensor_hit stencil runs it inline.
inline VMJITObject *reusedConstantView(const AllocSite &S,
                                       const VMJITAny &Storage) noexcept {
  Object *T = S.Obj;
  if (!T || Storage.v_obj != S.Storage->raw() ||
      Storage.type_index < kVMJITStaticObjectBegin ||
      T->combinedCount() != kSoleReference)
    return nullptr;
  T->incRefExclusive();
  return T->raw();
}

/// One VM's allocation call sites, per bytecode function and instruction.
///
/// A tensor site returns its cached view again when the view's only
/// reference is the site's (every register, result and caller reference
/// is gone) and the call names the same storage object, byte offset,
/// shape, dtype and the global scope. A storage site returns its cached
/// storage again when every reference to it is the site's own or a dead
/// view cached by one of the function's tensor sites, and the call asks
/// for the same size, device index and the global scope (with a DataType
/// hint). Either way the object is one no one else can reach, so TVM's
/// semantics hold: a returned or kept tensor is never reused while
/// referenced, and a reused object is exactly what the builtin would have
/// made from these arguments.
///
/// A VM runs on one thread at a time, so the sites are plain memory. The
/// objects' counts are read with acquire order (a last reference may have
/// gone on another thread) and raised without a read-modify-write when
/// the site holds every reference.
class AllocSites {
public:
  AllocSites();
  ~AllocSites();
  AllocSites(const AllocSites &) = delete;
  AllocSites &operator=(const AllocSites &) = delete;

  /// vm.builtin.alloc_tensor called at instruction `PC` of bytecode
  /// function `Func` of `VM` (whose pool entry there is the standard
  /// builtin): the safe-call convention, 0 with the tensor in `*Result`
  /// or -1 with the builtin's error raised.
  int allocTensor(VirtualMachine &VM, int64_t Func, int64_t PC,
                  const VMJITAny *Args, int32_t N, VMJITAny *Result) noexcept;
  /// vm.builtin.alloc_storage at that site, likewise.
  int allocStorage(VirtualMachine &VM, int64_t Func, int64_t PC,
                   const VMJITAny *Args, int32_t N, VMJITAny *Result) noexcept;
  /// vm.builtin.make_shape at that site, likewise: the site's last Shape,
  /// its dimensions written again, when no one else holds it.
  int makeShape(VirtualMachine &VM, int64_t Func, int64_t PC,
                const VMJITAny *Args, int32_t N, VMJITAny *Result) noexcept;

  /// The sites of bytecode function `Func` of `VM`, by instruction (made
  /// on first use; null when out of memory). The array lives as long as
  /// this object: clear() empties the sites and keeps it, so native code
  /// may keep the pointer for a frame (NativeContext::Sites).
  AllocSite *sitesOf(const VirtualMachine &VM, int64_t Func) noexcept;
  /// The sites of `Func` if sitesOf made them, else null (no allocation):
  /// a native frame starts with them (NativeContext::Sites).
  AllocSite *madeSitesOf(int64_t Func) const noexcept {
    const auto F = static_cast<size_t>(Func);
    return F < Arrays.size() ? Arrays[F] : nullptr;
  }

  /// Objects the sites hold now (for tests).
  size_t cached() const noexcept;
  /// Drops every cached object (the site arrays stay).
  void clear() noexcept;

private:
  struct FunctionSites;
  AllocSite *makeSites(const VirtualMachine &VM, int64_t Func) noexcept;
  /// The sites of `Func`, which sitesOf made.
  FunctionSites &functionSites(int64_t Func) noexcept;
  void cacheTensor(const void *Owner, FunctionSites &FS, int64_t PC,
                   const VMJITAny &Result, const VMJITAny *Args) noexcept;
  void cacheStorage(FunctionSites &FS, int64_t PC, const VMJITAny &Result,
                    const VMJITAny *Args) noexcept;

  /// Per function: its sites, and (for the hit path) their array.
  std::vector<std::unique_ptr<FunctionSites>> Funcs;
  std::vector<AllocSite *> Arrays;
  /// StorageObj::typeIndex().
  const int32_t StorageType;
};

inline AllocSite *AllocSites::sitesOf(const VirtualMachine &VM,
                                      int64_t Func) noexcept {
  const auto F = static_cast<size_t>(Func);
  if (F < Arrays.size() && Arrays[F]) [[likely]]
    return Arrays[F];
  return makeSites(VM, Func);
}

/// The combined count of a tensor held by one register and one allocation
/// site, and nothing else.
inline constexpr uint64_t kRegisterAndSiteCount = (uint64_t(1) << 32) | 2;

/// Drops the reference of a register of VM `Owner` (run by the caller's
/// thread) to value `V` when V is a tensor that one of Owner's allocation
/// sites holds and nothing else does: without an atomic read-modify-write
/// (only this thread can reach it). False, doing nothing, otherwise: the
/// caller releases V as usual. The interpreter and the baseline tier's
/// null_value stencil (jit/baseline/stencils.cpp) call it.
inline bool releasedToSite(const VMJITAny &V, const void *Owner) noexcept {
  if (V.type_index != kVMJITTensor)
    return false;
  auto *T = reinterpret_cast<TensorObj *>(Object::fromRaw(V.v_obj));
  if (T->SiteOwner.load(std::memory_order_relaxed) != Owner ||
      T->combinedCount() != kRegisterAndSiteCount)
    return false;
  T->decRefExclusive();
  return true;
}

} // namespace vmjit::vm

#endif // VMJIT_VM_ALLOC_SITES_H
