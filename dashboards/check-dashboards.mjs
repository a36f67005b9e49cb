// Type-check every dashboard JSON in this directory against @grafana/schema's Dashboard type with
// strict tsc: each file becomes `const dashboard: Dashboard = <its JSON>`, so a wrong enum, a
// wrong type, a missing required field or an unknown key (excess property) fails the check.
// Panel `options` are Record<string, unknown> in the schema; their queries are checked against a
// live Prometheus by the pipeline test instead (tests/pipeline/).
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
// Arguments: dashboard files to check; default: every dashboard JSON next to this script.
const args = process.argv.slice(2);
const dashboards = args.length
  ? args
  : readdirSync(here).filter((name) => name.endsWith(".json") && !name.startsWith("package")).map((name) => join(here, name));
if (dashboards.length === 0) {
  console.error("no dashboard JSON found");
  process.exit(1);
}
const work = mkdtempSync(join(here, ".tscheck-"));
try {
  const files = dashboards.map((name, i) => {
    const body = JSON.stringify(JSON.parse(readFileSync(name, "utf8")), null, 2);
    const file = join(work, `dashboard${i}.ts`);
    writeFileSync(file, `// ${name}\nimport type { Dashboard } from "@grafana/schema";\n\nexport const dashboard: Dashboard = ${body};\n`);
    return file;
  });
  const tsc = join(here, "node_modules", ".bin", "tsc");
  const result = spawnSync(tsc, ["--strict", "--noEmit", "--exactOptionalPropertyTypes", "--target", "es2022",
    "--module", "nodenext", "--moduleResolution", "nodenext", "--skipLibCheck", ...files], { encoding: "utf8" });
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  if (result.status !== 0) {
    console.error(`dashboard type check FAILED (${dashboards.join(", ")})`);
    process.exit(1);
  }
  console.log(`dashboard type check passed: ${dashboards.join(", ")}`);
} finally {
  rmSync(work, { recursive: true, force: true });
}
