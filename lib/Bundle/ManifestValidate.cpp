// Cross-field checks of a manifest: what the runtime indexes must exist and agree.
#include "ManifestJson.h"

#include "tensorc/Support/Identifier.h"

#include <algorithm>
#include <map>
#include <set>

namespace tensorc::bundle {

namespace {

/// CUDA modules 0..N-1 each have an image, and every one the same archs and kinds as module 0
/// (the runtime loads the same choice of each); returns N (0 without CUDA images).
Expected<int64_t> validateCudaModules(const std::vector<CudaImage> &images) {
  std::map<int64_t, std::set<std::pair<std::string, bool>>> modules;
  std::map<int64_t, int> hopper; // sm_90a cubins: only modules with Hopper forms have one
  for (size_t i = 0; i < images.size(); ++i) {
    bool extra = images[i].arch == kHopperArch;
    if (extra && images[i].ptx)
      return makeError(indexPath("cuda", i), ": ", kHopperArch, " images are cubins");
    if (extra ? hopper[images[i].module]++ > 0
              : !modules[images[i].module].insert({images[i].arch, images[i].ptx}).second)
      return makeError(indexPath("cuda", i), ": module ", images[i].module, " has two ",
                       images[i].arch, images[i].ptx ? " PTX" : " cubin", " images");
  }
  for (const auto &[module, count] : hopper)
    if (!modules.count(module))
      return makeError("cuda: module ", module, " has only an ", kHopperArch, " image");
  int64_t count = modules.empty() ? 0 : modules.rbegin()->first + 1;
  for (int64_t m = 0; m < count; ++m)
    if (!modules.count(m))
      return makeError("cuda: no image of module ", m, " (the bundle has modules up to ", count - 1,
                       ")");
  for (size_t i = 0; i < images.size(); ++i)
    if (images[i].arch != kHopperArch && modules[images[i].module] != modules[0]) {
      // Name an image one module has and the other lacks.
      const auto &mine = modules[images[i].module];
      for (const auto &[arch, ptx] : modules[0])
        if (!mine.count({arch, ptx}))
          return makeError("cuda: module ", images[i].module, " has no ", arch,
                           ptx ? " PTX" : " cubin", " image, which module 0 has");
      for (const auto &[arch, ptx] : mine)
        if (!modules[0].count({arch, ptx}))
          return makeError("cuda: module 0 has no ", arch, ptx ? " PTX" : " cubin",
                           " image, which module ", images[i].module, " has");
    }
  return count;
}

/// Every input is data or state exactly once; state pairs match in dtype and shape.
Status validateTraining(const Manifest &manifest, const TrainingInfo &training) {
  auto find = [](const std::vector<TensorDesc> &list,
                 const std::string &name) -> const TensorDesc * {
    for (const TensorDesc &desc : list)
      if (desc.name == name)
        return &desc;
    return nullptr;
  };
  if (training.optimizer != "sgd" && training.optimizer != "adamw" && training.optimizer != "none")
    return makeError("training.optimizer: unknown optimizer '", training.optimizer, "'");
  if (manifest.outputs.empty() || manifest.outputs[0].name != training.loss)
    return makeError("training.loss: '", training.loss, "' is not the first output");
  std::map<std::string, int> uses;
  for (size_t i = 0; i < training.data.size(); ++i) {
    if (!find(manifest.inputs, training.data[i]))
      return makeError(indexPath("training.data", i), ": no input '", training.data[i], "'");
    ++uses[training.data[i]];
  }
  for (size_t i = 0; i < training.state.size(); ++i) {
    const TrainingInfo::State &state = training.state[i];
    std::string path = indexPath("training.state", i);
    const TensorDesc *in = find(manifest.inputs, state.input);
    if (in && state.output.empty()) { // state no step updates (gradient-only bundles)
      ++uses[state.input];
      continue;
    }
    const TensorDesc *out = find(manifest.outputs, state.output);
    if (!in || !out)
      return makeError(path, ": no ", in ? "output '" : "input '", in ? state.output : state.input,
                       "'");
    bool sameShape = in->shape.size() == out->shape.size();
    for (size_t d = 0; sameShape && d < in->shape.size(); ++d)
      sameShape = in->shape[d].text() == out->shape[d].text();
    if (in->dtype != out->dtype || !sameShape)
      return makeError(path, ": input '", state.input, "' and output '", state.output,
                       "' differ in dtype or shape");
    ++uses[state.input];
  }
  for (const TensorDesc &input : manifest.inputs)
    if (uses[input.name] != 1)
      return makeError("training: input '", input.name, "' must be listed once in data or state, ",
                       "found ", uses[input.name]);
  return Status::ok();
}

} // namespace

Status validateManifest(const Manifest &manifest) {
  std::set<std::string> declared;
  for (size_t i = 0; i < manifest.symbols.size(); ++i) {
    const std::string &symbol = manifest.symbols[i];
    if (!isIdentifier(symbol))
      return makeError(indexPath("symbols", i), ": '", symbol, "' is not an identifier");
    if (!declared.insert(symbol).second)
      return makeError(indexPath("symbols", i), ": duplicate symbol '", symbol, "'");
  }
  auto checkExpr = [&](const SizeExpr &expr, const std::string &path) -> Status {
    std::set<std::string> used;
    expr.collectSymbols(used);
    for (const std::string &symbol : used)
      if (!declared.count(symbol))
        return makeError(path, ": '", expr.text(), "' uses undeclared symbol '", symbol, "'");
    return Status::ok();
  };
  auto checkShape = [&](const std::vector<SizeExpr> &shape, const std::string &path) -> Status {
    for (size_t d = 0; d < shape.size(); ++d) {
      TC_RETURN_IF_ERROR(checkExpr(shape[d], indexPath(path, d)));
    }
    return Status::ok();
  };
  auto checkTensors = [&](const std::vector<TensorDesc> &tensors,
                          const std::string &field) -> Status {
    std::set<std::string> names;
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::string path = indexPath(field, i);
      if (tensors[i].name.empty())
        return makeError(path, ".name: empty");
      if (!names.insert(tensors[i].name).second)
        return makeError(path, ".name: duplicate name '", tensors[i].name, "'");
      TC_RETURN_IF_ERROR(checkShape(tensors[i].shape, path + ".shape"));
    }
    return Status::ok();
  };
  TC_RETURN_IF_ERROR(checkTensors(manifest.inputs, "inputs"));
  TC_RETURN_IF_ERROR(checkTensors(manifest.outputs, "outputs"));

