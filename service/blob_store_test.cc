#include "service/blob_store.h"

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "service/digest.h"

namespace graphopt {
namespace {

// The tenant of the single-tenant tests.
constexpr char kT[] = "t";

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Bytes(int64_t size, char seed) {
  std::string bytes(static_cast<size_t>(size), '\0');
  for (int64_t i = 0; i < size; ++i) bytes[i] = static_cast<char>(seed + i * 7 + (i >> 8));
  return bytes;
}

// Uploads `data` in `chunk`-byte pieces through a writer.
absl::Status Upload(BlobStore& store, const std::string& data, size_t chunk = 10,
                    const std::string* digest = nullptr) {
  absl::StatusOr<std::unique_ptr<BlobWriter>> writer =
      store.StartWrite(kT, digest ? *digest : Sha256Digest(data), data.size());
  if (!writer.ok()) return writer.status();
  for (size_t pos = 0; pos < data.size(); pos += chunk) {
    if (absl::Status s = (*writer)->Append(absl::string_view(data).substr(pos, chunk)); !s.ok()) {
      return s;
    }
  }
  return (*writer)->Commit();
}

TEST(BlobStoreTest, UploadThenLookup) {
  BlobStore store(1000);
  const std::string data = Bytes(100, 'a');
  const std::string digest = Sha256Digest(data);
  EXPECT_FALSE(store.Contains(kT, digest));
  EXPECT_EQ(store.Lookup(kT, digest), nullptr);
  ASSERT_TRUE(Upload(store, data, 7).ok());
  EXPECT_TRUE(store.Contains(kT, digest));
  std::shared_ptr<const std::string> blob = store.Lookup(kT, digest);
  ASSERT_NE(blob, nullptr);
  EXPECT_EQ(*blob, data);
  const BlobStoreStats stats = store.stats();
  EXPECT_EQ(stats.bytes_held, 100);
  EXPECT_EQ(stats.bytes_in_use, 100);  // `blob` holds it
  EXPECT_EQ(stats.blob_count, 1);
  EXPECT_EQ(stats.bytes_reserved, 0);
  EXPECT_EQ(stats.commits, 1);
  EXPECT_EQ(store.free_bytes(kT), 900);
  blob.reset();
  EXPECT_EQ(store.free_bytes(kT), 1000);
}

TEST(BlobStoreTest, WriterBufferIsTheStoredBlob) {
  // The bytes are appended into the buffer reserved at StartWrite and handed over as is.
  BlobStore store(1 << 20);
  const std::string data = Bytes(100000, 'q');
  auto writer = store.StartWrite(kT, Sha256Digest(data), data.size());
  ASSERT_TRUE(writer.ok());
  ASSERT_TRUE((*writer)->Append(absl::string_view(data).substr(0, 10)).ok());
  const std::string& buffer = (*writer)->buffer_for_test();
  const char* allocation = buffer.data();
  EXPECT_GE(buffer.capacity(), data.size());
  ASSERT_TRUE((*writer)->Append(absl::string_view(data).substr(10)).ok());
  EXPECT_EQ(buffer.data(), allocation);
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(store.Lookup(kT, Sha256Digest(data))->data(), allocation);
}

TEST(BlobStoreTest, EmptyBlob) {
  BlobStore store(10);
  ASSERT_TRUE(Upload(store, "").ok());
  ASSERT_NE(store.Lookup(kT, Sha256Digest("")), nullptr);
  EXPECT_EQ(*store.Lookup(kT, Sha256Digest("")), "");
}

TEST(BlobStoreTest, DigestMismatchStoresNothing) {
  BlobStore store(1000);
  const std::string data = Bytes(50, 'x');
  const std::string wrong = Sha256Digest("something else");
  absl::Status status = Upload(store, data, 10, &wrong);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat("blob ", wrong, ": received data hashes to ",
                                     Sha256Digest(data))));
  EXPECT_FALSE(store.Contains(kT, wrong));
  EXPECT_EQ(store.stats().bytes_reserved, 0);
  EXPECT_EQ(store.stats().bytes_held, 0);
}

