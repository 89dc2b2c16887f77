#include "runtime/npy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "graph/types.h"
#include "runtime/float16.h"

namespace graphopt::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
// NumPy's own limit on the number of dims.
constexpr int kMaxRank = 64;
// A fixed-width string array this large is refused on writing: one long element widens all.
constexpr int64_t kMaxStringArrayBytes = int64_t{1} << 30;

struct Descr {
  const char* code;
  v1::DataType dtype;
};
constexpr Descr kDescrs[] = {
    {"f2", v1::DT_FLOAT16}, {"f4", v1::DT_FLOAT32}, {"f8", v1::DT_FLOAT64},
    {"i1", v1::DT_INT8},    {"i2", v1::DT_INT16},   {"i4", v1::DT_INT32},
    {"i8", v1::DT_INT64},   {"u1", v1::DT_UINT8},   {"u2", v1::DT_UINT16},
    {"u4", v1::DT_UINT32},  {"u8", v1::DT_UINT64},  {"b1", v1::DT_BOOL},
};

// What a header's 'descr' means here.
struct ElementType {
  v1::DataType dtype = v1::DT_UNDEFINED;
  enum class Strings { kNone, kUtf32, kBytes } strings = Strings::kNone;
  int64_t item_bytes = 0;  // bytes per element in the file
};

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header dict NumPy writes: {'descr': <str>, 'fortran_order': <bool>, 'shape': <tuple>},
// keys in any order, a trailing comma allowed. A scanner for exactly that, not a Python
// parser: anything else is an error naming what was found.
class HeaderParser {
 public:
  HeaderParser(absl::string_view text, absl::string_view what) : text_(text), what_(what) {}

  absl::StatusOr<Header> Parse() {
    Header header;
    bool has_descr = false, has_fortran = false, has_shape = false;
    SkipBlanks();
    if (!Consume('{')) return Error("does not start with '{'");
    while (true) {
      SkipBlanks();
      if (Consume('}')) break;
      absl::StatusOr<std::string> key = String();
      if (!key.ok()) return key.status();
      SkipBlanks();
      if (!Consume(':')) return Error(absl::StrCat("no ':' after '", *key, "'"));
      SkipBlanks();
      if (*key == "descr") {
        if (has_descr) return Error("'descr' given twice");
        has_descr = true;
        if (!AtEnd() && Peek() == '[') {
          return Error("a structured dtype (a 'descr' list) is not supported");
        }
        absl::StatusOr<std::string> descr = String();
        if (!descr.ok()) return descr.status();
        header.descr = *std::move(descr);
      } else if (*key == "fortran_order") {
        if (has_fortran) return Error("'fortran_order' given twice");
        has_fortran = true;
        if (ConsumeWord("True")) {
          header.fortran_order = true;
        } else if (!ConsumeWord("False")) {
          return Error("'fortran_order' is not True or False");
        }
      } else if (*key == "shape") {
        if (has_shape) return Error("'shape' given twice");
        has_shape = true;
        if (absl::Status s = Shape(&header.shape); !s.ok()) return s;
      } else {
        return Error(absl::StrCat("unexpected key '", absl::CHexEscape(*key), "'"));
      }
      SkipBlanks();
      if (Consume(',')) continue;
      if (Consume('}')) break;
      return Error("expected ',' or '}' between entries");
    }
    SkipBlanks();
    if (!AtEnd()) return Error("text after the closing '}'");
    if (!has_descr || !has_fortran || !has_shape) {
      return Error(absl::StrCat("has no '",
                                !has_descr ? "descr" : !has_fortran ? "fortran_order" : "shape",
                                "'"));
    }
    return header;
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return text_[pos_]; }
  void SkipBlanks() {
    while (!AtEnd() && absl::ascii_isspace(static_cast<unsigned char>(Peek()))) ++pos_;
  }
  bool Consume(char c) {
    if (AtEnd() || Peek() != c) return false;
    ++pos_;
    return true;
  }
  bool ConsumeWord(absl::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }
  absl::Status Error(absl::string_view problem) const {
    return absl::InvalidArgumentError(absl::StrCat(what_, ": .npy header ", problem));
  }

