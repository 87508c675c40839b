//===- llm_generate.h - A language model's generate loop in C++ -*- C++ -*-===//
//
// The loop TVM users (and MLC-LLM) write around a model TVM compiled with
// its paged KV cache, through vmjit's in-process API: the VM functions
// create_tir_paged_kv_cache, embed, prefill and decode of model.so, the
// global functions vm.builtin.kv_state_* for the cache, greedy sampling.
// Header-only: generate.cpp prints a generation with it, and vmjit's tests
// run it in every mode.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_EXAMPLES_LLM_GENERATE_H
#define VMJIT_EXAMPLES_LLM_GENERATE_H

#include "vmjit/builtins/builtins.h"
#include "vmjit/files/npy.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/registry.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"
#include "vmjit/vm/bind_params.h"
#include "vmjit/vm/program.h"
#include "vmjit/vm/virtual_machine.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

namespace llm {

/// A global function by name (vm.builtin.*): vmjit's standard library is
/// registered with the first VM, or by registerVMBuiltins().
inline vmjit::Function globalFunc(const char *Name) {
  vmjit::vm::registerVMBuiltins();
  if (auto F = vmjit::Registry::global().find(Name))
    return *F;
  throw vmjit::Error("LookupError",
                     std::string("no global function named ") + Name);
}

/// One model directory: model.so, param_<i>.npy (passed as one tuple),
/// prompt.npy; tokens.npy and logits_step<k>.npy to check against.
class Generator {
public:
  /// (max batch size, max total sequence length, prefill chunk, page size)
  static constexpr int64_t kCacheConfig[4] = {1, 256, 64, 16};

  /// Loads the model; `Setup` may attach the JIT to the new VM. `Ahead`:
  /// kernel libraries searched before the model's (the JIT's kernel tier,
  /// vmjit/jit/kernel_tier.h). With `BindWeights`, the weights are bound
  /// once (vm/bind_params.h, as MLC-LLM's engine loads them once): embed,
  /// prefill and decode then take no `packed_params`, and their kernel
  /// calls on weights alone that these effects prove foldable (the
  /// transposes of every weight) run once, here.
  template <typename SetupFn>
  Generator(const std::filesystem::path &Dir, SetupFn Setup,
            std::vector<std::shared_ptr<vmjit::KernelLibrary>> Ahead = {},
            const vmjit::vm::KernelEffectsLookup *BindWeights = nullptr)
      : Dir(Dir) {
    vmjit::vm::OpenedProgram P =
        vmjit::vm::openProgram((Dir / "model.so").string());
    vmjit::vm::VMOptions Opts;
    Opts.Libraries = std::move(Ahead);
    Opts.Libraries.insert(Opts.Libraries.end(), P.Libraries.begin(),
                          P.Libraries.end());
    VM = vmjit::vm::VirtualMachine::create(P.Exe, Opts);
    std::vector<vmjit::Any> Params;
    for (int I = 0; std::filesystem::exists(param(I)); ++I)
      Params.emplace_back(vmjit::vm::readNpy(param(I).string()));
    Hidden = Params.at(0).cast<vmjit::Tensor>().shape()[1];
    Weights = vmjit::Array(std::move(Params));
    if (BindWeights)
      bindWeights(*BindWeights, Opts);
    Setup(*VM);
  }

  vmjit::vm::VirtualMachine &vm() { return *VM; }

  /// A new, empty cache (TVM's create_tir_paged_kv_cache).
  vmjit::Any newCache() {
    return VM->call("create_tir_paged_kv_cache", vmjit::Shape{kCacheConfig[0]},
                    vmjit::Shape{kCacheConfig[1]},
                    vmjit::Shape{kCacheConfig[2]},
                    vmjit::Shape{kCacheConfig[3]});
  }

  /// The embedding of `Ids`, shaped (1, n, hidden) as prefill and decode
  /// take it.
  vmjit::Any embed(const std::vector<int32_t> &Ids) {
    const int64_t N = static_cast<int64_t>(Ids.size());
    vmjit::Tensor In = vmjit::Tensor::empty({N}, DLDataType{kDLInt, 32, 1});
    std::copy(Ids.begin(), Ids.end(), In.data<int32_t>());
    vmjit::Any E = Bound ? VM->call("embed", In) : VM->call("embed", In, Weights);
    return Reshape(E, vmjit::Shape{1, N, Hidden});
  }

  /// prefill or decode on embeddings `H`: the logits of the last token
  /// (the cache is updated in place).
  std::vector<float> forward(const char *Func, const vmjit::Any &H,
                             const vmjit::Any &Cache) {
    vmjit::Any Out =
        Bound ? VM->call(Func, H, Cache) : VM->call(Func, H, Cache, Weights);
    auto Logits = Out.cast<vmjit::Array>()[0].cast<vmjit::Tensor>();
    const float *L = Logits.data<float>();
    return std::vector<float>(L, L + Logits.numel());
  }

