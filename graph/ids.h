#ifndef GRAPHOPT_GRAPH_IDS_H_
#define GRAPHOPT_GRAPH_IDS_H_

#include <cstdint>
#include <ostream>

namespace graphopt {

// A dense, strongly typed index. Default-constructed ids are invalid.
template <typename Tag>
class Id {
 public:
  constexpr Id() = default;
  constexpr explicit Id(int32_t value) : value_(value) {}

  constexpr int32_t value() const { return value_; }
  constexpr bool valid() const { return value_ >= 0; }

  friend constexpr bool operator==(Id a, Id b) { return a.value_ == b.value_; }
  friend constexpr bool operator!=(Id a, Id b) { return a.value_ != b.value_; }
  friend constexpr bool operator<(Id a, Id b) { return a.value_ < b.value_; }

  template <typename H>
  friend H AbslHashValue(H h, Id id) {
    return H::combine(std::move(h), id.value_);
  }
  friend std::ostream& operator<<(std::ostream& os, Id id) { return os << id.value_; }

 private:
  int32_t value_ = -1;
};

using NodeId = Id<struct NodeIdTag>;
using ValueId = Id<struct ValueIdTag>;
// A (domain, op_type) pair interned by one Graph (Graph::op_kind); means nothing elsewhere.
using OpKindId = Id<struct OpKindIdTag>;

}  // namespace graphopt

#endif  // GRAPHOPT_GRAPH_IDS_H_
