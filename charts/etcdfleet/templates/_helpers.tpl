{{/* Chart name, at most 63 characters. */}}
{{- define "etcdfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name: the release name, with the chart name unless it already contains it. */}}
{{- define "etcdfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "etcdfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "etcdfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "etcdfleet.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "etcdfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: etcdfleet
{{- end }}

{{- define "etcdfleet.serviceAccountName" -}}
{{- default (include "etcdfleet.fullname" .) .Values.serviceAccount.name }}
{{- end }}

{{/* Namespace of the registration Secrets and of the Lease. */}}
{{- define "etcdfleet.registrationNamespace" -}}
{{- default .Release.Namespace .Values.namespace }}
{{- end }}

{{/* Whether the metrics endpoint is on. */}}
{{- define "etcdfleet.metricsEnabled" -}}
{{- if ne (toString .Values.metrics.bindAddress) "0" }}true{{ end }}
{{- end }}

{{/* The port of a bind address such as ":8080" or "0.0.0.0:8080". */}}
{{- define "etcdfleet.port" -}}
{{- regexFind "[0-9]+$" . }}
{{- end }}


{{/* Where metrics.certSecret is mounted. */}}
{{- define "etcdfleet.metricsCertMount" -}}
/etc/etcdfleet/metrics-cert
{{- end }}

{{/* --metrics-cert-dir: metrics.certDir, else certSecret's mount, else "" (self-signed). */}}
{{- define "etcdfleet.metricsCertDir" -}}
{{- if .Values.metrics.certDir }}{{ .Values.metrics.certDir }}{{ else if .Values.metrics.certSecret }}{{ include "etcdfleet.metricsCertMount" . }}{{ end }}
{{- end }}
