"""The graphopt client: Client, optimize() and their result types."""

import dataclasses
import importlib
import logging
import os
import re
import sys
from typing import (Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple,
                    Union)

import grpc

from . import session as session_lib
from . import weights
from ._proto import coordinator_pb2, coordinator_pb2_grpc
from ._proto import graph_pb2, op_pb2, optimizer_pb2, optimizer_pb2_grpc
from .errors import GraphoptError

_log = logging.getLogger("graphopt_client")

DEFAULT_ADDRESS = "127.0.0.1:50051"
# Deadline of each RPC, in seconds. A PutBlobs upload is one RPC however many blobs it carries.
DEFAULT_TIMEOUT_S = 300.0
# gRPC's largest message limit (a signed 32-bit byte count). The server enforces its own
# --max_message_mb on requests; the client should never be the one to refuse.
MAX_MESSAGE_BYTES = 2**31 - 1
# With upload_weights=None, models larger than this upload their large weights as blobs.
AUTO_UPLOAD_MODEL_BYTES = 64 * 1024 * 1024
# Most digests per HasBlobs request and blobs per PutBlobs call (the server allows 100,000).
_MAX_BLOBS_PER_CALL = 10000
# Where Client takes its token from when none is given.
TOKEN_ENV_VAR = "GRAPHOPT_TOKEN"
# A graphopt bearer token: "gopt_" and 43 base64url characters (32 random bytes).
_TOKEN_RE = re.compile(r"gopt_[A-Za-z0-9_-]{43}")
# Metadata keys of the credential and of the tenant.
_AUTHORIZATION_KEY = "authorization"
_TENANT_KEY = "graphopt-tenant"

# Accepted spellings of the result format.
_FORMATS = {
    "onnx": optimizer_pb2.MODEL_FORMAT_ONNX,
    "graph": optimizer_pb2.MODEL_FORMAT_GRAPH,
}
_FORMAT_NAMES = {number: name for name, number in _FORMATS.items()}

# What optimize() accepts as a model: serialized onnx.ModelProto bytes, an onnx.ModelProto, or
# a graphopt.v1.Graph message.
Model = Union[bytes, bytearray, memoryview, Any]
# One entry of `passes`: a name, (name, {option: value}) or a PassSpec message.
PassLike = Union[str, Tuple[str, Mapping[str, Any]], optimizer_pb2.PassSpec]
# What optimize() accepts as passes: PassLikes, {name: options}, or "name,name,...".
Passes = Union[str, Iterable[PassLike], Mapping[str, Mapping[str, Any]]]


@dataclasses.dataclass(frozen=True)
class PassReport:
    """What one pass of the pipeline did (proto/optimizer.proto PassReport)."""

    name: str
    wall_time_us: int
    changed: bool
    nodes_before: int
    nodes_after: int
    messages: Tuple[str, ...]
    # Set when the pipeline added this pass itself to satisfy the named pass's requirement.
    added_for: str
    # Time of the verifier run after this pass; 0 when it did not run.
    verify_time_us: int

    @property
    def wall_time_ms(self) -> float:
        return self.wall_time_us / 1000.0

    @classmethod
    def from_proto(cls, report: optimizer_pb2.PassReport) -> "PassReport":
        return cls(name=report.name, wall_time_us=report.wall_time_us, changed=report.changed,
                   nodes_before=report.nodes_before, nodes_after=report.nodes_after,
                   messages=tuple(report.messages), added_for=report.added_for,
                   verify_time_us=report.verify_time_us)


@dataclasses.dataclass(frozen=True)
class NodeCost:
    """One node's estimated cost (proto/optimizer.proto NodeCost); None is unknown."""

    node: str
    # "Conv", or "my.ops::Foo" outside the default domain.
    op: str
    flops: Optional[int]
    # Bytes the node reads and writes.
    bytes: Optional[int]

    @classmethod
    def from_proto(cls, cost: optimizer_pb2.NodeCost) -> "NodeCost":
        return cls(node=cost.node, op=cost.op,
                   flops=cost.flops if cost.HasField("flops") else None,
                   bytes=cost.bytes if cost.HasField("bytes") else None)


@dataclasses.dataclass(frozen=True)
class CostReport:
    """The optimized graph's estimated cost (proto/optimizer.proto CostReport).

    flops and bytes sum the nodes whose figure is known; shapes with symbolic dims that were not
    bound (dim_bindings) leave their nodes unknown. `nodes` lists every node in the graph's
    order when cost_estimate="per_node", and is empty for "totals".
    """

    flops: int
    bytes: int
    node_count: int
    flops_unknown_nodes: int
    bytes_unknown_nodes: int
    nodes: Tuple[NodeCost, ...]

    @classmethod
    def from_proto(cls, report: optimizer_pb2.CostReport) -> "CostReport":
        return cls(flops=report.flops, bytes=report.bytes, node_count=report.nodes,
                   flops_unknown_nodes=report.flops_unknown_nodes,
                   bytes_unknown_nodes=report.bytes_unknown_nodes,
                   nodes=tuple(NodeCost.from_proto(n) for n in report.node_costs))


@dataclasses.dataclass(frozen=True)
class OutputComparison:
    """One output compared by verification (proto/optimizer.proto OutputComparison)."""

    name: str
    max_abs_error: float
    # max |optimized - original| / max |original| (0 when both are all zero).
    max_rel_error: float
    passed: bool
    # Why the output could not be compared (dtype or shape differs); "" otherwise.
    problem: str

    @classmethod
    def from_proto(cls, c: optimizer_pb2.OutputComparison) -> "OutputComparison":
        return cls(name=c.name, max_abs_error=c.max_abs_error, max_rel_error=c.max_rel_error,
                   passed=c.passed, problem=c.problem)


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    """What verification on request found (proto/optimizer.proto VerifyReport).

    A failed verification never gets here: the call raises GraphoptError with code
    FAILED_PRECONDITION naming the outputs over tolerance.
    """

    passed: bool
    rtol: float
    atol: float
    outputs: Tuple[OutputComparison, ...]
    # The inputs the server generated (the others were given) and the seed it used.
    generated_inputs: Tuple[str, ...]
    seed: int
    original_run_us: int
    optimized_run_us: int

    @classmethod
    def from_proto(cls, r: optimizer_pb2.VerifyReport) -> "VerifyReport":
        return cls(passed=r.passed, rtol=r.rtol, atol=r.atol,
                   outputs=tuple(OutputComparison.from_proto(c) for c in r.outputs),
                   generated_inputs=tuple(r.generated_inputs), seed=r.seed,
                   original_run_us=r.original_run_us, optimized_run_us=r.optimized_run_us)


