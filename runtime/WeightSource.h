// Where a model's weights live: a mapped weights.safetensors, or bytes embedded in the model's
// image.
#pragma once

#include "tensorc/Support/Tensor.h"

#include <map>
#include <memory>
#include <string>

namespace tensorc::rt {

/// Named weight tensors; each keeps its bytes alive for as long as the tensor is held.
class WeightSource {
public:
  virtual ~WeightSource() = default;
  virtual const std::map<std::string, Tensor> &tensors() const = 0;
  /// For messages: the file, or "<embedded>".
  virtual const std::string &origin() const = 0;
};

/// Maps a .safetensors file read-only.
Expected<std::unique_ptr<WeightSource>> openWeightFile(const std::string &path);

/// Views safetensors bytes that outlive the source (a model library's embedded weights) in place:
/// nothing is copied. `origin` names them in messages.
Expected<std::unique_ptr<WeightSource>> viewWeightBytes(const void *data, size_t size,
                                                        std::string origin);

/// No weights (a bundle whose plan reads none).
std::unique_ptr<WeightSource> emptyWeights();

} // namespace tensorc::rt
