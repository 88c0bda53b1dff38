// Validates rendered manifests (`kubectl kustomize deploy/overlays/X`): every object against its
// schema (kubernetes-models: validators generated from the OpenAPI schemas of Kubernetes, the
// Prometheus Operator and cert-manager: types, formats, enums, required fields), strictly (each
// object typed as its model's TypeScript interface and compiled, so a field the schema does not
// know, at any depth, is an error, as `kubeconform -strict` would say), then the rules
// docs/install.md promises of ours (no container without limits or with a writable root, the
// agent without an API token, ...).
//
// Grafana dashboards (ConfigMaps labelled grafana_dashboard) are typed as Grafana's own
// Dashboard model (@grafana/schema) the same strict way and must have what Grafana needs to
// import them; every PromQL expression of a dashboard or a PrometheusRule may name only series
// gpuledger exports (the list `gpuledger metrics --format names` prints, from the code's metric
// table) or Prometheus's own `up`.
//
//   node validate.mjs --version 0.1.0 --metrics NAMES.txt --privileges deploy/privileges.yaml \
//     RENDERED.yaml...
//
// Prints one line per problem, "FILE: Kind/name: where: what", and exits 1 if there was any.
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { parse, parseAllDocuments } from "yaml";

// --NAME VALUE pairs, then the files.
const args = process.argv.slice(2);
const options = {};
while (args.length >= 2 && args[0].startsWith("--")) options[args.shift().slice(2)] = args.shift();
if (!options.version || !options.metrics || !options.privileges || args.length === 0) {
  console.error(
    "usage: node validate.mjs --version X.Y.Z --metrics NAMES.txt --privileges PRIVILEGES.yaml " +
      "RENDERED.yaml...");
  process.exit(2);
}
const version = options.version;
const files = args;
const exported = new Set(readFileSync(options.metrics, "utf8").split("\n").filter(Boolean));

// apiVersion -> the module holding its models.
function modulePath(apiVersion) {
  const [group, v] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com") return `@kubernetes-models/prometheus-operator/${apiVersion}`;
  if (group === "cert-manager.io") return `@kubernetes-models/cert-manager/${apiVersion}`;
  return group === "" ? `kubernetes-models/${v}` : `kubernetes-models/${apiVersion}`;
}

const problems = [];
let objects = 0;

// deploy/privileges.yaml: what the agent may hold, each with its reason and, where only some
// platforms or opt-in components need it, which. A file rendered for a platform and with
// components is named OVERLAY[+PLATFORM][+with-COMPONENT...].yaml.
const privileges = parse(readFileSync(options.privileges, "utf8"));
for (const [what, entries] of Object.entries(privileges))
  for (const e of Array.isArray(entries) ? entries : [entries])
    if (!e?.why?.trim()) problems.push(`${options.privileges}: ${what} ${e?.name ?? e?.path ?? ""}: no reason`);
