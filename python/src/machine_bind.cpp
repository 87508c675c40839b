//===- machine_bind.cpp - VirtualMachine.bind_params ------------*- C++ -*-===//
//
// Machine.bind_params(func, {name or index: value}): the function's
// parameters bound (vm/bind_params.h), the machine's VM replaced by one of
// the bound executable made as the first was (libraries, limits, tier),
// and the folded calls returned.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/report/stats_json.h"
#include "vmjit/runtime/array.h"
#include "vmjit/vm/bind_params.h"

#ifdef VMJIT_HAVE_JIT
#include "vmjit/jit/kernel_tier.h"
#endif

#include <nlohmann/json.hpp>

namespace vmjit::python {

namespace {

/// A bound value: arrays copied (the caller may change theirs later),
/// tuples and lists element by element.
Any boundValue(const py::handle &Value) {
  if (py::isinstance<py::tuple>(Value) || py::isinstance<py::list>(Value)) {
    std::vector<Any> Elems;
    for (const py::handle &E : Value)
      Elems.push_back(boundValue(E));
    return Array(std::move(Elems));
  }
  if (std::optional<Tensor> T =
          arrayToTensor(Value.ptr(), 0, CopyPolicy::Always))
    return *T;
  return toAny(Value.ptr(), 0);
}

std::vector<vm::ParamBinding> bindingsOf(const py::dict &Params) {
  std::vector<vm::ParamBinding> Out;
  for (const auto &[Key, Value] : Params) {
    Any V = boundValue(Value);
    if (py::isinstance<py::str>(Key))
      Out.emplace_back(Key.cast<std::string>(), std::move(V));
    else if (py::isinstance<py::int_>(Key) && !py::isinstance<py::bool_>(Key))
      Out.emplace_back(Key.cast<int64_t>(), std::move(V));
    else
      throw py::type_error(
          "bind_params: a parameter is named by a str or an int index, not " +
          py::str(py::type::of(Key)).cast<std::string>());
  }
  return Out;
}

/// The kernels' effects binding folds calls by: the kernel tier's, proven
/// from model.bc, or those a `vmjit compile --kernels` library recorded;
/// none (nothing folded) without either.
vm::KernelEffectsLookup effectsOf(const Machine &M) {
#ifdef VMJIT_HAVE_JIT
  if (M.Kernels)
    return vm::effectsIn(M.Kernels->effects());
#endif
  if (M.Aot && !M.Aot->kernelEffects().empty())
    return vm::effectsIn(M.Aot->kernelEffects());
  return {};
}

py::list bindParams(Machine &Self, const std::string &Func,
                    const py::dict &Params) {
  if (Self.Instrument && !Self.Instrument.is_none())
    throw py::value_error("bind_params: remove the instrument first "
                          "(set_instrument(None)); set it again after");
  std::vector<vm::ParamBinding> P = bindingsOf(Params);
  vm::BindResult B;
  const bool Ok = runUnlocked(Self, [&] {
    B = vm::bindParams(*Self.VM, Func, P, effectsOf(Self));
    vm::VMOptions O = Self.Options;
    O.Limits = Self.VM->callLimits();
    auto VM = vm::VirtualMachine::create(B.Exe, std::move(O));
    Self.Replaced.push_back(std::move(Self.VM));
    Self.VM = std::move(VM);
    Self.AttachTier(Self);
    Self.BindStats = report::bindStatsJson(Func, P, B).dump();
  });
  if (!Ok)
    throw py::error_already_set();
  py::list Folded;
  for (const vm::FoldedCall &F : B.Folded) {
    py::dict D;
    D["function"] = F.Function;
    D["callee"] = F.Callee;
    D["instruction"] = F.Instr;
    Folded.append(D);
  }
  return Folded;
}

} // namespace

void registerMachineBind(py::class_<Machine, std::shared_ptr<Machine>> &Cls) {
  Cls.def("bind_params", &bindParams);
}

} // namespace vmjit::python
