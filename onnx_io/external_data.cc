#include "onnx_io/external_data.h"

#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "onnx_io/onnx_import.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

constexpr int64_t kAlignment = 4096;

// One tensor to resolve, with how errors name it.
struct TensorRef {
  onnx::TensorProto* tensor;
  std::string what;
};

bool IsExternalFile(const onnx::TensorProto& t) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return false;
  for (const onnx::StringStringEntryProto& e : t.external_data()) {
    if (e.key() == "location") return !absl::StartsWith(e.value(), kBlobLocationPrefix);
  }
  return true;  // no location at all: an error LoadExternalData reports
}

// Every tensor of the model (initializers, tensor attributes; main graph, subgraphs and local
// functions), without recursion: subgraphs go on a work list.
template <typename Fn>
void ForEachTensor(onnx::ModelProto& model, Fn fn) {
  std::vector<onnx::GraphProto*> graphs = {model.mutable_graph()};
  auto visit_nodes = [&](auto* nodes) {
    for (onnx::NodeProto& n : *nodes) {
      for (onnx::AttributeProto& a : *n.mutable_attribute()) {
        const std::string what =
            absl::StrCat("attribute '", a.name(), "' of node '", n.name(), "' (", n.op_type(), ")");
        if (a.has_t()) fn(a.mutable_t(), what);
        for (onnx::TensorProto& t : *a.mutable_tensors()) fn(&t, what);
        if (a.has_g()) graphs.push_back(a.mutable_g());
        for (onnx::GraphProto& g : *a.mutable_graphs()) graphs.push_back(&g);
      }
    }
  };
  for (onnx::FunctionProto& f : *model.mutable_functions()) visit_nodes(f.mutable_node());
  while (!graphs.empty()) {
    onnx::GraphProto* g = graphs.back();
    graphs.pop_back();
    for (onnx::TensorProto& t : *g->mutable_initializer()) {
      fn(&t, absl::StrCat("initializer '", t.name(), "'"));
    }
    visit_nodes(g->mutable_node());
  }
}

// A file mapped read-only for the duration of a load.
class MappedFile {
 public:
  MappedFile(void* addr, size_t size) : addr_(addr), size_(size) {}
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile() {
    if (addr_ != nullptr) munmap(addr_, size_);
  }
  const char* data() const { return static_cast<const char*>(addr_); }
  size_t size() const { return size_; }

  // Starts reading [begin, end) from the file ahead of the copy (the kernel's read-ahead,
  // without it, is driven by one fault at a time).
  void Prefetch(size_t begin, size_t end) const {
    if (addr_ == nullptr || end <= begin) return;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t first = begin / page * page;
    madvise(static_cast<char*>(addr_) + first, end - first, MADV_WILLNEED);
  }

  // Gives back the whole pages inside [begin, end): their bytes have been copied. The mapping
  // is private and never written, so a later read would fault them in again from the file.
  void Release(size_t begin, size_t end) const {
    if (addr_ == nullptr) return;
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t first = (begin + page - 1) / page * page;
    const size_t last = end / page * page;
    if (last > first) madvise(static_cast<char*>(addr_) + first, last - first, MADV_DONTNEED);
  }

 private:
  void* addr_;
  size_t size_;
};

std::string RealPath(const std::string& path) {
  char buffer[PATH_MAX];
  if (realpath(path.c_str(), buffer) == nullptr) return "";
  return buffer;
}

class Loader {
 public:
  explicit Loader(absl::string_view model_dir)
      : dir_(model_dir.empty() ? "." : std::string(model_dir)) {}

