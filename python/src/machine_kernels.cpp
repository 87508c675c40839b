//===- machine_kernels.cpp - A VirtualMachine's kernel tier ---------------===//
//
// VirtualMachine(kernels=...): TVM's kernels compiled for this CPU from the
// bitcode beside the model (model.bc) or the one named, as `vmjit run` does
// it (jit/kernel_tier.h): the tier's library ahead of the model library,
// its failure one RuntimeWarning, its status in vm.stats() as the
// command's "kernel_tier" object. Without the JIT in the build, nothing.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/vm/program.h"
#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/jit_environment.h"
#include "vmjit/jit/kernel_tier.h"
#include "vmjit/jit/tier_manager.h"
#endif

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace vmjit::python {

#ifdef VMJIT_HAVE_JIT

namespace {

/// The bitcode `C` asks for: the one named, else the STEM.bc beside the
/// program file (when the program brought kernels to replace); "" none.
std::string bitcodeOf(const KernelChoice &C, bool HaveLibrary) {
  if (!C.Bitcode.empty())
    return C.Bitcode;
  if (!C.FindBeside || !HaveLibrary || C.Program.empty() ||
      vm::isStreamPath(C.Program))
    return "";
  return jit::kernelBitcodeBeside(C.Program);
}

/// The object cache directory of the kernels: cache_dir, else
/// VMJIT_CACHE_DIR, else the command's default (the user's cache: a
/// kernel compile takes seconds, the llm's half a minute); none with
/// no_cache.
std::string cacheDirOf(const KernelChoice &C) {
  return C.NoCache ? "" : jit::cacheDirFor(C.CacheDir);
}

} // namespace

std::string startKernelTier(Machine &M, const KernelChoice &C,
                            std::vector<std::shared_ptr<KernelLibrary>> &Libs) {
  const std::string Bitcode = bitcodeOf(C, !Libs.empty());
  if (Bitcode.empty())
    return "";
  if (Libs.empty())
    return fmt::format("kernels {}: no kernel library to check it against "
                       "(pass the model's with libs=); not used",
                       Bitcode);
  jit::KernelTierOptions KO;
  KO.CacheDir = cacheDirOf(C);
  KO.FastMath = C.FastMath;
  KO.Background = !C.Wait;
  M.Kernels = jit::KernelTier::start(Bitcode, Libs.front(), KO);
  Libs.insert(Libs.begin(), M.Kernels->library());
  return "";
}

void warnIfKernelsFailed(Machine &M) {
  if (!M.Kernels || M.KernelsWarned)
    return;
  const jit::KernelTierStatus St = M.Kernels->status();
  if (St.State != jit::KernelTierState::Failed)
    return;
  M.KernelsWarned = true;
  if (PyErr_WarnEx(PyExc_RuntimeWarning, St.Warning.c_str(), 1) < 0)
    throw py::error_already_set();
}

void waitForKernels(Machine &M) {
  if (M.Kernels)
    M.Kernels->wait();
}

void addKernelTierStats(Machine &M, nlohmann::ordered_json &Stats,
                        std::string &Table) {
  if (!M.Kernels)
    return;
  const jit::KernelTierStatus St = M.Kernels->status();
  Stats["kernel_tier"] = nlohmann::ordered_json::parse(St.json());
  Table = St.note() + "\n" + Table;
}

py::object kernelTierHandle(Machine &M) {
  if (!M.Kernels)
    return py::none();
  return py::capsule(
      new std::shared_ptr<jit::KernelTier>(M.Kernels), "vmjit.KernelTier",
      +[](PyObject *Capsule) {
        delete static_cast<std::shared_ptr<jit::KernelTier> *>(
            PyCapsule_GetPointer(Capsule, "vmjit.KernelTier"));
      });
}

#else

std::string startKernelTier(Machine &, const KernelChoice &,
                            std::vector<std::shared_ptr<KernelLibrary>> &) {
  return "";
}
void warnIfKernelsFailed(Machine &) {}
void waitForKernels(Machine &) {}
void addKernelTierStats(Machine &, nlohmann::ordered_json &, std::string &) {}
py::object kernelTierHandle(Machine &) { return py::none(); }

#endif

} // namespace vmjit::python
