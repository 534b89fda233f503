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
  json["symbols"] = jsonArray(symbols);
  json["inputs"] = jsonArray(inputs, tensorJson);
  json["outputs"] = jsonArray(outputs, tensorJson);

  json["buffers"] = jsonArray(buffers, [](const BufferDesc &buffer) {
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
    return item;
  });
  json["arena_bytes"] = exprJson(arenaBytes);
  json["peak_bytes"] = peakBytes;

  json["launches"] = jsonArray(launches, [](const Launch &launch) {
    Json item = Json::object();
    item["kind"] = launchKindName(launch.kind);
    item["name"] = launch.name;
    item["args"] = jsonArray(launch.args);
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
        if (launch.gemm)
          item["cuda_gemm"] = gemmCallJson(*launch.gemm, /*choice=*/true);
      }
      break;
    case LaunchKind::Extern:
      item["graph"] = launch.graph;
      break;
    case LaunchKind::Copy:
      break;
    }
    return item;
  });

  json["cpu"] = jsonArray(cpu, [](const CpuVariant &variant) {
    Json item = Json::object();
    item["name"] = variant.name;
    item["arch"] = variant.arch;
    item["file"] = variant.file;
    item["requires"] = jsonArray(variant.requires_);
    item["priority"] = variant.priority;
    return item;
  });
  if (!cuda.empty()) {
    json["cuda"] = jsonArray(cuda, [](const CudaImage &image) {
      Json item = Json::object();
      item["arch"] = image.arch;
      item["file"] = image.file;
      item["kind"] = std::string(image.ptx ? "ptx" : "cubin");
      item["module"] = image.module;
      return item;
    });
    json["cuda_graphs"] = cudaGraphs;
    if (!matmulPrecision.empty())
      json["matmul_precision"] = matmulPrecision;
  }

  json["guards"] = jsonArray(guards, [](const Guard &guard) {
    Json item = Json::object();
    item["lhs"] = exprJson(guard.lhs);
    item["rhs"] = exprJson(guard.rhs);
    item["message"] = guard.message;
    return item;
  });
  json["files"] = jsonArray(files, [](const BundleFile &file) {
    Json item = Json::object();
    item["path"] = file.path;
    item["sha256"] = file.sha256;
    return item;
  });
  if (training) {
    Json info = Json::object();
    info["optimizer"] = training->optimizer;
    info["loss"] = training->loss;
    info["data"] = jsonArray(training->data);
    info["state"] = jsonArray(training->state, [](const TrainingInfo::State &state) {
      Json item = Json::object();
      item["input"] = state.input;
      item["output"] = state.output;
      item["init"] = state.init;
      return item;
    });
    json["training"] = std::move(info);
  }
  return json;
}

} // namespace tensorc::bundle