@dataclasses.dataclass(frozen=True)
class UploadStats:
    """The blob upload that preceded an Optimize call (upload_weights)."""

    # Distinct blobs the sent model refers to, and their total size.
    blobs: int
    blob_bytes: int
    # Those the server did not hold yet and that were uploaded (the others were skipped).
    uploaded_blobs: int
    uploaded_bytes: int


@dataclasses.dataclass
class OptimizeResult:
    """The answer of Client.optimize().

    Attributes:
      model: the optimized model, serialized: an onnx.ModelProto when `format` is "onnx" (with
        every weight in place, also those that travelled as blobs), a graphopt.v1.Graph when it
        is "graph".
      format: "onnx" or "graph": the input's format unless result_format asked otherwise.
      reports: one PassReport per pass run, in order.
      total_time_us: the server's time for the whole request.
      graph: the optimized graphopt.v1.Graph when `format` is "graph", else None.
      upload: what was uploaded before the call, None when weights travelled inline.
      cost: the estimated cost when cost_estimate asked for it, else None.
      cache: "hit" (answered from the server's result cache), "miss" (made now and cached) or
        "not_used" (no_cache, or a server without a cache).
      verification: the VerifyReport when verify=True, else None.
    """

    model: bytes
    format: str
    reports: List[PassReport]
    total_time_us: int
    graph: Optional[graph_pb2.Graph] = None
    upload: Optional[UploadStats] = None
    cost: Optional[CostReport] = None
    cache: str = "not_used"
    verification: Optional[VerifyReport] = None

    @property
    def total_time_ms(self) -> float:
        return self.total_time_us / 1000.0

    @property
    def nodes_before(self) -> Optional[int]:
        """Node count before the first pass (None when no pass ran)."""
        return self.reports[0].nodes_before if self.reports else None

    @property
    def nodes_after(self) -> Optional[int]:
        """Node count after the last pass (None when no pass ran)."""
        return self.reports[-1].nodes_after if self.reports else None

    def onnx_model(self):
        """The result parsed into an onnx.ModelProto (needs the onnx package)."""
        if self.format != "onnx":
            raise ValueError("the result is a graphopt Graph, not an ONNX model "
                             "(ask for result_format='onnx')")
        import onnx  # pylint: disable=import-outside-toplevel

        return onnx.load_model_from_string(self.model)


