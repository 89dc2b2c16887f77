"""Content-addressed weights: moving large tensors out of a model and back in.

A graphopt server keeps a blob store keyed by "sha256:<64 lowercase hex digits>" of a tensor's
raw bytes (proto/optimizer.proto: HasBlobs, PutBlobs). A model may then refer to a blob instead
of carrying the bytes:

- in an ONNX model, an initializer with data_location = EXTERNAL and the external_data entries
  location = "graphopt-blob:sha256:<hex>" and length = <byte count> (raw_data cleared);
- in a graphopt Graph, a Tensor with blob = "sha256:<hex>" (raw_data cleared).

The server keeps such references through optimization and never sends weights back, so the
client restores them in the result from the bytes it still holds. The functions here do both
directions in place and need no server; the onnx package is not imported (ONNX messages are
handled through their own fields and enum values).
"""

import hashlib
import re
from typing import Dict, Iterable, Iterator, Mapping, Tuple

from ._proto import optimizer_pb2
from .errors import GraphoptError

# Initializers with at least this many bytes of raw_data are sent as blobs.
BLOB_THRESHOLD_BYTES = 64 * 1024
# Size of the data in one BlobChunk message of a PutBlobs upload.
CHUNK_BYTES = 1024 * 1024
# Prefix of an ONNX external-data location that names a blob: "graphopt-blob:sha256:<hex>".
ONNX_BLOB_LOCATION_PREFIX = "graphopt-blob:"

_DIGEST_RE = re.compile(r"sha256:[0-9a-f]{64}")


