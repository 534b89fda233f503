// The C ABI (include/tensorc/tensorc.h) over rt::Model: statuses instead of Expected, no throws.
#include "tensorc/Support/Printable.h"
#include "tensorc/tensorc.h"

#include "tensorc/Bundle/EmbeddedBundle.h"
#include "tensorc/Runtime/Model.h"
#include "tensorc/Runtime/Trainer.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

struct tc_status {
  tc_status_code code;
  std::string message;
};

struct tc_model {
  std::unique_ptr<tensorc::rt::Model> model;
  std::unique_ptr<tensorc::rt::Trainer> trainer; // training bundles, made on first use
  // -1 for symbolic dims; what tc_tensor_info::dims points into.
  std::vector<std::vector<int64_t>> inputDims, outputDims;
};

namespace {

using tensorc::DType;

#define TENSORC_CHECK_DTYPE_VALUE(e, ...)                                                          \
  static_assert(int(DType::e) == int(TC_##e), "tc_dtype must follow tensorc::DType");
#define TC_Bool TC_BOOL
TENSORC_FOR_EACH_DTYPE(TENSORC_CHECK_DTYPE_VALUE)
#undef TC_Bool
#undef TENSORC_CHECK_DTYPE_VALUE
constexpr int kNumDTypes = int(DType::Bool) + 1;

// Returned when even the status cannot be allocated; tc_status_free leaves it alone.
tc_status outOfMemoryStatus{TC_OUT_OF_MEMORY, "out of memory"};

tc_status *makeStatus(tc_status_code code, const std::string &message) {
  tc_status *status = new (std::nothrow) tc_status{code, {}};
  if (!status)
    return &outOfMemoryStatus;
  try {
    status->message = tensorc::printable(message); // one line, no terminal escapes from model names
  } catch (...) {
    delete status;
    return &outOfMemoryStatus;
  }
  return status;
}

/// Runs `body` (returning tc_status*), turning any escaping exception into a status.
/// Views caller tensors as Tensors (no copy), checking dtype, rank, shape and data pointers.
tc_status *viewTensors(const tc_tensor *tensors, size_t count, const char *list,
                       std::vector<tensorc::Tensor> &views) {
  for (size_t i = 0; i < count; ++i) {
    const tc_tensor &input = tensors[i];
    std::string what = tensorc::strCat(list, "[", i, "]");
    if (int(input.dtype) < 0 || int(input.dtype) >= kNumDTypes)
      return makeStatus(TC_INVALID_ARGUMENT,
                        what + ": unknown dtype " + std::to_string(int(input.dtype)));
    if (input.rank < 0 || (input.rank > 0 && !input.shape))
      return makeStatus(TC_INVALID_ARGUMENT, what + ": bad rank or NULL shape");
    std::vector<int64_t> shape(input.shape, input.shape + input.rank);
    auto numel = tensorc::checkedNumel(shape, what);
    if (!numel)
      return makeStatus(TC_INVALID_ARGUMENT, numel.error().message());
    if (*numel != 0 && !input.data)
      return makeStatus(TC_INVALID_ARGUMENT, what + ": NULL data");
    views.push_back(
        tensorc::Tensor::view(DType(input.dtype), std::move(shape), nullptr, input.data));
  }
  return nullptr;
}

template <typename Body> tc_status *guarded(Body body) {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return &outOfMemoryStatus;
  } catch (const std::exception &error) {
    return makeStatus(TC_INTERNAL, std::string("internal error: ") + error.what());
  } catch (...) {
    return makeStatus(TC_INTERNAL, "internal error: unknown exception");
  }
}

std::vector<int64_t> signatureDims(const tensorc::bundle::TensorDesc &desc) {
  std::vector<int64_t> dims;
  for (const tensorc::bundle::SizeExpr &dim : desc.shape)
    dims.push_back(dim.constantValue().value_or(-1));
  return dims;
}

tc_status *tensorInfo(const tc_model *model, size_t index, tc_tensor_info *info, bool input) {
  if (!model || !info)
    return makeStatus(TC_INVALID_ARGUMENT, "model and info must not be NULL");
  const auto &manifest = model->model->manifest();
  const auto &descs = input ? manifest.inputs : manifest.outputs;
  const auto &dims = input ? model->inputDims : model->outputDims;
  if (index >= descs.size())
    return makeStatus(TC_INVALID_ARGUMENT,
                      tensorc::strCat(input ? "input" : "output", " index ", index,
                                      " out of range (the model has ", descs.size(), ")"));
  info->name = descs[index].name.c_str();
  info->dtype = tc_dtype(descs[index].dtype);
  info->rank = int64_t(descs[index].shape.size());
  info->dims = dims[index].data();
  return nullptr;
}

/// Releases what tc_model_run allocated for outputs [0, count) and clears them.
void releaseOutputs(tc_tensor *outputs, const std::vector<bool> &allocated) {
  for (size_t i = 0; i < allocated.size(); ++i)
    if (allocated[i])
      tc_tensor_free(&outputs[i]);
}

} // namespace

extern "C" {

tc_status_code tc_status_get_code(const tc_status *status) { return status ? status->code : TC_OK; }

const char *tc_status_message(const tc_status *status) {
  return status ? status->message.c_str() : "";
}

void tc_status_free(tc_status *status) {
  if (status != &outOfMemoryStatus)
    delete status;
}

size_t tc_dtype_size(tc_dtype dtype) {
  if (int(dtype) < 0 || int(dtype) >= kNumDTypes)
    return 0;
  return tensorc::dtypeSize(DType(dtype));
}

tc_status *tc_model_load(const char *path, const tc_load_options *options, tc_model **model) {
  return tc_model_load_on(path, options, nullptr, model);
}

tc_status *tc_model_load_on(const char *path, const tc_load_options *options,
                            const tc_device *device, tc_model **model) {
  return guarded([&]() -> tc_status * {
    if (!model)
      return makeStatus(TC_INVALID_ARGUMENT, "model must not be NULL");
    *model = nullptr;
    bool embedded = !path || !*path;
    if (embedded && !tensorc_embedded_bundle)
      return makeStatus(TC_INVALID_ARGUMENT, "path is NULL or empty, which loads the model "
                                             "embedded by `tensorc compile --emit=so`, but this "
                                             "program embeds none");
    tensorc::rt::LoadOptions loadOptions;
    if (options) {
      loadOptions.threads = options->threads;
      loadOptions.variant = options->variant ? options->variant : "";
    }
    if (device) {
      if (device->kind != TC_DEVICE_CPU && device->kind != TC_DEVICE_CUDA)
        return makeStatus(TC_INVALID_ARGUMENT,
                          "unknown device kind " + std::to_string(int(device->kind)));
      if (device->kind == TC_DEVICE_CUDA) {
        loadOptions.device = "cuda";
        loadOptions.cudaDevice = device->index;
        loadOptions.cudaGraphs = device->cuda_graphs < 0 ? -1 : device->cuda_graphs ? 1 : 0;
      }
    }
    auto loaded = embedded ? tensorc::rt::Model::loadEmbedded(loadOptions)
                           : tensorc::rt::Model::load(path, loadOptions);
    if (!loaded)
      return makeStatus(TC_LOAD_ERROR, loaded.error().message());
    auto result = std::make_unique<tc_model>();
    result->model = std::move(loaded).value();
    for (const auto &input : result->model->manifest().inputs)
      result->inputDims.push_back(signatureDims(input));
    for (const auto &output : result->model->manifest().outputs)
      result->outputDims.push_back(signatureDims(output));
    *model = result.release();
    return nullptr;
  });
}

void tc_model_free(tc_model *model) { delete model; }

tc_status *tc_model_num_inputs(const tc_model *model, size_t *count) {
  if (!model || !count)
    return makeStatus(TC_INVALID_ARGUMENT, "model and count must not be NULL");
  *count = model->model->manifest().inputs.size();
  return nullptr;
}

tc_status *tc_model_num_outputs(const tc_model *model, size_t *count) {
  if (!model || !count)
    return makeStatus(TC_INVALID_ARGUMENT, "model and count must not be NULL");
  *count = model->model->manifest().outputs.size();
  return nullptr;
}

tc_status *tc_model_input_info(const tc_model *model, size_t index, tc_tensor_info *info) {
  return guarded([&] { return tensorInfo(model, index, info, true); });
}

tc_status *tc_model_output_info(const tc_model *model, size_t index, tc_tensor_info *info) {
  return guarded([&] { return tensorInfo(model, index, info, false); });
}

tc_status *tc_model_run(tc_model *model, const tc_tensor *inputs, size_t num_inputs,
                        tc_tensor *outputs, size_t num_outputs) {
  return tc_model_run_on_stream(model, inputs, num_inputs, outputs, num_outputs, nullptr);
}

tc_status *tc_model_run_on_stream(tc_model *model, const tc_tensor *inputs, size_t num_inputs,
                                  tc_tensor *outputs, size_t num_outputs, void *cuda_stream) {
  return guarded([&]() -> tc_status * {
    if (!model || (num_inputs && !inputs) || (num_outputs && !outputs))
      return makeStatus(TC_INVALID_ARGUMENT, "model, inputs and outputs must not be NULL");
    const auto &manifest = model->model->manifest();
    if (num_outputs != manifest.outputs.size())
      return makeStatus(TC_INVALID_ARGUMENT, tensorc::strCat("expected ", manifest.outputs.size(),
                                                             " outputs, got ", num_outputs));
    std::vector<tensorc::Tensor> tensors;
    if (tc_status *bad = viewTensors(inputs, num_inputs, "inputs", tensors))
      return bad;

    // The kernels write each output where it ends up: the caller's buffer (checked against the
    // result's dtype and shape before the first launch, so a mismatch leaves every output as
    // given) or a block the library allocates; nothing is zeroed first or copied after. A
    // caller's buffer that overlaps an input or another output gets the result through the
    // library's memory and a copy instead (a kernel must not overwrite what it still reads).
    std::vector<bool> allocated(num_outputs, false);
    std::string mismatch;
    bool outOfMemory = false;
    // The caller's buffers as given, before any is written: [begin, end) of each.
    std::vector<std::pair<const char *, const char *>> given;
    for (const tensorc::Tensor &input : tensors)
      given.emplace_back(static_cast<const char *>(input.data()),
                         static_cast<const char *>(input.data()) + input.nbytes());
    for (size_t i = 0; i < num_outputs; ++i) {
      const tc_tensor &output = outputs[i];
      size_t bytes = output.data ? tc_dtype_size(output.dtype) : 0;
      for (int64_t d = 0; bytes && d < output.rank && output.shape; ++d)
        bytes *= size_t(std::max<int64_t>(output.shape[d], 0));
      given.emplace_back(static_cast<const char *>(output.data),
                         static_cast<const char *>(output.data) + bytes);
    }
    // Whether output i's buffer shares bytes with an input or another output.
    auto overlaps = [&](size_t i, const void *data, size_t bytes) {
      auto begin = static_cast<const char *>(data), end = begin + bytes;
      for (size_t g = 0; g < given.size(); ++g)
        if (g != tensors.size() + i && bytes && given[g].first < given[g].second &&
            begin < given[g].second && given[g].first < end)
          return true;
      return false;
    };
    tensorc::rt::Model::OutputMemory memory =
        [&](size_t i, tensorc::DType dtype,
            const std::vector<int64_t> &shape) -> tensorc::Expected<void *> {
      tc_tensor &output = outputs[i];
      // Sizes within the tensor limit: run() checked them before asking.
      size_t bytes = tensorc::dtypeSize(dtype);
      for (int64_t dim : shape)
        bytes *= size_t(dim);
      if (output.data) {
        bool same =
            int(output.dtype) == int(dtype) && output.rank == int64_t(shape.size()) &&
            (output.rank == 0 || output.shape) &&
            std::equal(shape.begin(), shape.end(), output.rank ? output.shape : shape.data());
        if (!same) {
          mismatch = tensorc::strCat("outputs[", i, "] ('", manifest.outputs[i].name,
                                     "'): the result is ", tensorc::describeShape(dtype, shape),
                                     ", the caller's buffer differs in dtype or shape");
          return tensorc::makeError(mismatch);
        }
        return overlaps(i, output.data, bytes) ? nullptr : output.data;
      }
      // One block: the shape, then the data at a 64-byte boundary; tc_tensor_free frees both.
      size_t header = (std::max<size_t>(shape.size(), 1) * sizeof(int64_t) + 63) / 64 * 64;
      size_t body = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
      char *block = static_cast<char *>(std::aligned_alloc(64, header + body));
      if (!block) {
        outOfMemory = true;
        return tensorc::makeError("out of memory");
      }
      int64_t *dims = reinterpret_cast<int64_t *>(block);
      std::copy(shape.begin(), shape.end(), dims);
      output.dtype = tc_dtype(dtype);
      output.rank = int64_t(shape.size());
      output.shape = dims;
      output.data = block + header;
      allocated[i] = true;
      return output.data;
    };
    auto results = model->model->run(tensors, cuda_stream, memory);
    if (!results) {
      releaseOutputs(outputs, allocated);
      if (!mismatch.empty())
        return makeStatus(TC_INVALID_ARGUMENT, mismatch);
      if (outOfMemory)
        return &outOfMemoryStatus;
      const std::string &message = results.error().message();
      bool oom = message.find("out of memory") != std::string::npos;
      return makeStatus(oom ? TC_OUT_OF_MEMORY : TC_RUN_ERROR, message);
    }
    for (size_t i = 0; i < num_outputs; ++i) {
      const tensorc::Tensor &result = (*results)[i];
      if (result.nbytes() && result.data() != outputs[i].data)
        std::memcpy(outputs[i].data, result.data(), result.nbytes());
    }
    return nullptr;
  });
}

void tc_tensor_free(tc_tensor *tensor) {
  if (!tensor)
    return;
  std::free(const_cast<int64_t *>(tensor->shape));
  tensor->shape = nullptr;
  tensor->data = nullptr;
  tensor->rank = 0;
}

} // extern "C"

namespace {
/// The model's trainer, made on first use; an error status for inference bundles.
tc_status *trainerOf(tc_model *model, tensorc::rt::Trainer *&trainer) {
  if (!model)
    return makeStatus(TC_INVALID_ARGUMENT, "model must not be NULL");
  if (!model->trainer) {
    auto made = tensorc::rt::Trainer::forModel(*model->model);
    if (!made)
      return makeStatus(TC_INVALID_ARGUMENT, made.error().message());
    model->trainer = std::move(*made);
  }
  trainer = model->trainer.get();
  return nullptr;
}
} // namespace

tc_status *tc_model_save_state(tc_model *model, const char *path) {
  return guarded([&]() -> tc_status * {
    tensorc::rt::Trainer *trainer = nullptr;
    if (tc_status *bad = trainerOf(model, trainer))
      return bad;
    if (!path)
      return makeStatus(TC_INVALID_ARGUMENT, "path must not be NULL");
    tensorc::Status saved = trainer->saveState(path);
    return saved ? nullptr : makeStatus(TC_RUN_ERROR, saved.message());
  });
}

tc_status *tc_model_load_state(tc_model *model, const char *path) {
  return guarded([&]() -> tc_status * {
    tensorc::rt::Trainer *trainer = nullptr;
    if (tc_status *bad = trainerOf(model, trainer))
      return bad;
    if (!path)
      return makeStatus(TC_INVALID_ARGUMENT, "path must not be NULL");
    tensorc::Status loaded = trainer->loadState(path);
    return loaded ? nullptr : makeStatus(TC_INVALID_ARGUMENT, loaded.message());
  });
}

tc_status *tc_model_train_step(tc_model *model, const tc_tensor *data, size_t num_data,
                               double *loss) {
  return guarded([&]() -> tc_status * {
    if ((num_data && !data) || !loss)
      return makeStatus(TC_INVALID_ARGUMENT, "data and loss must not be NULL");
    tensorc::rt::Trainer *trainer = nullptr;
    if (tc_status *bad = trainerOf(model, trainer))
      return bad;
    std::vector<tensorc::Tensor> tensors;
    if (tc_status *bad = viewTensors(data, num_data, "data", tensors))
      return bad;
    auto result = trainer->step(tensors);
    if (!result) {
      const std::string &message = result.error().message();
      bool oom = message.find("out of memory") != std::string::npos;
      return makeStatus(oom ? TC_OUT_OF_MEMORY : TC_RUN_ERROR, message);
    }
    *loss = *result;
    return nullptr;
  });
}