class Client:
    """A connection to a graphopt server (graphopt.v1.GraphOptimizer over gRPC).

    The underlying channel connects lazily and is safe to share between threads. Use the client
    as a context manager, or call close(), to release it.

        with graphopt_client.Client("graphopt.example.com:50051", tls_ca="ca.pem") as client:
            result = client.optimize(onnx_bytes, opt_level=1)   # token from GRAPHOPT_TOKEN
    """

    def __init__(self, address: str = DEFAULT_ADDRESS, timeout: Optional[float] = DEFAULT_TIMEOUT_S,
                 *, token: Optional[str] = None, tls_ca: Optional[str] = None,
                 tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
                 tls_server_name: Optional[str] = None, tenant: Optional[str] = None,
                 max_message_bytes: int = MAX_MESSAGE_BYTES,
                 credentials: Optional[grpc.ChannelCredentials] = None,
                 channel_options: Sequence[Tuple[str, Any]] = ()):
        """
        Args:
          address: host:port of the server (any gRPC target, e.g. "unix:/path").
          timeout: deadline of each RPC in seconds; None for no deadline.
          token: the bearer token the server knows this client by ("gopt_..." from `graphopt
            token new`), sent as "authorization: Bearer <token>" with every call. None takes
            the GRAPHOPT_TOKEN environment variable (no token when it is unset); "" sends none.
          tls_ca: path of the PEM CA certificate the server's certificate must chain to; given,
            the channel is TLS, otherwise plain text.
          tls_cert, tls_key: paths of this client's PEM certificate and key, for servers that
            ask for one (both or neither; need tls_ca).
          tls_server_name: the name the server's certificate must carry (default: the host of
            `address`); needs tls_ca.
          tenant: the tenant to act for, sent as "graphopt-tenant" metadata; only an admin token
            may name another tenant than its own. None sends none.
          max_message_bytes: the largest message the client sends or receives.
          credentials: ready-made channel credentials instead of tls_ca/tls_cert/tls_key.
          channel_options: further gRPC channel arguments, appended to the defaults.

        Raises:
          ValueError: a token that is not a graphopt token (not repeated in the message), or
            contradicting TLS arguments.
          OSError: a TLS file that cannot be read.
        """
        self.address = address
        self.timeout = timeout
        if token is None:
            token = os.environ.get(TOKEN_ENV_VAR, "")
        self._metadata = _call_metadata(token.strip(), tenant)
        options = [
            ("grpc.max_send_message_length", max_message_bytes),
            ("grpc.max_receive_message_length", max_message_bytes),
        ] + list(channel_options)
        tls = _tls_credentials(tls_ca, tls_cert, tls_key, tls_server_name)
        if tls is not None:
            if credentials is not None:
                raise ValueError("give either credentials or tls_ca/tls_cert/tls_key, not both")
            credentials = tls
            if tls_server_name:
                options.append(("grpc.ssl_target_name_override", tls_server_name))
        if credentials is None:
            if self._metadata and token and not _is_loopback(address):
                _log.warning("the token goes to %s in plain text (no tls_ca); anyone on the path "
                             "can read and reuse it", address)
            self._channel = grpc.insecure_channel(address, options=options)
        else:
            self._channel = grpc.secure_channel(address, credentials, options=options)
        self._stub = optimizer_pb2_grpc.GraphOptimizerStub(self._channel)
        self._coordinator = coordinator_pb2_grpc.CoordinatorStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"graphopt_client.Client({self.address!r}, timeout={self.timeout!r})"

    # --- RPCs -----------------------------------------------------------------------------------

    def optimize(self, model: Model, passes: Optional[Passes] = None,
                 opt_level: Optional[int] = None, *, verify_each_pass: bool = False,
                 strip_value_info: bool = False, dim_bindings: Optional[Mapping[str, int]] = None,
                 result_format: Optional[Union[str, int]] = None,
                 upload_weights: Optional[bool] = None,
                 cost_estimate: Optional[str] = None,
                 verify: bool = False, rtol: Optional[float] = None,
                 atol: Optional[float] = None, verify_inputs: Optional[Mapping[str, Any]] = None,
                 verify_seed: int = 0, no_cache: bool = False,
                 timeout: Optional[float] = None,
                 progress: Optional[Callable[[int, int], None]] = None) -> OptimizeResult:
        """Runs a pass pipeline over `model` on the server.

        Args:
          model: a serialized onnx.ModelProto (bytes), an onnx.ModelProto, or a
            graphopt.v1.Graph (graphopt_client.graph_pb2.Graph). Not modified.
          passes: the passes to run, in order: a list of names, of (name, {option: value})
            pairs or of PassSpec messages, a {name: {option: value}} mapping, or one
            comma-separated string. The server adds passes that a listed pass requires.
          opt_level: an optimization level instead of passes (0 runs nothing). With neither,
            the server runs level 2.
          verify_each_pass: run the verifier after every pass that changed the graph.
          strip_value_info: leave the types/shapes of intermediate values out of the result.
          dim_bindings: values for symbolic dims, e.g. {"batch": 8}.
          result_format: "onnx" or "graph"; None answers in the input's format.
          upload_weights: send every initializer of at least 64 KiB as a content-addressed
            blob (HasBlobs, then PutBlobs for the ones the server lacks) instead of inside the
            request; the result gets the bytes back from this client's copy. True forces it,
            False never does it, None (the default) does it for models over 64 MiB and falls
            back to sending the weights inline when the server has no blob store. ONNX input
            needs the onnx package for this.
          cost_estimate: "totals" or "per_node" to get the optimized graph's estimated flops
            and bytes moved in OptimizeResult.cost (per node as well with "per_node"); None
            (the default) does not compute it.
          verify: have the server run the original and the optimized model on the same inputs
            and compare every output (OptimizeResult.verification); an output fails when
            max |optimized - original| > atol + rtol * max |original|, and then the call raises
            GraphoptError FAILED_PRECONDITION naming it. Runs on every call, also when the
            result comes from the cache.
          rtol, atol: verify's tolerances; None is the server's default (1e-4, 1e-6).
          verify_inputs: {input name: numpy array or graph_pb2.Tensor} to verify on; the other
            inputs are seeded random values (symbolic dims need dim_bindings).
          verify_seed: the seed of the generated inputs.
          no_cache: neither use nor fill the server's result cache.
          timeout: deadline of each RPC in seconds; defaults to the client's.
          progress: progress(sent_bytes, bytes_to_send) while weights upload as blobs.

        Returns:
          an OptimizeResult with the optimized model, the pass reports and the time taken.

        Raises:
          GraphoptError: the server refused the request (e.g. INVALID_ARGUMENT for a malformed
            model, NOT_FOUND for an unknown pass) or could not be reached (UNAVAILABLE,
            DEADLINE_EXCEEDED); see the `code` and `message` attributes.
          TypeError, ValueError: an argument of the wrong type or value.
        """
        model_input = _ModelInput.of(model)
        request = optimizer_pb2.OptimizeRequest(
            pipeline=_pipeline(passes, opt_level),
            options=optimizer_pb2.OptimizeOptions(verify_each_pass=verify_each_pass,
                                                  strip_value_info=strip_value_info,
                                                  cost_estimate=_cost_estimate(cost_estimate),
                                                  no_cache=bool(no_cache)),
            dim_bindings=_dim_bindings(dim_bindings),
            result_format=_result_format(result_format))
        if verify:
            request.options.verify.CopyFrom(
                _verify_options(rtol, atol, verify_inputs, verify_seed))
        elif rtol is not None or atol is not None or verify_inputs or verify_seed:
            raise ValueError("rtol, atol, verify_inputs and verify_seed need verify=True")
        expected_format = request.result_format or model_input.format

        if upload_weights is None:
            upload = model_input.size() > AUTO_UPLOAD_MODEL_BYTES and model_input.can_externalize()
        else:
            upload = bool(upload_weights)

        if upload:
            light, blobs = model_input.externalize()
            try:
                stats = self.upload_blobs(blobs.items(), timeout=timeout, progress=progress)
            except GraphoptError as error:
                if upload_weights is not None or error.code != "UNIMPLEMENTED":
                    raise
                _log.info("server %s has no blob store (%s); sending the weights inline",
                          self.address, error.message)
                upload = False
        if upload:
            light.put_into(request)
            response = self._optimize_with_blobs(request, blobs, timeout)
        else:
            blobs, stats = {}, None
            model_input.put_into(request)
            response = self._call("Optimize", self._stub.Optimize, request, timeout)
        return _result(response, expected_format, blobs, stats)

    def optimize_file(self, path: str, output: Optional[str] = None,
                      passes: Optional[Passes] = None, opt_level: Optional[int] = None, *,
                      external_data: Optional[bool] = None,
                      progress: Union[bool, Callable[[int, int], None]] = True,
                      **options) -> OptimizeResult:
        """Optimizes the ONNX model file at `path`, reading its external data files (weights
        beside the model, as large models are saved; see external_data.load_onnx for which
        locations are accepted), with every weight sent ahead as a content-addressed blob (a
        second call with the same weights sends none), and writes the result to `output`
        when given.

        Args:
          path: an .onnx file.
          output: where to write the optimized model; None writes nothing.
          passes, opt_level, **options: as for optimize() (not model, upload_weights,
            result_format).
          external_data: write `output`'s weights to OUTPUT.data beside it (ONNX external
            data). None does so when the input had external data.
          progress: True prints the upload's progress to stderr; a callable gets
            (sent_bytes, bytes_to_send); False reports nothing.

        Raises:
          ValueError: an external data location outside the model's folder, or a range past
            its file's end; FileNotFoundError: a missing data file; GraphoptError as optimize.
        """
        import onnx  # pylint: disable=import-outside-toplevel

        from . import external_data as external_lib  # pylint: disable=import-outside-toplevel

        model = external_lib.load_onnx(path)
        had_external = external_data
        if had_external is None:
            had_external = external_lib.has_external_files(
                onnx.load(path, load_external_data=False))
        if progress is True:
            progress = _StderrProgress(f"uploading weights of {os.path.basename(path)}")
        result = self.optimize(model, passes, opt_level, upload_weights=True,
                               result_format="onnx", progress=progress or None, **options)
        if isinstance(progress, _StderrProgress):
            progress.finish()
        if output is not None:
            optimized = result.onnx_model()
            if had_external:
                onnx.save_model(optimized, output, save_as_external_data=True,
                                all_tensors_to_one_file=True,
                                location=os.path.basename(output) + ".data", size_threshold=1024)
            else:
                with open(output, "wb") as f:
                    f.write(result.model)
        return result

    def grad(self, model: Model, wrt: Union[str, Sequence[str]], *,
             loss: Optional[Union[str, Sequence[str]]] = None,
             outputs: Optional[Union[str, Sequence[str]]] = None,
             stop_gradient: Optional[Union[str, Sequence[str]]] = None,
             opt_level: int = 2, suffix: str = "_grad", verify_each_pass: bool = False,
             dim_bindings: Optional[Mapping[str, int]] = None,
             result_format: Optional[Union[str, int]] = None,
             upload_weights: Optional[bool] = None, cost_estimate: Optional[str] = None,
             timeout: Optional[float] = None) -> OptimizeResult:
        """Differentiates `model` on the server, as `graphopt grad` does: the gradient pass,
        then the passes of `opt_level` on its result (a second Optimize call, so the level's
        pass order is the server's).

        Args:
          model: as for optimize().
          wrt: the values to differentiate with respect to (names, or one comma-separated
            string); "params" stands for every floating-point initializer and "inputs" for
            every floating-point graph input that is not an initializer. Their gradients become
            graph outputs '<name><suffix>'.
          loss: values whose element sum is differentiated (seeded with ones).
          outputs: values whose gradients the caller gives, as new graph inputs
            '<name><suffix>' (vector-Jacobian products). With neither loss nor outputs, every
            graph output is seeded as with outputs.
          stop_gradient: values treated as constants.
          opt_level: the level whose passes then optimize the differentiated graph (0: none).
          suffix: name suffix of the gradients and seed inputs (another one for a second
            differentiation of a differentiated model).
          verify_each_pass, dim_bindings, result_format, upload_weights, cost_estimate,
            timeout: as for optimize() (cost_estimate applies to the final graph).

        Returns:
          an OptimizeResult of the differentiated, optimized model, whose reports hold both
          calls' passes.
        """
        model_input = _ModelInput.of(model)
        targets = []
        for name in _name_list(wrt, "wrt"):
            for target in (_differentiable_values(model_input, name)
                           if name in ("params", "inputs") else [name]):
                if target not in targets:
                    targets.append(target)
        if not targets:
            raise ValueError(f"wrt={wrt!r} names no floating-point value of the model")
        options = {"wrt": ";".join(targets), "suffix": suffix}
        for key, names in (("loss", loss), ("outputs", outputs),
                           ("stop_gradient", stop_gradient)):
            if names:
                options[key] = ";".join(_name_list(names, key))
        first = self.optimize(model, passes=[("gradient", options)],
                              verify_each_pass=verify_each_pass, dim_bindings=dim_bindings,
                              result_format="graph", upload_weights=upload_weights,
                              timeout=timeout)
        if result_format is None:
            result_format = "onnx" if model_input.format == optimizer_pb2.MODEL_FORMAT_ONNX \
                else "graph"
        second = self.optimize(first.graph, opt_level=opt_level,
                               verify_each_pass=verify_each_pass, dim_bindings=dim_bindings,
                               result_format=result_format, upload_weights=upload_weights,
                               cost_estimate=cost_estimate, timeout=timeout)
        return dataclasses.replace(second, reports=first.reports + second.reports,
                                   total_time_us=first.total_time_us + second.total_time_us)

    def list_passes(self, *, timeout: Optional[float] = None) -> List[optimizer_pb2.PassInfo]:
        """The passes the server knows (PassInfo: name, description, requires, provides,
        options, min_opt_level)."""
        response = self._call("ListPasses", self._stub.ListPasses,
                              optimizer_pb2.ListPassesRequest(), timeout)
        return list(response.passes)

    def list_ops(self, domain: str = "", name: str = "", *,
                 timeout: Optional[float] = None) -> List[op_pb2.OpDescriptor]:
        """The op descriptors the server knows, optionally only those of one domain and/or
        one name (an empty list when there is none)."""
        response = self._call("ListOps", self._stub.ListOps,
                              optimizer_pb2.ListOpsRequest(domain=domain, name=name), timeout)
        return list(response.ops)

    def has_blobs(self, digests: Iterable[str], *,
                  timeout: Optional[float] = None) -> optimizer_pb2.HasBlobsResponse:
        """Asks which of these "sha256:<hex>" digests the server's blob store lacks."""
        return self._call("HasBlobs", self._stub.HasBlobs,
                          optimizer_pb2.HasBlobsRequest(digests=list(digests)), timeout)

    def put_blobs(self, blobs: Iterable[Tuple[str, bytes]], *,
                  chunk_bytes: int = weights.CHUNK_BYTES,
                  timeout: Optional[float] = None,
                  on_chunk: Optional[Callable[[int], None]] = None
                  ) -> optimizer_pb2.PutBlobsResponse:
        """Uploads (digest, bytes) pairs in one PutBlobs stream of chunks of `chunk_bytes`;
        on_chunk(bytes) is called as each chunk goes out."""
        chunks = weights.iter_blob_chunks(blobs, chunk_bytes)
        if on_chunk is not None:
            chunks = _observed(chunks, on_chunk)
        return self._call("PutBlobs", self._stub.PutBlobs, chunks, timeout)

    def upload_blobs(self, blobs: Iterable[Tuple[str, bytes]], *,
                     timeout: Optional[float] = None,
                     progress: Optional[Callable[[int, int], None]] = None) -> UploadStats:
        """Makes sure the server holds every blob: HasBlobs, then PutBlobs of the missing ones.
        progress(sent_bytes, bytes_to_send), when given, is called as the bytes go out.

        Raises:
          GraphoptError: a call failed, or the server did not confirm every uploaded blob.
        """
        blobs = dict(blobs)
        if not blobs:
            return UploadStats(0, 0, 0, 0)
        digests = list(blobs)
        missing = []
        for start in range(0, len(digests), _MAX_BLOBS_PER_CALL):
            missing += self.has_blobs(digests[start:start + _MAX_BLOBS_PER_CALL],
                                      timeout=timeout).missing
        missing = list(dict.fromkeys(missing))
        unknown = [digest for digest in missing if digest not in blobs]
        if unknown:
            raise GraphoptError("INTERNAL", f"HasBlobs answered digests that were not asked "
                                f"for: {', '.join(unknown[:3])}", rpc="HasBlobs",
                                address=self.address)
        uploaded_bytes = sum(len(blobs[digest]) for digest in missing)
        if missing:
            _log.debug("uploading %d of %d blobs (%d bytes) to %s", len(missing), len(blobs),
                       uploaded_bytes, self.address)
            stored = set()
            sent = [0]

            def on_chunk(size):
                sent[0] += size
                progress(sent[0], uploaded_bytes)

            for start in range(0, len(missing), _MAX_BLOBS_PER_CALL):
                batch = missing[start:start + _MAX_BLOBS_PER_CALL]
                response = self.put_blobs(((digest, blobs[digest]) for digest in batch),
                                          timeout=timeout,
                                          on_chunk=on_chunk if progress is not None else None)
                stored.update(response.stored)
            not_stored = set(missing) - stored
            if not_stored:
                raise GraphoptError(
                    "INTERNAL", f"PutBlobs did not confirm {len(not_stored)} of {len(missing)} "
                    f"uploaded blobs, e.g. {sorted(not_stored)[0]}", rpc="PutBlobs",
                    address=self.address)
        return UploadStats(blobs=len(blobs), blob_bytes=sum(len(data) for data in blobs.values()),
                           uploaded_blobs=len(missing), uploaded_bytes=uploaded_bytes)

    # --- internals ------------------------------------------------------------------------------

    def _optimize_with_blobs(self, request, blobs: Mapping[str, bytes],
                             timeout: Optional[float]) -> optimizer_pb2.OptimizeResponse:
        """Optimize for a model that refers to blobs. The server's store may drop a blob between
        HasBlobs and Optimize (it is bounded); then the upload and the call are tried once
        more, if the server indeed lacks one of the blobs now."""
        try:
            return self._call("Optimize", self._stub.Optimize, request, timeout)
        except GraphoptError as error:
            lost_blob = (error.code in ("NOT_FOUND", "FAILED_PRECONDITION")
                         and "sha256:" in error.message)
            if not lost_blob:
                raise
            try:
                missing = self.has_blobs(blobs.keys(), timeout=timeout).missing
            except GraphoptError:
                raise error from None
            if not missing:
                raise
            _log.info("server %s lost blobs before Optimize (%s); uploading again", self.address,
                      error.message)
        self.upload_blobs(blobs.items(), timeout=timeout)
        return self._call("Optimize", self._stub.Optimize, request, timeout)

    # --- running plans on workers (graphopt.v1.Coordinator) --------------------------------------

    def run(self, graph: Optional[graph_pb2.Graph],
            inputs: Optional[Mapping[str, "session_lib.TensorLike"]] = None, *,
            session: str = "", request_id: str = "", profile: bool = False,
            timeout: Optional[float] = None) -> coordinator_pb2.RunResponse:
        """Runs `graph` (a graphopt Graph, e.g. OptimizeResult.graph) on a worker with `inputs`
        ({name: numpy array or Tensor}); returns the RunResponse (outputs as NamedTensors:
        session.from_tensor converts them). With `session`, the graph is a stateful plan run
        as one step of that training session (graph None: a later step); see Session."""
        request = coordinator_pb2.RunRequest(
            inputs=session_lib.named_tensors(inputs), profile=profile, request_id=request_id,
            session=session)
        if graph is not None:
            request.graph.CopyFrom(graph)
        return self._call("Run", self._coordinator.Run, request, timeout)

    def session(self, name: str, graph: graph_pb2.Graph) -> "session_lib.Session":
        """A training session named `name` (private to this client's tenant) of the stateful
        plan `graph`; nothing is sent until its first step()."""
        return session_lib.Session(self, name, graph)

    def fetch_state(self, session: str, names: Optional[Iterable[str]] = None, *,
                    timeout: Optional[float] = None
                    ) -> coordinator_pb2.CoordinatorFetchStateResponse:
        """The state tensors of a training session (all, or those named) and its version."""
        request = coordinator_pb2.CoordinatorFetchStateRequest(session=session,
                                                                names=list(names or []))
        return self._call("FetchState", self._coordinator.FetchState, request, timeout)

    def end_session(self, session: str, *, timeout: Optional[float] = None) -> bool:
        """Ends a training session; False when the server had no such session."""
        request = coordinator_pb2.EndSessionRequest(session=session)
        return self._call("EndSession", self._coordinator.EndSession, request, timeout).ended

    def _call(self, rpc: str, method, request, timeout: Optional[float]):
        """Calls one RPC with the deadline and the credential; gRPC failures become
        GraphoptError."""
        try:
            return method(request, timeout=self.timeout if timeout is None else timeout,
                          metadata=self._metadata)
        except grpc.RpcError as error:
            raise GraphoptError.from_rpc_error(error, rpc=rpc, address=self.address) from None


