// The oxyeval dashboard: a hash router over the Testing API (POST /graphql) and the live
// event stream (GET /events). No framework and no innerHTML: every value from the API (a
// model's answer may be hostile markup) goes into the page as text.

import { barChart, lineChart, meter } from "./charts.js";

const TOKEN = document.querySelector('meta[name="oxy-token"]')?.getAttribute("content") || "";
const view = document.getElementById("view");
// A token given as /?token=... is in the page now: take it out of the address bar and history.
if (new URLSearchParams(location.search).has("token")) history.replaceState(null, "", `/${location.hash}`);

// ---------------------------------------------------------------- helpers

function authHeaders(extra = {}) {
  return TOKEN ? { ...extra, Authorization: `Bearer ${TOKEN}` } : extra;
}

/** One GraphQL request; an answer with errors throws their messages (the page shows them). */
export async function gql(query, variables = {}) {
  const resp = await fetch("/graphql", {
    method: "POST",
    headers: authHeaders({ "Content-Type": "application/json", Accept: "application/json" }),
    body: JSON.stringify({ query, variables }),
  });
  let body;
  try {
    body = await resp.json();
  } catch {
    throw new Error(`the server answered ${resp.status} without JSON`);
  }
  if (body.errors && body.errors.length) {
    throw new Error(body.errors.map((e) => e.message).join("; "));
  }
  if (!resp.ok) throw new Error(`the server answered ${resp.status}`);
  return body.data;
}

/** An element: attrs (class, href, title, on* handlers, data-*), children as nodes or text. */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const enc = encodeURIComponent;
const isNum = (v) => typeof v === "number" && Number.isFinite(v);
const fmtPct = (v) => (isNum(v) ? `${v.toFixed(1)}%` : "—"); // passRate: already percent
const fmtFrac = (v) => (isNum(v) ? `${(v * 100).toFixed(1)}%` : "—"); // 0..1 as percent
const fmtScore = (v) => (isNum(v) ? v.toFixed(2) : "—");
const fmtMs = (v) => (!isNum(v) ? "—" : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : `${Math.round(v)} ms`);
// fixed-point with two significant digits below a cent ($0.0000006), never an exponent
const fmtUsd = (v) => (!isNum(v) ? "—" : v === 0 ? "$0" : v < 0.01 ? `$${v.toFixed(Math.min(12, 1 - Math.floor(Math.log10(v))))}` : `$${v.toFixed(4)}`);
const fmtInt = (v) => (isNum(v) ? String(v) : "—");

