"""Builds the graphopt-client wheel (metadata in pyproject.toml).

The protobuf and gRPC stubs are not in the source tree: build_py runs generate.sh, which writes
them into the build folder as graphopt_client/_proto, from the proto/ folder of the checkout this
package sits in (two levels up). The version is graphopt's own, from util/version.h, so that a
client and a server built from one checkout say the same version.
"""
import os
import re
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def graphopt_version() -> str:
    path = os.path.join(ROOT, "util", "version.h")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise SystemExit(f"graphopt-client: cannot read {path} ({e}); build the package from a "
                         "graphopt checkout: pip install ./client/python") from e
    m = re.search(r'kGraphoptVersion\[\]\s*=\s*"([^"]+)"', text)
    if not m:
        raise SystemExit(f"graphopt-client: no kGraphoptVersion in {path}")
    return m.group(1)


class BuildPyWithStubs(build_py):
    def run(self):
        super().run()
        if not os.path.isfile(os.path.join(ROOT, "proto", "optimizer.proto")):
            raise SystemExit(f"graphopt-client: no proto/optimizer.proto under {ROOT}; build the "
                             "package from a graphopt checkout: pip install ./client/python")
        subprocess.run(["bash", os.path.join(HERE, "generate.sh"), "--proto_root", ROOT,
                        "--out", os.path.abspath(self.build_lib)], check=True)


setup(version=graphopt_version(), cmdclass={"build_py": BuildPyWithStubs})
