// Reading and writing .safetensors files (8-byte header length, JSON header, raw data).
#pragma once

#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tensorc {

/// Parses a whole safetensors file held in memory, [data, data + size): the tensors view those
/// bytes, which `owner` (may be null) keeps alive. The checks of readSafetensors; errors name the
/// tensor, and callers add where the bytes came from.
Expected<std::map<std::string, Tensor>> parseSafetensors(const void *data, size_t size,
                                                         const std::shared_ptr<const void> &owner);

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
