//===- tensor_object.cpp - vmjit.Tensor -----------------------------------===//
//
// A tensor vmjit owns or shares, as Python sees it: shape, dtype, device,
// DLPack export (__dlpack__, __dlpack_device__) and the buffer protocol,
// both without copying, and .numpy() (a NumPy array over the same memory).
// A CPython type rather than a pybind11 class: every tensor a call returns
// is wrapped in one, and pybind11's instance bookkeeping would double the
// cost of such a call.
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/runtime/tensor.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

#include <new>

namespace vmjit::python {

namespace {

/// The buffer protocol's (struct module's) format characters, one row per
/// dtype; the first row of a dtype is the one exported. 'l' and 'L' are
/// what NumPy gives for int64 and uint64 on LP64 hosts.
struct BufferFormatRow {
  const char *Code;
  DLDataType Type;
};
constexpr BufferFormatRow kBufferFormats[] = {
    {"?", dtype::Bool},    {"b", dtype::Int8},    {"h", dtype::Int16},
    {"i", dtype::Int32},   {"q", dtype::Int64},   {"l", dtype::Int64},
    {"B", dtype::UInt8},   {"H", dtype::UInt16},  {"I", dtype::UInt32},
    {"Q", dtype::UInt64},  {"L", dtype::UInt64},  {"e", dtype::Float16},
    {"f", dtype::Float32}, {"d", dtype::Float64},
};

} // namespace

const char *bufferFormat(DLDataType T) {
  for (const BufferFormatRow &R : kBufferFormats)
    if (R.Type == T)
      return R.Code;
  return nullptr;
}

std::optional<DLDataType> bufferDType(const Py_buffer &B) {
  const char *F = B.format ? B.format : "B";
  if (*F == '@' || *F == '=' || *F == '<')
    ++F;
  if (!*F || F[1])
    return std::nullopt;
  for (const BufferFormatRow &R : kBufferFormats)
    if (R.Code[0] == *F &&
        static_cast<size_t>(B.itemsize) == dtypeBytes(R.Type))
      return R.Type;
  return std::nullopt;
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

int getBuffer(PyObject *Obj, Py_buffer *View, int Flags) {
  const Tensor &T = self(Obj);
  const char *Format = bufferFormat(T.dtype());
  if (!Format || T.device().device_type != kDLCPU) {
    PyErr_Format(PyExc_BufferError,
                 "a %s tensor has no buffer format (NumPy has no such "
                 "dtype); export it with __dlpack__ instead",
                 dtypeName(T.dtype()).c_str());
    return -1;
  }
  const int N = T.ndim();
  const auto Item = static_cast<Py_ssize_t>(dtypeBytes(T.dtype()));
  // Shape and strides, alive until releaseBuffer.
  auto *Dims = new Py_ssize_t[2 * static_cast<size_t>(N) + 1];
  Py_ssize_t *Strides = Dims + N;
  Py_ssize_t Step = Item;
  for (int D = N; D-- > 0;) {
    Dims[D] = static_cast<Py_ssize_t>(T.shape()[D]);
    Strides[D] = T.dl()->strides ? T.dl()->strides[D] * Item : Step;
    Step *= Dims[D];
  }
  View->buf = T.data();
  View->obj = Py_NewRef(Obj);
  View->len = static_cast<Py_ssize_t>(T.numel()) * Item;
  View->itemsize = Item;
  View->readonly = 0;
  View->ndim = N;
  View->format = (Flags & PyBUF_FORMAT) ? const_cast<char *>(Format) : nullptr;
  View->shape = (Flags & PyBUF_ND) == PyBUF_ND ? Dims : nullptr;
  View->strides = (Flags & PyBUF_STRIDES) == PyBUF_STRIDES ? Strides : nullptr;
  View->suboffsets = nullptr;
  View->internal = Dims;
  if (!View->strides && !T.isContiguous()) {
    delete[] Dims;
    Py_CLEAR(View->obj);
    PyErr_SetString(PyExc_BufferError, "the tensor is not contiguous");
    return -1;
  }
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

/// __dlpack__(*, stream, max_version, dl_device, copy): a versioned
/// capsule when the consumer asks for DLPack 1.x.
PyObject *dlpack(PyObject *Obj, PyObject *Args, PyObject *Kwargs) {
  static const char *Names[] = {"stream", "max_version", "dl_device", "copy",
                                nullptr};
  PyObject *Stream = nullptr, *MaxVersion = nullptr, *Device = nullptr,
           *Copy = nullptr;
  if (!PyArg_ParseTupleAndKeywords(Args, Kwargs, "|O$OOO:__dlpack__",
                                   const_cast<char **>(Names), &Stream,
                                   &MaxVersion, &Device, &Copy))
    return nullptr;
  int Major = 0;
  if (MaxVersion && MaxVersion != Py_None) {
    PyObject *First = PySequence_GetItem(MaxVersion, 0);
    if (!First)
      return nullptr;
    Major = static_cast<int>(PyLong_AsLong(First));
    Py_DECREF(First);
    if (Major == -1 && PyErr_Occurred())
      return nullptr;
  }
  try {
    if (Major >= 1)
      return PyCapsule_New(self(Obj).toDLPackVersioned(), "dltensor_versioned",
                           deleteUnusedCapsule);
    return PyCapsule_New(self(Obj).toDLPack(), "dltensor",
                         deleteUnusedCapsule);
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

PyObject *repr(PyObject *Obj) {
  const Tensor &T = self(Obj);
  std::string Dims;
  for (int64_t D : T.shape())
    Dims += (Dims.empty() ? "" : ", ") + std::to_string(D);
  std::string S = fmt::format("<vmjit.Tensor shape=({}{}) dtype={}>", Dims,
                              T.ndim() == 1 ? "," : "", dtypeName(T.dtype()));
  return PyUnicode_FromStringAndSize(S.data(),
                                     static_cast<Py_ssize_t>(S.size()));
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
    {Py_tp_repr, reinterpret_cast<void *>(repr)},
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
  M.def(
      "tensor",
      [Wrap](py::handle Obj) {
        Any V = toAny(Obj.ptr(), 0);
        if (auto T = V.as<Tensor>())
          return Wrap(std::move(*T));
        throw py::type_error(fmt::format("vmjit.tensor: a '{}' is not a tensor",
                                         Py_TYPE(Obj.ptr())->tp_name));
      },
      py::arg("obj"),
      "A vmjit.Tensor sharing the memory of `obj` (anything with __dlpack__ "
      "or a writable buffer; a read-only buffer is copied).");
}

} // namespace vmjit::python