function fmtDate(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  const p = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}`;
}

function ago(iso) {
  if (!iso) return "";
  const s = (Date.now() - new Date(iso).getTime()) / 1000;
  if (!Number.isFinite(s)) return "";
  if (s < 60) return "just now";
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

function badge(text, kind = "") {
  return h("span", { class: `badge ${kind}`.trim() }, text);
}

function statusBadge(status) {
  const kind = { completed: "ok", passed: "ok", success: "ok", scored: "ok", running: "info", failed: "bad", error: "bad", interrupted: "warn" }[status] || "";
  return badge(status || "—", kind);
}

function passBadge(passed) {
  if (passed === true) return badge("pass", "ok");
  if (passed === false) return badge("fail", "bad");
  return badge("—");
}

function card(label, value, opts = {}) {
  return h(
    "div",
    { class: `card ${opts.tone || ""}`.trim(), "data-card": opts.key || label },
    h("div", { class: "card-label" }, label),
    h("div", { class: "card-value" }, value),
    opts.sub ? h("div", { class: "card-sub" }, opts.sub) : null,
  );
}

function empty(message, command) {
  return h("div", { class: "empty" }, h("p", {}, message), command ? h("code", {}, command) : null);
}

function section(title, ...children) {
  return h("section", { class: "panel" }, h("h2", {}, title), ...children);
}

function table(headers, rows, opts = {}) {
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: opts.class || "" },
      // a number column's header is right-aligned with its numbers
      h("thead", {}, h("tr", {}, headers.map((x, i) => h("th", { class: rows[0]?.children[i]?.classList.contains("num") ? "num" : null }, x)))),
      h("tbody", {}, rows),
    ),
  );
}

function pageHeader(title, ...extra) {
  return h("header", { class: "page-head" }, h("h1", {}, title), ...extra);
}

/** A character diff (a list of {op, text}) rendered as text with inserted/deleted marks. */
function renderDiff(diff, fallback = {}) {
  let ops = diff;
  if (typeof ops === "string") {
    try {
      ops = JSON.parse(ops);
    } catch {
      ops = null;
    }
  }
  if (!Array.isArray(ops)) {
    if (fallback.expected === undefined && fallback.actual === undefined) return h("span", { class: "muted" }, "no diff");
    return h(
      "div",
      { class: "diff-pair" },
      h("div", {}, h("div", { class: "muted small" }, "expected"), h("pre", { class: "diff" }, fallback.expected ?? "")),
      h("div", {}, h("div", { class: "muted small" }, "actual"), h("pre", { class: "diff" }, fallback.actual ?? "")),
    );
  }
  const pre = h("pre", { class: "diff" });
  for (const op of ops) {
    const text = op && op.text != null ? String(op.text) : "";
    const kind = op && op.op;
    if (kind === "insert") pre.appendChild(h("ins", { title: "in the actual output only" }, text));
    else if (kind === "delete") pre.appendChild(h("del", { title: "in the expected output only" }, text));
    else if (kind === "equal") pre.appendChild(document.createTextNode(text));
    else pre.appendChild(h("span", { class: "diff-other", title: String(kind ?? "") }, text));
  }
  return pre;
}

function interval(details) {
  if (!details || typeof details !== "object") return null;
  for (const key of ["interval", "wilson", "ci", "confidenceInterval", "accuracyInterval"]) {
    const v = details[key];
    if (v && isNum(v.low) && isNum(v.high)) return { low: v.low, high: v.high };
    if (Array.isArray(v) && v.length === 2 && isNum(v[0]) && isNum(v[1])) return { low: v[0], high: v[1] };
  }
  return null;
}

/** Field selections for an aliased query over a list of ids: one round trip, not N. */
function aliased(ids, makeField) {
  const vars = {};
  const decl = [];
  const fields = ids.map((id, i) => {
    vars[`v${i}`] = id;
    decl.push(`$v${i}: ID!`);
    return `a${i}: ${makeField(`$v${i}`)}`;
  });
  return { decl: decl.join(", "), fields: fields.join("\n"), vars };
}

// ---------------------------------------------------------------- pages

const RESULT_FIELDS = `id runId kind subject status passed outcome score caseId branch repeat latencyMs costUsd output error details createdAt scores { metric value label passed threshold reason }`;
// A run's counts are the server's, the same rule for every kind: no kind is special here.
const RUN_FIELDS = `id kind subject promptId promptVersion startedAt finishedAt status total done passed failed pending errors regressions groupId results averageScore`;

async function pageCases(_args, query) {
  const promptId = query.get("prompt") || null;
  const data = await gql(
    `query Cases($p: ID) { prompts { id name } testCases(promptId: $p) {
      id name promptId description totalRuns passRate avgScore lastRun lastPassed regressionCount prompt { id name } } }`,
    { p: promptId },
  );
  const select = h(
    "select",
    {
      id: "prompt-filter",
      "aria-label": "Filter by prompt",
      onchange: (e) => {
        location.hash = e.target.value ? `#/cases?prompt=${enc(e.target.value)}` : "#/cases";
      },
    },
    h("option", { value: "" }, "All prompts"),
    data.prompts.map((p) => h("option", { value: p.id, selected: p.id === promptId }, p.name)),
  );
  const cases = data.testCases;
  const totalRuns = cases.reduce((n, c) => n + (c.totalRuns || 0), 0);
  const rated = cases.filter((c) => isNum(c.passRate));
  const regressions = cases.reduce((n, c) => n + (c.regressionCount || 0), 0);
  const out = [
    pageHeader("Test cases", h("label", { class: "filter" }, "Prompt ", select)),
    h(
      "div",
      { class: "cards" },
      card("Test cases", String(cases.length)),
      card("Total runs", String(totalRuns)),
      card("Mean pass rate", fmtPct(rated.length ? rated.reduce((n, c) => n + c.passRate, 0) / rated.length : null)),
      card("Regressions", String(regressions), { tone: regressions ? "bad" : "" }),
    ),
  ];
  if (!cases.length) {
    out.push(empty("No test cases yet — declare cases in a *.prompt.yml and run them:", "oxy cases run"));
    return out;
  }
  const rows = cases.map((c) =>
    h(
      "tr",
      { class: "clickable", "data-case": c.id, onclick: () => (location.hash = `#/case/${enc(c.id)}`) },
      h("td", {}, h("a", { href: `#/case/${enc(c.id)}` }, c.name), c.description ? h("div", { class: "muted small" }, c.description) : null),
      h("td", {}, c.prompt?.name ?? c.promptId),
      h("td", { class: "num" }, fmtInt(c.totalRuns)),
      h("td", { class: "num" }, h("span", { class: "rate" }, meter((c.passRate ?? 0) / 100, { label: fmtPct(c.passRate) }), " ", fmtPct(c.passRate))),
      h("td", { class: "num" }, fmtScore(c.avgScore)),
      h("td", {}, c.lastRun ? h("span", { title: fmtDate(c.lastRun) }, ago(c.lastRun), " ", passBadge(c.lastPassed)) : h("span", { class: "muted" }, "never")),
      h("td", { class: "num" }, c.regressionCount ? badge(String(c.regressionCount), "bad") : "0"),
    ),
  );
  out.push(table(["Name", "Prompt", "Runs", "Pass rate", "Avg score", "Last run", "Regressions"], rows, { class: "cases-table" }));
  return out;
}

