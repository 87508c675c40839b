// Uses the installed JIT tier (vmjit::jit): assembles a program with a loop
// and a call of another bytecode function, runs it in every execution mode
// with the JIT enabled (tiered with threshold 1), and checks the answers,
// that the JIT modes really run the functions as native code, and that an
// error raised in native code reaches the caller as in the interpreter.
#include "vmjit/jit/tier_manager.h"
#include "vmjit/runtime/error.h"
#include "vmjit/text/assembler.h"
#include "vmjit/vm/virtual_machine.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

using namespace vmjit;

namespace {

// main(n) = 0*0 + 1*1 + ... + (n-1)*(n-1), calling sq from a loop.
constexpr const char *Program = R"(
.func sq(x)
  %y = call scalar.mul(%x, %x)
  ret %y
.end

.func main(n)
  %s = call vm.builtin.copy(0)
  %i = call vm.builtin.copy(0)
  %c = call scalar.lt(%i, %n)
  if %c else done
loop:
  %q = call sq(%i)
  %s = call scalar.add(%s, %q)
  %i = call scalar.add(%i, 1)
  %c = call scalar.ge(%i, %n)
  if %c else loop
done:
  ret %s
.end
)";

int64_t expected(int64_t N) { return (N - 1) * N * (2 * N - 1) / 6; }

int Failures = 0;

void check(bool Ok, std::string_view Mode, const std::string &What) {
  if (!Ok) {
    std::printf("FAIL [%.*s] %s\n", static_cast<int>(Mode.size()),
                Mode.data(), What.c_str());
    ++Failures;
  }
}

void checkCall(vm::VirtualMachine &VM, std::string_view Mode, int64_t N) {
  int64_t Got = VM.call("main", N).cast<int64_t>();
  check(Got == expected(N), Mode,
        "main(" + std::to_string(N) + ") = " + std::to_string(Got) +
            ", expected " + std::to_string(expected(N)));
}

/// The formatted error of main("x") (scalar.lt of an int and a string).
std::string errorOfBadCall(vm::VirtualMachine &VM) {
  try {
    VM.call("main", std::string("x"));
  } catch (const Error &E) {
    return E.format();
  }
  return "no error";
}

} // namespace

int main() {
  try {
    std::shared_ptr<vm::Executable> Exe =
        vm::assemble(Program, "consumer_jit.vmasm");
    std::string Modes, BytecodeError;
    // By name, so that this builds against any set of modes; the three
    // below must exist, any other (baseline) is run too.
    for (std::string_view Name : {"bytecode", "baseline", "compiled", "tiered"}) {
      std::optional<vm::ExecMode> Mode = vm::parseExecMode(Name);
      if (!Mode) {
        check(Name == "baseline", Name, "vm::parseExecMode does not know it");
        continue;
      }
      auto VM = vm::VirtualMachine::create(Exe);
      jit::JITOptions Opts;
      Opts.Mode = *Mode;
      Opts.Threshold = 1;
      jit::enableJIT(*VM, Opts);
      jit::TierManager *TM = jit::tierManagerOf(*VM);
      bool Jit = *Mode != vm::ExecMode::Bytecode;
      check((TM != nullptr) == Jit, Name,
            Jit ? "no tier manager attached" : "a tier manager attached");

      checkCall(*VM, Name, 1000);
      if (TM)
        TM->drain(); // tiered: let the background compiles finish
      for (int64_t N : {0, 1, 10, 1000})
        checkCall(*VM, Name, N);

      for (std::string_view F : {"sq", "main"}) {
        int64_t K = VM->functionIndex(F);
        bool Native = VM->isNative(K) || VM->osrCount(K) > 0;
        check(Native == Jit, Name,
              std::string(F) + (Native ? " runs as native code"
                                       : " does not run as native code"));
        if (*Mode == vm::ExecMode::Compiled || *Mode == vm::ExecMode::Tiered)
          check(TM && TM->stats(K).Compiled, Name,
                std::string(F) + " was not compiled by LLVM");
      }

      std::string Err = errorOfBadCall(*VM);
      if (!Jit)
        BytecodeError = Err;
      check(Err.rfind("TypeError", 0) == 0, Name,
            "main(\"x\") raised: " + Err);
      check(Err == BytecodeError, Name,
            "main(\"x\") raised\n" + Err + "\nnot, as the interpreter,\n" +
                BytecodeError);
      checkCall(*VM, Name, 1000); // still usable after the error
      Modes += " " + std::string(Name);
    }
    if (Failures)
      return 1;
    std::printf("consumer jit ok:%s\n", Modes.c_str());
    return 0;
  } catch (const Error &E) {
    std::printf("FAIL: %s\n", E.format().c_str());
    return 1;
  }
}
