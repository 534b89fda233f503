// Writing manifest.json.
#include "ManifestJson.h"

namespace tensorc::bundle {

namespace {

Json tensorJson(const TensorDesc &tensor) {
  Json json = Json::object();
  json["name"] = tensor.name;
  json["dtype"] = std::string(dtypeName(tensor.dtype));
  json["shape"] = exprListJson(tensor.shape);
  return json;
}

} // namespace

Json Manifest::toJson() const {
  Json json = Json::object();
  json["format_version"] = formatVersion;
  json["tensorc_version"] = tensorcVersion;
  json["source_hash"] = sourceHash;
  json["model"] = model;
  Json symbolList = Json::array();
  for (const std::string &symbol : symbols)
    symbolList.push(symbol);
  json["symbols"] = std::move(symbolList);
  Json inputList = Json::array(), outputList = Json::array();
  for (const TensorDesc &input : inputs)
    inputList.push(tensorJson(input));
  for (const TensorDesc &output : outputs)
    outputList.push(tensorJson(output));
  json["inputs"] = std::move(inputList);
  json["outputs"] = std::move(outputList);

  Json bufferList = Json::array();
  for (const BufferDesc &buffer : buffers) {
    Json item = Json::object();
    item["id"] = buffer.id;
    item["name"] = buffer.name;
    item["kind"] = bufferKindName(buffer.kind);
    item["dtype"] = std::string(dtypeName(buffer.dtype));
    item["shape"] = exprListJson(buffer.shape);
    switch (buffer.kind) {
    case BufferKind::Input:
    case BufferKind::Output:
      item["index"] = buffer.index;
      break;
    case BufferKind::Weight:
      item["weight"] = buffer.weight;
      break;
    case BufferKind::Arena:
      item["offset"] = exprJson(buffer.offset);
      break;
    }
    bufferList.push(std::move(item));
  }
  json["buffers"] = std::move(bufferList);
  json["arena_bytes"] = exprJson(arenaBytes);
  json["peak_bytes"] = peakBytes;

  Json launchList = Json::array();
  for (const Launch &launch : launches) {
    Json item = Json::object();
    item["kind"] = launchKindName(launch.kind);
    item["name"] = launch.name;
    Json args = Json::array();
    for (int64_t arg : launch.args)
      args.push(arg);
    item["args"] = std::move(args);
    switch (launch.kind) {
    case LaunchKind::Kernel:
      item["range"] = exprJson(launch.range);
      item["grain"] = launch.grain;
      if (launch.cudaBlock > 0) {
        item["cuda_grid"] = exprJson(launch.cudaGrid);
        writeCudaLaunchShape(item, launch);
        if (!launch.cudaSymbol.empty())
          item["cuda_symbol"] = launch.cudaSymbol;
        if (launch.cudaModule != 0)
          item["cuda_module"] = launch.cudaModule;
      }
      break;
    case LaunchKind::Extern:
      item["graph"] = launch.graph;
      break;
    case LaunchKind::Copy:
      break;
    }
    launchList.push(std::move(item));
  }
  json["launches"] = std::move(launchList);

  Json variantList = Json::array();
  for (const CpuVariant &variant : cpu) {
    Json item = Json::object();
    item["name"] = variant.name;
    item["arch"] = variant.arch;
    item["file"] = variant.file;
    Json features = Json::array();
    for (const std::string &feature : variant.requires_)
      features.push(feature);
    item["requires"] = std::move(features);
    item["priority"] = variant.priority;
    variantList.push(std::move(item));
  }
  json["cpu"] = std::move(variantList);
  if (!cuda.empty()) {
    Json imageList = Json::array();
    for (const CudaImage &image : cuda) {
      Json item = Json::object();
      item["arch"] = image.arch;
      item["file"] = image.file;
      item["kind"] = std::string(image.ptx ? "ptx" : "cubin");
      item["module"] = image.module;
      imageList.push(std::move(item));
    }
    json["cuda"] = std::move(imageList);
    json["cuda_graphs"] = cudaGraphs;
    if (!matmulPrecision.empty())
      json["matmul_precision"] = matmulPrecision;
  }

  Json guardList = Json::array();
  for (const Guard &guard : guards) {
    Json item = Json::object();
    item["lhs"] = exprJson(guard.lhs);
    item["rhs"] = exprJson(guard.rhs);
    item["message"] = guard.message;
    guardList.push(std::move(item));
  }
  json["guards"] = std::move(guardList);
  Json fileList = Json::array();
  for (const BundleFile &file : files) {
    Json item = Json::object();
    item["path"] = file.path;
    item["sha256"] = file.sha256;
    fileList.push(std::move(item));
  }
  json["files"] = std::move(fileList);
  if (training) {
    Json info = Json::object();
    info["optimizer"] = training->optimizer;
    info["loss"] = training->loss;
    Json data = Json::array();
    for (const std::string &name : training->data)
      data.push(name);
    info["data"] = std::move(data);
    Json stateList = Json::array();
    for (const TrainingInfo::State &state : training->state) {
      Json item = Json::object();
      item["input"] = state.input;
      item["output"] = state.output;
      item["init"] = state.init;
      stateList.push(std::move(item));
    }
    info["state"] = std::move(stateList);
    json["training"] = std::move(info);
  }
  return json;
}

} // namespace tensorc::bundle