async function pageCase([id]) {
  const data = await gql(
    `query Case($id: ID!) {
      testCase(id: $id) { id name description promptId expectedOutput input threshold sourceFile prompt { id name } }
      testCaseStats(testCaseId: $id) { totalRuns passRate avgScore regressionCount trendData { date totalRuns passRate avgScore } }
      testCaseExecutions(testCaseId: $id, limit: 25) { id passed score actualOutput expectedOutput outputDiff isRegression regressionType regressionTypes promptVersion createdAt status error latencyMs }
      testBranches(testCaseId: $id) { id }
    }`,
    { id },
  );
  const tc = data.testCase;
  if (!tc) return [pageHeader("Test case"), empty(`No test case "${id}".`)];
  const stats = data.testCaseStats || { totalRuns: 0, trendData: [] };
  const regressions = stats.regressionCount ?? data.testCaseExecutions.filter((e) => e.isRegression).length;
  const out = [
    h("nav", { class: "crumbs" }, h("a", { href: "#/cases" }, "Test cases"), " / ", tc.prompt?.name ?? tc.promptId),
    pageHeader(
      tc.name,
      data.testBranches.length ? h("a", { class: "button", href: `#/ab/${enc(tc.id)}`, id: "ab-link" }, `A/B test (${data.testBranches.length} branches)`) : null,
    ),
    tc.description ? h("p", { class: "lead" }, tc.description) : null,
    h(
      "div",
      { class: "cards" },
      card("Total runs", fmtInt(stats.totalRuns), { key: "total-runs" }),
      card("Pass rate", fmtPct(stats.passRate), { key: "pass-rate", sub: isNum(tc.threshold) ? `passes at score ≥ ${tc.threshold}` : null }),
      card("Avg score", fmtScore(stats.avgScore), { key: "avg-score" }),
      card("Regressions", fmtInt(regressions), { key: "regressions", tone: regressions ? "bad" : "" }),
    ),
  ];
  const trend = stats.trendData || [];
  if (trend.length) {
    const tipFor = (t, v) => `${t.date}: ${v} (${t.totalRuns} run${t.totalRuns === 1 ? "" : "s"})`;
    out.push(
      h(
        "div",
        { class: "charts" },
        section(
          "Pass rate per day",
          h("div", { id: "chart-pass-rate" },
            lineChart({
              points: trend.map((t) => ({ x: t.date.slice(5), y: t.passRate, tip: tipFor(t, fmtPct(t.passRate)) })),
              yMax: 100,
              yFormat: (v) => `${Math.round(v)}%`,
              xLabel: "day",
              yLabel: "pass rate",
              label: "Pass rate per day",
            })),
        ),
        section(
          "Average score per day",
          h("div", { id: "chart-avg-score" },
            lineChart({
              points: trend.map((t) => ({ x: t.date.slice(5), y: t.avgScore, tip: tipFor(t, fmtScore(t.avgScore)) })),
              yMax: 1,
              yFormat: (v) => v.toFixed(2),
              xLabel: "day",
              yLabel: "score",
              label: "Average score per day",
            })),
        ),
      ),
    );
  } else {
    out.push(empty("No runs yet — run", "oxy cases run"));
  }
  out.push(
    h(
      "details",
      { class: "panel case-def" },
      h("summary", {}, "Input and expected output", tc.sourceFile ? h("span", { class: "muted small" }, ` · ${tc.sourceFile}`) : null),
      h(
        "div",
        { class: "diff-pair" },
        h("div", {}, h("div", { class: "muted small" }, "input"), h("pre", { class: "output" }, JSON.stringify(tc.input, null, 2))),
        h("div", {}, h("div", { class: "muted small" }, "expected output"), h("pre", { class: "output" }, tc.expectedOutput ?? "(none yet: oxy cases accept)")),
      ),
    ),
  );
  const execs = data.testCaseExecutions;
  out.push(
    section(
      "Recent executions",
      h("p", { class: "muted small" }, "Expected → actual: ", h("del", {}, "only expected"), " ", h("ins", {}, "only actual")),
      execs.length
        ? table(
            ["When", "Result", "Score", "Version", "Latency", "Expected → actual"],
            execs.map((e) =>
              h(
                "tr",
                { class: e.isRegression ? "regression" : "", "data-execution": e.id },
                h("td", { title: e.createdAt || "" }, fmtDate(e.createdAt)),
                h(
                  "td",
                  {},
                  e.error ? badge("error", "bad") : passBadge(e.passed),
                  e.isRegression ? [" ", badge(`regression${e.regressionType ? `: ${e.regressionType}` : ""}`, "bad")] : null,
                ),
                h("td", { class: "num" }, fmtScore(e.score)),
                h("td", { class: "num" }, `v${e.promptVersion}`),
                h("td", { class: "num" }, fmtMs(e.latencyMs)),
                h("td", { class: "diff-cell" }, e.error ? h("pre", { class: "diff error" }, e.error) : renderDiff(e.outputDiff, { expected: e.expectedOutput, actual: e.actualOutput })),
              ),
            ),
            { class: "exec-table" },
          )
        : empty("No executions yet — run", "oxy cases run"),
    ),
  );
  return out;
}

const CRITERIA = ["best_quality", "fastest", "cheapest", "best_value", "balanced"];

