#include "service/op_persistence.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "service/tenant.h"

namespace graphopt {
namespace {

constexpr absl::string_view kOpsSuffix = ".ops.pb";
constexpr absl::string_view kTmpSuffix = ".tmp";
constexpr absl::string_view kCorruptSuffix = ".corrupt";

absl::Status Errno(int error, absl::string_view what) { return absl::ErrnoToStatus(error, what); }

// Closes `fd` on every path out of a scope.
class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) ::close(fd_);
  }
  // Closes now; the errno-derived status when close fails.
  absl::Status Close(absl::string_view path) {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) return Errno(errno, absl::StrCat("closing '", path, "'"));
    return absl::OkStatus();
  }

 private:
  int fd_;
};

absl::Status FsyncDirectory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, absl::StrCat("opening directory '", dir, "'"));
  FdCloser closer(fd);
  if (::fsync(fd) != 0) return Errno(errno, absl::StrCat("fsync of directory '", dir, "'"));
  return closer.Close(dir);
}

// Writes `bytes` to `path` through "`path`.tmp", fsync and rename.
absl::Status WriteFileDurably(const std::string& dir, const std::string& path,
                              const std::string& bytes) {
  const std::string tmp = absl::StrCat(path, kTmpSuffix);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Errno(errno, absl::StrCat("creating '", tmp, "'"));
  FdCloser closer(fd);
  auto fail = [&](int error, absl::string_view what) {
    ::unlink(tmp.c_str());
    return Errno(error, absl::StrCat(what, " '", tmp, "'"));
  };
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errno, "writing");
    }
    written += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) return fail(errno, "fsync of");
  if (absl::Status s = closer.Close(tmp); !s.ok()) {
    ::unlink(tmp.c_str());
    return s;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int error = errno;
    ::unlink(tmp.c_str());
    return Errno(error, absl::StrCat("renaming '", tmp, "' to '", path, "'"));
  }
  return FsyncDirectory(dir);
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Errno(errno, absl::StrCat("opening '", path, "'"));
  FdCloser closer(fd);
  std::string out;
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno(errno, absl::StrCat("reading '", path, "'"));
    }
    if (n == 0) break;
    out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// mkdir -p.
absl::Status MakeDirectories(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat("'", dir, "' is not a directory"));
  }
  const size_t slash = dir.find_last_of('/');
  if (slash != std::string::npos && slash > 0) {
    if (absl::Status s = MakeDirectories(dir.substr(0, slash)); !s.ok()) return s;
  }
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Errno(errno, absl::StrCat("creating directory '", dir, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

std::string SerializeOpsDeterministically(const v1::OpDescriptorList& ops) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    ops.SerializeToCodedStream(&coded);
  }
  return bytes;
}

// --- InMemoryOpPersistence ----------------------------------------------------------------------

absl::StatusOr<LoadedOps> InMemoryOpPersistence::LoadAll() {
  absl::MutexLock lock(&mu_);
  LoadedOps loaded;
  loaded.tenants = tenants_;
  return loaded;
}

absl::Status InMemoryOpPersistence::Save(absl::string_view tenant,
                                         const v1::OpDescriptorList& ops) {
  absl::MutexLock lock(&mu_);
  if (fail_saves_) {
    return absl::UnavailableError(
        absl::StrCat("saving the ops of tenant '", tenant, "': failure injected by a test"));
  }
  if (ops.ops().empty()) {
    tenants_.erase(std::string(tenant));
  } else {
    tenants_[std::string(tenant)] = ops;
  }
  ++saves_;
  return absl::OkStatus();
}

void InMemoryOpPersistence::set_fail_saves(bool fail) {
  absl::MutexLock lock(&mu_);
  fail_saves_ = fail;
}

int InMemoryOpPersistence::saves() const {
  absl::MutexLock lock(&mu_);
  return saves_;
}

