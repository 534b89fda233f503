// Bundles through the C++ runtime linked into the extension; model libraries through their C ABI.
#include "Models.h"

#include "tensorc/Runtime/Model.h"
#include "tensorc/Support/StrCat.h"
#include "tensorc/tensorc.h"

#include <dlfcn.h>
#include <filesystem>

namespace tensorc::python {

namespace {

namespace fs = std::filesystem;

struct DeviceChoice {
  bool cuda = false;
  int index = 0;
};

DeviceChoice parseDevice(const std::string &device) {
  if (device == "cpu")
    return {};
  if (device == "cuda")
    return {true, 0};
  if (device.rfind("cuda:", 0) == 0 && device.size() > 5 &&
      device.find_first_not_of("0123456789", 5) == std::string::npos && device.size() < 15)
    return {true, std::stoi(device.substr(5))};
  throw py::value_error("device must be 'cpu', 'cuda' or 'cuda:N', got '" + device + "'");
}

class BundleModel final : public Model {
public:
  BundleModel(std::unique_ptr<rt::Model> model, int cudaDevice) : model_(std::move(model)) {
    cudaDevice_ = cudaDevice;
    inputs_ = describe(model_->manifest().inputs);
    outputs_ = describe(model_->manifest().outputs);
  }

  std::string description() const override {
    if (cudaDevice_ >= 0)
      return model_->deviceDescription();
    return model_->variant().empty() ? "cpu" : "cpu (" + model_->variant() + ")";
  }
  void *ownStream() const override { return model_->cudaStream(); }

  std::vector<Buffer> runHost(const std::vector<Buffer> &inputs, void *cudaStream) override {
    std::vector<Tensor> views;
    for (const Buffer &input : inputs)
      views.push_back(Tensor::view(input.dtype, input.shape, nullptr, input.data));
    Expected<std::vector<Tensor>> results = model_->run(views, cudaStream);
    if (!results)
      throw RunError(results.error().message());
    std::vector<Buffer> outputs;
    for (Tensor &result : *results) {
      Buffer output;
      output.dtype = result.dtype();
      output.shape = result.shape();
      output.data = result.mutableData();
      output.owner = std::make_shared<Tensor>(std::move(result));
      outputs.push_back(std::move(output));
    }
    return outputs;
  }

  std::vector<Buffer> runOnDevice(const std::vector<Buffer> &inputs, void *cudaStream) override {
    std::vector<rt::DeviceTensor> tensors;
    for (const Buffer &input : inputs)
      tensors.push_back({input.dtype, input.shape, uint64_t(uintptr_t(input.data)), nullptr});
    Expected<std::vector<rt::DeviceTensor>> results = model_->runOnDevice(tensors, cudaStream);
    if (!results)
      throw RunError(results.error().message());
    std::vector<Buffer> outputs;
    for (rt::DeviceTensor &result : *results) {
      Buffer output;
      output.dtype = result.dtype;
      output.shape = result.shape;
      output.data = reinterpret_cast<void *>(uintptr_t(result.address));
      output.cudaDevice = cudaDevice_;
      output.owner = std::move(result.owner);
      outputs.push_back(std::move(output));
    }
    return outputs;
  }

private:
  static std::vector<TensorInfo> describe(const std::vector<bundle::TensorDesc> &descs) {
    std::vector<TensorInfo> infos;
    for (const bundle::TensorDesc &desc : descs) {
      TensorInfo info{desc.name, desc.dtype, {}, {}};
      for (const bundle::SizeExpr &dim : desc.shape) {
        std::optional<int64_t> value = dim.constantValue();
        info.dims.push_back(value.value_or(-1));
        info.symbols.push_back(value ? "" : dim.text());
      }
      infos.push_back(std::move(info));
    }
    return infos;
  }

  std::unique_ptr<rt::Model> model_;
};

/// A model library's C ABI, resolved with dlsym; the library stays loaded while any model or
/// output of it lives.
struct LibraryApi {
  void *handle = nullptr;
  std::string path;
  decltype(&tc_status_message) statusMessage = nullptr;
  decltype(&tc_status_free) statusFree = nullptr;
  decltype(&tc_model_load_on) loadOn = nullptr;
  decltype(&tc_model_free) modelFree = nullptr;
  decltype(&tc_model_num_inputs) numInputs = nullptr;
  decltype(&tc_model_num_outputs) numOutputs = nullptr;
  decltype(&tc_model_input_info) inputInfo = nullptr;
  decltype(&tc_model_output_info) outputInfo = nullptr;
  decltype(&tc_model_run_on_stream) runOnStream = nullptr;
  decltype(&tc_tensor_free) tensorFree = nullptr;

  ~LibraryApi() {
    if (handle)
      dlclose(handle);
  }

