#include "graph/proto_util.h"

#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace graphopt {

void AppendSerializedDeterministic(const google::protobuf::MessageLite& message,
                                   std::string* out) {
  // The streams trim `out` to the bytes written when they go out of scope.
  google::protobuf::io::StringOutputStream stream(out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
}

std::string SerializeDeterministic(const google::protobuf::MessageLite& message) {
  std::string bytes;
  AppendSerializedDeterministic(message, &bytes);
  return bytes;
}

}  // namespace graphopt
