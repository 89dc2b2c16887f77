"""Hosts made of Linux network namespaces for the multi-host tests: one namespace per host, each
with an `eth0` veth whose peer sits on one bridge inside a "switch" namespace of its own, so
nothing of the test touches the machine's own network and deleting the namespaces removes every
link. Names carry the test's pid, so concurrent runs do not collide.

A Network records everything it made; close() kills the processes it started and deletes the
namespaces, and is safe to call twice and after a partial set-up.
"""

import ctypes
import os
import re
import signal
import subprocess
import time

CLONE_NEWNET = 0x40000000
IP = "/usr/sbin/ip" if os.path.exists("/usr/sbin/ip") else "ip"


def ip(*args, check=True):
    r = subprocess.run([IP, *args], capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r


def unavailable_reason():
    """Why network namespaces cannot be made here (None when they can): tried, not guessed."""
    if os.geteuid() != 0:
        return "network namespaces need root (CAP_SYS_ADMIN and CAP_NET_ADMIN); running as uid " \
               f"{os.geteuid()}"
    name = f"{PREFIX}{os.getpid()}-probe"
    try:
        r = ip("netns", "add", name, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"cannot run ip (iproute2): {e}"
    if r.returncode != 0:
        return f"`ip netns add` is not permitted here: {r.stderr.strip()}"
    try:
        r = ip("-n", name, "link", "add", "probebr", "type", "bridge", check=False)
        if r.returncode != 0:
            return f"cannot make a bridge inside a namespace: {r.stderr.strip()}"
    finally:
        ip("netns", "del", name, check=False)
    return None


def _setns(path):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {path}")
    finally:
        os.close(fd)


PREFIX = "graphopt"


def remove_stale():
    """Deletes namespaces an earlier run of these tests left behind when it was killed outright
    (SIGKILL leaves no time to clean up): those named for a pid that no longer exists and with
    no process inside. Returns their names."""
    removed = []
    for name in ip("netns", "list", check=False).stdout.split():
        m = re.match(PREFIX + r"(\d+)-", name)
        if not m or os.path.exists(f"/proc/{m.group(1)}"):
            continue
        if ip("netns", "pids", name, check=False).stdout.strip():
            continue
        if ip("netns", "del", name, check=False).returncode == 0:
            removed.append(name)
    return removed


class Network:
    """A /24 on one bridge; hosts added with add_host(short_name, last_octet)."""

    def __init__(self, subnet="10.77.0"):
        self.subnet = subnet
        self.prefix = f"{PREFIX}{os.getpid()}"
        self.switch = f"{self.prefix}-switch"
        self.namespaces = []
        self.hosts = {}  # short name -> (namespace, address)
        self.processes = []
        self._home_ns = None
        self._add_namespace(self.switch)
        ip("-n", self.switch, "link", "add", "br0", "type", "bridge")
        ip("-n", self.switch, "link", "set", "br0", "up")

    def _add_namespace(self, name):
        ip("netns", "add", name)
        self.namespaces.append(name)
        ip("-n", name, "link", "set", "lo", "up")

    def add_host(self, short, octet):
        ns = f"{self.prefix}-{short}"
        self._add_namespace(ns)
        port = f"p{octet}"  # the switch's side of the cable
        ip("-n", self.switch, "link", "add", port, "type", "veth", "peer", "name", "eth0",
           "netns", ns)
        ip("-n", self.switch, "link", "set", port, "master", "br0")
        ip("-n", self.switch, "link", "set", port, "up")
        address = f"{self.subnet}.{octet}"
        ip("-n", ns, "addr", "add", f"{address}/24", "dev", "eth0")
        ip("-n", ns, "link", "set", "eth0", "up")
        self.hosts[short] = (ns, address)
        return address

    def address(self, short):
        return self.hosts[short][1]

    def namespace(self, short):
        return self.hosts[short][0]

    def enter(self, short):
        """Moves this thread (and the threads and processes it starts from now on) onto host
        `short`: call it before any gRPC channel exists, so that gRPC's threads live there."""
        if self._home_ns is None:
            self._home_ns = os.open("/proc/self/ns/net", os.O_RDONLY)
        _setns(f"/run/netns/{self.namespace(short)}")

    def link(self, short, up):
        """Plugs host `short`'s cable in or out (its eth0 up or down, inside its namespace)."""
        ip("-n", self.namespace(short), "link", "set", "eth0", "up" if up else "down")

    def spawn(self, short, args, log_path, env=None):
        """Starts `args` on host `short`; the Popen's pid is the program's own (ip execs it)."""
        out = open(log_path, "a")
        p = subprocess.Popen([IP, "netns", "exec", self.namespace(short), *args], stdout=out,
                             stderr=subprocess.STDOUT, env=env)
        out.close()
        self.processes.append(p)
        return p

    def close(self):
        for p in self.processes:
            if p.poll() is None:
                try:
                    p.send_signal(signal.SIGCONT)
                    p.kill()
                except OSError:
                    pass
        for p in self.processes:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        if self._home_ns is not None:
            _setns(f"/proc/self/fd/{self._home_ns}")
            os.close(self._home_ns)
            self._home_ns = None
        # Anything still inside one of our namespaces was started by this test (a child's child).
        for ns in self.namespaces:
            r = ip("netns", "pids", ns, check=False)
            for pid in r.stdout.split():
                if pid.isdigit() and int(pid) != os.getpid():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except OSError:
                        pass
        for ns in reversed(self.namespaces):
            ip("netns", "del", ns, check=False)
        self.namespaces = []
