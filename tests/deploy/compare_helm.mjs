// The Helm chart against kustomize, object by object: the same kinds, names and namespaces, and
// each object equal field by field once what Helm adds by design is set aside (its labels
// app.kubernetes.io/managed-by, app.kubernetes.io/instance and helm.sh/chart, the annotation
// helm.sh/resource-policy, and the API token Secret the chart creates where scripts/deploy.sh
// creates it outside the manifests).
//   node compare_helm.mjs KUSTOMIZE.yaml HELM.yaml
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const [kustomizeFile, helmFile] = process.argv.slice(2);
if (!kustomizeFile || !helmFile) {
  console.error("usage: node compare_helm.mjs KUSTOMIZE.yaml HELM.yaml");
  process.exit(2);
}

const helmLabels = ["app.kubernetes.io/managed-by", "app.kubernetes.io/instance", "helm.sh/chart"];
const helmOnly = new Set(["Secret/gpuledger/gpuledger-api-token"]);

function objects(file, fromHelm) {
  const out = new Map();
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) throw new Error(`${file}: ${doc.errors[0].message}`);
    const o = doc.toJS();
    if (!o?.kind) continue;
    const key = `${o.kind}/${o.metadata?.namespace ?? ""}/${o.metadata?.name}`;
    if (fromHelm) {
      if (helmOnly.has(key)) continue;
      for (const l of helmLabels) delete o.metadata.labels?.[l];
      delete o.metadata.annotations?.["helm.sh/resource-policy"];
      for (const field of ["labels", "annotations"])
        if (o.metadata[field] && !Object.keys(o.metadata[field]).length) delete o.metadata[field];
    }
    if (out.has(key)) throw new Error(`${file}: ${key} twice`);
    out.set(key, o);
  }
  return out;
}

// The first path at which `a` and `b` differ, or null.
function difference(a, b, path = "") {
  if (typeof a !== typeof b || Array.isArray(a) !== Array.isArray(b) || (a === null) !== (b === null))
    return `${path || "/"}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  if (typeof a !== "object" || a === null)
    return a === b ? null : `${path}: ${JSON.stringify(a)} vs ${JSON.stringify(b)}`;
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  for (const k of [...keys].sort()) {
    const d = difference(a[k], b[k], `${path}/${k}`);
    if (d) return d;
  }
  return null;
}

const kustomized = objects(kustomizeFile, false);
const helm = objects(helmFile, true);
const problems = [];
for (const key of kustomized.keys())
  if (!helm.has(key)) problems.push(`${key}: kustomize renders it, the chart does not`);
for (const [key, o] of helm) {
  if (!kustomized.has(key)) {
    problems.push(`${key}: the chart renders it, kustomize does not`);
    continue;
  }
  const d = difference(kustomized.get(key), o);
  if (d) problems.push(`${key}: ${d} (kustomize vs chart)`);
}
for (const p of problems) console.error(`${helmFile}: ${p}`);
console.log(`${helmFile}: ${helm.size} objects, ${problems.length} differences from ${kustomizeFile}`);
process.exit(problems.length ? 1 : 0);
