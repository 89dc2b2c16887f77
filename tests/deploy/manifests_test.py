"""deploy/k8s: every manifest and every rendered overlay validates against the Kubernetes
schemas (kubernetes-validate, strict, Kubernetes 1.29), and the rendered overlays keep the
deployment's rules: replicated servers with autoscaling and a disruption budget, probes,
requests and limits, non-root read-only containers, workers reachable only from servers, etcd
only from graphopt's pods, Prometheus annotations, GPU workers only in the gpu overlay.

Overlays are rendered by kustomize_lite (no kubectl needed); where `kubectl kustomize` works,
its rendering must be the same objects. A self-check breaks a rendered overlay on purpose and
expects the rules to say so, so a passing run means the rules can fail.

Runs under scripts/install_python_deps.sh's venv ($GRAPHOPT_PYTHON), which holds
kubernetes-validate.
"""

import base64
import copy
import glob
import os
import shutil
import subprocess

import yaml

import kustomize_lite
from junit import Checks, log

RUNFILES = os.path.join(os.environ.get("TEST_SRCDIR", ""), "graphopt")
TMP = os.environ.get("TEST_TMPDIR", "/tmp")
K8S_VERSION = "1.29.0"
OVERLAYS = ("dev", "prod", "gpu")
APP_UID = 65532
ETCD_MEMBERS = [f"graphopt-etcd-{i}.graphopt-etcd:2379" for i in range(3)]
SERVER = {"app.kubernetes.io/name": "graphopt", "app.kubernetes.io/component": "server"}
WORKER = {"app.kubernetes.io/name": "graphopt", "app.kubernetes.io/component": "worker"}
ETCD = {"app.kubernetes.io/name": "graphopt", "app.kubernetes.io/component": "etcd"}
# The Secrets the dev overlay generates from make-secrets.sh's files: placeholders will do for
# rendering, and keep key material out of the test.
DEV_SECRET_FILES = ("ca.pem", "server.pem", "server.key", "worker.pem", "worker.key", "etcd.pem",
                    "etcd.key", "tokens")

checks = Checks("manifests_test")


def k8s_tree():
    """A copy of deploy/k8s with the dev overlay's secret files in place."""
    tree = os.path.join(TMP, "k8s")
    shutil.rmtree(tree, ignore_errors=True)
    shutil.copytree(os.path.join(RUNFILES, "deploy/k8s"), tree, symlinks=False)
    secrets = os.path.join(tree, "overlays/dev/secrets")
    os.makedirs(secrets, exist_ok=True)
    for name in DEV_SECRET_FILES:
        with open(os.path.join(secrets, name), "w") as f:
            f.write(f"placeholder {name}\n")
    return tree


def validate(objects, source):
    try:  # from the venv; imported here so that a missing one fails the checks, saying why
        import kubernetes_validate
    except ImportError:
        raise AssertionError("kubernetes-validate is missing: run scripts/install_python_deps.sh "
                             "and pass --test_env=GRAPHOPT_PYTHON=$PWD/.venv/bin/python (as "
                             "scripts/test.sh does)") from None

    assert objects, f"{source}: no objects"
    for obj in objects:
        what = f"{source}: {obj.get('kind')}/{obj.get('metadata', {}).get('name')}"
        try:
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as e:
            raise AssertionError(f"{what}: {e.message} at {list(e.path)}") from None
        except kubernetes_validate.SchemaNotFoundError:
            raise AssertionError(f"{what}: no schema in Kubernetes {K8S_VERSION}") from None


def manifest_files(tree):
    """Every YAML file that is a whole manifest: not a kustomization, not a patch."""
    patches = set()
    for k in glob.glob(os.path.join(tree, "**/kustomization.yaml"), recursive=True):
        patches |= kustomize_lite.patch_paths(os.path.dirname(k))
    return sorted(f for f in glob.glob(os.path.join(tree, "**/*.yaml"), recursive=True)
                  if os.path.basename(f) != "kustomization.yaml" and f not in patches)


def validate_manifest_files(tree):
    files = manifest_files(tree)
    assert len(files) >= 12, files
    for path in files:
        with open(path) as f:
            validate([d for d in yaml.safe_load_all(f) if d], os.path.relpath(path, tree))
    log(f"{len(files)} manifest files valid against Kubernetes {K8S_VERSION} (strict)")