  std::vector<int> inputUses(manifest.inputs.size()), outputUses(manifest.outputs.size());
  for (size_t i = 0; i < manifest.buffers.size(); ++i) {
    const BufferDesc &buffer = manifest.buffers[i];
    std::string path = indexPath("buffers", i);
    if (buffer.id != int64_t(i))
      return makeError(path, ".id: is ", buffer.id, ", expected ", i,
                       " (buffers are listed densely by id)");
    TC_RETURN_IF_ERROR(checkShape(buffer.shape, path + ".shape"));
    if (buffer.kind == BufferKind::Input || buffer.kind == BufferKind::Output) {
      const auto &tensors = buffer.kind == BufferKind::Input ? manifest.inputs : manifest.outputs;
      auto &uses = buffer.kind == BufferKind::Input ? inputUses : outputUses;
      const char *field = buffer.kind == BufferKind::Input ? "inputs" : "outputs";
      if (buffer.index < 0 || buffer.index >= int64_t(tensors.size()))
        return makeError(path, ".index: no ", field, "[", buffer.index, "] (there are ",
                         tensors.size(), ")");
      const TensorDesc &tensor = tensors[size_t(buffer.index)];
      if (buffer.dtype != tensor.dtype)
        return makeError(path, ".dtype: ", dtypeName(buffer.dtype), " but ", field, "[",
                         buffer.index, "] '", tensor.name, "' is ", dtypeName(tensor.dtype));
      if (++uses[size_t(buffer.index)] > 1)
        return makeError(path, ".index: ", field, "[", buffer.index, "] '", tensor.name,
                         "' already has a buffer");
    }
    if (buffer.kind == BufferKind::Arena) {
      TC_RETURN_IF_ERROR(checkExpr(buffer.offset, path + ".offset"));
    }
  }
  for (size_t i = 0; i < outputUses.size(); ++i)
    if (outputUses[i] == 0)
      return makeError(indexPath("outputs", i), ": no buffer holds output '",
                       manifest.outputs[i].name, "'");
  TC_RETURN_IF_ERROR(checkExpr(manifest.arenaBytes, "arena_bytes"));