  absl::Status Load(onnx::TensorProto& t, const std::string& what) {
    std::string location;
    int64_t offset = 0;
    int64_t length = -1;
    for (const onnx::StringStringEntryProto& e : t.external_data()) {
      if (e.key() == "location") {
        location = e.value();
      } else if (e.key() == "offset" || e.key() == "length") {
        int64_t v = 0;
        if (!absl::SimpleAtoi(e.value(), &v) || v < 0) {
          return absl::InvalidArgumentError(absl::StrCat(
              what, ": external data ", e.key(), " '", e.value(), "' is not a non-negative integer"));
        }
        (e.key() == "offset" ? offset : length) = v;
      }
    }
    if (location.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " is marked as external data but names no location"));
    }
    if (t.data_type() == onnx::TensorProto::STRING) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": string tensors cannot keep their data in an external file"));
    }
    absl::StatusOr<const MappedFile*> file = Map(location, what);
    if (!file.ok()) return file.status();
    const int64_t size = static_cast<int64_t>((*file)->size());
    if (offset > size) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": external data offset ", offset,
                                                     " is past the end of '", location, "' (",
                                                     size, " bytes)"));
    }
    if (length < 0) length = size - offset;
    if (length > size - offset) {
      return absl::InvalidArgumentError(absl::StrCat(
          what, ": external data range [", offset, ", ", offset + length, ") is past the end of '",
          location, "' (", size, " bytes)"));
    }
    (*file)->Prefetch(static_cast<size_t>(offset), static_cast<size_t>(offset + length));
    t.set_raw_data((*file)->data() + offset, static_cast<size_t>(length));
    (*file)->Release(static_cast<size_t>(offset), static_cast<size_t>(offset + length));
    t.clear_external_data();
    t.clear_data_location();
    ++stats_.tensors;
    stats_.bytes += length;
    return absl::OkStatus();
  }

  const ExternalDataStats& stats() const { return stats_; }

 private:
  // The file a location names, mapped (once per file), after checking that it stays inside the
  // model's folder.
  absl::StatusOr<const MappedFile*> Map(const std::string& location, const std::string& what) {
    auto refuse = [&](absl::string_view why) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": external data location '", location, "' ", why));
    };
    if (location.find('\0') != std::string::npos) return refuse("holds a NUL character");
    if (location.front() == '/') {
      return refuse("is absolute; locations are relative to the model's folder");
    }
    for (absl::string_view part : absl::StrSplit(location, absl::ByAnyChar("/\\"))) {
      if (part == "..") return refuse("climbs out of the model's folder ('..')");
    }
    if (dir_real_.empty()) {
      dir_real_ = RealPath(dir_);
      if (dir_real_.empty()) {
        return absl::NotFoundError(
            absl::StrCat(what, ": the model's folder '", dir_, "' cannot be resolved"));
      }
    }
    const std::string path = absl::StrCat(dir_, "/", location);
    const std::string real = RealPath(path);
    if (real.empty()) {
      return absl::NotFoundError(absl::StrCat(what, ": external data file '", path,
                                              "' cannot be opened: ", std::strerror(errno)));
    }
    if (!absl::StartsWith(real, absl::StrCat(dir_real_ == "/" ? "" : dir_real_, "/"))) {
      return refuse(absl::StrCat("resolves to '", real, "', outside the model's folder"));
    }
    if (auto it = files_.find(real); it != files_.end()) return it->second.get();

    const int fd = open(real.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      return absl::NotFoundError(absl::StrCat(what, ": external data file '", path,
                                              "' cannot be opened: ", std::strerror(errno)));
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      close(fd);
      return refuse("is not a regular file");
    }
    void* addr = nullptr;
    if (st.st_size > 0) {
      addr = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
      if (addr == MAP_FAILED) {
        const int err = errno;
        close(fd);
        return absl::ResourceExhaustedError(absl::StrCat(
            what, ": cannot map external data file '", path, "': ", std::strerror(err)));
      }
    }
    close(fd);
    ++stats_.files;
    auto [it, inserted] =
        files_.emplace(real, std::make_unique<MappedFile>(addr, static_cast<size_t>(st.st_size)));
    return it->second.get();
  }

  std::string dir_;
  std::string dir_real_;
  absl::flat_hash_map<std::string, std::unique_ptr<MappedFile>> files_;
  ExternalDataStats stats_;
};

}  // namespace

