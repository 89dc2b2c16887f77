#ifndef GRAPHOPT_UTIL_FILE_VERSION_H_
#define GRAPHOPT_UTIL_FILE_VERSION_H_

#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace graphopt {

// What stat() says of a file, to notice that it changed: any difference in device, inode,
// size or modification time. stat() follows symlinks, so a Kubernetes Secret or ConfigMap
// volume's update (a new "..data" symlink) shows as a new inode. A missing file is the
// default-constructed version.
struct FileVersion {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = -1;
  int64_t mtime_ns = -1;

  static FileVersion Of(const std::string& path) {
    struct stat info {};
    FileVersion v;
    if (::stat(path.c_str(), &info) != 0) return v;
    v.device = info.st_dev;
    v.inode = info.st_ino;
    v.size = info.st_size;
    v.mtime_ns = int64_t{info.st_mtim.tv_sec} * 1000000000 + info.st_mtim.tv_nsec;
    return v;
  }
  bool exists() const { return size >= 0; }
  bool operator==(const FileVersion& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
  bool operator!=(const FileVersion& o) const { return !(*this == o); }
};

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_FILE_VERSION_H_
