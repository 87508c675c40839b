//===- builtins.cpp - The vm.builtin.* functions ---------------------------===//

#include "vmjit/vm/builtins.h"
#include "vmjit/kernels/standard_library.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/string.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/virtual_machine.h"

#include <fmt/format.h>
#include <mutex>

namespace vmjit::vm {
namespace {

/// See makeClosure.
class ClosureObj : public FunctionObj {
public:
  ClosureObj(Function Target, std::vector<Any> Captured)
      : FunctionObj(objectDeleter<ClosureObj>, &entry, Target.name(),
                    /*FreeEntry=*/false),
        Target(std::move(Target)), Captured(std::move(Captured)) {}

private:
  static int entry(void *Self, const VMJITAny *Args, int32_t NumArgs,
                   VMJITAny *Result) noexcept {
    auto *C = static_cast<ClosureObj *>(Self);
    size_t Total = static_cast<size_t>(NumArgs) + C->Captured.size();
    constexpr size_t kInline = 16;
    AnyView Inline[kInline];
    std::vector<AnyView> Heap;
    AnyView *All = Inline;
    if (Total > kInline) {
      try {
        Heap.resize(Total);
      } catch (...) {
        return detail::raiseCurrentException();
      }
      All = Heap.data();
    }
    for (int32_t I = 0; I < NumArgs; ++I)
      All[I] = AnyView::fromRaw(Args[I]);
    for (size_t I = 0; I < C->Captured.size(); ++I)
      All[static_cast<size_t>(NumArgs) + I] = AnyView(C->Captured[I]);
    return C->Target.get()->safeCall(All, static_cast<int32_t>(Total),
                                     reinterpret_cast<Any *>(Result));
  }
  Function Target;
  std::vector<Any> Captured;
};

[[noreturn]] void fail(const char *Fn, const std::string &Msg,
                       const char *Kind = "ValueError") {
  throwError(Kind, fmt::format("{}: {}", Fn, Msg));
}

void needArgs(const char *Fn, const PackedArgs &A, int32_t Min, int32_t Max) {
  if (A.size() < Min || A.size() > Max) {
    std::string Want = Min == Max ? std::to_string(Min)
                       : Max == INT32_MAX
                           ? fmt::format("at least {}", Min)
                           : fmt::format("{} to {}", Min, Max);
    // "1 argument", "at least 1 argument", as the runtime's arity errors.
    bool One = Min == 1 && (Max == 1 || Max == INT32_MAX);
    fail(Fn,
         fmt::format("expected {} argument{} but got {}", Want, One ? "" : "s",
                     A.size()),
         "TypeError");
  }
}

template <typename T>
T arg(const char *Fn, const PackedArgs &A, int32_t I) {
  if (auto V = A[I].as<T>())
    return *V;
  fail(Fn,
       fmt::format("argument {} expected {} but got {}", I + 1,
                   TypeTraitsOf<T>::typeName(), A[I].typeName()),
       "TypeError");
}

VirtualMachine &vmArg(const char *Fn, const PackedArgs &A, int32_t I) {
  const VMJITAny &V = A[I].raw();
  if (V.type_index != kVMJITOpaquePtr || !V.v_ptr)
    fail(Fn,
         fmt::format("argument {} expected the VM (%vm) but got {}", I + 1,
                     A[I].typeName()),
         "TypeError");
  return *static_cast<VirtualMachine *>(V.v_ptr);
}

/// A Shape argument; a rank-1 int64 tensor is accepted too (TVM passes
/// shapes either way).
std::vector<int64_t> shapeArg(const char *Fn, const PackedArgs &A, int32_t I) {
  if (auto S = A[I].as<Shape>())
    return {S->begin(), S->end()};
  fail(Fn,
       fmt::format("argument {} expected Shape but got {}", I + 1,
                   A[I].typeName()),
       "TypeError");
}

/// The int64 slots of a shape heap.
int64_t *heapData(const char *Fn, const PackedArgs &A, int32_t I,
                  int64_t &Size) {
  Tensor H = arg<Tensor>(Fn, A, I);
  if (H.dtype() != dtype::Int64 || H.ndim() != 1 || !H.isContiguous())
    fail(Fn, fmt::format("argument {} must be the int64 shape heap", I + 1),
         "TypeError");
  Size = H.shape()[0];
  return H.data<int64_t>();
}

std::span<const int64_t> dimsOf(const char *Fn, const AnyView &V,
                                Any &Keep) {
  if (auto T = V.as<Tensor>()) {
    Keep = *T;
    return T->shape();
  }
  if (auto S = V.as<Shape>()) {
    Keep = *S;
    return S->dims();
  }
  fail(Fn, fmt::format("argument 1 expected Tensor or Shape but got {}",
                       V.typeName()),
       "TypeError");
}

void registerBuiltins(Registry &R) {
  R.add("vm.builtin.copy",
        Function::fromPacked("vm.builtin.copy", [](PackedArgs A, Any *Rv) {
          needArgs("vm.builtin.copy", A, 1, 1);
          *Rv = Any(A[0]);
        }));

  R.add("vm.builtin.make_tuple",
        Function::fromPacked("vm.builtin.make_tuple",
                             [](PackedArgs A, Any *Rv) {
                               std::vector<Any> Elems;
                               Elems.reserve(static_cast<size_t>(A.size()));
                               for (int32_t I = 0; I < A.size(); ++I)
                                 Elems.emplace_back(A[I]);
                               *Rv = Array(std::move(Elems));
                             }));

  R.add("vm.builtin.tuple_getitem",
        Function::fromPacked(
            "vm.builtin.tuple_getitem", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.tuple_getitem";
              needArgs(Fn, A, 2, 2);
              Array T = arg<Array>(Fn, A, 0);
              int64_t I = arg<int64_t>(Fn, A, 1);
              if (I < 0 || I >= static_cast<int64_t>(T.size()))
                fail(Fn,
                     fmt::format("index {} is out of range for a tuple of {} "
                                 "elements",
                                 I, T.size()),
                     "IndexError");
              *Rv = T[static_cast<size_t>(I)];
            }));

