#include "util/file_util.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdio>

#include "absl/strings/str_cat.h"

namespace graphopt {
namespace {

absl::Status ErrnoStatus(int error, absl::string_view what, const std::string& path) {
  return absl::ErrnoToStatus(error, absl::StrCat("cannot ", what, " '", path, "'"));
}

// Writes all of `bytes` to `path` (created or truncated).
absl::Status WriteWhole(const std::string& path, absl::string_view bytes) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) return ErrnoStatus(errno, "create", path);
  const bool wrote = std::fwrite(bytes.data(), 1, bytes.size(), file) == bytes.size();
  const int write_error = errno;
  const bool closed = std::fclose(file) == 0;
  const int close_error = errno;
  if (!wrote || !closed) return ErrnoStatus(wrote ? close_error : write_error, "write", path);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) return ErrnoStatus(errno, "open", path);
  std::string contents;
  // One allocation of the file's size when it is known (models can be gigabytes).
  if (std::fseek(file, 0, SEEK_END) == 0) {
    const long size = std::ftell(file);
    if (size > 0) contents.reserve(static_cast<size_t>(size));
    std::rewind(file);
  }
  char buffer[1 << 16];
  while (true) {
    const size_t n = std::fread(buffer, 1, sizeof(buffer), file);
    contents.append(buffer, n);
    if (n < sizeof(buffer)) break;
  }
  const bool failed = std::ferror(file) != 0;
  const int error = errno;
  std::fclose(file);
  if (failed) return ErrnoStatus(error, "read", path);
  return contents;
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes) {
  struct stat info;
  if (::stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode)) {
    if (S_ISDIR(info.st_mode)) return ErrnoStatus(EISDIR, "write", path);
    return WriteWhole(path, bytes);
  }
  const std::string tmp_path = absl::StrCat(path, ".tmp");
  if (absl::Status written = WriteWhole(tmp_path, bytes); !written.ok()) {
    std::remove(tmp_path.c_str());
    return written;
  }
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    const int error = errno;
    std::remove(tmp_path.c_str());
    return ErrnoStatus(error, absl::StrCat("rename '", tmp_path, "' to"), path);
  }
  return absl::OkStatus();
}

}  // namespace graphopt