  // 'text' or "text" without escapes (NumPy's keys and dtype codes have none).
  absl::StatusOr<std::string> String() {
    if (AtEnd() || (Peek() != '\'' && Peek() != '"')) return Error("expected a quoted string");
    const char quote = Peek();
    const size_t start = ++pos_;
    const size_t end = text_.find(quote, start);
    if (end == absl::string_view::npos) return Error("has an unterminated string");
    pos_ = end + 1;
    absl::string_view s = text_.substr(start, end - start);
    if (s.find('\\') != absl::string_view::npos) return Error("has an escaped string");
    return std::string(s);
  }

  // (), (3,), (2, 3): non-negative decimal dims (Python 2's '3L' too).
  absl::Status Shape(std::vector<int64_t>* shape) {
    if (!Consume('(')) return Error("'shape' is not a tuple");
    while (true) {
      SkipBlanks();
      if (Consume(')')) return absl::OkStatus();
      const size_t start = pos_;
      while (!AtEnd() && absl::ascii_isdigit(static_cast<unsigned char>(Peek()))) ++pos_;
      int64_t dim = 0;
      if (pos_ == start || !absl::SimpleAtoi(text_.substr(start, pos_ - start), &dim)) {
        return Error("'shape' holds something other than non-negative integers");
      }
      Consume('L');
      if (shape->size() >= kMaxRank) return Error(absl::StrCat("'shape' has over ", kMaxRank, " dims"));
      shape->push_back(dim);
      SkipBlanks();
      if (Consume(',')) continue;
      if (Consume(')')) return absl::OkStatus();
      return Error("'shape' is not a tuple of integers");
    }
  }

  absl::string_view text_;
  absl::string_view what_;
  size_t pos_ = 0;
};

absl::StatusOr<ElementType> ParseDescr(absl::string_view d, absl::string_view what) {
  auto unsupported = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": dtype '", absl::CHexEscape(d), "' is not supported (", why, ")"));
  };
  ElementType type;
  if (d == "bfloat16") {
    type.dtype = v1::DT_BFLOAT16;
    type.item_bytes = 2;
    return type;
  }
  if (d.size() == 2 && d[1] == 'O') {
    return unsupported("object arrays need pickle; save strings with a fixed width, e.g. "
                       "np.save(path, a.astype(str))");
  }
  if (d.size() < 3) return unsupported("not a NumPy type code");
  const char order = d[0];
  const char kind = d[1];
  if (order == '>') return unsupported("big-endian data");
  if (order != '<' && order != '|' && order != '=') return unsupported("not a NumPy type code");
  int64_t size = 0;
  if (!absl::SimpleAtoi(d.substr(2), &size) || size <= 0 ||
      !absl::ascii_isdigit(static_cast<unsigned char>(d[2]))) {
    return unsupported("not a NumPy type code with a positive size");
  }
  switch (kind) {
    case 'V':
      if (size != 2) return unsupported("a void type other than ml_dtypes' bfloat16 ('<V2')");
      type.dtype = v1::DT_BFLOAT16;
      type.item_bytes = 2;
      return type;
    case 'U':
      // Bounded so that the element size cannot overflow; the data size check does the rest.
      if (size > (int64_t{1} << 40)) return unsupported("too wide");
      type.dtype = v1::DT_STRING;
      type.strings = ElementType::Strings::kUtf32;
      type.item_bytes = size * 4;
      return type;
    case 'S':
    case 'a':
      if (size > (int64_t{1} << 40)) return unsupported("too wide");
      type.dtype = v1::DT_STRING;
      type.strings = ElementType::Strings::kBytes;
      type.item_bytes = size;
      return type;
    default:
      break;
  }
  for (const Descr& e : kDescrs) {
    if (d.substr(1) == e.code) {
      type.dtype = e.dtype;
      type.item_bytes = size;
      return type;
    }
  }
  return unsupported("little-endian numbers, bool, bfloat16 and fixed-width strings only");
}

