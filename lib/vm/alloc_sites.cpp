//===- alloc_sites.cpp - Caches of allocation call sites ------------------===//
//
// See vmjit/vm/alloc_sites.h. A tensor site holds its last view (one
// strong reference) and the storage that view lives in; a storage site
// holds its last storage and the tensor sites of the same function whose
// views live in it (its links), which is how it tells that every other
// reference to the storage is a dead cached view.
//
//===----------------------------------------------------------------------===//

#include "vmjit/vm/alloc_sites.h"

#include "../builtins/builtins_internal.h"
#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/shape_codes.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/allocator.h"
#include "vmjit/vm/native_helpers.h"
#include "vmjit/vm/special_builtins.h"
#include "vmjit/vm/virtual_machine.h"

#include <algorithm>
#include <array>
#include <span>

namespace vmjit::vm {

namespace {

/// Whether scope argument `A` is "" or "global".
[[gnu::noinline]] bool globalScopeText(const VMJITAny &A) noexcept {
  if (A.type_index != kVMJITSmallStr &&
      A.type_index != kVMJITRawStr && A.type_index != kVMJITStr)
    return false;
  std::optional<std::string_view> S;
  try {
    S = detail::stringView(A);
  } catch (...) {
    return false;
  }
  return S && (S->empty() || *S == "global");
}

/// Whether the optional scope argument `I` is absent, None, "" or
/// "global" (the builtins' check passes).
inline bool globalScope(const VMJITAny *Args, int32_t N, int32_t I) noexcept {
  return N <= I || Args[I].type_index == kVMJITNone ||
         globalScopeText(Args[I]);
}

bool sameDims(std::span<const int64_t> Dims, const DLTensor &T) noexcept {
  if (Dims.size() != static_cast<size_t>(T.ndim))
    return false;
  // A loop: these are a few dimensions, not worth a call of memcmp.
  for (size_t K = 0; K < Dims.size(); ++K)
    if (Dims[K] != T.shape[K])
      return false;
  return true;
}

/// Whether a size shape is [bytes of St].
bool sameSize(std::span<const int64_t> Size, const StorageObj &St) noexcept {
  return Size.size() == 1 && Size[0] >= 0 &&
         static_cast<uint64_t>(Size[0]) == St.size();
}

bool sameDType(DLDataType A, DLDataType B) noexcept {
  return A.code == B.code && A.bits == B.bits && A.lanes == B.lanes;
}

bool isShape(const VMJITAny &A) noexcept {
  return A.type_index == ShapeObj::kTypeIndex;
}

std::span<const int64_t> shapeDims(const VMJITAny &A) noexcept {
  return reinterpret_cast<const ShapeObj *>(A.v_obj)->dims();
}

void setObject(VMJITAny &Out, int32_t TypeIndex, Object *O) noexcept {
  detail::setTypeIndex(Out, TypeIndex);
  Out.v_obj = O->raw();
}

} // namespace

struct AllocSites::FunctionSites {
  /// One per instruction of the function (AllocSites::Arrays holds its
  /// data pointer).
  std::vector<AllocSite> ByPC;
  /// Per storage site (AllocSite::Link): the tensor sites linked to it.
  std::vector<std::vector<int32_t>> Links;
  /// The storage sites, by instruction.
  std::vector<int32_t> StoragePCs;
};

AllocSites::AllocSites() : StorageType(StorageObj::typeIndex()) {}
AllocSites::~AllocSites() { clear(); }

AllocSite *AllocSites::makeSites(const VirtualMachine &VM,
                                 int64_t Func) noexcept {
  const auto F = static_cast<size_t>(Func);
  try {
    if (Funcs.size() <= F) {
      const size_t N = VM.executable().functions().size();
      Arrays.resize(N);
      Funcs.resize(N);
    }
    auto FS = std::make_unique<FunctionSites>();
    FS->ByPC.resize(
        static_cast<size_t>(VM.executable().function(Func).numInstrs()));
    Funcs[F] = std::move(FS);
    Arrays[F] = Funcs[F]->ByPC.data();
    return Arrays[F];
  } catch (...) {
    return nullptr; // no cache: every call goes to the builtin
  }
}

AllocSites::FunctionSites &AllocSites::functionSites(int64_t Func) noexcept {
  return *Funcs[static_cast<size_t>(Func)];
}

/// Replaces the object a site holds a reference to.
static void hold(Object *&Slot, Object *New) noexcept {
  if (New)
    New->incRef();
  if (Object *Old = std::exchange(Slot, New))
    Old->decRef();
}

int AllocSites::allocTensor(VirtualMachine &VM, int64_t Func, int64_t PC,
                            const VMJITAny *Args, int32_t N,
                            VMJITAny *Result) noexcept {
  AllocSite *Sites = sitesOf(VM, Func);
  if (Sites && (N == 4 || N == 5)) [[likely]] {
    AllocSite &S = Sites[PC];
    auto *T = static_cast<TensorObj *>(S.Obj);
    // The same storage object, offset, shape (the same object, or the
    // view's dimensions) and dtype as the view was made from.
    if (T && Args[0].v_obj == S.Storage->raw() &&
        Args[0].type_index == StorageType &&
        Args[1].type_index == kVMJITInt && Args[1].v_int64 == S.Offset &&
        Args[3].type_index == kVMJITDataType &&
        sameDType(Args[3].v_dtype, S.DType) && isShape(Args[2]) &&
        (Args[2].v_obj == S.Shape->raw() ||
         sameDims(shapeDims(Args[2]), T->DL)) &&
        globalScope(Args, N, 4) && T->combinedCount() == kSoleReference) {
      T->incRefExclusive();
      setObject(*Result, kVMJITTensor, T);
      return 0;
    }
  }
  FunctionObj *Std = standardSpecial(SpecialBuiltin::AllocTensor);
  if (int Rc = Std->entry()(Std, Args, N, Result))
    return Rc;
  if (Sites)
    cacheTensor(&VM, functionSites(Func), PC, *Result, Args);
  return 0;
}

void AllocSites::cacheTensor(const void *Owner, FunctionSites &FS,
                             int64_t PC, const VMJITAny &Result,
                             const VMJITAny *Args) noexcept {
  AllocSite &S = FS.ByPC[static_cast<size_t>(PC)];
  auto *T = reinterpret_cast<TensorObj *>(Object::fromRaw(Result.v_obj));
  // Only a compact view at the storage's data (what the builtin makes),
  // asked for with an int offset and a DataType (what a hit compares).
  if (Result.type_index != kVMJITTensor || T->DL.strides ||
      T->DL.byte_offset != 0 || Args[1].type_index != kVMJITInt ||
      Args[3].type_index != kVMJITDataType)
    return;
  auto *Storage =
      reinterpret_cast<StorageObj *>(Object::fromRaw(Args[0].v_obj));
  // Unlinked from the old view's storage site, linked to the new one's.
  if (S.Link >= 0) {
    std::vector<int32_t> &L =
        FS.Links[static_cast<size_t>(FS.ByPC[static_cast<size_t>(S.Link)].Link)];
    auto It = std::find(L.begin(), L.end(), static_cast<int32_t>(PC));
    if (It != L.end()) // always (each link is listed once)
      L.erase(It);
    S.Link = -1;
  }
  // The old view is no longer the site's before its reference goes.
  if (S.Obj)
    static_cast<TensorObj *>(S.Obj)->SiteOwner.store(nullptr,
                                                     std::memory_order_relaxed);
  T->SiteOwner.store(Owner, std::memory_order_relaxed);
  hold(S.Obj, T);
  hold(S.Shape, Object::fromRaw(Args[2].v_obj)); // a Shape: the call passed
  S.Storage = Storage;
  S.Offset = Args[1].v_int64;
  S.DType = Args[3].v_dtype;
  for (int32_t Q : FS.StoragePCs) {
    AllocSite &St = FS.ByPC[static_cast<size_t>(Q)];
    if (St.Obj != Storage)
      continue;
    try {
      FS.Links[static_cast<size_t>(St.Link)].push_back(
          static_cast<int32_t>(PC));
      S.Link = Q;
    } catch (...) {
      // Unlinked: the storage site will not see this view as dead.
    }
    break;
  }
}

int AllocSites::allocStorage(VirtualMachine &VM, int64_t Func, int64_t PC,
                             const VMJITAny *Args, int32_t N,
                             VMJITAny *Result) noexcept {
  AllocSite *Sites = sitesOf(VM, Func);
  if (Sites && (N == 4 || N == 5)) [[likely]] {
    AllocSite &S = Sites[PC];
    auto *St = static_cast<StorageObj *>(S.Obj);
    if (St && S.Link >= 0 && Args[0].type_index == kVMJITOpaquePtr &&
        Args[0].v_ptr == &VM && isShape(Args[1]) &&
        Args[2].type_index == kVMJITInt && Args[2].v_int64 == S.Offset &&
        Args[3].type_index == kVMJITDataType &&
        (Args[1].v_obj == S.Shape->raw() ||
         sameSize(shapeDims(Args[1]), *St)) &&
        globalScope(Args, N, 4)) {
      const FunctionSites &FS = functionSites(Func);
      const std::vector<int32_t> &Views = FS.Links[static_cast<size_t>(S.Link)];
      // Its references: the site's and one per linked view, each of which
      // only its own site holds.
      if (St->combinedCount() == kSoleReference + Views.size() &&
          std::all_of(Views.begin(), Views.end(), [&](int32_t K) {
            return Sites[K].Obj->combinedCount() == kSoleReference;
          })) {
        St->incRefExclusive();
        setObject(*Result, StorageType, St);
        return 0;
      }
    }
  }
  FunctionObj *Std = standardSpecial(SpecialBuiltin::AllocStorage);
  if (int Rc = Std->entry()(Std, Args, N, Result))
    return Rc;
  if (Sites)
    cacheStorage(functionSites(Func), PC, *Result, Args);
  return 0;
}

void AllocSites::cacheStorage(FunctionSites &FS, int64_t PC,
                              const VMJITAny &Result,
                              const VMJITAny *Args) noexcept {
  if (Result.type_index != StorageType || Args[2].type_index != kVMJITInt)
    return;
  AllocSite &S = FS.ByPC[static_cast<size_t>(PC)];
  if (S.Link < 0) {
    // First use of this site: a list of links and a place among the
    // function's storage sites.
    try {
      FS.Links.emplace_back();
      try {
        FS.StoragePCs.push_back(static_cast<int32_t>(PC));
      } catch (...) {
        FS.Links.pop_back();
        throw;
      }
    } catch (...) {
      return; // not cached
    }
    S.Link = static_cast<int32_t>(FS.Links.size() - 1);
  }
  // The views linked to the old storage stay cached but unlinked: they
  // live in a storage this site no longer returns.
  std::vector<int32_t> &Views = FS.Links[static_cast<size_t>(S.Link)];
  for (int32_t K : Views)
    FS.ByPC[static_cast<size_t>(K)].Link = -1;
  Views.clear();
  hold(S.Obj, Object::fromRaw(Result.v_obj));
  hold(S.Shape, Object::fromRaw(Args[1].v_obj)); // a Shape: the call passed
  S.Offset = Args[2].v_int64;
}

namespace {

/// make_shape's dimensions from its (code, value) pairs, into `Dims`
/// (`Dims.size()` of them): false for anything but codes UseImm and
/// LoadShape (a slot of the heap in range), which the builtin then handles.
bool shapeDimsOf(const VMJITAny *Pairs, const builtin::ShapeHeap &Heap,
                 std::span<int64_t> Dims) noexcept {
  for (size_t I = 0; I < Dims.size(); ++I) {
    const VMJITAny &Code = Pairs[2 * I], &Value = Pairs[2 * I + 1];
    if (Code.type_index != kVMJITInt || Value.type_index != kVMJITInt)
      return false;
    if (Code.v_int64 == static_cast<int64_t>(MakeShapeCode::UseImm)) {
      Dims[I] = Value.v_int64;
    } else if (Code.v_int64 == static_cast<int64_t>(MakeShapeCode::LoadShape) &&
               Value.v_int64 >= 0 && Value.v_int64 < Heap.Size) {
      Dims[I] = Heap.Data[Value.v_int64];
    } else {
      return false;
    }
  }
  return true;
}

} // namespace

int AllocSites::makeShape(VirtualMachine &VM, int64_t Func, int64_t PC,
                          const VMJITAny *Args, int32_t N,
                          VMJITAny *Result) noexcept {
  AllocSite *Sites = sitesOf(VM, Func);
  if (Sites && N >= 2 && Args[1].type_index == kVMJITInt &&
      Args[1].v_int64 == (N - 2) / 2 && N % 2 == 0) [[likely]] {
    auto *Sh = static_cast<ShapeObj *>(Sites[PC].Obj);
    std::array<int64_t, ShapeObj::kInlineDims> Buf;
    std::optional<builtin::ShapeHeap> Heap;
    const auto Rank = static_cast<size_t>(Args[1].v_int64);
    // The site's shape, held by no one else, of that rank, rewritten.
    if (Sh && Sh->combinedCount() == kSoleReference && Sh->inlineDims() &&
        Sh->dims().size() == Rank &&
        (Heap = builtin::asShapeHeap(
             *reinterpret_cast<const AnyView *>(&Args[0]))) &&
        shapeDimsOf(Args + 2, *Heap, std::span(Buf.data(), Rank))) {
      Sh->reassignInline(std::span(Buf.data(), Rank));
      Sh->incRefExclusive();
      setObject(*Result, kVMJITShape, Sh);
      return 0;
    }
  }
  FunctionObj *Std = standardSpecial(SpecialBuiltin::MakeShape);
  if (int Rc = Std->entry()(Std, Args, N, Result))
    return Rc;
  // A shape whose dimensions live in it: the next call can rewrite them.
  if (Sites && Result->type_index == kVMJITShape &&
      reinterpret_cast<ShapeObj *>(Object::fromRaw(Result->v_obj))
          ->inlineDims())
    hold(Sites[PC].Obj, Object::fromRaw(Result->v_obj));
  return 0;
}

size_t AllocSites::cached() const noexcept {
  size_t N = 0;
  for (const auto &FS : Funcs)
    if (FS)
      for (const AllocSite &S : FS->ByPC)
        N += S.Obj != nullptr;
  return N;
}

void AllocSites::clear() noexcept {
  // The arrays stay (native frames may hold them: AllocSite). Every link
  // goes first, then each site's references one at a time: a destructor
  // may run arbitrary code, even a call through these sites, which then
  // finds each site either whole or empty.
  for (auto &FS : Funcs) {
    if (!FS)
      continue;
    for (AllocSite &S : FS->ByPC)
      S.Link = -1;
    FS->Links.clear();
    FS->StoragePCs.clear();
  }
  for (auto &FS : Funcs)
    if (FS)
      for (AllocSite &S : FS->ByPC) {
        Object *Obj = std::exchange(S.Obj, nullptr);
        Object *Shape = std::exchange(S.Shape, nullptr);
        S.Storage = nullptr;
        if (Obj && Obj->typeIndex() == kVMJITTensor)
          static_cast<TensorObj *>(Obj)->SiteOwner.store(
              nullptr, std::memory_order_relaxed);
        if (Obj)
          Obj->decRef();
        if (Shape)
          Shape->decRef();
      }
}

} // namespace vmjit::vm

