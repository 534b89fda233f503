// tensorc._tensorc: the Python bindings (tensorc.load, Model, Tensor and the errors); the package
// around it is python/tensorc.
#include "Arrays.h"
#include "Models.h"

#include "tensorc/Support/StrCat.h"

#include <pybind11/stl.h>

#include <algorithm>

#ifndef TENSORC_VERSION
#error "TENSORC_VERSION must be the project version"
#endif

namespace tensorc::python {

namespace {

/// The Python object: a model, and how many inputs it had to copy (tests check that dense arrays
/// are used in place).
struct PyModel {
  std::shared_ptr<Model> model;
  std::string path;
  int64_t inputCopies = 0;
};

py::list shapeOf(const TensorInfo &info) {
  py::list shape;
  for (size_t d = 0; d < info.dims.size(); ++d) {
    if (info.dims[d] >= 0)
      shape.append(info.dims[d]);
    else if (!info.symbols[d].empty())
      shape.append(info.symbols[d]);
    else
      shape.append(py::none());
  }
  return shape;
}

std::string describeInfo(const TensorInfo &info) {
  return strCat("TensorInfo(name='", info.name, "', dtype='", dtypeName(info.dtype),
                "', shape=", py::repr(shapeOf(info)).cast<std::string>(), ")");
}

std::string inputNames(const Model &model) {
  std::vector<std::string> names;
  for (const TensorInfo &info : model.inputs())
    names.push_back(info.name);
  return join(names, ", ");
}

/// The inputs in signature order: positional, or one dict by name.
std::vector<py::object> gatherInputs(const Model &model, const py::args &args) {
  const std::vector<TensorInfo> &infos = model.inputs();
  std::vector<py::object> inputs;
  if (args.size() == 1 && py::isinstance<py::dict>(args[0])) {
    py::dict byName = args[0];
    for (const TensorInfo &info : infos) {
      if (!byName.contains(info.name))
        throw RunError(strCat("missing input '", info.name,
                              "' (the model's inputs: ", inputNames(model), ")"));
      inputs.push_back(byName[py::str(info.name)]);
    }
    for (auto item : byName) {
      std::string key = py::str(item.first).cast<std::string>();
      bool known = std::any_of(infos.begin(), infos.end(),
                               [&](const TensorInfo &info) { return info.name == key; });
      if (!known)
        throw RunError(
            strCat("unknown input '", key, "' (the model's inputs: ", inputNames(model), ")"));
    }
    return inputs;
  }
  if (args.size() != infos.size())
    throw RunError(
        strCat("expected ", infos.size(), " inputs (", inputNames(model), "), got ", args.size()));
  for (py::handle arg : args)
    inputs.push_back(py::reinterpret_borrow<py::object>(arg));
  return inputs;
}

py::list run(PyModel &self, const py::args &args, const py::object &stream) {
  Model &model = *self.model;
  // The stream the work is queued on; DLPack producers on the GPU order their work before it.
  // DLPack numbers the legacy default stream 1, so a 0 from torch's default stream becomes that
  // (CU_STREAM_LEGACY is 1 for the driver too).
  void *runStream = nullptr;
  int64_t dlpackStream = 1;
  if (!stream.is_none()) {
    int64_t value = stream.cast<int64_t>();
    dlpackStream = value == 0 ? 1 : value;
    runStream = reinterpret_cast<void *>(uintptr_t(dlpackStream));
  } else if (void *own = model.ownStream()) {
    dlpackStream = int64_t(uintptr_t(own));
  }

  std::vector<py::object> objects = gatherInputs(model, args);
  std::vector<Input> inputs;
  for (size_t i = 0; i < objects.size(); ++i) {
    const TensorInfo &info = model.inputs()[i];
    inputs.push_back(takeInput(objects[i], info.name, info.dtype, dlpackStream));
  }
  const Input *onDevice = nullptr, *onHost = nullptr;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Buffer &buffer = inputs[i].buffer;
    self.inputCopies += inputs[i].copied;
    const std::string &name = model.inputs()[i].name;
    if (buffer.cudaDevice < 0) {
      onHost = onHost ? onHost : &inputs[i];
    } else {
      onDevice = onDevice ? onDevice : &inputs[i];
      if (model.cudaDevice() < 0)
        throw RunError(strCat("input '", name, "' is in ", buffer.deviceName(),
                              " memory, but the model runs on the CPU (load it with "
                              "device='cuda')"));
      if (buffer.cudaDevice != model.cudaDevice())
        throw RunError(strCat("input '", name, "' is in ", buffer.deviceName(),
                              " memory, but the model runs on cuda:", model.cudaDevice()));
    }
  }
  if (onDevice && onHost)
    throw RunError(strCat("input '", model.inputs()[size_t(onHost - inputs.data())].name,
                          "' is in host memory but input '",
                          model.inputs()[size_t(onDevice - inputs.data())].name, "' in ",
                          onDevice->buffer.deviceName(),
                          " memory: pass every input on one "
                          "device"));

