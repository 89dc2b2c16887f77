"""ONNX models whose weights live in external data files beside them (models past protobuf's
2 GB limit are saved this way): reading them safely, for Client.optimize_file.

Locations are taken relative to the model's folder only, as graphopt's CLI and server do: an
absolute location, one with a '..' component, one that resolves (symlinks followed) outside the
folder, or an offset/length past the file's end raises ValueError naming the tensor. Each file
is memory-mapped once.
"""
import mmap
import os
from typing import Iterator, Tuple

BLOB_LOCATION_PREFIX = "graphopt-blob:"


def _tensors(model) -> Iterator[Tuple[object, str]]:
    """Every tensor of the model (initializers and tensor attributes, subgraphs and local
    functions included) with how errors name it; no recursion."""
    graphs = [model.graph]

    def nodes(node_list):
        for n in node_list:
            for a in n.attribute:
                what = f"attribute '{a.name}' of node '{n.name}' ({n.op_type})"
                if a.HasField("t"):
                    yield a.t, what
                for t in a.tensors:
                    yield t, what
                if a.HasField("g"):
                    graphs.append(a.g)
                graphs.extend(a.graphs)

    for f in model.functions:
        yield from nodes(f.node)
    while graphs:
        g = graphs.pop()
        for t in g.initializer:
            yield t, f"initializer '{t.name}'"
        yield from nodes(g.node)


def has_external_files(model) -> bool:
    """Whether any tensor keeps its bytes in a file (not a graphopt blob)."""
    import onnx  # pylint: disable=import-outside-toplevel

    for t, _ in _tensors(model):
        if t.data_location == onnx.TensorProto.EXTERNAL:
            location = next((e.value for e in t.external_data if e.key == "location"), "")
            if not location.startswith(BLOB_LOCATION_PREFIX):
                return True
    return False


def load_onnx(path: str):
    """Reads the ONNX model at `path` with the bytes of its external data files, into an
    onnx.ModelProto whose tensors hold their data inline (raw_data)."""
    import onnx  # pylint: disable=import-outside-toplevel

    model = onnx.load(path, load_external_data=False)
    # Relative to the folder the model file really is in (a symlink reads its target's data).
    folder = os.path.dirname(os.path.realpath(path))
    real_folder = os.path.realpath(folder)
    maps = {}
    try:
        for tensor, what in _tensors(model):
            if tensor.data_location != onnx.TensorProto.EXTERNAL:
                continue
            entries = {e.key: e.value for e in tensor.external_data}
            location = entries.get("location", "")
            if location.startswith(BLOB_LOCATION_PREFIX):
                continue
            data = _map(maps, folder, real_folder, location, what)
            offset = _number(entries, "offset", 0, what)
            length = _number(entries, "length", len(data) - offset, what)
            if offset > len(data) or length > len(data) - offset:
                raise ValueError(f"{what}: external data range [{offset}, {offset + length}) is "
                                 f"past the end of '{location}' ({len(data)} bytes)")
            tensor.raw_data = data[offset:offset + length]
            del tensor.external_data[:]
            tensor.ClearField("data_location")
    finally:
        for m in maps.values():
            m.close()
    return model


def _number(entries, key: str, default: int, what: str) -> int:
    if key not in entries:
        return default
    text = entries[key]
    if not text.isdigit():
        raise ValueError(f"{what}: external data {key} '{text}' is not a non-negative integer")
    return int(text)


def _map(maps, folder: str, real_folder: str, location: str, what: str):
    def refuse(why):
        return ValueError(f"{what}: external data location '{location}' {why}")

    if not location:
        raise ValueError(f"{what} is marked as external data but names no location")
    if "\0" in location:
        raise refuse("holds a NUL character")
    if location.startswith("/"):
        raise refuse("is absolute; locations are relative to the model's folder")
    if ".." in location.replace("\\", "/").split("/"):
        raise refuse("climbs out of the model's folder ('..')")
    real = os.path.realpath(os.path.join(folder, location))
    if not real.startswith(real_folder.rstrip("/") + "/"):
        raise refuse(f"resolves to '{real}', outside the model's folder")
    if real in maps:
        return maps[real]
    if not os.path.isfile(real):
        raise FileNotFoundError(f"{what}: external data file '{os.path.join(folder, location)}' "
                                "is missing or not a regular file")
    with open(real, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            maps[real] = _Empty()
        else:
            maps[real] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    return maps[real]


class _Empty(bytes):
    """An empty file (mmap cannot map zero bytes)."""

    def close(self):
        pass