def optimize(model: Model, passes: Optional[Passes] = None, opt_level: Optional[int] = None, *,
             address: str = DEFAULT_ADDRESS, timeout: Optional[float] = DEFAULT_TIMEOUT_S,
             token: Optional[str] = None, tls_ca: Optional[str] = None,
             tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
             tls_server_name: Optional[str] = None, tenant: Optional[str] = None,
             **kwargs) -> OptimizeResult:
    """One-shot Client(address, timeout, token=..., tls_*=..., tenant=...).optimize(model,
    passes, opt_level, **kwargs)."""
    with Client(address, timeout, token=token, tls_ca=tls_ca, tls_cert=tls_cert,
                tls_key=tls_key, tls_server_name=tls_server_name, tenant=tenant) as client:
        return client.optimize(model, passes, opt_level, **kwargs)


def grad(model: Model, wrt: Union[str, Sequence[str]], *, address: str = DEFAULT_ADDRESS,
         timeout: Optional[float] = DEFAULT_TIMEOUT_S, token: Optional[str] = None,
         tls_ca: Optional[str] = None, tls_cert: Optional[str] = None,
         tls_key: Optional[str] = None, tls_server_name: Optional[str] = None,
         tenant: Optional[str] = None, **kwargs) -> OptimizeResult:
    """One-shot Client(address, timeout, token=..., tls_*=..., tenant=...).grad(model, wrt,
    **kwargs)."""
    with Client(address, timeout, token=token, tls_ca=tls_ca, tls_cert=tls_cert,
                tls_key=tls_key, tls_server_name=tls_server_name, tenant=tenant) as client:
        return client.grad(model, wrt, **kwargs)


