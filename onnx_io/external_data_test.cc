#include "onnx_io/external_data.h"

#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

// A fresh folder per test, under the test's temporary directory.
std::string NewDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  std::string dir = absl::StrCat(root != nullptr ? root : "/tmp", "/", name);
  std::string cmd = absl::StrCat("rm -rf '", dir, "' && mkdir -p '", dir, "'");
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return dir;
}

void Write(const std::string& path, const std::string& bytes) {
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok()) << path;
}

onnx::TensorProto* AddExternal(onnx::GraphProto* g, const std::string& name,
                               const std::string& location, int64_t floats,
                               int64_t offset = -1) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(floats);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* e = t->add_external_data();
  e->set_key("location");
  e->set_value(location);
  if (offset >= 0) {
    e = t->add_external_data();
    e->set_key("offset");
    e->set_value(absl::StrCat(offset));
    e = t->add_external_data();
    e->set_key("length");
    e->set_value(absl::StrCat(floats * 4));
  }
  return t;
}

std::string Bytes(int n, char first) {
  std::string s(n, '\0');
  for (int i = 0; i < n; ++i) s[i] = static_cast<char>(first + i);
  return s;
}

TEST(ExternalDataTest, LoadsRangesOfOneFileIntoRawData) {
  const std::string dir = NewDir("load");
  Write(dir + "/weights.bin", Bytes(16, 'a') + Bytes(8, 'A'));
  onnx::ModelProto m;
  AddExternal(m.mutable_graph(), "w", "weights.bin", 4, 0);
  AddExternal(m.mutable_graph(), "b", "weights.bin", 2, 16);
  ASSERT_TRUE(HasExternalFileData(m));
  absl::StatusOr<ExternalDataStats> stats = LoadExternalData(m, dir);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->tensors, 2);
  EXPECT_EQ(stats->bytes, 24);
  EXPECT_EQ(stats->files, 1);
  EXPECT_EQ(m.graph().initializer(0).raw_data(), Bytes(16, 'a'));
  EXPECT_EQ(m.graph().initializer(1).raw_data(), Bytes(8, 'A'));
  EXPECT_EQ(m.graph().initializer(0).data_location(), onnx::TensorProto::DEFAULT);
  EXPECT_EQ(m.graph().initializer(0).external_data_size(), 0);
  EXPECT_FALSE(HasExternalFileData(m));
}

TEST(ExternalDataTest, WithoutOffsetAndLengthTakesTheWholeFileInSubfolders) {
  const std::string dir = NewDir("whole");
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir, "/data'").c_str()), 0);
  Write(dir + "/data/w.bin", Bytes(8, 'x'));
  onnx::ModelProto m;
  AddExternal(m.mutable_graph(), "w", "data/w.bin", 2);
  ASSERT_TRUE(LoadExternalData(m, dir).ok());
  EXPECT_EQ(m.graph().initializer(0).raw_data(), Bytes(8, 'x'));
}

