{{/* The resources' base name: the release name, with "-argus" unless it already says argus. */}}
{{- define "argus.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "argus.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels of every resource; pass (dict "ctx" $ "component" "server"). */}}
{{- define "argus.labels" -}}
{{ include "argus.selectorLabels" . }}
app.kubernetes.io/part-of: argus
app.kubernetes.io/managed-by: {{ .ctx.Release.Service }}
app.kubernetes.io/version: {{ .ctx.Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .ctx.Chart.Name .ctx.Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "argus.selectorLabels" -}}
app.kubernetes.io/name: {{ include "argus.name" .ctx }}
app.kubernetes.io/instance: {{ .ctx.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{- define "argus.image" -}}
{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) | quote }}
{{- end -}}

{{/* The Secret holding the clients' plain tokens, or "" when there is none. */}}
{{- define "argus.tokenSecret" -}}
{{- if and .Values.secrets.create .Values.secrets.existingSecret -}}
{{- fail "secrets: set either existingSecret or create, not both" -}}
{{- else if .Values.secrets.create -}}
{{- printf "%s-tokens" (include "argus.fullname" .) -}}
{{- else -}}
{{- .Values.secrets.existingSecret -}}
{{- end -}}
{{- end -}}

{{/* The alertd cluster's gossip Secret (fleet mode). */}}
{{- define "argus.clusterSecret" -}}
{{- $c := .Values.fleet.alertd.clusterSecret -}}
{{- if and $c.create $c.existingSecret -}}
{{- fail "fleet.alertd.clusterSecret: set either existingSecret or create, not both" -}}
{{- else if $c.create -}}
{{- printf "%s-alertd-cluster" (include "argus.fullname" .) -}}
{{- else if $c.existingSecret -}}
{{- $c.existingSecret -}}
{{- else -}}
{{- fail "fleet.alertd.clusterSecret: mode fleet needs the gossip secret: name an existing Secret (existingSecret, key `secret`) or set create and value" -}}
{{- end -}}
{{- end -}}

{{/* The [auth] section: the configured tokens, those the chart creates, and anonymous scopes.
     Pass (dict "ctx" $ "store" bool): store adds the fleet roles' token (on the stores they read and
     write, and on alertd, which they post alerts to). */}}
{{- define "argus.authToml" -}}
{{- $v := .ctx.Values -}}
[auth]
{{- $anon := $v.auth.anonymous | default list | uniq }}
{{- if $anon }}
anonymous = [{{ range $i, $s := $anon }}{{ if $i }}, {{ end }}{{ $s | quote }}{{ end }}]
{{- else }}
# No anonymous access: requests carry one of the tokens below.
{{- end }}
{{- range $v.auth.tokens }}

[[auth.tokens]]
name = {{ .name | quote }}
scopes = [{{ range $i, $s := .scopes }}{{ if $i }}, {{ end }}{{ $s | quote }}{{ end }}]
sha256 = {{ .sha256 | quote }}
{{- end }}
{{- if $v.secrets.create }}
{{- $made := list (dict "name" "chart-collectors" "scopes" (list "write") "token" $v.secrets.collectorToken) (dict "name" "chart-metrics" "scopes" (list "read") "token" $v.secrets.metricsToken) }}
{{- if .store }}{{ $made = append $made (dict "name" "chart-store-clients" "scopes" (list "read" "write") "token" $v.secrets.storeToken) }}{{ end }}
{{- range $made }}
{{- if .token }}

[[auth.tokens]]    # created by the chart from secrets.*
name = {{ .name | quote }}
scopes = [{{ range $i, $s := .scopes }}{{ if $i }}, {{ end }}{{ $s | quote }}{{ end }}]
sha256 = {{ .token | sha256sum | quote }}
{{- end }}
{{- end }}
{{- end }}
{{- end -}}