async function pageAB([caseId, chosen]) {
  const criteria = CRITERIA.includes(chosen) ? chosen : null;
  const data = await gql(
    `query AB($id: ID!, $criteria: String) {
      testCase(id: $id) { id name prompt { id name } }
      testBranches(testCaseId: $id) { id name provider model isControl isActive totalRuns avgLatency avgCost avgQualityScore passRate temperature }
      abResult(testCaseId: $id, winnerCriteria: $criteria) {
        criteria runId notes significant
        winner { branchName model qualityScore latencyMs estimatedCost }
        branches { branchName rank paretoOptimal }
      }
    }`,
    { id: caseId, criteria },
  );
  const out = [
    h("nav", { class: "crumbs" }, h("a", { href: "#/cases" }, "Test cases"), " / ", h("a", { href: `#/case/${enc(caseId)}` }, data.testCase?.name ?? caseId), " / A/B"),
    pageHeader(`A/B: ${data.testCase?.name ?? caseId}`),
  ];
  const branches = data.testBranches;
  if (!branches.length) {
    out.push(empty("No branches for this case — declare `branches:` in its prompt file and run", "oxy ab run"));
    return out;
  }
  // The winner of the latest A/B run, ranked by the server with the one ranking `oxy ab
  // run` uses (the criterion it ran with, or the one picked here: no model is called).
  const ab = data.abResult;
  const w = ab?.winner;
  const winner = w ? { name: w.branchName, quality: w.qualityScore, latency: w.latencyMs, cost: w.estimatedCost } : null;
  const picker = h(
    "select",
    { id: "criteria", "aria-label": "winner criterion" },
    CRITERIA.map((c) => h("option", { value: c, ...(c === (ab?.criteria ?? criteria) ? { selected: "selected" } : {}) }, c.replace("_", " "))),
  );
  picker.addEventListener("change", () => {
    location.hash = `#/ab/${enc(caseId)}/${picker.value}`;
  });
  out.push(h("div", { class: "toolbar" }, h("label", {}, "Winner criterion ", picker)));
  const tagsOf = (b) => [b.isControl ? "control" : null, winner && b.name === winner.name ? "winner" : null].filter(Boolean);
  const labelOf = (b) => `${b.name}${b.isControl ? " (control)" : ""}`;
  out.push(
    h(
      "div",
      { class: "cards" },
      winner
        ? card(`Winner · ${ab.criteria.replace("_", " ")}`, winner.name, {
            key: "winner",
            tone: "good",
            sub: `${winnerFacts(winner).join(" · ")} · latest run${ab.significant === false ? " · not significant" : ""}${ab.notes?.length ? ` · ${ab.notes[0]}` : ""}`,
          })
        : ab?.runId
          ? card(`Winner · ${ab.criteria.replace("_", " ")}`, "none", {
              key: "winner",
              sub: ab.notes?.find((n) => n.startsWith("no winner") || n.startsWith("no significant")) ?? "no branch is ahead beyond the noise",
            })
          : card("Winner", "—", { key: "winner", sub: "no scored A/B run yet — run `oxy ab run`" }),
      card("Branches", String(branches.length), { sub: `control: ${branches.find((b) => b.isControl)?.name ?? "none"}` }),
      card("Runs", fmtInt(branches.reduce((n, b) => n + (b.totalRuns || 0), 0)), { sub: "executions over all branches" }),
    ),
  );
  const chart = (title, key, format) =>
    section(
      title,
      barChart({
        items: branches.map((b) => ({ label: labelOf(b), value: b[key], tags: tagsOf(b), tip: `${labelOf(b)} · ${b.model}: ${isNum(b[key]) ? format(b[key]) : "no data"}` })),
        format,
        label: title,
      }),
    );
  out.push(
    h(
      "div",
      { class: "charts three", id: "ab-charts" },
      chart("Avg quality", "avgQualityScore", fmtScore),
      chart("Avg latency", "avgLatency", fmtMs),
      chart("Avg cost", "avgCost", fmtUsd),
    ),
  );
  out.push(
    section(
      "Branches",
      table(
        ["Branch", "Model", "Runs", "Quality", "Pass rate", "Latency", "Cost"],
        branches.map((b) =>
          h(
            "tr",
            { class: tagsOf(b).join(" ") },
            h("td", {}, b.name, " ", b.isControl ? badge("control", "info") : null, winner && b.name === winner.name ? [" ", badge("winner", "gold")] : null, b.isActive === false ? [" ", badge("inactive")] : null),
            h("td", {}, [b.provider, b.model].filter(Boolean).join(" / ")),
            h("td", { class: "num" }, fmtInt(b.totalRuns)),
            h("td", { class: "num" }, fmtScore(b.avgQualityScore)),
            h("td", { class: "num" }, fmtPct(b.passRate)),
            h("td", { class: "num" }, fmtMs(b.avgLatency)),
            h("td", { class: "num" }, fmtUsd(b.avgCost)),
          ),
        ),
      ),
    ),
  );
  const q = aliased(branches.map((b) => b.id), (v) => `testBranchExecutions(branchId: ${v}, limit: 10) { id branchId output error status latencyMs qualityScore estimatedCost outputTokens promptVersion createdAt iteration }`);
  let ex = {};
  let exError = null;
  try {
    ex = await gql(`query BE(${q.decl}) { ${q.fields} }`, q.vars);
  } catch (err) {
    exError = String(err.message || err); // the charts above stay useful without them
  }
  const names = new Map(branches.map((b) => [b.id, b.name]));
  const rows = branches
    .flatMap((_, i) => ex[`a${i}`] || [])
    .sort((a, b) => String(b.createdAt).localeCompare(String(a.createdAt)))
    .slice(0, 40)
    .map((e) =>
      h(
        "tr",
        {},
        h("td", {}, fmtDate(e.createdAt)),
        h("td", {}, names.get(e.branchId) ?? e.branchId),
        h("td", {}, statusBadge(e.status)),
        h("td", { class: "num" }, fmtScore(e.qualityScore)),
        h("td", { class: "num" }, fmtMs(e.latencyMs)),
        h("td", { class: "num" }, fmtUsd(e.estimatedCost)),
        h("td", {}, h("pre", { class: "output" }, e.error || e.output)),
      ),
    );
  out.push(
    section(
      "Branch executions",
      exError
        ? h("div", { class: "error-box small" }, exError)
        : rows.length
          ? table(["When", "Branch", "Status", "Quality", "Latency", "Cost", "Output"], rows)
          : empty("No executions yet — run", "oxy ab run"),
    ),
  );
  return out;
}