absl::StatusOr<ExternalDataStats> LoadExternalData(onnx::ModelProto& model,
                                                   absl::string_view model_dir) {
  Loader loader(model_dir);
  absl::Status status;
  ForEachTensor(model, [&](onnx::TensorProto* t, const std::string& what) {
    if (!status.ok() || !IsExternalFile(*t)) return;
    status = loader.Load(*t, what);
  });
  if (!status.ok()) return status;
  return loader.stats();
}

bool HasExternalFileData(const onnx::ModelProto& model) {
  bool found = false;
  // ForEachTensor walks mutable messages; the walk itself changes nothing.
  ForEachTensor(const_cast<onnx::ModelProto&>(model),
                [&](onnx::TensorProto* t, const std::string&) { found |= IsExternalFile(*t); });
  return found;
}

absl::StatusOr<onnx::ModelProto> ReadOnnxFile(const std::string& path) {
  absl::StatusOr<std::string> bytes = ReadFileBytes(path);
  if (!bytes.ok()) return bytes.status();
  return OnnxFromFileBytes(path, *std::move(bytes));
}

absl::StatusOr<onnx::ModelProto> OnnxFromFileBytes(const std::string& path, std::string bytes) {
  onnx::ModelProto model;
  const bool parsed = model.ParseFromString(bytes);
  std::string().swap(bytes);
  if (!parsed) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", path, "' does not parse as an ONNX model (onnx.ModelProto)"));
  }
  // Locations are relative to the folder the model file really is in: a symlink to a model
  // reads the data beside its target.
  std::string real = RealPath(path);
  if (real.empty()) real = path;
  const size_t slash = real.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : real.substr(0, slash + 1);
  absl::StatusOr<ExternalDataStats> stats = LoadExternalData(model, dir);
  if (!stats.ok()) {
    return absl::Status(stats.status().code(),
                        absl::StrCat("'", path, "': ", stats.status().message()));
  }
  return model;
}

absl::StatusOr<v1::Graph> GraphFromOnnxFile(const std::string& path) {
  absl::StatusOr<onnx::ModelProto> model = ReadOnnxFile(path);
  if (!model.ok()) return model.status();
  absl::StatusOr<v1::Graph> graph = GraphFromOnnx(*std::move(model));
  if (!graph.ok()) {
    return absl::Status(graph.status().code(),
                        absl::StrCat("'", path, "': ", graph.status().message()));
  }
  return graph;
}

absl::Status SaveExternalData(onnx::ModelProto& model, absl::string_view model_dir,
                              absl::string_view data_file_name, int64_t threshold_bytes) {
  const std::string path =
      absl::StrCat(model_dir.empty() ? "." : model_dir, "/", data_file_name);
  const std::string tmp = absl::StrCat(path, ".tmp");
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return absl::ErrnoToStatus(errno, absl::StrCat("cannot create '", tmp, "'"));
  int64_t offset = 0;
  bool ok = true;
  static const char kZeros[kAlignment] = {};
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    if (t.data_location() == onnx::TensorProto::EXTERNAL || !t.has_raw_data() ||
        static_cast<int64_t>(t.raw_data().size()) < threshold_bytes) {
      continue;
    }
    const int64_t pad = (kAlignment - offset % kAlignment) % kAlignment;
    const int64_t length = static_cast<int64_t>(t.raw_data().size());
    ok = ok && std::fwrite(kZeros, 1, static_cast<size_t>(pad), f) == static_cast<size_t>(pad) &&
         std::fwrite(t.raw_data().data(), 1, t.raw_data().size(), f) == t.raw_data().size();
    if (!ok) break;
    offset += pad;
    t.clear_raw_data();
    t.set_data_location(onnx::TensorProto::EXTERNAL);
    t.clear_external_data();
    auto add = [&](const char* key, std::string value) {
      onnx::StringStringEntryProto* e = t.add_external_data();
      e->set_key(key);
      e->set_value(std::move(value));
    };
    add("location", std::string(data_file_name));
    add("offset", absl::StrCat(offset));
    add("length", absl::StrCat(length));
    offset += length;
  }
  ok = std::fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    std::remove(tmp.c_str());
    return absl::ErrnoToStatus(err, absl::StrCat("cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

}  // namespace graphopt
