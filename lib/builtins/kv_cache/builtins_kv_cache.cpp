//===- builtins_kv_cache.cpp - TVM's legacy attention KV cache ------------===//
//
// vm.builtin.attention_kv_cache_{create,update,append,view,window_override,
// window_override_with_sinks,array_popn,array_clear}: the in-place KV cache
// object of Apache TVM's lm_support.cc ("relax.vm.AttentionKVCacheLegacy"),
// a tensor of reserved rows (dimension 0) of which the first `fill count`
// hold values. Appending past the reserve doubles it; the windowed forms
// keep at most max_cache_size rows and wrap around after the sinks.
// Every check is made before the cache changes, so an error leaves it as
// it was.
//
//===----------------------------------------------------------------------===//

#include "../builtins_internal.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/data_type.h"
#include "vmjit/runtime/object_pool.h"
#include "vmjit/runtime/shape.h"

#include <algorithm>
#include <cstring>
#include <fmt/format.h>
#include <limits>
#include <vector>

namespace vmjit::vm::builtin {
namespace {

/// The cache object (TVM's AttentionKVCacheLegacyObj). Mutable: the
/// builtins change it in place and return it.
class KVCacheObj : public Object {
public:
  static int32_t typeIndex() {
    static const int32_t Index =
        registerDynamicType("relax.vm.AttentionKVCacheLegacy");
    return Index;
  }
  KVCacheObj() : Object(typeIndex(), recycledObjectDeleter<KVCacheObj>) {}

