#ifndef GRAPHOPT_GRAPH_RARE_STRING_H_
#define GRAPHOPT_GRAPH_RARE_STRING_H_

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"

namespace graphopt {

// A string that is empty in almost every node and value (doc strings, device names): one
// pointer in the struct instead of a 32-byte std::string, so that passes scanning every node
// or value slot move fewer bytes. Empty means no allocation. Reads as a const std::string&.
class RareString {
 public:
  RareString() = default;
  RareString(std::string s) { Assign(std::move(s)); }  // NOLINT: implicit, like a string
  RareString(const RareString& other)
      : text_(other.text_ ? std::make_unique<std::string>(*other.text_) : nullptr) {}
  RareString(RareString&&) noexcept = default;
  RareString& operator=(const RareString& other) {
    if (this != &other) Assign(other.str());
    return *this;
  }
  RareString& operator=(RareString&&) noexcept = default;
  RareString& operator=(std::string s) {
    Assign(std::move(s));
    return *this;
  }

  bool empty() const { return text_ == nullptr; }
  const std::string& str() const { return text_ ? *text_ : Empty(); }
  operator const std::string&() const { return str(); }  // NOLINT: reads as a string
  operator absl::string_view() const { return str(); }  // NOLINT: reads as a string

  friend bool operator==(const RareString& a, absl::string_view b) { return a.str() == b; }
  friend bool operator!=(const RareString& a, absl::string_view b) { return a.str() != b; }
  friend bool operator==(const RareString& a, const std::string& b) { return a.str() == b; }
  friend bool operator!=(const RareString& a, const std::string& b) { return a.str() != b; }
  friend bool operator==(const RareString& a, const char* b) { return a.str() == b; }
  friend bool operator!=(const RareString& a, const char* b) { return a.str() != b; }
  friend bool operator==(const RareString& a, const RareString& b) { return a.str() == b.str(); }
  friend bool operator!=(const RareString& a, const RareString& b) { return a.str() != b.str(); }

 private:
  void Assign(std::string s) {
    if (s.empty()) {
      text_.reset();
    } else if (text_) {
      *text_ = std::move(s);
    } else {
      text_ = std::make_unique<std::string>(std::move(s));
    }
  }
  static const std::string& Empty() {
    static const std::string* const kEmpty = new std::string();
    return *kEmpty;
  }

  std::unique_ptr<std::string> text_;
};

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_RARE_STRING_H_
