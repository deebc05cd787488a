{{- define "gemgate.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "gemgate.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "gemgate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gemgate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "gemgate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "gemgate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "gemgate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "gemgate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "gemgate.exchangeSecretName" -}}
{{- default (printf "%s-exchange" (include "gemgate.fullname" .)) .Values.exchange.existingSecret }}
{{- end }}

{{/* Every problem of the values, at once, before anything renders. */}}
{{- define "gemgate.validate" -}}
{{- $errs := list }}
{{- if not .Values.publicURL }}
{{- $errs = append $errs "publicURL is required: the MCP URL clients use, e.g. https://mcp.example.com/mcp" }}
{{- else }}
{{- $u := urlParse .Values.publicURL }}
{{- if or (not (has $u.scheme (list "http" "https"))) (not $u.host) }}
{{- $errs = append $errs (printf "publicURL %q must be an http or https URL with a host, e.g. https://mcp.example.com/mcp (gemgate refuses any other, and the Ingress would route every host)" .Values.publicURL) }}
{{- end }}
{{- $path := $u.path }}
{{- if or (not $path) (eq $path "/") (hasSuffix "/" $path) }}
{{- $errs = append $errs (printf "publicURL %q must name the MCP endpoint's path, without a trailing slash, e.g. https://mcp.example.com/mcp (gemgate serves that path)" .Values.publicURL) }}
{{- end }}
{{- end }}
{{- if not .Values.config.issuer }}
{{- $errs = append $errs "config.issuer is required, e.g. https://keycloak.example.com/realms/team" }}
{{- end }}
{{- range $k := list "listen" "metrics_listen" "public_url" "mcp_path" "drain_delay" "shutdown_grace" "exchange_client_secret" "worker_sandbox" }}
{{- if hasKey $.Values.config $k }}
{{- $errs = append $errs (printf "config.%s is set by the chart; see values.yaml (publicURL, drain, metrics, exchange, sandbox)" $k) }}
{{- end }}
{{- end }}
{{- if .Values.exchange.enabled }}
{{- range $k := list "worker_credential" "exchange_client_id" "exchange_audience" }}
{{- if hasKey $.Values.config $k }}
{{- $errs = append $errs (printf "config.%s is set by the chart when exchange.enabled; use exchange.clientID and exchange.audience" $k) }}
{{- end }}
{{- end }}
{{- end }}
{{- if and .Values.exchange.enabled (not (or .Values.exchange.clientSecret .Values.exchange.existingSecret)) }}
{{- $errs = append $errs "exchange.enabled needs exchange.clientSecret or exchange.existingSecret" }}
{{- end }}
{{- if and .Values.exchange.enabled (not (and .Values.exchange.clientID .Values.exchange.audience)) }}
{{- $errs = append $errs "exchange.enabled needs exchange.clientID and exchange.audience" }}
{{- end }}
{{- if $errs }}
{{- fail (printf "\n  - %s" (join "\n  - " $errs)) }}
{{- end }}
{{- end }}

{{/* Kubernetes may kill the pod this long after it began terminating: the preStop sleep (if
     any), gemgate's drain_delay, the grace it gives in-flight calls, and the time to stop its
     workers and answer the calls the grace cut. */}}
{{- define "gemgate.terminationGracePeriodSeconds" -}}
{{- add .Values.drain.preStopSleepSeconds .Values.drain.drainDelaySeconds .Values.drain.shutdownGraceSeconds .Values.drain.workerStopSeconds }}
{{- end }}
