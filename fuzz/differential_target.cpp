//===- differential_target.cpp - Interpreter versus JIT fuzz target -------===//
//
// runDifferentialInput: a generated program (program_generator.h) runs on
// fresh VMs in bytecode mode, compiled mode (every function through the
// JIT before the first call), tiered mode (threshold 1, and threshold 3 so
// that tier 2 speculates on what the interpreter saw; compiles on the
// calling thread, so tier-up and on-stack replacement happen
// deterministically mid-run) and compiled mode under deopt stress (tier 2
// speculating wrongly on purpose). main is called five times on each VM:
// with its int argument twice, then with a value of another kind (a float,
// a bool, None or another int), the int, and that value again, so the
// kinds tier 2 speculated on change between calls and its guards
// deoptimize. Every mode must give the same values or the same errors:
// kind, message and frames.
//
// Values compare structurally: ints, bools, floats by their bits (all
// NaNs alike: the kernels do not specify NaN payloads), tuples element by
// element, strings by content, other objects by type name. Every call
// runs under a step budget and a small call-depth limit, so endless loops
// and deep recursion end in the same StepLimitError or RecursionError in
// every tier. With VMJIT_FUZZ_VERBOSE set, each input's program and
// interpreter results are printed.
//
//===----------------------------------------------------------------------===//

#include "fuzz_targets.h"
#include "program_generator.h"

#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/array.h"
#include "vmjit/runtime/error.h"
#include "vmjit/runtime/string.h"
#include "vmjit/text/disassembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <fuzzer/FuzzedDataProvider.h>
#include <string>
#include <vector>

