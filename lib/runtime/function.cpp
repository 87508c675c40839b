//===- function.cpp - Packed function helpers and the C function API ------===//

#include "vmjit/runtime/function.h"
#include "vmjit/runtime/type_error_hint.h"
#include "vmjit/runtime/registry.h"

#include <fmt/format.h>

namespace vmjit {
namespace detail {

void throwArityError(const std::string &Name, int32_t Expected, int32_t Got) {
  throwError("TypeError",
             fmt::format("{}: expected {} argument{} but got {}",
                         Name.empty() ? "function" : Name, Expected,
                         Expected == 1 ? "" : "s", Got));
}

void throwArityError(const std::string &Name, int32_t Min, int32_t Max,
                     int32_t Got) {
  throwError("TypeError", fmt::format("{}: expected {} to {} arguments but got "
                                      "{}",
                                      Name.empty() ? "function" : Name, Min,
                                      Max, Got));
}

void throwArgTypeError(const std::string &Name, int32_t Index,
                       std::string_view Expected, const AnyView &Got) {
  throwError("TypeError",
             fmt::format("{}: argument {} expected {} but got {}{}",
                         Name.empty() ? "function" : Name, Index, Expected,
                         Got.typeName(),
                         typeErrorHint(Expected, Got.typeName())));
}

} // namespace detail
} // namespace vmjit

using namespace vmjit;

extern "C" {

int VMJITFunctionCall(VMJITObject *Func, const VMJITAny *Args, int32_t NumArgs,
                      VMJITAny *Result) {
  if (!Func || Func->type_index != kVMJITFunction) {
    VMJITErrorSetRaisedFromCStr("TypeError",
                                "VMJITFunctionCall: not a Function object");
    return -1;
  }
  auto *F = reinterpret_cast<VMJITFunctionCell *>(
      reinterpret_cast<char *>(Func) + sizeof(VMJITObject));
  return F->safe_call(Func, Args, NumArgs, Result);
}

int VMJITFunctionGetGlobal(const char *Name, VMJITObject **Out) {
  return safeCallGuard([&] {
    *Out = nullptr;
    if (auto F = Registry::global().find(Name ? Name : ""))
      *Out = F->ptr().release()->raw();
  });
}

int VMJITFunctionSetGlobal(const char *Name, VMJITObject *Func,
                           int AllowOverride) {
  return safeCallGuard([&] {
    if (!Name || !Func || Func->type_index != kVMJITFunction)
      throwError("TypeError",
                 "VMJITFunctionSetGlobal: needs a name and a Function object");
    Registry::global().add(
        Name, Function(ObjectPtr<Object>::share(Object::fromRaw(Func))),
        AllowOverride != 0);
  });
}

int VMJITFunctionFromSafeCall(VMJITSafeCallType SafeCall, VMJITObject **Out) {
  return safeCallGuard([&] {
    *Out = nullptr;
    if (!SafeCall)
      throwError("ValueError", "VMJITFunctionFromSafeCall: null entry");
    *Out = Function::fromSafeCall(SafeCall).ptr().release()->raw();
  });
}

} // extern "C"
