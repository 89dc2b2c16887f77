#ifndef GRAPHOPT_GRAPH_SHARED_STRING_H_
#define GRAPHOPT_GRAPH_SHARED_STRING_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace graphopt {

// An immutable string held through one pointer: 8 bytes in the struct instead of a 32-byte
// std::string, so that passes sweeping every node or value slot move fewer bytes. Empty means
// no allocation (doc strings, device names and domains are empty in almost every node); copies
// share the text through a reference count (thread-safe), so giving every node of an op kind
// the kind's op_type never allocates. Assigning replaces the text, never edits it in place.
// Reads as a const std::string&.
class SharedString {
 public:
  SharedString() = default;
  SharedString(std::string s) { Assign(std::move(s)); }  // NOLINT: implicit, like a string
  SharedString(absl::string_view s) { Assign(std::string(s)); }  // NOLINT: as above
  SharedString(const char* s) { Assign(std::string(s)); }  // NOLINT: as above
  SharedString(const SharedString& other) : text_(other.text_) {
    if (text_ != nullptr) text_->refs.fetch_add(1, std::memory_order_relaxed);
  }
  SharedString(SharedString&& other) noexcept : text_(other.text_) { other.text_ = nullptr; }
  SharedString& operator=(const SharedString& other) {
    SharedString copy(other);
    std::swap(text_, copy.text_);
    return *this;
  }
  SharedString& operator=(SharedString&& other) noexcept {
    SharedString moved(std::move(other));
    std::swap(text_, moved.text_);
    return *this;
  }
  SharedString& operator=(std::string s) {
    SharedString replaced(std::move(s));
    std::swap(text_, replaced.text_);
    return *this;
  }
  SharedString& operator=(const char* s) { return *this = std::string(s); }
  ~SharedString() { Release(); }

  bool empty() const { return text_ == nullptr; }
  size_t size() const { return str().size(); }
  const char* c_str() const { return str().c_str(); }
  const std::string& str() const { return text_ ? text_->text : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as a string
  operator absl::string_view() const { return str(); }  // NOLINT: reads as a string
  // Whether both hold the very same text (a copy of one another): a test by address, for a
  // check that most often meets copies.
  bool SharesTextWith(const SharedString& other) const { return text_ == other.text_; }

  friend bool operator==(const SharedString& a, absl::string_view b) { return a.str() == b; }
  friend bool operator!=(const SharedString& a, absl::string_view b) { return a.str() != b; }
  friend bool operator==(absl::string_view a, const SharedString& b) { return a == b.str(); }
  friend bool operator!=(absl::string_view a, const SharedString& b) { return a != b.str(); }
  friend bool operator==(const SharedString& a, const std::string& b) { return a.str() == b; }
  friend bool operator!=(const SharedString& a, const std::string& b) { return a.str() != b; }
  friend bool operator==(const std::string& a, const SharedString& b) { return a == b.str(); }
  friend bool operator!=(const std::string& a, const SharedString& b) { return a != b.str(); }
  friend bool operator==(const SharedString& a, const char* b) { return a.str() == b; }
  friend bool operator!=(const SharedString& a, const char* b) { return a.str() != b; }
  friend bool operator==(const char* a, const SharedString& b) { return b.str() == a; }
  friend bool operator!=(const char* a, const SharedString& b) { return b.str() != a; }
  friend bool operator==(const SharedString& a, const SharedString& b) {
    return a.text_ == b.text_ || a.str() == b.str();
  }
  friend bool operator!=(const SharedString& a, const SharedString& b) { return !(a == b); }
  friend bool operator<(const SharedString& a, const SharedString& b) { return a.str() < b.str(); }

 private:
  struct Text {
    std::atomic<int32_t> refs{1};
    std::string text;
  };

  void Assign(std::string s) {
    if (s.empty()) return;
    text_ = new Text;
    text_->text = std::move(s);
  }
  void Release() {
    if (text_ != nullptr && text_->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete text_;
    }
    text_ = nullptr;
  }
  static const std::string& Empty() {
    static const std::string* const kEmpty = new std::string();
    return *kEmpty;
  }

  Text* text_ = nullptr;
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_SHARED_STRING_H_
