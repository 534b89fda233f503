// numpy arrays and DLPack capsules in, numpy arrays and tensorc.Tensor out.
#include "Arrays.h"

#include "DLPack.h"

#include "tensorc/Support/StrCat.h"

#include <pybind11/numpy.h>
#include <pybind11/stl.h>

namespace tensorc::python {

namespace {

/// numpy's name for a dtype; null for bf16, which numpy lacks.
const char *numpyName(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "float64";
  case DType::F32:
    return "float32";
  case DType::F16:
    return "float16";
  case DType::BF16:
    return nullptr;
  case DType::I64:
    return "int64";
  case DType::I32:
    return "int32";
  case DType::I16:
    return "int16";
  case DType::I8:
    return "int8";
  case DType::U8:
    return "uint8";
  case DType::U16:
    return "uint16";
  case DType::U32:
    return "uint32";
  case DType::U64:
    return "uint64";
  case DType::Bool:
    return "bool";
  }
  return nullptr;
}

std::optional<DType> dtypeOfNumpy(const py::dtype &dtype) {
  // numpy's array-protocol string: byte order, kind, size ("<f4", "|b1"); the kernels read
  // little-endian data, so ">f4" has no dtype here.
  std::string code = dtype.attr("str").cast<std::string>();
  static const std::pair<const char *, DType> kCodes[] = {
      {"<f8", DType::F64}, {"<f4", DType::F32}, {"<f2", DType::F16}, {"<i8", DType::I64},
      {"<i4", DType::I32}, {"<i2", DType::I16}, {"|i1", DType::I8},  {"|u1", DType::U8},
      {"<u2", DType::U16}, {"<u4", DType::U32}, {"<u8", DType::U64}, {"|b1", DType::Bool}};
  for (const auto &[text, value] : kCodes)
    if (code == text)
      return value;
  return std::nullopt;
}

dlpack::DataType dlpackType(DType dtype) {
  uint8_t bits = uint8_t(dtypeSize(dtype) * 8);
  switch (dtype) {
  case DType::F64:
  case DType::F32:
  case DType::F16:
    return {dlpack::kFloat, bits, 1};
  case DType::BF16:
    return {dlpack::kBfloat, bits, 1};
  case DType::I64:
  case DType::I32:
  case DType::I16:
  case DType::I8:
    return {dlpack::kInt, bits, 1};
  case DType::U8:
  case DType::U16:
  case DType::U32:
  case DType::U64:
    return {dlpack::kUInt, bits, 1};
  case DType::Bool:
    return {dlpack::kBool, bits, 1};
  }
  return {dlpack::kFloat, bits, 1};
}

std::optional<DType> dtypeOfDLPack(dlpack::DataType type) {
  if (type.lanes != 1)
    return std::nullopt;
  for (int value = 0; value <= int(DType::Bool); ++value) {
    dlpack::DataType candidate = dlpackType(DType(value));
    if (candidate.code == type.code && candidate.bits == type.bits)
      return DType(value);
  }
  return std::nullopt;
}

std::string describeDLPackType(dlpack::DataType type) {
  return strCat("DLPack dtype (code ", int(type.code), ", ", int(type.bits), " bits, ",
                int(type.lanes), " lanes)");
}

[[noreturn]] void typeError(const std::string &message) { throw py::type_error(message); }

Input fromNumpy(py::array array, const std::string &name, bool copied) {
  std::optional<DType> dtype = dtypeOfNumpy(array.dtype());
  if (!dtype)
    typeError(strCat("input '", name, "': numpy dtype ", py::str(array.dtype()).cast<std::string>(),
                     " has no tensorc dtype"));
  constexpr int kDense =
      py::detail::npy_api::NPY_ARRAY_C_CONTIGUOUS_ | py::detail::npy_api::NPY_ARRAY_ALIGNED_;
  if ((array.flags() & kDense) != kDense) {
    array = py::module_::import("numpy").attr("ascontiguousarray")(array);
    copied = true;
  }
  Input input;
  input.buffer.dtype = *dtype;
  input.buffer.shape.assign(array.shape(), array.shape() + array.ndim());
  input.buffer.data = const_cast<void *>(array.data());
  input.copied = copied;
  input.keepAlive = std::move(array);
  return input;
}

/// A consumed DLPack capsule: its tensor, and the owner that calls the producer's deleter.
struct Imported {
  const dlpack::Tensor *tensor = nullptr;
  std::shared_ptr<void> owner;
};

template <typename Managed> std::shared_ptr<void> ownManaged(Managed *managed) {
  return std::shared_ptr<void>(managed, [](void *pointer) {
    auto *managed = static_cast<Managed *>(pointer);
    if (managed->deleter) {
      py::gil_scoped_acquire gil; // producers' deleters may release Python objects
      managed->deleter(managed);
    }
  });
}

Imported importCapsule(py::handle capsule, const std::string &name) {
  PyObject *object = capsule.ptr();
  Imported imported;
  if (PyCapsule_IsValid(object, dlpack::kVersionedCapsule)) {
    auto *managed = static_cast<dlpack::ManagedTensorVersioned *>(
        PyCapsule_GetPointer(object, dlpack::kVersionedCapsule));
    PyCapsule_SetName(object, dlpack::kUsedVersionedCapsule);
    imported.owner = ownManaged(managed);
    if (managed->version.major != 1)
      typeError(strCat("input '", name, "': DLPack version ", managed->version.major,
                       " is not supported (tensorc reads 1.x)"));
    imported.tensor = &managed->dlTensor;
  } else if (PyCapsule_IsValid(object, dlpack::kCapsule)) {
    auto *managed =
        static_cast<dlpack::ManagedTensor *>(PyCapsule_GetPointer(object, dlpack::kCapsule));
    PyCapsule_SetName(object, dlpack::kUsedCapsule);
    imported.owner = ownManaged(managed);
    imported.tensor = &managed->dlTensor;
  } else {
    typeError(strCat("input '", name, "': __dlpack__ returned no unused DLPack capsule"));
  }
  return imported;
}

/// Row-major and gapless (strides of size-1 dims do not matter).
bool isDense(const dlpack::Tensor &tensor) {
  if (!tensor.strides)
    return true;
  int64_t expected = 1;
  for (int32_t d = tensor.ndim - 1; d >= 0; --d) {
    if (tensor.shape[d] != 1 && tensor.strides[d] != expected)
      return false;
    expected *= tensor.shape[d];
  }
  return true;
}

Input fromDLPack(py::handle object, const std::string &name, int64_t cudaStream) {
  py::tuple device = object.attr("__dlpack_device__")();
  int deviceType = device[0].cast<int>();
  bool onGpu = deviceType == dlpack::kCUDA || deviceType == dlpack::kCUDAManaged;
  py::dict kwargs;
  if (onGpu)
    kwargs["stream"] = cudaStream;
  py::object capsule;
  try {
    capsule = object.attr("__dlpack__")(**kwargs, py::arg("max_version") = py::make_tuple(1, 0));
  } catch (py::error_already_set &error) {
    if (!error.matches(PyExc_TypeError))
      throw;
    capsule = object.attr("__dlpack__")(**kwargs); // a producer older than DLPack 1.0
  }
  Imported imported = importCapsule(capsule, name);
  const dlpack::Tensor &tensor = *imported.tensor;
  std::optional<DType> dtype = dtypeOfDLPack(tensor.dtype);
  if (!dtype)
    typeError(
        strCat("input '", name, "': ", describeDLPackType(tensor.dtype), " has no tensorc dtype"));
  Input input;
  input.buffer.dtype = *dtype;
  input.buffer.shape.assign(tensor.shape, tensor.shape + tensor.ndim);
  input.buffer.data = static_cast<char *>(tensor.data) + tensor.byteOffset;
  input.buffer.owner = std::move(imported.owner);
  switch (tensor.device.deviceType) {
  case dlpack::kCPU:
  case dlpack::kCUDAHost:
    if (!isDense(tensor)) {
      // numpy reads the strides; the copy is dense.
      input.buffer.owner.reset();
      py::object view = py::module_::import("numpy").attr("from_dlpack")(object);
      return fromNumpy(py::reinterpret_borrow<py::array>(view), name, /*copied=*/true);
    }
    break;
  case dlpack::kCUDA:
  case dlpack::kCUDAManaged:
    if (!isDense(tensor))
      throw RunError(strCat("input '", name, "' is a strided view in cuda:", tensor.device.deviceId,
                            " memory: pass a contiguous tensor (e.g. x.contiguous())"));
    input.buffer.cudaDevice = tensor.device.deviceId;
    break;
  default:
    typeError(strCat("input '", name, "' is in DLPack device type ", tensor.device.deviceType,
                     " memory, which tensorc cannot read (only the host and CUDA devices)"));
  }
  input.keepAlive = py::reinterpret_borrow<py::object>(object);
  return input;
}

/// What a tensorc.Tensor gives to a DLPack consumer: one per __dlpack__ call.
struct Export {
  Buffer buffer;
  std::vector<int64_t> shape, strides;
  dlpack::ManagedTensor legacy{};
  dlpack::ManagedTensorVersioned versioned{};