  template <typename Error> void check(tc_status *status) const {
    if (!status)
      return;
    std::string message = statusMessage(status);
    statusFree(status);
    throw Error(message);
  }
};

std::shared_ptr<LibraryApi> openLibrary(const std::string &path) {
  auto api = std::make_shared<LibraryApi>();
  // An absolute path: dlopen must not search the library path for a bare file name.
  api->path = fs::absolute(path).string();
  // RTLD_LOCAL: each model library keeps its own runtime (`--emit=so` links it -Bsymbolic).
  api->handle = dlopen(api->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!api->handle) {
    const char *error = dlerror();
    throw LoadError(strCat(path,
                           ": not a bundle directory, and cannot be loaded as a model "
                           "library: ",
                           error ? error : "dlopen failed"));
  }
  auto resolve = [&](auto &function, const char *name) {
    void *symbol = dlsym(api->handle, name);
    if (!symbol)
      throw LoadError(strCat(path, ": not a tensorc model library (no ", name,
                             "; build one with `tensorc compile --emit=so`)"));
    function = reinterpret_cast<std::remove_reference_t<decltype(function)>>(symbol);
  };
  resolve(api->statusMessage, "tc_status_message");
  resolve(api->statusFree, "tc_status_free");
  resolve(api->loadOn, "tc_model_load_on");
  resolve(api->modelFree, "tc_model_free");
  resolve(api->numInputs, "tc_model_num_inputs");
  resolve(api->numOutputs, "tc_model_num_outputs");
  resolve(api->inputInfo, "tc_model_input_info");
  resolve(api->outputInfo, "tc_model_output_info");
  resolve(api->runOnStream, "tc_model_run_on_stream");
  resolve(api->tensorFree, "tc_tensor_free");
  return api;
}

class LibraryModel final : public Model {
public:
  LibraryModel(const std::string &path, const LoadSettings &settings, DeviceChoice device)
      : api_(openLibrary(path)) {
    tc_load_options options{settings.threads,
                            settings.variant.empty() ? nullptr : settings.variant.c_str()};
    tc_device where{device.cuda ? TC_DEVICE_CUDA : TC_DEVICE_CPU, device.index,
                    settings.cudaGraphs};
    // A null path: the model embedded in the library.
    api_->check<LoadError>(api_->loadOn(nullptr, &options, &where, &model_));
    cudaDevice_ = device.cuda ? device.index : -1;
    try {
      inputs_ = describe(true);
      outputs_ = describe(false);
    } catch (...) {
      api_->modelFree(model_); // the destructor does not run for a constructor that throws
      throw;
    }
  }
  ~LibraryModel() override {
    if (model_)
      api_->modelFree(model_);
  }

  std::string description() const override { return "cpu (model library " + api_->path + ")"; }
  void *ownStream() const override { return nullptr; }

  std::vector<Buffer> runHost(const std::vector<Buffer> &inputs, void *cudaStream) override {
    std::vector<tc_tensor> tensors;
    for (const Buffer &input : inputs)
      tensors.push_back(
          {tc_dtype(input.dtype), int64_t(input.shape.size()), input.shape.data(), input.data});
    std::vector<tc_tensor> results(outputs_.size(), tc_tensor{TC_F32, 0, nullptr, nullptr});
    api_->check<RunError>(api_->runOnStream(model_, tensors.data(), tensors.size(), results.data(),
                                            results.size(), cudaStream));
    std::vector<Buffer> outputs;
    for (const tc_tensor &result : results) {
      Buffer output;
      output.dtype = DType(result.dtype);
      output.shape.assign(result.shape, result.shape + result.rank);
      output.data = result.data;
      std::shared_ptr<LibraryApi> api = api_;
      output.owner = std::shared_ptr<void>(new tc_tensor(result), [api](void *pointer) {
        auto *tensor = static_cast<tc_tensor *>(pointer);
        api->tensorFree(tensor);
        delete tensor;
      });
      outputs.push_back(std::move(output));
    }
    return outputs;
  }

  std::vector<Buffer> runOnDevice(const std::vector<Buffer> &, void *) override {
    throw RunError("model libraries run on the CPU: pass host arrays");
  }

private:
  std::vector<TensorInfo> describe(bool input) const {
    size_t count = 0;
    api_->check<LoadError>(input ? api_->numInputs(model_, &count)
                                 : api_->numOutputs(model_, &count));
    std::vector<TensorInfo> infos;
    for (size_t i = 0; i < count; ++i) {
      tc_tensor_info info{};
      api_->check<LoadError>(input ? api_->inputInfo(model_, i, &info)
                                   : api_->outputInfo(model_, i, &info));
      infos.push_back({info.name, DType(info.dtype),
                       std::vector<int64_t>(info.dims, info.dims + info.rank),
                       std::vector<std::string>(size_t(info.rank))});
    }
    return infos;
  }

  std::shared_ptr<LibraryApi> api_;
  tc_model *model_ = nullptr;
};

} // namespace

std::shared_ptr<Model> Model::load(const std::string &path, const LoadSettings &settings) {
  DeviceChoice device = parseDevice(settings.device);
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    rt::LoadOptions options;
    options.threads = settings.threads;
    options.variant = settings.variant;
    options.device = device.cuda ? "cuda" : "cpu";
    options.cudaDevice = device.index;
    options.cudaGraphs = settings.cudaGraphs;
    Expected<std::unique_ptr<rt::Model>> model = rt::Model::load(path, options);
    if (!model)
      throw LoadError(model.error().message());
    return std::make_shared<BundleModel>(std::move(*model), device.cuda ? device.index : -1);
  }
  if (!fs::exists(path, ec))
    throw LoadError(path + ": no such bundle directory or model library");
  return std::make_shared<LibraryModel>(path, settings, device);
}

} // namespace tensorc::python
