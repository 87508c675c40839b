//===- tensor_object.cpp - vmjit.Tensor -----------------------------------===//
//
// A tensor vmjit owns or shares, as Python sees it: shape, dtype, device,
// DLPack export (__dlpack__, __dlpack_device__) and the buffer protocol,
// both without copying, and .numpy() (a NumPy array over the same memory).
//
//===----------------------------------------------------------------------===//

#include "bindings.h"

#include "vmjit/runtime/tensor.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace vmjit::python {

namespace {

/// The struct-module format of a dtype for the buffer protocol.
const char *bufferFormat(DLDataType T) {
  if (T.lanes != 1)
    return nullptr;
  switch (T.code) {
  case kDLBool:
    return T.bits == 8 ? "?" : nullptr;
  case kDLInt:
    return T.bits == 8 ? "b" : T.bits == 16 ? "h" : T.bits == 32 ? "i"
         : T.bits == 64 ? "q" : nullptr;
  case kDLUInt:
    return T.bits == 8 ? "B" : T.bits == 16 ? "H" : T.bits == 32 ? "I"
         : T.bits == 64 ? "Q" : nullptr;
  case kDLFloat:
    return T.bits == 16 ? "e" : T.bits == 32 ? "f" : T.bits == 64 ? "d"
                                                                 : nullptr;
  default:
    return nullptr;
  }
}

py::buffer_info bufferOf(const Tensor &T) {
  const char *Format = bufferFormat(T.dtype());
  if (!Format)
    throw py::buffer_error(fmt::format(
        "a {} tensor has no buffer format (NumPy has no such dtype); export "
        "it with __dlpack__ instead",
        dtypeName(T.dtype())));
  if (T.device().device_type != kDLCPU)
    throw py::buffer_error("only CPU tensors can be viewed as buffers");
  const auto Item = static_cast<py::ssize_t>(dtypeBytes(T.dtype()));
  std::vector<py::ssize_t> Shape(T.shape().begin(), T.shape().end());
  std::vector<py::ssize_t> Strides(Shape.size());
  py::ssize_t Step = Item;
  for (size_t D = Shape.size(); D-- > 0;) {
    Strides[D] = T.dl()->strides ? T.dl()->strides[D] * Item : Step;
    Step *= Shape[D];
  }
  return py::buffer_info(T.data(), Item, Format,
                         static_cast<py::ssize_t>(Shape.size()), Shape,
                         Strides);
}

void deleteUnusedCapsule(PyObject *Cap) {
  if (PyCapsule_IsValid(Cap, "dltensor")) {
    auto *M = static_cast<DLManagedTensor *>(
        PyCapsule_GetPointer(Cap, "dltensor"));
    M->deleter(M);
  } else if (PyCapsule_IsValid(Cap, "dltensor_versioned")) {
    auto *M = static_cast<DLManagedTensorVersioned *>(
        PyCapsule_GetPointer(Cap, "dltensor_versioned"));
    M->deleter(M);
  }
}

/// __dlpack__: a versioned capsule when the consumer asks for DLPack 1.x.
py::object dlpackCapsule(const Tensor &T, py::object /*Stream*/,
                         py::object MaxVersion, py::object /*Device*/,
                         py::object /*Copy*/) {
  PyObject *Cap;
  if (!MaxVersion.is_none() && MaxVersion[py::int_(0)].cast<int>() >= 1)
    Cap = PyCapsule_New(T.toDLPackVersioned(), "dltensor_versioned",
                        deleteUnusedCapsule);
  else
    Cap = PyCapsule_New(T.toDLPack(), "dltensor", deleteUnusedCapsule);
  if (!Cap)
    throw py::error_already_set();
  return py::reinterpret_steal<py::object>(Cap);
}

std::string tensorRepr(const Tensor &T) {
  std::string Dims;
  for (int64_t D : T.shape())
    Dims += (Dims.empty() ? "" : ", ") + std::to_string(D);
  return fmt::format("<vmjit.Tensor shape=({}{}) dtype={}>", Dims,
                     T.ndim() == 1 ? "," : "", dtypeName(T.dtype()));
}

DLDataType parseDTypeOrThrow(const std::string &Name) {
  if (auto T = parseDType(Name))
    return *T;
  throw py::value_error(fmt::format("'{}' is not a dtype vmjit knows", Name));
}

} // namespace

void registerTensor(py::module_ &M) {
  py::class_<Tensor>(M, "Tensor", py::buffer_protocol(),
                     "A tensor: vmjit's memory or memory it shares with "
                     "its producer (see docs/python.md)")
      .def_buffer(&bufferOf)
      .def_property_readonly("shape",
                             [](const Tensor &T) {
                               py::tuple Out(T.ndim());
                               for (int D = 0; D < T.ndim(); ++D)
                                 Out[D] = T.shape()[D];
                               return Out;
                             })
      .def_property_readonly(
          "dtype", [](const Tensor &T) { return dtypeName(T.dtype()); })
      .def_property_readonly("ndim", &Tensor::ndim)
      .def_property_readonly("size", &Tensor::numel)
      .def_property_readonly("nbytes", &Tensor::nbytes)
      .def_property_readonly(
          "data_ptr",
          [](const Tensor &T) { return reinterpret_cast<uintptr_t>(T.data()); },
          "address of the first element")
      .def_property_readonly(
          "device",
          [](const Tensor &T) {
            return hooks().DeviceType(static_cast<int>(T.device().device_type),
                                      T.device().device_id);
          })
      .def("__dlpack__", &dlpackCapsule, py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::kw_only(),
           py::arg("dl_device") = py::none(), py::arg("copy") = py::none(),
           "Exports the tensor without copying (DLPack).")
      .def("__dlpack_device__",
           [](const Tensor &T) {
             return py::make_tuple(static_cast<int>(T.device().device_type),
                                   T.device().device_id);
           })
      .def(
          "numpy",
          [](py::object Self) {
            const Tensor &T = Self.cast<const Tensor &>();
            if (!bufferFormat(T.dtype()))
              throw py::type_error(fmt::format(
                  "a {} tensor has no NumPy dtype; export it with "
                  "__dlpack__ instead",
                  dtypeName(T.dtype())));
            return py::module_::import("numpy").attr("asarray")(Self);
          },
          "A NumPy array over the same memory (no copy).")
      .def("__repr__", &tensorRepr);

  M.def(
      "empty",
      [](std::vector<int64_t> Shape, const std::string &DType) {
        return Tensor::empty(Shape, parseDTypeOrThrow(DType));
      },
      py::arg("shape"), py::arg("dtype") = "float32",
      "A new uninitialized CPU tensor.");
  M.def(
      "tensor",
      [](py::handle Obj) {
        Any V = toAny(Obj.ptr(), 0);
        if (auto T = V.as<Tensor>())
          return *T;
        throw py::type_error(fmt::format("vmjit.tensor: a '{}' is not a tensor",
                                         Py_TYPE(Obj.ptr())->tp_name));
      },
      py::arg("obj"),
      "A vmjit.Tensor sharing the memory of `obj` (anything with __dlpack__ "
      "or a writable buffer; a read-only buffer is copied).");
}

} // namespace vmjit::python