  explicit Export(Buffer from) : buffer(std::move(from)), shape(buffer.shape) {
    strides.resize(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      strides[d] = stride;
      stride *= shape[d];
    }
    dlpack::Tensor tensor{};
    tensor.data = buffer.data;
    tensor.device = buffer.cudaDevice < 0 ? dlpack::Device{dlpack::kCPU, 0}
                                          : dlpack::Device{dlpack::kCUDA, buffer.cudaDevice};
    tensor.ndim = int32_t(shape.size());
    tensor.dtype = dlpackType(buffer.dtype);
    tensor.shape = shape.data();
    tensor.strides = strides.data();
    tensor.byteOffset = 0;
    legacy = {tensor, this, [](dlpack::ManagedTensor *self) {
                delete static_cast<Export *>(self->managerContext);
              }};
    versioned.version = {1, 0};
    versioned.managerContext = this;
    versioned.deleter = [](dlpack::ManagedTensorVersioned *self) {
      delete static_cast<Export *>(self->managerContext);
    };
    versioned.flags = 0;
    versioned.dlTensor = tensor;
  }
};

/// A capsule a consumer renames once it owns the tensor; one still named as made is released here.
template <typename Managed>
py::object makeCapsule(Managed *managed, const char *name, void (*destructor)(PyObject *)) {
  PyObject *capsule = PyCapsule_New(managed, name, destructor);
  if (!capsule) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::object>(capsule);
}

void releaseLegacy(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::kCapsule)) {
    auto *managed =
        static_cast<dlpack::ManagedTensor *>(PyCapsule_GetPointer(capsule, dlpack::kCapsule));
    managed->deleter(managed);
  }
}

