#include "server/token_store.h"

#include <stdio.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "util/file_util.h"

namespace graphopt {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TempDir() {
  const char* dir = std::getenv("TEST_TMPDIR");
  return dir != nullptr ? dir : "/tmp";
}

std::string NewToken() {
  absl::StatusOr<std::string> token = GenerateToken();
  EXPECT_TRUE(token.ok()) << token.status();
  return token.value_or("");
}

std::string Line(TokenRole role, const std::string& tenant, const std::string& token,
                 const std::string& label = "") {
  absl::StatusOr<std::string> line = TokensFileLine(role, tenant, TokenHash(token), label);
  EXPECT_TRUE(line.ok()) << line.status();
  return line.value_or("") + "\n";
}

// Writes `text` to `path` in place (same inode), as an editor that truncates would.
void WriteInPlace(const std::string& path, const std::string& text) {
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(fwrite(text.data(), 1, text.size(), f), text.size());
  ASSERT_EQ(fclose(f), 0);
}

TEST(TokenFormatTest, GeneratedTokensAreWellFormedAndDistinct) {
  absl::flat_hash_set<std::string> seen;
  for (int i = 0; i < 200; ++i) {
    const std::string token = NewToken();
    EXPECT_EQ(token.size(), kTokenLength);
    EXPECT_TRUE(IsWellFormedToken(token)) << token;
    EXPECT_TRUE(seen.insert(token).second);
  }
}

TEST(TokenFormatTest, RefusesIllFormedTokens) {
  const std::string good = NewToken();
  EXPECT_FALSE(IsWellFormedToken(""));
  EXPECT_FALSE(IsWellFormedToken(good.substr(1)));
  EXPECT_FALSE(IsWellFormedToken(good + "A"));
  EXPECT_FALSE(IsWellFormedToken("xxxx_" + good.substr(5)));
  std::string bad = good;
  bad[10] = '+';  // base64, not base64url
  EXPECT_FALSE(IsWellFormedToken(bad));
  bad[10] = ' ';
  EXPECT_FALSE(IsWellFormedToken(bad));
}

TEST(TokenFormatTest, HashIsSha256HexOfTheWholeToken) {
  // SHA-256("abc"), the FIPS 180-2 example.
  EXPECT_EQ(TokenHash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const std::string token = NewToken();
  EXPECT_EQ(TokenHash(token).size(), 64u);
  EXPECT_NE(TokenHash(token), TokenHash(token.substr(kTokenPrefix.size())));
}

TEST(TokenFormatTest, FileLines) {
  const std::string hash(64, 'a');
  EXPECT_EQ(TokensFileLine(TokenRole::kTenant, "acme", hash, "ci bot").value(),
            "tenant acme " + hash + " ci bot");
  EXPECT_EQ(TokensFileLine(TokenRole::kAdmin, "ignored", hash, "").value(), "admin - " + hash);
  EXPECT_EQ(TokensFileLine(TokenRole::kTenant, "Bad Name", hash, "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TokensFileLine(TokenRole::kTenant, "acme", "abc", "").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TokensFileLine(TokenRole::kTenant, "acme", hash, "a\nb").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(TokensFileLine(TokenRole::kTenant, "acme", hash, std::string(129, 'x'))
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(ParseTokensFileTest, ParsesRolesTenantsLabelsCommentsAndBlanks) {
  const std::string a(64, 'a'), b(64, 'b'), c(64, 'C');
  absl::StatusOr<TokenTable> table = ParseTokensFile(
      absl::StrCat("# comment\n\n   \n", "tenant acme ", a, " ci bot  \r\n", "tenant\tteam-b\t",
                   b, "\n", "  admin   -   ", c, "   ops on-call\n", "# end"),
      "tokens");
  ASSERT_TRUE(table.ok()) << table.status();
  ASSERT_EQ(table->size(), 3u);
  EXPECT_EQ(table->at(a).role, TokenRole::kTenant);
  EXPECT_EQ(table->at(a).tenant, "acme");
  EXPECT_EQ(table->at(a).label, "ci bot");
  EXPECT_EQ(table->at(b).tenant, "team-b");
  EXPECT_EQ(table->at(b).label, "");
  // Upper-case hex is folded.
  const TokenEntry& admin = table->at(std::string(64, 'c'));
  EXPECT_EQ(admin.role, TokenRole::kAdmin);
  EXPECT_EQ(admin.tenant, "-");
  EXPECT_EQ(admin.label, "ops on-call");
  EXPECT_TRUE(ParseTokensFile("", "empty")->empty());
}

TEST(ParseTokensFileTest, ErrorsNameTheSourceAndLine) {
  const std::string a(64, 'a');
  struct Case {
    std::string text;
    std::string expected;
  };
  const Case cases[] = {
      {"# ok\ntenant acme\n", "line 2: too few fields"},
      {"\n\nowner acme " + a + "\n", "line 3: unknown role 'owner'"},
      {"tenant Acme " + a + "\n", "line 1: tenant 'Acme' is not a tenant name"},
      {"admin acme " + a + "\n", "line 1: an admin token's tenant must be '-'"},
      {"tenant acme " + a.substr(1) + "\n", "line 1: the third field must be"},
      {"tenant acme " + a.substr(1) + "g\n", "line 1: the third field must be"},
      {"tenant acme " + a + "\ntenant other " + a + "\n",
       "line 2: the same token hash is already on line 1"},
      {"tenant acme " + a + " bad\x01label\n", "line 1: label must be printable ASCII"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<TokenTable> table = ParseTokensFile(c.text, "/etc/graphopt/tokens");
    ASSERT_FALSE(table.ok()) << c.text;
    EXPECT_EQ(table.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(table.status().message(), HasSubstr("tokens file '/etc/graphopt/tokens' "));
    EXPECT_THAT(table.status().message(), HasSubstr(c.expected)) << c.text;
  }
}

class TokenStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(TempDir(), "/", ::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_EQ(std::system(absl::StrCat("rm -rf '", dir_, "' && mkdir -p '", dir_, "'").c_str()),
              0);
    path_ = dir_ + "/tokens";
    acme_ = NewToken();
    admin_ = NewToken();
    other_ = NewToken();
  }

  // A store checking the file on every lookup, recording each reload.
  std::unique_ptr<TokenStore> Open(const std::string& path) {
    TokenStoreOptions options;
    options.check_interval = absl::ZeroDuration();
    options.on_reload = [this](const TokenReload& reload) {
      absl::MutexLock lock(&mu_);
      reloads_.push_back(reload);
    };
    absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Open(path, options);
    EXPECT_TRUE(store.ok()) << store.status();
    return store.ok() ? *std::move(store) : nullptr;
  }

  std::vector<TokenReload> Reloads() {
    absl::MutexLock lock(&mu_);
    return reloads_;
  }

  std::string dir_, path_;
  std::string acme_, admin_, other_;
  absl::Mutex mu_;
  std::vector<TokenReload> reloads_ ABSL_GUARDED_BY(mu_);
};

TEST_F(TokenStoreTest, OpenRefusesMissingAndBrokenFiles) {
  absl::StatusOr<std::unique_ptr<TokenStore>> missing = TokenStore::Open(dir_ + "/nope");
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(missing.status().message(), HasSubstr(dir_ + "/nope"));
  ASSERT_TRUE(WriteFileAtomically(path_, "tenant acme 1234\n").ok());
  absl::StatusOr<std::unique_ptr<TokenStore>> broken = TokenStore::Open(path_);
  EXPECT_EQ(broken.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(broken.status().message(), HasSubstr("line 1"));
  EXPECT_EQ(TokenStore::Open("").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(TokenStoreTest, LooksTokensUpByHash) {
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "acme", acme_, "ci") +
                                             Line(TokenRole::kAdmin, "-", admin_, "ops"))
                  .ok());
  std::unique_ptr<TokenStore> store = Open(path_);
  ASSERT_NE(store, nullptr);
  std::optional<TokenEntry> acme = store->Lookup(acme_);
  ASSERT_TRUE(acme.has_value());
  EXPECT_EQ(acme->role, TokenRole::kTenant);
  EXPECT_EQ(acme->tenant, "acme");
  EXPECT_EQ(acme->label, "ci");
  std::optional<TokenEntry> admin = store->Lookup(admin_);
  ASSERT_TRUE(admin.has_value());
  EXPECT_EQ(admin->role, TokenRole::kAdmin);
  EXPECT_FALSE(store->Lookup(other_).has_value());
  EXPECT_FALSE(store->Lookup("").has_value());
  // The hash itself is not a token.
  EXPECT_FALSE(store->Lookup(TokenHash(acme_)).has_value());
  EXPECT_EQ(store->Counts().tenant_tokens, 1u);
  EXPECT_EQ(store->Counts().admin_tokens, 1u);
  // Nothing changed: no reload reported.
  EXPECT_TRUE(Reloads().empty());
  // The file holds no token in the clear.
  absl::StatusOr<std::string> text = ReadFileBytes(path_);
  EXPECT_THAT(*text, Not(HasSubstr(acme_.substr(kTokenPrefix.size()))));
}

TEST_F(TokenStoreTest, ReloadsAFileEditedInPlaceAndRevokes) {
  WriteInPlace(path_, Line(TokenRole::kTenant, "acme", acme_));
  std::unique_ptr<TokenStore> store = Open(path_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(store->Lookup(acme_).has_value());
  EXPECT_FALSE(store->Lookup(other_).has_value());

  // Adding a line: the new token works at the next lookup.
  WriteInPlace(path_, Line(TokenRole::kTenant, "acme", acme_) +
                          Line(TokenRole::kTenant, "other", other_));
  std::optional<TokenEntry> other = store->Lookup(other_);
  ASSERT_TRUE(other.has_value());
  EXPECT_EQ(other->tenant, "other");
  ASSERT_EQ(Reloads().size(), 1u);
  EXPECT_TRUE(Reloads()[0].status.ok());
  EXPECT_EQ(Reloads()[0].tenant_tokens, 2u);

  // Revoking is deleting the line.
  WriteInPlace(path_, Line(TokenRole::kTenant, "other", other_));
  EXPECT_FALSE(store->Lookup(acme_).has_value());
  EXPECT_TRUE(store->Lookup(other_).has_value());
  EXPECT_EQ(Reloads().size(), 2u);
}

TEST_F(TokenStoreTest, ABrokenFileKeepsTheOldTokensAndIsReported) {
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "acme", acme_)).ok());
  std::unique_ptr<TokenStore> store = Open(path_);
  ASSERT_NE(store, nullptr);
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "other", other_) +
                                             "tenant acme not-a-hash\n")
                  .ok());
  // The old tokens stay in force; the new file's are not taken even in part.
  EXPECT_TRUE(store->Lookup(acme_).has_value());
  EXPECT_FALSE(store->Lookup(other_).has_value());
  std::vector<TokenReload> reloads = Reloads();
  ASSERT_EQ(reloads.size(), 1u);
  EXPECT_EQ(reloads[0].status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(reloads[0].status.message(), HasSubstr("line 2"));
  EXPECT_EQ(reloads[0].tenant_tokens, 1u);  // what is still in force
  // Reported once, not at every lookup.
  store->Lookup(acme_);
  EXPECT_EQ(Reloads().size(), 1u);

  // A vanished file is reported once too, and the tokens stay.
  ASSERT_EQ(unlink(path_.c_str()), 0);
  EXPECT_TRUE(store->Lookup(acme_).has_value());
  store->Lookup(acme_);
  reloads = Reloads();
  ASSERT_EQ(reloads.size(), 2u);
  EXPECT_EQ(reloads[1].status.code(), absl::StatusCode::kNotFound);

  // Fixed: the new file is in force.
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "other", other_)).ok());
  EXPECT_TRUE(store->Lookup(other_).has_value());
  EXPECT_FALSE(store->Lookup(acme_).has_value());
  reloads = Reloads();
  ASSERT_EQ(reloads.size(), 3u);
  EXPECT_TRUE(reloads[2].status.ok());
}

