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
{{- default .Release.Namespace .Values.config.namespace }}
{{- end }}

{{/* Whether the metrics endpoint is on. */}}
{{- define "etcdfleet.metricsEnabled" -}}
{{- if ne (toString .Values.config.metricsBindAddress) "0" }}true{{ end }}
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
{{- if and .Values.certManager.issuerRef.name .Values.config.metricsSecure (include "etcdfleet.metricsEnabled" .) }}true{{ end }}
{{- end }}

{{/*
The metrics Service's DNS name: what its certificate must name, and the
serverName the ServiceMonitor verifies (Prometheus scrapes Pod IPs, which
no certificate names).
*/}}
{{- define "etcdfleet.metricsServerName" -}}
{{ include "etcdfleet.fullname" . }}-metrics.{{ .Release.Namespace }}.svc
{{- end }}

{{/* metricsCertDir: config.metricsCertDir, else the certificate Secret's mount, else "" (self-signed). */}}
{{- define "etcdfleet.metricsCertDir" -}}
{{- if .Values.config.metricsCertDir }}{{ .Values.config.metricsCertDir }}{{ else if include "etcdfleet.metricsCertSecret" . }}{{ include "etcdfleet.metricsCertMount" . }}{{ end }}
{{- end }}

{{/*
The manager's image: repository@digest when image.digest is set (a tag can
be moved to other content, a digest cannot), else repository:tag (tag
defaults to the appVersion).
*/}}
{{- define "etcdfleet.image" -}}
{{- if .Values.image.digest }}{{ printf "%s@%s" .Values.image.repository .Values.image.digest }}{{ else }}{{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}{{ end }}
{{- end }}

{{/* Where the config ConfigMap is mounted, and its file's name. */}}
{{- define "etcdfleet.configMount" -}}
/etc/etcdfleet/config
{{- end }}
{{- define "etcdfleet.configKey" -}}
config.yaml
{{- end }}

{{/*
The manager's config file: .Values.config as given, but for three values
the chart derives when they are empty: namespace (the release namespace),
agentImage (the manager's own image, pinned alike) and metricsCertDir (the
mount of metrics.certSecret, when there is one).
*/}}
{{- define "etcdfleet.config" -}}
{{- $c := deepCopy .Values.config }}
{{- $_ := set $c "namespace" (include "etcdfleet.registrationNamespace" .) }}
{{- $_ = set $c "agentImage" (.Values.config.agentImage | default (include "etcdfleet.image" .)) }}
{{- $_ = set $c "metricsCertDir" (include "etcdfleet.metricsCertDir" .) }}
{{- toYaml $c }}
{{- end }}