# --- credentials --------------------------------------------------------------------------------


def _call_metadata(token: str, tenant: Optional[str]) -> Tuple[Tuple[str, str], ...]:
    """The metadata of every call. gRPC refuses call credentials on plain-text channels, so the
    token travels as plain metadata on both kinds."""
    metadata = []
    if token:
        if not _TOKEN_RE.fullmatch(token):
            raise ValueError("token (or GRAPHOPT_TOKEN) is not a graphopt token: those are "
                             "'gopt_' followed by 43 characters of [A-Za-z0-9_-] (`graphopt "
                             "token new` makes one)")
        metadata.append((_AUTHORIZATION_KEY, f"Bearer {token}"))
    if tenant:
        metadata.append((_TENANT_KEY, tenant))
    return tuple(metadata)


def _tls_credentials(tls_ca: Optional[str], tls_cert: Optional[str], tls_key: Optional[str],
                     tls_server_name: Optional[str]) -> Optional[grpc.ChannelCredentials]:
    """TLS channel credentials from PEM files, None without tls_ca."""
    if not tls_ca:
        for name, value in (("tls_cert", tls_cert), ("tls_key", tls_key),
                            ("tls_server_name", tls_server_name)):
            if value:
                raise ValueError(f"{name} needs tls_ca (the CA that signed the server's "
                                 "certificate)")
        return None
    if bool(tls_cert) != bool(tls_key):
        raise ValueError("tls_cert and tls_key go together: give both or neither")

    def read(path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    return grpc.ssl_channel_credentials(
        root_certificates=read(tls_ca),
        private_key=read(tls_key) if tls_key else None,
        certificate_chain=read(tls_cert) if tls_cert else None)


def _is_loopback(address: str) -> bool:
    """Whether a gRPC target is this machine (localhost, 127.0.0.0/8, ::1, a unix socket)."""
    if address.startswith(("unix:", "unix-abstract:")):
        return True
    host = address
    for prefix in ("ipv4:", "ipv6:", "dns:///", "dns:"):
        if host.startswith(prefix):
            host = host[len(prefix):]
            break
    if host.startswith("["):
        host = host[1:host.find("]")] if "]" in host else host[1:]
    elif ":" in host:
        host = host.rsplit(":", 1)[0]
    return host in ("localhost", "::1") or host.startswith("127.")


# --- request building ---------------------------------------------------------------------------


class _ModelInput:
    """The model given to optimize(), whichever form it came in."""

    def __init__(self, format_: int, onnx_bytes: Optional[bytes] = None, onnx_proto=None,
                 graph: Optional[graph_pb2.Graph] = None):
        self.format = format_
        self._onnx_bytes = onnx_bytes
        self._onnx_proto = onnx_proto
        self._graph = graph

    @classmethod
    def of(cls, model: Model) -> "_ModelInput":
        if isinstance(model, (bytes, bytearray, memoryview)):
            return cls(optimizer_pb2.MODEL_FORMAT_ONNX, onnx_bytes=bytes(model))
        full_name = getattr(getattr(model, "DESCRIPTOR", None), "full_name", None)
        if full_name == "onnx.ModelProto":
            return cls(optimizer_pb2.MODEL_FORMAT_ONNX, onnx_proto=model)
        if isinstance(model, graph_pb2.Graph):
            return cls(optimizer_pb2.MODEL_FORMAT_GRAPH, graph=model)
        if full_name == "graphopt.v1.Graph":
            # The same message from another copy of the generated code.
            return cls(optimizer_pb2.MODEL_FORMAT_GRAPH,
                       graph=graph_pb2.Graph.FromString(model.SerializeToString()))
        raise TypeError("model must be serialized ONNX bytes, an onnx.ModelProto or a "
                        f"graphopt.v1.Graph, not {type(model).__name__}")

    def size(self) -> int:
        if self._onnx_bytes is not None:
            return len(self._onnx_bytes)
        if self._onnx_proto is not None:
            return self._onnx_proto.ByteSize()
        return self._graph.ByteSize()

    def can_externalize(self) -> bool:
        """Whether externalize() can work here (ONNX bytes need the onnx package)."""
        if self._onnx_bytes is None:
            return True
        try:
            importlib.import_module("onnx")
        except ImportError:
            return False
        return True

    def put_into(self, request: optimizer_pb2.OptimizeRequest) -> None:
        if self._onnx_bytes is not None:
            request.onnx_model = self._onnx_bytes
        elif self._onnx_proto is not None:
            request.onnx_model = self._onnx_proto.SerializeToString()
        else:
            request.graph.CopyFrom(self._graph)

    def externalize(self) -> Tuple["_ModelInput", Dict[str, bytes]]:
        """A copy of the model with its large initializers turned into blob references, and
        the blobs. The caller's model is not touched."""
        if self._graph is not None:
            graph = graph_pb2.Graph()
            graph.CopyFrom(self._graph)
            blobs = weights.externalize_graph_initializers(graph)
            return _ModelInput(self.format, graph=graph), blobs
        if self._onnx_proto is not None:
            proto = type(self._onnx_proto)()
            proto.CopyFrom(self._onnx_proto)
        else:
            proto = _parse_onnx(self._onnx_bytes)
        blobs = weights.externalize_onnx_initializers(proto)
        return _ModelInput(self.format, onnx_proto=proto), blobs


def _observed(chunks, on_chunk):
    for chunk in chunks:
        on_chunk(len(chunk.data))
        yield chunk


class _StderrProgress:
    """A one-line progress report on stderr (redrawn in place on a terminal)."""

    def __init__(self, label: str):
        self.label = label
        self.tty = sys.stderr.isatty()
        self.last = -1

    def __call__(self, sent: int, total: int) -> None:
        percent = 100 * sent // max(total, 1)
        if percent == self.last or (not self.tty and percent % 25 and sent != total):
            return
        self.last = percent
        line = f"{self.label}: {sent / 2**20:.1f} / {total / 2**20:.1f} MiB ({percent}%)"
        sys.stderr.write(("\r" + line) if self.tty else (line + "\n"))
        sys.stderr.flush()

    def finish(self) -> None:
        if self.tty and self.last >= 0:
            sys.stderr.write("\n")


def _parse_onnx(data: bytes):
    try:
        import onnx  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        raise ImportError("upload_weights=True with ONNX bytes needs the onnx package") from error
    from google.protobuf.message import DecodeError  # pylint: disable=import-outside-toplevel

    proto = onnx.ModelProto()
    try:
        proto.ParseFromString(data)
    except DecodeError as error:
        # What the server answers for an unparseable model, found before any upload.
        raise GraphoptError("INVALID_ARGUMENT",
                            f"the model is not a serialized onnx.ModelProto: {error}") from None
    return proto


def _pipeline(passes, opt_level: Optional[int]) -> optimizer_pb2.Pipeline:
    pipeline = optimizer_pb2.Pipeline()
    if passes is not None:
        if isinstance(passes, str):
            items = [name.strip() for name in passes.split(",")]
        elif isinstance(passes, Mapping):
            items = list(passes.items())
        else:
            items = list(passes)
        if not items:
            raise ValueError("passes is empty; use opt_level=0 to run no pass")
        for item in items:
            spec = pipeline.passes.add()
            if isinstance(item, optimizer_pb2.PassSpec):
                spec.CopyFrom(item)
            elif isinstance(item, str):
                spec.name = item
            elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str):
                spec.name = item[0]
                for key, value in (item[1] or {}).items():
                    spec.options[str(key)] = _option_text(value)
            else:
                raise TypeError("each pass must be a name, a (name, options) pair or a PassSpec, "
                                f"not {item!r}")
            if not spec.name:
                raise ValueError(f"empty pass name in passes={passes!r}")
    if opt_level is not None:
        if isinstance(opt_level, bool) or not isinstance(opt_level, int):
            raise TypeError(f"opt_level must be an int, not {type(opt_level).__name__}")
        pipeline.opt_level = opt_level
    return pipeline


