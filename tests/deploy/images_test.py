"""deploy/build-images.sh end to end: builds the images from Debian packages, checks what they
hold and how they are configured, and runs the server image's health check.

The images run under podman (runc) when containers can start here; otherwise the same root
file system (the image's, mounted by buildah) runs under chroot as uid 65532, and the check's
name says so. Where neither is permitted, or the build's tools (root, buildah, debootstrap)
are missing, the checks are skipped visibly.
"""

import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import time

from junit import Checks, Skip, log

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), "graphopt")
TMP = os.environ.get("TEST_TMPDIR", "/tmp")
TAG = "test"
IMAGES = ("graphopt-server", "graphopt-worker", "graphopt-etcd")
APP_USER = "65532:65532"
LABELS = ("title", "description", "version", "revision", "source", "licenses", "created")
# Build tools that must never ship: compilers, linkers, headers (-dev packages), make.
FORBIDDEN = ("gcc", "g++", "cpp", "clang", "binutils", "make", "libc6-dev", "libc-dev-bin")
CLI = "/usr/local/bin/graphopt"

checks = Checks("images_test")
containers = []  # buildah working containers (mounted image roots) to remove at the end


def run(args, timeout=120, check=True, **kw):
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kw)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(args)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}")
    return r


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, bound_s, what):
    deadline = time.time() + bound_s
    while time.time() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"{what}: not within {bound_s} s")


def preconditions():
    if os.geteuid() != 0:
        return "not root: debootstrap and buildah need root"
    for tool in ("buildah", "debootstrap", "dpkg"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/install_deps.sh installs it)"
    return None


def build():
    # The real home's cache (Bazel points HOME at the test's temporary folder), so a warm
    # machine skips debootstrap.
    cache = os.path.join(pwd.getpwuid(os.geteuid()).pw_dir, ".cache", "graphopt-images")
    start = time.time()
    r = run([os.path.join(RUNFILES, "deploy/build-images.sh"), "--bin-dir", RUNFILES,
             "--tag", TAG, "--cache-dir", cache], timeout=780, check=False)
    print(r.stdout[-4000:], r.stderr[-4000:], sep="\n")
    assert r.returncode == 0, f"build-images.sh exited {r.returncode}"
    log(f"build-images.sh took {time.time() - start:.1f} s (cache {cache})")


def inspect(image):
    r = run(["buildah", "inspect", "--type", "image", f"localhost/{image}:{TAG}"])
    return json.loads(r.stdout)


def runs_as_non_root():
    for image in IMAGES:
        config = inspect(image)["OCIv1"]["config"]
        assert config.get("User") == APP_USER, f"{image} runs as {config.get('User')!r}"


def has_oci_labels():
    for image in IMAGES:
        labels = inspect(image)["OCIv1"]["config"].get("Labels") or {}
        for key in LABELS:
            value = labels.get(f"org.opencontainers.image.{key}", "")
            assert value, f"{image} lacks org.opencontainers.image.{key}"
        assert labels["org.opencontainers.image.title"] == image
        assert labels["org.opencontainers.image.version"] == TAG


def mount(image):
    """The image's root file system, mounted read-write in a fresh working container."""
    ctr = run(["buildah", "from", "--pull-never", f"localhost/{image}:{TAG}"]).stdout.strip()
    containers.append(ctr)
    return run(["buildah", "mount", ctr]).stdout.strip()


def runtime_only():
    for image in IMAGES:
        root = mount(image)
        r = run(["dpkg-query", f"--admindir={root}/var/lib/dpkg", "-W", "-f",
                 "${Package} ${Status}\n"])
        installed = [line.split()[0] for line in r.stdout.splitlines()
                     if line.endswith(" installed")]
        assert len(installed) > 10, f"{image}: dpkg lists only {installed}"
        # gcc-12-base is libgcc's and libstdc++'s copyright files only.
        bad = [p for p in installed if p.endswith("-dev") or p.split(":")[0] in FORBIDDEN
               or (p.startswith(("gcc-", "g++-", "cpp-", "clang-", "llvm-"))
                   and not p.endswith("-base"))]
        assert not bad, f"{image} holds build tools or headers: {bad}"
        for tool in ("usr/bin/gcc", "usr/bin/cc", "usr/bin/c++", "usr/bin/ld", "usr/include/c++"):
            assert not os.path.exists(os.path.join(root, tool)), f"{image} holds /{tool}"
        for cache in ("var/lib/apt/lists", "var/cache/apt"):
            left = [f for f in os.listdir(os.path.join(root, cache)) if f not in ("partial",)]
            assert not left, f"{image}: /{cache} still holds {left[:5]}"
        log(f"{image}: {len(installed)} packages, none of them build tools")


