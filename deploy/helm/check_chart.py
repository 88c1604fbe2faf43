#!/usr/bin/env python3
"""Proves the Helm chart with Helm itself (tests/it/helm_chart.rs runs this; docs/packaging.md).

For the default values and each example in garm-provider-edge-connect/examples/:
  - `helm lint --strict` and values.schema.json, through Helm 4's own Go engine (helm-python-sdk
    binds libhelm; no cluster, no network);
  - the chart rendered by that engine; every object checked against the Kubernetes OpenAPI schema
    of its kind (kubernetes-validate ships them), strict: unknown fields are errors;
  - the rendered provider config read by the provider binary itself (PROVIDER
    validate-extra-specs --config, which loads and validates the config without any network);
  - GARM's rendered config.toml: its [[provider]] names the paths the pod mounts.
With metrics.enabled (examples/metrics.yaml, and examples/installer.yaml with it set): the
provider-metrics sidecar runs the provider's own binary from the image it comes from, on the
events file GARM's container names, behind the Service and the optional ServiceMonitor, and the
dashboard's ConfigMap holds dashboards/edge-connect-provider.json. A ServiceMonitor is not
checked against its CRD's schema (no offline copy): it prints UNCHECKED.
Then: values the schema must refuse, a rendered config the provider must refuse, the provider
part of values.schema.json equal to `PROVIDER schema config`, and the chart's objects equal to
deploy/kubernetes/ (kubectl kustomize) where they overlap, without and with the metrics
component (as its kustomization.yaml's `components: [metrics]` enables it).

Usage: check_chart.py PROVIDER_BINARY [--write-schema]
One line per check, then "N passed, M failed"; exit 1 if any failed.
"""

from __future__ import annotations

import copy
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import tomllib

HERE = pathlib.Path(__file__).resolve().parent
CHART = HERE / "garm-provider-edge-connect"
REPO = HERE.parent.parent
KUSTOMIZE = REPO / "deploy" / "kubernetes"
# The Kubernetes version whose schemas the objects are checked against: the newest that
# kubernetes-validate ships a schema for, at least this one.
KUBE_VERSION = "1.33.0"
# Paths GARM's [[provider]] names and the pod mounts (config/garm-provider.snippet.toml).
PROVIDER_PATH = "/opt/garm/providers.d/garm-provider-edge-connect"
PROVIDER_CONFIG_PATH = "/etc/garm/edge-connect-provider-config.toml"
CREDENTIALS_PATH = "/etc/garm-creds/credentials.toml"
# What deploy/kubernetes/metrics/ adds (docs/operations.md, "Metrics").
EVENTS_ENV = "EDP_EDGE_CONNECT_METRICS_EVENTS_FILE"
METRICS_PORT = 9464
DASHBOARD = CHART / "dashboards" / "edge-connect-provider.json"
# Kinds of CRDs, whose schemas kubernetes-validate does not ship.
CRD_KINDS = {("monitoring.coreos.com/v1", "ServiceMonitor")}

passed = 0
failed = 0


def result(ok: bool, what: str, detail: str = "") -> bool:
    global passed, failed
    if ok:
        passed += 1
        print(f"PASS {what}")
    else:
        failed += 1
        print(f"FAIL {what}: {' '.join(str(detail).split())[:1500]}")
    return ok


try:
    import helm_python as helm
    import kubernetes_validate
    import yaml
except ImportError as e:  # named, so that the test says what to install
    print(f"FAIL imports: {e}; install them with: bash .ci/helm-tools.sh")
    print("0 passed, 1 failed")
    sys.exit(1)


def provider_schema(provider: str) -> dict:
    """The provider's config schema, as it sits in values.schema.json: definitions at the root."""
    out = subprocess.run([provider, "schema", "config"], capture_output=True, text=True, check=True)
    schema = json.loads(out.stdout)
    definitions = schema.pop("definitions")
    schema.pop("$schema", None)
    schema.pop("title", None)
    return {"definitions": definitions, "config": schema}


