// Which CUDA module images a device loads: the same choice (a cubin of one arch, or the PTX) of
// every module the kernels are split over.
#include "tensorc/Bundle/Manifest.h"
#include "tensorc/Support/StrCat.h"

#include <algorithm>
#include <cstdlib>

namespace tensorc::bundle {

Expected<std::vector<const CudaImage *>> chooseCudaImages(const Manifest &manifest, int major,
                                                          int minor, const std::string &device) {
  auto archNumber = [](const std::string &arch) { return std::atoi(arch.c_str() + 3); };
  int deviceArch = major * 10 + minor;
  // A cubin runs on its own major architecture at an equal or newer minor; PTX JIT-compiles for
  // any newer device. Chosen among module 0's images; the others have the same (fromJson).
  const CudaImage *chosen = nullptr;
  int64_t modules = 0;
  for (const CudaImage &image : manifest.cuda) {
    modules = std::max(modules, image.module + 1);
    if (image.module != 0 || image.arch == kHopperArch)
      continue;
    int arch = archNumber(image.arch);
    bool fits = image.ptx ? arch <= deviceArch : arch / 10 == major && arch % 10 <= minor;
    if (!fits)
      continue;
    // Prefer cubins, then the newest arch.
    if (!chosen || (chosen->ptx && !image.ptx) ||
        (chosen->ptx == image.ptx && arch > archNumber(chosen->arch)))
      chosen = &image;
  }
  if (!chosen) {
    std::vector<std::string> built;
    for (const CudaImage &image : manifest.cuda)
      if (image.module == 0 && image.arch != kHopperArch)
        built.push_back(image.arch + (image.ptx ? " (PTX)" : ""));
    return makeError("bundle built for ", join(built, ", "), "; ", device, " is sm_", deviceArch);
  }
  std::vector<const CudaImage *> images(size_t(modules), nullptr);
  for (const CudaImage &image : manifest.cuda)
    if (image.arch == chosen->arch && image.ptx == chosen->ptx && image.arch != kHopperArch)
      images[size_t(image.module)] = &image;
  for (size_t m = 0; m < images.size(); ++m)
    if (!images[m])
      return makeError("cuda: module ", m, " has no ", chosen->arch,
                       chosen->ptx ? " PTX" : " cubin", " image, which module 0 has");
  return images;
}

std::vector<const CudaImage *> chooseHopperImages(const Manifest &manifest, int major, int minor) {
  int64_t modules = 0;
  for (const CudaImage &image : manifest.cuda)
    modules = std::max(modules, image.module + 1);
  std::vector<const CudaImage *> images(size_t(modules), nullptr);
  if (major != 9 || minor != 0) // arch-specific cubins run on their own CC alone
    return images;
  for (const CudaImage &image : manifest.cuda)
    if (image.arch == kHopperArch && !image.ptx)
      images[size_t(image.module)] = &image;
  return images;
}

} // namespace tensorc::bundle
