#ifndef GRAPHOPT_UTIL_FILE_UTIL_H_
#define GRAPHOPT_UTIL_FILE_UTIL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace graphopt {

// The whole file at `path`. Errors (from errno) name the file.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

// Writes `bytes` to `path` so that `path` never holds a partial file: through `path`.tmp and
// a rename. A `path` that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO)
// is written in place instead: renaming over it would replace the device with a plain file.
// Errors (from errno) name the file.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view bytes);

}  // namespace graphopt

#endif  // GRAPHOPT_UTIL_FILE_UTIL_H_
