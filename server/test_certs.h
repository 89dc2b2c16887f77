#ifndef GRAPHOPT_SERVER_TEST_CERTS_H_
#define GRAPHOPT_SERVER_TEST_CERTS_H_

// Test helper: a development CA and its certificates, made by scripts/make_dev_certs.sh (a
// data dependency of the test) in a folder under TEST_TMPDIR.

#include <cstdlib>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace graphopt {
namespace test_certs {

struct DevCerts {
  std::string dir;
  std::string ca;  // ca.pem
  std::string server_cert, server_key;
  std::string worker_cert, worker_key;
  std::string client_cert, client_key;
};

// The folder tests may write to.
inline std::string TestTempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

// Runs the script (from the runfiles, the test's working directory) into TEST_TMPDIR/<name>.
// FAILED_PRECONDITION when openssl is not installed (callers skip), INTERNAL when the script
// fails.
inline absl::StatusOr<DevCerts> MakeDevCerts(const std::string& name) {
  if (std::system("command -v openssl >/dev/null 2>&1") != 0) {
    return absl::FailedPreconditionError("openssl is not installed");
  }
  DevCerts certs;
  certs.dir = absl::StrCat(TestTempDir(), "/", name);
  const std::string command =
      absl::StrCat("bash scripts/make_dev_certs.sh '", certs.dir, "' --client >/dev/null");
  if (const int rc = std::system(command.c_str()); rc != 0) {
    return absl::InternalError(absl::StrCat("`", command, "` exited with ", rc));
  }
  certs.ca = certs.dir + "/ca.pem";
  certs.server_cert = certs.dir + "/server.pem";
  certs.server_key = certs.dir + "/server.key";
  certs.worker_cert = certs.dir + "/worker.pem";
  certs.worker_key = certs.dir + "/worker.key";
  certs.client_cert = certs.dir + "/client.pem";
  certs.client_key = certs.dir + "/client.key";
  return certs;
}

}  // namespace test_certs
}  // namespace graphopt

#endif  // GRAPHOPT_SERVER_TEST_CERTS_H_
