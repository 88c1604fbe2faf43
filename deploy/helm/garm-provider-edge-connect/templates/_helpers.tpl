{{/* The objects' base name: "garm" for a release named garm. */}}
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
A value as JSON that no character can break or extend, read alike by TOML and YAML, whether
written straight into YAML or into a TOML file that is written into YAML. toJson escapes quotes,
backslashes, C0 controls and U+2028/U+2029 in the way TOML's basic strings and YAML's
double-quoted scalars both read (JSON's string escapes are a subset of each); what it leaves raw
is escaped here too: DEL, which TOML forbids raw, and the C1 controls (NEL, U+0085, among them),
the byte order mark and U+FFFE/U+FFFF, which YAML does not print or reads as a line break.
Numbers, booleans and arrays of strings are TOML as JSON writes them; any JSON is YAML.
(toYaml is not used for values: it renders nothing at all for a value with DEL or a C1 control,
and a raw NEL or U+2028 for others.)
*/}}
{{- define "gpec.json" -}}
{{- $out := toJson . -}}
{{- range $code := concat (untilStep 127 160 1) (list 65279 65534 65535) -}}
{{- $out = replace (printf "%c" $code) (printf "\\u%04x" $code) $out -}}
{{- end -}}
{{- $out -}}
{{- end -}}

{{/*
A map or list of the values as YAML lines, each key or item's value as gpec.json: for nindent.
*/}}
{{- define "gpec.yaml" -}}
{{- if kindIs "slice" . -}}
{{- range $i, $v := . }}{{ if $i }}{{ "\n" }}{{ end }}- {{ include "gpec.json" $v }}{{ end -}}
{{- else -}}
{{- $first := true -}}
{{- range $k, $v := . }}{{ if not $first }}{{ "\n" }}{{ end }}{{ $first = false }}{{ include "gpec.json" $k }}: {{ include "gpec.json" $v }}{{ end -}}
{{- end -}}
{{- end -}}

{{/*
One TOML table's keys whose values are not tables. A null (a key removed with --set key=null) is
left out. The keys are the provider's own (values.schema.json admits no other).
*/}}
{{- define "gpec.tomlKeys" -}}
{{- range $key, $value := . }}
{{- if and (not (kindIs "map" $value)) (not (kindIs "invalid" $value)) }}
{{ $key }} = {{ include "gpec.json" $value }}
{{- end }}
{{- end }}
{{- end -}}

{{/*
The provider config as TOML: top-level keys, [edge_connect], then its subtables (zone, cloudlet),
then [site_cache] from siteCache, the one place that says whether there is a site cache, so
that the provider's config and the chart's CronJobs never disagree.
*/}}
{{- define "gpec.providerToml" -}}
{{- if hasKey .Values.provider.config "site_cache" -}}
{{- fail "provider.config.site_cache: set siteCache.enabled, siteCache.registryMirror, siteCache.actionsCache, siteCache.flavor, siteCache.registryImage and siteCache.actionsCacheImage instead; the chart writes [site_cache] from them and runs the site cache's CronJobs by siteCache.enabled" -}}
{{- end -}}
{{- $config := deepCopy .Values.provider.config -}}
{{- if eq .Values.credentials.source "file" -}}
{{- $_ := set $config "credentials_file" (printf "%s/credentials.toml" (include "gpec.credentialsDir" .)) -}}
{{- end -}}
{{- $edge := $config.edge_connect | default dict -}}
{{- $_ := required "provider.config.edge_connect.url: set your Edge Connect's base URL (without /api/v1)" $edge.url -}}
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
{{- with (include "gpec.siteCache" . | fromJson) }}

[site_cache]
{{- include "gpec.tomlKeys" . }}
{{- end }}
{{ end -}}

