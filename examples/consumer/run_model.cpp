// Runs a compiled tensorc bundle with the runtime's C++ API:
//   run_model BUNDLE INPUTS.safetensors OUTPUTS.safetensors
// reads one tensor per model input (by name), runs the model and writes its outputs by name.
#include <tensorc/Runtime/Model.h>
#include <tensorc/Support/Safetensors.h>

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace {

int fail(const std::string &message) {
  std::fprintf(stderr, "run_model: %s\n", message.c_str());
  return 1;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 4)
    return fail("usage: run_model BUNDLE INPUTS.safetensors OUTPUTS.safetensors");
  tensorc::Expected<std::unique_ptr<tensorc::rt::Model>> model = tensorc::rt::Model::load(argv[1]);
  if (!model)
    return fail(model.error().message());
  auto tensors = tensorc::readSafetensors(argv[2]);
  if (!tensors)
    return fail(tensors.error().message());

  std::vector<tensorc::Tensor> inputs;
  for (const tensorc::bundle::TensorDesc &input : (*model)->manifest().inputs) {
    auto found = tensors->find(input.name);
    if (found == tensors->end())
      return fail(std::string(argv[2]) + " has no tensor '" + input.name + "'");
    inputs.push_back(found->second);
  }
  tensorc::Expected<std::vector<tensorc::Tensor>> outputs = (*model)->run(inputs);
  if (!outputs)
    return fail(outputs.error().message());

  std::vector<std::pair<std::string, tensorc::Tensor>> named;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const std::string &name = (*model)->manifest().outputs[i].name;
    const tensorc::Tensor &output = (*outputs)[i];
    std::printf("%s: %s\n", name.c_str(),
                tensorc::describeShape(output.dtype(), output.shape()).c_str());
    named.emplace_back(name, output);
  }
  if (tensorc::Status written = tensorc::writeSafetensors(argv[3], named); !written)
    return fail(written.message());
  return 0;
}
