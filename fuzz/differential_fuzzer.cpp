//===- differential_fuzzer.cpp - Entry of vmjit-fuzz-differential ---------===//
//
// The entry point only; the per-input logic is runDifferentialInput in
// differential_target.cpp, shared with the replay test.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  vmjit::fuzz::runFuzzerInput(vmjit::fuzz::runDifferentialInput, Data, Size);
  return 0;
}
