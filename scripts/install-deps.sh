#!/usr/bin/env bash
# Installs everything tensorc builds and tests with, from Debian's packages and PyPI.
# Idempotent: returns at once when everything is already there. Run as root (or with sudo).
set -euo pipefail

DEBIAN_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config
  llvm-19-dev llvm-19-tools lld-19 libzstd-dev
  libonnx-dev libonnx-testdata libprotobuf-dev protobuf-compiler
  libcli11-dev libspdlog-dev libfmt-dev libgtest-dev
  g++-aarch64-linux-gnu qemu-user
  clang libclang-rt-14-dev
  python3 python3-dev python3-pip pybind11-dev
)
# pytest runs the Python package's tests; scikit-build-core is the build backend of `pip install .`
# (installed here so that `pip install --no-build-isolation .` needs no download).
PYTHON_PACKAGES=(numpy onnx onnxruntime pytest scikit-build-core)

missing=()
for package in "${DEBIAN_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c "import numpy, onnx, onnxruntime, pytest, scikit_build_core" 2>/dev/null; then
  echo "install-deps: installing Python packages ${PYTHON_PACKAGES[*]}"
  "$PYTHON" -m pip install -q "${PYTHON_PACKAGES[@]}" 2>/dev/null ||
    "$PYTHON" -m pip install -q --break-system-packages "${PYTHON_PACKAGES[@]}"
fi

if [ ! -d /usr/local/cuda ]; then
  echo "install-deps: note: no CUDA toolkit at /usr/local/cuda (needed only by the CUDA backend)"
fi
echo "install-deps: all dependencies present"