// --- FileOpPersistence --------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<FileOpPersistence>> FileOpPersistence::Create(std::string dir) {
  if (dir.empty()) return absl::InvalidArgumentError("op store directory: empty path");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (absl::Status s = MakeDirectories(dir); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("op store directory: ", s.message()));
  }
  return std::unique_ptr<FileOpPersistence>(new FileOpPersistence(std::move(dir)));
}

std::string FileOpPersistence::Describe() const { return absl::StrCat("directory '", dir_, "'"); }

std::string FileOpPersistence::PathFor(absl::string_view tenant) const {
  return absl::StrCat(dir_, "/", tenant, kOpsSuffix);
}

absl::StatusOr<LoadedOps> FileOpPersistence::LoadAll() {
  absl::MutexLock lock(&mu_);
  DIR* d = ::opendir(dir_.c_str());
  if (d == nullptr) return Errno(errno, absl::StrCat("listing op store directory '", dir_, "'"));
  std::vector<std::string> names;
  errno = 0;
  while (const struct dirent* entry = ::readdir(d)) names.emplace_back(entry->d_name);
  const int read_error = errno;
  ::closedir(d);
  if (read_error != 0) {
    return Errno(read_error, absl::StrCat("listing op store directory '", dir_, "'"));
  }
  std::sort(names.begin(), names.end());

  LoadedOps loaded;
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(dir_, "/", name);
    if (absl::EndsWith(name, absl::StrCat(kOpsSuffix, kTmpSuffix))) {
      // An interrupted Save: the complete file (if any) is the previous state.
      if (::unlink(path.c_str()) != 0) {
        loaded.errors.push_back(absl::StrCat("cannot remove leftover temporary file '", path,
                                             "': ", std::strerror(errno)));
      }
      continue;
    }
    if (!absl::EndsWith(name, kOpsSuffix)) continue;
    const std::string tenant(absl::string_view(name).substr(0, name.size() - kOpsSuffix.size()));
    if (absl::Status s = ValidateTenantName(tenant); !s.ok()) {
      loaded.errors.push_back(absl::StrCat("ignoring '", path, "': ", s.message()));
      continue;
    }
    absl::StatusOr<std::string> bytes = ReadFile(path);
    if (!bytes.ok()) {
      loaded.errors.push_back(absl::StrCat("tenant '", tenant, "': ", bytes.status().message(),
                                           "; the tenant starts without ops"));
      continue;
    }
    v1::OpDescriptorList ops;
    if (!ops.ParseFromString(*bytes)) {
      std::string aside = absl::StrCat(path, kCorruptSuffix);
      for (int i = 1; ::access(aside.c_str(), F_OK) == 0; ++i) {
        aside = absl::StrCat(path, kCorruptSuffix, ".", i);
      }
      std::string what;
      if (::rename(path.c_str(), aside.c_str()) == 0) {
        what = absl::StrCat("moved aside to '", aside, "'");
      } else {
        what = absl::StrCat("cannot move it aside (", std::strerror(errno), ")");
      }
      loaded.errors.push_back(absl::StrCat("tenant '", tenant, "': '", path, "' (", bytes->size(),
                                           " bytes) is not a serialized OpDescriptorList; ", what,
                                           "; the tenant starts without ops"));
      continue;
    }
    loaded.tenants.emplace(tenant, std::move(ops));
  }
  return loaded;
}

absl::Status FileOpPersistence::Save(absl::string_view tenant, const v1::OpDescriptorList& ops) {
  if (absl::Status s = ValidateTenantName(tenant); !s.ok()) return s;
  absl::MutexLock lock(&mu_);
  const std::string path = PathFor(tenant);
  if (ops.ops().empty()) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return Errno(errno, absl::StrCat("removing '", path, "'"));
    }
    return FsyncDirectory(dir_);
  }
  return WriteFileDurably(dir_, path, SerializeOpsDeterministically(ops));
}

}  // namespace graphopt