{{/* Collector sinks: the server, or every store of the pair. */}}
{{- define "argus.collectorSinks" -}}
{{- $full := include "argus.fullname" . -}}
{{- $secret := include "argus.tokenSecret" . -}}
{{- $targets := list (dict "name" "argus" "url" (printf "http://%s.%s.svc:%v/api/v1/write" $full .Release.Namespace .Values.server.service.port)) -}}
{{- if eq .Values.mode "fleet" -}}
{{- $targets = list -}}
{{- range $i := until (int .Values.fleet.store.replicas) -}}
{{- $targets = append $targets (dict "name" (printf "store-%d" $i) "url" (printf "http://%s-store-%d.%s-store-headless.%s.svc:9700/api/v1/write" $full $i $full $.Release.Namespace)) -}}
{{- end -}}
{{- end -}}
{{- range $targets }}

[[collector.sink]]
name = {{ .name | quote }}
url = {{ .url | quote }}
{{- if $secret }}
token_file = "/etc/argus-tokens/{{ $.Values.secrets.keys.collector }}"
{{- end }}
{{- end }}
{{- end -}}

{{/* Base URLs of the alertd replicas (fleet mode). */}}
{{- define "argus.alertdUrls" -}}
{{- $full := include "argus.fullname" . -}}
{{- range $i := until (int .Values.fleet.alertd.replicas) }}
  "http://{{ $full }}-alertd-{{ $i }}.{{ $full }}-alertd-headless.{{ $.Release.Namespace }}.svc:9700",
{{- end }}
{{- end -}}

{{/* [store] of a fleet role that reads and writes through the store pair, with the fleet roles'
     token from the mounted Secret when there is one. */}}
{{- define "argus.remoteStoreToml" -}}
{{- $full := include "argus.fullname" . -}}
[store]
backend = "prometheus"

[store.remote]
flavour = "prometheus"       # another Argus's store role speaks the Prometheus API and remote write
url = "http://{{ $full }}-store-0.{{ $full }}-store-headless.{{ .Release.Namespace }}.svc:9700"
failover_urls = [{{ range $i := untilStep 1 (int .Values.fleet.store.replicas) 1 }}{{ if gt $i 1 }}, {{ end }}"http://{{ $full }}-store-{{ $i }}.{{ $full }}-store-headless.{{ $.Release.Namespace }}.svc:9700"{{ end }}]
{{- if include "argus.tokenSecret" . }}
bearer_token_file = "/etc/argus-tokens/{{ .Values.secrets.keys.store }}"   # read at start and for every request
{{- end }}
{{- end -}}

{{/* The shell command of a fleet role: a shell, for the pod's ordinal and address in its flags.
     Pass (dict "config" "/etc/argus/workers.toml" "args" "…"). */}}
{{- define "argus.fleetCommand" -}}
exec /usr/local/bin/argus serve --config {{ .config }} {{ .args }}
{{- end -}}

{{/* The tokens Secret as a volume, when there is one. */}}
{{- define "argus.tokenVolume" -}}
{{- with include "argus.tokenSecret" . -}}
- name: tokens
  secret:
    secretName: {{ . }}
    defaultMode: 0440
{{- end }}
{{- end -}}

{{- define "argus.tokenMount" -}}
{{- if include "argus.tokenSecret" . -}}
- name: tokens
  mountPath: /etc/argus-tokens
  readOnly: true
{{- end }}
{{- end -}}

{{- define "argus.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}{{ include "argus.fullname" . }}{{- else -}}default{{- end -}}
{{- end -}}

{{/* alertd's --cluster.peer flags: every replica's stable name. */}}
{{- define "argus.alertdPeers" -}}
{{- $full := include "argus.fullname" . -}}
{{- range $i := until (int .Values.fleet.alertd.replicas) -}}
{{ printf " --cluster.peer=%s-alertd-%d.%s-alertd-headless.%s.svc:9094" $full $i $full $.Release.Namespace }}
{{- end -}}
{{- end -}}
