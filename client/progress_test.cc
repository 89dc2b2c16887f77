#include "client/progress.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace graphopt {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr int64_t kMiB = 1 << 20;

// Captures what a TransferProgress writes, with a clock the test moves.
class ProgressTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = open_memstream(&buffer_, &size_);
    ASSERT_NE(out_, nullptr);
  }
  void TearDown() override {
    std::fclose(out_);
    std::free(buffer_);
  }

  TransferProgress::Options MakeOptions(bool is_tty) {
    TransferProgress::Options options;
    options.out = out_;
    options.is_tty = is_tty;
    options.label = "uploading weights";
    options.clock = [this] { return now_; };
    return options;
  }

  std::string Output() {
    std::fflush(out_);
    return std::string(buffer_, size_);
  }

  void Advance(double seconds) { now_ += absl::Seconds(seconds); }

  std::FILE* out_ = nullptr;
  char* buffer_ = nullptr;
  size_t size_ = 0;
  absl::Time now_ = absl::FromUnixSeconds(1000);
};

TEST_F(ProgressTest, FastTransferPrintsNothing) {
  for (bool tty : {false, true}) {
    TransferProgress progress(MakeOptions(tty));
    Advance(0.1);
    progress.Update(50 * kMiB, 100 * kMiB);
    Advance(0.3);
    progress.Update(100 * kMiB, 100 * kMiB);
    progress.Finish();
    EXPECT_FALSE(progress.shown());
  }
  EXPECT_THAT(Output(), IsEmpty());
}

TEST_F(ProgressTest, TerminalRedrawsOneLine) {
  TransferProgress progress(MakeOptions(true));
  Advance(0.4);
  progress.Update(10 * kMiB, 100 * kMiB);
  EXPECT_THAT(Output(), IsEmpty());
  Advance(0.6);  // 1 s in
  progress.Update(25 * kMiB, 100 * kMiB);
  EXPECT_EQ(Output(), "\ruploading weights   25%  25.0/100.0 MiB  25.0 MiB/s  ETA 3s");
  Advance(0.05);  // too soon to redraw
  progress.Update(26 * kMiB, 100 * kMiB);
  EXPECT_EQ(Output(), "\ruploading weights   25%  25.0/100.0 MiB  25.0 MiB/s  ETA 3s");
  Advance(0.95);  // 2 s in
  progress.Update(100 * kMiB, 100 * kMiB);
  progress.Finish();
  progress.Finish();
  EXPECT_EQ(Output(),
            "\ruploading weights   25%  25.0/100.0 MiB  25.0 MiB/s  ETA 3s"
            "\ruploading weights  100%  100.0/100.0 MiB  50.0 MiB/s       "
            "\ruploading weights: 100.0 MiB in 2.0 s (50.0 MiB/s)  \n");
  EXPECT_TRUE(progress.shown());
}

TEST_F(ProgressTest, TerminalAlwaysDrawsTheEnd) {
  TransferProgress progress(MakeOptions(true));
  Advance(1);
  progress.Update(50 * kMiB, 100 * kMiB);
  Advance(0.01);
  progress.Update(100 * kMiB, 100 * kMiB);
  EXPECT_THAT(Output(), HasSubstr("100%"));
}

TEST_F(ProgressTest, PlainLinesAtQuartersOrEveryFewSeconds) {
  TransferProgress progress(MakeOptions(false));
  Advance(1);
  progress.Update(5 * kMiB, 1000 * kMiB);  // first line once the quiet period is over
  for (int i = 0; i < 9; ++i) {
    Advance(0.5);
    progress.Update((10 + i) * kMiB, 1000 * kMiB);  // same quarter, < 5 s: nothing
  }
  Advance(1);  // 5.5 s since the first line
  progress.Update(20 * kMiB, 1000 * kMiB);
  Advance(0.1);
  progress.Update(260 * kMiB, 1000 * kMiB);  // a new quarter
  Advance(0.1);
  progress.Update(300 * kMiB, 1000 * kMiB);
  Advance(0.1);
  progress.Update(1000 * kMiB, 1000 * kMiB);  // the end: left to the summary
  progress.Finish();
  const std::string output = Output();
  EXPECT_EQ(output.find('\r'), std::string::npos);
  std::vector<std::string> lines = absl::StrSplit(output, '\n');
  EXPECT_THAT(lines,
              ElementsAre("uploading weights    0%  5.0/1000.0 MiB  5.0 MiB/s  ETA 3m19s",
                          "uploading weights    2%  20.0/1000.0 MiB  3.1 MiB/s  ETA 5m19s",
                          "uploading weights   26%  260.0/1000.0 MiB  39.4 MiB/s  ETA 19s",
                          "uploading weights: 1000.0 MiB in 6.8 s (147.1 MiB/s)", ""));
}

TEST_F(ProgressTest, PlainSlowEndStillGetsASummary) {
  TransferProgress progress(MakeOptions(false));
  Advance(2);
  progress.Update(10, 10);
  progress.Finish();
  EXPECT_EQ(Output(), "uploading weights: 0.0 MiB in 2.0 s (0.0 MiB/s)\n");
}

TEST_F(ProgressTest, LongEta) {
  TransferProgress progress(MakeOptions(false));
  Advance(10);
  progress.Update(1 * kMiB, 1000 * kMiB);
  EXPECT_THAT(Output(), HasSubstr("ETA 2h46m"));
}

TEST(IsTerminalTest, FilesAreNotTerminals) {
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  EXPECT_FALSE(IsTerminal(file));
  std::fclose(file);
  EXPECT_FALSE(IsTerminal(nullptr));
}

}  // namespace
}  // namespace graphopt
