// Seed: "Running Multiple Test Iterations" (A/B Testing Workflow).
// The lines between the seed markers are the seed's code as it stands there (issue
// 19: a client written against the seed must work unmodified); the rest is harness.
import { GraphQLClient, gql } from 'graphql-request'
import { abSetup, report } from './harness.mjs'

// What the seed's snippet takes from the complete example before it: the client, the
// RUN_AB_TEST document (as that example defines it), a test case and its branches.
const client = new GraphQLClient(process.env.OXY_URL)
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
const { testCase, branchIds } = await abSetup(client, 'prompt_123', 'Sentiment iterations')

// ---- seed example, verbatim: begin ----
// Run the same A/B test 5 times
const iterations = 5
const results = []
for (let i = 0; i < iterations; i++) {
const result = await client.request(RUN_AB_TEST, {
input: {
testCaseId: testCase.id,
branchIds: branchIds,
winnerCriteria: "balanced"
}
})
results.push(result.runABTest)
// Small delay between iterations
await new Promise(resolve => setTimeout(resolve, 1000))
}
// Aggregate results
const winnerCounts = {}
results.forEach(r => {
const winner = r.winner.branchName
winnerCounts[winner] = (winnerCounts[winner] || 0) + 1
})
console.log('Winner distribution across', iterations, 'runs:')
Object.entries(winnerCounts).forEach(([name, count]) => {
console.log(` ${name}: ${count}/${iterations} (${(count/iterations*100).toFixed(1)}%)`)
})
// Calculate average metrics per branch
const branchStats = {}
results.forEach(result => {
result.branches.forEach(branch => {
if (!branchStats[branch.branchName]) {
branchStats[branch.branchName] = {
quality: [],
latency: [],
cost: []
}
}
branchStats[branch.branchName].quality.push(branch.qualityScore)
branchStats[branch.branchName].latency.push(branch.latencyMs)
branchStats[branch.branchName].cost.push(branch.estimatedCost)
})
})
console.log('\nAverage metrics across all runs:')
Object.entries(branchStats).forEach(([name, stats]) => {
const avgQuality = stats.quality.reduce((a, b) => a + b) / stats.quality.length
const avgLatency = stats.latency.reduce((a, b) => a + b) / stats.latency.length
const avgCost = stats.cost.reduce((a, b) => a + b) / stats.cost.length
console.log(`${name}:`)
console.log(` Avg Quality: ${avgQuality.toFixed(3)}`)
console.log(` Avg Latency: ${avgLatency.toFixed(0)}ms`)
console.log(` Avg Cost: $${avgCost.toFixed(5)}`)
})
// ---- seed example, verbatim: end ----

report({ iterations, winnerCounts, branchStats, runs: results.length })