async function pageConsistency() {
  const { subjects } = await gql(`{ subjects(kind: "consistency") }`);
  const out = [pageHeader("Consistency tests")];
  if (!subjects.length) {
    out.push(empty("No consistency results yet — run", "oxy test agents/"));
    return out;
  }
  const list = subjects.slice(0, 60);
  const q = aliased(list, (v) => `results(kind: "consistency", subject: ${v}, limit: 30) { ${RESULT_FIELDS} }`);
  q.decl = q.decl.replaceAll("ID!", "String!");
  const data = await gql(`query C(${q.decl}) { ${q.fields} }`, q.vars);
  const grid = h("div", { class: "charts fill" });
  list.forEach((subject, i) => {
    const results = (data[`a${i}`] || []).slice().reverse(); // oldest first
    const last = results[results.length - 1];
    const d = last?.details || {};
    const points = results.map((r, k) => {
      const iv = interval(r.details);
      return {
        x: `#${k + 1}`,
        y: r.score,
        low: iv?.low,
        high: iv?.high,
        tip: `${fmtDate(r.createdAt)}: accuracy ${fmtFrac(r.score)}${iv ? ` (${fmtFrac(iv.low)}–${fmtFrac(iv.high)})` : ""}${r.error ? ` — ${r.error}` : ""}`,
      };
    });
    grid.appendChild(
      h(
        "section",
        { class: "panel", "data-subject": subject },
        h("h2", {}, d.name || subject),
        h("div", { class: "muted small" }, [d.file, d.model && `model ${d.model}`, d.judge_model && `judge ${d.judge_model}`, d.n && `${d.n} runs each`].filter(Boolean).join(" · ")),
        h("div", { class: "inline-stats" }, h("span", { class: "big" }, fmtFrac(last?.score)), " latest accuracy ", last ? statusBadge(last.status) : null),
        lineChart({ points, yMax: 1, yFormat: (v) => `${Math.round(v * 100)}%`, xLabel: "run", yLabel: "accuracy", label: `Accuracy per run: ${subject}`, height: 200 }),
      ),
    );
  });
  out.push(grid);
  if (subjects.length > list.length) out.push(h("p", { class: "muted" }, `${subjects.length - list.length} more tests not shown.`));
  return out;
}

/** The latest run of each distinct subject of a kind, with its results. */
async function latestRunsWithResults(kind, limit = 8) {
  const { runs } = await gql(`query L($k: String) { runs(kind: $k, limit: 50) { ${RUN_FIELDS} } }`, { k: kind });
  const seen = new Set();
  const latest = runs.filter((r) => (seen.has(r.subject) ? false : seen.add(r.subject))).slice(0, limit);
  if (!latest.length) return [];
  const q = aliased(latest.map((r) => r.id), (v) => `run(id: ${v}) { results { ${RESULT_FIELDS} } }`);
  const data = await gql(`query D(${q.decl}) { ${q.fields} }`, q.vars);
  return latest.map((run, i) => ({ run, results: data[`a${i}`]?.results || [] }));
}

function runHeading(run) {
  return h("div", { class: "muted small" }, `run ${run.id.slice(0, 8)} · ${fmtDate(run.startedAt)} · `, statusBadge(run.status), " ", h("a", { href: `#/runs` }, "all runs"));
}

async function pagePassFail() {
  const groups = await latestRunsWithResults("passfail");
  const out = [pageHeader("Judged pass/fail tests")];
  if (!groups.length) {
    out.push(empty("No pass/fail runs yet — run", "oxy test   (or oxy chattest <folder>)"));
    return out;
  }
  for (const { run, results } of groups) {
    const chat = String(run.subject || "").startsWith("chattest");
    const rows = results.map((r) => {
      const parts = String(r.subject).split("::");
      const criterion = r.details?.criterionKey ?? parts[parts.length - 1];
      const test = parts.slice(0, -1);
      const model = r.details?.model ?? (chat && test.length > 1 ? test[test.length - 1] : null);
      const testName = chat && test.length > 1 && !r.details?.model ? test.slice(0, -1).join(" · ") : test.join(" · ");
      const iv = interval(r.details);
      const flaky = r.details?.flaky === true;
      return h(
        "tr",
        { class: flaky ? "flaky" : "" },
        h("td", {}, testName),
        h("td", {}, model ?? "—"),
        h("td", {}, criterion),
        h("td", { class: "num" }, h("span", { class: "rate" }, meter(r.score ?? 0, { label: fmtFrac(r.score) }), " ", fmtFrac(r.score))),
        h("td", { class: "num" }, iv ? `${fmtFrac(iv.low)}–${fmtFrac(iv.high)}` : "—"),
        h("td", { class: "num" }, isNum(r.details?.runs) ? `${r.details.passes ?? 0}/${r.details.runs}` : "—"),
        h("td", {}, r.status === "error" ? badge("error", "bad") : passBadge(r.passed), flaky ? [" ", badge("flaky", "warn")] : null, r.error ? h("div", { class: "muted small" }, r.error) : null),
      );
    });
    out.push(section(run.subject || run.id, runHeading(run), rows.length ? table(["Test", "Model", "Criterion", "Pass rate", "Wilson interval", "Passes", "Verdict"], rows) : empty("This run has no results.")));
  }
  return out;
}

async function pageSdk() {
  const groups = await latestRunsWithResults("sdk");
  const out = [pageHeader("SDK suites")];
  if (!groups.length) {
    out.push(empty("No SDK runs yet — call evaluate() or run_test_suite() from your tests, e.g.", "python examples/sdk/suite.py"));
    return out;
  }
  for (const { run, results } of groups) {
    const metrics = [];
    const byCase = new Map();
    for (const r of results) {
      const parts = String(r.subject).split("::");
      const key = r.caseId ?? (parts.length > 2 ? parts.slice(1, -1).join("::") : r.subject);
      const row = byCase.get(key) || new Map();
      for (const s of r.scores) {
        if (!metrics.includes(s.metric)) metrics.push(s.metric);
        row.set(s.metric, s);
      }
      byCase.set(key, row);
    }
    const rows = [...byCase.entries()].map(([key, row]) =>
      h(
        "tr",
        {},
        h("td", {}, key),
        metrics.map((m) => {
          const s = row.get(m);
          if (!s) return h("td", { class: "num muted" }, "—");
          return h("td", { class: `num ${s.passed === false ? "cell-bad" : s.passed ? "cell-ok" : ""}`, title: s.reason || "" }, fmtScore(s.value), s.passed === false ? " ✗" : "");
        }),
      ),
    );
    out.push(section(run.subject || run.id, runHeading(run), rows.length ? table(["Test case", ...metrics], rows) : empty("This run has no results.")));
  }
  return out;
}