TEST(ExternalDataTest, SubgraphsAndConstantAttributesAreLoadedBlobsAreNot) {
  const std::string dir = NewDir("nested");
  Write(dir + "/w.bin", Bytes(8, 'k'));
  onnx::ModelProto m;
  onnx::NodeProto* c = m.mutable_graph()->add_node();
  c->set_name("c");
  c->set_op_type("Constant");
  onnx::AttributeProto* value = c->add_attribute();
  value->set_name("value");
  onnx::TensorProto* t = value->mutable_t();
  t->set_data_type(onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(onnx::TensorProto::EXTERNAL);
  onnx::StringStringEntryProto* e = t->add_external_data();
  e->set_key("location");
  e->set_value("w.bin");
  onnx::NodeProto* branch = m.mutable_graph()->add_node();
  branch->set_op_type("If");
  onnx::AttributeProto* g = branch->add_attribute();
  g->set_name("then_branch");
  AddExternal(g->mutable_g(), "inner", "w.bin", 1, 4);
  onnx::TensorProto* blob = AddExternal(m.mutable_graph(), "blob", "graphopt-blob:sha256:00", 1);
  absl::StatusOr<ExternalDataStats> stats = LoadExternalData(m, dir);
  ASSERT_TRUE(stats.ok()) << stats.status();
  EXPECT_EQ(stats->tensors, 2);
  EXPECT_EQ(m.graph().node(0).attribute(0).t().raw_data(), Bytes(8, 'k'));
  EXPECT_EQ(m.graph().node(1).attribute(0).g().initializer(0).raw_data(), Bytes(4, 'k' + 4));
  EXPECT_EQ(blob->data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(blob->external_data(0).value(), "graphopt-blob:sha256:00");
}

struct Refusal {
  std::string location;
  int64_t offset;
  int64_t floats;
  absl::StatusCode code;
  std::string message;
};

TEST(ExternalDataTest, RefusesLocationsAndRangesOutsideTheModelsFolderNamingTheTensor) {
  const std::string root = NewDir("refuse");
  const std::string dir = root + "/model";
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir, "/sub'").c_str()), 0);
  Write(root + "/secret.bin", Bytes(64, 's'));
  Write(dir + "/w.bin", Bytes(16, 'w'));
  ASSERT_EQ(symlink((root + "/secret.bin").c_str(), (dir + "/link.bin").c_str()), 0);
  ASSERT_EQ(symlink(root.c_str(), (dir + "/sub/up").c_str()), 0);
  ASSERT_EQ(symlink("w.bin", (dir + "/inside.bin").c_str()), 0);
  const std::vector<Refusal> cases = {
      {root + "/secret.bin", 0, 4, absl::StatusCode::kInvalidArgument, "is absolute"},
      {"../secret.bin", 0, 4, absl::StatusCode::kInvalidArgument, "climbs out"},
      {"sub/../../secret.bin", 0, 4, absl::StatusCode::kInvalidArgument, "climbs out"},
      {"link.bin", 0, 4, absl::StatusCode::kInvalidArgument, "outside the model's folder"},
      {"sub/up/secret.bin", 0, 4, absl::StatusCode::kInvalidArgument, "outside the model's folder"},
      {"w.bin", 20, 1, absl::StatusCode::kInvalidArgument, "offset 20 is past the end"},
      {"w.bin", 8, 4, absl::StatusCode::kInvalidArgument, "[8, 24) is past the end"},
      {"missing.bin", 0, 1, absl::StatusCode::kNotFound, "cannot be opened"},
      {"sub", 0, 1, absl::StatusCode::kInvalidArgument, "not a regular file"},
      {std::string("w\0.bin", 6), 0, 1, absl::StatusCode::kInvalidArgument, "NUL"},
  };
  for (const Refusal& r : cases) {
    onnx::ModelProto m;
    AddExternal(m.mutable_graph(), "fc.weight", r.location, r.floats, r.offset);
    absl::StatusOr<ExternalDataStats> stats = LoadExternalData(m, dir);
    ASSERT_FALSE(stats.ok()) << r.location;
    EXPECT_EQ(stats.status().code(), r.code) << r.location << ": " << stats.status();
    EXPECT_THAT(stats.status().message(), HasSubstr("initializer 'fc.weight'")) << r.location;
    EXPECT_THAT(stats.status().message(), HasSubstr(r.message)) << r.location;
  }
  // A symlink that stays inside the folder is fine.
  onnx::ModelProto m;
  AddExternal(m.mutable_graph(), "w", "inside.bin", 4);
  ASSERT_TRUE(LoadExternalData(m, dir).ok());
  EXPECT_EQ(m.graph().initializer(0).raw_data(), Bytes(16, 'w'));
}

