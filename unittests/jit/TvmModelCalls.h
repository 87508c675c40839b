//===- TvmModelCalls.h - One call of each model of ../shared ----*- C++ -*-===//
//
// The calls the execution tests over TVM's real models make: a model
// library under ../shared/tvm-models (VMJIT_TVM_MODELS), its function and
// its .npy inputs. Shared by the tests of the kernel tier and of warm
// calls' allocations; and unalignedCopy, an input as NumPy may pass it.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_UNITTESTS_JIT_TVMMODELCALLS_H
#define VMJIT_UNITTESTS_JIT_TVMMODELCALLS_H

#include "vmjit/runtime/tensor.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace vmjit::jittest {

struct TvmModelCall {
  const char *Name;    ///< For messages.
  const char *Library; ///< Relative to VMJIT_TVM_MODELS.
  const char *Func;
  std::vector<const char *> Inputs; ///< .npy files, relative to it.
};

/// mlp first (the tests that need one model take it), then the others,
/// TVM's compiled mode last.
inline const std::vector<TvmModelCall> &tvmModelCalls() {
  static const std::vector<TvmModelCall> Calls = {
      {"mlp",
       "mlp/model.so",
       "main",
       {"mlp/in0.npy", "mlp/in1.npy", "mlp/in2.npy", "mlp/in3.npy",
        "mlp/in4.npy"}},
      {"decoder", "decoder/model.so", "main", {"decoder/in0.npy"}},
      {"many_small", "many_small/model.so", "main", {"many_small/in0.npy"}},
      {"dynshape",
       "dynshape/model.so",
       "main",
       {"dynshape/in0.npy", "dynshape/in1.npy", "dynshape/in2.npy"}},
      {"control",
       "control/model.so",
       "main",
       {"control/in0.npy", "control/in1.npy", "control/in2.npy"}},
      {"control_false",
       "control/model.so",
       "main",
       {"control/in0_false.npy", "control/in1_false.npy",
        "control/in2_false.npy"}},
      {"kvcache",
       "kvcache/model.so",
       "run3",
       {"kvcache/in0.npy", "kvcache/in1.npy", "kvcache/in2.npy"}},
      // TVM's compiled mode: the __vmtir__ driver is in the library (and
      // in its bitcode) too.
      {"compiled_mode",
       "compiled_mode/compiled_mode.so",
       "main",
       {"compiled_mode/in0.npy", "compiled_mode/in1.npy",
        "compiled_mode/in2.npy", "compiled_mode/in3.npy",
        "compiled_mode/in4.npy"}},
      {"control_compiled_mode",
       "compiled_mode/control_compiled_mode.so",
       "main",
       {"control/in0.npy", "control/in1.npy", "control/in2.npy"}},
  };
  return Calls;
}

/// A copy of `T` at an address 4 bytes past a 64-byte boundary, as a NumPy
/// array may be (the kernels compiled for this CPU assume 64-byte aligned
/// data: vmjit copies such an argument for them).
inline Tensor unalignedCopy(const Tensor &T) {
  Tensor Block = Tensor::empty({static_cast<int64_t>(T.nbytes()) + 64},
                               DLDataType{kDLUInt, 8, 1});
  char *Data = Block.data<char>() + 4;
  std::memcpy(Data, T.data(), T.nbytes());
  return Tensor::view(Block, Data, T.shape(), T.dtype());
}

} // namespace vmjit::jittest

#endif // VMJIT_UNITTESTS_JIT_TVMMODELCALLS_H
