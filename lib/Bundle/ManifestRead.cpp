// Reading manifest.json: every field typed and checked, errors naming its path in the manifest.
#include "ManifestJson.h"

namespace tensorc::bundle {

namespace {

Expected<TensorDesc> readTensor(const ObjectReader &reader) {
  TensorDesc tensor;
  TC_ASSIGN_OR_RETURN(tensor.name, reader.string("name"));
  TC_ASSIGN_OR_RETURN(tensor.dtype, reader.dtype("dtype"));
  TC_ASSIGN_OR_RETURN(tensor.shape, reader.exprList("shape"));
  return tensor;
}

Expected<BufferDesc> readBuffer(const ObjectReader &reader) {
  BufferDesc buffer;
  TC_ASSIGN_OR_RETURN(buffer.id, reader.integer("id"));
  TC_ASSIGN_OR_RETURN(buffer.name, reader.string("name"));
  TC_ASSIGN_OR_RETURN(buffer.kind, reader.choice("kind", kBufferKindNames, "buffer kind"));
  TC_ASSIGN_OR_RETURN(buffer.dtype, reader.dtype("dtype"));
  TC_ASSIGN_OR_RETURN(buffer.shape, reader.exprList("shape"));
  switch (buffer.kind) {
  case BufferKind::Input:
  case BufferKind::Output: {
    TC_ASSIGN_OR_RETURN(buffer.index, reader.integer("index"));
    break;
  }
  case BufferKind::Weight: {
    TC_ASSIGN_OR_RETURN(buffer.weight, reader.nonEmptyString("weight", "weight name"));
    break;
  }
  case BufferKind::Arena: {
    TC_ASSIGN_OR_RETURN(buffer.offset, reader.expr("offset"));
    break;
  }
  }
  return buffer;
}

Expected<GemmCall::Operand> readGemmOperand(const ObjectReader &reader) {
  GemmCall::Operand o;
  TC_ASSIGN_OR_RETURN(o.arg, reader.integer("arg"));
  TC_ASSIGN_OR_RETURN(o.offset, reader.expr("offset"));
  TC_ASSIGN_OR_RETURN(o.ld, reader.expr("ld"));
  TC_ASSIGN_OR_RETURN(o.batchStride, reader.expr("batch_stride"));
  TC_ASSIGN_OR_RETURN(o.kContiguous, reader.boolean("k_contiguous"));
  return o;
}

Expected<GemmCall> readGemmCall(const ObjectReader &reader) {
  GemmCall gemm;
  TC_ASSIGN_OR_RETURN(gemm.dtype, reader.dtype("dtype"));
  if (gemm.dtype != DType::F32 && gemm.dtype != DType::F16 && gemm.dtype != DType::BF16)
    return makeError(reader.path("dtype"), ": GEMM calls take f32, f16 or bf16, not ",
                     dtypeName(gemm.dtype));
  TC_ASSIGN_OR_RETURN(gemm.tf32, reader.boolean("tf32", false, false));
  for (auto [key, operand] : {std::pair{"a", &gemm.a}, std::pair{"b", &gemm.b}}) {
    TC_ASSIGN_OR_RETURN(const Json *json, reader.get(key, Json::Kind::Object));
    TC_ASSIGN_OR_RETURN(ObjectReader item, ObjectReader::open(*json, reader.path(key)));
    TC_ASSIGN_OR_RETURN(*operand, readGemmOperand(item));
  }
  TC_ASSIGN_OR_RETURN(gemm.output, reader.integer("output"));
  TC_ASSIGN_OR_RETURN(gemm.direct, reader.boolean("direct", false, false));
  TC_ASSIGN_OR_RETURN(gemm.bias, reader.integer("bias", false, -1));
  TC_ASSIGN_OR_RETURN(gemm.m, reader.expr("m"));
  TC_ASSIGN_OR_RETURN(gemm.n, reader.expr("n"));
  TC_ASSIGN_OR_RETURN(gemm.k, reader.expr("k"));
  TC_ASSIGN_OR_RETURN(gemm.batch, reader.expr("batch"));
  TC_ASSIGN_OR_RETURN(gemm.epilogueGrid, reader.expr("epilogue_grid"));
  TC_ASSIGN_OR_RETURN(gemm.library, reader.string("library", false));
  if (!gemm.library.empty() && gemm.library != kCublasLt)
    return makeError(reader.path("library"), ": unknown GEMM library '", gemm.library,
                     "' (expected ", kCublasLt, ")");
  TC_ASSIGN_OR_RETURN(gemm.algo, reader.integer("algo", false, 0));
  if (gemm.algo < 0 || gemm.algo > 1000)
    return makeError(reader.path("algo"), ": must be 0 to 1000, got ", gemm.algo);
  return gemm;
}

Expected<HopperGemm> readHopperGemm(const ObjectReader &reader) {
  HopperGemm h;
  TC_ASSIGN_OR_RETURN(h.dtype, reader.dtype("dtype"));
  TC_ASSIGN_OR_RETURN(h.tf32, reader.boolean("tf32", false, false));
  if (h.tf32 ? h.dtype != DType::F32 : h.dtype != DType::F16 && h.dtype != DType::BF16)
    return makeError(reader.path("dtype"), ": Hopper GEMMs take f16, bf16 or (tf32) f32, not ",
                     dtypeName(h.dtype), h.tf32 ? "" : " without tf32");
  TC_ASSIGN_OR_RETURN(h.k, reader.expr("k"));
  TC_ASSIGN_OR_RETURN(h.batch, reader.expr("batch"));
  TC_ASSIGN_OR_RETURN(h.units, reader.expr("units"));
  TC_ASSIGN_OR_RETURN(h.blocksPerSm, reader.integer("blocks_per_sm"));
  TC_ASSIGN_OR_RETURN(h.block, reader.integer("block"));
  TC_ASSIGN_OR_RETURN(h.sharedBytes, reader.integer("smem"));
  if (h.blocksPerSm < 1 || h.blocksPerSm > 32)
    return makeError(reader.path("blocks_per_sm"), ": must be 1 to 32, got ", h.blocksPerSm);
  if (h.block < 1 || h.block > 1024)
    return makeError(reader.path("block"), ": must be 1 to 1024 threads, got ", h.block);
  if (h.sharedBytes < 0 || h.sharedBytes > 227 * 1024)
    return makeError(reader.path("smem"), ": must be 0 to 232448 bytes, got ", h.sharedBytes);
  for (auto [key, map] : {std::pair{"a", &h.a}, std::pair{"b", &h.b}}) {
    TC_ASSIGN_OR_RETURN(const Json *json, reader.get(key, Json::Kind::Object));
    TC_ASSIGN_OR_RETURN(ObjectReader item, ObjectReader::open(*json, reader.path(key)));
    TC_ASSIGN_OR_RETURN(map->arg, item.integer("arg"));
    TC_ASSIGN_OR_RETURN(map->offset, item.expr("offset"));
    TC_ASSIGN_OR_RETURN(map->rows, item.expr("rows"));
    TC_ASSIGN_OR_RETURN(map->ld, item.expr("ld"));
    TC_ASSIGN_OR_RETURN(map->batchStride, item.expr("batch_stride"));
    TC_ASSIGN_OR_RETURN(map->boxRows, item.integer("box_rows"));
    // TMA boxes are at most 256 elements along each dim.
    if (map->boxRows < 1 || map->boxRows > 256)
      return makeError(item.path("box_rows"), ": must be 1 to 256, got ", map->boxRows);
  }
  return h;
}

Expected<Launch> readLaunch(const ObjectReader &reader) {
  Launch launch;
  TC_ASSIGN_OR_RETURN(launch.kind, reader.choice("kind", kLaunchKindNames, "launch kind"));
  TC_ASSIGN_OR_RETURN(launch.name, reader.string("name"));
  TC_ASSIGN_OR_RETURN(const Json *args, reader.get("args", Json::Kind::Array));
  for (size_t i = 0; i < args->items().size(); ++i) {
    if (!args->items()[i].isInt())
      return makeError(indexPath(reader.path("args"), i), ": expected an integer, got ",
                       kindName(args->items()[i].kind()));
    launch.args.push_back(args->items()[i].asInt());
  }
  switch (launch.kind) {
  case LaunchKind::Kernel: {
    if (launch.name.empty())
      return makeError(reader.path("name"), ": empty kernel symbol");
    TC_ASSIGN_OR_RETURN(launch.range, reader.expr("range"));
    TC_ASSIGN_OR_RETURN(launch.grain, reader.integer("grain", false, 1));
    if (launch.grain < 1)
      return makeError(reader.path("grain"), ": must be at least 1, got ", launch.grain);
    TC_ASSIGN_OR_RETURN(launch.cudaBlock, reader.integer("cuda_block", false, 0));
    if (launch.cudaBlock < 0 || launch.cudaBlock > 1024)
      return makeError(reader.path("cuda_block"), ": must be 0 to 1024 threads, got ",
                       launch.cudaBlock);
    if (launch.cudaBlock > 0) {
      TC_ASSIGN_OR_RETURN(launch.cudaGrid, reader.expr("cuda_grid"));
      // Up to the largest opt-in dynamic shared memory of any GPU so far (227 KB, sm_90).
      TC_ASSIGN_OR_RETURN(launch.cudaSharedBytes, reader.integer("cuda_smem", false, 0));
      if (launch.cudaSharedBytes < 0 || launch.cudaSharedBytes > 227 * 1024)
        return makeError(reader.path("cuda_smem"), ": must be 0 to 232448 bytes, got ",
                         launch.cudaSharedBytes);
      TC_ASSIGN_OR_RETURN(launch.cudaSymbol, reader.string("cuda_symbol", false));
      TC_ASSIGN_OR_RETURN(launch.cudaPartials, reader.expr("cuda_partials", false));
      TC_ASSIGN_OR_RETURN(launch.cudaCounters, reader.expr("cuda_counters", false));
      if (launch.cudaPartials.text().empty() != launch.cudaCounters.text().empty())
        return makeError(reader.path(launch.splitK() ? "cuda_partials" : "cuda_counters"),
                         ": missing (split-K kernels take both workspaces)");
      TC_ASSIGN_OR_RETURN(launch.cudaModule, reader.integer("cuda_module", false, 0));
      TC_ASSIGN_OR_RETURN(const Json *gemm, reader.get("cuda_gemm", Json::Kind::Object, false));
      if (gemm) {
        TC_ASSIGN_OR_RETURN(ObjectReader item, ObjectReader::open(*gemm, reader.path("cuda_gemm")));
        TC_ASSIGN_OR_RETURN(launch.gemm, readGemmCall(item));
      }
      TC_ASSIGN_OR_RETURN(const Json *hopper, reader.get("cuda_sm90a", Json::Kind::Object, false));
      if (hopper) {
        TC_ASSIGN_OR_RETURN(ObjectReader item,
                            ObjectReader::open(*hopper, reader.path("cuda_sm90a")));
        TC_ASSIGN_OR_RETURN(launch.hopper, readHopperGemm(item));
      }
    } else {
      launch.cudaGrid = SizeExpr::constant(0);
    }
    break;
  }
  case LaunchKind::Extern: {
    TC_ASSIGN_OR_RETURN(launch.graph, reader.nonEmptyString("graph", "graph"));
    break;
  }
  case LaunchKind::Copy:
    if (launch.args.size() != 2)
      return makeError(reader.path("args"), ": a copy takes 2 buffers, got ", launch.args.size());
    break;
  }
  return launch;
}

Expected<CudaImage> readCudaImage(const ObjectReader &reader) {
  CudaImage image;
  TC_ASSIGN_OR_RETURN(image.arch, reader.string("arch"));
  if (image.arch != kHopperArch &&
      (image.arch.size() < 5 || image.arch.compare(0, 3, "sm_") != 0 ||
       image.arch.find_first_not_of("0123456789", 3) != std::string::npos))
    return makeError(reader.path("arch"), ": '", image.arch, "' is not an sm_<NN> arch (or ",
                     kHopperArch, ")");
  TC_ASSIGN_OR_RETURN(image.file, reader.string("file"));
  TC_RETURN_IF_ERROR(checkBundlePath(reader.path("file"), image.file));
  TC_ASSIGN_OR_RETURN(std::string kind, reader.string("kind"));
  if (kind != "cubin" && kind != "ptx")
    return makeError(reader.path("kind"), ": unknown image kind '", kind,
                     "' (expected cubin or ptx)");
  image.ptx = kind == "ptx";
  TC_ASSIGN_OR_RETURN(image.module, reader.integer("module", false, 0));
  if (image.module < 0 || image.module >= kMaxCudaModules)
    return makeError(reader.path("module"), ": must be 0 to ", kMaxCudaModules - 1, ", got ",
                     image.module);
  return image;
}

Expected<CpuVariant> readCpuVariant(const ObjectReader &reader) {
  CpuVariant variant;
  TC_ASSIGN_OR_RETURN(variant.name, reader.string("name"));
  if (variant.name.empty())
    return makeError(reader.path("name"), ": empty variant name");
  TC_ASSIGN_OR_RETURN(variant.arch, reader.string("arch"));
  if (variant.arch != "x86_64" && variant.arch != "aarch64")
    return makeError(reader.path("arch"), ": unknown arch '", variant.arch,
                     "' (expected x86_64 or aarch64)");
  TC_ASSIGN_OR_RETURN(variant.file, reader.string("file"));
  TC_RETURN_IF_ERROR(checkBundlePath(reader.path("file"), variant.file));
  TC_ASSIGN_OR_RETURN(variant.requires_, reader.stringList("requires", false));
  TC_ASSIGN_OR_RETURN(variant.priority, reader.integer("priority", false, 0));
  return variant;
}

Expected<BundleFile> readBundleFile(const ObjectReader &reader) {
  BundleFile file;
  TC_ASSIGN_OR_RETURN(file.path, reader.string("path"));
  TC_RETURN_IF_ERROR(checkBundlePath(reader.path("path"), file.path));
  TC_ASSIGN_OR_RETURN(file.sha256, reader.string("sha256"));
  bool hex = file.sha256.size() == 64;
  for (char c : file.sha256)
    hex = hex && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  if (!hex)
    return makeError(reader.path("sha256"), ": '", file.sha256,
                     "' is not a SHA-256 digest (64 lowercase hex digits)");
  return file;
}

Expected<Manifest::Guard> readGuard(const ObjectReader &reader) {
  Manifest::Guard guard;
  TC_ASSIGN_OR_RETURN(guard.lhs, reader.expr("lhs"));
  TC_ASSIGN_OR_RETURN(guard.rhs, reader.expr("rhs"));
  TC_ASSIGN_OR_RETURN(guard.message, reader.string("message"));
  return guard;
}

} // namespace

Status checkBundlePath(const std::string &path, const std::string &file) {
  bool escapes = file.empty() || file.front() == '/';
  for (size_t start = 0; !escapes && start <= file.size();) {
    size_t end = file.find('/', start);
    if (end == std::string::npos)
      end = file.size();
    escapes = file.compare(start, end - start, "..") == 0;
    start = end + 1;
  }
  if (escapes)
    return makeError(path, ": '", file, "' is not a relative path inside the bundle");
  return Status::ok();
}

Expected<Manifest> Manifest::fromJson(const Json &json) {
  TC_ASSIGN_OR_RETURN(ObjectReader reader, ObjectReader::open(json, ""));
  Manifest manifest;
  // The version comes first: a newer format may change every other field.
  TC_ASSIGN_OR_RETURN(manifest.formatVersion, reader.integer("format_version"));
  if (manifest.formatVersion < kOldestFormatVersion || manifest.formatVersion > kFormatVersion)
    return makeError("bundle format version ", manifest.formatVersion, ", this runtime reads ",
                     kOldestFormatVersion, " to ", kFormatVersion);
  TC_ASSIGN_OR_RETURN(manifest.tensorcVersion, reader.string("tensorc_version", false));
  TC_ASSIGN_OR_RETURN(manifest.sourceHash, reader.string("source_hash", false));
  TC_ASSIGN_OR_RETURN(manifest.model, reader.string("model", false));
  TC_ASSIGN_OR_RETURN(manifest.symbols, reader.stringList("symbols", true));
  TC_ASSIGN_OR_RETURN(manifest.inputs, readList<TensorDesc>(reader, "inputs", true, readTensor));
  TC_ASSIGN_OR_RETURN(manifest.outputs, readList<TensorDesc>(reader, "outputs", true, readTensor));
  TC_ASSIGN_OR_RETURN(manifest.buffers, readList<BufferDesc>(reader, "buffers", true, readBuffer));
  TC_ASSIGN_OR_RETURN(manifest.arenaBytes, reader.expr("arena_bytes"));
  TC_ASSIGN_OR_RETURN(manifest.peakBytes, reader.integer("peak_bytes", false, 0));
  TC_ASSIGN_OR_RETURN(manifest.launches, readList<Launch>(reader, "launches", true, readLaunch));
  TC_ASSIGN_OR_RETURN(manifest.cpu, readList<CpuVariant>(reader, "cpu", true, readCpuVariant));
  TC_ASSIGN_OR_RETURN(manifest.cuda, readList<CudaImage>(reader, "cuda", false, readCudaImage));
  TC_ASSIGN_OR_RETURN(manifest.cudaGraphs, reader.boolean("cuda_graphs", false, false));
  TC_ASSIGN_OR_RETURN(manifest.matmulPrecision, reader.string("matmul_precision", false));
  if (!manifest.matmulPrecision.empty() && manifest.matmulPrecision != "highest" &&
      manifest.matmulPrecision != "high")
    return makeError("matmul_precision: '", manifest.matmulPrecision, "' is not highest or high");
  TC_ASSIGN_OR_RETURN(manifest.guards, readList<Guard>(reader, "guards", false, readGuard));
  TC_ASSIGN_OR_RETURN(manifest.files, readList<BundleFile>(reader, "files", true, readBundleFile));
  TC_ASSIGN_OR_RETURN(const Json *training, reader.get("training", Json::Kind::Object, false));
  if (training) {
    TC_ASSIGN_OR_RETURN(ObjectReader info, ObjectReader::open(*training, "training"));
    TrainingInfo parsed;
    TC_ASSIGN_OR_RETURN(parsed.optimizer, info.string("optimizer"));
    TC_ASSIGN_OR_RETURN(parsed.loss, info.string("loss"));
    TC_ASSIGN_OR_RETURN(parsed.data, info.stringList("data", true));
    TC_ASSIGN_OR_RETURN(
        parsed.state,
        readList<TrainingInfo::State>(
            info, "state", true, [](const ObjectReader &item) -> Expected<TrainingInfo::State> {
              TrainingInfo::State state;
              TC_ASSIGN_OR_RETURN(state.input, item.string("input"));
              TC_ASSIGN_OR_RETURN(state.output, item.string("output"));
              TC_ASSIGN_OR_RETURN(state.init, item.string("init", false));
              return state;
            }));
    manifest.training = std::move(parsed);
  }
  TC_RETURN_IF_ERROR(validateManifest(manifest));
  return manifest;
}

const BundleFile *Manifest::findFile(const std::string &path) const {
  for (const BundleFile &file : files)
    if (file.path == path)
      return &file;
  return nullptr;
}

} // namespace tensorc::bundle