// A Kubernetes Secret volume: tokens -> ..data/tokens, ..data -> ..<timestamp>; an update
// writes a new timestamped folder and swaps the ..data link atomically.
TEST_F(TokenStoreTest, FollowsASecretVolumeSymlinkSwap) {
  const std::string v1 = dir_ + "/..2026_01_01", v2 = dir_ + "/..2026_01_02";
  ASSERT_EQ(std::system(absl::StrCat("mkdir -p '", v1, "' '", v2, "'").c_str()), 0);
  ASSERT_TRUE(WriteFileAtomically(v1 + "/tokens", Line(TokenRole::kTenant, "acme", acme_)).ok());
  ASSERT_TRUE(
      WriteFileAtomically(v2 + "/tokens", Line(TokenRole::kTenant, "other", other_)).ok());
  ASSERT_EQ(symlink("..2026_01_01", (dir_ + "/..data").c_str()), 0);
  ASSERT_EQ(symlink("..data/tokens", path_.c_str()), 0);
  std::unique_ptr<TokenStore> store = Open(path_);
  ASSERT_NE(store, nullptr);
  EXPECT_TRUE(store->Lookup(acme_).has_value());
  EXPECT_FALSE(store->Lookup(other_).has_value());

  ASSERT_EQ(symlink("..2026_01_02", (dir_ + "/..data_tmp").c_str()), 0);
  ASSERT_EQ(rename((dir_ + "/..data_tmp").c_str(), (dir_ + "/..data").c_str()), 0);
  EXPECT_TRUE(store->Lookup(other_).has_value());
  EXPECT_FALSE(store->Lookup(acme_).has_value());
  ASSERT_EQ(Reloads().size(), 1u);
  EXPECT_TRUE(Reloads()[0].status.ok());
}