  /// One forward of `Ids` for sequence `Seq` through prefill or decode,
  /// between kv_state_begin_forward and kv_state_end_forward.
  std::vector<float> step(const vmjit::Any &Cache, int64_t Seq,
                          const std::vector<int32_t> &Ids, const char *Func) {
    vmjit::Any H = embed(Ids);
    BeginForward(Cache, vmjit::Shape{Seq},
                 vmjit::Shape{static_cast<int64_t>(Ids.size())});
    std::vector<float> Logits = forward(Func, H, Cache);
    EndForward(Cache);
    return Logits;
  }

  /// Adds sequence `Seq` and prefills `Prompt`: the first logits.
  std::vector<float> start(const vmjit::Any &Cache, int64_t Seq,
                           const std::vector<int32_t> &Prompt) {
    AddSequence(Cache, Seq);
    return step(Cache, Seq, Prompt, "prefill");
  }

  /// Greedy generation of `Count` tokens (the first from prefill); the
  /// logits of each step go to `Steps` when given.
  std::vector<int32_t>
  generate(const vmjit::Any &Cache, int64_t Seq,
           const std::vector<int32_t> &Prompt, int Count,
           std::vector<std::vector<float>> *Steps = nullptr) {
    std::vector<float> Logits = start(Cache, Seq, Prompt);
    std::vector<int32_t> Tokens;
    while (true) {
      Tokens.push_back(argmax(Logits));
      if (Steps)
        Steps->push_back(Logits);
      if (static_cast<int>(Tokens.size()) == Count)
        return Tokens;
      Logits = step(Cache, Seq, {Tokens.back()}, "decode");
    }
  }

  static int32_t argmax(const std::vector<float> &V) {
    return static_cast<int32_t>(std::max_element(V.begin(), V.end()) -
                                V.begin());
  }

  /// An int32 .npy file of the model directory as a vector.
  std::vector<int32_t> ints(const char *File) const {
    vmjit::Tensor T = vmjit::vm::readNpy((Dir / File).string());
    const int32_t *P = T.data<int32_t>();
    return std::vector<int32_t>(P, P + T.numel());
  }
  /// TVM's logits of step K (logits_step<K>.npy).
  std::vector<float> tvmLogits(int K) const {
    vmjit::Tensor T = vmjit::vm::readNpy(
        (Dir / ("logits_step" + std::to_string(K) + ".npy")).string());
    const float *P = T.data<float>();
    return std::vector<float>(P, P + T.numel());
  }

  vmjit::Function AddSequence = globalFunc("vm.builtin.kv_state_add_sequence");
  vmjit::Function RemoveSequence =
      globalFunc("vm.builtin.kv_state_remove_sequence");
  vmjit::Function ForkSequence =
      globalFunc("vm.builtin.kv_state_fork_sequence");
  vmjit::Function PopN = globalFunc("vm.builtin.kv_state_popn");
  vmjit::Function BeginForward =
      globalFunc("vm.builtin.kv_state_begin_forward");
  vmjit::Function EndForward = globalFunc("vm.builtin.kv_state_end_forward");
  vmjit::Function Reshape = globalFunc("vm.builtin.reshape");
  vmjit::Function TotalLength =
      globalFunc("vm.builtin.attention_kv_cache_get_total_sequence_length");
  /// With BindWeights: the kernel calls that ran once when binding.
  std::vector<vmjit::vm::FoldedCall> Folded;

private:
  std::filesystem::path param(int I) const {
    return Dir / ("param_" + std::to_string(I) + ".npy");
  }

  std::filesystem::path Dir;
  /// Binds the weights of embed, prefill and decode, each on the VM of the
  /// program bound so far; the calls folded go to Folded.
  void bindWeights(const vmjit::vm::KernelEffectsLookup &Effects,
                   const vmjit::vm::VMOptions &Opts) {
    for (const char *Func : {"embed", "prefill", "decode"}) {
      const vmjit::vm::ParamBinding B("packed_params", Weights);
      vmjit::vm::BindResult R = vmjit::vm::bindParams(*VM, Func, {&B, 1}, Effects);
      Folded.insert(Folded.end(), R.Folded.begin(), R.Folded.end());
      VM = vmjit::vm::VirtualMachine::create(R.Exe, Opts);
    }
    Bound = true;
  }

  std::unique_ptr<vmjit::vm::VirtualMachine> VM;
  vmjit::Array Weights;
  /// The weights are bound (BindWeights): the calls pass none.
  bool Bound = false;
  int64_t Hidden = 0;
};

} // namespace llm

#endif // VMJIT_EXAMPLES_LLM_GENERATE_H
