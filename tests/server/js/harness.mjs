// What the seed's snippets call without defining: its "Testing Workflow" helpers
// (createTestCase, batchRunTests, getTestCaseStats, updateExpectedOutput) as thin
// wrappers over the seed's own operations, plus the set-up the test needs and the last
// line every example prints (one JSON object, read by tests/server/test_seed_js.py).
//
// The seed writes case ids such as "test1" and "test123" where a real client would have
// the ids its API gave back: makeCases() remembers the id of each case it makes by name,
// and the wrappers send that id in place of such a name (any other id goes as it is).
import { GraphQLClient, gql } from 'graphql-request'

export const client = new GraphQLClient(process.env.OXY_URL)

const placeholders = new Map()
const realId = id => placeholders.get(id) ?? id

const CREATE_CASE = gql`
  mutation CreateTestCase($input: TestCaseInput!) {
    createTestCase(input: $input) { id name promptId expectedOutput }
  }
`

export async function createTestCase(input) {
  const data = await client.request(CREATE_CASE, { input })
  return data.createTestCase
}

export async function makeCases(promptId, cases) {
  const ids = []
  for (const tc of cases) {
    const made = await createTestCase({ promptId, ...tc })
    placeholders.set(tc.name, made.id)
    ids.push(made.id)
  }
  return ids
}

export async function listCases(promptId) {
  const data = await client.request(
    gql`query ($promptId: ID) { testCases(promptId: $promptId) { id name input expectedOutput } }`,
    { promptId },
  )
  return data.testCases
}

export async function getTestCase(id) {
  const data = await client.request(
    gql`query ($id: ID!) { testCase(id: $id) { id name expectedOutput prompt { id name } } }`,
    { id: realId(id) },
  )
  return data.testCase
}

const RUN_FIELDS = `
  testCaseExecutionId
  testCaseId
  passed
  score
  isRegression
  regressionType
  actualOutput
`

export async function batchRunTests(input) {
  const data = await client.request(
    gql`mutation ($input: BatchRunTestsInput!) { batchRunTests(input: $input) { ${RUN_FIELDS} } }`,
    { input: { ...input, testCaseIds: input.testCaseIds?.map(realId) } },
  )
  return data.batchRunTests
}

export async function runTestCase(testCaseId) {
  const data = await client.request(
    gql`mutation ($input: RunTestCaseInput!) { runTestCase(input: $input) { ${RUN_FIELDS} } }`,
    { input: { testCaseId: realId(testCaseId) } },
  )
  return data.runTestCase
}

export async function getTestCaseStats({ testCaseId }) {
  const data = await client.request(
    gql`
      query ($testCaseId: ID!) {
        testCaseStats(testCaseId: $testCaseId) {
          totalRuns
          passRate
          avgScore
          recentRuns { id passed score }
          regressions { id regressionType }
          trendData { date totalRuns passRate avgScore }
        }
      }
    `,
    { testCaseId: realId(testCaseId) },
  )
  return data.testCaseStats
}

export async function updateExpectedOutput({ testCaseId, output }) {
  const data = await client.request(
    gql`
      mutation ($testCaseId: ID!, $output: String!) {
        updateExpectedOutput(testCaseId: $testCaseId, output: $output) { id expectedOutput }
      }
    `,
    { testCaseId: realId(testCaseId), output },
  )
  return data.updateExpectedOutput
}

// The test case and three branches (one per vendor) the iterations snippet runs, made
// with the seed's createTestCase and createTestBranch; testCase is the created case
// itself, so the snippet's `testCase.id` is its id.
export async function abSetup(client, promptId, name) {
  const testCase = await createTestCase({
    promptId,
    name,
    input: { text: "This product exceeded my expectations!" },
    expectedOutput: "positive",
  })
  const CREATE_BRANCH = gql`
    mutation CreateBranch($input: TestBranchInput!) { createTestBranch(input: $input) { id } }
  `
  const specs = [
    ["GPT-4 Turbo", "openai", "gpt-4-turbo-preview"],
    ["Claude Sonnet", "anthropic", "claude-3-sonnet-20240229"],
    ["Gemini Pro", "gemini", "gemini-pro"],
  ]
  const branchIds = []
  for (const [branchName, provider, model] of specs) {
    const made = await client.request(CREATE_BRANCH, {
      input: { testCaseId: testCase.id, name: branchName, provider, model, temperature: 0.7 },
    })
    branchIds.push(made.createTestBranch.id)
  }
  return { testCase, branchIds }
}

export function report(seen) {
  console.log(JSON.stringify(seen))
}
