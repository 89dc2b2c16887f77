"""Renders a kustomization the way `kubectl kustomize` does, for the few features deploy/k8s
uses, so the manifest test needs no kubectl (Debian 12's kubernetes-client is 1.20, whose
kustomize predates most of them). Where kubectl is installed the test renders with both and
compares them.

Supported: resources (files and kustomization folders), namespace, images (newName, newTag,
digest), patches (strategic-merge patches by path or inline, matched by kind and name),
secretGenerator (files, literals, type) with generatorOptions.disableNameSuffixHash: true.
Anything else in a kustomization is an error, never silently ignored.

  python3 kustomize_lite.py DIR   prints the rendered YAML
"""

import base64
import copy
import os
import sys

import yaml

SUPPORTED = {"apiVersion", "kind", "resources", "namespace", "images", "patches",
             "secretGenerator", "generatorOptions"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition",
                  "PersistentVolume", "StorageClass", "PriorityClass", "IngressClass"}
# Strategic-merge keys of the list fields deploy/k8s patches (from the Kubernetes API's
# patchMergeKey); other lists are replaced whole, as the API does for lists without a key.
MERGE_KEYS = {"containers": "name", "initContainers": "name", "env": "name", "volumes": "name",
              "volumeMounts": "mountPath", "imagePullSecrets": "name",
              "topologySpreadConstraints": "topologyKey"}


class KustomizeError(Exception):
    pass


def _load_docs(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def _merge_key(field, items):
    if field == "ports":  # containers' ports merge on containerPort, Services' on port
        if all(isinstance(i, dict) and "containerPort" in i for i in items):
            return "containerPort"
        return "port" if all(isinstance(i, dict) and "port" in i for i in items) else None
    return MERGE_KEYS.get(field)


def strategic_merge(base, patch, field=None):
    """`patch` merged into `base` (both left unchanged): maps key by key, a null deletes, keyed
    lists item by item (new items appended), other values replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = copy.deepcopy(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            elif key in out:
                out[key] = strategic_merge(out[key], value, key)
            else:
                out[key] = copy.deepcopy(value)
        return out
    if isinstance(base, list) and isinstance(patch, list):
        key = _merge_key(field, base + patch)
        if key is None or not all(isinstance(i, dict) and key in i for i in base + patch):
            return copy.deepcopy(patch)
        out = copy.deepcopy(base)
        index = {item[key]: i for i, item in enumerate(out)}
        for item in patch:
            if item[key] in index:
                out[index[item[key]]] = strategic_merge(out[index[item[key]]], item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def _pod_specs(obj):
    spec = obj.get("spec") or {}
    if obj.get("kind") == "Pod":
        yield spec
    elif obj.get("kind") == "CronJob":
        yield ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template", {}).get("spec", {})
    elif "template" in spec:
        yield (spec["template"] or {}).get("spec") or {}


def _split_image(image):
    digest = ""
    if "@" in image:
        image, digest = image.split("@", 1)
    tag = ""
    slash = image.rfind("/")
    colon = image.rfind(":")
    if colon > slash:
        image, tag = image[:colon], image[colon + 1:]
    return image, tag, digest


def _set_images(objects, images):
    for obj in objects:
        for pod in _pod_specs(obj):
            for c in (pod.get("containers") or []) + (pod.get("initContainers") or []):
                name, tag, digest = _split_image(c.get("image", ""))
                for rule in images:
                    if rule["name"] != name:
                        continue
                    name = rule.get("newName", name)
                    tag = str(rule.get("newTag", tag))
                    digest = rule.get("digest", digest)
                    c["image"] = name + (f":{tag}" if tag and not rule.get("digest") else "") + (
                        f"@{digest}" if digest else "")
                    break


def _generate_secret(folder, spec, options):
    if not options.get("disableNameSuffixHash"):
        raise KustomizeError("kustomize-lite needs generatorOptions.disableNameSuffixHash: true")
    data = {}
    for entry in spec.get("files", []):
        key, sep, path = entry.partition("=")
        if not sep:
            key, path = os.path.basename(entry), entry
        with open(os.path.join(folder, path), "rb") as f:
            data[key] = base64.b64encode(f.read()).decode()
    for entry in spec.get("literals", []):
        key, _, value = entry.partition("=")
        data[key] = base64.b64encode(value.encode()).decode()
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": spec["name"]},
            "type": spec.get("type", "Opaque"), "data": data}


def _find(objects, kind, name):
    found = [o for o in objects if o.get("kind") == kind and o["metadata"].get("name") == name]
    if len(found) != 1:
        raise KustomizeError(f"patch target {kind}/{name}: {len(found)} matches")
    return found[0]


def render(folder):
    """The objects `folder`'s kustomization.yaml produces, in kustomize's order of resources."""
    path = os.path.join(folder, "kustomization.yaml")
    if not os.path.exists(path):
        raise KustomizeError(f"{folder}: no kustomization.yaml")
    with open(path) as f:
        k = yaml.safe_load(f) or {}
    unknown = set(k) - SUPPORTED
    if unknown:
        raise KustomizeError(f"{path}: kustomize-lite does not support {sorted(unknown)}")
    objects = []
    for resource in k.get("resources", []):
        target = os.path.normpath(os.path.join(folder, resource))
        objects += render(target) if os.path.isdir(target) else _load_docs(target)
    for spec in k.get("secretGenerator", []):
        objects.append(_generate_secret(folder, spec, k.get("generatorOptions") or {}))
    for p in k.get("patches", []):
        if set(p) - {"path", "patch"}:
            raise KustomizeError(f"{path}: patch options {sorted(set(p) - {'path', 'patch'})}")
        docs = _load_docs(os.path.join(folder, p["path"])) if "path" in p else [
            yaml.safe_load(p["patch"])]
        for doc in docs:
            target = _find(objects, doc["kind"], doc["metadata"]["name"])
            merged = strategic_merge(target, doc)
            target.clear()
            target.update(merged)
    _set_images(objects, k.get("images", []))
    if "namespace" in k:
        for obj in objects:
            if obj.get("kind") not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = k["namespace"]
    return objects


def patch_paths(folder):
    """The patch files of `folder`'s kustomization (partial objects, not manifests)."""
    with open(os.path.join(folder, "kustomization.yaml")) as f:
        k = yaml.safe_load(f) or {}
    return {os.path.normpath(os.path.join(folder, p["path"])) for p in k.get("patches", [])
            if "path" in p}


if __name__ == "__main__":
    yaml.safe_dump_all(render(sys.argv[1]), sys.stdout, sort_keys=False)
