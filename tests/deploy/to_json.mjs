// Multi-document YAML (rendered manifests) on stdin to one JSON array on stdout, for tests
// written in C++ (deployed_processes_e2e_test).
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const docs = parseAllDocuments(readFileSync(0, "utf8"))
  .map((d) => d.toJS())
  .filter((d) => d);
process.stdout.write(JSON.stringify(docs));
