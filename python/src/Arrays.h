// Tensors crossing into and out of Python: numpy arrays and DLPack producers (torch, cupy, jax)
// in; numpy arrays and tensorc.Tensor (a DLPack producer) out, sharing memory wherever they can.
#pragma once

#include "tensorc/Support/DType.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tensorc::python {

namespace py = pybind11;

/// Raised as tensorc.LoadError / tensorc.RunError (both tensorc.Error), carrying the runtime's
/// message.
struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct RunError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Dense row-major bytes on the host or a CUDA device, and whatever keeps them alive.
struct Buffer {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  void *data = nullptr; // a host pointer, or a device address
  int cudaDevice = -1;  // -1: host memory
  std::shared_ptr<void> owner;

  int64_t numel() const;
  /// "cpu" or "cuda:N".
  std::string deviceName() const;
};

/// A model input as the model will read it, and the Python objects it borrows from.
struct Input {
  Buffer buffer;
  bool copied = false; // the data had to be copied (strided, or not an array)
  py::object keepAlive;
};

/// Takes input `name` for a model: a numpy array (used in place when C-contiguous and aligned,
/// copied otherwise); any object with __dlpack__ (used in place when dense; strided host memory
/// is copied, strided device memory is an error); anything else through numpy.asarray, converted
/// to `expected` (a copy). `cudaStream` is what DLPack producers on a GPU are asked to order
/// their work before (the stream the model will run on; DLPack's numbering: 1 = legacy default).
/// Dtypes are never converted for arrays: the model's checks report a mismatch.
Input takeInput(py::handle object, const std::string &name, std::optional<DType> expected,
                int64_t cudaStream);

/// An output for Python: a numpy array sharing the buffer for host memory of a dtype numpy has, a
/// tensorc.Tensor otherwise (bf16, device memory).
py::object giveOutput(Buffer buffer);

/// tensorc.Tensor.
void defineTensor(py::module_ &module);

} // namespace tensorc::python