  R.add("vm.builtin.read_if_cond",
        Function::fromPacked(
            "vm.builtin.read_if_cond", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.read_if_cond";
              needArgs(Fn, A, 1, 1);
              const VMJITAny &V = A[0].raw();
              if (V.type_index == kVMJITInt || V.type_index == kVMJITBool) {
                *Rv = V.v_int64 != 0;
                return;
              }
              if (auto T = A[0].as<Tensor>()) {
                DLDataType D = T->dtype();
                if (T->numel() < 1)
                  fail(Fn, "the condition tensor is empty");
                if (D.lanes != 1 || (D.code != kDLInt && D.code != kDLUInt &&
                                     D.code != kDLBool))
                  fail(Fn,
                       fmt::format("the condition tensor must be int, uint or "
                                   "bool, not {}",
                                   dtypeName(D)),
                       "TypeError");
                const char *P = static_cast<const char *>(T->data());
                bool Nonzero = false;
                for (size_t B = 0; B < dtypeBytes(D); ++B)
                  Nonzero |= P[B] != 0;
                *Rv = Nonzero;
                return;
              }
              fail(Fn,
                   fmt::format("the condition must be an int, a bool or an "
                               "int/uint/bool tensor, not {}",
                               A[0].typeName()),
                   "TypeError");
            }));

  R.add("vm.builtin.null_value",
        Function::fromPacked("vm.builtin.null_value", [](PackedArgs A, Any *Rv) {
          needArgs("vm.builtin.null_value", A, 0, 0);
          Rv->reset();
        }));

