//===- error.cpp - Errors, the raised-error slot, the C error API ----------===//

#include "vmjit/runtime/error.h"

#include <mutex>
#include <new>

namespace vmjit {
namespace {
/// This thread's raised error: set by a failing safe call, taken by its
/// caller.
thread_local ObjectPtr<Object> RaisedError;

std::mutex ForeignMutex;
std::vector<std::function<std::optional<Error>()>> &foreignSources() {
  static auto *Sources = new std::vector<std::function<std::optional<Error>()>>;
  return *Sources;
}

std::optional<Error> takeForeignError() {
  std::lock_guard Lock(ForeignMutex);
  for (auto &Take : foreignSources())
    if (std::optional<Error> E = Take())
      return E;
  return std::nullopt;
}
} // namespace

void addForeignErrorSource(std::function<std::optional<Error>()> Take) {
  std::lock_guard Lock(ForeignMutex);
  foreignSources().push_back(std::move(Take));
}

std::string Error::format() const {
  std::string S = kind() + ": " + message();
  for (const std::string &F : frames())
    S += "\n  " + F;
  return S;
}

void throwError(std::string Kind, std::string Message) {
  throw Error(std::move(Kind), std::move(Message));
}

void setRaisedError(const Error &E) noexcept { RaisedError = E.ptr(); }

Error takeRaisedError() noexcept {
  ObjectPtr<Object> P = std::move(RaisedError);
  if (P && P->typeIndex() == kVMJITError)
    return Error(std::move(P));
  try {
    if (std::optional<Error> E = takeForeignError())
      return std::move(*E);
    return Error("InternalError",
                 "a safe call failed without raising an error");
  } catch (...) {
    // Out of memory while reporting an error: nothing better to give.
    std::terminate();
  }
}

void throwRaisedError() { throw takeRaisedError(); }

namespace detail {
int raiseCurrentException() noexcept {
  try {
    throw;
  } catch (const Error &E) {
    setRaisedError(E);
  } catch (const std::bad_alloc &) {
    VMJITErrorSetRaisedFromCStr("MemoryError", "out of memory");
  } catch (const std::exception &E) {
    VMJITErrorSetRaisedFromCStr("InternalError", E.what());
  } catch (...) {
    VMJITErrorSetRaisedFromCStr("InternalError", "unknown C++ exception");
  }
  return -1;
}
} // namespace detail

} // namespace vmjit

using namespace vmjit;

extern "C" {

void VMJITErrorSetRaised(VMJITObject *Err) {
  RaisedError = ObjectPtr<Object>::share(Object::fromRaw(Err));
}

void VMJITErrorSetRaisedFromCStr(const char *Kind, const char *Message) {
  try {
    RaisedError = Error(Kind ? Kind : "RuntimeError", Message ? Message : "")
                      .ptr();
  } catch (...) {
    // Allocation failed; keep whatever was raised before rather than throw
    // across the C boundary.
  }
}

void VMJITErrorMoveFromRaised(VMJITObject **Result) {
  Object *P = RaisedError.release();
  *Result = P ? P->raw() : nullptr;
}

int VMJITErrorGetInfo(VMJITObject *Err, VMJITByteArray *Kind,
                      VMJITByteArray *Message) {
  if (!Err || Err->type_index != kVMJITError)
    return -1;
  auto *E = reinterpret_cast<ErrorObj *>(Err);
  if (Kind)
    *Kind = {E->Kind.data(), E->Kind.size()};
  if (Message)
    *Message = {E->Message.data(), E->Message.size()};
  return 0;
}

} // extern "C"
