// The DLPack exchange structs (a public, stable C ABI; written here from its specification, v1.0
// and the older unversioned form): how tensors pass between tensorc and torch, cupy, numpy, jax.
#pragma once

#include <cstdint>

namespace tensorc::python::dlpack {

// DLDeviceType values used here.
constexpr int32_t kCPU = 1;
constexpr int32_t kCUDA = 2;
constexpr int32_t kCUDAHost = 3;     // pinned host memory: readable on the host
constexpr int32_t kCUDAManaged = 13; // unified memory: readable by kernels of the device

// DLDataTypeCode values.
constexpr uint8_t kInt = 0;
constexpr uint8_t kUInt = 1;
constexpr uint8_t kFloat = 2;
constexpr uint8_t kBfloat = 4;
constexpr uint8_t kBool = 6;

struct Device {
  int32_t deviceType;
  int32_t deviceId;
};

struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};

struct Tensor {
  void *data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t *shape;
  int64_t *strides; // in elements; null = compact row-major
  uint64_t byteOffset;
};

/// The unversioned form, in a capsule named "dltensor".
struct ManagedTensor {
  Tensor dlTensor;
  void *managerContext;
  void (*deleter)(ManagedTensor *self);
};

struct Version {
  uint32_t major;
  uint32_t minor;
};

constexpr uint64_t kFlagReadOnly = 1;

/// DLPack 1.x, in a capsule named "dltensor_versioned".
struct ManagedTensorVersioned {
  Version version;
  void *managerContext;
  void (*deleter)(ManagedTensorVersioned *self);
  uint64_t flags;
  Tensor dlTensor;
};

constexpr const char *kCapsule = "dltensor";
constexpr const char *kUsedCapsule = "used_dltensor";
constexpr const char *kVersionedCapsule = "dltensor_versioned";
constexpr const char *kUsedVersionedCapsule = "used_dltensor_versioned";

} // namespace tensorc::python::dlpack