  /// The reserved rows; compact, on the CPU.
  Tensor Data;
  /// Rows that hold values.
  int64_t FillCount = 0;
  /// Where the next windowed write goes (window_override only).
  int64_t WindowPos = 0;
};

/// A reference to a cache; as a typed parameter it accepts only a cache.
class KVCache : public ObjectRef {
public:
  using ContainerType = KVCacheObj;
  static constexpr const char *kTypeName = "relax.vm.AttentionKVCacheLegacy";
  KVCache() = default;
  explicit KVCache(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  KVCacheObj *operator->() const noexcept {
    return static_cast<KVCacheObj *>(ObjectRef::get());
  }
};

} // namespace
} // namespace vmjit::vm::builtin

namespace vmjit {
template <>
struct TypeTraits<vm::builtin::KVCache>
    : vm::builtin::DynamicObjectRefTypeTraits<vm::builtin::KVCache> {};
} // namespace vmjit

namespace vmjit::vm::builtin {
namespace {

int64_t reservedRows(const KVCacheObj &C) { return C.Data.shape()[0]; }

/// Bytes of one row (dimension 0) of the cache.
size_t rowBytes(const KVCacheObj &C) {
  size_t N = dtypeBytes(C.Data.dtype());
  for (int64_t D : C.Data.shape().subspan(1))
    N *= static_cast<size_t>(D);
  return N;
}

/// A value must have the cache's element type, rank and row shape, on the
/// CPU.
void checkValue(const char *Fn, const KVCacheObj &C, const Tensor &Value) {
  if (Value.dtype() != C.Data.dtype())
    fail(Fn,
         fmt::format("the value is {} but the cache holds {}",
                     dtypeName(Value.dtype()), dtypeName(C.Data.dtype())),
         "TypeError");
  needCpu(Fn, Value, "the value");
  if (Value.ndim() != C.Data.ndim())
    fail(Fn, fmt::format("the value has rank {} but the cache has rank {} "
                         "(rows of shape {})",
                         Value.ndim(), C.Data.ndim(),
                         shapeString(C.Data.shape().subspan(1))));
  for (int I = 1; I < C.Data.ndim(); ++I)
    if (Value.shape()[static_cast<size_t>(I)] !=
        C.Data.shape()[static_cast<size_t>(I)])
      fail(Fn, fmt::format("dimension {} of the value is {}, the cache's is "
                           "{} (value shape {}, cache rows of shape {})",
                           I, Value.shape()[static_cast<size_t>(I)],
                           C.Data.shape()[static_cast<size_t>(I)],
                           shapeString(Value.shape()),
                           shapeString(C.Data.shape().subspan(1))));
}

/// Makes room for `Rows` rows: the reserve doubles (from at least 1) until
/// it holds them, keeping the rows it had, as TVM's cache grows.
void reserve(KVCacheObj &C, int64_t Rows) {
  int64_t Have = reservedRows(C);
  if (Rows <= Have)
    return;
  int64_t New = std::max<int64_t>(Have, 1);
  while (New < Rows)
    New = New > std::numeric_limits<int64_t>::max() / 2 ? Rows : New * 2;
  std::vector<int64_t> Shape(C.Data.shape().begin(), C.Data.shape().end());
  Shape[0] = New;
  Tensor Grown = Tensor::empty(Shape, C.Data.dtype(), C.Data.device());
  const size_t Old = C.Data.nbytes();
  if (Old)
    std::memcpy(Grown.data(), C.Data.data(), Old);
  std::memset(static_cast<char *>(Grown.data()) + Old, 0, Grown.nbytes() - Old);
  C.Data = std::move(Grown);
}

/// The value's rows as compact bytes: its own memory, or a copy in `Tmp`
/// when it is strided.
const char *compactRows(const Tensor &Value, std::vector<char> &Tmp) {
  if (Value.isContiguous())
    return static_cast<const char *>(Value.data());
  Tmp.resize(Value.nbytes());
  copyElements(Value, Tmp.data());
  return Tmp.data();
}

/// Copies `Count` rows of the value, from its row `From`, to row `To` of
/// the cache.
void writeRows(KVCacheObj &C, int64_t To, const char *Rows, int64_t From,
               int64_t Count) {
  if (Count <= 0)
    return;
  const size_t RB = rowBytes(C);
  std::memcpy(static_cast<char *>(C.Data.data()) + static_cast<size_t>(To) * RB,
              Rows + static_cast<size_t>(From) * RB,
              static_cast<size_t>(Count) * RB);
}

/// Appends the value's rows after the filled ones, growing the reserve.
void append(const char *Fn, KVCacheObj &C, const Tensor &Value) {
  checkValue(Fn, C, Value);
  const int64_t N = Value.shape()[0];
  reserve(C, C.FillCount + N);
  std::vector<char> Tmp;
  writeRows(C, C.FillCount, compactRows(Value, Tmp), 0, N);
  C.FillCount += N;
}

/// A view of the filled rows; `Dims` must be [fill count, row shape...].
Tensor view(const char *Fn, const KVCacheObj &C, const Shape &Dims) {
  const auto Data = C.Data.shape();
  bool Ok = Dims.size() == Data.size() && !Dims.dims().empty() &&
            Dims[0] == C.FillCount;
  for (size_t I = 1; Ok && I < Data.size(); ++I)
    Ok = Dims[I] == Data[I];
  if (!Ok) {
    std::vector<int64_t> Want(Data.begin(), Data.end());
    Want[0] = C.FillCount;
    fail(Fn,
         fmt::format("cannot view the cache as {}: it holds {} filled "
                     "rows, a view must have shape {}",
                     shapeString(Dims.dims()), C.FillCount, shapeString(Want)));
  }
  return Tensor::view(C.Data, C.Data.data(), Dims.dims(), C.Data.dtype(),
                      C.Data.device());
}

/// attention_kv_cache_create(init data, reserve shape, init fill count):
/// a cache of `Reserve` rows holding the init data's rows; a fill count
/// >= 0 then replaces the filled-row count (and the window position).
KVCache create(Tensor Init, Shape Reserve, int64_t InitFill) {
  const char *Fn = "vm.builtin.attention_kv_cache_create";
  needCpu(Fn, Init, "the init data");
  if (Init.dtype().bits % 8 != 0 || Init.dtype().lanes == 0)
    fail(Fn,
         fmt::format("cannot cache elements of type {} (not whole bytes)",
                     dtypeName(Init.dtype())),
         "TypeError");
  if (Reserve.size() != static_cast<size_t>(Init.ndim()) || Reserve.size() == 0)
    fail(Fn, fmt::format("the reserve shape {} must have the init data's "
                         "rank {} (at least 1)",
                         shapeString(Reserve.dims()), Init.ndim()));
  for (int64_t D : Reserve)
    if (D < 0)
      fail(Fn, fmt::format("negative dimension in the reserve shape {}",
                           shapeString(Reserve.dims())));
  auto Obj = makeRecycledObject<KVCacheObj>();
  Obj->Data = Tensor::empty(Reserve.dims(), Init.dtype(), Init.device());
  std::memset(Obj->Data.data(), 0, Obj->Data.nbytes());
  append(Fn, *Obj, Init);
  if (InitFill > reservedRows(*Obj))
    fail(Fn, fmt::format("the init fill count {} is more than the {} "
                         "reserved rows",
                         InitFill, reservedRows(*Obj)));
  if (InitFill >= 0) {
    Obj->FillCount = InitFill;
    Obj->WindowPos = InitFill;
  }
  return KVCache(ObjectPtr<Object>(std::move(Obj)));
}

/// attention_kv_cache_update(cache, value): replaces the filled rows with
/// the value, which must have as many rows.
KVCache update(KVCache Cache, Tensor Value) {
  const char *Fn = "vm.builtin.attention_kv_cache_update";
  KVCacheObj &C = *Cache.operator->();
  checkValue(Fn, C, Value);
  if (Value.shape()[0] != C.FillCount)
    fail(Fn, fmt::format("the value has {} rows but the cache holds {}: "
                         "update replaces every filled row",
                         Value.shape()[0], C.FillCount));
  std::vector<char> Tmp;
  writeRows(C, 0, compactRows(Value, Tmp), 0, C.FillCount);
  return Cache;
}

/// attention_kv_cache_append(cache, value).
KVCache appendBuiltin(KVCache Cache, Tensor Value) {
  append("vm.builtin.attention_kv_cache_append", *Cache.operator->(), Value);
  return Cache;
}

/// The windowed append of TVM's WindowOverride: rows go at the window
/// position; what does not fit before max_cache_size wraps to the row
/// after the sinks.
KVCache windowOverride(const char *Fn, KVCache Cache, const Tensor &Value,
                       int64_t MaxSize, int64_t Sinks) {
  KVCacheObj &C = *Cache.operator->();
  checkValue(Fn, C, Value);
  if (Sinks < 0 || MaxSize < Sinks)
    fail(Fn, fmt::format("the sinks ({}) must be between 0 and "
                         "max_cache_size ({})",
                         Sinks, MaxSize));
  const int64_t N = Value.shape()[0];
  if (N > MaxSize - Sinks)
    fail(Fn, fmt::format("the value has {} rows, more than max_cache_size "
                         "({}) less the sinks ({})",
                         N, MaxSize, Sinks));
  const int64_t Pos = C.WindowPos;
  if (Pos > MaxSize)
    fail(Fn, fmt::format("the window position {} is beyond max_cache_size "
                         "{}",
                         Pos, MaxSize));
  const int64_t First = std::min(N, MaxSize - Pos); // rows before the end
  const int64_t Rest = N - First;                   // rows that wrap
  const int64_t NewFill = std::min(C.FillCount + N, MaxSize);
  if (Rest > 0 && NewFill != MaxSize)
    fail(Fn, fmt::format("cannot wrap around: the window position is {} "
                         "but only {} of {} rows are filled",
                         Pos, C.FillCount, MaxSize));
  // TVM grows the reserve while the window is not full; beyond that, make
  // sure every row written and every filled row exists.
  if (C.FillCount + N <= MaxSize)
    reserve(C, C.FillCount + N);
  reserve(C, std::max({Pos + First, NewFill, Rest > 0 ? Sinks + Rest : 0}));
  std::vector<char> Tmp;
  const char *Rows = compactRows(Value, Tmp);
  writeRows(C, Pos, Rows, 0, First);
  writeRows(C, Sinks, Rows, First, Rest);
  C.FillCount = NewFill;
  C.WindowPos = Rest > 0 ? Sinks + Rest : std::min(Pos + N, MaxSize);
  return Cache;
}

/// attention_kv_cache_window_override(cache, value, max_cache_size).
KVCache windowOverrideBuiltin(KVCache Cache, Tensor Value, int64_t MaxSize) {
  return windowOverride("vm.builtin.attention_kv_cache_window_override",
                        std::move(Cache), Value, MaxSize, 0);
}

/// attention_kv_cache_window_override_with_sinks(cache, value,
/// max_cache_size, num_attention_sinks).
KVCache windowOverrideWithSinks(KVCache Cache, Tensor Value, int64_t MaxSize,
                                int64_t Sinks) {
  return windowOverride(
      "vm.builtin.attention_kv_cache_window_override_with_sinks",
      std::move(Cache), Value, MaxSize, Sinks);
}

/// attention_kv_cache_view(cache [, shape]): a view of the filled rows
/// (packed, as in TVM: ValueError for another argument count).
void viewBuiltin(PackedArgs A, Any *Rv) {
  const char *Fn = "vm.builtin.attention_kv_cache_view";
  if (A.size() != 1 && A.size() != 2)
    fail(Fn, fmt::format("expected 1 or 2 arguments but got {}", A.size()));
  KVCache Cache = arg<KVCache>(Fn, A, 0);
  const KVCacheObj &C = *Cache.operator->();
  if (A.size() == 2) {
    *Rv = view(Fn, C, arg<Shape>(Fn, A, 1));
    return;
  }
  std::vector<int64_t> Dims(C.Data.shape().begin(), C.Data.shape().end());
  Dims[0] = C.FillCount;
  *Rv = view(Fn, C, Shape(std::move(Dims)));
}

/// The caches of an array, each checked (TypeError naming the element).
std::vector<KVCache> cachesOf(const char *Fn, const Array &Caches) {
  std::vector<KVCache> Out;
  Out.reserve(Caches.size());
  for (size_t I = 0; I < Caches.size(); ++I) {
    auto C = Caches[I].as<KVCache>();
    if (!C)
      fail(Fn,
           fmt::format("element {} of the array is {}, not a KV cache", I,
                       Caches[I].typeName()),
           "TypeError");
    Out.push_back(std::move(*C));
  }
  return Out;
}

/// attention_kv_cache_array_popn(caches, n): drops the last n filled rows
/// of every cache (all are checked before any changes).
void arrayPopN(Array Caches, int64_t N) {
  const char *Fn = "vm.builtin.attention_kv_cache_array_popn";
  std::vector<KVCache> All = cachesOf(Fn, Caches);
  for (size_t I = 0; I < All.size(); ++I)
    if (N < 0 || N > All[I]->FillCount)
      fail(Fn, fmt::format("cannot pop {} rows from cache {}, which holds {}",
                           N, I, All[I]->FillCount));
  for (KVCache &C : All)
    C->FillCount -= N;
}

/// attention_kv_cache_array_clear(caches): empties every cache.
void arrayClear(Array Caches) {
  for (KVCache &C :
       cachesOf("vm.builtin.attention_kv_cache_array_clear", Caches)) {
    C->FillCount = 0;
    C->WindowPos = 0;
  }
}

} // namespace

void registerKVCacheBuiltins(GlobalDef &D) {
  D.def("vm.builtin.attention_kv_cache_create", create)
      .def("vm.builtin.attention_kv_cache_update", update)
      .def("vm.builtin.attention_kv_cache_append", appendBuiltin)
      .def("vm.builtin.attention_kv_cache_window_override",
           windowOverrideBuiltin)
      .def("vm.builtin.attention_kv_cache_window_override_with_sinks",
           windowOverrideWithSinks)
      .defPacked("vm.builtin.attention_kv_cache_view", viewBuiltin)
      .def("vm.builtin.attention_kv_cache_array_popn", arrayPopN)
      .def("vm.builtin.attention_kv_cache_array_clear", arrayClear);
}

} // namespace vmjit::vm::builtin
