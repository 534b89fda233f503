// costs.json writing and validation.
#include "tensorc/Bundle/LaunchCosts.h"

#include "tensorc/Support/StrCat.h"

#include <algorithm>

namespace tensorc::bundle {

namespace {
constexpr int64_t kCostsFormat = 1;
} // namespace

Json LaunchCosts::toJson() const {
  Json json = Json::object();
  json["format"] = kCostsFormat;
  Json list = Json::array();
  for (const LaunchCost &launch : launches) {
    Json item = Json::object();
    item["name"] = launch.name;
    item["bytes"] = launch.bytes.text();
    item["flops"] = launch.flops.text();
    list.push(std::move(item));
  }
  json["launches"] = std::move(list);
  return json;
}

Expected<LaunchCosts> LaunchCosts::fromJson(const Json &json, const Manifest &manifest) {
  const Json *format = json.isObject() ? json.find("format") : nullptr;
  if (!format || !format->isInt() || format->asInt() != kCostsFormat)
    return makeError(kLaunchCostsFile, ": expected an object with \"format\": ", kCostsFormat);
  const Json *list = json.find("launches");
  if (!list || !list->isArray())
    return makeError(kLaunchCostsFile, ": launches: expected an array");
  if (list->items().size() != manifest.launches.size())
    return makeError(kLaunchCostsFile, ": ", list->items().size(),
                     " launches, but the manifest has ", manifest.launches.size());
  LaunchCosts costs;
  for (size_t i = 0; i < list->items().size(); ++i) {
    const Json &item = list->items()[i];
    std::string where = strCat(kLaunchCostsFile, ": launches[", i, "]");
    auto text = [&](const char *key) -> Expected<std::string> {
      const Json *value = item.isObject() ? item.find(key) : nullptr;
      if (!value || !value->isString())
        return makeError(where, ".", key, ": expected a string");
      return value->asString();
    };
    LaunchCost cost;
    TC_ASSIGN_OR_RETURN(cost.name, text("name"));
    if (cost.name != manifest.launches[i].name)
      return makeError(where, ".name: '", cost.name, "', but the manifest's launch is '",
                       manifest.launches[i].name, "'");
    TC_ASSIGN_OR_RETURN(std::string bytes, text("bytes"));
    TC_ASSIGN_OR_RETURN(std::string flops, text("flops"));
    Expected<SizeExpr> bytesExpr = SizeExpr::parse(bytes);
    if (!bytesExpr)
      return bytesExpr.takeError().withContext(where + ".bytes");
    Expected<SizeExpr> flopsExpr = SizeExpr::parse(flops);
    if (!flopsExpr)
      return flopsExpr.takeError().withContext(where + ".flops");
    std::set<std::string> used;
    bytesExpr->collectSymbols(used);
    flopsExpr->collectSymbols(used);
    for (const std::string &symbol : used)
      if (std::find(manifest.symbols.begin(), manifest.symbols.end(), symbol) ==
          manifest.symbols.end())
        return makeError(where, ": unknown symbol '", symbol, "'");
    cost.bytes = std::move(*bytesExpr);
    cost.flops = std::move(*flopsExpr);
    costs.launches.push_back(std::move(cost));
  }
  return costs;
}

} // namespace tensorc::bundle
