// What the CUDA compiler checks in rendered source before NVRTC reads it: where each kernel is
// (to name the one an error is about) and how deeply its expressions nest (NVRTC recurses per
// level and overflows its stack on expressions thousands deep).
#include "tensorc/Codegen/CUDA/CudaCodegen.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace tensorc::cuda {

namespace {

bool identifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

/// The position after the parenthesized group opening at `at` (or the end).
size_t skipGroup(const std::string &text, size_t at) {
  int depth = 0;
  for (size_t i = at; i < text.size(); ++i) {
    if (text[i] == '(')
      ++depth;
    else if (text[i] == ')' && --depth == 0)
      return i + 1;
  }
  return text.size();
}

/// The name of the __global__ function declared from `at` (after `void`): the identifier before
/// its parameter list, past attributes such as __launch_bounds__(256).
std::string kernelName(const std::string &text, size_t at) {
  size_t i = at;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    size_t start = i;
    while (i < text.size() && identifierChar(text[i]))
      ++i;
    if (start == i)
      return "";
    std::string word = text.substr(start, i - start);
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i])))
      ++i;
    if (i < text.size() && text[i] == '(') {
      if (word.compare(0, 2, "__") != 0)
        return word;
      i = skipGroup(text, i);
    }
  }
  return "";
}

} // namespace

int expressionDepth(const std::string &source) {
  int depth = 0, deepest = 0;
  size_t n = source.size();
  for (size_t i = 0; i < n; ++i) {
    char c = source[i];
    if (c == '/' && i + 1 < n && source[i + 1] == '/') {
      i = source.find('\n', i);
      if (i == std::string::npos)
        break;
    } else if (c == '/' && i + 1 < n && source[i + 1] == '*') {
      i = source.find("*/", i + 2);
      if (i == std::string::npos)
        break;
      ++i;
    } else if (c == '"' || c == '\'') {
      for (++i; i < n && source[i] != c; ++i)
        if (source[i] == '\\')
          ++i;
    } else if (c == '(' || c == '[') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ')' || c == ']') {
      depth = std::max(depth - 1, 0);
    }
  }
  return deepest;
}

std::vector<SourceKernel> sourceKernels(const std::string &source) {
  static const char kMarker[] = "extern \"C\" __global__ void";
  std::vector<SourceKernel> kernels;
  size_t line = 1, counted = 0;
  for (size_t at = source.find(kMarker); at != std::string::npos;
       at = source.find(kMarker, at + 1)) {
    line += size_t(std::count(source.begin() + long(counted), source.begin() + long(at), '\n'));
    counted = at;
    if (!kernels.empty()) {
      kernels.back().lastLine = line - 1;
      kernels.back().end = at;
    }
    kernels.push_back({kernelName(source, at + std::strlen(kMarker)), line, line, at, at});
  }
  if (!kernels.empty()) {
    kernels.back().lastLine =
        line + size_t(std::count(source.begin() + long(counted), source.end(), '\n'));
    kernels.back().end = source.size();
  }
  return kernels;
}

} // namespace tensorc::cuda