def blob_digest(data: bytes) -> str:
    """The blob store's key of `data`: "sha256:" and 64 lowercase hex digits."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_blob_digest(text: str) -> bool:
    """True when `text` is a well-formed blob digest ("sha256:" + 64 lowercase hex)."""
    return _DIGEST_RE.fullmatch(text) is not None


# --- ONNX ---------------------------------------------------------------------------------------


def externalize_onnx_initializers(model,
                                  threshold: int = BLOB_THRESHOLD_BYTES) -> Dict[str, bytes]:
    """Replaces the raw_data of the large initializers of `model` with blob references.

    Every initializer of the main graph whose raw_data holds at least `threshold` bytes (and
    whose data is not already external) gets data_location = EXTERNAL and the external_data
    entries location = "graphopt-blob:sha256:<hex>" and length = <bytes>; its raw_data is
    cleared. Initializers whose elements are stored in typed fields (float_data, int64_data,
    ...) rather than raw_data are left as they are.

    Args:
      model: an onnx.ModelProto, changed in place.
      threshold: smallest raw_data size, in bytes, that becomes a blob.

    Returns:
      digest -> bytes of every blob referenced now, in the order of first reference
      (identical weights share one blob).
    """
    blobs: Dict[str, bytes] = {}
    for tensor in model.graph.initializer:
        if tensor.data_location == tensor.EXTERNAL or not tensor.HasField("raw_data"):
            continue
        data = tensor.raw_data
        if len(data) < threshold:
            continue
        digest = blob_digest(data)
        blobs.setdefault(digest, data)
        tensor.ClearField("raw_data")
        tensor.data_location = tensor.EXTERNAL
        del tensor.external_data[:]
        location = tensor.external_data.add()
        location.key = "location"
        location.value = ONNX_BLOB_LOCATION_PREFIX + digest
        length = tensor.external_data.add()
        length.key = "length"
        length.value = str(len(data))
    return blobs


def reattach_onnx_initializers(model, blobs: Mapping[str, bytes]) -> int:
    """Puts the bytes back into every tensor of `model` that refers to a blob.

    The inverse of externalize_onnx_initializers: each tensor (initializers and tensor
    attributes, in the main graph and in subgraphs) whose external-data location is
    "graphopt-blob:sha256:<hex>" gets its raw_data from `blobs` (honouring the optional offset
    and length entries) and loses data_location and external_data. Tensors with other
    external locations (files) are left alone.

    Returns:
      the number of tensors restored.

    Raises:
      GraphoptError(DATA_LOSS): a reference names a blob that is not in `blobs` (the server
        made a blob this client never had), or its offset/length do not fit the blob.
    """
    restored = 0
    for tensor in _onnx_tensors(model.graph):
        if tensor.data_location != tensor.EXTERNAL:
            continue
        entries = {entry.key: entry.value for entry in tensor.external_data}
        location = entries.get("location", "")
        if not location.startswith(ONNX_BLOB_LOCATION_PREFIX):
            continue
        digest = location[len(ONNX_BLOB_LOCATION_PREFIX):]
        data = _lookup_blob(blobs, digest, f"initializer '{tensor.name}'")
        tensor.raw_data = _blob_range(data, entries.get("offset"), entries.get("length"),
                                      digest, f"initializer '{tensor.name}'")
        tensor.ClearField("data_location")
        del tensor.external_data[:]
        restored += 1
    return restored


def _onnx_tensors(graph) -> Iterator:
    """Every TensorProto of an onnx.GraphProto: initializers and tensor attributes, recursing
    into subgraphs (If/Loop/Scan bodies)."""
    yield from graph.initializer
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            if attribute.HasField("g"):
                yield from _onnx_tensors(attribute.g)
            for subgraph in attribute.graphs:
                yield from _onnx_tensors(subgraph)


# --- graphopt Graph -----------------------------------------------------------------------------


def externalize_graph_initializers(graph,
                                   threshold: int = BLOB_THRESHOLD_BYTES) -> Dict[str, bytes]:
    """The Graph counterpart of externalize_onnx_initializers: every initializer whose raw_data
    holds at least `threshold` bytes gets blob = "sha256:<hex>" and an empty raw_data.

    Args:
      graph: a graphopt.v1.Graph, changed in place.
      threshold: smallest raw_data size, in bytes, that becomes a blob.

    Returns:
      digest -> bytes of every blob referenced now, in the order of first reference.
    """
    blobs: Dict[str, bytes] = {}
    for tensor in graph.initializers:
        if tensor.blob or len(tensor.raw_data) < threshold:
            continue
        data = tensor.raw_data
        digest = blob_digest(data)
        blobs.setdefault(digest, data)
        tensor.raw_data = b""
        tensor.blob = digest
    return blobs


def reattach_graph_tensors(graph, blobs: Mapping[str, bytes]) -> int:
    """Puts the bytes back into every Tensor of a graphopt.v1.Graph (initializers and tensor
    attributes, recursing into subgraphs) that names a blob, and clears its blob field.

    Returns:
      the number of tensors restored.

    Raises:
      GraphoptError(DATA_LOSS): a tensor names a blob that is not in `blobs`.
    """
    restored = 0
    for tensor in _graph_tensors(graph):
        if not tensor.blob:
            continue
        tensor.raw_data = _lookup_blob(blobs, tensor.blob, f"tensor '{tensor.name}'")
        tensor.blob = ""
        restored += 1
    return restored


def _graph_tensors(graph) -> Iterator:
    """Every Tensor of a graphopt.v1.Graph, recursing into graph-valued attributes."""
    yield from graph.initializers
    for node in graph.nodes:
        for attribute in node.attributes:
            kind = attribute.WhichOneof("value")
            if kind == "t":
                yield attribute.t
            elif kind == "tensors":
                yield from attribute.tensors.values
            elif kind == "g":
                yield from _graph_tensors(attribute.g)
            elif kind == "graphs":
                for subgraph in attribute.graphs.values:
                    yield from _graph_tensors(subgraph)


# --- shared -------------------------------------------------------------------------------------


def _lookup_blob(blobs: Mapping[str, bytes], digest: str, what: str) -> bytes:
    data = blobs.get(digest)
    if data is None:
        raise GraphoptError(
            "DATA_LOSS",
            f"the result's {what} refers to blob '{digest}', which this client did not upload: "
            "its bytes cannot be restored")
    return data


def _blob_range(data: bytes, offset_text, length_text, digest: str, what: str) -> bytes:
    """The bytes an ONNX external-data reference selects: [offset, offset + length) of the blob,
    the whole blob when neither entry is given."""
    try:
        offset = int(offset_text) if offset_text is not None else 0
        length = int(length_text) if length_text is not None else len(data) - offset
    except ValueError:
        raise GraphoptError(
            "DATA_LOSS", f"the result's {what} has a non-numeric offset or length "
            f"('{offset_text}', '{length_text}') for blob '{digest}'") from None
    if offset < 0 or length < 0 or offset + length > len(data):
        raise GraphoptError(
            "DATA_LOSS", f"the result's {what} selects bytes [{offset}, {offset + length}) of "
            f"blob '{digest}', which has {len(data)} bytes")
    if offset == 0 and length == len(data):
        return data
    return data[offset:offset + length]


def iter_blob_chunks(blobs: Iterable[Tuple[str, bytes]],
                     chunk_bytes: int = CHUNK_BYTES) -> Iterator[optimizer_pb2.BlobChunk]:
    """The PutBlobs request stream for `blobs` ((digest, bytes) pairs), one after the other.

    Each blob starts with a chunk carrying its digest, its total_size and its first (at most)
    `chunk_bytes` bytes; the rest follows in data-only chunks of at most `chunk_bytes` bytes.
    An empty blob is a single chunk with no data.
    """
    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, got {chunk_bytes}")
    for digest, data in blobs:
        view = memoryview(data)
        total = len(view)
        yield optimizer_pb2.BlobChunk(digest=digest, total_size=total,
                                      data=bytes(view[:chunk_bytes]))
        for offset in range(chunk_bytes, total, chunk_bytes):
            yield optimizer_pb2.BlobChunk(data=bytes(view[offset:offset + chunk_bytes]))