// What is known of the winner, each value named; what is not known says so in words
// (a mock or unpriced model has no cost), never a bare dash beside another.
function winnerFacts(w) {
  return [
    isNum(w.quality) ? `quality ${fmtScore(w.quality)}` : "quality not scored",
    isNum(w.latency) ? `latency ${fmtMs(w.latency)}` : "latency unknown",
    isNum(w.cost) ? `cost ${fmtUsd(w.cost)}` : "cost unknown (no price for the model)",
  ];
}

// A consistency run's results carry an accuracy and no pass/fail of their own (unless a
// gate judged them): its row shows the accuracy, not "0 passed, 0 failed".
const accuracyOnly = (r) => r.kind === "consistency" && !r.passed && !r.failed;

async function pageRuns() {
  const { runs } = await gql(`{ runs(limit: 50) { ${RUN_FIELDS} } }`);
  const out = [pageHeader("Runs")];
  if (!runs.length) {
    out.push(empty("No runs yet — run", "oxy cases run"));
    return out;
  }
  const picked = [];
  const button = h("button", { class: "button", id: "compare-button", disabled: true }, "Compare 2 runs");
  button.addEventListener("click", () => {
    const [a, b] = picked.map((id) => runs.find((r) => r.id === id));
    const [base, head] = String(a.startedAt) <= String(b.startedAt) ? [a, b] : [b, a];
    location.hash = `#/compare/${enc(base.id)}/${enc(head.id)}`;
  });
  const sync = () => {
    button.disabled = picked.length !== 2;
    button.textContent = picked.length === 2 ? "Compare the 2 runs →" : `Pick ${2 - picked.length} more run${picked.length === 1 ? "" : "s"} to compare`;
  };
  sync();
  const rows = runs.map((r) => {
    const box = h("input", { type: "checkbox", "data-run": r.id, "aria-label": `pick run ${r.id}` });
    box.addEventListener("change", () => {
      if (box.checked) {
        picked.push(r.id);
        if (picked.length > 2) {
          const drop = picked.shift();
          const other = view.querySelector(`input[data-run="${CSS.escape(drop)}"]`);
          if (other) other.checked = false;
        }
      } else picked.splice(picked.indexOf(r.id), 1);
      sync();
    });
    const subjectLink = r.kind === "ab" && r.subject ? h("a", { href: `#/ab/${enc(r.subject)}` }, r.subject) : r.subject;
    return h(
      "tr",
      {},
      h("td", {}, box),
      h("td", {}, h("code", { title: r.id }, r.id.slice(0, 8))),
      h("td", {}, badge(r.kind, "kind")),
      h("td", {}, subjectLink ?? "—"),
      h("td", {}, fmtDate(r.startedAt)),
      h("td", {}, statusBadge(r.status)),
      h("td", { class: "num" }, r.status === "running" ? `${r.done ?? 0}/${r.total ?? "?"}` : fmtInt(r.total)),
      ...(accuracyOnly(r)
        ? [h("td", { class: "num muted", colspan: 2, "data-count": "passed-failed", title: "consistency tests are scored by accuracy, not passed or failed" }, "no pass/fail")]
        : [h("td", { class: "num", "data-count": "passed" }, fmtInt(r.passed)), h("td", { class: "num", "data-count": "failed" }, fmtInt(r.failed))]),
      h("td", { class: "num", "data-count": "errors" }, r.errors ? badge(String(r.errors), "bad") : fmtInt(r.errors)),
      h("td", { class: "num", "data-count": "averageScore" }, accuracyOnly(r) && isNum(r.averageScore) ? `${fmtFrac(r.averageScore)} accuracy` : fmtScore(r.averageScore)),
      h("td", { class: "num" }, r.regressions ? badge(String(r.regressions), "bad") : fmtInt(r.regressions)),
    );
  });
  out.push(h("div", { class: "toolbar" }, button));
  out.push(table(["", "Run", "Kind", "Subject", "Started", "Status", "Total", "Passed", "Failed", "Errors", "Avg score", "Regressions"], rows, { class: "runs-table" }));
  return out;
}

