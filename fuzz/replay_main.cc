// Runs a fuzz target over files instead of under libFuzzer: each argument is a file or a folder
// of files, every file one input. What the `fuzz` preset's binaries found and what the seeds
// hold is replayed so in every build, g++ and the sanitizer presets included, as ctest tests:
// a crash that was fixed stays fixed without clang installed.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

int RunFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // A copy of exactly `size` bytes, so reading past the input is a sanitizer's error here too.
  std::vector<std::uint8_t> copy(bytes.begin(), bytes.end());
  return LLVMFuzzerTestOneInput(copy.data(), copy.size());
}

}  // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  int files = 0;
  for (int i = 1; i < argc; ++i) {
    const std::filesystem::path arg = argv[i];
    if (std::filesystem::is_directory(arg)) {
      std::vector<std::filesystem::path> inside;
      for (const auto& entry : std::filesystem::recursive_directory_iterator(arg))
        if (entry.is_regular_file()) inside.push_back(entry.path());
      std::sort(inside.begin(), inside.end());
      for (const auto& file : inside) files += RunFile(file) == 0 ? 1 : 0;
    } else if (std::filesystem::is_regular_file(arg)) {
      files += RunFile(arg) == 0 ? 1 : 0;
    } else {
      std::fprintf(stderr, "replay: %s: no such file or folder\n", argv[i]);
      return 2;
    }
  }
  std::printf("replayed %d inputs\n", files);
  return files > 0 ? 0 : 2;
}
