//===- loader_fuzzer.cpp - libFuzzer entry of vmjit-fuzz-loader -----------===//
//
// The entry point only; the per-input logic is runLoaderInput in
// loader_target.cpp, shared with the replay test.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  vmjit::fuzz::runFuzzerInput(vmjit::fuzz::runLoaderInput, Data, Size);
  return 0;
}
