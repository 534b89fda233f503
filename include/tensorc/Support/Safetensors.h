// Reading and writing .safetensors files (8-byte header length, JSON header, raw data).
#pragma once

#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace tensorc {

/// Reads every tensor of `path`. The file is mapped read-only and the tensors view the mapping.
/// Rejects truncated files, bad headers, unknown dtypes, overflowing shapes and offsets that do
/// not match the shape or leave the data section; errors name the file and tensor.
Expected<std::map<std::string, Tensor>> readSafetensors(const std::string &path);

/// Writes `tensors`, the data section aligned to 64 bytes and larger element types first (so each
/// tensor is aligned to its element size; equal sizes keep the given order). Written to a
/// temporary file first and renamed into place, so a failure leaves no partial file.
Status writeSafetensors(const std::string &path,
                        const std::vector<std::pair<std::string, Tensor>> &tensors);

} // namespace tensorc
