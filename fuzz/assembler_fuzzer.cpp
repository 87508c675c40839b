//===- assembler_fuzzer.cpp - libFuzzer entry of vmjit-fuzz-assembler -----===//
//
// The entry point only; the per-input logic is runAssemblerInput in
// assembler_target.cpp, shared with the replay test.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  vmjit::fuzz::runFuzzerInput(vmjit::fuzz::runAssemblerInput, Data, Size);
  return 0;
}
