// Alert rules on the coordinator's own telemetry, and an optional action group that e-mails them.
//
// The app exports its events as custom events (customEvents, fields in customDimensions) and its metrics as
// customMetrics through OpenTelemetry (src/app/telemetry/; docs/reference/events-and-metrics.md lists both). The rules query the
// Application Insights component every app sends to, so one rule covers every app and region. Each query is checked
// by Kusto's own parser in CI (test/infra/kql.test.ts), with the thresholds substituted as deployed.

@description('Application Insights component the rules query (every app\'s telemetry).')
param applicationInsightsName string

@description('Azure region of the alert rules (the component\'s).')
param location string

@description('Tags applied to every resource.')
param tags {*: string} = {}

@description('E-mail address the alerts are sent to, through an action group created for it. Empty: the rules still fire and show in Azure Monitor > Alerts, but notify nobody.')
param alertEmail string = ''

@description('Minutes without a completed coordination step, while jobs run or items wait on the work or results queue, before the "stalled" alert fires. With the 1-minute heartbeat and wake-ups, a healthy coordinator completes a step at least every minute while it has work.')
@minValue(5)
@maxValue(1440)
param noStepMinutes int = 10

@description('Leader changes (terms begun by another instance than the previous one) in one hour above which the "flapping" alert fires. Wake-ups hand the lease between instances in normal operation, so set it above your busy hours\' usual count.')
@minValue(1)
@maxValue(10000)
param leaderChangesPerHour int = 60

resource applicationInsights 'Microsoft.Insights/components@2020-02-02' existing = {
  name: applicationInsightsName
}

resource actionGroup 'Microsoft.Insights/actionGroups@2023-01-01' = if (!empty(alertEmail)) {
  name: 'ag-${applicationInsightsName}'
  location: 'Global'
  tags: tags
  properties: {
    groupShortName: 'coordinator'
    enabled: true
    emailReceivers: [
      {
        name: 'operator'
        emailAddress: alertEmail
        useCommonAlertSchema: true
      }
    ]
  }
}

var actionGroups = empty(alertEmail) ? [] : [actionGroup.id]

// Poison that nobody clears: the leader records items of a poisoned work unit as failed and deletes the message at
// its next step, so a poison queue that stays above zero for the whole window holds messages no job claims
// (undecodable, or naming no job) or results the leader could not fold. Sampled once a timer tick, whoever leads.
var poisonQuery = '''
customMetrics
| where name == "coordinator.queue.depth"
| extend queue = tostring(customDimensions.queue), queueName = tostring(customDimensions.queueName)
| where queue endswith "-poison"
| summarize lowest = min(value), highest = max(value) by queue, queueName
| where lowest > 0
'''

// No completed step while there is work: the last completed step left jobs active, or items wait on the work or
// results queue, and no step has completed since __WINDOW__. The queue samples come from the timer, so the rule
// fires also when no step starts at all.
var stalledQuery = '''
let window = __WINDOW__;
let lastStep = toscalar(customEvents | where timestamp > ago(1d) and name == "step-completed" | summarize max(timestamp));
let activeAtLastStep = toscalar(customEvents
    | where timestamp > ago(1d) and name == "step-completed"
    | summarize arg_max(timestamp, customDimensions)
    | project toint(customDimensions.activeJobs));
let waiting = toscalar(customMetrics
    | where timestamp > ago(window) and name == "coordinator.queue.depth"
    | where tostring(customDimensions.queue) in ("work", "results")
    | summarize max(value));
print lastStep = lastStep, activeAtLastStep = activeAtLastStep, waiting = waiting
| where (isnull(lastStep) or lastStep < ago(window)) and (coalesce(activeAtLastStep, 0) > 0 or coalesce(waiting, 0.0) > 0)
'''

// Leader changes in the last hour (coordinator.leader.changes: terms begun by another instance than the last holder).
var flappingQuery = '''
customMetrics
| where name == "coordinator.leader.changes"
| summarize changes = sum(valueSum)
'''

// Jobs the leader ended at their deadline (job-expired) in the window.
var expiredQuery = '''
customEvents
| where name == "job-expired"
| project timestamp, jobId = tostring(customDimensions.jobId), done = toint(customDimensions.done),
          failed = toint(customDimensions.failed), skipped = toint(customDimensions.skipped)
'''

// Ended jobs retention could not remove (job-removal-failed: a blob under a snapshot, a legal hold or an immutability
// policy refuses deletion). The leader puts each off with a back-off and goes on with the other jobs; someone should
// lift the hold or delete the blob.
var removalFailedQuery = '''
customEvents
| where name == "job-removal-failed"
| summarize attempts = max(toint(customDimensions.attempts)), lastError = take_any(tostring(customDimensions.error))
    by jobId = tostring(customDimensions.jobId)
'''

