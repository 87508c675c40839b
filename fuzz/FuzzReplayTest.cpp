//===- FuzzReplayTest.cpp - Replays the fuzz corpora and regressions ------===//
//
// Feeds every file of fuzz/corpus/<target>/ and fuzz/regressions/<target>/
// through the fuzz targets' per-input functions, in ordinary (GCC, no
// libFuzzer) builds too: a bug a fuzzer once found stays fixed. Seed files
// must also get past the first step (load, assemble, verify), so that the
// corpora keep exercising the deep checks.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

#ifdef VMJIT_FUZZ_DIFFERENTIAL
#include "program_generator.h"
#include <fuzzer/FuzzedDataProvider.h>
#endif

#include "vmjit/runtime/error.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <iterator>
#include <random>
#include <sstream>
#include <vector>

using namespace vmjit;
using namespace vmjit::fuzz;
namespace fs = std::filesystem;

namespace {

using TargetFn = Outcome (*)(std::span<const uint8_t>);

std::vector<fs::path> filesIn(const fs::path &Dir) {
  std::vector<fs::path> Files;
  if (fs::is_directory(Dir))
    for (const auto &E : fs::directory_iterator(Dir))
      if (E.is_regular_file() && E.path().filename().string()[0] != '.')
        Files.push_back(E.path());
  std::sort(Files.begin(), Files.end());
  return Files;
}

std::vector<uint8_t> readBytes(const fs::path &P) {
  std::ifstream In(P, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(In), {});
}

/// Runs every file of `Dir` through `Fn`; with `MustAccept`, each must get
/// past the target's first step. Returns the number of files.
size_t replay(const std::string &Dir, TargetFn Fn, bool MustAccept) {
  std::vector<fs::path> Files = filesIn(fs::path(VMJIT_FUZZ_DIR) / Dir);
  for (const fs::path &F : Files) {
    SCOPED_TRACE(F.string());
    std::vector<uint8_t> Bytes = readBytes(F);
    try {
      Outcome O = Fn(Bytes);
      if (MustAccept) {
        EXPECT_EQ(O, Outcome::Accepted) << "seed rejected: " << F;
      }
    } catch (const FuzzFailure &E) {
      ADD_FAILURE() << F << ": " << E.what();
    } catch (const Error &E) {
      ADD_FAILURE() << F << ": vmjit::Error escaped: " << E.format();
    } catch (const std::exception &E) {
      ADD_FAILURE() << F << ": exception: " << E.what();
    }
  }
  return Files.size();
}

} // namespace

TEST(FuzzReplay, LoaderCorpus) {
  EXPECT_GE(replay("corpus/loader", runLoaderInput, true), 3u);
}
TEST(FuzzReplay, LoaderRegressions) {
  replay("regressions/loader", runLoaderInput, false);
}
TEST(FuzzReplay, AssemblerCorpus) {
  EXPECT_GE(replay("corpus/assembler", runAssemblerInput, true), 3u);
}
TEST(FuzzReplay, AssemblerRegressions) {
  replay("regressions/assembler", runAssemblerInput, false);
}

// The loader refuses the tensor constant of shape [2^58, 0] (no elements,
// but nonzero dimensions whose product does not fit) as the assembler
// does: by tensorElementCount, the one rule for shapes. (Before, it loaded,
// and its disassembly did not reassemble.)
TEST(FuzzReplay, TheLoaderRefusesAShapeWhoseNonzeroDimensionsOverflow) {
  EXPECT_EQ(runLoaderInput(readBytes(fs::path(VMJIT_FUZZ_DIR) /
                                     "regressions/loader/"
                                     "loader-zero-size-huge-shape.bin")),
            Outcome::Rejected);
}

// The targets must reject garbage with an Error, not a failure.
TEST(FuzzReplay, TargetsRejectGarbage) {
  std::vector<uint8_t> Garbage = {'V', 'M', 'J', 'I', 'T', 'E', 'X', 'E', 1, 0};
  EXPECT_EQ(runLoaderInput(Garbage), Outcome::Rejected);
  std::string Text = ".func main(\n";
  EXPECT_EQ(runAssemblerInput(std::span(
                reinterpret_cast<const uint8_t *>(Text.data()), Text.size())),
            Outcome::Rejected);
}

#ifdef VMJIT_FUZZ_DIFFERENTIAL
TEST(FuzzReplay, DifferentialCorpus) {
  EXPECT_GE(replay("corpus/differential", runDifferentialInput, true), 3u);
}
TEST(FuzzReplay, DifferentialRegressions) {
  replay("regressions/differential", runDifferentialInput, false);
}

// Most random inputs must give a program the verifier accepts: otherwise
// the differential target spends its time on nothing.
TEST(FuzzReplay, GeneratedProgramsMostlyVerify) {
  std::mt19937_64 Rng(42);
  int Verified = 0, Total = 500;
  for (int I = 0; I < Total; ++I) {
    std::vector<uint8_t> Bytes(16 + Rng() % 1024);
    for (uint8_t &B : Bytes)
      B = static_cast<uint8_t>(Rng());
    FuzzedDataProvider P(Bytes.data(), Bytes.size());
    try {
      generateProgram(P);
      ++Verified;
    } catch (const Error &E) {
      EXPECT_EQ(E.kind(), "VerifyError") << E.format();
    }
  }
  EXPECT_GE(Verified, Total * 9 / 10);
}
#endif
