{{/* Full name: the release name, plus the chart name unless it contains it. */}}
{{- define "tfjob-operator.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "tfjob-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "tfjob-operator.labels" -}}
{{ include "tfjob-operator.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "tfjob-operator.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "tfjob-operator.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The rules of the operator's job role (see deploy/rbac/cluster-role.yaml). */}}
{{- define "tfjob-operator.jobRules" -}}
- apiGroups: [kubeflow.org]
  resources: [tfjobs]
  verbs: [get, list, watch, delete]
- apiGroups: [kubeflow.org]
  resources: [tfjobs/status]
  verbs: [update]
# Children carry blockOwnerDeletion: true; OwnerReferencesPermissionEnforcement
# then requires update on the owner's finalizers (docs/security.md, "RBAC").
- apiGroups: [kubeflow.org]
  resources: [tfjobs/finalizers]
  verbs: [update]
- apiGroups: [""]
  resources: [pods, services]
  verbs: [list, watch, create, delete, get, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
{{- if and .Values.reportChannel.enabled (not .Values.reportChannel.insecure) }}
# Report channel TLS: the CA agents verify the operator with, published as
# this release's ConfigMap <release>-report-ca in each job namespace
# (create; read and update only that name).
- apiGroups: [""]
  resources: [configmaps]
  verbs: [create]
- apiGroups: [""]
  resources: [configmaps]
  resourceNames: [{{ include "tfjob-operator.reportCaConfigMap" . }}]
  verbs: [get, update]
{{- end }}
# Per TFJob: its ps Secret, created before its first pod with generateName
# (the name is recorded in the TFJob's status). Secrets are never read.
- apiGroups: [""]
  resources: [secrets]
  verbs: [create]
# Its NetworkPolicy: watched (the operator's labelled ones), created after
# the Secret and before the pods, patched when the job's ports change, read
# after a 409 on create (is the object ours?).
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [list, watch, create, get, patch]
{{- with .Values.gangSchedulerName }}
{{- if ne . "none" }}
# Gang scheduling: one PodGroup per TFJob, watched (the planner's observed
# state), created before the pods, its spec patched, deleted on suspend and
# at the end. Never read one by one or replaced whole.
- apiGroups: [{{ eq . "volcano" | ternary "scheduling.volcano.sh" "scheduling.x-k8s.io" }}]
  resources: [podgroups]
  verbs: [list, watch, create, patch, delete]
{{- end }}
{{- end }}
{{- end -}}

{{/* The report CA's ConfigMap in job namespaces: one per release, so two
installs that run jobs in one namespace each keep their own CA. */}}
{{- define "tfjob-operator.reportCaConfigMap" -}}
{{- printf "%s-report-ca" (include "tfjob-operator.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The Secret of the report channel's serving certificate. */}}
{{- define "tfjob-operator.reportTlsSecret" -}}
{{- .Values.reportChannel.tls.secretName | default (printf "%s-report-tls" (include "tfjob-operator.fullname" .)) -}}
{{- end -}}

{{/*
The Secret of the report channel's CA key (self-managed TLS only): the
operator names it after the serving certificate's Secret, with "-ca-key".
*/}}
{{- define "tfjob-operator.reportCaKeySecret" -}}
{{- printf "%s-ca-key" (include "tfjob-operator.reportTlsSecret" .) -}}
{{- end -}}

{{/*
The watched namespaces as a list: watchNamespace is a name, a
comma-separated string, or a list (--set 'watchNamespace={team-a,team-b}').
*/}}
{{- define "tfjob-operator.watchNamespaces" -}}
{{- $w := .Values.watchNamespace -}}
{{- $l := kindIs "slice" $w | ternary $w (splitList "," (toString $w)) -}}
{{- range $l }}{{ if trim (toString .) }}{{ trim (toString .) }},{{ end }}{{ end -}}
{{- end -}}

{{/*
Scraping asked for (ServiceMonitor or pod annotations) must be possible: the
operator's NetworkPolicy lets only networkPolicy.metricsNamespace reach the
metrics port, and a ServiceMonitor scrapes the metrics Service.
*/}}
{{- define "tfjob-operator.checkScrape" -}}
{{- $scrape := or .Values.metrics.serviceMonitor.enabled .Values.metrics.scrapeAnnotations -}}
{{- if and $scrape .Values.networkPolicy.enabled (not .Values.networkPolicy.metricsNamespace) -}}
{{- fail "metrics.serviceMonitor.enabled / metrics.scrapeAnnotations: set networkPolicy.metricsNamespace to Prometheus's namespace (the operator's NetworkPolicy lets no other pod reach the metrics port)" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.service.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled needs metrics.service.enabled (the ServiceMonitor scrapes that Service)" -}}
{{- end -}}
{{- end -}}
