#!/usr/bin/env python3
"""Helm's own engine for tests/it/helm_chart.rs, which holds every assertion.

helm-python-sdk binds Helm 4's Go SDK (libhelm; no cluster, no network); kubernetes-validate
ships the Kubernetes OpenAPI schemas of each release. This shim only passes requests through:
a JSON list on stdin, one JSON answer per request on stdout, in order.

  {"op": "render", "values": {...}}           -> {"manifests": {template: text}} | {"error": ...}
  {"op": "schema", "values": {...}}           -> {} | {"error": ...}   (values.schema.json)
  {"op": "lint", "values": {...}}             -> {"problems": [...]}   (helm lint --strict)
  {"op": "kube", "object": {...}, "version"}  -> {} | {"error": ...} | {"unknown": ...}
  {"op": "version"}                           -> {"helm": ..., "sdk": ...}
Render and schema run as `helm install garm CHART -n garm` would.
"""

import json
import pathlib
import sys

import helm_python as helm
import kubernetes_validate

CHART = str(pathlib.Path(__file__).resolve().parents[2] / "deploy/helm/garm-provider-edge-connect")


def answer(chart, request: dict) -> dict:
    op = request["op"]
    values = request.get("values")
    try:
        if op == "render":
            return {"manifests": chart.render(values, name="garm", namespace="garm", is_install=True)}
        if op == "schema":
            chart.validate_schema(values)
            return {}
        if op == "lint":
            report = helm.lint(CHART, values, strict=True, namespace="garm")
            return {"problems": [m for m in report["messages"] if m["severity"] >= 2] + report.get("errors", [])}
        if op == "kube":
            kubernetes_validate.validate(request["object"], request["version"], strict=True)
            return {}
        if op == "version":
            return {"helm": helm.helm_sdk_version(), "sdk": helm.__version__}
    except helm.HelmError as e:
        return {"error": str(e), "type": type(e).__name__}
    except kubernetes_validate.ValidationError as e:
        return {"error": f"{'.'.join(map(str, e.path))}: {e.message}"}
    except kubernetes_validate.SchemaNotFoundError as e:
        return {"unknown": str(e)}
    return {"error": f"unknown op {op}"}


def main() -> None:
    chart = helm.Chart.load(CHART)
    json.dump([answer(chart, r) for r in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