def report_sizes():
    for image in IMAGES:
        r = run(["podman", "image", "inspect", "--format", "{{.Size}}", f"localhost/{image}:{TAG}"])
        size = int(r.stdout.strip())
        assert 0 < size < 400e6, f"{image}: {size} bytes"
        log(f"image size {image}: {size / 1e6:.1f} MB (uncompressed)")


# --- Running the images ------------------------------------------------------------------------

class Podman:
    """Containers with runc: crun cannot set rlimits here, and podman's default ulimits fail."""

    kind = "podman container"

    def __init__(self):
        self.conf = os.path.join(TMP, "containers.conf")
        with open(self.conf, "w") as f:
            f.write("[containers]\ndefault_ulimits = []\n")
        self.names = []

    def cmd(self, *args):
        return ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs",
                "--events-backend=file", *args]

    def env(self):
        return dict(os.environ, CONTAINERS_CONF=self.conf)

    def usable(self):
        if shutil.which("podman") is None or shutil.which("runc") is None:
            return "podman or runc is not installed"
        r = run(self.cmd("run", "--rm", "--network=host", "--entrypoint", "/usr/bin/id",
                         f"localhost/graphopt-server:{TAG}", "-u"),
                timeout=60, check=False, env=self.env())
        if r.returncode != 0 or r.stdout.strip() != "65532":
            return f"podman run failed ({r.returncode}): {(r.stderr or r.stdout).strip()[-300:]}"
        return None

    def start(self, image, args, mounts=()):
        """`mounts`: (host folder, path in the container) pairs, mounted read-only."""
        name = f"graphopt-images-test-{os.getpid()}-{len(self.names)}"
        volumes = [f"--volume={host}:{path}:ro" for host, path in mounts]
        run(self.cmd("run", "-d", "--rm", "--network=host", "--read-only", "--name", name,
                     "--tmpfs", "/tmp", *volumes, f"localhost/{image}:{TAG}", *args),
            env=self.env())
        self.names.append(name)
        return name

    def exec(self, handle, args):
        return run(self.cmd("exec", handle, *args), check=False, env=self.env(), timeout=30)

    def once(self, image, entrypoint, args):
        return run(self.cmd("run", "--rm", "--network=host", "--entrypoint", entrypoint,
                            f"localhost/{image}:{TAG}", *args), check=False, env=self.env())

    def logs(self, handle):
        return run(self.cmd("logs", handle), check=False, env=self.env()).stdout

    def stop_all(self):
        for name in self.names:
            run(self.cmd("rm", "-f", "-t", "5", name), check=False, env=self.env(), timeout=60)


