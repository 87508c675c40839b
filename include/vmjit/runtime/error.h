//===- vmjit/runtime/error.h - Errors and the safe-call boundary -*- C++ -*-===//
//
// An Error (type 67) carries a kind ("TypeError", "ValueError", ...), the
// original message, and the VM frames it passed through ("in function F,
// instruction N"), appended as it propagates. The same class is the C++
// exception the runtime throws internally; at every C boundary it becomes a
// -1 return code plus the thread-local raised error, and back.
//
//===----------------------------------------------------------------------===//

#ifndef VMJIT_RUNTIME_ERROR_H
#define VMJIT_RUNTIME_ERROR_H

#include "vmjit/runtime/any.h"

#include <exception>
#include <functional>
#include <optional>
#include <new>
#include <string>
#include <vector>

namespace vmjit {

class ErrorObj : public Object {
public:
  static constexpr int32_t kTypeIndex = kVMJITError;
  ErrorObj(std::string Kind, std::string Message)
      : Object(kTypeIndex, objectDeleter<ErrorObj>), Kind(std::move(Kind)),
        Message(std::move(Message)) {}

  std::string Kind;
  std::string Message;
  /// Innermost first: "in function F, instruction N (call G)".
  std::vector<std::string> Frames;
};

/// A reference to an error object, and the runtime's exception type.
class Error : public ObjectRef, public std::exception {
public:
  using ContainerType = ErrorObj;
  static constexpr const char *kTypeName = "Error";
  explicit Error(ObjectPtr<Object> P) : ObjectRef(std::move(P)) {}
  Error(std::string Kind, std::string Message)
      : ObjectRef(makeObject<ErrorObj>(std::move(Kind), std::move(Message))) {}

  ErrorObj *get() const noexcept {
    return static_cast<ErrorObj *>(ObjectRef::get());
  }
  const std::string &kind() const noexcept { return get()->Kind; }
  const std::string &message() const noexcept { return get()->Message; }
  const std::vector<std::string> &frames() const noexcept {
    return get()->Frames;
  }
  /// Appends a frame as the error passes outward through it.
  void addFrame(std::string Frame) const {
    get()->Frames.push_back(std::move(Frame));
  }
  /// "Kind: message" followed by one "  in ..." line per frame.
  VMJIT_DLL std::string format() const;

  /// The original message.
  const char *what() const noexcept override { return message().c_str(); }
};

template <> struct TypeTraits<Error> : ObjectRefTypeTraits<Error> {};

/// Throws an Error of the given kind.
[[noreturn]] VMJIT_DLL void throwError(std::string Kind, std::string Message);

/// Stores `E` as this thread's raised error.
VMJIT_DLL void setRaisedError(const Error &E) noexcept;
/// Takes this thread's raised error; if a callee returned -1 without
/// raising one, an InternalError saying so.
VMJIT_DLL Error takeRaisedError() noexcept;

/// Adds a place takeRaisedError looks when this thread's slot is empty:
/// another FFI runtime in the process (a kernel built with tvm-ffi raises
/// its errors in libtvm_ffi.so). `Take` returns that runtime's raised error
/// for this thread, converted, or nullopt.
VMJIT_DLL void addForeignErrorSource(std::function<std::optional<Error>()> Take);
/// Throws this thread's raised error (after a safe call returned non-zero).
[[noreturn]] VMJIT_DLL void throwRaisedError();

namespace detail {
VMJIT_DLL int raiseCurrentException() noexcept;
} // namespace detail

/// Runs `F` and converts any exception it throws into the raised error and
/// a -1 return code: the body of every safe-call entry written in C++.
template <typename F> int safeCallGuard(F &&Body) noexcept {
  try {
    Body();
    return 0;
  } catch (...) {
    return detail::raiseCurrentException();
  }
}

} // namespace vmjit

#endif // VMJIT_RUNTIME_ERROR_H