namespace vmjit::fuzz {
namespace {

using vm::ExecMode;

/// Step budget of one call of main, and the call-depth limit (above the
/// generator's deepest reenter, 150 nested runs of the VM, so that calls
/// under them run too; a recursion in them reaches the limit).
constexpr uint64_t kMaxSteps = 2000;
constexpr int64_t kMaxCallDepth = 160;
/// Longest value description compared (tuples may share elements, so a
/// full walk could be exponential).
constexpr size_t kMaxDescription = 1 << 16;

void describe(const Any &V, std::string &Out) {
  if (Out.size() > kMaxDescription)
    return;
  const VMJITAny &R = V.raw();
  switch (V.typeIndex()) {
  case kVMJITNone:
    Out += "None";
    return;
  case kVMJITInt:
    Out += fmt::format("int {}", R.v_int64);
    return;
  case kVMJITBool:
    Out += R.v_int64 != 0 ? "bool true" : "bool false";
    return;
  case kVMJITFloat:
    if (std::isnan(R.v_float64))
      Out += "float nan";
    else
      Out += fmt::format("float {:#x}", std::bit_cast<uint64_t>(R.v_float64));
    return;
  case kVMJITArray: {
    Out += "(";
    Array Elems = *V.as<Array>();
    for (const Any &E : Elems) {
      describe(E, Out);
      Out += ", ";
      if (Out.size() > kMaxDescription)
        break;
    }
    Out += ")";
    return;
  }
  default:
    if (auto S = V.as<std::string>())
      Out += fmt::format("str {:?}", *S);
    else
      Out += fmt::format("<{}>", V.typeName());
    return;
  }
}

struct ModeSpec {
  ExecMode Mode;
  int OptLevel;
  int64_t Threshold = 1;
  bool DeoptStress = false;
};

/// The results of the calls of main (with `Args`, in order) on a fresh VM
/// in `M`.
std::string runIn(const GeneratedProgram &G, const ModeSpec &M,
                  const std::vector<Any> &Args) {
  vm::VMOptions Opts;
  Opts.MaxCallDepth = kMaxCallDepth;
  Opts.Limits.MaxSteps = kMaxSteps;
  auto VM = vm::VirtualMachine::create(G.Exe, Opts);
  if (M.Mode != ExecMode::Bytecode) {
    jit::JITOptions J;
    J.Mode = M.Mode;
    J.OptLevel = M.OptLevel;
    J.Threshold = M.Threshold;
    J.Background = false;
    J.DeoptStress = M.DeoptStress;
    jit::enableJIT(*VM, J);
    if (M.Mode == ExecMode::Compiled || M.Mode == ExecMode::Baseline)
      for (int64_t F = 0; F < int64_t(G.Exe->functions().size()); ++F)
        if (G.Exe->function(F).Kind == vm::FunctionKind::Bytecode &&
            !VM->isNative(F))
          fail(fmt::format("{} mode (O{}) left function '{}' on the "
                           "interpreter (the JIT failed to compile a verified "
                           "program)",
                           execModeName(M.Mode), M.OptLevel,
                           G.Exe->function(F).Name));
  }
  std::string Out;
  for (const Any &Arg : Args) {
    try {
      Any R = VM->call("main", Arg);
      Out += "value ";
      describe(R, Out);
    } catch (const Error &E) {
      Out += "error " + E.format();
    }
    Out += "\n";
  }
  return Out;
}

std::string describeArg(const Any &V) {
  std::string Out;
  describe(V, Out);
  return Out;
}

} // namespace

Outcome runDifferentialInput(std::span<const uint8_t> Data) {
  FuzzedDataProvider P(Data.data(), Data.size());
  GeneratedProgram G;
  try {
    G = generateProgram(P);
  } catch (const Error &E) {
    if (E.kind() != "VerifyError")
      fail("the program generator threw " + E.format());
    return Outcome::Rejected;
  }
  // The optimization level of the compiled mode: mostly 0 (fast compiles),
  // sometimes the tier-up level.
  int OptLevel = P.ConsumeIntegralInRange(0, 3) == 3 ? jit::kDefaultOptLevel : 0;
  // The argument of another kind.
  Any Other;
  switch (P.ConsumeIntegralInRange(0, 3)) {
  case 0:
    Other = Any(static_cast<double>(G.Arg) + 0.5);
    break;
  case 1:
    Other = Any(G.Arg % 2 == 0);
    break;
  case 2:
    break; // None
  default:
    Other = Any(G.Arg + 1);
    break;
  }
  const std::vector<Any> Args = {Any(G.Arg), Any(G.Arg), Other, Any(G.Arg),
                                 Other};
  const ModeSpec Reference = {ExecMode::Bytecode, 0};
  std::string Expected = runIn(G, Reference, Args);
  if (std::getenv("VMJIT_FUZZ_VERBOSE"))
    std::fprintf(stderr, "--- program (main(%lld)):\n%s--- bytecode:\n%s",
                 static_cast<long long>(G.Arg),
                 vm::disassemble(*G.Exe).c_str(), Expected.c_str());
  for (const ModeSpec &M :
       {ModeSpec{ExecMode::Baseline, 0}, ModeSpec{ExecMode::Compiled, OptLevel},
        ModeSpec{ExecMode::Tiered, 0}, ModeSpec{ExecMode::Tiered, 0, 3},
        ModeSpec{ExecMode::Compiled, 0, 1, true}}) {
    // Deoptimization goes to tier 1.
    if ((M.Mode == ExecMode::Baseline || M.DeoptStress) &&
        !jit::baselineAvailable())
      continue;
    std::string Got = runIn(G, M, Args);
    const std::string Name = fmt::format(
        "{} mode (O{}, threshold {}{})", execModeName(M.Mode), M.OptLevel,
        M.Threshold, M.DeoptStress ? ", deopt stress" : "");
    if (Got != Expected)
      fail(fmt::format("{} disagrees with the interpreter on main({}), "
                       "main({}), main({}), main({}), main({})"
                       "\n--- bytecode:\n{}--- {}:\n{}--- program:\n{}",
                       Name, G.Arg, G.Arg, describeArg(Other), G.Arg,
                       describeArg(Other), Expected, Name, Got,
                       vm::disassemble(*G.Exe)));
  }
  return Outcome::Accepted;
}

} // namespace vmjit::fuzz
