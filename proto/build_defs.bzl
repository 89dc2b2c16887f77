"""Protocol Buffer + gRPC C++ code generation with Debian's protoc and grpc_cpp_plugin."""

def cc_grpc_proto_library(name, srcs, deps = [], proto_deps = [], grpc = False, visibility = None):
    """Generates C++ (and, with grpc=True, gRPC service) code for srcs.

    The messages and the gRPC service code are separate libraries, so that code which only
    handles the messages (service/, the libraries under the transport) does not link gRPC.

    Args:
      name: name of the messages' cc_library. With grpc=True the service stubs are the
        cc_library NAME without its "_proto" suffix plus "_grpc" ("worker_cc_proto":
        "worker_cc_grpc").
      srcs: .proto files in this package.
      deps: cc_grpc_proto_library targets whose .proto files srcs import.
      proto_deps: the imported .proto files themselves (labels), needed by protoc.
      grpc: also run grpc_cpp_plugin.
      visibility: visibility of the cc_library.
    """
    outs = []
    for src in srcs:
        base = src[:-len(".proto")]
        outs += [base + ".pb.h", base + ".pb.cc"]
        if grpc:
            outs += [base + ".grpc.pb.h", base + ".grpc.pb.cc"]
    cmd = "/usr/bin/protoc -I. --cpp_out=$(GENDIR)"
    if grpc:
        cmd += " --grpc_out=$(GENDIR) --plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin"
    cmd += " " + " ".join(["$(location %s)" % s for s in srcs])
    native.genrule(
        name = name + "_gen",
        srcs = srcs + proto_deps,
        outs = outs,
        cmd = cmd,
    )
    native.cc_library(
        name = name,
        srcs = [o for o in outs if o.endswith(".pb.cc") and not o.endswith(".grpc.pb.cc")],
        hdrs = [o for o in outs if o.endswith(".pb.h") and not o.endswith(".grpc.pb.h")],
        deps = deps + ["//third_party:protobuf"],
        visibility = visibility,
    )
    if grpc:
        native.cc_library(
            name = name[:-len("_proto")] + "_grpc" if name.endswith("_proto") else name + "_grpc",
            srcs = [o for o in outs if o.endswith(".grpc.pb.cc")],
            hdrs = [o for o in outs if o.endswith(".grpc.pb.h")],
            deps = [":" + name, "//third_party:grpc", "//third_party:protobuf"],
            visibility = visibility,
        )
