// A hook between a bundle's launches (`tensorc bisect`): read what a launch wrote, or set what
// the next one reads, on the CPU or (with a synchronization per launch) on a GPU.
#pragma once

#include "tensorc/Support/Status.h"
#include "tensorc/Support/Tensor.h"

#include <cstddef>
#include <cstdint>

namespace tensorc::rt {

/// The model's buffers as they are between two launches (ids of the manifest's buffers).
class BufferAccess {
public:
  virtual ~BufferAccess() = default;
  /// A host copy of buffer `id` (on a GPU: copied from the device).
  virtual Expected<Tensor> read(int64_t id) = 0;
  /// Overwrites buffer `id` (an arena or output buffer; inputs and weights are read-only) with
  /// `value`, which has its dtype and element count.
  virtual Status write(int64_t id, const Tensor &value) = 0;
};

/// Called around every launch of a run (Model::setLaunchObserver). An error stops the run.
class LaunchObserver {
public:
  virtual ~LaunchObserver() = default;
  virtual Status beforeLaunch(size_t launch, BufferAccess &buffers) = 0;
  virtual Status afterLaunch(size_t launch, BufferAccess &buffers) = 0;
};

} // namespace tensorc::rt