  R.add("vm.builtin.make_closure",
        Function::fromPacked(
            "vm.builtin.make_closure", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.make_closure";
              needArgs(Fn, A, 1, INT32_MAX);
              Function Target = arg<Function>(Fn, A, 0);
              std::vector<Any> Captured;
              for (int32_t I = 1; I < A.size(); ++I)
                Captured.emplace_back(A[I]);
              *Rv = makeClosure(std::move(Target), std::move(Captured));
            }));

  R.add("vm.builtin.invoke_closure",
        Function::fromPacked(
            "vm.builtin.invoke_closure", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.invoke_closure";
              needArgs(Fn, A, 2, INT32_MAX);
              vmArg(Fn, A, 0);
              if (A[1].typeIndex() != kVMJITFunction)
                fail(Fn,
                     fmt::format("argument 2 expected a closure or function "
                                 "but got {}",
                                 A[1].typeName()),
                     "TypeError");
              auto *Callee = reinterpret_cast<FunctionObj *>(A[1].raw().v_obj);
              if (Callee->safeCall(A.data() + 2, A.size() - 2, Rv) != 0)
                throwRaisedError();
            }));

  R.add("vm.builtin.alloc_storage",
        Function::fromPacked(
            "vm.builtin.alloc_storage", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.alloc_storage";
              needArgs(Fn, A, 4, 5);
              VirtualMachine &VM = vmArg(Fn, A, 0);
              std::vector<int64_t> Size = shapeArg(Fn, A, 1);
              int64_t DeviceIndex = arg<int64_t>(Fn, A, 2);
              arg<DLDataType>(Fn, A, 3); // the dtype hint
              if (A.size() == 5)
                arg<std::string>(Fn, A, 4); // the memory scope
              if (Size.size() != 1 || Size[0] < 0)
                fail(Fn, fmt::format("the size must be a shape [nbytes], not "
                                     "{}",
                                     shapeString(Size)));
              DLDevice Dev = cpuDevice();
              if (DeviceIndex >= 0) {
                if (DeviceIndex >= static_cast<int64_t>(VM.devices().size()))
                  fail(Fn, fmt::format("device index {} is out of range: the "
                                       "VM has {} device(s)",
                                       DeviceIndex, VM.devices().size()));
                Dev = VM.devices()[static_cast<size_t>(DeviceIndex)];
              }
              *Rv = ObjectRef(VM.allocator().allocate(
                  static_cast<size_t>(Size[0]), Dev));
            }));

  R.add("vm.builtin.alloc_tensor",
        Function::fromPacked(
            "vm.builtin.alloc_tensor", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.alloc_tensor";
              needArgs(Fn, A, 4, 5);
              ObjectRef S = arg<ObjectRef>(Fn, A, 0);
              if (S.typeIndex() != StorageObj::typeIndex())
                fail(Fn,
                     fmt::format("argument 1 expected Storage but got {}",
                                 A[0].typeName()),
                     "TypeError");
              auto *Storage = static_cast<StorageObj *>(S.get());
              int64_t Offset = arg<int64_t>(Fn, A, 1);
              std::vector<int64_t> Dims = shapeArg(Fn, A, 2);
              DLDataType T = arg<DLDataType>(Fn, A, 3);
              if (A.size() == 5)
                arg<std::string>(Fn, A, 4);
              uint64_t Bytes = dtypeBytes(T);
              for (int64_t D : Dims) {
                if (D < 0)
                  fail(Fn, fmt::format("negative dimension in shape {}",
                                       shapeString(Dims)));
                if (D && Bytes > Storage->size() / static_cast<uint64_t>(D))
                  Bytes = UINT64_MAX;
                else
                  Bytes *= static_cast<uint64_t>(D);
              }
              if (Offset < 0)
                fail(Fn, fmt::format("the byte offset {} is negative", Offset));
              if (Offset % static_cast<int64_t>(dtypeBytes(T)))
                fail(Fn, fmt::format("the byte offset {} is not a multiple of "
                                     "{} (the size of a {} element)",
                                     Offset, dtypeBytes(T), dtypeName(T)));
              if (static_cast<uint64_t>(Offset) > Storage->size() ||
                  Bytes > Storage->size() - static_cast<uint64_t>(Offset))
                fail(Fn, fmt::format("a {} tensor of shape {} at offset {} "
                                     "does not fit in a storage of {} bytes",
                                     dtypeName(T), shapeString(Dims), Offset,
                                     Storage->size()));
              *Rv = Tensor::view(S, static_cast<char *>(Storage->data()) + Offset,
                                 Dims, T, Storage->device());
            }));

  R.add("vm.builtin.shape_of",
        Function::fromPacked("vm.builtin.shape_of", [](PackedArgs A, Any *Rv) {
          const char *Fn = "vm.builtin.shape_of";
          needArgs(Fn, A, 1, 1);
          Tensor T = arg<Tensor>(Fn, A, 0);
          *Rv = Shape(std::vector<int64_t>(T.shape().begin(), T.shape().end()));
        }));

  R.add("vm.builtin.check_tensor_info",
        Function::fromPacked(
            "vm.builtin.check_tensor_info", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.check_tensor_info";
              needArgs(Fn, A, 4, 4);
              std::string Text = arg<std::string>(Fn, A, 3);
              auto T = A[0].as<Tensor>();
              if (!T)
                fail(Fn, fmt::format("{}: expected a Tensor but got {}", Text,
                                     A[0].typeName()));
              int64_t NDim = arg<int64_t>(Fn, A, 1);
              if (NDim != -1 && T->ndim() != NDim)
                fail(Fn, fmt::format("{}: expected a tensor of rank {} but got "
                                     "rank {}",
                                     Text, NDim, T->ndim()));
              if (!A[2].isNone()) {
                DLDataType Want = arg<DLDataType>(Fn, A, 2);
                if (T->dtype() != Want)
                  fail(Fn, fmt::format("{}: expected dtype {} but got {}", Text,
                                       dtypeName(Want), dtypeName(T->dtype())));
              }
              *Rv = *T;
            }));

  R.add("vm.builtin.alloc_shape_heap",
        Function::fromPacked(
            "vm.builtin.alloc_shape_heap", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.alloc_shape_heap";
              needArgs(Fn, A, 2, 2);
              vmArg(Fn, A, 0);
              int64_t Size = arg<int64_t>(Fn, A, 1);
              if (Size < 0 || Size > (int64_t(1) << 24))
                fail(Fn, fmt::format("heap size {} is out of range", Size));
              Tensor H = Tensor::empty({Size}, dtype::Int64);
              std::fill_n(H.data<int64_t>(), Size, 0);
              *Rv = H;
            }));

  R.add("vm.builtin.match_shape",
        Function::fromPacked(
            "vm.builtin.match_shape", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.match_shape";
              needArgs(Fn, A, 4, INT32_MAX);
              Any Keep;
              std::span<const int64_t> Dims = dimsOf(Fn, A[0], Keep);
              int64_t HeapSize = 0;
              int64_t *Heap = heapData(Fn, A, 1, HeapSize);
              int64_t N = arg<int64_t>(Fn, A, 2);
              if (N < 0 || A.size() != 4 + 2 * N)
                fail(Fn, fmt::format("{} (code, value) pairs need {} "
                                     "arguments, got {}",
                                     N, 4 + 2 * N, A.size()),
                     "TypeError");
              std::string Text = arg<std::string>(Fn, A, A.size() - 1);
              if (static_cast<int64_t>(Dims.size()) != N)
                fail(Fn, fmt::format("{}: expected rank {} but got shape {}",
                                     Text, N, shapeString(Dims)));
              for (int64_t I = 0; I < N; ++I) {
                int64_t Code = arg<int64_t>(Fn, A, 3 + 2 * I);
                int64_t V = arg<int64_t>(Fn, A, 4 + 2 * I);
                int64_t D = Dims[static_cast<size_t>(I)];
                auto Slot = [&]() -> int64_t & {
                  if (V < 0 || V >= HeapSize)
                    fail(Fn, fmt::format("heap slot {} is out of range (heap "
                                         "of {})",
                                         V, HeapSize),
                         "IndexError");
                  return Heap[V];
                };
                switch (Code) {
                case 0: // assert dim == value
                  if (D != V)
                    fail(Fn, fmt::format("{}: dimension {} is {}, expected {}",
                                         Text, I, D, V));
                  break;
                case 1: // store dim to heap[value]
                  Slot() = D;
                  break;
                case 2: // no check
                  break;
                case 3: // assert dim == heap[value]
                  if (D != Slot())
                    fail(Fn, fmt::format("{}: dimension {} is {}, expected {}",
                                         Text, I, D, Slot()));
                  break;
                default:
                  fail(Fn, fmt::format("unknown match code {}", Code));
                }
              }
              Rv->reset();
            }));

  R.add("vm.builtin.make_shape",
        Function::fromPacked(
            "vm.builtin.make_shape", [](PackedArgs A, Any *Rv) {
              const char *Fn = "vm.builtin.make_shape";
              needArgs(Fn, A, 2, INT32_MAX);
              int64_t HeapSize = 0;
              int64_t *Heap = heapData(Fn, A, 0, HeapSize);
              int64_t N = arg<int64_t>(Fn, A, 1);
              if (N < 0 || A.size() != 2 + 2 * N)
                fail(Fn, fmt::format("{} (code, value) pairs need {} "
                                     "arguments, got {}",
                                     N, 2 + 2 * N, A.size()),
                     "TypeError");
              std::vector<int64_t> Dims;
              for (int64_t I = 0; I < N; ++I) {
                int64_t Code = arg<int64_t>(Fn, A, 2 + 2 * I);
                int64_t V = arg<int64_t>(Fn, A, 3 + 2 * I);
                if (Code == 0) {
                  Dims.push_back(V);
                } else if (Code == 1) {
                  if (V < 0 || V >= HeapSize)
                    fail(Fn, fmt::format("heap slot {} is out of range (heap "
                                         "of {})",
                                         V, HeapSize),
                         "IndexError");
                  Dims.push_back(Heap[V]);
                } else {
                  fail(Fn, fmt::format("unknown make_shape code {}", Code));
                }
              }
              *Rv = Shape(std::move(Dims));
            }));
}

} // namespace

Function makeClosure(Function Target, std::vector<Any> Captured) {
  return Function(
      makeObject<ClosureObj>(std::move(Target), std::move(Captured)));
}

void registerVMBuiltins() {
  static std::once_flag Once;
  std::call_once(Once, [] {
    registerBuiltins(Registry::global());
    kernels::registerStandardKernels();
  });
}

} // namespace vmjit::vm