  TC_ASSIGN_OR_RETURN(int64_t cudaModules, validateCudaModules(manifest.cuda));
  for (size_t i = 0; i < manifest.cuda.size(); ++i)
    if (manifest.cuda[i].arch == kHopperArch && manifest.formatVersion < 4)
      return makeError(indexPath("cuda", i), ": ", kHopperArch,
                       " images need bundle format version 4, the manifest says ",
                       manifest.formatVersion);
  for (size_t i = 0; i < manifest.launches.size(); ++i) {
    const Launch &launch = manifest.launches[i];
    std::string path = indexPath("launches", i);
    for (size_t a = 0; a < launch.args.size(); ++a)
      if (launch.args[a] < 0 || launch.args[a] >= int64_t(manifest.buffers.size()))
        return makeError(indexPath(path + ".args", a), ": no buffer ", launch.args[a]);
    if (launch.kind == LaunchKind::Kernel) {
      TC_RETURN_IF_ERROR(checkExpr(launch.range, path + ".range"));
      TC_RETURN_IF_ERROR(checkExpr(launch.cudaGrid, path + ".cuda_grid"));
      TC_RETURN_IF_ERROR(checkExpr(launch.cudaPartials, path + ".cuda_partials"));
      TC_RETURN_IF_ERROR(checkExpr(launch.cudaCounters, path + ".cuda_counters"));
      if (!manifest.cuda.empty() && launch.cudaBlock == 0)
        return makeError(path, ": kernel '", launch.name,
                         "' has no cuda_block, but the bundle has CUDA images");
      if (launch.cudaModule < 0 || launch.cudaModule >= std::max<int64_t>(cudaModules, 1))
        return makeError(path, ".cuda_module: no CUDA module ", launch.cudaModule,
                         " (the bundle has ", cudaModules, ")");
      if (const std::optional<GemmCall> &gemm = launch.gemm) {
        std::string at = path + ".cuda_gemm";
        for (auto [key, o] : {std::pair{"a", &gemm->a}, std::pair{"b", &gemm->b}}) {
          std::string field = strCat(at, ".", key);
          if (o->arg < 0 || o->arg >= int64_t(launch.args.size()))
            return makeError(field, ".arg: the launch has no argument ", o->arg, " (it has ",
                             launch.args.size(), ")");
          const BufferDesc &buffer = manifest.buffers[size_t(launch.args[size_t(o->arg)])];
          if (buffer.dtype != gemm->dtype)
            return makeError(field, ".arg: buffer '", buffer.name, "' is ", dtypeName(buffer.dtype),
                             ", the GEMM's operands ", dtypeName(gemm->dtype));
          TC_RETURN_IF_ERROR(checkExpr(o->offset, field + ".offset"));
          TC_RETURN_IF_ERROR(checkExpr(o->ld, field + ".ld"));
          TC_RETURN_IF_ERROR(checkExpr(o->batchStride, field + ".batch_stride"));
        }
        if (gemm->output < 0 || gemm->output >= int64_t(launch.args.size()))
          return makeError(at, ".output: the launch has no argument ", gemm->output, " (it has ",
                           launch.args.size(), ")");
        DType out = manifest.buffers[size_t(launch.args[size_t(gemm->output)])].dtype;
        if (gemm->direct && out != DType::F32 && out != DType::F16 && out != DType::BF16)
          return makeError(at, ".direct: a library cannot write a ", dtypeName(out), " output");
        if (gemm->bias != -1) {
          if (!gemm->direct)
            return makeError(at, ".bias: only a direct GEMM call adds a bias");
          if (gemm->bias < 0 || gemm->bias >= int64_t(launch.args.size()))
            return makeError(at, ".bias: the launch has no argument ", gemm->bias, " (it has ",
                             launch.args.size(), ")");
          const BufferDesc &bias = manifest.buffers[size_t(launch.args[size_t(gemm->bias)])];
          if (bias.dtype != out)
            return makeError(at, ".bias: buffer '", bias.name, "' is ", dtypeName(bias.dtype),
                             ", the output ", dtypeName(out));
        }
        for (auto [key, expr] :
             {std::pair{"m", &gemm->m}, std::pair{"n", &gemm->n}, std::pair{"k", &gemm->k},
              std::pair{"batch", &gemm->batch}, std::pair{"epilogue_grid", &gemm->epilogueGrid}})
          TC_RETURN_IF_ERROR(checkExpr(*expr, strCat(at, ".", key)));
      }
    }
    if (const std::optional<HopperGemm> &hopper = launch.hopper) {
      std::string at = path + ".cuda_sm90a";
      if (manifest.formatVersion < 4)
        return makeError(at, ": Hopper forms need bundle format version 4, the manifest says ",
                         manifest.formatVersion);
      for (auto [key, map] : {std::pair{"a", &hopper->a}, std::pair{"b", &hopper->b}}) {
        std::string field = strCat(at, ".", key);
        if (map->arg < 0 || map->arg >= int64_t(launch.args.size()))
          return makeError(field, ".arg: the launch has no argument ", map->arg, " (it has ",
                           launch.args.size(), ")");
        const BufferDesc &buffer = manifest.buffers[size_t(launch.args[size_t(map->arg)])];
        if (buffer.dtype != hopper->dtype)
          return makeError(field, ".arg: buffer '", buffer.name, "' is ", dtypeName(buffer.dtype),
                           ", the GEMM's operands ", dtypeName(hopper->dtype));
        for (auto [name, expr] :
             {std::pair{"offset", &map->offset}, std::pair{"rows", &map->rows},
              std::pair{"ld", &map->ld}, std::pair{"batch_stride", &map->batchStride}})
          TC_RETURN_IF_ERROR(checkExpr(*expr, strCat(field, ".", name)));
      }
      for (auto [key, expr] : {std::pair{"k", &hopper->k}, std::pair{"batch", &hopper->batch},
                               std::pair{"units", &hopper->units}})
        TC_RETURN_IF_ERROR(checkExpr(*expr, strCat(at, ".", key)));
    }
    if (launch.kind == LaunchKind::Copy) {
      const BufferDesc &from = manifest.buffers[size_t(launch.args[0])];
      const BufferDesc &to = manifest.buffers[size_t(launch.args[1])];
      if (from.dtype != to.dtype)
        return makeError(path, ": copy from ", dtypeName(from.dtype), " buffer '", from.name,
                         "' to ", dtypeName(to.dtype), " buffer '", to.name, "'");
      if (to.kind == BufferKind::Input || to.kind == BufferKind::Weight)
        return makeError(indexPath(path + ".args", 1), ": copy into read-only ",
                         bufferKindName(to.kind), " buffer '", to.name, "'");
    }
  }