void AppendUtf8(uint32_t cp, std::string* out) {
  if (cp < 0x80) {
    *out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    *out += static_cast<char>(0xC0 | (cp >> 6));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    *out += static_cast<char>(0xE0 | (cp >> 12));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    *out += static_cast<char>(0xF0 | (cp >> 18));
    *out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    *out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    *out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

// The code points of `s`, or nullopt when it is not valid UTF-8 (overlong forms, surrogates
// and values over U+10FFFF are not).
std::optional<std::vector<uint32_t>> DecodeUtf8(const std::string& s) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t cp;
    if (c < 0x80) {
      extra = 0;
      cp = c;
    } else if (c >= 0xC2 && c < 0xE0) {
      extra = 1;
      cp = c & 0x1F;
    } else if (c >= 0xE0 && c < 0xF0) {
      extra = 2;
      cp = c & 0x0F;
    } else if (c >= 0xF0 && c < 0xF5) {
      extra = 3;
      cp = c & 0x07;
    } else {
      return std::nullopt;
    }
    if (s.size() - i <= static_cast<size_t>(extra)) return std::nullopt;  // truncated
    for (int k = 1; k <= extra; ++k) {
      const unsigned char cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return std::nullopt;
      cp = (cp << 6) | (cc & 0x3F);
    }
    if ((extra == 2 && cp < 0x800) || (extra == 3 && cp < 0x10000) || cp > 0x10FFFF ||
        (cp >= 0xD800 && cp <= 0xDFFF)) {
      return std::nullopt;
    }
    out.push_back(cp);
    i += extra + 1;
  }
  return out;
}

void AppendLittleEndian32(uint32_t v, std::string* out) {
  for (int b = 0; b < 4; ++b) *out += static_cast<char>((v >> (8 * b)) & 0xFF);
}

// Fills string tensor `t` from fixed-width elements.
absl::Status ReadStrings(const ElementType& type, absl::string_view data, absl::string_view what,
                         Tensor* t) {
  std::string* out = t->strings();
  const int64_t n = t->num_elements();
  for (int64_t i = 0; i < n; ++i) {
    absl::string_view item = data.substr(static_cast<size_t>(i * type.item_bytes),
                                         static_cast<size_t>(type.item_bytes));
    if (type.strings == ElementType::Strings::kBytes) {
      const size_t end = item.find_last_not_of('\0');
      out[i] = std::string(item.substr(0, end == absl::string_view::npos ? 0 : end + 1));
      continue;
    }
    size_t chars = item.size() / 4;
    auto code_point = [&](size_t k) {
      uint32_t v = 0;
      for (int b = 0; b < 4; ++b) v |= static_cast<uint32_t>(static_cast<uint8_t>(item[4 * k + b])) << (8 * b);
      return v;
    };
    while (chars > 0 && code_point(chars - 1) == 0) --chars;
    std::string text;
    text.reserve(chars);
    for (size_t k = 0; k < chars; ++k) {
      const uint32_t cp = code_point(k);
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
        return absl::InvalidArgumentError(absl::StrCat(
            what, ": element ", i, " holds 0x", absl::Hex(cp), ", which is not a Unicode code point"));
      }
      AppendUtf8(cp, &text);
    }
    out[i] = std::move(text);
  }
  return absl::OkStatus();
}

