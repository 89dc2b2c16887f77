// Text kernels: TfIdfVectorizer (int32/int64/string tokens) and StringNormalizer.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "runtime/kernels/cpu_kernels.h"
#include "runtime/kernels/kernel_util.h"

namespace graphopt::runtime {

absl::Status RegisterMiscTextKernels(KernelRegistry& registry);

namespace {

// --- TfIdfVectorizer ------------------------------------------------------------------------

// The pool's n-grams, tokens as ids (pool_int64s values, or indexes of pool_strings), each
// mapped to its output column. Built once per node.
class TfIdfKernel : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const KernelInfo& info) {
    auto k = std::unique_ptr<TfIdfKernel>(new TfIdfKernel());
    absl::StatusOr<int64_t> min_n = info.RequireInt("min_gram_length");
    if (!min_n.ok()) return min_n.status();
    absl::StatusOr<int64_t> max_n = info.RequireInt("max_gram_length");
    if (!max_n.ok()) return max_n.status();
    absl::StatusOr<int64_t> skip = info.RequireInt("max_skip_count");
    if (!skip.ok()) return skip.status();
    k->min_n_ = *min_n;
    k->max_n_ = *max_n;
    k->max_skip_ = *skip;
    if (k->min_n_ < 1 || k->max_n_ < k->min_n_ || k->max_skip_ < 0) {
      return info.Invalid("need 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
    }
    const std::string mode = info.GetString("mode", "");
    if (mode == "TF") {
      k->mode_ = kTf;
    } else if (mode == "IDF") {
      k->mode_ = kIdf;
    } else if (mode == "TFIDF") {
      k->mode_ = kTfIdf;
    } else {
      return info.Invalid(absl::StrCat("attribute 'mode' is '", mode, "' (TF, IDF or TFIDF)"));
    }
    const std::vector<int64_t> counts = info.GetInts("ngram_counts");
    const std::vector<int64_t> indexes = info.GetInts("ngram_indexes");
    k->weights_ = info.GetFloats("weights");
    std::vector<int64_t> pool = info.GetInts("pool_int64s");
    const std::vector<std::string> strings = info.GetStrings("pool_strings");
    if (!strings.empty()) {
      k->strings_ = true;
      pool.clear();
      for (const std::string& s : strings) {
        auto [it, inserted] = k->string_ids_.emplace(s, static_cast<int64_t>(k->string_ids_.size()));
        pool.push_back(it->second);
      }
    }
    const int64_t pool_size = static_cast<int64_t>(pool.size());
    int64_t gram = 0;  // position in ngram_indexes
    for (size_t level = 0; level < counts.size(); ++level) {
      const int64_t n = static_cast<int64_t>(level) + 1;
      const int64_t begin = counts[level];
      const int64_t end = level + 1 < counts.size() ? counts[level + 1] : pool_size;
      if (begin < 0 || end < begin || end > pool_size || (end - begin) % n != 0) {
        return info.Invalid(absl::StrCat("ngram_counts[", level, "] = ", begin,
                                         " does not split pool of ", pool_size, " into ", n,
                                         "-grams"));
      }
      for (int64_t p = begin; p < end; p += n, ++gram) {
        if (gram >= static_cast<int64_t>(indexes.size())) {
          return info.Invalid("ngram_indexes has fewer entries than the pool has n-grams");
        }
        const int64_t col = indexes[gram];
        if (col < 0) return info.Invalid("ngram_indexes must be non-negative");
        k->columns_ = std::max(k->columns_, col + 1);
        if (!k->weights_.empty() && col >= static_cast<int64_t>(k->weights_.size())) {
          return info.Invalid("weights has fewer entries than the output has columns");
        }
        k->grams_.emplace(std::vector<int64_t>(pool.begin() + p, pool.begin() + p + n), col);
      }
    }
    for (int64_t col : indexes) k->columns_ = std::max(k->columns_, col + 1);
    return std::unique_ptr<OpKernel>(std::move(k));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
    if (!xt.ok()) return xt.status();
    const Tensor& x = **xt;
    if (x.rank() != 1 && x.rank() != 2) {
      return ctx.Invalid(absl::StrCat("input must be [C] or [N, C], got ", x.DebugString()));
    }
    const bool is_string = x.dtype() == v1::DT_STRING;
    if (is_string != strings_ ||
        (!is_string && x.dtype() != v1::DT_INT32 && x.dtype() != v1::DT_INT64)) {
      return ctx.Invalid(absl::StrCat("input ", x.DebugString(), " does not match the pool (",
                                      strings_ ? "strings" : "int32/int64", ")"));
    }
    const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
    const int64_t len = x.rank() == 2 ? x.dim(1) : x.dim(0);
    Shape shape = x.rank() == 2 ? Shape{rows, columns_} : Shape{columns_};
    absl::StatusOr<Tensor*> out = ctx.AllocateOutput(0, v1::DT_FLOAT32, shape);
    if (!out.ok()) return out.status();
    float* o = (*out)->data<float>();
    std::fill(o, o + (*out)->num_elements(), 0.0f);
    std::vector<int64_t> tokens(len);
    std::vector<int64_t> key;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t i = 0; i < len; ++i) {
        if (is_string) {
          auto it = string_ids_.find(x.strings()[r * len + i]);
          tokens[i] = it == string_ids_.end() ? -1 : it->second;
        } else {
          tokens[i] = x.ElementAsInt64(r * len + i);
        }
      }
      float* row = o + r * columns_;
      for (int64_t i = 0; i < len; ++i) {
        for (int64_t n = min_n_; n <= max_n_; ++n) {
          // Unigrams do not depend on the skip; longer grams are counted once per skip.
          const int64_t skips = n == 1 ? 0 : max_skip_;
          for (int64_t s = 0; s <= skips; ++s) {
            const int64_t stride = s + 1;
            if (i + (n - 1) * stride >= len) break;
            key.clear();
            for (int64_t j = 0; j < n; ++j) key.push_back(tokens[i + j * stride]);
            auto it = grams_.find(key);
            if (it != grams_.end()) row[it->second] += 1;
          }
        }
      }
      for (int64_t c = 0; c < columns_; ++c) {
        const float w = weights_.empty() ? 1.0f : weights_[c];
        if (mode_ == kIdf) {
          row[c] = row[c] > 0 ? w : 0;
        } else if (mode_ == kTfIdf) {
          row[c] *= w;
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  enum Mode { kTf, kIdf, kTfIdf };
  TfIdfKernel() = default;

  int64_t min_n_ = 1, max_n_ = 1, max_skip_ = 0;
  Mode mode_ = kTf;
  bool strings_ = false;
  int64_t columns_ = 0;
  std::vector<float> weights_;
  absl::flat_hash_map<std::string, int64_t> string_ids_;
  absl::flat_hash_map<std::vector<int64_t>, int64_t> grams_;
};

// --- StringNormalizer -----------------------------------------------------------------------

absl::Status StringNormalizerKernel(KernelContext& ctx) {
  absl::StatusOr<const Tensor*> xt = RequireInput(ctx, 0);
  if (!xt.ok()) return xt.status();
  const Tensor& x = **xt;
  if (x.dtype() != v1::DT_STRING) {
    return ctx.Invalid(absl::StrCat("input must be strings, got ", x.DebugString()));
  }
  if (!(x.rank() == 1 || (x.rank() == 2 && x.dim(0) == 1))) {
    return ctx.Invalid(absl::StrCat("input must be [C] or [1, C], got ", x.DebugString()));
  }
  const KernelInfo& info = ctx.info();
  const std::string action = info.GetString("case_change_action", "NONE");
  if (action != "NONE" && action != "LOWER" && action != "UPPER") {
    return ctx.Invalid(absl::StrCat("attribute 'case_change_action' is '", action,
                                    "' (NONE, LOWER or UPPER)"));
  }
  const bool case_sensitive = info.GetInt("is_case_sensitive", 0) != 0;
  absl::flat_hash_set<std::string> stop;
  for (const std::string& s : info.GetStrings("stopwords")) {
    stop.insert(case_sensitive ? s : absl::AsciiStrToLower(s));
  }
  std::vector<std::string> kept;
  for (int64_t i = 0; i < x.num_elements(); ++i) {
    const std::string& s = x.strings()[i];
    if (stop.contains(case_sensitive ? s : absl::AsciiStrToLower(s))) continue;
    if (action == "LOWER") {
      kept.push_back(absl::AsciiStrToLower(s));
    } else if (action == "UPPER") {
      kept.push_back(absl::AsciiStrToUpper(s));
    } else {
      kept.push_back(s);
    }
  }
  if (kept.empty()) kept.push_back("");  // an empty result is one empty string
  const int64_t n = static_cast<int64_t>(kept.size());
  absl::StatusOr<Tensor*> out =
      ctx.AllocateOutput(0, v1::DT_STRING, x.rank() == 2 ? Shape{1, n} : Shape{n});
  if (!out.ok()) return out.status();
  for (int64_t i = 0; i < n; ++i) (*out)->strings()[i] = std::move(kept[i]);
  return absl::OkStatus();
}

}  // namespace

absl::Status RegisterMiscTextKernels(KernelRegistry& registry) {
  absl::Status s;
  s.Update(registry.Register("TfIdfVectorizer", KernelFactory(TfIdfKernel::Create)));
  s.Update(registry.Register("StringNormalizer", StringNormalizerKernel));
  return s;
}

}  // namespace graphopt::runtime
