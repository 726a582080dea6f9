// Seed: "Example: Complete Testing Flow".
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { GraphQLClient } from 'graphql-request'
import { report } from './harness.mjs'

// The client the seed's examples use without defining it.
const client = new GraphQLClient(process.env.OXY_URL)

// ---- seed example, verbatim: begin ----
import { gql } from 'graphql-request'
// 1. Create test cases for a sentiment analysis prompt
const CREATE_TEST = gql`
mutation CreateTestCase($input: TestCaseInput!) {
createTestCase(input: $input) {
id
name
}
}
`
const testCases = [
{
promptId: "cm123",
name: "Strongly positive",
input: { text: "This is absolutely amazing! Best ever!" },
expectedOutput: "positive"
},
{
promptId: "cm123",
name: "Subtly negative",
input: { text: "I guess it's okay, but I expected better." },
expectedOutput: "negative"
}
]
const createdTests = await Promise.all(
testCases.map(tc => client.request(CREATE_TEST, { input: tc }))
)
// 2. Make changes to the prompt
// ... update prompt content ...
// 3. Run all tests against the new version
const BATCH_RUN = gql`
mutation BatchRun($input: BatchRunTestsInput!) {
batchRunTests(input: $input) {
testCaseExecutionId
passed
score
isRegression
regressionType
actualOutput
}
}
`
const results = await client.request(BATCH_RUN, {
input: {
promptId: "cm123",
testCaseIds: createdTests.map(t => t.createTestCase.id)
}
})
// 4. Analyze results
const summary = {
total: results.batchRunTests.length,
passed: results.batchRunTests.filter(r => r.passed).length,
regressions: results.batchRunTests.filter(r => r.isRegression)
}
console.log(`Test Results: ${summary.passed}/${summary.total} passed`)
if (summary.regressions.length > 0) {
console.log('Regressions detected:')
summary.regressions.forEach(r => {
console.log(` - Type: ${r.regressionType}, Score: ${r.score}`)
})
}
// 5. Get detailed stats for monitoring
const STATS = gql`
query GetStats($testCaseId: ID!) {
testCaseStats(testCaseId: $testCaseId) {
totalRuns
passRate
avgScore
trendData {
date
passRate
avgScore
}
}
}
`
for (const test of createdTests) {
const stats = await client.request(STATS, {
testCaseId: test.createTestCase.id
})
console.log(`${test.createTestCase.name}:`)
console.log(` Pass rate: ${stats.testCaseStats.passRate}%`)
console.log(` Avg score: ${stats.testCaseStats.avgScore}`)
}
// ---- seed example, verbatim: end ----

report({ summary, createdTests: createdTests.map(t => t.createTestCase), results: results.batchRunTests })
