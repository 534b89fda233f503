// Weight sources: a safetensors file mapping, safetensors bytes in memory, or none.
#include "WeightSource.h"

#include "tensorc/Support/Safetensors.h"

namespace tensorc::rt {

namespace {

class TensorMapSource final : public WeightSource {
public:
  TensorMapSource(std::map<std::string, Tensor> tensors, std::string origin)
      : tensors_(std::move(tensors)), origin_(std::move(origin)) {}
  const std::map<std::string, Tensor> &tensors() const override { return tensors_; }
  const std::string &origin() const override { return origin_; }

private:
  std::map<std::string, Tensor> tensors_;
  std::string origin_;
};

} // namespace

Expected<std::unique_ptr<WeightSource>> viewWeightBytes(const void *data, size_t size,
                                                        std::string origin) {
  // The file reader's parser and checks, over bytes the caller keeps alive.
  Expected<std::map<std::string, Tensor>> tensors = parseSafetensors(data, size, nullptr);
  if (!tensors)
    return tensors.takeError().withContext(origin);
  return std::unique_ptr<WeightSource>(new TensorMapSource(std::move(*tensors), origin));
}

Expected<std::unique_ptr<WeightSource>> openWeightFile(const std::string &path) {
  TC_ASSIGN_OR_RETURN(auto tensors, readSafetensors(path));
  return std::unique_ptr<WeightSource>(new TensorMapSource(std::move(tensors), path));
}

std::unique_ptr<WeightSource> emptyWeights() {
  return std::make_unique<TensorMapSource>(std::map<std::string, Tensor>{}, "<no weights>");
}

} // namespace tensorc::rt
