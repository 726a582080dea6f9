// Seed: Testing Workflow, "2. Run Tests After Changes".
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { batchRunTests, makeCases, report } from './harness.mjs'

// The snippet's ids "test1".."test3" are placeholders: the harness makes three cases of
// that name (one with an expected output the model will not give) and batchRunTests
// sends their real ids in their place.
await makeCases("cm123456789", [
  { name: "test1", input: { text: "I love this!" }, expectedOutput: "positive" },
  { name: "test2", input: { text: "This is terrible." }, expectedOutput: "negative" },
  { name: "test3", input: { text: "It's okay." }, expectedOutput: "positive" },
])

// ---- seed example, verbatim: begin ----
// Batch run all tests for a prompt
const results = await batchRunTests({
promptId: "cm123456789",
testCaseIds: ["test1", "test2", "test3"]
})
// Check for failures or regressions
const failures = results.filter(r => !r.passed)
const regressions = results.filter(r => r.isRegression)
if (failures.length > 0) {
console.log('Failed tests:', failures.length)
}
if (regressions.length > 0) {
console.log('Regressions detected:', regressions)
}
// ---- seed example, verbatim: end ----

report({ results, failures: failures.length, regressions: regressions.length })
