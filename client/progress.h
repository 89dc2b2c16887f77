#ifndef GRAPHOPT_CLIENT_PROGRESS_H_
#define GRAPHOPT_CLIENT_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>

#include "absl/time/time.h"

namespace graphopt {

// Whether `file` is a terminal (isatty on its descriptor).
bool IsTerminal(std::FILE* file);

// A progress display for one transfer of a known number of bytes, e.g.
//   uploading weights  42%  630.0/1500.0 MiB  512.3 MiB/s  ETA 2s
// Silent during the first quiet_period, so fast transfers print nothing. After that, on a
// terminal one line is redrawn in place with '\r' (at most every redraw_interval); elsewhere
// (a log file, CI) a plain line is written each time the transfer passes another quarter or
// plain_interval has gone by since the last line. Finish ends with a summary line, only when
// the display was shown. Not thread-safe.
class TransferProgress {
 public:
  struct Options {
    // Where to write (not owned); stderr when null.
    std::FILE* out = nullptr;
    bool is_tty = false;
    std::string label = "uploading";
    absl::Duration quiet_period = absl::Milliseconds(500);
    absl::Duration redraw_interval = absl::Milliseconds(100);
    absl::Duration plain_interval = absl::Seconds(5);
    // The time source; absl::Now when empty.
    std::function<absl::Time()> clock;
  };

  // The transfer starts now (by options.clock).
  explicit TransferProgress(Options options);
  ~TransferProgress() = default;
  TransferProgress(const TransferProgress&) = delete;
  TransferProgress& operator=(const TransferProgress&) = delete;

  // `done` of `total` bytes have been transferred.
  void Update(int64_t done, int64_t total);

  // Ends the display: the summary line if it was shown (nothing otherwise). Later calls and
  // Updates do nothing.
  void Finish();

  bool shown() const { return shown_; }

 private:
  absl::Time Now() const;
  // "42%  630.0/1500.0 MiB  512.3 MiB/s  ETA 2s" at `now`.
  std::string StatusText(int64_t done, int64_t total, absl::Time now) const;
  void Write(const std::string& text);

  Options options_;
  absl::Time start_;
  bool shown_ = false;
  bool finished_ = false;
  int64_t done_ = 0;
  int64_t total_ = 0;
  absl::Time last_draw_ = absl::InfinitePast();
  // Quarters (0..4) reached at the last plain line.
  int last_quarter_ = -1;
  // Length of the last line drawn on a terminal, to blank out its leftovers.
  size_t last_length_ = 0;
};

}  // namespace graphopt

#endif  // GRAPHOPT_CLIENT_PROGRESS_H_
