//===- vmjit/runtime/registry.h - The global function registry --*- C++ -*-===//
//
// Packed functions by name ("vm.builtin.copy", "tensor.add", ...). A VM
// resolves its packed functions here and in loaded kernel libraries when it
// is created. Thread-safe: lookups take a shared lock, changes an exclusive
// one.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_REGISTRY_H
#define VMJIT_RUNTIME_REGISTRY_H

#include "vmjit/runtime/function.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace vmjit {

class Registry {
public:
  Registry();
  ~Registry();
  Registry(const Registry &) = delete;
  Registry &operator=(const Registry &) = delete;

  /// The process-wide registry.
  VMJIT_DLL static Registry &global();

  /// Registers `F` under `Name`. Throws ValueError if the name is taken
  /// and `AllowOverride` is false.
  VMJIT_DLL void add(std::string Name, Function F, bool AllowOverride = false);
  /// Shorthand for add(Name, Function::fromTyped(Name, Fn)).
  template <typename F>
  void addTyped(std::string Name, F Fn, bool AllowOverride = false) {
    add(Name, Function::fromTyped(Name, std::move(Fn)), AllowOverride);
  }
  /// Shorthand for add(Name, Function::fromPacked(Name, Fn)): `Fn` is
  /// `void(PackedArgs, Any*)` and checks its own arguments (variadic
  /// functions, or ones whose parameters depend on the argument count).
  template <typename F>
  void addPacked(std::string Name, F Fn, bool AllowOverride = false) {
    add(Name, Function::fromPacked(Name, std::move(Fn)), AllowOverride);
  }
  /// Registers every function of `From` whose name is not taken here (a
  /// function registered earlier under the same name stays).
  VMJIT_DLL void addDefaults(const Registry &From);
  /// The function registered under `Name`, if any.
  VMJIT_DLL std::optional<Function> find(std::string_view Name) const;
  /// Removes `Name`; returns whether it was there.
  VMJIT_DLL bool remove(std::string_view Name);
  /// All registered names, sorted.
  VMJIT_DLL std::vector<std::string> names() const;

private:
  struct Impl;
  std::unique_ptr<Impl> I;
};

/// TVM's ABI for code TVM compiled. Such code (a kernel, a compiled-mode
/// driver) looks functions up by name and drops a result it does not use
/// without releasing it, trusting TVM's function to return nothing. Where
/// vmjit's standard function of a name returns a value TVM's does not
/// (vmjit's check_tensor_info returns its argument), it registers TVM's
/// variant here, and KernelLibrary's lookups hand that variant out while
/// the registry still holds the standard function (a user's replacement
/// is handed out as it is).
VMJIT_DLL void setTvmAbiVariant(const Function &Standard, Function Variant);
/// The variant registered for `F`, if any.
VMJIT_DLL std::optional<Function> tvmAbiVariant(const Function &F);

/// Chained registration in the style of tvm-ffi's reflection::GlobalDef,
/// so that each function is registered by one line next to its code:
///
///   GlobalDef(R)
///       .def("vm.builtin.copy", copy)             // typed: checked arguments
///       .defPacked("vm.builtin.make_tuple", makeTuple); // (PackedArgs, Any*)
class GlobalDef {
public:
  explicit GlobalDef(Registry &R = Registry::global()) noexcept : R(R) {}
  /// Registers a callable with typed parameters (Registry::addTyped).
  template <typename F> GlobalDef &def(std::string Name, F Fn) {
    R.addTyped(std::move(Name), std::move(Fn));
    return *this;
  }
  /// Registers a `void(PackedArgs, Any*)` callable (Registry::addPacked).
  template <typename F> GlobalDef &defPacked(std::string Name, F Fn) {
    R.addPacked(std::move(Name), std::move(Fn));
    return *this;
  }
  Registry &registry() const noexcept { return R; }

private:
  Registry &R;
};

} // namespace vmjit

#endif // VMJIT_RUNTIME_REGISTRY_H
