#include "client/op_file.h"

#include <cstdlib>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;

std::string TempPath(const std::string& name) {
  const char* dir = std::getenv("TEST_TMPDIR");
  return std::string(dir != nullptr ? dir : "/tmp") + "/" + name;
}

TEST(OpFileTest, ReadsTextDescriptors) {
  const std::string path = TempPath("ops.pbtxt");
  ASSERT_TRUE(WriteFileAtomically(path, R"pb(
    ops {
      name: "Swish" domain: "my.ops" version: 1
      inputs { name: "X" type_constraint: "T" }
      outputs { name: "Y" type_constraint: "T" }
      type_constraints { name: "T" allowed: DT_FLOAT32 }
      shape_rule { expr:
        "# same shape as X\n"
        "output[0] = shape(X);"
      }
    }
    ops { name: "Body" domain: "my.ops" body { nodes { op_type: "Relu" } } }
  )pb").ok());
  absl::StatusOr<v1::OpDescriptorList> list = ReadOpDescriptorFile(path);
  ASSERT_TRUE(list.ok()) << list.status();
  ASSERT_EQ(list->ops_size(), 2);
  EXPECT_EQ(list->ops(0).shape_rule().expr(), "# same shape as X\noutput[0] = shape(X);");
  EXPECT_EQ(FormatOpSummaryLine(list->ops(0)), "my.ops::Swish v1  (1 input, 1 output, shape rule)");
  EXPECT_EQ(FormatOpSummaryLine(list->ops(1)),
            "my.ops::Body v0  (0 inputs, 0 outputs, body of 1 nodes)");
}

TEST(OpFileTest, BinaryByExtension) {
  v1::OpDescriptorList list;
  list.add_ops()->set_name("A");
  const std::string path = TempPath("ops.binpb");
  ASSERT_TRUE(WriteFileAtomically(path, list.SerializeAsString()).ok());
  absl::StatusOr<v1::OpDescriptorList> read = ReadOpDescriptorFile(path);
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->ops(0).name(), "A");
}

TEST(OpFileTest, Errors) {
  const std::string bad = TempPath("bad.pbtxt");
  ASSERT_TRUE(WriteFileAtomically(bad, "ops {\n  name: \"A\"\n  nmae: \"B\"\n}\n").ok());
  absl::Status s = ReadOpDescriptorFile(bad).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("bad.pbtxt:3:"));
  EXPECT_THAT(std::string(s.message()), HasSubstr("nmae"));

  const std::string empty = TempPath("empty.pbtxt");
  ASSERT_TRUE(WriteFileAtomically(empty, "# nothing\n").ok());
  s = ReadOpDescriptorFile(empty).status();
  EXPECT_THAT(std::string(s.message()), HasSubstr("no op descriptors"));

  s = ReadOpDescriptorFile(TempPath("missing.pbtxt")).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace graphopt