void releaseVersioned(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, dlpack::kVersionedCapsule)) {
    auto *managed = static_cast<dlpack::ManagedTensorVersioned *>(
        PyCapsule_GetPointer(capsule, dlpack::kVersionedCapsule));
    managed->deleter(managed);
  }
}

py::object toDLPack(const Buffer &buffer, py::object stream, py::object maxVersion,
                    py::object dlDevice, py::object copy) {
  (void)stream; // outputs are complete when run() returns: no stream has anything to wait for
  if (!copy.is_none() && copy.cast<bool>())
    throw py::buffer_error("tensorc.Tensor cannot copy itself for DLPack; pass copy=None");
  if (!dlDevice.is_none()) {
    py::tuple wanted = dlDevice;
    int type = wanted[0].cast<int>(), id = wanted[1].cast<int>();
    bool same = buffer.cudaDevice < 0 ? type == dlpack::kCPU
                                      : type == dlpack::kCUDA && id == buffer.cudaDevice;
    if (!same)
      throw py::buffer_error("tensorc.Tensor on " + buffer.deviceName() +
                             " cannot be exported to another device");
  }
  auto *context = new Export(buffer);
  bool versioned = !maxVersion.is_none() && py::tuple(maxVersion)[0].cast<int>() >= 1;
  if (versioned)
    return makeCapsule(&context->versioned, dlpack::kVersionedCapsule, releaseVersioned);
  return makeCapsule(&context->legacy, dlpack::kCapsule, releaseLegacy);
}

py::array numpyView(const Buffer &buffer) {
  const char *name = numpyName(buffer.dtype);
  std::vector<py::ssize_t> shape(buffer.shape.begin(), buffer.shape.end());
  std::vector<py::ssize_t> strides(shape.size());
  py::ssize_t stride = py::ssize_t(dtypeSize(buffer.dtype));
  for (size_t d = shape.size(); d-- > 0;) {
    strides[d] = stride;
    stride *= shape[d];
  }
  py::capsule owner(new Buffer(buffer),
                    [](void *pointer) { delete static_cast<Buffer *>(pointer); });
  return py::array(py::dtype(name), shape, strides, buffer.data, owner);
}

