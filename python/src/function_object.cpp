//===- function_object.cpp - vmjit.Function: calls from Python ------------===//
//
// The callable that vm["f"] returns, written against the CPython API (with
// vectorcall) rather than through pybind11's dispatcher, because it is the
// path every call from Python takes: the arguments are converted, the GIL
// is released, the VM is locked and run, and the result converted back.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include <fmt/format.h>

#include <array>
#include <structmember.h>
#include <new>

namespace vmjit::python {

namespace {

struct FunctionObject {
  PyObject_HEAD;
  vectorcallfunc Vectorcall;
  /// The VM that runs it (null for a function value of no VM).
  std::shared_ptr<Machine> Owner;
  /// Owner's Python object (a strong reference): the edge the garbage
  /// collector follows, so that a cycle through the VM's instrument (which
  /// may hold this function) is collected.
  PyObject *OwnerObject;
  /// Function-table index in Owner's VM; -1: call Fn.
  int64_t Index;
  Function Fn;
  std::string Name;
  /// Set for a function a callback received: where and while it may run.
  std::shared_ptr<CallbackArguments::Scope> Callback;
};

PyTypeObject *FunctionType = nullptr;

/// The callback whose arguments this thread is converting, if any.
thread_local std::shared_ptr<CallbackArguments::Scope> ConvertingFor;

/// False, with a RuntimeError set, if `F` is a callback's argument called
/// from elsewhere or later.
bool callableHere(const FunctionObject *F) {
  const CallbackArguments::Scope *S = F->Callback.get();
  if (!S)
    return true;
  const bool OtherThread = S->Thread != std::this_thread::get_id();
  if (S->Live.load() && !OtherThread)
    return true;
  PyErr_Format(PyExc_RuntimeError,
               "vmjit function '%s' was an argument of a Python function a "
               "VM called, and runs without the VM's lock: only that "
               "function may call it, on its thread, while it runs (this "
               "call is %s)",
               F->Name.c_str(),
               OtherThread ? "on another thread" : "after it returned");
  return false;
}

/// Arguments converted for one call: on the stack for up to kInline.
class CallArgs {
public:
  static constexpr size_t kInline = 8;
  explicit CallArgs(size_t N) : N(N) {
    if (N > kInline) {
      Heap.resize(N);
      HeapViews.resize(N);
    }
  }
  Any *values() { return N > kInline ? Heap.data() : Inline.data(); }
  AnyView *views() { return N > kInline ? HeapViews.data() : Views.data(); }
  std::span<const AnyView> span() { return {views(), N}; }

private:
  size_t N;
  std::array<Any, kInline> Inline;
  std::array<AnyView, kInline> Views;
  std::vector<Any> Heap;
  std::vector<AnyView> HeapViews;
};

PyObject *callFunction(PyObject *Self, PyObject *const *Args, size_t NArgsF,
                       PyObject *KwNames) {
  auto *F = reinterpret_cast<FunctionObject *>(Self);
  if (KwNames && PyTuple_GET_SIZE(KwNames) != 0) {
    PyErr_Format(PyExc_TypeError,
                 "vmjit function '%s' takes positional arguments only",
                 F->Name.c_str());
    return nullptr;
  }
  if (!callableHere(F))
    return nullptr;
  const size_t N = PyVectorcall_NARGS(NArgsF);
  CallArgs Call(N);
  Any Result;
  try {
    for (size_t I = 0; I < N; ++I) {
      Call.values()[I] = toAny(Args[I], I + 1);
      Call.views()[I] = AnyView(Call.values()[I]);
    }
  } catch (py::error_already_set &E) {
    E.restore();
    return nullptr;
  } catch (const py::builtin_exception &E) {
    E.set_error();
    return nullptr;
  } catch (const Error &E) {
    setPythonError(E);
    return nullptr;
  } catch (const std::exception &E) {
    PyErr_SetString(PyExc_RuntimeError, E.what());
    return nullptr;
  }
  const bool Ok = runUnlocked(F->Owner.get(), [&] {
    Result = F->Index >= 0
                 ? F->Owner->VM->invoke(F->Index, Call.span())
                 : F->Fn.callPacked(Call.views(), static_cast<int32_t>(N));
  });
  if (!Ok)
    return nullptr;
  try {
    return toPython(Result, F->Owner);
  } catch (py::error_already_set &E) {
    E.restore();
  } catch (const py::builtin_exception &E) {
    E.set_error();
  } catch (const std::exception &E) {
    PyErr_SetString(PyExc_RuntimeError, E.what());
  }
  return nullptr;
}

void deallocFunction(PyObject *Self) {
  auto *F = reinterpret_cast<FunctionObject *>(Self);
  PyObject_GC_UnTrack(Self);
  Py_CLEAR(F->OwnerObject);
  F->Owner.~shared_ptr();
  F->Callback.~shared_ptr();
  F->Fn.~Function();
  F->Name.~basic_string();
  PyTypeObject *T = Py_TYPE(Self);
  T->tp_free(Self);
  Py_DECREF(T);
}

int traverseFunction(PyObject *Self, visitproc visit, void *arg) {
  Py_VISIT(Py_TYPE(Self));
  Py_VISIT(reinterpret_cast<FunctionObject *>(Self)->OwnerObject);
  return 0;
}

/// Breaks a cycle: the Python edge goes; Owner stays (the object is about
/// to be freed, and a call meanwhile still finds its VM).
int clearFunction(PyObject *Self) {
  Py_CLEAR(reinterpret_cast<FunctionObject *>(Self)->OwnerObject);
  return 0;
}

PyObject *reprFunction(PyObject *Self) {
  auto *F = reinterpret_cast<FunctionObject *>(Self);
  return PyUnicode_FromFormat("<vmjit.Function '%s'>", F->Name.c_str());
}

PyObject *getName(PyObject *Self, void *) {
  return PyUnicode_FromString(
      reinterpret_cast<FunctionObject *>(Self)->Name.c_str());
}

PyMemberDef FunctionMembers[] = {
    {"__vectorcalloffset__", T_PYSSIZET,
     offsetof(FunctionObject, Vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyGetSetDef FunctionGetSet[] = {
    {"name", getName, nullptr, "the function's name", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot FunctionSlots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(deallocFunction)},
    {Py_tp_traverse, reinterpret_cast<void *>(traverseFunction)},
    {Py_tp_clear, reinterpret_cast<void *>(clearFunction)},
    {Py_tp_call, reinterpret_cast<void *>(PyVectorcall_Call)},
    {Py_tp_repr, reinterpret_cast<void *>(reprFunction)},
    {Py_tp_members, FunctionMembers},
    {Py_tp_getset, FunctionGetSet},
    {Py_tp_doc,
     const_cast<char *>("A vmjit function (vm['name'], or a closure a VM "
                        "returned). Calling it runs the VM with the GIL "
                        "released.")},
    {0, nullptr}};

PyType_Spec FunctionSpec = {
    "vmjit._vmjit.Function", sizeof(FunctionObject), 0,
    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_HAVE_GC |
        Py_TPFLAGS_DISALLOW_INSTANTIATION,
    FunctionSlots};

PyObject *newFunction(std::shared_ptr<Machine> Owner, int64_t Index,
                      Function Fn, std::string Name) {
  // The Machine's Python object (pybind11 finds the one that holds it).
  py::object OwnerObject = Owner ? py::cast(Owner) : py::object();
  auto *F = PyObject_GC_New(FunctionObject, FunctionType);
  if (!F)
    throw py::error_already_set();
  F->OwnerObject = OwnerObject.release().ptr();
  F->Vectorcall = callFunction;
  new (&F->Owner) std::shared_ptr<Machine>(std::move(Owner));
  F->Index = Index;
  new (&F->Fn) Function(std::move(Fn));
  new (&F->Name) std::string(std::move(Name));
  new (&F->Callback) std::shared_ptr<CallbackArguments::Scope>(
      F->Owner ? nullptr : ConvertingFor);
  PyObject_GC_Track(F);
  return reinterpret_cast<PyObject *>(F);
}

} // namespace

PyObject *makeBoundFunction(std::shared_ptr<Machine> M, int64_t Index,
                            Function Fn, const std::string &Name) {
  return newFunction(std::move(M), Index, std::move(Fn), Name);
}

PyObject *makeValueFunction(Function F, std::shared_ptr<Machine> Owner) {
  std::string Name = F.defined() ? F.name() : "";
  return newFunction(std::move(Owner), -1, std::move(F),
                     Name.empty() ? "<closure>" : Name);
}

CallbackArguments::CallbackArguments() : S(std::make_shared<Scope>()) {
  S->Thread = std::this_thread::get_id();
}

CallbackArguments::~CallbackArguments() { S->Live.store(false); }

CallbackArguments::Converting::Converting(const std::shared_ptr<Scope> &S) {
  ConvertingFor = S;
}

CallbackArguments::Converting::~Converting() { ConvertingFor = nullptr; }

std::optional<Function> functionOf(PyObject *Obj) {
  if (Py_TYPE(Obj) != FunctionType)
    return std::nullopt;
  return reinterpret_cast<FunctionObject *>(Obj)->Fn;
}

void registerFunctionType(py::module_ &M) {
  FunctionType =
      reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&FunctionSpec));
  if (!FunctionType)
    throw py::error_already_set();
  M.add_object("Function", reinterpret_cast<PyObject *>(FunctionType));
}

} // namespace vmjit::python
