// Seed: Testing Workflow, "4. Update Baselines".
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { getTestCase, makeCases, report, updateExpectedOutput } from './harness.mjs'

// "test123" is a placeholder: the harness makes a case of that name and
// updateExpectedOutput sends its real id in its place. newExpectedOutput: the new baseline.
await makeCases("cm123456789", [
  { name: "test123", input: { text: "It's okay." }, expectedOutput: "neutral" },
])
const newExpectedOutput = "neutral, leaning positive"

// ---- seed example, verbatim: begin ----
// Accept new output as the expected baseline
await updateExpectedOutput({
testCaseId: "test123",
output: newExpectedOutput
})
// ---- seed example, verbatim: end ----

report({ newExpectedOutput, testCase: await getTestCase("test123") })
