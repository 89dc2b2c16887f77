#include "runtime/exception_status.h"

#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "absl/strings/str_cat.h"

namespace graphopt {
namespace {

std::string What(const char* what, const char* kind) {
  return what != nullptr && what[0] != '\0' ? std::string(what) : std::string(kind);
}

}  // namespace

absl::Status CurrentExceptionToStatus(absl::string_view where) {
  try {
    throw;
  } catch (const std::bad_alloc& e) {
    return absl::ResourceExhaustedError(
        absl::StrCat(where, ": out of memory (", What(e.what(), "std::bad_alloc"), ")"));
  } catch (const std::length_error& e) {
    return absl::ResourceExhaustedError(absl::StrCat(
        where, ": a size cannot be had (", What(e.what(), "std::length_error"), ")"));
  } catch (const std::exception& e) {
    return absl::InternalError(
        absl::StrCat(where, ": unexpected C++ exception: ", What(e.what(), "std::exception")));
  } catch (...) {
    return absl::InternalError(absl::StrCat(where, ": unexpected C++ exception of unknown type"));
  }
}

}  // namespace graphopt
