"""graphopt_client's credentials against the server side's real authentication.

server/auth_echo_server sets up its listener, tokens file and Authenticator with the same code
and flags as graphopt-server (server/security.h) and answers ListPasses with the principal it
computed. Checks: a token (argument or GRAPHOPT_TOKEN) makes the call that token's tenant; no
token or an unknown one is UNAUTHENTICATED; a tenant token naming another tenant is
PERMISSION_DENIED; an admin token acts for the tenant named; over TLS with tls_ca (and with a
client certificate), and refused with a foreign CA.

    credentials_server_test.py --echo_server PATH/TO/auth_echo_server

Run with Debian's /usr/bin/python3 (see run_python_test.sh).
"""

import argparse
import base64
import ctypes
import hashlib
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock

import graphopt_client
from graphopt_client import GraphoptError

ECHO_SERVER = None  # set by main()
STARTUP_TIMEOUT_S = 30


def new_token() -> str:
    return "gopt_" + base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip("=")


def dev_certs_script() -> str:
    runfiles = os.environ.get("TEST_SRCDIR")
    if runfiles:
        path = os.path.join(runfiles, os.environ.get("TEST_WORKSPACE", "graphopt"),
                            "scripts", "make_dev_certs.sh")
        if os.path.exists(path):
            return path
    here = os.path.dirname(os.path.realpath(__file__))
    return os.path.join(here, "..", "..", "scripts", "make_dev_certs.sh")


def _die_with_parent():
    # PR_SET_PDEATHSIG: the server goes when this process does, however it ends.
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class CredentialsServerTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(dir=os.environ.get("TEST_TMPDIR"))
        cls.acme = new_token()
        cls.admin = new_token()
        cls.tokens = os.path.join(cls.tmp, "tokens")
        with open(cls.tokens, "w") as f:
            f.write(f"tenant acme {hashlib.sha256(cls.acme.encode()).hexdigest()} py\n")
            f.write(f"admin - {hashlib.sha256(cls.admin.encode()).hexdigest()} ops\n")
        cls.processes = []
        cls.plain = cls.start("--insecure")
        cls.certs = None
        if shutil.which("openssl") is not None:
            cls.certs = os.path.join(cls.tmp, "certs")
            subprocess.run(["bash", dev_certs_script(), cls.certs, "--client"], check=True,
                           stdout=subprocess.DEVNULL)
            cls.foreign = os.path.join(cls.tmp, "foreign")
            subprocess.run(["bash", dev_certs_script(), cls.foreign], check=True,
                           stdout=subprocess.DEVNULL)
            cls.tls = cls.start(f"--tls_cert={cls.certs}/server.pem",
                                f"--tls_key={cls.certs}/server.key",
                                f"--tls_ca={cls.certs}/ca.pem")

    @classmethod
    def start(cls, *flags) -> str:
        """Starts the echo server with `flags` and the tokens file; its address."""
        port_file = os.path.join(cls.tmp, f"port{len(cls.processes)}")
        process = subprocess.Popen(
            [ECHO_SERVER, f"--port_file={port_file}", f"--tokens_file={cls.tokens}", *flags],
            preexec_fn=_die_with_parent)
        cls.processes.append(process)
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if os.path.exists(port_file):
                with open(port_file) as f:
                    port = f.read().strip()
                if port:
                    return f"127.0.0.1:{port}"
            if process.poll() is not None:
                raise RuntimeError(f"auth_echo_server exited with {process.returncode}")
            time.sleep(0.05)
        raise RuntimeError("auth_echo_server did not start")

    @classmethod
    def tearDownClass(cls):
        for process in cls.processes:
            process.kill()
            process.wait()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def who(self, address: str, **kwargs) -> str:
        with graphopt_client.Client(address, timeout=10, **kwargs) as client:
            passes = client.list_passes()
        self.assertEqual(len(passes), 1)
        return passes[0].description

    def assert_refused(self, code: str, address: str, **kwargs) -> GraphoptError:
        with self.assertRaises(GraphoptError) as caught:
            self.who(address, **kwargs)
        self.assertEqual(caught.exception.code, code, caught.exception.message)
        return caught.exception

    def test_the_token_names_the_tenant(self):
        self.assertEqual(self.who(self.plain, token=self.acme), "tenant acme (token 'py')")
        self.assertEqual(self.who(self.plain, token=self.acme, tenant="acme"),
                         "tenant acme (token 'py')")
        with mock.patch.dict(os.environ, {"GRAPHOPT_TOKEN": self.acme}):
            self.assertEqual(self.who(self.plain), "tenant acme (token 'py')")

    def test_an_admin_token_acts_for_the_tenant_named(self):
        self.assertEqual(self.who(self.plain, token=self.admin),
                         "admin (token 'ops') for tenant default")
        self.assertEqual(self.who(self.plain, token=self.admin, tenant="globex"),
                         "admin (token 'ops') for tenant globex")

    def test_refusals(self):
        error = self.assert_refused("UNAUTHENTICATED", self.plain, token="")
        self.assertIn("GRAPHOPT_TOKEN", error.message)
        self.assert_refused("UNAUTHENTICATED", self.plain, token=new_token())
        error = self.assert_refused("PERMISSION_DENIED", self.plain, token=self.acme,
                                    tenant="globex")
        self.assertIn("'acme'", error.message)
        self.assertIn("'globex'", error.message)

    def test_tls(self):
        if self.certs is None:
            self.skipTest("openssl is not installed: no test certificates")
        ca = os.path.join(self.certs, "ca.pem")
        self.assertEqual(self.who(self.tls, token=self.acme, tls_ca=ca),
                         "tenant acme (token 'py')")
        # The server verifies a client certificate that is offered.
        self.assertEqual(self.who(self.tls, token=self.acme, tls_ca=ca,
                                  tls_cert=os.path.join(self.certs, "client.pem"),
                                  tls_key=os.path.join(self.certs, "client.key")),
                         "tenant acme (token 'py')")
        self.assert_refused("UNAVAILABLE", self.tls, token=self.acme,
                            tls_ca=os.path.join(self.foreign, "ca.pem"))
        self.assert_refused("UNAVAILABLE", self.tls, token=self.acme, tls_ca=ca,
                            tls_cert=os.path.join(self.foreign, "worker.pem"),
                            tls_key=os.path.join(self.foreign, "worker.key"))
        self.assert_refused("UNAVAILABLE", self.tls, token=self.acme)
        self.assert_refused("UNAUTHENTICATED", self.tls, token="", tls_ca=ca)


def main():
    global ECHO_SERVER
    parser = argparse.ArgumentParser()
    parser.add_argument("--echo_server", required=True)
    args, rest = parser.parse_known_args()
    ECHO_SERVER = os.path.abspath(args.echo_server)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