TEST(ExternalDataTest, RefusesBadNumbersAndMissingLocation) {
  const std::string dir = NewDir("numbers");
  Write(dir + "/w.bin", Bytes(16, 'w'));
  onnx::ModelProto m;
  onnx::TensorProto* t = AddExternal(m.mutable_graph(), "w", "w.bin", 1, 0);
  t->mutable_external_data(1)->set_value("-4");
  absl::StatusOr<ExternalDataStats> stats = LoadExternalData(m, dir);
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("offset '-4' is not a non-negative integer"));

  onnx::ModelProto n;
  onnx::TensorProto* u = n.mutable_graph()->add_initializer();
  u->set_name("u");
  u->set_data_location(onnx::TensorProto::EXTERNAL);
  stats = LoadExternalData(n, dir);
  ASSERT_FALSE(stats.ok());
  EXPECT_THAT(stats.status().message(), HasSubstr("initializer 'u' is marked as external data"));
}

TEST(ExternalDataTest, SaveThenReadRoundTripsWithAlignedOffsets) {
  const std::string dir = NewDir("save");
  onnx::ModelProto m;
  m.set_ir_version(8);
  for (int i = 0; i < 3; ++i) {
    onnx::TensorProto* t = m.mutable_graph()->add_initializer();
    t->set_name(absl::StrCat("t", i));
    t->set_data_type(onnx::TensorProto::UINT8);
    t->add_dims(i == 2 ? 3 : 5000);
    t->set_raw_data(Bytes(i == 2 ? 3 : 5000, static_cast<char>('a' + i)));
  }
  const onnx::ModelProto original = m;
  ASSERT_TRUE(SaveExternalData(m, dir, "model.onnx.data", 1024).ok());
  EXPECT_EQ(m.graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_EQ(m.graph().initializer(1).external_data(1).value(), "8192");  // aligned offset
  EXPECT_EQ(m.graph().initializer(2).raw_data(), original.graph().initializer(2).raw_data());
  ASSERT_TRUE(WriteFileAtomically(dir + "/model.onnx", m.SerializeAsString()).ok());

  absl::StatusOr<onnx::ModelProto> read = ReadOnnxFile(dir + "/model.onnx");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->SerializeAsString(), original.SerializeAsString());
}

TEST(ExternalDataTest, ASymlinkToAModelReadsTheDataBesideItsTarget) {
  const std::string dir = NewDir("linked");
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", dir, "/real' '", dir, "/view'").c_str()), 0);
  Write(dir + "/real/w.bin", Bytes(8, 'r'));
  onnx::ModelProto m;
  AddExternal(m.mutable_graph(), "w", "w.bin", 2);
  ASSERT_TRUE(WriteFileAtomically(dir + "/real/m.onnx", m.SerializeAsString()).ok());
  ASSERT_EQ(symlink((dir + "/real/m.onnx").c_str(), (dir + "/view/m.onnx").c_str()), 0);
  absl::StatusOr<onnx::ModelProto> read = ReadOnnxFile(dir + "/view/m.onnx");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->graph().initializer(0).raw_data(), Bytes(8, 'r'));
}

TEST(ExternalDataTest, ReadOnnxFileNamesTheFile) {
  const std::string dir = NewDir("read");
  Write(dir + "/bad.onnx", "not a model \xff\xff");
  absl::StatusOr<onnx::ModelProto> read = ReadOnnxFile(dir + "/bad.onnx");
  ASSERT_FALSE(read.ok());
  EXPECT_THAT(read.status().message(), HasSubstr("bad.onnx"));
  onnx::ModelProto m;
  AddExternal(m.mutable_graph(), "w", "gone.bin", 1);
  ASSERT_TRUE(WriteFileAtomically(dir + "/m.onnx", m.SerializeAsString()).ok());
  read = ReadOnnxFile(dir + "/m.onnx");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(read.status().message(), HasSubstr("m.onnx': initializer 'w'"));
}

}  // namespace
}  // namespace graphopt