  std::vector<Buffer> buffers;
  for (const Input &input : inputs)
    buffers.push_back(input.buffer);
  std::vector<Buffer> outputs;
  {
    py::gil_scoped_release release;
    outputs = onDevice ? model.runOnDevice(buffers, runStream) : model.runHost(buffers, runStream);
  }
  py::list results;
  for (Buffer &output : outputs)
    results.append(giveOutput(std::move(output)));
  return results;
}

} // namespace

} // namespace tensorc::python

PYBIND11_MODULE(_tensorc, module) {
  using namespace tensorc::python;
  module.doc() = "tensorc's runtime for Python (use the tensorc package).";
  module.attr("__version__") = TENSORC_VERSION;

  static py::exception<void> error(module, "Error", PyExc_RuntimeError);
  error.doc() = "A tensorc error; the message is the runtime's or the compiler's.";
  py::register_exception<LoadError>(module, "LoadError", error.ptr());
  py::register_exception<RunError>(module, "RunError", error.ptr());

  defineTensor(module);

  py::class_<TensorInfo>(module, "TensorInfo", "An input or output of a model's signature.")
      .def_readonly("name", &TensorInfo::name)
      .def_property_readonly(
          "dtype", [](const TensorInfo &info) { return std::string(dtypeName(info.dtype)); })
      .def_property_readonly("shape", &shapeOf,
                             "Dims: ints, a symbolic dim's name (bundles) or None (model "
                             "libraries).")
      .def("__repr__", &describeInfo);

  py::class_<PyModel>(module, "Model", "A compiled model, loaded with tensorc.load.")
      .def_property_readonly("inputs", [](const PyModel &self) { return self.model->inputs(); })
      .def_property_readonly("outputs", [](const PyModel &self) { return self.model->outputs(); })
      .def_property_readonly("device",
                             [](const PyModel &self) {
                               int device = self.model->cudaDevice();
                               return device < 0 ? std::string("cpu")
                                                 : "cuda:" + std::to_string(device);
                             })
      .def_property_readonly("description",
                             [](const PyModel &self) { return self.model->description(); })
      .def_readonly("path", &PyModel::path)
      .def_readonly("input_copies", &PyModel::inputCopies,
                    "How many inputs so far had to be copied (strided or not arrays).")
      .def("run", &run, py::kw_only(), py::arg("stream") = py::none(),
           "run(*inputs, stream=None) or run({name: input}) -> list of outputs.\n\n"
           "Inputs are numpy arrays or DLPack tensors (torch, cupy, jax), used in place when "
           "dense; lists and scalars are converted to the input's dtype. Host inputs give numpy "
           "outputs (tensorc.Tensor for bfloat16); inputs in the model's GPU memory give "
           "tensorc.Tensor outputs in that memory, with nothing copied. `stream` is a CUDA "
           "stream handle to queue the work on (e.g. torch.cuda.current_stream().cuda_stream).")
      .def("__call__", &run, py::kw_only(), py::arg("stream") = py::none())
      .def("__repr__", [](const PyModel &self) {
        return "tensorc.Model('" + self.path + "', device='" +
               (self.model->cudaDevice() < 0 ? std::string("cpu")
                                             : "cuda:" + std::to_string(self.model->cudaDevice())) +
               "')";
      });

  module.def(
      "load",
      [](const std::string &path, const std::string &device, int threads,
         const std::optional<std::string> &variant, const std::optional<bool> &cudaGraphs) {
        LoadSettings settings;
        settings.device = device;
        if (threads < 0)
          throw py::value_error("threads must be 0 (one per core) or positive");
        settings.threads = threads;
        settings.variant = variant.value_or("");
        settings.cudaGraphs = cudaGraphs ? int(*cudaGraphs) : -1;
        PyModel model;
        {
          py::gil_scoped_release release;
          model.model = Model::load(path, settings);
        }
        model.path = path;
        return model;
      },
      py::arg("path"), py::arg("device") = "cpu", py::kw_only(), py::arg("threads") = 0,
      py::arg("variant") = py::none(), py::arg("cuda_graphs") = py::none());
}