class Chroot:
    """The image's own root file system under chroot, as uid/gid 65532."""

    kind = "chroot"

    def __init__(self):
        self.procs = []

    def usable(self):
        if shutil.which("chroot") is None:
            return "chroot is not installed"
        root = mount("graphopt-server")
        r = run(["chroot", f"--userspec={APP_USER}", root, "/usr/bin/id", "-u"], check=False)
        if r.returncode != 0 or r.stdout.strip() != "65532":
            return f"chroot failed ({r.returncode}): {r.stderr.strip()[-300:]}"
        return None

    def start(self, image, args, mounts=()):
        root = mount(image)
        for host, path in mounts:  # copied in: the mounted image root is this run's own
            shutil.copytree(host, root + path, dirs_exist_ok=True)
        entry = inspect(image)["OCIv1"]["config"]["Entrypoint"]
        log_path = os.path.join(TMP, f"chroot-{image}-{len(self.procs)}.log")
        proc = subprocess.Popen([shutil.which("chroot"), f"--userspec={APP_USER}", root, *entry, *args],
                                stdout=open(log_path, "w"), stderr=subprocess.STDOUT,
                                env={"HOME": "/home/graphopt", "PATH": "/usr/local/bin:/usr/bin:/bin"},
                                cwd="/")
        self.procs.append(proc)
        return (root, proc, log_path)

    def exec(self, handle, args):
        return run(["chroot", f"--userspec={APP_USER}", handle[0], *args], check=False, timeout=30)

    def once(self, image, entrypoint, args):
        return run(["chroot", f"--userspec={APP_USER}", mount(image), entrypoint, *args],
                   check=False)

    def logs(self, handle):
        with open(handle[2]) as f:
            return f.read()

    def stop_all(self):
        for proc in self.procs:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def pick_runner():
    podman = Podman()
    # GRAPHOPT_IMAGES_TEST_CHROOT=1 takes the fallback on purpose, to check it where podman works.
    if os.environ.get("GRAPHOPT_IMAGES_TEST_CHROOT") == "1":
        why_not = "GRAPHOPT_IMAGES_TEST_CHROOT=1"
    else:
        why_not = podman.usable()
    if why_not is None:
        return podman, None
    log(f"containers cannot run here ({why_not}); running the image's root file system "
        "under chroot instead")
    chroot = Chroot()
    why_not_chroot = chroot.usable()
    if why_not_chroot is None:
        return chroot, why_not
    return None, f"{why_not}; and {why_not_chroot}"


def health_of(runner, handle, port, inside):
    """`graphopt health` run inside the image (as an exec probe does) or from here."""
    args = ["health", "--server", f"127.0.0.1:{port}", "--timeout", "2"]
    if inside:
        r = runner.exec(handle, [CLI, *args])
    else:
        r = run([os.path.join(RUNFILES, "client/graphopt"), *args], check=False, timeout=30)
    return r.returncode, (r.stdout + r.stderr).strip()


def serves_health(runner, image, inside, extra_args=()):
    port = free_port()
    # A read-only root (as in Kubernetes): state goes to /tmp, a tmpfs or the chroot's /tmp.
    args = ["--insecure", f"--listen=127.0.0.1:{port}", *extra_args]
    handle = runner.start(image, args)
    try:
        wait_for(lambda: health_of(runner, handle, port, inside)[0] == 0, 30,
                 f"{image} answering SERVING on {port}")
    except AssertionError:
        print(runner.logs(handle)[-3000:])
        raise
    rc, out = health_of(runner, handle, port, inside)
    assert rc == 0 and out == "SERVING", f"graphopt health: {rc} {out!r}"
    where = "inside the image" if inside else "from the host"
    log(f"{image} under {runner.kind}: graphopt health ({where}) -> {out}")


def manifest_probe_and_args():
    """The server's probe port, the flags it is served with, and the TLS flags, from
    deploy/k8s's base."""
    import yaml  # Debian's python3-yaml

    with open(os.path.join(RUNFILES, "deploy/k8s/base/server-deployment.yaml")) as f:
        deployment = yaml.safe_load(f)
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    probe_port = container["readinessProbe"]["grpc"]["port"]
    assert container["livenessProbe"]["grpc"]["port"] == probe_port
    health = [a for a in container["args"] if a.startswith("--health_listen=")]
    assert health == [f"--health_listen=0.0.0.0:{probe_port}"], health
    flags = [a for a in container["args"] if a.startswith(("--tls_", "--tokens_file="))]
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    return probe_port, flags, mounts


