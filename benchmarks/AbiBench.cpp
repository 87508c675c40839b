//===- AbiBench.cpp - Cost of one packed call versus a direct C++ call ----===//
//
// abi/*: what a call through the safe-call ABI costs, with an int and with a
// Tensor argument, against a direct (non-inlined) C++ call doing the same
// work. Each iteration feeds the previous result into the next call so that
// nothing can be hoisted.
//
//   raw_*    a free safe-call entry (what kernel libraries and "cpacked"
//            JIT calls use), called through the Function object;
//   typed_*  a C++ lambda wrapped by Function::fromTyped (argument checks
//            and conversions included);
//   direct_* a plain C++ call: the floor.
//
//===----------------------------------------------------------------------===//

#include "vmjit/runtime/function.h"
#include "vmjit/runtime/tensor.h"

#include <benchmark/benchmark.h>

using namespace vmjit;

namespace {

extern "C" int rawIncrement(void *, const VMJITAny *Args, int32_t,
                            VMJITAny *Result) {
  Result->type_index = kVMJITInt;
  Result->zero_padding = 0;
  Result->v_int64 = Args[0].v_int64 + 1;
  return 0;
}

/// Returns its Tensor argument (a new reference), like an in-place kernel.
extern "C" int rawTensorPass(void *, const VMJITAny *Args, int32_t,
                             VMJITAny *Result) {
  *Result = Args[0];
  VMJITObjectIncRef(Result->v_obj);
  return 0;
}

[[gnu::noinline]] int64_t directIncrement(int64_t X) {
  benchmark::ClobberMemory();
  return X + 1;
}

[[gnu::noinline]] Tensor directTensorPass(const Tensor &T) {
  benchmark::ClobberMemory();
  return T;
}

void rawInt(benchmark::State &State) {
  Function F = Function::fromSafeCall(rawIncrement, "raw_int");
  FunctionObj *Obj = F.get();
  Any R(int64_t(0));
  for (auto _ : State) {
    AnyView Arg(R);
    Any Next;
    if (Obj->safeCall(&Arg, 1, &Next) != 0)
      throwRaisedError();
    R = std::move(Next);
  }
  benchmark::DoNotOptimize(R.cast<int64_t>());
}

void typedInt(benchmark::State &State) {
  Function F = Function::fromTyped("typed_int", [](int64_t X) { return X + 1; });
  FunctionObj *Obj = F.get();
  Any R(int64_t(0));
  for (auto _ : State) {
    AnyView Arg(R);
    Any Next;
    if (Obj->safeCall(&Arg, 1, &Next) != 0)
      throwRaisedError();
    R = std::move(Next);
  }
  benchmark::DoNotOptimize(R.cast<int64_t>());
}

void directInt(benchmark::State &State) {
  int64_t R = 0;
  for (auto _ : State)
    R = directIncrement(R);
  benchmark::DoNotOptimize(R);
}

void rawTensor(benchmark::State &State) {
  Function F = Function::fromSafeCall(rawTensorPass, "raw_tensor");
  FunctionObj *Obj = F.get();
  Any R(Tensor::empty({4}, dtype::Float32));
  for (auto _ : State) {
    AnyView Arg(R);
    Any Next;
    if (Obj->safeCall(&Arg, 1, &Next) != 0)
      throwRaisedError();
    R = std::move(Next);
  }
}

void typedTensor(benchmark::State &State) {
  Function F =
      Function::fromTyped("typed_tensor", [](Tensor T) { return T; });
  FunctionObj *Obj = F.get();
  Any R(Tensor::empty({4}, dtype::Float32));
  for (auto _ : State) {
    AnyView Arg(R);
    Any Next;
    if (Obj->safeCall(&Arg, 1, &Next) != 0)
      throwRaisedError();
    R = std::move(Next);
  }
}

void directTensor(benchmark::State &State) {
  Tensor R = Tensor::empty({4}, dtype::Float32);
  for (auto _ : State)
    R = directTensorPass(R);
}

} // namespace

BENCHMARK(rawInt)->Name("abi/raw_int");
BENCHMARK(typedInt)->Name("abi/typed_int");
BENCHMARK(directInt)->Name("abi/direct_int");
BENCHMARK(rawTensor)->Name("abi/raw_tensor");
BENCHMARK(typedTensor)->Name("abi/typed_tensor");
BENCHMARK(directTensor)->Name("abi/direct_tensor");
