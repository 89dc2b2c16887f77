#include "client/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace graphopt {
namespace {

constexpr double kMiB = 1024.0 * 1024.0;

// "7s", "3m07s", "2h05m".
std::string FormatEta(double seconds) {
  const int64_t s = static_cast<int64_t>(std::ceil(seconds));
  if (s < 60) return absl::StrCat(s, "s");
  if (s < 3600) return absl::StrFormat("%dm%02ds", s / 60, s % 60);
  return absl::StrFormat("%dh%02dm", s / 3600, (s % 3600) / 60);
}

}  // namespace

bool IsTerminal(std::FILE* file) { return file != nullptr && isatty(fileno(file)) == 1; }

TransferProgress::TransferProgress(Options options) : options_(std::move(options)) {
  if (options_.out == nullptr) options_.out = stderr;
  start_ = Now();
}

absl::Time TransferProgress::Now() const {
  return options_.clock ? options_.clock() : absl::Now();
}

std::string TransferProgress::StatusText(int64_t done, int64_t total, absl::Time now) const {
  const double seconds = absl::ToDoubleSeconds(now - start_);
  const double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0;
  const int percent =
      total > 0 ? static_cast<int>(100 * static_cast<double>(done) / static_cast<double>(total))
                : 100;
  std::string text = absl::StrFormat("%3d%%  %.1f/%.1f MiB  %.1f MiB/s", percent, done / kMiB,
                                     total / kMiB, rate / kMiB);
  if (done < total) {
    absl::StrAppend(&text, "  ETA ",
                    rate > 0 ? FormatEta(static_cast<double>(total - done) / rate) : "--");
  }
  return text;
}

void TransferProgress::Write(const std::string& text) {
  std::fputs(text.c_str(), options_.out);
  std::fflush(options_.out);
}

void TransferProgress::Update(int64_t done, int64_t total) {
  if (finished_) return;
  done_ = done;
  total_ = total;
  const absl::Time now = Now();
  if (now - start_ < options_.quiet_period) return;
  if (options_.is_tty) {
    if (shown_ && now - last_draw_ < options_.redraw_interval && done < total) return;
    std::string line = absl::StrCat(options_.label, "  ", StatusText(done, total, now));
    const size_t length = line.size();
    if (length < last_length_) line.append(last_length_ - length, ' ');
    Write(absl::StrCat("\r", line));
    last_length_ = length;
  } else {
    const int quarter = total > 0 ? static_cast<int>(4 * done / total) : 4;
    // The end is reported by Finish's summary.
    if (done >= total) {
      shown_ = true;
      return;
    }
    if (shown_ && quarter <= last_quarter_ && now - last_draw_ < options_.plain_interval) {
      return;
    }
    Write(absl::StrCat(options_.label, "  ", StatusText(done, total, now), "\n"));
    last_quarter_ = quarter;
  }
  shown_ = true;
  last_draw_ = now;
}

void TransferProgress::Finish() {
  if (finished_) return;
  finished_ = true;
  if (!shown_) return;
  const double seconds = absl::ToDoubleSeconds(Now() - start_);
  std::string line =
      absl::StrFormat("%s: %.1f MiB in %.1f s (%.1f MiB/s)", options_.label, done_ / kMiB,
                      seconds, seconds > 0 ? done_ / kMiB / seconds : 0.0);
  if (options_.is_tty) {
    const size_t length = line.size();
    if (length < last_length_) line.append(last_length_ - length, ' ');
    line.insert(0, "\r");
  }
  line += "\n";
  Write(line);
}

}  // namespace graphopt
