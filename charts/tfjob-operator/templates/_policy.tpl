{{/*
The validations of templates/operator-policy.yaml, one set per resource.
Variables in scope: tfjobController, inFence.
*/}}

{{/*
Namespaces the operator writes in, as a CEL expression: the watched ones,
or (cluster-wide) any namespace but rbac.deniedNamespaces. The release
namespace is always in: the leader labels its own pod there and keeps the
report channel's Secret there.
*/}}
{{- define "tfjob-operator.namespaceFence" -}}
{{- $w := include "tfjob-operator.watchNamespaces" . | trimSuffix "," -}}
{{- if $w -}}
{{- $l := append (splitList "," $w) .Release.Namespace | uniq -}}
"request.namespace in [{{ range $i, $n := $l }}{{ if $i }}, {{ end }}'{{ $n }}'{{ end }}]"
{{- else -}}
"request.namespace == '{{ .Release.Namespace }}' || !(request.namespace in [{{ range $i, $n := .Values.rbac.deniedNamespaces }}{{ if $i }}, {{ end }}'{{ $n }}'{{ end }}])"
{{- end -}}
{{- end -}}

{{- define "tfjob-operator.policy.pods" -}}
- expression: variables.inFence
  message: the operator writes pods only in the namespaces it watches
# CREATE: the pods of TFJobs, nothing a training pod does not need.
- expression: request.operation != 'CREATE' || variables.tfjobController
  message: the operator creates only pods controlled by a TFJob
- expression: >-
    request.operation != 'CREATE' ||
    !(object.spec.?hostNetwork.orValue(false) || object.spec.?hostPID.orValue(false) ||
    object.spec.?hostIPC.orValue(false))
  message: the operator creates no pod with hostNetwork, hostPID or hostIPC
- expression: >-
    request.operation != 'CREATE' ||
    object.spec.?volumes.orValue([]).all(v, !has(v.hostPath))
  message: the operator creates no pod with a hostPath volume
- expression: >-
    request.operation != 'CREATE' ||
    (object.spec.containers + object.spec.?initContainers.orValue([])).all(c,
    !c.?securityContext.?privileged.orValue(false))
  message: the operator creates no privileged container
- expression: >-
    request.operation != 'CREATE' ||
    (object.spec.containers + object.spec.?initContainers.orValue([])).all(c,
    size(c.?securityContext.?capabilities.?add.orValue([])) == 0)
  message: the operator creates no container with added capabilities
- expression: >-
    request.operation != 'CREATE' ||
    (object.spec.?securityContext.?runAsUser.orValue(1) != 0 &&
    (object.spec.containers + object.spec.?initContainers.orValue([])).all(c,
    c.?securityContext.?runAsUser.orValue(1) != 0))
  message: the operator creates no pod that asks to run as root (runAsUser 0)
# UPDATE (PATCH): adopting an orphan adds a TFJob controller reference, and
# the leader labels its own pod tfjob.kubeflow.org/report-leader. Nothing
# else of a pod changes.
- expression: >-
    request.operation != 'UPDATE' ||
    (object.spec == oldObject.spec &&
    object.metadata.?annotations.orValue({}) == oldObject.metadata.?annotations.orValue({}) &&
    object.metadata.?labels.orValue({}).all(k, k == 'tfjob.kubeflow.org/report-leader' ||
    (k in oldObject.metadata.?labels.orValue({}) &&
    oldObject.metadata.labels[k] == object.metadata.labels[k])) &&
    oldObject.metadata.?labels.orValue({}).all(k, k == 'tfjob.kubeflow.org/report-leader' ||
    k in object.metadata.?labels.orValue({})) &&
    object.metadata.?ownerReferences.orValue([]).all(r,
    r in oldObject.metadata.?ownerReferences.orValue([]) ||
    (r.kind == 'TFJob' && r.apiVersion.startsWith('kubeflow.org/'))) &&
    oldObject.metadata.?ownerReferences.orValue([]).all(r,
    r in object.metadata.?ownerReferences.orValue([])))
  message: >-
    the operator changes a pod only by adding a TFJob owner reference or its
    tfjob.kubeflow.org/report-leader label
{{- end -}}

{{- define "tfjob-operator.policy.services" -}}
- expression: variables.inFence
  message: the operator writes services only in the namespaces it watches
- expression: variables.tfjobController
  message: the operator writes only services controlled by a TFJob
- expression: >-
    object.spec.?type.orValue('ClusterIP') == 'ClusterIP' &&
    object.spec.?clusterIP.orValue('') == 'None'
  message: the operator writes only headless ClusterIP services (clusterIP None)
- expression: size(object.spec.?externalIPs.orValue([])) == 0
  message: the operator writes no service with externalIPs
- expression: request.operation != 'UPDATE' || object.spec == oldObject.spec
  message: the operator never changes a service's spec
{{- end -}}

{{/*
Secrets: each TFJob's ps Secret (Opaque, named <job>-ps-... as the API
server generates it from the operator's generateName, which it does before
validating admission; controlled by that TFJob; its data keys are not
checked), and the report channel's serving
certificate and CA key Secrets in the release namespace.
*/}}
{{- define "tfjob-operator.policy.secrets" -}}
- expression: variables.inFence
  message: the operator writes Secrets only in the namespaces it watches
- expression: >-
    (request.namespace == '{{ .Release.Namespace }}' &&
    (object.metadata.name == '{{ include "tfjob-operator.reportTlsSecret" . }}' ||
    object.metadata.name == '{{ include "tfjob-operator.reportCaKeySecret" . }}') &&
    object.type == 'kubernetes.io/tls') ||
    (object.type == 'Opaque' &&
    object.metadata.?ownerReferences.orValue([]).exists(r,
    r.kind == 'TFJob' && r.apiVersion.startsWith('kubeflow.org/') &&
    r.?controller.orValue(false) &&
    object.metadata.name.startsWith(size(r.name + '-ps-') > 58 ?
    (r.name + '-ps-').substring(0, 58) : r.name + '-ps-')))
  message: >-
    the operator writes only Opaque Secrets named <job>-ps-... (the
    API server's pick from that generateName) controlled by that TFJob
    <job>, and its own serving certificate and CA key
{{- end -}}

{{- define "tfjob-operator.policy.networkpolicies" -}}
- expression: variables.inFence
  message: the operator writes NetworkPolicies only in the namespaces it watches
- expression: >-
    object.metadata.name.endsWith('-training') && variables.tfjobController
  message: the operator writes only NetworkPolicies named <job>-training controlled by a TFJob
{{- end -}}

{{- define "tfjob-operator.policy.configmaps" -}}
- expression: variables.inFence
  message: the operator writes ConfigMaps only in the namespaces it watches
- expression: object.metadata.name == '{{ include "tfjob-operator.reportCaConfigMap" . }}'
  message: the operator writes only the ConfigMap {{ include "tfjob-operator.reportCaConfigMap" . }}
{{- end -}}