async function pageCompare([base, head]) {
  const data = await gql(
    `query Cmp($a: ID!, $b: ID!) { compareRuns(baseRunId: $a, headRunId: $b) {
      base { ${RUN_FIELDS} } head { ${RUN_FIELDS} }
      regressed fixed improved worsened unchanged added removed
      changes { key subject change scoreDelta outputDiff
        before { status passed score output error } after { status passed score output error } } } }`,
    { a: base, b: head },
  );
  const c = data.compareRuns;
  const runLabel = (r) => `${r.kind} · ${r.subject ?? ""} · ${fmtDate(r.startedAt)} (${r.id.slice(0, 8)})`;
  const out = [
    h("nav", { class: "crumbs" }, h("a", { href: "#/runs" }, "Runs"), " / compare"),
    pageHeader("Compare runs"),
    h("p", { class: "lead" }, h("span", { class: "muted" }, "base "), runLabel(c.base), h("span", { class: "muted" }, "  →  head "), runLabel(c.head)),
    h(
      "div",
      { class: "cards" },
      card("Regressed", String(c.regressed), { key: "regressed", tone: c.regressed ? "bad" : "" }),
      card("Fixed", String(c.fixed), { key: "fixed", tone: c.fixed ? "good" : "" }),
      card("Improved", String(c.improved), { key: "improved" }),
      card("Worsened", String(c.worsened), { key: "worsened" }),
      card("Unchanged", String(c.unchanged), { key: "unchanged" }),
      card("Added / removed", `${c.added} / ${c.removed}`, { key: "added-removed" }),
    ),
  ];
  if (!c.changes.length) {
    out.push(empty("Nothing to compare: neither run has results."));
    return out;
  }
  const order = { regressed: 0, worsened: 1, fixed: 2, improved: 3, added: 4, removed: 5, unchanged: 6 };
  const tone = { regressed: "bad", worsened: "warn", fixed: "ok", improved: "ok", added: "info", removed: "info" };
  const rows = c.changes
    .slice()
    .sort((x, y) => (order[x.change] ?? 9) - (order[y.change] ?? 9))
    .map((ch) => {
      const delta = isNum(ch.scoreDelta) ? `${ch.scoreDelta > 0 ? "+" : ""}${ch.scoreDelta.toFixed(2)}` : "—";
      const outputs =
        ch.outputDiff != null
          ? renderDiff(ch.outputDiff)
          : ch.after?.output != null || ch.before?.output != null
            ? h("pre", { class: "output" }, ch.after?.output ?? ch.before?.output)
            : h("span", { class: "muted" }, "—");
      return h(
        "tr",
        { class: `change-${ch.change}`, "data-change": ch.change },
        h("td", {}, ch.key),
        h("td", {}, badge(ch.change, tone[ch.change] || "")),
        h("td", { class: "num" }, fmtScore(ch.before?.score), " ", ch.before ? passBadge(ch.before.passed) : null),
        h("td", { class: "num" }, fmtScore(ch.after?.score), " ", ch.after ? passBadge(ch.after.passed) : null),
        h("td", { class: "num" }, delta),
        h("td", { class: "diff-cell" }, outputs),
      );
    });
  out.push(section("Per test", h("p", { class: "muted small" }, "Outputs, base → head: ", h("del", {}, "only in base"), " ", h("ins", {}, "only in head")), table(["Test", "Change", "Before", "After", "Δ score", "Output"], rows, { class: "compare-table" })));
  return out;
}

// ---------------------------------------------------------------- live progress

const live = { streams: new Map(), running: [], connected: false, listeners: new Set() };

function onEvent(ev) {
  if (!ev || typeof ev !== "object" || !ev.stream) return;
  let s = live.streams.get(ev.stream);
  if (!s) {
    s = { stream: ev.stream, operation: ev.operation, kind: ev.kind, total: 0, done: 0, subjects: new Map(), status: "running", messages: [], startedAt: Date.now() };
    live.streams.set(ev.stream, s);
  }
  s.kind = ev.kind || s.kind;
  s.operation = ev.operation || s.operation;
  const subj = (name) => {
    if (!s.subjects.has(name)) s.subjects.set(name, { name, steps: 0, done: 0, finished: false });
    return s.subjects.get(name);
  };
  switch (ev.type) {
    case "run_started":
      s.expectedSubjects = ev.subjects;
      break;
    case "subject_started":
      if (ev.subject) subj(ev.subject).steps += ev.steps || 0;
      break;
    case "steps_planned":
      if (ev.subject) subj(ev.subject).steps += ev.steps || 0;
      break;
    case "sample_finished":
    case "score_recorded":
      if (ev.subject) subj(ev.subject).done += 1;
      break;
    case "result_recorded": {
      const name = ev.result?.subject ?? ev.subject;
      if (name) {
        const x = subj(name);
        x.finished = true;
        x.result = ev.result;
      }
      break;
    }
    case "warned":
      if (ev.message) s.messages.push(String(ev.message));
      break;
    case "run_finished":
      s.status = ev.status || "completed";
      break;
    default:
      return; // unknown types are ignored
  }
  let total = 0;
  let done = 0;
  for (const x of s.subjects.values()) {
    const steps = Math.max(x.steps, x.done, 1);
    total += steps;
    done += x.finished ? steps : Math.min(x.done, steps);
  }
  s.total = total;
  s.done = done;
  notify();
}

function notify() {
  updateLiveBadge();
  for (const fn of live.listeners) fn();
}

/** Server-sent events read through fetch, so the bearer token can be sent too. */
async function connectEvents() {
  let wait = 1000;
  for (;;) {
    try {
      const resp = await fetch("/events", { headers: authHeaders({ Accept: "text/event-stream" }) });
      if (!resp.ok || !resp.body) throw new Error(String(resp.status));
      live.connected = true;
      wait = 1000;
      notify();
      const reader = resp.body.getReader();
      const decoder = new TextDecoder();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += decoder.decode(value, { stream: true });
        let cut;
        while ((cut = buf.search(/\r?\n\r?\n/)) >= 0) {
          const block = buf.slice(0, cut);
          buf = buf.slice(cut).replace(/^\r?\n\r?\n/, "");
          const data = block
            .split(/\r?\n/)
            .filter((l) => l.startsWith("data:"))
            .map((l) => l.slice(5).replace(/^ /, ""))
            .join("\n");
          if (!data) continue;
          try {
            onEvent(JSON.parse(data));
          } catch {
            /* not JSON: ignored */
          }
        }
      }
    } catch {
      /* reconnect below */
    }
    live.connected = false;
    notify();
    await new Promise((r) => setTimeout(r, wait));
    wait = Math.min(wait * 2, 30000);
  }
}

async function pollRunning() {
  if (document.visibilityState === "hidden") return;
  try {
    const { runs } = await gql(`{ runs(status: "running", limit: 20) { ${RUN_FIELDS} } }`);
    live.running = runs;
    notify();
  } catch {
    /* the next poll tries again */
  }
}

function updateLiveBadge() {
  const el = document.getElementById("live-count");
  if (!el) return;
  const active = [...live.streams.values()].filter((s) => s.status === "running").length;
  const n = Math.max(active, live.running.length);
  el.textContent = n ? String(n) : "";
  el.hidden = !n;
}

