//===- tensor_object.cpp - vmjit.Tensor -----------------------------------===//
//
// A tensor vmjit owns or shares, as Python sees it: shape, dtype, device,
// DLPack export (__dlpack__ with the array API's stream, max_version,
// dl_device and copy; __dlpack_device__) and the buffer protocol (with its
// contiguity requests), without copying unless asked, and .numpy() (a
// NumPy array over the same memory).
// A CPython type rather than a pybind11 class: every tensor a call returns
// is wrapped in one, and pybind11's instance bookkeeping would double the
// cost of such a call.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/builtins/builtins.h"
#include "vmjit/runtime/dtype_traits.h"
#include "vmjit/runtime/shape.h"
#include "vmjit/runtime/tensor.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <memory>
#include <new>
#include <span>

namespace vmjit::python {

const char *bufferFormat(DLDataType T) {
  const DTypeTraits *R = findDType(T);
  return R ? R->BufferFormat : nullptr;
}

std::optional<DLDataType> bufferDType(const Py_buffer &B) {
  const char *F = B.format ? B.format : "B";
  if (*F == '@' || *F == '=' || *F == '<')
    ++F;
  if (!*F || F[1])
    return std::nullopt;
  const DTypeTraits *R =
      findDTypeByBufferChar(*F, static_cast<size_t>(B.itemsize));
  return R ? std::optional(R->Type) : std::nullopt;
}

std::string deviceName(DLDevice D) {
  static const char *const Names[] = {
      nullptr,   "cpu",          "cuda",   "cuda_host", "opencl",  nullptr,
      nullptr,   "vulkan",       "metal",  "vpi",       "rocm",    "rocm_host",
      "ext_dev", "cuda_managed", "oneapi", "webgpu",    "hexagon", "maia"};
  const auto Type = static_cast<size_t>(D.device_type);
  const char *Name = Type < std::size(Names) ? Names[Type] : nullptr;
  return Name ? fmt::format("{}:{}", Name, D.device_id)
              : fmt::format("DLPack device ({}, {})", Type, D.device_id);
}

Tensor compactCopy(const Tensor &Src) {
  if (Src.device().device_type != kDLCPU)
    throwError("ValueError", fmt::format("cannot copy a tensor on {}: vmjit "
                                         "copies only on the CPU",
                                         deviceName(Src.device())));
  Tensor Out = Tensor::empty(Src.shape(), Src.dtype());
  vm::copyElements(Src, Out.data()); // (a strided packed dtype: ValueError)
  return Out;
}

namespace {

struct TensorObject {
  PyObject_HEAD;
  Tensor T;
};

PyTypeObject *TensorType = nullptr;

const Tensor &self(PyObject *Obj) {
  return reinterpret_cast<TensorObject *>(Obj)->T;
}

//===--- Buffer protocol ----------------------------------------------------===//

/// Whether dims and strides (in bytes) lay the elements out in Fortran
/// (column-major) order with no gaps.
bool isFortranOrder(int N, const Py_ssize_t *Dims, const Py_ssize_t *Strides,
                    Py_ssize_t Item) {
  Py_ssize_t Expected = Item;
  for (int D = 0; D < N; ++D) {
    if (Dims[D] != 1 && Strides[D] != Expected)
      return false;
    Expected *= Dims[D];
  }
  return true;
}

/// Null, or why the tensor's layout cannot be exported as the request
/// `Flags` asks for (a contiguous order, or no strides at all).
const char *layoutRefusal(int Flags, bool COrder, bool FOrder) {
  if ((Flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS && !COrder)
    return "the tensor is not C-contiguous (row-major, no gaps)";
  if ((Flags & PyBUF_F_CONTIGUOUS) == PyBUF_F_CONTIGUOUS && !FOrder)
    return "the tensor is not Fortran-contiguous (column-major, no gaps)";
  if ((Flags & PyBUF_ANY_CONTIGUOUS) == PyBUF_ANY_CONTIGUOUS && !COrder &&
      !FOrder)
    return "the tensor is not contiguous";
  if ((Flags & PyBUF_STRIDES) != PyBUF_STRIDES && !COrder)
    return "the tensor is not contiguous, and the request takes no strides";
  return nullptr;
}

/// The buffer protocol: vmjit's tensors are always writable (a request
/// with PyBUF_WRITABLE is met); a request for a contiguous order the tensor
/// does not have is refused with BufferError, never met with strides.
int getBuffer(PyObject *Obj, Py_buffer *View, int Flags) {
  const Tensor &T = self(Obj);
  if (T.device().device_type != kDLCPU) {
    PyErr_Format(PyExc_BufferError, "a tensor on %s has no buffer",
                 deviceName(T.device()).c_str());
    return -1;
  }
  const char *Format = bufferFormat(T.dtype());
  if (!Format) {
    PyErr_Format(PyExc_BufferError,
                 "a %s tensor has no buffer format (NumPy has no such "
                 "dtype); export it with __dlpack__ instead",
                 dtypeName(T.dtype()).c_str());
    return -1;
  }
  const int N = T.ndim();
  const auto Item = static_cast<Py_ssize_t>(dtypeBytes(T.dtype()));
  // Shape and strides, alive until releaseBuffer.
  auto Dims = std::make_unique<Py_ssize_t[]>(2 * static_cast<size_t>(N) + 1);
  Py_ssize_t *Strides = Dims.get() + N;
  Py_ssize_t Step = Item;
  for (int D = N; D-- > 0;) {
    Dims[D] = static_cast<Py_ssize_t>(T.shape()[D]);
    Strides[D] = T.dl()->strides ? T.dl()->strides[D] * Item : Step;
    Step *= Dims[D];
  }
  const bool COrder = T.isContiguous();
  if (const char *Why = layoutRefusal(
          Flags, COrder, isFortranOrder(N, Dims.get(), Strides, Item))) {
    PyErr_SetString(PyExc_BufferError, Why);
    return -1;
  }
  View->buf = T.data();
  View->obj = Py_NewRef(Obj);
  View->len = static_cast<Py_ssize_t>(T.numel()) * Item;
  View->itemsize = Item;
  View->readonly = 0;
  View->ndim = N;
  View->format = (Flags & PyBUF_FORMAT) ? const_cast<char *>(Format) : nullptr;
  View->shape = (Flags & PyBUF_ND) == PyBUF_ND ? Dims.get() : nullptr;
  View->strides = (Flags & PyBUF_STRIDES) == PyBUF_STRIDES ? Strides : nullptr;
  View->suboffsets = nullptr;
  View->internal = Dims.release();
  return 0;
}

void releaseBuffer(PyObject *, Py_buffer *View) {
  delete[] static_cast<Py_ssize_t *>(View->internal);
}

//===--- DLPack -------------------------------------------------------------===//

template <typename ManagedT>
void deleteIfUnused(PyObject *Cap, const char *Name) {
  if (PyCapsule_IsValid(Cap, Name)) {
    auto *M = static_cast<ManagedT *>(PyCapsule_GetPointer(Cap, Name));
    M->deleter(M);
  }
}

/// A capsule no consumer took (it still has its first name) frees its
/// tensor reference.
void deleteUnusedCapsule(PyObject *Cap) {
  deleteIfUnused<DLManagedTensor>(Cap, "dltensor");
  deleteIfUnused<DLManagedTensorVersioned>(Cap, "dltensor_versioned");
}

/// A capsule owning `M` (whose deleter runs if the capsule cannot be made).
template <typename ManagedT>
PyObject *newCapsule(ManagedT *M, const char *Name) {
  PyObject *Cap = PyCapsule_New(M, Name, deleteUnusedCapsule);
  if (!Cap)
    M->deleter(M);
  return Cap;
}

/// `Obj` as an int (anything with __index__: an IntEnum such as a
/// DLDeviceType); nullopt with a TypeError naming `What` otherwise.
std::optional<long> indexArg(PyObject *Obj, const char *What) {
  if (!PyIndex_Check(Obj)) {
    PyErr_Format(PyExc_TypeError, "__dlpack__: %s must be an int, not '%s'",
                 What, Py_TYPE(Obj)->tp_name);
    return std::nullopt;
  }
  long V = PyLong_AsLong(Obj);
  if (V == -1 && PyErr_Occurred())
    return std::nullopt;
  return V;
}

/// The two ints of a pair argument (max_version, dl_device); nullopt with
/// a TypeError naming the argument if it is not one.
std::optional<std::pair<long, long>> intPair(PyObject *Obj, const char *What) {
  if (!PyTuple_Check(Obj) || PyTuple_GET_SIZE(Obj) != 2) {
    PyErr_Format(PyExc_TypeError,
                 "__dlpack__: %s must be a tuple of two ints, not %R", What,
                 Obj);
    return std::nullopt;
  }
  std::optional<long> A = indexArg(PyTuple_GET_ITEM(Obj, 0), What);
  if (!A)
    return std::nullopt;
  std::optional<long> B = indexArg(PyTuple_GET_ITEM(Obj, 1), What);
  if (!B)
    return std::nullopt;
  return std::make_pair(*A, *B);
}

/// What a consumer asked __dlpack__ for.
struct ExportRequest {
  bool Versioned = false; ///< max_version's major is at least 1
  bool Copy = false;      ///< copy=True
};

/// Checks __dlpack__'s arguments against tensor `T`: the request, or
/// nullopt with the Python error set (BufferError for what a CPU tensor
/// cannot do, TypeError for arguments of the wrong type).
std::optional<ExportRequest> exportRequest(const Tensor &T, PyObject *Stream,
                                           PyObject *MaxVersion,
                                           PyObject *Device, PyObject *Copy) {
  ExportRequest R;
  if (Stream && Stream != Py_None) {
    PyErr_Format(PyExc_BufferError,
                 "__dlpack__: a tensor on %s takes stream=None, not %R",
                 deviceName(T.device()).c_str(), Stream);
    return std::nullopt;
  }
  if (MaxVersion && MaxVersion != Py_None) {
    auto V = intPair(MaxVersion, "max_version");
    if (!V)
      return std::nullopt;
    R.Versioned = V->first >= 1;
  }
  if (Copy && Copy != Py_None) {
    if (!PyBool_Check(Copy)) {
      PyErr_Format(PyExc_TypeError,
                   "__dlpack__: copy must be True, False or None, not %R",
                   Copy);
      return std::nullopt;
    }
    R.Copy = Copy == Py_True;
  }
  if (Device && Device != Py_None) {
    auto D = intPair(Device, "dl_device");
    if (!D)
      return std::nullopt;
    DLDevice Want{static_cast<DLDeviceType>(D->first),
                  static_cast<int>(D->second)};
    DLDevice Have = T.device();
    if (Want.device_type != Have.device_type ||
        Want.device_id != Have.device_id) {
      PyErr_Format(PyExc_BufferError,
                   "__dlpack__: cannot export a tensor on %s to %s: vmjit "
                   "%s",
                   deviceName(Have).c_str(), deviceName(Want).c_str(),
                   Copy == Py_False
                       ? "shares memory only on the tensor's own device "
                         "(and copy=False forbids a copy)"
                       : "copies only on the CPU");
      return std::nullopt;
    }
  }
  return R;
}

/// __dlpack__(*, stream, max_version, dl_device, copy): a versioned
/// capsule when the consumer asks for DLPack 1.x; the tensor's memory, or
/// a compact copy of it (flagged IS_COPIED) for copy=True. copy=False is
/// always met on the tensor's own device: vmjit never needs to copy there.
PyObject *dlpack(PyObject *Obj, PyObject *Args, PyObject *Kwargs) {
  static const char *Names[] = {"stream", "max_version", "dl_device", "copy",
                                nullptr};
  PyObject *Stream = nullptr, *MaxVersion = nullptr, *Device = nullptr,
           *Copy = nullptr;
  if (!PyArg_ParseTupleAndKeywords(Args, Kwargs, "|O$OOO:__dlpack__",
                                   const_cast<char **>(Names), &Stream,
                                   &MaxVersion, &Device, &Copy))
    return nullptr;
  const Tensor &T = self(Obj);
  std::optional<ExportRequest> R =
      exportRequest(T, Stream, MaxVersion, Device, Copy);
  if (!R)
    return nullptr;
  try {
    Tensor Out = R->Copy ? compactCopy(T) : T;
    if (R->Versioned) {
      DLManagedTensorVersioned *M = Out.toDLPackVersioned();
      if (R->Copy)
        M->flags |= DLPACK_FLAG_BITMASK_IS_COPIED;
      return newCapsule(M, "dltensor_versioned");
    }
    return newCapsule(Out.toDLPack(), "dltensor");
  } catch (const Error &E) {
    setPythonError(E);
    return nullptr;
  } catch (const std::bad_alloc &) {
    return PyErr_NoMemory();
  }
}

PyObject *dlpackDevice(PyObject *Obj, PyObject *) {
  DLDevice D = self(Obj).device();
  return Py_BuildValue("(ii)", static_cast<int>(D.device_type), D.device_id);
}

PyObject *toNumpy(PyObject *Obj, PyObject *) {
  const Tensor &T = self(Obj);
  if (!bufferFormat(T.dtype())) {
    PyErr_Format(PyExc_TypeError,
                 "a %s tensor has no NumPy dtype; export it with __dlpack__ "
                 "instead",
                 dtypeName(T.dtype()).c_str());
    return nullptr;
  }
  static PyObject *AsArray = nullptr;
  if (!AsArray) {
    PyObject *NumPy = PyImport_ImportModule("numpy");
    if (!NumPy)
      return nullptr;
    AsArray = PyObject_GetAttrString(NumPy, "asarray");
    Py_DECREF(NumPy);
    if (!AsArray)
      return nullptr;
  }
  return PyObject_CallOneArg(AsArray, Obj);
}

//===--- Attributes ---------------------------------------------------------===//

PyObject *getShape(PyObject *Obj, void *) {
  const Tensor &T = self(Obj);
  PyObject *Out = PyTuple_New(T.ndim());
  for (int D = 0; Out && D < T.ndim(); ++D)
    PyTuple_SET_ITEM(Out, D, PyLong_FromLongLong(T.shape()[D]));
  return Out;
}
PyObject *getDType(PyObject *Obj, void *) {
  return PyUnicode_FromString(dtypeName(self(Obj).dtype()).c_str());
}
PyObject *getNdim(PyObject *Obj, void *) {
  return PyLong_FromLong(self(Obj).ndim());
}
PyObject *getSize(PyObject *Obj, void *) {
  return PyLong_FromLongLong(self(Obj).numel());
}
PyObject *getNbytes(PyObject *Obj, void *) {
  return PyLong_FromSize_t(self(Obj).nbytes());
}
PyObject *getDataPtr(PyObject *Obj, void *) {
  return PyLong_FromVoidPtr(self(Obj).data());
}
PyObject *getDevice(PyObject *Obj, void *) {
  DLDevice D = self(Obj).device();
  try {
    return hooks()
        .DeviceType(static_cast<int>(D.device_type), D.device_id)
        .release()
        .ptr();
  } catch (py::error_already_set &E) {
    E.restore();
    return nullptr;
  }
}

void dealloc(PyObject *Obj) {
  reinterpret_cast<TensorObject *>(Obj)->T.~Tensor();
  PyTypeObject *Type = Py_TYPE(Obj);
  Type->tp_free(Obj);
  Py_DECREF(Type);
}

PyMethodDef Methods[] = {
    {"__dlpack__", reinterpret_cast<PyCFunction>(
                       reinterpret_cast<void (*)()>(dlpack)),
     METH_VARARGS | METH_KEYWORDS,
     "Exports the tensor without copying (DLPack)."},
    {"__dlpack_device__", dlpackDevice, METH_NOARGS,
     "(device_type, device_id): (1, 0) for the CPU."},
    {"numpy", toNumpy, METH_NOARGS,
     "A NumPy array over the same memory (no copy)."},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef GetSet[] = {
    {"shape", getShape, nullptr, "the dimensions, a tuple", nullptr},
    {"dtype", getDType, nullptr, "the element type's name: 'float32', ...",
     nullptr},
    {"ndim", getNdim, nullptr, "the number of dimensions", nullptr},
    {"size", getSize, nullptr, "the number of elements", nullptr},
    {"nbytes", getNbytes, nullptr, "the bytes of the elements", nullptr},
    {"data_ptr", getDataPtr, nullptr, "the address of the first element",
     nullptr},
    {"device", getDevice, nullptr, "a vmjit.Device", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot Slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void *>(dealloc)},
    {Py_tp_methods, Methods},
    {Py_tp_getset, GetSet},
    {Py_bf_getbuffer, reinterpret_cast<void *>(getBuffer)},
    {Py_bf_releasebuffer, reinterpret_cast<void *>(releaseBuffer)},
    {Py_tp_doc, const_cast<char *>(
                    "A tensor: vmjit's memory, or memory it shares with its "
                    "producer (docs/python.md)")},
    {0, nullptr}};

PyType_Spec Spec = {"vmjit._vmjit.Tensor", sizeof(TensorObject), 0,
                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                    Slots};

DLDataType parseDTypeOrThrow(const std::string &Name) {
  if (auto T = parseDType(Name))
    return *T;
  throw py::value_error(fmt::format("'{}' is not a dtype vmjit knows", Name));
}

/// Copies the elements of `Src` into `Dst` (Tensor.copyfrom's core): same
/// shape and dtype, `Dst` compact; any layout of `Src`.
void copyElements(const Tensor &Dst, const Tensor &Src) {
  if (Dst.dtype() != Src.dtype() ||
      !std::equal(Dst.shape().begin(), Dst.shape().end(), Src.shape().begin(),
                  Src.shape().end()))
    throw py::value_error(fmt::format(
        "cannot copy a {} {} tensor into a {} {} tensor: the shapes "
        "and dtypes must be equal",
        shapeString(Src.shape()), dtypeName(Src.dtype()),
        shapeString(Dst.shape()), dtypeName(Dst.dtype())));
  if (!Dst.isContiguous())
    throw py::value_error("cannot copy into a strided tensor: vmjit "
                          "copies into compact tensors only");
  Tensor Compact = Src.isContiguous() ? Src : compactCopy(Src);
  if (Dst.nbytes() && Dst.data() != Compact.data())
    std::memmove(Dst.data(), Compact.data(), Dst.nbytes());
}

/// Runs `Body` (returning a new reference), turning a C++ exception into
/// the Python error (null).
template <typename F> PyObject *catchErrors(F &&Body) {
  try {
    return Body();
  } catch (py::error_already_set &E) {
    E.restore();
  } catch (const py::builtin_exception &E) {
    E.set_error();
  } catch (const Error &E) {
    setPythonError(E);
  } catch (const std::bad_alloc &) {
    PyErr_NoMemory();
  } catch (const std::exception &E) {
    PyErr_SetString(PyExc_RuntimeError, E.what());
  }
  return nullptr;
}

/// Binds vectorcall arguments to `Params` (positional, then by keyword);
/// false with a TypeError for an unknown, repeated or missing one. `Params`
/// holds the defaults (null: required).
bool bindArgs(const char *Fn, std::span<const char *const> Names,
              PyObject *const *Args, Py_ssize_t NArgs, PyObject *KwNames,
              std::span<PyObject *> Params) {
  if (static_cast<size_t>(NArgs) > Params.size()) {
    PyErr_Format(PyExc_TypeError,
                 "%s() takes at most %zu arguments (%zd given)", Fn,
                 Params.size(), NArgs);
    return false;
  }
  std::copy(Args, Args + NArgs, Params.begin());
  const Py_ssize_t NKw = KwNames ? PyTuple_GET_SIZE(KwNames) : 0;
  for (Py_ssize_t K = 0; K < NKw; ++K) {
    const char *Key = PyUnicode_AsUTF8(PyTuple_GET_ITEM(KwNames, K));
    auto It = std::find_if(Names.begin(), Names.end(), [&](const char *N) {
      return Key && std::strcmp(N, Key) == 0;
    });
    const auto I = static_cast<Py_ssize_t>(It - Names.begin());
    if (It == Names.end() || I < NArgs) {
      PyErr_Format(PyExc_TypeError, "%s() got %s argument '%s'", Fn,
                   It == Names.end() ? "an unexpected keyword" : "a repeated",
                   Key ? Key : "?");
      return false;
    }
    Params[static_cast<size_t>(I)] = Args[NArgs + K];
  }
  for (size_t I = 0; I < Params.size(); ++I)
    if (!Params[I]) {
      PyErr_Format(PyExc_TypeError, "%s() is missing the argument '%s'", Fn,
                   Names[I]);
      return false;
    }
  return true;
}

/// vmjit.tensor(data, dtype=None, device=None): an array taken as it is
/// here, in C (the path of vmjit.tensor(a)); lists, scalars and dtype or
/// device arguments in vmjit.tensors._tensor_general.
PyObject *tensorFunction(PyObject *, PyObject *const *Args, size_t NArgsF,
                         PyObject *KwNames) {
  static const char *const Names[] = {"data", "dtype", "device"};
  PyObject *Params[] = {nullptr, Py_None, Py_None};
  if (!bindArgs("tensor", Names, Args, PyVectorcall_NARGS(NArgsF), KwNames,
                Params))
    return nullptr;
  PyObject *Data = Params[0];
  if (Params[1] == Py_None && Params[2] == Py_None) {
    if (tensorOf(Data))
      return Py_NewRef(Data);
    PyObject *Made = catchErrors([&]() -> PyObject * {
      if (std::optional<Tensor> T =
              arrayToTensor(Data, 0, CopyPolicy::IfNeeded))
        return wrapTensor(std::move(*T));
      return Py_NewRef(Py_None);
    });
    if (Made != Py_None)
      return Made;
    Py_DECREF(Made);
  }
  PyObject *General = hooks().TensorGeneral.ptr();
  if (!General) {
    PyErr_SetString(PyExc_RuntimeError, "vmjit.tensor: vmjit is not set up");
    return nullptr;
  }
  return PyObject_Vectorcall(General, Params, 3, nullptr);
}

PyMethodDef TensorFunctions[] = {
    {"tensor",
     reinterpret_cast<PyCFunction>(
         reinterpret_cast<void (*)()>(tensorFunction)),
     METH_FASTCALL | METH_KEYWORDS,
     "tensor(data, dtype=None, device=None)\n--\n\n"
     "A vmjit.Tensor of `data`, as tvm.nd.array makes one. An array (NumPy, "
     "anything with __dlpack__ or a buffer, a vmjit.Tensor) of the requested "
     "dtype, or any with dtype=None, is shared as vmjit.from_dlpack shares "
     "it (a read-only or strided one is copied); nested lists and scalars "
     "are converted as numpy.array(data, dtype) converts them, an array of "
     "another dtype as numpy.asarray(data).astype(dtype): both copy. "
     "device: None or the CPU."},
    {nullptr, nullptr, 0, nullptr}};

} // namespace

PyObject *wrapTensor(Tensor T) {
  auto *Obj = PyObject_New(TensorObject, TensorType);
  if (!Obj)
    return nullptr;
  new (&Obj->T) Tensor(std::move(T));
  return reinterpret_cast<PyObject *>(Obj);
}

const Tensor *tensorOf(PyObject *Obj) {
  return Py_TYPE(Obj) == TensorType ? &self(Obj) : nullptr;
}

void registerTensor(py::module_ &M) {
  TensorType = reinterpret_cast<PyTypeObject *>(PyType_FromSpec(&Spec));
  if (!TensorType)
    throw py::error_already_set();
  M.add_object("Tensor", reinterpret_cast<PyObject *>(TensorType));

  auto Wrap = [](Tensor T) {
    PyObject *Obj = wrapTensor(std::move(T));
    if (!Obj)
      throw py::error_already_set();
    return py::reinterpret_steal<py::object>(Obj);
  };
  M.def(
      "empty",
      [Wrap](std::vector<int64_t> Shape, const std::string &DType) {
        return Wrap(Tensor::empty(Shape, parseDTypeOrThrow(DType)));
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "A new uninitialized CPU tensor.");
  if (PyModule_AddFunctions(M.ptr(), TensorFunctions) != 0)
    throw py::error_already_set();
  M.def("_set_tensor_hook",
        [](py::object General) { hooks().TensorGeneral = std::move(General); });
  M.def(
      "_from_dlpack",
      [Wrap](py::handle Obj, py::object Copy) {
        CopyPolicy Policy = Copy.is_none()             ? CopyPolicy::IfNeeded
                            : Copy.is(py::bool_(true)) ? CopyPolicy::Always
                                                       : CopyPolicy::Never;
        if (!Copy.is_none() && !PyBool_Check(Copy.ptr()))
          throw py::type_error("copy must be True, False or None");
        if (const Tensor *T = tensorOf(Obj.ptr()))
          return Policy == CopyPolicy::Always
                     ? Wrap(compactCopy(*T))
                     : py::reinterpret_borrow<py::object>(Obj);
        if (std::optional<Tensor> T = arrayToTensor(Obj.ptr(), 0, Policy))
          return Wrap(std::move(*T));
        throw py::type_error(fmt::format("vmjit.tensor: a '{}' is not a tensor",
                                         Py_TYPE(Obj.ptr())->tp_name));
      },
      py::arg("obj"), py::arg("copy") = py::none(),
      "A vmjit.Tensor over `obj` (anything with a buffer or __dlpack__): "
      "its memory when writable and compact, else a compact copy; "
      "copy=True always copies, copy=False raises BufferError instead of "
      "copying.");
  M.def(
      "_copy_elements",
      [](py::handle Dst, py::handle Src) {
        const Tensor *D = tensorOf(Dst.ptr());
        const Tensor *S = tensorOf(Src.ptr());
        if (!D || !S)
          throw py::type_error("_copy_elements takes two vmjit.Tensor");
        copyElements(*D, *S);
      },
      "Copies the elements of a tensor into another of the same shape and "
      "dtype (Tensor.copyfrom).");
}

} // namespace vmjit::python
