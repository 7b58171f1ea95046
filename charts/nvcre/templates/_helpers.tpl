{{/* The manager image, as setup render writes it: repository@digest when a digest is set, else repository:tag. */}}
{{- define "nvcre.managerImage" -}}
{{- if .digest -}}
{{- printf "%s@%s" .repository .digest -}}
{{- else -}}
{{- printf "%s:%s" .repository .tag -}}
{{- end -}}
{{- end -}}

{{/* imagePullSecrets from a list of Secret names, as JSON. */}}
{{- define "nvcre.imagePullSecrets" -}}
{{- $secrets := list -}}
{{- range . -}}
{{- $secrets = append $secrets (dict "name" .) -}}
{{- end -}}
{{- toJson $secrets -}}
{{- end -}}
