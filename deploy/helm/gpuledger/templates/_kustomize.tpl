{{- /*
What `kubectl kustomize` does with deploy/'s kustomizations, as much of it as they use, so that
the chart renders the same manifests with the same patches (files/ is deploy/'s copy):
resources (files and other kustomizations), labels, components, JSON 6902 patches (add, replace,
remove, test; "-" appends), and configMapGenerator from files. The namespace and the image are
the release's and the values' (templates/manifests.yaml). Named templates print nothing: they add
to, and change, the objects in `state.objects`.
*/ -}}

{{- /* The objects of a YAML file: (dict "ctx" $ "file" PATH "state" STATE). */ -}}
{{- define "gpuledger.resourceFile" -}}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (.ctx.Files.Get .file) -1 }}
{{- $object := fromYaml $doc }}
{{- if hasKey $object "Error" }}{{ fail (printf "%s: %s" $.file $object.Error) }}{{ end }}
{{- if $object.kind }}
{{- $_ := set $.state "objects" (append $.state.objects $object) }}
{{- end }}
{{- end }}
{{- end }}

{{- /* A kustomization (or component) directory: (dict "ctx" $ "dir" DIR "state" STATE). */ -}}
{{- define "gpuledger.kustomization" -}}
{{- $file := printf "%s/kustomization.yaml" .dir }}
{{- $k := fromYaml (.ctx.Files.Get $file) }}
{{- if or (hasKey $k "Error") (not $k.kind) }}{{ fail (printf "%s: not a kustomization" $file) }}{{ end }}
{{- $first := len .state.objects }}
{{- range $resource := $k.resources | default list }}
{{- $path := clean (printf "%s/%s" $.dir $resource) }}
{{- if hasSuffix ".yaml" $path }}
{{- include "gpuledger.resourceFile" (dict "ctx" $.ctx "file" $path "state" $.state) }}
{{- else }}
{{- include "gpuledger.kustomization" (dict "ctx" $.ctx "dir" $path "state" $.state) }}
{{- end }}
{{- end }}
{{- range $generator := $k.configMapGenerator | default list }}
{{- $data := dict }}
{{- range $name := $generator.files }}
{{- $_ := set $data (base $name) ($.ctx.Files.Get (printf "%s/%s" $.dir $name)) }}
{{- end }}
{{- $labels := ($generator.options | default dict).labels | default dict }}
{{- $map := dict "apiVersion" "v1" "kind" "ConfigMap" "metadata" (dict "name" $generator.name "labels" $labels) "data" $data }}
{{- $_ := set $.state "objects" (append $.state.objects $map) }}
{{- end }}
{{- /* `labels` (without selectors): on the metadata of what this kustomization brought. */ -}}
{{- range $labels := $k.labels | default list }}
{{- if $labels.includeSelectors }}{{ fail (printf "%s: labels with selectors are not rendered by the chart" $file) }}{{ end }}
{{- range $object := slice $.state.objects $first }}
{{- $_ := set $object.metadata "labels" (merge ($object.metadata.labels | default dict) $labels.pairs) }}
{{- end }}
{{- end }}
{{- range $component := $k.components | default list }}
{{- include "gpuledger.kustomization" (dict "ctx" $.ctx "dir" (clean (printf "%s/%s" $.dir $component)) "state" $.state) }}
{{- end }}
{{- range $patch := $k.patches | default list }}
{{- include "gpuledger.patch" (dict "target" $patch.target "ops" (fromYamlArray $patch.patch) "state" $.state) }}
{{- end }}
{{- end }}

{{- /* JSON 6902 operations on the objects of a kind and name:
       (dict "target" (dict "kind" K "name" N) "ops" LIST "state" STATE). */ -}}
{{- define "gpuledger.patch" -}}
{{- $matched := false }}
{{- range $object := .state.objects }}
{{- if and (eq $object.kind $.target.kind) (eq $object.metadata.name $.target.name) }}
{{- $matched = true }}
{{- range $op := $.ops }}
{{- include "gpuledger.operation" (dict "object" $object "op" $op) }}
{{- end }}
{{- end }}
{{- end }}
{{- if not $matched }}{{ fail (printf "patch: no %s %s" .target.kind .target.name) }}{{ end }}
{{- end }}

{{- /* One operation on one object: (dict "object" OBJECT "op" OP). Lists cannot change in
       place in a template, so an operation on a list's element sets a new list in the map that
       holds it. */ -}}
{{- define "gpuledger.operation" -}}
{{- $op := .op }}
{{- $segments := splitList "/" (trimPrefix "/" $op.path) }}
{{- $at := dict "node" .object "holder" (dict) "key" "" }}
{{- range $segment := initial $segments }}
{{- $node := $at.node }}
{{- $_ := set $at "holder" $node }}
{{- $_ := set $at "key" $segment }}
{{- if kindIs "map" $node }}
{{- if not (hasKey $node $segment) }}{{ fail (printf "%s: no %s" $op.path $segment) }}{{ end }}
{{- $_ := set $at "node" (get $node $segment) }}
{{- else }}
{{- $_ := set $at "node" (index $node (atoi $segment)) }}
{{- end }}
{{- end }}
{{- $last := last $segments }}
{{- $parent := $at.node }}
{{- if kindIs "map" $parent }}
{{- if eq $op.op "test" }}
{{- if ne (toJson (get $parent $last)) (toJson $op.value) }}{{ fail (printf "test %s: %s" $op.path (toJson (get $parent $last))) }}{{ end }}
{{- else if eq $op.op "remove" }}
{{- $_ := unset $parent $last }}
{{- else }}
{{- $_ := set $parent $last $op.value }}
{{- end }}
{{- else }}
{{- $list := list }}
{{- if eq $last "-" }}
{{- $list = append $parent $op.value }}
{{- else }}
{{- $index := atoi $last }}
{{- range $i, $item := $parent }}
{{- if ne $i $index }}
{{- $list = append $list $item }}
{{- else if eq $op.op "test" }}
{{- if ne (toJson $item) (toJson $op.value) }}{{ fail (printf "test %s: %s" $op.path (toJson $item)) }}{{ end }}
{{- $list = append $list $item }}
{{- else if eq $op.op "add" }}
{{- $list = append (append $list $op.value) $item }}
{{- else if eq $op.op "replace" }}
{{- $list = append $list $op.value }}
{{- end }}
{{- end }}
{{- end }}
{{- $_ := set $at.holder $at.key $list }}
{{- end }}
{{- end }}