TEST_F(TokenStoreTest, ChecksAtMostOncePerInterval) {
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "acme", acme_)).ok());
  TokenStoreOptions options;
  options.check_interval = absl::Hours(1);
  absl::StatusOr<std::unique_ptr<TokenStore>> store = TokenStore::Open(path_, options);
  ASSERT_TRUE(store.ok()) << store.status();
  EXPECT_TRUE((*store)->Lookup(acme_).has_value());  // the first lookup checks
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "other", other_)).ok());
  // Within the interval the old tokens answer...
  EXPECT_TRUE((*store)->Lookup(acme_).has_value());
  EXPECT_FALSE((*store)->Lookup(other_).has_value());
  // ...and CheckNow takes the change at once.
  TokenReload reload = (*store)->CheckNow();
  EXPECT_TRUE(reload.status.ok());
  EXPECT_TRUE((*store)->Lookup(other_).has_value());
  EXPECT_FALSE((*store)->Lookup(acme_).has_value());
}

TEST_F(TokenStoreTest, ConcurrentLookupsDuringReloads) {
  ASSERT_TRUE(WriteFileAtomically(path_, Line(TokenRole::kTenant, "acme", acme_)).ok());
  std::unique_ptr<TokenStore> store = Open(path_);
  ASSERT_NE(store, nullptr);
  std::atomic<bool> stop{false};
  std::atomic<int> misses{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 4; ++i) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        if (!store->Lookup(acme_).has_value()) misses.fetch_add(1);
      }
    });
  }
  // acme's token stays in every version of the file.
  for (int i = 0; i < 50; ++i) {
    std::string text = Line(TokenRole::kTenant, "acme", acme_);
    if (i % 2 == 0) text += Line(TokenRole::kTenant, "other", other_);
    ASSERT_TRUE(WriteFileAtomically(path_, text).ok());
  }
  stop.store(true);
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(misses.load(), 0);
}

}  // namespace
}  // namespace graphopt
