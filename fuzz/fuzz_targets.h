//===- fuzz_targets.h - Per-input logic of the fuzz targets -----*- C++ -*-===//
//
// One function per fuzz target, run on one input. Each returns normally
// when vmjit handled the input correctly, which includes rejecting it with
// a vmjit::Error; it throws FuzzFailure when a property it checks does not
// hold (a round trip that changes the program, two tiers that disagree).
// Any other exception, a crash, a sanitizer report or a hang is a bug too.
// The libFuzzer entry points (*_fuzzer.cpp) and the replay test
// (FuzzReplayTest.cpp) both call these functions.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_FUZZ_FUZZ_TARGETS_H
#define VMJIT_FUZZ_FUZZ_TARGETS_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>

namespace vmjit::fuzz {

/// A property a fuzz target checks does not hold: a bug in vmjit.
class FuzzFailure : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Throws FuzzFailure with `What`.
[[noreturn]] void fail(const std::string &What);

/// How far an input got: rejected with a vmjit::Error at the first step,
/// or accepted (and every check after that was run).
enum class Outcome { Rejected, Accepted };

/// Binary formats: loadExecutableFromBytes on the bytes as they are (vmjit's
/// format or TVM's, by magic) and, for inputs with vmjit's magic, again with
/// the file size and every checksum recomputed (so that mutations reach the
/// section parsers and the verifier). A loaded executable must serialize in
/// both formats to images that load back equal and serialize to the same
/// bytes (TVM's writer may refuse only constants TVM cannot hold), and
/// disassemble with every name written so that it reads back. Inputs
/// starting with the .npy magic go through parseNpy and serializeNpy.
Outcome runLoaderInput(std::span<const uint8_t> Data);

/// vmasm text: assemble; an accepted program must verify, serialize and
/// load back equal, and disassemble to text that assembles to an equal
/// executable and disassembles to the same text. Inputs that mention `npy`
/// are skipped (they would read files named by the input).
Outcome runAssemblerInput(std::span<const uint8_t> Data);

#ifdef VMJIT_FUZZ_DIFFERENTIAL
/// A structured program generated from the bytes (program_generator.h),
/// run in bytecode mode and in compiled mode (the JIT) with a step budget:
/// both must give the same value, or the same error (kind, message and
/// frames). Rejected: the generated program did not verify.
Outcome runDifferentialInput(std::span<const uint8_t> Data);
#endif

/// The body of LLVMFuzzerTestOneInput: runs `Target` on the input and
/// turns a FuzzFailure or any escaping exception into a message on stderr
/// and abort(), which libFuzzer records as a crash.
void runFuzzerInput(Outcome (*Target)(std::span<const uint8_t>),
                    const uint8_t *Data, size_t Size);

/// Largest inputs the targets are meant for (scripts/fuzz.sh's -max_len).
inline constexpr size_t kMaxLoaderInput = 16384;
inline constexpr size_t kMaxAssemblerInput = 8192;
inline constexpr size_t kMaxDifferentialInput = 2048;

} // namespace vmjit::fuzz

#endif // VMJIT_FUZZ_FUZZ_TARGETS_H
