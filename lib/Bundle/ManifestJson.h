// Internal to lib/Bundle: reading typed JSON fields with errors that name their manifest path
// ("launches[3].args[1]: ..."), and writing size expressions as JSON.
#pragma once

#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Support/EnumNames.h"
#include "tensorc/Support/StrCat.h"

#include <string>
#include <vector>

namespace tensorc::bundle {

/// The manifest's spelling of the kinds (bufferKindName, launchKindName and the reader).
inline constexpr EnumName<BufferKind> kBufferKindNames[] = {{BufferKind::Input, "input"},
                                                            {BufferKind::Output, "output"},
                                                            {BufferKind::Weight, "weight"},
                                                            {BufferKind::Arena, "arena"}};
inline constexpr EnumName<LaunchKind> kLaunchKindNames[] = {
    {LaunchKind::Kernel, "kernel"}, {LaunchKind::Extern, "extern"}, {LaunchKind::Copy, "copy"}};

/// A size expression as JSON: plain integers stay JSON integers, anything else keeps its text.
inline Json exprJson(const SizeExpr &expr) {
  std::optional<int64_t> value = expr.constantValue();
  if (value && (expr.text().empty() || expr.text() == std::to_string(*value)))
    return Json(*value);
  return Json(expr.text());
}

/// A JSON array holding `toJson(item)` for each of `items`.
template <typename T, typename ToJson>
Json jsonArray(const std::vector<T> &items, ToJson &&toJson) {
  Json list = Json::array();
  for (const T &item : items)
    list.push(toJson(item));
  return list;
}

/// A JSON array of plain values (strings, integers).
template <typename T> Json jsonArray(const std::vector<T> &items) {
  return jsonArray(items, [](const T &item) { return Json(item); });
}

inline Json exprListJson(const std::vector<SizeExpr> &exprs) { return jsonArray(exprs, exprJson); }

/// A CUDA launch's block, dynamic shared memory and split-K workspaces, each field only where it
/// has one (the manifest's launches and the kernel signatures write the same fields).
inline void writeCudaLaunchShape(Json &item, const Launch &launch) {
  if (launch.cudaBlock > 0)
    item["cuda_block"] = launch.cudaBlock;
  if (launch.cudaSharedBytes > 0)
    item["cuda_smem"] = launch.cudaSharedBytes;
  if (launch.splitK()) {
    item["cuda_partials"] = exprJson(launch.cudaPartials);
    item["cuda_counters"] = exprJson(launch.cudaCounters);
  }
  if (const std::optional<HopperGemm> &hopper = launch.hopper) {
    auto map = [](const HopperGemm::Map &m) {
      Json item = Json::object();
      item["arg"] = m.arg;
      item["offset"] = exprJson(m.offset);
      item["rows"] = exprJson(m.rows);
      item["ld"] = exprJson(m.ld);
      item["batch_stride"] = exprJson(m.batchStride);
      item["box_rows"] = m.boxRows;
      return item;
    };
    Json form = Json::object();
    form["dtype"] = std::string(dtypeName(hopper->dtype));
    if (hopper->tf32)
      form["tf32"] = true;
    form["k"] = exprJson(hopper->k);
    form["batch"] = exprJson(hopper->batch);
    form["units"] = exprJson(hopper->units);
    form["blocks_per_sm"] = hopper->blocksPerSm;
    form["block"] = hopper->block;
    form["smem"] = hopper->sharedBytes;
    form["a"] = map(hopper->a);
    form["b"] = map(hopper->b);
    item["cuda_sm90a"] = std::move(form);
  }
}

/// A GEMM call as JSON; `choice` adds what tuning chose (the kernel signature table leaves it out).
inline Json gemmCallJson(const GemmCall &gemm, bool choice) {
  auto operand = [](const GemmCall::Operand &o) {
    Json item = Json::object();
    item["arg"] = o.arg;
    item["offset"] = exprJson(o.offset);
    item["ld"] = exprJson(o.ld);
    item["batch_stride"] = exprJson(o.batchStride);
    item["k_contiguous"] = o.kContiguous;
    return item;
  };
  Json item = Json::object();
  item["dtype"] = std::string(dtypeName(gemm.dtype));
  if (gemm.tf32)
    item["tf32"] = true;
  item["a"] = operand(gemm.a);
  item["b"] = operand(gemm.b);
  item["output"] = gemm.output;
  if (gemm.direct)
    item["direct"] = true;
  if (gemm.bias >= 0)
    item["bias"] = gemm.bias;
  item["m"] = exprJson(gemm.m);
  item["n"] = exprJson(gemm.n);
  item["k"] = exprJson(gemm.k);
  item["batch"] = exprJson(gemm.batch);
  item["epilogue_grid"] = exprJson(gemm.epilogueGrid);
  if (choice && !gemm.library.empty()) {
    item["library"] = gemm.library;
    item["algo"] = gemm.algo;
  }
  return item;
}

/// "an integer" for messages.
inline const char *kindName(Json::Kind kind) {
  static constexpr EnumName<Json::Kind> kNames[] = {
      {Json::Kind::Null, "null"},       {Json::Kind::Bool, "a boolean"},
      {Json::Kind::Int, "an integer"},  {Json::Kind::Float, "a number"},
      {Json::Kind::String, "a string"}, {Json::Kind::Array, "an array"},
      {Json::Kind::Object, "an object"}};
  return enumName(kNames, kind);
}

inline std::string fieldPath(const std::string &parent, const std::string &key) {
  return parent.empty() ? key : parent + "." + key;
}
inline std::string indexPath(const std::string &parent, size_t index) {
  return strCat(parent, "[", index, "]");
}

/// Reads typed fields of one JSON object; every error names the field's path.
class ObjectReader {
public:
  static Expected<ObjectReader> open(const Json &json, std::string path) {
    if (!json.isObject())
      return makeError(path.empty() ? "manifest" : path, ": expected an object, got ",
                       kindName(json.kind()));
    return ObjectReader(json, std::move(path));
  }

