// Seed: Testing Workflow, "3. Analyze Results".
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { getTestCaseStats, makeCases, report, runTestCase } from './harness.mjs'

// testCaseId: a case of its own, run twice first so its statistics have runs to count.
const [testCaseId] = await makeCases("cm123456789", [
  { name: "stats case", input: { text: "I love this!" }, expectedOutput: "positive" },
])
await runTestCase(testCaseId)
await runTestCase(testCaseId)

// ---- seed example, verbatim: begin ----
const stats = await getTestCaseStats({ testCaseId })
console.log('Pass rate:', stats.passRate + '%')
console.log('Average score:', stats.avgScore)
console.log('Recent regressions:', stats.regressions.length)
// Analyze trend data
stats.trendData.forEach(point => {
console.log(`${point.date}: ${point.passRate}% pass rate`)
})
// ---- seed example, verbatim: end ----

report({ testCaseId, stats })