// Work items of a kind that kept the event loop from turning longer than a leader in that process survives without
// heartbeats or renewals (item-held-event-loop): leadership churns while such a kind runs.
var heldLoopQuery = '''
customEvents
| where name == "item-held-event-loop"
| summarize items = count(), longestMs = max(todouble(customDimensions.heldMs)), limitMs = max(todouble(customDimensions.limitMs))
    by taskKind = tostring(customDimensions.kind)
'''

var rules = [
  {
    name: 'poison'
    displayName: 'Coordinator: poison stays on a poison queue'
    description: 'A poison queue held messages for the whole last 15 minutes: messages no job claims, or results the leader could not fold. Peek at the queue named in the result; docs/how-to/operate.md, "Alerts".'
    severity: 2
    evaluationFrequency: 'PT5M'
    windowSize: 'PT15M'
    overrideQueryTimeRange: ''
    query: poisonQuery
    metricMeasureColumn: ''
    timeAggregation: 'Count'
    threshold: 0
  }
  {
    name: 'stalled'
    displayName: 'Coordinator: no completed step while work waits'
    description: 'No coordination step completed for ${noStepMinutes} minutes while jobs were active or items waited on the work or results queue. Look at step-aborted and lease-lost events; docs/how-to/operate.md, "Alerts".'
    severity: 1
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    overrideQueryTimeRange: 'P1D'
    query: replace(stalledQuery, '__WINDOW__', '${noStepMinutes}m')
    metricMeasureColumn: ''
    timeAggregation: 'Count'
    threshold: 0
  }
  {
    name: 'flapping'
    displayName: 'Coordinator: leadership changes hands too often'
    description: 'More than ${leaderChangesPerHour} terms in the last hour began on another instance than the previous one. Look at lease-lost reasons; docs/how-to/operate.md, "Alerts".'
    severity: 2
    evaluationFrequency: 'PT15M'
    windowSize: 'PT1H'
    overrideQueryTimeRange: ''
    query: flappingQuery
    metricMeasureColumn: 'changes'
    timeAggregation: 'Total'
    threshold: leaderChangesPerHour
  }
  {
    name: 'job-expired'
    displayName: 'Coordinator: a job ran past its deadline'
    description: 'The leader ended a job at its deadline (job-expired) before every item was done. The result names the job and its counts; docs/how-to/operate.md, "Alerts".'
    severity: 2
    evaluationFrequency: 'PT5M'
    windowSize: 'PT5M'
    overrideQueryTimeRange: ''
    query: expiredQuery
    metricMeasureColumn: ''
    timeAggregation: 'Count'
    threshold: 0
  }
  {
    name: 'job-removal-failed'
    displayName: 'Coordinator: retention cannot remove an ended job'
    description: 'Retention could not delete a blob of an ended job (job-removal-failed: a snapshot, a legal hold or an immutability policy). The leader retries it with a back-off and goes on with the other jobs. The result names the job, its attempts and the last error; docs/how-to/operate.md, "Alerts".'
    severity: 2
    evaluationFrequency: 'PT1H'
    windowSize: 'PT1H'
    overrideQueryTimeRange: ''
    query: removalFailedQuery
    metricMeasureColumn: ''
    timeAggregation: 'Count'
    threshold: 0
  }
  {
    name: 'item-held-event-loop'
    displayName: 'Coordinator: a task kind holds the event loop'
    description: 'Work items of a task kind kept the event loop from turning longer than a leader in the same process survives without heartbeats (item-held-event-loop), so leadership churns while it runs. The result names the kind and the longest hold; docs/how-to/add-a-kind.md, "What a kind must not do".'
    severity: 2
    evaluationFrequency: 'PT15M'
    windowSize: 'PT15M'
    overrideQueryTimeRange: ''
    query: heldLoopQuery
    metricMeasureColumn: ''
    timeAggregation: 'Count'
    threshold: 0
  }
]

resource alertRules 'Microsoft.Insights/scheduledQueryRules@2026-03-01' = [
  for rule in rules: {
    name: 'alert-${applicationInsightsName}-${rule.name}'
    location: location
    tags: tags
    kind: 'LogAlert'
    properties: {
      displayName: rule.displayName
      description: rule.description
      severity: rule.severity
      enabled: true
      evaluationFrequency: rule.evaluationFrequency
      windowSize: rule.windowSize
      overrideQueryTimeRange: empty(rule.overrideQueryTimeRange) ? null : rule.overrideQueryTimeRange
      scopes: [
        applicationInsights.id
      ]
      criteria: {
        allOf: [
          {
            query: rule.query
            timeAggregation: rule.timeAggregation
            metricMeasureColumn: empty(rule.metricMeasureColumn) ? null : rule.metricMeasureColumn
            operator: 'GreaterThan'
            threshold: rule.threshold
            failingPeriods: {
              numberOfEvaluationPeriods: 1
              minFailingPeriodsToAlert: 1
            }
          }
        ]
      }
      autoMitigate: true
      actions: {
        actionGroups: actionGroups
      }
    }
  }
]

@description('Names of the alert rules.')
output alertRuleNames string[] = [for (rule, i) in rules: alertRules[i].name]