std::string describe(const Buffer &buffer) {
  std::string dims;
  for (size_t d = 0; d < buffer.shape.size(); ++d)
    dims += (d ? ", " : "") + std::to_string(buffer.shape[d]);
  return strCat("tensorc.Tensor(", dtypeName(buffer.dtype), "[", dims, "], device='",
                buffer.deviceName(), "')");
}

} // namespace

int64_t Buffer::numel() const {
  int64_t count = 1;
  for (int64_t dim : shape)
    count *= dim;
  return count;
}

std::string Buffer::deviceName() const {
  return cudaDevice < 0 ? "cpu" : "cuda:" + std::to_string(cudaDevice);
}

Input takeInput(py::handle object, const std::string &name, std::optional<DType> expected,
                int64_t cudaStream) {
  if (py::isinstance<py::array>(object))
    return fromNumpy(py::reinterpret_borrow<py::array>(object), name, /*copied=*/false);
  if (py::hasattr(object, "__dlpack__") && py::hasattr(object, "__dlpack_device__"))
    return fromDLPack(object, name, cudaStream);
  // Lists, scalars, objects with __array__: numpy makes an array of the model's dtype.
  py::object dtype = py::none();
  if (expected) {
    const char *numpy = numpyName(*expected);
    if (!numpy)
      typeError(strCat("input '", name, "' is ", dtypeName(*expected),
                       ", which numpy lacks: pass a DLPack tensor (e.g. a torch.bfloat16 one)"));
    dtype = py::str(numpy);
  }
  py::object array = py::module_::import("numpy").attr("ascontiguousarray")(object, dtype);
  return fromNumpy(py::reinterpret_borrow<py::array>(array), name, /*copied=*/true);
}

py::object giveOutput(Buffer buffer) {
  if (buffer.cudaDevice < 0 && numpyName(buffer.dtype))
    return numpyView(buffer);
  return py::cast(std::move(buffer));
}

void defineTensor(py::module_ &module) {
  py::class_<Buffer>(module, "Tensor",
                     "A model output that numpy cannot hold (device memory, bfloat16). It is a "
                     "DLPack producer: torch.from_dlpack(t) or cupy.from_dlpack(t) use its memory "
                     "without a copy.")
      .def_property_readonly("shape",
                             [](const Buffer &b) {
                               py::tuple shape(b.shape.size());
                               for (size_t d = 0; d < b.shape.size(); ++d)
                                 shape[d] = py::int_(b.shape[d]);
                               return shape;
                             })
      .def_property_readonly("dtype",
                             [](const Buffer &b) { return std::string(dtypeName(b.dtype)); })
      .def_property_readonly("device", &Buffer::deviceName)
      .def_property_readonly(
          "data_ptr", [](const Buffer &b) { return reinterpret_cast<uintptr_t>(b.data); },
          "The address of the first element (host or device).")
      .def("__dlpack__", &toDLPack, py::kw_only(), py::arg("stream") = py::none(),
           py::arg("max_version") = py::none(), py::arg("dl_device") = py::none(),
           py::arg("copy") = py::none())
      .def("__dlpack_device__",
           [](const Buffer &b) {
             return b.cudaDevice < 0 ? py::make_tuple(dlpack::kCPU, 0)
                                     : py::make_tuple(dlpack::kCUDA, b.cudaDevice);
           })
      .def(
          "numpy",
          [](const Buffer &b) {
            if (b.cudaDevice >= 0)
              throw py::type_error(describe(b) + " is in GPU memory: use torch.from_dlpack or "
                                                 "cupy.from_dlpack");
            if (!numpyName(b.dtype))
              throw py::type_error(describe(b) + ": numpy has no " +
                                   std::string(dtypeName(b.dtype)) + "; use torch.from_dlpack");
            return numpyView(b);
          },
          "A numpy array sharing the memory (host tensors of numpy's dtypes).")
      .def("__repr__", &describe);
}

} // namespace tensorc::python