  std::set<std::string> variantNames;
  for (size_t i = 0; i < manifest.cpu.size(); ++i)
    if (!variantNames.insert(manifest.cpu[i].name).second)
      return makeError(indexPath("cpu", i), ".name: duplicate variant '", manifest.cpu[i].name,
                       "'");
  // Every file the runtime may read carries a digest.
  std::set<std::string> listed;
  for (size_t i = 0; i < manifest.files.size(); ++i)
    if (!listed.insert(manifest.files[i].path).second)
      return makeError(indexPath("files", i), ".path: '", manifest.files[i].path,
                       "' is listed twice");
  for (size_t i = 0; i < manifest.cpu.size(); ++i)
    if (!listed.count(manifest.cpu[i].file))
      return makeError(indexPath("cpu", i), ".file: '", manifest.cpu[i].file,
                       "' has no sha256 in files");
  for (size_t i = 0; i < manifest.cuda.size(); ++i)
    if (!listed.count(manifest.cuda[i].file))
      return makeError(indexPath("cuda", i), ".file: '", manifest.cuda[i].file,
                       "' has no sha256 in files");
  bool readsWeights = false;
  for (const BufferDesc &buffer : manifest.buffers)
    readsWeights |= buffer.kind == BufferKind::Weight;
  if (manifest.training)
    for (const TrainingInfo::State &state : manifest.training->state)
      readsWeights |= !state.init.empty();
  if (readsWeights && !listed.count("weights.safetensors"))
    return makeError("files: weights.safetensors has no sha256, but the bundle reads weights");
  for (size_t i = 0; i < manifest.guards.size(); ++i) {
    std::string path = indexPath("guards", i);
    TC_RETURN_IF_ERROR(checkExpr(manifest.guards[i].lhs, path + ".lhs"));
    TC_RETURN_IF_ERROR(checkExpr(manifest.guards[i].rhs, path + ".rhs"));
  }
  if (manifest.training) {
    TC_RETURN_IF_ERROR(validateTraining(manifest, *manifest.training));
  }
  return Status::ok();
}

} // namespace tensorc::bundle