  std::string path(const std::string &key) const { return fieldPath(path_, key); }

  /// The member `key` of `kind`; nullptr when absent and optional.
  Expected<const Json *> get(const std::string &key, Json::Kind kind, bool required = true) const {
    const Json *value = json_->find(key);
    if (!value) {
      if (required)
        return makeError(path(key), ": missing");
      return static_cast<const Json *>(nullptr);
    }
    if (value->kind() != kind)
      return makeError(path(key), ": expected ", kindName(kind), ", got ", kindName(value->kind()));
    return value;
  }

  Expected<std::string> string(const std::string &key, bool required = true) const {
    TC_ASSIGN_OR_RETURN(const Json *value, get(key, Json::Kind::String, required));
    return value ? value->asString() : std::string();
  }
  /// The string member `key`, which must not be empty (`what` names it in the error).
  Expected<std::string> nonEmptyString(const std::string &key, const char *what) const {
    TC_ASSIGN_OR_RETURN(std::string value, string(key));
    if (value.empty())
      return makeError(path(key), ": empty ", what);
    return value;
  }
  /// The string member `key`, one of the names in `table`; `what` names it in the error.
  template <typename E, size_t N>
  Expected<E> choice(const std::string &key, const EnumName<E> (&table)[N],
                     const char *what) const {
    TC_ASSIGN_OR_RETURN(std::string name, string(key));
    if (std::optional<E> value = parseEnumName(table, name))
      return *value;
    return makeError(path(key), ": unknown ", what, " '", name, "' (expected ", enumNameList(table),
                     ")");
  }
  Expected<int64_t> integer(const std::string &key, bool required = true,
                            int64_t fallback = 0) const {
    TC_ASSIGN_OR_RETURN(const Json *value, get(key, Json::Kind::Int, required));
    return value ? value->asInt() : fallback;
  }
  Expected<bool> boolean(const std::string &key, bool required = true,
                         bool fallback = false) const {
    TC_ASSIGN_OR_RETURN(const Json *value, get(key, Json::Kind::Bool, required));
    return value ? value->asBool() : fallback;
  }
  Expected<DType> dtype(const std::string &key) const {
    TC_ASSIGN_OR_RETURN(std::string name, string(key));
    std::optional<DType> dtype = parseDType(name);
    if (!dtype)
      return makeError(path(key), ": unknown dtype '", name, "'");
    return *dtype;
  }
  Expected<SizeExpr> expr(const std::string &key, bool required = true) const {
    const Json *value = json_->find(key);
    if (!value && !required)
      return SizeExpr();
    if (!value)
      return makeError(path(key), ": missing");
    return parseExpr(*value, path(key));
  }
  Expected<std::vector<SizeExpr>> exprList(const std::string &key) const {
    TC_ASSIGN_OR_RETURN(const Json *list, get(key, Json::Kind::Array));
    std::vector<SizeExpr> exprs;
    for (size_t i = 0; i < list->items().size(); ++i) {
      TC_ASSIGN_OR_RETURN(SizeExpr expr, parseExpr(list->items()[i], indexPath(path(key), i)));
      exprs.push_back(std::move(expr));
    }
    return exprs;
  }
  Expected<std::vector<std::string>> stringList(const std::string &key, bool required) const {
    TC_ASSIGN_OR_RETURN(const Json *list, get(key, Json::Kind::Array, required));
    std::vector<std::string> strings;
    if (!list)
      return strings;
    for (size_t i = 0; i < list->items().size(); ++i) {
      const Json &item = list->items()[i];
      if (!item.isString())
        return makeError(indexPath(path(key), i), ": expected a string, got ",
                         kindName(item.kind()));
      strings.push_back(item.asString());
    }
    return strings;
  }

  static Expected<SizeExpr> parseExpr(const Json &value, const std::string &path) {
    if (value.isInt())
      return SizeExpr::constant(value.asInt());
    if (!value.isString())
      return makeError(path, ": expected an integer or a size expression string, got ",
                       kindName(value.kind()));
    Expected<SizeExpr> expr = SizeExpr::parse(value.asString());
    if (!expr)
      return makeError(path, ": ", expr.error().message());
    return expr;
  }

private:
  ObjectReader(const Json &json, std::string path) : json_(&json), path_(std::move(path)) {}
  const Json *json_;
  std::string path_;
};

/// Calls `read(item, path)` for each element of the array `key`.
template <typename T, typename ReadFn>
Expected<std::vector<T>> readList(const ObjectReader &reader, const std::string &key, bool required,
                                  ReadFn read) {
  TC_ASSIGN_OR_RETURN(const Json *list, reader.get(key, Json::Kind::Array, required));
  std::vector<T> result;
  if (!list)
    return result;
  for (size_t i = 0; i < list->items().size(); ++i) {
    TC_ASSIGN_OR_RETURN(ObjectReader item,
                        ObjectReader::open(list->items()[i], indexPath(reader.path(key), i)));
    TC_ASSIGN_OR_RETURN(T value, read(item));
    result.push_back(std::move(value));
  }
  return result;
}

/// Checks everything the runtime relies on (ManifestValidate.cpp); Manifest::fromJson calls it.
Status validateManifest(const Manifest &manifest);

/// Bundle files must stay inside the bundle: a relative path without a `..` component. `path`
/// names the field in the error.
Status checkBundlePath(const std::string &path, const std::string &file);

} // namespace tensorc::bundle
