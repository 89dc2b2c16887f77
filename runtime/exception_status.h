#ifndef GRAPHOPT_RUNTIME_EXCEPTION_STATUS_H_
#define GRAPHOPT_RUNTIME_EXCEPTION_STATUS_H_

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace graphopt {

// The status for the C++ exception being handled (call it only inside a catch block), naming
// `where` ("node 'x' (Tile)", "pass 'constant_fold'"): RESOURCE_EXHAUSTED for std::bad_alloc
// and std::length_error (a size taken from the data that cannot be had), INTERNAL for any
// other exception (std::out_of_range, oneDNN's dnnl::error, ...), with the exception's what().
// The message is never empty. Exceptions never cross the executor's or the pipeline's API:
// they are caught at the step or pass where they were thrown and returned as this.
absl::Status CurrentExceptionToStatus(absl::string_view where);

}  // namespace graphopt

#endif  // GRAPHOPT_RUNTIME_EXCEPTION_STATUS_H_
