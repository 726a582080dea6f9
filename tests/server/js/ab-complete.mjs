// Seed: "Complete A/B Test Example" (A/B Testing Workflow).
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { GraphQLClient } from 'graphql-request'
import { report } from './harness.mjs'

// The client the seed's examples use without defining it.
const client = new GraphQLClient(process.env.OXY_URL)

// ---- seed example, verbatim: begin ----
import { gql } from 'graphql-request'
// 1. Create a test case
const CREATE_TEST = gql`
mutation CreateTestCase($input: TestCaseInput!) {
createTestCase(input: $input) {
id
}
}
`
const testCase = await client.request(CREATE_TEST, {
input: {
promptId: "prompt_123",
name: "Sentiment Analysis Test",
input: {
text: "This product exceeded my expectations!"
},
expectedOutput: "positive"
}
})
// 2. Create test branches with different configurations
const CREATE_BRANCH = gql`
mutation CreateBranch($input: TestBranchInput!) {
createTestBranch(input: $input) {
id
}
}
`
const branches = await Promise.all([
// GPT-4 Turbo
client.request(CREATE_BRANCH, {
input: {
testCaseId: testCase.createTestCase.id,
name: "GPT-4 Turbo",
provider: "openai",
model: "gpt-4-turbo-preview",
temperature: 0.7
}
}),
// Claude Sonnet
client.request(CREATE_BRANCH, {
input: {
testCaseId: testCase.createTestCase.id,
name: "Claude Sonnet",
provider: "anthropic",
model: "claude-3-sonnet-20240229",
temperature: 0.7
}
}),
// Gemini Pro
client.request(CREATE_BRANCH, {
input: {
testCaseId: testCase.createTestCase.id,
name: "Gemini Pro",
provider: "gemini",
model: "gemini-pro",
temperature: 0.7
}
})
])
// 3. Run A/B test
const RUN_AB_TEST = gql`
mutation RunABTest($input: RunABTestInput!) {
runABTest(input: $input) {
winner {
branchName
model
qualityScore
latencyMs
estimatedCost
}
branches {
branchName
model
qualityScore
latencyMs
estimatedCost
rank
}
criteria
}
}
`
const result = await client.request(RUN_AB_TEST, {
input: {
testCaseId: testCase.createTestCase.id,
branchIds: branches.map(b => b.createTestBranch.id),
winnerCriteria: "balanced"
}
})
// 4. Analyze results
console.log('Winner:', result.runABTest.winner.branchName)
console.log(' Model:', result.runABTest.winner.model)
console.log(' Quality:', result.runABTest.winner.qualityScore)
console.log(' Latency:', result.runABTest.winner.latencyMs + 'ms')
console.log(' Cost: $' + result.runABTest.winner.estimatedCost)
console.log('\nAll Results:')
result.runABTest.branches.forEach(branch => {
console.log(`${branch.rank}. ${branch.branchName}`)
console.log(` Quality: ${branch.qualityScore}`)
console.log(` Speed: ${branch.latencyMs}ms`)
console.log(` Cost: $${branch.estimatedCost}`)
})
// 5. Get detailed execution history
const GET_EXECUTIONS = gql`
query GetBranchExecutions($branchId: ID!, $limit: Int) {
testBranchExecutions(branchId: $branchId, limit: $limit) {
output
qualityScore
latencyMs
estimatedCost
createdAt
}
}
`
const winnerId = branches[0].createTestBranch.id
const executions = await client.request(GET_EXECUTIONS, {
branchId: winnerId,
limit: 10
})
console.log('\nRecent executions for winner:')
executions.testBranchExecutions.forEach((exec, i) => {
console.log(`${i + 1}. Quality: ${exec.qualityScore}, Latency: ${exec.latencyMs}ms`)
})
// ---- seed example, verbatim: end ----

report({
  testCaseId: testCase.createTestCase.id,
  branchIds: branches.map(b => b.createTestBranch.id),
  criteria: result.runABTest.criteria,
  winner: result.runABTest.winner,
  branches: result.runABTest.branches,
  executions: executions.testBranchExecutions,
})
