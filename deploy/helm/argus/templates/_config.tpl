{{/* The configuration files of the ConfigMap, as plain text (configmap.yaml indents them). Every key
     is described in docs/configuration.md and docs/collector.md. */}}

{{/* A file's text as a block scalar's body: indented by 4, blank lines left blank. */}}
{{- define "argus.block" -}}
{{ regexReplaceAll "(?m)^[ \t]+$" (. | trim | nindent 4) "" }}
{{- end -}}

{{- define "argus.collectToml" -}}
{{- $c := .Values.collector -}}
{{- $kmsg := ternary "/dev/kmsg" "" $c.privileged -}}
[collector]
interval = {{ $c.interval | quote }}
procfs_root = "/host/proc"
sysfs_root = "/host/sys"
data_dir = "/var/lib/argus-collector"   # spools, on the node (hostPath)
listen = "0.0.0.0:{{ $c.metricsPort }}"                  # the collector's own /metrics

[collector.labels]
cluster = {{ .Values.cluster | quote }}                  # host is the node's name (hostNetwork)

[collector.gpu]
backend = "nvml"
kernel_log = {{ $kmsg | quote }}

[collector.events]
kernel_log = {{ $kmsg | quote }}
{{- if $c.training.enabled }}

# The push endpoint, on the node's network (hostNetwork): pods reach it at their node's address.
[collector.training]
listen = "{{ $c.training.listenAddress }}:{{ $c.training.port }}"
{{- with $c.training.tokenKey }}
{{- if not $.Values.secrets.existingSecret }}
{{- fail "collector.training.tokenKey: a key of secrets.existingSecret, which is not set" }}
{{- end }}
token_file = "/etc/argus-tokens/{{ . }}"   # pushes without this token get 401
{{- end }}
{{- end }}
{{- include "argus.collectorSinks" . }}
{{- with $c.kubernetesDiscovery }}{{ if .enabled }}

# Scrape targets: this node's pods annotated prometheus.io/scrape: "true", from the Kubernetes API
# (in-cluster: the pod's service-account token, NODE_NAME from the downward API).
[collector.scrape]

[collector.scrape.kubernetes]
{{- with .namespaces }}
namespaces = [{{ range $i, $n := . }}{{ if $i }}, {{ end }}{{ $n | quote }}{{ end }}]
{{- end }}
{{- with .labelSelector }}
label_selector = {{ . | quote }}
{{- end }}
refresh = {{ .refresh | quote }}
{{- if .endpoints }}
roles = ["pod", "endpoints"]
{{- end }}
{{- end }}{{ end }}
{{- with $c.extraConfig }}

{{ . }}
{{- end }}
{{- end -}}

{{- define "argus.serveToml" -}}
{{- $s := .Values.server -}}
[server]
listen = "0.0.0.0:9700"

[store]
data_dir = "/var/lib/argus"
retention = {{ $s.retention | quote }}
wal_sync = {{ $s.walSync | quote }}
memory_limit = {{ $s.memoryLimit | quote }}       # below the container's memory limit

[alertd]
config_file = "/etc/argus/alertd.yml"

{{ include "argus.authToml" (dict "ctx" $) }}
{{- with $s.extraConfig }}

{{ . }}
{{- end }}
{{- end -}}

{{- define "argus.storeToml" -}}
{{- $s := .Values.fleet.store -}}
[server]
listen = "0.0.0.0:9700"

[store]
data_dir = "/var/lib/argus"
retention = {{ $s.retention | quote }}
max_disk_size = {{ $s.maxDiskSize | quote }}
wal_sync = "always"
memory_limit = {{ $s.memoryLimit | quote }}

{{ include "argus.authToml" (dict "ctx" $ "store" true) }}
{{- end -}}

{{- define "argus.workersToml" -}}
[server]
listen = "0.0.0.0:9700"
alert_urls = [
{{- include "argus.alertdUrls" . }}
]
{{- if include "argus.tokenSecret" . }}
alert_token_file = "/etc/argus-tokens/{{ .Values.secrets.keys.store }}"   # the fleet roles' token, write scope on alertd
{{- end }}

[alertd]
config_file = "/etc/argus/alertd.yml"

{{ include "argus.authToml" (dict "ctx" $) }}

{{ include "argus.remoteStoreToml" . }}
{{- end -}}

{{- define "argus.alertdToml" -}}
[server]
listen = "0.0.0.0:9700"

[alertd]
config_file = "/etc/argus/alertd.yml"

[alertd.cluster]
listen = "0.0.0.0:9094"      # gossip, UDP; --cluster.advertise-address and --cluster.peer in its flags
secret_file = "/etc/argus-cluster/secret"

{{ include "argus.authToml" (dict "ctx" $ "store" true) }}

{{ include "argus.remoteStoreToml" . }}
{{- end -}}
