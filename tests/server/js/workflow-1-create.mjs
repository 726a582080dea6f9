// Seed: Testing Workflow, "1. Create Test Cases".
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { createTestCase, listCases, report } from './harness.mjs'

// The prompt the snippet's free variable names.
const promptId = "cm123456789"

// ---- seed example, verbatim: begin ----
// Create multiple test cases for different scenarios
const testCases = [
{
name: "Positive sentiment",
input: { text: "I love this!" },
expectedOutput: "positive"
},
{
name: "Negative sentiment",
input: { text: "This is terrible." },
expectedOutput: "negative"
},
{
name: "Neutral sentiment",
input: { text: "It's okay." },
expectedOutput: "neutral"
}
]
for (const tc of testCases) {
await createTestCase({ promptId, ...tc })
}
// ---- seed example, verbatim: end ----

report({ promptId, cases: await listCases(promptId) })