def objects(manifests: dict[str, str]) -> list[dict]:
    found = []
    for path, text in sorted(manifests.items()):
        if path.endswith("NOTES.txt"):
            continue
        for doc in yaml.safe_load_all(text):
            if doc:
                found.append(doc)
    return found


def find(objs: list[dict], kind: str, name: str | None = None) -> dict | None:
    for o in objs:
        if o["kind"] == kind and (name is None or o["metadata"]["name"] == name):
            return o
    return None


def validate_provider_config(provider: str, text: str, workdir: pathlib.Path) -> tuple[bool, str]:
    """The provider's own loading and validation of a config file, offline: validate-extra-specs
    with --config loads the config whenever the pool names a pull password variable."""
    config = tomllib.loads(text)
    prefix = config.get("image_pull_password_env_prefix", "EDP_EDGE_CONNECT_REGISTRY_")
    (workdir / "provider.toml").write_text(text)
    (workdir / "pool.json").write_text(json.dumps({"image_pull_username": "robot", "image_pull_password_env": prefix + "PASSWORD"}))
    out = subprocess.run(
        [provider, "--config", str(workdir / "provider.toml"), "validate-extra-specs", str(workdir / "pool.json")],
        capture_output=True, text=True, env={"PATH": os.environ.get("PATH", "")}, timeout=60,
    )
    return out.returncode == 0, (out.stderr or out.stdout).strip()


