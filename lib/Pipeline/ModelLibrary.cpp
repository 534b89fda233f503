// The `--emit=so` link: embedded-bundle object + runtime archives -> one model library.
#include "tensorc/Pipeline/ModelLibrary.h"

#include "tensorc/Bundle/EmbeddedBundle.h"

#include "tensorc/Codegen/CPU/RunTool.h"
#include "tensorc/Codegen/CPU/Target.h"
#include "tensorc/Support/StrCat.h"

#include <llvm/Support/FileSystem.h>
#include <llvm/Support/Program.h>
#include <llvm/Support/raw_ostream.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <unistd.h>

// Set by lib/Pipeline/CMakeLists.txt: the runtime's static archives, '|'-separated, tensorc_rt
// first, the C++ compiler they were built with, and (sanitized builds) one more link flag.
#ifndef TENSORC_RUNTIME_ARCHIVES
#error "TENSORC_RUNTIME_ARCHIVES must name the runtime archives"
#endif
#ifndef TENSORC_CXX_DRIVER
#define TENSORC_CXX_DRIVER "c++"
#endif

namespace tensorc {

namespace {

namespace fs = std::filesystem;

/// Exported: the C ABI, nothing else. Every runtime, C++ library-template and embedded-data
/// symbol stays local, so two model libraries in one process never bind to each other.
constexpr const char *kVersionScript = "{\n  global: tc_*;\n  local: *;\n};\n";

std::vector<std::string> splitArchives(std::string_view list) {
  std::vector<std::string> paths;
  for (size_t begin = 0; begin <= list.size();) {
    size_t end = std::min(list.find('|', begin), list.size());
    paths.emplace_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return paths;
}

/// The runtime archives to link: tensorc_rt first. An installed tensorc (`cmake --install`, or the
/// Python package) links the one combined archive installed with it, found relative to the
/// running executable (TENSORC_INSTALLED_RUNTIME_ARCHIVE, set by cmake/TensorcInstall.cmake), so
/// that it needs no build tree; a tensorc in its build tree links that tree's archives.
std::vector<std::string> runtimeArchives() {
#ifdef TENSORC_INSTALLED_RUNTIME_ARCHIVE
  std::string self = llvm::sys::fs::getMainExecutable(nullptr, nullptr);
  if (!self.empty()) {
    fs::path installed = fs::path(self).parent_path() / TENSORC_INSTALLED_RUNTIME_ARCHIVE;
    std::error_code ec;
    if (fs::is_regular_file(installed, ec))
      return {installed.lexically_normal().string()};
  }
#endif
  return splitArchives(TENSORC_RUNTIME_ARCHIVES);
}

/// The driver as a path: ExecuteAndWait does not search PATH itself.
Expected<std::string> cxxDriver(const std::string &given) {
  std::string name = given;
  if (const char *env = std::getenv("TENSORC_CXX"); name.empty() && env && *env)
    name = env;
  if (name.empty())
    name = TENSORC_CXX_DRIVER;
  if (name.find('/') != std::string::npos)
    return name;
  llvm::ErrorOr<std::string> found = llvm::sys::findProgramByName(name);
  if (!found)
    return makeError("C++ compiler driver '", name, "' is not on PATH (set TENSORC_CXX)");
  return *found;
}

} // namespace

Status linkModelLibrary(const std::vector<cpu::EmbedFile> &files, const std::string &outPath,
                        const std::string &cxx, const std::string &tempDir) {
  if (cpu::hostArch() != "x86_64")
    return makeError("--emit=so builds for the host, and only x86_64 hosts are supported");
  TC_ASSIGN_OR_RETURN(std::string driver, cxxDriver(cxx));
  TC_ASSIGN_OR_RETURN(std::vector<cpu::CpuTarget> hostTargets, cpu::targetsForArch("x86_64"));
  TC_ASSIGN_OR_RETURN(std::string object,
                      cpu::emitEmbeddedBundleObject(
                          files, hostTargets.front().triple,
                          {bundle::kEmbeddedBundleSymbol, bundle::kEmbeddedBundleVersion}));

  cpu::TempFiles temps(tempDir, "tensorc-so");
  TC_ASSIGN_OR_RETURN(std::string objectPath, temps.create(".o"));
  TC_ASSIGN_OR_RETURN(std::string scriptPath, temps.create(".map"));
  TC_ASSIGN_OR_RETURN(std::string logPath, temps.create(".log"));
  TC_RETURN_IF_ERROR(cpu::writeFile(objectPath, object));
  object = {}; // the weights may be large: hold one copy less while linking
  TC_RETURN_IF_ERROR(cpu::writeFile(scriptPath, kVersionScript));

  std::vector<std::string> archives = runtimeArchives();
  std::vector<std::string> args = {driver, "-shared", "-o", outPath, objectPath};
  // tensorc_rt whole (nothing in the object references the C ABI it defines); the archives it
  // depends on as a group, so only what it reaches is linked.
  args.insert(args.end(), {"-Wl,--whole-archive", archives.front(), "-Wl,--no-whole-archive",
                           "-Wl,--start-group"});
  args.insert(args.end(), archives.begin() + 1, archives.end());
  args.insert(args.end(),
              {"-Wl,--end-group", "-ldl", "-lpthread", "-Wl,--version-script=" + scriptPath,
               // Calls between tc_* functions stay inside this library.
               "-Wl,-Bsymbolic", "-Wl,--no-undefined", "-Wl,-z,noexecstack"});
#ifdef TENSORC_SO_LINK_FLAG
  args.push_back(TENSORC_SO_LINK_FLAG);
#endif
  // The driver's own temporaries (collect2's) go to tempDir too.
  std::vector<std::string> environment;
  for (char **entry = environ; *entry; ++entry)
    if (std::strncmp(*entry, "TMPDIR=", 7) != 0)
      environment.emplace_back(*entry);
  if (!tempDir.empty())
    environment.push_back("TMPDIR=" + tempDir);
  Status linked = cpu::runTool(driver, args, environment, logPath, strCat("linking ", outPath));
  if (!linked)
    return makeError(linked.message(),
                     "\n(set TENSORC_CXX to the C++ compiler driver to link with)");
  return Status::ok();
}

} // namespace tensorc
