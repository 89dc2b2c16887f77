#include "service/digest.h"

#include <string>

#include "gtest/gtest.h"

namespace graphopt {
namespace {

// FIPS 180-2 test vectors.
constexpr char kEmpty[] =
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
constexpr char kAbc[] =
    "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kMillionA[] =
    "sha256:cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";

TEST(Sha256DigestTest, KnownVectors) {
  EXPECT_EQ(Sha256Digest(""), kEmpty);
  EXPECT_EQ(Sha256Digest("abc"), kAbc);
  EXPECT_EQ(Sha256Digest(std::string(1000000, 'a')), kMillionA);
  EXPECT_EQ(Sha256Digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "sha256:248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256DigestTest, BinaryBytesWithNul) {
  const std::string bytes("a\0b", 3);
  EXPECT_NE(Sha256Digest(bytes), Sha256Digest("a"));
  EXPECT_TRUE(IsBlobDigest(Sha256Digest(bytes)));
}

TEST(IsBlobDigestTest, AcceptsOnlyTheCanonicalForm) {
  EXPECT_TRUE(IsBlobDigest(kEmpty));
  EXPECT_TRUE(IsBlobDigest(kAbc));
  const std::string good = kAbc;
  EXPECT_FALSE(IsBlobDigest(""));
  EXPECT_FALSE(IsBlobDigest("sha256:"));
  EXPECT_FALSE(IsBlobDigest(good.substr(7)));                    // no prefix
  EXPECT_FALSE(IsBlobDigest("SHA256:" + good.substr(7)));        // prefix case
  EXPECT_FALSE(IsBlobDigest("sha512:" + good.substr(7)));        // other algorithm
  EXPECT_FALSE(IsBlobDigest(good.substr(0, good.size() - 1)));   // too short
  EXPECT_FALSE(IsBlobDigest(good + "0"));                        // too long
  std::string upper = good;
  upper[10] = 'A';
  EXPECT_FALSE(IsBlobDigest(upper));  // uppercase hex
  std::string not_hex = good;
  not_hex[10] = 'g';
  EXPECT_FALSE(IsBlobDigest(not_hex));
  std::string with_nul = good;
  with_nul[10] = '\0';
  EXPECT_FALSE(IsBlobDigest(with_nul));
}

TEST(Sha256HasherTest, ChunkedEqualsOneShot) {
  std::string data;
  for (int i = 0; i < 100000; ++i) data.push_back(static_cast<char>(i * 131 + (i >> 7)));
  const std::string expected = Sha256Digest(data);
  for (size_t chunk : {1, 7, 64, 1000, 65536, 100000}) {
    Sha256Hasher hasher;
    for (size_t pos = 0; pos < data.size(); pos += chunk) {
      hasher.Update(absl::string_view(data).substr(pos, chunk));
    }
    EXPECT_EQ(hasher.Finish(), expected) << "chunk " << chunk;
  }
}

TEST(Sha256HasherTest, FinishRestarts) {
  Sha256Hasher hasher;
  hasher.Update("ab");
  hasher.Update("");
  hasher.Update("c");
  EXPECT_EQ(hasher.Finish(), kAbc);
  EXPECT_EQ(hasher.Finish(), kEmpty);
  hasher.Update("abc");
  EXPECT_EQ(hasher.Finish(), kAbc);
}

TEST(Sha256HasherTest, Movable) {
  Sha256Hasher a;
  a.Update("a");
  Sha256Hasher b(std::move(a));
  b.Update("bc");
  EXPECT_EQ(b.Finish(), kAbc);
  Sha256Hasher c;
  c.Update("junk");
  c = std::move(b);
  c.Update("abc");
  EXPECT_EQ(c.Finish(), kAbc);
}

}  // namespace
}  // namespace graphopt
