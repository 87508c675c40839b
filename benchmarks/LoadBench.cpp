//===- LoadBench.cpp - Loading a binary executable with large weights -----===//
//
// load/{verify,noverify}/SIZE: the cost of loadExecutable() on a file whose
// tensor constants total SIZE bytes (1 MiB .. 1 GiB of float32 weights in
// 16 MiB tensors) behind a small `main`, and of destroying the result (so
// the munmap is counted).
//
//   verify    LoadOptions::VerifyTensorData = true (the default): the DATA
//             section's XXH3 checksum is computed, which faults in and
//             reads every page of the weights;
//   noverify  only the metadata sections are checked; the weights are
//             mapped but never touched, so the time is independent of SIZE
//             (the bytes/s figure is then only nominal).
//   tvm       the same program in Apache TVM's VMExecutable format, which
//             has no alignment and no checksum: every tensor constant is
//             copied into 64-byte aligned memory as it loads.
//
// Each file is built and saved once per size (not timed), fsync'ed, and
// deleted when the harness exits. The file stays in the page cache: this
// measures the realistic "model already on local disk and cached" case
// (a cold load also pays the disk read, which depends on the device and
// cannot be reproduced without root). An untimed load before each run makes
// sure every page is resident.
//
//===----------------------------------------------------------------------===//

#include "vmjit/bytecode/builder.h"
#include "vmjit/formats/serialize.h"
#include "vmjit/formats/tvm_format.h"
#include "vmjit/runtime/tensor.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unistd.h>
#include <vector>

using namespace vmjit;
using namespace vmjit::vm;

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int64_t kTensorBytes = 16 * kMiB;

/// The saved files, by tensor-data size and format; deleted at exit.
class ModelFiles {
public:
  ~ModelFiles() {
    for (auto &[Key, Path] : Paths)
      ::unlink(Path.c_str());
  }
  const std::string &get(int64_t DataBytes, bool Tvm) {
    auto It = Paths.find({DataBytes, Tvm});
    if (It == Paths.end())
      It = Paths.emplace(std::pair{DataBytes, Tvm}, create(DataBytes, Tvm))
               .first;
    return It->second;
  }

private:
  static std::string create(int64_t DataBytes, bool Tvm);
  std::map<std::pair<int64_t, bool>, std::string> Paths;
};

ModelFiles &modelFiles() {
  static ModelFiles Files;
  return Files;
}

/// `main(x)` passes `x` and every weight to one packed call, like a model
/// driver's forward step.
std::string ModelFiles::create(int64_t DataBytes, bool Tvm) {
  char Template[] = "/tmp/vmjit-loadbench-XXXXXX";
  int Fd = ::mkstemp(Template);
  if (Fd < 0) {
    std::perror("LoadBench: mkstemp");
    std::abort();
  }
  std::string Path = Template;
  {
    ExecutableBuilder B;
    int64_t Forward = B.declarePacked("model.forward");
    std::vector<Arg> Args{Arg::reg(0)};
    int64_t Chunk = std::min(DataBytes, kTensorBytes);
    for (int64_t T = 0; T < DataBytes / Chunk; ++T) {
      int64_t Elems = Chunk / 4;
      Tensor W = Tensor::empty({Elems / 1024, 1024}, dtype::Float32);
      float *P = W.data<float>();
      for (int64_t I = 0; I < Elems; ++I)
        P[I] = static_cast<float>((I * 7 + T * 131) % 1000) * 0.001f;
      Args.push_back(Arg::constant(B.addConstant(Any(W))));
    }
    FunctionBuilder &F = B.beginFunction("main", {"x"});
    F.emitCall(1, Forward, Args);
    F.emitRet(1);
    B.endFunction();
    if (Tvm)
      saveTvmExecutable(*B.finish(), Path);
    else
      saveExecutable(*B.finish(), Path);
  }
  // Written back now, so that no writeback runs during the timed loads.
  ::fsync(Fd);
  ::close(Fd);
  return Path;
}

void loadBench(benchmark::State &State, int64_t DataBytes, bool Verify,
               bool Tvm) {
  const std::string &Path = modelFiles().get(DataBytes, Tvm);
  LoadOptions Opts;
  Opts.VerifyTensorData = Verify;
  {
    // Untimed: every page of the file in the page cache.
    LoadOptions Warm;
    benchmark::DoNotOptimize(loadExecutable(Path, Warm).get());
  }
  for (auto _ : State) {
    std::shared_ptr<Executable> Exe = loadExecutable(Path, Opts);
    benchmark::DoNotOptimize(Exe.get());
    Exe.reset(); // unmaps the file
  }
  State.SetBytesProcessed(State.iterations() * DataBytes);
}

bool registerLoadBenchmarks() {
  struct SizeCase {
    const char *Name;
    int64_t Bytes;
  };
  for (SizeCase S :
       {SizeCase{"1MiB", kMiB}, SizeCase{"16MiB", 16 * kMiB},
        SizeCase{"256MiB", 256 * kMiB}, SizeCase{"1GiB", 1024 * kMiB}}) {
    for (const char *Kind : {"verify", "noverify", "tvm"}) {
      bool Tvm = std::string_view(Kind) == "tvm";
      bool Verify = std::string_view(Kind) == "verify";
      std::string Name = std::string("load/") + Kind + "/" + S.Name;
      benchmark::internal::Benchmark *B = benchmark::RegisterBenchmark(
          Name.c_str(), [Bytes = S.Bytes, Verify, Tvm](benchmark::State &State) {
            loadBench(State, Bytes, Verify, Tvm);
          });
      // No MinTime()/Iterations(): Google Benchmark 1.7 would append them
      // to the name. With the default --benchmark_min_time (0.5 s) a
      // verified 1 GiB load (~130 ms) runs about 6 iterations a repetition.
      B->UseRealTime()->Unit(benchmark::kMillisecond);
    }
  }
  return true;
}

[[maybe_unused]] const bool Registered = registerLoadBenchmarks();

} // namespace