// The fixed-width form of a string tensor: its descr and data.
absl::StatusOr<std::pair<std::string, std::string>> WriteStrings(const Tensor& tensor) {
  const int64_t n = tensor.num_elements();
  const std::string* strings = tensor.strings();
  std::vector<std::vector<uint32_t>> decoded;
  decoded.reserve(static_cast<size_t>(n));
  bool utf8 = true;
  size_t widest_bytes = 1;
  for (int64_t i = 0; i < n; ++i) {
    const std::string& s = strings[i];
    if (!s.empty() && s.back() == '\0') {
      return absl::UnimplementedError(absl::StrCat(
          "string element ", i, " ends with NUL, which .npy fixed-width strings cannot keep"));
    }
    widest_bytes = std::max(widest_bytes, s.size());
    if (utf8) {
      std::optional<std::vector<uint32_t>> cps = DecodeUtf8(s);
      if (cps.has_value()) {
        decoded.push_back(*std::move(cps));
      } else {
        utf8 = false;
        decoded.clear();
      }
    }
  }
  size_t width = 1;
  for (const std::vector<uint32_t>& cps : decoded) width = std::max(width, cps.size());
  const int64_t item_bytes = utf8 ? static_cast<int64_t>(width) * 4 : static_cast<int64_t>(widest_bytes);
  if (n > 0 && item_bytes > kMaxStringArrayBytes / n) {
    return absl::UnimplementedError(absl::StrCat(
        n, " strings padded to the widest (", utf8 ? width : widest_bytes,
        utf8 ? " code points" : " bytes", ") would take over ", kMaxStringArrayBytes >> 20,
        " MiB as a fixed-width .npy array"));
  }
  std::string data;
  data.reserve(static_cast<size_t>(n * item_bytes));
  if (utf8) {
    for (const std::vector<uint32_t>& cps : decoded) {
      for (uint32_t cp : cps) AppendLittleEndian32(cp, &data);
      data.append((width - cps.size()) * 4, '\0');
    }
    return std::make_pair(absl::StrCat("<U", width), std::move(data));
  }
  for (int64_t i = 0; i < n; ++i) {
    data += strings[i];
    data.append(widest_bytes - strings[i].size(), '\0');
  }
  return std::make_pair(absl::StrCat("|S", widest_bytes), std::move(data));
}

std::string MakeNpy(absl::string_view descr, const Shape& dims, absl::string_view data) {
  std::string shape = "(";
  for (int64_t dim : dims) absl::StrAppend(&shape, dim, ", ");
  if (dims.size() > 1) shape.resize(shape.size() - 2);
  if (dims.size() == 1) shape.pop_back();  // "(3,)"
  shape += ")";
  std::string header = absl::StrCat("{'descr': '", descr, "', 'fortran_order': False, 'shape': ",
                                    shape, ", }");
  // Pad with spaces and a newline so that the data starts 64-byte aligned.
  size_t prefix = 10;
  if (header.size() + 1 + prefix > 65535) prefix = 12;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::string out(kMagic, 6);
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  const size_t len = header.size();
  out += static_cast<char>(len & 0xff);
  out += static_cast<char>((len >> 8) & 0xff);
  if (prefix == 12) {
    out += static_cast<char>((len >> 16) & 0xff);
    out += static_cast<char>((len >> 24) & 0xff);
  }
  out += header;
  out.append(data.data(), data.size());
  return out;
}

}  // namespace