# --- The rules ---------------------------------------------------------------------------------

def find(objects, kind, name):
    found = [o for o in objects if o["kind"] == kind and o["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}: {len(found)} objects"
    return found[0]


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in (selector.get("matchLabels") or {}).items())


def check_workload(obj, errors):
    name = f"{obj['kind']}/{obj['metadata']['name']}"
    pod = obj["spec"]["template"]["spec"]
    pod_sc = pod.get("securityContext") or {}
    if pod_sc.get("runAsNonRoot") is not True or pod_sc.get("runAsUser") != APP_UID:
        errors.append(f"{name}: pod securityContext must run as non-root uid {APP_UID}")
    for c in pod["containers"]:
        where = f"{name} container {c['name']}"
        sc = c.get("securityContext") or {}
        for key, want in (("runAsNonRoot", True), ("readOnlyRootFilesystem", True),
                          ("allowPrivilegeEscalation", False)):
            if sc.get(key) is not want:
                errors.append(f"{where}: securityContext.{key} must be {want}")
        if (sc.get("capabilities") or {}).get("drop") != ["ALL"]:
            errors.append(f"{where}: capabilities must drop ALL")
        seccomp = (sc.get("seccompProfile") or pod_sc.get("seccompProfile") or {}).get("type")
        if seccomp != "RuntimeDefault":
            errors.append(f"{where}: seccompProfile must be RuntimeDefault")
        for probe in ("readinessProbe", "livenessProbe"):
            if not c.get(probe):
                errors.append(f"{where}: no {probe}")
            elif c.get("name") in ("server", "worker") and not (c[probe].get("grpc") or {}).get(
                    "port"):
                errors.append(f"{where}: {probe} must be the kubelet's gRPC probe")
        res = c.get("resources") or {}
        for part in ("requests", "limits"):
            for r in ("cpu", "memory"):
                if r not in (res.get(part) or {}):
                    errors.append(f"{where}: no {part}.{r}")


def check_flags(deployment, port, errors):
    c = deployment["spec"]["template"]["spec"]["containers"][0]
    args = c.get("args") or []
    name = deployment["metadata"]["name"]
    endpoints = [a.split("=", 1)[1] for a in args if a.startswith("--etcd_endpoints=")]
    if not endpoints or endpoints[0].split(",") != ETCD_MEMBERS:
        errors.append(f"{name}: --etcd_endpoints must list the three etcd members")
    if "--metrics_listen=0.0.0.0:9090" not in args:
        errors.append(f"{name}: --metrics_listen=0.0.0.0:9090 missing")
    if f"--advertise_address=$(POD_IP):{port}" not in args:
        errors.append(f"{name}: --advertise_address must come from the pod IP")
    pod_ip = [e for e in c.get("env") or [] if e["name"] == "POD_IP"]
    if not pod_ip or pod_ip[0].get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") != \
            "status.podIP":
        errors.append(f"{name}: POD_IP must come from the downward API (status.podIP)")
    annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
    ports = {str(p["containerPort"]) for p in c.get("ports") or []}
    if annotations.get("prometheus.io/scrape") != "true" or \
            annotations.get("prometheus.io/port") not in ports or \
            annotations.get("prometheus.io/path") != "/metrics":
        errors.append(f"{name}: Prometheus scrape annotations missing or wrong")
    mounts = {m["name"]: m for m in c.get("volumeMounts") or []}
    for v in deployment["spec"]["template"]["spec"].get("volumes") or []:
        if "secret" in v and not mounts.get(v["name"], {}).get("readOnly"):
            errors.append(f"{name}: Secret volume {v['name']} must be mounted read-only")


def check_network_policies(objects, errors):
    policies = [o for o in objects if o["kind"] == "NetworkPolicy"]
    worker_policies = [p for p in policies if selects(p["spec"]["podSelector"], WORKER)]
    if not worker_policies:
        errors.append("no NetworkPolicy selects the worker pods")
    for p in worker_policies:
        for rule in p["spec"].get("ingress") or []:
            ports = {x.get("port") for x in rule.get("ports") or []}
            peers = rule.get("from") or []
            if not peers:
                errors.append(f"NetworkPolicy/{p['metadata']['name']}: a rule admits anyone")
            for peer in peers:
                from_server = selects(peer.get("podSelector") or {}, SERVER) and \
                    "namespaceSelector" not in peer
                from_prometheus = "namespaceSelector" in peer and ports <= {9090}
                if not (from_server or from_prometheus):
                    errors.append(f"NetworkPolicy/{p['metadata']['name']}: workers reachable "
                                  f"from {peer} on {ports}")
    etcd_policies = [p for p in policies if selects(p["spec"]["podSelector"], ETCD)]
    if not etcd_policies:
        errors.append("no NetworkPolicy selects the etcd pods")
    for p in etcd_policies:
        for rule in p["spec"].get("ingress") or []:
            ports = {x.get("port") for x in rule.get("ports") or []}
            for peer in rule.get("from") or [{}]:
                ok = any(selects(peer.get("podSelector") or {}, s) and
                         "namespaceSelector" not in peer for s in (SERVER, WORKER, ETCD))
                if not ok and not ("namespaceSelector" in peer and ports <= {2381}):
                    errors.append(f"NetworkPolicy/{p['metadata']['name']}: etcd reachable "
                                  f"from {peer or 'anyone'} on {ports}")


def policy_errors(objects, overlay):
    """The rules deploy/k8s must keep, as a list of what is broken (empty: all kept)."""
    errors = []
    try:
        server = find(objects, "Deployment", "graphopt-server")
        worker = find(objects, "Deployment", "graphopt-worker")
        etcd = find(objects, "StatefulSet", "graphopt-etcd")
        hpa = find(objects, "HorizontalPodAutoscaler", "graphopt-server")
        pdb = find(objects, "PodDisruptionBudget", "graphopt-server")
        worker_service = find(objects, "Service", "graphopt-worker")
        etcd_service = find(objects, "Service", "graphopt-etcd")
        find(objects, "Service", "graphopt-server")
    except AssertionError as e:
        return [str(e)]
    if server["spec"].get("replicas", 1) < 2:
        errors.append("server Deployment: replicas < 2")
    if hpa["apiVersion"] != "autoscaling/v2" or hpa["spec"]["minReplicas"] < 2 or \
            hpa["spec"]["scaleTargetRef"]["name"] != "graphopt-server" or \
            not any(m.get("resource", {}).get("name") == "cpu" for m in hpa["spec"]["metrics"]):
        errors.append("server HPA: autoscaling/v2 on CPU with minReplicas >= 2 wanted")
    if not selects(pdb["spec"]["selector"], SERVER):
        errors.append("server PodDisruptionBudget does not select the servers")
    for workload in (server, worker, etcd):
        check_workload(workload, errors)
    check_flags(server, 50051, errors)
    check_flags(worker, 50061, errors)
    server_spec = server["spec"]["template"]["spec"]
    if not any(v.get("emptyDir") is not None for v in server_spec.get("volumes") or []):
        errors.append("server: no emptyDir for scratch")
    if worker_service["spec"].get("clusterIP") != "None" or \
            worker_service["spec"]["selector"] != WORKER:
        errors.append("worker Service must be headless and select the workers")
    if etcd["spec"].get("replicas") != 3 or not etcd["spec"].get("volumeClaimTemplates") or \
            etcd_service["spec"].get("clusterIP") != "None":
        errors.append("etcd: 3 members with volume claims behind a headless Service wanted")
    check_network_policies(objects, errors)
    # etcd holds tenants' ops and Run answers: clients only over TLS with certificates.
    etcd_args = etcd["spec"]["template"]["spec"]["containers"][0].get("args") or []
    if "--client-cert-auth" not in etcd_args or \
            not any(a.startswith("--listen-client-urls=https://") for a in etcd_args):
        errors.append("etcd: clients must come over TLS with certificates (https client URLs, "
                      "--client-cert-auth)")
    for obj in (server, worker):
        args = obj["spec"]["template"]["spec"]["containers"][0].get("args") or []
        if not all(any(a.startswith(f"--etcd_tls_{f}=") for a in args)
                   for f in ("ca", "cert", "key")):
            errors.append(f"{obj['metadata']['name']}: --etcd_tls_ca/cert/key wanted")
    for obj in (server, worker, etcd):
        for c in obj["spec"]["template"]["spec"]["containers"]:
            if c["image"].split(":")[0] in ("graphopt-server", "graphopt-worker", "graphopt-etcd"):
                errors.append(f"{obj['metadata']['name']}: the overlay does not set the image")
    worker_pod = worker["spec"]["template"]["spec"]
    worker_limits = (worker_pod["containers"][0].get("resources") or {}).get("limits") or {}
    if overlay == "gpu":
        if str(worker_limits.get("nvidia.com/gpu")) != "1":
            errors.append("gpu overlay: workers must ask for nvidia.com/gpu: 1")
        if not worker_pod.get("tolerations") or not worker_pod.get("nodeSelector"):
            errors.append("gpu overlay: workers need a toleration and a nodeSelector")
    elif any("nvidia.com/gpu" in str(c.get("resources")) for c in worker_pod["containers"]):
        errors.append(f"{overlay}: GPUs asked for outside the gpu overlay")
    if overlay in ("prod", "gpu"):
        for obj in (server, worker, etcd):
            spec = obj["spec"]["template"]["spec"]
            if not (spec.get("affinity") or {}).get("podAntiAffinity") or \
                    not spec.get("topologySpreadConstraints"):
                errors.append(f"{overlay}: {obj['metadata']['name']} needs pod anti-affinity "
                              "and topology spread constraints")
    return errors


def referenced_secrets(objects):
    names = set()
    for obj in objects:
        spec = (obj.get("spec") or {}).get("template", {}).get("spec", {})
        for v in spec.get("volumes") or []:
            if "secret" in v:
                names.add(v["secret"]["secretName"])
    return names


# --- The checks --------------------------------------------------------------------------------

def render_and_validate(tree, overlay):
    objects = kustomize_lite.render(os.path.join(tree, "overlays", overlay))
    validate(objects, f"overlays/{overlay}")
    log(f"overlays/{overlay}: {len(objects)} objects valid against Kubernetes {K8S_VERSION} "
        f"(strict): {sorted({o['kind'] for o in objects})}")
    return objects


def keeps_the_rules(objects, overlay, tree):
    errors = policy_errors(objects, overlay)
    assert not errors, "\n".join(errors)
    secrets = referenced_secrets(objects)
    if overlay == "dev":
        made = {o["metadata"]["name"] for o in objects if o["kind"] == "Secret"}
        assert secrets <= made, f"dev overlay lacks Secrets {secrets - made}"
    else:
        with open(os.path.join(tree, "overlays/prod/secrets.template.yaml")) as f:
            template = {d["metadata"]["name"] for d in yaml.safe_load_all(f) if d}
        assert secrets <= template, f"secrets.template.yaml lacks {secrets - template}"
    server = find(objects, "Deployment", "graphopt-server")
    log(f"overlays/{overlay}: {server['spec']['replicas']} server replicas, HPA "
        f"{find(objects, 'HorizontalPodAutoscaler', 'graphopt-server')['spec']['minReplicas']}.."
        f"{find(objects, 'HorizontalPodAutoscaler', 'graphopt-server')['spec']['maxReplicas']}, "
        f"{find(objects, 'Deployment', 'graphopt-worker')['spec']['replicas']} workers")


def rules_can_fail(objects):
    """Breaks a rendered overlay in each way the rules forbid; each must be reported."""
    def broken(change):
        objs = copy.deepcopy(objects)
        change(objs)
        return policy_errors(objs, "prod")

    def server(objs):
        return find(objs, "Deployment", "graphopt-server")

    def container(objs, name="graphopt-server"):
        return find(objs, "Deployment", name)["spec"]["template"]["spec"]["containers"][0]

    cases = {
        "one replica": lambda o: server(o)["spec"].update(replicas=1),
        "writable root": lambda o: container(o)["securityContext"].update(
            readOnlyRootFilesystem=False),
        "root user": lambda o: server(o)["spec"]["template"]["spec"]["securityContext"].update(
            runAsUser=0),
        "no readiness probe": lambda o: container(o).pop("readinessProbe"),
        "no limits": lambda o: container(o, "graphopt-worker")["resources"].pop("limits"),
        "no worker NetworkPolicy": lambda o: o.remove(find(o, "NetworkPolicy", "graphopt-worker")),
        "workers open to all": lambda o: find(o, "NetworkPolicy", "graphopt-worker")["spec"][
            "ingress"].append({"ports": [{"port": 50061}]}),
        "GPU outside gpu": lambda o: container(o, "graphopt-worker")["resources"]["limits"].update(
            {"nvidia.com/gpu": "1"}),
        "no anti-affinity": lambda o: server(o)["spec"]["template"]["spec"].pop("affinity"),
        "no metrics flag": lambda o: container(o)["args"].remove("--metrics_listen=0.0.0.0:9090"),
        "plaintext etcd": lambda o: find(o, "StatefulSet", "graphopt-etcd")["spec"]["template"][
            "spec"]["containers"][0]["args"].remove("--client-cert-auth"),
        "no TLS to etcd": lambda o: container(o, "graphopt-worker")["args"].remove(
            "--etcd_tls_ca=/etc/graphopt/tls/ca.crt"),
    }
    assert not policy_errors(objects, "prod"), "the unbroken overlay must pass"
    for what, change in cases.items():
        errors = broken(change)
        assert errors, f"breaking the overlay ({what}) went unnoticed"
        log(f"broken on purpose ({what}): {errors[0]}")


def canonical(obj):
    """For comparing renderings: name-keyed lists sorted, Secret data decoded."""
    if isinstance(obj, dict):
        out = {k: canonical(v) for k, v in obj.items()}
        if obj.get("kind") == "Secret" and "data" in obj:
            out["data"] = {k: base64.b64decode("".join(v.split())) for k, v in obj["data"].items()}
        return out
    if isinstance(obj, list):
        items = [canonical(i) for i in obj]
        if items and all(isinstance(i, dict) and "name" in i for i in items):
            items.sort(key=lambda i: str(i["name"]))
        return items
    return obj


def same_as_kubectl(tree, overlay, kubectl):
    r = subprocess.run([kubectl, "kustomize", os.path.join(tree, "overlays", overlay)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, f"kubectl kustomize: {r.stderr}"

    def by_key(objs):
        return {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]):
                canonical(o) for o in objs if o}

    theirs = by_key(yaml.safe_load_all(r.stdout))
    ours = by_key(kustomize_lite.render(os.path.join(tree, "overlays", overlay)))
    assert set(ours) == set(theirs), f"objects differ: {set(ours) ^ set(theirs)}"
    differ = [k for k in ours if ours[k] != theirs[k]]
    assert not differ, f"kustomize_lite and kubectl differ on {differ}"
    log(f"overlays/{overlay}: kubectl kustomize renders the same {len(ours)} objects")


def more_replicas_in_prod(rendered):
    replicas = {o: find(rendered[o], "Deployment", "graphopt-server")["spec"]["replicas"]
                for o in ("dev", "prod")}
    assert replicas["prod"] > replicas["dev"], f"server replicas {replicas}"


def kubectl_with_kustomize():
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        return None, "kubectl is not installed: rendered by kustomize_lite alone"
    r = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True,
                       timeout=60)
    if "Kustomize Version: v5" not in r.stdout:
        return None, f"kubectl has no kustomize v5 ({r.stdout.strip()[:120]!r})"
    return kubectl, None