function renderingOf(file) {
  const parts = file.replace(/^.*\//, "").replace(/\.yaml$/, "").split("+").slice(1);
  return {
    platform: parts.find((p) => !p.startsWith("with-")) ?? "",
    components: parts.filter((p) => p.startsWith("with-")).map((p) => p.slice(5)),
  };
}
function allowedOn(entry, file) {
  const { platform, components } = renderingOf(file);
  return !!entry && (!entry.platforms || entry.platforms.includes(platform)) &&
    (!entry.components || entry.components.some((c) => components.includes(c)));
}

// The agent's privileges against the list: anything not on it, or not for this platform, fails.
function checkAgentPrivileges(file, spec, fail) {
  const listed = (kind, key, value) => (privileges[kind] ?? []).find((e) => e[key] === value);
  if (spec.runtimeClassName && !allowedOn(listed("runtimeClasses", "name", spec.runtimeClassName), file))
    fail(`runtimeClassName ${spec.runtimeClassName} is not in deploy/privileges.yaml for this platform`);
  const volumes = Object.fromEntries((spec.volumes ?? []).map((v) => [v.name, v]));
  for (const v of Object.values(volumes)) {
    if (!v.hostPath) continue;
    const entry = listed("hostPaths", "path", v.hostPath.path);
    if (!allowedOn(entry, file))
      fail(`hostPath ${v.hostPath.path} is not in deploy/privileges.yaml for this platform`);
    else if ((entry.type ?? "") !== (v.hostPath.type === "Socket" ? "Socket" : ""))
      fail(`hostPath ${v.hostPath.path}: type ${v.hostPath.type}, the list says ${entry.type ?? "not a socket"}`);
  }
  for (const c of spec.containers ?? []) {
    const sc = c.securityContext ?? {};
    for (const cap of sc.capabilities?.add ?? [])
      if (!allowedOn(listed("capabilities", "name", cap), file))
        fail(`container ${c.name}: capability ${cap} is not in deploy/privileges.yaml`);
    if (sc.privileged === true && !allowedOn(privileges.privileged, file))
      fail(`container ${c.name}: privileged, which deploy/privileges.yaml allows only on ${privileges.privileged?.platforms}`);
    const uid = sc.runAsUser ?? spec.securityContext?.runAsUser;
    if (uid === 0 && !privileges.runAsRoot) fail(`container ${c.name}: root, not in deploy/privileges.yaml`);
  }
}

// True when the object's model exists (then checkStrict can type it).
async function validateSchema(file, doc) {
  const where = `${file}: ${doc.kind}/${doc.metadata?.name}`;
  let models;
  try {
    models = await import(modulePath(doc.apiVersion));
  } catch {
    problems.push(`${where}: apiVersion ${doc.apiVersion}: no schema known`);
    return false;
  }
  const Model = models[doc.kind];
  if (!Model) {
    problems.push(`${where}: kind ${doc.kind} is not in ${doc.apiVersion}`);
    return false;
  }
  try {
    new Model(doc).validate();
  } catch (e) {
    for (const err of e.errors ?? [{ instancePath: "", message: e.message }])
      problems.push(`${where}: ${err.instancePath || "/"}: ${err.message}`);
  }
  return true;
}

// Unknown fields: every object assigned to a constant of its interface, one a line, compiled
// with TypeScript's excess-property checks; each error line leads back to its object.
function checkStrict(typed) {
  const dir = mkdtempSync(join(tmpdir(), "gpuledger-deploy-"));
  try {
    symlinkSync(join(dirname(fileURLToPath(import.meta.url)), "node_modules"), join(dir, "node_modules"));
    const lines = typed.map(({ doc, type }, i) => {
      const t = type ?? { module: `${modulePath(doc.apiVersion)}/${doc.kind}`, name: `I${doc.kind}` };
      return `import type { ${t.name} as T${i} } from "${t.module}";\n` +
        `export const o${i}: T${i} = ${JSON.stringify(doc)};`;
    });
    const file = join(dir, "objects.ts");
    writeFileSync(file, lines.join("\n") + "\n");
    const program = ts.createProgram([file], {
      noEmit: true, strict: true, skipLibCheck: true,
      module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    });
    for (const d of ts.getPreEmitDiagnostics(program)) {
      const line = d.file ? d.file.getLineAndCharacterOfPosition(d.start).line : -1;
      const { where } = typed[Math.floor(line / 2)] ?? { where: "objects.ts" };
      problems.push(`${where}: ${ts.flattenDiagnosticMessageText(d.messageText, " ")}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// The series a PromQL expression names that gpuledger does not export (a histogram's _bucket,
// _sum and _count are its family's).
function unknownSeries(expr) {
  const unknown = [];
  for (const [name] of expr.matchAll(/\bgpuledger_[a-zA-Z0-9_]+/g)) {
    const family = name.replace(/_(bucket|sum|count)$/, "");
    if (!exported.has(name) && !exported.has(family)) unknown.push(name);
  }
  return unknown;
}

function checkRuleQueries(where, doc) {
  for (const group of doc.spec?.groups ?? [])
    for (const rule of group.rules ?? [])
      for (const name of unknownSeries(String(rule.expr)))
        problems.push(`${where}: ${group.name}/${rule.alert ?? rule.record}: ${name} is not exported`);
}

// A dashboard ConfigMap's dashboards: parsed, typed (strictly, with the objects), and checked.
function checkDashboards(where, doc, typed) {
  for (const [key, text] of Object.entries(doc.data ?? {})) {
    const at = `${where}: ${key}`;
    let dash;
    try {
      dash = JSON.parse(text);
    } catch (e) {
      problems.push(`${at}: not JSON: ${e.message}`);
      continue;
    }
    typed.push({ doc: dash, where: at, type: { module: "@grafana/schema", name: "Dashboard" } });
    for (const field of ["uid", "title", "schemaVersion", "panels", "templating"])
      if (dash[field] === undefined) problems.push(`${at}: no ${field}`);
    const ids = new Set();
    const panels = (dash.panels ?? []).flatMap((p) => [p, ...(p.panels ?? [])]);
    for (const p of panels) {
      const pat = `${at}: panel ${p.id} "${p.title}"`;
      if (!Number.isInteger(p.id) || ids.has(p.id)) problems.push(`${pat}: id missing or repeated`);
      ids.add(p.id);
      for (const f of ["h", "w", "x", "y"])
        if (!Number.isInteger(p.gridPos?.[f])) problems.push(`${pat}: gridPos.${f} missing`);
      if (p.type === "row") continue;
      if (!p.targets?.length) problems.push(`${pat}: no query`);
      for (const t of p.targets ?? []) {
        if (!t.expr) problems.push(`${pat}: target ${t.refId} has no expr`);
        for (const name of unknownSeries(String(t.expr ?? "")))
          problems.push(`${pat}: ${name} is not exported`);
      }
    }
  }
}

function podSpec(doc) {
  return ["Deployment", "DaemonSet", "StatefulSet", "Job"].includes(doc.kind)
    ? doc.spec?.template?.spec
    : undefined;
}

// Our own rules, beyond the schemas.
function checkRules(file, doc) {
  const where = `${file}: ${doc.kind}/${doc.metadata?.name}`;
  const fail = (what) => problems.push(`${where}: ${what}`);
  const clusterScoped = [
    "Namespace", "ClusterRole", "ClusterRoleBinding", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "PriorityClass",
  ];
  if (!clusterScoped.includes(doc.kind) && doc.metadata?.namespace !== "gpuledger")
    fail(`namespace ${doc.metadata?.namespace}: expected gpuledger`);
  // kube-prometheus-stack's Prometheus selects these by their `release` label by default.
  if (["ServiceMonitor", "PrometheusRule"].includes(doc.kind) && !doc.metadata?.labels?.release)
    fail("no release label: kube-prometheus-stack's default selectors would not pick it up");
  const spec = podSpec(doc);
  if (!spec) return;
  const podSeccomp = spec.securityContext?.seccompProfile?.type;
  for (const c of spec.containers ?? []) {
    const at = `container ${c.name}`;
    if (c.image !== `ghcr.io/gpuledger/gpuledger:${version}`)
      fail(`${at}: image ${c.image}: expected ghcr.io/gpuledger/gpuledger:${version}`);
    for (const kind of ["requests", "limits"])
      for (const r of ["cpu", "memory"])
        if (!c.resources?.[kind]?.[r]) fail(`${at}: resources.${kind}.${r} missing`);
    const sc = c.securityContext ?? {};
    if (sc.readOnlyRootFilesystem !== true) fail(`${at}: readOnlyRootFilesystem is not true`);
    // Privileged (the agent on a platform the list allows it on) cannot go without escalation.
    if (sc.allowPrivilegeEscalation !== false && sc.privileged !== true)
      fail(`${at}: allowPrivilegeEscalation is not false`);
    if (sc.privileged === true && doc.kind !== "DaemonSet") fail(`${at}: privileged`);
    if (!(sc.capabilities?.drop ?? []).includes("ALL")) fail(`${at}: capabilities.drop lacks ALL`);
    if (doc.kind !== "DaemonSet" && (sc.capabilities?.add ?? []).length)
      fail(`${at}: capabilities ${sc.capabilities.add} added`);
    if ((sc.seccompProfile?.type ?? podSeccomp) !== "RuntimeDefault")
      fail(`${at}: seccompProfile is not RuntimeDefault`);
    if (!c.livenessProbe?.httpGet) fail(`${at}: no HTTP liveness probe`);
    if (!c.readinessProbe?.httpGet) fail(`${at}: no HTTP readiness probe`);
    // Every hostPath is mounted read-only, but a socket (connecting needs no write access to
    // the mount, only to the socket).
    const volumes = Object.fromEntries((spec.volumes ?? []).map((v) => [v.name, v]));
    for (const m of c.volumeMounts ?? []) {
      const v = volumes[m.name];
      if (!v) fail(`${at}: mount ${m.name}: no such volume`);
      else if (v.hostPath && v.hostPath.type !== "Socket" && m.readOnly !== true)
        fail(`${at}: hostPath ${v.hostPath.path} mounted writable`);
    }
  }
  if (doc.kind === "DaemonSet") {
    checkAgentPrivileges(file, spec, fail);
    if (spec.automountServiceAccountToken !== false)
      fail("the agent gets a service-account token (automountServiceAccountToken is not false)");
    if (spec.hostPID || spec.hostNetwork || spec.hostIPC) fail("host PID, network or IPC namespace");
  } else {
    if (spec.hostPath) fail("hostPath outside the agent");
    for (const c of spec.containers ?? [])
      if (c.securityContext?.runAsUser === 0 || spec.securityContext?.runAsNonRoot !== true)
        fail(`container ${c.name}: not runAsNonRoot`);
  }
}

const typed = [];
for (const file of files) {
  for (const d of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (d.errors.length) {
      problems.push(`${file}: YAML: ${d.errors[0].message}`);
      continue;
    }
    const doc = d.toJS();
    if (!doc) continue;
    objects++;
    const where = `${file}: ${doc.kind}/${doc.metadata?.name}`;
    if (await validateSchema(file, doc)) typed.push({ doc, where });
    checkRules(file, doc);
    if (doc.kind === "PrometheusRule") checkRuleQueries(where, doc);
    if (doc.kind === "ConfigMap" && doc.metadata?.labels?.grafana_dashboard) checkDashboards(where, doc, typed);
  }
}
checkStrict(typed);
for (const p of problems) console.log(p);
console.log(`${objects} objects in ${files.length} files, ${problems.length} problems`);
process.exit(problems.length ? 1 : 0);