TEST(BlobStoreTest, OverlongAndShortData) {
  BlobStore store(1000);
  const std::string data = Bytes(20, 'x');
  const std::string digest = Sha256Digest(data);
  {
    auto writer = store.StartWrite(kT, digest, 20);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(data.substr(0, 15)).ok());
    absl::Status status = (*writer)->Append(data.substr(0, 10));
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("bytes 15..25"));
    EXPECT_THAT(status.message(), HasSubstr("total_size of 20"));
    EXPECT_EQ((*writer)->received(), 15);
    status = (*writer)->Commit();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("only 15 of 20 bytes"));
    EXPECT_EQ((*writer)->Commit().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_EQ((*writer)->Append("a").code(), absl::StatusCode::kFailedPrecondition);
  }
  EXPECT_FALSE(store.Contains(kT, digest));
  EXPECT_EQ(store.stats().bytes_reserved, 0);
}

TEST(BlobStoreTest, AbandonedWriterReleasesReservation) {
  BlobStore store(100);
  {
    auto writer = store.StartWrite(kT, Sha256Digest("x"), 80);
    ASSERT_TRUE(writer.ok());
    EXPECT_EQ(store.stats().bytes_reserved, 80);
    EXPECT_EQ(store.free_bytes(kT), 20);
    // A second upload does not fit next to the reservation.
    auto other = store.StartWrite(kT, Sha256Digest("y"), 30);
    EXPECT_EQ(other.status().code(), absl::StatusCode::kResourceExhausted);
    EXPECT_THAT(other.status().message(), HasSubstr("80 bytes"));
  }
  EXPECT_EQ(store.stats().bytes_reserved, 0);
  EXPECT_TRUE(store.StartWrite(kT, Sha256Digest("y"), 30).ok());
}