absl::StatusOr<Tensor> ParseNpy(absl::string_view bytes, absl::string_view what) {
  if (bytes.size() < 10 || bytes.substr(0, 6) != absl::string_view(kMagic, 6)) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": not a .npy file (no magic)"));
  }
  const uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t header_len, offset;
  if (major == 1) {
    header_len = static_cast<uint8_t>(bytes[8]) | (static_cast<uint8_t>(bytes[9]) << 8);
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": truncated .npy header"));
    }
    header_len = 0;
    for (int i = 0; i < 4; ++i) {
      header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    }
    offset = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": .npy version ", major, " is not supported"));
  }
  if (bytes.size() - offset < header_len) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": truncated .npy header (",
                                                   header_len, " bytes announced, ",
                                                   bytes.size() - offset, " present)"));
  }
  absl::StatusOr<Header> header = HeaderParser(bytes.substr(offset, header_len), what).Parse();
  if (!header.ok()) return header.status();
  if (header->fortran_order) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": Fortran-order arrays are not supported"));
  }
  absl::StatusOr<ElementType> type = ParseDescr(header->descr, what);
  if (!type.ok()) return type.status();
  const Shape shape(header->shape.begin(), header->shape.end());
  // The size the shape claims, checked against the data before anything is allocated.
  const absl::string_view data = bytes.substr(offset + header_len);
  int64_t elements = 1;
  bool overflow = false;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    elements = 0;
  } else {
    for (int64_t dim : shape) {
      if (elements > std::numeric_limits<int64_t>::max() / dim) {
        overflow = true;
        break;
      }
      elements *= dim;
    }
  }
  if (overflow || (elements > 0 && type->item_bytes >
                                       std::numeric_limits<int64_t>::max() / elements) ||
      static_cast<uint64_t>(elements * type->item_bytes) != data.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        what, ": ", data.size(), " bytes of data for shape ", ShapeString(shape), " of '",
        header->descr, "' (",
        overflow ? std::string("more than 2^63 elements")
                 : absl::StrCat(elements, " elements of ", type->item_bytes, " bytes"),
        " expected)"));
  }
  absl::StatusOr<Tensor> t = Tensor::Allocate(type->dtype, shape);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", t.status().message()));
  if (type->strings != ElementType::Strings::kNone) {
    if (absl::Status s = ReadStrings(*type, data, what, &*t); !s.ok()) return s;
    return t;
  }
  if (t->byte_size() > 0) std::memcpy(t->raw_data(), data.data(), t->byte_size());
  return t;
}

absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor) {
  if (tensor.dtype() == v1::DT_STRING) {
    absl::StatusOr<std::pair<std::string, std::string>> strings = WriteStrings(tensor);
    if (!strings.ok()) return strings.status();
    return MakeNpy(strings->first, tensor.shape(), strings->second);
  }
  if (tensor.dtype() == v1::DT_BFLOAT16) {
    std::string data(static_cast<size_t>(tensor.num_elements()) * 4, '\0');
    const BFloat16* in = tensor.data<BFloat16>();
    for (int64_t i = 0; i < tensor.num_elements(); ++i) {
      const float f = BFloat16::ToFloat(in[i].bits);
      std::memcpy(&data[static_cast<size_t>(i) * 4], &f, 4);
    }
    return MakeNpy("<f4", tensor.shape(), data);
  }
  const char* code = nullptr;
  for (const Descr& e : kDescrs) {
    if (e.dtype == tensor.dtype()) code = e.code;
  }
  if (code == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(".npy cannot hold ", DataTypeName(tensor.dtype()), " tensors"));
  }
  const char order = (code[1] == '1') ? '|' : '<';
  return MakeNpy(absl::StrCat(std::string(1, order), code), tensor.shape(),
                 absl::string_view(static_cast<const char*>(tensor.raw_data()),
                                   tensor.byte_size()));
}

std::string NpyConversionNote(const Tensor& tensor) {
  if (tensor.dtype() == v1::DT_BFLOAT16) return "bfloat16 as float32, exactly";
  return "";
}

absl::StatusOr<Tensor> Float32ToBFloat16(const Tensor& tensor) {
  if (tensor.dtype() != v1::DT_FLOAT32) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot convert ", DataTypeName(tensor.dtype()), " to bfloat16"));
  }
  absl::StatusOr<Tensor> out = Tensor::Allocate(v1::DT_BFLOAT16, tensor.shape());
  if (!out.ok()) return out.status();
  const float* in = tensor.data<float>();
  BFloat16* bf = out->data<BFloat16>();
  for (int64_t i = 0; i < tensor.num_elements(); ++i) bf[i] = BFloat16(in[i]);
  return out;
}

}  // namespace graphopt::runtime