def serves_tls_probe(runner):
    """The server as the manifest runs it (TLS, tokens, a health-only port): the kubelet's
    plaintext gRPC probe on the health port answers SERVING, and so does a TLS check of the
    main port."""
    _, flags, mounts = manifest_probe_and_args()
    certs = os.path.join(TMP, "certs")
    run([os.path.join(RUNFILES, "scripts/make_dev_certs.sh"), certs])
    tls, tokens = os.path.join(TMP, "tls"), os.path.join(TMP, "tokens")
    os.makedirs(tls, exist_ok=True)
    os.makedirs(tokens, exist_ok=True)
    # Named as a kubernetes.io/tls Secret's keys; readable by uid 65532 (as fsGroup makes them).
    for src, dst in (("server.pem", "tls.crt"), ("server.key", "tls.key"), ("ca.pem", "ca.crt")):
        shutil.copy(os.path.join(certs, src), os.path.join(tls, dst))
        os.chmod(os.path.join(tls, dst), 0o444)
    open(os.path.join(tokens, "tokens"), "w").close()
    os.chmod(os.path.join(tokens, "tokens"), 0o444)
    for d in (TMP, tls, tokens):
        os.chmod(d, 0o755)
    port, health_port = free_port(), free_port()
    args = [f"--listen=127.0.0.1:{port}", f"--health_listen=127.0.0.1:{health_port}",
            "--op_store_dir=/tmp/ops", *flags]
    handle = runner.start("graphopt-server", args,
                          [(tls, mounts["tls"]), (tokens, mounts["tokens"])])
    kubelet_probe = ["/usr/local/bin/graphopt", "health", f"--server=127.0.0.1:{health_port}",
                     "--timeout=2"]
    tls_check = ["/usr/local/bin/graphopt", "health", f"--server=127.0.0.1:{port}", "--timeout=2",
                 f"--tls-ca={mounts['tls']}/ca.crt", "--tls-server-name=graphopt-server"]

    def probes_pass():
        return all(runner.exec(handle, c).returncode == 0 for c in (kubelet_probe, tls_check))

    try:
        wait_for(probes_pass, 30, f"the health port {health_port} and the TLS port {port}")
    except AssertionError:
        print(runner.logs(handle)[-3000:])
        raise
    log(f"plaintext probe on the health port -> {runner.exec(handle, kubelet_probe).stdout.strip()}"
        f"; TLS check of the main port -> {runner.exec(handle, tls_check).stdout.strip()}")


def etcd_runs(runner):
    r = runner.once("graphopt-etcd", "/usr/bin/etcd", ["--version"])
    assert r.returncode == 0 and "etcd Version" in r.stdout, f"{r.returncode}: {r.stdout} {r.stderr}"
    log(r.stdout.strip().splitlines()[0])


def main():
    why_not = preconditions()
    if why_not:
        for name in ("build_images", "runs_as_non_root", "has_oci_labels", "runtime_only",
                     "image_sizes", "server_health_check"):
            checks.skip(name, why_not)
        checks.finish()
    if checks.run("build_images", build) is None and checks.cases[-1][1] != "ok":
        checks.finish()
    checks.run("runs_as_non_root", runs_as_non_root)
    checks.run("has_oci_labels", has_oci_labels)
    checks.run("runtime_only", runtime_only)
    checks.run("image_sizes", report_sizes)

    runner, why_not = pick_runner()
    if runner is None:
        for name in ("server_health_check", "worker_health_check", "server_tls_manifest_probe",
                     "etcd_runs"):
            checks.skip(name, f"neither containers nor chroot can run here: {why_not}")
        return
    where = "podman_container" if isinstance(runner, Podman) else "chroot_fallback"
    try:
        checks.run(f"server_health_check_in_{where}", serves_health, runner, "graphopt-server",
                   True, ["--op_store_dir=/tmp/ops"])
        checks.run(f"worker_health_check_in_{where}", serves_health, runner, "graphopt-worker",
                   True)
        checks.run(f"server_tls_manifest_probe_in_{where}", serves_tls_probe, runner)
        checks.run(f"etcd_runs_in_{where}", etcd_runs, runner)
    finally:
        runner.stop_all()


if __name__ == "__main__":
    try:
        main()
    finally:
        for ctr in containers:
            run(["buildah", "rm", ctr], check=False)
    checks.finish()
