#include "util/file_util.h"

#include <sys/stat.h>
#include <fcntl.h>
#include <sys/types.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string Contents(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(FileUtilTest, WritesAndReplacesARegularFile) {
  const std::string path = TempDir() + "/out.bin";
  ASSERT_TRUE(WriteFileAtomically(path, "first").ok());
  ASSERT_TRUE(WriteFileAtomically(path, "second").ok());
  EXPECT_EQ(Contents(path), "second");
  struct stat info;
  EXPECT_NE(::stat((path + ".tmp").c_str(), &info), 0) << "the temporary file is left behind";
}

// Renaming over a FIFO (or /dev/null) would replace it with a plain file; it must be
// written in place and stay what it was.
TEST(FileUtilTest, WritesANonRegularFileInPlace) {
  const std::string fifo = TempDir() + "/fifo";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // A reader that keeps the FIFO open, so the writer's open does not block.
  const int reader = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(reader, 0);
  ASSERT_TRUE(WriteFileAtomically(fifo, "through the pipe").ok());
  char buffer[64] = {};
  const ssize_t n = ::read(reader, buffer, sizeof(buffer));
  ::close(reader);
  EXPECT_EQ(std::string(buffer, n > 0 ? n : 0), "through the pipe");
  struct stat info;
  ASSERT_EQ(::stat(fifo.c_str(), &info), 0);
  EXPECT_TRUE(S_ISFIFO(info.st_mode)) << "the FIFO was replaced";
}

TEST(FileUtilTest, DevNullStaysADevice) {
  ASSERT_TRUE(WriteFileAtomically("/dev/null", "discarded").ok());
  struct stat info;
  ASSERT_EQ(::stat("/dev/null", &info), 0);
  EXPECT_TRUE(S_ISCHR(info.st_mode));
}

TEST(FileUtilTest, ReadsWhatWasWritten) {
  const std::string path = TempDir() + "/bytes.bin";
  std::string bytes(200000, '\0');  // more than one read buffer, with zero bytes inside
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 7);
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  absl::StatusOr<std::string> read = ReadFileBytes(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(*read, bytes);
  absl::StatusOr<std::string> missing = ReadFileBytes(TempDir() + "/no-such-file");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("no-such-file"), absl::string_view::npos);
}

TEST(FileUtilTest, ErrorsNameTheFile) {
  const absl::Status missing_dir = WriteFileAtomically("/nonexistent-dir/x.bin", "x");
  EXPECT_FALSE(missing_dir.ok());
  EXPECT_NE(missing_dir.message().find("/nonexistent-dir/x.bin"), absl::string_view::npos)
      << missing_dir;
  const absl::Status directory = WriteFileAtomically(TempDir(), "x");
  EXPECT_FALSE(directory.ok());
  EXPECT_NE(directory.message().find(TempDir()), absl::string_view::npos) << directory;
}

}  // namespace
}  // namespace graphopt
