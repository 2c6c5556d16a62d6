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
- apiGroups: [""]
  resources: [pods, services]
  verbs: [list, watch, create, delete, get, patch]
- apiGroups: [""]
  resources: [events]
  verbs: [create, patch]
# Per TFJob: its ps Secret and NetworkPolicy, created before its first pod;
# get only after a 409 on create (is the object there ours?).
- apiGroups: [""]
  resources: [secrets]
  verbs: [create, get]
- apiGroups: [networking.k8s.io]
  resources: [networkpolicies]
  verbs: [create, get]
{{- with .Values.gangSchedulerName }}
{{- if ne . "none" }}
# Gang scheduling: one PodGroup per TFJob, read, created, updated, deleted.
- apiGroups: [{{ eq . "volcano" | ternary "scheduling.volcano.sh" "scheduling.x-k8s.io" }}]
  resources: [podgroups]
  verbs: [get, create, update, delete]
{{- end }}
{{- end }}
{{- end -}}
