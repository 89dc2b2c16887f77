#include "runtime/npy.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "graph/types.h"

namespace graphopt::runtime {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

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

// The value of 'key' in the header dict, as raw text up to the next top-level comma.
absl::StatusOr<std::string> DictValue(absl::string_view header, absl::string_view key,
                                      absl::string_view what) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t pos = header.find(quoted);
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": .npy header has no ", quoted));
  }
  pos = header.find(':', pos + quoted.size());
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": malformed .npy header"));
  }
  absl::string_view rest = absl::StripLeadingAsciiWhitespace(header.substr(pos + 1));
  if (!rest.empty() && rest[0] == '(') {
    size_t close = rest.find(')');
    if (close == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": malformed .npy shape"));
    }
    return std::string(rest.substr(0, close + 1));
  }
  size_t end = rest.find_first_of(",}");
  return std::string(absl::StripAsciiWhitespace(rest.substr(0, end)));
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
    if (bytes.size() < 12) return absl::InvalidArgumentError(absl::StrCat(what, ": truncated .npy header"));
    header_len = 0;
    for (int i = 0; i < 4; ++i) header_len |= static_cast<size_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
    offset = 12;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(what, ": .npy version ", major, " is not supported"));
  }
  if (bytes.size() < offset + header_len) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": truncated .npy header"));
  }
  absl::string_view header = bytes.substr(offset, header_len);
  absl::StatusOr<std::string> descr = DictValue(header, "descr", what);
  if (!descr.ok()) return descr.status();
  absl::StatusOr<std::string> fortran = DictValue(header, "fortran_order", what);
  if (!fortran.ok()) return fortran.status();
  absl::StatusOr<std::string> shape_text = DictValue(header, "shape", what);
  if (!shape_text.ok()) return shape_text.status();
  if (*fortran != "False") {
    return absl::InvalidArgumentError(absl::StrCat(what, ": Fortran-order arrays are not supported"));
  }
  std::string d = std::string(absl::StripPrefix(absl::StripSuffix(*descr, "'"), "'"));
  if (d.size() != 3 || (d[0] != '<' && d[0] != '|' && d[0] != '=')) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": dtype '", d, "' is not supported (little-endian numbers and bool only)"));
  }
  v1::DataType dtype = v1::DT_UNDEFINED;
  for (const Descr& e : kDescrs) {
    if (d.substr(1) == e.code) dtype = e.dtype;
  }
  if (dtype == v1::DT_UNDEFINED) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": dtype '", d, "' is not supported"));
  }
  Shape shape;
  absl::string_view inner = absl::StripSuffix(absl::StripPrefix(*shape_text, "("), ")");
  for (absl::string_view part : absl::StrSplit(inner, ',', absl::SkipWhitespace())) {
    int64_t v;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(part), &v) || v < 0) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": bad .npy shape ", *shape_text));
    }
    shape.push_back(v);
  }
  absl::StatusOr<Tensor> t = Tensor::Allocate(dtype, shape);
  if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat(what, ": ", t.status().message()));
  const size_t data_offset = offset + header_len;
  if (bytes.size() - data_offset != t->byte_size()) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", bytes.size() - data_offset,
                                                   " bytes of data for ", t->DebugString(), " (",
                                                   t->byte_size(), " expected)"));
  }
  if (t->byte_size() > 0) std::memcpy(t->raw_data(), bytes.data() + data_offset, t->byte_size());
  return t;
}

absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor) {
  const char* code = nullptr;
  for (const Descr& e : kDescrs) {
    if (e.dtype == tensor.dtype()) code = e.code;
  }
  if (code == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(".npy cannot hold ", DataTypeName(tensor.dtype()), " tensors"));
  }
  const char order = (code[1] == '1') ? '|' : '<';
  std::string shape = "(";
  for (int64_t dim : tensor.shape()) absl::StrAppend(&shape, dim, ",");
  if (tensor.rank() > 1) shape.pop_back();
  shape += ")";
  std::string header = absl::StrCat("{'descr': '", std::string(1, order), code,
                                    "', 'fortran_order': False, 'shape': ", shape, ", }");
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
  out.append(static_cast<const char*>(tensor.raw_data()), tensor.byte_size());
  return out;
}

}  // namespace graphopt::runtime
