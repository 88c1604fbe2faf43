{{/* The objects' base name: "garm" for a release named garm, as deploy/kubernetes/ names them. */}}
{{- define "gpec.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "garm" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (.Values.nameOverride | default "garm") | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "gpec.selectorLabels" -}}
app.kubernetes.io/name: {{ .Values.nameOverride | default "garm" }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpec.labels" -}}
{{ include "gpec.selectorLabels" . }}
app.kubernetes.io/part-of: garm
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Paths shared by GARM's [[provider]] entry and the pod's mounts (config/garm-provider.snippet.toml). */}}
{{- define "gpec.providerPath" -}}/opt/garm/providers.d/garm-provider-edge-connect{{- end -}}
{{- define "gpec.providerConfigPath" -}}/etc/garm/edge-connect-provider-config.toml{{- end -}}
{{- define "gpec.credentialsDir" -}}/etc/garm-creds{{- end -}}

{{/*
One TOML table's keys whose values are not tables: strings, numbers, booleans and arrays of
strings. toJson writes each as valid TOML (JSON's string escapes are a subset of TOML's basic
string escapes; JSON numbers, true/false and arrays of strings are TOML too). A null (a key
removed with --set key=null) is left out.
*/}}
{{- define "gpec.tomlKeys" -}}
{{- range $key, $value := . }}
{{- if and (not (kindIs "map" $value)) (not (kindIs "invalid" $value)) }}
{{ $key }} = {{ toJson $value }}
{{- end }}
{{- end }}
{{- end -}}

{{/* The provider config as TOML: top-level keys, [edge_connect], then its subtables (zone, cloudlet). */}}
{{- define "gpec.providerToml" -}}
{{- $config := deepCopy .Values.provider.config -}}
{{- $_ := set $config "credentials_file" (printf "%s/credentials.toml" (include "gpec.credentialsDir" .)) -}}
{{- $edge := $config.edge_connect | default dict -}}
{{- $_ := unset $config "edge_connect" -}}
# Written by the Helm chart garm-provider-edge-connect from .Values.provider.config.
{{- include "gpec.tomlKeys" $config }}

[edge_connect]
{{- include "gpec.tomlKeys" $edge }}
{{- range $table, $keys := $edge }}
{{- if kindIs "map" $keys }}

[edge_connect.{{ $table }}]
{{- include "gpec.tomlKeys" $keys }}
{{- end }}
{{- end }}
{{ end -}}

{{- define "gpec.garmToml" -}}
{{- $g := .Values.garm -}}
[default]
enable_webhook_management = {{ $g.enableWebhookManagement }}

[logging]
# No log_file: GARM logs to stdout, which `kubectl logs` reads.
log_format = {{ toJson $g.logFormat }}
log_level = {{ toJson $g.logLevel }}

[metrics]
enable = {{ $g.metrics.enable }}
disable_auth = {{ $g.metrics.disableAuth }}

[jwt_auth]
secret = {{ toJson $g.jwtSecret }}
time_to_live = {{ toJson $g.jwtTimeToLive }}

[apiserver]
bind = "0.0.0.0"
port = {{ $g.port | int }}
use_tls = false
  [apiserver.webui]
  enable = {{ $g.webui }}

[database]
backend = "sqlite3"
passphrase = {{ toJson $g.dbPassphrase }}
  [database.sqlite3]
  db_file = "/var/lib/garm/garm.db"
  busy_timeout_seconds = 5

[[provider]]
name = {{ toJson .Values.provider.name }}
provider_type = "external"
description = {{ toJson .Values.provider.description }}
  [provider.external]
  provider_executable = {{ include "gpec.providerPath" . | toJson }}
  config_file = {{ include "gpec.providerConfigPath" . | toJson }}
  interface_version = {{ toJson .Values.provider.interfaceVersion }}
  environment_variables = {{ toJson .Values.provider.environmentVariables }}
{{ end -}}

{{- define "gpec.image" -}}
{{- printf "%s:%s" .repository (.tag | default .appVersion) -}}
{{- end -}}
