#include "client/weights.h"

#include <string>

#include "gmock/gmock.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "onnx_io/onnx_export.h"
#include "onnx_io/onnx_import.h"
#include "service/digest.h"

namespace graphopt {
namespace {

using ::google::protobuf::util::MessageDifferencer;
using ::testing::HasSubstr;

v1::Graph GraphWithWeights() {
  v1::Graph g;
  g.set_name("g");
  auto add = [&](const std::string& name, int64_t floats, char fill) {
    v1::Tensor* t = g.add_initializers();
    t->set_name(name);
    t->set_dtype(v1::DT_FLOAT32);
    t->add_dims(floats);
    t->set_raw_data(std::string(floats * 4, fill));
  };
  add("big", 32768, 'a');      // 128 KiB: stashed
  add("same", 32768, 'a');     // equal bytes: one blob
  add("other", 16384, 'b');    // 64 KiB: stashed (the limit is inclusive)
  add("small", 16, 'c');       // stays inline
  return g;
}

TEST(WeightStashTest, GraphRoundTrip) {
  const v1::Graph original = GraphWithWeights();
  v1::Graph g = original;
  WeightStash stash;
  stash.Externalize(&g);
  EXPECT_EQ(stash.blob_count(), 2);  // "big" and "same" share one
  EXPECT_EQ(stash.total_bytes(), 128 * 1024 + 64 * 1024);
  EXPECT_EQ(g.initializers(0).blob(), Sha256Digest(original.initializers(0).raw_data()));
  EXPECT_EQ(g.initializers(0).blob(), g.initializers(1).blob());
  EXPECT_TRUE(g.initializers(0).raw_data().empty());
  EXPECT_TRUE(g.initializers(3).blob().empty());
  ASSERT_EQ(stash.Blobs().size(), 2u);
  EXPECT_EQ(stash.Blobs()[0].data.size(), 128u * 1024);

  ASSERT_TRUE(stash.Reattach(&g).ok());
  EXPECT_TRUE(MessageDifferencer::Equals(g, original));
}

TEST(WeightStashTest, OnnxRoundTripThroughImportAndExport) {
  // Externalized ONNX initializers import as blob references and export back to the same
  // external-data form, so the server never sees the bytes and the client restores them.
  absl::StatusOr<onnx::ModelProto> model = GraphToOnnx(GraphWithWeights());
  ASSERT_TRUE(model.ok());
  const onnx::ModelProto original = *model;
  WeightStash stash;
  stash.Externalize(&*model);
  EXPECT_EQ(stash.blob_count(), 2);
  EXPECT_EQ(model->graph().initializer(0).data_location(), onnx::TensorProto::EXTERNAL);
  EXPECT_LT(model->ByteSizeLong(), 2048u);

  absl::StatusOr<v1::Graph> imported = GraphFromOnnx(*model);
  ASSERT_TRUE(imported.ok()) << imported.status();
  EXPECT_EQ(imported->initializers(2).blob(), stash.Blobs()[1].digest);
  absl::StatusOr<onnx::ModelProto> exported = GraphToOnnx(*imported);
  ASSERT_TRUE(exported.ok());
  ASSERT_TRUE(stash.Reattach(&*exported).ok());
  std::string diff;
  MessageDifferencer d;
  d.ReportDifferencesToString(&diff);
  EXPECT_TRUE(d.Compare(*exported, original)) << diff;
}

TEST(WeightStashTest, UnknownBlobInResult) {
  v1::Graph g = GraphWithWeights();
  g.mutable_initializers(3)->set_blob("sha256:" + std::string(64, '0'));
  WeightStash stash;
  absl::Status s = stash.Reattach(&g);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()), HasSubstr("tensor 'small'"));
}

TEST(WeightStashTest, InitializerBytes) {
  v1::Graph g = GraphWithWeights();
  EXPECT_EQ(InitializerBytes(g), 2 * 128 * 1024 + 64 * 1024 + 64);
}

}  // namespace
}  // namespace graphopt
