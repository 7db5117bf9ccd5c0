// An Azure Monitor workbook over the coordinator's telemetry: who led when, the jobs, throughput, steps, queue depths
// and fold lag. It reads the custom events and metrics the app exports (docs/how-to/operate.md) from the Application
// Insights component every app sends to. Open it from the component: Workbooks > "Leader coordinator". Each query is
// checked by Kusto's own parser in CI (test/infra/kql.test.ts).

@description('Application Insights component the workbook reads.')
param applicationInsightsName string

@description('Azure region of the workbook (the component\'s).')
param location string

@description('Tags applied to the workbook.')
param tags {*: string} = {}

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

// One row per term: who held the lease, from when, how it ended.
var leaderTimelineQuery = '''
customEvents
| where name in ("lease-acquired", "lease-lost", "lease-released")
| extend epoch = tolong(customDimensions.epoch), instance = tostring(customDimensions.instanceId)
| summarize holder = take_anyif(instance, name == "lease-acquired"), acquired = minif(timestamp, name == "lease-acquired"),
            previousHolder = take_anyif(tostring(customDimensions.previousHolder), name == "lease-acquired"),
            lostReason = take_anyif(tostring(customDimensions.reason), name == "lease-lost"),
            heldSeconds = maxif(todouble(customDimensions.heldMs) / 1000, name == "lease-released"), app = take_any(cloud_RoleName)
    by epoch
| order by epoch desc
'''

// Terms begun per instance over time: a steady leader is one colour; flapping shows as many.
var termsQuery = '''
customEvents
| where name == "lease-acquired"
| summarize terms = count() by bin(timestamp, 15m), leader = tostring(customDimensions.instanceId)
'''

// Every job seen in the period: when it was registered, how it ended, its counts.
var jobsQuery = '''
customEvents
| where name in ("job-registered", "job-completed", "job-failed", "job-cancelled", "job-expired", "job-pass-failed")
| extend jobId = tostring(customDimensions.jobId)
| summarize registered = minif(timestamp, name == "job-registered"),
            ended = maxif(timestamp, name in ("job-completed", "job-failed", "job-cancelled", "job-expired")),
            outcome = take_anyif(name, name in ("job-completed", "job-failed", "job-cancelled", "job-expired")),
            done = take_anyif(toint(customDimensions.done), name != "job-registered"),
            failed = take_anyif(toint(customDimensions.failed), name != "job-registered"),
            passFailures = countif(name == "job-pass-failed")
    by jobId
| order by registered desc
'''

// Items processed by workers, per task kind and outcome.
var throughputQuery = '''
customMetrics
| where name == "coordinator.items"
| summarize items = sum(valueSum) by bin(timestamp, 5m), series = strcat(tostring(customDimensions.kind), " ", tostring(customDimensions.outcome))
'''

// Steps: how many, how long, how they ended.
var stepsQuery = '''
customMetrics
| where name == "coordinator.step.duration"
| summarize steps = sum(valueCount), averageSeconds = sum(valueSum) / sum(valueCount), longestSeconds = max(valueMax)
    by bin(timestamp, 15m), outcome = tostring(customDimensions.outcome)
'''

// Queue depths, sampled once a timer tick.
var queueDepthsQuery = '''
customMetrics
| where name == "coordinator.queue.depth"
| summarize depth = max(value) by bin(timestamp, 5m), queue = tostring(customDimensions.queue)
'''

// How long the oldest result waited to be folded.
var foldLagQuery = '''
customMetrics
| where name == "coordinator.fold.lag"
| summarize lagSeconds = max(value) by bin(timestamp, 5m)
'''

// Trouble someone should look at: ended jobs retention could not remove, and kinds that held the event loop.
var troubleQuery = '''
customEvents
| where name in ("job-removal-failed", "item-held-event-loop")
| extend subject = iff(name == "item-held-event-loop", tostring(customDimensions.kind), tostring(customDimensions.jobId)),
         detail = iff(name == "item-held-event-loop", strcat("held ", tostring(customDimensions.heldMs), " ms"), tostring(customDimensions.error))
| summarize events = count(), lastSeen = max(timestamp), lastDetail = take_any(detail) by name, subject
| order by lastSeen desc
'''

var panels = [
  { title: 'Leader timeline: one row per term', query: leaderTimelineQuery, visualization: 'table' }
  { title: 'Terms begun per instance', query: termsQuery, visualization: 'barchart' }
  { title: 'Jobs', query: jobsQuery, visualization: 'table' }
  { title: 'Throughput: items per kind and outcome', query: throughputQuery, visualization: 'timechart' }
  { title: 'Coordination steps', query: stepsQuery, visualization: 'timechart' }
  { title: 'Queue depths', query: queueDepthsQuery, visualization: 'timechart' }
  { title: 'Fold lag (seconds)', query: foldLagQuery, visualization: 'timechart' }
  { title: 'Trouble: jobs retention cannot remove, kinds holding the event loop', query: troubleQuery, visualization: 'table' }
]

var content = {
  version: 'Notebook/1.0'
  items: concat(
    [
      {
        type: 1
        name: 'title'
        content: {
          json: '## Leader coordinator\nWho led when, the jobs, throughput, steps, queue depths and fold lag, from the app\'s OpenTelemetry (docs/how-to/operate.md). Last 24 hours.'
        }
      }
    ],
    map(range(0, length(panels)), i => {
      type: 3
      name: 'panel-${i}'
      content: {
        version: 'KqlItem/1.0'
        title: panels[i].title
        query: panels[i].query
        size: 0
        queryType: 0
        resourceType: 'microsoft.insights/components'
        visualization: panels[i].visualization
        timeContext: {
          durationMs: 86400000
        }
      }
    })
  )
  fallbackResourceIds: [
    applicationInsights.id
  ]
}

resource workbook 'Microsoft.Insights/workbooks@2023-06-01' = {
  name: guid(resourceGroup().id, applicationInsightsName, 'leader-coordinator-workbook')
  location: location
  tags: tags
  kind: 'shared'
  properties: {
    displayName: 'Leader coordinator'
    category: 'workbook'
    version: 'Notebook/1.0'
    sourceId: applicationInsights.id
    serializedData: string(content)
  }
}

@description('Resource id of the workbook.')
output workbookId string = workbook.id