TEST(BlobStoreTest, BadStartArguments) {
  BlobStore store(100);
  auto bad = store.StartWrite(kT, "sha256:abc", 1);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'sha256:abc' is not a blob digest"));
  auto negative = store.StartWrite(kT, Sha256Digest("x"), -1);
  EXPECT_EQ(negative.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(negative.status().message(), HasSubstr("negative total_size -1"));
}

TEST(BlobStoreTest, LargerThanBudget) {
  BlobStore store(100);
  const std::string digest = Sha256Digest("x");
  auto writer = store.StartWrite(kT, digest, 101);
  EXPECT_EQ(writer.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(writer.status().message(), HasSubstr(digest));
  EXPECT_THAT(writer.status().message(), HasSubstr("101 bytes"));
  EXPECT_THAT(writer.status().message(), HasSubstr("budget of 100 bytes"));
  EXPECT_TRUE(store.StartWrite(kT, digest, 100).ok());  // exactly the budget fits
}

TEST(BlobStoreTest, EvictsLeastRecentlyUsedUnpinned) {
  BlobStore store(300);
  const std::string a = Bytes(100, 'a'), b = Bytes(100, 'b'), c = Bytes(100, 'c');
  const std::string d = Bytes(100, 'd');
  ASSERT_TRUE(Upload(store, a).ok());
  ASSERT_TRUE(Upload(store, b).ok());
  ASSERT_TRUE(Upload(store, c).ok());
  // a is touched, so b is now the least recently used.
  ASSERT_NE(store.Lookup(kT, Sha256Digest(a)), nullptr);
  ASSERT_TRUE(Upload(store, d).ok());
  EXPECT_TRUE(store.Contains(kT, Sha256Digest(a)));
  EXPECT_FALSE(store.Contains(kT, Sha256Digest(b)));
  EXPECT_TRUE(store.Contains(kT, Sha256Digest(c)));
  EXPECT_TRUE(store.Contains(kT, Sha256Digest(d)));
  EXPECT_EQ(store.stats().evictions, 1);
  EXPECT_EQ(store.stats().bytes_held, 300);
}

TEST(BlobStoreTest, MissingMarksPresentOnesUsed) {
  BlobStore store(200);
  const std::string a = Bytes(100, 'a'), b = Bytes(100, 'b'), c = Bytes(100, 'c');
  ASSERT_TRUE(Upload(store, a).ok());
  ASSERT_TRUE(Upload(store, b).ok());
  const std::string unknown = Sha256Digest("unknown");
  EXPECT_THAT(store.Missing(kT, {unknown, Sha256Digest(a), unknown}), ElementsAre(unknown));
  ASSERT_TRUE(Upload(store, c).ok());
  EXPECT_TRUE(store.Contains(kT, Sha256Digest(a)));
  EXPECT_FALSE(store.Contains(kT, Sha256Digest(b)));
}

TEST(BlobStoreTest, PinnedBlobsAreNotEvicted) {
  BlobStore store(250);
  const std::string a = Bytes(100, 'a'), b = Bytes(100, 'b'), c = Bytes(100, 'c');
  ASSERT_TRUE(Upload(store, a).ok());
  ASSERT_TRUE(Upload(store, b).ok());
  std::shared_ptr<const std::string> pin_a = store.Lookup(kT, Sha256Digest(a));
  std::shared_ptr<const std::string> pin_b = store.Lookup(kT, Sha256Digest(b));
  absl::Status status = Upload(store, c);
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(status.message(), HasSubstr(Sha256Digest(c)));
  EXPECT_THAT(status.message(), HasSubstr("200 bytes (0.0 MiB) held by blobs in use"));
  // The failed upload evicted nothing.
  EXPECT_EQ(store.stats().evictions, 0);
  EXPECT_EQ(store.stats().blob_count, 2);
  pin_b.reset();
  ASSERT_TRUE(Upload(store, c).ok());
  EXPECT_TRUE(store.Contains(kT, Sha256Digest(a)));
  EXPECT_FALSE(store.Contains(kT, Sha256Digest(b)));
  EXPECT_EQ(*pin_a, a);
}

TEST(BlobStoreTest, LookupOutlivesStore) {
  std::shared_ptr<const std::string> blob;
  {
    BlobStore store(100);
    absl::StatusOr<std::string> digest = store.Put(kT, "hello");
    ASSERT_TRUE(digest.ok());
    EXPECT_EQ(*digest, Sha256Digest("hello"));
    blob = store.Lookup(kT, *digest);
  }
  EXPECT_EQ(*blob, "hello");
}

TEST(BlobStoreTest, AlreadyPresentIsSkipped) {
  BlobStore store(150);
  const std::string data = Bytes(100, 'a');
  ASSERT_TRUE(Upload(store, data).ok());
  auto writer = store.StartWrite(kT, Sha256Digest(data), 100);
  ASSERT_TRUE(writer.ok());
  EXPECT_TRUE((*writer)->skipping());
  EXPECT_EQ(store.stats().bytes_reserved, 0);  // a second copy would not even fit
  ASSERT_TRUE((*writer)->Append(std::string(60, 'z')).ok());
  EXPECT_FALSE((*writer)->Append(std::string(60, 'z')).ok());  // still length-checked
  ASSERT_TRUE((*writer)->Append(std::string(40, 'z')).ok());
  ASSERT_TRUE((*writer)->Commit().ok());
  EXPECT_EQ(*store.Lookup(kT, Sha256Digest(data)), data);
  EXPECT_EQ(store.stats().commits, 1);
  EXPECT_EQ(store.stats().blob_count, 1);
}

TEST(BlobStoreTest, ConcurrentUploadsOfTheSameBlobStoreItOnce) {
  BlobStore store(1000);
  const std::string data = Bytes(200, 'a');
  auto first = store.StartWrite(kT, Sha256Digest(data), 200);
  auto second = store.StartWrite(kT, Sha256Digest(data), 200);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(store.stats().bytes_reserved, 400);
  ASSERT_TRUE((*first)->Append(data).ok());
  ASSERT_TRUE((*second)->Append(data).ok());
  ASSERT_TRUE((*first)->Commit().ok());
  ASSERT_TRUE((*second)->Commit().ok());
  const BlobStoreStats stats = store.stats();
  EXPECT_EQ(stats.bytes_held, 200);
  EXPECT_EQ(stats.bytes_reserved, 0);
  EXPECT_EQ(stats.commits, 1);
}

TEST(BlobStoreTest, PutRespectsBudget) {
  BlobStore store(10);
  absl::StatusOr<std::string> digest = store.Put(kT, std::string(11, 'x'));
  EXPECT_EQ(digest.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(store.Put(kT, std::string(10, 'x')).ok());
  EXPECT_TRUE(store.Put(kT, std::string(10, 'x')).ok());  // already there
  EXPECT_TRUE(store.Put(kT, std::string(10, 'y')).ok());  // evicts the x blob
  EXPECT_EQ(store.stats().evictions, 1);
}

TEST(BlobStoreTest, ManyThreads) {
  BlobStore store(20 * 1000);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&store, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string data = Bytes(1000, static_cast<char>(t * 31 + i % 40));
        const std::string digest = Sha256Digest(data);
        absl::Status status = Upload(store, data, 333);
        // Too many uploads at once may not fit; everything else must succeed.
        if (!status.ok()) {
          EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
          continue;
        }
        std::shared_ptr<const std::string> blob = store.Lookup(kT, digest);
        if (blob != nullptr) {
          EXPECT_EQ(*blob, data);
        }
        store.Missing(kT, {digest, Sha256Digest("nothing")});
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const BlobStoreStats stats = store.stats();
  EXPECT_EQ(stats.bytes_reserved, 0);
  EXPECT_LE(stats.bytes_held, 20 * 1000);
  EXPECT_LE(stats.peak_bytes, 20 * 1000);
  EXPECT_EQ(stats.bytes_held, stats.blob_count * 1000);
}

TEST(BlobStoreTest, TenantsHaveSeparateNamespaces) {
  BlobStore store(1000);
  ASSERT_TRUE(store.Put("a", "shared weights").ok());
  const std::string digest = Sha256Digest("shared weights");
  // Another tenant neither sees nor can use the first one's blob...
  EXPECT_TRUE(store.Contains("a", digest));
  EXPECT_FALSE(store.Contains("b", digest));
  EXPECT_EQ(store.Lookup("b", digest), nullptr);
  EXPECT_THAT(store.Missing("b", {digest}), ElementsAre(digest));
  EXPECT_THAT(store.Missing("a", {digest}), ElementsAre());
  // ...and uploading the same bytes stores its own copy.
  ASSERT_TRUE(store.Put("b", "shared weights").ok());
  EXPECT_EQ(store.stats().blob_count, 2);
  EXPECT_EQ(store.stats("a").blob_count, 1);
  EXPECT_EQ(store.stats("b").bytes_held, 14);
}

TEST(BlobStoreTest, ATenantEvictsOnlyItsOwnBlobs) {
  BlobStore store(300);
  ASSERT_TRUE(store.Put("victim", std::string(100, 'v')).ok());
  ASSERT_TRUE(store.Put("victim", std::string(100, 'w')).ok());
  ASSERT_TRUE(store.Put("noisy", std::string(100, 'n')).ok());
  // The store is full; the noisy tenant may only make room among its own blobs.
  absl::StatusOr<std::string> more = store.Put("noisy", std::string(150, 'm'));
  ASSERT_EQ(more.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(more.status().message(), HasSubstr("does not fit in the server's blob store"));
  EXPECT_THAT(more.status().message(), HasSubstr("held or reserved by other tenants"));
  ASSERT_TRUE(store.Put("noisy", std::string(100, 'o')).ok());  // evicts its own 'n'
  EXPECT_TRUE(store.Contains("victim", Sha256Digest(std::string(100, 'v'))));
  EXPECT_TRUE(store.Contains("victim", Sha256Digest(std::string(100, 'w'))));
  EXPECT_FALSE(store.Contains("noisy", Sha256Digest(std::string(100, 'n'))));
  EXPECT_EQ(store.stats("noisy").evictions, 1);
  EXPECT_EQ(store.stats("victim").evictions, 0);
}

TEST(BlobStoreTest, PerTenantQuota) {
  TenantQuota quota;
  quota.blob_bytes = 150;
  QuotaBook quotas{QuotaTable(quota)};
  BlobStore store(1000, &quotas);
  absl::StatusOr<std::unique_ptr<BlobWriter>> big = store.StartWrite("a", Sha256Digest("x"), 151);
  ASSERT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(big.status().message(), HasSubstr("tenant 'a''s quota blob_bytes"));
  ASSERT_TRUE(store.Put("a", std::string(100, 'a')).ok());
  EXPECT_EQ(store.free_bytes("a"), 150);  // nothing in use: the 100 held are evictable
  std::shared_ptr<const std::string> pin = store.Lookup("a", Sha256Digest(std::string(100, 'a')));
  EXPECT_EQ(store.free_bytes("a"), 50);
  absl::StatusOr<std::string> over = store.Put("a", std::string(60, 'b'));
  ASSERT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(over.status().message(), HasSubstr("would go over its quota blob_bytes"));
  EXPECT_TRUE(store.Put("b", std::string(150, 'b')).ok());  // another tenant has its own quota
}

// Records what the store tells its observer.
class RecordingObserver : public BlobStoreObserver {
 public:
  void OnBlobCommitted(const std::string& tenant, const std::string& digest,
                       int64_t size) override {
    events.push_back(absl::StrCat("+", tenant, "/", digest.substr(7, 4), "/", size));
  }
  void OnBlobEvicted(const std::string& tenant, const std::string& digest) override {
    events.push_back(absl::StrCat("-", tenant, "/", digest.substr(7, 4)));
  }
  std::vector<std::string> events;
};

TEST(BlobStoreTest, ObserverSeesEachCommitAndEvictionOnce) {
  BlobStore store(250);
  RecordingObserver observer;
  store.set_observer(&observer);
  const std::string a(100, 'a'), b(100, 'b'), c(100, 'c');
  const std::string da = Sha256Digest(a), db = Sha256Digest(b), dc = Sha256Digest(c);
  ASSERT_TRUE(store.Put("t", a).ok());
  ASSERT_TRUE(Upload(store, b).ok());  // tenant kT == "t"
  ASSERT_TRUE(store.Put("t", a).ok());  // already held: no event
  ASSERT_TRUE(Upload(store, b).ok());   // likewise (the writer skips)
  ASSERT_TRUE(store.Put("t", c).ok());  // evicts the least recently used (a was touched first)
  EXPECT_THAT(observer.events,
              ElementsAre(absl::StrCat("+t/", da.substr(7, 4), "/100"),
                          absl::StrCat("+t/", db.substr(7, 4), "/100"),
                          absl::StrCat("-t/", da.substr(7, 4)),
                          absl::StrCat("+t/", dc.substr(7, 4), "/100")));
  EXPECT_EQ(store.List().size(), 2u);
}

// Brings blobs from a map, as another replica would.
class MapFetcher : public BlobFetcher {
 public:
  void Fetch(BlobStore& store, const std::string& tenant,
             const std::vector<std::string>& digests) override {
    for (const std::string& digest : digests) {
      ++asked;
      auto it = remote.find(digest);
      if (it == remote.end()) continue;
      absl::StatusOr<std::unique_ptr<BlobWriter>> w =
          store.StartWrite(tenant, digest, static_cast<int64_t>(it->second.size()));
      if (!w.ok()) continue;
      if ((*w)->Append(it->second).ok()) (void)(*w)->Commit();
    }
  }
  std::map<std::string, std::string> remote;
  int asked = 0;
};

TEST(BlobStoreTest, FetcherFillsMissesAndLiesAreRefused) {
  BlobStore store(1000);
  MapFetcher fetcher;
  store.set_fetcher(&fetcher);
  const std::string a(100, 'a'), b(100, 'b');
  const std::string da = Sha256Digest(a), db = Sha256Digest(b), dc = Sha256Digest("c");
  fetcher.remote[da] = a;
  fetcher.remote[db] = std::string(100, 'x');  // a lying source: refused by the digest check
  const std::vector<absl::string_view> asked = {da, db, dc, da};
  EXPECT_THAT(store.Missing(kT, asked), ElementsAre(da, db, dc));  // Missing never fetches
  EXPECT_EQ(fetcher.asked, 0);
  EXPECT_THAT(store.MissingAfterFetch(kT, asked), ElementsAre(db, dc));
  EXPECT_EQ(fetcher.asked, 3);
  EXPECT_TRUE(store.Contains(kT, da));
  EXPECT_EQ(store.LookupOrFetch(kT, db), nullptr);
  EXPECT_EQ(fetcher.asked, 4);
  ASSERT_NE(store.LookupOrFetch(kT, da), nullptr);
  EXPECT_EQ(fetcher.asked, 4);  // held now: no fetch
}

TEST(BlobStoreTest, CountsHitsMissesAndBytesByTenant) {
  BlobStore store(1000);
  ASSERT_TRUE(store.Put("b", std::string(30, 'b')).ok());
  ASSERT_TRUE(store.Put("a", std::string(20, 'a')).ok());
  EXPECT_NE(store.Lookup("a", Sha256Digest(std::string(20, 'a'))), nullptr);
  EXPECT_EQ(store.Lookup("a", Sha256Digest("nope")), nullptr);
  EXPECT_EQ(store.Lookup("nobody", Sha256Digest("nope")), nullptr);
  const std::string held = Sha256Digest(std::string(30, 'b'));
  const std::string other = Sha256Digest("other");
  EXPECT_EQ(store.Missing("b", {held, other, other}).size(), 1u);  // a repeat counts once
  const BlobStoreStats stats = store.stats();
  EXPECT_EQ(stats.hits, 2);
  EXPECT_EQ(stats.misses, 3);
  EXPECT_EQ(store.BytesHeldByTenant(),
            (std::vector<std::pair<std::string, int64_t>>{{"a", 20}, {"b", 30}}));
}

}  // namespace
}  // namespace graphopt