def _name_list(names, what: str) -> List[str]:
    """Value names from a list or a comma-separated string; ',' and ';' separate the gradient
    pass's lists, so no name may hold one."""
    items = names.split(",") if isinstance(names, str) else list(names)
    result = [str(item).strip() for item in items if str(item).strip()]
    for name in result:
        if ";" in name or "," in name:
            raise ValueError(f"{what}: the gradient pass cannot name {name!r} (it holds ',' or ';')")
    return result


# Floating-point element types: ONNX's TensorProto numbers and graphopt's DataType names.
_ONNX_FLOAT_TYPES = (1, 10, 11, 16)  # FLOAT, FLOAT16, DOUBLE, BFLOAT16
_GRAPH_FLOAT_TYPES = ("DT_FLOAT32", "DT_FLOAT64", "DT_FLOAT16", "DT_BFLOAT16")


def _differentiable_values(model_input: "_ModelInput", kind: str) -> List[str]:
    """The floating-point initializers ("params") or non-initializer graph inputs ("inputs")."""
    if model_input._graph is not None:  # pylint: disable=protected-access
        graph = model_input._graph  # pylint: disable=protected-access
        floats = {graph_pb2.DataType.Value(t) for t in _GRAPH_FLOAT_TYPES}
        initializers = {t.name: t.dtype for t in graph.initializers}
        if kind == "params":
            return [n for n, dtype in initializers.items() if dtype in floats]
        return [i.name for i in graph.inputs
                if i.name not in initializers and i.type.dtype in floats]
    proto = model_input._onnx_proto  # pylint: disable=protected-access
    if proto is None:
        proto = _parse_onnx(model_input._onnx_bytes)  # pylint: disable=protected-access
    initializers = {t.name: t.data_type for t in proto.graph.initializer}
    if kind == "params":
        return [n for n, dtype in initializers.items() if dtype in _ONNX_FLOAT_TYPES]
    return [i.name for i in proto.graph.input if i.name not in initializers
            and i.type.tensor_type.elem_type in _ONNX_FLOAT_TYPES]


