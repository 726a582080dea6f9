"""The GraphQL documents of the seed (promptforge-testing-api.txt), copied verbatim: a
client written against the seed sends exactly these, so the API must answer them as they
are. A name used twice in the seed (its JavaScript examples) gets a numbered variant."""

from __future__ import annotations

__all__ = [
    "BATCH_RUN",
    "BATCH_RUN_TESTS",
    "CREATE_BRANCH",
    "CREATE_TEST_BRANCH",
    "CREATE_TEST_CASE",
    "CREATE_TEST_CASE_2",
    "CREATE_TEST_CASE_3",
    "DELETE_TEST_BRANCH",
    "DELETE_TEST_CASE",
    "GET_BRANCH_EXECUTIONS",
    "GET_BRANCH_EXECUTIONS_2",
    "GET_STATS",
    "GET_TEST_BRANCHES",
    "GET_TEST_CASE",
    "GET_TEST_CASES",
    "GET_TEST_CASE_EXECUTIONS",
    "GET_TEST_CASE_STATS",
    "RUN_A_B_TEST",
    "RUN_A_B_TEST_2",
    "RUN_TEST_CASE",
    "UPDATE_EXPECTED_OUTPUT",
    "UPDATE_TEST_BRANCH",
    "UPDATE_TEST_CASE",
]

GET_TEST_CASES = """\
query GetTestCases($promptId: ID!) {
testCases(promptId: $promptId) {
id
name
description
input
expectedOutput
totalRuns
passRate
avgScore
lastRun
lastPassed
createdAt
updatedAt
}
}
"""

GET_TEST_CASE = """\
query GetTestCase($id: ID!) {
testCase(id: $id) {
id
name
description
input
expectedOutput
totalRuns
passRate
avgScore
prompt {
id
name
}
}
}
"""

GET_TEST_CASE_EXECUTIONS = """\
query GetTestCaseExecutions($testCaseId: ID!, $limit: Int, $offset: Int) {
testCaseExecutions(testCaseId: $testCaseId, limit: $limit, offset: $offset) {
id
passed
score
actualOutput
expectedOutput
exactMatch
semanticScore
lengthDiff
tokenDiff
isRegression
regressionType
promptVersion
runDuration
createdAt
}
}
"""

GET_TEST_CASE_STATS = """\
query GetTestCaseStats($testCaseId: ID!) {
testCaseStats(testCaseId: $testCaseId) {
totalRuns
passRate
avgScore
recentRuns {
id
passed
score
promptVersion
createdAt
}
regressions {
id
passed
score
regressionType
promptVersion
createdAt
}
trendData {
date
totalRuns
passRate
avgScore
}
}
}
"""

CREATE_TEST_CASE = """\
mutation CreateTestCase($input: TestCaseInput!) {
createTestCase(input: $input) {
id
name
description
input
expectedOutput
createdAt
}
}
"""

UPDATE_TEST_CASE = """\
mutation UpdateTestCase($id: ID!, $input: TestCaseInput!) {
updateTestCase(id: $id, input: $input) {
id
name
description
input
expectedOutput
updatedAt
}
}
"""

DELETE_TEST_CASE = """\
mutation DeleteTestCase($id: ID!) {
deleteTestCase(id: $id)
}
"""

RUN_TEST_CASE = """\
mutation RunTestCase($input: RunTestCaseInput!) {
runTestCase(input: $input) {
testCaseExecutionId
executionId
passed
score
actualOutput
expectedOutput
outputDiff
exactMatch
semanticScore
lengthDiff
tokenDiff
latencyMs
costUsd
isRegression
regressionType
}
}
"""

BATCH_RUN_TESTS = """\
mutation BatchRunTests($input: BatchRunTestsInput!) {
batchRunTests(input: $input) {
testCaseExecutionId
executionId
passed
score
actualOutput
isRegression
regressionType
}
}
"""

UPDATE_EXPECTED_OUTPUT = """\
mutation UpdateExpectedOutput($testCaseId: ID!, $output: String!) {
updateExpectedOutput(testCaseId: $testCaseId, output: $output) {
id
expectedOutput
updatedAt
}
}
"""

GET_TEST_BRANCHES = """\
query GetTestBranches($testCaseId: ID!) {
testBranches(testCaseId: $testCaseId) {
id
name
description
provider
model
temperature
maxTokens
topP
isControl
isActive
totalRuns
avgLatency
avgCost
avgQualityScore
avgTokensPerSec
consistencyScore
passRate
createdAt
}
}
"""

GET_BRANCH_EXECUTIONS = """\
query GetBranchExecutions($branchId: ID!, $limit: Int, $offset: Int) {
testBranchExecutions(branchId: $branchId, limit: $limit, offset: $offset) {
id
output
status
latencyMs
timeToFirstToken
tokensPerSecond
inputTokens
outputTokens
estimatedCost
qualityScore
similarityScore
clarityScore
validJson
promptVersion
createdAt
}
}
"""

CREATE_TEST_BRANCH = """\
mutation CreateTestBranch($input: TestBranchInput!) {
createTestBranch(input: $input) {
id
name
model
temperature
}
}
"""

UPDATE_TEST_BRANCH = """\
mutation UpdateTestBranch($id: ID!, $input: TestBranchInput!) {
updateTestBranch(id: $id, input: $input) {
id
name
temperature
maxTokens
}
}
"""

DELETE_TEST_BRANCH = """\
mutation DeleteTestBranch($id: ID!) {
deleteTestBranch(id: $id)
}
"""

RUN_A_B_TEST = """\
mutation RunABTest($input: RunABTestInput!) {
runABTest(input: $input) {
branches {
branchId
branchName
model
execution {
id
output
status
}
qualityScore
latencyMs
estimatedCost
tokensPerSecond
rank
}
winner {
branchId
branchName
model
qualityScore
latencyMs
estimatedCost
}
criteria
}
}
"""

CREATE_TEST_CASE_2 = """\
mutation CreateTestCase($input: TestCaseInput!) {
createTestCase(input: $input) {
id
}
}
"""

CREATE_BRANCH = """\
mutation CreateBranch($input: TestBranchInput!) {
createTestBranch(input: $input) {
id
}
}
"""

RUN_A_B_TEST_2 = """\
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
"""

GET_BRANCH_EXECUTIONS_2 = """\
query GetBranchExecutions($branchId: ID!, $limit: Int) {
testBranchExecutions(branchId: $branchId, limit: $limit) {
output
qualityScore
latencyMs
estimatedCost
createdAt
}
}
"""

CREATE_TEST_CASE_3 = """\
mutation CreateTestCase($input: TestCaseInput!) {
createTestCase(input: $input) {
id
name
}
}
"""

BATCH_RUN = """\
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
"""

GET_STATS = """\
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
"""