def main():
    tree = k8s_tree()
    checks.run("manifest_files_valid_k8s_1_29_strict", validate_manifest_files, tree)
    checks.run("base_renders_valid", lambda: validate(
        kustomize_lite.render(os.path.join(tree, "base")), "base"))
    rendered = {}
    for overlay in OVERLAYS:
        objects = checks.run(f"overlay_{overlay}_renders_valid_k8s_1_29_strict",
                             render_and_validate, tree, overlay)
        if objects is not None:
            rendered[overlay] = objects
            checks.run(f"overlay_{overlay}_keeps_the_rules", keeps_the_rules, objects, overlay,
                       tree)
    if "prod" in rendered:
        checks.run("rules_catch_broken_manifests", rules_can_fail, rendered["prod"])
    kubectl, why_not = kubectl_with_kustomize()
    for overlay in OVERLAYS:
        name = f"overlay_{overlay}_same_as_kubectl_kustomize"
        if kubectl is None:
            checks.skip(name, why_not)
        else:
            checks.run(name, same_as_kubectl, tree, overlay, kubectl)
    if "dev" in rendered and "prod" in rendered:
        checks.run("prod_has_more_server_replicas_than_dev", more_replicas_in_prod, rendered)
    checks.finish()


if __name__ == "__main__":
    main()