def check_values(chart, provider: str, label: str, values: dict) -> list[dict]:
    try:
        chart.validate_schema(values)
        result(True, f"{label}: values.schema.json accepts the values")
    except helm.HelmError as e:
        result(False, f"{label}: values.schema.json accepts the values", e)
        return []
    with tempfile.TemporaryDirectory() as tmp:
        values_file = pathlib.Path(tmp) / "values.yaml"
        values_file.write_text(yaml.safe_dump(values))
        report = helm.lint(str(CHART), values, strict=True, namespace="garm")
        problems = [m for m in report["messages"] if m["severity"] >= 2] + [
            {"error": e} for e in report.get("errors", [])
        ]
        result(not problems, f"{label}: helm lint --strict", problems)
    try:
        manifests = chart.render(values, name="garm", namespace="garm", is_install=True)
    except helm.HelmError as e:
        result(False, f"{label}: helm template", e)
        return []
    objs = objects(manifests)
    result(bool(objs), f"{label}: helm template renders {len(objs)} objects")
    for o in objs:
        if (o["apiVersion"], o["kind"]) in CRD_KINDS:
            print(f"UNCHECKED {label}: {o['kind']}/{o['metadata']['name']}: no offline schema of the {o['apiVersion']} CRD")
            continue
        what = f"{label}: {o['kind']}/{o['metadata']['name']} is a valid {o['apiVersion']} {o['kind']} (Kubernetes {KUBE_VERSION})"
        try:
            kubernetes_validate.validate(o, KUBE_VERSION, strict=True)
            result(True, what)
        except kubernetes_validate.ValidationError as e:
            result(False, what, f"{e.path}: {e.message}" if hasattr(e, "path") else e)
        except Exception as e:  # an unknown kind or version is a failure too
            result(False, what, e)

    config_map = find(objs, "ConfigMap", "garm-edge-connect-provider-config")
    if result(config_map is not None, f"{label}: the provider config's ConfigMap"):
        text = config_map["data"]["edge-connect-provider-config.toml"]
        try:
            config = tomllib.loads(text)
            result(True, f"{label}: the provider config is TOML")
        except tomllib.TOMLDecodeError as e:
            result(False, f"{label}: the provider config is TOML", e)
            config = {}
        result(config.get("credentials_file") == CREDENTIALS_PATH,
               f"{label}: credentials_file is where the credentials Secret is mounted",
               config.get("credentials_file"))
        with tempfile.TemporaryDirectory() as tmp:
            ok, message = validate_provider_config(provider, text, pathlib.Path(tmp))
            result(ok, f"{label}: the provider validates the rendered config", message)

    deployment = find(objs, "Deployment")
    pod = deployment["spec"]["template"]["spec"] if deployment else {}
    volumes = {v["name"]: v for v in pod.get("volumes", [])}
    credentials = volumes.get("credentials", {}).get("secret", {})
    result(credentials.get("defaultMode") == 0o400 and "fsGroup" not in pod.get("securityContext", {}),
           f"{label}: the credentials file is mounted with mode 0400 and no fsGroup (the provider refuses group-readable credentials)",
           credentials)
    garm = pod.get("containers", [{}])[0]
    mounts = {m["mountPath"]: m for m in garm.get("volumeMounts", [])}
    result(os.path.dirname(CREDENTIALS_PATH) in mounts and "/etc/garm" in mounts,
           f"{label}: GARM's container mounts /etc/garm and the credentials directory", sorted(mounts))
    delivery = values.get("provider", {}).get("delivery", "image")
    if delivery == "installer":
        result(PROVIDER_PATH in mounts and pod.get("initContainers"),
               f"{label}: the init container's copy is mounted at {PROVIDER_PATH}", sorted(mounts))
    else:
        result(PROVIDER_PATH not in mounts and not pod.get("initContainers"),
               f"{label}: the provider comes from GARM's image, nothing is mounted over it", sorted(mounts))

    service = find(objs, "Service")
    for job in [o for o in objs if o["kind"] == "Job"]:
        job_labels = job["spec"]["template"]["metadata"].get("labels", {}).items()
        selector = (service or {}).get("spec", {}).get("selector", {}).items()
        result(not selector <= job_labels,
               f"{label}: Job/{job['metadata']['name']}'s pod is not selected by the Service (nor the Deployment)",
               dict(job_labels))

    garm_secret = find(objs, "Secret", "garm-config")
    if garm_secret is not None:
        try:
            garm_config = tomllib.loads(garm_secret["stringData"]["config.toml"])
            entry = garm_config["provider"][0]
            external = entry["external"]
            expected = {
                "provider_executable": PROVIDER_PATH,
                "config_file": PROVIDER_CONFIG_PATH,
                "interface_version": values.get("provider", {}).get("interfaceVersion", "v0.1.0"),
                "environment_variables": ["EDP_EDGE_CONNECT_"],
            }
            got = {k: external.get(k) for k in expected}
            result(entry["provider_type"] == "external" and got == expected,
                   f"{label}: GARM's [[provider]] has the mounted paths, interface_version and environment_variables", got)
        except (tomllib.TOMLDecodeError, KeyError, IndexError) as e:
            result(False, f"{label}: GARM's config.toml is TOML with one [[provider]]", e)
    check_metrics(label, values, objs, pod)
    return objs


