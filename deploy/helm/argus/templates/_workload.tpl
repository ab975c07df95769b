{{/* What every Argus server pod shares (single mode and the fleet roles): the pod's security
     context, probes, the container's security context. Pass (dict "ctx" $ ...). */}}
{{- define "argus.probes" -}}
readinessProbe:
  httpGet:
    path: /-/ready
    port: http
  periodSeconds: 10
livenessProbe:
  httpGet:
    path: /-/healthy
    port: http
  initialDelaySeconds: 30
  periodSeconds: 30
  failureThreshold: 5
{{- end -}}

{{/* A StatefulSet's data volume. Pass the persistence values. */}}
{{- define "argus.volumeClaim" -}}
- metadata:
    name: data
  spec:
    accessModes: ["ReadWriteOnce"]
    {{- with .storageClassName }}
    storageClassName: {{ . }}
    {{- end }}
    resources:
      requests:
        storage: {{ .size }}
{{- end -}}

{{/* The pod-level settings every server pod shares. */}}
{{- define "argus.podCommon" -}}
serviceAccountName: {{ include "argus.serviceAccountName" . }}
automountServiceAccountToken: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* A headless Service (stable DNS for a StatefulSet's pods). Pass (dict "ctx" $ "component" c). */}}
{{- define "argus.headlessService" -}}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "argus.fullname" .ctx }}-{{ .component }}-headless
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "argus.labels" . | nindent 4 }}
    argus.io/scrape: "true"   # the ServiceMonitor reads each pod through this Service
spec:
  clusterIP: None
  {{- if .notReady }}
  publishNotReadyAddresses: true
  {{- end }}
  selector:
    {{- include "argus.selectorLabels" . | nindent 4 }}
  ports:
    - name: http
      port: 9700
      targetPort: http
      protocol: TCP
    {{- if .gossip }}
    - name: cluster
      port: 9094
      targetPort: cluster
      protocol: UDP
    {{- end }}
{{- end -}}

{{/* A PodDisruptionBudget. Pass (dict "ctx" $ "component" c "maxUnavailable" n). */}}
{{- define "argus.pdb" -}}
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: {{ include "argus.fullname" .ctx }}-{{ .component }}
  namespace: {{ .ctx.Release.Namespace }}
  labels:
    {{- include "argus.labels" . | nindent 4 }}
spec:
  maxUnavailable: {{ .maxUnavailable }}
  selector:
    matchLabels:
      {{- include "argus.selectorLabels" . | nindent 6 }}
{{- end -}}