// The native helpers (vm/native_helpers.h) of the two sites: here, so that
// the hit paths above inline into them.
extern "C" {

int vmjit_jit_alloc_tensor(vmjit::vm::NativeContext *Ctx, int64_t PC,
                           const VMJITAny *Args, int32_t N,
                           VMJITAny *Result) {
  vmjit::vm::VirtualMachine &VM = *Ctx->VM;
  // For the frame's inline hits (alloc_tensor_hit; tier 2's guards).
  Ctx->Sites = VM.allocSites().sitesOf(VM, Ctx->Func);
  return VM.allocSites().allocTensor(VM, Ctx->Func, PC, Args, N, Result);
}

int vmjit_jit_make_shape(vmjit::vm::NativeContext *Ctx, int64_t PC,
                         const VMJITAny *Args, int32_t N, VMJITAny *Result) {
  vmjit::vm::VirtualMachine &VM = *Ctx->VM;
  Ctx->Sites = VM.allocSites().sitesOf(VM, Ctx->Func);
  return VM.allocSites().makeShape(VM, Ctx->Func, PC, Args, N, Result);
}

int vmjit_jit_alloc_storage(vmjit::vm::NativeContext *Ctx, int64_t PC,
                            const VMJITAny *Args, int32_t N,
                            VMJITAny *Result) {
  vmjit::vm::VirtualMachine &VM = *Ctx->VM;
  return VM.allocSites().allocStorage(VM, Ctx->Func, PC, Args, N, Result);
}

} // extern "C"