def check_metrics(label: str, values: dict, objs: list[dict], pod: dict) -> None:
    """What metrics.enabled adds, and that nothing of it is there without."""
    metrics = values.get("metrics", {})
    containers = {c["name"]: c for c in pod.get("containers", [])}
    sidecar = containers.get("provider-metrics")
    service = find(objs, "Service", "garm-provider-metrics")
    monitor = find(objs, "ServiceMonitor")
    dashboard = find(objs, "ConfigMap", "garm-provider-dashboard")
    if not metrics.get("enabled"):
        result(sidecar is None and service is None and monitor is None and dashboard is None
               and "env" not in containers.get("garm", {}),
               f"{label}: without metrics.enabled no sidecar, events file, Service, ServiceMonitor or dashboard")
        return
    garm = containers.get("garm", {})
    env = {e["name"]: e.get("value") for e in garm.get("env", [])}
    events = env.get(EVENTS_ENV)
    if not result(sidecar is not None and events is not None,
                  f"{label}: GARM's container names the events file in {EVENTS_ENV} and the sidecar runs", env):
        return
    args = sidecar.get("args", [])

    def arg(flag: str):
        return args[args.index(flag) + 1] if flag in args and args.index(flag) + 1 < len(args) else None

    result(sidecar.get("command") == [PROVIDER_PATH] and args[:2] == ["metrics", "serve"]
           and arg("--events") == events and arg("--listen") == f"0.0.0.0:{METRICS_PORT}",
           f"{label}: the sidecar runs `{PROVIDER_PATH} metrics serve` on GARM's events file, listening on {METRICS_PORT}",
           [sidecar.get("command"), args])
    # The provider's binary comes from the installer image or GARM's; the sidecar's from the same.
    delivery = values.get("provider", {}).get("delivery", "image")
    source = (pod.get("initContainers") or [{}])[0] if delivery == "installer" else garm
    result(sidecar.get("image") == source.get("image") and sidecar.get("imagePullPolicy") == source.get("imagePullPolicy"),
           f"{label}: the sidecar's image is the one the provider comes from ({delivery})",
           [sidecar.get("image"), source.get("image")])
    # Each path on a volume both containers mount at the same place.
    for path, volume in ((events, "provider-logs"), (arg("--snapshot") or "", "data")):
        where = [next((m["mountPath"] for m in c.get("volumeMounts", []) if m["name"] == volume), None)
                 for c in (garm, sidecar)]
        result(where[0] is not None and where[0] == where[1] and path.startswith(where[0] + "/"),
               f"{label}: {path} is on the volume {volume}, mounted alike in GARM's container and the sidecar", where)
    probe = sidecar.get("readinessProbe", {}).get("httpGet", {})
    ports = {p["name"]: p["containerPort"] for p in sidecar.get("ports", [])}
    result(probe.get("path") == "/metrics" and ports.get(probe.get("port")) == METRICS_PORT,
           f"{label}: the sidecar is ready when /metrics answers on {METRICS_PORT}", [probe, ports])
    context = sidecar.get("securityContext", {})
    result(context.get("readOnlyRootFilesystem") is True and context.get("allowPrivilegeEscalation") is False
           and context.get("capabilities", {}).get("drop") == ["ALL"],
           f"{label}: the sidecar's root filesystem is read-only, without capabilities or privilege escalation", context)
    pod_labels = find(objs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    if result(service is not None, f"{label}: the Service garm-provider-metrics"):
        port = service["spec"]["ports"][0]
        result(service["spec"]["selector"].items() <= pod_labels.items()
               and port["port"] == METRICS_PORT and port["targetPort"] == "metrics",
               f"{label}: the Service selects GARM's pod and sends {METRICS_PORT} to the sidecar's port", service["spec"])
    if not metrics.get("serviceMonitor", {}).get("enabled"):
        result(monitor is None, f"{label}: no ServiceMonitor unless metrics.serviceMonitor.enabled")
    elif result(monitor is not None, f"{label}: the ServiceMonitor") and service is not None:
        endpoint = monitor["spec"]["endpoints"][0]
        result(monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
               and endpoint["port"] == service["spec"]["ports"][0]["name"] and endpoint["path"] == "/metrics",
               f"{label}: the ServiceMonitor selects the metrics Service and its port by name",
               [monitor["spec"], service["metadata"]["labels"]])
        # Only this Service: GARM's own has other ports.
        garm_service = find(objs, "Service", "garm")
        result(not monitor["spec"]["selector"]["matchLabels"].items() <= garm_service["metadata"]["labels"].items(),
               f"{label}: the ServiceMonitor does not select GARM's own Service")
    if not metrics.get("dashboard", {}).get("enabled"):
        result(dashboard is None, f"{label}: no dashboard ConfigMap unless metrics.dashboard.enabled")
    elif result(dashboard is not None, f"{label}: the dashboard's ConfigMap"):
        data = dashboard["data"].get("edge-connect-provider.json", "")
        wanted = metrics.get("dashboard", {}).get("labels", {"grafana_dashboard": "1"})
        result(json.loads(data) == json.loads(DASHBOARD.read_text())
               and wanted.items() <= dashboard["metadata"]["labels"].items(),
               f"{label}: the dashboard's ConfigMap holds {DASHBOARD.relative_to(CHART)} and carries the sidecar's label {wanted}",
               dashboard["metadata"]["labels"])


def check_refusals(chart, provider: str) -> None:
    """Values that must not install, and the layer that refuses each."""
    def deep(path: str, value) -> dict:
        out: dict = {}
        node = out
        parts = path.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = value
        return out

    refused_by_schema = [
        ("provider.config.edge_connect.request_timeout_secs", "60s"),
        ("provider.config.edge_connect.deployment", "vm"),
        ("provider.config.edge_connect.zone", {"name": "Munich", "zone": "Munich"}),
        ("provider.config.edge_connect.url", None),
        ("provider.config.log_levle", "info"),
        ("provider.config.log_level", "verbose"),
        ("provider.delivery", "copy"),
        ("provider.interfaceVersion", "v0.2.0"),
        ("garm.dbPassphrase", "too-short"),
        ("credentials.password", ""),
        ("init.enabled", True),
        ("persistence.size", "lots"),
        ("service.port", 0),
        ("metrics.enabled", "yes"),
        ("metrics.serviceMonitor.interval", "often"),
        ("metrics.dashboard.labels", {"grafana_dashboard": 1}),
    ]
    for path, value in refused_by_schema:
        values = deep(path, value)
        if value is None:
            # Not a removal (Helm's null): the whole url key given as a number instead.
            values = deep(path, 443)
        try:
            chart.validate_schema(values)
            result(False, f"schema refuses {path}={json.dumps(values)[:80]}", "accepted")
        except helm.HelmValuesError as e:
            result(True, f"schema refuses {path}={json.dumps(value)} ({str(e).splitlines()[-1].strip()[:100]})")
        except helm.HelmError as e:
            result(False, f"schema refuses {path}", f"unexpected error {e}")

    # What no schema can say, the provider's own validation says: both placements at once (a
    # cloudlet added without removing the default zone), plain http to a remote host.
    for label, values, expected in [
        ("a cloudlet beside the default zone",
         {"provider": {"config": {"edge_connect": {"cloudlet": {"organization": "TelekomOP", "name": "Munich"}}}}},
         "not both"),
        ("plain http to a remote host",
         {"provider": {"config": {"edge_connect": {"url": "http://hub.example.invalid"}}}},
         "plain http"),
    ]:
        manifests = chart.render(values, name="garm", namespace="garm", is_install=True)
        config_map = find(objects(manifests), "ConfigMap", "garm-edge-connect-provider-config")
        with tempfile.TemporaryDirectory() as tmp:
            ok, message = validate_provider_config(provider, config_map["data"]["edge-connect-provider-config.toml"], pathlib.Path(tmp))
        result(not ok and expected in message, f"the provider refuses the rendered config with {label}", message)

    # A template's refusal: the events file's variable would not reach the provider.
    try:
        chart.render({"metrics": {"enabled": True}, "provider": {"environmentVariables": ["EDP_OTHER_"]}},
                     name="garm", namespace="garm", is_install=True)
        result(False, "the chart refuses metrics.enabled without the EDP_EDGE_CONNECT_ prefix", "rendered")
    except helm.HelmError as e:
        result("keep EDP_EDGE_CONNECT_" in str(e),
               "the chart refuses metrics.enabled without the EDP_EDGE_CONNECT_ prefix", e)


def dashboard_provisionable() -> None:
    """Grafana's import prompt fills __inputs; a dashboard loaded from a ConfigMap gets none, so
    every ${...} data source must be a variable of the dashboard itself (grafana/grafana#10786)."""
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"] for v in dashboard.get("templating", {}).get("list", []) if v.get("type") == "datasource"}

    def sources(node):
        if isinstance(node, dict):
            if isinstance(node.get("datasource"), dict):
                yield node["datasource"].get("uid", "")
            for v in node.values():
                yield from sources(v)
        elif isinstance(node, list):
            for v in node:
                yield from sources(v)

    used = list(sources(dashboard))
    bad = sorted({u for u in used if u.removeprefix("${").removesuffix("}") not in variables})
    result("__inputs" not in dashboard and used and not bad,
           "the dashboard's data source is its own variable (it works loaded from a ConfigMap)",
           f"__inputs: {'__inputs' in dashboard}, unknown data sources: {bad}")


def every_key_covered(schema: dict, examples: dict[str, dict]) -> None:
    """Every key of the provider's config appears in the defaults or an example."""
    # zone and cloudlet are one type (SiteKey): a key of it is covered by either.
    def site(key: str) -> str:
        return key.replace("edge_connect.zone.", "edge_connect.SITE.").replace("edge_connect.cloudlet.", "edge_connect.SITE.")

    def keys(node: dict, prefix: str, definitions: dict) -> set[str]:
        out = set()
        for name, sub in node.get("properties", {}).items():
            out.add(prefix + name)
            for ref in [sub] + sub.get("anyOf", []) + sub.get("allOf", []):
                target = ref.get("$ref", "").rsplit("/", 1)[-1]
                if target and "properties" in definitions.get(target, {}):
                    out |= keys(definitions[target], prefix + name + ".", definitions)
        return out

    wanted = {site(k) for k in keys(schema["config"], "", schema["definitions"])}

    def given(node, prefix: str) -> set[str]:
        out = set()
        for k, v in (node or {}).items():
            out.add(prefix + k)
            if isinstance(v, dict):
                out |= given(v, prefix + k + ".")
        return out

    seen: set[str] = set()
    for values in examples.values():
        seen |= {site(k) for k in given(values.get("provider", {}).get("config"), "")}
    # credentials_file is the chart's own: it points at the mounted Secret.
    missing = sorted(wanted - seen - {"credentials_file"})
    result(not missing, "the defaults and examples set every key of the provider's config", f"never set: {missing}")


def differences(a, b, path: str = "") -> list[str]:
    """Where two JSON values differ, as short path: kustomize=... helm=... lines."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            out += differences(a.get(k), b.get(k), f"{path}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, f"{path}[{i}]")
        return out
    return [] if a == b else [f"{path}: kustomize={json.dumps(a)[:120]} helm={json.dumps(b)[:120]}"]


def kustomize_parity(objs: list[dict], components: list[str]) -> None:
    """The chart's objects for examples/installer.yaml (with metrics.enabled: plus the component
    metrics) equal deploy/kubernetes/'s, for a release garm in the namespace garm, except for what
    only labels and Helm add."""
    kit_label = "deploy/kubernetes" + "".join(f" + component {c}" for c in components)
    with tempfile.TemporaryDirectory() as tmp:
        # The kit as a user enables a component: in its own kustomization.yaml, so that its
        # namespace and images apply to what the component adds.
        root = pathlib.Path(tmp) / "kubernetes"
        shutil.copytree(KUSTOMIZE, root)
        kustomization = yaml.safe_load((root / "kustomization.yaml").read_text())
        if components:
            kustomization["components"] = components
        (root / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
        try:
            out = subprocess.run(["kubectl", "kustomize", str(root)], capture_output=True, text=True, timeout=120)
        except FileNotFoundError:
            result(False, f"kubectl kustomize {kit_label}", "kubectl is not installed")
            return
    if not result(out.returncode == 0, f"kubectl kustomize {kit_label}", out.stderr):
        return
    kit = [o for o in yaml.safe_load_all(out.stdout) if o and o["kind"] != "Namespace"]

    def normal(o: dict) -> dict:
        o = copy.deepcopy(o)
        meta = o["metadata"]
        o["metadata"] = {"name": meta["name"]}
        if meta.get("annotations"):
            o["metadata"]["annotations"] = meta["annotations"]
        for key in ("data", "stringData"):
            for file, text in (o.get(key) or {}).items():
                if file.endswith(".toml"):
                    o[key][file] = tomllib.loads(text)
        if o["kind"] == "Deployment":
            o["spec"].pop("selector", None)
            o["spec"]["template"]["metadata"] = {}
        if o["kind"] == "Service":
            o["spec"].pop("selector", None)
            o["spec"].setdefault("type", "ClusterIP")
        return o

    for mine in kit:
        kind, name = mine["kind"], mine["metadata"]["name"]
        theirs = find(objs, kind, name)
        if theirs is None:
            result(False, f"kustomize parity ({kit_label}): {kind}/{name}", "the chart renders no such object")
            continue
        a, b = normal(mine), normal(theirs)
        if kind == "PersistentVolumeClaim":
            b["metadata"] = a["metadata"]
        same = a == b
        detail = "" if same else "; ".join(differences(a, b))
        result(same, f"kustomize parity ({kit_label}): {kind}/{name} is the same object in both kits", detail)
    # The selector still selects the kit's pods: the chart's selector labels include the kit's.
    deployment = find(objs, "Deployment", "garm")
    kit_deployment = find(kit, "Deployment", "garm")
    if deployment and kit_deployment:
        kit_labels = kit_deployment["spec"]["selector"]["matchLabels"].items()
        result(kit_labels <= deployment["spec"]["template"]["metadata"]["labels"].items(),
               f"kustomize parity ({kit_label}): the chart's pods carry the kit's selector labels")


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    provider = sys.argv[1]
    schema_file = CHART / "values.schema.json"
    wanted = provider_schema(provider)
    if "--write-schema" in sys.argv[2:]:
        schema = json.loads(schema_file.read_text())
        schema["definitions"] = wanted["definitions"]
        schema["properties"]["provider"]["properties"]["config"] = wanted["config"]
        schema_file.write_text(json.dumps(schema, indent=2) + "\n")
        print(f"wrote {schema_file}")
        return 0

    print(f"helm engine: Helm {helm.helm_sdk_version()} (helm-python-sdk {helm.__version__})")
    schema = json.loads(schema_file.read_text())
    have = {"definitions": schema.get("definitions"), "config": schema["properties"]["provider"]["properties"]["config"]}
    result(have == wanted, "values.schema.json's provider.config is the provider's own config schema",
           "run: python3 deploy/helm/check_chart.py target/debug/garm-provider-edge-connect --write-schema")

    chart = helm.Chart.load(str(CHART))
    cargo_version = tomllib.loads((REPO / "Cargo.toml").read_text())["package"]["version"]
    result(chart.metadata.get("appVersion") == f"v{cargo_version}",
           f"Chart.yaml's appVersion is the provider's version v{cargo_version} (the images' tag)",
           chart.metadata.get("appVersion"))
    examples = {"default values": {}}
    for path in sorted((CHART / "examples").glob("*.yaml")):
        examples[f"examples/{path.name}"] = yaml.safe_load(path.read_text()) or {}
    installer_metrics = "examples/installer.yaml + metrics.enabled"
    examples[installer_metrics] = {**examples["examples/installer.yaml"], "metrics": {"enabled": True}}
    rendered = {}
    for label, values in examples.items():
        rendered[label] = check_values(chart, provider, label, values)
    every_key_covered(wanted, {"defaults": chart.values, **examples})
    check_refusals(chart, provider)
    dashboard_provisionable()
    kustomize_parity(rendered.get("examples/installer.yaml", []), [])
    kustomize_parity(rendered.get(installer_metrics, []), ["metrics"])
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
