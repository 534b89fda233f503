// Kernel signature tables: what each generated kernel was compiled for, written into the kernel
// images and checked by the runtime against the manifest before anything runs.
#include "ManifestJson.h"

#include <map>

namespace tensorc::bundle {

namespace {

constexpr int64_t kSignatureFormat = 1;

std::string shapeText(const std::vector<SizeExpr> &shape) {
  std::vector<std::string> dims;
  for (const SizeExpr &dim : shape)
    dims.push_back(dim.text());
  return "[" + join(dims, ", ") + "]";
}

struct Signature {
  std::vector<std::pair<DType, std::vector<SizeExpr>>> args;
  SizeExpr range;
  int64_t cudaBlock = 0;
  int64_t cudaSharedBytes = 0;
  std::string cudaPartials, cudaCounters; // split-K workspaces' sizes ("" without)
  std::string cudaGemm;                   // the GEMM call's JSON text ("" without one)
  std::string cudaHopper;                 // the Hopper form's JSON text ("" without one)
};

Expected<Signature> readSignature(const ObjectReader &reader) {
  Signature signature;
  TC_ASSIGN_OR_RETURN(const Json *args, reader.get("args", Json::Kind::Array));
  for (size_t i = 0; i < args->items().size(); ++i) {
    std::string path = indexPath(reader.path("args"), i);
    const Json &arg = args->items()[i];
    if (!arg.isArray() || arg.items().size() != 2 || !arg.items()[0].isString() ||
        !arg.items()[1].isArray())
      return makeError(path, ": expected [dtype, shape]");
    std::optional<DType> dtype = parseDType(arg.items()[0].asString());
    if (!dtype)
      return makeError(path, ": unknown dtype '", arg.items()[0].asString(), "'");
    std::vector<SizeExpr> shape;
    for (size_t d = 0; d < arg.items()[1].items().size(); ++d) {
      TC_ASSIGN_OR_RETURN(SizeExpr dim,
                          ObjectReader::parseExpr(arg.items()[1].items()[d], indexPath(path, d)));
      shape.push_back(std::move(dim));
    }
    signature.args.emplace_back(*dtype, std::move(shape));
  }
  TC_ASSIGN_OR_RETURN(signature.range, reader.expr("range"));
  TC_ASSIGN_OR_RETURN(signature.cudaBlock, reader.integer("cuda_block", false, 0));
  TC_ASSIGN_OR_RETURN(signature.cudaSharedBytes, reader.integer("cuda_smem", false, 0));
  TC_ASSIGN_OR_RETURN(SizeExpr partials, reader.expr("cuda_partials", false));
  TC_ASSIGN_OR_RETURN(SizeExpr counters, reader.expr("cuda_counters", false));
  signature.cudaPartials = partials.text();
  signature.cudaCounters = counters.text();
  TC_ASSIGN_OR_RETURN(const Json *gemm, reader.get("cuda_gemm", Json::Kind::Object, false));
  if (gemm)
    signature.cudaGemm = gemm->dump();
  TC_ASSIGN_OR_RETURN(const Json *hopper, reader.get("cuda_sm90a", Json::Kind::Object, false));
  if (hopper)
    signature.cudaHopper = hopper->dump();
  return signature;
}

} // namespace

std::string kernelSignatureTable(const Manifest &manifest) {
  Json json = Json::object();
  json["format"] = kSignatureFormat;
  Json symbols = Json::array();
  for (const std::string &symbol : manifest.symbols)
    symbols.push(symbol);
  json["symbols"] = std::move(symbols);
  Json kernels = Json::object();
  for (const Launch &launch : manifest.launches) {
    if (launch.kind != LaunchKind::Kernel)
      continue;
    Json entry = Json::object();
    Json args = Json::array();
    for (int64_t id : launch.args) {
      const BufferDesc &buffer = manifest.buffers[size_t(id)];
      Json arg = Json::array();
      arg.push(std::string(dtypeName(buffer.dtype)));
      arg.push(exprListJson(buffer.shape));
      args.push(std::move(arg));
    }
    entry["args"] = std::move(args);
    entry["range"] = exprJson(launch.range);
    writeCudaLaunchShape(entry, launch);
    // The GEMM call as compiled: its operand views and sizes bound what a library may touch, and
    // its epilogue function reads a product of exactly these sizes.
    if (launch.gemm)
      entry["cuda_gemm"] = gemmCallJson(*launch.gemm, /*choice=*/false);
    kernels[launch.name] = std::move(entry);
  }
  json["kernels"] = std::move(kernels);
  return json.dump();
}

Status checkKernelSignatures(const Manifest &manifest, std::string_view table,
                             const std::string &origin, bool cuda) {
  Expected<Json> parsed = Json::parse(table);
  if (!parsed)
    return makeError(origin,
                     ": its kernel signature table is not valid JSON: ", parsed.error().message());
  Expected<ObjectReader> reader = ObjectReader::open(*parsed, "");
  if (!reader)
    return reader.takeError().withContext(origin + ": kernel signature table");
  auto context = [&](Error error) {
    return std::move(error).withContext(origin + ": kernel signature table");
  };
  Expected<int64_t> format = reader->integer("format");
  if (!format)
    return context(format.takeError());
  if (*format != kSignatureFormat)
    return makeError(origin, ": kernel signature table format ", *format, ", this runtime reads ",
                     kSignatureFormat);
  Expected<std::vector<std::string>> symbols = reader->stringList("symbols", true);
  if (!symbols)
    return context(symbols.takeError());
  // Kernels read symbol values by position (the `syms` argument).
  if (*symbols != manifest.symbols)
    return makeError(origin, ": its kernels were compiled for the symbols [", join(*symbols, ", "),
                     "], but the manifest lists [", join(manifest.symbols, ", "), "]");
  Expected<const Json *> kernels = reader->get("kernels", Json::Kind::Object);
  if (!kernels)
    return context(kernels.takeError());

  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    const Launch &launch = manifest.launches[i];
    if (launch.kind != LaunchKind::Kernel)
      continue;
    std::string label = strCat("launches[", i, "] (kernel ", launch.name, ")");
    const Json *entry = (*kernels)->find(launch.name);
    if (!entry)
      return makeError(label, ": ", origin, " has no kernel of that name");
    Expected<ObjectReader> entryReader = ObjectReader::open(*entry, "kernels." + launch.name);
    if (!entryReader)
      return context(entryReader.takeError());
    Expected<Signature> signature = readSignature(*entryReader);
    if (!signature)
      return context(signature.takeError());
    if (signature->args.size() != launch.args.size())
      return makeError(label, ": passes ", launch.args.size(), " arguments, but the kernel in ",
                       origin, " takes ", signature->args.size());
    for (size_t a = 0; a < launch.args.size(); ++a) {
      const BufferDesc &buffer = manifest.buffers[size_t(launch.args[a])];
      const auto &[dtype, shape] = signature->args[a];
      bool same = buffer.dtype == dtype && buffer.shape.size() == shape.size();
      for (size_t d = 0; same && d < shape.size(); ++d)
        same = buffer.shape[d].text() == shape[d].text();
      if (!same)
        return makeError(label, ": argument ", a, " is buffer '", buffer.name, "' ",
                         dtypeName(buffer.dtype), shapeText(buffer.shape), ", but the kernel in ",
                         origin, " was compiled for ", dtypeName(dtype), shapeText(shape));
    }
    if (signature->range.text() != launch.range.text())
      return makeError(label, ": range '", launch.range.text(), "', but the kernel in ", origin,
                       " was compiled for '", signature->range.text(), "'");
    if (cuda && signature->cudaBlock != launch.cudaBlock)
      return makeError(label, ": cuda_block ", launch.cudaBlock, ", but the kernel in ", origin,
                       " was compiled for ", signature->cudaBlock, " threads");
    // Less dynamic shared memory than the kernel indexes faults on the GPU.
    if (cuda && signature->cudaSharedBytes != launch.cudaSharedBytes)
      return makeError(label, ": cuda_smem ", launch.cudaSharedBytes, ", but the kernel in ",
                       origin, " was compiled for ", signature->cudaSharedBytes,
                       " bytes of dynamic shared memory");
    // A split-K kernel reads two workspace parameters past the symbols, at least this large.
    if (cuda && (signature->cudaPartials != launch.cudaPartials.text() ||
                 signature->cudaCounters != launch.cudaCounters.text()))
      return makeError(label, ": split-K workspaces [", launch.cudaPartials.text(), ", ",
                       launch.cudaCounters.text(), "], but the kernel in ", origin,
                       " was compiled for [", signature->cudaPartials, ", ",
                       signature->cudaCounters, "]");
    // A Hopper form changes the function's parameters (two tensor maps first) and its launch
    // shape in sm_90a images.
    Json shape = Json::object();
    writeCudaLaunchShape(shape, launch);
    const Json *form = shape.find("cuda_sm90a");
    std::string hopper = form ? form->dump() : std::string();
    if (cuda && signature->cudaHopper != hopper)
      return makeError(label, ": its Hopper form ", hopper.empty() ? "(none)" : hopper,
                       " is not the one the kernel in ", origin, " was compiled for (",
                       signature->cudaHopper.empty() ? "none" : signature->cudaHopper, ")");
    std::string gemm = launch.gemm ? gemmCallJson(*launch.gemm, false).dump() : std::string();
    if (cuda && signature->cudaGemm != gemm)
      return makeError(label, ": its GEMM call ", gemm.empty() ? "(none)" : gemm,
                       " is not the one the kernel in ", origin, " was compiled for (",
                       signature->cudaGemm.empty() ? "none" : signature->cudaGemm, ")");
  }
  return Status::ok();
}

} // namespace tensorc::bundle
