// Loading and saving .fx files together with their side .safetensors weights.
#include "tensorc/Frontend/FX/FxParser.h"

#include "tensorc/IR/Printer.h"
#include "tensorc/Support/MappedFile.h"
#include "tensorc/Support/Safetensors.h"
#include "tensorc/Support/StrCat.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace tensorc::fx {

namespace {

constexpr size_t kMaxTextBytes = size_t(256) << 20;

Expected<std::string> readText(const std::string &path) {
  return readRegularFile(path, kMaxTextBytes,
                         strCat("larger than ", kMaxTextBytes >> 20, " MiB of text"));
}

/// Whether a side weights file is there; anything but a regular file (a FIFO, a directory) is
/// reported by the reader instead of being opened.
bool fileExists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

} // namespace

std::string weightsPathFor(const std::string &fxPath) {
  size_t slash = fxPath.rfind('/');
  size_t dot = fxPath.rfind('.');
  std::string stem = (dot != std::string::npos && (slash == std::string::npos || dot > slash))
                         ? fxPath.substr(0, dot)
                         : fxPath;
  return stem + ".safetensors";
}

Expected<Graph> loadFxFile(const std::string &path, const OpRegistry &registry) {
  TC_ASSIGN_OR_RETURN(std::string text, readText(path));
  TC_ASSIGN_OR_RETURN(Graph graph, parseFx(text, registry, path));
  std::string weightsPath = weightsPathFor(path);
  if (!fileExists(weightsPath))
    return graph;
  TC_ASSIGN_OR_RETURN(auto weights, readSafetensors(weightsPath));
  for (auto &[name, tensor] : weights) {
    Value *placeholder = graph.findValue(name);
    if (!placeholder || !placeholder->isGraphInput())
      return makeError(weightsPath, ": tensor '", name, "' has no placeholder %", name, " in ",
                       path);
    TensorType type = TensorType::fromStatic(tensor.dtype(), tensor.shape());
    if (type != placeholder->type())
      return makeError(weightsPath, ": tensor '", name, "' is ", type.str(), " but ", path,
                       " declares %", name, ": ", placeholder->type().str());
    graph.weights()[name] = std::move(tensor);
  }
  return graph;
}

Status saveFxFile(const Graph &graph, const std::string &path) {
  std::string temporary = strCat(path, ".tmp.", ::getpid());
  {
    std::ofstream out(temporary, std::ios::binary);
    out << printGraph(graph);
    out.close();
    if (!out) {
      std::remove(temporary.c_str());
      return makeError(path, ": write failed");
    }
  }
  if (!graph.weights().empty()) {
    std::vector<std::pair<std::string, Tensor>> tensors(graph.weights().begin(),
                                                        graph.weights().end());
    Status written = writeSafetensors(weightsPathFor(path), tensors);
    if (!written) {
      std::remove(temporary.c_str());
      return written;
    }
  }
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::remove(temporary.c_str());
    return makeError(path, ": cannot rename into place: ", std::strerror(errno));
  }
  return Status::ok();
}

} // namespace tensorc::fx
