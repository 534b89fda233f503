// ONNX TensorProto/type conversions, with the external-data and size checks untrusted files need.
#pragma once

#include "tensorc/IR/Type.h"
#include "tensorc/Support/Tensor.h"

#include <onnx/onnx_pb.h>
#include <optional>
#include <string>

namespace tensorc::onnx {

/// ONNX elem_type -> DType; nullopt for types tensorc does not support (strings, uint32, ...).
std::optional<DType> dtypeFromOnnx(int32_t elemType);
/// Name of an ONNX elem_type for messages ("STRING", "UINT64").
std::string onnxTypeName(int32_t elemType);

/// Converts a TensorProto. `modelDir` resolves external data (empty: external data refused).
/// Checks dims (non-negative, product without overflow), that raw_data or the typed field holds
/// exactly dims x element size, and for external data that `location` is a relative path that
/// stays inside `modelDir` (no '..', no absolute path, no symlink or hard link leaving it) and
/// that offset/length lie inside the file. `what` names the tensor in errors.
Expected<Tensor> tensorFromProto(const ::onnx::TensorProto &proto, const std::string &modelDir,
                                 const std::string &what);

} // namespace tensorc::onnx
