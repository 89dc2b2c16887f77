#include "runtime/npy.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/float16.h"

namespace graphopt::runtime {
namespace {

using ::testing::HasSubstr;

// A .npy file as NumPy writes it: version 1.0, `header` padded to a 64-byte boundary.
std::string NpyFile(const std::string& dict, const std::string& data) {
  std::string header = dict;
  header.append(64 - (10 + header.size() + 1) % 64, ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
         static_cast<char>(header.size() >> 8) + header + data;
}

std::string Utf32(const std::u32string& text) {
  std::string out;
  for (char32_t c : text) {
    for (int b = 0; b < 4; ++b) out += static_cast<char>((static_cast<uint32_t>(c) >> (8 * b)) & 0xff);
  }
  return out;
}

Tensor Strings(const std::vector<std::string>& values, Shape shape) {
  Tensor t = Tensor::Allocate(v1::DT_STRING, std::move(shape)).value();
  for (size_t i = 0; i < values.size(); ++i) t.strings()[i] = values[i];
  return t;
}

std::string Descr(const std::string& npy) {
  const size_t at = npy.find("'descr': '") + 10;
  return npy.substr(at, npy.find('\'', at) - at);
}

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

TEST(NpyTest, ReadsNumpysStringArrays) {
  // np.save of np.array([["ab", "xyz"], ["", "\u00e9\U0001F600"]]): '<U3', NUL-padded UTF-32.
  absl::StatusOr<Tensor> t = ParseNpy(
      NpyFile("{'descr': '<U3', 'fortran_order': False, 'shape': (2, 2), }",
              Utf32(std::u32string(U"ab\0xyz\0\0\0\u00e9\U0001F600\0", 12))),
      "s.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->DebugString(), "string[2,2]");
  EXPECT_EQ(t->strings()[0], "ab");
  EXPECT_EQ(t->strings()[1], "xyz");
  EXPECT_EQ(t->strings()[2], "");
  EXPECT_EQ(t->strings()[3], "\xc3\xa9\xf0\x9f\x98\x80");
  // np.save of np.array([b"a\0b", b"cd"]): '|S3', NUL-padded; an inner NUL stays.
  t = ParseNpy(NpyFile("{'descr': '|S3', 'fortran_order': False, 'shape': (2,), }",
                       std::string("a\0bcd\0", 6)),
               "b.npy");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->strings()[0], std::string("a\0b", 3));
  EXPECT_EQ(t->strings()[1], "cd");
}

TEST(NpyTest, StringsRoundTrip) {
  const Tensor utf8 = Strings(
      {"hello", "", "\xc3\xa9t\xc3\xa9", "\xf0\x9f\x98\x80", std::string("a\0b", 3)}, {5});
  absl::StatusOr<std::string> bytes = SerializeNpy(utf8);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Descr(*bytes), "<U5");
  absl::StatusOr<Tensor> back = ParseNpy(*bytes, "u.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  for (int i = 0; i < 5; ++i) EXPECT_EQ(back->strings()[i], utf8.strings()[i]) << i;

  // Not UTF-8: written as bytes, read back the same.
  const Tensor raw = Strings({"\xff\xfe", "ok", ""}, {3, 1});
  bytes = SerializeNpy(raw);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Descr(*bytes), "|S2");
  back = ParseNpy(*bytes, "s.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->DebugString(), "string[3,1]");
  for (int i = 0; i < 3; ++i) EXPECT_EQ(back->strings()[i], raw.strings()[i]) << i;

  // All empty: NumPy's own width for that is 1.
  bytes = SerializeNpy(Strings({"", ""}, {2}));
  ASSERT_TRUE(bytes.ok());
  EXPECT_EQ(Descr(*bytes), "<U1");
}

TEST(NpyTest, StringsNumpyCannotHoldAreRefused) {
  absl::StatusOr<std::string> bytes = SerializeNpy(Strings({"ok", std::string("x\0", 2)}, {2}));
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(bytes.status().message(), HasSubstr("element 1 ends with NUL"));
  // One 64 KiB string among 2^15 empty ones would pad to 8 GiB of UTF-32.
  std::vector<std::string> values(1 << 15);
  values[0] = std::string(1 << 16, 'x');
  bytes = SerializeNpy(Strings(values, {1 << 15}));
  EXPECT_EQ(bytes.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(bytes.status().message(), HasSubstr("fixed-width"));
}

TEST(NpyTest, InvalidCodePointsAreErrorsNamingTheElement) {
  for (char32_t bad : {char32_t{0xD800}, char32_t{0x110000}}) {
    absl::StatusOr<Tensor> t = ParseNpy(
        NpyFile("{'descr': '<U1', 'fortran_order': False, 'shape': (2,), }",
                Utf32(std::u32string{U'a', bad})),
        "s.npy");
    ASSERT_FALSE(t.ok());
    EXPECT_THAT(t.status().message(), HasSubstr("s.npy: element 1"));
  }
}

TEST(NpyTest, BFloat16ReadsMlDtypesFilesAndWritesExactFloat32) {
  const std::string bits("\x80\x3f\x00\xc0", 4);  // 1.0, -2.0
  for (const char* descr : {"<V2", "|V2", "bfloat16"}) {
    absl::StatusOr<Tensor> t = ParseNpy(
        NpyFile(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (2,), }",
                bits),
        "bf.npy");
    ASSERT_TRUE(t.ok()) << descr << ": " << t.status();
    EXPECT_EQ(t->DebugString(), "bfloat16[2]");
    EXPECT_EQ(t->data<BFloat16>()[0].bits, 0x3f80);
    EXPECT_EQ(t->data<BFloat16>()[1].bits, 0xc000);
  }
  EXPECT_FALSE(ParseNpy(NpyFile("{'descr': '<V4', 'fortran_order': False, 'shape': (1,), }",
                                std::string(4, '\0')),
                        "v.npy")
                   .ok());

  // Every bfloat16 value goes out as float32 and comes back (through the conversion a float32
  // file gets for a bfloat16 input) as the same bits; NaN stays NaN.
  Tensor all = Tensor::Allocate(v1::DT_BFLOAT16, {1 << 16}).value();
  for (int i = 0; i < (1 << 16); ++i) all.data<BFloat16>()[i].bits = static_cast<uint16_t>(i);
  absl::StatusOr<std::string> bytes = SerializeNpy(all);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(Descr(*bytes), "<f4");
  EXPECT_EQ(NpyConversionNote(all), "bfloat16 as float32, exactly");
  absl::StatusOr<Tensor> f32 = ParseNpy(*bytes, "f.npy");
  ASSERT_TRUE(f32.ok()) << f32.status();
  absl::StatusOr<Tensor> back = Float32ToBFloat16(*f32);
  ASSERT_TRUE(back.ok()) << back.status();
  for (int i = 0; i < (1 << 16); ++i) {
    const uint16_t got = back->data<BFloat16>()[i].bits;
    if (std::isnan(BFloat16::ToFloat(static_cast<uint16_t>(i)))) {
      EXPECT_TRUE(std::isnan(BFloat16::ToFloat(got))) << i;
    } else {
      ASSERT_EQ(got, i);
    }
  }
}

TEST(NpyTest, Float32ToBFloat16RoundsToNearestEven) {
  auto bits = [](uint32_t f32_bits) {
    float f;
    std::memcpy(&f, &f32_bits, 4);
    Tensor t = Tensor::FromVector<float>(v1::DT_FLOAT32, {f}, {1});
    return Float32ToBFloat16(t)->data<BFloat16>()[0].bits;
  };
  EXPECT_EQ(bits(0x3f808000), 0x3f80);  // a tie, down to the even neighbour
  EXPECT_EQ(bits(0x3f818000), 0x3f82);  // a tie, up to the even neighbour
  EXPECT_EQ(bits(0x3f808001), 0x3f81);  // above the tie
  EXPECT_EQ(bits(0x3f807fff), 0x3f80);  // below it
  EXPECT_EQ(bits(0x7f7fffff), 0x7f80);  // FLT_MAX overflows to infinity
  EXPECT_FALSE(Float32ToBFloat16(Tensor::FromVector<double>(v1::DT_FLOAT64, {1}, {1})).ok());
}

// Headers claiming more than the file holds are refused before anything is allocated.
TEST(NpyTest, HugeShapesCostNoMemory) {
  for (const char* shape : {"(1048576, 1048576, 1024)", "(4611686018427387904, 4)",
                            "(9223372036854775807, 9223372036854775807)"}) {
    for (const char* descr : {"|i1", "<U1000000", "|S7"}) {
      absl::StatusOr<Tensor> t = ParseNpy(
          NpyFile(std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " +
                      shape + ", }",
                  "abcd"),
          "huge.npy");
      ASSERT_FALSE(t.ok()) << shape << descr;
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << shape << descr;
      EXPECT_THAT(t.status().message(), HasSubstr("huge.npy: 4 bytes of data for shape"));
    }
  }
}

TEST(NpyTest, MalformedHeadersAreClearErrors) {
  const std::pair<std::string, std::string> cases[] = {
      {"{'descr': '<f4', 'fortran_order': False, }", "has no 'shape'"},
      {"{'descr': '<f4', 'shape': (1,), }", "has no 'fortran_order'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "given twice"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", "non-negative integers"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1, }", "holds something other"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,), }", "expected ','"},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (1,), }", "expected a quoted string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), ", "expected a quoted string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x", "unterminated string"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,), }", "not True or False"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), } x", "after the closing"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "structured"},
      {"{'descr': '|O', 'fortran_order': False, 'shape': (1,), }", "pickle"},
      {"{'descr': '<U0', 'fortran_order': False, 'shape': (1,), }", "positive size"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", "big-endian"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }", "is not supported"},
  };
  for (const auto& [dict, expected] : cases) {
    absl::StatusOr<Tensor> t = ParseNpy(NpyFile(dict, std::string(4, '\0')), "h.npy");
    ASSERT_FALSE(t.ok()) << dict;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument) << dict;
    EXPECT_THAT(t.status().message(), HasSubstr(expected)) << dict;
    EXPECT_THAT(t.status().message(), HasSubstr("h.npy")) << dict;
  }
  std::string many_dims = "(";
  for (int i = 0; i < 65; ++i) many_dims += "1,";
  EXPECT_THAT(ParseNpy(NpyFile("{'descr': '<f4', 'fortran_order': False, 'shape': " + many_dims +
                                   "), }",
                               std::string(4, '\0')),
                       "h.npy")
                  .status()
                  .message(),
              HasSubstr("over 64 dims"));
  // A version 2.0 header announcing 4 GiB in a small file.
  EXPECT_THAT(ParseNpy(std::string("\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14), "v2.npy")
                  .status()
                  .message(),
              HasSubstr("truncated .npy header"));
}

// Every prefix of a valid file is an error, never a crash or a partial tensor.
TEST(NpyTest, EveryTruncationIsAnError) {
  for (const Tensor& t : {Strings({"ab", "\xc3\xa9"}, {2}),
                          Tensor::FromVector<float>(v1::DT_FLOAT32, {1, 2, 3}, {3})}) {
    const std::string bytes = *SerializeNpy(t);
    for (size_t n = 0; n < bytes.size(); ++n) {
      EXPECT_FALSE(ParseNpy(bytes.substr(0, n), "t.npy").ok()) << n;
    }
    EXPECT_TRUE(ParseNpy(bytes, "t.npy").ok());
  }
}

}  // namespace
}  // namespace graphopt::runtime
