#include "runtime/npy.h"

#include "gtest/gtest.h"

namespace graphopt::runtime {
namespace {

TEST(NpyTest, RoundTrip) {
  Tensor t = Tensor::FromVector<float>(v1::DT_FLOAT32, {1, 2, 3, 4, 5, 6}, {2, 3});
  absl::StatusOr<std::string> bytes = SerializeNpy(t);
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ((bytes->size() - 6 * 4) % 64, 0u);
  absl::StatusOr<Tensor> back = ParseNpy(*bytes, "t.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->DebugString(), "float32[2,3]");
  EXPECT_EQ(back->data<float>()[5], 6);
}

TEST(NpyTest, ScalarAndOneDim) {
  for (Shape shape : {Shape{}, Shape{3}}) {
    absl::StatusOr<Tensor> t = Tensor::Zeros(v1::DT_INT64, shape);
    ASSERT_TRUE(t.ok());
    absl::StatusOr<std::string> bytes = SerializeNpy(*t);
    ASSERT_TRUE(bytes.ok());
    absl::StatusOr<Tensor> back = ParseNpy(*bytes, "t.npy");
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->shape(), shape);
  }
}

TEST(NpyTest, ReadsNumpysOwnHeader) {
  // np.save of np.array([[True, False]]) (header as numpy writes it).
  std::string header = "{'descr': '|b1', 'fortran_order': False, 'shape': (1, 2), }";
  header.append(128 - 10 - header.size() - 1, ' ');
  header += '\n';
  std::string bytes = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size()) +
                      '\0' + header + std::string("\x01\x00", 2);
  absl::StatusOr<Tensor> t = ParseNpy(bytes, "b.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->DebugString(), "bool[1,2]");
}

TEST(NpyTest, RejectsBadFilesNamingThem) {
  EXPECT_NE(ParseNpy("hello", "x.npy").status().message().find("x.npy"), std::string::npos);
  Tensor t = Tensor::FromVector<float>(v1::DT_FLOAT32, {1, 2}, {2});
  std::string bytes = *SerializeNpy(t);
  EXPECT_FALSE(ParseNpy(bytes.substr(0, bytes.size() - 1), "x.npy").ok());
  std::string big_endian = bytes;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  EXPECT_FALSE(ParseNpy(big_endian, "x.npy").ok());
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_FALSE(ParseNpy(fortran, "x.npy").ok());
}

}  // namespace
}  // namespace graphopt::runtime