function progress(done, total, label) {
  const f = total ? Math.min(1, done / total) : 0;
  const fill = h("div", { class: "progress-fill" });
  fill.style.width = `${(f * 100).toFixed(1)}%`; // CSSOM: the server's CSP refuses style attributes
  return h(
    "div",
    { class: "progress", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": total || 0, "aria-valuenow": done, "aria-label": label },
    fill,
  );
}

function renderLive() {
  const out = [pageHeader("Live", h("span", { class: `badge ${live.connected ? "ok" : "warn"}`, id: "stream-state" }, live.connected ? "event stream connected" : "connecting…"))];
  const streams = [...live.streams.values()].reverse();
  if (streams.length) {
    out.push(
      section(
        "This server's operations",
        streams.map((s) =>
          h(
            "div",
            { class: `stream ${s.status}`, "data-stream": s.stream },
            h("div", { class: "stream-head" }, h("strong", {}, s.operation || s.kind || s.stream), " ", badge(s.kind || "", "kind"), " ", statusBadge(s.status), h("span", { class: "muted small right" }, `${s.done}/${s.total} steps`)),
            progress(s.done, s.total, s.stream),
            h(
              "div",
              { class: "subjects" },
              [...s.subjects.values()].map((x) =>
                h(
                  "div",
                  { class: "subject-row" },
                  h("span", { class: "subject-name" }, x.name),
                  progress(x.finished ? 1 : x.done, x.finished ? 1 : Math.max(x.steps, x.done, 1), x.name),
                  x.result ? h("span", {}, passBadge(x.result.passed), " ", fmtScore(x.result.score)) : h("span", { class: "muted small" }, `${x.done}/${x.steps || "?"}`),
                ),
              ),
            ),
            s.messages.length ? h("ul", { class: "warnings" }, s.messages.slice(-5).map((m) => h("li", {}, m))) : null,
          ),
        ),
      ),
    );
  }
  out.push(
    section(
      "Running runs (every process on this history)",
      live.running.length
        ? live.running.map((r) =>
            h(
              "div",
              { class: "stream", "data-run": r.id },
              h("div", { class: "stream-head" }, h("strong", {}, r.subject || r.id), " ", badge(r.kind, "kind"), h("span", { class: "muted small right" }, `${r.done ?? 0}/${r.total ?? "?"} · started ${ago(r.startedAt)}`)),
              progress(r.done ?? 0, r.total ?? 0, r.subject || r.id),
            ),
          )
        : empty("Nothing is running right now — start a suite, e.g.", "oxy cases run"),
    ),
  );
  return out;
}

async function pageLive() {
  pollRunning();
  return renderLive();
}

// ---------------------------------------------------------------- router

const ROUTES = [
  [/^\/?$/, pageCases, "cases"],
  [/^\/cases$/, pageCases, "cases"],
  [/^\/case\/([^/]+)$/, pageCase, "cases"],
  [/^\/ab\/([^/]+)(?:\/([a-z_]+))?$/, pageAB, "cases"],
  [/^\/consistency$/, pageConsistency, "consistency"],
  [/^\/passfail$/, pagePassFail, "passfail"],
  [/^\/sdk$/, pageSdk, "sdk"],
  [/^\/runs$/, pageRuns, "runs"],
  [/^\/compare\/([^/]+)\/([^/]+)$/, pageCompare, "runs"],
  [/^\/live$/, pageLive, "live"],
];

let renderSeq = 0;

async function route() {
  const seq = ++renderSeq;
  const raw = location.hash.replace(/^#/, "") || "/cases";
  const [path, qs] = raw.split("?");
  const query = new URLSearchParams(qs || "");
  const match = ROUTES.map(([re, fn, nav]) => [path.match(re), fn, nav]).find(([m]) => m);
  live.listeners.clear();
  for (const a of document.querySelectorAll("nav.side a")) a.classList.toggle("active", a.dataset.nav === (match ? match[2] : ""));
  if (!match) {
    view.replaceChildren(pageHeader("Not found"), empty("No such page.", "#/cases"));
    return;
  }
  const [m, fn, nav] = match;
  const args = m.slice(1).map((x) => decodeURIComponent(x));
  view.setAttribute("aria-busy", "true");
  try {
    const nodes = await fn(args, query);
    if (seq !== renderSeq) return; // the user went elsewhere meanwhile
    view.replaceChildren(...nodes.flat().filter(Boolean).map((n) => (n instanceof Node ? n : document.createTextNode(String(n)))));
    if (nav === "live") {
      let queued = false;
      live.listeners.add(() => {
        if (queued) return;
        queued = true;
        requestAnimationFrame(() => {
          queued = false;
          if (seq === renderSeq) view.replaceChildren(...renderLive());
        });
      });
    }
  } catch (err) {
    if (seq !== renderSeq) return;
    view.replaceChildren(pageHeader("Something went wrong"), h("div", { class: "error-box", role: "alert" }, String(err && err.message ? err.message : err)));
  } finally {
    if (seq === renderSeq) {
      view.removeAttribute("aria-busy");
      document.body.dataset.page = match ? path : "";
      document.body.dataset.ready = String(seq);
    }
  }
}

async function serverInfo() {
  try {
    const { serverInfo: s } = await gql(`{ serverInfo { version project } }`);
    const el = document.getElementById("server-info");
    if (el) el.textContent = `oxyeval ${s.version}${s.project ? ` · ${s.project}` : ""}`;
  } catch {
    /* the footer stays empty */
  }
}

window.addEventListener("hashchange", route);
route();
serverInfo();
connectEvents();
pollRunning();
setInterval(pollRunning, 4000);
