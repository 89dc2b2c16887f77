#include "client/graph_io.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "google/protobuf/text_format.h"
#include "graph/proto_util.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

constexpr char kGraphText[] = R"pb(
  name: "g"
  inputs {
    name: "x"
    type {
      dtype: DT_FLOAT32
      shape {
        dims { symbol: "batch" }
        dims { size: 4 }
      }
    }
  }
  outputs { name: "y" }
  nodes { name: "relu" op_type: "Relu" inputs: "x" outputs: "y" }
  initializers { name: "w" dtype: DT_FLOAT32 dims: 1 raw_data: "\000\000\200?" }
)pb";

v1::Graph SampleGraph() {
  v1::Graph graph;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(kGraphText, &graph));
  return graph;
}

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/graph_io_test_" + name;
}

void WriteRaw(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

std::string ReadRaw(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

bool FileExists(const std::string& path) { return std::ifstream(path).good(); }

TEST(GraphIoTest, FormatFollowsExtension) {
  EXPECT_EQ(FormatForPath("a.pbtxt"), GraphFormat::kText);
  EXPECT_EQ(FormatForPath("dir.x/a.TXT"), GraphFormat::kText);
  EXPECT_EQ(FormatForPath("a.textproto"), GraphFormat::kText);
  EXPECT_EQ(FormatForPath("a.prototxt"), GraphFormat::kText);
  EXPECT_EQ(FormatForPath("a.pb"), GraphFormat::kBinary);
  EXPECT_EQ(FormatForPath("a.pbtxt.bin"), GraphFormat::kBinary);
  EXPECT_EQ(FormatForPath("model"), GraphFormat::kBinary);
}

TEST(GraphIoTest, BinaryRoundTripIsDeterministic) {
  const v1::Graph graph = SampleGraph();
  const std::string path = TempPath("round.pb");
  ASSERT_TRUE(WriteGraphFile(path, graph).ok());
  EXPECT_FALSE(FileExists(path + ".tmp"));
  EXPECT_EQ(ReadRaw(path), SerializeDeterministic(graph));
  absl::StatusOr<v1::Graph> read = ReadGraphFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(SerializeDeterministic(*read), SerializeDeterministic(graph));
}

TEST(GraphIoTest, TextRoundTrip) {
  const v1::Graph graph = SampleGraph();
  const std::string path = TempPath("round.pbtxt");
  ASSERT_TRUE(WriteGraphFile(path, graph).ok());
  EXPECT_THAT(ReadRaw(path), HasSubstr("op_type: \"Relu\""));
  absl::StatusOr<v1::Graph> read = ReadGraphFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(SerializeDeterministic(*read), SerializeDeterministic(graph));
  EXPECT_EQ(read->initializers(0).raw_data(), std::string("\0\0\x80?", 4));
}

TEST(GraphIoTest, TextInBinaryNamedFileFallsBackToText) {
  const std::string path = TempPath("actually_text.pb");
  WriteRaw(path, kGraphText);
  absl::StatusOr<v1::Graph> read = ReadGraphFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(SerializeDeterministic(*read), SerializeDeterministic(SampleGraph()));
}

TEST(GraphIoTest, GarbageNamesTheFile) {
  const std::string path = TempPath("garbage.pb");
  WriteRaw(path, "\xff\xff\xff\xff garbage {");
  absl::StatusOr<v1::Graph> read = ReadGraphFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr(path));
}

TEST(GraphIoTest, TextErrorHasLineAndColumn) {
  const std::string path = TempPath("bad.pbtxt");
  WriteRaw(path, "name: \"g\"\nnodes { bogus_field: 1 }\n");
  absl::StatusOr<v1::Graph> read = ReadGraphFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(read.status().message(), HasSubstr(path + ":2:"));
  EXPECT_THAT(read.status().message(), HasSubstr("bogus_field"));
}

TEST(GraphIoTest, MissingFileIsNotFound) {
  const std::string path = TempPath("does_not_exist.pb");
  absl::StatusOr<v1::Graph> read = ReadGraphFile(path);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr(path));
}

TEST(GraphIoTest, UnwritableDirectoryNamesTheFile) {
  const std::string path = TempPath("no_such_dir/out.pb");
  absl::Status status = WriteGraphFile(path, SampleGraph());
  ASSERT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr("out.pb"));
}

}  // namespace
}  // namespace graphopt
