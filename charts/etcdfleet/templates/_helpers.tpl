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

{{/*
The metrics certificate's Secret: metrics.certSecret, else, when the chart
has cert-manager issue it (certManager.issuerRef), <fullname>-metrics-tls;
else "" (the manager's self-signed certificate).
*/}}
{{- define "etcdfleet.metricsCertSecret" -}}
{{- if .Values.metrics.certSecret }}{{ .Values.metrics.certSecret }}{{ else if include "etcdfleet.issuesMetricsCert" . }}{{ include "etcdfleet.fullname" . }}-metrics-tls{{ end }}
{{- end }}

{{/* Whether the chart creates the metrics Certificate (cert-manager). */}}
{{- define "etcdfleet.issuesMetricsCert" -}}
{{- if and .Values.certManager.issuerRef.name .Values.metrics.secure (include "etcdfleet.metricsEnabled" .) }}true{{ end }}
{{- end }}

{{/*
The metrics Service's DNS name: what its certificate must name, and the
serverName the ServiceMonitor verifies (Prometheus scrapes Pod IPs, which
no certificate names).
*/}}
{{- define "etcdfleet.metricsServerName" -}}
{{ include "etcdfleet.fullname" . }}-metrics.{{ .Release.Namespace }}.svc
{{- end }}

{{/* --metrics-cert-dir: metrics.certDir, else the certificate Secret's mount, else "" (self-signed). */}}
{{- define "etcdfleet.metricsCertDir" -}}
{{- if .Values.metrics.certDir }}{{ .Values.metrics.certDir }}{{ else if include "etcdfleet.metricsCertSecret" . }}{{ include "etcdfleet.metricsCertMount" . }}{{ end }}
{{- end }}

{{/*
The manager's image: repository@digest when image.digest is set (a tag can
be moved to other content, a digest cannot), else repository:tag (tag
defaults to the appVersion).
*/}}
{{- define "etcdfleet.image" -}}
{{- if .Values.image.digest }}{{ printf "%s@%s" .Values.image.repository .Values.image.digest }}{{ else }}{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}{{ end }}
{{- end }}