def _option_text(value) -> str:
    """Pass options travel as strings: bools as true/false, numbers in decimal."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise TypeError(f"a pass option value must be a str, bool, int or float, not {value!r}")


def _dim_bindings(bindings: Optional[Mapping[str, int]]) -> Dict[str, int]:
    result = {}
    for name, value in (bindings or {}).items():
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"dim_bindings[{name!r}] must be an int, not {value!r}")
        result[str(name)] = value
    return result


def _result_format(result_format: Optional[Union[str, int]]) -> int:
    if result_format is None:
        return optimizer_pb2.MODEL_FORMAT_UNSPECIFIED
    if isinstance(result_format, str):
        try:
            return _FORMATS[result_format.lower()]
        except KeyError:
            raise ValueError(
                f"result_format must be 'onnx' or 'graph', not {result_format!r}") from None
    if result_format in _FORMAT_NAMES or result_format == optimizer_pb2.MODEL_FORMAT_UNSPECIFIED:
        return int(result_format)
    raise ValueError(f"unknown result_format {result_format!r}")


_COST_ESTIMATES = {
    "totals": optimizer_pb2.COST_ESTIMATE_TOTALS,
    "per_node": optimizer_pb2.COST_ESTIMATE_PER_NODE,
}


def _cost_estimate(cost_estimate: Optional[str]) -> int:
    if cost_estimate is None:
        return optimizer_pb2.COST_ESTIMATE_NONE
    if isinstance(cost_estimate, str) and cost_estimate in _COST_ESTIMATES:
        return _COST_ESTIMATES[cost_estimate]
    raise ValueError(f"cost_estimate must be None, 'totals' or 'per_node', not {cost_estimate!r}")


# --- response handling --------------------------------------------------------------------------


_NUMPY_DTYPES = {
    "float32": graph_pb2.DT_FLOAT32, "float64": graph_pb2.DT_FLOAT64,
    "float16": graph_pb2.DT_FLOAT16, "int8": graph_pb2.DT_INT8, "uint8": graph_pb2.DT_UINT8,
    "int16": graph_pb2.DT_INT16, "uint16": graph_pb2.DT_UINT16, "int32": graph_pb2.DT_INT32,
    "int64": graph_pb2.DT_INT64, "uint32": graph_pb2.DT_UINT32, "uint64": graph_pb2.DT_UINT64,
    "bool": graph_pb2.DT_BOOL,
}


def _tensor(name: str, value: Any) -> graph_pb2.Tensor:
    """A named wire Tensor from a graph_pb2.Tensor or anything numpy.asarray takes."""
    if isinstance(value, graph_pb2.Tensor):
        tensor = graph_pb2.Tensor()
        tensor.CopyFrom(value)
        tensor.name = name
        return tensor
    import numpy  # pylint: disable=import-outside-toplevel

    array = numpy.asarray(value)
    dtype = _NUMPY_DTYPES.get(array.dtype.name)
    if dtype is None:
        raise ValueError(f"verify_inputs[{name!r}]: dtype {array.dtype} has no graphopt "
                         "counterpart; give a graph_pb2.Tensor")
    little = array.astype(array.dtype.newbyteorder("<"), copy=False)
    return graph_pb2.Tensor(name=name, dtype=dtype, dims=list(array.shape),
                            raw_data=numpy.ascontiguousarray(little).tobytes())


def _verify_options(rtol: Optional[float], atol: Optional[float],
                    inputs: Optional[Mapping[str, Any]], seed: int) -> optimizer_pb2.VerifyOptions:
    for label, value in (("rtol", rtol), ("atol", atol)):
        if value is not None and not value >= 0:
            raise ValueError(f"{label} must be >= 0, not {value!r}")
    options = optimizer_pb2.VerifyOptions(enabled=True, rtol=rtol or 0.0, atol=atol or 0.0,
                                          seed=int(seed))
    for name, value in (inputs or {}).items():
        options.inputs.append(_tensor(name, value))
    return options


_CACHE_RESULTS = {
    optimizer_pb2.CACHE_RESULT_HIT: "hit",
    optimizer_pb2.CACHE_RESULT_MISS: "miss",
}


def _result(response: optimizer_pb2.OptimizeResponse, expected_format: int,
            blobs: Mapping[str, bytes], stats: Optional[UploadStats]) -> OptimizeResult:
    """The OptimizeResult of a response, with blob-referenced weights restored."""
    reports = [PassReport.from_proto(report) for report in response.reports]
    cost = CostReport.from_proto(response.cost) if response.HasField("cost") else None
    extra = {"cache": _CACHE_RESULTS.get(response.cache, "not_used"),
             "verification": (VerifyReport.from_proto(response.verification)
                              if response.HasField("verification") else None)}
    if expected_format == optimizer_pb2.MODEL_FORMAT_ONNX:
        if not response.onnx_model:
            raise GraphoptError(
                "UNIMPLEMENTED", "the server's answer has no ONNX model (OptimizeResponse."
                "onnx_model is empty): it may not support ONNX models yet", rpc="Optimize")
        model = response.onnx_model
        if blobs:
            import onnx  # pylint: disable=import-outside-toplevel

            proto = onnx.ModelProto()
            proto.ParseFromString(model)
            if weights.reattach_onnx_initializers(proto, blobs):
                model = proto.SerializeToString()
        return OptimizeResult(model=model, format="onnx", reports=reports,
                              total_time_us=response.total_time_us, upload=stats, cost=cost,
                              **extra)
    graph = response.graph
    if blobs:
        weights.reattach_graph_tensors(graph, blobs)
    return OptimizeResult(model=graph.SerializeToString(), format="graph", reports=reports,
                          total_time_us=response.total_time_us, graph=graph, upload=stats,
                          cost=cost, **extra)
