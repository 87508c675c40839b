//===- generate.cpp - Greedy generation with a TVM-compiled LLM -----------===//
//
// A host program running a language model that TVM compiled with its paged
// KV cache (such as the llm that examples/tvm/build_models.py builds with
// TVM), in process, with the JIT:
//
//   generate MODEL_DIR [--mode MODE] [--tokens N] [--loops N] [--check]
//
// prints the prompt and the generated tokens. --loops repeats the whole
// generation on fresh caches (for leak checks); --check compares the
// tokens and every step's logits with TVM's (tokens.npy,
// logits_step<k>.npy: max abs error 1e-5) and sets the exit status.
//
//===----------------------------------------------------------------------===//

#include "llm_generate.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/tier_manager.h"
#endif

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

using namespace vmjit;

namespace {

int usage() {
  std::fprintf(stderr, "usage: generate MODEL_DIR [--mode bytecode|baseline|"
                       "compiled|tiered] [--tokens N] [--loops N] [--check]\n");
  return 2;
}

void print(const char *What, const std::vector<int32_t> &Tokens) {
  std::printf("%s:", What);
  for (int32_t T : Tokens)
    std::printf(" %d", T);
  std::printf("\n");
}

/// The largest |got - TVM's| over the steps; -1 when a step is missing.
double maxLogitError(const llm::Generator &G,
                     const std::vector<std::vector<float>> &Steps) {
  double Max = 0;
  for (size_t K = 0; K < Steps.size(); ++K) {
    std::vector<float> Want = G.tvmLogits(static_cast<int>(K));
    if (Want.size() != Steps[K].size())
      return -1;
    for (size_t I = 0; I < Want.size(); ++I)
      Max = std::max(Max, double(std::fabs(Steps[K][I] - Want[I])));
  }
  return Max;
}

int run(int Argc, char **Argv) {
  if (Argc < 2)
    return usage();
  vm::ExecMode Mode = vm::ExecMode::Tiered;
  int Tokens = 16, Loops = 1;
  bool Check = false;
  for (int I = 2; I < Argc; ++I) {
    if (!std::strcmp(Argv[I], "--check"))
      Check = true;
    else if (!std::strcmp(Argv[I], "--mode") && I + 1 < Argc) {
      auto M = vm::parseExecMode(Argv[++I]);
      if (!M)
        return usage();
      Mode = *M;
    } else if (!std::strcmp(Argv[I], "--tokens") && I + 1 < Argc)
      Tokens = std::atoi(Argv[++I]);
    else if (!std::strcmp(Argv[I], "--loops") && I + 1 < Argc)
      Loops = std::atoi(Argv[++I]);
    else
      return usage();
  }
  if (Tokens < 1 || Loops < 1)
    return usage();
  // What the loop reads: a missing file is one line saying how to get it.
  for (const char *File : {"model.so", "param_0.npy", "prompt.npy"}) {
    std::filesystem::path Path = std::filesystem::path(Argv[1]) / File;
    if (!std::filesystem::exists(Path)) {
      std::fprintf(stderr,
                   "generate: %s is missing: this example runs a language "
                   "model TVM built; with TVM installed, `python3 "
                   "examples/tvm/build_models.py DIR --models llm` writes one "
                   "to DIR/llm\n",
                   Path.string().c_str());
      return 2;
    }
  }

  // Load the model; in a JIT build, attach the JIT in the chosen mode.
  llm::Generator G(Argv[1], [&](vm::VirtualMachine &VM) {
#ifdef VMJIT_HAVE_JIT
    jit::JITOptions JO;
    JO.Mode = Mode;
    jit::enableJIT(VM, JO);
#else
    if (Mode != vm::ExecMode::Bytecode)
      throw Error("ValueError", "this build has no JIT: use --mode bytecode");
    (void)VM;
#endif
  });
  std::vector<int32_t> Prompt = G.ints("prompt.npy");
  std::vector<int32_t> Out;
  std::vector<std::vector<float>> Steps;
  int64_t Cached = 0;
  for (int L = 0; L < Loops; ++L) {
    Steps.clear();
    Any Cache = G.newCache();
    Out = G.generate(Cache, 0, Prompt, Tokens, &Steps);
    Cached = G.TotalLength(Cache).cast<int64_t>();
  }
  print("prompt", Prompt);
  print("generated", Out);
  std::printf("cached tokens: %lld (%d generation%s, %s mode)\n",
              static_cast<long long>(Cached), Loops, Loops == 1 ? "" : "s",
              std::string(vm::execModeName(Mode)).c_str());
  if (!Check)
    return 0;
  std::vector<int32_t> Want = G.ints("tokens.npy");
  Want.resize(std::min(Want.size(), Out.size()));
  double Err = maxLogitError(G, Steps);
  bool Ok = Out == Want && Err >= 0 && Err <= 1e-5;
  std::printf("max |logits - TVM's| over %zu steps: %.2g; tokens %s TVM's\n",
              Steps.size(), Err, Out == Want ? "equal" : "DIFFER FROM");
  return Ok ? 0 : 1;
}

} // namespace

int main(int Argc, char **Argv) {
  try {
    return run(Argc, Argv);
  } catch (const Error &E) {
    std::fprintf(stderr, "generate: %s\n", E.what());
    return 1;
  }
}