{{/*
The provider's [site_cache] keys from siteCache, as JSON ({} when it is off); an empty image or
flavor is left out for the provider's default. Refuses a cache with no service.
*/}}
{{- define "gpec.siteCache" -}}
{{- $sc := .Values.siteCache -}}
{{- $keys := dict -}}
{{- if $sc.enabled -}}
{{- if not (or $sc.registryMirror $sc.actionsCache) -}}
{{- fail "siteCache.enabled: set siteCache.registryMirror or siteCache.actionsCache to true, or siteCache.enabled to false (a site cache with neither service has nothing to run)" -}}
{{- end -}}
{{- $keys = dict "registry_mirror" $sc.registryMirror "actions_cache" $sc.actionsCache -}}
{{- range $key, $value := dict "flavor" $sc.flavor "registry_image" $sc.registryImage "actions_cache_image" $sc.actionsCacheImage -}}
{{- if $value }}{{ $_ := set $keys $key $value }}{{ end -}}
{{- end -}}
{{- end -}}
{{- toJson $keys -}}
{{- end -}}

{{- define "gpec.garmToml" -}}
{{- $g := .Values.garm -}}
[default]
enable_webhook_management = {{ $g.enableWebhookManagement }}

[logging]
# No log_file: GARM logs to stdout, which `kubectl logs` reads.
log_format = {{ include "gpec.json" $g.logFormat }}
log_level = {{ include "gpec.json" $g.logLevel }}

[metrics]
enable = {{ $g.metrics.enable }}
disable_auth = {{ $g.metrics.disableAuth }}

[jwt_auth]
secret = {{ include "gpec.json" $g.jwtSecret }}
time_to_live = {{ include "gpec.json" $g.jwtTimeToLive }}

[apiserver]
bind = "0.0.0.0"
port = {{ $g.port | int }}
use_tls = false
  [apiserver.webui]
  enable = {{ $g.webui }}

[database]
backend = "sqlite3"
passphrase = {{ include "gpec.json" $g.dbPassphrase }}
  [database.sqlite3]
  db_file = "/var/lib/garm/garm.db"
  busy_timeout_seconds = 5

[[provider]]
name = {{ include "gpec.json" .Values.provider.name }}
provider_type = "external"
description = {{ include "gpec.json" .Values.provider.description }}
  [provider.external]
  provider_executable = {{ include "gpec.json" (include "gpec.providerPath" .) }}
  config_file = {{ include "gpec.json" (include "gpec.providerConfigPath" .) }}
  interface_version = {{ include "gpec.json" .Values.provider.interfaceVersion }}
  environment_variables = {{ include "gpec.json" .Values.provider.environmentVariables }}
{{ end -}}

{{- define "gpec.image" -}}
{{- printf "%s:%s" .repository (.tag | default .appVersion) | quote -}}
{{- end -}}

{{/* The pod's ServiceAccount. */}}
{{- define "gpec.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- .Values.serviceAccount.name | default (include "gpec.fullname" .) -}}
{{- else -}}
{{- .Values.serviceAccount.name | default "default" -}}
{{- end -}}
{{- end -}}

{{/* The Secret with the Edge Connect credentials (and the site cache's secret). */}}
{{- define "gpec.credentialsSecret" -}}
{{- .Values.credentials.existingSecret | default (printf "%s-edge-connect-credentials" (include "gpec.fullname" .)) -}}
{{- end -}}

{{/*
The variables a provider command takes from the credentials Secret, as a JSON list: none with
credentials.source file (the file holds them), else the username and password, and the site
cache's secret when the actions cache is on.
*/}}
{{- define "gpec.credentialEnv" -}}
{{- $names := list -}}
{{- if ne .Values.credentials.source "file" -}}
{{- $names = list "EDP_EDGE_CONNECT_USERNAME" "EDP_EDGE_CONNECT_PASSWORD" -}}
{{- if and .Values.siteCache.enabled .Values.siteCache.actionsCache -}}
{{- $names = append $names "EDP_SITE_CACHE_SECRET" -}}
{{- end -}}
{{- end -}}
{{- toJson $names -}}
{{- end -}}

{{/* Those variables as a container's env entries, each from the Secret's key of its name. */}}
{{- define "gpec.credentialEnvVars" -}}
{{- $secret := include "gpec.credentialsSecret" . -}}
{{- range $i, $name := include "gpec.credentialEnv" . | fromJsonArray }}
{{- if $i }}{{ "\n" }}{{ end -}}
- name: {{ $name }}
  valueFrom:
    secretKeyRef:
      name: {{ include "gpec.json" $secret }}
      key: {{ $name }}
{{- end -}}
{{- end -}}
